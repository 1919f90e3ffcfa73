//! `structdr._core`: the extension module behind the Python package `structdr` (`python/`).
//!
//! A thin layer: the registry's schemas as JSON (the Python side generates one scikit-learn
//! estimator per registered method from it, so a method added in Rust appears in Python with no
//! Python edit), one fit function over every method, the out-of-sample maps as model JSON (the
//! same file `structdr embed --save-model` writes, so fitted estimators pickle), the evaluation
//! metrics, the spec runner and the verified data sets.
//!
//! Safety and speed: every input array is copied into memory Rust owns **before** the GIL is
//! released (a released GIL does not stop another Python thread from mutating a NumPy buffer),
//! and every fit, transform, metric and run releases the GIL, so Python threads fit in parallel.
//! A fit builds the method and calls it exactly as `structdr embed` does (`instantiate`, then
//! `fit_with` on `FitInput::new(x, seed)` with the labels when given), so a seed gives the
//! same numbers bit for bit.

use ndarray::{Array1, Array2};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use structdr_methods::api::params::Bound as RangeEnd;
use structdr_methods::api::{FitInput, MethodError, Output, OutputKind, ParamKind, Stage, TransformState};
use structdr_methods::{Fitted, MethodInfo, ParamMap, ParamValue};

fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn runtime_error(e: impl std::fmt::Display) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

fn value_json(v: &ParamValue) -> Value {
    match v {
        ParamValue::Bool(b) => json!(b),
        ParamValue::Int(i) => json!(i),
        ParamValue::Float(x) if x.is_finite() => json!(x),
        ParamValue::Float(x) => json!({ "float": if x.is_nan() { "nan" } else if *x > 0.0 { "inf" } else { "-inf" } }),
        ParamValue::Str(s) => json!(s),
    }
}

fn end_json(b: &RangeEnd) -> Value {
    let v = if b.value.is_finite() { json!(b.value) } else { json!(if b.value > 0.0 { "inf" } else { "-inf" }) };
    json!({ "value": v, "closed": b.closed })
}

fn kind_json(k: &ParamKind) -> Value {
    match k {
        ParamKind::Int { min, max } => json!({ "type": "int", "min": min, "max": if *max == i64::MAX { Value::Null } else { json!(max) } }),
        ParamKind::Float { min, max } => json!({ "type": "float", "min": end_json(min), "max": end_json(max) }),
        ParamKind::Choice(c) => json!({ "type": "choice", "choices": c }),
        ParamKind::Bool => json!({ "type": "bool" }),
        ParamKind::Auto(inner) => json!({ "type": "auto", "inner": kind_json(inner) }),
        ParamKind::Dim => json!({ "type": "dim" }),
    }
}

fn output_name(o: OutputKind) -> &'static str {
    match o {
        OutputKind::Embedding => "embedding",
        OutputKind::FeatureScores => "feature_scores",
        OutputKind::PrincipalGraph => "principal_graph",
    }
}

/// How new points map onto a principal graph: the RPG family's own soft assignment (eq. 18 at
/// the fit's sigma: `P C`, the `embedding_` of the fitted points), the nearest point of the graph
/// for the other graphs whose centres live in the input space, none for DRTree / DDRTree (centres
/// in a latent space).
fn graph_map(m: &MethodInfo) -> Value {
    if m.output != OutputKind::PrincipalGraph || m.params.iter().any(|p| p.name == "dim") {
        return Value::Null;
    }
    if m.name.starts_with("rpg-") {
        json!("soft_assignment")
    } else {
        json!("nearest_point")
    }
}

fn info_json(m: &MethodInfo) -> Value {
    let params: Vec<Value> = m
        .params
        .iter()
        .map(|p| {
            json!({
                "name": p.name,
                "kind": p.kind.to_string(),
                "type": kind_json(&p.kind),
                "default": value_json(&p.default),
                "doc": p.doc,
                "stage": match p.stage { Stage::Fit => "fit", Stage::Evaluation => "evaluation" },
            })
        })
        .collect();
    json!({
        "name": m.name,
        "summary": m.summary,
        "reference": m.reference,
        "version": m.version,
        "output": output_name(m.output),
        "needs_labels": m.needs_labels,
        "inductive": m.inductive,
        "randomised": m.randomised,
        "graph_map": graph_map(m),
        "params": params,
    })
}

