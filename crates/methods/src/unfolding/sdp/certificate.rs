//! The dual certificate: the multipliers scaled into the dual feasible set by the smallest
//! eigenvalue of the pencil `(Q^T L_w Q, Q^T Q)` on `c`-perp, the bounds and relative gap this
//! gives, the directions of ascent when the rank is too small, and the least-squares refinement
//! of the multipliers that tightens the bound.
//!
//! Two eigensolvers give `mu`: the dense `dsyevr` (O(m^3); the certificate a solve reports), and
//! for plain MVU with `w >= 0` a screening one, [`structdr_linalg::sparse::laplacian_bottom`]
//! (block Krylov on the sparse Cholesky of `L_w + beta I`, started from the factor `Y`, whose
//! columns are near the eigenvalue-1 eigenspace at the optimum). A screened certificate decides
//! what the outer loop does next; before a solve reports one it is recomputed densely
//! ([`DistanceSdp::confirmed`]), so a reported bound never rests on the iterative eigensolver.

use super::problem::{DistanceConstraint, DistanceSdp};
use ndarray::{s, Array1, Array2, ArrayView2};
use structdr_linalg::sparse::{laplacian_bottom, SymbolicCholesky};
use structdr_linalg::{eigh, eigh_bottom, KrylovOptions, LinalgError};
use structdr_numerics::graphs::laplacian;

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
    /// The multipliers `w` (absolute form) the bound was computed from.
    pub multipliers: Vec<f64>,
    /// Whether `mu` came from the dense eigensolver (false: the screening one).
    pub exact: bool,
}

/// Shift `beta` of the screening eigensolver's `L_w + beta I`: the wanted eigenvalues are near 1
/// (the dual is normalised so that `mu = 1` at the optimum), so 1e-2 separates them from the
/// next ones well and keeps the factor far from singular.
pub const SCREEN_SHIFT: f64 = 1e-2;

/// Relative residual of the screening eigenpairs. Near the optimum the bottom eigenvalues form a
/// cluster at 1 about 1e-7 wide (one per column of `Y`), inside which a residual of `tol` bounds
/// the error of `mu` by about `tol`; 1e-9 is 1e-4 of the gap targets the solver is asked for
/// (1e-5, 1e-6), and tighter ones stall at the solves' round-off (satimage, k = 5: residuals of
/// 1e-11 to 1e-7 after 40 restarts, while `mu` already agreed with the dense one to 1e-12).
pub const SCREEN_TOL: f64 = 1e-9;

/// Restarts of the screening iteration before the check falls back to the dense eigensolver.
pub const SCREEN_RESTARTS: usize = 20;

impl<'a> DistanceSdp<'a> {
    /// The dual bound of the module doc for the multipliers `w` and the factor `y`, with the
    /// dense eigensolver.
    pub fn certificate(&self, y: ArrayView2<f64>, w: &[f64]) -> Result<Certificate, LinalgError> {
        let (mu, vectors, values) = self.smallest_pencil_eigenvalues(w)?;
        Ok(self.bound(y, w, mu, vectors, values, true))
    }

    /// [`Self::certificate`] with the screening eigensolver (module doc) when it applies: plain MVU
    /// (`symbolic` is the analysis of the edges), `w >= 0`, and the iteration converged; the dense
    /// one otherwise.
    pub(super) fn screened_certificate(&self, y: ArrayView2<f64>, w: &[f64], symbolic: Option<&SymbolicCholesky>) -> Result<Certificate, LinalgError> {
        let want = 8.min(self.m().saturating_sub(2));
        if let (None, Some(sym), true) = (self.q, symbolic, want > 0 && w.iter().all(|&v| v >= 0.0)) {
            // a block of r + 8 + 8 columns holds the cluster of eigenvalues near 1 that Y spans
            // at the optimum, so the cut after the 8 wanted ones does not fall inside it
            let opts =
                KrylovOptions { tol: SCREEN_TOL, extra: y.ncols() + 8, max_restarts: SCREEN_RESTARTS, must_converge: Some(1), ..KrylovOptions::default() };
            if let Ok(e) = laplacian_bottom(sym, self.edges, w, SCREEN_SHIFT, want, Some(y), &opts) {
                if e.converged {
                    let values = e.values.to_vec();
                    return Ok(self.bound(y, w, values[0], e.vectors, values, false));
                }
            }
        }
        self.certificate(y, w)
    }

    /// `cert` itself when it is exact, else the dense certificate of the same `y` and multipliers.
    pub(super) fn confirmed(&self, y: ArrayView2<f64>, cert: Certificate) -> Result<Certificate, LinalgError> {
        if cert.exact {
            Ok(cert)
        } else {
            self.certificate(y, &cert.multipliers)
        }
    }

    /// The bounds of the module doc from `mu` and the bottom eigenpairs of the pencil.
    fn bound(&self, y: ArrayView2<f64>, w: &[f64], mu: f64, vectors: Array2<f64>, values: Vec<f64>, exact: bool) -> Certificate {
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
        Certificate { mu, primal, dual, rel_gap, residual, weights: w.iter().map(|v| v * t).collect(), ascent, multipliers: w.to_vec(), exact }
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
