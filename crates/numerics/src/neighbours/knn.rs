//! Exact K-NN search. Squared distances `||x_i - x_j||^2 = ||x_i||^2 + ||x_j||^2 - 2 x_i^T x_j`
//! come from one GEMM per block of rows ([`structdr_linalg::sq_dists_between`] on the
//! column-centred data, which limits cancellation), never an N x N matrix; every candidate within
//! the GEMM rounding-error bound of the k-th smallest is then re-scored with the exact
//! `sum_f (x_if - x_jf)^2`, so duplicate points are at distance exactly 0 and ties are decided
//! exactly. Self is excluded, ties go to the lowest index.
//!
//! Deterministic: work is split into row blocks whose size depends on N only, and rayon's ordered
//! collects put the results back in block order.

use crate::dist::exact_sq_dist;
use crate::{check_samples, NumericsError, Result};
use ndarray::{s, Array2, ArrayView2, Axis};
use rayon::prelude::*;
use structdr_linalg::sq_dists_between;

/// The exact K nearest neighbours of every sample (self excluded).
#[derive(Debug, Clone, PartialEq)]
pub struct Knn {
    /// `indices[[i, r]]`: the (r+1)-th nearest neighbour of sample i (N x k); ties to the lowest index.
    pub indices: Array2<usize>,
    /// `sq_dists[[i, r]] = ||x_i - x_{indices[[i, r]]}||^2`, exact (summed feature by feature), ascending per row.
    pub sq_dists: Array2<f64>,
}

impl Knn {
    /// Number of neighbours k.
    pub fn k(&self) -> usize {
        self.indices.ncols()
    }
}

/// Rows per GEMM block: about 32 MB of distances per block, at most 256 rows (a function of N only,
/// so results never depend on the number of threads).
/// Size of the strided sample whose k-th smallest distance pre-filters a row before the selection.
const SAMPLE: usize = 2048;

pub(crate) fn block_rows(n: usize) -> usize {
    (4_000_000 / n.max(1)).clamp(1, 256)
}

#[inline]
fn by_dist_then_index(a: &(f64, usize), b: &(f64, usize)) -> std::cmp::Ordering {
    a.0.total_cmp(&b.0).then(a.1.cmp(&b.1))
}

pub(crate) fn centred(x: ArrayView2<f64>) -> Array2<f64> {
    let mean = x.mean_axis(Axis(0)).expect("non-empty");
    let xc = &x - &mean.view().insert_axis(Axis(0));
    xc.as_standard_layout().to_owned()
}

/// Exact K-NN search: for every sample i, the k samples `j != i` with the smallest
/// `||x_i - x_j||^2`, ascending, ties to the lowest index.
///
/// Cost O(N^2 D) flops in GEMM blocks plus O(N^2) selection, memory O(N k + block x N).
/// Errors: empty or non-finite input, `k = 0`, and `k >= N` ("too few points for k neighbours").
pub fn knn(x: ArrayView2<f64>, k: usize) -> Result<Knn> {
    check_samples("knn", &x, 1)?;
    let n = x.nrows();
    if k == 0 {
        return Err(NumericsError::input("knn", "k = 0 neighbours requested (k must be >= 1)"));
    }
    if k >= n {
        return Err(NumericsError::input("knn", format!("too few points for k neighbours: N = {n} samples, k = {k} (need N > k)")));
    }
    let xc = centred(x);
    let norms = structdr_linalg::row_sq_norms(xc.view());
    let max_norm = norms.iter().copied().fold(0.0f64, f64::max);
    // Bound on the rounding error of a GEMM distance ||a||^2 + ||b||^2 - 2 a^T b (each term is a
    // D-term sum): every sample whose GEMM distance is within twice this of the k-th smallest is
    // re-scored exactly, so exact ties and near-ties are always decided by (exact distance, index).
    let slack = |ni: f64| 4.0 * (x.ncols() as f64 + 4.0) * f64::EPSILON * (ni + max_norm);
    let rows = block_rows(n);
    let nblocks = n.div_ceil(rows);
    let blocks: Vec<(Vec<usize>, Vec<f64>)> = (0..nblocks)
        .into_par_iter()
        .map(|b| {
            let lo = b * rows;
            let hi = (lo + rows).min(n);
            // row-major, so every row is one slice (ndarray can return the product column-major,
            // e.g. for one feature; a copy only then)
            let d = sq_dists_between(xc.slice(s![lo..hi, ..]), xc.view());
            let d = d.as_standard_layout();
            let mut idx = Vec::with_capacity((hi - lo) * k);
            let mut dist = Vec::with_capacity((hi - lo) * k);
            let mut buf: Vec<(f64, usize)> = Vec::with_capacity(n);
            let mut sample: Vec<f64> = Vec::with_capacity(SAMPLE);
            let mut cand: Vec<(f64, usize)> = Vec::with_capacity(2 * k);
            for (r, drow) in d.rows().into_iter().enumerate() {
                let i = lo + r;
                let drow = drow.as_slice().expect("rows of a standard-layout matrix");
                // Any k candidates bound the k-th smallest from above: the k-th smallest of an
                // evenly strided sample is such a bound, and only the entries up to it (about
                // N k / SAMPLE of them) go through the selection, not all N.
                let bound = if k < SAMPLE / 2 && n > 2 * SAMPLE {
                    sample.clear();
                    sample.extend((0..SAMPLE).map(|t| t * n / SAMPLE).filter(|&j| j != i).map(|j| drow[j]));
                    *sample.select_nth_unstable_by(k - 1, f64::total_cmp).1
                } else {
                    f64::INFINITY
                };
                buf.clear();
                buf.extend(drow.iter().enumerate().filter(|&(j, &v)| v <= bound && j != i).map(|(j, &v)| (v, j)));
                let (_, kth, _) = buf.select_nth_unstable_by(k - 1, by_dist_then_index);
                let tau = kth.0 + slack(norms[i]);
                cand.clear();
                cand.extend(drow.iter().enumerate().filter(|&(j, &v)| v <= tau && j != i).map(|(j, _)| (exact_sq_dist(x.row(i), x.row(j)), j)));
                cand.sort_unstable_by(by_dist_then_index);
                for &(v, j) in &cand[..k] {
                    idx.push(j);
                    dist.push(v);
                }
            }
            (idx, dist)
        })
        .collect();
    let mut indices = Vec::with_capacity(n * k);
    let mut sq = Vec::with_capacity(n * k);
    for (i, d) in blocks {
        indices.extend(i);
        sq.extend(d);
    }
    Ok(Knn { indices: Array2::from_shape_vec((n, k), indices).expect("n*k"), sq_dists: Array2::from_shape_vec((n, k), sq).expect("n*k") })
}

/// The symmetrised ("or") K-NN graph as sorted, duplicate-free edges `(i, j, ||x_i - x_j||^2)`
/// with `i < j`: `i ~ j` iff `j in kNN(i)` or `i in kNN(j)`.
pub fn symmetrised_edges(knn: &Knn) -> Vec<(usize, usize, f64)> {
    let mut edges: Vec<(usize, usize, f64)> = Vec::with_capacity(knn.indices.len());
    for ((i, r), &j) in knn.indices.indexed_iter() {
        edges.push((i.min(j), i.max(j), knn.sq_dists[[i, r]]));
    }
    edges.sort_unstable_by_key(|e| (e.0, e.1));
    edges.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    edges
}
