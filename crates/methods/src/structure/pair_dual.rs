//! The pair dual shared by MPME (002 eq. 13) and ESL (001 eq. 20): the packed pair layout, the
//! solver choice ([`PairSolver`], [`solve_dual`]: the active-set solver of [`super::pair_active`]
//! or a full-space solver, bounds `[0, upper]` from `w = 0`, memory, stopping rules) and the dense
//! kernel `log det(a I + b L(W))` and its gradient with respect to the pair weights of a symmetric
//! graph.
//!
//! Parameterisation: one variable `w_k` per unordered pair `i < j`, stored row-major over the
//! strict upper triangle (`k = i N - i (i + 1) / 2 + j - i - 1`), `W` symmetric with `w_ii = 0`,
//! `L = diag(W 1) - W`. Moving `w_k` moves both `W_ij` and `W_ji`, so
//! `dL / dw_k = A_ij = (e_i - e_j)(e_i - e_j)^T` and, with `Q = a I + b L`,
//!
//! `d/dw_k log det Q = b Tr(Q^-1 A_ij) = b [(Q^-1)_ii + (Q^-1)_jj - 2 (Q^-1)_ij]`.
//!
//! The log-det kernel assembles the row-major upper triangle of `Q` straight into the buffer that
//! [`structdr_linalg::log_det_inverse_upper`] factors and inverts in place.
//!
//! Cost per evaluation: one Cholesky `dpotrf` (N^3/3 flops) for `log det`, one `dpotri`
//! (2N^3/3 flops) for `Q^-1`, and O(N^2) for assembling `Q` and the N(N-1)/2 gradient entries: never
//! a solve per column. [`log_det_grad_auto`] (MPME's full-space solvers) takes a sparse factor
//! instead when the weights' pattern makes it cheaper: `flops(L) + 4 N nnz(L)` for the factor and
//! the block solves that give every entry of `Q^-1`.

use super::pair_active::{solve_active, ActiveOptions, ActiveShape, PairDual};
use crate::api::declare::param_choice;
use crate::api::{check_input, MethodError, Result, StopReason};
use ndarray::{Array2, ArrayView2};
use structdr_linalg::sparse::{Ordering, SymbolicCholesky};
use structdr_linalg::LinalgError;
use structdr_numerics::optim::{minimize, BoundedOptions, BoundedResult, Solver};

/// Largest N for MPME and ESL: N(N-1)/2 variables and ~64 N^2 (projected solver) to ~100 N^2
/// (L-BFGS-B) bytes of solver workspace (1.6 to 2.5 GB at this limit).
pub const PAIR_MAX_N: usize = 5000;

/// Limited-memory size m (correction pairs) of MPME and ESL with the Fortran L-BFGS-B.
pub const LBFGSB_MEMORY: usize = 10;

/// Limited-memory size m of MPME and ESL with the projected solver. Its per-iteration cost is
/// O(m^2 |F|) (the Gram matrices over the free set) + O(m n): at N = 2007 (usps, ESL) m = 5 costs
/// ~0.06 s per iteration beside the ~0.15 s evaluation, m = 10 about twice that, and after 60
/// iterations m = 5 is within 2e-4 (relative) of the m = 10 objective and below the Fortran
/// L-BFGS-B's with m = 10 (docs/parity/mpme.md).
pub const PROJECTED_MEMORY: usize = 5;

/// The memory m used with `solver`.
pub fn solver_memory(solver: Solver) -> usize {
    match solver {
        Solver::Lbfgsb => LBFGSB_MEMORY,
        Solver::Projected => PROJECTED_MEMORY,
    }
}

/// `factr` used by MPME and ESL: stop when the relative objective reduction is below
/// `1e3 * eps_mach` (~2.2e-13), so that the KKT test (`tol`) normally decides.
pub const LBFGSB_FACTR: f64 = 1e3;

