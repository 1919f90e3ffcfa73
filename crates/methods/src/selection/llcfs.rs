//! LLCFS: feature selection for local learning-based clustering (Zeng & Cheung, TPAMI 2011),
//! after the FSASL authors' implementation (`fs_unsup_llcfs.m`, `kType = 2`, which their
//! harness runs).
//!
//! Feature weights `tau` on the simplex scale the features (`x -> diag(sqrt(tau)) x`, linear
//! kernel `K_tau = X diag(tau) X^T`). For every sample i with its k nearest neighbours `N_i` in
//! the scaled space (itself excluded), a local ridge model with bias predicts the cluster
//! indicators of `N_i`:
//!
//! `min_{w_ic, b_ic} sum_{j in N_i} (y_jc - w_ic^T x_j - b_ic)^2 + lambda sum_l w_icl^2 / tau_l`,
//! `lambda = 1 / beta`,
//!
//! whose prediction at `x_i` is `o_i = alpha_i^T Y_{N_i}` with
//! `alpha_i = H (H K_i H + lambda I)^-1 (k_i - K_i 1 / k) + 1 / k` (`K_i`, `k_i` the scaled kernel
//! on `N_i` and between `N_i` and i, `H = I - 1 1^T / k`), and weights
//! `w_ic = diag(tau) X_{N_i}^T H (H K_i H + lambda I)^-1 y_{N_i c}`.
//!
//! ## One iteration
//! 1. neighbourhoods `N_i` in the scaled space (exact K-NN, ties to the lowest index);
//! 2. Y-step: `A` (N x N, row i = `alpha_i` on `N_i`), `M = (I - A)^T (I - A)`; Y = the c
//!    eigenvectors of M with the smallest eigenvalues (`min_{Y^T Y = I} Tr(Y^T M Y)`, the local
//!    learning clustering relaxation); the recorded objective is `Tr(Y^T M Y)` (their sum, the
//!    harness's `objHistory`);
//! 3. tau-step: `a_l = sum_{i,c} w_icl^2` from the local models with the new Y, and
//!    `tau_l = sqrt(a_l) / sum_m sqrt(a_m)`: the minimiser over the simplex of
//!    `sum_l a'_l / tau_l` (`a'_l = a_l / tau_l^2` the w-terms of the regulariser), i.e. one block
//!    step on `G(w, b, tau) = sum_{i,c} [fit + lambda sum_l w_icl^2 / tau_l]`.
//!
//! What is proved (and tested): at fixed Y and neighbourhoods, G is non-increasing under the
//! tau-step and under the refit of (w, b) (alternating minimisation of a jointly convex function
//! of (w, tau)); Y minimises `Tr(Y^T M Y)` exactly. The whole scheme re-chooses the neighbourhoods
//! and couples Y and tau through different objectives, so its recorded `Tr(Y^T M Y)` is not
//! claimed monotone (neither paper nor code proves it).
//!
//! Stop when `||tau_t - tau_{t-1}||_1 <= tol` (the code's `epsilon_tao` test, which it leaves
//! switched off) or after `max_iter` iterations (the code's only rule: 50). Scores tau, ranked
//! descending, ties by index. Defaults: k = 5, beta = 1 (grid `10^[-5:5]`), tau_0 = 1/D.

use super::common::{check_clusters, chunked_sum, rank_by_weight};
use crate::api::declare::{self, declare_params, Declared};
use crate::api::info::{float, int, positive, MethodInfo};
use crate::api::{
    check_dense_size, check_input, numerical, numerics, Embedder, FeatureScores, FitInput, Fitted, MethodError, Output, OutputKind, ParamMap, Result,
    StopReason, Trace,
};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis};
use rayon::prelude::*;
use structdr_linalg::{eigh_bottom, Cholesky};
use structdr_numerics::neighbours::knn;

const NAME: &str = "llcfs";
/// Floor of tau when scaling the features (the code's `max(tao, eps)`).
pub const TAU_FLOOR: f64 = f64::EPSILON;

