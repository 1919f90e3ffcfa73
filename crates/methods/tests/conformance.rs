//! Conformance of every registered method to the contract (`structdr_methods::api`). A method
//! gets all of these checks by being registered; checks 3 to 6 fit it, in its own test
//! `contract::<method>` from an entry of `fit_contract_tests!` (a test fails, naming the entry to add,
//! when a registered method has none):
//!
//! 1. it builds from its defaults, its registry entry's schema validates its own defaults, the
//!    instance reports the parameters it was built from (for every admissible sample value of
//!    every parameter), and struct literals outside the schema are refused;
//! 2. NaN / infinite, empty and too-few-samples inputs give a typed [`MethodError::Input`], never
//!    a panic;
//! 3. the same seed gives the same bits with 1 and 2 rayon threads (and BLAS single-threaded);
//! 4. the output has the kind the registry declares and the shape that kind promises
//!    (`Fitted::check_shape`);
//! 5. where the entry says `inductive`, the fit carries a transform, and transforming the training
//!    data reproduces the embedding; where it does not, there is none;
//! 6. an initial value is refused unless the entry says `accepts_init`; labels (which no method
//!    needs) change nothing;
//! 7. identical samples and data at a scale where squared distances overflow or underflow
//!    (x 1e300, x 1e-300) are [`MethodError::Degenerate`], never a plausible-looking answer.

use ndarray::Array2;
use rand::{Rng, SeedableRng};
use structdr_methods::api::{FitInput, Fitted, Init, Output, OutputKind, ParamKind, ParamValue, Stage, AUTO, DIM_ENERGY};
use structdr_methods::{registry, MethodError, MethodInfo, ParamMap};

/// 60 samples of a noisy 4-D curve (well conditioned for every method at its defaults).
fn data() -> Array2<f64> {
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(11);
    Array2::from_shape_fn((60, 4), |(i, j)| {
        let t = i as f64 / 60.0 * 3.0;
        let base = match j {
            0 => t.cos(),
            1 => t.sin(),
            2 => 0.5 * t,
            _ => (2.0 * t).sin() * 0.3,
        };
        base + 0.05 * rng.gen::<f64>()
    })
}

fn labels() -> Vec<i64> {
    (0..60).map(|i| (i / 20) as i64).collect()
}

fn build(m: &MethodInfo) -> Box<dyn structdr_methods::Embedder> {
    m.instantiate(&ParamMap::new()).unwrap_or_else(|e| panic!("{} does not build from its defaults: {e}", m.name)).1
}

/// Fits without letting a panic escape: a panic is a conformance failure with the method named.
/// BLAS single-threaded (see [`in_pool`]).
fn fit(m: &MethodInfo, input: &FitInput) -> Result<Fitted, MethodError> {
    structdr_linalg::blas::set_num_threads(1);
    let method = build(m);
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| method.fit_with(input))) {
        Ok(r) => r,
        Err(_) => panic!("{} panicked", m.name),
    }
}

/// Runs `f` in a rayon pool of `threads` threads. BLAS stays single-threaded for the whole test
/// binary (as inside the runner's cells): multi-threaded OpenBLAS called from concurrent tests
/// falls back to one thread when its pool is busy, which changes the last bits.
fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    structdr_linalg::blas::set_num_threads(1);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    pool.install(f)
}

fn bits(f: &Fitted) -> Vec<u64> {
    match &f.output {
        Output::Embedding(y) => y.iter().map(|v| v.to_bits()).collect(),
        Output::FeatureScores(s) => s.weights.iter().map(|v| v.to_bits()).chain(s.ranking.iter().map(|&r| r as u64)).collect(),
        Output::PrincipalGraph(g) => g.centres.iter().chain(g.projection.iter()).map(|v| v.to_bits()).collect(),
    }
}

#[test]
fn every_method_builds_from_defaults_and_its_defaults_validate() {
    assert!(registry().len() >= 15);
    for m in registry() {
        for p in &m.params {
            p.check(m.name, &p.default).unwrap_or_else(|e| panic!("default of {}.{} invalid: {e}", m.name, p.name));
        }
        build(m);
        assert!(m.version >= 1, "{}: versions start at 1", m.name);
    }
}

