//! K-NN search against brute force (duplicates and ties included), disconnected graphs, input
//! errors and determinism of KPCA, LE and LLE.

use ndarray::{Array2, ArrayView2};
use ndarray_npy::read_npy;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use structdr_methods::{lookup, Embedder, MethodError, ParamMap, ParamValue};
use structdr_numerics::graphs::{connected_components, neighbourhood_graph, Disconnected};
use structdr_numerics::neighbours::{knn, symmetrised_edges};

fn fixture(name: &str) -> Array2<f64> {
    read_npy(format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn method(name: &str, kv: &[(&str, ParamValue)]) -> Box<dyn Embedder> {
    let p: ParamMap = kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    lookup(name).unwrap().instantiate(&p).unwrap().1
}

/// Brute-force K-NN: exact distances, sorted by (distance, index).
fn brute(x: ArrayView2<f64>, k: usize) -> (Array2<usize>, Array2<f64>) {
    let n = x.nrows();
    let mut idx = Array2::zeros((n, k));
    let mut dist = Array2::zeros((n, k));
    for i in 0..n {
        let mut v: Vec<(f64, usize)> = (0..n).filter(|&j| j != i).map(|j| ((&x.row(i) - &x.row(j)).mapv(|d| d * d).sum(), j)).collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for r in 0..k {
            idx[[i, r]] = v[r].1;
            dist[[i, r]] = v[r].0;
        }
    }
    (idx, dist)
}

#[test]
fn knn_equals_brute_force_on_random_data() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    // offset far from the origin: the GEMM identity cancels badly there unless the data are centred
    let x = Array2::from_shape_fn((700, 7), |_| 1e4 + rng.gen_range(-1.0..1.0));
    for k in [1, 5, 12] {
        let g = knn(x.view(), k).unwrap();
        let (bi, bd) = brute(x.view(), k);
        assert_eq!(g.indices, bi, "k = {k}");
        assert_eq!(g.sq_dists, bd, "k = {k}");
    }
}

/// Above 4096 points each row is pre-filtered by the k-th smallest distance of a strided sample:
/// the neighbours and distances stay exactly the brute-force ones, also with many exact ties
/// (every point of an integer grid three times) and with k both small and large.
#[test]
fn knn_equals_brute_force_on_the_sampled_path() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
    let mut rows = Vec::new();
    for t in 0..4200 {
        if t < 2700 {
            rows.push([((t / 3) % 30) as f64, ((t / 3) / 30) as f64, 0.0]);
        } else {
            rows.push([rng.gen_range(0.0..30.0), rng.gen_range(0.0..30.0), rng.gen_range(-1.0..1.0)]);
        }
    }
    let x = Array2::from_shape_vec((rows.len(), 3), rows.concat()).unwrap();
    for k in [1, 7, 90] {
        let g = knn(x.view(), k).unwrap();
        let (bi, bd) = brute(x.view(), k);
        assert_eq!(g.indices, bi, "k = {k}");
        assert_eq!(g.sq_dists, bd, "k = {k}");
    }
}

#[test]
fn knn_with_duplicates_and_ties_goes_to_the_lowest_index() {
    // Integer grid with every point repeated: exact zero distances and many exact ties.
    let mut rows = Vec::new();
    for a in 0..6 {
        for b in 0..5 {
            rows.push([a as f64, b as f64]);
            rows.push([a as f64, b as f64]);
        }
    }
    rows.push([2.0, 2.0]); // a triplicate
    let x = Array2::from_shape_vec((rows.len(), 2), rows.concat()).unwrap();
    for k in [1, 3, 6, 9] {
        let g = knn(x.view(), k).unwrap();
        let (bi, bd) = brute(x.view(), k);
        assert_eq!(g.indices, bi, "k = {k}");
        assert_eq!(g.sq_dists, bd, "k = {k}");
    }
    let g = knn(x.view(), 1).unwrap();
    assert_eq!(g.sq_dists.column(0).iter().filter(|&&d| d == 0.0).count(), x.nrows());
    // all of them embed without NaN
    for name in ["le", "lle", "kpca"] {
        let y = method(name, &[("dim", ParamValue::Int(2))]).fit(x.view(), 0).unwrap().into_embedding().unwrap();
        assert!(y.iter().all(|v| v.is_finite()), "{name}");
    }
}

