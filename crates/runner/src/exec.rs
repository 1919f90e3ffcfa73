//! Running a plan: prepare the data sets, expand cells, skip cached ones, run the rest in
//! parallel (BLAS single-threaded inside rayon), and write one record per finished cell.

use crate::spec::{Plan, Protocol, DIM_ENERGY};
use crate::store::{code_version, CellKey, Record, Status, Store, SCHEMA};
use indicatif::{ProgressBar, ProgressStyle};
use ndarray::Array2;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use structdr_datasets::Dataset;
use structdr_methods::api::{FitInput, Output, Stage};
use structdr_methods::{Fitted, ParamMap, ParamValue};

/// Options of a run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Root of the results tree (default `results`).
    pub results_root: PathBuf,
    /// Recompute cells even when a record exists.
    pub force: bool,
    /// Recompute cells whose stored record failed.
    pub retry_failed: bool,
    /// Stop after this many newly computed cells (for tests of resumption; None = all).
    pub max_cells: Option<usize>,
    /// Compute only cells of these data sets (table label or registry name; empty = all).
    /// Cells of other data sets are still read from the store, so tables stay whole.
    pub only_datasets: Vec<String>,
    /// Compute only cells of these methods (table label or method name; empty = all).
    pub only_methods: Vec<String>,
    /// Hide the progress bar.
    pub quiet: bool,
}

/// A data set after preprocessing, with its energy dimension.
pub struct Prepared {
    /// Table label of the data set.
    pub label: String,
    pub paper: Option<String>,
    pub data: Dataset,
    /// d from the spec's energy rule on the preprocessed data.
    pub energy_dim: usize,
    /// What preprocessing did (shown in reports).
    pub steps: Vec<String>,
}

/// A grid cell ready to run or already stored.
#[derive(Clone)]
pub struct Cell {
    pub dataset: usize,
    pub method: usize,
    pub grid_index: usize,
    pub key: CellKey,
    pub hash: String,
}

/// Counts printed at the end of a run.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct RunSummary {
    pub total: usize,
    pub cached: usize,
    pub computed: usize,
    pub failed: usize,
    pub skipped: usize,
}

/// Loads and preprocesses every data set of the plan.
pub fn prepare(plan: &Plan, quiet: bool) -> anyhow::Result<Vec<Prepared>> {
    let fetch = structdr_datasets::download::FetchOptions::from_env();
    let mut out = Vec::new();
    for d in &plan.spec.datasets {
        let name = d.name.get_ref().as_str();
        let t0 = Instant::now();
        let raw = if structdr_datasets::synthetic::generators().iter().any(|g| g.name == name) {
            structdr_datasets::synthetic::generate(name, &d.params, d.seed.unwrap_or(plan.spec.seed)).map_err(|e| anyhow::anyhow!("data set '{name}': {e}"))?
        } else {
            structdr_datasets::load::load(name, &fetch).map_err(|e| anyhow::anyhow!("data set '{name}': {e}"))?
        };
        let (data, records) = structdr_datasets::preprocess::apply(&d.preprocess, raw).map_err(|e| anyhow::anyhow!("data set '{name}': preprocessing: {e}"))?;
        let pca = structdr_linalg::Pca::fit(data.x.view()).map_err(|e| anyhow::anyhow!("data set '{name}': PCA for the energy rule: {e}"))?;
        let energy_dim = pca.energy_dim(plan.spec.dim.threshold, plan.spec.dim.rule);
        let steps = records.iter().map(|r| serde_json::to_string(r).unwrap_or_default()).collect();
        if !quiet {
            eprintln!("  data {:<14} {:>6} x {:<5} classes {:>3}  d(energy {}{}) = {:<3} [{:.1} s]", d.label.as_deref().unwrap_or(name), data.x.nrows(), data.x.ncols(), data.n_classes(), rule_symbol(plan), plan.spec.dim.threshold, energy_dim, t0.elapsed().as_secs_f64());
        }
        out.push(Prepared { label: d.label.clone().unwrap_or_else(|| name.to_string()), paper: d.paper.clone(), data, energy_dim, steps });
    }
    Ok(out)
}

fn rule_symbol(plan: &Plan) -> &'static str {
    match plan.spec.dim.rule {
        structdr_linalg::EnergyRule::Ge => ">=",
        structdr_linalg::EnergyRule::Gt => ">",
    }
}

/// Expands every (data set, method, grid point) into a cell with its content key.
pub fn cells(plan: &Plan, data: &[Prepared]) -> Vec<Cell> {
    let mut out = Vec::new();
    for (di, p) in data.iter().enumerate() {
        for (mi, m) in plan.methods.iter().enumerate() {
            for (gi, params) in m.cells.iter().enumerate() {
                let key = cell_key(plan, p, &m.name, m.version, params);
                let hash = key.hash();
                out.push(Cell { dataset: di, method: mi, grid_index: gi, key, hash });
            }
        }
    }
    out
}