/// Relative accuracy of `f` given to the projected solver ([`structdr_numerics::optim::BoundedOptions::noise`])
/// by the log-det duals (ESL's and MPME's working sets, SPL): `log det Q` sums N logarithms of a
/// computed factor, so near the optimum the Armijo decrease falls below its rounding error (ESL on
/// letter stalls at a KKT residual of 2e-5 without it, SPL on satimage at a relative 5e-5); the
/// approximate Wolfe test then accepts steps that the slope shows are progress.
pub const F_NOISE: f64 = 1e-11;

/// Default `max_iter` of MPME and ESL: high enough for the active-set solver to converge on
/// every Table 1 cell (MPME on usps takes ~5,000 inner iterations of ~10 ms); the full-space
/// solvers cost a dense `N^3` evaluation per iteration, so a cap for them is the caller's choice.
pub const DEFAULT_MAX_ITER: usize = 20_000;

/// Documentation of the `max_iter` parameter of MPME and ESL.
pub const MAX_ITER_DOC: &str = "iteration limit of the dual solver (active: inner iterations summed over the working sets)";

/// Default `solver` of MPME and ESL.
pub const DEFAULT_SOLVER: &str = "active";

/// Documentation of the `solver` parameter of MPME and ESL.
pub const SOLVER_DOC: &str = "dual solver: active = working sets of pairs with a sparse Cholesky and selected inversion, every other pair checked exactly; when a working set's factor is too dense to pay, projected Newton over all pairs (dense factor, a Woodbury model of the Hessian); projected = two-metric projected L-BFGS (m = 5; O(m^2 |free set| + m n) work per iteration in parallel chunks, 1.5x to 2.8x faster per iteration than lbfgsb at N = 2007); lbfgsb = the Fortran L-BFGS-B 3.0 reference code (Byrd, Lu, Nocedal & Zhu; m = 10)";

/// How a solver is named in the fit notes.
pub fn solver_label(solver: Solver) -> &'static str {
    match solver {
        Solver::Lbfgsb => "L-BFGS-B 3.0",
        Solver::Projected => "projected L-BFGS",
    }
}

/// The typed end of a [`solve_pairs`] run whose stopping rule is `||proj grad||_inf <= tol *
/// pg0`: the residual is reported relative to `pg0` (its value at `W = 0`) so that it compares
/// with `tol` directly.
pub fn pair_stop(r: &BoundedResult, max_iter: usize, pg0: f64, tol: f64) -> StopReason {
    let relative = if pg0 > 0.0 { r.projected_gradient_norm / pg0 } else { 0.0 };
    StopReason::classify(r.converged, r.iterations, max_iter, Some(relative), Some(tol), &r.message)
}

/// Runs `solver` on a pair objective from `w = 0` with bounds `[0, upper]`; an error inside `f`
/// (non-positive-definite `Q`) stops the run and is returned.
pub fn solve_pairs(
    method: &'static str,
    solver: Solver,
    n_vars: usize,
    upper: f64,
    max_iter: usize,
    pgtol: f64,
    mut f: impl FnMut(&[f64], &mut [f64]) -> std::result::Result<f64, LinalgError>,
) -> Result<BoundedResult> {
    let mut failure: Option<LinalgError> = None;
    let opts = BoundedOptions { m: solver_memory(solver), max_iter, max_eval: 20 * max_iter.max(1) + 20, pgtol, factr: LBFGSB_FACTR, noise: 0.0 };
    let lower = vec![0.0; n_vars];
    let upper_v = vec![upper; n_vars];
    let r = minimize(
        solver,
        |w, g| match f(w, g) {
            Ok(v) => v,
            Err(e) => {
                failure.get_or_insert(e);
                f64::NAN
            }
        },
        &vec![0.0; n_vars],
        &lower,
        &upper_v,
        &opts,
    );
    if let Some(e) = failure {
        return Err(MethodError::Numerical { method, cause: e });
    }
    r.map_err(|e| MethodError::Input { method, reason: e.to_string() })
}

