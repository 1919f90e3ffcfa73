//! Figures: which fits the best-embedding figures show ([`best_cells`]; a `[[figure]]`'s panels are
//! [`crate::cells::panel_cells`]), what each panel draws and says in `figures.md`, and rendering
//! ([`render`], plotters). Figures fit nothing themselves: their fits are fit-only cells, run by
//! [`crate::exec::fit_only`] under the same content key as the grid cell each would be (through the
//! committed panels and the fit cache, so a fresh clone or a re-run draws without refitting), and
//! handed in as [`Fits`]. The parameter
//! sensitivity and image-mask kinds have their own rooms ([`sensitivity`], [`masks`]) and plot
//! types ([`plots`]).

mod masks;
pub mod plots;
pub mod render;
mod sensitivity;
pub mod text;

use crate::cells::FitCell;
use crate::data::Prepared;
use crate::exec::Fits;
use crate::files::{atomic_write, sanitize};
use crate::outputs::{n_selected, scored_coordinates};
use crate::report::Best;
use crate::spec;
use std::path::{Path, PathBuf};

/// The fit-only cells of the best-embedding figures (`figures.best_embeddings`): the selected cell
/// of every (method, data set) that has one.
pub fn best_cells(plan: &spec::Plan, prepared: &[Prepared], best: &[Best]) -> Vec<FitCell> {
    let what =
        |b: &Best, key: &crate::keys::CellKey| format!("{} / {} {} (best)", prepared[b.dataset].label, plan.methods[b.method].label, key.params_string());
    best.iter().filter_map(|b| b.record.as_ref().map(|r| FitCell::new(b.dataset, r.key.clone(), what(b, &r.key)))).collect()
}

/// One figure per data set with the first two coordinates of every method's best cell
/// (`figures.best_embeddings`), drawn from the fits of [`best_cells`] (a cell whose fit failed is
/// left out).
pub fn draw_best_embeddings(
    plan: &spec::Plan,
    prepared: &[Prepared],
    best: &[Best],
    metric: &str,
    out_dir: &Path,
    fits: &Fits,
) -> anyhow::Result<Vec<PathBuf>> {
    let mut figures = Vec::new();
    for (di, p) in prepared.iter().enumerate() {
        let mut panels = Vec::new();
        for b in best.iter().filter(|b| b.dataset == di) {
            let Some(r) = &b.record else { continue };
            // Deterministic: refitting the selected cell reproduces its embedding bit for bit.
            let Some(Ok((f, _))) = fits.get(&r.key.hash()) else { continue };
            let Ok(y) = scored_coordinates(f, &r.key.params, p.data.x.view()) else { continue };
            let points: Vec<(f64, f64)> = (0..y.nrows()).map(|i| (y[[i, 0]], if y.ncols() > 1 { y[[i, 1]] } else { 0.0 })).collect();
            let score = b.score().map(|v| format!(": {v:.4}")).unwrap_or_default();
            // Only the parameters the grid varies, so titles stay short.
            let cells = &plan.methods[b.method].cells;
            let params: Vec<String> =
                r.key.params.iter().filter(|(k, _)| cells.iter().any(|c| c.get(*k) != cells[0].get(*k))).map(|(k, v)| format!("{k}={v}")).collect();
            let params = if params.is_empty() { String::new() } else { format!(" ({})", params.join(", ")) };
            // Colour by the labels the metrics score; unlabelled sets by the manifold coordinate.
            let colouring = auto_colouring(&p.data);
            panels.push(render::Panel {
                title: format!("{}{}{}", plan.methods[b.method].label, params, score),
                points,
                edges: vec![],
                centres: vec![],
                colouring,
                axes: ("coordinate 1".into(), "coordinate 2".into()),
            });
        }
        if panels.is_empty() {
            continue;
        }
        let stem = out_dir.join(format!("embedding_{}", sanitize(&p.label)));
        let title = format!(
            "{}: best cell of each method by {metric}, first two coordinates, coloured by {}",
            p.label,
            if p.data.labels.is_some() {
                "label"
            } else if p.data.t.is_some() {
                "position along the manifold"
            } else {
                "nothing"
            }
        );
        let (png, svg) = render::write_figure(&stem, &title, &panels, None).map_err(|e| anyhow::anyhow!("figure {}: {e}", stem.display()))?;
        figures.push(png);
        figures.push(svg);
    }
    Ok(figures)
}

