//! Two-metric projected L-BFGS for `min f(x)` subject to `l <= x <= u`.
//!
//! Each iteration (Bertsekas 1982, "Projected Newton methods for optimization problems with simple
//! constraints", with an L-BFGS matrix in place of the reduced Hessian's inverse):
//!
//! 1. **Binding set.** Variable `i` is *binding* when `x_i <= l_i + eps` and `g_i > 0`, or
//!    `x_i >= u_i - eps` and `g_i < 0` (the gradient pushes it out of the box), with a tiny
//!    `eps` ([`EPS_BINDING`]). The others form the free set F.
//! 2. **Direction.** On F, `d_F = -H_F g_F` with `H_F` the L-BFGS inverse Hessian approximation in
//!    compact form (Byrd, Nocedal & Schnabel 1994, eq. 3.1) built from the stored pairs restricted
//!    to F:
//!
//!    `H_F = gamma I + [S_F  gamma Y_F] [[R^-T (D + gamma Y_F^T Y_F) R^-1, -R^-T], [-R^-1, 0]] [S_F^T; gamma Y_F^T]`
//!
//!    with `R` the upper triangle of `S_F^T Y_F`, `D` its diagonal and `gamma = s_F^T y_F / y_F^T y_F`
//!    of the newest pair; pairs with `s_F^T y_F <= eps_mach y_F^T y_F` are left out, so `H_F` is
//!    positive definite and `d_F` a descent direction. While the binding variables stay on their
//!    bounds (`s_B = 0`), `y_F = (Hessian)_FF s_F` for a quadratic: exact secant pairs of the
//!    reduced problem, hence L-BFGS's convergence on it. Binding variables take the diagonal step
//!    `d_i = -gamma g_i` (clipped to their bound by step 3).
//! 3. **Projected line search.** `x(a) = P(x + a d)`, backtracking from `a = 1` (without a usable
//!    pair, e.g. the first iteration, from `a = min(1, 1 / ||d||_2)` as L-BFGS-B does) until the
//!    Armijo condition along the projection arc holds: `f(x(a)) <= f(x) + 1e-4 g^T (x(a) - x)`.
//!    The step shrinks by quadratic interpolation, kept in `[0.1 a, 0.5 a]`; a trial point where
//!    `f` or its gradient is not finite counts as outside the domain (`a <- 0.1 a`).
//! 4. **Memory.** The pair `s = x_{k+1} - x_k`, `y = g_{k+1} - g_k` is stored when
//!    `s^T y > eps_mach y^T y`, displacing the oldest of m pairs (a rejected pair leaves the
//!    memory unchanged). A failed line search with pairs in use clears the memory and retries
//!    from the scaled steepest-descent direction.
//!
//! Cost per iteration besides evaluations: one pass over `x, g, l, u` (binding set and KKT
//! residual), one gathering the free entries of the 2m stored vectors for the `2m + m(m+1)`
//! products of the compact form (`O(m^2 |F|)` flops), one forming `d` (`O(m |F|)`), one per trial
//! point and two for the new pair (curvature test, then storing): `O(m^2 |F| + m n)` in all, with no sequential sweep. The
//! Fortran L-BFGS-B 3.0 spends far more at n in the millions (MPME, ESL): the generalized Cauchy
//! point's breakpoint heap and `formk`'s per-variable updates of the reduced matrix each time the
//! free set changes (docs/parity/mpme.md has the profile).
//!
//! Every pass runs over fixed chunks of [`CHUNK`] entries (rayon-parallel); the partial sums of a
//! reduction are added in chunk order, so results are bit-identical for any number of threads.
//!
//! The iterates differ from L-BFGS-B's (no generalized Cauchy point, a different line search), but
//! the stopping rules and their meaning are the same (`pgtol`, `factr`, `max_iter`, `max_eval`), and
//! on a convex problem both reach the unique minimiser (checked in the tests).