/// Every registered method with its schema, as a JSON array (the order of `structdr methods`).
#[pyfunction]
fn registry_json() -> String {
    Value::Array(structdr_methods::registry().iter().map(info_json).collect()).to_string()
}

/// The version string of the build (`structdr --version`).
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// A Python parameter value as the registry's value: bool, int, float or str (NumPy scalars
/// included); anything else is a `TypeError`-like `ValueError` naming the parameter.
fn param_value(name: &str, v: &Bound<'_, PyAny>) -> PyResult<ParamValue> {
    if v.is_instance_of::<PyBool>() {
        return Ok(ParamValue::Bool(v.extract()?));
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(ParamValue::Int(v.extract()?));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(ParamValue::Float(v.extract()?));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(ParamValue::Str(v.extract()?));
    }
    // NumPy scalars: integers expose __index__, floating values __float__
    if v.hasattr("dtype")? {
        let kind: String = v.getattr("dtype")?.getattr("kind")?.extract()?;
        match kind.as_str() {
            "b" => return Ok(ParamValue::Bool(v.call_method0("__bool__")?.extract()?)),
            "i" | "u" => return Ok(ParamValue::Int(v.call_method0("__index__")?.extract()?)),
            "f" => return Ok(ParamValue::Float(v.call_method0("__float__")?.extract()?)),
            _ => {}
        }
    }
    Err(value_error(format!("parameter '{name}': {} is not a bool, int, float or str", v.repr()?)))
}

fn param_map(params: &Bound<'_, PyDict>) -> PyResult<ParamMap> {
    let mut out = ParamMap::new();
    for (k, v) in params.iter() {
        let name: String = k.extract()?;
        if v.is_none() {
            continue;
        }
        out.insert(name.clone(), param_value(&name, &v)?);
    }
    Ok(out)
}

/// A finished fit: the output, trace and notes of [`Fitted`], the resolved parameters and seed.
#[pyclass(module = "structdr._core", frozen)]
struct Fit {
    method: &'static MethodInfo,
    resolved: ParamMap,
    seed: u64,
    fitted: Fitted,
}

/// Edges `(i, j, weight)` as an (m, 3) array.
fn edge_array(edges: &[(usize, usize, f64)]) -> Array2<f64> {
    Array2::from_shape_fn((edges.len(), 3), |(r, c)| match c {
        0 => edges[r].0 as f64,
        1 => edges[r].1 as f64,
        _ => edges[r].2,
    })
}

fn matrix<'py>(py: Python<'py>, a: &Array2<f64>) -> Bound<'py, PyArray2<f64>> {
    a.clone().into_pyarray(py)
}

