//! The result store: one JSON record per finished grid cell, written atomically under a content
//! hash of the normalised cell, so a re-run recomputes only missing cells and a killed run loses
//! no finished cell.
//!
//! The key and everything derived from it are [`crate::keys`]. Records written before keys carried
//! versions are adopted under their versioned key the first time `run` meets them, and the old file
//! removed ([`Store::adopt_unversioned`]).
//!
//! Every record carries a checksum of its content ([`Record::checksum`], [`Record::content_checksum`]:
//! SHA-256 of the record's canonical JSON without that field), set when it is written
//! ([`Store::put`]). A record whose checksum does not match its content (a number edited by hand,
//! a bad merge) is refused: [`Store::read`] says so, [`Store::get`] treats it as missing, `run`
//! recomputes it and tables show it as not computed. A record without a checksum (written before
//! records carried one) is read as *unverified* and accepted ([`Integrity::Unverified`]);
//! `structdr store seal` stamps such records once ([`Store::seal`]).
//!
//! A store remembers which spec writes into it, by id ([`SpecLedger`], `<out>/specs.toml` beside
//! `records/`): a second spec file with the same id is refused, naming both paths.

pub mod fits;
pub mod ledger;
pub mod panels;

pub use fits::{fit_text, parse_fit, FitStore, FITS_DIR};
pub use ledger::{LedgerEntry, SpecLedger, SPECS_FILE};
pub use panels::{read_degenerate_panel, read_panel, DegeneratePanel, PanelStore, PANELS_DIR};

use crate::files::PathContext;
use crate::keys::{CellKey, UNVERSIONED_IS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

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
    /// Hex SHA-256 of the record's content ([`Record::content_checksum`]), set when the record is
    /// written ([`Store::put`]); absent in records written before records carried one
    /// ([`Integrity::Unverified`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
}

/// What a record's checksum says about its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Integrity {
    /// The checksum matches the content.
    Verified,
    /// No checksum: written before records carried one. Accepted (`structdr store seal` stamps it).
    Unverified,
    /// The checksum does not match the content: the record was changed after it was written.
    Mismatch {
        /// The checksum the record carries.
        stored: String,
        /// The checksum of its content.
        content: String,
    },
}

impl Integrity {
    /// Why a record with this integrity is refused (`None`: accepted).
    pub fn refusal(&self) -> Option<String> {
        match self {
            Integrity::Mismatch { stored, content } => Some(format!(
                "its checksum {} does not match its content ({}): changed after it was written",
                &stored[..stored.len().min(12)],
                &content[..content.len().min(12)]
            )),
            _ => None,
        }
    }
}

impl Record {
    /// The cell's resolved parameters as `key=value` pairs in key order, e.g. `C=inf lambda=0.1`.
    pub fn params_string(&self) -> String {
        self.key.params_string()
    }

    /// Hex SHA-256 of the record's canonical JSON without its `checksum` field: every field in
    /// declaration order (the key's and the metrics' maps sorted), compact, floats in shortest
    /// round-trip form. The record is normalised through one write and read first, so the
    /// checksum of a record is the checksum of what a reader of its file gets (a value JSON cannot
    /// hold, such as a NaN objective, reads back as absent either way).
    pub fn content_checksum(&self) -> String {
        let bare = Record { checksum: None, ..self.clone() };
        let text = serde_json::to_string(&bare).expect("a record serialises");
        let read = serde_json::from_str::<Record>(&text).map(|r| serde_json::to_string(&r).expect("a record serialises"));
        structdr_datasets::sha256_hex(read.unwrap_or(text).as_bytes())
    }

    /// The record with its checksum set to its content's.
    pub fn sealed(self) -> Record {
        let checksum = Some(self.content_checksum());
        Record { checksum, ..self }
    }

    /// Whether the record's checksum matches its content.
    pub fn integrity(&self) -> Integrity {
        match &self.checksum {
            None => Integrity::Unverified,
            Some(stored) => {
                let content = self.content_checksum();
                if *stored == content {
                    Integrity::Verified
                } else {
                    Integrity::Mismatch { stored: stored.clone(), content }
                }
            }
        }
    }
}

/// A record file as [`Store::read`] finds it.
#[derive(Debug, Clone)]
pub enum Lookup {
    /// No record file, or one that does not parse as a record of this cell.
    Missing,
    /// A record whose checksum matches, or one written before records carried a checksum.
    Found(Record),
    /// A record whose checksum does not match its content: never used, recomputed by `run`.
    Refused {
        /// The record as the file holds it (for `verify`, which shows what it claims).
        record: Record,
        /// Why it is refused.
        why: String,
    },
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
        std::fs::create_dir_all(&dir).at_path("create the claims directory", &dir)?;
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
                    f.write_all(text.as_bytes()).at_path("write the claim", &path)?;
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
                Err(e) => return Err(crate::files::path_error("create the claim", &path, e)),
            }
        }
        Ok(ClaimOutcome::Busy("contended".into()))
    }
}

