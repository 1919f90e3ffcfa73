//! Execution, the one place fits run: the missing grid cells of a run ([`run`]: claimed, one fit
//! per group of cells that differ only in evaluation-stage parameters, each evaluated by its
//! output kind, one record per finished cell) and the fit-only cells of its figures ([`fit_only`]:
//! from the committed panels, else the fit cache, else fitted and kept in both). Both run their fits in parallel with BLAS
//! single-threaded inside, report progress, and fit through [`fit_cell`].

use crate::cells::{Cell, Selection, Shard};
use crate::data::Prepared;
use crate::keys::{cell_seed, fit_key, CellKey};
use crate::outputs::scored_coordinates;
use crate::progress::Progress;
use crate::spec::{Evaluation, Plan, Protocol};
use crate::store::{code_version, ClaimOutcome, FitStore, Lookup, Record, Status, Store};
use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use structdr_datasets::Dataset;
use structdr_methods::api::FitInput;
use structdr_methods::{Fitted, ParamValue};

mod figure_fits;
pub use figure_fits::{fit_only, FitSources, Fits};

/// Which stored records a run recomputes instead of using.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Recompute {
    /// None: only missing cells are computed (the default).
    #[default]
    Missing,
    /// Every record (`--force`).
    All,
    /// The records written before this time (seconds since the Unix epoch,
    /// [`crate::store::Record::finished_at`]); those written since are used: a sitting that forces
    /// several specs sharing one store computes each shared cell once (`--force-before`).
    WrittenBefore(u64),
}

impl Recompute {
    /// Whether the stored record `r` is to be recomputed.
    pub fn replaces(self, r: &Record) -> bool {
        match self {
            Recompute::Missing => false,
            Recompute::All => true,
            Recompute::WrittenBefore(t) => r.finished_at < t,
        }
    }
}

/// Options of a run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Root of the results tree (default `results`).
    pub results_root: PathBuf,
    /// Which stored records are recomputed ([`Recompute`]); figures refit every panel unless
    /// [`Recompute::Missing`].
    pub recompute: Recompute,
    /// Recompute cells whose stored record failed.
    pub retry_failed: bool,
    /// Stop after this many newly computed cells (for tests of resumption; None = all).
    pub max_cells: Option<usize>,
    /// Compute only cells of these data sets (table label or registry name; empty = all).
    /// Cells of other data sets are still read from the store, so tables stay whole.
    pub only_datasets: Vec<String>,
    /// Compute only cells of these methods (table label or method name; empty = all).
    pub only_methods: Vec<String>,
    /// Compute only this part of the cells (`--shard i/n`).
    pub shard: Option<Shard>,
    /// Compute only the cells with these hashes (`structdr verify`; `None` = every cell).
    pub only_cells: Option<std::collections::BTreeSet<String>>,
    /// Hide the progress bar.
    pub quiet: bool,
    /// Do not wait for cells another live run on the store is computing: leave them to it (the
    /// tables say they are being computed by another run). By default a run waits for them.
    pub no_wait: bool,
}

impl RunOptions {
    /// Every cell of the spec into `results_root`, the cache used, no filter, no progress bar:
    /// what tests and tools want, with fields to change by struct update.
    pub fn quiet(results_root: impl Into<PathBuf>) -> RunOptions {
        RunOptions {
            results_root: results_root.into(),
            recompute: Recompute::Missing,
            retry_failed: false,
            max_cells: None,
            only_datasets: Vec::new(),
            only_methods: Vec::new(),
            shard: None,
            only_cells: None,
            quiet: true,
            no_wait: false,
        }
    }
}

/// What happened to a cell this run set out to compute.
enum Outcome {
    /// Computed by this run.
    Computed(Record),
    /// Finished by another run after this run's scan of the store: read back.
    Finished(Record),
    /// Being computed by another live run (its claim).
    Busy(String),
}

