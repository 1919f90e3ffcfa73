//! SMCE's numerics (steps 1-4 of [`super`]'s doc): the local problem of every sample (the Gram
//! of its neighbours' unit directions and their proximities), the sparse program
//! `min lambda ||Q c||_1 + 1/2 ||X c||^2` s.t. `1^T c = 1` solved by the exact active-set method
//! or the reference ADMM (with the KKT residual and the sign-pattern polish that judge their
//! results), and the weights, pruning and symmetrised graph built from the solutions.

use crate::api::declare::param_choice;
use crate::api::{numerical, numerics, MethodError, Result};
use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;
use structdr_linalg::Cholesky;
use structdr_numerics::neighbours::knn;

/// The method's name, as its errors report it.
pub(super) const M: &str = "smce";

/// ADMM penalty `mu` (the reference code's default, `admm_vec_func.m`).
pub const ADMM_MU: f64 = 10.0;

/// Relative KKT residual below which a polished solution is accepted.
const POLISH_RTOL: f64 = 1e-9;

/// Iterations a sign pattern must stay unchanged before it is polished.
const STABLE_ITERS: usize = 5;

param_choice! {
    /// The solver of the per-sample programs.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum LocalSolver {
        /// The exact active-set method ([`active_set`]), ADMM with pattern polish as its fallback.
        Exact = "exact",
        /// The reference code's ADMM and stopping rule only ([`admm`] without polish): reproduces
        /// what the reference computes, including its early stops at small lambda.
        Admm = "admm",
    }
}

/// How one sparse program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The active-set method reached a KKT point (exact up to rounding).
    Exact,
    /// ADMM's stable sign pattern, polished through its support system, gave a KKT point.
    Polished,
    /// ADMM met its tolerance; no sign pattern polished.
    AdmmTolerance,
    /// `max_iter` reached.
    IterationLimit,
}

/// The solution of one sample's sparse program.
#[derive(Debug, Clone)]
pub struct LocalSolution {
    /// Coefficients over the K neighbours (exact zeros off the support), `1^T c = 1`.
    pub c: Vec<f64>,
    /// Active-set steps ([`Exit::Exact`]) or ADMM iterations (otherwise).
    pub iterations: usize,
    /// How the solve ended.
    pub exit: Exit,
    /// [`kkt_residual`] of `c`.
    pub kkt: f64,
    /// `lambda q^T |c| + 1/2 c^T G c`.
    pub objective: f64,
}

/// The local problem of sample `i` with neighbours `nb`: the Gram `G = X^T X` of the unit
/// directions (K x K), the proximities `q` (summing to 1) and the distances `||x_j - x_i||`.
/// Distances are computed with scaling (`m sqrt(sum (diff / m)^2)`, `m = max |diff|`), so they
/// neither overflow nor underflow for any two distinct finite rows.
///
/// Errors: a neighbour at distance 0 (duplicate rows must be merged first).
pub fn local_problem(x: ArrayView2<f64>, i: usize, nb: &[usize]) -> Result<(Array2<f64>, Vec<f64>, Vec<f64>)> {
    let kk = nb.len();
    let d = x.ncols();
    let xi = x.row(i);
    let mut dirs = vec![0.0f64; kk * d];
    let mut dist = vec![0.0f64; kk];
    for (a, &j) in nb.iter().enumerate() {
        let row = &mut dirs[a * d..(a + 1) * d];
        let xj = x.row(j);
        let mut m = 0.0f64;
        for f in 0..d {
            row[f] = xj[f] - xi[f];
            m = m.max(row[f].abs());
        }
        if m == 0.0 {
            return Err(MethodError::Input { method: M, reason: format!("samples {i} and {j} coincide (duplicates must be merged before the SMCE program)") });
        }
        let s = row.iter().map(|v| (v / m) * (v / m)).sum::<f64>().sqrt();
        dist[a] = m * s;
        for v in row.iter_mut() {
            *v = (*v / m) / s;
        }
    }
    let mut g = Array2::<f64>::zeros((kk, kk));
    for a in 0..kk {
        let ra = &dirs[a * d..(a + 1) * d];
        for b in a..kk {
            let rb = &dirs[b * d..(b + 1) * d];
            let v = ra.iter().zip(rb).map(|(p, q)| p * q).sum::<f64>();
            g[[a, b]] = v;
            g[[b, a]] = v;
        }
    }
    // sum of distances scaled by the largest, so that it cannot overflow
    let dmax = dist.iter().copied().fold(0.0f64, f64::max);
    let total = dist.iter().map(|v| v / dmax).sum::<f64>();
    let q = dist.iter().map(|v| (v / dmax) / total).collect();
    Ok((g, q, dist))
}

