//! The bad-input suite (docs/reliability.md keeps the catalogue): hostile or broken inputs to the
//! `structdr` binary and its spec runner, each with the exit status and the words of the error it
//! must give. Every case also asserts that nothing panicked. Table-driven: a case is a name, the
//! files it needs, a command line, and what must come back.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What a case expects.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Expect {
    /// Exit status 1 (an error that is not about the input data) with this text in stderr.
    Error(&'static str),
    /// Exit status 65 (a data error: an input file missing, unreadable or malformed, data the
    /// method refuses) with this text in stderr.
    DataError(&'static str),
    /// Exit status 2 (a run whose cells failed or were all degenerate) with this text in stdout or stderr.
    Exit2(&'static str),
    /// Success, with this text in stdout or stderr (a recorded `degenerate` status, a listed failure).
    Ok(&'static str),
}

struct Case {
    name: &'static str,
    /// Files written into the case's directory before the command: (relative path, bytes).
    files: Vec<(&'static str, Vec<u8>)>,
    /// Arguments; `{d}` is replaced by the case's directory.
    args: Vec<&'static str>,
    expect: Expect,
}

fn case(name: &'static str, files: Vec<(&'static str, Vec<u8>)>, args: &[&'static str], expect: Expect) -> Case {
    Case { name, files, args: args.to_vec(), expect }
}

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_structdr"));
    c.env("STRUCTDR_NO_REEXEC", "1").env("STRUCTDR_OFFLINE", "1").env("STRUCTDR_MIRROR", "");
    c
}

/// A small valid data table: 40 samples on a noisy curve in 3-D.
fn good_csv() -> Vec<u8> {
    let mut s = String::new();
    for i in 0..40 {
        let t = i as f64 * 0.15;
        s.push_str(&format!("{},{},{}\n", t.cos(), t.sin(), 0.1 * t + 0.01 * ((i * 7 % 5) as f64)));
    }
    s.into_bytes()
}

fn scaled_csv(factor: f64) -> Vec<u8> {
    String::from_utf8(good_csv())
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(|v| format!("{:e}", v.parse::<f64>().unwrap() * factor)).collect::<Vec<_>>().join(",") + "\n")
        .collect::<String>()
        .into_bytes()
}

fn labels_csv(n: usize) -> Vec<u8> {
    (0..n).map(|i| format!("{}\n", i / 10)).collect::<String>().into_bytes()
}

/// A NPY v1 file with the given header dict and payload.
fn npy(header: &str, payload: &[u8]) -> Vec<u8> {
    let mut h = header.to_string();
    while !(10 + h.len() + 1).is_multiple_of(64) {
        h.push(' ');
    }
    h.push('\n');
    let mut v = b"\x93NUMPY\x01\x00".to_vec();
    v.extend_from_slice(&(h.len() as u16).to_le_bytes());
    v.extend_from_slice(h.as_bytes());
    v.extend_from_slice(payload);
    v
}

/// A spec around `body` (datasets, methods...) with a valid header unless `body` replaces it.
fn spec(body: &str) -> Vec<u8> {
    format!("id = \"bad\"\ntitle = \"bad inputs\"\nseed = 1\n[evaluation]\nprotocols = [\"loocv\"]\n{body}").into_bytes()
}

const MOONS: &str = "[[dataset]]\nname = \"two_moons\"\nparams = { n = 60 }\n";
const PCA: &str = "[[method]]\nname = \"pca\"\ngrid = { dim = 2 }\n";

/// Data sets and an LE grid of `k = 1..=ks` x `dim = 1..=100`: `n_datasets * ks * 100` cells.
fn limit_spec(n_datasets: usize, ks: usize) -> String {
    let mut s = String::new();
    for i in 0..n_datasets {
        s.push_str(&format!("[[dataset]]\nname = \"two_moons\"\nlabel = \"m{i}\"\nparams = {{ n = 60 }}\n"));
    }
    let list = |n: usize| (1..=n).map(|v| v.to_string()).collect::<Vec<_>>().join(",");
    s + &format!("[[method]]\nname = \"le\"\ngrid = {{ k = [{}], dim = [{}] }}\n", list(ks), list(100))
}

fn cases() -> Vec<Case> {
    use Expect::*;
    let embed = |input: &'static str| -> Vec<&'static str> { vec!["embed", "--method", "pca", "--param", "dim=2", "--input", input, "--out", "{d}/y.npy"] };
    let mut v = vec![
        // ---- input files (CLI) ----
        case("input missing", vec![], &embed("{d}/nope.csv"), DataError("nope.csv")),
        case("input is a directory", vec![("dir.csv/x", b"1".to_vec())], &embed("{d}/dir.csv"), DataError("not a regular file")),
        case("input extension unknown", vec![("x.bin", good_csv())], &embed("{d}/x.bin"), DataError("unsupported input format '.bin'")),
        case("csv empty", vec![("x.csv", vec![])], &embed("{d}/x.csv"), DataError("no numeric rows")),
        case("csv header only", vec![("x.csv", b"a,b,c\n".to_vec())], &embed("{d}/x.csv"), DataError("no numeric rows")),
        case("csv ragged", vec![("x.csv", b"1,2,3\n4,5\n".to_vec())], &embed("{d}/x.csv"), DataError("ragged row")),
        case("csv typo on the first line", vec![("x.csv", b"1,2.O,3\n4,5,6\n7,8,9\n".to_vec())], &embed("{d}/x.csv"), DataError("line 1")),
        case("csv typo on a later line", vec![("x.csv", b"1,2,3\n4,5,6\n7,x8,9\n".to_vec())], &embed("{d}/x.csv"), DataError("line 3")),
        case("csv empty field", vec![("x.csv", b"1,2,3\n4,,6\n".to_vec())], &embed("{d}/x.csv"), DataError("empty field")),
        case("csv decimal comma with ';'", vec![("x.csv", b"1;2,5\n3;4\n".to_vec())], &embed("{d}/x.csv"), DataError("`2,5`")),
        case("csv invalid UTF-8", vec![("x.csv", b"1,2\n\xff\xfe,3\n".to_vec())], &embed("{d}/x.csv"), DataError("invalid UTF-8")),
        case("csv NaN value", vec![("x.csv", b"1,2,3\n4,nan,6\n7,8,9\n1,1,1\n".to_vec())], &embed("{d}/x.csv"), DataError("non-finite")),
        case("csv infinite value", vec![("x.csv", b"1,2,3\n4,inf,6\n7,8,9\n1,1,1\n".to_vec())], &embed("{d}/x.csv"), DataError("non-finite")),
        case("csv one sample", vec![("x.csv", b"1,2,3\n".to_vec())], &embed("{d}/x.csv"), DataError("1 samples")),
        case("identical samples", vec![("x.csv", b"1,2,3\n1,2,3\n1,2,3\n1,2,3\n".to_vec())], &embed("{d}/x.csv"), Error("degenerate: constant data")),
        case("data x 1e300", vec![("x.csv", scaled_csv(1e300))], &embed("{d}/x.csv"), Error("degenerate: extreme scale")),
        case("data x 1e-300", vec![("x.csv", scaled_csv(1e-300))], &embed("{d}/x.csv"), Error("degenerate: extreme scale")),
        case("npy bad magic", vec![("x.npy", b"NOTNUMPY\x01\x00".to_vec())], &embed("{d}/x.npy"), DataError("x.npy")),
        case("npy truncated payload", vec![("x.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (10, 3), }", &[0u8; 40]))], &embed("{d}/x.npy"), DataError("x.npy")),
        case(
            "npy header claims 10^18 values",
            vec![("x.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000, 1000000000), }", &[0u8; 64]))],
            &embed("{d}/x.npy"),
            DataError("x.npy"),
        ),
        case("npy complex dtype", vec![("x.npy", npy("{'descr': '<c16', 'fortran_order': False, 'shape': (2, 2), }", &[0u8; 64]))], &embed("{d}/x.npy"), DataError("x.npy")),
        // ---- outputs and parameters (CLI) ----
        case("output extension unknown", vec![("x.csv", good_csv())], &["embed", "--method", "pca", "--input", "{d}/x.csv", "--out", "{d}/y.bin"], Error("unsupported output format '.bin'")),
        case("output directory missing", vec![("x.csv", good_csv())], &["embed", "--method", "pca", "--input", "{d}/x.csv", "--out", "{d}/no/such/dir/y.npy"], Error("y.npy")),
        case("param without '='", vec![("x.csv", good_csv())], &["embed", "--method", "pca", "--param", "dim", "--input", "{d}/x.csv", "--out", "{d}/y.npy"], Error("KEY=VALUE")),
        case("unknown param", vec![("x.csv", good_csv())], &["embed", "--method", "pca", "--param", "sigma=1", "--input", "{d}/x.csv", "--out", "{d}/y.npy"], Error("sigma")),
        case("param of the wrong type", vec![("x.csv", good_csv())], &["embed", "--method", "le", "--param", "k=abc", "--input", "{d}/x.csv", "--out", "{d}/y.npy"], Error("'k' must be integer")),
        case("k = 0", vec![("x.csv", good_csv())], &["embed", "--method", "le", "--param", "k=0", "--input", "{d}/x.csv", "--out", "{d}/y.npy"], Error("'k' must be integer >= 1")),
        case("k >= N", vec![("x.csv", good_csv())], &["embed", "--method", "le", "--param", "k=40", "--input", "{d}/x.csv", "--out", "{d}/y.npy"], DataError("too few points")),
        case("LLE with k = 1", vec![("x.csv", good_csv())], &["embed", "--method", "lle", "--param", "k=1", "--input", "{d}/x.csv", "--out", "{d}/y.npy"], Error("'k' must be integer >= 2")),
        case("dim larger than D", vec![("x.csv", good_csv())], &["embed", "--method", "pca", "--param", "dim=9", "--input", "{d}/x.csv", "--out", "{d}/y.npy"], DataError("dim")),
        case("negative C for spl", vec![("x.csv", good_csv())], &["embed", "--method", "spl", "--param", "C=-1", "--input", "{d}/x.csv", "--out", "{d}/y.npy"], Error("'C' must be float in (0.0, inf]")),
        case("gamma = inf for spl", vec![("x.csv", good_csv())], &["embed", "--method", "spl", "--param", "gamma=inf", "--input", "{d}/x.csv", "--out", "{d}/y.npy"], Error("'gamma' must be float in [0.0, inf)")),
        case("unknown method", vec![("x.csv", good_csv())], &["embed", "--method", "umapp", "--input", "{d}/x.csv", "--out", "{d}/y.npy"], Error("unknown method 'umapp'")),
        case("embed a feature selector", vec![("x.csv", good_csv())], &["embed", "--method", "fsl", "--input", "{d}/x.csv", "--out", "{d}/y.npy"], Error("use `structdr select`")),
        case("select an embedding method", vec![("x.csv", good_csv())], &["select", "--method", "pca", "--input", "{d}/x.csv", "--out", "{d}/w.npy"], Error("not feature weights")),
        // ---- evaluation (CLI) ----
        case("labels of another length", vec![("y.csv", good_csv()), ("l.csv", labels_csv(30))], &["eval", "loocv", "--input", "{d}/y.csv", "--labels", "{d}/l.csv"], DataError("length")),
        case("labels not integers", vec![("y.csv", good_csv()), ("l.csv", b"1\n2.5\n".to_vec())], &["eval", "loocv", "--input", "{d}/y.csv", "--labels", "{d}/l.csv"], DataError("not an integer")),
        case("labels with two columns", vec![("y.csv", good_csv()), ("l.csv", b"1,2\n3,4\n".to_vec())], &["eval", "loocv", "--input", "{d}/y.csv", "--labels", "{d}/l.csv"], DataError("one column")),
        case("labels extension unknown", vec![("y.csv", good_csv()), ("l.dat", labels_csv(40))], &["eval", "loocv", "--input", "{d}/y.csv", "--labels", "{d}/l.dat"], DataError("unsupported labels format")),
        case("eval NaN embedding", vec![("y.csv", b"1,2\n4,nan\n7,8\n".to_vec()), ("l.csv", labels_csv(3))], &["eval", "loocv", "--input", "{d}/y.csv", "--labels", "{d}/l.csv"], Error("NaN or infinite")),
        case("eval 0-column embedding", vec![("y.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (40, 0), }", &[])), ("l.csv", labels_csv(40))], &["eval", "loocv", "--input", "{d}/y.npy", "--labels", "{d}/l.csv"], Error("0 columns")),
        case("kmeans k = 0", vec![("y.csv", good_csv()), ("l.csv", labels_csv(40))], &["eval", "kmeans", "--input", "{d}/y.csv", "--labels", "{d}/l.csv", "--k", "0"], Error("k = 0")),
        case("kmeans restarts = 0", vec![("y.csv", good_csv()), ("l.csv", labels_csv(40))], &["eval", "kmeans", "--input", "{d}/y.csv", "--labels", "{d}/l.csv", "--restarts", "0"], Error("restarts")),
        // ---- specs (check) ----
        case("spec missing", vec![], &["check", "{d}/none.toml"], Error("cannot read spec")),
        case("spec TOML syntax", vec![("s.toml", b"id = \"x\"\ntitle = \n".to_vec())], &["check", "{d}/s.toml"], Error("s.toml:2")),
        case("spec unknown key", vec![("s.toml", spec(&format!("colour = 1\n{MOONS}{PCA}")))], &["check", "{d}/s.toml"], Error("colour")),
        case("spec without data sets", vec![("s.toml", spec(PCA))], &["check", "{d}/s.toml"], Error("missing field `dataset`")),
        case("spec without methods", vec![("s.toml", spec(MOONS))], &["check", "{d}/s.toml"], Error("no [[method]]")),
        case("unknown data set", vec![("s.toml", spec(&format!("[[dataset]]\nname = \"moonz\"\n{PCA}")))], &["check", "{d}/s.toml"], Error("unknown data set 'moonz'")),
        case("unknown method in a spec", vec![("s.toml", spec(&format!("{MOONS}[[method]]\nname = \"pcaa\"\n")))], &["check", "{d}/s.toml"], Error("unknown method 'pcaa'")),
        case("unknown grid parameter", vec![("s.toml", spec(&format!("{MOONS}[[method]]\nname = \"pca\"\ngrid = {{ dims = 2 }}\n")))], &["check", "{d}/s.toml"], Error("no parameter 'dims'")),
        case("empty grid axis", vec![("s.toml", spec(&format!("{MOONS}[[method]]\nname = \"le\"\ngrid = {{ k = [] }}\n")))], &["check", "{d}/s.toml"], Error("is empty")),
        case("grid value of the wrong type", vec![("s.toml", spec(&format!("{MOONS}[[method]]\nname = \"le\"\ngrid = {{ k = [\"five\"] }}\n")))], &["check", "{d}/s.toml"], Error("'k' must be integer")),
        case("generator n = 0", vec![("s.toml", spec(&format!("[[dataset]]\nname = \"two_moons\"\nparams = {{ n = 0 }}\n{PCA}")))], &["check", "{d}/s.toml"], Error("`n` = 0")),
        case("generator noise = inf", vec![("s.toml", spec(&format!("[[dataset]]\nname = \"two_moons\"\nparams = {{ noise = inf }}\n{PCA}")))], &["check", "{d}/s.toml"], Error("`noise` = inf")),
        case("generator unknown parameter", vec![("s.toml", spec(&format!("[[dataset]]\nname = \"two_moons\"\nparams = {{ radius = 1 }}\n{PCA}")))], &["check", "{d}/s.toml"], Error("no parameter 'radius'")),
        case("registry set with params", vec![("s.toml", spec(&format!("[[dataset]]\nname = \"iris\"\nparams = {{ n = 5 }}\n{PCA}")))], &["check", "{d}/s.toml"], Error("takes no params")),
        case("preprocess threshold 2", vec![("s.toml", spec(&format!("[[dataset]]\nname = \"two_moons\"\npreprocess = [{{ op = \"pca_energy\", threshold = 2.0 }}]\n{PCA}")))], &["check", "{d}/s.toml"], Error("threshold must be in (0, 1]")),
        case("preprocess pca_dim d = 0", vec![("s.toml", spec(&format!("[[dataset]]\nname = \"two_moons\"\npreprocess = [{{ op = \"pca_dim\", d = 0 }}]\n{PCA}")))], &["check", "{d}/s.toml"], Error("d must be >= 1")),
        case("preprocess unknown op", vec![("s.toml", spec(&format!("[[dataset]]\nname = \"two_moons\"\npreprocess = [{{ op = \"whiten\" }}]\n{PCA}")))], &["check", "{d}/s.toml"], Error("whiten")),
        case(
            "restarts = 0",
            vec![("s.toml", format!("id = \"bad\"\ntitle = \"t\"\n[evaluation]\nprotocols = [\"kmeans\"]\nrestarts = 0\n{MOONS}{PCA}").into_bytes())],
            &["check", "{d}/s.toml"],
            Error("restarts must be >= 1"),
        ),
        case(
            "select metric unknown",
            vec![("s.toml", format!("id = \"bad\"\ntitle = \"t\"\n[evaluation]\nprotocols = [\"loocv\"]\nselect = \"loocv_acc\"\n{MOONS}{PCA}").into_bytes())],
            &["check", "{d}/s.toml"],
            Error("'loocv_acc' is not a metric"),
        ),
        case("row select unknown", vec![("s.toml", spec(&format!("{MOONS}[[method]]\nname = \"pca\"\nselect = \"acc_mean\"\ngrid = {{ dim = 2 }}\n")))], &["check", "{d}/s.toml"], Error("'acc_mean' is not a metric")),
        case("id with ..", vec![("s.toml", format!("id = \"../../x\"\ntitle = \"t\"\n[evaluation]\nprotocols = [\"loocv\"]\n{MOONS}{PCA}").into_bytes())], &["check", "{d}/s.toml"], Error("without '..'")),
        case("absolute id", vec![("s.toml", format!("id = \"/tmp/x\"\ntitle = \"t\"\n[evaluation]\nprotocols = [\"loocv\"]\n{MOONS}{PCA}").into_bytes())], &["check", "{d}/s.toml"], Error("relative path")),
        case("id with a space", vec![("s.toml", format!("id = \"my table\"\ntitle = \"t\"\n[evaluation]\nprotocols = [\"loocv\"]\n{MOONS}{PCA}").into_bytes())], &["check", "{d}/s.toml"], Error("an id is ASCII letters")),
        case("id starting with a dot", vec![("s.toml", format!("id = \".x\"\ntitle = \"t\"\n[evaluation]\nprotocols = [\"loocv\"]\n{MOONS}{PCA}").into_bytes())], &["check", "{d}/s.toml"], Error("must not start with '.' or '-'")),
        case("id with a shell command", vec![("s.toml", format!("id = \"x$(reboot)\"\ntitle = \"t\"\n[evaluation]\nprotocols = [\"loocv\"]\n{MOONS}{PCA}").into_bytes())], &["check", "{d}/s.toml"], Error("holds '$'")),
        case("empty output", vec![("s.toml", format!("id = \"x\"\ntitle = \"t\"\noutput = \"\"\n[evaluation]\nprotocols = [\"loocv\"]\n{MOONS}{PCA}").into_bytes())], &["check", "{d}/s.toml"], Error("output is empty")),
        case("absolute table_path", vec![("s.toml", format!("id = \"x\"\ntitle = \"t\"\ntable_path = \"/etc/x\"\n[evaluation]\nprotocols = [\"loocv\"]\n{MOONS}{PCA}").into_bytes())], &["check", "{d}/s.toml"], Error("relative path")),
        case(
            "grid of a million cells",
            vec![("s.toml", spec(&format!("{MOONS}[[method]]\nname = \"le\"\ngrid = {{ k = [{}], dim = [{}] }}\n", (1..=1000).map(|v| v.to_string()).collect::<Vec<_>>().join(","), (1..=1000).map(|v| v.to_string()).collect::<Vec<_>>().join(","))))],
            &["check", "{d}/s.toml"],
            Error("1000000 cells"),
        ),
        case("duplicate data set label", vec![("s.toml", spec(&format!("{MOONS}{MOONS}{PCA}")))], &["check", "{d}/s.toml"], Error("appears twice")),
        case("duplicate method label", vec![("s.toml", spec(&format!("{MOONS}{PCA}{PCA}")))], &["check", "{d}/s.toml"], Error("appears twice")),
        case(
            "reference row of the wrong length",
            vec![("s.toml", spec(&format!("{MOONS}{PCA}[reference]\nsource = \"s\"\ndatasets = [\"a\", \"b\"]\nrows = {{ PCA = [0.5] }}\n")))],
            &["check", "{d}/s.toml"],
            Error("has 1 values for 2 data sets"),
        ),
        case(
            "figure panel on an unknown data set",
            vec![("s.toml", spec(&format!("{MOONS}[[figure]]\nname = \"f\"\ntitle = \"f\"\nkind = \"embedding\"\n[[figure.panel]]\ndataset = \"nope\"\nmethod = \"pca\"\n")))],
            &["check", "{d}/s.toml"],
            Error("no data set labelled 'nope'"),
        ),
        // ---- runs ----
        case("run --dataset not in the spec", vec![("s.toml", spec(&format!("{MOONS}{PCA}")))], &["run", "{d}/s.toml", "--results", "{d}/r", "--dataset", "iris"], Error("--dataset iris")),
        case("run --shard 0/4", vec![("s.toml", spec(&format!("{MOONS}{PCA}")))], &["run", "{d}/s.toml", "--results", "{d}/r", "--shard", "0/4"], Error("1 <= i <= n")),
        case("run whose every cell fails", vec![("s.toml", spec(&format!("{MOONS}[[method]]\nname = \"pca\"\ngrid = {{ dim = [5, 6] }}\n")))], &["run", "{d}/s.toml", "--results", "{d}/r"], Exit2("no cell of")),
        case(
            "run --fail-on-error with one failed cell",
            vec![("s.toml", spec(&format!("{MOONS}[[method]]\nname = \"pca\"\ngrid = {{ dim = [1, 5] }}\n")))],
            &["run", "--fail-on-error", "{d}/s.toml", "--results", "{d}/r"],
            Exit2("failed cell(s)"),
        ),
        case("run lists a failed cell", vec![("s.toml", spec(&format!("{MOONS}[[method]]\nname = \"pca\"\ngrid = {{ dim = [1, 5] }}\n")))], &["run", "{d}/s.toml", "--results", "{d}/r"], Ok("failed cells (1)")),
        case(
            "run on degenerate generated data",
            vec![("s.toml", spec(&format!("[[dataset]]\nname = \"circle\"\nparams = {{ n = 50, radius = 1e-200, noise = 0.0 }}\n{MOONS}[[method]]\nname = \"le\"\ngrid = {{ dim = 2, k = 5 }}\n")))],
            &["run", "{d}/s.toml", "--results", "{d}/r"],
            Ok("degenerate cells (1)"),
        ),
        // ---- issue 29: tables, limits, nightly, paths, temp files ----
        // limits are exclusive (a limit L refuses L or more) and counted from the axes' lengths
        case("plan of exactly the cell limit", vec![("s.toml", spec(&limit_spec(10, 1000)))], &["check", "{d}/s.toml"], Error("1000000 cells (data sets x grid cells x repeats), the limit is fewer than 1000000")),
        case("run of a plan at the cell limit", vec![("s.toml", spec(&limit_spec(10, 1000)))], &["run", "{d}/s.toml", "--results", "{d}/r", "--max-cells", "0"], Error("the limit is fewer than 1000000; split it")),
        case("grid of exactly the per-method limit", vec![("s.toml", spec(&limit_spec(1, 1000)))], &["check", "{d}/s.toml"], Error("100000 cells (the product of its axes' lengths), the limit is fewer than 100000 per method")),
        case("grid one cell under the per-method limit", vec![("s.toml", spec(&limit_spec(1, 999)))], &["check", "{d}/s.toml"], Ok("99900 cells")),
        case("id of the longest length", vec![("s.toml", format!("id = \"{}\"\ntitle = \"t\"\n[evaluation]\nprotocols = [\"loocv\"]\n{MOONS}{PCA}", "x".repeat(100)).into_bytes())], &["check", "{d}/s.toml"], Ok(": ok")),
        case("id one character too long", vec![("s.toml", format!("id = \"{}\"\ntitle = \"t\"\n[evaluation]\nprotocols = [\"loocv\"]\n{MOONS}{PCA}", "x".repeat(101)).into_bytes())], &["check", "{d}/s.toml"], Error("id is 101 characters long; at most 100")),
        // every I/O error names its path
        case("table file is a directory", vec![("s.toml", spec(&format!("{MOONS}{PCA}"))), ("r/bad/table.md/x", vec![])], &["run", "{d}/s.toml", "--results", "{d}/r"], Error("r/bad/table.md: Is a directory")),
        case("results root is a file", vec![("s.toml", spec(&format!("{MOONS}{PCA}"))), ("r", b"x".to_vec())], &["run", "{d}/s.toml", "--results", "{d}/r"], Error("r/bad")),
        case("record store is a file", vec![("s.toml", spec(&format!("{MOONS}{PCA}"))), ("r/bad/records", b"x".to_vec())], &["run", "{d}/s.toml", "--results", "{d}/r"], Error("r/bad/records")),
        case("report output is a file", vec![("s.toml", spec(&format!("{MOONS}{PCA}"))), ("o", b"x".to_vec())], &["report", "{d}/s.toml", "--results", "{d}/r", "--out", "{d}/o"], Error("cannot create the report directory")),
        case("spec ledger is a directory", vec![("s.toml", spec(&format!("{MOONS}{PCA}"))), ("r/bad/specs.toml/x", vec![])], &["run", "{d}/s.toml", "--results", "{d}/r"], Error("r/bad/specs.toml: Is a directory")),
        // nightly checks its history before running the suite
        case("nightly history directory is a file", vec![("t.toml", spec(&format!("{MOONS}{PCA}"))), ("suite.toml", b"id = \"s\"\n[[quality]]\nspec = \"t.toml\"\n".to_vec()), ("h", b"x".to_vec())], &["nightly", "{d}/suite.toml", "--history", "{d}/h"], Error("h is not a directory")),
    ];
    #[cfg(unix)]
    v.push(case("input symlink to /dev/zero", vec![], &embed("{d}/zero.npy"), DataError("not a regular file")));
    v.extend(issue29_cases());
    v
}

