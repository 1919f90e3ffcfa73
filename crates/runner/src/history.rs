//! Looking at the nightly history ([`crate::nightly`]): a text summary (`structdr history`), trend
//! figures per series (speed: the median seconds of every case per run; quality: the headline
//! metric of every cell per run; runs with a regression of that case or cell ringed in red), and
//! one HTML page with every series, its runs, commits, regressions and figures
//! (`results/history/index.html`, linked from the report).

use crate::figures::render::{write_lines, LinePanel};
use crate::html::{esc, page_html, relative};
use crate::nightly::{read_history, Entry, Suite};
use crate::paired::median;
use anyhow::Result;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The history files of `dir` (`*.jsonl`), sorted, with their entries.
fn series(dir: &Path) -> Result<Vec<(String, Vec<Entry>)>> {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(d) => d.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|e| e == "jsonl")).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", dir.display())),
    };
    files.sort();
    files.into_iter().map(|p| Ok((p.file_stem().unwrap_or_default().to_string_lossy().into_owned(), read_history(&p)?))).collect()
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(10)]
}

/// A panel title for a cell or case id (`spec/dataset/method params[: case]`): data set, method
/// and case, without the parameters (the page's tables have the full ids).
fn panel_title(id: &str) -> String {
    let (cell, case) = id.split_once(": ").unwrap_or((id, ""));
    let mut parts = cell.splitn(3, '/');
    let (_, dataset, rest) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(cell));
    let method = rest.split_whitespace().next().unwrap_or(rest);
    let repeat = rest.split_whitespace().find(|w| w.starts_with('#')).map(|r| format!(" {r}")).unwrap_or_default();
    if case.is_empty() {
        format!("{dataset} · {method}{repeat}")
    } else {
        format!("{dataset} · {method}{repeat} · {case}")
    }
}

/// Panel titles for the ids of one figure: [`panel_title`], and where two ids would share a title
/// (one method over a parameter list, e.g. t-SNE's two gradients), the parameters that tell them
/// apart in parentheses.
fn panel_titles(ids: &[&str]) -> Vec<String> {
    let titles: Vec<String> = ids.iter().map(|id| panel_title(id)).collect();
    let params = |id: &str| -> Vec<String> {
        let cell = id.split_once(": ").map_or(id, |c| c.0);
        cell.splitn(3, '/').nth(2).unwrap_or(cell).split_whitespace().skip(1).filter(|w| w.contains('=')).map(str::to_string).collect()
    };
    titles
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let twins: Vec<usize> = (0..ids.len()).filter(|&j| titles[j] == *t).collect();
            if twins.len() < 2 {
                return t.clone();
            }
            let shared = |w: &String| twins.iter().all(|&j| params(ids[j]).contains(w));
            let own: Vec<String> = params(ids[i]).into_iter().filter(|w| !shared(w)).collect();
            if own.is_empty() {
                t.clone()
            } else {
                format!("{t} ({})", own.join(", "))
            }
        })
        .collect()
}

/// The metric a quality cell is drawn by: the first of these it has.
const HEADLINE: [&str; 5] = ["loocv_1nn_accuracy_components", "loocv_1nn_accuracy", "acc_mean", "trustworthiness", "nmi_mean"];

fn headline(metrics: &std::collections::BTreeMap<String, f64>) -> Option<(&'static str, f64)> {
    HEADLINE.iter().find_map(|m| metrics.get(*m).map(|v| (*m, *v)))
}

