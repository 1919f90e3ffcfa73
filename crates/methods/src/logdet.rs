//! The shared kernel of MPME (002 eq. 13) and ESL (001 eq. 20): `log det(a I + b L(W))` and its
//! gradient with respect to the pair weights of a symmetric graph.
//!
//! Parameterisation: one variable `w_k` per unordered pair `i < j`, stored row-major over the
//! strict upper triangle (`k = i N - i (i + 1) / 2 + j - i - 1`), `W` symmetric with `w_ii = 0`,
//! `L = diag(W 1) - W`. Moving `w_k` moves both `W_ij` and `W_ji`, so
//! `dL / dw_k = A_ij = (e_i - e_j)(e_i - e_j)^T` and, with `Q = a I + b L`,
//!
//! `d/dw_k log det Q = b Tr(Q^-1 A_ij) = b [(Q^-1)_ii + (Q^-1)_jj - 2 (Q^-1)_ij]`.
//!
//! Cost per evaluation: one Cholesky `dpotrf` (N^3/3 flops) for `log det`, one `dpotri`
//! (2N^3/3 flops) for `Q^-1`, and O(N^2) for assembling `Q` and the N(N-1)/2 gradient entries: never
//! a solve per column.

use ndarray::Array2;
use std::os::raw::{c_char, c_int};
use structdr_linalg::LinalgError;

/// Number of pair variables `N (N - 1) / 2`.
pub fn n_pairs(n: usize) -> usize {
    n * n.saturating_sub(1) / 2
}

/// Index of the pair `(i, j)`, `i < j < n`, in the row-major strict upper triangle.
pub fn pair_index(n: usize, i: usize, j: usize) -> usize {
    debug_assert!(i < j && j < n);
    i * n - i * (i + 1) / 2 + (j - i - 1)
}

/// Calls `f(i, j, k)` for every pair `i < j` in storage order (`k = 0, 1, ...`).
pub fn for_each_pair(n: usize, mut f: impl FnMut(usize, usize, usize)) {
    let mut k = 0;
    for i in 0..n {
        for j in (i + 1)..n {
            f(i, j, k);
            k += 1;
        }
    }
}

/// `Q = a I + b L(W)` (N x N, both triangles filled) for pair weights `w` (length N(N-1)/2).
pub fn laplacian_system(n: usize, w: &[f64], a: f64, b: f64) -> Array2<f64> {
    assert_eq!(w.len(), n_pairs(n), "laplacian_system: one weight per pair");
    let mut q = laplacian_upper(n, w, a, b);
    mirror_upper(&mut q);
    q
}

/// Copies the row-major upper triangle of the square `q` into its lower triangle.
fn mirror_upper(q: &mut Array2<f64>) {
    let n = q.nrows();
    let qs = q.as_slice_mut().expect("standard layout");
    for i in 0..n {
        for j in 0..i {
            qs[i * n + j] = qs[j * n + i];
        }
    }
}

/// The row-major upper triangle (diagonal included) of `Q = a I + b L(W)` in an N x N buffer, the
/// other triangle left 0: the part `dpotrf` reads as the column-major lower triangle. Written in
/// storage order (contiguous), unlike the scattered column writes a full symmetric `Q` needs.
fn laplacian_upper(n: usize, w: &[f64], a: f64, b: f64) -> Array2<f64> {
    let mut q = Array2::<f64>::zeros((n, n));
    let qs = q.as_slice_mut().expect("standard layout");
    let mut deg = vec![0.0f64; n];
    let mut k = 0;
    for i in 0..n {
        let row = &mut qs[i * n..(i + 1) * n];
        for j in (i + 1)..n {
            let v = w[k];
            row[j] = -b * v;
            deg[i] += v;
            deg[j] += v;
            k += 1;
        }
    }
    for i in 0..n {
        qs[i * n + i] = a + b * deg[i];
    }
    q
}

/// `log det Q` and `grad[k] = d/dw_k log det Q` for `Q = a I + b L(W)` (module doc); also returns
/// the N x N buffer whose row-major upper triangle holds `Q^-1` (the other triangle is not set).
///
/// In place on that one buffer: `dpotrf` then `dpotri` (LAPACK, column-major `uplo = 'L'`, which is
/// the row-major upper triangle: no transposes or copies); the gradient reads the triangle.
///
/// Errors when `Q` is not numerically positive definite (impossible for `w >= 0`, `a > 0`, `b >= 0`
/// in exact arithmetic; it can happen for negative trial weights) or not finite.
fn log_det_grad_upper(n: usize, w: &[f64], a: f64, b: f64, grad: &mut [f64]) -> Result<(f64, Array2<f64>), LinalgError> {
    assert_eq!(w.len(), n_pairs(n), "log_det_and_grad: one weight per pair");
    assert_eq!(grad.len(), n_pairs(n), "log_det_and_grad: one gradient entry per pair");
    let mut q = laplacian_upper(n, w, a, b);
    let qs = q.as_slice_mut().expect("standard layout");
    // Q is built from w, a and b only: its entries are finite iff these and the degrees are
    if !(a.is_finite() && b.is_finite()) || w.iter().any(|v| !v.is_finite()) || (0..n).any(|i| !qs[i * n + i].is_finite()) {
        return Err(LinalgError::NotFinite { what: "log_det_and_grad" });
    }
    let uplo = b'L' as c_char;
    let nn = n as c_int;
    let mut info: c_int = 0;
    // SAFETY: qs is an n x n contiguous buffer, lda = n.
    unsafe { lapack_sys::dpotrf_(&uplo, &nn, qs.as_mut_ptr(), &nn, &mut info) };
    if info > 0 {
        return Err(LinalgError::NotPositiveDefinite { minor: info as usize, n });
    }
    if info < 0 {
        return Err(LinalgError::Lapack { routine: "dpotrf", info: info as i32 });
    }
    let log_det = 2.0 * (0..n).map(|i| qs[i * n + i].ln()).sum::<f64>();
    unsafe { lapack_sys::dpotri_(&uplo, &nn, qs.as_mut_ptr(), &nn, &mut info) };
    if info != 0 {
        return Err(LinalgError::Lapack { routine: "dpotri", info: info as i32 });
    }
    // column-major lower = row-major upper: qs[i * n + j], j >= i, holds (Q^-1)_ij
    let mut k = 0;
    for i in 0..n {
        let row = &qs[i * n..(i + 1) * n];
        let qii = row[i];
        for j in (i + 1)..n {
            grad[k] = b * (qii + qs[j * n + j] - 2.0 * row[j]);
            k += 1;
        }
    }
    Ok((log_det, q))
}