impl Store {
    /// The claim on the cell `hash` when a live run holds one (its text, `pid host started`):
    /// the cell is being computed by another run. `None` when there is no claim file or its run
    /// is gone.
    pub fn live_claim(&self, hash: &str) -> Option<String> {
        let path = self.claims_dir().join(format!("{hash}.claim"));
        let text = std::fs::read_to_string(&path).ok()?;
        let age = std::fs::metadata(&path).ok().and_then(|m| m.modified().ok()).and_then(|t| t.elapsed().ok());
        let starting = text.is_empty() && age.is_some_and(|a| a < std::time::Duration::from_secs(5));
        (starting || claim_is_live(&text, age)).then(|| if starting { "a run starting now".to_string() } else { text.trim().to_string() })
    }

    /// Opens the record store of a spec's output directory, `<out_dir>/records`. A store left in
    /// the former location `<out_dir>/cache` is moved there first, or merged into it record by
    /// record when both exist, so no finished cell is lost by the move.
    pub fn open_in(out_dir: &Path) -> std::io::Result<Store> {
        let dir = out_dir.join(RECORDS_DIR);
        let legacy = out_dir.join(LEGACY_DIR);
        if legacy.is_dir() {
            if !dir.exists() {
                std::fs::rename(&legacy, &dir).at_path(&format!("move {} to", legacy.display()), &dir)?;
            } else {
                for entry in std::fs::read_dir(&legacy).at_path("read", &legacy)? {
                    let from = entry?.path();
                    let Some(name) = from.file_name() else { continue };
                    let to = dir.join(name);
                    if from.extension().is_some_and(|x| x == "json") && !to.exists() {
                        std::fs::rename(&from, &to).at_path(&format!("move {} to", from.display()), &to)?;
                    }
                }
            }
        }
        Store::open(&dir)
    }

    /// Opens (creating) the store directory, and removes the temp files dead writers left in it
    /// ([`crate::files::sweep_stale_temps`]: a run killed mid-write, a full disk before temp files
    /// were removed on failure).
    pub fn open(dir: &Path) -> std::io::Result<Store> {
        std::fs::create_dir_all(dir).at_path("create the record store", dir)?;
        crate::files::sweep_stale_temps(dir);
        Ok(Store { dir: dir.to_path_buf() })
    }

    fn path(&self, hash: &str) -> PathBuf {
        self.dir.join(format!("{hash}.json"))
    }

    /// The record of `hash` as its file holds it: missing (no file, a corrupt file, a record of
    /// another cell), found (checksum verified, or none yet), or refused (checksum mismatch).
    pub fn read(&self, hash: &str) -> Lookup {
        let Ok(text) = std::fs::read_to_string(self.path(hash)) else { return Lookup::Missing };
        let Ok(rec) = Record::from_json(&text) else { return Lookup::Missing };
        if rec.hash != hash {
            return Lookup::Missing;
        }
        match rec.integrity().refusal() {
            Some(why) => Lookup::Refused { record: rec, why },
            None => Lookup::Found(rec),
        }
    }

    /// The usable record of `hash`: present, readable, and not refused by its checksum (a corrupt
    /// or refused file counts as missing; [`Store::read`] tells them apart).
    pub fn get(&self, hash: &str) -> Option<Record> {
        match self.read(hash) {
            Lookup::Found(r) => Some(r),
            _ => None,
        }
    }

    /// Writes a record atomically (temp file in the same directory, fsync, rename), with its
    /// checksum set to its content's ([`Record::sealed`]).
    pub fn put(&self, rec: &Record) -> std::io::Result<()> {
        self.write(&rec.clone().sealed())
    }

    /// Writes `rec` as it is, atomically ([`crate::files::atomic_write`]).
    fn write(&self, rec: &Record) -> std::io::Result<()> {
        crate::files::atomic_write(&self.path(&rec.hash), serde_json::to_string_pretty(rec).expect("record serialises").as_bytes())
    }

    /// Stamps every record of the store that carries no checksum with its content's
    /// ([`Record::sealed`]), once: the record's file gets the `checksum` field and nothing else
    /// changes. A file is left as it is, and counted, when it does not parse, when its checksum
    /// does not match (sealing would bless an edit), or when its text is not exactly what this
    /// version writes for the record it holds (rewriting it would change more than the one
    /// field). With `dry_run` only counts.
    pub fn seal(&self, dry_run: bool) -> std::io::Result<SealCounts> {
        let mut counts = SealCounts::default();
        for (path, rec) in self.records()? {
            let Some(rec) = rec else {
                counts.unreadable.push(path);
                continue;
            };
            match rec.integrity() {
                Integrity::Verified => counts.already += 1,
                Integrity::Mismatch { .. } => counts.refused.push(path),
                Integrity::Unverified => {
                    let text = std::fs::read_to_string(&path).at_path("read", &path)?;
                    if serde_json::to_string_pretty(&rec).expect("record serialises") != text || path.file_stem().is_none_or(|s| *s != *rec.hash) {
                        counts.not_canonical.push(path);
                        continue;
                    }
                    if !dry_run {
                        self.write(&rec.sealed())?;
                    }
                    counts.sealed += 1;
                }
            }
        }
        Ok(counts)
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
        std::fs::remove_file(self.path(&old)).at_path("remove", &self.path(&old))?;
        Ok(Some(rec))
    }

