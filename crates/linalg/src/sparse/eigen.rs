//! The smallest eigenpairs of a weighted graph Laplacian on the complement of the constant
//! vector, without a dense eigenproblem: [`laplacian_bottom`].
//!
//! `L_w = sum_e w_e (e_i - e_j)(e_i - e_j)^T` always has `L_w 1 = 0`, so its other eigenvectors
//! are orthogonal to `1` and the eigenvalues there are `L_w`'s remaining ones (for `w >= 0`:
//! the algebraic connectivity first, 0 again for every further connected component of the
//! weighted graph). The block Krylov iteration of [`crate::krylov`] runs on
//! `S^{-1} = (L_w + beta I)^{-1}` restricted to `1`-perp (each product is one sparse Cholesky
//! solve on the graph's pattern, 4 nnz(L) flops per column, and a projection); the Ritz values
//! and residuals are taken with `L_w` itself, edge by edge.
//!
//! Where a dense `dsyevr` costs O(n^3) (4435^3 / 3 flops of tridiagonalisation at n = 4435, 7-10 s),
//! this costs a factorisation and a few dozen block solves.

use super::SymbolicCholesky;
use crate::krylov::{block_krylov_bottom, BottomEigenpairs, KrylovOptions, ResidualTest, ShiftInverted};
use crate::{LinalgError, Result};
use ndarray::{Array2, ArrayView2};

/// `L_w` and `(L_w + beta I)^{-1}` on `1`-perp.
struct Laplacian<'a> {
    edges: &'a [(usize, usize)],
    weights: &'a [f64],
    factor: super::SparseCholesky<'a>,
}

/// `L_w V = sum_e w_e (e_i - e_j)(v_i - v_j)^T` for the weighted edges `(i, j)` (rows of `V`
/// are vertices), edge by edge in the edges' order, O(|E| m): the product with a graph Laplacian
/// without forming it.
pub fn laplacian_product(edges: &[(usize, usize)], weights: &[f64], v: ArrayView2<f64>) -> Array2<f64> {
    let m = v.ncols();
    let v = v.as_standard_layout();
    let vs = v.as_slice().expect("standard layout");
    let mut out = Array2::<f64>::zeros(v.raw_dim());
    let os = out.as_slice_mut().expect("fresh array");
    for (&(i, j), &w) in edges.iter().zip(weights) {
        for t in 0..m {
            let d = w * (vs[i * m + t] - vs[j * m + t]);
            os[i * m + t] += d;
            os[j * m + t] -= d;
        }
    }
    out
}

impl ShiftInverted for Laplacian<'_> {
    fn apply(&self, v: ArrayView2<f64>) -> Array2<f64> {
        laplacian_product(self.edges, self.weights, v)
    }

    fn apply_inv(&self, v: ArrayView2<f64>) -> Array2<f64> {
        let mut x = self.factor.solve(v);
        // S 1 = beta 1, so S^{-1} keeps 1-perp; the projection removes the start block's
        // component along 1 and the solves' round-off there
        let n = x.nrows() as f64;
        for mut col in x.columns_mut() {
            let mean = col.sum() / n;
            col.mapv_inplace(|c| c - mean);
        }
        x
    }
}

