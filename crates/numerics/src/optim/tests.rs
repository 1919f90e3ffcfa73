//! Tests of both bound-constrained solvers on the same problems (each test runs [`Solver::ALL`]),
//! plus checks specific to the projected solver (chunked passes, thread-count determinism,
//! non-finite regions) and its agreement with the Fortran L-BFGS-B.

use super::*;

fn opts() -> BoundedOptions {
    BoundedOptions { pgtol: 1e-10, factr: 10.0, ..Default::default() }
}

/// f = sum_i c_i (x_i - a_i)^2 on a box that excludes some a_i: the solution is the projection
/// of a onto the box (separable, so this is exact).
#[test]
fn quadratic_with_solution_outside_the_box() {
    for solver in Solver::ALL {
        let a = [3.0, -2.0, 0.5, 10.0, -7.0];
        let c = [1.0, 2.0, 0.5, 4.0, 1.5];
        let lo = [-1.0, -1.0, -1.0, f64::NEG_INFINITY, 0.0];
        let hi = [1.0, 1.0, 1.0, 2.0, f64::INFINITY];
        let r = minimize(
            solver,
            |x, g| {
                let mut f = 0.0;
                for i in 0..5 {
                    f += c[i] * (x[i] - a[i]).powi(2);
                    g[i] = 2.0 * c[i] * (x[i] - a[i]);
                }
                f
            },
            &[0.0; 5],
            &lo,
            &hi,
            &opts(),
        )
        .unwrap();
        let want = [1.0, -1.0, 0.5, 2.0, 0.0];
        for i in 0..5 {
            assert!((r.x[i] - want[i]).abs() < 1e-9, "x[{i}] = {} != {}", r.x[i], want[i]);
        }
        assert!(r.converged, "{}", r.message);
        assert!(r.projected_gradient_norm < 1e-8, "pg = {}", r.projected_gradient_norm);
        // active bounds: the gradient points outwards there
        assert!(r.gradient[0] < 0.0 && r.gradient[1] > 0.0 && r.gradient[3] < 0.0 && r.gradient[4] > 0.0);
        eprintln!("{solver:?} quadratic: {} its, {} evals, pg = {:.2e}, {}", r.iterations, r.evaluations, r.projected_gradient_norm, r.message);
    }
}

fn rosenbrock(x: &[f64], g: &mut [f64]) -> f64 {
    let n = x.len();
    let mut f = 0.0;
    g.iter_mut().for_each(|v| *v = 0.0);
    for i in 0..n - 1 {
        let t1 = x[i + 1] - x[i] * x[i];
        let t2 = 1.0 - x[i];
        f += 100.0 * t1 * t1 + t2 * t2;
        g[i] += -400.0 * x[i] * t1 - 2.0 * t2;
        g[i + 1] += 200.0 * t1;
    }
    f
}

/// Unconstrained Rosenbrock (loose box): minimum at 1.
#[test]
fn rosenbrock_interior_minimum() {
    for solver in Solver::ALL {
        let n = 10;
        let r = minimize(solver, rosenbrock, &vec![-1.2; n], &vec![-5.0; n], &vec![5.0; n], &opts()).unwrap();
        assert!(r.x.iter().all(|&v| (v - 1.0).abs() < 1e-6), "{:?}", r.x);
        assert!(r.f < 1e-12);
        for w in r.history.windows(2) {
            assert!(w[1] <= w[0], "history must not increase: {} -> {}", w[0], w[1]);
        }
        eprintln!("{solver:?} rosenbrock: {} its, {} evals, pg = {:.2e}, {}", r.iterations, r.evaluations, r.projected_gradient_norm, r.message);
    }
}

