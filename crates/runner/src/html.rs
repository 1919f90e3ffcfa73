//! The static HTML report (`structdr report`, `results/report/index.html`): every spec's table
//! with ours beside the papers' values and the difference coloured, a scorecard per table and
//! row, every figure, and the provenance of the records. It reads what runs wrote (the tables'
//! CSV files, the figures, the record stores): no server, no network, no script needed to read
//! it; links are relative, so the folder works offline and inside a clone.

use crate::spec::{self, Plan};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Differences up to these many points (0.01 on a 0-1 scale) count as close in the scorecard.
pub const POINTS: [f64; 3] = [0.01, 0.02, 0.03];

/// One row of a table's CSV (the long format [`crate::report::write_tables`] writes).
#[derive(Debug, Clone, Default)]
pub struct TableRow {
    /// Row label (method).
    pub method: String,
    /// The metric of the value (a table with several metrics shows one row per method and metric).
    pub metric: String,
    /// Column label (data set).
    pub dataset: String,
    /// Our value, if any.
    pub ours: Option<f64>,
    /// The paper's value, if any.
    pub paper: Option<f64>,
    /// `ours - paper`.
    pub diff: Option<f64>,
    /// Selected parameters.
    pub params: String,
    /// `ok`, `failed` or `missing`.
    pub status: String,
    /// Standard deviation of our value over the seeds (tables of specs with `repeats`).
    pub sd: Option<f64>,
    /// Seeds our value is the mean of (tables of specs with `repeats`).
    pub repeats: Option<usize>,
    /// Why the selected cell's fit stopped, in words (empty in older tables).
    pub stopped: String,
    /// Whether it stopped before its stopping rule was met (shown with a dagger).
    pub stopped_short: bool,
}

/// The rows of a table CSV (RFC 4180, read by the `csv` crate), by the header's column names.
pub fn read_table_csv(text: &str) -> Result<Vec<TableRow>, String> {
    let mut reader = csv::ReaderBuilder::new().flexible(false).from_reader(text.as_bytes());
    let header = reader.headers().map_err(|e| format!("table CSV header: {e}"))?.clone();
    if header.is_empty() {
        return Err("empty table CSV".into());
    }
    let col = |name: &str| header.iter().position(|h| h == name).ok_or_else(|| format!("table CSV has no column '{name}'"));
    let (m, d, o, p, df, pa, st) = (col("method")?, col("dataset")?, col("ours")?, col("paper")?, col("diff")?, col("params")?, col("status")?);
    // present only when the spec repeats its randomised cells
    let (sd, reps) = (col("sd").ok(), col("repeats").ok());
    // tables with a `[table] mean_std` section: one row per selection and metric; the report shows
    // (and scores) the means of the best single configuration, the Markdown table the rest
    let (metric, selection) = (col("metric").ok(), col("selection").ok());
    // absent in tables written before the stopping reason was recorded
    let (stopped, short) = (col("stopped").ok(), col("stopped_short").ok());
    let num = |s: &str| s.trim().parse::<f64>().ok();
    let mut rows = Vec::new();
    for (line, record) in reader.records().enumerate() {
        let f = record.map_err(|e| format!("table CSV row {}: {e}", line + 2))?;
        let get = |i: usize| f.get(i).unwrap_or_default().to_string();
        let metric = metric.map(get).unwrap_or_default();
        if selection.is_some_and(|i| get(i) != "best_single") || (selection.is_some() && metric.ends_with("_std")) {
            continue;
        }
        rows.push(TableRow {
            method: get(m),
            metric,
            dataset: get(d),
            ours: num(&get(o)),
            paper: num(&get(p)),
            diff: num(&get(df)),
            params: get(pa),
            status: get(st),
            sd: sd.and_then(|i| num(&get(i))),
            repeats: reps.and_then(|i| get(i).trim().parse().ok()),
            stopped: stopped.map(get).unwrap_or_default(),
            stopped_short: short.is_some_and(|i| get(i) == "true"),
        });
    }
    Ok(rows)
}

