//! DRTree and DDRTree: dimensionality reduction that learns a tree (Wang et al., *Probabilistic
//! dimensionality reduction via structure learning*, §4.2-4.3, eq. 29-33, Alg. 2, Prop. 5).
//!
//! With the data `Y` (N x D, samples in rows; centred in the paper mode), the projection `W`
//! (D x d, `W^T W = I`), the latent points `Z` (N x d), the centres `C` (K x d), a spanning tree
//! `S` on the centres and soft assignments `R` (N x K, rows on the simplex), the objective (31) is
//!
//! `f = ||Y - Z W^T||_F^2 + lambda sum_{(k,l) in S} ||c_k - c_l||^2
//!      + gamma [ sum_ik r_ik ||z_i - c_k||^2 + sigma sum_ik r_ik log r_ik ]`
//!
//! (the paper writes the tree term as `(lambda/2) sum_{k,l} s_kl ||c_k - c_l||^2` over ordered
//! pairs of a symmetric 0/1 matrix `S`, which is the sum over the tree's edges above; the paper
//! stores samples in columns, `||y_i - W z_i||^2`, which is the same number).
//!
//! Alternating minimisation (Alg. 2), each block solved exactly so `f` never increases:
//! 1. `S` = minimum spanning tree of the complete graph on the centres with weights
//!    `||c_k - c_l||^2` (eq. 28; Prim, [`structdr_numerics::graphs::mst_sq_euclidean`], O(K^2 d);
//!    Borůvka on a k-d tree for many centres in a few dimensions, see [`spanning_tree`]).
//! 2. `r_ik = exp(-||z_i - c_k||^2 / sigma) / sum_l exp(-||z_i - c_l||^2 / sigma)` (eq. 32, Lemma 1),
//!    computed with the row minimum subtracted (log-sum-exp stable).
//! 3. Prop. 5 (eq. 33), with `L` the tree Laplacian, `Gamma = diag(1^T R)`, `A = (lambda/gamma) L + Gamma`:
//!    `M = ((1+gamma)/gamma) A - R^T R` (K x K),
//!    `Q = (I + R M^-1 R^T) / (1 + gamma)` (never formed),
//!    `W` = top-d eigenvectors of `Y^T Q Y = (Y^T Y + B^T M^-1 B) / (1+gamma)` with `B = R^T Y`,
//!    `Z = Q Y W = (Y W + R M^-1 (B W)) / (1 + gamma)`, `C = A^-1 R^T Z`.
//!
//! Cost per iteration: the assignments O(N K d), or with many centres in a few dimensions a k-d
//! tree search, O(N (log K + nnz per row) d), bit for bit the same `R`; the tree O(K^2 d) (Prim),
//! or Borůvka on a k-d tree ([`spanning_tree`]); the Woodbury form O(nnz(R) (D + d) + K^2 D +
//! K^3/3) with a dense Cholesky of `M`, or, when `R` is sparse and K >= [`SPARSE_MIN_K`], `M`
//! assembled sparsely (O(sum_i nnz(r_i)^2)) and factored by the supernodal sparse Cholesky when
//! that is cheaper (`mfactor.rs`: pattern = tree edges + centre pairs that share a sample;
//! memory O(nnz(L)) instead of `8 K^2` bytes); O(N D d) for `Y W`, and O(D^3)
//! (D <= [`DENSE_EIGEN_MAX_D`]) or a warm-started matrix-free subspace iteration on
//! `V -> Y^T (Y V) + B^T M^-1 (B V)` (larger D) for `W`. `Y^T Y` is formed once. `A` is a tree
//! plus a diagonal, so `A^-1` is applied by leaf-to-root elimination in O(K d) (no fill-in). No
//! N x N matrix is ever formed, and with K = N on the sparse path no K x K one either.
//!
//! Soft assignments below `r_threshold` (relative to the row's largest, i.e. `exp(-(d_ik -
//! min_l d_il)/sigma) < r_threshold`) are dropped and the row renormalised, so `R` is stored sparse
//! (with a small `sigma` it is nearly hard); the objective is evaluated on the stored `R`, which is
//! a point of the simplex, so the block updates stay exact. `r_threshold = 0` keeps every
//! representable entry (only exact underflows are dropped).
//!
//! Two references (parameter `reference`):
//! - `paper` (default): the data are centred (the paper initialises by PCA; the model has no
//!   offset), `W, Z` start from PCA, the history records `f` after every full sweep (S, R, W/Z/C),
//!   the stopping rule is `|f_t - f_{t-1}| <= tol |f_{t-1}|`, and the returned tree is the MST of
//!   the returned centres. K < N centres come from k-means++ (seeded) + Lloyd on the PCA scores.
//! - `r-ddrtree`: R package DDRTree 0.1.5 as Monocle 2 calls it: no centring (PCA of `X X^T`),
//!   its objective for the stopping rule (reconstruction term = the square of the largest |entry|
//!   of the top-d right singular vectors of `X - W Z`, or `||X - W Z||_2^4` when d >= min(D, N)),
//!   evaluated after S and R and before the update, with the break before the update, so the
//!   returned tree is the one computed from the centres before the last update; K < N initial
//!   centres are the rows `floor(seq(1, N, length.out = K))` refined by k-means with at most K
//!   iterations (Lloyd here, Hartigan-Wong in R). See `docs/parity/ddrtree.md`.

