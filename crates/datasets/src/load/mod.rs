//! Registry entry -> [`Dataset`]: fetch + verify ([`crate::download`]; [`fetch_files`] also
//! checks that the files load), parse ([`crate::parse`])
//! according to the entry's format and [`Loader`] fields, then check the shape against the
//! registry (`n_samples`, `n_features`, `n_classes`; any mismatch is an error).
//!
//! Formats:
//! - `libsvm` / `libsvm-bz2`: every file parsed with the declared `n_features`, rows stacked.
//! - `mat-v5`: X = the `x_var` variable(s) (transposed when `transpose`), stacked by rows;
//!   labels from `y_var` (row or column vectors, stacked) or from `label_column` (a 1-based
//!   column of X that is then removed); then `rows = [first, last]` (1-based, inclusive) and
//!   `select_label` filter the samples.
//! - `idx-gzip`: (images, labels) file pairs; each image is flattened row-major
//!   (`x[n, r * cols + c] = pixel(r, c)`), pairs stacked by rows (train then test).
//! - `teapot-zip` / `image-zip`: see [`parse_image_zip`].
//!
//! Labels are `i64` as written in the file (a non-integral label is an error).
//! [`Dataset::checksum`] is the verified content hash of the file (its `raw_sha256` when the
//! registry gives one), joined with `+` for multi-file sets; [`Dataset::note`] is the entry's
//! stand-in remark, else its provenance remark.

mod error;
mod images;

pub use error::LoadError;
pub use images::{decode_image, decode_jpeg, decode_png, decode_pnm, Image, MAX_IMAGE_BYTES};

use crate::download::{fetch_validated, DownloadError, FetchOptions, Fetched, Validated};
use crate::parse;
use crate::registry::{Entry, Format, Loader, Registry};
use crate::Dataset;
use error::layout;
use images::{check_image_dims, image_header};
use ndarray::{concatenate, s, Array2, Axis};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Loads the builtin-registry entry `name` (fetching it if needed) and checks its shape.
pub fn load(name: &str, opts: &FetchOptions) -> Result<Dataset, LoadError> {
    load_entry(Registry::builtin().get(name)?, opts)
}

/// Loads `entry` (fetching its files if needed) and checks its shape.
pub fn load_entry(entry: &Entry, opts: &FetchOptions) -> Result<Dataset, LoadError> {
    // parsed once, before anything new is cached or pinned
    let (files, (x, labels)) = match fetch_validated(entry, opts, |paths| parse_and_check(entry, paths)) {
        Ok(v) => v,
        Err(Validated::Download(e)) => return Err(e.into()),
        Err(Validated::Load(e)) => return Err(e),
    };
    let checksum = files.iter().map(|f| f.content_sha256.as_str()).collect::<Vec<_>>().join("+");
    Ok(Dataset { name: entry.name.clone(), x, labels, t: None, checksum, note: entry.table_note() })
}

/// Makes every file of `entry` present and verified in the cache (see the module docs for the
/// order of sources and the verification rule) and returns them in registry order. The files
/// must load as the registry describes them (format and shape) before they are cached or pinned
/// ([`parse_and_check`] is the download's validation, so it lives here, above `download`).
pub fn fetch_files(entry: &Entry, opts: &FetchOptions) -> Result<Vec<Fetched>, DownloadError> {
    match fetch_validated(entry, opts, |paths| parse_and_check(entry, paths).map(|_| ())) {
        Ok((f, ())) => Ok(f),
        Err(Validated::Download(e)) => Err(e),
        Err(Validated::Load(e)) => Err(DownloadError::Invalid { origin: "cache".into(), file: entry.files[0].mirror_path.clone(), reason: e.to_string() }),
    }
}

/// [`fetch_files`], returning the cache path of a single-file entry, or for a multi-file entry
/// the directory holding its files (their common parent, else the cache directory).
pub fn fetch(entry: &Entry, opts: &FetchOptions) -> Result<PathBuf, DownloadError> {
    let files = fetch_files(entry, opts)?;
    if files.len() == 1 {
        return Ok(files[0].path.clone());
    }
    let parent = files[0].path.parent().map(Path::to_path_buf);
    if files.iter().all(|f| f.path.parent().map(Path::to_path_buf) == parent) {
        if let Some(p) = parent {
            return Ok(p);
        }
    }
    Ok(opts.cache_dir.clone())
}

