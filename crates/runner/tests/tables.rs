//! The tables' three formats agree and survive any label: every committed CSV reads back with a
//! standard CSV reader (RFC 4180) to the cells of its Markdown table, and a label holding a comma,
//! a quote, a `|` and LaTeX's special characters comes back intact from the CSV, stays one cell
//! of the Markdown table, and is escaped in the LaTeX table.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use structdr::exec::RunOptions;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Splits one Markdown table row into its cells, honouring `\|` escapes.
fn md_cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    let mut cells = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cells.last_mut().unwrap().push('|');
                chars.next();
            }
            '|' => cells.push(String::new()),
            c => cells.last_mut().unwrap().push(c),
        }
    }
    cells.into_iter().map(|c| c.trim().to_string()).collect()
}

/// The main table of a Markdown table file: row label (bold rows only, i.e. ours) -> data set ->
/// cell text, and the data-set header.
fn md_main_table(text: &str) -> (Vec<String>, BTreeMap<String, Vec<String>>) {
    // the main table ends at the first section (`## ...`: a mean ± std section or the selected cells)
    let main = text.split("\n## ").next().unwrap();
    let header = main.lines().find(|l| l.starts_with("| |")).expect("a header row");
    let cols: Vec<String> = md_cells(header)[1..].iter().map(|c| c.trim_end_matches('*').to_string()).collect();
    let rows = main
        .lines()
        .filter(|l| l.starts_with("| **"))
        .map(|l| {
            let c = md_cells(l);
            (c[0].trim_matches('*').to_string(), c[1..].to_vec())
        })
        .collect();
    (cols, rows)
}

/// Checks one CSV against its Markdown table: same number of fields on every row, and every
/// row's value is the Markdown cell's (which prints 4 decimals of the value the CSV prints with
/// 6), with the dagger exactly where the CSV says the cell stopped short.
fn check_pair(csv_path: &Path, md_path: &Path) -> usize {
    let md = std::fs::read_to_string(md_path).unwrap();
    let (cols, rows) = md_main_table(&md);
    let mut reader = csv::Reader::from_path(csv_path).unwrap();
    let header = reader.headers().unwrap().clone();
    let col = |n: &str| header.iter().position(|h| h == n).unwrap_or_else(|| panic!("{}: no column {n}", csv_path.display()));
    let (m, d, o) = (col("method"), col("dataset"), col("ours"));
    let short = header.iter().position(|h| h == "stopped_short");
    // a table with a mean ± std section has one CSV row per selection and metric: the main table
    // shows the best single configuration's value of the table's metric
    let selection = header.iter().position(|h| h == "selection");
    let main_metric = md.split("Metric: `").nth(1).and_then(|t| t.split('`').next()).unwrap_or_default().to_string();
    let mut n = 0;
    for rec in reader.records() {
        let rec = rec.unwrap_or_else(|e| panic!("{}: {e}", csv_path.display()));
        assert_eq!(rec.len(), header.len(), "{}: a row with {} fields", csv_path.display(), rec.len());
        if selection.is_some_and(|s| &rec[s] != "best_single" || rec[col("metric")] != *main_metric) {
            continue;
        }
        let cells = rows.get(&rec[m]).unwrap_or_else(|| panic!("{}: row '{}' not in the Markdown table", csv_path.display(), &rec[m]));
        let j = cols.iter().position(|c| *c == rec[d]).unwrap_or_else(|| panic!("{}: column '{}' not in the Markdown table", csv_path.display(), &rec[d]));
        let shown = &cells[j];
        if let Ok(ours) = rec[o].parse::<f64>() {
            let value: f64 =
                shown.trim_end_matches('†').split(" ± ").next().unwrap().parse().unwrap_or_else(|_| panic!("{}: cell '{shown}'", md_path.display()));
            assert!((value - ours).abs() <= 5.0001e-5, "{} / {}: CSV {ours} against Markdown {shown}", &rec[m], &rec[d]);
        }
        if let Some(s) = short {
            assert_eq!(&rec[s] == "true", shown.ends_with('†'), "{} / {}: dagger", &rec[m], &rec[d]);
        }
        n += 1;
    }
    n
}

#[test]
fn every_committed_csv_reads_back_to_its_markdown_table() {
    let results = root().join("results");
    let mut pairs = Vec::new();
    for e in std::fs::read_dir(&results).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "csv") {
            pairs.push((p.clone(), p.with_extension("md")));
        } else if p.join("table.csv").is_file() {
            pairs.push((p.join("table.csv"), p.join("table.md")));
        }
    }
    assert!(pairs.len() >= 5, "committed tables: {pairs:?}");
    for (csv_path, md_path) in pairs {
        let n = check_pair(&csv_path, &md_path);
        assert!(n > 0, "{}: no rows", csv_path.display());
    }
}

