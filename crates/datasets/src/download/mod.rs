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

use crate::registry::{Entry, FileSpec, Lock, Pin, Registry};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

mod error;
mod http;
mod options;
use error::io_err;
pub use error::DownloadError;
use http::{http_get, make_agent};
use options::STALE_PART_AGE;
pub use options::{FetchOptions, Mirror, DEFAULT_MAX_BYTES};

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

/// Copies `src` to `tmp`, hashing on the way.
fn copy_local(src: &Path, tmp: &Path, cap: u64) -> Result<String, DownloadError> {
    let input = match File::open(src) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(DownloadError::MirrorMissing { path: src.to_path_buf() }),
        Err(e) => return Err(DownloadError::Io { path: src.to_path_buf(), cause: e }),
    };
    let meta = input.metadata().map_err(io_err(src))?;
    if !meta.is_file() {
        return Err(DownloadError::Io { path: src.to_path_buf(), cause: io::Error::other("not a regular file") });
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
            Err(e) => return Err(DownloadError::Io { path: src.to_path_buf(), cause: e }),
        };
        got += n as u64;
        if got > cap {
            return Err(DownloadError::TooLarge { origin: src.display().to_string(), cap, why: "grew past the cap while copying".into() });
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(io_err(tmp))?;
    }
    let f = out.into_inner().map_err(|e| DownloadError::Io { path: tmp.to_path_buf(), cause: e.into_error() })?;
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
mod tests;
