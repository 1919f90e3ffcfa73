//! One objective + gradient evaluation of the MPME (002 eq. 13) and ESL (001 eq. 20) duals at
//! N = 2007 (the USPS test-set size): assemble Q, Cholesky (dpotrf), log det, dpotri, and the
//! N(N-1)/2 = 2.0 M gradient entries (the solvers' entry point, `value_and_gradient`: no full
//! `Q^-1`). Also the MPME dual (dim = 32, lambda = 0.1, C = inf) solved for 10 iterations from
//! W = 0 with each solver (`projected`, `lbfgsb`): the solvers' own work on 2 M variables included
//! (target: <= 0.25 s per iteration).
//! Run: `cargo bench -p structdr-bench --bench mpme_esl -- --quick`.

use criterion::{criterion_group, criterion_main, Criterion};
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::hint::black_box;
use std::time::Duration;
use structdr_methods::structure::esl::EslObjective;
use structdr_methods::structure::mpme::MpmeObjective;
use structdr_methods::structure::pair_dual::n_pairs;
use structdr_methods::structure::pair_dual::solver_memory;
use structdr_numerics::affinities::perplexity_affinities;
use structdr_numerics::optim::{minimize, BoundedOptions, Solver};

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
    // the dual solved for 10 iterations from W = 0 by each solver (evaluations included, about
    // 1.1 per iteration): per-iteration cost = time / 10
    let mut grp = c.benchmark_group("solve_10_iterations_2007");
    grp.sample_size(10).measurement_time(Duration::from_secs(20)).warm_up_time(Duration::from_secs(1));
    let mpme_eq = MpmeObjective::from_data(x.view(), 32, 0.1);
    let n = n_pairs(N);
    let (lo, hi) = (vec![0.0; n], vec![f64::INFINITY; n]);
    for solver in Solver::ALL {
        let opts = BoundedOptions { m: solver_memory(solver), max_iter: 10, max_eval: 1000, pgtol: 0.0, factr: 0.0, noise: 0.0 };
        grp.bench_function(format!("mpme_{}", solver.name()), |b| {
            b.iter(|| minimize(solver, |w, g| mpme_eq.value_and_gradient(w, g).unwrap(), &vec![0.0; n], &lo, &hi, &opts).unwrap().iterations)
        });
    }
    grp.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
