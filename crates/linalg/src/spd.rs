//! In-place kernels on dense symmetric positive definite matrices held in row-major buffers,
//! for callers that assemble one triangle straight into the buffer LAPACK factors (no copies,
//! no transposes: a row-major upper triangle is LAPACK's column-major lower one).
//!
//! - [`SpdFactor`]: `M = U^T U` by `dpotrf` on a row-major buffer, solves by `dpotrs` (DDRTree's
//!   `M` of eq. 23-24).
//! - [`log_det_inverse_upper`]: `log det Q = 2 sum log L_ii` by `dpotrf`, then `Q^-1` by `dpotri`,
//!   in place on the row-major upper triangle (the pair-dual kernels of MPME and ESL); its two
//!   halves [`log_det_factor_upper`] and [`inverse_from_factor_upper`] apart, for a line search
//!   that factors trial points and inverts only the accepted one.

use crate::{LinalgError, Result};
use ndarray::{Array2, ArrayView2};
use std::os::raw::{c_char, c_int};

/// A dense SPD matrix factored in place (`dpotrf`, upper triangle of the column-major view).
#[derive(Debug, Clone)]
pub struct SpdFactor {
    buf: Vec<f64>,
    n: usize,
}

impl SpdFactor {
    /// Factors the symmetric positive definite `m` (both triangles must hold `m`); `what` names
    /// the matrix in errors.
    pub fn new(m: Array2<f64>, what: &'static str) -> Result<SpdFactor> {
        let n = crate::ensure_square(&m.view(), what)?;
        // Over the contiguous buffer when there is one (vectorises; the element iterator of a 2-D
        // array does not), which is every call from DDRTree.
        let finite = match m.as_slice_memory_order() {
            Some(v) => v.iter().fold(true, |ok, x| ok & x.is_finite()),
            None => m.iter().all(|x| x.is_finite()),
        };
        if !finite {
            return Err(LinalgError::NotFinite { what });
        }
        // Consume the buffer when it is already row-major (no copy: at K = N = 2000 a copy per
        // DDRTree iteration cost 30% of the fit in page faults); otherwise copy once.
        let m = if m.is_standard_layout() { m } else { m.as_standard_layout().into_owned() };
        let (mut buf, offset) = m.into_raw_vec_and_offset();
        debug_assert!(offset.unwrap_or(0) == 0, "a fresh standard-layout array starts at its buffer");
        let (uplo, nn) = (b'U' as c_char, n as c_int);
        let mut info: c_int = 0;
        // SAFETY: buf holds n*n doubles; a row-major symmetric matrix is its own column-major copy.
        unsafe { lapack_sys::dpotrf_(&uplo, &nn, buf.as_mut_ptr(), &nn, &mut info) };
        if info > 0 {
            return Err(LinalgError::NotPositiveDefinite { minor: info as usize, n });
        }
        if info < 0 {
            return Err(LinalgError::Lapack { routine: "dpotrf", info });
        }
        Ok(SpdFactor { buf, n })
    }

    /// Order n of the factored matrix.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Solves `M X = B` for `B` given as `bt = B^T` (nrhs x n, row-major = n x nrhs column-major),
    /// in place. Panics if `bt` has not n columns or is not in standard layout.
    pub fn solve_t(&self, bt: &mut Array2<f64>) {
        assert_eq!(bt.ncols(), self.n, "SpdFactor::solve_t: right-hand sides need n columns");
        let nrhs = bt.nrows();
        if nrhs == 0 {
            return;
        }
        let (uplo, nn, nr) = (b'U' as c_char, self.n as c_int, nrhs as c_int);
        let mut info: c_int = 0;
        let slice = bt.as_slice_mut().expect("standard layout");
        // SAFETY: factor from dpotrf; rhs buffer n x nrhs column-major with ldb = n.
        unsafe { lapack_sys::dpotrs_(&uplo, &nn, &nr, self.buf.as_ptr(), &nn, slice.as_mut_ptr(), &nn, &mut info) };
        debug_assert_eq!(info, 0);
    }

    /// `M^-1 B` for `B` (n x cols), returned as n x cols.
    pub fn solve(&self, b: ArrayView2<f64>) -> Array2<f64> {
        let mut bt = b.t().as_standard_layout().to_owned();
        self.solve_t(&mut bt);
        bt.reversed_axes().as_standard_layout().to_owned()
    }
}

