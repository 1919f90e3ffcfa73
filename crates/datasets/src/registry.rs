//! The data-set registry (`registry.toml`, embedded in the crate) and the trust-on-first-use lock
//! file.
//!
//! Every data set the project uses has one `[[dataset]]` table: its name, the name printed in the
//! papers (`paper_name`), canonical URL(s), the path of its file(s) under a mirror root
//! (`mirror_path`, also the path inside the cache), the SHA-256 of the file (`sha256`) and, where
//! known, of the decompressed bytes (`raw_sha256`), the file format, loader details, the expected
//! shape (`n_samples`, `n_features`, `n_classes`, checked after loading), citation, licence and a
//! stand-in note. Multi-file sets (Fashion-MNIST, MNIST) list their files in `files = [...]`.
//!
//! Entries without any checksum are *trust on first use*: the first successful download pins the
//! file's SHA-256 in the lock file (`<cache>/registry.lock`, TOML, see [`Lock`]) and every later
//! download or cached copy must match the pin.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The registry file shipped with the crate.
pub const BUILTIN_TOML: &str = include_str!("../registry.toml");

/// File name of the trust-on-first-use lock file inside the cache directory.
pub const LOCK_FILE_NAME: &str = "registry.lock";

/// Errors reading or validating a registry or a lock file.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The registry text is not valid TOML or has unknown / missing fields.
    #[error("registry {source_name}: {message}")]
    Parse {
        /// Where the text came from (a path or `builtin registry.toml`).
        source_name: String,
        /// The TOML / serde error message (names the line and column).
        message: String,
    },
    /// The registry parsed but an entry breaks a rule (duplicate name, bad hash, ...).
    #[error("registry entry `{name}`: {message}")]
    Invalid {
        /// Entry name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// No entry of that name; `suggestions` lists close names.
    #[error("unknown data set `{name}`{}", suggest_text(.suggestions))]
    Unknown {
        /// The requested name.
        name: String,
        /// Close registry names (edit distance or substring), possibly empty.
        suggestions: Vec<String>,
    },
    /// The lock file exists but cannot be read or parsed.
    #[error("lock file {path}: {message}")]
    Lock {
        /// Lock file path.
        path: PathBuf,
        /// Reason.
        message: String,
    },
}

fn suggest_text(s: &[String]) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!("; did you mean: {}?", s.join(", "))
    }
}

/// File format of a registry entry; selects the loader in [`crate::load`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum Format {
    /// LIBSVM text (`label idx:val ...`, 1-based indices); several files are stacked by rows.
    #[serde(rename = "libsvm")]
    Libsvm,
    /// bzip2-compressed LIBSVM text.
    #[serde(rename = "libsvm-bz2")]
    LibsvmBz2,
    /// MATLAB v5 `.mat`; see [`Loader`] for the variables.
    #[serde(rename = "mat-v5")]
    MatV5,
    /// gzip-compressed IDX files (MNIST layout), in (images, labels) pairs stacked by rows.
    #[serde(rename = "idx-gzip")]
    IdxGzip,
    /// A zip of image files or of one `.mat` holding the image matrix (teapot / face images).
    #[serde(rename = "teapot-zip", alias = "image-zip")]
    ImageZip,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Libsvm => "libsvm",
            Format::LibsvmBz2 => "libsvm-bz2",
            Format::MatV5 => "mat-v5",
            Format::IdxGzip => "idx-gzip",
            Format::ImageZip => "image-zip",
        })
    }
}

/// Role of a file of a multi-file set (IDX sets come as images + labels pairs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Sample data (IDX images).
    Images,
    /// Labels (IDX labels).
    Labels,
}

/// One variable name or a list of names (stacked vertically in that order).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum OneOrMany {
    /// A single name.
    One(String),
    /// Several names.
    Many(Vec<String>),
}

impl OneOrMany {
    /// The names as a slice-like vector.
    pub fn names(&self) -> Vec<&str> {
        match self {
            OneOrMany::One(s) => vec![s.as_str()],
            OneOrMany::Many(v) => v.iter().map(String::as_str).collect(),
        }
    }
}