/// Counts printed at the end of a run.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct RunSummary {
    /// Cells in the plan.
    pub total: usize,
    /// Cells whose record was already in the store (and reused).
    pub cached: usize,
    /// Cells computed by this run.
    pub computed: usize,
    /// Cells whose record (cached or new) has status failed.
    pub failed: usize,
    /// Cells whose record (cached or new) has status degenerate.
    pub degenerate: usize,
    /// Missing cells left for a later run by `--max-cells`, `--dataset`, `--method` or `--shard`.
    pub skipped: usize,
    /// Missing cells of this run's selection another live run on the same store is computing,
    /// left to it (only under [`RunOptions::no_wait`]; otherwise the run waits for them).
    pub busy: usize,
    /// Cells without a record when this run scanned the store that another run finished before
    /// this one ended (found when the store was read again for the tables).
    pub finished_elsewhere: usize,
    /// Cells without a record at the end of the run that a live run holds a claim on: being
    /// computed by another run (shown so in the tables, not as "not computed yet").
    pub claimed: Vec<ClaimedCell>,
    /// Cells with a usable record when the run ended: the store's, read again for the tables.
    pub recorded: usize,
    /// Records refused by their checksum and not recomputed by this run (shown as not computed).
    pub refused: Vec<RefusedRecord>,
    /// Records used without a checksum to verify (written before records carried one).
    pub unverified: usize,
}

/// A cell another live run was computing when this run ended ([`RunSummary::claimed`]).
#[derive(Debug, Clone, serde::Serialize)]
pub struct ClaimedCell {
    /// Index of the cell's method in [`Plan::methods`].
    pub method: usize,
    /// Index of the cell's data set.
    pub dataset: usize,
    /// The cell's hash.
    pub hash: String,
    /// The claim, as written: `pid host started`.
    pub by: String,
}

/// A stored record refused by its checksum ([`crate::store::Lookup::Refused`]).
#[derive(Debug, Clone, serde::Serialize)]
pub struct RefusedRecord {
    /// Index of the cell's method in [`Plan::methods`].
    pub method: usize,
    /// Index of the cell's data set.
    pub dataset: usize,
    /// The record's hash (its file name).
    pub hash: String,
    /// The cell's parameters.
    pub params: String,
    /// Why it is refused.
    pub why: String,
}

/// Why a fit produced nothing to score.
#[derive(Debug, Clone)]
pub struct FitFailure {
    /// The error, in words.
    pub message: String,
    /// The method said the data or the fit are degenerate ([`structdr_methods::MethodError::Degenerate`]).
    pub degenerate: bool,
}

/// Fits one method on one data set (no evaluation): the fit of grid cells and fit-only cells
/// alike. The seed derives from [`fit_key`], so every cell sharing the fit sees the same one (for
/// methods without evaluation-stage parameters it is [`cell_seed`] of the cell).
pub fn fit_cell(key: &CellKey, data: &Dataset) -> Result<Fitted, String> {
    fit_cell_outcome(key, data).map_err(|f| f.message)
}

/// [`fit_cell`] telling degenerate fits from failed ones.
pub fn fit_cell_outcome(key: &CellKey, data: &Dataset) -> Result<Fitted, FitFailure> {
    let failed = |message: String| FitFailure { message, degenerate: false };
    if let Some(ext) = &key.external {
        let f = crate::external::fit(key, ext, data, cell_seed(&fit_key(key))).map_err(failed)?;
        f.check_shape(data.x.nrows(), data.x.ncols()).map_err(|e| failed(format!("{}: {e}", key.method)))?;
        return Ok(f);
    }
    let info = structdr_methods::lookup(&key.method).map_err(|e| failed(e.to_string()))?;
    let (_, method) = info.instantiate(&key.params).map_err(|e| failed(e.to_string()))?;
    let seed = cell_seed(&fit_key(key));
    let input = FitInput::new(data.x.view(), seed);
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| method.fit_with(&input))) {
        Ok(r) => {
            let f = r.map_err(|e| FitFailure { degenerate: matches!(e, structdr_methods::MethodError::Degenerate { .. }), message: e.to_string() })?;
            f.check_shape(data.x.nrows(), data.x.ncols()).map_err(|e| failed(format!("{}: {e}", key.method)))?;
            Ok(f)
        }
        Err(p) => Err(failed(format!("method panicked: {}", panic_message(&p)))),
    }
}

fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_else(|| "unknown panic".into())
}

/// Evaluates an embedding under `protocols`; `components` are the fit's (for `loocv_components`),
/// `data` the preprocessed samples the embedding was made from (for `neighbourhood`), `ev` the
/// spec's `[evaluation]` (k-means restarts, neighbourhood size). Without `labels`, the protocols
/// that need them ([`Protocol::needs_labels`]) are skipped: the caller says so in the record.
pub fn evaluate(
    embedding: &Array2<f64>,
    components: Option<&[usize]>,
    data: ArrayView2<f64>,
    labels: Option<&[i64]>,
    protocols: &[Protocol],
    ev: &Evaluation,
    seed: u64,
) -> Result<BTreeMap<String, f64>, String> {
    let restarts = ev.restarts;
    let mut metrics = BTreeMap::new();
    for p in protocols {
        let labels = match labels {
            Some(l) => l,
            None if p.needs_labels() => continue,
            None => &[],
        };
        match p {
            Protocol::Neighbourhood => {
                let s = structdr_eval::neighbourhood_preservation(data, embedding.view(), ev.neighbourhood_k).map_err(|e| e.to_string())?;
                metrics.insert("trustworthiness".into(), s.trustworthiness);
                metrics.insert("continuity".into(), s.continuity);
                metrics.insert("knn_preservation".into(), s.knn_preservation);
            }
            Protocol::Loocv => {
                let acc = structdr_eval::loocv_1nn_accuracy(embedding.view(), labels).map_err(|e| e.to_string())?;
                metrics.insert("loocv_1nn_accuracy".into(), acc);
            }
            Protocol::LoocvComponents => {
                let one = vec![0; labels.len()];
                let groups = components.unwrap_or(&one);
                let acc = structdr_eval::loocv_1nn_accuracy_within_groups(embedding.view(), labels, groups).map_err(|e| e.to_string())?;
                metrics.insert("loocv_1nn_accuracy_components".into(), acc);
            }
            Protocol::Kmeans => {
                let k = structdr_eval::n_classes(labels);
                let r = structdr_eval::kmeans_protocol(embedding.view(), labels, k, restarts, seed).map_err(|e| e.to_string())?;
                for (name, v) in [
                    ("acc_mean", r.acc_mean),
                    ("acc_std", r.acc_std),
                    ("nmi_mean", r.nmi_mean),
                    ("nmi_std", r.nmi_std),
                    ("acc_best_sse", r.acc_best_sse),
                    ("nmi_best_sse", r.nmi_best_sse),
                ] {
                    metrics.insert(name.into(), v);
                }
            }
        }
    }
    Ok(metrics)
}

