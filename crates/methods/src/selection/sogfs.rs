//! SOGFS: unsupervised feature selection with structured graph optimisation (Nie, Zhu & Li,
//! AAAI 2016), after Nie's MATLAB code (`SOGFS.m`, `InterationW.m`).
//!
//! With `X` (N x D, samples in rows; each feature centred and scaled to unit norm, as the code
//! does), a projection `W` (D x m, `W^T W = I`), a graph `S` (N x N, rows on the simplex, at most
//! k neighbours per row) and `F` (N x c, `F^T F = I`), the scheme minimises
//!
//! `J = 1/2 sum_ij [ s_ij (||W^T x_i - W^T x_j||^2 + lambda ||f_i - f_j||^2) + r s_ij^2 ]
//!      + gamma ||W||_{2,1}`
//!
//! which is the paper's `sum_ij ||W^T x_i - W^T x_j||^2 s_ij + alpha s_ij^2 + gamma' ||W||_{2,1}
//! + 2 lambda Tr(F^T L_S F)` divided by 2 with `alpha = r`, `gamma' = 2 gamma` (the code's
//! scaling of gamma, so gamma = 100 is Nie's default), `L_S` the Laplacian of `A = (S + S^T)/2`
//! (`sum_ij s_ij ||z_i - z_j||^2 = 2 Tr(Z^T L_A Z)`).
//!
//! ## Steps (one iteration)
//! 1. S: row by row, `s_i = argmin sum_j s_ij d_ij + r s_ij^2` over the simplex with at most k
//!    nonzeros, `d_ij = ||W^T x_i - W^T x_j||^2 + lambda ||f_i - f_j||^2`: the support is the k
//!    nearest rows of `Z = [X W, sqrt(lambda) F]` (exact K-NN; for a fixed support size the
//!    k smallest `d_ij` are optimal, by exchange) and `s_i = P_simplex(-d_i / (2 r))` there
//!    ([`structdr_numerics::optim::projections::project_simplex`]). (Nie's code takes the
//!    support from the data space in the first 5 iterations and from `W^T X` afterwards, without
//!    the F term.) S has N k nonzeros; no N x N matrix is formed for it.
//! 2. W: `min_{W^T W = I} Tr(W^T X^T L_A X W) + gamma ||W||_{2,1}` by reweighting (Nie et al.):
//!    W = the m bottom eigenvectors of `X^T L_A X + gamma Q`, `Q_ii = 1 / (2 sqrt(||w_i||^2 + eps))`,
//!    at most `inner_iter` times or until the relative change of that objective is <= 1e-6.
//!    Q is carried over from the previous W step (the code restarts from Q = I every call, which
//!    does not guarantee descent).
//! 3. F: the c bottom eigenvectors of `L_A`; its eigenvalues drive lambda as in the code: if the
//!    c smallest sum to more than 1e-9 (fewer than c components), lambda doubles; if the c + 1
//!    smallest sum to less than 1e-11 (more than c), lambda halves and F is kept from before;
//!    otherwise the graph has exactly c components and the fit stops (converged).
//!
//! Each step minimises J over its block for the current lambda (step 2 decreases it by the
//! reweighting lemma), so J is non-increasing while lambda is unchanged.
//!
//! ## Initialisation (the code's)
//! S from the adaptive-neighbour closed form on X (Nie, Wang & Huang 2014): with the row's sorted
//! squared distances `d_1 <= ... <= d_{k+1}` to its k + 1 nearest samples,
//! `s_ij = (d_{k+1} - d_j) / (k d_{k+1} - sum_{h<=k} d_h)`, `r = mean_i (k d_{i,k+1} -
//! sum_{h<=k} d_ih) / 2`, `lambda = r`; F from `L_A`; W from the W step with `Q = I`.
//!
//! Feature scores `||w_i||_2`, ranked descending, ties by index. Constant features are left out of
//! the fit, score 0 and rank last (version 3; their unit vectors are exact null vectors of the
//! W step, so the eigensolver's rounding used to decide their scores).
//!
//! ## The W-step eigenproblem
//! `A = X^T L_A X + gamma Q` is D x D, but `X^T L_A X = B B^T` with `B = X^T C` (D x r,
//! `L_A = C C^T` from the N x N eigendecomposition of the Laplacian, r <= N) and `gamma Q` is a
//! positive diagonal. For wide data (D >= [`ITERATIVE_MIN_D`] and D >= 2 N) the m bottom
//! eigenvectors come from [`structdr_linalg::diag_lowrank_bottom`] (block Krylov on the Woodbury
//! inverse, Ritz values and residuals with A itself, converged to `||A w - theta w|| <= 1e-11
//! (theta_m + ||B||^2) + 2 eps max_i gamma q_ii`, warm-started from the previous W): O(D N) per product instead of a
//! dense D x D eigenproblem. The dense `dsyevr` of the assembled A is used instead when D is
//! small or not much larger than N, when the iteration does not converge, and when the cut is
//! degenerate (`theta_{m+1} - theta_m` at round-off, [`DEGENERATE_GAP`]): there the bottom-m
//! subspace is not determined by A and the dense solver's choice is kept. This happens in the
//! first W step of wide data: with `Q = I`, A = `X^T L X + gamma I` has the eigenvalue gamma with
//! multiplicity >= D - N + 1, and W is whichever basis of that null space the dense solver returns
//! (the code's `eig` has the same arbitrariness). The counts of each kind are in the fit's notes.

