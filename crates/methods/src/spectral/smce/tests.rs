use super::*;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use structdr_numerics::neighbours::knn;

/// A local problem of `k` random neighbours around the origin in `d` dimensions (row 0 is x_i).
fn random_local(k: usize, d: usize, seed: u64) -> (Array2<f64>, Vec<f64>, Vec<f64>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut x = Array2::from_shape_fn((k + 1, d), |_| rng.gen_range(-1.0..1.0));
    x.row_mut(0).fill(0.0);
    let nb: Vec<usize> = (1..=k).collect();
    local_problem(x.view(), 0, &nb).unwrap()
}

/// The KKT conditions checked from scratch: `g = G c`, the support's `g_j + lambda q_j
/// sign(c_j)` all equal to `-nu`, `|g_j + nu| <= lambda q_j` off it, `1^T c = 1`. Returns the
/// worst violation.
fn kkt_violation(g: &Array2<f64>, q: &[f64], lambda: f64, c: &[f64]) -> f64 {
    let gc = g.dot(&ndarray::Array1::from(c.to_vec()));
    let s: Vec<usize> = (0..c.len()).filter(|&j| c[j] != 0.0).collect();
    let nu = -s.iter().map(|&j| gc[j] + lambda * q[j] * c[j].signum()).sum::<f64>() / s.len() as f64;
    let mut v = (c.iter().sum::<f64>() - 1.0).abs();
    for j in 0..c.len() {
        v = v.max(if c[j] != 0.0 { (gc[j] + lambda * q[j] * c[j].signum() + nu).abs() } else { (gc[j] + nu).abs() - lambda * q[j] });
    }
    v
}

/// Gaussian elimination with partial pivoting (test-only, independent of the solver's
/// Cholesky); `None` if a pivot is below `1e-12` of the largest entry.
fn gauss_solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    let scale = a.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
    for col in 0..n {
        let p = (col..n).max_by(|&r, &s| a[r][col].abs().total_cmp(&a[s][col].abs()))?;
        if a[p][col].abs() < 1e-12 * scale {
            return None;
        }
        a.swap(col, p);
        b.swap(col, p);
        for r in col + 1..n {
            let f = a[r][col] / a[col][col];
            for c in col..n {
                a[r][c] -= f * a[col][c];
            }
            b[r] -= f * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        x[r] = (b[r] - (r + 1..n).map(|c| a[r][c] * x[c]).sum::<f64>()) / a[r][r];
    }
    Some(x)
}

/// The exact minimiser by enumeration of all 3^K - 1 sign patterns: each pattern's KKT system
/// `[G_SS 1; 1^T 0] [c_S; nu] = [-lambda q_S s_S; 1]`, kept if its solution has the pattern's
/// signs (then it is feasible); the least objective among those is the optimum.
fn brute_force(g: &Array2<f64>, q: &[f64], lambda: f64) -> (Vec<f64>, f64) {
    let k = q.len();
    let mut best = (Vec::new(), f64::INFINITY);
    for code in 1..3usize.pow(k as u32) {
        let mut s = vec![0i8; k];
        let mut r = code;
        for sj in s.iter_mut() {
            *sj = [0, 1, -1][r % 3];
            r /= 3;
        }
        let sup: Vec<usize> = (0..k).filter(|&j| s[j] != 0).collect();
        let m = sup.len();
        let mut a = vec![vec![0.0; m + 1]; m + 1];
        let mut b = vec![0.0; m + 1];
        for (r, &j) in sup.iter().enumerate() {
            for (t, &l) in sup.iter().enumerate() {
                a[r][t] = g[[j, l]];
            }
            a[r][m] = 1.0;
            a[m][r] = 1.0;
            b[r] = -lambda * q[j] * s[j] as f64;
        }
        b[m] = 1.0;
        let Some(sol) = gauss_solve(a, b) else { continue };
        if sup.iter().enumerate().any(|(r, &j)| sol[r] == 0.0 || (sol[r] > 0.0) != (s[j] > 0)) {
            continue;
        }
        let mut c = vec![0.0; k];
        for (r, &j) in sup.iter().enumerate() {
            c[j] = sol[r];
        }
        let f = objective(g.view(), q, lambda, &c);
        if f < best.1 {
            best = (c, f);
        }
    }
    best
}

