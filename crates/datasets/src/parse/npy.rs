//! NumPy `.npy` arrays (format versions 1.0, 2.0, 3.0), read without `unsafe` and with byte
//! offsets in every error.
//!
//! # Why this reader and not `ndarray-npy`'s (which writes our `.npy` files)
//!
//! `ndarray-npy` 0.9 reads an array only as the element type the caller names, so a data set
//! stored as `<f4`, `<i8`, `|u1` or `|b1` (all of which users hand us) would need a dispatch on a
//! header we parse first anyway. This reader converts every numeric dtype of either byte order to
//! `f64` in one pass, checks the declared shape against the file's length and against the
//! caller's limits *before* reading the body (a 1.6 GB file of the wrong shape costs a 64 KiB
//! read), and names the byte offset of every error. It is fuzzed (the `npy` target; corpus in
//! `fuzz/corpus/npy/`) and property-tested, and the tests read back files `ndarray-npy` writes
//! (f64, f32, i64, i32, Fortran order) as the independent cross-check.
//!
//! Layout: magic `\x93NUMPY`, major and minor version bytes, header length (u16 LE for v1,
//! u32 LE for v2/v3), a Python dict literal `{'descr': '<f8', 'fortran_order': False,
//! 'shape': (N, D), }`, then the raw data.

use super::ParseError;
use ndarray::{Array2, ShapeBuilder};
use std::path::Path;

/// Element type of the data.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    F,
    I,
    U,
    B,
}

struct Npy {
    shape: Vec<usize>,
    fortran: bool,
    /// Values in storage order.
    values: Vec<f64>,
}

fn read_file(path: &Path) -> Result<(Vec<u8>, String), ParseError> {
    read_file_checked(path, &|_, _| Ok(()))
}

/// The bytes of a `.npy` file whose header was read first: its shape checked against the file's
/// length ([`read_header`]) and by `check(rows, cols)` ([`NpyHeader::rows_cols`]; a shape that is
/// not 1-D or 2-D is passed as `(0, 0)` for the parser to refuse), before the body is read, so a
/// 1.6 GB file of the wrong shape costs a 64 KiB read.
fn read_file_checked(path: &Path, check: &dyn Fn(usize, usize) -> Result<(), String>) -> Result<(Vec<u8>, String), ParseError> {
    use std::io::Read;
    let name = path.display().to_string();
    let io = |err| ParseError::Io { file: name.clone(), err };
    let mut f = std::fs::File::open(path).map_err(io)?;
    let len = usize::try_from(f.metadata().map_err(io)?.len()).unwrap_or(usize::MAX);
    let mut data = Vec::new();
    (&mut f).take((12 + MAX_HEADER_BYTES) as u64).read_to_end(&mut data).map_err(io)?;
    let h = read_header(&data, len.max(data.len()), &name)?;
    let (r, c) = h.rows_cols().unwrap_or((0, 0));
    if h.rows_cols().is_some() {
        check(r, c).map_err(|m| ParseError::offset(&name, 8, format!("the header declares {r} x {c}: {m}")))?;
    }
    data.reserve_exact(len.saturating_sub(data.len()));
    f.read_to_end(&mut data).map_err(io)?;
    Ok((data, name))
}

/// The header of the `.npy` file at `path`, read from its first bytes and checked against the
/// file's length ([`read_header`]), without reading the body.
pub fn peek_header(path: &Path) -> Result<NpyHeader, ParseError> {
    use std::io::Read;
    let name = path.display().to_string();
    let io = |err| ParseError::Io { file: name.clone(), err };
    let f = std::fs::File::open(path).map_err(io)?;
    let len = usize::try_from(f.metadata().map_err(io)?.len()).unwrap_or(usize::MAX);
    let mut data = Vec::new();
    f.take((12 + MAX_HEADER_BYTES) as u64).read_to_end(&mut data).map_err(io)?;
    read_header(&data, len.max(data.len()), &name)
}

/// [`read_matrix`], with the header's shape `(rows, cols)` passed to `check` before the body is
/// read (an `Err(message)` becomes the error, naming the file).
pub fn read_matrix_checked(path: &Path, check: &dyn Fn(usize, usize) -> Result<(), String>) -> Result<Array2<f64>, ParseError> {
    let (data, name) = read_file_checked(path, check)?;
    parse_matrix(&data, &name)
}

