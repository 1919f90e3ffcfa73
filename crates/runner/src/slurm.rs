//! Grids on a Slurm cluster: `structdr slurm SPEC --tasks N` writes an sbatch job array whose task
//! `i` runs `structdr run SPEC --shard i/N` (a deterministic share of the missing cells, by content
//! key; every task writes into the one record store, one atomic file per cell, claims keeping two
//! tasks off one cell), and a job that writes the tables and figures from the records once the
//! array has finished (`--dependency=afterany`), and submits both with `--submit`.
//!
//! Slurm schedules; structdr only splits. A failed or timed-out task is resubmitted alone
//! (`sbatch --array=3,7 array.sbatch`), and any re-submit computes only what is missing.
//!
//! Nothing written into a script can steer it: every value is checked first (no control
//! characters; Slurm's syntax for `--partition` and `--time`; spec ids of a safe character set,
//! [`crate::spec::check_id`]) and every interpolated value is single-quoted by one function,
//! [`sh`] ([`render`]; docs/cluster.md, "What goes into the scripts").

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What `structdr slurm` writes and submits.
#[derive(Debug, Clone)]
pub struct SlurmOptions {
    /// Array tasks (shards).
    pub tasks: usize,
    /// `--partition`, when the cluster needs one.
    pub partition: Option<String>,
    /// `--time` of each array task (Slurm's formats, e.g. `2:00:00`).
    pub time: Option<String>,
    /// `--cpus-per-task`; each task runs that many cells at once (`-j`).
    pub cpus_per_task: usize,
    /// Results root the tasks write into (made absolute).
    pub results: PathBuf,
    /// Submit with `sbatch` after writing.
    pub submit: bool,
}

/// The written scripts.
#[derive(Debug, Clone)]
pub struct Scripts {
    /// The job array (`array.sbatch`).
    pub array: PathBuf,
    /// The tables-and-figures job (`tables.sbatch`).
    pub tables: PathBuf,
    /// Directory of the task logs.
    pub logs: PathBuf,
}

/// `'...'`: the one quoting of every value a generated script holds, for bash and for sbatch's
/// `#SBATCH` parser alike (an embedded `'` is written `'\''`). Inside single quotes bash expands
/// nothing (`$`, backticks, `;`, `\`, newlines are plain characters), so a quoted value is one
/// argument, whatever it holds; [`check_text`] still refuses control characters first, so no
/// value can break a line of the script (a comment, a directive) even where it is quoted.
pub fn sh(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A value for a generated script: refused with the field named when it is empty or holds a
/// control character (newline, carriage return, tab, NUL, escape...): a newline would end the
/// line it is written on and start a command of its own.
pub fn check_text(field: &str, value: &str) -> Result<()> {
    if value.is_empty() {
        bail!("{field} is empty");
    }
    if let Some(c) = value.chars().find(|c| c.is_control()) {
        bail!("{field} {:?} holds the control character {c:?}: a value written into a Slurm script must be one line of printable text", value);
    }
    Ok(())
}

/// A path as text for a script: valid UTF-8 (else it cannot be written faithfully) and
/// [`check_text`].
fn path_text(field: &str, p: &Path) -> Result<String> {
    let s = p.to_str().ok_or_else(|| anyhow::anyhow!("{field} {:?} is not valid UTF-8, which a Slurm script cannot hold faithfully", p))?;
    check_text(field, s)?;
    Ok(s.to_string())
}

/// `--partition`: a partition name or a comma-separated list of them (Slurm's syntax), each of
/// `A-Z a-z 0-9 _ . -`.
pub fn check_partition(p: &str) -> Result<()> {
    check_text("--partition", p)?;
    let name_ok = |n: &str| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if !p.split(',').all(name_ok) {
        bail!("--partition {p:?} is not a partition name: Slurm partition names are letters, digits, '_', '.' and '-' (a list separates names with ',')");
    }
    Ok(())
}

/// `--time`: one of Slurm's time formats, `minutes`, `minutes:seconds`, `hours:minutes:seconds`,
/// `days-hours`, `days-hours:minutes`, `days-hours:minutes:seconds`, or `UNLIMITED` / `INFINITE`.
pub fn check_time(t: &str) -> Result<()> {
    check_text("--time", t)?;
    let digits = |s: &str| !s.is_empty() && s.len() <= 9 && s.bytes().all(|b| b.is_ascii_digit());
    let ok = if t == "UNLIMITED" || t == "INFINITE" {
        true
    } else {
        match t.split_once('-') {
            // days-hours[:minutes[:seconds]]
            Some((days, rest)) => digits(days) && (1..=3).contains(&rest.split(':').count()) && rest.split(':').all(digits),
            // minutes[:seconds] or hours:minutes:seconds
            None => (1..=3).contains(&t.split(':').count()) && t.split(':').all(digits),
        }
    };
    if !ok {
        bail!(
            "--time {t:?} is not a Slurm time limit: give minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes or days-hours:minutes:seconds (e.g. 90, 2:00:00, 1-12), or UNLIMITED"
        );
    }
    Ok(())
}

/// Environment the tasks need that Slurm would not carry to another node on its own, as set in
/// this process. An empty value means unset (the justfile exports `OPENBLAS_CORETYPE=""` on a CPU
/// without AVX-512, leaving OpenBLAS to pick its kernels) and is not carried.
fn exports_from_env() -> Vec<(String, String)> {
    ["OPENBLAS_CORETYPE", "STRUCTDR_MIRROR", "STRUCTDR_DATA"]
        .iter()
        .filter_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()).map(|v| (k.to_string(), v)))
        .collect()
}