/// [`fetch`] of the builtin-registry entry called `name`.
pub fn fetch_by_name(name: &str, opts: &FetchOptions) -> Result<PathBuf, DownloadError> {
    fetch(Registry::builtin().get(name)?, opts)
}

/// [`parse_files`] then [`check_shape`].
pub fn parse_and_check(entry: &Entry, paths: &[PathBuf]) -> Result<(Array2<f64>, Option<Vec<i64>>), LoadError> {
    let (x, labels) = parse_files(entry, paths)?;
    check_shape(entry, &x, labels.as_deref())?;
    Ok((x, labels))
}

/// Checks `x` and `labels` against the entry's `n_samples`, `n_features` and `n_classes`
/// (`n_classes = 0` requires no labels).
pub fn check_shape(entry: &Entry, x: &Array2<f64>, labels: Option<&[i64]>) -> Result<(), LoadError> {
    let mm = |what, expected, actual| LoadError::ShapeMismatch { name: entry.name.clone(), what, expected, actual };
    if x.nrows() != entry.n_samples {
        return Err(mm("n_samples", entry.n_samples, x.nrows()));
    }
    if x.ncols() != entry.n_features {
        return Err(mm("n_features", entry.n_features, x.ncols()));
    }
    let k = labels.map_or(0, |l| {
        let mut v = l.to_vec();
        v.sort_unstable();
        v.dedup();
        v.len()
    });
    if k != entry.n_classes {
        return Err(mm("n_classes", entry.n_classes, k));
    }
    if let Some(l) = labels {
        if l.len() != x.nrows() {
            return Err(mm("labels", x.nrows(), l.len()));
        }
    }
    Ok(())
}

fn read(path: &Path) -> Result<Vec<u8>, LoadError> {
    std::fs::read(path).map_err(|cause| LoadError::Io { path: path.to_path_buf(), cause })
}

fn vstack(parts: Vec<Array2<f64>>, source: &str) -> Result<Array2<f64>, LoadError> {
    if parts.len() == 1 {
        return Ok(parts.into_iter().next().unwrap_or_else(|| Array2::zeros((0, 0))));
    }
    let views: Vec<_> = parts.iter().map(|a| a.view()).collect();
    concatenate(Axis(0), &views).map_err(|_| {
        let shapes: Vec<String> = parts.iter().map(|a| format!("{}x{}", a.nrows(), a.ncols())).collect();
        layout(source, format!("cannot stack matrices of shapes {}", shapes.join(", ")))
    })
}

fn to_labels(values: impl IntoIterator<Item = f64>, source: &str) -> Result<Vec<i64>, LoadError> {
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            if v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e15 {
                Ok(v as i64)
            } else {
                Err(layout(source, format!("label {} of sample {} is not an integer", v, i + 1)))
            }
        })
        .collect()
}