param_choice! {
    /// The solver of the pair dual of MPME and ESL.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum PairSolver {
        /// Working sets with a sparse factor and an exact check of every other pair
        /// ([`super::pair_active`]); projected Newton over all pairs once a working set's factor is
        /// too dense to pay ([`super::pair_newton`]).
        Active = "active",
        /// Two-metric projected L-BFGS over all pairs (dense evaluations).
        Projected = "projected",
        /// The Fortran L-BFGS-B 3.0 over all pairs (dense evaluations).
        Lbfgsb = "lbfgsb",
    }
}

/// A solved pair dual, whichever solver ran.
#[derive(Debug, Clone)]
pub struct PairSolution {
    /// The weights, all N(N-1)/2 pairs (storage order).
    pub w: Vec<f64>,
    /// `f(w)`.
    pub f: f64,
    /// `||proj grad f||_inf` over all pairs.
    pub kkt: f64,
    /// Iterations (the active solver: inner iterations summed, then the projected Newton ones if
    /// it handed over).
    pub iterations: usize,
    /// Objective evaluations.
    pub evaluations: usize,
    /// Whether the solver's convergence test was met.
    pub converged: bool,
    /// The solver's words on why it stopped.
    pub message: String,
    /// `f` after every iteration.
    pub history: Vec<f64>,
    /// One line on the solver and its work, for the fit notes.
    pub solver_note: String,
}

impl PairSolution {
    /// The typed end for the relative stopping rule `kkt <= tol * pg0`.
    pub fn stop(&self, max_iter: usize, pg0: f64, tol: f64) -> StopReason {
        let relative = if pg0 > 0.0 { self.kkt / pg0 } else { 0.0 };
        StopReason::classify(self.converged, self.iterations, max_iter, Some(relative), Some(tol), &self.message)
    }
}

/// Solves the pair dual `dual` (the dense `f` evaluates the same objective on the packed pairs)
/// with `solver` to the absolute KKT target `tol * pg0` within `max_iter` iterations.
/// `shape` sets the active-set solver's [`ActiveOptions::hand_over_sparse`] and
/// [`ActiveOptions::precondition`].
#[allow(clippy::too_many_arguments)]
pub fn solve_dual(
    method: &'static str,
    solver: PairSolver,
    dual: &PairDual,
    max_iter: usize,
    pgtol: f64,
    shape: ActiveShape,
    f: impl FnMut(&[f64], &mut [f64]) -> std::result::Result<f64, LinalgError>,
) -> Result<PairSolution> {
    let from_bounded = |r: BoundedResult, s: Solver, note_prefix: String| PairSolution {
        solver_note: format!(
            "{note_prefix}{} (m = {}, factr = {LBFGSB_FACTR:e}, pgtol = {pgtol:.3e}): {} iterations, {} evaluations, {}",
            solver_label(s),
            solver_memory(s),
            r.iterations,
            r.evaluations,
            r.message
        ),
        kkt: r.projected_gradient_norm,
        w: r.x,
        f: r.f,
        iterations: r.iterations,
        evaluations: r.evaluations,
        converged: r.converged,
        message: r.message,
        history: r.history,
    };
    match solver {
        PairSolver::Projected | PairSolver::Lbfgsb => {
            let s = if solver == PairSolver::Projected { Solver::Projected } else { Solver::Lbfgsb };
            let r = solve_pairs(method, s, n_pairs(dual.n), dual.upper, max_iter, pgtol, f)?;
            Ok(from_bounded(r, s, String::new()))
        }
        PairSolver::Active => {
            let opts = ActiveOptions::new(pgtol, max_iter).shaped(shape);
            let a = solve_active(dual, &opts).map_err(|reason| MethodError::Solver { method, reason: format!("active-set solver: {reason}") })?;
            let p = a.profile;
            let mut work = format!(
                "active set ({}projected L-BFGS m = {} on working sets, sparse Cholesky + selected inversion, exact check of all pairs): {} inner iterations, {} evaluations, {} checks, working set up to {} pairs, sparse nnz(L) up to {}; {:.2} s analyse, {:.2} s inner, {:.2} s check",
                if opts.precondition { "diagonally preconditioned " } else { "" },
                opts.memory,
                a.iterations,
                a.evaluations, a.checks, a.max_working_set, a.max_nnz_l, p.analyse, p.inner, p.check
            );
            if a.dense_sets > 0 {
                work.push_str(&format!("; {} working sets factored densely", a.dense_sets));
            }
            if a.newton_evaluations > 0 {
                let nw = p.newton;
                work.push_str(&format!(
                    "; handed over to projected Newton over all pairs: {} iterations, {} factorisations ({:.2} s factor, {:.2} s inverse and gradient, {:.2} s model: {} conjugate-gradient iterations, {} dense fallbacks)",
                    a.newton_iterations, a.newton_evaluations, nw.factor, nw.inverse, nw.model, nw.model_cg_iterations, nw.model_dense_fallbacks
                ));
            }
            drop(f);
            Ok(PairSolution {
                w: a.packed(dual.n),
                f: a.f,
                kkt: a.kkt,
                iterations: a.iterations,
                evaluations: a.evaluations,
                converged: a.converged,
                solver_note: format!("{work}: {}", a.message),
                message: a.message,
                history: a.history,
            })
        }
    }
}

