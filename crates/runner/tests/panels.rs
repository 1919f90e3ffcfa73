//! Committed figure panels (`results/<id>/panels/`): figures redraw from them byte for byte as
//! from fresh fits, `--force` refits past them, and every committed panel file parses.

use std::path::{Path, PathBuf};
use structdr::exec::RunOptions;
use structdr::spec;
use structdr::store::{read_degenerate_panel, read_panel, PanelStore, FITS_DIR, PANELS_DIR};

/// A small figure-only spec: a learned graph, an adjacency matrix and a convergence curve.
const SPEC: &str = r#"
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

fn plan_in(dir: &Path) -> spec::Plan {
    let path = dir.join("spec.toml");
    std::fs::write(&path, SPEC).unwrap();
    spec::load(&path).unwrap()
}

/// Every SVG of the output directory and figures.md, by name, with their bytes.
fn drawn(out_dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "svg" || e == "md"))
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect();
    files.sort();
    files
}

/// Removes the drawn figures (SVG, PNG, figures.md), so a run that did not redraw them fails the comparison.
fn remove_drawn(out_dir: &Path) {
    for e in std::fs::read_dir(out_dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|e| e == "svg" || e == "png" || e == "md") {
            std::fs::remove_file(p).unwrap();
        }
    }
}

#[test]
fn figures_redraw_from_panels_byte_for_byte_and_force_refits() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_in(dir.path());
    let opts = RunOptions::quiet(dir.path());
    let out_dir = plan.output_dir(dir.path());
    // fresh fits: one panel per distinct fit, beside the fit cache
    let out = structdr::run_spec(&plan, &opts).unwrap();
    assert_eq!(std::fs::read_dir(out_dir.join(PANELS_DIR)).unwrap().count(), 3);
    let fresh = drawn(&out_dir);
    assert_eq!(fresh.len(), 4, "three SVGs and figures.md");
    // a fresh clone: no fit cache, only the panels; the figures (fit times in figures.md
    // included) come out byte for byte the same, and nothing is refitted into the cache
    std::fs::remove_dir_all(out_dir.join(FITS_DIR)).unwrap();
    remove_drawn(&out_dir);
    structdr::run_spec(&plan, &opts).unwrap();
    assert_eq!(drawn(&out_dir), fresh);
    assert_eq!(std::fs::read_dir(out_dir.join(FITS_DIR)).unwrap().count(), 0, "drawn from the panels, nothing refitted");

    // The panels are read first: a panel whose coordinates are changed shows in the graph figure.
    let panels = PanelStore::open_in(&out_dir);
    let le = structdr::keys::cell_key(&plan, &out.prepared[0], "le", 1, &plan.spec_protocols(), &plan.figures[0][0].params);
    let (f, seconds) = panels.get(&le).unwrap();
    let mut doubled = f.clone();
    if let structdr_methods::api::Output::Embedding(y) = &mut doubled.output {
        y.mapv_inplace(|v| 2.0 * v + 1.0);
    }
    panels.put(&le, &doubled, seconds);
    structdr::run_spec(&plan, &opts).unwrap();
    let graph = |files: &[(PathBuf, Vec<u8>)]| files.iter().find(|(p, _)| p.ends_with("g.svg")).unwrap().1.clone();
    assert_ne!(graph(&drawn(&out_dir)), graph(&fresh), "the changed panel was not drawn");
    // `--force` refits past the panels and puts the fresh fit back: the figure is the fresh one
    structdr::run_spec(&plan, &RunOptions { recompute: structdr::exec::Recompute::All, ..opts.clone() }).unwrap();
    assert_eq!(graph(&drawn(&out_dir)), graph(&fresh));
    assert_eq!(panels.get(&le).unwrap().0.embedding().unwrap(), f.embedding().unwrap());
    assert_eq!(std::fs::read_dir(out_dir.join(FITS_DIR)).unwrap().count(), 3, "refitted into the cache");

    // without panels (or with stale ones, under other keys) the figures fit as before
    std::fs::remove_dir_all(out_dir.join(PANELS_DIR)).unwrap();
    std::fs::remove_dir_all(out_dir.join(FITS_DIR)).unwrap();
    remove_drawn(&out_dir);
    structdr::run_spec(&plan, &opts).unwrap();
    let refitted = drawn(&out_dir);
    let svgs = |files: &[(PathBuf, Vec<u8>)]| files.iter().filter(|(p, _)| p.extension().is_some_and(|e| e == "svg")).cloned().collect::<Vec<_>>();
    assert_eq!(svgs(&refitted), svgs(&fresh));
    assert_eq!(std::fs::read_dir(out_dir.join(PANELS_DIR)).unwrap().count(), 3);
}

