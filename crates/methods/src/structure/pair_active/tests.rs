//! Tests of the active-set pair solver: agreement with the full-space solver, the curvature
//! preconditioner, determinism.

use super::*;
use crate::structure::pair_dual::{log_det_grad, solve_pairs};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

#[test]
fn pair_of_inverts_pair_index() {
    for n in [2usize, 3, 7, 40] {
        let mut k = 0;
        for i in 0..n {
            for j in (i + 1)..n {
                assert_eq!(pair_of(n, k), (i, j), "n = {n}, k = {k}");
                k += 1;
            }
        }
    }
}

/// Squared distances of `n` noisy points on two circles (a sparse optimum with two clusters).
fn two_circles(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let pts: Vec<(f64, f64)> = (0..n)
        .map(|i| {
            let t = 2.0 * std::f64::consts::PI * i as f64 / (n / 2) as f64;
            let (cx, r) = if i < n / 2 { (0.0, 1.0) } else { (3.0, 0.6) };
            (cx + r * t.cos() + 0.05 * rng.gen_range(-1.0..1.0), r * t.sin() + 0.05 * rng.gen_range(-1.0..1.0))
        })
        .collect();
    let mut phi = vec![0.0; n_pairs(n)];
    crate::structure::pair_dual::for_each_pair(n, |i, j, k| phi[k] = (pts[i].0 - pts[j].0).powi(2) + (pts[i].1 - pts[j].1).powi(2));
    phi
}

/// `f` and the full KKT residual of packed weights, densely (independent of the solver).
fn dense_f_and_kkt(p: &PairDual, w: &[f64]) -> (f64, f64) {
    let (f, g) = crate::structure::pair_newton::tests::dense_f_g(p, w);
    (f, projected_gradient_norm(w, &g, &vec![0.0; w.len()], &vec![p.upper; w.len()]))
}

/// MPME-shaped (`a = lambda`, `b = 1`, `l = phi / 2`) and ESL-shaped (`a = 1`, `b = 4`, a
/// finite bound reached by some pairs) problems: the active-set optimum has the full-space
/// solver's objective to 1e-8 (relative), and its KKT residual over all pairs, recomputed
/// densely here, is at most the target.
#[test]
fn the_active_set_optimum_is_the_full_space_optimum() {
    let n = 40;
    let phi = two_circles(n, 1);
    let mpme_lin: Vec<f64> = phi.iter().map(|v| 0.5 * v).collect();
    let esl_lin: Vec<f64> = phi.iter().map(|v| 2.0 * 0.9 * (1.0 - (-4.0 * v).exp())).collect();
    let cases = [
        PairDual { n, a: 0.5, b: 1.0, h: 1.0, lin: &mpme_lin, upper: f64::INFINITY },
        PairDual { n, a: 0.5, b: 1.0, h: 1.0, lin: &mpme_lin, upper: 4.0 },
        PairDual { n, a: 1.0, b: 4.0, h: 0.2, lin: &esl_lin, upper: 0.05 },
    ];
    for (c, p) in cases.iter().enumerate() {
        let tol = 1e-9;
        let a = solve_active(p, &ActiveOptions::new(tol, 20000)).unwrap();
        assert!(a.converged, "case {c}: {}", a.message);
        let w = a.packed(n);
        let (f, kkt) = dense_f_and_kkt(p, &w);
        assert!(kkt <= tol, "case {c}: dense KKT residual {kkt:.3e} > {tol:.1e}");
        assert!((f - a.f).abs() <= 1e-10 * f.abs().max(1.0), "case {c}: f {f} against the solver's {}", a.f);
        let full = solve_pairs("test", Solver::Projected, n_pairs(n), p.upper, 20000, tol, |w, g| {
            let ld = log_det_grad(n, w, p.a, p.b, g)?;
            let mut f = -p.h * ld;
            for k in 0..w.len() {
                g[k] = p.lin[k] - p.h * g[k];
                f += p.lin[k] * w[k];
            }
            Ok(f)
        })
        .unwrap();
        assert!((full.f - a.f).abs() <= 1e-8 * full.f.abs(), "case {c}: active f = {} full-space f = {}", a.f, full.f);
        let nnz = w.iter().filter(|&&v| v > 0.0).count();
        assert!(nnz > 0 && nnz < n_pairs(n) / 4, "case {c}: {nnz} edges: the test wants a sparse optimum");
        if p.upper.is_finite() && c == 2 {
            assert!(w.contains(&p.upper), "case {c}: the upper bound is reached");
        }
        // f never rises by more than the rounding the line search allows
        for h in a.history.windows(2) {
            assert!(h[1] <= h[0] + 2.0 * F_NOISE * h[0].abs(), "case {c}: f rose {} -> {}", h[0], h[1]);
        }
    }
}

/// With no pair of negative gradient at `w = 0` the optimum is `w = 0`, found at once.
#[test]
fn zero_is_optimal_when_no_pair_can_gain_an_edge() {
    let n = 12;
    let lin = vec![5.0; n_pairs(n)];
    let p = PairDual { n, a: 1.0, b: 1.0, h: 1.0, lin: &lin, upper: f64::INFINITY };
    let a = solve_active(&p, &ActiveOptions::new(1e-8, 100)).unwrap();
    assert!(a.converged && a.pairs.is_empty() && a.iterations == 0, "{a:?}");
    assert_eq!(a.f, -(n as f64) * 1.0f64.ln());
}

