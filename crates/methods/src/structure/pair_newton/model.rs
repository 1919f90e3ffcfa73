//! The model of [`super::solve_newton`] (module doc there): `M_F = h b^2 (D + E^T S E)` on the
//! free pairs, applied by the Woodbury identity with the N x N system `Kt` solved by conjugate
//! gradients on the list of the free or the held pairs.

use super::super::pair_active::PairDual;
use ndarray::Array2;
use structdr_linalg::SpdFactor;
use structdr_numerics::optim::{dot, sum};

impl PairDual<'_> {
    /// The model `M_F` on the free pairs `free` at `s` (module doc), with `Kt = diag(s)^-1 K
    /// diag(s)^-1` held as its diagonal and the list of its off-diagonal pattern (below). `None`
    /// when no pair is free.
    pub(super) fn model(&self, free: &[bool], s: &[f64]) -> Option<Model> {
        let n = self.n;
        // Kt = unit diagonal + sum over free pairs of (s_i / 2 s_j) e_i e_i^T + 1/2 (e_i e_j^T +
        // e_j e_i^T) + (s_j / 2 s_i) e_j e_j^T: row i's diagonal gathers s_i sum_j 1 / (2 s_j) over
        // its free pairs, and the off-diagonal 1/2 entries are those of the free pairs, listed
        // directly or as the complement of the held ones, whichever list is shorter
        let n_free = free.iter().filter(|&&f| f).count();
        if n_free == 0 {
            return None;
        }
        let list_free = 2 * n_free <= free.len();
        let mut pattern = Vec::with_capacity(if list_free { n_free } else { free.len() - n_free });
        let half_inv: Vec<f64> = s.iter().map(|v| 0.5 / v).collect();
        let mut row_sum = vec![0.0f64; n];
        let mut k = 0;
        for i in 0..n {
            let mut acc = 0.0;
            for j in (i + 1)..n {
                if free[k] {
                    acc += half_inv[j];
                    row_sum[j] += half_inv[i];
                }
                if free[k] == list_free {
                    pattern.push((i as u32, j as u32));
                }
                k += 1;
            }
            row_sum[i] += acc;
        }
        let diag = (0..n).map(|i| 1.0 + s[i] * row_sum[i]).collect();
        let kt = ModelMatrix { diag, pattern, pattern_is_free: list_free };
        Some(Model { kt, s: s.to_vec(), scale: 1.0 / (self.h * self.b * self.b), solves: std::cell::Cell::new(ModelSolves::default()) })
    }
}

/// Relative residual `||Kt x - b|| / ||b||` at which the model's conjugate gradients stop.
/// `Kt` is well conditioned (a unit diagonal plus a diagonally dominant signless-Laplacian-like
/// part; on Table 1's ESL cells 2-17 Jacobi-preconditioned iterations reach 1e-13), so the
/// solve is as accurate as the dense Cholesky it replaced.
pub const MODEL_CG_TOL: f64 = 1e-12;

/// Conjugate-gradient iterations after which the model's solve falls back to a dense Cholesky
/// of `Kt` (assembled for the occasion).
pub const MODEL_CG_MAX_ITER: usize = 200;

/// `Kt` of the model (module doc): `diag + 1/2 A_F`, `A_F` the adjacency of the free pairs,
/// kept as the list `pattern` of the free pairs (`pattern_is_free`) or of the held ones, whose
/// adjacency `A_H` gives `A_F x = (1^T x) 1 - x - A_H x`. A product costs O(N + |pattern|), at
/// most O(P / 2), where the dense `Kt` cost N^3/3 to factor.
pub(super) struct ModelMatrix {
    diag: Vec<f64>,
    pattern: Vec<(u32, u32)>,
    pub(super) pattern_is_free: bool,
}

impl ModelMatrix {
    /// `y = Kt x`, summed in a fixed order.
    pub(super) fn apply(&self, x: &[f64], y: &mut [f64]) {
        if self.pattern_is_free {
            y.iter_mut().zip(x.iter().zip(&self.diag)).for_each(|(yi, (xi, di))| *yi = di * xi);
            for &(i, j) in &self.pattern {
                let (i, j) = (i as usize, j as usize);
                y[i] += 0.5 * x[j];
                y[j] += 0.5 * x[i];
            }
        } else {
            let total = sum(x);
            y.iter_mut().zip(x.iter().zip(&self.diag)).for_each(|(yi, (xi, di))| *yi = di * xi + 0.5 * (total - xi));
            for &(i, j) in &self.pattern {
                let (i, j) = (i as usize, j as usize);
                y[i] -= 0.5 * x[j];
                y[j] -= 0.5 * x[i];
            }
        }
    }

    /// The dense `Kt`, both triangles (the fallback's).
    pub(super) fn dense(&self) -> Array2<f64> {
        let n = self.diag.len();
        // the entries off the pattern: 0 when it lists the free pairs, 1/2 when it lists the held
        let off = if self.pattern_is_free { 0.0 } else { 0.5 };
        let mut kt = Array2::<f64>::from_elem((n, n), off);
        let on = 0.5 - off;
        for &(i, j) in &self.pattern {
            let (i, j) = (i as usize, j as usize);
            kt[[i, j]] = on;
            kt[[j, i]] = on;
        }
        for (i, &d) in self.diag.iter().enumerate() {
            kt[[i, i]] = d;
        }
        kt
    }