// ---- issue 29: eval scales, check = run, sizes ----

/// `good_csv` scored with `labels_csv(40)`: the unscaled embedding's 1-NN accuracy and k-means
/// summary (20 restarts, seed 0), which every rescaled copy must reproduce.
const LOOCV_040: &str = r#"{"loocv_1nn_accuracy":0.85}"#;
const KMEANS_040: &str = r#""acc_best_sse":1.0,"acc_mean":0.8237499999999999"#;

/// Files the cases below make sparse: (case, file, length). The header is written, then the file
/// is extended with `File::set_len`, so a 1.6 GB file takes no disk.
const SPARSE: &[(&str, &str, u64)] = &[("eval embedding.npy of 1.6 GB, 40 labels", "y.npy", 128 + 1_600_000_000)];

/// A zip of (name, bytes) members, deflated.
fn zip_of(members: &[(&str, Vec<u8>)]) -> Vec<u8> {
    use std::io::Write;
    let mut buf = std::io::Cursor::new(Vec::new());
    let mut z = zip::ZipWriter::new(&mut buf);
    for (name, bytes) in members {
        z.start_file(*name, zip::write::SimpleFileOptions::default()).unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap();
    buf.into_inner()
}

/// A spec-local registry of one unlabelled image zip of 2 images x 72 values, read from the
/// cache directory (`data/z/faces.zip`), scored without labels.
fn image_zip_case(name: &'static str, member: (&str, Vec<u8>), expect: Expect) -> Case {
    let reg = "schema_version = 1\n[[dataset]]\nname = \"faces\"\npaper_name = \"F\"\nformat = \"image-zip\"\nmirror_path = \"z/faces.zip\"\nn_samples = 2\nn_features = 72\nn_classes = 0\ncitation = \"c\"\nlicence = \"l\"\n";
    let s =
        format!("id = \"bad\"\ntitle = \"t\"\nregistry = \"reg.toml\"\n[evaluation]\nprotocols = [\"neighbourhood\"]\n[[dataset]]\nname = \"faces\"\n{PCA}");
    case(
        name,
        vec![("s.toml", s.into_bytes()), ("reg.toml", reg.as_bytes().to_vec()), ("data/z/faces.zip", zip_of(&[member]))],
        &["run", "{d}/s.toml", "--results", "{d}/r"],
        expect,
    )
}

fn issue29_cases() -> Vec<Case> {
    use Expect::*;
    let loocv = |input: &'static str| -> Vec<&'static str> { vec!["eval", "loocv", "--input", input, "--labels", "{d}/l.csv"] };
    let kmeans = |input: &'static str| -> Vec<&'static str> { vec!["eval", "kmeans", "--input", input, "--labels", "{d}/l.csv"] };
    let l40 = || ("l.csv", labels_csv(40));
    // own data with a labels file, and the preprocessing of a data set, in a spec
    let own = |labels: &str, pre: &str| spec(&format!("[[dataset]]\npath = \"x.csv\"\nlabels = \"{labels}\"\n{pre}{PCA}"));
    let moons_select =
        spec(&format!("[[dataset]]\nname = \"two_moons\"\nparams = {{ n = 60 }}\npreprocess = [{{ op = \"select_labels\", labels = [0, 7] }}]\n{PCA}"));
    let external = |t: &str| spec(&format!("{MOONS}[[method]]\nname = \"ext\"\ncommand = [\"true\"]\ntimeout_s = {t}\n"));
    let labels_nan = [labels_csv(39), b"nan\n".to_vec()].concat();
    let pgm = |w: usize, h: usize, fill: usize| [format!("P5 {w} {h} 255\n").into_bytes(), vec![0u8; fill]].concat();
    vec![
        // A. eval on extreme scales: the unscaled scores, or a clear refusal
        case("eval loocv, unscaled", vec![("y.csv", good_csv()), l40()], &loocv("{d}/y.csv"), Ok(LOOCV_040)),
        case("eval loocv, data x 1e300", vec![("y.csv", scaled_csv(1e300)), l40()], &loocv("{d}/y.csv"), Ok(LOOCV_040)),
        case("eval loocv, data x 1e154", vec![("y.csv", scaled_csv(1e154)), l40()], &loocv("{d}/y.csv"), Ok(LOOCV_040)),
        case("eval loocv, data x 1e-300", vec![("y.csv", scaled_csv(1e-300)), l40()], &loocv("{d}/y.csv"), Ok(LOOCV_040)),
        case("eval kmeans, unscaled", vec![("y.csv", good_csv()), l40()], &kmeans("{d}/y.csv"), Ok(KMEANS_040)),
        case("eval kmeans, data x 1e300", vec![("y.csv", scaled_csv(1e300)), l40()], &kmeans("{d}/y.csv"), Ok(KMEANS_040)),
        case("eval kmeans, data x 1e154", vec![("y.csv", scaled_csv(1e154)), l40()], &kmeans("{d}/y.csv"), Ok(KMEANS_040)),
        case("eval kmeans, data x 1e-300", vec![("y.csv", scaled_csv(1e-300)), l40()], &kmeans("{d}/y.csv"), Error("not above the k-means tolerance")),
        case(
            "eval kmeans, data x 1e-300, --tolerance 1e-304",
            vec![("y.csv", scaled_csv(1e-300)), l40()],
            &["eval", "kmeans", "--input", "{d}/y.csv", "--labels", "{d}/l.csv", "--tolerance", "1e-304"],
            Ok(KMEANS_040),
        ),
        case(
            "eval 1-NN whose distances underflow",
            vec![("y.csv", b"1e300,0\n0,1e-30\n0,2e-30\n0,3e-30\n".to_vec()), ("l.csv", labels_csv(4))],
            &loocv("{d}/y.csv"),
            Error("underflows to 0"),
        ),
        // B. check refuses what run refuses, before any fit
        case(
            "check: own data file empty",
            vec![("s.toml", own("l.csv", "")), ("x.csv", vec![]), l40()],
            &["check", "{d}/s.toml"],
            Error("x.csv: line 1: no numeric rows"),
        ),
        case(
            "check: labels file of another length",
            vec![("s.toml", own("l.csv", "")), ("x.csv", good_csv()), ("l.csv", labels_csv(30))],
            &["check", "{d}/s.toml"],
            Error("30 labels in l.csv for 40 samples"),
        ),
        case(
            "check: labels with NaN",
            vec![("s.toml", own("l.csv", "")), ("x.csv", good_csv()), ("l.csv", labels_nan)],
            &["check", "{d}/s.toml"],
            Error("l.csv: label NaN of sample 40 is not an integer"),
        ),
        case(
            "check: pca_dim larger than D",
            vec![("s.toml", own("l.csv", "preprocess = [{ op = \"pca_dim\", d = 5 }]\n")), ("x.csv", good_csv()), l40()],
            &["check", "{d}/s.toml"],
            Error("pca_dim d = 5 is larger than the 3 features"),
        ),
        case(
            "check: select_labels of a label that does not exist",
            vec![("s.toml", moons_select.clone())],
            &["check", "{d}/s.toml"],
            Error("label 7 is not among the labels of 'two_moons' (0, 1)"),
        ),
        case(
            "run: select_labels of a label that does not exist",
            vec![("s.toml", moons_select)],
            &["run", "{d}/s.toml", "--results", "{d}/r"],
            Error("label 7 is not among the labels of 'two_moons' (0, 1)"),
        ),
        case("check: timeout_s = 1e30", vec![("s.toml", external("1e30"))], &["check", "{d}/s.toml"], Error("at most 2592000 (30 days)")),
        case("run: timeout_s = 1e30", vec![("s.toml", external("1e30"))], &["run", "{d}/s.toml", "--results", "{d}/r"], Error("at most 2592000 (30 days)")),
        // C. sizes checked before data is read or inflated
        case(
            "eval embedding.npy of 1.6 GB, 40 labels",
            vec![("y.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (200000000, 1), }", &[])), l40()],
            &loocv("{d}/y.npy"),
            DataError("y.npy: byte offset 8: the header declares 200000000 x 1: length mismatch"),
        ),
        case(
            "own data: labels.npy header of another length",
            vec![
                ("s.toml", own("l.npy", "")),
                ("x.csv", good_csv()),
                ("l.npy", npy("{'descr': '<i8', 'fortran_order': False, 'shape': (30,), }", &[0u8; 240])),
            ],
            &["check", "{d}/s.toml"],
            Error("l.npy: the header declares 30 labels for 40 samples"),
        ),
        image_zip_case(
            "zip member declaring 4 MB for 72-value images",
            ("a.pgm", pgm(2000, 2000, 4_000_000)),
            Error("a.pgm declares 4000017 bytes uncompressed"),
        ),
        image_zip_case("zip image header of another size", ("a.pgm", pgm(10, 10, 100)), Error("faces.zip:a.pgm: header declares 10 x 10 x 1 = 100 values")),
    ]
}

