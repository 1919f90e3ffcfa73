//! The result store: one JSON record per finished grid cell, written atomically under a content
//! hash of the normalised cell, so a re-run recomputes only missing cells and a killed run loses
//! no finished cell.
//!
//! The key and everything derived from it are [`crate::keys`]. Records written before keys carried
//! versions are adopted under their versioned key the first time `run` meets them, and the old file
//! removed ([`Store::adopt_unversioned`]).

use crate::keys::{fit_key, CellKey, UNVERSIONED_IS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use structdr_methods::api::{FeatureScores, Fitted, Output, OutputKind, PrincipalGraph, Trace};

/// Outcome of a cell.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The fit and its evaluation succeeded; the metrics are set.
    Ok,
    /// The fit or its evaluation failed; `error` says why.
    Failed,
    /// The data or the fit carry no structure to score (identical samples, an extreme scale, an
    /// undefined embedding, an output collapsed to one point); `error` says why. Shown as
    /// `degenerate` in tables, never as a number.
    Degenerate,
}

/// One finished grid cell.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    /// The cell's content key.
    pub key: CellKey,
    /// Hex SHA-256 of `key` ([`CellKey::hash`]), also the record's file name.
    pub hash: String,
    /// Whether the cell succeeded.
    pub status: Status,
    /// Error message of a failed cell.
    #[serde(default)]
    pub error: Option<String>,
    /// Metric name -> value (`loocv_1nn_accuracy`, `acc_mean`, `acc_std`, `nmi_mean`, ...).
    pub metrics: BTreeMap<String, f64>,
    /// Resolved reduced dimension d.
    pub dim: usize,
    /// Number of samples N of the preprocessed data.
    pub n_samples: usize,
    /// Number of features D of the preprocessed data.
    pub n_features: usize,
    /// Wall-clock seconds of the fit (shared by the cells that evaluate one fit).
    pub fit_seconds: f64,
    /// Wall-clock seconds of the evaluation protocols.
    pub eval_seconds: f64,
    /// Iterations the method ran (0 when the fit failed).
    pub iterations: usize,
    /// Whether the method reported convergence (false when the fit failed).
    pub converged: bool,
    /// Why the fit stopped ([`structdr_methods::Trace::stop`]); absent in records written before
    /// it was recorded, whose reason [`Record::stop_reason`] infers where it can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<structdr_methods::StopReason>,
    /// The method's final objective value (the last entry of its trace's history), for
    /// iterative methods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<f64>,
    /// KKT residual of the final iterate, for methods that solve a constrained problem
    /// ([`structdr_methods::Trace::kkt_residual`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kkt_residual: Option<f64>,
    /// The method's remarks on the fit (e.g. "joined 3 components with 2 edges").
    #[serde(default)]
    pub notes: Vec<String>,
    /// Version of the code that wrote the record ([`code_version`]: crate version + git commit).
    pub code_version: String,
    /// Thread layout and OpenBLAS kernel set the timings were taken under, e.g.
    /// "rayon=2 blas=1 openblas=SkylakeX".
    pub threads: String,
    /// The machine the record was computed on ([`machine`]: CPU model and logical CPUs); absent
    /// in records written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// Seconds since the Unix epoch when the record was written.
    pub finished_at: u64,
}

impl Record {
    /// The cell's resolved parameters as `key=value` pairs in key order, e.g. `C=inf lambda=0.1`.
    pub fn params_string(&self) -> String {
        self.key.params_string()
    }
}

/// Records of one spec, in `<dir>/<hash>.json`.
pub struct Store {
    dir: PathBuf,
}

/// Name of the record directory inside a spec's output directory. Records are part of the
/// repository (except the demo's): a table regenerates from them on a fresh checkout, and cells
/// computed in one sitting are reused by the next, on any machine.
pub const RECORDS_DIR: &str = "records";

/// Where records lived before they were tracked (git-ignored, lost with the work tree).
const LEGACY_DIR: &str = "cache";

/// Name of the directory beside `records/` that holds the claims of cells being computed.
pub const CLAIMS_DIR: &str = "claims";

/// Claims from another host (or where process ids cannot be checked) older than this are taken
/// over: their run is presumed dead.
pub const CLAIM_TTL: std::time::Duration = std::time::Duration::from_secs(12 * 3600);

