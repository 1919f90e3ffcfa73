//! The smallest eigenpairs of `A = diag(d) + B B^T` (`d > 0`, `B` a tall D x r matrix, r < D)
//! without forming A: block Krylov on the exact Woodbury inverse, Rayleigh–Ritz with A (the
//! iteration is [`crate::krylov`]'s; this module supplies the operator).
//!
//! - `A V = d ∘ V + B (B^T V)` costs O(D r) per column.
//! - `A^{-1} = D^{-1} - D^{-1} B K^{-1} B^T D^{-1}`, `K = I_r + B^T D^{-1} B` (r x r, Cholesky),
//!   also O(D r) per column after the O(D r^2) set-up.
//!
//! The k smallest eigenvalues of A are the k largest of `A^{-1}`, so a block Krylov space
//! `span{A^{-1} V0, A^{-2} V0, ...}` (block size p > k, thick restart from the p lowest Ritz
//! vectors) converges to them fast; the inverse only builds the space, the Ritz pairs and the
//! residuals `||A y - theta y||` are taken with A itself, so round-off in the Woodbury formula
//! (large spreads of d) slows the iteration at worst and never biases the answer.
//!
//! Convergence: every one of the k wanted pairs has `||A y_j - theta_j y_j|| <= tol * scale +
//! 2 eps max(d)`, `scale = theta_k + ||B||_2^2` (the size of the part of A the bottom
//! eigenvectors see). The second term is the floor set by representing `d_i y_i` for a large
//! `d_i`; a dense solver's backward error, `eps ||A||` with `||A|| >= max(d)`, is no smaller. The
//! (k + 1)-th Ritz value is returned too, so callers can tell when the wanted subspace is not
//! determined (`theta_{k+1} - theta_k` at round-off: a cluster straddles the cut).
//!
//! Everything is sequential BLAS calls in a fixed order (no rayon), and the start block is
//! deterministic, so results are bit-identical for any rayon pool size.

use crate::krylov::{block_krylov_bottom, ResidualTest, ShiftInverted};
use crate::{eigh_top, ensure_finite, LinalgError, Result, SpdFactor};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis};

/// Settings of [`diag_lowrank_bottom`]: the block Krylov options, with the residual bound
/// `||A y - theta y|| <= tol * (theta_k + ||B||_2^2) + 2 eps max(d)`.
pub type LowRankEigOptions = crate::krylov::KrylovOptions;

/// What [`diag_lowrank_bottom`] returns (`scale = theta_k + ||B||_2^2`).
pub type LowRankEigen = crate::krylov::BottomEigenpairs;

/// `A = diag(d) + B B^T` as the two operators the iteration needs.
struct Operator<'a, 'b> {
    d: ArrayView1<'a, f64>,
    b: ArrayView2<'b, f64>,
    dinv: Array1<f64>,
    k: SpdFactor,
}

impl ShiftInverted for Operator<'_, '_> {
    fn apply(&self, v: ArrayView2<f64>) -> Array2<f64> {
        let mut out = self.b.dot(&self.b.t().dot(&v));
        out.zip_mut_with(&(&v * &self.d.view().insert_axis(Axis(1))), |o, &dv| *o += dv);
        out
    }

    fn apply_inv(&self, v: ArrayView2<f64>) -> Array2<f64> {
        let dv = &v * &self.dinv.view().insert_axis(Axis(1));
        let t = self.k.solve(self.b.t().dot(&dv).view());
        let corr = self.b.dot(&t) * self.dinv.view().insert_axis(Axis(1));
        dv - corr
    }
}