/// The schema is the one declaration of the parameters: an instance reports exactly the resolved
/// parameters it was built from (`params()` inverts `build`), and a struct literal outside the
/// schema's range is refused by `fit` with a parameter error, as a spec or CLI value would be.
#[test]
fn parameters_round_trip_through_the_schema_and_struct_literals_are_checked() {
    for m in registry() {
        let resolved = m.resolve(&ParamMap::new()).unwrap();
        let built = build(m);
        let mut fit_stage = resolved.clone();
        for p in m.params.iter().filter(|p| p.stage == Stage::Evaluation) {
            fit_stage.remove(p.name);
        }
        assert_eq!(built.params(), fit_stage, "{}: params() does not invert build", m.name);
        assert_eq!(built.info().name, m.name);
        m.check(&built.params()).unwrap_or_else(|e| panic!("{}: its own defaults fail the check: {e}", m.name));
    }
    let x = data();
    let refused = |e: Box<dyn structdr_methods::Embedder>| match e.fit(x.view(), 0) {
        Err(MethodError::Param(p)) => p.to_string(),
        other => panic!("{}: expected a parameter error, got {:?}", e.name(), other.map(|f| f.kind())),
    };
    use structdr_methods::principal::ddrtree::DdrTree;
    use structdr_methods::selection::fsl::Fsl;
    use structdr_methods::spectral::pca::Pca;
    use structdr_methods::structure::spl::{Spl, SplSolver};
    assert!(refused(Box::new(Pca { dim: 0 })).contains("dim"));
    assert!(refused(Box::new(DdrTree { sigma: 0.0, ..DdrTree::drtree(2) })).contains("sigma"));
    assert!(refused(Box::new(Fsl { lambda: f64::NAN, ..Fsl::default() })).contains("lambda"));
    assert!(refused(Box::new(Spl { dim: 2, k: 10, c: 0.0, gamma: 1e-3, max_iter: 100, tol: 1e-5, solver: SplSolver::Subgradient })).contains("C"));
}

/// Admissible values of a parameter kind worth building from: every choice, both bools, the
/// closed ends of a range (and a value inside it), "auto" with the inner kind's values, a small and
/// a larger dimension.
fn sample_values(kind: &ParamKind, default: &ParamValue) -> Vec<ParamValue> {
    let mut out = vec![default.clone()];
    match kind {
        ParamKind::Int { min, max } => {
            out.extend([ParamValue::Int(*min), ParamValue::Int(min.saturating_add(3).min(*max))]);
            if *max < i64::MAX {
                out.push(ParamValue::Int(*max));
            }
        }
        ParamKind::Float { min, max } => {
            let inside = match (min.value.is_finite(), max.value.is_finite()) {
                (true, true) => 0.5 * (min.value + max.value),
                (true, false) => min.value + 1.5,
                (false, true) => max.value - 1.5,
                (false, false) => 0.25,
            };
            out.push(ParamValue::Float(inside));
            for end in [min, max] {
                if end.closed {
                    out.push(ParamValue::Float(end.value));
                }
            }
        }
        ParamKind::Choice(options) => out.extend(options.iter().map(|o| ParamValue::Str(o.to_string()))),
        ParamKind::Bool => out.extend([ParamValue::Bool(true), ParamValue::Bool(false)]),
        ParamKind::Auto(inner) => {
            out.push(ParamValue::Str(AUTO.into()));
            let inner_default = match inner.as_ref() {
                ParamKind::Int { min, .. } => ParamValue::Int(*min),
                ParamKind::Float { min, max } if min.closed => ParamValue::Float(min.value),
                ParamKind::Float { max, .. } if max.value.is_finite() => ParamValue::Float(max.value),
                _ => ParamValue::Float(2.0),
            };
            out.extend(sample_values(inner, &inner_default));
        }
        ParamKind::Dim => out.extend([ParamValue::Int(1), ParamValue::Int(7)]),
    }
    out
}

/// For every parameter of every method and each of its sample values (the others at their
/// defaults): the registry builds the method, the instance reports exactly the resolved parameters
/// (evaluation-stage ones aside) and they pass the schema. So every choice maps to a value of the
/// field's type and back, and no integer or float is converted to the other kind on the way.
/// `dim = "energy"` is refused by the build with a message naming what resolves it.
#[test]
fn every_admissible_value_of_every_parameter_round_trips() {
    let mut cases = 0;
    for m in registry() {
        for p in &m.params {
            for v in sample_values(&p.kind, &p.default) {
                let given: ParamMap = [(p.name.to_string(), v.clone())].into_iter().collect();
                let resolved = m.resolve(&given).unwrap_or_else(|e| panic!("{}.{} = {v}: sample value refused: {e}", m.name, p.name));
                let built = (m.build)(&resolved).unwrap_or_else(|e| panic!("{}.{} = {v}: does not build: {e}", m.name, p.name));
                let mut fit_stage = resolved.clone();
                for q in m.params.iter().filter(|q| q.stage == Stage::Evaluation) {
                    fit_stage.remove(q.name);
                }
                assert_eq!(built.params(), fit_stage, "{}.{} = {v}: params() does not invert build", m.name, p.name);
                assert_eq!(built.name(), m.name, "{}.{} = {v}", m.name, p.name);
                m.check(&built.params()).unwrap_or_else(|e| panic!("{}.{} = {v}: params() fail the schema: {e}", m.name, p.name));
                cases += 1;
            }
        }
        if m.param("dim").is_some_and(|p| p.kind == ParamKind::Dim) {
            let given: ParamMap = [("dim".to_string(), ParamValue::Str(DIM_ENERGY.into()))].into_iter().collect();
            let resolved = m.resolve(&given).unwrap();
            match (m.build)(&resolved) {
                Err(MethodError::Param(e)) => assert!(e.to_string().contains("resolved against a data set"), "{}: {e}", m.name),
                Err(e) => panic!("{}: dim = energy: not a parameter error: {e}", m.name),
                Ok(_) => panic!("{}: dim = energy built without being resolved", m.name),
            }
        }
    }
    assert!(cases > 300, "{cases} cases");
}

