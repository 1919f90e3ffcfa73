//! The seeded k-means restart protocol and its ACC / NMI summary.
//!
//! A deliberate specialisation, kept apart from the methods' k-means
//! (`structdr_numerics::clustering`): this one reproduces the evaluation convention of the papers'
//! MATLAB code on embeddings (centre-shift tolerance, an emptied cluster keeps its centre,
//! duplicates allowed, restarts), and Table III's committed numbers rest on its exact arithmetic;
//! the methods' version re-seeds emptied clusters, refuses duplicates and prunes with drift
//! bounds for K in the thousands.
//!
//! # Why our own Lloyd iteration, and linfa-clustering only as a cross-check
//!
//! linfa-clustering 0.8.1's `KMeans` was checked for thread-count dependence: its assignment steps
//! are element-wise `par_for_each` (each point's nearest centroid is computed on its own), its
//! centroid update and inertia sum are sequential, and its k-means++ draws through one sequential
//! RNG, so it *is* deterministic across rayon thread counts. It does not match the protocol,
//! for three reasons found in its source (`k_means/algorithm.rs`):
//! 1. its update is "m_k-means", not Lloyd: every new centroid is
//!    `(old centroid + sum of members) / (members + 1)`, i.e. the old centroid counts as one extra
//!    member. MATLAB `kmeans`, Cai's `litekmeans` and scikit-learn use the plain mean, which is
//!    what the reproduced papers ran;
//! 2. it does not expose the number of iterations (a field of [`KmeansRun`]);
//! 3. its `inertia()` is the *mean* squared distance, and its memberships refer to the centroids
//!    before the last update.
//!
//! [`KmeansAlgorithm::Lloyd`] is therefore a plain Lloyd iteration with k-means++ seeding written
//! here, with a fixed summation order (points in index order) so that every run is bit-identical
//! for a given seed, whatever the thread count. linfa-clustering is a dev-dependency: the tests
//! check that both find the same partition of separated clusters (`tests/kmeans.rs`), and the
//! benchmark times both.
//!
//! # Pruning
//!
//! The run skips the point-centre distances that provably cannot decide an assignment (Elkan's
//! triangle-inequality bounds with a floating-point-safe margin, submodule `prune`, whose docs
//! give the bounds and the proof). It returns the same bits as the plain brute-force iteration
//! (k-means++, then every point against every centre), which is kept here as the reference
//! ([`kmeans_protocol_brute_force`]) and compared bit for bit by the tests.

use ndarray::{Array2, ArrayView2};
use rand::{Rng, RngCore, SeedableRng};
use rand_xoshiro::{SplitMix64, Xoshiro256PlusPlus};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{ensure_finite, ensure_min_samples, ensure_same_len, EvalError, Result};
use crate::hungarian::hungarian_acc;
#[allow(unused_imports)] // used in doc links
use crate::labels::n_classes;
use crate::labels::Label;
use crate::nmi::{nmi, NmiNorm};

mod prune;
#[cfg(test)]
mod tests;

/// Which k-means implementation runs each restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KmeansAlgorithm {
    /// Plain Lloyd iteration (new centre = mean of its members) with k-means++ seeding, written in
    /// this crate (see the module docs for why). An empty cluster keeps its previous centre.
    #[default]
    Lloyd,
}

/// Settings of one k-means run; the defaults are k-means++ seeding, at most 300 iterations and
/// tolerance 1e-4 on the centre shift, NMI normalised by `max` (Cai/Nie convention).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KmeansOptions {
    /// Maximum number of Lloyd iterations (assignment + update) per run (default 300).
    pub max_n_iterations: usize,
    /// Stop once the Frobenius norm of the centre shift `||C_new - C_old||_F` is below this
    /// (absolute, as in linfa; default 1e-4). A run whose assignments stop changing has shift 0.
    pub tolerance: f64,
    /// Normaliser of the per-run NMI (default [`NmiNorm::Max`]).
    pub nmi_norm: NmiNorm,
    /// Implementation (default [`KmeansAlgorithm::Lloyd`]).
    pub algorithm: KmeansAlgorithm,
}

impl Default for KmeansOptions {
    fn default() -> Self {
        Self { max_n_iterations: 300, tolerance: 1e-4, nmi_norm: NmiNorm::Max, algorithm: KmeansAlgorithm::Lloyd }
    }
}