/// Parses already-fetched files of `entry` (paths in registry order) into X and labels,
/// without the shape check. Useful for files obtained by other means.
pub fn parse_files(entry: &Entry, paths: &[PathBuf]) -> Result<(Array2<f64>, Option<Vec<i64>>), LoadError> {
    if paths.len() != entry.files.len() {
        return Err(layout(&entry.name, format!("{} files given, the registry lists {}", paths.len(), entry.files.len())));
    }
    match entry.format {
        Format::Libsvm | Format::LibsvmBz2 => {
            let mut xs = Vec::new();
            let mut ys = Vec::new();
            for p in paths {
                let src = p.display().to_string();
                let mut data = read(p)?;
                if entry.format == Format::LibsvmBz2 {
                    data = parse::bunzip2(&data, &src)?;
                }
                let m = parse::libsvm::parse(&data, &src, Some(entry.n_features))?;
                xs.push(m.x);
                ys.extend(m.y);
            }
            Ok((vstack(xs, &entry.name)?, Some(ys)))
        }
        Format::MatV5 => {
            let p = &paths[0];
            let src = p.display().to_string();
            let mat = parse::mat::MatFile::parse(&read(p)?, &src)?;
            parse_mat(&mat, &entry.loader, &src)
        }
        Format::IdxGzip => {
            let mut xs = Vec::new();
            let mut ys = Vec::new();
            for pair in paths.chunks(2) {
                let (img_p, lab_p) = match pair {
                    [a, b] => (a, b),
                    _ => return Err(layout(&entry.name, "idx-gzip files must come in pairs")),
                };
                let isrc = img_p.display().to_string();
                let lsrc = lab_p.display().to_string();
                // inflated no further than the registry's shape allows (a byte per pixel and per
                // label, plus the IDX header), so a gzip bomb stops there
                let (n, d) = (entry.n_samples as u64, entry.n_features as u64);
                let (imax, lmax) = (n.saturating_mul(d).saturating_add(1 << 10), n.saturating_add(1 << 10));
                let (idims, ibytes) = parse::idx::parse(&parse::gunzip_at_most(&read(img_p)?, &isrc, imax)?, &isrc)?;
                let (ldims, lbytes) = parse::idx::parse(&parse::gunzip_at_most(&read(lab_p)?, &lsrc, lmax)?, &lsrc)?;
                if idims.len() < 2 {
                    return Err(layout(&isrc, format!("IDX images need >= 2 dimensions, got {idims:?}")));
                }
                if ldims.len() != 1 {
                    return Err(layout(&lsrc, format!("IDX labels need 1 dimension, got {ldims:?}")));
                }
                let n = idims[0];
                let d: usize = idims[1..].iter().product();
                if ldims[0] != n {
                    return Err(layout(&lsrc, format!("{} labels for {} images in {isrc}", ldims[0], n)));
                }
                let x = Array2::from_shape_vec((n, d), ibytes.into_iter().map(f64::from).collect()).map_err(|e| layout(&isrc, e.to_string()))?;
                xs.push(x);
                ys.extend(lbytes.into_iter().map(i64::from));
            }
            Ok((vstack(xs, &entry.name)?, Some(ys)))
        }
        Format::ImageZip => {
            let p = &paths[0];
            let src = p.display().to_string();
            parse_image_zip(&read(p)?, &src, &entry.loader, entry.n_samples, entry.n_features)
        }
    }
}

/// Applies the `mat-v5` loader fields to a parsed MAT file (see the module docs).
pub fn parse_mat(mat: &parse::mat::MatFile, loader: &Loader, src: &str) -> Result<(Array2<f64>, Option<Vec<i64>>), LoadError> {
    let xvars = loader.x_var.as_ref().ok_or_else(|| layout(src, "loader.x_var is missing"))?;
    let mut xs = Vec::new();
    for v in xvars.names() {
        let m = mat.matrix(v)?;
        xs.push(if loader.transpose { m.reversed_axes().as_standard_layout().to_owned() } else { m });
    }
    let mut x = vstack(xs, src)?;
    let mut labels: Option<Vec<i64>> = None;
    if let Some(yvars) = &loader.y_var {
        if loader.label_column.is_some() {
            return Err(layout(src, "loader gives both y_var and label_column"));
        }
        let mut y = Vec::new();
        for v in yvars.names() {
            let m = mat.matrix(v)?;
            if m.nrows() != 1 && m.ncols() != 1 {
                return Err(layout(src, format!("label variable `{v}` is {} x {}, expected a row or column vector", m.nrows(), m.ncols())));
            }
            y.extend(to_labels(m.iter().copied(), src)?);
        }
        labels = Some(y);
    }
    if let Some(c) = loader.label_column {
        if c == 0 || c > x.ncols() {
            return Err(layout(src, format!("label_column {c} outside 1..={}", x.ncols())));
        }
        let y = to_labels(x.column(c - 1).iter().copied(), src)?;
        let keep: Vec<usize> = (0..x.ncols()).filter(|&j| j != c - 1).collect();
        x = x.select(Axis(1), &keep);
        labels = Some(y);
    }
    if let Some(y) = &labels {
        if y.len() != x.nrows() {
            return Err(layout(src, format!("{} labels for {} samples", y.len(), x.nrows())));
        }
    }
    if let Some([a, b]) = loader.rows {
        if a == 0 || b < a || b > x.nrows() {
            return Err(layout(src, format!("rows [{a}, {b}] outside 1..={}", x.nrows())));
        }
        x = x.slice(s![a - 1..b, ..]).to_owned();
        labels = labels.map(|y| y[a - 1..b].to_vec());
    }
    if let Some(want) = loader.select_label {
        let y = labels.as_ref().ok_or_else(|| layout(src, "select_label needs labels"))?;
        let keep: Vec<usize> = (0..y.len()).filter(|&i| y[i] == want).collect();
        if keep.is_empty() {
            return Err(layout(src, format!("no sample has label {want}")));
        }
        x = x.select(Axis(0), &keep);
        labels = Some(vec![want; keep.len()]);
    }
    Ok((x, labels))
}

