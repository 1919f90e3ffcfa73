//! The nightly speed comparison ([`crate::nightly`]) as pure functions over sample sets.
//!
//! **Paired.** The baseline binary (the last accepted run's commit) and the candidate run
//! interleaved on the same machine in the same run, one baseline sample and one candidate sample
//! per pair. Whatever speed the machine has during a pair (a slower VM, a busy neighbour, thermal
//! state) multiplies both samples of the pair and cancels in their ratio. A case's ratio is the
//! median of its per-pair ratios `candidate / baseline`; its interval is the percentile bootstrap
//! interval of that median ([`CONFIDENCE`], deterministic resampling). A case regresses when the
//! interval's lower bound exceeds `1 + min_relative` (the slow-down is larger than the threshold
//! beyond the pairs' own noise) and the median candidate time exceeds the median baseline time by
//! more than `min_seconds` (millisecond cases are at the timer's mercy).
//!
//! **Stored times.** Absolute times of earlier runs are kept for the trend page. Compared with
//! the accepted run's stored times, a slow-down of (nearly) every case by a common factor is a
//! property of the machine, not of the code: [`uniform_shift`] names it once.

/// Two-sided coverage of the bootstrap interval of a case's ratio.
pub const CONFIDENCE: f64 = 0.90;

/// Bootstrap resamples per case.
const RESAMPLES: usize = 2000;

pub use structdr_numerics::stats::median;

/// The verdict on one speed case from paired samples.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedCase {
    /// The case id.
    pub id: String,
    /// Median of the per-pair ratios `candidate / baseline`.
    pub ratio: f64,
    /// Bootstrap interval of that median ([`CONFIDENCE`]).
    pub interval: (f64, f64),
    /// Median baseline seconds.
    pub baseline: f64,
    /// Median candidate seconds.
    pub candidate: f64,
    /// Pairs the verdict rests on.
    pub pairs: usize,
    /// Whether the case is a regression (see the module documentation).
    pub regressed: bool,
}

/// A small deterministic generator (SplitMix64): the interval of one sample set is always the
/// same, so a verdict can be reproduced from the history line alone.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Percentile bootstrap interval (two-sided, `confidence`) of the median of `values`; a single
/// value gives a point interval.
pub fn bootstrap_median_interval(values: &[f64], confidence: f64) -> (f64, f64) {
    let n = values.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mut rng = SplitMix(0x5EED_0000 ^ n as u64);
    let mut medians: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let draw: Vec<f64> = (0..n).map(|_| values[(rng.next() % n as u64) as usize]).collect();
            median(&draw)
        })
        .collect();
    medians.sort_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0;
    let at = |q: f64| medians[((q * (RESAMPLES - 1) as f64).round() as usize).min(RESAMPLES - 1)];
    (at(tail), at(1.0 - tail))
}

/// Judges one case from its paired samples (`baseline[i]` and `candidate[i]` timed in pair `i`;
/// extra samples of the longer side, a pair cut short by a failure, are dropped).
pub fn judge_case(id: &str, baseline: &[f64], candidate: &[f64], min_relative: f64, min_seconds: f64) -> Option<PairedCase> {
    let pairs: Vec<(f64, f64)> = baseline.iter().zip(candidate).map(|(&b, &c)| (b, c)).filter(|(b, c)| *b > 0.0 && c.is_finite()).collect();
    if pairs.is_empty() {
        return None;
    }
    let ratios: Vec<f64> = pairs.iter().map(|(b, c)| c / b).collect();
    let ratio = median(&ratios);
    let interval = bootstrap_median_interval(&ratios, CONFIDENCE);
    let (b, c) = (median(&pairs.iter().map(|p| p.0).collect::<Vec<_>>()), median(&pairs.iter().map(|p| p.1).collect::<Vec<_>>()));
    let regressed = interval.0 > 1.0 + min_relative && c - b > min_seconds;
    Some(PairedCase { id: id.to_string(), ratio, interval, baseline: b, candidate: c, pairs: pairs.len(), regressed })
}

/// A common factor by which (nearly) every case moved: the median of the cases' ratios, when it
/// exceeds `1 + min_relative` and at least three quarters of the cases (three or more) each
/// exceed `1 + min_relative`. Against stored absolute times that is the machine; in a paired
/// comparison it is a cause every case shares (the BLAS, the evaluation kernels, the build).
pub fn uniform_shift(ratios: &[f64], min_relative: f64) -> Option<f64> {
    let finite: Vec<f64> = ratios.iter().copied().filter(|r| r.is_finite()).collect();
    if finite.len() < 3 {
        return None;
    }
    let common = median(&finite);
    let slower = finite.iter().filter(|&&r| r > 1.0 + min_relative).count();
    (common > 1.0 + min_relative && 4 * slower >= 3 * finite.len()).then_some(common)
}

