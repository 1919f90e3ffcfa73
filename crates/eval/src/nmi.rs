//! Normalised mutual information with the four usual normalisers.

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::labels::{contingency, Label};

/// The normaliser of [`nmi`]: `NMI = I(P; T) / norm(H(P), H(T))`.
///
/// For any two partitions `max >= arithmetic >= geometric >= min` (mean inequalities), so
/// `NMI_max <= NMI_arithmetic <= NMI_geometric <= NMI_min`.
///
/// Serialised in lowercase (`"max"`, `"arithmetic"`, `"geometric"`, `"min"`), matching
/// scikit-learn's `average_method` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NmiNorm {
    /// `max(H(P), H(T))`: Deng Cai's `MutualInfo.m` and Nie-style `ClusteringMeasure.m`, the
    /// convention of the structure-learning DR papers (REFERENCES.md §3.2). The default.
    #[default]
    Max,
    /// `(H(P) + H(T)) / 2`: scikit-learn >= 0.22 default.
    Arithmetic,
    /// `sqrt(H(P) H(T))`: Strehl & Ghosh 2002, scikit-learn < 0.22.
    Geometric,
    /// `min(H(P), H(T))`.
    Min,
}

impl NmiNorm {
    /// All four normalisers, in the order `max, arithmetic, geometric, min`.
    pub const ALL: [NmiNorm; 4] = [NmiNorm::Max, NmiNorm::Arithmetic, NmiNorm::Geometric, NmiNorm::Min];

    /// The normaliser applied to the two entropies.
    pub fn normaliser(self, h1: f64, h2: f64) -> f64 {
        match self {
            NmiNorm::Max => h1.max(h2),
            NmiNorm::Arithmetic => 0.5 * (h1 + h2),
            NmiNorm::Geometric => (h1 * h2).sqrt(),
            NmiNorm::Min => h1.min(h2),
        }
    }
}

/// Entropies and mutual information of two labelings, in nats.
///
/// With the contingency table `n_{rc}`, row sums `a_r`, column sums `b_c` and `N` samples:
/// `H(P) = -sum_r (a_r/N) ln(a_r/N)`, `H(T) = -sum_c (b_c/N) ln(b_c/N)`,
/// `I(P;T) = sum_{r,c: n_rc>0} (n_rc/N) ln(N n_rc / (a_r b_c))`, clipped at 0.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct InformationStats {
    /// `H(P)` of the predicted labels (nats).
    pub h_pred: f64,
    /// `H(T)` of the true labels (nats).
    pub h_truth: f64,
    /// `I(P; T)` (nats, >= 0).
    pub mi: f64,
    /// Number of distinct predicted labels.
    pub n_pred: usize,
    /// Number of distinct true labels.
    pub n_truth: usize,
}

/// `H`, `H` and `I` of two labelings (see [`InformationStats`]).
///
/// The terms are evaluated as scikit-learn's `mutual_info_score` and `entropy` do (including its
/// zeroing of single MI terms below machine epsilon), so values agree with it to ~1e-15.
///
/// Errors: length mismatch or empty input.
pub fn information<P: Label, T: Label>(pred: &[P], truth: &[T]) -> Result<InformationStats> {
    let (c, rows, cols) = contingency(pred, truth)?;
    let n = pred.len() as f64;
    let ln_n = n.ln();
    let a: Vec<f64> = c.rows().into_iter().map(|r| r.sum() as f64).collect();
    let b: Vec<f64> = c.columns().into_iter().map(|k| k.sum() as f64).collect();
    let entropy = |s: &[f64]| -> f64 {
        if s.len() == 1 {
            return 0.0;
        }
        -s.iter().map(|&x| (x / n) * (x.ln() - ln_n)).sum::<f64>()
    };
    let mut mi = 0.0;
    if a.len() > 1 && b.len() > 1 {
        for ((r, k), &cnt) in c.indexed_iter() {
            if cnt == 0 {
                continue;
            }
            let nrc = cnt as f64;
            let p = nrc / n;
            let term = p * (nrc.ln() - ln_n) + p * (-(a[r] * b[k]).ln() + ln_n + ln_n);
            if term.abs() >= f64::EPSILON {
                mi += term;
            }
        }
    }
    Ok(InformationStats { h_pred: entropy(&a), h_truth: entropy(&b), mi: mi.max(0.0), n_pred: rows.len(), n_truth: cols.len() })
}

