//! `structdr slurm` cannot be steered by the values it writes into its scripts (docs/cluster.md,
//! "What goes into the scripts"). Every field a script interpolates (the partition, the time
//! limit, the results path, the spec's file name and directory, its id and `output`, the
//! directory the command runs in, the binary's own path, the exported environment) is tried
//! with a newline, a quote, `;`, `$()` and backtick payload, each of which would create a marker
//! file if a shell ever ran it. Each case must end in one of two ways:
//! - a refusal: exit status 1, the field named in the error, no script written;
//! - scripts that pass `bash -n` and, run by bash with a fake `structdr` in the binary's place
//!   and fake `sbatch` / `srun` first on `PATH` (each only logs its argv), run the fake `structdr`
//!   exactly once with the given values as whole arguments, call nothing else, and create no
//!   marker file.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The payloads, each with the marker file it would create if a shell ran it.
fn payloads() -> Vec<(&'static str, String, &'static str)> {
    vec![
        ("newline", "x\ntouch pwned_nl".into(), "pwned_nl"),
        ("quote", "x'; touch pwned_q; '".into(), "pwned_q"),
        ("semicolon", "x; touch pwned_sc".into(), "pwned_sc"),
        ("command substitution", "x$(touch pwned_ds)".into(), "pwned_ds"),
        ("backtick", "x`touch pwned_bt`".into(), "pwned_bt"),
    ]
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Field {
    Partition,
    Time,
    Results,
    SpecFileName,
    SpecDirectory,
    SpecId,
    SpecOutput,
    WorkingDirectory,
    BinaryPath,
    MirrorVariable,
    DataVariable,
}

const FIELDS: [Field; 11] = [
    Field::Partition,
    Field::Time,
    Field::Results,
    Field::SpecFileName,
    Field::SpecDirectory,
    Field::SpecId,
    Field::SpecOutput,
    Field::WorkingDirectory,
    Field::BinaryPath,
    Field::MirrorVariable,
    Field::DataVariable,
];

/// What a refusal of the field must name.
fn named(field: Field) -> &'static str {
    match field {
        Field::Partition => "--partition",
        Field::Time => "--time",
        Field::Results => "--results",
        Field::SpecFileName | Field::SpecDirectory => "spec path",
        Field::SpecId => "id",
        Field::SpecOutput => "output",
        Field::WorkingDirectory => "current directory",
        Field::BinaryPath => "binary",
        Field::MirrorVariable => "STRUCTDR_MIRROR",
        Field::DataVariable => "STRUCTDR_DATA",
    }
}

fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n"))
}

fn write_exec(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A program that appends its name and argv (NUL-separated, one invocation per line) to `log`.
fn argv_logger(name: &str, log: &Path) -> String {
    format!("#!/bin/bash\n{{ printf '%s\\0' {name} \"$@\"; printf '\\n'; }} >> '{}'\n", log.display())
}

/// Every file or directory under `dir` named exactly `name`.
fn find(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.file_name().is_some_and(|n| n == name) {
            out.push(p.clone());
        }
        if e.file_type().unwrap().is_dir() {
            out.extend(find(&p, name));
        }
    }
    out
}

/// The outcome of one case: refused (with the error) or run (the logged invocations).
enum Outcome {
    Refused(String),
    Ran,
}