/// Evaluates one cell on a shared fit (`fit_seconds` is the fit's time, shared by its cells).
fn evaluate_cell(plan: &Plan, cell: &Cell, data: &Prepared, fitted: &Result<Fitted, FitFailure>, fit_seconds: f64, threads: &str) -> Record {
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
        converged: f.map(|f| f.trace.converged()).unwrap_or(false),
        stop: f.map(|f| f.trace.stop.clone()),
        objective: f.and_then(|f| f.trace.history.last().copied()),
        kkt_residual: f.and_then(|f| f.trace.kkt_residual),
        notes: f.map(|f| f.notes.clone()).unwrap_or_default(),
        code_version: code_version(),
        threads: threads.to_string(),
        machine: Some(crate::store::machine()),
        finished_at: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        checksum: None,
    };
    let fitted = match fitted {
        Ok(f) => f,
        Err(e) => return base(if e.degenerate { Status::Degenerate } else { Status::Failed }, Some(e.message.clone()), BTreeMap::new(), 0.0, None, dim),
    };
    let y = match scored_coordinates(fitted, &cell.key.params, data.data.x.view()) {
        Ok(y) => y,
        Err(e) => return base(Status::Failed, Some(e), BTreeMap::new(), 0.0, Some(fitted), dim),
    };
    if y.nrows() >= 2 && y.iter().all(|v| v.is_finite()) && y.rows().into_iter().all(|r| r == y.row(0)) {
        let why = format!("{}: the output is one point repeated {} times (nothing to score)", cell.key.method, y.nrows());
        return base(Status::Degenerate, Some(why), BTreeMap::new(), 0.0, Some(fitted), y.ncols());
    }
    let t1 = Instant::now();
    let protocols = &plan.methods[cell.method].protocols;
    let metrics = match &plan.spec.evaluation {
        Some(ev) => evaluate(&y, fitted.components.as_deref(), data.data.x.view(), data.data.labels.as_deref(), protocols, ev, cell_seed(&cell.key)),
        None => Ok(BTreeMap::new()),
    };
    let eval_seconds = t1.elapsed().as_secs_f64();
    match metrics {
        Ok(m) => {
            let mut r = base(Status::Ok, None, m, eval_seconds, Some(fitted), y.ncols());
            let unscored: Vec<&str> = protocols.iter().filter(|p| data.data.labels.is_none() && p.needs_labels()).map(|p| p.name()).collect();
            if !unscored.is_empty() {
                r.notes.push(format!("not scored: {} (the data set has no labels)", unscored.join(", ")));
            }
            r
        }
        Err(e) => base(Status::Failed, Some(format!("evaluation: {e}")), BTreeMap::new(), eval_seconds, Some(fitted), y.ncols()),
    }
}

