//! `structdr verify`: recompute stored cells of a spec into a scratch store, through the same
//! execution as `run` ([`crate::exec::run`]: BLAS single-threaded, `-j` workers, the cells'
//! own seeds), and compare each with its record, bit for bit.
//!
//! The cells: a seeded sample spread evenly over the methods (`--sample N`, default 20), or every
//! stored cell (`--all`), optionally only some data sets and methods, or only cells whose record
//! took at most `--max-seconds`. Each cell is `identical`, `within tolerance` (only with a
//! `--tolerance`), `differs` (the values side by side) or `failed` (its recomputation failed).
//! Exit status 3 when a cell differs or failed.
//!
//! Tolerance: every method is bit-reproducible for one OpenBLAS kernel set (docs/parity/mpme.md,
//! "Reproducibility across BLAS kernel sets"), so the default is exact. Records name their kernel
//! set (`threads`); a cell recorded with another kernel set than this machine's says so, and
//! `--tolerance T` (every method) or `--tolerance METHOD=T` states how far apart its metrics may
//! be (absolute difference).

use crate::exec::RunOptions;
use crate::spec;
use crate::stopping::RecordedStop;
use crate::store::{Lookup, Record, SpecLedger, Status, Store, RECORDS_DIR};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Default sample size of `structdr verify`.
pub const DEFAULT_SAMPLE: usize = 20;

// clap reads doc comments as help text (a doc here would change `--help`): the commands' help documents these.
#[allow(missing_docs)]
#[derive(Args)]
pub struct VerifyArgs {
    /// The spec file (TOML) whose stored cells are recomputed.
    pub spec: PathBuf,
    /// Results root (default `results`).
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Recompute a seeded sample of this many stored cells, spread evenly over the methods.
    #[arg(long, default_value_t = DEFAULT_SAMPLE, conflicts_with = "all")]
    pub sample: usize,
    /// Recompute every stored cell of the spec.
    #[arg(long)]
    pub all: bool,
    /// Seed of the sample.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Only cells of this data set (table label or registry name; repeatable).
    #[arg(long = "dataset", value_name = "NAME")]
    pub only_datasets: Vec<String>,
    /// Only cells of this method (table label or method name; repeatable).
    #[arg(long = "method", value_name = "NAME")]
    pub only_methods: Vec<String>,
    /// Only cells whose record took at most this many seconds (fit + evaluation).
    #[arg(long, value_name = "SECONDS")]
    pub max_seconds: Option<f64>,
    /// Largest absolute difference of a metric counted as agreeing: `T` for every method, or
    /// `METHOD=T` (repeatable). Default 0: bit for bit.
    #[arg(long, value_name = "[METHOD=]T")]
    pub tolerance: Vec<String>,
    /// Worker threads (default: all cores; BLAS runs single-threaded inside).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// No progress output (the per-cell lines and the summary are still printed).
    #[arg(long, short)]
    pub quiet: bool,
}

/// What a recomputed cell is next to its record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Every compared field equal, bit for bit.
    Identical,
    /// Metrics within the stated tolerance, not all bit-identical.
    Within,
    /// Something differs.
    Differs,
    /// The recomputation failed where the record did not.
    Failed,
}

impl Verdict {
    fn word(self) -> &'static str {
        match self {
            Verdict::Identical => "identical",
            Verdict::Within => "within tolerance",
            Verdict::Differs => "differs",
            Verdict::Failed => "failed",
        }
    }
}