use crate::api::declare::{self, coded, declare_params, fixed, param_choice, Declared, ParamType};
use crate::api::info::{auto, choice, dim, float_in, int, positive, MethodInfo};
use crate::api::params::{closed, open};
use crate::api::OutputKind;
use crate::api::{
    check_input, numerical, numerics, Embedder, FitInput, Fitted, Init, MethodError, Output, ParamMap, ParamValue, PrincipalGraph, Result, Trace,
};
use ndarray::{s, Array1, Array2, ArrayView1, ArrayView2, Axis};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use structdr_linalg::{canonicalize_signs, eigh, eigh_top};
use structdr_numerics::graphs::RootedTree;

mod assign;
mod eigen;
mod mfactor;

use assign::{sq, use_kd_tree, Assign, Columns, ROW_BLOCK};
use eigen::top_eigvecs_dense;
pub use eigen::top_eigvecs_subspace;
use mfactor::{MAssembly, MInfo, SparsePattern};
pub use mfactor::{MSolver, DENSE_FLOP_RATIO, SPARSE_MIN_K};

/// Largest D for which `Y^T Q Y` is formed (D x D) and diagonalised by LAPACK; above it the
/// top-d eigenvectors come from a matrix-free subspace iteration (with [`EigenSolver::Auto`]).
pub const DENSE_EIGEN_MAX_D: usize = 500;
/// Above this many entries (N K) a returned `R` is not kept dense unless asked (`keep_r`).
pub const KEEP_R_MAX_ENTRIES: usize = 1 << 22;
/// Default drop threshold for soft assignments (see the module doc).
pub const DEFAULT_R_THRESHOLD: f64 = 1e-12;

param_choice! {
    /// Which behaviour to reproduce.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Reference {
        /// The paper's objective and algorithm on centred data.
        Paper = "paper",
        /// R DDRTree 0.1.5 (uncentred PCA, its stopping rule and lagging tree, its k-means start).
        RDdrtree = "r-ddrtree",
    }
}

/// The number of centres K.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Centres {
    /// K = N, `C = Z` at the start (DRTree, Alg. 2 line 3).
    All,
    /// A given K (2 <= K <= N).
    Count(usize),
    /// Monocle 2's rule: `K = round(2 * 100 * ln N / (ln N + ln 100))` for N >= 100, else K = N.
    Monocle,
}

/// How the top-d eigenvectors of `Y^T Q Y` are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EigenSolver {
    /// Dense for D <= [`DENSE_EIGEN_MAX_D`], subspace iteration above.
    Auto,
    /// Form the D x D matrix and call LAPACK `dsyevr`.
    Dense,
    /// Matrix-free block subspace iteration with Rayleigh-Ritz, warm-started from the previous `W`.
    Subspace,
}

/// The registry entry a [`DdrTree`] belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeEntry {
    /// `drtree`: K = N ([`Centres::All`]).
    DrTree,
    /// `ddrtree`: K < N centres, the `ncenter` parameter.
    DdrTree,
}

/// `ncenter`: `auto` is Monocle's rule, an integer a given count.
fn centres_from_value(v: &ParamValue) -> Option<Centres> {
    Option::<usize>::from_value(v).map(|k| k.map_or(Centres::Monocle, Centres::Count))
}

/// The inverse of [`centres_from_value`] (a `ddrtree` instance never has [`Centres::All`]: that
/// is `drtree`'s).
fn centres_to_value(c: &Centres) -> ParamValue {
    match c {
        Centres::Count(k) => Some(*k),
        Centres::Monocle | Centres::All => None,
    }
    .to_value()
}

