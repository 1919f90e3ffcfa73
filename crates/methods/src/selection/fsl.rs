//! FSL: unsupervised feature selection via structure learning (Wang & Li, TNNLS 2020, 001 §IV,
//! Algorithm 2).
//!
//! With `X` (N x M, samples in rows), feature weights `theta` and a directed graph `W` (N x N),
//! FSL solves problem (34)
//!
//! `min_{W in Wset} min_{theta in Theta} g(W, theta)`,
//! `g(W, theta) = -1/2 sum_r log det(gamma I + 4 theta_r L_W) + sum_ij w_ij psi(x_i, x_j; theta)`,
//!
//! with `psi(x_i, x_j; theta) = sum_r theta_r (x_ir - x_jr)^2` (eq. 29),
//! `L_W = D - (W + W^T)/2`, `D_ii = sum_j (w_ij + w_ji)/2`,
//! `Wset = { sum_j w_ij = lambda, w_ij >= 0 }` (each row on the simplex scaled to `lambda`) and
//! `Theta = { sum_r theta_r = b, 0 <= theta_r <= 1 }` (eq. 30).
//!
//! ## Gradients (001 §IV-C1)
//! With the eigendecomposition `L_W = U diag(v) U^T`, computed once per iteration:
//! - `log det(gamma I + 4 theta_r L_W) = sum_k log(gamma + 4 theta_r v_k)` for every feature r:
//!   O(M N) for all M log-dets instead of M Cholesky factorisations.
//! - `d g / d w_ij = psi_ij - (G_ii + G_jj - 2 G_ij)` with
//!   `G = sum_r theta_r (gamma I + 4 theta_r L_W)^-1 = U diag(h) U^T`,
//!   `h_k = sum_r theta_r / (gamma + 4 theta_r v_k)`: one N x N product, O(N^3 + M N) instead of
//!   O(M N^3).
//! - `d g / d theta_r = -2 sum_k v_k / (gamma + 4 theta_r v_k) + c_r`,
//!   `c_r = sum_ij w_ij (x_ir - x_jr)^2 = 2 x_r^T L_W x_r`, all M of them from one product `W X`:
//!   O(N^2 M).
//!
//! One iteration therefore costs O(N^3 + M N^2) (one `dsyevd`, two GEMMs), not O(M N^3).
//!
//! ## Algorithm (Alg. 2; step rule ours, the paper gives none)
//! Init `theta = b 1 / M`, `W = lambda 1 1^T / N` (Alg. 2 writes `1 1^T / N`, which is in `Wset`
//! only for `lambda = 1`; we scale it onto `Wset`). Each iteration is one projected-gradient step
//! on theta (projection onto `Theta` by bisection, Prop. 5 / eq. 36, [`project_capped_simplex`])
//! followed by one projected-gradient step on W (row-wise Euclidean projection onto the scaled
//! simplex, Duchi et al. 2008, [`project_simplex`]). Both steps use Armijo backtracking along the
//! projection arc, `g(x') <= g(x) + 1e-4 <grad, x' - x>`, so the objective never increases; a step
//! accepted at the first trial lets the next step grow by 2. The W step's accepted trial
//! eigendecomposition is reused by the next iteration (one `dsyevd` per iteration unless a step is
//! rejected). Stop when the decrease over an iteration is at most `tol` times
//! `|g - g_0|`, `g_0 = -(M N / 2) log gamma` being the objective of the empty graph (the constant
//! `g_0` dominates `|g|` for large M), or after `max_iter` iterations.
//!
//! ## Self-loops
//! `w_ii` belongs to `Wset` (the dual of the constraints of (33) for `i = j`, i.e. of `rho_i >= 0`);
//! it does not enter `L_W` and `psi_ii = 0`, so its gradient is 0: it is slack, the part of row i's
//! budget `lambda` not spent on edges.
//!
//! ## Output ([`Fitted`])
//! [`crate::api::Output::FeatureScores`]: weights `theta` and the ranking (`theta` descending, ties
//! among `theta_r = 0` broken by the theta-gradient ascending, i.e. the feature closest to
//! entering; then by index); `graph` = the symmetrised `(W + W^T)/2` off the diagonal. The number
//! of selected features `n_selected` is an evaluation-stage parameter: the runner fits once per
//! (lambda, gamma, b, ...) cell and scores `X` restricted to the top `n_selected` features for
//! every value of the grid ([`crate::api::FeatureScores::select`]; `n_selected = 0` keeps the
//! support `{r : theta_r > 0}`). This is how the k-means protocol of Table III runs on the selected
//! features.

use crate::api::declare::{self, declare_params, fixed, Declared};
use crate::api::info::{float, int, positive, MethodInfo};
use crate::api::OutputKind;
use crate::api::{check_input, numerical, Embedder, FeatureScores, FitInput, Fitted, Graph, MethodError, Output, ParamMap, Result, Trace};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis, Zip};
use structdr_linalg::eigh;
use structdr_numerics::graphs::laplacian::of_dense as laplacian;
use structdr_numerics::optim::projections::{project_capped_simplex, project_simplex};