/// `min 1/2 (u - v)^T G (u - v) + lambda q^T (u + v)` s.t. `1^T (u - v) = 1`, `u, v >= 0` by
/// clarabel's interior-point method (tolerances 1e-11); returns `c = u - v`.
fn clarabel_solve(g: &Array2<f64>, q: &[f64], lambda: f64) -> Vec<f64> {
    use clarabel::algebra::CscMatrix;
    use clarabel::solver::{DefaultSettingsBuilder, DefaultSolver, IPSolver, SolverStatus, SupportedConeT};
    let k = q.len();
    let n = 2 * k;
    let big = |r: usize, c: usize| g[[r % k, c % k]] * if (r < k) == (c < k) { 1.0 } else { -1.0 };
    let (mut colptr, mut rowval, mut nzval) = (vec![0], Vec::new(), Vec::new());
    for c in 0..n {
        for r in 0..=c {
            rowval.push(r);
            nzval.push(big(r, c));
        }
        colptr.push(rowval.len());
    }
    let p = CscMatrix::new(n, n, colptr, rowval, nzval);
    let (mut colptr, mut rowval, mut nzval) = (vec![0], Vec::new(), Vec::new());
    for c in 0..n {
        rowval.extend([0, 1 + c]);
        nzval.extend([if c < k { 1.0 } else { -1.0 }, -1.0]);
        colptr.push(rowval.len());
    }
    let a = CscMatrix::new(n + 1, n, colptr, rowval, nzval);
    let mut b = vec![0.0; n + 1];
    b[0] = 1.0;
    let lin: Vec<f64> = (0..n).map(|j| lambda * q[j % k]).collect();
    let settings = DefaultSettingsBuilder::default().verbose(false).tol_gap_abs(1e-11).tol_gap_rel(1e-11).tol_feas(1e-11).max_iter(500).build().unwrap();
    let cones = [SupportedConeT::ZeroConeT(1), SupportedConeT::NonnegativeConeT(n)];
    let mut solver = DefaultSolver::new(&p, &lin, &a, &b, &cones, settings).unwrap();
    solver.solve();
    assert!(matches!(solver.solution.status, SolverStatus::Solved | SolverStatus::AlmostSolved), "{:?}", solver.solution.status);
    (0..k).map(|j| solver.solution.x[j] - solver.solution.x[k + j]).collect()
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max)
}

/// Two neighbours on a line on opposite sides of x_i at distances 1 and 3: G = [[1, -1], [-1,
/// 1]], q = (1/4, 3/4), and with c = (t, 1 - t) the objective is 1/2 (2t - 1)^2 + lambda (t/4 +
/// 3 (1 - t)/4) on [0, 1], minimised at t = 1/2 + lambda / 8 while that is <= 1 (lambda <= 4),
/// at t = 1 beyond. Weights w ∝ (t / 1, (1 - t) / 3).
#[test]
fn two_opposite_neighbours_closed_form() {
    let e = [0.6, 0.8];
    let x = ndarray::array![[0.0, 0.0], [e[0], e[1]], [-3.0 * e[0], -3.0 * e[1]]];
    let (g, q, dist) = local_problem(x.view(), 0, &[1, 2]).unwrap();
    assert!((g[[0, 1]] + 1.0).abs() < 1e-15 && (q[0] - 0.25).abs() < 1e-15 && (dist[1] - 3.0).abs() < 1e-15);
    for (lambda, t) in [(1e-9, 0.5 + 1e-9 / 8.0), (1.0, 0.625), (2.0, 0.75), (4.0, 1.0), (10.0, 1.0)] {
        let s = solve_local(g.view(), &q, lambda, LocalSolver::Exact, 10_000, 1e-6).unwrap();
        assert_eq!(s.exit, Exit::Exact, "lambda = {lambda}");
        assert!((s.c[0] - t).abs() < 1e-14 && (s.c[1] - (1.0 - t)).abs() < 1e-14, "lambda = {lambda}: c = {:?}, want t = {t}", s.c);
        let w = weights_from_coefficients(&s.c, &dist);
        let want = [t / (t + (1.0 - t) / 3.0), ((1.0 - t) / 3.0) / (t + (1.0 - t) / 3.0)];
        assert!(max_abs_diff(&w, &want) < 1e-14, "{w:?} vs {want:?}");
    }
    // lambda = 10: all weight on the nearer point, c_2 exactly 0
    let s = solve_local(g.view(), &q, 10.0, LocalSolver::Exact, 10_000, 1e-6).unwrap();
    assert_eq!(s.c, vec![1.0, 0.0]);
}