use super::common::{check_clusters, constant_features, rank_by_weight, row_norms, SparseGraph};
use crate::api::declare::{self, declare_params, fixed, Declared};
use crate::api::info::{int, positive, MethodInfo};
use crate::api::{
    check_input, numerical, numerics, Embedder, FeatureScores, FitInput, Fitted, MethodError, Output, OutputKind, ParamMap, Result, StopReason, Trace,
};
use ndarray::{concatenate, Array1, Array2, ArrayView2, Axis};
use structdr_linalg::{diag_lowrank_bottom, eigh, eigh_bottom, LowRankEigOptions};
use structdr_numerics::neighbours::knn;
use structdr_numerics::optim::projections::project_simplex;

const NAME: &str = "sogfs";
/// The code's threshold on the sum of the c smallest Laplacian eigenvalues.
pub const ZERO_EIG_C: f64 = 1e-9;
/// The code's threshold on the sum of the c + 1 smallest.
pub const ZERO_EIG_C1: f64 = 1e-11;
/// The W step solves its eigenproblem iteratively (module doc, "The W-step eigenproblem") from
/// this many features on, when D >= 2 N as well.
pub const ITERATIVE_MIN_D: usize = 256;
/// Relative gap `(theta_{m+1} - theta_m) / scale` below which the bottom-m subspace counts as
/// not determined and the dense solver decides (as it always did).
pub const DEGENERATE_GAP: f64 = 1e-8;

declare_params! {
    /// SOGFS parameters (Nie, Zhu & Li 2016; Nie's code defaults).
    #[derive(Debug, Clone)]
    pub struct Sogfs {
        /// Number of clusters c (components the graph is driven to).
        pub n_clusters: usize = int("n_clusters", 1, 3, "number of connected components c the learned graph is driven to (the class count; code default 3)"),
        /// Projection dimension m (columns of W).
        pub dim: usize = int("dim", 1, 4, "columns m of the projection W, m <= D (code default 4)"),
        /// `gamma > 0`: l2,1 weight (the code's scaling).
        pub gamma: f64 = positive("gamma", 100.0, "l2,1 weight on W in the code's scaling, Tr(W^T X^T L X W) + gamma ||W||_{2,1} (code default 100; the paper's gamma is twice this)"),
        /// Neighbours per row of S.
        pub k: usize = int("k", 1, 5, "neighbours per row of the learned graph S (code default 5)"),
        /// Outer iteration cap.
        pub max_iter: usize = int("max_iter", 1, 50, "outer iteration cap (code: 50)"),
        /// Reweighting steps per W step.
        pub inner_iter: usize = int("inner_iter", 1, 10, "l2,1 reweighting steps per W step, each one D x D eigenproblem (code: up to 100, stopping at an absolute change of 1e-6)"),
        // read by the evaluation, not the fit
        _ = super::common::n_selected(),
        /// Whether lambda follows the eigengap (the code's rule); false keeps lambda = r (tests).
        pub adaptive: bool = fixed(true),
        /// Whether every W-step eigenproblem is solved densely (tests; module doc).
        pub dense_eig: bool = fixed(false),
    }
}

