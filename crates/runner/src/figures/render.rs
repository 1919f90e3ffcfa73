//! Figures as PNG and SVG: 2-D scatter panels (embeddings, graphs) coloured per panel, line or
//! stem panels (objective histories, feature weights) and heat-map panels (adjacency matrices,
//! contingency tables).
//!
//! Text is drawn with DejaVu Sans embedded in the binary (the `dejavu` crate) through plotters'
//! `ab_glyph` backend, so figures never depend on fonts installed on the machine.

use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// One panel: a title and an N x >=2 embedding (first two columns are drawn).
pub struct Panel {
    /// Caption above the panel.
    pub title: String,
    /// Position `(x, y)` of every point (e.g. an embedding's first two coordinates).
    pub points: Vec<(f64, f64)>,
    /// Optional graph edges (drawn under the points) between `points`, or between `centres`
    /// when those are given.
    pub edges: Vec<(usize, usize)>,
    /// Coordinates of learned graph vertices (drawn as black dots over the points).
    pub centres: Vec<(f64, f64)>,
    /// Colour of every point.
    pub colouring: Colouring,
}

/// How the points of a panel are coloured.
#[derive(Debug, Clone)]
pub enum Colouring {
    /// Categorical labels (e.g. classes or learned components), one per point.
    Labels(Vec<i64>),
    /// A continuous value per point (e.g. position along a manifold), on a blue-to-red scale.
    Continuous(Vec<f64>),
    /// One colour.
    None,
}

/// An axis tick label: 4 significant digits, scientific notation below 1e-3 and from 1e5 on (so
/// embeddings of tiny scale get distinct ticks rather than "0.0" and "-0.0").
fn tick(v: &f64) -> String {
    let a = v.abs();
    if a < 1e-12 {
        "0".into()
    } else if !(1e-3..1e5).contains(&a) {
        format!("{v:.1e}")
    } else {
        let s = format!("{:.*}", (3 - a.log10().floor() as i64).max(0) as usize, v);
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }
}

/// Registers the embedded fonts with plotters (idempotent).
pub fn register_fonts() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular());
        let _ = plotters::style::register_font("sans-serif", FontStyle::Bold, dejavu::sans::bold());
    });
}

/// Categorical colours (tab10, navy, olive, then lighter tab20 tones): 20 distinct classes.
const PALETTE: [RGBColor; 20] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 128),
    RGBColor(128, 128, 0),
    RGBColor(174, 199, 232),
    RGBColor(255, 187, 120),
    RGBColor(152, 223, 138),
    RGBColor(255, 152, 150),
    RGBColor(197, 176, 213),
    RGBColor(196, 156, 148),
    RGBColor(247, 182, 210),
    RGBColor(0, 0, 0),
];

impl Colouring {
    /// The colour of every point: labels by their rank among the distinct labels, continuous
    /// values on a blue-to-red scale over their range.
    fn colours(&self, n: usize) -> Vec<RGBColor> {
        match self {
            Colouring::Labels(l) => {
                let mut u: Vec<i64> = l.to_vec();
                u.sort_unstable();
                u.dedup();
                l.iter().map(|v| PALETTE[u.binary_search(v).unwrap_or(0) % PALETTE.len()]).collect()
            }
            Colouring::Continuous(t) => {
                let lo = t.iter().cloned().fold(f64::INFINITY, f64::min);
                let hi = t.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                t.iter()
                    .map(|&v| {
                        let f = if hi > lo { ((v - lo) / (hi - lo)).clamp(0.0, 1.0) } else { 0.5 };
                        RGBColor((40.0 + 215.0 * f) as u8, (60.0 + 80.0 * (1.0 - (2.0 * f - 1.0).abs())) as u8, (255.0 - 215.0 * f) as u8)
                    })
                    .collect()
            }
            Colouring::None => vec![PALETTE[0]; n],
        }
    }
}

/// Panels per row of a grid of `n` panels: `requested` (at least 1), else at most 4.
fn columns(n: usize, requested: Option<usize>) -> usize {
    requested.unwrap_or(4).max(1).min(n.max(1))
}