/// The solver's output satisfies the KKT conditions (checked from scratch) on random problems,
/// with K < D, K = D + 1 and K > D (singular G), over the SPL paper's lambda grid: every
/// problem is polished and the worst violation is below 1e-12.
#[test]
fn solutions_satisfy_the_kkt_conditions() {
    let mut worst = 0.0f64;
    let mut iters = Vec::new();
    for (k, d) in [(5, 10), (10, 3), (17, 16), (50, 16), (30, 2)] {
        for lambda in [0.01, 0.1, 1.0, 10.0] {
            for seed in 0..5 {
                let (g, q, _) = random_local(k, d, seed * 31 + k as u64);
                let s = solve_local(g.view(), &q, lambda, LocalSolver::Exact, 10_000, 1e-6).unwrap();
                assert_eq!(s.exit, Exit::Exact, "k = {k}, d = {d}, lambda = {lambda}, seed {seed}");
                let v = kkt_violation(&g, &q, lambda, &s.c);
                assert!(v < 1e-12, "k = {k}, d = {d}, lambda = {lambda}: KKT violation {v:e}");
                assert!(s.kkt <= 2.0 * v.max(1e-16) + 1e-15, "reported {} vs {v}", s.kkt);
                worst = worst.max(v);
                iters.push(s.iterations);
            }
        }
    }
    iters.sort();
    eprintln!("worst KKT violation {worst:e}; active-set steps median {}, max {}", iters[iters.len() / 2], iters[iters.len() - 1]);
}

/// Agreement with an independent exact solver: enumeration of every sign pattern for K = 7
/// (2186 patterns) over the lambda grid; objective to 1e-13 relative, coefficients to 1e-10.
#[test]
fn agrees_with_enumeration_of_sign_patterns() {
    for (d, seed) in [(2, 1), (3, 2), (5, 3), (10, 4)] {
        for lambda in [0.01, 0.1, 1.0, 10.0] {
            let (g, q, _) = random_local(7, d, seed);
            let s = solve_local(g.view(), &q, lambda, LocalSolver::Exact, 10_000, 1e-6).unwrap();
            let (c, f) = brute_force(&g, &q, lambda);
            assert!((s.objective - f).abs() <= 1e-13 * f.abs().max(1e-3), "d = {d}, lambda = {lambda}: {} vs {f}", s.objective);
            let dc = max_abs_diff(&s.c, &c);
            assert!(dc < 1e-10, "d = {d}, lambda = {lambda}: |c - c_enum| = {dc:e}\n{:?}\n{c:?}", s.c);
        }
    }
}

/// Agreement with clarabel's interior-point solution of the split QP at K = 30 (too many
/// patterns to enumerate), including K > D: objective to 1e-9 relative, coefficients to 1e-7
/// (measured 3e-10 and 2e-8: the interior-point tolerance).
#[test]
fn agrees_with_an_interior_point_solver() {
    let mut worst = (0.0f64, 0.0f64);
    for (d, seed) in [(3, 5), (16, 6), (40, 7)] {
        for lambda in [0.01, 0.1, 1.0, 10.0] {
            let (g, q, _) = random_local(30, d, seed);
            let s = solve_local(g.view(), &q, lambda, LocalSolver::Exact, 10_000, 1e-6).unwrap();
            let c = clarabel_solve(&g, &q, lambda);
            let f = objective(g.view(), &q, lambda, &c);
            let rel = (s.objective - f) / f.abs();
            assert!(rel <= 1e-9, "d = {d}, lambda = {lambda}: ours {} vs clarabel {f}", s.objective);
            let dc = max_abs_diff(&s.c, &c);
            assert!(dc < 1e-7, "d = {d}, lambda = {lambda}: |c - c_ipm| = {dc:e}");
            worst = (worst.0.max(rel.abs()), worst.1.max(dc));
        }
    }
    eprintln!("vs clarabel: objective rel. diff <= {:e}, coefficients <= {:e}", worst.0, worst.1);
}

