//! Perplexity-calibrated conditional affinities (SNE / t-SNE, ESL 001 eq. 1): for every point i a
//! Gaussian width `sigma_i` such that the entropy of `p_{.|i}` equals `ln u`.

use ndarray::{Array2, ArrayView2, Axis};
use rayon::prelude::*;

/// Accuracy of the perplexity calibration: `|H_i - ln u| <= PERPLEXITY_TOL` (nats).
pub const PERPLEXITY_TOL: f64 = 1e-9;

/// Conditional affinities with perplexity `u` (001 eq. 1): returns `P` with row `i` = `p_{.|i}`
/// (`p_{i|i} = 0`), the precisions `beta_i = 1 / (2 sigma_i^2)`, and `max_i |H_i - ln u|`.
///
/// `d2` holds the squared distances (N x N). Bisection on `beta_i` (doubling until bracketed),
/// on distances shifted by their row minimum for stability; up to 200 steps per point.
pub fn perplexity_affinities(d2: ArrayView2<f64>, perplexity: f64) -> (Array2<f64>, Vec<f64>, f64) {
    let n = d2.nrows();
    let target = perplexity.ln();
    let mut p = Array2::<f64>::zeros((n, n));
    let results: Vec<(f64, f64)> = p
        .axis_iter_mut(Axis(0))
        .into_par_iter()
        .enumerate()
        .map(|(i, mut row)| {
            let dmin = (0..n).filter(|&j| j != i).map(|j| d2[[i, j]]).fold(f64::INFINITY, f64::min);
            let s: Vec<f64> = (0..n).map(|j| if j == i { 0.0 } else { (d2[[i, j]] - dmin).max(0.0) }).collect();
            calibrate_row(&s, Some(i), target, row.as_slice_mut().expect("rows of a standard-layout matrix are contiguous"))
        })
        .collect();
    let betas = results.iter().map(|r| r.0).collect();
    let err = results.iter().map(|r| r.1).fold(0.0, f64::max);
    (p, betas, err)
}

/// One row's calibration: `row[j] = exp(-beta s_j) / sum_l exp(-beta s_l)` (entry `skip`, the
/// point itself, held at 0) with `beta` found by bisection (doubling until bracketed, up to 200
/// steps) so the entropy `ln z + beta sum_j row_j s_j` equals `target`; `s` are the squared
/// distances shifted by their minimum. Returns `beta` and `|H - target|`.
///
/// A bisection step reads only the sign of `H(beta) - target`, and most steps are far from the
/// target. Those are decided by [`entropy_estimate`] (a vectorised exponential, no stores), whose
/// distance from the exact evaluation's result is below [`estimate_guard`]; a step whose estimate
/// lies within `PERPLEXITY_TOL + guard` of the target, and the last step, are evaluated exactly.
/// So every step takes the sign, and the row and error come from, the exact evaluation: the
/// same `beta` sequence and the same bits as evaluating every step exactly (`estimates = false`
/// in [`bisect_row`], the test's reference), at a fraction of the `exp` calls.
fn calibrate_row(s: &[f64], skip: Option<usize>, target: f64, row: &mut [f64]) -> (f64, f64) {
    bisect_row(s, skip, target, row, true)
}

/// [`calibrate_row`]'s bisection, its far steps decided by the estimate when `estimates`.
fn bisect_row(s: &[f64], skip: Option<usize>, target: f64, row: &mut [f64], estimates: bool) -> (f64, f64) {
    let m = s.len();
    let mean = s.iter().sum::<f64>() / (m - usize::from(skip.is_some())) as f64;
    let mut beta = if mean > 0.0 { 1.0 / mean } else { 1.0 };
    let (mut lo, mut hi) = (0.0f64, f64::INFINITY);
    let mut err = f64::INFINITY;
    for step in 0..200 {
        let estimate = if estimates && step < 199 { entropy_estimate(s, skip, beta) } else { f64::NAN };
        let decided = (estimate - target).abs() > PERPLEXITY_TOL + estimate_guard(m, estimate);
        let diff = if decided {
            estimate - target
        } else {
            let d = exact_entropy(s, skip, beta, row) - target;
            err = d.abs();
            if err <= PERPLEXITY_TOL {
                break;
            }
            d
        };
        if diff > 0.0 {
            lo = beta;
            beta = if hi.is_infinite() { 2.0 * beta } else { 0.5 * (beta + hi) };
        } else {
            hi = beta;
            beta = 0.5 * (lo + beta);
        }
    }
    (beta, err)
}

/// The entropy of the row at `beta`, writing the normalised row (the values every caller keeps).
fn exact_entropy(s: &[f64], skip: Option<usize>, beta: f64, row: &mut [f64]) -> f64 {
    let mut z = 0.0;
    let mut sp = 0.0;
    for j in 0..s.len() {
        let v = if Some(j) == skip { 0.0 } else { (-beta * s[j]).exp() };
        row[j] = v;
        z += v;
        sp += v * s[j];
    }
    for v in row.iter_mut() {
        *v /= z;
    }
    z.ln() + beta * sp / z
}