/// Points of a plane and the labels of its two axes.
type Plane = (Vec<(f64, f64)>, Vec<(f64, f64)>, (String, String));

/// The first two coordinates of `base` and `extra` on a common plane: as they are when there are
/// at most two columns, else projected on the top-2 principal axes of `base`. `what` names
/// `base` on the axes ("coordinate 1", or "principal axis 1 of the data").
fn plane(base: &ndarray::Array2<f64>, extra: Option<&ndarray::Array2<f64>>, what: (&str, &str)) -> Plane {
    let to_pts = |m: &ndarray::Array2<f64>| (0..m.nrows()).map(|i| (m[[i, 0]], if m.ncols() > 1 { m[[i, 1]] } else { 0.0 })).collect::<Vec<_>>();
    let (short, long) = what;
    // a one-letter name takes subscripts (x₁, x₂), a word a number (coordinate 1)
    let as_is = || if short.chars().count() == 1 { (format!("{short}₁"), format!("{short}₂")) } else { (format!("{short} 1"), format!("{short} 2")) };
    if base.ncols() <= 2 {
        return (to_pts(base), extra.map(to_pts).unwrap_or_default(), as_is());
    }
    match structdr_linalg::Pca::fit(base.view()) {
        Ok(p) => (
            to_pts(&p.transform(base.view(), 2)),
            extra.map(|e| to_pts(&p.transform(e.view(), 2))).unwrap_or_default(),
            (format!("principal axis 1 of {long}"), format!("principal axis 2 of {long}")),
        ),
        Err(_) => (to_pts(base), extra.map(to_pts).unwrap_or_default(), as_is()),
    }
}

/// Caption suffix of a panel whose fit the method called degenerate (drawn empty).
const DEGENERATE_CAPTION: &str = "degenerate, nothing to draw";

/// Legend name of the manifold coordinate of synthetic sets.
const MANIFOLD: &str = "position along the manifold";

/// The default colouring of a data set's points: its labels, else its manifold coordinate.
fn auto_colouring(data: &structdr_datasets::Dataset) -> render::Colouring {
    match (&data.labels, &data.t) {
        (Some(l), _) => render::Colouring::Labels { values: l.clone(), name: "class".into() },
        (None, Some(t)) => render::Colouring::Continuous { values: t.clone(), name: MANIFOLD.into() },
        _ => render::Colouring::None,
    }
}

/// The colouring a figure's `colour` asks for, from the panel's data and fit.
fn colouring_of(by: spec::ColourBy, data: &structdr_datasets::Dataset, fit: &structdr_methods::Fitted) -> Result<render::Colouring, String> {
    use spec::ColourBy;
    Ok(match by {
        ColourBy::Auto => auto_colouring(data),
        ColourBy::Label => {
            render::Colouring::Labels { values: data.labels.clone().ok_or("colour = \"label\": the data set has no labels")?, name: "class".into() }
        }
        ColourBy::Manifold => {
            // each set's own coordinate range mapped to [0, 1], so panels of several sets (a helix's
            // angle runs to 2 pi, a spiral's position to 1) share one colour bar
            let Some(t) = data.t.as_ref() else {
                // a set without one (three clusters) shows its classes, named so in the legend
                let labels =
                    data.labels.clone().ok_or("colour = \"manifold\": the data set has neither a manifold coordinate (synthetic sets only) nor labels")?;
                return Ok(render::Colouring::Labels { values: labels, name: "class (sets without a manifold coordinate)".into() });
            };
            let (lo, hi) = t.iter().filter(|v| v.is_finite()).fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
            let values = t.iter().map(|&v| if hi > lo { (v - lo) / (hi - lo) } else { 0.5 }).collect();
            render::Colouring::Continuous { values, name: format!("{MANIFOLD} (0 = start, 1 = end of each set)") }
        }
        ColourBy::Components => render::Colouring::Labels {
            values: fit.components.as_ref().ok_or("colour = \"components\": the method returns no connected components")?.iter().map(|&c| c as i64).collect(),
            name: "learned component".into(),
        },
        ColourBy::Pc1 => {
            let pca = structdr_linalg::Pca::fit(data.x.view()).map_err(|e| format!("colour = \"pc1\": PCA of the data: {e}"))?;
            render::Colouring::Continuous { values: pca.transform(data.x.view(), 1).column(0).to_vec(), name: "first principal component of the data".into() }
        }
    })
}