#[test]
fn bad_inputs_are_typed_errors_never_panics() {
    let good = data();
    let mut nan = good.clone();
    nan[[7, 2]] = f64::NAN;
    let mut inf = good.clone();
    inf[[3, 0]] = f64::INFINITY;
    let empty = Array2::<f64>::zeros((0, 4));
    let no_features = Array2::<f64>::zeros((60, 0));
    let one = good.slice(ndarray::s![..1, ..]).to_owned();
    for m in registry() {
        for (what, x) in [("NaN", &nan), ("Inf", &inf), ("empty", &empty), ("no features", &no_features), ("one sample", &one)] {
            if m.name == "identity" && what == "one sample" {
                continue; // Y = X is defined for any N >= 1
            }
            match fit(m, &FitInput::new(x.view(), 1)) {
                Err(MethodError::Input { .. }) => {}
                Err(e) => panic!("{} on {what} input: an error, but not an input error: {e}", m.name),
                Ok(_) => panic!("{} accepted {what} input", m.name),
            }
        }
    }
}

#[test]
fn degenerate_data_is_a_degenerate_error_for_every_method() {
    let good = data();
    // 0.1 + 0.1 + 0.1 != 0.3: the repeated point must be found without a rounded mean
    let identical = Array2::from_shape_fn((60, 4), |(_, j)| 0.1 * (j + 1) as f64);
    let huge = &good * 1e300;
    let tiny = &good * 1e-300;
    for m in registry() {
        for (what, x) in [("identical samples", &identical), ("x 1e300", &huge), ("x 1e-300", &tiny)] {
            match fit(m, &FitInput::new(x.view(), 1)) {
                Err(MethodError::Degenerate { reason, .. }) => assert!(reason.contains("constant") || reason.contains("extreme scale"), "{}: {reason}", m.name),
                Err(e) => panic!("{} on {what}: an error, but not a degenerate one: {e}", m.name),
                Ok(_) => panic!("{} accepted {what}", m.name),
            }
        }
        // the bounds are where squared distances stop being representable, not tighter (a method
        // may still find data at that scale degenerate for a reason of its own, e.g. a learned
        // graph without an edge)
        assert!(
            fit(m, &FitInput::new((&good * 1e100).view(), 1))
                .map_or_else(|e| !matches!(&e, MethodError::Degenerate { reason, .. } if reason.contains("extreme scale")), |_| true),
            "{} at 1e100",
            m.name
        );
    }
}

