//! SPL's numerics (the module doc of [`super`]): the dual problem on a fixed graph
//! ([`SplProblem`]), its evaluation (`f`, eq. 20's gradient, `W` and `Q^-1 Y W`) by the sparse
//! supernodal Cholesky and selected inversion or by the dense LAPACK backend ([`Backend`], with
//! the rule that picks one), the two solves (Algorithm 1's subgradient steps, the bounded
//! quasi-Newton solvers) and the embedding at `S`.

use crate::api::{numerical, numerics, MethodError, Result};
use crate::structure::pair_dual::{solver_memory, F_NOISE, LBFGSB_FACTR};
use ndarray::{Array2, ArrayView2, Axis};
use structdr_linalg::sparse::{Ordering, SparseError, SymbolicCholesky};
use structdr_linalg::{canonicalize_signs, eigh_top, gram_of_columns, gram_of_rows};
use structdr_numerics::optim::{minimize, projected_gradient_norm, BoundedOptions, Solver};

/// The method's name, as its errors report it.
pub(super) const NAME: &str = "spl";

fn sparse_err(e: SparseError) -> MethodError {
    MethodError::Input { method: NAME, reason: format!("{e}") }
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
    /// `-d^2 f / ds_e^2` with `W` held fixed: `d/2 r_e^2 + gamma^2/4 r_e ||z_i - z_j||^2 + 1/C`,
    /// `r_e = tr(Q^-1 A_ij)` (positive; the solver's diagonal preconditioner).
    pub curvature: Vec<f64>,
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
        let (grad, curvature): (Vec<f64>, Vec<f64>) = self
            .edges
            .iter()
            .enumerate()
            .map(|(e, &(i, j))| {
                let p = match &z {
                    Some(z) => z.row(i).iter().zip(z.row(j).iter()).map(|(a, b)| (a - b) * (a - b)).sum::<f64>(),
                    None => 0.0,
                };
                let r = tr(e, i, j);
                (0.5 * d * r + g2 * p - inv_c * s[e] - 2.0 * self.phi[e], 0.5 * d * r * r + 2.0 * g2 * r * p + inv_c)
            })
            .unzip();
        let objective = 0.5 * d * log_det - self.linear_quadratic(s) - g2 * top.iter().sum::<f64>();
        SplEval { objective, grad, curvature, log_det, top_eigenvalues: top, w, qinv_yw: z }
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
            let m = gram_of_columns(b.view());
            let e = eigh_top(m.view(), self.dim).map_err(numerical(NAME))?;
            Ok((e.values.to_vec(), e.vectors))
        } else {
            let g = gram_of_rows(b.view());
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
    pub(super) fn solve_subgradient(&self, max_iter: usize, tol: f64) -> Result<(Vec<f64>, SplEval, Vec<f64>, usize, crate::api::StopReason)> {
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
    pub(super) fn solve_bounded(
        &self,
        solver: Solver,
        max_iter: usize,
        tol: f64,
    ) -> Result<(Vec<f64>, SplEval, Vec<f64>, usize, crate::api::StopReason, String)> {
        let n = self.n_edges();
        let zero = vec![0.0; n];
        let lower = vec![0.0; n];
        let upper = vec![f64::INFINITY; n];
        let eval0 = self.evaluate(&zero)?;
        let g0: Vec<f64> = eval0.grad.iter().map(|g| -g).collect();
        let pg0 = projected_gradient_norm(&zero, &g0, &lower, &upper);
        // The projected solver stops on the KKT residual alone: near the optimum the decrease
        // Armijo asks for falls below the rounding of f (d/2 log det Q sums N logarithms of a
        // computed factor), where the relative-reduction test would stop it short (version 3
        // stopped there, at relative residuals up to 5e-5 against tol = 1e-7); the approximate
        // Wolfe test with F_NOISE accepts the steps that the slope shows are progress. The
        // Fortran L-BFGS-B has no such test and keeps its factr.
        let (factr, noise) = match solver {
            Solver::Projected => (0.0, F_NOISE),
            Solver::Lbfgsb => (LBFGSB_FACTR, 0.0),
        };
        let opts = BoundedOptions { m: solver_memory(solver), max_iter, max_eval: 20 * max_iter.max(1) + 20, pgtol: tol * pg0, factr, noise };
        let mut failure: Option<MethodError> = None;
        let mut eval_into = |s: &[f64], g: &mut [f64], h: &mut [f64]| match self.evaluate(s) {
            Ok(e) => {
                for (gi, ei) in g.iter_mut().zip(&e.grad) {
                    *gi = -ei;
                }
                if !h.is_empty() {
                    h.copy_from_slice(&e.curvature);
                }
                -e.objective
            }
            Err(e) => {
                failure.get_or_insert(e);
                f64::NAN
            }
        };
        // The projected solver starts its limited-memory matrix from the inverse of the diagonal
        // curvature (SplEval::curvature): with C = 1e3 the edges' curvatures d/2 r_e^2 spread over
        // orders of magnitude, and the scalar scaling left coil20's and usps's cells at
        // max_iter = 3000 with relative residuals up to 3.5e-4 (version 4); preconditioned, every
        // Table 1 cell meets tol in tens to about a hundred iterations (docs/parity/spl.md).
        let r = if solver == Solver::Projected {
            structdr_numerics::optim::projected_lbfgs::minimize_preconditioned(&mut eval_into, &zero, &lower, &upper, &opts)
        } else {
            minimize(solver, |s, g| eval_into(s, g, &mut []), &zero, &lower, &upper, &opts)
        };
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
