//! Where files come from (the mirror) and how a fetch behaves (timeouts, retries, size caps).

use crate::registry::{FileSpec, Lock};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where a mirror of the data lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mirror {
    /// A local directory laid out like `shared/datasets` (files at `<dir>/<mirror_path>`).
    Dir(PathBuf),
    /// A base URL; a file is fetched from `<base>/<mirror_path>`.
    Url(String),
}

impl Mirror {
    /// `http://` / `https://` values are base URLs; `file://<path>` and anything else is a
    /// directory.
    pub fn parse(s: &str) -> Mirror {
        let t = s.trim();
        if t.starts_with("http://") || t.starts_with("https://") {
            Mirror::Url(t.to_string())
        } else if let Some(p) = t.strip_prefix("file://") {
            Mirror::Dir(PathBuf::from(p))
        } else {
            Mirror::Dir(PathBuf::from(t))
        }
    }

    /// The shared mirror found from `start`: the first of `<dir>/shared/datasets` and
    /// `<dir>/../shared/datasets` holding a `MANIFEST.toml`, for `dir` = `start` and each of its
    /// ancestors. Only the local file system is looked at.
    pub fn discover(start: &Path) -> Option<Mirror> {
        for dir in start.ancestors() {
            for cand in [dir.join("shared").join("datasets"), dir.join("..").join("shared").join("datasets")] {
                if cand.join("MANIFEST.toml").is_file() {
                    return Some(Mirror::Dir(cand));
                }
            }
        }
        None
    }

    /// Human-readable description (`mirror directory <path>` / `mirror <url>`).
    pub fn describe(&self) -> String {
        match self {
            Mirror::Dir(d) => format!("mirror directory {}", d.display()),
            Mirror::Url(u) => format!("mirror {u}"),
        }
    }
}

/// Options of a fetch ([`super::fetch_validated`]).
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// Cache directory (files at `<cache_dir>/<mirror_path>`, lock file `registry.lock`).
    /// Default `data` (relative to the working directory).
    pub cache_dir: PathBuf,
    /// Mirror tried before the canonical URLs.
    pub mirror: Option<Mirror>,
    /// Extra attempts per URL after the first one on transient errors. Default 3.
    pub retries: u32,
    /// Connect, response-header and per-read timeout. Default 30 s.
    pub timeout: Duration,
    /// Delay before the first retry; doubled for each further retry, capped at 30 s. Default 1 s.
    pub backoff: Duration,
    /// Try the canonical URLs (false = mirror and cache only, no other network). Default true.
    pub canonical: bool,
    /// No progress bar and no warnings (the TRUST ON FIRST USE line is always printed).
    pub quiet: bool,
    /// Largest download accepted for a file whose registry entry gives no size (default 4 GiB;
    /// `STRUCTDR_MAX_DOWNLOAD_BYTES`). With a registered size `b` the cap is
    /// `max(2 b, b + 1 MiB)` (a recompressed copy matching `raw_sha256` may differ in size).
    pub max_bytes: u64,
}

/// Default [`FetchOptions::max_bytes`]: 4 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 4 << 30;

/// Partial downloads (`.<file>.part-<pid>-<n>`) older than this are removed on the next fetch
/// even when their process id is in use again.
pub(super) const STALE_PART_AGE: Duration = Duration::from_secs(24 * 3600);

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            cache_dir: PathBuf::from("data"),
            mirror: None,
            retries: 3,
            timeout: Duration::from_secs(30),
            backoff: Duration::from_secs(1),
            canonical: true,
            quiet: false,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

impl FetchOptions {
    /// Defaults overridden by the environment: `STRUCTDR_DATA` (cache directory),
    /// `STRUCTDR_MIRROR` (mirror directory or base URL, see [`Mirror::parse`]; set but empty =
    /// no mirror; unset = [`Mirror::discover`] from the working directory),
    /// `STRUCTDR_OFFLINE=1` (do not try canonical URLs).
    pub fn from_env() -> FetchOptions {
        let mut o = FetchOptions::default();
        if let Some(d) = std::env::var_os("STRUCTDR_DATA").filter(|v| !v.is_empty()) {
            o.cache_dir = PathBuf::from(d);
        }
        match std::env::var("STRUCTDR_MIRROR") {
            Ok(m) if !m.trim().is_empty() => o.mirror = Some(Mirror::parse(&m)),
            Ok(_) => {}
            Err(_) => o.mirror = std::env::current_dir().ok().and_then(|d| Mirror::discover(&d)),
        }
        if let Some(b) = std::env::var("STRUCTDR_MAX_DOWNLOAD_BYTES").ok().and_then(|v| v.trim().parse::<u64>().ok()) {
            o.max_bytes = b;
        }
        if let Ok(v) = std::env::var("STRUCTDR_OFFLINE") {
            if matches!(v.trim(), "1" | "true" | "yes") {
                o.canonical = false;
            }
        }
        o
    }

    /// Path of the trust-on-first-use lock file (`<cache_dir>/registry.lock`).
    pub fn lock_path(&self) -> PathBuf {
        Lock::path_in(&self.cache_dir)
    }

    /// The byte cap for `spec` (see [`FetchOptions::max_bytes`]).
    pub fn cap_for(&self, spec: &FileSpec) -> u64 {
        match spec.bytes {
            Some(b) => b.saturating_mul(2).max(b.saturating_add(1 << 20)),
            None => self.max_bytes,
        }
    }
}