/// One fitted k-means run.
#[derive(Debug, Clone, PartialEq)]
pub struct KmeansFit {
    /// Cluster index in `0..k` of every sample (nearest final centre, lowest index on ties).
    pub labels: Vec<usize>,
    /// Final centres (k x D).
    pub centroids: Array2<f64>,
    /// `SSE = sum_i ||y_i - c_{labels_i}||^2` against the final centres.
    pub sse: f64,
    /// `sum_i ||y_i - c_{labels_i}||` (unsquared; Cai's `litekmeans` selects restarts by this).
    pub sum_dist: f64,
    /// Iterations performed.
    pub iterations: usize,
}

/// One restart of the protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KmeansRun {
    /// The seed of this restart's RNG, [`restart_seed`]`(seed, r)`: rerunning [`kmeans_fit`]
    /// with it reproduces the run.
    pub seed: u64,
    /// `sum_i ||y_i - c_{l_i}||^2`: the sum, not linfa's mean inertia.
    pub sse: f64,
    /// `sum_i ||y_i - c_{l_i}||` (unsquared distances, the litekmeans criterion).
    pub sum_dist: f64,
    /// [`hungarian_acc`] of this run's clusters against the labels.
    pub acc: f64,
    /// [`nmi`] of this run's clusters with the protocol's normaliser.
    pub nmi: f64,
    /// Iterations used.
    pub iterations: usize,
}

/// All restarts of the protocol and both summary views of REFERENCES.md §3.3:
/// (a) mean ± std over the restarts and (b) the metrics of the lowest-SSE restart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KmeansReport {
    /// Number of clusters.
    pub k: usize,
    /// The NMI normaliser used in `runs[..].nmi`.
    pub nmi_norm: NmiNorm,
    /// The implementation used.
    pub algorithm: KmeansAlgorithm,
    /// Every restart, in restart order.
    pub runs: Vec<KmeansRun>,
    /// `mean_r acc_r`.
    pub acc_mean: f64,
    /// Sample standard deviation `sqrt(sum_r (acc_r - mean)^2 / (R - 1))` (MATLAB `std`); 0 if R = 1.
    pub acc_std: f64,
    /// `mean_r nmi_r`.
    pub nmi_mean: f64,
    /// Sample standard deviation of the NMIs (n - 1 denominator); 0 if R = 1.
    pub nmi_std: f64,
    /// Index of the run with the smallest SSE (the first one among ties).
    pub best_sse_run: usize,
    /// `acc` of the lowest-SSE run.
    pub acc_best_sse: f64,
    /// `nmi` of the lowest-SSE run.
    pub nmi_best_sse: f64,
}

/// The seed of restart `r`: the `r`-th output (0-based) of SplitMix64 seeded with `seed`.
///
/// Restarts are thus independent streams, and the first R restarts are the same for any larger
/// restart count.
pub fn restart_seed(seed: u64, restart: usize) -> u64 {
    let mut sm = SplitMix64::seed_from_u64(seed);
    let mut s = sm.next_u64();
    for _ in 0..restart {
        s = sm.next_u64();
    }
    s
}

/// The k-means protocol with default [`KmeansOptions`]: `restarts` independent k-means runs on the
/// rows of `y`, each with one k-means++ initialisation from its own RNG
/// (`Xoshiro256PlusPlus::seed_from_u64(`[`restart_seed`]`(seed, r))`), scored by [`hungarian_acc`]
/// and [`nmi`] (max normalisation) against `labels`. Use [`n_classes`]`(labels)` as `k` for the
/// usual "k = number of classes".
///
/// The report is bit-identical across calls and across rayon thread counts (restarts run in
/// parallel, each deterministic).
///
/// Errors: length mismatch, empty input, NaN/Inf, `k = 0`, `k > N`, `restarts = 0`.
pub fn kmeans_protocol<L: Label>(y: ArrayView2<f64>, labels: &[L], k: usize, restarts: usize, seed: u64) -> Result<KmeansReport> {
    kmeans_protocol_with(y, labels, k, restarts, seed, &KmeansOptions::default())
}

/// [`kmeans_protocol`] with explicit options.
pub fn kmeans_protocol_with<L: Label>(y: ArrayView2<f64>, labels: &[L], k: usize, restarts: usize, seed: u64, opts: &KmeansOptions) -> Result<KmeansReport> {
    protocol(y, labels, k, restarts, seed, opts, Path::Pruned)
}

/// [`kmeans_protocol_with`] through the unpruned reference path: k-means++ and Lloyd computing
/// every point-centre distance. Same report, bit for bit, several times slower; kept for the
/// identity tests and benchmarks.
#[doc(hidden)]
pub fn kmeans_protocol_brute_force<L: Label>(
    y: ArrayView2<f64>,
    labels: &[L],
    k: usize,
    restarts: usize,
    seed: u64,
    opts: &KmeansOptions,
) -> Result<KmeansReport> {
    protocol(y, labels, k, restarts, seed, opts, Path::BruteForce)
}

