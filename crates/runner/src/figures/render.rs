//! Figures as PNG and SVG: 2-D scatter panels (embeddings, graphs), line or stem panels
//! (objective histories, feature weights) and heat-map panels (adjacency matrices, contingency
//! tables).
//!
//! Every figure is laid out once in *figure units* and drawn twice: to the SVG at scale 1 and to
//! the PNG at scale [`PNG_SCALE`] (2: twice the SVG's pixel size, every font, margin, marker and
//! stroke doubled), so both show the same figure. Points coloured by class or by a continuous
//! value get a legend under the panels (one per colouring, shared by the panels; a class has the
//! same colour in every panel). Axes are labelled, there are no grid lines, and parameter names
//! the papers write in Greek are drawn in Greek ([`greek`]).
//!
//! Text is drawn with DejaVu Sans embedded in the binary (the `dejavu` crate), laid out by
//! [`text::GlyphText`], so figures never depend on fonts installed on the machine.

use super::text::{self, greek, GlyphText};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};

/// Pixel scale of the PNG against the SVG (and against the figure units every size is given in).
pub const PNG_SCALE: f64 = 2.0;

/// Font sizes in figure units (plotters' sizes: an em is `size / 1.24` px).
pub(super) const TITLE_FONT: f64 = 20.0;
pub(super) const CAPTION_FONT: f64 = 16.0;
pub(super) const TICK_FONT: f64 = 14.0;
const AXIS_FONT: f64 = 15.0;
const LEGEND_FONT: f64 = 15.0;
/// Height of one legend line, figure units.
const LEGEND_LINE: u32 = 24;

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
    /// Labels of the x and y axes (e.g. "coordinate 1", "coordinate 2").
    pub axes: (String, String),
}

/// How the points of a panel are coloured.
#[derive(Debug, Clone)]
pub enum Colouring {
    /// Categorical labels (e.g. classes or learned components).
    Labels {
        /// One label per point.
        values: Vec<i64>,
        /// What the labels are, for the legend ("class", "learned component").
        name: String,
    },
    /// A continuous value per point (e.g. position along a manifold) on a blue-to-red scale.
    Continuous {
        /// One value per point.
        values: Vec<f64>,
        /// What the value is, for the legend's colour bar.
        name: String,
    },
    /// One colour.
    None,
}

/// An axis tick label: 4 significant digits, scientific notation below 1e-3 and from 1e5 on (so
/// embeddings of tiny scale get distinct ticks rather than "0.0" and "-0.0").
pub(super) fn tick(v: &f64) -> String {
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
pub(super) const PALETTE: [RGBColor; 20] = [
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

/// The blue (f = 0) to red (f = 1) scale of continuous colourings.
fn ramp(f: f64) -> RGBColor {
    let f = f.clamp(0.0, 1.0);
    RGBColor((40.0 + 215.0 * f) as u8, (60.0 + 80.0 * (1.0 - (2.0 * f - 1.0).abs())) as u8, (255.0 - 215.0 * f) as u8)
}

/// A figure's key to its colours: every colouring of its panels with one name shares one entry.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Legend {
    /// The distinct labels over all panels, sorted; label `l` has colour `PALETTE[rank of l]`.
    Classes { name: String, labels: Vec<i64> },
    /// The range of the values over all panels, mapped onto [`ramp`].
    Scale { name: String, lo: f64, hi: f64 },
}

/// The legends of `colourings`: one per distinct (kind, name).
fn legends<'a>(colourings: impl Iterator<Item = &'a Colouring>) -> Vec<Legend> {
    let mut out: Vec<Legend> = Vec::new();
    for c in colourings {
        match c {
            Colouring::Labels { values, name } => {
                let at = out.iter().position(|l| matches!(l, Legend::Classes { name: n, .. } if n == name));
                let i = at.unwrap_or_else(|| {
                    out.push(Legend::Classes { name: name.clone(), labels: vec![] });
                    out.len() - 1
                });
                if let Legend::Classes { labels, .. } = &mut out[i] {
                    labels.extend(values.iter().copied());
                    labels.sort_unstable();
                    labels.dedup();
                }
            }
            Colouring::Continuous { values, name } => {
                let (lo, hi) = values.iter().filter(|v| v.is_finite()).fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
                if lo > hi {
                    continue;
                }
                match out.iter_mut().find(|l| matches!(l, Legend::Scale { name: n, .. } if n == name)) {
                    Some(Legend::Scale { lo: l, hi: h, .. }) => (*l, *h) = (l.min(lo), h.max(hi)),
                    _ => out.push(Legend::Scale { name: name.clone(), lo, hi }),
                }
            }
            Colouring::None => {}
        }
    }
    out
}