/// The reference algorithm, ADMM, converges to the same minimiser when run to a tight
/// tolerance (objective to 1e-8 relative); with its pattern polish it stops at the exact
/// minimiser where the pattern is right when its rule fires (always at lambda = 10). With the
/// reference's stopping rule (tol = 1e-6, 10000 iterations) it stops early, the more so at
/// small lambda: measured worst objective gaps 0.28 (lambda = 0.01), 0.051 (0.1), 4.6e-4 (1),
/// 1.3e-5 (10) on these problems, which is why the active-set method is the primary solver.
#[test]
fn reference_admm_reaches_the_same_minimiser() {
    let mut gaps = Vec::new();
    for lambda in [0.01, 0.1, 1.0, 10.0] {
        let mut worst = 0.0f64;
        for (k, d, seed) in [(10, 3, 1), (20, 5, 2), (30, 16, 3)] {
            let (g, q, _) = random_local(k, d, seed);
            let exact = solve_local(g.view(), &q, lambda, LocalSolver::Exact, 10_000, 1e-6).unwrap();
            assert_eq!(exact.exit, Exit::Exact);
            let long = admm(g.view(), &q, lambda, 1_000_000, 1e-13, false).unwrap();
            let rel = (long.objective - exact.objective) / exact.objective;
            assert!((-1e-12..1e-8).contains(&rel), "lambda = {lambda}, k = {k}: long ADMM {} vs exact {}", long.objective, exact.objective);
            let polished = admm(g.view(), &q, lambda, 10_000, 1e-6, true).unwrap();
            eprintln!("lambda = {lambda}, k = {k}: ADMM + polish {:?} after {} iterations, KKT {:.1e}", polished.exit, polished.iterations, polished.kkt);
            if polished.exit == Exit::Polished {
                assert!(max_abs_diff(&polished.c, &exact.c) < 1e-10 && polished.kkt < 1e-12);
            } else {
                assert!(lambda < 10.0, "at lambda = 10 every pattern polishes");
            }
            let reference = admm(g.view(), &q, lambda, 10_000, 1e-6, false).unwrap();
            worst = worst.max((reference.objective - exact.objective) / exact.objective);
        }
        gaps.push((lambda, worst));
    }
    eprintln!("reference ADMM stopping rule: worst relative objective gap per lambda {gaps:?}");
    assert!(gaps[0].1 > 1e-2 && gaps[3].1 < 1e-4, "{gaps:?}");
}

