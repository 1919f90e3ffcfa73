//! Loading tests.
//!
//! Part 1 (real data): every mirrored registry set is loaded from the shared mirror
//! (`$STRUCTDR_MIRROR`, else `shared/datasets` or `../shared/datasets` found walking up from the
//! crate directory) into a temporary cache, and checked against facts from
//! `shared/datasets/MANIFEST.toml` (shape, class counts) and the first row as read independently
//! with scipy. Skipped with a message when the mirror is absent.
//!
//! Part 2 (synthetic files of the same layouts): the `.mat` loader options, the teapot / image
//! zip loader (zip of PPM / PNG images, zip of a `.mat`), shape checks and `export`.

use ndarray::Array2;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use structdr_datasets::download::{FetchOptions, Mirror};
use structdr_datasets::load::{export, load, load_entry, LoadError};
use structdr_datasets::registry::{Lock, Registry};
use structdr_datasets::Dataset;

// ---------------------------------------------------------------------------------------------
// Part 1: the shared mirror.

fn find_mirror() -> Option<PathBuf> {
    if let Some(m) = std::env::var_os("STRUCTDR_MIRROR") {
        let p = PathBuf::from(m);
        if p.join("MANIFEST.toml").is_file() {
            return Some(p);
        }
    }
    let start = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for dir in start.ancestors() {
        for cand in [dir.join("shared/datasets"), dir.join("../shared/datasets")] {
            if cand.join("MANIFEST.toml").is_file() {
                return Some(cand);
            }
        }
    }
    None
}

/// Options reading from the mirror into a fresh temporary cache, never touching the network.
fn mirror_opts() -> Option<(FetchOptions, tempfile::TempDir)> {
    let Some(m) = find_mirror() else {
        eprintln!("SKIP: shared/datasets mirror not found (set STRUCTDR_MIRROR); real-data tests skipped");
        return None;
    };
    let cache = tempfile::tempdir().ok()?;
    let o = FetchOptions {
        cache_dir: cache.path().to_path_buf(),
        mirror: Some(Mirror::Dir(m)),
        retries: 0,
        timeout: Duration::from_secs(5),
        backoff: Duration::from_millis(10),
        canonical: false,
        quiet: true,
        ..FetchOptions::default()
    };
    Some((o, cache))
}

fn class_counts(d: &Dataset) -> BTreeMap<i64, usize> {
    let mut m = BTreeMap::new();
    for &l in d.labels.as_ref().expect("labels") {
        *m.entry(l).or_insert(0) += 1;
    }
    m
}

