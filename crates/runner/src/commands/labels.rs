//! Class labels of `embed`, `select` and `transform` inputs: from a file (`--labels`), from a
//! column of the input (`--label-column`), and the warning that keeps a label column from being
//! embedded as a feature without notice.
//!
//! The warning's rule ([`label_like`]): the input has at least two columns, and its last column
//! holds only integers with at most `max(20, floor(sqrt(N)))` distinct values, at least 2 of them
//! and fewer than N (so that every class has, on average, more than one sample). Class labels of
//! the usual benchmark sets pass (digits: 10 values in 1797 rows; COIL20: 20 in 1440), so do count
//! features with few values (a pixel of 17 grey levels): a warning, not an error, and `--no-labels`
//! says the column is a feature.

use super::exit::data_error;
use super::tables::{read_labels, read_matrix, write_vector};
use anyhow::{anyhow, Result};
use clap::Args;
use ndarray::{Array1, Array2};
use std::path::{Path, PathBuf};

// clap reads doc comments as help text (a doc here would change `--help`): the commands' help documents these.
#[allow(missing_docs)]
#[derive(Args, Clone, Default)]
pub struct LabelArgs {
    /// The samples' class labels, one per input row (.npy integers or a one-column text table):
    /// checked against the input's rows and passed to the fit (embed, select).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["label_column", "no_labels"])]
    pub labels: Option<PathBuf>,
    /// The input column that holds class labels (1-based as a spec's `label_column`; negative
    /// counts from the end, -1 = the last): removed from the features, passed to the fit (embed, select) and written beside the
    /// output (OUT with `.labels` before the extension, e.g. Y.labels.npy).
    #[arg(long, value_name = "N", allow_negative_numbers = true, conflicts_with = "no_labels")]
    pub label_column: Option<i64>,
    /// The input has no label column: do not warn when its last column looks like class labels.
    #[arg(long)]
    pub no_labels: bool,
}

/// An input matrix and the labels given with it.
pub struct Input {
    /// The features, N x D (a label column removed).
    pub x: Array2<f64>,
    /// One label per row, from `--labels` or `--label-column`.
    pub labels: Option<Vec<i64>>,
    /// The 0-based index of the input column the labels came from (`--label-column`): they are then written
    /// beside the output.
    pub label_column: Option<usize>,
}

/// Reads `path` and its labels as `args` say: `--labels FILE` is read and checked against the
/// rows, `--label-column N` is taken out of the matrix; without either, a last column that looks
/// like class labels ([`label_like`]) gets a warning on stderr unless `--no-labels`.
pub fn read_input(path: &Path, args: &LabelArgs) -> Result<Input> {
    let x = read_matrix(path)?;
    if let Some(file) = &args.labels {
        let labels = read_labels(file)?;
        if labels.len() != x.nrows() {
            return Err(data_error(anyhow!("{}: {} labels for the {} rows of {}", file.display(), labels.len(), x.nrows(), path.display())));
        }
        return Ok(Input { x, labels: Some(labels), label_column: None });
    }
    if let Some(n) = args.label_column {
        if x.ncols() < 2 {
            return Err(data_error(anyhow!("{}: --label-column {n}: the input has one column: no features would be left", path.display())));
        }
        let (x, labels, column) =
            structdr_datasets::file::split_label_column(&x, n).map_err(|e| data_error(anyhow!("{}: --label-column {n}: {e}", path.display())))?;
        return Ok(Input { x, labels: Some(labels), label_column: Some(column) });
    }
    if !args.no_labels {
        if let Some(k) = label_like(&x) {
            let last = x.ncols();
            eprintln!(
                "warning: the last column of {} (column {last}) holds {k} distinct integers, like class labels, and is used as a \
                 feature; pass --label-column -1 to take it as the labels, or --no-labels if it is a feature",
                path.display()
            );
        }
    }
    Ok(Input { x, labels: None, label_column: None })
}

