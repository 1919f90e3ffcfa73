//! Timing and memory probe for DDRTree: `ddrtree_perf N K [D] [iters] [sigma] [solver]` (K = 0:
//! K = N; sigma default 1e-3, R DDRTree's; solver `auto` (default), `dense` or `sparse` for the
//! factorisation of M). Run under `/usr/bin/time -v` for the peak RSS. Data: a noisy 3-branch
//! tree in D dimensions. With `DDRTREE_PERF_CSV=path` set, the data are also written there
//! (N rows of D comma-separated values) for `benches/support/ddrtree_r_timing.R`, which times
//! R DDRTree on the same matrix.
use structdr_methods::principal::ddrtree::{Centres, DdrTree, MSolver};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let int = |i: usize, default: usize| args.get(i).map_or(default, |s| s.parse().expect("an integer"));
    let (n, k, dd, iters) = (int(0, 2000), int(1, 0), int(2, 50), int(3, 20));
    let sigma: f64 = args.get(4).map_or(1e-3, |s| s.parse().expect("sigma: a number"));
    let m_solver = match args.get(5).map_or("auto", |s| s.as_str()) {
        "auto" => MSolver::Auto,
        "dense" => MSolver::Dense,
        "sparse" => MSolver::Sparse,
        other => panic!("solver {other}: auto, dense or sparse"),
    };
    let x = data(n, dd, 1);
    if let Ok(path) = std::env::var("DDRTREE_PERF_CSV") {
        let mut text = String::with_capacity(n * dd * 24);
        for row in x.rows() {
            let cells: Vec<String> = row.iter().map(|v| format!("{v:e}")).collect();
            text.push_str(&cells.join(","));
            text.push('\n');
        }
        std::fs::write(&path, text).expect("writing the CSV");
    }
    let centres = if k == 0 { Centres::All } else { Centres::Count(k) };
    let m = DdrTree { tol: 0.0, max_iter: iters, sigma, m_solver, ..DdrTree::ddrtree(2, centres) };
    let t = std::time::Instant::now();
    let f = m.fit_full(x.view(), 0).unwrap();
    let s = t.elapsed().as_secs_f64();
    println!(
        "N = {n}, K = {}, D = {dd}, sigma = {sigma:e}, iterations = {}: {s:.3} s; final objective {:e}",
        f.centres.nrows(),
        f.iterations,
        f.final_objective
    );
    for note in &f.notes {
        println!("  {note}");
    }
}

#[path = "../benches/support/ddrtree_data.rs"]
mod ddrtree_data;
use ddrtree_data::data;
