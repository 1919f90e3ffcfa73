//! MPME: maximum posterior manifold embedding (Mao, Wang & Tsang 2017, paper 002 §3.3-3.5).
//!
//! 1. `phi_ij = ||y_i - y_j||^2` (002 §3.2: squared Euclidean distances of the input; exactly 0
//!    for identical rows, which since version 4 are found on the rows themselves, so that `C = inf`
//!    with duplicates is refused as the unbounded dual it is).
//! 2. Dual (002 eq. 10): `max_W (d/2) log det(L + lambda I) - (1/4) <W, Phi>` over symmetric `W`
//!    with `0 <= w_ij <= 4C`, `w_ii = 0`, `L = diag(W 1) - W` (`C = inf`: no upper bound). With one
//!    variable per pair `i < j` (eq. 13's lower-triangle reduction; `<W, Phi> = 2 sum_{i<j} w_ij phi_ij`)
//!    we **minimise**
//!
//!    `F(w) = -(d/2) log det(L + lambda I) + (1/2) sum_{i<j} w_ij phi_ij`,
//!
//!    `dF/dw_ij = -(d/2) [(Q^-1)_ii + (Q^-1)_jj - 2 (Q^-1)_ij] + phi_ij / 2`, `Q = L + lambda I`,
//!
//!    i.e. `-(d/2)` times eq. 14 (eq. 13 is eq. 10 scaled by `2/d`; same maximiser). Solved from
//!    `W = 0` by the `solver`: by default the active-set solver of [`super::pair_active`] (working
//!    sets on a sparse Cholesky, every other pair checked exactly), or a full-space solver of
//!    [`structdr_numerics::optim`] (projected L-BFGS; the Fortran L-BFGS-B). The problem is convex, so the projected
//!    gradient `||proj grad F||_inf` (the KKT residual) certifies the optimum; it is reported.
//! 3. Embedding: KPCA on `U = (L + lambda I)^-1` (eq. 17; [`structdr_numerics::spectral::kernel_pca`]: centred,
//!    `Y = V_d diag(sqrt(lambda_d))`), or (`embedding = "geig"`) the generalised eigenproblem
//!    `(L + lambda I) f = mu D_lambda f`, `D_lambda = diag((W + lambda I) 1)` (eq. 16), through
//!    `D_lambda^{-1/2} (L + lambda I) D_lambda^{-1/2}`: eigenvectors 2..d+1 (ascending), the first
//!    dropped as in LE (the paper's `lambda = 0` special case), scaled so that `F^T D_lambda F = I`.
//!    Since version 2 an optimum the data do not turn into an embedding is `degenerate`: `W = 0`
//!    (the kernel `I / lambda` has one eigenvalue on `1^perp`), and under KPCA a `W` with more than
//!    `dim + 1` connected components (the top eigenvalue `1/lambda` is tied `c - 1` times;
//!    [`super::embedding_is_determined`]).
//!
//! Cost: N(N-1)/2 variables (2.0 M at N = 2007). The active-set solver evaluates on the working
//! set's sparse factor (milliseconds; the optimum keeps 0.1-0.8% of the pairs on the Table 1 sets)
//! and checks every other pair by block solves; since version 4 its inner solves are
//! preconditioned by each pair's curvature `(d/2) r_ij^2`
//! ([`super::pair_active::ActiveOptions::precondition`]: Table 1's converged cells from 106-10,546
//! inner iterations down to 39-147). The full-space solvers pay, per evaluation, one
//! Cholesky + one `dpotri` of an N x N matrix (N^3 flops) plus O(N^2) while the iterate is dense;
//! since version 3, once its non-zero pairs make a sparse factor cheaper (after 20-50 evaluations
//! from `W = 0` on the Table 1 sets), a sparse Cholesky on them and `Q^-1` by block solves
//! ([`super::pair_dual::log_det_grad_auto`]; the same numbers to rounding, which is why the
//! version changed: a capped run's last iterate moves with its rounding). The projected solver keeps `(2m + 6) N(N-1)/2`
//! doubles (m = 5: ~64 N^2 bytes, 260 MB at N = 2007), the Fortran L-BFGS-B `(2m + 5) N(N-1)/2`
//! (m = 10: ~100 N^2 bytes). N is capped at [`super::pair_dual::PAIR_MAX_N`].

