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

/// The screening eigensolver's certificate equals the dense one (to the eigensolver's 1e-11
/// residuals) for non-negative multipliers, falls back to the dense one for negative ones, and
/// `confirmed` turns a screened certificate into the dense one.
#[test]
fn screened_certificates_agree_with_dense_ones() {
    let (x, edges, d2) = swiss_roll_problem(300, 6, 5);
    let sdp = DistanceSdp { n: 300, q: None, edges: &edges, d2: &d2, constraint: DistanceConstraint::Inequality };
    let sym = SymbolicCholesky::analyze(300, &edges, Ordering::Auto).unwrap();
    let mut y = x.clone();
    project_out(&mut y, &sdp.centring_vector());
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
    let w: Vec<f64> = edges.iter().map(|_| rng.gen_range(0.0..3.0)).collect();
    let dense = sdp.certificate(y.view(), &w).unwrap();
    let screened = sdp.screened_certificate(y.view(), &w, Some(&sym)).unwrap();
    assert!(dense.exact && !screened.exact);
    assert!((dense.mu - screened.mu).abs() <= 1e-10 * dense.mu.abs().max(1.0), "mu {} vs {}", dense.mu, screened.mu);
    assert!((dense.rel_gap - screened.rel_gap).abs() <= 1e-9 * dense.rel_gap.abs().max(1.0));
    assert_eq!(dense.ascent.ncols(), screened.ascent.ncols());
    let confirmed = sdp.confirmed(y.view(), screened).unwrap();
    assert!(confirmed.exact);
    assert_eq!(confirmed.mu, dense.mu);
    assert_eq!(confirmed.dual, dense.dual);
    // a negative multiplier: the screen does not apply, the dense certificate is returned
    let mut wn = w.clone();
    wn[0] = -0.5;
    let fallback = sdp.screened_certificate(y.view(), &wn, Some(&sym)).unwrap();
    assert!(fallback.exact);
    assert_eq!(fallback.mu, sdp.certificate(y.view(), &wn).unwrap().mu);
}

/// A solve with screened checks takes the same iterates as one with dense checks (the same
/// factor, bit for bit, and the same dense certificate), on problems that grow the rank too.
#[test]
fn a_screened_solve_takes_the_dense_solves_iterates() {
    // a swiss roll from a rank-12 start, and 8-D Gaussian points from a rank-2 start (the
    // optimum has higher rank: the solve grows the factor from the certificate's eigenvectors)
    let (roll, roll_edges, roll_d2) = swiss_roll_problem(400, 8, 2);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
    let cloud = Array2::from_shape_fn((300, 8), |_| rng.gen_range(-1.0..1.0));
    let knn = structdr_numerics::neighbours::knn::knn(cloud.view(), 6).unwrap();
    let e = structdr_numerics::neighbours::knn::symmetrised_edges(&knn);
    let mean = e.iter().map(|e| e.2).sum::<f64>() / e.len() as f64;
    let (cloud_edges, cloud_d2): (Vec<(usize, usize)>, Vec<f64>) = e.iter().map(|e| ((e.0, e.1), e.2 / mean)).unzip();
    let cloud = cloud / mean.sqrt();
    let cases = [
        ("swiss roll", &roll, &roll_edges, &roll_d2, 12, DistanceConstraint::Inequality),
        ("swiss roll", &roll, &roll_edges, &roll_d2, 12, DistanceConstraint::Penalty(1.0)),
        ("8-D cloud", &cloud, &cloud_edges, &cloud_d2, 2, DistanceConstraint::Inequality),
    ];
    for (name, x, edges, d2, r0, constraint) in cases {
        let sdp = DistanceSdp { n: x.nrows(), q: None, edges, d2, constraint };
        let z0 = crate::unfolding::mvu::start_factor(x.slice(ndarray::s![.., ..r0.min(x.ncols())]), r0, 1.0);
        let base = SdpOptions { gap_tol: 1e-6, screen: false, ..SdpOptions::default() };
        let dense = sdp.solve(z0.clone(), &base).unwrap();
        let screened = sdp.solve(z0, &SdpOptions { screen: true, ..base.clone() }).unwrap();
        for (which, s) in [("dense", &dense), ("screened", &screened)] {
            eprintln!(
                "{name} {constraint:?} {which}: P = {:.10e}, U = {:.10e}, gap {:.2e}, {} outer, {} inner, rank {} (from {r0})",
                s.certificate.primal,
                s.certificate.dual,
                s.certificate.rel_gap,
                s.outer,
                s.inner,
                s.y.ncols()
            );
            assert!(s.certified, "{name} {constraint:?} {which}: {}", s.termination);
            assert!(s.certificate.exact, "{name} {constraint:?} {which}: the reported certificate is dense");
        }
        assert_eq!((dense.outer, dense.inner), (screened.outer, screened.inner), "{name} {constraint:?}");
        assert_eq!(dense.y, screened.y, "{name} {constraint:?}: the factors differ");
        let (a, b) = (&dense.certificate, &screened.certificate);
        assert_eq!((a.mu, a.primal, a.dual), (b.mu, b.primal, b.dual), "{name} {constraint:?}");
        if r0 == 2 {
            assert!(dense.y.ncols() > 2, "{name}: the test needs a rank growth");
        }
    }
}