impl Colouring {
    /// The colour of every point under the figure's `legends`: labels by their rank among all
    /// the figure's labels of that name, continuous values on [`ramp`] over the figure's range.
    fn colours(&self, n: usize, legends: &[Legend]) -> Vec<RGBColor> {
        match self {
            Colouring::Labels { values, name } => {
                let all = legends.iter().find_map(|l| match l {
                    Legend::Classes { name: n, labels } if n == name => Some(labels),
                    _ => None,
                });
                values.iter().map(|v| PALETTE[all.and_then(|a| a.binary_search(v).ok()).unwrap_or(0) % PALETTE.len()]).collect()
            }
            Colouring::Continuous { values, name } => {
                let (lo, hi) = legends
                    .iter()
                    .find_map(|l| match l {
                        Legend::Scale { name: n, lo, hi } if n == name => Some((*lo, *hi)),
                        _ => None,
                    })
                    .unwrap_or((0.0, 1.0));
                values.iter().map(|&v| ramp(if hi > lo { (v - lo) / (hi - lo) } else { 0.5 })).collect()
            }
            Colouring::None => vec![PALETTE[0]; n],
        }
    }
}

/// Classes listed in a legend; more get a note that colours repeat.
const LEGEND_MAX_CLASSES: usize = 20;

/// One drawn piece of a legend line, with its width in figure units.
#[derive(Debug, Clone)]
enum LegendItem {
    /// Text (a legend's name, a colour bar's end values, a note).
    Text(String),
    /// A class marker and its label.
    Swatch(RGBColor, String),
    /// A colour bar of [`ramp`].
    Bar,
}

const SWATCH_GAP: u32 = 18;
const BAR_WIDTH: u32 = 160;

impl LegendItem {
    fn width(&self) -> u32 {
        match self {
            LegendItem::Text(t) => text::text_size(t, LEGEND_FONT, false).0 + 10,
            LegendItem::Swatch(_, t) => SWATCH_GAP + text::text_size(t, LEGEND_FONT, false).0 + 14,
            LegendItem::Bar => BAR_WIDTH + 10,
        }
    }
}

/// The legend lines of a figure `width` figure units wide: each legend starts a line with its
/// name; items wrap onto further lines.
fn legend_lines(legends: &[Legend], width: u32) -> Vec<Vec<LegendItem>> {
    let mut lines = Vec::new();
    for l in legends {
        let items: Vec<LegendItem> = match l {
            Legend::Classes { name, labels } => {
                let mut v = vec![LegendItem::Text(format!("{}:", greek(name)))];
                v.extend(labels.iter().take(LEGEND_MAX_CLASSES).enumerate().map(|(k, l)| LegendItem::Swatch(PALETTE[k % PALETTE.len()], l.to_string())));
                if labels.len() > LEGEND_MAX_CLASSES {
                    v.push(LegendItem::Text(format!("... {} in all; colours repeat after {LEGEND_MAX_CLASSES}", labels.len())));
                }
                v
            }
            Legend::Scale { name, lo, hi } => {
                vec![LegendItem::Text(format!("{}:", greek(name))), LegendItem::Text(tick(lo)), LegendItem::Bar, LegendItem::Text(tick(hi))]
            }
        };
        let mut line: Vec<LegendItem> = Vec::new();
        let mut used = 0;
        for it in items {
            let w = it.width();
            if !line.is_empty() && used + w > width.saturating_sub(40) {
                lines.push(std::mem::take(&mut line));
                used = 0;
            }
            used += w;
            line.push(it);
        }
        if !line.is_empty() {
            lines.push(line);
        }
    }
    lines
}