/// `lambda q^T |c| + 1/2 c^T G c`.
pub fn objective(g: ArrayView2<f64>, q: &[f64], lambda: f64, c: &[f64]) -> f64 {
    let k = c.len();
    let mut quad = 0.0;
    for a in 0..k {
        let mut s = 0.0;
        for b in 0..k {
            s += g[[a, b]] * c[b];
        }
        quad += c[a] * s;
    }
    lambda * q.iter().zip(c).map(|(qj, cj)| qj * cj.abs()).sum::<f64>() + 0.5 * quad
}

/// KKT residual of `c` for `min lambda q^T |c| + 1/2 c^T G c` s.t. `1^T c = 1`, with `g = G c` and
/// the multiplier `nu` of the constraint chosen as the midrange that best equalises the support's
/// stationarity: the largest of
/// - `max_{c_j != 0} |g_j + lambda q_j sign(c_j) + nu|` (stationarity on the support),
/// - `max_{c_j = 0} max(0, |g_j + nu| - lambda q_j)` (`0` in the subdifferential off it),
/// - `|1^T c - 1|` (feasibility).
///
/// Returns `(residual, nu)`.
pub fn kkt_residual(g: ArrayView2<f64>, q: &[f64], lambda: f64, c: &[f64]) -> (f64, f64) {
    let k = c.len();
    let gc: Vec<f64> = (0..k).map(|a| (0..k).map(|b| g[[a, b]] * c[b]).sum::<f64>()).collect();
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for j in 0..k {
        if c[j] != 0.0 {
            let t = gc[j] + lambda * q[j] * c[j].signum();
            lo = lo.min(t);
            hi = hi.max(t);
        }
    }
    let (nu, mut res) = if lo.is_finite() { (-(lo + hi) / 2.0, (hi - lo) / 2.0) } else { (0.0, f64::INFINITY) };
    for j in 0..k {
        if c[j] == 0.0 {
            res = res.max((gc[j] + nu).abs() - lambda * q[j]);
        }
    }
    let feas = (c.iter().sum::<f64>() - 1.0).abs();
    (res.max(feas), nu)
}

/// The exact solution of the support system of the sign pattern `sign` (entries -1, 0, 1):
/// `G_SS c_S + lambda q_S sign_S + nu 1 = 0`, `1^T c_S = 1`, solved as
/// `(G_SS + 1 1^T) c_S = -lambda q_S sign_S - nu' 1` (equal on `1^T c_S = 1`, `nu = 1 + nu'`),
/// with `nu'` fixed by feasibility. `None` when `G_SS + 1 1^T` is not positive definite or the
/// solution's signs differ from the pattern.
fn polish(g: ArrayView2<f64>, q: &[f64], lambda: f64, sign: &[i8]) -> Option<Vec<f64>> {
    let support: Vec<usize> = (0..sign.len()).filter(|&j| sign[j] != 0).collect();
    let m = support.len();
    if m == 0 {
        return None;
    }
    let a = Array2::from_shape_fn((m, m), |(r, s)| g[[support[r], support[s]]] + 1.0);
    let chol = Cholesky::factor(a.view()).ok()?;
    let rhs = ndarray::Array1::from_shape_fn(m, |r| -lambda * q[support[r]] * sign[support[r]] as f64);
    let y1 = chol.solve_vec(rhs.view()).ok()?;
    let y2 = chol.solve_vec(ndarray::Array1::ones(m).view()).ok()?;
    let nu1 = (y1.sum() - 1.0) / y2.sum();
    let mut c = vec![0.0; sign.len()];
    for (r, &j) in support.iter().enumerate() {
        let v = y1[r] - nu1 * y2[r];
        if !(v.is_finite() && v != 0.0 && (v > 0.0) == (sign[j] > 0)) {
            return None;
        }
        c[j] = v;
    }
    Some(c)
}

