//! drtoolbox's MVU procedures (`mvu-drtoolbox`, `fastmvu`): the stress gradient, the PSD least-squares solver's optimality
//! (exact recovery, KKT conditions with the cone active) and end-to-end cases with known answers
//! (a ring whose unit-length embedding is a regular polygon; data lengths reproduced exactly;
//! `mvu-drtoolbox` fits the data's own squared distances, so it scales with the data).

use ndarray::{Array1, Array2};
use structdr_linalg::eigh;
use structdr_methods::api::{Fitted, ParamMap, ParamValue};
use structdr_methods::registry::lookup;
use structdr_methods::unfolding::drtoolbox::{edge_stress, psd_least_squares};

fn fit_method(method: &str, x: &Array2<f64>, params: &[(&str, ParamValue)]) -> std::result::Result<Fitted, String> {
    let info = lookup(method).unwrap();
    let mut p = ParamMap::new();
    for (k, v) in params {
        p.insert((*k).into(), v.clone());
    }
    let (_, m) = info.instantiate(&p).map_err(|e| e.to_string())?;
    m.fit(x.view(), 0).map_err(|e| e.to_string())
}

fn fit(x: &Array2<f64>, params: &[(&str, ParamValue)]) -> std::result::Result<Fitted, String> {
    fit_method("fastmvu", x, params)
}

/// A deterministic pseudo-random number in [-0.5, 0.5).
fn hash(i: usize) -> f64 {
    (((i as f64 + 1.0) * 0.754_877_666_246_692_8).fract()) - 0.5
}

fn ring(n: usize, radius: f64, jitter: f64) -> Array2<f64> {
    Array2::from_shape_fn((n, 2), |(i, c)| {
        let a = 2.0 * std::f64::consts::PI * (i as f64 + jitter * hash(i)) / n as f64;
        radius * if c == 0 { a.cos() } else { a.sin() }
    })
}

#[test]
fn stress_gradient_matches_central_differences() {
    let (n, q) = (12, 3);
    let y: Vec<f64> = (0..n * q).map(|i| hash(7 * i + 3)).collect();
    let pairs: Vec<(usize, usize)> = (0..n).flat_map(|i| [(i, (i + 1) % n), (i, (i + 5) % n)]).collect();
    let t: Vec<f64> = (0..pairs.len()).map(|e| 0.1 + 0.3 * (hash(e) + 0.5)).collect();
    let mut g = vec![0.0; n * q];
    edge_stress(&y, q, &pairs, &t, &mut g);
    let h = 1e-6;
    let mut scratch = vec![0.0; n * q];
    for i in 0..n * q {
        let (mut yp, mut ym) = (y.clone(), y.clone());
        yp[i] += h;
        ym[i] -= h;
        let fd = (edge_stress(&yp, q, &pairs, &t, &mut scratch) - edge_stress(&ym, q, &pairs, &t, &mut scratch)) / (2.0 * h);
        assert!((fd - g[i]).abs() <= 1e-7 * (1.0 + g[i].abs()), "coordinate {i}: analytic {} vs central difference {fd}", g[i]);
    }
}

/// A small basis: 30 points in r = 4 dimensions and a ring-plus-chords graph (more pairs than the
/// 10 unknowns of a 4 x 4 symmetric P, in general position).
fn ls_problem() -> (Array2<f64>, Vec<(usize, usize)>) {
    let n = 30;
    let u = Array2::from_shape_fn((n, 4), |(i, c)| hash(11 * i + 5 * c + 1));
    let pairs = (0..n).flat_map(|i| [(i, (i + 1) % n), (i, (i + 7) % n)]).collect();
    (u, pairs)
}

fn quad(u: &Array2<f64>, pairs: &[(usize, usize)], p: &Array2<f64>) -> Vec<f64> {
    pairs
        .iter()
        .map(|&(i, j)| {
            let a: Array1<f64> = &u.row(i) - &u.row(j);
            a.dot(&p.dot(&a))
        })
        .collect()
}

#[test]
fn psd_least_squares_recovers_a_realisable_matrix() {
    let (u, pairs) = ls_problem();
    // P* = B B^T + 0.1 I, positive definite: the targets it produces are fitted exactly by P*
    // alone (the operator is injective here), so the solver must return it
    let b = Array2::from_shape_fn((4, 4), |(a, c)| hash(3 * a + 17 * c + 2));
    let p_star = b.dot(&b.t()) + Array2::<f64>::eye(4) * 0.1;
    let t = quad(&u, &pairs, &p_star);
    let zero = Array2::<f64>::zeros((4, 4));
    // each stage alone (projected gradients; L-BFGS on the factor) and both
    // (and the factor stage with its width adapted every 25 iterations, alone and with stage 2)
    for (factor_iter, max_iter, truncate) in [(0, 20000, 0), (2000, 0, 0), (50, 20000, 0), (2000, 0, 25), (50, 20000, 25)] {
        let sol = psd_least_squares("test", u.view(), &pairs, &t, &zero, factor_iter, max_iter, 1e-12, truncate).unwrap();
        let err = (&sol.p - &p_star).iter().map(|v| v * v).sum::<f64>().sqrt() / p_star.iter().map(|v| v * v).sum::<f64>().sqrt();
        assert!(
            err < 1e-6,
            "stages ({factor_iter}, {max_iter}): relative error {err:.3e} after {} + {} steps (KKT {:.2e})",
            sol.factor_iterations,
            sol.iterations,
            sol.kkt_residual
        );
        assert!(sol.objective.abs() < 1e-10, "stages ({factor_iter}, {max_iter}): objective {}", sol.objective);
    }
}

