//! What identifies an external method (`[[method]]` with a `command`) in its cells' keys: the
//! command, the SHA-256 of the files it names, the SHA-256 of everything else it runs (the
//! `depends` files and directories, by default the directories of its scripts) and its options;
//! and whether its program can be started. Running it is [`crate::external`].
//!
//! The dependency rule: with `depends = [...]` the listed files and directories are hashed; without
//! it, the directory of every command argument that is an existing file (the program itself only
//! when it is given as a relative path: `/usr/bin/python3` is an interpreter, not project code).
//! Directories are hashed recursively, skipping caches ([`SKIPPED_NAMES`], `*.pyc`), each file by
//! its path and bytes, sorted by path; symbolic links are followed, a directory reached a second
//! time (a link loop) is hashed by its link text only. More than [`MAX_DEPENDS_FILES`] files or
//! [`MAX_DEPENDS_BYTES`] bytes is an error that asks for `depends`.
//!
//! The helper module: every run may import structdr's own copy of `structdr_io.py`
//! ([`HELPER_PY`], run by [`crate::external`]). When no dependency root holds a `structdr_io.py` of its own
//! (a file so named, or one directly inside a root directory), that copy may be what runs, so its
//! SHA-256 is keyed too ([`helper_sha256`]); a script beside its own copy (as in `baselines/`)
//! keys that copy through its directory and its key has no helper field, as before.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use structdr_methods::api::OutputKind;

/// The Python side of the protocol, `baselines/structdr_io.py`, built into structdr: every run
/// gets a copy on `PYTHONPATH` ([`crate::external`]), so a script anywhere (not only beside the
/// file in `baselines/`) can `import structdr_io`. One file, so the copy cannot drift from the one
/// the examples use; here because its bytes are part of the key ([`helper_sha256`]).
pub const HELPER_PY: &str = include_str!("../../../../baselines/structdr_io.py");

/// File name of the helper module ([`HELPER_PY`]).
pub const HELPER_FILE: &str = "structdr_io.py";

/// Default limit on one run of an external command, in seconds.
pub const DEFAULT_TIMEOUT_S: f64 = 600.0;

/// Longest `timeout_s` accepted: 30 days (2,592,000 s). A longer one is no limit in practice, and
/// `1e30` s does not fit a `std::time::Duration` (it panicked when the command started).
pub const MAX_TIMEOUT_S: f64 = 30.0 * 24.0 * 3600.0;

/// Most files hashed for one external method's dependencies.
pub const MAX_DEPENDS_FILES: usize = 2_000;

/// Most bytes hashed for one external method's dependencies (checked from the files' sizes before
/// any is read).
pub const MAX_DEPENDS_BYTES: u64 = 64 << 20;

/// Directory and file names never hashed: caches that tools write beside the code, whose changes
/// do not change what runs.
pub const SKIPPED_NAMES: [&str; 6] = ["__pycache__", ".git", ".ipynb_checkpoints", ".pytest_cache", ".mypy_cache", "node_modules"];

/// What identifies an external method in a cell key: the command, the bytes of its files and of
/// what it depends on, and what it returns.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ExternalKey {
    /// Program and arguments (the scratch directory is appended when it runs).
    pub command: Vec<String>,
    /// SHA-256 over the command's arguments that name files, of their bytes ([`files_sha256`]).
    pub files_sha256: String,
    /// `embedding` or `feature_scores`.
    pub output: OutputKind,
    /// Whether `labels.npy` is written for the command.
    pub needs_labels: bool,
    /// Time limit of one run, seconds.
    pub timeout_s: f64,
    /// The files and directories hashed into `depends_sha256`: `depends` as declared, or the
    /// directories of the command's files (the default rule, module doc). Empty in records written
    /// before dependencies were keyed.
    #[serde(default)]
    pub depends: Vec<String>,
    /// SHA-256 over every file under `depends` ([`depends_sha256`]).
    #[serde(default)]
    pub depends_sha256: String,
    /// How many files `depends_sha256` covers.
    #[serde(default)]
    pub depends_files: usize,
    /// SHA-256 of structdr's copy of the helper module when the command may import it (no
    /// dependency root holds its own `structdr_io.py`, [`helper_sha256`]); absent otherwise, so
    /// the keys of scripts beside their own copy are the keys they had before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helper_sha256: Option<String>,
}

