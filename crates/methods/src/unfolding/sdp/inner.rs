//! The inner solver: the augmented-Lagrangian subproblem over `Z` of each outer iteration (its
//! value and gradient, the graph-Laplacian preconditioner of its Hessian) and the preconditioned
//! L-BFGS that minimises it.

use super::problem::{project_out, project_out_view, DistanceConstraint, DistanceSdp};
use ndarray::{Array1, ArrayView2, ArrayViewMut2};
use structdr_linalg::sparse::{SparseCholesky, SymbolicCholesky};
use structdr_linalg::{LinalgError, SpdFactor};
use structdr_numerics::optim::dot;

/// The preconditioner of the subproblems: `P = L_c + beta B` applied to every column of the
/// gradient, with the graph Laplacian `L_c` of the edge weights
/// `c_e = 2 max(coef_e, 0) + 4 sigma d_e` (the isotropic part of the Hessian of the
/// augmented-Lagrangian terms: `2 coef_e` from the Lagrangian, `4 sigma ||y_i - y_j||^2` from the
/// Gauss-Newton part, with `||y_i - y_j||^2 ~ d_e`), `B = I` (plain MVU, a sparse Cholesky on
/// the graph's pattern) or `Q^T (L_c) Q + beta Q^T Q` (landmarks, dense m x m). It removes the
/// long-wavelength ill-conditioning (Laplacian eigenvalues ~ 1/diameter^2) that makes plain
/// L-BFGS take thousands of steps.
pub(super) enum Preconditioner<'s> {
    Sparse(SparseCholesky<'s>),
    Dense(SpdFactor),
}

impl Preconditioner<'_> {
    /// `out = P^-1 G` for the m x r gradient `g` (row-major), projected onto `c`-perp.
    pub(super) fn apply(&self, g: &[f64], r: usize, c: &Array1<f64>, out_buf: &mut [f64]) {
        let m = g.len() / r;
        let gv = ArrayView2::from_shape((m, r), g).expect("packed gradient");
        let mut out = match self {
            Preconditioner::Sparse(f) => f.solve(gv),
            Preconditioner::Dense(f) => f.solve(gv),
        };
        project_out(&mut out, c);
        match out.as_slice() {
            Some(o) => out_buf.copy_from_slice(o),
            None => out_buf.iter_mut().zip(out.iter()).for_each(|(a, b)| *a = *b),
        }
    }
}

impl<'a> DistanceSdp<'a> {
    /// The augmented Lagrangian (or the MVU2 objective) at `z` (m x r, row-major in `zs`) and its
    /// gradient with respect to `Z`, projected onto `c`-perp.
    pub(super) fn lagrangian(&self, zs: &[f64], r: usize, w: &[f64], omega: &[f64], sigma: f64, c: &Array1<f64>, grad: &mut [f64]) -> f64 {
        let m = self.m();
        match self.q {
            // plain MVU: Y = Z, and the gradient is written in place
            None => {
                let f = self.lagrangian_in_y(zs, r, w, omega, sigma, grad);
                project_out_view(ArrayViewMut2::from_shape((m, r), grad).expect("packed gradient"), c);
                f
            }
            Some(q) => {
                let z = ArrayView2::from_shape((m, r), zs).expect("packed Z");
                let y = q.dot(&z);
                let mut gy = vec![0.0; y.len()];
                let f = self.lagrangian_in_y(y.as_slice().expect("standard layout"), r, w, omega, sigma, &mut gy);
                let gy = ArrayView2::from_shape((self.n, r), &gy).expect("packed gradient");
                let mut gz = q.t().dot(&gy);
                project_out(&mut gz, c);
                grad.copy_from_slice(gz.as_slice().expect("standard layout"));
                f
            }
        }
    }

    /// The augmented Lagrangian at `Y` (N x r, row-major `ys`) and its gradient with respect to
    /// `Y` into `gys`: `-||Y||^2` plus the edge terms of the module doc.
    fn lagrangian_in_y(&self, ys: &[f64], r: usize, w: &[f64], omega: &[f64], sigma: f64, gys: &mut [f64]) -> f64 {
        gys.iter_mut().zip(ys).for_each(|(g, y)| *g = -2.0 * y);
        // a sequential sum, as in version 5: with the eight-lane sum here the degenerate reference
        // case of tests/mvu.rs stalled from the unperturbed start (docs/parity/mvu.md, version 6)
        let mut f = -ys.iter().map(|v| v * v).sum::<f64>();
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
        f
    }

