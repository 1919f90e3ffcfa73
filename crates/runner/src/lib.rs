//! # structdr runner
//!
//! The only place that knows about specs, caches, threads and output paths:
//! [`spec`] (parse + validate), [`exec`] (prepare data, expand cells, run the missing ones in
//! parallel), [`store`] (content-addressed records), [`report`] (selection and tables) and
//! [`figure`] (PNG/SVG plots). The `structdr` binary is a thin CLI over [`run_spec`] and the crates.

pub mod exec;
pub mod figure;
pub mod report;
pub mod spec;
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
    pub summary: exec::RunSummary,
    pub tables: report::TableFiles,
    pub figures: Vec<PathBuf>,
    pub best: Vec<report::Best>,
    pub prepared: Vec<exec::Prepared>,
}

/// Runs a validated plan end to end: data, cells (cached ones reused), tables and figures.
pub fn run_spec(plan: &spec::Plan, opts: &exec::RunOptions) -> anyhow::Result<RunOutput> {
    let out_dir = plan.output_dir(&opts.results_root);
    let store = store::Store::open(&out_dir.join("cache")).map_err(|e| anyhow::anyhow!("cannot open the record store in {}: {e}", out_dir.display()))?;
    if !opts.quiet {
        eprintln!("spec {} ({}): {} data sets x {} methods", plan.spec.id, plan.path.display(), plan.spec.datasets.len(), plan.methods.len());
    }
    let prepared = exec::prepare(plan, opts.quiet)?;
    let (results, summary) = exec::run(plan, &prepared, &store, opts);
    let metric = plan.select_metric();
    let best = report::select(plan, prepared.len(), &results, &metric);
    let tables = report::write_tables(plan, &prepared, &best, &summary, &plan.table_stem(&opts.results_root))?;
    let mut figures = Vec::new();
    if plan.spec.figures.best_embeddings {
        for (di, p) in prepared.iter().enumerate() {
            let mut panels = Vec::new();
            for b in best.iter().filter(|b| b.dataset == di) {
                let Some(r) = &b.record else { continue };
                // Deterministic: refitting the selected cell reproduces its embedding bit for bit.
                let fitted = structdr_linalg::blas::with_threads(1, || exec::fit_cell(&r.key, &p.data));
                let Ok(f) = fitted else { continue };
                let y = &f.embedding;
                let points: Vec<(f64, f64)> = (0..y.nrows()).map(|i| (y[[i, 0]], if y.ncols() > 1 { y[[i, 1]] } else { 0.0 })).collect();
                let score = b.value(&metric).map(|v| format!(": {v:.4}")).unwrap_or_default();
                // Only the parameters the grid varies, so titles stay short.
                let cells = &plan.methods[b.method].cells;
                let params: Vec<String> = r.key.params.iter().filter(|(k, _)| cells.iter().any(|c| c.get(*k) != cells[0].get(*k))).map(|(k, v)| format!("{k}={v}")).collect();
                let params = if params.is_empty() { String::new() } else { format!(" ({})", params.join(", ")) };
                panels.push(figure::Panel { title: format!("{}{}{}", plan.methods[b.method].label, params, score), points, edges: vec![] });
            }
            if panels.is_empty() {
                continue;
            }
            // Colour by the labels the metrics score; unlabelled sets by the manifold coordinate.
            let colouring = match (&p.data.labels, &p.data.t) {
                (Some(l), _) => figure::Colouring::Labels(l),
                (None, Some(t)) => figure::Colouring::Continuous(t),
                _ => figure::Colouring::None,
            };
            let stem = out_dir.join(format!("embedding_{}", sanitize(&p.label)));
            let title = format!("{}: best cell of each method by {metric}, first two coordinates, coloured by {}", p.label, if p.data.labels.is_some() { "label" } else if p.data.t.is_some() { "position along the manifold" } else { "nothing" });
            let (png, svg) = figure::write_figure(&stem, &title, &panels, &colouring).map_err(|e| anyhow::anyhow!("figure {}: {e}", stem.display()))?;
            figures.push(png);
            figures.push(svg);
        }
    }
    Ok(RunOutput { summary, tables, figures, best, prepared })
}

/// File-name-safe version of a label.
pub fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '_' }).collect()
}