#[test]
fn a_label_with_comma_quote_and_pipe_survives_all_three_formats() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("t.toml");
    let label = r#"PCA, "quoted" | piped 50% & more_x {y} $z #1"#;
    std::fs::write(
        &spec,
        format!(
            r#"
id = "t"
title = "Labels"
seed = 1
[evaluation]
protocols = ["loocv"]
[[dataset]]
name = "three_clusters"
label = "clusters, | \"a\""
params = {{ n = 60 }}
[[method]]
name = "pca"
label = '{label}'
grid = {{ dim = 2 }}
"#
        ),
    )
    .unwrap();
    let plan = structdr::spec::load(&spec).unwrap();
    let results = dir.path().join("results");
    let opts = RunOptions::quiet(&results);
    let out = structdr::run_spec(&plan, &opts).unwrap();
    let files = out.tables.expect("tables");
    // CSV: the labels come back exactly
    let mut reader = csv::Reader::from_path(&files.csv).unwrap();
    let rec = reader.records().next().unwrap().unwrap();
    assert_eq!((&rec[0], &rec[1]), (label, "clusters, | \"a\""));
    // the report's reader agrees
    let rows = structdr::html::read_table_csv(&std::fs::read_to_string(&files.csv).unwrap()).unwrap();
    assert_eq!((rows[0].method.as_str(), rows[0].dataset.as_str()), (label, "clusters, | \"a\""));
    // Markdown: the label is one cell, and the table's rows keep their cell count
    assert_eq!(check_pair(&files.csv, &files.md), 1);
    let md = std::fs::read_to_string(&files.md).unwrap();
    let row = md.lines().find(|l| l.starts_with("| **")).unwrap();
    assert_eq!(md_cells(row)[0], format!("**{label}**"));
    // LaTeX: the special characters escaped
    let tex = std::fs::read_to_string(&files.tex).unwrap();
    assert!(tex.contains(r#"PCA, "quoted" | piped 50\% \& more\_x \{y\} \$z \#1 &"#), "{tex}");
}

/// `[table] mean_std`: the CSV carries one row per method, data set, selection and metric
/// (`acc_mean`, `acc_std`, `nmi_mean`, `nmi_std`); the best single configuration reads every
/// metric from the selected cell, the oracle takes each metric's own best cell (checked against
/// the records), the Markdown section prints them as mean ± std in percent, and `"classes"`
/// resolves to each data set's class count.
#[test]
fn mean_std_section_shows_both_selections_and_classes_resolve_per_data_set() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("t.toml");
    std::fs::write(
        &spec,
        r#"
id = "t"
title = "Selections"
seed = 3
[evaluation]
protocols = ["kmeans"]
restarts = 5
select = "acc_mean"
[table]
mean_std = ["acc", "nmi"]
[[dataset]]
name = "three_clusters"
params = { n = 60 }
[[dataset]]
name = "two_moons"
label = "larger"
paper = "larger"
params = { n = 80 }
[[method]]
name = "mcfs"
label = "MCFS"
paper_row = "MCFS"
grid = { n_clusters = "classes", sigma_scale = [0.5, 1.0, 2.0], n_nonzero = 2, n_selected = [1, 2] }
[reference]
source = "made up for the test"
datasets = ["larger"]
[reference.rows]
MCFS = [0.5]
[reference.metrics.nmi_mean]
MCFS = [0.25]
"#,
    )
    .unwrap();
    let plan = structdr::spec::load(&spec).unwrap();
    let results = dir.path().join("results");
    let opts = RunOptions::quiet(&results);
    let out = structdr::run_spec(&plan, &opts).unwrap();
    let files = out.tables.expect("tables");
    // the records: n_clusters resolved to the class count of each set (three clusters, two moons)
    let store = structdr::store::Store::open(&plan.output_dir(&results).join(structdr::store::RECORDS_DIR)).unwrap();
    let records: Vec<structdr::store::Record> = store.records().unwrap().into_iter().filter_map(|(_, r)| r).collect();
    assert_eq!(records.len(), 12);
    for r in &records {
        let classes = if r.key.dataset == "two_moons" { 2 } else { 3 };
        assert_eq!(r.key.params.get("n_clusters"), Some(&structdr_methods::ParamValue::Int(classes)), "{}", r.params_string());
    }
    // the CSV: 1 method x 2 data sets x 2 selections x 4 metrics
    let mut reader = csv::Reader::from_path(&files.csv).unwrap();
    let header = reader.headers().unwrap().clone();
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 16);
    let value = |ds: &str, sel: &str, metric: &str| -> f64 {
        let r = rows.iter().find(|r| &r[col("dataset")] == ds && &r[col("selection")] == sel && &r[col("metric")] == metric).unwrap();
        r[col("ours")].parse().unwrap()
    };
    for (ds, name) in [("three_clusters", "three_clusters"), ("larger", "two_moons")] {
        let mine: Vec<&structdr::store::Record> = records.iter().filter(|r| r.key.dataset == name).collect();
        for r in &mine {
            assert_eq!(r.status, structdr::store::Status::Ok, "{ds} {}: {:?}", r.params_string(), r.error);
        }
        let best_of = |m: &str| mine.iter().map(|r| r.metrics[m]).fold(f64::NEG_INFINITY, f64::max);
        // the single configuration: a cell with the highest acc_mean, all its metrics from it
        let (acc, nmi) = (value(ds, "best_single", "acc_mean"), value(ds, "best_single", "nmi_mean"));
        assert!((acc - best_of("acc_mean")).abs() < 1e-6);
        assert!(mine.iter().any(|r| (r.metrics["acc_mean"] - acc).abs() < 1e-6 && (r.metrics["nmi_mean"] - nmi).abs() < 1e-6));
        // the oracle: each metric's own best
        assert!((value(ds, "oracle", "nmi_mean") - best_of("nmi_mean")).abs() < 1e-6);
        assert!(value(ds, "oracle", "nmi_mean") >= value(ds, "best_single", "nmi_mean"));
    }
    // paper values: acc from `rows`, nmi from `metrics`, none for a metric or set the reference lacks
    let paper = |ds: &str, metric: &str| rows.iter().find(|r| &r[col("dataset")] == ds && &r[col("metric")] == metric).unwrap()[col("paper")].to_string();
    assert_eq!((paper("larger", "acc_mean").as_str(), paper("larger", "nmi_mean").as_str(), paper("larger", "acc_std").as_str()), ("0.500000", "0.250000", ""));
    assert_eq!(paper("three_clusters", "acc_mean"), "");
    // the Markdown section, in percent
    let md = std::fs::read_to_string(&files.md).unwrap();
    assert!(md.contains("### NMI (`nmi_mean` ± `nmi_std`)"), "{md}");
    let acc = value("larger", "best_single", "acc_mean");
    let sd = value("larger", "best_single", "acc_std");
    assert!(md.contains(&format!("{:.2} ± {:.2}", 100.0 * acc, 100.0 * sd)), "{md}");
    assert!(md.contains("### Mean \\|ours - paper\\| per row and metric (points)"), "{md}");
    assert_eq!(check_pair(&files.csv, &files.md), 2);
    // the report reads the means of the single configuration only, one row per metric
    let report_rows = structdr::html::read_table_csv(&std::fs::read_to_string(&files.csv).unwrap()).unwrap();
    assert_eq!(report_rows.len(), 4);
    assert!(report_rows.iter().all(|r| r.metric.ends_with("_mean")));
    // without a reference (as in the demo) the same values, no paper legend or |diff| column
    let text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(&spec, &text[..text.find("[reference]").unwrap()]).unwrap();
    let plan = structdr::spec::load(&spec).unwrap();
    let again = structdr::run_spec(&plan, &opts).unwrap();
    assert_eq!(again.summary.computed, 0);
    let md = std::fs::read_to_string(&again.tables.unwrap().md).unwrap();
    let section = &md[md.find("## ACC and NMI as mean ± std").unwrap()..md.find("## Selected cells").unwrap()];
    assert!(section.contains(&format!("{:.2} ± {:.2}", 100.0 * acc, 100.0 * sd)), "{section}");
    assert!(!section.contains("mean abs diff") && !section.contains("**paper**") && !section.contains("| |\n"), "{section}");
    assert!(section.contains("| | three_clusters | larger |\n|---|---:|---:|\n"), "{section}");
}