/// Everything a pair of scripts is made of, as text: what [`render`] interpolates, each value
/// checked before it is written.
#[derive(Debug, Clone)]
pub struct ScriptValues {
    /// The spec as given on the command line (in the scripts' comments).
    pub spec: String,
    /// The spec's absolute path (the argument of `structdr run`).
    pub spec_abs: String,
    /// The spec's id (the job name).
    pub id: String,
    /// Array tasks.
    pub tasks: usize,
    /// CPUs per task.
    pub cpus_per_task: usize,
    /// `--partition`, if any.
    pub partition: Option<String>,
    /// `--time`, if any.
    pub time: Option<String>,
    /// The directory the jobs run in (the current directory when the scripts were written).
    pub cwd: String,
    /// The `structdr` binary the jobs run.
    pub binary: String,
    /// The absolute results root.
    pub results: String,
    /// The directory of the scripts (`<results>/<output>/slurm`); the logs go to its `logs/`.
    pub dir: String,
    /// Environment variables exported to the tasks (name, value).
    pub exports: Vec<(String, String)>,
}

impl ScriptValues {
    /// Every value checked, each refusal naming its field: no control characters anywhere,
    /// Slurm's syntax for the partition and the time limit, and no `\` in the log directory
    /// (sbatch's `#SBATCH` parser reads it as an escape, even inside quotes).
    pub fn check(&self) -> Result<()> {
        if self.tasks == 0 || self.cpus_per_task == 0 {
            bail!("--tasks and --cpus-per-task must be at least 1");
        }
        check_text("the spec path", &self.spec)?;
        check_text("the spec's absolute path", &self.spec_abs)?;
        crate::spec::check_id(&self.id).map_err(|e| anyhow::anyhow!("the spec's {e}"))?;
        if let Some(p) = &self.partition {
            check_partition(p)?;
        }
        if let Some(t) = &self.time {
            check_time(t)?;
        }
        check_text("the current directory", &self.cwd)?;
        check_text("the structdr binary's path", &self.binary)?;
        check_text("--results", &self.results)?;
        check_text("the script directory", &self.dir)?;
        if self.dir.contains('\\') {
            bail!("the script directory {:?} holds a '\\', which sbatch's #SBATCH parser reads as an escape: choose a --results path without one", self.dir);
        }
        for (k, v) in &self.exports {
            if !(k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && k.chars().next().is_some_and(|c| !c.is_ascii_digit())) {
                bail!("environment variable name {k:?} is not a shell name");
            }
            check_text(&format!("the environment variable {k}"), v)?;
        }
        Ok(())
    }

    /// The log directory, `<dir>/logs`.
    pub fn logs(&self) -> String {
        format!("{}/logs", self.dir)
    }

    /// The array script's path, `<dir>/array.sbatch`.
    pub fn array_path(&self) -> String {
        format!("{}/array.sbatch", self.dir)
    }
}

/// `--output` of a directive: `%` doubled (sbatch reads `%A`, `%a`, `%j`... in the name as
/// patterns and `%%` as a `%`), then quoted with [`sh`].
fn log_pattern(logs: &str, name: &str) -> String {
    sh(&format!("{}/{name}", logs.replace('%', "%%")))
}