/// What [`Sogfs::solve`] returns.
#[derive(Debug, Clone)]
pub struct SogfsSolution {
    /// Projection W (D x m), orthonormal columns.
    pub w: Array2<f64>,
    /// Embedding F (N x c).
    pub f: Array2<f64>,
    /// The symmetrised learned graph `A = (S + S^T)/2`.
    pub graph: SparseGraph,
    /// J after each iteration (under that iteration's lambda).
    pub history: Vec<f64>,
    /// lambda used in each iteration.
    pub lambdas: Vec<f64>,
    /// r (the code's alpha).
    pub r: f64,
    /// Iterations run.
    pub iterations: usize,
    /// Whether the graph reached exactly c components.
    pub converged: bool,
    /// Sum of the c smallest Laplacian eigenvalues at the end.
    pub eig_sum: f64,
    /// How the W-step eigenproblems were solved.
    pub eig_counts: EigCounts,
}

/// How many W-step eigenproblems each solver handled (module doc, "The W-step eigenproblem").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EigCounts {
    /// Solved by the iterative diagonal-plus-low-rank solver.
    pub iterative: usize,
    /// Solved densely because the problem is small or not wide.
    pub dense: usize,
    /// Solved densely after the iterative solver found the cut degenerate.
    pub degenerate: usize,
    /// Solved densely after the iterative solver did not converge.
    pub not_converged: usize,
}

/// Centres every feature and scales it to unit norm (`1 / sqrt(||x_f||^2 + eps)`, the code's).
pub fn normalise_features(x: ArrayView2<f64>) -> Array2<f64> {
    let mean = x.mean_axis(Axis(0)).expect("n > 0");
    let mut xc = &x - &mean.view().insert_axis(Axis(0));
    let scale = xc.map_axis(Axis(0), |c| 1.0 / (c.dot(&c) + f64::EPSILON).sqrt());
    xc *= &scale.view().insert_axis(Axis(0));
    xc
}

/// `A = (S + S^T)/2` from the rows of S as `(neighbours, weights)`.
fn symmetrise(rows: &[(Vec<usize>, Vec<f64>)]) -> SparseGraph {
    let edges: Vec<(usize, usize, f64)> = rows
        .iter()
        .enumerate()
        .flat_map(|(i, (nb, s))| nb.iter().zip(s).filter(|(_, &v)| v > 0.0).map(move |(&j, &v)| (i.min(j), i.max(j), 0.5 * v)))
        .collect();
    SparseGraph::from_edges(rows.len(), &edges)
}

/// `1/2 sum_ij s_ij (||z_i - z_j||^2) + r s_ij^2` over the rows of S, z the rows of `Z`.
fn s_terms(rows: &[(Vec<usize>, Vec<f64>)], z: ArrayView2<f64>, r: f64) -> f64 {
    let mut t = 0.0;
    for (i, (nb, s)) in rows.iter().enumerate() {
        for (&j, &v) in nb.iter().zip(s) {
            let d: f64 = z.row(i).iter().zip(z.row(j)).map(|(a, b)| (a - b) * (a - b)).sum();
            t += v * d + r * v * v;
        }
    }
    0.5 * t
}

/// `Tr(W^T M W) + gamma ||W||_{2,1}`.
fn w_objective(m: &Array2<f64>, w: &Array2<f64>, gamma: f64) -> f64 {
    (w * &m.dot(w)).sum() + gamma * row_norms(w.view()).sum()
}

