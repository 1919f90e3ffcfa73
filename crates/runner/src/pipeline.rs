//! One spec end to end ([`run_spec`]): the data sets prepared, the grid cells run (cached ones
//! reused), the best cells selected into tables, then the figures' fit-only cells run by the same
//! execution and drawn.

use crate::cells::{panel_cells, Cell};
use crate::data::{self, Prepared};
use crate::exec::{self, RunOptions, RunSummary};
use crate::figures;
use crate::report::{self, Best, TableFiles};
use crate::spec::Plan;
use crate::store::{FitStore, PanelStore, Record, SpecLedger, Store};
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

/// Runs a validated plan end to end: data, cells (cached ones reused), tables and figures.
pub fn run_spec(plan: &Plan, opts: &RunOptions) -> anyhow::Result<RunOutput> {
    // `check`'s validation, the same function: what it accepts, the run does not refuse later
    let checked = data::check_inputs(plan).map_err(|e| anyhow::anyhow!("{e}"))?;
    let out_dir = plan.output_dir(&opts.results_root);
    // One id, one spec file: a second file with this id would write into this spec's store.
    SpecLedger::check_plan(plan, &opts.results_root, true)?;
    let store = Store::open_in(&out_dir).map_err(|e| anyhow::anyhow!("cannot open the record store in {}: {e}", out_dir.display()))?;
    if !opts.quiet {
        eprintln!("spec {} ({}): {} data sets x {} methods", plan.spec.id, plan.path.display(), plan.spec.datasets.len(), plan.methods.len());
    }
    let prepared = data::prepare(plan, checked, opts.quiet)?;
    // registry sets' labels are known once loaded
    let sets: Vec<(String, bool)> = prepared.iter().map(|p| (p.label.clone(), p.data.labels.is_some())).collect();
    data::check_labelled(plan, &sets).map_err(|e| anyhow::anyhow!(e))?;
    // The fit cache: figures draw from it; when the spec draws the best cells' embeddings, the
    // cells keep their fits there as they run.
    let fits = FitStore::open_in(&out_dir).map_err(|e| anyhow::anyhow!("cannot open the fit cache in {}: {e}", out_dir.display()))?;
    let (results, summary) = exec::run(plan, &prepared, &store, plan.spec.figures.best_embeddings.then_some(&fits), opts)?;
    let metric = plan.select_metric();
    let best = report::select(plan, prepared.len(), &results);
    let tables =
        if plan.methods.is_empty() { None } else { Some(report::write_tables(plan, &prepared, &best, &summary, &plan.table_stem(&opts.results_root))?) };
    // The figures' fits are fit-only cells, run like the grid cells (through the committed panels
    // and the fit cache).
    let best_cells = if plan.spec.figures.best_embeddings { figures::best_cells(plan, &prepared, &best) } else { Vec::new() };
    let panels = panel_cells(plan, &prepared)?;
    let wanted: Vec<_> = best_cells.iter().chain(panels.iter().flatten()).cloned().collect();
    // Committed panels first (a fresh clone redraws without refitting), `--force` and
    // `--force-before` refit (a figure spec shares its panels with no other spec).
    let committed = PanelStore::open_in(&out_dir);
    let fitted = exec::fit_only(
        &prepared,
        &wanted,
        &exec::FitSources { panels: &committed, fits: &fits, refit: opts.recompute != exec::Recompute::Missing },
        opts.quiet,
    );
    let mut figures = Vec::new();
    if plan.spec.figures.best_embeddings {
        figures.extend(figures::draw_best_embeddings(plan, &prepared, &best, &metric, &out_dir, &fitted)?);
    }
    figures.extend(figures::draw_figure_defs(plan, &prepared, &panels, &fitted, &out_dir, opts.quiet)?);
    Ok(RunOutput { summary, tables, figures, best, prepared, results })
}
