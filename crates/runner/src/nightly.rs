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
//! - **Speed**: every speed spec runs one cell at a time (`-j 1`); each cell gives two cases,
//!   `fit` and `evaluation`. The baseline is the last accepted run's commit, built in a worktree
//!   ([`crate::baseline`]); its binary and this one run the spec interleaved, `samples` pairs, so
//!   the machine's speed cancels in each pair's ratio, as in asv's `continuous`. The verdict on
//!   the ratios is [`crate::paired`]'s. When there is no accepted run, the baseline has the same
//!   code, or it cannot be built, speed is not judged (the entry says why). Absolute times stay
//!   in the history for the trend page; against the accepted run's stored times, a slow-down of
//!   every case together is one note ("the machine changed?"), never a regression.
//!
//! A run with no regression is accepted; the last accepted run is the baseline of the next, for
//! quality and speed. `--accept` accepts an intended change. History files are JSON lines under `results/history/<machine>.jsonl`, one
//! per machine fingerprint (CPU model, logical CPUs, BLAS library and kernel set, thread layout).

use crate::paired::median;
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
    /// Times the spec runs per binary: the pairs of a paired comparison (samples per case).
    #[serde(default = "default_samples")]
    pub samples: usize,
}

fn default_samples() -> usize {
    3
}

/// When a paired timing ratio is a regression ([`crate::paired`]).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Alarm {
    /// Smallest relative slow-down that counts (0.10: 10%): the lower bound of a case's ratio
    /// interval must exceed `1 + min_relative`.
    pub min_relative: f64,
    /// Smallest step in seconds that counts (median candidate minus median baseline): cases of a
    /// millisecond are at the timer's and the scheduler's mercy.
    pub min_seconds: f64,
}

