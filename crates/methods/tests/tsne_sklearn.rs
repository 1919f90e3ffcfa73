//! t-SNE against scikit-learn's exact t-SNE (`fixtures/tsne_sklearn.json`, written by
//! `fixtures/make_tsne_fixture.py` with scikit-learn 1.9.1), from the same initialisations,
//! learning rate, exaggeration schedule and 1000 iterations.
//!
//! The descent is chaotic: scikit-learn's own KL after 1000 iterations moves by up to 15%
//! (perplexity 10) when its initialisation is scaled by 1 + 1e-9. A single end point therefore
//! depends on the rounding of the gradient (ours forms it by GEMMs, whose rounding differs between
//! BLAS kernels and thread counts), and comparing one run with one run fails on some machines
//! though both descents are right. What is well defined is the *distribution* of end points over
//! nearby initialisations, so the test runs ours from the same 13 initialisations (`y0` and
//! `y0 (1 + eps)` for the fixture's 12 `perturbations`) as scikit-learn's 13 runs and asserts:
//!
//! - on scikit-learn's P, our first 20 iterations equal scikit-learn's (its `_gradient_descent`
//!   on the exaggerated P, momentum 0.5, gains) to 1e-8 relative: before the descent turns chaotic
//!   a rounding difference grows only ~1e4 times, so a wrong gradient scale, step, gain rule or
//!   momentum shows here point by point (the end points below cannot see, say, a halved step);
//! - on scikit-learn's P (the optimiser alone) the two samples of KL are alike: the medians agree
//!   within 10% and a Mann-Whitney rank test does not tell them apart (|z| <= 3.29, two-sided
//!   0.1%). A descent that stops early or settles elsewhere fails them;
//! - our P equals theirs to the calibrations' tolerances (1e-9 nats here, 1e-5 there), and the
//!   descents on it pass the same two checks.

use ndarray::Array2;
use serde_json::Value;
use structdr_methods::neighbour::tsne::{joint_affinities, Gradient, Schedule, Tsne, TsneInit};
use structdr_numerics::stats::median;

fn matrix(v: &Value) -> Array2<f64> {
    let rows: Vec<Vec<f64>> = v.as_array().unwrap().iter().map(|r| r.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()).collect();
    Array2::from_shape_fn((rows.len(), rows[0].len()), |(i, j)| rows[i][j])
}

/// The normal approximation of the Mann-Whitney U statistic of samples `a` and `b` (no ties
/// expected: the KLs are distinct floats): `z = (U - n1 n2 / 2) / sqrt(n1 n2 (n1 + n2 + 1) / 12)`.
fn mann_whitney_z(a: &[f64], b: &[f64]) -> f64 {
    let u: f64 = a
        .iter()
        .map(|x| {
            b.iter()
                .map(|y| {
                    if x > y {
                        1.0
                    } else if x == y {
                        0.5
                    } else {
                        0.0
                    }
                })
                .sum::<f64>()
        })
        .sum();
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    (u - n1 * n2 / 2.0) / (n1 * n2 * (n1 + n2 + 1.0) / 12.0).sqrt()
}

/// The two checks of the module doc on our and scikit-learn's end-point KLs.
fn assert_alike(what: &str, ours: &[f64], theirs: &[f64]) {
    let (mo, mt) = (median(ours), median(theirs));
    let z = mann_whitney_z(ours, theirs);
    eprintln!("{what}: median KL ours {mo:.6}, scikit-learn {mt:.6} ({:.2e} relative), Mann-Whitney z = {z:.2}", (mo - mt).abs() / mt);
    eprintln!("  ours {ours:.4?}\n  scikit-learn {theirs:.4?}");
    assert!((mo - mt).abs() <= 0.10 * mt, "{what}: median KL ours {mo}, scikit-learn {mt}");
    assert!(z.abs() <= 3.29, "{what}: the KL samples differ (Mann-Whitney z = {z:.2})");
}

#[test]
fn kl_after_1000_iterations_is_distributed_as_scikit_learns() {
    let f: Value = serde_json::from_str(include_str!("fixtures/tsne_sklearn.json")).unwrap();
    let (x, y0) = (matrix(&f["x"]), matrix(&f["y0"]));
    for case in f["cases"].as_array().unwrap() {
        let perplexity = case["perplexity"].as_f64().unwrap();
        let t = Tsne {
            dim: 2,
            perplexity,
            max_iter: 1000,
            early_exaggeration: 12.0,
            exaggeration_iter: 250,
            learning_rate: Some(f["learning_rate"].as_f64().unwrap()),
            init: TsneInit::Random,
            gradient: Gradient::Exact,
            theta: 0.5,
            schedule: Schedule::Modern,
        };
        let eps: Vec<f64> = std::iter::once(0.0).chain(case["perturbations"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap())).collect();
        let theirs: Vec<f64> =
            std::iter::once(case["kl"].as_f64().unwrap()).chain(case["kl_perturbed_init"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap())).collect();
        assert_eq!(eps.len(), theirs.len(), "one scikit-learn run per initialisation");
        let end_points = |p: &Array2<f64>| -> Vec<f64> { eps.iter().map(|e| *t.optimise(p.view(), &y0 * (1.0 + e)).1.last().unwrap()).collect() };
        // their P: the optimiser alone, first step by step while the descent is still stable
        let p_theirs = matrix(&case["p"]);
        let steps = case["early_steps"].as_u64().unwrap() as usize;
        let (y_early, _) = Tsne { max_iter: steps, ..t.clone() }.optimise(p_theirs.view(), y0.clone());
        let y_theirs = matrix(&case["y_early"]);
        let dy = (&y_early - &y_theirs).mapv(f64::abs).fold(0.0f64, |a, &b| a.max(b)) / y_theirs.mapv(f64::abs).fold(0.0f64, |a, &b| a.max(b));
        eprintln!("perplexity {perplexity}: after {steps} iterations max |y - y_sklearn| / max |y_sklearn| = {dy:.2e}");
        assert!(dy <= 1e-8, "perplexity {perplexity}: the first {steps} iterations differ from scikit-learn's by {dy:e}");
        assert_alike(&format!("perplexity {perplexity}, their P"), &end_points(&p_theirs), &theirs);
        // our P (calibrated to 1e-9 nats): the same P to the calibration's tolerance
        let (p, _) = joint_affinities(x.view(), perplexity);
        let dp = (&p - &p_theirs).mapv(f64::abs).fold(0.0f64, |a, &b| a.max(b)) / p_theirs.fold(0.0f64, |a, &b| a.max(b));
        eprintln!("perplexity {perplexity}: max relative difference of our P to theirs {dp:.2e}");
        assert!(dp < 1e-3, "P differs from scikit-learn's by {dp:e} relative");
        assert_alike(&format!("perplexity {perplexity}, our P"), &end_points(&p), &theirs);
    }
}
