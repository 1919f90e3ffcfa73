//! t-SNE (van der Maaten & Hinton 2008): the optimiser and the exact gradient; the Barnes-Hut
//! ([`super::bh`]) and FFT-interpolation ([`super::fft`]) gradients for 2-D embeddings of many points.
//!
//! Affinities: the conditional `p_{j|i}` of perplexity `u` from the one shared calibration
//! ([`perplexity_affinities`], also ESL's), symmetrised `p_ij = (p_{j|i} + p_{i|j}) / (2N)`.
//! Embedding similarities: `w_ij = (1 + ||y_i - y_j||^2)^-1`, `q_ij = w_ij / Z`, `Z = sum_{k != l} w_kl`.
//! The cost and its gradient (with exaggeration `alpha`, 1 after the early phase):
//!
//! `KL(P || Q) = sum_{i != j} p_ij log(p_ij / q_ij)`,
//! `dC/dy_i = 4 sum_j (alpha p_ij - q_ij) w_ij (y_i - y_j)`.
//!
//! Optimisation as scikit-learn's: gradient descent with momentum (0.5 during the early
//! exaggeration, 0.8 after) and per-coordinate gains (delta-bar-delta: `+0.2` where the gradient
//! opposes the last update, `x0.8` otherwise, at least 0.01), update and gains reset when the
//! exaggeration ends; early exaggeration 12 for 250 iterations, learning rate `max(N / 12, 50)`
//! ("auto", openTSNE's), 1000 iterations.
//! Initialisation: the data's top-`d` principal components scaled so the first has standard
//! deviation 1e-4 (openTSNE's and scikit-learn's `init = "pca"`), or N(0, 1e-4^2) from the seed.
//!
//! The exact gradient costs `O(N^2 d)` per iteration and works in any dimension `d`, which Table 1
//! needs (`d` from the 95% energy rule). Every sum runs in a fixed order (rows in parallel, each
//! row sequential; `Z` and the cost summed over rows in order), so a fit is bit-identical at any
//! thread count.

use super::bh::{kl_and_gradient_bh, SparseP};
use super::fft::{kl_and_gradient_fft, InterpolationGrid};
use crate::api::declare::{self, declare_params, param_choice, Declared};
use crate::api::info::{auto, choice, dim, float, float_in, int, MethodInfo};
use crate::api::params::{closed, open};
use crate::api::{check_input, Embedder, FitInput, Fitted, MethodError, Output, OutputKind, ParamMap, Result, Trace};
use ndarray::{s, Array2, ArrayView2};
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};
use rayon::prelude::*;
use structdr_linalg::{row_sq_norms, sq_dists};
use structdr_numerics::affinities::perplexity_affinities;

param_choice! {
    /// How the embedding starts.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum TsneInit {
        /// Top principal components, the first scaled to standard deviation 1e-4.
        Pca = "pca",
        /// Independent N(0, 1e-4^2) entries from the seed.
        Random = "random",
    }
}

declare_params! {
    /// t-SNE with the exact gradient.
    #[derive(Debug, Clone)]
    pub struct Tsne {
        /// Target dimension d.
        pub dim: usize = dim(),
        /// Perplexity u of the conditional affinities.
        pub perplexity: f64 = float_in("perplexity", closed(1.0), open(f64::INFINITY), 30.0, "perplexity u of the conditional affinities (must be < N - 1); drtoolbox's and scikit-learn's default 30"),
        /// Total iterations (early exaggeration included).
        pub max_iter: usize = int("max_iter", 1, 1000, "total iterations, early exaggeration included"),
        /// Early exaggeration factor alpha.
        pub early_exaggeration: f64 = float("early_exaggeration", 1.0, 1000.0, 12.0, "factor alpha on P during the first exaggeration_iter iterations"),
        /// Iterations under early exaggeration.
        pub exaggeration_iter: usize = int("exaggeration_iter", 0, 250, "iterations under early exaggeration (momentum 0.5; 0.8 after)"),
        /// Learning rate; `None`: `max(N / 12, 50)`.
        pub learning_rate: Option<f64> = auto(float_in("learning_rate", open(0.0), open(f64::INFINITY), 200.0, "step size; auto = max(N / 12, 50)")),
        /// Initialisation.
        pub init: TsneInit = choice("init", TsneInit::NAMES, "pca", "pca: top principal components, PC1 scaled to sd 1e-4; random: N(0, 1e-4^2) from the seed"),
        /// How the gradient is computed.
        pub gradient: Gradient = choice("gradient", Gradient::NAMES, "auto", "exact: all pairs, any dim; barnes-hut: sparse P on 3u neighbours and a quadtree, dim = 2; fft: sparse P and FFT-accelerated interpolation (FIt-SNE, openTSNE's defaults), dim = 2; auto: exact up to N = 1000, then for dim = 2 barnes-hut below N = 10000 and fft from there"),
        /// Barnes-Hut opening angle (side / distance below which a cell is taken whole).
        pub theta: f64 = float("theta", 0.0, 1.0, 0.5, "Barnes-Hut opening angle: a cell of side s at distance r is taken whole when s / r < theta (0: exact sums)"),
        /// Whose optimisation schedule and preprocessing.
        pub schedule: Schedule = choice("schedule", Schedule::NAMES, "modern", "modern: scikit-learn's optimiser with the parameters above; drtoolbox: the papers' tsne (min-max scaling, PCA to 30 dims, random init, exaggeration 4 until 100, momentum switch at 250, learning rate 500, 1000 iterations; overrides init, learning_rate and the schedule parameters)"),
    }
}