/// Loader details (`loader = { ... }` in an entry). All fields are optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Loader {
    /// MATLAB variable(s) holding X; several are stacked by rows (after `transpose`).
    pub x_var: Option<OneOrMany>,
    /// MATLAB variable(s) holding the labels (a row or column vector each), stacked likewise.
    pub y_var: Option<OneOrMany>,
    /// X is stored features x samples (e.g. Roweis' `DAT`, 256 x 11000): transpose it.
    #[serde(default)]
    pub transpose: bool,
    /// 1-based column of X (after `transpose`) that holds the label; it is removed from X.
    pub label_column: Option<usize>,
    /// Keep rows `first..=last` (1-based, inclusive) after the label column is split off.
    pub rows: Option<[usize; 2]>,
    /// Keep only the samples with this label (applied after `rows`).
    pub select_label: Option<i64>,
    /// Image zips: expected `[height, width, channels]` of every image (height and width may
    /// come swapped); its product must equal `n_features`.
    pub image_shape: Option<[usize; 3]>,
    /// Image zips: use only this member of the zip (a `.mat` file or a folder prefix).
    pub member: Option<String>,
}

/// One downloadable file of an entry, with its checksums and sources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSpec {
    /// Key in the lock file: the entry name for single-file entries,
    /// `<name>/<file name>` for files of multi-file entries.
    pub lock_key: String,
    /// Role inside a multi-file set (IDX images / labels), if any.
    pub role: Option<Role>,
    /// Canonical URLs, tried in order after the mirror.
    pub urls: Vec<String>,
    /// Path relative to a mirror root; also the path inside the cache directory.
    pub mirror_path: String,
    /// Lowercase hex SHA-256 of the file bytes.
    pub sha256: Option<String>,
    /// Lowercase hex SHA-256 of the decompressed bytes (gzip / bzip2 files), accepted in place of
    /// `sha256`.
    pub raw_sha256: Option<String>,
    /// Expected file size in bytes (informational; the hash decides).
    pub bytes: Option<u64>,
}

impl FileSpec {
    /// True when neither `sha256` nor `raw_sha256` is known (trust on first use).
    pub fn is_tofu(&self) -> bool {
        self.sha256.is_none() && self.raw_sha256.is_none()
    }
}

/// A validated registry entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Registry name (e.g. `iris`, `pie_pose27`).
    pub name: String,
    /// Name used in the papers' tables (e.g. `CMU-PIE`).
    pub paper_name: String,
    /// File format.
    pub format: Format,
    /// False for sets not present in the shared mirror (`shared/datasets`).
    pub mirrored: bool,
    /// Web page about the data (not a file URL), if any.
    pub homepage: Option<String>,
    /// The file(s); exactly one for single-file entries.
    pub files: Vec<FileSpec>,
    /// Expected number of samples after loading.
    pub n_samples: usize,
    /// Expected number of features after loading (LIBSVM: the declared feature count).
    pub n_features: usize,
    /// Expected number of distinct labels (0 = unlabelled).
    pub n_classes: usize,
    /// Loader details.
    pub loader: Loader,
    /// Citation of the data.
    pub citation: String,
    /// Licence / terms of use.
    pub licence: String,
    /// Why this file stands in for the paper's data; becomes [`crate::Dataset::note`].
    pub stand_in: Option<String>,
    /// Short provenance remark used as the note when there is no stand-in remark.
    pub provenance: Option<String>,
    /// Longer registry-only remarks.
    pub note: Option<String>,
}

