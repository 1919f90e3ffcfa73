//! FSASL: unsupervised feature selection with adaptive structure learning (Du & Shen, KDD 2015),
//! after the authors' code (`FSASL.m` with its defaults `LassoType = 'SLEP'`,
//! `GroupLassoType = 'LS21'`, as their harness runs it).
//!
//! The paper's problem (X here N x D, samples in rows; `Z = X W` the projected samples):
//!
//! `min_{W, S, P} ||Z^T - Z^T S||^2 + alpha ||S||_1 + beta sum_ij (||z_i - z_j||^2 p_ij + mu p_ij^2)
//!                + gamma ||W||_{2,1}`,  `s_ii = 0`, rows of P on the simplex,
//!
//! global structure S (sparse reconstruction of each `z_i` from the others), local structure P
//! (adaptive neighbours). With `L = (I - S)(I - S)^T + beta L_A`, `A = (P + P^T)/2`, the
//! W-subproblem is `min Tr(W^T X^T L X W) + gamma ||W||_{2,1}`; the code (and this module) solves
//! it in two stages, spectral-regression style: `F` = the c eigenvectors of L with the smallest
//! eigenvalues, then `W = argmin ||X W - F||^2 + gamma ||W||_{2,1}`.
//!
//! ## One iteration t
//! 1. S (global), skipped at t = 1 when `max_iter >= 5` (as the code): for each sample i the lasso
//!    `s_i = argmin 1/2 ||z_i - sum_{j != i} s_ji z_j||^2 + rho_i ||s_i||_1`,
//!    `rho_i = alpha max_{j != i} |z_j^T z_i|` (SLEP's `rFlag = 1`: alpha is a ratio of the
//!    smallest rho giving s_i = 0), solved exactly on the Gram matrix `Z Z^T` (N x N, formed once
//!    per S step and shared by the N lassos; the atoms `z_j` live in R^c, so supports have at most
//!    about c atoms): from the previous S step's `s_i`, the active-set descent of Osborne, Presnell
//!    & Turlach ([`super::lars::lasso_active_set`], a few support solves when Z moved little);
//!    failing that (a support outgrowing the rank, or no previous S), the LARS-lasso homotopy from
//!    `rho_max` down to `rho_i` ([`super::lars::lasso_path_gram`]), its end re-solved on its
//!    support and signs. The descent's answer is kept only with every KKT condition met to
//!    [`WARM_KKT`] `x rho_max` (rounding level); the worst violation over all samples is
//!    reported (about 1e-15 on COIL20);
//! 2. P (local): at t = 1 the heat-kernel K-NN graph of X (the code's `constructW` defaults:
//!    k = 5, width = the mean pairwise distance); afterwards, for each i, its k nearest samples
//!    in Z (itself excluded) and `p_i = argmin_{simplex} sum_j p_ij d_ij + mu p_ij^2` on them,
//!    `p_i = P_simplex(-d_i / (2 mu))`, `mu` = the adaptive-neighbour scale of the raw data
//!    (`mean_i (k d_{i,k+1} - sum_{h<=k} d_ih) / 2`, squared distances; the code's `estimateReg`,
//!    computed once on X);
//! 3. F = the c bottom eigenvectors of `L = (I - S)(I - S)^T + beta L_A` (dense N x N; with S
//!    skipped only `beta L_A`);
//! 4. W by the l2,1 reweighting `W = (X^T X + gamma Q)^-1 X^T F`, `Q_ff = 1/(2 ||w_f||)`,
//!    `inner_iter` times, Q carried over from the previous W (the code restarts from Q = I each
//!    time).
//!
//! The recorded objective is the code's: `Tr(Z^T L Z) + alpha sum |S| + beta mu sum A_ij^2
//! + gamma ||W||_{2,1}` with `Z = X W` after step 4. The two-stage W step does not minimise the
//! joint objective, so it is not monotone and none is claimed; what holds and is tested is each
//! block on its own: every S column meets its lasso KKT conditions, every P row its simplex
//! KKT conditions, F is the exact eigen-minimiser, and the reweighting never increases
//! `||X W - F||^2 + gamma ||W||_{2,1}` (Nie et al. 2010's lemma). The code has no stopping rule: it
//! runs `max_iter` iterations (harness 50). Scores `||w_f||_2`, ranked descending, ties by index.
//!
//! ## Defaults and grids (the harness's `fs_unsup_fsasl_11_5_5`)
//! alpha = 0.01 (the code's `SLEPreg`; harness grid {0.001, 0.005, 0.01, 0.05, 0.1}, its
//! `gammaCandi`), beta = 1 (the code's `lambda2`; grid `10^[-5:5]`, its `alphaCandi`),
//! gamma = 1 (the code's `lambda3`; grid {0.1, 0.3, ..., 0.9}, its `betaCandi`); k = 5,
//! max_iter = 50, inner_iter = 10 (`LS21`'s maxiter), c = the class count.

