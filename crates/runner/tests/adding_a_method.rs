//! Walks `docs/adding-a-method.md`: every Rust block of the page is the worked example's actual
//! code (so the page cannot drift from the code), and every step the page shows works: the
//! registry lists the method, `structdr methods` prints it, the `structdr embed` command of the
//! page runs, and the spec row validates with `structdr check` and runs with `structdr run`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_structdr"));
    c.env("STRUCTDR_NO_REEXEC", "1");
    c
}

/// The fenced blocks of `lang` in a Markdown text.
fn blocks<'a>(md: &'a str, lang: &str) -> Vec<&'a str> {
    let fence = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut rest = md;
    while let Some(i) = rest.find(&fence) {
        let body = &rest[i + fence.len()..];
        let j = body.find("```").expect("closed fence");
        out.push(&body[..j]);
        rest = &body[j + 3..];
    }
    out
}

#[test]
fn the_page_shows_the_example_code_and_its_steps_work() {
    let page = std::fs::read_to_string(root().join("docs/adding-a-method.md")).unwrap();
    let module = std::fs::read_to_string(root().join("crates/methods/src/spectral/rproj.rs")).unwrap();
    let registry = std::fs::read_to_string(root().join("crates/methods/src/registry.rs")).unwrap();
    let family = std::fs::read_to_string(root().join("crates/methods/src/spectral/mod.rs")).unwrap();
    // 1-2: every Rust block is a verbatim excerpt of the module (or the registry line)
    let rust = blocks(&page, "rust");
    assert!(rust.len() >= 5, "{} rust blocks", rust.len());
    for b in &rust {
        let b = b.trim_end();
        assert!(module.contains(b) || registry.contains(b), "docs/adding-a-method.md shows code that is not in rproj.rs or registry.rs:\n{b}");
    }
    assert!(family.contains("pub mod rproj;"));
    assert!(page.contains("crates/methods/src/spectral/rproj.rs"));
    // the registry entry
    let info = structdr_methods::lookup("rproj").unwrap();
    assert!(info.inductive && !info.accepts_init && info.version >= 1);
    // `structdr methods` lists it
    let out = bin().arg("methods").output().unwrap();
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("rproj"));
    // the page's `structdr embed` command
    let sh = blocks(&page, "sh").join("\n");
    let embed_line = sh.lines().find(|l| l.starts_with("structdr embed")).expect("an embed command on the page");
    let dir = tempfile::tempdir().unwrap();
    let x = ndarray::Array2::from_shape_fn((40, 6), |(i, j)| ((i * 7 + j * 3) % 11) as f64 + 0.1 * j as f64);
    ndarray_npy::write_npy(dir.path().join("X.npy"), &x).unwrap();
    let args: Vec<&str> = embed_line.split('#').next().unwrap().split_whitespace().skip(1).collect();
    let out = bin().current_dir(dir.path()).args(&args).output().unwrap();
    assert!(out.status.success(), "{embed_line}: {}", String::from_utf8_lossy(&out.stderr));
    let y: ndarray::Array2<f64> = ndarray_npy::read_npy(dir.path().join("Y.npy")).unwrap();
    assert_eq!(y.dim(), (40, 2));
    // 3: the spec row validates and runs
    let row = blocks(&page, "toml")[0];
    let spec = format!(
        "id = \"walk\"\ntitle = \"adding a method\"\noutput = \"out\"\n[evaluation]\nprotocols = [\"loocv\"]\n[[dataset]]\nname = \"three_clusters\"\nparams = {{ n = 60 }}\n{row}"
    );
    std::fs::write(dir.path().join("spec.toml"), spec).unwrap();
    let out = bin().arg("check").arg(dir.path().join("spec.toml")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("3 cells"), "{}", String::from_utf8_lossy(&out.stdout));
    let out = bin().arg("run").arg(dir.path().join("spec.toml")).arg("--results").arg(dir.path()).arg("--quiet").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = std::fs::read_to_string(dir.path().join("out").join("table.md")).unwrap();
    assert!(table.contains("| **RP** |") && table.contains("RP v1"), "{table}");
}