#[pymethods]
impl Fit {
    /// The registry name of the method.
    #[getter]
    fn method(&self) -> &'static str {
        self.method.name
    }
    /// `embedding`, `feature_scores` or `principal_graph`.
    #[getter]
    fn kind(&self) -> &'static str {
        output_name(self.fitted.kind())
    }
    /// The resolved parameters as JSON (every parameter, defaults filled in).
    #[getter]
    fn params_json(&self) -> String {
        Value::Object(self.resolved.iter().map(|(k, v)| (k.clone(), value_json(v))).collect()).to_string()
    }
    /// The embedding (N x d), or a principal graph's projections; `None` for feature scores.
    #[getter]
    fn embedding<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray2<f64>>> {
        self.fitted.embedding().map(|y| matrix(py, y))
    }
    /// A principal graph's centres (K x D or K x d), or `None`.
    #[getter]
    fn centres<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray2<f64>>> {
        self.fitted.centres().map(|c| matrix(py, c))
    }
    /// A principal graph's edges between centres as an (m, 3) array `(i, j, weight)`, or `None`.
    #[getter]
    fn centre_edges<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray2<f64>>> {
        match &self.fitted.output {
            Output::PrincipalGraph(g) => Some(edge_array(&g.edges).into_pyarray(py)),
            _ => None,
        }
    }
    /// The learned graph over the samples (`graph` of the fit: ESL, MPME, FSL, ...) as an (m, 3)
    /// array `(i, j, weight)`, `i < j`, or `None`.
    #[getter]
    fn graph<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray2<f64>>> {
        self.fitted.graph.as_ref().map(|g| edge_array(&g.edges).into_pyarray(py))
    }
    /// Component index of every sample, when the method returns components.
    #[getter]
    fn components<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray1<i64>>> {
        self.fitted.components.as_ref().map(|c| c.iter().map(|&v| v as i64).collect::<Array1<i64>>().into_pyarray(py))
    }
    /// Feature weights (one per input feature), or `None`.
    #[getter]
    fn scores<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray1<f64>>> {
        self.fitted.feature_scores().map(|s| s.weights.clone().into_pyarray(py))
    }
    /// Features from most to least important, or `None`.
    #[getter]
    fn ranking<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray1<i64>>> {
        self.fitted.feature_scores().map(|s| s.ranking.iter().map(|&v| v as i64).collect::<Array1<i64>>().into_pyarray(py))
    }
    /// Iterations run.
    #[getter]
    fn n_iter(&self) -> usize {
        self.fitted.trace.iterations
    }
    /// Why the fit stopped, as `structdr embed` prints it.
    #[getter]
    fn stop_reason(&self) -> String {
        self.fitted.trace.termination.clone()
    }
    /// Whether the fit reached its stated tolerance (closed-form fits count as converged).
    #[getter]
    fn converged(&self) -> bool {
        self.fitted.trace.converged()
    }
    /// The objective (or the method's convergence measure) per iteration.
    #[getter]
    fn history(&self) -> Vec<f64> {
        self.fitted.trace.history.clone()
    }
    /// The final KKT / optimality residual, where the method reports one.
    #[getter]
    fn kkt_residual(&self) -> Option<f64> {
        self.fitted.trace.kkt_residual
    }
    /// The fit's notes (what `structdr embed` prints after `note:`).
    #[getter]
    fn notes(&self) -> Vec<String> {
        self.fitted.notes.clone()
    }
    /// The out-of-sample map as model JSON (the format of `structdr embed --save-model`), or
    /// `None` for a method (or fit) without one.
    fn model_json(&self) -> PyResult<Option<String>> {
        let Some(t) = &self.fitted.transform else { return Ok(None) };
        let state = t.state();
        let model = json!({
            "format": "structdr-model",
            "format_version": 1,
            "method": self.method.name,
            "method_version": self.method.version,
            "params": Value::Object(self.resolved.iter().map(|(k, v)| (k.clone(), value_json(v))).collect()),
            "seed": self.seed,
            "structdr": env!("CARGO_PKG_VERSION"),
            "n_features": state.n_features(),
            "n_components": self.fitted.embedding().map_or(0, |y| y.ncols()),
            "transform": serde_json::to_value(&state).map_err(runtime_error)?,
        });
        Ok(Some(model.to_string()))
    }
}

/// Copies a NumPy matrix into an owned, row-major array (while the GIL is held).
fn owned(x: &PyReadonlyArray2<'_, f64>) -> Array2<f64> {
    x.as_array().as_standard_layout().into_owned()
}

