//! SPL per-iteration cost on LIBSVM letter (`letter.t`, N = 5000, D = 16, K = 10; issue 4:
//! <= 0.2 s per iteration on 2 cores), split into its parts. Median and min over repetitions, so
//! that other load on a shared machine is visible and inflates the numbers less.
//!
//! Prints, per ordering (RCM, BFS nested dissection, AMD): nnz(L), factorisation flops,
//! supernodes, analysis time, sparse factor time and selected-inversion time; then, for the
//! problem `SplProblem::new` builds (`Auto`), one full SPL evaluation + step (the iteration of
//! Algorithm 1), and the dense backend's iteration for comparison with the agreement of the two
//! backends' objective and gradient (skip it with `--no-dense`).
//!
//! Run: `STRUCTDR_MIRROR=../shared/datasets OPENBLAS_CORETYPE=SKYLAKEX cargo run --release -p structdr-methods --example spl_timing [-- REPS] [--no-dense] [--amd-only] [--uniform]`
//! (`--uniform`: uniform random 5000 x 16 instead of letter, the high-fill case).

use std::time::Instant;
use structdr_linalg::sparse::{Ordering, SymbolicCholesky};
use structdr_methods::structure::spl::{Backend, SplProblem};
use structdr_numerics::neighbours::{knn, symmetrised_edges};

/// (median, min) seconds of `reps` calls of `f`.
fn time(reps: usize, mut f: impl FnMut()) -> (f64, f64) {
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    (t[t.len() / 2], t[0])
}

fn ms((med, min): (f64, f64)) -> String {
    format!("{:.1} ms (min {:.1})", 1e3 * med, 1e3 * min)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let reps: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(11);
    let x = if args.iter().any(|a| a == "--uniform") {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(42);
        ndarray::Array2::from_shape_fn((5000, 16), |_| rng.gen_range(0.0..1.0))
    } else {
        structdr_datasets::load::load("letter.t", &structdr_datasets::download::FetchOptions::from_env())
            .expect("load letter.t (set STRUCTDR_MIRROR=../shared/datasets)")
            .x
    };
    let n = x.nrows();
    println!("OpenBLAS core: {}, threads: {}; {reps} repetitions", structdr_linalg::blas::core_name(), structdr_linalg::blas::num_threads());
    let edges = symmetrised_edges(&knn(x.view(), 10).unwrap());
    let prob = SplProblem::new(x.view(), &edges, 2, 1e-3, 1e3).unwrap();
    // three steps from S = 0, as in the criterion bench, so that S is a realistic iterate
    let mut s = vec![0.0; prob.n_edges()];
    for t in 1..=3 {
        let ev = prob.evaluate(&s).unwrap();
        SplProblem::step(&mut s, t, &ev.grad);
    }
    let (diag, off) = prob.q_values(&s);
    println!("N = {n}, D = {}, {} edges (symmetrised 10-NN)", x.ncols(), edges.len());
    let pattern: Vec<(usize, usize)> = prob.edges().to_vec();
    let orderings = if args.iter().any(|a| a == "--amd-only") {
        vec![Ordering::ApproximateMinimumDegree]
    } else {
        vec![Ordering::ReverseCuthillMcKee, Ordering::NestedDissection, Ordering::ApproximateMinimumDegree]
    };
    for ord in orderings {
        let t = Instant::now();
        let sym = SymbolicCholesky::analyze(n, &pattern, ord).unwrap();
        let ta = t.elapsed().as_secs_f64();
        let tf = time(reps, || drop(sym.factor(&diag, &off).unwrap()));
        let f = sym.factor(&diag, &off).unwrap();
        let ti = time(reps, || drop(f.selected_inverse()));
        println!(
            "  {:<30} nnz(L) {:>8} stored ({:>8} exact, {:.1}% of the lower triangle), flops {:.3e} ({:.3e} exact), {:>4} supernodes, largest {:?}; analysis {:.0} ms, factor {}, selected inversion {}",
            sym.ordering_name(),
            sym.nnz_l(),
            sym.nnz_l_exact(),
            100.0 * sym.nnz_l() as f64 / (n as f64 * (n as f64 - 1.0) / 2.0),
            sym.flops(),
            sym.flops_exact(),
            sym.n_supernodes(),
            sym.largest_supernode(),
            1e3 * ta,
            ms(tf),
            ms(ti)
        );
    }
    let iteration = |p: &SplProblem| {
        let mut s2 = s.clone();
        let ev = p.evaluate(&s2).unwrap();
        SplProblem::step(&mut s2, 4, &ev.grad);
    };
    println!("Auto: backend {:?}, ordering {}", prob.backend(), prob.symbolic().ordering_name());
    println!("  SPL iteration (evaluate + step): {}", ms(time(reps, || iteration(&prob))));
    if !args.iter().any(|a| a == "--no-dense") {
        let dense = SplProblem::with_backend(x.view(), &edges, 2, 1e-3, 1e3, Backend::Dense).unwrap();
        println!("  dense backend iteration (dpotrf + dpotri): {}", ms(time(3, || iteration(&dense))));
        // the two backends agree at this S (objective, log det, gradient)
        let (a, b) = (prob.evaluate(&s).unwrap(), dense.evaluate(&s).unwrap());
        let gscale = b.grad.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        let gdiff = a.grad.iter().zip(&b.grad).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max) / gscale;
        println!(
            "  sparse vs dense at this S: objective {:.3e} relative, log det {:.3e} relative, gradient {:.3e} (max abs / max |grad|)",
            (a.objective - b.objective).abs() / b.objective.abs().max(1.0),
            (a.log_det - b.log_det).abs() / b.log_det.abs().max(1.0),
            gdiff
        );
    }
}
