//! Trustworthiness, continuity and k-NN preservation against scikit-learn 1.9.1
//! (`fixtures/trustworthiness_sklearn.json`, written by `fixtures/make_trustworthiness_fixture.py`:
//! `sklearn.manifold.trustworthiness(X, Y, k)`, the same with X and Y swapped, and k-NN sets from
//! `NearestNeighbors`), on two data/embedding pairs for k = 1, 5, 10, 20.

use ndarray::Array2;
use serde_json::Value;
use structdr_eval::neighbourhood_preservation;

fn matrix(v: &Value) -> Array2<f64> {
    let rows: Vec<Vec<f64>> = v.as_array().unwrap().iter().map(|r| r.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()).collect();
    Array2::from_shape_fn((rows.len(), rows[0].len()), |(i, j)| rows[i][j])
}

#[test]
fn matches_scikit_learn() {
    let fixture: Value = serde_json::from_str(include_str!("fixtures/trustworthiness_sklearn.json")).unwrap();
    let mut checked = 0;
    for case in fixture["cases"].as_array().unwrap() {
        let (x, y) = (matrix(&case["x"]), matrix(&case["y"]));
        for want in case["scores"].as_array().unwrap() {
            let k = want["k"].as_u64().unwrap() as usize;
            let got = neighbourhood_preservation(x.view(), y.view(), k).unwrap();
            for (name, value) in [("trustworthiness", got.trustworthiness), ("continuity", got.continuity), ("knn_preservation", got.knn_preservation)] {
                let w = want[name].as_f64().unwrap();
                assert!((value - w).abs() < 1e-12, "{} k = {k}: {name} {value} vs scikit-learn {w}", case["name"]);
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 24);
}
