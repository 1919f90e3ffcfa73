//! Unconstrained L-BFGS: `min f(x)` over all of `R^n`.
//!
//! Each iteration (Nocedal 1980; Liu & Nocedal 1989):
//!
//! 1. **Direction** `d = -H g` by the two-loop recursion over the `m` newest pairs
//!    `s = x_{k+1} - x_k`, `y = g_{k+1} - g_k`, with `H_0 = gamma I`,
//!    `gamma = s^T y / y^T y` of the newest pair. Without a pair (the first iteration, or after a
//!    reset) `d = -g`.
//! 2. **Line search** along `d` for a step `a` meeting the strong Wolfe conditions
//!    `f(x + a d) <= f(x) + c1 a g^T d` and `|g(x + a d)^T d| <= c2 |g^T d|` (`c1 = 1e-4`,
//!    `c2 = 0.9`): Nocedal & Wright (2006) Algorithms 3.5 and 3.6, bracketing from `a = 1`
//!    (without a pair from `a = min(1, 1 / ||d||_2)`, as L-BFGS-B), growing the step by 4x, and
//!    zooming by safeguarded cubic interpolation. A trial point where `f` or `g` is not finite
//!    counts as too long a step. At most [`MAX_TRIALS`] evaluations; a search that found only a
//!    sufficient decrease takes that point (the pair is still stored when `s^T y > 0`), one that found
//!    none clears the memory and retries from `-g`, and fails only then.
//! 3. **Memory.** The pair is stored when `s^T y > eps_mach y^T y` (so that `H` stays positive
//!    definite), displacing the oldest of `m`.
//!
//! Stopping rules, with L-BFGS-B's wording ([`super::lbfgsb`]): `||g||_inf <= pgtol`, the relative
//! reduction `(f_k - f_{k+1}) / max(|f_k|, |f_{k+1}|, 1) <= factr * eps_mach` (both converged),
//! `max_iter` iterations, `max_eval` evaluations, a failed line search (not converged). The result
//! is always an accepted iterate with `f` and `g` evaluated there.
//!
//! Why beside the Fortran L-BFGS-B: with no bounds its generalized Cauchy point, `formk` and
//! subspace minimisation still run every iteration, a few scalar, indexed sweeps over the `2m`
//! stored vectors. FastMVU on isolet at k = 50, whose 300-dimensional stress fit has n = 468,000
//! variables, spent 42% of its run in the Fortran code, about as much as in the stress itself
//! (38%; `perf`). Here an iteration is `4 m n` flops for the two-loop recursion plus `O(n)`, in vectorised eight-lane dot products ([`super::dot`]) in a fixed order:
//! the same bits on every machine and thread count.

use super::{dot, BoundedError, BoundedOptions, BoundedResult};
use std::collections::VecDeque;

/// Sufficient-decrease constant `c1` of the Wolfe conditions.
pub const WOLFE_C1: f64 = 1e-4;
/// Curvature constant `c2` of the strong Wolfe conditions (0.9: the usual quasi-Newton choice).
pub const WOLFE_C2: f64 = 0.9;
/// Evaluations per line search before it counts as failed.
pub const MAX_TRIALS: usize = 20;
/// Factor by which the bracketing phase grows the trial step.
const EXPAND: f64 = 4.0;

/// `y += a x`.
#[inline]
fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
    y.iter_mut().zip(x).for_each(|(yi, xi)| *yi += a * xi);
}

/// A point of the line search: the step, `f` and the slope `g^T d` there (`x` and `g` live in
/// the caller's buffers).
#[derive(Debug, Clone, Copy)]
struct Trial {
    step: f64,
    f: f64,
    slope: f64,
}

/// The minimiser of the cubic through `(a, fa, da)` and `(b, fb, db)` (values and slopes),
/// kept within `[lo + 0.1 w, hi - 0.1 w]` of the interval between them; the bisection point
/// when the cubic has no usable minimiser.
fn cubic_step(a: Trial, b: Trial) -> f64 {
    let (lo, hi) = (a.step.min(b.step), a.step.max(b.step));
    let w = hi - lo;
    let d1 = a.slope + b.slope - 3.0 * (a.f - b.f) / (a.step - b.step);
    let disc = d1 * d1 - a.slope * b.slope;
    let mid = 0.5 * (lo + hi);
    if !(disc >= 0.0) || !b.f.is_finite() {
        return mid;
    }
    let d2 = (b.step - a.step).signum() * disc.sqrt();
    let denom = b.slope - a.slope + 2.0 * d2;
    if denom == 0.0 || !denom.is_finite() {
        return mid;
    }
    let t = b.step - (b.step - a.step) * (b.slope + d2 - d1) / denom;
    if !t.is_finite() {
        return mid;
    }
    t.clamp(lo + 0.1 * w, hi - 0.1 * w)
}

