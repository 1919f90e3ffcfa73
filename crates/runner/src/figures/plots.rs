//! Two more plot types in the style of [`super::render`] (laid out once in figure units, drawn to
//! an SVG at scale 1 and a PNG at [`super::render::PNG_SCALE`]): series with error bars over a
//! swept parameter ([`SeriesPanel`], parameter-sensitivity figures) and images ([`ImagePanel`],
//! samples of image data and their selected-feature masks).

use super::render::{columns, style_mesh, tick, write_both, Layout, CAPTION_FONT, PALETTE, TICK_FONT};
use super::text::greek;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};

/// One series of a [`SeriesPanel`]: a value and its error (half the bar's height; 0 draws no
/// bar) at every position of the panel's x axis.
pub struct Series {
    /// Legend name (e.g. "ACC"); empty for a panel's only series, which needs no legend.
    pub name: String,
    /// `(value, error)` at x = 0, 1, ...; a non-finite value is left out, a gap in the line.
    pub points: Vec<(f64, f64)>,
}

/// A line panel over a swept parameter: the x axis holds the swept values at equal spacing, each
/// tick labelled by its value (the sweeps are near-geometric, so this reads as a log axis with
/// every tick at a value that was run), every series a line with dots and vertical error bars
/// (value +- error, with caps).
pub struct SeriesPanel {
    /// Caption above the panel.
    pub title: String,
    /// Label of the x axis: the swept parameter (Greek names drawn in Greek).
    pub x_label: String,
    /// The swept values as tick labels, one per x position.
    pub ticks: Vec<String>,
    /// Label of the y axis.
    pub y_label: String,
    /// Fixed y range (e.g. `[0, 1]` for ACC and NMI); `None`: the data's range, errors included.
    pub y_range: Option<(f64, f64)>,
    /// The series, in legend order (colours of the categorical palette in order).
    pub series: Vec<Series>,
}

impl SeriesPanel {
    /// The y range drawn: the fixed one, else the values +- errors padded by 5% (a flat series
    /// gets a unit range).
    fn y_bounds(&self) -> (f64, f64) {
        if let Some(r) = self.y_range {
            return r;
        }
        let ends = self.series.iter().flat_map(|s| s.points.iter()).filter(|p| p.0.is_finite()).flat_map(|&(v, e)| [v - e.abs(), v + e.abs()]);
        let (lo, hi) = ends.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
        if lo > hi {
            return (0.0, 1.0);
        }
        let w = if (hi - lo).abs() < 1e-12 { 1.0 } else { hi - lo };
        (lo - 0.05 * w, hi + 0.05 * w)
    }
}

fn draw_series<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, layout: &Layout, title: &str, panels: &[SeriesPanel], s: f64) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let px = |v: f64| (v * s).round() as u32;
    for (panel, area) in panels.iter().zip(layout.areas(&root, title, s)?.iter()) {
        let n = panel.ticks.len().max(1);
        let (y0, y1) = panel.y_bounds();
        let caption = greek(&panel.title);
        let mut chart = ChartBuilder::on(area)
            .caption(&caption, ("sans-serif", layout.caption_font(&caption) * s))
            .margin(px(8.0))
            .margin_right(px(26.0))
            .x_label_area_size(px(46.0))
            .y_label_area_size(px(76.0))
            .build_cartesian_2d(-0.5..(n as f64 - 0.5), y0..y1)
            .map_err(|e| e.to_string())?;
        // x positions are the indices of the swept values; only whole positions get a label
        let ticks = &panel.ticks;
        let x_tick = |v: &f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < ticks.len() {
                ticks[i as usize].clone()
            } else {
                String::new()
            }
        };
        let mut mesh = chart.configure_mesh();
        style_mesh(&mut mesh, s, &panel.x_label, &panel.y_label);
        mesh.x_labels(n).x_label_formatter(&x_tick).y_label_formatter(&tick).draw().map_err(|e| e.to_string())?;
        let cap = 0.08;
        for (k, series) in panel.series.iter().enumerate() {
            let colour = PALETTE[k % PALETTE.len()];
            let pts: Vec<(f64, f64, f64)> =
                series.points.iter().enumerate().filter(|(_, p)| p.0.is_finite()).map(|(i, &(v, e))| (i as f64, v, e.abs())).collect();
            // one polyline per run of neighbouring positions: a left-out value is a gap, not
            // bridged (a series without gaps is the one polyline it always was)
            let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
            for &(x, y, _) in &pts {
                match runs.last_mut() {
                    Some(run) if run.last().is_some_and(|&(last_x, _)| x - last_x == 1.0) => run.push((x, y)),
                    _ => runs.push(vec![(x, y)]),
                }
            }
            let line = chart.draw_series(runs.into_iter().map(|run| PathElement::new(run, colour.stroke_width(px(2.0))))).map_err(|e| e.to_string())?;
            if !series.name.is_empty() {
                line.label(series.name.clone()).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + px(11.0) as i32, y)], colour.stroke_width(px(2.0))));
            }
            // error bars: a vertical stroke with caps, under the dots
            let bars = pts.iter().filter(|p| p.2 > 0.0).flat_map(|&(x, y, e)| {
                [
                    PathElement::new(vec![(x, y - e), (x, y + e)], colour.stroke_width(px(1.5))),
                    PathElement::new(vec![(x - cap, y - e), (x + cap, y - e)], colour.stroke_width(px(1.5))),
                    PathElement::new(vec![(x - cap, y + e), (x + cap, y + e)], colour.stroke_width(px(1.5))),
                ]
            });
            chart.draw_series(bars).map_err(|e| e.to_string())?;
            chart.draw_series(pts.iter().map(|&(x, y, _)| Circle::new((x, y), px(3.5), colour.filled()))).map_err(|e| e.to_string())?;
        }
        if panel.series.iter().any(|s| !s.name.is_empty()) {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .margin(px(6.0))
                .label_font(("sans-serif", TICK_FONT * s))
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.5))
                .draw()
                .map_err(|e| e.to_string())?;
        }
    }
    root.present().map_err(|e| e.to_string())
}