/// Sorts regressions largest first by `size` (a ratio; cases without one last, by id).
pub fn rank_by<T>(items: &mut [T], size: impl Fn(&T) -> Option<f64>, id: impl Fn(&T) -> &str) {
    items.sort_by(|a, b| match (size(a), size(b)) {
        (Some(x), Some(y)) => y.total_cmp(&x).then_with(|| id(a).cmp(id(b))),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => id(a).cmp(id(b)),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A machine whose speed drifts from pair to pair (each pair's factor in [0.6, 1.9], both
    /// sides of the pair under it, with 3% own jitter per sample).
    fn drifting(cases: &[(&str, f64, f64)], pairs: usize, seed: u64) -> Vec<(String, Vec<f64>, Vec<f64>)> {
        let mut rng = SplitMix(seed);
        let mut u = move || (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        let mut out: Vec<(String, Vec<f64>, Vec<f64>)> = cases.iter().map(|(id, _, _)| (id.to_string(), vec![], vec![])).collect();
        for _ in 0..pairs {
            let machine = 0.6 + 1.3 * u();
            for (i, (_, secs, slowdown)) in cases.iter().enumerate() {
                out[i].1.push(secs * machine * (0.97 + 0.06 * u()));
                out[i].2.push(secs * slowdown * machine * (0.97 + 0.06 * u()));
            }
        }
        out
    }

    const CASES: [(&str, f64, f64); 5] =
        [("pca: fit", 0.3, 1.0), ("le: fit", 2.0, 1.0), ("lle: fit", 1.5, 1.0), ("le: evaluation", 0.03, 1.0), ("pca: evaluation", 0.002, 1.0)];

    /// Unchanged code on a machine whose speed changes by up to 3x between pairs: no case is a
    /// regression, for many drifts.
    #[test]
    fn a_drifting_machine_raises_no_alarm() {
        for seed in 0..200 {
            for (id, b, c) in drifting(&CASES, 3, seed) {
                let v = judge_case(&id, &b, &c, 0.10, 0.005).unwrap();
                assert!(!v.regressed, "seed {seed}: {v:?}");
                assert!(v.interval.0 <= v.ratio && v.ratio <= v.interval.1);
            }
        }
    }

    /// One method made 2x slower under the same drift: that case and only that case regresses,
    /// with a ratio near 2.
    #[test]
    fn a_twice_slower_method_is_flagged_alone() {
        let mut cases = CASES;
        cases[1].2 = 2.0;
        for seed in 0..200 {
            let flagged: Vec<PairedCase> =
                drifting(&cases, 3, seed).iter().filter_map(|(id, b, c)| judge_case(id, b, c, 0.10, 0.005)).filter(|v| v.regressed).collect();
            assert_eq!(flagged.len(), 1, "seed {seed}: {flagged:?}");
            assert_eq!(flagged[0].id, "le: fit");
            assert!((flagged[0].ratio - 2.0).abs() < 0.15 && flagged[0].interval.0 > 1.1, "{:?}", flagged[0]);
        }
        // a millisecond case made 2x slower is below min_seconds
        let v = judge_case("e", &[0.001, 0.001, 0.001], &[0.002, 0.002, 0.002], 0.10, 0.005).unwrap();
        assert!(!v.regressed && (v.ratio - 2.0).abs() < 1e-12);
    }

    /// The interval must clear 1 + min_relative: one slow pair of three is noise, three are not.
    #[test]
    fn the_interval_decides() {
        assert!(!judge_case("c", &[1.0, 1.0, 1.0], &[1.0, 1.0, 1.5], 0.10, 0.0).unwrap().regressed);
        assert!(!judge_case("c", &[1.0, 1.0, 1.0], &[1.05, 1.08, 1.09], 0.10, 0.0).unwrap().regressed);
        let v = judge_case("c", &[1.0, 1.0, 1.0], &[1.3, 1.2, 1.25], 0.10, 0.0).unwrap();
        assert!(v.regressed && v.interval == (1.2, 1.3) && v.ratio == 1.25, "{v:?}");
        // unequal lengths: the unpaired tail is dropped
        assert_eq!(judge_case("c", &[1.0, 1.0], &[2.0, 2.0, 9.0], 0.1, 0.0).unwrap().pairs, 2);
        assert!(judge_case("c", &[], &[1.0], 0.1, 0.0).is_none());
    }

    /// Every case 1.4x slower (the same code on a slower machine, against stored times) is one
    /// shift; a single slow case among steady ones, or a faster machine, is not.
    #[test]
    fn a_uniform_slowdown_is_one_shift() {
        let all = [1.38, 1.42, 1.40, 1.45, 1.36, 1.41];
        assert!((uniform_shift(&all, 0.10).unwrap() - 1.405).abs() < 1e-12);
        assert_eq!(uniform_shift(&[1.0, 0.98, 3.0, 1.02, 1.01], 0.10), None);
        assert_eq!(uniform_shift(&[0.7, 0.72, 0.69], 0.10), None);
        assert_eq!(uniform_shift(&[1.5, 1.5], 0.10), None, "too few cases to tell");
        // a real regression of one case on a slower machine: still the shift
        assert!(uniform_shift(&[1.4, 1.4, 1.4, 4.0, 1.4], 0.10).is_some());
    }

    #[test]
    fn ranking_is_largest_first() {
        let mut v = vec![("a", Some(1.2)), ("q", None), ("b", Some(4.0)), ("c", Some(1.9))];
        rank_by(&mut v, |x| x.1, |x| x.0);
        assert_eq!(v.iter().map(|x| x.0).collect::<Vec<_>>(), ["b", "c", "a", "q"]);
    }
}