/// A bound on `|entropy_estimate - exact_entropy|` for a row of `m` entries whose estimate is
/// `h`. Both sum positive terms, so each sum is within `m eps` (relative) of the true one, and
/// each of the estimate's exponentials within [`EXP_ESTIMATE_REL`]; `H = ln z + beta <s>` with
/// both parts in `[0, H]`, so `|dH| <= (dz/z) + 2 |H| (dz/z)`. Four times that, plus an absolute
/// `1e-13`; NaN (no estimate) gives NaN, which decides nothing.
fn estimate_guard(m: usize, h: f64) -> f64 {
    let rel = 2.0 * (m as f64 + 8.0) * f64::EPSILON + EXP_ESTIMATE_REL;
    4.0 * rel * (1.0 + 2.0 * h.abs()) + 1e-13
}

/// Relative accuracy claimed for [`exp_estimate`] on `(-708, 0]` (measured: below 4e-16; the
/// test checks 1e-15 against `f64::exp` over the range).
const EXP_ESTIMATE_REL: f64 = 1e-14;

/// `exp(x)` for `x <= 0` without a library call, so that a loop over it vectorises: `x = k ln 2 +
/// r`, `|r| <= ln 2 / 2`, a degree-12 Taylor polynomial in `r` (remainder below 2e-17 relative),
/// times `2^k` built from the exponent bits. Below -708 (where `exp` leaves the normal range) it
/// returns 0, an absolute error under 3e-308.
#[inline(always)]
fn exp_estimate(x: f64) -> f64 {
    const LOG2E: f64 = std::f64::consts::LOG2_E;
    // ln 2 split so that k * LN2_HI is exact for |k| < 2^11
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    // 1.5 * 2^52: adding it rounds to an integer held in the low mantissa bits
    const SHIFTER: f64 = 6_755_399_441_055_744.0;
    let x = x.max(-708.0);
    let t = x * LOG2E + SHIFTER;
    let k = t - SHIFTER;
    let bits = t.to_bits().wrapping_sub(SHIFTER.to_bits()) as i64;
    let r = (x - k * LN2_HI) - k * LN2_LO;
    // 1 / k! for k = 12 down to 0 (Horner)
    const INV_FACTORIALS: [f64; 13] = [
        1.0 / 479_001_600.0,
        1.0 / 39_916_800.0,
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ];
    let mut p = INV_FACTORIALS[0];
    for &c in &INV_FACTORIALS[1..] {
        p = p * r + c;
    }
    let scale = f64::from_bits(((bits + 1023) as u64) << 52);
    let v = p * scale;
    if x <= -708.0 {
        0.0
    } else {
        v
    }
}

/// `ln z + beta sum_j v_j s_j / z`, `v_j = exp(-beta s_j)` over `j != skip`, by [`exp_estimate`]
/// in eight lanes (module doc of [`calibrate_row`]: only to decide steps far from the target).
fn entropy_estimate(s: &[f64], skip: Option<usize>, beta: f64) -> f64 {
    let (z, sp) = match skip {
        Some(i) => {
            let (a, b) = lane_sums(&s[..i], beta);
            let (c, d) = lane_sums(&s[i + 1..], beta);
            (a + c, b + d)
        }
        None => lane_sums(s, beta),
    };
    z.ln() + beta * sp / z
}

/// `(sum_j exp(-beta s_j), sum_j exp(-beta s_j) s_j)` by [`exp_estimate`], AVX2 when the CPU has
/// it (the same arithmetic either way).
fn lane_sums(s: &[f64], beta: f64) -> (f64, f64) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { lane_sums_avx2(s, beta) };
    }
    lane_sums_portable(s, beta)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn lane_sums_avx2(s: &[f64], beta: f64) -> (f64, f64) {
    lane_sums_portable(s, beta)
}

#[inline(always)]
fn lane_sums_portable(s: &[f64], beta: f64) -> (f64, f64) {
    let (mut z, mut sp) = ([0.0f64; 8], [0.0f64; 8]);
    let chunks = s.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        for l in 0..8 {
            let v = exp_estimate(-beta * c[l]);
            z[l] += v;
            sp[l] += v * c[l];
        }
    }
    let (mut zt, mut st) = (0.0, 0.0);
    for &sj in tail {
        let v = exp_estimate(-beta * sj);
        zt += v;
        st += v * sj;
    }
    (z.iter().sum::<f64>() + zt, sp.iter().sum::<f64>() + st)
}