/// Clears `root`, draws the figure title and splits the rest into a grid for `n` panels, `cols`
/// per row.
fn panel_areas<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, title: &str, n: usize, cols: usize) -> Result<Vec<DrawingArea<DB, Shift>>, String>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let body = root.titled(title, ("sans-serif", 17).into_font().style(FontStyle::Bold)).map_err(|e| e.to_string())?;
    Ok(body.split_evenly((n.div_ceil(cols).max(1), cols)))
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, title: &str, panels: &[Panel], cols: usize) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let areas = panel_areas(&root, title, panels.len(), cols)?;
    for (panel, area) in panels.iter().zip(areas.iter()) {
        let colours = panel.colouring.colours(panel.points.len());
        let (xs, ys): (Vec<f64>, Vec<f64>) = panel.points.iter().chain(panel.centres.iter()).cloned().unzip();
        let vertices = if panel.centres.is_empty() { &panel.points } else { &panel.centres };
        let pad = |v: &[f64]| {
            let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
            let hi = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let w = if (hi - lo).abs() < 1e-12 { 1.0 } else { hi - lo };
            (lo - 0.05 * w, hi + 0.05 * w)
        };
        let (x0, x1) = if xs.is_empty() { (0.0, 1.0) } else { pad(&xs) };
        let (y0, y1) = if ys.is_empty() { (0.0, 1.0) } else { pad(&ys) };
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 12))
            .margin(8)
            .x_label_area_size(28)
            .y_label_area_size(44)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .light_line_style(WHITE.mix(0.0))
            .label_style(("sans-serif", 11))
            .x_labels(5)
            .y_labels(5)
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .draw()
            .map_err(|e| e.to_string())?;
        chart.draw_series(panel.points.iter().zip(&colours).map(|(&(x, y), c)| Circle::new((x, y), 2, c.filled()))).map_err(|e| e.to_string())?;
        // Large graphs: thin edges and no vertex dots, so the coloured points stay visible.
        let large = vertices.len() > 300;
        let edge_style = if panel.centres.is_empty() || large { BLACK.mix(0.7).stroke_width(1) } else { BLACK.stroke_width(2) };
        chart.draw_series(panel.edges.iter().map(|&(i, j)| PathElement::new(vec![vertices[i], vertices[j]], edge_style))).map_err(|e| e.to_string())?;
        if !large {
            chart.draw_series(panel.centres.iter().map(|&c| Circle::new(c, 3, BLACK.filled()))).map_err(|e| e.to_string())?;
        }
    }
    root.present().map_err(|e| e.to_string())
}

