//! Subspace-constrained mean shift (SCMS; Ozertem & Erdogmus, *Locally defined principal curves
//! and surfaces*, JMLR 12, 2011, Algorithm 1 with the Gaussian KDE), the principal-curve
//! baseline of 004 §6.2 (Table 1's "SCMS sigma", Fig. 5's fourth column).
//!
//! The density is the Gaussian kernel density estimate
//! `p(x) = (1/N) sum_i exp(-||x - x_i||^2 / (2 sigma^2))` (up to its constant). With the weights
//! `w_i = exp(-||x - x_i||^2 / (2 sigma^2)) / sum_j exp(...)`, the weighted mean `mu(x) = sum_i w_i x_i`
//! and the weighted local covariance `S(x) = sum_i w_i (x_i - mu)(x_i - mu)^T`, the gradient and
//! Hessian of `p` give the local inverse covariance of the paper,
//!
//! `Sigma^-1(x) = -H(x) / p(x) + g(x) g(x)^T / p(x)^2 = (I - S(x) / sigma^2) / sigma^2`
//!
//! (the negative Hessian of `log p`), and the mean-shift vector `m(x) = mu(x) - x = sigma^2 g(x) / p(x)`.
//! With `V_perp` the eigenvectors of the `D - d` largest eigenvalues of `Sigma^-1(x)` (those of
//! the `D - d` smallest of `S(x)`: the directions across the ridge), every point, started at a
//! sample, moves by the projected mean shift
//!
//! `x <- x + V_perp V_perp^T m(x)`
//!
//! until `||V_perp^T m(x)|| <= tol sigma`: at the limit the gradient of the density has no
//! component in the local normal space (the subspace condition that defines a d-dimensional
//! ridge). Points move independently (the samples stay the KDE's data), so each stops on its own
//! and the fit is deterministic whatever the thread count.
//!
//! Cost: O(N D (D + 1)) per point and step (every sample's weight, the covariance; one D x D
//! eigendecomposition), O(N^2 D^2) per sweep over all points, as in the paper; 004's sets
//! (N <= 300, D = 2) take milliseconds. No N x N matrix is stored (memory O(N D)).
//!
//! Output: a principal graph whose centres are the N ridge points (the "principal points" of 004
//! Fig. 5; SCMS has no edges: "it is still not trivial to transform a set of principal points to
//! an explicit structure", 004 §1), and every sample's projection is its own ridge point.

use crate::api::declare::{self, declare_params, Declared};
use crate::api::info::{float_in, int, positive, MethodInfo};
use crate::api::params::open;
use crate::api::{check_input, Embedder, FitInput, Fitted, MethodError, Output, OutputKind, ParamMap, PrincipalGraph, Result, StopReason, Trace};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use rayon::prelude::*;
use structdr_linalg::eigh;
use structdr_numerics::dist::exact_sq_dist;

const METHOD: &str = "scms";

declare_params! {
    /// Subspace-constrained mean shift with a Gaussian KDE (see the module doc).
    #[derive(Debug, Clone)]
    pub struct Scms {
        /// Kernel bandwidth `sigma > 0`.
        pub sigma: f64 = positive("sigma", 0.1, "Gaussian KDE bandwidth sigma > 0: kernel exp(-||x - x_i||^2 / (2 sigma^2)) (004 Table 1, column 'SCMS sigma')"),
        /// Dimension d of the ridge (1: principal curves).
        pub ridge_dim: usize = int("ridge_dim", 1, 1, "dimension d of the ridge, 1 <= d < D (1: principal curves); points move in the D - d directions across it"),
        /// Maximum number of steps per point.
        pub max_iter: usize = int("max_iter", 1, 2000, "maximum number of SCMS steps per point"),
        /// A point stops when `||V_perp^T m(x)|| <= tol sigma`.
        pub tol: f64 = float_in("tol", open(0.0), open(f64::INFINITY), 1e-6, "a point stops when its projected mean shift ||V_perp^T m(x)|| <= tol sigma (the subspace condition)"),
    }
}