param_choice! {
    /// The optimisation schedule (and, for drtoolbox, its preprocessing).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Schedule {
        /// scikit-learn / openTSNE: the parameters as given; update and gains reset when the
        /// exaggeration ends (at `exaggeration_iter`, also the momentum switch).
        Modern = "modern",
        /// drtoolbox 0.8b's `tsne` (van der Maaten's `tsne_p.m`), as the papers ran it: X shifted by
        /// its minimum and divided by its maximum, PCA to 30 dimensions when D > 30, random
        /// initialisation, exaggeration 4 until iteration 100, momentum 0.5 until 250 then 0.8,
        /// learning rate 500, 1000 iterations, the gain grows where `sign(grad) != sign(update)`
        /// (so also on a zero update), no reset.
        Drtoolbox = "drtoolbox",
    }
}

param_choice! {
    /// The gradient's algorithm.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Gradient {
        /// Exact up to [`EXACT_MAX_N`] points; for 2-D embeddings above that Barnes-Hut, and FFT
        /// interpolation from [`FFT_MIN_N`] points on (openTSNE's switch).
        Auto = "auto",
        /// All pairs, `O(N^2 d)`, any d.
        Exact = "exact",
        /// Sparse P on 3u neighbours and a quadtree, `O(N log N)`; d = 2 only.
        BarnesHut = "barnes-hut",
        /// Sparse P on 3u neighbours and FFT-accelerated interpolation (FIt-SNE), `O(N)` plus a grid
        /// FFT; d = 2 only.
        Fft = "fft",
    }
}

/// Largest N for which `gradient = "auto"` takes the exact gradient.
pub const EXACT_MAX_N: usize = 1000;

/// Smallest N for which `gradient = "auto"` takes the FFT gradient for a 2-D embedding
/// (openTSNE's `negative_gradient_method = "auto"` switch).
pub const FFT_MIN_N: usize = 10_000;

/// Symmetric joint affinities `p_ij = (p_{j|i} + p_{i|j}) / (2N)` from the conditional ones;
/// returns `P` and the calibration's `max_i |H_i - ln u|`.
pub fn joint_affinities(x: ArrayView2<f64>, perplexity: f64) -> (Array2<f64>, f64) {
    let n = x.nrows();
    let (mut p, _, err) = {
        let d2 = sq_dists(x).mapv(|v| v.max(0.0));
        perplexity_affinities(d2.view(), perplexity)
    };
    // symmetrised in place: no third N x N matrix (the diagonal stays 0)
    let scale = 2.0 * n as f64;
    for i in 0..n {
        for j in i + 1..n {
            let v = (p[[i, j]] + p[[j, i]]) / scale;
            p[[i, j]] = v;
            p[[j, i]] = v;
        }
    }
    (p, err)
}

/// Rows per block of [`kl_and_gradient_blocked`]: the block's three `BLOCK_ROWS x N` buffers (distances,
/// `P o W`, `W o W`) stay in the cache (7.7 MB at N = 5000), and the block GEMMs are still
/// tall enough for BLAS-3 speed. Fixed, so that the arithmetic does not depend on the thread count.
const BLOCK_ROWS: usize = 64;

/// What one block of rows contributes to [`kl_and_gradient_blocked`].
struct RowBlock {
    /// `sum_j w_ij` per row (Z's terms).
    w_sums: Vec<f64>,
    /// `sum_j p_ij w_ij` and `sum_j w_ij^2` per row.
    pw_sums: Vec<f64>,
    ww_sums: Vec<f64>,
    /// `sum_j p_ij ln(p_ij / w_ij)` and `sum_j p_ij` over `p_ij > 0`, per row (with the KL only).
    kl_terms: Vec<(f64, f64)>,
    /// `(P o W) Y` in the first rows, `(W o W) Y` in the last (2 b x d).
    products: Array2<f64>,
}

