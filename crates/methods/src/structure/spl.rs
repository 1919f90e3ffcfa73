//! Structured projection learning, SPL (Wang, *Probabilistic Dimensionality Reduction via
//! Structure Learning*, §3.3, Algorithm 1).
//!
//! Data `Y` (N x D, samples in rows, centred here), target dimension d, neighbourhood graph `E`
//! (the symmetrised K-NN graph, [`structdr_numerics::neighbours::symmetrised_edges`]), `phi_ij = ||y_i - y_j||^2`.
//! The dual variable is a symmetric non-negative `S` supported on `E`, one value `s_e` per edge.
//! With `L = diag(S 1) - S` and
//!
//! `Q = L + (gamma + 1)/4 I` (sparse, symmetric positive definite for every `S >= 0`),
//!
//! the dual objective (eq. 17 divided out: `(gamma+1) I + 4L = 4Q`, constants dropped) is
//!
//! `f(S) = d/2 log det Q - sum_{i,j} s_ij phi_ij - 1/(4C) ||S||_F^2 - max_{W^T W = I} gamma^2/8 Tr(W^T Y^T Q^-1 Y W)`
//!
//! where the sums run over the full symmetric `S` (each edge twice): `sum_{i,j} s_ij phi_ij = 2
//! sum_e s_e phi_e`, `||S||_F^2 = 2 sum_e s_e^2`. The maximising `W` holds the top-d eigenvectors
//! of `Y^T Q^-1 Y` (eq. 18-19), so the last term is `gamma^2/8` times the sum of its d largest
//! eigenvalues. `f` is concave in `S` (log det is concave, the last term is a maximum of matrix
//! fractional functions, which are convex), and its (super)gradient per edge `e = (i, j)` is
//! eq. (20):
//!
//! `df/ds_e = d/2 Tr(Q^-1 A_e) + gamma^2/8 ||z_i - z_j||^2 - s_e / C - 2 phi_e`,
//! `Tr(Q^-1 A_e) = (Q^-1)_ii + (Q^-1)_jj - 2 (Q^-1)_ij`, `Z = Q^-1 Y W`
//!
//! (eq. 20's `1/2 Tr(Q^-1 (d I + gamma^2/4 P) A_e)` with `P = Y W W^T Y^T Q^-1` written out).
//! Algorithm 1 ascends it by projected subgradient steps `s <- max(0, s + (1/t) df/ds)` from
//! `S = 0`. The embedding is the MAP estimate `X = (gamma/4) Q^-1 Y W` (eq. 22); for `gamma = 0`
//! that is zero and the embedding is kernel PCA on `Sigma = (4L + I)^-1 = Q^-1 / 4` (eq. 23).
//!
//! Cost per iteration: one supernodal sparse Cholesky of `Q` on the fixed pattern of the graph
//! ([`structdr_linalg::sparse`], ordering (AMD on K-NN graphs) and supernodes chosen once), `log det Q`, the half solve `L^-1 P Y` (N x D),
//! the D x D eigenproblem (or, when D > N, the N x N Gram form `B B^T` with `B = L^-1 P Y`:
//! the same non-zero eigenvalues, `W = B^T U diag(mu)^-1/2`), the solve `Q^-1 Y W` and the
//! selected inversion of `Q` for exactly the diagonal and edge entries of `Q^-1` that eq. (20)
//! needs. No dense N x N matrix is formed, except the kernel of the final `gamma = 0` KPCA and
//! the Gram matrix of the D > N case.
//!
//! Solvers (`solver`):
//! - `projected` (default) / `lbfgsb`: the dual solved to its optimum as the bound-constrained
//!   problem `min_{s >= 0} -f(s)` (bounds `[0, inf)`) by the two-metric projected L-BFGS or the
//!   Fortran L-BFGS-B of [`structdr_numerics::optim`], the solvers of MPME and ESL, from `S = 0`.
//!   Stop when the KKT residual `||proj grad||_inf` (`proj g_e = max(0, s_e + g_e) - s_e`) falls
//!   below `tol` times its value at `S = 0`, when the relative objective change is below
//!   `1e3 eps_mach`, or after `max_iter` iterations.
//! - `subgradient`: Algorithm 1 literally, projected steps `s <- max(0, s + (1/t) df/ds)` from
//!   `S = 0`, stopped when `|f_t - f_{t-1}| <= tol max(1, |f_t|)` or after `max_iter` steps. Kept
//!   for parity: the first step overshoots (the gradient at 0 is `4d - 2 phi`, so every short
//!   edge jumps to `~4d`) and the harmonic steps return too slowly; on vehicle (K = 5, C = 1e3,
//!   gamma = 1e-3) it is far from the optimum after thousands of steps (docs/parity/spl.md).
//!
//! The trace records `f` (maximised) at `S = 0` and after every iteration, and the final KKT
//! residual `||proj grad||_inf`.

use super::pair_dual::{solver_label, solver_memory, LBFGSB_FACTR};
use crate::api::declare::{self, declare_params, Declared, ParamChoice};
use crate::api::info::{choice, dim, float_in, int, MethodInfo};
use crate::api::params::{closed, open};
use crate::api::OutputKind;
use crate::api::{check_input, numerical, numerics, Embedder, FitInput, Fitted, Graph, MethodError, Output, ParamMap, Result, Trace};
use ndarray::{Array2, ArrayView2, Axis};
use structdr_linalg::sparse::{Ordering, SparseError, SymbolicCholesky};
use structdr_linalg::{canonicalize_signs, eigh_top};
use structdr_numerics::neighbours::{knn, symmetrised_edges};
use structdr_numerics::optim::{minimize, projected_gradient_norm, BoundedOptions, Solver};

const NAME: &str = "spl";

fn sparse_err(e: SparseError) -> MethodError {
    MethodError::Input { method: NAME, reason: format!("{e}") }
}