/// Runs every missing cell; returns all records (cached and new) in cell order.
///
/// Cells another live run on the store is computing ([`Store::claim`]) are waited for (unless
/// [`RunOptions::no_wait`]): waiting costs no more than computing them here would, and a cell
/// whose run dies meanwhile is claimed and computed by this one. Then the store is read again,
/// every cell of the plan, checksums verified ([`Store::read`]): the records returned (and the
/// tables made of them) are the store's when this run ends, so of two concurrent runs the one
/// that finishes last shows every cell the other computed. Cells still claimed by a live run then
/// (under `no_wait`, or outside this run's selection) are listed in [`RunSummary::claimed`].
///
/// Errors when a record cannot be written or an unversioned one cannot be adopted (every cell
/// still runs; the error names each path that failed), so a run never reports cells it did not
/// keep.
pub fn run(
    plan: &Plan,
    data: &[Prepared],
    store: &Store,
    fits: Option<&FitStore>,
    opts: &RunOptions,
) -> anyhow::Result<(Vec<(Cell, Option<Record>)>, RunSummary)> {
    // With --force, the records present at the scan are to be replaced: a stored record counts as
    // finished by another run only when it is not the one seen here (its write time and fit time
    // differ), so concurrent forced runs still share the work.
    let mut replaced: HashMap<String, (u64, u64)> = HashMap::new();
    let mut summary = RunSummary::default();
    let mut results: Vec<(Cell, Option<Record>)> = Vec::new();
    let mut missing = Vec::new();
    // Records refused by their checksum (cell index, why), and records without one (by hash).
    let mut refused: Vec<(usize, String)> = Vec::new();
    let mut unverified = std::collections::HashSet::new();
    // cells are made one at a time: a plan of many cells is never held twice
    for (i, c) in crate::cells::cells_iter(plan, data).enumerate() {
        let stored = if opts.recompute == Recompute::All {
            // not read through its checksum: it is replaced whatever it holds
            store.get(&c.hash)
        } else {
            match store.read(&c.hash) {
                Lookup::Found(r) => {
                    if r.checksum.is_none() && !opts.recompute.replaces(&r) {
                        unverified.insert(c.hash.clone());
                    }
                    Some(r)
                }
                Lookup::Refused { why, .. } => {
                    refused.push((i, why));
                    None
                }
                Lookup::Missing => store
                    .adopt_unversioned(&c.key)
                    .map_err(|e| anyhow::anyhow!("cannot adopt the unversioned record of {} in {}: {e}", c.hash, store.dir().display()))?,
            }
        };
        let cached = match stored {
            Some(r) if opts.recompute.replaces(&r) => {
                replaced.insert(c.hash.clone(), (r.finished_at, r.fit_seconds.to_bits()));
                None
            }
            other => other,
        };
        let cached = cached.filter(|r| !(opts.retry_failed && r.status == Status::Failed));
        if cached.is_some() {
            summary.cached += 1;
        } else {
            missing.push(i);
        }
        results.push((c, cached));
    }
    summary.total = results.len();
    let selection = Selection {
        only_datasets: opts.only_datasets.clone(),
        only_methods: opts.only_methods.clone(),
        shard: opts.shard,
        max_cells: opts.max_cells,
        only_cells: opts.only_cells.clone(),
    };
    let (todo, later) = selection.apply(plan, |i| &results[i].0, missing);
    summary.skipped = later.len();
    summary.unverified = unverified.len();
    // A refused record is never used: said always (not progress), and recomputed when selected.
    let mut said = std::collections::HashSet::new();
    for (i, why) in &refused {
        let c = &results[*i].0;
        if said.insert(c.hash.as_str()) {
            let what = format!("{} / {} {}", data[c.dataset].label, plan.methods[c.method].label, c.key.params_string());
            let now = if todo.contains(i) { "recomputing it" } else { "not used; shown as not computed until a run recomputes it" };
            eprintln!("warning: the record of {what} ({}.json) is refused: {why}; {now}", c.hash);
        }
    }
    if !opts.quiet {
        eprintln!(
            "cells: {} total, {} cached, {} to run{}",
            summary.total,
            summary.cached,
            todo.len(),
            if summary.skipped > 0 { format!(", {} left for later (--max-cells, --dataset, --method, --shard)", summary.skipped) } else { String::new() }
        );
        let threads = rayon::current_num_threads();
        if !todo.is_empty() {
            for line in crate::cost::estimate(store, todo.iter().map(|&i| &results[i].0)).note(threads) {
                eprintln!("{line}");
            }
        }
        if !later.is_empty() {
            // what the cells left for later would add, so a bounded sitting shows the whole bill
            let est = crate::cost::estimate(store, later.iter().map(|&i| &results[i].0));
            if est.cells > est.unknown {
                eprintln!(
                    "cost estimate of the {} cells left for later: about {} on {threads} thread{}{}",
                    est.cells,
                    crate::cost::human_seconds(est.wall_seconds(threads)),
                    if threads == 1 { "" } else { "s" },
                    if est.unknown > 0 { format!(" ({} of them without an estimate)", est.unknown) } else { String::new() }
                );
            }
        }
    }
    let pass = Pass {
        plan,
        data,
        store,
        fits,
        opts,
        replaced: &replaced,
        write_errors: Mutex::new(Vec::new()),
        // The OpenBLAS kernel set is part of the provenance: timings and the last bits of a result
        // depend on it (an inherited OPENBLAS_CORETYPE=Haswell runs AVX2 kernels on an AVX-512 CPU).
        threads: format!("rayon={} blas=1 openblas={}", rayon::current_num_threads(), structdr_linalg::blas::core_name()),
    };
    let mut pending = todo;
    let mut waited_since: Option<Instant> = None;
    loop {
        let new = pass.compute(&results, &pending);
        let mut busy: Vec<(usize, String)> = Vec::new();
        for (i, outcome) in new {
            match outcome {
                Outcome::Computed(rec) => {
                    summary.computed += 1;
                    results[i].1 = Some(rec);
                }
                Outcome::Finished(rec) => {
                    summary.cached += 1;
                    results[i].1 = Some(rec);
                }
                Outcome::Busy(by) => busy.push((i, by)),
            }
        }
        if busy.is_empty() || opts.no_wait {
            summary.busy = busy.len();
            if !busy.is_empty() && !opts.quiet {
                let mut by: Vec<&str> = busy.iter().map(|(_, b)| b.as_str()).collect();
                by.dedup();
                eprintln!("{} cells are being computed by another run on this store ({}); left to it (--no-wait)", busy.len(), by.join("; "));
            }
            break;
        }
        // Wait until every busy cell's claim is released (its record written) or its run is gone,
        // then go over them again: finished ones are read back, abandoned ones computed here.
        let t0 = *waited_since.get_or_insert_with(Instant::now);
        let mut last_said = None::<Instant>;
        while busy.iter().any(|(i, _)| store.live_claim(&results[*i].0.hash).is_some()) {
            if !opts.quiet && last_said.is_none_or(|t| t.elapsed() >= WAIT_NOTE_EVERY) {
                last_said = Some(Instant::now());
                let mut by: Vec<&str> = busy.iter().map(|(_, b)| b.as_str()).collect();
                by.dedup();
                eprintln!(
                    "waiting for {} cell(s) another run on this store is computing ({}), {:.0} s so far (--no-wait leaves them to it)",
                    busy.len(),
                    by.join("; "),
                    t0.elapsed().as_secs_f64()
                );
            }
            std::thread::sleep(WAIT_POLL);
        }
        pending = busy.into_iter().map(|(i, _)| i).collect();
    }
    let write_errors = pass.write_errors.into_inner().unwrap_or_else(|p| p.into_inner());
    if !write_errors.is_empty() {
        anyhow::bail!("{} of {} computed records could not be written:\n  {}", write_errors.len(), summary.computed, write_errors.join("\n  "));
    }
    reread(store, &mut results, &mut summary, &refused, &replaced);
    Ok((results, summary))
}

