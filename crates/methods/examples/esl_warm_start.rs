//! Warm starts along ESL's grid, measured: projected Newton (`pair_newton::solve_newton`, the
//! solver dense-W cells hand over to) on ESL's dual at `(lambda_v, u_from)` from W = 0, then at
//! `(lambda_v_to, u_to)` twice: from W = 0 and from the first optimum (the neighbouring grid cell).
//! Prints iterations, factorisations, seconds per part, `f` and the relative KKT residual of each.
//! C = 1 and tol = 1e-5 (relative), as in Table 1. Data: `structdr datasets export NAME --out D`.
//! Run (one BLAS thread, as in the runner's cells):
//! `OPENBLAS_NUM_THREADS=1 cargo run --release -p structdr-methods --example esl_warm_start -- D/X.npy dim lambda_v u_from u_to [lambda_v_to]`
//! Results: docs/parity/esl.md, "Where a dense cell's time goes, and two directions measured".
use ndarray::{Array2, Axis};
use ndarray_npy::read_npy;
use std::time::Instant;
use structdr_methods::structure::esl::EslObjective;
use structdr_methods::structure::pair_active::PairDual;
use structdr_methods::structure::pair_dual::{n_pairs, F_NOISE};
use structdr_methods::structure::pair_newton::{solve_newton, NewtonOptions, NEWTON_MEMORY};

fn objective(x: &Array2<f64>, dim: usize, lambda_v: f64, u: f64) -> EslObjective {
    let mean = x.mean_axis(Axis(0)).unwrap();
    let xc = x - &mean.view().insert_axis(Axis(0));
    let d2 = structdr_linalg::sq_dists(xc.view()).mapv(|v| v.max(0.0));
    let (p, _, _) = structdr_numerics::affinities::perplexity_affinities(d2.view(), u);
    EslObjective::new(p.view(), dim, lambda_v).0
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let x: Array2<f64> = read_npy(&a[0]).unwrap();
    let dim: usize = a[1].parse().unwrap();
    let lv: f64 = a[2].parse().unwrap();
    let lv_to: f64 = a.get(5).map_or(lv, |s| s.parse().unwrap());
    let (u0, u1): (f64, f64) = (a[3].parse().unwrap(), a[4].parse().unwrap());
    let n = x.nrows();
    let solve = |lambda_v: f64, u: f64, w0: Vec<f64>| {
        let obj = objective(&x, dim, lambda_v, u);
        let pg0 = obj.initial_kkt_residual(1.0);
        let lin: Vec<f64> = obj.cost.iter().map(|&c| 2.0 * obj.lambda * c).collect();
        let dual = PairDual { n, a: 1.0, b: 4.0, h: 0.5 * obj.m, lin: &lin, upper: 1.0 };
        let opts = NewtonOptions { tol_abs: 1e-5 * pg0, max_iter: 500, noise: F_NOISE, memory: NEWTON_MEMORY };
        let t = Instant::now();
        let (r, prof) = solve_newton(&dual, w0, &opts).unwrap();
        let s = t.elapsed().as_secs_f64();
        let parts = format!("factor {:.1}, inverse {:.1}, model {:.1}", prof.factor, prof.inverse, prof.model);
        println!("lambda_v {lambda_v} u {u}: {} iterations, {} factorisations, {s:.1} s ({parts})", r.iterations, r.evaluations);
        println!("  f = {:.12e}, rel kkt {:.2e}, {}", r.f, r.projected_gradient_norm / pg0, r.message);
        r.x
    };
    let w_from = solve(lv, u0, vec![0.0; n_pairs(n)]);
    solve(lv_to, u1, vec![0.0; n_pairs(n)]);
    solve(lv_to, u1, w_from);
}
