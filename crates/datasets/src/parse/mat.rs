//! MATLAB level-5 MAT-file reader (own implementation; no `unsafe`, no panics on bad bytes).
//!
//! Layout (MathWorks "MAT-File Format", level 5): a 128-byte header (116 bytes text, 8 bytes
//! subsystem offset, version `0x0100`, endian indicator `IM` little / `MI` big), then tagged data
//! elements. A tag is `(type: u32, nbytes: u32)` followed by `nbytes` of data padded to 8 bytes,
//! or the "small element" form `(nbytes: u16 << 16 | type: u16)` with up to 4 bytes of data in
//! the same 8-byte word. Variables are `miMATRIX` elements (array flags, dimensions, name, real
//! part, optional imaginary part), possibly wrapped in a zlib `miCOMPRESSED` element (no padding).
//!
//! Numeric arrays of every class (double, single, int8..uint64, logical) are decoded to f64;
//! struct, cell, char, sparse, object and complex arrays are listed by [`MatFile::names`] but
//! [`MatFile::matrix`] refuses them with an error naming the variable. (The `mat5` crate was not
//! used because it rejects a whole file containing a struct, e.g. `par` in
//! `usps_roweis_11000.mat`, and its errors carry no byte offsets.)

use super::ParseError;
use ndarray::{Array2, ShapeBuilder};
use std::io::Read;

const MI_INT8: u32 = 1;
const MI_UINT8: u32 = 2;
const MI_INT16: u32 = 3;
const MI_UINT16: u32 = 4;
const MI_INT32: u32 = 5;
const MI_UINT32: u32 = 6;
const MI_SINGLE: u32 = 7;
const MI_DOUBLE: u32 = 9;
const MI_INT64: u32 = 12;
const MI_UINT64: u32 = 13;
const MI_MATRIX: u32 = 14;
const MI_COMPRESSED: u32 = 15;
const MI_UTF8: u32 = 16;

const FLAG_COMPLEX: u32 = 0x0800;
const FLAG_LOGICAL: u32 = 0x0200;

/// Largest inflated size of a compressed element accepted (a guard against zip bombs): one that
/// inflates past it is refused, never read as its first `MAX_INFLATED` bytes.
const MAX_INFLATED: u64 = 8 << 30;

/// One variable of the file.
#[derive(Debug, Clone)]
struct Variable {
    name: String,
    /// Byte offset of the variable's top-level element in the file.
    offset: usize,
    /// MATLAB class name (`double`, `uint8`, `struct`, ...), `logical` for logical arrays.
    class: &'static str,
    dims: Vec<usize>,
    /// Decoded values in column-major order, for real numeric arrays; otherwise why not.
    values: Result<Vec<f64>, String>,
}

/// A parsed level-5 MAT-file: its variables in file order.
#[derive(Debug, Clone)]
pub struct MatFile {
    source: String,
    /// Header text (e.g. `MATLAB 5.0 MAT-file, Platform: PCWIN64, Created on: ...`).
    pub header_text: String,
    vars: Vec<Variable>,
}

#[derive(Clone, Copy)]
struct Endian {
    big: bool,
}

impl Endian {
    fn u32(self, b: &[u8]) -> u32 {
        let a = [b[0], b[1], b[2], b[3]];
        if self.big {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        }
    }
}

/// Cursor over one buffer; `base` is added to positions in messages (file offset of `buf[0]`),
/// `ctx` prefixes them (e.g. "inside compressed element at byte offset 128").
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    e: Endian,
    src: &'a str,
    ctx: &'a str,
    base: usize,
}

impl<'a> Cursor<'a> {
    fn err(&self, at: usize, msg: impl std::fmt::Display) -> ParseError {
        ParseError::offset(self.src, self.base + at, format!("{}{msg}", self.ctx))
    }