/// Every committed panel parses into a consistent fit stored under the key its file is named by;
/// every committed degenerate panel into its key, reason and time.
#[test]
fn every_committed_panel_parses() {
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results");
    let mut n = 0;
    for spec_dir in std::fs::read_dir(&results).unwrap() {
        let dir = spec_dir.unwrap().path().join(PANELS_DIR);
        if !dir.is_dir() {
            continue;
        }
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            if name.ends_with(".degenerate.json") {
                let d = read_degenerate_panel(&path).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(name, format!("{}.degenerate.json", d.key.hash()), "{} is named after another key", path.display());
                n += 1;
                continue;
            }
            let (key, _, seconds) = read_panel(&path).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(name, format!("{}.json.gz", key.hash()), "{} is named after another key", path.display());
            assert!(seconds >= 0.0);
            n += 1;
        }
    }
    assert!(n > 0, "no committed panels under {}", results.display());
}

/// A sensitivity sweep crossing a value where the method has no determined result: MPME with a
/// lambda so large that no pair can gain an edge (`W = 0`, degenerate) beside one that learns a
/// graph. The figure is drawn with that point as a gap, `figures.md` says why, the degenerate fit
/// is kept beside the panels, and the next run reads both without refitting.
#[test]
fn a_degenerate_point_of_a_sweep_is_a_gap_kept_beside_the_panels() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gap.toml");
    std::fs::write(
        &path,
        r#"
id = "gap"
title = "gap"
seed = 1
[evaluation]
protocols = ["kmeans"]
restarts = 2
[[dataset]]
name = "three_clusters"
params = { n = 45 }
[[figure]]
name = "s"
title = "sweep"
kind = "sensitivity"
[[figure.panel]]
dataset = "three_clusters"
method = "mpme"
params = { dim = 2 }
vary = "lambda"
values = [0.01, 1e9]
title = "sweep"
"#,
    )
    .unwrap();
    let plan = spec::load(&path).unwrap();
    let results = dir.path().join("results");
    let out_dir = plan.output_dir(&results);
    structdr::run_spec(&plan, &RunOptions::quiet(&results)).unwrap();
    let md = std::fs::read_to_string(out_dir.join("figures.md")).unwrap();
    assert!(md.contains("degenerate (a gap in the plots): mpme: degenerate: W = 0 is optimal"), "{md}");
    assert_eq!(md.matches("| degenerate | – | – | – | – |").count(), 1, "{md}");
    // the other point is scored (its W's non-zero count, 128-136 across MPME's solver versions
    // and tolerances, is not what this test is about)
    let scored =
        md.lines().find(|l| l.starts_with("| 0.01 | 1.0000 ± 0.0000 | 1.0000 ± 0.0000 | 2 | ")).unwrap_or_else(|| panic!("the other point is scored: {md}"));
    let nz: usize = scored.split('|').nth(5).unwrap().trim().parse().unwrap();
    assert!(nz > 0 && nz.is_multiple_of(2), "W of the scored point: {scored}");
    let files: Vec<String> = std::fs::read_dir(out_dir.join(PANELS_DIR)).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(files.iter().filter(|f| f.ends_with(".degenerate.json")).count(), 1, "{files:?}");
    assert_eq!(files.iter().filter(|f| f.ends_with(".json.gz")).count(), 1, "{files:?}");
    // redrawn from both files, byte for byte, with nothing refitted
    let before = drawn(&out_dir);
    std::fs::remove_dir_all(out_dir.join(FITS_DIR)).unwrap();
    structdr::run_spec(&plan, &RunOptions::quiet(&results)).unwrap();
    assert!(!out_dir.join(FITS_DIR).exists() || std::fs::read_dir(out_dir.join(FITS_DIR)).unwrap().count() == 0, "nothing refitted");
    assert_eq!(drawn(&out_dir), before);
}