/// A row's agreement with the paper: cells compared, within each of [`POINTS`], mean |diff|.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score {
    /// Cells with both values.
    pub n: usize,
    /// Cells with `|diff| <= POINTS[i]`.
    pub within: [usize; 3],
    /// Mean |ours - paper| over the `n` cells.
    pub mad: f64,
}

/// Selected cells among `rows` whose fit stopped before its stopping rule was met.
pub fn stopped_short(rows: &[&TableRow]) -> usize {
    rows.iter().filter(|r| r.stopped_short && r.ours.is_some()).count()
}

/// The scorecard of a set of rows (`None` when no cell has both values).
pub fn score(rows: &[&TableRow]) -> Option<Score> {
    let diffs: Vec<f64> = rows.iter().filter_map(|r| r.diff).collect();
    if diffs.is_empty() {
        return None;
    }
    let mut within = [0; 3];
    for d in &diffs {
        for (k, p) in POINTS.iter().enumerate() {
            // compare at 1e-9 above the bound: a printed 0.0300 difference is within 3 points
            within[k] += usize::from(d.abs() <= p + 1e-9);
        }
    }
    Some(Score { n: diffs.len(), within, mad: diffs.iter().map(|d| d.abs()).sum::<f64>() / diffs.len() as f64 })
}

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// `to` relative to the directory `from` (both relative to one root, or both absolute).
pub(crate) fn relative(from: &Path, to: &Path) -> String {
    let (f, t): (Vec<_>, Vec<_>) = (from.components().collect(), to.components().collect());
    let common = f.iter().zip(t.iter()).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..f.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c.as_os_str());
    }
    out.to_string_lossy().replace('\\', "/")
}

/// What the records of one spec say about how they were made.
#[derive(Debug, Default)]
struct Provenance {
    records: usize,
    code_versions: BTreeMap<String, usize>,
    threads: BTreeMap<String, usize>,
    /// Machines the records were computed on, with their record counts.
    machines: BTreeMap<String, usize>,
    data: BTreeSet<(String, String)>,
    method_versions: BTreeSet<(String, u32)>,
    fit_seconds: f64,
    /// Records used without a checksum (written before records carried one).
    unverified: usize,
    /// Records refused by their checksum: (data set name, method name, parameters, why).
    refused: Vec<(String, String, String, String)>,
}

fn provenance(plan: &Plan, results: &Path) -> Provenance {
    let mut p = Provenance::default();
    // a spec that never ran has no store, and the report creates none
    let dir = plan.output_dir(results).join(crate::store::RECORDS_DIR);
    let Some(records) = dir.is_dir().then(|| crate::store::Store::open(&dir).and_then(|s| s.records()).ok()).flatten() else { return p };
    for rec in records.into_iter().filter_map(|(_, r)| r) {
        let integrity = rec.integrity();
        if let Some(why) = integrity.refusal() {
            p.refused.push((rec.key.dataset.clone(), rec.key.method.clone(), rec.params_string(), why));
            continue;
        }
        p.unverified += usize::from(integrity == crate::store::Integrity::Unverified);
        p.records += 1;
        *p.code_versions.entry(rec.code_version.clone()).or_default() += 1;
        *p.threads.entry(rec.threads.clone()).or_default() += 1;
        *p.machines.entry(rec.machine.clone().unwrap_or_else(|| "not recorded (records older than the field)".into())).or_default() += 1;
        p.data.insert((rec.key.dataset.clone(), rec.key.data_checksum.clone()));
        p.method_versions.insert((rec.key.method.clone(), rec.key.method_version));
        p.fit_seconds += rec.fit_seconds;
    }
    p
}

