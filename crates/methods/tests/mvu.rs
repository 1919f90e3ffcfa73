//! The MVU family against an independent conic solver, and the certificate's meaning.
//!
//! `fixtures/mvu_cvxpy.json` (written by `fixtures/mvu_cvxpy.py`: cvxpy 1.9 with Clarabel 0.11 at
//! 1e-10 tolerances and SCS 3.3 at 1e-8) holds two small problems (a 40-point swiss roll with
//! k = 4, 30 points of a square in 5-D with k = 5), their edges and squared lengths (mean 1), and
//! the optimal values of MVU, MVUineq and MVU2 (nu = 1, 10).

use ndarray::Array2;
use serde_json::Value;
use structdr_methods::api::{ParamMap, ParamValue};
use structdr_methods::registry::lookup;
use structdr_methods::unfolding::landmark::reconstruction_map;
use structdr_methods::unfolding::mvu::{kernel_pca_of_factor, start_factor};
use structdr_methods::unfolding::sdp::{DistanceConstraint, DistanceSdp, SdpOptions};

struct FixtureSet {
    name: String,
    x: Array2<f64>,
    edges: Vec<(usize, usize)>,
    d2: Vec<f64>,
    problems: Vec<(String, Option<f64>, f64)>,
}

fn fixture() -> Vec<FixtureSet> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mvu_cvxpy.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v["sets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let rows: Vec<Vec<f64>> = s["x"].as_array().unwrap().iter().map(|r| r.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()).collect();
            let (n, d) = (rows.len(), rows[0].len());
            let x = Array2::from_shape_vec((n, d), rows.concat()).unwrap();
            let edges = s["edges"].as_array().unwrap().iter().map(|e| (e[0].as_u64().unwrap() as usize, e[1].as_u64().unwrap() as usize)).collect();
            let d2 = s["d2"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
            let problems = s["problems"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| (p["variant"].as_str().unwrap().to_string(), p["nu"].as_f64(), p["clarabel"]["value"].as_f64().unwrap()))
                .collect();
            FixtureSet { name: s["name"].as_str().unwrap().into(), x, edges, d2, problems }
        })
        .collect()
}

fn constraint(variant: &str, nu: Option<f64>) -> DistanceConstraint {
    match variant {
        "equality" => DistanceConstraint::Equality,
        "inequality" => DistanceConstraint::Inequality,
        _ => DistanceConstraint::Penalty(nu.unwrap()),
    }
}

/// MVUineq and MVU2 have strictly feasible points and attained duals: our certified interval
/// [P, U] has relative width <= 1e-5 and contains Clarabel's optimum (to Clarabel's own 1e-7
/// accuracy). The solve asks for 1e-6 and reaches it on every problem with OpenBLAS's SkylakeX
/// kernels; on the degenerate square (30 points of a plane in 5-D, many equal distances) the
/// Haswell kernels' rounding leads it to stall at 3.3e-6 (both are certified intervals; the test
/// holds for either). Equality MVU has no strictly feasible point (the fixture's Slater check; Clarabel
/// and SCS both end "inaccurate" and differ by 2.3e-5): our value agrees with Clarabel's to 1e-4
/// with a constraint residual below 1e-3.
#[test]
fn optimal_values_match_clarabel() {
    for set in fixture() {
        let z0 = start_factor(set.x.view(), 12, 1.0);
        for (variant, nu, reference) in &set.problems {
            let sdp = DistanceSdp { n: set.x.nrows(), q: None, edges: &set.edges, d2: &set.d2, constraint: constraint(variant, *nu) };
            let sol = sdp.solve(z0.clone(), &SdpOptions::default()).unwrap();
            let c = &sol.certificate;
            eprintln!(
                "{} {variant} nu={nu:?}: P = {:.9}, U = {:.9}, Clarabel {reference:.9}; gap {:.2e}, residual {:.2e}, rank {}, {}",
                set.name,
                c.primal,
                c.dual,
                c.rel_gap,
                c.residual,
                sol.y.ncols(),
                sol.termination
            );
            if variant == "equality" {
                assert!((c.primal - reference).abs() <= 1e-4 * reference, "{} equality: {} vs {reference}", set.name, c.primal);
                assert!(c.residual <= 1e-3, "{} equality residual {}", set.name, c.residual);
            } else {
                assert!(c.rel_gap <= 1e-5 && c.rel_gap >= -1e-9, "{} {variant}: gap {} ({})", set.name, c.rel_gap, sol.termination);
                let slack = 2e-7 * reference;
                assert!(
                    c.primal <= *reference + slack && *reference <= c.dual + slack,
                    "{} {variant}: Clarabel's {reference} outside [{}, {}]",
                    set.name,
                    c.primal,
                    c.dual
                );
            }
        }
    }
}