declare_params! {
    // one declaration for drtree (K = N) and ddrtree (K centres: the `ncenter` parameter)
    entry entry: TreeEntry = |m| if m.centres == Centres::All { TreeEntry::DrTree } else { TreeEntry::DdrTree };
    /// DRTree / DDRTree parameters (see the module doc for the objective and the updates).
    #[derive(Debug, Clone)]
    pub struct DdrTree {
        /// Latent dimension d (1 <= d <= D).
        pub dim: usize = dim(),
        /// Tree penalty `lambda >= 0`; `None` = `5 N` (R DDRTree's default).
        pub lambda: Option<f64> = auto(float_in("lambda", closed(0.0), open(f64::INFINITY), 0.0, "tree penalty lambda >= 0 (lambda sum over tree edges of ||c_k - c_l||^2); auto = 5 N, R DDRTree's default")),
        /// Soft-assignment bandwidth `sigma > 0` (eq. 32).
        pub sigma: f64 = positive("sigma", 1e-3, "soft-assignment bandwidth sigma > 0: r_ik = softmax_k(-||z_i - c_k||^2 / sigma) (eq. 32)"),
        /// Weight `gamma > 0` of the quantisation term.
        pub gamma: f64 = positive("gamma", 10.0, "weight gamma > 0 of the soft k-means term gamma [sum r_ik ||z_i - c_k||^2 + sigma sum r_ik log r_ik]"),
        /// Number of centres.
        pub centres: Centres = match entry {
            TreeEntry::DrTree => fixed(Centres::All),
            TreeEntry::DdrTree => coded(auto(int("ncenter", 2, 2, "number of centres K (2 <= K <= N; centres from k-means on the initial Z, k-means++ seeded by the fit seed); auto = Monocle 2's rule round(2*100*ln N / (ln N + ln 100)) for N >= 100, K = N below 100")), centres_from_value, centres_to_value),
        },
        /// Maximum number of iterations (>= 1).
        pub max_iter: usize = int("max_iter", 1, 20, "maximum number of alternating iterations"),
        /// Relative objective change that stops the iteration (>= 0).
        pub tol: f64 = float_in("tol", closed(0.0), open(f64::INFINITY), 1e-3, "stop when |f_t - f_{t-1}| < tol |f_{t-1}| (f: the paper's objective, or R DDRTree's with reference = r-ddrtree)"),
        // the one initialisation a spec names (a fit input may carry another)
        _ = choice("init", &["pca"], "pca", "initial W and Z: PCA (centred in the paper mode, of X X^T uncentred with r-ddrtree); a fit input may instead carry an initial Z (Init::Embedding) or initial centres (Init::Centres)"),
        /// Which behaviour to reproduce.
        pub reference: Reference = choice("reference", Reference::NAMES, "paper", "paper: the paper's objective on centred data, history after each sweep, final tree = MST of the final centres; r-ddrtree: R DDRTree 0.1.5 (uncentred PCA, its stopping objective and break before the update, lagging tree, k-means from rows floor(seq(1, N, length.out = K)) with K Lloyd sweeps); see docs/parity/ddrtree.md"),
        /// Soft assignments with `exp(-(d_ik - min_l d_il)/sigma)` below this are dropped (in [0, 1)).
        pub r_threshold: f64 = fixed(DEFAULT_R_THRESHOLD),
        /// Return the dense N x K assignment matrix even when N K > [`KEEP_R_MAX_ENTRIES`].
        pub keep_r: bool = fixed(false),
        /// Eigen solver for `W`.
        pub eigen_solver: EigenSolver = fixed(EigenSolver::Auto),
        /// How `M` of Prop. 5 is factored (dense or sparse Cholesky; by cost with `Auto`).
        pub m_solver: MSolver = fixed(MSolver::Auto),
    }
}

impl DdrTree {
    /// DRTree: K = N, centres start at the latent points; the `drtree` registry defaults (R
    /// DDRTree's numeric defaults `sigma = 1e-3, gamma = 10, lambda = 5N, max_iter = 20,
    /// tol = 1e-3`), paper mode.
    pub fn drtree(dim: usize) -> DdrTree {
        DdrTree { dim, ..DdrTree::defaults(TreeEntry::DrTree) }
    }

    /// DDRTree with K from Monocle's rule (or a given count), otherwise as [`DdrTree::drtree`].
    // Named after the registry entry it builds (`ddrtree`), beside `DdrTree::drtree`.
    #[allow(clippy::self_named_constructors)]
    pub fn ddrtree(dim: usize, centres: Centres) -> DdrTree {
        DdrTree { centres, ..DdrTree::drtree(dim) }
    }
}

/// User-given starting point (Rust API): latent points `Z` (N x d) and/or centres `C` (K x d).
/// Without `z`, `Z = Y W` from PCA; without `centres`, `C = Z` (K = N) or k-means on `Z`.
#[derive(Debug, Clone, Default)]
pub struct DdrTreeInit<'a> {
    /// Initial latent points (N x d).
    pub z: Option<ArrayView2<'a, f64>>,
    /// Initial centres (K x d); K must agree with the `centres` setting unless that is `All`... see [`DdrTree::fit_with_init`].
    pub centres: Option<ArrayView2<'a, f64>>,
}