/// Which implementation of [`KmeansAlgorithm::Lloyd`] runs (same results).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    /// Elkan-pruned distances (module `prune`).
    Pruned,
    /// Every point-centre distance (the reference).
    BruteForce,
}

fn protocol<L: Label>(y: ArrayView2<f64>, labels: &[L], k: usize, restarts: usize, seed: u64, opts: &KmeansOptions, path: Path) -> Result<KmeansReport> {
    const WHAT: &str = "kmeans_protocol";
    ensure_same_len(WHAT, y.nrows(), labels.len())?;
    validate(WHAT, y, k, opts)?;
    if restarts == 0 {
        return Err(EvalError::InvalidParameter { what: WHAT, detail: "restarts must be >= 1".into() });
    }
    // Scale-free: y * 2^s with the tolerance scaled alike, so every comparison is the unscaled
    // one (exact for ordinary data) and 1e300 or 1e-300 coordinates neither overflow nor vanish.
    let (ys, s) = crate::scale::safe_scale(y);
    let opts = &scaled_options(opts, s);
    let y = ys.as_standard_layout().into_owned(); // one row-major copy for all restarts
    let y = &y;
    let mut runs: Vec<KmeansRun> = (0..restarts)
        .into_par_iter()
        .map(|r| -> Result<KmeansRun> {
            let s = restart_seed(seed, r);
            let fit = fit_unchecked(y, k, s, opts, path)?;
            Ok(KmeansRun {
                seed: s,
                sse: fit.sse,
                sum_dist: fit.sum_dist,
                acc: hungarian_acc(&fit.labels, labels)?,
                nmi: nmi(&fit.labels, labels, opts.nmi_norm)?,
                iterations: fit.iterations,
            })
        })
        .collect::<Result<_>>()?;
    let accs: Vec<f64> = runs.iter().map(|r| r.acc).collect();
    let nmis: Vec<f64> = runs.iter().map(|r| r.nmi).collect();
    let (acc_mean, acc_std) = mean_std(&accs);
    let (nmi_mean, nmi_std) = mean_std(&nmis);
    // chosen on the scaled SSEs: scaled back, two large ones could both overflow to inf
    let mut best = 0;
    for (i, r) in runs.iter().enumerate() {
        if r.sse < runs[best].sse {
            best = i;
        }
    }
    for r in &mut runs {
        r.sse = crate::scale::mul_pow2(r.sse, -2 * s);
        r.sum_dist = crate::scale::mul_pow2(r.sum_dist, -s);
    }
    Ok(KmeansReport {
        k,
        nmi_norm: opts.nmi_norm,
        algorithm: opts.algorithm,
        acc_best_sse: runs[best].acc,
        nmi_best_sse: runs[best].nmi,
        best_sse_run: best,
        runs,
        acc_mean,
        acc_std,
        nmi_mean,
        nmi_std,
    })
}

/// One k-means run on the rows of `y` with `k` clusters, RNG `Xoshiro256PlusPlus::seed_from_u64(seed)`.
///
/// Lloyd ([`KmeansAlgorithm::Lloyd`]): k-means++ seeding (first centre uniform, each next one a
/// sample with probability `D(x)^2 / sum D^2`, `D` the distance to the nearest chosen centre), then
/// alternate `l_i = argmin_c ||y_i - c||^2` (lowest index on ties) and `c_j = mean{y_i : l_i = j}`
/// until `||C_new - C_old||_F < tolerance` or `max_n_iterations`. Final labels, SSE and sum of
/// distances are computed against the final centres. If k-means++ runs out of distinct points
/// (fewer than k distinct rows), it repeats row 0; such a cluster stays empty.
///
/// Errors: empty input, NaN/Inf, `k = 0`, `k > N`, `max_n_iterations = 0`, tolerance not > 0.
///
/// Scale: the run is made on `y * 2^s` (`s` brings `max |y_ij|` near `2^490`, module `scale`)
/// with the tolerance multiplied by `2^s` too, and the centres, SSE and sum of distances are scaled
/// back (`2^-s`, `4^-s`, `2^-s`): exact, so the same run as on `y` for ordinary data, and one that neither
/// overflows nor underflows for coordinates of `1e300` or `1e-300` (an SSE beyond `f64::MAX` is
/// reported as infinite).
pub fn kmeans_fit(y: ArrayView2<f64>, k: usize, seed: u64, opts: &KmeansOptions) -> Result<KmeansFit> {
    validate("kmeans_fit", y, k, opts)?;
    let (ys, s) = crate::scale::safe_scale(y);
    let mut fit = fit_unchecked(&ys.as_standard_layout().into_owned(), k, seed, &scaled_options(opts, s), Path::Pruned)?;
    fit.centroids.mapv_inplace(|v| crate::scale::mul_pow2(v, -s));
    fit.sse = crate::scale::mul_pow2(fit.sse, -2 * s);
    fit.sum_dist = crate::scale::mul_pow2(fit.sum_dist, -s);
    Ok(fit)
}