/// Whether `c` passes the acceptance test `kkt_residual <= 1e-9 max(1, lambda max q, ||G c||_inf)`.
fn acceptable(g: ArrayView2<f64>, q: &[f64], lambda: f64, c: &[f64]) -> bool {
    let k = c.len();
    let (r, _) = kkt_residual(g, q, lambda, c);
    let gmax = (0..k).map(|a| (0..k).map(|b| g[[a, b]] * c[b]).sum::<f64>().abs()).fold(0.0f64, f64::max);
    let qmax = q.iter().copied().fold(0.0f64, f64::max);
    r <= POLISH_RTOL * 1f64.max(lambda * qmax).max(gmax)
}

/// Solves `min_c lambda q^T |c| + 1/2 c^T G c` s.t. `1^T c = 1` for one sample (`G` K x K
/// symmetric positive semidefinite, `q > 0`). [`LocalSolver::Exact`]: the exact active-set method
/// [`active_set`]; where it fails (a step limit, or a result that misses the KKT acceptance test),
/// the reference's ADMM [`admm`] with `max_iter`, `tol` and pattern polish.
/// [`LocalSolver::Admm`]: the reference's ADMM alone.
pub fn solve_local(g: ArrayView2<f64>, q: &[f64], lambda: f64, solver: LocalSolver, max_iter: usize, tol: f64) -> Result<LocalSolution> {
    if solver == LocalSolver::Admm {
        return admm(g, q, lambda, max_iter, tol, false);
    }
    if let Some((c, steps)) = active_set(g, q, lambda, 20 * q.len() + 100).map_err(numerical(M))? {
        if acceptable(g, q, lambda, &c) {
            let (kkt, _) = kkt_residual(g, q, lambda, &c);
            let objective = objective(g, q, lambda, &c);
            return Ok(LocalSolution { c, iterations: steps, exit: Exit::Exact, kkt, objective });
        }
    }
    admm(g, q, lambda, max_iter, tol, true)
}

/// `(G_AA + 1 1^T)` restricted to `active`, eigendecomposed.
fn reduced_eigen(g: ArrayView2<f64>, active: &[usize]) -> structdr_linalg::Result<structdr_linalg::SymmetricEigen> {
    let m = active.len();
    let a = Array2::from_shape_fn((m, m), |(r, s)| g[[active[r], active[s]]] + 1.0);
    structdr_linalg::eigh(a.view())
}

/// `lambda sum_A q_j |c_j| + 1/2 c_A^T G_AA c_A` for `c` supported on `active`.
fn objective_on(g: ArrayView2<f64>, lam: &[f64], active: &[usize], c: &[f64]) -> f64 {
    let mut quad = 0.0;
    let mut l1 = 0.0;
    for &a in active {
        l1 += lam[a] * c[a].abs();
        quad += c[a] * active.iter().map(|&b| g[[a, b]] * c[b]).sum::<f64>();
    }
    l1 + 0.5 * quad
}