/// Everything a DDRTree fit produces.
#[derive(Debug, Clone)]
pub struct DdrTreeFit {
    /// Latent points `Z` (N x d).
    pub z: Array2<f64>,
    /// Projection `W` (D x d, orthonormal columns, signs canonicalised: largest |entry| positive).
    pub w: Array2<f64>,
    /// Centres `C` (K x d).
    pub centres: Array2<f64>,
    /// Tree over the centres: `(k, l, ||c_k - c_l||)` with `k < l`, sorted (K - 1 edges).
    pub tree: Vec<(usize, usize, f64)>,
    /// Soft assignments `R` (N x K) of the returned `Z` to the returned centres, when
    /// N K <= [`KEEP_R_MAX_ENTRIES`] or `keep_r` is set.
    pub r: Option<Array2<f64>>,
    /// For every sample, the centre with the largest `r_ik` (ties: lowest index).
    pub labels: Vec<usize>,
    /// The paper's objective `f` per iteration (paper mode: after each sweep; r-ddrtree mode: at
    /// the point where R DDRTree evaluates its own objective, after S and R, before the update).
    pub history: Vec<f64>,
    /// The values the stopping rule compared: `history` in paper mode, R DDRTree's objective in
    /// r-ddrtree mode.
    pub stop_history: Vec<f64>,
    /// Number of (W, Z, C) updates performed.
    pub iterations: usize,
    /// Whether the stopping rule was met before `max_iter`.
    pub converged: bool,
    /// `f` at the returned (W, Z, C, tree, R).
    pub final_objective: f64,
    /// Column means subtracted from the data (paper mode), `None` in r-ddrtree mode.
    pub mean: Option<Array1<f64>>,
    /// The lambda used (resolved from `None` = 5 N).
    pub lambda: f64,
    /// Remarks (K rule, R density, ...).
    pub notes: Vec<String>,
}

const METHOD: &str = "ddrtree";

fn input_err(reason: impl Into<String>) -> MethodError {
    MethodError::Input { method: METHOD, reason: reason.into() }
}

/// Monocle 2's number of centres: `round(2 * 100 * ln N / (ln N + ln 100))` (for N >= 100).
pub fn monocle_ncenter(n: usize) -> usize {
    let ln = (n as f64).ln();
    (2.0 * 100.0 * ln / (ln + 100f64.ln())).round() as usize
}

// ---------------------------------------------------------------------------------------------
// k-means

/// R's `seq(1, N, length.out = K)` truncated to 0-based row indices (R DDRTree's k-means start).
pub fn r_seq_rows(n: usize, k: usize) -> Vec<usize> {
    if k == 1 {
        return vec![0];
    }
    let by = (n as f64 - 1.0) / (k as f64 - 1.0);
    (0..k).map(|j| if j + 1 == k { n - 1 } else { (1.0 + j as f64 * by).floor() as usize - 1 }).collect()
}

// ---------------------------------------------------------------------------------------------
// The fit

struct State {
    w: Array2<f64>,
    z: Array2<f64>,
    c: Array2<f64>,
}

impl DdrTree {
    fn validate(&self, x: &ArrayView2<f64>) -> Result<(usize, f64)> {
        check_input(METHOD, x, 2)?;
        let (n, dd) = x.dim();
        if self.dim == 0 || self.dim > dd {
            return Err(input_err(format!("dim = {} must be in [1, D] = [1, {dd}]", self.dim)));
        }
        if !(self.sigma > 0.0 && self.sigma.is_finite()) {
            return Err(input_err(format!("sigma = {} must be finite and > 0", self.sigma)));
        }
        if !(self.gamma > 0.0 && self.gamma.is_finite()) {
            return Err(input_err(format!("gamma = {} must be finite and > 0", self.gamma)));
        }
        let lambda = self.lambda.unwrap_or(5.0 * n as f64);
        if !(lambda >= 0.0 && lambda.is_finite()) {
            return Err(input_err(format!("lambda = {lambda} must be finite and >= 0")));
        }
        if !(self.tol >= 0.0) {
            return Err(input_err(format!("tol = {} must be >= 0", self.tol)));
        }
        if self.max_iter == 0 {
            return Err(input_err("max_iter = 0: at least one iteration is needed"));
        }
        if !(0.0..1.0).contains(&self.r_threshold) {
            return Err(input_err(format!("r_threshold = {} must be in [0, 1)", self.r_threshold)));
        }
        let k = match self.centres {
            Centres::All => n,
            Centres::Count(k) => k,
            Centres::Monocle => {
                if n >= 100 {
                    monocle_ncenter(n)
                } else {
                    n
                }
            }
        };
        if k < 2 {
            return Err(input_err(format!("ncenter = {k}: a tree needs at least 2 centres")));
        }
        if k > n {
            return Err(input_err(format!("ncenter = {k} exceeds the number of samples N = {n}")));
        }
        let first = x.row(0);
        if x.rows().into_iter().all(|r| r == first) {
            return Err(input_err("constant data: every sample is identical, there is no structure to embed"));
        }
        Ok((k, lambda))
    }

    /// Fits from PCA (paper: k-means++ with `seed` for K < N). See [`DdrTree::fit_with_init`].
    pub fn fit_full(&self, x: ArrayView2<f64>, seed: u64) -> Result<DdrTreeFit> {
        self.fit_with_init(x, seed, DdrTreeInit::default())
    }

