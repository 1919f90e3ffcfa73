//! Verified downloads into the local cache.
//!
//! [`fetch_validated`] (behind `load::fetch` / `load::fetch_files`) puts every file of a registry entry at
//! `<cache_dir>/<mirror_path>` (default cache `data/`, or `$STRUCTDR_DATA`):
//!
//! 1. A cached file that verifies is used as is (no network).
//! 2. Otherwise the sources are tried in order: the mirror (a directory, or a base URL to which
//!    `mirror_path` is appended), then the entry's canonical URLs.
//! 3. Bytes are streamed into a temporary file in the destination directory while SHA-256 is
//!    computed, and stopped at a size cap ([`FetchOptions::cap_for`]: twice the registry's byte
//!    count, or [`FetchOptions::max_bytes`] when it gives none), so a source that streams
//!    forever cannot fill the disk. The file is verified, then **loaded** (parsed and its shape
//!    checked against the registry, [`fetch_validated`]) *before* it is renamed into place
//!    (after `fsync`) and before any trust-on-first-use pin is written: a failed, corrupt or
//!    unloadable download never leaves a file at the cache path or a pin in the lock file, and
//!    the next source is tried. Mismatching bytes are deleted.
//! 4. Partial downloads (`.<file>.part-<pid>-<n>`) are deleted on failure and, when a run was
//!    killed, by the next fetch of that file (their process is gone, or they are a day old). A
//!    cached file that fails verification is deleted before the sources are tried.
//!
//! Verification: the file passes when its SHA-256 equals `sha256`, or when `raw_sha256` is set
//! and the SHA-256 of its decompressed (gzip or bzip2) bytes equals it. Files with neither are
//! trust on first use: the first accepted copy that loads is pinned in `<cache_dir>/registry.lock`
//! (a plainly printed `TRUST ON FIRST USE` line says so) and later copies must equal the pin. A
//! pinned cached file that does not load (pinned before loading was checked) is deleted with its
//! pin and fetched again.
//!
//! HTTP (ureq): connect / response / per-read timeouts; `retries` extra attempts per URL with
//! exponential backoff (`backoff`, doubled each time, capped at 30 s) on network errors, 5xx,
//! 408, 429 and truncated bodies, but a stall (a timeout) only once, so a server that accepts and
//! never answers costs at most two timeouts; other 4xx, checksum mismatches, bytes over the cap
//! and unloadable bytes are not retried (the next source is tried). A body shorter than its
//! `Content-Length` is a [`DownloadError::Truncated`]. A progress bar is drawn on stderr only
//! when it is a terminal and `quiet` is false.

use crate::registry::{Entry, FileSpec, Lock, Pin, Registry, RegistryError};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{self, IsTerminal, Read, Write};
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

/// Options of a fetch ([`fetch_validated`]).
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
const STALE_PART_AGE: Duration = Duration::from_secs(24 * 3600);

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

