//! Trusting the records (docs/reliability.md, "Records that are not what they claim"): a record
//! whose content no longer matches its checksum is refused by `run` (recomputed, saying so),
//! by the tables (not computed, with the reason) and by the report; `structdr verify` recomputes
//! stored cells and finds a record edited after the fact; records written before checksums are
//! sealed once; a store is written by one spec file per id.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_structdr"));
    c.current_dir(dir).env("STRUCTDR_NO_REEXEC", "1").env("STRUCTDR_OFFLINE", "1").env("STRUCTDR_MIRROR", "");
    c
}

fn text(o: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn ok(o: Output) -> String {
    let t = text(&o);
    assert!(o.status.success(), "exit {:?}:\n{t}", o.status.code());
    assert!(!t.contains("panicked"), "{t}");
    t
}

/// One method with one cell per data set (so each record is its pair's shown cell), and a second
/// method with two.
fn spec(id: &str, extra: &str) -> String {
    format!(
        "id = \"{id}\"\ntitle = \"trust\"\nseed = 3\n{extra}[evaluation]\nprotocols = [\"loocv\"]\n\
         [[dataset]]\nname = \"two_moons\"\nparams = {{ n = 80 }}\n\
         [[dataset]]\nname = \"three_clusters\"\nparams = {{ n = 60 }}\n\
         [[method]]\nname = \"pca\"\nlabel = \"PCA\"\ngrid = {{ dim = 2 }}\n\
         [[method]]\nname = \"le\"\nlabel = \"LE\"\ngrid = {{ dim = 2, k = [5, 8] }}\n"
    )
}

/// The record files of the store `dir/r/<out>/records`.
fn records(dir: &Path, out: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("r").join(out).join("records"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

/// The record of PCA on two_moons (its pair's only cell) and its accuracy as written.
fn pca_moons(dir: &Path) -> (PathBuf, String) {
    for p in records(dir, "t") {
        let t = std::fs::read_to_string(&p).unwrap();
        if t.contains("\"method\": \"pca\"") && t.contains("\"dataset\": \"two_moons\"") {
            let line = t.lines().find(|l| l.contains("\"loocv_1nn_accuracy\"")).unwrap();
            let value = line.split(':').nth(1).unwrap().trim().trim_end_matches(',').to_string();
            return (p, value);
        }
    }
    panic!("no PCA / two_moons record");
}

/// The record's file with its accuracy replaced by `to`, the checksum left as it was.
fn edit_metric(path: &Path, from: &str, to: &str) {
    let t = std::fs::read_to_string(path).unwrap();
    let edited = t.replacen(&format!("\"loocv_1nn_accuracy\": {from}"), &format!("\"loocv_1nn_accuracy\": {to}"), 1);
    assert_ne!(t, edited);
    std::fs::write(path, edited).unwrap();
}

#[test]
fn a_tampered_record_is_refused_by_run_tables_and_report() {
    let root = tempfile::tempdir().unwrap();
    let d = root.path();
    std::fs::write(d.join("s.toml"), spec("t", "")).unwrap();
    ok(bin(d).args(["run", "s.toml", "--results", "r", "-q"]).output().unwrap());
    // every new record carries a checksum that verifies
    let check = ok(bin(d).args(["store", "check", "s.toml", "--results", "r"]).output().unwrap());
    assert!(check.contains("6 records: 6 verified, 0 without a checksum (unverified), 0 refused"), "{check}");
    let (path, value) = pca_moons(d);
    let table = std::fs::read_to_string(d.join("r/t/table.md")).unwrap();
    let shown = format!("{:.4}", value.parse::<f64>().unwrap());
    assert!(table.contains(&shown), "{table}");

    // metrics edited, checksum intact: refused
    edit_metric(&path, &value, "0.123456789");
    let check = bin(d).args(["store", "check", "s.toml", "--results", "r"]).output().unwrap();
    assert_eq!(check.status.code(), Some(3), "{}", text(&check));
    assert!(text(&check).contains("1 refused") && text(&check).contains("does not match its content"), "{}", text(&check));

    // the report, from the tables written before the edit: the row's value is withheld
    ok(bin(d).args(["report", "s.toml", "--results", "r", "--out", "r/report"]).output().unwrap());
    let html = std::fs::read_to_string(d.join("r/report/index.html")).unwrap();
    assert!(html.contains("refused by their checksum"), "{html}");
    let pca_row = html.split("<tr><td>PCA</td>").nth(1).and_then(|r| r.split("</tr>").next()).expect("a PCA row");
    // the first column is two_moons: its value withheld, the reason given
    assert!(pca_row.starts_with("<td class=bad>not computed: its record is refused"), "{pca_row}");
    assert!(!html.contains("0.1235"), "the report shows a refused record's value");

    // tables without computing: the cell is not computed, the reason is given, the number is not shown
    let out = ok(bin(d).args(["run", "s.toml", "--results", "r", "--max-cells", "0"]).output().unwrap());
    assert!(out.contains("is refused") && out.contains("shown as not computed"), "{out}");
    let table = std::fs::read_to_string(d.join("r/t/table.md")).unwrap();
    assert!(!table.contains("0.1235"), "{table}");
    assert!(table.contains("refused by their checksum") && table.contains("two_moons / PCA"), "{table}");
    assert!(table.contains("not computed: 1 record(s) refused by their checksum"), "{table}");
    let csv = std::fs::read_to_string(d.join("r/t/table.csv")).unwrap();
    assert!(csv.lines().any(|l| l.starts_with("PCA,two_moons,") && l.contains(",missing,")), "{csv}");
    // the report from these tables: no value either
    ok(bin(d).args(["report", "s.toml", "--results", "r", "--out", "r/report"]).output().unwrap());
    let html = std::fs::read_to_string(d.join("r/report/index.html")).unwrap();
    assert!(!html.contains("0.1235") && html.contains("refused by their checksum"), "{html}");

    // run recomputes it, saying so; the record is the original again, and verifies
    let out = ok(bin(d).args(["run", "s.toml", "--results", "r"]).output().unwrap());
    assert!(out.contains("is refused") && out.contains("recomputing it") && out.contains("1 computed"), "{out}");
    let (_, again) = pca_moons(d);
    assert_eq!(again, value);
    let check = ok(bin(d).args(["store", "check", "s.toml", "--results", "r"]).output().unwrap());
    assert!(check.contains("6 verified") && check.contains("0 refused"), "{check}");
    let table = std::fs::read_to_string(d.join("r/t/table.md")).unwrap();
    assert!(table.contains(&shown) && !table.contains("refused"), "{table}");
}

#[test]
fn verify_reports_identical_cells_and_a_record_edited_after_the_fact() {
    let root = tempfile::tempdir().unwrap();
    let d = root.path();
    std::fs::write(d.join("s.toml"), spec("t", "")).unwrap();
    ok(bin(d).args(["run", "s.toml", "--results", "r", "-q", "-j", "2"]).output().unwrap());
    let out = ok(bin(d).args(["verify", "s.toml", "--results", "r", "--all", "-q", "-j", "2"]).output().unwrap());
    assert!(out.contains("6 of 6 stored cells"), "{out}");
    assert_eq!(out.lines().filter(|l| l.starts_with("identical")).count(), 6, "{out}");
    assert!(out.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["all", "6", "0", "0", "0"]), "{out}");
    // a sample, seeded: the same cells for the same seed, spread over both methods
    let sample = ok(bin(d).args(["verify", "s.toml", "--results", "r", "--sample", "2", "--seed", "7", "-q"]).output().unwrap());
    assert!(sample.contains("2 of 6 stored cells"), "{sample}");
    assert!(
        sample.lines().any(|l| l.starts_with("identical") && l.contains("/ PCA")) && sample.lines().any(|l| l.starts_with("identical") && l.contains("/ LE")),
        "{sample}"
    );
    let again = ok(bin(d).args(["verify", "s.toml", "--results", "r", "--sample", "2", "--seed", "7", "-q"]).output().unwrap());
    let cells = |t: &str| t.lines().filter(|l| l.starts_with("identical")).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(cells(&sample), cells(&again));

    // edited after the fact and sealed again (its checksum matches): run cannot tell, verify can
    let (path, value) = pca_moons(d);
    let t = std::fs::read_to_string(&path).unwrap();
    let mut rec = structdr::store::Record::from_json(&t).unwrap();
    rec.metrics.insert("loocv_1nn_accuracy".into(), 0.5);
    std::fs::write(&path, serde_json::to_string_pretty(&rec.sealed()).unwrap()).unwrap();
    let out = bin(d).args(["verify", "s.toml", "--results", "r", "--all", "-q", "--method", "PCA"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let t = text(&out);
    assert!(t.lines().any(|l| l.starts_with("differs") && l.contains("two_moons / PCA")), "{t}");
    assert!(t.contains(&format!("loocv_1nn_accuracy 0.5 (stored) vs {value} (recomputed)")), "{t}");
    assert!(t.contains("did not reproduce"), "{t}");
    // edited without sealing: refused by its checksum, and verify still shows what it claims
    edit_metric(&path, "0.5", "0.25");
    let t = text(&bin(d).args(["verify", "s.toml", "--results", "r", "--all", "-q", "--method", "pca"]).output().unwrap());
    assert!(t.lines().any(|l| l.starts_with("differs") && l.contains("the stored record is refused")), "{t}");
    // a stated tolerance: within it counts as agreeing
    let t = text(&bin(d).args(["verify", "s.toml", "--results", "r", "--all", "-q", "--method", "pca", "--tolerance", "pca=1"]).output().unwrap());
    assert!(t.lines().any(|l| l.starts_with("within tolerance")), "{t}");
    let bad = bin(d).args(["verify", "s.toml", "--results", "r", "--tolerance", "umap=1"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(text(&bad).contains("'umap' is not a method"), "{}", text(&bad));
}

#[test]
fn records_without_a_checksum_are_unverified_until_sealed_and_sealing_adds_only_the_checksum() {
    let root = tempfile::tempdir().unwrap();
    let d = root.path();
    std::fs::write(d.join("s.toml"), spec("t", "")).unwrap();
    ok(bin(d).args(["run", "s.toml", "--results", "r", "-q"]).output().unwrap());
    // records as written before checksums: the field removed
    let files = records(d, "t");
    let sealed: Vec<String> = files.iter().map(|p| std::fs::read_to_string(p).unwrap()).collect();
    for (p, t) in files.iter().zip(&sealed) {
        let cut = t.find(",\n  \"checksum\"").expect("a checksum field");
        std::fs::write(p, format!("{}\n}}", &t[..cut])).unwrap();
    }
    let check = ok(bin(d).args(["store", "check", "s.toml", "--results", "r"]).output().unwrap());
    assert!(check.contains("0 verified, 6 without a checksum (unverified), 0 refused"), "{check}");
    let out = ok(bin(d).args(["run", "s.toml", "--results", "r", "--max-cells", "0"]).output().unwrap());
    assert!(out.contains("0 computed, 6 cached") && out.contains("records used without a checksum") && out.contains(": 6"), "{out}");
    assert!(std::fs::read_to_string(d.join("r/t/table.md")).unwrap().contains("6 record(s) carry no checksum"));
    let dry = ok(bin(d).args(["store", "seal", "s.toml", "--results", "r", "--dry-run"]).output().unwrap());
    assert!(dry.contains("6 would be sealed"), "{dry}");
    let seal = ok(bin(d).args(["store", "seal", "s.toml", "--results", "r"]).output().unwrap());
    assert!(seal.contains("6 sealed, 0 already sealed"), "{seal}");
    // byte for byte what was written with the checksum: nothing but the field came back
    for (p, t) in files.iter().zip(&sealed) {
        assert_eq!(&std::fs::read_to_string(p).unwrap(), t, "{}", p.display());
    }
    let again = ok(bin(d).args(["store", "seal", "s.toml", "--results", "r"]).output().unwrap());
    assert!(again.contains("0 sealed, 6 already sealed"), "{again}");
    // a record edited and stripped of its checksum cannot be sealed into a verified one unseen:
    // seal leaves a refused record alone
    let t = std::fs::read_to_string(&files[0]).unwrap();
    let value_line = t.lines().find(|l| l.contains("\"loocv_1nn_accuracy\"")).unwrap().to_string();
    std::fs::write(&files[0], t.replace(&value_line, "    \"loocv_1nn_accuracy\": 0.01")).unwrap();
    let seal = ok(bin(d).args(["store", "seal", "s.toml", "--results", "r"]).output().unwrap());
    assert!(seal.contains("1 refused (checksum mismatch, left alone)") && seal.contains("left alone"), "{seal}");
}

#[test]
fn one_spec_file_per_id_and_stores_shared_on_purpose() {
    let root = tempfile::tempdir().unwrap();
    let d = root.path();
    std::fs::create_dir_all(d.join("experiments/copy")).unwrap();
    std::fs::write(d.join("experiments/a.toml"), spec("t", "")).unwrap();
    ok(bin(d).args(["run", "experiments/a.toml", "--results", "r", "-q"]).output().unwrap());
    let ledger = std::fs::read_to_string(d.join("r/t/specs.toml")).unwrap();
    assert!(ledger.contains("[t]\nspec = \"experiments/a.toml\"\ntables = \"t/table\""), "{ledger}");
    // the same file by another path form: the same spec
    ok(bin(d).args(["run", "./experiments/../experiments/a.toml", "--results", "./r", "-q"]).output().unwrap());
    let abs = d.join("experiments/a.toml");
    ok(bin(d).args(["run"]).arg(&abs).args(["--results", "r", "-q", "--max-cells", "0"]).output().unwrap());
    // a copy that kept the id: refused, both paths named, nothing written
    std::fs::write(d.join("experiments/copy/a.toml"), spec("t", "")).unwrap();
    let before = records(d, "t").len();
    let out = bin(d).args(["run", "experiments/copy/a.toml", "--results", "r"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("spec id 't'") && t.contains("experiments/a.toml") && t.contains("experiments/copy/a.toml"), "{t}");
    assert_eq!(records(d, "t").len(), before);
    for cmd in [
        vec!["prune", "experiments/copy/a.toml", "--results", "r"],
        vec!["verify", "experiments/copy/a.toml", "--results", "r"],
        vec!["slurm", "experiments/copy/a.toml", "--tasks", "2", "--results", "r"],
    ] {
        let out = bin(d).args(&cmd).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{cmd:?}: {}", text(&out));
        assert!(text(&out).contains("experiments/copy/a.toml"), "{cmd:?}: {}", text(&out));
    }
    // another id sharing the store on purpose (`output`), with its own tables: welcome, and its
    // cells are the first spec's (same seed, same grid)
    std::fs::write(d.join("experiments/b.toml"), spec("b", "output = \"t\"\ntable_path = \"b_table\"\n")).unwrap();
    let out = ok(bin(d).args(["run", "experiments/b.toml", "--results", "r"]).output().unwrap());
    assert!(out.contains("0 computed, 6 cached"), "{out}");
    let ledger = std::fs::read_to_string(d.join("r/t/specs.toml")).unwrap();
    assert!(ledger.contains("[b]\nspec = \"experiments/b.toml\"\ntables = \"b_table\"") && ledger.contains("[t]"), "{ledger}");
    // a third id sharing the store whose tables would overwrite the first's: refused
    std::fs::write(d.join("experiments/c.toml"), spec("c", "output = \"t\"\n")).unwrap();
    let out = bin(d).args(["run", "experiments/c.toml", "--results", "r"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("t/table") && text(&out).contains("spec 't'"), "{}", text(&out));
}
