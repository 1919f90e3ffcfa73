//! RUFS: robust unsupervised feature selection (Qian & Zhai, IJCAI 2013).
//!
//! With `X` (N x D), cluster indicators `G` (N x c), cluster centres `F` (c x D) and feature
//! weights `W` (D x c):
//!
//! `min J = ||X - G F||_{2,1} + nu Tr(G^T L G) + alpha ||X W - G||_{2,1} + beta ||W||_{2,1}
//!          + (zeta / 4) ||G^T G - I||_F^2,   G >= 0, F >= 0`,
//!
//! `||A||_{2,1} = sum_i ||a_i||` over rows (samples for the two losses, features for W): robust
//! NMF-style clustering and robust regression with an l2,1 regulariser. `G^T G = I` is the
//! penalty with the authors' zeta = 1e7; L is the Laplacian of the heat-kernel K-NN graph
//! ([`super::common::heat_knn_graph`]).
//!
//! ## Updates (iteratively reweighted; each a majorise-minimise step, so J never increases)
//! With `r1_i = 1 / (2 ||x_i - g_i F||)`, `r2_i = 1 / (2 ||x_i^T W - g_i||)`,
//! `d_f = 1 / (2 ||w_f||)` (floored at 1e-16) from the current iterate, each l2,1 norm is
//! majorised by its quadratic (Nie et al. 2010), and one iteration runs
//! 1. W: `W = (X^T R2 X + (beta/alpha) Dw)^-1 X^T R2 G` (exact minimiser of the surrogate,
//!    [`super::common::weighted_ridge`]);
//! 2. G: multiplicative step on the surrogate's gradient split
//!    `G <- G o [(R1 X F^T)^+ + nu A G + alpha (R2 X W)^+ + (zeta/2) G]
//!             / [R1 G F F^T + nu D_A G + alpha R2 G + (zeta/2) G G^T G + (R1 X F^T)^- + alpha (R2 X W)^-]`,
//!    accepted when J does not increase, else halved towards the current G (at most 30 times;
//!    the quartic penalty has no simple auxiliary function for this ratio);
//! 3. F: `F <- F o (G^T R1 X)^+ / (G^T R1 G F + (G^T R1 X)^-)`, the auxiliary-function update of
//!    the weighted least squares with mixed-sign data (monotone).
//!
//! The authors' code solves the three blocks by projected L-BFGS instead and adds
//! `1e-4 sum_j ||F_:j|| + 0.1 sum G` to J (not in the paper's problem; left out here).
//! Initialisation as the code: G from k-means (as NDFS, `Y (Y^T Y)^-1/2 + 0.02`),
//! `F = max((G^T G)^-1 G^T X, 0) + 0.2 mean(positive entries)`,
//! `W = (X^T X + (beta/alpha) I)^-1 X^T G`. Stop when `|J_t - J_{t-1}| <= tol |J_t|` or after
//! `max_iter` iterations (the FSASL harness: 20). Feature scores `||w_i||_2`.

use super::common::{
    check_clusters, heat_knn_graph, kmeans_indicator, mean_pairwise_distance, orthogonality_gap, rank_by_weight, row_norms, weighted_ridge, SparseGraph,
};
use crate::api::declare::{self, declare_params, Declared};
use crate::api::info::{float, int, positive, MethodInfo};
use crate::api::{check_input, Embedder, FeatureScores, FitInput, Fitted, MethodError, Output, OutputKind, ParamMap, Result, StopReason, Trace};
use ndarray::{Array1, Array2, ArrayView2, Axis, Zip};

const NAME: &str = "rufs";
const FLOOR: f64 = 1e-16;

