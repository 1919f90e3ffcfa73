//! Parameter-sensitivity figures ([`crate::spec::FigureKind::Sensitivity`], ESL paper Fig. 8):
//! what each fit of a sweep is scored as ([`point`]) and the three plots of each sweep
//! ([`panels`]). The k-means scores are [`crate::exec::evaluate`]'s under the spec's
//! `[evaluation]` and the seed of the panel's cell key, so they equal what a grid cell with the
//! same parameters records.

use super::plots::{Series, SeriesPanel};
use super::render::tick;
use crate::cells::FitCell;
use crate::keys::cell_seed;
use crate::spec::{PanelPlan, Plan, Protocol, SweepPoint};
use ndarray::Array2;
use structdr_datasets::Dataset;
use structdr_methods::{Fitted, ParamValue};

/// One fit of a sweep, scored.
pub(super) struct Point {
    /// Where the fit lies in its sweep.
    pub sweep: SweepPoint,
    /// The sweep's panel title.
    pub title: String,
    /// k-means ACC mean and standard deviation over the restarts.
    pub acc: (f64, f64),
    /// k-means NMI mean and standard deviation over the restarts.
    pub nmi: (f64, f64),
    /// Columns scored: selected features for feature scores, else the embedding's dimension.
    pub scored: usize,
    /// Whether the method returns feature scores (the second plot's label).
    pub features: bool,
    /// Vertices of the learned graph (N for graphs on the samples).
    pub n: usize,
    /// Non-zero entries of the symmetrised N x N W: two per edge, no self-loops.
    pub nz: usize,
    /// Why the fit has no determined result (the method's `degenerate` reason): the point is a
    /// gap in the sweep's lines, its scores NaN.
    pub degenerate: Option<String>,
}

impl Point {
    /// Percentage of the N^2 entries of the symmetrised W that are zero (the diagonal counts as
    /// zero: self-loops are not edges).
    pub fn zero_percent(&self) -> f64 {
        100.0 * (1.0 - self.nz as f64 / ((self.n * self.n).max(1)) as f64)
    }
    /// The point of a sweep whose fit the method called degenerate (`reason`): no scores.
    pub fn degenerate(panel: &PanelPlan, reason: &str) -> Result<Point, String> {
        let sweep = panel.sweep.clone().ok_or("a sensitivity panel without its sweep")?;
        Ok(Point {
            sweep,
            title: panel.title.clone(),
            acc: (f64::NAN, f64::NAN),
            nmi: (f64::NAN, f64::NAN),
            scored: 0,
            features: false,
            n: 0,
            nz: 0,
            degenerate: Some(reason.to_string()),
        })
    }

    /// The fit's line in the panel table of `figures.md`.
    pub fn summary(&self) -> String {
        if let Some(why) = &self.degenerate {
            return format!("degenerate (a gap in the plots): {why}");
        }
        let what = if self.features { "features selected" } else { "coordinates" };
        format!(
            "ACC {:.4} ± {:.4}, NMI {:.4} ± {:.4}; {} {what}; W: nz = {}, {:.2}% zeros",
            self.acc.0,
            self.acc.1,
            self.nmi.0,
            self.nmi.1,
            self.scored,
            self.nz,
            self.zero_percent()
        )
    }
}

/// Scores the fit `fit` of sensitivity panel `panel` (its cell `cell`): k-means on `coords` (the
/// scored coordinates: the data on the selected features, or the embedding) against the data's
/// labels, the columns scored, and the learned graph's non-zeros.
pub(super) fn point(plan: &Plan, panel: &PanelPlan, cell: &FitCell, fit: &Fitted, coords: &Array2<f64>, data: &Dataset) -> Result<Point, String> {
    let sweep = panel.sweep.clone().ok_or("a sensitivity panel without its sweep")?;
    let ev = plan.spec.evaluation.as_ref().ok_or("kind = \"sensitivity\": the spec has no [evaluation]")?;
    let labels = data.labels.as_deref().ok_or("kind = \"sensitivity\": the data set has no labels (k-means ACC and NMI need them)")?;
    let graph = fit.drawn_graph().ok_or("kind = \"sensitivity\": the method returns no learned graph (the third plot is its sparsity)")?;
    let m = crate::exec::evaluate(coords, fit.components.as_deref(), data.x.view(), Some(labels), &[Protocol::Kmeans], ev, cell_seed(&cell.key))?;
    let get = |k: &str| m.get(k).copied().unwrap_or(f64::NAN);
    Ok(Point {
        sweep,
        title: panel.title.clone(),
        acc: (get("acc_mean"), get("acc_std")),
        nmi: (get("nmi_mean"), get("nmi_std")),
        scored: coords.ncols(),
        features: fit.feature_scores().is_some(),
        n: graph.n_vertices,
        nz: 2 * graph.edges.len(),
        degenerate: None,
    })
}