/// The same weights, bit for bit, on 1 and 3 threads, with and without the preconditioner.
#[test]
fn bit_identical_across_thread_counts() {
    let n = 60;
    let phi = two_circles(n, 7);
    let lin: Vec<f64> = phi.iter().map(|v| 0.5 * v).collect();
    let p = PairDual { n, a: 0.3, b: 1.0, h: 1.5, lin: &lin, upper: f64::INFINITY };
    for precondition in [false, true] {
        let opts = ActiveOptions { precondition, ..ActiveOptions::new(1e-8, 5000) };
        let run = |threads: usize| rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| solve_active(&p, &opts).unwrap());
        let (one, three) = (run(1), run(3));
        assert_eq!(one.pairs, three.pairs);
        assert_eq!(one.w.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), three.w.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        assert_eq!(one.f.to_bits(), three.f.to_bits());
    }
}

/// `h b^2 r_ij^2` is the second derivative of `f` along pair (i, j): central differences of
/// the analytic gradient, on the sparse and the dense factorisation.
#[test]
fn the_curvature_is_the_second_derivative_along_each_pair() {
    let n = 14;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let lin: Vec<f64> = (0..n_pairs(n)).map(|_| rng.gen_range(0.0..2.0)).collect();
    let p = PairDual { n, a: 0.4, b: 4.0, h: 1.5, lin: &lin, upper: f64::INFINITY };
    // a working set: a ring plus random chords, weights spread over two decades
    let mut set: Vec<usize> = (0..n).map(|i| pair_index(n, i.min((i + 1) % n), i.max((i + 1) % n))).collect();
    set.extend((0..12).map(|_| rng.gen_range(0..n_pairs(n))));
    set.sort_unstable();
    set.dedup();
    let pairs: Vec<(usize, usize)> = set.iter().map(|&k| pair_of(n, k)).collect();
    let w: Vec<f64> = set.iter().map(|_| 10f64.powf(rng.gen_range(-1.0..1.0))).collect();
    for dense in [false, true] {
        let factor = if dense { Factor::Dense } else { Factor::Sparse(Box::new(SymbolicCholesky::analyze(n, &pairs, Ordering::Auto).unwrap())) };
        let ws = WorkingSet { pairs: pairs.clone(), lin: set.iter().map(|&k| lin[k]).collect(), factor };
        let (mut g, mut c) = (vec![0.0; set.len()], vec![0.0; set.len()]);
        p.evaluate(&ws, &w, &mut g, Some(&mut c)).unwrap();
        let mut g_plain = vec![0.0; set.len()];
        p.evaluate(&ws, &w, &mut g_plain, None).unwrap();
        assert_eq!(g, g_plain, "the curvature does not change the gradient");
        for e in 0..set.len() {
            let step = 1e-5 * w[e];
            let at = |v: f64| {
                let mut x = w.clone();
                x[e] = v;
                let mut gx = vec![0.0; set.len()];
                p.evaluate(&ws, &x, &mut gx, None).unwrap();
                gx[e]
            };
            let fd = (at(w[e] + step) - at(w[e] - step)) / (2.0 * step);
            assert!(c[e] > 0.0 && (fd - c[e]).abs() <= 1e-6 * c[e], "dense {dense}, pair {e}: curvature {} against central differences {fd}", c[e]);
        }
    }
}

/// The preconditioned inner solves reach the plain solver's optimum (objective to 1e-8
/// relative, the dense KKT residual at most the target) in fewer inner iterations, on
/// MPME-shaped problems whose small `a` spreads the pairs' curvatures.
#[test]
fn the_curvature_preconditioner_reaches_the_same_optimum_in_fewer_iterations() {
    let n = 60;
    let phi = two_circles(n, 3);
    let lin: Vec<f64> = phi.iter().map(|v| 0.5 * v).collect();
    for upper in [f64::INFINITY, 20.0] {
        let p = PairDual { n, a: 0.02, b: 1.0, h: 1.0, lin: &lin, upper };
        let tol = 1e-9;
        let plain = solve_active(&p, &ActiveOptions::new(tol, 100_000)).unwrap();
        let pre = solve_active(&p, &ActiveOptions { precondition: true, ..ActiveOptions::new(tol, 100_000) }).unwrap();
        assert!(plain.converged && pre.converged, "{} / {}", plain.message, pre.message);
        let (f, kkt) = dense_f_and_kkt(&p, &pre.packed(n));
        assert!(kkt <= tol, "upper {upper}: dense KKT residual {kkt:.3e} > {tol:.1e}");
        assert!((f - plain.f).abs() <= 1e-8 * f.abs().max(1.0), "upper {upper}: f {f} against the plain solver's {}", plain.f);
        assert!(pre.iterations < plain.iterations, "upper {upper}: {} preconditioned iterations against {} plain", pre.iterations, plain.iterations);
        for h in pre.history.windows(2) {
            assert!(h[1] <= h[0] + 2.0 * F_NOISE * h[0].abs(), "f rose {} -> {}", h[0], h[1]);
        }
        eprintln!("upper {upper}: {} preconditioned inner iterations against {} plain", pre.iterations, plain.iterations);
    }
}