    /// Reads one element; returns `(type, data, start offset within buf)` and moves past its
    /// padding (8-byte alignment relative to the buffer start; none after `miCOMPRESSED`).
    fn element(&mut self) -> Result<(u32, &'a [u8], usize), ParseError> {
        let start = self.pos;
        if self.buf.len() - self.pos < 8 {
            return Err(self.err(start, format!("truncated element tag ({} bytes left, 8 needed)", self.buf.len() - self.pos)));
        }
        let first = self.e.u32(&self.buf[self.pos..]);
        if first >> 16 != 0 {
            // Small data element: nbytes in the upper 16 bits, type in the lower 16.
            let nbytes = (first >> 16) as usize;
            let ty = first & 0xffff;
            if nbytes > 4 {
                return Err(self.err(start, format!("small data element claims {nbytes} bytes (at most 4)")));
            }
            let data = &self.buf[self.pos + 4..self.pos + 4 + nbytes];
            self.pos += 8;
            return Ok((ty, data, start));
        }
        let ty = first;
        let nbytes = self.e.u32(&self.buf[self.pos + 4..]) as usize;
        let avail = self.buf.len() - self.pos - 8;
        if nbytes > avail {
            return Err(self.err(start, format!("element of type {ty} claims {nbytes} bytes but only {avail} remain (truncated file?)")));
        }
        let data = &self.buf[self.pos + 8..self.pos + 8 + nbytes];
        self.pos += 8 + nbytes;
        if ty != MI_COMPRESSED {
            let pad = (8 - nbytes % 8) % 8;
            // The last element of a file may omit its padding.
            self.pos = (self.pos + pad).min(self.buf.len());
        }
        Ok((ty, data, start))
    }
}

fn class_name(class: u32, logical: bool) -> &'static str {
    if logical {
        return "logical";
    }
    match class {
        1 => "cell",
        2 => "struct",
        3 => "object",
        4 => "char",
        5 => "sparse",
        6 => "double",
        7 => "single",
        8 => "int8",
        9 => "uint8",
        10 => "int16",
        11 => "uint16",
        12 => "int32",
        13 => "uint32",
        14 => "int64",
        15 => "uint64",
        16 => "function handle",
        17 => "opaque",
        _ => "unknown class",
    }
}

/// Decodes a numeric data element of storage type `ty` to f64 (`None` for a non-numeric type or a
/// length that is not a multiple of the element size).
fn decode_numeric(ty: u32, data: &[u8], e: Endian) -> Option<Vec<f64>> {
    #[allow(clippy::manual_is_multiple_of)]
    fn conv<const N: usize>(data: &[u8], f: impl Fn([u8; N]) -> f64) -> Option<Vec<f64>> {
        if data.len() % N != 0 {
            // (`is_multiple_of` needs Rust 1.87; the workspace MSRV is 1.85.)
            return None;
        }
        Some(
            data.chunks_exact(N)
                .map(|c| {
                    let mut a = [0u8; N];
                    a.copy_from_slice(c);
                    f(a)
                })
                .collect(),
        )
    }
    let b = e.big;
    macro_rules! num {
        ($t:ty, $n:literal) => {
            conv::<$n>(data, |a| if b { <$t>::from_be_bytes(a) as f64 } else { <$t>::from_le_bytes(a) as f64 })
        };
    }
    match ty {
        MI_INT8 => Some(data.iter().map(|&v| v as i8 as f64).collect()),
        MI_UINT8 | MI_UTF8 => Some(data.iter().map(|&v| v as f64).collect()),
        MI_INT16 => num!(i16, 2),
        MI_UINT16 => num!(u16, 2),
        MI_INT32 => num!(i32, 4),
        MI_UINT32 => num!(u32, 4),
        MI_SINGLE => num!(f32, 4),
        MI_DOUBLE => num!(f64, 8),
        MI_INT64 => num!(i64, 8),
        MI_UINT64 => num!(u64, 8),
        _ => None,
    }
}

