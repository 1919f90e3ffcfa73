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
