//! Nightly tracking: a fixed suite of quality cells and speed cases, run on a fixed machine,
//! appended to an append-only history per machine, and compared with the series' past.
//!
//! The suite (`experiments/nightly/suite.toml`) names ordinary experiment specs. Every spec runs
//! through the command line of the binary under test (`structdr run SPEC --results SCRATCH`), into
//! a scratch record store that is deleted afterwards, so a nightly run always recomputes, never
//! reads the cell cache and never writes into the tables' stores; the same path serves past
//! commits (backfill: each built in its own worktree), whose binaries share that interface.
//!
//! - **Quality**: every record of the quality specs gives a cell (`spec/dataset/method params`)
//!   with its metrics and its method version. A metric must equal the last accepted run's value
//!   of the same cell and method version (`|new - old| <= tolerance`, 0 by default: the cells
//!   are deterministic for one OpenBLAS kernel set, and the kernel set is part of the series).
//!   A cell that succeeded and now fails is a regression too. A method whose numerics change on
//!   purpose bumps its version, which starts a new series for its cells.
//! - **Speed**: every speed spec runs `samples` times one cell at a time (`-j 1`); each cell gives
//!   two cases, `fit` and `evaluation`, with their raw samples. With `m` the median of the last
//!   `window` accepted runs' medians, `x` the new median and the noise `s` the larger of 1.4826
//!   MAD of those medians (three runs or more) and 1.4826 MAD of the new samples, a step is a
//!   regression when `x - m > max(min_relative m, noise_factor s)`: it must exceed the noise the
//!   series shows, as asv's step detection asks, and be large enough to matter.
//!
//! A run with no regression is accepted (the baseline for the next); `--accept` accepts an
//! intended change. History files are JSON lines under `results/history/<machine>.jsonl`, one
//! per machine fingerprint (CPU model, logical CPUs, BLAS library and kernel set, thread layout).

use crate::store::{self, Record, Status};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A nightly suite file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    /// Name of the suite (history entries carry it; series compare within one suite).
    pub id: String,
    /// One line saying what the suite is.
    #[serde(default)]
    pub title: String,
    /// Specs whose cells' metrics are tracked.
    #[serde(default)]
    pub quality: Vec<QualitySpec>,
    /// Specs whose cells' fit and evaluation times are tracked.
    #[serde(default)]
    pub speed: Vec<SpeedSpec>,
    /// Alarm thresholds.
    #[serde(default)]
    pub alarm: Alarm,
    /// Link template of a commit in the history page, `{commit}` replaced by the full hash
    /// (e.g. `https://github.com/org/structdr/commit/{commit}`); without it commits are plain text.
    #[serde(default)]
    pub commit_url: Option<String>,
}

/// A quality spec of the suite.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QualitySpec {
    /// The spec file, relative to the directory structdr runs in.
    pub spec: PathBuf,
    /// Largest accepted `|new - old|` of a metric (0: bit-identical).
    #[serde(default)]
    pub tolerance: f64,
}

/// A speed spec of the suite.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpeedSpec {
    /// The spec file, relative to the directory structdr runs in.
    pub spec: PathBuf,
    /// Times the spec runs (samples per case).
    #[serde(default = "default_samples")]
    pub samples: usize,
}

fn default_samples() -> usize {
    5
}

/// When a timing step is a regression (see the module documentation).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Alarm {
    /// Smallest relative slow-down that counts (0.10: 10%).
    pub min_relative: f64,
    /// How many noise units a step must exceed.
    pub noise_factor: f64,
    /// Accepted runs the noise model looks back over.
    pub window: usize,
    /// Smallest step in seconds that counts: cases of a millisecond are at the timer's and the
    /// scheduler's mercy.
    pub min_seconds: f64,
}

impl Default for Alarm {
    fn default() -> Self {
        Alarm { min_relative: 0.10, noise_factor: 3.0, window: 10, min_seconds: 0.005 }
    }
}