/// The options for data multiplied by `2^s`: the centre-shift tolerance multiplied alike (exact),
/// kept above 0 so that a run whose centres stop moving still stops, and finite.
fn scaled_options(opts: &KmeansOptions, s: i32) -> KmeansOptions {
    KmeansOptions { tolerance: crate::scale::mul_pow2(opts.tolerance, s).clamp(f64::from_bits(1), f64::MAX), ..*opts }
}

fn validate(what: &'static str, y: ArrayView2<f64>, k: usize, opts: &KmeansOptions) -> Result<()> {
    ensure_min_samples(what, y.nrows(), 1)?;
    ensure_finite(what, y)?;
    let bad = |detail: String| Err(EvalError::InvalidParameter { what, detail });
    if k == 0 || k > y.nrows() {
        return bad(format!("k = {k} must be in 1..={}", y.nrows()));
    }
    if y.ncols() == 0 {
        return bad("the data have 0 columns: nothing to cluster".into());
    }
    if opts.max_n_iterations == 0 {
        return bad("max_n_iterations must be >= 1".into());
    }
    if !(opts.tolerance > 0.0 && opts.tolerance.is_finite()) {
        return bad(format!("tolerance = {} must be finite and > 0", opts.tolerance));
    }
    Ok(())
}

/// One run on row-major `y` (already scaled and validated).
fn fit_unchecked(y: &Array2<f64>, k: usize, seed: u64, opts: &KmeansOptions, path: Path) -> Result<KmeansFit> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let (centroids, iterations, labels, d2) = match (opts.algorithm, path) {
        (KmeansAlgorithm::Lloyd, Path::Pruned) => prune::lloyd_pruned(y, k, &mut rng, opts),
        (KmeansAlgorithm::Lloyd, Path::BruteForce) => {
            let (centroids, iterations) = lloyd(y, k, &mut rng, opts);
            let centroids = centroids.as_standard_layout().into_owned();
            let (labels, d2) = assign(y, &centroids);
            (centroids, iterations, labels, d2)
        }
    };
    let sse = d2.iter().sum();
    let sum_dist = d2.iter().map(|d| d.sqrt()).sum();
    Ok(KmeansFit { labels, centroids, sse, sum_dist, iterations })
}

/// `sum_k (a_k - b_k)^2` with four interleaved partial sums (`k mod 4`), combined as
/// `(s0 + s1) + (s2 + s3)` plus the tail: a fixed order, hence deterministic, and vectorisable.
#[inline]
fn sq_dist4(a: &[f64], b: &[f64]) -> f64 {
    let mut s = [0.0f64; 4];
    let (ca, ta) = a.split_at(a.len() / 4 * 4);
    let (cb, tb) = b.split_at(ca.len());
    for (x, z) in ca.chunks_exact(4).zip(cb.chunks_exact(4)) {
        for l in 0..4 {
            let d = x[l] - z[l];
            s[l] += d * d;
        }
    }
    let mut t = (s[0] + s[1]) + (s[2] + s[3]);
    for (x, z) in ta.iter().zip(tb) {
        let d = x - z;
        t += d * d;
    }
    t
}

/// Nearest centre of every row (lowest index on ties) and its squared distance; element-wise
/// parallel, so the result does not depend on the thread count. `y` and `c` are row-major.
fn assign(y: &Array2<f64>, c: &Array2<f64>) -> (Vec<usize>, Vec<f64>) {
    let n = y.nrows();
    let dim = y.ncols();
    let ys = y.as_slice().expect("row-major");
    let cs = c.as_slice().expect("row-major");
    let mut labels = vec![0usize; n];
    let mut d2 = vec![0.0f64; n];
    const CHUNK: usize = 256;
    labels.par_chunks_mut(CHUNK).zip(d2.par_chunks_mut(CHUNK)).enumerate().for_each(|(b, (ls, ds))| {
        for (o, (l, d)) in ls.iter_mut().zip(ds.iter_mut()).enumerate() {
            let i = b * CHUNK + o;
            let yi = &ys[i * dim..(i + 1) * dim];
            let mut best = 0;
            let mut bd = f64::INFINITY;
            for j in 0..c.nrows() {
                let e = sq_dist4(yi, &cs[j * dim..(j + 1) * dim]);
                if e < bd {
                    bd = e;
                    best = j;
                }
            }
            *l = best;
            *d = bd;
        }
    });
    (labels, d2)
}

