//! The two-moons claim of 001 §V-B3 / Fig. 9: two moons + 1000 i.i.d. U[0,1] noise features,
//! FSL with gamma = 100, lambda = 10, b = 1 selects the two moon coordinates with
//! theta = 0.5758 / 0.4242 and zeros elsewhere.
//!
//! Run: `cargo run --release -p structdr-methods --example fsl_two_moons [-- SOURCE [NOISE_SEED]]`
//! with SOURCE `mat` (the mirrored toy/2moons.mat, 400 points: x and xt stacked; default) or
//! `synthetic` (the `two_moons` generator, n = 400, noise 0.1, seed 1).

use structdr_datasets::download::FetchOptions;
use structdr_datasets::synthetic::{append_noise_features, generate};
use structdr_methods::selection::fsl::{rank_features, Fsl};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let source = args.get(1).map(String::as_str).unwrap_or("mat");
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let lambda: f64 = std::env::var("FSL_LAMBDA").ok().and_then(|s| s.parse().ok()).unwrap_or(10.0);
    let b: f64 = std::env::var("FSL_B").ok().and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let max_iter: usize = std::env::var("FSL_MAX_ITER").ok().and_then(|s| s.parse().ok()).unwrap_or(500);
    let ds = match source {
        "synthetic" => {
            let mut p = std::collections::BTreeMap::new();
            p.insert("n".to_string(), 400.0);
            generate("two_moons", &p, 1).expect("two_moons")
        }
        _ => structdr_datasets::load::load("2moons", &FetchOptions::from_env()).expect("load 2moons (set STRUCTDR_MIRROR=../shared/datasets)"),
    };
    let mut ds = append_noise_features(ds, 1000, seed).expect("noise");
    let scaling = std::env::var("FSL_SCALE").unwrap_or_else(|_| "minmax".into());
    match scaling.as_str() {
        "minmax" => ds.x = structdr_datasets::preprocess::minmax01(&ds.x).expect("minmax").0,
        "zscore" => ds.x = structdr_datasets::preprocess::zscore(&ds.x).expect("zscore").0,
        _ => {}
    }
    println!("feature scaling: {scaling}");
    let (n, m) = ds.x.dim();
    println!("data: {source}, {n} x {m} (2 true features + {} noise, noise seed {seed})", m - 2);
    let fsl = Fsl { lambda, gamma: 100.0, b, max_iter, tol: 1e-9, self_loops: std::env::var("FSL_SELF_LOOPS").is_ok() };
    let t0 = std::time::Instant::now();
    let sol = fsl.solve(ds.x.view()).expect("fsl");
    let dt = t0.elapsed().as_secs_f64();
    let h = &sol.history;
    println!(
        "{} iterations ({}converged), {} eigendecompositions, {:.2} s ({:.1} ms / iteration)",
        sol.iterations,
        if sol.converged { "" } else { "not " },
        sol.eigendecompositions,
        dt,
        1e3 * dt / sol.iterations as f64
    );
    println!("objective: initial {:.6}, final {:.6}", sol.initial_objective, h.last().unwrap());
    for (i, v) in h.iter().enumerate() {
        if i < 10 || i % 50 == 0 || i + 1 == h.len() {
            println!("  iter {:>4}: {v:.8}", i + 1);
        }
    }
    let rank = rank_features(sol.theta.view(), sol.grad_theta.view());
    println!("top features (index: theta):");
    for &r in rank.iter().take(6) {
        println!("  {r:>5}: {:.6}", sol.theta[r]);
    }
    let noise_mass: f64 = sol.theta.iter().skip(2).sum();
    let support = sol.theta.iter().filter(|&&t| t > 0.0).count();
    println!(
        "theta_0 = {:.4}, theta_1 = {:.4} (paper: 0.5758, 0.4242); mass on noise features {noise_mass:.3e}; support {support}",
        sol.theta[0], sol.theta[1]
    );
    let offdiag: f64 = (0..n).map(|i| sol.w.row(i).sum() - sol.w[[i, i]]).sum::<f64>() / (n as f64 * lambda);
    let nnz = sol.w.iter().filter(|&&v| v > 0.0).count();
    println!("W: {nnz} nonzeros of {}; fraction of row mass off the diagonal {offdiag:.4}", n * n);
    if let Some(labels) = &ds.labels {
        let (mut within, mut between) = (0.0, 0.0);
        for i in 0..n {
            for j in 0..n {
                if i != j {
                    if labels[i] == labels[j] {
                        within += sol.w[[i, j]]
                    } else {
                        between += sol.w[[i, j]]
                    }
                }
            }
        }
        println!("W mass within moons {within:.3}, between moons {between:.3}");
    }
}
