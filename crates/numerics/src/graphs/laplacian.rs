//! The graph Laplacian, assembled once for every method: `L = D - W` with `D = diag(W 1)`.
//!
//! Two entry points cover the methods' inputs: an edge list on `n` vertices ([`from_edges`],
//! [`normalized_from_edges`]) and a dense, possibly non-symmetric weight matrix, symmetrised as
//! `(W + W^T) / 2` ([`of_dense`]). The structure family's packed pair layout (one weight per pair
//! `i < j`, millions of variables) has its own assembly beside its log-det kernel
//! (`structdr_methods::structure::pair_dual`), because it writes straight into the buffer LAPACK
//! factors.

use ndarray::{Array2, ArrayView2, Axis};

/// Weighted degrees `d_i = sum_j w_ij` of the undirected graph with `edges` `(i, j, w)` (each
/// edge listed once).
pub fn degrees(n: usize, edges: &[(usize, usize, f64)]) -> Vec<f64> {
    let mut deg = vec![0.0f64; n];
    for &(i, j, w) in edges {
        deg[i] += w;
        deg[j] += w;
    }
    deg
}

/// Dense symmetric adjacency `W` (n x n) of the undirected graph with `edges` (each listed once;
/// repeated edges add up).
pub fn adjacency(n: usize, edges: &[(usize, usize, f64)]) -> Array2<f64> {
    let mut a = Array2::<f64>::zeros((n, n));
    for &(i, j, w) in edges {
        a[[i, j]] += w;
        a[[j, i]] += w;
    }
    a
}

/// `L = D - W` (n x n) of the undirected graph with `edges`.
pub fn from_edges(n: usize, edges: &[(usize, usize, f64)]) -> Array2<f64> {
    let mut l = adjacency(n, edges);
    l.mapv_inplace(|v| -v);
    for (i, d) in degrees(n, edges).into_iter().enumerate() {
        l[[i, i]] += d;
    }
    l
}

/// The normalised Laplacian `I - D^{-1/2} W D^{-1/2}` of the symmetric weights `w` (consumed,
/// zero diagonal), with the degrees shifted, `D = diag(shift + W 1)` (`shift = lambda` gives
/// MPME's `D_lambda` of 002 eq. 16, `shift = 0` the plain normalised Laplacian), and
/// `s = D^{-1/2}` for mapping generalised eigenvectors back (`L v = mu D v` has `v = D^{-1/2} u`).
///
/// Degrees are summed along each row in ascending column order, starting at `shift`.
/// Err(i): vertex i has a degree that is not positive and finite.
pub fn normalized(mut w: Array2<f64>, shift: f64) -> Result<(Array2<f64>, Vec<f64>), usize> {
    let deg: Vec<f64> = w.rows().into_iter().map(|r| r.iter().fold(shift, |acc, &v| acc + v)).collect();
    if let Some(i) = deg.iter().position(|&d| !(d >= f64::MIN_POSITIVE && d.is_finite())) {
        return Err(i);
    }
    let s: Vec<f64> = deg.iter().map(|d| 1.0 / d.sqrt()).collect();
    for ((i, j), v) in w.indexed_iter_mut() {
        *v = if i == j { 1.0 - s[i] * *v * s[j] } else { -s[i] * *v * s[j] };
    }
    Ok((w, s))
}

/// [`normalized`] of the undirected graph with `edges` (each listed once), no degree shift.
pub fn normalized_from_edges(n: usize, edges: &[(usize, usize, f64)]) -> Result<(Array2<f64>, Vec<f64>), usize> {
    normalized(adjacency(n, edges), 0.0)
}

/// `L_W = D - (W + W^T)/2` with `D_ii = sum_j (w_ij + w_ji)/2` (001 Prop. 4). The diagonal of W
/// cancels.
pub fn of_dense(w: ArrayView2<f64>) -> Array2<f64> {
    let n = w.nrows();
    let mut l = Array2::zeros((n, n));
    let rs = w.sum_axis(Axis(1));
    let cs = w.sum_axis(Axis(0));
    for i in 0..n {
        for j in 0..n {
            l[[i, j]] = -0.5 * (w[[i, j]] + w[[j, i]]);
        }
        l[[i, i]] = 0.5 * (rs[i] + cs[i]) - w[[i, i]];
    }
    l
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    /// Rows of a Laplacian sum to 0; the edge-list and dense forms agree; the normalised form has
    /// unit diagonal on a graph without self-loops.
    #[test]
    fn edge_list_and_dense_forms_agree() {
        let edges = vec![(0, 1, 2.0), (1, 2, 0.5), (0, 3, 1.5), (2, 3, 1.0)];
        let l = from_edges(4, &edges);
        for r in l.rows() {
            assert!(r.sum().abs() < 1e-15);
        }
        let w = adjacency(4, &edges);
        assert_eq!(of_dense(w.view()), l);
        assert_eq!(degrees(4, &edges), vec![3.5, 2.5, 1.5, 2.5]);
        let (nl, s) = normalized_from_edges(4, &edges).unwrap();
        for i in 0..4 {
            assert!((nl[[i, i]] - 1.0).abs() < 1e-15);
            assert!((s[i] * s[i] * degrees(4, &edges)[i] - 1.0).abs() < 1e-15);
        }
        // a non-symmetric W is symmetrised
        let w = array![[0.0, 2.0], [0.0, 0.0]];
        assert_eq!(of_dense(w.view()), array![[1.0, -1.0], [-1.0, 1.0]]);
        assert_eq!(normalized_from_edges(3, &[(0, 1, 1.0)]).unwrap_err(), 2);
    }
}