/// Draws the legend `lines` into `area` (its top left at the figure's left margin), every size
/// times `s`.
fn draw_legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, lines: &[Vec<LegendItem>], s: f64) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let px = |v: f64| (v * s).round() as i32;
    let font = ("sans-serif", LEGEND_FONT * s).into_font().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
    for (row, line) in lines.iter().enumerate() {
        let y = px(LEGEND_LINE as f64 * (row as f64 + 0.5) + 4.0);
        let mut x = 20.0;
        for it in line {
            match it {
                LegendItem::Text(t) => {
                    area.draw(&Text::new(t.clone(), (px(x), y), font.clone())).map_err(|e| e.to_string())?;
                }
                LegendItem::Swatch(c, t) => {
                    area.draw(&Circle::new((px(x + 6.0), y), px(5.0) as u32, c.filled())).map_err(|e| e.to_string())?;
                    area.draw(&Text::new(t.clone(), (px(x + SWATCH_GAP as f64), y), font.clone())).map_err(|e| e.to_string())?;
                }
                LegendItem::Bar => {
                    let steps = 64;
                    for k in 0..steps {
                        let (a, b) = (x + BAR_WIDTH as f64 * k as f64 / steps as f64, x + BAR_WIDTH as f64 * (k + 1) as f64 / steps as f64);
                        area.draw(&Rectangle::new([(px(a), y - px(6.0)), (px(b), y + px(6.0))], ramp((k as f64 + 0.5) / steps as f64).filled()))
                            .map_err(|e| e.to_string())?;
                    }
                }
            }
            x += it.width() as f64;
        }
    }
    Ok(())
}

/// Panels per row of a grid of `n` panels: `requested` (at least 1), else at most 4.
pub(super) fn columns(n: usize, requested: Option<usize>) -> usize {
    requested.unwrap_or(4).max(1).min(n.max(1))
}

/// A figure's geometry in figure units: panel grid, title band and legend lines.
pub(super) struct Layout {
    width: u32,
    height: u32,
    rows: usize,
    cols: usize,
    cell_w: u32,
    legend: Vec<Vec<LegendItem>>,
}

/// Title band height, figure units.
const TITLE_BAND: u32 = 44;

impl Layout {
    /// A grid of `n` panels of `cell_w` x `cell_h`, `cols` per row, at least 640 wide and wide
    /// enough for `title`, with the legend lines of `legends` under it.
    pub(super) fn new(title: &str, n: usize, cols: usize, cell_w: u32, cell_h: u32, legends: &[Legend]) -> Layout {
        let rows = n.div_ceil(cols).max(1);
        let title_w = text::text_size(&greek(title), TITLE_FONT, true).0 + 40;
        let width = (cell_w * cols as u32).max(640).max(title_w);
        let legend = legend_lines(legends, width);
        let legend_h = if legend.is_empty() { 0 } else { LEGEND_LINE * legend.len() as u32 + 12 };
        Layout { width, height: TITLE_BAND + cell_h * rows as u32 + legend_h, rows, cols, cell_w, legend }
    }

    /// Clears `root`, draws the figure title and the legend, and splits the rest into the panel
    /// grid; every size times `s`.
    pub(super) fn areas<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, title: &str, s: f64) -> Result<Vec<DrawingArea<DB, Shift>>, String>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let legend_h = if self.legend.is_empty() { 0 } else { LEGEND_LINE * self.legend.len() as u32 + 12 };
        let (body, legend) = root.split_vertically(((self.height - legend_h) as f64 * s).round() as i32);
        draw_legend(&legend, &self.legend, s)?;
        let (band, grid) = body.split_vertically((TITLE_BAND as f64 * s).round() as i32);
        band.draw(&Text::new(
            greek(title),
            ((self.width as f64 * s / 2.0).round() as i32, (TITLE_BAND as f64 * s / 2.0).round() as i32),
            ("sans-serif", TITLE_FONT * s).into_font().style(FontStyle::Bold).color(&BLACK).pos(Pos::new(HPos::Center, VPos::Center)),
        ))
        .map_err(|e| e.to_string())?;
        Ok(grid.split_evenly((self.rows, self.cols)))
    }

    /// The caption font size (figure units) of `caption` in a panel: [`CAPTION_FONT`], smaller
    /// (down to 10) when the caption would not fit the panel's width.
    pub(super) fn caption_font(&self, caption: &str) -> f64 {
        let w = text::text_size(caption, CAPTION_FONT, false).0 as f64;
        let room = self.cell_w as f64 - 16.0;
        if w <= room {
            CAPTION_FONT
        } else {
            (CAPTION_FONT * room / w).max(10.0)
        }
    }

    /// Pixel size at scale `s`.
    fn size(&self, s: f64) -> (u32, u32) {
        ((self.width as f64 * s).round() as u32, (self.height as f64 * s).round() as u32)
    }
}