/// The fit contract of one method, from five fits (the fits dominate this file's time, so each
/// serves every check that needs it; a test per method lets the test runner spread them over the
/// cores, and names the method that fails):
///
/// 3. the same seed gives the same bits and history with 1 and 2 rayon threads; the output has
///    the registry's kind and that kind's shape, and the trace says why it stopped;
/// 5. an inductive method's transform maps the training data onto its embedding (new samples of
///    the right width too, a wrong width is an input error); a transductive fit has none;
/// 6. labels (which no method needs) change nothing; an initial value is refused unless the entry
///    says `accepts_init`, and the method's own solution is accepted where it does;
///
/// and a method not declared `randomised` gives the same bits for another seed (the runner repeats
/// only randomised cells under a spec's `repeats`: a method that claims not to be would hide its
/// seed variance). The conformance data has N = 60, so k-means-seeded methods (ddrtree's K < N,
/// rpg's landmarks) do use the seed on it.
fn fit_contract(name: &str) {
    let m = registry().iter().find(|m| m.name == name).unwrap_or_else(|| panic!("{name} is not registered"));
    let x = data();
    let input = FitInput::new(x.view(), 1);
    let one = in_pool(1, || fit(m, &input)).unwrap_or_else(|e| panic!("{} fails on the conformance data: {e}", m.name));
    let two = in_pool(2, || fit(m, &input)).unwrap();
    assert_eq!(bits(&one), bits(&two), "{}: 1 vs 2 threads", m.name);
    assert_eq!(
        one.trace.history.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        two.trace.history.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        "{}: history",
        m.name
    );
    assert_eq!(one.kind(), m.output, "{}: output kind differs from the registry entry", m.name);
    one.check_shape(x.nrows(), x.ncols()).unwrap_or_else(|e| panic!("{}: {e}", m.name));
    if m.output == OutputKind::Embedding {
        let dim = one.embedding().unwrap().ncols();
        assert!(dim >= 1, "{}", m.name);
    }
    assert!(!one.trace.termination.is_empty(), "{}: the trace says why it stopped", m.name);
    assert!(one.trace.converged() || one.trace.iterations > 0, "{}: a closed form converges", m.name);

    let reseeded = fit(m, &FitInput::new(x.view(), 977)).unwrap();
    if !m.randomised {
        assert_eq!(bits(&one), bits(&reseeded), "{} is not declared randomised but its output depends on the seed", m.name);
    }
    if m.name == "rproj" {
        assert_ne!(bits(&one), bits(&reseeded), "the random projection varies with the seed");
    }

    match (&one.transform, m.inductive) {
        (Some(t), true) => {
            let y = one.embedding().unwrap();
            let z = t.transform(x.view()).unwrap();
            let err = (&z - y).iter().fold(0.0f64, |a, v| a.max(v.abs()));
            let scale = y.iter().fold(0.0f64, |a, v| a.max(v.abs())).max(1e-12);
            assert!(err <= 1e-8 * scale, "{}: transform(X) differs from the embedding by {err:e} (scale {scale:e})", m.name);
            assert_eq!(t.transform(x.slice(ndarray::s![..5, ..])).unwrap().dim(), (5, y.ncols()));
            assert!(matches!(t.transform(x.slice(ndarray::s![.., ..3])), Err(MethodError::Input { .. })), "{}", m.name);
        }
        (None, false) => {}
        (t, i) => panic!("{}: registry says inductive = {i} but the fit has a transform: {}", m.name, t.is_some()),
    }

    let y = labels();
    let with_labels = fit(m, &FitInput::new(x.view(), 1).with_labels(&y)).unwrap();
    assert_eq!(bits(&one), bits(&with_labels), "{}: labels changed an unsupervised fit", m.name);
    assert!(!m.needs_labels, "{}", m.name);
    let init = match &one.output {
        Output::PrincipalGraph(g) => Init::Centres(g.centres.view()),
        _ => Init::Embedding(x.view()),
    };
    let r = fit(m, &FitInput::new(x.view(), 1).with_init(init));
    if m.accepts_init {
        // starting from the method's own solution is accepted and stays a valid output
        let f = r.unwrap_or_else(|e| panic!("{} accepts an initial value but refused its own: {e}", m.name));
        f.check_shape(x.nrows(), x.ncols()).unwrap();
    } else {
        assert!(matches!(r, Err(MethodError::Input { .. })), "{}: an initial value must be refused", m.name);
    }
}

/// `contract::<method>`: [`fit_contract`] for each registered method, named by its registry name
/// with `-` written `_`, and a test that the list is the registry.
macro_rules! fit_contract_tests {
    ($($test:ident),* $(,)?) => {
        mod contract {
            $(
                #[test]
                fn $test() {
                    super::fit_contract(&stringify!($test).replace('_', "-"));
                }
            )*

            #[test]
            fn every_registered_method_has_a_fit_contract_test() {
                let listed = [$(stringify!($test).replace('_', "-")),*];
                for m in structdr_methods::registry() {
                    assert!(
                        listed.iter().any(|l| l == m.name),
                        "{} has no fit contract test: add `{},` to fit_contract_tests! in crates/methods/tests/conformance.rs",
                        m.name,
                        m.name.replace('-', "_")
                    );
                }
                assert_eq!(listed.len(), structdr_methods::registry().len(), "fit_contract_tests! lists a method that is not registered");
            }
        }
    };
}

fit_contract_tests! {
    identity, pca, rproj, kpca, le, lle, spl, drtree, ddrtree, fsl, ls, spec, mcfs, ndfs, rufs, spfs,
    llcfs, fsasl, sogfs, mpme, esl, rpg_tree, rpg_l1, rpg_landmark, polyline, scms, tsne, meu, smce,
    gplvm, mvu, mvu_ineq, mvu2, landmark_mvu, mvu_drtoolbox, fastmvu,
}

/// Exactly these entries are inductive (a transform for new samples).
#[test]
fn the_inductive_methods_are_identity_pca_rproj_and_kpca() {
    let inductive: Vec<&str> = registry().iter().filter(|m| m.inductive).map(|m| m.name).collect();
    assert_eq!(inductive, vec!["identity", "pca", "rproj", "kpca"]);
}
