//! One objective + gradient evaluation of the MPME (002 eq. 13) and ESL (001 eq. 20) duals at
//! N = 2007 (the USPS test-set size): assemble Q, Cholesky (dpotrf), log det, dpotri, and the
//! N(N-1)/2 = 2.0 M gradient entries (the solvers' entry point, `value_and_gradient`: no full
//! `Q^-1`). Also one MPME fit of 3 iterations with each solver (`projected`, `lbfgsb`), the
//! solvers' own work on 2 M variables included (target: <= 0.25 s per iteration).
//! Run: `cargo bench -p structdr-methods --bench mpme_esl -- --quick`.

use criterion::{criterion_group, criterion_main, Criterion};
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::hint::black_box;
use std::time::Duration;
use structdr_methods::esl::{perplexity_affinities, EslObjective};
use structdr_methods::logdet::n_pairs;
use structdr_methods::mpme::{Mpme, MpmeEmbedding, MpmeObjective};
use structdr_methods::optim::Solver;
use structdr_methods::Embedder;

const N: usize = 2007;

fn data() -> Array2<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    Array2::from_shape_fn((N, 16), |_| rng.gen_range(-1.0..1.0))
}

fn weights() -> Vec<f64> {
    // ~1% of the pairs non-zero, as in a learned sparse W
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(8);
    (0..n_pairs(N)).map(|_| if rng.gen_bool(0.01) { rng.gen_range(0.0..1.0) } else { 0.0 }).collect()
}

fn bench(c: &mut Criterion) {
    eprintln!("OpenBLAS core: {}, threads: {}", structdr_linalg::blas::core_name(), structdr_linalg::blas::num_threads());
    let x = data();
    let w = weights();
    let mut g = vec![0.0; w.len()];
    let mut grp = c.benchmark_group("dual_eval_2007");
    grp.sample_size(10).measurement_time(Duration::from_secs(6)).warm_up_time(Duration::from_secs(1));
    let mpme = MpmeObjective::from_data(x.view(), 2, 1.0);
    grp.bench_function("mpme", |b| b.iter(|| mpme.value_and_gradient(black_box(&w), &mut g).unwrap()));
    let (p, _, _) = perplexity_affinities(structdr_linalg::sq_dists(x.view()).view(), 30.0);
    let (esl, _) = EslObjective::new(p.view(), 2, 0.8);
    grp.bench_function("esl", |b| b.iter(|| esl.value_and_gradient(black_box(&w), &mut g).unwrap()));
    grp.finish();
    let mut grp = c.benchmark_group("fit_2007");
    grp.sample_size(10).measurement_time(Duration::from_secs(10)).warm_up_time(Duration::from_secs(1));
    for solver in Solver::ALL {
        let m = Mpme { dim: 2, lambda: 1.0, c: f64::INFINITY, max_iter: 3, tol: 0.0, embedding: MpmeEmbedding::Kpca, solver };
        grp.bench_function(format!("mpme_3_iterations_{}", solver.name()), |b| b.iter(|| m.fit(black_box(x.view()), 0).unwrap().iterations));
    }
    grp.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