/// A near-degenerate case from the Letter data (sample 3014 of `letter.t` and its 10 nearest
/// neighbours; features on a 16-level grid printed to 6 decimals): at lambda = 0.01 the
/// solution uses all 10 neighbours, whose directions are affinely dependent up to the
/// 6-decimal rounding (smallest eigenvalue of G + 1 1^T ~1e-15), so the last activation meets
/// a flat direction whose slope cancels to rounding level. The active-set method must take the
/// activated coordinate's own sign there (an earlier version cycled and fell back to ADMM):
/// solved exactly, KKT residual < 1e-12, objective not above a 10^6-iteration ADMM's.
#[test]
fn near_degenerate_letter_neighbourhood_is_solved_exactly() {
    let levels = [-1.0, -0.866667, -0.733333, -0.6, -0.466667, -0.333333, -0.2, -0.066667, 0.066667, 0.2, 0.333333, 0.466667, 0.6, 0.733333, 0.866667, 1.0];
    let rows: [[usize; 16]; 11] = [
        [1, 0, 1, 0, 0, 8, 10, 3, 1, 7, 12, 8, 2, 11, 0, 8],
        [1, 0, 2, 0, 0, 8, 9, 3, 1, 6, 12, 8, 2, 11, 0, 8],
        [1, 0, 2, 0, 0, 8, 10, 3, 1, 6, 12, 8, 1, 11, 0, 8],
        [1, 0, 2, 0, 0, 7, 10, 3, 1, 7, 12, 8, 1, 11, 0, 8],
        [2, 0, 2, 0, 0, 7, 10, 3, 1, 7, 12, 8, 1, 11, 0, 8],
        [1, 0, 2, 0, 0, 8, 9, 3, 2, 6, 12, 8, 2, 10, 0, 8],
        [1, 0, 2, 1, 0, 8, 9, 3, 2, 6, 12, 8, 2, 10, 0, 8],
        [1, 0, 2, 1, 0, 7, 9, 3, 2, 7, 12, 8, 2, 10, 0, 8],
        [1, 1, 2, 1, 0, 8, 9, 4, 2, 7, 13, 8, 2, 10, 0, 8],
        [1, 1, 2, 1, 0, 8, 9, 2, 2, 7, 12, 8, 1, 10, 0, 8],
        [1, 0, 2, 0, 0, 7, 9, 2, 2, 6, 12, 8, 1, 10, 0, 8],
    ];
    let x = Array2::from_shape_fn((11, 16), |(i, f)| levels[rows[i][f]]);
    let nb: Vec<usize> = (1..=10).collect();
    let (g, q, _) = local_problem(x.view(), 0, &nb).unwrap();
    let s = solve_local(g.view(), &q, 0.01, LocalSolver::Exact, 10_000, 1e-6).unwrap();
    assert_eq!(s.exit, Exit::Exact);
    let v = kkt_violation(&g, &q, 0.01, &s.c);
    let long = admm(g.view(), &q, 0.01, 1_000_000, 1e-14, false).unwrap();
    eprintln!("letter neighbourhood: KKT {v:e}, {} steps, objective {} vs long ADMM {} (KKT {:e})", s.iterations, s.objective, long.objective, long.kkt);
    assert!(v < 1e-12 && s.objective <= long.objective + 1e-12, "{v:e}, {} vs {}", s.objective, long.objective);
}

/// The weights follow the formula: each row equals (|c_j| / d_j) / sum_t (|c_t| / d_t) and sums
/// to 1 without pruning; with prune = 0.95 a row keeps the shortest prefix of its sorted
/// weights reaching 0.95 of the row, so it sums to [0.95, 1] and dropping its smallest kept
/// weight falls below 0.95.
#[test]
fn weights_follow_the_formula_and_pruning_keeps_the_mass() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    let x = Array2::from_shape_fn((80, 5), |_| rng.gen_range(-1.0..1.0));
    let full = sparse_weights(x.view(), 12, 0.1, 1.0, LocalSolver::Exact, 10_000, 1e-6).unwrap();
    let pruned = sparse_weights(x.view(), 12, 0.1, 0.95, LocalSolver::Exact, 10_000, 1e-6).unwrap();
    let mut pruned_rows = 0;
    for i in 0..80 {
        let nb = &full.neighbours[i];
        let (_, _, dist) = local_problem(x.view(), i, nb).unwrap();
        let c = &full.solutions[i].c;
        let z: f64 = c.iter().zip(&dist).map(|(c, d)| c.abs() / d).sum();
        for a in 0..12 {
            assert!((full.weights[i][a] - c[a].abs() / dist[a] / z).abs() < 1e-14);
        }
        assert!((full.weights[i].iter().sum::<f64>() - 1.0).abs() < 1e-14);
        assert_eq!(&pruned.solutions[i].c, c);
        let kept: Vec<f64> = pruned.weights[i].iter().copied().filter(|v| *v > 0.0).collect();
        let s: f64 = kept.iter().sum();
        assert!((0.95..=1.0 + 1e-14).contains(&s), "row {i} sums to {s}");
        let smallest = kept.iter().copied().fold(f64::INFINITY, f64::min);
        assert!(s - smallest < 0.95, "row {i}: the prefix is not the shortest");
        for a in 0..12 {
            assert!(pruned.weights[i][a] == 0.0 || pruned.weights[i][a] == full.weights[i][a]);
        }
        pruned_rows += usize::from(kept.len() < full.weights[i].iter().filter(|v| **v > 0.0).count());
    }
    assert!(pruned_rows > 0);
    // the symmetric graph takes the larger of w_ij, w_ji
    let e = symmetric_edges(&full);
    for &(i, j, w) in &e {
        let wij = full.neighbours[i].iter().position(|&t| t == j).map_or(0.0, |a| full.weights[i][a]);
        let wji = full.neighbours[j].iter().position(|&t| t == i).map_or(0.0, |a| full.weights[j][a]);
        assert!(i < j && w == wij.max(wji) && w > 0.0);
    }
}
/// 1-NN leave-one-out accuracy (the evaluation crate's, ties to the lowest index).
fn loo_1nn(y: &Array2<f64>, labels: &[i64]) -> f64 {
    structdr_eval::loocv_1nn_accuracy(y.view(), labels).unwrap()
}

