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
//! `sigma` multiplied by 10 whenever the violation fell by less than 4x. The distance constraints
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
//! The dense eigenproblem costs O(m^3) (m = N for plain MVU) and runs a few times per fit.

use ndarray::{s, Array1, Array2, ArrayView2, Axis};
use structdr_linalg::sparse::{Ordering, SparseCholesky, SymbolicCholesky};
use structdr_linalg::SpdFactor;
use structdr_linalg::{eigh, eigh_bottom, LinalgError};
use structdr_numerics::graphs::laplacian;

/// How the distances of the edge set constrain the kernel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DistanceConstraint {
    /// `A_e(K) = d_e` (MVU, Weinberger & Saul 2004).
    Equality,
    /// `A_e(K) <= d_e` (MVUineq; landmark MVU).
    Inequality,
    /// No constraint; `nu sum_e (A_e(K) - d_e)^2` is subtracted from the objective (MVU2).
    Penalty(f64),
}

/// One instance of the SDP of the module doc.
#[derive(Debug, Clone)]
pub struct DistanceSdp<'a> {
    /// The samples: `K` is N x N.
    pub n: usize,
    /// The map `Q` (N x m) of landmark MVU; `None` is `Q = I` (plain MVU, m = N).
    pub q: Option<ArrayView2<'a, f64>>,
    /// The undirected edges `(i, j)`, `i != j`, each once.
    pub edges: &'a [(usize, usize)],
    /// Their squared lengths `d_e >= 0`.
    pub d2: &'a [f64],
    /// Equality, inequality or l2 penalty.
    pub constraint: DistanceConstraint,
}

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
}

impl Default for SdpOptions {
    fn default() -> Self {
        SdpOptions { max_rank: 60, gap_tol: 1e-6, feas_tol: 1e-7, max_outer: 80, max_inner: 20_000 }
    }
}

/// The dual bound of the module doc at one set of multipliers.
#[derive(Debug, Clone)]
pub struct Certificate {
    /// `mu`: the smallest eigenvalue of `(Q^T L_w Q, Q^T Q)` on `c`-perp (1 at the optimum).
    pub mu: f64,
    /// The primal value `P` (lower bound; for equality constraints up to `residual`).
    pub primal: f64,
    /// The dual value `U` of the scaled multipliers (upper bound; infinite when `mu <= 0`).
    pub dual: f64,
    /// `(U - P) / |P|`.
    pub rel_gap: f64,
    /// Equality: `max_e |g_e|`; inequality: `max_e max(g_e, 0)` before the feasibility scaling;
    /// l2 penalty: 0 (every PSD centred K is feasible).
    pub residual: f64,
    /// The scaled, dual-feasible edge weights `t w`.
    pub weights: Vec<f64>,
    /// Eigenvectors (columns, in the space of `Z`) whose eigenvalue is below 1: the directions of
    /// ascent when the rank is too small.
    pub ascent: Array2<f64>,
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
    /// returned certificate's gap is at most the smallest feasible one here: a solve that stops
    /// uncertified returns its best iterate, not its last.
    pub checked_gaps: Vec<(f64, bool)>,
}

impl SdpSolution {
    /// Why the solve stopped: certified (relative duality gap `<= gap_tol` at a feasible point),
    /// the outer iteration limit `max_outer`, or a stall; the residual is the relative gap.
    pub fn stop(&self, max_outer: usize, gap_tol: f64) -> crate::api::StopReason {
        crate::api::StopReason::classify(self.certified, self.outer, max_outer, Some(self.certificate.rel_gap), Some(gap_tol), &self.termination)
    }
}

impl<'a> DistanceSdp<'a> {
    /// m: the rows of `Z` (N without landmarks).
    fn m(&self) -> usize {
        self.q.map_or(self.n, |q| q.ncols())
    }

    /// `c = Q^T 1`.
    fn centring_vector(&self) -> Array1<f64> {
        match self.q {
            Some(q) => q.sum_axis(Axis(0)),
            None => Array1::ones(self.n),
        }
    }

    /// `Y = Q Z`.
    fn lift(&self, z: ArrayView2<f64>) -> Array2<f64> {
        match self.q {
            Some(q) => q.dot(&z),
            None => z.to_owned(),
        }
    }