/// The `driver1` problem of the L-BFGS-B distribution: n = 25,
/// `f = 0.25 (x_1 - 1)^2 + sum_{i>=2} 4 (x_i - x_{i-1}^2)^2`, odd variables (1-based) in
/// [1, 100], even ones in [-100, 100], x0 = 3. Its unique minimiser x = 1 is feasible (f* = 0)
/// with the odd variables at their lower bound.
#[test]
fn bounded_rosenbrock_is_a_kkt_point() {
    for solver in Solver::ALL {
        let n = 25;
        let lo: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { 1.0 } else { -100.0 }).collect();
        let hi = vec![100.0; n];
        // driver1 uses a different (extended) Rosenbrock: f = 0.25 (x1 - 1)^2 + sum 4 (x_i - x_{i-1}^2)^2
        let f = |x: &[f64], g: &mut [f64]| {
            let n = x.len();
            let mut t1 = x[1] - x[0] * x[0];
            g[0] = 2.0 * (x[0] - 1.0) - 16.0 * x[0] * t1;
            let mut fx = 0.25 * (x[0] - 1.0).powi(2);
            for i in 1..n - 1 {
                let t2 = t1;
                t1 = x[i + 1] - x[i] * x[i];
                g[i] = 8.0 * t2 - 16.0 * x[i] * t1;
            }
            g[n - 1] = 8.0 * t1;
            for i in 1..n {
                fx += 4.0 * (x[i] - x[i - 1] * x[i - 1]).powi(2);
            }
            fx
        };
        let r = minimize(solver, f, &vec![3.0; n], &lo, &hi, &opts()).unwrap();
        assert!(r.converged, "{}", r.message);
        assert!(r.projected_gradient_norm < 1e-6, "pg = {}", r.projected_gradient_norm);
        // the global minimum x = 1 is feasible: f* = 0
        assert!(r.f < 1e-10, "f = {}", r.f);
        eprintln!("{solver:?} driver1: {} its, {} evals, f = {:.3e}, pg = {:.2e}, {}", r.iterations, r.evaluations, r.f, r.projected_gradient_norm, r.message);
    }
}

/// Rosenbrock with the minimum cut off by x_i <= 0.5 (n = 2): the KKT point is x = (0.5, 0.25)
/// with x_1 at its upper bound (the first-order conditions: df/dx2 = 0 gives x2 = x1^2, and
/// df/dx1 = -2 (1 - x1) < 0 pushes against the bound).
#[test]
fn rosenbrock_with_active_upper_bound() {
    for solver in Solver::ALL {
        let r = minimize(solver, rosenbrock, &[-1.0, 0.0], &[f64::NEG_INFINITY; 2], &[0.5, 0.5], &opts()).unwrap();
        assert!((r.x[0] - 0.5).abs() < 1e-9 && (r.x[1] - 0.25).abs() < 1e-8, "{:?}", r.x);
        assert!((r.f - 0.25).abs() < 1e-12);
        assert!(r.projected_gradient_norm < 1e-8);
        assert!((r.gradient[0] + 1.0).abs() < 1e-6, "multiplier of x1 <= 0.5 is 1: g = {:?}", r.gradient);
    }
}

/// A convex QP with a known KKT point: min 1/2 x^T A x - b^T x, x >= 0, with A SPD. The
/// solution satisfies x >= 0, g = A x - b >= 0 and x_i g_i = 0; checked against an
/// exhaustive active-set enumeration (n = 6: 64 sets).
#[test]
fn nonnegative_qp_matches_active_set_enumeration() {
    for solver in Solver::ALL {
        let n = 6;
        let mut a = vec![vec![0.0; n]; n];
        for i in 0..n {
            for j in 0..n {
                a[i][j] = 1.0 / (1.0 + (i as f64 - j as f64).abs()) + if i == j { 1.0 } else { 0.0 };
            }
        }
        let b = [1.0, -2.0, 0.5, 3.0, -1.0, 0.2];
        let fg = |x: &[f64], g: &mut [f64]| {
            let mut f = 0.0;
            for i in 0..n {
                g[i] = (0..n).map(|j| a[i][j] * x[j]).sum::<f64>() - b[i];
                f += 0.5 * x[i] * (g[i] + b[i]) - b[i] * x[i];
            }
            f
        };
        let r = minimize(solver, fg, &[1.0; 6], &[0.0; 6], &[f64::INFINITY; 6], &opts()).unwrap();
        // enumerate the free sets: solve A_FF x_F = b_F, keep the one satisfying the KKT conditions
        let mut best: Option<Vec<f64>> = None;
        for mask in 0u32..(1 << n) {
            let free: Vec<usize> = (0..n).filter(|i| mask >> i & 1 == 1).collect();
            let k = free.len();
            let mut m = vec![vec![0.0; k + 1]; k];
            for (r_, &i) in free.iter().enumerate() {
                for (c, &j) in free.iter().enumerate() {
                    m[r_][c] = a[i][j];
                }
                m[r_][k] = b[i];
            }
            // Gaussian elimination (SPD, no pivoting needed)
            for p in 0..k {
                for r2 in p + 1..k {
                    let fac = m[r2][p] / m[p][p];
                    for c in p..=k {
                        m[r2][c] -= fac * m[p][c];
                    }
                }
            }
            let mut xf = vec![0.0; k];
            for p in (0..k).rev() {
                xf[p] = (m[p][k] - (p + 1..k).map(|c| m[p][c] * xf[c]).sum::<f64>()) / m[p][p];
            }
            let mut x = vec![0.0; n];
            for (r_, &i) in free.iter().enumerate() {
                x[i] = xf[r_];
            }
            let g: Vec<f64> = (0..n).map(|i| (0..n).map(|j| a[i][j] * x[j]).sum::<f64>() - b[i]).collect();
            if x.iter().all(|&v| v >= -1e-12) && (0..n).all(|i| x[i] > 1e-12 || g[i] >= -1e-12) {
                best = Some(x);
            }
        }
        let want = best.expect("a KKT point exists");
        for i in 0..n {
            assert!((r.x[i] - want[i]).abs() < 1e-8, "x = {:?}, want {:?}", r.x, want);
        }
        assert!(want.contains(&0.0), "the test needs an active bound");
        assert!(r.projected_gradient_norm < 1e-9);
    }
}