use super::common::{check_clusters, heat_knn_graph, l21_weights, lasso_kkt, mean_pairwise_distance, rank_by_weight, row_norms, weighted_ridge, SparseGraph};
use super::lars::{lasso_active_set, lasso_on_support, lasso_path_gram};
use crate::api::declare::{self, declare_params, Declared};
use crate::api::info::{float, int, positive, MethodInfo};
use crate::api::{
    check_dense_size, check_input, numerical, numerics, Embedder, FeatureScores, FitInput, Fitted, Graph, MethodError, Output, OutputKind, ParamMap, Result,
    StopReason, Trace,
};
use ndarray::{Array1, Array2, ArrayView2};
use rayon::prelude::*;
use structdr_linalg::eigh_bottom;
use structdr_numerics::neighbours::knn;
use structdr_numerics::optim::projections::project_simplex;

const NAME: &str = "fsasl";
/// Floor of `||w_f||` in the reweighting (the code adds eps under the square root).
pub const L21_FLOOR: f64 = 1e-16;
/// KKT tolerance of the active-set descent, relative to the sample's `rho_max`: it stops when no
/// correlation exceeds `rho_i` by more, and its answer is kept only when every KKT condition
/// holds to it (rounding level, so only the exact support and signs pass).
pub const WARM_KKT: f64 = 1e-11;
/// Support solves allowed to the active-set descent from the previous S step's solution before
/// the sample's lasso is solved by the path from `rho_max` instead.
pub const MAX_SOLVES: usize = 100;

declare_params! {
    /// FSASL parameters (Du & Shen 2015; the code's defaults and the harness's grids).
    #[derive(Debug, Clone)]
    pub struct Fsasl {
        /// Number of clusters c.
        pub n_clusters: usize = int("n_clusters", 1, 3, "columns c of F and W (the class count)"),
        /// Lasso weight as a ratio of its per-sample maximum.
        pub alpha: f64 = float("alpha", 0.0, 1.0, 0.01, "global structure: each sample's lasso weight rho_i = alpha x max_j |z_j^T z_i| (the code's SLEPreg with rFlag = 1; harness grid {0.001, 0.005, 0.01, 0.05, 0.1})"),
        /// Weight of the local structure.
        pub beta: f64 = positive("beta", 1.0, "weight of the adaptive-neighbour (local) term (the code's lambda2; harness grid 10^[-5:5])"),
        /// l2,1 weight.
        pub gamma: f64 = positive("gamma", 1.0, "l2,1 weight on W (the code's lambda3; harness grid {0.1, 0.3, 0.5, 0.7, 0.9})"),
        /// Neighbours.
        pub k: usize = int("k", 1, 5, "neighbours of the local structure (the code's Localk: 5)"),
        /// Outer iterations.
        pub max_iter: usize = int("max_iter", 1, 50, "outer iterations; the code has no other stopping rule (harness: 50)"),
        /// Reweighting steps per W step.
        pub inner_iter: usize = int("inner_iter", 1, 10, "l2,1 reweighting steps per W step (the code's LS21: 10)"),
        // read by the evaluation, not the fit
        _ = super::common::n_selected(),
    }
}

