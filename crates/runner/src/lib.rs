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
    /// Tables (absent for figure-only specs).
    pub tables: Option<report::TableFiles>,
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
    let tables = if plan.methods.is_empty() { None } else { Some(report::write_tables(plan, &prepared, &best, &summary, &plan.table_stem(&opts.results_root))?) };
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
                panels.push(figure::Panel { title: format!("{}{}{}", plan.methods[b.method].label, params, score), points, edges: vec![], centres: vec![] });
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
    figures.extend(draw_figure_defs(plan, &prepared, &out_dir, opts.quiet)?);
    Ok(RunOutput { summary, tables, figures, best, prepared })
}

/// The first two coordinates of `base` and `extra` on a common plane: as they are when there are
/// at most two columns, else projected on the top-2 principal axes of `base`.
fn plane(base: &ndarray::Array2<f64>, extra: Option<&ndarray::Array2<f64>>) -> (Vec<(f64, f64)>, Vec<(f64, f64)>) {
    let to_pts = |m: &ndarray::Array2<f64>| (0..m.nrows()).map(|i| (m[[i, 0]], if m.ncols() > 1 { m[[i, 1]] } else { 0.0 })).collect::<Vec<_>>();
    if base.ncols() <= 2 {
        return (to_pts(base), extra.map(to_pts).unwrap_or_default());
    }
    match structdr_linalg::Pca::fit(base.view()) {
        Ok(p) => (to_pts(&p.transform(base.view(), 2)), extra.map(|e| to_pts(&p.transform(e.view(), 2))).unwrap_or_default()),
        Err(_) => (to_pts(base), extra.map(to_pts).unwrap_or_default()),
    }
}

/// Draws the spec's stand-alone `[[figure]]`s.
fn draw_figure_defs(plan: &spec::Plan, prepared: &[exec::Prepared], out_dir: &Path, quiet: bool) -> anyhow::Result<Vec<PathBuf>> {
    use spec::FigureKind;
    let mut written = Vec::new();
    for (def, panels) in plan.spec.figure_defs.iter().zip(&plan.figures) {
        let t0 = std::time::Instant::now();
        // Panels are independent fits: run them in parallel with single-threaded BLAS.
        let fits: Vec<Result<structdr_methods::Fitted, String>> = structdr_linalg::blas::with_threads(1, || {
            use rayon::prelude::*;
            panels.par_iter().map(|p| exec::fit_cell(&exec::cell_key(plan, &prepared[p.dataset], &p.method, &p.params), &prepared[p.dataset].data)).collect()
        });
        let stem = out_dir.join(sanitize(&def.name));
        let mut scatter = Vec::new();
        let mut lines = Vec::new();
        let mut adjacency = Vec::new();
        for (p, fit) in panels.iter().zip(fits) {
            let f = fit.map_err(|e| anyhow::anyhow!("figure '{}', panel '{}': {e}", def.name, p.title))?;
            let data = &prepared[p.dataset].data;
            match def.kind {
                FigureKind::Embedding => {
                    let (points, _) = plane(&f.embedding, None);
                    scatter.push((figure::Panel { title: p.title.clone(), points, edges: vec![], centres: vec![] }, p.dataset));
                }
                FigureKind::Graph => {
                    let edges: Vec<(usize, usize)> = f.graph.as_ref().map(|g| g.edges.iter().map(|&(i, j, _)| (i, j)).collect()).unwrap_or_default();
                    let panel = match &f.centres {
                        // Centres in the input space are drawn over the data, latent ones over the embedding.
                        Some(c) if c.ncols() == data.x.ncols() => {
                            let (points, centres) = plane(&data.x, Some(c));
                            figure::Panel { title: p.title.clone(), points, edges, centres }
                        }
                        Some(c) => {
                            let (points, centres) = plane(&f.embedding, Some(c));
                            figure::Panel { title: p.title.clone(), points, edges, centres }
                        }
                        None => {
                            let (points, _) = plane(&f.embedding, None);
                            figure::Panel { title: p.title.clone(), points, edges, centres: vec![] }
                        }
                    };
                    scatter.push((panel, p.dataset));
                }
                FigureKind::Convergence => {
                    let points = f.history.iter().enumerate().map(|(i, &v)| ((i + 1) as f64, v)).collect();
                    let title = if f.history.is_empty() { format!("{} (closed form: no iterations)", p.title) } else { format!("{} ({} iterations)", p.title, f.history.len()) };
                    lines.push(figure::LinePanel { title, points, x_label: "iteration".into(), y_label: "objective".into() });
                }
                FigureKind::Adjacency => {
                    let n = f.centres.as_ref().map(|c| c.nrows()).unwrap_or(f.embedding.nrows());
                    let edges = f.graph.as_ref().map(|g| g.edges.iter().map(|&(i, j, _)| (i, j)).collect()).unwrap_or_default();
                    adjacency.push(figure::AdjacencyPanel { title: p.title.clone(), n, edges });
                }
            }
        }
        let (png, svg) = match def.kind {
            FigureKind::Embedding | FigureKind::Graph => {
                // Colour every panel by its own data set's labels (else its manifold coordinate).
                let first = scatter.first().map(|s| s.1).unwrap_or(0);
                let same = scatter.iter().all(|s| s.1 == first);
                let data = &prepared[first].data;
                let colouring = match (&data.labels, &data.t) {
                    (Some(l), _) if same => figure::Colouring::Labels(l),
                    (None, Some(t)) if same => figure::Colouring::Continuous(t),
                    _ => figure::Colouring::None,
                };
                let panels: Vec<figure::Panel> = scatter.into_iter().map(|s| s.0).collect();
                figure::write_figure(&stem, &def.title, &panels, &colouring)
            }
            FigureKind::Convergence => figure::write_lines(&stem, &def.title, &lines),
            FigureKind::Adjacency => figure::write_adjacency(&stem, &def.title, &adjacency),
        }
        .map_err(|e| anyhow::anyhow!("figure {}: {e}", stem.display()))?;
        if !quiet {
            eprintln!("  figure {} ({} panels, {:.1} s)", def.name, panels.len(), t0.elapsed().as_secs_f64());
        }
        written.push(png);
        written.push(svg);
    }
    Ok(written)
}

/// File-name-safe version of a label.
pub fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '_' }).collect()
}