#[test]
fn bad_arguments_are_errors() {
    for solver in Solver::ALL {
        let f = |_: &[f64], g: &mut [f64]| {
            g[0] = 0.0;
            0.0
        };
        assert!(matches!(minimize(solver, f, &[0.0], &[1.0], &[0.0], &opts()), Err(BoundedError::Bounds { .. })));
        assert!(matches!(minimize(solver, f, &[0.0], &[0.0, 1.0], &[1.0], &opts()), Err(BoundedError::Shape(_))));
        assert!(matches!(minimize(solver, f, &[f64::NAN], &[0.0], &[1.0], &opts()), Err(BoundedError::Invalid(_))));
        assert!(matches!(minimize(solver, f, &[0.0], &[f64::NAN], &[1.0], &opts()), Err(BoundedError::Bounds { .. })));
        let nan = |_: &[f64], g: &mut [f64]| {
            g[0] = 0.0;
            f64::NAN
        };
        assert!(matches!(minimize(solver, nan, &[0.0], &[0.0], &[1.0], &opts()), Err(BoundedError::NonFiniteStart(_))));
    }
}

#[test]
fn iteration_limit_is_reported_and_point_is_accepted() {
    for solver in Solver::ALL {
        let o = BoundedOptions { max_iter: 3, ..opts() };
        let r = minimize(solver, rosenbrock, &[-1.2, 1.0], &[-5.0; 2], &[5.0; 2], &o).unwrap();
        assert!(!r.converged && r.iterations == 3 && r.message.contains("max_iter"), "{}", r.message);
        let mut g = [0.0; 2];
        assert_eq!(rosenbrock(&r.x, &mut g), r.f);
        assert_eq!(g.to_vec(), r.gradient);
    }
}

/// A coupled convex problem large enough to span several chunks of the projected solver:
/// `f = 1/2 sum_i c_i (x_i - a_i)^2 + rho/2 (sum_i x_i)^2 + sum_i b_i x_i x_{i+1} / 4` with the
/// given `c_i >= 1`, small `b` (strictly convex), meant for `0 <= x_i <= 2`: many bounds active
/// at both ends. Also writes the exact Hessian diagonal `c_i + rho` into `h` when it is not empty.
fn coupled_with(c: Vec<f64>) -> impl Fn(&[f64], &mut [f64], &mut [f64]) -> f64 {
    let n = c.len();
    let a: Vec<f64> = (0..n).map(|i| 3.0 * ((i as f64 * 0.37).sin())).collect();
    let b: Vec<f64> = (0..n).map(|i| 0.2 * ((i as f64 * 1.3).cos())).collect();
    let rho = 1.0 / n as f64;
    move |x: &[f64], g: &mut [f64], h: &mut [f64]| {
        let sum: f64 = x.iter().sum();
        let mut fx = 0.5 * rho * sum * sum;
        for i in 0..x.len() {
            fx += 0.5 * c[i] * (x[i] - a[i]).powi(2);
            g[i] = c[i] * (x[i] - a[i]) + rho * sum;
        }
        for i in 0..x.len() - 1 {
            fx += 0.25 * b[i] * x[i] * x[i + 1];
            g[i] += 0.25 * b[i] * x[i + 1];
            g[i + 1] += 0.25 * b[i] * x[i];
        }
        for (hi, ci) in h.iter_mut().zip(&c) {
            *hi = ci + rho;
        }
        fx
    }
}