struct Facts {
    name: &'static str,
    shape: (usize, usize),
    /// (first label, counts in label order); None = unlabelled.
    labels: Option<(i64, &'static [(i64, usize)])>,
    row0_sum: f64,
    /// The first three non-zero entries of row 0: (0-based column, value).
    row0_nz: [(usize, f64); 3],
}

fn check(d: &Dataset, f: &Facts) {
    assert_eq!(d.name, f.name);
    assert_eq!(d.x.dim(), f.shape, "{}: shape", f.name);
    match f.labels {
        Some((first, counts)) => {
            let l = d.labels.as_ref().expect("labels");
            assert_eq!(l[0], first, "{}: first label", f.name);
            let want: BTreeMap<i64, usize> = counts.iter().copied().collect();
            assert_eq!(class_counts(d), want, "{}: class counts", f.name);
            assert_eq!(d.n_classes(), counts.len());
        }
        None => assert!(d.labels.is_none(), "{}: unlabelled", f.name),
    }
    let row0 = d.x.row(0);
    let sum: f64 = row0.sum();
    assert!((sum - f.row0_sum).abs() <= 1e-6 * (1.0 + f.row0_sum.abs()), "{}: row0 sum {sum} vs {}", f.name, f.row0_sum);
    let nz: Vec<(usize, f64)> = row0.iter().enumerate().filter(|(_, v)| **v != 0.0).map(|(j, v)| (j, *v)).take(3).collect();
    for (k, (j, v)) in f.row0_nz.iter().enumerate() {
        assert_eq!(nz[k].0, *j, "{}: row0 nonzero #{k} column", f.name);
        assert!((nz[k].1 - v).abs() <= 1e-9 * (1.0 + v.abs()), "{}: row0[{j}] = {} vs {v}", f.name, nz[k].1);
    }
    assert_eq!(d.checksum.len(), 64, "{}: checksum", f.name);
    assert!(d.x.iter().all(|v| v.is_finite()), "{}: finite", f.name);
}

const EVEN_26_60: [(i64, usize); 26] = {
    let mut a = [(0i64, 60usize); 26];
    let mut i = 0;
    while i < 26 {
        a[i] = (i as i64 + 1, 60);
        i += 1;
    }
    a
};
const EVEN_20_72: [(i64, usize); 20] = {
    let mut a = [(0i64, 72usize); 20];
    let mut i = 0;
    while i < 20 {
        a[i] = (i as i64 + 1, 72);
        i += 1;
    }
    a
};
const EVEN_10_1100: [(i64, usize); 10] = {
    let mut a = [(0i64, 1100usize); 10];
    let mut i = 0;
    while i < 10 {
        a[i] = (i as i64 + 1, 1100);
        i += 1;
    }
    a
};
const EVEN_68_42: [(i64, usize); 68] = {
    let mut a = [(0i64, 42usize); 68];
    let mut i = 0;
    while i < 68 {
        a[i] = (i as i64 + 1, 42);
        i += 1;
    }
    a
};
const LETTER_T: [usize; 26] =
    [195, 199, 182, 207, 203, 210, 226, 196, 188, 172, 167, 201, 185, 178, 179, 206, 189, 190, 185, 197, 207, 183, 176, 204, 184, 191];

fn facts() -> Vec<Facts> {
    vec![
        Facts {
            name: "iris",
            shape: (150, 4),
            labels: Some((1, &[(1, 50), (2, 50), (3, 50)])),
            row0_sum: -2.08663,
            row0_nz: [(0, -0.555556), (1, 0.25), (2, -0.864407)],
        },
        Facts {
            name: "vehicle",
            shape: (846, 18),
            labels: Some((4, &[(1, 212), (2, 217), (3, 218), (4, 199)])),
            row0_sum: -4.6476027,
            row0_nz: [(0, -0.0434783), (1, 0.153846), (2, 0.194444)],
        },
        Facts {
            name: "pendigits.t",
            shape: (3498, 16),
            labels: Some((8, &[(0, 363), (1, 364), (2, 364), (3, 336), (4, 364), (5, 335), (6, 336), (7, 364), (8, 336), (9, 336)])),
            row0_sum: 895.0,
            row0_nz: [(0, 88.0), (1, 92.0), (2, 2.0)],
        },
        Facts {
            name: "usps.t",
            shape: (2007, 256),
            labels: Some((10, &[(1, 359), (2, 264), (3, 198), (4, 166), (5, 200), (6, 160), (7, 170), (8, 147), (9, 166), (10, 177)])),
            row0_sum: -119.183377,
            row0_nz: [(0, -0.999999), (1, -0.999928), (2, -0.997885)],
        },
        Facts {
            name: "coil20",
            shape: (1440, 1024),
            labels: Some((1, &EVEN_20_72)),
            row0_sum: 361.40661764705885,
            row0_nz: [(0, 4.0 / 255.0), (1, 4.0 / 255.0), (2, 4.0 / 255.0)],
        },
        Facts { name: "isolet", shape: (1560, 617), labels: Some((1, &EVEN_26_60)), row0_sum: 27.464, row0_nz: [(0, -0.4394), (1, -0.093), (2, 0.1718)] },
        Facts {
            name: "tox_171",
            shape: (171, 5748),
            labels: Some((1, &[(1, 45), (2, 45), (3, 39), (4, 42)])),
            row0_sum: 5584322.27,
            row0_nz: [(0, 373.65), (1, 368.79), (2, 1550.87)],
        },
        Facts { name: "usps_roweis", shape: (11000, 256), labels: Some((1, &EVEN_10_1100)), row0_sum: 10937.0, row0_nz: [(13, 33.0), (14, 121.0), (15, 68.0)] },
        Facts { name: "usps1", shape: (1100, 256), labels: Some((1, &[(1, 1100)])), row0_sum: 10937.0, row0_nz: [(13, 33.0), (14, 121.0), (15, 68.0)] },
        Facts {
            name: "usps_9298",
            shape: (9298, 256),
            labels: Some((7, &[(1, 1553), (2, 1269), (3, 929), (4, 824), (5, 852), (6, 716), (7, 834), (8, 792), (9, 708), (10, 821)])),
            row0_sum: 21990.0,
            row0_nz: [(5, 1.0), (6, 18.0), (7, 77.0)],
        },
        Facts {
            name: "usps_9298_train",
            shape: (7291, 256),
            labels: Some((7, &[(1, 1194), (2, 1005), (3, 731), (4, 658), (5, 652), (6, 556), (7, 664), (8, 645), (9, 542), (10, 644)])),
            row0_sum: 21990.0,
            row0_nz: [(5, 1.0), (6, 18.0), (7, 77.0)],
        },
        Facts { name: "pie_pose27", shape: (2856, 1024), labels: Some((1, &EVEN_68_42)), row0_sum: 60407.0, row0_nz: [(110, 1.0), (140, 2.0), (141, 3.0)] },
        Facts {
            name: "2moons",
            shape: (400, 2),
            labels: Some((1, &[(-1, 189), (1, 211)])),
            row0_sum: -1.523349301115297,
            row0_nz: [(0, -1.7737746559626784), (1, 0.25042535484738143), (1, 0.25042535484738143)],
        },
        Facts { name: "tree_300", shape: (304, 2), labels: None, row0_sum: 0.9679, row0_nz: [(0, 0.2638), (1, 0.7041), (1, 0.7041)] },
    ]
}

#[test]
fn mirrored_sets_match_manifest_facts() {
    let Some((o, _cache)) = mirror_opts() else { return };
    for f in facts() {
        let t0 = Instant::now();
        let d = load(f.name, &o).unwrap_or_else(|e| panic!("{}: {e}", f.name));
        // 2moons and tree_300 have only two columns (their third "non-zero" entry is unused).
        if f.shape.1 == 2 {
            check_two(&d, &f);
        } else {
            check(&d, &f);
        }
        eprintln!("{}: {:?} in {:.2} s", f.name, d.x.dim(), t0.elapsed().as_secs_f64());
    }
    // letter.t: class counts from MANIFEST.
    let d = load("letter.t", &o).expect("letter.t");
    assert_eq!(d.x.dim(), (5000, 16));
    assert_eq!(d.labels.as_ref().unwrap()[0], 17);
    let want: BTreeMap<i64, usize> = LETTER_T.iter().enumerate().map(|(i, &c)| (i as i64 + 1, c)).collect();
    assert_eq!(class_counts(&d), want);
    assert!((d.x[[0, 0]] - -0.466667).abs() < 1e-12);
    // Notes: stand-ins say so.
    assert!(load("isolet", &o).unwrap().note.unwrap().contains("1560 of the paper's 3119"));
    assert!(load("pie_pose27", &o).unwrap().note.unwrap().contains("3329"));
    assert_eq!(load("iris", &o).unwrap().note, None);
    // A second load is served from the cache and gives the same checksum.
    let a = load("iris", &o).unwrap();
    assert_eq!(a.checksum, "c03bd66fd6c48fb954d237fa0bf808ace2b9e0149bcba5fd1058d80fc117f92a");
}

fn check_two(d: &Dataset, f: &Facts) {
    assert_eq!(d.x.dim(), f.shape, "{}", f.name);
    assert!((d.x[[0, 0]] - f.row0_nz[0].1).abs() < 1e-12, "{}", f.name);
    assert!((d.x[[0, 1]] - f.row0_nz[1].1).abs() < 1e-12, "{}", f.name);
    assert!((d.x.row(0).sum() - f.row0_sum).abs() < 1e-12);
    match f.labels {
        Some((first, counts)) => {
            assert_eq!(d.labels.as_ref().unwrap()[0], first);
            assert_eq!(class_counts(d), counts.iter().copied().collect::<BTreeMap<_, _>>());
        }
        None => assert!(d.labels.is_none()),
    }
    if f.name == "2moons" {
        // Row 200 is the first row of xt.
        assert!((d.x[[200, 0]] - 1.84957759).abs() < 1e-8);
    }
}

#[test]
fn every_mirrored_registry_entry_loads() {
    let Some((o, _cache)) = mirror_opts() else { return };
    let reg = Registry::builtin();
    let mut n = 0;
    for e in reg.iter().filter(|e| e.mirrored && e.name != "fashion-mnist") {
        // load() checks n_samples / n_features / n_classes against the registry.
        let d = load_entry(e, &o).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        assert_eq!(d.x.nrows(), e.n_samples);
        n += 1;
    }
    assert!(n >= 23, "{n} mirrored entries loaded");
}

/// Fashion-MNIST: 4 files, 70000 x 784 (about 2 s in release).
#[test]
fn fashion_mnist_train_plus_test() {
    let Some((o, _cache)) = mirror_opts() else { return };
    let t0 = Instant::now();
    let d = load("fashion-mnist", &o).expect("fashion-mnist");
    assert_eq!(d.x.dim(), (70000, 784));
    let want: BTreeMap<i64, usize> = (0..10).map(|k| (k, 7000)).collect();
    assert_eq!(class_counts(&d), want);
    let l = d.labels.as_ref().unwrap();
    assert_eq!((l[0], l[60000]), (9, 9));
    assert_eq!(d.x.row(0).sum(), 76247.0);
    assert_eq!(d.x.row(60000).sum(), 33456.0);
    assert_eq!((d.x[[0, 96]], d.x[[0, 99]], d.x[[0, 100]]), (1.0, 13.0, 73.0));
    assert_eq!(d.x.sum(), 4004583251.0);
    // The checksum joins the raw (decompressed) hashes, identical for canonical and mirror bytes.
    let parts: Vec<&str> = d.checksum.split('+').collect();
    assert_eq!(parts.len(), 4);
    assert_eq!(parts[0], "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888");
    assert_eq!(parts[3], "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34");
    assert!(d.note.as_deref().unwrap_or("").contains("MNIST"));
    let secs = t0.elapsed().as_secs_f64();
    eprintln!("fashion-mnist loaded in {secs:.2} s");
}

// ---------------------------------------------------------------------------------------------
// Part 2: synthetic files of the same layouts.

fn dense(rows: usize, cols: usize, col_major: Vec<f64>) -> mat5::Matrix {
    mat5::Matrix::Dense(mat5::DenseMatrix { rows, cols, values: mat5::Values::F64(col_major) })
}

/// A MAT v5 file with the given variables (values column-major as MATLAB stores them).
fn mat_bytes(vars: Vec<(&str, mat5::Matrix)>) -> Vec<u8> {
    let f = mat5::MatFile {
        header_text: "MATLAB 5.0 MAT-file, structdr test".into(),
        arrays: vars.into_iter().map(|(n, m)| mat5::NamedArray { name: n.into(), matrix: m }).collect(),
    };
    f.write_bytes().expect("write mat")
}

/// Column-major values of a rows x cols matrix given by `f(i, j)`.
fn col_major(rows: usize, cols: usize, f: impl Fn(usize, usize) -> f64) -> Vec<f64> {
    let mut v = Vec::with_capacity(rows * cols);
    for j in 0..cols {
        for i in 0..rows {
            v.push(f(i, j));
        }
    }
    v
}

fn reg_entry(body: &str) -> Registry {
    let text = format!("schema_version = 1\n[[dataset]]\nname = \"s\"\npaper_name = \"S\"\ncitation = \"c\"\nlicence = \"l\"\n{body}");
    Registry::from_toml_str(&text, "synthetic").unwrap_or_else(|e| panic!("{e}"))
}

/// Options with `mirror` as mirror directory and a fresh cache.
fn local_opts(mirror: &Path, cache: &Path) -> FetchOptions {
    FetchOptions {
        cache_dir: cache.to_path_buf(),
        mirror: Some(Mirror::Dir(mirror.to_path_buf())),
        retries: 0,
        timeout: Duration::from_secs(5),
        backoff: Duration::from_millis(10),
        canonical: false,
        quiet: true,
        ..FetchOptions::default()
    }
}

fn put(dir: &Path, rel: &str, bytes: &[u8]) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

fn sha(b: &[u8]) -> String {
    structdr_datasets::sha256_hex(b)
}

#[test]
fn mat_loader_options() {
    let mirror = tempfile::tempdir().unwrap();
    // usps_9298 layout: 6 x 4, last column = label.
    let a = mat_bytes(vec![("usps_all", dense(6, 4, col_major(6, 4, |i, j| if j == 3 { (i % 3 + 1) as f64 } else { (10 * i + j) as f64 })))]);
    put(mirror.path(), "m/a.mat", &a);
    // Roweis layout: DAT 3 x 8 (features x samples), labels 1 x 8.
    let b = mat_bytes(vec![
        ("par", dense(1, 1, vec![0.0])),
        ("labels", dense(1, 8, vec![1., 1., 1., 2., 2., 2., 3., 3.])),
        ("DAT", dense(3, 8, col_major(3, 8, |i, j| (100 * j + i) as f64))),
    ]);
    put(mirror.path(), "m/b.mat", &b);
    // 2moons layout: x, xt stacked; y, yt column vectors.
    let c = mat_bytes(vec![
        ("x", dense(2, 2, vec![1., 2., 3., 4.])),
        ("y", dense(2, 1, vec![-1., 1.])),
        ("xt", dense(1, 2, vec![5., 6.])),
        ("yt", dense(1, 1, vec![1.])),
    ]);
    put(mirror.path(), "m/c.mat", &c);

    let cache = tempfile::tempdir().unwrap();
    let o = local_opts(mirror.path(), cache.path());
    let ha = sha(&a);

    // label_column + rows.
    let r = reg_entry(&format!(
        "format = \"mat-v5\"\nmirror_path = \"m/a.mat\"\nsha256 = \"{ha}\"\nn_samples = 4\nn_features = 3\nn_classes = 3\n\
         loader = {{ x_var = \"usps_all\", label_column = 4, rows = [2, 5] }}\nstand_in = \"rows 2..5\"\n"
    ));
    let d = load_entry(r.get("s").unwrap(), &o).expect("label_column + rows");
    assert_eq!(d.x.dim(), (4, 3));
    assert_eq!(d.x.row(0).to_vec(), vec![10.0, 11.0, 12.0]);
    assert_eq!(d.labels.as_ref().unwrap(), &vec![2, 3, 1, 2]);
    assert_eq!(d.checksum, ha);
    assert_eq!(d.note.as_deref(), Some("rows 2..5"));

    // Wrong registry shape: an error naming the field.
    let r = reg_entry(&format!(
        "format = \"mat-v5\"\nmirror_path = \"m/a.mat\"\nsha256 = \"{ha}\"\nn_samples = 6\nn_features = 3\nn_classes = 4\n\
         loader = {{ x_var = \"usps_all\", label_column = 4 }}\n"
    ));
    match load_entry(r.get("s").unwrap(), &o) {
        Err(LoadError::ShapeMismatch { what: "n_classes", expected: 4, actual: 3, .. }) => {}
        other => panic!("expected an n_classes mismatch, got {other:?}"),
    }
    let r = reg_entry(&format!(
        "format = \"mat-v5\"\nmirror_path = \"m/a.mat\"\nsha256 = \"{ha}\"\nn_samples = 6\nn_features = 4\nn_classes = 3\n\
         loader = {{ x_var = \"usps_all\", label_column = 4 }}\n"
    ));
    let e = load_entry(r.get("s").unwrap(), &o).unwrap_err();
    assert!(e.to_string().contains("n_features"), "{e}");
    // Rows beyond the matrix: an error, not a panic.
    let r = reg_entry(&format!(
        "format = \"mat-v5\"\nmirror_path = \"m/a.mat\"\nsha256 = \"{ha}\"\nn_samples = 6\nn_features = 3\nn_classes = 3\n\
         loader = {{ x_var = \"usps_all\", label_column = 4, rows = [1, 60] }}\n"
    ));
    assert!(load_entry(r.get("s").unwrap(), &o).unwrap_err().to_string().contains("rows"));
    // Missing variable: the parse error lists the variables.
    let r = reg_entry(&format!(
        "format = \"mat-v5\"\nmirror_path = \"m/a.mat\"\nsha256 = \"{ha}\"\nn_samples = 6\nn_features = 3\nn_classes = 3\n\
         loader = {{ x_var = \"nope\" }}\n"
    ));
    let e = load_entry(r.get("s").unwrap(), &o).unwrap_err().to_string();
    assert!(e.contains("nope") && e.contains("usps_all"), "{e}");

    // transpose + select_label (usps1 layout).
    let hb = sha(&b);
    let r = reg_entry(&format!(
        "format = \"mat-v5\"\nmirror_path = \"m/b.mat\"\nsha256 = \"{hb}\"\nn_samples = 3\nn_features = 3\nn_classes = 1\n\
         loader = {{ x_var = \"DAT\", y_var = \"labels\", transpose = true, select_label = 2 }}\n"
    ));
    let d = load_entry(r.get("s").unwrap(), &o).expect("transpose + select_label");
    assert_eq!(d.x.row(0).to_vec(), vec![300.0, 301.0, 302.0]);
    assert_eq!(d.x.row(2).to_vec(), vec![500.0, 501.0, 502.0]);
    assert_eq!(d.labels.unwrap(), vec![2, 2, 2]);

    // Stacked variables (2moons layout).
    let hc = sha(&c);
    let r = reg_entry(&format!(
        "format = \"mat-v5\"\nmirror_path = \"m/c.mat\"\nsha256 = \"{hc}\"\nn_samples = 3\nn_features = 2\nn_classes = 2\n\
         loader = {{ x_var = [\"x\", \"xt\"], y_var = [\"y\", \"yt\"] }}\n"
    ));
    let d = load_entry(r.get("s").unwrap(), &o).expect("stacked");
    assert_eq!(d.x, ndarray::array![[1.0, 3.0], [2.0, 4.0], [5.0, 6.0]]);
    assert_eq!(d.labels.unwrap(), vec![-1, 1, 1]);
}

/// Pixel value of synthetic image `i` at row `r`, column `c`, channel `k`.
fn px(i: usize, r: usize, c: usize, k: usize) -> u8 {
    ((i * 37 + r * 11 + c * 5 + k * 3) % 256) as u8
}

fn ppm(i: usize, h: usize, w: usize) -> Vec<u8> {
    let mut v = format!("P6\n# synthetic teapot {i}\n{w} {h}\n255\n").into_bytes();
    for r in 0..h {
        for c in 0..w {
            for k in 0..3 {
                v.push(px(i, r, c, k));
            }
        }
    }
    v
}

fn png_grey(i: usize, h: usize, w: usize) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w as u32, h as u32);
        enc.set_color(png::ColorType::Grayscale);
        enc.set_depth(png::BitDepth::Eight);
        let mut wr = enc.write_header().unwrap();
        let data: Vec<u8> = (0..h * w).map(|p| px(i, p / w, p % w, 0)).collect();
        wr.write_image_data(&data).unwrap();
    }
    out
}