declare_params! {
    /// SPL with the parameters of Algorithm 1.
    #[derive(Debug, Clone)]
    pub struct Spl {
        /// Target dimension d.
        pub dim: usize = dim(),
        /// Neighbours per sample of the K-NN graph (symmetrised), `1 <= k < N`.
        pub k: usize = int("k", 1, 10, "neighbours per sample of the K-NN graph that supports S (symmetrised: i ~ j if j in kNN(i) or i in kNN(j))"),
        /// Distance-violation penalty `C > 0` (`inf`: no violation allowed; the `1/(4C) ||S||^2` term vanishes).
        pub c: f64 = float_in("C", open(0.0), closed(f64::INFINITY), 1e3, "distance-violation penalty C > 0: the dual carries -||S||_F^2/(4C) (xi_ij = s_ij/(2C)); inf = no violation allowed"),
        /// Noise precision `gamma >= 0`; `0` embeds by KPCA on `(4L + I)^-1`.
        pub gamma: f64 = float_in("gamma", closed(0.0), open(f64::INFINITY), 1e-3, "noise precision gamma >= 0 of y = W x + eps; 0 = embed by KPCA on (4L + I)^-1"),
        /// Iteration limit of the solver.
        pub max_iter: usize = int("max_iter", 0, 3000, "iteration limit of the solver (iterations of projected / lbfgsb, steps of subgradient)"),
        /// Tolerance of the solver's stopping rule (module doc: relative KKT residual for the
        /// bounded solvers, relative objective change for `subgradient`).
        pub tol: f64 = float_in("tol", closed(0.0), open(f64::INFINITY), 1e-7, "projected / lbfgsb: stop when the KKT residual ||proj grad||_inf <= tol x its value at S = 0; subgradient: stop when |f_t - f_{t-1}| <= tol max(1, |f_t|)"),
        /// How the dual is maximised.
        pub solver: SplSolver = choice("solver", SPL_SOLVER_NAMES, "projected", "dual solver: projected = two-metric projected L-BFGS on s >= 0 (m = 5, converges); lbfgsb = Fortran L-BFGS-B 3.0 (m = 10); subgradient = Algorithm 1's steps 1/t from S = 0 (the paper's; does not reach the optimum on real data)"),
    }
}

/// How SPL maximises its dual (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplSolver {
    /// Algorithm 1's projected subgradient steps with step size `1/t` (does not converge on
    /// real data; kept for parity).
    Subgradient,
    /// `min_{s >= 0} -f(s)` by a bound-constrained quasi-Newton solver (converges to the optimum).
    Bounded(Solver),
}

/// Values of SPL's `solver` parameter.
pub const SPL_SOLVER_NAMES: &[&str] = &["projected", "lbfgsb", "subgradient"];

impl SplSolver {
    /// The parameter value naming this solver.
    pub fn name(self) -> &'static str {
        match self {
            SplSolver::Subgradient => "subgradient",
            SplSolver::Bounded(s) => s.name(),
        }
    }
    /// Parses [`SplSolver::name`].
    pub fn from_name(s: &str) -> Option<SplSolver> {
        if s == "subgradient" {
            Some(SplSolver::Subgradient)
        } else {
            Solver::from_name(s).map(SplSolver::Bounded)
        }
    }
}

impl ParamChoice for SplSolver {
    fn from_name(name: &str) -> Option<SplSolver> {
        SplSolver::from_name(name)
    }
    fn name(&self) -> &'static str {
        SplSolver::name(*self)
    }
}

/// Below this N the `Auto` backend is always sparse (both are fast; the sparse one is the
/// algorithm of record).
pub const DENSE_MIN_N: usize = 1000;

/// `Auto` picks the dense backend when `DENSE_FLOP_RATIO x flops(L) > N^3`. The sparse
/// iteration costs the factorisation plus the selected inversion, about `3 flops(L)`, at the rate
/// of the supernodal BLAS-3 kernels; the dense one `N^3` (`dpotrf` `N^3/3` + `dpotri` `2N^3/3`)
/// at full `dgemm` speed. Measured on 2 Zen 5 cores (SKYLAKEX kernels, N = 5000): supernodal
/// 9-18 GFLOP/s (small to large fronts), dense 35-57 GFLOP/s, so the break-even ratio is about
/// `3 x 57 / 17 = 10`. Uniform 16-D data (AMD: 7.8e9 flops, 35% fill) stays sparse and is faster
/// that way (1.6 s against 4.1 s dense per iteration, same loaded machine); letter (2.0e8 flops)
/// is far on the sparse side (about 50 ms against 4 s).
pub const DENSE_FLOP_RATIO: f64 = 10.0;

/// How `Q` is factored in every iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// [`Backend::Dense`] when the sparse factorisation + selected inversion is predicted slower
    /// by the flop estimate (`DENSE_FLOP_RATIO x flops(L) > N^3`, i.e. the sparse factor is
    /// nearly dense), `N >= DENSE_MIN_N` and `D <= N`, else [`Backend::Sparse`].
    Auto,
    /// Supernodal sparse Cholesky + selected inversion ([`structdr_linalg::sparse`]).
    Sparse,
    /// Dense LAPACK Cholesky (`dpotrf`) and the dense inverse (`dpotri`), of which only the
    /// diagonal and edge entries are read: O(N^3) per iteration but at BLAS-3 speed.
    Dense,
}

/// The SPL dual problem on a fixed graph: centred data, edges, `phi`, and the symbolic
/// factorisation of the pattern of `Q` (analysed once).
pub struct SplProblem {
    backend: Backend,
    /// Centred data (N x D).
    y: Array2<f64>,
    edges: Vec<(usize, usize)>,
    phi: Vec<f64>,
    sym: SymbolicCholesky,
    dim: usize,
    gamma: f64,
    c: f64,
}

/// Everything one evaluation of the dual at `S` gives.
#[derive(Debug, Clone)]
pub struct SplEval {
    /// `f(S)` (module doc; maximised).
    pub objective: f64,
    /// `df/ds_e` for every edge (eq. 20).
    pub grad: Vec<f64>,
    /// `log det Q`.
    pub log_det: f64,
    /// The d largest eigenvalues of `Y^T Q^-1 Y` (empty when `gamma = 0`: not needed).
    pub top_eigenvalues: Vec<f64>,
    /// `W` (D x d), `None` when `gamma = 0`.
    pub w: Option<Array2<f64>>,
    /// `Q^-1 Y W` (N x d), `None` when `gamma = 0`.
    pub qinv_yw: Option<Array2<f64>>,
}

impl SplProblem {
    /// Sets up the problem on data `x` (N x D, centred here) and graph `edges` (`(i, j, phi_ij)`,
    /// `i < j`, each pair once).
    pub fn new(x: ArrayView2<f64>, edges: &[(usize, usize, f64)], dim: usize, gamma: f64, c: f64) -> Result<SplProblem> {
        Self::with_backend(x, edges, dim, gamma, c, Backend::Auto)
    }

    /// [`SplProblem::new`] with a chosen [`Backend`] (`Auto` is resolved here).
    pub fn with_backend(x: ArrayView2<f64>, edges: &[(usize, usize, f64)], dim: usize, gamma: f64, c: f64, backend: Backend) -> Result<SplProblem> {
        let n = x.nrows();
        let mean = x.mean_axis(Axis(0)).ok_or_else(|| MethodError::Input { method: NAME, reason: "empty data".into() })?;
        let y = (&x - &mean.view().insert_axis(Axis(0))).as_standard_layout().to_owned();
        let e: Vec<(usize, usize)> = edges.iter().map(|&(i, j, _)| (i, j)).collect();
        let phi: Vec<f64> = edges.iter().map(|e| e.2).collect();
        let sym = SymbolicCholesky::analyze(n, &e, Ordering::Auto).map_err(sparse_err)?;
        let nf = n as f64;
        let backend = match backend {
            Backend::Auto if n >= DENSE_MIN_N && DENSE_FLOP_RATIO * sym.flops() > nf * nf * nf && x.ncols() <= n && n <= crate::api::DENSE_MAX_N => {
                Backend::Dense
            }
            Backend::Auto => Backend::Sparse,
            b => b,
        };
        if backend == Backend::Dense && x.ncols() > n {
            return Err(MethodError::Input { method: NAME, reason: "the dense backend needs D <= N".into() });
        }
        Ok(SplProblem { backend, y, edges: e, phi, sym, dim, gamma, c })
    }