#[test]
fn psd_least_squares_meets_the_kkt_conditions_with_the_cone_active() {
    let (u, pairs) = ls_problem();
    // targets of an indefinite matrix: the unconstrained optimum is not PSD, so the cone binds.
    // Optimality of min f over PSD: P >= 0, G = grad f(P) >= 0 and P G = 0 (complementarity),
    // checked with a gradient computed here, independently of the solver's.
    let p_ind = Array2::from_diag(&ndarray::arr1(&[1.0, 0.5, -0.7, -0.2]));
    let t = quad(&u, &pairs, &p_ind);
    let reward = Array2::<f64>::eye(4) * 1e-3;
    let mut objectives = Vec::new();
    // the last: the factor stage alone with its width adapted (rounds of 5, 5, 10, ...
    // iterations), which must drop the directions the optimum does not use (`check_kkt`: the
    // cone active) and end no further from the KKT conditions than the full-width stage, which
    // keeps them (both stop on L-BFGS's relative reduction of f, after 20-40 iterations)
    let mut residuals = Vec::new();
    for (factor_iter, max_iter, truncate) in [(0, 20000, 0), (2000, 0, 0), (2000, 0, 5)] {
        let sol = psd_least_squares("test", u.view(), &pairs, &t, &reward, factor_iter, max_iter, 1e-11, truncate).unwrap();
        check_kkt(&u, &pairs, &t, &reward, &sol.p);
        if truncate > 0 {
            assert!(sol.factor_iterations > truncate, "no round ended in a truncation ({} iterations)", sol.factor_iterations);
        }
        objectives.push(sol.objective);
        residuals.push(sol.kkt_residual);
    }
    assert!(residuals[2] <= residuals[1], "adapted width: residual {:.2e} against the full width's {:.2e}", residuals[2], residuals[1]);
    // the factor stage alone (unconstrained L-BFGS on P = B B^T, full width or adapted) and
    // projected gradients alone reach the same optimum
    for k in 1..objectives.len() {
        let rel = (objectives[0] - objectives[k]).abs() / objectives[0].abs().max(1e-300);
        assert!(rel < 1e-8, "objectives {objectives:?} differ by {rel:.3e} (relative)");
    }
}

/// P >= 0, G = grad f(P) >= 0 and P G = 0, with G computed here, independently of the solver.
fn check_kkt(u: &Array2<f64>, pairs: &[(usize, usize)], t: &[f64], reward: &Array2<f64>, p: &Array2<f64>) {
    let s = quad(u, pairs, p);
    let mut g = -reward;
    for (e, &(i, j)) in pairs.iter().enumerate() {
        let a: Array1<f64> = &u.row(i) - &u.row(j);
        let outer = a.view().insert_axis(ndarray::Axis(1)).dot(&a.view().insert_axis(ndarray::Axis(0)));
        g = g + outer * (2.0 * (s[e] - t[e]));
    }
    let ep = eigh(p.view()).unwrap();
    let eg = eigh(((&g + &g.t()) * 0.5).view()).unwrap();
    let scale = g.iter().map(|v| v.abs()).fold(0.0, f64::max).max(1.0);
    assert!(ep.values[0] > -1e-10, "P not PSD: {:?}", ep.values);
    assert!(ep.values.iter().filter(|&&v| v > 1e-6).count() < 4, "the cone should be active: eigenvalues of P {:?}", ep.values);
    assert!(eg.values[0] > -1e-6 * scale, "gradient not PSD: {:?}", eg.values);
    let comp = p.dot(&g).iter().map(|v| v.abs()).fold(0.0, f64::max);
    assert!(comp < 1e-6 * scale, "complementarity |P G| = {comp:.3e}");
}