/// Fits `method` with `params` (a dict; `None` values are left to their defaults) on `x`
/// (float64, samples in rows), with optional integer labels `y` and `seed`. `dim = "energy"` is
/// resolved on `x` (95% PCA energy), as `structdr embed` does. Errors: an unknown method or
/// parameter, or bad input (NaN, empty, too few samples) raise `ValueError` with the message the
/// command line prints; a numerical failure raises `RuntimeError`.
#[pyfunction]
#[pyo3(signature = (method, params, x, y=None, seed=0))]
fn fit(
    py: Python<'_>,
    method: &str,
    params: &Bound<'_, PyDict>,
    x: PyReadonlyArray2<'_, f64>,
    y: Option<PyReadonlyArray1<'_, i64>>,
    seed: u64,
) -> PyResult<Fit> {
    let info = structdr_methods::lookup(method).map_err(value_error)?;
    let mut given = param_map(params)?;
    let x = owned(&x);
    let labels: Option<Vec<i64>> = y.map(|l| l.as_array().to_vec());
    if let Some(l) = &labels {
        if l.len() != x.nrows() {
            return Err(value_error(format!("length mismatch: {} labels for {} samples", l.len(), x.nrows())));
        }
    }
    py.allow_threads(move || {
        if given.get("dim") == Some(&ParamValue::Str(structdr_methods::api::DIM_ENERGY.into())) {
            let d = structdr::data::energy_dim(x.view(), &structdr::spec::DimRule::default()).map_err(value_error)?;
            given.insert("dim".into(), ParamValue::Int(d as i64));
        }
        let (resolved, m) = info.instantiate(&given).map_err(value_error)?;
        let mut input = FitInput::new(x.view(), seed);
        if let Some(l) = &labels {
            input = input.with_labels(l);
        }
        let fitted = with_fit_threads(|| m.fit_with(&input)).map_err(|e| match e {
            MethodError::Param(_) | MethodError::Input { .. } | MethodError::Degenerate { .. } | MethodError::Disconnected { .. } => value_error(&e),
            _ => runtime_error(&e),
        })?;
        Ok(Fit { method: info, resolved, seed, fitted })
    })
}

/// Applies a model (JSON of [`Fit::model_json`] or of `structdr embed --save-model`) to `x`.
#[pyfunction]
fn transform(py: Python<'_>, model_json: &str, x: PyReadonlyArray2<'_, f64>) -> PyResult<Py<PyArray2<f64>>> {
    let x = owned(&x);
    let model: Value = serde_json::from_str(model_json).map_err(|e| value_error(format!("model: not JSON: {e}")))?;
    if model.get("format").and_then(Value::as_str) != Some("structdr-model") {
        return Err(value_error("model: not a structdr model (no \"format\": \"structdr-model\")"));
    }
    let name = model.get("method").and_then(Value::as_str).ok_or_else(|| value_error("model: no method"))?;
    let info = structdr_methods::lookup(name).map_err(value_error)?;
    let version = model.get("method_version").and_then(Value::as_u64);
    if version != Some(info.version as u64) {
        return Err(value_error(format!(
            "model: fitted by {name} version {}, but this build has version {} (its numerics changed): refit",
            version.map_or("?".to_string(), |v| v.to_string()),
            info.version
        )));
    }
    let state: TransformState =
        serde_json::from_value(model.get("transform").cloned().unwrap_or(Value::Null)).map_err(|e| value_error(format!("model: malformed transform: {e}")))?;
    let out = py.allow_threads(move || {
        let map = structdr_methods::rebuild_transform(state, info.name).map_err(value_error)?;
        map.transform(x.view()).map_err(value_error)
    })?;
    Ok(out.into_pyarray(py).unbind())
}

/// The RPG soft projection `P C` of the rows of `x` onto `centres` at bandwidth `sigma` (eq. 18,
/// entries more than 40 nats below a row's largest dropped): the computation of the fit's own
/// final projection, so the fitted points map to their `embedding_` bit for bit.
#[pyfunction]
fn soft_project(py: Python<'_>, x: PyReadonlyArray2<'_, f64>, centres: PyReadonlyArray2<'_, f64>, sigma: f64) -> PyResult<Py<PyArray2<f64>>> {
    let (x, c) = (owned(&x), owned(&centres));
    if x.ncols() != c.ncols() {
        return Err(value_error(format!("{} features, the centres have {}", x.ncols(), c.ncols())));
    }
    if !(sigma > 0.0 && sigma.is_finite()) {
        return Err(value_error(format!("sigma = {sigma} must be finite and > 0")));
    }
    let p = py.allow_threads(move || structdr_methods::principal::rpg::soft_assign(x.view(), c.view(), sigma, false, true).projection.expect("requested"));
    Ok(p.into_pyarray(py).unbind())
}