    /// Number of edges (dual variables).
    pub fn n_edges(&self) -> usize {
        self.edges.len()
    }
    /// The edges `(i, j)`, aligned with the dual variables.
    pub fn edges(&self) -> &[(usize, usize)] {
        &self.edges
    }
    /// The backend in use (never `Auto`).
    pub fn backend(&self) -> Backend {
        self.backend
    }
    /// The symbolic factorisation of `Q`'s pattern (ordering, fill).
    pub fn symbolic(&self) -> &SymbolicCholesky {
        &self.sym
    }

    /// Diagonal and edge values of `Q = diag(S 1) - S + (gamma + 1)/4 I`.
    pub fn q_values(&self, s: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let n = self.y.nrows();
        let mut diag = vec![(self.gamma + 1.0) / 4.0; n];
        for (&(i, j), &v) in self.edges.iter().zip(s) {
            diag[i] += v;
            diag[j] += v;
        }
        (diag, s.iter().map(|v| -v).collect())
    }

    /// `sum_{i,j} s_ij phi_ij + 1/(4C) ||S||_F^2 = 2 sum_e s_e phi_e + sum_e s_e^2 / (2C)`.
    fn linear_quadratic(&self, s: &[f64]) -> f64 {
        let lin: f64 = s.iter().zip(&self.phi).map(|(a, b)| a * b).sum();
        let quad: f64 = if self.c.is_infinite() { 0.0 } else { s.iter().map(|v| v * v).sum::<f64>() / (2.0 * self.c) };
        2.0 * lin + quad
    }

    /// Evaluates `f`, its gradient (eq. 20) and `W`, `Q^-1 Y W` at `S` (`s >= 0`, one per edge).
    pub fn evaluate(&self, s: &[f64]) -> Result<SplEval> {
        if self.backend == Backend::Dense {
            return self.evaluate_dense(s);
        }
        let (diag, off) = self.q_values(s);
        let f = self.sym.factor(&diag, &off).map_err(sparse_err)?;
        let log_det = f.log_det();
        let (top, w, z) = if self.gamma > 0.0 {
            let (top, w) = self.top_subspace(&f)?;
            let z = f.solve(self.y.dot(&w).view());
            (top, Some(w), Some(z))
        } else {
            (Vec::new(), None, None)
        };
        let si = f.selected_inverse();
        let zd = si.diagonal();
        let ze = si.edge_values();
        Ok(self.assemble(s, |e, i, j| zd[i] + zd[j] - 2.0 * ze[e], log_det, top, w, z))
    }

    /// Objective and subgradient (eq. 20) from the per-edge trace `tr(Q^-1 A_ij) =
    /// (Q^-1)_ii + (Q^-1)_jj - 2 (Q^-1)_ij`, `log det Q`, the top-d eigenvalues, `W` and
    /// `Z = Q^-1 Y W`: `df/ds_ij = d/2 tr + gamma^2/8 ||z_i - z_j||^2 - s_ij / C - 2 phi_ij`.
    fn assemble(
        &self,
        s: &[f64],
        tr: impl Fn(usize, usize, usize) -> f64,
        log_det: f64,
        top: Vec<f64>,
        w: Option<Array2<f64>>,
        z: Option<Array2<f64>>,
    ) -> SplEval {
        let d = self.dim as f64;
        let g2 = self.gamma * self.gamma / 8.0;
        let inv_c = if self.c.is_infinite() { 0.0 } else { 1.0 / self.c };
        let grad: Vec<f64> = self
            .edges
            .iter()
            .enumerate()
            .map(|(e, &(i, j))| {
                let p = match &z {
                    Some(z) => z.row(i).iter().zip(z.row(j).iter()).map(|(a, b)| (a - b) * (a - b)).sum::<f64>(),
                    None => 0.0,
                };
                0.5 * d * tr(e, i, j) + g2 * p - inv_c * s[e] - 2.0 * self.phi[e]
            })
            .collect();
        let objective = 0.5 * d * log_det - self.linear_quadratic(s) - g2 * top.iter().sum::<f64>();
        SplEval { objective, grad, log_det, top_eigenvalues: top, w, qinv_yw: z }
    }

    /// `(log det Q, Q^-1)` densely (`dpotrf`, `dpotri`).
    fn dense_inverse(&self, s: &[f64]) -> Result<(f64, Array2<f64>)> {
        let n = self.y.nrows();
        let (diag, off) = self.q_values(s);
        let mut q = Array2::<f64>::zeros((n, n));
        for i in 0..n {
            q[[i, i]] = diag[i];
        }
        for (&(i, j), &v) in self.edges.iter().zip(&off) {
            q[[i, j]] = v;
            q[[j, i]] = v;
        }
        let ch = structdr_linalg::Cholesky::factor(q.view()).map_err(numerical(NAME))?;
        drop(q);
        Ok((ch.log_det(), ch.inverse().map_err(numerical(NAME))?))
    }

    /// The dense backend of [`Self::evaluate`]: `dpotrf`, `dpotri`, `Y^T Q^-1 Y` by GEMM.
    fn evaluate_dense(&self, s: &[f64]) -> Result<SplEval> {
        let (log_det, qi) = self.dense_inverse(s)?;
        let (top, w, z) = if self.gamma > 0.0 {
            let qy = qi.dot(&self.y);
            let m = self.y.t().dot(&qy);
            let m = (&m + &m.t()) * 0.5;
            let e = eigh_top(m.view(), self.dim).map_err(numerical(NAME))?;
            let z = qy.dot(&e.vectors);
            (e.values.to_vec(), Some(e.vectors), Some(z))
        } else {
            (Vec::new(), None, None)
        };
        Ok(self.assemble(s, |_, i, j| qi[[i, i]] + qi[[j, j]] - qi[[i, j]] - qi[[j, i]], log_det, top, w, z))
    }

