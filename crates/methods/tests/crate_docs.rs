//! The crate documentation's method table lists every registered method, and names every
//! family folder.

#[test]
fn the_crate_docs_list_every_method_and_family() {
    let lib = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/lib.rs")).unwrap();
    let doc: String = lib.lines().filter(|l| l.starts_with("//!")).collect::<Vec<_>>().join("\n");
    for m in structdr_methods::registry() {
        assert!(doc.contains(&format!("`{}`", m.name)), "crates/methods/src/lib.rs: method `{}` missing from the table", m.name);
    }
    for dir in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/src")).unwrap() {
        let p = dir.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() && name != "api" {
            assert!(doc.contains(&format!("[`{name}`]")), "crates/methods/src/lib.rs: family `{name}` not named");
        }
    }
}
