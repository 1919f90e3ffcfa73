//! Over 800 lines on purpose: one test binary (each file under tests/ links the whole runner again) sharing one spec and its helpers.
//! End-to-end tests of the runner on synthetic data: spec validation, caching and resumption,
//! determinism across thread counts, tables.

use std::path::{Path, PathBuf};
use structdr::exec::RunOptions;
use structdr::spec;

const SPEC: &str = r#"
id = "t"
title = "test"
seed = 3

[evaluation]
protocols = ["loocv", "kmeans"]
restarts = 3

[[dataset]]
name = "two_moons"
paper = "moons"
params = { n = 120 }

[[dataset]]
name = "three_clusters"
params = { n = 90 }

[[method]]
name = "pca"
grid = { dim = 2 }

[[method]]
name = "le"
paper_row = "LE"
grid = { dim = 2, k = [5, 8, 12] }

[reference]
source = "made-up numbers for the test"
datasets = ["moons"]
rows = { LE = [0.5] }
"#;

fn plan_in(dir: &Path, text: &str) -> spec::Plan {
    let path = dir.join("spec.toml");
    let text = text.replace("id = \"t\"", "id = \"t\"\noutput = \"out\"");
    std::fs::write(&path, &text).unwrap();
    spec::load(&path).unwrap()
}

fn opts(root: PathBuf) -> RunOptions {
    RunOptions {
        results_root: root,
        recompute: structdr::exec::Recompute::Missing,
        retry_failed: false,
        max_cells: None,
        only_datasets: vec![],
        only_methods: vec![],
        shard: None,
        only_cells: None,
        quiet: true,
        no_wait: false,
    }
}

#[test]
fn interrupted_run_recomputes_only_missing_cells() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_in(dir.path(), SPEC);
    // 2 data sets x (1 + 3) cells = 8. Simulate a run killed after 3 finished cells.
    let first = structdr::run_spec(&plan, &RunOptions { max_cells: Some(3), ..opts(dir.path().into()) }).unwrap();
    assert_eq!((first.summary.total, first.summary.computed, first.summary.cached, first.summary.skipped), (8, 3, 0, 5));
    let second = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!((second.summary.computed, second.summary.cached), (5, 3));
    let third = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!((third.summary.computed, third.summary.cached), (0, 8));
    // Tables exist and show ours, the paper's value and the difference.
    let md = std::fs::read_to_string(&third.tables.as_ref().unwrap().md).unwrap();
    assert!(md.contains("| le paper | 0.5000 | – |"), "{md}");
    assert!(md.contains("| le diff | +0.5000 | – | 0.5000 (n=1) |"), "{md}");

    let csv = std::fs::read_to_string(&third.tables.as_ref().unwrap().csv).unwrap();
    assert_eq!(csv.lines().count(), 1 + 2 * 2);
    assert!(third.tables.as_ref().unwrap().tex.exists());
}

/// `--dataset` / `--method` compute only the named cells (label or name); the others are
/// counted as skipped and computed by a later unfiltered run.
/// Records are keyed by the method's version: bumping one method's version recomputes exactly its
/// cells (the others are reused), an unchanged re-run computes nothing, the table names the
/// versions, and `prune` removes exactly the old version's records.
#[test]
fn a_version_bump_recomputes_exactly_that_methods_cells() {
    let dir = tempfile::tempdir().unwrap();
    let mut plan = plan_in(dir.path(), SPEC);
    let first = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!((first.summary.total, first.summary.computed), (8, 8));
    let again = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!((again.summary.computed, again.summary.cached), (0, 8));
    let le = plan.methods.iter().position(|m| m.name == "le").unwrap();
    plan.methods[le].version += 1;
    let bumped = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    // 2 data sets x 3 LE cells recomputed, 2 PCA cells reused
    assert_eq!((bumped.summary.computed, bumped.summary.cached), (6, 2));
    // Same seeds: LE's numerics did not change, so its bumped records hold the same numbers.
    for (a, b) in first.best.iter().zip(&bumped.best) {
        assert_eq!(a.record.as_ref().unwrap().metrics, b.record.as_ref().unwrap().metrics);
    }
    let table = std::fs::read_to_string(dir.path().join("out").join("table.md")).unwrap();
    assert!(table.contains(&format!("le v{}", plan.methods[le].version)) && table.contains("pca v1"), "{table}");
    let store = structdr::store::Store::open_in(&dir.path().join("out")).unwrap();
    assert_eq!(store.len(), 14);
    let (name, version) = (plan.methods[le].name.clone(), plan.methods[le].version);
    let counts = store.prune(|k| if k.method == name { Some(version) } else { structdr_methods::lookup(&k.method).ok().map(|i| i.version) }, false).unwrap();
    assert_eq!(counts["le"], (6, 6));
    assert_eq!(counts["pca"], (2, 0));
    assert_eq!(store.len(), 8);
}

/// `--shard i/n`: n runs on one store compute disjoint parts that together cover every cell, and
/// the same cells and numbers as one unsharded run.
#[test]
fn shards_cover_every_cell_once() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_in(dir.path(), SPEC);
    let mut computed = 0;
    for i in 0..3 {
        let shard = Some(structdr::cells::Shard { index: i, count: 3 });
        let out = structdr::run_spec(&plan, &RunOptions { shard, ..opts(dir.path().into()) }).unwrap();
        assert_eq!(out.summary.computed + out.summary.cached + out.summary.skipped, 8);
        computed += out.summary.computed;
    }
    assert_eq!(computed, 8);
    let whole = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!((whole.summary.computed, whole.summary.cached), (0, 8));
    let fresh = tempfile::tempdir().unwrap();
    let once = structdr::run_spec(&plan_in(fresh.path(), SPEC), &opts(fresh.path().into())).unwrap();
    for (a, b) in whole.best.iter().zip(&once.best) {
        assert_eq!(a.record.as_ref().unwrap().metrics, b.record.as_ref().unwrap().metrics);
    }
}

/// With `figures.best_embeddings`, every computed cell keeps its fit in the fit cache and the
/// figures draw from it: nothing is refitted outside the cache.
#[test]
fn best_embedding_figures_draw_the_cells_own_fits() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_in(dir.path(), &SPEC.replace("[reference]", "[figures]\nbest_embeddings = true\n\n[reference]"));
    let out = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!(out.summary.computed, 8);
    let out_dir = plan.output_dir(dir.path());
    assert_eq!(std::fs::read_dir(out_dir.join("fits")).unwrap().count(), 8, "one cached fit per cell");
    // one figure (PNG + SVG) per data set
    assert_eq!(out.figures.iter().filter(|f| f.to_string_lossy().contains("embedding_")).count(), 4);
    let store = structdr::store::FitStore::open_in(&out_dir).unwrap();
    for b in &out.best {
        let r = b.record.as_ref().unwrap();
        let (cached, _) = store.get(&r.key).expect("the best cell's fit is cached");
        // The same fit (to rounding: other tests in this process may switch OpenBLAS's global
        // thread count while this one runs, which changes last bits).
        let fresh = structdr_linalg::blas::with_threads(1, || structdr::exec::fit_cell(&r.key, &out.prepared[b.dataset].data)).unwrap();
        let (c, f) = (cached.embedding().unwrap(), fresh.embedding().unwrap());
        let scale = f.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
        assert!(c.iter().zip(f.iter()).all(|(x, y)| (x - y).abs() <= 1e-8 * scale), "cached and fresh fits differ beyond rounding");
    }
}

#[test]
fn filters_compute_only_the_named_data_sets_and_methods() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_in(dir.path(), SPEC);
    let only = |d: &[&str], m: &[&str]| RunOptions {
        only_datasets: d.iter().map(|s| s.to_string()).collect(),
        only_methods: m.iter().map(|s| s.to_string()).collect(),
        ..opts(dir.path().into())
    };
    let first = structdr::run_spec(&plan, &only(&["three_clusters"], &["le"])).unwrap();
    assert_eq!((first.summary.computed, first.summary.skipped), (3, 5));
    // both cells of a method selected by name across data sets; le on three_clusters is stored
    let second = structdr::run_spec(&plan, &only(&[], &["pca"])).unwrap();
    assert_eq!((second.summary.computed, second.summary.cached, second.summary.skipped), (2, 3, 3));
    let rest = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!((rest.summary.computed, rest.summary.cached, rest.summary.skipped), (3, 5, 0));
}