impl Entry {
    /// The remark shown in tables: `stand_in`, else `provenance`.
    pub fn table_note(&self) -> Option<String> {
        self.stand_in.clone().or_else(|| self.provenance.clone())
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRegistry {
    schema_version: u32,
    #[serde(default)]
    dataset: Vec<RawEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    role: Option<Role>,
    #[serde(default)]
    urls: Vec<String>,
    mirror_path: String,
    sha256: Option<String>,
    raw_sha256: Option<String>,
    bytes: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    name: String,
    paper_name: String,
    format: Format,
    #[serde(default = "default_true")]
    mirrored: bool,
    homepage: Option<String>,
    #[serde(default)]
    urls: Vec<String>,
    mirror_path: Option<String>,
    sha256: Option<String>,
    raw_sha256: Option<String>,
    bytes: Option<u64>,
    files: Option<Vec<RawFile>>,
    n_samples: usize,
    n_features: usize,
    n_classes: usize,
    #[serde(default)]
    loader: Loader,
    citation: String,
    licence: String,
    stand_in: Option<String>,
    provenance: Option<String>,
    note: Option<String>,
}

fn default_true() -> bool {
    true
}

/// The set of registry entries, in file order.
#[derive(Debug, Clone)]
pub struct Registry {
    entries: Vec<Entry>,
}

fn check_hex(name: &str, field: &str, v: &Option<String>) -> Result<(), RegistryError> {
    if let Some(h) = v {
        if h.len() != 64 || !h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return Err(RegistryError::Invalid { name: name.to_string(), message: format!("{field} must be 64 lowercase hex digits, got `{h}`") });
        }
    }
    Ok(())
}

fn check_rel_path(name: &str, p: &str) -> Result<(), RegistryError> {
    let path = Path::new(p);
    let ok = !p.is_empty() && path.components().all(|c| matches!(c, std::path::Component::Normal(_)));
    if ok {
        Ok(())
    } else {
        Err(RegistryError::Invalid { name: name.to_string(), message: format!("mirror_path `{p}` must be a relative path without `..`") })
    }
}

impl RawEntry {
    fn validate(self) -> Result<Entry, RegistryError> {
        let name = self.name.clone();
        let invalid = |m: String| RegistryError::Invalid { name: name.clone(), message: m };
        if name.is_empty() || name.contains(['/', '\\']) || name.chars().any(char::is_whitespace) {
            return Err(invalid("name must be non-empty, without slashes or spaces".into()));
        }
        let files = match (self.files, self.mirror_path) {
            (Some(_), Some(_)) => return Err(invalid("give either mirror_path (one file) or files, not both".into())),
            (None, None) => return Err(invalid("missing mirror_path (or files)".into())),
            (None, Some(mp)) => {
                vec![FileSpec {
                    lock_key: name.clone(),
                    role: None,
                    urls: self.urls,
                    mirror_path: mp,
                    sha256: self.sha256,
                    raw_sha256: self.raw_sha256,
                    bytes: self.bytes,
                }]
            }
            (Some(fs), None) => {
                if !self.urls.is_empty() || self.sha256.is_some() || self.raw_sha256.is_some() || self.bytes.is_some() {
                    return Err(invalid("with files = [...], urls/sha256/raw_sha256/bytes belong to each file".into()));
                }
                if fs.is_empty() {
                    return Err(invalid("files is empty".into()));
                }
                fs.into_iter()
                    .map(|f| {
                        let base = Path::new(&f.mirror_path).file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| f.mirror_path.clone());
                        FileSpec {
                            lock_key: format!("{name}/{base}"),
                            role: f.role,
                            urls: f.urls,
                            mirror_path: f.mirror_path,
                            sha256: f.sha256,
                            raw_sha256: f.raw_sha256,
                            bytes: f.bytes,
                        }
                    })
                    .collect()
            }
        };
        let mut keys = HashSet::new();
        for f in &files {
            check_rel_path(&name, &f.mirror_path)?;
            check_hex(&name, "sha256", &f.sha256)?;
            check_hex(&name, "raw_sha256", &f.raw_sha256)?;
            if !keys.insert(f.lock_key.clone()) {
                return Err(invalid(format!("two files share the name of {}", f.mirror_path)));
            }
            for u in &f.urls {
                if !(u.starts_with("http://") || u.starts_with("https://")) {
                    return Err(invalid(format!("url `{u}` is not http(s)")));
                }
            }
        }
        match self.format {
            Format::IdxGzip => {
                let roles: Vec<Option<Role>> = files.iter().map(|f| f.role).collect();
                let paired = roles.chunks_exact(2).remainder().is_empty() && roles.chunks(2).all(|c| c[0] == Some(Role::Images) && c[1] == Some(Role::Labels));
                if !paired {
                    return Err(invalid("idx-gzip needs files in (role = \"images\", role = \"labels\") pairs".into()));
                }
            }
            Format::MatV5 => {
                if self.loader.x_var.is_none() {
                    return Err(invalid("mat-v5 needs loader.x_var".into()));
                }
                if files.len() != 1 {
                    return Err(invalid("mat-v5 entries have exactly one file".into()));
                }
            }
            Format::ImageZip => {
                if files.len() != 1 {
                    return Err(invalid("image zips have exactly one file".into()));
                }
                if let Some([h, w, c]) = self.loader.image_shape {
                    if h * w * c != self.n_features {
                        return Err(invalid(format!("image_shape {h} x {w} x {c} does not give n_features = {}", self.n_features)));
                    }
                }
            }
            Format::Libsvm | Format::LibsvmBz2 => {}
        }
        if let Some([a, b]) = self.loader.rows {
            if a == 0 || b < a {
                return Err(invalid(format!("loader.rows [{a}, {b}] must satisfy 1 <= first <= last")));
            }
        }
        if self.loader.label_column == Some(0) {
            return Err(invalid("loader.label_column is 1-based".into()));
        }
        if self.n_samples == 0 || self.n_features == 0 {
            return Err(invalid("n_samples and n_features must be positive".into()));
        }
        Ok(Entry {
            name: self.name,
            paper_name: self.paper_name,
            format: self.format,
            mirrored: self.mirrored,
            homepage: self.homepage,
            files,
            n_samples: self.n_samples,
            n_features: self.n_features,
            n_classes: self.n_classes,
            loader: self.loader,
            citation: self.citation,
            licence: self.licence,
            stand_in: self.stand_in,
            provenance: self.provenance,
            note: self.note,
        })
    }
}