    /// `Kt^-1 b` by a dense Cholesky of `Kt` (N^3/3 flops: the fallback of [`Self::solve_cg`]).
    pub(super) fn solve_dense(&self, b: Vec<f64>) -> Result<Vec<f64>, String> {
        let n = b.len();
        let factor = SpdFactor::new(self.dense(), "projected Newton model K").map_err(|e| e.to_string())?;
        let mut y = Array2::from_shape_vec((1, n), b).expect("one row");
        factor.solve_t(&mut y);
        Ok(y.into_raw_vec_and_offset().0)
    }

    /// `Kt^-1 b` by conjugate gradients preconditioned with `diag`, from `b / diag`, to the
    /// relative residual [`MODEL_CG_TOL`]; `None` when [`MODEL_CG_MAX_ITER`] iterations do not
    /// reach it or the curvature `p^T Kt p` is not positive. Returns the iterations too.
    pub(super) fn solve_cg(&self, b: &[f64]) -> Option<(Vec<f64>, usize)> {
        let n = b.len();
        let mut x: Vec<f64> = b.iter().zip(&self.diag).map(|(bi, di)| bi / di).collect();
        let mut r = vec![0.0; n];
        self.apply(&x, &mut r);
        r.iter_mut().zip(b).for_each(|(ri, bi)| *ri = bi - *ri);
        let target = MODEL_CG_TOL * dot(b, b).sqrt();
        let mut z: Vec<f64> = r.iter().zip(&self.diag).map(|(ri, di)| ri / di).collect();
        let mut p = z.clone();
        let mut rz = dot(&r, &z);
        let mut q = vec![0.0; n];
        for it in 0..=MODEL_CG_MAX_ITER {
            if dot(&r, &r).sqrt() <= target {
                return Some((x, it));
            }
            if it == MODEL_CG_MAX_ITER {
                break;
            }
            self.apply(&p, &mut q);
            let pq = dot(&p, &q);
            if !(pq > 0.0) {
                return None;
            }
            let alpha = rz / pq;
            for i in 0..n {
                x[i] += alpha * p[i];
                r[i] -= alpha * q[i];
                z[i] = r[i] / self.diag[i];
            }
            let rz_next = dot(&r, &z);
            let beta = rz_next / rz;
            rz = rz_next;
            p.iter_mut().zip(&z).for_each(|(pi, zi)| *pi = zi + beta * *pi);
        }
        None
    }
}

/// How an iteration's model solves went.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct ModelSolves {
    pub(super) cg_iterations: usize,
    pub(super) dense_fallbacks: usize,
}

/// The model `M_F = h b^2 (D + E^T S E)` of one iteration (module doc).
pub(super) struct Model {
    pub(super) kt: ModelMatrix,
    s: Vec<f64>,
    /// `1 / (h b^2)`.
    scale: f64,
    pub(super) solves: std::cell::Cell<ModelSolves>,
}

impl Model {
    /// `out = M_F^-1 rhs` on the free pairs (0 elsewhere):
    /// `(v - D^-1 E^T K^-1 E v) / (h b^2)`, `v = D^-1 rhs`, `K^-1 = diag(s) Kt^-1 diag(s)`.
    pub(super) fn apply(&self, free: &[bool], rhs: &[f64], out: &mut [f64]) -> Result<(), String> {
        let s = &self.s;
        let n = s.len();
        let half_inv: Vec<f64> = s.iter().map(|v| 0.5 / v).collect();
        let inv: Vec<f64> = s.iter().map(|v| 1.0 / v).collect();
        let mut yv = vec![0.0f64; n];
        let mut k = 0;
        for i in 0..n {
            let mut acc = 0.0;
            for j in (i + 1)..n {
                if free[k] {
                    // v = rhs / (2 s_i s_j)
                    let v = rhs[k] * half_inv[i] * inv[j];
                    acc += v;
                    yv[j] += v;
                }
                k += 1;
            }
            yv[i] += acc;
        }
        let b: Vec<f64> = (0..n).map(|i| s[i] * yv[i]).collect();
        let mut solves = self.solves.get();
        let y = match self.kt.solve_cg(&b) {
            Some((y, iterations)) => {
                solves.cg_iterations += iterations;
                y
            }
            None => {
                solves.dense_fallbacks += 1;
                self.kt.solve_dense(b)?
            }
        };
        self.solves.set(solves);
        let z: Vec<f64> = (0..n).map(|i| s[i] * y[i]).collect();
        let mut k = 0;
        for i in 0..n {
            let ci = self.scale * half_inv[i];
            for j in (i + 1)..n {
                out[k] = if free[k] { ci * inv[j] * (rhs[k] - (z[i] + z[j])) } else { 0.0 };
                k += 1;
            }
        }
        Ok(())
    }
}
