//! t-SNE against scikit-learn's exact t-SNE (`fixtures/tsne_sklearn.json`, written by
//! `fixtures/make_tsne_fixture.py` with scikit-learn 1.9.1), from the same initialisation,
//! learning rate, exaggeration schedule and 1000 iterations:
//!
//! - on scikit-learn's P, our optimiser's KL(P || Q) at the last iteration is within 1% of theirs,
//!   or within the spread of scikit-learn's own KL when its initialisation is perturbed by 1e-9 to
//!   1e-7 (the fixture's `kl_perturbed_init`) where that spread is wider: the same descent with a
//!   different rounding of the same gradient (ours forms it by GEMMs) cannot be held closer than
//!   scikit-learn holds itself;
//! - our P equals theirs to the calibrations' tolerances (1e-9 nats here, 1e-5 there), and on it
//!   our KL is within 5% of theirs. The descent is chaotic: scikit-learn's own KL moves by up to
//!   4.5% when its initialisation is scaled by 1 + 1e-9 or 1 + 1e-7 (perplexity 10; the fixture
//!   records those runs), so the end point is not defined more tightly than that.

use ndarray::Array2;
use serde_json::Value;
use structdr_methods::neighbour::tsne::{joint_affinities, Gradient, Schedule, Tsne, TsneInit};

fn matrix(v: &Value) -> Array2<f64> {
    let rows: Vec<Vec<f64>> = v.as_array().unwrap().iter().map(|r| r.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()).collect();
    Array2::from_shape_fn((rows.len(), rows[0].len()), |(i, j)| rows[i][j])
}

#[test]
fn kl_after_1000_iterations_is_within_scikit_learns_own_spread() {
    let f: Value = serde_json::from_str(include_str!("fixtures/tsne_sklearn.json")).unwrap();
    let (x, y0) = (matrix(&f["x"]), matrix(&f["y0"]));
    for case in f["cases"].as_array().unwrap() {
        let perplexity = case["perplexity"].as_f64().unwrap();
        let theirs = case["kl"].as_f64().unwrap();
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
        // their P: the optimiser alone
        let p_theirs = matrix(&case["p"]);
        let (y, history) = t.optimise(p_theirs.view(), y0.clone());
        let ours = *history.last().unwrap();
        let rel = (ours - theirs).abs() / theirs;
        let y_theirs = matrix(&case["y"]);
        let dy = (&y - &y_theirs).mapv(f64::abs).fold(0.0f64, |a, &b| a.max(b)) / y_theirs.mapv(f64::abs).fold(0.0f64, |a, &b| a.max(b));
        eprintln!("perplexity {perplexity}, their P: KL ours {ours:.6}, scikit-learn {theirs:.6}, relative difference {rel:.2e}; max |y - y_sklearn| / max |y| = {dy:.2e}");
        let perturbed: Vec<f64> = case["kl_perturbed_init"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        let their_spread = perturbed.iter().map(|k| (k - theirs).abs() / theirs).fold(0.01f64, f64::max);
        assert!(rel <= their_spread, "perplexity {perplexity}: KL ours {ours}, scikit-learn {theirs} ({rel:.3e} > {their_spread:.3e})");
        // our P (calibrated to 1e-9 nats): the same P to the calibration's tolerance
        let (p, _) = joint_affinities(x.view(), perplexity);
        let dp = (&p - &p_theirs).mapv(f64::abs).fold(0.0f64, |a, &b| a.max(b)) / p_theirs.fold(0.0f64, |a, &b| a.max(b));
        let (_, history) = t.optimise(p.view(), y0.clone());
        let rel_own = (*history.last().unwrap() - theirs).abs() / theirs;
        eprintln!(
            "perplexity {perplexity}, our P (max relative difference to theirs {dp:.2e}): KL {:.6} ({rel_own:.2e}); scikit-learn from perturbed inits {perturbed:?}",
            *history.last().unwrap()
        );
        assert!(dp < 1e-3, "P differs from scikit-learn's by {dp:e} relative");
        assert!(rel_own < 0.05, "perplexity {perplexity}: KL on our P {} vs scikit-learn {theirs}", *history.last().unwrap());
    }
}