/// Levenshtein distance (for "did you mean" suggestions).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let sub = prev[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            cur[j] = sub.min(prev[j] + 1).min(cur[j - 1] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

impl Registry {
    /// Parses and validates registry TOML. `source_name` is used in error messages.
    ///
    /// Rules: unknown fields are errors; names are unique; every entry has either `mirror_path`
    /// (one file, with `urls`/`sha256`/`raw_sha256`/`bytes` at entry level) or `files`; hashes are
    /// 64 lowercase hex digits; mirror paths are relative without `..`; `idx-gzip` files come in
    /// (images, labels) pairs; `mat-v5` entries name `loader.x_var`.
    pub fn from_toml_str(text: &str, source_name: &str) -> Result<Registry, RegistryError> {
        let raw: RawRegistry = toml::from_str(text).map_err(|e| RegistryError::Parse { source_name: source_name.to_string(), message: e.to_string() })?;
        if raw.schema_version != 1 {
            return Err(RegistryError::Parse {
                source_name: source_name.to_string(),
                message: format!("unsupported schema_version {} (expected 1)", raw.schema_version),
            });
        }
        let mut names = HashSet::new();
        let mut entries = Vec::with_capacity(raw.dataset.len());
        for r in raw.dataset {
            if !names.insert(r.name.clone()) {
                return Err(RegistryError::Invalid { name: r.name, message: "duplicate name".into() });
            }
            entries.push(r.validate()?);
        }
        Ok(Registry { entries })
    }

    /// Reads and validates a registry file from disk.
    pub fn from_path(path: &Path) -> Result<Registry, RegistryError> {
        let parse_error = |message: String| RegistryError::Parse { source_name: path.display().to_string(), message };
        // a regular file only: a registry named /dev/zero would be read without end
        let bytes = crate::regular::read_regular(path).map_err(|e| parse_error(e.to_string()))?;
        let text = String::from_utf8(bytes).map_err(|e| parse_error(format!("not UTF-8 text: {e}")))?;
        Registry::from_toml_str(&text, &path.display().to_string())
    }