/// The k-means++ draw of the next centre: sample i with probability `dmin_i / sum(dmin)` (the
/// first i whose running sum of positive `dmin` exceeds `u * total`, u uniform in [0, 1); the last
/// positive one when rounding puts `u * total` on the total); index 0 when every `dmin` is 0.
/// One uniform is drawn only when the total is positive. Shared by both k-means paths, so their
/// seeding consumes the RNG identically.
pub(crate) fn kmeanspp_draw(dmin: &[f64], rng: &mut Xoshiro256PlusPlus) -> usize {
    let total: f64 = dmin.iter().sum();
    // `> 0` false also for NaN: no draw, index 0
    let positive = total > 0.0;
    if !positive {
        return 0;
    }
    let r = rng.gen::<f64>() * total;
    let mut acc = 0.0;
    let mut last_positive = 0;
    for (i, &d) in dmin.iter().enumerate() {
        if d > 0.0 {
            acc += d;
            last_positive = i;
            if acc > r {
                return i;
            }
        }
    }
    last_positive // rounding: r landed on the total
}

fn kmeans_plusplus(y: &Array2<f64>, k: usize, rng: &mut Xoshiro256PlusPlus) -> Array2<f64> {
    let n = y.nrows();
    let dim = y.ncols();
    let ys = y.as_slice().expect("row-major");
    let row = |i: usize| &ys[i * dim..(i + 1) * dim];
    let mut centres = Array2::zeros((k, dim));
    let first = rng.gen_range(0..n);
    centres.row_mut(0).assign(&y.row(first));
    let mut dmin: Vec<f64> = (0..n).map(|i| sq_dist4(row(i), row(first))).collect();
    for c in 1..k {
        let pick = kmeanspp_draw(&dmin, rng);
        centres.row_mut(c).assign(&y.row(pick));
        for (i, d) in dmin.iter_mut().enumerate() {
            let e = sq_dist4(row(i), row(pick));
            if e < *d {
                *d = e;
            }
        }
    }
    centres
}

/// The reference Lloyd iteration (every distance computed); `prune::lloyd_pruned` returns the
/// same bits.
fn lloyd(y: &Array2<f64>, k: usize, rng: &mut Xoshiro256PlusPlus, opts: &KmeansOptions) -> (Array2<f64>, usize) {
    let dim = y.ncols();
    let ys = y.as_slice().expect("row-major");
    let mut centres = kmeans_plusplus(y, k, rng);
    let mut iterations = 0;
    while iterations < opts.max_n_iterations {
        let (labels, _) = assign(y, &centres);
        // sums in sample order: deterministic
        let mut sums = vec![0.0f64; k * dim];
        let mut counts = vec![0usize; k];
        for (i, &l) in labels.iter().enumerate() {
            for (s, &v) in sums[l * dim..(l + 1) * dim].iter_mut().zip(&ys[i * dim..(i + 1) * dim]) {
                *s += v;
            }
            counts[l] += 1;
        }
        let old = centres.as_slice().expect("row-major");
        let mut shift2 = 0.0;
        for j in 0..k {
            let new = &mut sums[j * dim..(j + 1) * dim];
            if counts[j] == 0 {
                new.copy_from_slice(&old[j * dim..(j + 1) * dim]); // empty cluster: keep the centre
            } else {
                let cnt = counts[j] as f64;
                new.iter_mut().for_each(|v| *v /= cnt);
            }
            shift2 += sq_dist4(new, &old[j * dim..(j + 1) * dim]);
        }
        centres = Array2::from_shape_vec((k, dim), sums).expect("k x dim");
        iterations += 1;
        if shift2.sqrt() < opts.tolerance {
            break;
        }
    }
    (centres, iterations)
}

/// Mean and sample standard deviation `sqrt(sum (x - mean)^2 / (n - 1))` (MATLAB `std`); the
/// std is 0 for a single value, and both are NaN for an empty slice.
pub fn mean_std(x: &[f64]) -> (f64, f64) {
    if x.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    if x.len() == 1 {
        return (mean, 0.0);
    }
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}