impl Default for Alarm {
    fn default() -> Self {
        Alarm { min_relative: 0.10, min_seconds: 0.005 }
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
        if !(a.min_relative.is_finite() && a.min_relative >= 0.0 && a.min_seconds.is_finite() && a.min_seconds >= 0.0) {
            bail!("{}: [alarm] needs min_relative >= 0 and min_seconds >= 0", path.display());
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
    /// The last accepted value (speed: the baseline binary's median in this run).
    pub old: Option<f64>,
    /// The new value (speed: this binary's median).
    pub new: Option<f64>,
    /// Speed: the median of the per-pair ratios `new / baseline`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    /// Speed: the bootstrap interval of that ratio ([`crate::paired::CONFIDENCE`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<(f64, f64)>,
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
    /// Speed cases by id: raw samples in seconds, of this commit on this machine.
    pub speed: BTreeMap<String, Vec<f64>>,
    /// The commit the speed cases were paired with (the last accepted run's; empty: not paired).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub baseline: String,
    /// The baseline binary's samples, interleaved with `speed` (`baseline_speed[c][i]` and
    /// `speed[c][i]` are one pair).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub baseline_speed: BTreeMap<String, Vec<f64>>,
    /// How speed was judged: paired with the baseline, or why not.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub speed_verdict: String,
    /// Observations that are not regressions (a uniform shift: "the machine changed?").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
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

/// History format version of new entries (2: paired speed; version 1 lines read with no baseline).
pub const HISTORY_SCHEMA: u32 = 2;

/// A record's status as the history stores it.
fn status_name(status: &Status) -> &'static str {
    match status {
        Status::Ok => "ok",
        Status::Failed => "failed",
        Status::Degenerate => "degenerate",
    }
}

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

/// Runs the suite with `binary` in `cwd` and returns the entry (regressions not yet judged). With
/// a `baseline` binary, every speed spec runs on both, interleaved: pair `i` runs the baseline
/// first when `i` is even, this binary first when odd, so a drift within a pair favours neither.
pub fn run_suite(suite: &Suite, binary: &Path, baseline: Option<&Path>, cwd: &Path, quiet: bool) -> Entry {
    let t0 = std::time::Instant::now();
    let mut quality = BTreeMap::new();
    let mut speed: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut baseline_speed: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut problems = Vec::new();
    for q in &suite.quality {
        let t = std::time::Instant::now();
        match run_spec_with(binary, cwd, &q.spec, None) {
            Ok((id, records)) => {
                for r in &records {
                    let metrics = r.metrics.iter().filter(|(_, v)| v.is_finite()).map(|(k, v)| (k.clone(), *v)).collect();
                    let status = status_name(&r.status);
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
        'pairs: for sample in 0..s.samples {
            // one sample of each side; a pair is kept whole or not at all
            let mut sides: Vec<(bool, &Path)> = vec![(false, binary)];
            if let Some(b) = baseline {
                sides.insert(if sample % 2 == 0 { 0 } else { 1 }, (true, b));
            }
            let mut pair: Vec<(bool, String, Vec<Record>)> = Vec::new();
            for (is_base, bin) in sides {
                match run_spec_with(bin, cwd, &s.spec, Some(1)) {
                    Ok((id, records)) => pair.push((is_base, id, records)),
                    Err(e) => {
                        let side = if is_base { "baseline" } else { "this binary" };
                        problems.push(format!("speed {} sample {} ({side}): {e}", s.spec.display(), sample + 1));
                        break 'pairs;
                    }
                }
            }
            for (is_base, id, records) in pair {
                // a cell that did not end `ok` has no time to compare: said once per cell and
                // side, never dropped from the speed series in silence
                for r in records.iter().filter(|r| r.status != Status::Ok) {
                    let side = if is_base { "baseline" } else { "this binary" };
                    let problem = format!(
                        "speed {}: {} ended `{}` with {side}, so it has no time: {}",
                        s.spec.display(),
                        cell_id(&id, r),
                        status_name(&r.status),
                        r.error.as_deref().unwrap_or("no error recorded")
                    );
                    if !problems.contains(&problem) {
                        problems.push(problem);
                    }
                }
                let into = if is_base { &mut baseline_speed } else { &mut speed };
                for r in records.iter().filter(|r| r.status == Status::Ok) {
                    let base = cell_id(&id, r);
                    into.entry(format!("{base}: fit")).or_default().push(r.fit_seconds);
                    into.entry(format!("{base}: evaluation")).or_default().push(r.eval_seconds);
                }
            }
        }
        let how = if baseline.is_some() { "pairs (baseline, this binary)" } else { "samples" };
        say(quiet, &format!("nightly: speed {} x {} {how} in {:.1} s", s.spec.display(), s.samples, t.elapsed().as_secs_f64()));
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
        baseline: String::new(),
        baseline_speed,
        speed_verdict: String::new(),
        notes: Vec::new(),
        problems,
        regressions: Vec::new(),
        accepted: false,
        forced_accept: false,
        backfill: false,
        wall_seconds: t0.elapsed().as_secs_f64(),
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

/// The baseline of a new run of `suite`: the last accepted run of that suite in `history` (in
/// file order, the last one most recent). `--accept` makes a run this, whatever it regressed.
pub fn last_accepted<'a>(history: &'a [Entry], suite: &str) -> Option<&'a Entry> {
    history.iter().rev().find(|e| e.accepted && e.suite == suite)
}

/// The regressions of `new`: quality against the accepted runs of its suite in `history` (a cell
/// against the last accepted run that has it under the same method version), speed from the
/// pairs `new` holds ([`crate::paired::judge_case`]). Failures and quality first, then speed
/// largest ratio first.
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
                ratio: None,
                interval: None,
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
                    ratio: None,
                    interval: None,
                    detail: match now {
                        Some(v) => format!("changed by {:+.3e} (tolerance {})", v - was, cell.tolerance),
                        None => "no longer computed".into(),
                    },
                });
            }
        }
    }
    let mut speed: Vec<Regression> = paired_cases(new, alarm)
        .into_iter()
        .filter(|c| c.regressed)
        .map(|c| Regression {
            kind: "speed".into(),
            id: c.id.clone(),
            metric: "median seconds".into(),
            old: Some(c.baseline),
            new: Some(c.candidate),
            ratio: Some(c.ratio),
            interval: Some(c.interval),
            since: new.baseline.clone(),
            detail: format!("{} pairs, 90% bootstrap interval; lower bound > {:.2} and step > {} s", c.pairs, 1.0 + alarm.min_relative, alarm.min_seconds),
        })
        .collect();
    crate::paired::rank_by(&mut speed, |r| r.ratio, |r| &r.id);
    out.extend(speed);
    out
}

/// The paired verdict on every speed case `new` has baseline samples for.
pub fn paired_cases(new: &Entry, alarm: &Alarm) -> Vec<crate::paired::PairedCase> {
    new.speed
        .iter()
        .filter_map(|(id, c)| new.baseline_speed.get(id).and_then(|b| crate::paired::judge_case(id, b, c, alarm.min_relative, alarm.min_seconds)))
        .collect()
}