/// The gradient (with exaggeration `alpha` on P) into `grad`, `4 sum_j (alpha p_ij - q_ij) w_ij
/// (y_i - y_j)`, and with `with_kl` the KL(P || Q) of the unexaggerated P (NaN without: its
/// logarithms cost more than the gradient), with `w_ij = 1 / (1 + ||y_i - y_j||^2)` (zero
/// diagonal), `Z = sum w` and `q = W / Z`.
///
/// Two forms of the same sums; which one is faster depends on d (measured on one core, AVX2
/// kernels, 2026-11-26: the blocked form takes 0.36x the stored form's time per iteration at
/// N = 4435, d = 6; 0.86x at N = 2007, d = 32; 1.14x at N = 1440, d = 84; 1.17x at N = 1560,
/// d = 150). Below [`STORED_FORM_MIN_DIM`] the work is memory-bound and [`kl_and_gradient_blocked`]
/// runs; from it on the GEMM flops dominate and [`kl_and_gradient_stored`] runs, with 4 N^2 d
/// flops against the blocked form's 6 N^2 d.
pub fn kl_and_gradient(p: ArrayView2<f64>, y: ArrayView2<f64>, alpha: f64, grad: &mut Array2<f64>, with_kl: bool) -> f64 {
    if y.ncols() >= STORED_FORM_MIN_DIM {
        kl_and_gradient_stored(p, y, alpha, grad, with_kl)
    } else {
        kl_and_gradient_blocked(p, y, alpha, grad, with_kl)
    }
}

/// The embedding dimension from which [`kl_and_gradient`] takes the stored form.
const STORED_FORM_MIN_DIM: usize = 64;

/// [`kl_and_gradient`] by row blocks, for small d.
///
/// The gradient splits into an attractive and a repulsive part that need no Z until the end:
///
/// `grad_i = 4 alpha (a_i y_i - ((P o W) Y)_i) - (4 / Z) (b_i y_i - ((W o W) Y)_i)`,
///
/// `a_i = sum_j p_ij w_ij`, `b_i = sum_j w_ij^2`; and `KL = sum p ln(p / w) + (sum p) ln Z`.
/// So one pass over blocks of [`BLOCK_ROWS`] rows does everything: the block's squared distances
/// `||y_i||^2 + ||y_j||^2 - 2 Y_I Y^T` (one GEMM, negatives from cancellation clamped to 0), `W`,
/// `P o W` and `W o W` in cache-sized buffers, then `[P o W; W o W] Y` (one GEMM). Flops: 3 N^2 d
/// at BLAS-3 speed plus one O(N^2) pass; memory traffic: P, read once. ([`kl_and_gradient_stored`]
/// keeps D, W and M in one N x N buffer, 200 MB at N = 5000, and passes over it five times, one of
/// them a strided transpose: memory-bound at small d.) Blocks run in parallel; every sum
/// is taken in a fixed order, so the result does not depend on the thread count.
fn kl_and_gradient_blocked(p: ArrayView2<f64>, y: ArrayView2<f64>, alpha: f64, grad: &mut Array2<f64>, with_kl: bool) -> f64 {
    let (n, d) = y.dim();
    let pc = p.as_standard_layout();
    let ps = pc.as_slice().expect("standard layout");
    let norms = row_sq_norms(y);
    let starts: Vec<usize> = (0..n).step_by(BLOCK_ROWS).collect();
    let blocks: Vec<RowBlock> = starts
        .par_iter()
        .map(|&start| {
            let end = (start + BLOCK_ROWS).min(n);
            let b = end - start;
            let mut g = y.slice(s![start..end, ..]).dot(&y.t());
            if !g.is_standard_layout() {
                g = g.as_standard_layout().into_owned();
            }
            let gs = g.as_slice().expect("standard layout");
            let mut ab = Array2::<f64>::zeros((2 * b, n));
            let (a_rows, b_rows) = ab.as_slice_mut().expect("standard layout").split_at_mut(b * n);
            let mut block =
                RowBlock { w_sums: vec![0.0; b], pw_sums: vec![0.0; b], ww_sums: vec![0.0; b], kl_terms: vec![(0.0, 0.0); b], products: Array2::zeros((0, 0)) };
            for r in 0..b {
                let i = start + r;
                let (grow, prow) = (&gs[r * n..(r + 1) * n], &ps[i * n..(i + 1) * n]);
                let (arow, brow) = (&mut a_rows[r * n..(r + 1) * n], &mut b_rows[r * n..(r + 1) * n]);
                let (mut zs, mut sa, mut sb) = (0.0, 0.0, 0.0);
                // j < i, then j > i: the diagonal stays zero and the loops have no branch
                for range in [0..i, i + 1..n] {
                    for j in range {
                        let w = 1.0 / (1.0 + (norms[i] + norms[j] - 2.0 * grow[j]).max(0.0));
                        let pw = prow[j] * w;
                        let ww = w * w;
                        arow[j] = pw;
                        brow[j] = ww;
                        zs += w;
                        sa += pw;
                        sb += ww;
                    }
                }
                if with_kl {
                    let (mut kl, mut mass) = (0.0, 0.0);
                    for j in (0..n).filter(|&j| j != i && prow[j] > 0.0) {
                        let w = 1.0 / (1.0 + (norms[i] + norms[j] - 2.0 * grow[j]).max(0.0));
                        kl += prow[j] * (prow[j] / w.max(f64::MIN_POSITIVE)).ln();
                        mass += prow[j];
                    }
                    block.kl_terms[r] = (kl, mass);
                }
                block.w_sums[r] = zs;
                block.pw_sums[r] = sa;
                block.ww_sums[r] = sb;
            }
            block.products = ab.dot(&y);
            block
        })
        .collect();
    let z: f64 = blocks.iter().flat_map(|b| b.w_sums.iter()).sum();
    let (attract, repel) = (4.0 * alpha, 4.0 / z);
    let (mut kl, mut mass) = (0.0, 0.0);
    for (&start, block) in starts.iter().zip(&blocks) {
        let b = block.w_sums.len();
        for r in 0..b {
            let i = start + r;
            for c in 0..d {
                let yi = y[[i, c]];
                grad[[i, c]] = attract * (block.pw_sums[r] * yi - block.products[[r, c]]) - repel * (block.ww_sums[r] * yi - block.products[[b + r, c]]);
            }
            kl += block.kl_terms[r].0;
            mass += block.kl_terms[r].1;
        }
    }
    if with_kl {
        kl + mass * z.ln()
    } else {
        f64::NAN
    }
}