    /// The registry embedded in the crate ([`BUILTIN_TOML`]), parsed once.
    ///
    /// Panics only if the embedded file is invalid, which the crate's tests rule out.
    pub fn builtin() -> &'static Registry {
        static CELL: OnceLock<Registry> = OnceLock::new();
        CELL.get_or_init(|| match Registry::from_toml_str(BUILTIN_TOML, "builtin registry.toml") {
            Ok(r) => r,
            Err(e) => panic!("the embedded registry.toml is invalid: {e}"),
        })
    }

    /// The entry called `name`, or [`RegistryError::Unknown`] listing close names
    /// (edit distance <= 3 or one name containing the other, case-insensitive).
    pub fn get(&self, name: &str) -> Result<&Entry, RegistryError> {
        if let Some(e) = self.entries.iter().find(|e| e.name == name) {
            return Ok(e);
        }
        let lower = name.to_lowercase();
        let mut scored: Vec<(usize, &str)> = self
            .entries
            .iter()
            .filter_map(|e| {
                let n = e.name.to_lowercase();
                let d = edit_distance(&lower, &n);
                let sub = !lower.is_empty() && (n.contains(&lower) || lower.contains(&n));
                (d <= 3 || sub).then_some((if sub { d.min(1) } else { d }, e.name.as_str()))
            })
            .collect();
        scored.sort();
        Err(RegistryError::Unknown { name: name.to_string(), suggestions: scored.into_iter().take(5).map(|(_, n)| n.to_string()).collect() })
    }

    /// All entries in file order.
    pub fn iter(&self) -> std::slice::Iter<'_, Entry> {
        self.entries.iter()
    }

    /// All entry names in file order.
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<'a> IntoIterator for &'a Registry {
    type Item = &'a Entry;
    type IntoIter = std::slice::Iter<'a, Entry>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter()
    }
}

/// One pinned file in the lock file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Pin {
    /// SHA-256 of the file as first fetched.
    pub sha256: String,
    /// UTC date of the first fetch, `YYYY-MM-DD`.
    pub first_fetched: String,
    /// The file's mirror path (for humans).
    pub file: String,
}

/// The trust-on-first-use lock file: lock key ([`FileSpec::lock_key`]) -> [`Pin`].
///
/// Stored as TOML, one table per key, e.g.
/// ```toml
/// [mnist/mnist.bz2]   # quoted by the writer
/// sha256 = "..."
/// first_fetched = "2026-11-22"
/// file = "libsvm/mnist.bz2"
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(transparent)]
pub struct Lock {
    /// Pins by lock key.
    pub pins: BTreeMap<String, Pin>,
}

impl Lock {
    /// Path of the lock file in `cache_dir`.
    pub fn path_in(cache_dir: &Path) -> PathBuf {
        cache_dir.join(LOCK_FILE_NAME)
    }

    /// Reads the lock file at `path`; a missing file is an empty lock.
    pub fn read(path: &Path) -> Result<Lock, RegistryError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Lock::default()),
            Err(e) => return Err(RegistryError::Lock { path: path.to_path_buf(), message: e.to_string() }),
        };
        let lock: Lock = toml::from_str(&text).map_err(|e| RegistryError::Lock { path: path.to_path_buf(), message: e.to_string() })?;
        for (k, p) in &lock.pins {
            check_hex(k, "sha256", &Some(p.sha256.clone())).map_err(|e| RegistryError::Lock { path: path.to_path_buf(), message: e.to_string() })?;
        }
        Ok(lock)
    }

    /// Writes the lock file atomically (temporary file in the same directory, then rename).
    pub fn write(&self, path: &Path) -> Result<(), RegistryError> {
        let err = |m: String| RegistryError::Lock { path: path.to_path_buf(), message: m };
        let mut text = String::from(
            "# structdr trust-on-first-use pins: SHA-256 of files whose registry entry has no\n\
             # published checksum, recorded at the first download. Delete an entry to re-pin.\n\n",
        );
        text.push_str(&toml::to_string(self).map_err(|e| err(e.to_string()))?);
        if let Some(dir) = path.parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir).map_err(|e| err(e.to_string()))?;
            }
        }
        let tmp = path.with_extension(format!("lock.tmp-{}", std::process::id()));
        std::fs::write(&tmp, text).map_err(|e| err(e.to_string()))?;
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            err(e.to_string())
        })
    }

    /// The pin for `key`, if any.
    pub fn get(&self, key: &str) -> Option<&Pin> {
        self.pins.get(key)
    }
}