/// What one S step did: samples solved from the previous solution, samples solved by the LARS
/// path, the work done, and the worst relative KKT violation.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GlobalStats {
    /// Samples solved by the active-set descent from the previous S step's solution.
    pub warm: usize,
    /// Samples solved by the LARS-lasso path from `rho_max`.
    pub paths: usize,
    /// LARS steps over all paths plus the support solves of the active-set descents.
    pub steps: usize,
    /// The worst KKT violation over the samples, relative to each sample's `rho_max`.
    pub kkt: f64,
}

/// The S-step: the columns `s_i` (as sparse `(j, s_ji)` lists, ascending j) of the per-sample
/// lassos on the rows of Z, each solved exactly (module doc, step 1). `warm`: the previous S
/// step's columns, whose supports and signs are tried first.
pub fn global_step(z: ArrayView2<f64>, alpha: f64, warm: Option<&[Vec<(usize, f64)>]>) -> (Vec<Vec<(usize, f64)>>, GlobalStats) {
    let g = z.dot(&z.t());
    let n = z.nrows();
    let out: Vec<(Vec<(usize, f64)>, f64, bool, usize)> = (0..n)
        .into_par_iter()
        .map(|i| {
            let b = g.row(i);
            let bmax = b.iter().enumerate().filter(|&(j, _)| j != i).fold(0.0f64, |a, (_, v)| a.max(v.abs()));
            if bmax == 0.0 {
                return (Vec::new(), 0.0, false, 0);
            }
            let rho = alpha * bmax;
            // the relative KKT violation at s (G s over the support)
            let kkt = |s: &Array1<f64>| {
                let mut q = Array1::<f64>::zeros(n);
                for (j, &v) in s.iter().enumerate() {
                    if v != 0.0 {
                        q.scaled_add(v, &g.row(j));
                    }
                }
                lasso_kkt(q.view(), b, rho, s.view(), Some(i)) / bmax
            };
            let sparse = |s: &Array1<f64>| s.iter().enumerate().filter(|(_, &v)| v != 0.0).map(|(j, &v)| (j, v)).collect::<Vec<_>>();
            let prev = warm.map(|w| &w[i][..]).unwrap_or(&[]);
            if !prev.is_empty() {
                if let Some(fit) = lasso_active_set(g.view(), b, Some(i), rho, prev, WARM_KKT * bmax, MAX_SOLVES) {
                    let v = kkt(&fit.coef);
                    if v <= WARM_KKT {
                        return (sparse(&fit.coef), v, true, fit.solves);
                    }
                }
            }
            let fit = lasso_path_gram(g.view(), b, Some(i), rho);
            let mut best = (kkt(&fit.coef), fit.coef);
            // the path's end re-solved on its support: the rounding of the path's updates removed
            let support: Vec<usize> = (0..n).filter(|&j| best.1[j] != 0.0).collect();
            let signs: Vec<f64> = support.iter().map(|&j| best.1[j].signum()).collect();
            if let Some(s) = lasso_on_support(g.view(), b, rho, &support, &signs) {
                let v = kkt(&s);
                if v <= best.0 {
                    best = (v, s);
                }
            }
            (sparse(&best.1), best.0, false, fit.steps)
        })
        .collect();
    let mut stats = GlobalStats::default();
    for o in &out {
        stats.kkt = stats.kkt.max(o.1);
        if o.2 {
            stats.warm += 1;
        } else {
            stats.paths += 1;
        }
        stats.steps += o.3;
    }
    (out.into_iter().map(|o| o.0).collect(), stats)
}

/// `(I - S)(I - S)^T` (dense N x N) from the sparse columns of S.
pub fn global_matrix(cols: &[Vec<(usize, f64)>]) -> Array2<f64> {
    let n = cols.len();
    let mut m = Array2::<f64>::zeros((n, n));
    for (i, col) in cols.iter().enumerate() {
        let mut b: Vec<(usize, f64)> = vec![(i, 1.0)];
        b.extend(col.iter().map(|&(j, v)| (j, -v)));
        for &(p, u) in &b {
            for &(r, v) in &b {
                m[[p, r]] += u * v;
            }
        }
    }
    m
}

