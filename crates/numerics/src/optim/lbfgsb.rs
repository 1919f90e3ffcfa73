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

use super::{check_problem, projected_gradient_norm, BoundedError, BoundedOptions, BoundedResult};
use lbfgsb_sys::lbfgsb::setulb_;
use std::os::raw::{c_char, c_int};

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

/// Minimises `f` over the box `lower <= x <= upper` from `x0` (projected into the box first).
///
/// `f(x, g)` returns `f(x)` and writes the gradient into `g` (same length as `x`). Bounds may be
/// infinite (`f64::NEG_INFINITY` / `f64::INFINITY`). A non-finite `f` or gradient after the start
/// stops the run (not converged) and returns the last accepted iterate.
pub fn minimize<F>(mut f: F, x0: &[f64], lower: &[f64], upper: &[f64], opts: &BoundedOptions) -> Result<BoundedResult, BoundedError>
where
    F: FnMut(&[f64], &mut [f64]) -> f64,
{
    check_problem(x0, lower, upper, opts)?;
    let n = x0.len();
    if n > c_int::MAX as usize / 3 {
        return Err(BoundedError::Shape(format!("{n} variables exceed the Fortran integer range")));
    }
    let mut nbd = vec![0 as c_int; n];
    let mut l = vec![0.0f64; n];
    let mut u = vec![0.0f64; n];
    for i in 0..n {
        let (lo, hi) = (lower[i], upper[i]);
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
                    return Err(BoundedError::NonFiniteStart(fx));
                }
                history.push(fx);
                crate::progress::report(history.len(), fx);
                crate::progress::report(history.len(), fx);
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
            crate::progress::report(history.len(), fx);
            acc_x.copy_from_slice(&x);
            acc_g.copy_from_slice(&g);
            acc_f = fx;
            if history.len() > opts.max_iter {
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
        return Err(BoundedError::Invalid(format!("setulb stopped before the first evaluation: {message}")));
    }
    let pg = projected_gradient_norm(&acc_x, &acc_g, lower, upper);
    Ok(BoundedResult {
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