/// One point's SCMS quantities at `x`: the mean-shift vector `m(x)` and the normal-space basis
/// `V_perp` (D x (D - d), columns orthonormal).
pub fn scms_step(data: ArrayView2<f64>, x: ArrayView1<f64>, sigma: f64, ridge_dim: usize) -> Result<(Array1<f64>, Array2<f64>)> {
    let dd = data.ncols();
    // weights with the smallest squared distance subtracted (no underflow of every weight)
    let d2: Vec<f64> = data.rows().into_iter().map(|r| exact_sq_dist(r, x)).collect();
    let dmin = d2.iter().fold(f64::INFINITY, |m, &v| m.min(v));
    let w: Vec<f64> = d2.iter().map(|&v| (-(v - dmin) / (2.0 * sigma * sigma)).exp()).collect();
    let total: f64 = w.iter().sum();
    let mut mu = Array1::<f64>::zeros(dd);
    for (r, &wi) in data.rows().into_iter().zip(&w) {
        mu.scaled_add(wi / total, &r);
    }
    let mut s = Array2::<f64>::zeros((dd, dd));
    for (i, r) in data.rows().into_iter().enumerate() {
        let wi = w[i] / total;
        for a in 0..dd {
            let da = r[a] - mu[a];
            for b in 0..=a {
                s[[a, b]] += wi * da * (r[b] - mu[b]);
            }
        }
    }
    for a in 0..dd {
        for b in 0..a {
            s[[b, a]] = s[[a, b]];
        }
    }
    let e = eigh(s.view()).map_err(crate::api::numerical(METHOD))?;
    // eigenvalues ascending: the first D - d columns span the directions of least local spread
    let v_perp = e.vectors.slice(ndarray::s![.., ..dd - ridge_dim]).to_owned();
    Ok((&mu - &x, v_perp))
}

/// The outcome of one point's iteration.
struct PointRun {
    y: Array1<f64>,
    steps: usize,
    residual: f64,
}

impl Scms {
    fn run_point(&self, data: ArrayView2<f64>, start: ArrayView1<f64>) -> Result<PointRun> {
        let mut y = start.to_owned();
        let mut steps = 0;
        loop {
            let (m, v) = scms_step(data, y.view(), self.sigma, self.ridge_dim)?;
            let coef = v.t().dot(&m);
            // the residual of the point about to be returned, whichever way the loop ends
            let residual = coef.dot(&coef).sqrt() / self.sigma;
            if residual <= self.tol || steps == self.max_iter {
                return Ok(PointRun { y, steps, residual });
            }
            y += &v.dot(&coef);
            steps += 1;
        }
    }
}

impl Embedder for Scms {
    fn name(&self) -> &'static str {
        METHOD
    }
    fn info(&self) -> MethodInfo {
        info()
    }
    fn params(&self) -> ParamMap {
        self.to_params()
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        let x = input.x;
        check_input(METHOD, &x, 2)?;
        let (n, dd) = x.dim();
        if self.ridge_dim >= dd {
            return Err(MethodError::Input {
                method: METHOD,
                reason: format!(
                    "ridge_dim = {} must be below the data dimension D = {dd} (points move in the D - d directions across the ridge)",
                    self.ridge_dim
                ),
            });
        }
        let xs = x.as_standard_layout();
        let runs: Vec<Result<PointRun>> = (0..n).into_par_iter().map(|i| self.run_point(xs.view(), xs.row(i))).collect();
        let runs: Vec<PointRun> = runs.into_iter().collect::<Result<_>>()?;
        let mut points = Array2::<f64>::zeros((n, dd));
        for (i, r) in runs.iter().enumerate() {
            points.row_mut(i).assign(&r.y);
        }
        let worst = runs.iter().map(|r| r.residual).fold(0.0f64, f64::max);
        let unconverged = runs.iter().filter(|r| r.residual > self.tol).count();
        let max_steps = runs.iter().map(|r| r.steps).max().unwrap_or(0);
        let total_steps: usize = runs.iter().map(|r| r.steps).sum();
        let stop = if unconverged == 0 {
            StopReason::Converged { residual: Some(worst), tol: Some(self.tol) }
        } else {
            StopReason::IterationLimit { max_iter: self.max_iter, residual: Some(worst), tol: Some(self.tol) }
        };
        // history: the largest projected mean shift over the points (in units of sigma), the
        // quantity the stopping rule compares
        let graph = PrincipalGraph { centres: points.clone(), edges: Vec::new(), projection: points };
        let mut fitted = Fitted::new(Output::PrincipalGraph(graph), Trace::iterative(vec![worst], max_steps, stop, ""));
        fitted.notes.push(format!(
            "SCMS (Gaussian KDE, sigma = {}, ridge dimension {}): {total_steps} steps over {n} points (at most {max_steps} for one point); largest ||V_perp^T m(x)|| / sigma at the returned points {worst:.3e} (tol {:e}); {unconverged} point(s) stopped at max_iter",
            self.sigma, self.ridge_dim, self.tol
        ));
        Ok(fitted)
    }
}

