//! Warm starts along MVUineq's K grid, measured: the distance SDP of `mvu-ineq` (Table 1's
//! options: `max_rank = 60`, `gap_tol = 1e-5`) at `k_from` from the method's own start, then at
//! `k_to` three times: from the method's own start, from the `k_from` factor alone, and from the
//! `k_from` factor with its multipliers and penalty (`DistanceSdp::solve_warm`). Prints outer and
//! L-BFGS iterations, seconds, `tr K` and the certified gap of each. Duplicate samples are merged
//! first, as the method does. Data: `structdr datasets export NAME --out D`.
//! Run (one BLAS thread, as in the runner's cells):
//! `OPENBLAS_NUM_THREADS=1 cargo run --release -p structdr-methods --example mvu_warm_start -- D/X.npy k_from k_to`
//! Results: docs/parity/mvu.md, "Warm starts across K, measured".
//!
//! Units: each problem is solved with the squared edge lengths divided by their mean over its own
//! graph, so a factor moves from `k_from`'s units to `k_to`'s times `sqrt(mean_from / mean_to)`
//! and a multiplier of a scaled constraint (dimensionless `g_e / d_e`, against `-||Y||^2`) times
//! `mean_from / mean_to`. The nearest-neighbour graphs nest, so every edge of the smaller K's graph
//! is one of the larger K's (a join between components excepted: it gets multiplier 0).
use ndarray::{Array2, Axis};
use ndarray_npy::read_npy;
use std::collections::HashMap;
use std::time::Instant;
use structdr_linalg::Pca;
use structdr_methods::unfolding::mvu::{start_factor, START_RANK};
use structdr_methods::unfolding::sdp::{DistanceConstraint, DistanceSdp, SdpOptions, SdpSolution};
use structdr_numerics::graphs::{neighbourhood_graph, Disconnected};
use structdr_numerics::neighbours::distinct_rows;

struct Instance {
    edges: Vec<(usize, usize)>,
    d2: Vec<f64>,
    mean_d: f64,
}

fn instance(x: &Array2<f64>, k: usize) -> Instance {
    let g = neighbourhood_graph(x.view(), k, Disconnected::Connect).unwrap();
    let edges: Vec<(usize, usize)> = g.edges.iter().map(|&(i, j, _)| (i, j)).collect();
    let mean_d = g.edges.iter().map(|e| e.2).sum::<f64>() / edges.len() as f64;
    let d2 = g.edges.iter().map(|e| e.2 / mean_d).collect();
    Instance { edges, d2, mean_d }
}

fn solve(inst: &Instance, n: usize, z0: Array2<f64>, warm: Option<(Vec<f64>, f64)>, label: &str) -> SdpSolution {
    let sdp = DistanceSdp { n, q: None, edges: &inst.edges, d2: &inst.d2, constraint: DistanceConstraint::Inequality };
    let opts = SdpOptions { max_rank: 60, gap_tol: 1e-5, ..SdpOptions::default() };
    let t = Instant::now();
    let sol = sdp.solve_warm(z0, warm, &opts).unwrap();
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{label}: {secs:.1} s, {} outer, {} L-BFGS iterations, rank {}, tr K {:.9e} (data units), gap {:.2e}, certified {}",
        sol.outer,
        sol.inner,
        sol.y.ncols(),
        sol.certificate.primal * inst.mean_d,
        sol.certificate.rel_gap,
        sol.certified
    );
    sol
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let x_all: Array2<f64> = read_npy(&a[0]).unwrap();
    let (k_from, k_to): (usize, usize) = (a[1].parse().unwrap(), a[2].parse().unwrap());
    let (reps, _) = distinct_rows(x_all.view());
    let x = x_all.select(Axis(0), &reps);
    let (n, d_in) = x.dim();
    let r0 = START_RANK.min(n - 1).min(60);
    let basis = Pca::fit(x.view()).unwrap();
    let r_pca = d_in.min(r0).min(basis.variances.len());
    let scores = basis.transform(x.view(), r_pca);
    println!("N = {n} distinct samples, k_from = {k_from}, k_to = {k_to}");

    let from = instance(&x, k_from);
    let sol_from = solve(&from, n, start_factor(scores.view(), r0, from.mean_d), None, &format!("k = {k_from} from the method's start"));
    let to = instance(&x, k_to);
    solve(&to, n, start_factor(scores.view(), r0, to.mean_d), None, &format!("k = {k_to} from the method's start"));
    let z_warm = &sol_from.y * (from.mean_d / to.mean_d).sqrt();
    solve(&to, n, z_warm.clone(), None, &format!("k = {k_to} from the k = {k_from} factor"));
    let index: HashMap<(usize, usize), usize> = from.edges.iter().enumerate().map(|(e, &(i, j))| ((i.min(j), i.max(j)), e)).collect();
    let ratio = from.mean_d / to.mean_d;
    let v: Vec<f64> = to.edges.iter().map(|&(i, j)| index.get(&(i.min(j), i.max(j))).map_or(0.0, |&e| sol_from.multipliers[e] * ratio)).collect();
    let shared = to.edges.iter().filter(|&&(i, j)| index.contains_key(&(i.min(j), i.max(j)))).count();
    println!("{shared} of the {} edges at k = {k_to} are edges at k = {k_from}; sigma at the end of k = {k_from}: {:.0e}", to.edges.len(), sol_from.sigma);
    solve(&to, n, z_warm, Some((v, sol_from.sigma)), &format!("k = {k_to} from the k = {k_from} factor, multipliers and sigma"));
}