    /// `g_e = ||y_i - y_j||^2 - d_e` for every edge.
    pub fn violations(&self, y: ArrayView2<f64>) -> Vec<f64> {
        self.edges
            .iter()
            .zip(self.d2)
            .map(|(&(i, j), &d)| {
                let (a, b) = (y.row(i), y.row(j));
                a.iter().zip(b.iter()).map(|(u, v)| (u - v) * (u - v)).sum::<f64>() - d
            })
            .collect()
    }

    /// The augmented Lagrangian (or the MVU2 objective) at `z` (m x r, row-major in `zs`) and its
    /// gradient with respect to `Z`, projected onto `c`-perp.
    fn lagrangian(&self, zs: &[f64], r: usize, w: &[f64], omega: &[f64], sigma: f64, c: &Array1<f64>, grad: &mut [f64]) -> f64 {
        let m = self.m();
        let z = ArrayView2::from_shape((m, r), zs).expect("packed Z");
        let y = self.lift(z);
        let mut gy = &y * -2.0;
        let mut f = -y.iter().map(|v| v * v).sum::<f64>();
        let ys = y.as_slice().expect("standard layout");
        let gys = gy.as_slice_mut().expect("standard layout");
        let mut diff = vec![0.0; r];
        for (e, (&(i, j), &d)) in self.edges.iter().zip(self.d2).enumerate() {
            let (yi, yj) = (&ys[i * r..(i + 1) * r], &ys[j * r..(j + 1) * r]);
            let mut len = 0.0;
            for k in 0..r {
                diff[k] = yi[k] - yj[k];
                len += diff[k] * diff[k];
            }
            let g = len - d;
            // the constraints enter scaled, h_e = omega_e g_e; coef = d(terms) / d(g_e)
            let h = omega[e] * g;
            let coef = match self.constraint {
                DistanceConstraint::Equality => {
                    f += w[e] * h + 0.5 * sigma * h * h;
                    omega[e] * (w[e] + sigma * h)
                }
                DistanceConstraint::Inequality => {
                    let t = w[e] + sigma * h;
                    if t > 0.0 {
                        f += (t * t - w[e] * w[e]) / (2.0 * sigma);
                        omega[e] * t
                    } else {
                        f -= w[e] * w[e] / (2.0 * sigma);
                        0.0
                    }
                }
                DistanceConstraint::Penalty(nu) => {
                    f += nu * g * g;
                    2.0 * nu * g
                }
            };
            if coef != 0.0 {
                let c2 = 2.0 * coef;
                for k in 0..r {
                    gys[i * r + k] += c2 * diff[k];
                    gys[j * r + k] -= c2 * diff[k];
                }
            }
        }
        let mut gz = match self.q {
            Some(q) => q.t().dot(&gy),
            None => gy,
        };
        project_out(&mut gz, c);
        grad.copy_from_slice(gz.as_slice().expect("standard layout"));
        f
    }

    /// `L_w Q` (N x m) edge by edge, without forming the N x N Laplacian.
    fn laplacian_times(&self, w: &[f64], q: ArrayView2<f64>) -> Array2<f64> {
        let mut lq = Array2::<f64>::zeros(q.raw_dim());
        for (&(i, j), &we) in self.edges.iter().zip(w) {
            for k in 0..q.ncols() {
                let dq = we * (q[[i, k]] - q[[j, k]]);
                lq[[i, k]] += dq;
                lq[[j, k]] -= dq;
            }
        }
        lq
    }

