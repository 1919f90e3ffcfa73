//! The cost a run announces before computing comes from the store's records: a cell's own record
//! when it is recomputed, the same cell's record under another method version next, the mean of
//! its method's records on its data set otherwise, a shared fit counted once.

use structdr::exec::RunOptions;

#[test]
fn the_cost_estimate_adds_the_records_fit_and_evaluation_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("c.toml");
    // three LE cells (k) and three FSL-like selection cells sharing one fit (n_selected is an
    // evaluation-stage parameter of `ls`)
    std::fs::write(
        &spec,
        r#"
id = "c"
title = "cost"
seed = 1

[evaluation]
protocols = ["loocv"]

[[dataset]]
name = "three_clusters"
params = { n = 60 }

[[method]]
name = "le"
grid = { dim = 2, k = [5, 6, 7] }

[[method]]
name = "ls"
grid = { n_selected = [1, 2] }
"#,
    )
    .unwrap();
    let plan = structdr::spec::load(&spec).unwrap();
    let results = dir.path().join("results");
    structdr::run_spec(&plan, &RunOptions::quiet(&results)).unwrap();
    let checked = structdr::data::check_inputs(&plan).unwrap();
    let data = structdr::data::prepare(&plan, checked, true).unwrap();
    let cells = structdr::cells::cells(&plan, &data);
    assert_eq!(cells.len(), 5);
    let store = structdr::store::Store::open_in(&plan.output_dir(&results)).unwrap();
    let recs: Vec<_> = cells.iter().map(|c| store.get(&c.hash).unwrap()).collect();
    // every cell has its own record: LE's three fits and evaluations, LS's one fit and two evaluations
    let est = structdr::cost::estimate(&store, &cells);
    assert_eq!((est.cells, est.from_own_record, est.from_similar, est.unknown), (5, 5, 0, 0));
    let ls_fits: Vec<f64> = recs.iter().filter(|r| r.key.method == "ls").map(|r| r.fit_seconds).collect();
    assert_eq!(ls_fits.len(), 2);
    assert_eq!(ls_fits[0], ls_fits[1], "the shared fit's seconds are in both records");
    let want: f64 = recs.iter().filter(|r| r.key.method == "le").map(|r| r.fit_seconds + r.eval_seconds).sum::<f64>()
        + ls_fits[0]
        + recs.iter().filter(|r| r.key.method == "ls").map(|r| r.eval_seconds).sum::<f64>();
    assert!((est.core_seconds - want).abs() <= 1e-12 * want.max(1.0), "{} vs {want}", est.core_seconds);
    // the units a run schedules: LE's three fits and LS's one shared fit with its two evaluations
    assert_eq!(est.jobs.len(), 4);
    assert!((est.jobs.iter().sum::<f64>() - est.core_seconds).abs() <= 1e-12 * want.max(1.0));
    let groups: Vec<Vec<&structdr::cells::Cell>> =
        vec![cells.iter().filter(|c| c.key.method == "ls").collect(), cells.iter().filter(|c| c.key.method == "le").take(1).collect()];
    let by_group = structdr::cost::group_seconds(&store, &groups);
    let ls_group = ls_fits[0] + recs.iter().filter(|r| r.key.method == "ls").map(|r| r.eval_seconds).sum::<f64>();
    let le_first = cells.iter().position(|c| c.key.method == "le").unwrap();
    let want_groups = [ls_group, recs[le_first].fit_seconds + recs[le_first].eval_seconds];
    // the sums are formed in another order: equal to rounding
    assert!(
        by_group.iter().zip(want_groups).all(|(got, want)| got.is_some_and(|g| (g - want).abs() <= 1e-12 * want.max(1e-3))),
        "{by_group:?} vs {want_groups:?}"
    );
    // without its own record, an LE cell costs the mean of the other LE records
    let le: Vec<usize> = (0..cells.len()).filter(|&i| cells[i].key.method == "le").collect();
    std::fs::remove_file(plan.output_dir(&results).join("records").join(format!("{}.json", cells[le[0]].hash))).unwrap();
    let est = structdr::cost::estimate(&store, [&cells[le[0]]]);
    assert_eq!((est.from_own_record, est.from_similar, est.unknown), (0, 1, 0));
    let mean = (recs[le[1]].fit_seconds + recs[le[1]].eval_seconds + recs[le[2]].fit_seconds + recs[le[2]].eval_seconds) / 2.0;
    assert!((est.core_seconds - mean).abs() <= 1e-12 * mean.max(1.0), "{} vs {mean}", est.core_seconds);
    // the same cell's record under another method version comes before the mean: after a
    // version bump, each cell costs what it cost before
    let mut other = recs[le[0]].clone();
    other.key.method_version += 1;
    other.hash = other.key.hash();
    other.fit_seconds = 1234.5;
    store.put(&other).unwrap();
    let est = structdr::cost::estimate(&store, [&cells[le[0]]]);
    assert_eq!((est.from_own_record, est.from_other_version, est.from_similar, est.unknown), (0, 1, 0, 0));
    let want = 1234.5 + other.eval_seconds;
    assert!((est.core_seconds - want).abs() <= 1e-12 * want, "{} vs {want}", est.core_seconds);
    // a method without records on the data set has no estimate
    let empty = structdr::store::Store::open(&dir.path().join("empty")).unwrap();
    let est = structdr::cost::estimate(&empty, &cells);
    assert_eq!((est.unknown, est.core_seconds), (5, 0.0));
}

