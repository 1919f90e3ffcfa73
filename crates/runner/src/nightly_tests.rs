//! Tests of [`crate::nightly`]: the comparison with the history, the history file, the
//! fingerprint and the suite file.

use super::*;

fn entry(commit: &str, quality: &[(&str, f64)], speed: &[(&str, &[f64])]) -> Entry {
    Entry {
        schema: HISTORY_SCHEMA,
        suite: "s".into(),
        commit: commit.into(),
        commit_date: String::new(),
        subject: String::new(),
        finished_at: 0,
        machine: Fingerprint { cpu: "c".into(), blas: "b".into(), kernel: "k".into(), threads: "t".into() },
        quality: quality
            .iter()
            .map(|(id, v)| {
                (id.to_string(), QualityCell { method_version: 1, status: "ok".into(), metrics: [("acc".to_string(), *v)].into(), tolerance: 0.0, error: None })
            })
            .collect(),
        speed: speed.iter().map(|(id, s)| (id.to_string(), s.to_vec())).collect(),
        baseline: String::new(),
        baseline_speed: BTreeMap::new(),
        speed_verdict: String::new(),
        notes: vec![],
        problems: vec![],
        regressions: vec![],
        accepted: true,
        forced_accept: false,
        backfill: false,
        wall_seconds: 0.0,
    }
}

#[test]
fn median_and_spread() {
    assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
    assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    assert!(median(&[]).is_nan());
    // MAD of 1..5 is 1
    assert!((robust_spread(&[1.0, 2.0, 3.0, 4.0, 5.0]) - 1.4826).abs() < 1e-12);
    assert_eq!(robust_spread(&[7.0]), 0.0);
}

/// Quality: any change of a deterministic cell's metric is named with the commit range; the
/// same value, a new cell, or a bumped method version are not regressions.
#[test]
fn quality_changes_are_regressions() {
    let h = vec![entry("aaa", &[("c1", 0.9), ("c2", 0.5)], &[])];
    assert!(compare(&h, &entry("bbb", &[("c1", 0.9), ("c2", 0.5), ("c3", 0.1)], &[]), &Alarm::default()).is_empty());
    let r = compare(&h, &entry("bbb", &[("c1", 0.9), ("c2", 0.5000000001)], &[]), &Alarm::default());
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].kind.as_str(), r[0].id.as_str(), r[0].since.as_str(), r[0].old, r[0].new), ("quality", "c2", "aaa", Some(0.5), Some(0.5000000001)));
    // within a tolerance
    let mut tol = entry("bbb", &[("c2", 0.5000000001)], &[]);
    tol.quality.get_mut("c2").unwrap().tolerance = 1e-6;
    assert!(compare(&h, &tol, &Alarm::default()).is_empty());
    // a new method version starts a new series
    let mut bumped = entry("bbb", &[("c2", 0.7)], &[]);
    bumped.quality.get_mut("c2").unwrap().method_version = 2;
    assert!(compare(&h, &bumped, &Alarm::default()).is_empty());
    // a failure of a cell that was ok
    let mut failed = entry("bbb", &[("c1", 0.9)], &[]);
    let c = failed.quality.get_mut("c1").unwrap();
    c.status = "failed".into();
    c.error = Some("boom".into());
    let r = compare(&h, &failed, &Alarm::default());
    assert_eq!((r[0].kind.as_str(), r[0].detail.contains("boom")), ("failure", true));
    // only accepted runs are baselines
    let mut rejected = entry("zzz", &[("c1", 0.1)], &[]);
    rejected.accepted = false;
    let h2 = vec![h[0].clone(), rejected];
    let r = compare(&h2, &entry("ccc", &[("c1", 0.9)], &[]), &Alarm::default());
    assert!(r.is_empty(), "{r:?}");
}

/// Speed is judged on the pairs the entry holds: a case 2x slower than its baseline is a
/// regression since the baseline commit, the 3x one ranked first; cases without baseline
/// samples (not paired) are not judged, however slow against stored times.
#[test]
fn speed_is_judged_on_pairs_largest_first() {
    let mut new = entry("new", &[], &[("a: fit", &[1.0, 1.1, 0.9]), ("b: fit", &[2.0, 2.2, 1.8]), ("c: fit", &[3.0, 3.3, 2.7]), ("d: fit", &[9.0, 9.0, 9.0])]);
    new.baseline = "base".into();
    new.baseline_speed =
        [("a: fit", [1.0, 1.1, 0.9]), ("b: fit", [1.0, 1.1, 0.9]), ("c: fit", [1.0, 1.1, 0.9])].iter().map(|(k, v)| (k.to_string(), v.to_vec())).collect();
    let old = vec![entry("base", &[], &[("d: fit", &[1.0, 1.0, 1.0])])];
    let r = compare(&old, &new, &Alarm::default());
    assert_eq!(r.iter().map(|r| (r.id.as_str(), r.since.as_str())).collect::<Vec<_>>(), [("c: fit", "base"), ("b: fit", "base")]);
    assert!((r[0].ratio.unwrap() - 3.0).abs() < 1e-9 && (r[1].ratio.unwrap() - 2.0).abs() < 1e-9);
    assert!(r[1].interval.unwrap().0 > 1.1);
}