#[test]
fn results_are_bit_identical_across_runs_and_thread_counts() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let p1 = plan_in(d1.path(), SPEC);
    let p2 = plan_in(d2.path(), SPEC);
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap().install(|| structdr::run_spec(&p1, &opts(d1.path().into())).unwrap());
    let two = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap().install(|| structdr::run_spec(&p2, &opts(d2.path().into())).unwrap());
    assert_eq!(one.best.len(), two.best.len());
    for (a, b) in one.best.iter().zip(&two.best) {
        let (ra, rb) = (a.record.as_ref().unwrap(), b.record.as_ref().unwrap());
        assert_eq!(ra.hash, rb.hash);
        for (k, v) in &ra.metrics {
            assert_eq!(v.to_bits(), rb.metrics[k].to_bits(), "metric {k} differs");
        }
    }
}

fn spec_error(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, text).unwrap();
    spec::load(&path).unwrap_err().to_string()
}

#[test]
fn bad_specs_are_rejected_with_their_line() {
    let e = spec_error(&SPEC.replace("name = \"le\"", "name = \"lex\""));
    assert!(e.contains("unknown method 'lex'") && e.contains(":24:"), "{e}");
    let e = spec_error(&SPEC.replace("k = [5, 8, 12]", "kk = [5, 8, 12]"));
    assert!(e.contains("no parameter 'kk'") && e.contains(":26:"), "{e}");
    let e = spec_error(&SPEC.replace("k = [5, 8, 12]", "k = [5, \"eight\"]"));
    assert!(e.contains("'k' must be integer") && e.contains(":26:"), "{e}");
    let e = spec_error(&SPEC.replace("name = \"three_clusters\"", "name = \"no_such_set\""));
    assert!(e.contains("unknown data set 'no_such_set'") && e.contains(":16:"), "{e}");
    let e = spec_error(&SPEC.replace("restarts = 3", "restarts = 3\ncolour = 1"));
    assert!(e.contains("colour") && e.contains(":9:"), "{e}");
    let e = spec_error(&SPEC.replace("k = [5, 8, 12]", "k = [0]"));
    assert!(e.contains("'k' must be"), "{e}");
}

/// `check` finds what `run` would reject, every problem at once, each with its line: generator
/// and preprocessing parameters, restarts, the select metric, grids too large to expand, and
/// spec-derived paths that would leave the results directory.
#[test]
fn check_reports_every_error_at_once() {
    let e = spec_error(&SPEC.replace("params = { n = 120 }", "params = { n = 0 }").replace("params = { n = 90 }", "params = { n = 90, noise = inf }"));
    assert!(e.contains(":11: ") && e.contains("`n` = 0") && e.contains(":16: ") && e.contains("`noise` = inf"), "{e}");
    let e = spec_error(
        &SPEC.replace("params = { n = 90 }", "params = { n = 90 }\npreprocess = [{ op = \"pca_energy\", threshold = 2.0 }, { op = \"pca_dim\", d = 0 }]"),
    );
    assert!(e.contains("threshold must be in (0, 1], got 2") && e.contains("d must be >= 1") && e.contains(":16: "), "{e}");
    let e = spec_error(&SPEC.replace("restarts = 3", "restarts = 0"));
    assert!(e.contains(":8: ") && e.contains("restarts must be >= 1"), "{e}");
    let e = spec_error(&SPEC.replace("restarts = 3", "restarts = 3\nselect = \"loocv_accuracy\""));
    assert!(e.contains(":9: ") && e.contains("'loocv_accuracy' is not a metric"), "{e}");
    // four errors in one spec: all four reported, one per line
    let many = SPEC
        .replace("name = \"le\"", "name = \"lex\"")
        .replace("params = { n = 120 }", "params = { n = 0 }")
        .replace("restarts = 3", "restarts = 0")
        .replace("name = \"pca\"", "name = \"pca\"\nlabel = \"LE\"\nselect = \"nope\"");
    let e = spec_error(&many);
    assert_eq!(e.lines().count(), 4, "{e}");
    // a grid of 10^6 cells for one method is refused from its axes' lengths, never expanded
    let values = (1..=1000).map(|v| v.to_string()).collect::<Vec<_>>().join(", ");
    let huge = SPEC.replace("grid = { dim = 2, k = [5, 8, 12] }", &format!("grid = {{ dim = [{values}], k = [{values}] }}"));
    let t0 = std::time::Instant::now();
    let e = spec_error(&huge);
    assert!(e.contains("the grid has 1000000 cells") && e.contains("the limit is fewer than 100000"), "{e}");
    assert!(t0.elapsed().as_secs() < 10, "counting must not expand the grid");
    // paths
    for (line, bad) in [
        ("id = \"../../x\"", "relative path without '..'"),
        ("id = \"/tmp/x\"", "relative path"),
        ("id = \"a/b\"", "must be one name"),
        ("id = \"t\"\noutput = \"\"", "output is empty"),
        ("id = \"t\"\noutput = \"../elsewhere\"", "relative path without '..'"),
        ("id = \"t\"\ntable_path = \"/etc/x\"", "relative path"),
    ] {
        let e = spec_error(&SPEC.replace("id = \"t\"", line));
        assert!(e.contains(bad), "{line}: {e}");
    }
}

/// The papers' numbers in the specs must equal shared/papers/tables.toml (when present). A spec may
/// cite a subset of a table's data sets (mpme_scale cites pendigits only); each cited value must
/// then equal the table's entry for that data set.
#[test]
fn spec_reference_values_match_tables_toml() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tables = [root.join("../shared/papers/tables.toml"), root.join("shared/papers/tables.toml")].into_iter().find(|p| p.exists());
    let Some(tables) = tables else {
        eprintln!("skipped: shared/papers/tables.toml not found");
        return;
    };
    let t: toml::Value = toml::from_str(&std::fs::read_to_string(tables).unwrap()).unwrap();
    let mut checked = 0;
    for entry in std::fs::read_dir(root.join("experiments")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let plan = spec::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let Some(r) = &plan.spec.reference else { continue };
        let Some(id) = &r.table else { continue };
        let table = t["table"].as_array().unwrap().iter().find(|x| x["id"].as_str() == Some(id)).unwrap_or_else(|| panic!("{id} not in tables.toml"));
        let cols: Vec<&str> = table["datasets"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        // the position of every cited data set in the table, in the spec's order
        let at: Vec<usize> = r
            .datasets
            .iter()
            .map(|d| cols.iter().position(|c| c == d).unwrap_or_else(|| panic!("{}: data set {d} is not in table {id}", path.display())))
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{}: data sets {:?} not in the order of table {id} {cols:?}", path.display(), r.datasets);
        // A table of metric sub-tables (`[table.acc_mean]`, ...) in the paper's units: `rows`
        // hold the select metric, `metrics` the others, both scaled by `table_scale`.
        if table.get("rows").is_none() {
            let scale = r.table_scale.unwrap_or(1.0);
            let select = plan.spec.select_metric();
            let cited = std::iter::once((select.as_str(), &r.rows)).chain(r.metrics.iter().map(|(m, rows)| (m.as_str(), rows)));
            for (metric, rows) in cited {
                let sub = table.get(metric).unwrap_or_else(|| panic!("{}: table {id} has no metric {metric}", path.display()));
                for (row, vals) in rows {
                    let all: Vec<f64> = sub[row.as_str()]
                        .as_array()
                        .unwrap_or_else(|| panic!("{id}.{metric} has no row {row}"))
                        .iter()
                        .map(|v| v.as_float().unwrap())
                        .collect();
                    for (&k, v) in at.iter().zip(vals) {
                        assert!((all[k] * scale - v).abs() <= 1e-9 * v.abs().max(1.0), "{}: {metric} row {row}: {} x {scale} != {v}", path.display(), all[k]);
                    }
                    checked += 1;
                }
            }
            continue;
        }
        for (row, vals) in &r.rows {
            // A row absent from the named table must come from a table over the same data sets
            // (table1_loocv carries the MPME and ESL rows of esl_table1).
            let source = std::iter::once(table)
                .chain(t["table"].as_array().unwrap().iter().filter(|x| x["datasets"] == table["datasets"]))
                .find(|x| x.get("rows").and_then(|rs| rs.get(row.as_str())).is_some())
                .unwrap_or_else(|| panic!("{}: row {row} is in no table over these data sets", path.display()));
            let all: Vec<f64> = source["rows"][row.as_str()].as_array().unwrap().iter().map(|v| v.as_float().unwrap()).collect();
            let theirs: Vec<f64> = at.iter().map(|&k| all[k]).collect();
            assert_eq!(&theirs, vals, "{}: row {row}", path.display());
            checked += 1;
        }
    }
    assert!(checked > 0);
}