    /// Fits from a user-given `Z` and/or centres. Given centres fix K (they override `centres`).
    ///
    /// (BLAS threads are left alone: OpenBLAS's count is process-global, and switching it here
    /// made concurrent fits in one process change each other's results.)
    pub fn fit_with_init(&self, x: ArrayView2<f64>, seed: u64, init: DdrTreeInit<'_>) -> Result<DdrTreeFit> {
        let (mut k, lambda) = self.validate(&x)?;
        let (n, dd) = x.dim();
        let d = self.dim;
        let rmode = self.reference == Reference::RDdrtree;
        let mut notes = Vec::new();
        // data
        let (y, mean) = if rmode {
            (x.as_standard_layout().to_owned(), None)
        } else {
            let mu = x.mean_axis(Axis(0)).expect("n > 0");
            ((&x - &mu.view().insert_axis(Axis(0))).as_standard_layout().to_owned(), Some(mu))
        };
        let dense_eig = match self.eigen_solver {
            EigenSolver::Dense => true,
            EigenSolver::Subspace => false,
            EigenSolver::Auto => dd <= DENSE_EIGEN_MAX_D,
        };
        let yty = if dense_eig { Some(y.t().dot(&y)) } else { None };
        // initial W (PCA of Y^T Y: centred in paper mode, uncentred in r mode)
        let w0 = match &yty {
            Some(g) => top_eigvecs_dense(g.view(), d)?,
            None => top_eigvecs_subspace(dd, d, |v| y.t().dot(&y.dot(&v)), None),
        };
        let z0 = match init.z {
            Some(z) => {
                if z.dim() != (n, d) {
                    return Err(input_err(format!("initial Z is {:?}, expected ({n}, {d})", z.dim())));
                }
                if z.iter().any(|v| !v.is_finite()) {
                    return Err(input_err("initial Z has non-finite entries"));
                }
                z.to_owned()
            }
            None => y.dot(&w0),
        };
        let c0 = match init.centres {
            Some(c) => {
                if c.ncols() != d || c.nrows() < 2 || c.nrows() > n || c.iter().any(|v| !v.is_finite()) {
                    return Err(input_err(format!("initial centres are {:?}: need K x {d} finite with 2 <= K <= N", c.dim())));
                }
                k = c.nrows();
                c.to_owned()
            }
            None if k == n && self.centres == Centres::All => z0.clone(),
            None if k == n => z0.clone(),
            None if rmode => {
                let rows = r_seq_rows(n, k);
                let mut c = Array2::zeros((k, d));
                for (r, &i) in rows.iter().enumerate() {
                    c.row_mut(r).assign(&z0.row(i));
                }
                for a in 0..k {
                    for b in 0..a {
                        if c.row(a) == c.row(b) {
                            return Err(input_err(format!(
                                "initial centres are not distinct (rows {} and {} of Z coincide), as R's kmeans would report",
                                rows[b] + 1,
                                rows[a] + 1
                            )));
                        }
                    }
                }
                structdr_numerics::clustering::lloyd_from(z0.view(), c, k).centres
            }
            None => structdr_numerics::clustering::kmeans(z0.view(), k, seed, 300).map_err(numerics(METHOD))?.centres,
        };
        if self.centres == Centres::Monocle {
            notes.push(format!("ncenter from Monocle's rule: K = {k} (N = {n})"));
        }
        notes.push(format!(
            "K = {k}, lambda = {lambda}, sigma = {}, gamma = {}, reference = {}",
            self.sigma,
            self.gamma,
            if rmode { "r-ddrtree" } else { "paper" }
        ));

        let mut st = State { w: w0, z: z0, c: c0 };
        let mut history = Vec::new();
        let mut stop_history = Vec::new();
        let mut converged = false;
        let mut m_stats = MStats::default();
        let mut pattern = None;
        let mut iterations = 0;
        let mut last_tree: Vec<(usize, usize, f64)> = Vec::new();
        let mut max_density = 0.0f64;
        for iter in 0..self.max_iter {
            let tree = spanning_tree(st.c.view());
            let assign = Assign::compute(st.z.view(), st.c.view(), self.sigma, self.r_threshold);
            max_density = max_density.max(assign.nnz() as f64 / (n as f64 * k as f64));
            if rmode {
                let f = self.objective(y.view(), &st, &tree, &assign, lambda);
                let g = self.r_objective(y.view(), &st, &tree, &assign, lambda, dense_eig)?;
                history.push(f);
                structdr_numerics::progress::report(history.len(), f);
                stop_history.push(g);
                last_tree = tree.clone();
                if iter >= 1 && rel_change(stop_history[iter - 1], g) < self.tol {
                    converged = true;
                    break;
                }
                m_stats.add(self.update(y.view(), yty.as_ref(), &mut st, &tree, &assign, lambda, &mut pattern)?);
                iterations += 1;
            } else {
                m_stats.add(self.update(y.view(), yty.as_ref(), &mut st, &tree, &assign, lambda, &mut pattern)?);
                iterations += 1;
                let f = self.objective(y.view(), &st, &tree, &assign, lambda);
                history.push(f);
                structdr_numerics::progress::report(history.len(), f);
                if iter >= 1 && rel_change(history[iter - 1], f) < self.tol {
                    converged = true;
                    break;
                }
            }
        }
        if !rmode {
            stop_history = history.clone();
            last_tree = spanning_tree(st.c.view());
        }
        let assign = Assign::compute(st.z.view(), st.c.view(), self.sigma, self.r_threshold);
        let final_objective = self.objective(y.view(), &st, &last_tree, &assign, lambda);
        notes.push(format!("largest density of R over the iterations: {max_density:.3e} (drop threshold {:e})", self.r_threshold));
        notes.push(m_stats.note(k));
        if use_kd_tree(k, d) {
            notes.push(format!("K = {k} centres in d = {d}: soft assignments from a k-d tree, tree step = Euclidean MST by Boruvka (ties by (weight, i, j))"));
        }
        let mut tree: Vec<(usize, usize, f64)> = last_tree.iter().map(|&(u, v, w2)| (u.min(v), u.max(v), w2.sqrt())).collect();
        tree.sort_by_key(|a| (a.0, a.1));
        let labels = assign.labels();
        let r = if self.keep_r || n * k <= KEEP_R_MAX_ENTRIES { Some(assign.to_dense()) } else { None };
        Ok(DdrTreeFit { z: st.z, w: st.w, centres: st.c, tree, r, labels, history, stop_history, iterations, converged, final_objective, mean, lambda, notes })
    }

