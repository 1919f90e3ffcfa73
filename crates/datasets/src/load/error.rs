//! The error of loading a data set ([`LoadError`]), its own room so that the image decoders
//! ([`super::images`]) and the loaders above them share it without importing each other.

use crate::download::DownloadError;
use crate::parse::ParseError;
use crate::registry::RegistryError;
use std::path::PathBuf;

/// Errors of [`super::load`] and [`super::export`].
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Fetching or verifying a file failed.
    #[error(transparent)]
    Download(#[from] DownloadError),
    /// Unknown entry or bad registry.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// A file is malformed.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The loaded data do not have the registry's shape.
    #[error("{name}: {what}: the registry says {expected}, the loaded data have {actual}")]
    ShapeMismatch {
        /// Entry name.
        name: String,
        /// `n_samples`, `n_features` or `n_classes`.
        what: &'static str,
        /// Registry value.
        expected: usize,
        /// Loaded value.
        actual: usize,
    },
    /// The file parsed but its content does not fit the loader description.
    #[error("{source_name}: {message}")]
    Layout {
        /// File (or entry) concerned.
        source_name: String,
        /// What does not fit.
        message: String,
    },
    /// Reading or writing a local file failed.
    #[error("{path}: {cause}")]
    Io {
        /// Path concerned.
        path: PathBuf,
        /// Underlying error (part of the message, so not also returned by `source()`: printing the
        /// error's chain would repeat it).
        cause: std::io::Error,
    },
    /// Writing an `.npy` file failed.
    #[error("{path}: writing npy: {message}")]
    Npy {
        /// Path concerned.
        path: PathBuf,
        /// Reason.
        message: String,
    },
}

pub(crate) fn layout(source: &str, message: impl Into<String>) -> LoadError {
    LoadError::Layout { source_name: source.to_string(), message: message.into() }
}