use super::pair_active::{ActiveShape, PairDual};
use super::pair_dual::{
    check_pair_problem, edges_above, for_each_pair, log_det_and_grad, log_det_grad_auto, n_pairs, solve_dual, Factorisation, PairSolver, DEFAULT_MAX_ITER,
    DEFAULT_SOLVER, MAX_ITER_DOC, SOLVER_DOC,
};
use crate::api::declare::{self, declare_params, param_choice, Declared};
use crate::api::info::{choice, dim, float, float_in, int, positive, MethodInfo};
use crate::api::params::{closed, open};
use crate::api::OutputKind;
use crate::api::{numerical, numerics, Embedder, FitInput, Fitted, Graph, MethodError, Output, ParamMap, Result, Trace};
use ndarray::{Array2, ArrayView2, Axis};
use structdr_linalg::{sq_dists, LinalgError};
use structdr_numerics::neighbours::distinct_rows;

param_choice! {
    /// How MPME turns the learned `W` into coordinates.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum MpmeEmbedding {
        /// KPCA on `(L + lambda I)^-1` (002 eq. 17).
        Kpca = "kpca",
        /// Generalised eigenproblem `(L + lambda I) F = D_lambda F Lambda` (002 eq. 16).
        Geig = "geig",
    }
}

declare_params! {
    /// MPME with parameters `dim`, `lambda`, `C`, `max_iter`, `tol`, `solver`, `embedding`.
    #[derive(Debug, Clone)]
    pub struct Mpme {
        /// Target dimension d (also the factor `d/2` of the log-det term).
        pub dim: usize = dim(),
        /// Prior precision `lambda > 0`.
        pub lambda: f64 = positive("lambda", 1.0, "precision lambda > 0 of the Gaussian prior N(0, lambda^-1 I) on each embedding coordinate"),
        /// Slack penalty `C > 0` (bounds `0 <= w_ij <= 4C`); `f64::INFINITY` for no upper bound.
        pub c: f64 = float_in("C", open(0.0), closed(f64::INFINITY), f64::INFINITY, "slack penalty C: 0 <= w_ij <= 4C (inf = no upper bound; larger C gives a sparser W)"),
        /// Iteration limit of the dual solver.
        pub max_iter: usize = int("max_iter", 1, DEFAULT_MAX_ITER as i64, MAX_ITER_DOC),
        /// Stop when `||proj grad F||_inf <= tol * ||proj grad F(0)||_inf` (relative KKT residual).
        pub tol: f64 = float("tol", 0.0, 1.0, 1e-5, "stop when the KKT residual ||proj grad||_inf falls below tol times its value at W = 0"),
        /// Bound-constrained solver of the dual.
        pub solver: PairSolver = choice("solver", PairSolver::NAMES, DEFAULT_SOLVER, SOLVER_DOC),
        /// Embedding step.
        pub embedding: MpmeEmbedding = choice("embedding", MpmeEmbedding::NAMES, "kpca", "kpca: KPCA on (L + lambda I)^-1 (eq. 17); geig: generalised eigenvectors 2..d+1 of (L + lambda I) f = mu D_lambda f (eq. 16)"),
    }
}

/// The MPME dual objective `F(w)` (module doc), on pair variables.
#[derive(Debug, Clone)]
pub struct MpmeObjective {
    /// Number of samples.
    pub n: usize,
    /// `phi_ij`, one per pair `i < j` (storage order of [`super::pair_dual::for_each_pair`]).
    pub phi: Vec<f64>,
    /// `d`.
    pub dim: f64,
    /// `lambda`.
    pub lambda: f64,
}

impl MpmeObjective {
    /// `phi` = squared Euclidean distances of the rows of `x`.
    pub fn from_data(x: ArrayView2<f64>, dim: usize, lambda: f64) -> MpmeObjective {
        let n = x.nrows();
        let mean = x.mean_axis(Axis(0)).expect("n > 0");
        let xc = &x - &mean.view().insert_axis(Axis(0));
        let d2 = sq_dists(xc.view());
        // identical rows get exactly 0: a GEMM-formed ||a||^2 + ||b||^2 - 2 a.b need not be
        let (_, group) = distinct_rows(x);
        let mut phi = vec![0.0; n_pairs(n)];
        for_each_pair(n, |i, j, k| phi[k] = if group[i] == group[j] { 0.0 } else { d2[[i, j]].max(0.0) });
        MpmeObjective { n, phi, dim: dim as f64, lambda }
    }

    /// `F(w)` and its gradient in `g` (what the solver calls).
    pub fn value_and_gradient(&self, w: &[f64], g: &mut [f64]) -> std::result::Result<f64, LinalgError> {
        self.evaluate(w, g).map(|(f, _)| f)
    }