/// The `k` smallest eigenpairs of `diag(d) + B B^T` (module doc), `d` positive, `B` D x r.
///
/// `start` (D x j, any j) seeds the first block, e.g. the previous eigenvectors of a nearby
/// matrix; the remaining block columns are deterministic pseudo-random vectors.
///
/// Errors: shape mismatches, non-finite input, `d` not positive, `k + 1 > D`.
pub fn diag_lowrank_bottom(d: ArrayView1<f64>, b: ArrayView2<f64>, k: usize, start: Option<ArrayView2<f64>>, opts: &LowRankEigOptions) -> Result<LowRankEigen> {
    const WHAT: &str = "diag_lowrank_bottom";
    let n = d.len();
    if b.nrows() != n {
        return Err(LinalgError::Shape { what: WHAT, detail: format!("d has {n} entries, B has {} rows", b.nrows()) });
    }
    if k == 0 || k + 1 > n {
        return Err(LinalgError::Shape { what: WHAT, detail: format!("asked for {k} (+1) eigenpairs of a {n} x {n} matrix") });
    }
    if let Some(w) = start {
        if w.nrows() != n {
            return Err(LinalgError::Shape { what: WHAT, detail: format!("start block has {} rows, expected {n}", w.nrows()) });
        }
    }
    ensure_finite(&d, WHAT)?;
    ensure_finite(&b, WHAT)?;
    if d.iter().any(|&v| v <= 0.0) {
        return Err(LinalgError::NotPositiveDefinite { minor: 0, n });
    }
    let r = b.ncols();
    let d_max = d.iter().cloned().fold(0.0, f64::max);
    let dinv = d.mapv(|v| 1.0 / v);
    let bd = &b * &dinv.view().insert_axis(Axis(1));
    let mut kmat = b.t().dot(&bd);
    for i in 0..r {
        kmat[[i, i]] += 1.0;
    }
    let kmat = (&kmat + &kmat.t()) * 0.5;
    let b_norm2 = if r > 0 { eigh_top(b.t().dot(&b).view(), 1)?.values[0].max(0.0) } else { 0.0 };
    let op = Operator { d, b, dinv, k: SpdFactor::new(kmat, WHAT)? };
    // the floor: representing d_i y_i for a large d_i; a dense solver's backward error,
    // eps ||A|| with ||A|| >= max(d), is no smaller
    let test = ResidualTest { scale_offset: b_norm2, floor: 2.0 * f64::EPSILON * d_max };
    block_krylov_bottom(&op, n, k, start, opts, test, WHAT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eigh_bottom;
    use ndarray::s;
    use rand::{Rng, SeedableRng};

    fn case(n: usize, r: usize, spread: f64, seed: u64) -> (Array1<f64>, Array2<f64>) {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        let d = Array1::from_shape_fn(n, |_| 10f64.powf(rng.gen_range(0.0..spread)));
        let b = Array2::from_shape_fn((n, r), |_| rng.gen_range(-1.0..1.0));
        (d, b)
    }

    fn dense(d: &Array1<f64>, b: &Array2<f64>) -> Array2<f64> {
        let mut a = b.dot(&b.t());
        for i in 0..d.len() {
            a[[i, i]] += d[i];
        }
        a
    }

    /// Cosines of the principal angles between two orthonormal bases.
    fn min_cos(u: &Array2<f64>, v: &Array2<f64>) -> f64 {
        let c = u.t().dot(v);
        let s = crate::eigh(c.t().dot(&c).view()).unwrap();
        s.values.iter().cloned().fold(f64::INFINITY, f64::min).max(0.0).sqrt()
    }

    #[test]
    fn bottom_subspace_matches_dense_eigh_on_random_diag_plus_low_rank() {
        for (t, &(n, r, k, spread)) in [(300, 20, 4, 1.0), (400, 60, 6, 3.0), (500, 10, 1, 6.0), (250, 40, 10, 2.0), (600, 80, 4, 8.0)].iter().enumerate() {
            let (d, b) = case(n, r, spread, 11 + t as u64);
            let a = dense(&d, &b);
            let ex = eigh_bottom(a.view(), k + 1).unwrap();
            let it = diag_lowrank_bottom(d.view(), b.view(), k, None, &LowRankEigOptions::default()).unwrap();
            assert!(it.converged, "case {t}: residual {}", it.residual);
            // Tr(W^T A W) evaluated accurately (diagonal and low-rank parts apart); the dense
            // solver's own error is eps ||A|| per eigenvalue, ||A|| ~ max d, so the bound is
            // 1e-10 relative or a few dense round-offs, whichever is larger
            let obj = |w: &Array2<f64>| (w * w * d.view().insert_axis(Axis(1))).sum() + b.t().dot(w).mapv(|v| v * v).sum();
            let exv = ex.vectors.slice(s![.., ..k]).to_owned();
            let (obj_ex, obj_it) = (obj(&exv), obj(&it.vectors));
            let a_norm = d.iter().cloned().fold(0.0, f64::max) + b.t().dot(&b).diag().sum();
            let bound = (1e-10 * obj_ex.abs()).max(10.0 * k as f64 * f64::EPSILON * a_norm);
            assert!((obj_ex - obj_it).abs() <= bound, "case {t}: {obj_ex} vs {obj_it} (bound {bound:e})");
            // the iterative subspace is never worse than the dense one beyond that round-off
            assert!(obj_it <= obj_ex + 10.0 * k as f64 * f64::EPSILON * a_norm, "case {t}");
            eprintln!("case {t}: dense {obj_ex:.17e} iterative {obj_it:.17e} restarts {} residual {:e}", it.restarts, it.residual);
            for j in 0..k {
                assert!((ex.values[j] - it.values[j]).abs() <= 1e-10 * ex.values[k - 1].abs() + 10.0 * f64::EPSILON * a_norm, "case {t} value {j}");
                let res = a.dot(&it.vectors.column(j)) - &(&it.vectors.column(j) * it.values[j]);
                assert!(res.dot(&res).sqrt() <= 1e-10 * it.scale + 10.0 * f64::EPSILON * a_norm);
            }
            let gap = ex.values[k] - ex.values[k - 1];
            if gap > 1e-6 * ex.values[k] {
                let c = min_cos(&exv, &it.vectors);
                assert!(1.0 - c < 1e-10, "case {t}: principal angle cos {c}");
            }
            let wtw = it.vectors.t().dot(&it.vectors);
            assert!((wtw - Array2::<f64>::eye(k)).iter().all(|v| v.abs() < 1e-12));
        }
    }

    #[test]
    fn warm_start_converges_and_a_degenerate_cut_is_reported() {
        let (d, b) = case(400, 30, 2.0, 3);
        let first = diag_lowrank_bottom(d.view(), b.view(), 4, None, &LowRankEigOptions::default()).unwrap();
        let d2 = d.mapv(|v| v * 1.01);
        let warm = diag_lowrank_bottom(d2.view(), b.view(), 4, Some(first.vectors.view()), &LowRankEigOptions::default()).unwrap();
        assert!(warm.converged && warm.restarts <= first.restarts);
        // d constant and B with fewer columns than D - k: the bottom eigenvalue d_0 has
        // multiplicity D - r, the cut falls inside the cluster
        let d3 = Array1::from_elem(400, 2.0);
        let deg = diag_lowrank_bottom(d3.view(), b.view(), 4, None, &LowRankEigOptions::default()).unwrap();
        assert!(deg.relative_gap() < 1e-12, "gap {}", deg.relative_gap());
        assert!(deg.values.iter().all(|&v| (v - 2.0).abs() < 1e-10));
    }

    #[test]
    fn bit_identical_across_rayon_pools() {
        let (d, b) = case(300, 25, 3.0, 8);
        let run = |t: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .unwrap()
                .install(|| diag_lowrank_bottom(d.view(), b.view(), 3, None, &LowRankEigOptions::default()).unwrap())
        };
        let (x, y) = (run(1), run(2));
        assert_eq!(x.vectors, y.vectors);
        assert_eq!(x.values, y.values);
    }
}