/// Value of `key` in the header dict, as the raw text up to the next top-level `,` or `}`.
fn dict_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let k1 = format!("'{key}'");
    let k2 = format!("\"{key}\"");
    let p = header.find(&k1).map(|p| p + k1.len()).or_else(|| header.find(&k2).map(|p| p + k2.len()))?;
    let rest = header[p..].trim_start().strip_prefix(':')?.trim_start();
    if rest.starts_with('(') {
        let end = rest.find(')')?;
        Some(&rest[..=end])
    } else {
        let end = rest.find([',', '}']).unwrap_or(rest.len());
        Some(rest[..end].trim())
    }
}

/// What a `.npy` header declares ([`read_header`]): the shape and dtype, and where the data start.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyHeader {
    /// The declared shape (empty for a scalar).
    pub shape: Vec<usize>,
    /// Byte offset of the first data byte (after magic, version, length and the header dict).
    pub data_start: usize,
    fortran: bool,
    kind: Kind,
    size: usize,
    big: bool,
}

impl NpyHeader {
    /// The shape as a matrix: `(r, c)` for a 2-D array, `(n, 1)` for a 1-D one, `None` otherwise.
    pub fn rows_cols(&self) -> Option<(usize, usize)> {
        match self.shape[..] {
            [r, c] => Some((r, c)),
            [r] => Some((r, 1)),
            _ => None,
        }
    }
}

/// Largest header dict read (numpy itself refuses headers over 10,000 bytes by default).
pub const MAX_HEADER_BYTES: usize = 1 << 16;

/// Parses the header of a `.npy` file from its first bytes `prefix` (at least the header, when
/// the file has one) and the file's length `file_len`, and checks that exactly
/// `prod(shape) * itemsize` data bytes follow it: a file's declared size is checked before its
/// body is read.
pub fn read_header(prefix: &[u8], file_len: usize, src: &str) -> Result<NpyHeader, ParseError> {
    let err = |off: usize, m: String| ParseError::offset(src, off, m);
    let data = prefix;
    if data.len() < 10 || &data[..6] != b"\x93NUMPY" {
        return Err(err(0, "not a .npy file (magic \\x93NUMPY missing or file shorter than 10 bytes)".into()));
    }
    let major = data[6];
    let (hlen, hstart) = match major {
        1 => (u16::from_le_bytes([data[8], data[9]]) as usize, 10usize),
        2 | 3 => {
            if data.len() < 12 {
                return Err(err(data.len(), "truncated header length".into()));
            }
            (u32::from_le_bytes([data[8], data[9], data[10], data[11]]) as usize, 12)
        }
        v => return Err(err(6, format!("unsupported .npy format version {v}"))),
    };
    let dstart = hstart
        .checked_add(hlen)
        .filter(|&e| e <= file_len)
        .ok_or_else(|| err(hstart, format!("header of {hlen} bytes runs past the end of the file ({file_len} bytes)")))?;
    if dstart > data.len() {
        return Err(err(hstart, format!("header of {hlen} bytes is longer than the {MAX_HEADER_BYTES} bytes read")));
    }
    let header = std::str::from_utf8(&data[hstart..dstart]).map_err(|e| err(hstart, format!("header is not text: {e}")))?;
    let descr = dict_value(header, "descr").ok_or_else(|| err(hstart, format!("header has no 'descr': {header}")))?.trim_matches(['\'', '"']);
    let fortran = match dict_value(header, "fortran_order") {
        Some("True") => true,
        Some("False") => false,
        other => return Err(err(hstart, format!("header has a bad 'fortran_order' ({other:?})"))),
    };
    let shape_txt = dict_value(header, "shape").ok_or_else(|| err(hstart, format!("header has no 'shape': {header}")))?;
    let shape: Vec<usize> = shape_txt
        .trim_matches(['(', ')'])
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| err(hstart, format!("bad 'shape' {shape_txt}")))?;
    let db = descr.as_bytes();
    if db.len() < 3 {
        return Err(err(hstart, format!("unsupported dtype '{descr}'")));
    }
    let big = match db[0] {
        b'<' | b'|' | b'=' => false,
        b'>' => true,
        _ => return Err(err(hstart, format!("unsupported dtype '{descr}'"))),
    };
    // `get`, not indexing: byte 1 may begin a multi-byte character (found by `just fuzz npy`)
    let size: usize = descr.get(2..).and_then(|s| s.parse().ok()).ok_or_else(|| err(hstart, format!("unsupported dtype '{descr}'")))?;
    let kind = match (db[1], size) {
        (b'f', 4 | 8) => Kind::F,
        (b'i', 1 | 2 | 4 | 8) => Kind::I,
        (b'u', 1 | 2 | 4 | 8) => Kind::U,
        (b'b', 1) => Kind::B,
        _ => return Err(err(hstart, format!("unsupported dtype '{descr}' (f4, f8, i1..i8, u1..u8, b1 are supported)"))),
    };
    let count = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let have = file_len - dstart;
    if count.and_then(|c| c.checked_mul(size)) != Some(have) {
        return Err(err(
            dstart,
            format!(
                "shape {shape:?} of '{descr}' needs {} data bytes but {have} follow the header",
                count.and_then(|c| c.checked_mul(size)).map_or("too many".into(), |w| w.to_string())
            ),
        ));
    }
    Ok(NpyHeader { shape, data_start: dstart, fortran, kind, size, big })
}

