//! Euclidean projections onto the sets the methods' constraints define: the scaled simplex and
//! the capped simplex (FSL's W rows and theta).

use ndarray::{Array1, ArrayView1};

/// Euclidean projection of `v` onto the scaled simplex `{w : sum w = z, w >= 0}`, in place
/// (Duchi, Shalev-Shwartz, Singer & Chandra 2008, Fig. 1): sort `u` descending,
/// `rho = max{j : u_j - (sum_{i<=j} u_i - z)/j > 0}`, `tau = (sum_{i<=rho} u_i - z)/rho`,
/// `w = max(v - tau, 0)`. O(n log n). `z > 0`.
pub fn project_simplex(v: &mut [f64], z: f64) {
    let n = v.len();
    if n == 0 {
        return;
    }
    let mut u: Vec<f64> = v.to_vec();
    u.sort_unstable_by(|a, b| b.total_cmp(a));
    let (mut cum, mut tau) = (0.0, 0.0);
    for (j, &uj) in u.iter().enumerate() {
        cum += uj;
        let t = (cum - z) / (j + 1) as f64;
        if uj - t > 0.0 {
            tau = t;
        }
    }
    for x in v.iter_mut() {
        *x = (*x - tau).max(0.0);
    }
}

/// Euclidean projection onto `Theta = {theta : sum theta = b, 0 <= theta_r <= 1}` (problem 35):
/// by Prop. 5 / eq. (36) `theta_r(tau) = clip(mu_r - tau, 0, 1)` with `tau` the root of the
/// non-increasing piecewise-linear `sum_r theta_r(tau) = b`, bracketed by
/// `[min mu - 1, max mu]` and found by bisection; the final `tau` is solved exactly on the
/// active set the bisection identified. Requires `0 <= b <= M`.
pub fn project_capped_simplex(mu: ArrayView1<f64>, b: f64) -> Array1<f64> {
    let m = mu.len();
    assert!(m > 0 && b >= 0.0 && b <= m as f64, "project_capped_simplex: need 0 <= b <= M");
    let sum_at = |tau: f64| mu.iter().map(|&x| (x - tau).clamp(0.0, 1.0)).sum::<f64>();
    let mut lo = mu.iter().copied().fold(f64::INFINITY, f64::min) - 1.0; // sum = M >= b
    let mut hi = mu.iter().copied().fold(f64::NEG_INFINITY, f64::max); // sum = 0 <= b
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if sum_at(mid) > b {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    // Exact tau on the active set at the bracket's midpoint: free r have mu_r - 1 < tau < mu_r.
    let mid = 0.5 * (lo + hi);
    let (mut free_sum, mut n_free, mut n_one) = (0.0, 0usize, 0usize);
    for &x in mu.iter() {
        if x - mid >= 1.0 {
            n_one += 1;
        } else if x - mid > 0.0 {
            free_sum += x;
            n_free += 1;
        }
    }
    let tau = if n_free > 0 { (free_sum + n_one as f64 - b) / n_free as f64 } else { mid };
    let tau = if tau >= lo && tau <= hi { tau } else { mid };
    mu.mapv(|x| (x - tau).clamp(0.0, 1.0))
}