impl Suite {
    /// Reads and checks a suite file: every named spec exists and parses, samples >= 1,
    /// thresholds are finite and non-negative.
    pub fn load(path: &Path) -> Result<Suite> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read the suite {}", path.display()))?;
        let suite: Suite = toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        if suite.quality.is_empty() && suite.speed.is_empty() {
            bail!("{}: the suite names no [[quality]] and no [[speed]] spec", path.display());
        }
        for q in &suite.quality {
            if !(q.tolerance.is_finite() && q.tolerance >= 0.0) {
                bail!("{}: tolerance of {} must be finite and >= 0", path.display(), q.spec.display());
            }
        }
        for s in &suite.speed {
            if s.samples == 0 {
                bail!("{}: samples of {} must be >= 1", path.display(), s.spec.display());
            }
        }
        let a = suite.alarm;
        if !(a.min_relative.is_finite()
            && a.min_relative >= 0.0
            && a.noise_factor.is_finite()
            && a.noise_factor >= 0.0
            && a.window >= 1
            && a.min_seconds.is_finite()
            && a.min_seconds >= 0.0)
        {
            bail!("{}: [alarm] needs min_relative >= 0, noise_factor >= 0, min_seconds >= 0 and window >= 1", path.display());
        }
        for p in suite.quality.iter().map(|q| &q.spec).chain(suite.speed.iter().map(|s| &s.spec)) {
            crate::spec::load(p).map_err(|e| anyhow::anyhow!("suite {}: {e}", path.display()))?;
        }
        Ok(suite)
    }
}

/// What a series of timings and results is comparable within.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Fingerprint {
    /// CPU model and logical CPUs ([`store::machine`]).
    pub cpu: String,
    /// BLAS library (OpenBLAS's configuration string).
    pub blas: String,
    /// OpenBLAS kernel set (e.g. `SkylakeX`).
    pub kernel: String,
    /// Threads of the quality runs and of the speed runs.
    pub threads: String,
}

impl Fingerprint {
    /// This machine and process.
    pub fn current() -> Fingerprint {
        Fingerprint {
            cpu: store::machine(),
            blas: structdr_linalg::blas::config(),
            kernel: structdr_linalg::blas::core_name(),
            threads: format!("quality: rayon={} blas=1; speed: rayon=1 blas=1", rayon::current_num_threads()),
        }
    }

    /// The series' file stem: the CPU model, CPUs and kernel set, readable, plus 8 hex digits of
    /// the whole fingerprint (another BLAS build or thread layout starts another series).
    pub fn series(&self) -> String {
        let text = serde_json::to_string(self).expect("fingerprint serialises");
        let short: String = format!("{} {}", self.cpu, self.kernel)
            .to_ascii_lowercase()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect::<String>()
            .split('-')
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("-");
        format!("{short}-{}", &structdr_datasets::sha256_hex(text.as_bytes())[..8])
    }
}

/// One quality cell of a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct QualityCell {
    /// Method version of the record (a bump starts a new series for the cell).
    pub method_version: u32,
    /// `ok`, `failed` or `degenerate`.
    pub status: String,
    /// The record's metrics (finite values).
    pub metrics: BTreeMap<String, f64>,
    /// Tolerance the cell is compared under.
    pub tolerance: f64,
    /// The error of a failed or degenerate cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A regression found by [`compare`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Regression {
    /// `quality`, `failure` or `speed`.
    pub kind: String,
    /// The cell or case.
    pub id: String,
    /// The metric (quality), `status` (failure) or `median seconds` (speed).
    pub metric: String,
    /// The last accepted value (speed: the series median).
    pub old: Option<f64>,
    /// The new value (speed: the new median).
    pub new: Option<f64>,
    /// The last accepted run's commit: the regression lies in `since..commit`.
    pub since: String,
    /// How it was judged.
    pub detail: String,
}

