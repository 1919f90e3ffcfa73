//! Bound-constrained quasi-Newton minimisation: L-BFGS-B.
//!
//! Solves `min f(x)` subject to `l <= x <= u` (any bound may be infinite) with the limited-memory
//! BFGS method for bound constraints of Byrd, Lu, Nocedal & Zhu (1995): each iteration finds the
//! generalized Cauchy point along the projected steepest-descent path of the L-BFGS quadratic model
//! (memory `m`), minimises the model over the variables left free there (direct primal subspace
//! method), and takes a Moré-Thuente line search (`dcsrch`) along the projected direction.
//!
//! This is a safe wrapper around the reference Fortran implementation, **L-BFGS-B 3.0** (Morales &
//! Nocedal 2011, the version scipy wrapped until 1.15), called through its reverse-communication
//! entry point `setulb` from the `lbfgsb-sys` crate (compiled from source with `gfortran`, linked
//! statically). The wrapper owns all workspaces (`wa`: `2mn + 5n + 11m^2 + 8m` doubles, `iwa`: `3n`
//! integers), so calls are independent and thread-safe (the Fortran code keeps its state only in
//! the arrays passed to it).
//!
//! Stopping rules (those of the Fortran code, plus two counters):
//! - `(f_k - f_{k+1}) / max(|f_k|, |f_{k+1}|, 1) <= factr * eps_mach` (converged),
//! - `||proj g||_inf <= pgtol` (converged), where `proj g_i = clamp(x_i - g_i, l_i, u_i) - x_i`,
//! - `max_iter` iterations or `max_eval` evaluations (not converged),
//! - an abnormal line search (not converged: usually the gradient is inconsistent with `f`, or the
//!   problem is solved to machine precision).
//!
//! The returned point is always an accepted iterate with `f` and `g` evaluated there (never a
//! trial point of an interrupted line search).

use lbfgsb_sys::lbfgsb::setulb_;
use std::os::raw::{c_char, c_int};

/// Options of [`minimize`] (defaults: those of `scipy.optimize.fmin_l_bfgs_b`).
#[derive(Debug, Clone, PartialEq)]
pub struct LbfgsbOptions {
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
}

impl Default for LbfgsbOptions {
    fn default() -> Self {
        LbfgsbOptions { m: 10, max_iter: 15000, max_eval: 15000, pgtol: 1e-5, factr: 1e7 }
    }
}

/// The outcome of [`minimize`].
#[derive(Debug, Clone)]
pub struct LbfgsbResult {
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
    /// The Fortran task string at exit (e.g. `CONVERGENCE: NORM_OF_PROJECTED_GRADIENT_<=_PGTOL`),
    /// or the wrapper's reason for stopping.
    pub message: String,
    /// `f` at the (projected) starting point, then after every iteration: `history.len() == iterations + 1`.
    pub history: Vec<f64>,
}

/// Invalid arguments to [`minimize`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LbfgsbError {
    /// `x0`, `lower` and `upper` differ in length, or are empty / too long.
    #[error("L-BFGS-B: {0}")]
    Shape(String),
    /// A bound is NaN, `lower > upper`, `lower = +inf` or `upper = -inf`.
    #[error("L-BFGS-B: invalid bounds at index {index}: [{lower}, {upper}]")]
    Bounds { index: usize, lower: f64, upper: f64 },
    /// The starting point or an option is invalid.
    #[error("L-BFGS-B: {0}")]
    Invalid(String),
    /// `f` or its gradient is not finite at the starting point.
    #[error("L-BFGS-B: objective or gradient not finite at the starting point (f = {0})")]
    NonFiniteStart(f64),
}

const TASK_LEN: usize = 60;

fn set_str(buf: &mut [c_char; TASK_LEN], s: &str) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = *s.as_bytes().get(i).unwrap_or(&b' ') as c_char;
    }
}

fn get_str(buf: &[c_char; TASK_LEN]) -> String {
    let bytes: Vec<u8> = buf.iter().map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).trim_end().to_string()
}

/// `||proj g||_inf` with `proj g_i = clamp(x_i - g_i, l_i, u_i) - x_i` (infinite bounds allowed).
pub fn projected_gradient_norm(x: &[f64], g: &[f64], lower: &[f64], upper: &[f64]) -> f64 {
    x.iter()
        .zip(g)
        .zip(lower.iter().zip(upper))
        .map(|((&xi, &gi), (&l, &u))| ((xi - gi).max(l).min(u) - xi).abs())
        .fold(0.0, f64::max)
}