/// `log det Q` and its gradient `grad[k] = d/dw_k log det Q` for `Q = a I + b L(W)` (module doc),
/// without forming the full `Q^-1`: what an optimiser needs at every evaluation.
pub fn log_det_grad(n: usize, w: &[f64], a: f64, b: f64, grad: &mut [f64]) -> Result<f64, LinalgError> {
    log_det_grad_upper(n, w, a, b, grad).map(|(ld, _)| ld)
}

/// As [`log_det_grad`], and also returns `Q^-1` (both triangles filled) for `Q = a I + b L(W)`.
pub fn log_det_and_grad(n: usize, w: &[f64], a: f64, b: f64, grad: &mut [f64]) -> Result<(f64, Array2<f64>), LinalgError> {
    let (log_det, mut q) = log_det_grad_upper(n, w, a, b, grad)?;
    mirror_upper(&mut q);
    Ok((log_det, q))
}

/// The edges `(i, j, w_ij)` with `w_ij > threshold`, `i < j`, sorted.
pub fn edges_above(n: usize, w: &[f64], threshold: f64) -> Vec<(usize, usize, f64)> {
    let mut e = Vec::new();
    for_each_pair(n, |i, j, k| {
        if w[k] > threshold {
            e.push((i, j, w[k]));
        }
    });
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn pair_index_is_the_storage_order() {
        let n = 7;
        for_each_pair(n, |i, j, k| assert_eq!(pair_index(n, i, j), k));
        assert_eq!(n_pairs(n), 21);
    }

    #[test]
    fn gradient_matches_central_differences() {
        let n = 9;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let w: Vec<f64> = (0..n_pairs(n)).map(|_| rng.gen_range(0.0..2.0)).collect();
        let (a, b) = (0.3, 4.0);
        let mut g = vec![0.0; n_pairs(n)];
        let (ld, qi) = log_det_and_grad(n, &w, a, b, &mut g).unwrap();
        // log det against the eigenvalues, Q^-1 against Q
        let q = laplacian_system(n, &w, a, b);
        let e = structdr_linalg::eigh(q.view()).unwrap();
        assert!((ld - e.values.mapv(f64::ln).sum()).abs() < 1e-10);
        let id = q.dot(&qi);
        assert!((id - Array2::<f64>::eye(n)).mapv(f64::abs).iter().all(|&v| v < 1e-10));
        let h = 1e-6;
        let mut scratch = vec![0.0; n_pairs(n)];
        let mut worst = 0.0f64;
        for k in 0..n_pairs(n) {
            let mut wp = w.clone();
            wp[k] += h;
            let fp = log_det_and_grad(n, &wp, a, b, &mut scratch).unwrap().0;
            wp[k] -= 2.0 * h;
            let fm = log_det_and_grad(n, &wp, a, b, &mut scratch).unwrap().0;
            worst = worst.max(((fp - fm) / (2.0 * h) - g[k]).abs() / g[k].abs().max(1.0));
        }
        assert!(worst < 1e-7, "relative gradient error {worst}");
        // the solver's entry point (no full Q^-1) gives the same numbers, bit for bit
        let mut g2 = vec![0.0; n_pairs(n)];
        assert_eq!(log_det_grad(n, &w, a, b, &mut g2).unwrap(), ld);
        assert_eq!(g2, g);
    }

    #[test]
    fn non_finite_or_indefinite_input_is_an_error() {
        let n = 4;
        let mut g = vec![0.0; n_pairs(n)];
        let mut w = vec![0.5; n_pairs(n)];
        w[2] = f64::NAN;
        assert!(matches!(log_det_grad(n, &w, 1.0, 1.0, &mut g), Err(LinalgError::NotFinite { .. })));
        w[2] = f64::INFINITY;
        assert!(matches!(log_det_grad(n, &w, 1.0, 1.0, &mut g), Err(LinalgError::NotFinite { .. })));
        // negative weights can make Q indefinite
        let w = vec![-1.0; n_pairs(n)];
        assert!(matches!(log_det_grad(n, &w, 0.1, 1.0, &mut g), Err(LinalgError::NotPositiveDefinite { .. })));
    }
}
