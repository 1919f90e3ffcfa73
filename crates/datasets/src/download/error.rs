//! What can go wrong fetching a registry file, each error naming its URL or path, and which
//! errors are worth retrying.

use crate::registry::RegistryError;
use std::io;
use std::path::{Path, PathBuf};

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
    #[error("{path}: {cause}")]
    Io {
        /// Path concerned.
        path: PathBuf,
        /// Underlying error (part of the message, so not also returned by `source()`: printing the
        /// error's chain would repeat it).
        cause: io::Error,
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

pub(super) fn list_errors(errors: &[DownloadError]) -> String {
    errors.iter().map(|e| format!("\n  - {e}")).collect()
}

impl DownloadError {
    /// Transient failures worth retrying on the same URL.
    pub(super) fn retryable(&self) -> bool {
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

/// Maps an I/O error on `path` into [`DownloadError::Io`] naming the path.
pub(super) fn io_err(path: &Path) -> impl FnOnce(io::Error) -> DownloadError + '_ {
    move |cause| DownloadError::Io { path: path.to_path_buf(), cause }
}
