//! LIBSVM / SVMlight sparse text format.
//!
//! One sample per line: `label idx:val idx:val ...` with 1-based, strictly increasing feature
//! indices; features that are not mentioned are 0. `#` starts a comment; blank lines are skipped;
//! CRLF line endings and a missing final newline are accepted.

use super::{text_lines, LabeledMatrix, ParseError};
use ndarray::Array2;

/// Parses a LIBSVM file into a dense matrix `x` (N x D) and labels `y`.
///
/// `x[[i, j-1]] = val` for every token `j:val` on the i-th sample line, 0 elsewhere. `D` is
/// `n_features` when given (the declared dimensionality: a file may never mention its last
/// feature, and an index `> n_features` is an error), otherwise the largest index seen.
/// Labels are integers (`1`, `+1`, `-1`); a float label such as `1.0` is accepted when integral.
/// Errors name `source` and the 1-based line: bad label, malformed `idx:val`, index 0,
/// non-increasing indices, non-finite value, index beyond `n_features`, no samples, a dense
/// matrix of more than [`super::MAX_DENSE_VALUES`] values.
pub fn parse(data: &[u8], source: &str, n_features: Option<usize>) -> Result<LabeledMatrix, ParseError> {
    let mut rows: Vec<Vec<(usize, f64)>> = Vec::new();
    let mut y: Vec<i64> = Vec::new();
    let mut max_idx = 0usize;
    let mut last_line = 0usize;
    for item in text_lines(data, source) {
        let (ln, line) = item?;
        last_line = ln;
        let content = match line.find('#') {
            Some(p) => &line[..p],
            None => line,
        };
        let mut toks = content.split_ascii_whitespace();
        let Some(label_tok) = toks.next() else {
            continue;
        };
        let label = parse_label(label_tok).ok_or_else(|| ParseError::line(source, ln, format!("label `{label_tok}` is not an integer")))?;
        let mut row = Vec::new();
        let mut prev = 0usize;
        for tok in toks {
            let Some((is, vs)) = tok.split_once(':') else {
                return Err(ParseError::line(source, ln, format!("token `{tok}` is not of the form index:value")));
            };
            let idx: usize = is.parse().map_err(|_| ParseError::line(source, ln, format!("feature index `{is}` in `{tok}` is not a positive integer")))?;
            if idx == 0 {
                return Err(ParseError::line(source, ln, format!("feature index 0 in `{tok}` (indices are 1-based)")));
            }
            if idx <= prev {
                return Err(ParseError::line(source, ln, format!("feature index {idx} after {prev}: indices must be strictly increasing")));
            }
            if let Some(d) = n_features {
                if idx > d {
                    return Err(ParseError::line(source, ln, format!("feature index {idx} exceeds the declared dimensionality {d}")));
                }
            }
            let val: f64 = vs.parse().map_err(|_| ParseError::line(source, ln, format!("value `{vs}` in `{tok}` is not a number")))?;
            if !val.is_finite() {
                return Err(ParseError::line(source, ln, format!("value `{vs}` in `{tok}` is not finite")));
            }
            prev = idx;
            row.push((idx, val));
        }
        max_idx = max_idx.max(prev);
        rows.push(row);
        y.push(label);
    }
    if rows.is_empty() {
        return Err(ParseError::line(source, last_line.max(1), "no samples in file"));
    }
    let d = n_features.unwrap_or(max_idx);
    if rows.len().checked_mul(d).is_none_or(|v| v > super::MAX_DENSE_VALUES) {
        return Err(ParseError::line(
            source,
            last_line.max(1),
            format!("{} samples x {d} features make a dense matrix over the limit of {} values", rows.len(), super::MAX_DENSE_VALUES),
        ));
    }
    let mut x = Array2::<f64>::zeros((rows.len(), d));
    for (i, row) in rows.iter().enumerate() {
        for &(j, v) in row {
            x[[i, j - 1]] = v;
        }
    }
    Ok(LabeledMatrix { x, y })
}

