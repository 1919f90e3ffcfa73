//! Tests of the `structdr` binary against independent references (numpy / scikit-learn outputs
//! stored in tests/fixtures, made by tests/fixtures/make_fixtures.py).

// Links OpenBLAS (ndarray's `dot` calls cblas); see structdr_linalg's `extern crate openblas_src`.
extern crate structdr_linalg;

use ndarray::{Array1, Array2};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_structdr"));
    c.env("STRUCTDR_NO_REEXEC", "1");
    c
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "command failed: {}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn mirror() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    [root.join("../shared/datasets"), root.join("shared/datasets")].into_iter().find(|p| p.join("MANIFEST.toml").exists())
}

#[test]
fn embed_pca_matches_scikit_learn_up_to_column_signs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("y.npy");
    ok(bin().args(["embed", "--method", "pca", "--param", "dim=3", "--input"]).arg(fixtures().join("pca_input.npy")).arg("--out").arg(&out).output().unwrap());
    let ours: Array2<f64> = ndarray_npy::read_npy(&out).unwrap();
    let theirs: Array2<f64> = ndarray_npy::read_npy(fixtures().join("pca_sklearn.npy")).unwrap();
    assert_eq!(ours.dim(), (60, 3));
    for j in 0..3 {
        let sign = if ours.column(j).dot(&theirs.column(j)) < 0.0 { -1.0 } else { 1.0 };
        let err = (&ours.column(j) - &(&theirs.column(j) * sign)).mapv(f64::abs).fold(0.0f64, |a, &b| a.max(b));
        assert!(err < 1e-8, "column {j}: max |ours - sklearn| = {err:e}");
    }
}

#[test]
fn loocv_of_identity_embedding_equals_brute_force_reference() {
    let Some(mirror) = mirror() else {
        eprintln!("skipped: benchmark mirror (shared/datasets) not found");
        return;
    };
    let reference: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixtures().join("loocv_reference.json")).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for name in ["iris", "vehicle", "pendigits.t", "letter.t"] {
        let set = dir.path().join(name);
        ok(bin()
            .env("STRUCTDR_MIRROR", &mirror)
            .env("STRUCTDR_DATA", dir.path().join("cache"))
            .args(["datasets", "export", name, "--out"])
            .arg(&set)
            .output()
            .unwrap());
        let y = set.join("Y.npy");
        ok(bin().args(["embed", "--method", "identity", "--input"]).arg(set.join("X.npy")).arg("--out").arg(&y).output().unwrap());
        let json = ok(bin().args(["eval", "loocv", "--input"]).arg(&y).arg("--labels").arg(set.join("y.npy")).output().unwrap());
        let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
        let ours = v["loocv_1nn_accuracy"].as_f64().unwrap();
        let theirs = reference[name]["loocv_1nn_accuracy"].as_f64().unwrap();
        assert!((ours - theirs).abs() < 0.5e-4, "{name}: ours {ours} vs brute force {theirs}");
    }
}

#[test]
fn eval_kmeans_prints_every_key() {
    let dir = tempfile::tempdir().unwrap();
    let x = Array2::from_shape_fn((40, 2), |(i, j)| if i < 20 { j as f64 * 0.01 + i as f64 * 0.001 } else { 10.0 + j as f64 * 0.01 + i as f64 * 0.001 });
    let y: Array1<i64> = (0..40).map(|i| (i >= 20) as i64).collect();
    ndarray_npy::write_npy(dir.path().join("x.npy"), &x).unwrap();
    ndarray_npy::write_npy(dir.path().join("y.npy"), &y).unwrap();
    let json = ok(bin()
        .args(["eval", "kmeans", "--restarts", "5", "--seed", "3", "--input"])
        .arg(dir.path().join("x.npy"))
        .arg("--labels")
        .arg(dir.path().join("y.npy"))
        .output()
        .unwrap());
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    for key in ["acc_mean", "acc_std", "nmi_mean", "nmi_std", "acc_best_sse", "nmi_best_sse"] {
        assert!(v[key].is_number(), "{key} missing in {json}");
    }
    assert_eq!(v["acc_best_sse"].as_f64(), Some(1.0));
    assert_eq!(v["nmi_best_sse"].as_f64(), Some(1.0));
}

#[test]
fn bad_command_lines_fail_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixtures().join("pca_input.npy");
    let out = bin().args(["embed", "--method", "nope", "--input"]).arg(&input).arg("--out").arg(dir.path().join("y.npy")).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown method 'nope'"));
    let out = bin().args(["embed", "--method", "le", "--param", "k=0", "--input"]).arg(&input).arg("--out").arg(dir.path().join("y.npy")).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("'k' must be"));
    let out = bin().args(["embed", "--method", "le", "--param", "k=100", "--input"]).arg(&input).arg("--out").arg(dir.path().join("y.npy")).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("too few points"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = bin().args(["eval", "loocv", "--input", "/nonexistent.npy", "--labels", "/nonexistent.npy"]).output().unwrap();
    assert!(!out.status.success());
}