fn generate(name: &str, params: &[(&str, f64)], seed: u64) -> structdr_datasets::Dataset {
    let p = params.iter().map(|&(k, v)| (k.to_string(), v)).collect();
    structdr_datasets::synthetic::generate(name, &p, seed).unwrap()
}

/// Two moons: the SMCE graph keeps the moons apart, so the 2-D embedding classifies them by
/// 1-NN leave-one-out; a bit-identical fit at 1 and 4 threads.
#[test]
fn two_moons_are_separated_and_fits_are_thread_count_invariant() {
    let ds = generate("two_moons", &[("n", 300.0), ("noise", 0.05)], 1);
    let m = Smce { dim: 2, k: 10, lambda: 10.0, ..Smce::default() };
    let fit = |threads: usize| rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| m.fit(ds.x.view(), 0).unwrap());
    let (a, b) = (fit(1), fit(4));
    assert_eq!(a.embedding().unwrap(), b.embedding().unwrap(), "thread count changed the result");
    let acc = loo_1nn(a.embedding().unwrap(), ds.labels.as_ref().unwrap());
    eprintln!("two moons: 1-NN LOO accuracy {acc}; {:?}; {}", a.notes, a.trace.termination);
    assert!(acc >= 0.99, "accuracy {acc}");
    assert!(a.trace.converged() && a.trace.kkt_residual.unwrap() < 1e-12, "{}", a.trace.termination);
}