/// The exact active-set ("feature-sign") method for `min lambda q^T |c| + 1/2 c^T G c` s.t.
/// `1^T c = 1`, adapted from Lee, Battle, Raina & Ng (2007) to the affine constraint and to a
/// singular `G`. Returns `Ok(None)` after `max_steps` steps.
///
/// Start: `c = e_{j0}` at the nearest neighbour (smallest `q`), active set `A = {j0}`, signs
/// `theta = sign(c)`. Each step, with `r_A = -lambda q_A theta_A`:
/// - if `M = G_AA + 1 1^T` (positive semidefinite; equal to `G_AA` plus a constant on the
///   feasible set) is singular (smallest eigenvalue `<= 1e-10` of the largest), the objective is
///   linear along its null vector `d` (`X_A d = 0`, `1^T d = 0`): move along `+-d` (the way a
///   just-activated coordinate's sign points, else downhill) until the first coefficient reaches 0
///   and drop it;
/// - otherwise solve the support system `c_A = M^{-1} (r_A - nu' 1)` with `1^T c_A = 1`. If its
///   signs match `theta`, take it; then if some inactive `j` violates `|g_j + nu| <= lambda q_j`
///   (`g = G c`, `nu = 1 + nu'`) by more than `1e-12` of the problem's scale, activate the worst
///   with `theta_j = -sign(g_j + nu)`, else stop: `c` is a KKT point. If the signs do not match,
///   search the segment from `c` to the support solution: of its end and the points where a
///   coefficient changes sign, move to the one of least objective, drop the coefficient that
///   reached 0 there, and reset `theta` to the signs of `c`.
///
/// A just-activated coordinate on a flat direction moves in its own sign (downhill by its
/// violation). The iterate stays feasible; flat steps shrink `A` and the objective never rises
/// (a step that would raise it by more than 1e-12 relative ends the method with `None`, as does
/// the step limit, `20 K + 100` in [`solve_local`]; the KKT test of the result guards the rest).
pub fn active_set(g: ArrayView2<f64>, q: &[f64], lambda: f64, max_steps: usize) -> structdr_linalg::Result<Option<(Vec<f64>, usize)>> {
    let k = q.len();
    let lam: Vec<f64> = q.iter().map(|v| lambda * v).collect();
    let lam_max = lam.iter().copied().fold(0.0f64, f64::max);
    let j0 = (0..k).min_by(|&a, &b| q[a].total_cmp(&q[b]).then(a.cmp(&b))).expect("k >= 1");
    let mut c = vec![0.0f64; k];
    c[j0] = 1.0;
    let mut active = vec![j0];
    let mut theta = vec![0.0f64; k];
    theta[j0] = 1.0;
    for step in 1..=max_steps {
        let m = active.len();
        let e = reduced_eigen(g, &active)?;
        let emax = e.values[m - 1];
        if e.values[0] <= 1e-10 * emax {
            // flat direction d: X_A d = 0 and 1^T d = 0
            let d = e.vectors.column(0);
            let slope: f64 = (0..m).map(|r| lam[active[r]] * theta[active[r]] * d[r]).sum();
            let first_zero = |dir: f64| {
                (0..m)
                    .filter(|&r| c[active[r]] * dir * d[r] < 0.0)
                    .map(|r| (-c[active[r]] / (dir * d[r]), r))
                    .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
            };
            // a just-activated coordinate (c_j = 0) must move in its sign theta_j: that way the
            // objective falls by |d_j| times its violation (the sum above cancels to rounding
            // level when the violation is tiny, so its sign cannot decide); otherwise downhill
            let fresh = (0..m).filter(|&r| c[active[r]] == 0.0).map(|r| theta[active[r]] * d[r]).find(|v| v.abs() > 1e-8);
            let downhill = match fresh {
                Some(v) => v.signum(),
                None if slope > 0.0 => -1.0,
                None => 1.0,
            };
            let (dir, (t, hit)) = match (first_zero(downhill), first_zero(-downhill)) {
                (Some(z), _) => (downhill, z),
                (None, Some(z)) if slope == 0.0 => (-downhill, z),
                _ => return Ok(None),
            };
            let before = objective_on(g, &lam, &active, &c);
            for r in 0..m {
                c[active[r]] += t * dir * d[r];
            }
            c[active[hit]] = 0.0;
            if objective_on(g, &lam, &active, &c) > before + 1e-12 * before.abs().max(1.0) {
                return Ok(None); // not a descent: leave it to the fallback
            }
        } else {
            let solve = |v: &[f64]| -> Vec<f64> {
                let proj: Vec<f64> = (0..m).map(|s| (0..m).map(|r| e.vectors[[r, s]] * v[r]).sum::<f64>() / e.values[s]).collect();
                (0..m).map(|r| (0..m).map(|s| e.vectors[[r, s]] * proj[s]).sum::<f64>()).collect()
            };
            let rhs: Vec<f64> = active.iter().map(|&a| -lam[a] * theta[a]).collect();
            let y1 = solve(&rhs);
            let y2 = solve(&vec![1.0; m]);
            let nu1 = (y1.iter().sum::<f64>() - 1.0) / y2.iter().sum::<f64>();
            let cn: Vec<f64> = (0..m).map(|r| y1[r] - nu1 * y2[r]).collect();
            if (0..m).all(|r| cn[r] != 0.0 && cn[r].signum() == theta[active[r]]) {
                for r in 0..m {
                    c[active[r]] = cn[r];
                }
                let nu = 1.0 + nu1;
                let gc: Vec<f64> = (0..k).map(|a| active.iter().map(|&b| g[[a, b]] * c[b]).sum::<f64>()).collect();
                let scale = 1f64.max(lam_max).max(gc.iter().fold(0.0f64, |s, v| s.max(v.abs())));
                let worst =
                    (0..k).filter(|j| !active.contains(j)).map(|j| ((gc[j] + nu).abs() - lam[j], j)).max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
                match worst {
                    Some((v, j)) if v > 1e-12 * scale => {
                        active.push(j);
                        theta[j] = -(gc[j] + nu).signum();
                        continue;
                    }
                    _ => return Ok(Some((c, step))),
                }
            }
            // line search over the segment c -> cn: its end and the sign changes
            let old: Vec<f64> = active.iter().map(|&a| c[a]).collect();
            let at = |t: f64| -> Vec<f64> {
                let mut v = c.clone();
                for r in 0..m {
                    v[active[r]] = old[r] + t * (cn[r] - old[r]);
                }
                v
            };
            let mut cands: Vec<(f64, Option<usize>)> = vec![(1.0, None)];
            for r in 0..m {
                if old[r] != 0.0 && (cn[r] == 0.0 || cn[r].signum() != old[r].signum()) {
                    cands.push((old[r] / (old[r] - cn[r]), Some(r)));
                }
            }
            let before = objective_on(g, &lam, &active, &c);
            let (after, t, hit) = cands
                .iter()
                .map(|&(t, r)| (objective_on(g, &lam, &active, &at(t)), t, r))
                .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)))
                .expect("t = 1 is a candidate");
            if after > before + 1e-12 * before.abs().max(1.0) {
                return Ok(None); // not a descent: leave it to the fallback
            }
            c = at(t);
            if let Some(r) = hit {
                c[active[r]] = 0.0;
            }
        }
        active.retain(|&a| c[a] != 0.0);
        for j in 0..k {
            theta[j] = if c[j] > 0.0 {
                1.0
            } else if c[j] < 0.0 {
                -1.0
            } else {
                0.0
            };
        }
        if active.is_empty() {
            return Ok(None);
        }
    }
    Ok(None)
}