fn zip_of(members: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut buf);
        let opt = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        z.add_directory("teapots/", opt).unwrap();
        for (name, bytes) in members {
            z.start_file(*name, opt).unwrap();
            z.write_all(bytes).unwrap();
        }
        z.finish().unwrap();
    }
    buf.into_inner()
}

#[test]
fn teapot_zip_of_ppm_images() {
    let (h, w) = (4, 6);
    // 11 images named so that lexicographic and natural order differ (img10 after img9).
    let mut members: Vec<(String, Vec<u8>)> = (1..=11).map(|i| (format!("teapots/img{i}.ppm"), ppm(i, h, w))).collect();
    members.push(("teapots/readme.txt".into(), b"synthetic".to_vec()));
    members.push(("__MACOSX/teapots/._img1.ppm".into(), b"junk".to_vec()));
    let refs: Vec<(&str, Vec<u8>)> = members.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    let zip_bytes = zip_of(&refs);
    let mirror = tempfile::tempdir().unwrap();
    put(mirror.path(), "images/teapotdata.zip", &zip_bytes);
    let cache = tempfile::tempdir().unwrap();
    let o = local_opts(mirror.path(), cache.path());
    // Same layout as the registry's teapots entry (no checksum: trust on first use).
    let r = reg_entry(&format!(
        "format = \"teapot-zip\"\nmirror_path = \"images/teapotdata.zip\"\nn_samples = 11\nn_features = {}\nn_classes = 0\n\
         loader = {{ image_shape = [{h}, {w}, 3] }}\n",
        h * w * 3
    ));
    let d = load_entry(r.get("s").unwrap(), &o).expect("teapot zip");
    assert_eq!(d.x.dim(), (11, h * w * 3));
    assert!(d.labels.is_none());
    for i in 0..11 {
        for (r_, c, k) in [(0, 0, 0), (1, 2, 1), (3, 5, 2)] {
            assert_eq!(d.x[[i, (r_ * w + c) * 3 + k]], f64::from(px(i + 1, r_, c, k)), "image {} px {r_},{c},{k}", i + 1);
        }
    }
    // The zip had no checksum: it was pinned on first use.
    let lock = Lock::read(&o.lock_path()).unwrap();
    assert_eq!(lock.get("s").unwrap().sha256, sha(&zip_bytes));
    assert_eq!(d.checksum, sha(&zip_bytes));

    // Registry image_shape disagreeing with the images: an error.
    let r = reg_entry(&format!(
        "format = \"image-zip\"\nmirror_path = \"images/teapotdata.zip\"\nn_samples = 11\nn_features = {}\nn_classes = 0\n\
         loader = {{ image_shape = [2, 12, 3] }}\n",
        h * w * 3
    ));
    let e = load_entry(r.get("s").unwrap(), &o).unwrap_err().to_string();
    assert!(e.contains("expects 2 x 12 x 3"), "{e}");

    // Images of different sizes: an error naming the file.
    let bad = zip_of(&[("a1.ppm", ppm(1, 4, 6)), ("a2.ppm", ppm(2, 6, 4))]);
    let e = structdr_datasets::load::parse_image_zip(&bad, "bad.zip", &Default::default(), 2, 72).unwrap_err().to_string();
    assert!(e.contains("a2.ppm"), "{e}");
    // A zip with nothing usable.
    let e = structdr_datasets::load::parse_image_zip(&zip_of(&[("x.txt", b"x".to_vec())]), "e.zip", &Default::default(), 1, 1).unwrap_err().to_string();
    assert!(e.contains("no .mat file and no supported image"), "{e}");
    // A truncated image inside the zip: an error, not a panic.
    let mut t = ppm(1, 4, 6);
    t.truncate(30);
    assert!(structdr_datasets::load::parse_image_zip(&zip_of(&[("t.ppm", t)]), "t.zip", &Default::default(), 1, 72).is_err());
}