/// The part of an [`ExternalKey`] that cell seeds derive from: the key as it was before
/// dependencies were keyed, so declaring `depends` or editing a helper module changes which cells
/// are recomputed but not their seeds.
#[derive(Serialize)]
pub struct SeedExternalKey<'a> {
    command: &'a [String],
    files_sha256: &'a str,
    output: OutputKind,
    needs_labels: bool,
    timeout_s: f64,
}

impl ExternalKey {
    /// The fields cell seeds derive from ([`SeedExternalKey`]).
    pub fn seed_part(&self) -> SeedExternalKey<'_> {
        SeedExternalKey {
            command: &self.command,
            files_sha256: &self.files_sha256,
            output: self.output,
            needs_labels: self.needs_labels,
            timeout_s: self.timeout_s,
        }
    }
}

/// SHA-256 of the bytes of every argument of `command` that names an existing file (relative
/// to the directory structdr runs in), with the argument itself; other arguments are part of the
/// key as strings already.
pub fn files_sha256(command: &[String]) -> Result<String, String> {
    let mut h = Vec::new();
    for a in command {
        let p = Path::new(a);
        if p.is_file() {
            let bytes = std::fs::read(p).map_err(|e| format!("command file {a}: {e}"))?;
            h.extend_from_slice(a.as_bytes());
            h.push(0);
            h.extend_from_slice(structdr_datasets::sha256_hex(&bytes).as_bytes());
            h.push(0);
        }
    }
    Ok(structdr_datasets::sha256_hex(&h))
}

/// The directories hashed when a method declares no `depends`: the parent directory of every
/// command argument that is an existing file (of the program only when written as a relative
/// path), each once, in command order; `.` for a file in the directory structdr runs in.
pub fn default_depends(command: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, a) in command.iter().enumerate() {
        let p = Path::new(a);
        if !p.is_file() || (i == 0 && (p.is_absolute() || !a.contains('/'))) {
            continue;
        }
        let parent = p.parent().map(display_path).filter(|s| !s.is_empty()).unwrap_or_else(|| ".".into());
        if !out.contains(&parent) {
            out.push(parent);
        }
    }
    out
}

/// Why a declared `depends` entry is refused, or `None`: it must be a non-empty relative path
/// inside the directory structdr runs in (no `..`, no root), one line of text, and exist.
pub fn check_depends_entry(entry: &str) -> Option<String> {
    if entry.trim().is_empty() {
        return Some("is empty".into());
    }
    if let Some(c) = entry.chars().find(|c| c.is_control()) {
        return Some(format!("holds the control character {c:?}"));
    }
    let p = Path::new(entry);
    if p.is_absolute() || p.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Some("must be a relative path without '..' (paths start at the directory structdr runs in)".into());
    }
    if std::fs::metadata(p).is_err() {
        return Some("does not exist (relative paths start at the directory structdr runs in)".into());
    }
    None
}

/// A path written with `/` separators, without `.` components and trailing separators.
fn display_path(p: &Path) -> String {
    let parts: Vec<String> = p
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::RootDir => String::new(),
            other => other.as_os_str().to_string_lossy().into_owned(),
        })
        .collect();
    if parts.first().is_some_and(|s| s.is_empty()) {
        format!("/{}", parts[1..].join("/"))
    } else {
        parts.join("/")
    }
}

/// One entry hashed: its path as written from its root, and what it is.
enum Entry {
    /// A regular file (read when hashed).
    File(PathBuf),
    /// A symbolic link not followed (a loop or a broken link): its target text.
    Link(String),
    /// A socket, FIFO or device: only its name is hashed (reading it could block).
    Special,
}

/// Everything under the roots, with the running totals the caps are checked on.
struct Walk {
    entries: Vec<(String, Entry)>,
    bytes: u64,
    visited: BTreeSet<PathBuf>,
}

impl Walk {
    fn too_big(&self) -> bool {
        self.entries.len() > MAX_DEPENDS_FILES || self.bytes > MAX_DEPENDS_BYTES
    }