    /// One exact (W, Z, C) update given the tree and the assignments (Prop. 5).
    fn update(
        &self,
        y: ArrayView2<f64>,
        yty: Option<&Array2<f64>>,
        st: &mut State,
        tree: &[(usize, usize, f64)],
        assign: &Assign,
        lambda: f64,
        pattern: &mut Option<SparsePattern>,
    ) -> Result<MInfo> {
        let k = assign.k();
        let g = self.gamma;
        let wl = lambda / g;
        let s = (1.0 + g) / g;
        let gam = assign.col_sums();
        let rooted = RootedTree::new(k, tree);
        // M = s (wl L + Gamma) - R^T R, dense or sparse by cost (mfactor.rs)
        let cols = Columns::new(assign, &rooted);
        let (m, info) = MAssembly::new(assign, cols.as_ref(), tree, &rooted, &gam, s, wl, self.m_solver, pattern).map_err(numerical(METHOD))?;
        let fac = m.factor(pattern).map_err(numerical(METHOD))?;
        let b = assign.rt_mul(y, cols.as_ref()); // K x D
        let w = match yty {
            Some(yty) => {
                let mut gm = fac.quad(b.view()); // B^T M^-1 B
                gm += yty;
                let gt = gm.t().to_owned();
                gm = (&gm + &gt) * (0.5 / (1.0 + g));
                top_eigvecs_dense(gm.view(), self.dim)?
            }
            None => {
                let apply = |v: ArrayView2<f64>| {
                    let bv = b.dot(&v);
                    let mut out = y.t().dot(&y.dot(&v));
                    out += &b.t().dot(&fac.solve(bv.view()));
                    out / (1.0 + g)
                };
                top_eigvecs_subspace(y.ncols(), self.dim, apply, Some(st.w.view()))
            }
        };
        let yw = y.dot(&w);
        let xw = fac.solve(b.dot(&w).view()); // M^-1 B W
        let z = (yw + assign.mul(xw.view())) / (1.0 + g);
        let rhs = assign.rt_mul(z.view(), cols.as_ref());
        let c = rooted.solve(wl, &gam, rhs, st.c.view());
        *st = State { w, z, c };
        Ok(info)
    }

    /// The paper's objective (31) at the given state.
    fn objective(&self, y: ArrayView2<f64>, st: &State, tree: &[(usize, usize, f64)], assign: &Assign, lambda: f64) -> f64 {
        let recon = reconstruction(y, st.z.view(), st.w.view());
        let tree_term: f64 = tree.iter().map(|&(u, v, _)| sq(st.c.row(u), st.c.row(v))).sum();
        let (rd, rlr) = assign.terms(st.z.view(), st.c.view());
        recon + lambda * tree_term + self.gamma * (rd + self.sigma * rlr)
    }

