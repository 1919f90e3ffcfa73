//! Figures: 2-D embeddings coloured by label, one panel per method, as PNG and SVG.
//!
//! Text is drawn with DejaVu Sans embedded in the binary (the `dejavu` crate) through plotters'
//! `ab_glyph` backend, so figures never depend on fonts installed on the machine.

use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// One panel: a title and an N x >=2 embedding (first two columns are drawn).
pub struct Panel {
    pub title: String,
    pub points: Vec<(f64, f64)>,
    /// Optional graph edges (drawn under the points) between `points`, or between `centres`
    /// when those are given.
    pub edges: Vec<(usize, usize)>,
    /// Coordinates of learned graph vertices (drawn as black dots over the points).
    pub centres: Vec<(f64, f64)>,
}

/// How points are coloured.
pub enum Colouring<'a> {
    /// Categorical labels.
    Labels(&'a [i64]),
    /// A continuous value (e.g. position along a manifold), drawn on a blue-to-red scale.
    Continuous(&'a [f64]),
    /// One colour.
    None,
}

/// Registers the embedded fonts with plotters (idempotent).
pub fn register_fonts() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular());
        let _ = plotters::style::register_font("sans-serif", FontStyle::Bold, dejavu::sans::bold());
    });
}

const PALETTE: [RGBColor; 12] = [
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
];

fn colour_of(c: &Colouring, i: usize, label_rank: &std::collections::BTreeMap<i64, usize>, range: (f64, f64)) -> RGBColor {
    match c {
        Colouring::Labels(l) => PALETTE[label_rank[&l[i]] % PALETTE.len()],
        Colouring::Continuous(t) => {
            let f = if range.1 > range.0 { ((t[i] - range.0) / (range.1 - range.0)).clamp(0.0, 1.0) } else { 0.5 };
            RGBColor((40.0 + 215.0 * f) as u8, (60.0 + 80.0 * (1.0 - (2.0 * f - 1.0).abs())) as u8, (255.0 - 215.0 * f) as u8)
        }
        Colouring::None => PALETTE[0],
    }
}

/// Clears `root`, draws the figure title and splits the rest into a grid for `n` panels (at most
/// 4 per row).
fn panel_areas<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, title: &str, n: usize) -> Result<Vec<DrawingArea<DB, Shift>>, String>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let body = root.titled(title, ("sans-serif", 17).into_font().style(FontStyle::Bold)).map_err(|e| e.to_string())?;
    let cols = n.clamp(1, 4);
    Ok(body.split_evenly((n.div_ceil(cols).max(1), cols)))
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, title: &str, panels: &[Panel], colouring: &Colouring) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let areas = panel_areas(&root, title, panels.len())?;
    let mut label_rank = std::collections::BTreeMap::new();
    if let Colouring::Labels(l) = colouring {
        let mut u: Vec<i64> = l.to_vec();
        u.sort_unstable();
        u.dedup();
        for (r, v) in u.into_iter().enumerate() {
            label_rank.insert(v, r);
        }
    }
    let range = match colouring {
        Colouring::Continuous(t) => (t.iter().cloned().fold(f64::INFINITY, f64::min), t.iter().cloned().fold(f64::NEG_INFINITY, f64::max)),
        _ => (0.0, 1.0),
    };
    for (panel, area) in panels.iter().zip(areas.iter()) {
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
        chart.configure_mesh().light_line_style(WHITE.mix(0.0)).label_style(("sans-serif", 11)).x_labels(5).y_labels(5).draw().map_err(|e| e.to_string())?;
        chart
            .draw_series(panel.points.iter().enumerate().map(|(i, &(x, y))| Circle::new((x, y), 2, colour_of(colouring, i, &label_rank, range).filled())))
            .map_err(|e| e.to_string())?;
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

/// Size of a grid of `n` panels of `cell_w` x `cell_h` pixels (at most 4 per row, at least 640 px
/// wide so the title fits), after registering fonts and creating the output directory; returns the
/// size and the PNG / SVG paths of `stem`.
fn canvas(stem: &Path, n: usize, cell_w: u32, cell_h: u32) -> Result<((u32, u32), PathBuf, PathBuf), String> {
    register_fonts();
    if let Some(dir) = stem.parent() {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    let cols = n.clamp(1, 4) as u32;
    let rows = n.div_ceil(cols as usize).max(1) as u32;
    Ok((((cell_w * cols).max(640), cell_h * rows + 40), stem.with_extension("png"), stem.with_extension("svg")))
}

/// Draws the panels to `<stem>.png` and `<stem>.svg`; returns both paths.
pub fn write_figure(stem: &Path, title: &str, panels: &[Panel], colouring: &Colouring) -> Result<(PathBuf, PathBuf), String> {
    let (size, png, svg) = canvas(stem, panels.len(), 360, 340)?;
    draw(BitMapBackend::new(&png, size).into_drawing_area(), title, panels, colouring)?;
    draw(SVGBackend::new(&svg, size).into_drawing_area(), title, panels, colouring)?;
    Ok((png, svg))
}

/// A line panel: `(x, y)` series (e.g. objective against iteration).
pub struct LinePanel {
    pub title: String,
    pub points: Vec<(f64, f64)>,
    pub x_label: String,
    pub y_label: String,
}

fn draw_lines<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, title: &str, panels: &[LinePanel]) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    for (panel, area) in panels.iter().zip(panel_areas(&root, title, panels.len())?.iter()) {
        let xs = panel.points.iter().map(|p| p.0);
        let ys: Vec<f64> = panel.points.iter().map(|p| p.1).collect();
        let x1 = xs.fold(1.0f64, f64::max);
        let finite: Vec<f64> = ys.iter().cloned().filter(|v| v.is_finite()).collect();
        // An empty or non-finite series gets a unit range (plotters loops on NaN ranges).
        let (lo, hi) = if finite.is_empty() { (0.0, 1.0) } else { (finite.iter().cloned().fold(f64::INFINITY, f64::min), finite.iter().cloned().fold(f64::NEG_INFINITY, f64::max)) };
        let w = if (hi - lo).abs() < 1e-12 { 1.0 } else { hi - lo };
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 12))
            .margin(8)
            .x_label_area_size(34)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..x1, (lo - 0.05 * w)..(hi + 0.05 * w))
            .map_err(|e| e.to_string())?;
        chart.configure_mesh().x_desc(&panel.x_label).y_desc(&panel.y_label).label_style(("sans-serif", 11)).draw().map_err(|e| e.to_string())?;
        let pts: Vec<(f64, f64)> = panel.points.iter().cloned().filter(|p| p.1.is_finite()).collect();
        chart.draw_series(LineSeries::new(pts.iter().cloned(), PALETTE[0].stroke_width(2))).map_err(|e| e.to_string())?;
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, PALETTE[1].filled()))).map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())
}

