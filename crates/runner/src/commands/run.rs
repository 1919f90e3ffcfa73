//! `structdr run`, `check` and `prune`: a spec run end to end ([`crate::pipeline::run_spec`]) and
//! its outcome printed, a spec validated, a spec's record store pruned.

use crate::cells::Shard;
use crate::exec::{Recompute, RunOptions};
use crate::report;
use crate::spec;
use crate::store::{Status, Store};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};

// clap reads doc comments as help text (a doc here would change `--help`): the commands' help documents these.
#[allow(missing_docs)]
#[derive(Args)]
pub struct RunArgs {
    /// The spec file (TOML).
    pub spec: PathBuf,
    /// Results root (default `results`).
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Recompute every cell, ignoring the cache.
    #[arg(long)]
    pub force: bool,
    /// Recompute every cell whose record was written before this time (seconds since the Unix
    /// epoch, e.g. `$(date +%s)` taken when a sitting began) and use the newer ones: specs that
    /// share a store (`output = ...`), forced one after another, then compute each shared cell
    /// once. Figures refit every panel, as under `--force`.
    #[arg(long, value_name = "UNIX_SECONDS", conflicts_with = "force")]
    pub force_before: Option<u64>,
    /// Recompute cells whose cached record failed.
    #[arg(long)]
    pub retry_failed: bool,
    /// Compute at most this many missing cells, then write tables from what exists.
    #[arg(long)]
    pub max_cells: Option<usize>,
    /// Compute only this data set's missing cells (table label or registry name; repeatable).
    /// Tables still show every stored cell.
    #[arg(long = "dataset", value_name = "NAME")]
    pub only_datasets: Vec<String>,
    /// Compute only this method's missing cells (table label or method name; repeatable).
    #[arg(long = "method", value_name = "NAME")]
    pub only_methods: Vec<String>,
    /// Compute only part i of n of the missing cells (1-based, e.g. `--shard 3/8` in a Slurm
    /// array job): the parts split the cells by content key, so n invocations on one store cover
    /// every cell exactly once. Tables show every stored cell.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Worker threads for grid cells (default: all cores; BLAS runs single-threaded inside).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// No progress output.
    #[arg(long, short)]
    pub quiet: bool,
    /// Do not wait for cells another run on this store is computing: leave them to it, and mark
    /// them in the tables as being computed by another run. By default a run waits for them, so
    /// its tables show every cell.
    #[arg(long)]
    pub no_wait: bool,
    /// Exit with status 2 when any cell of the spec failed (computed now or stored), after
    /// writing the tables: for scheduled jobs that must notice a failure. Without it, a run exits
    /// non-zero only when no cell of the spec succeeded.
    #[arg(long)]
    pub fail_on_error: bool,
}

/// `structdr run`.
pub fn run(a: RunArgs) -> Result<()> {
    // The pool first: loading a spec can already run parallel code (the teapot generator
    // ray-traces its frames with rayon), which would fix the global pool at every core.
    if let Some(j) = a.jobs {
        rayon::ThreadPoolBuilder::new().num_threads(j.max(1)).build_global().context("configuring worker threads")?;
    }
    let plan = spec::load(&a.spec)?;
    check_filters(&plan, &a.spec, &a.only_datasets, &a.only_methods)?;
    let shard = a.shard.as_deref().map(Shard::parse).transpose().map_err(|e| anyhow::anyhow!(e))?;
    let opts = RunOptions {
        results_root: a.results,
        recompute: match (a.force, a.force_before) {
            (true, _) => Recompute::All,
            (false, Some(t)) => Recompute::WrittenBefore(t),
            (false, None) => Recompute::Missing,
        },
        retry_failed: a.retry_failed,
        max_cells: a.max_cells,
        only_datasets: a.only_datasets,
        only_methods: a.only_methods,
        shard,
        only_cells: None,
        quiet: a.quiet,
        no_wait: a.no_wait,
    };
    let t0 = std::time::Instant::now();
    let out = crate::pipeline::run_spec(&plan, &opts)?;
    let s = &out.summary;
    println!(
        "cells: {} total, {} computed, {} cached, {} failed{}{}",
        s.total,
        s.computed,
        s.cached,
        s.failed,
        if s.degenerate > 0 { format!(", {} degenerate", s.degenerate) } else { String::new() },
        if s.skipped > 0 { format!(", {} not run (--max-cells, --dataset, --method, --shard)", s.skipped) } else { String::new() }
    );
    if !s.refused.is_empty() {
        println!("records refused by their checksum and not recomputed now (shown as not computed): {}", s.refused.len());
        for r in &s.refused {
            println!("  {} / {} {}: {}", out.prepared[r.dataset].label, plan.methods[r.method].label, r.params, r.why);
        }
    }
    if s.unverified > 0 {
        println!(
            "records used without a checksum (written before records carried one): {} (`structdr store seal {}` stamps them)",
            s.unverified,
            a.spec.display()
        );
    }
    if s.finished_elsewhere > 0 {
        println!("cells finished by another run on this store while this one ran: {} (in the tables)", s.finished_elsewhere);
    }
    if !s.claimed.is_empty() {
        // not silent: the tables mark these cells too, and a later run (or `structdr run` without
        // --no-wait) shows them
        println!(
            "cells being computed by another run on this store: {} (shown as such in the tables; run again when it finishes to see them)",
            s.claimed.len()
        );
        let mut by: Vec<&str> = s.claimed.iter().map(|c| c.by.as_str()).collect();
        by.sort_unstable();
        by.dedup();
        println!("  claimed by: {}", by.join("; "));
    }
    if let Some(t) = &out.tables {
        println!("tables: {} {} {}", t.md.display(), t.csv.display(), t.tex.display());
    }
    for f in &out.figures {
        println!("figure: {}", f.display());
    }
    for (mi, m) in plan.methods.iter().enumerate() {
        if let Some((v, n)) = report::mean_abs_diff(&plan, &out.prepared, &out.best, mi) {
            println!("mean |ours - paper| {:<8} {v:.4} over {n} data sets", m.label);
        }
    }
    // Every failed cell with its reason: nothing fails silently.
    let failed = report::cells_with_status(&plan, &out.prepared, &out.results, Status::Failed);
    let degenerate = report::cells_with_status(&plan, &out.prepared, &out.results, Status::Degenerate);
    for (what, list) in [("failed", &failed), ("degenerate", &degenerate)] {
        if !list.is_empty() {
            println!("{what} cells ({}):", list.len());
            for f in list {
                println!("  {f}");
            }
        }
    }
    println!("elapsed: {:.1} s", t0.elapsed().as_secs_f64());
    let ok = out.results.iter().filter(|(_, r)| r.as_ref().is_some_and(|r| r.status == Status::Ok)).count();
    if !out.results.is_empty() && ok == 0 && s.skipped == 0 {
        eprintln!("error: no cell of {} succeeded ({} failed)", a.spec.display(), failed.len());
        std::process::exit(super::exit::FAILED_CELLS);
    }
    if a.fail_on_error && !failed.is_empty() {
        eprintln!("error: {} failed cell(s) in {} (--fail-on-error)", failed.len(), a.spec.display());
        std::process::exit(super::exit::FAILED_CELLS);
    }
    Ok(())
}