/// A helix (a closed curve in 3-D) embeds as a closed curve traversed in order: every sample's
/// nearest neighbour in the 2-D embedding is within 2% of the curve's length in the intrinsic
/// coordinate, and the angle around the embedding's centre turns once, monotonically.
#[test]
fn helix_embeds_as_an_ordered_loop() {
    let n = 400;
    let ds = generate("helix", &[("n", n as f64), ("noise", 0.02), ("random", 0.0)], 2);
    let f = Smce { dim: 2, k: 10, lambda: 10.0, ..Smce::default() }.fit(ds.x.view(), 0).unwrap();
    let y = f.embedding().unwrap();
    let t = ds.t.as_ref().unwrap();
    let circ = |a: f64, b: f64| {
        let d = (a - b).abs() % (2.0 * std::f64::consts::PI);
        d.min(2.0 * std::f64::consts::PI - d)
    };
    let mut close = 0;
    for i in 0..n {
        let j = (0..n).filter(|&j| j != i).min_by(|&a, &b| {
            let da: f64 = y.row(i).iter().zip(y.row(a).iter()).map(|(p, q)| (p - q).powi(2)).sum();
            let db: f64 = y.row(i).iter().zip(y.row(b).iter()).map(|(p, q)| (p - q).powi(2)).sum();
            da.total_cmp(&db)
        });
        close += usize::from(circ(t[i], t[j.unwrap()]) <= 0.02 * 2.0 * std::f64::consts::PI);
    }
    // winding: the angle of consecutive samples (in t order, the grid) advances by one turn
    let centre = y.mean_axis(Axis(0)).unwrap();
    let ang: Vec<f64> = y.rows().into_iter().map(|r| (r[1] - centre[1]).atan2(r[0] - centre[0])).collect();
    let mut turn = 0.0;
    let mut backwards = 0;
    for i in 0..n {
        let mut da = ang[(i + 1) % n] - ang[i];
        if da > std::f64::consts::PI {
            da -= 2.0 * std::f64::consts::PI;
        } else if da < -std::f64::consts::PI {
            da += 2.0 * std::f64::consts::PI;
        }
        turn += da;
        backwards += usize::from(da * turn.signum() < 0.0);
    }
    eprintln!(
        "helix: {close} of {n} embedding neighbours within 2% of the loop; winding {:.3} turns, {backwards} backward steps; {:?}",
        turn / (2.0 * std::f64::consts::PI),
        f.notes
    );
    assert!(close >= n * 98 / 100, "{close} of {n}");
    assert!(((turn / (2.0 * std::f64::consts::PI)).abs() - 1.0).abs() < 1e-9, "winding {turn}");
}

/// Duplicates share their representative's coordinates (no NaN), k >= N is clamped, a
/// disconnected graph is joined or refused, and dim must fit the distinct samples.
#[test]
fn duplicates_large_k_and_disconnected_graphs() {
    let ds = generate("two_moons", &[("n", 60.0), ("noise", 0.05)], 3);
    let mut x = ds.x.clone();
    for (dst, src) in [(5, 7), (20, 7), (40, 41)] {
        let r = x.row(src).to_owned();
        x.row_mut(dst).assign(&r);
    }
    let m = Smce { dim: 2, k: 8, ..Smce::default() };
    let f = m.fit(x.view(), 0).unwrap();
    let y = f.embedding().unwrap();
    assert!(y.iter().all(|v| v.is_finite()));
    assert_eq!(y.row(5), y.row(7));
    assert_eq!(y.row(20), y.row(7));
    assert_eq!(y.row(40), y.row(41));
    assert!(f.notes.iter().any(|n| n.starts_with("3 duplicate samples merged")), "{:?}", f.notes);
    // k >= N: clamped to N - 1, the same as asking for N - 1
    let small = ds.x.slice(ndarray::s![..15, ..]).to_owned();
    let a = Smce { k: 100, ..m.clone() }.fit(small.view(), 0).unwrap();
    let b = Smce { k: 14, ..m.clone() }.fit(small.view(), 0).unwrap();
    assert_eq!(a.embedding(), b.embedding());
    assert!(a.notes.iter().any(|n| n.contains("clamped")));
    // two far clusters: no SMCE edge between them
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
    let two = Array2::from_shape_fn((40, 3), |(i, _)| rng.gen_range(0.0..1.0) + if i < 20 { 0.0 } else { 100.0 });
    let err = Smce { k: 5, disconnected: Disconnected::Error, ..m.clone() }.fit(two.view(), 0).unwrap_err();
    assert!(matches!(err, MethodError::Disconnected { components: 2, .. }), "{err}");
    let f = Smce { k: 5, ..m.clone() }.fit(two.view(), 0).unwrap();
    assert!(f.notes.iter().any(|n| n.contains("2 connected components")), "{:?}", f.notes);
    let y = f.embedding().unwrap();
    assert!(y.iter().all(|v| v.is_finite()));
    // the joined clusters are separated along the first coordinate
    let (l, r) = (y.column(0).slice(ndarray::s![..20]).to_owned(), y.column(0).slice(ndarray::s![20..]).to_owned());
    assert!(l.iter().all(|v| v * r[0] < 0.0) && r.iter().all(|v| v * r[0] > 0.0));
    // dim + 1 > distinct samples
    let three = ndarray::array![[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]];
    assert!(matches!(Smce { dim: 3, ..m.clone() }.fit(three.view(), 0), Err(MethodError::Input { .. })));
    assert_eq!(distinct_rows(three.view()), (vec![0, 1, 2], vec![0, 1, 2, 1]));
}

