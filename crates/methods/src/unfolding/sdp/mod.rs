//! The distance-constrained maximum-trace SDP behind MVU, MVUineq, MVU2 and landmark MVU, solved
//! by a low-rank (Burer-Monteiro) augmented Lagrangian and certified by a dual bound.
//!
//! # The problem
//!
//! With an undirected edge set `E` on N samples, squared lengths `d_e` and the centred kernel
//! `K = Q L Q^T` (`Q = I`, `L = K` for plain MVU; `Q` N x m for landmark MVU), the primal is
//!
//! `P* = max tr(K)  s.t.  L PSD,  1^T K 1 = 0,  A_e(K) = K_ii + K_jj - 2 K_ij  (=, <=) d_e`,
//!
//! or, for the l2 variant (MVU2), `max tr(K) - nu sum_e (A_e(K) - d_e)^2` with no distance
//! constraint. Its Lagrange dual has one weight `w_e` per edge and reads, with the weighted graph
//! Laplacian `L_w = sum_e w_e (e_i - e_j)(e_i - e_j)^T` and `c = Q^T 1`,
//!
//! `D* = min_w sum_e w_e d_e (+ ||w||^2 / (4 nu) for MVU2)  s.t.  Q^T L_w Q >= Q^T Q on c-perp`
//!
//! (`w >= 0` for the inequality version, free otherwise): for plain MVU the constraint says that
//! every eigenvalue of `L_w` orthogonal to `1` is at least 1. Weak duality `P <= D` holds for
//! every feasible pair, so a primal point and a dual point bound the optimum from both sides.
//!
//! # The solver
//!
//! `L = Z Z^T` with `Z` m x r (Burer & Monteiro 2003): `K = Y Y^T`, `Y = Q Z`, and `tr K = ||Y||^2`,
//! `A_e(K) = ||y_i - y_j||^2`. The columns of `Z` are kept orthogonal to `c` (so `1^T Y = 0`:
//! the centring constraint holds exactly). The distance constraints `g_e(Y) = ||y_i - y_j||^2 -
//! d_e` enter an augmented Lagrangian (Hestenes-Powell; Rockafellar's form for inequalities),
//!
//! - equality: `-||Y||^2 + sum_e w_e g_e + sigma/2 sum_e g_e^2`, then `w <- w + sigma g`;
//! - inequality: `-||Y||^2 + 1/(2 sigma) sum_e (max(0, w_e + sigma g_e)^2 - w_e^2)`, then
//!   `w <- max(0, w + sigma g)`;
//! - l2 penalty: `-||Y||^2 + nu sum_e g_e^2` minimised once (`w = 2 nu g` at its optimum),
//!
//! each subproblem minimised by L-BFGS over `Z` (O(|E| r + N m r) per evaluation; no N x N matrix),
//! `sigma` multiplied by 10 whenever the violation fell by less than 4x. For MVUineq the factor
//! sheds its vanishing columns at the checks from `sigma = 1e3` on ([`SdpOptions::trim`]): the
//! optima of Table 1 have far fewer significant eigenvalues than the start's 12 columns, and every
//! column costs the same per step. The distance constraints
//! enter scaled to relative form, `g_e / d_e` (the multipliers above are those of the scaled
//! constraints; the dual weights are `w_e / d_e`): the certificate's feasibility scaling pays for
//! the largest *relative* violation, and without the scaling the few edges of near-duplicate pairs
//! (`d_e ~ 1e-3 mean(d)`) held the gap at 1e-4 long after the rest had converged.
//!
//! # The certificate
//!
//! The multipliers `w` are scaled into the dual feasible set: with `mu` = the smallest eigenvalue
//! of the pencil `(Q^T L_w Q, Q^T Q)` on `c`-perp, `w / mu` is dual feasible when `mu > 0`, giving
//! the upper bound `U = sum_e w_e d_e / mu` (+ the MVU2 term). The lower bound is the primal value
//! of a feasible point: `tr K` (equality: up to the reported residual `max |g_e|`), `s tr K` with
//! `s = min(1, min_e d_e / ||y_i - y_j||^2)` (inequality: `s K` is exactly feasible), or the MVU2
//! objective. The relative gap `(U - P) / |P|` certifies the solution. When `mu < 1` the
//! factorisation rank is too small (the optimum has rank above r): the eigenvectors with eigenvalue
//! below 1 are directions of ascent, appended as new columns of `Z`, and the solve continues.
//! The dense eigenproblem costs O(m^3) (m = N for plain MVU: 7-10 s at N = 4435, twice per
//! check). For plain MVU the checks are screened instead ([`SdpOptions::screen`]): `mu` from a
//! block Krylov eigensolver on the sparse Cholesky of `L_w + beta I` (0.05-0.2 s there), and the
//! dense eigenproblem only for a bound that meets the target, for a rank growth and for the bound
//! a solve returns. The screened `mu` agrees with the dense one to about 1e-12, so the outer
//! loop takes the same decisions and the same iterates as with dense checks.
//!
//! # Where the code is
//!
//! `problem.rs` holds the instance and the geometry the parts share; `inner.rs` the
//! augmented-Lagrangian subproblem, its preconditioner and L-BFGS; `certificate.rs` the dual bound
//! and the multiplier refinement; this file the options, the solution and the outer loop
//! (multiplier and `sigma` updates, certification checks, rank growth, stopping rules). The unit
//! tests are in `tests.rs`.

