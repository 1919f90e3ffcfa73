//! The exit statuses of `structdr`, and the error kind that decides between them.
//!
//! | status | meaning |
//! |---|---|
//! | 0 | success (also `--help`, `--version`) |
//! | 1 | any other error (a write failed, a download failed, a method failed numerically, ...) |
//! | 2 | failed cells: a run in which no cell succeeded, or any cell failed under `--fail-on-error` (`run`, `nightly`) |
//! | 3 | a check found a difference: `verify` (a cell did not reproduce its record), `store check` (a record refused), `nightly` (a regression) |
//! | 64 | usage error: the command line does not parse (unknown flag, missing argument) |
//! | 65 | data error: an input file is missing, unreadable or malformed, data do not fit the method, a data set fails verification, a saved model is refused |
//!
//! 64 and 65 are the BSD `sysexits.h` codes `EX_USAGE` and `EX_DATAERR`. The status is chosen
//! from the error's type ([`exit_code`]), never from its text.

use structdr_datasets::download::DownloadError;
use structdr_datasets::load::LoadError;
use structdr_datasets::parse::ParseError;
use structdr_methods::MethodError;

/// Any other error.
pub const OTHER: i32 = 1;
/// A run in which no cell succeeded, or a cell failed under `--fail-on-error`.
pub const FAILED_CELLS: i32 = 2;
/// A check (`verify`, `store check`, `nightly`) found a difference.
pub const DIFFERS: i32 = 3;
/// The command line does not parse.
pub const USAGE: i32 = 64;
/// Bad input data (missing, unreadable or malformed file, data the method refuses, failed
/// verification of a data set or a saved model).
pub const DATA: i32 = 65;

/// The exit statuses as `--help` lists them (after the commands).
pub const HELP: &str = "Exit status:
  0   success (also --help, --version)
  1   other error (a write, a download or a fit failed, ...)
  2   failed cells: no cell of a run succeeded, or one failed under --fail-on-error (run, nightly)
  3   a check found a difference: verify, store check, a nightly regression
  64  usage error: the command line does not parse
  65  data error: an input file missing, unreadable or malformed, data the method refuses,
      a data set or saved model failing verification";

/// An error in the user's data or input files: exit status [`DATA`]. It wraps the error it marks
/// and prints as that error's whole chain (so a context above it reads as usual and the cause is
/// printed once).
#[derive(Debug)]
pub struct DataError(pub anyhow::Error);

impl std::fmt::Display for DataError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for DataError {}

/// Marks `e` as a data error ([`DataError`]).
pub fn data_error(e: impl Into<anyhow::Error>) -> anyhow::Error {
    anyhow::Error::new(DataError(e.into()))
}

/// Whether a library error is about the input data rather than the program or the machine: a
/// file that is missing, unreadable or malformed, a data set failing its checksum, data a method
/// refuses (too few samples, NaN, a dimension above the data's).
fn is_data(e: &(dyn std::error::Error + 'static)) -> bool {
    if e.is::<DataError>() || e.is::<ParseError>() {
        return true;
    }
    if let Some(l) = e.downcast_ref::<LoadError>() {
        return match l {
            LoadError::Download(d) => is_data(d),
            LoadError::Registry(_) | LoadError::Npy { .. } => false,
            LoadError::Parse(_) | LoadError::ShapeMismatch { .. } | LoadError::Layout { .. } | LoadError::Io { .. } => true,
        };
    }
    if let Some(d) = e.downcast_ref::<DownloadError>() {
        return matches!(
            d,
            DownloadError::ChecksumMismatch { .. } | DownloadError::PinMismatch { .. } | DownloadError::CachedMismatch { .. } | DownloadError::NotCached { .. }
        );
    }
    if let Some(m) = e.downcast_ref::<MethodError>() {
        return matches!(m, MethodError::Input { .. });
    }
    false
}

/// The exit status for an error a command returned: [`DATA`] when any error in its chain is a
/// data error ([`DataError`], or a library's error about the input), else [`OTHER`].
pub fn exit_code(e: &anyhow::Error) -> i32 {
    if e.chain().any(is_data) {
        DATA
    } else {
        OTHER
    }
}