use super::{check_problem, dot, projected_gradient_norm, BoundedError, BoundedOptions, BoundedResult};
use rayon::prelude::*;
use std::ops::Range;

/// Vector entries per parallel chunk (32 KB of f64; the 2m + 1 gathered columns of a chunk stay
/// in L2). Fixed, never derived from the thread count, so that reductions add the same partial
/// sums in the same order on any machine.
pub const CHUNK: usize = 1 << 12;

/// Armijo constant of the sufficient-decrease test.
const ARMIJO: f64 = 1e-4;
/// `delta` and `sigma` of the approximate Wolfe conditions ([`BoundedOptions::noise`]).
const WOLFE_DELTA: f64 = 0.1;
const WOLFE_SIGMA: f64 = 0.9;
/// Trial points per line search before it counts as failed.
const MAX_TRIALS: usize = 40;
/// Bertsekas' `eps` (step 1 of the module doc). Tiny but positive, as his convergence argument
/// needs: on ESL (usps, n = 2.0M) `eps = min(1e-3, ||x - P(x - g)||)` made the binding set swing by
/// up to two million variables from one iteration to the next (weights below 1e-3 with a positive
/// gradient were moved by the diagonal step) and cost 35% more evaluations for a worse objective.
pub const EPS_BINDING: f64 = 1e-10;

/// `sum_c f(range_c)` over the fixed chunks of `0..n`, each `f` returning `width` partial sums;
/// partial sums are added in chunk order (deterministic for any thread count).
fn chunked_sums(n: usize, width: usize, f: impl Fn(Range<usize>, &mut [f64]) + Sync) -> Vec<f64> {
    let parts: Vec<Vec<f64>> = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            let mut v = vec![0.0; width];
            f(c * CHUNK..((c + 1) * CHUNK).min(n), &mut v);
            v
        })
        .collect();
    let mut total = vec![0.0; width];
    for p in &parts {
        for (t, v) in total.iter_mut().zip(p) {
            *t += v;
        }
    }
    total
}

/// The limited memory: up to `cap` pairs `(s, y)` in slots (full-length vectors).
struct Memory {
    cap: usize,
    n: usize,
    s: Vec<Vec<f64>>,
    y: Vec<Vec<f64>>,
    /// Slots in use, oldest first.
    order: Vec<usize>,
}

impl Memory {
    fn new(cap: usize, n: usize) -> Memory {
        Memory { cap, n, s: Vec::new(), y: Vec::new(), order: Vec::new() }
    }

    /// The slot the next pair is written to: a free one if any, a new one while fewer than `cap`
    /// exist, else the oldest (dropped from `order` now).
    fn take_slot(&mut self) -> usize {
        if let Some(k) = (0..self.s.len()).find(|k| !self.order.contains(k)) {
            return k;
        }
        if self.s.len() < self.cap {
            self.s.push(vec![0.0; self.n]);
            self.y.push(vec![0.0; self.n]);
            return self.s.len() - 1;
        }
        self.order.remove(0)
    }
}

impl Memory {
    /// Offers the pair `s = x_new - x`, `y = g_new - g`: stored (displacing the oldest of `cap`)
    /// when `s^T y > eps_mach y^T y`, otherwise left out with the memory unchanged, as L-BFGS-B
    /// skips the update. The curvature test runs before any slot is touched. Returns whether the
    /// pair was stored.
    fn offer(&mut self, x: &[f64], x_new: &[f64], g: &[f64], g_new: &[f64]) -> bool {
        let sums = chunked_sums(x.len(), 2, |r, acc| {
            let (s, y): (Vec<f64>, Vec<f64>) = r.map(|i| (x_new[i] - x[i], g_new[i] - g[i])).unzip();
            acc[0] = dot(&s, &y);
            acc[1] = dot(&y, &y);
        });
        let (sy, yy) = (sums[0], sums[1]);
        if !(yy > 0.0 && sy > f64::EPSILON * yy) {
            return false;
        }
        let slot = self.take_slot();
        self.s[slot].par_iter_mut().zip(self.y[slot].par_iter_mut()).enumerate().for_each(|(i, (sv, yv))| {
            *sv = x_new[i] - x[i];
            *yv = g_new[i] - g[i];
        });
        self.order.push(slot);
        true
    }
}