use ndarray::{s, Array2};
use structdr_linalg::sparse::{Ordering, SymbolicCholesky};
use structdr_linalg::LinalgError;

mod certificate;
mod inner;
mod problem;

pub use certificate::Certificate;
use inner::preconditioned_lbfgs;
use problem::project_out;
pub use problem::{DistanceConstraint, DistanceSdp};

/// Stopping rules of [`DistanceSdp::solve`].
#[derive(Debug, Clone)]
pub struct SdpOptions {
    /// Largest factorisation rank r the rank-growth may reach.
    pub max_rank: usize,
    /// Stop when the certified relative duality gap is at most this.
    pub gap_tol: f64,
    /// Equality constraints: stop only when `max_e |g_e| <= feas_tol * mean(d)` as well.
    pub feas_tol: f64,
    /// Limit on augmented-Lagrangian (outer) iterations.
    pub max_outer: usize,
    /// Limit on L-BFGS iterations per subproblem.
    pub max_inner: usize,
    /// Screen the checks with the sparse eigensolver (plain MVU, `w >= 0`; `certificate.rs`):
    /// the outer loop's decisions use its `mu`; a bound that meets the target, a rank growth
    /// (its new columns are eigenvectors) and every bound a solve returns are recomputed densely
    /// first, so the iterates and the reported certificate are those of dense checks. Off:
    /// every check is dense.
    pub screen: bool,
    /// Drop the factor's vanishing columns (`<=` only; `None`: keep every column). At a check
    /// with `sigma >= TRIM_MIN_SIGMA`, `Z` is rotated to the principal axes of `Z^T Z` and the
    /// axes whose eigenvalue is below `trim * lambda_max` are dropped: directions the optimum does
    /// not use, which cost as much per L-BFGS step as the columns that carry `K` (an iteration is
    /// O((|E| + nnz(L_P)) r)). `Y Y^T` changes by less than `trim * lambda_max` per dropped axis,
    /// and a later check grows the rank again where the certificate finds ascent.
    pub trim: Option<f64>,
}

/// The penalty from which [`SdpOptions::trim`] applies: by then the subproblems have been solved
/// at growing accuracy for several outer iterations, and a column that is still below the
/// threshold is one the iterates have left (segment, K = 20: rank 12 -> 5 at the check of outer
/// iteration 5, sigma = 1e3; the optimum's K has 5 eigenvalues above 1e-7 of the largest).
pub const TRIM_MIN_SIGMA: f64 = 1e3;

impl Default for SdpOptions {
    fn default() -> Self {
        SdpOptions { max_rank: 60, gap_tol: 1e-6, feas_tol: 1e-7, max_outer: 80, max_inner: 20_000, screen: true, trim: None }
    }
}

