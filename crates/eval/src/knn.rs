//! Exact 1-NN leave-one-out accuracy.
//!
//! A deliberate specialisation, kept apart from the general exact K-NN of
//! `structdr_numerics::neighbours`: k = 1 with the screening fused into one reused GEMM buffer per
//! worker (2-3x faster at N = 5000), rescoring in index order. Every committed LOOCV number rests on
//! this kernel's tie rule and summation order, so it changes only with a record-schema bump.

use ndarray::linalg::general_mat_mul;
use ndarray::{s, Array2, ArrayView1, ArrayView2, Axis};
use rayon::prelude::*;
use structdr_linalg::row_sq_norms;

use crate::error::{ensure_finite, ensure_min_samples, ensure_same_len, EvalError, Result};

/// A score needs coordinates: a 0-column embedding (every point identical) is refused rather than
/// scored by index order.
fn ensure_columns(what: &'static str, y: ArrayView2<f64>) -> Result<()> {
    if y.ncols() == 0 {
        return Err(EvalError::InvalidParameter { what, detail: "the embedding has 0 columns: nothing to score".into() });
    }
    Ok(())
}
use crate::labels::Label;

/// Target number of entries of one block of the distance matrix (8 MB of f64, per rayon worker).
const BLOCK_ENTRIES: usize = 1 << 20;
/// Upper bound on the rows of one block.
const MAX_BLOCK_ROWS: usize = 128;

/// Leave-one-out 1-nearest-neighbour accuracy of an embedding, exact.
///
/// `acc = (1/N) sum_i [ labels_i = labels_{nn(i)} ]`, with
/// `nn(i) = argmin_{j != i} ||y_i - y_j||^2` from [`nearest_neighbours_loo`] (the sample itself is
/// excluded; ties go to the lowest index; a duplicate point at distance 0 is a legitimate
/// neighbour). This equals scikit-learn's `KNeighborsClassifier(1)` under `LeaveOneOut` on a
/// transductive embedding (up to its tie-breaking).
///
/// Errors: `y.nrows() != labels.len()`, `N < 2`, or NaN/Inf in `y`.
pub fn loocv_1nn_accuracy<L: Label>(y: ArrayView2<f64>, labels: &[L]) -> Result<f64> {
    ensure_same_len("loocv_1nn_accuracy", y.nrows(), labels.len())?;
    ensure_columns("loocv_1nn_accuracy", y)?;
    let nn = nearest_neighbours_loo(y)?;
    let hits = nn.iter().enumerate().filter(|&(i, &j)| labels[i] == labels[j]).count();
    Ok(hits as f64 / labels.len() as f64)
}

/// Leave-one-out 1-NN accuracy when the samples fall into separate groups whose coordinates are
/// not comparable (the components of a disconnected learned graph, each embedded on its own):
/// points of different groups are infinitely far apart.
///
/// `acc = (1/N) sum_i [ |G(i)| >= 2 and labels_i = labels_{nn_G(i)} ]`, where
/// `nn_G(i) = argmin_{j in G(i), j != i} ||y_i - y_j||^2` is the nearest neighbour within
/// `i`'s own group `G(i)` ([`nearest_neighbours_loo`] on the group's rows, so ties go to the
/// lowest sample index); a point alone in its group has no neighbour and counts as wrong. With one
/// group this is [`loocv_1nn_accuracy`].
///
/// Errors: lengths differ, `N < 2`, or NaN/Inf in `y`.
pub fn loocv_1nn_accuracy_within_groups<L: Label>(y: ArrayView2<f64>, labels: &[L], groups: &[usize]) -> Result<f64> {
    ensure_same_len("loocv_1nn_accuracy_within_groups", y.nrows(), labels.len())?;
    ensure_same_len("loocv_1nn_accuracy_within_groups", y.nrows(), groups.len())?;
    ensure_min_samples("loocv_1nn_accuracy_within_groups", y.nrows(), 2)?;
    ensure_columns("loocv_1nn_accuracy_within_groups", y)?;
    ensure_finite("loocv_1nn_accuracy_within_groups", y)?;
    let mut members: std::collections::BTreeMap<usize, Vec<usize>> = std::collections::BTreeMap::new();
    for (i, &g) in groups.iter().enumerate() {
        members.entry(g).or_default().push(i);
    }
    let mut hits = 0usize;
    for rows in members.values() {
        if rows.len() < 2 {
            continue;
        }
        let sub = y.select(Axis(0), rows);
        let nn = nearest_neighbours_loo(sub.view())?;
        hits += nn.iter().enumerate().filter(|&(a, &b)| labels[rows[a]] == labels[rows[b]]).count();
    }
    Ok(hits as f64 / labels.len() as f64)
}