/// Registers the fonts, creates `stem`'s directory and draws the figure twice with `draw`: to
/// `<stem>.svg` at scale 1 and to `<stem>.png` at [`PNG_SCALE`]; returns both paths.
pub(super) fn write_both(
    stem: &Path,
    layout: &Layout,
    draw: impl Fn(DrawingArea<GlyphText<BitMapBackend>, Shift>, f64) -> Result<(), String>,
    draw_svg: impl Fn(DrawingArea<GlyphText<SVGBackend>, Shift>, f64) -> Result<(), String>,
) -> Result<(PathBuf, PathBuf), String> {
    register_fonts();
    if let Some(dir) = stem.parent() {
        std::fs::create_dir_all(dir).map_err(|e| crate::files::path_error("create", dir, e).to_string())?;
    }
    let (png, svg) = (stem.with_extension("png"), stem.with_extension("svg"));
    // the backends write the files themselves; their errors do not say which file
    draw(GlyphText::raster(BitMapBackend::new(&png, layout.size(PNG_SCALE))).into_drawing_area(), PNG_SCALE)
        .map_err(|e| format!("cannot draw {}: {e}", png.display()))?;
    draw_svg(GlyphText::vector(SVGBackend::new(&svg, layout.size(1.0))).into_drawing_area(), 1.0).map_err(|e| format!("cannot draw {}: {e}", svg.display()))?;
    Ok((png, svg))
}

/// Axis styling shared by every panel kind at scale `s`: no grid lines, labelled axes, ticks
/// and tick labels sized for the saved figure.
pub(super) fn style_mesh<'a, 'b, X, Y, DB>(mesh: &mut plotters::chart::MeshStyle<'a, 'b, X, Y, DB>, s: f64, x_desc: &str, y_desc: &str)
where
    X: plotters::coord::ranged1d::Ranged<ValueType = f64> + plotters::coord::ranged1d::ValueFormatter<f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64> + plotters::coord::ranged1d::ValueFormatter<f64>,
    DB: DrawingBackend,
{
    mesh.disable_mesh()
        .axis_style(BLACK.stroke_width(s.round() as u32))
        .set_all_tick_mark_size((5.0 * s).round() as i32)
        .label_style(("sans-serif", TICK_FONT * s))
        .axis_desc_style(("sans-serif", AXIS_FONT * s))
        .x_desc(greek(x_desc))
        .y_desc(greek(y_desc))
        .x_labels(5)
        .y_labels(5);
}

fn draw_scatter<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, layout: &Layout, title: &str, panels: &[Panel], s: f64) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let px = |v: f64| (v * s).round() as u32;
    let legends = legends(panels.iter().map(|p| &p.colouring));
    for (panel, area) in panels.iter().zip(layout.areas(&root, title, s)?.iter()) {
        let colours = panel.colouring.colours(panel.points.len(), &legends);
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
        let caption = greek(&panel.title);
        let mut chart = ChartBuilder::on(area)
            .caption(&caption, ("sans-serif", layout.caption_font(&caption) * s))
            .margin(px(8.0))
            .margin_right(px(26.0))
            .x_label_area_size(px(46.0))
            .y_label_area_size(px(66.0))
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| e.to_string())?;
        let mut mesh = chart.configure_mesh();
        style_mesh(&mut mesh, s, &panel.axes.0, &panel.axes.1);
        mesh.x_label_formatter(&tick).y_label_formatter(&tick).draw().map_err(|e| e.to_string())?;
        chart.draw_series(panel.points.iter().zip(&colours).map(|(&(x, y), c)| Circle::new((x, y), px(2.5), c.filled()))).map_err(|e| e.to_string())?;
        // Large graphs: thin edges and no vertex dots, so the coloured points stay visible;
        // centres without edges (principal points, e.g. SCMS) are the whole output: always drawn.
        let large = vertices.len() > 300;
        let edge_style = if panel.centres.is_empty() || large { BLACK.mix(0.7).stroke_width(px(1.0)) } else { BLACK.stroke_width(px(2.0)) };
        chart.draw_series(panel.edges.iter().map(|&(i, j)| PathElement::new(vec![vertices[i], vertices[j]], edge_style))).map_err(|e| e.to_string())?;
        if !large || panel.edges.is_empty() {
            let radius = if large { 2.0 } else { 3.0 };
            chart.draw_series(panel.centres.iter().map(|&c| Circle::new(c, px(radius), BLACK.filled()))).map_err(|e| e.to_string())?;
        }
    }
    root.present().map_err(|e| e.to_string())
}