/// Parses the payload of an `miMATRIX` element. `cur` spans the payload; `offset` is the file
/// offset of the top-level element (for messages).
fn parse_matrix(mut cur: Cursor<'_>, offset: usize) -> Result<Variable, ParseError> {
    let (ty, flags, at) = cur.element()?;
    if ty != MI_UINT32 || flags.len() < 8 {
        return Err(cur.err(at, format!("array flags sub-element has type {ty} and {} bytes (expected miUINT32, 8 bytes)", flags.len())));
    }
    let fw = cur.e.u32(flags);
    let class = fw & 0xff;
    let logical = fw & FLAG_LOGICAL != 0;
    let complex = fw & FLAG_COMPLEX != 0;

    let (ty, dims_raw, at) = cur.element()?;
    let dims_f = match ty {
        MI_INT32 | MI_UINT32 | MI_INT16 | MI_UINT16 | MI_INT8 | MI_UINT8 => decode_numeric(ty, dims_raw, cur.e),
        _ => None,
    }
    .ok_or_else(|| cur.err(at, format!("dimensions sub-element has type {ty} (expected miINT32)")))?;
    if dims_f.len() < 2 || dims_f.iter().any(|&d| d < 0.0) {
        return Err(cur.err(at, format!("invalid dimensions {dims_f:?}")));
    }
    let dims: Vec<usize> = dims_f.iter().map(|&d| d as usize).collect();

    let (ty, name_raw, at) = cur.element()?;
    if ty != MI_INT8 && ty != MI_UINT8 && ty != MI_UTF8 {
        return Err(cur.err(at, format!("array name sub-element has type {ty} (expected miINT8)")));
    }
    let name = String::from_utf8_lossy(name_raw).trim_end_matches('\0').to_string();
    let cname = class_name(class, logical);

    let values = if !(6..=15).contains(&class) {
        Err(format!("is a {cname} array, not a numeric matrix"))
    } else if complex {
        Err(format!("is a complex {cname} array; only real arrays are supported"))
    } else {
        let count = dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
        let (ty, data, at) = cur.element()?;
        let vals = decode_numeric(ty, data, cur.e)
            .ok_or_else(|| cur.err(at, format!("variable `{name}`: real part has non-numeric storage type {ty} or a ragged length {}", data.len())))?;
        if Some(vals.len()) != count {
            return Err(cur.err(at, format!("variable `{name}`: dimensions {dims:?} need {count:?} values but the data holds {}", vals.len())));
        }
        Ok(vals)
    };
    Ok(Variable { name, offset, class: cname, dims, values })
}

