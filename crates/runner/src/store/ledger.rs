//! Which spec files write into a record store ([`SpecLedger`], `<out>/specs.toml` beside
//! `records/`): one spec file per id, stores shared on purpose by specs of different ids.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Name of the file beside `records/` that names the specs writing into the store.
pub const SPECS_FILE: &str = "specs.toml";

/// Which spec files write into a store, by id: `<out>/specs.toml` beside `records/`.
///
/// The rule is about the id: one id, one spec file. A second spec file with an id the store
/// already knows is refused, naming both paths (a copy of a spec that forgot to change its id
/// would otherwise write into the original's store and overwrite its tables). Specs with
/// different ids may share a store on purpose (`output = "..."`, e.g. `esl_table1` reads and
/// writes `table1_loocv`'s cells): each is listed under its own id. Two ids whose tables would
/// be written to the same path are refused as well. Paths are kept relative to the directory
/// that holds the results root (the project's root for `--results results`), so the file means
/// the same in every checkout; a spec outside that directory is kept by its absolute path.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SpecLedger {
    /// Spec id -> where its spec file and its tables are.
    pub specs: BTreeMap<String, LedgerEntry>,
}

/// One spec of a [`SpecLedger`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerEntry {
    /// The spec file (relative to the directory holding the results root, or absolute).
    pub spec: String,
    /// The tables' path stem, relative to the results root (absent for specs without tables).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tables: Option<String>,
}

/// `path` made absolute and canonical where it exists (else as given, made absolute).
fn canonical(path: &Path) -> PathBuf {
    let abs = if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir().map(|d| d.join(path)).unwrap_or_else(|_| path.to_path_buf()) };
    std::fs::canonicalize(&abs).unwrap_or(abs)
}

/// `path` as a ledger writes it: relative to `base` with `/` separators when under it, else
/// absolute.
fn ledger_path(path: &Path, base: &Path) -> String {
    let p = canonical(path);
    match p.strip_prefix(base) {
        Ok(rel) => rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/"),
        Err(_) => p.display().to_string(),
    }
}

impl SpecLedger {
    /// The ledger of the store in `out_dir` (empty when there is none yet).
    pub fn load(out_dir: &Path) -> anyhow::Result<SpecLedger> {
        let path = out_dir.join(SPECS_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => toml::from_str(&text)
                .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.message().trim()).context("the store's spec ledger does not parse")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(SpecLedger::default()),
            Err(e) => Err(anyhow::anyhow!("cannot read {}: {e}", path.display())),
        }
    }

    /// [`SpecLedger::check`] for a plan: its id, its file, its tables (when it has methods) and
    /// its store under `results`.
    pub fn check_plan(plan: &crate::spec::Plan, results: &Path, register: bool) -> anyhow::Result<()> {
        let tables = (!plan.methods.is_empty()).then(|| {
            let rel = match &plan.spec.table_path {
                Some(p) => PathBuf::from(p),
                None => PathBuf::from(plan.spec.output.as_deref().unwrap_or(&plan.spec.id)).join("table"),
            };
            rel.components()
                .filter(|c| !matches!(c, std::path::Component::CurDir))
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        });
        SpecLedger::check(&plan.output_dir(results), results, &plan.spec.id, &plan.path, tables.as_deref(), register)
    }

    /// Checks that the spec `id` in file `spec` (its tables at the stem `tables`, relative to the
    /// results root, if it has tables) may write into the store in `out_dir` under the results
    /// root `results`: refused when the ledger lists `id` with another spec file, or another id
    /// with the same tables. With `register`, a spec not yet listed is added (the file written
    /// atomically).
    pub fn check(out_dir: &Path, results: &Path, id: &str, spec: &Path, tables: Option<&str>, register: bool) -> anyhow::Result<()> {
        let results = canonical(results);
        let base = results.parent().map(Path::to_path_buf).unwrap_or_else(|| results.clone());
        let entry = LedgerEntry { spec: ledger_path(spec, &base), tables: tables.map(str::to_string) };
        let mut ledger = SpecLedger::load(out_dir)?;
        let file = out_dir.join(SPECS_FILE);
        if let Some(known) = ledger.specs.get(id) {
            if known.spec != entry.spec {
                anyhow::bail!(
                    "spec id '{id}' already writes into {} from {}; {} has the same id. Give this spec its own id; if the spec file moved, change its path under [{id}] in {}",
                    out_dir.display(),
                    known.spec,
                    entry.spec,
                    file.display()
                );
            }
        }
        if let Some(t) = &entry.tables {
            if let Some((other, e)) = ledger.specs.iter().find(|(other, e)| other.as_str() != id && e.tables.as_ref() == Some(t)) {
                anyhow::bail!(
                    "spec '{id}' ({}) would write its tables to {t} in {}, where spec '{other}' ({}) writes its tables; give one of them its own table_path",
                    entry.spec,
                    results.display(),
                    e.spec
                );
            }
        }
        if register && ledger.specs.get(id) != Some(&entry) {
            ledger.specs.insert(id.to_string(), entry);
            std::fs::create_dir_all(out_dir).map_err(|e| crate::files::path_error("create", out_dir, e))?;
            let text = format!(
                "# The specs that write into this record store, by id (written by structdr run). One id, one spec\n# file: another file with a listed id is refused. Paths: specs relative to the directory holding\n# the results root, tables relative to the results root.\n\n{}",
                toml::to_string(&ledger).map_err(|e| anyhow::anyhow!("{e}"))?
            );
            crate::files::atomic_write(&file, text.as_bytes())?; // its error names the file
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_spec_file_per_id_relative_to_the_results_parent() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("experiments/other")).unwrap();
        for f in ["experiments/a.toml", "experiments/other/a.toml", "experiments/b.toml"] {
            std::fs::write(root.join(f), "").unwrap();
        }
        let results = root.join("results");
        let out = results.join("a");
        SpecLedger::check(&out, &results, "a", &root.join("experiments/a.toml"), Some("a/table"), true).unwrap();
        let ledger = SpecLedger::load(&out).unwrap();
        assert_eq!(ledger.specs["a"], LedgerEntry { spec: "experiments/a.toml".into(), tables: Some("a/table".into()) });
        // the same file, again: fine; another file with the same id: refused, both named
        SpecLedger::check(&out, &results, "a", &root.join("experiments/../experiments/a.toml"), Some("a/table"), true).unwrap();
        let e = SpecLedger::check(&out, &results, "a", &root.join("experiments/other/a.toml"), Some("a/table"), false).unwrap_err().to_string();
        assert!(e.contains("experiments/a.toml") && e.contains("experiments/other/a.toml"), "{e}");
        // another id sharing the store with its own tables: listed beside; with the same tables: refused
        SpecLedger::check(&out, &results, "b", &root.join("experiments/b.toml"), Some("b"), true).unwrap();
        assert_eq!(SpecLedger::load(&out).unwrap().specs.len(), 2);
        let e = SpecLedger::check(&out, &results, "c", &root.join("experiments/b.toml"), Some("a/table"), true).unwrap_err().to_string();
        assert!(e.contains("spec 'a'") && e.contains("a/table"), "{e}");
        // a spec outside the results root's parent is kept by its absolute path
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join("x.toml"), "").unwrap();
        SpecLedger::check(&results.join("x"), &results, "x", &elsewhere.path().join("x.toml"), None, true).unwrap();
        let x = SpecLedger::load(&results.join("x")).unwrap();
        assert!(Path::new(&x.specs["x"].spec).is_absolute());
    }
}