/// Data-dependent checks shared by MPME and ESL (the schema has already checked the parameters' ranges).
pub fn check_pair_problem(method: &'static str, x: &ArrayView2<f64>, dim: usize) -> Result<()> {
    check_input(method, x, 3)?;
    let n = x.nrows();
    if n > PAIR_MAX_N {
        return Err(MethodError::Input {
            method,
            reason: format!(
                "N = {n} exceeds {PAIR_MAX_N}: the dual has N(N-1)/2 = {} variables (~{:.1} GB of solver workspace); subsample the data",
                n_pairs(n),
                100.0 * (n as f64).powi(2) / 1e9
            ),
        });
    }
    if dim + 1 > n {
        return Err(MethodError::Input { method, reason: format!("dim = {dim} must be < N = {n}") });
    }
    Ok(())
}

/// Number of pair variables `N (N - 1) / 2`.
pub fn n_pairs(n: usize) -> usize {
    n * n.saturating_sub(1) / 2
}

/// Index of the pair `(i, j)`, `i < j < n`, in the row-major strict upper triangle.
pub fn pair_index(n: usize, i: usize, j: usize) -> usize {
    debug_assert!(i < j && j < n);
    i * n - i * (i + 1) / 2 + (j - i - 1)
}

/// Calls `f(i, j, k)` for every pair `i < j` in storage order (`k = 0, 1, ...`).
pub fn for_each_pair(n: usize, mut f: impl FnMut(usize, usize, usize)) {
    let mut k = 0;
    for i in 0..n {
        for j in (i + 1)..n {
            f(i, j, k);
            k += 1;
        }
    }
}

/// `Q = a I + b L(W)` (N x N, both triangles filled) for pair weights `w` (length N(N-1)/2).
pub fn laplacian_system(n: usize, w: &[f64], a: f64, b: f64) -> Array2<f64> {
    assert_eq!(w.len(), n_pairs(n), "laplacian_system: one weight per pair");
    let mut q = laplacian_upper(n, w, a, b);
    mirror_upper(&mut q);
    q
}

/// Copies the row-major upper triangle of the square `q` into its lower triangle.
fn mirror_upper(q: &mut Array2<f64>) {
    let n = q.nrows();
    let qs = q.as_slice_mut().expect("standard layout");
    for i in 0..n {
        for j in 0..i {
            qs[i * n + j] = qs[j * n + i];
        }
    }
}

/// The row-major upper triangle (diagonal included) of `Q = a I + b L(W)` in an N x N buffer, the
/// other triangle left 0: the part `dpotrf` reads as the column-major lower triangle.
fn laplacian_upper(n: usize, w: &[f64], a: f64, b: f64) -> Array2<f64> {
    let mut q = Array2::<f64>::zeros((n, n));
    fill_laplacian_upper(q.as_slice_mut().expect("standard layout"), n, w, a, b);
    q
}