/// What [`DistanceSdp::solve`] returns.
#[derive(Debug, Clone)]
pub struct SdpSolution {
    /// The factor `Y = Q Z` (N x r) of `K = Y Y^T`, centred. For inequality constraints it is
    /// scaled by `sqrt(s)` so that `Y Y^T` is exactly feasible.
    pub y: Array2<f64>,
    /// The final certificate.
    pub certificate: Certificate,
    /// Outer iterations run.
    pub outer: usize,
    /// L-BFGS iterations summed over all subproblems.
    pub inner: usize,
    /// `tr K` after every outer iteration.
    pub history: Vec<f64>,
    /// Whether `rel_gap <= gap_tol` (and, for equality, the residual test) was met.
    pub certified: bool,
    /// Why the solver stopped, in words.
    pub termination: String,
    /// Every certificate the solve computed, in order: (relative gap, feasible), where feasible
    /// means the constraint residual test passed (always true for `<=` and the penalty). The
    /// returned certificate's gap is at most the smallest feasible one here (a screened one to
    /// within the screening eigensolver's accuracy, about 1e-13): a solve that stops uncertified
    /// returns its best iterate, not its last.
    pub checked_gaps: Vec<(f64, bool)>,
    /// The multipliers `v` of the scaled constraints `g_e / d_e` when the solve stopped (one per
    /// edge; the dual weights are `v_e / d_e`), for a warm start ([`DistanceSdp::solve_warm`]).
    pub multipliers: Vec<f64>,
    /// The augmented Lagrangian's penalty `sigma` when the solve stopped.
    pub sigma: f64,
}

impl SdpSolution {
    /// Why the solve stopped: certified (relative duality gap `<= gap_tol` at a feasible point),
    /// the outer iteration limit `max_outer`, or a stall; the residual is the relative gap.
    pub fn stop(&self, max_outer: usize, gap_tol: f64) -> crate::api::StopReason {
        crate::api::StopReason::classify(self.certified, self.outer, max_outer, Some(self.certificate.rel_gap), Some(gap_tol), &self.termination)
    }
}

impl<'a> DistanceSdp<'a> {
    /// Solves the SDP from the starting factor `z0` (m x r0, any rank; it is centred first).
    pub fn solve(&self, z0: Array2<f64>, opts: &SdpOptions) -> Result<SdpSolution, LinalgError> {
        self.solve_warm(z0, None, opts)
    }

