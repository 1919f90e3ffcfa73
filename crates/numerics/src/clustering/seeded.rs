//! Seeded k-means: k-means++ seeding (Arthur & Vassilvitskii 2007) followed by Lloyd iterations.
//!
//! Used to initialise landmarks (RPG Algorithm 2, 004 §5.2; DDRTree's centres). Minimises the
//! within-cluster sum of squares `SSE = sum_i min_k ||x_i - c_k||^2`.
//!
//! - Seeding: the first centre is a uniformly drawn sample, every further centre a sample drawn
//!   with probability proportional to `D(x) = min_{chosen c} ||x - c||^2`. The `D(x)` update after
//!   a new centre `c'` skips every sample whose current centre `c_a` has `||c' - c_a||^2 >= 4 D(x)`
//!   (triangle inequality: `c'` cannot be closer), so late seeding steps touch few rows of X.
//!   Distances here are summed feature by feature (exact zero for duplicates).
//! - Lloyd: nearest centre by exact distances with candidate lists and drift bounds
//!   ([`crate::neighbours::NearCentres`]: after the first sweep only rows whose bound fails recompute
//!   all K distances, by GEMM), ties to the lowest centre index; centres = cluster means
//!   accumulated in sample order; an emptied cluster is re-seeded at the sample farthest from its
//!   centre. Stops when no label changes or after `max_iter` iterations.
//!
//! Not the evaluation protocol's k-means (`structdr_eval::kmeans`, k-means ACC/NMI of the tables):
//! that one reproduces MATLAB's behaviour on embeddings (centre-shift tolerance, empty clusters keep
//! their centre, duplicates allowed, 20 restarts), and its cached table numbers depend on exactly
//! that; this one fits landmarks once, where an emptied cluster must be re-seeded and duplicates
//! are an input error. They share the k-means++ rule, not the code.
//!
//! Deterministic: the same `(x, k, seed, max_iter)` gives bit-identical output (the random draws
//! come from one Xoshiro256++ stream; all reductions run in a fixed order).
//! Cost: seeding O(N K) checks plus the distance rows actually computed, Lloyd O(N K D) per
//! iteration at worst (BLAS-3 speed), O(N |candidates| D) once the centres settle; memory
//! O(block x K + K D + N |candidates|).

use crate::dist::exact_sq_dist as sqd;
use crate::neighbours::{NearCentres, DEFAULT_MARGIN};
use crate::{check_samples, NumericsError, Result};
use ndarray::{Array1, Array2, ArrayView2};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

/// The result of [`kmeans`].
#[derive(Debug, Clone, PartialEq)]
pub struct KMeansResult {
    /// Cluster centres, K x D (centre k in row k).
    pub centres: Array2<f64>,
    /// Centre index of every sample (nearest centre, ties to the lowest index).
    pub labels: Vec<usize>,
    /// Within-cluster sum of squares `sum_i ||x_i - c_{labels[i]}||^2` at the returned centres.
    pub sse: f64,
    /// Lloyd iterations run.
    pub iterations: usize,
    /// Whether Lloyd stopped because no label changed (false: `max_iter` reached).
    pub converged: bool,
}

/// k-means++ seeding: K distinct samples (as rows), drawn from the seeded stream.
///
/// Errors when fewer than K distinct samples exist (every remaining `D(x)` is 0).
pub fn kmeanspp_init(x: ArrayView2<f64>, k: usize, seed: u64) -> Result<Array2<f64>> {
    const M: &str = "kmeans";
    let (n, d) = x.dim();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut centres = Array2::<f64>::zeros((k, d));
    let first = rng.gen_range(0..n);
    centres.row_mut(0).assign(&x.row(first));
    let mut dist: Vec<f64> = (0..n).into_par_iter().map(|i| sqd(x.row(i), x.row(first))).collect();
    let mut assign = vec![0usize; n];
    let mut cc = vec![0.0f64; k];
    for j in 1..k {
        let total: f64 = dist.iter().sum();
        if !(total > 0.0) {
            return Err(NumericsError::input(M, format!("k = {k} centres requested but the data has only {j} distinct points (duplicates)")));
        }
        let u = rng.gen::<f64>() * total;
        let mut acc = 0.0;
        let mut pick = None;
        for (i, &v) in dist.iter().enumerate() {
            acc += v;
            if acc > u && v > 0.0 {
                pick = Some(i);
                break;
            }
        }
        // Rounding can leave u >= the running sum at the end: take the last positive entry.
        let pick = pick.unwrap_or_else(|| dist.iter().rposition(|&v| v > 0.0).expect("total > 0"));
        centres.row_mut(j).assign(&x.row(pick));
        let cj = centres.row(j).to_owned();
        for (a, c) in cc.iter_mut().enumerate().take(j) {
            *c = sqd(centres.row(a), cj.view());
        }
        dist.par_iter_mut().zip(assign.par_iter_mut()).enumerate().for_each(|(i, (di, ai))| {
            if cc[*ai] < 4.0 * *di {
                let v = sqd(x.row(i), cj.view());
                if v < *di {
                    *di = v;
                    *ai = j;
                }
            }
        });
    }
    Ok(centres)
}

