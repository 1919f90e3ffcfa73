//! The HTML report (`structdr report`): content from a real run, and a load in headless
//! Chromium that fails on console errors or missing images (CI installs Chromium; elsewhere the
//! browser part is skipped when no `chromium` is found).

use crate::common;

use structdr::exec::RunOptions;

#[test]
fn the_report_shows_tables_scores_figures_and_loads_cleanly_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let spec = root.join("experiments/t.toml");
    std::fs::create_dir_all(spec.parent().unwrap()).unwrap();
    std::fs::write(
        &spec,
        r#"
id = "t"
title = "Report test"
seed = 1

[figures]
best_embeddings = true

[evaluation]
protocols = ["loocv"]

[[dataset]]
name = "three_clusters"
paper = "Clusters"
params = { n = 90 }

[[dataset]]
name = "two_moons"
paper = "Moons"
params = { n = 100 }

[[method]]
name = "pca"
paper_row = "PCA"
grid = { dim = 2 }

[reference]
source = "made-up numbers for the test"
datasets = ["Clusters", "Moons"]
rows = { PCA = [0.995, 0.5] }
"#,
    )
    .unwrap();
    std::fs::create_dir_all(root.join("docs/parity")).unwrap();
    std::fs::write(root.join("docs/parity/pca.md"), "# PCA parity\n").unwrap();
    let plan = structdr::spec::load(&spec).unwrap();
    let results = root.join("results");
    let opts = RunOptions {
        results_root: results.clone(),
        recompute: structdr::exec::Recompute::Missing,
        retry_failed: false,
        max_cells: None,
        only_datasets: vec![],
        only_methods: vec![],
        shard: None,
        only_cells: None,
        quiet: true,
        no_wait: false,
    };
    let out = structdr::run_spec(&plan, &opts).unwrap();
    let ours = out.best.iter().map(|b| b.score().unwrap()).collect::<Vec<_>>();
    let page = structdr::html::write_report(std::slice::from_ref(&spec), &results, &root.join("docs"), &results.join("report")).unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    // rebuilt from the same records, the report is the same bytes
    structdr::html::write_report(std::slice::from_ref(&spec), &results, &root.join("docs"), &results.join("report")).unwrap();
    assert_eq!(std::fs::read_to_string(&page).unwrap(), html);
    // ours beside the paper's with the difference, coloured; the 0.5 gap links to the parity note
    assert!(html.contains(&format!("{:.4}", ours[1])) && html.contains("paper 0.5000"), "{html}");
    assert!(html.contains("class=\"far\"") && html.contains("../../docs/parity/pca.md"), "gap beyond 3 points links its note");
    assert!(html.contains("within 1 / 2 / 3 points") && html.contains("of 2"), "row scorecard");
    assert!(html.contains("Provenance: 2 records"), "provenance from the records");
    let imgs: Vec<&str> = html.split("<img src=\"").skip(1).map(|s| s.split('"').next().unwrap()).collect();
    assert!(!imgs.is_empty());
    for src in &imgs {
        assert!(page.parent().unwrap().join(src).is_file(), "image {src} does not exist");
    }
    let Some((dom, console)) = common::load(&page, &root.join("chromium-profile")) else { return };
    assert!(console.is_empty(), "console messages: {console:?}");
    assert!(dom.contains(&format!("data-images=\"ok {}\"", imgs.len())), "not every image loaded: {}", dom.lines().find(|l| l.contains("<body")).unwrap_or(""));
}