/// Lays learned components out apart: component `c` is translated into cell `c` (row-major) of a
/// grid with `ceil(sqrt(K))` columns whose cells all have the size of the largest component's
/// bounding box (plus a margin), so every component keeps its own scale.
fn spread_components(points: &[(f64, f64)], comps: &[usize]) -> Vec<(f64, f64)> {
    let k = comps.iter().max().map_or(0, |m| m + 1);
    let mut bbox = vec![(f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY); k];
    for (&(x, y), &c) in points.iter().zip(comps) {
        let b = &mut bbox[c];
        *b = (b.0.min(x), b.1.max(x), b.2.min(y), b.3.max(y));
    }
    let w = bbox.iter().map(|b| b.1 - b.0).fold(0.0, f64::max);
    let h = bbox.iter().map(|b| b.3 - b.2).fold(0.0, f64::max);
    let (w, h) = (if w > 0.0 { 1.2 * w } else { 1.0 }, if h > 0.0 { 1.2 * h } else { 1.0 });
    let cols = (k as f64).sqrt().ceil().max(1.0) as usize;
    points
        .iter()
        .zip(comps)
        .map(|(&(x, y), &c)| {
            let (col, row) = ((c % cols) as f64, (c / cols) as f64);
            let b = &bbox[c];
            // centred in its cell; rows go downwards
            (x - 0.5 * (b.0 + b.1) + col * w, y - 0.5 * (b.2 + b.3) - row * h)
        })
        .collect()
}

/// Number of connected components of a graph (isolated vertices count).
fn graph_components(g: &structdr_methods::Graph) -> usize {
    structdr_numerics::graphs::connected_components(g.n_vertices, &g.edges).1
}

/// What one panel shows, for the figure's summary table (`figures.md`).
struct PanelRow {
    title: String,
    method: String,
    params: String,
    n: usize,
    graph: String,
    components: String,
    iterations: usize,
    converged: bool,
    seconds: f64,
    result: String,
    notes: Vec<String>,
}

/// A panel's row title in `figures.md`: the fits of a sweep share their panel's title, the swept
/// value tells them apart.
fn panel_row_title(p: &spec::PanelPlan) -> String {
    p.sweep.as_ref().map_or_else(|| p.title.clone(), |s| format!("{} ({} = {})", p.title, s.param, s.value))
}

/// A panel's parameters as the spec gives them, `k=v, ...`, for its row in `figures.md`.
fn panel_row_params(p: &spec::PanelPlan) -> String {
    p.params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
}

/// `nz = 2E (p% of n^2)`: non-zero entries of the symmetric n x n matrix of a graph with `edges`
/// edges (no self-loops) and their fraction of all entries.
fn nonzeros(n: usize, edges: usize) -> String {
    let nz = 2 * edges;
    format!("nz = {nz} ({:.2}%)", 100.0 * nz as f64 / ((n * n).max(1)) as f64)
}

/// Component-by-label counts: `(components, sorted distinct labels, counts[c][l])`, from the one
/// contingency table of the metrics ([`structdr_eval::contingency`]; components are numbered
/// 0..K-1 without gaps, so its rows are the components in order).
fn contingency(comps: &[usize], labels: &[i64]) -> Result<(usize, Vec<i64>, Vec<Vec<usize>>), String> {
    let (c, rows, cols) = structdr_eval::contingency(comps, labels).map_err(|e| e.to_string())?;
    Ok((rows.len(), cols, c.rows().into_iter().map(|r| r.to_vec()).collect()))
}

/// Labels whose samples form exactly one learned component (all in it, nothing else in it), and
/// components holding a single label.
fn matching_counts(counts: &[Vec<usize>]) -> (usize, usize) {
    let n_labels = counts.first().map_or(0, |r| r.len());
    let exact = (0..n_labels)
        .filter(|&l| {
            let holding: Vec<usize> = (0..counts.len()).filter(|&c| counts[c][l] > 0).collect();
            holding.len() == 1 && counts[holding[0]].iter().enumerate().all(|(l2, &v)| l2 == l || v == 0)
        })
        .count();
    let pure = counts.iter().filter(|r| r.iter().filter(|&&v| v > 0).count() == 1).count();
    (exact, pure)
}