/// A text summary of every series: runs, the last run, its regressions, how its speed was judged
/// and its notes, and per speed case its paired ratio, or (not paired) the last median against
/// the previous accepted run's stored one.
pub fn summary(dir: &Path) -> Result<String> {
    let all = series(dir)?;
    let mut out = String::new();
    if all.is_empty() {
        writeln!(out, "no history in {} (run `structdr nightly experiments/nightly/suite.toml`)", dir.display())?;
        return Ok(out);
    }
    for (name, entries) in &all {
        let Some(last) = entries.last() else { continue };
        let regressed = entries.iter().filter(|e| !e.regressions.is_empty()).count();
        writeln!(
            out,
            "series {name}: {} runs ({} backfilled), {} with regressions; machine: {}, {} ({})",
            entries.len(),
            entries.iter().filter(|e| e.backfill).count(),
            regressed,
            last.machine.cpu,
            last.machine.kernel,
            last.machine.blas
        )?;
        writeln!(
            out,
            "  last run: {} {} ({}): {} quality cells, {} speed cases, {:.0} s, {}",
            short(&last.commit),
            last.subject,
            last.commit_date,
            last.quality.len(),
            last.speed.len(),
            last.wall_seconds,
            if last.regressions.is_empty() {
                "no regressions".to_string()
            } else {
                format!("{} regressions{}", last.regressions.len(), if last.accepted { " (accepted)" } else { "" })
            }
        )?;
        for r in &last.regressions {
            let ratio = match (r.ratio, r.interval) {
                (Some(x), Some((lo, hi))) => format!("x{x:.2} [{lo:.2}, {hi:.2}], "),
                _ => String::new(),
            };
            writeln!(out, "    {} {} [{}] since {}: {ratio}{}", r.kind, r.id, r.metric, short(&r.since), r.detail)?;
        }
        if !last.speed_verdict.is_empty() {
            writeln!(out, "  speed: {}", last.speed_verdict)?;
        }
        for n in &last.notes {
            writeln!(out, "  note: {n}")?;
        }
        let previous = entries.iter().rev().skip(1).find(|e| e.accepted);
        let alarm = crate::nightly::Alarm::default();
        for (case, samples) in &last.speed {
            let now = median(samples);
            // a paired case: its ratio against the baseline binary in the same run
            if let Some(p) = last.baseline_speed.get(case).and_then(|b| crate::paired::judge_case(case, b, samples, alarm.min_relative, alarm.min_seconds)) {
                writeln!(
                    out,
                    "  {case}: {now:.4} s, x{:.2} [{:.2}, {:.2}] against {} in the same run",
                    p.ratio,
                    p.interval.0,
                    p.interval.1,
                    short(&last.baseline)
                )?;
                continue;
            }
            let before = previous.and_then(|p| p.speed.get(case)).map(|s| median(s));
            match before {
                Some(b) => writeln!(out, "  {case}: {now:.4} s (previous accepted {b:.4} s, {:+.1}%)", 100.0 * (now - b) / b)?,
                None => writeln!(out, "  {case}: {now:.4} s")?,
            }
        }
    }
    Ok(out)
}

