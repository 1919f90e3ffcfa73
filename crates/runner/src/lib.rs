//! # structdr runner
//!
//! The only place that knows about specs, caches, threads and output paths:
//! [`spec`] (parse + validate), [`exec`] (prepare data, expand cells, run the missing ones in
//! parallel), [`store`] (content-addressed records), [`report`] (selection and tables) and
//! [`figure`] (PNG/SVG plots). The `structdr` binary is a thin CLI over [`run_spec`] and the crates.

pub mod data;
pub mod exec;
pub mod external;
pub mod figures;
pub mod fuzz;
pub mod history;
pub mod html;
pub mod nightly;
pub mod plan;
pub mod progress;
pub mod report;
pub mod slurm;
pub mod spec;
pub mod stopping;
pub mod store;

use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes a file atomically (temp file in the same directory, fsync, rename).
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{}.{}.tmp", path.file_name().and_then(|s| s.to_str()).unwrap_or("out"), std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

/// What a run produced.
pub struct RunOutput {
    /// Cell counts of the run (cached, computed, failed, skipped).
    pub summary: exec::RunSummary,
    /// Tables (absent for figure-only specs).
    pub tables: Option<report::TableFiles>,
    /// Paths of the figure files written (PNG and SVG of each figure).
    pub figures: Vec<PathBuf>,
    /// The selected best cell of every (method, data set) pair.
    pub best: Vec<report::Best>,
    /// Every cell of the plan with its record (cached or computed now; `None`: not computed).
    pub results: Vec<(plan::Cell, Option<store::Record>)>,
    /// The data sets after preprocessing, in spec order.
    pub prepared: Vec<data::Prepared>,
}

/// A data set without labels can only be scored by label-free protocols (`neighbourhood`): when
/// none of the spec's rows has one, nothing could be scored on it, which is an error rather than a
/// table of dashes.
fn check_labels(plan: &spec::Plan, prepared: &[data::Prepared]) -> anyhow::Result<()> {
    let label_free = plan.methods.iter().any(|m| m.protocols.iter().any(|p| !p.needs_labels()));
    let scored = plan.spec.evaluation.as_ref().is_some_and(|e| !e.protocols.is_empty()) || plan.methods.iter().any(|m| !m.protocols.is_empty());
    let unlabelled: Vec<&str> = prepared.iter().filter(|p| p.data.labels.is_none()).map(|p| p.label.as_str()).collect();
    if scored && !label_free && !plan.methods.is_empty() && !unlabelled.is_empty() {
        anyhow::bail!(
            "data set{} {} ha{} no labels, and every protocol of the spec needs them; give the labels ([[dataset]] labels = \"y.csv\" or label_column = N) or score without them: [evaluation] protocols = [\"neighbourhood\"] (trustworthiness, continuity, k-NN preservation)",
            if unlabelled.len() == 1 { "" } else { "s" },
            unlabelled.join(", "),
            if unlabelled.len() == 1 { "s" } else { "ve" }
        );
    }
    Ok(())
}

/// Runs a validated plan end to end: data, cells (cached ones reused), tables and figures.
pub fn run_spec(plan: &spec::Plan, opts: &exec::RunOptions) -> anyhow::Result<RunOutput> {
    spec::check_environment(plan).map_err(|e| anyhow::anyhow!("{e}"))?;
    let out_dir = plan.output_dir(&opts.results_root);
    let store = store::Store::open_in(&out_dir).map_err(|e| anyhow::anyhow!("cannot open the record store in {}: {e}", out_dir.display()))?;
    if !opts.quiet {
        eprintln!("spec {} ({}): {} data sets x {} methods", plan.spec.id, plan.path.display(), plan.spec.datasets.len(), plan.methods.len());
    }
    let prepared = data::prepare(plan, opts.quiet)?;
    check_labels(plan, &prepared)?;
    // The fit cache: figures draw from it; when the spec draws the best cells' embeddings, the
    // cells keep their fits there as they run.
    let fits = store::FitStore::open_in(&out_dir).map_err(|e| anyhow::anyhow!("cannot open the fit cache in {}: {e}", out_dir.display()))?;
    let (results, summary) = exec::run(plan, &prepared, &store, plan.spec.figures.best_embeddings.then_some(&fits), opts)?;
    let metric = plan.select_metric();
    let best = report::select(plan, prepared.len(), &results);
    let tables =
        if plan.methods.is_empty() { None } else { Some(report::write_tables(plan, &prepared, &best, &summary, &plan.table_stem(&opts.results_root))?) };
    let mut figures = Vec::new();
    if plan.spec.figures.best_embeddings {
        figures.extend(figures::draw_best_embeddings(plan, &prepared, &best, &metric, &out_dir, &fits)?);
    }
    figures.extend(figures::draw_figure_defs(plan, &prepared, &out_dir, &fits, opts.quiet)?);
    Ok(RunOutput { summary, tables, figures, best, prepared, results })
}

/// The current version of a registered method.
pub(crate) fn method_version(name: &str) -> anyhow::Result<u32> {
    Ok(structdr_methods::lookup(name).map_err(|e| anyhow::anyhow!("{e}"))?.version)
}

/// File-name-safe version of a label.
pub fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '_' }).collect()
}
