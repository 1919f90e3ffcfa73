//! Timing and memory probe for DDRTree: `ddrtree_perf N K [D] [iters]` (K = 0: K = N).
//! Run under `/usr/bin/time -v` for the peak RSS. Data: a noisy 3-branch tree in D dimensions.
use structdr_methods::principal::ddrtree::{Centres, DdrTree};

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

#[path = "../benches/support/ddrtree_data.rs"]
mod ddrtree_data;
use ddrtree_data::data;