fn parse_npy(data: &[u8], src: &str) -> Result<Npy, ParseError> {
    let h = read_header(data, data.len(), src)?;
    let (dstart, size, big, kind) = (h.data_start, h.size, h.big, h.kind);
    let body = &data[dstart..];
    let values: Vec<f64> = body
        .chunks_exact(size)
        .map(|c| {
            let mut a = [0u8; 8];
            if big {
                // Reverse into little-endian order.
                for (i, b) in c.iter().rev().enumerate() {
                    a[i] = *b;
                }
            } else {
                a[..size].copy_from_slice(c);
            }
            let u = u64::from_le_bytes(a);
            match (kind, size) {
                (Kind::F, 4) => f32::from_bits(u as u32) as f64,
                (Kind::F, _) => f64::from_bits(u),
                (Kind::I, 1) => u as u8 as i8 as f64,
                (Kind::I, 2) => u as u16 as i16 as f64,
                (Kind::I, 4) => u as u32 as i32 as f64,
                (Kind::I, _) => u as i64 as f64,
                (Kind::U, _) | (Kind::B, _) => u as f64,
            }
        })
        .collect();
    Ok(Npy { shape: h.shape, fortran: h.fortran, values })
}

/// Reads a 2-D `.npy` array as f64 (dtypes f8, f4, i1..i8, u1..u8, b1 converted with `as f64`;
/// C or Fortran order). A 1-D array of length N is returned as N x 1. Errors name the file and
/// the byte offset.
pub fn read_matrix(path: &Path) -> Result<Array2<f64>, ParseError> {
    let (data, name) = read_file(path)?;
    parse_matrix(&data, &name)
}

/// [`read_matrix`] on bytes already in memory (`name` names them in errors).
pub fn parse_matrix(data: &[u8], name: &str) -> Result<Array2<f64>, ParseError> {
    let a = parse_npy(data, name)?;
    let (r, c) = match a.shape[..] {
        [r, c] => (r, c),
        [r] => (r, 1),
        _ => return Err(ParseError::offset(name, 8, format!("array has shape {:?}, expected 2-D", a.shape))),
    };
    let res = if a.fortran {
        Array2::from_shape_vec((r, c).f(), a.values).map(|m| m.as_standard_layout().to_owned())
    } else {
        Array2::from_shape_vec((r, c), a.values)
    };
    res.map_err(|e| ParseError::offset(name, 8, format!("shape error {e}")))
}

/// Reads a label vector from a `.npy` file ([`parse_labels`] on its bytes).
pub fn read_labels(path: &Path) -> Result<Vec<i64>, ParseError> {
    let (data, name) = read_file(path)?;
    parse_labels(&data, &name)
}