/// What trying to claim a cell gave.
pub enum ClaimOutcome {
    /// This run computes the cell; the claim file is removed when the guard drops.
    Mine(ClaimGuard),
    /// Another live run is computing it (its claim, as written: `pid host started`).
    Busy(String),
}

/// Holds a cell's claim file; removes it on drop (after the record is written, or on failure).
pub struct ClaimGuard {
    path: PathBuf,
}

impl Drop for ClaimGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").or_else(|_| std::fs::read_to_string("/etc/hostname")).map(|s| s.trim().to_string()).unwrap_or_default()
}

/// Whether the claim text `pid host started` names a run that is still alive: on this host
/// (with `/proc`), whether its process exists; from another host, whether the claim is younger
/// than [`CLAIM_TTL`].
fn claim_is_live(text: &str, age: Option<std::time::Duration>) -> bool {
    let mut parts = text.split_whitespace();
    let pid: Option<u32> = parts.next().and_then(|p| p.parse().ok());
    let host = parts.next().unwrap_or("");
    let young = age.is_some_and(|a| a < CLAIM_TTL);
    let here = host == host_name() && Path::new("/proc/self").exists();
    match (pid, here) {
        (Some(p), true) => Path::new(&format!("/proc/{p}")).exists(),
        _ => young,
    }
}

impl Store {
    /// The claims directory of this store (`<out>/claims`, git-ignored).
    fn claims_dir(&self) -> PathBuf {
        self.dir.parent().map_or_else(|| self.dir.join(CLAIMS_DIR), |p| p.join(CLAIMS_DIR))
    }

    /// Claims the cell `hash` for this run: an exclusive-create claim file `<hash>.claim`
    /// holding `pid host unix-time`. A claim of a live run makes the cell [`ClaimOutcome::Busy`];
    /// a claim left by a dead run (its process gone, or older than [`CLAIM_TTL`] from another
    /// host) is taken over. So concurrent runs on one store (sharded, parallel, on several
    /// machines over a shared file system) compute every cell once, and a killed run leaves
    /// nothing stuck.
    pub fn claim(&self, hash: &str) -> std::io::Result<ClaimOutcome> {
        let dir = self.claims_dir();
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(format!("{hash}.claim"));
        let text = format!(
            "{} {} {}",
            std::process::id(),
            host_name(),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
        );
        for _ in 0..3 {
            match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut f) => {
                    f.write_all(text.as_bytes())?;
                    return Ok(ClaimOutcome::Mine(ClaimGuard { path }));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let existing = std::fs::read_to_string(&path).unwrap_or_default();
                    let age = std::fs::metadata(&path).ok().and_then(|m| m.modified().ok()).and_then(|t| t.elapsed().ok());
                    if existing.is_empty() && age.is_some_and(|a| a < std::time::Duration::from_secs(5)) {
                        // being written right now
                        return Ok(ClaimOutcome::Busy("a run starting now".into()));
                    }
                    if claim_is_live(&existing, age) {
                        return Ok(ClaimOutcome::Busy(existing.trim().to_string()));
                    }
                    // a dead run's claim: remove it and try again
                    let _ = std::fs::remove_file(&path);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(ClaimOutcome::Busy("contended".into()))
    }
}

impl Store {
    /// Opens the record store of a spec's output directory, `<out_dir>/records`. A store left in
    /// the former location `<out_dir>/cache` is moved there first, or merged into it record by
    /// record when both exist, so no finished cell is lost by the move.
    pub fn open_in(out_dir: &Path) -> std::io::Result<Store> {
        let dir = out_dir.join(RECORDS_DIR);
        let legacy = out_dir.join(LEGACY_DIR);
        if legacy.is_dir() {
            if !dir.exists() {
                std::fs::rename(&legacy, &dir)?;
            } else {
                for entry in std::fs::read_dir(&legacy)? {
                    let from = entry?.path();
                    let Some(name) = from.file_name() else { continue };
                    let to = dir.join(name);
                    if from.extension().is_some_and(|x| x == "json") && !to.exists() {
                        std::fs::rename(&from, &to)?;
                    }
                }
            }
        }
        Store::open(&dir)
    }

    /// Opens (creating) the store directory.
    pub fn open(dir: &Path) -> std::io::Result<Store> {
        std::fs::create_dir_all(dir)?;
        Ok(Store { dir: dir.to_path_buf() })
    }

    fn path(&self, hash: &str) -> PathBuf {
        self.dir.join(format!("{hash}.json"))
    }