/// Weak duality on its own: for arbitrary non-negative weights scaled into the dual feasible set,
/// the bound U is above the optimum, and an arbitrary inequality-feasible factor is below it.
#[test]
fn arbitrary_dual_points_bound_the_optimum_from_above() {
    let set = &fixture()[0];
    let (_, _, reference) = set.problems.iter().find(|p| p.0 == "inequality").unwrap().clone();
    let sdp = DistanceSdp { n: set.x.nrows(), q: None, edges: &set.edges, d2: &set.d2, constraint: DistanceConstraint::Inequality };
    for seed in 0..5u64 {
        let w: Vec<f64> = (0..set.edges.len()).map(|e| 0.1 + ((e as u64 * 2654435761 + seed * 97) % 1000) as f64 / 100.0).collect();
        let mut y = start_factor(set.x.view(), 3, 1.0);
        let mean = y.mean_axis(ndarray::Axis(0)).unwrap();
        y -= &mean;
        let c = sdp.certificate(y.view(), &w).unwrap();
        assert!(c.mu > 0.0);
        assert!(c.dual >= reference * (1.0 - 1e-9), "U = {} below the optimum {reference}", c.dual);
        assert!(c.primal <= reference * (1.0 + 1e-9), "a feasible point's value {} above the optimum {reference}", c.primal);
    }
}

/// Landmark MVU's map: landmark rows are the identity, every row sums to 1 (barycentric weights),
/// and points of a plane are reconstructed from the landmarks up to the regulariser's bias.
#[test]
fn reconstruction_map_interpolates_planar_data() {
    let n = 200;
    let mut x = Array2::<f64>::zeros((n, 3));
    for i in 0..n {
        let (u, v) = (((i * 37) % 101) as f64 / 101.0, ((i * 61) % 103) as f64 / 103.0);
        x[[i, 0]] = u;
        x[[i, 1]] = v;
        x[[i, 2]] = 0.3 * u - 0.2 * v;
    }
    let landmarks: Vec<usize> = (0..n).step_by(10).collect();
    let q = reconstruction_map(x.view(), &landmarks, 8, 1e-6).unwrap();
    for (c, &l) in landmarks.iter().enumerate() {
        assert!((q[[l, c]] - 1.0).abs() < 1e-12 && q.row(l).sum() == 1.0);
    }
    for i in 0..n {
        assert!((q.row(i).sum() - 1.0).abs() < 1e-8, "row {i} sums to {}", q.row(i).sum());
    }
    let xl = x.select(ndarray::Axis(0), &landmarks);
    let err = (&q.dot(&xl) - &x).mapv(f64::abs).fold(0.0f64, |a, &b| a.max(b));
    assert!(err < 1e-3, "planar reconstruction error {err}");
}