/// The leave-one-out nearest neighbour of every row of `y` (N x D, samples are rows):
/// `nn(i) = min { j != i : d(i, j) = min_{l != i} d(i, l) }` with `d(i, j) = sum_k (y_ik - y_jk)^2`
/// evaluated by direct differences, so ties (exact duplicates, integer grids) go to the lowest
/// index.
///
/// Method, O(N^2 D) time and O(B N) memory (never an N x N matrix):
/// 1. centre `y` (distances are translation invariant; this shrinks the norms and with them the
///    GEMM cancellation error) and compute `n_i = ||y_i||^2`;
/// 2. for blocks of `B <= 128` rows (`B N <= 2^20`; rayon-parallel), screen with the GEMM
///    distances `d~(i, j) = n_i + n_j - 2 y_i^T y_j` (the expansion of
///    [`structdr_linalg::sq_dists_between`], fused into one reused buffer), whose error is bounded
///    by `e(i, j) = c (n_i + n_j)`, `c = max(1e-12, 4 (D + 4) eps)`;
/// 3. with `m = argmin_{j != i} d~(i, j)` and `U = d~(i, m) + e(i, m)` (an upper bound on the true
///    minimum), keep every `j` with `d~(i, j) <= U + 2 c (n_i + max_l n_l)` (a superset of those
///    whose lower bound `d~ - e` reaches `U`, widened by the rounding of step 4, so the
///    true minimiser is always kept);
/// 4. recompute those candidates by direct differences on the original rows and take the lowest
///    index among the minimal ones.
///
/// The answer depends only on the direct differences, not on the GEMM rounding, the BLAS thread
/// count, the rayon thread count or the block size. BLAS calls run inside rayon tasks: for speed,
/// callers should run OpenBLAS single-threaded ([`structdr_linalg::blas`]) as the runner does.
///
/// Scale: `y` is first multiplied by a power of two that brings `max |y_ij|` near `2^490` (exact;
/// see the module `scale`), so that coordinates of `1e300` or `1e-300` neither overflow nor underflow in
/// `d(i, j)`; the neighbours are those of the unscaled `y`, bit for bit, for ordinary data.
///
/// Errors: `N < 2`, NaN/Inf in `y`, or a neighbour at squared distance 0 that is not a duplicate
/// (the embedding's magnitudes span more than ~2^1000, so distinct points cannot be told apart in
/// f64: refused rather than scored by index order). `D = 0` is allowed (every point is a duplicate).
pub fn nearest_neighbours_loo(y: ArrayView2<f64>) -> Result<Vec<usize>> {
    ensure_min_samples("nearest_neighbours_loo", y.nrows(), 2)?;
    ensure_finite("nearest_neighbours_loo", y)?;
    let n = y.nrows();
    let block = (BLOCK_ENTRIES / n).clamp(1, MAX_BLOCK_ROWS);
    let (ys, _) = crate::scale::safe_scale(y);
    let nn = nn_blocked(ys.view(), block);
    // A zero distance between rows that differ is an underflow, not a duplicate.
    for (i, &j) in nn.iter().enumerate() {
        if y.ncols() > 0 && direct_sq_dist(ys.row(i), ys.row(j)) == 0.0 && y.row(i) != y.row(j) {
            return Err(EvalError::InvalidParameter {
                what: "nearest_neighbours_loo",
                detail: format!(
                    "degenerate: points {i} and {j} differ but their squared distance underflows to 0 (the embedding's magnitudes span too many orders to compare distances in f64)"
                ),
            });
        }
    }
    Ok(nn)
}

