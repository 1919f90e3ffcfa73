//! Optimal one-to-one assignment (Hungarian / Kuhn–Munkres) and the clustering accuracy ACC.

use ndarray::{Array2, ArrayView2};

use crate::error::{EvalError, Result};
use crate::labels::{contingency, Label};

/// Largest absolute cost accepted by [`linear_sum_assignment`]; keeps every potential and
/// reduced cost far from `i64` overflow (`|u_i| + |v_j| <= 2 * n * max|cost|`).
pub const MAX_ABS_COST: i64 = 1 << 40;

/// Minimum-cost one-to-one assignment on a rectangular `r x c` integer cost matrix.
///
/// Finds `min(r, c)` pairs `(i, j)` with distinct rows and distinct columns minimising
/// `sum_{(i,j)} cost[i, j]` (rows, resp. columns, left over when `r != c` stay unmatched). This is
/// what `scipy.optimize.linear_sum_assignment` solves. The pairs are returned sorted by row.
///
/// Algorithm: the O(n^2 m) shortest-augmenting-path Hungarian method with row/column potentials
/// `u, v` (Kuhn 1955, Munkres 1957; the compact form of Jonker–Volgenant's augmentation), run with
/// `n = min(r, c)` rows (the matrix is transposed when `r > c`). Exact integer arithmetic, so the
/// optimum is exact; among several optimal assignments the one found is deterministic.
///
/// Errors: [`EvalError::InvalidParameter`] if an entry exceeds [`MAX_ABS_COST`] in magnitude.
/// An empty matrix gives an empty assignment.
pub fn linear_sum_assignment(cost: ArrayView2<i64>) -> Result<Vec<(usize, usize)>> {
    if cost.iter().any(|v| v.unsigned_abs() > MAX_ABS_COST as u64) {
        return Err(EvalError::InvalidParameter { what: "linear_sum_assignment", detail: "cost entries must lie within +-2^40".to_string() });
    }
    let (r, c) = cost.dim();
    if r == 0 || c == 0 {
        return Ok(Vec::new());
    }
    let mut pairs = if r <= c { hungarian_rows_le_cols(cost) } else { hungarian_rows_le_cols(cost.t()).into_iter().map(|(j, i)| (i, j)).collect() };
    pairs.sort_unstable();
    Ok(pairs)
}

