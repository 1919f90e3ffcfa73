//! Parsers for the on-disk formats of the benchmark sets.
//!
//! - [`libsvm`]: sparse text `label idx:val ...` (1-based indices, zeros omitted).
//! - [`mat`]: MATLAB level-5 `.mat` files (own reader; also compressed `miCOMPRESSED` elements).
//! - [`idx`]: IDX tensors (MNIST / Fashion-MNIST), unsigned byte.
//! - [`npy`]: NumPy `.npy` arrays (f64, f32, integers) converted to f64 / i64.
//! - [`csv`]: comma- or whitespace-separated numbers with an optional header line.
//! - [`gunzip`] / [`bunzip2`]: whole-buffer decompression.
//!
//! Every parser works on bytes already in memory, takes a `source` name used in messages, and
//! reports malformed input as a [`ParseError`] naming the source and the line (text formats) or
//! the byte offset (binary formats). No parser panics on malformed bytes.

pub mod csv;
pub mod idx;
pub mod libsvm;
pub mod mat;
pub mod npy;

use ndarray::Array2;
use std::io::Read;

/// Largest dense matrix (in values) that a sparse format ([`libsvm`]) is expanded to: 2^27 values
/// (1 GiB of f64), about 3 times the largest benchmark set (MNIST, 60000 x 784). One line naming
/// feature 4000000000 would otherwise ask for a 32 GB matrix (found by `just fuzz libsvm`).
pub const MAX_DENSE_VALUES: usize = 1 << 27;

/// A parse failure. Every variant names the source (usually the file name); text formats give
/// the 1-based line, binary formats the byte offset where the problem was detected.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// Malformed text at a 1-based line of a text file.
    #[error("{file}: line {line}: {msg}")]
    Line {
        /// Source (file) name.
        file: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// Malformed bytes at a byte offset of a binary file (offset into the decompressed stream
    /// where the message says so).
    #[error("{file}: byte offset {offset}: {msg}")]
    Offset {
        /// Source (file) name.
        file: String,
        /// Byte offset where the problem was detected.
        offset: u64,
        /// What is wrong.
        msg: String,
    },
    /// A named variable of a container file (e.g. `.mat`) is missing or unusable.
    #[error("{file}: variable `{var}`: {msg}")]
    Variable {
        /// Source (file) name.
        file: String,
        /// Variable name.
        var: String,
        /// What is wrong (including the byte offset of the variable's element when known).
        msg: String,
    },
    /// The file could not be read at all.
    #[error("{file}: cannot read: {err}")]
    Io {
        /// Source (file) name.
        file: String,
        /// Underlying I/O error (part of the message, so not also returned by `source()`: printing
        /// the error's chain would repeat it).
        err: std::io::Error,
    },
}

impl ParseError {
    pub(crate) fn line(file: &str, line: usize, msg: impl Into<String>) -> Self {
        ParseError::Line { file: file.to_string(), line, msg: msg.into() }
    }
    pub(crate) fn offset(file: &str, offset: usize, msg: impl Into<String>) -> Self {
        ParseError::Offset { file: file.to_string(), offset: offset as u64, msg: msg.into() }
    }
}

/// Samples in rows with one integer label per row (the result of [`libsvm::parse`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LabeledMatrix {
    /// Features, N x D, samples in rows (omitted sparse entries are 0).
    pub x: Array2<f64>,
    /// Label of every row (length N).
    pub y: Vec<i64>,
}

/// Reader that counts the bytes pulled from the compressed input, so that a decompression error
/// can be reported at (approximately, to within the decoder's buffer) the offending offset.
struct Counting<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Read for Counting<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Decompresses a complete gzip stream (also concatenated members, as `gzip -d` does).
///
/// Errors (no gzip magic `1f 8b`, corrupt or truncated stream) name `source` and the compressed
/// byte offset reached when the error was detected.
pub fn gunzip(data: &[u8], source: &str) -> Result<Vec<u8>, ParseError> {
    gunzip_at_most(data, source, MAX_INFLATED_BYTES)
}

/// Most bytes [`gunzip`] and [`bunzip2`] inflate a stream to (4 GiB): a compression bomb is
/// stopped there instead of filling memory.
pub const MAX_INFLATED_BYTES: u64 = 4 << 30;

/// [`gunzip`], stopping with an error once the output passes `max` bytes (the size the caller
/// knows the data can have), so a bomb costs `max`, not what it inflates to.
pub fn gunzip_at_most(data: &[u8], source: &str, max: u64) -> Result<Vec<u8>, ParseError> {
    if data.len() < 2 || data[0] != 0x1f || data[1] != 0x8b {
        return Err(ParseError::offset(source, 0, "not a gzip stream (magic bytes 1f 8b missing)"));
    }
    let dec = flate2::read::MultiGzDecoder::new(Counting { data, pos: 0 });
    read_all(dec, |d| d.get_ref().pos, source, "gzip", max)
}

/// Reads a decoder to the end, at most `max` bytes; an error names `source` and the compressed
/// offset `pos(decoder)`.
fn read_all<D: Read>(dec: D, pos: impl Fn(&D) -> usize, source: &str, format: &str, max: u64) -> Result<Vec<u8>, ParseError> {
    let mut out = Vec::new();
    let mut capped = dec.take(max.saturating_add(1));
    match capped.read_to_end(&mut out) {
        Ok(_) if out.len() as u64 > max => {
            Err(ParseError::offset(source, pos(capped.get_ref()), format!("the {format} stream inflates past {max} bytes, more than the data can need")))
        }
        Ok(_) => Ok(out),
        Err(e) => Err(ParseError::offset(source, pos(capped.get_ref()), format!("corrupt or truncated {format} stream: {e}"))),
    }
}

