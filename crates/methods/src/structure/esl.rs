//! ESL: embedding via structure learning (Wang & Li, TNNLS 2020, paper 001 §III, Alg. 1).
//!
//! 1. Affinities (001 eq. 1): `p_{j|i} = exp(-beta_i d_ij) / sum_{k != i} exp(-beta_i d_ik)`,
//!    `d_ij = ||x_i - x_j||^2`, `beta_i = 1 / (2 sigma_i^2)` found per point by bisection so that the
//!    perplexity `exp(H_i)`, `H_i = -sum_j p_{j|i} ln p_{j|i}`, equals `u` (|H_i - ln u| <= 1e-9
//!    targeted, the reached maximum is reported). `pbar_ij = (p_{j|i} + p_{i|j}) / 2`.
//! 2. `lambda = lambda_v * lambda_u`, `lambda_u = min_{i != j} 2m / (1 - pbar_ij)` (eq. 26), with `m`
//!    the embedding dimension (`dim`).
//! 3. Dual (eq. 20) `min_W -(m/2) log det(I + 4L) + lambda sum_{i,j} w_ij (1 - pbar_ij)`,
//!    `0 <= w_ij <= C`. The sum runs over ordered pairs; with symmetric `W` and one variable per pair
//!    `i < j` this is exactly
//!
//!    `f(w) = -(m/2) log det(I + 4L) + 2 lambda sum_{i<j} w_ij c_ij`, `c_ij = 1 - pbar_ij`,
//!
//!    `df/dw_ij = -2m [(Q^-1)_ii + (Q^-1)_jj - 2 (Q^-1)_ij] + 2 lambda c_ij`, `Q = I + 4L`.
//!
//!    (The paper's eq. 23-24 differentiate with respect to one ordered entry `w_ij` with `A_ij`
//!    holding only the `(i,i)` and `(i,j)` entries; the sum of its `(i,j)` and `(j,i)` partials is the
//!    formula above. At `W = 0` both give `2 (lambda c_ij - 2m)`, whence eq. 26.) Solved from `W = 0`
//!    by the `solver` (as MPME): by default the active-set solver of [`super::pair_active`], or a
//!    full-space solver of [`structdr_numerics::optim`]; the KKT residual over all pairs is reported.
//! 4. Components: the graph with edges `w_ij > 1e-6 max_kl w_kl` (the "edge threshold"; the solvers put
//!    inactive weights exactly at the bound 0, and the notes report how many weights fall in
//!    `(0, threshold]`). Each component `c` is embedded separately by KPCA on
//!    `K_c = m (I + 4 L_c)^-1` (eq. 28), centred, `Y_c = U V^{1/2}` (top `min(m, n_c - 1)` pairs),
//!    where `L_c` is the Laplacian of the thresholded `W` restricted to the component.
//!
//! Output layout: row `i` of the N x m embedding holds the coordinates of sample `i` in the
//! embedding of its own component (`Fitted.components[i]`, components numbered by lowest sample
//! index). Every component is centred at the origin in its own coordinate system (the paper plots
//! them separately; coordinates of different components are not comparable). Components with
//! `n_c <= m` fill only their first `n_c - 1` columns (the rest 0); singletons are at 0.
//!
//! Cost: as MPME ([`super::mpme`]): N(N-1)/2 variables; the active-set solver factors `Q` on the
//! working set's pattern (dense `dpotrf` + `dpotri` when that pattern is nearly dense, as at
//! lambda_v <= 0.5, where most pairs carry weight), plus O(N^2 * iterations) for the perplexity
//! search and O(sum_c n_c^3) for the embedding.

use super::pair_active::{ActiveShape, PairDual};
use super::pair_dual::{check_pair_problem, solve_dual, PairSolver, DEFAULT_MAX_ITER, DEFAULT_SOLVER, MAX_ITER_DOC, SOLVER_DOC};
use super::pair_dual::{edges_above, for_each_pair, log_det_grad, n_pairs};
use crate::api::declare::{self, declare_params, Declared};
use crate::api::info::{choice, dim, float, float_in, int, MethodInfo};
use crate::api::params::{closed, open};
use crate::api::OutputKind;
use crate::api::{numerical, numerics, Embedder, FitInput, Fitted, Graph, MethodError, Output, ParamMap, Result, Trace};
use ndarray::{Array2, ArrayView2, Axis};
use structdr_linalg::{sq_dists, Cholesky, LinalgError};
use structdr_numerics::affinities::perplexity_affinities;