/// [`kl_and_gradient`] with the N x N matrices stored, for large d: `D = ||y_i - y_j||^2` by one
/// GEMM ([`sq_dists`]), `W = 1 / (1 + D)` (zero diagonal), `M = 4 (alpha P - W / Z) o W` in place
/// and `grad = diag(M 1) Y - M Y` by a second GEMM: 4 N^2 d flops at BLAS-3 speed plus a few
/// O(N^2) passes, all in the one N x N buffer of `D` (t-SNE version 2's form, kept bit for bit).
/// Row passes run in parallel; every sum is taken in a fixed order, so the result does not depend
/// on the thread count.
fn kl_and_gradient_stored(p: ArrayView2<f64>, y: ArrayView2<f64>, alpha: f64, grad: &mut Array2<f64>, with_kl: bool) -> f64 {
    let (n, d) = y.dim();
    let pc = p.as_standard_layout();
    let ps = pc.as_slice().expect("standard layout");
    let mut m = sq_dists(y);
    let ms = m.as_slice_mut().expect("standard layout");
    // W = 1 / (1 + D) in place, zero diagonal; its row sums in row order give Z
    let w_rows: Vec<f64> = ms
        .par_chunks_mut(n)
        .enumerate()
        .map(|(i, row)| {
            let mut s = 0.0;
            for (j, v) in row.iter_mut().enumerate() {
                if j == i {
                    *v = 0.0;
                } else {
                    *v = 1.0 / (1.0 + *v);
                    s += *v;
                }
            }
            s
        })
        .collect();
    let z: f64 = w_rows.iter().sum();
    // M = 4 (alpha P - W / Z) o W in place, with its row sums and the KL terms per row
    let rows: Vec<(f64, f64)> = ms
        .par_chunks_mut(n)
        .enumerate()
        .map(|(i, row)| {
            let pi = &ps[i * n..(i + 1) * n];
            let (mut kl, mut sum) = (0.0, 0.0);
            for j in 0..n {
                if j == i {
                    continue;
                }
                let w = row[j];
                let q = w / z;
                let pij = pi[j];
                if with_kl && pij > 0.0 {
                    kl += pij * (pij / q.max(f64::MIN_POSITIVE)).ln();
                }
                let coef = 4.0 * (alpha * pij - q) * w;
                row[j] = coef;
                sum += coef;
            }
            (kl, sum)
        })
        .collect();
    let my = m.dot(&y);
    let mut kl = 0.0;
    for (i, &(k, sum)) in rows.iter().enumerate() {
        kl += k;
        for c in 0..d {
            grad[[i, c]] = sum * y[[i, c]] - my[[i, c]];
        }
    }
    if with_kl {
        kl
    } else {
        f64::NAN
    }
}

/// The KL is evaluated every this many iterations and at the last (scikit-learn's check interval).
pub const KL_EVERY: usize = 50;

impl Tsne {
    /// The initial embedding (N x d) by `init`.
    fn initial(&self, init: TsneInit, x: ArrayView2<f64>, seed: u64) -> Result<Array2<f64>> {
        let n = x.nrows();
        match init {
            TsneInit::Pca => {
                let pca = structdr_linalg::Pca::fit(x).map_err(|e| MethodError::Input { method: "tsne", reason: format!("PCA initialisation: {e}") })?;
                let mut y = pca.transform(x, self.dim);
                let c0 = y.column(0);
                let mean = c0.sum() / n as f64;
                let sd = (c0.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64).sqrt();
                if !(sd > 0.0 && sd.is_finite()) {
                    return Err(MethodError::Input { method: "tsne", reason: "PCA initialisation: the first principal component is constant".into() });
                }
                y.mapv_inplace(|v| v / sd * 1e-4);
                Ok(y)
            }
            TsneInit::Random => {
                let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
                let normal = Normal::new(0.0, 1e-4).expect("valid normal");
                Ok(Array2::from_shape_simple_fn((n, self.dim), || normal.sample(&mut rng)))
            }
        }
    }

