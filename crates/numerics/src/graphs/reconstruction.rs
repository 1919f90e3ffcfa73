//! Barycentric reconstruction weights (LLE's first step; landmark MVU's reconstruction map).

use crate::{NumericsError, Result};
use ndarray::{Array1, Array2, ArrayView2};
use structdr_linalg::Cholesky;

/// Barycentric reconstruction weights of `x_i` from its neighbours `nb`:
/// `(G + r I) w = 1`, `G = Z Z^T`, `Z = X[nb] - 1 x_i^T`, `r = reg * trace(G)` (or `reg` when the
/// trace is 0), normalised to `1^T w = 1` (Roweis & Saul 2000; scikit-learn's `barycenter_weights`).
///
/// Errors: a singular local Gram matrix (k > D with `reg = 0`) or weights whose sum is 0 or not
/// finite, both as [`NumericsError::Input`] naming the sample.
pub fn barycenter_weights(x: ArrayView2<f64>, i: usize, nb: &[usize], reg: f64) -> Result<Array1<f64>> {
    let m = nb.len();
    let d = x.ncols();
    let mut z = Array2::<f64>::zeros((m, d));
    for (r, &j) in nb.iter().enumerate() {
        for f in 0..d {
            z[[r, f]] = x[[j, f]] - x[[i, f]];
        }
    }
    let mut g = z.dot(&z.t());
    let tr = g.diag().sum();
    let r = if tr > 0.0 { reg * tr } else { reg };
    for a in 0..m {
        g[[a, a]] += r;
    }
    let chol = Cholesky::factor(g.view()).map_err(|e| NumericsError::Input {
        what: "barycenter_weights",
        reason: format!("the local Gram matrix of sample {i} is singular ({e}); with k > D it needs reg > 0"),
    })?;
    let w = chol.solve_vec(Array1::ones(m).view()).map_err(NumericsError::Linalg)?;
    let s = w.sum();
    if !(s.is_finite() && s != 0.0) {
        return Err(NumericsError::Input {
            what: "barycenter_weights",
            reason: format!("reconstruction weights of sample {i} do not sum to a finite non-zero value; raise reg"),
        });
    }
    Ok(w / s)
}