/// How often a run waiting for another run's cells looks at their claims.
const WAIT_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// How often a waiting run says what it waits for.
const WAIT_NOTE_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// The records of every cell as the store holds them now ([`Store::read`], checksums verified),
/// in place of what this run saw or computed: records another run finished since the scan are
/// counted in [`RunSummary::finished_elsewhere`], cells a live run still holds a claim on in
/// [`RunSummary::claimed`], records refused now in [`RunSummary::refused`]; the failed and
/// degenerate counts are the store's.
/// `replaced`: with `--force`, the records seen at the scan (write time, fit-time bits); a cell the
/// run left for later still holding that record was not finished by anyone.
fn reread(
    store: &Store,
    results: &mut [(Cell, Option<Record>)],
    summary: &mut RunSummary,
    refused_at_scan: &[(usize, String)],
    replaced: &HashMap<String, (u64, u64)>,
) {
    let mut refused: BTreeMap<usize, String> = refused_at_scan.iter().cloned().collect();
    let (mut found, mut skipped_found) = (0, 0);
    for (i, (c, r)) in results.iter_mut().enumerate() {
        let had = r.is_some();
        *r = match store.read(&c.hash) {
            Lookup::Found(rec) => {
                refused.remove(&i);
                Some(rec)
            }
            Lookup::Refused { why, .. } => {
                refused.insert(i, why);
                None
            }
            Lookup::Missing => None,
        };
        let seen_at_scan = r.as_ref().is_some_and(|rec| replaced.get(&c.hash) == Some(&(rec.finished_at, rec.fit_seconds.to_bits())));
        if r.is_some() && !had && !seen_at_scan {
            found += 1;
            // a cell this run left for later (filters, --max-cells) that another run finished
            skipped_found += usize::from(!refused_at_scan.iter().any(|(j, _)| *j == i));
        }
        if r.is_none() {
            if let Some(by) = store.live_claim(&c.hash) {
                summary.claimed.push(ClaimedCell { method: c.method, dataset: c.dataset, hash: c.hash.clone(), by });
            }
        }
    }
    summary.finished_elsewhere = found;
    summary.skipped = summary.skipped.saturating_sub(skipped_found);
    let mut listed = std::collections::HashSet::new();
    summary.refused = refused
        .iter()
        .filter(|(i, _)| listed.insert(results[**i].0.hash.clone()))
        .map(|(i, why)| {
            let c = &results[*i].0;
            RefusedRecord { method: c.method, dataset: c.dataset, hash: c.hash.clone(), params: c.key.params_string(), why: why.clone() }
        })
        .collect();
    summary.recorded = results.iter().filter(|(_, r)| r.is_some()).count();
    summary.failed = results.iter().filter(|(_, r)| r.as_ref().is_some_and(|r| r.status == Status::Failed)).count();
    summary.degenerate = results.iter().filter(|(_, r)| r.as_ref().is_some_and(|r| r.status == Status::Degenerate)).count();
}

