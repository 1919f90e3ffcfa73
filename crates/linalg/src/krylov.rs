//! The smallest eigenpairs of a symmetric positive semi-definite operator `A` from its
//! shift-inverse: block Krylov with thick restart, Rayleigh–Ritz with the inverse, Ritz values
//! and residuals with `A` itself. [`crate::diag_lowrank_bottom`] (`diag(d) + B B^T`, Woodbury
//! inverse) and [`crate::sparse::laplacian_bottom`] (a weighted graph Laplacian on the
//! complement of the constant vector, sparse Cholesky of `L_w + beta I`) are its two operators.
//!
//! The operator supplies `A V` and `S^{-1} V` for an SPD `S` with the eigenvectors of `A` (in
//! practice `S = A + beta I`, `beta >= 0`, restricted to an invariant subspace): the k smallest
//! eigenvalues of `A` belong to the k largest of `S^{-1}`, so a block Krylov space
//! `span{S^{-1} V0, S^{-2} V0, ...}` (block size p > k, thick restart from the p lowest Ritz
//! vectors) converges to them fast. The inverse only builds the space; the Ritz values and the
//! residuals `||A y - theta y||` are taken with `A` itself, so round-off in the inverse slows
//! the iteration at worst and never biases the answer.
//!
//! Convergence: every one of the k wanted pairs has `||A y_j - theta_j y_j|| <= tol * scale +
//! floor`, `scale = |theta_k| + scale_offset` and `floor` given by the operator (the size of the
//! part of `A` the bottom eigenvectors see, and the round-off floor of representing `A y`). The
//! (k + 1)-th Ritz value is returned too, so callers can tell when the wanted subspace is not
//! determined (`theta_{k+1} - theta_k` at round-off: a cluster straddles the cut).
//!
//! Everything is sequential BLAS calls in a fixed order (no rayon), and the start block is
//! deterministic, so results are bit-identical for any rayon pool size.

use crate::{eigh, LinalgError, Result};
use ndarray::{s, Array1, Array2, ArrayView2, Axis};

/// Settings of the block Krylov iteration.
#[derive(Debug, Clone, Copy)]
pub struct KrylovOptions {
    /// Relative residual bound: `||A y - theta y|| <= tol * scale + floor` (module doc).
    pub tol: f64,
    /// Extra block columns beyond k (at least 1: the (k + 1)-th Ritz value is reported).
    pub extra: usize,
    /// Krylov blocks per restart.
    pub krylov_blocks: usize,
    /// Restart cap; not converged after it, the result says so.
    pub max_restarts: usize,
    /// How many of the k pairs, from the bottom, must meet the test (`None`: all k). The others
    /// are returned as the Ritz pairs of the last space, e.g. when only the smallest eigenvalue
    /// must be accurate and the rest need only be directions of low Rayleigh quotient.
    pub must_converge: Option<usize>,
}

impl Default for KrylovOptions {
    fn default() -> Self {
        KrylovOptions { tol: 1e-11, extra: 4, krylov_blocks: 4, max_restarts: 40, must_converge: None }
    }
}

/// The k smallest eigenpairs found by the block Krylov iteration.
#[derive(Debug, Clone)]
pub struct BottomEigenpairs {
    /// The k smallest eigenvalues (Ritz values), ascending.
    pub values: Array1<f64>,
    /// The k eigenvectors (n x k, orthonormal columns, signs canonicalised).
    pub vectors: Array2<f64>,
    /// The (k + 1)-th smallest Ritz value (an upper bound on the (k + 1)-th eigenvalue).
    pub next_value: f64,
    /// The largest relative residual over the pairs that must converge, `||A y - theta y|| / scale`.
    pub residual: f64,
    /// `scale` of the convergence test.
    pub scale: f64,
    /// Restarts run (1 = converged in the first Krylov space).
    pub restarts: usize,
    /// Whether every pair that must converge met the tolerance.
    pub converged: bool,
}

impl BottomEigenpairs {
    /// `(theta_{k+1} - theta_k) / scale`: at round-off level the bottom-k subspace is not
    /// determined by A (any basis of a cluster that straddles the cut is as good).
    pub fn relative_gap(&self) -> f64 {
        (self.next_value - self.values[self.values.len() - 1]) / self.scale
    }
}

/// The two products the iteration needs.
pub(crate) trait ShiftInverted {
    /// `A V`.
    fn apply(&self, v: ArrayView2<f64>) -> Array2<f64>;
    /// `S^{-1} V` (module doc), mapped into the subspace the eigenpairs are sought in.
    fn apply_inv(&self, v: ArrayView2<f64>) -> Array2<f64>;
}

/// The convergence test's terms: `scale = |theta_k| + scale_offset`, and `floor`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ResidualTest {
    pub(crate) scale_offset: f64,
    pub(crate) floor: f64,
}

