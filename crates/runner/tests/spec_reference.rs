//! `docs/specs.md` against the loader: every section's keys are exactly the keys the spec's types
//! accept (read from the types themselves, so a key added to the loader and not to the page, or
//! left on the page after it went, fails here), every `preprocess` op on the page is one the
//! loader knows and all of them are there, and the page's complete example validates.

use serde::de::{self, Deserialize, Deserializer, Visitor};
use std::collections::BTreeSet;
use std::path::Path;
use structdr::spec::{self, DatasetSpec, DimRule, Evaluation, FigureDef, FigureSpec, ImageShape, MethodSpec, PanelDef, Reference, Spec, TableSpec};

/// A deserializer that answers nothing and keeps the field names a derived `Deserialize` of a
/// struct asks for (`deserialize_struct`'s `fields`: the names as written in TOML, renames applied).
struct FieldNames(Option<&'static [&'static str]>);

impl<'de> Deserializer<'de> for &mut FieldNames {
    type Error = de::value::Error;
    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }
    fn deserialize_struct<V: Visitor<'de>>(self, _: &'static str, fields: &'static [&'static str], _: V) -> Result<V::Value, Self::Error> {
        self.0 = Some(fields);
        Err(de::Error::custom("fields read"))
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit unit_struct
        newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// The keys the loader accepts in a table read as `T`.
fn keys<'de, T: Deserialize<'de>>() -> BTreeSet<String> {
    let mut d = FieldNames(None);
    let _ = T::deserialize(&mut d);
    d.0.expect("a struct with named fields").iter().map(|s| s.to_string()).collect()
}

/// The page's sections: heading (after `## `) -> the backquoted names in the first column of the
/// rows of its key tables (those whose header starts `| key |` or `| op |`; other tables, such as
/// the protocols' metrics, list values, not keys).
fn page_sections(page: &str) -> Vec<(String, BTreeSet<String>)> {
    let mut out: Vec<(String, BTreeSet<String>)> = Vec::new();
    let mut header: Option<&str> = None;
    for line in page.lines() {
        if !line.starts_with('|') {
            header = None;
        }
        if let Some(h) = line.strip_prefix("## ") {
            out.push((h.trim().to_string(), BTreeSet::new()));
        } else if line.starts_with('|') && header.is_none() {
            header = Some(line);
        } else if let (Some(first), Some((_, set))) = (line.strip_prefix("| `"), out.last_mut()) {
            let key_table = header.is_some_and(|h| h.starts_with("| key |") || h.starts_with("| op |"));
            if let (true, Some((name, _))) = (key_table, first.split_once("` |")) {
                set.insert(name.to_string());
            }
        }
    }
    out
}

/// The rows of the page's section `heading`.
fn section_rows<'a>(page: &'a str, heading: &str) -> Vec<&'a str> {
    let start = page.find(&format!("\n## {heading}\n")).unwrap_or_else(|| panic!("no section '## {heading}'"));
    let body = &page[start + 1..];
    let end = body[3..].find("\n## ").map_or(body.len(), |i| i + 3);
    body[..end].lines().filter(|l| l.starts_with("| `")).collect()
}

fn page() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/specs.md")).expect("docs/specs.md")
}

#[test]
fn every_key_the_loader_accepts_is_on_the_page_and_nothing_else() {
    let sections = page_sections(&page());
    let expected: Vec<(&str, BTreeSet<String>)> = vec![
        ("Top level", keys::<Spec>()),
        ("`[dim]`", keys::<DimRule>()),
        ("`[evaluation]`", keys::<Evaluation>()),
        ("`[[dataset]]`", keys::<DatasetSpec>()),
        ("`[[method]]`", keys::<MethodSpec>()),
        ("`[table]`", keys::<TableSpec>()),
        ("`[reference]`", keys::<Reference>()),
        ("`[figures]`", keys::<FigureSpec>()),
        ("`[[figure]]`", keys::<FigureDef>()),
        ("`[[figure.panel]]`", keys::<PanelDef>()),
        ("`image`", keys::<ImageShape>()),
    ];
    // the introspection itself reads real names (a renamed field appears as written in TOML)
    assert!(expected[0].1.contains("dataset") && expected[0].1.contains("figure") && !expected[0].1.contains("datasets"));
    for (heading, want) in &expected {
        let Some((_, have)) = sections.iter().find(|(h, _)| h == heading) else { panic!("docs/specs.md has no section '## {heading}'") };
        let missing: Vec<_> = want.difference(have).collect();
        let unknown: Vec<_> = have.difference(want).collect();
        assert!(
            missing.is_empty() && unknown.is_empty(),
            "docs/specs.md, {heading}: keys the loader accepts but the page lacks: {missing:?}; keys on the page the loader refuses: {unknown:?}"
        );
    }
}

#[test]
fn every_preprocess_op_is_on_the_page_with_an_example_that_parses() {
    let sections = page_sections(&page());
    let (_, ops) = sections.iter().find(|(h, _)| h == "`preprocess` steps").expect("a preprocess section");
    // the loader's own list of ops: its error for an unknown one names every known one
    let err = toml::from_str::<structdr_datasets::preprocess::Step>("op = \"no_such_op\"").unwrap_err().to_string();
    let known: BTreeSet<String> = err.split('`').skip(3).step_by(2).map(str::to_string).collect();
    assert!(known.contains("zscore") && known.len() >= 8, "could not read the ops from: {err}");
    assert_eq!(ops, &known, "docs/specs.md's preprocess ops against the loader's");
    // each row's example is a step the loader reads as that op
    let page = page();
    let rows = section_rows(&page, "`preprocess` steps");
    assert_eq!(rows.len(), known.len());
    for line in rows {
        let example = line.split('`').nth(3).expect("an example column");
        let step: structdr_datasets::preprocess::Step = toml::from_str(&format!("s = {example}"))
            .map(|t: toml::Table| t["s"].clone().try_into().unwrap_or_else(|e| panic!("{example}: {e}")))
            .unwrap_or_else(|e| panic!("{example}: {e}"));
        step.validate().unwrap_or_else(|e| panic!("{example}: {e}"));
        // and it is the op of its row
        let op = toml::Value::try_from(&step).unwrap().get("op").and_then(|v| v.as_str().map(str::to_string));
        assert_eq!(op.as_deref(), line.split('`').nth(1), "{line}");
    }
}

#[test]
fn the_complete_example_validates() {
    let page = page();
    let start = page.find("## A complete example").expect("the example section");
    let body = &page[start..];
    let toml_start = body.find("```toml\n").expect("a toml block") + "```toml\n".len();
    let text = &body[toml_start..toml_start + body[toml_start..].find("```").unwrap()];
    let plan = spec::parse(text, "docs/specs.md example", Path::new("example.toml")).unwrap_or_else(|e| panic!("{e}"));
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
    // every top-level key the loader accepts is used, so the example exercises every section
    let table: toml::Table = toml::from_str(text).unwrap();
    let used: BTreeSet<String> = table.keys().cloned().collect();
    let unused: Vec<_> = keys::<Spec>().into_iter().filter(|k| !used.contains(k) && !["registry", "output", "table_path"].contains(&k.as_str())).collect();
    assert!(unused.is_empty(), "the example leaves out {unused:?}");
}
