//! Pairwise squared Euclidean distances through one matrix product.

use ndarray::{Array1, Array2, ArrayView2, Axis, Zip};

/// Squared row norms `||x_i||^2`.
pub fn row_sq_norms(x: ArrayView2<f64>) -> Array1<f64> {
    x.map_axis(Axis(1), |r| r.dot(&r))
}

/// `D_ij = ||x_i - y_j||^2 = ||x_i||^2 + ||y_j||^2 - 2 x_i^T y_j` for rows of `x` (N x D) and `y`
/// (M x D): one GEMM, O(N M D) flops at BLAS-3 speed; negatives from cancellation clamp to 0.
pub fn sq_dists_between(x: ArrayView2<f64>, y: ArrayView2<f64>) -> Array2<f64> {
    assert_eq!(x.ncols(), y.ncols(), "sq_dists_between: feature counts differ");
    let nx = row_sq_norms(x);
    let ny = row_sq_norms(y);
    let mut d = x.dot(&y.t());
    // ndarray returns the product column-major when both factors are (a Fortran-ordered x):
    // callers read the result as a row-major slice
    if !d.is_standard_layout() {
        d = d.as_standard_layout().into_owned();
    }
    Zip::indexed(&mut d).for_each(|(i, j), v| {
        *v = (nx[i] + ny[j] - 2.0 * *v).max(0.0);
    });
    d
}

/// Pairwise squared distances of the rows of `x` (N x N, symmetric, exact zero diagonal).
///
/// Uses one SYRK-shaped GEMM; the result is symmetrised so that `D_ij == D_ji` bit for bit.
pub fn sq_dists(x: ArrayView2<f64>) -> Array2<f64> {
    let n = x.nrows();
    let mut d = sq_dists_between(x, x);
    for i in 0..n {
        d[[i, i]] = 0.0;
        for j in (i + 1)..n {
            let v = d[[i, j]];
            d[[j, i]] = v;
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_abs_diff_eq;
    use ndarray::array;

    #[test]
    fn a_fortran_ordered_input_gives_a_row_major_result() {
        let x = array![[0.0, 0.0], [3.0, 4.0], [1.0, 1.0]];
        let f = x.t().as_standard_layout().into_owned().reversed_axes(); // same values, column-major
        assert!(!f.is_standard_layout());
        let (d, df) = (sq_dists(x.view()), sq_dists(f.view()));
        assert!(df.is_standard_layout() && sq_dists_between(f.view(), f.view()).is_standard_layout());
        assert_eq!(d, df);
    }

    #[test]
    fn matches_brute_force() {
        let x = array![[0.0, 0.0], [3.0, 4.0], [1.0, 1.0], [-2.0, 0.5]];
        let d = sq_dists(x.view());
        for i in 0..4 {
            for j in 0..4 {
                let diff = &x.row(i) - &x.row(j);
                assert_abs_diff_eq!(d[[i, j]], diff.dot(&diff), epsilon = 1e-12);
                assert_eq!(d[[i, j]].to_bits(), d[[j, i]].to_bits());
            }
        }
        assert_eq!(d[[1, 0]], 25.0);
    }
}