#[test]
fn knn_needs_more_points_than_neighbours() {
    let x = Array2::<f64>::zeros((5, 2));
    let e = knn(x.view(), 5).unwrap_err().to_string();
    assert!(e.contains("too few points for k neighbours"), "{e}");
    assert!(knn(x.view(), 4).is_ok());
    // five distinct points (five copies of one point are refused earlier, as degenerate data)
    let x = Array2::from_shape_fn((5, 2), |(i, j)| (i * (j + 2)) as f64);
    let e = method("le", &[("k", ParamValue::Int(12))]).fit(x.view(), 0).unwrap_err().to_string();
    assert!(e.contains("le") && e.contains("too few points"), "{e}");
    let e = method("lle", &[("k", ParamValue::Int(5))]).fit(x.view(), 0).unwrap_err().to_string();
    assert!(e.contains("lle") && e.contains("too few points"), "{e}");
}

#[test]
fn nan_input_is_a_clear_error() {
    let mut x = fixture("swiss.npy");
    x[[7, 1]] = f64::NAN;
    for name in ["kpca", "le", "lle"] {
        let e = method(name, &[]).fit(x.view(), 0).unwrap_err().to_string();
        assert!(e.contains("sample 7, feature 1"), "{name}: {e}");
    }
    assert!(knn(x.view(), 3).is_err());
}

#[test]
fn disconnected_moons_error_or_connect() {
    let x = fixture("moons.npy");
    let n = x.nrows();
    let edges = symmetrised_edges(&knn(x.view(), 5).unwrap());
    assert_eq!(connected_components(n, &edges).1, 2);
    for name in ["le", "lle"] {
        let err = method(name, &[("k", ParamValue::Int(5)), ("disconnected", ParamValue::Str("error".into()))]).fit(x.view(), 0).unwrap_err();
        match &err {
            MethodError::Disconnected { components, sizes, k, .. } => {
                assert_eq!((*components, *k), (2, 5));
                assert_eq!(sizes.iter().sum::<usize>(), n);
            }
            other => panic!("{name}: expected Disconnected, got {other}"),
        }
        assert!(err.to_string().contains("connected components"), "{err}");
        let f = method(name, &[("k", ParamValue::Int(5))]).fit(x.view(), 0).unwrap();
        assert_eq!(f.embedding().unwrap().dim(), (n, 2), "{name}: no point dropped");
        assert!(f.embedding().unwrap().iter().all(|v| v.is_finite()), "{name}");
        assert!(f.notes.iter().any(|s| s.contains("joined") && s.contains("2 connected components")), "{name}: {:?}", f.notes);
        let g = f.graph.clone().unwrap();
        assert_eq!(connected_components(n, &g.edges).1, 1, "{name}: repaired graph is connected");
        // the embedding is not a component indicator: both moons spread over the first axis
        let c0: Vec<f64> = f.embedding().unwrap().column(0).to_vec();
        let distinct = c0.iter().map(|v| (v * 1e6).round() as i64).collect::<std::collections::BTreeSet<_>>().len();
        assert!(distinct > n / 2, "{name}: {distinct} distinct values");
    }
    let g = neighbourhood_graph(x.view(), 5, Disconnected::Connect).unwrap();
    assert_eq!(g.joins.len(), 1);
    assert_eq!(g.sizes_before.len(), 2);
}

#[test]
fn outputs_are_bit_identical_across_runs() {
    let x = fixture("swiss.npy");
    for name in ["kpca", "le", "lle"] {
        let m = method(name, &[("dim", ParamValue::Int(3))]);
        let a = m.fit(x.view(), 1).unwrap().into_embedding().unwrap();
        let b = m.fit(x.view(), 2).unwrap().into_embedding().unwrap();
        assert!(a.iter().zip(b.iter()).all(|(u, v)| u.to_bits() == v.to_bits()), "{name}");
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
    let big = Array2::from_shape_fn((1200, 4), |_| rng.gen_range(-1.0..1.0));
    let a = knn(big.view(), 8).unwrap();
    let b = knn(big.view(), 8).unwrap();
    assert_eq!(a, b);
}

#[test]
fn registry_exposes_the_documented_parameters() {
    let names = |m: &str| lookup(m).unwrap().params.iter().map(|p| p.name).collect::<Vec<_>>();
    assert_eq!(names("kpca"), ["dim", "bandwidth"]);
    assert_eq!(names("le"), ["dim", "k", "weights", "t", "disconnected"]);
    assert_eq!(names("lle"), ["dim", "k", "reg", "disconnected"]);
    let bad: ParamMap = [("weights".to_string(), ParamValue::Str("gauss".into()))].into_iter().collect();
    assert!(lookup("le").unwrap().resolve(&bad).is_err());
    let bad: ParamMap = [("bandwidth".to_string(), ParamValue::Float(0.0))].into_iter().collect();
    assert!(lookup("kpca").unwrap().resolve(&bad).is_err());
}