#[test]
fn image_zip_of_png_images() {
    let (h, w) = (5, 3);
    let z = zip_of(&[("f/b.png", png_grey(2, h, w)), ("f/a.png", png_grey(1, h, w))]);
    let loader = structdr_datasets::registry::Loader { image_shape: Some([h, w, 1]), ..Default::default() };
    let (x, y) = structdr_datasets::load::parse_image_zip(&z, "faces.zip", &loader, 2, h * w).expect("png zip");
    assert!(y.is_none());
    assert_eq!(x.dim(), (2, h * w));
    // a.png (image 1) first.
    assert_eq!(x[[0, 0]], f64::from(px(1, 0, 0, 0)));
    assert_eq!(x[[1, 2 * w + 1]], f64::from(px(2, 2, 1, 0)));
}

#[test]
fn teapot_zip_of_a_mat_file() {
    // 4 samples x 6 features stored features x samples (6 x 4), as MATLAB image matrices often are.
    let m = mat_bytes(vec![("note", dense(1, 1, vec![0.0])), ("Teapots", dense(6, 4, col_major(6, 4, |i, j| (10 * j + i) as f64)))]);
    let z = zip_of(&[("teapotdata/teapots.mat", m)]);
    let loader = structdr_datasets::registry::Loader::default();
    let (x, _) = structdr_datasets::load::parse_image_zip(&z, "teapotdata.zip", &loader, 4, 6).expect("mat in zip");
    assert_eq!(x.dim(), (4, 6));
    assert_eq!(x.row(1).to_vec(), vec![10.0, 11.0, 12.0, 13.0, 14.0, 15.0]);
    // With an explicit variable and orientation.
    let loader = structdr_datasets::registry::Loader {
        x_var: Some(structdr_datasets::registry::OneOrMany::One("Teapots".into())),
        transpose: true,
        ..Default::default()
    };
    let (x2, _) = structdr_datasets::load::parse_image_zip(&z, "teapotdata.zip", &loader, 4, 6).unwrap();
    assert_eq!(x, x2);
    // No variable of the right shape: the error lists the shapes found.
    let e = structdr_datasets::load::parse_image_zip(&z, "teapotdata.zip", &Default::default(), 5, 6).unwrap_err().to_string();
    assert!(e.contains("Teapots 6x4"), "{e}");
}

