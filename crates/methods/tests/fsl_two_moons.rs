//! 001 §V-B3: two moons + 1000 U[0,1] noise features, gamma = 100, lambda = 10, b = 1: FSL keeps
//! the two moon coordinates (paper: theta = 0.5758 / 0.4242) and zeros every noise feature.
//! Features min-max scaled to [0, 1] (docs/parity/fsl.md). About 20 s in release, so ignored:
//! `cargo test --release -p structdr-methods --test suite -- --ignored --nocapture fsl_two_moons::`.

use std::collections::BTreeMap;
use structdr_datasets::preprocess::minmax01;
use structdr_datasets::synthetic::{append_noise_features, generate};
use structdr_methods::selection::fsl::Fsl;

#[test]
#[ignore]
fn two_moons_plus_1000_noise_features_selects_the_moons() {
    let mut p = BTreeMap::new();
    p.insert("n".to_string(), 400.0);
    let ds = append_noise_features(generate("two_moons", &p, 1).unwrap(), 1000, 1).unwrap();
    let x = minmax01(&ds.x).unwrap().0;
    let sol = Fsl { lambda: 10.0, gamma: 100.0, b: 1.0, max_iter: 500, tol: 1e-6, self_loops: false }.solve(x.view()).unwrap();
    let noise: f64 = sol.theta.iter().skip(2).sum();
    println!("theta_0 = {:.4}, theta_1 = {:.4}, noise mass {noise:.3e}, {} iterations", sol.theta[0], sol.theta[1], sol.iterations);
    assert!(noise < 1e-9, "mass on noise features {noise}");
    assert!(sol.theta[0] > 0.3 && sol.theta[1] > 0.3);
    let labels = ds.labels.unwrap();
    let (mut within, mut between) = (0.0, 0.0);
    for i in 0..400 {
        for j in 0..400 {
            if labels[i] == labels[j] {
                within += sol.w[[i, j]]
            } else {
                between += sol.w[[i, j]]
            }
        }
    }
    assert!(within > 20.0 * between, "W within {within} vs between {between}");
}