/// The `k` smallest eigenpairs of the weighted graph Laplacian `L_w` of `edges` and `weights`
/// restricted to the complement of the constant vector (module doc), by block Krylov on
/// `(L_w + shift I)^{-1}`.
///
/// `sym` must be the analysis of exactly `edges` (same pairs, same order) on `n = sym.n()`
/// vertices; `shift > 0` must make `L_w + shift I` positive definite, which holds for every
/// `shift > 0` when `w >= 0`. A smaller shift separates the bottom eigenvalues better
/// (convergence factor `(lambda_k + shift) / (lambda_(p+1) + shift)` per block). `start` (n x j)
/// seeds the block, e.g. the previous eigenvectors or a basis the wanted ones are near.
///
/// The result's residual test is `||L_w y - theta y|| <= opts.tol * (|theta_k| + shift) +
/// 4 eps max_i sum_(e at i) |w_e|` (the round-off of `L_w y`).
///
/// Errors: shapes that do not fit, non-finite weights or shift, `shift <= 0`, `k + 2 > n`, and
/// `L_w + shift I` not positive definite (negative weights).
pub fn laplacian_bottom(
    sym: &SymbolicCholesky,
    edges: &[(usize, usize)],
    weights: &[f64],
    shift: f64,
    k: usize,
    start: Option<ArrayView2<f64>>,
    opts: &KrylovOptions,
) -> Result<BottomEigenpairs> {
    const WHAT: &str = "laplacian_bottom";
    let n = sym.n();
    if edges.len() != weights.len() {
        return Err(LinalgError::Shape { what: WHAT, detail: format!("{} edges, {} weights", edges.len(), weights.len()) });
    }
    if k == 0 || k + 2 > n {
        return Err(LinalgError::Shape {
            what: WHAT,
            detail: format!("asked for {k} (+1) eigenpairs on the {}-dimensional complement of 1", n.saturating_sub(1)),
        });
    }
    if let Some(w) = start {
        if w.nrows() != n {
            return Err(LinalgError::Shape { what: WHAT, detail: format!("start block has {} rows, expected {n}", w.nrows()) });
        }
    }
    if !weights.iter().all(|w| w.is_finite()) || !shift.is_finite() {
        return Err(LinalgError::NotFinite { what: WHAT });
    }
    if shift <= 0.0 {
        return Err(LinalgError::Shape { what: WHAT, detail: format!("shift {shift:e} must be positive") });
    }
    let mut diag = vec![shift; n];
    let mut degree = vec![0.0f64; n];
    for (&(i, j), &w) in edges.iter().zip(weights) {
        if i >= n || j >= n {
            return Err(LinalgError::Shape { what: WHAT, detail: format!("edge ({i}, {j}) outside {n} vertices") });
        }
        diag[i] += w;
        diag[j] += w;
        degree[i] += w.abs();
        degree[j] += w.abs();
    }
    let off: Vec<f64> = weights.iter().map(|w| -w).collect();
    let factor = sym.factor(&diag, &off).map_err(|e| e.into_linalg(WHAT))?;
    let op = Laplacian { edges, weights, factor };
    let max_degree = degree.iter().fold(0.0f64, |a, &b| a.max(b));
    let test = ResidualTest { scale_offset: shift, floor: 4.0 * f64::EPSILON * max_degree };
    block_krylov_bottom(&op, n, k, start, opts, test, WHAT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sparse::Ordering;
    use crate::{eigh_bottom, KrylovOptions};
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// A connected random graph on n vertices: a ring (connectivity) plus `extra` random chords,
    /// weights uniform in [lo, hi).
    fn graph(n: usize, extra: usize, lo: f64, hi: f64, seed: u64) -> (Vec<(usize, usize)>, Vec<f64>) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut set: std::collections::BTreeSet<(usize, usize)> = (0..n).map(|i| (i.min((i + 1) % n), i.max((i + 1) % n))).collect();
        while set.len() < n + extra {
            let (i, j) = (rng.gen_range(0..n), rng.gen_range(0..n));
            if i != j {
                set.insert((i.min(j), i.max(j)));
            }
        }
        let edges: Vec<(usize, usize)> = set.into_iter().collect();
        let w = edges.iter().map(|_| rng.gen_range(lo..hi)).collect();
        (edges, w)
    }

    /// The dense reference: the bottom k + 1 eigenvalues of `L_w + s 1 1^T / n` with `s` above
    /// every eigenvalue of `L_w` (the constant vector moved to the top), as the MVU certificate
    /// computes them densely.
    fn dense_bottom(n: usize, edges: &[(usize, usize)], w: &[f64], k: usize) -> crate::SymmetricEigen {
        let mut a = ndarray::Array2::<f64>::zeros((n, n));
        let mut deg = vec![0.0f64; n];
        for (&(i, j), &we) in edges.iter().zip(w) {
            a[[i, j]] -= we;
            a[[j, i]] -= we;
            a[[i, i]] += we;
            a[[j, j]] += we;
            deg[i] += we.abs();
            deg[j] += we.abs();
        }
        let shift = 2.0 * deg.iter().fold(0.0f64, |x, &y| x.max(y)) + 2.0;
        a.mapv_inplace(|v| v + shift / n as f64);
        eigh_bottom(a.view(), k + 1).unwrap()
    }

    #[test]
    fn bottom_eigenpairs_match_dense_on_random_weighted_graphs() {
        for (t, &(n, extra, lo, hi, k, shift)) in
            [(200, 400, 0.1, 1.0, 8, 1e-2), (400, 1200, 0.5, 2.0, 8, 1e-2), (300, 300, 1e-3, 10.0, 4, 1.0), (500, 2500, 0.1, 1.0, 12, 1e-3)].iter().enumerate()
        {
            let (edges, w) = graph(n, extra, lo, hi, 7 + t as u64);
            let sym = SymbolicCholesky::analyze(n, &edges, Ordering::Auto).unwrap();
            let it = laplacian_bottom(&sym, &edges, &w, shift, k, None, &KrylovOptions::default()).unwrap();
            let ex = dense_bottom(n, &edges, &w, k);
            assert!(it.converged, "case {t}: residual {:e}", it.residual);
            let top = ex.values[k];
            for j in 0..k {
                assert!((ex.values[j] - it.values[j]).abs() <= 1e-10 * top, "case {t} value {j}: {} vs {}", ex.values[j], it.values[j]);
                let v = it.vectors.column(j);
                assert!(v.sum().abs() <= 1e-10 * (n as f64).sqrt(), "case {t}: eigenvector {j} not orthogonal to 1");
                let lv = laplacian_product(&edges, &w, v.insert_axis(ndarray::Axis(1))).column(0).to_owned();
                let res = &lv - &(&v * it.values[j]);
                assert!(res.dot(&res).sqrt() <= 1e-9 * top, "case {t} residual {j}");
            }
            let wtw = it.vectors.t().dot(&it.vectors);
            assert!((wtw - ndarray::Array2::<f64>::eye(k)).iter().all(|v| v.abs() < 1e-12), "case {t}: not orthonormal");
            eprintln!("case {t}: n = {n}, restarts {}, residual {:.1e}, bottom {:.6e} (dense {:.6e})", it.restarts, it.residual, it.values[0], ex.values[0]);
        }
    }

    #[test]
    fn a_cluster_of_equal_eigenvalues_is_resolved_when_the_block_holds_it() {
        // the cycle C_n: eigenvalues 2 - 2 cos(2 pi m / n), each double; with 8 wanted and a
        // block of 8 + 10 the cut falls between two pairs and the values are exact
        let n = 240;
        let edges: Vec<(usize, usize)> = (0..n).map(|i| (i.min((i + 1) % n), i.max((i + 1) % n))).collect();
        let w = vec![1.0; n];
        let sym = SymbolicCholesky::analyze(n, &edges, Ordering::Auto).unwrap();
        let opts = KrylovOptions { extra: 10, ..KrylovOptions::default() };
        let it = laplacian_bottom(&sym, &edges, &w, 1e-3, 8, None, &opts).unwrap();
        assert!(it.converged);
        for j in 0..8 {
            let m = (j / 2 + 1) as f64;
            let exact = 2.0 - 2.0 * (2.0 * std::f64::consts::PI * m / n as f64).cos();
            assert!((it.values[j] - exact).abs() <= 1e-12, "value {j}: {} vs {exact}", it.values[j]);
        }
    }

    #[test]
    fn components_of_zero_weight_give_zero_eigenvalues() {
        // three blocks of a ring joined by zero-weight edges: L_w has a null space of dimension
        // 3, so two zero eigenvalues remain on 1-perp (a dense certificate sees the same)
        let (edges, mut w) = graph(150, 300, 0.5, 1.5, 3);
        let block = |i: usize| i / 50;
        for (e, &(i, j)) in edges.iter().enumerate() {
            if block(i) != block(j) {
                w[e] = 0.0;
            }
        }
        let sym = SymbolicCholesky::analyze(150, &edges, Ordering::Auto).unwrap();
        let it = laplacian_bottom(&sym, &edges, &w, 1e-2, 4, None, &KrylovOptions::default()).unwrap();
        let ex = dense_bottom(150, &edges, &w, 4);
        assert!(it.values[0].abs() < 1e-12 && it.values[1].abs() < 1e-12, "{:?}", it.values);
        assert!(it.values[2] > 1e-3);
        for j in 0..4 {
            assert!((it.values[j] - ex.values[j]).abs() <= 1e-10 * ex.values[4]);
        }
    }

    #[test]
    fn a_warm_start_converges_sooner_and_bad_input_is_an_error() {
        let (edges, w) = graph(400, 1600, 0.2, 1.0, 11);
        let sym = SymbolicCholesky::analyze(400, &edges, Ordering::Auto).unwrap();
        let opts = KrylovOptions::default();
        let cold = laplacian_bottom(&sym, &edges, &w, 1e-2, 6, None, &opts).unwrap();
        let w2: Vec<f64> = w.iter().enumerate().map(|(e, v)| v * (1.0 + 1e-3 * ((e % 7) as f64 - 3.0))).collect();
        let warm = laplacian_bottom(&sym, &edges, &w2, 1e-2, 6, Some(cold.vectors.view()), &opts).unwrap();
        assert!(warm.converged && warm.restarts <= cold.restarts, "warm {} cold {}", warm.restarts, cold.restarts);
        // a negative weight large enough to make L_w + shift I indefinite
        let mut bad = w.clone();
        bad[0] = -1e3;
        assert!(matches!(laplacian_bottom(&sym, &edges, &bad, 1e-2, 6, None, &opts), Err(LinalgError::NotPositiveDefinite { .. })));
        bad[0] = f64::NAN;
        assert!(matches!(laplacian_bottom(&sym, &edges, &bad, 1e-2, 6, None, &opts), Err(LinalgError::NotFinite { .. })));
        assert!(laplacian_bottom(&sym, &edges, &w, 0.0, 6, None, &opts).is_err());
        assert!(laplacian_bottom(&sym, &edges, &w[1..], 1e-2, 6, None, &opts).is_err());
        assert!(laplacian_bottom(&sym, &edges, &w, 1e-2, 399, None, &opts).is_err());
    }

    #[test]
    fn bit_identical_across_rayon_pools() {
        let (edges, w) = graph(300, 900, 0.1, 1.0, 5);
        let sym = SymbolicCholesky::analyze(300, &edges, Ordering::Auto).unwrap();
        let run = |t: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .unwrap()
                .install(|| laplacian_bottom(&sym, &edges, &w, 1e-2, 5, None, &KrylovOptions::default()).unwrap())
        };
        let (a, b) = (run(1), run(3));
        assert_eq!(a.values, b.values);
        assert_eq!(a.vectors, b.vectors);
    }
}
