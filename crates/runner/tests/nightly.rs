//! `structdr nightly` and `structdr history` end to end, through the binary: a small suite run
//! into one history. Runs are clean and accepted; `--fail-on-error` turns a failed cell into exit
//! 2. A changed result (the history tampered to make today's run a regression against it) exits 3
//! and is named with its commit range and old and new values. The history page loads in headless Chromium with
//! every figure.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

const SPEC: &str = r#"
id = "t"
title = "nightly test"
seed = 3

[evaluation]
protocols = ["loocv", "neighbourhood"]

[[dataset]]
name = "two_moons"
params = { n = 120 }

[[method]]
name = "pca"
grid = { dim = 2 }

[[method]]
name = "le"
grid = { dim = 2, k = [10, 200] }
"#;

const SUITE: &str = r#"
id = "test-suite"
title = "test"
commit_url = "https://example.org/structdr/commit/{commit}"

[[quality]]
spec = "t.toml"

[[speed]]
spec = "t.toml"
samples = 2

# timings of a few microseconds jitter by large factors on a loaded machine, so no speed step
# counts here (the speed alarm's arithmetic is tested on fixed series in nightly::tests)
[alarm]
min_seconds = 0.0
min_relative = 1000.0
"#;

fn nightly(dir: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_structdr"))
        .current_dir(dir)
        .args(["nightly", "suite.toml", "--history", "history", "--quiet"])
        .args(extra)
        .env("STRUCTDR_DATA", dir.join("data"))
        .output()
        .unwrap()
}