/// Writes the row-major upper triangle (diagonal included) of `Q = a I + b L(W)` into the N x N
/// buffer `qs` (the strict lower triangle is not touched). Written in storage order
/// (contiguous), unlike the scattered column writes a full symmetric `Q` needs.
pub(crate) fn fill_laplacian_upper(qs: &mut [f64], n: usize, w: &[f64], a: f64, b: f64) {
    assert_eq!(qs.len(), n * n, "fill_laplacian_upper: buffer must hold n x n values");
    let mut deg = vec![0.0f64; n];
    let mut k = 0;
    for i in 0..n {
        let row = &mut qs[i * n..(i + 1) * n];
        for j in (i + 1)..n {
            let v = w[k];
            row[j] = -b * v;
            deg[i] += v;
            deg[j] += v;
            k += 1;
        }
    }
    for i in 0..n {
        qs[i * n + i] = a + b * deg[i];
    }
}

/// `log det Q` and `grad[k] = d/dw_k log det Q` for `Q = a I + b L(W)` (module doc); also returns
/// the N x N buffer whose row-major upper triangle holds `Q^-1` (the other triangle is not set).
///
/// In place on that one buffer: `dpotrf` then `dpotri` (LAPACK, column-major `uplo = 'L'`, which is
/// the row-major upper triangle: no transposes or copies); the gradient reads the triangle.
///
/// Errors when `Q` is not numerically positive definite (impossible for `w >= 0`, `a > 0`, `b >= 0`
/// in exact arithmetic; it can happen for negative trial weights) or not finite.
fn log_det_grad_upper(n: usize, w: &[f64], a: f64, b: f64, grad: &mut [f64]) -> std::result::Result<(f64, Array2<f64>), LinalgError> {
    assert_eq!(w.len(), n_pairs(n), "log_det_and_grad: one weight per pair");
    assert_eq!(grad.len(), n_pairs(n), "log_det_and_grad: one gradient entry per pair");
    let mut q = laplacian_upper(n, w, a, b);
    let qs = q.as_slice_mut().expect("standard layout");
    // Q is built from w, a and b only: its entries are finite iff these and the degrees are
    if !(a.is_finite() && b.is_finite()) || w.iter().any(|v| !v.is_finite()) || (0..n).any(|i| !qs[i * n + i].is_finite()) {
        return Err(LinalgError::NotFinite { what: "log_det_and_grad" });
    }
    let log_det = structdr_linalg::log_det_inverse_upper(qs, n)?;
    for_each_pair_resistance(qs, n, |k, r| grad[k] = b * r);
    Ok((log_det, q))
}

/// Calls `f(k, r_k)` for every pair `k = (i, j)` in storage order with
/// `r_k = (Q^-1)_ii + (Q^-1)_jj - 2 (Q^-1)_ij`, read from the row-major upper triangle of `qs`
/// that `dpotri` left (column-major lower = row-major upper: `qs[i * n + j]`, `j >= i`).
pub(crate) fn for_each_pair_resistance(qs: &[f64], n: usize, mut f: impl FnMut(usize, f64)) {
    // the diagonal gathered once: read in place it is a strided load (one cache line per j) in
    // every row
    let diag: Vec<f64> = (0..n).map(|i| qs[i * n + i]).collect();
    let mut k = 0;
    for i in 0..n {
        let row = &qs[i * n..(i + 1) * n];
        let qii = diag[i];
        for j in (i + 1)..n {
            f(k, qii + diag[j] - 2.0 * row[j]);
            k += 1;
        }
    }
}

/// An evaluation of [`log_det_grad_auto`] takes the sparse factor when its work is cheaper than the
/// dense `N^3` (`dpotrf` N^3/3 + `dpotri` 2N^3/3) by this factor:
/// `SPARSE_EVAL_RATIO x (flops(L) + 4 N nnz(L)) < N^3`, `4 N nnz(L)` the two triangular solves for
/// all N columns of `Q^-1`. The margin covers the sparse kernels' lower rate per flop (small
/// supernodes, gathers, the AMD analysis of each new pattern): at the first sparse evaluation of a
/// capped MPME cell on usps (N = 2007, 48,232 pairs) it took 0.10 s against 0.22 s dense, so the
/// switch comes about where the two cost the same.
pub const SPARSE_EVAL_RATIO: f64 = 4.0;