/// The Hungarian method for `n <= m`: every row is matched (1-based internal indexing).
fn hungarian_rows_le_cols(a: ArrayView2<i64>) -> Vec<(usize, usize)> {
    let (n, m) = a.dim();
    debug_assert!(n <= m);
    const INF: i64 = i64::MAX / 4;
    let mut u = vec![0i64; n + 1];
    let mut v = vec![0i64; m + 1];
    let mut p = vec![0usize; m + 1]; // p[j]: row matched to column j (0 = none)
    let mut way = vec![0usize; m + 1];
    for i in 1..=n {
        p[0] = i;
        let mut j0 = 0usize;
        let mut minv = vec![INF; m + 1];
        let mut used = vec![false; m + 1];
        loop {
            used[j0] = true;
            let i0 = p[j0];
            let mut delta = INF;
            let mut j1 = 0usize;
            for j in 1..=m {
                if !used[j] {
                    let cur = a[[i0 - 1, j - 1]] - u[i0] - v[j];
                    if cur < minv[j] {
                        minv[j] = cur;
                        way[j] = j0;
                    }
                    if minv[j] < delta {
                        delta = minv[j];
                        j1 = j;
                    }
                }
            }
            for j in 0..=m {
                if used[j] {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
            if p[j0] == 0 {
                break;
            }
        }
        loop {
            let j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
            if j0 == 0 {
                break;
            }
        }
    }
    (1..=m).filter(|&j| p[j] != 0).map(|j| (p[j] - 1, j - 1)).collect()
}

/// The maximum total count of a one-to-one matching of the rows and columns of a contingency
/// table: `max_{sigma} sum_r C[r, sigma(r)]` over injective partial matchings.
pub fn max_matching_count(c: ArrayView2<usize>) -> Result<usize> {
    let cost: Array2<i64> = c.mapv(|x| -(x.min(MAX_ABS_COST as usize) as i64));
    let pairs = linear_sum_assignment(cost.view())?;
    Ok(pairs.iter().map(|&(i, j)| c[[i, j]]).sum())
}

/// Clustering accuracy under the best one-to-one cluster-to-class map (Hungarian matching).
///
/// `ACC = (1/N) max_{sigma} sum_i [ truth_i = sigma(pred_i) ]`, where `sigma` ranges over the
/// injective maps from predicted clusters to classes. On the contingency table `C` (clusters x
/// classes, see [`contingency`]) this is `max_sigma sum_r C[r, sigma(r)] / N`, solved exactly by
/// [`linear_sum_assignment`] on `-C`. When there are more clusters than classes, the clusters left
/// without a class count as wrong (as in Cai's `bestMap.m`, which pads `C` to a square matrix with
/// zeros, and as in `scipy.optimize.linear_sum_assignment` on the rectangular table).
///
/// Invariant under any relabelling of `pred` or `truth`; 1 for identical partitions.
///
/// Errors: length mismatch or empty input.
pub fn hungarian_acc<P: Label, T: Label>(pred: &[P], truth: &[T]) -> Result<f64> {
    let (c, _, _) = contingency(pred, truth)?;
    let matched = max_matching_count(c.view())?;
    Ok(matched as f64 / pred.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Brute force over all injective maps of the smaller side into the larger.
    fn brute_min(cost: &Array2<i64>) -> i64 {
        let (r, c) = cost.dim();
        if r > c {
            return brute_min(&cost.t().to_owned());
        }
        fn rec(cost: &Array2<i64>, i: usize, used: &mut Vec<bool>) -> i64 {
            if i == cost.nrows() {
                return 0;
            }
            let mut best = i64::MAX;
            for j in 0..cost.ncols() {
                if !used[j] {
                    used[j] = true;
                    best = best.min(cost[[i, j]] + rec(cost, i + 1, used));
                    used[j] = false;
                }
            }
            best
        }
        rec(cost, 0, &mut vec![false; c])
    }

    #[test]
    fn matches_brute_force_on_random_rectangular_matrices() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        for trial in 0..300 {
            let r = rng.gen_range(1..=6);
            let c = rng.gen_range(1..=6);
            let hi = if trial % 3 == 0 { 3 } else { 50 }; // small range: many ties
            let cost = Array2::from_shape_fn((r, c), |_| rng.gen_range(-hi..=hi));
            let pairs = linear_sum_assignment(cost.view()).unwrap();
            assert_eq!(pairs.len(), r.min(c));
            let mut rows: Vec<_> = pairs.iter().map(|p| p.0).collect();
            let mut cols: Vec<_> = pairs.iter().map(|p| p.1).collect();
            rows.dedup();
            cols.sort_unstable();
            cols.dedup();
            assert_eq!(rows.len(), r.min(c));
            assert_eq!(cols.len(), r.min(c));
            let total: i64 = pairs.iter().map(|&(i, j)| cost[[i, j]]).sum();
            assert_eq!(total, brute_min(&cost), "trial {trial}: {cost:?}");
        }
    }

    #[test]
    fn classic_example() {
        // The textbook 3x3 example: optimum 5 (0->1, 1->0, 2->2).
        let cost = array![[4i64, 1, 3], [2, 0, 5], [3, 2, 2]];
        let pairs = linear_sum_assignment(cost.view()).unwrap();
        assert_eq!(pairs, vec![(0, 1), (1, 0), (2, 2)]);
    }

    #[test]
    fn rejects_huge_costs_and_accepts_empty() {
        let cost = array![[i64::MAX, 0]];
        assert!(linear_sum_assignment(cost.view()).is_err());
        let empty = Array2::<i64>::zeros((0, 3));
        assert!(linear_sum_assignment(empty.view()).unwrap().is_empty());
    }
}