/// One run of the suite: a line of the history file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// History format version.
    pub schema: u32,
    /// The suite's id.
    pub suite: String,
    /// Commit the binary was built from (`+dirty` when the checkout had changes).
    pub commit: String,
    /// Commit date (ISO 8601, from git).
    pub commit_date: String,
    /// Subject line of the commit.
    #[serde(default)]
    pub subject: String,
    /// When the run finished (seconds since the Unix epoch).
    pub finished_at: u64,
    /// The machine.
    pub machine: Fingerprint,
    /// Quality cells by id.
    pub quality: BTreeMap<String, QualityCell>,
    /// Speed cases by id: raw samples in seconds.
    pub speed: BTreeMap<String, Vec<f64>>,
    /// Problems running the suite (a spec that did not run, unreadable records).
    #[serde(default)]
    pub problems: Vec<String>,
    /// Regressions against the series' past.
    pub regressions: Vec<Regression>,
    /// Whether later runs compare with this one.
    pub accepted: bool,
    /// Whether `--accept` accepted it despite regressions.
    #[serde(default)]
    pub forced_accept: bool,
    /// Whether it was backfilled (`--commits`).
    #[serde(default)]
    pub backfill: bool,
    /// Wall time of the run, seconds.
    pub wall_seconds: f64,
}

/// History format version of new entries.
pub const HISTORY_SCHEMA: u32 = 1;

/// A cell's id: `spec/dataset/method params` (and `#r` for a repeated seed).
fn cell_id(spec_id: &str, r: &Record) -> String {
    let mut id = format!("{spec_id}/{}/{} {}", r.key.dataset, r.key.method, r.key.params_string());
    if let Some(rep) = r.key.repeat {
        id += &format!(" #{rep}");
    }
    id
}

/// Runs `spec` with `binary` (in `cwd`) into a fresh scratch results root and returns its
/// records; `jobs` limits the worker threads.
fn run_spec_with(binary: &Path, cwd: &Path, spec: &Path, jobs: Option<usize>) -> Result<(String, Vec<Record>)> {
    let plan = crate::spec::load(&cwd.join(spec)).map_err(|e| anyhow::anyhow!("{e}"))?;
    let scratch = tempfile::Builder::new().prefix("structdr-nightly-").tempdir().context("cannot create a scratch directory")?;
    let mut cmd = Command::new(binary);
    cmd.current_dir(cwd).arg("run").arg(spec).arg("--results").arg(scratch.path()).arg("--quiet");
    if let Some(j) = jobs {
        cmd.arg("-j").arg(j.to_string());
    }
    let out = cmd.output().with_context(|| format!("cannot run {}", binary.display()))?;
    let dir = plan.output_dir(scratch.path()).join(store::RECORDS_DIR);
    let records: Vec<Record> = if dir.is_dir() { store::Store::open(&dir)?.records()?.into_iter().filter_map(|(_, r)| r).collect() } else { Vec::new() };
    if records.is_empty() {
        let tail: String = String::from_utf8_lossy(&out.stderr).lines().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join(" | ");
        bail!("{} {}: no records ({}; {tail})", binary.display(), spec.display(), out.status);
    }
    Ok((plan.spec.id.clone(), records))
}

/// Progress lines of a run, unless quiet.
fn say(quiet: bool, msg: &str) {
    if !quiet {
        eprintln!("{msg}");
    }
}