    /// The dual bound of the module doc for the multipliers `w` and the factor `y`.
    pub fn certificate(&self, y: ArrayView2<f64>, w: &[f64]) -> Result<Certificate, LinalgError> {
        let g = self.violations(y);
        let tr: f64 = y.iter().map(|v| v * v).sum();
        let (primal, residual) = match self.constraint {
            DistanceConstraint::Equality => (tr, g.iter().fold(0.0f64, |a, v| a.max(v.abs()))),
            DistanceConstraint::Inequality => {
                let s = g.iter().zip(self.d2).fold(1.0f64, |s, (gv, d)| if gv + d > 0.0 { s.min(d / (gv + d)) } else { s });
                (s * tr, g.iter().fold(0.0f64, |a, &v| a.max(v)))
            }
            DistanceConstraint::Penalty(nu) => (tr - nu * g.iter().map(|v| v * v).sum::<f64>(), 0.0),
        };
        let (mu, vectors, values) = self.smallest_pencil_eigenvalues(w)?;
        let wd: f64 = w.iter().zip(self.d2).map(|(a, b)| a * b).sum();
        let ww: f64 = w.iter().map(|a| a * a).sum();
        let (t, dual) = if mu > 0.0 {
            match self.constraint {
                DistanceConstraint::Penalty(nu) => {
                    let t = (1.0 / mu).max(if ww > 0.0 { -2.0 * nu * wd / ww } else { 0.0 });
                    (t, t * wd + t * t * ww / (4.0 * nu))
                }
                _ => (1.0 / mu, wd / mu),
            }
        } else {
            (0.0, f64::INFINITY)
        };
        let rel_gap = if dual.is_finite() { (dual - primal) / primal.abs().max(f64::MIN_POSITIVE) } else { f64::INFINITY };
        let below: Vec<usize> = (0..values.len()).filter(|&k| values[k] < 1.0 - 1e-9).collect();
        let mut ascent = Array2::zeros((vectors.nrows(), below.len()));
        for (c, &k) in below.iter().enumerate() {
            ascent.column_mut(c).assign(&vectors.column(k));
        }
        Ok(Certificate { mu, primal, dual, rel_gap, residual, weights: w.iter().map(|v| v * t).collect(), ascent })
    }

    /// The smallest eigenvalues (ascending, at most 8) of the pencil `(Q^T L_w Q, Q^T Q)` restricted
    /// to `c`-perp, and their eigenvectors in the space of `Z` (normalised to `v^T Q^T Q v = 1`).
    fn smallest_pencil_eigenvalues(&self, w: &[f64]) -> Result<(f64, Array2<f64>, Vec<f64>), LinalgError> {
        let m = self.m();
        let want = 8.min(m - 1);
        match self.q {
            None => {
                // L_w + s 1 1^T / N: the constant vector moves to eigenvalue s, above every
                // eigenvalue of L_w (Gershgorin: s > 2 max_i sum_j |w_ij|), the rest stay.
                let weighted: Vec<(usize, usize, f64)> = self.edges.iter().zip(w).map(|(&(i, j), &we)| (i, j, we)).collect();
                let mut a = laplacian::from_edges(m, &weighted);
                let mut row_abs = vec![0.0; m];
                for &(i, j, we) in &weighted {
                    row_abs[i] += we.abs();
                    row_abs[j] += we.abs();
                }
                let shift = 2.0 * row_abs.iter().fold(0.0f64, |a, &b| a.max(b)) + 2.0;
                a.mapv_inplace(|v| v + shift / m as f64);
                let e = eigh_bottom(a.view(), want)?;
                Ok((e.values[0], e.vectors, e.values.to_vec()))
            }
            Some(q) => {
                // A = Q^T L_w Q via L_w Q edge by edge; B = Q^T Q. A Householder reflection H maps
                // c to a multiple of e_1; dropping the first row and column of H A H and H B H
                // restricts both to c-perp. Then the symmetric C = B~^-1/2 A~ B~^-1/2.
                let a = q.t().dot(&self.laplacian_times(w, q));
                let b = q.t().dot(&q);
                let c = self.centring_vector();
                let h = householder(&c);
                let at = reflect(&a, &h).slice(s![1.., 1..]).to_owned();
                let bt = reflect(&b, &h).slice(s![1.., 1..]).to_owned();
                let eb = eigh(bt.view())?;
                if eb.values[0] <= 0.0 {
                    return Err(LinalgError::NotPositiveDefinite { minor: 0, n: m - 1 });
                }
                let inv_sqrt = {
                    let mut v = eb.vectors.clone();
                    for (k, mut col) in v.columns_mut().into_iter().enumerate() {
                        col.mapv_inplace(|x| x / eb.values[k].sqrt());
                    }
                    v.dot(&eb.vectors.t())
                };
                let cm = inv_sqrt.dot(&at).dot(&inv_sqrt);
                let cm = (&cm + &cm.t()) * 0.5;
                let e = eigh_bottom(cm.view(), want)?;
                // back to Z-space: u = B~^-1/2 v, padded with a leading 0, reflected by H
                let u = inv_sqrt.dot(&e.vectors);
                let mut full = Array2::<f64>::zeros((m, u.ncols()));
                full.slice_mut(s![1.., ..]).assign(&u);
                let full = apply_householder(&full, &h);
                Ok((e.values[0], full, e.values.to_vec()))
            }
        }
    }

