//! Keys: what identifies a cell's result, and everything derived from it: the record's name
//! ([`CellKey::hash`]), the fit a cell shares with others ([`fit_key`]), the cell's seed
//! ([`cell_seed`]) and the record schema ([`SCHEMA`]). One home, so the record store, the
//! execution and the figures cannot disagree on any of them.
//!
//! The key is `sha256(canonical JSON of CellKey)`. `CellKey` holds everything that determines the
//! result — data set identity and preprocessing (the data checksum), method and the **version of
//! its numerics**, fully resolved parameters (defaults filled, sorted by name), the energy rule,
//! protocols and seed — and nothing that does not (the order of entries in the spec, output paths,
//! labels, the commit). A method whose numerics change bumps its version
//! (`structdr_methods::MethodInfo::version`), so its cells get new keys and are recomputed while
//! every other method's records are reused; old records stay until `structdr prune` removes them.
//!
//! The cell's random seed derives from the key *without* the version ([`CellKey::seed_hash`]), so a
//! version bump changes the numerics under test and nothing else; nor from an external method's
//! dependencies' checksum (only its command and the command's files,
//! [`crate::spec::external::SeedExternalKey`]), so editing a helper module recomputes its cells
//! with the seeds they had.
//!
//! Records written before keys carried versions (no `method_version` field) were made by version 1
//! of every method ([`UNVERSIONED_IS`]; the store adopts them, `crate::store::Store::adopt_unversioned`).

use crate::data::Prepared;
use crate::spec::external::SeedExternalKey;
use crate::spec::{ExternalKey, Plan, Protocol, CLASSES, DIM_ENERGY};
use serde::{Deserialize, Serialize};
use structdr_methods::api::Stage;
use structdr_methods::{ParamMap, ParamValue};

/// What identifies a grid cell's result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CellKey {
    /// Data set name (registry or generator).
    pub dataset: String,
    /// Content checksum of the data after preprocessing.
    pub data_checksum: String,
    /// Registry name of the method.
    pub method: String,
    /// Resolved parameters; `dim` is the concrete value used.
    pub params: ParamMap,
    /// Energy rule when `dim` came from it, e.g. "energy>=0.95".
    pub dim_source: String,
    /// Evaluation protocols in spec order, lowercase (`loocv`, `kmeans`); empty without `[evaluation]`.
    pub protocols: Vec<String>,
    /// Number of k-means restarts of the evaluation (0 without `[evaluation]`).
    pub kmeans_restarts: usize,
    /// Neighbourhood size of the `neighbourhood` protocol, only when the cell runs it (absent from
    /// the JSON otherwise, so the keys and hashes of all other cells are unchanged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neighbourhood_k: Option<usize>,
    /// Which of a spec's `repeats` this cell is (1, 2, ... for a randomised method's extra seeds;
    /// absent for the first, so `repeats = 1` keys are the keys cells had before repeats).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// An external method's command, the checksum of its files and its options (absent for
    /// registered methods).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<ExternalKey>,
    /// The spec's base seed.
    pub seed: u64,
    /// Bumped when the record format or the meaning of a metric changes.
    pub schema: u32,
    /// Version of the method's numerics (`MethodInfo::version`) the record was made by; 0 in
    /// records written before keys carried versions.
    #[serde(default)]
    pub method_version: u32,
}

/// The version that records written before keys carried versions were made by: every method's
/// numerics at the commit that introduced versions were version 1.
pub const UNVERSIONED_IS: u32 = 1;

/// The key as it was hashed before versions: the same fields in the same order, no version.
#[derive(Serialize)]
struct UnversionedKey<'a> {
    dataset: &'a str,
    data_checksum: &'a str,
    method: &'a str,
    params: &'a ParamMap,
    dim_source: &'a str,
    protocols: &'a [String],
    kmeans_restarts: usize,
    seed: u64,
    schema: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    repeat: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    external: Option<SeedExternalKey<'a>>,
}

/// Current record schema version.
pub const SCHEMA: u32 = 1;

impl CellKey {
    /// The resolved parameters as `key=value` pairs in key order, e.g. `C=inf lambda=0.1`.
    pub fn params_string(&self) -> String {
        self.params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
    }

    /// Hex SHA-256 of the canonical JSON form (BTreeMaps keep keys sorted).
    pub fn hash(&self) -> String {
        let canonical = serde_json::to_string(self).expect("CellKey serialises");
        structdr_datasets::sha256_hex(canonical.as_bytes())
    }

    /// Hex SHA-256 of the key without the method version: the file name records had before keys
    /// carried versions, and the identity the cell's seed derives from (so a version bump changes
    /// no seed).
    pub fn seed_hash(&self) -> String {
        let k = UnversionedKey {
            dataset: &self.dataset,
            data_checksum: &self.data_checksum,
            method: &self.method,
            params: &self.params,
            dim_source: &self.dim_source,
            protocols: &self.protocols,
            kmeans_restarts: self.kmeans_restarts,
            seed: self.seed,
            schema: self.schema,
            repeat: self.repeat,
            external: self.external.as_ref().map(ExternalKey::seed_part),
        };
        let canonical = serde_json::to_string(&k).expect("CellKey serialises");
        structdr_datasets::sha256_hex(canonical.as_bytes())
    }
}

