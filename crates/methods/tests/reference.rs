//! KPCA, LE and LLE against scikit-learn / numpy fixtures (`fixtures/make_fixtures.py`), and
//! closed-form checks of LE on path and ring graphs.

use ndarray::{Array1, Array2, ArrayView2};
use ndarray_npy::read_npy;
use structdr_methods::spectral::le::auto_t;
use structdr_methods::{lookup, Fitted, ParamMap, ParamValue};
use structdr_numerics::neighbours::{knn, symmetrised_edges};

fn fixture(name: &str) -> Array2<f64> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    read_npy(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn params(kv: &[(&str, ParamValue)]) -> ParamMap {
    kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

fn fit(method: &str, kv: &[(&str, ParamValue)], x: ArrayView2<f64>) -> Fitted {
    let (_, m) = lookup(method).unwrap().instantiate(&params(kv)).unwrap();
    m.fit(x, 0).unwrap()
}

/// Largest entry-wise difference between the columns of `a` and `b`, each column of `a` flipped to
/// the sign that matches `b` best.
fn max_diff_up_to_sign(a: &Array2<f64>, b: &Array2<f64>) -> f64 {
    assert_eq!(a.dim(), b.dim());
    let mut worst = 0.0f64;
    for c in 0..a.ncols() {
        let s = a.column(c).dot(&b.column(c)).signum();
        let d = a.column(c).iter().zip(b.column(c).iter()).map(|(u, v)| (s * u - v).abs()).fold(0.0, f64::max);
        worst = worst.max(d);
    }
    worst
}

fn int(v: i64) -> ParamValue {
    ParamValue::Int(v)
}
fn float(v: f64) -> ParamValue {
    ParamValue::Float(v)
}
fn str(v: &str) -> ParamValue {
    ParamValue::Str(v.into())
}

#[test]
fn kpca_matches_sklearn_kernel_pca_rbf() {
    let x = fixture("swiss.npy");
    for (b, file) in [(1.0, "kpca_b1.npy"), (0.5, "kpca_b0.5.npy")] {
        let y = fit("kpca", &[("dim", int(3)), ("bandwidth", float(b))], x.view()).into_embedding().unwrap();
        let err = max_diff_up_to_sign(&y, &fixture(file));
        println!("kpca bandwidth {b}: max |diff| vs sklearn = {err:.3e}");
        assert!(err < 1e-12, "bandwidth {b}: {err}");
    }
}

#[test]
fn le_graph_and_weights_match_the_reference_graph() {
    let x = fixture("swiss.npy");
    let reference = fixture("le_edges.npy");
    let edges = symmetrised_edges(&knn(x.view(), 10).unwrap());
    assert_eq!(edges.len(), reference.nrows());
    let t = auto_t(&edges);
    for (e, r) in edges.iter().zip(reference.rows()) {
        assert_eq!((e.0, e.1), (r[0] as usize, r[1] as usize));
        assert!(((-e.2 / t).exp() - r[2]).abs() < 1e-14);
    }
    let f = fit("le", &[("k", int(10))], x.view());
    let g = f.graph.unwrap();
    for (e, r) in g.edges.iter().zip(reference.rows()) {
        assert!((e.2 - r[2]).abs() < 1e-14);
    }
}

#[test]
fn le_matches_sklearn_spectral_embedding_and_dense_generalised_eigh() {
    let x = fixture("swiss.npy");
    let y = fit("le", &[("dim", int(2)), ("k", int(10)), ("weights", str("heat")), ("t", float(0.0))], x.view()).into_embedding().unwrap();
    let e1 = max_diff_up_to_sign(&y, &fixture("le_heat.npy"));
    let e2 = max_diff_up_to_sign(&y, &fixture("le_heat_dense.npy"));
    println!(
        "le heat: max |diff| vs sklearn spectral_embedding = {e1:.3e}, vs scipy eigh(L, D) = {e2:.3e} (max |entry| {:.3})",
        y.iter().fold(0.0f64, |a, v| a.max(v.abs()))
    );
    assert!(e1 < 1e-12 && e2 < 1e-12, "{e1} {e2}");
    let yb = fit("le", &[("dim", int(2)), ("k", int(10)), ("weights", str("binary"))], x.view()).into_embedding().unwrap();
    let e3 = max_diff_up_to_sign(&yb, &fixture("le_binary.npy"));
    println!("le binary: max |diff| vs sklearn = {e3:.3e}");
    assert!(e3 < 1e-12, "{e3}");
    // t = inf is binary
    let yi = fit("le", &[("dim", int(2)), ("k", int(10)), ("t", float(f64::INFINITY))], x.view()).into_embedding().unwrap();
    assert!(max_diff_up_to_sign(&yi, &yb) < 1e-12);
}

#[test]
fn lle_matches_sklearn_standard_dense() {
    let x = fixture("swiss.npy");
    for (reg, file) in [(1e-3, "lle.npy"), (0.1, "lle_reg0.1.npy")] {
        let y = fit("lle", &[("dim", int(2)), ("k", int(10)), ("reg", float(reg))], x.view()).into_embedding().unwrap();
        let err = max_diff_up_to_sign(&y, &fixture(file));
        println!("lle reg {reg}: max |diff| vs sklearn = {err:.3e} (max |entry| {:.3})", y.iter().fold(0.0f64, |a, v| a.max(v.abs())));
        assert!(err < 1e-8, "reg {reg}: {err}");
    }
}

/// Points 0, 1, ..., N-1 on a line with k = 1 give the path graph; with binary weights the
/// generalised eigenvectors of `L v = lambda D v` are `v_m(i) ∝ cos(pi m i / (N - 1))`,
/// `lambda_m = 1 - cos(pi m / (N - 1))`.
#[test]
fn le_on_a_path_gives_the_cosine_eigenvectors() {
    let n = 30;
    let x = Array2::from_shape_fn((n, 1), |(i, _)| i as f64);
    let f = fit("le", &[("dim", int(3)), ("k", int(1)), ("weights", str("binary"))], x.view());
    let deg: Array1<f64> = (0..n).map(|i| if i == 0 || i == n - 1 { 1.0 } else { 2.0 }).collect();
    let mut expected = Array2::zeros((n, 3));
    for m in 1..=3 {
        let v: Array1<f64> = (0..n).map(|i| (std::f64::consts::PI * (m * i) as f64 / (n - 1) as f64).cos()).collect();
        let norm = (&v * &v * &deg).sum().sqrt();
        expected.column_mut(m - 1).assign(&(v / norm));
    }
    let err = max_diff_up_to_sign(f.embedding().unwrap(), &expected);
    println!("le path: max |diff| vs cosines = {err:.3e}");
    assert!(err < 1e-10, "{err}");
    // Rayleigh quotients v^T L v / v^T D v of the returned columns are the eigenvalues
    for m in 1..=3 {
        let v = f.embedding().unwrap().column(m - 1);
        let lv: f64 = (0..n - 1).map(|i| (v[i + 1] - v[i]).powi(2)).sum();
        let dv: f64 = (0..n).map(|i| deg[i] * v[i] * v[i]).sum();
        let want = 1.0 - (std::f64::consts::PI * m as f64 / (n - 1) as f64).cos();
        assert!((lv / dv - want).abs() < 1e-12, "lambda_{}: {} vs {want}", m + 1, lv / dv);
    }
}

/// N points equally spaced on a circle with k = 2 give the ring graph; eigenvectors 2 and 3 span
/// `{cos(2 pi i / N), sin(2 pi i / N)}` (a degenerate pair, so compare subspaces).
#[test]
fn le_on_a_ring_spans_the_first_fourier_pair() {
    let n = 40;
    let theta = |i: usize| 2.0 * std::f64::consts::PI * i as f64 / n as f64;
    let x = Array2::from_shape_fn((n, 2), |(i, j)| if j == 0 { theta(i).cos() } else { theta(i).sin() });
    for weights in ["binary", "heat"] {
        let y = fit("le", &[("dim", int(2)), ("k", int(2)), ("weights", str(weights))], x.view()).into_embedding().unwrap();
        // Orthonormal basis of the Fourier pair; the projection residual of each column must vanish.
        let c: Array1<f64> = (0..n).map(|i| theta(i).cos()).collect();
        let s: Array1<f64> = (0..n).map(|i| theta(i).sin()).collect();
        let (c, s) = (&c / c.dot(&c).sqrt(), &s / s.dot(&s).sqrt());
        for col in y.columns() {
            let r = &col - &(&c * col.dot(&c)) - &(&s * col.dot(&s));
            let rel = r.dot(&r).sqrt() / col.dot(&col).sqrt();
            assert!(rel < 1e-9, "{weights}: residual {rel}");
        }
    }
}
