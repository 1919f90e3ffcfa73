//! Grids on a Slurm cluster: `structdr slurm SPEC --tasks N` writes an sbatch job array whose task
//! `i` runs `structdr run SPEC --shard i/N` (a deterministic share of the missing cells, by content
//! key; every task writes into the one record store, one atomic file per cell, claims keeping two
//! tasks off one cell), and a job that writes the tables and figures from the records once the
//! array has finished (`--dependency=afterany`), and submits both with `--submit`.
//!
//! Slurm schedules; structdr only splits. A failed or timed-out task is resubmitted alone
//! (`sbatch --array=3,7 array.sbatch`), and any re-submit computes only what is missing.

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

/// `'...'` for a shell, with embedded quotes escaped.
fn sh(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Environment the tasks need that Slurm would not carry to another node on its own.
fn exports() -> String {
    ["OPENBLAS_CORETYPE", "STRUCTDR_MIRROR", "STRUCTDR_DATA"].iter().filter_map(|k| std::env::var(k).ok().map(|v| format!("export {k}={}\n", sh(&v)))).collect()
}

/// Writes the two sbatch scripts for `spec` (as given on the command line, relative to the
/// current directory) under `<results>/<spec output>/slurm/`.
pub fn write_scripts(spec: &Path, opts: &SlurmOptions) -> Result<Scripts> {
    if opts.tasks == 0 || opts.cpus_per_task == 0 {
        bail!("--tasks and --cpus-per-task must be at least 1");
    }
    let plan = crate::spec::load(spec).map_err(|e| anyhow::anyhow!("{e}"))?;
    crate::spec::check_environment(&plan).map_err(|e| anyhow::anyhow!("{e}"))?;
    let cwd = std::env::current_dir()?;
    let results = if opts.results.is_absolute() { opts.results.clone() } else { cwd.join(&opts.results) };
    let spec_abs = if spec.is_absolute() { spec.to_path_buf() } else { cwd.join(spec) };
    let binary = std::env::current_exe().context("cannot locate this binary")?;
    let dir = plan.output_dir(&results).join("slurm");
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
    let id = &plan.spec.id;
    let mut head = String::new();
    if let Some(p) = &opts.partition {
        head += &format!("#SBATCH --partition={p}\n");
    }
    let (n, c) = (opts.tasks, opts.cpus_per_task);
    let common = format!("set -euo pipefail\ncd {}\n{}", sh(&cwd.display().to_string()), exports());
    // the command both jobs run, up to its last arguments
    let run =
        format!("exec {} run {} --results {}", sh(&binary.display().to_string()), sh(&spec_abs.display().to_string()), sh(&results.display().to_string()));
    let array = format!(
        "#!/bin/bash\n\
         # structdr: the cells of {spec} split over {n} array tasks (written by `structdr slurm`).\n\
         # Task i computes the missing cells of shard i/{n} (by content key) into one record store;\n\
         # resubmit failed tasks alone with `sbatch --array=3,7 {array}`: a re-run computes only what\n\
         # is missing.\n\
         #SBATCH --job-name=structdr-{id}\n\
         #SBATCH --array=1-{n}\n\
         #SBATCH --cpus-per-task={c}\n\
         {time}{head}#SBATCH --output={logs}/array-%A_%a.out\n\
         {common}\
         {run} --shard \"${{SLURM_ARRAY_TASK_ID}}/{n}\" -j \"${{SLURM_CPUS_PER_TASK:-{c}}}\" --quiet\n",
        spec = spec.display(),
        array = dir.join("array.sbatch").display(),
        time = opts.time.as_ref().map(|t| format!("#SBATCH --time={t}\n")).unwrap_or_default(),
        logs = logs.display(),
    );
    let tables = format!(
        "#!/bin/bash\n\
         # structdr: tables and figures of {spec} from the records the array wrote (submitted with\n\
         # --dependency=afterany on the array; computes no cell; exit 2 when a cell failed).\n\
         #SBATCH --job-name=structdr-{id}-tables\n\
         #SBATCH --cpus-per-task={c}\n\
         {head}#SBATCH --output={logs}/tables-%j.out\n\
         {common}\
         {run} --max-cells 0 -j \"${{SLURM_CPUS_PER_TASK:-{c}}}\" --fail-on-error\n",
        spec = spec.display(),
        logs = logs.display(),
    );
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
    }
}