/// Nearest centre of every sample (exact distances, ties to the lowest index) and that distance.
fn assign(near: &mut NearCentres, x: ArrayView2<f64>, centres: ArrayView2<f64>) -> (Vec<usize>, Vec<f64>) {
    let rows = near.pass(x, centres, 0.0);
    (0..rows.nrows()).map(|i| (rows.row(i).0[0] as usize, rows.min[i])).unzip()
}

/// Seeded k-means of the rows of `x` into `k` clusters: k-means++ seeding, then at most
/// `max_iter` Lloyd iterations (see the module doc). Minimises `sum_i min_k ||x_i - c_k||^2`.
///
/// Errors: empty or non-finite input, `k = 0`, `k > N`, fewer than `k` distinct samples.
pub fn kmeans(x: ArrayView2<f64>, k: usize, seed: u64, max_iter: usize) -> Result<KMeansResult> {
    const M: &str = "kmeans";
    check_samples(M, &x, 1)?;
    let n = x.nrows();
    if k == 0 {
        return Err(NumericsError::input(M, "k = 0 clusters requested"));
    }
    if k > n {
        return Err(NumericsError::input(M, format!("k = {k} clusters exceeds the number of samples N = {n}")));
    }
    let centres = kmeanspp_init(x, k, seed)?;
    Ok(lloyd_from(x, centres, max_iter))
}

/// [`kmeans`] with the k-means++ seeding run on a uniform random subsample ("pool") of
/// `pool` rows when N exceeds it (drawn without replacement from the same seeded stream, kept in
/// sample order), then Lloyd on all N rows. Seeding costs O(pool K D) instead of O(N K D) and
/// its memory traffic stays in cache; the centres are still distinct samples and Lloyd refines
/// them on the full data. Used for landmarks (RPG Algorithm 2), where N >> K.
pub fn kmeans_pooled_seeding(x: ArrayView2<f64>, k: usize, seed: u64, max_iter: usize, pool: usize) -> Result<KMeansResult> {
    const M: &str = "kmeans";
    check_samples(M, &x, 1)?;
    let n = x.nrows();
    if k == 0 || k > n || pool >= n || pool < k {
        return kmeans(x, k, seed, max_iter);
    }
    // Partial Fisher-Yates: the first `pool` entries of a seeded permutation, then sorted.
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x706f_6f6c);
    let mut perm: Vec<usize> = (0..n).collect();
    for i in 0..pool {
        let j = rng.gen_range(i..n);
        perm.swap(i, j);
    }
    let mut rows: Vec<usize> = perm[..pool].to_vec();
    rows.sort_unstable();
    let sub = x.select(ndarray::Axis(0), &rows);
    let centres = match kmeanspp_init(sub.view(), k, seed) {
        Ok(c) => c,
        // Too few distinct rows in the pool: seed on everything.
        Err(_) => kmeanspp_init(x, k, seed)?,
    };
    Ok(lloyd_from(x, centres, max_iter))
}

/// Lloyd iterations of the rows of `x` from the given centres (K x D) for at most `max_iter`
/// sweeps: nearest centre by exact distances (ties to the lowest index), then means in sample
/// order; an empty cluster is re-seeded at the sample farthest from its centre. Deterministic.
pub fn lloyd_from(x: ArrayView2<f64>, init: Array2<f64>, max_iter: usize) -> KMeansResult {
    let (n, d) = x.dim();
    let k = init.nrows();
    let mut centres = init;
    let mut near = NearCentres::new(n, DEFAULT_MARGIN);
    let (mut labels, mut dist) = assign(&mut near, x, centres.view());
    let mut iterations = 0;
    let mut converged = false;
    while iterations < max_iter {
        iterations += 1;
        // Update: means in sample order.
        let mut sums = Array2::<f64>::zeros((k, d));
        let mut counts = vec![0usize; k];
        for (i, &l) in labels.iter().enumerate() {
            counts[l] += 1;
            let mut row = sums.row_mut(l);
            row += &x.row(i);
        }
        let mut used = vec![false; n];
        for c in 0..k {
            if counts[c] > 0 {
                let inv = 1.0 / counts[c] as f64;
                centres.row_mut(c).assign(&(&sums.row(c) * inv));
            } else {
                // Re-seed an empty cluster at the sample farthest from its centre.
                let far = (0..n).filter(|&i| !used[i]).fold((usize::MAX, -1.0f64), |b, i| if dist[i] > b.1 { (i, dist[i]) } else { b }).0;
                used[far] = true;
                dist[far] = 0.0;
                centres.row_mut(c).assign(&x.row(far));
            }
        }
        let (new_labels, new_dist) = assign(&mut near, x, centres.view());
        let changed = new_labels.iter().zip(labels.iter()).any(|(a, b)| a != b);
        labels = new_labels;
        dist = new_dist;
        if !changed {
            converged = true;
            break;
        }
    }
    let sse = labels.iter().enumerate().map(|(i, &l)| sqd(x.row(i), centres.row(l))).sum();
    KMeansResult { centres, labels, sse, iterations, converged }
}

