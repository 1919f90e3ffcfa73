//! NDFS: unsupervised feature selection using nonnegative spectral analysis (Li, Yang, Liu, Zhou
//! & Lu, AAAI 2012).
//!
//! With `X` (N x D, samples in rows), pseudo labels `F` (N x c) and feature weights `W` (D x c):
//!
//! `min_{F, W} J(F, W) = Tr(F^T L F) + alpha (||X W - F||_F^2 + beta ||W||_{2,1})
//!                       + (gamma / 2) ||F^T F - I||_F^2,   F >= 0`,
//!
//! `L = D_A - A` the Laplacian of the heat-kernel K-NN graph
//! ([`super::common::heat_knn_graph`]: k = 5, `a_ij = exp(-||x_i - x_j||^2 / (2 sigma^2))`,
//! `sigma = width x delta_0`, `delta_0` the mean pairwise distance); the orthogonality
//! constraint `F^T F = I` of the paper is the penalty with a large gamma (paper and FSASL harness:
//! 1e8).
//!
//! ## Updates (paper §"Optimization", scikit-feature's loop order)
//! One iteration, from `D = I` at the start:
//! 1. `W = (X^T X + beta D)^-1 X^T F` (the minimiser of `||XW - F||^2 + beta Tr(W^T D W)`,
//!    [`super::common::weighted_ridge`]; the D x D or N x N system, whichever is smaller);
//! 2. `D_ii = 1 / (2 max(||w_i||, 1e-16))` (the l2,1 reweighting: with D from W the surrogate
//!    majorises `||W||_{2,1}`, so step 1 never increases J);
//! 3. `F_ij <- F_ij (gamma F)_ij / (M F + gamma F F^T F)_ij` with
//!    `M = L + alpha (I - X (X^T X + beta D)^-1 X^T)` (D of step 1). `M F` is formed without M:
//!    `M F = L F + alpha (F - X W)` with W of step 1 (O(nnz(L) c + N D c), where scikit-feature
//!    builds the N x N matrix M and a D x D inverse every iteration);
//! 4. columns of F scaled to unit norm, `F <- F diag(F^T F + 1e-16)^-1/2` (as the reference
//!    code; it keeps `diag(F^T F) = I` exactly and the penalty acts on the off-diagonal).
//!
//! The rule in 3 is the multiplicative update (gradient split `gamma F` / `M F + gamma F F^T F`)
//! of `Tr(F^T M F) + (gamma/2)||F^T F - I||^2`; the recorded objective is `J` above at the iterate
//! `(F, W)` after step 4. (scikit-feature prints `Tr(F^T M F) + gamma/4 ||F^T F - I||_F`, the norm
//! not squared; its docstring has gamma/2 squared, which is what the rule decreases.)
//!
//! Stop when the relative change `|J_t - J_{t-1}| / |J_t| <= tol` or after `max_iter`
//! iterations. Feature scores `||w_i||_2`, ranked descending, ties by index.
//!
//! ## Defaults and grids
//! alpha = beta = 1 (scikit-feature), grids `10^[-3:3]` (the ESL paper's protocol);
//! gamma = 1e8 (paper and FSASL harness; scikit-feature's default is `10e8` = 1e9);
//! k = 5, width = 1 (grid `2^[-3:3]`), n_clusters = the class count (default 3 only so the
//! method runs unconfigured); max_iter = 100 (FSASL harness; scikit-feature 1000),
//! tol = 1e-6. F is initialised as scikit-feature does: k-means labels (best SSE of 10 seeded
//! runs), `Y (Y^T Y)^-1/2 + 0.02`.

use super::common::{
    check_clusters, heat_knn_graph, kmeans_indicator, l21_weights, mean_pairwise_distance, orthogonality_gap, rank_by_weight, row_norms, weighted_ridge,
    SparseGraph,
};
use crate::api::declare::{self, declare_params, fixed, Declared};
use crate::api::info::{float, int, positive, MethodInfo};
use crate::api::{check_input, Embedder, FeatureScores, FitInput, Fitted, MethodError, Output, OutputKind, ParamMap, Result, StopReason, Trace};
use ndarray::{Array1, Array2, ArrayView2, Axis, Zip};

