//! Delimited numeric text: comma-separated (CSV) or whitespace-separated columns.

use super::{text_lines, ParseError};
use ndarray::Array2;

/// Parses a numeric table into an N x D matrix (one row per non-blank line).
///
/// A line containing a comma is split on commas (fields trimmed; an empty field is an error),
/// otherwise on whitespace. Surrounding double quotes of a field are removed. `#` starts a
/// comment. The first non-blank line is taken as a header and skipped when any of its fields is
/// not a number. Errors name `source` and the 1-based line: a non-numeric field, a row whose
/// field count differs from the first data row (ragged), or no data rows.
pub fn parse(data: &[u8], source: &str) -> Result<Array2<f64>, ParseError> {
    let mut values: Vec<f64> = Vec::new();
    let mut ncols: Option<(usize, usize)> = None; // (columns, line of first data row)
    let mut nrows = 0usize;
    let mut first = true;
    let mut last_line = 0;
    let mut fields: Vec<&str> = Vec::new();
    for item in text_lines(data, source) {
        let (ln, line) = item?;
        last_line = ln;
        let content = line.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        fields.clear();
        if content.contains(',') {
            fields.extend(content.split(',').map(|f| f.trim()));
        } else {
            fields.extend(content.split_whitespace());
        }
        let parsed: Vec<Option<f64>> = fields.iter().map(|f| f.trim_matches('"').parse::<f64>().ok()).collect();
        let is_first = std::mem::replace(&mut first, false);
        if let Some(bad) = parsed.iter().position(|p| p.is_none()) {
            if is_first {
                continue; // header line
            }
            let f = fields[bad];
            let what = if f.is_empty() { "empty field".to_string() } else { format!("field `{f}` is not a number") };
            return Err(ParseError::line(source, ln, format!("{what} (column {})", bad + 1)));
        }
        match ncols {
            None => ncols = Some((parsed.len(), ln)),
            Some((c, l0)) if c != parsed.len() => {
                return Err(ParseError::line(source, ln, format!("ragged row: {} fields, but line {l0} has {c}", parsed.len())));
            }
            _ => {}
        }
        values.extend(parsed.into_iter().flatten());
        nrows += 1;
    }
    let Some((c, _)) = ncols else {
        return Err(ParseError::line(source, last_line.max(1), "no numeric rows in file"));
    };
    Array2::from_shape_vec((nrows, c), values).map_err(|e| ParseError::line(source, last_line, format!("internal shape error: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comma_whitespace_and_header() {
        let m = parse(b"a,b,\"c\"\n1,2,3\r\n4.5, -6 ,7e1\n", "t.csv").unwrap();
        assert_eq!(m, ndarray::array![[1.0, 2.0, 3.0], [4.5, -6.0, 70.0]]);
        let m = parse(b"# comment\n1 2\n\n3\t4", "t.txt").unwrap();
        assert_eq!(m, ndarray::array![[1.0, 2.0], [3.0, 4.0]]);
        // sklearn's iris.csv header: numbers and names mixed -> header.
        let m = parse(b"150,4,setosa,versicolor,virginica\n5.1,3.5,1.4,0.2,0\n", "iris.csv").unwrap();
        assert_eq!(m.row(0).to_vec(), vec![5.1, 3.5, 1.4, 0.2, 0.0]);
    }

    #[test]
    fn malformed() {
        let cases: &[(&[u8], &str)] = &[
            (b"1,2\n3,4\n5\n", "line 3"),
            (b"1,2\n3,x\n", "line 2"),
            (b"1,2\n3,,\n", "line 2"),
            (b"x,y\n", "no numeric rows"),
            (b"", "no numeric rows"),
            (b"1 2\n3 4 5\n", "line 2"),
        ];
        for (b, want) in cases {
            let e = parse(b, "bad.csv").unwrap_err().to_string();
            assert!(e.contains("bad.csv") && e.contains(want), "{e} (wanted {want})");
        }
    }
}