/// The number of distinct values of the last column when it looks like class labels (see the
/// module doc for the rule), else `None`.
pub fn label_like(x: &Array2<f64>) -> Option<usize> {
    let (n, d) = x.dim();
    if d < 2 || n < 2 {
        return None;
    }
    let col = x.column(d - 1);
    // integers exactly representable as f64 (|v| <= 2^53)
    if !col.iter().all(|v| v.is_finite() && v.fract() == 0.0 && v.abs() <= 9.007_199_254_740_992e15) {
        return None;
    }
    let mut values: Vec<i64> = col.iter().map(|&v| v as i64).collect();
    values.sort_unstable();
    values.dedup();
    let k = values.len();
    let max_classes = 20usize.max((n as f64).sqrt().floor() as usize);
    (k >= 2 && k < n && k <= max_classes).then_some(k)
}

/// `out` with `.labels` before its extension (`Y.npy` -> `Y.labels.npy`).
pub fn labels_path(out: &Path) -> PathBuf {
    let stem = out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = match out.extension() {
        Some(ext) => format!("{stem}.labels.{}", ext.to_string_lossy()),
        None => format!("{stem}.labels"),
    };
    out.with_file_name(name)
}

/// Writes labels taken from an input column beside the output ([`labels_path`]), in the output's
/// format, and says where on stderr; labels given as a file are the user's already.
pub fn write_labels_beside(out: &Path, input: &Input) -> Result<()> {
    let (Some(labels), Some(column)) = (&input.labels, input.label_column) else { return Ok(()) };
    let path = labels_path(out);
    write_vector(&path, &Array1::from(labels.clone()))?;
    eprintln!("labels (input column {}): {}", column + 1, path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_like_last_columns_are_recognised() {
        let labelled = Array2::from_shape_fn((100, 3), |(i, j)| if j == 2 { (i % 4) as f64 } else { i as f64 * 0.37 + j as f64 });
        assert_eq!(label_like(&labelled), Some(4));
        // a continuous last column, one value only, or one distinct value per row: not labels
        let continuous = labelled.mapv(|v| v + 0.5);
        assert_eq!(label_like(&continuous), None);
        let constant = Array2::from_shape_fn((100, 2), |(i, j)| if j == 1 { 1.0 } else { i as f64 });
        assert_eq!(label_like(&constant), None);
        let ids = Array2::from_shape_fn((10, 2), |(i, _)| i as f64);
        assert_eq!(label_like(&ids), None);
        // more distinct values than max(20, sqrt(N)) is not a label column
        let many = Array2::from_shape_fn((100, 2), |(i, j)| if j == 1 { (i % 21) as f64 } else { 0.5 });
        assert_eq!(label_like(&many), None);
        let n = 2500; // sqrt = 50 classes allowed
        let wide = Array2::from_shape_fn((n, 2), |(i, j)| if j == 1 { (i % 50) as f64 } else { 0.5 });
        assert_eq!(label_like(&wide), Some(50));
    }

    #[test]
    fn label_columns_split_by_index_from_either_end() {
        let x = Array2::from_shape_fn((4, 3), |(i, j)| (i * 10 + j) as f64);
        let split = structdr_datasets::file::split_label_column;
        let (f, l, c) = split(&x, -1).unwrap();
        assert_eq!((f.dim(), l, c), ((4, 2), vec![2, 12, 22, 32], 2));
        let (f, l, c) = split(&x, 1).unwrap();
        assert_eq!((f[[1, 0]], l, c), (11.0, vec![0, 10, 20, 30], 0));
        assert_eq!(split(&x, 3).unwrap(), split(&x, -1).unwrap());
        assert!(split(&x, 4).unwrap_err().contains("outside the 3 columns"));
        assert!(split(&x, 0).unwrap_err().contains("1-based"));
        assert!(split(&x.mapv(|v| v + 0.5), 2).unwrap_err().contains("not an integer"));
        assert_eq!(labels_path(Path::new("out/Y.npy")), Path::new("out/Y.labels.npy"));
    }
}