#[test]
fn every_experiment_spec_validates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
    for entry in std::fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            spec::load(&path).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn figure_only_specs_draw_graph_adjacency_and_convergence_panels() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
id = "figs"
title = "figures"
[[dataset]]
name = "two_moons"
params = { n = 80 }
[[figure]]
name = "g"
title = "graph"
kind = "graph"
[[figure.panel]]
dataset = "two_moons"
method = "le"
params = { k = 6, dim = 2 }
[[figure]]
name = "a"
title = "adjacency"
kind = "adjacency"
[[figure.panel]]
dataset = "two_moons"
method = "lle"
params = { k = 6 }
[[figure]]
name = "c"
title = "convergence"
kind = "convergence"
[[figure.panel]]
dataset = "two_moons"
method = "pca"
"#;
    let plan = plan_in(dir.path(), text);
    let out = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert!(out.tables.is_none());
    // three figures as PNG + SVG, and the panel summary figures.md
    assert_eq!(out.figures.len(), 7);
    for f in &out.figures {
        assert!(std::fs::metadata(f).unwrap().len() > 1000, "{}", f.display());
    }
    // The three panels' fits are in the fit cache; a second run draws from it, bit for bit
    // (the same figures.md, fit times included, which only a cached fit can reproduce).
    let out_dir = plan.output_dir(dir.path());
    assert_eq!(std::fs::read_dir(out_dir.join("fits")).unwrap().count(), 3);
    let md = std::fs::read_to_string(out_dir.join("figures.md")).unwrap();
    structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!(std::fs::read_to_string(out_dir.join("figures.md")).unwrap(), md);
    let store = structdr::store::FitStore::open_in(&out_dir).unwrap();
    let key = structdr::keys::cell_key(&plan, &out.prepared[0], "pca", 1, &plan.spec_protocols(), &plan.figures[2][0].params);
    let (cached, _) = store.get(&key).unwrap();
    let fresh = structdr::exec::fit_cell(&key, &out.prepared[0].data).unwrap();
    assert_eq!(cached.embedding().unwrap(), fresh.embedding().unwrap());
    let e = spec_error(&text.replace("dataset = \"two_moons\"\nmethod = \"lle\"", "dataset = \"moons\"\nmethod = \"lle\""));
    assert!(e.contains("no data set labelled 'moons'"), "{e}");
}

/// The figure kinds and options of the claims figures: learned-W adjacency with nz in the title
/// and ordered along the manifold, components as colours and laid out apart, the
/// component-by-label contingency, feature weights, and the `figures.md` summary; one fit per
/// distinct panel across figures.
#[test]
fn figure_options_components_contingency_weights_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
id = "claims"
title = "claims figures"
[[dataset]]
name = "three_clusters"
label = "blobs"
params = { n = 90, bridge = 0.0, noise = 0.1 }
[[dataset]]
name = "distorted_s"
label = "s"
params = { n = 60 }
preprocess = [{ op = "minmax" }]
[[dataset]]
name = "two_moons"
label = "moons"
params = { n = 60 }
preprocess = [{ op = "noise_features", count = 20, seed = 1 }, { op = "minmax" }]
[[figure]]
name = "esl_embedding"
title = "esl"
kind = "embedding"
colour = "components"
separate_components = true
columns = 1
[[figure.panel]]
dataset = "blobs"
method = "esl"
params = { dim = 2, lambda = 0.8, perplexity = 10.0 }
title = "esl blobs"
[[figure]]
name = "esl_contingency"
title = "esl components"
kind = "contingency"
[[figure.panel]]
dataset = "blobs"
method = "esl"
params = { dim = 2, lambda = 0.8, perplexity = 10.0 }
title = "esl blobs"
[[figure]]
name = "mpme_w"
title = "mpme W"
kind = "adjacency"
order = "manifold"
[[figure.panel]]
dataset = "s"
method = "mpme"
params = { dim = 2, lambda = 10.0, C = 1.0 }
title = "C = 1"
[[figure]]
name = "theta"
title = "fsl theta"
kind = "weights"
[[figure.panel]]
dataset = "moons"
method = "fsl"
params = { gamma = 100.0, lambda = 10.0, b = 1.0, n_selected = 2, max_iter = 50 }
title = "theta"
"#;
    let plan = plan_in(dir.path(), text);
    let out = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!(out.figures.len(), 4 * 2 + 1);
    for f in &out.figures {
        assert!(std::fs::metadata(f).unwrap().len() > 1000, "{}", f.display());
    }
    let md_path = out.figures.iter().find(|f| f.extension().is_some_and(|e| e == "md")).unwrap();
    assert_eq!(md_path, &dir.path().join("claims/figures.md"));
    let md = std::fs::read_to_string(md_path).unwrap();
    // ESL's components: the same count in the embedding title, the contingency summary and its
    // table (one row per component, sizes adding up to N, one column per label)
    let row = md.lines().find(|l| l.starts_with("| esl blobs | esl |") && l.contains(" labels are exactly one component")).unwrap();
    let k: usize = row.split(" | ").nth(5).unwrap().trim().parse().unwrap();
    assert!(k >= 1 && row.contains(&format!("| {k} components; ")), "{row}");
    assert!(md.contains(&format!("| {k} component")), "{md}");
    let table: Vec<&str> = md.lines().skip_while(|l| !l.starts_with("| component | size | 0 | 1 | 2 |")).skip(2).take_while(|l| l.starts_with('|')).collect();
    assert_eq!(table.len(), k, "{md}");
    let total: usize = table.iter().map(|l| l.split(" | ").nth(1).unwrap().trim().parse::<usize>().unwrap()).sum();
    assert_eq!(total, 90);
    // adjacency: nz = twice the edges, as a fraction of N^2
    let row = md.lines().find(|l| l.starts_with("| C = 1 | mpme |")).unwrap();
    let edges: usize = row.split(" edges").next().unwrap().rsplit("| ").next().unwrap().trim().parse().unwrap();
    assert!(row.contains(&format!("nz = {} ({:.2}%)", 2 * edges, 100.0 * (2 * edges) as f64 / 3600.0)), "{row}");
    // weights: 22 features, the top two named with their values
    let row = md.lines().find(|l| l.starts_with("| theta | fsl |")).unwrap();
    assert!(row.contains("feature ") && row.contains("of 22"), "{row}");

    // misuse is rejected before any work
    let e = spec_error(&text.replace("kind = \"adjacency\"\norder = \"manifold\"", "kind = \"embedding\"\norder = \"manifold\""));
    assert!(e.contains("`order` applies to adjacency figures only"), "{e}");
    let e = spec_error(&text.replace("kind = \"contingency\"", "kind = \"contingency\"\ncolour = \"pc1\""));
    assert!(e.contains("`colour` and `separate_components` apply to embedding and graph figures only"), "{e}");
    let e = spec_error(&text.replace("columns = 1", "columns = 0"));
    assert!(e.contains("`columns` must be >= 1"), "{e}");
    // a kind that needs what the method does not return fails with the panel named
    let bad = text.replace("kind = \"weights\"", "kind = \"contingency\"");
    let d2 = tempfile::tempdir().unwrap();
    let e = structdr::run_spec(&plan_in(d2.path(), &bad), &opts(d2.path().into())).err().unwrap().to_string();
    assert!(e.contains("figure 'theta', panel 'theta'") && e.contains("no connected components"), "{e}");
}