/// Draws the panels to `<stem>.png` and `<stem>.svg`, `columns_per_row` per row (default at
/// most 4); returns both paths.
pub fn write_figure(stem: &Path, title: &str, panels: &[Panel], columns_per_row: Option<usize>) -> Result<(PathBuf, PathBuf), String> {
    let cols = columns(panels.len(), columns_per_row);
    let layout = Layout::new(title, panels.len(), cols, 380, 370, &legends(panels.iter().map(|p| &p.colouring)));
    write_both(stem, &layout, |root, s| draw_scatter(root, &layout, title, panels, s), |root, s| draw_scatter(root, &layout, title, panels, s))
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
    /// Points to flag (e.g. runs with a regression): drawn as larger red rings over the series.
    pub marks: Vec<(f64, f64)>,
}

fn draw_lines<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, layout: &Layout, title: &str, panels: &[LinePanel], s: f64) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let px = |v: f64| (v * s).round() as u32;
    for (panel, area) in panels.iter().zip(layout.areas(&root, title, s)?.iter()) {
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
        let caption = greek(&panel.title);
        let mut chart = ChartBuilder::on(area)
            .caption(&caption, ("sans-serif", layout.caption_font(&caption) * s))
            .margin(px(8.0))
            .margin_right(px(26.0))
            .x_label_area_size(px(46.0))
            .y_label_area_size(px(76.0))
            .build_cartesian_2d(0.0..x1, (lo - 0.05 * w)..(hi + 0.05 * w))
            .map_err(|e| e.to_string())?;
        let mut mesh = chart.configure_mesh();
        style_mesh(&mut mesh, s, &panel.x_label, &panel.y_label);
        mesh.x_label_formatter(&tick).y_label_formatter(&tick).draw().map_err(|e| e.to_string())?;
        let pts: Vec<(f64, f64)> = panel.points.iter().cloned().filter(|p| p.1.is_finite()).collect();
        if panel.stems {
            let nonzero: Vec<(f64, f64)> = pts.iter().cloned().filter(|p| p.1 != 0.0).collect();
            chart.draw_series(LineSeries::new([(0.0, 0.0), (x1, 0.0)], BLACK.mix(0.5).stroke_width(px(1.0)))).map_err(|e| e.to_string())?;
            chart
                .draw_series(nonzero.iter().map(|&(x, y)| PathElement::new(vec![(x, 0.0), (x, y)], PALETTE[0].stroke_width(px(2.0)))))
                .map_err(|e| e.to_string())?;
            chart.draw_series(nonzero.iter().map(|&p| Circle::new(p, px(3.0), PALETTE[1].filled()))).map_err(|e| e.to_string())?;
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
                        .map(|(k, t)| Text::new(t.clone(), (0.5 * x1, hi + 0.05 * w - (0.08 * k as f64 + 0.04) * (w * 1.1)), ("sans-serif", TICK_FONT * s))),
                )
                .map_err(|e| e.to_string())?;
        } else {
            chart.draw_series(LineSeries::new(pts.iter().cloned(), PALETTE[0].stroke_width(px(2.0)))).map_err(|e| e.to_string())?;
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, px(3.0), PALETTE[1].filled()))).map_err(|e| e.to_string())?;
        }
        let red = RGBColor(214, 39, 40);
        chart.draw_series(panel.marks.iter().map(|&p| Circle::new(p, px(7.0), red.stroke_width(px(2.0))))).map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())
}

