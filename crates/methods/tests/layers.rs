//! The layering rules of `docs/architecture.md`, checked on the sources: method families never
//! import each other, and only `structdr-linalg` talks to BLAS / LAPACK.

use std::path::{Path, PathBuf};

const FAMILIES: [&str; 7] = ["spectral", "structure", "principal", "selection", "neighbour", "latent", "unfolding"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Whether `f` is a unit-test module in a file of its own: a `tests.rs` that its folder's
/// `mod.rs` declares `#[cfg(test)] mod tests;`. All of it is test code.
fn is_unit_test_file(f: &Path) -> bool {
    f.file_name().is_some_and(|n| n == "tests.rs") && std::fs::read_to_string(f.with_file_name("mod.rs")).is_ok_and(|m| m.contains("#[cfg(test)]\nmod tests;"))
}

#[test]
fn families_import_only_the_api_and_lower_crates() {
    let src = root().join("crates/methods/src");
    for family in FAMILIES {
        let mut files = Vec::new();
        rust_files(&src.join(family), &mut files);
        assert!(!files.is_empty(), "{family}: no sources");
        for f in files {
            let full = std::fs::read_to_string(&f).unwrap();
            // the library code: unit tests (after `#[cfg(test)]`, or a whole `tests.rs`) may use
            // the registry
            let text = if is_unit_test_file(&f) { "" } else { full.split("#[cfg(test)]").next().unwrap_or("") };
            for other in FAMILIES.iter().filter(|o| **o != family) {
                assert!(!text.contains(&format!("crate::{other}")), "{} imports the {other} family", f.display());
            }
            assert!(!text.contains("crate::registry::"), "{} reaches the registry (only tests may)", f.display());
        }
    }
    // the api imports no family and not the registry
    let mut api = Vec::new();
    rust_files(&src.join("api"), &mut api);
    for f in api {
        let text = std::fs::read_to_string(&f).unwrap();
        for fam in FAMILIES.iter().chain(&["registry"]) {
            assert!(!text.contains(&format!("crate::{fam}::")), "{} imports crate::{fam}", f.display());
        }
    }
}

#[test]
fn only_linalg_calls_blas_and_lapack() {
    let crates = root().join("crates");
    let mut files = Vec::new();
    for c in ["numerics", "datasets", "eval", "methods", "runner"] {
        rust_files(&crates.join(c).join("src"), &mut files);
    }
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for needle in ["lapack_sys::", "cblas_sys::", "fn dgemm_", "fn dpotrf_", "fn dsyrk_", "fn dtrsm_"] {
            assert!(!text.contains(needle), "{} calls BLAS/LAPACK directly ({needle}); that belongs in crates/linalg", f.display());
        }
    }
    // and the manifests agree: lapack-sys is a dependency of linalg alone
    for c in ["numerics", "datasets", "eval", "methods", "runner"] {
        let toml = std::fs::read_to_string(crates.join(c).join("Cargo.toml")).unwrap();
        assert!(!toml.contains("lapack-sys"), "crates/{c} depends on lapack-sys");
    }
}