    /// Least-squares multipliers for the factor `y`: the `w` (supported on `active`, starting from
    /// `w0`) minimising `||(L_w - I) Y||_F^2`, the stationarity residual of the Lagrangian, by
    /// conjugate gradients on the normal equations (`J w = L_w Y`, `J^T R = (<r_i - r_j, y_i -
    /// y_j>)_e`; O(|E| r) per product). At an exact optimum with attained dual this recovers the
    /// dual solution to the accuracy of `y`, where the augmented-Lagrangian multipliers lag by
    /// O(1/sigma). Inequality constraints: negative weights are clipped to 0 afterwards.
    pub fn refine_multipliers(&self, y: ArrayView2<f64>, w0: &[f64], active: &[bool], iterations: usize) -> Vec<f64> {
        let r = y.ncols();
        let ys = y.as_standard_layout().into_owned();
        let ys = ys.as_slice().expect("standard layout");
        let n = y.nrows();
        let apply = |w: &[f64], out: &mut Vec<f64>| {
            out.iter_mut().for_each(|v| *v = 0.0);
            for (e, &(i, j)) in self.edges.iter().enumerate() {
                if !active[e] || w[e] == 0.0 {
                    continue;
                }
                for k in 0..r {
                    let dv = w[e] * (ys[i * r + k] - ys[j * r + k]);
                    out[i * r + k] += dv;
                    out[j * r + k] -= dv;
                }
            }
        };
        let apply_t = |res: &[f64], out: &mut Vec<f64>| {
            for (e, &(i, j)) in self.edges.iter().enumerate() {
                out[e] = if active[e] { (0..r).map(|k| (res[i * r + k] - res[j * r + k]) * (ys[i * r + k] - ys[j * r + k])).sum() } else { 0.0 };
            }
        };
        let m = self.edges.len();
        let mut w: Vec<f64> = w0.iter().zip(active).map(|(&v, &a)| if a { v } else { 0.0 }).collect();
        let mut jw = vec![0.0; n * r];
        apply(&w, &mut jw);
        let resid: Vec<f64> = ys.iter().zip(&jw).map(|(y, j)| y - j).collect();
        let mut g = vec![0.0; m];
        apply_t(&resid, &mut g);
        let mut p = g.clone();
        let mut gg: f64 = g.iter().map(|v| v * v).sum();
        let g0 = gg;
        let mut jp = vec![0.0; n * r];
        for _ in 0..iterations {
            if gg <= 1e-30 * g0.max(1e-300) {
                break;
            }
            apply(&p, &mut jp);
            let pjjp: f64 = jp.iter().map(|v| v * v).sum();
            if pjjp <= 0.0 {
                break;
            }
            let alpha = gg / pjjp;
            w.iter_mut().zip(&p).for_each(|(a, b)| *a += alpha * b);
            let mut jtjp = vec![0.0; m];
            apply_t(&jp, &mut jtjp);
            g.iter_mut().zip(&jtjp).for_each(|(a, b)| *a -= alpha * b);
            let gg_new: f64 = g.iter().map(|v| v * v).sum();
            let beta = gg_new / gg;
            gg = gg_new;
            p.iter_mut().zip(&g).for_each(|(a, b)| *a = b + beta * *a);
        }
        if self.constraint == DistanceConstraint::Inequality {
            w.iter_mut().for_each(|v| *v = v.max(0.0));
        }
        w
    }

