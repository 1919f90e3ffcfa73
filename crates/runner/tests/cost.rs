//! The cost a run announces before computing comes from the store's records: a cell's own record
//! when it is recomputed, the mean of its method's records on its data set otherwise, a shared fit
//! counted once.

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
    // without its own record, an LE cell costs the mean of the other LE records
    let le: Vec<usize> = (0..cells.len()).filter(|&i| cells[i].key.method == "le").collect();
    std::fs::remove_file(plan.output_dir(&results).join("records").join(format!("{}.json", cells[le[0]].hash))).unwrap();
    let est = structdr::cost::estimate(&store, [&cells[le[0]]]);
    assert_eq!((est.from_own_record, est.from_similar, est.unknown), (0, 1, 0));
    let mean = (recs[le[1]].fit_seconds + recs[le[1]].eval_seconds + recs[le[2]].fit_seconds + recs[le[2]].eval_seconds) / 2.0;
    assert!((est.core_seconds - mean).abs() <= 1e-12 * mean.max(1.0), "{} vs {mean}", est.core_seconds);
    // a method without records on the data set has no estimate
    let empty = structdr::store::Store::open(&dir.path().join("empty")).unwrap();
    let est = structdr::cost::estimate(&empty, &cells);
    assert_eq!((est.unknown, est.core_seconds), (5, 0.0));
}