/// Runs the suite with `binary` in `cwd` and returns the entry (regressions not yet judged).
pub fn run_suite(suite: &Suite, binary: &Path, cwd: &Path, quiet: bool) -> Entry {
    let t0 = std::time::Instant::now();
    let mut quality = BTreeMap::new();
    let mut speed: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut problems = Vec::new();
    for q in &suite.quality {
        let t = std::time::Instant::now();
        match run_spec_with(binary, cwd, &q.spec, None) {
            Ok((id, records)) => {
                for r in &records {
                    let metrics = r.metrics.iter().filter(|(_, v)| v.is_finite()).map(|(k, v)| (k.clone(), *v)).collect();
                    let status = match r.status {
                        Status::Ok => "ok",
                        Status::Failed => "failed",
                        Status::Degenerate => "degenerate",
                    };
                    quality.insert(
                        cell_id(&id, r),
                        QualityCell { method_version: r.key.method_version, status: status.into(), metrics, tolerance: q.tolerance, error: r.error.clone() },
                    );
                }
                say(quiet, &format!("nightly: quality {} ({} cells) in {:.1} s", q.spec.display(), records.len(), t.elapsed().as_secs_f64()));
            }
            Err(e) => problems.push(format!("quality {}: {e}", q.spec.display())),
        }
    }
    for s in &suite.speed {
        let t = std::time::Instant::now();
        for sample in 0..s.samples {
            match run_spec_with(binary, cwd, &s.spec, Some(1)) {
                Ok((id, records)) => {
                    for r in records.iter().filter(|r| r.status == Status::Ok) {
                        let base = cell_id(&id, r);
                        speed.entry(format!("{base}: fit")).or_default().push(r.fit_seconds);
                        speed.entry(format!("{base}: evaluation")).or_default().push(r.eval_seconds);
                    }
                }
                Err(e) => {
                    problems.push(format!("speed {} sample {}: {e}", s.spec.display(), sample + 1));
                    break;
                }
            }
        }
        say(quiet, &format!("nightly: speed {} x {} in {:.1} s", s.spec.display(), s.samples, t.elapsed().as_secs_f64()));
    }
    Entry {
        schema: HISTORY_SCHEMA,
        suite: suite.id.clone(),
        commit: String::new(),
        commit_date: String::new(),
        subject: String::new(),
        finished_at: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        machine: Fingerprint::current(),
        quality,
        speed,
        problems,
        regressions: Vec::new(),
        accepted: false,
        forced_accept: false,
        backfill: false,
        wall_seconds: t0.elapsed().as_secs_f64(),
    }
}

/// Median of `v` (NaN when empty).
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        0.5 * (s[n / 2 - 1] + s[n / 2])
    }
}

/// 1.4826 x the median absolute deviation: the standard deviation of normal data, robust to
/// outliers (0 for fewer than two values).
pub fn robust_spread(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = median(v);
    1.4826 * median(&v.iter().map(|x| (x - m).abs()).collect::<Vec<_>>())
}

/// The regressions of `new` against the accepted runs of its suite in `history` (in file order,
/// the last ones most recent).
pub fn compare(history: &[Entry], new: &Entry, alarm: &Alarm) -> Vec<Regression> {
    let accepted: Vec<&Entry> = history.iter().filter(|e| e.accepted && e.suite == new.suite).collect();
    let mut out = Vec::new();
    for (id, cell) in &new.quality {
        // the last accepted run that has this cell under the same method version
        let Some((prev, old)) = accepted.iter().rev().find_map(|e| e.quality.get(id).filter(|c| c.method_version == cell.method_version).map(|c| (*e, c)))
        else {
            continue;
        };
        if old.status == "ok" && cell.status != "ok" {
            out.push(Regression {
                kind: "failure".into(),
                id: id.clone(),
                metric: "status".into(),
                old: None,
                new: None,
                since: prev.commit.clone(),
                detail: format!("was ok, now {}: {}", cell.status, cell.error.clone().unwrap_or_default()),
            });
            continue;
        }
        for (metric, &was) in &old.metrics {
            let now = cell.metrics.get(metric).copied();
            let changed = match now {
                Some(v) => (v - was).abs() > cell.tolerance || (cell.tolerance == 0.0 && v.to_bits() != was.to_bits()),
                None => true,
            };
            if changed {
                out.push(Regression {
                    kind: "quality".into(),
                    id: id.clone(),
                    metric: metric.clone(),
                    old: Some(was),
                    new: now,
                    since: prev.commit.clone(),
                    detail: match now {
                        Some(v) => format!("changed by {:+.3e} (tolerance {})", v - was, cell.tolerance),
                        None => "no longer computed".into(),
                    },
                });
            }
        }
    }
    for (case, samples) in &new.speed {
        let past: Vec<(&Entry, f64)> =
            accepted.iter().rev().filter_map(|e| e.speed.get(case).filter(|s| !s.is_empty()).map(|s| (*e, median(s)))).take(alarm.window).collect();
        if past.is_empty() || samples.is_empty() {
            continue;
        }
        let medians: Vec<f64> = past.iter().map(|p| p.1).collect();
        let m = median(&medians);
        let series_noise = if medians.len() >= 3 { robust_spread(&medians) } else { 0.0 };
        let noise = series_noise.max(robust_spread(samples));
        let x = median(samples);
        let threshold = (alarm.min_relative * m).max(alarm.noise_factor * noise).max(alarm.min_seconds);
        if x - m > threshold {
            out.push(Regression {
                kind: "speed".into(),
                id: case.clone(),
                metric: "median seconds".into(),
                old: Some(m),
                new: Some(x),
                since: past[0].0.commit.clone(),
                detail: format!(
                    "{:+.1}% (median of {} accepted runs {m:.4} s, now {x:.4} s; step {:.4} s > max({:.0}% = {:.4} s, {} x noise {:.4} s, {} s))",
                    100.0 * (x - m) / m,
                    medians.len(),
                    x - m,
                    100.0 * alarm.min_relative,
                    alarm.min_relative * m,
                    alarm.noise_factor,
                    noise,
                    alarm.min_seconds
                ),
            });
        }
    }
    out
}