    /// Solves the SDP from the starting factor `z0` (m x r0, any rank; it is centred first).
    pub fn solve(&self, z0: Array2<f64>, opts: &SdpOptions) -> Result<SdpSolution, LinalgError> {
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
        let mut w = vec![0.0; self.edges.len()];
        let mut sigma = 10.0;
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
        for outer in 1..=opts.max_outer {
            let r = z.ncols();
            let scale = 1.0 + z.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            let x0: Vec<f64> = z.iter().copied().collect();
            let wk = w.clone();
            let y_now = self.lift(z.view());
            let pre = self.preconditioner(&symbolic, y_now.view(), &wk, &omega, sigma)?;
            let res =
                preconditioned_lbfgs(|p, g| self.lagrangian(p, r, &wk, &omega, sigma, &c, g), x0, |g| pre.apply(g, r, &c), inner_tol * scale, opts.max_inner);
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
            // slow progress: the violation has not halved in 8 outer iterations at the largest
            // sigma (equality MVU, whose dual optimum is not attained, ends here)
            let n_hist = viol_history.len();
            if !penalty && sigma >= 1e6 && n_hist > 8 && viol > opts.feas_tol && viol > 0.5 * viol_history[n_hist - 9] {
                let y = self.lift(z.view());
                let cert = self.certificate(y.view(), &times_omega(&w))?;
                checked_gaps.push((cert.rel_gap, feasible(&cert)));
                // return the best certified iterate when it beats the current one (a rank growth
                // shortly before can leave the current iterate far from converged)
                let (cert, z) = match best.take() {
                    Some((b, bz)) if b.rel_gap < cert.rel_gap => (b, bz),
                    _ => (cert, z),
                };
                let msg = format!(
                    "stalled: the constraint violation {viol:.2e} has not halved in 8 outer iterations at sigma = {sigma:.0e}; best relative gap {:.2e}",
                    cert.rel_gap
                );
                return Ok(self.finish(z, cert, outer, inner_total, history, false, msg, checked_gaps));
            }
            // certify when the violation is small or has fallen 100x since the last look
            let due = penalty || viol <= opts.feas_tol || viol <= 1e-2 * last_checked_viol;
            if !due {
                continue;
            }
            last_checked_viol = viol;
            let w_abs = times_omega(&w);
            let mut cert = self.certificate(y.view(), &w_abs)?;
            if !penalty {
                let scale_w = w.iter().fold(0.0f64, |a, v| a.max(v.abs()));
                let active: Vec<bool> = match self.constraint {
                    DistanceConstraint::Inequality => w.iter().map(|&v| v > 1e-9 * scale_w).collect(),
                    _ => vec![true; w.len()],
                };
                let refined = self.refine_multipliers(y.view(), &w_abs, &active, 3000);
                let alt = self.certificate(y.view(), &refined)?;
                if alt.rel_gap < cert.rel_gap {
                    cert = alt;
                }
            }
            let cert_feasible = feasible(&cert);
            checked_gaps.push((cert.rel_gap, cert_feasible));
            if cert.rel_gap <= opts.gap_tol && cert_feasible {
                let msg = format!("certified: relative duality gap {:.2e} <= {:.0e} after {outer} outer iterations", cert.rel_gap, opts.gap_tol);
                return Ok(self.finish(z, cert, outer, inner_total, history, true, msg, checked_gaps));
            }
            // every certificate is a valid pair of bounds: keep the best one and its factor
            let halved = best.as_ref().is_none_or(|(b, _)| cert.rel_gap < 0.5 * b.rel_gap);
            if cert_feasible && best.as_ref().is_none_or(|(b, _)| cert.rel_gap < b.rel_gap) {
                best = Some((cert.clone(), z.clone()));
            }
            if cert_feasible && viol <= opts.feas_tol && inner_tol <= 1e-8 {
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
                    return Ok(self.finish(bz, b, outer, inner_total, history, false, msg, checked_gaps));
                }
            }
            if cert.mu < 1.0 - 0.1 * opts.gap_tol && cert.ascent.ncols() > 0 && r < opts.max_rank && viol <= 1e-3 && inner_tol <= 1e-7 {
                // rank too small: add the ascent directions at a small scale
                let add = cert.ascent.ncols().min(opts.max_rank - r);
                let eps = (1e-4 * history.last().copied().unwrap_or(1.0) / m as f64).sqrt();
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
        Ok(self.finish(z, cert, opts.max_outer, inner_total, history, false, msg, checked_gaps))
    }

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
    ) -> SdpSolution {
        let mut y = self.lift(z.view());
        if let DistanceConstraint::Inequality = self.constraint {
            let tr: f64 = y.iter().map(|v| v * v).sum();
            if tr > 0.0 {
                y.mapv_inplace(|v| v * (cert.primal / tr).sqrt());
            }
        }
        SdpSolution { y, certificate: cert, outer, inner, history, certified, termination, checked_gaps }
    }
}

