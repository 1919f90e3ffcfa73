//! The registry's parameter schemas are pinned by a fixture: every method's name and version and,
//! for each parameter in order, its name, kind (as printed and in full), default, stage and doc.
//! Record keys, `docs/methods.md` and `structdr methods` all derive from these, so a change to how
//! parameters are declared must leave this text unchanged. After a deliberate schema change,
//! regenerate the fixture with `STRUCTDR_BLESS_SCHEMA=1 cargo test -p structdr-methods --test suite -- schema::`
//! and review the diff.

use structdr_methods::registry;

fn render() -> String {
    let mut s = String::new();
    for m in registry() {
        s.push_str(&format!("== {} (version {})\n", m.name, m.version));
        for p in &m.params {
            s.push_str(&format!(
                "- {}\n  kind: {}\n  kind (full): {:?}\n  default: {:?}\n  stage: {:?}\n  doc: {}\n",
                p.name, p.kind, p.kind, p.default, p.stage, p.doc
            ));
        }
    }
    s
}

#[test]
fn every_registered_schema_matches_the_fixture() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/schema.txt");
    let now = render();
    if std::env::var_os("STRUCTDR_BLESS_SCHEMA").is_some() {
        std::fs::write(&path, &now).unwrap();
        return;
    }
    let pinned = std::fs::read_to_string(&path).expect("tests/fixtures/schema.txt (generate it with STRUCTDR_BLESS_SCHEMA=1)");
    if pinned != now {
        let first = pinned.lines().zip(now.lines()).position(|(a, b)| a != b).unwrap_or_else(|| pinned.lines().count().min(now.lines().count()));
        panic!(
            "the registry's schemas differ from tests/fixtures/schema.txt from line {}:\n  pinned: {:?}\n  now:    {:?}",
            first + 1,
            pinned.lines().nth(first),
            now.lines().nth(first)
        );
    }
}
