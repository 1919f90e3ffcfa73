//! Replays every committed fuzz corpus file (`fuzz/corpus/<target>/`, the inputs `just fuzz` kept,
//! its seeds and the crashes it once found) through the fuzz target bodies of [`structdr::fuzz`]
//! on the stable toolchain: each must return without a panic, and round trips must hold.

use std::path::Path;

#[test]
fn every_committed_corpus_input_passes_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let mut counts = Vec::new();
    for (name, body) in structdr::fuzz::TARGETS {
        let dir = root.join(name);
        let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).map(|e| e.unwrap().path()).collect();
        files.sort();
        assert!(!files.is_empty(), "fuzz/corpus/{name} is empty");
        for f in &files {
            let data = std::fs::read(f).unwrap();
            let outcome = std::panic::catch_unwind(|| body(&data));
            assert!(outcome.is_ok(), "fuzz target {name} panics on {}", f.display());
        }
        counts.push(format!("{name}: {}", files.len()));
    }
    eprintln!("replayed {}", counts.join(", "));
}