/// One field carrying one payload, everything else ordinary.
fn run_case(root: &Path, field: Field, payload: &str, marker: &str) -> Result<Outcome, String> {
    let with = |f: Field, plain: &str| if f == field { format!("{plain}{payload}") } else { plain.to_string() };
    let case = root.join("case");
    let _ = std::fs::remove_dir_all(&case);
    let cwd = case.join(with(Field::WorkingDirectory, "work"));
    let spec_dir = cwd.join(with(Field::SpecDirectory, "specs"));
    let bin_dir = case.join(with(Field::BinaryPath, "bin"));
    let fake_path = case.join("fakebin");
    let log = case.join("argv.log");
    for d in [&cwd, &spec_dir, &bin_dir, &fake_path] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    // the binary, at a path of its own (scripts run the binary that wrote them)
    let binary = bin_dir.join("structdr");
    if std::fs::hard_link(env!("CARGO_BIN_EXE_structdr"), &binary).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_structdr"), &binary).unwrap();
    }
    let spec_name = with(Field::SpecFileName, "spec") + ".toml";
    let spec_rel = Path::new(&with(Field::SpecDirectory, "specs")).join(&spec_name);
    let output = if field == Field::SpecOutput { format!("output = {}\n", toml_string(&format!("out{payload}"))) } else { String::new() };
    std::fs::write(
        spec_dir.join(&spec_name),
        format!(
            "id = {}\ntitle = \"t\"\nseed = 1\n{output}[evaluation]\nprotocols = [\"loocv\"]\n[[dataset]]\nname = \"two_moons\"\nparams = {{ n = 40 }}\n[[method]]\nname = \"pca\"\ngrid = {{ dim = 2 }}\n",
            toml_string(&with(Field::SpecId, "t"))
        ),
    )
    .unwrap();
    // relative, as usually given: the scripts get it made absolute
    let results_rel = with(Field::Results, "results");
    let results = cwd.join(&results_rel);
    let mut cmd = Command::new(&binary);
    cmd.current_dir(&cwd)
        .env("STRUCTDR_NO_REEXEC", "1")
        .env("STRUCTDR_OFFLINE", "1")
        .env("STRUCTDR_MIRROR", with(Field::MirrorVariable, "/srv/mirror"))
        .env("STRUCTDR_DATA", with(Field::DataVariable, "/srv/data"))
        .env_remove("OPENBLAS_CORETYPE")
        .arg("slurm")
        .arg(&spec_rel)
        .args(["--tasks", "2", "--partition", &with(Field::Partition, "short"), "--time", &with(Field::Time, "1:00:00"), "--results"])
        .arg(&results_rel);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    if stderr.contains("panicked") {
        return Err(format!("panicked: {stderr}"));
    }
    let scripts: Vec<PathBuf> = find(&case, "array.sbatch").into_iter().chain(find(&case, "tables.sbatch")).collect();
    if !out.status.success() {
        if out.status.code() != Some(1) || !stderr.contains(named(field)) {
            return Err(format!("refused without naming {}: exit {:?}: {stderr}", named(field), out.status.code()));
        }
        if !scripts.is_empty() {
            return Err(format!("refused, yet scripts were written: {scripts:?}"));
        }
        return Ok(Outcome::Refused(stderr.trim().to_string()));
    }
    if scripts.len() != 2 {
        return Err(format!("accepted, but {} scripts were written", scripts.len()));
    }
    // The binary's place taken by a fake that only logs; sbatch and srun likewise.
    std::fs::remove_file(&binary).unwrap();
    write_exec(&binary, &argv_logger("structdr", &log));
    for name in ["sbatch", "srun"] {
        write_exec(&fake_path.join(name), &argv_logger(name, &log));
    }
    let spec_abs = cwd.join(&spec_rel).display().to_string();
    let results_abs = results.display().to_string();
    for script in &scripts {
        let syntax = Command::new("bash").arg("-n").arg(script).output().unwrap();
        if !syntax.status.success() {
            return Err(format!("bash -n {}: {}", script.display(), String::from_utf8_lossy(&syntax.stderr)));
        }
        let _ = std::fs::remove_file(&log);
        let ran = Command::new("bash")
            .arg(script)
            .current_dir(&case)
            .env("PATH", format!("{}:/usr/bin:/bin", fake_path.display()))
            .env("SLURM_ARRAY_TASK_ID", "1")
            .env("SLURM_CPUS_PER_TASK", "1")
            .output()
            .unwrap();
        if !ran.status.success() {
            return Err(format!("bash {}: exit {:?}: {}", script.display(), ran.status.code(), String::from_utf8_lossy(&ran.stderr)));
        }
        let logged = std::fs::read(&log).unwrap_or_default();
        let calls: Vec<Vec<String>> = logged
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| l.split(|&b| b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect())
            .collect();
        let tail: &[&str] =
            if script.ends_with("array.sbatch") { &["--shard", "1/2", "-j", "1", "--quiet"] } else { &["--max-cells", "0", "-j", "1", "--fail-on-error"] };
        let mut want: Vec<String> = ["structdr", "run", &spec_abs, "--results", &results_abs].iter().map(|s| s.to_string()).collect();
        want.extend(tail.iter().map(|s| s.to_string()));
        if calls != [want.clone()] {
            return Err(format!("{} ran {calls:?}, not only {want:?}", script.display()));
        }
    }
    let hits = find(root, marker);
    if !hits.is_empty() {
        return Err(format!("the payload ran: {hits:?}"));
    }
    // The exported values arrive whole.
    let array = std::fs::read_to_string(scripts.iter().find(|s| s.ends_with("array.sbatch")).unwrap()).unwrap();
    let exported = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "{}\nprintf '%s\\0' \"$STRUCTDR_MIRROR\" \"$STRUCTDR_DATA\"",
            array.lines().filter(|l| l.starts_with("export ")).collect::<Vec<_>>().join("\n")
        ))
        .output()
        .unwrap();
    let got: Vec<String> = exported.stdout.split(|&b| b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
    if got != [with(Field::MirrorVariable, "/srv/mirror"), with(Field::DataVariable, "/srv/data")] {
        return Err(format!("exports read back as {got:?}"));
    }
    if !find(root, marker).is_empty() {
        return Err("the payload ran from an export".into());
    }
    Ok(Outcome::Ran)
}