/// Writes line panels to `<stem>.png` and `<stem>.svg`.
pub fn write_lines(stem: &Path, title: &str, panels: &[LinePanel], columns_per_row: Option<usize>) -> Result<(PathBuf, PathBuf), String> {
    let cols = columns(panels.len(), columns_per_row);
    let layout = Layout::new(title, panels.len(), cols, 380, 330, &[]);
    write_both(stem, &layout, |root, s| draw_lines(root, &layout, title, panels, s), |root, s| draw_lines(root, &layout, title, panels, s))
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
    /// The 0/1 adjacency matrix of an undirected graph on `n` vertices (both `(i, j)` and
    /// `(j, i)`); `axis` labels both axes (e.g. "vertex (by label)").
    pub fn adjacency(title: String, n: usize, edges: &[(usize, usize)], axis: &str) -> HeatmapPanel {
        let cells = edges.iter().flat_map(|&(i, j)| [(i, j, 1.0), (j, i, 1.0)]).collect();
        HeatmapPanel { title, rows: n, cols: n, cells, x_label: axis.into(), y_label: axis.into() }
    }
}

fn draw_heatmaps<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, layout: &Layout, title: &str, panels: &[HeatmapPanel], s: f64) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let px = |v: f64| (v * s).round() as u32;
    for (panel, area) in panels.iter().zip(layout.areas(&root, title, s)?.iter()) {
        let (r, c) = (panel.rows.max(1) as f64, panel.cols.max(1) as f64);
        let caption = greek(&panel.title);
        let mut chart = ChartBuilder::on(area)
            .caption(&caption, ("sans-serif", layout.caption_font(&caption) * s))
            .margin(px(8.0))
            .margin_right(px(26.0))
            .x_label_area_size(px(46.0))
            .y_label_area_size(px(66.0))
            .build_cartesian_2d(0.0..c, r..0.0)
            .map_err(|e| e.to_string())?;
        let whole = |v: &f64| format!("{v:.0}");
        let mut mesh = chart.configure_mesh();
        style_mesh(&mut mesh, s, &panel.x_label, &panel.y_label);
        mesh.x_label_formatter(&whole).y_label_formatter(&whole).draw().map_err(|e| e.to_string())?;
        let shade = |v: f64| {
            let g = (255.0 * (1.0 - v.clamp(0.0, 1.0))) as u8;
            RGBColor(g, g, g)
        };
        // A cell is drawn at least 1.5 figure units wide, so a sparse matrix with more rows than
        // the panel has pixels still shows every non-zero (as MATLAB's spy draws markers).
        let (w_px, h_px) = chart.plotting_area().dim_in_pixel();
        let grow_x = ((1.5 * s) * c / w_px.max(1) as f64 - 1.0).max(0.0) / 2.0;
        let grow_y = ((1.5 * s) * r / h_px.max(1) as f64 - 1.0).max(0.0) / 2.0;
        chart
            .draw_series(panel.cells.iter().filter(|c| c.2 > 0.0).map(|&(i, j, v)| {
                let (x, y) = (j as f64, i as f64);
                Rectangle::new([(x - grow_x, y - grow_y), (x + 1.0 + grow_x, y + 1.0 + grow_y)], shade(v).filled())
            }))
            .map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())
}