/// Notes on shifts shared by (nearly) every speed case ([`crate::paired::uniform_shift`]): against
/// `reference`'s stored absolute times (the machine changed?), and among the paired ratios (a
/// shared cause). Cases under `min_seconds` are left out: their ratios are timer noise.
pub fn shift_notes(reference: Option<&Entry>, new: &Entry, alarm: &Alarm) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(r) = reference {
        let ratios: Vec<f64> = new
            .speed
            .iter()
            .filter_map(|(id, s)| r.speed.get(id).map(|old| (median(old), median(s))))
            .filter(|(old, _)| *old >= alarm.min_seconds)
            .map(|(old, now)| now / old)
            .collect();
        if let Some(f) = crate::paired::uniform_shift(&ratios, alarm.min_relative) {
            notes.push(format!(
                "the machine changed? {} speed cases x{f:.2} (median) against the stored times of {} on the same fingerprint; not judged as regressions (the paired ratios are)",
                ratios.len(),
                &r.commit[..r.commit.len().min(10)]
            ));
        }
    }
    let paired: Vec<f64> = paired_cases(new, alarm).iter().filter(|c| c.baseline >= alarm.min_seconds).map(|c| c.ratio).collect();
    if let Some(f) = crate::paired::uniform_shift(&paired, alarm.min_relative) {
        notes
            .push(format!("all {} paired speed cases slower together (x{f:.2}): a cause they share (BLAS, evaluation kernels, build settings)?", paired.len()));
    }
    notes
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
    /// The baseline binary of the paired speed comparison, instead of building the last accepted
    /// run's commit (tests and debugging: a binary that stands for that commit).
    pub baseline_binary: Option<PathBuf>,
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

/// The speed baseline chosen for a run ([`choose_baseline`]).
struct Baseline {
    /// The binary to pair with (None: speed is not paired).
    binary: Option<PathBuf>,
    /// The commit it stands for.
    commit: String,
    /// How speed is judged, for the entry and the summary.
    verdict: String,
    /// A problem that kept the run from pairing.
    problem: Option<String>,
}

/// The speed baseline of a run of `candidate` (a commit, or None: this checkout) given the last
/// accepted run `base`: that run's commit's binary (from `built`, else built and kept there), or,
/// when there is none, it has the same code, or it cannot be built, no pairing and why.
fn choose_baseline(cwd: &Path, base: Option<&Entry>, candidate: Option<&str>, opts: &NightlyOptions, built: &mut Vec<crate::baseline::Built>) -> Baseline {
    let unpaired = |verdict: String, problem: Option<String>| Baseline { binary: None, commit: String::new(), verdict, problem };
    let Some(base) = base else {
        return unpaired("not paired: no accepted run yet, so nothing to pair with (this run's times are stored)".into(), None);
    };
    let commit = base.commit.trim_end_matches("+dirty").to_string();
    let short = commit[..commit.len().min(10)].to_string();
    let paired = |binary: PathBuf, how: &str| Baseline {
        binary: Some(binary),
        commit: base.commit.clone(),
        verdict: format!("paired with {short}{how}, the last accepted run"),
        problem: None,
    };
    if let Some(b) = &opts.baseline_binary {
        return paired(b.clone(), &format!(" (binary {})", b.display()));
    }
    if commit.is_empty() || commit == "unknown" {
        return unpaired("not paired: the last accepted run's commit is unknown (not run from a git checkout)".into(), None);
    }
    let dirty = if base.commit.ends_with("+dirty") { " (as committed: its uncommitted changes are not in the build)" } else { "" };
    match crate::baseline::same_code(cwd, &commit, candidate) {
        Ok(true) => return unpaired(format!("not paired: the last accepted run {short} has the same code (outside results/); nothing to compare"), None),
        Ok(false) => {}
        Err(e) => return unpaired(format!("not paired: cannot compare with {short}"), Some(format!("speed baseline {short}: {e}"))),
    }
    if let Some(b) = built.iter().find(|b| b.commit == commit) {
        return paired(b.binary.clone(), dirty);
    }
    say(opts.quiet, &format!("nightly: building the baseline {short} (build cache target/backfill)"));
    match crate::baseline::build_commit(cwd, &commit) {
        Ok(b) => {
            let binary = b.binary.clone();
            built.push(b);
            paired(binary, dirty)
        }
        Err(e) => unpaired(format!("not paired: the baseline {short} could not be built"), Some(format!("speed baseline {short}: {e:#}"))),
    }
}

