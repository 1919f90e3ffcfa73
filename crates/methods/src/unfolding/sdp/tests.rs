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

/// The inner L-BFGS solves the preconditioner once per accepted step (and once at the start), and
/// still finds the minimiser of an ill-conditioned quadratic `x^T A x / 2 - b^T x`, `A = D + u u^T`
/// (D spanning four decades, `P = D`: right on the diagonal, wrong in one direction).
#[test]
fn inner_lbfgs_solves_the_preconditioner_once_per_step_and_converges() {
    use structdr_numerics::optim::dot;
    let n = 40;
    let dvals: Vec<f64> = (0..n).map(|i| 10f64.powf(4.0 * i as f64 / (n - 1) as f64)).collect();
    let u: Vec<f64> = (0..n).map(|i| ((i as f64) * 0.7 + 0.3).sin() * 3.0).collect();
    let b: Vec<f64> = (0..n).map(|i| ((i as f64) * 1.3).cos()).collect();
    let apply = |x: &[f64], out: &mut [f64]| {
        let ux = dot(&u, x);
        for i in 0..n {
            out[i] = dvals[i] * x[i] + u[i] * ux;
        }
    };
    let f = |x: &[f64], g: &mut [f64]| {
        apply(x, g);
        let xax = dot(x, g);
        let bx = dot(x, &b);
        g.iter_mut().zip(&b).for_each(|(gi, bi)| *gi -= bi);
        0.5 * xax - bx
    };
    let solves = std::cell::Cell::new(0usize);
    let h0 = |v: &[f64], out: &mut [f64]| {
        solves.set(solves.get() + 1);
        out.iter_mut().zip(v.iter().zip(&dvals)).for_each(|(o, (vi, di))| *o = vi / di);
    };
    let res = super::inner::preconditioned_lbfgs(f, vec![0.0; n], h0, 1e-10, 500);
    assert!(res.converged, "stopped after {} iterations", res.iterations);
    assert_eq!(solves.get(), res.iterations + 1, "one solve per step plus the start");
    // the exact minimiser by Sherman-Morrison: x = D^-1 b - D^-1 u (u^T D^-1 b) / (1 + u^T D^-1 u)
    let dib: Vec<f64> = b.iter().zip(&dvals).map(|(a, d)| a / d).collect();
    let diu: Vec<f64> = u.iter().zip(&dvals).map(|(a, d)| a / d).collect();
    let ub = dot(&u, &dib);
    let uu = dot(&u, &diu);
    let exact: Vec<f64> = dib.iter().zip(&diu).map(|(a, c)| a - c * ub / (1.0 + uu)).collect();
    let scale = exact.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    let err = res.x.iter().zip(&exact).fold(0.0f64, |a, (x, e)| a.max((x - e).abs()));
    assert!(err <= 1e-8 * scale, "max error {err:.2e} against {scale:.2e}");
    assert!(res.iterations <= 60, "{} iterations", res.iterations);
}