/// The content key of `method` at `version` with `params` (dim possibly "energy", integers
/// possibly "classes") on a prepared
/// data set, evaluated by `protocols` (a method's [`crate::spec::MethodPlan::protocols`]; a
/// figure panel's fit uses the spec's).
pub fn cell_key(plan: &Plan, p: &Prepared, method: &str, version: u32, protocols: &[Protocol], params: &ParamMap) -> CellKey {
    let mut params = params.clone();
    // `"classes"`: the data set's number of distinct labels (0 when unlabelled, which the method's
    // own check then refuses with its range).
    for v in params.values_mut() {
        if *v == ParamValue::Str(CLASSES.into()) {
            *v = ParamValue::Int(p.data.n_classes() as i64);
        }
    }
    let dim_source = if params.get("dim") == Some(&ParamValue::Str(DIM_ENERGY.into())) {
        params.insert("dim".into(), ParamValue::Int(p.energy_dim as i64));
        format!("energy{}{}", plan.rule_symbol(), plan.spec.dim.threshold)
    } else {
        "fixed".into()
    };
    let restarts = plan.spec.evaluation.as_ref().map_or(0, |ev| ev.restarts);
    let neighbourhood_k = plan.spec.evaluation.as_ref().filter(|_| protocols.contains(&Protocol::Neighbourhood)).map(|ev| ev.neighbourhood_k);
    let protocols = protocols.iter().map(|p| p.name().to_string()).collect();
    CellKey {
        dataset: p.data.name.clone(),
        data_checksum: p.data.checksum.clone(),
        method: method.to_string(),
        params,
        dim_source,
        protocols,
        kmeans_restarts: restarts,
        neighbourhood_k,
        repeat: None,
        external: None,
        seed: plan.spec.seed,
        schema: SCHEMA,
        method_version: version,
    }
}

/// The seed a cell's method and k-means use: derived from the cell key (without the method
/// version, [`CellKey::seed_hash`]), so adding a cell never changes another cell's result and a
/// version bump changes no seed.
pub fn cell_seed(key: &CellKey) -> u64 {
    let h = key.seed_hash();
    u64::from_str_radix(&h[..16], 16).expect("hex")
}

/// Names of `method`'s evaluation-stage parameters (empty for an unknown method).
pub fn evaluation_stage_params(method: &str) -> Vec<&'static str> {
    structdr_methods::lookup(method).map(|m| m.params.iter().filter(|p| p.stage == Stage::Evaluation).map(|p| p.name).collect()).unwrap_or_default()
}

/// The key under which a cell's fit is shared: the cell key without the method's
/// evaluation-stage parameters (cells that differ only in those evaluate one fit). An external
/// method has none, whatever its name: a built-in of the same name says nothing about it.
pub fn fit_key(key: &CellKey) -> CellKey {
    let mut k = key.clone();
    if key.external.is_some() {
        return k;
    }
    for p in evaluation_stage_params(&key.method) {
        k.params.remove(p);
    }
    k
}

/// The current version of a registered method.
pub fn method_version(name: &str) -> anyhow::Result<u32> {
    Ok(structdr_methods::lookup(name).map_err(|e| anyhow::anyhow!("{e}"))?.version)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A small key (le on iris) for the tests of this crate.
    pub(crate) fn key() -> CellKey {
        let mut params = ParamMap::new();
        params.insert("k".into(), ParamValue::Int(10));
        params.insert("dim".into(), ParamValue::Int(2));
        CellKey {
            dataset: "iris".into(),
            data_checksum: "abc".into(),
            method: "le".into(),
            params,
            dim_source: "fixed".into(),
            protocols: vec!["loocv".into()],
            kmeans_restarts: 20,
            neighbourhood_k: None,
            repeat: None,
            external: None,
            seed: 1,
            schema: SCHEMA,
            method_version: 1,
        }
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

    /// The version is part of the hash but not of the seed identity; the seed identity is the hash
    /// keys had before versions (so committed records keep their seeds).
    #[test]
    fn version_changes_the_hash_but_not_the_seed_identity() {
        let a = key();
        let b = CellKey { method_version: 2, ..key() };
        assert_ne!(a.hash(), b.hash());
        assert_eq!(a.seed_hash(), b.seed_hash());
        // The unversioned form serialises exactly as keys did before the field existed.
        let mut v = serde_json::to_value(&a).unwrap();
        v.as_object_mut().unwrap().remove("method_version");
        let old: CellKey = serde_json::from_value(v).unwrap();
        assert_eq!(old.method_version, 0);
        assert_eq!(structdr_datasets::sha256_hex(serde_json::to_string(&old).unwrap().replace(",\"method_version\":0", "").as_bytes()), a.seed_hash());
    }
}