/// Minimises `f` over `R^n` from `x0` (module doc). `f(x, g)` returns `f(x)` and writes the
/// gradient into `g`. Uses `opts.m`, `max_iter`, `max_eval`, `pgtol` (on `||g||_inf`) and
/// `factr`; `noise` is ignored. [`BoundedResult::projected_gradient_norm`] is `||g||_inf`.
pub fn minimize<F>(mut f: F, x0: &[f64], opts: &BoundedOptions) -> Result<BoundedResult, BoundedError>
where
    F: FnMut(&[f64], &mut [f64]) -> f64,
{
    let n = x0.len();
    if n == 0 {
        return Err(BoundedError::Shape("no variables".into()));
    }
    if let Some(i) = x0.iter().position(|v| !v.is_finite()) {
        return Err(BoundedError::Invalid(format!("x0[{i}] = {} is not finite", x0[i])));
    }
    if opts.m == 0 || opts.m > 1000 || !(opts.pgtol >= 0.0) || !(opts.factr >= 0.0) {
        return Err(BoundedError::Invalid(format!(
            "need 1 <= m <= 1000, pgtol >= 0, factr >= 0 (m = {}, pgtol = {}, factr = {})",
            opts.m, opts.pgtol, opts.factr
        )));
    }
    let inf_norm = |v: &[f64]| v.iter().fold(0.0f64, |a, x| a.max(x.abs()));
    let mut x = x0.to_vec();
    let mut g = vec![0.0; n];
    let mut fx = f(&x, &mut g);
    let mut evaluations = 1usize;
    if !(fx.is_finite() && g.iter().all(|v| v.is_finite())) {
        return Err(BoundedError::NonFiniteStart(fx));
    }
    let mut history = vec![fx];
    crate::progress::report(1, fx);
    // ring of (s, y, 1 / s^T y), oldest first; buffers are recycled once m pairs exist
    let mut pairs: VecDeque<(Vec<f64>, Vec<f64>, f64)> = VecDeque::with_capacity(opts.m);
    let mut d = vec![0.0; n];
    let mut alpha = vec![0.0; opts.m];
    // trial point and the best sufficient-decrease point of a search (`lo` of the zoom)
    let (mut xt, mut gt) = (vec![0.0; n], vec![0.0; n]);
    let (mut xl, mut gl) = (vec![0.0; n], vec![0.0; n]);
    let eps = f64::EPSILON;
    let (converged, message) = loop {
        if inf_norm(&g) <= opts.pgtol {
            break (true, "CONVERGENCE: NORM_OF_PROJECTED_GRADIENT_<=_PGTOL".to_string());
        }
        if history.len() > opts.max_iter {
            break (false, format!("STOP: {} iterations (max_iter)", history.len() - 1));
        }
        // 1. direction: two-loop recursion
        d.iter_mut().zip(&g).for_each(|(di, gi)| *di = -gi);
        for (k, (s, y, rho)) in pairs.iter().enumerate().rev() {
            alpha[k] = rho * dot(s, &d);
            axpy(-alpha[k], y, &mut d);
        }
        if let Some((s, y, _)) = pairs.back() {
            let gamma = dot(s, y) / dot(y, y);
            d.iter_mut().for_each(|v| *v *= gamma);
        }
        for (k, (s, y, rho)) in pairs.iter().enumerate() {
            let beta = rho * dot(y, &d);
            axpy(alpha[k] - beta, s, &mut d);
        }
        let mut slope0 = dot(&g, &d);
        if !(slope0 < 0.0) {
            // rounding made H g useless: steepest descent, fresh memory
            pairs.clear();
            d.iter_mut().zip(&g).for_each(|(di, gi)| *di = -gi);
            slope0 = dot(&g, &d);
        }
        // 2. strong Wolfe line search (Nocedal & Wright, Alg. 3.5 / 3.6)
        let first = if pairs.is_empty() { (1.0 / dot(&d, &d).sqrt()).min(1.0) } else { 1.0 };
        let start = Trial { step: 0.0, f: fx, slope: slope0 };
        let mut lo = start; // best point with sufficient decrease so far (step 0: none)
        let mut hi: Option<Trial> = None;
        let mut step = first;
        let mut accepted: Option<Trial> = None;
        let mut out_of_budget = false;
        for _ in 0..MAX_TRIALS {
            if evaluations >= opts.max_eval {
                out_of_budget = true;
                break;
            }
            xt.iter_mut().zip(x.iter().zip(&d)).for_each(|(t, (xi, di))| *t = xi + step * di);
            let ft = f(&xt, &mut gt);
            evaluations += 1;
            let finite = ft.is_finite() && gt.iter().all(|v| v.is_finite());
            let trial = Trial { step, f: if finite { ft } else { f64::INFINITY }, slope: if finite { dot(&gt, &d) } else { f64::NAN } };
            let sufficient = finite && trial.f <= fx + WOLFE_C1 * step * slope0;
            // (with lo at step 0, a sufficient decrease already means trial.f < lo.f)
            if !sufficient || trial.f >= lo.f {
                hi = Some(trial);
            } else {
                if trial.slope.abs() <= -WOLFE_C2 * slope0 {
                    accepted = Some(trial);
                    break;
                }
                let keep_lo_side = hi.is_none() && trial.slope < 0.0;
                if !keep_lo_side && trial.slope * (hi.map_or(f64::INFINITY, |h| h.step) - lo.step) >= 0.0 {
                    hi = Some(lo);
                }
                lo = trial;
                std::mem::swap(&mut xl, &mut xt);
                std::mem::swap(&mut gl, &mut gt);
            }
            step = match hi {
                // bracketing: the minimum lies further along
                None => EXPAND * trial.step,
                // zoom between lo and hi
                Some(h) if h.f.is_finite() => cubic_step(lo, h),
                Some(h) => lo.step + 0.1 * (h.step - lo.step),
            };
        }
        let (new_f, step_taken) = match accepted {
            Some(t) => {
                std::mem::swap(&mut xl, &mut xt);
                std::mem::swap(&mut gl, &mut gt);
                (t.f, t.step)
            }
            None if lo.step > 0.0 => (lo.f, lo.step),
            None => {
                if out_of_budget {
                    break (false, format!("STOP: {evaluations} evaluations (max_eval)"));
                }
                if !pairs.is_empty() {
                    pairs.clear();
                    continue;
                }
                break (false, "ABNORMAL_TERMINATION_IN_LNSRCH".to_string());
            }
        };
        debug_assert!(step_taken > 0.0);
        // 3. memory: s = x_new - x, y = g_new - g, recycling the oldest buffers
        let (mut s, mut y) = if pairs.len() == opts.m { pairs.pop_front().map(|(s, y, _)| (s, y)).expect("m >= 1") } else { (vec![0.0; n], vec![0.0; n]) };
        s.iter_mut().zip(xl.iter().zip(&x)).for_each(|(si, (a, b))| *si = a - b);
        y.iter_mut().zip(gl.iter().zip(&g)).for_each(|(yi, (a, b))| *yi = a - b);
        let sy = dot(&s, &y);
        if sy > eps * dot(&y, &y) {
            pairs.push_back((s, y, 1.0 / sy));
        }
        std::mem::swap(&mut x, &mut xl);
        std::mem::swap(&mut g, &mut gl);
        let f_old = fx;
        fx = new_f;
        history.push(fx);
        crate::progress::report(history.len(), fx);
        if (f_old - fx) <= opts.factr * eps * f_old.abs().max(fx.abs()).max(1.0) {
            break (true, "CONVERGENCE: REL_REDUCTION_OF_F_<=_FACTR*EPSMCH".to_string());
        }
        if out_of_budget {
            break (false, format!("STOP: {evaluations} evaluations (max_eval)"));
        }
    };
    let pg = inf_norm(&g);
    Ok(BoundedResult { x, f: fx, gradient: g, iterations: history.len() - 1, evaluations, projected_gradient_norm: pg, converged, message, history })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pgtol: f64, factr: f64) -> BoundedOptions {
        BoundedOptions { m: 10, max_iter: 10_000, max_eval: 20_000, pgtol, factr, noise: 0.0 }
    }

    /// Extended Rosenbrock `sum_i 100 (x_{2i} - x_{2i-1}^2)^2 + (1 - x_{2i-1})^2`, minimum 0 at 1.
    fn rosenbrock(x: &[f64], g: &mut [f64]) -> f64 {
        let mut f = 0.0;
        for i in (0..x.len()).step_by(2) {
            let (a, b) = (x[i], x[i + 1]);
            let t = b - a * a;
            f += 100.0 * t * t + (1.0 - a) * (1.0 - a);
            g[i] = -400.0 * a * t - 2.0 * (1.0 - a);
            g[i + 1] = 200.0 * t;
        }
        f
    }

    #[test]
    fn extended_rosenbrock_reaches_its_minimiser_with_monotone_objective() {
        let x0: Vec<f64> = (0..100).map(|i| if i % 2 == 0 { -1.2 } else { 1.0 }).collect();
        let r = minimize(rosenbrock, &x0, &opts(1e-9, 0.0)).unwrap();
        assert!(r.converged, "{}", r.message);
        assert!(r.message.contains("PGTOL"), "{}", r.message);
        assert!(r.x.iter().all(|v| (v - 1.0).abs() < 1e-8), "{:?}", &r.x[..4]);
        assert!(r.projected_gradient_norm <= 1e-9);
        assert!(r.history.windows(2).all(|w| w[1] <= w[0]), "f increased");
        assert_eq!(r.history.len(), r.iterations + 1);
        // L-BFGS with Wolfe steps needs a few dozen iterations per Rosenbrock pair, not thousands
        assert!(r.iterations < 200, "{} iterations", r.iterations);
    }

    #[test]
    fn a_convex_quadratic_matches_its_closed_form_and_the_fortran_minimiser() {
        // f = 1/2 (x - c)^T A (x - c), A = tridiag(-1, 2 + i / n, -1) (positive definite), written
        // in the error e = x - c so that f has no cancellation and tiny gradients stay meaningful
        let n = 60;
        let c: Vec<f64> = (0..n).map(|i| ((i * 7) % 11) as f64 - 5.0).collect();
        let apply = |e: &[f64], out: &mut [f64]| {
            for i in 0..n {
                let mut v = (2.0 + i as f64 / n as f64) * e[i];
                if i > 0 {
                    v -= e[i - 1];
                }
                if i + 1 < n {
                    v -= e[i + 1];
                }
                out[i] = v;
            }
        };
        let f = |x: &[f64], g: &mut [f64]| {
            let e: Vec<f64> = x.iter().zip(&c).map(|(a, b)| a - b).collect();
            apply(&e, g);
            0.5 * e.iter().zip(g.iter()).map(|(a, b)| a * b).sum::<f64>()
        };
        let r = minimize(f, &vec![0.0; n], &opts(1e-11, 0.0)).unwrap();
        assert!(r.converged, "{}", r.message);
        // lambda_min(A) > 0.01 here, so |x - c| <= sqrt(n) 1e-11 / 0.01 < 1e-8
        let dx = r.x.iter().zip(&c).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(dx <= 1e-8, "off the closed form by {dx:e}");
        let lo = vec![f64::NEG_INFINITY; n];
        let hi = vec![f64::INFINITY; n];
        let fortran = super::super::lbfgsb::minimize(f, &vec![0.0; n], &lo, &hi, &opts(1e-11, 0.0)).unwrap();
        let dx = r.x.iter().zip(&fortran.x).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(dx <= 2e-8, "differs from L-BFGS-B by {dx:e} ({})", fortran.message);
        assert!(r.f <= 1e-18 && fortran.f <= 1e-18, "{} vs {}", r.f, fortran.f);
    }

    #[test]
    fn every_accepted_step_decreases_f_sufficiently_and_most_meet_the_curvature_condition() {
        // replay the iterates: f(x_k+1) <= f(x_k) (Armijo along d, checked by the solver) and the
        // stored history is the objective at the accepted points
        let x0 = vec![-1.2, 1.0, 0.5, -0.3];
        let mut seen: Vec<(Vec<f64>, f64)> = Vec::new();
        let r = minimize(
            |x: &[f64], g: &mut [f64]| {
                let v = rosenbrock(x, g);
                seen.push((x.to_vec(), v));
                v
            },
            &x0,
            &opts(1e-10, 0.0),
        )
        .unwrap();
        assert!(r.converged);
        for w in r.history.windows(2) {
            assert!(w[1] < w[0], "no decrease: {} -> {}", w[0], w[1]);
        }
        // every history value is an evaluated point's f
        for h in &r.history {
            assert!(seen.iter().any(|(_, v)| v == h));
        }
        // the returned gradient is the gradient at the returned point
        let mut g = vec![0.0; 4];
        let f = rosenbrock(&r.x, &mut g);
        assert_eq!(f, r.f);
        assert_eq!(g, r.gradient);
    }

    #[test]
    fn the_evaluation_budget_is_kept_and_reported() {
        let x0: Vec<f64> = (0..20).map(|i| if i % 2 == 0 { -1.2 } else { 1.0 }).collect();
        let mut count = 0;
        let o = BoundedOptions { max_eval: 37, ..opts(0.0, 0.0) };
        let r = minimize(
            |x: &[f64], g: &mut [f64]| {
                count += 1;
                rosenbrock(x, g)
            },
            &x0,
            &o,
        )
        .unwrap();
        assert!(!r.converged);
        assert_eq!(count, 37);
        assert_eq!(r.evaluations, 37);
        assert!(r.message.contains("max_eval"), "{}", r.message);
        let mut g = vec![0.0; 20];
        assert_eq!(rosenbrock(&r.x, &mut g), r.f, "the result is an accepted iterate");
        let o = BoundedOptions { max_iter: 5, ..opts(0.0, 0.0) };
        let r = minimize(rosenbrock, &x0, &o).unwrap();
        assert_eq!(r.iterations, 5);
        assert!(r.message.contains("max_iter"), "{}", r.message);
    }

    #[test]
    fn the_relative_reduction_test_stops_a_flat_tail() {
        let x0 = vec![-1.2, 1.0];
        let r = minimize(rosenbrock, &x0, &opts(0.0, 1e7)).unwrap();
        assert!(r.converged);
        assert!(r.message.contains("REL_REDUCTION"), "{}", r.message);
        assert!(r.f < 1e-8, "f = {}", r.f);
    }

    #[test]
    fn non_finite_regions_shorten_the_step_and_bad_input_is_refused() {
        // f = -log(1 - x^2) summed: finite only on (-1, 1), minimum 0 at 0; the first unit step
        // from 0.9 leaves the domain
        let f = |x: &[f64], g: &mut [f64]| {
            let mut v = 0.0;
            for (gi, &xi) in g.iter_mut().zip(x) {
                v -= (1.0 - xi * xi).ln();
                *gi = 2.0 * xi / (1.0 - xi * xi);
            }
            if v.is_nan() {
                f64::INFINITY
            } else {
                v
            }
        };
        let r = minimize(f, &[0.9, -0.5], &opts(1e-10, 0.0)).unwrap();
        assert!(r.converged, "{}", r.message);
        assert!(r.x.iter().all(|v| v.abs() < 1e-9));
        assert!(matches!(minimize(f, &[2.0, 0.0], &opts(1e-10, 0.0)), Err(BoundedError::NonFiniteStart(_))));
        assert!(matches!(minimize(f, &[], &opts(1e-10, 0.0)), Err(BoundedError::Shape(_))));
        assert!(matches!(minimize(f, &[f64::NAN], &opts(1e-10, 0.0)), Err(BoundedError::Invalid(_))));
        assert!(matches!(minimize(f, &[0.1], &BoundedOptions { m: 0, ..opts(1e-10, 0.0) }), Err(BoundedError::Invalid(_))));
    }

    #[test]
    fn cubic_step_finds_the_minimiser_of_a_cubic_and_stays_inside_the_bracket() {
        // phi(a) = (a - 0.3)^2 (a quadratic is a cubic with zero leading term): minimiser 0.3
        let p = |a: f64| Trial { step: a, f: (a - 0.3) * (a - 0.3), slope: 2.0 * (a - 0.3) };
        assert!((cubic_step(p(0.0), p(1.0)) - 0.3).abs() < 1e-12);
        assert!((cubic_step(p(1.0), p(0.0)) - 0.3).abs() < 1e-12);
        // a minimiser outside [0.1, 0.9] of the interval is clamped to it
        let q = |a: f64| Trial { step: a, f: (a - 0.01) * (a - 0.01), slope: 2.0 * (a - 0.01) };
        assert!((cubic_step(q(0.0), q(1.0)) - 0.1).abs() < 1e-12);
        // an infinite end: bisection
        let inf = Trial { step: 1.0, f: f64::INFINITY, slope: f64::NAN };
        assert_eq!(cubic_step(p(0.0), inf), 0.5);
    }
}