fn run_case(c: &Case, root: &Path) -> (Option<i32>, String) {
    let d = root.join(c.name.replace([' ', '/', '\'', '=', '.', '>', ';', ',', ':'], "_"));
    std::fs::create_dir_all(&d).unwrap();
    for (rel, bytes) in &c.files {
        let p = d.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    for (_, rel, len) in SPARSE.iter().filter(|(name, _, _)| *name == c.name) {
        std::fs::OpenOptions::new().write(true).open(d.join(rel)).unwrap().set_len(*len).unwrap();
    }
    #[cfg(unix)]
    if c.name == "input symlink to /dev/zero" {
        std::os::unix::fs::symlink("/dev/zero", d.join("zero.npy")).unwrap();
    }
    let args: Vec<String> = c.args.iter().map(|a| a.replace("{d}", &d.display().to_string())).collect();
    let out = bin().current_dir(&d).args(&args).output().unwrap();
    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code(), text)
}

#[test]
fn every_bad_input_gets_its_error_or_status_and_nothing_panics() {
    let root = tempfile::tempdir().unwrap();
    let cases = cases();
    assert!(cases.len() >= 60, "the suite has {} cases", cases.len());
    let mut failures = Vec::new();
    for c in &cases {
        let (code, text) = run_case(c, root.path());
        let ok = match c.expect {
            Expect::Error(want) => code == Some(1) && text.contains(want),
            Expect::DataError(want) => code == Some(65) && text.contains(want),
            Expect::Exit2(want) => code == Some(2) && text.contains(want),
            Expect::Ok(want) => code == Some(0) && text.contains(want),
        };
        if !ok || text.contains("panicked") {
            failures.push(format!("{}: expected {:?}, got exit {code:?}:\n{}", c.name, c.expect, text.trim()));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n\n{}", failures.len(), cases.len(), failures.join("\n\n"));
    // the catalogue's counts are this suite's: a case added here without its row fails
    let errors = cases.iter().filter(|c| matches!(c.expect, Expect::Error(_))).count();
    let data_errors = cases.iter().filter(|c| matches!(c.expect, Expect::DataError(_))).count();
    let exit2 = cases.iter().filter(|c| matches!(c.expect, Expect::Exit2(_))).count();
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reliability.md")).unwrap();
    for stated in
        [format!("{} cases through the binary", cases.len()), format!("clear errors, exit 1: {errors}; data errors, exit 65: {data_errors}; exit 2: {exit2};")]
    {
        assert!(doc.contains(&stated), "docs/reliability.md must say \"{stated}\"");
    }
}

/// A record directory that cannot be written is an error naming the path, and the records a
/// previous run finished are still there afterwards.
#[test]
fn unwritable_record_directory_is_an_error_and_loses_nothing() {
    let root = tempfile::tempdir().unwrap();
    let d = root.path();
    std::fs::write(d.join("s.toml"), spec(&format!("{MOONS}[[method]]\nname = \"pca\"\ngrid = {{ dim = [1, 2] }}\n"))).unwrap();
    let ok = bin().args(["run", "s.toml", "--results", "r"]).current_dir(d).output().unwrap();
    assert!(ok.status.success());
    let records: PathBuf = d.join("r/bad/records");
    let before: Vec<_> = std::fs::read_dir(&records).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(before.len(), 2);
    // a third cell, into a read-only record directory
    std::fs::write(d.join("s.toml"), spec(&format!("{MOONS}[[method]]\nname = \"pca\"\ngrid = {{ dim = [1, 2, 3] }}\n"))).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&records, std::fs::Permissions::from_mode(0o555)).unwrap();
        let probe = records.join(".probe");
        let writable = std::fs::write(&probe, b"x").is_ok(); // root ignores permissions
        let _ = std::fs::remove_file(&probe);
        let out = bin().args(["run", "s.toml", "--results", "r"]).current_dir(d).output().unwrap();
        std::fs::set_permissions(&records, std::fs::Permissions::from_mode(0o755)).unwrap();
        if !writable {
            assert_eq!(out.status.code(), Some(1));
            assert!(String::from_utf8_lossy(&out.stderr).contains("could not be written"), "{}", String::from_utf8_lossy(&out.stderr));
        }
    }
    for p in &before {
        assert!(p.exists(), "{} was lost", p.display());
    }
}