/// Relative edge threshold: an edge is kept when `w_ij > EDGE_THRESHOLD * max w`.
pub const EDGE_THRESHOLD: f64 = 1e-6;

declare_params! {
    /// ESL with parameters `dim` (= m), `lambda` (= lambda_v), `C`, `perplexity`, `max_iter`, `tol`, `solver`.
    #[derive(Debug, Clone)]
    pub struct Esl {
        /// Embedding dimension m.
        pub dim: usize = dim(),
        /// `lambda_v in (0, 1)`: `lambda = lambda_v lambda_u`.
        pub lambda_v: f64 = float_in("lambda", open(0.0), open(1.0), 0.8, "lambda_v in (0, 1): lambda = lambda_v * lambda_u with lambda_u = min_ij 2m / (1 - pbar_ij) (eq. 26)"),
        /// Upper bound `C > 0` of every `w_ij` (`inf` allowed).
        pub c: f64 = float_in("C", open(0.0), closed(f64::INFINITY), 1.0, "upper bound C > 0 of every w_ij (inf allowed)"),
        /// Perplexity `u` of the conditional affinities, `1 <= u < N - 1`.
        pub perplexity: f64 = float_in("perplexity", closed(1.0), open(f64::INFINITY), 30.0, "perplexity u of the conditional affinities p_(j|i) (must be < N - 1)"),
        /// Iteration limit of the dual solver.
        pub max_iter: usize = int("max_iter", 1, DEFAULT_MAX_ITER as i64, MAX_ITER_DOC),
        /// Stop when `||proj grad f||_inf <= tol * ||proj grad f(0)||_inf`.
        pub tol: f64 = float("tol", 0.0, 1.0, 1e-5, "stop when the KKT residual ||proj grad||_inf falls below tol times its value at W = 0"),
        /// Bound-constrained solver of the dual.
        pub solver: PairSolver = choice("solver", PairSolver::NAMES, DEFAULT_SOLVER, SOLVER_DOC),
    }
}

/// The ESL dual objective `f(w)` (module doc) on pair variables.
#[derive(Debug, Clone)]
pub struct EslObjective {
    /// Number of samples.
    pub n: usize,
    /// `c_ij = 1 - pbar_ij`, one per pair `i < j`.
    pub cost: Vec<f64>,
    /// `m`.
    pub m: f64,
    /// `lambda = lambda_v lambda_u`.
    pub lambda: f64,
}

impl EslObjective {
    /// From the conditional affinities `P` (row `i` = `p_{.|i}`), `m` and `lambda_v`; also returns
    /// `lambda_u` (eq. 26).
    pub fn new(p: ArrayView2<f64>, m: usize, lambda_v: f64) -> (EslObjective, f64) {
        let n = p.nrows();
        let mut cost = vec![0.0; n_pairs(n)];
        for_each_pair(n, |i, j, k| cost[k] = 1.0 - 0.5 * (p[[i, j]] + p[[j, i]]));
        let cmax = cost.iter().copied().fold(0.0, f64::max);
        let lambda_u = 2.0 * m as f64 / cmax;
        (EslObjective { n, cost, m: m as f64, lambda: lambda_v * lambda_u }, lambda_u)
    }

    /// `f(w)` and its gradient in `g` (what the solver calls; no `Q^-1` formed).
    pub fn value_and_gradient(&self, w: &[f64], g: &mut [f64]) -> std::result::Result<f64, LinalgError> {
        let ld = log_det_grad(self.n, w, 1.0, 4.0, g)?;
        Ok(self.finish(ld, w, g))
    }

    /// `f` from `log det Q`, turning `g` from `d log det Q / dw` into `df/dw` (module doc).
    fn finish(&self, ld: f64, w: &[f64], g: &mut [f64]) -> f64 {
        let h = 0.5 * self.m;
        let two_l = 2.0 * self.lambda;
        let mut lin = 0.0;
        for ((gk, &wk), &ck) in g.iter_mut().zip(w).zip(&self.cost) {
            *gk = -h * *gk + two_l * ck;
            lin += wk * ck;
        }
        -h * ld + two_l * lin
    }