const NAME: &str = "fsl";
/// Armijo constant of the sufficient-decrease test.
pub const ARMIJO: f64 = 1e-4;
/// Maximum halvings of a step before the iteration is declared stalled.
pub const MAX_BACKTRACK: usize = 60;

declare_params! {
    /// FSL parameters (001 §IV, Alg. 2).
    #[derive(Debug, Clone)]
    pub struct Fsl {
        /// `lambda > 0`: every row of W sums to lambda (the weight of the slack `rho_i` in (33)).
        pub lambda: f64 = positive("lambda", 10.0, "row sum of W: sum_j w_ij = lambda (paper: 10 on two moons and in Fig. 8; tuned in [0.1, 10] for Table III)"),
        /// `gamma > 0`: precision of the prior `N(0, gamma^-1 I)`; large gamma makes theta sparse.
        pub gamma: f64 = positive("gamma", 100.0, "prior precision; larger gamma gives a sparser theta (paper: 100 throughout)"),
        /// `0 < b <= M`: `sum_r theta_r = b`.
        pub b: f64 = positive("b", 1.0, "sum of the feature weights theta, 0 < b <= M (paper: 1 on two moons; tuned in [0.1, 40] for Table III)"),
        /// Iteration cap.
        pub max_iter: usize = int("max_iter", 1, 500, "iteration cap of the projected-gradient loop"),
        /// Relative-decrease stopping tolerance (see the module doc).
        pub tol: f64 = float("tol", 0.0, 1.0, 1e-6, "stop when an iteration decreases g by at most tol * |g - g_0|, g_0 = -(M N / 2) log gamma"),
        // read by the evaluation, not the fit
        _ = int("n_selected", 0, 0, "evaluation stage: the protocols score X restricted to this many top-ranked features (0 = the support of theta); one fit serves every value").evaluation_stage(),
        /// Whether `w_ii` belongs to the variables (see the module doc); default false (`w_ii = 0`).
        pub self_loops: bool = fixed(false),
    }
}

/// `c_r = sum_ij w_ij (x_ir - x_jr)^2` for every feature r (the theta-gradient's linear part and
/// `sum_ij w_ij psi_ij = theta^T c`): `c = (rowsum(W) + colsum(W))^T (X o X) - 2 colsum(X o (W X))`,
/// one GEMM, O(N^2 M). `x` should be centred (cancellation).
pub fn feature_costs(x: ArrayView2<f64>, w: ArrayView2<f64>) -> Array1<f64> {
    let deg = &w.sum_axis(Axis(1)) + &w.sum_axis(Axis(0));
    let wx = w.dot(&x);
    let mut c = Array1::zeros(x.ncols());
    for (i, (xr, wr)) in x.outer_iter().zip(wx.outer_iter()).enumerate() {
        Zip::from(&mut c).and(&xr).and(&wr).for_each(|c, &a, &b| *c += deg[i] * a * a - 2.0 * a * b);
    }
    c.mapv_inplace(|v: f64| v.max(0.0));
    c
}

/// `psi_ij = sum_r theta_r (x_ir - x_jr)^2` (eq. 29): squared distances of `X diag(sqrt theta)`
/// over the support of theta only, O(N^2 |supp theta|).
pub fn weighted_sq_dists(x: ArrayView2<f64>, theta: ArrayView1<f64>) -> Array2<f64> {
    let support: Vec<usize> = (0..theta.len()).filter(|&r| theta[r] > 0.0).collect();
    let n = x.nrows();
    if support.is_empty() {
        return Array2::zeros((n, n));
    }
    let xs = Array2::from_shape_fn((n, support.len()), |(i, s)| x[[i, support[s]]] * theta[support[s]].sqrt());
    structdr_linalg::sq_dists(xs.view())
}

/// `-1/2 sum_r sum_k log(gamma + 4 theta_r v_k)` (the log-det part of g) from the Laplacian's
/// eigenvalues `v`: O(M N), features with `theta_r = 0` contribute `-(N/2) log gamma` each.
pub fn logdet_term(v: ArrayView1<f64>, theta: ArrayView1<f64>, gamma: f64) -> f64 {
    let n = v.len() as f64;
    let mut s = 0.0;
    let mut zeros = 0usize;
    for &t in theta.iter() {
        if t == 0.0 {
            zeros += 1;
            continue;
        }
        s += v.iter().map(|&vk| (gamma + 4.0 * t * vk).ln()).sum::<f64>();
    }
    -0.5 * (s + zeros as f64 * n * gamma.ln())
}

/// `d g / d theta_r = -2 sum_k v_k / (gamma + 4 theta_r v_k) + c_r` (001 §IV-C1).
pub fn grad_theta(v: ArrayView1<f64>, theta: ArrayView1<f64>, gamma: f64, c: ArrayView1<f64>) -> Array1<f64> {
    let at_zero = -2.0 * v.sum() / gamma;
    Array1::from_shape_fn(theta.len(), |r| {
        let t = theta[r];
        let s = if t == 0.0 { at_zero } else { -2.0 * v.iter().map(|&vk| vk / (gamma + 4.0 * t * vk)).sum::<f64>() };
        s + c[r]
    })
}

