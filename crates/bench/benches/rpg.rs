//! Criterion benchmarks of the regularized principal graph (004): one full fit of rpg-tree and
//! rpg-l1 on a 300-point 2-D tree (Table 1 parameters, K = N), and the landmark tree with
//! K = 200 on 20,000 points in 10-D.
//!
//! `cargo bench -p structdr-bench --bench rpg -- --quick`

use criterion::{criterion_group, criterion_main, Criterion};
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use structdr_methods::principal::rpg::{GraphKind, Rpg};

fn tree_data(n: usize, d: usize, seed: u64) -> Array2<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let ends = [(0.5, 0.0), (0.1, 0.9), (0.5, 1.0), (0.9, 0.9)];
    Array2::from_shape_fn((n, d), |(i, j)| {
        let t = ((i * 7919) % n) as f64 / n as f64;
        let (ex, ey) = ends[i % 4];
        let base = match j {
            0 => 0.5 + t * (ex - 0.5),
            1 => 0.5 + t * (ey - 0.5),
            _ => 0.0,
        };
        base + 0.02 * (rng.gen::<f64>() - 0.5)
    })
}

fn bench(c: &mut Criterion) {
    let x = tree_data(300, 2, 1);
    let mut g = c.benchmark_group("rpg");
    g.sample_size(10);
    for (name, graph) in [("tree_n300", GraphKind::Tree), ("l1_n300", GraphKind::L1)] {
        let m = Rpg { graph, sigma: 0.01, gamma: 10.0, lambda: 1.0, nn: 5, ..Rpg::default() };
        g.bench_function(name, |b| b.iter(|| m.fit_graph(x.view(), 0).unwrap()));
    }
    let xl = tree_data(20_000, 10, 2);
    let m = Rpg { landmark: true, ncenter: 200, sigma: 0.01, gamma: 1.0, ..Rpg::default() };
    g.bench_function("landmark_tree_n20000_k200", |b| b.iter(|| m.fit_graph(xl.view(), 0).unwrap()));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