/// The preconditioner of the subproblems: `P = L_c + beta B` applied to every column of the
/// gradient, with the graph Laplacian `L_c` of the edge weights
/// `c_e = 2 max(coef_e, 0) + 4 sigma d_e` (the isotropic part of the Hessian of the
/// augmented-Lagrangian terms: `2 coef_e` from the Lagrangian, `4 sigma ||y_i - y_j||^2` from the
/// Gauss-Newton part, with `||y_i - y_j||^2 ~ d_e`), `B = I` (plain MVU, a sparse Cholesky on
/// the graph's pattern) or `Q^T (L_c) Q + beta Q^T Q` (landmarks, dense m x m). It removes the
/// long-wavelength ill-conditioning (Laplacian eigenvalues ~ 1/diameter^2) that makes plain
/// L-BFGS take thousands of steps.
enum Preconditioner<'s> {
    Sparse(SparseCholesky<'s>),
    Dense(SpdFactor),
}

impl Preconditioner<'_> {
    /// `P^-1 G` for the m x r gradient `g` (row-major), projected onto `c`-perp.
    fn apply(&self, g: &[f64], r: usize, c: &Array1<f64>) -> Vec<f64> {
        let m = g.len() / r;
        let gv = ArrayView2::from_shape((m, r), g).expect("packed gradient");
        let mut out = match self {
            Preconditioner::Sparse(f) => f.solve(gv),
            Preconditioner::Dense(f) => f.solve(gv),
        };
        project_out(&mut out, c);
        out.as_standard_layout().iter().copied().collect()
    }
}

impl<'a> DistanceSdp<'a> {
    fn preconditioner<'s>(
        &self,
        symbolic: &'s Option<SymbolicCholesky>,
        y: ArrayView2<f64>,
        w: &[f64],
        omega: &[f64],
        sigma: f64,
    ) -> Result<Preconditioner<'s>, LinalgError> {
        let r = y.ncols();
        let weights: Vec<f64> = self
            .edges
            .iter()
            .zip(self.d2)
            .zip(w)
            .zip(omega)
            .map(|(((&(i, j), &d), &we), &om)| {
                let len: f64 = (0..r).map(|k| (y[[i, k]] - y[[j, k]]).powi(2)).sum();
                let h = om * (len - d);
                match self.constraint {
                    DistanceConstraint::Equality => 2.0 * om * (we + sigma * h).max(0.0) + 4.0 * sigma * om * om * d.max(len),
                    DistanceConstraint::Inequality => {
                        let t = we + sigma * h;
                        if t > 0.0 {
                            2.0 * om * t + 4.0 * sigma * om * om * d.max(len)
                        } else {
                            sigma * om * om * d
                        }
                    }
                    DistanceConstraint::Penalty(nu) => 4.0 * nu * h.abs() + 8.0 * nu * d.max(len),
                }
            })
            .collect();
        let mean_w = weights.iter().sum::<f64>() / weights.len().max(1) as f64;
        let beta = 1e-6 * mean_w.max(1e-12);
        match (self.q, symbolic) {
            (None, Some(sym)) => {
                let mut diag = vec![beta; self.n];
                for (&(i, j), &we) in self.edges.iter().zip(&weights) {
                    diag[i] += we;
                    diag[j] += we;
                }
                let vals: Vec<f64> = weights.iter().map(|v| -v).collect();
                let f = sym.factor(&diag, &vals).map_err(|e| LinalgError::Shape { what: "mvu preconditioner", detail: e.to_string() })?;
                Ok(Preconditioner::Sparse(f))
            }
            (Some(q), _) => {
                let p = q.t().dot(&self.laplacian_times(&weights, q)) + q.t().dot(&q) * beta.max(1e-9 * mean_w);
                Ok(Preconditioner::Dense(SpdFactor::new(p, "landmark-mvu preconditioner")?))
            }
            (None, None) => unreachable!("plain MVU always has the symbolic analysis"),
        }
    }
}