/// The adaptive-neighbour scale `mu = mean_i (k d_{i,k+1} - sum_{h<=k} d_ih) / 2` of X.
pub fn neighbour_scale(x: ArrayView2<f64>, k: usize) -> Result<f64> {
    let g = knn(x, k + 1).map_err(numerics(NAME))?;
    let n = x.nrows();
    let total: f64 = (0..n)
        .map(|i| {
            let d = g.sq_dists.row(i);
            0.5 * (k as f64 * d[k] - d.iter().take(k).sum::<f64>())
        })
        .sum();
    Ok(total / n as f64)
}

/// The P-step on Z: rows `(neighbours, p_i)` and the symmetrised graph `A = (P + P^T)/2`.
pub fn local_step(z: ArrayView2<f64>, k: usize, mu: f64) -> Result<(Vec<(Vec<usize>, Vec<f64>)>, SparseGraph)> {
    let g = knn(z, k).map_err(numerics(NAME))?;
    let rows: Vec<(Vec<usize>, Vec<f64>)> = (0..z.nrows())
        .map(|i| {
            let mut v: Vec<f64> = g.sq_dists.row(i).iter().map(|&d| -d / (2.0 * mu)).collect();
            project_simplex(&mut v, 1.0);
            (g.indices.row(i).to_vec(), v)
        })
        .collect();
    let edges: Vec<(usize, usize, f64)> = rows
        .iter()
        .enumerate()
        .flat_map(|(i, (nb, p))| nb.iter().zip(p).filter(|(_, &v)| v > 0.0).map(move |(&j, &v)| (i.min(j), i.max(j), 0.5 * v)))
        .collect();
    Ok((rows.clone(), SparseGraph::from_edges(z.nrows(), &edges)))
}

/// `||X W - F||^2 + gamma ||W||_{2,1}`.
pub fn w_objective(x: ArrayView2<f64>, w: ArrayView2<f64>, f: ArrayView2<f64>, gamma: f64) -> f64 {
    (&x.dot(&w) - &f).mapv(|v| v * v).sum() + gamma * row_norms(w).sum()
}

/// What [`Fsasl::solve`] returns.
#[derive(Debug, Clone)]
pub struct FsaslSolution {
    /// W (D x c).
    pub w: Array2<f64>,
    /// F of the last iteration.
    pub f: Array2<f64>,
    /// The last local graph A.
    pub graph: SparseGraph,
    /// The code's objective after each iteration.
    pub history: Vec<f64>,
    /// `||XW - F||^2 + gamma ||W||_{2,1}` after each reweighting step, per iteration.
    pub w_histories: Vec<Vec<f64>>,
    /// Worst relative lasso KKT violation over all S steps.
    pub lasso_kkt: f64,
    /// mu.
    pub mu: f64,
    /// Iterations run.
    pub iterations: usize,
}