/// Draws a series' trend figures into `dir`: `speed.{png,svg}` and `quality.{png,svg}`; returns
/// the PNGs.
fn trend_figures(name: &str, entries: &[Entry], dir: &Path) -> Result<Vec<PathBuf>> {
    let mut cases: Vec<&String> = entries.iter().flat_map(|e| e.speed.keys()).collect();
    cases.sort();
    cases.dedup();
    let mut cells: Vec<&String> = entries.iter().flat_map(|e| e.quality.keys()).collect();
    cells.sort();
    cells.dedup();
    let flagged = |e: &Entry, id: &str| e.regressions.iter().any(|r| r.id == id);
    let mut out = Vec::new();
    let case_titles = panel_titles(&cases.iter().map(|c| c.as_str()).collect::<Vec<_>>());
    let speed: Vec<LinePanel> = cases
        .iter()
        .zip(case_titles)
        .map(|(case, title)| {
            let points: Vec<(f64, f64)> =
                entries.iter().enumerate().filter_map(|(i, e)| e.speed.get(*case).filter(|s| !s.is_empty()).map(|s| ((i + 1) as f64, median(s)))).collect();
            let marks = entries
                .iter()
                .enumerate()
                .filter(|(_, e)| flagged(e, case))
                .filter_map(|(i, e)| e.speed.get(*case).map(|s| ((i + 1) as f64, median(s))))
                .collect();
            LinePanel { title, points, x_label: "run".into(), y_label: "median seconds".into(), stems: false, marks }
        })
        .collect();
    if !speed.is_empty() {
        let (png, _) = write_lines(&dir.join("speed"), &format!("{name}: speed cases (median of each run's samples; red: regression)"), &speed, Some(3))
            .map_err(|e| anyhow::anyhow!("speed figure: {e}"))?;
        out.push(png);
    }
    let cell_titles = panel_titles(&cells.iter().map(|c| c.as_str()).collect::<Vec<_>>());
    let quality: Vec<LinePanel> = cells
        .iter()
        .zip(cell_titles)
        .filter_map(|(cell, title)| {
            let metric = entries.iter().find_map(|e| e.quality.get(*cell).and_then(|c| headline(&c.metrics)))?.0;
            let points: Vec<(f64, f64)> = entries
                .iter()
                .enumerate()
                .filter_map(|(i, e)| e.quality.get(*cell).and_then(|c| c.metrics.get(metric)).map(|v| ((i + 1) as f64, *v)))
                .collect();
            let marks = entries
                .iter()
                .enumerate()
                .filter(|(_, e)| flagged(e, cell))
                .filter_map(|(i, e)| e.quality.get(*cell).and_then(|c| c.metrics.get(metric)).map(|v| ((i + 1) as f64, *v)))
                .collect();
            Some(LinePanel { title, points, x_label: "run".into(), y_label: metric.into(), stems: false, marks })
        })
        .collect();
    if !quality.is_empty() {
        let (png, _) = write_lines(&dir.join("quality"), &format!("{name}: quality cells (headline metric per run; red: regression)"), &quality, Some(3))
            .map_err(|e| anyhow::anyhow!("quality figure: {e}"))?;
        out.push(png);
    }
    Ok(out)
}

