//! Criterion benchmarks of FSL at the Yale size (N = 165, M = 1024).
//!
//! `cargo bench -p structdr-bench --bench fsl -- --quick`
//! - `fsl_iteration_parts`: the work of one iteration on a fixed (W, theta): one `dsyevd` of L_W,
//!   `G = U diag(h) U^T`, the W-gradient, the theta-gradient (`c = feature costs`, O(N^2 M)).
//! - `fsl_solve_1_iteration`: `Fsl::solve` with `max_iter = 1` (set-up, initial eigendecomposition,
//!   one theta step and one W step with their line searches).
//! - `naive_g_matrix`: `G = sum_r theta_r (gamma I + 4 theta_r L)^-1` by M Cholesky inverses,
//!   the O(M N^3) path the eigen-path replaces.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use ndarray::{Array1, Array2};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use structdr_linalg::{eigh, Cholesky};
use structdr_methods::selection::fsl::{feature_costs, g_matrix, grad_theta, grad_w, weighted_sq_dists, Fsl};
use structdr_numerics::graphs::laplacian::of_dense as laplacian;

const N: usize = 165;
const M: usize = 1024;

fn data() -> (Array2<f64>, Array2<f64>, Array1<f64>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    let x = Array2::from_shape_fn((N, M), |_| rng.gen::<f64>());
    let w = Array2::from_shape_fn((N, N), |(i, j)| if i == j { 0.0 } else { rng.gen::<f64>() * 20.0 / N as f64 });
    // a sparse theta, as after a few iterations: 40 features share b = 10
    let mut theta = Array1::zeros(M);
    for r in 0..40 {
        theta[r * 25] = 0.25;
    }
    (x, w, theta)
}

fn bench(c: &mut Criterion) {
    let (x, w, theta) = data();
    let gamma = 100.0;
    c.bench_function("fsl_iteration_parts_n165_m1024", |b| {
        b.iter(|| {
            let e = eigh(laplacian(w.view()).view()).unwrap();
            let psi = weighted_sq_dists(x.view(), theta.view());
            let gw = grad_w(g_matrix(e.vectors.view(), e.values.view(), theta.view(), gamma).view(), psi.view());
            let cst = feature_costs(x.view(), w.view());
            let gt = grad_theta(e.values.view(), theta.view(), gamma, cst.view());
            black_box((gw, gt))
        })
    });
    let fsl = Fsl { lambda: 10.0, gamma, b: 10.0, max_iter: 1, tol: 0.0, self_loops: false };
    c.bench_function("fsl_solve_1_iteration_n165_m1024", |b| b.iter(|| black_box(fsl.solve(x.view()).unwrap())));
    let l = laplacian(w.view());
    let mut g = c.benchmark_group("naive");
    g.sample_size(10);
    g.bench_function("naive_g_matrix_n165_m1024", |b| {
        b.iter(|| {
            let mut acc = Array2::<f64>::zeros((N, N));
            for r in 0..M {
                let t = 0.01 + (r % 7) as f64 * 0.01; // dense theta: every feature pays
                let q = Array2::<f64>::eye(N) * gamma + &l * (4.0 * t);
                acc = acc + Cholesky::factor(q.view()).unwrap().inverse().unwrap() * t;
            }
            black_box(acc)
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