/// The outcome of [`preconditioned_lbfgs`].
struct InnerResult {
    x: Vec<f64>,
    iterations: usize,
    converged: bool,
}

/// L-BFGS (Nocedal 1980, two-loop recursion) with the initial inverse Hessian `gamma P^-1`
/// (`gamma = s^T y / y^T P^-1 y` of the newest pair) and Armijo backtracking from the unit step;
/// pairs with `s^T y <= 0` are skipped. Stops when `||g||_inf <= tol`, after `max_iter` steps, or
/// when three successive steps change `f` by less than `1e-15 |f|`.
fn preconditioned_lbfgs(
    mut f: impl FnMut(&[f64], &mut [f64]) -> f64,
    mut x: Vec<f64>,
    h0: impl Fn(&[f64]) -> Vec<f64>,
    tol: f64,
    max_iter: usize,
) -> InnerResult {
    let n = x.len();
    let memory = 10;
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(u, v)| u * v).sum::<f64>();
    let mut g = vec![0.0; n];
    let mut fx = f(&x, &mut g);
    let mut pairs: std::collections::VecDeque<(Vec<f64>, Vec<f64>, f64)> = std::collections::VecDeque::new();
    let mut gamma = 1.0;
    let mut stalls = 0;
    let mut xn = vec![0.0; n];
    let mut gn = vec![0.0; n];
    for it in 0..max_iter {
        if g.iter().fold(0.0f64, |a, v| a.max(v.abs())) <= tol {
            return InnerResult { x, iterations: it, converged: true };
        }
        // two-loop recursion
        let mut q = g.clone();
        let mut alphas = Vec::with_capacity(pairs.len());
        for (s, y, rho) in pairs.iter().rev() {
            let a = rho * dot(s, &q);
            q.iter_mut().zip(y).for_each(|(qi, yi)| *qi -= a * yi);
            alphas.push(a);
        }
        let mut d = h0(&q);
        d.iter_mut().for_each(|v| *v *= gamma);
        for ((s, y, rho), a) in pairs.iter().zip(alphas.iter().rev()) {
            let b = rho * dot(y, &d);
            d.iter_mut().zip(s).for_each(|(di, si)| *di += (a - b) * si);
        }
        d.iter_mut().for_each(|v| *v = -*v);
        let mut slope = dot(&g, &d);
        if !(slope < 0.0) {
            pairs.clear();
            d = h0(&g);
            d.iter_mut().for_each(|v| *v = -*v);
            slope = dot(&g, &d);
            if !(slope < 0.0) {
                return InnerResult { x, iterations: it, converged: false };
            }
        }
        let mut t = 1.0;
        let mut accepted = false;
        for _ in 0..40 {
            xn.iter_mut().zip(x.iter().zip(&d)).for_each(|(a, (b, c))| *a = b + t * c);
            let fnew = f(&xn, &mut gn);
            if fnew.is_finite() && fnew <= fx + 1e-4 * t * slope {
                accepted = true;
                let s: Vec<f64> = xn.iter().zip(&x).map(|(a, b)| a - b).collect();
                let yv: Vec<f64> = gn.iter().zip(&g).map(|(a, b)| a - b).collect();
                let sy = dot(&s, &yv);
                if sy > 1e-12 * dot(&s, &s).sqrt() * dot(&yv, &yv).sqrt() {
                    let hy = h0(&yv);
                    gamma = sy / dot(&yv, &hy);
                    pairs.push_back((s, yv, 1.0 / sy));
                    if pairs.len() > memory {
                        pairs.pop_front();
                    }
                }
                if (fx - fnew).abs() <= 1e-15 * fx.abs() {
                    stalls += 1;
                } else {
                    stalls = 0;
                }
                std::mem::swap(&mut x, &mut xn);
                std::mem::swap(&mut g, &mut gn);
                fx = fnew;
                break;
            }
            t *= 0.5;
        }
        // at the precision floor of f (a sum of large cancelling terms) Armijo cannot certify
        // further decrease: that is convergence as far as f can tell
        if !accepted || stalls >= 3 {
            return InnerResult { x, iterations: it + 1, converged: stalls >= 3 || slope.abs() <= 1e-12 * (1.0 + fx.abs()) };
        }
    }
    InnerResult { x, iterations: max_iter, converged: false }
}

