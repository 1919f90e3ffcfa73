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
    let main = text.split("## Selected cells").next().unwrap();
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
    let mut n = 0;
    for rec in reader.records() {
        let rec = rec.unwrap_or_else(|e| panic!("{}: {e}", csv_path.display()));
        assert_eq!(rec.len(), header.len(), "{}: a row with {} fields", csv_path.display(), rec.len());
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
    let opts = RunOptions {
        results_root: results.clone(),
        force: false,
        retry_failed: false,
        max_cells: None,
        only_datasets: vec![],
        only_methods: vec![],
        shard: None,
        only_cells: None,
        quiet: true,
    };
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
