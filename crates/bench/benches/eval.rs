//! Criterion benchmarks of the evaluation metrics.
//!
//! `cargo bench -p structdr-bench --bench eval -- --quick` finishes in well under two minutes.
//! Targets (release, 2 cores): 1-NN LOOCV on 5000 x 16 <= 0.3 s.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use rand_xoshiro::Xoshiro256PlusPlus;
use structdr_eval::{kmeans_protocol_brute_force, kmeans_protocol_with, loocv_1nn_accuracy, KmeansOptions};

const N: usize = 5000;
const D: usize = 16;
const K: usize = 26;

/// Uniform random data (the LOOCV cost does not depend on the data).
fn uniform() -> (Array2<f64>, Vec<i64>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let y = Array2::from_shape_fn((N, D), |_| rng.gen::<f64>());
    let labels = (0..N).map(|_| rng.gen_range(0..K as i64)).collect();
    (y, labels)
}

/// 26 overlapping Gaussian classes (unit spread, centres ~N(0, 3^2)): a realistic k-means load.
fn classes() -> (Array2<f64>, Vec<i64>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(2);
    let centres = Array2::from_shape_fn((K, D), |_| {
        let z: f64 = StandardNormal.sample(&mut rng);
        3.0 * z
    });
    let labels: Vec<i64> = (0..N).map(|i| (i % K) as i64).collect();
    let y = Array2::from_shape_fn((N, D), |(i, d)| {
        let z: f64 = StandardNormal.sample(&mut rng);
        centres[[i % K, d]] + z
    });
    (y, labels)
}

fn bench_loocv(c: &mut Criterion) {
    let (y, labels) = uniform();
    let mut g = c.benchmark_group("loocv_1nn");
    g.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    for blas_threads in [1, 2] {
        g.bench_function(format!("5000x16/blas{blas_threads}"), |b| {
            structdr_linalg::blas::with_threads(blas_threads, || b.iter(|| loocv_1nn_accuracy(y.view(), &labels).unwrap()))
        });
    }
    g.finish();
}

fn bench_kmeans(c: &mut Criterion) {
    let mut g = c.benchmark_group("kmeans_protocol");
    g.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5));
    // (uniform data converges slowly: ~4x the time of the class data; left out to keep --quick short)
    {
        let (name, (y, labels)) = ("classes", classes());
        let opts = KmeansOptions::default();
        g.bench_function(format!("5000x16_k26_r20/{name}/Lloyd"), |b| b.iter(|| kmeans_protocol_with(y.view(), &labels, K, 20, 7, &opts).unwrap()));
        // linfa-clustering's KMeans (a dev-dependency, not the protocol's k-means: m_k-means
        // update) on the same data, 20 runs of one restart each, for the speed comparison
        g.bench_function(format!("5000x16_k26_r20/{name}/linfa"), |b| {
            b.iter(|| {
                use linfa::prelude::*;
                let data = linfa::DatasetBase::from(y.view());
                (0..20u64)
                    .map(|r| {
                        linfa_clustering::KMeans::params_with_rng(K, Xoshiro256PlusPlus::seed_from_u64(r))
                            .n_runs(1)
                            .max_n_iterations(300)
                            .tolerance(1e-4)
                            .fit(&data)
                            .unwrap()
                            .centroids()
                            .sum()
                    })
                    .sum::<f64>()
            })
        });
    }
    g.finish();
}

/// The Table III load: N = 1440, k = 20, 20 restarts, z-scored-like overlapping classes in
/// dimension 160; the pruned Lloyd path against the brute-force reference (same results).
fn bench_kmeans_table3(c: &mut Criterion) {
    const N3: usize = 1440;
    const K3: usize = 20;
    const D3: usize = 160;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    let centres = Array2::from_shape_fn((K3, D3), |_| {
        let z: f64 = StandardNormal.sample(&mut rng);
        0.35 * z
    });
    let labels: Vec<i64> = (0..N3).map(|i| (i % K3) as i64).collect();
    let y = Array2::from_shape_fn((N3, D3), |(i, d)| {
        let z: f64 = StandardNormal.sample(&mut rng);
        centres[[i % K3, d]] + z
    });
    let opts = KmeansOptions::default();
    let mut g = c.benchmark_group("kmeans_table3");
    g.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5));
    g.bench_function("1440x160_k20_r20/pruned", |b| b.iter(|| kmeans_protocol_with(y.view(), &labels, K3, 20, 7, &opts).unwrap()));
    g.bench_function("1440x160_k20_r20/brute_force", |b| b.iter(|| kmeans_protocol_brute_force(y.view(), &labels, K3, 20, 7, &opts).unwrap()));
    g.finish();
}

criterion_group!(benches, bench_loocv, bench_kmeans, bench_kmeans_table3);
criterion_main!(benches);
