//! Neighbourhood preservation: trustworthiness and continuity (Venna & Kaski 2001) and k-NN
//! preservation, exact, without an N x N matrix.
//!
//! With `N_k^X(i)` the k nearest neighbours of sample i in the data X (i itself excluded),
//! `N_k^Y(i)` those in the embedding Y, `r^X(i, j)` the rank of j among i's neighbours in X
//! (1 = nearest) and `r^Y` likewise in Y:
//!
//! - trustworthiness `T(k) = 1 - 2 / (N k (2N - 3k - 1)) sum_i sum_{j in N^Y(i) \ N^X(i)} (r^X(i, j) - k)`
//!   (penalises embedding neighbours that are far apart in the data; scikit-learn's
//!   `sklearn.manifold.trustworthiness(X, Y, n_neighbors=k)`),
//! - continuity `C(k)`: the same with X and Y swapped (data neighbours torn apart by the embedding),
//! - k-NN preservation `P(k) = (1 / (N k)) sum_i |N^X(i) & N^Y(i)|`.
//!
//! Distances are squared Euclidean by GEMM ([`structdr_linalg::sq_dists_between`]) on blocks of
//! rows of fixed size, so results do not depend on the thread count; equal distances are ordered
//! by index (a stable sort), as sorting by distance alone would leave them to chance. The
//! normaliser needs `k < N / 2` (scikit-learn's condition), so that `T, C` lie in `[0, 1]`.
//!
//! Cost: `O(N^2 (D_X + D_Y))` flops for the distances (BLAS-3) and `O(N^2 log k)` comparisons for
//! the ranks; memory `O(B N)` per rayon worker for a block of B rows.

use ndarray::{s, ArrayView2};
use rayon::prelude::*;
use structdr_linalg::sq_dists_between;

use crate::error::{ensure_finite, ensure_min_samples, ensure_same_len, EvalError, Result};

/// Rows of one block of the distance matrices (two B x N blocks per rayon worker).
const BLOCK_ROWS: usize = 64;

/// The three neighbourhood scores of one embedding for one `k` ([`neighbourhood_preservation`]).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NeighbourhoodScores {
    /// Neighbourhood size.
    pub k: usize,
    /// `T(k)`: how far the embedding's neighbours are in the data (1 = none is a false neighbour).
    pub trustworthiness: f64,
    /// `C(k)`: how far the data's neighbours are in the embedding (1 = none is torn away).
    pub continuity: f64,
    /// `P(k)`: the fraction of k-NN sets the embedding keeps.
    pub knn_preservation: f64,
}