impl Sogfs {
    /// The W step (step 2): returns W and updates the reweighting `q` in place; `prev` (the last
    /// W) warm-starts the iterative eigensolver, `counts` records which solver ran.
    pub fn w_step(
        &self,
        x: ArrayView2<f64>,
        graph: &SparseGraph,
        q: &mut Array1<f64>,
        prev: Option<ArrayView2<f64>>,
        counts: &mut EigCounts,
    ) -> Result<Array2<f64>> {
        let (n, d) = x.dim();
        let dense_m = || {
            let lx = graph.laplacian_mul(x);
            let m = x.t().dot(&lx);
            (&m + &m.t()) * 0.5
        };
        let dense_solve = |m: &Array2<f64>, q: &Array1<f64>| -> Result<Array2<f64>> {
            let mut a = m.clone();
            for (f, &qf) in q.iter().enumerate() {
                a[[f, f]] += self.gamma * qf;
            }
            Ok(eigh_bottom(a.view(), self.dim).map_err(numerical(NAME))?.vectors)
        };
        let mut prev_obj = f64::NAN;
        let mut w = Array2::zeros((d, self.dim));
        if self.dense_eig || d < ITERATIVE_MIN_D || d < 2 * n || self.dim + 1 > d {
            let m = dense_m();
            for _ in 0..self.inner_iter {
                w = dense_solve(&m, q)?;
                counts.dense += 1;
                *q = w.map_axis(Axis(1), |r| 0.5 / (r.dot(&r) + f64::EPSILON).sqrt());
                let obj = w_objective(&m, &w, self.gamma);
                if (prev_obj - obj).abs() <= 1e-6 * obj.abs() {
                    break;
                }
                prev_obj = obj;
            }
            return Ok(w);
        }
        // X^T L X = B B^T, B = X^T C, L = C C^T (positive part of the N x N eigendecomposition)
        let le = eigh(graph.dense_laplacian().view()).map_err(numerical(NAME))?;
        let cols: Vec<usize> = (0..n).filter(|&i| le.values[i] > 0.0).collect();
        let mut c = le.vectors.select(Axis(1), &cols);
        for (j, &i) in cols.iter().enumerate() {
            c.column_mut(j).mapv_inplace(|v| v * le.values[i].sqrt());
        }
        let b = x.t().dot(&c);
        let mut m_dense: Option<Array2<f64>> = None;
        let opts = LowRankEigOptions::default();
        let mut start: Option<Array2<f64>> = prev.map(|p| p.to_owned());
        for _ in 0..self.inner_iter {
            let diag = q.mapv(|qf| self.gamma * qf);
            let e = diag_lowrank_bottom(diag.view(), b.view(), self.dim, start.as_ref().map(|s| s.view()), &opts).map_err(numerical(NAME))?;
            w = if e.converged && e.relative_gap() > DEGENERATE_GAP {
                counts.iterative += 1;
                e.vectors
            } else {
                if e.relative_gap() <= DEGENERATE_GAP {
                    counts.degenerate += 1;
                } else {
                    counts.not_converged += 1;
                }
                let m = m_dense.get_or_insert_with(dense_m);
                dense_solve(m, q)?
            };
            *q = w.map_axis(Axis(1), |r| 0.5 / (r.dot(&r) + f64::EPSILON).sqrt());
            // Tr(W^T X^T L X W) + gamma ||W||_{2,1}, the trace as ||B^T W||_F^2
            let obj = b.t().dot(&w).mapv(|v| v * v).sum() + self.gamma * row_norms(w.view()).sum();
            start = Some(w.clone());
            if (prev_obj - obj).abs() <= 1e-6 * obj.abs() {
                break;
            }
            prev_obj = obj;
        }
        Ok(w)
    }

    /// The c + 1 bottom eigenpairs of `L_A` (dense, N x N).
    fn spectrum(&self, graph: &SparseGraph) -> Result<(Array2<f64>, Array1<f64>)> {
        let c = self.n_clusters;
        let e = eigh_bottom(graph.dense_laplacian().view(), (c + 1).min(graph.n())).map_err(numerical(NAME))?;
        Ok((e.vectors.slice(ndarray::s![.., ..c]).to_owned(), e.values))
    }