/// Dropping vanishing columns (`SdpOptions::trim`, MVUineq) reaches the same optimum with a
/// smaller factor: on a swiss roll from a rank-12 start (the optimum of a 2-D manifold has few
/// significant eigenvalues) and an 8-D cloud from a rank-2 start (which must grow), both solves
/// certify 1e-6, their certified intervals `[P, U]` overlap, the trimmed factor has fewer
/// columns where the full one keeps vanishing ones, and the embedding's top eigenvalues agree to
/// the gap. `trimmed` keeps exactly the axes above the threshold and changes `Z Z^T` by less
/// than the dropped eigenvalues.
#[test]
fn trimmed_solves_reach_the_full_solves_optimum_with_fewer_columns() {
    let (roll, roll_edges, roll_d2) = swiss_roll_problem(400, 8, 2);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
    let cloud = Array2::from_shape_fn((300, 8), |_| rng.gen_range(-1.0..1.0));
    let knn = structdr_numerics::neighbours::knn::knn(cloud.view(), 6).unwrap();
    let e = structdr_numerics::neighbours::knn::symmetrised_edges(&knn);
    let mean = e.iter().map(|e| e.2).sum::<f64>() / e.len() as f64;
    let (cloud_edges, cloud_d2): (Vec<(usize, usize)>, Vec<f64>) = e.iter().map(|e| ((e.0, e.1), e.2 / mean)).unzip();
    let cloud = cloud / mean.sqrt();
    for (name, x, edges, d2, r0) in [("swiss roll", &roll, &roll_edges, &roll_d2, 12), ("8-D cloud", &cloud, &cloud_edges, &cloud_d2, 2)] {
        let sdp = DistanceSdp { n: x.nrows(), q: None, edges, d2, constraint: DistanceConstraint::Inequality };
        let z0 = crate::unfolding::mvu::start_factor(x.slice(ndarray::s![.., ..r0.min(x.ncols())]), r0, 1.0);
        let base = SdpOptions { gap_tol: 1e-6, ..SdpOptions::default() };
        let full = sdp.solve(z0.clone(), &base).unwrap();
        let trim = sdp.solve(z0, &SdpOptions { trim: Some(crate::unfolding::mvu::TRIM_BELOW), ..base.clone() }).unwrap();
        for (which, s) in [("full", &full), ("trimmed", &trim)] {
            eprintln!(
                "{name} {which}: P = {:.10e}, U = {:.10e}, gap {:.2e}, {} outer, {} inner, rank {} (from {r0})",
                s.certificate.primal,
                s.certificate.dual,
                s.certificate.rel_gap,
                s.outer,
                s.inner,
                s.y.ncols()
            );
            assert!(s.certified, "{name} {which}: {}", s.termination);
        }
        let (a, b) = (&full.certificate, &trim.certificate);
        assert!(a.primal <= b.dual && b.primal <= a.dual, "{name}: [{}, {}] and [{}, {}] do not overlap", a.primal, a.dual, b.primal, b.dual);
        let significant = |y: &Array2<f64>| {
            let v = structdr_linalg::eigh(y.t().dot(y).view()).unwrap().values;
            let top = v.iter().copied().fold(0.0f64, f64::max);
            (v.iter().filter(|&&l| l >= 1e-8 * top).count(), v)
        };
        let ((sig_full, v_full), (sig_trim, v_trim)) = (significant(&full.y), significant(&trim.y));
        assert!(sig_full < full.y.ncols(), "{name}: the full factor keeps no vanishing column ({sig_full} of {})", full.y.ncols());
        assert!(trim.y.ncols() < full.y.ncols(), "{name}: trimmed rank {} against {}", trim.y.ncols(), full.y.ncols());
        // the largest eigenvalues of K agree to the gaps' order (both are certified 1e-6 optima)
        let (tf, tt) = (v_full[v_full.len() - 1], v_trim[v_trim.len() - 1]);
        assert!((tf - tt).abs() <= 1e-4 * tf, "{name}: top eigenvalue {tf} against {tt}");
        // trimming never removes an axis the optimum uses
        assert!(sig_trim >= sig_full, "{name}: {sig_trim} significant axes trimmed against {sig_full} in the full factor");
    }
    // the helper alone: axes above the threshold kept, largest first; Z Z^T moves by the dropped
    let mut z = Array2::from_shape_fn((50, 4), |(i, j)| ((i * 7 + j * 3) % 11) as f64 - 5.0);
    z.column_mut(3).mapv_inplace(|v| v * 1e-6);
    let e = structdr_linalg::eigh(z.t().dot(&z).view()).unwrap();
    let kept = trimmed(&z, 1e-8).unwrap().expect("one axis below 1e-8 of the largest");
    assert_eq!(kept.ncols(), e.values.iter().filter(|&&l| l >= 1e-8 * e.values[3]).count());
    let moved = (&z.dot(&z.t()) - &kept.dot(&kept.t())).iter().fold(0.0f64, |a, v| a.max(v.abs()));
    let dropped: f64 = e.values.iter().filter(|&&l| l < 1e-8 * e.values[3]).sum();
    assert!(moved <= dropped * (1.0 + 1e-6) + 1e-12 * e.values[3], "Z Z^T moved by {moved:e}, dropped {dropped:e}");
    assert!(trimmed(&z, 1e-14).unwrap().is_none(), "nothing below 1e-14: every axis kept");
}