/// A swept value as a tick label: numbers in the figures' tick format, others as written.
fn label(v: &ParamValue) -> String {
    match v {
        ParamValue::Float(x) => tick(x),
        other => other.to_string(),
    }
}

/// The three plots of every sweep among `points` (in the order of the figure's panels: ACC and
/// NMI with error bars, columns scored, zeros of W), and each sweep's table for `figures.md`.
pub(super) fn panels(points: &[Point]) -> (Vec<SeriesPanel>, Vec<String>) {
    let mut groups: Vec<usize> = points.iter().map(|p| p.sweep.group).collect();
    groups.dedup();
    let (mut out, mut tables) = (Vec::new(), Vec::new());
    for g in groups {
        let mut pts: Vec<&Point> = points.iter().filter(|p| p.sweep.group == g).collect();
        pts.sort_by_key(|p| p.sweep.index);
        let (title, param) = (pts[0].title.clone(), pts[0].sweep.param.clone());
        let ticks: Vec<String> = pts.iter().map(|p| label(&p.sweep.value)).collect();
        let features = pts.iter().any(|p| p.features);
        let panel = |what: &str, y_label: &str, y_range: Option<(f64, f64)>, series: Vec<Series>| SeriesPanel {
            title: format!("{title}: {what}"),
            x_label: param.clone(),
            ticks: ticks.clone(),
            y_label: y_label.into(),
            y_range,
            series,
        };
        out.push(panel(
            "ACC and NMI",
            "k-means score (mean ± sd)",
            Some((0.0, 1.0)),
            vec![
                Series { name: "ACC".into(), points: pts.iter().map(|p| p.acc).collect() },
                Series { name: "NMI".into(), points: pts.iter().map(|p| p.nmi).collect() },
            ],
        ));
        let scored = if features { "selected features" } else { "coordinates scored" };
        // counts from 0, so a flat count reads as flat rather than as noise around it
        let top = pts.iter().map(|p| p.scored).max().unwrap_or(1).max(1) as f64;
        // a degenerate point has no value in any plot (non-finite values are left out)
        let gap = |p: &Point, v: f64| if p.degenerate.is_some() { f64::NAN } else { v };
        out.push(panel(
            scored,
            scored,
            Some((0.0, 1.08 * top)),
            vec![Series { name: String::new(), points: pts.iter().map(|p| (gap(p, p.scored as f64), 0.0)).collect() }],
        ));
        out.push(panel(
            "sparsity of W",
            "zero entries of W (%)",
            None,
            vec![Series { name: String::new(), points: pts.iter().map(|p| (gap(p, p.zero_percent()), 0.0)).collect() }],
        ));
        let mut t = format!("Sweep \"{title}\" over `{param}` (ACC, NMI: k-means mean ± sd over the restarts; W: the symmetrised learned graph, nz = non-zero entries of N^2):\n\n| {param} | ACC | NMI | {scored} | W nz | W zeros (%) |\n|---|---|---|---|---|---|\n");
        for p in &pts {
            if p.degenerate.is_some() {
                t += &format!("| {} | degenerate | – | – | – | – |\n", p.sweep.value);
                continue;
            }
            t += &format!(
                "| {} | {:.4} ± {:.4} | {:.4} ± {:.4} | {} | {} | {:.2} |\n",
                p.sweep.value,
                p.acc.0,
                p.acc.1,
                p.nmi.0,
                p.nmi.1,
                p.scored,
                p.nz,
                p.zero_percent()
            );
        }
        tables.push(t);
    }
    (out, tables)
}