/// State of one run: current point, trial point, direction, binding set.
struct Work {
    x: Vec<f64>,
    g: Vec<f64>,
    f: f64,
    xt: Vec<f64>,
    gt: Vec<f64>,
    d: Vec<f64>,
    binding: Vec<bool>,
    /// `1 / h` for the diagonal Hessian estimate `h` at `x` and at `xt`
    /// ([`minimize_preconditioned`]); empty without one (then every weight is 1).
    dinv: Vec<f64>,
    dinvt: Vec<f64>,
}

/// Weight `1 / h_i` of the diagonal preconditioner, 1 without one (multiplying by 1 is exact, so
/// the unpreconditioned iterates keep their bits).
#[inline]
fn weight(dinv: &[f64], i: usize) -> f64 {
    if dinv.is_empty() {
        1.0
    } else {
        dinv[i]
    }
}

/// Marks the binding set (step 1) with `eps = EPS_BINDING`, and returns `||x - P(x - g)||_inf`
/// (one parallel pass; the maximum is exact in any order).
fn mark_binding(w: &mut Work, lower: &[f64], upper: &[f64]) -> f64 {
    let (x, g) = (&w.x, &w.g);
    let parts: Vec<f64> = w
        .binding
        .par_chunks_mut(CHUNK)
        .enumerate()
        .map(|(c, b)| {
            let o = c * CHUNK;
            let mut pg = 0.0f64;
            for (k, bk) in b.iter_mut().enumerate() {
                let i = o + k;
                pg = pg.max(((x[i] - g[i]).max(lower[i]).min(upper[i]) - x[i]).abs());
                *bk = (g[i] > 0.0 && x[i] <= lower[i] + EPS_BINDING) || (g[i] < 0.0 && x[i] >= upper[i] - EPS_BINDING);
            }
            pg
        })
        .collect();
    parts.into_iter().fold(0.0, f64::max)
}

/// Free indices of chunk `c`.
fn free_in_chunk(binding: &[bool], c: usize) -> Vec<usize> {
    let o = c * CHUNK;
    let end = (o + CHUNK).min(binding.len());
    (o..end).filter(|&i| !binding[i]).collect()
}

/// Sums over the free set F of the products the compact form needs, for the stored pairs in
/// `order` (k of them): `[S_F^T g_F (k), Y_F^T g_F (k), s_a^T y_b for a <= b (k(k+1)/2, row-major
/// upper triangle), y_a^T y_b for a <= b (k(k+1)/2)]`. Each chunk gathers its free entries of the
/// 2k + 1 vectors into contiguous columns, then takes the dot products (cache-resident).
fn free_set_products(w: &Work, mem: &Memory) -> Vec<f64> {
    let k = mem.order.len();
    let tri = k * (k + 1) / 2;
    let width = 2 * k + 2 * tri;
    let n = w.x.len();
    let (g, binding, dinv) = (&w.g, &w.binding, &w.dinv);
    chunked_sums(n, width, |r, acc| {
        let idx = free_in_chunk(binding, r.start / CHUNK);
        if idx.is_empty() {
            return;
        }
        let gather = |v: &[f64]| -> Vec<f64> { idx.iter().map(|&i| v[i]).collect() };
        let gf = gather(g);
        let sc: Vec<Vec<f64>> = mem.order.iter().map(|&slot| gather(&mem.s[slot])).collect();
        let yc: Vec<Vec<f64>> = mem.order.iter().map(|&slot| gather(&mem.y[slot])).collect();
        // D^-1 y in the preconditioner's metric; y itself without one
        let ycw_owned: Vec<Vec<f64>>;
        let ycw: &[Vec<f64>] = if dinv.is_empty() {
            &yc
        } else {
            ycw_owned = yc.iter().map(|col| col.iter().zip(&idx).map(|(v, &i)| v * dinv[i]).collect()).collect();
            &ycw_owned
        };
        let mut t = 0;
        for a in 0..k {
            acc[a] = dot(&sc[a], &gf);
            acc[k + a] = dot(&ycw[a], &gf);
            for b in a..k {
                acc[2 * k + t] = dot(&sc[a], &yc[b]);
                acc[2 * k + tri + t] = dot(&yc[a], &ycw[b]);
                t += 1;
            }
        }
    })
}

