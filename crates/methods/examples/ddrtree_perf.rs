//! Timing and memory probe for DDRTree: `ddrtree_perf N K [D] [iters]` (K = 0: K = N).
//! Run under `/usr/bin/time -v` for the peak RSS. Data: a noisy 3-branch tree in D dimensions.
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use structdr_methods::ddrtree::{Centres, DdrTree};

fn main() {
    let a: Vec<usize> = std::env::args().skip(1).map(|s| s.parse().unwrap()).collect();
    let (n, k) = (a.first().copied().unwrap_or(2000), a.get(1).copied().unwrap_or(0));
    let dd = a.get(2).copied().unwrap_or(50);
    let iters = a.get(3).copied().unwrap_or(20);
    let x = data(n, dd, 1);
    let centres = if k == 0 { Centres::All } else { Centres::Count(k) };
    let m = DdrTree { tol: 0.0, max_iter: iters, ..DdrTree::ddrtree(2, centres) };
    let t = std::time::Instant::now();
    let f = m.fit_full(x.view(), 0).unwrap();
    let s = t.elapsed().as_secs_f64();
    println!("N = {n}, K = {}, D = {dd}, iterations = {}: {s:.3} s; final objective {:.6e}", f.centres.nrows(), f.iterations, f.final_objective);
    for note in &f.notes {
        println!("  {note}");
    }
}

/// Noisy 3-branch tree in `dd` dimensions (branch directions random, noise 0.05).
pub fn data(n: usize, dd: usize, seed: u64) -> Array2<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let dirs = Array2::from_shape_fn((3, dd), |_| rng.gen_range(-1.0..1.0));
    Array2::from_shape_fn((n, dd), |(i, j)| {
        let t = ((i * 7919) % n) as f64 / n as f64;
        dirs[[i % 3, j]] * t * 3.0
    }) + Array2::from_shape_fn((n, dd), |_| 0.05 * rng.gen_range(-1.0..1.0))
}