/// The report's pages, written under `out` (`index.html`); returns the page's path. `specs`: the
/// experiment specs to include (those without outputs yet are listed as such); `results`: the
/// results root the specs' outputs live under; `docs`: the project's `docs/` (parity notes).
pub fn write_report(specs: &[PathBuf], results: &Path, docs: &Path, out: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(out).map_err(|e| crate::files::path_error("create the report directory", out, e))?;
    let mut body = String::new();
    let mut overview = String::new();
    let mut all_rows: Vec<(String, TableRow)> = Vec::new();
    let mut figures_total = 0;
    for spec_path in specs {
        let plan = match spec::load(spec_path) {
            Ok(p) => p,
            Err(e) => {
                writeln!(
                    body,
                    "<section><h2>{}</h2><p class=bad>spec does not load: {}</p></section>",
                    esc(&spec_path.display().to_string()),
                    esc(&e.to_string())
                )?;
                continue;
            }
        };
        let id = plan.spec.id.clone();
        writeln!(
            body,
            "<section id=\"{}\"><h2>{}</h2><p class=meta>spec <code>{}</code> · id <code>{id}</code></p>",
            esc(&id),
            esc(&plan.spec.title),
            esc(&spec_path.display().to_string())
        )?;
        if !plan.spec.description.is_empty() {
            writeln!(body, "<p>{}</p>", esc(&plan.spec.description))?;
        }
        // the table
        let csv_path = PathBuf::from(format!("{}.csv", plan.table_stem(results).display()));
        let mut table_score = None;
        let mut table_short = 0;
        let prov = provenance(&plan, results);
        if let Ok(text) = std::fs::read_to_string(&csv_path) {
            let mut rows = read_table_csv(&text).map_err(|e| anyhow::anyhow!("{}: {e}", csv_path.display()))?;
            withhold_refused(&plan, &mut rows, &prov.refused);
            write_table(&mut body, &plan, &rows, docs, out)?;
            let refs: Vec<&TableRow> = rows.iter().collect();
            table_score = score(&refs);
            table_short = stopped_short(&refs);
            all_rows.extend(rows.into_iter().map(|r| (id.clone(), r)));
        } else if !plan.methods.is_empty() {
            writeln!(body, "<p class=bad>no table yet: run <code>structdr run {}</code></p>", esc(&spec_path.display().to_string()))?;
        }
        // figures
        let out_dir = plan.output_dir(results);
        let mut pngs: Vec<PathBuf> = std::fs::read_dir(&out_dir)
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|e| e == "png")).collect())
            .unwrap_or_default();
        pngs.sort();
        if !pngs.is_empty() {
            writeln!(body, "<h3>Figures</h3><div class=figs>")?;
            for p in &pngs {
                let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                writeln!(
                    body,
                    "<figure><a href=\"{0}\"><img src=\"{0}\" alt=\"{1}\"></a><figcaption>{1}</figcaption></figure>",
                    esc(&relative(out, p)),
                    esc(&name)
                )?;
            }
            writeln!(body, "</div>")?;
            figures_total += pngs.len();
        }
        // provenance
        if !prov.refused.is_empty() {
            writeln!(
                body,
                "<p class=bad>{} record(s) of this spec's store are refused by their checksum (changed after they were written); their values are not shown, and cells they would fill show as not computed until <code>structdr run {}</code> recomputes them:</p><ul>{}</ul>",
                prov.refused.len(),
                esc(&spec_path.display().to_string()),
                prov.refused.iter().map(|(d, m, p, why)| format!("<li>{} / {} <code>{}</code>: {}</li>", esc(d), esc(m), esc(p), esc(why))).collect::<String>()
            )?;
        }
        if prov.records > 0 {
            let list = |m: &BTreeMap<String, usize>| m.iter().map(|(k, v)| format!("<code>{}</code> ({v})", esc(k))).collect::<Vec<_>>().join(", ");
            writeln!(
                body,
                "<details><summary>Provenance: {} records, {:.0} s of fits in all</summary><ul><li>code versions: {}</li><li>threads and BLAS kernels: {}</li><li>machines: {}</li><li>method versions: {}</li><li>data (name, SHA-256 of the content after preprocessing): {}</li>{}</ul></details>",
                prov.records,
                prov.fit_seconds,
                list(&prov.code_versions),
                list(&prov.threads),
                list(&prov.machines),
                prov.method_versions.iter().map(|(m, v)| format!("{} v{v}", esc(m))).collect::<Vec<_>>().join(", "),
                prov.data.iter().map(|(d, c)| format!("{} <code>{}</code>", esc(d), esc(&c[..c.len().min(16)]))).collect::<Vec<_>>().join(", "),
                if prov.unverified > 0 {
                    format!("<li>records without a checksum (written before records carried one), used unverified: {}</li>", prov.unverified)
                } else {
                    String::new()
                }
            )?;
        }
        writeln!(body, "</section>")?;
        let sc = table_score
            .map(|s| format!("{}/{}/{} of {} within 1/2/3 points, mean |diff| {:.4}", s.within[0], s.within[1], s.within[2], s.n, s.mad))
            .unwrap_or_else(|| "no paper values".into());
        writeln!(
            overview,
            "<tr><td><a href=\"#{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&id),
            esc(&plan.spec.title),
            plan.methods.len(),
            pngs.len(),
            sc,
            table_short
        )?;
    }
    let overall = score(&all_rows.iter().map(|(_, r)| r).collect::<Vec<_>>());
    // Nothing of the machine or binary that renders the page goes in: a report rebuilt from the
    // same records is the same bytes.
    let body = format!(
        r#"<h1>structdr report</h1>
<p class=meta>Generated by <code>structdr report</code> from what the runs wrote (each table's provenance names the code versions, threads, BLAS kernels and machines of its records). Our values beside the papers' (references, never outputs); differences coloured: <span class=ok>&nbsp;within 1 point&nbsp;</span> <span class=near>&nbsp;within 3 points&nbsp;</span> <span class=far>&nbsp;beyond 3 points&nbsp;</span> (1 point = 0.01). Gaps beyond 3 points link to their explanation in <code>docs/parity/</code>.{history}</p>
<h2>Scorecard</h2>
<p>All tables: {overall}. {figures_total} figures. {short} best cells stopped before their stopping rule was met (marked †; the tables' "Selected cells" say how).</p>
<table><tr><th>table</th><th>rows</th><th>figures</th><th>agreement with the papers</th><th>best cells stopped short †</th></tr>
{overview}</table>
{body}"#,
        overall = overall
            .map(|s| format!("{} of {} cells within 1 point, {} within 2, {} within 3; mean |diff| {:.4}", s.within[0], s.n, s.within[1], s.within[2], s.mad))
            .unwrap_or_else(|| "no paper values".into()),
        short = stopped_short(&all_rows.iter().map(|(_, r)| r).collect::<Vec<_>>()),
        // the nightly history's page, when there is one (`structdr history`)
        history = {
            let h = out.parent().unwrap_or(Path::new(".")).join("history").join("index.html");
            if h.is_file() {
                format!(" Results over time: <a href=\"{}\">the nightly history</a>.", esc(&relative(out, &h)))
            } else {
                String::new()
            }
        },
    );
    let page = out.join("index.html");
    crate::files::atomic_write(&page, page_html("structdr report", &body).as_bytes())?;
    Ok(page)
}

/// The page shell of the report and the history page: styles, `body`, and a self-check that
/// marks `data-images="ok N"` on the body when every image loaded (a missing one is a console
/// error naming it), for headless browsers and the curious.
pub(crate) fn page_html(title: &str, body: &str) -> String {
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#222}}
table{{border-collapse:collapse;margin:.6em 0;font-variant-numeric:tabular-nums}}
td,th{{border:1px solid #ccc;padding:.25em .5em;text-align:right}} td:first-child,th:first-child{{text-align:left}}
th{{background:#f3f3f3}} .ok{{background:#d9f2d9}} .near{{background:#fff3c4}} .far{{background:#f8d0d0}}
.bad{{color:#a00}} .meta{{color:#666;font-size:90%}} code{{font-size:90%}} td.text{{text-align:left}}
.figs{{display:flex;flex-wrap:wrap;gap:1em}} figure{{margin:0;max-width:380px}} figure img{{max-width:100%;border:1px solid #ddd}}
figcaption{{font-size:85%;color:#555}} section{{border-top:2px solid #ddd;margin-top:2em}}
</style></head><body>
{body}
<script>
// self-check for headless browsers and the curious: every image must have loaded
window.addEventListener("load", () => {{
  const bad = [...document.images].filter(i => !(i.complete && i.naturalWidth > 0));
  bad.forEach(i => console.error("missing image: " + i.getAttribute("src")));
  document.body.setAttribute("data-images", bad.length ? "missing " + bad.length : "ok " + document.images.length);
}});
</script>
</body></html>
"#,
        title = esc(title)
    )
}

/// A table row whose shown cell is a record refused by its checksum loses its numbers: its status
/// says why. `refused`: (data set name, method name, parameters, why) of each refused record; a
/// row matches by its method's and data set's names and the cell's parameters.
fn withhold_refused(plan: &Plan, rows: &mut [TableRow], refused: &[(String, String, String, String)]) {
    for r in rows.iter_mut() {
        let methods: Vec<&str> = plan.methods.iter().filter(|m| m.label == r.method).map(|m| m.name.as_str()).collect();
        let datasets: Vec<&str> = plan.spec.datasets.iter().filter(|d| d.label.as_deref().unwrap_or(d.name()) == r.dataset).map(|d| d.name()).collect();
        if let Some((_, _, _, why)) = refused.iter().find(|(d, m, p, _)| datasets.contains(&d.as_str()) && methods.contains(&m.as_str()) && *p == r.params) {
            r.ours = None;
            r.diff = None;
            r.sd = None;
            r.status = format!("not computed: its record is refused ({why})");
        }
    }
}

/// One table: rows = methods, columns = data sets; cells "ours (paper, diff)" coloured by |diff|,
/// then the row's scorecard; a gap beyond 3 points links to the method's parity note.
fn write_table(body: &mut String, plan: &Plan, rows: &[TableRow], docs: &Path, out: &Path) -> std::fmt::Result {
    let mut datasets: Vec<&str> = Vec::new();
    // rows of the table: (method, metric) in order of appearance
    let mut methods: Vec<(&str, &str)> = Vec::new();
    for r in rows {
        if !datasets.contains(&r.dataset.as_str()) {
            datasets.push(&r.dataset);
        }
        if !methods.contains(&(r.method.as_str(), r.metric.as_str())) {
            methods.push((&r.method, &r.metric));
        }
    }
    let several_metrics = methods.iter().any(|(m, x)| methods.iter().any(|(m2, x2)| m == m2 && x != x2));
    writeln!(
        body,
        "<table><tr><th></th>{}<th>within 1 / 2 / 3 points</th><th>mean |diff|</th><th>stopped short †</th></tr>",
        datasets.iter().map(|d| format!("<th>{}</th>", esc(d))).collect::<String>()
    )?;
    for &(m, metric) in &methods {
        let mine: Vec<&TableRow> = rows.iter().filter(|r| r.method == m && r.metric == metric).collect();
        let registry_name = plan.methods.iter().find(|x| x.label == m).map(|x| x.name.clone()).unwrap_or_default();
        // the method's parity note: its name, its family's (rpg-tree -> rpg), DRTree's is DDRTree's
        let base = registry_name.split('-').next().unwrap_or("").to_string();
        let note_link = [registry_name.clone(), base.clone(), format!("d{base}")]
            .iter()
            .map(|n| docs.join("parity").join(format!("{n}.md")))
            .find(|p| !registry_name.is_empty() && p.is_file())
            .map(|p| relative(out, &p));
        if several_metrics {
            write!(body, "<tr><td>{} <small>{}</small></td>", esc(m), esc(metric))?;
        } else {
            write!(body, "<tr><td>{}</td>", esc(m))?;
        }
        for d in &datasets {
            let cell = mine.iter().find(|r| r.dataset == *d);
            match cell {
                Some(r) if r.ours.is_some() => {
                    let (class, extra) = match (r.paper, r.diff) {
                        (Some(p), Some(df)) => {
                            let class = if df.abs() <= POINTS[0] + 1e-9 {
                                "ok"
                            } else if df.abs() <= POINTS[2] + 1e-9 {
                                "near"
                            } else {
                                "far"
                            };
                            let link = match (&note_link, class) {
                                (Some(l), "far") => format!(" <a href=\"{}\" title=\"why: parity note\">why?</a>", esc(l)),
                                _ => String::new(),
                            };
                            (class, format!("<br><small>paper {p:.4}, {df:+.4}</small>{link}"))
                        }
                        _ => ("", String::new()),
                    };
                    let spread = match (r.sd, r.repeats) {
                        (Some(sd), Some(n)) if n > 1 => format!(" ± {sd:.4}<br><small>mean of {n} seeds</small>"),
                        _ => String::new(),
                    };
                    let (mark, stop) = if r.stopped_short { ("†", format!("; stopped: {}", r.stopped)) } else { ("", String::new()) };
                    write!(
                        body,
                        "<td class=\"{class}\" title=\"{}{}\">{:.4}{mark}{spread}{extra}</td>",
                        esc(&r.params),
                        esc(&stop),
                        r.ours.unwrap_or(f64::NAN)
                    )?;
                }
                Some(r) => write!(body, "<td class=bad>{}</td>", esc(&r.status))?,
                None => write!(body, "<td>–</td>")?,
            }
        }
        match score(&mine) {
            Some(s) => writeln!(
                body,
                "<td>{} / {} / {} of {}</td><td>{:.4}</td><td>{}</td></tr>",
                s.within[0],
                s.within[1],
                s.within[2],
                s.n,
                s.mad,
                stopped_short(&mine)
            )?,
            None => writeln!(body, "<td>–</td><td>–</td><td>{}</td></tr>", stopped_short(&mine))?,
        }
    }
    writeln!(body, "</table>")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tables of specs with `repeats` carry `sd` and `repeats`; the report shows "mean ± sd".
    #[test]
    fn csv_rows_with_seeds() {
        let text = "method,dataset,paper_dataset,metric,ours,paper,diff,params,d,n_samples,cells_ok,cells_total,fit_seconds,status,sd,repeats\n\
                    rproj,roll,,acc,0.806000,,,dim=2,2,400,1,1,0.000,ok,0.136100,5\n\
                    pca,roll,,acc,0.902500,,,dim=2,2,400,1,1,0.000,ok,,1\n";
        let rows = read_table_csv(text).unwrap();
        assert_eq!((rows[0].sd, rows[0].repeats), (Some(0.1361), Some(5)));
        assert_eq!((rows[1].sd, rows[1].repeats), (None, Some(1)));
        let plan = crate::spec::parse(
            "id = \"t\"\ntitle = \"t\"\nseed = 1\n[evaluation]\nprotocols = [\"loocv\"]\n[[dataset]]\nname = \"iris\"\n[[method]]\nname = \"pca\"\n",
            "t.toml",
            Path::new("t.toml"),
        )
        .unwrap();
        let mut body = String::new();
        write_table(&mut body, &plan, &rows, Path::new("docs"), Path::new("results/report")).unwrap();
        assert!(body.contains("0.8060 ± 0.1361<br><small>mean of 5 seeds</small>"), "{body}");
        assert!(body.contains(">0.9025</td>"), "{body}");
    }

    #[test]
    fn csv_rows_and_scores() {
        let text = "method,dataset,paper_dataset,metric,ours,paper,diff,params,d,n_samples,cells_ok,cells_total,fit_seconds,status\n\
                    SPL,iris,Iris,acc,0.9600,0.9500,0.0100,\"C=1, \"\"q\"\"\",2,150,1,1,0.1,ok\n\
                    SPL,wine,Wine,acc,0.9000,0.9400,-0.0400,k=3,2,178,1,1,0.1,ok\n\
                    PCA,iris,Iris,acc,,,,,,150,0,1,,failed\n";
        let rows = read_table_csv(text).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].params, "C=1, \"q\"");
        assert_eq!((rows[2].ours, rows[2].status.as_str()), (None, "failed"));
        let spl: Vec<&TableRow> = rows.iter().filter(|r| r.method == "SPL").collect();
        let s = score(&spl).unwrap();
        assert_eq!((s.n, s.within), (2, [1, 1, 1]));
        assert!((s.mad - 0.025).abs() < 1e-12);
        assert!(score(&rows.iter().filter(|r| r.method == "PCA").collect::<Vec<_>>()).is_none());
        assert_eq!(relative(Path::new("results/report"), Path::new("results/t1/a.png")), "../t1/a.png");
        assert_eq!(relative(Path::new("results/report"), Path::new("docs/parity/spl.md")), "../../docs/parity/spl.md");
    }
}