/// `z <- z - c (c^T z) / (c^T c)` column by column.
fn project_out(z: &mut Array2<f64>, c: &Array1<f64>) {
    let cc = c.dot(c);
    for mut col in z.columns_mut() {
        let s = c.dot(&col) / cc;
        col.scaled_add(-s, c);
    }
}

/// The Householder vector `v` with `(I - 2 v v^T) c = -sign(c_0) ||c|| e_1`, `||v|| = 1`.
fn householder(c: &Array1<f64>) -> Array1<f64> {
    let mut v = c.clone();
    let nrm = c.dot(c).sqrt();
    v[0] += if c[0] >= 0.0 { nrm } else { -nrm };
    let vn = v.dot(&v).sqrt();
    v / vn
}

/// `H A H` with `H = I - 2 v v^T` in O(m^2).
fn reflect(a: &Array2<f64>, v: &Array1<f64>) -> Array2<f64> {
    let av = a.dot(v);
    let vav = v.dot(&av);
    let m = a.nrows();
    Array2::from_shape_fn((m, m), |(i, j)| a[[i, j]] - 2.0 * v[i] * av[j] - 2.0 * av[i] * v[j] + 4.0 * vav * v[i] * v[j])
}

/// `H X` for the columns of `X`.
fn apply_householder(x: &Array2<f64>, v: &Array1<f64>) -> Array2<f64> {
    let vx = v.dot(x);
    let mut out = x.clone();
    for (mut col, s) in out.columns_mut().into_iter().zip(vx.iter()) {
        col.scaled_add(-2.0 * s, v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Swiss roll (t cos t, 21 v, t sin t), t = 1.5 pi (1 + 2u), and its symmetrised k-NN edges
    /// with squared lengths scaled to mean 1.
    pub(crate) fn swiss_roll_problem(n: usize, k: usize, seed: u64) -> (Array2<f64>, Vec<(usize, usize)>, Vec<f64>) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let x = Array2::from_shape_fn((n, 3), |_| 0.0);
        let mut x = x;
        for i in 0..n {
            let (u, v): (f64, f64) = (rng.gen(), rng.gen());
            let t = 1.5 * std::f64::consts::PI * (1.0 + 2.0 * u);
            x[[i, 0]] = t * t.cos();
            x[[i, 1]] = 21.0 * v;
            x[[i, 2]] = t * t.sin();
        }
        let knn = structdr_numerics::neighbours::knn::knn(x.view(), k).unwrap();
        let e = structdr_numerics::neighbours::knn::symmetrised_edges(&knn);
        let mean = e.iter().map(|e| e.2).sum::<f64>() / e.len() as f64;
        (x / mean.sqrt(), e.iter().map(|e| (e.0, e.1)).collect(), e.iter().map(|e| e.2 / mean).collect())
    }

    #[test]
    fn lagrangian_gradient_matches_central_differences() {
        let (x, edges, d2) = swiss_roll_problem(30, 4, 1);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let w: Vec<f64> = edges.iter().map(|_| rng.gen_range(-1.0..1.0)).collect();
        for constraint in [DistanceConstraint::Equality, DistanceConstraint::Inequality, DistanceConstraint::Penalty(0.7)] {
            let sdp = DistanceSdp { n: 30, q: None, edges: &edges, d2: &d2, constraint };
            let w: Vec<f64> = if constraint == DistanceConstraint::Inequality { w.iter().map(|v| v.abs()).collect() } else { w.clone() };
            let mut z = x.clone();
            let c = sdp.centring_vector();
            project_out(&mut z, &c);
            let p: Vec<f64> = z.iter().copied().collect();
            let omega: Vec<f64> = d2.iter().map(|d| 1.0 / d).collect();
            crate::testing::assert_gradient_matches_central_differences(|p, g| sdp.lagrangian(p, 3, &w, &omega, 2.5, &c, g), &p, 1e-6, 1e-6);
        }
    }
}