/// Natural ordering of file names: digit runs compare by value (`img9` < `img10`).
fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let (mut ia, mut ib) = (a.char_indices().peekable(), b.char_indices().peekable());
    loop {
        match (ia.peek().copied(), ib.peek().copied()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return std::cmp::Ordering::Less,
            (Some(_), None) => return std::cmp::Ordering::Greater,
            (Some((_, ca)), Some((_, cb))) if ca.is_ascii_digit() && cb.is_ascii_digit() => {
                let mut da = String::new();
                while let Some((_, c)) = ia.peek().copied().filter(|(_, c)| c.is_ascii_digit()) {
                    da.push(c);
                    ia.next();
                }
                let mut db = String::new();
                while let Some((_, c)) = ib.peek().copied().filter(|(_, c)| c.is_ascii_digit()) {
                    db.push(c);
                    ib.next();
                }
                let ta = da.trim_start_matches('0');
                let tb = db.trim_start_matches('0');
                let o = ta.len().cmp(&tb.len()).then_with(|| ta.cmp(tb));
                if o != std::cmp::Ordering::Equal {
                    return o;
                }
            }
            (Some((_, ca)), Some((_, cb))) => {
                if ca != cb {
                    return ca.cmp(&cb);
                }
                ia.next();
                ib.next();
            }
        }
    }
}

/// Largest zip member read into memory (guards against zip bombs).
const MAX_MEMBER_BYTES: u64 = 4 << 30;

/// Bytes of a zip member inflated before its header is checked.
const MEMBER_PEEK_BYTES: u64 = 64 << 10;

