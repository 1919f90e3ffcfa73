//! Spectral embedding steps shared by several methods: kernel PCA on a precomputed kernel (KPCA,
//! and the structure family's KPCA of `(L + lambda I)^-1` or `Q^-1`), and the bottom non-trivial
//! eigenvectors of a graph operator (LE, LLE, MPME's generalised eigenmap).

use crate::{NumericsError, Result};
use ndarray::{s, Array1, Array2, ArrayView2, Axis};
use structdr_linalg::{canonicalize_signs, eigh_bottom, eigh_top};

/// Kernel PCA on a precomputed symmetric kernel matrix `K` (N x N, consumed and centred in place):
/// `Kc = H K H` with `H = I - 1 1^T / N`, top-`dim` eigenpairs `Kc = V Lambda V^T`; returns
/// `(Y, lambda)` with `Y = V_d diag(sqrt(max(lambda_d, 0)))` (N x d) and `lambda_d` descending.
///
/// With the linear kernel `K = X X^T`, `Y` equals the PCA scores up to column signs.
/// Errors: a non-square kernel, `dim` outside `[1, N - 1]`, eigensolver failures.
pub fn kernel_pca(mut kernel: Array2<f64>, dim: usize) -> Result<(Array2<f64>, Array1<f64>)> {
    let n = kernel.nrows();
    if kernel.ncols() != n {
        return Err(NumericsError::input("kernel_pca", format!("kernel is {} x {}, not square", n, kernel.ncols())));
    }
    if dim == 0 || dim >= n {
        return Err(NumericsError::input("kernel_pca", format!("dim = {dim} must be in [1, N - 1] = [1, {}]", n.saturating_sub(1))));
    }
    let row_means = kernel.mean_axis(Axis(1)).expect("n > 0");
    let total = row_means.mean().expect("n > 0");
    for ((i, j), v) in kernel.indexed_iter_mut() {
        *v = *v - row_means[i] - row_means[j] + total;
    }
    let e = eigh_top(kernel.view(), dim)?;
    let scale = e.values.mapv(|l| l.max(0.0).sqrt());
    let y = &e.vectors * &scale.view().insert_axis(Axis(0));
    Ok((y, e.values))
}

/// "Bottom eigenvectors, drop the first": the eigenvectors 2..dim+1 of the symmetric `a`
/// (ascending eigenvalues), each row `i` scaled by `row_scale[i]` when given (a generalised
/// problem `L v = mu D v` solved as `D^{-1/2} L D^{-1/2} u = mu u`, `v = D^{-1/2} u`), signs
/// canonicalised. Returns `(Y, mu_1..mu_{dim+1})` (N x dim; the trivial first pair included in the
/// values).
pub fn bottom_nontrivial(a: ArrayView2<f64>, dim: usize, row_scale: Option<&[f64]>) -> Result<(Array2<f64>, Vec<f64>)> {
    let n = a.nrows();
    if dim + 1 > n {
        return Err(NumericsError::input("bottom_nontrivial", format!("dim = {dim} needs at least dim + 1 = {} samples, got {n}", dim + 1)));
    }
    let e = eigh_bottom(a, dim + 1)?;
    let mut y = e.vectors.slice(s![.., 1..]).to_owned();
    if let Some(scale) = row_scale {
        assert_eq!(scale.len(), n, "bottom_nontrivial: one scale per row");
        for (mut row, &si) in y.rows_mut().into_iter().zip(scale.iter()) {
            row.mapv_inplace(|v| v * si);
        }
    }
    canonicalize_signs(&mut y);
    Ok((y, e.values.to_vec()))
}

