//! The best cell per (method, data set) (`select`, with the per-metric oracle cells) and what
//! every table format shares: mean |ours - paper| of a row, method versions, cell escaping.

use crate::cells::Cell;
use crate::data::Prepared;
use crate::spec::Plan;
use crate::store::{Record, Status};
use std::path::PathBuf;

/// The selected result of one (method, data set) pair.
#[derive(Debug, Clone)]
pub struct Best {
    /// Index of the method in [`Plan::methods`].
    pub method: usize,
    /// Index of the data set among the prepared data sets.
    pub dataset: usize,
    /// The best record, if any cell succeeded.
    pub record: Option<Record>,
    /// Cells of the pair's grid that succeeded.
    pub ok: usize,
    /// Cells in the pair's grid (including those not computed yet).
    pub total: usize,
    /// First error among failed cells (shown when nothing succeeded).
    pub first_error: Option<String>,
    /// Cells of the pair's grid recorded as degenerate.
    pub degenerate: usize,
    /// The metric the cell was selected by: the row's ([`crate::spec::MethodPlan::metric`]).
    pub metric: String,
    /// Seeds the selected grid cell ran under (a spec's `repeats`, for randomised methods; 1
    /// otherwise). With more than one, `record`'s metrics are the means over the seeds.
    pub repeats: usize,
    /// Sample standard deviation (n - 1) of every metric over the seeds, when `repeats > 1`.
    pub sd: std::collections::BTreeMap<String, f64>,
    /// For every `[table] mean_std` stem, the successful cell maximising `<stem>_mean` (the
    /// per-metric oracle; ties go to the earlier grid cell), keyed by the stem.
    pub oracle: std::collections::BTreeMap<String, Record>,
}

impl Best {
    /// Our value of `metric`.
    pub fn value(&self, metric: &str) -> Option<f64> {
        self.record.as_ref().and_then(|r| r.metrics.get(metric).copied())
    }
    /// Our value of the row's metric (the one the cell was selected by).
    pub fn score(&self) -> Option<f64> {
        self.value(&self.metric)
    }
    /// The score as tables print it: `0.9470`, or `0.9470 ± 0.0123` (mean ± sd over seeds).
    pub fn score_text(&self) -> Option<String> {
        let v = self.score()?;
        Some(match self.sd.get(&self.metric) {
            Some(sd) if self.repeats > 1 => format!("{v:.4} ± {sd:.4}"),
            _ => format!("{v:.4}"),
        })
    }
}

/// Picks, for every (method, data set), the cell maximising the row's metric among successful
/// cells, as the papers do (best over each method's own grid). Ties go to the earlier grid cell.
///
/// A randomised method's grid cell that ran under several seeds (`repeats`) counts as one cell
/// whose metrics are the means over its seeds (all of them must have succeeded; until then the
/// cell is not selectable), so the selection is on the mean, never on a lucky seed.
pub fn select(plan: &Plan, n_datasets: usize, results: &[(Cell, Option<Record>)]) -> Vec<Best> {
    let mut out = Vec::new();
    for mi in 0..plan.methods.len() {
        let metric = plan.methods[mi].metric.as_str();
        for di in 0..n_datasets {
            // grid index -> the records of its seeds (None where not computed)
            let mut by_grid: std::collections::BTreeMap<usize, Vec<Option<&Record>>> = std::collections::BTreeMap::new();
            for (c, r) in results.iter().filter(|(c, _)| c.method == mi && c.dataset == di) {
                by_grid.entry(c.grid_index).or_default().push(r.as_ref());
            }
            let (mut ok, mut first_error, mut degenerate) = (0, None, 0);
            let total = by_grid.len();
            let mut best: Option<(f64, Record, usize, std::collections::BTreeMap<String, f64>)> = None;
            let mut oracle: std::collections::BTreeMap<String, (f64, Record)> = std::collections::BTreeMap::new();
            for seeds in by_grid.values() {
                if let Some(r) = seeds.iter().flatten().find(|r| r.status != Status::Ok) {
                    degenerate += usize::from(seeds.iter().flatten().all(|r| r.status == Status::Degenerate));
                    first_error.get_or_insert_with(|| r.error.clone().unwrap_or_default());
                    continue;
                }
                let done: Vec<&Record> = seeds.iter().flatten().copied().collect();
                if done.len() < seeds.len() {
                    continue; // some seeds not computed yet
                }
                ok += 1;
                let (rec, sd) = mean_over_seeds(&done);
                for stem in &plan.spec.table.mean_std {
                    let v = rec.metrics.get(&format!("{stem}_mean")).copied().unwrap_or(f64::NEG_INFINITY);
                    if oracle.get(stem).is_none_or(|b| v > b.0) {
                        oracle.insert(stem.clone(), (v, rec.clone()));
                    }
                }
                let v = rec.metrics.get(metric).copied().unwrap_or(f64::NEG_INFINITY);
                if best.as_ref().is_none_or(|b| v > b.0) {
                    best = Some((v, rec, done.len(), sd));
                }
            }
            let (record, repeats, sd) = match best {
                Some((_, r, n, sd)) => (Some(r), n, sd),
                None => (None, 1, Default::default()),
            };
            let oracle = oracle.into_iter().map(|(k, (_, r))| (k, r)).collect();
            out.push(Best { method: mi, dataset: di, record, ok, total, first_error, degenerate, metric: metric.to_string(), repeats, sd, oracle });
        }
    }
    out
}