/// Trustworthiness, continuity and k-NN preservation of the embedding `y` of the data `x` (rows are
/// samples; the formulas are in the module documentation).
///
/// Errors: different numbers of rows, fewer than 3 samples, NaN/Inf, a 0-column input, or
/// `k = 0` or `k >= N / 2`.
pub fn neighbourhood_preservation(x: ArrayView2<f64>, y: ArrayView2<f64>, k: usize) -> Result<NeighbourhoodScores> {
    let n = x.nrows();
    ensure_same_len("neighbourhood_preservation", n, y.nrows())?;
    ensure_min_samples("neighbourhood_preservation", n, 3)?;
    ensure_finite("neighbourhood_preservation", x)?;
    ensure_finite("neighbourhood_preservation", y)?;
    if x.ncols() == 0 || y.ncols() == 0 {
        return Err(EvalError::InvalidParameter {
            what: "neighbourhood_preservation",
            detail: "the data or the embedding has 0 columns: nothing to score".into(),
        });
    }
    if k == 0 || 2 * k >= n {
        return Err(EvalError::InvalidParameter {
            what: "neighbourhood_preservation",
            detail: format!("k = {k} neighbours need 1 <= k < N / 2 = {} (N = {n} samples)", n as f64 / 2.0),
        });
    }
    // Each input multiplied by its own power of two (exact; ranks unchanged for ordinary data), so
    // coordinates of 1e300 or 1e-300 neither overflow nor underflow in the distances.
    let (xs, _) = crate::scale::safe_scale(x);
    let (ys, _) = crate::scale::safe_scale(y);
    let (x, y) = (xs.view(), ys.view());
    let starts: Vec<usize> = (0..n).step_by(BLOCK_ROWS).collect();
    // per block: (sum of trustworthiness penalties, continuity penalties, shared neighbours),
    // integers, so the sum is exact and independent of the order blocks finish in
    let parts: Vec<(u64, u64, u64)> = starts
        .par_iter()
        .map(|&b0| {
            let b1 = (b0 + BLOCK_ROWS).min(n);
            // row-major whatever layout the product came in (rows are scanned as slices)
            let dx = sq_dists_between(x.slice(s![b0..b1, ..]), x).as_standard_layout().into_owned();
            let dy = sq_dists_between(y.slice(s![b0..b1, ..]), y).as_standard_layout().into_owned();
            let (mut pen_t, mut pen_c, mut shared) = (0u64, 0u64, 0u64);
            for r in 0..b1 - b0 {
                let i = b0 + r;
                let (rx, ry) = (dx.row(r), dy.row(r));
                let rx = rx.as_slice().expect("owned rows are contiguous");
                let ry = ry.as_slice().expect("owned rows are contiguous");
                let nx = nearest(rx, i, k);
                let ny = nearest(ry, i, k);
                let in_x: Vec<usize> = ny.iter().copied().filter(|j| nx.binary_search(j).is_err()).collect();
                let in_y: Vec<usize> = nx.iter().copied().filter(|j| ny.binary_search(j).is_err()).collect();
                shared += (k - in_x.len()) as u64;
                pen_t += penalty(rx, i, &in_x, k);
                pen_c += penalty(ry, i, &in_y, k);
            }
            (pen_t, pen_c, shared)
        })
        .collect();
    let (pen_t, pen_c, shared) = parts.iter().fold((0u64, 0u64, 0u64), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2));
    let (nf, kf) = (n as f64, k as f64);
    let norm = 2.0 / (nf * kf * (2.0 * nf - 3.0 * kf - 1.0));
    Ok(NeighbourhoodScores {
        k,
        trustworthiness: 1.0 - norm * pen_t as f64,
        continuity: 1.0 - norm * pen_c as f64,
        knn_preservation: shared as f64 / (nf * kf),
    })
}

/// [`neighbourhood_preservation`]'s trustworthiness alone.
pub fn trustworthiness(x: ArrayView2<f64>, y: ArrayView2<f64>, k: usize) -> Result<f64> {
    neighbourhood_preservation(x, y, k).map(|s| s.trustworthiness)
}

/// Whether `(d[a], a)` comes before `(d[b], b)`: by distance, equal distances by index.
#[inline]
fn before(d: &[f64], a: usize, b: usize) -> bool {
    d[a] < d[b] || (d[a] == d[b] && a < b)
}

/// The k nearest samples to `i` by the distances `d` (i excluded, ties by index), as a sorted set.
fn nearest(d: &[f64], i: usize, k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..d.len()).filter(|&j| j != i).collect();
    idx.select_nth_unstable_by(k - 1, |&a, &b| if before(d, a, b) { std::cmp::Ordering::Less } else { std::cmp::Ordering::Greater });
    let mut out = idx[..k].to_vec();
    out.sort_unstable();
    out
}