/// Writes line panels to `<stem>.png` and `<stem>.svg`.
pub fn write_lines(stem: &Path, title: &str, panels: &[LinePanel]) -> Result<(PathBuf, PathBuf), String> {
    let (size, png, svg) = canvas(stem, panels.len(), 360, 300)?;
    draw_lines(BitMapBackend::new(&png, size).into_drawing_area(), title, panels)?;
    draw_lines(SVGBackend::new(&svg, size).into_drawing_area(), title, panels)?;
    Ok((png, svg))
}

/// An adjacency-matrix panel: `n` vertices and the (symmetric) edge list.
pub struct AdjacencyPanel {
    pub title: String,
    pub n: usize,
    pub edges: Vec<(usize, usize)>,
}

fn draw_adjacency<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, title: &str, panels: &[AdjacencyPanel]) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    for (panel, area) in panels.iter().zip(panel_areas(&root, title, panels.len())?.iter()) {
        let n = panel.n.max(1) as f64;
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 12))
            .margin(8)
            .x_label_area_size(28)
            .y_label_area_size(44)
            .build_cartesian_2d(0.0..n, n..0.0)
            .map_err(|e| e.to_string())?;
        chart.configure_mesh().disable_mesh().label_style(("sans-serif", 11)).draw().map_err(|e| e.to_string())?;
        let cell = |i: usize, j: usize| Rectangle::new([(i as f64, j as f64), (i as f64 + 1.0, j as f64 + 1.0)], BLACK.filled());
        chart.draw_series(panel.edges.iter().flat_map(|&(i, j)| [cell(i, j), cell(j, i)])).map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())
}

/// Writes adjacency panels to `<stem>.png` and `<stem>.svg`.
pub fn write_adjacency(stem: &Path, title: &str, panels: &[AdjacencyPanel]) -> Result<(PathBuf, PathBuf), String> {
    let (size, png, svg) = canvas(stem, panels.len(), 360, 380)?;
    draw_adjacency(BitMapBackend::new(&png, size).into_drawing_area(), title, panels)?;
    draw_adjacency(SVGBackend::new(&svg, size).into_drawing_area(), title, panels)?;
    Ok((png, svg))
}