/// [`coupled_with`] at `c_i = 1 + (i mod 7)`, with its box `[0, 2]^n`.
fn coupled(n: usize) -> (impl Fn(&[f64], &mut [f64]) -> f64, Vec<f64>, Vec<f64>) {
    let f = coupled_with((0..n).map(|i| 1.0 + (i % 7) as f64).collect());
    (move |x: &[f64], g: &mut [f64]| f(x, g, &mut []), vec![0.0; n], vec![2.0; n])
}

/// Both solvers reach the same KKT point of a strictly convex problem with n spanning several
/// chunks (so the chunked reductions and the ring of stored pairs are exercised). `f` is ~6e4, so
/// its rounding (~1e-11) limits the attainable KKT residual to ~1e-6: both are asked for that.
#[test]
fn solvers_agree_on_a_strictly_convex_multi_chunk_problem() {
    let n = 3 * projected_lbfgs::CHUNK + 17;
    let (f, lo, hi) = coupled(n);
    let o = BoundedOptions { m: 5, pgtol: 1e-9, factr: 0.0, max_iter: 2000, ..Default::default() };
    let rs: Vec<BoundedResult> = Solver::ALL.iter().map(|&s| minimize(s, &f, &vec![1.0; n], &lo, &hi, &o).unwrap()).collect();
    for (s, r) in Solver::ALL.iter().zip(&rs) {
        eprintln!("{s:?}: {} its, {} evals, f = {:.15e}, pg = {:.2e} {}", r.iterations, r.evaluations, r.f, r.projected_gradient_norm, r.message);
        assert!(r.projected_gradient_norm <= 2e-6, "{s:?}: {} pg = {:.2e}", r.message, r.projected_gradient_norm);
        let at_lower = r.x.iter().filter(|&&v| v == 0.0).count();
        let at_upper = r.x.iter().filter(|&&v| v == 2.0).count();
        assert!(at_lower > n / 10 && at_upper > n / 10, "{s:?}: the test needs both bounds active ({at_lower}, {at_upper})");
        for w in r.history.windows(2) {
            assert!(w[1] <= w[0], "{s:?}: history must not increase");
        }
    }
    // strong convexity modulus >= 0.9 (c_i >= 1, |b_i| / 4 * 2 <= 0.1): |x - x*|_2 <= ||proj g||_2 / 0.9
    let dx = rs[0].x.iter().zip(&rs[1].x).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(dx < 2e-5, "solutions differ by {dx:.2e}");
    assert!((rs[0].f - rs[1].f).abs() <= 1e-13 * rs[0].f.abs());
}

/// The projected solver gives bit-identical iterates with 1, 2 and 3 threads.
#[test]
fn projected_solver_is_bit_identical_across_thread_counts() {
    let n = 2 * projected_lbfgs::CHUNK + 5;
    let (f, lo, hi) = coupled(n);
    let o = BoundedOptions { m: 4, max_iter: 40, pgtol: 0.0, factr: 0.0, ..Default::default() };
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| minimize(Solver::Projected, &f, &vec![1.0; n], &lo, &hi, &o).unwrap())
    };
    let r1 = run(1);
    for t in [2, 3] {
        let rt = run(t);
        assert_eq!(r1.history, rt.history, "{t} threads");
        assert!(r1.x == rt.x && r1.gradient == rt.gradient, "{t} threads");
    }
    assert!(r1.iterations >= 10, "{} iterations: {}", r1.iterations, r1.message);
}

/// `f` is undefined (NaN) outside `x > 0` although the box allows `x >= -1`: the projected solver
/// shortens steps that leave the domain and still converges (`f = sum x_i - log x_i`, minimum at 1).
#[test]
fn projected_solver_backs_off_from_non_finite_trial_points() {
    let f = |x: &[f64], g: &mut [f64]| {
        let mut fx = 0.0;
        for i in 0..x.len() {
            fx += x[i] - x[i].ln() + 0.5 * (i as f64) * (x[i] - 1.0).powi(2);
            g[i] = 1.0 - 1.0 / x[i] + (i as f64) * (x[i] - 1.0);
        }
        fx
    };
    let r = minimize(Solver::Projected, f, &[5.0, 0.01, 3.0], &[-1.0; 3], &[10.0; 3], &opts()).unwrap();
    assert!(r.converged, "{}", r.message);
    assert!(r.x.iter().all(|&v| (v - 1.0).abs() < 1e-7), "{:?}", r.x);
}

