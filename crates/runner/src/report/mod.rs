//! The tables: Markdown, CSV and LaTeX, ours beside the papers' values with the difference.
//! `best.rs` selects the cell shown per (method, data set); `mean_std.rs` writes the optional
//! mean ± std section under two selections.

pub mod best;
pub mod mean_std;

pub use best::{cells_with_status, md_cell, mean_abs_diff, method_versions, select, tex_text, Best, TableFiles, SHORT_MARK};

use crate::data::Prepared;
use crate::exec::RunSummary;
use crate::spec::Plan;
use crate::store::Record;
use best::is_stand_in;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
/// Writes `<stem>.md`, `<stem>.csv`, `<stem>.tex`.
pub fn write_tables(plan: &Plan, data: &[Prepared], best: &[Best], summary: &RunSummary, stem: &Path) -> std::io::Result<TableFiles> {
    if let Some(dir) = stem.parent() {
        std::fs::create_dir_all(dir).map_err(|e| crate::files::path_error("create the table directory", dir, e))?;
    }
    let metric = plan.select_metric();
    let reference = plan.spec.reference.as_ref();
    let get = |mi: usize, di: usize| best.iter().find(|b| b.method == mi && b.dataset == di).expect("every pair selected");
    let paper_of = |mi: usize, di: usize| -> Option<f64> {
        let r = reference?;
        r.value(plan.methods[mi].paper_row.as_ref()?, data[di].paper.as_deref()?)
    };
    let fmt = |v: Option<f64>| v.map(|v| format!("{v:.4}")).unwrap_or_else(|| "–".into());
    let fmt_diff = |v: Option<f64>| v.map(|v| format!("{v:+.4}")).unwrap_or_else(|| "–".into());

    // ---------- Markdown ----------
    let mut md = String::new();
    writeln!(md, "# {}\n", plan.spec.title).ok();
    if !plan.spec.description.trim().is_empty() {
        writeln!(md, "{}\n", plan.spec.description.trim()).ok();
    }
    writeln!(
        md,
        "Metric: `{metric}`{}, best cell of each method's grid (spec `{}`, seed {}). Reduced dimension d: smallest d with PCA energy {}{} (rows `d`).",
        if plan.one_metric() {
            String::new()
        } else {
            let own: Vec<String> = plan.methods.iter().filter(|m| m.metric != metric).map(|m| format!("{}: `{}`", m.label, m.metric)).collect();
            format!(" (rows with their own metric: {})", own.join(", "))
        },
        plan.path.display(),
        plan.spec.seed,
        match plan.spec.dim.rule {
            structdr_linalg::EnergyRule::Ge => ">=",
            structdr_linalg::EnergyRule::Gt => ">",
        },
        plan.spec.dim.threshold
    )
    .ok();
    if let Some(r) = reference {
        writeln!(md, "\n**paper** rows are the papers' reported numbers ({}), copied into the spec as references; they are never computed here. **diff** = ours - paper.", r.source).ok();
    }
    let cols: Vec<String> = data.iter().map(|p| if is_stand_in(p) { format!("{}*", md_cell(&p.label)) } else { md_cell(&p.label) }).collect();
    write!(md, "\n| | {} |", cols.join(" | ")).ok();
    if reference.is_some() {
        write!(md, " mean abs diff |").ok();
    }
    writeln!(md).ok();
    writeln!(md, "|---|{}{}", "---:|".repeat(data.len()), if reference.is_some() { "---:|" } else { "" }).ok();
    let extra = if reference.is_some() { " |" } else { "" };
    writeln!(md, "| N x D | {} |{extra}", data.iter().map(|p| format!("{} x {}", p.data.x.nrows(), p.data.x.ncols())).collect::<Vec<_>>().join(" | ")).ok();
    writeln!(md, "| d | {} |{extra}", data.iter().map(|p| p.energy_dim.to_string()).collect::<Vec<_>>().join(" | ")).ok();
    if let Some(rd) = reference.and_then(|r| r.d.as_ref().map(|d| (r, d))) {
        let (r, d) = rd;
        let cells: Vec<String> = data
            .iter()
            .map(|p| p.paper.as_ref().and_then(|name| r.datasets.iter().position(|x| x == name)).map(|j| d[j].to_string()).unwrap_or_else(|| "–".into()))
            .collect();
        writeln!(md, "| d paper | {} |{extra}", cells.join(" | ")).ok();
    }
    for (mi, m) in plan.methods.iter().enumerate() {
        let ours: Vec<String> = (0..data.len())
            .map(|di| {
                let b = get(mi, di);
                let short = b.record.as_ref().is_some_and(|r| r.stop_reason().stopped_short());
                match b.score_text() {
                    Some(v) if short => format!("{v}{SHORT_MARK}"),
                    Some(v) => v,
                    None if b.ok == 0 && b.total > 0 && b.degenerate == b.total => "degenerate".into(),
                    None if b.ok == 0 && b.total > 0 && b.first_error.is_some() => "failed".into(),
                    None => "–".into(),
                }
            })
            .collect();
        let mad = mean_abs_diff(plan, data, best, mi);
        write!(md, "| **{}** | {} |", md_cell(&m.label), ours.join(" | ")).ok();
        if reference.is_some() {
            write!(md, " |").ok();
        }
        writeln!(md).ok();
        if reference.is_some() && m.paper_row.is_some() {
            let paper: Vec<String> = (0..data.len()).map(|di| fmt(paper_of(mi, di))).collect();
            let diff: Vec<String> = (0..data.len()).map(|di| fmt_diff(get(mi, di).score().zip(paper_of(mi, di)).map(|(o, p)| o - p))).collect();
            writeln!(md, "| {} paper | {} | |", md_cell(&m.label), paper.join(" | ")).ok();
            writeln!(
                md,
                "| {} diff | {} | {} |",
                md_cell(&m.label),
                diff.join(" | "),
                mad.map(|(v, n)| format!("{v:.4} (n={n})")).unwrap_or_else(|| "–".into())
            )
            .ok();
        }
    }
    md.push_str(&mean_std::markdown(plan, data, best));
    // Best cells that stopped short of their stopping rule: a footnote naming each.
    let short: Vec<String> = best
        .iter()
        .filter_map(|b| {
            let r = b.record.as_ref()?;
            let stop = r.stop_reason();
            stop.stopped_short().then(|| format!("- {} / {}: {}", md_cell(&plan.methods[b.method].label), md_cell(&data[b.dataset].label), stop.text()))
        })
        .collect();
    if !short.is_empty() {
        writeln!(
            md,
            "\n{SHORT_MARK} The selected cell stopped before its stopping rule was met (residual: the quantity the method's rule compares with its tol; \"inferred\": read from a record written before the reason was recorded):\n\n{}",
            short.join("\n")
        )
        .ok();
    }
    // Best parameters and failures.
    let score_header = if plan.one_metric() { metric.clone() } else { "score (the row's metric)".to_string() };
    // Constrained solvers' end points (objective, KKT residual) when any selected record has one.
    let solver_end = best.iter().any(|b| b.record.as_ref().is_some_and(|r| r.kkt_residual_any().is_some()));
    let (end_head, end_rule) = if solver_end { (" iterations | objective | KKT residual |", "---:|---:|---:|") } else { ("", "") };
    writeln!(md, "\n## Selected cells\n\n| method | data set | {score_header} | parameters | d | cells ok | fit s | stopped |{end_head}\n|---|---|---:|---|---:|---:|---:|---|{end_rule}").ok();
    for b in best {
        let m = &plan.methods[b.method];
        match &b.record {
            Some(r) => {
                let end = if !solver_end {
                    String::new()
                } else {
                    let e = |v: Option<f64>| v.map(|v| format!("{v:.6e}")).unwrap_or_else(|| "–".into());
                    format!(" {} | {} | {} |", r.iterations, e(r.objective), r.kkt_residual_any().map(|v| format!("{v:.2e}")).unwrap_or_else(|| "–".into()))
                };
                writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {}/{} | {:.2} | {} |{end}",
                    md_cell(&m.label),
                    md_cell(&data[b.dataset].label),
                    b.score_text().unwrap_or_else(|| "–".into()),
                    md_cell(&r.params_string()),
                    r.dim,
                    b.ok,
                    b.total,
                    r.fit_seconds,
                    md_cell(&r.stop_reason().text())
                )
                .ok()
            }
            None => {
                // No usable record: say whether cells failed, were refused or were not run yet.
                let refused = summary.refused.iter().filter(|r| r.method == b.method && r.dataset == b.dataset).count();
                let claimed = summary.claimed.iter().filter(|c| c.method == b.method && c.dataset == b.dataset).count();
                let why = match &b.first_error {
                    Some(e) if b.degenerate == b.total => format!("degenerate: {e}"),
                    Some(e) => format!("failed: {e}"),
                    None if claimed > 0 => format!("being computed by another run: {claimed} cell(s) (see Run)"),
                    None if refused > 0 => format!("not computed: {refused} record(s) refused by their checksum (see Run)"),
                    None => "not computed yet".to_string(),
                };
                let pad = if solver_end { " | | |" } else { "" };
                writeln!(md, "| {} | {} | – | {} | | {}/{} | | |{pad}", md_cell(&m.label), md_cell(&data[b.dataset].label), md_cell(&why), b.ok, b.total).ok()
            }
        };
    }
    let mut notes: Vec<String> =
        data.iter().filter_map(|p| p.data.note.as_ref().map(|n| format!("- {}{}: {}", p.label, if is_stand_in(p) { "*" } else { "" }, n))).collect();
    // Unlabelled sets: which metrics their cells lack, so a dash is not read as "not computed".
    let label_metrics: Vec<&str> = {
        let mut v: Vec<&str> =
            plan.methods.iter().flat_map(|m| m.protocols.iter().filter(|p| p.needs_labels()).flat_map(|p| p.metrics().iter().copied())).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    if !label_metrics.is_empty() {
        notes.extend(
            data.iter()
                .filter(|p| p.data.labels.is_none())
                .map(|p| format!("- {}: no labels: {} not scored on it (shown as –); label-free metrics are", p.label, label_metrics.join(", "))),
        );
    }
    if !notes.is_empty() {
        writeln!(md, "\n## Data notes\n\n\\* marks a stand-in for the paper's data set.\n\n{}", notes.join("\n")).ok();
    }
    // The state of the store, not the history of this run (how many cells were computed now),
    // and the code versions of the records shown, not of this binary: a re-run that computes
    // nothing rewrites the table byte for byte.
    let with_records = summary.recorded;
    let mut versions: BTreeMap<&str, usize> = BTreeMap::new();
    for r in best.iter().filter_map(|b| b.record.as_ref()) {
        *versions.entry(r.code_version.as_str()).or_default() += 1;
    }
    writeln!(
        md,
        "\n## Run\n\n{} cells: {} with records ({} failed{}), {} not computed yet{}. Code versions of the records shown: {}.",
        summary.total,
        with_records,
        summary.failed,
        if summary.degenerate > 0 { format!(", {} degenerate", summary.degenerate) } else { String::new() },
        summary.total - (with_records + summary.claimed.len()).min(summary.total),
        if summary.claimed.is_empty() { String::new() } else { format!(", {} being computed by another run", summary.claimed.len()) },
        if versions.is_empty() { "none".to_string() } else { versions.iter().map(|(v, n)| format!("{v} ({n})")).collect::<Vec<_>>().join(", ") }
    )
    .ok();
    writeln!(
        md,
        "\nMethod versions of the cells shown (part of every record's key; a method whose numerics change gets a new version and new cells): {}.",
        method_versions(plan, best)
    )
    .ok();
    // Cells another run is computing: the values shown for their pairs are the best of the cells
    // finished so far, which a later table may change.
    if !summary.claimed.is_empty() {
        let mut pairs: BTreeMap<(usize, usize), usize> = BTreeMap::new();
        for c in &summary.claimed {
            *pairs.entry((c.method, c.dataset)).or_default() += 1;
        }
        let list: Vec<String> =
            pairs.iter().map(|((m, d), n)| format!("- {} / {}: {n} cell(s)", md_cell(&plan.methods[*m].label), md_cell(&data[*d].label))).collect();
        writeln!(
            md,
            "\n{} cell(s) were being computed by another run when this table was written; the values of their pairs are the best of the cells finished so far (`structdr run` again when it finishes):\n\n{}",
            summary.claimed.len(),
            list.join("\n")
        )
        .ok();
    }
    // Records that are not what they claim are never shown: say which, and why.
    if !summary.refused.is_empty() {
        let list: Vec<String> = summary
            .refused
            .iter()
            .map(|r| {
                format!(
                    "- {} / {} {} (`{}.json`): {}",
                    md_cell(&data[r.dataset].label),
                    md_cell(&plan.methods[r.method].label),
                    md_cell(&r.params),
                    r.hash,
                    r.why
                )
            })
            .collect();
        writeln!(
            md,
            "\n{} record(s) refused by their checksum: counted as not computed, their values not shown (`structdr run` recomputes them):\n\n{}",
            list.len(),
            list.join("\n")
        )
        .ok();
    }
    if summary.unverified > 0 {
        writeln!(
            md,
            "\n{} record(s) carry no checksum (written before records carried one): used unverified; `structdr store seal` stamps them.",
            summary.unverified
        )
        .ok();
    }

    // ---------- CSV (long format, RFC 4180 quoting) ----------
    // specs with `repeats > 1` add two columns: the sd over seeds and the number of seeds
    let repeated = plan.spec.repeats > 1;
    let mut header = vec![
        "method",
        "dataset",
        "paper_dataset",
        "metric",
        "ours",
        "paper",
        "diff",
        "params",
        "d",
        "n_samples",
        "cells_ok",
        "cells_total",
        "fit_seconds",
        "status",
        "stopped",
        "stopped_short",
    ];
    if repeated {
        header.extend(["sd", "repeats"]);
    }
    // `[table] mean_std`: one row per method, data set, selection and metric instead (and the main
    // table's metric of rows that select by another metric).
    let mean_std = !plan.spec.table.mean_std.is_empty();
    if mean_std {
        header.insert(3, "selection");
    }
    let mut csv = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
    csv.write_record(&header).map_err(std::io::Error::other)?;
    // One CSV row: the value `ours` of `metric` (under `selection`, for mean ± std tables) read from
    // `record`, the cell of pair `b`.
    let row_of = |b: &Best, selection: Option<&str>, metric: &str, ours: Option<f64>, paper: Option<f64>, record: Option<&Record>| -> Vec<String> {
        let p = &data[b.dataset];
        let o = |v: Option<f64>| v.map(|v| format!("{v:.6}")).unwrap_or_default();
        let stop = record.map(Record::stop_reason);
        let mut row = vec![plan.methods[b.method].label.clone(), p.label.clone(), p.paper.clone().unwrap_or_default()];
        row.extend(selection.map(str::to_string));
        row.extend([
            metric.to_string(),
            o(ours),
            o(paper),
            o(ours.zip(paper).map(|(o, p)| o - p)),
            record.map(Record::params_string).unwrap_or_default(),
            record.map(|r| r.dim.to_string()).unwrap_or_default(),
            p.data.x.nrows().to_string(),
            b.ok.to_string(),
            b.total.to_string(),
            record.map(|r| format!("{:.3}", r.fit_seconds)).unwrap_or_default(),
            if record.is_some() {
                "ok"
            } else if b.first_error.is_some() {
                "failed"
            } else {
                "missing"
            }
            .to_string(),
            stop.as_ref().map(|s| s.text()).unwrap_or_default(),
            stop.as_ref().map(|s| s.stopped_short().to_string()).unwrap_or_default(),
        ]);
        if repeated {
            let sd = if selection.is_some() { None } else { b.sd.get(&b.metric).copied() };
            row.extend([o(sd), b.repeats.to_string()]);
        }
        row
    };
    if mean_std {
        // A row whose metric is not one of the section's (the demo: LOOCV in the main table, k-means
        // ACC / NMI below) keeps its main-table value as a `best_single` row, so the CSV holds
        // everything the Markdown shows.
        let stems = &plan.spec.table.mean_std;
        for b in best.iter().filter(|b| !stems.iter().any(|s| b.metric == format!("{s}_mean") || b.metric == format!("{s}_std"))) {
            let mut row = row_of(b, Some("best_single"), &b.metric, b.score(), paper_of(b.method, b.dataset), b.record.as_ref());
            if repeated {
                let i = row.len() - 2; // the `sd` column: the main table's sd over the repeats
                row[i] = b.sd.get(&b.metric).map(|v| format!("{v:.6}")).unwrap_or_default();
            }
            csv.write_record(&row).map_err(std::io::Error::other)?;
        }
        for e in mean_std::entries(plan, data, best) {
            let row = row_of(get(e.method, e.dataset), Some(e.selection), &e.metric, e.ours, e.paper, e.record);
            csv.write_record(&row).map_err(std::io::Error::other)?;
        }
    } else {
        for b in best {
            let row = row_of(b, None, &b.metric, b.score(), paper_of(b.method, b.dataset), b.record.as_ref());
            csv.write_record(&row).map_err(std::io::Error::other)?;
        }
    }
    let csv = csv.into_inner().map_err(|e| std::io::Error::other(e.to_string()))?;

    // ---------- LaTeX ----------
    let mut tex = String::new();
    writeln!(tex, "% {} -- generated by structdr from {}; paper values in parentheses are the papers' reported numbers.", plan.spec.title, plan.path.display())
        .ok();
    writeln!(tex, "\\begin{{tabular}}{{l{}}}\n\\hline", "r".repeat(data.len())).ok();
    writeln!(tex, "Method & {} \\\\\n\\hline", data.iter().map(|p| tex_text(&p.label)).collect::<Vec<_>>().join(" & ")).ok();
    writeln!(tex, "$d$ & {} \\\\", data.iter().map(|p| p.energy_dim.to_string()).collect::<Vec<_>>().join(" & ")).ok();
    for (mi, m) in plan.methods.iter().enumerate() {
        let cells: Vec<String> = (0..data.len())
            .map(|di| {
                let b = get(mi, di);
                let mark = if b.record.as_ref().is_some_and(|r| r.stop_reason().stopped_short()) { "$^\\dagger$" } else { "" };
                let ours = b.score_text().map(|t| format!("{}{mark}", t.replace(" ± ", " $\\pm$ "))).unwrap_or_else(|| "--".into());
                match paper_of(mi, di) {
                    Some(p) => format!("{ours} ({p:.4})"),
                    None => ours,
                }
            })
            .collect();
        writeln!(tex, "{} & {} \\\\", tex_text(&m.label), cells.join(" & ")).ok();
    }
    writeln!(tex, "\\hline\n\\end{{tabular}}").ok();
    if best.iter().any(|b| b.record.as_ref().is_some_and(|r| r.stop_reason().stopped_short())) {
        writeln!(tex, "% $^\\dagger$: the selected cell stopped before its stopping rule was met (the Markdown table's footnote names each).").ok();
    }

    let files = TableFiles { md: stem.with_extension("md"), csv: stem.with_extension("csv"), tex: stem.with_extension("tex") };
    crate::atomic_write(&files.md, md.as_bytes())?;
    crate::atomic_write(&files.csv, &csv)?;
    crate::atomic_write(&files.tex, tex.as_bytes())?;
    Ok(files)
}