    /// As [`Self::value_and_gradient`], also saying which factorisation of `Q` it used (the
    /// sparse one once the iterate's pattern makes it cheaper: [`log_det_grad_auto`]).
    pub fn evaluate(&self, w: &[f64], g: &mut [f64]) -> std::result::Result<(f64, Factorisation), LinalgError> {
        let (ld, path) = log_det_grad_auto(self.n, w, self.lambda, 1.0, g)?;
        Ok((self.finish(ld, w, g), path))
    }

    /// `F` from `log det Q`, turning `g` from `d log det Q / dw` into `dF/dw` (module doc).
    fn finish(&self, ld: f64, w: &[f64], g: &mut [f64]) -> f64 {
        let h = 0.5 * self.dim;
        let mut lin = 0.0;
        for ((gk, &wk), &pk) in g.iter_mut().zip(w).zip(&self.phi) {
            *gk = -h * *gk + 0.5 * pk;
            lin += wk * pk;
        }
        -h * ld + 0.5 * lin
    }

    /// Whether lambda suits the data's scale. At `W = 0` the gradient of pair (i, j) is
    /// `phi_ij / 2 - d / lambda`, so only the candidate pairs with `phi_ij < 2 d / lambda` can gain
    /// an edge; with none, `W = 0` is the optimum and the embedding (KPCA of `I / lambda`) is
    /// degenerate. The note counts the candidates and, when there are none, says which lambda
    /// (or data scale) would give some.
    pub fn scale_note(&self) -> String {
        let threshold = 2.0 * self.dim / self.lambda;
        let candidates = self.phi.iter().filter(|&&p| p < threshold).count();
        let phi_min = self.phi.iter().copied().fold(f64::INFINITY, f64::min);
        if candidates == 0 {
            format!(
                "degenerate: W = 0 is optimal, no pair has phi_ij < 2 d / lambda = {threshold:.3e} (smallest phi_ij = {phi_min:.3e}), \
                 so the embedding is KPCA of I / lambda and carries no structure; scale the data or take lambda < 2 d / min phi_ij = {:.3e}",
                2.0 * self.dim / phi_min
            )
        } else {
            format!("candidate pairs (phi_ij < 2 d / lambda = {threshold:.3e}, the only ones that can gain an edge): {candidates} of {}", self.phi.len())
        }
    }

    /// `||proj grad F(0)||_inf` in closed form: at `W = 0`, `Q^-1 = I / lambda`, so
    /// `dF/dw_ij = -d / lambda + phi_ij / 2` and only negative entries (capped by the upper bound) count.
    pub fn initial_kkt_residual(&self, upper: f64) -> f64 {
        let c = self.dim / self.lambda;
        self.phi.iter().map(|&p| (c - 0.5 * p).max(0.0).min(upper)).fold(0.0, f64::max)
    }
}

/// Bottom generalised eigenvectors 2..d+1 of `(L + lambda I) f = mu D_lambda f` (002 eq. 16),
/// `F^T D_lambda F = I`, signs canonicalised. `qi` is not used; `w` are the pair weights.
pub fn geig_embedding(n: usize, w: &[f64], lambda: f64, dim: usize) -> Result<Array2<f64>> {
    let mut a = Array2::<f64>::zeros((n, n));
    for_each_pair(n, |i, j, k| {
        a[[i, j]] = w[k];
        a[[j, i]] = w[k];
    });
    // D^{-1/2} (D_lambda - W) D^{-1/2} = I - D^{-1/2} W D^{-1/2}, D_lambda = diag(lambda + W 1)
    let (a, s) = structdr_numerics::graphs::laplacian::normalized(a, lambda)
        .map_err(|i| MethodError::Input { method: "mpme", reason: format!("sample {i} has a degree lambda + sum_j w_ij that is not positive and finite") })?;
    let (y, _) = structdr_numerics::spectral::bottom_nontrivial(a.view(), dim, Some(&s)).map_err(numerics("mpme"))?;
    Ok(y)
}

