//! Polygonal line: analytic gradients against central differences, a vertex sweep never
//! increases G, and samples near a known curve give vertices near it.
use super::*;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn fd_check(f: impl Fn(&Array1<f64>) -> f64, at: &Array1<f64>, grad: &Array1<f64>) {
    let h = 1e-6;
    for c in 0..at.len() {
        let (mut a, mut b) = (at.clone(), at.clone());
        a[c] += h;
        b[c] -= h;
        let fd = (f(&a) - f(&b)) / (2.0 * h);
        assert!((fd - grad[c]).abs() <= 1e-6 * (1.0 + fd.abs()), "component {c}: analytic {} vs central difference {fd}", grad[c]);
    }
}

#[test]
fn gradients_match_central_differences() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
    for _ in 0..20 {
        let v = |rng: &mut Xoshiro256PlusPlus| Array1::from_shape_fn(3, |_| rng.gen_range(-1.0..1.0));
        let (x, p, q, w) = (v(&mut rng), v(&mut rng), v(&mut rng), v(&mut rng));
        let (_, gp, gq) = line_sq_dist(x.view(), p.view(), q.view());
        fd_check(|pp| line_sq_dist(x.view(), pp.view(), q.view()).0, &p, &gp);
        fd_check(|qq| line_sq_dist(x.view(), p.view(), qq.view()).0, &q, &gq);
        let (_, ga, gv, gb) = bend(p.view(), q.view(), w.view());
        fd_check(|a| bend(a.view(), q.view(), w.view()).0, &p, &ga);
        fd_check(|b| bend(p.view(), b.view(), w.view()).0, &q, &gv);
        fd_check(|c| bend(p.view(), q.view(), c.view()).0, &w, &gb);
    }
    // the per-vertex terms: their gradient is G's gradient in v_i (G's other terms do not move)
    let x = Array2::from_shape_fn((40, 2), |_| rng.gen_range(-1.0..1.0));
    let verts = Array2::from_shape_fn((5, 2), |_| rng.gen_range(-1.0..1.0));
    let regions = project(x.view(), verts.view()).0;
    let m = members(&regions, 4);
    for i in 0..5 {
        let (_, g) = vertex_terms(x.view(), verts.view(), i, &m, 0.3, 1.5);
        let at = verts.row(i).to_owned();
        fd_check(
            |v| {
                let mut w = verts.clone();
                w.row_mut(i).assign(v);
                objective(x.view(), w.view(), &regions, 0.3, 1.5)
            },
            &at,
            &g,
        );
    }
}

/// Samples of a noisy arc (radius 1, angles 0 to pi), n x 2.
fn noisy_arc(n: usize, noise: f64, seed: u64) -> Array2<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut x = Array2::zeros((n, 2));
    for i in 0..n {
        let t = std::f64::consts::PI * rng.gen::<f64>();
        let r = 1.0 + noise * rng.gen_range(-1.0..1.0);
        x[[i, 0]] = r * t.cos();
        x[[i, 1]] = r * t.sin();
    }
    x
}

#[test]
fn a_vertex_sweep_never_increases_the_penalised_distance() {
    let x = noisy_arc(150, 0.1, 3);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
    for k in [1usize, 2, 5, 9] {
        // a rough start: the chord's points, perturbed
        let mut verts = Array2::from_shape_fn((k + 1, 2), |(j, c)| if c == 0 { 1.0 - 2.0 * j as f64 / k as f64 } else { 0.2 } + 0.2 * rng.gen_range(-1.0..1.0));
        for _ in 0..5 {
            let regions = project(x.view(), verts.view()).0;
            let before = objective(x.view(), verts.view(), &regions, 0.05, 1.1);
            sweep(x.view(), &mut verts, &regions, 0.05, 1.1);
            let after = objective(x.view(), verts.view(), &regions, 0.05, 1.1);
            assert!(after <= before * (1.0 + 1e-14), "k = {k}: G went from {before} to {after}");
            assert!(after < before || before == 0.0 || after == before, "k = {k}");
        }
    }
}

#[test]
fn vertices_lie_near_a_known_curve() {
    // noise uniform in [-0.1, 0.1] about the unit arc
    let x = noisy_arc(100, 0.1, 5);
    let f = PolygonalLine::default().fit_full(x.view()).unwrap();
    let k = f.vertices.nrows() - 1;
    assert!(k >= 4, "the arc needs several segments, got {k}");
    assert!(f.rule_met);
    let dev: Vec<f64> = f.vertices.rows().into_iter().map(|v| (v.dot(&v).sqrt() - 1.0).abs()).collect();
    let (max_dev, mean_dev) = (dev.iter().fold(0.0f64, |m, &d| m.max(d)), dev.iter().sum::<f64>() / dev.len() as f64);
    // every vertex within the noise band, on average well inside it
    assert!(max_dev < 0.1, "a vertex {max_dev} off the arc: {}", f.vertices);
    assert!(mean_dev < 0.04, "vertices {mean_dev} off the arc on average");
    // the projections are within the noise of the samples
    let rms = (f.projection.rows().into_iter().zip(x.rows()).map(|(p, xi)| sq(p, xi)).sum::<f64>() / 100.0).sqrt();
    assert!(rms < 0.1 / 3f64.sqrt() * 1.1, "root mean squared distance {rms} (the noise's is {})", 0.1 / 3f64.sqrt());
    // a straight band of data gives a straight line
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(6);
    let line = Array2::from_shape_fn((100, 2), |(i, c)| if c == 0 { i as f64 / 99.0 } else { 0.05 * rng.gen_range(-1.0..1.0) });
    let f = PolygonalLine::default().fit_full(line.view()).unwrap();
    assert!(f.vertices.column(1).iter().all(|y| y.abs() < 0.03), "{}", f.vertices);
}