/// Mean of the rows of `x` with the given labels (helper for tests and callers), K x D.
pub fn cluster_means(x: ArrayView2<f64>, labels: &[usize], k: usize) -> Array2<f64> {
    let mut sums = Array2::<f64>::zeros((k, x.ncols()));
    let mut counts = Array1::<f64>::zeros(k);
    for (i, &l) in labels.iter().enumerate() {
        counts[l] += 1.0;
        let mut row = sums.row_mut(l);
        row += &x.row(i);
    }
    for (mut r, &c) in sums.rows_mut().into_iter().zip(counts.iter()) {
        if c > 0.0 {
            r /= c;
        }
    }
    sums
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn blobs(n_per: usize, seed: u64) -> Array2<f64> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let centres = [[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]];
        let mut x = Array2::zeros((3 * n_per, 2));
        for (c, ctr) in centres.iter().enumerate() {
            for i in 0..n_per {
                x[[c * n_per + i, 0]] = ctr[0] + rng.gen::<f64>() - 0.5;
                x[[c * n_per + i, 1]] = ctr[1] + rng.gen::<f64>() - 0.5;
            }
        }
        x
    }

    #[test]
    fn recovers_well_separated_blobs_and_is_deterministic() {
        let x = blobs(50, 3);
        let r = kmeans(x.view(), 3, 7, 100).unwrap();
        assert!(r.converged);
        // Each blob is one cluster.
        for c in 0..3 {
            let l = r.labels[c * 50];
            assert!(r.labels[c * 50..(c + 1) * 50].iter().all(|&v| v == l));
        }
        // Lloyd fixed point: centres are the means of their clusters, labels the nearest centres.
        let means = cluster_means(x.view(), &r.labels, 3);
        assert!((&means - &r.centres).iter().all(|v| v.abs() < 1e-12));
        let r2 = kmeans(x.view(), 3, 7, 100).unwrap();
        assert_eq!(r, r2);
        let brute: f64 = (0..x.nrows()).map(|i| (0..3).map(|k| sqd(x.row(i), r.centres.row(k))).fold(f64::INFINITY, f64::min)).sum();
        assert!((brute - r.sse).abs() <= 1e-12 * brute);
    }

    #[test]
    fn k_equal_n_returns_the_points_and_errors_are_clear() {
        let x = array![[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]];
        let r = kmeans(x.view(), 3, 1, 10).unwrap();
        assert_eq!(r.sse, 0.0);
        let mut rows: Vec<Vec<f64>> = r.centres.rows().into_iter().map(|r| r.to_vec()).collect();
        rows.sort_by(|a, b| a.partial_cmp(b).unwrap());
        assert_eq!(rows, vec![vec![0.0, 0.0], vec![0.0, 2.0], vec![1.0, 0.0]]);
        assert!(kmeans(x.view(), 4, 1, 10).unwrap_err().to_string().contains("exceeds"));
        assert!(kmeans(x.view(), 0, 1, 10).is_err());
        let dup = array![[1.0, 1.0], [1.0, 1.0], [2.0, 2.0]];
        assert!(kmeans(dup.view(), 3, 1, 10).unwrap_err().to_string().contains("distinct"));
        let nan = array![[1.0, f64::NAN], [1.0, 1.0]];
        assert!(kmeans(nan.view(), 1, 1, 10).is_err());
    }

    /// Pooled seeding: distinct centres drawn from the data, deterministic, a Lloyd fixed point
    /// on the full data, and the plain path when the pool covers N.
    #[test]
    fn pooled_seeding_gives_a_deterministic_lloyd_fixed_point() {
        let x = blobs(200, 5);
        let r = kmeans_pooled_seeding(x.view(), 3, 2, 100, 60).unwrap();
        assert!(r.converged);
        assert_eq!(r, kmeans_pooled_seeding(x.view(), 3, 2, 100, 60).unwrap());
        let means = cluster_means(x.view(), &r.labels, 3);
        assert!((&means - &r.centres).iter().all(|v| v.abs() < 1e-12));
        for c in 0..3 {
            let l = r.labels[c * 200];
            assert!(r.labels[c * 200..(c + 1) * 200].iter().all(|&v| v == l));
        }
        assert_eq!(kmeans_pooled_seeding(x.view(), 3, 2, 100, 600).unwrap(), kmeans(x.view(), 3, 2, 100).unwrap());
    }
}