declare_params! {
    /// RUFS parameters (Qian & Zhai 2013; FSASL harness grids).
    #[derive(Debug, Clone)]
    pub struct Rufs {
        /// Number of clusters c.
        pub n_clusters: usize = int("n_clusters", 1, 3, "number of clusters c (the class count)"),
        /// `nu > 0`: graph regularisation.
        pub nu: f64 = positive("nu", 1.0, "weight of Tr(G^T L G) (FSASL harness grid 10^[-5:5])"),
        /// `alpha > 0`: robust regression.
        pub alpha: f64 = positive("alpha", 1.0, "weight of ||XW - G||_{2,1} (grid 10^[-5:5])"),
        /// `beta > 0`: row sparsity of W.
        pub beta: f64 = positive("beta", 1.0, "weight of ||W||_{2,1} (grid 10^[-5:5])"),
        /// Orthogonality penalty.
        pub zeta: f64 = positive("zeta", 1e7, "penalty (zeta/4)||G^T G - I||^2 standing for G^T G = I (authors' code 1e7)"),
        /// Neighbours of the graph.
        pub k: usize = int("k", 1, 5, "neighbours of the heat-kernel K-NN graph"),
        /// Heat-kernel width relative to the mean pairwise distance.
        pub width: f64 = positive("width", 1.0, "heat-kernel width sigma = width x delta_0 (mean pairwise distance)"),
        /// Iteration cap.
        pub max_iter: usize = int("max_iter", 1, 20, "iteration cap (FSASL harness 20)"),
        /// Relative-change tolerance.
        pub tol: f64 = float("tol", 0.0, 1.0, 1e-4, "stop when |J_t - J_{t-1}| <= tol |J_t|"),
        // read by the evaluation, not the fit
        _ = super::common::n_selected(),
    }
}

/// What [`Rufs::solve_from`] returns.
#[derive(Debug, Clone)]
pub struct RufsSolution {
    /// W (D x c).
    pub w: Array2<f64>,
    /// G (N x c).
    pub g: Array2<f64>,
    /// F (c x D).
    pub f: Array2<f64>,
    /// J at the start.
    pub initial_objective: f64,
    /// J after each iteration.
    pub history: Vec<f64>,
    /// Iterations.
    pub iterations: usize,
    /// Whether the relative change reached tol.
    pub converged: bool,
    /// Last relative change.
    pub residual: f64,
    /// G steps that needed halving.
    pub g_backtracks: usize,
}

fn inv_half_row_norms(a: &Array2<f64>) -> Array1<f64> {
    row_norms(a.view()).mapv(|v| 0.5 / v.max(FLOOR))
}

impl Rufs {
    /// `J(G, F, W)`.
    pub fn objective(&self, x: ArrayView2<f64>, graph: &SparseGraph, g: &Array2<f64>, f: &Array2<f64>, w: &Array2<f64>) -> f64 {
        let rec = row_norms((&x - &g.dot(f)).view()).sum();
        let reg = row_norms((&x.dot(w) - g).view()).sum();
        rec + self.nu * graph.quadratic_form(g.view())
            + self.alpha * reg
            + self.beta * row_norms(w.view()).sum()
            + 0.25 * self.zeta * orthogonality_gap(g.view())
    }