/// The sensitivity kind (one fit per swept value: k-means ACC / NMI with error bars, features
/// scored, zeros of W, and a table per sweep in `figures.md`) and the masks kind (samples as
/// images and masked by the selected features), with their keys refused where they do not apply.
#[test]
fn sensitivity_and_masks_figures() {
    let dir = tempfile::tempdir().unwrap();
    // 2 informative + 22 noise features: a 4 x 6 grey image per sample
    let text = r#"
id = "sweeps"
title = "sweeps"
[evaluation]
protocols = ["kmeans"]
restarts = 3
[[dataset]]
name = "three_clusters"
label = "blobs"
params = { n = 60, bridge = 0.0, noise = 0.1 }
preprocess = [{ op = "noise_features", count = 22, seed = 1 }, { op = "minmax" }]
[[figure]]
name = "sens"
title = "fsl sensitivity"
kind = "sensitivity"
[[figure.panel]]
dataset = "blobs"
method = "fsl"
params = { lambda = 10.0, n_selected = 0, max_iter = 40 }
vary = "b"
values = [1.0, 3.0]
title = "lambda = 10"
[[figure]]
name = "masks"
title = "selected pixels"
kind = "masks"
image = { height = 4, width = 6 }
frames = [0, 59]
[[figure.panel]]
dataset = "blobs"
method = "fsl"
params = { lambda = 10.0, b = 3.0, n_selected = 5, max_iter = 40 }
title = "top 5"
"#;
    let plan = plan_in(dir.path(), text);
    // one fit per swept value, each with the value in its parameters
    let b: Vec<String> = plan.figures[0].iter().map(|p| p.params["b"].to_string()).collect();
    assert_eq!(b, ["1.0", "3.0"]);
    let out = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!(out.figures.len(), 2 * 2 + 1);
    for f in &out.figures {
        assert!(std::fs::metadata(f).unwrap().len() > 1000, "{}", f.display());
    }
    let md = std::fs::read_to_string(dir.path().join("sweeps/figures.md")).unwrap();
    // the sweep's table: one row per value, ACC and NMI in [0, 1], the support counted
    let rows: Vec<&str> =
        md.lines().skip_while(|l| !l.starts_with("| b | ACC | NMI | selected features |")).skip(2).take_while(|l| l.starts_with('|')).collect();
    assert_eq!(rows.len(), 2, "{md}");
    for r in &rows {
        let cells: Vec<&str> = r.split(" | ").collect();
        for c in &cells[1..3] {
            let mean: f64 = c.split(" ± ").next().unwrap().trim().parse().unwrap();
            assert!((0.0..=1.0).contains(&mean), "{r}");
        }
        let selected: usize = cells[3].trim().parse().unwrap();
        assert!((1..=24).contains(&selected), "{r}");
    }
    assert!(md.contains("| lambda = 10 (b = 1.0) | fsl |") && md.contains("| lambda = 10 (b = 3.0) | fsl |"), "{md}");
    // the masks: 5 features of the 24 are 5 pixels of a grey image
    assert!(md.contains("5 of 24 features selected: 5 of 24 pixels; samples [0, 59]"), "{md}");
    let svg = std::fs::read_to_string(dir.path().join("sweeps/sens.svg")).unwrap();
    for needle in ["ACC", "NMI", "selected features", "zero entries of W (%)", "λ = 10"] {
        assert!(svg.contains(needle), "{needle} missing from the SVG");
    }

    // misuse is rejected before any work, naming the figure
    let e = spec_error(&text.replace("[evaluation]\nprotocols = [\"kmeans\"]\nrestarts = 3\n", ""));
    assert!(e.contains("figure 'sens': kind = \"sensitivity\" scores k-means ACC and NMI"), "{e}");
    let e = spec_error(&text.replace("params = { lambda = 10.0, n_selected = 0, max_iter = 40 }", "params = { lambda = 10.0, b = 1.0, n_selected = 0 }"));
    assert!(e.contains("`vary = \"b\"` is also fixed in `params`"), "{e}");
    let e = spec_error(&text.replace("values = [1.0, 3.0]", "values = [1.0]"));
    assert!(e.contains("needs at least two values"), "{e}");
    let e = spec_error(&text.replace("values = [1.0, 3.0]", "values = [1.0, -3.0]"));
    assert!(e.contains("figure 'sens' (`b` = -3.0)"), "{e}");
    let e = spec_error(&text.replace("vary = \"b\"\nvalues = [1.0, 3.0]\n", ""));
    assert!(e.contains("a sensitivity panel needs `vary`"), "{e}");
    let e = spec_error(
        &text
            .replace("kind = \"masks\"", "kind = \"weights\"\nimage = { height = 4, width = 6 }")
            .replace("image = { height = 4, width = 6 }\nframes", "frames"),
    );
    assert!(e.contains("`image` and `frames` apply to masks figures only"), "{e}");
    let e = spec_error(&text.replace("kind = \"sensitivity\"", "kind = \"weights\""));
    assert!(e.contains("`vary` and `values` apply to sensitivity figures only"), "{e}");
    let e = spec_error(&text.replace("image = { height = 4, width = 6 }\n", ""));
    assert!(e.contains("kind = \"masks\" needs `image"), "{e}");
    let e = spec_error(&text.replace("image = { height = 4, width = 6 }", "image = { height = 4, width = 6, channels = 2 }"));
    assert!(e.contains("must be 1 (grey) or 3 (RGB)"), "{e}");
    let e = spec_error(
        &text
            .replace("params = { lambda = 10.0, b = 3.0, n_selected = 5, max_iter = 40 }", "params = { dim = 2 }")
            .replace("method = \"fsl\"\nparams = { dim = 2 }", "method = \"pca\"\nparams = { dim = 2 }"),
    );
    assert!(e.contains("'pca' returns no feature scores"), "{e}");
    // what only the data can tell fails at drawing, with the panel named
    for (bad, says) in [("image = { height = 4, width = 6 }", "image = { height = 5, width = 6 }"), ("frames = [0, 59]", "frames = [0, 60]")] {
        let d2 = tempfile::tempdir().unwrap();
        let e = structdr::run_spec(&plan_in(d2.path(), &text.replace(bad, says)), &opts(d2.path().into())).err().unwrap().to_string();
        assert!(e.contains("figure 'masks', panel 'top 5'") && (e.contains("the data set has 24") || e.contains("sample 60")), "{e}");
    }
}

/// A cell whose parameters hold a non-finite float (MPME's `C = inf`) is cached like any other:
/// the second run computes nothing (JSON has no inf; the record writes it as `{"float": "inf"}`).
#[test]
fn cells_with_infinite_parameters_are_cached() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
id = "t"
title = "inf"
seed = 1

[evaluation]
protocols = ["loocv"]

[[dataset]]
name = "three_clusters"
params = { n = 30 }

[[method]]
name = "mpme"
grid = { dim = 2, C = [1.0, inf], lambda = 1.0, max_iter = 20 }
"#;
    let plan = plan_in(dir.path(), text);
    let first = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!((first.summary.computed, first.summary.cached, first.summary.failed), (2, 0, 0));
    let second = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!((second.summary.computed, second.summary.cached), (0, 2));
}

const COMPONENTS_SPEC: &str = r#"
id = "t"
title = "components"
seed = 5

[evaluation]
protocols = ["loocv"]

[[dataset]]
name = "three_clusters"
params = { n = 60 }

[[method]]
name = "esl"
label = "ESL"
protocols = ["loocv_components"]
select = "loocv_1nn_accuracy_components"
grid = { dim = 2, lambda = [0.5, 0.99] }

[[method]]
name = "esl"
label = "ESL plain"
protocols = ["loocv_components"]
grid = { dim = 2, lambda = [0.5, 0.99] }

[[method]]
name = "pca"
grid = { dim = 2 }
"#;