/// Appends the columns of `z`, orthogonalised against `q[:, ..*used]` and each other (classical
/// Gram–Schmidt run twice), to `q`; columns that vanish (norm after orthogonalisation below 1e-10
/// of before) are dropped. Returns how many were kept.
fn append_orthonormal(q: &mut Array2<f64>, used: &mut usize, z: Array2<f64>) -> usize {
    let mut kept = 0;
    for col in z.axis_iter(Axis(1)) {
        if *used == q.ncols() {
            break;
        }
        let mut v = col.to_owned();
        let n0 = v.dot(&v).sqrt();
        if !(n0 > 0.0 && n0.is_finite()) {
            continue;
        }
        for _ in 0..2 {
            if *used > 0 {
                let basis = q.slice(s![.., ..*used]);
                let c = basis.t().dot(&v);
                v -= &basis.dot(&c);
            }
        }
        let n1 = v.dot(&v).sqrt();
        if n1 <= 1e-10 * n0 {
            continue;
        }
        v /= n1;
        q.column_mut(*used).assign(&v);
        *used += 1;
        kept += 1;
    }
    kept
}

/// Deterministic start columns (SplitMix64, uniform in [-1, 1)); the same for every call with
/// the same shape.
fn start_columns(n: usize, cols: usize) -> Array2<f64> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    Array2::from_shape_simple_fn((n, cols), || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    })
}

/// The `k` smallest eigenpairs of the operator `op` of order `n` (module doc). `start` (n x j,
/// any j) seeds the first block, e.g. the previous eigenvectors of a nearby matrix; the remaining
/// block columns are deterministic pseudo-random vectors. The caller has checked the shapes.
pub(crate) fn block_krylov_bottom(
    op: &impl ShiftInverted,
    n: usize,
    k: usize,
    start: Option<ArrayView2<f64>>,
    opts: &KrylovOptions,
    test: ResidualTest,
    what: &'static str,
) -> Result<BottomEigenpairs> {
    let p = (k + opts.extra.max(1)).min(n);
    let cap = (p * opts.krylov_blocks.max(1)).min(n - p);
    // first block: the start columns, filled up with deterministic ones
    let mut block = Array2::<f64>::zeros((n, p));
    let mut filled = 0;
    if let Some(w) = start {
        let j = w.ncols().min(p);
        block.slice_mut(s![.., ..j]).assign(&w.slice(s![.., ..j]));
        filled = j;
    }
    if filled < p {
        block.slice_mut(s![.., filled..]).assign(&start_columns(n, p - filled));
    }

    // Restart 1: the Krylov space of S^{-1} from S^{-1} V0. Later restarts: the p Ritz vectors Y
    // and the Krylov space of S^{-1} from S^{-1} R, R = A Y - Y Theta (the same space as from
    // S^{-1} Y, but S^{-1} R is computed without the cancellation that would otherwise leave
    // nearly converged directions at round-off level and stall the residuals).
    let mut out = None;
    let mut ritz: Option<(Array2<f64>, Array2<f64>)> = None;
    for restart in 1..=opts.max_restarts.max(1) {
        let mut q = Array2::<f64>::zeros((n, cap + p));
        let mut used = 0;
        let mut cur = match ritz.take() {
            None => op.apply_inv(block.view()),
            Some((y, res)) => {
                append_orthonormal(&mut q, &mut used, y);
                op.apply_inv(res.view())
            }
        };
        for _ in 0..opts.krylov_blocks.max(1) {
            let before = used;
            append_orthonormal(&mut q, &mut used, cur);
            if used == before || used == q.ncols() {
                break;
            }
            cur = op.apply_inv(q.slice(s![.., before..used]));
        }
        if used < k + 1 {
            // the space collapsed (exact invariant subspace, or round-off): keep the last Ritz pairs
            if out.is_some() {
                break;
            }
            return Err(LinalgError::Shape { what, detail: format!("Krylov space collapsed to {used} vectors (k = {k})") });
        }
        // Rayleigh–Ritz with S^{-1} (its wanted eigenvalues are its largest, so the small
        // eigenproblem resolves them to eps relative; with A itself, a basis vector touching a
        // large part of A would blur them), then the Ritz values and residuals with A itself
        let qb = q.slice(s![.., ..used]);
        let g = qb.t().dot(&op.apply_inv(qb));
        let g = (&g + &g.t()) * 0.5;
        let e = eigh(g.view())?;
        let keep = p.min(used);
        // the largest `keep` eigenvalues of G, descending (dsyevd: robust where dsyevr's MRRR
        // can fail on the tight clusters of a converged space)
        let top: Vec<usize> = (0..keep).map(|j| used - 1 - j).collect();
        let y = qb.dot(&e.vectors.select(Axis(1), &top));
        let ay = op.apply(y.view());
        let theta = Array1::from_shape_fn(keep, |j| y.column(j).dot(&ay.column(j)));
        let mut res = ay;
        res -= &(&y * &theta.view().insert_axis(Axis(0)));
        let scale = theta[k - 1].abs() + test.scale_offset;
        let checked = opts.must_converge.map_or(k, |c| c.clamp(1, k));
        let worst = (0..checked).map(|j| res.column(j).dot(&res.column(j)).sqrt() / scale).fold(0.0, f64::max);
        let converged = worst * scale <= opts.tol * scale + test.floor;
        let mut vectors = y.slice(s![.., ..k]).to_owned();
        crate::canonicalize_signs(&mut vectors);
        out = Some(BottomEigenpairs {
            values: theta.slice(s![..k]).to_owned(),
            vectors,
            next_value: theta[k],
            residual: worst,
            scale,
            restarts: restart,
            converged,
        });
        if converged {
            break;
        }
        ritz = Some((y, res));
    }
    Ok(out.expect("at least one restart"))
}
