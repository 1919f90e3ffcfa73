//! Perplexity-calibrated conditional affinities (SNE / t-SNE, ESL 001 eq. 1): for every point i a
//! Gaussian width `sigma_i` such that the entropy of `p_{.|i}` equals `ln u`.

use ndarray::{Array2, ArrayView2, Axis};
use rayon::prelude::*;

/// Accuracy of the perplexity calibration: `|H_i - ln u| <= PERPLEXITY_TOL` (nats).
pub const PERPLEXITY_TOL: f64 = 1e-9;

/// Conditional affinities with perplexity `u` (001 eq. 1): returns `P` with row `i` = `p_{.|i}`
/// (`p_{i|i} = 0`), the precisions `beta_i = 1 / (2 sigma_i^2)`, and `max_i |H_i - ln u|`.
///
/// `d2` holds the squared distances (N x N). Bisection on `beta_i` (doubling until bracketed),
/// on distances shifted by their row minimum for stability; up to 200 steps per point.
pub fn perplexity_affinities(d2: ArrayView2<f64>, perplexity: f64) -> (Array2<f64>, Vec<f64>, f64) {
    let n = d2.nrows();
    let target = perplexity.ln();
    let mut p = Array2::<f64>::zeros((n, n));
    let results: Vec<(f64, f64)> = p
        .axis_iter_mut(Axis(0))
        .into_par_iter()
        .enumerate()
        .map(|(i, mut row)| {
            let dmin = (0..n).filter(|&j| j != i).map(|j| d2[[i, j]]).fold(f64::INFINITY, f64::min);
            let s: Vec<f64> = (0..n).map(|j| if j == i { 0.0 } else { (d2[[i, j]] - dmin).max(0.0) }).collect();
            calibrate_row(&s, Some(i), target, row.as_slice_mut().expect("rows of a standard-layout matrix are contiguous"))
        })
        .collect();
    let betas = results.iter().map(|r| r.0).collect();
    let err = results.iter().map(|r| r.1).fold(0.0, f64::max);
    (p, betas, err)
}

/// One row's calibration: `row[j] = exp(-beta s_j) / sum_l exp(-beta s_l)` (entry `skip`, the
/// point itself, held at 0) with `beta` found by bisection (doubling until bracketed, up to 200
/// steps) so the entropy `ln z + beta sum_j row_j s_j` equals `target`; `s` are the squared
/// distances shifted by their minimum. Returns `beta` and `|H - target|`.
fn calibrate_row(s: &[f64], skip: Option<usize>, target: f64, row: &mut [f64]) -> (f64, f64) {
    let m = s.len();
    let mean = s.iter().sum::<f64>() / (m - usize::from(skip.is_some())) as f64;
    let mut beta = if mean > 0.0 { 1.0 / mean } else { 1.0 };
    let (mut lo, mut hi) = (0.0f64, f64::INFINITY);
    let mut err = f64::INFINITY;
    let entropy = |beta: f64, row: &mut [f64]| -> f64 {
        let mut z = 0.0;
        let mut sp = 0.0;
        for j in 0..m {
            let v = if Some(j) == skip { 0.0 } else { (-beta * s[j]).exp() };
            row[j] = v;
            z += v;
            sp += v * s[j];
        }
        for v in row.iter_mut() {
            *v /= z;
        }
        z.ln() + beta * sp / z
    };
    for _ in 0..200 {
        let h = entropy(beta, row);
        let diff = h - target;
        err = diff.abs();
        if err <= PERPLEXITY_TOL {
            break;
        }
        if diff > 0.0 {
            lo = beta;
            beta = if hi.is_infinite() { 2.0 * beta } else { 0.5 * (beta + hi) };
        } else {
            hi = beta;
            beta = 0.5 * (lo + beta);
        }
    }
    (beta, err)
}

/// Conditional affinities of perplexity `u` over each point's k nearest neighbours only (the
/// sparse P of Barnes-Hut and FFT t-SNE, k = min(N - 1, 3u) as scikit-learn and openTSNE take):
/// row i of the result holds `p_{j|i}` for `j` = `knn.indices[[i, r]]`, `r = 0..k`. Returns the
/// rows (in neighbour order), the precisions and `max_i |H_i - ln u|`.
pub fn perplexity_affinities_knn(knn: &crate::neighbours::Knn, perplexity: f64) -> (Array2<f64>, Vec<f64>, f64) {
    let (n, k) = knn.indices.dim();
    let target = perplexity.ln();
    let mut p = Array2::<f64>::zeros((n, k));
    let results: Vec<(f64, f64)> = p
        .axis_iter_mut(Axis(0))
        .into_par_iter()
        .enumerate()
        .map(|(i, mut row)| {
            let d = knn.sq_dists.row(i);
            let dmin = d.iter().copied().fold(f64::INFINITY, f64::min);
            let s: Vec<f64> = d.iter().map(|&v| (v - dmin).max(0.0)).collect();
            calibrate_row(&s, None, target, row.as_slice_mut().expect("rows of a standard-layout matrix are contiguous"))
        })
        .collect();
    let betas = results.iter().map(|r| r.0).collect();
    let err = results.iter().map(|r| r.1).fold(0.0, f64::max);
    (p, betas, err)
}