    /// Runs the optimisation from `y0` on the dense joint affinities `p` with the exact gradient;
    /// returns the embedding and the KL history: the KL of the unexaggerated P at iterations
    /// [`KL_EVERY`], 2 [`KL_EVERY`], ... and at the last, each before that iteration's step.
    pub fn optimise(&self, p: ArrayView2<f64>, y: Array2<f64>) -> (Array2<f64>, Vec<f64>) {
        self.optimise_with(y, |y, alpha, grad, with_kl| kl_and_gradient(p, y, alpha, grad, with_kl))
    }

    /// The optimisation with a given gradient routine `(y, alpha, grad, with_kl) -> KL`.
    pub fn optimise_with(&self, mut y: Array2<f64>, mut cost: impl FnMut(ArrayView2<f64>, f64, &mut Array2<f64>, bool) -> f64) -> (Array2<f64>, Vec<f64>) {
        let n = y.nrows();
        let drt = self.schedule == Schedule::Drtoolbox;
        let eta = if drt { 500.0 } else { self.learning_rate.unwrap_or_else(|| (n as f64 / 12.0).max(50.0)) };
        let (max_iter, alpha0, lie_until, momentum_until) =
            if drt { (1000, 4.0, 100, 250) } else { (self.max_iter, self.early_exaggeration, self.exaggeration_iter, self.exaggeration_iter) };
        let mut update = Array2::<f64>::zeros(y.dim());
        let mut gains = Array2::<f64>::ones(y.dim());
        let mut grad = Array2::<f64>::zeros(y.dim());
        let mut history = Vec::with_capacity(max_iter / KL_EVERY + 1);
        for it in 0..max_iter {
            if !drt && it == self.exaggeration_iter && it > 0 {
                // the second phase starts afresh, as scikit-learn's second descent call does
                update.fill(0.0);
                gains.fill(1.0);
            }
            let alpha = if it < lie_until { alpha0 } else { 1.0 };
            let momentum = if it < momentum_until { 0.5 } else { 0.8 };
            let with_kl = (it + 1) % KL_EVERY == 0 || it + 1 == max_iter;
            let kl = cost(y.view(), alpha, &mut grad, with_kl);
            if with_kl {
                history.push(kl);
                structdr_numerics::progress::report(it + 1, kl);
            }
            ndarray::Zip::from(&mut gains).and(&mut update).and(&grad).for_each(|g, u, &dg| {
                // delta-bar-delta: grow where the gradient opposes the last step (strictly: a
                // zero step, as at the start, shrinks the gain, as in scikit-learn)
                let sign = |v: f64| (v > 0.0) as i8 - (v < 0.0) as i8;
                let grow = if drt { sign(dg) != sign(*u) } else { *u * dg < 0.0 };
                *g = if grow { *g + 0.2 } else { *g * 0.8 };
                *g = g.max(0.01);
                *u = momentum * *u - eta * *g * dg;
            });
            y += &update;
        }
        (y, history)
    }
}

