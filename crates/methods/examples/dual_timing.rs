//! Split of one MPME/ESL dual evaluation at N = 2007 into its parts (min over 7 repetitions, so
//! that other load on the machine inflates the numbers less): assembling Q, the whole
//! `log_det_and_grad` (dpotrf + dpotri + gradient), and a bare dpotrf for reference.
//! Run: `OPENBLAS_CORETYPE=SKYLAKEX cargo run --release -p structdr-methods --example dual_timing`.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::time::Instant;
use structdr_methods::structure::pair_dual::{laplacian_system, log_det_and_grad, n_pairs};

fn min_time(reps: usize, mut f: impl FnMut()) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(2007);
    println!("OpenBLAS core: {}, threads: {}", structdr_linalg::blas::core_name(), structdr_linalg::blas::num_threads());
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(8);
    let w: Vec<f64> = (0..n_pairs(n)).map(|_| if rng.gen_bool(0.01) { rng.gen_range(0.0..1.0) } else { 0.0 }).collect();
    let mut g = vec![0.0; w.len()];
    let t_q = min_time(7, || drop(laplacian_system(n, &w, 1.0, 4.0)));
    let q = laplacian_system(n, &w, 1.0, 4.0);
    let t_chol = min_time(7, || drop(structdr_linalg::Cholesky::factor(q.view()).unwrap()));
    let t_all = min_time(7, || drop(log_det_and_grad(n, &w, 1.0, 4.0, &mut g).unwrap()));
    println!(
        "N = {n}: assemble Q {:.1} ms, Cholesky::factor (copy + dpotrf) {:.1} ms, log_det_and_grad (assemble + dpotrf + dpotri + gradient) {:.1} ms",
        1e3 * t_q,
        1e3 * t_chol,
        1e3 * t_all
    );
}
