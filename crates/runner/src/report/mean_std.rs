//! The `[table] mean_std` section of a spec's tables: every row's `<stem>_mean ± <stem>_std`
//! (e.g. k-means ACC and NMI over the restarts) under two selections side by side, ours beside
//! the paper's, with the mean |ours - paper| per row, metric and selection.
//!
//! - **best single configuration** (`best_single`): the row's selected cell (the one maximising
//!   the spec's select metric over the whole grid, evaluation-stage parameters such as the number
//!   of selected features included); every stem is read from that one cell.
//! - **per-metric oracle** (`oracle`): for each stem, the cell maximising `<stem>_mean`. With a
//!   feature-count axis in the grid this is the FSASL harness's `grid_search_fs` (the best
//!   parameter point per feature count and per metric) followed by the best feature count per
//!   metric, so ACC and NMI may come from different cells.
//!
//! Markdown shows percent with two decimals, as the papers print them; the CSV rows carry the
//! records' fractions.

use super::best::{md_cell, Best};
use crate::data::Prepared;
use crate::spec::Plan;
use crate::store::Record;
use std::fmt::Write as _;

/// The two selections, as named in the CSV's `selection` column.
pub const SELECTIONS: [&str; 2] = ["best_single", "oracle"];

/// One value of the section: a (method, data set, selection, metric) with ours, the paper's and
/// the cell it comes from.
pub struct Entry<'a> {
    /// Index of the method in the plan.
    pub method: usize,
    /// Index of the data set.
    pub dataset: usize,
    /// `best_single` or `oracle`.
    pub selection: &'static str,
    /// The record metric, e.g. `nmi_std`.
    pub metric: String,
    /// Our value (fraction), when the cell exists.
    pub ours: Option<f64>,
    /// The paper's value (fraction), when the spec's reference has it.
    pub paper: Option<f64>,
    /// The cell the value comes from.
    pub record: Option<&'a Record>,
}

/// The cell a selection reads `stem` from.
fn cell<'a>(b: &'a Best, selection: &str, stem: &str) -> Option<&'a Record> {
    match selection {
        "oracle" => b.oracle.get(stem),
        _ => b.record.as_ref(),
    }
}

/// Every entry of the section: per best pair, per selection, per stem, `<stem>_mean` then
/// `<stem>_std`.
pub fn entries<'a>(plan: &Plan, data: &[Prepared], best: &'a [Best]) -> Vec<Entry<'a>> {
    let select = plan.select_metric();
    let reference = plan.spec.reference.as_ref();
    let mut out = Vec::new();
    for b in best {
        for selection in SELECTIONS {
            for stem in &plan.spec.table.mean_std {
                let rec = cell(b, selection, stem);
                for metric in [format!("{stem}_mean"), format!("{stem}_std")] {
                    let paper = reference.and_then(|r| {
                        let row = plan.methods[b.method].paper_row.as_ref()?;
                        r.metric_value(&metric, &select, row, data[b.dataset].paper.as_deref()?)
                    });
                    out.push(Entry {
                        method: b.method,
                        dataset: b.dataset,
                        selection,
                        ours: rec.and_then(|r| r.metrics.get(&metric).copied()),
                        paper,
                        metric,
                        record: rec,
                    });
                }
            }
        }
    }
    out
}

/// Mean |ours - paper| of `metric` under `selection` over the data sets where both exist.
pub fn mean_abs_diff(entries: &[Entry], method: usize, selection: &str, metric: &str) -> Option<(f64, usize)> {
    let d: Vec<f64> = entries
        .iter()
        .filter(|e| e.method == method && e.selection == selection && e.metric == metric)
        .filter_map(|e| Some((e.ours? - e.paper?).abs()))
        .collect();
    (!d.is_empty()).then(|| (d.iter().sum::<f64>() / d.len() as f64, d.len()))
}

