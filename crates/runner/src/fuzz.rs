//! The bodies of the cargo-fuzz targets (`fuzz/fuzz_targets/<name>.rs`, run by `just fuzz`): one
//! function per input format structdr reads, each taking arbitrary bytes.
//!
//! Each body must return, never panic, and allocate no more than the input's declared sizes (the
//! fuzzer runs with an allocation limit). Where structdr also writes the format, what the parser
//! accepts must survive the writer and the parser again bit for bit (NaN payloads and signs
//! aside). The test `fuzz_corpora` replays every committed corpus file (`fuzz/corpus/<name>/`)
//! through these same functions on the stable toolchain, so each input the fuzzer kept, and each
//! crash it once found, stays a regression test.

use crate::{spec, store};
use ndarray::Array2;
use structdr_datasets::parse::{self, csv::Delimiter};

/// The targets by name, as `fuzz/fuzz_targets/<name>.rs` and `fuzz/corpus/<name>/` name them.
pub const TARGETS: &[(&str, fn(&[u8]))] =
    &[("npy", npy), ("csv", csv), ("libsvm", libsvm), ("mat", mat), ("idx", idx), ("spec_toml", spec_toml), ("record_json", record_json), ("images", images)];

/// Panics unless `a` and `b` have one shape and the same values bit for bit (any NaN equals any
/// NaN: the text formats do not keep payloads or signs of NaN).
fn assert_same(a: &Array2<f64>, b: &Array2<f64>, what: &str) {
    assert_eq!(a.dim(), b.dim(), "{what}: shape changed in the round trip");
    for (x, y) in a.iter().zip(b.iter()) {
        assert!(x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()), "{what}: {x:?} came back as {y:?}");
    }
}

/// `.npy`: [`parse::npy::parse_matrix`] and [`parse::npy::parse_labels`]; an accepted matrix
/// written by ndarray-npy (as `structdr embed --out x.npy` writes) reads back the same.
pub fn npy(data: &[u8]) {
    if let Ok(x) = parse::npy::parse_matrix(data, "fuzz.npy") {
        let mut buf = Vec::new();
        ndarray_npy::WriteNpyExt::write_npy(&x, &mut buf).expect("ndarray-npy writes into memory");
        let back = parse::npy::parse_matrix(&buf, "roundtrip.npy").expect("ndarray-npy's output parses");
        assert_same(&x, &back, "npy");
    }
    if let Ok(y) = parse::npy::parse_labels(data, "fuzz.npy") {
        assert!(y.iter().all(|v| v.unsigned_abs() < 9_000_000_000_000_000), "labels are integers below 9e15");
    }
}

/// Delimited text: [`parse::csv::parse_with`] with each delimiter and detected; an accepted
/// matrix written by [`parse::csv::write`] reads back the same.
pub fn csv(data: &[u8]) {
    for delimiter in [None, Some(Delimiter::Comma), Some(Delimiter::Semicolon), Some(Delimiter::Tab), Some(Delimiter::Whitespace)] {
        if let Ok(x) = parse::csv::parse_with(data, "fuzz.csv", delimiter) {
            assert!(x.nrows() > 0 && x.ncols() > 0, "csv: an accepted table has rows and columns");
            let back = parse::csv::parse(parse::csv::write(&x.view()).as_bytes(), "roundtrip.csv").expect("csv::write's output parses");
            assert_same(&x, &back, "csv");
        }
    }
}

/// LIBSVM text, plain or bzip2-compressed (as the libsvm sets are served): [`parse::libsvm::parse`]
/// with the dimensionality found and with one declared by the first byte.
pub fn libsvm(data: &[u8]) {
    let text = match parse::bunzip2(data, "fuzz.bz2") {
        Ok(t) => t,
        Err(_) => data.to_vec(),
    };
    for n_features in [None, data.first().map(|&b| usize::from(b))] {
        if let Ok(m) = parse::libsvm::parse(&text, "fuzz.libsvm", n_features) {
            assert_eq!(m.x.nrows(), m.y.len(), "libsvm: one label per row");
            assert!(m.x.iter().all(|v| v.is_finite()), "libsvm: values are finite");
            if let Some(d) = n_features {
                assert_eq!(m.x.ncols(), d, "libsvm: the declared dimensionality");
            }
        }
    }
}

/// MATLAB v5 `.mat`: [`parse::mat::MatFile::parse`], then every variable as a matrix.
pub fn mat(data: &[u8]) {
    if let Ok(f) = parse::mat::MatFile::parse(data, "fuzz.mat") {
        for name in f.names() {
            let _ = f.class(&name);
            if let Ok(x) = f.matrix(&name) {
                assert!(x.len() <= data.len().saturating_mul(1032), "mat: a matrix larger than the file could hold");
            }
        }
    }
}

/// IDX tensors, plain or gzip-compressed (as MNIST is served): [`parse::idx::parse`].
pub fn idx(data: &[u8]) {
    let raw = match parse::gunzip(data, "fuzz.gz") {
        Ok(t) => t,
        Err(_) => data.to_vec(),
    };
    if let Ok((dims, values)) = parse::idx::parse(&raw, "fuzz.idx") {
        assert_eq!(dims.iter().product::<usize>(), values.len(), "idx: values match the dimensions");
    }
}

/// Experiment specs: [`spec::parse`] (what `structdr check` and `run` read), on the text as
/// UTF-8 (lossily). An accepted plan stays within the stated cell limits.
pub fn spec_toml(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match spec::parse(&text, "fuzz.toml", std::path::Path::new("fuzz.toml")) {
        Ok(plan) => {
            for m in &plan.methods {
                assert!(m.cells.len() <= spec::MAX_GRID_CELLS, "spec: a grid past the limit was accepted");
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

/// Record files (`results/<id>/records/<hash>.json`) and fit-cache files
/// (`results/<id>/fits/<hash>.json`): [`store::Record::from_json`] and [`store::parse_fit`]. An
/// accepted record written again and read back is the same record (its floats included).
pub fn record_json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(rec) = store::Record::from_json(text) {
        let once = serde_json::to_string_pretty(&rec).expect("a parsed record serialises");
        let again = store::Record::from_json(&once).expect("a written record parses");
        assert_eq!(once, serde_json::to_string_pretty(&again).expect("serialises"), "record: JSON round trip changed the record");
    }
    if let Some((_, fitted, seconds)) = store::parse_fit(text) {
        assert!(seconds.is_finite() && seconds >= 0.0, "fit: seconds are a duration");
        let _ = fitted.drawn_graph();
    }
}

/// Images inside the image zips: PGM/PPM, PNG, JPEG, and the zip itself
/// ([`structdr_datasets::load::parse_image_zip`] with default loader settings).
pub fn images(data: &[u8]) {
    use structdr_datasets::load;
    for decoded in [load::decode_pnm(data, "fuzz.pnm"), load::decode_png(data, "fuzz.png"), load::decode_jpeg(data, "fuzz.jpg")].into_iter().flatten() {
        assert_eq!(decoded.data.len(), decoded.height * decoded.width * decoded.channels, "image: pixels match the header");
    }
    let _ = load::parse_image_zip(data, "fuzz.zip", &Default::default(), 2, 4);
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_target_has_a_fuzz_binary() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/fuzz_targets");
        for (name, _) in super::TARGETS {
            assert!(dir.join(format!("{name}.rs")).is_file(), "fuzz/fuzz_targets/{name}.rs is missing");
        }
    }
}