/// Exact 1-NN leave-one-out accuracy of the embedding `y` against `labels` (ties: the smallest
/// index, as the tables).
#[pyfunction]
fn loocv_1nn_accuracy(py: Python<'_>, y: PyReadonlyArray2<'_, f64>, labels: PyReadonlyArray1<'_, i64>) -> PyResult<f64> {
    let (y, l) = (owned(&y), labels.as_array().to_vec());
    py.allow_threads(move || structdr_eval::loocv_1nn_accuracy(y.view(), &l).map_err(value_error))
}

/// The papers' k-means protocol on `y`: `restarts` seeded k-means runs with `k` clusters; returns
/// a dict with the ACC and NMI of the run of best objective and their means and standard
/// deviations over the runs (the keys of `structdr eval kmeans`).
#[pyfunction]
#[pyo3(signature = (y, labels, k, restarts=20, seed=0))]
fn kmeans_acc_nmi(py: Python<'_>, y: PyReadonlyArray2<'_, f64>, labels: PyReadonlyArray1<'_, i64>, k: usize, restarts: usize, seed: u64) -> PyResult<String> {
    let (y, l) = (owned(&y), labels.as_array().to_vec());
    let r = py.allow_threads(move || structdr_eval::kmeans_protocol(y.view(), &l, k, restarts, seed).map_err(value_error))?;
    Ok(json!({
        "acc_best_sse": r.acc_best_sse, "nmi_best_sse": r.nmi_best_sse,
        "acc_mean": r.acc_mean, "acc_std": r.acc_std, "nmi_mean": r.nmi_mean, "nmi_std": r.nmi_std,
        "k": k, "restarts": restarts, "seed": seed,
    })
    .to_string())
}

/// Trustworthiness and continuity of the embedding `y` of `x` with `k` neighbours (Venna &
/// Kaski), as a pair.
#[pyfunction]
fn neighbourhood(py: Python<'_>, x: PyReadonlyArray2<'_, f64>, y: PyReadonlyArray2<'_, f64>, k: usize) -> PyResult<(f64, f64)> {
    let (x, y) = (owned(&x), owned(&y));
    let s = py.allow_threads(move || structdr_eval::neighbourhood_preservation(x.view(), y.view(), k).map_err(value_error))?;
    Ok((s.trustworthiness, s.continuity))
}

/// Loads a registry data set through the verified download and the mirror (`STRUCTDR_MIRROR`,
/// `STRUCTDR_DATA` as on the command line, or the arguments); returns `(X, y or None)`.
#[pyfunction]
#[pyo3(signature = (name, mirror=None, data_dir=None))]
fn load_dataset(py: Python<'_>, name: &str, mirror: Option<String>, data_dir: Option<String>) -> PyResult<(Py<PyArray2<f64>>, Option<Py<PyArray1<i64>>>)> {
    let mut opts = structdr_datasets::download::FetchOptions::from_env();
    if let Some(m) = mirror {
        opts.mirror = Some(structdr_datasets::download::Mirror::parse(&m));
    }
    if let Some(d) = data_dir {
        opts.cache_dir = d.into();
    }
    let name = name.to_string();
    let ds = py.allow_threads(move || structdr_datasets::load::load(&name, &opts).map_err(value_error))?;
    let y = ds.labels.map(|l| Array1::from(l).into_pyarray(py).unbind());
    Ok((ds.x.into_pyarray(py).unbind(), y))
}

