//! A researcher's own data file as a [`Dataset`]: NPY, CSV / TSV / text, LIBSVM or MATLAB v5,
//! with labels from the file (LIBSVM, a MAT variable, a column) or from a second file.
//!
//! The data set's checksum is the SHA-256 of the bytes of every file read and of the options that
//! select from them (format, variables, label column), so a changed file or option gives new
//! cells, like a registry set whose source changed.

use crate::load::LoadError;
use crate::parse::{csv, libsvm, mat::MatFile, npy};
use crate::regular::ReadError;
use crate::{sha256_hex, Dataset};
use ndarray::{s, Array2, Axis};
use std::path::{Path, PathBuf};

/// The formats of own data files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileFormat {
    /// NumPy `.npy` (2-D, or 1-D as one column).
    Npy,
    /// Delimited numeric text (`.csv`, `.tsv`, `.txt`; [`csv::parse`]'s rules: delimiter detected,
    /// an optional header of names).
    Csv,
    /// LIBSVM / SVMlight sparse text (`.libsvm`, `.svm`); labels come from the file.
    Libsvm,
    /// MATLAB v5 `.mat`; X is the `variable` (default: the only 2-D numeric one).
    Mat,
}

impl FileFormat {
    /// The format a file name's extension names: `.npy`, `.csv` / `.tsv` / `.txt`, `.libsvm` /
    /// `.svm` / `.svmlight`, `.mat`.
    pub fn from_path(path: &Path) -> Result<FileFormat, LoadError> {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
        Ok(match ext.as_str() {
            "npy" => FileFormat::Npy,
            "csv" | "tsv" | "txt" => FileFormat::Csv,
            "libsvm" | "svm" | "svmlight" => FileFormat::Libsvm,
            "mat" => FileFormat::Mat,
            _ => {
                return Err(layout(
                    path,
                    format!("unsupported data format '.{ext}' (use .npy, .csv, .tsv, .txt, .libsvm, .svm or .mat, or name it with format = \"...\")"),
                ))
            }
        })
    }
}

/// Where a file data set's samples and labels are.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct FileSource {
    /// The data file (samples in rows).
    pub path: PathBuf,
    /// Its format; `None`: from the extension ([`FileFormat::from_path`]).
    pub format: Option<FileFormat>,
    /// MAT files: the variable holding X.
    pub variable: Option<String>,
    /// MAT files: the variable holding the labels.
    pub labels_variable: Option<String>,
    /// A file of labels, one per sample (`.npy`, or one column of `.csv` / `.tsv` / `.txt`).
    pub labels: Option<PathBuf>,
    /// The column of X holding the labels, 1-based (`-1`: the last); it is removed from X.
    pub label_column: Option<i64>,
}

fn layout(path: &Path, message: impl Into<String>) -> LoadError {
    LoadError::Layout { source_name: path.display().to_string(), message: message.into() }
}

/// The bytes of a regular file (a directory, device or pipe is refused: `/dev/zero` has no end;
/// [`crate::regular::read_regular`] with this module's errors).
pub fn read_regular(path: &Path) -> Result<Vec<u8>, LoadError> {
    crate::regular::read_regular(path).map_err(|e| match e {
        ReadError::NotRegular { .. } => layout(path, "not a regular file (a directory, device or pipe cannot be read as data)"),
        ReadError::Io { path, cause } => LoadError::Io { path, cause },
    })
}

/// A matrix from an `.npy` or text table file (what `--input` reads).
pub fn read_matrix(path: &Path) -> Result<Array2<f64>, LoadError> {
    read_matrix_checked(path, &|_, _| Ok(()))
}

/// [`read_matrix`] with its shape `(rows, cols)` passed to `check` as soon as it is known: for
/// `.npy` from the header, before the body is read (a 1.6 GB file of the wrong shape is refused
/// after reading 64 KiB); a text table has no header, so it is checked once parsed. An
/// `Err(message)` becomes the error, naming the file.
pub fn read_matrix_checked(path: &Path, check: &dyn Fn(usize, usize) -> Result<(), String>) -> Result<Array2<f64>, LoadError> {
    let format = FileFormat::from_path(path)?;
    match format {
        FileFormat::Npy => {
            ensure_regular(path)?;
            Ok(npy::read_matrix_checked(path, check)?)
        }
        _ => {
            let x = matrix_of(path, format, &read_regular(path)?)?;
            check(x.nrows(), x.ncols()).map_err(|m| layout(path, format!("{} x {}: {m}", x.nrows(), x.ncols())))?;
            Ok(x)
        }
    }
}