/// `G = sum_r theta_r (gamma I + 4 theta_r L_W)^-1 = U diag(h) U^T`,
/// `h_k = sum_r theta_r / (gamma + 4 theta_r v_k)`: O(M N + N^3).
pub fn g_matrix(u: ArrayView2<f64>, v: ArrayView1<f64>, theta: ArrayView1<f64>, gamma: f64) -> Array2<f64> {
    let support: Vec<f64> = theta.iter().copied().filter(|&t| t > 0.0).collect();
    let h = v.mapv(|vk| support.iter().map(|&t| t / (gamma + 4.0 * t * vk)).sum::<f64>());
    let uh = &u * &h.view().insert_axis(Axis(0));
    uh.dot(&u.t())
}

/// `d g / d w_ij = psi_ij - (G_ii + G_jj - 2 G_ij)` (001 §IV-C1, `-sum_r theta_r Tr[Q_r^-1 A_ij]`).
pub fn grad_w(g: ArrayView2<f64>, psi: ArrayView2<f64>) -> Array2<f64> {
    let d = g.diag().to_owned();
    Array2::from_shape_fn(psi.dim(), |(i, j)| psi[[i, j]] - (d[i] + d[j] - 2.0 * g[[i, j]]))
}

/// The objective g(W, theta) from the eigenvalues `v` of `L_W` and `c = feature_costs(X, W)`:
/// `logdet_term(v, theta) + theta^T c`.
pub fn objective(v: ArrayView1<f64>, theta: ArrayView1<f64>, gamma: f64, c: ArrayView1<f64>) -> f64 {
    logdet_term(v, theta, gamma) + theta.dot(&c)
}

/// What [`Fsl::solve`] returns.
#[derive(Debug, Clone)]
pub struct FslSolution {
    /// Feature weights, in `Theta`.
    pub theta: Array1<f64>,
    /// The graph, rows on the scaled simplex (self-loops = slack).
    pub w: Array2<f64>,
    /// Theta-gradient at the solution (ranks the `theta_r = 0` features).
    pub grad_theta: Array1<f64>,
    /// `g(W, theta)` at the start.
    pub initial_objective: f64,
    /// `g` after each iteration (non-increasing).
    pub history: Vec<f64>,
    /// Iterations run.
    pub iterations: usize,
    /// Whether the stopping rule was met.
    pub converged: bool,
    /// Eigendecompositions computed (one per iteration plus one per rejected W step, plus the first).
    pub eigendecompositions: usize,
}

/// The Laplacian's eigendecomposition and the quantities derived from W.
struct WState {
    w: Array2<f64>,
    v: Array1<f64>,
    u: Array2<f64>,
    c: Array1<f64>,
}

fn w_state(x: ArrayView2<f64>, w: Array2<f64>) -> Result<WState> {
    let e = eigh(laplacian(w.view()).view()).map_err(numerical(NAME))?;
    let c = feature_costs(x, w.view());
    Ok(WState { w, v: e.values, u: e.vectors, c })
}

impl Fsl {
    fn validate(&self, m: usize) -> Result<()> {
        let bad = |reason: String| Err(MethodError::Input { method: NAME, reason });
        if !(self.lambda > 0.0 && self.lambda.is_finite()) {
            return bad(format!("lambda = {} must be finite and > 0", self.lambda));
        }
        if !(self.gamma > 0.0 && self.gamma.is_finite()) {
            return bad(format!("gamma = {} must be finite and > 0", self.gamma));
        }
        if !(self.b > 0.0 && self.b <= m as f64) {
            return bad(format!("b = {} must be in (0, M] = (0, {m}]", self.b));
        }
        if !(self.tol >= 0.0 && self.tol.is_finite()) {
            return bad(format!("tol = {} must be finite and >= 0", self.tol));
        }
        Ok(())
    }