/// Download and verification errors. Every variant names the URL or path concerned.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    /// The server answered with a non-success status.
    #[error("{url}: HTTP status {status}")]
    Http {
        /// Requested URL.
        url: String,
        /// Status code.
        status: u16,
    },
    /// Connection, TLS, timeout or protocol failure.
    #[error("{url}: {reason}")]
    Network {
        /// Requested URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The body ended before `Content-Length` bytes arrived.
    #[error("{url}: truncated body: Content-Length {expected} bytes, received {got}")]
    Truncated {
        /// Requested URL.
        url: String,
        /// Announced length.
        expected: u64,
        /// Bytes received.
        got: u64,
    },
    /// The bytes do not have the registered SHA-256; they were deleted.
    #[error("{origin}: checksum mismatch for {file}: expected {expected}, got sha256 {actual}; the bytes were deleted")]
    ChecksumMismatch {
        /// URL or path the bytes came from.
        origin: String,
        /// The file's mirror path.
        file: String,
        /// Expected hash(es), e.g. `sha256 <hex>` or `sha256 <hex> or raw_sha256 <hex>`.
        expected: String,
        /// SHA-256 of the received file.
        actual: String,
    },
    /// The bytes differ from the trust-on-first-use pin in the lock file; they were deleted.
    #[error("{origin}: {key} differs from its trust-on-first-use pin in {lock}: pinned sha256 {pinned}, got {actual}; the bytes were deleted (remove the pin to accept the new file)")]
    PinMismatch {
        /// URL or path the bytes came from.
        origin: String,
        /// Lock key.
        key: String,
        /// Lock file path.
        lock: PathBuf,
        /// Pinned hash.
        pinned: String,
        /// SHA-256 of the received file.
        actual: String,
    },
    /// The file is not in the mirror directory.
    #[error("{path}: not in the mirror directory")]
    MirrorMissing {
        /// Path looked at.
        path: PathBuf,
    },
    /// A local file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// Path concerned.
        path: PathBuf,
        /// Underlying error.
        #[source]
        source: io::Error,
    },
    /// `verify` found no cached copy.
    #[error("{name}: {path} is not in the cache")]
    NotCached {
        /// Entry name.
        name: String,
        /// Expected cache path.
        path: PathBuf,
    },
    /// A cached file fails verification.
    #[error("{path}: cached file fails verification: expected {expected}, got sha256 {actual}")]
    CachedMismatch {
        /// Cache path.
        path: PathBuf,
        /// Expected hash(es).
        expected: String,
        /// Actual SHA-256.
        actual: String,
    },
    /// Nothing to try: no mirror and no (enabled) canonical URL.
    #[error("{name}: no source for {file}: no mirror is set{}", if *.has_urls { " and canonical URLs are disabled (STRUCTDR_OFFLINE)" } else { " and the registry has no canonical URL" })]
    NoSource {
        /// Entry name.
        name: String,
        /// The file's mirror path.
        file: String,
        /// Whether the entry has canonical URLs (that were disabled).
        has_urls: bool,
    },
    /// Every source failed; each error is listed.
    #[error("{name}: every source failed for {file}:{}", list_errors(.errors))]
    AllFailed {
        /// Entry name.
        name: String,
        /// The file's mirror path.
        file: String,
        /// One error per source, in the order tried.
        errors: Vec<DownloadError>,
    },
    /// The source sent (or announced) more bytes than the cap; nothing was kept.
    #[error("{origin}: more than {cap} bytes ({why}); the download was stopped and its bytes deleted")]
    TooLarge {
        /// URL or path the bytes came from.
        origin: String,
        /// The cap in bytes.
        cap: u64,
        /// `Content-Length N` or `streamed past the cap`.
        why: String,
    },
    /// The server stopped sending (connect, header or read timeout).
    #[error("{url}: stalled: {reason}")]
    Stalled {
        /// Requested URL.
        url: String,
        /// What timed out.
        reason: String,
    },
    /// Bytes that pass the checksum (or would be pinned) do not parse as the registry's format
    /// or have the wrong shape; nothing was cached or pinned.
    #[error("{origin}: {file} does not load as the registry describes it: {reason}; the bytes were deleted, nothing was cached or pinned")]
    Invalid {
        /// URL or path the bytes came from (or `cache`).
        origin: String,
        /// The file's mirror path (the first file for multi-file entries).
        file: String,
        /// The parse or shape error.
        reason: String,
    },
    /// Registry or lock-file problem.
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

fn list_errors(errors: &[DownloadError]) -> String {
    errors.iter().map(|e| format!("\n  - {e}")).collect()
}

impl DownloadError {
    /// Transient failures worth retrying on the same URL.
    fn retryable(&self) -> bool {
        match self {
            DownloadError::Http { status, .. } => *status >= 500 || *status == 408 || *status == 429,
            DownloadError::Network { .. } | DownloadError::Truncated { .. } => true,
            // a stall is retried once (see `http_get`): a stalled server must not hold a fetch
            // for (retries + 1) timeouts
            DownloadError::Stalled { .. } => true,
            _ => false,
        }
    }
}

/// A file of an entry present and verified in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// Cache path.
    pub path: PathBuf,
    /// SHA-256 of the file bytes.
    pub sha256: String,
    /// Hash identifying the content: `raw_sha256` when the registry gives one (same for the
    /// mirror's and the canonical compressed bytes), else the file's SHA-256.
    pub content_sha256: String,
    /// Where it came from: `cache`, the mirror path / URL, or the canonical URL.
    pub origin: String,
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> DownloadError + '_ {
    move |source| DownloadError::Io { path: path.to_path_buf(), source }
}