/// Solver names round-trip (they are the `solver` parameter values of MPME and ESL).
#[test]
fn solver_names_round_trip() {
    for s in Solver::ALL {
        assert_eq!(Solver::from_name(s.name()), Some(s));
    }
    assert_eq!(Solver::from_name("bfgs"), None);
}

/// `f = 1e8 + sum_i a_i (x_i^2 / 2 + x_i^4) + e(x)`, `a_i` from 1 to 100, from `x_i = 1e-2`, with
/// a deterministic "rounding error" `|e(x)| <= 1e-6` (a log-det of thousands of terms carries
/// one like it): below a gradient of ~1e-4 the decrease the Armijo test asks for is under `e`, so
/// the plain line search fails short of `pgtol = 1e-9`; with `noise` the approximate Wolfe test
/// accepts the steps the (exact) slope shows are progress, and the solver reaches it.
#[test]
fn approximate_wolfe_steps_go_below_the_rounding_of_f() {
    let n = 50;
    let a: Vec<f64> = (0..n).map(|i| 1.0 + 99.0 * i as f64 / (n - 1) as f64).collect();
    let f = |x: &[f64], g: &mut [f64]| {
        let mut s = 1e8;
        let mut h = 0.0;
        for i in 0..x.len() {
            s += a[i] * (0.5 * x[i] * x[i] + x[i].powi(4));
            g[i] = a[i] * (x[i] + 4.0 * x[i].powi(3));
            h += (i as f64 + 1.0) * x[i];
        }
        s + 1e-6 * (1e9 * h).sin()
    };
    let (lo, hi) = (vec![-1.0; n], vec![1.0; n]);
    let base = BoundedOptions { m: 5, pgtol: 1e-9, factr: 0.0, max_iter: 2000, ..Default::default() };
    let plain = minimize(Solver::Projected, f, &vec![1e-2; n], &lo, &hi, &base).unwrap();
    assert!(plain.projected_gradient_norm > 1e-9 && !plain.converged, "without noise: {} pg = {:.2e}", plain.message, plain.projected_gradient_norm);
    let noisy = minimize(Solver::Projected, f, &vec![1e-2; n], &lo, &hi, &BoundedOptions { noise: 1e-13, ..base }).unwrap();
    assert!(noisy.converged && noisy.projected_gradient_norm <= 1e-9, "with noise: {} pg = {:.2e}", noisy.message, noisy.projected_gradient_norm);
    // f never rose by more than the allowed noise
    for w in noisy.history.windows(2) {
        assert!(w[1] <= w[0] + 1e-13 * w[0].abs(), "{} -> {}", w[0], w[1]);
    }
}

/// [`coupled_with`] at `c_i = 10^(i mod 3)`: curvatures spanning two orders of magnitude.
fn badly_scaled(n: usize) -> impl Fn(&[f64], &mut [f64], &mut [f64]) -> f64 {
    coupled_with((0..n).map(|i| 10f64.powi((i % 3) as i32)).collect())
}

/// The diagonal preconditioner reaches the same KKT point as the plain solver on a problem whose
/// curvature spans 1 to 100, in a fraction of the iterations; both bounds are active.
#[test]
fn the_diagonal_preconditioner_reaches_the_same_point_in_fewer_iterations() {
    let n = 2 * projected_lbfgs::CHUNK + 11;
    let f = badly_scaled(n);
    let (lo, hi) = (vec![0.0; n], vec![2.0; n]);
    // f is ~4e5: below a gradient of ~1e-5 the Armijo decrease is under its rounding, so both
    // runs accept steps by the approximate Wolfe test
    let o = BoundedOptions { m: 5, pgtol: 1e-7, factr: 0.0, max_iter: 20000, max_eval: 100000, noise: 1e-13 };
    let plain = minimize(Solver::Projected, |x, g| f(x, g, &mut []), &vec![1.0; n], &lo, &hi, &o).unwrap();
    let pre = projected_lbfgs::minimize_preconditioned(&f, &vec![1.0; n], &lo, &hi, &o).unwrap();
    eprintln!("plain: {} its, f = {:.15e}; preconditioned: {} its, f = {:.15e}", plain.iterations, plain.f, pre.iterations, pre.f);
    for r in [&plain, &pre] {
        assert!(r.converged && r.projected_gradient_norm <= 1e-7, "{} pg = {:.2e}", r.message, r.projected_gradient_norm);
        for w in r.history.windows(2) {
            assert!(w[1] <= w[0] + 1e-13 * w[0].abs(), "history must not increase beyond the noise");
        }
    }
    let (at_lo, at_hi) = (pre.x.iter().filter(|&&v| v == 0.0).count(), pre.x.iter().filter(|&&v| v == 2.0).count());
    assert!(at_lo > n / 10 && at_hi > n / 10, "both bounds must be active ({at_lo}, {at_hi})");
    // strong convexity modulus >= 0.9: |x - x*|_inf <= ||proj g||_2 / 0.9 for each
    let dx = plain.x.iter().zip(&pre.x).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(dx < 1e-5, "solutions differ by {dx:.2e}");
    assert!((plain.f - pre.f).abs() <= 1e-10 * plain.f.abs());
    assert!(4 * pre.iterations < plain.iterations, "preconditioned {} vs plain {} iterations", pre.iterations, plain.iterations);
}