/// Issue 29: `check` makes every check `run` makes before a fit, through the same function, and
/// reports every problem at once: five broken data sets, five errors from `check`, and `run`
/// refuses with the same message before computing anything.
#[test]
fn check_refuses_what_run_refuses_all_at_once() {
    let root = tempfile::tempdir().unwrap();
    let d = root.path();
    let body = format!(
        "[[dataset]]\npath = \"empty.csv\"\n\
         [[dataset]]\npath = \"x.csv\"\nlabels = \"l30.csv\"\nlabel = \"a\"\n\
         [[dataset]]\npath = \"x.csv\"\nlabels = \"lnan.csv\"\nlabel = \"b\"\n\
         [[dataset]]\npath = \"x.csv\"\nlabels = \"l.csv\"\nlabel = \"c\"\npreprocess = [{{ op = \"pca_dim\", d = 5 }}]\n\
         [[dataset]]\nname = \"two_moons\"\nparams = {{ n = 60 }}\npreprocess = [{{ op = \"select_labels\", labels = [0, 7] }}]\n{PCA}"
    );
    for (rel, bytes) in [
        ("s.toml", spec(&body)),
        ("empty.csv", vec![]),
        ("x.csv", good_csv()),
        ("l30.csv", labels_csv(30)),
        ("lnan.csv", [labels_csv(39), b"nan\n".to_vec()].concat()),
        ("l.csv", labels_csv(40)),
    ] {
        std::fs::write(d.join(rel), bytes).unwrap();
    }
    let wanted = [
        "data set 'empty': empty.csv: line 1: no numeric rows",
        "data set 'a' (x): x.csv: 30 labels in l30.csv for 40 samples",
        "data set 'b' (x): lnan.csv: label NaN of sample 40 is not an integer",
        "data set 'c' (x): preprocessing: step 1 ({\"op\":\"pca_dim\",\"d\":5}): pca_dim d = 5 is larger than the 3 features",
        "data set 'two_moons': preprocessing: step 1 ({\"op\":\"select_labels\",\"labels\":[0,7]}): select_labels: label 7 is not among the labels of 'two_moons' (0, 1)",
    ];
    let check = bin().args(["check", "s.toml"]).current_dir(d).output().unwrap();
    let run = bin().args(["run", "s.toml", "--results", "r"]).current_dir(d).output().unwrap();
    for (what, out) in [("check", &check), ("run", &run)] {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {err}");
        for w in wanted {
            assert!(err.contains(w), "{what} lacks {w:?}:\n{err}");
        }
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(!d.join("r/bad/records").exists(), "run computed before refusing");
}

/// docs/reliability.md lists every case of the suite (its first column).
#[test]
fn the_catalogue_lists_every_case() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reliability.md")).unwrap();
    let missing: Vec<&str> = cases().iter().map(|c| c.name).filter(|n| !doc.contains(&format!("| {n} |"))).collect();
    assert!(missing.is_empty(), "docs/reliability.md lacks: {missing:?}");
}