    /// The record of `hash`, if present and readable (a corrupt file counts as missing).
    pub fn get(&self, hash: &str) -> Option<Record> {
        let text = std::fs::read_to_string(self.path(hash)).ok()?;
        let rec = Record::from_json(&text).ok()?;
        (rec.hash == hash).then_some(rec)
    }

    /// Writes a record atomically: temp file in the same directory, fsync, rename.
    pub fn put(&self, rec: &Record) -> std::io::Result<()> {
        let final_path = self.path(&rec.hash);
        let tmp = self.dir.join(format!(".{}.{}.tmp", rec.hash, std::process::id()));
        {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(serde_json::to_string_pretty(rec).expect("record serialises").as_bytes())?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, &final_path)
    }

    /// A record written before keys carried versions for the cell `key` (version
    /// [`UNVERSIONED_IS`]), adopted: rewritten under `key`'s versioned hash, the old file removed.
    /// `None` when `key` is of another version or no such record exists.
    pub fn adopt_unversioned(&self, key: &CellKey) -> std::io::Result<Option<Record>> {
        if key.method_version != UNVERSIONED_IS {
            return Ok(None);
        }
        let old = key.seed_hash();
        let Some(mut rec) = self.get(&old) else { return Ok(None) };
        if rec.key.method_version != 0 || (CellKey { method_version: key.method_version, ..rec.key.clone() }) != *key {
            return Ok(None);
        }
        rec.key.method_version = key.method_version;
        rec.hash = key.hash();
        self.put(&rec)?;
        std::fs::remove_file(self.path(&old))?;
        Ok(Some(rec))
    }

    /// Removes every record whose method version differs from `current(method)` (or whose method
    /// `current` does not know); with `dry_run` only counts. Returns `(kept, removed)` record
    /// counts per method, in method-name order. Unreadable files are left alone and counted as kept.
    pub fn prune(&self, current: impl Fn(&str) -> Option<u32>, dry_run: bool) -> std::io::Result<BTreeMap<String, (usize, usize)>> {
        let mut counts: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for (path, rec) in self.records()? {
            let Some(rec) = rec else {
                counts.entry("(unreadable)".into()).or_default().0 += 1;
                continue;
            };
            let c = counts.entry(rec.key.method.clone()).or_default();
            if current(&rec.key.method) == Some(rec.key.method_version) {
                c.0 += 1;
            } else {
                c.1 += 1;
                if !dry_run {
                    std::fs::remove_file(&path)?;
                }
            }
        }
        Ok(counts)
    }

    /// Every record file of the store in file-name order, with its record (`None` where the
    /// file does not parse).
    pub fn records(&self) -> std::io::Result<Vec<(PathBuf, Option<Record>)>> {
        let mut paths = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let path = entry?.path();
            if path.extension().is_some_and(|x| x == "json") {
                paths.push(path);
            }
        }
        paths.sort();
        Ok(paths.into_iter().map(|p| (p.clone(), std::fs::read_to_string(&p).ok().and_then(|t| Record::from_json(&t).ok()))).collect())
    }

    /// Directory of the store.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Number of stored records.
    pub fn len(&self) -> usize {
        std::fs::read_dir(&self.dir).map(|r| r.filter_map(|e| e.ok()).filter(|e| e.path().extension().is_some_and(|x| x == "json")).count()).unwrap_or(0)
    }