/// SHA-256 (hex) of everything `r` yields.
fn hash_reader<R: Read>(mut r: R) -> io::Result<String> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        h.update(&buf[..n]);
    }
    Ok(crate::hex(&h.finalize()))
}

/// SHA-256 (hex) of a file.
pub fn sha256_file(path: &Path) -> Result<String, DownloadError> {
    let f = File::open(path).map_err(io_err(path))?;
    hash_reader(io::BufReader::new(f)).map_err(io_err(path))
}

/// SHA-256 (hex) of the decompressed bytes of a gzip or bzip2 file (detected by magic bytes);
/// `None` when the file is not compressed that way or fails to decompress.
fn raw_sha256_file(path: &Path) -> Option<String> {
    let mut f = File::open(path).ok()?;
    let mut magic = [0u8; 3];
    f.read_exact(&mut magic).ok()?;
    let f = File::open(path).ok()?;
    let r = io::BufReader::new(f);
    if magic[..2] == [0x1f, 0x8b] {
        hash_reader(flate2::read::MultiGzDecoder::new(r)).ok()
    } else if &magic == b"BZh" {
        hash_reader(bzip2::read::MultiBzDecoder::new(r)).ok()
    } else {
        None
    }
}

fn expected_text(spec: &FileSpec) -> String {
    match (&spec.sha256, &spec.raw_sha256) {
        (Some(s), Some(r)) => format!("sha256 {s} or raw_sha256 {r} (decompressed)"),
        (Some(s), None) => format!("sha256 {s}"),
        (None, Some(r)) => format!("raw_sha256 {r} (decompressed)"),
        (None, None) => "a trust-on-first-use pin".to_string(),
    }
}

/// Outcome of checking bytes against the registry (not the pin).
enum Check {
    /// Matches; the content hash.
    Ok(String),
    /// No registered checksum (trust on first use).
    Tofu,
    /// Does not match.
    Mismatch,
}

fn check_registered(spec: &FileSpec, path: &Path, file_sha: &str) -> Check {
    if spec.is_tofu() {
        return Check::Tofu;
    }
    if spec.sha256.as_deref() == Some(file_sha) {
        return Check::Ok(spec.raw_sha256.clone().unwrap_or_else(|| file_sha.to_string()));
    }
    if let Some(raw) = &spec.raw_sha256 {
        if raw_sha256_file(path).as_deref() == Some(raw.as_str()) {
            return Check::Ok(raw.clone());
        }
    }
    Check::Mismatch
}

/// Deletes a temporary file on drop unless it was persisted.
struct TempGuard {
    path: PathBuf,
    keep: bool,
}

impl Drop for TempGuard {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn temp_path_for(dest: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let base = dest.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    dest.with_file_name(format!(".{base}.part-{}-{n}", std::process::id()))
}

fn progress_bar(len: Option<u64>, label: &str, quiet: bool) -> indicatif::ProgressBar {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    let pb = ProgressBar::with_draw_target(len, ProgressDrawTarget::hidden());
    if !quiet && io::stderr().is_terminal() {
        let style = if len.is_some() {
            ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}")
        } else {
            ProgressStyle::with_template("{msg} {spinner} {bytes} {bytes_per_sec}")
        };
        if let Ok(s) = style {
            pb.set_style(s.progress_chars("=> "));
        }
        pb.set_message(label.to_string());
        pb.set_draw_target(ProgressDrawTarget::stderr());
    }
    pb
}

fn make_agent(opts: &FetchOptions) -> ureq::Agent {
    let t = Some(opts.timeout);
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(t)
        .timeout_recv_response(t)
        .timeout_per_read(t)
        .timeout_send_request(t)
        // Data files must arrive byte-exact: no transparent decompression.
        .accept_encoding("identity")
        .user_agent(concat!("structdr-datasets/", env!("CARGO_PKG_VERSION")))
        .build();
    ureq::Agent::new_with_config(config)
}