/// An embedding, graph, convergence or adjacency figure with a panel whose fit the method called
/// degenerate (MPME with a lambda so large that `W = 0` is optimal): that panel is drawn empty with
/// "degenerate" in its caption, `figures.md` gives the method's reason, and the other panels are
/// drawn as usual. A kind built from the fit's own shape (components against labels) stops with
/// the method's reason and says what to do.
#[test]
fn a_degenerate_panel_of_an_embedding_figure_is_drawn_empty() {
    let dir = tempfile::tempdir().unwrap();
    let figure = |kind: &str| {
        format!(
            r#"
[[figure]]
name = "{kind}"
title = "{kind}"
kind = "{kind}"
[[figure.panel]]
dataset = "three_clusters"
method = "mpme"
params = {{ dim = 2, lambda = 0.01 }}
title = "learned"
[[figure.panel]]
dataset = "three_clusters"
method = "mpme"
params = {{ dim = 2, lambda = 1e9 }}
title = "too sparse"
"#
        )
    };
    let head = "id = \"empty\"\ntitle = \"empty\"\nseed = 1\n[[dataset]]\nname = \"three_clusters\"\nparams = { n = 45 }\n";
    let path = dir.path().join("empty.toml");
    let kinds = ["embedding", "graph", "convergence", "adjacency"];
    std::fs::write(&path, format!("{head}{}", kinds.iter().map(|k| figure(k)).collect::<String>())).unwrap();
    let plan = spec::load(&path).unwrap();
    let results = dir.path().join("results");
    let out_dir = plan.output_dir(&results);
    structdr::run_spec(&plan, &RunOptions::quiet(&results)).unwrap();
    let md = std::fs::read_to_string(out_dir.join("figures.md")).unwrap();
    for kind in kinds {
        assert!(out_dir.join(format!("{kind}.png")).is_file() && out_dir.join(format!("{kind}.svg")).is_file(), "{kind} not drawn");
        let svg = std::fs::read_to_string(out_dir.join(format!("{kind}.svg"))).unwrap();
        assert!(svg.contains("too sparse: degenerate, nothing to draw"), "{kind}: the empty panel's caption");
    }
    assert_eq!(md.matches("degenerate (an empty panel): mpme: degenerate: W = 0 is optimal").count(), kinds.len(), "{md}");
    // the learned panel of the same figures is drawn as usual (W has edges)
    assert!(md.lines().any(|l| l.starts_with("| learned | mpme | ") && l.contains(" edges, nz = ")), "{md}");

    let bad = dir.path().join("bad.toml");
    // MPME returns no components, so the contingency figure holds the degenerate panel alone
    let only_degenerate =
        figure("contingency").split("[[figure.panel]]").enumerate().filter(|(i, _)| *i != 1).map(|(_, s)| s).collect::<Vec<_>>().join("[[figure.panel]]");
    std::fs::write(&bad, format!("{}{only_degenerate}", head.replace("\"empty\"", "\"bad\""))).unwrap();
    let plan = spec::load(&bad).unwrap();
    let Err(err) = structdr::run_spec(&plan, &RunOptions::quiet(&results)) else { panic!("a contingency figure with a degenerate panel must fail") };
    let err = format!("{err:#}");
    assert!(
        err.contains("panel 'too sparse'") && err.contains("W = 0 is optimal") && err.contains("kind = \"contingency\" figure has no empty panel"),
        "{err}"
    );
}