/// Step 2: writes `d` and returns `(g_F^T d, whether a quasi-Newton pair was used)`.
///
/// The compact form is built from the pairs restricted to F (`s_F`, `y_F`), keeping those with
/// `s_F^T y_F > eps_mach y_F^T y_F`: while the binding variables stay at their bounds
/// (`s_B = 0`), `y_F = (Hessian)_FF s_F` for a quadratic, so these are exact secant pairs of the
/// reduced Hessian and the free-variable steps are those of L-BFGS on the reduced problem.
fn direction(w: &mut Work, mem: &Memory) -> (f64, bool) {
    let k_all = mem.order.len();
    let mut gamma = 1.0;
    let mut used: Vec<usize> = Vec::new(); // positions in mem.order
    let mut p = Vec::new(); // coefficients of s_j
    let mut q = Vec::new(); // coefficients of y_j
    if k_all > 0 {
        let sums = free_set_products(w, mem);
        let tri = k_all * (k_all + 1) / 2;
        let ut = |a: usize, b: usize| a * k_all - a * (a + 1) / 2 + b; // a <= b
        let sy = |a: usize, b: usize| sums[2 * k_all + ut(a, b)];
        let yy = |a: usize, b: usize| if a <= b { sums[2 * k_all + tri + ut(a, b)] } else { sums[2 * k_all + tri + ut(b, a)] };
        used = (0..k_all).filter(|&j| yy(j, j) > 0.0 && sy(j, j) > f64::EPSILON * yy(j, j)).collect();
        let k = used.len();
        if k > 0 {
            let last = used[k - 1];
            gamma = sy(last, last) / yy(last, last);
            let r = |i: usize, j: usize| sy(used[i], used[j]);
            let (a, b): (Vec<f64>, Vec<f64>) = used.iter().map(|&j| (sums[j], sums[k_all + j])).unzip();
            // u = R^-1 a (R upper triangular)
            let mut u = vec![0.0; k];
            for i in (0..k).rev() {
                let v = a[i] - (i + 1..k).map(|j| r(i, j) * u[j]).sum::<f64>();
                u[i] = v / r(i, i);
            }
            // t = (D + gamma Y^T Y) u - gamma b; p = R^-T t (forward substitution with R^T)
            let t: Vec<f64> = (0..k).map(|i| r(i, i) * u[i] + gamma * (0..k).map(|j| yy(used[i], used[j]) * u[j]).sum::<f64>() - gamma * b[i]).collect();
            p = vec![0.0; k];
            for i in 0..k {
                let v = t[i] - (0..i).map(|j| r(j, i) * p[j]).sum::<f64>();
                p[i] = v / r(i, i);
            }
            q = u.iter().map(|v| -gamma * v).collect();
        }
    }
    // H g_F = gamma D^-1 g_F + S p + D^-1 Y q on F; d_F = -(H g_F), d_B = -gamma D^-1 g_B
    // (D = I without a preconditioner)
    let (g, binding, dinv) = (&w.g, &w.binding, &w.dinv);
    let slots: Vec<usize> = used.iter().map(|&j| mem.order[j]).collect();
    let parts: Vec<f64> =
        w.d.par_chunks_mut(CHUNK)
            .enumerate()
            .map(|(c, dc)| {
                let o = c * CHUNK;
                for (j, dj) in dc.iter_mut().enumerate() {
                    *dj = -gamma * (g[o + j] * weight(dinv, o + j));
                }
                let mut gtd = 0.0;
                for i in free_in_chunk(binding, c) {
                    let wi = weight(dinv, i);
                    let mut h = gamma * (g[i] * wi);
                    for (jj, &slot) in slots.iter().enumerate() {
                        h += p[jj] * mem.s[slot][i] + q[jj] * (mem.y[slot][i] * wi);
                    }
                    dc[i - o] = -h;
                    gtd -= g[i] * h;
                }
                gtd
            })
            .collect();
    (parts.iter().sum(), !slots.is_empty())
}