/// The embedding is the kernel PCA of K = Y Y^T: it reproduces the top-d part of K.
#[test]
fn kernel_pca_of_the_factor_is_the_top_eigenspace_of_k() {
    let set = &fixture()[1];
    let y = start_factor(set.x.view(), 7, 1.0);
    let (emb, values) = kernel_pca_of_factor("mvu", y.view(), 2).unwrap();
    let k = y.dot(&y.t());
    let top = structdr_linalg::eigh_top(k.view(), 2).unwrap();
    for j in 0..2 {
        assert!((values[j] - top.values[j]).abs() <= 1e-10 * top.values[0]);
    }
    let kd = emb.dot(&emb.t());
    let want = top.vectors.dot(&Array2::from_diag(&top.values)).dot(&top.vectors.t());
    let err = (&kd - &want).mapv(f64::abs).fold(0.0f64, |a, &b| a.max(b));
    assert!(err <= 1e-9 * top.values[0], "rank-2 part of K reproduced to {err}");
}

fn fit(method: &str, x: &Array2<f64>, params: &[(&str, ParamValue)]) -> structdr_methods::api::Fitted {
    let info = lookup(method).unwrap();
    let mut p = ParamMap::new();
    for (k, v) in params {
        p.insert((*k).into(), v.clone());
    }
    let (_, m) = info.instantiate(&p).unwrap();
    m.fit(x.view(), 0).unwrap()
}

/// End to end on a 250-point swiss roll (height 21, k = 6): MVUineq and MVU2 certify their gap and
/// unroll it (the first embedding coordinate follows the roll parameter t: |corr| > 0.6 and 0.3
/// above PCA's); landmark MVU runs and reports its landmarks.
#[test]
fn methods_unroll_the_swiss_roll_and_report_their_certificates() {
    let params = [("n".to_string(), 250.0), ("height".to_string(), 21.0)].into_iter().collect();
    let ds = structdr_datasets::synthetic::generate("swiss_roll", &params, 3).unwrap();
    let t = ds.t.clone().unwrap();
    let pearson = |a: &[f64], b: &[f64]| {
        let (ma, mb) = (a.iter().sum::<f64>() / a.len() as f64, b.iter().sum::<f64>() / b.len() as f64);
        let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
        cov / (a.iter().map(|x| (x - ma).powi(2)).sum::<f64>() * b.iter().map(|y| (y - mb).powi(2)).sum::<f64>()).sqrt()
    };
    let pca = fit("pca", &ds.x, &[]);
    let rho_pca = pearson(&pca.embedding().unwrap().column(0).to_vec(), &t).abs();
    for method in ["mvu-ineq", "mvu2"] {
        let mut params = vec![("k", ParamValue::Int(6))];
        if method == "mvu2" {
            params.push(("nu", ParamValue::Float(100.0)));
        }
        let f = fit(method, &ds.x, &params);
        assert!(f.trace.converged(), "{method}: {}", f.trace.termination);
        assert!(f.notes.iter().any(|n| n.contains("relative duality gap")), "{method} notes: {:?}", f.notes);
        let rho = pearson(&f.embedding().unwrap().column(0).to_vec(), &t).abs();
        eprintln!("{method}: |corr(first coordinate, t)| = {rho:.3} (PCA {rho_pca:.3}); {}", f.trace.termination);
        // measured: mvu-ineq 0.669, PCA 0.236 (a few k-NN edges cross between layers at this density)
        assert!(rho > 0.6 && rho > rho_pca + 0.3, "{method} does not unroll: {rho} (PCA {rho_pca})");
    }
    let f = fit("landmark-mvu", &ds.x, &[("k", ParamValue::Int(6)), ("landmarks", ParamValue::Int(30))]);
    assert!(f.notes.iter().any(|n| n.contains("30 landmarks")), "{:?}", f.notes);
    assert_eq!(f.embedding().unwrap().dim(), (ds.x.nrows(), 2));
}