/// Reads a history file (missing: empty). A line that does not parse is an error naming it: the
/// file is append-only and committed, so a broken line is a corruption to look at, not to skip.
pub fn read_history(path: &Path) -> Result<Vec<Entry>> {
    crate::journal::read_lines(path)
}

/// Appends one entry as one line (a single write of the whole line, then fsync).
pub fn append_history(path: &Path, entry: &Entry) -> Result<()> {
    crate::journal::append_line(path, entry)
}

/// `git` in `dir`, trimmed stdout, or an error with its stderr.
fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git").current_dir(dir).args(args).output().context("cannot run git")?;
    if !out.status.success() {
        bail!("git {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Commit hash (with `+dirty` for a checkout with changes to tracked files outside `results/`),
/// date and subject.
fn commit_info(dir: &Path, rev: &str, check_dirty: bool) -> Result<(String, String, String)> {
    let line = git(dir, &["log", "-1", "--format=%H%x09%cI%x09%s", rev])?;
    let mut parts = line.splitn(3, '\t');
    let (hash, date, subject) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string());
    // changes under results/ (the history itself, regenerated tables) are not changes of the code
    let dirty = check_dirty && !git(dir, &["status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results"])?.is_empty();
    Ok((if dirty { format!("{hash}+dirty") } else { hash }, date, subject))
}

/// Options of `structdr nightly`.
#[derive(Debug, Clone, Default)]
pub struct NightlyOptions {
    /// History directory (one file per machine).
    pub history_dir: PathBuf,
    /// Accept this run as the baseline even with regressions.
    pub accept: bool,
    /// Exit 2 when a cell failed or a spec did not run.
    pub fail_on_error: bool,
    /// `A..B`: run the suite on each commit of the range, oldest first, each built in its own worktree.
    pub commits: Option<String>,
    /// No progress lines.
    pub quiet: bool,
}

/// How `structdr nightly` ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// No regression, nothing failed (or failures tolerated).
    Clean,
    /// A cell failed or a spec did not run, under `--fail-on-error`.
    Failures,
    /// At least one regression.
    Regression,
}