    /// Whether the store holds no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Name of the fit cache inside a spec's output directory (git-ignored: fits are reproducible
/// from their key, and some are large).
pub const FITS_DIR: &str = "fits";

impl Record {
    /// A record from its JSON text (a record file's content), as [`Store::get`] reads it.
    pub fn from_json(text: &str) -> serde_json::Result<Record> {
        serde_json::from_str(text)
    }
}

/// The fit cache: what a fit returned (output, graph, components, trace, notes and its time),
/// one JSON file per fit key ([`fit_key`]), so figures draw cached fits instead of refitting. It only
/// reads and writes: the fits themselves are made by [`crate::exec`]. Floats are written
/// in shortest round-trip form, so a cached fit is bit-identical to the fresh one.
pub struct FitStore {
    dir: PathBuf,
}

/// A fit as stored: arrays row-major with their shapes.
#[derive(Serialize, Deserialize)]
struct StoredFit {
    key: CellKey,
    kind: OutputKind,
    shape: (usize, usize),
    values: Vec<f64>,
    ranking: Vec<usize>,
    centres_shape: (usize, usize),
    centres: Vec<f64>,
    edges: Vec<(usize, usize, f64)>,
    graph: Option<structdr_methods::Graph>,
    components: Option<Vec<usize>>,
    history: Vec<f64>,
    iterations: usize,
    converged: bool,
    #[serde(default)]
    stop: Option<structdr_methods::StopReason>,
    termination: String,
    #[serde(default)]
    kkt_residual: Option<f64>,
    notes: Vec<String>,
    fit_seconds: f64,
}

fn flat(a: &ndarray::Array2<f64>) -> ((usize, usize), Vec<f64>) {
    (a.dim(), a.iter().copied().collect())
}

fn unflat(shape: (usize, usize), v: Vec<f64>) -> Option<ndarray::Array2<f64>> {
    ndarray::Array2::from_shape_vec(shape, v).ok()
}

impl StoredFit {
    fn new(key: &CellKey, f: &Fitted, fit_seconds: f64) -> StoredFit {
        let (shape, values, ranking, centres_shape, centres, edges) = match &f.output {
            Output::Embedding(y) => {
                let (shape, values) = flat(y);
                (shape, values, vec![], (0, 0), vec![], vec![])
            }
            Output::FeatureScores(s) => ((1, s.weights.len()), s.weights.to_vec(), s.ranking.clone(), (0, 0), vec![], vec![]),
            Output::PrincipalGraph(g) => {
                let (shape, values) = flat(&g.projection);
                let (centres_shape, centres) = flat(&g.centres);
                (shape, values, vec![], centres_shape, centres, g.edges.clone())
            }
        };
        StoredFit {
            key: key.clone(),
            kind: f.kind(),
            shape,
            values,
            ranking,
            centres_shape,
            centres,
            edges,
            graph: f.graph.clone(),
            components: f.components.clone(),
            history: f.trace.history.clone(),
            iterations: f.trace.iterations,
            converged: f.trace.converged(),
            stop: Some(f.trace.stop.clone()),
            termination: f.trace.termination.clone(),
            kkt_residual: f.trace.kkt_residual,
            notes: f.notes.clone(),
            fit_seconds,
        }
    }

    fn into_fitted(self) -> Option<(Fitted, f64)> {
        let output = match self.kind {
            OutputKind::Embedding => Output::Embedding(unflat(self.shape, self.values)?),
            OutputKind::FeatureScores => Output::FeatureScores(FeatureScores { weights: self.values.into(), ranking: self.ranking }),
            OutputKind::PrincipalGraph => Output::PrincipalGraph(PrincipalGraph {
                centres: unflat(self.centres_shape, self.centres)?,
                edges: self.edges,
                projection: unflat(self.shape, self.values)?,
            }),
        };
        let rows = match &output {
            Output::Embedding(y) => y.nrows(),
            Output::PrincipalGraph(g) => g.projection.nrows(),
            Output::FeatureScores(_) => 0,
        };
        let d_in = match &output {
            Output::FeatureScores(s) => s.weights.len(),
            _ => 0,
        };
        let mut f = Fitted::new(
            output,
            Trace {
                history: self.history,
                iterations: self.iterations,
                // a fit cached before the reason was kept: its flag, as a converged or a stalled fit
                stop: self.stop.unwrap_or(if self.converged {
                    structdr_methods::StopReason::Converged { residual: None, tol: None }
                } else {
                    structdr_methods::StopReason::Stalled { residual: None, tol: None, detail: "cached before the reason was recorded".into() }
                }),
                termination: self.termination,
                kkt_residual: self.kkt_residual,
            },
        );
        f.graph = self.graph;
        f.components = self.components;
        f.notes = self.notes;
        // a cache file edited or damaged into an inconsistent fit (a ranking that is no
        // permutation, edges past the vertices, components of another length) counts as missing
        f.check_shape(rows, d_in).ok()?;
        if let Some(g) = &f.graph {
            g.edges.iter().all(|&(i, j, w)| i < j && j < g.n_vertices && w.is_finite()).then_some(())?;
        }
        if let (Some(c), OutputKind::Embedding | OutputKind::PrincipalGraph) = (&f.components, f.kind()) {
            (c.len() == rows).then_some(())?;
        }
        (self.fit_seconds.is_finite() && self.fit_seconds >= 0.0).then_some(())?;
        Some((f, self.fit_seconds))
    }
}

impl FitStore {
    /// Opens (creating) the fit cache of a spec's output directory, `<out_dir>/fits`.
    pub fn open_in(out_dir: &Path) -> std::io::Result<FitStore> {
        let dir = out_dir.join(FITS_DIR);
        std::fs::create_dir_all(&dir)?;
        Ok(FitStore { dir })
    }

