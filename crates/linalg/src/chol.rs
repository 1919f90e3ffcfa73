//! Cholesky factorisation `A = L L^T` of a symmetric positive definite matrix (LAPACK `dpotrf`).

use crate::{ensure_finite, ensure_square, LinalgError, Result};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use ndarray_linalg::cholesky::{CholeskyFactorized, FactorizeC, InverseC, SolveC};
use ndarray_linalg::UPLO;

/// A Cholesky factor; use it to solve `A x = b`, to get `log det A` or `A^-1`.
pub struct Cholesky {
    factor: CholeskyFactorized<ndarray::OwnedRepr<f64>>,
    n: usize,
}

impl Cholesky {
    /// Factors the symmetric positive definite `a` (lower triangle read).
    ///
    /// Errors: [`LinalgError::NotPositiveDefinite`] when a leading minor is not positive (singular
    /// or indefinite input), [`LinalgError::NotFinite`] on NaN/Inf.
    pub fn factor(a: ArrayView2<f64>) -> Result<Self> {
        let n = ensure_square(&a, "Cholesky")?;
        ensure_finite(&a, "Cholesky")?;
        let owned = a.to_owned();
        match owned.factorizec(UPLO::Lower) {
            Ok(factor) => Ok(Cholesky { factor, n }),
            Err(ndarray_linalg::error::LinalgError::Lapack(e)) => {
                let minor = match e {
                    lax::error::Error::LapackComputationalFailure { return_code } => return_code.max(0) as usize,
                    _ => 0,
                };
                Err(LinalgError::NotPositiveDefinite { minor, n })
            }
            Err(_) => Err(LinalgError::Lapack { routine: "dpotrf", info: -1 }),
        }
    }

    /// Order of the factored matrix.
    pub fn n(&self) -> usize {
        self.n
    }

    /// `log det A = 2 sum_i log L_ii`.
    pub fn log_det(&self) -> f64 {
        2.0 * self.factor.factor.diag().iter().map(|v| v.ln()).sum::<f64>()
    }

    /// Solves `A x = b`.
    pub fn solve_vec(&self, b: ArrayView1<f64>) -> Result<Array1<f64>> {
        if b.len() != self.n {
            return Err(LinalgError::Shape { what: "Cholesky::solve_vec", detail: format!("rhs has {} rows, matrix {}", b.len(), self.n) });
        }
        self.factor.solvec(&b.to_owned()).map_err(|_| LinalgError::Lapack { routine: "dpotrs", info: -1 })
    }

    /// Solves `A X = B` for every column of `B` (one `dpotrs` call per column block).
    pub fn solve(&self, b: ArrayView2<f64>) -> Result<Array2<f64>> {
        if b.nrows() != self.n {
            return Err(LinalgError::Shape { what: "Cholesky::solve", detail: format!("rhs has {} rows, matrix {}", b.nrows(), self.n) });
        }
        let mut out = Array2::zeros(b.raw_dim());
        for (j, col) in b.columns().into_iter().enumerate() {
            let x = self.solve_vec(col)?;
            out.column_mut(j).assign(&x);
        }
        Ok(out)
    }

    /// `A^-1` (dense; only for small matrices or when every entry is needed).
    pub fn inverse(&self) -> Result<Array2<f64>> {
        self.factor.invc().map_err(|_| LinalgError::Lapack { routine: "dpotri", info: -1 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_abs_diff_eq;
    use ndarray::array;

    #[test]
    fn solve_logdet_inverse_on_a_known_matrix() {
        // A = [[4,2],[2,3]]: det = 8, A^-1 = [[3,-2],[-2,4]]/8.
        let a = array![[4.0, 2.0], [2.0, 3.0]];
        let c = Cholesky::factor(a.view()).unwrap();
        assert_abs_diff_eq!(c.log_det(), 8f64.ln(), epsilon = 1e-14);
        let x = c.solve_vec(array![1.0, 1.0].view()).unwrap();
        assert_abs_diff_eq!(x, array![1.0 / 8.0, 2.0 / 8.0], epsilon = 1e-14);
        assert_abs_diff_eq!(c.inverse().unwrap(), array![[3.0, -2.0], [-2.0, 4.0]] / 8.0, epsilon = 1e-14);
        let xs = c.solve(array![[1.0, 0.0], [1.0, 1.0]].view()).unwrap();
        assert_abs_diff_eq!(a.dot(&xs), array![[1.0, 0.0], [1.0, 1.0]], epsilon = 1e-13);
    }

    #[test]
    fn indefinite_and_singular_matrices_are_errors() {
        let a = array![[1.0, 2.0], [2.0, 1.0]];
        assert!(matches!(Cholesky::factor(a.view()), Err(LinalgError::NotPositiveDefinite { .. })));
        let s = array![[1.0, 1.0], [1.0, 1.0]];
        assert!(Cholesky::factor(s.view()).is_err());
    }
}