    /// Runs the scheme of the module doc on `x` (normalised inside).
    pub fn solve(&self, x: ArrayView2<f64>) -> Result<SogfsSolution> {
        let (n, d) = x.dim();
        check_clusters(NAME, n, self.n_clusters, self.k + 1)?;
        crate::api::check_dense_size(NAME, n)?;
        if self.dim > d {
            return Err(MethodError::Input { method: NAME, reason: format!("dim = {} exceeds the number of features D = {d}", self.dim) });
        }
        let x = normalise_features(x);
        let k = self.k;
        // initial S: adaptive neighbours on X
        let g0 = knn(x.view(), k + 1).map_err(numerics(NAME))?;
        let mut rows = Vec::with_capacity(n);
        let mut rr = 0.0;
        for i in 0..n {
            let dd = g0.sq_dists.row(i);
            let dk1 = dd[k];
            let sum_k: f64 = dd.iter().take(k).sum();
            let denom = k as f64 * dk1 - sum_k;
            rr += 0.5 * denom;
            let nb: Vec<usize> = g0.indices.row(i).iter().take(k).copied().collect();
            let s: Vec<f64> = if denom > 0.0 { dd.iter().take(k).map(|&v| (dk1 - v) / denom).collect() } else { vec![1.0 / k as f64; k] };
            rows.push((nb, s));
        }
        let r = rr / n as f64;
        if !(r > 0.0 && r.is_finite()) {
            return Err(MethodError::Degenerate {
                method: NAME,
                reason: format!("adaptive-neighbour scale r = {r:e}: every sample's k + 1 nearest neighbours are equidistant (duplicate or constant data)"),
            });
        }
        let mut lambda = r;
        let mut graph = symmetrise(&rows);
        let (mut f, _) = self.spectrum(&graph)?;
        let mut q = Array1::<f64>::ones(d);
        let mut eig_counts = EigCounts::default();
        let mut w = self.w_step(x.view(), &graph, &mut q, None, &mut eig_counts)?;

        let mut history = Vec::new();
        let mut lambdas = Vec::new();
        let (mut converged, mut iterations, mut eig_sum) = (false, 0, f64::NAN);
        for _ in 0..self.max_iter {
            iterations += 1;
            // 1: S on the k nearest rows of Z = [X W, sqrt(lambda) F]
            let z = concatenate(Axis(1), &[x.dot(&w).view(), (&f * lambda.sqrt()).view()]).expect("same rows");
            let nn = knn(z.view(), k).map_err(numerics(NAME))?;
            rows.clear();
            for i in 0..n {
                let mut v: Vec<f64> = nn.sq_dists.row(i).iter().map(|&dz| -dz / (2.0 * r)).collect();
                project_simplex(&mut v, 1.0);
                rows.push((nn.indices.row(i).to_vec(), v));
            }
            graph = symmetrise(&rows);
            // 2: W
            w = self.w_step(x.view(), &graph, &mut q, Some(w.view()), &mut eig_counts)?;
            // 3: F and the eigengap
            let f_old = f.clone();
            let (f_new, ev) = self.spectrum(&graph)?;
            f = f_new;
            let c = self.n_clusters;
            let fn1: f64 = ev.iter().take(c).sum();
            let fn2: f64 = ev.iter().take(c + 1).sum();
            eig_sum = fn1;
            let z = concatenate(Axis(1), &[x.dot(&w).view(), (&f * lambda.sqrt()).view()]).expect("same rows");
            let j = s_terms(&rows, z.view(), r) + self.gamma * row_norms(w.view()).sum();
            if !j.is_finite() {
                return Err(MethodError::Degenerate { method: NAME, reason: format!("the objective is not finite at iteration {iterations}") });
            }
            history.push(j);
            lambdas.push(lambda);
            structdr_numerics::progress::report(history.len(), j);
            if !self.adaptive {
                continue;
            }
            if fn1 > ZERO_EIG_C {
                lambda *= 2.0;
            } else if fn2 < ZERO_EIG_C1 {
                lambda /= 2.0;
                f = f_old;
            } else {
                converged = true;
                break;
            }
        }
        Ok(SogfsSolution { w, f, graph, history, lambdas, r, iterations, converged, eig_sum, eig_counts })
    }
}