    /// Removes every record whose method version differs from `current(key)` (or whose method
    /// `current` does not know); with `dry_run` only counts. `current` sees the whole key, so an
    /// external method (`key.external`) is told apart from a built-in of the same name. Returns
    /// `(kept, removed)` record counts per method, in method-name order. Unreadable files are left
    /// alone and counted as kept.
    pub fn prune(&self, current: impl Fn(&CellKey) -> Option<u32>, dry_run: bool) -> std::io::Result<BTreeMap<String, (usize, usize)>> {
        let mut counts: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for (path, rec) in self.records()? {
            let Some(rec) = rec else {
                counts.entry("(unreadable)".into()).or_default().0 += 1;
                continue;
            };
            let c = counts.entry(rec.key.method.clone()).or_default();
            if current(&rec.key) == Some(rec.key.method_version) {
                c.0 += 1;
            } else {
                c.1 += 1;
                if !dry_run {
                    std::fs::remove_file(&path).at_path("remove", &path)?;
                }
            }
        }
        Ok(counts)
    }

    /// Every record file of the store in file-name order, with its record (`None` where the
    /// file does not parse).
    pub fn records(&self) -> std::io::Result<Vec<(PathBuf, Option<Record>)>> {
        let mut paths = Vec::new();
        for entry in std::fs::read_dir(&self.dir).at_path("read the record store", &self.dir)? {
            let path = entry.at_path("read the record store", &self.dir)?.path();
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

/// What [`Store::seal`] did.
#[derive(Debug, Default)]
pub struct SealCounts {
    /// Records stamped now (or that would be, in a dry run).
    pub sealed: usize,
    /// Records that already carried a matching checksum.
    pub already: usize,
    /// Records whose checksum does not match their content: left alone.
    pub refused: Vec<PathBuf>,
    /// Files that do not parse as records: left alone.
    pub unreadable: Vec<PathBuf>,
    /// Records whose file is not exactly what this version writes for them: left alone.
    pub not_canonical: Vec<PathBuf>,
}

impl Record {
    /// A record from its JSON text (a record file's content), as [`Store::get`] reads it.
    pub fn from_json(text: &str) -> serde_json::Result<Record> {
        serde_json::from_str(text)
    }
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
    use structdr_methods::api::ParamValue;

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
            checksum: None,
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
        let dry = store.prune(|k| (k.method == "le").then_some(1), true).unwrap();
        assert_eq!(dry["le"], (1, 1));
        assert_eq!(store.len(), 2);
        store.prune(|k| (k.method == "le").then_some(1), false).unwrap();
        assert_eq!(store.len(), 1);
        assert!(store.get(&v1.hash()).is_some());
    }

    /// A written record carries the checksum of its content; a change to any content field
    /// (metrics, status, key, notes, solver end) is a mismatch, refused by `read` and `get`.
    #[test]
    fn a_record_is_sealed_when_written_and_any_edit_breaks_its_checksum() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let rec = record(1);
        assert_eq!(rec.integrity(), Integrity::Unverified);
        store.put(&rec).unwrap();
        let stored = store.get(&rec.hash).expect("a sealed record is found");
        assert_eq!(stored.integrity(), Integrity::Verified);
        assert_eq!(stored.checksum.as_deref(), Some(rec.content_checksum().as_str()));
        // the checksum does not depend on itself, and a NaN objective (written as null) reads back the same
        let mut nan = rec.clone();
        nan.objective = Some(f64::NAN);
        let back = Record::from_json(&serde_json::to_string(&nan.clone().sealed()).unwrap()).unwrap();
        assert_eq!(back.integrity(), Integrity::Verified);
        let edits: Vec<Box<dyn Fn(&mut Record)>> = vec![
            Box::new(|r| *r.metrics.get_mut("loocv_1nn_accuracy").unwrap() = 0.75),
            Box::new(|r| *r.metrics.get_mut("loocv_1nn_accuracy").unwrap() = f64::from_bits(0.5f64.to_bits() + 1)),
            Box::new(|r| r.status = Status::Failed),
            Box::new(|r| r.error = Some("x".into())),
            Box::new(|r| r.key.params.insert("k".into(), ParamValue::Int(11)).map(drop).unwrap_or(())),
            Box::new(|r| r.notes.push("edited".into())),
            Box::new(|r| r.iterations = 7),
            Box::new(|r| r.converged = false),
            Box::new(|r| r.dim = 3),
            Box::new(|r| r.objective = Some(1.0)),
        ];
        for (i, edit) in edits.iter().enumerate() {
            let mut r = stored.clone();
            edit(&mut r);
            assert!(matches!(r.integrity(), Integrity::Mismatch { .. }), "edit {i} kept a matching checksum");
            std::fs::write(dir.path().join(format!("{}.json", rec.hash)), serde_json::to_string_pretty(&r).unwrap()).unwrap();
            assert!(matches!(store.read(&rec.hash), Lookup::Refused { .. }) && store.get(&rec.hash).is_none(), "edit {i} not refused");
        }
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
}