/// Timing of one fit on the Letter data set (`letter.t`, 5000 x 16) at k = 50 (`SMCE_KS`,
/// `SMCE_LAMBDAS`, `SMCE_SOLVER` = exact / admm, `SMCE_DATASET` choose others;
/// `SMCE_WEIGHTS_ONLY` stops after the per-sample programs), split into the
/// K-NN search, the per-sample programs and the rest (graph and dense eigensolver). Run with
/// `RAYON_NUM_THREADS=1 cargo test --release -p structdr-methods --lib smce::tests::letter_timing
/// -- --ignored --nocapture` (needs `STRUCTDR_MIRROR` or the network).
#[test]
#[ignore = "timing on the Letter data set (reads the data mirror)"]
fn letter_timing() {
    use std::time::Instant;
    let opts = structdr_datasets::download::FetchOptions {
        cache_dir: std::env::temp_dir().join("structdr-smce-cache"),
        ..structdr_datasets::download::FetchOptions::from_env()
    };
    let name = std::env::var("SMCE_DATASET").unwrap_or("letter.t".into());
    let ds = structdr_datasets::load::load(&name, &opts).unwrap();
    let x = ds.x.view();
    let (reps, _) = distinct_rows(x);
    let xu = x.select(Axis(0), &reps);
    eprintln!("{name}: {} x {}, {} distinct rows, rayon threads {}", x.nrows(), x.ncols(), reps.len(), rayon::current_num_threads());
    let lambdas: Vec<f64> = std::env::var("SMCE_LAMBDAS").map(|v| v.split(',').map(|t| t.parse().unwrap()).collect()).unwrap_or(vec![10.0]);
    let solver = if std::env::var("SMCE_SOLVER").as_deref() == Ok("admm") { LocalSolver::Admm } else { LocalSolver::Exact };
    let ks: Vec<usize> = std::env::var("SMCE_KS").map(|v| v.split(',').map(|t| t.parse().unwrap()).collect()).unwrap_or(vec![50]);
    for (k, lambda) in ks.iter().flat_map(|&k| lambdas.iter().map(move |&l| (k, l))) {
        let t0 = Instant::now();
        knn(xu.view(), k).unwrap();
        let t_knn = t0.elapsed().as_secs_f64();
        let t0 = Instant::now();
        let sw = sparse_weights(xu.view(), k, lambda, 0.95, solver, 10_000, 1e-6).unwrap();
        let t_weights = t0.elapsed().as_secs_f64() - t_knn;
        let fallbacks = sw.solutions.iter().filter(|s| s.exit != Exit::Exact).count();
        if std::env::var("SMCE_WEIGHTS_ONLY").is_ok() {
            let kkt = sw.solutions.iter().map(|s| s.kkt).fold(0.0f64, f64::max);
            eprintln!("k = {k}, lambda = {lambda} ({solver:?}): per-sample programs {t_weights:.2} s, {fallbacks} fallbacks, max KKT residual {kkt:.2e}");
            continue;
        }
        let t0 = Instant::now();
        let m = Smce { dim: 12, k, lambda, solver, ..Smce::default() };
        let f = m.fit(x, 0).unwrap();
        let t_fit = t0.elapsed().as_secs_f64();
        let acc = loo_1nn(f.embedding().unwrap(), ds.labels.as_ref().unwrap());
        eprintln!(
            "k = {k}, lambda = {lambda} ({solver:?}): fit {t_fit:.2} s = kNN {t_knn:.2} s + per-sample programs {t_weights:.2} s + graph and eigensolver {:.2} s; {fallbacks} fallbacks; 1-NN LOO accuracy (d = 12) {acc:.4}\n  {}\n  {:?}",
            t_fit - t_knn - t_weights,
            f.trace.termination,
            f.notes
        );
    }
}