/// Runs the suite with `binary` for the commit `commit` (None: this checkout), paired with the
/// last accepted run's commit where it can be ([`choose_baseline`]), and records the entry.
fn run_and_record(
    suite: &Suite,
    path: &Path,
    binary: &Path,
    commit: Option<&str>,
    opts: &NightlyOptions,
    built: &mut Vec<crate::baseline::Built>,
) -> Result<(Entry, Outcome)> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let history = read_history(path)?;
    let b = choose_baseline(&cwd, last_accepted(&history, &suite.id), commit, opts, built);
    say(opts.quiet, &format!("nightly: speed {}", b.verdict));
    let mut entry = run_suite(suite, binary, b.binary.as_deref(), &cwd, opts.quiet);
    entry.baseline = b.commit;
    entry.speed_verdict = b.verdict;
    entry.problems.extend(b.problem);
    (entry.commit, entry.commit_date, entry.subject) = match commit {
        None => crate::baseline::commit_info(&cwd, "HEAD", true).unwrap_or_else(|_| ("unknown".into(), String::new(), String::new())),
        Some(sha) => crate::baseline::commit_info(&cwd, sha, false)?,
    };
    entry.backfill = commit.is_some();
    record(entry, path, suite, opts)
}

/// Judges `entry` against the history, appends it, prints the verdict; returns the entry and the
/// outcome.
fn record(mut entry: Entry, path: &Path, suite: &Suite, opts: &NightlyOptions) -> Result<(Entry, Outcome)> {
    let history = read_history(path)?;
    entry.regressions = compare(&history, &entry, &suite.alarm);
    entry.notes = shift_notes(last_accepted(&history, &suite.id), &entry, &suite.alarm);
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
    println!("  speed: {}", entry.speed_verdict);
    for n in &entry.notes {
        println!("  note: {n}");
    }
    for p in &entry.problems {
        println!("  problem: {p}");
    }
    // largest first: compare ranks the speed regressions by their ratio
    for r in &entry.regressions {
        let v = |x: Option<f64>| x.map(|v| format!("{v:.6}")).unwrap_or_else(|| "–".into());
        let since = &r.since[..r.since.len().min(10)];
        match (r.ratio, r.interval) {
            (Some(x), Some((lo, hi))) => {
                println!("  REGRESSION speed x{x:.2} [{lo:.2}, {hi:.2}] {} in {since}..{short}: {} -> {} s ({})", r.id, v(r.old), v(r.new), r.detail)
            }
            _ => println!("  REGRESSION {} {} [{}] in {since}..{short}: {} -> {} ({})", r.kind, r.id, r.metric, v(r.old), v(r.new), r.detail),
        }
    }
    if entry.forced_accept {
        println!("  accepted with --accept: it is the next run's baseline (quality values and speed commit)");
    }
    let outcome = if !entry.regressions.is_empty() && !opts.accept {
        Outcome::Regression
    } else if opts.fail_on_error && (!failed.is_empty() || !entry.problems.is_empty()) {
        Outcome::Failures
    } else {
        Outcome::Clean
    };
    Ok((entry, outcome))
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
    let mut built = Vec::new();
    match &opts.commits {
        None => {
            let binary = std::env::current_exe().context("cannot locate this binary")?;
            Ok(run_and_record(&suite, &path, &binary, None, opts, &mut built)?.1)
        }
        Some(range) => {
            if !range.contains("..") {
                bail!("--commits '{range}': expected A..B (e.g. HEAD~10..HEAD)");
            }
            let list = crate::baseline::git(&cwd, &["rev-list", "--reverse", range])?;
            let commits: Vec<&str> = list.lines().filter(|l| !l.is_empty()).collect();
            if commits.is_empty() {
                bail!("--commits '{range}': no commits in the range");
            }
            say(opts.quiet, &format!("nightly: backfill of {} commits ({range})", commits.len()));
            let mut worst = Outcome::Clean;
            for (i, sha) in commits.iter().enumerate() {
                let (_, _, subject) = crate::baseline::commit_info(&cwd, sha, false)?;
                say(opts.quiet, &format!("nightly: [{}/{}] {} {subject}", i + 1, commits.len(), &sha[..sha.len().min(10)]));
                let candidate = crate::baseline::build_commit(&cwd, sha)?;
                let binary = candidate.binary.clone();
                // the previous commit's binary stays: it is the next commit's baseline when accepted
                built.retain(|b| b.commit != candidate.commit);
                built.push(candidate);
                if built.len() > 3 {
                    built.remove(0);
                }
                match run_and_record(&suite, &path, &binary, Some(sha), opts, &mut built)?.1 {
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
#[path = "nightly_tests.rs"]
mod tests;