#[test]
fn docs_methods_md_is_generated_from_the_registry() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/methods.md");
    let generated = ok(bin().args(["methods", "--markdown"]).output().unwrap());
    let committed = std::fs::read_to_string(&docs).unwrap_or_default();
    assert!(committed == generated, "docs/methods.md is stale: run `just docs`");
}

#[test]
fn select_fsl_writes_one_weight_per_feature() {
    // two features with two tight clusters (variance ~0.02) and 8 U[0,1]-like noise features
    let n = 30;
    let x = Array2::from_shape_fn((n, 10), |(i, j)| {
        let h = ((i * 7919 + j * 104729) % 1000) as f64 / 1000.0;
        if j < 2 {
            (if i < n / 2 { 0.35 } else { 0.65 }) + 0.01 * h
        } else {
            h
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let (input, out, emb) = (dir.path().join("x.npy"), dir.path().join("theta.npy"), dir.path().join("e.npy"));
    ndarray_npy::write_npy(&input, &x).unwrap();
    ok(bin()
        .args(["select", "--method", "fsl", "--param", "lambda=2", "--param", "b=1", "--param", "n_selected=2", "--input"])
        .arg(&input)
        .arg("--out")
        .arg(&out)
        .arg("--embedding-out")
        .arg(&emb)
        .output()
        .unwrap());
    let theta: Array1<f64> = ndarray_npy::read_npy(&out).unwrap();
    assert_eq!(theta.len(), 10);
    assert!((theta.sum() - 1.0).abs() < 1e-12 && theta.iter().all(|&t| (0.0..=1.0).contains(&t)));
    assert!(theta[0] + theta[1] > 0.999, "{theta:?}");
    let e: Array2<f64> = ndarray_npy::read_npy(&emb).unwrap();
    assert_eq!(e.dim(), (n, 2));
    // a method without feature weights is refused
    let out = bin().args(["select", "--method", "pca", "--input"]).arg(&input).arg("--out").arg(dir.path().join("t.npy")).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("not feature weights"));
}

/// With stderr piped (as in a log), `run` prints one line per finished cell with its parameters
/// and metric; a second run finds every cell cached and prints none.
#[test]
fn run_logs_one_line_per_finished_cell_when_stderr_is_not_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.toml");
    std::fs::write(
        &spec,
        "id = \"progress\"\ntitle = \"progress lines\"\nseed = 3\noutput = \"out\"\n\
         [evaluation]\nprotocols = [\"loocv\"]\n\
         [[dataset]]\nname = \"two_moons\"\nparams = { n = 60 }\n\
         [[method]]\nname = \"pca\"\ngrid = { dim = [1, 2] }\n",
    )
    .unwrap();
    let first = bin().args(["run", spec.to_str().unwrap(), "--results", dir.path().to_str().unwrap()]).output().unwrap();
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let err = String::from_utf8_lossy(&first.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(lines.len(), 2, "one line per cell expected:\n{err}");
    for (i, l) in lines.iter().enumerate() {
        assert!(l.starts_with(&format!("[{}/2] two_moons / pca dim=", i + 1)), "{l}");
        assert!(l.contains("loocv_1nn_accuracy 0.") || l.contains("loocv_1nn_accuracy 1.0000"), "{l}");
    }
    // one record per cell in the spec's record store (the directory that is committed)
    let records = std::fs::read_dir(dir.path().join("out").join("records"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "json"))
        .count();
    assert_eq!(records, 2);
    let again = bin().args(["run", spec.to_str().unwrap(), "--results", dir.path().to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success() && err.contains("2 cached, 0 to run") && !err.lines().any(|l| l.starts_with('[')), "{err}");
}

/// `--force-before T`: specs sharing a store, forced one after another in one sitting that began at
/// `T`, compute each shared cell once. Records older than `T` are recomputed, those written since
/// are used; `--force` recomputes them all again; the two flags exclude each other.
#[test]
fn force_before_recomputes_each_shared_cell_once_per_sitting() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().to_str().unwrap();
    let body = "seed = 3\n[evaluation]\nprotocols = [\"loocv\"]\n\
                [[dataset]]\nname = \"two_moons\"\nparams = { n = 60 }\n\
                [[method]]\nname = \"pca\"\ngrid = { dim = [1, 2] }\n";
    let owner = dir.path().join("owner.toml");
    std::fs::write(&owner, format!("id = \"owner\"\ntitle = \"owner\"\noutput = \"shared\"\n{body}")).unwrap();
    // the second spec reads the owner's store: the same two PCA cells, and one LE cell of its own
    let reader = dir.path().join("reader.toml");
    std::fs::write(
        &reader,
        format!(
            "id = \"reader\"\ntitle = \"reader\"\noutput = \"shared\"\ntable_path = \"reader\"\n{body}[[method]]\nname = \"le\"\ngrid = {{ dim = 2, k = 5 }}\n"
        ),
    )
    .unwrap();
    let run = |spec: &Path, extra: &[&str]| {
        let out = bin().args(["run", spec.to_str().unwrap(), "--results", results, "--quiet"]).args(extra).output().unwrap();
        ok(out)
    };
    assert!(run(&owner, &[]).contains("2 computed, 0 cached"));
    // the sitting begins on the next second: every record so far is older
    let now = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let before = now();
    while now() == before {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let t = now().to_string();
    let owner_forced = run(&owner, &["--force-before", &t]);
    assert!(owner_forced.contains("cells: 2 total, 2 computed, 0 cached"), "{owner_forced}");
    let reader_forced = run(&reader, &["--force-before", &t]);
    assert!(reader_forced.contains("cells: 3 total, 1 computed, 2 cached"), "{reader_forced}");
    // a second pass of the same sitting computes nothing
    let again = run(&owner, &["--force-before", &t]);
    assert!(again.contains("cells: 2 total, 0 computed, 2 cached"), "{again}");
    assert!(run(&reader, &["--force"]).contains("cells: 3 total, 3 computed, 0 cached"));
    let both = bin().args(["run", owner.to_str().unwrap(), "--results", results, "--force", "--force-before", &t]).output().unwrap();
    assert_eq!(both.status.code(), Some(64), "{}", String::from_utf8_lossy(&both.stderr));
    assert!(String::from_utf8_lossy(&both.stderr).contains("cannot be used with"), "{}", String::from_utf8_lossy(&both.stderr));
}

/// `-j` must work whatever the spec: loading a spec can already run parallel code (the teapot
/// generator ray-traces its frames with rayon), and the worker pool has to be configured before
/// that (it used to fail with "The global thread pool has already been initialized").
#[test]
fn run_jobs_flag_works_when_the_spec_generates_data_in_parallel() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.toml");
    std::fs::write(
        &spec,
        "id = \"jobs\"\ntitle = \"jobs flag\"\nseed = 3\noutput = \"out\"\n\
         [evaluation]\nprotocols = [\"loocv\"]\n\
         [[dataset]]\nname = \"teapot_rotation\"\nparams = { n = 12 }\n\
         [[method]]\nname = \"pca\"\ngrid = { dim = [2] }\n",
    )
    .unwrap();
    let out = bin().args(["run", spec.to_str().unwrap(), "--results", dir.path().to_str().unwrap(), "-j", "1"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(summary.contains("1 computed, 0 cached, 0 failed"), "{summary}");
}

/// Failed cells are listed with their reasons at the end of every run; `--fail-on-error` turns any
/// failed cell into exit status 2 (after the tables are written), and a spec none of whose cells
/// succeeds exits 2 without the flag.
#[test]
fn failed_cells_are_listed_and_fail_on_error_sets_the_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, dims: &str| {
        let spec = dir.path().join(name);
        std::fs::write(
            &spec,
            format!(
                "id = \"failing\"\ntitle = \"failing cells\"\nseed = 3\noutput = \"{out}\"\n\
                 [evaluation]\nprotocols = [\"loocv\"]\n\
                 [[dataset]]\nname = \"two_moons\"\nparams = {{ n = 60 }}\n\
                 [[method]]\nname = \"pca\"\ngrid = {{ dim = {dims} }}\n",
                out = name.trim_end_matches(".toml")
            ),
        )
        .unwrap();
        spec
    };
    let some = write("some.toml", "[1, 5]");
    let root = dir.path().to_str().unwrap();
    let plain = bin().args(["run", some.to_str().unwrap(), "--results", root]).output().unwrap();
    let stdout = String::from_utf8_lossy(&plain.stdout);
    assert!(plain.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&plain.stderr));
    assert!(stdout.contains("failed cells (1):") && stdout.contains("two_moons / pca dim=5: "), "{stdout}");
    // the same store again with the flag: the stored failure counts, the tables are still written
    let strict = bin().args(["run", "--fail-on-error", some.to_str().unwrap(), "--results", root]).output().unwrap();
    assert_eq!(strict.status.code(), Some(2), "{}", String::from_utf8_lossy(&strict.stderr));
    assert!(String::from_utf8_lossy(&strict.stderr).contains("1 failed cell(s)"));
    assert!(String::from_utf8_lossy(&strict.stdout).contains("tables: "));
    let none = write("none.toml", "[5, 6]");
    let all_failed = bin().args(["run", none.to_str().unwrap(), "--results", root]).output().unwrap();
    assert_eq!(all_failed.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&all_failed.stderr).contains("no cell of"), "{}", String::from_utf8_lossy(&all_failed.stderr));
}

/// Text tables in and out: the output format follows the extension (and an unknown one is refused
/// before the fit), labels may be a one-column CSV, a BOM does not eat a row, a device or a
/// directory is not read as data, and a 0-column embedding is not scored.
#[test]
fn text_tables_labels_and_non_regular_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rows: Vec<String> = (0..30).map(|i| format!("{},{},{}", (i as f64 * 0.3).sin(), (i as f64 * 0.3).cos(), i as f64 * 0.1)).collect();
    std::fs::write(d.join("x.csv"), format!("\u{feff}{}\n", rows.join("\n"))).unwrap();
    let embed = |out: &str| {
        bin().args(["embed", "--method", "pca", "--param", "dim=2", "--input"]).arg(d.join("x.csv")).arg("--out").arg(d.join(out)).output().unwrap()
    };
    ok(embed("y.npy"));
    ok(embed("y.csv"));
    let npy: Array2<f64> = ndarray_npy::read_npy(d.join("y.npy")).unwrap();
    assert_eq!(npy.dim(), (30, 2), "the BOM line is a data row");
    let text = std::fs::read_to_string(d.join("y.csv")).unwrap();
    assert!(!text.starts_with("\u{93}NUMPY") && text.lines().count() == 30, "{text}");
    let back: Vec<f64> = text.lines().flat_map(|l| l.split(',').map(|v| v.parse::<f64>().unwrap()).collect::<Vec<_>>()).collect();
    assert_eq!(back, npy.iter().copied().collect::<Vec<_>>(), "the CSV holds the same bits");
    let refused = embed("y.bin");
    assert!(!refused.status.success() && String::from_utf8_lossy(&refused.stderr).contains("unsupported output format '.bin'"));
    assert!(!String::from_utf8_lossy(&refused.stderr).contains("fitted in"), "refused before the fit");
    // labels from a one-column CSV with a header
    std::fs::write(d.join("y_labels.csv"), format!("label\n{}\n", (0..30).map(|i| (i / 10).to_string()).collect::<Vec<_>>().join("\n"))).unwrap();
    let acc = ok(bin().args(["eval", "loocv", "--input"]).arg(d.join("y.npy")).arg("--labels").arg(d.join("y_labels.csv")).output().unwrap());
    assert!(acc.contains("loocv_1nn_accuracy"), "{acc}");
    std::fs::write(d.join("bad_labels.csv"), "1\n2.5\n").unwrap();
    let out = bin().args(["eval", "loocv", "--input"]).arg(d.join("y.npy")).arg("--labels").arg(d.join("bad_labels.csv")).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("not an integer"));
    // a typo in the first row is an error naming line and field, not a dropped header
    std::fs::write(d.join("typo.csv"), "1,2.O,3\n4,5,6\n").unwrap();
    let out =
        bin().args(["embed", "--method", "pca", "--param", "dim=1", "--input"]).arg(d.join("typo.csv")).arg("--out").arg(d.join("t.npy")).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("line 1"), "{}", String::from_utf8_lossy(&out.stderr));
    // non-regular inputs: a symlink to /dev/zero and a directory
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("/dev/zero", d.join("zero.npy")).unwrap();
        let out = bin().args(["embed", "--method", "pca", "--input"]).arg(d.join("zero.npy")).arg("--out").arg(d.join("z.npy")).output().unwrap();
        assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("not a regular file"), "{}", String::from_utf8_lossy(&out.stderr));
    }
    std::fs::create_dir(d.join("dir.csv")).unwrap();
    let out = bin().args(["eval", "loocv", "--input"]).arg(d.join("dir.csv")).arg("--labels").arg(d.join("y_labels.csv")).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("not a regular file"));
    // a 0-column embedding
    ndarray_npy::write_npy(d.join("empty.npy"), &Array2::<f64>::zeros((30, 0))).unwrap();
    let out = bin().args(["eval", "loocv", "--input"]).arg(d.join("empty.npy")).arg("--labels").arg(d.join("y_labels.csv")).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("0 columns"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_project_registry_adds_named_sets_and_generated_sets_export() {
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("mirror");
    std::fs::create_dir_all(mirror.join("mine")).unwrap();
    let mut text = String::new();
    for i in 0..40 {
        text.push_str(&format!("{} 1:{} 2:{}\n", i % 2 + 1, (i % 2) as f64 * 3.0 + (i as f64 * 0.7).sin(), (i as f64 * 0.3).cos()));
    }
    std::fs::write(mirror.join("mine/blobs.libsvm"), &text).unwrap();
    let sha = structdr_datasets::sha256_hex(text.as_bytes());
    let registry = dir.path().join("datasets.toml");
    std::fs::write(
        &registry,
        format!(
            "schema_version = 1\n\n[[dataset]]\nname = \"blobs\"\npaper_name = \"Blobs\"\ncitation = \"made for this test\"\nlicence = \"CC0\"\nformat = \"libsvm\"\nurls = []\nmirror_path = \"mine/blobs.libsvm\"\nsha256 = \"{sha}\"\nbytes = {}\nn_samples = 40\nn_features = 2\nn_classes = 2\n",
            text.len()
        ),
    )
    .unwrap();
    let spec = dir.path().join("spec.toml");
    let body = format!(
        "id = \"own\"\ntitle = \"own registry\"\nregistry = \"{}\"\n\n[evaluation]\nprotocols = [\"loocv\"]\n\n[[dataset]]\nname = \"blobs\"\n\n[[method]]\nname = \"pca\"\ngrid = {{ dim = 1 }}\n",
        registry.display()
    );
    std::fs::write(&spec, &body).unwrap();
    let run = |spec: &Path| {
        bin()
            .current_dir(dir.path())
            .env("STRUCTDR_MIRROR", &mirror)
            .env("STRUCTDR_DATA", dir.path().join("cache"))
            .args(["run", "--quiet"])
            .arg(spec)
            .output()
            .unwrap()
    };
    ok(run(&spec));
    let table = std::fs::read_to_string(dir.path().join("results/own/table.md")).unwrap();
    assert!(table.contains("blobs") && table.contains("1.0000"), "{table}");
    // a local name may not shadow a built-in one; a broken registry file is an error with the path
    std::fs::write(&registry, std::fs::read_to_string(&registry).unwrap().replace("\"blobs\"", "\"iris\"")).unwrap();
    let out = run(&spec);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("built-in data set"), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::write(&registry, "schema_version = 1\n[[dataset]]\nname = 3\n").unwrap();
    let out = run(&spec);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("datasets.toml"), "{}", String::from_utf8_lossy(&out.stderr));
    // generated sets export like registry ones, with their manifold coordinate
    let exp = dir.path().join("moons");
    ok(bin().args(["datasets", "export", "two_moons", "--param", "n=50", "--seed", "2", "--out"]).arg(&exp).output().unwrap());
    let x: Array2<f64> = ndarray_npy::read_npy(exp.join("X.npy")).unwrap();
    let y: Array1<i64> = ndarray_npy::read_npy(exp.join("y.npy")).unwrap();
    assert_eq!((x.dim(), y.len(), exp.join("t.npy").is_file()), ((50, 2), 50, true));
}

