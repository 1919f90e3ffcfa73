use super::*;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Swiss roll (t cos t, 21 v, t sin t), t = 1.5 pi (1 + 2u), and its symmetrised k-NN edges
/// with squared lengths scaled to mean 1.
pub(crate) fn swiss_roll_problem(n: usize, k: usize, seed: u64) -> (Array2<f64>, Vec<(usize, usize)>, Vec<f64>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let x = Array2::from_shape_fn((n, 3), |_| 0.0);
    let mut x = x;
    for i in 0..n {
        let (u, v): (f64, f64) = (rng.gen(), rng.gen());
        let t = 1.5 * std::f64::consts::PI * (1.0 + 2.0 * u);
        x[[i, 0]] = t * t.cos();
        x[[i, 1]] = 21.0 * v;
        x[[i, 2]] = t * t.sin();
    }
    let knn = structdr_numerics::neighbours::knn::knn(x.view(), k).unwrap();
    let e = structdr_numerics::neighbours::knn::symmetrised_edges(&knn);
    let mean = e.iter().map(|e| e.2).sum::<f64>() / e.len() as f64;
    (x / mean.sqrt(), e.iter().map(|e| (e.0, e.1)).collect(), e.iter().map(|e| e.2 / mean).collect())
}

#[test]
fn lagrangian_gradient_matches_central_differences() {
    let (x, edges, d2) = swiss_roll_problem(30, 4, 1);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    let w: Vec<f64> = edges.iter().map(|_| rng.gen_range(-1.0..1.0)).collect();
    for constraint in [DistanceConstraint::Equality, DistanceConstraint::Inequality, DistanceConstraint::Penalty(0.7)] {
        let sdp = DistanceSdp { n: 30, q: None, edges: &edges, d2: &d2, constraint };
        let w: Vec<f64> = if constraint == DistanceConstraint::Inequality { w.iter().map(|v| v.abs()).collect() } else { w.clone() };
        let mut z = x.clone();
        let c = sdp.centring_vector();
        project_out(&mut z, &c);
        let p: Vec<f64> = z.iter().copied().collect();
        let omega: Vec<f64> = d2.iter().map(|d| 1.0 / d).collect();
        crate::testing::assert_gradient_matches_central_differences(|p, g| sdp.lagrangian(p, 3, &w, &omega, 2.5, &c, g), &p, 1e-6, 1e-6);
    }
}