/// Minimises `f` over the box `lower <= x <= upper` from `x0` (projected into the box first).
///
/// `f(x, g)` returns `f(x)` and writes the gradient into `g` (same length as `x`). Bounds may be
/// infinite (`f64::NEG_INFINITY` / `f64::INFINITY`). A non-finite `f` or gradient after the start
/// stops the run (not converged) and returns the last accepted iterate.
pub fn minimize<F>(mut f: F, x0: &[f64], lower: &[f64], upper: &[f64], opts: &LbfgsbOptions) -> Result<LbfgsbResult, LbfgsbError>
where
    F: FnMut(&[f64], &mut [f64]) -> f64,
{
    let n = x0.len();
    if n == 0 {
        return Err(LbfgsbError::Shape("no variables".into()));
    }
    if lower.len() != n || upper.len() != n {
        return Err(LbfgsbError::Shape(format!("x0 has {n} entries, lower {}, upper {}", lower.len(), upper.len())));
    }
    if n > c_int::MAX as usize / 3 {
        return Err(LbfgsbError::Shape(format!("{n} variables exceed the Fortran integer range")));
    }
    if opts.m == 0 || opts.m > 1000 {
        return Err(LbfgsbError::Invalid(format!("m = {} must be in [1, 1000]", opts.m)));
    }
    if !(opts.pgtol >= 0.0) || !(opts.factr >= 0.0) {
        return Err(LbfgsbError::Invalid(format!("pgtol = {} and factr = {} must be >= 0", opts.pgtol, opts.factr)));
    }
    if let Some(i) = x0.iter().position(|v| !v.is_finite()) {
        return Err(LbfgsbError::Invalid(format!("x0[{i}] = {} is not finite", x0[i])));
    }
    let mut nbd = vec![0 as c_int; n];
    let mut l = vec![0.0f64; n];
    let mut u = vec![0.0f64; n];
    for i in 0..n {
        let (lo, hi) = (lower[i], upper[i]);
        if lo.is_nan() || hi.is_nan() || lo > hi || lo == f64::INFINITY || hi == f64::NEG_INFINITY {
            return Err(LbfgsbError::Bounds { index: i, lower: lo, upper: hi });
        }
        let (has_l, has_u) = (lo.is_finite(), hi.is_finite());
        nbd[i] = match (has_l, has_u) {
            (false, false) => 0,
            (true, false) => 1,
            (true, true) => 2,
            (false, true) => 3,
        };
        if has_l {
            l[i] = lo;
        }
        if has_u {
            u[i] = hi;
        }
    }

    let m = opts.m;
    let n_c = n as c_int;
    let m_c = m as c_int;
    let mut x = x0.to_vec();
    let mut g = vec![0.0f64; n];
    let mut fx = 0.0f64;
    let mut wa = vec![0.0f64; 2 * m * n + 5 * n + 11 * m * m + 8 * m];
    let mut iwa = vec![0 as c_int; 3 * n];
    let mut task = [0 as c_char; TASK_LEN];
    let mut csave = [0 as c_char; TASK_LEN];
    let mut lsave = [0 as c_int; 4];
    let mut isave = [0 as c_int; 44];
    let mut dsave = [0.0f64; 29];
    let iprint: c_int = -1;
    set_str(&mut task, "START");
    set_str(&mut csave, "");

    let mut evaluations = 0usize;
    let mut history: Vec<f64> = Vec::new();
    // last accepted iterate (x, f, g)
    let mut acc_x: Vec<f64> = Vec::new();
    let mut acc_g: Vec<f64> = Vec::new();
    let mut acc_f = f64::NAN;
    let converged;
    let message;
    loop {
        // SAFETY: every array has the length setulb documents for (n, m); the strings are 60
        // characters (the Fortran declarations are CHARACTER*60, so the hidden length arguments
        // that gfortran would append are not read).
        unsafe {
            setulb_(
                &n_c,
                &m_c,
                x.as_mut_ptr(),
                l.as_ptr(),
                u.as_ptr(),
                nbd.as_ptr(),
                &fx,
                g.as_ptr(),
                &opts.factr,
                &opts.pgtol,
                wa.as_mut_ptr(),
                iwa.as_mut_ptr(),
                task.as_mut_ptr(),
                &iprint,
                csave.as_mut_ptr(),
                lsave.as_mut_ptr(),
                isave.as_mut_ptr(),
                dsave.as_mut_ptr(),
            );
        }
        let t = get_str(&task);
        if t.starts_with("FG") {
            if evaluations >= opts.max_eval {
                converged = false;
                message = format!("STOP: {} evaluations (max_eval)", evaluations);
                break;
            }
            fx = f(&x, &mut g);
            evaluations += 1;
            let finite = fx.is_finite() && g.iter().all(|v| v.is_finite());
            if history.is_empty() {
                if !finite {
                    return Err(LbfgsbError::NonFiniteStart(fx));
                }
                history.push(fx);
                acc_x = x.clone();
                acc_g = g.clone();
                acc_f = fx;
            } else if !finite {
                converged = false;
                message = format!("STOP: objective or gradient not finite at evaluation {evaluations} (f = {fx})");
                break;
            }
        } else if t.starts_with("NEW_X") {
            history.push(fx);
            acc_x.copy_from_slice(&x);
            acc_g.copy_from_slice(&g);
            acc_f = fx;
            if history.len() - 1 >= opts.max_iter {
                converged = false;
                message = format!("STOP: {} iterations (max_iter)", history.len() - 1);
                break;
            }
        } else {
            converged = t.starts_with("CONV");
            message = t;
            // CONV / ABNORMAL / WARNING / ERROR: the Fortran x, f, g are the last accepted iterate
            // (an abnormal line search restores it); keep our copy, which is the same point.
            break;
        }
    }
    if acc_x.is_empty() {
        return Err(LbfgsbError::Invalid(format!("setulb stopped before the first evaluation: {message}")));
    }
    let pg = projected_gradient_norm(&acc_x, &acc_g, lower, upper);
    Ok(LbfgsbResult {
        x: acc_x,
        f: acc_f,
        gradient: acc_g,
        iterations: history.len() - 1,
        evaluations,
        projected_gradient_norm: pg,
        converged,
        message,
        history,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> LbfgsbOptions {
        LbfgsbOptions { pgtol: 1e-10, factr: 10.0, ..Default::default() }
    }

    /// f = sum_i c_i (x_i - a_i)^2 on a box that excludes some a_i: the solution is the projection
    /// of a onto the box (separable, so this is exact).
    #[test]
    fn quadratic_with_solution_outside_the_box() {
        let a = [3.0, -2.0, 0.5, 10.0, -7.0];
        let c = [1.0, 2.0, 0.5, 4.0, 1.5];
        let lo = [-1.0, -1.0, -1.0, f64::NEG_INFINITY, 0.0];
        let hi = [1.0, 1.0, 1.0, 2.0, f64::INFINITY];
        let r = minimize(
            |x, g| {
                let mut f = 0.0;
                for i in 0..5 {
                    f += c[i] * (x[i] - a[i]).powi(2);
                    g[i] = 2.0 * c[i] * (x[i] - a[i]);
                }
                f
            },
            &[0.0; 5],
            &lo,
            &hi,
            &opts(),
        )
        .unwrap();
        let want = [1.0, -1.0, 0.5, 2.0, 0.0];
        for i in 0..5 {
            assert!((r.x[i] - want[i]).abs() < 1e-9, "x[{i}] = {} != {}", r.x[i], want[i]);
        }
        assert!(r.converged, "{}", r.message);
        assert!(r.projected_gradient_norm < 1e-8, "pg = {}", r.projected_gradient_norm);
        // active bounds: the gradient points outwards there
        assert!(r.gradient[0] < 0.0 && r.gradient[1] > 0.0 && r.gradient[3] < 0.0 && r.gradient[4] > 0.0);
        eprintln!("quadratic: {} its, {} evals, pg = {:.2e}, {}", r.iterations, r.evaluations, r.projected_gradient_norm, r.message);
    }

    fn rosenbrock(x: &[f64], g: &mut [f64]) -> f64 {
        let n = x.len();
        let mut f = 0.0;
        g.iter_mut().for_each(|v| *v = 0.0);
        for i in 0..n - 1 {
            let t1 = x[i + 1] - x[i] * x[i];
            let t2 = 1.0 - x[i];
            f += 100.0 * t1 * t1 + t2 * t2;
            g[i] += -400.0 * x[i] * t1 - 2.0 * t2;
            g[i + 1] += 200.0 * t1;
        }
        f
    }

    /// Unconstrained Rosenbrock (loose box): minimum at 1.
    #[test]
    fn rosenbrock_interior_minimum() {
        let n = 10;
        let r = minimize(rosenbrock, &vec![-1.2; n], &vec![-5.0; n], &vec![5.0; n], &opts()).unwrap();
        assert!(r.x.iter().all(|&v| (v - 1.0).abs() < 1e-6), "{:?}", r.x);
        assert!(r.f < 1e-12);
        for w in r.history.windows(2) {
            assert!(w[1] <= w[0], "history must not increase: {} -> {}", w[0], w[1]);
        }
        eprintln!("rosenbrock: {} its, {} evals, pg = {:.2e}, {}", r.iterations, r.evaluations, r.projected_gradient_norm, r.message);
    }

    /// The `driver1` problem of the L-BFGS-B distribution: n = 25,
    /// `f = 0.25 (x_1 - 1)^2 + sum_{i>=2} 4 (x_i - x_{i-1}^2)^2`, odd variables (1-based) in
    /// [1, 100], even ones in [-100, 100], x0 = 3. Its unique minimiser x = 1 is feasible (f* = 0)
    /// with the odd variables at their lower bound.
    #[test]
    fn bounded_rosenbrock_is_a_kkt_point() {
        let n = 25;
        let lo: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { 1.0 } else { -100.0 }).collect();
        let hi = vec![100.0; n];
        // driver1 uses a different (extended) Rosenbrock: f = 0.25 (x1 - 1)^2 + sum 4 (x_i - x_{i-1}^2)^2
        let f = |x: &[f64], g: &mut [f64]| {
            let n = x.len();
            let mut t1 = x[1] - x[0] * x[0];
            g[0] = 2.0 * (x[0] - 1.0) - 16.0 * x[0] * t1;
            let mut fx = 0.25 * (x[0] - 1.0).powi(2);
            for i in 1..n - 1 {
                let t2 = t1;
                t1 = x[i + 1] - x[i] * x[i];
                g[i] = 8.0 * t2 - 16.0 * x[i] * t1;
            }
            g[n - 1] = 8.0 * t1;
            for i in 1..n {
                fx += 4.0 * (x[i] - x[i - 1] * x[i - 1]).powi(2);
            }
            fx
        };
        let r = minimize(f, &vec![3.0; n], &lo, &hi, &opts()).unwrap();
        assert!(r.converged, "{}", r.message);
        assert!(r.projected_gradient_norm < 1e-6, "pg = {}", r.projected_gradient_norm);
        // the global minimum x = 1 is feasible: f* = 0
        assert!(r.f < 1e-10, "f = {}", r.f);
        eprintln!("driver1: {} its, {} evals, f = {:.3e}, pg = {:.2e}, {}", r.iterations, r.evaluations, r.f, r.projected_gradient_norm, r.message);
    }

    /// Rosenbrock with the minimum cut off by x_i <= 0.5 (n = 2): the KKT point is x = (0.5, 0.25)
    /// with x_1 at its upper bound (the first-order conditions: df/dx2 = 0 gives x2 = x1^2, and
    /// df/dx1 = -2 (1 - x1) < 0 pushes against the bound).
    #[test]
    fn rosenbrock_with_active_upper_bound() {
        let r = minimize(rosenbrock, &[-1.0, 0.0], &[f64::NEG_INFINITY; 2], &[0.5, 0.5], &opts()).unwrap();
        assert!((r.x[0] - 0.5).abs() < 1e-9 && (r.x[1] - 0.25).abs() < 1e-8, "{:?}", r.x);
        assert!((r.f - 0.25).abs() < 1e-12);
        assert!(r.projected_gradient_norm < 1e-8);
        assert!((r.gradient[0] + 1.0).abs() < 1e-6, "multiplier of x1 <= 0.5 is 1: g = {:?}", r.gradient);
    }

    /// A convex QP with a known KKT point: min 1/2 x^T A x - b^T x, x >= 0, with A SPD. The
    /// solution satisfies x >= 0, g = A x - b >= 0 and x_i g_i = 0; checked against an
    /// exhaustive active-set enumeration (n = 6: 64 sets).
    #[test]
    fn nonnegative_qp_matches_active_set_enumeration() {
        let n = 6;
        let mut a = vec![vec![0.0; n]; n];
        for i in 0..n {
            for j in 0..n {
                a[i][j] = 1.0 / (1.0 + (i as f64 - j as f64).abs()) + if i == j { 1.0 } else { 0.0 };
            }
        }
        let b = [1.0, -2.0, 0.5, 3.0, -1.0, 0.2];
        let fg = |x: &[f64], g: &mut [f64]| {
            let mut f = 0.0;
            for i in 0..n {
                g[i] = (0..n).map(|j| a[i][j] * x[j]).sum::<f64>() - b[i];
                f += 0.5 * x[i] * (g[i] + b[i]) - b[i] * x[i];
            }
            f
        };
        let r = minimize(fg, &[1.0; 6], &[0.0; 6], &[f64::INFINITY; 6], &opts()).unwrap();
        // enumerate the free sets: solve A_FF x_F = b_F, keep the one satisfying the KKT conditions
        let mut best: Option<Vec<f64>> = None;
        for mask in 0u32..(1 << n) {
            let free: Vec<usize> = (0..n).filter(|i| mask >> i & 1 == 1).collect();
            let k = free.len();
            let mut m = vec![vec![0.0; k + 1]; k];
            for (r_, &i) in free.iter().enumerate() {
                for (c, &j) in free.iter().enumerate() {
                    m[r_][c] = a[i][j];
                }
                m[r_][k] = b[i];
            }
            // Gaussian elimination (SPD, no pivoting needed)
            for p in 0..k {
                for r2 in p + 1..k {
                    let fac = m[r2][p] / m[p][p];
                    for c in p..=k {
                        m[r2][c] -= fac * m[p][c];
                    }
                }
            }
            let mut xf = vec![0.0; k];
            for p in (0..k).rev() {
                xf[p] = (m[p][k] - (p + 1..k).map(|c| m[p][c] * xf[c]).sum::<f64>()) / m[p][p];
            }
            let mut x = vec![0.0; n];
            for (r_, &i) in free.iter().enumerate() {
                x[i] = xf[r_];
            }
            let g: Vec<f64> = (0..n).map(|i| (0..n).map(|j| a[i][j] * x[j]).sum::<f64>() - b[i]).collect();
            if x.iter().all(|&v| v >= -1e-12) && (0..n).all(|i| x[i] > 1e-12 || g[i] >= -1e-12) {
                best = Some(x);
            }
        }
        let want = best.expect("a KKT point exists");
        for i in 0..n {
            assert!((r.x[i] - want[i]).abs() < 1e-8, "x = {:?}, want {:?}", r.x, want);
        }
        assert!(want.iter().any(|&v| v == 0.0), "the test needs an active bound");
        assert!(r.projected_gradient_norm < 1e-9);
    }

    #[test]
    fn bad_arguments_are_errors() {
        let f = |_: &[f64], g: &mut [f64]| {
            g[0] = 0.0;
            0.0
        };
        assert!(matches!(minimize(f, &[0.0], &[1.0], &[0.0], &opts()), Err(LbfgsbError::Bounds { .. })));
        assert!(matches!(minimize(f, &[0.0], &[0.0, 1.0], &[1.0], &opts()), Err(LbfgsbError::Shape(_))));
        assert!(matches!(minimize(f, &[f64::NAN], &[0.0], &[1.0], &opts()), Err(LbfgsbError::Invalid(_))));
        assert!(matches!(minimize(f, &[0.0], &[f64::NAN], &[1.0], &opts()), Err(LbfgsbError::Bounds { .. })));
        let nan = |_: &[f64], g: &mut [f64]| {
            g[0] = 0.0;
            f64::NAN
        };
        assert!(matches!(minimize(nan, &[0.0], &[0.0], &[1.0], &opts()), Err(LbfgsbError::NonFiniteStart(_))));
    }

    #[test]
    fn iteration_limit_is_reported_and_point_is_accepted() {
        let o = LbfgsbOptions { max_iter: 3, ..opts() };
        let r = minimize(rosenbrock, &[-1.2, 1.0], &[-5.0; 2], &[5.0; 2], &o).unwrap();
        assert!(!r.converged && r.iterations == 3 && r.message.contains("max_iter"), "{}", r.message);
        let mut g = [0.0; 2];
        assert_eq!(rosenbrock(&r.x, &mut g), r.f);
        assert_eq!(g.to_vec(), r.gradient);
    }
}