impl Embedder for Tsne {
    fn name(&self) -> &'static str {
        "tsne"
    }
    fn info(&self) -> MethodInfo {
        info()
    }
    fn params(&self) -> ParamMap {
        self.to_params()
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        check_input("tsne", &input.x, 3)?;
        let n = input.x.nrows();
        // the entropy ln u of p_(.|i) is reachable only below ln(N - 1)
        if !(self.perplexity >= 1.0 && self.perplexity < (n - 1) as f64) {
            return Err(MethodError::Input { method: "tsne", reason: format!("perplexity = {} must be in [1, N - 1) = [1, {})", self.perplexity, n - 1) });
        }
        if self.exaggeration_iter > self.max_iter {
            return Err(MethodError::Input {
                method: "tsne",
                reason: format!("exaggeration_iter = {} exceeds max_iter = {}", self.exaggeration_iter, self.max_iter),
            });
        }
        let gradient = match self.gradient {
            Gradient::Auto if self.dim == 2 && n >= FFT_MIN_N => Gradient::Fft,
            Gradient::Auto if self.dim == 2 && n > EXACT_MAX_N => Gradient::BarnesHut,
            Gradient::Auto => Gradient::Exact,
            g => g,
        };
        if gradient != Gradient::Exact && self.dim != 2 {
            let name = if gradient == Gradient::Fft { "fft" } else { "barnes-hut" };
            return Err(MethodError::Input { method: "tsne", reason: format!("gradient = \"{name}\" needs dim = 2 (got {}); use \"exact\"", self.dim) });
        }
        // drtoolbox's preprocessing: min-max over the whole matrix, then PCA to 30 dimensions
        let prepared;
        let x: ArrayView2<f64> = if self.schedule == Schedule::Drtoolbox {
            let lo = input.x.iter().copied().fold(f64::INFINITY, f64::min);
            let mut xp = input.x.mapv(|v| v - lo);
            let hi = xp.iter().copied().fold(0.0, f64::max);
            if hi > 0.0 {
                xp.mapv_inplace(|v| v / hi);
            }
            if xp.ncols() > 30 {
                let pca =
                    structdr_linalg::Pca::fit(xp.view()).map_err(|e| MethodError::Input { method: "tsne", reason: format!("PCA to 30 dimensions: {e}") })?;
                xp = pca.transform(xp.view(), 30);
            }
            prepared = xp;
            prepared.view()
        } else {
            input.x.view()
        };
        // drtoolbox starts at random whatever `init` says
        let init = if self.schedule == Schedule::Drtoolbox { TsneInit::Random } else { self.init };
        let y0 = self.initial(init, x, input.seed)?;
        let (y, history, perp_err, how) = if gradient != Gradient::Exact {
            // k = 3u neighbours, as scikit-learn and openTSNE take
            let k = ((3.0 * self.perplexity).floor() as usize).clamp(1, n - 1);
            let knn = structdr_numerics::neighbours::knn(x, k).map_err(crate::api::numerics("tsne"))?;
            let (cond, _, err) = structdr_numerics::affinities::perplexity_affinities_knn(&knn, self.perplexity);
            let p = SparseP::symmetric(&knn.indices, &cond);
            let nnz = p.vals.len();
            if gradient == Gradient::Fft {
                let grid = InterpolationGrid::default();
                let (y, h) = self.optimise_with(y0, |y, alpha, g, with_kl| kl_and_gradient_fft(&p, y, alpha, &grid, g, with_kl));
                let how = format!(
                    "FFT interpolation ({} nodes per box, boxes at most {} wide, at least {} per axis), sparse P on k = {k} neighbours ({nnz} non-zeros); KL with the interpolated Z",
                    grid.nodes_per_box, grid.interval_width, grid.min_intervals
                );
                (y, h, err, how)
            } else {
                let (y, h) = self.optimise_with(y0, |y, alpha, grad, with_kl| kl_and_gradient_bh(&p, y, alpha, self.theta, grad, with_kl));
                (y, h, err, format!("Barnes-Hut (theta = {}), sparse P on k = {k} neighbours ({nnz} non-zeros); KL with the tree's Z", self.theta))
            }
        } else {
            let (p, err) = joint_affinities(x, self.perplexity);
            let (y, h) = self.optimise(p.view(), y0);
            (y, h, err, "exact gradient, O(N^2 d) per iteration".to_string())
        };
        if y.iter().any(|v| !v.is_finite()) {
            return Err(MethodError::Solver { method: "tsne", reason: "the embedding diverged (non-finite coordinates); lower learning_rate".into() });
        }
        let kl = *history.last().unwrap_or(&f64::NAN);
        let eta = self.learning_rate.unwrap_or_else(|| (n as f64 / 12.0).max(50.0));
        let mut fitted = Fitted::new(
            Output::Embedding(y),
            Trace::iterative(
                history,
                self.max_iter,
                crate::api::StopReason::FixedSchedule { iterations: self.max_iter },
                format!("fixed schedule: {} iterations ({} with early exaggeration {})", self.max_iter, self.exaggeration_iter, self.early_exaggeration),
            ),
        );
        fitted.notes.push(format!("perplexity {}: max |H_i - ln u| = {perp_err:.2e}; {how}", self.perplexity));
        fitted.notes.push(format!(
            "learning rate {eta} ({}), momentum 0.5 then 0.8, gains min 0.01; init {}; final KL(P || Q) = {kl:.6e} (history: KL every 50 iterations and at the last)",
            if self.learning_rate.is_some() { "given" } else { "auto = max(N / 12, 50)" },
            if self.init == TsneInit::Pca { "PCA scaled to sd(PC1) = 1e-4" } else { "N(0, 1e-4^2) from the seed" }
        ));
        Ok(fitted)
    }
}