/// Squared Euclidean distance by direct differences in index order (the tie-deciding value).
#[inline]
pub(crate) fn direct_sq_dist(a: ArrayView1<f64>, b: ArrayView1<f64>) -> f64 {
    let mut s = 0.0;
    for (x, z) in a.iter().zip(b.iter()) {
        let d = x - z;
        s += d * d;
    }
    s
}

pub(crate) fn nn_blocked(y: ArrayView2<f64>, block: usize) -> Vec<usize> {
    let (n, d) = y.dim();
    if d == 0 {
        // All points coincide: the lowest index other than i.
        return (0..n).map(|i| usize::from(i == 0)).collect();
    }
    let mean = y.mean_axis(Axis(0)).expect("n >= 2");
    let yc = (&y - &mean.insert_axis(Axis(0))).as_standard_layout().into_owned();
    let norms = row_sq_norms(yc.view());
    let norms = norms.as_slice().expect("owned 1-D array is contiguous");
    let n_max = norms.iter().fold(0.0f64, |a, &b| a.max(b));
    // |d~(i,j) - d(i,j)| <= c (n_i + n_j) for the GEMM value, and the direct differences are within
    // (D + 2) eps d(i,j) <= c (n_i + n_j) / 2 of the true value (d <= 2 n_i + 2 n_j).
    let c = (4.0 * (d as f64 + 4.0) * f64::EPSILON).max(1e-12);
    let starts: Vec<usize> = (0..n).step_by(block).collect();
    // Not `sq_dists_between`: that allocates (and clamps) a fresh block per call; here the GEMM
    // writes into one reused buffer per rayon worker and the screening is fused into it, which is
    // 2-3x faster at N = 5000 (the norms still come from `structdr_linalg::row_sq_norms`).
    let per_block: Vec<Vec<usize>> = starts
        .par_iter()
        .map_init(
            || Array2::<f64>::zeros((block.min(n), n)),
            |buf, &b0| {
                let b1 = (b0 + block).min(n);
                let mut g = buf.slice_mut(s![..b1 - b0, ..]);
                general_mat_mul(1.0, &yc.slice(s![b0..b1, ..]), &yc.t(), 0.0, &mut g);
                let mut out = Vec::with_capacity(b1 - b0);
                for (r, mut grow) in g.rows_mut().into_iter().enumerate() {
                    let i = b0 + r;
                    let row = grow.as_slice_mut().expect("buffer rows are contiguous");
                    let ni = norms[i];
                    // d~(i, j) = n_i + n_j - 2 y_i^T y_j, and its minimiser over j != i
                    for (v, &nj) in row.iter_mut().zip(norms) {
                        *v = ni + nj - 2.0 * *v;
                    }
                    row[i] = f64::INFINITY;
                    let (mut jm, mut m) = (0usize, f64::INFINITY);
                    for (j, &v) in row.iter().enumerate() {
                        if v < m {
                            m = v;
                            jm = j;
                        }
                    }
                    // U = d~(i, jm) + e(i, jm) bounds the true minimum from above; any j with
                    // d~(i, j) - e(i, j) > U (plus the direct-difference slack) cannot win.
                    let thr = m + c * (ni + norms[jm]) + 2.0 * c * (ni + n_max);
                    let yi = y.row(i);
                    let mut best = usize::MAX;
                    let mut best_d = f64::INFINITY;
                    for (j, &v) in row.iter().enumerate() {
                        if v <= thr && j != i {
                            let e = direct_sq_dist(yi, y.row(j));
                            if e < best_d || best == usize::MAX {
                                best_d = e;
                                best = j;
                            }
                        }
                    }
                    if !thr.is_finite() || best == usize::MAX {
                        // Only on overflow (|y| ~ 1e154 and up makes d~ infinite or NaN): plain scan.
                        best = usize::MAX;
                        best_d = f64::INFINITY;
                        for j in (0..n).filter(|&j| j != i) {
                            let e = direct_sq_dist(yi, y.row(j));
                            if e < best_d || best == usize::MAX {
                                best_d = e;
                                best = j;
                            }
                        }
                    }
                    out.push(best);
                }
                out
            },
        )
        .collect();
    per_block.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array2};
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn brute(y: ArrayView2<f64>) -> Vec<usize> {
        let n = y.nrows();
        (0..n)
            .map(|i| {
                let mut best = usize::MAX;
                let mut bd = f64::INFINITY;
                for j in 0..n {
                    if j != i {
                        let e = direct_sq_dist(y.row(i), y.row(j));
                        if e < bd || best == usize::MAX {
                            bd = e;
                            best = j;
                        }
                    }
                }
                best
            })
            .collect()
    }

    #[test]
    fn block_size_does_not_matter() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let y = Array2::from_shape_fn((203, 3), |_| rng.gen_range(-2i32..=2) as f64);
        let reference = brute(y.view());
        for b in [1, 7, 64, 256, 1000] {
            assert_eq!(nn_blocked(y.view(), b), reference, "block {b}");
        }
    }

    #[test]
    fn overflowing_values_do_not_panic() {
        let y = array![[1e200, 0.0], [-1e200, 1.0], [1e200, 2.0]];
        assert_eq!(nearest_neighbours_loo(y.view()).unwrap(), brute(y.view()));
    }

    #[test]
    fn zero_columns_and_two_points() {
        let y = Array2::<f64>::zeros((4, 0));
        assert_eq!(nearest_neighbours_loo(y.view()).unwrap(), vec![1, 0, 0, 0]);
        let y = array![[1.0], [5.0]];
        assert_eq!(nearest_neighbours_loo(y.view()).unwrap(), vec![1, 0]);
        // a score needs coordinates
        let e = loocv_1nn_accuracy(Array2::<f64>::zeros((4, 0)).view(), &[0, 0, 1, 1]).unwrap_err().to_string();
        assert!(e.contains("0 columns"), "{e}");
    }

    /// Within groups: equals a brute-force scan restricted to each group; one group is the plain
    /// accuracy; singletons count as wrong; and overlaid groups (the same coordinates in two
    /// groups) no longer borrow each other's labels.
    #[test]
    fn within_groups_restricts_neighbours_to_the_group() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(17);
        let n = 150;
        let y = Array2::from_shape_fn((n, 2), |_| rng.gen_range(-1.0..1.0));
        let labels: Vec<u8> = (0..n).map(|_| rng.gen_range(0..3u8)).collect();
        let groups: Vec<usize> = (0..n).map(|i| if i == 7 { 9 } else { rng.gen_range(0..4) }).collect();
        let got = loocv_1nn_accuracy_within_groups(y.view(), &labels, &groups).unwrap();
        let mut hits = 0;
        for i in 0..n {
            let mut best = None;
            let mut bd = f64::INFINITY;
            for j in 0..n {
                if j != i && groups[j] == groups[i] {
                    let e = direct_sq_dist(y.row(i), y.row(j));
                    if e < bd {
                        bd = e;
                        best = Some(j);
                    }
                }
            }
            if best.is_some_and(|j| labels[j] == labels[i]) {
                hits += 1;
            }
        }
        assert_eq!(got, hits as f64 / n as f64);
        assert_eq!(loocv_1nn_accuracy_within_groups(y.view(), &labels, &vec![0; n]).unwrap(), loocv_1nn_accuracy(y.view(), &labels).unwrap());
        // two groups embedded on top of each other: plain 1-NN confuses them, within-group does not
        let half = Array2::from_shape_fn((20, 1), |(i, _)| i as f64);
        let both = ndarray::concatenate(Axis(0), &[half.view(), (&half + 0.01).view()]).unwrap();
        let lab: Vec<u8> = (0..40).map(|i| u8::from(i >= 20)).collect();
        let grp: Vec<usize> = lab.iter().map(|&l| l as usize).collect();
        assert_eq!(loocv_1nn_accuracy(both.view(), &lab).unwrap(), 0.0);
        assert_eq!(loocv_1nn_accuracy_within_groups(both.view(), &lab, &grp).unwrap(), 1.0);
        // every point alone: nothing is right
        let single: Vec<usize> = (0..40).collect();
        assert_eq!(loocv_1nn_accuracy_within_groups(both.view(), &lab, &single).unwrap(), 0.0);
        assert!(loocv_1nn_accuracy_within_groups(both.view(), &lab, &grp[..39]).is_err());
    }
}