    /// Runs the scheme from `g0` on the given graph.
    pub fn solve_from(&self, x: ArrayView2<f64>, graph: &SparseGraph, g0: Array2<f64>) -> Result<RufsSolution> {
        let (n, d) = x.dim();
        let c = g0.ncols();
        let mut g = g0;
        // F = max((G^T G)^-1 G^T X, 0) + 0.2 mean of its positive entries
        let gtg = g.t().dot(&g);
        let f_ls = structdr_linalg::Cholesky::factor(gtg.view()).and_then(|ch| ch.solve(g.t().dot(&x).view())).map_err(crate::api::numerical(NAME))?;
        let pos: Vec<f64> = f_ls.iter().copied().filter(|&v| v > 0.0).collect();
        let shift = if pos.is_empty() { 1.0 } else { 0.2 * pos.iter().sum::<f64>() / pos.len() as f64 };
        let mut f = f_ls.mapv(|v| v.max(0.0) + shift);
        let ba = self.beta / self.alpha;
        let mut w = weighted_ridge(NAME, x, None, Array1::from_elem(d, ba).view(), g.view(), None)?;
        let initial_objective = self.objective(x, graph, &g, &f, &w);
        let mut prev = initial_objective;
        let (mut history, mut iterations, mut converged, mut residual, mut backtracks) = (Vec::new(), 0, false, f64::NAN, 0);
        for _ in 0..self.max_iter {
            iterations += 1;
            // 1: W
            let r2 = inv_half_row_norms(&(&x.dot(&w) - &g));
            let dw = inv_half_row_norms(&w).mapv(|v| ba * v);
            w = weighted_ridge(NAME, x, Some(r2.view()), dw.view(), g.view(), None)?;
            // 2: G
            let j_now = self.objective(x, graph, &g, &f, &w);
            let r1 = inv_half_row_norms(&(&x - &g.dot(&f)));
            let r2 = inv_half_row_norms(&(&x.dot(&w) - &g));
            let r1c = r1.view().insert_axis(Axis(1));
            let r2c = r2.view().insert_axis(Axis(1));
            let xf = &x.dot(&f.t()) * &r1c; // R1 X F^T
            let xw = &x.dot(&w) * &r2c; // R2 X W
            let half_z = 0.5 * self.zeta;
            let mut num = graph.adjacency_mul(g.view()) * self.nu;
            Zip::from(&mut num).and(&xf).and(&xw).and(&g).for_each(|o, &a, &b, &gv| *o += a.max(0.0) + self.alpha * b.max(0.0) + half_z * gv);
            let mut den = &(&g.dot(&f.dot(&f.t())) * &r1c) + &(&g * &r2c * self.alpha);
            den.scaled_add(half_z, &g.dot(&g.t().dot(&g)));
            let deg = Array1::from(graph.deg.clone());
            den += &(&g * &deg.view().insert_axis(Axis(1)) * self.nu);
            Zip::from(&mut den).and(&xf).and(&xw).for_each(|o, &a, &b| *o += (-a).max(0.0) + self.alpha * (-b).max(0.0));
            let mut cand = g.clone();
            Zip::from(&mut cand).and(&num).and(&den).for_each(|gv, &a, &b| {
                if b > 0.0 {
                    *gv *= a / b;
                }
            });
            let mut t = 1.0;
            for _ in 0..30 {
                let trial = if t == 1.0 { cand.clone() } else { &g + &((&cand - &g) * t) };
                if self.objective(x, graph, &trial, &f, &w) <= j_now {
                    g = trial;
                    break;
                }
                backtracks += 1;
                t *= 0.5;
            }
            // 3: F
            let r1 = inv_half_row_norms(&(&x - &g.dot(&f)));
            let gr = &g * &r1.view().insert_axis(Axis(1));
            let b = gr.t().dot(&x); // G^T R1 X
            let af = gr.t().dot(&g).dot(&f);
            Zip::from(&mut f).and(&b).and(&af).for_each(|fv, &bv, &a| {
                let dn = a + (-bv).max(0.0);
                if dn > 0.0 {
                    *fv *= bv.max(0.0) / dn;
                }
            });
            let j = self.objective(x, graph, &g, &f, &w);
            if !j.is_finite() {
                return Err(MethodError::Degenerate { method: NAME, reason: format!("the objective is not finite at iteration {iterations}") });
            }
            history.push(j);
            structdr_numerics::progress::report(history.len(), j);
            residual = (prev - j).abs() / j.abs().max(f64::MIN_POSITIVE);
            prev = j;
            if residual <= self.tol {
                converged = true;
                break;
            }
        }
        let _ = (n, c);
        Ok(RufsSolution { w, g, f, initial_objective, history, iterations, converged, residual, g_backtracks: backtracks })
    }
}