#[test]
fn export_writes_float64_and_int64_npy() {
    let dir = tempfile::tempdir().unwrap();
    let d = Dataset {
        name: "e".into(),
        x: ndarray::array![[1.5, -2.0, 3.0], [4.0, 5.0, 6.25]],
        labels: Some(vec![7, -1]),
        t: None,
        checksum: "0".repeat(64),
        note: None,
    };
    export(&d, &dir.path().join("out")).expect("export");
    let x: Array2<f64> = ndarray_npy::read_npy(dir.path().join("out/X.npy")).unwrap();
    assert_eq!(x, d.x);
    let y: ndarray::Array1<i64> = ndarray_npy::read_npy(dir.path().join("out/y.npy")).unwrap();
    assert_eq!(y.to_vec(), vec![7, -1]);
    let head = std::fs::read(dir.path().join("out/X.npy")).unwrap();
    assert!(String::from_utf8_lossy(&head[..128]).contains("'descr': '<f8'"));
    let head = std::fs::read(dir.path().join("out/y.npy")).unwrap();
    assert!(String::from_utf8_lossy(&head[..128]).contains("'descr': '<i8'"));
    assert!(!dir.path().join("out/t.npy").exists());
}

#[test]
fn unknown_name_lists_close_names() {
    let o = FetchOptions { canonical: false, quiet: true, ..FetchOptions::default() };
    let e = load("pendigit", &o).unwrap_err().to_string();
    assert!(e.contains("pendigits"), "{e}");
}