/// A disconnected graph makes MVU unbounded: with `disconnected = "error"` the fit refuses it.
#[test]
fn disconnected_graph_is_refused_on_request() {
    let mut x = Array2::<f64>::zeros((20, 2));
    for i in 0..20 {
        x[[i, 0]] = if i < 10 { i as f64 * 0.1 } else { 100.0 + i as f64 * 0.1 };
        x[[i, 1]] = (i % 3) as f64 * 0.05;
    }
    let info = lookup("mvu-ineq").unwrap();
    let mut p = ParamMap::new();
    p.insert("k".into(), ParamValue::Int(3));
    p.insert("disconnected".into(), ParamValue::Str("error".into()));
    let (_, m) = info.instantiate(&p).unwrap();
    let err = m.fit(x.view(), 0).unwrap_err().to_string();
    assert!(err.contains("connected components"), "{err}");
}

/// Duplicate samples (iris has 3 pairs) give zero-length edges: the fit merges them, copies get
/// their representative's row, and the embedding is not collapsed (version 1 scaled K to 0).
#[test]
fn duplicate_samples_share_their_row_and_do_not_collapse_the_embedding() {
    let set = &fixture()[1];
    let mut x = set.x.clone();
    let n = x.nrows();
    let dup = x.row(3).to_owned();
    x.row_mut(n - 1).assign(&dup);
    for method in ["mvu-ineq", "mvu2", "landmark-mvu"] {
        let f = fit(method, &x, &[("k", ParamValue::Int(5))]);
        let e = f.embedding().unwrap();
        assert_eq!(e.row(3), e.row(n - 1), "{method}");
        let spread = e.column(0).iter().fold(0.0f64, |a, v| a.max(v.abs()));
        assert!(spread > 1e-3, "{method}: collapsed embedding");
        assert!(f.notes[0].contains("1 duplicate samples merged"), "{method}: {:?}", f.notes);
    }
}

/// A solve that stops without certifying returns its best certificate and the factor that
/// certificate was computed at, not its last iterate (the iris k = 30 cell once reported the gap
/// 0.77 of the last iterate where an earlier one had certified 1.9e-5). With an unreachable
/// `gap_tol` every exit is uncertified: the outer-iteration limit, the violation stall (equality)
/// and the gap stall. Checked on every fixture problem: the returned gap is the smallest feasible
/// gap the solve computed (to the screening eigensolver's accuracy), and the returned factor is the one the certificate belongs to (its
/// primal value, recomputed from the returned factor, is the certificate's).
#[test]
fn an_uncertified_solve_returns_its_best_certified_iterate() {
    for set in fixture() {
        let z0 = start_factor(set.x.view(), 12, 1.0);
        for (variant, nu, _) in &set.problems {
            let sdp = DistanceSdp { n: set.x.nrows(), q: None, edges: &set.edges, d2: &set.d2, constraint: constraint(variant, *nu) };
            let opts = SdpOptions { gap_tol: 1e-15, max_outer: 25, ..SdpOptions::default() };
            let sol = sdp.solve(z0.clone(), &opts).unwrap();
            let c = &sol.certificate;
            assert!(!sol.certified, "{} {variant}: certified a gap of {:e} < 1e-15", set.name, c.rel_gap);
            assert!(!sol.checked_gaps.is_empty(), "{} {variant}: no certificate computed", set.name);
            let best_feasible = sol.checked_gaps.iter().filter(|g| g.1).map(|g| g.0).fold(f64::INFINITY, f64::min);
            eprintln!(
                "{} {variant} nu={nu:?}: {} checks, best feasible gap {best_feasible:.2e}, returned {:.2e} ({})",
                set.name,
                sol.checked_gaps.len(),
                c.rel_gap,
                sol.termination
            );
            // the checks are screened (their mu from the sparse eigensolver, within about 1e-13 of
            // the dense one) and the returned certificate is the best one recomputed densely
            assert!(c.exact, "{} {variant}: the returned certificate is dense", set.name);
            assert!(c.rel_gap <= best_feasible + 1e-12, "{} {variant}: returned gap {:e} above the best feasible one {best_feasible:e}", set.name, c.rel_gap);
            let again = sdp.certificate(sol.y.view(), &c.weights).unwrap();
            assert!(
                (again.primal - c.primal).abs() <= 1e-9 * c.primal.abs(),
                "{} {variant}: the returned factor has primal value {} but its certificate says {}",
                set.name,
                again.primal,
                c.primal
            );
        }
    }
}