/// With a unit diagonal the preconditioned solver takes exactly the plain solver's iterates (the
/// generalised compact form reduces to the scalar one bit for bit), and it is bit-identical
/// across thread counts with a real diagonal.
#[test]
fn the_preconditioned_solver_reduces_to_the_plain_one_and_is_deterministic() {
    let n = 2 * projected_lbfgs::CHUNK + 5;
    let (f, lo, hi) = coupled(n);
    let o = BoundedOptions { m: 4, max_iter: 40, pgtol: 0.0, factr: 0.0, ..Default::default() };
    let plain = minimize(Solver::Projected, &f, &vec![1.0; n], &lo, &hi, &o).unwrap();
    let unit = projected_lbfgs::minimize_preconditioned(
        |x: &[f64], g: &mut [f64], h: &mut [f64]| {
            h.fill(1.0);
            f(x, g)
        },
        &vec![1.0; n],
        &lo,
        &hi,
        &o,
    )
    .unwrap();
    assert_eq!(plain.history, unit.history);
    assert!(plain.x == unit.x && plain.iterations == unit.iterations && plain.iterations >= 10);
    let scaled = badly_scaled(n);
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| projected_lbfgs::minimize_preconditioned(&scaled, &vec![1.0; n], &vec![0.0; n], &vec![2.0; n], &o).unwrap())
    };
    let r1 = run(1);
    for t in [2, 3] {
        let rt = run(t);
        assert_eq!(r1.history, rt.history, "{t} threads");
        assert!(r1.x == rt.x && r1.gradient == rt.gradient, "{t} threads");
    }
}

/// A diagonal that is not positive and finite at the start is an error, and a trial point where
/// it is not counts as outside the domain (the step is shortened).
#[test]
fn a_bad_diagonal_is_refused_at_the_start_and_avoided_later() {
    let o = opts();
    let zero_h = |x: &[f64], g: &mut [f64], h: &mut [f64]| {
        g.copy_from_slice(x);
        h.fill(0.0);
        0.5 * dot(x, x)
    };
    assert!(matches!(projected_lbfgs::minimize_preconditioned(zero_h, &[1.0, 2.0], &[-5.0; 2], &[5.0; 2], &o), Err(BoundedError::NonFiniteStart(_))));
    // h is NaN for x_0 < 0.5: the minimiser x = (1, 1) is reached from x_0 = 3 without stepping there
    let f = |x: &[f64], g: &mut [f64], h: &mut [f64]| {
        for i in 0..2 {
            g[i] = 10f64.powi(i as i32) * (x[i] - 1.0);
            h[i] = if x[0] < 0.5 { f64::NAN } else { 10f64.powi(i as i32) };
        }
        0.5 * (x[0] - 1.0).powi(2) + 5.0 * (x[1] - 1.0).powi(2)
    };
    let r = projected_lbfgs::minimize_preconditioned(f, &[3.0, -4.0], &[-10.0; 2], &[10.0; 2], &o).unwrap();
    assert!(r.converged && r.x.iter().all(|&v| (v - 1.0).abs() < 1e-9), "{} {:?}", r.message, r.x);
}

/// `sum(a)` is `dot(a, 1)` bit for bit (the same lanes and order), for lengths with and without
/// a tail, and is the exact sum where no rounding can happen.
#[test]
fn sum_is_dot_with_ones() {
    for n in [0, 1, 7, 8, 9, 64, 1001] {
        let a: Vec<f64> = (0..n).map(|k| ((k * 7919 % 1013) as f64 - 500.0) / 3.0).collect();
        assert_eq!(sum(&a).to_bits(), dot(&a, &vec![1.0; n]).to_bits(), "n = {n}");
    }
    let ints: Vec<f64> = (1..=100).map(f64::from).collect();
    assert_eq!(sum(&ints), 5050.0);
}
