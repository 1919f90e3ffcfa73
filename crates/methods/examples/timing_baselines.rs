//! Wall-clock timings of KPCA, LE and LLE at N = 5000, D = 16 (N from STRUCTDR_TIMING_N).
//! Run: `cargo run --release -p structdr-methods --example timing_baselines`.

use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::time::Instant;
use structdr_methods::{lookup, ParamMap};
use structdr_numerics::neighbours::knn;

fn main() {
    let n: usize = std::env::var("STRUCTDR_TIMING_N").ok().and_then(|s| s.parse().ok()).unwrap_or(5000);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    // a noisy 2-manifold in 16 dimensions
    let x = Array2::from_shape_fn((n, 16), |(_, j)| (j as f64 * 0.3).sin() + rng.gen_range(-1.0..1.0));
    let t = Instant::now();
    let g = knn(x.view(), 12).unwrap();
    println!("knn k=12: {:.3} s", t.elapsed().as_secs_f64());
    assert_eq!(g.indices.nrows(), n);
    for name in ["kpca", "le", "lle"] {
        let (_, m) = lookup(name).unwrap().instantiate(&ParamMap::new()).unwrap();
        let t = Instant::now();
        let f = m.fit(x.view(), 0).unwrap();
        println!("{name} (defaults, dim 2), N = {n}, D = 16: {:.3} s", t.elapsed().as_secs_f64());
        assert!(f.embedding().unwrap().iter().all(|v| v.is_finite()));
    }
}