/// Writes `<dir>/index.html` and every series' figures under `<dir>/<series>/`; returns the page.
pub fn write_page(dir: &Path, suite: Option<&Suite>) -> Result<PathBuf> {
    let all = series(dir)?;
    let link = |commit: &str| -> String {
        let c = commit.trim_end_matches("+dirty");
        match suite.and_then(|s| s.commit_url.as_ref()) {
            Some(t) => format!("<a href=\"{}\"><code>{}</code></a>", esc(&t.replace("{commit}", c)), esc(short(commit))),
            None => format!("<code title=\"{}\">{}</code>", esc(commit), esc(short(commit))),
        }
    };
    let mut body = String::from("<h1>structdr nightly history</h1>\n");
    writeln!(
        body,
        "<p class=meta>Written by <code>structdr history</code> from <code>{}</code>: one series per machine fingerprint; every run of the nightly suite, its commit, its regressions (red) and trend figures. See <code>docs/nightly.md</code>. Back to <a href=\"../report/index.html\">the report</a>.</p>",
        esc(&dir.display().to_string())
    )?;
    if all.is_empty() {
        body += "<p>No runs yet.</p>\n";
    }
    for (name, entries) in &all {
        let sub = dir.join(name);
        std::fs::create_dir_all(&sub).map_err(|e| crate::files::path_error("create", &sub, e))?;
        let pngs = trend_figures(name, entries, &sub)?;
        let m = entries.last().map(|e| &e.machine);
        writeln!(body, "<section><h2>Series <code>{}</code></h2>", esc(name))?;
        if let Some(m) = m {
            writeln!(body, "<p>Machine: {}; BLAS: <code>{}</code>, kernels {}; {}.</p>", esc(&m.cpu), esc(&m.blas), esc(&m.kernel), esc(&m.threads))?;
        }
        body += "<table><tr><th>run</th><th>commit</th><th>date</th><th>subject</th><th>quality cells</th><th>speed cases</th><th>wall s</th><th>status</th></tr>\n";
        for (i, e) in entries.iter().enumerate() {
            let status = if e.regressions.is_empty() {
                format!("<td class=ok>ok{}</td>", if e.problems.is_empty() { String::new() } else { format!(", {} problems", e.problems.len()) })
            } else {
                format!(
                    "<td class=far>{} regression{}{}</td>",
                    e.regressions.len(),
                    if e.regressions.len() == 1 { "" } else { "s" },
                    if e.forced_accept { " (accepted)" } else { "" }
                )
            };
            // the subject's first 90 characters; the whole in the tooltip
            let subject: String = e.subject.chars().take(90).collect();
            let more = if e.subject.chars().count() > 90 { "…" } else { "" };
            writeln!(
                body,
                "<tr><td>{}{}</td><td>{}</td><td>{}</td><td class=text title=\"{}\">{}{more}</td><td>{}</td><td>{}</td><td>{:.0}</td>{status}</tr>",
                i + 1,
                if e.backfill { " (backfill)" } else { "" },
                link(&e.commit),
                esc(&e.commit_date),
                esc(&e.subject),
                esc(&subject),
                e.quality.len(),
                e.speed.len(),
                e.wall_seconds
            )?;
        }
        body += "</table>\n";
        let regressions: Vec<(usize, &Entry, &crate::nightly::Regression)> =
            entries.iter().enumerate().flat_map(|(i, e)| e.regressions.iter().map(move |r| (i + 1, e, r))).collect();
        if !regressions.is_empty() {
            body += "<h3>Regressions</h3>\n<table><tr><th>run</th><th>kind</th><th>cell or case</th><th>metric</th><th>commits</th><th>old</th><th>new</th><th>judged</th></tr>\n";
            let v = |x: Option<f64>| x.map(|v| format!("{v:.6}")).unwrap_or_else(|| "–".into());
            for (i, e, r) in regressions {
                writeln!(
                    body,
                    "<tr class=far><td>{i}</td><td>{}</td><td class=text>{}</td><td>{}</td><td>{}..{}</td><td>{}</td><td>{}</td><td class=text>{}</td></tr>",
                    esc(&r.kind),
                    esc(&r.id),
                    esc(&r.metric),
                    link(&r.since),
                    link(&e.commit),
                    v(r.old),
                    v(r.new),
                    esc(&match (r.ratio, r.interval) {
                        (Some(x), Some((lo, hi))) => format!("x{x:.2} [{lo:.2}, {hi:.2}]: {}", r.detail),
                        _ => r.detail.clone(),
                    })
                )?;
            }
            body += "</table>\n";
        }
        if !pngs.is_empty() {
            body += "<div class=figs>\n";
            for p in &pngs {
                let rel = relative(dir, p);
                writeln!(
                    body,
                    "<figure style=\"max-width:100%\"><a href=\"{0}\"><img src=\"{0}\" alt=\"{0}\"></a><figcaption>{0}</figcaption></figure>",
                    esc(&rel)
                )?;
            }
            body += "</div>\n";
        }
        body += "</section>\n";
    }
    let page = dir.join("index.html");
    crate::files::atomic_write(&page, page_html("structdr nightly history", &body).as_bytes())?;
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panel_titles_drop_the_spec_and_parameters() {
        assert_eq!(panel_title("nightly_speed/vehicle/spl C=1000.0 dim=6 k=10: fit"), "vehicle · spl · fit");
        assert_eq!(panel_title("q/iris/esl C=1.0 lambda=0.9"), "iris · esl");
        assert_eq!(panel_title("q/iris/rproj dim=2 #3"), "iris · rproj #3");
        // one method over a parameter list: the differing parameters tell the panels apart
        let ids = ["s/vehicle/tsne dim=2 gradient=barnes-hut theta=0.5: fit", "s/vehicle/tsne dim=2 gradient=fft theta=0.5: fit", "s/vehicle/spl k=10: fit"];
        assert_eq!(panel_titles(&ids), ["vehicle · tsne · fit (gradient=barnes-hut)", "vehicle · tsne · fit (gradient=fft)", "vehicle · spl · fit"]);
    }
}