impl Fsasl {
    /// Runs the scheme of the module doc.
    pub fn solve(&self, x: ArrayView2<f64>) -> Result<FsaslSolution> {
        let (n, d) = x.dim();
        check_clusters(NAME, n, self.n_clusters, self.k + 1)?;
        check_dense_size(NAME, n)?;
        let c = self.n_clusters;
        let mu = neighbour_scale(x, self.k)?;
        let delta0 = mean_pairwise_distance(x);
        if !(mu > 0.0 && mu.is_finite() && delta0 > 0.0) {
            return Err(MethodError::Degenerate {
                method: NAME,
                reason: format!("adaptive-neighbour scale mu = {mu:e}, mean distance {delta0:e}: constant or duplicate samples"),
            });
        }
        let gram = (n > d).then(|| x.t().dot(&x));
        let mut graph = heat_knn_graph(NAME, x, self.k, delta0)?;
        let mut q = Array1::<f64>::ones(d);
        let mut w = Array2::<f64>::zeros((d, c));
        let mut f = Array2::<f64>::zeros((n, c));
        let (mut history, mut w_histories, mut lasso_kkt) = (Vec::new(), Vec::new(), 0.0f64);
        let mut s_cols: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
        let mut a_sq = graph.edges().iter().map(|e| 2.0 * e.2 * e.2).sum::<f64>();
        let mut have_s = false;
        for t in 1..=self.max_iter {
            let use_global = self.alpha > 0.0 && (self.max_iter < 5 || t > 1);
            let z = if t == 1 { x.to_owned() } else { x.dot(&w) };
            if use_global {
                let (cols, st) = global_step(z.view(), self.alpha, have_s.then_some(&s_cols[..]));
                lasso_kkt = lasso_kkt.max(st.kkt);
                s_cols = cols;
                have_s = true;
            }
            if t > 1 {
                let (_, g) = local_step(z.view(), self.k, mu)?;
                graph = g;
                a_sq = graph.edges().iter().map(|e| 2.0 * e.2 * e.2).sum::<f64>();
            }
            let mut l = graph.dense_laplacian() * self.beta;
            if use_global {
                l += &global_matrix(&s_cols);
            }
            f = eigh_bottom(l.view(), c).map_err(numerical(NAME))?.vectors;
            let mut wh = Vec::with_capacity(self.inner_iter);
            for _ in 0..self.inner_iter {
                let qq = q.mapv(|v| self.gamma * v);
                w = weighted_ridge(NAME, x, None, qq.view(), f.view(), gram.as_ref())?;
                q = l21_weights(w.view(), L21_FLOOR);
                wh.push(w_objective(x, w.view(), f.view(), self.gamma));
            }
            w_histories.push(wh);
            let zw = x.dot(&w);
            let lz = l.dot(&zw);
            let s_l1: f64 = if use_global { s_cols.iter().flatten().map(|e| e.1.abs()).sum() } else { 0.0 };
            let obj = (&zw * &lz).sum() + self.alpha * s_l1 + self.beta * mu * a_sq + self.gamma * row_norms(w.view()).sum();
            if !obj.is_finite() {
                return Err(MethodError::Degenerate { method: NAME, reason: format!("the objective is not finite at iteration {t}") });
            }
            history.push(obj);
            structdr_numerics::progress::report(history.len(), obj);
        }
        Ok(FsaslSolution { w, f, graph, history, w_histories, lasso_kkt, mu, iterations: self.max_iter })
    }
}

impl Embedder for Fsasl {
    fn name(&self) -> &'static str {
        NAME
    }
    fn info(&self) -> MethodInfo {
        info()
    }
    fn params(&self) -> ParamMap {
        self.to_params()
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        let x = input.x;
        check_input(NAME, &x, 2)?;
        let sol = self.solve(x)?;
        let scores = row_norms(sol.w.view());
        if scores.iter().all(|&v| v == 0.0) {
            return Err(MethodError::Degenerate { method: NAME, reason: "every feature weight is 0".into() });
        }
        let ranking = rank_by_weight(scores.view());
        let mut fitted = Fitted::new(
            Output::FeatureScores(FeatureScores { weights: scores, ranking }),
            Trace::iterative(sol.history, sol.iterations, StopReason::FixedSchedule { iterations: sol.iterations }, "the code's fixed iteration count"),
        );
        fitted.graph = Some(Graph { n_vertices: x.nrows(), edges: sol.graph.edges() });
        fitted.notes = vec![format!("mu = {:.6e}; worst lasso KKT violation (relative) {:.3e}", sol.mu, sol.lasso_kkt)];
        Ok(fitted)
    }
}

pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: NAME,
        summary: "FSASL feature selection: alternates a per-sample lasso reconstruction S (global structure), adaptive neighbours P on the simplex (local structure) in the projected space, F = bottom eigenvectors of (I - S)(I - S)^T + beta L_P and the l2,1-regularised regression W of F on X; scores ||w_i||_2.",
        reference: "Du & Shen, Unsupervised Feature Selection with Adaptive Structure Learning, KDD 2015; the authors' code (FSASL.m, LS21 and SLEP options)",
        // 3: LARS's ties to enter within 1e-10 relative go to the lowest index (lars::TIE_RTOL),
        // in the per-sample lasso's path
        version: 3,
        output: OutputKind::FeatureScores,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: false,
        params: Fsasl::schema(()),
        build: |p| declare::build::<Fsasl>(NAME, (), p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::common::lasso_kkt;
    use rand::{Rng, SeedableRng};

    fn clusters(n: usize, noise: usize, seed: u64) -> Array2<f64> {
        crate::testing::three_clusters(n, noise, seed).0
    }

    /// Every column's KKT violation, recomputed from scratch, relative to the sample's rho_max.
    fn worst_kkt(z: &Array2<f64>, cols: &[Vec<(usize, f64)>], alpha: f64) -> f64 {
        let g = z.dot(&z.t());
        let n = z.nrows();
        let mut worst = 0.0f64;
        for (i, col) in cols.iter().enumerate() {
            let mut s = Array1::<f64>::zeros(n);
            for &(j, v) in col {
                assert_ne!(j, i);
                s[j] = v;
            }
            let b = g.row(i);
            let bmax = b.iter().enumerate().filter(|&(j, _)| j != i).fold(0.0f64, |a, (_, v)| a.max(v.abs()));
            worst = worst.max(lasso_kkt(g.dot(&s).view(), b, alpha * bmax, s.view(), Some(i)) / bmax);
        }
        worst
    }

    #[test]
    fn s_columns_meet_the_lasso_kkt_conditions() {
        // rank-4 Gram matrices (Z with 4 columns, as Z = XW has c), where coordinate descent
        // stalls near 1e-4: the path and the active-set descent end at the exact solution
        let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
        let z = Array2::from_shape_fn((60, 4), |_| r.gen_range(-1.0..1.0));
        let z2 = &z + &Array2::from_shape_fn((60, 4), |_| r.gen_range(-0.05..0.05));
        for alpha in [0.001, 0.01, 0.05, 0.5] {
            let (cols, st) = global_step(z.view(), alpha, None);
            assert_eq!((st.warm, st.paths), (0, 60));
            let worst = worst_kkt(&z, &cols, alpha);
            assert!(worst <= 1e-9 && st.kkt <= 1e-9, "alpha {alpha}: {worst:e} (reported {:e})", st.kkt);
            // from the solution on the perturbed Z: the descent finishes most samples, and every
            // sample's solution equals the one of the path from rho_max
            let (cols2, _) = global_step(z2.view(), alpha, None);
            let (warm, st2) = global_step(z.view(), alpha, Some(&cols2));
            assert!(st2.warm > 0, "alpha {alpha}: {st2:?}");
            assert!(worst_kkt(&z, &warm, alpha) <= 1e-9, "alpha {alpha}: {st2:?}");
            for (a, b) in cols.iter().zip(&warm) {
                assert_eq!(a.iter().map(|e| e.0).collect::<Vec<_>>(), b.iter().map(|e| e.0).collect::<Vec<_>>(), "alpha {alpha}");
                for (p, q) in a.iter().zip(b) {
                    assert!((p.1 - q.1).abs() <= 1e-9 * p.1.abs().max(1.0), "alpha {alpha}: {p:?} vs {q:?}");
                }
            }
        }
    }

    #[test]
    fn p_rows_meet_the_simplex_kkt_conditions() {
        let x = clusters(30, 3, 2);
        let mu = neighbour_scale(x.view(), 5).unwrap();
        let (rows, _) = local_step(x.view(), 5, mu).unwrap();
        let g = knn(x.view(), 5).unwrap();
        for (i, (nb, p)) in rows.iter().enumerate() {
            assert_eq!(nb, &g.indices.row(i).to_vec());
            assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12 && p.iter().all(|&v| v >= 0.0));
            // d_j + 2 mu p_j is constant on the support and no smaller off it
            let d = g.sq_dists.row(i);
            let lvl = p.iter().zip(d).find(|(&v, _)| v > 0.0).map(|(&v, &dj)| dj + 2.0 * mu * v).unwrap();
            for (&v, &dj) in p.iter().zip(d) {
                if v > 0.0 {
                    assert!((dj + 2.0 * mu * v - lvl).abs() < 1e-10 * lvl.abs().max(1.0));
                } else {
                    assert!(dj >= lvl - 1e-10 * lvl.abs().max(1.0));
                }
            }
        }
    }

    #[test]
    fn blocks_descend_and_informative_features_rank_first() {
        let x = clusters(45, 9, 3);
        let m = Fsasl { max_iter: 8, inner_iter: 15, ..Fsasl::default() };
        let sol = m.solve(x.view()).unwrap();
        assert!(sol.lasso_kkt <= 1e-9, "{:e}", sol.lasso_kkt);
        for (t, wh) in sol.w_histories.iter().enumerate() {
            for s in 1..wh.len() {
                assert!(wh[s] <= wh[s - 1] * (1.0 + 1e-10), "iteration {t}, reweighting step {s}: {} > {}", wh[s], wh[s - 1]);
            }
        }
        let s = row_norms(sol.w.view());
        let mut top = rank_by_weight(s.view())[..3].to_vec();
        top.sort();
        assert_eq!(top, vec![0, 1, 2], "scores {s}");
    }

    #[test]
    fn w_step_converges_to_the_group_lasso_kkt_point() {
        // the reweighting iterated to its fixed point solves min ||XW - F||^2 + gamma ||W||_{2,1}
        let x = clusters(40, 5, 4);
        let m = Fsasl { max_iter: 3, inner_iter: 3000, gamma: 0.5, ..Fsasl::default() };
        let sol = m.solve(x.view()).unwrap();
        let g = x.t().dot(&(&x.dot(&sol.w) - &sol.f)) * 2.0;
        let nr = row_norms(sol.w.view());
        let wmax = nr.iter().fold(0.0f64, |a, &v| a.max(v));
        for i in 0..x.ncols() {
            let gi = g.row(i);
            if nr[i] > 1e-6 * wmax {
                let err = gi.iter().zip(sol.w.row(i)).map(|(a, b)| (a + m.gamma * b / nr[i]).powi(2)).sum::<f64>().sqrt();
                assert!(err < 1e-6, "row {i}: {err:e}");
            } else {
                assert!(gi.dot(&gi).sqrt() <= m.gamma * (1.0 + 1e-6));
            }
        }
    }

    #[test]
    fn fit_contract_bad_input_and_thread_invariance() {
        let x = clusters(30, 5, 5);
        let m = Fsasl { max_iter: 6, ..Fsasl::default() };
        let pool = |t: usize| rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap();
        let one = pool(1).install(|| m.fit(x.view(), 0).unwrap());
        let two = pool(2).install(|| m.fit(x.view(), 0).unwrap());
        assert_eq!(one.output, two.output);
        assert_eq!(one.trace.history, two.trace.history);
        let s = one.feature_scores().unwrap();
        let mut r = s.ranking.clone();
        r.sort();
        assert_eq!(r, (0..8).collect::<Vec<_>>());
        assert!(matches!(Fsasl { n_clusters: 30, ..Fsasl::default() }.fit(x.view(), 0), Err(MethodError::Input { .. })));
        let mut bad = x.clone();
        bad[[0, 0]] = f64::NAN;
        assert!(matches!(m.fit(bad.view(), 0), Err(MethodError::Input { .. })));
        let constant = Array2::from_elem((20, 4), 1.0);
        assert!(m.fit(constant.view(), 0).is_err());
        let mut xc = x.clone();
        xc.column_mut(7).fill(2.0);
        let f = m.fit(xc.view(), 0).unwrap();
        assert_ne!(f.feature_scores().unwrap().ranking[0], 7);
    }
}
