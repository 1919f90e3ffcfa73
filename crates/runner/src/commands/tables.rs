//! The files of the command line: matrices and labels read and written as `.npy` or text tables
//! (`.csv`, `.tsv`, `.txt`), chosen by extension. A file that cannot be read as input is a data
//! error ([`super::exit::DATA`]).

use super::exit::data_error;
use crate::files::atomic_write;
use anyhow::{anyhow, bail, Result};
use ndarray::{Array1, Array2};
use std::path::Path;

/// The table formats the CLI reads and writes, by extension.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum TableFormat {
    Npy,
    Text,
}

/// The format `path`'s extension names; any other extension is refused, naming `what` the file is.
pub(crate) fn table_format(path: &Path, what: &str) -> Result<TableFormat> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    match ext.as_str() {
        "npy" => Ok(TableFormat::Npy),
        "csv" | "tsv" | "txt" => Ok(TableFormat::Text),
        _ => bail!("{}: unsupported {what} format '.{ext}' (use .npy, .csv, .tsv or .txt)", path.display()),
    }
}

/// Reads an input matrix; every failure (format, missing file, malformed content) is a data error.
pub(crate) fn read_matrix(path: &Path) -> Result<Array2<f64>> {
    table_format(path, "input").map_err(data_error)?;
    structdr_datasets::file::read_matrix(path).map_err(data_error)
}

/// Writes a matrix in the format its extension names (`.npy`, or comma-separated text for
/// `.csv` / `.tsv` / `.txt`).
pub(crate) fn write_matrix(path: &Path, x: &Array2<f64>) -> Result<()> {
    match table_format(path, "output")? {
        // ndarray-npy's error prints its I/O cause and also returns it as its source: the message
        // is taken once, as text, so the cause is not printed twice.
        TableFormat::Npy => ndarray_npy::write_npy(path, x).map_err(|e| anyhow!("writing {}: {e}", path.display())),
        TableFormat::Text => Ok(atomic_write(path, structdr_datasets::parse::csv::write(&x.view()).as_bytes())?),
    }
}

/// Writes a vector as a one-column table ([`write_matrix`]'s formats).
pub(crate) fn write_vector<T: ndarray_npy::WritableElement + std::fmt::Debug>(path: &Path, v: &Array1<T>) -> Result<()> {
    match table_format(path, "output")? {
        TableFormat::Npy => ndarray_npy::write_npy(path, v).map_err(|e| anyhow!("writing {}: {e}", path.display())),
        TableFormat::Text => Ok(atomic_write(path, v.iter().map(|x| format!("{x:?}\n")).collect::<String>().as_bytes())?),
    }
}

/// Labels from `.npy` (integers) or a one-column text table (`.csv` / `.tsv` / `.txt`, an optional
/// header, integer values).
pub(crate) fn read_labels(path: &Path) -> Result<Vec<i64>> {
    table_format(path, "labels").map_err(data_error)?;
    structdr_datasets::file::read_labels(path).map_err(data_error)
}