impl Embedder for Mpme {
    fn name(&self) -> &'static str {
        "mpme"
    }
    fn info(&self) -> MethodInfo {
        info()
    }
    fn params(&self) -> ParamMap {
        self.to_params()
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        let x = input.x;
        check_pair_problem("mpme", &x, self.dim)?;
        let n = x.nrows();
        let obj = MpmeObjective::from_data(x, self.dim, self.lambda);
        if self.c.is_infinite() {
            // identical rows have phi exactly 0 (MpmeObjective::from_data compares the rows: a
            // GEMM-formed distance need not come out 0, which let iris's 4 identical pairs through
            // before version 4)
            if let Some(k) = obj.phi.iter().position(|&p| p == 0.0) {
                let mut pair = (0, 0);
                for_each_pair(n, |i, j, kk| {
                    if kk == k {
                        pair = (i, j)
                    }
                });
                return Err(MethodError::Input {
                    method: "mpme",
                    reason: format!(
                        "samples {} and {} coincide (identical rows): with C = inf the dual is unbounded (phi_ij = 0, w_ij -> inf); use a finite C or remove duplicates",
                        pair.0, pair.1
                    ),
                });
            }
        }
        let upper = 4.0 * self.c;
        let pg0 = obj.initial_kkt_residual(upper);
        let lin: Vec<f64> = obj.phi.iter().map(|&p| 0.5 * p).collect();
        let dual = PairDual { n, a: self.lambda, b: 1.0, h: 0.5 * obj.dim, lin: &lin, upper };
        // a sparse optimum far from the projected Newton model: working sets hand over only when
        // their factor is dense too (pair_active::ActiveOptions::hand_over_sparse); the inner
        // solves are preconditioned by each pair's curvature (ActiveOptions::precondition). The closure
        // serves the full-space solvers only (the active-set solver evaluates on its working sets)
        let mut sparse_evaluations = 0usize;
        let shape = ActiveShape { hand_over_sparse: false, precondition: true };
        let r = solve_dual("mpme", self.solver, &dual, self.max_iter, self.tol * pg0, shape, |w, g| {
            let (f, path) = obj.evaluate(w, g)?;
            sparse_evaluations += usize::from(path == Factorisation::Sparse);
            Ok(f)
        })?;
        drop(lin);
        // the solver returns F and the KKT residual at the accepted point; only the KPCA
        // embedding needs Q^-1, hence one more factorisation there
        let (f_end, pg) = (r.f, r.kkt);
        let edges = edges_above(n, &r.w, 0.0);
        if edges.is_empty() {
            // W = 0: the kernel is I / lambda, one (N-1)-fold eigenvalue on 1^perp, and any
            // embedding would be the eigensolver's choice, not the data's
            let note = obj.scale_note();
            let reason = match note.strip_prefix("degenerate: ") {
                Some(why) => why.to_string(),
                None => format!("W = 0 at the end of the solve ({}; {note}), so the kernel I / lambda carries no structure", r.message),
            };
            return Err(MethodError::Degenerate { method: "mpme", reason });
        }
        let embedding = match self.embedding {
            MpmeEmbedding::Kpca => {
                super::embedding_is_determined(
                    "mpme",
                    n,
                    &edges,
                    self.dim,
                    ("lambda", self.lambda),
                    "use a smaller lambda, a larger dim, or embedding = \"geig\"",
                )?;
                let (_, qi) = log_det_and_grad(n, &r.w, self.lambda, 1.0, &mut vec![0.0; r.w.len()]).map_err(numerical("mpme"))?;
                structdr_numerics::spectral::kernel_pca(qi, self.dim).map_err(numerics("mpme"))?.0
            }
            MpmeEmbedding::Geig => geig_embedding(n, &r.w, self.lambda, self.dim)?,
        };
        let nnz = edges.len();
        let at_upper = if upper.is_finite() { r.w.iter().filter(|&&v| v >= upper).count() } else { 0 };
        let mut fitted = Fitted::new(
            Output::Embedding(embedding),
            Trace::iterative(r.history.clone(), r.iterations, r.stop(self.max_iter, pg0, self.tol), r.message.clone()).with_kkt_residual(r.kkt),
        );
        fitted.graph = Some(Graph { n_vertices: n, edges });
        let sparse_note = if sparse_evaluations > 0 {
            format!("; {sparse_evaluations} of these evaluations on a sparse Cholesky of Q (the iterate's non-zero pairs, AMD order) and Q^-1 by block solves, the others dense")
        } else {
            String::new()
        };
        fitted.notes.push(format!("{}{sparse_note} [pgtol = tol * {pg0:.3e}]", r.solver_note));
        fitted.notes.push(format!(
            "KKT residual ||proj grad F||_inf = {pg:.3e} (relative {:.3e}); F = -(d/2) log det(L + lambda I) + (1/2) sum_(i<j) w_ij phi_ij = {f_end:.9e} (history holds F, minimised; eq. 10 = -F)",
            if pg0 > 0.0 { pg / pg0 } else { 0.0 }
        ));
        fitted.notes.push(format!(
            "W: {nnz} of {} pairs non-zero ({:.3}%), {at_upper} at the upper bound 4C",
            n_pairs(n),
            100.0 * nnz as f64 / n_pairs(n) as f64
        ));
        fitted.notes.push(obj.scale_note());
        Ok(fitted)
    }
}

pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: "mpme",
        summary: "Maximum posterior manifold embedding: max_W (d/2) log det(L + lambda I) - (1/4) <W, Phi>, 0 <= w_ij <= 4C (active-set solver over all N(N-1)/2 pairs, or full-space projected L-BFGS / L-BFGS-B), then KPCA on (L + lambda I)^-1 or the generalised eigenproblem (L + lambda I) F = D_lambda F Lambda.",
        reference: "Mao, Wang & Tsang, A unified probabilistic framework for robust manifold learning and embedding, Mach. Learn. 2017 (eqs. 10-17)",
        version: 4,
        output: OutputKind::Embedding,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: false,
        params: Mpme::schema(()),
        build: |p| declare::build::<Mpme>("mpme", (), p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::declare::ParamChoice;
    use crate::structure::pair_dual::solve_pairs;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;
    use structdr_numerics::optim::{projected_gradient_norm, Solver};

    fn circle(n: usize, noise: f64, seed: u64) -> Array2<f64> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        Array2::from_shape_fn((n, 2), |(i, j)| {
            let t = 2.0 * std::f64::consts::PI * i as f64 / n as f64;
            (if j == 0 { t.cos() } else { t.sin() }) + noise * rng.gen_range(-1.0..1.0)
        })
    }

    #[test]
    fn gradient_matches_central_differences() {
        let x = circle(8, 0.1, 1);
        let obj = MpmeObjective::from_data(x.view(), 2, 0.7);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(2);
        let w: Vec<f64> = (0..n_pairs(8)).map(|_| rng.gen_range(0.0..1.5)).collect();
        crate::testing::assert_gradient_matches_central_differences(|w, g| obj.value_and_gradient(w, g).unwrap(), &w, 1e-6, 1e-7);
    }

    /// N = 2 has one variable: F(w) = -(d/2) log(lambda (lambda + 2w)) + w phi / 2, minimised at
    /// w* = d/phi - lambda/2 (if positive, below 4C).
    #[test]
    fn two_points_closed_form() {
        let obj = MpmeObjective { n: 2, phi: vec![0.5], dim: 2.0, lambda: 1.0 };
        for solver in Solver::ALL {
            let r = solve_pairs("mpme", solver, 1, f64::INFINITY, 100, 1e-12, |w, g| obj.value_and_gradient(w, g)).unwrap();
            let want = 2.0 / 0.5 - 0.5;
            assert!((r.x[0] - want).abs() < 1e-7, "{solver:?}: w = {} want {want}", r.x[0]);
            // with 4C below w*, the bound is active
            let r = solve_pairs("mpme", solver, 1, 1.0, 100, 1e-12, |w, g| obj.value_and_gradient(w, g)).unwrap();
            assert_eq!(r.x[0], 1.0, "{solver:?}");
        }
    }

    #[test]
    fn fit_reaches_a_kkt_point_and_history_decreases() {
        let x = circle(40, 0.05, 4);
        let m = Mpme { dim: 2, lambda: 1.0, c: f64::INFINITY, max_iter: 500, tol: 1e-7, embedding: MpmeEmbedding::Kpca, solver: PairSolver::Projected };
        let f = m.fit(x.view(), 0).unwrap();
        assert!(f.trace.converged(), "{:?}", f.notes);
        for w in f.trace.history.windows(2) {
            assert!(w[1] <= w[0] + 1e-12 * w[0].abs(), "F increased: {} -> {}", w[0], w[1]);
        }
        let obj = MpmeObjective::from_data(x.view(), 2, 1.0);
        let mut w = vec![0.0; n_pairs(40)];
        for &(i, j, v) in &f.graph.as_ref().unwrap().edges {
            w[crate::structure::pair_dual::pair_index(40, i, j)] = v;
        }
        let mut g = vec![0.0; w.len()];
        obj.value_and_gradient(&w, &mut g).unwrap();
        let pg = projected_gradient_norm(&w, &g, &vec![0.0; w.len()], &vec![f64::INFINITY; w.len()]);
        let pg0 = obj.initial_kkt_residual(f64::INFINITY);
        assert!(pg <= 1e-6 * pg0, "KKT residual {pg} (initial {pg0}): {:?}", f.notes);
        eprintln!("{:?}", f.notes);
        // W is sparse and the circle's neighbours are linked
        let e = &f.graph.as_ref().unwrap().edges;
        assert!(e.len() < n_pairs(40) / 2, "{} edges", e.len());
        assert!(e.iter().any(|&(i, j, _)| (i, j) == (0, 1)));
        // a circle embeds as a closed curve: radius roughly constant
        let r: Vec<f64> = f.embedding().unwrap().rows().into_iter().map(|r| r.dot(&r).sqrt()).collect();
        let (lo, hi) = r.iter().fold((f64::MAX, 0.0f64), |(a, b), &v| (a.min(v), b.max(v)));
        assert!(lo > 0.5 * hi, "circle radii in [{lo}, {hi}]");
        // geig embedding runs and is D_lambda-orthonormal
        let g = Mpme { embedding: MpmeEmbedding::Geig, ..m.clone() }.fit(x.view(), 0).unwrap();
        assert_eq!(g.embedding().unwrap().dim(), (40, 2));
    }

    /// Perturbing the optimum inside the box must not lower F (it is the global minimiser), for
    /// either solver; and the two solvers reach the same minimiser (F is strictly convex in w).
    #[test]
    fn optimum_is_not_improved_by_feasible_perturbations() {
        let x = circle(15, 0.1, 9);
        let obj = MpmeObjective::from_data(x.view(), 2, 0.5);
        let upper = 4.0 * 0.3;
        let mut found = Vec::new();
        for solver in Solver::ALL {
            let r = solve_pairs("mpme", solver, n_pairs(15), upper, 1000, 1e-10, |w, g| obj.value_and_gradient(w, g)).unwrap();
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
            let mut g = vec![0.0; r.x.len()];
            for _ in 0..50 {
                let wp: Vec<f64> = r.x.iter().map(|&v| (v + 1e-3 * rng.gen_range(-1.0..1.0)).clamp(0.0, upper)).collect();
                let fp = obj.value_and_gradient(&wp, &mut g).unwrap();
                assert!(fp >= r.f - 1e-12 * r.f.abs(), "{solver:?}: {fp} < {}", r.f);
            }
            assert!(r.x.contains(&upper) && r.x.contains(&0.0), "{solver:?}: both bounds active");
            eprintln!("{solver:?}: {} iterations, {} evaluations, F = {:.15e}, {}", r.iterations, r.evaluations, r.f, r.message);
            found.push(r);
        }
        let dw = found[0].x.iter().zip(&found[1].x).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(dw < 1e-6, "the solvers' minimisers differ by {dw:.2e}");
        assert!((found[0].f - found[1].f).abs() <= 1e-12 * found[0].f.abs());
    }

    /// Once a full-space solver's iterate is sparse its evaluations take the sparse factor
    /// ([`log_det_grad_auto`]; here with the rule's size bound and flop margin lifted, so that a
    /// problem small enough to solve in a test takes that path): from `W = 0` both full-space
    /// solvers reach the optimum of dense evaluations to 1e-8 (relative, in F), with the KKT
    /// residual recomputed densely at the target or at most twice where dense evaluations stop.
    #[test]
    fn sparse_evaluations_reach_the_optimum_of_dense_ones() {
        use crate::structure::pair_dual::{log_det_grad, log_det_grad_by_rule};
        let n = 60;
        let x = circle(n, 0.05, 21).mapv(|v| 3.0 * v);
        let obj = MpmeObjective::from_data(x.view(), 2, 1.0);
        let upper = 4.0 * 1e3;
        let tol = 1e-7 * obj.initial_kkt_residual(upper);
        let dense_eval = |w: &[f64], g: &mut [f64]| log_det_grad(n, w, obj.lambda, 1.0, g).map(|ld| obj.finish(ld, w, g));
        for solver in Solver::ALL {
            let mut paths = (0usize, 0usize);
            let auto = solve_pairs("mpme", solver, n_pairs(n), upper, 20000, tol, |w, g| {
                let (ld, path) = log_det_grad_by_rule(n, w, obj.lambda, 1.0, g, 0, 1.0)?;
                if path == Factorisation::Sparse {
                    paths.0 += 1
                } else {
                    paths.1 += 1
                }
                Ok(obj.finish(ld, w, g))
            })
            .unwrap();
            let dense = solve_pairs("mpme", solver, n_pairs(n), upper, 20000, tol, dense_eval).unwrap();
            eprintln!(
                "{solver:?}: sparse-aware {} iterations, {} evaluations ({} sparse, {} dense), F = {:.15e}, {}; dense {} iterations, F = {:.15e}",
                auto.iterations, auto.evaluations, paths.0, paths.1, auto.f, auto.message, dense.iterations, dense.f
            );
            assert!(paths.0 > auto.evaluations / 2 && paths.1 > 0, "{solver:?}: {paths:?} of {} evaluations", auto.evaluations);
            assert!((auto.f - dense.f).abs() <= 1e-8 * dense.f.abs(), "{solver:?}: F {} against {}", auto.f, dense.f);
            let kkt = |w: &[f64]| {
                let mut g = vec![0.0; n_pairs(n)];
                dense_eval(w, &mut g).unwrap();
                projected_gradient_norm(w, &g, &vec![0.0; g.len()], &vec![upper; g.len()])
            };
            let (pg, pg_dense) = (kkt(&auto.x), kkt(&dense.x));
            // both solvers may end on their relative-reduction test short of pgtol (F stops
            // resolving), with dense evaluations too: they must do as well as those do
            let allowed = tol.max(2.0 * pg_dense);
            assert!(pg <= allowed, "{solver:?}: KKT residual {pg:e} recomputed densely (dense evaluations: {pg_dense:e}), target {tol:e}");
            let nnz = auto.x.iter().filter(|&&v| v > 0.0).count();
            assert!(nnz < n_pairs(n) / 4, "{solver:?}: {nnz} pairs weighted");
        }
    }

    /// The `solver` parameter's values are the active-set solver and every full-space solver's
    /// name, and the default is one of them.
    #[test]
    fn solver_parameter_values_name_every_solver() {
        let mut names: Vec<&str> = Solver::ALL.iter().map(|s| s.name()).collect();
        names.push("active");
        let mut values = PairSolver::NAMES.to_vec();
        names.sort();
        values.sort();
        assert_eq!(names, values);
        assert!(<PairSolver as ParamChoice>::from_name(DEFAULT_SOLVER).is_some());
    }

    /// Data far larger than lambda's scale (phi_ij >= 2 d / lambda for every pair) make W = 0
    /// optimal: the fit stops at once with no edge and says so, naming a lambda bound that does
    /// give an edge; at the circle's own scale the note counts candidates instead.
    #[test]
    fn a_lambda_too_large_for_the_data_scale_is_reported_as_degenerate() {
        let m = Mpme { dim: 2, lambda: 1.0, c: f64::INFINITY, max_iter: 100, tol: 1e-7, embedding: MpmeEmbedding::Kpca, solver: PairSolver::Projected };
        let x = circle(20, 0.05, 3);
        // smallest squared distance ~ (2 pi / 20)^2 ~ 0.1: scaled by 100 it is ~ 1e3 > 2 d / lambda = 4
        let big = x.mapv(|v| 100.0 * v);
        // W = 0 is optimal: no embedding, a degenerate error that says which lambda would do
        let err = m.fit(big.view(), 0).unwrap_err();
        let note = err.to_string();
        assert!(matches!(err, MethodError::Degenerate { .. }) && note.contains("W = 0 is optimal"), "{note}");
        let obj = MpmeObjective::from_data(big.view(), 2, 1.0);
        let phi_min = obj.phi.iter().copied().fold(f64::INFINITY, f64::min);
        assert!(phi_min >= 4.0 && note.contains(&format!("{:.3e}", 4.0 / phi_min)), "{note}");
        // the suggested lambda (just below 2 d / min phi) does give an edge: one, so W splits the
        // 20 samples into 19 components and KPCA at dim = 2 is not determined either (the next
        // degenerate error, which counts them)
        let lam = 0.99 * 4.0 / phi_min;
        let again = Mpme { lambda: lam, ..m.clone() }.fit(big.view(), 0).unwrap_err().to_string();
        assert!(again.contains("W splits the samples into 19 connected components"), "{again}");
        let f = m.fit(x.view(), 0).unwrap();
        assert!(f.notes.iter().any(|n| n.starts_with("candidate pairs")) && !f.notes.iter().any(|n| n.starts_with("degenerate")), "{:?}", f.notes);
    }

    /// Well-separated clusters give a learned graph with one component per cluster: KPCA on
    /// `(L + lambda I)^-1` then has its top eigenvalue `1/lambda` `c - 1` times, and with
    /// `c - 1 > dim` the embedding would be a slice of that eigenspace picked by rounding.
    #[test]
    fn kpca_with_more_components_than_dim_plus_one_is_degenerate() {
        let (c, per) = (5, 8);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let x = Array2::from_shape_fn((c * per, c), |(i, j)| if i / per == j { 10.0 } else { 0.0 } + 0.3 * rng.gen_range(-1.0..1.0));
        let m = Mpme { dim: 2, lambda: 1.0, c: f64::INFINITY, max_iter: 2000, tol: 1e-8, embedding: MpmeEmbedding::Kpca, solver: PairSolver::Projected };
        let err = m.fit(x.view(), 0).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, MethodError::Degenerate { .. }) && msg.contains("5 connected components") && msg.contains("4 times, more than dim = 2"), "{msg}");
        // the whole tied eigenspace kept (dim = c - 1): an embedding, with the kernel's top
        // eigenvalue 1/lambda = 1 exactly c - 1 times
        let f = Mpme { dim: 4, ..m.clone() }.fit(x.view(), 0).unwrap();
        assert_eq!(f.embedding().unwrap().ncols(), 4);
        let w = f.graph.as_ref().unwrap();
        let mut wv = vec![0.0; n_pairs(c * per)];
        for_each_pair(c * per, |i, j, k| {
            if let Some(e) = w.edges.iter().find(|e| e.0 == i && e.1 == j) {
                wv[k] = e.2;
            }
        });
        let (_, qi) = log_det_and_grad(c * per, &wv, 1.0, 1.0, &mut vec![0.0; wv.len()]).unwrap();
        let nn = c * per;
        let h = Array2::from_shape_fn((nn, nn), |(i, j)| if i == j { 1.0 } else { 0.0 } - 1.0 / nn as f64);
        let k = h.dot(&qi).dot(&h);
        let vals = structdr_linalg::eigh(k.view()).unwrap().values;
        let top = vals.iter().filter(|&&v| (v - 1.0).abs() < 1e-9).count();
        assert_eq!(top, c - 1, "{vals:?}");
    }

    /// Identical rows are found on the rows, not on GEMM-formed distances (which need not come
    /// out 0: with the default OpenBLAS kernels of an AVX-512 machine this pair's
    /// `||a||^2 + ||b||^2 - 2 a.b` of the centred data is 1.8e-15): their phi is exactly 0,
    /// C = inf is refused naming the pair, and a finite C (a bounded dual) fits.
    #[test]
    fn identical_rows_have_phi_zero_and_refuse_an_unbounded_dual() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(6);
        // iris-like: one decimal place, offsets of a few units
        let mut x = Array2::from_shape_fn((40, 4), |(_, j)| (rng.gen_range(0..30) as f64) / 10.0 + [4.3, 2.0, 1.0, 0.1][j]);
        let r = x.row(12).to_owned();
        x.row_mut(20).assign(&r);
        let obj = MpmeObjective::from_data(x.view(), 2, 1.0);
        for_each_pair(40, |i, j, k| assert_eq!(obj.phi[k] == 0.0, (i, j) == (12, 20), "pair ({i}, {j}): phi = {:e}", obj.phi[k]));
        let m = Mpme { dim: 2, lambda: 1.0, c: f64::INFINITY, max_iter: 20_000, tol: 1e-5, embedding: MpmeEmbedding::Kpca, solver: PairSolver::Active };
        let err = m.fit(x.view(), 0).unwrap_err().to_string();
        assert!(err.contains("samples 12 and 20 coincide"), "{err}");
        let f = Mpme { c: 10.0, ..m }.fit(x.view(), 0).unwrap();
        assert!(f.trace.stop.is_converged(), "{:?}", f.trace.stop);
    }

    #[test]
    fn bad_input_is_an_error() {
        let m = Mpme { dim: 2, lambda: 1.0, c: f64::INFINITY, max_iter: 10, tol: 1e-5, embedding: MpmeEmbedding::Kpca, solver: PairSolver::Projected };
        let mut x = circle(10, 0.0, 1);
        let r2 = x.row(2).to_owned();
        x.row_mut(3).assign(&r2);
        assert!(m.fit(x.view(), 0).unwrap_err().to_string().contains("coincide"));
        assert!(Mpme { lambda: 0.0, ..m.clone() }.fit(circle(10, 0.1, 1).view(), 0).is_err());
        assert!(Mpme { dim: 10, ..m.clone() }.fit(circle(10, 0.1, 1).view(), 0).is_err());
        let mut y = circle(10, 0.1, 1);
        y[[0, 0]] = f64::NAN;
        assert!(m.fit(y.view(), 0).is_err());
    }
}