    fn path(&self, key: &CellKey) -> PathBuf {
        self.dir.join(format!("{}.json", fit_key(key).hash()))
    }

    /// Whether the fit of `key` is cached.
    pub fn contains(&self, key: &CellKey) -> bool {
        self.path(key).is_file()
    }

    /// The cached fit of `key` and the seconds it took, if present, readable and consistent.
    pub fn get(&self, key: &CellKey) -> Option<(Fitted, f64)> {
        let text = std::fs::read_to_string(self.path(key)).ok()?;
        let (stored_key, fitted, seconds) = parse_fit(&text)?;
        (stored_key == fit_key(key)).then_some((fitted, seconds))
    }

    /// Stores the fit of `key` (made in `seconds`). Best effort: the cache only saves refits, so a
    /// fit that cannot be stored (non-finite history values, an unwritable directory) is skipped.
    pub fn put(&self, key: &CellKey, fitted: &Fitted, seconds: f64) {
        if let Ok(text) = serde_json::to_string(&StoredFit::new(&fit_key(key), fitted, seconds)) {
            let _ = crate::files::atomic_write(&self.path(key), text.as_bytes());
        }
    }
}

/// A fit-cache file's content: the fit key it was stored under, the fit and its seconds; `None`
/// when the text is not a stored fit or describes an inconsistent one ([`Fitted::check_shape`],
/// graph edges `i < j < n_vertices`, one component per sample).
pub fn parse_fit(text: &str) -> Option<(CellKey, Fitted, f64)> {
    let stored: StoredFit = serde_json::from_str(text).ok()?;
    let key = stored.key.clone();
    let (fitted, seconds) = stored.into_fitted()?;
    Some((key, fitted, seconds))
}

/// The code version compiled in (crate version and git commit when known).
pub fn code_version() -> String {
    format!("{}+{}", env!("CARGO_PKG_VERSION"), option_env!("STRUCTDR_GIT_HASH").unwrap_or("unknown"))
}

/// The machine a record is computed on: the CPU model (Linux `/proc/cpuinfo` `model name`, else
/// the architecture) and the logical CPUs the process may use, e.g. "Intel(R) Xeon(R) Platinum
/// 8488C, 2 logical CPUs". Timings are only comparable between records of one machine.
pub fn machine() -> String {
    static MACHINE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MACHINE
        .get_or_init(|| {
            let model = std::fs::read_to_string("/proc/cpuinfo")
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find(|l| l.starts_with("model name"))
                        .and_then(|l| l.split_once(':'))
                        .map(|(_, m)| m.split_whitespace().collect::<Vec<_>>().join(" "))
                })
                .unwrap_or_else(|| std::env::consts::ARCH.to_string());
            let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
            format!("{model}, {cpus} logical CPU{}", if cpus == 1 { "" } else { "s" })
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::keys::tests::key;

    /// A finished record of `key()` with seed `seed` (so distinct seeds give distinct hashes).
    fn record(seed: u64) -> Record {
        let k = CellKey { seed, ..key() };
        Record {
            hash: k.hash(),
            key: k,
            status: Status::Ok,
            error: None,
            metrics: [("loocv_1nn_accuracy".to_string(), 0.5)].into(),
            dim: 2,
            n_samples: 3,
            n_features: 4,
            fit_seconds: 0.1,
            eval_seconds: 0.1,
            iterations: 0,
            converged: true,
            stop: None,
            objective: None,
            kkt_residual: None,
            notes: vec![],
            code_version: code_version(),
            threads: "t".into(),
            machine: Some(machine()),
            finished_at: 0,
        }
    }

    #[test]
    fn a_legacy_cache_directory_is_moved_or_merged_into_records() {
        let out = tempfile::tempdir().unwrap();
        // Only the legacy directory: it becomes the record directory.
        let legacy = Store::open(&out.path().join(LEGACY_DIR)).unwrap();
        legacy.put(&record(1)).unwrap();
        let store = Store::open_in(out.path()).unwrap();
        assert!(store.get(&record(1).hash).is_some() && !out.path().join(LEGACY_DIR).exists());
        // Both exist: legacy records join the store, and a record already there is kept as it is.
        let legacy = Store::open(&out.path().join(LEGACY_DIR)).unwrap();
        legacy.put(&record(2)).unwrap();
        let mut changed = record(1);
        changed.metrics.insert("loocv_1nn_accuracy".into(), 0.9);
        legacy.put(&changed).unwrap();
        let store = Store::open_in(out.path()).unwrap();
        assert_eq!(store.len(), 2);
        assert!(store.get(&record(2).hash).is_some());
        assert_eq!(store.get(&record(1).hash).unwrap().metrics["loocv_1nn_accuracy"], 0.5);
    }

    /// An unversioned record is adopted as version 1 (moved to its versioned hash) and not for
    /// version 2; prune removes records of other versions only.
    #[test]
    fn unversioned_records_are_adopted_as_version_1_and_prune_removes_other_versions() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut legacy = record(1);
        legacy.key.method_version = 0;
        legacy.hash = legacy.key.seed_hash();
        store.put(&legacy).unwrap();
        let v2 = CellKey { method_version: 2, ..record(1).key };
        assert!(store.adopt_unversioned(&v2).unwrap().is_none());
        let v1 = record(1).key;
        let adopted = store.adopt_unversioned(&v1).unwrap().unwrap();
        assert_eq!(adopted.hash, v1.hash());
        assert!(store.get(&v1.hash()).is_some() && store.get(&v1.seed_hash()).is_none());
        let mut other = record(2);
        other.key.method_version = 7;
        other.hash = other.key.hash();
        store.put(&other).unwrap();
        let dry = store.prune(|m| (m == "le").then_some(1), true).unwrap();
        assert_eq!(dry["le"], (1, 1));
        assert_eq!(store.len(), 2);
        store.prune(|m| (m == "le").then_some(1), false).unwrap();
        assert_eq!(store.len(), 1);
        assert!(store.get(&v1.hash()).is_some());
    }