/// One seed's record as is, or for several: the first seed's record with every metric (and the
/// fit time) replaced by its mean over the seeds, and the sample standard deviations.
fn mean_over_seeds(seeds: &[&Record]) -> (Record, std::collections::BTreeMap<String, f64>) {
    let mut rec = seeds[0].clone();
    let mut sd = std::collections::BTreeMap::new();
    if seeds.len() < 2 {
        return (rec, sd);
    }
    for (name, v) in rec.metrics.iter_mut() {
        let vals: Vec<f64> = seeds.iter().filter_map(|r| r.metrics.get(name).copied()).collect();
        let (m, s) = structdr_eval::mean_std(&vals);
        *v = m;
        sd.insert(name.clone(), s);
    }
    rec.fit_seconds = seeds.iter().map(|r| r.fit_seconds).sum::<f64>() / seeds.len() as f64;
    (rec, sd)
}

/// One line per cell of the plan with `status` (cached or computed now): `data set / row params:
/// reason`. Rows sharing a cell list it once.
pub fn cells_with_status(plan: &Plan, data: &[Prepared], results: &[(Cell, Option<Record>)], status: Status) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    results
        .iter()
        .filter_map(|(c, r)| {
            let r = r.as_ref().filter(|r| r.status == status)?;
            seen.insert(c.hash.as_str()).then(|| {
                format!(
                    "{} / {} {}: {}",
                    data[c.dataset].label,
                    plan.methods[c.method].label,
                    r.params_string(),
                    r.error.as_deref().unwrap_or("(no reason recorded)")
                )
            })
        })
        .collect()
}

/// Whether a data set stands in for a different one in the paper (its note says "stand-in").
pub(super) fn is_stand_in(p: &Prepared) -> bool {
    p.data.note.as_deref().is_some_and(|n| n.to_ascii_lowercase().starts_with("stand-in"))
}

/// Written table files.
pub struct TableFiles {
    /// The Markdown table, `<stem>.md`.
    pub md: PathBuf,
    /// The CSV table, `<stem>.csv`.
    pub csv: PathBuf,
    /// The LaTeX table, `<stem>.tex`.
    pub tex: PathBuf,
}

/// Mean |ours - paper| of a method's row over the data sets where both exist.
pub fn mean_abs_diff(plan: &Plan, data: &[Prepared], best: &[Best], mi: usize) -> Option<(f64, usize)> {
    let reference = plan.spec.reference.as_ref()?;
    let row = plan.methods[mi].paper_row.as_ref()?;
    let diffs: Vec<f64> = (0..data.len())
        .filter_map(|di| {
            let ours = best.iter().find(|b| b.method == mi && b.dataset == di)?.score()?;
            let paper = reference.value(row, data[di].paper.as_deref()?)?;
            Some((ours - paper).abs())
        })
        .collect();
    (!diffs.is_empty()).then(|| (diffs.iter().sum::<f64>() / diffs.len() as f64, diffs.len()))
}

/// `label vN` for every method of the plan, with the versions found among its selected records
/// (normally exactly the plan's version: cells are keyed by it).
pub fn method_versions(plan: &Plan, best: &[Best]) -> String {
    plan.methods
        .iter()
        .enumerate()
        .map(|(mi, m)| {
            let mut seen: Vec<u32> = best.iter().filter(|b| b.method == mi).filter_map(|b| b.record.as_ref().map(|r| r.key.method_version)).collect();
            seen.sort_unstable();
            seen.dedup();
            match seen.as_slice() {
                [] => format!("{} v{} (no cell yet)", m.label, m.version),
                [v] => format!("{} v{v}", m.label),
                vs => format!("{} v{}", m.label, vs.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("/")),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A label or parameter text as one Markdown table cell: `|` escaped, line breaks as spaces.
pub fn md_cell(s: &str) -> String {
    s.replace(['\r', '\n'], " ").replace('|', "\\|")
}

/// A label as LaTeX text: the ten special characters escaped, line breaks as spaces.
pub fn tex_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\textbackslash{}"),
            '~' => out.push_str("\\textasciitilde{}"),
            '^' => out.push_str("\\textasciicircum{}"),
            '&' | '%' | '$' | '#' | '_' | '{' | '}' => {
                out.push('\\');
                out.push(c);
            }
            '\r' | '\n' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The mark after a score whose selected cell stopped before its stopping rule was met.
pub const SHORT_MARK: &str = "†";
