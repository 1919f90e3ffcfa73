//! Exact 1-NN leave-one-out: against an O(N^2) brute force, with ties, and across thread counts.

use ndarray::{array, Array2, ArrayView2};
use rand::{seq::SliceRandom, Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use rand_xoshiro::Xoshiro256PlusPlus;
use structdr_eval::{loocv_1nn_accuracy, nearest_neighbours_loo, EvalError};

/// Direct differences, ascending j, strict `<`: the lowest index among exact ties.
fn brute_nn(y: ArrayView2<f64>) -> Vec<usize> {
    let n = y.nrows();
    (0..n)
        .map(|i| {
            let mut best = usize::MAX;
            let mut bd = f64::INFINITY;
            for j in (0..n).filter(|&j| j != i) {
                let mut e = 0.0;
                for (a, b) in y.row(i).iter().zip(y.row(j).iter()) {
                    e += (a - b) * (a - b);
                }
                if e < bd || best == usize::MAX {
                    bd = e;
                    best = j;
                }
            }
            best
        })
        .collect()
}

fn gaussian(rng: &mut Xoshiro256PlusPlus, n: usize, d: usize) -> Array2<f64> {
    Array2::from_shape_fn((n, d), |_| StandardNormal.sample(rng))
}

#[test]
fn hand_example() {
    // 1-D points 0, 1, 3, 10, 11 with classes a a b b b:
    // nn = 1, 0, 1 (d=4 < 7), 4, 3 -> hits: yes, yes, no (a vs b), yes, yes -> 4/5.
    let y = array![[0.0], [1.0], [3.0], [10.0], [11.0]];
    assert_eq!(nearest_neighbours_loo(y.view()).unwrap(), vec![1, 0, 1, 4, 3]);
    assert_eq!(loocv_1nn_accuracy(y.view(), &[0i64, 0, 1, 1, 1]).unwrap(), 0.8);
    // tie: 0 is at distance 1 from both 1 and 2 -> the lower index 1
    let y = array![[0.0], [1.0], [-1.0]];
    assert_eq!(nearest_neighbours_loo(y.view()).unwrap(), vec![1, 0, 0]);
}

#[test]
fn random_continuous_data() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    for (n, d) in [(2, 1), (3, 2), (300, 5), (1100, 8), (700, 40)] {
        let y = gaussian(&mut rng, n, d);
        assert_eq!(nearest_neighbours_loo(y.view()).unwrap(), brute_nn(y.view()), "{n} x {d}");
    }
}

#[test]
fn exact_duplicates() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(2);
    let base = gaussian(&mut rng, 200, 6);
    // 600 rows: every base row 1-4 times, shuffled
    let mut rows: Vec<usize> = (0..600).map(|i| if i < 200 { i } else { rng.gen_range(0..200) }).collect();
    rows.shuffle(&mut rng);
    let y = base.select(ndarray::Axis(0), &rows);
    let nn = nearest_neighbours_loo(y.view()).unwrap();
    assert_eq!(nn, brute_nn(y.view()));
    // a duplicated point's neighbour is its lowest-index twin (distance exactly 0)
    for i in 0..600 {
        let twins: Vec<usize> = (0..600).filter(|&j| j != i && rows[j] == rows[i]).collect();
        if let Some(&first) = twins.first() {
            assert_eq!(nn[i], first);
        }
    }
}

#[test]
fn integer_grid_many_ties() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    for (n, d, hi) in [(500, 3, 3), (800, 2, 20), (400, 5, 1)] {
        let y = Array2::from_shape_fn((n, d), |_| rng.gen_range(-hi..=hi) as f64);
        assert_eq!(nearest_neighbours_loo(y.view()).unwrap(), brute_nn(y.view()), "grid {n} x {d}");
        // scaled and shifted far from the origin: a GEMM-cancellation stress test
        let y2 = y.mapv(|v| 1e6 + 0.5 * v);
        assert_eq!(nearest_neighbours_loo(y2.view()).unwrap(), brute_nn(y2.view()));
    }
}

#[test]
fn far_apart_tight_clusters() {
    // centring cannot help here: norms ~1e12, within-cluster distances ~1e-6
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
    let mut y = gaussian(&mut rng, 400, 4).mapv(|v| 1e-3 * v);
    for i in 0..400 {
        let off = if i % 2 == 0 { 1e6 } else { -1e6 };
        y.row_mut(i).mapv_inplace(|v| v + off);
    }
    assert_eq!(nearest_neighbours_loo(y.view()).unwrap(), brute_nn(y.view()));
}

#[test]
fn independent_of_thread_count() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let y = Array2::from_shape_fn((1500, 4), |_| rng.gen_range(0..4) as f64 * 0.1);
    let labels: Vec<i64> = (0..1500).map(|_| rng.gen_range(0..5)).collect();
    let run = |t: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .unwrap()
            .install(|| (nearest_neighbours_loo(y.view()).unwrap(), loocv_1nn_accuracy(y.view(), &labels).unwrap()))
    };
    let (nn1, a1) = run(1);
    let (nn2, a2) = run(2);
    // and with single-threaded OpenBLAS (a process-wide setting, restored afterwards)
    let (nn3, _) = structdr_linalg::blas::with_threads(1, || run(2));
    assert_eq!(nn1, nn2);
    assert_eq!(nn1, nn3);
    assert_eq!(a1.to_bits(), a2.to_bits());
    assert_eq!(nn1, brute_nn(y.view()));
}

#[test]
fn accuracy_matches_brute_force() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(6);
    let y = gaussian(&mut rng, 500, 3);
    let labels: Vec<i64> = (0..500).map(|i| (y[[i, 0]] > 0.0) as i64 * 10 - 3).collect();
    let nn = brute_nn(y.view());
    let want = (0..500).filter(|&i| labels[i] == labels[nn[i]]).count() as f64 / 500.0;
    assert_eq!(loocv_1nn_accuracy(y.view(), &labels).unwrap(), want);
    assert!(want > 0.8);
}

#[test]
fn bad_input_is_an_error() {
    let y = array![[0.0, 1.0], [2.0, 3.0]];
    assert!(matches!(loocv_1nn_accuracy(y.view(), &[0i64]), Err(EvalError::LengthMismatch { .. })));
    let one = array![[0.0, 1.0]];
    assert!(matches!(loocv_1nn_accuracy(one.view(), &[0i64]), Err(EvalError::TooFewSamples { .. })));
    let empty = Array2::<f64>::zeros((0, 3));
    assert!(matches!(nearest_neighbours_loo(empty.view()), Err(EvalError::TooFewSamples { .. })));
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let y = array![[0.0, 1.0], [bad, 3.0], [1.0, 1.0]];
        assert!(matches!(loocv_1nn_accuracy(y.view(), &[0i64, 1, 0]), Err(EvalError::NotFinite { .. })));
    }
}