/// Size of a grid of `n` panels of `cell_w` x `cell_h` pixels, `cols` per row (at least 640 px
/// wide and wide enough for `title`), after registering fonts and creating the output directory; returns the
/// size and the PNG / SVG paths of `stem`.
fn canvas(stem: &Path, title: &str, n: usize, cols: usize, cell_w: u32, cell_h: u32) -> Result<((u32, u32), PathBuf, PathBuf), String> {
    register_fonts();
    if let Some(dir) = stem.parent() {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    let rows = n.div_ceil(cols).max(1) as u32;
    // about 9 px per character of the 17 px bold title
    let title_w = 9 * title.chars().count() as u32 + 40;
    Ok((((cell_w * cols as u32).max(640).max(title_w), cell_h * rows + 40), stem.with_extension("png"), stem.with_extension("svg")))
}

/// Draws the panels to `<stem>.png` and `<stem>.svg`, `columns_per_row` per row (default at
/// most 4); returns both paths.
pub fn write_figure(stem: &Path, title: &str, panels: &[Panel], columns_per_row: Option<usize>) -> Result<(PathBuf, PathBuf), String> {
    let cols = columns(panels.len(), columns_per_row);
    let (size, png, svg) = canvas(stem, title, panels.len(), cols, 360, 340)?;
    draw(BitMapBackend::new(&png, size).into_drawing_area(), title, panels, cols)?;
    draw(SVGBackend::new(&svg, size).into_drawing_area(), title, panels, cols)?;
    Ok((png, svg))
}

/// A line panel: `(x, y)` series (e.g. objective against iteration), or stems from 0 to every
/// value (e.g. one weight per feature).
pub struct LinePanel {
    /// Caption above the panel.
    pub title: String,
    /// The `(x, y)` points of the series, in drawing order; non-finite `y` values are skipped.
    pub points: Vec<(f64, f64)>,
    /// Label of the x axis (e.g. "iteration" or "feature").
    pub x_label: String,
    /// Label of the y axis (e.g. "objective" or "weight").
    pub y_label: String,
    /// Draw a stem from `y = 0` to each point (non-zero values also get a dot) instead of a line.
    pub stems: bool,
}

fn draw_lines<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, title: &str, panels: &[LinePanel], cols: usize) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    for (panel, area) in panels.iter().zip(panel_areas(&root, title, panels.len(), cols)?.iter()) {
        let xs = panel.points.iter().map(|p| p.0);
        let ys: Vec<f64> = panel.points.iter().map(|p| p.1).collect();
        let x1 = xs.fold(1.0f64, f64::max);
        let finite: Vec<f64> = ys.iter().cloned().filter(|v| v.is_finite()).collect();
        // An empty or non-finite series gets a unit range (plotters loops on NaN ranges).
        let (mut lo, mut hi) = if finite.is_empty() {
            (0.0, 1.0)
        } else {
            (finite.iter().cloned().fold(f64::INFINITY, f64::min), finite.iter().cloned().fold(f64::NEG_INFINITY, f64::max))
        };
        if panel.stems {
            (lo, hi) = (lo.min(0.0), hi.max(0.0));
        }
        let w = if (hi - lo).abs() < 1e-12 { 1.0 } else { hi - lo };
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 12))
            .margin(8)
            .x_label_area_size(34)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..x1, (lo - 0.05 * w)..(hi + 0.05 * w))
            .map_err(|e| e.to_string())?;
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(&panel.x_label).y_desc(&panel.y_label).label_style(("sans-serif", 11)).x_label_formatter(&tick).y_label_formatter(&tick);
        if panel.stems {
            mesh.light_line_style(WHITE.mix(0.0));
        }
        mesh.draw().map_err(|e| e.to_string())?;
        let pts: Vec<(f64, f64)> = panel.points.iter().cloned().filter(|p| p.1.is_finite()).collect();
        if panel.stems {
            let nonzero: Vec<(f64, f64)> = pts.iter().cloned().filter(|p| p.1 != 0.0).collect();
            chart.draw_series(LineSeries::new([(0.0, 0.0), (x1, 0.0)], BLACK.mix(0.5).stroke_width(1))).map_err(|e| e.to_string())?;
            chart.draw_series(nonzero.iter().map(|&(x, y)| PathElement::new(vec![(x, 0.0), (x, y)], PALETTE[0].stroke_width(2)))).map_err(|e| e.to_string())?;
            chart.draw_series(nonzero.iter().map(|&p| Circle::new(p, 3, PALETTE[1].filled()))).map_err(|e| e.to_string())?;
            // The largest values, listed in the upper right (stems of neighbouring x overlap).
            let mut top = nonzero.clone();
            top.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()).then(a.0.total_cmp(&b.0)));
            let more = top.len().saturating_sub(5);
            let mut text: Vec<String> = top.iter().take(5).map(|&(x, y)| format!("{} {}: {y:.4}", panel.x_label, tick(&x))).collect();
            if more > 0 {
                text.push(format!("({more} more non-zero)"));
            }
            if nonzero.is_empty() {
                text.push("all zero".into());
            }
            chart
                .draw_series(
                    text.iter()
                        .enumerate()
                        .map(|(k, t)| Text::new(t.clone(), (0.55 * x1, hi + 0.05 * w - (0.08 * k as f64 + 0.04) * (w * 1.1)), ("sans-serif", 12))),
                )
                .map_err(|e| e.to_string())?;
        } else {
            chart.draw_series(LineSeries::new(pts.iter().cloned(), PALETTE[0].stroke_width(2))).map_err(|e| e.to_string())?;
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, PALETTE[1].filled()))).map_err(|e| e.to_string())?;
        }
    }
    root.present().map_err(|e| e.to_string())
}