/// The two scripts (`array.sbatch`, `tables.sbatch`) for `v`, after [`ScriptValues::check`]:
/// every interpolated value single-quoted with [`sh`], numbers as numbers.
pub fn render(v: &ScriptValues) -> Result<(String, String)> {
    v.check()?;
    let (n, c) = (v.tasks, v.cpus_per_task);
    let mut head = String::new();
    if let Some(p) = &v.partition {
        head += &format!("#SBATCH --partition={}\n", sh(p));
    }
    let exports: String = v.exports.iter().map(|(k, x)| format!("export {k}={}\n", sh(x))).collect();
    let common = format!("set -euo pipefail\ncd {}\n{exports}", sh(&v.cwd));
    // the command both jobs run, up to its last arguments
    let run = format!("exec {} run {} --results {}", sh(&v.binary), sh(&v.spec_abs), sh(&v.results));
    let array = format!(
        "#!/bin/bash\n\
         # structdr: the cells of {spec} split over {n} array tasks (written by `structdr slurm`).\n\
         # Task i computes the missing cells of shard i/{n} (by content key) into one record store;\n\
         # resubmit failed tasks alone with `sbatch --array=3,7 {array}`: a re-run computes only what\n\
         # is missing.\n\
         #SBATCH --job-name={job}\n\
         #SBATCH --array=1-{n}\n\
         #SBATCH --cpus-per-task={c}\n\
         {time}{head}#SBATCH --output={out}\n\
         {common}\
         {run} --shard \"${{SLURM_ARRAY_TASK_ID}}/{n}\" -j \"${{SLURM_CPUS_PER_TASK:-{c}}}\" --quiet\n",
        spec = sh(&v.spec),
        array = sh(&v.array_path()),
        job = sh(&format!("structdr-{}", v.id)),
        time = v.time.as_ref().map(|t| format!("#SBATCH --time={}\n", sh(t))).unwrap_or_default(),
        out = log_pattern(&v.logs(), "array-%A_%a.out"),
    );
    let tables = format!(
        "#!/bin/bash\n\
         # structdr: tables and figures of {spec} from the records the array wrote (submitted with\n\
         # --dependency=afterany on the array; computes no cell; exit 2 when a cell failed).\n\
         #SBATCH --job-name={job}\n\
         #SBATCH --cpus-per-task={c}\n\
         {head}#SBATCH --output={out}\n\
         {common}\
         {run} --max-cells 0 -j \"${{SLURM_CPUS_PER_TASK:-{c}}}\" --fail-on-error\n",
        spec = sh(&v.spec),
        job = sh(&format!("structdr-{}-tables", v.id)),
        out = log_pattern(&v.logs(), "tables-%j.out"),
    );
    Ok((array, tables))
}

/// Writes the two sbatch scripts for `spec` (as given on the command line, relative to the
/// current directory) under `<results>/<spec output>/slurm/`. Every value is checked before
/// anything is written ([`ScriptValues::check`]): a refused value leaves no script behind.
pub fn write_scripts(spec: &Path, opts: &SlurmOptions) -> Result<Scripts> {
    if opts.tasks == 0 || opts.cpus_per_task == 0 {
        bail!("--tasks and --cpus-per-task must be at least 1");
    }
    // the command-line values first: a bad --partition or --time is refused before the spec loads
    if let Some(p) = &opts.partition {
        check_partition(p)?;
    }
    if let Some(t) = &opts.time {
        check_time(t)?;
    }
    path_text("--results", &opts.results)?;
    path_text("the spec path", spec)?;
    // the directory every relative path is made absolute in, before any of them
    let cwd = std::env::current_dir()?;
    path_text("the current directory", &cwd)?;
    let plan = crate::spec::load(spec).map_err(|e| anyhow::anyhow!("{e}"))?;
    crate::data::check_inputs(&plan).map_err(|e| anyhow::anyhow!("{e}"))?;
    // the tasks would be refused one by one: refuse before anything is submitted
    crate::store::SpecLedger::check_plan(&plan, &opts.results, false)?;
    let results = if opts.results.is_absolute() { opts.results.clone() } else { cwd.join(&opts.results) };
    let spec_abs = if spec.is_absolute() { spec.to_path_buf() } else { cwd.join(spec) };
    let binary = std::env::current_exe().context("cannot locate this binary")?;
    let dir = plan.output_dir(&results).join("slurm");
    let values = ScriptValues {
        spec: path_text("the spec path", spec)?,
        spec_abs: path_text("the spec's absolute path", &spec_abs)?,
        id: plan.spec.id.clone(),
        tasks: opts.tasks,
        cpus_per_task: opts.cpus_per_task,
        partition: opts.partition.clone(),
        time: opts.time.clone(),
        cwd: path_text("the current directory", &cwd)?,
        binary: path_text("the structdr binary's path", &binary)?,
        results: path_text("--results", &results)?,
        dir: path_text("the script directory", &dir)?,
        exports: exports_from_env(),
    };
    let (array, tables) = render(&values)?;
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
    let scripts = Scripts { array: dir.join("array.sbatch"), tables: dir.join("tables.sbatch"), logs };
    crate::files::atomic_write(&scripts.array, array.as_bytes())?;
    crate::files::atomic_write(&scripts.tables, tables.as_bytes())?;
    Ok(scripts)
}