/// `g^T (xt - x)` in fixed chunks (bit-identical for any thread count).
fn dot_moved(g: &[f64], xt: &[f64], x: &[f64]) -> f64 {
    let parts: Vec<f64> = g
        .par_chunks(CHUNK)
        .enumerate()
        .map(|(c, gc)| {
            let o = c * CHUNK;
            gc.iter().enumerate().map(|(j, &gj)| gj * (xt[o + j] - x[o + j])).sum::<f64>()
        })
        .collect();
    parts.iter().sum()
}

/// `xt = P(x + a d)`; returns `(g^T (xt - x), max |xt - x|)`.
fn trial_point(w: &mut Work, lower: &[f64], upper: &[f64], a: f64) -> (f64, f64) {
    let (x, g, d) = (&w.x, &w.g, &w.d);
    let parts: Vec<(f64, f64)> =
        w.xt.par_chunks_mut(CHUNK)
            .enumerate()
            .map(|(c, xc)| {
                let o = c * CHUNK;
                let (mut slope, mut moved) = (0.0, 0.0f64);
                for (j, xj) in xc.iter_mut().enumerate() {
                    let i = o + j;
                    *xj = (x[i] + a * d[i]).max(lower[i]).min(upper[i]);
                    let step = *xj - x[i];
                    slope += g[i] * step;
                    moved = moved.max(step.abs());
                }
                (slope, moved)
            })
            .collect();
    parts.iter().fold((0.0, 0.0), |(s, m), &(ps, pm)| (s + ps, m.max(pm)))
}

/// Minimises `f` over `lower <= x <= upper` from `x0` (projected into the box first); see the
/// module doc for the method and [`super::minimize`] for the contract.
pub fn minimize<F>(mut f: F, x0: &[f64], lower: &[f64], upper: &[f64], opts: &BoundedOptions) -> Result<BoundedResult, BoundedError>
where
    F: FnMut(&[f64], &mut [f64]) -> f64,
{
    run(|x, g, _| f(x, g), false, x0, lower, upper, opts)
}

/// [`minimize`] with a diagonal preconditioner: `f(x, g, h)` also writes a positive estimate `h`
/// of the Hessian's diagonal at `x`, and the limited-memory matrix starts from
/// `H_0 = gamma D^-1`, `D = diag(h)`, in place of `gamma I`, with
/// `gamma = s^T y / (y^T D^-1 y)` of the newest pair (the Oren-Luenberger scaling in `D`'s
/// metric; the compact form of Byrd, Nocedal & Schnabel holds for any positive definite `H_0`).
/// `D` is re-read at every accepted iterate; on a problem whose curvature differs by orders of
/// magnitude across variables this is what the scalar `gamma` cannot capture. A trial point
/// whose `h` is not positive and finite counts as outside the domain.
pub fn minimize_preconditioned<F>(f: F, x0: &[f64], lower: &[f64], upper: &[f64], opts: &BoundedOptions) -> Result<BoundedResult, BoundedError>
where
    F: FnMut(&[f64], &mut [f64], &mut [f64]) -> f64,
{
    run(f, true, x0, lower, upper, opts)
}

