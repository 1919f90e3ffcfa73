//! Shared test helpers (compiled for tests only).

/// Asserts that `eval(w, grad)` (returning the objective and filling its gradient) matches central
/// differences `(f(w + h e_k) - f(w - h e_k)) / 2h` in every coordinate, to `rtol * max(1, |g_k|)`.
pub(crate) fn assert_gradient_matches_central_differences(mut eval: impl FnMut(&[f64], &mut [f64]) -> f64, w: &[f64], h: f64, rtol: f64) {
    let mut g = vec![0.0; w.len()];
    eval(w, &mut g);
    let mut scratch = vec![0.0; w.len()];
    for k in 0..w.len() {
        let mut wp = w.to_vec();
        wp[k] += h;
        let fp = eval(&wp, &mut scratch);
        wp[k] -= 2.0 * h;
        let fm = eval(&wp, &mut scratch);
        let fd = (fp - fm) / (2.0 * h);
        assert!((fd - g[k]).abs() < rtol * g[k].abs().max(1.0), "coordinate {k}: central difference {fd} vs gradient {}", g[k]);
    }
}

/// Spearman's rank correlation of two samples without ties (ranks by `total_cmp`): how well a
/// 1-D embedding orders points along their known manifold coordinate.
pub(crate) fn spearman(a: &[f64], b: &[f64]) -> f64 {
    let ranks = |v: &[f64]| {
        let mut idx: Vec<usize> = (0..v.len()).collect();
        idx.sort_by(|&i, &j| v[i].total_cmp(&v[j]));
        let mut r = vec![0.0; v.len()];
        for (k, &i) in idx.iter().enumerate() {
            r[i] = k as f64;
        }
        r
    };
    let (ra, rb) = (ranks(a), ranks(b));
    let m = (a.len() as f64 - 1.0) / 2.0;
    let cov: f64 = ra.iter().zip(&rb).map(|(x, y)| (x - m) * (y - m)).sum();
    let var: f64 = ra.iter().map(|x| (x - m) * (x - m)).sum();
    cov / var
}

/// Three clusters in the first 3 features (sample `i` in cluster `i % 3`, at 3 on its own feature,
/// 0 on the others, plus uniform noise of half-width 0.3) and `noise` uniform features in [-1, 1):
/// the feature-selection tests' data, where the informative features are known. Returns the data
/// and the cluster labels.
pub(crate) fn three_clusters(n: usize, noise: usize, seed: u64) -> (ndarray::Array2<f64>, Vec<usize>) {
    use rand::{Rng, SeedableRng};
    let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    let labels: Vec<usize> = (0..n).map(|i| i % 3).collect();
    let x = ndarray::Array2::from_shape_fn((n, 3 + noise), |(i, j)| {
        if j < 3 {
            (if labels[i] == j { 3.0 } else { 0.0 }) + 0.3 * r.gen_range(-1.0..1.0)
        } else {
            r.gen_range(-1.0..1.0)
        }
    });
    (x, labels)
}