    pub(super) fn preconditioner<'s>(
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
pub(super) struct InnerResult {
    pub(super) x: Vec<f64>,
    pub(super) iterations: usize,
    pub(super) converged: bool,
}

/// L-BFGS (Nocedal 1980, two-loop recursion) with the initial inverse Hessian `gamma P^-1`
/// (`gamma = s^T y / y^T P^-1 y` of the newest pair) and Armijo backtracking from the unit step;
/// pairs with `s^T y <= 0` are skipped. Stops when `||g||_inf <= tol`, after `max_iter` steps, or
/// when three successive steps change `f` by less than `1e-15 |f|`. `h0(v, out)` writes
/// `P^-1 v` into `out`, and runs once per accepted step, on the new gradient: `P^-1` is linear, so
/// the two-loop's middle step `P^-1 q = P^-1 g - sum_i a_i P^-1 y_i` and the scaling's
/// `P^-1 y = P^-1 g_new - P^-1 g_old` come from stored products (version 5 solved twice per step,
/// for `q` and for `y`: the same iterates in exact arithmetic). Dot products are optim's
/// eight-lane [`dot`] (vectorised, in a fixed order: the same bits on every machine and thread
/// count; the sequential sums of version 5 were bound by the latency of one add per element,
/// 12-20% of an iteration). Every vector lives in a buffer allocated once (the stored pairs
/// recycle the oldest pair's).
pub(super) fn preconditioned_lbfgs(
    mut f: impl FnMut(&[f64], &mut [f64]) -> f64,
    mut x: Vec<f64>,
    h0: impl Fn(&[f64], &mut [f64]),
    tol: f64,
    max_iter: usize,
) -> InnerResult {
    let n = x.len();
    let memory = 10;
    let mut g = vec![0.0; n];
    let mut fx = f(&x, &mut g);
    // P^-1 g of the current iterate: the one preconditioner solve per accepted step
    let mut pg = vec![0.0; n];
    h0(&g, &mut pg);
    // (s, y, P^-1 y, 1 / s^T y), oldest first
    let mut pairs: std::collections::VecDeque<(Vec<f64>, Vec<f64>, Vec<f64>, f64)> = std::collections::VecDeque::with_capacity(memory + 1);
    let mut gamma = 1.0;
    let mut stalls = 0;
    let mut xn = vec![0.0; n];
    let mut gn = vec![0.0; n];
    let mut pgn = vec![0.0; n];
    let mut q = vec![0.0; n];
    let mut d = vec![0.0; n];
    let (mut s_new, mut y_new, mut hy_new) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    let mut alphas = Vec::with_capacity(memory);
    for it in 0..max_iter {
        if g.iter().fold(0.0f64, |a, v| a.max(v.abs())) <= tol {
            return InnerResult { x, iterations: it, converged: true };
        }
        // two-loop recursion; the map P^-1 is linear, so the middle step's P^-1 q is
        // P^-1 g - sum_i a_i P^-1 y_i from the stored products, without a solve
        q.copy_from_slice(&g);
        d.copy_from_slice(&pg);
        alphas.clear();
        for (s, y, hy, rho) in pairs.iter().rev() {
            let a = rho * dot(s, &q);
            q.iter_mut().zip(y).for_each(|(qi, yi)| *qi -= a * yi);
            d.iter_mut().zip(hy).for_each(|(di, hi)| *di -= a * hi);
            alphas.push(a);
        }
        d.iter_mut().for_each(|v| *v *= gamma);
        for ((s, y, _, rho), a) in pairs.iter().zip(alphas.iter().rev()) {
            let b = rho * dot(y, &d);
            d.iter_mut().zip(s).for_each(|(di, si)| *di += (a - b) * si);
        }
        d.iter_mut().for_each(|v| *v = -*v);
        let mut slope = dot(&g, &d);
        if !(slope < 0.0) {
            pairs.clear();
            d.iter_mut().zip(&pg).for_each(|(di, p)| *di = -p);
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
                h0(&gn, &mut pgn);
                s_new.iter_mut().zip(xn.iter().zip(&x)).for_each(|(si, (a, b))| *si = a - b);
                y_new.iter_mut().zip(gn.iter().zip(&g)).for_each(|(yi, (a, b))| *yi = a - b);
                hy_new.iter_mut().zip(pgn.iter().zip(&pg)).for_each(|(hi, (a, b))| *hi = a - b);
                let sy = dot(&s_new, &y_new);
                if sy > 1e-12 * dot(&s_new, &s_new).sqrt() * dot(&y_new, &y_new).sqrt() {
                    gamma = sy / dot(&y_new, &hy_new);
                    // the pair displaces the oldest one and takes over its storage
                    let (s_free, y_free, hy_free) = if pairs.len() == memory {
                        let (s, y, hy, _) = pairs.pop_front().expect("memory > 0");
                        (s, y, hy)
                    } else {
                        (vec![0.0; n], vec![0.0; n], vec![0.0; n])
                    };
                    let s = std::mem::replace(&mut s_new, s_free);
                    let y = std::mem::replace(&mut y_new, y_free);
                    let hy = std::mem::replace(&mut hy_new, hy_free);
                    pairs.push_back((s, y, hy, 1.0 / sy));
                }
                if (fx - fnew).abs() <= 1e-15 * fx.abs() {
                    stalls += 1;
                } else {
                    stalls = 0;
                }
                std::mem::swap(&mut x, &mut xn);
                std::mem::swap(&mut g, &mut gn);
                std::mem::swap(&mut pg, &mut pgn);
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