/// The `<=` endgame. Once the largest relative violation is below `gap_tol` it no longer limits the
/// gap; what is left is `1 - mu` (the multipliers, and a rank that grows only at a check). The
/// set: 75 points of three clusters in 4-D, quantised to 0.1 like iris (cluster centres from
/// iris's class means, offsets `0.4 sin(1.3 (i + 1) + 0.7 (j + 1))`), `gap_tol = 5e-7`. Version
/// 5's rules checked only when the violation halved; it sat at 2.4e-7, and the solve stopped
/// "stalled" after 18 outer iterations with a best gap of 5.9e-7. Checked at every outer iteration
/// of the endgame, it certifies after 17 (gap 2.8e-7). About 15 s in release mode.
#[test]
fn the_inequality_endgame_certifies_when_the_violation_stops_falling() {
    let centres = [[5.0, 3.4, 1.5, 0.2], [5.9, 2.8, 4.3, 1.3], [6.6, 3.0, 5.5, 2.0]];
    let x = Array2::from_shape_fn((75, 4), |(i, j)| {
        let v = centres[i % 3][j] + 0.4 * (1.3 * (i + 1) as f64 + 0.7 * (j + 1) as f64).sin();
        (v / 0.1).round() * 0.1
    });
    let f = fit("mvu-ineq", &x, &[("k", ParamValue::Int(5)), ("dim", ParamValue::Int(2)), ("gap_tol", ParamValue::Float(5e-7))]);
    eprintln!("{}", f.trace.termination);
    assert!(f.trace.converged(), "{}", f.trace.termination);
    assert!(f.trace.termination.starts_with("certified"), "{}", f.trace.termination);
}

/// Robustness of the degenerate reference case (30 points of a plane in 5-D, many equal
/// distances), whose iterates follow the last bits of the inner solves: twelve starts scaled by
/// `1 + eps` (`eps` from -3e-8 to 1e-7) must each end with a certified interval of relative width
/// at most 1e-5 that contains Clarabel's optimum. Version 5 (sequential sums, checks only after
/// 100x falls of the violation) failed one of the twelve (a gap of 3.1e-3); version 6 passes all.
/// About a minute in release mode, so not in the default run: `cargo test --release -p
/// structdr-methods --test suite -- --ignored mvu::`.
#[test]
#[ignore]
fn the_degenerate_square_certifies_from_perturbed_starts() {
    let set = fixture().into_iter().find(|s| s.name == "square_30_in_5d").expect("fixture set");
    let reference = set.problems.iter().find(|p| p.0 == "inequality").expect("inequality problem").2;
    let z0 = start_factor(set.x.view(), 12, 1.0);
    for k in 0..12 {
        let eps = -3e-8 + (k as f64) * 1.2e-8;
        let sdp = DistanceSdp { n: set.x.nrows(), q: None, edges: &set.edges, d2: &set.d2, constraint: DistanceConstraint::Inequality };
        let sol = sdp.solve(&z0 * (1.0 + eps), &SdpOptions::default()).unwrap();
        let c = &sol.certificate;
        eprintln!("eps {eps:+.1e}: gap {:.2e}, {} outer, {} inner; {}", c.rel_gap, sol.outer, sol.inner, sol.termination);
        assert!(c.rel_gap <= 1e-5, "eps {eps}: gap {} ({})", c.rel_gap, sol.termination);
        let slack = 2e-7 * reference;
        assert!(c.primal <= reference + slack && reference <= c.dual + slack, "eps {eps}: Clarabel's {reference} outside [{}, {}]", c.primal, c.dual);
    }
}
