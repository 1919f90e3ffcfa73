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
/// 3. `M = (I - W)^T (I - W)` (dense N x N) and its eigenvectors 2..dim+1, the constant
///    eigenvector `M 1 = 0` left out ([`bottom_without_constant`]).
///
/// Returns `(Y, mu_1..mu_{dim+2}, graph)`: the N x dim coordinates, the bottom eigenvalues of `M`
/// (one past those used, to show the gap that determines `Y`) and the neighbourhood graph (its
/// edges and joins, for the caller's notes). Errors with [`NumericsError::Degenerate`] when the
/// data do not determine `Y` ([`bottom_without_constant`]).
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
    let (y, values) = bottom_without_constant(m.view(), dim)?;
    Ok((y, values, g))
}

/// The `dim`-dimensional bottom eigenspace of a symmetric `a` with `a 1 = 0` (LLE's `M`), the
/// constant vector left out, as an N x dim orthonormal basis (signs canonicalised), and the
/// eigenvalues `mu_1..mu_{dim+2}` (ascending; fewer when N is smaller).
///
/// "Eigenvectors 2..dim+1" is well defined only when 0 is a simple eigenvalue. Eigenvalues within
/// `tau = sqrt(N) eps ||a||_F` of each other count as tied: the eigensolver's error is of order
/// `eps ||a||` (LAPACK's bound), and an exactly repeated eigenvalue of Table 1's LLE matrices comes
/// out spread over about that much (letter, k = 10: 17 eigenvalues within 2e-13, `eps ||M||_F`
/// = 3.4e-13, `tau` = 2.4e-11); a gap that small would turn the subspace by over 1% anyway
/// (Davis-Kahan: error / gap).
/// - `mu_2 - mu_1 > tau`: exactly the eigenvectors 2..dim+1, as before;
/// - otherwise the null space has more than the constant vector (duplicates, weakly coupled
///   groups), and the eigensolver's "first" vector is an arbitrary one of it. The constant vector
///   is projected out of the eigenspace of `mu_1..mu_{dim+1}` instead, and the basis is the
///   Rayleigh-Ritz one of `a` on what remains. Distances between the rows depend only on that
///   subspace, which is unique when `mu_{dim+2} - mu_{dim+1} > tau`;
/// - when that gap is tied too, no dim-dimensional subspace is singled out by the data: a
///   [`NumericsError::Degenerate`] error.
pub fn bottom_without_constant(a: ArrayView2<f64>, dim: usize) -> Result<(Array2<f64>, Vec<f64>)> {
    let n = a.nrows();
    if dim + 1 > n {
        return Err(NumericsError::input("bottom_without_constant", format!("dim = {dim} needs at least dim + 1 = {} samples, got {n}", dim + 1)));
    }
    let want = (dim + 2).min(n);
    let e = eigh_bottom(a, want)?;
    let values = e.values.to_vec();
    let frobenius = a.iter().map(|v| v * v).sum::<f64>().sqrt();
    let tau = (n as f64).sqrt() * f64::EPSILON * frobenius;
    if values[1] - values[0] > tau {
        let mut y = e.vectors.slice(s![.., 1..dim + 1]).to_owned();
        canonicalize_signs(&mut y);
        return Ok((y, values));
    }
    if want == dim + 2 && values[dim + 1] - values[dim] <= tau {
        let tied = values.iter().filter(|&&v| v - values[0] <= tau).count();
        return Err(NumericsError::Degenerate {
            what: "bottom_without_constant",
            reason: format!(
                "{tied} or more eigenvalues of the N x N matrix lie within {tau:.1e} (sqrt(N) eps ||M||_F) of the smallest, and eigenvalue {} ({:.3e}) is tied with eigenvalue {} ({:.3e}): no {dim}-dimensional bottom subspace is singled out (duplicate samples or groups the neighbourhoods do not couple); mu_1..mu_{}: {values:?}",
                dim + 1,
                values[dim],
                dim + 2,
                values[dim + 1],
                want
            ),
        });
    }
    // the constant vector out of span(v_1..v_{dim+1}), an orthonormal basis of the rest from the
    // Gram matrix of the projected columns (its smallest eigenvalue ~ 0 is the constant direction)
    let v = e.vectors.slice(s![.., ..dim + 1]);
    let sums = v.sum_axis(Axis(0)) / n as f64;
    let projected = &v - &sums.view().insert_axis(Axis(0));
    let gram = projected.t().dot(&projected);
    let ge = eigh_top(gram.view(), dim)?;
    let mut basis = projected.dot(&ge.vectors);
    for (mut col, &g) in basis.columns_mut().into_iter().zip(ge.values.iter()) {
        col.mapv_inplace(|x| x / g.sqrt());
    }
    // Rayleigh-Ritz: order the basis by the Rayleigh quotients of `a`
    let reduced = basis.t().dot(&a.dot(&basis));
    let reduced = (&reduced + &reduced.t()) * 0.5;
    let re = eigh_bottom(reduced.view(), dim)?;
    let mut y = basis.dot(&re.vectors);
    canonicalize_signs(&mut y);
    Ok((y, values))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    /// Laplacian of disjoint paths of the given lengths (each a component).
    fn paths(lengths: &[usize]) -> Array2<f64> {
        let n: usize = lengths.iter().sum();
        let mut edges = Vec::new();
        let mut start = 0;
        for &len in lengths {
            for i in start..start + len - 1 {
                edges.push((i, i + 1, 1.0));
            }
            start += len;
        }
        crate::graphs::laplacian::from_edges(n, &edges)
    }

    /// With a simple zero eigenvalue the answer is exactly "eigenvectors 2..dim+1"; with a null
    /// space of two components it is the subspace orthogonal to 1 of the bottom dim + 1
    /// eigenspace, whatever basis of the null space the eigensolver returns; with three
    /// components and dim = 1 no subspace is singled out.
    #[test]
    fn bottom_without_constant_leaves_out_the_constant_vector_or_says_the_data_do_not_decide() {
        let one = paths(&[7]);
        let (y, mu) = bottom_without_constant(one.view(), 2).unwrap();
        let (y_ref, _) = bottom_nontrivial(one.view(), 2, None).unwrap();
        assert_eq!(y, y_ref);
        assert_eq!(mu.len(), 4);
        // two paths (lengths 4 and 6): null space = span(1_A, 1_B); dim = 2 keeps the component
        // contrast and the Fiedler vector of the longer path (its eigenvalue 2 - 2 cos(pi / 6) is
        // below the shorter path's 2 - 2 cos(pi / 4))
        let two = paths(&[4, 6]);
        let (y, mu) = bottom_without_constant(two.view(), 2).unwrap();
        assert!(mu[1] - mu[0] < 1e-12, "{mu:?}");
        let n = 10;
        assert!(y.sum_axis(Axis(0)).iter().all(|s| s.abs() < 1e-10), "orthogonal to 1");
        let gram = y.t().dot(&y);
        assert!((&gram - &Array2::<f64>::eye(2)).iter().all(|v| v.abs() < 1e-10));
        let mut want = Array2::<f64>::zeros((n, 2));
        for i in 0..n {
            want[[i, 0]] = if i < 4 { 1.0 / 4.0 } else { -1.0 / 6.0 };
        }
        for j in 0..6 {
            want[[4 + j, 1]] = (std::f64::consts::PI * (j as f64 + 0.5) / 6.0).cos();
        }
        for mut c in want.columns_mut() {
            let norm = c.dot(&c).sqrt();
            c.mapv_inplace(|v| v / norm);
        }
        let (p, p_want) = (y.dot(&y.t()), want.dot(&want.t()));
        assert!((&p - &p_want).iter().all(|v| v.abs() < 1e-9), "the projector onto the answer");
        // three components, dim = 1: the 2-dimensional bottom eigenspace is tied with the third
        match bottom_without_constant(paths(&[3, 4, 5]).view(), 1) {
            Err(NumericsError::Degenerate { reason, .. }) => assert!(reason.contains("eigenvalue 2") && reason.contains("eigenvalue 3"), "{reason}"),
            other => panic!("expected Degenerate, got {other:?}"),
        }
    }

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
