//! SPL per-iteration cost (factor + log det + half solve + D x D eigen + solve + selected
//! inversion + gradient + step). Target (issue 4): LIBSVM letter, N = 5000, D = 16, K = 10,
//! <= 0.2 s per iteration on 2 cores. Cases: `letter.t` itself (through the registry; skipped
//! without the data), uniform random 5000 x 16 (intrinsic dimension 16, the worst case for fill)
//! and a 2-D sheet embedded in 16-D (low intrinsic dimension).
//! Run: `STRUCTDR_MIRROR=../shared/datasets OPENBLAS_CORETYPE=SKYLAKEX cargo bench -p structdr-bench --bench spl`
//! (add `-- spl_letter` for the letter case only).

use criterion::{criterion_group, criterion_main, Criterion};
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::hint::black_box;
use std::time::{Duration, Instant};
use structdr_methods::structure::spl::SplProblem;
use structdr_numerics::neighbours::{knn, symmetrised_edges};

fn uniform(n: usize, d: usize) -> Array2<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(42);
    Array2::from_shape_fn((n, d), |_| rng.gen_range(0.0..1.0))
}

/// A noisy 2-D sheet (a Swiss roll) mapped into `d` dimensions by a fixed random linear map.
fn sheet(n: usize, d: usize) -> Array2<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(43);
    let a = Array2::from_shape_fn((3, d), |_| rng.gen_range(-1.0..1.0));
    let mut p = Array2::<f64>::zeros((n, 3));
    for i in 0..n {
        let t = 1.5 * std::f64::consts::PI * (1.0 + 2.0 * rng.gen_range(0.0..1.0));
        let h = 10.0 * rng.gen_range(0.0..1.0);
        p[[i, 0]] = t * t.cos() / 10.0;
        p[[i, 1]] = h / 10.0;
        p[[i, 2]] = t * t.sin() / 10.0;
    }
    p.dot(&a) + Array2::from_shape_fn((n, d), |_| 0.001 * rng.gen_range(-1.0..1.0))
}

/// Also times the sparse factorisation and the selected inversion on their own when the backend
/// is sparse.
fn bench_case(c: &mut Criterion, name: &str, x: Array2<f64>, dim: usize) {
    let t0 = Instant::now();
    let edges = symmetrised_edges(&knn(x.view(), 10).unwrap());
    let t_knn = t0.elapsed();
    let t0 = Instant::now();
    let prob = SplProblem::new(x.view(), &edges, dim, 1e-3, 1e3).unwrap();
    let t_sym = t0.elapsed();
    // a few steps from S = 0 so that S is a realistic iterate
    let mut s = vec![0.0; prob.n_edges()];
    for t in 1..=3 {
        let ev = prob.evaluate(&s).unwrap();
        SplProblem::step(&mut s, t, &ev.grad);
    }
    let sym = prob.symbolic();
    eprintln!(
        "{name}: backend {:?}; N = {}, D = {}, d = {dim}, {} edges; knn {:.3} s, ordering + symbolic {:.3} s ({}); nnz(L) = {} stored ({:.1}% of the dense lower triangle; {} exact), {} supernodes (largest {:?} columns/rows), {:.3e} flops per factorisation; {} of {} edges active",
        prob.backend(),
        x.nrows(),
        x.ncols(),
        prob.n_edges(),
        t_knn.as_secs_f64(),
        t_sym.as_secs_f64(),
        sym.ordering_name(),
        sym.nnz_l(),
        100.0 * sym.nnz_l() as f64 / (x.nrows() as f64 * (x.nrows() as f64 - 1.0) / 2.0),
        sym.nnz_l_exact(),
        sym.n_supernodes(),
        sym.largest_supernode(),
        sym.flops(),
        s.iter().filter(|&&v| v > 0.0).count(),
        s.len()
    );
    let (diag, off) = prob.q_values(&s);
    let mut g = c.benchmark_group(format!("spl_{name}"));
    g.sample_size(10).measurement_time(Duration::from_secs(10)).warm_up_time(Duration::from_secs(1));
    if prob.backend() == structdr_methods::structure::spl::Backend::Sparse {
        g.bench_function("sparse_factor", |b| b.iter(|| sym.factor(black_box(&diag), black_box(&off)).unwrap().log_det()));
        let f = sym.factor(&diag, &off).unwrap();
        g.bench_function("sparse_selected_inverse", |b| b.iter(|| f.selected_inverse().edge_values()));
    }
    g.bench_function("iteration", |b| {
        b.iter(|| {
            let mut s2 = s.clone();
            let ev = prob.evaluate(black_box(&s2)).unwrap();
            SplProblem::step(&mut s2, 4, &ev.grad);
            s2
        })
    });
    g.finish();
}

/// The issue-4 case: LIBSVM `letter.t` (5000 x 16, the paper's Letter), through the registry
/// (`STRUCTDR_MIRROR=../shared/datasets` or a fetched `data/`); skipped when unavailable.
fn letter() -> Option<Array2<f64>> {
    match structdr_datasets::load::load("letter.t", &structdr_datasets::download::FetchOptions::from_env()) {
        Ok(ds) => Some(ds.x),
        Err(e) => {
            eprintln!("letter.t unavailable ({e}); skipping the letter case");
            None
        }
    }
}

fn spl(c: &mut Criterion) {
    eprintln!("OpenBLAS core: {}, threads: {}", structdr_linalg::blas::core_name(), structdr_linalg::blas::num_threads());
    if let Some(x) = letter() {
        bench_case(c, "letter5000x16", x, 2);
    }
    bench_case(c, "sheet5000x16", sheet(5000, 16), 2);
    bench_case(c, "uniform5000x16", uniform(5000, 16), 2);
}

criterion_group!(benches, spl);
criterion_main!(benches);
