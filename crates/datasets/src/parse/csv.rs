//! Delimited numeric text: comma-, semicolon-, tab- or whitespace-separated columns.

use super::{text_lines, ParseError};
use ndarray::Array2;

/// How the fields of a line are separated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delimiter {
    /// `,` (CSV).
    Comma,
    /// `;` (CSV as written by spreadsheets in locales with a decimal comma).
    Semicolon,
    /// A tab (TSV): empty fields between tabs are errors, spaces inside a field are trimmed.
    Tab,
    /// Runs of spaces or tabs.
    Whitespace,
}

impl Delimiter {
    /// The delimiter of a file from its first content line: a tab, else `;`, else `,`, else
    /// whitespace (the first of these the line contains).
    pub fn detect(line: &str) -> Delimiter {
        if line.contains('\t') {
            Delimiter::Tab
        } else if line.contains(';') {
            Delimiter::Semicolon
        } else if line.contains(',') {
            Delimiter::Comma
        } else {
            Delimiter::Whitespace
        }
    }

    fn split<'a>(self, line: &'a str, out: &mut Vec<&'a str>) {
        out.clear();
        match self {
            Delimiter::Comma => out.extend(line.split(',').map(str::trim)),
            Delimiter::Semicolon => out.extend(line.split(';').map(str::trim)),
            Delimiter::Tab => out.extend(line.split('\t').map(str::trim)),
            Delimiter::Whitespace => out.extend(line.split_whitespace()),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Delimiter::Comma => "','",
            Delimiter::Semicolon => "';'",
            Delimiter::Tab => "tab",
            Delimiter::Whitespace => "whitespace",
        }
    }
}

/// Whether `field` (quotes removed) is a column name: not a number and starting with a letter or
/// `_` (so `2.O`, `-` or an empty field is never a name).
fn is_name(field: &str) -> bool {
    field.parse::<f64>().is_err() && field.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Parses a numeric table into an N x D matrix (one row per non-blank line).
///
/// Rules, in order:
/// - A UTF-8 byte-order mark at the start is ignored; `#` starts a comment; blank lines are skipped.
/// - The delimiter is detected on the first content line ([`Delimiter::detect`]: tab, `;`, `,`,
///   else whitespace) and used for every line. Fields are trimmed; surrounding double quotes are
///   removed; an empty field is an error.
/// - **Header rule**: the first content line is a header exactly when *every* field is a name
///   (not a number, starting with a letter or `_`). A first line that mixes numbers and other
///   text is data, so a typo such as `2.O` is an error naming its line and field instead of a
///   silently dropped row.
/// - Every other line must hold numbers only, as many as the first data row.
///
/// Errors name `source`, the 1-based line and the column: a non-numeric field, a ragged row, no
/// data rows, invalid UTF-8.
pub fn parse(data: &[u8], source: &str) -> Result<Array2<f64>, ParseError> {
    parse_with(data, source, None)
}

/// [`parse`] with a given delimiter (`None`: detected).
pub fn parse_with(data: &[u8], source: &str, delimiter: Option<Delimiter>) -> Result<Array2<f64>, ParseError> {
    let data = data.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(data);
    let mut values: Vec<f64> = Vec::new();
    let mut ncols: Option<(usize, usize)> = None; // (columns, line of first data row)
    let mut nrows = 0usize;
    let mut delim = delimiter;
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
        let d = *delim.get_or_insert_with(|| Delimiter::detect(content));
        d.split(content, &mut fields);
        let is_first = std::mem::replace(&mut first, false);
        if is_first && fields.iter().all(|f| is_name(f.trim_matches('"'))) {
            continue; // header: names only
        }
        let mut parsed = Vec::with_capacity(fields.len());
        for (col, f) in fields.iter().enumerate() {
            let f = f.trim_matches('"');
            match f.parse::<f64>() {
                Ok(v) => parsed.push(v),
                Err(_) => {
                    let what = if f.is_empty() { "empty field".to_string() } else { format!("field `{f}` is not a number") };
                    let hint = if is_first { " (a header line must hold names only)" } else { "" };
                    return Err(ParseError::line(source, ln, format!("{what} (column {}, {} separated){hint}", col + 1, d.name())));
                }
            }
        }
        match ncols {
            None => ncols = Some((parsed.len(), ln)),
            Some((c, l0)) if c != parsed.len() => {
                return Err(ParseError::line(source, ln, format!("ragged row: {} fields, but line {l0} has {c} ({} separated)", parsed.len(), d.name())));
            }
            _ => {}
        }
        values.extend(parsed);
        nrows += 1;
    }
    let Some((c, _)) = ncols else {
        return Err(ParseError::line(source, last_line.max(1), "no numeric rows in file"));
    };
    Array2::from_shape_vec((nrows, c), values).map_err(|e| ParseError::line(source, last_line, format!("internal shape error: {e}")))
}