    /// [`DistanceSdp::solve`] from the starting factor `z0` and, with `warm = Some((v, sigma))`,
    /// the multipliers `v` of the scaled constraints (one per edge, as
    /// [`SdpSolution::multipliers`] returns them) and the penalty `sigma` to start from (a warm
    /// start from a neighbouring problem's solution; `None`: `v = 0`, `sigma = 10`).
    pub fn solve_warm(&self, z0: Array2<f64>, warm: Option<(Vec<f64>, f64)>, opts: &SdpOptions) -> Result<SdpSolution, LinalgError> {
        let (w0, sigma0) = warm.unwrap_or_else(|| (vec![0.0; self.edges.len()], 10.0));
        assert_eq!(w0.len(), self.edges.len(), "one multiplier per edge");
        let m = self.m();
        assert_eq!(z0.nrows(), m, "Z has m rows");
        assert_eq!(self.edges.len(), self.d2.len(), "one length per edge");
        let c = self.centring_vector();
        let mut z = z0;
        project_out(&mut z, &c);
        // the multipliers v of the scaled constraints h_e = omega_e g_e, omega_e = 1 / d_e: a
        // relative violation is what the feasibility scaling of the certificate pays for, so
        // every edge is driven to the same relative accuracy (an edge of a near-duplicate pair,
        // d_e ~ 1e-3 mean(d), otherwise dominates the gap). The dual weights are w_e = omega_e v_e.
        let penalty = matches!(self.constraint, DistanceConstraint::Penalty(_));
        let mean_d = self.d2.iter().sum::<f64>() / self.d2.len().max(1) as f64;
        let omega: Vec<f64> = self.d2.iter().map(|&d| if penalty { 1.0 } else { 1.0 / d.max(1e-4 * mean_d).max(f64::MIN_POSITIVE) }).collect();
        // relative-form quantities (violations, multipliers) back to the absolute form: times omega_e
        let times_omega = |v: &[f64]| -> Vec<f64> { v.iter().zip(&omega).map(|(a, b)| a * b).collect() };
        let mut w = w0;
        let mut sigma = sigma0;
        let mut prev_viol = f64::INFINITY;
        let mut inner_tol = 1e-2;
        let mut history = Vec::new();
        let mut inner_total = 0;
        let mut last_checked_viol = f64::INFINITY;
        // the best certificate so far (feasible within feas_tol, from any check), its factor, and
        // how many checks at full inner accuracy ago it improved 2x
        let mut best: Option<(Certificate, Array2<f64>)> = None;
        let mut since_improvement = 0usize;
        let mut viol_history: Vec<f64> = Vec::new();
        let mut checked_gaps: Vec<(f64, bool)> = Vec::new();
        // a certificate's bounds count only when the point is feasible: always for <= (scaled to
        // feasibility) and the penalty, within feas_tol for equality
        let feasible = |cert: &Certificate| !matches!(self.constraint, DistanceConstraint::Equality) || cert.residual <= opts.feas_tol;
        // the pattern of the graph Laplacian, analysed once (plain MVU's preconditioner)
        let symbolic = match self.q {
            None => Some(
                SymbolicCholesky::analyze(self.n, self.edges, Ordering::Auto)
                    .map_err(|e| LinalgError::Shape { what: "mvu preconditioner", detail: e.to_string() })?,
            ),
            Some(_) => None,
        };
        let screen = if opts.screen { symbolic.as_ref() } else { None };
        for outer in 1..=opts.max_outer {
            let r = z.ncols();
            let scale = 1.0 + z.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            let x0: Vec<f64> = z.iter().copied().collect();
            let wk = w.clone();
            let y_now = self.lift(z.view());
            let pre = self.preconditioner(&symbolic, y_now.view(), &wk, &omega, sigma)?;
            let res = preconditioned_lbfgs(
                |p, g| self.lagrangian(p, r, &wk, &omega, sigma, &c, g),
                x0,
                |g, out| pre.apply(g, r, &c, out),
                inner_tol * scale,
                opts.max_inner,
            );
            inner_total += res.iterations;
            z = Array2::from_shape_vec((m, r), res.x).expect("packed Z");
            project_out(&mut z, &c);
            let y = self.lift(z.view());
            let g = times_omega(&self.violations(y.view()));
            history.push(y.iter().map(|v| v * v).sum());
            let viol = match self.constraint {
                DistanceConstraint::Equality => g.iter().fold(0.0f64, |a, v| a.max(v.abs())),
                DistanceConstraint::Inequality => g.iter().zip(&w).fold(0.0f64, |a, (&gv, &we)| a.max(gv.max(-we / sigma))),
                DistanceConstraint::Penalty(_) => 0.0,
            };
            match self.constraint {
                DistanceConstraint::Equality => w.iter_mut().zip(&g).for_each(|(we, gv)| *we += sigma * gv),
                DistanceConstraint::Inequality => w.iter_mut().zip(&g).for_each(|(we, gv)| *we = (*we + sigma * gv).max(0.0)),
                DistanceConstraint::Penalty(nu) => w.iter_mut().zip(&g).for_each(|(we, gv)| *we = 2.0 * nu * gv),
            }
            // raise sigma only when the subproblem was solved and the violation stalled; past
            // 1e6 (mean edge length 1) L-BFGS stalls on the conditioning instead
            if !penalty && viol > 0.25 * prev_viol && res.converged {
                sigma = (sigma * 10.0).min(1e6);
            }
            prev_viol = viol;
            viol_history.push(viol);
            inner_tol = (inner_tol * 0.2).max(1e-11);
            // The endgame of `<=`: the violation is below the gap target, so it no longer limits
            // the gap (the primal bound `s tr K` loses about the largest relative violation, the
            // module doc); what is left is `1 - mu`, the dual side, which falls only when the
            // multipliers settle or the rank grows, and the rank grows only at a check. So every
            // outer iteration is checked from here, and the gap, not the violation, decides a
            // stall. (Version 5 checked only when the violation halved, and stopped when it had
            // not halved in 8 iterations: traces of iris K = 5 and 15 show it constant at 7e-7
            // and 5e-7 while mu sat at 0.99995 with no check left to grow the rank; the solves
            // stopped at gaps of 5e-5 and 3.5e-4, and certify at 4.8e-6 and 9.7e-7 with this.)
            let endgame = self.constraint == DistanceConstraint::Inequality && viol <= opts.gap_tol;
            // slow progress: the violation has not halved in 8 outer iterations at the largest
            // sigma (equality MVU, whose dual optimum is not attained, ends here)
            let n_hist = viol_history.len();
            if !penalty && sigma >= 1e6 && n_hist > 8 && !endgame && viol > opts.feas_tol && viol > 0.5 * viol_history[n_hist - 9] {
                let y = self.lift(z.view());
                let cert = self.certificate(y.view(), &times_omega(&w))?;
                checked_gaps.push((cert.rel_gap, feasible(&cert)));
                // return the best certified iterate when it beats the current one (a rank growth
                // shortly before can leave the current iterate far from converged)
                let (cert, z) = match best.take() {
                    Some((b, bz)) if b.rel_gap < cert.rel_gap => (b, bz),
                    _ => (cert, z),
                };
                let cert = self.confirmed(self.lift(z.view()).view(), cert)?;
                // the bound in hand may meet the target although the violation stalled: then the
                // solve is certified (version 5 reported such a solve as stalled)
                if cert.rel_gap <= opts.gap_tol && feasible(&cert) {
                    let msg = format!(
                        "certified: relative duality gap {:.2e} <= {:.0e} after {outer} outer iterations (the constraint violation {viol:.2e} had stopped halving at sigma = {sigma:.0e})",
                        cert.rel_gap, opts.gap_tol
                    );
                    return self.finish(z, cert, outer, inner_total, history, true, msg, checked_gaps, &w, sigma);
                }
                let msg = format!(
                    "stalled: the constraint violation {viol:.2e} has not halved in 8 outer iterations at sigma = {sigma:.0e}; best relative gap {:.2e}",
                    cert.rel_gap
                );
                return self.finish(z, cert, outer, inner_total, history, false, msg, checked_gaps, &w, sigma);
            }
            // certify when the violation is small or has fallen 100x since the last look, and at
            // every outer iteration of the `<=` endgame (above; its first check often certifies,
            // one outer iteration before the 100x rule would have looked)
            let due = penalty || viol <= opts.feas_tol || viol <= 1e-2 * last_checked_viol || endgame;
            if !due {
                continue;
            }
            last_checked_viol = viol;
            let w_abs = times_omega(&w);
            let mut cert = self.screened_certificate(y.view(), &w_abs, screen)?;
            if !penalty {
                let scale_w = w.iter().fold(0.0f64, |a, v| a.max(v.abs()));
                let active: Vec<bool> = match self.constraint {
                    DistanceConstraint::Inequality => w.iter().map(|&v| v > 1e-9 * scale_w).collect(),
                    _ => vec![true; w.len()],
                };
                let refined = self.refine_multipliers(y.view(), &w_abs, &active, 3000);
                let alt = self.screened_certificate(y.view(), &refined, screen)?;
                if alt.rel_gap < cert.rel_gap {
                    cert = alt;
                }
            }
            // a screened bound that meets the target is recomputed densely before it ends the solve
            if !cert.exact && cert.rel_gap <= opts.gap_tol && feasible(&cert) {
                cert = self.confirmed(y.view(), cert)?;
            }
            let cert_feasible = feasible(&cert);
            checked_gaps.push((cert.rel_gap, cert_feasible));
            if cert.rel_gap <= opts.gap_tol && cert_feasible {
                let msg = format!("certified: relative duality gap {:.2e} <= {:.0e} after {outer} outer iterations", cert.rel_gap, opts.gap_tol);
                return self.finish(z, cert, outer, inner_total, history, true, msg, checked_gaps, &w, sigma);
            }
            // every certificate is a valid pair of bounds: keep the best one and its factor
            let halved = best.as_ref().is_none_or(|(b, _)| cert.rel_gap < 0.5 * b.rel_gap);
            if cert_feasible && best.as_ref().is_none_or(|(b, _)| cert.rel_gap < b.rel_gap) {
                best = Some((cert.clone(), z.clone()));
            }
            if cert_feasible && (viol <= opts.feas_tol || endgame) && inner_tol <= 1e-8 {
                since_improvement += 1;
                if halved {
                    since_improvement = 0;
                }
                if since_improvement >= 6 {
                    let (b, bz) = best.take().expect("set above");
                    let msg = format!(
                        "stalled: the certified relative gap {:.2e} has not halved in 6 checks (target {:.0e}); constraint residual {:.2e}",
                        b.rel_gap, opts.gap_tol, b.residual
                    );
                    return self.finish(bz, b, outer, inner_total, history, false, msg, checked_gaps, &w, sigma);
                }
            }
            if let Some(trim) = opts.trim.filter(|_| self.constraint == DistanceConstraint::Inequality && sigma >= TRIM_MIN_SIGMA && r > 1) {
                if let Some(kept) = trimmed(&z, trim)? {
                    z = kept;
                    project_out(&mut z, &c);
                    continue;
                }
            }
            // in the endgame, grow only when the gap has stopped halving at this rank: a growth
            // restarts the subproblem far from converged (isolet K = 30: the gap went from 1.9e-5
            // to 3.6e-4 after a growth that interrupted a halving)
            let settled = !endgame || !halved;
            let grow = |c: &Certificate| c.mu < 1.0 - 0.1 * opts.gap_tol && c.ascent.ncols() > 0;
            if settled && grow(&cert) && r < opts.max_rank && viol <= 1e-3 && inner_tol <= 1e-7 {
                // the new columns are the dense eigensolver's eigenvectors, so a screened solve
                // takes the same iterates as a dense one
                let cert = self.confirmed(y.view(), cert)?;
                if !grow(&cert) {
                    continue;
                }
                // rank too small: add the ascent directions at a small scale, new columns of
                // norm about sqrt(1e-6 tr K) (the present ones: about sqrt(tr K / r)). Smaller
                // new columns disturb the converged part less: with 1e-4 (version 5's scale)
                // the endgame's growths restarted the subproblem far from its optimum (isolet
                // K = 30: 21 outer iterations, 965 s; with 1e-6: 10, 323 s; iris K = 5: 34 s,
                // 7.5 s), while 1e-8 was too small to leave the saddle (iris K = 50 ran into
                // the outer limit at a gap of 5e-3)
                let add = cert.ascent.ncols().min(opts.max_rank - r);
                let eps = (1e-6 * history.last().copied().unwrap_or(1.0) / m as f64).sqrt();
                let mut grown = Array2::<f64>::zeros((m, r + add));
                grown.slice_mut(s![.., ..r]).assign(&z);
                grown.slice_mut(s![.., r..]).assign(&(&cert.ascent.slice(s![.., ..add]) * (eps * (m as f64).sqrt())));
                z = grown;
                project_out(&mut z, &c);
                inner_tol = inner_tol.max(1e-4);
            }
        }
        let y = self.lift(z.view());
        let mut cert = self.certificate(y.view(), &times_omega(&w))?;
        checked_gaps.push((cert.rel_gap, feasible(&cert)));
        if let Some((b, bz)) = best {
            if b.rel_gap < cert.rel_gap {
                cert = b;
                z = bz;
            }
        }
        let msg = format!("outer iteration limit {} reached; relative gap {:.2e}, residual {:.2e}", opts.max_outer, cert.rel_gap, cert.residual);
        self.finish(z, cert, opts.max_outer, inner_total, history, false, msg, checked_gaps, &w, sigma)
    }