    /// R DDRTree 0.1.5's objective (see the module doc): its reconstruction term, `lambda tr(C^T L C)`
    /// and `gamma` times the soft-min `sum_i [min_k d_ik - sigma ln sum_k exp(-(d_ik - min)/sigma)]`
    /// (equal to the paper's bracket at the optimal R).
    fn r_objective(&self, y: ArrayView2<f64>, st: &State, tree: &[(usize, usize, f64)], assign: &Assign, lambda: f64, dense: bool) -> Result<f64> {
        let e = &y - &st.z.dot(&st.w.t());
        let (n, dd) = e.dim();
        let d = self.dim;
        let recon = if d >= n.min(dd) {
            let g = e.t().dot(&e);
            let top = eigh_top(g.view(), 1).map_err(numerical(METHOD))?.values[0].max(0.0);
            top * top // (||E||_2^2)^2
        } else {
            let v = if dense { top_eigvecs_dense(e.t().dot(&e).view(), d)? } else { top_eigvecs_subspace(dd, d, |v| e.t().dot(&e.dot(&v)), None) };
            // right singular vectors of R's X - W Z (D x N) = left singular vectors of E (N x d)
            let u = e.dot(&v);
            let mut mx = 0.0f64;
            for col in u.columns() {
                let nrm = col.dot(&col).sqrt();
                if nrm > 0.0 {
                    mx = col.iter().fold(mx, |a, &x| a.max(x.abs() / nrm));
                }
            }
            mx * mx
        };
        let tree_term: f64 = tree.iter().map(|&(u, v, _)| sq(st.c.row(u), st.c.row(v))).sum();
        let (rd, rlr) = assign.terms(st.z.view(), st.c.view());
        Ok(recon + lambda * tree_term + self.gamma * (rd + self.sigma * rlr))
    }
}

/// The objective (31) for a dense `R` (N x K) and a tree given as edges (weights ignored):
/// `||Y - Z W^T||^2 + lambda sum_tree ||c_k - c_l||^2 + gamma [sum r_ik ||z_i - c_k||^2 + sigma sum r_ik ln r_ik]`
/// (`0 ln 0 = 0`). `Y` as the fit sees it (centred in the paper mode).
#[allow(clippy::too_many_arguments)]
pub fn objective(
    y: ArrayView2<f64>,
    z: ArrayView2<f64>,
    w: ArrayView2<f64>,
    c: ArrayView2<f64>,
    tree: &[(usize, usize, f64)],
    r: ArrayView2<f64>,
    lambda: f64,
    gamma: f64,
    sigma: f64,
) -> f64 {
    let st = State { w: w.to_owned(), z: z.to_owned(), c: c.to_owned() };
    let m = DdrTree { lambda: Some(lambda), gamma, sigma, ..DdrTree::drtree(w.ncols()) };
    m.objective(y, &st, tree, &Assign::Dense(r.to_owned()), lambda)
}

/// Dense soft assignments (eq. 32), every entry kept: `r_ik = softmax_k(-||z_i - c_k||^2 / sigma)`.
pub fn soft_assignments(z: ArrayView2<f64>, c: ArrayView2<f64>, sigma: f64) -> Array2<f64> {
    Assign::compute(z, c, sigma, 0.0).to_dense()
}

impl DdrTree {
    /// The closed-form block update of Prop. 5 for a given tree and dense `R`: returns `(W, Z, C)`.
    /// `y` as the fit sees it (centred in the paper mode); `c_prev` is kept for centres that do not
    /// enter the objective (lambda = 0 and an empty column of R). Lambda `None` = 5 N.
    pub fn closed_form(
        &self,
        y: ArrayView2<f64>,
        tree: &[(usize, usize, f64)],
        r: ArrayView2<f64>,
        c_prev: ArrayView2<f64>,
    ) -> Result<(Array2<f64>, Array2<f64>, Array2<f64>)> {
        let lambda = self.lambda.unwrap_or(5.0 * y.nrows() as f64);
        let yty = y.t().dot(&y);
        let dense = match self.eigen_solver {
            EigenSolver::Dense => true,
            EigenSolver::Subspace => false,
            EigenSolver::Auto => y.ncols() <= DENSE_EIGEN_MAX_D,
        };
        let w0 = top_eigvecs_dense(yty.view(), self.dim)?;
        let mut st = State { w: w0, z: Array2::zeros((y.nrows(), self.dim)), c: c_prev.to_owned() };
        self.update(y, if dense { Some(&yty) } else { None }, &mut st, tree, &Assign::Dense(r.to_owned()), lambda, &mut None)?;
        Ok((st.w, st.z, st.c))
    }
}

fn rel_change(prev: f64, cur: f64) -> f64 {
    let diff = (prev - cur).abs();
    if prev == 0.0 {
        diff
    } else {
        diff / prev.abs()
    }
}

/// The tree step (eq. 28): the minimum spanning tree of the centres under squared distances.
/// Prim ([`structdr_numerics::graphs::mst_sq_euclidean`], O(K^2 d)) unless the centres are many
/// and low-dimensional ([`use_kd_tree`]), where Borůvka on a k-d tree gives the same tree when
/// the distances are distinct ([`structdr_numerics::graphs::emst_sq_euclidean`]; with ties a
/// tree of the same weight, ties broken by `(weight, i, j)`).
fn spanning_tree(c: ArrayView2<f64>) -> Vec<(usize, usize, f64)> {
    if use_kd_tree(c.nrows(), c.ncols()) {
        structdr_numerics::graphs::emst_sq_euclidean(c)
    } else {
        structdr_numerics::graphs::mst_sq_euclidean(c)
    }
}