/// One GET of `url` into `tmp` (created / truncated). Returns the SHA-256 of the bytes.
fn http_once(agent: &ureq::Agent, url: &str, tmp: &Path, label: &str, opts: &FetchOptions, cap: u64) -> Result<String, DownloadError> {
    let net = |reason: String| DownloadError::Network { url: url.to_string(), reason };
    let resp = match agent.get(url).call() {
        Ok(r) => r,
        Err(ureq::Error::StatusCode(s)) => return Err(DownloadError::Http { url: url.to_string(), status: s }),
        Err(ureq::Error::Timeout(t)) => {
            return Err(DownloadError::Stalled { url: url.to_string(), reason: format!("timeout ({t}) after {:.0} s", opts.timeout.as_secs_f64()) })
        }
        Err(e) => return Err(net(e.to_string())),
    };
    let status = resp.status().as_u16();
    if !(200..300).contains(&status) {
        return Err(DownloadError::Http { url: url.to_string(), status });
    }
    let content_length: Option<u64> = resp.headers().get("content-length").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok());
    if let Some(len) = content_length.filter(|&l| l > cap) {
        return Err(DownloadError::TooLarge { origin: url.to_string(), cap, why: format!("Content-Length {len}") });
    }
    let mut reader = resp.into_body().into_reader();
    let mut out = io::BufWriter::new(File::create(tmp).map_err(io_err(tmp))?);
    let pb = progress_bar(content_length, label, opts.quiet);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut got: u64 = 0;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                pb.finish_and_clear();
                let text = e.to_string();
                if e.kind() == io::ErrorKind::TimedOut || text.contains("timeout") || text.contains("timed out") {
                    return Err(DownloadError::Stalled {
                        url: url.to_string(),
                        reason: format!("no data for {:.0} s after {got} bytes", opts.timeout.as_secs_f64()),
                    });
                }
                return Err(match content_length {
                    Some(expected) if got < expected => DownloadError::Truncated { url: url.to_string(), expected, got },
                    _ => net(format!("reading the body after {got} bytes: {text}")),
                });
            }
        };
        got += n as u64;
        if got > cap {
            pb.finish_and_clear();
            return Err(DownloadError::TooLarge { origin: url.to_string(), cap, why: "streamed past the cap".into() });
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(io_err(tmp))?;
        pb.set_position(got);
    }
    pb.finish_and_clear();
    if let Some(expected) = content_length {
        if got != expected {
            return Err(DownloadError::Truncated { url: url.to_string(), expected, got });
        }
    }
    let f = out.into_inner().map_err(|e| DownloadError::Io { path: tmp.to_path_buf(), source: e.into_error() })?;
    f.sync_all().map_err(io_err(tmp))?;
    Ok(crate::hex(&hasher.finalize()))
}

