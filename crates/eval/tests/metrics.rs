//! ACC / NMI against hand-computed values, invariances and scikit-learn / scipy references.

use approx::assert_abs_diff_eq;
use rand::{seq::SliceRandom, Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use structdr_eval::{contingency, hungarian_acc, information, nmi, nmi_from_stats, EvalError, NmiNorm};

#[test]
fn acc_hand_computed() {
    // pred [0,0,1,1,2,2] vs truth [0,0,0,1,1,1]: C = [[2,0],[1,1],[0,2]];
    // best map 0->0 (2) and 2->1 (2), cluster 1 unmatched: ACC = 4/6.
    assert_abs_diff_eq!(hungarian_acc(&[0usize, 0, 1, 1, 2, 2], &[0i64, 0, 0, 1, 1, 1]).unwrap(), 4.0 / 6.0);
    // C = [[1,1],[1,1],[1,1]]: any matching gets 2 of 6.
    assert_abs_diff_eq!(hungarian_acc(&[0usize, 1, 2, 0, 1, 2], &[0i64, 0, 0, 1, 1, 1]).unwrap(), 2.0 / 6.0);
    // one cluster, three classes: C = [[2,1,1]], ACC = 2/4.
    assert_abs_diff_eq!(hungarian_acc(&[5usize, 5, 5, 5], &[0i64, 0, 1, 2]).unwrap(), 0.5);
    // relabelled perfect partition.
    assert_eq!(hungarian_acc(&[2usize, 2, 0, 0, 1], &[0i64, 0, 1, 1, 2]).unwrap(), 1.0);
    // C = [[3,1],[2,0]]: one-to-one maps give 0->0,1->1: 3 + 0 or 0->1,1->0: 1 + 2, so ACC = 3/6;
    // a many-to-one "majority class per cluster" map (purity) would give 5/6.
    assert_abs_diff_eq!(hungarian_acc(&[0usize, 0, 0, 0, 1, 1], &[0i64, 0, 0, 1, 0, 0]).unwrap(), 0.5);
}

#[test]
fn errors_not_panics() {
    assert!(matches!(hungarian_acc::<usize, i64>(&[], &[]), Err(EvalError::TooFewSamples { .. })));
    assert!(matches!(hungarian_acc(&[0usize, 1], &[0i64]), Err(EvalError::LengthMismatch { .. })));
    assert!(matches!(nmi(&[0usize, 1], &[0i64], NmiNorm::Max), Err(EvalError::LengthMismatch { .. })));
    assert!(contingency::<i64, i64>(&[], &[]).is_err());
}

fn random_labels(rng: &mut Xoshiro256PlusPlus, n: usize, k: i64) -> Vec<i64> {
    (0..n).map(|_| rng.gen_range(0..k)).collect()
}

/// Brute-force ACC: all injective maps from clusters to classes (padded with "no class").
fn brute_acc(pred: &[i64], truth: &[i64]) -> f64 {
    let (c, _, _) = contingency(pred, truth).unwrap();
    fn rec(c: &ndarray::Array2<usize>, r: usize, used: &mut Vec<bool>) -> usize {
        if r == c.nrows() {
            return 0;
        }
        let mut best = rec(c, r + 1, used); // cluster r unmatched
        for k in 0..c.ncols() {
            if !used[k] {
                used[k] = true;
                best = best.max(c[[r, k]] + rec(c, r + 1, used));
                used[k] = false;
            }
        }
        best
    }
    rec(&c, 0, &mut vec![false; c.ncols()]) as f64 / pred.len() as f64
}

#[test]
fn acc_matches_brute_force_and_is_permutation_invariant() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    for _ in 0..200 {
        let n = rng.gen_range(1..40);
        let kp = rng.gen_range(1..6);
        let kt = rng.gen_range(1..6);
        let pred = random_labels(&mut rng, n, kp);
        let truth = random_labels(&mut rng, n, kt);
        let acc = hungarian_acc(&pred, &truth).unwrap();
        assert_abs_diff_eq!(acc, brute_acc(&pred, &truth), epsilon = 1e-15);
        // relabel both with random bijections and shuffle the samples jointly
        let mut perm_p: Vec<i64> = (0..kp).map(|v| 100 - 7 * v).collect();
        perm_p.shuffle(&mut rng);
        let mut perm_t: Vec<i64> = (0..kt).map(|v| -3 * v).collect();
        perm_t.shuffle(&mut rng);
        let mut idx: Vec<usize> = (0..n).collect();
        idx.shuffle(&mut rng);
        let p2: Vec<i64> = idx.iter().map(|&i| perm_p[pred[i] as usize]).collect();
        let t2: Vec<i64> = idx.iter().map(|&i| perm_t[truth[i] as usize]).collect();
        assert_abs_diff_eq!(hungarian_acc(&p2, &t2).unwrap(), acc, epsilon = 1e-15);
        for norm in NmiNorm::ALL {
            let a = nmi(&pred, &truth, norm).unwrap();
            assert_abs_diff_eq!(nmi(&p2, &t2, norm).unwrap(), a, epsilon = 1e-12);
            // symmetric in its arguments
            assert_abs_diff_eq!(nmi(&truth, &pred, norm).unwrap(), a, epsilon = 1e-12);
            assert!((0.0..=1.0).contains(&a));
        }
    }
}

#[test]
fn nmi_ordering_max_le_arith_le_geom_le_min() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
    for _ in 0..300 {
        let n = rng.gen_range(2..80);
        let (kp, kt) = (rng.gen_range(1..8), rng.gen_range(1..8));
        let pred = random_labels(&mut rng, n, kp);
        let truth = random_labels(&mut rng, n, kt);
        let s = information(&pred, &truth).unwrap();
        let v: Vec<f64> = NmiNorm::ALL.iter().map(|&m| nmi_from_stats(&s, m)).collect();
        for w in v.windows(2) {
            assert!(w[0] <= w[1] + 1e-15, "{v:?}");
        }
    }
}

#[test]
fn identical_partitions_have_nmi_and_acc_one() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let truth = random_labels(&mut rng, 100, 6);
    let pred: Vec<usize> = truth.iter().map(|&t| (5 - t) as usize * 3).collect();
    assert_eq!(hungarian_acc(&pred, &truth).unwrap(), 1.0);
    for norm in NmiNorm::ALL {
        assert_abs_diff_eq!(nmi(&pred, &truth, norm).unwrap(), 1.0, epsilon = 1e-14);
    }
}

#[derive(serde::Deserialize)]
struct Fixture {
    cases: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    name: String,
    pred: Vec<i64>,
    truth: Vec<i64>,
    acc: f64,
    nmi: std::collections::HashMap<NmiNorm, f64>,
}

#[test]
fn matches_sklearn_and_scipy_reference() {
    let text = include_str!("fixtures/sklearn_reference.json");
    let f: Fixture = serde_json::from_str(text).unwrap();
    assert!(f.cases.len() >= 10);
    for c in &f.cases {
        let acc = hungarian_acc(&c.pred, &c.truth).unwrap();
        assert_abs_diff_eq!(acc, c.acc, epsilon = 1e-15);
        assert_eq!(c.nmi.len(), 4, "{}", c.name);
        for (&norm, &want) in &c.nmi {
            let got = nmi(&c.pred, &c.truth, norm).unwrap();
            assert!((got - want).abs() <= 1e-12, "{} {norm:?}: {got} vs sklearn {want}", c.name);
        }
    }
}