/// A label vector from `.npy` bytes: shape (N,), (N, 1) or (1, N); integer or boolean dtypes, or
/// floats that are all integral. Errors name `name` and the byte offset.
pub fn parse_labels(data: &[u8], name: &str) -> Result<Vec<i64>, ParseError> {
    let a = parse_npy(data, name)?;
    let ok_shape = match a.shape[..] {
        [_] => true,
        [r, c] => r == 1 || c == 1,
        _ => false,
    };
    if !ok_shape {
        return Err(ParseError::offset(name, 8, format!("labels have shape {:?}, expected (N,), (N, 1) or (1, N)", a.shape)));
    }
    a.values
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            if v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e15 {
                Ok(v as i64)
            } else {
                Err(ParseError::offset(name, 0, format!("label #{i} = {v} is not an integer")))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array1};

    #[test]
    fn dtype_with_a_multibyte_character_is_an_error() {
        // found by `just fuzz npy`: slicing the dtype at byte 2 split the character 'Þ'
        let crash = include_bytes!("../../../../fuzz/corpus/npy/crash_dtype_char_boundary");
        let e = parse_matrix(crash, "crash.npy").unwrap_err().to_string();
        assert!(e.contains("crash.npy") && e.contains("dtype"), "{e}");
        let header = "{'descr': '<\u{de}8', 'fortran_order': False, 'shape': (1,), }";
        let mut f = b"\x93NUMPY\x01\x00".to_vec();
        f.extend((header.len() as u16).to_le_bytes());
        f.extend(header.as_bytes());
        f.extend([0u8; 8]);
        let e = parse_matrix(&f, "m.npy").unwrap_err().to_string();
        assert!(e.contains("unsupported dtype"), "{e}");
    }

    #[test]
    fn f64_f32_int_roundtrip() {
        let dir = tempfile::tempdir().unwrap();
        let x = array![[1.0f64, 2.0, 3.0], [4.0, 5.0, -6.5]];
        let p = dir.path().join("x.npy");
        ndarray_npy::write_npy(&p, &x).unwrap();
        assert_eq!(read_matrix(&p).unwrap(), x);
        let p32 = dir.path().join("x32.npy");
        ndarray_npy::write_npy(&p32, &x.mapv(|v| v as f32)).unwrap();
        assert_eq!(read_matrix(&p32).unwrap(), x);
        let pi = dir.path().join("xi.npy");
        ndarray_npy::write_npy(&pi, &array![[1i64, -2], [3, 4]]).unwrap();
        assert_eq!(read_matrix(&pi).unwrap(), array![[1.0, -2.0], [3.0, 4.0]]);
        let pi32 = dir.path().join("xi32.npy");
        ndarray_npy::write_npy(&pi32, &array![[7i32], [8]]).unwrap();
        assert_eq!(read_matrix(&pi32).unwrap(), array![[7.0], [8.0]]);
        // Fortran order.
        let pf = dir.path().join("xf.npy");
        ndarray_npy::write_npy(&pf, &x.t()).unwrap();
        assert_eq!(read_matrix(&pf).unwrap(), x.t());
        // Labels.
        let pl = dir.path().join("y.npy");
        ndarray_npy::write_npy(&pl, &Array1::from(vec![3i64, 1, 2])).unwrap();
        assert_eq!(read_labels(&pl).unwrap(), vec![3, 1, 2]);
        let plf = dir.path().join("yf.npy");
        ndarray_npy::write_npy(&plf, &array![[1.0f64], [2.0]]).unwrap();
        assert_eq!(read_labels(&plf).unwrap(), vec![1, 2]);
        let e = read_labels(&p).unwrap_err().to_string();
        assert!(e.contains("x.npy"), "{e}");
        let pb = dir.path().join("yb.npy");
        ndarray_npy::write_npy(&pb, &array![0.5f64, 1.0]).unwrap();
        assert!(read_labels(&pb).unwrap_err().to_string().contains("not an integer"));
    }

    #[test]
    fn truncated_and_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.npy");
        ndarray_npy::write_npy(&p, &array![[1.0f64, 2.0], [3.0, 4.0]]).unwrap();
        let full = std::fs::read(&p).unwrap();
        let q = dir.path().join("cut.npy");
        for cut in 0..full.len() {
            std::fs::write(&q, &full[..cut]).unwrap();
            let e = read_matrix(&q).unwrap_err().to_string();
            assert!(e.contains("cut.npy") && e.contains("byte offset"), "{e}");
        }
        for i in 0..full.len() {
            let mut g = full.clone();
            g[i] ^= 0xa5;
            std::fs::write(&q, &g).unwrap();
            let _ = read_matrix(&q);
            let _ = read_labels(&q);
        }
        let e = read_matrix(&dir.path().join("missing.npy")).unwrap_err().to_string();
        assert!(e.contains("missing.npy"), "{e}");
    }
}