/// The registry entry.
pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: "tsne",
        summary: "t-SNE: p_ij = (p_(j|i) + p_(i|j)) / 2N from perplexity-u affinities, q_ij ∝ (1 + ||y_i - y_j||^2)^-1, min KL(P || Q) by gradient descent with momentum and gains; gradient 4 sum_j (alpha p_ij - q_ij) w_ij (y_i - y_j) exact, by Barnes-Hut or by FFT interpolation.",
        reference: "van der Maaten & Hinton, Visualizing data using t-SNE, JMLR 2008; optimiser as scikit-learn / openTSNE",
        version: 3,
        output: OutputKind::Embedding,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: true,
        params: Tsne::schema(()),
        build: |p| declare::build::<Tsne>("tsne", (), p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    fn data(n: usize, d: usize, seed: u64) -> Array2<f64> {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        Array2::from_shape_fn((n, d), |(i, _)| (i % 3) as f64 * 3.0 + rng.gen::<f64>())
    }

    /// scikit-learn's schedule (the registry's defaults) with the given perplexity and iterations.
    fn modern(perplexity: f64, max_iter: usize, exaggeration_iter: usize) -> Tsne {
        Tsne {
            dim: 2,
            perplexity,
            max_iter,
            early_exaggeration: 12.0,
            exaggeration_iter,
            learning_rate: None,
            init: TsneInit::Pca,
            gradient: Gradient::Auto,
            theta: 0.5,
            schedule: Schedule::Modern,
        }
    }

    /// Points whose nearest neighbour in `y` is of their own cluster (`i % 3`, as in [`data`]).
    fn cluster_hits(y: &Array2<f64>) -> usize {
        let nn = structdr_numerics::neighbours::knn(y.view(), 1).unwrap();
        (0..y.nrows()).filter(|&i| nn.indices[[i, 0]] % 3 == i % 3).count()
    }

    /// The gradient against central finite differences of the KL (alpha = 1), relative error
    /// below 1e-6 on every coordinate of a random embedding.
    #[test]
    fn gradient_matches_finite_differences() {
        let x = data(30, 5, 1);
        let (p, _) = joint_affinities(x.view(), 5.0);
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(2);
        let y = Array2::from_shape_fn((30, 2), |_| rng.gen::<f64>() * 2.0 - 1.0);
        let mut g = Array2::zeros(y.dim());
        kl_and_gradient(p.view(), y.view(), 1.0, &mut g, true);
        let mut scratch = Array2::zeros(y.dim());
        let h = 1e-6;
        let mut worst: f64 = 0.0;
        for i in 0..30 {
            for k in 0..2 {
                let (mut yp, mut ym) = (y.clone(), y.clone());
                yp[[i, k]] += h;
                ym[[i, k]] -= h;
                let fd =
                    (kl_and_gradient(p.view(), yp.view(), 1.0, &mut scratch, true) - kl_and_gradient(p.view(), ym.view(), 1.0, &mut scratch, true)) / (2.0 * h);
                worst = worst.max((fd - g[[i, k]]).abs() / g[[i, k]].abs().max(1e-3));
            }
        }
        assert!(worst < 1e-6, "worst relative error {worst:e}");
    }

    /// The matrix form (two GEMMs) equals the pair sums `4 sum_j (alpha p_ij - q_ij) w_ij (y_i - y_j)`
    /// written out directly, at the d of the papers' tables, with exaggeration, and KL(P || Q) too.
    #[test]
    fn matrix_gradient_equals_the_pair_sums() {
        // n = 150: three row blocks of the blocked form, the last one partial; both forms are
        // checked at the same d (kl_and_gradient picks one by d)
        let (n, d) = (150, 33);
        let x = data(n, 8, 4);
        let (p, _) = joint_affinities(x.view(), 8.0);
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
        let y = Array2::from_shape_fn((n, d), |_| rng.gen::<f64>() * 4.0 - 2.0);
        let w = |i: usize, j: usize| 1.0 / (1.0 + (&y.row(i) - &y.row(j)).mapv(|t| t * t).sum());
        let z: f64 = (0..n).flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j))).map(|(i, j)| w(i, j)).sum();
        let mut direct = Array2::<f64>::zeros((n, d));
        let mut kl_direct = 0.0;
        for i in 0..n {
            for c in 0..d {
                direct[[i, c]] = (0..n).filter(|&j| j != i).map(|j| 4.0 * (4.0 * p[[i, j]] - w(i, j) / z) * w(i, j) * (y[[i, c]] - y[[j, c]])).sum();
            }
            for j in (0..n).filter(|&j| j != i && p[[i, j]] > 0.0) {
                kl_direct += p[[i, j]] * (p[[i, j]] / (w(i, j) / z)).ln();
            }
        }
        type Form = fn(ArrayView2<f64>, ArrayView2<f64>, f64, &mut Array2<f64>, bool) -> f64;
        for (name, form) in [("blocked", kl_and_gradient_blocked as Form), ("stored", kl_and_gradient_stored as Form)] {
            let mut g = Array2::zeros(y.dim());
            let kl = form(p.view(), y.view(), 4.0, &mut g, true);
            for ((i, c), &v) in direct.indexed_iter() {
                assert!((v - g[[i, c]]).abs() <= 1e-12 * (1.0 + v.abs()), "{name} ({i}, {c}): {v} against {}", g[[i, c]]);
            }
            assert!((kl - kl_direct).abs() <= 1e-12 * kl_direct.abs(), "{name}: KL {kl} against {kl_direct}");
        }
    }

    /// P is a symmetric distribution with a zero diagonal.
    #[test]
    fn joint_affinities_are_a_symmetric_distribution() {
        let (p, err) = joint_affinities(data(40, 3, 3).view(), 10.0);
        assert!(err < 1e-8);
        assert!((p.sum() - 1.0).abs() < 1e-12);
        for i in 0..40 {
            assert_eq!(p[[i, i]], 0.0);
            for j in 0..40 {
                assert_eq!(p[[i, j]], p[[j, i]]);
            }
        }
    }

    /// After the exaggeration phase the KL decreases (up to momentum wobble: the last value is
    /// below the one at the end of exaggeration, and below the initial KL); the three clusters end
    /// up apart (1-NN leave-one-out accuracy 1), and a fit is bit-identical at 1 and 4 threads.
    #[test]
    fn fits_separate_clusters_and_are_thread_count_invariant() {
        let x = data(90, 6, 4);
        let t = Tsne { gradient: Gradient::Exact, ..modern(10.0, 400, 100) };
        let fit = |threads: usize| rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| t.fit(x.view(), 7).unwrap());
        let a = fit(1);
        let b = fit(4);
        let (ya, yb) = (a.embedding().unwrap().to_owned(), b.embedding().unwrap().to_owned());
        assert_eq!(ya, yb, "thread count changed the result");
        // KL at iterations 50, 100, ..., 400: the last below the value when exaggeration ended
        let h = &a.trace.history;
        assert_eq!(h.len(), 8);
        assert!(h[7] < h[1] && h[7] < h[0], "KL {} -> {} -> {}", h[0], h[1], h[7]);
        let hits = cluster_hits(&ya);
        assert!(hits >= 85, "{hits} of 90 (kernel-set dependent last bits move single points)");
    }

    /// Above 1000 points a 2-D fit takes Barnes-Hut ("auto"); it separates clusters, is
    /// bit-identical at 1 and 4 threads, and a 3-D Barnes-Hut request is refused.
    #[test]
    fn barnes_hut_fits_are_chosen_separate_clusters_and_are_thread_count_invariant() {
        let x = data(1200, 6, 8);
        let t = modern(30.0, 300, 100);
        let fit = |threads: usize| rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| t.fit(x.view(), 3).unwrap());
        let (a, b) = (fit(1), fit(4));
        assert!(a.notes.iter().any(|n| n.contains("Barnes-Hut")), "{:?}", a.notes);
        assert_eq!(a.embedding().unwrap(), b.embedding().unwrap(), "thread count changed the result");
        let hits = cluster_hits(a.embedding().unwrap());
        assert!(hits >= 1190, "{hits} of 1200");
        let bad = Tsne { dim: 3, gradient: Gradient::BarnesHut, ..t };
        assert!(bad.fit(x.view(), 0).unwrap_err().to_string().contains("dim = 2"));
    }

    /// The FFT gradient, asked for explicitly, separates the clusters and is bit-identical at 1
    /// and 4 threads; a 3-D request is refused.
    #[test]
    fn fft_fits_separate_clusters_and_are_thread_count_invariant() {
        let x = data(1500, 6, 10);
        let t = Tsne { gradient: Gradient::Fft, ..modern(30.0, 300, 100) };
        let fit = |threads: usize| rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| t.fit(x.view(), 3).unwrap());
        let (a, b) = (fit(1), fit(4));
        assert!(a.notes.iter().any(|n| n.contains("FFT interpolation")), "{:?}", a.notes);
        assert_eq!(a.embedding().unwrap(), b.embedding().unwrap(), "thread count changed the result");
        let hits = cluster_hits(a.embedding().unwrap());
        assert!(hits >= 1490, "{hits} of 1500");
        let bad = Tsne { dim: 3, ..t };
        assert!(bad.fit(x.view(), 0).unwrap_err().to_string().contains("\"fft\" needs dim = 2"));
    }

    /// The papers' drtoolbox schedule (min-max scaling, PCA to 30 dims of 40, random start,
    /// exaggeration 4 until 100, learning rate 500) also separates the clusters, and the seed
    /// fixes the result.
    #[test]
    fn the_drtoolbox_schedule_separates_clusters_and_is_seeded() {
        let x = data(90, 40, 9);
        let t = Tsne { schedule: Schedule::Drtoolbox, ..modern(10.0, 1000, 250) };
        let a = t.fit(x.view(), 5).unwrap();
        assert_eq!(a.embedding(), t.fit(x.view(), 5).unwrap().embedding());
        assert_ne!(a.embedding(), t.fit(x.view(), 6).unwrap().embedding(), "random start from the seed");
        assert_eq!(a.trace.history.len(), 20, "1000 iterations, KL every 50");
        // (the descent is chaotic: the last bits of the PCA, which differ between OpenBLAS kernel
        // sets, move single points; the clusters must still be found)
        let hits = cluster_hits(a.embedding().unwrap());
        assert!(hits >= 81, "{hits} of 90");
    }

    #[test]
    fn bad_perplexity_and_schedule_are_errors() {
        let x = data(20, 3, 5);
        let t = Tsne { init: TsneInit::Random, ..modern(19.0, 10, 5) };
        assert!(t.fit(x.view(), 0).unwrap_err().to_string().contains("perplexity"));
        let t = Tsne { perplexity: 3.0, exaggeration_iter: 50, ..t };
        assert!(t.fit(x.view(), 0).unwrap_err().to_string().contains("exaggeration_iter"));
    }
}