/// Loads an image collection from a zip (`teapot-zip` / `image-zip`).
///
/// Supported layouts (the real `teapotdata.zip` / `facedata.zip` layouts are unknown here):
/// 1. a zip holding a MATLAB v5 `.mat` file (the first one in name order, or `loader.member`):
///    X is `loader.x_var` if given, else the first numeric 2-D variable with one side equal to
///    `n_samples` and the other to `n_features`; it is transposed when it is stored
///    features x samples (or when `loader.transpose`). Struct fields (e.g. `Input.X`) are not
///    supported.
/// 2. a zip of image files (`.png`, `.jpg`/`.jpeg`, `.ppm`/`.pgm`/`.pnm`; optionally only those
///    under the `loader.member` prefix), one sample per image in natural file-name order
///    (`img9` before `img10`); each image becomes `x[i, (r * width + c) * channels + k]`
///    (row-major, channels interleaved, values 0..255 as stored). All images must share one
///    size; with `loader.image_shape = [h, w, ch]` the size must be `h x w` (or `w x h`) with
///    `ch` channels. Hidden files and `__MACOSX/` are ignored; other files are ignored too but
///    a zip with no usable member is an error.
///
/// No labels are produced (the returned labels are `None`).
pub fn parse_image_zip(data: &[u8], source: &str, loader: &Loader, n_samples: usize, n_features: usize) -> Result<(Array2<f64>, Option<Vec<i64>>), LoadError> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(data)).map_err(|e| layout(source, format!("not a readable zip archive: {e}")))?;
    let mut names: Vec<(usize, String)> = Vec::new();
    for i in 0..zip.len() {
        let f = zip.by_index(i).map_err(|e| layout(source, format!("zip member {i}: {e}")))?;
        if f.is_dir() {
            continue;
        }
        let name = match f.name() {
            Ok(n) => n.into_owned(),
            Err(e) => return Err(layout(source, format!("zip member {i}: bad name: {e}"))),
        };
        let base = name.rsplit('/').next().unwrap_or(&name);
        if name.starts_with("__MACOSX/") || base.starts_with('.') || base.eq_ignore_ascii_case("thumbs.db") {
            continue;
        }
        if let Some(m) = &loader.member {
            if !(name == *m || name.starts_with(m.as_str())) {
                continue;
            }
        }
        names.push((i, name));
    }
    names.sort_by(|a, b| natural_cmp(&a.1, &b.1));
    // A member is inflated only after its declared size, and for an image its header, were
    // checked, and never past the declared size: a zip bomb or a forged image costs the first
    // 64 KiB, not the 400 MB it would inflate to.
    let per_value = n_samples.saturating_mul(n_features) as u64;
    let mat_cap = per_value.saturating_mul(32).saturating_add(64 << 20).min(MAX_MEMBER_BYTES);
    // an encoded image takes at most ~6 bytes per value (ASCII PNM of 16-bit samples) plus its header
    let image_cap = (n_features as u64).saturating_mul(6).saturating_add(64 << 10).min(MAX_MEMBER_BYTES);
    let mut read_member = |i: usize, name: &str, cap: u64, peek: &dyn Fn(&[u8]) -> Result<(), LoadError>| -> Result<Vec<u8>, LoadError> {
        let f = zip.by_index(i).map_err(|e| layout(source, format!("zip member {name}: {e}")))?;
        let declared = f.size();
        if declared > cap {
            return Err(layout(
                source,
                format!("zip member {name} declares {declared} bytes uncompressed, more than the {cap} a data set of {n_samples} x {n_features} can need"),
            ));
        }
        // the declared size is only a hint: reserve at most 16 MiB up front (found by `just fuzz
        // images`: a forged header declaring 4 GiB - 1 bytes); `take` bounds what is inflated
        let mut inflate = f.take(declared + 1);
        let mut buf = Vec::with_capacity(declared.min(MEMBER_PEEK_BYTES) as usize);
        (&mut inflate).take(MEMBER_PEEK_BYTES).read_to_end(&mut buf).map_err(|e| layout(source, format!("zip member {name}: {e}")))?;
        peek(&buf)?;
        buf.reserve(declared.saturating_sub(buf.len() as u64).min(1 << 24) as usize);
        inflate.read_to_end(&mut buf).map_err(|e| layout(source, format!("zip member {name}: {e}")))?;
        if buf.len() as u64 > declared {
            return Err(layout(source, format!("zip member {name} inflates past its declared {declared} bytes")));
        }
        Ok(buf)
    };

    // Layout 1: a .mat file.
    if let Some((i, name)) = names.iter().find(|(_, n)| n.to_ascii_lowercase().ends_with(".mat")).cloned() {
        let msrc = format!("{source}:{name}");
        let mat = parse::mat::MatFile::parse(&read_member(i, &name, mat_cap, &|_| Ok(()))?, &msrc)?;
        if loader.x_var.is_some() {
            let (x, _) = parse_mat(&mat, &Loader { y_var: None, label_column: None, select_label: None, ..loader.clone() }, &msrc)?;
            return Ok((x, None));
        }
        let mut seen = Vec::new();
        for v in mat.names() {
            let Ok(m) = mat.matrix(&v) else { continue };
            seen.push(format!("{v} {}x{}", m.nrows(), m.ncols()));
            let (r, c) = (m.nrows(), m.ncols());
            let as_is = r == n_samples && c == n_features;
            let flipped = c == n_samples && r == n_features;
            if as_is && !(flipped && loader.transpose) {
                return Ok((m, None));
            }
            if flipped {
                return Ok((m.reversed_axes().as_standard_layout().to_owned(), None));
            }
        }
        return Err(layout(
            &msrc,
            format!(
                "no numeric variable is {n_samples} x {n_features} (or transposed); numeric variables: {}",
                if seen.is_empty() { "none".to_string() } else { seen.join(", ") }
            ),
        ));
    }

    // Layout 2: image files.
    let mut images: Vec<Image> = Vec::new();
    let mut first: Option<(String, usize, usize, usize)> = None;
    for (i, name) in &names {
        let is_image = Path::new(name)
            .extension()
            .map(|e| matches!(e.to_string_lossy().to_ascii_lowercase().as_str(), "pgm" | "ppm" | "pnm" | "png" | "jpg" | "jpeg"))
            .unwrap_or(false);
        if !is_image {
            continue;
        }
        let isrc = format!("{source}:{name}");
        let peek = |head: &[u8]| match image_header(name, head) {
            Some(dims) => check_image_dims(&isrc, dims, loader, n_features),
            None => Ok(()),
        };
        let bytes = read_member(*i, name, image_cap, &peek)?;
        let img = match decode_image(name, &bytes, &isrc) {
            Some(r) => r?,
            None => continue,
        };
        match &first {
            None => first = Some((name.clone(), img.height, img.width, img.channels)),
            Some((n0, h, w, c)) => {
                if (img.height, img.width, img.channels) != (*h, *w, *c) {
                    return Err(layout(&isrc, format!("image is {} x {} x {}, but {n0} is {h} x {w} x {c}", img.height, img.width, img.channels)));
                }
            }
        }
        images.push(img);
    }
    let Some((n0, h, w, c)) = first else {
        let listed: Vec<&str> = names.iter().take(10).map(|(_, n)| n.as_str()).collect();
        return Err(layout(
            source,
            format!(
                "no .mat file and no supported image (png, jpg, ppm, pgm) in the zip; members: {}",
                if listed.is_empty() { "none".to_string() } else { listed.join(", ") }
            ),
        ));
    };
    if let Some([eh, ew, ec]) = loader.image_shape {
        if !(c == ec && ((h, w) == (eh, ew) || (h, w) == (ew, eh))) {
            return Err(layout(source, format!("{n0} is {h} x {w} x {c}; the registry expects {eh} x {ew} x {ec}")));
        }
    }
    let d = h * w * c;
    let mut flat = Vec::with_capacity(images.len() * d);
    for img in &images {
        flat.extend_from_slice(&img.data);
    }
    let x = Array2::from_shape_vec((images.len(), d), flat).map_err(|e| layout(source, e.to_string()))?;
    Ok((x, None))
}

