//! No import circle between the rooms of a crate (docs/architecture.md, "The runner's rooms"): the
//! modules of the runner (`crates/runner/src`) and of the data crate (`crates/datasets/src`) form
//! a layering, each room importing only rooms below it. Read from the sources: every `crate::...`,
//! `super::...` and `self::...` path (in `use` and in code) and every path through a child module,
//! outside comments, strings and `#[cfg(test)]` code, is an arrow from its file's module to the
//! module it names. A `pub use` is a re-export: it draws no arrow itself, and a path through it
//! leads to the module the item comes from.
//!
//! Two levels are checked. Rooms: the crate root and its direct modules (a folder module with
//! everything inside it counts as one room). Inside each folder: its files (`mod.rs` and its
//! children, a deeper folder as one). A circle fails the test and is printed, with the file and
//! path of every arrow in it.
//!
//! And a room stays one job's size: a Rust file of any crate (`crates/*/src`, `crates/*/tests`)
//! over 800 lines says why in its first line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates whose modules must not import each other in a circle.
const CRATES: [&str; 2] = ["runner", "datasets"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A module: its path inside the crate (`[]` for the root, `["spec", "grid"]` for
/// `spec/grid.rs`) and its file.
type ModPath = Vec<String>;

/// Every module file of a crate's `src`: `lib.rs` is the root, `x.rs` and `x/mod.rs` are `x`,
/// `x/y.rs` is `x::y`. `main.rs` is a crate of its own (the binary) and is left out.
fn modules(src: &Path) -> BTreeMap<ModPath, PathBuf> {
    fn walk(dir: &Path, prefix: &[String], out: &mut BTreeMap<ModPath, PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let mut path = prefix.to_vec();
            if p.is_dir() {
                path.push(name);
                walk(&p, &path, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                match name.as_str() {
                    "lib" | "mod" => {}
                    "main" if prefix.is_empty() => continue,
                    _ => path.push(name),
                }
                out.insert(path, p);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(src, &[], &mut out);
    out
}

/// The code of a file without comments, string and character literals (their text replaced by
/// spaces) and without its `#[cfg(test)]` part (unit tests may reach any room).
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && (next == Some('"') || (next == Some('#') && !b.get(i.wrapping_sub(1)).is_some_and(|p| p.is_alphanumeric() || *p == '_'))) {
            // a raw string r"..." / r#"..."#
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                i += if b[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            // a character literal ('x', '\n', '\'', '"'), else a lifetime
            let lit = match (next, b.get(i + 2), b.get(i + 3)) {
                (Some('\\'), _, _) => (i + 3..b.len().min(i + 12)).find(|&k| b[k] == '\'').map(|k| k + 1),
                (Some(_), Some('\''), _) => Some(i + 3),
                _ => None,
            };
            match lit {
                Some(end) => {
                    out.push_str("' '");
                    i = end;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// One path written in a file: its segments, and whether it is re-exported (`pub use`).
struct Written {
    segments: Vec<String>,
    reexport: Option<String>,
}

/// Parses the path (or `use` tree) that starts at `i`: segments joined by `::`, `{...}` groups
/// expanding into several paths, `as` renaming the last one. Returns the paths (segments and the
/// name they are known by) and where parsing stopped.
fn parse_tree(b: &[char], mut i: usize, prefix: Vec<String>, out: &mut Vec<(Vec<String>, String)>) -> usize {
    let mut segs = prefix;
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && b[*i].is_whitespace() {
            *i += 1;
        }
    };
    loop {
        skip_ws(&mut i);
        if i < b.len() && b[i] == '{' {
            i += 1;
            loop {
                skip_ws(&mut i);
                if i >= b.len() {
                    return i;
                }
                if b[i] == '}' {
                    return i + 1;
                }
                if b[i] == ',' {
                    i += 1;
                    continue;
                }
                i = parse_tree(b, i, segs.clone(), out);
            }
        }
        if i < b.len() && b[i] == '*' {
            out.push((segs.clone(), String::from("*")));
            return i + 1;
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        if start == i {
            if !segs.is_empty() {
                out.push((segs.clone(), segs.last().unwrap().clone()));
            }
            return i;
        }
        segs.push(b[start..i].iter().collect());
        let mut j = i;
        skip_ws(&mut j);
        if b.get(j) == Some(&':') && b.get(j + 1) == Some(&':') {
            i = j + 2;
            continue;
        }
        // `x as y`
        let rest: String = b[j..b.len().min(j + 3)].iter().collect();
        let mut name = segs.last().unwrap().clone();
        if rest == "as " {
            let mut k = j + 3;
            skip_ws(&mut k);
            let s = k;
            while k < b.len() && is_ident(b[k]) {
                k += 1;
            }
            name = b[s..k].iter().collect();
            i = k;
        }
        out.push((segs, name));
        return i;
    }
}

/// Every path of a file's code that starts at `crate`, `super`, `self` or one of `children` (the
/// module's own child modules), with whether it is re-exported. `mod x;` declarations are no
/// paths.
fn written_paths(code: &str, children: &BTreeSet<String>) -> Vec<Written> {
    let b: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !is_ident(b[i]) || (i > 0 && (is_ident(b[i - 1]) || b[i - 1] == ':')) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        let word: String = b[start..i].iter().collect();
        // the statement this word begins, when it is a `use`
        if word == "use" {
            let before: String = b[start.saturating_sub(12)..start].iter().collect();
            let reexport = before.trim_end().ends_with("pub") || before.trim_end().ends_with(')') && before.contains("pub(");
            let mut paths = Vec::new();
            i = parse_tree(&b, i, Vec::new(), &mut paths);
            for (segments, name) in paths {
                out.push(Written { segments, reexport: reexport.then_some(name) });
            }
            continue;
        }
        let starts_path = b.get(i) == Some(&':') && b.get(i + 1) == Some(&':');
        if starts_path && (["crate", "super", "self"].contains(&word.as_str()) || children.contains(&word)) {
            let mut paths = Vec::new();
            i = parse_tree(&b, start, Vec::new(), &mut paths);
            for (segments, _) in paths {
                out.push(Written { segments, reexport: None });
            }
        }
    }
    out
}

/// The modules and re-exports of one crate, and the arrows between its modules.
struct Crate {
    modules: BTreeMap<ModPath, PathBuf>,
    /// module -> name -> the path it re-exports (absolute, as written)
    reexports: BTreeMap<ModPath, BTreeMap<String, Vec<String>>>,
    /// (from, to) -> the file and path of one arrow that draws it
    arrows: BTreeMap<(ModPath, ModPath), String>,
}

impl Crate {
    fn read(src: &Path) -> Crate {
        let modules = modules(src);
        let children = |m: &ModPath| -> BTreeSet<String> {
            modules.keys().filter(|k| k.len() == m.len() + 1 && k.starts_with(m)).map(|k| k.last().unwrap().clone()).collect()
        };
        let mut written = BTreeMap::new();
        for (m, file) in &modules {
            let code = code_of(&std::fs::read_to_string(file).unwrap());
            written.insert(m.clone(), written_paths(&code, &children(m)));
        }
        let mut c = Crate { modules, reexports: BTreeMap::new(), arrows: BTreeMap::new() };
        // re-exports first, as absolute paths
        for (m, paths) in &written {
            for w in paths {
                if let (Some(name), Some(abs)) = (&w.reexport, c.absolute(m, &w.segments)) {
                    c.reexports.entry(m.clone()).or_default().insert(name.clone(), abs);
                }
            }
        }
        for (m, paths) in &written {
            for w in paths.iter().filter(|w| w.reexport.is_none()) {
                let Some(abs) = c.absolute(m, &w.segments) else { continue };
                let to = c.resolve(&abs, 0);
                if to != *m {
                    let file = c.modules[m].strip_prefix(root()).unwrap_or(&c.modules[m]).display().to_string();
                    c.arrows.entry((m.clone(), to)).or_insert_with(|| format!("{file}: {}", w.segments.join("::")));
                }
            }
        }
        c
    }

    /// `segments` written in module `m` as a path from the crate root (`None`: another crate's).
    fn absolute(&self, m: &ModPath, segments: &[String]) -> Option<Vec<String>> {
        let first = segments.first()?;
        let mut base: Vec<String> = match first.as_str() {
            "crate" => Vec::new(),
            "self" => m.clone(),
            "super" => {
                let mut b = m.clone();
                let mut rest = segments;
                while rest.first().is_some_and(|s| s == "super") {
                    b.pop();
                    rest = &rest[1..];
                }
                b.extend(rest.iter().cloned());
                return Some(b);
            }
            _ => {
                let mut child = m.clone();
                child.push(first.clone());
                if !self.modules.contains_key(&child) {
                    return None;
                }
                m.clone()
            }
        };
        let skip = usize::from(matches!(first.as_str(), "crate" | "self"));
        base.extend(segments[skip..].iter().cloned());
        Some(base)
    }

    /// The module an absolute path leads to: its longest prefix that is a module, or, when the
    /// next segment is an item that module re-exports, where that item comes from.
    fn resolve(&self, abs: &[String], depth: usize) -> ModPath {
        let mut n = abs.len();
        while n > 0 && !self.modules.contains_key(&abs[..n]) {
            n -= 1;
        }
        let m = abs[..n].to_vec();
        if depth < 8 {
            if let Some(target) = abs.get(n).and_then(|name| self.reexports.get(&m).and_then(|r| r.get(name))) {
                let mut t = target.clone();
                t.extend(abs[n + 1..].iter().cloned());
                return self.resolve(&t, depth + 1);
            }
        }
        m
    }

    /// The arrows between the rooms inside `folder` (the crate root for `[]`): every module at
    /// or below it is taken as its child room (or the folder's own file), arrows inside a room
    /// and from or to outside the folder dropped.
    fn rooms(&self, folder: &ModPath) -> BTreeMap<(ModPath, ModPath), String> {
        let room = |m: &ModPath| -> Option<ModPath> { m.starts_with(folder).then(|| m[..m.len().min(folder.len() + 1)].to_vec()) };
        let mut out = BTreeMap::new();
        for ((a, b), why) in &self.arrows {
            if let (Some(ra), Some(rb)) = (room(a), room(b)) {
                if ra != rb {
                    out.entry((ra, rb)).or_insert_with(|| why.clone());
                }
            }
        }
        out
    }
}

/// The groups of modules tied together by circles (strongly connected components with more than
/// one module; Tarjan's algorithm), each with one circle through its modules.
fn circles(arrows: &BTreeMap<(ModPath, ModPath), String>) -> Vec<(Vec<ModPath>, Vec<ModPath>)> {
    struct Walk<'a> {
        next: BTreeMap<&'a ModPath, Vec<&'a ModPath>>,
        index: BTreeMap<&'a ModPath, usize>,
        low: BTreeMap<&'a ModPath, usize>,
        stack: Vec<&'a ModPath>,
        groups: Vec<Vec<ModPath>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, m: &'a ModPath) {
            let i = self.index.len();
            self.index.insert(m, i);
            self.low.insert(m, i);
            self.stack.push(m);
            for n in self.next.get(m).cloned().unwrap_or_default() {
                if !self.index.contains_key(n) {
                    self.visit(n);
                    let l = self.low[m].min(self.low[n]);
                    self.low.insert(m, l);
                } else if self.stack.contains(&n) {
                    let l = self.low[m].min(self.index[n]);
                    self.low.insert(m, l);
                }
            }
            if self.low[m] == self.index[m] {
                let at = self.stack.iter().position(|s| *s == m).unwrap();
                let group: Vec<ModPath> = self.stack.drain(at..).cloned().collect();
                if group.len() > 1 {
                    self.groups.push(group);
                }
            }
        }
    }
    let mut walk = Walk { next: BTreeMap::new(), index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), groups: Vec::new() };
    for (a, b) in arrows.keys() {
        walk.next.entry(a).or_default().push(b);
    }
    let starts: Vec<&ModPath> = walk.next.keys().copied().collect();
    for m in starts {
        if !walk.index.contains_key(m) {
            walk.visit(m);
        }
    }
    walk.groups
        .into_iter()
        .map(|mut group| {
            group.sort();
            // one circle: from the group's first module along arrows inside the group, back to it
            let inside = |m: &ModPath| group.contains(m);
            let mut path = vec![group[0].clone()];
            let mut seen = BTreeSet::new();
            loop {
                let here = path.last().unwrap().clone();
                let step = arrows.keys().filter(|(a, b)| *a == here && inside(b)).map(|(_, b)| b.clone()).collect::<Vec<_>>();
                if let Some(back) = step.iter().find(|b| **b == group[0]) {
                    path.push(back.clone());
                    break;
                }
                // onwards through a module from which the first can still be reached
                let next = step.into_iter().find(|b| !seen.contains(b) && reaches(arrows, b, &group[0], &group)).expect("strongly connected");
                seen.insert(next.clone());
                path.push(next);
            }
            (group, path)
        })
        .collect()
}

/// Whether `to` can be reached from `from` along arrows between modules of `within`.
fn reaches(arrows: &BTreeMap<(ModPath, ModPath), String>, from: &ModPath, to: &ModPath, within: &[ModPath]) -> bool {
    let mut todo = vec![from.clone()];
    let mut seen = BTreeSet::new();
    while let Some(m) = todo.pop() {
        if m == *to {
            return true;
        }
        if seen.insert(m.clone()) {
            todo.extend(arrows.keys().filter(|(a, b)| *a == m && within.contains(b)).map(|(_, b)| b.clone()));
        }
    }
    false
}

fn name(m: &ModPath) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

#[test]
fn modules_import_each_other_in_no_circle() {
    let mut found = Vec::new();
    for krate in CRATES {
        let c = Crate::read(&root().join("crates").join(krate).join("src"));
        assert!(c.modules.len() > 3, "crates/{krate}/src: no modules found");
        // the crate root, then every folder module
        let folders = c.modules.keys().filter(|m| m.is_empty() || c.modules.keys().any(|k| k.len() > m.len() && k.starts_with(m)));
        for folder in folders {
            let arrows = c.rooms(folder);
            for (group, circle) in circles(&arrows) {
                let mut text = format!(
                    "crates/{krate}: {} tied in a circle ({}), e.g. {}",
                    group.len(),
                    group.iter().map(name).collect::<Vec<_>>().join(", "),
                    circle.iter().map(name).collect::<Vec<_>>().join(" -> ")
                );
                for w in circle.windows(2) {
                    text += &format!("\n    {} -> {}: {}", name(&w[0]), name(&w[1]), arrows[&(w[0].clone(), w[1].clone())]);
                }
                found.push(text);
            }
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

/// The reader sees what it must: paths in `use` trees and in code, re-exports, renames; nothing in
/// comments, strings or tests.
#[test]
fn the_path_reader_sees_uses_code_and_reexports() {
    let code = code_of(
        "use crate::{a::{self, B}, c::D as E};\npub use super::f::G;\n// crate::comment::X\nfn h() { let s = \"crate::string::Y\"; let c = '\"'; crate::i::J::new(); k::L; }\n#[cfg(test)]\nmod tests { use crate::t; }\n",
    );
    let children: BTreeSet<String> = ["k".to_string()].into();
    let paths: Vec<(String, Option<String>)> = written_paths(&code, &children).into_iter().map(|w| (w.segments.join("::"), w.reexport)).collect();
    let want: Vec<(String, Option<String>)> = vec![
        ("crate::a::self".into(), None),
        ("crate::a::B".into(), None),
        ("crate::c::D".into(), None),
        ("super::f::G".into(), Some("G".into())),
        ("crate::i::J::new".into(), None),
        ("k::L".into(), None),
    ];
    assert_eq!(paths, want);
    // a circle is found with every module tied in it, and shown along its arrows
    let p = |s: &str| -> ModPath { s.split("::").map(String::from).collect() };
    let arrows: BTreeMap<(ModPath, ModPath), String> =
        [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("b", "e"), ("e", "c")].iter().map(|(x, y)| ((p(x), p(y)), String::new())).collect();
    let found = circles(&arrows);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0.iter().map(name).collect::<Vec<_>>(), ["a", "b", "c", "e"]);
    assert_eq!(found[0].1.iter().map(name).collect::<Vec<_>>(), ["a", "b", "c", "a"]);
    assert!(circles(&[((p("a"), p("b")), String::new())].into()).is_empty());
}

/// Most lines a file has without saying at its top why it needs more.
const MAX_LINES: usize = 800;

/// Every Rust file under `dir`, at any depth.
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

/// A Rust file of any crate's `src` or `tests` over [`MAX_LINES`] says why in its first line
/// (`//! Over 800 lines ...`), so a room that grows past one job is split rather than left to
/// grow.
#[test]
fn long_files_say_why() {
    let mut files = Vec::new();
    let mut crates = 0;
    for c in std::fs::read_dir(root().join("crates")).unwrap() {
        let c = c.unwrap().path();
        if !c.join("Cargo.toml").is_file() {
            continue;
        }
        crates += 1;
        for dir in ["src", "tests"] {
            if c.join(dir).is_dir() {
                rust_files(&c.join(dir), &mut files);
            }
        }
    }
    assert!(crates >= 6 && files.len() > 100, "crates/: {crates} crates, {} Rust files found", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let first = text.lines().next().unwrap_or("");
            (text.lines().count() > MAX_LINES && !first.starts_with(&format!("//! Over {MAX_LINES} lines")))
                .then(|| format!("{} ({} lines)", f.strip_prefix(root()).unwrap_or(f).display(), text.lines().count()))
        })
        .collect();
    assert!(long.is_empty(), "over {MAX_LINES} lines without `//! Over {MAX_LINES} lines ...` saying why at the top: {long:?}");
}