    #[test]
    fn records_round_trip_and_corrupt_files_count_as_missing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let rec = record(1);
        store.put(&rec).unwrap();
        assert_eq!(store.get(&rec.hash).unwrap().metrics["loocv_1nn_accuracy"], 0.5);
        assert_eq!(store.len(), 1);
        std::fs::write(dir.path().join(format!("{}.json", rec.hash)), b"{ truncated").unwrap();
        assert!(store.get(&rec.hash).is_none());
    }

    #[test]
    fn inconsistent_fit_files_count_as_missing() {
        let scores = |ranking: Vec<usize>| {
            let f = Fitted::new(Output::FeatureScores(FeatureScores { weights: ndarray::array![0.5, 0.25, 0.0], ranking }), Trace::closed_form());
            serde_json::to_string(&StoredFit::new(&key(), &f, 0.5)).unwrap()
        };
        let (k, f, secs) = parse_fit(&scores(vec![0, 1, 2])).expect("a consistent fit parses");
        assert_eq!((k, f.feature_scores().unwrap().ranking.clone(), secs), (key(), vec![0, 1, 2], 0.5));
        // a ranking that is no permutation, or past the weights (select() would index out of bounds)
        assert!(parse_fit(&scores(vec![0, 0, 2])).is_none());
        assert!(parse_fit(&scores(vec![0, 1, 7])).is_none());
        let mut f = Fitted::closed_form(ndarray::Array2::zeros((3, 2)));
        f.graph = Some(structdr_methods::Graph { n_vertices: 3, edges: vec![(0, 2, 1.0)] });
        f.components = Some(vec![0, 0, 0]);
        let good = serde_json::to_string(&StoredFit::new(&key(), &f, 0.1)).unwrap();
        assert!(parse_fit(&good).is_some());
        // edges past the vertices, reversed edges, components of another length, negative seconds
        for (from, to) in [("[0,2,1.0]", "[0,9,1.0]"), ("[0,2,1.0]", "[2,0,1.0]"), ("[0,0,0]", "[0,0]"), ("\"fit_seconds\":0.1", "\"fit_seconds\":-1.0")] {
            let bad = good.replace(from, to);
            assert_ne!(bad, good, "{from}");
            assert!(parse_fit(&bad).is_none(), "{to} accepted");
        }
    }
}