/// GET with retries and exponential backoff on transient errors.
fn http_get(agent: &ureq::Agent, url: &str, tmp: &Path, label: &str, opts: &FetchOptions, cap: u64) -> Result<String, DownloadError> {
    let mut attempt: u32 = 0;
    let mut stalls = 0;
    loop {
        match http_once(agent, url, tmp, label, opts, cap) {
            Ok(h) => return Ok(h),
            Err(e @ DownloadError::Stalled { .. }) if stalls >= 1 => return Err(e),
            Err(e) if e.retryable() && attempt < opts.retries => {
                if matches!(e, DownloadError::Stalled { .. }) {
                    stalls += 1;
                }
                let factor = 1u32.checked_shl(attempt).unwrap_or(u32::MAX);
                let delay = opts.backoff.saturating_mul(factor).min(Duration::from_secs(30));
                if !opts.quiet {
                    eprintln!("warning: {e}; retry {}/{} in {:.1} s", attempt + 1, opts.retries, delay.as_secs_f64());
                }
                std::thread::sleep(delay);
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Copies `src` to `tmp`, hashing on the way.
fn copy_local(src: &Path, tmp: &Path, cap: u64) -> Result<String, DownloadError> {
    let input = match File::open(src) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(DownloadError::MirrorMissing { path: src.to_path_buf() }),
        Err(e) => return Err(DownloadError::Io { path: src.to_path_buf(), source: e }),
    };
    let meta = input.metadata().map_err(io_err(src))?;
    if !meta.is_file() {
        return Err(DownloadError::Io { path: src.to_path_buf(), source: io::Error::other("not a regular file") });
    }
    if meta.len() > cap {
        return Err(DownloadError::TooLarge { origin: src.display().to_string(), cap, why: format!("file of {} bytes", meta.len()) });
    }
    let mut got: u64 = 0;
    let mut reader = io::BufReader::new(input);
    let mut out = io::BufWriter::new(File::create(tmp).map_err(io_err(tmp))?);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(DownloadError::Io { path: src.to_path_buf(), source: e }),
        };
        got += n as u64;
        if got > cap {
            return Err(DownloadError::TooLarge { origin: src.display().to_string(), cap, why: "grew past the cap while copying".into() });
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(io_err(tmp))?;
    }
    let f = out.into_inner().map_err(|e| DownloadError::Io { path: tmp.to_path_buf(), source: e.into_error() })?;
    f.sync_all().map_err(io_err(tmp))?;
    Ok(crate::hex(&hasher.finalize()))
}

enum Source {
    MirrorDir(PathBuf),
    Url(String),
}

impl Source {
    fn describe(&self) -> String {
        match self {
            Source::MirrorDir(p) => p.display().to_string(),
            Source::Url(u) => u.clone(),
        }
    }
}

fn sources_for(entry: &Entry, spec: &FileSpec, opts: &FetchOptions) -> Result<Vec<Source>, DownloadError> {
    let mut v = Vec::new();
    match &opts.mirror {
        Some(Mirror::Dir(d)) => v.push(Source::MirrorDir(d.join(&spec.mirror_path))),
        Some(Mirror::Url(base)) => v.push(Source::Url(format!("{}/{}", base.trim_end_matches('/'), spec.mirror_path))),
        None => {}
    }
    if opts.canonical {
        v.extend(spec.urls.iter().cloned().map(Source::Url));
    }
    if v.is_empty() {
        return Err(DownloadError::NoSource { name: entry.name.clone(), file: spec.mirror_path.clone(), has_urls: !spec.urls.is_empty() });
    }
    Ok(v)
}

/// Checks `file_sha` of the bytes at `path` (from `origin`) against the registry or the pin.
/// Returns the content hash and whether the file must be pinned (TOFU, no pin yet).
fn accept(spec: &FileSpec, path: &Path, file_sha: &str, origin: &str, lock: &Lock, lock_path: &Path) -> Result<(String, bool), DownloadError> {
    match check_registered(spec, path, file_sha) {
        Check::Ok(content) => Ok((content, false)),
        Check::Mismatch => Err(DownloadError::ChecksumMismatch {
            origin: origin.to_string(),
            file: spec.mirror_path.clone(),
            expected: expected_text(spec),
            actual: file_sha.to_string(),
        }),
        Check::Tofu => match lock.get(&spec.lock_key) {
            Some(pin) if pin.sha256 == file_sha => Ok((file_sha.to_string(), false)),
            Some(pin) => Err(DownloadError::PinMismatch {
                origin: origin.to_string(),
                key: spec.lock_key.clone(),
                lock: lock_path.to_path_buf(),
                pinned: pin.sha256.clone(),
                actual: file_sha.to_string(),
            }),
            None => Ok((file_sha.to_string(), true)),
        },
    }
}

/// Records a TOFU pin (re-reading the lock file first) and prints the plain notice.
fn pin(spec: &FileSpec, sha: &str, lock_path: &Path, lock: &mut Lock) -> Result<(), DownloadError> {
    let mut fresh = Lock::read(lock_path)?;
    if let Some(p) = fresh.get(&spec.lock_key) {
        if p.sha256 != sha {
            return Err(DownloadError::PinMismatch {
                origin: spec.mirror_path.clone(),
                key: spec.lock_key.clone(),
                lock: lock_path.to_path_buf(),
                pinned: p.sha256.clone(),
                actual: sha.to_string(),
            });
        }
    } else {
        fresh
            .pins
            .insert(spec.lock_key.clone(), Pin { sha256: sha.to_string(), first_fetched: crate::registry::utc_date_today(), file: spec.mirror_path.clone() });
        fresh.write(lock_path)?;
        eprintln!("TRUST ON FIRST USE: {} has no published checksum; pinned sha256 {} in {}", spec.lock_key, sha, lock_path.display());
    }
    *lock = fresh;
    Ok(())
}

fn fsync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Removes partial downloads of `dest` left by earlier runs: `.<file>.part-<pid>-<n>` whose process
/// is gone (or that are older than a day). Returns how many were removed.
fn remove_stale_parts(dest: &Path) -> usize {
    let (Some(dir), Some(base)) = (dest.parent(), dest.file_name().map(|b| b.to_string_lossy().into_owned())) else { return 0 };
    let prefix = format!(".{base}.part-");
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let proc_known = Path::new("/proc/self").exists();
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(&prefix) else { continue };
        let pid: Option<u32> = rest.split('-').next().and_then(|p| p.parse().ok());
        if pid == Some(std::process::id()) {
            continue;
        }
        let alive = pid.is_some_and(|p| Path::new(&format!("/proc/{p}")).exists());
        let old = e.metadata().ok().and_then(|m| m.modified().ok()).and_then(|t| t.elapsed().ok()).is_some_and(|age| age > STALE_PART_AGE);
        if ((proc_known && !alive) || old) && std::fs::remove_file(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// A file of an entry on its way into the cache: verified against the registry or its pin, not
/// yet renamed into place (`tmp`) or, for a cached copy, already there.
struct Staged {
    fetched: Fetched,
    /// Bytes waiting in a temporary file (deleted on drop unless committed); `None` for a cached copy.
    tmp: Option<TempGuard>,
    /// A trust-on-first-use pin to record once the entry has loaded.
    must_pin: bool,
}

impl Staged {
    /// Where the bytes are now (the temporary file, or the cache path).
    fn path(&self) -> &Path {
        self.tmp.as_ref().map_or(&self.fetched.path, |g| &g.path)
    }
}

/// Gets one file: a cached copy that verifies, else the first source whose bytes verify
/// (`validate_alone` runs on single-file entries before a source is accepted, so bytes that do
/// not load do not stop the next source from being tried). A cached copy that fails
/// verification is deleted.
fn stage_one(
    entry: &Entry,
    spec: &FileSpec,
    opts: &FetchOptions,
    agent: &mut Option<ureq::Agent>,
    lock: &Lock,
    validate_alone: Option<&dyn Fn(&Path) -> Result<(), String>>,
) -> Result<Staged, DownloadError> {
    let lock_path = opts.lock_path();
    let dest = opts.cache_dir.join(&spec.mirror_path);
    let stale = remove_stale_parts(&dest);
    if stale > 0 && !opts.quiet {
        eprintln!("removed {stale} partial download(s) of {} left by an earlier run", dest.display());
    }

    // 1. Cached copy.
    if dest.is_file() {
        let sha = sha256_file(&dest)?;
        match accept(spec, &dest, &sha, "cache", lock, &lock_path) {
            Ok((content, must_pin)) => {
                return Ok(Staged { fetched: Fetched { path: dest, sha256: sha, content_sha256: content, origin: "cache".into() }, tmp: None, must_pin });
            }
            Err(e) => {
                std::fs::remove_file(&dest).map_err(io_err(&dest))?;
                if !opts.quiet {
                    eprintln!("warning: cached {} failed verification ({e}); deleted it, fetching again", dest.display());
                }
            }
        }
    }

    // 2. Sources in order.
    let sources = sources_for(entry, spec, opts)?;
    let dir = dest.parent().unwrap_or(Path::new(".")).to_path_buf();
    std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    let cap = opts.cap_for(spec);
    let mut errors = Vec::new();
    for src in &sources {
        let origin = src.describe();
        let tmp = temp_path_for(&dest);
        let guard = TempGuard { path: tmp.clone(), keep: false };
        let got = match src {
            Source::MirrorDir(p) => copy_local(p, &tmp, cap),
            Source::Url(u) => {
                let a = agent.get_or_insert_with(|| make_agent(opts));
                http_get(a, u, &tmp, &spec.mirror_path, opts, cap)
            }
        };
        let checked =
            got.and_then(|sha| accept(spec, &tmp, &sha, &origin, lock, &lock_path).map(|(content, pin)| (sha, content, pin))).and_then(
                |v| match validate_alone {
                    Some(f) => f(&tmp).map(|_| v).map_err(|reason| DownloadError::Invalid { origin: origin.clone(), file: spec.mirror_path.clone(), reason }),
                    None => Ok(v),
                },
            );
        match checked {
            Ok((sha, content, must_pin)) => {
                return Ok(Staged { fetched: Fetched { path: dest, sha256: sha, content_sha256: content, origin }, tmp: Some(guard), must_pin });
            }
            Err(e) => {
                drop(guard); // deletes the bytes
                if !opts.quiet && sources.len() > 1 {
                    eprintln!("warning: {e}");
                }
                errors.push(e);
            }
        }
    }
    if errors.len() == 1 {
        Err(errors.remove(0))
    } else {
        Err(DownloadError::AllFailed { name: entry.name.clone(), file: spec.mirror_path.clone(), errors })
    }
}

/// Makes every file of `entry` present and verified in the cache and returns them with what
/// `validate` made of them.
///
/// Order: stage every file (cached copies that verify, else downloads into temporary files
/// verified by checksum or pin), run `validate` on the staged paths (registry order), and only
/// then move new files into the cache and record trust-on-first-use pins. Bytes that do not
/// load are never cached or pinned. Cached trust-on-first-use files that verify against their
/// pin but do not load (garbage pinned before this check existed) are deleted with their pins
/// and fetched once more.
pub fn fetch_validated<T, E: std::fmt::Display>(
    entry: &Entry,
    opts: &FetchOptions,
    validate: impl Fn(&[PathBuf]) -> Result<T, E>,
) -> Result<(Vec<Fetched>, T), Validated<E>> {
    let lock_path = opts.lock_path();
    let single = entry.files.len() == 1;
    let validate_alone = |p: &Path| validate(&[p.to_path_buf()]).map(|_| ()).map_err(|e| e.to_string());
    for round in 0..2 {
        let mut lock = Lock::read(&lock_path).map_err(DownloadError::from)?;
        let mut agent = None;
        let mut staged: Vec<Staged> = Vec::with_capacity(entry.files.len());
        for spec in &entry.files {
            let alone: Option<&dyn Fn(&Path) -> Result<(), String>> = if single { Some(&validate_alone) } else { None };
            staged.push(stage_one(entry, spec, opts, &mut agent, &lock, alone).map_err(Validated::Download)?);
        }
        let paths: Vec<PathBuf> = staged.iter().map(|s| s.path().to_path_buf()).collect();
        match validate(&paths) {
            Ok(value) => {
                let mut out = Vec::with_capacity(staged.len());
                for (mut st, spec) in staged.into_iter().zip(&entry.files) {
                    if let Some(g) = st.tmp.as_mut() {
                        std::fs::rename(&g.path, &st.fetched.path).map_err(io_err(&st.fetched.path)).map_err(Validated::Download)?;
                        g.keep = true;
                        if let Some(dir) = st.fetched.path.parent() {
                            fsync_dir(dir);
                        }
                    }
                    if st.must_pin {
                        pin(spec, &st.fetched.sha256, &lock_path, &mut lock).map_err(Validated::Download)?;
                    }
                    out.push(st.fetched);
                }
                return Ok((out, value));
            }
            Err(reason) => {
                let any_cached = staged.iter().any(|s| s.tmp.is_none());
                if round == 0 && any_cached && entry.files.iter().all(FileSpec::is_tofu) {
                    // garbage pinned before validation existed: forget it and fetch again
                    let mut fresh = Lock::read(&lock_path).map_err(DownloadError::from)?;
                    for (st, spec) in staged.iter().zip(&entry.files) {
                        if st.tmp.is_none() {
                            std::fs::remove_file(&st.fetched.path).map_err(io_err(&st.fetched.path)).map_err(Validated::Download)?;
                            fresh.pins.remove(&spec.lock_key);
                        }
                    }
                    fresh.write(&lock_path).map_err(DownloadError::from)?;
                    if !opts.quiet {
                        eprintln!("warning: cached files of {} do not load ({reason}); deleted them and their pins, fetching again", entry.name);
                    }
                    continue;
                }
                if !any_cached {
                    let origin = staged.iter().map(|s| s.fetched.origin.clone()).collect::<Vec<_>>().join(", ");
                    return Err(Validated::Download(DownloadError::Invalid { origin, file: entry.files[0].mirror_path.clone(), reason: reason.to_string() }));
                }
                // files the registry's checksums vouch for that do not load: the registry's
                // description (shape, loader) is what is wrong; the loader's own error says how
                return Err(Validated::Load(reason));
            }
        }
    }
    unreachable!("the second round returns")
}

/// Why [`fetch_validated`] failed.
#[derive(Debug)]
pub enum Validated<E> {
    /// Getting or verifying the bytes failed (bytes that do not load are
    /// [`DownloadError::Invalid`]).
    Download(DownloadError),
    /// Cached files that match their registered checksums do not load: `validate`'s error.
    Load(E),
}

impl<E> From<DownloadError> for Validated<E> {
    fn from(e: DownloadError) -> Self {
        Validated::Download(e)
    }
}

/// Re-hashes the cached files of `entry` without any network or mirror access: each must exist
/// and match the registry checksum or its trust-on-first-use pin (an unpinned TOFU file is an
/// error here: it has never been fetched).
pub fn verify_entry(entry: &Entry, opts: &FetchOptions) -> Result<Vec<Fetched>, DownloadError> {
    let lock_path = opts.lock_path();
    let lock = Lock::read(&lock_path)?;
    let mut out = Vec::new();
    for spec in &entry.files {
        let path = opts.cache_dir.join(&spec.mirror_path);
        if !path.is_file() {
            return Err(DownloadError::NotCached { name: entry.name.clone(), path });
        }
        let sha = sha256_file(&path)?;
        let mismatch = |expected: String| DownloadError::CachedMismatch { path: path.clone(), expected, actual: sha.clone() };
        let content = match check_registered(spec, &path, &sha) {
            Check::Ok(c) => c,
            Check::Mismatch => return Err(mismatch(expected_text(spec))),
            Check::Tofu => match lock.get(&spec.lock_key) {
                Some(p) if p.sha256 == sha => sha.clone(),
                Some(p) => return Err(mismatch(format!("pinned sha256 {}", p.sha256))),
                None => return Err(mismatch(format!("a pin in {} (none recorded)", lock_path.display()))),
            },
        };
        out.push(Fetched { path, sha256: sha, content_sha256: content, origin: "cache".into() });
    }
    Ok(out)
}

/// [`verify_entry`] for the builtin-registry entry called `name`.
pub fn verify(name: &str, opts: &FetchOptions) -> Result<Vec<Fetched>, DownloadError> {
    verify_entry(Registry::builtin().get(name)?, opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirror_parse() {
        assert_eq!(Mirror::parse("https://x.org/d/"), Mirror::Url("https://x.org/d/".into()));
        assert_eq!(Mirror::parse("file:///srv/d"), Mirror::Dir(PathBuf::from("/srv/d")));
        assert_eq!(Mirror::parse("../shared/datasets"), Mirror::Dir(PathBuf::from("../shared/datasets")));
        assert!(Mirror::parse("/a").describe().contains("directory"));
    }

    #[test]
    fn mirror_discover() {
        let root = std::env::temp_dir().join(format!("structdr-discover-{}", std::process::id()));
        let deep = root.join("main/crates/x");
        std::fs::create_dir_all(&deep).unwrap();
        // Only a mirror inside `root` counts: one found above it (a `shared/` beside the temp
        // directory) is not this test's, and `root/../shared` starts with `root` lexically, so
        // compare canonical paths.
        let canonical_root = root.canonicalize().unwrap();
        let inside_root = |m: &Mirror| matches!(m, Mirror::Dir(p) if p.canonicalize().is_ok_and(|c| c.starts_with(&canonical_root)));
        assert_eq!(Mirror::discover(&deep).filter(inside_root), None);
        std::fs::create_dir_all(root.join("shared/datasets")).unwrap();
        std::fs::write(root.join("shared/datasets/MANIFEST.toml"), "").unwrap();
        match Mirror::discover(&deep) {
            Some(Mirror::Dir(p)) => assert_eq!(p.canonicalize().unwrap(), root.join("shared/datasets").canonicalize().unwrap()),
            other => panic!("not discovered: {other:?}"),
        }
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn retryable_classes() {
        let h = |s| DownloadError::Http { url: "u".into(), status: s };
        assert!(h(500).retryable() && h(503).retryable() && h(429).retryable());
        assert!(!h(404).retryable() && !h(403).retryable());
        assert!(DownloadError::Truncated { url: "u".into(), expected: 2, got: 1 }.retryable());
    }
}