/// Normalised mutual information `NMI = I(P; T) / norm(H(P), H(T))` (see [`NmiNorm`]).
///
/// `I` and `H` are as in [`information`]. Natural logarithms are used; since numerator and
/// denominator carry the same logarithm base, the base cancels and NMI is base-independent
/// (Cai's `MutualInfo.m` uses log2 and gives the same number).
///
/// Degenerate cases follow scikit-learn's `normalized_mutual_info_score`:
/// - both labelings have a single cluster (both entropies 0): a perfect match, NMI = 1;
/// - exactly one labeling has a single cluster: `I = 0`, NMI = 0 (for every normaliser, even
///   `Min`, whose normaliser is then 0);
/// - otherwise, whenever `I = 0`, NMI = 0.
///
/// Not applied: Cai's "smoothing" (appending one copy of each label when the cluster counts
/// differ) and Nie's `+eps` per cell, which shift values slightly on tiny partitions.
///
/// Result in `[0, 1]`; 1 for identical partitions (up to relabelling).
///
/// Errors: length mismatch or empty input.
pub fn nmi<P: Label, T: Label>(pred: &[P], truth: &[T], norm: NmiNorm) -> Result<f64> {
    let s = information(pred, truth)?;
    Ok(nmi_from_stats(&s, norm))
}

/// [`nmi`] from precomputed [`InformationStats`] (to get all four normalisers from one table).
pub fn nmi_from_stats(s: &InformationStats, norm: NmiNorm) -> f64 {
    if s.n_pred == 1 && s.n_truth == 1 {
        return 1.0;
    }
    if s.n_pred == 1 || s.n_truth == 1 || s.mi == 0.0 {
        return 0.0;
    }
    let d = norm.normaliser(s.h_pred, s.h_truth);
    if d <= 0.0 {
        return 0.0;
    }
    (s.mi / d).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_abs_diff_eq;

    #[test]
    fn hand_computed_small_example() {
        // pred [0,0,1,1,2,2] vs truth [0,0,0,1,1,1]; table [[2,0],[1,1],[0,2]], N = 6.
        // H(P) = ln 3, H(T) = ln 2.
        // I = (2/6) ln(6*2/(2*3)) + (1/6) ln(6/(2*3)) + (1/6) ln(1) + (2/6) ln(2) = (2/3) ln 2.
        let p = [0usize, 0, 1, 1, 2, 2];
        let t = [0i64, 0, 0, 1, 1, 1];
        let s = information(&p, &t).unwrap();
        let (l2, l3) = (2f64.ln(), 3f64.ln());
        assert_abs_diff_eq!(s.h_pred, l3, epsilon = 1e-15);
        assert_abs_diff_eq!(s.h_truth, l2, epsilon = 1e-15);
        assert_abs_diff_eq!(s.mi, 2.0 / 3.0 * l2, epsilon = 1e-15);
        let mi = 2.0 / 3.0 * l2;
        assert_abs_diff_eq!(nmi(&p, &t, NmiNorm::Max).unwrap(), mi / l3, epsilon = 1e-15); // 0.4206
        assert_abs_diff_eq!(nmi(&p, &t, NmiNorm::Min).unwrap(), 2.0 / 3.0, epsilon = 1e-15);
        assert_abs_diff_eq!(nmi(&p, &t, NmiNorm::Arithmetic).unwrap(), mi / ((l2 + l3) / 2.0), epsilon = 1e-15);
        assert_abs_diff_eq!(nmi(&p, &t, NmiNorm::Geometric).unwrap(), mi / (l2 * l3).sqrt(), epsilon = 1e-15);
    }

    #[test]
    fn degenerate_cases() {
        assert_eq!(nmi(&[1usize, 1, 1], &[5i64, 5, 5], NmiNorm::Max).unwrap(), 1.0);
        for norm in NmiNorm::ALL {
            assert_eq!(nmi(&[1usize, 1, 1, 1], &[0i64, 1, 0, 1], norm).unwrap(), 0.0);
            assert_eq!(nmi(&[0usize, 1, 2, 3], &[7i64, 7, 7, 7], norm).unwrap(), 0.0);
            // independent: I = 0 exactly
            assert_eq!(nmi(&[0usize, 0, 1, 1], &[0i64, 1, 0, 1], norm).unwrap(), 0.0);
            assert_eq!(nmi(&[3usize, 3, 9, 9], &[-1i64, -1, 4, 4], norm).unwrap(), 1.0);
        }
        assert!(nmi::<usize, i64>(&[], &[], NmiNorm::Max).is_err());
        assert!(nmi(&[0usize], &[0i64, 1], NmiNorm::Max).is_err());
    }

    #[test]
    fn serde_names() {
        assert_eq!(serde_json::to_string(&NmiNorm::Geometric).unwrap(), "\"geometric\"");
        let n: NmiNorm = serde_json::from_str("\"max\"").unwrap();
        assert_eq!(n, NmiNorm::Max);
        assert_eq!(NmiNorm::default(), NmiNorm::Max);
    }
}
