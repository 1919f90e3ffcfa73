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