/// Writes `x` as comma-separated text, one row per line, every value in Rust's shortest
/// round-trip form (so [`parse`] reads back the same bits).
pub fn write(x: &ndarray::ArrayView2<f64>) -> String {
    let mut out = String::with_capacity(x.len() * 12);
    for row in x.rows() {
        let line: Vec<String> = row.iter().map(|v| format!("{v:?}")).collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out
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
        // a header holds names only; sklearn's iris.csv first line mixes counts and names: an error
        let e = parse(b"150,4,setosa,versicolor,virginica\n5.1,3.5,1.4,0.2,0\n", "iris.csv").unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("`setosa`") && e.contains("names only"), "{e}");
        let m = parse(b"sepal_length,\"sepal width\",Species\n5.1,3.5,0\n", "iris.csv").unwrap();
        assert_eq!(m, ndarray::array![[5.1, 3.5, 0.0]]);
    }

    /// The cases the reliability issue found: a BOM or a typo on the first line must not drop a
    /// real row; `;` and tab files parse; the delimiter of the first line holds for the file.
    #[test]
    fn bom_typos_and_delimiters() {
        let m = parse(b"\xEF\xBB\xBF1,2\n3,4\n", "bom.csv").unwrap();
        assert_eq!(m, ndarray::array![[1.0, 2.0], [3.0, 4.0]]);
        let m = parse(b"\xEF\xBB\xBFa,b\n3,4\n", "bom.csv").unwrap();
        assert_eq!(m, ndarray::array![[3.0, 4.0]]);
        let e = parse(b"1,2.O\n3,4\n", "typo.csv").unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("`2.O`") && e.contains("column 2"), "{e}");
        let m = parse(b"x;y\n1;2\n3;4.5\n", "semi.csv").unwrap();
        assert_eq!(m, ndarray::array![[1.0, 2.0], [3.0, 4.5]]);
        let e = parse(b"1;2,5\n", "decimal_comma.csv").unwrap_err().to_string();
        assert!(e.contains("`2,5`") && e.contains("';' separated"), "{e}");
        let m = parse(b"a\tb\n1\t2\n 3 \t 4\n", "t.tsv").unwrap();
        assert_eq!(m, ndarray::array![[1.0, 2.0], [3.0, 4.0]]);
        let e = parse(b"1\t\t2\n", "t.tsv").unwrap_err().to_string();
        assert!(e.contains("empty field") && e.contains("tab separated"), "{e}");
        // a comma line after a tab first line is one field per line: ragged / not a number
        assert!(parse(b"1\t2\n3,4\n", "mixed.tsv").is_err());
        assert_eq!(parse_with(b"1 2\n", "w.txt", Some(Delimiter::Whitespace)).unwrap(), ndarray::array![[1.0, 2.0]]);
    }

    /// `write` then `parse` returns the same bits, also for awkward values.
    #[test]
    fn write_round_trips() {
        let x = ndarray::array![[0.1, -2.5e-300, 1.0 / 3.0], [f64::MAX, f64::MIN_POSITIVE, -0.0]];
        let back = parse(write(&x.view()).as_bytes(), "rt.csv").unwrap();
        assert_eq!(back.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), x.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
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