/// Writes series panels to `<stem>.png` and `<stem>.svg`, `columns_per_row` per row (default at
/// most 4); returns both paths.
pub fn write_series(stem: &Path, title: &str, panels: &[SeriesPanel], columns_per_row: Option<usize>) -> Result<(PathBuf, PathBuf), String> {
    let cols = columns(panels.len(), columns_per_row);
    let layout = Layout::new(title, panels.len(), cols, 400, 340, &[]);
    write_both(stem, &layout, |root, s| draw_series(root, &layout, title, panels, s), |root, s| draw_series(root, &layout, title, panels, s))
}

/// An image panel: a caption over a `height` x `width` image of RGB values in `[0, 1]`, drawn
/// with square pixels as large as the panel allows, centred, in a thin grey frame.
pub struct ImagePanel {
    /// Caption above the image.
    pub title: String,
    /// Image height in pixels.
    pub height: usize,
    /// Image width in pixels.
    pub width: usize,
    /// Row-major pixels, `height * width` of them, each `[r, g, b]` in `[0, 1]` (clamped).
    pub pixels: Vec<[f64; 3]>,
}

/// `[0, 1]` RGB to a colour.
fn rgb(p: [f64; 3]) -> RGBColor {
    let b = |v: f64| (255.0 * v.clamp(0.0, 1.0)).round() as u8;
    RGBColor(b(p[0]), b(p[1]), b(p[2]))
}

fn draw_images<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, layout: &Layout, title: &str, panels: &[ImagePanel], s: f64) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    for (panel, area) in panels.iter().zip(layout.areas(&root, title, s)?.iter()) {
        let (w, h) = area.dim_in_pixel();
        let caption = greek(&panel.title);
        let font = layout.caption_font(&caption).min(CAPTION_FONT);
        let top = (30.0 * s).round() as i32;
        area.draw(&Text::new(
            caption,
            ((w / 2) as i32, (15.0 * s).round() as i32),
            ("sans-serif", font * s).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Center)),
        ))
        .map_err(|e| e.to_string())?;
        if panel.height == 0 || panel.width == 0 || panel.pixels.len() != panel.height * panel.width {
            return Err(format!("image panel '{}': {} pixels for {} x {}", panel.title, panel.pixels.len(), panel.height, panel.width));
        }
        let margin = (8.0 * s).round() as i32;
        let room_w = (w as i32 - 2 * margin).max(1) as f64;
        let room_h = (h as i32 - top - margin).max(1) as f64;
        let side = (room_w / panel.width as f64).min(room_h / panel.height as f64);
        let (iw, ih) = (side * panel.width as f64, side * panel.height as f64);
        let (x0, y0) = (margin as f64 + (room_w - iw) / 2.0, top as f64 + (room_h - ih) / 2.0);
        let at = |r: usize, c: usize| ((x0 + side * c as f64).round() as i32, (y0 + side * r as f64).round() as i32);
        // one rectangle per run of equal colours along a row: a masked image is mostly black and
        // a background uniform, so the SVG stays small (a rectangle per pixel would be 60k+)
        for r in 0..panel.height {
            let row = &panel.pixels[r * panel.width..(r + 1) * panel.width];
            let mut c = 0;
            while c < panel.width {
                let colour = rgb(row[c]);
                let mut e = c + 1;
                while e < panel.width && rgb(row[e]) == colour {
                    e += 1;
                }
                area.draw(&Rectangle::new([at(r, c), at(r + 1, e)], colour.filled())).map_err(|e| e.to_string())?;
                c = e;
            }
        }
        let frame = RGBColor(128, 128, 128).stroke_width((s).round() as u32);
        area.draw(&Rectangle::new([at(0, 0), at(panel.height, panel.width)], frame)).map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())
}

/// Writes image panels to `<stem>.png` and `<stem>.svg`, `columns_per_row` per row (default at
/// most 4); cells are sized so that images of `aspect` = width / height fill them.
pub fn write_images(stem: &Path, title: &str, panels: &[ImagePanel], columns_per_row: Option<usize>, aspect: f64) -> Result<(PathBuf, PathBuf), String> {
    let cols = columns(panels.len(), columns_per_row);
    let cell_w = 300;
    let cell_h = (30.0 + 8.0 + (cell_w - 16) as f64 / aspect.clamp(0.25, 4.0)).round() as u32;
    let layout = Layout::new(title, panels.len(), cols, cell_w, cell_h, &[]);
    write_both(stem, &layout, |root, s| draw_images(root, &layout, title, panels, s), |root, s| draw_images(root, &layout, title, panels, s))
}