/// Judges `entry` against the history, appends it, prints the verdict; returns the outcome.
fn record(mut entry: Entry, path: &Path, suite: &Suite, opts: &NightlyOptions) -> Result<Outcome> {
    let history = read_history(path)?;
    entry.regressions = compare(&history, &entry, &suite.alarm);
    entry.accepted = entry.regressions.is_empty() || opts.accept;
    entry.forced_accept = opts.accept && !entry.regressions.is_empty();
    // checked before the suite ran, but the disk can fill or the file change meanwhile: the run's
    // entry then goes to a side file, named in the error
    crate::journal::append_or_keep(path, &entry, entry.finished_at)?;
    let failed: Vec<&String> = entry.quality.iter().filter(|(_, c)| c.status != "ok").map(|(id, _)| id).collect();
    let short = format!("{}{}", &entry.commit[..entry.commit.len().min(10)], if entry.commit.ends_with("+dirty") { "+dirty" } else { "" });
    println!(
        "nightly {short} ({}): {} quality cells, {} speed cases, {} failed, {} problems, {} regressions, {:.0} s -> {}",
        entry.commit_date,
        entry.quality.len(),
        entry.speed.len(),
        failed.len(),
        entry.problems.len(),
        entry.regressions.len(),
        entry.wall_seconds,
        path.display()
    );
    for p in &entry.problems {
        println!("  problem: {p}");
    }
    for r in &entry.regressions {
        let v = |x: Option<f64>| x.map(|v| format!("{v:.6}")).unwrap_or_else(|| "–".into());
        println!(
            "  REGRESSION {} {} [{}] in {}..{}: {} -> {} ({})",
            r.kind,
            r.id,
            r.metric,
            &r.since[..r.since.len().min(10)],
            short,
            v(r.old),
            v(r.new),
            r.detail
        );
    }
    if entry.forced_accept {
        println!("  accepted with --accept: later runs compare with this one");
    }
    Ok(if !entry.regressions.is_empty() && !opts.accept {
        Outcome::Regression
    } else if opts.fail_on_error && (!failed.is_empty() || !entry.problems.is_empty()) {
        Outcome::Failures
    } else {
        Outcome::Clean
    })
}

/// `structdr nightly SUITE`: runs the suite on this binary (or, with `--commits`, on every commit
/// of the range) and appends to this machine's history; returns the worst outcome.
pub fn nightly(suite_path: &Path, opts: &NightlyOptions) -> Result<Outcome> {
    let suite = Suite::load(suite_path)?;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let path = opts.history_dir.join(format!("{}.jsonl", Fingerprint::current().series()));
    // The history is read and appended to after the suite has run, which can take hours: a
    // corrupt, unreadable or read-only history must stop the run before it starts.
    crate::journal::check_appendable::<Entry>(&path).with_context(|| format!("the history {} cannot take this run's entry", path.display()))?;
    match &opts.commits {
        None => {
            let binary = std::env::current_exe().context("cannot locate this binary")?;
            let (commit, date, subject) = commit_info(&cwd, "HEAD", true).unwrap_or_else(|_| ("unknown".into(), String::new(), String::new()));
            let mut entry = run_suite(&suite, &binary, &cwd, opts.quiet);
            (entry.commit, entry.commit_date, entry.subject) = (commit, date, subject);
            record(entry, &path, &suite, opts)
        }
        Some(range) => {
            if !range.contains("..") {
                bail!("--commits '{range}': expected A..B (e.g. HEAD~10..HEAD)");
            }
            let list = git(&cwd, &["rev-list", "--reverse", range])?;
            let commits: Vec<&str> = list.lines().filter(|l| !l.is_empty()).collect();
            if commits.is_empty() {
                bail!("--commits '{range}': no commits in the range");
            }
            say(opts.quiet, &format!("nightly: backfill of {} commits ({range})", commits.len()));
            // One target directory for every worktree: the dependencies are built once. Each
            // worktree is checked out fresh, so its files are newer than any artifact there and
            // cargo rebuilds the workspace crates (its freshness check is by mtime, and a path
            // crate's artifacts do not depend on where the checkout lies).
            let target = cwd.join("target").join("backfill");
            let mut worst = Outcome::Clean;
            for (i, sha) in commits.iter().enumerate() {
                let (commit, date, subject) = commit_info(&cwd, sha, false)?;
                say(opts.quiet, &format!("nightly: [{}/{}] {} {subject}", i + 1, commits.len(), &commit[..10]));
                let wt = tempfile::Builder::new().prefix("structdr-backfill-").tempdir()?;
                let dir = wt.path().join("tree");
                git(&cwd, &["worktree", "add", "--detach", dir.to_str().context("worktree path is not UTF-8")?, sha])?;
                let built = Command::new("cargo")
                    .current_dir(&dir)
                    .args(["build", "--release", "--quiet", "-p", "structdr", "--bin", "structdr"])
                    .env("CARGO_TARGET_DIR", &target)
                    .status();
                let result = match built {
                    Ok(s) if s.success() => {
                        let mut entry = run_suite(&suite, &target.join("release").join("structdr"), &cwd, opts.quiet);
                        (entry.commit, entry.commit_date, entry.subject, entry.backfill) = (commit, date, subject, true);
                        record(entry, &path, &suite, opts)
                    }
                    Ok(s) => Err(anyhow::anyhow!("commit {sha}: cargo build failed ({s})")),
                    Err(e) => Err(anyhow::anyhow!("commit {sha}: cannot run cargo: {e}")),
                };
                let _ = git(&cwd, &["worktree", "remove", "--force", dir.to_str().unwrap_or_default()]);
                match result? {
                    Outcome::Regression => worst = Outcome::Regression,
                    Outcome::Failures if worst == Outcome::Clean => worst = Outcome::Failures,
                    _ => {}
                }
            }
            Ok(worst)
        }
    }
}

