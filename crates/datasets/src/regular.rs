//! Reading a local file, regular files only: a path naming a directory, device or pipe is refused
//! before it is read (`/dev/zero` has no end). The lowest room of the crate (it imports nothing
//! of it), so the registry and the file loader both read through it.

use std::path::{Path, PathBuf};

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The path names a directory, device or pipe.
    #[error("{path}: not a regular file (a directory, device or pipe cannot be read as data)")]
    NotRegular {
        /// Path concerned.
        path: PathBuf,
    },
    /// Reading failed.
    #[error("{path}: {cause}")]
    Io {
        /// Path concerned.
        path: PathBuf,
        /// Underlying error (part of the message, so not also returned by `source()`: printing the
        /// error's chain would repeat it).
        cause: std::io::Error,
    },
}

/// The bytes of a regular file.
pub fn read_regular(path: &Path) -> Result<Vec<u8>, ReadError> {
    let io = |cause| ReadError::Io { path: path.to_path_buf(), cause };
    if !std::fs::metadata(path).map_err(io)?.is_file() {
        return Err(ReadError::NotRegular { path: path.to_path_buf() });
    }
    std::fs::read(path).map_err(io)
}
