//! The result store: one JSON record per finished grid cell, written atomically under a content
//! hash of the normalised cell, so a re-run recomputes only missing cells and a killed run loses
//! no finished cell.
//!
//! The key is `sha256(canonical JSON of CellKey)`. `CellKey` holds everything that determines the
//! result — data set identity and preprocessing, method, fully resolved parameters (defaults
//! filled, sorted by name), the energy rule, protocols and seed — and nothing that does not (the
//! order of entries in the spec, output paths, labels, the code version).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use structdr_methods::ParamMap;

/// What identifies a grid cell's result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CellKey {
    /// Data set name (registry or generator).
    pub dataset: String,
    /// Content checksum of the data after preprocessing.
    pub data_checksum: String,
    pub method: String,
    /// Resolved parameters; `dim` is the concrete value used.
    pub params: ParamMap,
    /// Energy rule when `dim` came from it, e.g. "energy>=0.95".
    pub dim_source: String,
    pub protocols: Vec<String>,
    pub kmeans_restarts: usize,
    pub seed: u64,
    /// Bumped when the record format or the meaning of a metric changes.
    pub schema: u32,
}

/// Current record schema version.
pub const SCHEMA: u32 = 1;

impl CellKey {
    /// Hex SHA-256 of the canonical JSON form (BTreeMaps keep keys sorted).
    pub fn hash(&self) -> String {
        let canonical = serde_json::to_string(self).expect("CellKey serialises");
        structdr_datasets::sha256_hex(canonical.as_bytes())
    }
}

/// Outcome of a cell.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Failed,
}

/// One finished grid cell.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub key: CellKey,
    pub hash: String,
    pub status: Status,
    /// Error message of a failed cell.
    #[serde(default)]
    pub error: Option<String>,
    /// Metric name -> value (`loocv_1nn_accuracy`, `acc_mean`, `acc_std`, `nmi_mean`, ...).
    pub metrics: BTreeMap<String, f64>,
    /// Resolved reduced dimension d.
    pub dim: usize,
    pub n_samples: usize,
    pub n_features: usize,
    pub fit_seconds: f64,
    pub eval_seconds: f64,
    pub iterations: usize,
    pub converged: bool,
    #[serde(default)]
    pub notes: Vec<String>,
    pub code_version: String,
    /// Thread layout and OpenBLAS kernel set the timings were taken under, e.g.
    /// "rayon=2 blas=1 openblas=SkylakeX".
    pub threads: String,
    /// Seconds since the Unix epoch when the record was written.
    pub finished_at: u64,
}

impl Record {
    /// The cell's resolved parameters as `key=value` pairs in key order, e.g. `C=inf lambda=0.1`.
    pub fn params_string(&self) -> String {
        self.key.params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
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
        let rec: Record = serde_json::from_str(&text).ok()?;
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

    /// Number of stored records.
    pub fn len(&self) -> usize {
        std::fs::read_dir(&self.dir).map(|r| r.filter_map(|e| e.ok()).filter(|e| e.path().extension().is_some_and(|x| x == "json")).count()).unwrap_or(0)
    }
}

/// The code version compiled in (crate version and git commit when known).
pub fn code_version() -> String {
    format!("{}+{}", env!("CARGO_PKG_VERSION"), option_env!("STRUCTDR_GIT_HASH").unwrap_or("unknown"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use structdr_methods::ParamValue;

    fn key() -> CellKey {
        let mut params = ParamMap::new();
        params.insert("k".into(), ParamValue::Int(10));
        params.insert("dim".into(), ParamValue::Int(2));
        CellKey { dataset: "iris".into(), data_checksum: "abc".into(), method: "le".into(), params, dim_source: "fixed".into(), protocols: vec!["loocv".into()], kmeans_restarts: 20, seed: 1, schema: SCHEMA }
    }

    /// A finished record of `key()` with seed `seed` (so distinct seeds give distinct hashes).
    fn record(seed: u64) -> Record {
        let k = CellKey { seed, ..key() };
        Record { hash: k.hash(), key: k, status: Status::Ok, error: None, metrics: [("loocv_1nn_accuracy".to_string(), 0.5)].into(), dim: 2, n_samples: 3, n_features: 4, fit_seconds: 0.1, eval_seconds: 0.1, iterations: 0, converged: true, notes: vec![], code_version: code_version(), threads: "t".into(), finished_at: 0 }
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

    #[test]
    fn hash_ignores_insertion_order_and_sees_every_field() {
        let a = key();
        let mut params = ParamMap::new();
        params.insert("dim".into(), ParamValue::Int(2));
        params.insert("k".into(), ParamValue::Int(10));
        let b = CellKey { params, ..key() };
        assert_eq!(a.hash(), b.hash());
        let c = CellKey { seed: 2, ..key() };
        assert_ne!(a.hash(), c.hash());
        let mut d = key();
        d.params.insert("k".into(), ParamValue::Int(11));
        assert_ne!(a.hash(), d.hash());
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
