//! What identifies an external method (`[[method]]` with a `command`) in its cells' keys: the
//! command, the SHA-256 of the files it names (so editing the script recomputes its cells) and its
//! options; and whether its program can be started. Running it is [`crate::external`].

use serde::{Deserialize, Serialize};
use std::path::Path;
use structdr_methods::api::OutputKind;

/// Default limit on one run of an external command, in seconds.
pub const DEFAULT_TIMEOUT_S: f64 = 600.0;

/// Longest `timeout_s` accepted: 30 days (2,592,000 s). A longer one is no limit in practice, and
/// `1e30` s does not fit a `std::time::Duration` (it panicked when the command started).
pub const MAX_TIMEOUT_S: f64 = 30.0 * 24.0 * 3600.0;

/// What identifies an external method in a cell key: the command, the bytes of its files, and
/// what it returns.
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

/// Whether `program` can be started: a path to an existing file, or a name found on `$PATH`.
pub fn program_exists(program: &str) -> bool {
    if program.contains('/') {
        return Path::new(program).is_file();
    }
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}