/// `sum_{j in js} (r(i, j) - k)` with `r(i, j) = 1 + #{l != i : (d[l], l) before (d[j], j)}`: one
/// pass over the row, each sample placed among the sorted `js` by binary search.
fn penalty(d: &[f64], i: usize, js: &[usize], k: usize) -> u64 {
    if js.is_empty() {
        return 0;
    }
    let mut t = js.to_vec();
    t.sort_unstable_by(|&a, &b| if before(d, a, b) { std::cmp::Ordering::Less } else { std::cmp::Ordering::Greater });
    // cnt[p] = samples l with exactly p of the thresholds t_q at or before them
    let mut cnt = vec![0u64; t.len() + 1];
    for l in (0..d.len()).filter(|&l| l != i) {
        let p = t.partition_point(|&q| q == l || before(d, q, l));
        cnt[p] += 1;
    }
    // r(t_q) = 1 + sum_{p < q} cnt[p] (1-based q); t_q itself sits at p = q and is not counted
    let (mut below, mut total) = (0u64, 0u64);
    for c in &cnt[..t.len()] {
        below += c;
        total += 1 + below - k as u64; // r > k: j is not among the k nearest
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    /// Brute force: full sort of every row, ranks from positions.
    fn brute(x: &Array2<f64>, y: &Array2<f64>, k: usize) -> (f64, f64, f64) {
        let n = x.nrows();
        let order = |a: &Array2<f64>, i: usize| {
            let d: Vec<f64> = (0..n).map(|j| a.row(i).iter().zip(a.row(j).iter()).map(|(p, q)| (p - q) * (p - q)).sum()).collect();
            let mut idx: Vec<usize> = (0..n).filter(|&j| j != i).collect();
            idx.sort_by(|&p, &q| d[p].partial_cmp(&d[q]).unwrap().then(p.cmp(&q)));
            idx
        };
        let (mut t, mut c, mut p) = (0.0, 0.0, 0.0);
        for i in 0..n {
            let (ox, oy) = (order(x, i), order(y, i));
            let rank = |o: &[usize], j: usize| o.iter().position(|&l| l == j).unwrap() as f64 + 1.0;
            for &j in &oy[..k] {
                if !ox[..k].contains(&j) {
                    t += rank(&ox, j) - k as f64;
                } else {
                    p += 1.0;
                }
            }
            for &j in &ox[..k] {
                if !oy[..k].contains(&j) {
                    c += rank(&oy, j) - k as f64;
                }
            }
        }
        let (nf, kf) = (n as f64, k as f64);
        let norm = 2.0 / (nf * kf * (2.0 * nf - 3.0 * kf - 1.0));
        (1.0 - norm * t, 1.0 - norm * c, p / (nf * kf))
    }

    #[test]
    fn equals_a_brute_force_sort_with_ties_and_across_blocks() {
        // 150 samples: more than two blocks; integer grids make many equal distances
        let x = Array2::from_shape_fn((150, 3), |(i, j)| ((i * (j + 3) * 7) % 11) as f64);
        let y = Array2::from_shape_fn((150, 2), |(i, j)| ((i * (j + 2) * 5) % 13) as f64 + 0.5 * j as f64);
        for k in [1, 4, 9, 30] {
            let s = neighbourhood_preservation(x.view(), y.view(), k).unwrap();
            let (t, c, p) = brute(&x, &y, k);
            assert!(
                (s.trustworthiness - t).abs() < 1e-12 && (s.continuity - c).abs() < 1e-12 && (s.knn_preservation - p).abs() < 1e-12,
                "{s:?} vs {t} {c} {p}"
            );
        }
    }

    #[test]
    fn an_isometry_scores_one_and_the_scores_swap_with_the_spaces() {
        let x = Array2::from_shape_fn((40, 3), |(i, j)| ((i as f64) * 0.37 + j as f64 * 1.3).sin() * (j + 1) as f64);
        let rotated = Array2::from_shape_fn((40, 3), |(i, j)| x[[i, (j + 1) % 3]] + 5.0);
        let s = neighbourhood_preservation(x.view(), rotated.view(), 5).unwrap();
        assert_eq!((s.trustworthiness, s.continuity, s.knn_preservation), (1.0, 1.0, 1.0));
        let y = x.slice(s![.., ..1]).to_owned();
        let a = neighbourhood_preservation(x.view(), y.view(), 5).unwrap();
        let b = neighbourhood_preservation(y.view(), x.view(), 5).unwrap();
        assert_eq!((a.trustworthiness, a.continuity, a.knn_preservation), (b.continuity, b.trustworthiness, b.knn_preservation));
        assert!(a.trustworthiness < 1.0);
    }

    #[test]
    fn bad_input_is_an_error() {
        let x = Array2::from_shape_fn((10, 2), |(i, j)| (i + j) as f64);
        assert!(neighbourhood_preservation(x.view(), x.view(), 0).is_err());
        assert!(neighbourhood_preservation(x.view(), x.view(), 5).is_err()); // k >= N / 2
        assert!(neighbourhood_preservation(x.view(), x.slice(s![..9, ..]), 2).is_err());
        assert!(neighbourhood_preservation(x.view(), Array2::zeros((10, 0)).view(), 2).is_err());
        let mut bad = x.clone();
        bad[[3, 1]] = f64::NAN;
        assert!(neighbourhood_preservation(x.view(), bad.view(), 2).is_err());
    }
}