// ---- issue 29: tables, limits, nightly, paths, temp files (multi-step scenarios) ----

/// A spec of ESL cells of about a second each (two data sets, 14 cells), so that two runs overlap.
const CONCURRENT: &str = "id = \"cc\"\ntitle = \"concurrent\"\nseed = 3\n[evaluation]\nprotocols = [\"loocv\", \"kmeans\"]\nrestarts = 3\n\
[[dataset]]\nname = \"two_moons\"\nparams = { n = 500 }\n[[dataset]]\nname = \"three_clusters\"\nparams = { n = 90 }\n\
[[method]]\nname = \"pca\"\ngrid = { dim = 2 }\n[[method]]\nname = \"esl\"\ngrid = { dim = 2, perplexity = [20.0, 30.0], lambda = [0.5, 0.7, 0.9] }\n";

/// A table without its timings (the `fit s` column of the selected cells: two decimals), which
/// differ between runs of the same cells.
fn without_timings(md: &str) -> String {
    md.lines()
        .map(|l| {
            l.split(" | ")
                .map(|c| if c.split_once('.').is_some_and(|(a, b)| b.len() == 2 && a.parse::<u64>().is_ok() && b.parse::<u64>().is_ok()) { "t" } else { c })
                .collect::<Vec<_>>()
                .join(" | ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Two concurrent runs of one spec on one store compute each cell once, and each ends with the
/// complete table, the same as a single run's (the run that finishes first waits for the cells
/// the other is computing; both read the store again for their tables).
#[test]
fn concurrent_runs_both_end_with_the_complete_table() {
    let root = tempfile::tempdir().unwrap();
    let d = root.path();
    std::fs::write(d.join("s.toml"), CONCURRENT).unwrap();
    let plan = structdr::spec::load(&d.join("s.toml")).unwrap();
    let opts = |r: &str| structdr::exec::RunOptions::quiet(d.join(r));
    let single = structdr::run_spec(&plan, &opts("single")).unwrap();
    let single_md = std::fs::read_to_string(d.join("single/cc/table.md")).unwrap();
    assert_eq!(single.summary.recorded, single.summary.total, "{single_md}");
    let (a, b) = std::thread::scope(|s| {
        let ha = s.spawn(|| structdr::run_spec(&plan, &opts("shared")).unwrap());
        let hb = s.spawn(|| structdr::run_spec(&plan, &opts("shared")).unwrap());
        (ha.join().unwrap(), hb.join().unwrap())
    });
    assert_eq!(a.summary.computed + b.summary.computed, single.summary.total, "each cell computed once: {:?} {:?}", a.summary, b.summary);
    for (name, out) in [("A", &a), ("B", &b)] {
        let s = &out.summary;
        assert_eq!((s.recorded, s.busy, s.claimed.len()), (s.total, 0, 0), "run {name} ends with every cell: {s:?}");
        // each run's own table, as it would have written it
        let stem = d.join(format!("table-{name}"));
        structdr::report::write_tables(&plan, &out.prepared, &out.best, s, &stem).unwrap();
        let md = std::fs::read_to_string(stem.with_extension("md")).unwrap();
        assert_eq!(without_timings(&md), without_timings(&single_md), "run {name}'s table differs from a single run's");
        for (x, y) in out.best.iter().zip(&single.best) {
            assert_eq!(x.score(), y.score(), "run {name}: best of {} / {}", x.method, x.dataset);
        }
    }
    // the table file left by the last run to finish is complete too
    let last = std::fs::read_to_string(d.join("shared/cc/table.md")).unwrap();
    assert_eq!(without_timings(&last), without_timings(&single_md));
}

/// `nightly` checks its history before it runs the suite: a corrupt history or one that is a
/// directory is an error naming it, with nothing run and nothing appended; a history that cannot
/// be appended to at the end keeps the run's entry in a side file and says where.
#[test]
fn nightly_checks_its_history_before_running() {
    let root = tempfile::tempdir().unwrap();
    let d = root.path();
    std::fs::write(d.join("t.toml"), spec(&format!("{MOONS}{PCA}"))).unwrap();
    std::fs::write(d.join("suite.toml"), "id = \"s\"\n[[quality]]\nspec = \"t.toml\"\n").unwrap();
    let nightly = || bin().current_dir(d).args(["nightly", "suite.toml", "--history", "h"]).output().unwrap();
    let first = nightly();
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let file = std::fs::read_dir(d.join("h")).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|x| x == "jsonl")).unwrap();
    let good = std::fs::read_to_string(&file).unwrap();
    // as the error names it: relative to the working directory, as --history was given
    let named = Path::new("h").join(file.file_name().unwrap()).display().to_string();
    // corrupt: a broken second line
    std::fs::write(&file, format!("{good}{{broken\n")).unwrap();
    let out = nightly();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("{named} line 2")) && !err.contains("nightly: quality"), "an error before the suite runs: {err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), format!("{good}{{broken\n"), "nothing appended");
    // unreadable: a directory where the file should be
    std::fs::remove_file(&file).unwrap();
    std::fs::create_dir(&file).unwrap();
    let out = nightly();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&named) && err.contains("not a regular file") && !err.contains("nightly: quality"), "{err}");
}

/// A write that fails leaves no temporary file: a table path that is a directory (the rename
/// fails), and where a tiny tmpfs can be mounted (root), a full disk under the record store. And
/// a temp file a dead writer left in records/ long ago is swept when the store opens.
#[test]
fn failed_writes_leave_no_temporary_file_and_stale_ones_are_swept() {
    let root = tempfile::tempdir().unwrap();
    let d = root.path();
    std::fs::write(d.join("s.toml"), spec(&format!("{MOONS}[[method]]\nname = \"pca\"\ngrid = {{ dim = [1, 2] }}\n"))).unwrap();
    let temps = |dir: &Path| -> Vec<PathBuf> {
        let mut v = Vec::new();
        for e in walk(dir) {
            if e.file_name().is_some_and(|n| n.to_string_lossy().ends_with(".tmp")) {
                v.push(e);
            }
        }
        v
    };
    std::fs::create_dir_all(d.join("r/bad/table.md")).unwrap();
    let out = bin().current_dir(d).args(["run", "s.toml", "--results", "r"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("r/bad/table.md: Is a directory"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(temps(&d.join("r")).is_empty(), "{:?}", temps(&d.join("r")));
    // a stale temp file of a dead writer (no such process, 20 minutes old) is swept; a young one stays
    let records = d.join("r/bad/records");
    let stale = records.join(".0123.json.4294967.0.tmp");
    let young = records.join(".0123.json.4294967.1.tmp");
    for p in [&stale, &young] {
        std::fs::write(p, b"").unwrap();
    }
    std::fs::File::options().write(true).open(&stale).unwrap().set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(1200)).unwrap();
    std::fs::remove_dir(d.join("r/bad/table.md")).unwrap();
    assert!(bin().current_dir(d).args(["run", "s.toml", "--results", "r"]).output().unwrap().status.success());
    assert!(!stale.exists() && young.exists());
    // a full disk: a 48 KiB tmpfs, filled
    let mnt = d.join("full");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = std::process::Command::new("mount").args(["-t", "tmpfs", "-o", "size=48k", "tmpfs"]).arg(&mnt).output().is_ok_and(|o| o.status.success());
    if !mounted {
        eprintln!("skipping the full-disk check: cannot mount a tmpfs here (needs root)");
        return;
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(self.0).status();
        }
    }
    let _guard = Unmount(&mnt);
    let _ = std::fs::write(mnt.join("filler"), vec![0u8; 40 << 10]);
    let out = bin().current_dir(d).args(["run", "s.toml", "--results", "full/r"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("full/r/bad") && err.contains("No space left"), "{err}");
    assert!(temps(&mnt).is_empty(), "temp files left on the full disk: {:?}", temps(&mnt));
}

/// Every file under `dir`, recursively.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}