/// `log det Q`, and `Q^-1` in place: `qs` is an n x n row-major buffer whose upper triangle
/// (diagonal included) holds the SPD matrix `Q` (the other triangle is not read). On return the
/// upper triangle holds `Q^-1`; the strict lower triangle is left as it was.
///
/// `dpotrf` (n^3/3 flops) then `dpotri` (2n^3/3), column-major `uplo = 'L'` on the same buffer:
/// [`log_det_factor_upper`] then [`inverse_from_factor_upper`].
/// Errors: `Q` not numerically positive definite (the leading minor is named), LAPACK failures.
pub fn log_det_inverse_upper(qs: &mut [f64], n: usize) -> Result<f64> {
    let log_det = log_det_factor_upper(qs, n)?;
    inverse_from_factor_upper(qs, n)?;
    Ok(log_det)
}

/// `log det Q = 2 sum_i log R_ii` for `Q = R^T R`, the factor left in place: `qs` is an n x n
/// row-major buffer whose upper triangle holds the SPD `Q` (`dpotrf`, n^3/3 flops, column-major
/// `uplo = 'L'`). What a line search needs at a trial point; [`inverse_from_factor_upper`] then
/// turns an accepted point's factor into `Q^-1` without factoring again.
pub fn log_det_factor_upper(qs: &mut [f64], n: usize) -> Result<f64> {
    assert_eq!(qs.len(), n * n, "log_det_factor_upper: buffer must hold n x n values");
    let uplo = b'L' as c_char;
    let nn = n as c_int;
    let mut info: c_int = 0;
    // SAFETY: qs is an n x n contiguous buffer, lda = n.
    unsafe { lapack_sys::dpotrf_(&uplo, &nn, qs.as_mut_ptr(), &nn, &mut info) };
    if info > 0 {
        return Err(LinalgError::NotPositiveDefinite { minor: info as usize, n });
    }
    if info < 0 {
        return Err(LinalgError::Lapack { routine: "dpotrf", info });
    }
    Ok(2.0 * (0..n).map(|i| qs[i * n + i].ln()).sum::<f64>())
}

/// `Q^-1` in the row-major upper triangle of `qs`, which holds the factor left by
/// [`log_det_factor_upper`] (`dpotri`, 2n^3/3 flops).
pub fn inverse_from_factor_upper(qs: &mut [f64], n: usize) -> Result<()> {
    assert_eq!(qs.len(), n * n, "inverse_from_factor_upper: buffer must hold n x n values");
    let uplo = b'L' as c_char;
    let nn = n as c_int;
    let mut info: c_int = 0;
    // SAFETY: qs is an n x n contiguous buffer holding dpotrf's factor, lda = n.
    unsafe { lapack_sys::dpotri_(&uplo, &nn, qs.as_mut_ptr(), &nn, &mut info) };
    if info != 0 {
        return Err(LinalgError::Lapack { routine: "dpotri", info });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    /// The factor solves and reconstructs; the in-place inverse is the inverse and its log det
    /// equals the dense Cholesky's.
    #[test]
    fn factor_solves_and_in_place_inverse_inverts() {
        let m = array![[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]];
        let f = SpdFactor::new(m.clone(), "m").unwrap();
        let b = array![[1.0, 2.0], [0.0, -1.0], [3.0, 0.5]];
        let x = f.solve(b.view());
        assert!((m.dot(&x) - &b).iter().all(|v| v.abs() < 1e-13));
        let mut buf = m.as_standard_layout().to_owned().into_raw_vec_and_offset().0;
        let ld = log_det_inverse_upper(&mut buf, 3).unwrap();
        let chol = crate::Cholesky::factor(m.view()).unwrap();
        assert!((ld - chol.log_det()).abs() < 1e-13);
        let inv = chol.inverse().unwrap();
        for i in 0..3 {
            for j in i..3 {
                assert!((buf[i * 3 + j] - inv[[i, j]]).abs() < 1e-13);
            }
        }
        let bad = array![[1.0, 2.0], [2.0, 1.0]];
        assert!(matches!(SpdFactor::new(bad, "bad"), Err(LinalgError::NotPositiveDefinite { .. })));
        assert!(matches!(SpdFactor::new(array![[f64::NAN]], "nan"), Err(LinalgError::NotFinite { .. })));
    }
}