/// Runs a spec as `structdr run` does (same store, cache and figures) and returns every cell's
/// record as a JSON array (cells not computed are left out). `force_before` is `--force-before`:
/// records written before that time (seconds since the Unix epoch) are recomputed.
#[pyfunction]
#[pyo3(signature = (spec, results="results".to_string(), force=false, quiet=true, datasets=Vec::new(), methods=Vec::new(), force_before=None))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    spec: String,
    results: String,
    force: bool,
    quiet: bool,
    datasets: Vec<String>,
    methods: Vec<String>,
    force_before: Option<u64>,
) -> PyResult<String> {
    use structdr::exec::Recompute;
    let recompute = match (force, force_before) {
        (true, Some(_)) => {
            return Err(PyValueError::new_err(
                "force and force_before exclude each other: force recomputes every cell, force_before those written before its time",
            ))
        }
        (true, None) => Recompute::All,
        (false, Some(t)) => Recompute::WrittenBefore(t),
        (false, None) => Recompute::Missing,
    };
    py.allow_threads(move || {
        let plan = structdr::spec::load(std::path::Path::new(&spec)).map_err(value_error)?;
        let opts =
            structdr::exec::RunOptions { recompute, quiet, only_datasets: datasets, only_methods: methods, ..structdr::exec::RunOptions::quiet(results) };
        let out = structdr::run_spec(&plan, &opts).map_err(runtime_error)?;
        let records: Vec<Value> = out.results.iter().filter_map(|(_, r)| r.as_ref()).map(|r| serde_json::to_value(r).unwrap_or(Value::Null)).collect();
        Ok(Value::Array(records).to_string())
    })
}

/// The BLAS threads of every fit (1 to 1024): 1 unless [`set_blas_threads`] changed
/// it, the layout of `structdr run` and of `structdr embed` without `--blas-threads`, so that a seed
/// gives the command line's fit bit for bit. Held only while a fit runs
/// ([`structdr_linalg::blas::hold_threads`]): between fits the library keeps the process's own
/// count, which NumPy also uses where it links the same OpenBLAS (conda, distributions).
static FIT_BLAS_THREADS: AtomicUsize = AtomicUsize::new(1);

/// Runs the fit `f` with the configured BLAS threads held.
fn with_fit_threads<T>(f: impl FnOnce() -> T) -> T {
    let _held = structdr_linalg::blas::hold_threads(FIT_BLAS_THREADS.load(AtomicOrdering::Relaxed));
    f()
}

/// Sets the BLAS threads of the fits from the next one on (1 to 1024, as `--blas-threads`).
#[pyfunction]
fn set_blas_threads(n: usize) -> PyResult<()> {
    if !(1..=1024).contains(&n) {
        return Err(value_error(format!("blas threads: must be from 1 to 1024, got {n}")));
    }
    FIT_BLAS_THREADS.store(n, AtomicOrdering::Relaxed);
    Ok(())
}

/// The BLAS threads of the fits ([`set_blas_threads`]).
#[pyfunction]
fn blas_threads() -> usize {
    FIT_BLAS_THREADS.load(AtomicOrdering::Relaxed)
}

/// The OpenBLAS library's own thread count now (outside a fit: the process's setting, e.g.
/// `OPENBLAS_NUM_THREADS`); for the tests that check a fit leaves it as it was.
#[pyfunction]
fn library_blas_threads() -> usize {
    structdr_linalg::blas::num_threads()
}

/// The module `structdr._core`.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Fit>()?;
    m.add_function(wrap_pyfunction!(registry_json, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(fit, m)?)?;
    m.add_function(wrap_pyfunction!(transform, m)?)?;
    m.add_function(wrap_pyfunction!(soft_project, m)?)?;
    m.add_function(wrap_pyfunction!(loocv_1nn_accuracy, m)?)?;
    m.add_function(wrap_pyfunction!(kmeans_acc_nmi, m)?)?;
    m.add_function(wrap_pyfunction!(neighbourhood, m)?)?;
    m.add_function(wrap_pyfunction!(load_dataset, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(set_blas_threads, m)?)?;
    m.add_function(wrap_pyfunction!(blas_threads, m)?)?;
    m.add_function(wrap_pyfunction!(library_blas_threads, m)?)?;
    Ok(())
}