/// Below this N every evaluation of [`log_det_grad_auto`] is dense (both ways take milliseconds).
pub const SPARSE_EVAL_MIN_N: usize = 400;

/// Which factorisation an evaluation used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Factorisation {
    /// `dpotrf` + `dpotri` of the dense N x N `Q`.
    Dense,
    /// A supernodal sparse Cholesky of `Q` on the pattern of the non-zero weights (AMD order),
    /// then `Q^-1` by block solves.
    Sparse,
}

/// As [`log_det_grad`], choosing the factorisation by the pattern of `w`: the full-space solvers'
/// iterates turn sparse (MPME's capped L-BFGS-B on vehicle: 325,671 of 357,435 pairs non-zero at
/// the first steps, under 1% after 50 evaluations), and then a sparse Cholesky of `Q` on the
/// non-zero pairs plus `Q^-1` by block solves ([`structdr_linalg::sparse::SparseCholesky::dense_inverse_into`])
/// gives the same `log det Q` and gradient (to rounding) for a fraction of the dense `N^3`. The rule
/// ([`SPARSE_EVAL_RATIO`], [`SPARSE_EVAL_MIN_N`]) depends on the pattern alone, so a run is
/// deterministic; the pattern is first screened by `nnz(L) >= nnz(W)`, so a dense iterate costs no
/// ordering.
pub fn log_det_grad_auto(n: usize, w: &[f64], a: f64, b: f64, grad: &mut [f64]) -> std::result::Result<(f64, Factorisation), LinalgError> {
    log_det_grad_by_rule(n, w, a, b, grad, SPARSE_EVAL_MIN_N, SPARSE_EVAL_RATIO)
}

/// [`log_det_grad_auto`] with the rule's size bound `min_n` and flop ratio `ratio` given (tests
/// take the sparse path on problems small enough to solve to their optimum in a test).
pub(crate) fn log_det_grad_by_rule(
    n: usize,
    w: &[f64],
    a: f64,
    b: f64,
    grad: &mut [f64],
    min_n: usize,
    ratio: f64,
) -> std::result::Result<(f64, Factorisation), LinalgError> {
    assert_eq!(w.len(), n_pairs(n), "log_det_grad_auto: one weight per pair");
    assert_eq!(grad.len(), n_pairs(n), "log_det_grad_auto: one gradient entry per pair");
    let dense_flops = (n as f64).powi(3);
    let nnz = w.iter().filter(|&&v| v != 0.0).count();
    if n < min_n || ratio * 4.0 * n as f64 * nnz as f64 >= dense_flops {
        return log_det_grad(n, w, a, b, grad).map(|ld| (ld, Factorisation::Dense));
    }
    // a non-finite weight, a or b reaches the factor's values, which refuses it (NotFinite)
    let mut edges = Vec::with_capacity(nnz);
    let mut off = Vec::with_capacity(nnz);
    let mut diag = vec![a; n];
    for_each_pair(n, |i, j, k| {
        let v = w[k];
        if v != 0.0 {
            edges.push((i, j));
            off.push(-b * v);
            diag[i] += b * v;
            diag[j] += b * v;
        }
    });
    let sym = SymbolicCholesky::analyze(n, &edges, Ordering::ApproximateMinimumDegree).map_err(|e| e.into_linalg("log_det_grad_auto"))?;
    if ratio * (sym.flops() + 4.0 * n as f64 * sym.nnz_l() as f64) >= dense_flops {
        return log_det_grad(n, w, a, b, grad).map(|ld| (ld, Factorisation::Dense));
    }
    let fac = sym.factor(&diag, &off).map_err(|e| e.into_linalg("log_det_grad_auto"))?;
    let mut inverse = vec![0.0; n * n];
    fac.dense_inverse_into(&mut inverse);
    for_each_pair_resistance(&inverse, n, |k, r| grad[k] = b * r);
    Ok((fac.log_det(), Factorisation::Sparse))
}