/// Compares a recomputed record with the stored one: the verdict and, for anything but
/// identical, what differs (values side by side, stored first). Compared: status and error,
/// every metric (bit for bit, or within `tol`), the dimension and data shape, and for cells that
/// fitted, iterations, the final objective and KKT residual (where both records have them) and
/// why the fit stopped: the recorded reason and `converged` flag, or for a record written before
/// reasons were recorded whether the reason it allows to infer ([`Record::stop_reason`]) stopped
/// short of the rule (its `converged` flag then meant "the solver stopped itself" and is not
/// compared). With `tol > 0` a difference in the solver's end is shown but does not count against
/// the cell (across kernel sets it moves first). Times, machine, code version and notes are not
/// compared.
pub fn compare(stored: &Record, new: &Record, tol: f64) -> (Verdict, Vec<String>) {
    let mut out = Vec::new();
    if new.status != stored.status {
        let verdict = if new.status == Status::Failed { Verdict::Failed } else { Verdict::Differs };
        out.push(format!(
            "status {:?} (stored) vs {:?} (recomputed){}",
            stored.status,
            new.status,
            new.error.as_ref().map(|e| format!(": {e}")).unwrap_or_default()
        ));
        return (verdict, out);
    }
    if new.status != Status::Ok && new.error != stored.error {
        out.push(format!("error {:?} (stored) vs {:?} (recomputed)", stored.error.as_deref().unwrap_or(""), new.error.as_deref().unwrap_or("")));
    }
    let names: BTreeSet<&String> = stored.metrics.keys().chain(new.metrics.keys()).collect();
    let mut within = false;
    for name in names {
        match (stored.metrics.get(name), new.metrics.get(name)) {
            (Some(a), Some(b)) if a.to_bits() == b.to_bits() => {}
            (Some(a), Some(b)) if (a - b).abs() <= tol => {
                within = true;
                out.push(format!("{name} {a:?} (stored) vs {b:?} (recomputed), within {tol:e}"));
            }
            (a, b) => out.push(format!(
                "{name} {} (stored) vs {} (recomputed)",
                a.map(|v| format!("{v:?}")).unwrap_or_else(|| "absent".into()),
                b.map(|v| format!("{v:?}")).unwrap_or_else(|| "absent".into())
            )),
        }
    }
    let exact = |what: &str, a: String, b: String, out: &mut Vec<String>| {
        if a != b {
            out.push(format!("{what} {a} (stored) vs {b} (recomputed)"));
        }
    };
    exact("d", stored.dim.to_string(), new.dim.to_string(), &mut out);
    exact("N x D", format!("{} x {}", stored.n_samples, stored.n_features), format!("{} x {}", new.n_samples, new.n_features), &mut out);
    // the solver's end, where both records have it (older records lack some fields)
    let mut solver = Vec::new();
    if stored.status == Status::Ok {
        exact("iterations", stored.iterations.to_string(), new.iterations.to_string(), &mut solver);
        for (what, a, b) in [("objective", stored.objective, new.objective), ("KKT residual", stored.kkt_residual, new.kkt_residual)] {
            if let (Some(a), Some(b)) = (a, b) {
                exact(what, format!("{a:?}"), format!("{b:?}"), &mut solver);
            }
        }
        let text =
            |s: &Option<structdr_methods::StopReason>| s.as_ref().map(|s| serde_json::to_string(s).expect("a stop reason serialises")).unwrap_or_default();
        if stored.stop.is_some() {
            exact("converged", stored.converged.to_string(), new.converged.to_string(), &mut solver);
            exact("stop", text(&stored.stop), text(&new.stop), &mut solver);
        } else if let (RecordedStop::Inferred(was), Some(now)) = (stored.stop_reason(), &new.stop) {
            // A record written before the typed stopping reason keeps the solver's own flag in
            // `converged` (true also when a relative-reduction test stopped it short of its tol),
            // so the flag is not compared. What the tables show of it is compared instead:
            // whether the reason the record allows to infer stopped short of the rule (an
            // inferred "not iterative" and a recomputed "converged" both met it).
            if was.stopped_short() != now.stopped_short() {
                let short = |s: bool| if s { "stopped short" } else { "met its rule" };
                solver.push(format!("{} ({was}, stored, inferred) vs {} ({now}, recomputed)", short(was.stopped_short()), short(now.stopped_short())));
            }
        }
    }
    let hard = out.iter().filter(|l| !l.ends_with(&format!("within {tol:e}"))).count();
    let verdict = if hard > 0 || (tol == 0.0 && !solver.is_empty()) {
        Verdict::Differs
    } else if within || !solver.is_empty() {
        Verdict::Within
    } else {
        Verdict::Identical
    };
    out.extend(solver);
    (verdict, out)
}

/// The OpenBLAS kernel set a record's `threads` names (`openblas=SkylakeX`).
fn kernels(threads: &str) -> Option<&str> {
    threads.split_whitespace().find_map(|w| w.strip_prefix("openblas="))
}