#[test]
fn no_value_written_into_a_slurm_script_can_run_a_command() {
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (mut failures, mut refused, mut ran) = (Vec::new(), 0, 0);
    for field in FIELDS {
        for (what, payload, marker) in payloads() {
            match run_case(root.path(), field, &payload, marker) {
                Ok(Outcome::Refused(e)) => {
                    refused += 1;
                    eprintln!("{field:?} / {what}: refused: {}", e.lines().next().unwrap_or(""));
                }
                Ok(Outcome::Ran) => {
                    ran += 1;
                    eprintln!("{field:?} / {what}: quoted, ran structdr only");
                }
                Err(e) => failures.push(format!("{field:?} / {what}: {e}")),
            }
        }
    }
    eprintln!("{refused} refused, {ran} ran structdr only, {} failed", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // a value that must be refused is refused, whatever else is true
    assert!(refused >= FIELDS.len() + 2 * 4, "too few refusals: {refused}");
    assert!(ran > 0, "no case produced scripts");
}

#[test]
fn partition_time_and_id_follow_slurms_syntax() {
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = root.path();
    std::fs::write(
        d.join("s.toml"),
        "id = \"good.id_1-x\"\ntitle = \"t\"\n[evaluation]\nprotocols = [\"loocv\"]\n[[dataset]]\nname = \"two_moons\"\nparams = { n = 40 }\n[[method]]\nname = \"pca\"\ngrid = { dim = 2 }\n",
    )
    .unwrap();
    let slurm = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_structdr"))
            .current_dir(d)
            .env("STRUCTDR_NO_REEXEC", "1")
            .args(["slurm", "s.toml", "--tasks", "2", "--results", "r"])
            .args(extra)
            .output()
            .unwrap()
    };
    for t in ["90", "90:30", "2:00:00", "1-12", "1-12:30", "1-12:30:15", "UNLIMITED"] {
        let out = slurm(&["--time", t, "--partition", "short,long"]);
        assert!(out.status.success(), "--time {t}: {}", String::from_utf8_lossy(&out.stderr));
        let array = std::fs::read_to_string(d.join("r/good.id_1-x/slurm/array.sbatch")).unwrap();
        assert!(array.contains(&format!("#SBATCH --time='{t}'\n")) && array.contains("#SBATCH --partition='short,long'\n"), "{array}");
    }
    // an empty OPENBLAS_CORETYPE (what the justfile exports on a CPU without AVX-512) means unset:
    // not an error, and not carried into the scripts
    let out = Command::new(env!("CARGO_BIN_EXE_structdr"))
        .current_dir(d)
        .env("STRUCTDR_NO_REEXEC", "1")
        .env("OPENBLAS_CORETYPE", "")
        .args(["slurm", "s.toml", "--tasks", "2", "--results", "r"])
        .output()
        .unwrap();
    assert!(out.status.success(), "empty OPENBLAS_CORETYPE: {}", String::from_utf8_lossy(&out.stderr));
    let array = std::fs::read_to_string(d.join("r/good.id_1-x/slurm/array.sbatch")).unwrap();
    assert!(!array.contains("OPENBLAS_CORETYPE"), "{array}");
    for t in ["1:2:3:4", "1-", "1h", "tomorrow"] {
        let out = slurm(&["--time", t]);
        assert_eq!(out.status.code(), Some(1), "--time {t} accepted");
        assert!(String::from_utf8_lossy(&out.stderr).contains("is not a Slurm time limit"), "{}", String::from_utf8_lossy(&out.stderr));
    }
    for id in ["-x", ".x", "a b", "a;b", "ä"] {
        std::fs::write(
            d.join("b.toml"),
            format!(
                "id = {}\ntitle = \"t\"\n[evaluation]\nprotocols = [\"loocv\"]\n[[dataset]]\nname = \"two_moons\"\n[[method]]\nname = \"pca\"\n",
                toml_string(id)
            ),
        )
        .unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_structdr")).current_dir(d).env("STRUCTDR_NO_REEXEC", "1").args(["check", "b.toml"]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "id {id:?} accepted");
        assert!(String::from_utf8_lossy(&out.stderr).contains("id = "), "{}", String::from_utf8_lossy(&out.stderr));
    }
}
