//! Numerical optimisers shared by the methods: bound-constrained quasi-Newton minimisation of
//! `f(x)` subject to `l <= x <= u` (any bound may be infinite), used by MPME (002 eq. 13) and ESL
//! (001 eq. 20).
//!
//! Two solvers behind one interface ([`minimize`], [`BoundedOptions`], [`BoundedResult`]):
//! - [`Solver::Lbfgsb`] ([`lbfgsb`]): the reference Fortran **L-BFGS-B 3.0** (Byrd, Lu, Nocedal &
//!   Zhu 1995; Morales & Nocedal 2011): generalized Cauchy point, subspace minimisation, Moré-Thuente
//!   line search. Its bookkeeping is O(m n) per iteration with sequential sweeps (breakpoint heap,
//!   `formk` updates per entering / leaving variable) that dominate when n is in the millions.
//! - [`Solver::Projected`] ([`projected_lbfgs`]): a two-metric projected L-BFGS (Bertsekas 1982's
//!   projected Newton with the L-BFGS compact inverse Hessian of Byrd, Nocedal & Schnabel 1994):
//!   two streaming passes over the 2m stored vectors per iteration, chunked and rayon-parallel,
//!   deterministic for any thread count.
//!
//! Both use the same stopping rules: `||proj g||_inf <= pgtol`, the relative reduction
//! `(f_k - f_{k+1}) / max(|f_k|, |f_{k+1}|, 1) <= factr * eps_mach`, `max_iter`, `max_eval`.
//!
//! Without bounds, [`lbfgs::minimize`] (plain L-BFGS with strong Wolfe steps, the same options,
//! result type and stopping rules) avoids the Fortran code's Cauchy point and subspace bookkeeping,
//! which cost more than a cheap objective at large n (FastMVU's stress fits).

pub mod lbfgs;
pub mod lbfgsb;
pub mod projected_lbfgs;
pub mod projections;

/// Which bound-constrained solver [`minimize`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Solver {
    /// Fortran L-BFGS-B 3.0 ([`lbfgsb`]).
    Lbfgsb,
    /// Two-metric projected L-BFGS ([`projected_lbfgs`]).
    Projected,
}

impl Solver {
    /// Both solvers (for tests that must hold for each).
    pub const ALL: [Solver; 2] = [Solver::Lbfgsb, Solver::Projected];

    /// The parameter value naming this solver (`lbfgsb` / `projected`).
    pub fn name(self) -> &'static str {
        match self {
            Solver::Lbfgsb => "lbfgsb",
            Solver::Projected => "projected",
        }
    }

    /// Parses [`Solver::name`].
    pub fn from_name(s: &str) -> Option<Solver> {
        Solver::ALL.into_iter().find(|v| v.name() == s)
    }
}

/// Options shared by both solvers (defaults: those of `scipy.optimize.fmin_l_bfgs_b`).
#[derive(Debug, Clone, PartialEq)]
pub struct BoundedOptions {
    /// Number of correction pairs kept in the limited-memory matrix (3..20 typical; default 10).
    pub m: usize,
    /// Maximum number of iterations (default 15000).
    pub max_iter: usize,
    /// Maximum number of objective + gradient evaluations (default 15000).
    pub max_eval: usize,
    /// Stop when `||proj g||_inf <= pgtol` (default 1e-5).
    pub pgtol: f64,
    /// Stop when the relative reduction of `f` is `<= factr * eps_mach` (default 1e7, i.e. ~2.2e-9;
    /// 1e12 is "low accuracy", 10 "extremely high accuracy"; 0 disables the test).
    pub factr: f64,
    /// Relative accuracy of the computed `f` (0: exact enough for the Armijo test). When positive,
    /// the projected solver also accepts a trial point that meets the *approximate Wolfe
    /// conditions* of Hager & Zhang (2005): `f(x(a)) <= f(x) + noise |f(x)|` and
    /// `sigma s <= g(x(a))^T (x(a) - x) <= (2 delta - 1) s`, `s = g(x)^T (x(a) - x)`, `delta = 0.1`,
    /// `sigma = 0.9`: near the optimum, where the decrease the Armijo test asks for is below the
    /// rounding error of `f`, the slope still shows a step that brings the gradient down. The
    /// Fortran L-BFGS-B ignores it.
    pub noise: f64,
}

impl Default for BoundedOptions {
    fn default() -> Self {
        BoundedOptions { m: 10, max_iter: 15000, max_eval: 15000, pgtol: 1e-5, factr: 1e7, noise: 0.0 }
    }
}

/// The outcome of [`minimize`].
#[derive(Debug, Clone)]
pub struct BoundedResult {
    /// The final (accepted) iterate, inside the bounds.
    pub x: Vec<f64>,
    /// `f(x)`.
    pub f: f64,
    /// The gradient at `x`.
    pub gradient: Vec<f64>,
    /// Iterations performed (accepted steps).
    pub iterations: usize,
    /// Objective + gradient evaluations.
    pub evaluations: usize,
    /// `||proj g(x)||_inf` with `proj g_i = clamp(x_i - g_i, l_i, u_i) - x_i`: the KKT residual of
    /// the bound-constrained problem (0 exactly at a KKT point).
    pub projected_gradient_norm: f64,
    /// Whether a convergence test (`factr` or `pgtol`) was met.
    pub converged: bool,
    /// Why the solver stopped, e.g. `CONVERGENCE: NORM_OF_PROJECTED_GRADIENT_<=_PGTOL` (the
    /// Fortran task strings; the projected solver uses the same wording).
    pub message: String,
    /// `f` at the (projected) starting point, then after every iteration: `history.len() == iterations + 1`.
    pub history: Vec<f64>,
}