/// `eval neighbourhood` needs no labels and prints scikit-learn's trustworthiness (and our
/// continuity and k-NN preservation) for the fixture the eval crate is checked on.
#[test]
fn eval_neighbourhood_matches_the_sklearn_fixture() {
    let dir = tempfile::tempdir().unwrap();
    let fixture: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../eval/tests/fixtures/trustworthiness_sklearn.json")).unwrap(),
    )
    .unwrap();
    let case = &fixture["cases"][0];
    let matrix = |v: &serde_json::Value| {
        let rows: Vec<Vec<f64>> = v.as_array().unwrap().iter().map(|r| r.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()).collect();
        Array2::from_shape_fn((rows.len(), rows[0].len()), |(i, j)| rows[i][j])
    };
    ndarray_npy::write_npy(dir.path().join("x.npy"), &matrix(&case["x"])).unwrap();
    ndarray_npy::write_npy(dir.path().join("y.npy"), &matrix(&case["y"])).unwrap();
    let score = &case["scores"][2];
    let json = ok(bin()
        .args(["eval", "neighbourhood", "--k", &score["k"].to_string(), "--input"])
        .arg(dir.path().join("y.npy"))
        .arg("--data")
        .arg(dir.path().join("x.npy"))
        .output()
        .unwrap());
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    for key in ["trustworthiness", "continuity", "knn_preservation"] {
        let (ours, theirs) = (v[key].as_f64().unwrap(), score[key].as_f64().unwrap());
        assert!((ours - theirs).abs() < 1e-12, "{key}: ours {ours}, sklearn {theirs}");
    }
    // rows that do not match, and k too large, are errors with the reason
    ndarray_npy::write_npy(dir.path().join("short.npy"), &Array2::<f64>::zeros((10, 2))).unwrap();
    let out = bin().args(["eval", "neighbourhood", "--input"]).arg(dir.path().join("short.npy")).arg("--data").arg(dir.path().join("x.npy")).output().unwrap();
    assert!(!out.status.success());
    let out = bin()
        .args(["eval", "neighbourhood", "--k", "60", "--input"])
        .arg(dir.path().join("y.npy"))
        .arg("--data")
        .arg(dir.path().join("x.npy"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("k = 60"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A labelled CSV like scikit-learn's digits export: `n` rows of `d` integer features in 0..=16 and
/// a last column of class labels `i % 10`.
fn labelled_csv(path: &Path, n: usize, d: usize) {
    let rows: Vec<String> = (0..n)
        .map(|i| {
            let mut r: Vec<String> = (0..d).map(|j| ((i * 7 + j * 13 + (i % 10) * j) % 17).to_string()).collect();
            r.push((i % 10).to_string());
            r.join(",")
        })
        .collect();
    std::fs::write(path, rows.join("\n") + "\n").unwrap();
}

/// A class-like last column is never embedded silently: without a flag it is used as a feature with
/// a warning naming the column and the flags; `--label-column -1` (or its 1-based index) takes it
/// out, stores the labels beside the output, and they score the embedding as `eval` reads them;
/// `--labels FILE` is checked against the rows.
#[test]
fn label_columns_are_named_and_taken_out_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    labelled_csv(&d.join("digits.csv"), 120, 8);
    let embed = |extra: &[&str], out: &str| {
        bin()
            .args(["embed", "--method", "pca", "--param", "dim=2", "--input"])
            .arg(d.join("digits.csv"))
            .arg("--out")
            .arg(d.join(out))
            .args(extra)
            .output()
            .unwrap()
    };
    let plain = embed(&[], "plain.npy");
    let err = String::from_utf8_lossy(&plain.stderr);
    assert!(plain.status.success(), "{err}");
    assert!(err.contains("warning: the last column of") && err.contains("(column 9)") && err.contains("--label-column -1"), "{err}");
    assert!(err.contains("120 x 9"), "the label column was a feature: {err}");
    // --no-labels: the user says it is a feature, no warning
    let quiet = embed(&["--no-labels"], "quiet.npy");
    assert!(quiet.status.success() && !String::from_utf8_lossy(&quiet.stderr).contains("warning"));
    // --label-column -1 and 9 (1-based, as a spec's label_column) are the same column: 8 features
    // fitted, labels beside the output
    for (flag, out) in [("-1", "a.npy"), ("9", "b.npy")] {
        let taken = embed(&["--label-column", flag], out);
        let err = String::from_utf8_lossy(&taken.stderr);
        assert!(taken.status.success() && err.contains("120 x 8") && !err.contains("warning"), "{err}");
    }
    let a: Array2<f64> = ndarray_npy::read_npy(d.join("a.npy")).unwrap();
    let b: Array2<f64> = ndarray_npy::read_npy(d.join("b.npy")).unwrap();
    assert_eq!(a, b);
    let labels: Array1<i64> = ndarray_npy::read_npy(d.join("a.labels.npy")).unwrap();
    assert_eq!(labels.to_vec(), (0..120).map(|i| (i % 10) as i64).collect::<Vec<_>>());
    // the embedding of the 8 features equals embedding the same features given without the column
    let features: Vec<String> = std::fs::read_to_string(d.join("digits.csv")).unwrap().lines().map(|l| l.rsplit_once(',').unwrap().0.to_string()).collect();
    std::fs::write(d.join("features.csv"), features.join("\n") + "\n").unwrap();
    ok(bin().args(["embed", "--method", "pca", "--param", "dim=2", "--input"]).arg(d.join("features.csv")).arg("--out").arg(d.join("f.npy")).output().unwrap());
    let f: Array2<f64> = ndarray_npy::read_npy(d.join("f.npy")).unwrap();
    // (to rounding: BLAS sums in an order that depends on the matrix's memory layout)
    assert!(max_abs_diff(&a, &f) < 1e-12 * a.iter().fold(1.0f64, |m, v| m.max(v.abs())), "{a} vs {f}");
    // the stored labels are what `eval` takes
    let json = ok(bin().args(["eval", "loocv", "--input"]).arg(d.join("a.npy")).arg("--labels").arg(d.join("a.labels.npy")).output().unwrap());
    assert!(json.contains("loocv_1nn_accuracy"), "{json}");
    // a labels file of the wrong length, a column out of range: data errors (65)
    ndarray_npy::write_npy(d.join("short.npy"), &Array1::<i64>::zeros(7)).unwrap();
    let out = embed(&["--labels", d.join("short.npy").to_str().unwrap()], "c.npy");
    assert_eq!(out.status.code(), Some(65), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("7 labels for the 120 rows"));
    let out = embed(&["--label-column", "10"], "c.npy");
    assert_eq!(out.status.code(), Some(65));
    assert!(String::from_utf8_lossy(&out.stderr).contains("outside the 9 columns"), "{}", String::from_utf8_lossy(&out.stderr));
    // both flags at once is a usage error
    let out = embed(&["--label-column", "-1", "--labels", "x.npy"], "c.npy");
    assert_eq!(out.status.code(), Some(64));
}

/// `methods` fits 100 columns with one line per method, each with its version and randomised
/// flag as the registry has them; `methods NAME` shows every parameter of one method; an unknown
/// name is refused.
#[test]
fn methods_lists_versions_flags_and_one_method_in_full() {
    let text = ok(bin().arg("methods").output().unwrap());
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    for m in structdr_methods::registry() {
        let rows: Vec<&str> = text.lines().filter(|l| l.split('|').next().unwrap().trim() == m.name).collect();
        assert_eq!(rows.len(), 1, "{}: {rows:?}", m.name);
        let cells: Vec<&str> = rows[0].split('|').map(str::trim).collect();
        assert_eq!(
            (cells[1], cells[3], cells[4]),
            (m.version.to_string().as_str(), if m.randomised { "yes" } else { "no" }, if m.inductive { "yes" } else { "no" }),
            "{}",
            rows[0]
        );
        assert!(!rows[0].contains("default"), "no parameters without NAME");
    }
    let one = ok(bin().args(["methods", "kpca"]).output().unwrap());
    let info = structdr_methods::lookup("kpca").unwrap();
    assert!(one.contains(&format!("kpca (version {})", info.version)) && one.contains("randomised") && one.contains("transform"), "{one}");
    for p in &info.params {
        let row = one.lines().find(|l| l.trim_start().starts_with(p.name)).unwrap_or_else(|| panic!("{} missing:\n{one}", p.name));
        assert!(row.contains(&p.default.to_string()), "{row}");
    }
    assert!(one.contains("float in") && one.lines().all(|l| l.chars().count() <= 100), "{one}");
    let unknown = bin().args(["methods", "nope"]).output().unwrap();
    assert!(!unknown.status.success() && String::from_utf8_lossy(&unknown.stderr).contains("unknown method 'nope'"));
}

/// Max |a - b| over equal-shaped matrices.
fn max_abs_diff(a: &Array2<f64>, b: &Array2<f64>) -> f64 {
    assert_eq!(a.dim(), b.dim());
    (a - b).iter().fold(0.0f64, |m, v| m.max(v.abs()))
}

/// A model saved by `embed --save-model` maps the training data onto the embedding `embed` wrote
/// (to 1e-12 relative to its scale) for pca, kpca and rproj, and maps new rows; a method without an
/// out-of-sample map is refused naming those with one; a model of another method version, or a
/// damaged one, is refused with exit status 65.
#[test]
fn transform_with_a_saved_model_reproduces_the_embedding() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let x: Array2<f64> = ndarray_npy::read_npy(fixtures().join("pca_input.npy")).unwrap();
    for (method, seed) in [("pca", "0"), ("kpca", "0"), ("rproj", "7")] {
        let (y, model, z) = (d.join(format!("{method}_y.npy")), d.join(format!("{method}.json")), d.join(format!("{method}_z.npy")));
        ok(bin()
            .args(["embed", "--method", method, "--param", "dim=3", "--seed", seed, "--input"])
            .arg(fixtures().join("pca_input.npy"))
            .arg("--out")
            .arg(&y)
            .arg("--save-model")
            .arg(&model)
            .output()
            .unwrap());
        ok(bin().args(["transform", "--model"]).arg(&model).arg("--input").arg(fixtures().join("pca_input.npy")).arg("--out").arg(&z).output().unwrap());
        let (y, z): (Array2<f64>, Array2<f64>) = (ndarray_npy::read_npy(&y).unwrap(), ndarray_npy::read_npy(&z).unwrap());
        let scale = y.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        let err = max_abs_diff(&y, &z);
        assert!(err <= 1e-12 * scale, "{method}: transform(X) differs from embed's Y by {err:e} (scale {scale:e})");
        let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
        assert_eq!(saved["method"], method);
        assert_eq!(saved["method_version"], structdr_methods::lookup(method).unwrap().version);
        assert_eq!((saved["n_features"].as_u64(), saved["n_components"].as_u64()), (Some(x.ncols() as u64), Some(3)));
    }
    // PCA of new rows: (x - mean) V_d with the training mean and axes, recomputed here by hand
    // from the model's numbers
    let new = x.slice(ndarray::s![..5, ..]).mapv(|v| v * 1.5 + 0.25);
    ndarray_npy::write_npy(d.join("new.npy"), &new).unwrap();
    ok(bin()
        .args(["transform", "--model"])
        .arg(d.join("pca.json"))
        .arg("--input")
        .arg(d.join("new.npy"))
        .arg("--out")
        .arg(d.join("new_y.csv"))
        .output()
        .unwrap());
    let model: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join("pca.json")).unwrap()).unwrap();
    let mean: Vec<f64> = model["transform"]["mean"]["data"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    let w: Vec<f64> = model["transform"]["weights"]["data"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    let w = Array2::from_shape_vec((x.ncols(), 3), w).unwrap();
    let expected = (&new - &Array1::from(mean).insert_axis(ndarray::Axis(0))).dot(&w);
    let text = std::fs::read_to_string(d.join("new_y.csv")).unwrap();
    let got: Vec<f64> = text.lines().flat_map(|l| l.split(',').map(|v| v.parse::<f64>().unwrap()).collect::<Vec<_>>()).collect();
    assert!(max_abs_diff(&Array2::from_shape_vec((5, 3), got).unwrap(), &expected) < 1e-12);
    // no out-of-sample map: refused before the fit, naming the methods with one
    let out = bin()
        .args(["embed", "--method", "le", "--input"])
        .arg(fixtures().join("pca_input.npy"))
        .arg("--out")
        .arg(d.join("le.npy"))
        .arg("--save-model")
        .arg(d.join("le.json"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("'le' has no out-of-sample map") && err.contains("identity, pca, rproj, kpca"), "{err}");
    assert!(!err.contains("fitted in") && !d.join("le.json").exists());
    // another method version, a wrong feature count, a damaged file: exit 65 with the reason
    let transform = |model: &Path, input: &Path| {
        bin().args(["transform", "--model"]).arg(model).arg("--input").arg(input).arg("--out").arg(d.join("o.npy")).output().unwrap()
    };
    let mut old = model.clone();
    old["method_version"] = serde_json::json!(0);
    std::fs::write(d.join("old.json"), old.to_string()).unwrap();
    let out = transform(&d.join("old.json"), &fixtures().join("pca_input.npy"));
    assert_eq!(out.status.code(), Some(65));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("fitted by pca version 0, but this build has pca version 1"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    ndarray_npy::write_npy(d.join("narrow.npy"), &x.slice(ndarray::s![.., ..2]).to_owned()).unwrap();
    let out = transform(&d.join("pca.json"), &d.join("narrow.npy"));
    assert_eq!(out.status.code(), Some(65));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the fit had"), "{}", String::from_utf8_lossy(&out.stderr));
    let mut broken = model.clone();
    broken["transform"]["weights"]["dim"] = serde_json::json!([2, 3]);
    broken["transform"]["weights"]["data"] = serde_json::json!([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    std::fs::write(d.join("broken.json"), broken.to_string()).unwrap();
    let out = transform(&d.join("broken.json"), &fixtures().join("pca_input.npy"));
    assert_eq!(out.status.code(), Some(65));
    assert!(String::from_utf8_lossy(&out.stderr).contains("weights are 2 x 3"), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::write(d.join("other.json"), "{\"hello\": 1}").unwrap();
    let out = transform(&d.join("other.json"), &fixtures().join("pca_input.npy"));
    assert_eq!(out.status.code(), Some(65));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a structdr model"));
}

/// Exit statuses: a clap usage error is 64 (not 2), `--help` and `--version` are 0 and the help
/// lists the statuses; a missing input is 65 with its cause printed once; an error that is not
/// about the data is 1; a run in which no cell succeeded keeps 2 (tested above).
#[test]
fn exit_statuses_are_distinct_and_a_cause_is_printed_once() {
    let usage = bin().args(["embed", "--method", "pca", "--no-such-flag"]).output().unwrap();
    assert_eq!(usage.status.code(), Some(64), "{}", String::from_utf8_lossy(&usage.stderr));
    assert_eq!(bin().output().unwrap().status.code(), Some(64), "no command");
    let help = bin().arg("--help").output().unwrap();
    assert_eq!(help.status.code(), Some(0));
    let help = String::from_utf8_lossy(&help.stdout);
    for line in ["64  usage error", "65  data error", "2   failed cells", "3   a check found a difference"] {
        assert!(help.contains(line), "{line} missing in --help:\n{help}");
    }
    assert_eq!(bin().arg("--version").output().unwrap().status.code(), Some(0));
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("x.csv");
    for args in [vec!["embed", "--method", "pca", "--out", "y.npy", "--input"], vec!["eval", "neighbourhood", "--input", "y.npy", "--data"]] {
        let out = bin().current_dir(dir.path()).args(&args).arg(&missing).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(65), "{args:?}: {err}");
        assert_eq!(err.matches("No such file or directory").count(), 1, "the cause once: {err}");
        assert!(err.contains(&format!("{}: No such file or directory (os error 2)", missing.display())), "{err}");
    }
    // a malformed input is a data error too; an output format that cannot be written is not
    std::fs::write(dir.path().join("bad.csv"), "1,2\n3,x\n").unwrap();
    let out = bin().current_dir(dir.path()).args(["embed", "--method", "pca", "--input", "bad.csv", "--out", "y.npy"]).output().unwrap();
    assert_eq!(out.status.code(), Some(65), "{}", String::from_utf8_lossy(&out.stderr));
    let out = bin().current_dir(dir.path()).args(["embed", "--method", "pca", "--input", "bad.csv", "--out", "y.bin"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `embed` fits with one BLAS thread whatever `OPENBLAS_NUM_THREADS` says (the runner's layout, so
/// that it reproduces a table cell): a dense ESL fit of 500 points, whose `dpotrf` rounds
/// differently on two threads, writes the same bits with the variable at 1 and at 2.
/// `--blas-threads 2` opts in (said on stderr) and reaches the same convex optimum to rounding;
/// `--blas-threads 0` is refused.
#[test]
fn embed_fits_with_one_blas_thread_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // two shifted clouds of 250 points in 8-D from a fixed linear congruential sequence
    let mut state = 12345u64;
    let mut next = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let rows: Vec<String> =
        (0..500).map(|i| (0..8).map(|_| format!("{:.17e}", next() + if i < 250 { 1.0 } else { 0.0 })).collect::<Vec<_>>().join(",")).collect();
    std::fs::write(d.join("x.csv"), rows.join("\n") + "\n").unwrap();
    let embed = |out: &str, threads_env: &str, extra: &[&str]| {
        let o = bin()
            .env("OPENBLAS_NUM_THREADS", threads_env)
            .args(["embed", "--method", "esl", "--param", "dim=3", "--param", "lambda=0.1", "--param", "perplexity=20", "--no-labels", "--input"])
            .arg(d.join("x.csv"))
            .arg("--out")
            .arg(d.join(out))
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr).to_string();
        ok(o);
        (std::fs::read(d.join(out)).unwrap(), stderr)
    };
    let (one, one_err) = embed("one.npy", "1", &[]);
    let (two_env, _) = embed("two_env.npy", "2", &[]);
    assert!(one == two_env, "OPENBLAS_NUM_THREADS=2 changed embed's output: the fit did not run on one BLAS thread");
    assert!(!one_err.contains("BLAS threads"), "{one_err}");
    let (_, two_err) = embed("two.npy", "1", &["--blas-threads", "2"]);
    assert!(two_err.contains("(2 BLAS threads)"), "{two_err}");
    let (a, b): (Array2<f64>, Array2<f64>) = (ndarray_npy::read_npy(d.join("one.npy")).unwrap(), ndarray_npy::read_npy(d.join("two.npy")).unwrap());
    let scale = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(scale > 0.0 && max_abs_diff(&a, &b) <= 1e-7 * scale, "two BLAS threads: max |diff| {:e} at scale {scale:e}", max_abs_diff(&a, &b));
    let zero =
        bin().args(["embed", "--method", "pca", "--blas-threads", "0", "--input"]).arg(d.join("x.csv")).arg("--out").arg(d.join("z.npy")).output().unwrap();
    assert!(!zero.status.success() && String::from_utf8_lossy(&zero.stderr).contains("--blas-threads"), "{}", String::from_utf8_lossy(&zero.stderr));
}