/// A run starts the fits its records say take longest first. With one thread the cells finish in
/// the order they start, so the progress lines of a `--force` rerun follow the first run's
/// recorded seconds, largest first, whatever the spec's order.
#[test]
fn a_run_starts_the_cells_expected_to_take_longest_first() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("order.toml");
    std::fs::write(
        &spec,
        r#"
id = "order"
title = "order"
seed = 1

[evaluation]
protocols = ["loocv"]

[[dataset]]
name = "three_clusters"
params = { n = 150 }

[[method]]
name = "pca"
label = "m-pca"
grid = { dim = 2 }

[[method]]
name = "le"
label = "m-le"
grid = { dim = 2, k = 6 }

[[method]]
name = "tsne"
label = "m-tsne"
grid = { dim = 2, max_iter = 300 }
"#,
    )
    .unwrap();
    let results = dir.path().join("results");
    run_one_thread(&spec, &results, &[]);
    let plan = structdr::spec::load(&spec).unwrap();
    let store = structdr::store::Store::open_in(&plan.output_dir(&results)).unwrap();
    let mut recorded: Vec<(f64, String)> =
        store.records().unwrap().into_iter().filter_map(|(_, r)| r).map(|r| (r.fit_seconds + r.eval_seconds, format!("m-{}", r.key.method))).collect();
    assert_eq!(recorded.len(), 3);
    // ties (never seen: the seconds are measured to the nanosecond) keep the spec's order
    let spec_order = |label: &str| ["m-pca", "m-le", "m-tsne"].iter().position(|l| *l == label).unwrap();
    recorded.sort_by(|a, b| b.0.total_cmp(&a.0).then(spec_order(&a.1).cmp(&spec_order(&b.1))));
    let want: Vec<String> = recorded.into_iter().map(|(_, label)| label).collect();
    let (done, log) = run_one_thread(&spec, &results, &["--force"]);
    let labels: Vec<String> = done.iter().map(|(_, method)| method.split(' ').next().unwrap().trim_end_matches(':').to_string()).collect();
    assert_eq!(labels, want, "{log}");
}

/// `structdr run SPEC --results RESULTS -j 1 EXTRA`, which must succeed: the (data set, rest of
/// the line) of every cell's progress line, in the order the cells finished (with one thread, the
/// order they started), and the whole log.
fn run_one_thread(spec: &std::path::Path, results: &std::path::Path, extra: &[&str]) -> (Vec<(String, String)>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_structdr"))
        .args(["run", spec.to_str().unwrap(), "--results", results.to_str().unwrap(), "-j", "1"])
        .args(extra)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{log}");
    let done = log
        .lines()
        .filter(|l| l.starts_with('['))
        .map(|l| {
            let (set, rest) = l.split_once("] ").unwrap().1.split_once(" / ").unwrap();
            (set.to_string(), rest.to_string())
        })
        .collect();
    (done, log)
}

/// With nothing recorded, a run starts the cells of its largest data set first: the sample count
/// is the only size known before a fit. The spec lists the small set first; with one thread the
/// progress lines show the order the cells started in.
#[test]
fn an_empty_store_starts_the_largest_data_set_first() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("size.toml");
    std::fs::write(
        &spec,
        r#"
id = "size"
title = "size"
seed = 1

[evaluation]
protocols = ["loocv"]

[[dataset]]
name = "three_clusters"
label = "small"
params = { n = 60 }

[[dataset]]
name = "three_clusters"
label = "large"
params = { n = 240 }

[[dataset]]
name = "three_clusters"
label = "medium"
params = { n = 120 }

[[method]]
name = "le"
grid = { dim = 2, k = [5, 6] }
"#,
    )
    .unwrap();
    let (done, log) = run_one_thread(&spec, &dir.path().join("results"), &[]);
    let sets: Vec<&str> = done.iter().map(|(set, _)| set.as_str()).collect();
    assert_eq!(sets, ["large", "large", "medium", "medium", "small", "small"], "{log}");
}