/// The Markdown section (empty when the spec has no `[table] mean_std`).
pub fn markdown(plan: &Plan, data: &[Prepared], best: &[Best]) -> String {
    let stems = &plan.spec.table.mean_std;
    if stems.is_empty() {
        return String::new();
    }
    let entries = entries(plan, data, best);
    let find =
        |mi: usize, di: usize, sel: &str, metric: &str| entries.iter().find(|e| e.method == mi && e.dataset == di && e.selection == sel && e.metric == metric);
    let pct = |v: Option<f64>| v.map(|v| format!("{:.2}", 100.0 * v));
    let pm = |m: Option<String>, s: Option<String>| match (m, s) {
        (Some(m), Some(s)) => format!("{m} ± {s}"),
        (Some(m), None) => m,
        _ => "–".into(),
    };
    let has_paper = plan.spec.reference.is_some();
    let mut md = String::new();
    let what = stems.iter().map(|s| s.to_uppercase()).collect::<Vec<_>>().join(" and ");
    if has_paper {
        writeln!(
            md,
            "\n## {what} as mean ± std, both selections\n\nPercent; mean ± std over the k-means restarts of one cell. **single** = the best single configuration: the row's selected cell above (one parameter point and one number of selected features, maximising `{}`), every metric read from it. **oracle** = the per-metric oracle: for each metric the cell maximising its mean (the best parameter point per number of selected features and per metric, then the best number), so the metrics may come from different cells. An oracle row identical to the single row in every column is not repeated. **paper** = the papers' numbers; **diff** = ours - paper (means), with the mean |diff| over the data sets in the last column.",
            plan.select_metric()
        )
        .ok();
    } else {
        // without a reference: no paper rows, so neither their legend nor the |diff| column
        writeln!(
            md,
            "\n## {what} as mean ± std, both selections\n\nPercent; mean ± std over the k-means restarts of one cell. **single** = the best single configuration: the row's selected cell above (the grid point maximising `{}`), every metric read from it. **oracle** = the per-metric oracle: for each metric the cell maximising its mean, so the metrics may come from different cells. An oracle row identical to the single row in every column is not repeated.",
            plan.select_metric()
        )
        .ok();
    }
    let cols: Vec<String> = data.iter().map(|p| md_cell(&p.label)).collect();
    // the last column (mean |ours - paper|) only beside a reference
    let (diff_head, diff_rule, diff_cell) = if has_paper { (" mean abs diff |", "---:|", " |") } else { ("", "", "") };
    for stem in stems {
        let (mean, std) = (format!("{stem}_mean"), format!("{stem}_std"));
        writeln!(md, "\n### {} (`{mean}` ± `{std}`)\n", stem.to_uppercase()).ok();
        writeln!(md, "| | {} |{diff_head}", cols.join(" | ")).ok();
        writeln!(md, "|---|{}{diff_rule}", "---:|".repeat(data.len())).ok();
        for (mi, m) in plan.methods.iter().enumerate() {
            let label = md_cell(&m.label);
            let same = (0..data.len()).all(|di| {
                let a = find(mi, di, "best_single", &mean).and_then(|e| e.record).map(|r| &r.hash);
                let b = find(mi, di, "oracle", &mean).and_then(|e| e.record).map(|r| &r.hash);
                a == b
            });
            let sels: &[&str] = if same { &["best_single"] } else { &SELECTIONS };
            for &sel in sels {
                let name = if sel == "oracle" { "oracle" } else { "single" };
                let row: Vec<String> = (0..data.len())
                    .map(|di| pm(pct(find(mi, di, sel, &mean).and_then(|e| e.ours)), pct(find(mi, di, sel, &std).and_then(|e| e.ours))))
                    .collect();
                let bold = if sel == "best_single" { format!("**{label}** {name}") } else { format!("{label} {name}") };
                writeln!(md, "| {bold} | {} |{diff_cell}", row.join(" | ")).ok();
            }
            if has_paper && m.paper_row.is_some() {
                let row: Vec<String> = (0..data.len())
                    .map(|di| pm(pct(find(mi, di, "best_single", &mean).and_then(|e| e.paper)), pct(find(mi, di, "best_single", &std).and_then(|e| e.paper))))
                    .collect();
                writeln!(md, "| {label} paper | {} | |", row.join(" | ")).ok();
                for &sel in sels {
                    let name = if sel == "oracle" { "oracle" } else { "single" };
                    let row: Vec<String> = (0..data.len())
                        .map(|di| {
                            find(mi, di, sel, &mean).and_then(|e| Some(e.ours? - e.paper?)).map(|d| format!("{:+.2}", 100.0 * d)).unwrap_or_else(|| "–".into())
                        })
                        .collect();
                    let mad = mean_abs_diff(&entries, mi, sel, &mean).map(|(v, n)| format!("{:.2} (n={n})", 100.0 * v)).unwrap_or_else(|| "–".into());
                    writeln!(md, "| {label} diff {name} | {} | {mad} |", row.join(" | ")).ok();
                }
            }
        }
    }
    if has_paper {
        // The summary the papers' comparison asks for: one line per row, one column per metric
        // and selection.
        let heads: Vec<String> = stems
            .iter()
            .flat_map(|s| SELECTIONS.iter().map(move |sel| format!("{} {}", s.to_uppercase(), if *sel == "oracle" { "oracle" } else { "single" })))
            .collect();
        writeln!(md, "\n### Mean \\|ours - paper\\| per row and metric (points)\n\n| method | {} |\n|---|{}", heads.join(" | "), "---:|".repeat(heads.len()))
            .ok();
        for (mi, m) in plan.methods.iter().enumerate().filter(|(_, m)| m.paper_row.is_some()) {
            let vals: Vec<String> = stems
                .iter()
                .flat_map(|s| SELECTIONS.iter().map(move |sel| (s, *sel)))
                .map(|(s, sel)| mean_abs_diff(&entries, mi, sel, &format!("{s}_mean")).map(|(v, _)| format!("{:.2}", 100.0 * v)).unwrap_or_else(|| "–".into()))
                .collect();
            writeln!(md, "| {} | {} |", md_cell(&m.label), vals.join(" | ")).ok();
        }
        // Where the oracle's cells are: which parameters each metric picked.
        let differing: Vec<String> = best
            .iter()
            .flat_map(|b| stems.iter().map(move |s| (b, s)))
            .filter_map(|(b, s)| {
                let o = b.oracle.get(s)?;
                let single = b.record.as_ref()?;
                (o.hash != single.hash).then(|| {
                    format!(
                        "- {} / {}, {}: {}",
                        md_cell(&plan.methods[b.method].label),
                        md_cell(&data[b.dataset].label),
                        s.to_uppercase(),
                        md_cell(&o.params_string())
                    )
                })
            })
            .collect();
        if !differing.is_empty() {
            writeln!(md, "\nOracle cells that differ from the single configuration:\n\n{}", differing.join("\n")).ok();
        }
    }
    md
}