fn history_lines(dir: &Path) -> Vec<serde_json::Value> {
    let files: Vec<_> = std::fs::read_dir(dir.join("history"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "one series per machine: {files:?}");
    std::fs::read_to_string(&files[0]).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn nightly_appends_compares_and_names_regressions() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("t.toml"), SPEC).unwrap();
    std::fs::write(d.join("suite.toml"), SUITE).unwrap();

    // 1: a clean run (the le k=200 cell fails: k >= N; a failure is not a regression)
    let out = nightly(d, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("3 quality cells") && stdout.contains("1 failed") && stdout.contains("0 regressions"), "{stdout}");
    // the failed cell is in the speed spec too: it has no time, and says so once (not per sample)
    assert!(stdout.contains("1 problems"), "{stdout}");
    let problem = stdout.lines().find(|l| l.contains("problem: speed t.toml: t/two_moons/le ")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(problem.contains("k=200") && problem.contains("ended `failed` with this binary, so it has no time: "), "{problem}");
    // 2: the same under --fail-on-error: appended, compared clean, exit 2 for the failed cell
    let out = nightly(d, &["--fail-on-error"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    let h = history_lines(d);
    assert_eq!(h.len(), 2);
    assert!(h.iter().all(|e| e["accepted"] == true && e["regressions"].as_array().unwrap().is_empty()));
    // the raw samples are kept: 2 per case, fit and evaluation of the two ok cells
    let speed = h[1]["speed"].as_object().unwrap();
    assert_eq!(speed.len(), 4, "{speed:?}");
    assert!(speed.values().all(|s| s.as_array().unwrap().len() == 2));
    // the quality cells are bit-identical between the runs
    assert_eq!(h[0]["quality"], h[1]["quality"]);

    // Tamper with the last accepted run: a metric 0.01 higher than the code gives. Today's run
    // then changed a result against it.
    let path =
        std::fs::read_dir(d.join("history")).unwrap().filter_map(|e| e.ok().map(|e| e.path())).find(|p| p.extension().is_some_and(|e| e == "jsonl")).unwrap();
    let mut last = h[1].clone();
    let cell = last["quality"].as_object().unwrap().keys().find(|k| k.contains("/pca ")).unwrap().clone();
    let was = last["quality"][&cell]["metrics"]["loocv_1nn_accuracy"].as_f64().unwrap();
    last["quality"][&cell]["metrics"]["loocv_1nn_accuracy"] = serde_json::json!(was + 0.01);
    let text = std::fs::read_to_string(&path).unwrap();
    let first = text.lines().next().unwrap();
    std::fs::write(&path, format!("{first}\n{}\n", serde_json::to_string(&last).unwrap())).unwrap();

    let out = nightly(d, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(stdout.contains(&format!("REGRESSION quality {cell} [loocv_1nn_accuracy]")), "{stdout}");
    assert!(stdout.contains(&format!("{:.6} -> {was:.6}", was + 0.01)), "old and new values: {stdout}");
    let h = history_lines(d);
    assert_eq!(h.len(), 3);
    assert_eq!(h[2]["accepted"], false, "a run with regressions is not a baseline");
    // the next run still compares with the tampered accepted run, so it regresses again
    assert_eq!(nightly(d, &[]).status.code(), Some(3));
    // --accept makes it the baseline; after it, runs are clean
    let out = nightly(d, &["--accept"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("accepted with --accept"));
    let out = nightly(d, &[]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 regressions"), "{}", String::from_utf8_lossy(&out.stdout));

    // the summary and the page
    let out = Command::new(env!("CARGO_BIN_EXE_structdr"))
        .current_dir(d)
        .args(["history", "--history", "history", "--suite", "suite.toml"])
        .env("STRUCTDR_DATA", d.join("data"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("6 runs (0 backfilled), 3 with regressions"), "{stdout}");
    let page = d.join("history/index.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<tr class=far>") && html.contains(&cell), "regressions listed");
    assert!(html.contains("https://example.org/structdr/commit/unknown"), "commit links from the suite's template");
    assert!(html.contains("speed.png") && html.contains("quality.png"));
    let imgs: Vec<&str> = html.split("<img src=\"").skip(1).map(|s| s.split('"').next().unwrap()).collect();
    assert_eq!(imgs.len(), 2);
    for src in &imgs {
        assert!(page.parent().unwrap().join(src).is_file(), "{src}");
    }
    let Some((dom, console)) = common::load(&page, &d.join("profile")) else { return };
    assert!(console.is_empty(), "console messages: {console:?}");
    assert!(dom.contains("data-images=\"ok 2\""), "{}", dom.lines().find(|l| l.contains("<body")).unwrap_or(""));
}

/// The paired speed tests' spec: LE's fit (about 0.2 s: long enough that a competing load averages
/// out over its time slices) and PCA's (microseconds), each with its
/// 1-NN LOOCV evaluation (milliseconds).
const PAIRED_SPEC: &str = r#"
id = "p"
title = "paired speed test"
seed = 3

[evaluation]
protocols = ["loocv"]

[[dataset]]
name = "two_moons"
params = { n = 1500 }

[[method]]
name = "pca"
grid = { dim = 2 }

[[method]]
name = "le"
grid = { dim = 2, k = 10 }
"#;

/// A directory with the paired suite (`pairs` pairs per case), its first accepted run (no
/// baseline yet: not paired), and a baseline binary: this binary with the test-only slow-down
/// knob removed from its environment, standing for the last accepted commit.
fn paired_setup(d: &Path, pairs: usize) -> std::path::PathBuf {
    std::fs::write(d.join("p.toml"), PAIRED_SPEC).unwrap();
    std::fs::write(d.join("suite.toml"), format!("id = \"paired\"\n[[speed]]\nspec = \"p.toml\"\nsamples = {pairs}\n")).unwrap();
    let out = nightly(d, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("speed: not paired: no accepted run yet"), "{stdout}");
    let base = d.join("baseline.sh");
    std::fs::write(&base, format!("#!/bin/sh\nexec env -u STRUCTDR_TEST_SLOW_METHOD {} \"$@\"\n", env!("CARGO_BIN_EXE_structdr"))).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
    base
}

fn nightly_paired(d: &Path, base: &Path, slow: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_structdr"));
    cmd.current_dir(d)
        .args(["nightly", "suite.toml", "--history", "history", "--quiet", "--baseline-binary"])
        .arg(base)
        .env("STRUCTDR_DATA", d.join("data"))
        .env_remove("STRUCTDR_TEST_SLOW_METHOD");
    if let Some(m) = slow {
        cmd.env("STRUCTDR_TEST_SLOW_METHOD", m);
    }
    cmd.output().unwrap()
}

/// LE fitting twice (a deliberate 2x slow-down of one method) is flagged as exactly that case,
/// with a ratio near 2, against a baseline run in the same nightly run; PCA's cases and LE's
/// evaluation are not. The run is not accepted, so it is not the next run's baseline.
#[test]
fn paired_speed_flags_exactly_the_slowed_method() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Seven pairs: with three, the interval's lower bound is the smallest ratio, and one pair in
    // which the test binaries running beside this one slowed the baseline hid the slow-down (seen
    // once in CI); with seven it is the second smallest. Seven still failed once beside another
    // test, so nextest runs this test alone (`threads-required`, .config/nextest.toml).
    let base = paired_setup(d, 7);
    let out = nightly_paired(d, &base, Some("le"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // a failure shows every case's samples, both sides: the ratios the alarm judged, not only the
    // summary line `--quiet` prints
    let samples = || {
        let h = history_lines(d);
        let last = h.last().cloned().unwrap_or_default();
        format!("{stdout}\ncandidate samples: {}\nbaseline samples: {}", last["speed"], last["baseline_speed"])
    };
    assert_eq!(out.status.code(), Some(3), "{}{}", samples(), String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("speed: paired with unknown (binary"), "{stdout}");
    let flagged: Vec<&str> = stdout.lines().filter(|l| l.contains("REGRESSION")).collect();
    assert_eq!(flagged.len(), 1, "{}", samples());
    assert!(
        flagged[0].contains("REGRESSION speed x") && flagged[0].contains("/le ") && flagged[0].ends_with(")") && flagged[0].contains(": fit in"),
        "{stdout}"
    );
    let h = history_lines(d);
    let last = h.last().unwrap();
    assert_eq!(last["accepted"], false);
    let r = &last["regressions"][0];
    let ratio = r["ratio"].as_f64().unwrap();
    assert!(ratio > 1.5 && ratio < 2.6, "{r}");
    assert!(r["interval"][0].as_f64().unwrap() > 1.1, "{r}");
    // both sides' samples are kept, seven pairs per case
    assert!(last["baseline_speed"].as_object().unwrap().values().all(|s| s.as_array().unwrap().len() == 7), "{last}");
    assert!(last["speed"].as_object().unwrap().values().all(|s| s.as_array().unwrap().len() == 7), "{last}");
}

/// The same code on a machine with every core busy (two spinning threads beside the run): the
/// paired ratios stay near 1 and nothing is flagged. Timing-dependent by nature, so not in the
/// default suite: `just nightly-load-test` runs it.
#[test]
#[ignore = "timing-dependent: `just nightly-load-test` runs it"]
fn paired_speed_is_quiet_under_a_competing_load() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base = paired_setup(d, 5);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spinners: Vec<_> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            })
        })
        .collect();
    let out = nightly_paired(d, &base, None);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    spinners.into_iter().for_each(|t| t.join().unwrap());
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("0 regressions") && stdout.contains("speed: paired with"), "{stdout}");
}