const NAME: &str = "ndfs";
/// Floor of `||w_i||` in the reweighting (scikit-feature's).
pub const L21_FLOOR: f64 = 1e-16;

declare_params! {
    /// NDFS parameters (Li et al. 2012).
    #[derive(Debug, Clone)]
    pub struct Ndfs {
        /// Number of clusters c (columns of F and W): the class count.
        pub n_clusters: usize = int("n_clusters", 1, 3, "number of pseudo-label columns c (the papers use the class count; set it per data set)"),
        /// `alpha > 0`: weight of the regression term.
        pub alpha: f64 = positive("alpha", 1.0, "weight of ||XW - F||^2 + beta ||W||_{2,1} (scikit-feature 1; grid 10^[-3:3])"),
        /// `beta > 0`: row sparsity of W.
        pub beta: f64 = positive("beta", 1.0, "l2,1 weight on W (scikit-feature 1; grid 10^[-3:3])"),
        /// `gamma > 0`: orthogonality penalty.
        pub gamma: f64 = positive("gamma", 1e8, "penalty (gamma/2)||F^T F - I||^2 standing for F^T F = I (paper and FSASL harness 1e8; scikit-feature 1e9)"),
        /// Neighbours of the heat-kernel graph.
        pub k: usize = int("k", 1, 5, "neighbours of the heat-kernel K-NN graph (5 in every paper of Table III)"),
        /// Heat-kernel width relative to the mean pairwise distance.
        pub width: f64 = positive("width", 1.0, "heat-kernel width sigma = width x delta_0, delta_0 the mean pairwise distance; a_ij = exp(-d_ij^2 / (2 sigma^2)) (grid 2^[-3:3])"),
        /// Iteration cap.
        pub max_iter: usize = int("max_iter", 1, 100, "iteration cap (FSASL harness 100; scikit-feature 1000)"),
        /// Relative-change tolerance.
        pub tol: f64 = float("tol", 0.0, 1.0, 1e-6, "stop when |J_t - J_{t-1}| <= tol |J_t|"),
        // read by the evaluation, not the fit
        _ = super::common::n_selected(),
        /// Ridge `epsilon I` added to `X^T X + beta D` (scikit-feature adds 1e-6; 0 here, the paper's).
        pub ridge: f64 = fixed(0.0),
    }
}

/// What [`Ndfs::solve_from`] returns.
#[derive(Debug, Clone)]
pub struct NdfsSolution {
    /// Feature weights W (D x c).
    pub w: Array2<f64>,
    /// Pseudo labels F (N x c), nonnegative, unit columns.
    pub f: Array2<f64>,
    /// The reweighting `D_ii` W was computed with (from the previous W).
    pub d_used: Array1<f64>,
    /// F before the last F step (the F that W was fitted to).
    pub f_used: Array2<f64>,
    /// J at the initial F (with W from the first W step's formula at D = I not yet run: W = 0).
    pub initial_objective: f64,
    /// J after each iteration.
    pub history: Vec<f64>,
    /// Iterations run.
    pub iterations: usize,
    /// Whether the relative change fell to tol.
    pub converged: bool,
    /// The last relative change.
    pub residual: f64,
    /// F entries whose update denominator was not positive (left unchanged).
    pub bad_denominators: usize,
}

/// `J(F, W)` of the module doc.
pub fn objective(x: ArrayView2<f64>, graph: &SparseGraph, f: ArrayView2<f64>, w: ArrayView2<f64>, alpha: f64, beta: f64, gamma: f64) -> f64 {
    let fit = (&x.dot(&w) - &f).mapv(|v| v * v).sum();
    graph.quadratic_form(f) + alpha * (fit + beta * row_norms(w).sum()) + 0.5 * gamma * orthogonality_gap(f)
}