/// The same code on a 1.4x slower machine: against the stored times every case moved, which
/// is one note, not regressions; the paired ratios (about 1) show nothing.
#[test]
fn a_slower_machine_is_one_note() {
    let cases = ["a: fit", "b: fit", "c: fit", "d: evaluation"];
    let old = entry("base", &[], &cases.map(|c| (c, &[1.0, 1.0, 1.0][..])));
    let mut new = entry("new", &[], &cases.map(|c| (c, &[1.4, 1.41, 1.39][..])));
    new.baseline = "base".into();
    new.baseline_speed = cases.iter().map(|c| (c.to_string(), vec![1.39, 1.4, 1.41])).collect();
    assert!(compare(std::slice::from_ref(&old), &new, &Alarm::default()).is_empty());
    let notes = shift_notes(Some(&old), &new, &Alarm::default());
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].starts_with("the machine changed? 4 speed cases x1.40"), "{notes:?}");
    // paired ratios all 2x together: the shared-cause note
    new.speed = cases.iter().map(|c| (c.to_string(), vec![2.8, 2.8, 2.8])).collect();
    let notes = shift_notes(None, &new, &Alarm::default());
    assert!(notes.len() == 1 && notes[0].contains("slower together (x2.00)"), "{notes:?}");
}

/// The baseline is the last accepted run of the suite, an --accept'ed one included.
#[test]
fn the_last_accepted_run_is_the_baseline() {
    let mut h = vec![entry("a", &[], &[]), entry("b", &[], &[]), entry("c", &[], &[])];
    h[1].forced_accept = true;
    h[2].accepted = false;
    assert_eq!(last_accepted(&h, "s").unwrap().commit, "b");
    assert!(last_accepted(&h, "other").is_none());
}

#[test]
fn history_round_trips_and_names_a_broken_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("h").join("m.jsonl");
    assert!(read_history(&p).unwrap().is_empty());
    append_history(&p, &entry("a", &[("c", 0.25)], &[("fit", &[0.1, 0.2])])).unwrap();
    append_history(&p, &entry("b", &[("c", 0.5)], &[])).unwrap();
    let h = read_history(&p).unwrap();
    assert_eq!(h.len(), 2);
    assert_eq!(h[0].quality["c"].metrics["acc"], 0.25);
    assert_eq!(h[0].speed["fit"], vec![0.1, 0.2]);
    std::fs::write(&p, format!("{}\n{{broken\n", std::fs::read_to_string(&p).unwrap().lines().next().unwrap())).unwrap();
    let e = read_history(&p).unwrap_err().to_string();
    assert!(e.contains("line 2"), "{e}");
}

#[test]
fn series_names_are_readable_and_distinct() {
    let a = Fingerprint { cpu: "AMD EPYC, 2 logical CPUs".into(), blas: "OpenBLAS 0.3.21".into(), kernel: "SkylakeX".into(), threads: "t".into() };
    let s = a.series();
    assert!(s.starts_with("amd-epyc-2-logical-cpus-skylakex-"), "{s}");
    let b = Fingerprint { kernel: "Haswell".into(), ..a.clone() };
    assert_ne!(a.series(), b.series());
    let c = Fingerprint { threads: "other".into(), ..a.clone() };
    assert_ne!(a.series(), c.series());
}

#[test]
fn suites_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.toml");
    std::fs::write(&p, "id = \"s\"\n").unwrap();
    assert!(Suite::load(&p).unwrap_err().to_string().contains("names no"));
    std::fs::write(&p, "id = \"s\"\n[[speed]]\nspec = \"nope.toml\"\nsamples = 0\n").unwrap();
    assert!(Suite::load(&p).unwrap_err().to_string().contains("samples"));
    std::fs::write(&p, "id = \"s\"\n[[speed]]\nspec = \"nope.toml\"\n").unwrap();
    assert!(Suite::load(&p).is_err());
    std::fs::write(&p, "id = \"s\"\nbogus = 1\n").unwrap();
    assert!(Suite::load(&p).unwrap_err().to_string().contains("bogus"));
}
