//! One spec end to end ([`run_spec`]): the data sets prepared, the grid cells run (cached ones
//! reused), the best cells selected into tables, then the figures' fit-only cells run by the same
//! execution and drawn.

use crate::cells::{panel_cells, Cell};
use crate::data::{self, Prepared};
use crate::exec::{self, RunOptions, RunSummary};
use crate::figures;
use crate::report::{self, Best, TableFiles};
use crate::spec::{self, Plan};
use crate::store::{FitStore, Record, SpecLedger, Store};
use std::path::PathBuf;

/// What a run produced.
pub struct RunOutput {
    /// Cell counts of the run (cached, computed, failed, skipped).
    pub summary: RunSummary,
    /// Tables (absent for figure-only specs).
    pub tables: Option<TableFiles>,
    /// Paths of the figure files written (PNG and SVG of each figure).
    pub figures: Vec<PathBuf>,
    /// The selected best cell of every (method, data set) pair.
    pub best: Vec<Best>,
    /// Every cell of the plan with its record (cached or computed now; `None`: not computed).
    pub results: Vec<(Cell, Option<Record>)>,
    /// The data sets after preprocessing, in spec order.
    pub prepared: Vec<Prepared>,
}

/// A data set without labels can only be scored by label-free protocols (`neighbourhood`): when
/// none of the spec's rows has one, nothing could be scored on it, which is an error rather than a
/// table of dashes.
fn check_labels(plan: &Plan, prepared: &[Prepared]) -> anyhow::Result<()> {
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
pub fn run_spec(plan: &Plan, opts: &RunOptions) -> anyhow::Result<RunOutput> {
    spec::check_environment(plan).map_err(|e| anyhow::anyhow!("{e}"))?;
    let out_dir = plan.output_dir(&opts.results_root);
    // One id, one spec file: a second file with this id would write into this spec's store.
    SpecLedger::check_plan(plan, &opts.results_root, true)?;
    let store = Store::open_in(&out_dir).map_err(|e| anyhow::anyhow!("cannot open the record store in {}: {e}", out_dir.display()))?;
    if !opts.quiet {
        eprintln!("spec {} ({}): {} data sets x {} methods", plan.spec.id, plan.path.display(), plan.spec.datasets.len(), plan.methods.len());
    }
    let prepared = data::prepare(plan, opts.quiet)?;
    check_labels(plan, &prepared)?;
    // The fit cache: figures draw from it; when the spec draws the best cells' embeddings, the
    // cells keep their fits there as they run.
    let fits = FitStore::open_in(&out_dir).map_err(|e| anyhow::anyhow!("cannot open the fit cache in {}: {e}", out_dir.display()))?;
    let (results, summary) = exec::run(plan, &prepared, &store, plan.spec.figures.best_embeddings.then_some(&fits), opts)?;
    let metric = plan.select_metric();
    let best = report::select(plan, prepared.len(), &results);
    let tables =
        if plan.methods.is_empty() { None } else { Some(report::write_tables(plan, &prepared, &best, &summary, &plan.table_stem(&opts.results_root))?) };
    // The figures' fits are fit-only cells, run like the grid cells (through the fit cache).
    let best_cells = if plan.spec.figures.best_embeddings { figures::best_cells(plan, &prepared, &best) } else { Vec::new() };
    let panels = panel_cells(plan, &prepared)?;
    let wanted: Vec<_> = best_cells.iter().chain(panels.iter().flatten()).cloned().collect();
    let fitted = exec::fit_only(&prepared, &wanted, &fits, opts.quiet);
    let mut figures = Vec::new();
    if plan.spec.figures.best_embeddings {
        figures.extend(figures::draw_best_embeddings(plan, &prepared, &best, &metric, &out_dir, &fitted)?);
    }
    figures.extend(figures::draw_figure_defs(plan, &prepared, &panels, &fitted, &out_dir, opts.quiet)?);
    Ok(RunOutput { summary, tables, figures, best, prepared, results })
}