    /// Row-wise projection of W onto `Wset` (the diagonal held at 0 unless `self_loops`).
    pub fn project_rows(&self, w: &mut Array2<f64>) {
        let n = w.nrows();
        let mut buf = vec![0.0; n];
        for (i, mut row) in w.outer_iter_mut().enumerate() {
            if self.self_loops {
                project_simplex(row.as_slice_mut().expect("standard layout"), self.lambda);
            } else {
                buf.clear();
                buf.extend(row.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, &v)| v));
                project_simplex(&mut buf, self.lambda);
                let mut k = 0;
                for (j, v) in row.iter_mut().enumerate() {
                    if j == i {
                        *v = 0.0;
                    } else {
                        *v = buf[k];
                        k += 1;
                    }
                }
            }
        }
    }

    /// Solves problem (34) by the projected-gradient scheme of the module doc. `x` is N x M,
    /// samples in rows (centred internally: g is translation invariant).
    pub fn solve(&self, x: ArrayView2<f64>) -> Result<FslSolution> {
        check_input(NAME, &x, 2)?;
        let (n, m) = x.dim();
        crate::api::check_dense_size(NAME, n)?;
        self.validate(m)?;
        let mean = x.mean_axis(Axis(0)).expect("n > 0");
        let xc = &x - &mean.view().insert_axis(Axis(0));
        if xc.iter().all(|&v| v == 0.0) {
            return Err(MethodError::Input { method: NAME, reason: "every feature is constant".into() });
        }
        let gamma = self.gamma;
        let g0 = -0.5 * (m * n) as f64 * gamma.ln();

        let mut theta = Array1::from_elem(m, self.b / m as f64);
        let w0 = if self.self_loops {
            Array2::from_elem((n, n), self.lambda / n as f64)
        } else {
            Array2::from_shape_fn((n, n), |(i, j)| if i == j { 0.0 } else { self.lambda / (n - 1) as f64 })
        };
        let mut ws = w_state(xc.view(), w0)?;
        let mut eigs = 1usize;
        let mut f = objective(ws.v.view(), theta.view(), gamma, ws.c.view());
        let initial_objective = f;
        let mut history = Vec::new();
        let (mut s_theta, mut s_w) = (f64::NAN, f64::NAN);
        let mut converged = false;
        let mut iterations = 0;

        for _ in 0..self.max_iter {
            iterations += 1;
            let f_start = f;

            // theta step: cheap trials (O(M N) each) on the current spectrum.
            let gt = grad_theta(ws.v.view(), theta.view(), gamma, ws.c.view());
            if s_theta.is_nan() {
                s_theta = self.b / gt.iter().fold(0.0f64, |a, &g| a.max(g.abs())).max(f64::MIN_POSITIVE);
            }
            let mut first = true;
            for _ in 0..MAX_BACKTRACK {
                let trial = project_capped_simplex((&theta - &(&gt * s_theta)).view(), self.b);
                let ft = objective(ws.v.view(), trial.view(), gamma, ws.c.view());
                let decrease = gt.dot(&(&trial - &theta));
                if ft <= f + ARMIJO * decrease {
                    if decrease < 0.0 {
                        theta = trial;
                        f = ft;
                    }
                    if first {
                        s_theta *= 2.0;
                    }
                    break;
                }
                first = false;
                s_theta *= 0.5;
            }

            // W step: one eigendecomposition per trial; the accepted one is kept.
            let psi = weighted_sq_dists(xc.view(), theta.view());
            let gw = grad_w(g_matrix(ws.u.view(), ws.v.view(), theta.view(), gamma).view(), psi.view());
            if s_w.is_nan() {
                s_w = self.lambda / gw.iter().fold(0.0f64, |a, &g| a.max(g.abs())).max(f64::MIN_POSITIVE);
            }
            let mut first = true;
            for _ in 0..MAX_BACKTRACK {
                let mut trial = &ws.w - &(&gw * s_w);
                self.project_rows(&mut trial);
                let decrease = (&gw * &(&trial - &ws.w)).sum();
                if decrease >= 0.0 {
                    // the projected step is not a descent direction: W is stationary for this theta.
                    break;
                }
                let e = eigh(laplacian(trial.view()).view()).map_err(numerical(NAME))?;
                eigs += 1;
                let ft = logdet_term(e.values.view(), theta.view(), gamma) + (&trial * &psi).sum();
                if ft <= f + ARMIJO * decrease {
                    let c = feature_costs(xc.view(), trial.view());
                    ws = WState { w: trial, v: e.values, u: e.vectors, c };
                    f = objective(ws.v.view(), theta.view(), gamma, ws.c.view());
                    if first {
                        s_w *= 2.0;
                    }
                    break;
                }
                first = false;
                s_w *= 0.5;
            }

            history.push(f);
            structdr_numerics::progress::report(history.len(), f);
            let scale = (f - g0).abs().max(f64::MIN_POSITIVE);
            if f_start - f <= self.tol * scale {
                converged = true;
                break;
            }
        }
        let grad = grad_theta(ws.v.view(), theta.view(), gamma, ws.c.view());
        Ok(FslSolution { theta, w: ws.w, grad_theta: grad, initial_objective, history, iterations, converged, eigendecompositions: eigs })
    }
}

/// Feature ranking: theta descending, then theta-gradient ascending, then index.
pub fn rank_features(theta: ArrayView1<f64>, grad: ArrayView1<f64>) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..theta.len()).collect();
    idx.sort_by(|&a, &b| theta[b].total_cmp(&theta[a]).then(grad[a].total_cmp(&grad[b])).then(a.cmp(&b)));
    idx
}