/// Today's UTC date as `YYYY-MM-DD` (civil-from-days on the Unix epoch day count).
pub fn utc_date_today() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_parses_and_has_every_set() {
        let r = Registry::from_toml_str(BUILTIN_TOML, "builtin").expect("valid registry");
        for n in [
            "iris",
            "vehicle",
            "segment",
            "satimage",
            "satimage.t",
            "pendigits",
            "pendigits.t",
            "letter",
            "letter.t",
            "usps.t",
            "coil20",
            "yale",
            "warpar10p",
            "tox_171",
            "isolet",
            "orlraws10p",
            "pixraw10p",
            "usps_9298",
            "usps_roweis",
            "usps1",
            "pie_pose27",
            "2moons",
            "tree_300",
            "fashion-mnist",
            "teapots",
            "facial-expression",
            "usps",
            "mnist",
        ] {
            assert!(r.get(n).is_ok(), "{n} missing");
        }
        let f = r.get("fashion-mnist").unwrap();
        assert_eq!(f.files.len(), 4);
        assert_eq!(f.files[0].lock_key, "fashion-mnist/train-images-idx3-ubyte.gz");
        assert_eq!(r.get("pie_pose27").unwrap().paper_name, "CMU-PIE");
        assert!(r.get("mnist").unwrap().files[0].is_tofu());
        assert!(r.get("teapots").unwrap().files[0].is_tofu());
        assert!(!r.get("teapots").unwrap().mirrored);
        assert_eq!(r.get("teapots").unwrap().format, Format::ImageZip);
    }

    #[test]
    fn unknown_name_suggests() {
        let r = Registry::builtin();
        let e = r.get("iriss").unwrap_err().to_string();
        assert!(e.contains("did you mean") && e.contains("iris"), "{e}");
        let e = r.get("usps").map(|_| ()).map_err(|e| e.to_string());
        assert!(e.is_ok());
        let e = r.get("fashion").unwrap_err().to_string();
        assert!(e.contains("fashion-mnist"), "{e}");
        let e = r.get("zzzzzzzzzzzz").unwrap_err().to_string();
        assert!(!e.contains("did you mean"), "{e}");
    }

    #[test]
    fn rejects_bad_registries() {
        let base = "schema_version = 1\n[[dataset]]\nname = \"a\"\npaper_name = \"A\"\nformat = \"libsvm\"\nmirror_path = \"x/a\"\nn_samples = 1\nn_features = 1\nn_classes = 1\ncitation = \"c\"\nlicence = \"l\"\n";
        assert!(Registry::from_toml_str(base, "t").is_ok());
        let unknown = format!("{base}colour = \"red\"\n");
        assert!(matches!(Registry::from_toml_str(&unknown, "t"), Err(RegistryError::Parse { .. })));
        let badhash = format!("{base}sha256 = \"abc\"\n");
        assert!(matches!(Registry::from_toml_str(&badhash, "t"), Err(RegistryError::Invalid { .. })));
        let dup = format!("{base}{}", base.replace("schema_version = 1\n", ""));
        assert!(matches!(Registry::from_toml_str(&dup, "t"), Err(RegistryError::Invalid { .. })));
        let dotdot = base.replace("x/a", "../a");
        assert!(Registry::from_toml_str(&dotdot, "t").is_err());
        let badfmt = base.replace("\"libsvm\"", "\"csv2\"");
        assert!(Registry::from_toml_str(&badfmt, "t").is_err());
        let mat = base.replace("\"libsvm\"", "\"mat-v5\"");
        assert!(Registry::from_toml_str(&mat, "t").is_err(), "mat-v5 needs x_var");
    }

    #[test]
    fn date_format() {
        let d = utc_date_today();
        assert_eq!(d.len(), 10);
        assert!(d.starts_with("20"));
    }

    #[test]
    fn lock_roundtrip() {
        let dir = std::env::temp_dir().join(format!("structdr-lock-{}", std::process::id()));
        let p = Lock::path_in(&dir);
        let mut l = Lock::read(&p).unwrap();
        assert!(l.pins.is_empty());
        l.pins.insert("mnist/mnist.bz2".into(), Pin { sha256: "0".repeat(64), first_fetched: "2026-01-01".into(), file: "libsvm/mnist.bz2".into() });
        l.write(&p).unwrap();
        assert_eq!(Lock::read(&p).unwrap(), l);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
