//! Property tests of the parsers (proptest): what one writes, the parser reads back bit for bit,
//! and arbitrary bytes give a value or an error, never a panic or a huge allocation.

use ndarray::Array2;
use proptest::prelude::*;
use structdr_datasets::parse;

/// Finite doubles of every magnitude, signed zeros and subnormals included.
fn finite() -> impl Strategy<Value = f64> {
    prop_oneof![any::<f64>().prop_filter("finite", |v| v.is_finite()), Just(0.0), Just(-0.0), Just(f64::MIN_POSITIVE / 8.0), -1e6..1e6f64]
}

fn matrix() -> impl Strategy<Value = Array2<f64>> {
    (1usize..12, 1usize..7).prop_flat_map(|(r, c)| proptest::collection::vec(finite(), r * c).prop_map(move |v| Array2::from_shape_vec((r, c), v).unwrap()))
}

fn bits(a: &Array2<f64>) -> Vec<u64> {
    a.iter().map(|v| v.to_bits()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// CSV: `csv::write` then `csv::parse` is the identity on the bits.
    #[test]
    fn csv_round_trip(x in matrix()) {
        let back = parse::csv::parse(parse::csv::write(&x.view()).as_bytes(), "p.csv").unwrap();
        prop_assert_eq!(back.dim(), x.dim());
        prop_assert_eq!(bits(&back), bits(&x));
    }

    /// CSV with any of the delimiters, an optional header of names and a BOM reads the same values.
    #[test]
    fn csv_delimiters_headers_and_bom(x in matrix(), delim in prop_oneof![Just(","), Just(";"), Just("\t"), Just(" ")], header in any::<bool>(), bom in any::<bool>()) {
        let mut text = String::new();
        if bom {
            text.push('\u{feff}');
        }
        if header {
            text.push_str(&(0..x.ncols()).map(|j| format!("col_{j}")).collect::<Vec<_>>().join(delim));
            text.push('\n');
        }
        for row in x.rows() {
            text.push_str(&row.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join(delim));
            text.push('\n');
        }
        let back = parse::csv::parse(text.as_bytes(), "p.csv").unwrap();
        prop_assert_eq!(bits(&back), bits(&x));
    }

    /// NPY: what ndarray-npy writes (C order, f64) our reader reads back bit for bit.
    #[test]
    fn npy_round_trip(x in matrix()) {
        let mut buf = Vec::new();
        ndarray_npy::WriteNpyExt::write_npy(&x, &mut buf).unwrap();
        let back = parse::npy::parse_matrix(&buf, "p.npy").unwrap();
        prop_assert_eq!(bits(&back), bits(&x));
    }

    /// LIBSVM: a sparse matrix written in the format (1-based indices, zeros omitted) reads back.
    #[test]
    fn libsvm_round_trip(x in matrix(), labels in proptest::collection::vec(-5i64..5, 12)) {
        let mut text = String::new();
        for (i, row) in x.rows().into_iter().enumerate() {
            text.push_str(&labels[i].to_string());
            for (j, v) in row.iter().enumerate() {
                if *v != 0.0 {
                    text.push_str(&format!(" {}:{v:?}", j + 1));
                }
            }
            text.push('\n');
        }
        let m = parse::libsvm::parse(text.as_bytes(), "p.libsvm", Some(x.ncols())).unwrap();
        prop_assert_eq!(m.x.dim(), x.dim());
        // zeros are not written, so -0.0 comes back as +0.0
        prop_assert_eq!(m.x.iter().map(|v| if *v == 0.0 { 0 } else { v.to_bits() }).collect::<Vec<_>>(), x.iter().map(|v| if *v == 0.0 { 0 } else { v.to_bits() }).collect::<Vec<_>>());
        prop_assert_eq!(m.y, labels[..x.nrows()].to_vec());
    }

    /// Any bytes: every parser returns a value or an error (the test fails on a panic).
    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = parse::csv::parse(&data, "f.csv");
        let _ = parse::libsvm::parse(&data, "f.libsvm", None);
        let _ = parse::libsvm::parse(&data, "f.libsvm", Some(3));
        let _ = parse::idx::parse(&data, "f.idx");
        let _ = parse::mat::MatFile::parse(&data, "f.mat");
        let _ = parse::npy::parse_matrix(&data, "f.npy");
    }

    /// Bytes that start like the real thing (a valid NPY or IDX header followed by anything) are
    /// the likelier crash sites: the same property there.
    #[test]
    fn plausible_headers_never_panic(shape in proptest::collection::vec(0usize..1_000_000, 0..4), tail in proptest::collection::vec(any::<u8>(), 0..200), descr in prop_oneof![Just("<f8"), Just("<f4"), Just("<i8"), Just("|u1"), Just("<c16"), Just(">f8")]) {
        let dims = shape.iter().map(|d| format!("{d}, ")).collect::<String>();
        let mut h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}");
        while !(10 + h.len() + 1).is_multiple_of(64) {
            h.push(' ');
        }
        h.push('\n');
        let mut npy = b"\x93NUMPY\x01\x00".to_vec();
        npy.extend_from_slice(&(h.len() as u16).to_le_bytes());
        npy.extend_from_slice(h.as_bytes());
        npy.extend_from_slice(&tail);
        let _ = parse::npy::parse_matrix(&npy, "h.npy");
        let mut idx = vec![0u8, 0, 0x08, shape.len() as u8];
        for d in &shape {
            idx.extend_from_slice(&(*d as u32).to_be_bytes());
        }
        idx.extend_from_slice(&tail);
        let _ = parse::idx::parse(&idx, "h.idx");
    }
}