/// Conditional affinities of perplexity `u` over each point's k nearest neighbours only (the
/// sparse P of Barnes-Hut and FFT t-SNE, k = min(N - 1, 3u) as scikit-learn and openTSNE take):
/// row i of the result holds `p_{j|i}` for `j` = `knn.indices[[i, r]]`, `r = 0..k`. Returns the
/// rows (in neighbour order), the precisions and `max_i |H_i - ln u|`.
pub fn perplexity_affinities_knn(knn: &crate::neighbours::Knn, perplexity: f64) -> (Array2<f64>, Vec<f64>, f64) {
    let (n, k) = knn.indices.dim();
    let target = perplexity.ln();
    let mut p = Array2::<f64>::zeros((n, k));
    let results: Vec<(f64, f64)> = p
        .axis_iter_mut(Axis(0))
        .into_par_iter()
        .enumerate()
        .map(|(i, mut row)| {
            let d = knn.sq_dists.row(i);
            let dmin = d.iter().copied().fold(f64::INFINITY, f64::min);
            let s: Vec<f64> = d.iter().map(|&v| (v - dmin).max(0.0)).collect();
            calibrate_row(&s, None, target, row.as_slice_mut().expect("rows of a standard-layout matrix are contiguous"))
        })
        .collect();
    let betas = results.iter().map(|r| r.0).collect();
    let err = results.iter().map(|r| r.1).fold(0.0, f64::max);
    (p, betas, err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn the_exponential_estimate_is_within_its_claim() {
        let mut worst = 0.0f64;
        for i in 0..200_000 {
            let x = -708.0 * i as f64 / 200_000.0;
            let (e, a) = (x.exp(), exp_estimate(x));
            worst = worst.max((a - e).abs() / e);
        }
        // well inside the claim the guard uses
        assert!(worst < 1e-15, "worst relative error {worst:e} (claimed {EXP_ESTIMATE_REL:e})");
        eprintln!("worst relative error of exp_estimate on (-708, 0]: {worst:.2e}");
        assert_eq!(exp_estimate(-800.0), 0.0);
        assert!(exp_estimate(-708.0) < 3e-308); // 0: below the normal range
        assert_eq!(exp_estimate(0.0), 1.0);
    }

    /// The bound the estimated steps rest on: over random rows and precisions the estimate lies
    /// within a quarter of [`estimate_guard`] (the bound without its 4x margin) of the exact
    /// evaluation.
    #[test]
    fn the_entropy_estimate_stays_within_its_guard() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut worst = 0.0f64;
        for case in 0..300 {
            let m = [5usize, 40, 333, 5000][case % 4];
            let scale = 10f64.powi(rng.gen_range(-4..5));
            let mut s: Vec<f64> = (0..m).map(|_| scale * rng.gen::<f64>().powi(rng.gen_range(1..4))).collect();
            let dmin = s.iter().copied().fold(f64::INFINITY, f64::min);
            s.iter_mut().for_each(|v| *v -= dmin);
            let skip = (case % 3 == 0).then(|| rng.gen_range(0..m));
            let beta = 10f64.powf(rng.gen_range(-3.0..3.0)) / scale;
            let mut row = vec![0.0; m];
            let (e, x) = (entropy_estimate(&s, skip, beta), exact_entropy(&s, skip, beta, &mut row));
            let ratio = (e - x).abs() / (0.25 * estimate_guard(m, e));
            worst = worst.max(ratio);
            assert!(ratio <= 1.0, "case {case}: estimate {e} against exact {x}");
        }
        eprintln!("largest |estimate - exact| / (guard / 4): {worst:.2e}");
    }

    /// The calibration with estimated steps gives the bits of the all-exact one (every step
    /// evaluated exactly: the loop before the estimate): the same beta,
    /// error and row, over rows of several lengths, scales and perplexities (with and without a
    /// skipped entry, ties, zeros and huge distances).
    #[test]
    fn estimated_steps_give_the_exact_calibration_bit_for_bit() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let mut estimated_rows = 0;
        for case in 0..400 {
            let m = [3usize, 9, 17, 64, 301, 2000][case % 6];
            let scale = 10f64.powi(rng.gen_range(-6..7));
            let mut s: Vec<f64> = (0..m).map(|_| scale * rng.gen::<f64>().powi(rng.gen_range(1..4))).collect();
            if case % 5 == 0 {
                s[m / 2] = s[0]; // a tie
            }
            if case % 7 == 0 {
                s[m - 1] = 1e300; // far beyond any exponent
            }
            let skip = (case % 2 == 0).then(|| rng.gen_range(0..m));
            if let Some(i) = skip {
                s[i] = 0.0;
            }
            let dmin = s.iter().enumerate().filter(|(j, _)| Some(*j) != skip).map(|(_, &v)| v).fold(f64::INFINITY, f64::min);
            for (j, v) in s.iter_mut().enumerate() {
                *v = if Some(j) == skip { 0.0 } else { (*v - dmin).max(0.0) };
            }
            let free = m - usize::from(skip.is_some());
            if free < 2 {
                continue;
            }
            let perplexity = rng.gen_range(1.0..(free as f64).max(1.5));
            let target = perplexity.ln();
            let (mut r1, mut r2) = (vec![0.0; m], vec![0.0; m]);
            let a = calibrate_row(&s, skip, target, &mut r1);
            let b = bisect_row(&s, skip, target, &mut r2, false);
            assert_eq!(a.0.to_bits(), b.0.to_bits(), "case {case}: beta");
            assert_eq!(a.1.to_bits(), b.1.to_bits(), "case {case}: error");
            assert!(r1.iter().zip(&r2).all(|(x, y)| x.to_bits() == y.to_bits()), "case {case}: row");
            estimated_rows += 1;
        }
        assert!(estimated_rows > 300);
    }
}