/// Decompresses a complete bzip2 stream (also concatenated streams).
///
/// Errors (no `BZh` magic, corrupt or truncated stream) name `source` and the compressed byte
/// offset reached when the error was detected.
pub fn bunzip2(data: &[u8], source: &str) -> Result<Vec<u8>, ParseError> {
    if data.len() < 4 || &data[..3] != b"BZh" || !(b'1'..=b'9').contains(&data[3]) {
        return Err(ParseError::offset(source, 0, "not a bzip2 stream (magic bytes `BZh1`..`BZh9` missing)"));
    }
    let dec = bzip2::read::MultiBzDecoder::new(Counting { data, pos: 0 });
    read_all(dec, |d| d.get_ref().pos, source, "bzip2", MAX_INFLATED_BYTES)
}

/// Splits text into lines on `\n`, dropping a trailing `\r` (CRLF files), and yields
/// `(1-based line number, line)`; a missing final newline is fine. Invalid UTF-8 is an error
/// naming the line.
pub(crate) fn text_lines<'a>(data: &'a [u8], source: &'a str) -> impl Iterator<Item = Result<(usize, &'a str), ParseError>> + 'a {
    // `split` yields one empty piece after a final newline; it is a harmless blank line.
    let mut parts = data.split(|&b| b == b'\n').enumerate();
    std::iter::from_fn(move || {
        let (i, raw) = parts.next()?;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        Some(match std::str::from_utf8(raw) {
            Ok(s) => Ok((i + 1, s)),
            Err(e) => Err(ParseError::line(source, i + 1, format!("invalid UTF-8 ({e})"))),
        })
    })
}

#[cfg(test)]
pub(crate) mod testutil {
    use std::path::PathBuf;

    /// The file `rel` of the benchmark mirror, or `None` (with a message) when it is absent.
    /// Looks in `$STRUCTDR_MIRROR` when it is a directory (relative paths are taken from the
    /// workspace root, as the justfile sets them), then in `<workspace>/../shared/datasets`.
    pub fn mirror(rel: &str) -> Option<PathBuf> {
        let ws = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut roots = Vec::new();
        if let Some(m) = std::env::var_os("STRUCTDR_MIRROR") {
            let m = PathBuf::from(m);
            if !m.as_os_str().is_empty() && !m.to_string_lossy().contains("://") {
                roots.push(if m.is_absolute() { m } else { ws.join(m) });
            }
        }
        roots.push(ws.join("../shared/datasets"));
        for r in &roots {
            let p = r.join(rel);
            if p.is_file() {
                return Some(p);
            }
        }
        eprintln!("skipping: mirrored file {rel} not found under {roots:?}");
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn gzip_roundtrip_and_errors() {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(b"hello hello hello world").unwrap();
        let gz = enc.finish().unwrap();
        assert_eq!(gunzip(&gz, "a.gz").unwrap(), b"hello hello hello world");
        let e = gunzip(b"plain", "a.gz").unwrap_err().to_string();
        assert!(e.contains("a.gz") && e.contains("byte offset 0"), "{e}");
        let e = gunzip(&gz[..gz.len() - 6], "t.gz").unwrap_err().to_string();
        assert!(e.contains("t.gz") && e.contains("byte offset"), "{e}");
        let mut bad = gz.clone();
        for b in bad.iter_mut().skip(12).take(8) {
            *b ^= 0x5a;
        }
        assert!(gunzip(&bad, "c.gz").is_err());
        // issue 29: a stream is inflated no further than the caller's bound (a bomb stops there)
        assert_eq!(gunzip_at_most(&gz, "a.gz", 23).unwrap().len(), 23);
        let e = gunzip_at_most(&gz, "a.gz", 22).unwrap_err().to_string();
        assert!(e.contains("a.gz") && e.contains("inflates past 22 bytes"), "{e}");
    }

    #[test]
    fn bzip2_roundtrip_and_errors() {
        let mut enc = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
        enc.write_all(b"1 1:0.5\n").unwrap();
        let bz = enc.finish().unwrap();
        assert_eq!(bunzip2(&bz, "a.bz2").unwrap(), b"1 1:0.5\n");
        let e = bunzip2(b"BZx", "a.bz2").unwrap_err().to_string();
        assert!(e.contains("a.bz2") && e.contains("byte offset 0"), "{e}");
        let e = bunzip2(&bz[..bz.len() - 5], "t.bz2").unwrap_err().to_string();
        assert!(e.contains("t.bz2") && e.contains("byte offset"), "{e}");
        let mut bad = bz.clone();
        for b in bad.iter_mut().skip(10).take(10) {
            *b ^= 0xff;
        }
        assert!(bunzip2(&bad, "c.bz2").is_err());
    }

    #[test]
    fn lines_handle_crlf_and_missing_newline() {
        let v: Vec<_> = text_lines(b"a\r\nb\nc", "f").map(|r| r.unwrap()).collect();
        assert_eq!(v, vec![(1, "a"), (2, "b"), (3, "c")]);
        let e = text_lines(b"ok\n\xff\n", "f").nth(1).unwrap().unwrap_err().to_string();
        assert!(e.contains("f: line 2"), "{e}");
    }
}