/// The content key of `method` at `version` with `params` (dim possibly "energy") on a prepared
/// data set.
pub fn cell_key(plan: &Plan, p: &Prepared, method: &str, version: u32, params: &ParamMap) -> CellKey {
    let mut params = params.clone();
    let dim_source = if params.get("dim") == Some(&ParamValue::Str(DIM_ENERGY.into())) {
        params.insert("dim".into(), ParamValue::Int(p.energy_dim as i64));
        format!("energy{}{}", rule_symbol(plan), plan.spec.dim.threshold)
    } else {
        "fixed".into()
    };
    let (protocols, restarts) = match &plan.spec.evaluation {
        Some(ev) => (ev.protocols.iter().map(|p| format!("{p:?}").to_lowercase()).collect(), ev.restarts),
        None => (vec![], 0),
    };
    CellKey {
        dataset: p.data.name.clone(),
        data_checksum: p.data.checksum.clone(),
        method: method.to_string(),
        params,
        dim_source,
        protocols,
        kmeans_restarts: restarts,
        seed: plan.spec.seed,
        schema: SCHEMA,
        method_version: version,
    }
}

/// The seed a cell's method and k-means use: derived from the cell key (without the method
/// version, [`CellKey::seed_hash`]), so adding a cell never changes another cell's result and a
/// version bump changes no seed.
pub fn cell_seed(key: &CellKey) -> u64 {
    let h = key.seed_hash();
    u64::from_str_radix(&h[..16], 16).expect("hex")
}

/// Names of `method`'s evaluation-stage parameters (empty for an unknown method).
pub fn evaluation_stage_params(method: &str) -> Vec<&'static str> {
    structdr_methods::lookup(method).map(|m| m.params.iter().filter(|p| p.stage == Stage::Evaluation).map(|p| p.name).collect()).unwrap_or_default()
}

/// The key under which a cell's fit is shared: the cell key without the method's
/// evaluation-stage parameters (cells that differ only in those evaluate one fit).
pub fn fit_key(key: &CellKey) -> CellKey {
    let mut k = key.clone();
    for p in evaluation_stage_params(&key.method) {
        k.params.remove(p);
    }
    k
}

/// Fits one method on one data set (no evaluation). Used by cells and figures. The seed derives
/// from [`fit_key`], so every cell sharing the fit sees the same one (for methods without
/// evaluation-stage parameters it is [`cell_seed`] of the cell).
pub fn fit_cell(key: &CellKey, data: &Dataset) -> Result<Fitted, String> {
    let info = structdr_methods::lookup(&key.method).map_err(|e| e.to_string())?;
    let (_, method) = info.instantiate(&key.params).map_err(|e| e.to_string())?;
    let seed = cell_seed(&fit_key(key));
    let input = FitInput::new(data.x.view(), seed);
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| method.fit_with(&input))) {
        Ok(r) => {
            let f = r.map_err(|e| e.to_string())?;
            f.check_shape(data.x.nrows(), data.x.ncols()).map_err(|e| format!("{}: {e}", key.method))?;
            Ok(f)
        }
        Err(p) => Err(format!("method panicked: {}", panic_message(&p))),
    }
}

/// The coordinates a cell's protocols score, by the output's kind: an embedding as it is, a
/// principal graph's projections, and for feature scores the data restricted to the cell's
/// `n_selected` top-ranked features (0 = every feature with a positive weight).
pub fn scored_coordinates<'a>(fitted: &'a Fitted, key: &CellKey, data: &Dataset) -> Result<std::borrow::Cow<'a, Array2<f64>>, String> {
    match &fitted.output {
        Output::FeatureScores(s) => {
            let m = match key.params.get("n_selected") {
                Some(ParamValue::Int(m)) if *m > 0 => *m as usize,
                _ => s.weights.iter().filter(|&&w| w > 0.0).count(),
            };
            s.select(data.x.view(), m).map(std::borrow::Cow::Owned).map_err(|e| e.to_string())
        }
        _ => fitted.embedding().map(std::borrow::Cow::Borrowed).ok_or_else(|| "the output has no coordinates".to_string()),
    }
}

fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_else(|| "unknown panic".into())
}