/// What one pass over cells to compute needs: the run's context, and where write errors gather.
struct Pass<'a> {
    plan: &'a Plan,
    data: &'a [Prepared],
    store: &'a Store,
    fits: Option<&'a FitStore>,
    opts: &'a RunOptions,
    replaced: &'a HashMap<String, (u64, u64)>,
    write_errors: Mutex<Vec<String>>,
    threads: String,
}

impl Pass<'_> {
    /// Claims and computes the cells `todo` (indices into `results`), one fit per group of cells
    /// that differ only in evaluation-stage parameters, in parallel: what happened to each.
    fn compute(&self, results: &[(Cell, Option<Record>)], todo: &[usize]) -> Vec<(usize, Outcome)> {
        let (plan, data, store, opts) = (self.plan, self.data, self.store, self.opts);
        let progress = Arc::new(Progress::start(todo.len(), opts.quiet));
        // BLAS single-threaded while the cells run, the count from before restored after: the
        // thread layout of every parallel fit the runner makes (docs/blas.md B4), grid cells and
        // fit-only cells alike, so a figure's fit reproduces its grid cell's fit bit for bit
        let blas = structdr_linalg::blas::hold_threads(1);
        // One fit per group of cells that differ only in evaluation-stage parameters (FSL's
        // n_selected): the fit runs once and every cell of the group evaluates it.
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut group_of: HashMap<String, usize> = HashMap::new();
        for &i in todo {
            let g = *group_of.entry(fit_key(&results[i].0.key).hash()).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[g].push(i);
        }
        // Longest expected first, each thread taking the next group when it is free (the
        // bridge hands out one item at a time, in order): a long fit never starts last while
        // the other threads run out of work (crate::cost's module doc). Cells are independent,
        // so the order changes no result.
        let order = {
            let cells: Vec<Vec<&Cell>> = groups.iter().map(|g| g.iter().map(|&i| &results[i].0).collect()).collect();
            let samples: Vec<usize> = cells.iter().map(|g| data[g[0].dataset].data.x.nrows()).collect();
            crate::cost::longest_first(&crate::cost::group_seconds(store, &cells), &samples)
        };
        let new: Vec<(usize, Outcome)> = order
            .into_iter()
            .map(|g| &groups[g])
            .par_bridge()
            .flat_map_iter(|members| {
                let mut out: Vec<(usize, Outcome)> = Vec::with_capacity(members.len());
                // Claim the group's cells first: a cell another run finished since the scan is read
                // back, one another live run is computing is left to it (see `Store::claim`).
                let mut mine: Vec<usize> = Vec::new();
                let mut guards = Vec::new();
                for &i in members {
                    let cell = &results[i].0;
                    if mine.iter().any(|&j| results[j].0.hash == cell.hash) {
                        mine.push(i); // the same cell in a second row: evaluated once below
                        continue;
                    }
                    let finished = || store.get(&cell.hash).filter(|r| self.replaced.get(&cell.hash) != Some(&(r.finished_at, r.fit_seconds.to_bits())));
                    if let Some(r) = finished() {
                        out.push((i, Outcome::Finished(r)));
                        continue;
                    }
                    match store.claim(&cell.hash) {
                        Ok(ClaimOutcome::Mine(g)) => {
                            // Another run may have finished the cell and released its claim between
                            // the look above and this claim: look again now that the claim is ours.
                            if let Some(r) = finished() {
                                drop(g);
                                out.push((i, Outcome::Finished(r)));
                                continue;
                            }
                            guards.push(g);
                            mine.push(i);
                        }
                        Ok(ClaimOutcome::Busy(by)) => out.push((i, Outcome::Busy(by))),
                        Err(e) => {
                            // claims unavailable (read-only claims directory...): compute anyway
                            if !opts.quiet {
                                eprintln!("warning: cannot claim cell {}: {e}; computing it without a claim", cell.hash);
                            }
                            mine.push(i);
                        }
                    }
                }
                if mine.is_empty() {
                    return out;
                }
                let first = &results[mine[0]].0;
                let what = format!("{} / {} {}", data[first.dataset].label, plan.methods[first.method].label, first.key.params_string());
                let (fitted, fit_seconds) = fit_observed(&first.key, &data[first.dataset].data, &progress, what);
                // Figures of this spec will draw these fits: keep them in the fit cache.
                if let (Some(fits), Ok(f)) = (self.fits, &fitted) {
                    fits.put(&first.key, f, fit_seconds);
                }
                let mut done: Vec<Record> = Vec::new();
                for &i in &mine {
                    let cell = &results[i].0;
                    // Two rows of one method and grid that differ only in the metric they show share
                    // their cells: evaluate and store each key once.
                    if let Some(same) = done.iter().find(|r| r.hash == cell.hash) {
                        let same = same.clone();
                        progress.cell_done(&format!("{} / {}", data[cell.dataset].label, plan.methods[cell.method].label), &same);
                        out.push((i, Outcome::Computed(same)));
                        continue;
                    }
                    let rec = evaluate_cell(plan, cell, &data[cell.dataset], &fitted, fit_seconds, &self.threads);
                    if let Err(e) = store.put(&rec) {
                        // the error names the record's file (atomic_write)
                        self.write_errors.lock().unwrap_or_else(|p| p.into_inner()).push(e.to_string());
                    }
                    progress.cell_done(&format!("{} / {}", data[cell.dataset].label, plan.methods[cell.method].label), &rec);
                    done.push(rec.clone());
                    out.push((i, Outcome::Computed(rec)));
                }
                drop(guards); // the records are written: release the claims
                out
            })
            .collect();
        drop(blas);
        progress.finish();
        new
    }
}

/// [`fit_cell_outcome`] timed, a long fit saying how it is going (iteration, objective, elapsed;
/// at most every 2 s after the first 3 s) as `what` on `progress`.
fn fit_observed(key: &CellKey, data: &Dataset, progress: &Arc<Progress>, what: String) -> (Result<Fitted, FitFailure>, f64) {
    let t0 = Instant::now();
    let (p, started) = (progress.clone(), Instant::now());
    let mut last = 0.0f64;
    let fitted = structdr_numerics::progress::observe(
        move |iteration, objective| {
            let t = started.elapsed().as_secs_f64();
            if t >= 3.0 && t - last >= 2.0 {
                last = t;
                p.fit_update(&what, iteration, objective, t);
            }
        },
        || {
            // test-only: `STRUCTDR_TEST_SLOW_METHOD=le` fits LE twice (the second result kept), a
            // deliberate 2x slow-down the nightly speed alarm's end-to-end test must catch
            if std::env::var("STRUCTDR_TEST_SLOW_METHOD").is_ok_and(|m| m == key.method) {
                let _ = fit_cell_outcome(key, data);
            }
            fit_cell_outcome(key, data)
        },
    );
    (fitted, t0.elapsed().as_secs_f64())
}