/// `sbatch --parsable [args] script`: the job id.
fn sbatch(args: &[String], script: &Path) -> Result<String> {
    let out = Command::new("sbatch").arg("--parsable").args(args).arg(script).output().context("cannot run sbatch (is Slurm installed and on the PATH?)")?;
    if !out.status.success() {
        bail!("sbatch {}: {}", script.display(), String::from_utf8_lossy(&out.stderr).trim());
    }
    // `--parsable` prints `id` or `id;cluster`
    let text = String::from_utf8_lossy(&out.stdout);
    let id = text.trim().split(';').next().unwrap_or("").to_string();
    if id.is_empty() {
        bail!("sbatch {}: no job id in its output '{}'", script.display(), text.trim());
    }
    Ok(id)
}

/// Submits the array, then the tables job after it; returns both job ids.
pub fn submit(scripts: &Scripts) -> Result<(String, String)> {
    let array = sbatch(&[], &scripts.array)?;
    let tables = sbatch(&[format!("--dependency=afterany:{array}")], &scripts.tables)?;
    Ok((array, tables))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quoting() {
        assert_eq!(sh("a b"), "'a b'");
        assert_eq!(sh("it's"), r"'it'\''s'");
        assert_eq!(sh("$(x) `y`; z"), "'$(x) `y`; z'");
    }

    #[test]
    fn slurm_time_and_partition_syntax() {
        for t in ["90", "90:30", "2:00:00", "1-12", "1-12:30", "1-12:30:15", "UNLIMITED", "INFINITE", "0"] {
            assert!(check_time(t).is_ok(), "{t}");
        }
        for t in ["", "1:", ":1", "1:2:3:4", "1-", "-1", "1-2:3:4:5", "1h", "1:00:00;reboot", "1:00\n", "$(x)", "1 - 2", "unlimited"] {
            let e = check_time(t).unwrap_err().to_string();
            assert!(e.contains("--time"), "{t}: {e}");
        }
        for p in ["short", "gpu-a100", "a,b.c_d"] {
            assert!(check_partition(p).is_ok(), "{p}");
        }
        for p in ["", "a b", "a,,b", "a;b", "$(x)", "a\nb", "a'b", ","] {
            let e = check_partition(p).unwrap_err().to_string();
            assert!(e.contains("--partition"), "{p}: {e}");
        }
    }

    fn values() -> ScriptValues {
        ScriptValues {
            spec: "s p'c $(touch x) `y`; z.toml".into(),
            spec_abs: "/w/s p'c $(touch x) `y`; z.toml".into(),
            id: "run-1".into(),
            tasks: 3,
            cpus_per_task: 2,
            partition: Some("short,gpu".into()),
            time: Some("1-12:30".into()),
            cwd: "/h/a b'c".into(),
            binary: "/h/bin$(id)/structdr".into(),
            results: "/r/x;y".into(),
            dir: "/r/x;y/o%j/slurm".into(),
            exports: vec![("STRUCTDR_MIRROR".into(), "v'al\\ue".into())],
        }
    }

    #[test]
    fn hostile_values_are_quoted_or_refused_with_their_field_named() {
        let (array, tables) = render(&values()).unwrap();
        assert!(array.contains("exec '/h/bin$(id)/structdr' run '/w/s p'\\''c $(touch x) `y`; z.toml' --results '/r/x;y' --shard"), "{array}");
        assert!(array.contains("#SBATCH --output='/r/x;y/o%%j/slurm/logs/array-%A_%a.out'"), "{array}");
        assert!(tables.contains("#SBATCH --partition='short,gpu'") && array.contains("#SBATCH --time='1-12:30'"));
        assert!(array.contains("export STRUCTDR_MIRROR='v'\\''al\\ue'"), "{array}");
        let refused = |v: ScriptValues, field: &str| {
            let e = render(&v).unwrap_err().to_string();
            assert!(e.contains(field), "expected the field {field} named: {e}");
        };
        refused(ScriptValues { spec: "a\nb.toml".into(), ..values() }, "spec path");
        refused(ScriptValues { id: "x;y".into(), ..values() }, "id");
        refused(ScriptValues { partition: Some("short\n#SBATCH --x".into()), ..values() }, "--partition");
        refused(ScriptValues { time: Some("1:00:00 && reboot".into()), ..values() }, "--time");
        refused(ScriptValues { cwd: "/h\r".into(), ..values() }, "current directory");
        refused(ScriptValues { binary: "/b\u{1b}[2J".into(), ..values() }, "binary");
        refused(ScriptValues { results: "/r\n".into(), ..values() }, "--results");
        refused(ScriptValues { dir: "/r\\x/slurm".into(), ..values() }, "script directory");
        refused(ScriptValues { exports: vec![("STRUCTDR_DATA".into(), "a\nb".into())], ..values() }, "STRUCTDR_DATA");
    }
}