/// Standard LLE coordinates (Roweis & Saul 2000), shared by the `lle` method and drtoolbox's
/// 'MVU' (whose basis is an LLE embedding):
/// 1. the k nearest neighbours `N_i` of every sample ([`crate::graphs::neighbourhood_graph`]);
///    when the symmetrised graph is disconnected and `disconnected = Connect`, each joining edge
///    `(a, b)` adds `b` to `N_a` and `a` to `N_b`;
/// 2. barycentric weights `W_{i, N_i}` ([`crate::graphs::barycenter_weights`], regulariser
///    `reg * trace(G_i)`);
/// 3. `M = (I - W)^T (I - W)` (dense N x N) and its eigenvectors 2..dim+1 ([`bottom_nontrivial`]).
///
/// Returns `(Y, mu_1..mu_{dim+1}, graph)`: the N x dim coordinates, the bottom eigenvalues of `M`
/// and the neighbourhood graph (its edges and joins, for the caller's notes).
pub fn lle_coordinates(
    x: ArrayView2<f64>,
    k: usize,
    reg: f64,
    dim: usize,
    disconnected: crate::graphs::Disconnected,
) -> Result<(Array2<f64>, Vec<f64>, crate::graphs::NeighbourGraph)> {
    use rayon::prelude::*;
    let n = x.nrows();
    let g = crate::graphs::neighbourhood_graph(x, k, disconnected)?;
    let mut nbs: Vec<Vec<usize>> = g.knn.indices.rows().into_iter().map(|r| r.to_vec()).collect();
    for &(a, b, _) in &g.joins {
        if !nbs[a].contains(&b) {
            nbs[a].push(b);
        }
        if !nbs[b].contains(&a) {
            nbs[b].push(a);
        }
    }
    let weights: Vec<Array1<f64>> = (0..n).into_par_iter().map(|i| crate::graphs::barycenter_weights(x, i, &nbs[i], reg)).collect::<Result<_>>()?;
    // M = (I - W)^T (I - W) = I - W - W^T + W^T W
    let mut m = Array2::<f64>::eye(n);
    for (i, (nb, w)) in nbs.iter().zip(&weights).enumerate() {
        for (a, &ja) in nb.iter().enumerate() {
            m[[i, ja]] -= w[a];
            m[[ja, i]] -= w[a];
            for (b, &jb) in nb.iter().enumerate() {
                m[[ja, jb]] += w[a] * w[b];
            }
        }
    }
    let (y, values) = bottom_nontrivial(m.view(), dim, None)?;
    Ok((y, values, g))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    /// KPCA of the linear kernel gives the PCA scores (up to sign); the path graph's bottom
    /// non-trivial eigenvector is monotone (the Fiedler vector orders a path).
    #[test]
    fn linear_kernel_gives_pca_scores_and_fiedler_vector_orders_a_path() {
        let x = array![[2.5, 2.4], [0.5, 0.7], [2.2, 2.9], [1.9, 2.2], [3.1, 3.0], [2.3, 2.7]];
        let mean = x.mean_axis(Axis(0)).unwrap();
        let xc = &x - &mean.view().insert_axis(Axis(0));
        let (y, l) = kernel_pca(xc.dot(&xc.t()), 1).unwrap();
        let pca = structdr_linalg::Pca::fit(x.view()).unwrap().transform(x.view(), 1);
        assert!((l[0] - (x.nrows() - 1) as f64 * structdr_linalg::Pca::fit(x.view()).unwrap().variances[0]).abs() < 1e-10);
        let sign = (y[[0, 0]] * pca[[0, 0]]).signum();
        assert!(y.column(0).iter().zip(pca.column(0)).all(|(a, b)| (a - sign * b).abs() < 1e-10));
        let path = crate::graphs::laplacian::from_edges(5, &[(0, 1, 1.0), (1, 2, 1.0), (2, 3, 1.0), (3, 4, 1.0)]);
        let (f, mu) = bottom_nontrivial(path.view(), 1, None).unwrap();
        assert!(mu[0].abs() < 1e-12 && mu[1] > 1e-3);
        let c = f.column(0);
        assert!(c.windows(2).into_iter().all(|w| w[1] > w[0]) || c.windows(2).into_iter().all(|w| w[1] < w[0]));
        assert!(kernel_pca(Array2::zeros((3, 2)), 1).is_err());
        assert!(bottom_nontrivial(path.view(), 5, None).is_err());
    }
}