/// `--tolerance` values: one for every method and per method (registry name or row label).
fn tolerances(given: &[String], plan: &spec::Plan) -> Result<(f64, BTreeMap<String, f64>)> {
    let mut all = 0.0;
    let mut per = BTreeMap::new();
    for t in given {
        let (method, value) = match t.split_once('=') {
            Some((m, v)) => (Some(m.trim()), v.trim()),
            None => (None, t.trim()),
        };
        let v: f64 = value.parse().ok().filter(|v: &f64| v.is_finite() && *v >= 0.0).with_context(|| format!("--tolerance {t}: not a finite number >= 0"))?;
        match method {
            None => all = v,
            Some(m) => {
                let Some(name) = plan.methods.iter().find(|x| x.name == m || x.label == m).map(|x| x.name.clone()) else {
                    bail!("--tolerance {t}: '{m}' is not a method of {}", plan.path.display());
                };
                per.insert(name, v);
            }
        }
    }
    Ok((all, per))
}

/// Order of a cell within its method's share of the sample: SHA-256 of the seed and its hash.
fn draw(seed: u64, hash: &str) -> String {
    structdr_datasets::sha256_hex(format!("{seed}/{hash}").as_bytes())
}

/// `structdr verify`.
pub fn verify(a: VerifyArgs) -> Result<()> {
    if let Some(j) = a.jobs {
        rayon::ThreadPoolBuilder::new().num_threads(j.max(1)).build_global().context("configuring worker threads")?;
    }
    if a.max_seconds.is_some_and(|s| !(s >= 0.0)) {
        bail!("--max-seconds must be >= 0");
    }
    let plan = spec::load(&a.spec)?;
    super::run::check_filters(&plan, &a.spec, &a.only_datasets, &a.only_methods)?;
    let (tol_all, tol_per) = tolerances(&a.tolerance, &plan)?;
    SpecLedger::check_plan(&plan, &a.results, false)?;
    let dir = plan.output_dir(&a.results).join(RECORDS_DIR);
    if !dir.is_dir() {
        bail!("{}: no record store for {} (run it first)", dir.display(), a.spec.display());
    }
    let store = Store::open(&dir)?;
    let checked = crate::data::check_inputs(&plan)?;
    let prepared = crate::data::prepare(&plan, checked, a.quiet)?;
    let cells = crate::cells::cells(&plan, &prepared);
    // Every stored cell of the plan once (rows sharing a cell share its record), with its record
    // as the file holds it, refused or not: verify shows what a record claims.
    let wanted = |only: &[String], names: Vec<&str>| only.is_empty() || only.iter().any(|o| names.contains(&o.as_str()));
    let mut seen = BTreeSet::new();
    let mut stored_cells = 0;
    let mut candidates: Vec<(usize, Record, Option<String>)> = Vec::new();
    for (i, c) in cells.iter().enumerate() {
        if !seen.insert(c.hash.clone()) {
            continue;
        }
        let (rec, refused) = match store.read(&c.hash) {
            Lookup::Found(r) => (r, None),
            Lookup::Refused { record, why } => (record, Some(why)),
            Lookup::Missing => continue,
        };
        stored_cells += 1;
        let quick = a.max_seconds.is_none_or(|m| rec.fit_seconds + rec.eval_seconds <= m);
        if quick && wanted(&a.only_datasets, plan.dataset_names(c.dataset)) && wanted(&a.only_methods, plan.method_names(c.method)) {
            candidates.push((i, rec, refused));
        }
    }
    // The sample: each method's candidates in a seeded order, taken in turn from every method.
    let mut by_method: BTreeMap<String, Vec<(String, usize)>> = BTreeMap::new();
    for (k, (i, _, _)) in candidates.iter().enumerate() {
        by_method.entry(cells[*i].key.method.clone()).or_default().push((draw(a.seed, &cells[*i].hash), k));
    }
    for v in by_method.values_mut() {
        v.sort();
    }
    let n = if a.all { candidates.len() } else { a.sample.min(candidates.len()) };
    let mut chosen: Vec<usize> = Vec::with_capacity(n);
    let mut round = 0;
    while chosen.len() < n {
        for v in by_method.values() {
            if chosen.len() < n {
                if let Some((_, k)) = v.get(round) {
                    chosen.push(*k);
                }
            }
        }
        round += 1;
    }
    chosen.sort_unstable();
    println!(
        "verify {}: {} of {} stored cells{} ({}; {} methods), recomputed into a scratch store",
        a.spec.display(),
        chosen.len(),
        stored_cells,
        if candidates.len() < stored_cells { format!(" ({} after --dataset / --method / --max-seconds)", candidates.len()) } else { String::new() },
        if a.all { "all of them".to_string() } else { format!("seeded sample, seed {}, spread over the methods", a.seed) },
        by_method.len()
    );
    if chosen.is_empty() {
        println!("nothing to verify");
        return Ok(());
    }
    let scratch = tempfile::Builder::new().prefix("structdr-verify-").tempdir().context("creating the scratch store")?;
    let scratch_store = Store::open(&scratch.path().join(RECORDS_DIR))?;
    let only: BTreeSet<String> = chosen.iter().map(|&k| cells[candidates[k].0].hash.clone()).collect();
    let opts = RunOptions {
        results_root: scratch.path().to_path_buf(),
        recompute: crate::exec::Recompute::Missing,
        retry_failed: false,
        max_cells: None,
        only_datasets: vec![],
        only_methods: vec![],
        shard: None,
        only_cells: Some(only),
        quiet: a.quiet,
        no_wait: false,
    };
    let t0 = std::time::Instant::now();
    let (recomputed, _) = crate::exec::run(&plan, &prepared, &scratch_store, None, &opts)?;
    let new: BTreeMap<&str, &Record> = recomputed.iter().filter_map(|(c, r)| r.as_ref().map(|r| (c.hash.as_str(), r))).collect();
    let here = structdr_linalg::blas::core_name();
    let mut counts: BTreeMap<String, [usize; 4]> = BTreeMap::new();
    for &k in &chosen {
        let (i, stored, refused) = &candidates[k];
        let c = &cells[*i];
        let what = format!("{} / {} {}", prepared[c.dataset].label, plan.methods[c.method].label, c.key.params_string());
        let tol = tol_per.get(&c.key.method).copied().unwrap_or(tol_all);
        let (verdict, details) = match new.get(c.hash.as_str()) {
            Some(r) => compare(stored, r, tol),
            None => (Verdict::Failed, vec!["not recomputed (another run holds its claim in the scratch store)".into()]),
        };
        let mut notes = Vec::new();
        if let Some(why) = refused {
            notes.push(format!("the stored record is refused: {why}"));
        }
        if let Some(k) = kernels(&stored.threads).filter(|k| !k.eq_ignore_ascii_case(&here)) {
            notes.push(format!("recorded with OpenBLAS {k} kernels, recomputed with {here}: bit-identical results are expected only for one kernel set"));
        }
        println!("{:<16} {what}{}", verdict.word(), notes.iter().map(|n| format!(" [{n}]")).collect::<String>());
        if verdict != Verdict::Identical {
            for d in &details {
                println!("{:<16}   {d}", "");
            }
        }
        counts.entry(c.key.method.clone()).or_default()[verdict as usize] += 1;
    }
    let total = counts.values().fold([0; 4], |acc, c| [acc[0] + c[0], acc[1] + c[1], acc[2] + c[2], acc[3] + c[3]]);
    // the summary by method (blank style: one whitespace-separated row per method, as scripts read it)
    let mut table = tabled::builder::Builder::default();
    table.push_record(["method", "identical", "within tolerance", "differs", "failed"]);
    for (m, c) in counts.iter().chain(std::iter::once((&"all".to_string(), &total))) {
        table.push_record([m.clone(), c[0].to_string(), c[1].to_string(), c[2].to_string(), c[3].to_string()]);
    }
    let mut table = table.build();
    table.with(tabled::settings::Style::blank()).modify(tabled::settings::object::Columns::new(1..), tabled::settings::Alignment::right());
    println!("\n{table}");
    println!("elapsed: {:.1} s", t0.elapsed().as_secs_f64());
    if total[2] + total[3] > 0 {
        eprintln!("error: {} of {} cells did not reproduce their records ({} differ, {} failed)", total[2] + total[3], chosen.len(), total[2], total[3]);
        std::process::exit(super::exit::DIFFERS);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(acc: f64, iterations: usize) -> Record {
        let text = format!(
            r#"{{"key":{{"dataset":"iris","data_checksum":"c","method":"le","params":{{"dim":2}},"dim_source":"fixed","protocols":["loocv"],"kmeans_restarts":0,"seed":1,"schema":1,"method_version":1}},
            "hash":"h","status":"ok","error":null,"metrics":{{"loocv_1nn_accuracy":{acc:?}}},"dim":2,"n_samples":150,"n_features":4,"fit_seconds":1.0,
            "eval_seconds":0.1,"iterations":{iterations},"converged":true,"objective":1.5,"notes":[],"code_version":"x","threads":"rayon=1 blas=1 openblas=Haswell","finished_at":0}}"#
        );
        Record::from_json(&text).unwrap()
    }

    #[test]
    fn records_compare_bit_for_bit_unless_a_tolerance_is_stated() {
        let a = rec(0.96, 10);
        let mut b = rec(0.96, 10);
        b.fit_seconds = 9.0;
        b.threads = "other".into();
        assert_eq!(compare(&a, &b, 0.0), (Verdict::Identical, vec![]));
        let c = rec(f64::from_bits(0.96f64.to_bits() + 1), 10);
        let (v, d) = compare(&a, &c, 0.0);
        assert_eq!(v, Verdict::Differs);
        assert!(d[0].contains("0.96 (stored) vs 0.9600000000000001 (recomputed)"), "{d:?}");
        assert_eq!(compare(&a, &c, 1e-9).0, Verdict::Within);
        assert_eq!(compare(&a, &rec(0.5, 10), 1e-9).0, Verdict::Differs);
        assert_eq!(compare(&a, &rec(0.96, 11), 0.0).0, Verdict::Differs);
        let mut failed = rec(0.96, 10);
        failed.status = Status::Failed;
        failed.metrics.clear();
        failed.error = Some("boom".into());
        assert_eq!(compare(&a, &failed, 0.0).0, Verdict::Failed);
        assert_eq!(compare(&failed, &failed.clone(), 0.0).0, Verdict::Identical);
        assert_eq!(kernels(&a.threads), Some("Haswell"));
        // The flag of a record written before stopping reasons is not its meaning today: an old
        // record "converged" by a relative-reduction test, its residual 1e-3 above tol 1e-6, is
        // what a fit today calls stalled.
        let mut old = rec(0.96, 10);
        old.key.params.insert("tol".into(), structdr_methods::ParamValue::Float(1e-6));
        old.notes = vec!["KKT residual ||proj grad||_inf = 1.0e-1 (relative 1.0e-3)".into()];
        assert!(matches!(old.stop_reason(), RecordedStop::Inferred(structdr_methods::StopReason::Stalled { .. })), "{:?}", old.stop_reason());
        let mut now = old.clone();
        now.converged = false;
        now.stop = Some(structdr_methods::StopReason::Stalled { residual: Some(1e-3), tol: Some(1e-6), detail: "relative reduction".into() });
        let (v, d) = compare(&old, &now, 0.0);
        assert_eq!(v, Verdict::Identical, "{d:?}");
        now.converged = true;
        now.stop = Some(structdr_methods::StopReason::Converged { residual: Some(1e-7), tol: Some(1e-6) });
        let (v, d) = compare(&old, &now, 0.0);
        assert_eq!(v, Verdict::Differs);
        assert!(d[0].starts_with("stopped short (") && d[0].contains("stored, inferred) vs met its rule"), "{d:?}");
        // records that carry their reason compare it, and the flag, exactly
        let mut then = now.clone();
        then.stop = Some(structdr_methods::StopReason::Converged { residual: Some(2e-7), tol: Some(1e-6) });
        assert_eq!(compare(&then, &now, 0.0).0, Verdict::Differs);
        assert_eq!(compare(&now, &now.clone(), 0.0).0, Verdict::Identical);
    }
}