    fn add(&mut self, rel: String, path: &Path) -> Result<(), String> {
        let Ok(meta) = std::fs::metadata(path) else {
            let target = std::fs::read_link(path).map_err(|e| format!("{rel}: {e}"))?;
            self.entries.push((rel, Entry::Link(target.to_string_lossy().into_owned())));
            return Ok(());
        };
        if meta.is_dir() {
            let real = std::fs::canonicalize(path).map_err(|e| format!("{rel}: {e}"))?;
            if !self.visited.insert(real) {
                let target = std::fs::read_link(path).map(|t| t.to_string_lossy().into_owned()).unwrap_or_default();
                self.entries.push((rel, Entry::Link(target)));
                return Ok(());
            }
            let mut names: Vec<_> = std::fs::read_dir(path)
                .map_err(|e| format!("{rel}: {e}"))?
                .map(|e| e.map(|e| e.file_name()))
                .collect::<Result<_, _>>()
                .map_err(|e| format!("{rel}: {e}"))?;
            names.sort();
            for n in names {
                let name = n.to_string_lossy().into_owned();
                if SKIPPED_NAMES.contains(&name.as_str()) || name.ends_with(".pyc") {
                    continue;
                }
                let child = if rel == "." { name.clone() } else { format!("{rel}/{name}") };
                self.add(child, &path.join(&n))?;
                if self.too_big() {
                    return Ok(());
                }
            }
        } else if meta.is_file() {
            self.bytes += meta.len();
            self.entries.push((rel, Entry::File(path.to_path_buf())));
        } else {
            self.entries.push((rel, Entry::Special));
        }
        Ok(())
    }
}

/// SHA-256 over every file under `roots` (files or directories, module doc) and how many files
/// it covers: per entry its path from the root as written, a kind and the SHA-256 of its bytes,
/// sorted by path. Past [`MAX_DEPENDS_FILES`] files or [`MAX_DEPENDS_BYTES`] bytes, an error that
/// tells to declare `depends`.
pub fn depends_sha256(roots: &[String]) -> Result<(String, usize), String> {
    let mut walk = Walk { entries: Vec::new(), bytes: 0, visited: BTreeSet::new() };
    for r in roots {
        let rel = display_path(Path::new(r));
        walk.add(if rel.is_empty() { ".".into() } else { rel }, Path::new(r))?;
        if walk.too_big() {
            return Err(format!(
                "the files to hash under {} are more than {MAX_DEPENDS_FILES} files or {} MiB (a script in a large directory?); declare `depends = [...]` with the files and directories the command runs",
                roots.iter().map(|r| format!("'{r}'")).collect::<Vec<_>>().join(", "),
                MAX_DEPENDS_BYTES >> 20
            ));
        }
    }
    walk.entries.sort_by(|a, b| a.0.cmp(&b.0));
    walk.entries.dedup_by(|a, b| a.0 == b.0);
    let mut h = Vec::new();
    for (rel, e) in &walk.entries {
        let (kind, digest) = match e {
            Entry::File(p) => ("file", structdr_datasets::sha256_hex(&std::fs::read(p).map_err(|e| format!("{rel}: {e}"))?)),
            Entry::Link(t) => ("link", t.clone()),
            Entry::Special => ("special", String::new()),
        };
        for part in [kind, rel.as_str(), digest.as_str()] {
            h.extend_from_slice(part.as_bytes());
            h.push(0);
        }
    }
    let files = walk.entries.iter().filter(|(_, e)| matches!(e, Entry::File(_))).count();
    Ok((structdr_datasets::sha256_hex(&h), files))
}

/// The SHA-256 of structdr's copy of the helper module ([`HELPER_PY`]) when a
/// command with these dependency roots may import it: none of them is a `structdr_io.py` or a
/// directory holding one (Python finds a copy beside the script before the one on `PYTHONPATH`,
/// and that copy is keyed through the roots already). `None` otherwise.
pub fn helper_sha256(roots: &[String]) -> Option<String> {
    let own = roots.iter().map(Path::new).any(|r| {
        let file = HELPER_FILE;
        (r.file_name().is_some_and(|n| n == file) && r.is_file()) || r.join(file).is_file()
    });
    (!own).then(|| structdr_datasets::sha256_hex(HELPER_PY.as_bytes()))
}

/// Whether `program` can be started: a path to an existing file, or a name found on `$PATH`.
pub fn program_exists(program: &str) -> bool {
    if program.contains('/') {
        return Path::new(program).is_file();
    }
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}