declare_params! {
    /// LLCFS parameters (Zeng & Cheung 2011; the FSASL harness's grid).
    #[derive(Debug, Clone)]
    pub struct Llcfs {
        /// Number of clusters c.
        pub n_clusters: usize = int("n_clusters", 1, 3, "number of clusters c (columns of Y; the class count)"),
        /// Neighbours of each local model.
        pub k: usize = int("k", 2, 5, "neighbours of each local model, found in the tau-scaled space (harness: 5)"),
        /// Local ridge: lambda = 1 / beta.
        pub beta: f64 = positive("beta", 1.0, "local models' fit weight; their ridge is lambda = 1/beta (harness grid 10^[-5:5], code default 1)"),
        /// Iteration cap.
        pub max_iter: usize = int("max_iter", 1, 50, "iteration cap (the code runs exactly 50)"),
        /// tau-change tolerance.
        pub tol: f64 = float("tol", 0.0, 1.0, 1e-5, "stop when ||tau_t - tau_{t-1}||_1 <= tol (the code's epsilon_tao, switched off there; 0 runs max_iter iterations)"),
        // read by the evaluation, not the fit
        _ = super::common::n_selected(),
    }
}

/// One local model: neighbours, `alpha_i` and `Q_i = H (H K_i H + lambda I)^-1`.
#[derive(Debug, Clone)]
pub struct LocalModel {
    /// `N_i`.
    pub nb: Vec<usize>,
    /// Prediction weights on `N_i`.
    pub alpha: Array1<f64>,
    /// `H (H K_i H + lambda I)^-1` (k x k).
    pub q: Array2<f64>,
}

/// The local models for feature weights `tau` (step 1 and `alpha_i`).
pub fn local_models(x: ArrayView2<f64>, tau: ArrayView1<f64>, k: usize, lambda: f64) -> Result<Vec<LocalModel>> {
    let xs = &x * &tau.mapv(|t| t.max(TAU_FLOOR).sqrt()).insert_axis(Axis(0));
    let g = knn(xs.view(), k).map_err(numerics(NAME))?;
    (0..x.nrows())
        .into_par_iter()
        .map(|i| {
            let nb: Vec<usize> = g.indices.row(i).to_vec();
            let xn = xs.select(Axis(0), &nb);
            let ki = xn.dot(&xn.t());
            let kv = xn.dot(&xs.row(i));
            let kk = nb.len();
            let h = Array2::from_shape_fn((kk, kk), |(a, b)| if a == b { 1.0 } else { 0.0 } - 1.0 / kk as f64);
            let mut m = h.dot(&ki).dot(&h);
            for a in 0..kk {
                m[[a, a]] += lambda;
            }
            let m = (&m + &m.t()) * 0.5;
            let inv = Cholesky::factor(m.view()).and_then(|c| c.inverse()).map_err(numerical(NAME))?;
            let q = h.dot(&inv);
            let centred = &kv - ki.sum_axis(Axis(1)) / kk as f64;
            let alpha = q.t().dot(&centred) + 1.0 / kk as f64;
            Ok(LocalModel { nb, alpha, q })
        })
        .collect()
}

/// `M = (I - A)^T (I - A)` (dense N x N) from the local models.
pub fn local_laplacian(models: &[LocalModel]) -> Array2<f64> {
    let n = models.len();
    // B = I - A, row i sparse; M = B^T B = sum_i b_i^T b_i
    let mut m = Array2::<f64>::zeros((n, n));
    for (i, lm) in models.iter().enumerate() {
        let mut idx: Vec<(usize, f64)> = vec![(i, 1.0)];
        for (&j, &a) in lm.nb.iter().zip(&lm.alpha) {
            if j == i {
                idx[0].1 -= a;
            } else {
                idx.push((j, -a));
            }
        }
        for &(p, u) in &idx {
            for &(r, v) in &idx {
                m[[p, r]] += u * v;
            }
        }
    }
    m
}

/// `a_l = sum_{i,c} w_icl^2` with `w_ic = diag(tau) X_{N_i}^T Q_i y_{N_i c}` (the tau-step's
/// input), summed in fixed chunks (thread-count independent).
pub fn weight_energy(x: ArrayView2<f64>, tau: ArrayView1<f64>, models: &[LocalModel], y: ArrayView2<f64>) -> Array1<f64> {
    let d = x.ncols();
    let tau_f = tau.mapv(|t| t.max(TAU_FLOOR));
    chunked_sum(models.len(), 64, Array1::zeros(d), |range| {
        let mut acc = Array1::<f64>::zeros(d);
        for lm in &models[range] {
            let coef = lm.q.dot(&y.select(Axis(0), &lm.nb)); // k x c
            let w = x.select(Axis(0), &lm.nb).t().dot(&coef); // D x c, before diag(tau)
            for (l, row) in w.outer_iter().enumerate() {
                acc[l] += tau_f[l] * tau_f[l] * row.dot(&row);
            }
        }
        acc
    })
}