/// The `figures.md` section of one figure: a table of its panels, then every panel's fit notes
/// and any extra tables.
fn figure_section(name: &str, title: &str, rows: &[PanelRow], extra: &[String]) -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let mut md = format!("\n## `{name}`: {}\n\n| panel | method | parameters | N | graph W | components | iterations | converged | fit s | shows |\n|---|---|---|---|---|---|---|---|---|---|\n", cell(title));
    for r in rows {
        md += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            cell(&r.title),
            r.method,
            cell(&r.params),
            r.n,
            r.graph,
            r.components,
            r.iterations,
            r.converged,
            // a panel without a fit (a degenerate one) has no time to show
            if r.seconds.is_finite() { format!("{:.2}", r.seconds) } else { "–".into() },
            cell(&r.result)
        );
    }
    md += "\nFit notes:\n\n";
    for r in rows {
        md += &format!("- {}: {}\n", r.title, r.notes.join("; "));
    }
    for e in extra {
        md += "\n";
        md += e;
    }
    md
}

/// Draws the spec's stand-alone `[[figure]]`s and writes `<output>/figures.md`, a table of every
/// panel (parameters, graph size, non-zeros, components, iterations, fit time, what it shows).
/// `panel_cells[f][p]` is the fit-only cell of panel `p` of figure `f` ([`crate::cells::panel_cells`]),
/// its fit in `fits`.
pub fn draw_figure_defs(
    plan: &spec::Plan,
    prepared: &[Prepared],
    panel_cells: &[Vec<FitCell>],
    fits: &Fits,
    out_dir: &Path,
    quiet: bool,
) -> anyhow::Result<Vec<PathBuf>> {
    use spec::{FigureKind, VertexOrder};
    if plan.figures.is_empty() {
        return Ok(Vec::new());
    }
    let mut written = Vec::new();
    let mut md = format!("# {}\n\nFigures of `{}`, one row per panel; regenerated by `structdr run {}`. `nz`: non-zero entries of the learned symmetric N x N weight matrix W (two per edge) and their fraction of N^2; components: connected components of W (isolated samples count).\n", plan.spec.title, plan.spec.id, plan.path.display());
    for ((def, panels), cells) in plan.spec.figure_defs.iter().zip(&plan.figures).zip(panel_cells) {
        let stem = out_dir.join(sanitize(&def.name));
        let mut scatter = Vec::new();
        let mut lines = Vec::new();
        let mut heat = Vec::new();
        let mut sweep_points = Vec::new();
        let mut images = Vec::new();
        let mut n_frames = 1;
        let mut rows: Vec<PanelRow> = Vec::new();
        let mut extra: Vec<String> = Vec::new();
        for (p, cell) in panels.iter().zip(cells) {
            let fail = |e: String| anyhow::anyhow!("figure '{}', panel '{}': {e}", def.name, p.title);
            let (f, seconds) = match fits.get(&cell.hash).ok_or_else(|| fail("not fitted".into()))? {
                Ok((f, seconds)) => (f, seconds),
                // A fit the method called degenerate has nothing determined to draw: a sweep shows
                // that point as a gap in its lines, a panel of the other kinds stays empty with
                // "degenerate" in its caption; `figures.md` says why in both. The kinds whose
                // panels are built from the fit's own shape (components against labels, masked
                // images) cannot stand empty and stop with the method's reason.
                Err(e) if e.degenerate => {
                    let n = prepared[p.dataset].data.x.nrows();
                    let empty_title = format!("{}: {DEGENERATE_CAPTION}", p.title);
                    let empty = format!("degenerate (an empty panel): {}", e.message);
                    let result = match def.kind {
                        FigureKind::Sensitivity => {
                            let point = sensitivity::Point::degenerate(p, &e.message).map_err(fail)?;
                            let summary = point.summary();
                            sweep_points.push(point);
                            summary
                        }
                        FigureKind::Embedding | FigureKind::Graph => {
                            let axes = ("coordinate 1".to_string(), "coordinate 2".to_string());
                            scatter.push(render::Panel {
                                title: empty_title,
                                points: vec![],
                                edges: vec![],
                                centres: vec![],
                                colouring: render::Colouring::None,
                                axes,
                            });
                            empty
                        }
                        FigureKind::Convergence | FigureKind::Weights => {
                            let (x_label, y_label) = if def.kind == FigureKind::Convergence { ("iteration", "objective") } else { ("feature", "weight") };
                            lines.push(render::LinePanel {
                                title: empty_title,
                                points: vec![],
                                x_label: x_label.into(),
                                y_label: y_label.into(),
                                stems: def.kind == FigureKind::Weights,
                                marks: vec![],
                            });
                            empty
                        }
                        FigureKind::Adjacency => {
                            heat.push(render::HeatmapPanel::adjacency(empty_title, n, &[], "vertex"));
                            empty
                        }
                        FigureKind::Contingency | FigureKind::Masks => {
                            let kind = if def.kind == FigureKind::Contingency { "contingency" } else { "masks" };
                            return Err(fail(format!(
                                "{} (a kind = \"{kind}\" figure has no empty panel to show it: leave the panel out or change its parameters)",
                                e.message
                            )));
                        }
                    };
                    rows.push(PanelRow {
                        title: panel_row_title(p),
                        method: p.method.clone(),
                        params: panel_row_params(p),
                        n,
                        graph: "–".into(),
                        components: "–".into(),
                        iterations: 0,
                        converged: false,
                        seconds: f64::NAN,
                        result,
                        notes: vec!["nothing drawn: the method called the fit degenerate (the result column says why)".into()],
                    });
                    continue;
                }
                Err(e) => return Err(fail(e.message.clone())),
            };
            let data = &prepared[p.dataset].data;
            // What the panel draws: the scored coordinates (an embedding, a principal graph's
            // projections, or the data on the selected features) and the learned graph.
            let coords = scored_coordinates(f, &cell.key.params, data.x.view()).map_err(fail)?;
            let drawn = f.drawn_graph();
            let n_comp = f.components.as_ref().map(|c| c.iter().max().map_or(0, |m| m + 1)).or_else(|| drawn.as_ref().map(graph_components));
            let mut result = String::new();
            match def.kind {
                FigureKind::Embedding | FigureKind::Graph => {
                    let colouring = colouring_of(def.colour, data, f).map_err(fail)?;
                    let edges: Vec<(usize, usize)> = if def.kind == FigureKind::Graph {
                        drawn.as_ref().map(|g| g.edges.iter().map(|&(i, j, _)| (i, j)).collect()).unwrap_or_default()
                    } else {
                        vec![]
                    };
                    const DATA: (&str, &str) = ("x", "the data");
                    const EMBEDDING: (&str, &str) = ("coordinate", "the embedding");
                    let (mut points, centres, axes) = match (f.centres(), def.kind) {
                        // Centres in the input space are drawn over the data, latent ones over the embedding.
                        (Some(c), FigureKind::Graph) if c.ncols() == data.x.ncols() => plane(&data.x, Some(c), DATA),
                        (Some(c), FigureKind::Graph) => plane(&coords, Some(c), EMBEDDING),
                        _ => plane(&coords, None, EMBEDDING),
                    };
                    if def.separate_components {
                        let comps = f.components.as_ref().ok_or_else(|| fail("separate_components: the method returns no connected components".into()))?;
                        if !centres.is_empty() {
                            return Err(fail("separate_components: the method draws its graph over learned centres, not samples".into()));
                        }
                        points = spread_components(&points, comps);
                    }
                    if def.separate_components || def.colour == spec::ColourBy::Components {
                        let k = n_comp.unwrap_or(1);
                        result = format!("{k} component{}", if k == 1 { "" } else { "s" });
                    }
                    let title = if result.is_empty() { p.title.clone() } else { format!("{}: {result}", p.title) };
                    scatter.push(render::Panel { title, points, edges, centres, colouring, axes });
                }
                FigureKind::Convergence => {
                    let points = f.trace.history.iter().enumerate().map(|(i, &v)| ((i + 1) as f64, v)).collect();
                    result = if f.trace.history.is_empty() { "closed form: no iterations".into() } else { format!("{} iterations", f.trace.history.len()) };
                    lines.push(render::LinePanel {
                        title: format!("{} ({result})", p.title),
                        points,
                        x_label: "iteration".into(),
                        y_label: "objective".into(),
                        stems: false,
                        marks: vec![],
                    });
                }
                FigureKind::Adjacency => {
                    let n = f.centres().map(|c| c.nrows()).unwrap_or(coords.nrows());
                    let edges: Vec<(usize, usize)> = drawn.as_ref().map(|g| g.edges.iter().map(|&(i, j, _)| (i, j)).collect()).unwrap_or_default();
                    // position of every vertex in the drawn order (stable sorts)
                    let axis = match def.order {
                        VertexOrder::Sample => "vertex (as numbered)",
                        VertexOrder::Manifold => "vertex (along the manifold)",
                        VertexOrder::Label => "vertex (by label)",
                        VertexOrder::Component => "vertex (by component)",
                    };
                    let key: Option<Vec<f64>> = match def.order {
                        VertexOrder::Sample => None,
                        VertexOrder::Manifold => {
                            Some(data.t.clone().ok_or_else(|| fail("order = \"manifold\": the data set has no manifold coordinate".into()))?)
                        }
                        VertexOrder::Label => Some(
                            data.labels
                                .as_ref()
                                .ok_or_else(|| fail("order = \"label\": the data set has no labels".into()))?
                                .iter()
                                .map(|&l| l as f64)
                                .collect(),
                        ),
                        // by component, then along the first embedding coordinate within it
                        VertexOrder::Component => {
                            let comps = f.components.as_ref().ok_or_else(|| fail("order = \"component\": the method returns no components".into()))?;
                            let y = &coords;
                            let (lo, hi) = y.column(0).iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
                            let span = if hi > lo { hi - lo } else { 1.0 };
                            Some(comps.iter().enumerate().map(|(i, &c)| c as f64 + 0.5 * (y[[i, 0]] - lo) / span).collect())
                        }
                    };
                    let edges = match key {
                        None => edges,
                        Some(key) => {
                            if key.len() != n {
                                return Err(fail(format!("order: the graph has {n} vertices (learned centres?) for {} samples", key.len())));
                            }
                            let mut perm: Vec<usize> = (0..n).collect();
                            perm.sort_by(|&a, &b| key[a].total_cmp(&key[b]));
                            let mut pos = vec![0; n];
                            for (r, &v) in perm.iter().enumerate() {
                                pos[v] = r;
                            }
                            edges.iter().map(|&(i, j)| (pos[i], pos[j])).collect()
                        }
                    };
                    result = nonzeros(n, edges.len());
                    heat.push(render::HeatmapPanel::adjacency(format!("{}: {result}", p.title), n, &edges, axis));
                }
                FigureKind::Weights => {
                    let w = &f.feature_scores().ok_or_else(|| fail("kind = \"weights\": the method returns no feature weights".into()))?.weights;
                    let mut order: Vec<usize> = (0..w.len()).collect();
                    order.sort_by(|&a, &b| w[b].total_cmp(&w[a]).then(a.cmp(&b)));
                    let top: Vec<String> = order.iter().take(2).map(|&r| format!("feature {} = {:.4}", r + 1, w[r])).collect();
                    let rest: f64 = order.iter().skip(2).map(|&r| w[r]).sum();
                    let support = w.iter().filter(|&&v| v > 0.0).count();
                    result = format!("{}; other {} sum to {rest:.2e}; support {support} of {}", top.join(", "), w.len().saturating_sub(2), w.len());
                    let points = w.iter().enumerate().map(|(r, &v)| ((r + 1) as f64, v)).collect();
                    lines.push(render::LinePanel {
                        title: format!("{}: {}", p.title, top.join(", ")),
                        points,
                        x_label: "feature".into(),
                        y_label: "weight".into(),
                        stems: true,
                        marks: vec![],
                    });
                }
                FigureKind::Contingency => {
                    let comps = f.components.as_ref().ok_or_else(|| fail("kind = \"contingency\": the method returns no connected components".into()))?;
                    let labels = data.labels.as_ref().ok_or_else(|| fail("kind = \"contingency\": the data set has no labels".into()))?;
                    let (k, u, counts) = contingency(comps, labels).map_err(fail)?;
                    let (exact, pure) = matching_counts(&counts);
                    result = format!("{k} components; {exact} of {} labels are exactly one component; {pure} components hold one label", u.len());
                    let mut cells = Vec::new();
                    for (c, row) in counts.iter().enumerate() {
                        let size: usize = row.iter().sum();
                        cells.extend(row.iter().enumerate().filter(|(_, &v)| v > 0).map(|(l, &v)| (c, l, v as f64 / size as f64)));
                    }
                    heat.push(render::HeatmapPanel {
                        title: format!("{}: {k} components, {exact} of {} labels exact", p.title, u.len()),
                        rows: k,
                        cols: u.len(),
                        cells,
                        x_label: "label (sorted); shade: share of the component".into(),
                        y_label: "component".into(),
                    });
                    // the table itself, for the summary
                    let mut t = format!(
                        "| component | size | {} |\n|---|---|{}\n",
                        u.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(" | "),
                        "---|".repeat(u.len())
                    );
                    for (c, row) in counts.iter().enumerate() {
                        t += &format!(
                            "| {c} | {} | {} |\n",
                            row.iter().sum::<usize>(),
                            row.iter().map(|v| if *v == 0 { String::new() } else { v.to_string() }).collect::<Vec<_>>().join(" | ")
                        );
                    }
                    extra.push(format!("Components against labels, panel \"{}\" (counts):\n\n{t}", p.title));
                }
                FigureKind::Sensitivity => {
                    let point = sensitivity::point(plan, p, cell, f, &coords, data).map_err(fail)?;
                    result = point.summary();
                    sweep_points.push(point);
                }
                FigureKind::Masks => {
                    let scores = f.feature_scores().ok_or_else(|| fail("kind = \"masks\": the method returns no feature weights".into()))?;
                    let shape = def.image.ok_or_else(|| fail("kind = \"masks\" needs `image`".into()))?;
                    let frames = masks::frames(def.frames.as_deref(), data.x.nrows()).map_err(fail)?;
                    n_frames = frames.len();
                    // the features the protocols would score: n_selected, or the support at 0
                    let m = n_selected(&cell.key.params, scores).min(scores.ranking.len());
                    let (plain, hidden, summary) = masks::panels(&p.title, data, &scores.ranking[..m], &shape, &frames).map_err(fail)?;
                    // a row of the samples as they are, then a row of them masked
                    images.extend(plain);
                    images.extend(hidden);
                    result = summary;
                }
            }
            rows.push(PanelRow {
                // the fits of a sweep share their panel's title: the swept value tells them apart
                title: panel_row_title(p),
                method: p.method.clone(),
                params: panel_row_params(p),
                n: coords.nrows(),
                graph: drawn.as_ref().map(|g| format!("{} edges, {}", g.edges.len(), nonzeros(g.n_vertices, g.edges.len()))).unwrap_or_else(|| "–".into()),
                components: n_comp.map(|c| c.to_string()).unwrap_or_else(|| "–".into()),
                iterations: f.trace.iterations,
                converged: f.trace.converged(),
                seconds: *seconds,
                result,
                notes: f.notes.clone(),
            });
        }
        let (png, svg) = match def.kind {
            FigureKind::Embedding | FigureKind::Graph => render::write_figure(&stem, &def.title, &scatter, def.columns),
            FigureKind::Convergence | FigureKind::Weights => render::write_lines(&stem, &def.title, &lines, def.columns),
            FigureKind::Adjacency | FigureKind::Contingency => render::write_heatmaps(&stem, &def.title, &heat, def.columns),
            FigureKind::Sensitivity => {
                let (panels, tables) = sensitivity::panels(&sweep_points);
                extra.extend(tables);
                // one sweep per row: its three plots side by side
                plots::write_series(&stem, &def.title, &panels, Some(def.columns.unwrap_or(3)))
            }
            FigureKind::Masks => {
                let aspect = def.image.map_or(1.0, |s| s.width as f64 / s.height as f64);
                plots::write_images(&stem, &def.title, &images, Some(def.columns.unwrap_or(n_frames)), aspect)
            }
        }
        .map_err(|e| anyhow::anyhow!("figure {}: {e}", stem.display()))?;
        if !quiet {
            eprintln!("  figure {} ({} panels)", def.name, panels.len());
        }
        md += &figure_section(&def.name, &def.title, &rows, &extra);
        written.push(png);
        written.push(svg);
    }
    let path = out_dir.join("figures.md");
    atomic_write(&path, md.as_bytes())?;
    written.push(path);
    Ok(written)
}
