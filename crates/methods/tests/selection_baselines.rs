//! LS, SPEC and MCFS through the registry: bit-identical at 1 and 2 rayon threads on data large
//! enough to split the K-NN search and the per-feature loops, rankings that are permutations with
//! ties broken by index, and bad input (constant features, NaN, too many clusters) refused with
//! a typed error; duplicate samples are valid data.

use ndarray::Array2;
use rand::{Rng, SeedableRng};
use structdr_methods::api::{FitInput, Fitted, ParamValue};
use structdr_methods::{lookup, MethodError, ParamMap};

fn data(n: usize, m: usize, seed: u64) -> Array2<f64> {
    let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    Array2::from_shape_fn((n, m), |(i, j)| if j < 3 { (i % 4) as f64 * (j + 1) as f64 + r.gen_range(-0.3..0.3) } else { r.gen_range(-1.0..1.0) })
}

fn fit(name: &str, params: &[(&str, ParamValue)], x: &Array2<f64>) -> Result<Fitted, MethodError> {
    let given: ParamMap = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    let (_, m) = lookup(name).unwrap().instantiate(&given).unwrap();
    m.fit_with(&FitInput::new(x.view(), 0))
}

fn cases() -> Vec<(&'static str, Vec<(&'static str, ParamValue)>)> {
    vec![
        ("ls", vec![]),
        ("ls", vec![("weights", ParamValue::Str("binary".into()))]),
        ("spec", vec![("style", ParamValue::Int(0))]),
        ("spec", vec![("style", ParamValue::Int(1)), ("k", ParamValue::Int(0))]),
        ("spec", vec![("style", ParamValue::Int(2)), ("n_eigen", ParamValue::Int(4))]),
        ("mcfs", vec![("n_clusters", ParamValue::Int(4)), ("n_nonzero", ParamValue::Int(8))]),
        ("mcfs", vec![("path", ParamValue::Str("lar".into()))]),
    ]
}

fn bits(f: &Fitted) -> Vec<u64> {
    let s = f.feature_scores().unwrap();
    s.weights.iter().map(|v| v.to_bits()).chain(s.ranking.iter().map(|&r| r as u64)).collect()
}

#[test]
fn bit_identical_at_one_and_two_threads() {
    structdr_linalg::blas::set_num_threads(1);
    let x = data(600, 24, 1);
    for (name, p) in cases() {
        let run = |t: usize| rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap().install(|| fit(name, &p, &x).unwrap());
        let (one, two) = (run(1), run(2));
        assert_eq!(bits(&one), bits(&two), "{name} {p:?}");
        one.check_shape(600, 24).unwrap();
    }
}

#[test]
fn rankings_are_permutations_with_ties_by_index_and_follow_the_weights() {
    let mut x = data(80, 10, 2);
    // features 7 and 9 are copies of 5: equal scores (LS, SPEC), ranked 5, 7, 9
    for i in 0..80 {
        x[[i, 7]] = x[[i, 5]];
        x[[i, 9]] = x[[i, 5]];
    }
    for (name, p) in cases() {
        let f = fit(name, &p, &x).unwrap();
        f.check_shape(80, 10).unwrap();
        let s = f.feature_scores().unwrap();
        for w in s.ranking.windows(2) {
            assert!(s.weights[w[0]] > s.weights[w[1]] || (s.weights[w[0]] == s.weights[w[1]] && w[0] < w[1]), "{name} {p:?}: {:?} {:?}", s.ranking, s.weights);
        }
        if name != "mcfs" {
            assert_eq!(s.weights[5], s.weights[7]);
            let pos = |r: usize| s.ranking.iter().position(|&q| q == r).unwrap();
            assert!(pos(5) < pos(7) && pos(7) < pos(9));
        }
    }
}

#[test]
fn bad_input_is_refused_and_duplicate_samples_are_valid() {
    let x = data(50, 6, 3);
    let mut constant = x.clone();
    constant.column_mut(2).fill(0.5);
    let mut nan = x.clone();
    nan[[4, 1]] = f64::NAN;
    let mut dup = x.clone();
    for i in 0..10 {
        let row = dup.row(i).to_owned();
        dup.row_mut(i + 10).assign(&row);
    }
    for (name, p) in cases() {
        match fit(name, &p, &nan) {
            Err(MethodError::Input { .. }) => {}
            other => panic!("{name}: NaN gave {:?}", other.map(|f| f.notes)),
        }
        match (name, fit(name, &p, &constant)) {
            ("mcfs", Ok(f)) => assert_eq!(f.feature_scores().unwrap().weights[2], 0.0, "a constant column never enters the lasso"),
            (_, Err(MethodError::Degenerate { reason, .. })) => assert!(reason.contains("constant feature"), "{reason}"),
            (_, other) => panic!("{name}: constant feature gave {:?}", other.map(|f| f.notes)),
        }
        let f = fit(name, &p, &dup).unwrap();
        f.check_shape(50, 6).unwrap();
    }
    for n_clusters in [50i64, 60] {
        match fit("mcfs", &[("n_clusters", ParamValue::Int(n_clusters))], &x) {
            Err(MethodError::Input { reason, .. }) => assert!(reason.contains("n_clusters"), "{reason}"),
            other => panic!("n_clusters = {n_clusters}: {:?}", other.map(|f| f.notes)),
        }
    }
    assert!(matches!(fit("spec", &[("style", ParamValue::Int(2)), ("n_eigen", ParamValue::Int(51))], &x), Err(MethodError::Input { .. })));
    assert!(matches!(fit("ls", &[("k", ParamValue::Int(50))], &x), Err(MethodError::Input { .. })));
    // style outside {0, 1, 2} is refused by the schema
    let given: ParamMap = [("style".to_string(), ParamValue::Int(3))].into_iter().collect();
    assert!(lookup("spec").unwrap().instantiate(&given).is_err());
}