/// The tau-step: `tau_l = sqrt(a_l) / sum sqrt(a)`.
pub fn tau_step(a: ArrayView1<f64>) -> Option<Array1<f64>> {
    let r = a.mapv(|v| v.max(0.0).sqrt());
    let s = r.sum();
    (s > 0.0 && s.is_finite()).then(|| r / s)
}

/// What [`Llcfs::solve`] returns.
#[derive(Debug, Clone)]
pub struct LlcfsSolution {
    /// Feature weights on the simplex.
    pub tau: Array1<f64>,
    /// Cluster indicator relaxation (N x c).
    pub y: Array2<f64>,
    /// `Tr(Y^T M Y)` per iteration.
    pub history: Vec<f64>,
    /// Iterations run.
    pub iterations: usize,
    /// Whether the tau change fell to tol.
    pub converged: bool,
    /// The last `||tau_t - tau_{t-1}||_1`.
    pub residual: f64,
}

impl Llcfs {
    /// Runs the iterations of the module doc.
    pub fn solve(&self, x: ArrayView2<f64>) -> Result<LlcfsSolution> {
        let (n, d) = x.dim();
        check_clusters(NAME, n, self.n_clusters, self.k)?;
        check_dense_size(NAME, n)?;
        let lambda = 1.0 / self.beta;
        let mut tau = Array1::from_elem(d, 1.0 / d as f64);
        let (mut history, mut iterations, mut converged, mut residual) = (Vec::new(), 0, false, f64::NAN);
        let mut y = Array2::zeros((n, self.n_clusters));
        for _ in 0..self.max_iter {
            iterations += 1;
            let models = local_models(x, tau.view(), self.k, lambda)?;
            let m = local_laplacian(&models);
            let e = eigh_bottom(m.view(), self.n_clusters).map_err(numerical(NAME))?;
            y = e.vectors;
            let obj = e.values.sum();
            if !obj.is_finite() {
                return Err(MethodError::Degenerate { method: NAME, reason: format!("the objective is not finite at iteration {iterations}") });
            }
            history.push(obj);
            structdr_numerics::progress::report(history.len(), obj);
            let a = weight_energy(x, tau.view(), &models, y.view());
            let new = tau_step(a.view()).ok_or_else(|| MethodError::Degenerate {
                method: NAME,
                reason: format!("every local model has zero weights at iteration {iterations} (constant or duplicate data?)"),
            })?;
            residual = (&new - &tau).mapv(f64::abs).sum();
            tau = new;
            if residual <= self.tol {
                converged = true;
                break;
            }
        }
        Ok(LlcfsSolution { tau, y, history, iterations, converged, residual })
    }
}

impl Embedder for Llcfs {
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
        let ranking = rank_by_weight(sol.tau.view());
        let stop = StopReason::classify(sol.converged, sol.iterations, self.max_iter, Some(sol.residual), Some(self.tol), "");
        let nonzero = sol.tau.iter().filter(|&&v| v > 0.0).count();
        let mut fitted =
            Fitted::new(Output::FeatureScores(FeatureScores { weights: sol.tau, ranking }), Trace::iterative(sol.history, sol.iterations, stop, ""));
        fitted.notes = vec![format!("lambda = 1/beta = {:.3e}; {nonzero} features with tau > 0; last ||delta tau||_1 = {:.3e}", 1.0 / self.beta, sol.residual)];
        Ok(fitted)
    }
}

pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: NAME,
        summary: "LLCFS feature selection: local learning-based clustering with feature weights tau on the simplex; alternates Y = bottom eigenvectors of (I - A_tau)^T (I - A_tau) (local ridge models on k neighbours in the tau-scaled space) and the closed-form tau_l proportional to the l2 norm of feature l's local weights; scores tau.",
        reference: "Zeng & Cheung, Feature Selection and Kernel Learning for Local Learning-Based Clustering, IEEE TPAMI 33(8) 2011; the FSASL harness (fs_unsup_llcfs.m)",
        version: 1,
        output: OutputKind::FeatureScores,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: false,
        params: Llcfs::schema(()),
        build: |p| declare::build::<Llcfs>(NAME, (), p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn clusters(n: usize, noise: usize, seed: u64) -> Array2<f64> {
        crate::testing::three_clusters(n, noise, seed).0
    }

    /// The primal local ridge with bias: `min sum_j (y_j - w^T x_j - b)^2 + lambda sum_l w_l^2 / tau_l`.
    fn primal(xn: &Array2<f64>, y: ArrayView1<f64>, tau: &Array1<f64>, lambda: f64) -> (Array1<f64>, f64) {
        let (k, d) = xn.dim();
        let mut a = Array2::<f64>::zeros((d + 1, d + 1));
        let mut rhs = Array1::<f64>::zeros(d + 1);
        let ext = ndarray::concatenate(Axis(1), &[xn.view(), Array2::ones((k, 1)).view()]).unwrap();
        a += &ext.t().dot(&ext);
        for l in 0..d {
            a[[l, l]] += lambda / tau[l];
        }
        rhs += &ext.t().dot(&y);
        let sol = Cholesky::factor(a.view()).unwrap().solve_vec(rhs.view()).unwrap();
        (sol.slice(ndarray::s![..d]).to_owned(), sol[d])
    }

    /// G of the module doc at the primal optimum for the given tau, and with the weights of
    /// `w_from` held fixed.
    fn g_value(x: &Array2<f64>, models: &[LocalModel], y: &Array2<f64>, tau_w: &Array1<f64>, tau_reg: &Array1<f64>, lambda: f64) -> f64 {
        let mut total = 0.0;
        for lm in models {
            let xn = x.select(Axis(0), &lm.nb);
            for c in 0..y.ncols() {
                let yc = y.select(Axis(0), &lm.nb).column(c).to_owned();
                let (w, b) = primal(&xn, yc.view(), tau_w, lambda);
                let r = &yc - &(xn.dot(&w) + b);
                total += r.dot(&r) + lambda * w.iter().zip(tau_reg).map(|(v, t)| v * v / t).sum::<f64>();
            }
        }
        total
    }

    #[test]
    fn dual_prediction_and_weights_match_the_primal_local_ridge() {
        let x = clusters(30, 4, 1);
        let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(2);
        let tau = Array1::from_shape_fn(7, |_| r.gen_range(0.05..1.0));
        let tau = &tau / tau.sum();
        let y = Array2::from_shape_fn((30, 2), |_| r.gen_range(-1.0..1.0));
        for lambda in [1e-3, 1.0, 1e3] {
            let models = local_models(x.view(), tau.view(), 5, lambda).unwrap();
            let a = weight_energy(x.view(), tau.view(), &models, y.view());
            let mut a_primal = Array1::<f64>::zeros(7);
            for (i, lm) in models.iter().enumerate() {
                let xn = x.select(Axis(0), &lm.nb);
                for c in 0..2 {
                    let yc = y.select(Axis(0), &lm.nb).column(c).to_owned();
                    let (w, b) = primal(&xn, yc.view(), &tau, lambda);
                    let pred = x.row(i).dot(&w) + b;
                    assert!((pred - lm.alpha.dot(&yc)).abs() < 1e-8, "lambda {lambda}, sample {i}: {pred} vs {}", lm.alpha.dot(&yc));
                    a_primal += &w.mapv(|v| v * v);
                }
            }
            assert!((&a - &a_primal).iter().all(|v| v.abs() < 1e-8 * a_primal.sum().max(1.0)), "lambda {lambda}");
            // rows of A sum to 1 (the constant vector is in M's null space)
            for lm in &models {
                assert!((lm.alpha.sum() - 1.0).abs() < 1e-10);
            }
        }
    }

    #[test]
    fn tau_step_is_the_simplex_minimiser_and_decreases_g() {
        let x = clusters(24, 3, 3);
        let lambda = 0.5;
        let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(4);
        let tau0 = Array1::from_shape_fn(6, |_| r.gen_range(0.05..1.0));
        let tau0 = &tau0 / tau0.sum();
        let models = local_models(x.view(), tau0.view(), 5, lambda).unwrap();
        // a Y that the local models cannot fit exactly (the bottom eigenvectors of well-separated
        // clusters are constant on every neighbourhood, where G is 0 for every tau)
        let y = Array2::from_shape_fn((24, 3), |_| r.gen_range(-1.0..1.0));
        let a = weight_energy(x.view(), tau0.view(), &models, y.view());
        let tau1 = tau_step(a.view()).unwrap();
        // KKT of min sum_l a_l / tau_l on the simplex: a_l / tau_l^2 is the same for every l
        let mult: Vec<f64> = (0..6).map(|l| a[l] / (tau1[l] * tau1[l])).collect();
        assert!(mult.iter().all(|m| (m - mult[0]).abs() < 1e-9 * mult[0]), "{mult:?}");
        assert!((tau1.sum() - 1.0).abs() < 1e-14);
        // G: weights fitted at tau0 with regulariser tau0  >=  same weights with tau1  >=  refit at tau1
        let g00 = g_value(&x, &models, &y, &tau0, &tau0, lambda);
        let g01 = g_value(&x, &models, &y, &tau0, &tau1, lambda);
        let g11 = g_value(&x, &models, &y, &tau1, &tau1, lambda);
        assert!(g01 <= g00 * (1.0 + 1e-12) && g11 <= g01 * (1.0 + 1e-12), "{g00} {g01} {g11}");
        assert!(g11 < g00);
    }

    #[test]
    fn y_step_is_optimal_and_informative_features_rank_first() {
        // overlapping clusters: on well-separated ones every neighbourhood lies in one cluster,
        // the local models fit Y exactly with w = 0 and tau is decided by rounding noise
        let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
        let x = Array2::from_shape_fn(
            (45, 12),
            |(i, j)| if j < 3 { (if i % 3 == j { 2.0 } else { 0.0 }) + r.gen_range(-1.0..1.0) } else { r.gen_range(-1.0..1.0) },
        );
        let m = Llcfs { max_iter: 20, tol: 0.0, ..Llcfs::default() };
        let sol = m.solve(x.view()).unwrap();
        let yty = sol.y.t().dot(&sol.y);
        assert!((yty - Array2::<f64>::eye(3)).iter().all(|v| v.abs() < 1e-10));
        assert!((sol.tau.sum() - 1.0).abs() < 1e-12 && sol.tau.iter().all(|&v| v >= 0.0));
        let mut top = rank_by_weight(sol.tau.view())[..3].to_vec();
        top.sort();
        assert_eq!(top, vec![0, 1, 2], "tau {}", sol.tau);
        assert_eq!(sol.history.len(), 20);
    }

    #[test]
    fn fit_contract_bad_input_and_thread_invariance() {
        let x = clusters(30, 5, 6);
        let m = Llcfs { max_iter: 10, ..Llcfs::default() };
        let pool = |t: usize| rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap();
        let one = pool(1).install(|| m.fit(x.view(), 0).unwrap());
        let two = pool(2).install(|| m.fit(x.view(), 0).unwrap());
        assert_eq!(one.output, two.output);
        assert_eq!(one.trace.history, two.trace.history);
        let s = one.feature_scores().unwrap();
        let mut r = s.ranking.clone();
        r.sort();
        assert_eq!(r, (0..8).collect::<Vec<_>>());
        assert!(matches!(Llcfs { n_clusters: 30, ..Llcfs::default() }.fit(x.view(), 0), Err(MethodError::Input { .. })));
        let mut bad = x.clone();
        bad[[0, 0]] = f64::NAN;
        assert!(matches!(m.fit(bad.view(), 0), Err(MethodError::Input { .. })));
        let constant = Array2::from_elem((20, 4), 1.0);
        assert!(matches!(m.fit(constant.view(), 0), Err(MethodError::Degenerate { .. })));
        // a constant feature gets tau = 0 and ranks last
        let mut xc = x.clone();
        xc.column_mut(7).fill(2.0);
        let f = m.fit(xc.view(), 0).unwrap();
        let sc = f.feature_scores().unwrap();
        assert!(sc.weights[7] < 1e-12);
        assert_eq!(*sc.ranking.last().unwrap(), 7);
    }
}