/// Writes `dir/X.npy` (float64, N x D, C order), `dir/y.npy` (int64, N) when the set has labels
/// and `dir/t.npy` (float64, N) when it has intrinsic coordinates; creates `dir` if needed.
pub fn export(dataset: &Dataset, dir: &Path) -> Result<(), LoadError> {
    use ndarray::Array1;
    std::fs::create_dir_all(dir).map_err(|cause| LoadError::Io { path: dir.to_path_buf(), cause })?;
    let npy_err = |path: &Path, e: ndarray_npy::WriteNpyError| LoadError::Npy { path: path.to_path_buf(), message: e.to_string() };
    let xp = dir.join("X.npy");
    let x = dataset.x.as_standard_layout();
    ndarray_npy::write_npy(&xp, &x).map_err(|e| npy_err(&xp, e))?;
    if let Some(l) = &dataset.labels {
        let yp = dir.join("y.npy");
        ndarray_npy::write_npy(&yp, &Array1::from(l.clone())).map_err(|e| npy_err(&yp, e))?;
    }
    if let Some(t) = &dataset.t {
        let tp = dir.join("t.npy");
        ndarray_npy::write_npy(&tp, &Array1::from(t.clone())).map_err(|e| npy_err(&tp, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forged_image_headers_are_refused_before_allocating() {
        // found by `just fuzz images` (CRCs are not checked in fuzzing builds): a PNG of 72 bytes
        // declaring 3 x 939524098 pixels; this one has valid CRCs
        let png = include_bytes!("../../tests/fixtures/forged_huge_header.png");
        let e = decode_png(png, "forged.png").unwrap_err().to_string();
        assert!(e.contains("forged.png") && e.contains("limit"), "{e}");
        let e = decode_pnm(b"P2 1000000000 1000000000 255 1 2 3", "forged.pgm").unwrap_err().to_string();
        assert!(e.contains("forged.pgm") && e.contains("limit"), "{e}");
        let e = decode_pnm(b"P2 10000 10000 255 1 2 3", "short.pgm").unwrap_err().to_string();
        assert!(e.contains("short.pgm") && e.contains("sample 3"), "{e}");
        // found by `just fuzz images`: a 485-byte JPEG declaring 32775 x 8201 pixels
        let jpg = include_bytes!("../../../../fuzz/corpus/images/timeout_jpeg_huge_header");
        let e = decode_jpeg(jpg, "forged.jpg").unwrap_err().to_string();
        assert!(e.contains("forged.jpg") && (e.contains("limit") || e.contains("can encode")), "{e}");
        // an honest image still decodes
        let ok = decode_pnm(b"P2 2 1 255 7 9", "ok.pgm").unwrap();
        assert_eq!(ok.data, vec![7.0, 9.0]);
    }

    #[test]
    fn natural_order() {
        let mut v = vec!["img10.png", "img9.png", "img1.png", "a.png", "img09b.png"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, vec!["a.png", "img1.png", "img9.png", "img09b.png", "img10.png"]);
    }

    #[test]
    fn pnm_decode_and_errors() {
        let p6 = [b"P6\n# c\n2 1\n255\n".as_slice(), &[1, 2, 3, 4, 5, 6]].concat();
        let im = decode_pnm(&p6, "a.ppm").unwrap();
        assert_eq!((im.height, im.width, im.channels), (1, 2, 3));
        assert_eq!(im.data, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let p2 = b"P2 2 2 15 0 1 2 15";
        assert_eq!(decode_pnm(p2, "a.pgm").unwrap().data, vec![0.0, 1.0, 2.0, 15.0]);
        assert!(decode_pnm(&p6[..p6.len() - 1], "t.ppm").unwrap_err().to_string().contains("truncated"));
        assert!(decode_pnm(b"P9 1 1 1 0", "x.ppm").is_err());
        assert!(decode_pnm(b"", "x.ppm").is_err());
        assert!(decode_pnm(b"P5 1", "x.pgm").is_err());
    }

    fn zip_of(members: &[(&str, Vec<u8>)]) -> Vec<u8> {
        use std::io::Write;
        let mut buf = std::io::Cursor::new(Vec::new());
        let mut z = zip::ZipWriter::new(&mut buf);
        for (name, bytes) in members {
            z.start_file(*name, zip::write::SimpleFileOptions::default()).unwrap();
            z.write_all(bytes).unwrap();
        }
        z.finish().unwrap();
        buf.into_inner()
    }

    /// Issue 29: a member's declared size and an image's header are checked before the member is
    /// inflated whole (a zip member used to be inflated to 400 MB before its header was read).
    #[test]
    fn zip_members_are_checked_before_they_are_inflated() {
        // 4 MB of zeros behind a PGM header: compressed to a few KB, declared 4 MB uncompressed,
        // more than 2 images of 72 values can need
        let big = [b"P5 2000 2000 255\n".as_slice(), &vec![0u8; 4_000_000]].concat();
        let e = parse_image_zip(&zip_of(&[("a.pgm", big)]), "bomb.zip", &Loader::default(), 2, 72).unwrap_err().to_string();
        assert!(e.contains("bomb.zip") && e.contains("declares 4000017 bytes uncompressed"), "{e}");
        // a header of another size than the data set's features, refused from its first bytes
        let odd = [b"P5 10 10 255\n".as_slice(), &[7u8; 100]].concat();
        let e = parse_image_zip(&zip_of(&[("b.pgm", odd)]), "odd.zip", &Loader::default(), 1, 72).unwrap_err().to_string();
        assert!(e.contains("odd.zip:b.pgm") && e.contains("header declares 10 x 10 x 1 = 100 values"), "{e}");
        // the headers the check reads
        assert_eq!(image_header("x.ppm", b"P6\n# c\n6 4\n255\n"), Some((4, 6, 3)));
        let png = include_bytes!("../../tests/fixtures/forged_huge_header.png");
        assert!(image_header("x.png", png).is_some_and(|(h, w, _)| h * w > MAX_IMAGE_BYTES / 3));
        // SOI, an APP0 segment, then SOF0: 8 bits, 8201 x 32775, 1 component
        let jpg = [0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0, 0, 0xff, 0xc0, 0x00, 0x0b, 0x08, 0x20, 0x09, 0x80, 0x07, 0x01, 0x01, 0x11, 0x00];
        assert_eq!(image_header("x.jpg", &jpg), Some((8201, 32775, 1)));
        // an honest image of the right size still loads
        let ok = [b"P5 3 2 255\n".as_slice(), &[1u8, 2, 3, 4, 5, 6]].concat();
        let (x, _) = parse_image_zip(&zip_of(&[("c.pgm", ok)]), "ok.zip", &Loader::default(), 1, 6).unwrap();
        assert_eq!(x.row(0).to_vec(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    }

    #[test]
    fn bad_zip_is_error() {
        let e = parse_image_zip(b"not a zip", "t.zip", &Loader::default(), 1, 1).unwrap_err();
        assert!(e.to_string().contains("t.zip"), "{e}");
    }
}