    /// The top-d eigenpairs of `Y^T Q^-1 Y = B^T B`, `B = L^-1 P Y`: returns the eigenvalues
    /// (descending) and `W` (D x d). D x D form when D <= N, else the N x N Gram form.
    fn top_subspace(&self, f: &structdr_linalg::sparse::SparseCholesky<'_>) -> Result<(Vec<f64>, Array2<f64>)> {
        let b = f.half_solve(self.y.view());
        let (n, dd) = b.dim();
        if dd <= n {
            let m = b.t().dot(&b);
            let e = eigh_top(m.view(), self.dim).map_err(numerical(NAME))?;
            Ok((e.values.to_vec(), e.vectors))
        } else {
            let g = b.dot(&b.t());
            let e = eigh_top(g.view(), self.dim).map_err(numerical(NAME))?;
            let mut w = b.t().dot(&e.vectors);
            for (mut col, &mu) in w.columns_mut().into_iter().zip(e.values.iter()) {
                let norm = col.dot(&col).sqrt();
                if !(mu > 0.0 && norm > 0.0) {
                    return Err(MethodError::Input { method: NAME, reason: format!("Y^T Q^-1 Y has rank < dim = {} (D > N dual form)", self.dim) });
                }
                col.mapv_inplace(|v| v / norm);
            }
            Ok((e.values.to_vec(), w))
        }
    }

    /// One projected subgradient step of Algorithm 1: `s <- max(0, s + (1/t) grad)`.
    pub fn step(s: &mut [f64], t: usize, grad: &[f64]) {
        let a = 1.0 / t as f64;
        for (v, g) in s.iter_mut().zip(grad) {
            *v = (*v + a * g).max(0.0);
        }
    }

    /// Projected-gradient (KKT) residual `||max(0, s + g) - s||_inf` of the concave problem
    /// `max_{s >= 0} f(s)` (`g = df/ds`): 0 exactly at its maximiser. The same quantity as the
    /// bounded solvers' `projected_gradient_norm` of `-f`.
    pub fn kkt_residual(s: &[f64], grad: &[f64]) -> f64 {
        s.iter().zip(grad).map(|(v, g)| ((v + g).max(0.0) - v).abs()).fold(0.0, f64::max)
    }

    /// Algorithm 1: projected subgradient steps `s <- max(0, s + (1/t) g)` from `S = 0`.
    /// Returns `(s, evaluation at s, history of f, steps, why it stopped)`; the stopping rule's
    /// residual is the relative change `|f_t - f_{t-1}| / max(|f_t|, 1)`.
    fn solve_subgradient(&self, max_iter: usize, tol: f64) -> Result<(Vec<f64>, SplEval, Vec<f64>, usize, crate::api::StopReason)> {
        let mut s = vec![0.0f64; self.n_edges()];
        let mut eval = self.evaluate(&s)?;
        let mut history = vec![eval.objective];
        let mut converged = false;
        let mut iterations = 0;
        let mut change = None;
        for t in 1..=max_iter {
            SplProblem::step(&mut s, t, &eval.grad);
            let prev = eval.objective;
            eval = self.evaluate(&s)?;
            history.push(eval.objective);
            structdr_numerics::progress::report(history.len(), eval.objective);
            iterations = t;
            change = Some((eval.objective - prev).abs() / eval.objective.abs().max(1.0));
            if (eval.objective - prev).abs() <= tol * eval.objective.abs().max(1.0) {
                converged = true;
                break;
            }
        }
        Ok((s, eval, history, iterations, crate::api::StopReason::classify(converged, iterations, max_iter, change, Some(tol), "")))
    }

    /// `max_{s >= 0} f(s)` by `solver` on `-f` from `S = 0` (module doc). Returns `(s, evaluation
    /// at s, history of f, iterations, why it stopped, solver message)`; the stopping rule's
    /// residual is the KKT residual relative to its value at `S = 0`.
    fn solve_bounded(&self, solver: Solver, max_iter: usize, tol: f64) -> Result<(Vec<f64>, SplEval, Vec<f64>, usize, crate::api::StopReason, String)> {
        let n = self.n_edges();
        let zero = vec![0.0; n];
        let lower = vec![0.0; n];
        let upper = vec![f64::INFINITY; n];
        let eval0 = self.evaluate(&zero)?;
        let g0: Vec<f64> = eval0.grad.iter().map(|g| -g).collect();
        let pg0 = projected_gradient_norm(&zero, &g0, &lower, &upper);
        let opts = BoundedOptions { m: solver_memory(solver), max_iter, max_eval: 20 * max_iter.max(1) + 20, pgtol: tol * pg0, factr: LBFGSB_FACTR };
        let mut failure: Option<MethodError> = None;
        let r = minimize(
            solver,
            |s, g| match self.evaluate(s) {
                Ok(e) => {
                    for (gi, ei) in g.iter_mut().zip(&e.grad) {
                        *gi = -ei;
                    }
                    -e.objective
                }
                Err(e) => {
                    failure.get_or_insert(e);
                    f64::NAN
                }
            },
            &zero,
            &lower,
            &upper,
            &opts,
        );
        if let Some(e) = failure {
            return Err(e);
        }
        let r = r.map_err(|e| MethodError::Input { method: NAME, reason: e.to_string() })?;
        // W and Q^-1 Y W at the solution (the solver keeps only f and its gradient)
        let eval = self.evaluate(&r.x)?;
        let history = r.history.iter().map(|v| -v).collect();
        let relative = if pg0 > 0.0 { r.projected_gradient_norm / pg0 } else { 0.0 };
        let stop = crate::api::StopReason::classify(r.converged, r.iterations, max_iter, Some(relative), Some(tol), &r.message);
        Ok((r.x, eval, history, r.iterations, stop, r.message))
    }

    /// The embedding at `S`: `X = (gamma/4) Q^-1 Y W` (eq. 22) for `gamma > 0`, KPCA on
    /// `(4L + I)^-1 = Q^-1 / 4` for `gamma = 0` (eq. 23; the only dense N x N step).
    pub fn embedding(&self, s: &[f64], eval: &SplEval) -> Result<Array2<f64>> {
        let mut x = match &eval.qinv_yw {
            Some(z) => z * (self.gamma / 4.0),
            None => {
                let n = self.y.nrows();
                crate::api::check_dense_size(NAME, n)?;
                let sigma = if self.backend == Backend::Dense {
                    self.dense_inverse(s)?.1 * 0.25
                } else {
                    let (diag, off) = self.q_values(s);
                    let f = self.sym.factor(&diag, &off).map_err(sparse_err)?;
                    f.solve(Array2::<f64>::eye(n).view()) * 0.25
                };
                // symmetrise the round-off
                let sigma = (&sigma + &sigma.t()) * 0.5;
                structdr_numerics::spectral::kernel_pca(sigma, self.dim).map_err(numerics(NAME))?.0
            }
        };
        canonicalize_signs(&mut x);
        Ok(x)
    }
}

