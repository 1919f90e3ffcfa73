//! The noisy 3-branch tree in D dimensions that the DDRTree benchmark and the `ddrtree_perf`
//! example both time (included by path from each).
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Noisy 3-branch tree in `dd` dimensions (branch directions random, noise 0.05).
pub fn data(n: usize, dd: usize, seed: u64) -> Array2<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let dirs = Array2::from_shape_fn((3, dd), |_| rng.gen_range(-1.0..1.0));
    Array2::from_shape_fn((n, dd), |(i, j)| {
        let t = ((i * 7919) % n) as f64 / n as f64;
        dirs[[i % 3, j]] * t * 3.0
    }) + Array2::from_shape_fn((n, dd), |_| 0.05 * rng.gen_range(-1.0..1.0))
}