#[test]
fn unit_edge_lengths_turn_a_ring_into_a_regular_polygon_of_side_one() {
    // 60 points on a circle of radius 0.5 with uneven spacing; k = 2 links each point to its two
    // ring neighbours. drtoolbox's FastMVU targets squared length 1 on every edge whatever the
    // data say, so the exact answer is the regular 60-gon of side 1: circumradius 1 / (2 sin(pi/60)).
    let n = 60;
    let x = ring(n, 0.5, 0.6);
    let f = fit(&x, &[("dim", ParamValue::Int(2)), ("k", ParamValue::Int(2))]).unwrap();
    let y = f.embedding().unwrap();
    for i in 0..n {
        let j = (i + 1) % n;
        let len = (&y.row(i) - &y.row(j)).mapv(|v| v * v).sum().sqrt();
        assert!((len - 1.0).abs() < 1e-4, "edge {i}-{j} has length {len}");
    }
    let centre = y.mean_axis(ndarray::Axis(0)).unwrap();
    let want = 1.0 / (2.0 * (std::f64::consts::PI / n as f64).sin());
    for i in 0..n {
        let rad = (&y.row(i) - &centre).mapv(|v| v * v).sum().sqrt();
        assert!((rad - want).abs() < 1e-3 * want, "point {i} at radius {rad}, regular polygon {want}");
    }
}

#[test]
fn data_edge_lengths_reproduce_the_input_up_to_scale() {
    // the same uneven ring with edge_lengths = "data": targets are squared lengths over their
    // maximum, which the input polygon scaled by 1 / (longest edge) meets exactly (stress 0)
    let n = 60;
    let x = ring(n, 0.5, 0.6);
    let f = fit(&x, &[("dim", ParamValue::Int(2)), ("k", ParamValue::Int(2)), ("edge_lengths", ParamValue::Str("data".into()))]).unwrap();
    let y = f.embedding().unwrap();
    let len_x: Vec<f64> = (0..n).map(|i| (&x.row(i) - &x.row((i + 1) % n)).mapv(|v| v * v).sum().sqrt()).collect();
    let max_x = len_x.iter().copied().fold(0.0, f64::max);
    for i in 0..n {
        let len = (&y.row(i) - &y.row((i + 1) % n)).mapv(|v| v * v).sum().sqrt();
        assert!((len - len_x[i] / max_x).abs() < 1e-3, "edge {i}: {len} vs {}", len_x[i] / max_x);
    }
    assert!(f.notes.iter().any(|s| s.contains("edge lengths: data")), "{:?}", f.notes);
}

#[test]
fn bad_input_gets_clear_errors() {
    let two_rings = {
        let a = ring(20, 1.0, 0.0);
        let b = ring(20, 1.0, 0.0) + 10.0;
        ndarray::concatenate(ndarray::Axis(0), &[a.view(), b.view()]).unwrap()
    };
    let err = fit(&two_rings, &[("dim", ParamValue::Int(2)), ("k", ParamValue::Int(2)), ("disconnected", ParamValue::Str("error".into()))]).unwrap_err();
    assert!(err.contains("connected components"), "{err}");
    // the default joins them and says so
    let f = fit(&two_rings, &[("dim", ParamValue::Int(2)), ("k", ParamValue::Int(2))]).unwrap();
    assert!(f.notes.iter().any(|s| s.contains("joined them")), "{:?}", f.notes);
    // the basis needs 2 dim + 1 eigenvectors
    let err = fit(&ring(8, 1.0, 0.0), &[("dim", ParamValue::Int(4)), ("k", ParamValue::Int(2))]).unwrap_err();
    assert!(err.contains("2 dim + 1"), "{err}");
    let mut nan = ring(10, 1.0, 0.0);
    nan[[3, 1]] = f64::NAN;
    assert!(fit(&nan, &[("dim", ParamValue::Int(2)), ("k", ParamValue::Int(2))]).unwrap_err().contains("non-finite"));
}

#[test]
fn drtoolbox_mvu_fits_data_units_and_scales_with_the_data() {
    // cca.m in MVU mode fits the squared input distances themselves: LLE's basis is scale-free
    // (its regulariser is relative to tr(G_i)), so scaling the data by 10 scales P by 100 and the
    // embedding by 10. A wrong target (unit or normalised lengths) would break the ratio.
    let n = 80;
    let x = Array2::from_shape_fn((n, 3), |(i, c)| {
        let s = 3.0 * std::f64::consts::PI * i as f64 / n as f64;
        match c {
            0 => s.cos() * (1.0 + 0.1 * s),
            1 => s.sin() * (1.0 + 0.1 * s),
            _ => 0.3 * hash(i),
        }
    });
    let params = [("dim", ParamValue::Int(2)), ("k", ParamValue::Int(6))];
    let a = fit_method("mvu-drtoolbox", &x, &params).unwrap();
    let b = fit_method("mvu-drtoolbox", &(&x * 10.0), &params).unwrap();
    let (ya, yb) = (a.embedding().unwrap(), b.embedding().unwrap());
    let diff = (&(ya * 10.0) - yb).iter().map(|v| v.abs()).fold(0.0, f64::max);
    let size = yb.iter().map(|v| v.abs()).fold(0.0, f64::max);
    assert!(diff < 1e-4 * size, "10 x data should give 10 x embedding: max difference {diff:.3e} (scale {size:.3e})");
    assert!(a.notes.iter().any(|s| s.contains("cca (MVU mode")), "{:?}", a.notes);
}