/// `"classes"` is for integer parameters only: a float parameter refuses it with a clear error.
#[test]
fn classes_on_a_float_parameter_is_refused() {
    let text = "id = \"t\"\ntitle = \"t\"\n[evaluation]\nprotocols = [\"kmeans\"]\n[[dataset]]\nname = \"iris\"\n[[method]]\nname = \"mcfs\"\ngrid = { sigma_scale = \"classes\" }\n";
    let e = structdr::spec::parse(text, "t.toml", Path::new("t.toml")).unwrap_err().to_string();
    assert!(e.contains("only integer parameters may take the data set's number of classes"), "{e}");
}

/// `"classes"` on a data set without labels is refused by `structdr check`'s input checks, naming
/// the method's parameter and the set (the method's own range check would only see a 0).
#[test]
fn classes_on_an_unlabelled_set_is_refused_before_fitting() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("x.csv");
    std::fs::write(&csv, (0..30).map(|i| format!("{},{}\n", i, (i * 7) % 11)).collect::<String>()).unwrap();
    let spec = dir.path().join("t.toml");
    std::fs::write(
        &spec,
        format!(
            "id = \"t\"\ntitle = \"t\"\n[evaluation]\nprotocols = [\"neighbourhood\"]\n[[dataset]]\npath = \"{}\"\nname = \"own\"\n[[method]]\nname = \"mcfs\"\nlabel = \"MCFS\"\ngrid = {{ n_clusters = \"classes\", n_selected = 1 }}\n",
            csv.display()
        ),
    )
    .unwrap();
    let plan = structdr::spec::load(&spec).unwrap();
    let e = structdr::data::check_inputs(&plan).err().expect("refused").to_string();
    assert!(e.contains("MCFS.n_clusters = \"classes\"") && e.contains("data set own has no labels"), "{e}");
}
