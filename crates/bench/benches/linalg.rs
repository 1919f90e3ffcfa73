//! Dense kernels at the sizes the methods use. Target: full eigendecomposition of a 2000 x 2000
//! symmetric matrix in <= 0.8 s on 2 cores. Run with `just bench` (sets OPENBLAS_CORETYPE on
//! AVX-512 machines).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::hint::black_box;
use std::time::Duration;

fn random_symmetric(n: usize) -> Array2<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(42);
    let b = Array2::from_shape_fn((n, n), |_| rng.gen_range(-1.0..1.0));
    &b + &b.t()
}

fn eigen(c: &mut Criterion) {
    eprintln!("OpenBLAS core: {}, threads: {}", structdr_linalg::blas::core_name(), structdr_linalg::blas::num_threads());
    let mut g = c.benchmark_group("eigh");
    g.sample_size(10).measurement_time(Duration::from_secs(8)).warm_up_time(Duration::from_secs(1));
    for n in [500usize, 2000] {
        let a = random_symmetric(n);
        g.bench_with_input(BenchmarkId::new("dsyevd_full", n), &a, |b, a| b.iter(|| structdr_linalg::eigh(black_box(a.view())).unwrap()));
        g.bench_with_input(BenchmarkId::new("dsyevr_top10", n), &a, |b, a| b.iter(|| structdr_linalg::eigh_top(black_box(a.view()), 10).unwrap()));
    }
    g.finish();
    let mut g = c.benchmark_group("cholesky");
    g.sample_size(10);
    let n = 2000;
    let b0 = random_symmetric(n);
    let spd = b0.dot(&b0.t()) + Array2::<f64>::eye(n) * (n as f64);
    g.bench_function("factor_logdet_2000", |b| b.iter(|| structdr_linalg::Cholesky::factor(black_box(spd.view())).unwrap().log_det()));
    g.finish();
}

criterion_group!(benches, eigen);
criterion_main!(benches);