    /// `||proj grad f(0)||_inf` in closed form (`Q = I`: `df/dw_ij = 2 lambda c_ij - 4m`).
    pub fn initial_kkt_residual(&self, upper: f64) -> f64 {
        self.cost.iter().map(|&c| (4.0 * self.m - 2.0 * self.lambda * c).max(0.0).min(upper)).fold(0.0, f64::max)
    }
}

/// Per-component KPCA of `m (I + 4 L_c)^-1` (001 eq. 28); layout in the module doc.
pub fn component_embedding(n: usize, edges: &[(usize, usize, f64)], labels: &[usize], count: usize, m: usize) -> Result<Array2<f64>> {
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); count];
    for (i, &c) in labels.iter().enumerate() {
        members[c].push(i);
    }
    let mut local = vec![0usize; n];
    for mem in &members {
        for (a, &i) in mem.iter().enumerate() {
            local[i] = a;
        }
    }
    let mut y = Array2::<f64>::zeros((n, m));
    let mut qs: Vec<Array2<f64>> = members.iter().map(|mem| Array2::<f64>::eye(mem.len())).collect();
    for &(i, j, w) in edges {
        let c = labels[i];
        let (a, b) = (local[i], local[j]);
        let q = &mut qs[c];
        q[[a, b]] -= 4.0 * w;
        q[[b, a]] -= 4.0 * w;
        q[[a, a]] += 4.0 * w;
        q[[b, b]] += 4.0 * w;
    }
    for (c, mem) in members.iter().enumerate() {
        let nc = mem.len();
        if nc < 2 {
            continue;
        }
        let k = Cholesky::factor(qs[c].view()).and_then(|ch| ch.inverse()).map_err(numerical("esl"))? * m as f64;
        let dc = m.min(nc - 1);
        let (yc, _) = structdr_numerics::spectral::kernel_pca(k, dc).map_err(numerics("esl"))?;
        for (a, &i) in mem.iter().enumerate() {
            for t in 0..dc {
                y[[i, t]] = yc[[a, t]];
            }
        }
    }
    Ok(y)
}

impl Embedder for Esl {
    fn name(&self) -> &'static str {
        "esl"
    }
    fn info(&self) -> MethodInfo {
        info()
    }
    fn params(&self) -> ParamMap {
        self.to_params()
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        let x = input.x;
        check_pair_problem("esl", &x, self.dim)?;
        let n = x.nrows();
        if !(self.perplexity >= 1.0 && self.perplexity < (n - 1) as f64) {
            return Err(MethodError::Input { method: "esl", reason: format!("perplexity = {} must be in [1, N - 1) = [1, {})", self.perplexity, n - 1) });
        }
        let mean = x.mean_axis(Axis(0)).expect("n > 0");
        let xc = &x - &mean.view().insert_axis(Axis(0));
        let d2 = sq_dists(xc.view()).mapv(|v| v.max(0.0));
        let (p, _, perp_err) = perplexity_affinities(d2.view(), self.perplexity);
        drop(d2);
        let (obj, lambda_u) = EslObjective::new(p.view(), self.dim, self.lambda_v);
        drop(p);
        let pg0 = obj.initial_kkt_residual(self.c);
        let lin: Vec<f64> = obj.cost.iter().map(|&c| 2.0 * obj.lambda * c).collect();
        let dual = PairDual { n, a: 1.0, b: 4.0, h: 0.5 * obj.m, lin: &lin, upper: self.c };
        // ESL's costs 1 - pbar_ij are nearly uniform at small lambda_v: the projected Newton
        // model fits, so a working set of DENSE_PAIR_FRACTION of the pairs hands over even on a
        // sparse factor (pair_active::ActiveOptions::hand_over_sparse); the curvature
        // preconditioner did not help here (pair_active::ActiveOptions::precondition)
        let r = solve_dual("esl", self.solver, &dual, self.max_iter, self.tol * pg0, ActiveShape { hand_over_sparse: true, precondition: false }, |w, g| {
            obj.value_and_gradient(w, g)
        })?;
        drop(lin);
        // the solver returns f and the KKT residual at the accepted point
        let (f_end, pg) = (r.f, r.kkt);
        let wmax = r.w.iter().copied().fold(0.0, f64::max);
        let threshold = EDGE_THRESHOLD * wmax;
        let edges = edges_above(n, &r.w, threshold);
        let ambiguous = r.w.iter().filter(|&&v| v > 0.0 && v <= threshold).count();
        let (labels, count) = structdr_numerics::graphs::connected_components(n, &edges);
        let sizes = structdr_numerics::graphs::component_sizes(&labels, count);
        let embedding = component_embedding(n, &edges, &labels, count, self.dim)?;
        let mut fitted = Fitted::new(
            Output::Embedding(embedding),
            Trace::iterative(r.history.clone(), r.iterations, r.stop(self.max_iter, pg0, self.tol), r.message.clone()).with_kkt_residual(r.kkt),
        );
        fitted.graph = Some(Graph { n_vertices: n, edges: edges.clone() });
        fitted.components = Some(labels);
        fitted.notes.push(format!(
            "perplexity {}: max |H_i - ln u| = {perp_err:.2e}; lambda_u = {lambda_u:.6e} (eq. 26), lambda = lambda_v lambda_u = {:.6e}",
            self.perplexity, obj.lambda
        ));
        fitted.notes.push(format!("{} [pgtol = tol * {pg0:.3e}]", r.solver_note));
        fitted.notes.push(format!(
            "KKT residual ||proj grad f||_inf = {pg:.3e} (relative {:.3e}); f = -(m/2) log det(I + 4L) + 2 lambda sum_(i<j) w_ij (1 - pbar_ij) = {f_end:.9e} (eq. 20; history holds f)",
            if pg0 > 0.0 { pg / pg0 } else { 0.0 }
        ));
        fitted.notes.push(format!(
            "W: {} edges with w > {threshold:.3e} (= {EDGE_THRESHOLD:e} max w, max w = {wmax:.4e}); {ambiguous} weights in (0, threshold]; {count} connected components, sizes {:?}",
            edges.len(),
            sizes
        ));
        Ok(fitted)
    }
}

pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: "esl",
        summary: "Embedding via structure learning: perplexity affinities pbar_ij, min_W -(m/2) log det(I + 4L) + lambda sum w_ij (1 - pbar_ij), 0 <= w_ij <= C (active-set solver over all pairs handing dense optima to projected Newton, or full-space projected L-BFGS / L-BFGS-B), lambda = lambda_v * min 2m/(1 - pbar_ij); per-component KPCA of m (I + 4 L_c)^-1.",
        reference: "Wang & Li, Learning low-dimensional latent graph structures: a density estimation approach, IEEE TNNLS 2020 (§III, Alg. 1)",
        // 2: the active-set solver hands dense-W problems over to projected Newton (pair_newton.rs):
        // the same optima to the tolerance, other last digits
        // 3: a working set of 10% of the pairs hands over on a sparse factor too
        // (ActiveOptions::hand_over_sparse): Table 1's slowest cells (lambda_v = 0.5, small u)
        // converge in tens of Newton iterations instead of hundreds of L-BFGS ones
        // 4: projected Newton solves its model's N x N system by conjugate gradients on the
        // free (or held) pairs instead of a dense Cholesky, and its sums over the pairs run in
        // eight lanes: the same optima to the tolerance, other last digits, and one dense N^3/3
        // factorisation fewer per Newton iteration
        version: 4,
        output: OutputKind::Embedding,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: false,
        params: Esl::schema(()),
        build: |p| declare::build::<Esl>("esl", (), p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;
    use structdr_numerics::optim::projected_gradient_norm;

    fn blobs(per: usize, seed: u64) -> Array2<f64> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        Array2::from_shape_fn((2 * per, 3), |(i, j)| {
            let shift = if i >= per && j == 0 { 20.0 } else { 0.0 };
            shift + rng.gen_range(-1.0..1.0)
        })
    }

    #[test]
    fn perplexity_is_reached() {
        let x = blobs(40, 1);
        let d2 = sq_dists(x.view());
        for u in [2.0, 10.0, 30.0] {
            let (p, _, err) = perplexity_affinities(d2.view(), u);
            assert!(err < 1e-5, "u = {u}: err {err}");
            for (i, row) in p.rows().into_iter().enumerate() {
                assert_eq!(row[i], 0.0);
                assert!((row.sum() - 1.0).abs() < 1e-12);
                let h: f64 = -row.iter().filter(|&&v| v > 0.0).map(|&v| v * v.ln()).sum::<f64>();
                assert!((h - u.ln()).abs() < 1e-5, "row {i}: H = {h}, ln u = {}", u.ln());
            }
        }
    }

    #[test]
    fn gradient_matches_central_differences() {
        let x = blobs(4, 2);
        let (p, _, _) = perplexity_affinities(sq_dists(x.view()).view(), 3.0);
        let (obj, _) = EslObjective::new(p.view(), 2, 0.7);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let w: Vec<f64> = (0..n_pairs(8)).map(|_| rng.gen_range(0.0..1.0)).collect();
        crate::testing::assert_gradient_matches_central_differences(|w, g| obj.value_and_gradient(w, g).unwrap(), &w, 1e-6, 1e-7);
        // eq. 26: at W = 0 every gradient entry is 2 (lambda c_ij - 2m) < 0 for lambda_v < 1
        let z = vec![0.0; w.len()];
        let mut g = vec![0.0; w.len()];
        obj.value_and_gradient(&z, &mut g).unwrap();
        for (k, &gk) in g.iter().enumerate() {
            assert!((gk - 2.0 * (obj.lambda * obj.cost[k] - 4.0)).abs() < 1e-12 && gk < 0.0);
        }
    }

    #[test]
    fn two_blobs_give_two_components_and_a_kkt_point() {
        let x = blobs(25, 4);
        let e = Esl { dim: 2, lambda_v: 0.8, c: 1.0, perplexity: 8.0, max_iter: 500, tol: 1e-6, solver: PairSolver::Projected };
        let f = e.fit(x.view(), 0).unwrap();
        eprintln!("{:#?}", f.notes);
        for w in f.trace.history.windows(2) {
            assert!(w[1] <= w[0] + 1e-12 * w[0].abs(), "f increased: {} -> {}", w[0], w[1]);
        }
        let comps = f.components.as_ref().unwrap();
        // no component mixes the blobs, and each blob is one component
        for i in 0..50 {
            for j in 0..50 {
                if (i < 25) != (j < 25) {
                    assert_ne!(comps[i], comps[j], "{i} and {j} joined across blobs");
                }
            }
        }
        assert!(comps[..25].iter().all(|&c| c == comps[0]) && comps[25..].iter().all(|&c| c == comps[25]), "{comps:?}");
        // KKT residual of the returned W (recomputed here)
        let (p, _, _) = perplexity_affinities(sq_dists(x.view()).view(), 8.0);
        let (obj, _) = EslObjective::new(p.view(), 2, 0.8);
        // W is only available thresholded; check the threshold dropped nothing material
        let mut w = vec![0.0; n_pairs(50)];
        for &(i, j, v) in &f.graph.as_ref().unwrap().edges {
            w[crate::structure::pair_dual::pair_index(50, i, j)] = v;
        }
        let mut g = vec![0.0; w.len()];
        obj.value_and_gradient(&w, &mut g).unwrap();
        let pg = projected_gradient_norm(&w, &g, &vec![0.0; w.len()], &vec![1.0; w.len()]);
        assert!(pg < 1e-4 * obj.initial_kkt_residual(1.0), "KKT residual {pg}");
        // every component embedding is centred
        let y = &f.embedding().unwrap();
        for c in [comps[0], comps[25]] {
            let rows: Vec<usize> = (0..50).filter(|&i| comps[i] == c).collect();
            for t in 0..2 {
                let s: f64 = rows.iter().map(|&i| y[[i, t]]).sum();
                assert!(s.abs() < 1e-8, "component {c} column {t} sums to {s}");
            }
        }
    }

    #[test]
    fn bad_input_is_an_error() {
        let x = blobs(5, 1);
        let e = Esl { dim: 2, lambda_v: 0.8, c: 1.0, perplexity: 3.0, max_iter: 10, tol: 1e-5, solver: PairSolver::Projected };
        assert!(Esl { lambda_v: 1.0, ..e.clone() }.fit(x.view(), 0).is_err());
        assert!(Esl { perplexity: 9.0, ..e.clone() }.fit(x.view(), 0).unwrap_err().to_string().contains("perplexity"));
        assert!(Esl { c: 0.0, ..e.clone() }.fit(x.view(), 0).is_err());
        assert!(e.fit(x.view(), 0).is_ok());
    }
}