/// Counts of the factorisations of M over a fit.
#[derive(Debug, Default)]
struct MStats {
    sparse: usize,
    dense: usize,
    max_nnz_m: usize,
    max_nnz_l: usize,
}

impl MStats {
    fn add(&mut self, info: MInfo) {
        if info.sparse {
            self.sparse += 1;
            self.max_nnz_l = self.max_nnz_l.max(info.nnz_l);
        } else {
            self.dense += 1;
        }
        self.max_nnz_m = self.max_nnz_m.max(info.nnz_m);
    }
    fn note(&self, k: usize) -> String {
        format!(
            "M (K x K, K = {k}) factored by sparse Cholesky in {} and densely in {} update(s); largest off-diagonal pattern {} pairs, largest nnz(L) {}",
            self.sparse, self.dense, self.max_nnz_m, self.max_nnz_l
        )
    }
}

/// `||Y - Z W^T||_F^2`, summed entry by entry in fixed row blocks (deterministic).
fn reconstruction(y: ArrayView2<f64>, z: ArrayView2<f64>, w: ArrayView2<f64>) -> f64 {
    let n = y.nrows();
    let nblocks = n.div_ceil(ROW_BLOCK);
    let parts: Vec<f64> = (0..nblocks)
        .into_par_iter()
        .map(|b| {
            let (lo, hi) = (b * ROW_BLOCK, ((b + 1) * ROW_BLOCK).min(n));
            let rec = z.slice(s![lo..hi, ..]).dot(&w.t());
            let diff = &y.slice(s![lo..hi, ..]) - &rec;
            diff.iter().map(|v| v * v).sum::<f64>()
        })
        .collect();
    parts.iter().sum()
}

impl Embedder for DdrTree {
    fn name(&self) -> &'static str {
        if self.centres == Centres::All {
            "drtree"
        } else {
            "ddrtree"
        }
    }
    /// Accepts an initial value: [`Init::Embedding`] sets the initial latent points Z (N x d),
    /// [`Init::Centres`] the initial centres (K x d), as [`DdrTree::fit_with_init`].
    fn info(&self) -> MethodInfo {
        if self.centres == Centres::All {
            info_drtree()
        } else {
            info_ddrtree()
        }
    }
    fn params(&self) -> ParamMap {
        self.to_params()
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        let init = match input.init {
            None => DdrTreeInit::default(),
            Some(Init::Embedding(z)) => DdrTreeInit { z: Some(z), centres: None },
            Some(Init::Centres(c)) => DdrTreeInit { z: None, centres: Some(c) },
        };
        let f = self.fit_with_init(input.x, input.seed, init)?;
        let mut notes = f.notes;
        notes.push(format!("final objective {:.9e}", f.final_objective));
        let stop = crate::api::StopReason::classify(f.converged, f.iterations, self.max_iter, crate::api::relative_change(&f.stop_history), Some(self.tol), "");
        let graph = PrincipalGraph { centres: f.centres, edges: f.tree, projection: f.z };
        let mut fitted = Fitted::new(Output::PrincipalGraph(graph), Trace::iterative(f.stop_history, f.iterations, stop, ""));
        fitted.notes = notes;
        Ok(fitted)
    }
}

// ---------------------------------------------------------------------------------------------
// Registry

pub(crate) fn info_drtree() -> MethodInfo {
    MethodInfo {
        name: "drtree",
        summary: "DRTree: DDRTree (Alg. 2) with K = N centres starting at the latent points: min ||Y - Z W^T||^2 + lambda sum_tree ||c_k - c_l||^2 + gamma [sum r_ik ||z_i - c_k||^2 + sigma sum r_ik log r_ik], tree = MST of the centres.",
        reference: "Wang et al., Probabilistic dimensionality reduction via structure learning, §4.2-4.3, eq. 29-33, Alg. 2; R package DDRTree 0.1.5",
        version: 2,
        output: OutputKind::PrincipalGraph,
        needs_labels: false,
        accepts_init: true,
        inductive: false,
        randomised: true,
        params: DdrTree::schema(TreeEntry::DrTree),
        build: |p| declare::build::<DdrTree>("drtree", TreeEntry::DrTree, p),
    }
}

pub(crate) fn info_ddrtree() -> MethodInfo {
    MethodInfo {
        name: "ddrtree",
        summary: "DDRTree (Alg. 2, eq. 31) with K < N centres: reversed graph embedding on a tree of k-means-initialised centres, soft assignments, closed-form W, Z, C (Prop. 5).",
        reference: "Wang et al., Probabilistic dimensionality reduction via structure learning, §4.3, eq. 31-33, Alg. 2; R package DDRTree 0.1.5 (Monocle 2)",
        version: 2,
        output: OutputKind::PrincipalGraph,
        needs_labels: false,
        accepts_init: true,
        inductive: false,
        randomised: true,
        params: DdrTree::schema(TreeEntry::DdrTree),
        build: |p| declare::build::<DdrTree>("ddrtree", TreeEntry::DdrTree, p),
    }
}

#[cfg(test)]
mod tests;