/// A directory, device or pipe is refused before it is opened ([`read_regular`]'s rule).
fn ensure_regular(path: &Path) -> Result<(), LoadError> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => Err(layout(path, "not a regular file (a directory, device or pipe cannot be read as data)")),
        Ok(_) => Ok(()),
        Err(cause) => Err(LoadError::Io { path: path.to_path_buf(), cause }),
    }
}

fn matrix_of(path: &Path, format: FileFormat, bytes: &[u8]) -> Result<Array2<f64>, LoadError> {
    let name = path.display().to_string();
    match format {
        FileFormat::Npy => Ok(npy::parse_matrix(bytes, &name)?),
        FileFormat::Csv => Ok(csv::parse(bytes, &name)?),
        FileFormat::Libsvm | FileFormat::Mat => Err(layout(path, "a table file (.npy, .csv, .tsv or .txt) is needed here")),
    }
}

/// Labels from an `.npy` file (integers, or integral floats) or a one-column text table.
pub fn read_labels(path: &Path) -> Result<Vec<i64>, LoadError> {
    let format = FileFormat::from_path(path)?;
    let bytes = read_regular(path)?;
    labels_of(path, format, &bytes)
}

fn labels_of(path: &Path, format: FileFormat, bytes: &[u8]) -> Result<Vec<i64>, LoadError> {
    match format {
        FileFormat::Npy => Ok(npy::parse_labels(bytes, &path.display().to_string())?),
        FileFormat::Csv => {
            let m = csv::parse(bytes, &path.display().to_string())?;
            if m.ncols() != 1 {
                return Err(layout(path, format!("labels need one column, found {}", m.ncols())));
            }
            integral(path, m.column(0).iter().copied())
        }
        _ => Err(layout(path, "labels are read from .npy, .csv, .tsv or .txt files")),
    }
}

/// Takes label column `c` out of `x`: 1-based, negative from the end (-1 is the last), the
/// convention of a spec's `label_column` and of the command line's `--label-column`. Returns the
/// other columns, the labels and the column's 0-based index; a column outside `x`, or a value in
/// it that is not an integer, is refused with the reason.
pub fn split_label_column(x: &Array2<f64>, c: i64) -> Result<(Array2<f64>, Vec<i64>, usize), String> {
    let d = x.ncols() as i64;
    let j = if c < 0 { d + c } else { c - 1 };
    if c == 0 || j < 0 || j >= d {
        return Err(format!("label_column = {c} is outside the {d} columns (1-based; -1 is the last)"));
    }
    let j = j as usize;
    let labels = integers(x.column(j).iter().copied())?;
    let rest = ndarray::concatenate(Axis(1), &[x.slice(s![.., ..j]), x.slice(s![.., j + 1..])]).expect("same rows");
    Ok((rest, labels, j))
}

/// Labels that must be integers (exactly representable: |v| < 9e15), else the first that is not.
fn integers(values: impl Iterator<Item = f64>) -> Result<Vec<i64>, String> {
    values
        .enumerate()
        .map(
            |(i, v)| {
                if v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e15 {
                    Ok(v as i64)
                } else {
                    Err(format!("label {v} of sample {} is not an integer", i + 1))
                }
            },
        )
        .collect()
}

fn integral(path: &Path, values: impl Iterator<Item = f64>) -> Result<Vec<i64>, LoadError> {
    integers(values).map_err(|m| layout(path, m))
}

