//! Issue 29 ("no silent result"): the metrics on an embedding multiplied by 1e300, 1e154 or
//! 1e-300 give the scores of the unscaled embedding (squared distances used to overflow to inf or
//! underflow to 0), and a power-of-two multiple gives the very same bits. k-means' tolerance is an
//! absolute centre shift in the data's units, so it is scaled with the data where the claim is
//! "the same run".

use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use structdr_eval::{kmeans_fit, kmeans_protocol, kmeans_protocol_with, loocv_1nn_accuracy, nearest_neighbours_loo, neighbourhood_preservation, KmeansOptions};

/// Three noisy blobs in 3-D (labels 0, 1, 2), 90 points.
fn blobs() -> (Array2<f64>, Vec<i64>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let centres = [[0.0, 0.0, 0.0], [3.0, 0.5, -1.0], [-1.0, 2.5, 2.0]];
    let n = 90;
    let labels: Vec<i64> = (0..n).map(|i| (i % 3) as i64).collect();
    let y = Array2::from_shape_fn((n, 3), |(i, j)| centres[i % 3][j] + rng.gen_range(-2.0..2.0));
    (y, labels)
}

#[test]
fn extreme_scales_score_as_the_unscaled_embedding() {
    let (y, l) = blobs();
    let acc = loocv_1nn_accuracy(y.view(), &l).unwrap();
    let nn = nearest_neighbours_loo(y.view()).unwrap();
    let km = kmeans_protocol(y.view(), &l, 3, 10, 7).unwrap();
    let x = Array2::from_shape_fn((90, 5), |(i, j)| y[[i, j % 3]] + 0.1 * j as f64);
    let np = neighbourhood_preservation(x.view(), y.view(), 5).unwrap();
    assert!(acc > 0.5 && acc < 1.0, "a test with something to get wrong: {acc}");
    for f in [1e300, 1e154, 1e-300] {
        let ys = y.mapv(|v| v * f);
        assert_eq!(loocv_1nn_accuracy(ys.view(), &l).unwrap(), acc, "x {f:e}");
        assert_eq!(nearest_neighbours_loo(ys.view()).unwrap(), nn, "x {f:e}");
        // the tolerance (an absolute centre shift) scaled with the data; at 1e300 and 1e154 the
        // default one is as negligible as on the unscaled data, and gives the same run too
        let scaled = KmeansOptions { tolerance: KmeansOptions::default().tolerance * f, ..Default::default() };
        let mut runs = vec![kmeans_protocol_with(ys.view(), &l, 3, 10, 7, &scaled).unwrap()];
        if f > 1.0 {
            runs.push(kmeans_protocol(ys.view(), &l, 3, 10, 7).unwrap());
        }
        for k in runs {
            assert_eq!(
                (k.acc_mean, k.nmi_mean, k.acc_best_sse, k.nmi_best_sse, k.best_sse_run),
                (km.acc_mean, km.nmi_mean, km.acc_best_sse, km.nmi_best_sse, km.best_sse_run),
                "x {f:e}"
            );
            let iters: Vec<usize> = k.runs.iter().map(|r| r.iterations).collect();
            assert_eq!(iters, km.runs.iter().map(|r| r.iterations).collect::<Vec<_>>(), "x {f:e}");
        }
        let p = neighbourhood_preservation(x.view(), ys.view(), 5).unwrap();
        assert_eq!((p.trustworthiness, p.continuity, p.knn_preservation), (np.trustworthiness, np.continuity, np.knn_preservation), "x {f:e}");
    }
}

#[test]
fn a_power_of_two_multiple_gives_the_same_bits() {
    let (y, l) = blobs();
    let base = KmeansOptions::default();
    let km = kmeans_protocol_with(y.view(), &l, 3, 10, 7, &base).unwrap();
    let fit = kmeans_fit(y.view(), 3, 11, &base).unwrap();
    let pow2 = |v: f64, p: i32| v * 2f64.powi(p / 2) * 2f64.powi(p - p / 2);
    for p in [-900i32, -20, 7, 900] {
        let f = 2f64.powi(p);
        let ys = y.mapv(|v| v * f);
        let opts = KmeansOptions { tolerance: base.tolerance * f, ..base };
        assert_eq!(loocv_1nn_accuracy(ys.view(), &l).unwrap(), loocv_1nn_accuracy(y.view(), &l).unwrap());
        let k = kmeans_protocol_with(ys.view(), &l, 3, 10, 7, &opts).unwrap();
        for (a, b) in k.runs.iter().zip(&km.runs) {
            assert_eq!((a.acc, a.nmi, a.iterations, a.sse, a.sum_dist), (b.acc, b.nmi, b.iterations, pow2(b.sse, 2 * p), b.sum_dist * f), "2^{p}");
        }
        let g = kmeans_fit(ys.view(), 3, 11, &opts).unwrap();
        assert_eq!((g.labels.clone(), g.iterations, g.sse), (fit.labels.clone(), fit.iterations, pow2(fit.sse, 2 * p)), "2^{p}");
        assert_eq!(g.centroids, fit.centroids.mapv(|v| v * f));
    }
}

#[test]
fn an_sse_beyond_f64_is_infinite_and_distinct_points_that_underflow_are_refused() {
    let (y, l) = blobs();
    let k = kmeans_protocol(y.mapv(|v| v * 1e300).view(), &l, 3, 4, 7).unwrap();
    assert!(k.runs.iter().all(|r| r.sse == f64::INFINITY && r.sum_dist.is_finite()));
    // one point at 1e300, the rest within 1e-19: more than 2^1070 apart, their distances vanish
    let mut z = y.mapv(|v| v * 1e-20);
    z[[0, 0]] = 1e300;
    let e = loocv_1nn_accuracy(z.view(), &l).unwrap_err().to_string();
    assert!(e.contains("degenerate") && e.contains("underflows"), "{e}");
}