/// Writes line panels to `<stem>.png` and `<stem>.svg`.
pub fn write_lines(stem: &Path, title: &str, panels: &[LinePanel], columns_per_row: Option<usize>) -> Result<(PathBuf, PathBuf), String> {
    let cols = columns(panels.len(), columns_per_row);
    let (size, png, svg) = canvas(stem, title, panels.len(), cols, 360, 300)?;
    draw_lines(BitMapBackend::new(&png, size).into_drawing_area(), title, panels, cols)?;
    draw_lines(SVGBackend::new(&svg, size).into_drawing_area(), title, panels, cols)?;
    Ok((png, svg))
}

/// A heat-map panel: a `rows` x `cols` matrix given by its non-zero cells `(row, col, value)`,
/// value in `[0, 1]` drawn from white (0) to black (1). Adjacency matrices are 0/1 heat maps.
pub struct HeatmapPanel {
    /// Caption above the panel.
    pub title: String,
    /// Number of matrix rows (drawn top to bottom).
    pub rows: usize,
    /// Number of matrix columns (drawn left to right).
    pub cols: usize,
    /// Non-zero cells `(row, col, value)`, value in `[0, 1]`; cells with value <= 0 are not drawn.
    pub cells: Vec<(usize, usize, f64)>,
    /// Label of the x axis (columns); empty for none.
    pub x_label: String,
    /// Label of the y axis (rows); empty for none.
    pub y_label: String,
}

impl HeatmapPanel {
    /// The 0/1 adjacency matrix of an undirected graph on `n` vertices (both `(i, j)` and `(j, i)`).
    pub fn adjacency(title: String, n: usize, edges: &[(usize, usize)]) -> HeatmapPanel {
        let cells = edges.iter().flat_map(|&(i, j)| [(i, j, 1.0), (j, i, 1.0)]).collect();
        HeatmapPanel { title, rows: n, cols: n, cells, x_label: String::new(), y_label: String::new() }
    }
}

fn draw_heatmaps<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, title: &str, panels: &[HeatmapPanel], cols: usize) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    for (panel, area) in panels.iter().zip(panel_areas(&root, title, panels.len(), cols)?.iter()) {
        let (r, c) = (panel.rows.max(1) as f64, panel.cols.max(1) as f64);
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 12))
            .margin(8)
            .x_label_area_size(if panel.x_label.is_empty() { 28 } else { 40 })
            .y_label_area_size(if panel.y_label.is_empty() { 44 } else { 56 })
            .build_cartesian_2d(0.0..c, r..0.0)
            .map_err(|e| e.to_string())?;
        let whole = |v: &f64| format!("{v:.0}");
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(&panel.x_label)
            .y_desc(&panel.y_label)
            .x_label_formatter(&whole)
            .y_label_formatter(&whole)
            .label_style(("sans-serif", 11))
            .draw()
            .map_err(|e| e.to_string())?;
        let shade = |v: f64| {
            let g = (255.0 * (1.0 - v.clamp(0.0, 1.0))) as u8;
            RGBColor(g, g, g)
        };
        chart
            .draw_series(
                panel
                    .cells
                    .iter()
                    .filter(|c| c.2 > 0.0)
                    .map(|&(i, j, v)| Rectangle::new([(j as f64, i as f64), (j as f64 + 1.0, i as f64 + 1.0)], shade(v).filled())),
            )
            .map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())
}

/// Writes heat-map panels (adjacency matrices, contingency tables) to `<stem>.png` and `<stem>.svg`.
pub fn write_heatmaps(stem: &Path, title: &str, panels: &[HeatmapPanel], columns_per_row: Option<usize>) -> Result<(PathBuf, PathBuf), String> {
    let cols = columns(panels.len(), columns_per_row);
    let (size, png, svg) = canvas(stem, title, panels.len(), cols, 360, 380)?;
    draw_heatmaps(BitMapBackend::new(&png, size).into_drawing_area(), title, panels, cols)?;
    draw_heatmaps(SVGBackend::new(&svg, size).into_drawing_area(), title, panels, cols)?;
    Ok((png, svg))
}