impl Embedder for Fsl {
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
        let sol = self.solve(x)?;
        let rank = rank_features(sol.theta.view(), sol.grad_theta.view());
        let support = sol.theta.iter().filter(|&&t| t > 0.0).count();
        let n = x.nrows();
        let mut edges = Vec::new();
        for i in 0..n {
            for j in (i + 1)..n {
                let s = 0.5 * (sol.w[[i, j]] + sol.w[[j, i]]);
                if s > 0.0 {
                    edges.push((i, j, s));
                }
            }
        }
        let top: Vec<String> = rank.iter().take(5).map(|&r| format!("{r}:{:.4}", sol.theta[r])).collect();
        let notes = vec![
            format!("theta support {support} of {}; top features {}", x.ncols(), top.join(" ")),
            format!("initial objective {:.6e}; {} eigendecompositions in {} iterations", sol.initial_objective, sol.eigendecompositions, sol.iterations),
        ];
        // the rule compares the last decrease with tol |f - g0|: its residual is not kept
        let stop = crate::api::StopReason::classify(sol.converged, sol.iterations, self.max_iter, None, Some(self.tol), "");
        let scores = FeatureScores { weights: sol.theta, ranking: rank };
        let mut fitted = Fitted::new(Output::FeatureScores(scores), Trace::iterative(sol.history, sol.iterations, stop, ""));
        fitted.graph = Some(Graph { n_vertices: n, edges });
        fitted.notes = notes;
        Ok(fitted)
    }
}

pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: NAME,
        summary: "FSL feature selection: min over W (rows on the lambda-simplex) and theta (sum b, in [0,1]) of -1/2 sum_r log det(gamma I + 4 theta_r L_W) + sum_ij w_ij sum_r theta_r (x_ir - x_jr)^2; returns theta as feature weights and the features ranked (the runner scores X on the top n_selected).",
        reference: "Wang & Li, Learning Low-Dimensional Latent Graph Structures: A Density Estimation Approach, TNNLS 2020, §IV, Alg. 2 (problem 34, Prop. 5)",
        version: 1,
        output: OutputKind::FeatureScores,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: false,
        params: Fsl::schema(()),
        build: |p| declare::build::<Fsl>(NAME, (), p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;
    use structdr_linalg::Cholesky;

    fn rng(seed: u64) -> Xoshiro256PlusPlus {
        Xoshiro256PlusPlus::seed_from_u64(seed)
    }

    /// Brute-force projection onto {sum w = z, w >= 0}: every support set S, tau from
    /// sum_S (v - tau) = z, keep the feasible candidates (w_S >= 0), return the nearest.
    fn brute_simplex(v: &[f64], z: f64) -> Vec<f64> {
        let n = v.len();
        let mut best: Option<(f64, Vec<f64>)> = None;
        for mask in 1u32..(1 << n) {
            let s: Vec<usize> = (0..n).filter(|&i| mask >> i & 1 == 1).collect();
            let tau = (s.iter().map(|&i| v[i]).sum::<f64>() - z) / s.len() as f64;
            let w: Vec<f64> = (0..n).map(|i| if mask >> i & 1 == 1 { v[i] - tau } else { 0.0 }).collect();
            if w.iter().any(|&x| x < -1e-12) {
                continue;
            }
            let d: f64 = w.iter().zip(v).map(|(a, b)| (a - b).powi(2)).sum();
            if best.as_ref().is_none_or(|(bd, _)| d < *bd) {
                best = Some((d, w));
            }
        }
        best.unwrap().1
    }

    /// Brute-force projection onto {sum theta = b, 0 <= theta <= 1}: every assignment of each
    /// coordinate to {0, free, 1} (3^M), tau from the sum constraint, feasible candidates only.
    fn brute_capped(mu: &[f64], b: f64) -> Vec<f64> {
        let m = mu.len();
        let mut best: Option<(f64, Vec<f64>)> = None;
        for code in 0..3usize.pow(m as u32) {
            let state: Vec<usize> = (0..m).map(|r| code / 3usize.pow(r as u32) % 3).collect();
            let n_free = state.iter().filter(|&&s| s == 1).count();
            let n_one = state.iter().filter(|&&s| s == 2).count() as f64;
            let theta: Vec<f64> = if n_free == 0 {
                if (n_one - b).abs() > 1e-12 {
                    continue;
                }
                state.iter().map(|&s| if s == 2 { 1.0 } else { 0.0 }).collect()
            } else {
                let free_sum: f64 = (0..m).filter(|&r| state[r] == 1).map(|r| mu[r]).sum();
                let tau = (free_sum + n_one - b) / n_free as f64;
                (0..m)
                    .map(|r| match state[r] {
                        0 => 0.0,
                        1 => mu[r] - tau,
                        _ => 1.0,
                    })
                    .collect()
            };
            if theta.iter().any(|&t| !(-1e-12..=1.0 + 1e-12).contains(&t)) {
                continue;
            }
            let d: f64 = theta.iter().zip(mu).map(|(a, b)| (a - b).powi(2)).sum();
            if best.as_ref().is_none_or(|(bd, _)| d < *bd) {
                best = Some((d, theta));
            }
        }
        best.unwrap().1
    }

    #[test]
    fn simplex_projection_matches_brute_force() {
        let mut r = rng(1);
        for trial in 0..300 {
            let n = 1 + trial % 7;
            let z = [0.5, 1.0, 3.0, 10.0][trial % 4];
            let v: Vec<f64> = (0..n).map(|_| r.gen_range(-3.0..3.0)).collect();
            let mut w = v.clone();
            project_simplex(&mut w, z);
            let bf = brute_simplex(&v, z);
            for (a, b) in w.iter().zip(&bf) {
                assert!((a - b).abs() < 1e-12, "v {v:?} z {z}: {w:?} vs brute force {bf:?}");
            }
            assert!((w.iter().sum::<f64>() - z).abs() < 1e-12);
        }
        // already feasible points are fixed
        let mut w = vec![0.2, 0.3, 0.5];
        project_simplex(&mut w, 1.0);
        assert_eq!(w, vec![0.2, 0.3, 0.5]);
    }

    #[test]
    fn capped_simplex_projection_matches_brute_force() {
        let mut r = rng(2);
        for trial in 0..300 {
            let m = 1 + trial % 6;
            let b = match trial % 3 {
                0 => r.gen_range(0.0..m as f64),
                1 => (m as f64 / 2.0).floor().max(1.0).min(m as f64), // integer b: vertices possible
                _ => 0.3,
            };
            let scale = [0.5, 2.0, 20.0][trial % 3];
            let mu: Vec<f64> = (0..m).map(|_| r.gen_range(-scale..scale)).collect();
            let p = project_capped_simplex(Array1::from(mu.clone()).view(), b);
            let bf = brute_capped(&mu, b);
            for (a, c) in p.iter().zip(&bf) {
                assert!((a - c).abs() < 1e-10, "mu {mu:?} b {b}: {p:?} vs brute force {bf:?}");
            }
            assert!((p.sum() - b).abs() < 1e-10 && p.iter().all(|&t| (0.0..=1.0).contains(&t)));
        }
    }

    /// Laplacian, costs and the O(M N^3) objective straight from the definitions (Cholesky log-dets).
    fn naive_objective(x: ArrayView2<f64>, w: ArrayView2<f64>, theta: ArrayView1<f64>, gamma: f64) -> f64 {
        let (n, m) = x.dim();
        let l = laplacian(w);
        let mut g = 0.0;
        for r in 0..m {
            let q = Array2::<f64>::eye(n) * gamma + &l * (4.0 * theta[r]);
            g -= 0.5 * Cholesky::factor(q.view()).unwrap().log_det();
        }
        for i in 0..n {
            for j in 0..n {
                let psi: f64 = (0..m).map(|r| theta[r] * (x[[i, r]] - x[[j, r]]).powi(2)).sum();
                g += w[[i, j]] * psi;
            }
        }
        g
    }

    fn small_problem(seed: u64, n: usize, m: usize) -> (Array2<f64>, Array2<f64>, Array1<f64>) {
        let mut r = rng(seed);
        let x = Array2::from_shape_fn((n, m), |_| r.gen_range(-1.0..1.0));
        let w = Array2::from_shape_fn((n, n), |(i, j)| if i == j { 0.0 } else { r.gen_range(0.0..1.0) });
        let theta = Array1::from_shape_fn(m, |_| r.gen_range(0.05..0.9));
        (x, w, theta)
    }

    #[test]
    fn laplacian_and_costs_match_definitions() {
        let (x, w, _) = small_problem(3, 7, 4);
        let l = laplacian(w.view());
        let s = (&w + &w.t()) * 0.5;
        for i in 0..7 {
            for j in 0..7 {
                let d = if i == j { (0..7).map(|k| s[[i, k]]).sum::<f64>() } else { 0.0 };
                assert!((l[[i, j]] - (d - s[[i, j]] + if i == j { s[[i, i]] } else { 0.0 } - if i == j { s[[i, i]] } else { 0.0 })).abs() < 1e-14);
            }
        }
        let c = feature_costs(x.view(), w.view());
        for r in 0..4 {
            let direct: f64 = (0..7).flat_map(|i| (0..7).map(move |j| (i, j))).map(|(i, j)| w[[i, j]] * (x[[i, r]] - x[[j, r]]).powi(2)).sum();
            assert!((c[r] - direct).abs() < 1e-12 * direct.max(1.0), "c_{r}: {} vs {direct}", c[r]);
            // c_r = 2 x_r^T L x_r
            let xr = x.column(r);
            assert!((c[r] - 2.0 * xr.dot(&l.dot(&xr))).abs() < 1e-12 * direct.max(1.0));
        }
        // self-loops do not change L
        let mut w2 = w.clone();
        w2[[2, 2]] = 5.0;
        assert!((laplacian(w2.view()) - &l).iter().all(|v| v.abs() < 1e-15));
    }

    #[test]
    fn eigen_path_matches_the_naive_per_feature_formulas() {
        let (x, w, theta) = small_problem(4, 9, 5);
        let gamma = 3.0;
        let l = laplacian(w.view());
        let e = eigh(l.view()).unwrap();
        let c = feature_costs(x.view(), w.view());
        let fast = objective(e.values.view(), theta.view(), gamma, c.view());
        let naive = naive_objective(x.view(), w.view(), theta.view(), gamma);
        assert!((fast - naive).abs() < 1e-11 * naive.abs().max(1.0), "{fast} vs {naive}");
        // G = sum_r theta_r Q_r^-1 through one eigendecomposition vs M inverses
        let g = g_matrix(e.vectors.view(), e.values.view(), theta.view(), gamma);
        let mut g_naive = Array2::<f64>::zeros((9, 9));
        for r in 0..5 {
            let q = Array2::<f64>::eye(9) * gamma + &l * (4.0 * theta[r]);
            g_naive = g_naive + Cholesky::factor(q.view()).unwrap().inverse().unwrap() * theta[r];
        }
        let err = (&g - &g_naive).iter().fold(0.0f64, |a, v| a.max(v.abs()));
        assert!(err < 1e-13, "G max error {err}");
        // psi via the weighted distances equals the definition, and <W, psi> = theta^T c
        let psi = weighted_sq_dists(x.view(), theta.view());
        assert!(((&w * &psi).sum() - theta.dot(&c)).abs() < 1e-11);
    }

    #[test]
    fn theta_gradient_matches_finite_differences() {
        let (x, w, theta) = small_problem(5, 8, 6);
        let gamma = 2.0;
        let e = eigh(laplacian(w.view()).view()).unwrap();
        let c = feature_costs(x.view(), w.view());
        let grad = grad_theta(e.values.view(), theta.view(), gamma, c.view());
        let h = 1e-6;
        for r in 0..6 {
            let (mut tp, mut tm) = (theta.clone(), theta.clone());
            tp[r] += h;
            tm[r] -= h;
            let fd = (naive_objective(x.view(), w.view(), tp.view(), gamma) - naive_objective(x.view(), w.view(), tm.view(), gamma)) / (2.0 * h);
            assert!((fd - grad[r]).abs() < 1e-6 * grad[r].abs().max(1.0), "theta_{r}: analytic {} vs fd {fd}", grad[r]);
        }
        // at theta_r = 0 the closed form -2 tr(L) / gamma + c_r is the one-sided limit
        let mut t0 = theta.clone();
        t0[0] = 0.0;
        let g0 = grad_theta(e.values.view(), t0.view(), gamma, c.view())[0];
        let mut tp = t0.clone();
        tp[0] = h;
        let fd = (naive_objective(x.view(), w.view(), tp.view(), gamma) - naive_objective(x.view(), w.view(), t0.view(), gamma)) / h;
        assert!((fd - g0).abs() < 1e-4 * g0.abs().max(1.0), "{fd} vs {g0}");
    }

    #[test]
    fn w_gradient_matches_finite_differences() {
        let (x, w, theta) = small_problem(6, 7, 4);
        let gamma = 1.5;
        let e = eigh(laplacian(w.view()).view()).unwrap();
        let psi = weighted_sq_dists(x.view(), theta.view());
        let grad = grad_w(g_matrix(e.vectors.view(), e.values.view(), theta.view(), gamma).view(), psi.view());
        let h = 1e-6;
        for i in 0..7 {
            for j in 0..7 {
                let (mut wp, mut wm) = (w.clone(), w.clone());
                wp[[i, j]] += h;
                wm[[i, j]] -= h;
                let fd = (naive_objective(x.view(), wp.view(), theta.view(), gamma) - naive_objective(x.view(), wm.view(), theta.view(), gamma)) / (2.0 * h);
                assert!((fd - grad[[i, j]]).abs() < 1e-7 * grad[[i, j]].abs().max(1.0), "w_{i}{j}: analytic {} vs fd {fd}", grad[[i, j]]);
            }
        }
        // W is directed: d/dw_ij = d/dw_ji, and the diagonal has zero gradient
        for i in 0..7 {
            assert!(grad[[i, i]].abs() < 1e-14);
            for j in 0..7 {
                assert!((grad[[i, j]] - grad[[j, i]]).abs() < 1e-12);
            }
        }
    }

    /// Two informative features (two separated clusters at 0.35 / 0.65, variance about 0.023 <
    /// 1/12) and U[0, 1] noise features. (FSL's first theta step favours low-variance features:
    /// with the uniform initial W, c_r is about 2 lambda N var_r.)
    fn planted(n: usize, noise: usize, seed: u64) -> Array2<f64> {
        let mut r = rng(seed);
        Array2::from_shape_fn((n, 2 + noise), |(i, j)| {
            if j < 2 {
                let centre = if i < n / 2 { 0.35 } else { 0.65 };
                centre + 0.02 * r.gen_range(-1.0..1.0) + 0.1 * j as f64 * (i % 3) as f64 / 3.0
            } else {
                r.gen_range(0.0..1.0)
            }
        })
    }

    #[test]
    fn objective_is_monotone_and_planted_features_are_selected() {
        let x = planted(40, 30, 7);
        let fsl = Fsl { lambda: 2.0, gamma: 100.0, b: 1.0, max_iter: 300, tol: 1e-10, self_loops: false };
        let sol = fsl.solve(x.view()).unwrap();
        let mut prev = sol.initial_objective;
        for (t, &f) in sol.history.iter().enumerate() {
            assert!(f <= prev + 1e-12 * prev.abs(), "iteration {t}: {f} > {prev}");
            prev = f;
        }
        assert!(sol.history.last().unwrap() < &sol.initial_objective);
        assert!((sol.theta.sum() - 1.0).abs() < 1e-12 && sol.theta.iter().all(|&t| (0.0..=1.0).contains(&t)));
        let informative = sol.theta[0] + sol.theta[1];
        assert!(informative > 0.999, "mass on the planted features {informative}, theta {:?}", sol.theta);
        // rows of W on the lambda-simplex with zero diagonal
        for i in 0..40 {
            assert!((sol.w.row(i).sum() - 2.0).abs() < 1e-10 && sol.w[[i, i]] == 0.0);
            assert!(sol.w.row(i).iter().all(|&v| v >= 0.0));
        }
        // the learned graph does not cross between the clusters
        let between: f64 = (0..20).flat_map(|i| (20..40).map(move |j| (i, j))).map(|(i, j)| sol.w[[i, j]] + sol.w[[j, i]]).sum();
        assert!(between < 1e-9, "between-cluster weight {between}");
    }

    #[test]
    fn theta_is_a_minimiser_for_its_graph_at_convergence() {
        // Projected-gradient stationarity in theta: theta = P_Theta(theta - s grad) for a step s,
        // and every feasible perturbation along a pair of coordinates does not decrease g.
        let x = planted(30, 12, 8);
        let fsl = Fsl { lambda: 2.0, gamma: 10.0, b: 2.0, max_iter: 2000, tol: 1e-13, self_loops: false };
        let sol = fsl.solve(x.view()).unwrap();
        let xc = &x - &x.mean_axis(Axis(0)).unwrap().insert_axis(Axis(0));
        let e = eigh(laplacian(sol.w.view()).view()).unwrap();
        let c = feature_costs(xc.view(), sol.w.view());
        let gt = grad_theta(e.values.view(), sol.theta.view(), 10.0, c.view());
        let s = 1e-3 / gt.iter().fold(0.0f64, |a, g| a.max(g.abs()));
        let p = project_capped_simplex((&sol.theta - &(&gt * s)).view(), 2.0);
        let resid = (&p - &sol.theta).iter().fold(0.0f64, |a, v| a.max(v.abs())) / s;
        assert!(resid < 1e-4 * gt.iter().fold(0.0f64, |a, g| a.max(g.abs())), "projected-gradient residual {resid}");
        let f = objective(e.values.view(), sol.theta.view(), 10.0, c.view());
        let m = sol.theta.len();
        for a in 0..m {
            for bb in 0..m {
                if a == bb {
                    continue;
                }
                let d = 1e-4f64.min(sol.theta[a]).min(1.0 - sol.theta[bb]);
                if d <= 0.0 {
                    continue;
                }
                let mut t = sol.theta.clone();
                t[a] -= d;
                t[bb] += d;
                let ft = objective(e.values.view(), t.view(), 10.0, c.view());
                assert!(ft >= f - 1e-9 * f.abs(), "moving {d} from {a} to {bb} lowers g: {ft} < {f}");
            }
        }
    }

    #[test]
    fn fit_contract_and_determinism() {
        let x = planted(30, 10, 9);
        let (_, m) = crate::lookup("fsl")
            .unwrap()
            .instantiate(&[("n_selected".to_string(), crate::ParamValue::Int(3)), ("lambda".to_string(), crate::ParamValue::Float(2.0))].into_iter().collect())
            .unwrap();
        let f1 = m.fit(x.view(), 0).unwrap();
        let f2 = m.fit(x.view(), 5).unwrap();
        assert_eq!(f1.output, f2.output);
        assert_eq!(f1.trace.history, f2.trace.history);
        let scores = f1.feature_scores().unwrap();
        let theta = &scores.weights;
        assert_eq!(theta.len(), 12);
        assert!((theta.sum() - 1.0).abs() < 1e-12);
        assert!(f1.check_shape(30, 12).is_ok());
        // the selected columns are the top-ranked features of X, in rank order
        let mut order: Vec<usize> = (0..12).collect();
        order.sort_by(|&a, &b| theta[b].total_cmp(&theta[a]));
        let sel = scores.select(x.view(), 3).unwrap();
        assert_eq!(sel.dim(), (30, 3));
        assert_eq!(sel.column(0), x.column(order[0]));
        assert!(f1.graph.as_ref().unwrap().edges.iter().all(|&(i, j, w)| i < j && w > 0.0));
        assert!(f1.trace.iterations > 0 && !f1.trace.history.is_empty());
    }

    #[test]
    fn bad_input_is_an_error() {
        let fsl = Fsl::default();
        let x = array![[0.0, 1.0], [f64::NAN, 0.0], [1.0, 1.0]];
        assert!(fsl.fit(x.view(), 0).is_err());
        let x = array![[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]];
        assert!(Fsl { b: 3.0, ..Fsl::default() }.fit(x.view(), 0).unwrap_err().to_string().contains("b = 3"));
        let x = Array2::<f64>::ones((5, 3));
        assert!(fsl.fit(x.view(), 0).unwrap_err().to_string().contains("constant"));
        assert!(fsl.fit(Array2::<f64>::zeros((0, 3)).view(), 0).is_err());
    }
}