impl Embedder for Sogfs {
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
        // Constant features are left out of the fit (version 3): after centring such a feature
        // is a zero row and column of X^T L_A X, so its unit vector is an exact null vector of
        // the W step, and which null vector the eigensolver returns (possibly a whole column of
        // W on the constant feature, which then ranked first) was rounding, OpenBLAS's thread
        // count included. They score 0 and rank last, by index. Data without constant features
        // take exactly the path of version 2.
        let constant = constant_features(x);
        let varying: Vec<usize> = (0..x.ncols()).filter(|j| constant.binary_search(j).is_err()).collect();
        if self.dim <= x.ncols() && varying.len() < self.dim.max(1) {
            return Err(MethodError::Degenerate {
                method: NAME,
                reason: format!(
                    "only {} of the {} features vary, fewer than dim = {}: the other {} are constant",
                    varying.len(),
                    x.ncols(),
                    self.dim,
                    constant.len()
                ),
            });
        }
        // (row-major like the caller's data: `select` along columns returns column-major)
        let sol = if constant.is_empty() { self.solve(x)? } else { self.solve(x.select(Axis(1), &varying).as_standard_layout().view())? };
        let fitted_scores = row_norms(sol.w.view());
        let mut ranking: Vec<usize> = rank_by_weight(fitted_scores.view()).into_iter().map(|t| varying[t]).collect();
        ranking.extend_from_slice(&constant);
        let mut scores = Array1::<f64>::zeros(x.ncols());
        for (&j, &v) in varying.iter().zip(fitted_scores.iter()) {
            scores[j] = v;
        }
        let stop = if self.adaptive {
            StopReason::classify(sol.converged, sol.iterations, self.max_iter, Some(sol.eig_sum), Some(ZERO_EIG_C), "")
        } else {
            StopReason::FixedSchedule { iterations: sol.iterations }
        };
        let ec = sol.eig_counts;
        let notes = vec![
            format!(
                "r = {:.6e}; lambda {:.3e} -> {:.3e}; sum of the {} smallest Laplacian eigenvalues {:.3e}",
                sol.r,
                sol.lambdas.first().copied().unwrap_or(f64::NAN),
                sol.lambdas.last().copied().unwrap_or(f64::NAN),
                self.n_clusters,
                sol.eig_sum
            ),
            format!(
                "W-step eigenproblems: {} iterative (diagonal + low rank), {} dense, {} dense at a degenerate cut, {} dense after the iteration did not converge",
                ec.iterative, ec.dense, ec.degenerate, ec.not_converged
            ),
        ];
        let mut fitted =
            Fitted::new(Output::FeatureScores(FeatureScores { weights: scores, ranking }), Trace::iterative(sol.history, sol.iterations, stop, ""));
        fitted.graph = Some(sol.graph.to_graph());
        fitted.notes = notes;
        if !constant.is_empty() {
            let shown: Vec<String> = constant.iter().take(10).map(|j| j.to_string()).collect();
            fitted.notes.push(format!("{} constant feature(s) left out of the fit, scored 0 and ranked last (e.g. {})", constant.len(), shown.join(", ")));
        }
        Ok(fitted)
    }
}

pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: NAME,
        summary: "SOGFS feature selection: min over W (W^T W = I), S (rows on the simplex, k neighbours) and F (F^T F = I) of sum_ij s_ij ||W^T x_i - W^T x_j||^2 + r s_ij^2 + gamma ||W||_{2,1} + lambda-weighted Tr(F^T L_S F), lambda adapted until S has n_clusters components; feature scores ||w_i||_2.",
        reference: "Nie, Zhu & Li, Unsupervised Feature Selection with Structured Graph Optimization, AAAI 2016; Nie's code (SOGFS.m, InterationW.m)",
        // 3: constant features are left out of the fit, score 0 and rank last (the same bits on
        // data without them)
        version: 3,
        output: OutputKind::FeatureScores,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: false,
        params: Sogfs::schema(()),
        build: |p| declare::build::<Sogfs>(NAME, (), p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn clusters(n: usize, noise: usize, seed: u64) -> Array2<f64> {
        crate::testing::three_clusters(n, noise, seed).0
    }

    #[test]
    fn objective_is_monotone_at_fixed_lambda_and_between_lambda_changes() {
        let x = clusters(45, 9, 2);
        let fixed = Sogfs { adaptive: false, max_iter: 15, dim: 3, ..Sogfs::default() };
        let sol = fixed.solve(x.view()).unwrap();
        for t in 1..sol.history.len() {
            let (a, b) = (sol.history[t - 1], sol.history[t]);
            assert!(b <= a + 1e-10 * a.abs(), "fixed lambda, iteration {t}: {b} > {a}");
        }
        let sol = Sogfs { dim: 3, ..Sogfs::default() }.solve(x.view()).unwrap();
        for t in 1..sol.history.len() {
            if sol.lambdas[t] == sol.lambdas[t - 1] {
                assert!(sol.history[t] <= sol.history[t - 1] * (1.0 + 1e-10), "iteration {t}");
            }
        }
        // the informative features rank first
        let s = row_norms(sol.w.view());
        let mut top = rank_by_weight(s.view())[..3].to_vec();
        top.sort();
        assert_eq!(top, vec![0, 1, 2], "scores {s}");
        let wtw = sol.w.t().dot(&sol.w);
        assert!((wtw - Array2::<f64>::eye(3)).iter().all(|v| v.abs() < 1e-10));
    }

    #[test]
    fn iterative_w_step_matches_the_dense_one_on_wide_data() {
        // D = 300 >= ITERATIVE_MIN_D and >= 2 N: the W step's eigenproblems go to the
        // diagonal-plus-low-rank solver, except the first (Q = I: the eigenvalue gamma has
        // multiplicity >= D - N + 1, the cut is degenerate and the dense solver decides)
        let x = clusters(60, 297, 4);
        let base = Sogfs { n_clusters: 3, dim: 3, max_iter: 8, ..Sogfs::default() };
        let it = base.solve(x.view()).unwrap();
        let de = Sogfs { dense_eig: true, ..base.clone() }.solve(x.view()).unwrap();
        assert_eq!(de.eig_counts.iterative + de.eig_counts.degenerate + de.eig_counts.not_converged, 0);
        assert!(it.eig_counts.iterative > 0 && it.eig_counts.dense == 0, "{:?}", it.eig_counts);
        assert_eq!(it.eig_counts.degenerate, 1, "{:?}", it.eig_counts);
        assert_eq!(it.eig_counts.not_converged, 0, "{:?}", it.eig_counts);
        assert_eq!(it.iterations, de.iterations);
        assert_eq!(it.lambdas, de.lambdas);
        for (a, b) in it.history.iter().zip(&de.history) {
            assert!((a - b).abs() <= 1e-9 * b.abs(), "objective {a} vs {b}");
        }
        let (si, sd) = (row_norms(it.w.view()), row_norms(de.w.view()));
        let top = sd.iter().cloned().fold(0.0, f64::max);
        for (a, b) in si.iter().zip(&sd) {
            assert!((a - b).abs() <= 1e-8 * top, "score {a} vs {b}");
        }
        // the same ranking, up to the order of features whose scores agree within the tolerance
        // above (a tie at 1e-8 may break either way: which depends on BLAS kernels and threads)
        let (ri, rd) = (rank_by_weight(si.view()), rank_by_weight(sd.view()));
        for (k, (&a, &b)) in ri[..20].iter().zip(&rd[..20]).enumerate() {
            assert!(a == b || (sd[a] - sd[b]).abs() <= 1e-8 * top, "rank {k}: feature {a} ({}) vs {b} ({})", sd[a], sd[b]);
        }
        // the same subspace: Tr(W^T A W) is basis-free, so compare the projectors
        let p = |w: &Array2<f64>| w.dot(&w.t());
        assert!((p(&it.w) - p(&de.w)).iter().all(|v| v.abs() < 1e-8));
        // bit-identical for any rayon pool
        let m = Sogfs { max_iter: 4, ..base.clone() };
        let pool = |t: usize| rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap();
        let one = pool(1).install(|| m.fit(x.view(), 0).unwrap());
        let two = pool(2).install(|| m.fit(x.view(), 0).unwrap());
        assert_eq!(one.output, two.output);
        assert!(one.notes[1].contains("iterative"), "{:?}", one.notes);
    }

    #[test]
    fn s_rows_satisfy_the_simplex_projection_kkt_conditions() {
        // s_i = argmin <d, s> + r ||s||^2 on the simplex: s_j = max(0, -(d_j)/(2r) - tau) with one
        // tau: on the support d_j + 2 r s_j is constant (= -2 r tau), off it d_j >= that constant
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
        for trial in 0..200 {
            let k = 2 + trial % 6;
            let r = [0.1, 1.0, 10.0][trial % 3];
            let d: Vec<f64> = (0..k).map(|_| rng.gen_range(0.0..3.0)).collect();
            let mut s: Vec<f64> = d.iter().map(|&v| -v / (2.0 * r)).collect();
            project_simplex(&mut s, 1.0);
            assert!((s.iter().sum::<f64>() - 1.0).abs() < 1e-12 && s.iter().all(|&v| v >= 0.0));
            let mu = s.iter().zip(&d).filter(|(&v, _)| v > 0.0).map(|(&v, &dj)| dj + 2.0 * r * v).next().unwrap();
            for (&v, &dj) in s.iter().zip(&d) {
                if v > 0.0 {
                    assert!((dj + 2.0 * r * v - mu).abs() < 1e-12 * mu.abs().max(1.0));
                } else {
                    assert!(dj >= mu - 1e-12 * mu.abs().max(1.0));
                }
            }
        }
    }

    #[test]
    fn fit_contract_and_bad_input() {
        let x = clusters(30, 5, 3);
        let m = Sogfs::default();
        let f = m.fit(x.view(), 0).unwrap();
        let s = f.feature_scores().unwrap();
        let mut r = s.ranking.clone();
        r.sort();
        assert_eq!(r, (0..8).collect::<Vec<_>>());
        let pool = |t: usize| rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap();
        let one = pool(1).install(|| m.fit(x.view(), 0).unwrap());
        let two = pool(2).install(|| m.fit(x.view(), 0).unwrap());
        assert_eq!(one.output, two.output);
        assert!(matches!(Sogfs { n_clusters: 30, ..Sogfs::default() }.fit(x.view(), 0), Err(MethodError::Input { .. })));
        assert!(matches!(Sogfs { dim: 9, ..Sogfs::default() }.fit(x.view(), 0), Err(MethodError::Input { .. })));
        let mut bad = x.clone();
        bad[[0, 0]] = f64::NAN;
        assert!(matches!(m.fit(bad.view(), 0), Err(MethodError::Input { .. })));
        // a constant feature is left out: score 0, ranked last, at 1 and 2 threads alike (with it
        // in the fit, version 2 ranked it first at one BLAS thread); the other features get
        // exactly the scores of a fit without the column
        let mut xc = x.clone();
        xc.column_mut(7).fill(2.0);
        let sc = pool(1).install(|| m.fit(xc.view(), 0).unwrap());
        let fs = sc.feature_scores().unwrap();
        assert_eq!((fs.weights[7], *fs.ranking.last().unwrap()), (0.0, 7), "{fs:?}");
        assert!(sc.notes.iter().any(|n| n.starts_with("1 constant feature(s) left out")), "{:?}", sc.notes);
        assert_eq!(sc.output, pool(2).install(|| m.fit(xc.view(), 0).unwrap()).output);
        let without = m.fit(x.slice(ndarray::s![.., ..7]).to_owned().view(), 0).unwrap();
        let ws = without.feature_scores().unwrap();
        assert_eq!(fs.weights.slice(ndarray::s![..7]), ws.weights.view());
        assert_eq!(&fs.ranking[..7], &ws.ranking[..]);
        // fewer varying features than dim: degenerate, saying so
        let mut flat = x.clone();
        for j in 1..8 {
            flat.column_mut(j).fill(1.0);
        }
        let err = Sogfs { dim: 2, ..Sogfs::default() }.fit(flat.view(), 0).unwrap_err();
        assert!(matches!(err, MethodError::Degenerate { .. }) && err.to_string().contains("only 1 of the 8 features vary"), "{err}");
    }
}