/// Loads a file data set named `name` (its checksum covers the files' bytes and the options).
///
/// Errors name the file: unknown format, unreadable or malformed files, labels given twice (a
/// LIBSVM file has its own), a label column out of range, labels of another length than the
/// samples, non-integral labels, fewer than 2 samples or no features.
pub fn load_file(name: &str, src: &FileSource) -> Result<Dataset, LoadError> {
    let path = &src.path;
    let format = match src.format {
        Some(f) => f,
        None => FileFormat::from_path(path)?,
    };
    if format == FileFormat::Npy {
        // the header's shape against the file's length before the body is read
        ensure_regular(path)?;
        npy::peek_header(path)?;
    }
    let bytes = read_regular(path)?;
    let given = [src.labels.is_some(), src.label_column.is_some(), src.labels_variable.is_some()].iter().filter(|&&b| b).count();
    if given > 1 || (format == FileFormat::Libsvm && given > 0) {
        return Err(layout(path, "labels are given twice: use one of labels, label_column, labels_variable (LIBSVM files carry their own)"));
    }
    if format != FileFormat::Mat && (src.variable.is_some() || src.labels_variable.is_some()) {
        return Err(layout(path, "variable and labels_variable apply to .mat files only"));
    }
    let source = path.display().to_string();
    let (mut x, mut labels) = match format {
        FileFormat::Npy | FileFormat::Csv => (matrix_of(path, format, &bytes)?, None),
        FileFormat::Libsvm => {
            let m = libsvm::parse(&bytes, &source, None)?;
            (m.x, Some(m.y))
        }
        FileFormat::Mat => {
            let f = MatFile::parse(&bytes, &source)?;
            let var = match &src.variable {
                Some(v) => v.clone(),
                None => {
                    let numeric: Vec<String> = f.names().into_iter().filter(|n| f.matrix(n).is_ok_and(|m| m.nrows() > 1 && m.ncols() > 1)).collect();
                    match numeric.as_slice() {
                        [one] => one.clone(),
                        _ => return Err(layout(path, format!("name the variable holding X (variable = \"...\"); numeric matrices: {numeric:?}"))),
                    }
                }
            };
            let x = f.matrix(&var)?;
            let labels = match &src.labels_variable {
                Some(v) => {
                    let m = f.matrix(v)?;
                    if m.nrows() != 1 && m.ncols() != 1 {
                        return Err(layout(path, format!("labels variable `{v}` is {} x {}, not a vector", m.nrows(), m.ncols())));
                    }
                    Some(integral(path, m.iter().copied())?)
                }
                None => None,
            };
            (x, labels)
        }
    };
    let mut hashed = bytes;
    if let Some(c) = src.label_column {
        let (features, l, _) = split_label_column(&x, c).map_err(|m| layout(path, m))?;
        (x, labels) = (features, Some(l));
    }
    if let Some(lp) = &src.labels {
        let lformat = FileFormat::from_path(lp)?;
        if lformat == FileFormat::Npy {
            // one label per sample, from the header, before the body is read
            ensure_regular(lp)?;
            let count = npy::peek_header(lp)?.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
            if count != Some(x.nrows()) {
                return Err(layout(lp, format!("the header declares {} labels for {} samples", count.map_or("too many".into(), |c| c.to_string()), x.nrows())));
            }
        }
        let lb = read_regular(lp)?;
        labels = Some(labels_of(lp, lformat, &lb)?);
        hashed.extend_from_slice(b"\0labels\0");
        hashed.extend_from_slice(&lb);
    }
    if x.nrows() < 2 || x.ncols() == 0 {
        return Err(layout(path, format!("{} samples x {} features: a data set needs at least 2 samples and 1 feature", x.nrows(), x.ncols())));
    }
    if let Some(l) = &labels {
        if l.len() != x.nrows() {
            // the labels file, when there is one, is where the count is wrong
            let from = src.labels.as_ref().map(|lp| format!(" in {}", lp.display())).unwrap_or_default();
            return Err(layout(path, format!("{} labels{from} for {} samples", l.len(), x.nrows())));
        }
    }
    let options = serde_json::json!({ "format": format, "variable": src.variable, "labels_variable": src.labels_variable, "label_column": src.label_column });
    hashed.extend_from_slice(options.to_string().as_bytes());
    Ok(Dataset { name: name.to_string(), x, labels, t: None, checksum: sha256_hex(&hashed), note: Some(format!("file {}", path.display())) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn csv_with_a_label_column_or_a_labels_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "my.csv", b"a,b,class\n1.5,2,0\n3,4,1\n5,6.5,1\n");
        let src = FileSource { path: p.clone(), label_column: Some(-1), ..Default::default() };
        let d = load_file("mine", &src).unwrap();
        assert_eq!(d.x, ndarray::array![[1.5, 2.0], [3.0, 4.0], [5.0, 6.5]]);
        assert_eq!(d.labels.as_deref(), Some(&[0, 1, 1][..]));
        let same = load_file("mine", &FileSource { label_column: Some(3), ..src.clone() }).unwrap();
        assert_eq!((same.x, same.checksum == d.checksum), (d.x.clone(), false)); // options are in the checksum
        let y = write(dir.path(), "y.txt", b"7\n8\n9\n");
        let with_file = load_file("mine", &FileSource { path: p.clone(), labels: Some(y.clone()), ..Default::default() }).unwrap();
        assert_eq!((with_file.x.ncols(), with_file.labels.unwrap()), (3, vec![7, 8, 9]));
        // a changed labels file changes the checksum
        let a = load_file("mine", &FileSource { path: p.clone(), labels: Some(y.clone()), ..Default::default() }).unwrap().checksum;
        std::fs::write(&y, b"7\n8\n10\n").unwrap();
        let b = load_file("mine", &FileSource { path: p.clone(), labels: Some(y), ..Default::default() }).unwrap().checksum;
        assert_ne!(a, b);
    }

    #[test]
    fn npy_libsvm_and_mat() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.npy");
        ndarray_npy::write_npy(&p, &ndarray::array![[1.0, 2.0], [3.0, 4.0]]).unwrap();
        assert_eq!(load_file("n", &FileSource { path: p, ..Default::default() }).unwrap().x.dim(), (2, 2));
        let l = write(dir.path(), "d.svm", b"1 1:0.5\n2 2:1.5\n");
        let d = load_file("l", &FileSource { path: l.clone(), ..Default::default() }).unwrap();
        assert_eq!((d.x, d.labels.unwrap()), (ndarray::array![[0.5, 0.0], [0.0, 1.5]], vec![1, 2]));
        let mat = include_bytes!("../tests/fixtures/small_v5.mat");
        let m = write(dir.path(), "s.mat", mat);
        let d = load_file("m", &FileSource { path: m.clone(), variable: Some("dbl".into()), ..Default::default() }).unwrap();
        assert_eq!(d.x, ndarray::array![[1.5, -2.0, 3.25], [4.0, 5.0, 6.0]]);
        let e = load_file("m", &FileSource { path: m, ..Default::default() }).unwrap_err().to_string();
        assert!(e.contains("name the variable"), "{e}");
        // the format can be named when the extension does not tell
        let odd = write(dir.path(), "data.dat", b"1 1:2\n0 1:3\n");
        assert!(load_file("o", &FileSource { path: odd.clone(), ..Default::default() }).unwrap_err().to_string().contains("unsupported data format"));
        assert_eq!(load_file("o", &FileSource { path: odd, format: Some(FileFormat::Libsvm), ..Default::default() }).unwrap().x.nrows(), 2);
    }

    #[test]
    fn bad_sources_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "my.csv", b"1,2\n3,4\n5,6\n");
        let cases: Vec<(FileSource, &str)> = vec![
            (FileSource { path: dir.path().join("nope.csv"), ..Default::default() }, "nope.csv"),
            (FileSource { path: dir.path().to_path_buf(), format: Some(FileFormat::Csv), ..Default::default() }, "not a regular file"),
            (FileSource { path: p.clone(), label_column: Some(3), ..Default::default() }, "outside the 2 columns"),
            (FileSource { path: p.clone(), label_column: Some(0), ..Default::default() }, "outside"),
            (FileSource { path: p.clone(), labels: Some(write(dir.path(), "y.csv", b"1\n2\n")), ..Default::default() }, "y.csv for 3 samples"),
            (FileSource { path: p.clone(), labels: Some(write(dir.path(), "z.csv", b"1\n2.5\n3\n")), ..Default::default() }, "not an integer"),
            (FileSource { path: p.clone(), labels: Some(dir.path().join("y.csv")), label_column: Some(1), ..Default::default() }, "given twice"),
            (FileSource { path: p.clone(), variable: Some("X".into()), ..Default::default() }, ".mat files only"),
            (FileSource { path: write(dir.path(), "one.csv", b"1,2\n"), ..Default::default() }, "at least 2 samples"),
            (FileSource { path: write(dir.path(), "l.svm", b"1 1:1\n2 1:2\n"), label_column: Some(1), ..Default::default() }, "given twice"),
        ];
        for (src, want) in cases {
            let e = load_file("x", &src).unwrap_err().to_string();
            assert!(e.contains(want), "{e} (wanted {want})");
        }
    }
}