#[cfg(test)]
mod tests {
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
                    (
                        id.to_string(),
                        QualityCell { method_version: 1, status: "ok".into(), metrics: [("acc".to_string(), *v)].into(), tolerance: 0.0, error: None },
                    )
                })
                .collect(),
            speed: speed.iter().map(|(id, s)| (id.to_string(), s.to_vec())).collect(),
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

    /// Speed: a 30% step over a quiet series is caught; the same step inside the series' noise, a
    /// 5% step, and a faster run are not.
    #[test]
    fn speed_steps_must_exceed_noise_and_ten_percent() {
        let quiet: Vec<Entry> = (0..5).map(|i| entry(&format!("c{i}"), &[], &[("fit", &[1.0, 1.01, 0.99, 1.0, 1.0])])).collect();
        let r = compare(&quiet, &entry("new", &[], &[("fit", &[1.3, 1.31, 1.29, 1.3, 1.3])]), &Alarm::default());
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].kind.as_str(), r[0].since.as_str()), ("speed", "c4"));
        assert!((r[0].old.unwrap() - 1.0).abs() < 1e-12 && (r[0].new.unwrap() - 1.3).abs() < 1e-12);
        assert!(compare(&quiet, &entry("new", &[], &[("fit", &[1.05, 1.05, 1.05])]), &Alarm::default()).is_empty());
        assert!(compare(&quiet, &entry("new", &[], &[("fit", &[0.5, 0.5, 0.5])]), &Alarm::default()).is_empty());
        // a noisy series: medians 1.0, 1.4, 0.7, 1.3, 0.8 -> spread large; 1.3 is within it
        let noisy: Vec<Entry> = [1.0, 1.4, 0.7, 1.3, 0.8].iter().enumerate().map(|(i, &m)| entry(&format!("n{i}"), &[], &[("fit", &[m, m, m])])).collect();
        assert!(compare(&noisy, &entry("new", &[], &[("fit", &[1.3, 1.3, 1.3])]), &Alarm::default()).is_empty());
        // noisy samples of the new run widen the noise too
        assert!(compare(&quiet, &entry("new", &[], &[("fit", &[1.3, 0.6, 2.0, 1.1, 1.5])]), &Alarm::default()).is_empty());
        // a step below min_seconds is not one, however large relatively
        let tiny: Vec<Entry> = (0..5).map(|i| entry(&format!("t{i}"), &[], &[("eval", &[0.001, 0.001, 0.001])])).collect();
        assert!(compare(&tiny, &entry("new", &[], &[("eval", &[0.003, 0.003, 0.003])]), &Alarm::default()).is_empty());
        // the window: only the last `window` accepted runs count
        let mut shifted = quiet.clone();
        shifted.extend((0..3).map(|i| entry(&format!("s{i}"), &[], &[("fit", &[1.3, 1.3, 1.3])])));
        let a = Alarm { window: 3, ..Alarm::default() };
        assert!(compare(&shifted, &entry("new", &[], &[("fit", &[1.3, 1.3, 1.3])]), &a).is_empty());
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
}