impl MatFile {
    /// Parses a level-5 MAT-file held in memory (`source` names it in errors).
    ///
    /// Fails on a short or non-v5 header (v4 and v7.3/HDF5 files included), truncated elements,
    /// undecodable compressed data and inconsistent numeric arrays, each with the byte offset.
    /// Elements that are not variables are skipped; non-numeric variables are kept by name.
    pub fn parse(data: &[u8], source: &str) -> Result<MatFile, ParseError> {
        if data.len() < 128 {
            return Err(ParseError::offset(source, data.len(), format!("file has {} bytes, shorter than the 128-byte MAT header", data.len())));
        }
        let header_text = String::from_utf8_lossy(&data[..116]).trim_end_matches(['\0', ' ']).to_string();
        if data.starts_with(b"MATLAB 7.3") || data.starts_with(b"\x89HDF") {
            return Err(ParseError::offset(source, 0, "MATLAB v7.3 (HDF5) file; only level-5 MAT-files are supported"));
        }
        let e = match &data[126..128] {
            b"IM" => Endian { big: false },
            b"MI" => Endian { big: true },
            other => {
                return Err(ParseError::offset(source, 126, format!("endian indicator {other:?} is neither `IM` nor `MI`: not a level-5 MAT-file")));
            }
        };
        let version = if e.big { u16::from_be_bytes([data[124], data[125]]) } else { u16::from_le_bytes([data[124], data[125]]) };
        if version != 0x0100 {
            return Err(ParseError::offset(source, 124, format!("MAT version {version:#06x}, expected 0x0100 (level 5)")));
        }
        let mut cur = Cursor { buf: &data[128..], pos: 0, e, src: source, ctx: "", base: 128 };
        let mut vars = Vec::new();
        while cur.buf.len() - cur.pos >= 8 {
            let (ty, payload, at) = cur.element()?;
            let file_off = 128 + at;
            match ty {
                MI_MATRIX => {
                    let sub = Cursor { buf: payload, pos: 0, e, src: source, ctx: "", base: file_off + 8 };
                    vars.push(parse_matrix(sub, file_off)?);
                }
                MI_COMPRESSED => {
                    let mut inflated = Vec::new();
                    // one byte past the limit tells "exactly the limit" from "more than it"
                    let mut dec = flate2::read::ZlibDecoder::new(payload).take(MAX_INFLATED + 1);
                    if let Err(err) = dec.read_to_end(&mut inflated) {
                        return Err(ParseError::offset(source, file_off, format!("compressed element ({} bytes) cannot be inflated: {err}", payload.len())));
                    }
                    if inflated.len() as u64 > MAX_INFLATED {
                        return Err(ParseError::offset(
                            source,
                            file_off,
                            format!("compressed element inflates to more than the limit of {MAX_INFLATED} bytes"),
                        ));
                    }
                    let ctx = format!("in the inflated data of the compressed element at byte offset {file_off}: ");
                    let mut inner = Cursor { buf: &inflated, pos: 0, e, src: source, ctx: &ctx, base: 0 };
                    while inner.buf.len() - inner.pos >= 8 {
                        let (ity, ipayload, iat) = inner.element()?;
                        if ity == MI_MATRIX {
                            let sub = Cursor { buf: ipayload, pos: 0, e, src: source, ctx: &ctx, base: iat + 8 };
                            vars.push(parse_matrix(sub, file_off)?);
                        }
                    }
                }
                _ => {} // Not a variable (e.g. subsystem data): skip.
            }
        }
        Ok(MatFile { source: source.to_string(), header_text, vars })
    }

    /// Names of all variables in file order (numeric or not).
    pub fn names(&self) -> Vec<String> {
        self.vars.iter().map(|v| v.name.clone()).collect()
    }

    /// The 2-D numeric variable `var` as f64, rows x cols exactly as MATLAB shows it.
    ///
    /// MATLAB stores arrays column-major, so `A[[i, j]] = data[i + j * rows]`. Every numeric
    /// class (double, single, int8..uint64, logical) is converted with `as f64`. Errors name the
    /// variable: missing (listing the available ones), non-numeric (struct, cell, char, sparse,
    /// complex) or not 2-D.
    pub fn matrix(&self, var: &str) -> Result<Array2<f64>, ParseError> {
        let err = |msg: String| ParseError::Variable { file: self.source.clone(), var: var.to_string(), msg };
        let Some(v) = self.vars.iter().find(|v| v.name == var) else {
            return Err(err(format!("not in the file (variables: {})", self.names().join(", "))));
        };
        let vals = v.values.as_ref().map_err(|m| err(format!("{m} (element at byte offset {})", v.offset)))?;
        if v.dims.len() != 2 {
            return Err(err(format!("has {} dimensions {:?}, expected a 2-D matrix (element at byte offset {})", v.dims.len(), v.dims, v.offset)));
        }
        Array2::from_shape_vec((v.dims[0], v.dims[1]).f(), vals.clone()).map(|a| a.as_standard_layout().to_owned()).map_err(|e| err(format!("shape error {e}")))
    }

    /// MATLAB class name of `var` (`double`, `uint8`, `logical`, `struct`, ...), if present.
    pub fn class(&self, var: &str) -> Option<&'static str> {
        self.vars.iter().find(|v| v.name == var).map(|v| v.class)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::testutil::mirror;
    use std::io::Write;