/// Invalid arguments to [`minimize`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BoundedError {
    /// `x0`, `lower` and `upper` differ in length, or are empty / too long.
    #[error("bounded minimisation: {0}")]
    Shape(String),
    /// A bound is NaN, `lower > upper`, `lower = +inf` or `upper = -inf`.
    #[error("bounded minimisation: invalid bounds at index {index}: [{lower}, {upper}]")]
    Bounds {
        /// 0-based index of the coordinate with the invalid bounds.
        index: usize,
        /// The lower bound given for that coordinate.
        lower: f64,
        /// The upper bound given for that coordinate.
        upper: f64,
    },
    /// The starting point or an option is invalid.
    #[error("bounded minimisation: {0}")]
    Invalid(String),
    /// `f` or its gradient is not finite at the starting point.
    #[error("bounded minimisation: objective or gradient not finite at the starting point (f = {0})")]
    NonFiniteStart(f64),
}

/// Minimises `f` over the box `lower <= x <= upper` from `x0` (projected into the box first) with
/// `solver`.
///
/// `f(x, g)` returns `f(x)` and writes the gradient into `g` (same length as `x`). Bounds may be
/// infinite (`f64::NEG_INFINITY` / `f64::INFINITY`). A non-finite `f` or gradient at a trial point
/// after the start is treated as "outside the domain" by the projected solver (the step is
/// shortened) and stops the Fortran one; either way the returned point is an accepted iterate with
/// `f` and `g` evaluated there.
pub fn minimize<F>(solver: Solver, f: F, x0: &[f64], lower: &[f64], upper: &[f64], opts: &BoundedOptions) -> Result<BoundedResult, BoundedError>
where
    F: FnMut(&[f64], &mut [f64]) -> f64,
{
    match solver {
        Solver::Lbfgsb => lbfgsb::minimize(f, x0, lower, upper, opts),
        Solver::Projected => projected_lbfgs::minimize(f, x0, lower, upper, opts),
    }
}

/// `a^T b` with eight independent accumulators (lane `k mod 8`) added pairwise at the end:
/// vectorisable, in a fixed order, so the same bits on every machine and thread count.
#[inline]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0f64; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f64 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// `sum_k a_k` in the lanes and order of [`dot`] (so `sum(a)` is `dot(a, 1)` bit for bit).
#[inline]
pub fn sum(a: &[f64]) -> f64 {
    let mut acc = [0.0f64; 8];
    let ca = a.chunks_exact(8);
    let tail: f64 = ca.remainder().iter().sum();
    for x in ca {
        for k in 0..8 {
            acc[k] += x[k];
        }
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// `||proj g||_inf` with `proj g_i = clamp(x_i - g_i, l_i, u_i) - x_i` (infinite bounds allowed).
pub fn projected_gradient_norm(x: &[f64], g: &[f64], lower: &[f64], upper: &[f64]) -> f64 {
    x.iter().zip(g).zip(lower.iter().zip(upper)).map(|((&xi, &gi), (&l, &u))| ((xi - gi).max(l).min(u) - xi).abs()).fold(0.0, f64::max)
}

/// Checks shared by both solvers: lengths, bounds (`l <= u`, no NaN, `l < +inf`, `u > -inf`),
/// a finite `x0`, `1 <= m <= 1000`, `pgtol, factr >= 0`.
pub(crate) fn check_problem(x0: &[f64], lower: &[f64], upper: &[f64], opts: &BoundedOptions) -> Result<(), BoundedError> {
    let n = x0.len();
    if n == 0 {
        return Err(BoundedError::Shape("no variables".into()));
    }
    if lower.len() != n || upper.len() != n {
        return Err(BoundedError::Shape(format!("x0 has {n} entries, lower {}, upper {}", lower.len(), upper.len())));
    }
    if opts.m == 0 || opts.m > 1000 {
        return Err(BoundedError::Invalid(format!("m = {} must be in [1, 1000]", opts.m)));
    }
    if !(opts.pgtol >= 0.0) || !(opts.factr >= 0.0) {
        return Err(BoundedError::Invalid(format!("pgtol = {} and factr = {} must be >= 0", opts.pgtol, opts.factr)));
    }
    if let Some(i) = x0.iter().position(|v| !v.is_finite()) {
        return Err(BoundedError::Invalid(format!("x0[{i}] = {} is not finite", x0[i])));
    }
    for (i, (&lo, &hi)) in lower.iter().zip(upper).enumerate() {
        if lo.is_nan() || hi.is_nan() || lo > hi || lo == f64::INFINITY || hi == f64::NEG_INFINITY {
            return Err(BoundedError::Bounds { index: i, lower: lo, upper: hi });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