/// `--dataset` / `--method` names: a misspelt filter would silently select nothing, so every name
/// must be in the spec.
pub(crate) fn check_filters(plan: &spec::Plan, spec: &Path, datasets: &[String], methods: &[String]) -> Result<()> {
    let data_names: Vec<&str> = (0..plan.spec.datasets.len()).flat_map(|i| plan.dataset_names(i)).collect();
    let method_names: Vec<&str> = (0..plan.methods.len()).flat_map(|i| plan.method_names(i)).collect();
    for (flag, given, known) in [("--dataset", datasets, &data_names), ("--method", methods, &method_names)] {
        if let Some(bad) = given.iter().find(|g| !known.contains(&g.as_str())) {
            bail!("{flag} {bad}: not in {} (known: {})", spec.display(), known.join(", "));
        }
    }
    Ok(())
}

/// `structdr check`: the spec validated, and every check of its inputs that `run` makes before a
/// fit ([`crate::data::check_inputs`], the same function `run` calls first), all problems at once.
pub fn check(spec: &Path) -> Result<()> {
    let plan = spec::load(spec)?;
    crate::data::check_inputs(&plan)?;
    let cells: usize = plan.methods.iter().map(|m| m.cells.len()).sum::<usize>() * plan.spec.datasets.len();
    println!("{}: ok ({} data sets, {} methods, {} cells)", spec.display(), plan.spec.datasets.len(), plan.methods.len(), cells);
    Ok(())
}

/// `structdr prune`: records and committed figure panels of other versions of their method removed
/// from the spec's output directory.
pub fn prune(spec: &Path, results: &Path, dry_run: bool) -> Result<()> {
    let plan = spec::load(spec)?;
    // pruning through a second spec file with this store's id would act on another spec's cells
    crate::store::SpecLedger::check_plan(&plan, results, false)?;
    let dir = plan.output_dir(results);
    let store = Store::open_in(&dir).with_context(|| format!("cannot open the record store in {}", dir.display()))?;
    // an external method's records belong to the spec's method of that name, even when a
    // built-in of the same name exists (the spec wins), and a built-in's never to it
    let current = |k: &crate::keys::CellKey| {
        if k.external.is_some() {
            plan.methods.iter().find(|x| x.name == k.method && x.external.is_some()).map(|x| x.version)
        } else {
            structdr_methods::lookup(&k.method).ok().map(|i| i.version)
        }
    };
    let counts = store.prune(current, dry_run).with_context(|| format!("pruning {}", store.dir().display()))?;
    let (mut kept, mut removed) = (0, 0);
    for (method, (k, r)) in &counts {
        let current = structdr_methods::lookup(method).map(|i| format!("version {}", i.version)).unwrap_or_else(|_| "not registered".into());
        println!("{method} ({current}): {k} kept, {r} {}", if dry_run { "to remove" } else { "removed" });
        kept += k;
        removed += r;
    }
    println!("{}: {kept} records kept, {removed} {}", store.dir().display(), if dry_run { "would be removed (dry run)" } else { "removed" });
    // the figures' committed panels of other method versions go the same way
    let panels = crate::store::PanelStore::open_in(&dir);
    let (kept, removed) = panels.prune(current, dry_run).with_context(|| format!("pruning the panels in {}", dir.display()))?;
    if kept + removed > 0 {
        println!(
            "{}: {kept} panels kept, {removed} {}",
            dir.join(crate::store::PANELS_DIR).display(),
            if dry_run { "would be removed (dry run)" } else { "removed" }
        );
    }
    Ok(())
}