    /// Builds level-5 files by hand (little-endian).
    fn tag(ty: u32, data: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&ty.to_le_bytes());
        v.extend_from_slice(&(data.len() as u32).to_le_bytes());
        v.extend_from_slice(data);
        v.resize(v.len().div_ceil(8) * 8, 0);
        v
    }
    fn small(ty: u32, data: &[u8]) -> Vec<u8> {
        assert!(data.len() <= 4);
        let mut v = ((data.len() as u32) << 16 | ty).to_le_bytes().to_vec();
        v.extend_from_slice(data);
        v.resize(8, 0);
        v
    }
    fn matrix_el(name: &str, class: u32, flags: u32, dims: &[i32], ty: u32, data: &[u8]) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend(tag(MI_UINT32, &[(class | flags).to_le_bytes(), 0u32.to_le_bytes()].concat()));
        let d: Vec<u8> = dims.iter().flat_map(|x| x.to_le_bytes()).collect();
        p.extend(tag(MI_INT32, &d));
        if name.len() <= 4 {
            p.extend(small(MI_INT8, name.as_bytes()));
        } else {
            p.extend(tag(MI_INT8, name.as_bytes()));
        }
        if ty != 0 {
            p.extend(tag(ty, data));
        }
        tag(MI_MATRIX, &p)
    }
    fn header() -> Vec<u8> {
        let mut h = b"MATLAB 5.0 MAT-file, written by a structdr test".to_vec();
        h.resize(116, b' ');
        h.extend_from_slice(&[0u8; 8]);
        h.extend_from_slice(&0x0100u16.to_le_bytes());
        h.extend_from_slice(b"IM");
        h
    }
    fn compress(el: &[u8]) -> Vec<u8> {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(el).unwrap();
        let c = z.finish().unwrap();
        let mut v = MI_COMPRESSED.to_le_bytes().to_vec();
        v.extend_from_slice(&(c.len() as u32).to_le_bytes());
        v.extend(c);
        v
    }

    fn hand_file() -> Vec<u8> {
        let mut f = header();
        // A = [1 2 3; 4 5 6] double, column-major 1 4 2 5 3 6.
        let a: Vec<u8> = [1.0f64, 4.0, 2.0, 5.0, 3.0, 6.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        f.extend(matrix_el("A", 6, 0, &[2, 3], MI_DOUBLE, &a));
        // B uint8 3x1 [7; 8; 255].
        f.extend(matrix_el("B", 9, 0, &[3, 1], MI_UINT8, &[7, 8, 255]));
        // C int16 1x2 [-5 300], compressed.
        let c: Vec<u8> = [-5i16, 300].iter().flat_map(|x| x.to_le_bytes()).collect();
        f.extend(compress(&matrix_el("Cvar", 10, 0, &[1, 2], MI_INT16, &c)));
        // D double stored as miUINT8 (MATLAB narrows storage), 2x2 [1 3; 2 4].
        f.extend(matrix_el("D", 6, 0, &[2, 2], MI_UINT8, &[1, 2, 3, 4]));
        // L logical 1x3.
        f.extend(matrix_el("L", 9, FLAG_LOGICAL, &[1, 3], MI_UINT8, &[1, 0, 1]));
        // S a struct (contents irrelevant) and a 3-D array.
        f.extend(matrix_el("S", 2, 0, &[1, 1], MI_INT32, &[0, 0, 0, 0]));
        let t: Vec<u8> = [1.0f64; 8].iter().flat_map(|x| x.to_le_bytes()).collect();
        f.extend(matrix_el("T", 6, 0, &[2, 2, 2], MI_DOUBLE, &t));
        f
    }

    #[test]
    fn hand_written_file() {
        let f = hand_file();
        let m = MatFile::parse(&f, "hand.mat").unwrap();
        assert_eq!(m.names(), vec!["A", "B", "Cvar", "D", "L", "S", "T"]);
        assert_eq!(m.matrix("A").unwrap(), ndarray::array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
        assert_eq!(m.matrix("B").unwrap(), ndarray::array![[7.0], [8.0], [255.0]]);
        assert_eq!(m.matrix("Cvar").unwrap(), ndarray::array![[-5.0, 300.0]]);
        assert_eq!(m.matrix("D").unwrap(), ndarray::array![[1.0, 3.0], [2.0, 4.0]]);
        assert_eq!(m.matrix("L").unwrap(), ndarray::array![[1.0, 0.0, 1.0]]);
        assert_eq!(m.class("L"), Some("logical"));
        let e = m.matrix("S").unwrap_err().to_string();
        assert!(e.contains("hand.mat") && e.contains("`S`") && e.contains("struct"), "{e}");
        let e = m.matrix("T").unwrap_err().to_string();
        assert!(e.contains("`T`") && e.contains("3 dimensions"), "{e}");
        let e = m.matrix("nope").unwrap_err().to_string();
        assert!(e.contains("`nope`") && e.contains("A, B, Cvar"), "{e}");
    }

    #[test]
    fn scipy_fixture() {
        // Written by scipy.io.savemat (tests/fixtures/make_mat_fixture.py).
        let f = include_bytes!("../../tests/fixtures/small_v5.mat");
        let m = MatFile::parse(f, "small_v5.mat").unwrap();
        assert_eq!(m.matrix("dbl").unwrap(), ndarray::array![[1.5, -2.0, 3.25], [4.0, 5.0, 6.0]]);
        assert_eq!(m.matrix("u8").unwrap(), ndarray::array![[0.0, 1.0], [2.0, 255.0]]);
        assert_eq!(m.matrix("i16").unwrap(), ndarray::array![[-32768.0], [0.0], [32767.0]]);
        assert_eq!(m.matrix("sgl").unwrap(), ndarray::array![[0.5, 0.25]]);
        assert_eq!(m.matrix("i64").unwrap(), ndarray::array![[-7.0, 9.0]]);
        assert_eq!(m.matrix("lg").unwrap(), ndarray::array![[1.0, 0.0]]);
        assert!(m.matrix("st").is_err());
        assert!(m.matrix("txt").is_err());
        let fz = include_bytes!("../../tests/fixtures/small_v5_compressed.mat");
        let mz = MatFile::parse(fz, "small_v5_compressed.mat").unwrap();
        for v in ["dbl", "u8", "i16", "sgl", "i64", "lg"] {
            assert_eq!(mz.matrix(v).unwrap(), m.matrix(v).unwrap(), "{v}");
        }
        assert_eq!(mz.names(), m.names());
    }

    #[test]
    fn reads_files_written_by_mat5() {
        let vals: Vec<f64> = (0..6).map(f64::from).collect(); // column-major 2 x 3
        let f = mat5::MatFile {
            header_text: "MATLAB 5.0 MAT-file, structdr test".into(),
            arrays: vec![
                mat5::NamedArray { name: "X".into(), matrix: mat5::Matrix::Dense(mat5::DenseMatrix { rows: 2, cols: 3, values: mat5::Values::F64(vals) }) },
                mat5::NamedArray {
                    name: "y".into(),
                    matrix: mat5::Matrix::Dense(mat5::DenseMatrix { rows: 2, cols: 1, values: mat5::Values::U8(vec![3, 4]) }),
                },
            ],
        };
        let m = MatFile::parse(&f.write_bytes().unwrap(), "mat5.mat").unwrap();
        assert_eq!(m.matrix("X").unwrap(), ndarray::array![[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]);
        assert_eq!(m.matrix("y").unwrap(), ndarray::array![[3.0], [4.0]]);
    }

    #[test]
    fn truncated_and_garbage_never_panic() {
        let mut files = vec![hand_file()];
        files.push(include_bytes!("../../tests/fixtures/small_v5_compressed.mat").to_vec());
        files.push(include_bytes!("../../tests/fixtures/small_v5.mat").to_vec());
        for f in &files {
            for cut in 0..f.len() {
                let r = MatFile::parse(&f[..cut], "cut.mat");
                if let Err(e) = r {
                    let s = e.to_string();
                    assert!(s.contains("cut.mat") && s.contains("byte offset"), "{s}");
                }
            }
            // Flip bytes one at a time past the header; any result is fine except a panic.
            for i in 128..f.len() {
                for x in [0xffu8, 0x80, 0x01] {
                    let mut g = f.clone();
                    g[i] ^= x;
                    if let Ok(m) = MatFile::parse(&g, "flip.mat") {
                        for n in m.names() {
                            let _ = m.matrix(&n);
                        }
                    }
                }
            }
        }
        let mut r: u64 = 0x9e3779b97f4a7c15;
        for len in [0usize, 10, 127, 128, 200, 4096] {
            let mut g = header();
            for _ in 0..len {
                r ^= r << 13;
                r ^= r >> 7;
                r ^= r << 17;
                g.push(r as u8);
            }
            let _ = MatFile::parse(&g, "garbage.mat");
        }
        let e = MatFile::parse(b"not a mat file", "x.mat").unwrap_err().to_string();
        assert!(e.contains("x.mat") && e.contains("byte offset"), "{e}");
        let mut h = header();
        h[126] = b'X';
        assert!(MatFile::parse(&h, "y.mat").unwrap_err().to_string().contains("byte offset 126"));
    }

    /// Position-weighted sum `sum_ij x_ij ((7 i + 3 j) mod 11)`: catches transposed or shuffled
    /// reads (reference values from scipy.io.loadmat).
    fn weighted_sum(a: &Array2<f64>) -> f64 {
        a.indexed_iter().map(|((i, j), v)| v * ((7 * i + 3 * j) % 11) as f64).sum()
    }

    #[test]
    fn mirrored_files() {
        if let Some(p) = mirror("skfeature/coil20.mat") {
            let m = MatFile::parse(&std::fs::read(&p).unwrap(), "coil20.mat").unwrap();
            let x = m.matrix("X").unwrap();
            assert_eq!(x.dim(), (1440, 1024));
            assert!((weighted_sum(&x) - 2223323.270588235).abs() < 1e-6);
            let y = m.matrix("Y").unwrap();
            assert_eq!(y.dim(), (1440, 1));
            assert_eq!(y.iter().cloned().fold(f64::NEG_INFINITY, f64::max), 20.0);
        }
        if let Some(p) = mirror("usps/usps_roweis_11000.mat") {
            let m = MatFile::parse(&std::fs::read(&p).unwrap(), "usps_roweis_11000.mat").unwrap();
            assert!(m.names().contains(&"par".to_string()));
            assert!(m.matrix("par").unwrap_err().to_string().contains("struct"));
            let d = m.matrix("DAT").unwrap();
            assert_eq!(d.dim(), (256, 11000));
            assert_eq!(weighted_sum(&d), 892068315.0);
            assert_eq!(m.matrix("labels").unwrap().dim(), (1, 11000));
        }
        if let Some(p) = mirror("usps/usps_9298_uint8.mat") {
            let m = MatFile::parse(&std::fs::read(&p).unwrap(), "usps_9298_uint8.mat").unwrap();
            assert_eq!(m.class("usps_all"), Some("uint8"));
            let a = m.matrix("usps_all").unwrap();
            assert_eq!(a.dim(), (9298, 257));
            assert_eq!(weighted_sum(&a), 765382893.0);
            assert!(a.column(256).iter().all(|&l| (1.0..=10.0).contains(&l)));
        }
        for (rel, var, shape) in [
            ("faces/pie_pose27.mat", "fea", (2856, 1024)),
            ("toy/2moons.mat", "x", (200, 2)),
            ("toy/tree_300.mat", "X", (304, 2)),
            ("skfeature/yale.mat", "X", (165, 1024)),
            ("skfeature/isolet.mat", "X", (1560, 617)),
            ("skfeature/orlraws10p.mat", "X", (100, 10304)),
            ("skfeature/pixraw10p.mat", "X", (100, 10000)),
            ("skfeature/tox_171.mat", "X", (171, 5748)),
            ("skfeature/warpar10p.mat", "X", (130, 2400)),
        ] {
            if let Some(p) = mirror(rel) {
                let m = MatFile::parse(&std::fs::read(&p).unwrap(), rel).unwrap();
                assert_eq!(m.matrix(var).unwrap().dim(), shape, "{rel}");
            }
        }
    }
}