/// The reference code's ADMM (`admm_vec_func.m`, the splitting `z = c`):
///
/// `z <- (G + mu I + mu 1 1^T)^{-1} (mu c - Lambda + (gamma + mu) 1)`,
/// `c <- soft(z + Lambda / mu, lambda q / mu)`, `Lambda += mu (z - c)`, `gamma += mu (1 - 1^T z)`,
///
/// from `c = Lambda = 0`, `gamma = 0`, `mu = 10`, stopped by the reference criteria (`tol`) or
/// `max_iter`; with `polish_patterns`, the sign pattern is polished once it has been stable for 5
/// iterations (its support system solved exactly, accepted on the KKT test). The fallback of
/// [`solve_local`]; at small lambda its stopping rule can fire far from the optimum.
pub fn admm(g: ArrayView2<f64>, q: &[f64], lambda: f64, max_iter: usize, tol: f64, polish_patterns: bool) -> Result<LocalSolution> {
    let k = q.len();
    let mu = ADMM_MU;
    let mut m = Array2::from_shape_fn((k, k), |(a, b)| g[[a, b]] + mu);
    for a in 0..k {
        m[[a, a]] += mu;
    }
    let inv = Cholesky::factor(m.view()).and_then(|c| c.inverse()).map_err(numerical(M))?;
    let inv: Vec<f64> = inv.iter().copied().collect();
    let thresh: Vec<f64> = q.iter().map(|qj| lambda * qj / mu).collect();
    let mut c = vec![0.0f64; k];
    let mut z = vec![0.0f64; k];
    let mut z_prev = vec![0.0f64; k];
    let mut dual = vec![0.0f64; k];
    let mut gamma = 0.0f64;
    let mut rhs = vec![0.0f64; k];
    let mut sign = vec![0i8; k];
    let mut stable = 0usize;
    let mut tried = false;
    let mut polished: Option<Vec<f64>> = None;
    let mut exit = Exit::IterationLimit;
    let mut iterations = 0;
    for it in 1..=max_iter {
        iterations = it;
        for a in 0..k {
            rhs[a] = mu * c[a] - dual[a] + gamma + mu;
        }
        std::mem::swap(&mut z, &mut z_prev);
        for a in 0..k {
            let row = &inv[a * k..(a + 1) * k];
            z[a] = row.iter().zip(&rhs).map(|(p, r)| p * r).sum::<f64>();
        }
        let mut changed = false;
        for a in 0..k {
            let v = z[a] + dual[a] / mu;
            let mag = v.abs() - thresh[a];
            c[a] = if mag > 0.0 { mag.copysign(v) } else { 0.0 };
            let s = if c[a] > 0.0 {
                1
            } else if c[a] < 0.0 {
                -1
            } else {
                0
            };
            if s != sign[a] {
                sign[a] = s;
                changed = true;
            }
            dual[a] += mu * (z[a] - c[a]);
        }
        let zsum = z.iter().sum::<f64>();
        gamma += mu * (1.0 - zsum);
        if changed {
            stable = 0;
            tried = false;
        } else {
            stable += 1;
        }
        let err1 = z.iter().zip(&c).map(|(a, b)| (a - b).abs()).sum::<f64>() / k as f64;
        let err2 = (zsum - 1.0).abs();
        let err3 = z.iter().zip(&z_prev).map(|(a, b)| (a - b).abs()).sum::<f64>() / k as f64;
        let done = err1 <= tol && err2 <= tol && err3 <= 10.0 * tol;
        if polish_patterns && !tried && (stable >= STABLE_ITERS || done) {
            tried = true;
            if let Some(p) = polish(g, q, lambda, &sign).filter(|p| acceptable(g, q, lambda, p)) {
                polished = Some(p);
                exit = Exit::Polished;
                break;
            }
        }
        if done {
            exit = Exit::AdmmTolerance;
            break;
        }
    }
    let c = polished.unwrap_or(c);
    let (kkt, _) = kkt_residual(g, q, lambda, &c);
    let objective = objective(g, q, lambda, &c);
    Ok(LocalSolution { c, iterations, exit, kkt, objective })
}