impl Embedder for Rufs {
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
        check_clusters(NAME, x.nrows(), self.n_clusters, self.k)?;
        let delta0 = mean_pairwise_distance(x);
        let sigma = self.width * delta0;
        if !(sigma > 0.0 && sigma.is_finite()) {
            return Err(MethodError::Degenerate { method: NAME, reason: format!("heat-kernel width sigma = {sigma:e}: constant data or extreme scale") });
        }
        let graph = heat_knn_graph(NAME, x, self.k, sigma)?;
        let g0 = kmeans_indicator(NAME, x, self.n_clusters, input.seed, 10)?;
        let sol = self.solve_from(x, &graph, g0)?;
        let scores = row_norms(sol.w.view());
        if scores.iter().all(|&v| v == 0.0) {
            return Err(MethodError::Degenerate { method: NAME, reason: "every feature weight is 0 (constant features?)".into() });
        }
        let ranking = rank_by_weight(scores.view());
        let stop = StopReason::classify(sol.converged, sol.iterations, self.max_iter, Some(sol.residual), Some(self.tol), "");
        let notes = vec![format!("sigma = {sigma:.6e}; initial objective {:.6e}; {} G steps halved", sol.initial_objective, sol.g_backtracks)];
        let mut fitted =
            Fitted::new(Output::FeatureScores(FeatureScores { weights: scores, ranking }), Trace::iterative(sol.history, sol.iterations, stop, ""));
        fitted.graph = Some(graph.to_graph());
        fitted.notes = notes;
        Ok(fitted)
    }
}

pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: NAME,
        summary: "RUFS feature selection: min ||X - GF||_{2,1} + nu Tr(G^T L G) + alpha ||XW - G||_{2,1} + beta ||W||_{2,1} + (zeta/4)||G^T G - I||^2, G, F >= 0, by iteratively reweighted (majorise-minimise) block updates; feature scores ||w_i||_2.",
        reference: "Qian & Zhai, Robust Unsupervised Feature Selection, IJCAI 2013; the authors' code in the FSASL harness (fs_unsup_rufs.m)",
        version: 1,
        output: OutputKind::FeatureScores,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: true,
        params: Rufs::schema(()),
        build: |p| declare::build::<Rufs>(NAME, (), p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::common::indicator_init;

    fn clusters(n: usize, noise: usize, seed: u64) -> Array2<f64> {
        crate::testing::three_clusters(n, noise, seed).0
    }

    #[test]
    fn objective_is_monotone_and_informative_features_rank_first() {
        let x = clusters(45, 9, 6);
        let graph = heat_knn_graph(NAME, x.view(), 5, mean_pairwise_distance(x.view())).unwrap();
        let lab: Vec<usize> = (0..45).map(|i| if i % 7 == 0 { (i + 1) % 3 } else { i % 3 }).collect();
        for (nu, alpha, beta) in [(1.0, 1.0, 1.0), (10.0, 0.1, 1.0), (0.1, 10.0, 10.0)] {
            let m = Rufs { nu, alpha, beta, max_iter: 60, tol: 0.0, ..Rufs::default() };
            let sol = m.solve_from(x.view(), &graph, indicator_init(&lab, 3)).unwrap();
            let mut prev = sol.initial_objective;
            for (t, &j) in sol.history.iter().enumerate() {
                assert!(j <= prev * (1.0 + 1e-12), "({nu}, {alpha}, {beta}) iteration {t}: {j} > {prev}");
                prev = j;
            }
            assert!(sol.g.iter().all(|&v| v >= 0.0) && sol.f.iter().all(|&v| v >= 0.0));
            let s = row_norms(sol.w.view());
            let mut top = rank_by_weight(s.view())[..3].to_vec();
            top.sort();
            assert_eq!(top, vec![0, 1, 2], "({nu}, {alpha}, {beta}): {s}");
        }
    }

    #[test]
    fn fit_contract_and_bad_input() {
        let x = clusters(30, 5, 3);
        let m = Rufs::default();
        let pool = |t: usize| rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap();
        let one = pool(1).install(|| m.fit(x.view(), 4).unwrap());
        let two = pool(2).install(|| m.fit(x.view(), 4).unwrap());
        assert_eq!(one.output, two.output);
        let mut r = one.feature_scores().unwrap().ranking.clone();
        r.sort();
        assert_eq!(r, (0..8).collect::<Vec<_>>());
        assert!(matches!(Rufs { n_clusters: 31, ..Rufs::default() }.fit(x.view(), 0), Err(MethodError::Input { .. })));
        let mut bad = x.clone();
        bad[[1, 1]] = f64::NAN;
        assert!(matches!(m.fit(bad.view(), 0), Err(MethodError::Input { .. })));
    }
}