/// A method's own protocols enter its cells' keys (and only its), the component-aware score is
/// 1-NN within the fit's components, each row selects by its own metric, and two rows that differ
/// only in `select` share their cells (one fit and one record per cell).
#[test]
fn method_protocols_and_row_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_in(dir.path(), COMPONENTS_SPEC);
    assert_eq!(plan.methods[0].metric, "loocv_1nn_accuracy_components");
    assert_eq!(plan.methods[1].metric, "loocv_1nn_accuracy");
    let out = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!((out.summary.total, out.summary.computed, out.summary.failed), (5, 5, 0));
    let records: Vec<_> = std::fs::read_dir(dir.path().join("out/records")).unwrap().collect();
    assert_eq!(records.len(), 3, "2 ESL cells shared by both rows + 1 PCA cell");
    let data = &out.prepared[0].data;
    let labels = data.labels.as_ref().unwrap();
    let mut split = 0;
    for b in &out.best {
        let r = b.record.as_ref().unwrap();
        let protocols: Vec<&str> = r.key.protocols.iter().map(String::as_str).collect();
        if r.key.method == "esl" {
            assert_eq!(protocols, ["loocv", "loocv_components"]);
            assert_eq!(b.metric, plan.methods[b.method].metric);
        } else {
            assert_eq!(protocols, ["loocv"]);
            assert!(!r.metrics.contains_key("loocv_1nn_accuracy_components"));
        }
    }
    // every ESL cell: the stored score is 1-NN within the fit's components
    for f in std::fs::read_dir(dir.path().join("out/records")).unwrap() {
        let r: structdr::store::Record = serde_json::from_slice(&std::fs::read(f.unwrap().path()).unwrap()).unwrap();
        if r.key.method != "esl" {
            continue;
        }
        let fit = structdr::exec::fit_cell(&r.key, data).unwrap();
        let comps = fit.components.clone().unwrap();
        split += usize::from(comps.iter().any(|&c| c != comps[0]));
        let y = fit.embedding().unwrap();
        let want = structdr_eval::loocv_1nn_accuracy_within_groups(y.view(), labels, &comps).unwrap();
        assert_eq!(r.metrics["loocv_1nn_accuracy_components"], want);
        assert_eq!(r.metrics["loocv_1nn_accuracy"], structdr_eval::loocv_1nn_accuracy(y.view(), labels).unwrap());
    }
    assert!(split > 0, "the test must exercise a split graph");
    let md = std::fs::read_to_string(out.tables.unwrap().md).unwrap();
    assert!(md.contains("rows with their own metric: ESL: `loocv_1nn_accuracy_components`"), "{md}");
    // nothing left to compute on a second run
    let again = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!((again.summary.computed, again.summary.cached), (0, 5));
    // a metric no protocol gives is refused, with its line, at the spec and at a row
    let e = spec_error(&COMPONENTS_SPEC.replace("select = \"loocv_1nn_accuracy_components\"", "select = \"loocv_1nn_accuracy_component\""));
    assert!(e.contains("'loocv_1nn_accuracy_component' is not a metric") && e.contains(":17:"), "{e}");
    let e = spec_error(&COMPONENTS_SPEC.replace("protocols = [\"loocv\"]", "protocols = [\"loocv\"]\nselect = \"acc_mean\""));
    assert!(e.contains("'acc_mean' is not a metric"), "{e}");
}

/// Degenerate data (a generator at radius 1e-200: squared distances underflow) give records with
/// status `degenerate` and their reason, shown as `degenerate` in the table, never a score; the
/// other data set's cells are unaffected.
#[test]
fn degenerate_data_is_recorded_as_degenerate() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
id = "t"
title = "degenerate"
seed = 3

[evaluation]
protocols = ["loocv"]

[[dataset]]
name = "circle"
params = { n = 80, radius = 1e-200, noise = 0.0 }

[[dataset]]
name = "two_moons"
params = { n = 80 }

[[method]]
name = "le"
grid = { dim = 2, k = [5, 8] }

[[method]]
name = "pca"
grid = { dim = 1 }
"#;
    let plan = plan_in(dir.path(), text);
    let out = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!((out.summary.total, out.summary.degenerate, out.summary.failed), (6, 3, 0));
    for (c, r) in &out.results {
        let r = r.as_ref().unwrap();
        if c.dataset == 0 {
            assert_eq!(r.status, structdr::store::Status::Degenerate);
            assert!(r.metrics.is_empty() && r.error.as_deref().unwrap().contains("extreme scale"), "{:?}", r.error);
        } else {
            assert_eq!(r.status, structdr::store::Status::Ok);
        }
    }
    let md = std::fs::read_to_string(out.tables.unwrap().md).unwrap();
    let row = md.lines().find(|l| l.starts_with("| **le** |")).unwrap();
    assert!(row.contains("| degenerate |"), "{row}");
    assert!(md.contains("3 degenerate"), "{md}");
}

/// Two runs on one store at the same time compute every cell once between them (per-cell claims);
/// a claim left by a dead process is taken over.
#[test]
fn concurrent_runs_on_one_store_compute_each_cell_once() {
    let dir = tempfile::tempdir().unwrap();
    // ESL cells of about a second each, so that the two runs overlap
    let text = SPEC
        .replace("params = { n = 120 }", "params = { n = 500 }")
        .replace("name = \"le\"", "name = \"esl\"")
        .replace("grid = { dim = 2, k = [5, 8, 12] }", "grid = { dim = 2, perplexity = [20.0, 30.0], lambda = [0.5, 0.7, 0.9] }");
    let plan = plan_in(dir.path(), &text);
    let total = 2 * (1 + 6);
    let (a, b) = std::thread::scope(|s| {
        let ha = s.spawn(|| structdr::run_spec(&plan, &opts(dir.path().into())).unwrap().summary);
        let hb = s.spawn(|| structdr::run_spec(&plan, &opts(dir.path().into())).unwrap().summary);
        (ha.join().unwrap(), hb.join().unwrap())
    });
    eprintln!("run A: {a:?}\nrun B: {b:?}");
    assert_eq!(a.computed + b.computed, total, "each cell computed exactly once between the two runs");
    for s in [&a, &b] {
        assert_eq!(s.computed + s.cached + s.busy, total);
    }
    let records = std::fs::read_dir(dir.path().join("out/records")).unwrap().count();
    assert_eq!(records, total);
    assert_eq!(std::fs::read_dir(dir.path().join("out/claims")).unwrap().count(), 0, "claims are released");
    // a dead run's claim (a process id that does not exist) does not block the cell
    let victim = std::fs::read_dir(dir.path().join("out/records")).unwrap().next().unwrap().unwrap().path();
    let hash = victim.file_stem().unwrap().to_string_lossy().to_string();
    std::fs::remove_file(&victim).unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    std::fs::write(dir.path().join(format!("out/claims/{hash}.claim")), format!("4294967 {} 0", host.trim())).unwrap();
    let again = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap().summary;
    assert_eq!((again.computed, again.busy), (1, 0));
    // a live claim of this host (this very process stands in for the other run) is respected:
    // under --no-wait the cell is left to it and the table says so (by default a run waits)
    let no_wait = || RunOptions { no_wait: true, ..opts(dir.path().into()) };
    std::fs::remove_file(dir.path().join(format!("out/records/{hash}.json"))).unwrap();
    std::fs::write(dir.path().join(format!("out/claims/{hash}.claim")), format!("{} {} 0", std::process::id(), host.trim())).unwrap();
    let held = structdr::run_spec(&plan, &no_wait()).unwrap().summary;
    assert_eq!((held.computed, held.busy, held.claimed.len()), (0, 1, 1));
    let md = std::fs::read_to_string(dir.path().join("out/table.md")).unwrap();
    assert!(md.contains("1 being computed by another run") && !md.contains("not computed yet."), "{md}");
    std::fs::remove_file(dir.path().join(format!("out/claims/{hash}.claim"))).unwrap();
    structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    // a live claim from another machine is respected
    std::fs::remove_file(dir.path().join(format!("out/records/{hash}.json"))).unwrap();
    std::fs::write(dir.path().join(format!("out/claims/{hash}.claim")), "12 some-other-host 0").unwrap();
    let held = structdr::run_spec(&plan, &no_wait()).unwrap().summary;
    assert_eq!((held.computed, held.busy), (0, 1));
}