/// SMCE's directed graph on distinct samples: per sample, the K-NN search result's neighbours,
/// the sparse program's solution over them and the (pruned) weights.
#[derive(Debug, Clone)]
pub struct SparseWeights {
    /// `neighbours[i]`: the K nearest neighbours of sample i, ascending distance.
    pub neighbours: Vec<Vec<usize>>,
    /// `solutions[i].c[a]`: the coefficient of `neighbours[i][a]`.
    pub solutions: Vec<LocalSolution>,
    /// `weights[i][a]`: `w_{i, neighbours[i][a]}` after pruning (0 where pruned or `c = 0`).
    pub weights: Vec<Vec<f64>>,
}

/// `w_j = (|c_j| / d_j) / sum_t (|c_t| / d_t)`, computed as `|c_j| (d_min / d_j)` normalised (no
/// overflow for tiny distances).
pub fn weights_from_coefficients(c: &[f64], dist: &[f64]) -> Vec<f64> {
    let dmin = dist.iter().copied().fold(f64::INFINITY, f64::min);
    let r: Vec<f64> = c.iter().zip(dist).map(|(cj, dj)| cj.abs() * (dmin / dj)).collect();
    let s = r.iter().sum::<f64>();
    r.iter().map(|v| v / s).collect()
}

/// The reference code's `processC(w, prune)` on one row: sorted by weight descending (ties to the
/// lower sample index `ids`), keep the shortest prefix whose sum reaches `prune` times the row's
/// sum; zero the rest.
pub fn prune_row(w: &mut [f64], ids: &[usize], prune: f64) {
    if prune >= 1.0 {
        return;
    }
    let mut order: Vec<usize> = (0..w.len()).collect();
    order.sort_by(|&a, &b| w[b].abs().total_cmp(&w[a].abs()).then(ids[a].cmp(&ids[b])));
    let total = order.iter().map(|&a| w[a].abs()).sum::<f64>();
    let mut sum = 0.0;
    let mut keep = order.len();
    for (t, &a) in order.iter().enumerate() {
        sum += w[a].abs();
        if sum >= prune * total {
            keep = t + 1;
            break;
        }
    }
    for &a in &order[keep..] {
        w[a] = 0.0;
    }
}