impl Spl {
    fn validate(&self, x: &ArrayView2<f64>) -> Result<()> {
        check_input(NAME, x, 2)?;
        let (n, dd) = x.dim();
        let bad = |reason: String| Err(MethodError::Input { method: NAME, reason });
        if self.k == 0 || self.k >= n {
            return bad(format!("too few points for k neighbours: N = {n} samples, k = {} (need 1 <= k < N)", self.k));
        }
        if self.dim == 0 || self.dim >= n {
            return bad(format!("dim = {} must be in [1, N - 1] = [1, {}]", self.dim, n - 1));
        }
        if self.gamma > 0.0 && self.dim > dd {
            return bad(format!("dim = {} exceeds the data dimension D = {dd} (W is D x d with orthonormal columns)", self.dim));
        }
        let mean = x.mean_axis(Axis(0)).expect("n > 0");
        if x.rows().into_iter().all(|r| r == mean) {
            return bad("constant data: every sample is the same point".into());
        }
        Ok(())
    }
}

impl Embedder for Spl {
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
        self.validate(&x)?;
        let n = x.nrows();
        let knn = knn(x, self.k).map_err(numerics(NAME))?;
        let edges = symmetrised_edges(&knn);
        if self.c.is_infinite() && matches!(self.solver, SplSolver::Bounded(_)) {
            // d/2 log det Q grows like log s_e on an edge with phi_e = 0 and nothing bounds it
            if let Some(&(i, j, _)) = edges.iter().find(|e| e.2 == 0.0) {
                return Err(MethodError::Input {
                    method: NAME,
                    reason: format!("samples {i} and {j} coincide (phi = 0): with C = inf the dual is unbounded; use a finite C or remove duplicates"),
                });
            }
        }
        let prob = SplProblem::new(x, &edges, self.dim, self.gamma, self.c)?;
        let (s, eval, history, iterations, stop, message) = match self.solver {
            SplSolver::Subgradient => {
                let (s, eval, history, iterations, stop) = prob.solve_subgradient(self.max_iter, self.tol)?;
                (s, eval, history, iterations, stop, String::new())
            }
            SplSolver::Bounded(solver) => prob.solve_bounded(solver, self.max_iter, self.tol)?,
        };
        let kkt = SplProblem::kkt_residual(&s, &eval.grad);
        let all_zero = s.iter().all(|&v| v == 0.0);
        if all_zero && self.gamma == 0.0 {
            // Q = I/4: the kernel (4L + I)^-1 = I has one N-fold eigenvalue, so KPCA has no answer
            return Err(MethodError::Degenerate {
                method: NAME,
                reason: format!(
                    "S = 0 is where the solver stopped (every edge's gradient 4d/(gamma+1) - 2 phi_ij <= 0 at S = 0 when the squared K-NN distances exceed {:.3}), so the gamma = 0 embedding, KPCA on (4L + I)^-1 = I, is undefined (all eigenvalues tie); rescale the data (squared K-NN distances of order d) or use gamma > 0 (scaled PCA at S = 0)",
                    2.0 * self.dim as f64 / (self.gamma + 1.0)
                ),
            });
        }
        let embedding = prob.embedding(&s, &eval)?;
        let active: Vec<(usize, usize, f64)> = prob.edges().iter().zip(&s).filter(|(_, &v)| v > 0.0).map(|(&(i, j), &v)| (i, j, v)).collect();
        let mut f = Fitted::new(Output::Embedding(embedding), Trace::iterative(history, iterations, stop, message).with_kkt_residual(kkt));
        f.notes.push(match self.solver {
            SplSolver::Subgradient => format!("solver: Algorithm 1 projected subgradient steps 1/t from S = 0: {iterations} steps"),
            SplSolver::Bounded(b) => format!(
                "solver: {} on -f over s >= 0 (m = {}, pgtol = tol x KKT residual at S = 0, factr = {LBFGSB_FACTR:e}): {iterations} iterations",
                solver_label(b),
                solver_memory(b)
            ),
        });
        f.notes.push(format!(
            "graph: {} edges (symmetrised {}-NN), {} with s > 0 at the end; backend {:?}; sparse Cholesky of Q: {} ordering, nnz(L) = {} ({} supernodes, {:.3e} flops per factorisation)",
            prob.n_edges(),
            self.k,
            active.len(),
            prob.backend(),
            prob.symbolic().ordering_name(),
            prob.symbolic().nnz_l() + n,
            prob.symbolic().n_supernodes(),
            prob.symbolic().flops()
        ));
        f.notes.push(format!(
            "final dual objective f = {:.10e} (maximised; history holds f at S_0 = 0 and after every iteration), KKT residual ||proj grad||_inf = {:.3e}, log det Q = {:.6e}",
            eval.objective,
            kkt,
            eval.log_det
        ));
        if all_zero {
            f.notes.push(
                "S = 0 at the end: no edge pays for itself at this data scale; the embedding is PCA scaled by gamma/(gamma+1) (eq. 22 with Q = (gamma+1)/4 I)"
                    .into(),
            );
        }
        if !eval.top_eigenvalues.is_empty() {
            f.notes.push(format!("top-{} eigenvalues of Y^T Q^-1 Y: {:?}", self.dim, eval.top_eigenvalues));
        } else {
            f.notes.push("gamma = 0: embedding by KPCA on (4L + I)^-1 (dense N x N kernel)".into());
        }
        f.graph = Some(Graph { n_vertices: n, edges: active });
        Ok(f)
    }
}

pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: NAME,
        summary: "Structured projection learning: the dual f(S) = d/2 log det Q - <S, Phi> - ||S||^2/(4C) - gamma^2/8 sum top-d eig(Y^T Q^-1 Y), Q = L_S + (gamma+1)/4 I on the K-NN graph, maximised over S >= 0 (projected L-BFGS by default, or Algorithm 1's subgradient steps); X = (gamma/4) Q^-1 Y W, or KPCA on (4L + I)^-1 when gamma = 0.",
        reference: "Wang, Probabilistic Dimensionality Reduction via Structure Learning (TPAMI 2019), §3.3, Algorithm 1, eqs. (17)-(23)",
        version: 3,
        output: OutputKind::Embedding,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: false,
        params: Spl::schema(()),
        build: |p| declare::build::<Spl>(NAME, (), p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::params::{ParamMap, ParamValue};
    use ndarray::s;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;
    use structdr_linalg::Cholesky;

    /// A noisy helix in 3-D (N x 3), scaled so that the subgradient steps are active.
    fn helix(n: usize, seed: u64) -> Array2<f64> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        Array2::from_shape_fn((n, 3), |(i, j)| {
            let t = 3.0 * i as f64 / n as f64;
            let v = match j {
                0 => t.cos(),
                1 => t.sin(),
                _ => 0.3 * t,
            };
            v + 0.02 * rng.gen_range(-1.0..1.0)
        })
    }

    fn graph(x: &Array2<f64>, k: usize) -> Vec<(usize, usize, f64)> {
        symmetrised_edges(&structdr_numerics::neighbours::knn(x.view(), k).unwrap())
    }

    /// Dense reference of one evaluation: eq. (17)/(20) written with dense `Q^-1`
    /// (`Cholesky::inverse`), the gradient as `1/2 Tr(Q^-1 (d I + gamma^2/4 P) A_ij) - s/C - 2 phi`
    /// with `P = Y W W^T Y^T Q^-1`, entry by entry. Returns (f, grad, Q^-1 Y W).
    fn dense_eval(y: &Array2<f64>, edges: &[(usize, usize, f64)], s: &[f64], dim: usize, gamma: f64, c: f64) -> (f64, Vec<f64>, Array2<f64>) {
        let n = y.nrows();
        let mut q = Array2::<f64>::eye(n) * ((gamma + 1.0) / 4.0);
        for (&(i, j, _), &v) in edges.iter().zip(s) {
            q[[i, i]] += v;
            q[[j, j]] += v;
            q[[i, j]] -= v;
            q[[j, i]] -= v;
        }
        let ch = Cholesky::factor(q.view()).unwrap();
        let qi = ch.inverse().unwrap();
        let m = y.t().dot(&qi).dot(y);
        let e = eigh_top(m.view(), dim).unwrap();
        let w = e.vectors;
        let p = y.dot(&w).dot(&w.t()).dot(&y.t()).dot(&qi);
        let r = qi.dot(&(Array2::<f64>::eye(n) * dim as f64 + p * (gamma * gamma / 4.0)));
        let inv_c = if c.is_infinite() { 0.0 } else { 1.0 / c };
        let grad = edges.iter().zip(s).map(|(&(i, j, phi), &v)| 0.5 * (r[[i, i]] + r[[j, j]] - r[[i, j]] - r[[j, i]]) - inv_c * v - 2.0 * phi).collect();
        // the full symmetric sums of (17)
        let mut sphi = 0.0;
        let mut ss = 0.0;
        for (&(_, _, phi), &v) in edges.iter().zip(s) {
            sphi += 2.0 * v * phi;
            ss += 2.0 * v * v;
        }
        let f = 0.5 * dim as f64 * ch.log_det() - sphi - inv_c * ss / 4.0 - gamma * gamma / 8.0 * e.values.sum();
        (f, grad, qi.dot(y).dot(&w))
    }

    fn centred(x: &Array2<f64>) -> Array2<f64> {
        x - &x.mean_axis(Axis(0)).unwrap().insert_axis(Axis(0))
    }

    fn max_rel(a: &[f64], b: &[f64]) -> f64 {
        let scale = b.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max) / scale
    }

    /// The sparse path reproduces the dense reference's iterates and objectives.
    fn check_against_dense(x: &Array2<f64>, k: usize, dim: usize, gamma: f64, c: f64, iters: usize) -> usize {
        let edges = graph(x, k);
        let y = centred(x);
        let mut active = 0;
        for backend in [Backend::Sparse, Backend::Dense] {
            if backend == Backend::Dense && x.ncols() > x.nrows() {
                continue;
            }
            active = run_against_dense(x, &edges, &y, dim, gamma, c, iters, backend);
        }
        active
    }

    fn run_against_dense(
        x: &Array2<f64>,
        edges: &[(usize, usize, f64)],
        y: &Array2<f64>,
        dim: usize,
        gamma: f64,
        c: f64,
        iters: usize,
        backend: Backend,
    ) -> usize {
        let prob = SplProblem::with_backend(x.view(), edges, dim, gamma, c, backend).unwrap();
        assert_eq!(prob.backend(), backend);
        let (mut s_sp, mut s_de) = (vec![0.0; edges.len()], vec![0.0; edges.len()]);
        let mut worst = 0.0f64;
        let mut active = 0;
        for t in 0..=iters {
            let ev = prob.evaluate(&s_sp).unwrap();
            let (f, g, z) = dense_eval(y, edges, &s_de, dim, gamma, c);
            let ef = (ev.objective - f).abs() / f.abs().max(1.0);
            let eg = max_rel(&ev.grad, &g);
            let es = max_rel(&s_sp, &s_de);
            worst = worst.max(ef).max(eg).max(es);
            assert!(ef < 1e-9 && eg < 1e-9 && es < 1e-9, "t = {t}: objective {ef:e}, gradient {eg:e}, iterate {es:e}");
            if gamma > 0.0 {
                // Q^-1 Y W up to the sign of each column
                let zs = ev.qinv_yw.as_ref().unwrap();
                for col in 0..dim {
                    let sg = zs.column(col).dot(&z.column(col)).signum();
                    let d = (&zs.column(col) * sg - z.column(col)).mapv(f64::abs).fold(0.0f64, |a, &b| a.max(b));
                    assert!(d < 1e-9 * z.column(col).mapv(f64::abs).fold(1.0f64, |a, &b| a.max(b)), "t = {t}: Q^-1 Y W column {col} differs by {d:e}");
                }
            }
            if t < iters {
                SplProblem::step(&mut s_sp, t + 1, &ev.grad);
                SplProblem::step(&mut s_de, t + 1, &g);
            }
            active = s_sp.iter().filter(|&&v| v > 0.0).count();
        }
        assert!(active > 0, "the test must exercise non-zero S");
        eprintln!(
            "{backend:?}: N = {}, D = {}, gamma = {gamma}, C = {c}: worst relative deviation from the dense reference {worst:.2e}, {active}/{} active edges",
            x.nrows(),
            x.ncols(),
            edges.len()
        );
        active
    }

    #[test]
    fn sparse_path_reproduces_dense_reference() {
        let _ = check_against_dense(&helix(90, 1), 6, 2, 1.0, 1e3, 25);
        let _ = check_against_dense(&helix(70, 2), 5, 2, 1e-3, f64::INFINITY, 25);
        let _ = check_against_dense(&helix(60, 3), 4, 1, 0.5, 0.1, 25);
        // a scale at which the projection max(0, .) is active on part of the graph
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(13);
        let x = Array2::from_shape_fn((80, 3), |_| rng.gen_range(0.0..6.0));
        let n_edges = graph(&x, 5).len();
        let active = check_against_dense(&x, 5, 2, 1.0, 1e3, 25);
        assert!(active < n_edges, "{active} of {n_edges} edges active: the projection is not exercised");
    }

    #[test]
    fn dual_form_when_d_exceeds_n() {
        // D = 40 > N = 30: W from the N x N Gram form must match the dense D x D eigenproblem
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
        let x = Array2::from_shape_fn((30, 40), |_| 0.1 * rng.gen_range(-1.0..1.0));
        let _ = check_against_dense(&x, 5, 3, 2.0, 1e3, 15);
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let x = helix(50, 5);
        let edges = graph(&x, 5);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(6);
        for (gamma, c) in [(1.0, 10.0), (0.0, f64::INFINITY), (3.0, f64::INFINITY)] {
            let prob = SplProblem::new(x.view(), &edges, 2, gamma, c).unwrap();
            // an interior point (every s_e > 0), where f is differentiable when the eigengap is positive
            let s: Vec<f64> = (0..edges.len()).map(|_| rng.gen_range(0.2..2.0)).collect();
            let ev = prob.evaluate(&s).unwrap();
            for e in (0..edges.len()).step_by(7) {
                let h = 1e-5;
                let mut sp = s.clone();
                sp[e] += h;
                let mut sm = s.clone();
                sm[e] -= h;
                let fd = (prob.evaluate(&sp).unwrap().objective - prob.evaluate(&sm).unwrap().objective) / (2.0 * h);
                let g = ev.grad[e];
                assert!((fd - g).abs() < 1e-6 * g.abs().max(1.0), "gamma {gamma}, C {c}, edge {e}: fd {fd} vs grad {g}");
            }
        }
    }

    #[test]
    fn gamma_zero_is_kpca_on_regularised_laplacian_kernel() {
        let x = helix(60, 7);
        let m = Spl { dim: 2, k: 5, c: 1e3, gamma: 0.0, max_iter: 30, tol: 0.0, solver: SplSolver::Subgradient };
        let fit = m.fit(x.view(), 0).unwrap();
        assert_eq!(fit.trace.iterations, 30);
        // independent dense reference: L from the returned S, Sigma = (4L + I)^-1, centred KPCA
        let n = x.nrows();
        let g = fit.graph.as_ref().unwrap();
        assert!(!g.edges.is_empty());
        let mut l = Array2::<f64>::zeros((n, n));
        for &(i, j, v) in &g.edges {
            l[[i, i]] += v;
            l[[j, j]] += v;
            l[[i, j]] -= v;
            l[[j, i]] -= v;
        }
        let a = &l * 4.0 + Array2::<f64>::eye(n);
        let sigma = Cholesky::factor(a.view()).unwrap().inverse().unwrap();
        let h = Array2::<f64>::eye(n) - Array2::<f64>::ones((n, n)) / n as f64;
        let kc = h.dot(&sigma).dot(&h);
        let e = eigh_top(kc.view(), 2).unwrap();
        for c in 0..2 {
            let want = &e.vectors.column(c) * e.values[c].sqrt();
            let got = fit.embedding().unwrap().column(c);
            let sg = got.dot(&want).signum();
            let d = (&got * sg - &want).mapv(f64::abs).fold(0.0f64, |a, &b| a.max(b));
            assert!(d < 1e-9, "column {c}: {d:e}");
            // the columns are eigenvectors of L (Sigma and L share eigenvectors; 1^T v = 0)
            let v = got.to_owned();
            let lv = l.dot(&v);
            let lam = v.dot(&lv) / v.dot(&v);
            assert!((&lv - &(&v * lam)).mapv(f64::abs).fold(0.0f64, |a, &b| a.max(b)) < 1e-8);
            assert!(v.sum().abs() < 1e-9);
        }
        // gamma = 0: no eigenproblem in the loop, the gradient has no P-term
        let edges = graph(&x, 5);
        let prob = SplProblem::new(x.view(), &edges, 2, 0.0, 1e3).unwrap();
        let ev = prob.evaluate(&vec![0.0; edges.len()]).unwrap();
        assert!(ev.w.is_none() && ev.top_eigenvalues.is_empty());
        // at S = 0: Q^-1 = 4 I, Tr(Q^-1 A_e) = 8, grad = 4 d - 2 phi
        for (g, &(_, _, phi)) in ev.grad.iter().zip(&edges) {
            assert!((g - (8.0 - 2.0 * phi)).abs() < 1e-12);
        }
    }

    #[test]
    fn closed_form_at_zero_and_the_embedding_formula() {
        // at S = 0, Q = (gamma+1)/4 I: W = PCA directions, X = gamma/(gamma+1) Y W (scaled PCA)
        let x = helix(40, 8);
        let m = Spl { dim: 2, k: 4, c: 1e3, gamma: 2.0, max_iter: 0, tol: 0.0, solver: SplSolver::Subgradient };
        let fit = m.fit(x.view(), 0).unwrap();
        assert_eq!(fit.trace.history.len(), 1);
        let p = structdr_linalg::Pca::fit(x.view()).unwrap().transform(x.view(), 2);
        for c in 0..2 {
            let want = &p.column(c) * (2.0 / 3.0);
            let got = fit.embedding().unwrap().column(c);
            let sg = got.dot(&want).signum();
            assert!((&got * sg - &want).mapv(f64::abs).fold(0.0f64, |a, &b| a.max(b)) < 1e-10);
        }
    }

    #[test]
    fn strongly_concave_case_reaches_small_kkt_residual() {
        let x = helix(60, 9);
        let edges = graph(&x, 5);
        let prob = SplProblem::new(x.view(), &edges, 2, 1.0, 1.0).unwrap();
        let mut s = vec![0.0; edges.len()];
        let ev0 = prob.evaluate(&s).unwrap();
        let r0 = SplProblem::kkt_residual(&s, &ev0.grad);
        let mut ev = ev0.clone();
        for t in 1..=400 {
            SplProblem::step(&mut s, t, &ev.grad);
            ev = prob.evaluate(&s).unwrap();
        }
        let r = SplProblem::kkt_residual(&s, &ev.grad);
        assert!(ev.objective > ev0.objective, "{} vs {}", ev.objective, ev0.objective);
        assert!(r < 1e-3 * r0, "KKT residual {r:e} (start {r0:e})");
        // the optimum of a concave function: no feasible perturbation increases f
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(10);
        for _ in 0..5 {
            let sp: Vec<f64> = s.iter().map(|v| (v + 1e-3 * rng.gen_range(-1.0..1.0)).max(0.0)).collect();
            assert!(prob.evaluate(&sp).unwrap().objective <= ev.objective + 1e-9 * ev.objective.abs().max(1.0));
        }
    }

    #[test]
    fn bad_input_is_a_clear_error() {
        let x = helix(20, 11);
        let ok = Spl { dim: 2, k: 4, c: 1e3, gamma: 1e-3, max_iter: 5, tol: 1e-5, solver: SplSolver::Subgradient };
        assert!(ok.fit(x.view(), 0).is_ok());
        let err = |m: Spl, x: &Array2<f64>| m.fit(x.view(), 0).unwrap_err().to_string();
        let mut xn = x.clone();
        xn[[3, 1]] = f64::NAN;
        assert!(err(ok.clone(), &xn).contains("non-finite"));
        assert!(err(Spl { k: 20, ..ok.clone() }, &x).contains("k = 20"));
        // out of the schema's range: refused with the schema's words, naming the parameter
        assert!(err(Spl { k: 0, ..ok.clone() }, &x).contains("'k' must be integer >= 1, got 0"));
        assert!(err(Spl { c: -1.0, ..ok.clone() }, &x).contains("'C' must be float in (0.0, inf], got -1"));
        assert!(err(Spl { c: 0.0, ..ok.clone() }, &x).contains("'C' must be float in (0.0, inf], got 0"));
        assert!(err(Spl { gamma: -0.5, ..ok.clone() }, &x).contains("'gamma' must be float in [0.0, inf), got -0.5"));
        assert!(err(Spl { dim: 4, ..ok.clone() }, &x).contains("dim = 4"));
        assert!(err(Spl { tol: f64::NAN, ..ok.clone() }, &x).contains("tol"));
        assert!(err(ok.clone(), &Array2::ones((10, 3))).contains("constant"));
        // a duplicate sample with C = inf: the dual is unbounded, refused by the converged solver
        let mut xd = x.clone();
        let r0 = xd.row(0).to_owned();
        xd.row_mut(5).assign(&r0);
        let conv = Spl { c: f64::INFINITY, solver: SplSolver::Bounded(Solver::Projected), ..ok.clone() };
        assert!(err(conv.clone(), &xd).contains("samples 0 and 5 coincide"));
        assert!(conv.fit(x.view(), 0).is_ok());
        // data so spread that no edge enters: S = 0 is optimal; gamma = 0 has no embedding there
        let far = &x * 1e3;
        assert!(err(Spl { gamma: 0.0, solver: SplSolver::Bounded(Solver::Projected), ..ok.clone() }, &far).contains("degenerate: S = 0"));
        let pca_like = Spl { solver: SplSolver::Bounded(Solver::Projected), ..ok.clone() }.fit(far.view(), 0).unwrap();
        assert!(pca_like.notes.iter().any(|n| n.contains("S = 0 at the end")));
        // through the registry: C < 0 and gamma < 0 are rejected by the schema, inf accepted
        let info = crate::registry::lookup("spl").unwrap();
        let mut p = ParamMap::new();
        p.insert("C".into(), ParamValue::Float(-1.0));
        assert!(info.resolve(&p).is_err());
        p.insert("C".into(), ParamValue::Str("inf".into()));
        assert!(info.resolve(&p).is_ok());
        p.insert("gamma".into(), ParamValue::Float(-1.0));
        assert!(info.resolve(&p).is_err());
        let names: Vec<_> = info.params.iter().map(|q| q.name).collect();
        assert_eq!(names, ["dim", "k", "C", "gamma", "max_iter", "tol", "solver"]);
        p.insert("solver".into(), ParamValue::Str("newton".into()));
        assert!(info.resolve(&p).is_err());
    }

    #[test]
    fn deterministic_and_history_recorded() {
        let x = helix(80, 12);
        let m = Spl { dim: 2, k: 6, c: f64::INFINITY, gamma: 1e-3, max_iter: 60, tol: 1e-7, solver: SplSolver::Subgradient };
        let a = m.fit(x.view(), 0).unwrap();
        let b = m.fit(x.view(), 1).unwrap();
        assert_eq!(a.embedding().unwrap(), b.embedding().unwrap());
        assert_eq!(a.trace.history, b.trace.history);
        assert_eq!(a.trace.history.len(), a.trace.iterations + 1);
        assert!(a.trace.history.iter().all(|v| v.is_finite()));
        assert!(a.trace.history.last().unwrap() > &a.trace.history[0]);
        assert_eq!(a.embedding().unwrap().dim(), (80, 2));
        let _ = a.embedding().unwrap().slice(s![.., 0]);
    }

    /// The bounded solvers reach the dual's maximiser: both agree, the KKT conditions hold edge
    /// by edge (`g_e ~ 0` where `s_e > 0`, `g_e <= 0` where `s_e = 0`), no feasible perturbation
    /// increases `f`, and Algorithm 1's subgradient steps from the same start stay below it.
    #[test]
    fn bounded_solvers_reach_the_kkt_point_the_subgradient_loop_misses() {
        // a scale at which the optimum has both active and inactive edges
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(21);
        let x = Array2::from_shape_fn((120, 4), |_| rng.gen_range(0.0..3.0));
        let base = Spl { dim: 2, k: 6, c: 1e3, gamma: 1e-3, max_iter: 3000, tol: 1e-9, solver: SplSolver::Bounded(Solver::Projected) };
        let edges = graph(&x, 6);
        let prob = SplProblem::new(x.view(), &edges, 2, 1e-3, 1e3).unwrap();
        let mut finals = vec![];
        for solver in Solver::ALL {
            let fit = Spl { solver: SplSolver::Bounded(solver), ..base.clone() }.fit(x.view(), 0).unwrap();
            let kkt = fit.trace.kkt_residual.expect("the trace records the KKT residual");
            let g = fit.graph.as_ref().unwrap();
            // rebuild s on all edges from the active ones the fit reports
            let mut s = vec![0.0; edges.len()];
            for &(i, j, v) in &g.edges {
                s[edges.iter().position(|&(a, b, _)| (a, b) == (i, j)).unwrap()] = v;
            }
            let ev = prob.evaluate(&s).unwrap();
            let g0 = prob.evaluate(&vec![0.0; edges.len()]).unwrap();
            let r0 = SplProblem::kkt_residual(&vec![0.0; edges.len()], &g0.grad);
            assert!((SplProblem::kkt_residual(&s, &ev.grad) - kkt).abs() <= 1e-12 * r0, "{solver:?}: recorded residual is the residual at s");
            assert!(kkt < 1e-5 * r0, "{solver:?}: KKT residual {kkt:e} (at S = 0: {r0:e})");
            let (mut n_active, mut n_zero) = (0, 0);
            for (&v, &ge) in s.iter().zip(&ev.grad) {
                if v > 0.0 {
                    n_active += 1;
                    assert!(ge.abs() <= kkt, "{solver:?}: active edge with gradient {ge:e}");
                } else {
                    n_zero += 1;
                    assert!(ge <= kkt, "{solver:?}: zero edge with ascent direction {ge:e}");
                }
            }
            assert!(n_active > 0 && n_zero > 0, "{solver:?}: {n_active} active, {n_zero} at the bound: both must be exercised");
            let f = *fit.trace.history.last().unwrap();
            assert_eq!(f, ev.objective, "{solver:?}: history ends at f(s)");
            for _ in 0..10 {
                let sp: Vec<f64> = s.iter().map(|v| (v + 1e-3 * rng.gen_range(-1.0..1.0)).max(0.0)).collect();
                assert!(prob.evaluate(&sp).unwrap().objective <= f + 1e-10 * f.abs().max(1.0), "{solver:?}: a perturbation increases f");
            }
            finals.push(f);
        }
        assert!((finals[0] - finals[1]).abs() < 1e-8 * finals[0].abs().max(1.0), "the two solvers' optima differ: {finals:?}");
        let sub = Spl { solver: SplSolver::Subgradient, max_iter: 200, tol: 0.0, ..base.clone() }.fit(x.view(), 0).unwrap();
        let f_sub = *sub.trace.history.last().unwrap();
        assert!(f_sub < finals[0], "subgradient {f_sub} >= optimum {}", finals[0]);
        assert!(sub.trace.kkt_residual.unwrap() > 1e3 * base.fit(x.view(), 0).unwrap().trace.kkt_residual.unwrap());
    }
}