/// `"3"`, `"+1"`, `"-1"` as integers; `"1.0"` / `"2e0"` when the float is integral and in range.
fn parse_label(tok: &str) -> Option<i64> {
    if let Ok(v) = tok.strip_prefix('+').unwrap_or(tok).parse::<i64>() {
        return Some(v);
    }
    let f: f64 = tok.parse().ok()?;
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e15 {
        Some(f as i64)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::testutil::mirror;

    #[test]
    fn a_huge_feature_index_is_refused_before_allocating() {
        // found by `just fuzz libsvm`: one token 222222222220:4 asked for a 1.8 TB matrix
        let e = parse(b"1 4000000000:1\n", "big.libsvm", None).unwrap_err().to_string();
        assert!(e.contains("big.libsvm") && e.contains("over the limit"), "{e}");
        let e = parse(b"1 1:1\n", "big.libsvm", Some(usize::MAX)).unwrap_err().to_string();
        assert!(e.contains("over the limit"), "{e}");
        let e = parse(include_bytes!("../../../../fuzz/corpus/libsvm/crash_huge_feature_index"), "crash", None).unwrap_err().to_string();
        assert!(e.contains("crash"), "{e}");
        // the limit itself is not in the way of real sizes: MNIST's shape is fine
        const { assert!(60_000 * 784 < crate::parse::MAX_DENSE_VALUES) };
    }

    #[test]
    fn small_file_with_known_values() {
        let txt = b"# header comment\n+1 1:0.5 3:-2\r\n\n-1 2:1e-1 # trailing\n2.0 4:7";
        let m = parse(txt, "t.libsvm", Some(5)).unwrap();
        assert_eq!(m.y, vec![1, -1, 2]);
        assert_eq!(m.x.dim(), (3, 5));
        assert_eq!(m.x.row(0).to_vec(), vec![0.5, 0.0, -2.0, 0.0, 0.0]);
        assert_eq!(m.x.row(1).to_vec(), vec![0.0, 0.1, 0.0, 0.0, 0.0]);
        assert_eq!(m.x[[2, 3]], 7.0);
        // Inferred dimensionality = largest index.
        let m = parse(txt, "t.libsvm", None).unwrap();
        assert_eq!(m.x.ncols(), 4);
        // A label-only line is a sample of zeros.
        let m = parse(b"3\n", "t", Some(2)).unwrap();
        assert_eq!(m.x.dim(), (1, 2));
    }

    #[test]
    fn malformed_inputs_name_file_and_line() {
        let cases: &[(&[u8], &str)] = &[
            (b"1 1:0.5\nx 1:1\n", "line 2"),
            (b"1 1:0.5\n1.5 1:1\n", "line 2"),
            (b"1 1:0.5\n\n1 2:1 1:3\n", "line 3"),
            (b"1 1:0.5 1:0.7\n", "line 1"),
            (b"1 0:0.5\n", "line 1"),
            (b"1 1:abc\n", "line 1"),
            (b"1 1-0.5\n", "line 1"),
            (b"1 1:nan\n", "line 1"),
            (b"1 1:1\n2 7:1\n", "line 2"),
            (b"# nothing\n\n", "no samples"),
        ];
        for (txt, want) in cases {
            let e = parse(txt, "bad.scale", Some(4)).unwrap_err().to_string();
            assert!(e.contains("bad.scale") && e.contains(want), "{e} (wanted {want})");
        }
    }

    #[test]
    fn mirrored_iris_and_usps() {
        if let Some(p) = mirror("libsvm/iris.scale") {
            let m = parse(&std::fs::read(&p).unwrap(), "iris.scale", Some(4)).unwrap();
            assert_eq!(m.x.dim(), (150, 4));
            assert_eq!(m.y[0], 1);
            // iris.scale line 1: 1 1:-0.555556 2:0.25 3:-0.864407 4:-0.916667
            assert_eq!(m.x.row(0).to_vec(), vec![-0.555556, 0.25, -0.864407, -0.916667]);
            for c in 1..=3 {
                assert_eq!(m.y.iter().filter(|&&l| l == c).count(), 50);
            }
        }
        if let Some(p) = mirror("libsvm/usps.t.bz2") {
            let raw = crate::parse::bunzip2(&std::fs::read(&p).unwrap(), "usps.t.bz2").unwrap();
            let m = parse(&raw, "usps.t", Some(256)).unwrap();
            assert_eq!(m.x.dim(), (2007, 256));
            assert!(m.y.iter().all(|&l| (1..=10).contains(&l)));
        }
        if let Some(p) = mirror("libsvm/pendigits") {
            let m = parse(&std::fs::read(&p).unwrap(), "pendigits", Some(16)).unwrap();
            assert_eq!(m.x.ncols(), 16);
            assert_eq!(m.x.nrows(), 7494);
        }
    }
}
