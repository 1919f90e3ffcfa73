//! DDRTree timings: D = 50, d = 2, 20 iterations (tol = 0), K = N = 2000, K = N = 8000 (the sparse
//! factorisation of M) and N = 8000 with K = 132 (Monocle's rule), R DDRTree's defaults otherwise
//! (sigma = 1e-3, gamma = 10, lambda = 5N).
use criterion::{criterion_group, criterion_main, Criterion};
use structdr_methods::principal::ddrtree::{Centres, DdrTree};

#[path = "support/ddrtree_data.rs"]
mod ddrtree_data;
use ddrtree_data::data;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("ddrtree");
    g.sample_size(10);
    for (n, centres, name) in
        [(2000, Centres::All, "N=K=2000 D=50 20it"), (8000, Centres::All, "N=K=8000 D=50 20it"), (8000, Centres::Count(132), "N=8000 K=132 D=50 20it")]
    {
        let x = data(n, 50, 1);
        let m = DdrTree { tol: 0.0, max_iter: 20, ..DdrTree::ddrtree(2, centres) };
        g.bench_function(name, |b| b.iter(|| m.fit_full(x.view(), 0).unwrap()));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
