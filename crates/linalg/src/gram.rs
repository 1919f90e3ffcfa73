//! Gram matrices by `dsyrk`: `B^T B` and `B B^T` of a dense matrix, computing one triangle (half
//! the flops of a general product) and mirroring it, so the result is exactly symmetric.

use crate::sparse::blas3::syrk_lower;
use ndarray::{Array2, ArrayView2};

/// `B^T B` (D x D) for `B` N x D: `sum_n b_n b_n^T` over the rows `b_n`.
pub fn gram_of_columns(b: ArrayView2<f64>) -> Array2<f64> {
    let (n, d) = b.dim();
    // row-major B is the column-major D x N matrix A = B^T (leading dimension D): B^T B = A A^T
    syrk(b, b'N', d, n)
}

/// `B B^T` (N x N) for `B` N x D: the inner products of the rows.
pub fn gram_of_rows(b: ArrayView2<f64>) -> Array2<f64> {
    let (n, d) = b.dim();
    // with A = B^T column-major as above, B B^T = A^T A
    syrk(b, b'T', n, d)
}

/// `op(A) op(A)^T` (`size` x `size`, inner dimension `inner`) with `A` the column-major reading
/// of row-major `b`; the lower triangle from `dsyrk`, mirrored.
fn syrk(b: ArrayView2<f64>, trans: u8, size: usize, inner: usize) -> Array2<f64> {
    let b = b.as_standard_layout();
    let lda = b.ncols().max(1);
    let mut c = Array2::<f64>::zeros((size, size));
    if inner > 0 {
        let cs = c.as_slice_mut().expect("fresh array");
        // SAFETY: `b` is contiguous row-major N x D, i.e. column-major D x N with leading
        // dimension D = lda, which is what op(A) of the given trans and shapes reads; `c` is a
        // fresh size x size buffer that overlaps nothing.
        unsafe { syrk_lower(trans, size, inner, 1.0, b.as_ptr(), lda, 0.0, cs.as_mut_ptr(), size.max(1)) };
    }
    // column-major lower = row-major upper: mirror it below the diagonal
    for i in 0..size {
        for j in 0..i {
            c[[i, j]] = c[[j, i]];
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    fn sample(n: usize, d: usize) -> Array2<f64> {
        Array2::from_shape_fn((n, d), |(i, j)| ((i * 7 + j * 13) % 11) as f64 - 5.0 + 0.25 * (i as f64) / (j as f64 + 1.0))
    }

    #[test]
    fn grams_equal_the_general_products() {
        for &(n, d) in &[(1, 1), (7, 3), (3, 7), (40, 25), (0, 4)] {
            let b = sample(n, d);
            let cols = gram_of_columns(b.view());
            let rows = gram_of_rows(b.view());
            let (ec, er) = (b.t().dot(&b), b.dot(&b.t()));
            let scale = 1.0 + ec.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            assert!(cols.iter().zip(ec.iter()).all(|(a, e)| (a - e).abs() <= 1e-13 * scale), "B^T B, {n} x {d}");
            assert!(rows.iter().zip(er.iter()).all(|(a, e)| (a - e).abs() <= 1e-13 * scale), "B B^T, {n} x {d}");
            assert_eq!(cols, cols.t(), "exactly symmetric");
            assert_eq!(rows, rows.t(), "exactly symmetric");
        }
        // a transposed (non-standard) view gives the same as its standard copy
        let b = sample(9, 5);
        assert_eq!(gram_of_columns(b.t()), gram_of_columns(b.t().as_standard_layout().view()));
    }
}