/// Steps 1-3 of the module doc on distinct samples `x` (no two rows equal): K-NN, the sparse
/// program of every sample (in parallel, results in sample order), weights and pruning.
pub fn sparse_weights(x: ArrayView2<f64>, k: usize, lambda: f64, prune: f64, solver: LocalSolver, max_iter: usize, tol: f64) -> Result<SparseWeights> {
    let nn = knn(x, k).map_err(numerics(M))?;
    let neighbours: Vec<Vec<usize>> = nn.indices.rows().into_iter().map(|r| r.to_vec()).collect();
    let per: Vec<(LocalSolution, Vec<f64>)> = neighbours
        .par_iter()
        .enumerate()
        .map(|(i, nb)| {
            let (g, q, dist) = local_problem(x, i, nb)?;
            let sol = solve_local(g.view(), &q, lambda, solver, max_iter, tol)?;
            let mut w = weights_from_coefficients(&sol.c, &dist);
            prune_row(&mut w, nb, prune);
            Ok((sol, w))
        })
        .collect::<Result<_>>()?;
    let (solutions, weights) = per.into_iter().unzip();
    Ok(SparseWeights { neighbours, solutions, weights })
}

/// `W_sym = max(W, W^T)` as sorted undirected edges `(i, j, w)`, `i < j`, `w > 0`.
pub fn symmetric_edges(sw: &SparseWeights) -> Vec<(usize, usize, f64)> {
    let mut directed: Vec<(usize, usize, f64)> = Vec::new();
    for (i, (nb, w)) in sw.neighbours.iter().zip(&sw.weights).enumerate() {
        for (&j, &v) in nb.iter().zip(w) {
            if v > 0.0 {
                directed.push((i.min(j), i.max(j), v));
            }
        }
    }
    directed.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)).then(a.2.total_cmp(&b.2)));
    let mut edges: Vec<(usize, usize, f64)> = Vec::with_capacity(directed.len());
    for e in directed {
        match edges.last_mut() {
            Some(last) if (last.0, last.1) == (e.0, e.1) => last.2 = last.2.max(e.2),
            _ => edges.push(e),
        }
    }
    edges
}