/// Evaluates an embedding under the spec's protocols.
pub fn evaluate(embedding: &Array2<f64>, labels: &[i64], protocols: &[Protocol], restarts: usize, seed: u64) -> Result<BTreeMap<String, f64>, String> {
    let mut metrics = BTreeMap::new();
    for p in protocols {
        match p {
            Protocol::Loocv => {
                let acc = structdr_eval::loocv_1nn_accuracy(embedding.view(), labels).map_err(|e| e.to_string())?;
                metrics.insert("loocv_1nn_accuracy".into(), acc);
            }
            Protocol::Kmeans => {
                let k = structdr_eval::n_classes(labels);
                let r = structdr_eval::kmeans_protocol(embedding.view(), labels, k, restarts, seed).map_err(|e| e.to_string())?;
                for (name, v) in [("acc_mean", r.acc_mean), ("acc_std", r.acc_std), ("nmi_mean", r.nmi_mean), ("nmi_std", r.nmi_std), ("acc_best_sse", r.acc_best_sse), ("nmi_best_sse", r.nmi_best_sse)] {
                    metrics.insert(name.into(), v);
                }
            }
        }
    }
    Ok(metrics)
}

/// Evaluates one cell on a shared fit (`fit_seconds` is the fit's time, shared by its cells).
fn evaluate_cell(plan: &Plan, cell: &Cell, data: &Prepared, fitted: &Result<Fitted, String>, fit_seconds: f64, threads: &str) -> Record {
    let dim = match cell.key.params.get("dim") {
        Some(ParamValue::Int(d)) => *d as usize,
        _ => data.data.x.ncols(),
    };
    let base = |status, error, metrics, eval_seconds, f: Option<&Fitted>, dim: usize| Record {
        key: cell.key.clone(),
        hash: cell.hash.clone(),
        status,
        error,
        metrics,
        dim,
        n_samples: data.data.x.nrows(),
        n_features: data.data.x.ncols(),
        fit_seconds,
        eval_seconds,
        iterations: f.map(|f| f.trace.iterations).unwrap_or(0),
        converged: f.map(|f| f.trace.converged).unwrap_or(false),
        notes: f.map(|f| f.notes.clone()).unwrap_or_default(),
        code_version: code_version(),
        threads: threads.to_string(),
        finished_at: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
    };
    let fitted = match fitted {
        Ok(f) => f,
        Err(e) => return base(Status::Failed, Some(e.clone()), BTreeMap::new(), 0.0, None, dim),
    };
    let y = match scored_coordinates(fitted, &cell.key, &data.data) {
        Ok(y) => y,
        Err(e) => return base(Status::Failed, Some(e), BTreeMap::new(), 0.0, Some(fitted), dim),
    };
    let t1 = Instant::now();
    let metrics = match (&data.data.labels, &plan.spec.evaluation) {
        (Some(labels), Some(ev)) => evaluate(&y, labels, &ev.protocols, ev.restarts, cell_seed(&cell.key)),
        _ => Ok(BTreeMap::new()),
    };
    let eval_seconds = t1.elapsed().as_secs_f64();
    match metrics {
        Ok(m) => base(Status::Ok, None, m, eval_seconds, Some(fitted), y.ncols()),
        Err(e) => base(Status::Failed, Some(format!("evaluation: {e}")), BTreeMap::new(), eval_seconds, Some(fitted), y.ncols()),
    }
}