/// `1 / h` in place, or `false` when some `h_i` is not positive and finite.
fn invert_diagonal(h: &mut [f64]) -> bool {
    h.par_iter_mut()
        .map(|v| {
            let ok = v.is_finite() && *v > 0.0;
            *v = 1.0 / *v;
            ok
        })
        .reduce(|| true, |a, b| a && b)
}

fn run<F>(mut f: F, precondition: bool, x0: &[f64], lower: &[f64], upper: &[f64], opts: &BoundedOptions) -> Result<BoundedResult, BoundedError>
where
    F: FnMut(&[f64], &mut [f64], &mut [f64]) -> f64,
{
    check_problem(x0, lower, upper, opts)?;
    let n = x0.len();
    let x: Vec<f64> = x0.iter().zip(lower.iter().zip(upper)).map(|(&v, (&l, &u))| v.max(l).min(u)).collect();
    let mut g = vec![0.0; n];
    let nh = if precondition { n } else { 0 };
    let mut dinv = vec![0.0; nh];
    let f0 = f(&x, &mut g, &mut dinv);
    if !f0.is_finite() || !g.iter().all(|v| v.is_finite()) || !invert_diagonal(&mut dinv) {
        return Err(BoundedError::NonFiniteStart(f0));
    }
    let mut w = Work { x, g, f: f0, xt: vec![0.0; n], gt: vec![0.0; n], d: vec![0.0; n], binding: vec![false; n], dinv, dinvt: vec![0.0; nh] };
    let mut mem = Memory::new(opts.m, n);
    let mut history = vec![f0];
    let mut evaluations = 1usize;
    let mut iterations = 0usize;
    let eps_mach = f64::EPSILON;
    let (converged, message) = 'outer: loop {
        let pg = mark_binding(&mut w, lower, upper);
        if pg <= opts.pgtol {
            break (true, "CONVERGENCE: NORM_OF_PROJECTED_GRADIENT_<=_PGTOL".to_string());
        }
        if iterations >= opts.max_iter {
            break (false, format!("STOP: {iterations} iterations (max_iter)"));
        }
        let (mut gtd, mut quasi_newton) = direction(&mut w, &mem);
        if !(gtd < 0.0) && quasi_newton {
            // rounding made the quasi-Newton direction useless: restart from steepest descent
            mem.order.clear();
            (gtd, quasi_newton) = direction(&mut w, &mem);
        }
        debug_assert!(gtd <= 0.0);
        let mut a = if !quasi_newton {
            let dn = dot(&w.d, &w.d).sqrt();
            if dn > 0.0 {
                (1.0 / dn).min(1.0)
            } else {
                1.0
            }
        } else {
            1.0
        };
        let mut accepted = None;
        for _ in 0..MAX_TRIALS {
            let (slope, moved) = trial_point(&mut w, lower, upper, a);
            if moved == 0.0 {
                break;
            }
            if !(slope < 0.0) {
                // the projection bent the arc uphill at this length (Bertsekas: descent holds
                // for small enough steps): shorten without evaluating
                a *= 0.5;
                continue;
            }
            if evaluations >= opts.max_eval {
                break 'outer (false, format!("STOP: {evaluations} evaluations (max_eval)"));
            }
            let ft = f(&w.xt, &mut w.gt, &mut w.dinvt);
            evaluations += 1;
            let finite = ft.is_finite() && w.gt.par_iter().all(|v| v.is_finite()) && invert_diagonal(&mut w.dinvt);
            if finite && ft <= w.f + ARMIJO * slope {
                accepted = Some(ft);
                break;
            }
            if finite && opts.noise > 0.0 && ft <= w.f + opts.noise * w.f.abs() {
                // approximate Wolfe (BoundedOptions::noise): the slope at the trial point
                let slope_t = dot_moved(&w.gt, &w.xt, &w.x);
                if WOLFE_SIGMA * slope <= slope_t && slope_t <= (2.0 * WOLFE_DELTA - 1.0) * slope {
                    accepted = Some(ft);
                    break;
                }
            }
            a = if !finite {
                0.1 * a
            } else {
                // quadratic through phi(0) = f, phi'(0) ~ slope / a, phi(a) = ft
                let d0 = slope / a;
                let q = -d0 * a * a / (2.0 * (ft - w.f - d0 * a));
                q.clamp(0.1 * a, 0.5 * a)
            };
        }
        let Some(ft) = accepted else {
            if quasi_newton {
                mem.order.clear();
                continue;
            }
            break (false, "ABNORMAL_TERMINATION_IN_LNSRCH: no sufficient decrease along the projected steepest-descent path".to_string());
        };
        mem.offer(&w.x, &w.xt, &w.g, &w.gt);
        std::mem::swap(&mut w.x, &mut w.xt);
        std::mem::swap(&mut w.g, &mut w.gt);
        std::mem::swap(&mut w.dinv, &mut w.dinvt);
        let f_old = w.f;
        w.f = ft;
        iterations += 1;
        history.push(ft);
        crate::progress::report(history.len(), ft);
        if opts.factr > 0.0 && f_old - ft <= opts.factr * eps_mach * f_old.abs().max(ft.abs()).max(1.0) {
            break (true, "CONVERGENCE: REL_REDUCTION_OF_F_<=_FACTR*EPSMCH".to_string());
        }
    };
    let pg = projected_gradient_norm(&w.x, &w.g, lower, upper);
    Ok(BoundedResult { x: w.x, f: w.f, gradient: w.g, iterations, evaluations, projected_gradient_norm: pg, converged, message, history })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Offers the pair built from `x -> x + s` with gradient change `y`.
    fn offer(mem: &mut Memory, s: &[f64], y: &[f64]) -> bool {
        let zero = vec![0.0; s.len()];
        mem.offer(&zero, s, &zero, y)
    }

    #[test]
    fn a_rejected_pair_leaves_a_full_memory_unchanged() {
        // n spans three chunks, so the curvature sums are reduced across chunks
        let n = 2 * CHUNK + 5;
        let mut mem = Memory::new(3, n);
        for k in 0..3 {
            let s: Vec<f64> = (0..n).map(|i| ((i + k) % 7) as f64 - 3.0).collect();
            let y: Vec<f64> = s.iter().map(|v| (k + 1) as f64 * v).collect(); // s^T y > 0
            assert!(offer(&mut mem, &s, &y));
        }
        let (order, s_before, y_before) = (mem.order.clone(), mem.s.clone(), mem.y.clone());
        assert_eq!(order, vec![0, 1, 2]);
        // negative curvature, zero curvature and y = 0: all rejected, nothing displaced
        let s: Vec<f64> = (0..n).map(|i| (i % 5) as f64 - 2.0).collect();
        let neg: Vec<f64> = s.iter().map(|v| -v).collect();
        let mut orth = vec![0.0; n]; // s_2 = 0: s^T y = 0 with y != 0
        orth[2] = 1.0;
        for y in [neg, orth, vec![0.0; n]] {
            assert!(!offer(&mut mem, &s, &y));
            assert_eq!(mem.order, order);
            assert_eq!(mem.s, s_before);
            assert_eq!(mem.y, y_before);
        }
        // an accepted pair displaces the oldest (slot 0) and becomes the newest
        let y: Vec<f64> = s.iter().map(|v| 2.0 * v).collect();
        assert!(offer(&mut mem, &s, &y));
        assert_eq!(mem.order, vec![1, 2, 0]);
        assert_eq!(mem.s[0], s);
        assert_eq!(mem.y[0], y);
    }
}