/// The W step: `(X^T X + beta diag(d) + ridge I)^-1 X^T F`.
pub fn w_step(x: ArrayView2<f64>, f: ArrayView2<f64>, d: &Array1<f64>, beta: f64, ridge: f64, gram: Option<&Array2<f64>>) -> Result<Array2<f64>> {
    let q = d.mapv(|v| beta * v + ridge);
    weighted_ridge(NAME, x, None, q.view(), f, gram)
}

impl Ndfs {
    fn validate(&self, n: usize) -> Result<()> {
        check_clusters(NAME, n, self.n_clusters, self.k)
    }

    /// Runs the iterations of the module doc from the pseudo labels `f0` on a given graph (the
    /// parity tests pass scikit-feature's graph and initial F).
    pub fn solve_from(&self, x: ArrayView2<f64>, graph: &SparseGraph, f0: Array2<f64>) -> Result<NdfsSolution> {
        let (n, m) = x.dim();
        let c = f0.ncols();
        if f0.nrows() != n || graph.n() != n {
            return Err(MethodError::Input {
                method: NAME,
                reason: format!("F0 is {} x {c} and the graph has {} vertices for N = {n}", f0.nrows(), graph.n()),
            });
        }
        if f0.iter().any(|&v| !(v >= 0.0 && v.is_finite())) {
            return Err(MethodError::Input { method: NAME, reason: "F0 must be finite and nonnegative".into() });
        }
        let (alpha, beta, gamma) = (self.alpha, self.beta, self.gamma);
        let gram = (n > m).then(|| x.t().dot(&x));
        let mut f = f0;
        let mut d = Array1::<f64>::ones(m);
        let mut w = Array2::<f64>::zeros((m, c));
        let initial_objective = objective(x, graph, f.view(), w.view(), alpha, beta, gamma);
        let mut prev = initial_objective;
        let mut history = Vec::new();
        let (mut converged, mut residual, mut bad) = (false, f64::NAN, 0usize);
        let mut iterations = 0;
        let mut d_used = d.clone();
        let mut f_used = f.clone();
        for _ in 0..self.max_iter {
            iterations += 1;
            // 1-2: W with the current D, then D from W
            w = w_step(x, f.view(), &d, beta, self.ridge, gram.as_ref())?;
            d_used = d;
            d = l21_weights(w.view(), L21_FLOOR);
            f_used = f.clone();
            // 3: multiplicative F step, M F = L F + alpha (F - X W)
            let xw = x.dot(&w);
            let mut den = graph.laplacian_mul(f.view());
            Zip::from(&mut den).and(&f).and(&xw).for_each(|m, &fv, &p| *m += alpha * (fv - p));
            let fff = f.dot(&f.t().dot(&f));
            den.scaled_add(gamma, &fff);
            Zip::from(&mut f).and(&den).for_each(|fv, &dn| {
                let r = gamma * *fv / dn;
                if dn > 0.0 && r.is_finite() {
                    *fv *= r;
                } else {
                    bad += 1;
                }
            });
            // 4: unit columns
            let norms = f.map_axis(Axis(0), |col| 1.0 / (col.dot(&col) + 1e-16).sqrt());
            f *= &norms.view().insert_axis(Axis(0));

            let j = objective(x, graph, f.view(), w.view(), alpha, beta, gamma);
            if !j.is_finite() {
                return Err(MethodError::Degenerate {
                    method: NAME,
                    reason: format!("the objective is not finite at iteration {iterations} (extreme scale of the data?)"),
                });
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
        Ok(NdfsSolution { w, f, d_used, f_used, initial_objective, history, iterations, converged, residual, bad_denominators: bad })
    }
}

impl Embedder for Ndfs {
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
        self.validate(x.nrows())?;
        let delta0 = mean_pairwise_distance(x);
        let sigma = self.width * delta0;
        if !(sigma > 0.0 && sigma.is_finite()) {
            return Err(MethodError::Degenerate {
                method: NAME,
                reason: format!("heat-kernel width sigma = {sigma:e} (mean pairwise distance {delta0:e}): constant data or extreme scale"),
            });
        }
        let graph = heat_knn_graph(NAME, x, self.k, sigma)?;
        let f0 = kmeans_indicator(NAME, x, self.n_clusters, input.seed, 10)?;
        let sol = self.solve_from(x, &graph, f0)?;
        let scores = row_norms(sol.w.view());
        if scores.iter().all(|&v| v == 0.0) {
            return Err(MethodError::Degenerate { method: NAME, reason: "every feature weight is 0 (constant features?)".into() });
        }
        let ranking = rank_by_weight(scores.view());
        let stop = StopReason::classify(sol.converged, sol.iterations, self.max_iter, Some(sol.residual), Some(self.tol), "");
        let mut notes = vec![
            format!("sigma = {sigma:.6e} (width {} x mean pairwise distance {delta0:.6e}); {} graph edges", self.width, graph.edges().len()),
            format!("initial objective {:.6e}; final ||F^T F - I||_F^2 = {:.3e}", sol.initial_objective, orthogonality_gap(sol.f.view())),
        ];
        if sol.bad_denominators > 0 {
            notes.push(format!("{} F updates had a non-positive denominator and were skipped", sol.bad_denominators));
        }
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
        summary: "NDFS feature selection: min over F >= 0 and W of Tr(F^T L F) + alpha (||XW - F||^2 + beta ||W||_{2,1}) + (gamma/2)||F^T F - I||^2 on the heat-kernel K-NN graph; multiplicative F updates, l2,1-reweighted W; feature scores ||w_i||_2.",
        reference: "Li, Yang, Liu, Zhou & Lu, Unsupervised Feature Selection Using Nonnegative Spectral Analysis, AAAI 2012; scikit-feature NDFS",
        version: 1,
        output: OutputKind::FeatureScores,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: true,
        params: Ndfs::schema(()),
        build: |p| declare::build::<Ndfs>(NAME, (), p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::common::indicator_init;

    pub(crate) use crate::testing::three_clusters as clusters;

    fn setup(n: usize, noise: usize) -> (Array2<f64>, SparseGraph, Array2<f64>) {
        let (x, labels) = clusters(n, noise, 4);
        let sigma = mean_pairwise_distance(x.view());
        let g = heat_knn_graph(NAME, x.view(), 5, sigma).unwrap();
        // a perturbed labelling: one in five samples in the wrong cluster
        let lab: Vec<usize> = labels.iter().enumerate().map(|(i, &l)| if i % 5 == 0 { (l + 1) % 3 } else { l }).collect();
        (x, g, indicator_init(&lab, 3))
    }

    #[test]
    fn objective_is_monotone_and_informative_features_rank_first() {
        let (x, g, f0) = setup(60, 12);
        for (alpha, beta, gamma) in [(1.0, 1.0, 1e8), (10.0, 0.1, 1e8), (0.1, 10.0, 1e6)] {
            let nd = Ndfs { alpha, beta, gamma, max_iter: 200, tol: 0.0, ..Ndfs::default() };
            let sol = nd.solve_from(x.view(), &g, f0.clone()).unwrap();
            // the first iterate moves from W = 0; compare from the second on (W has its
            // reweighting from then on)
            for t in 1..sol.history.len() {
                let (a, b) = (sol.history[t - 1], sol.history[t]);
                assert!(b <= a + 1e-9 * a.abs(), "alpha {alpha} beta {beta}: iteration {t}: {b} > {a}");
            }
            assert!(sol.f.iter().all(|&v| v >= 0.0));
            assert_eq!(sol.bad_denominators, 0);
            let s = row_norms(sol.w.view());
            let rank = rank_by_weight(s.view());
            let mut top: Vec<usize> = rank[..3].to_vec();
            top.sort();
            assert_eq!(top, vec![0, 1, 2], "alpha {alpha} beta {beta}: scores {s}");
        }
    }

    #[test]
    fn w_step_is_stationary_and_the_w_subproblem_reaches_its_kkt_point() {
        let (x, g, f0) = setup(45, 20); // N = 45 > D = 23 and the N <= D path below
        let nd = Ndfs { max_iter: 30, tol: 0.0, ..Ndfs::default() };
        let sol = nd.solve_from(x.view(), &g, f0).unwrap();
        // the returned W solves its reweighted least squares: X^T (X W - F) + beta D W = 0
        let resid = &x.dot(&sol.w) - &sol.f_used;
        let grad = x.t().dot(&resid) + &sol.w * &sol.d_used.mapv(|v| nd.beta * v).insert_axis(Axis(1));
        let scale = x.t().dot(&sol.f_used).iter().fold(0.0f64, |a, v| a.max(v.abs()));
        let err = grad.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        assert!(err < 1e-10 * scale, "W-step gradient {err:e} (scale {scale:e})");
        // iterating the reweighting to its fixed point solves min ||XW - F||^2 + beta ||W||_{2,1}:
        // 2 X^T (X W - F) + beta w_i / ||w_i|| = 0 on the nonzero rows
        for xm in [x.clone(), x.slice(ndarray::s![..15, ..]).to_owned()] {
            let f = sol.f.slice(ndarray::s![..xm.nrows(), ..]).to_owned();
            let mut w = Array2::<f64>::zeros((xm.ncols(), 3));
            let mut d = Array1::<f64>::ones(xm.ncols());
            for _ in 0..3000 {
                w = w_step(xm.view(), f.view(), &d, nd.beta, 0.0, None).unwrap();
                d = l21_weights(w.view(), L21_FLOOR);
            }
            // (rows the reweighting drives to 0 converge only linearly: there the subgradient
            // condition ||2 (X^T (X W - F))_i|| <= beta is checked instead)
            let nr = row_norms(w.view());
            let wmax = nr.iter().fold(0.0f64, |a, &v| a.max(v));
            let g = (xm.t().dot(&(&xm.dot(&w) - &f))) * 2.0;
            let mut zero_rows = 0;
            for i in 0..xm.ncols() {
                let gi = g.row(i);
                if nr[i] > 1e-6 * wmax {
                    let err = gi.iter().zip(w.row(i)).map(|(a, b)| (a + nd.beta * b / nr[i]).powi(2)).sum::<f64>().sqrt();
                    assert!(err < 1e-6, "row {i}: KKT residual {err:e} (N = {})", xm.nrows());
                } else {
                    zero_rows += 1;
                    assert!(gi.dot(&gi).sqrt() <= nd.beta * (1.0 + 1e-6), "zero row {i}: subgradient {} > beta", gi.dot(&gi).sqrt());
                }
            }
            assert!(zero_rows < xm.ncols());
        }
    }

    #[test]
    fn fit_contract_bad_input_and_thread_invariance() {
        let (x, _) = clusters(40, 6, 9);
        let nd = Ndfs::default();
        let a = nd.fit(x.view(), 1).unwrap();
        let s = a.feature_scores().unwrap();
        let mut r = s.ranking.clone();
        r.sort();
        assert_eq!(r, (0..9).collect::<Vec<_>>());
        let pool = |t: usize| rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap();
        let one = pool(1).install(|| nd.fit(x.view(), 3).unwrap());
        let two = pool(2).install(|| nd.fit(x.view(), 3).unwrap());
        assert_eq!(one.output, two.output);
        assert_eq!(one.trace.history, two.trace.history);
        // more clusters than samples, NaN
        assert!(matches!(Ndfs { n_clusters: 40, ..Ndfs::default() }.fit(x.view(), 1), Err(MethodError::Input { .. })));
        let mut bad = x.clone();
        bad[[2, 2]] = f64::NAN;
        assert!(matches!(nd.fit(bad.view(), 1), Err(MethodError::Input { .. })));
        // a constant feature is scored, not selected first; duplicate samples are accepted
        let mut xc = x.clone();
        xc.column_mut(8).fill(0.0);
        let r0 = xc.row(0).to_owned();
        xc.row_mut(1).assign(&r0);
        let f = nd.fit(xc.view(), 1).unwrap();
        let sc = f.feature_scores().unwrap();
        assert_eq!(sc.weights[8], 0.0);
        assert_eq!(*sc.ranking.last().unwrap(), 8);
    }
}