/// Runs every missing cell; returns all records (cached and new) in cell order.
///
/// Errors when a record cannot be written or an unversioned one cannot be adopted (every cell
/// still runs; the error names each path that failed), so a run never reports cells it did not
/// keep.
pub fn run(plan: &Plan, data: &[Prepared], store: &Store, opts: &RunOptions) -> anyhow::Result<(Vec<(Cell, Option<Record>)>, RunSummary)> {
    let all = cells(plan, data);
    let mut summary = RunSummary { total: all.len(), ..Default::default() };
    let mut results: Vec<(Cell, Option<Record>)> = Vec::with_capacity(all.len());
    let mut todo = Vec::new();
    for (i, c) in all.into_iter().enumerate() {
        let cached = if opts.force {
            None
        } else {
            match store.get(&c.hash) {
                Some(r) => Some(r),
                None => store.adopt_unversioned(&c.key).map_err(|e| anyhow::anyhow!("cannot adopt the unversioned record of {} in {}: {e}", c.hash, store.dir().display()))?,
            }
        };
        let cached = cached.filter(|r| !(opts.retry_failed && r.status == Status::Failed));
        if cached.is_some() {
            summary.cached += 1;
        } else {
            todo.push(i);
        }
        results.push((c, cached));
    }
    let before = todo.len();
    todo.retain(|&i| {
        let c = &results[i].0;
        let wanted = |only: &[String], names: Vec<&str>| only.is_empty() || only.iter().any(|o| names.contains(&o.as_str()));
        wanted(&opts.only_datasets, plan.dataset_names(c.dataset)) && wanted(&opts.only_methods, plan.method_names(c.method))
    });
    summary.skipped = before - todo.len();
    if let Some(max) = opts.max_cells {
        summary.skipped += todo.len().saturating_sub(max);
        todo.truncate(max);
    }
    if !opts.quiet {
        eprintln!("cells: {} total, {} cached, {} to run{}", summary.total, summary.cached, todo.len(), if summary.skipped > 0 { format!(", {} left for later (--max-cells, --dataset, --method)", summary.skipped) } else { String::new() });
    }
    let bar = if opts.quiet { ProgressBar::hidden() } else { ProgressBar::new(todo.len() as u64) };
    // The bar draws only on a terminal; in a log (nohup, CI, nightly jobs) every finished cell gets
    // a line instead, so a long run shows where it is.
    let log_lines = !opts.quiet && !std::io::stderr().is_terminal();
    // The count is taken and the line printed under one lock: with an atomic counter two cells
    // finishing together could print `[2/2]` before `[1/2]`.
    let finished = Mutex::new(0usize);
    let write_errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let started = Instant::now();
    bar.set_style(ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} cells  eta {eta}  {msg}").expect("template").progress_chars("=> "));
    // The OpenBLAS kernel set is part of the provenance: timings and the last bits of a result
    // depend on it (an inherited OPENBLAS_CORETYPE=Haswell runs AVX2 kernels on an AVX-512 CPU).
    let threads = format!("rayon={} blas=1 openblas={}", rayon::current_num_threads(), structdr_linalg::blas::core_name());
    // BLAS single-threaded inside parallel cells (STACK.md P4); restored afterwards.
    let previous = structdr_linalg::blas::num_threads();
    structdr_linalg::blas::set_num_threads(1);
    let data_arc: Vec<Arc<&Prepared>> = data.iter().map(Arc::new).collect();
    // One fit per group of cells that differ only in evaluation-stage parameters (FSL's
    // n_selected): the fit runs once and every cell of the group evaluates it.
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for &i in &todo {
        let fk = fit_key(&results[i].0.key).hash();
        match groups.iter_mut().find(|g| g.0 == fk) {
            Some(g) => g.1.push(i),
            None => groups.push((fk, vec![i])),
        }
    }
    let new: Vec<(usize, Record)> = groups
        .par_iter()
        .flat_map_iter(|(_, members)| {
            let first = &results[members[0]].0;
            let t0 = Instant::now();
            let fitted = fit_cell(&first.key, &data_arc[first.dataset].data);
            let fit_seconds = t0.elapsed().as_secs_f64();
            let mut out = Vec::with_capacity(members.len());
            for &i in members {
                let cell = &results[i].0;
                let rec = evaluate_cell(plan, cell, &data_arc[cell.dataset], &fitted, fit_seconds, &threads);
                if let Err(e) = store.put(&rec) {
                    write_errors.lock().unwrap_or_else(|p| p.into_inner()).push(format!("{}: {e}", store.dir().join(format!("{}.json", rec.hash)).display()));
                }
                let what = format!("{} / {}", data[cell.dataset].label, plan.methods[cell.method].label);
                bar.set_message(format!("{what} {}", if rec.status == Status::Ok { "" } else { "(failed)" }));
                bar.inc(1);
                if log_lines {
                    let outcome = match rec.status {
                        Status::Ok => rec.metrics.iter().map(|(k, v)| format!("{k} {v:.4}")).collect::<Vec<_>>().join(", "),
                        Status::Failed => format!("failed: {}", rec.error.as_deref().unwrap_or("")),
                    };
                    let mut done = finished.lock().unwrap_or_else(|p| p.into_inner());
                    *done += 1;
                    eprintln!("[{}/{}] {what} {}: {outcome} (fit {:.1} s, elapsed {:.0} s)", *done, todo.len(), rec.params_string(), rec.fit_seconds, started.elapsed().as_secs_f64());
                }
                out.push((i, rec));
            }
            out
        })
        .collect();
    structdr_linalg::blas::set_num_threads(previous);
    bar.finish_and_clear();
    for (i, rec) in new {
        summary.computed += 1;
        results[i].1 = Some(rec);
    }
    summary.failed = results.iter().filter(|(_, r)| r.as_ref().is_some_and(|r| r.status == Status::Failed)).count();
    let write_errors = write_errors.into_inner().unwrap_or_else(|p| p.into_inner());
    if !write_errors.is_empty() {
        anyhow::bail!("{} of {} computed records could not be written:\n  {}", write_errors.len(), summary.computed, write_errors.join("\n  "));
    }
    Ok((results, summary))
}