#[test]
fn neighbourhood_protocol_scores_trustworthiness_and_keeps_other_keys() {
    let dir = tempfile::tempdir().unwrap();
    let spec = |protocols: &str, extra: &str| {
        format!(
            r#"
id = "nb"
title = "neighbourhood"
seed = 5

[evaluation]
protocols = {protocols}
select = "{extra}"

[[dataset]]
name = "swiss_roll"
params = {{ n = 120 }}

[[method]]
name = "pca"
grid = {{ dim = 2 }}

[[method]]
name = "le"
grid = {{ dim = 2, k = 8 }}
"#
        )
    };
    let plan = plan_in(dir.path(), &spec(r#"["loocv", "neighbourhood"]"#, "trustworthiness"));
    let out = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!((out.summary.total, out.summary.failed), (2, 0));
    for (c, r) in &out.results {
        let r = r.as_ref().unwrap();
        assert_eq!(c.key.neighbourhood_k, Some(10));
        for m in ["trustworthiness", "continuity", "knn_preservation", "loocv_1nn_accuracy"] {
            let v = r.metrics[m];
            assert!((0.0..=1.0).contains(&v), "{m} = {v}");
        }
    }
    // the recorded values are the metric's on the refitted embedding and the preprocessed data
    let data = &out.prepared[0].data;
    let (cell, rec) = &out.results[0];
    let y = structdr::exec::fit_cell(&cell.key, data).unwrap().into_embedding().unwrap();
    let s = structdr_eval::neighbourhood_preservation(data.x.view(), y.view(), 10).unwrap();
    let rec = rec.as_ref().unwrap();
    assert_eq!(
        (rec.metrics["trustworthiness"], rec.metrics["continuity"], rec.metrics["knn_preservation"]),
        (s.trustworthiness, s.continuity, s.knn_preservation)
    );
    let md = std::fs::read_to_string(out.tables.unwrap().md).unwrap();
    assert!(md.contains("trustworthiness"), "{md}");
    // a spec without the protocol keeps the key (and hash) it had before the protocol existed
    let plain = plan_in(dir.path(), &spec(r#"["loocv"]"#, "loocv_1nn_accuracy"));
    let out2 = structdr::run_spec(&plain, &opts(dir.path().join("other"))).unwrap();
    for (c, _) in &out2.results {
        assert_eq!(c.key.neighbourhood_k, None);
        assert!(!serde_json::to_string(&c.key).unwrap().contains("neighbourhood"));
    }
    // k >= N / 2 is a failed cell with the reason, not a number
    let big = spec(r#"["neighbourhood"]"#, "trustworthiness").replace("select =", "neighbourhood_k = 60\nselect =");
    let out3 = structdr::run_spec(&plan_in(dir.path(), &big), &opts(dir.path().join("big"))).unwrap();
    assert_eq!(out3.summary.failed, 2);
    let r = out3.results[0].1.as_ref().unwrap();
    assert!(r.error.as_deref().unwrap().contains("k = 60"), "{:?}", r.error);
}

#[test]
fn a_spec_runs_on_a_file_of_ones_own_with_labels_from_a_column() {
    let dir = tempfile::tempdir().unwrap();
    // two noisy clusters in 3-D, the class in the last column, a header of names
    let mut csv = String::from("x,y,z,class\n");
    for i in 0..60 {
        let c = i % 2;
        let t = i as f64 * 0.37;
        csv.push_str(&format!("{},{},{},{c}\n", 4.0 * c as f64 + t.sin(), t.cos(), 0.1 * t));
    }
    let data = dir.path().join("mine.csv");
    std::fs::write(&data, &csv).unwrap();
    let text = format!(
        r#"
id = "t"
title = "own data"
seed = 1

[evaluation]
protocols = ["loocv"]

[[dataset]]
path = "{}"
label_column = -1

[[method]]
name = "pca"
grid = {{ dim = 2 }}
"#,
        data.display()
    );
    let plan = plan_in(dir.path(), &text);
    assert_eq!(plan.spec.datasets[0].name(), "mine");
    let out = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!((out.summary.total, out.summary.failed), (1, 0));
    let d = &out.prepared[0].data;
    assert_eq!((d.x.dim(), d.n_classes()), ((60, 3), 2));
    let rec = out.results[0].1.as_ref().unwrap();
    assert_eq!(rec.metrics["loocv_1nn_accuracy"], 1.0);
    // the file's bytes are the data set's identity: an edit gives new cells
    let before = out.results[0].0.key.data_checksum.clone();
    std::fs::write(&data, csv.replacen("0.1", "0.2", 1)).unwrap();
    let again = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_ne!(again.results[0].0.key.data_checksum, before);
    assert_eq!(again.summary.computed, 1);
    // check catches file problems, each with its line
    let bad = |from: &str, to: &str| spec_error(&text.replace(from, to));
    let missing = plan_in(dir.path(), &text.replace("mine.csv", "nope.csv"));
    assert!(structdr::spec::check_environment(&missing).unwrap_err().to_string().contains("not a readable file"));
    assert!(structdr::run_spec(&missing, &opts(dir.path().into())).is_err());
    assert!(bad("label_column = -1", "label_column = 0").contains("1-based"));
    assert!(bad("label_column = -1", "variable = \"X\"").contains(".mat files only"));
    assert!(bad("label_column = -1", "label_column = -1\nparams = { n = 3 }").contains("takes no params"));
    let e = bad(&format!("path = \"{}\"", data.display()), "");
    assert!(e.contains("needs a name"), "{e}");
}

#[test]
fn repeats_run_randomised_methods_under_several_seeds_and_select_on_the_mean() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
id = "t"
title = "repeats"
seed = 4
repeats = 5

[evaluation]
protocols = ["loocv"]

[[dataset]]
name = "three_clusters"
params = { n = 90 }

[[method]]
name = "rproj"
grid = { dim = [1, 2] }

[[method]]
name = "pca"
grid = { dim = 1 }
"#;
    let plan = plan_in(dir.path(), text);
    let out = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    // rproj: 2 grid cells x 5 seeds; pca (not randomised): 1 cell, run once
    assert_eq!((out.summary.total, out.summary.failed), (11, 0));
    let rproj: Vec<_> = out.results.iter().filter(|(c, _)| c.method == 0).collect();
    assert_eq!(rproj.len(), 10);
    let first = rproj.iter().filter(|(c, _)| c.repeat == 0).count();
    assert_eq!(first, 2);
    assert!(rproj.iter().all(|(c, _)| c.key.repeat == (c.repeat > 0).then_some(c.repeat as u32)));
    let seeds: std::collections::BTreeSet<u64> = rproj.iter().filter(|(c, _)| c.grid_index == 1).map(|(c, _)| structdr::keys::cell_seed(&c.key)).collect();
    assert_eq!(seeds.len(), 5, "every repeat has its own seed");
    // the selected value is the mean over the 5 seeds of the best grid cell, with its sd
    let b = out.best.iter().find(|b| b.method == 0).unwrap();
    assert_eq!(b.repeats, 5);
    let grid_of_best =
        rproj.iter().find(|(c, r)| r.as_ref().unwrap().params_string() == b.record.as_ref().unwrap().params_string() && c.repeat == 0).unwrap().0.grid_index;
    let vals: Vec<f64> = rproj.iter().filter(|(c, _)| c.grid_index == grid_of_best).map(|(_, r)| r.as_ref().unwrap().metrics["loocv_1nn_accuracy"]).collect();
    let (mean, sd) = structdr_eval::mean_std(&vals);
    assert_eq!((b.score().unwrap(), b.sd["loocv_1nn_accuracy"]), (mean, sd));
    assert!(sd > 0.0, "random projections differ between seeds: {vals:?}");
    let pca = out.best.iter().find(|b| b.method == 1).unwrap();
    assert_eq!((pca.repeats, pca.sd.len()), (1, 0));
    let md = std::fs::read_to_string(&out.tables.as_ref().unwrap().md).unwrap();
    assert!(md.contains(&format!("{mean:.4} ± {sd:.4}")), "{md}");
    let csv = std::fs::read_to_string(&out.tables.unwrap().csv).unwrap();
    assert!(csv.lines().next().unwrap().ends_with(",sd,repeats"));
    // repeats = 1 keeps the keys cells had before repeats; 0 is refused
    let once = plan_in(dir.path(), &text.replace("repeats = 5", "repeats = 1"));
    let out1 = structdr::run_spec(&once, &opts(dir.path().into())).unwrap();
    assert_eq!((out1.summary.total, out1.summary.computed), (3, 0));
    assert!(spec_error(&text.replace("repeats = 5", "repeats = 0")).contains("repeats = 0"));
}

/// Whether `python3` with numpy is here (CI installs it; elsewhere the external-method test skips).
fn python_with_numpy() -> bool {
    let ok = std::process::Command::new("python3").args(["-c", "import numpy"]).output().is_ok_and(|o| o.status.success());
    if !ok {
        assert!(std::env::var_os("CI").is_none(), "CI must provide python3 with numpy (.ci/run installs it)");
        eprintln!("skipping: python3 with numpy not found");
    }
    ok
}

#[test]
fn external_methods_run_beside_rust_ones_and_fail_as_cells() {
    if !python_with_numpy() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let baselines = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../baselines");
    // each script in a directory of its own: a script's directory is in its key, and the results
    // are written beside the scripts' directories, not into them
    let [cmds_dir, fail_dir, quiet_dir, local_dir] = ["cmds", "fail", "quiet", "local"].map(|d| dir.path().join(d));
    for d in [&cmds_dir, &fail_dir, &quiet_dir, &local_dir] {
        std::fs::create_dir(d).unwrap();
    }
    // the script alone, far from baselines/: `import structdr_io` finds structdr's own copy
    let script = cmds_dir.join("cmds.py");
    std::fs::copy(baselines.join("numpy_cmds.py"), &script).unwrap();
    // a script beside its own copy of the helper: that copy wins (Python searches the script's
    // directory before PYTHONPATH)
    let helper = std::fs::read_to_string(baselines.join("structdr_io.py")).unwrap();
    std::fs::write(local_dir.join("structdr_io.py"), helper + "\nWHICH = 'local copy'\n").unwrap();
    let local = local_dir.join("local.py");
    std::fs::write(
        &local,
        "import structdr_io\nprint('helper:', getattr(structdr_io, 'WHICH', 'structdr copy'))\nx, p, seed, spec = structdr_io.cell()\nstructdr_io.write_embedding(spec, x[:, :2])\n",
    )
    .unwrap();
    let fail = fail_dir.join("fail.py");
    std::fs::write(&fail, "import sys\nprint('about to fail')\nsys.exit('no luck: bad parameter')\n").unwrap();
    let quiet = quiet_dir.join("quiet.py");
    std::fs::write(&quiet, "print('wrote nothing')\n").unwrap();
    let text = format!(
        r#"
id = "t"
title = "external"
seed = 2
repeats = 3

[evaluation]
protocols = ["loocv"]

[[dataset]]
name = "three_clusters"
params = {{ n = 60 }}

[[method]]
name = "pca"
grid = {{ dim = 2 }}

[[method]]
name = "cmds"
command = ["python3", "{}"]
grid = {{ dim = 2 }}

[[method]]
name = "fails"
command = ["python3", "{}"]
grid = {{ dim = 2 }}
randomised = true

[[method]]
name = "sleeps"
command = ["python3", "-c", "import time; time.sleep(30)"]
timeout_s = 0.5
grid = {{ dim = 2 }}

[[method]]
name = "quiet"
command = ["python3", "{}"]
grid = {{ dim = 2 }}

[[method]]
name = "local"
command = ["python3", "{}"]
grid = {{ dim = 2 }}
"#,
        script.display(),
        fail.display(),
        quiet.display(),
        local.display()
    );
    let plan = plan_in(dir.path(), &text);
    let t0 = std::time::Instant::now();
    let out = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    // pca 1 + cmds 1 (deterministic by default: once, not `repeats` times) + fails 3 (declared
    // randomised: repeats) + sleeps 1 + quiet 1 + local 1
    assert_eq!((out.summary.total, out.summary.failed), (8, 5));
    let cells_of = |m: &str| out.results.iter().filter(|(c, _)| c.key.method == m).count();
    assert_eq!((cells_of("cmds"), cells_of("fails")), (1, 3));
    assert!(!plan.methods.iter().find(|m| m.name == "cmds").unwrap().randomised);
    let rec = |label: &str| out.results.iter().find(|(c, _)| plan.methods[c.method].label == label).unwrap().1.clone().unwrap();
    // structdr's copy of the helper is keyed where it may be what runs; a script's own copy wins
    let helper_key = |m: &str| out.results.iter().find(|(c, _)| c.key.method == m).unwrap().0.key.external.clone().unwrap().helper_sha256;
    assert_eq!(helper_key("cmds").as_deref(), Some(structdr_datasets::sha256_hex(structdr::spec::external::HELPER_PY.as_bytes()).as_str()));
    assert_eq!(helper_key("local"), None);
    let l = rec("local");
    assert!(l.notes.iter().any(|n| n.contains("helper: local copy")), "{:?} {:?}", l.notes, l.error);
    // classical MDS is PCA: the same LOOCV accuracy, and the script's stdout is kept
    let (pca, cmds) = (rec("pca"), rec("cmds"));
    assert_eq!(cmds.status, structdr::store::Status::Ok, "{:?}", cmds.error);
    assert_eq!(cmds.metrics["loocv_1nn_accuracy"], pca.metrics["loocv_1nn_accuracy"]);
    assert!(cmds.notes.iter().any(|n| n.contains("stdout") && n.contains("cmds: 60 samples -> 2 dimensions")), "{:?}", cmds.notes);
    let f = rec("fails");
    assert!(f.error.as_deref().unwrap().contains("no luck: bad parameter") && f.error.as_deref().unwrap().contains("exit status: 1"), "{:?}", f.error);
    let s = rec("sleeps");
    assert!(s.error.as_deref().unwrap().contains("did not finish within timeout_s = 0.5 s"), "{:?}", s.error);
    assert!(t0.elapsed().as_secs_f64() < 25.0, "the sleeping command was killed, not waited for");
    assert!(rec("quiet").error.as_deref().unwrap().contains("wrote no embedding.npy"));
    // editing the script gives its cells new keys; the others are reused
    let before = out.results.iter().find(|(c, _)| c.key.method == "cmds").unwrap().0.hash.clone();
    std::fs::write(&script, std::fs::read_to_string(&script).unwrap() + "\n# edited\n").unwrap();
    let plan2 = plan_in(dir.path(), &text);
    let out2 = structdr::run_spec(&plan2, &opts(dir.path().into())).unwrap();
    let after = out2.results.iter().find(|(c, _)| c.key.method == "cmds").unwrap().0.hash.clone();
    assert_ne!(before, after);
    // only the edited method's cell is computed again (failed cells are records too: --retry-failed)
    assert_eq!((out2.summary.computed, out2.summary.cached), (1, 7));
    // check: a missing script, an unknown program (both what the machine lacks), a registry name
    let env_error = |t: &str| structdr::spec::check_environment(&plan_in(dir.path(), t)).unwrap_err().to_string();
    assert!(env_error(&text.replace("cmds.py", "nope.py")).contains("command file"));
    let e = env_error(&text.replace("[\"python3\", \"-c\"", "[\"no-such-program-xyz\", \"-c\"").replace("cmds.py", "nope.py"));
    assert!(e.contains("neither a file nor on PATH") && e.contains("nope.py"), "all problems at once: {e}");
}

/// An external method named like a built-in one (here `pca`, as when structdr gains a built-in
/// under a name a spec already used): the spec wins, the external command runs beside the
/// built-in row, and the plan warns with the line.
#[test]
fn an_external_method_named_like_a_built_in_one_is_the_specs_and_warns() {
    if !python_with_numpy() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("cmds.py");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../baselines/numpy_cmds.py"), &script).unwrap();
    let text = format!(
        r#"
id = "t"
title = "shadowing"
repeats = 3

[evaluation]
protocols = ["loocv"]

[[dataset]]
name = "three_clusters"
params = {{ n = 60 }}

[[method]]
name = "pca"
label = "PCA (built-in)"
grid = {{ dim = 2 }}

[[method]]
name = "pca"
command = ["python3", "{}"]
grid = {{ dim = 2 }}
"#,
        script.display()
    );
    let plan = plan_in(dir.path(), &text);
    assert_eq!(plan.warnings.len(), 1, "{:?}", plan.warnings);
    assert!(plan.warnings[0].contains("spec.toml:20: method 'pca' has a command: the spec's external method runs"), "{}", plan.warnings[0]);
    let out = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!((out.summary.total, out.summary.failed), (2, 0));
    let rec = |label: &str| out.results.iter().find(|(c, _)| plan.methods[c.method].label == label).unwrap().clone();
    let (builtin, external) = (rec("PCA (built-in)"), rec("pca"));
    assert!(builtin.0.key.external.is_none() && external.0.key.external.is_some());
    let ext = external.1.unwrap();
    assert!(ext.notes.iter().any(|n| n.contains("cmds: 60 samples -> 2 dimensions")), "the script ran: {:?}", ext.notes);
    // classical MDS is PCA up to signs: the same score from both rows
    assert_eq!(ext.metrics["loocv_1nn_accuracy"], builtin.1.unwrap().metrics["loocv_1nn_accuracy"]);
}

#[test]
fn a_rerun_that_computes_nothing_rewrites_every_output_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let text = SPEC.replace("[evaluation]", "[figures]\nbest_embeddings = true\n\n[evaluation]");
    let plan = plan_in(dir.path(), &text);
    let first = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert!(first.summary.computed > 0);
    let out_dir = dir.path().join("out");
    let snapshot = || {
        let mut files: Vec<(PathBuf, Vec<u8>)> = Vec::new();
        for e in std::fs::read_dir(&out_dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() {
                files.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
        files.sort();
        files
    };
    let before = snapshot();
    assert!(before.iter().any(|(p, _)| p.extension().is_some_and(|e| e == "png")), "figures are part of the check");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let again = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!(again.summary.computed, 0);
    let after = snapshot();
    assert_eq!(before.len(), after.len());
    for ((p, a), (_, b)) in before.iter().zip(after.iter()) {
        assert!(a == b, "{} changed on a re-run that computed nothing", p.display());
    }
}

/// A file without labels: label-free protocols are scored, label protocols are not and the record
/// and the table say so; a spec with only label protocols is refused before any cell runs.
#[test]
fn a_file_without_labels_is_scored_by_label_free_protocols_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::new();
    for i in 0..60 {
        let t = i as f64 * 0.21;
        csv.push_str(&format!("{},{},{}\n", t.cos() * (1.0 + 0.1 * t), t.sin(), 0.05 * t));
    }
    let data = dir.path().join("unlabelled.csv");
    std::fs::write(&data, &csv).unwrap();
    let text = |protocols: &str| {
        format!(
            "id = \"u\"\ntitle = \"no labels\"\nseed = 1\n[evaluation]\nprotocols = {protocols}\n[[dataset]]\npath = \"{}\"\n[[method]]\nname = \"pca\"\ngrid = {{ dim = 2 }}\n",
            data.display()
        )
    };
    // only label protocols: refused, naming the data set and the way out
    let only_labels = plan_in(dir.path(), &text(r#"["loocv", "kmeans"]"#));
    let Err(e) = structdr::run_spec(&only_labels, &opts(dir.path().join("a"))) else { panic!("a spec with only label protocols ran on unlabelled data") };
    let e = e.to_string();
    assert!(e.contains("unlabelled has no labels") && e.contains("neighbourhood"), "{e}");
    assert!(!dir.path().join("a/u/records").exists() || std::fs::read_dir(dir.path().join("a/u/records")).unwrap().next().is_none());
    // with neighbourhood: trustworthiness is scored, LOOCV is not, and both say so
    let plan = plan_in(dir.path(), &text(r#"["loocv", "neighbourhood"]"#));
    let out = structdr::run_spec(&plan, &opts(dir.path().join("b"))).unwrap();
    assert_eq!((out.summary.total, out.summary.failed), (1, 0));
    let rec = out.results[0].1.as_ref().unwrap();
    assert!(rec.metrics["trustworthiness"] > 0.5 && rec.metrics["trustworthiness"] <= 1.0, "{:?}", rec.metrics);
    assert!(!rec.metrics.contains_key("loocv_1nn_accuracy"));
    // every new record names the machine it was computed on
    assert!(rec.machine.as_deref().is_some_and(|m| m.contains("logical CPU")), "{:?}", rec.machine);
    assert!(rec.notes.iter().any(|n| n == "not scored: loocv (the data set has no labels)"), "{:?}", rec.notes);
    let md = std::fs::read_to_string(&out.tables.as_ref().unwrap().md).unwrap();
    assert!(md.contains("- unlabelled: no labels: loocv_1nn_accuracy not scored on it"), "{md}");
    // neighbourhood alone: the table's metric is trustworthiness, with a value
    let plan = plan_in(dir.path(), &text(r#"["neighbourhood"]"#));
    assert_eq!(plan.select_metric(), "trustworthiness");
    let out = structdr::run_spec(&plan, &opts(dir.path().join("c"))).unwrap();
    let md = std::fs::read_to_string(&out.tables.as_ref().unwrap().md).unwrap();
    assert!(md.contains(&format!("| **pca** | {:.4} |", out.results[0].1.as_ref().unwrap().metrics["trustworthiness"])), "{md}");
}

/// `--force` recomputes every cell of a stored spec (the claim step re-reads the store and must
/// not take the records it is replacing for cells another run finished).
#[test]
fn force_recomputes_every_stored_cell() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_in(dir.path(), SPEC);
    let first = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!(first.summary.computed, first.summary.total);
    let again = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!((again.summary.computed, again.summary.cached), (0, again.summary.total));
    let forced = structdr::run_spec(&plan, &RunOptions { recompute: structdr::exec::Recompute::All, ..opts(dir.path().into()) }).unwrap();
    assert_eq!((forced.summary.computed, forced.summary.cached), (forced.summary.total, 0));
    // the recomputed values are the stored ones (deterministic), the records are new
    for ((_, a), (_, b)) in first.results.iter().zip(&forced.results) {
        let (a, b) = (a.as_ref().unwrap(), b.as_ref().unwrap());
        assert_eq!(a.metrics, b.metrics);
        assert!(b.machine.is_some());
    }
}

/// Shards split by the fit's key: cells that differ only in an evaluation-stage parameter (FSL's
/// n_selected) share one fit and land in one shard, so no shard refits what another computes.
#[test]
fn shards_keep_cells_sharing_a_fit_together() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
id = "fsl_shards"
title = "shards"
seed = 2

[evaluation]
protocols = ["kmeans"]
restarts = 2

[[dataset]]
name = "three_clusters"
params = { n = 60 }

[[method]]
name = "fsl"
grid = { n_selected = [1, 2, 3], b = [0.5, 1.0], max_iter = 20 }
"#;
    let plan = plan_in(dir.path(), text);
    let mut per_shard = Vec::new();
    for i in 0..4 {
        let shard = Some(structdr::cells::Shard { index: i, count: 4 });
        let out = structdr::run_spec(&plan, &RunOptions { shard, ..opts(dir.path().into()) }).unwrap();
        per_shard.push(out.summary.computed);
    }
    // two fits (b), three cells each: every shard computes 0, 3 or 6 cells, 6 in all
    assert_eq!(per_shard.iter().sum::<usize>(), 6, "{per_shard:?}");
    assert!(per_shard.iter().all(|c| c % 3 == 0), "cells of one fit were split: {per_shard:?}");
}

/// `structdr prune` keeps an external method's records when a built-in of the same name has
/// another version (`fsasl` is at version 2, an external method at 1): the records are the spec's
/// method's, as its cells are.
#[test]
fn prune_keeps_an_external_methods_records_beside_a_built_in_of_its_name() {
    if !python_with_numpy() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("cmds.py");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../baselines/numpy_cmds.py"), &script).unwrap();
    let text = format!(
        "id = \"t\"\ntitle = \"t\"\n[evaluation]\nprotocols = [\"loocv\"]\n[[dataset]]\nname = \"three_clusters\"\nparams = {{ n = 60 }}\n[[method]]\nname = \"fsasl\"\ncommand = [\"python3\", \"{}\"]\ngrid = {{ dim = 2 }}\n",
        script.display()
    );
    let plan = plan_in(dir.path(), &text);
    assert!(structdr_methods::lookup("fsasl").unwrap().version != plan.methods[0].version, "the test needs differing versions");
    let out = structdr::run_spec(&plan, &opts(dir.path().into())).unwrap();
    assert_eq!((out.summary.total, out.summary.failed), (1, 0));
    structdr::commands::run::prune(&dir.path().join("spec.toml"), dir.path(), false).unwrap();
    let store = structdr::store::Store::open_in(&dir.path().join("out")).unwrap();
    assert_eq!(store.len(), 1, "the external method's record is kept");
}