    /// The solution from the factor `z` and its certificate, recomputed densely when it was
    /// screened (the reported bound always comes from the dense eigensolver).
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        z: Array2<f64>,
        cert: Certificate,
        outer: usize,
        inner: usize,
        history: Vec<f64>,
        certified: bool,
        termination: String,
        checked_gaps: Vec<(f64, bool)>,
        multipliers: &[f64],
        sigma: f64,
    ) -> Result<SdpSolution, LinalgError> {
        let mut y = self.lift(z.view());
        let cert = self.confirmed(y.view(), cert)?;
        if let DistanceConstraint::Inequality = self.constraint {
            let tr: f64 = y.iter().map(|v| v * v).sum();
            if tr > 0.0 {
                y.mapv_inplace(|v| v * (cert.primal / tr).sqrt());
            }
        }
        Ok(SdpSolution { y, certificate: cert, outer, inner, history, certified, termination, checked_gaps, multipliers: multipliers.to_vec(), sigma })
    }
}

/// `Z V_k` with `V_k` the eigenvectors of `Z^T Z` whose eigenvalues are at least `trim` times the
/// largest (largest first), or `None` when every axis is kept. `Z V_k V_k^T Z^T` differs from
/// `Z Z^T` by the dropped eigenvalues, each below `trim lambda_max`.
fn trimmed(z: &Array2<f64>, trim: f64) -> Result<Option<Array2<f64>>, LinalgError> {
    let e = structdr_linalg::eigh(z.t().dot(z).view())?;
    let largest = e.values.iter().copied().fold(0.0f64, f64::max);
    // eigh's values ascend: the kept axes, largest first
    let keep: Vec<usize> = (0..e.values.len()).rev().filter(|&k| e.values[k] >= trim * largest).collect();
    if keep.is_empty() || keep.len() == z.ncols() {
        return Ok(None);
    }
    Ok(Some(z.dot(&e.vectors.select(ndarray::Axis(1), &keep))))
}

#[cfg(test)]
mod tests;