/// `log det Q` and its gradient `grad[k] = d/dw_k log det Q` for `Q = a I + b L(W)` (module doc),
/// without forming the full `Q^-1`: what an optimiser needs at every evaluation.
pub fn log_det_grad(n: usize, w: &[f64], a: f64, b: f64, grad: &mut [f64]) -> std::result::Result<f64, LinalgError> {
    log_det_grad_upper(n, w, a, b, grad).map(|(ld, _)| ld)
}

/// As [`log_det_grad`], and also returns `Q^-1` (both triangles filled) for `Q = a I + b L(W)`.
pub fn log_det_and_grad(n: usize, w: &[f64], a: f64, b: f64, grad: &mut [f64]) -> std::result::Result<(f64, Array2<f64>), LinalgError> {
    let (log_det, mut q) = log_det_grad_upper(n, w, a, b, grad)?;
    mirror_upper(&mut q);
    Ok((log_det, q))
}

/// The edges `(i, j, w_ij)` with `w_ij > threshold`, `i < j`, sorted.
pub fn edges_above(n: usize, w: &[f64], threshold: f64) -> Vec<(usize, usize, f64)> {
    let mut e = Vec::new();
    for_each_pair(n, |i, j, k| {
        if w[k] > threshold {
            e.push((i, j, w[k]));
        }
    });
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn pair_index_is_the_storage_order() {
        let n = 7;
        for_each_pair(n, |i, j, k| assert_eq!(pair_index(n, i, j), k));
        assert_eq!(n_pairs(n), 21);
    }

    #[test]
    fn gradient_matches_central_differences() {
        let n = 9;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let w: Vec<f64> = (0..n_pairs(n)).map(|_| rng.gen_range(0.0..2.0)).collect();
        let (a, b) = (0.3, 4.0);
        let mut g = vec![0.0; n_pairs(n)];
        let (ld, qi) = log_det_and_grad(n, &w, a, b, &mut g).unwrap();
        // log det against the eigenvalues, Q^-1 against Q
        let q = laplacian_system(n, &w, a, b);
        let e = structdr_linalg::eigh(q.view()).unwrap();
        assert!((ld - e.values.mapv(f64::ln).sum()).abs() < 1e-10);
        let id = q.dot(&qi);
        assert!((id - Array2::<f64>::eye(n)).mapv(f64::abs).iter().all(|&v| v < 1e-10));
        let h = 1e-6;
        let mut scratch = vec![0.0; n_pairs(n)];
        let mut worst = 0.0f64;
        for k in 0..n_pairs(n) {
            let mut wp = w.clone();
            wp[k] += h;
            let fp = log_det_and_grad(n, &wp, a, b, &mut scratch).unwrap().0;
            wp[k] -= 2.0 * h;
            let fm = log_det_and_grad(n, &wp, a, b, &mut scratch).unwrap().0;
            worst = worst.max(((fp - fm) / (2.0 * h) - g[k]).abs() / g[k].abs().max(1.0));
        }
        assert!(worst < 1e-7, "relative gradient error {worst}");
        // the solver's entry point (no full Q^-1) gives the same numbers, bit for bit
        let mut g2 = vec![0.0; n_pairs(n)];
        assert_eq!(log_det_grad(n, &w, a, b, &mut g2).unwrap(), ld);
        assert_eq!(g2, g);
    }

    /// Random weights on a ring whose samples are linked to their `per` next neighbours (a
    /// pattern with little fill, like a neighbourhood graph), some of them 0.
    fn sparse_weights(n: usize, per: usize, seed: u64) -> Vec<f64> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut w = vec![0.0; n_pairs(n)];
        for i in 0..n {
            for step in 1..=per {
                let j = (i + step) % n;
                w[pair_index(n, i.min(j), i.max(j))] = if rng.gen_bool(0.1) { 0.0 } else { rng.gen_range(0.01..2.0) };
            }
        }
        w
    }

    /// The sparse evaluation gives the dense one's `log det Q` and gradient to rounding, is taken
    /// only where the pattern makes it cheaper (and never below [`SPARSE_EVAL_MIN_N`]), and is
    /// the same on 1 and 3 threads bit for bit.
    #[test]
    fn the_sparse_evaluation_equals_the_dense_one_and_is_chosen_by_the_pattern() {
        let n = 450;
        let (a, b) = (0.7, 1.0);
        let w = sparse_weights(n, 4, 17);
        let mut gd = vec![0.0; n_pairs(n)];
        let ld = log_det_grad(n, &w, a, b, &mut gd).unwrap();
        let on = |threads: usize| {
            rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| {
                let mut g = vec![f64::NAN; n_pairs(n)];
                let (l, path) = log_det_grad_auto(n, &w, a, b, &mut g).unwrap();
                (l, path, g)
            })
        };
        let (ls, path, gs) = on(3);
        assert_eq!(path, Factorisation::Sparse);
        assert!((ls - ld).abs() <= 1e-12 * ld.abs(), "log det {ls} against {ld}");
        let scale = gd.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let err = gs.iter().zip(&gd).fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        assert!(err <= 1e-12 * scale, "gradient differs by {err:e} (scale {scale:e})");
        let (l1, _, g1) = on(1);
        assert_eq!((l1, &g1), (ls, &gs), "the thread count changed the sparse evaluation");
        // every pair weighted: dense, and exactly the dense kernel's numbers
        let full: Vec<f64> = (0..n_pairs(n)).map(|k| 0.1 + (k % 7) as f64 * 0.01).collect();
        let mut g = vec![0.0; n_pairs(n)];
        let (l, path) = log_det_grad_auto(n, &full, a, b, &mut g).unwrap();
        let mut gref = vec![0.0; n_pairs(n)];
        assert_eq!(path, Factorisation::Dense);
        assert_eq!((l, &g), (log_det_grad(n, &full, a, b, &mut gref).unwrap(), &gref));
        // below the size bound the sparse pattern stays dense too
        let m = SPARSE_EVAL_MIN_N - 1;
        let small = sparse_weights(m, 4, 18);
        let mut g = vec![0.0; n_pairs(m)];
        assert_eq!(log_det_grad_auto(m, &small, a, b, &mut g).unwrap().1, Factorisation::Dense);
        // bad values on the sparse path are errors, as on the dense one
        let mut bad = w.clone();
        let k = bad.iter().position(|&v| v > 0.0).unwrap();
        bad[k] = f64::NAN;
        assert!(matches!(log_det_grad_auto(n, &bad, a, b, &mut gs.clone()), Err(LinalgError::NotFinite { .. })));
        let negative: Vec<f64> = w.iter().map(|&v| -v).collect();
        assert!(matches!(log_det_grad_auto(n, &negative, a, b, &mut gs.clone()), Err(LinalgError::NotPositiveDefinite { .. })));
    }

    #[test]
    fn non_finite_or_indefinite_input_is_an_error() {
        let n = 4;
        let mut g = vec![0.0; n_pairs(n)];
        let mut w = vec![0.5; n_pairs(n)];
        w[2] = f64::NAN;
        assert!(matches!(log_det_grad(n, &w, 1.0, 1.0, &mut g), Err(LinalgError::NotFinite { .. })));
        w[2] = f64::INFINITY;
        assert!(matches!(log_det_grad(n, &w, 1.0, 1.0, &mut g), Err(LinalgError::NotFinite { .. })));
        // negative weights can make Q indefinite
        let w = vec![-1.0; n_pairs(n)];
        assert!(matches!(log_det_grad(n, &w, 0.1, 1.0, &mut g), Err(LinalgError::NotPositiveDefinite { .. })));
    }
}