/// Writes heat-map panels (adjacency matrices, contingency tables) to `<stem>.png` and `<stem>.svg`.
pub fn write_heatmaps(stem: &Path, title: &str, panels: &[HeatmapPanel], columns_per_row: Option<usize>) -> Result<(PathBuf, PathBuf), String> {
    let cols = columns(panels.len(), columns_per_row);
    let layout = Layout::new(title, panels.len(), cols, 380, 400, &[]);
    write_both(stem, &layout, |root, s| draw_heatmaps(root, &layout, title, panels, s), |root, s| draw_heatmaps(root, &layout, title, panels, s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(v: &[i64], name: &str) -> Colouring {
        Colouring::Labels { values: v.to_vec(), name: name.into() }
    }

    /// A class has one colour in every panel of a figure, also when a panel lacks some classes.
    #[test]
    fn class_colours_agree_across_panels() {
        let a = labels(&[1, 2, 3], "class");
        let b = labels(&[3, 3], "class");
        let l = legends([&a, &b].into_iter());
        assert_eq!(l, vec![Legend::Classes { name: "class".into(), labels: vec![1, 2, 3] }]);
        assert_eq!(a.colours(3, &l)[2], b.colours(2, &l)[0]);
        assert_ne!(a.colours(3, &l)[0], a.colours(3, &l)[1]);
        // a second name gets its own legend
        let c = labels(&[0, 1], "learned component");
        assert_eq!(legends([&a, &c].into_iter()).len(), 2);
    }

    #[test]
    fn continuous_colours_span_the_figure_range() {
        let a = Colouring::Continuous { values: vec![0.0, 1.0], name: "t".into() };
        let b = Colouring::Continuous { values: vec![2.0, f64::NAN], name: "t".into() };
        let l = legends([&a, &b].into_iter());
        assert_eq!(l, vec![Legend::Scale { name: "t".into(), lo: 0.0, hi: 2.0 }]);
        assert_eq!(a.colours(2, &l)[0], ramp(0.0));
        assert_eq!(b.colours(2, &l)[0], ramp(1.0));
        assert_eq!(a.colours(2, &l)[1], ramp(0.5));
    }

    /// Legends wrap within the figure width, list at most 20 classes and say so when there are more.
    #[test]
    fn legend_lines_wrap_and_cap() {
        let many: Vec<i64> = (0..40).collect();
        let lines = legend_lines(&[Legend::Classes { name: "class".into(), labels: many }], 640);
        assert!(lines.len() >= 2, "{} lines", lines.len());
        for line in &lines {
            assert!(line.iter().map(|i| i.width()).sum::<u32>() <= 640, "{line:?}");
        }
        let swatches = lines.iter().flatten().filter(|i| matches!(i, LegendItem::Swatch(..))).count();
        assert_eq!(swatches, LEGEND_MAX_CLASSES);
        assert!(lines.iter().flatten().any(|i| matches!(i, LegendItem::Text(t) if t.contains("40 in all"))));
    }

    /// The PNG is twice the SVG's size; the SVG carries the legend, the axis labels and the Greek
    /// letters, and no grid lines (light mesh lines would be many thin grey paths).
    #[test]
    fn figure_has_legend_axes_greek_and_double_png() {
        let dir = tempfile::tempdir().unwrap();
        let panel = |title: &str, vals: Vec<i64>| Panel {
            title: title.into(),
            points: (0..vals.len()).map(|i| (i as f64, (i * i) as f64)).collect(),
            edges: vec![],
            centres: vec![],
            colouring: labels(&vals, "class"),
            axes: ("coordinate 1".into(), "coordinate 2".into()),
        };
        let panels = [panel("SPL (gamma=0.001, C=inf)", vec![1, 2, 2]), panel("MPME (lambda=0.1)", vec![1, 3, 3])];
        let (png, svg) = write_figure(&dir.path().join("fig"), "test figure", &panels, None).unwrap();
        let img = image_size(&png);
        let text = std::fs::read_to_string(&svg).unwrap();
        let w: u32 = text.split("width=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
        let h: u32 = text.split("height=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
        assert_eq!(img, (2 * w, 2 * h));
        for needle in ["γ=0.001, C=∞", "λ=0.1", "coordinate 1", "coordinate 2", "class:", ">\n1\n</text>", ">\n2\n</text>", ">\n3\n</text>"] {
            assert!(text.contains(needle), "{needle} missing from the SVG");
        }
        // one legend marker per class, in three colours
        let markers: Vec<&str> = text.lines().filter(|l| l.starts_with("<circle") && l.contains("r=\"5\"")).collect();
        assert_eq!(markers.len(), 3, "{markers:?}");
        // plotters draws grid lines as translucent black lines (opacity 0.1 and 0.2)
        assert!(!text.contains("opacity=\"0.1\"") && !text.contains("opacity=\"0.2\""), "grid lines drawn");
        assert!(!text.contains("lambda") && !text.contains("gamma"));
    }

    /// Width and height from a PNG's IHDR chunk.
    fn image_size(p: &Path) -> (u32, u32) {
        let b = std::fs::read(p).unwrap();
        assert_eq!(&b[1..4], b"PNG");
        (u32::from_be_bytes(b[16..20].try_into().unwrap()), u32::from_be_bytes(b[20..24].try_into().unwrap()))
    }
}