/// The registry entry.
pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: METHOD,
        summary: "Subspace-constrained mean shift (Gaussian KDE): every sample moves by the mean shift projected on the D - d directions of least local spread until ||V_perp^T m(x)|| <= tol sigma; centres = the ridge points (no edges).",
        reference: "Ozertem & Erdogmus, Locally defined principal curves and surfaces, JMLR 12 (2011), Algorithm 1; 004 §6.2, Table 1",
        version: 1,
        output: OutputKind::PrincipalGraph,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: false,
        params: Scms::schema(()),
        build: |p| declare::build::<Scms>(METHOD, (), p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Gradient and Hessian of the (unnormalised) KDE `p(x) = sum_i exp(-||x - x_i||^2 / (2 s^2))`
    /// straight from their definitions (not through the weighted covariance).
    fn grad_hess(data: &Array2<f64>, x: ArrayView1<f64>, s: f64) -> (f64, Array1<f64>, Array2<f64>) {
        let dd = data.ncols();
        let (mut p, mut g, mut h) = (0.0, Array1::zeros(dd), Array2::zeros((dd, dd)));
        for r in data.rows() {
            let diff = &r - &x; // x_i - x
            let c = (-diff.dot(&diff) / (2.0 * s * s)).exp();
            p += c;
            g.scaled_add(c / (s * s), &diff);
            for a in 0..dd {
                for b in 0..dd {
                    h[[a, b]] += c / (s * s) * (diff[a] * diff[b] / (s * s) - if a == b { 1.0 } else { 0.0 });
                }
            }
        }
        (p, g, h)
    }

    /// n points at angles 2 pi i / n on the unit circle, radii 1 + uniform noise in [-noise, noise].
    fn noisy_circle(n: usize, noise: f64, seed: u64) -> Array2<f64> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut x = Array2::zeros((n, 2));
        for i in 0..n {
            let t = 2.0 * std::f64::consts::PI * i as f64 / n as f64;
            let r = 1.0 + noise * rng.gen_range(-1.0..1.0);
            x[[i, 0]] = r * t.cos();
            x[[i, 1]] = r * t.sin();
        }
        x
    }

    /// At every returned point the density's gradient has no component across the ridge:
    /// `V_perp^T g = 0` with `V_perp` from the eigenvectors of `Sigma^-1 = -H / p + g g^T / p^2`
    /// computed from the definitions, to the stopping tolerance (`||V_perp^T m|| = sigma^2 ||V_perp^T g|| / p`).
    #[test]
    fn fixed_points_satisfy_the_subspace_condition() {
        let x = noisy_circle(120, 0.05, 1);
        let m = Scms { sigma: 0.2, tol: 1e-8, ..Scms::default() };
        let f = m.fit(x.view(), 0).unwrap();
        assert!(f.trace.converged(), "{:?}", f.trace.stop);
        let Output::PrincipalGraph(g) = f.output else { panic!("a principal graph") };
        for y in g.centres.rows() {
            let (p, grad, hess) = grad_hess(&x, y, m.sigma);
            let inv_cov = -&hess / p + &(grad.view().insert_axis(ndarray::Axis(1)).dot(&grad.view().insert_axis(ndarray::Axis(0)))) / (p * p);
            let e = eigh(inv_cov.view()).unwrap();
            // the largest eigenvalue's vector (D - d = 1) is the normal direction
            let normal = e.vectors.column(1);
            let across = normal.dot(&grad) * m.sigma * m.sigma / p;
            assert!(across.abs() <= 2e-8 * m.sigma, "projected mean shift {across:e}");
            // and the gradient along the ridge need not vanish: it is not a mode search
        }
        // the same quantity through the weighted covariance (the implementation's route)
        let (mvec, v) = scms_step(x.view(), g.centres.row(0), m.sigma, 1).unwrap();
        assert!(v.t().dot(&mvec).iter().all(|c| c.abs() <= 2e-8 * m.sigma));
    }

    /// A noisy circle of radius 1: the ridge points lie on a circle within the noise (the KDE
    /// ridge of a circle sits slightly inside it, by about sigma^2 / 2).
    #[test]
    fn ridge_points_lie_on_a_known_curve() {
        let x = noisy_circle(200, 0.05, 2);
        let f = Scms { sigma: 0.1, ..Scms::default() }.fit(x.view(), 0).unwrap();
        let Output::PrincipalGraph(g) = f.output else { panic!("a principal graph") };
        let dev = |y: &Array2<f64>| -> (f64, f64) {
            let d: Vec<f64> = y.rows().into_iter().map(|r| (r.dot(&r).sqrt() - 1.0).abs()).collect();
            (d.iter().sum::<f64>() / d.len() as f64, d.iter().fold(0.0f64, |m, &v| m.max(v)))
        };
        let (mean_in, max_in) = dev(&x);
        let (mean_out, max_out) = dev(&g.centres);
        // within the noise band, and much closer to the curve than the samples on average
        assert!(max_out < 0.05, "ridge points within {max_out} of the unit circle (samples: {max_in})");
        assert!(mean_out < mean_in / 2.0, "mean distance to the circle: ridge {mean_out}, samples {mean_in}");
        assert!(g.edges.is_empty());
    }

    #[test]
    fn ridge_dim_must_be_below_the_data_dimension() {
        let x = noisy_circle(20, 0.05, 3);
        let err = Scms { ridge_dim: 2, ..Scms::default() }.fit(x.view(), 0).unwrap_err();
        assert!(err.to_string().contains("ridge_dim = 2"), "{err}");
    }
}
