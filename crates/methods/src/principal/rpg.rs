//! Regularized principal graphs (Mao, Wang, Tsang, Sun; paper 004, §3-5, Algorithms 1 and 2).
//!
//! Learns K principal points `C` (K x D, one centre per row, in the INPUT space), a soft
//! assignment `P` (N x K, rows on the simplex) and a graph `W` over the centres by alternating
//! exact minimisation of (004 eq. 17 / 24, written with samples in rows)
//!
//! ```text
//! rho(W, C, P) = sum_{k,l} w_kl ||c_k - c_l||^2                      (graph length, = 2 tr(C^T L C))
//!              + lambda sum_k || z_k - sum_{l != k} w_lk z_l ||_1       (L1 graph only)
//!              + gamma sum_{i,k} p_ik [ ||x_i - c_k||^2 + sigma log p_ik ]
//! ```
//!
//! One iteration (Algorithm 1 / 2):
//! 1. `P`: row softmax `p_ik = exp(-||x_i - c_k||^2 / sigma) / sum_l exp(-||x_i - c_l||^2 / sigma)`
//!    (eq. 18, stable log-sum-exp). Entries more than 40 nats below their row's largest
//!    (`p < 4.2e-18 p_max`) are set to exactly 0 and the row renormalised over the rest: this makes
//!    `P^T X` sparse when sigma is small, at an objective cost below 1e-17 relative.
//! 2. `W` with `phi_kl = ||c_k - c_l||^2`:
//!    - spanning tree: `min_{W in W_T} tr(Phi^T W)` (eq. 20), a minimum spanning tree by Prim's
//!      algorithm ([`structdr_numerics::graphs::minimum_spanning_tree`]), `w_kl = 1` on tree edges;
//!    - L1 graph: the LP (eq. 19 restricted to the side information of eq. 23)
//!      `min_{W >= 0, W = W^T, diag W = 0, w_kl = 0 off E} sum_{k,l} w_kl phi_kl + lambda
//!      sum_k ||z_k - sum_l w_lk z_l||_1` where E is the symmetrised `nn`-NN graph of the
//!      dictionary Z (all pairs when `nn = 0`), solved by clarabel ([`l1_graph_lp`]).
//! 3. `C = (2/gamma L + Lambda)^-1 P^T X` (eq. 22 with samples in rows: 004's `C = X P (2/gamma L +
//!    Lambda)^-1` for X D x N), `L = diag(W 1) - W`, `Lambda = diag(1^T P)`; the K x K system is
//!    solved by leaf-to-root elimination for a tree (O(K D)) and by dense Cholesky for the L1 graph.
//!
//! `history[l] = rho(W_l, C_l, P_l)` at the end of iteration l: non-increasing by Theorem 1 (each
//! block is an exact minimiser). Stop when `|rho_l - rho_{l-1}| <= tol |rho_{l-1}|` (the paper's
//! relative change 1e-5) or after `max_iter` iterations.
//!
//! The dictionary Z of the L1 term is the INITIAL centre set (Z = X when K = N: 004 eq. 17 and
//! 23 write the term on the data x; Z = the k-means landmarks in eq. 24). Eq. 19 writes it as
//! `||C (I - W)||_1` with the current centres, but the C-update (eq. 21/22) ignores that term, so
//! only a fixed dictionary keeps Theorem 1 true; see docs/parity/rpg.md.
//!
//! Initialisation: `K = N` puts the centres on the data points (Algorithm 1, mean-shift style);
//! `K < N` runs seeded k-means (k-means++ and Lloyd, [`structdr_numerics::clustering`]) and starts from its centres
//! (Algorithm 2). The P-step finds, for every sample, the centres within `40 sigma` of its nearest
//! with exact distances through candidate lists and triangle-inequality drift bounds
//! ([`structdr_numerics::neighbours::NearCentres`]): O(N K D) by GEMM on the first pass and for rows whose bound
//! fails, O(N |candidates| D) otherwise (a few candidates per sample when sigma is small);
//! `P^T X` is accumulated sparsely. Then O(K^2 D) (edge costs) + the MST O(K^2) or the LP +
//! O(K D) (tree solve) or O(K^3) (L1 Cholesky). Memory O(block x K + K^2 + K D + N |candidates|),
//! never N x N unless K = N.
//!
//! Output ([`Embedder::fit`]): `embedding = P C` (N x D, each sample's soft projection onto the
//! principal points, in the input space) with P recomputed at the final C; `graph` = W over the K
//! centres; `history` = rho per iteration. [`Rpg::fit_graph`] returns the full [`PrincipalGraph`].

use crate::api::declare::{self, coded, declare_params, fixed, param_choice, Declared, ParamType};
use crate::api::info::{auto, choice, float_in, int, positive, MethodInfo};
use crate::api::params::{closed, open};
use crate::api::OutputKind;
use crate::api::{check_input, numerical, numerics, Embedder, FitInput, Fitted, MethodError, Output, ParamMap, ParamValue, Result, Trace};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis};
use rayon::prelude::*;
use structdr_linalg::{sq_dists, Cholesky};
use structdr_numerics::clustering::kmeans_pooled_seeding;
use structdr_numerics::dist::exact_sq_dist;
use structdr_numerics::graphs::{minimum_spanning_tree, RootedTree};
use structdr_numerics::neighbours::{knn, symmetrised_edges};
use structdr_numerics::neighbours::{NearCentres, DEFAULT_MARGIN};

/// Largest number of centres: the K x K system, edge costs and (K = N) the N x K assignment are
/// dense; above this, use `rpg-landmark` with K << N.
pub const RPG_MAX_K: usize = 10_000;
/// Largest K for the all-pairs L1 graph (`nn = 0`, K (K - 1) / 2 LP variables).
pub const RPG_FULL_L1_MAX_K: usize = 400;
/// Soft-assignment entries more than this many nats below the row maximum are set to 0.
pub const P_TRUNCATION_NATS: f64 = 40.0;
/// `PrincipalGraph::p` is kept only when N K is at most this (8 bytes each).
pub const KEEP_P_MAX_ENTRIES: usize = 4_000_000;

param_choice! {
    /// Which graph the W-step learns.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum GraphKind {
        /// Minimum-cost spanning tree (eq. 20), binary weights.
        Tree = "tree",
        /// Weighted undirected L1 graph (LP eq. 19 / 23).
        L1 = "l1",
    }
}

/// The registry entry an [`Rpg`] belongs to: `rpg-tree`, `rpg-l1` or `rpg-landmark`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RpgEntry {
    /// `rpg-tree`: Algorithm 1 with a spanning tree.
    Tree,
    /// `rpg-l1`: Algorithm 1 with an L1 graph.
    L1,
    /// `rpg-landmark`: Algorithm 2, either graph.
    Landmark,
}

impl RpgEntry {
    /// The value of this entry among one for each.
    pub fn pick<T>(self, tree: T, l1: T, landmark: T) -> T {
        match self {
            RpgEntry::Tree => tree,
            RpgEntry::L1 => l1,
            RpgEntry::Landmark => landmark,
        }
    }
}

const NC_DOC: &str = "number of centres K; auto = N (Algorithm 1: centres start at the data points); 2 <= K < N starts from seeded k-means centres";
const NC_DOC_LANDMARK: &str = "number of landmarks K; auto = min(1000, N) (the paper's K = 1000); K < N starts from seeded k-means centres, K = N at the data";
const UNUSED_BY_TREE: &str = "unused by the spanning tree (accepted so that 004 Table 1 rows apply to both graphs)";

/// `ncenter`: the field's 0 is the schema's `auto`.
fn ncenter_from_value(v: &ParamValue) -> Option<usize> {
    Option::<usize>::from_value(v).map(|k| k.unwrap_or(0))
}

fn ncenter_to_value(k: &usize) -> ParamValue {
    (*k != 0).then_some(*k).to_value()
}

declare_params! {
    // one declaration for rpg-tree, rpg-l1 and rpg-landmark (defaults and docs differ; the
    // landmark entry chooses its graph)
    entry entry: RpgEntry = |m| match (m.landmark, m.graph) {
        (true, _) => RpgEntry::Landmark,
        (false, GraphKind::Tree) => RpgEntry::Tree,
        (false, GraphKind::L1) => RpgEntry::L1,
    };
    /// Regularized principal graph learning (004 Algorithms 1 and 2).
    #[derive(Debug, Clone)]
    pub struct Rpg {
        /// Landmark variant (Algorithm 2): `ncenter = 0` means `min(1000, N)` instead of N.
        pub landmark: bool = fixed(entry == RpgEntry::Landmark),
        /// Number of centres K; 0 = N (Algorithm 1) or `min(1000, N)` (landmark). K = N starts at the
        /// data, K < N at seeded k-means centres. `2 <= K <= N`.
        pub ncenter: usize = coded(auto(int("ncenter", 2, 2, entry.pick(NC_DOC, NC_DOC, NC_DOC_LANDMARK))), ncenter_from_value, ncenter_to_value),
        /// Weight of the L1 reconstruction term (L1 graph only), `>= 0`.
        pub lambda: f64 = float_in("lambda", closed(0.0), open(f64::INFINITY), entry.pick(1.0, 1.0, 0.1), entry.pick(UNUSED_BY_TREE, "weight lambda >= 0 of the L1 reconstruction term sum_k ||z_k - sum_l w_lk z_l||_1 (Z = the initial centres)", "weight lambda >= 0 of the L1 reconstruction term (graph = \"l1\"; the paper's large-scale runs use 0.1)")),
        /// Softmax bandwidth `sigma > 0` (eq. 18).
        pub sigma: f64 = positive("sigma", entry.pick(0.01, 0.01, 0.1), "softmax bandwidth sigma > 0: p_ik ∝ exp(-||x_i - c_k||^2 / sigma) (004 eq. 18)"),
        /// Trade-off `gamma > 0` between the graph length and the data term.
        pub gamma: f64 = positive("gamma", entry.pick(10.0, 10.0, 1.0), "trade-off gamma > 0 between the graph length and the data term (C = (2/gamma L + Lambda)^-1 P^T X)"),
        /// Maximum number of iterations (>= 1).
        pub max_iter: usize = int("max_iter", 1, 100, "maximum number of alternating iterations"),
        /// Relative objective change at which to stop (paper: 1e-5).
        pub tol: f64 = float_in("tol", closed(0.0), open(f64::INFINITY), 1e-5, "stop when abs(rho_l - rho_{l-1}) <= tol abs(rho_{l-1}) (paper: 1e-5)"),
        /// Side information for the L1 graph: edges only between `nn`-nearest neighbours of the
        /// dictionary (symmetrised, "or"); 0 = all pairs (eq. 19 without side information).
        pub nn: usize = int("nn", 0, 5, entry.pick(UNUSED_BY_TREE, "side information: candidate edges are the symmetrised nn-NN graph of the initial centres (eq. 23); 0 = all pairs (eq. 19, K <= 400)", "side information for graph = \"l1\": symmetrised nn-NN graph of the landmarks; 0 = all pairs")),
        /// Spanning tree or L1 graph.
        pub graph: GraphKind = match entry {
            RpgEntry::Tree => fixed(GraphKind::Tree),
            RpgEntry::L1 => fixed(GraphKind::L1),
            RpgEntry::Landmark => choice("graph", GraphKind::NAMES, "tree", "graph learned over the landmarks: minimum spanning tree (eq. 20) or L1 graph (eq. 19 / 23)").into(),
        },
        /// Lloyd iterations of the k-means initialisation.
        pub kmeans_iter: usize = fixed(20),
    }
}

impl Default for Rpg {
    /// 004 Table 1, tree row: the `rpg-tree` registry defaults.
    fn default() -> Self {
        Rpg::defaults(RpgEntry::Tree)
    }
}

/// A learned principal graph.
#[derive(Debug, Clone)]
pub struct PrincipalGraph {
    /// Principal points C, K x D (input space).
    pub centres: Array2<f64>,
    /// W as edges `(k, l, w_kl)`, `k < l`, sorted; `w = 1` for the tree. LP weights below
    /// `1e-9 max w` are dropped here (they are kept inside the iterations).
    pub edges: Vec<(usize, usize, f64)>,
    /// Soft assignment P (N x K) at the final centres, when `N K <= KEEP_P_MAX_ENTRIES`.
    pub p: Option<Array2<f64>>,
    /// `P C` at the final centres (N x D).
    pub projection: Array2<f64>,
    /// The initial centres (the L1 dictionary Z).
    pub initial_centres: Array2<f64>,
    /// `rho(W_l, C_l, P_l)` after every iteration.
    pub history: Vec<f64>,
    /// Iterations run.
    pub iterations: usize,
    /// Whether the relative-change rule was met.
    pub converged: bool,
    /// Remarks (initialisation, solver status).
    pub notes: Vec<String>,
}

/// Sufficient statistics of one soft-assignment pass (eq. 18) at centres C.
#[derive(Debug, Clone)]
pub struct SoftAssignment {
    /// `P^T X`, K x D.
    pub ptx: Array2<f64>,
    /// `Lambda = 1^T P` (cluster masses), length K.
    pub mass: Array1<f64>,
    /// `sum_{i,k} p_ik log p_ik`.
    pub plogp: f64,
    /// `sum_{i,k} p_ik ||x_i - c_k||^2` at the C of this pass.
    pub fit: f64,
    /// Dense P (N x K) when requested.
    pub p: Option<Array2<f64>>,
    /// `P C` (N x D) when requested.
    pub projection: Option<Array2<f64>>,
}

/// Soft assignment (eq. 18) of the rows of `x` to the centres `c` with bandwidth `sigma`, in one
/// pass of a fresh [`NearCentres`] (exact distances to the centres within `40 sigma` of each row's
/// nearest, found by one GEMM per row block); P is stored only if `keep_p`; optionally also the
/// projections `P C`. Iterative callers keep a [`NearCentres`] and use [`soft_assign_near`].
pub fn soft_assign(x: ArrayView2<f64>, c: ArrayView2<f64>, sigma: f64, keep_p: bool, project: bool) -> SoftAssignment {
    let mut near = NearCentres::new(x.nrows(), DEFAULT_MARGIN);
    soft_assign_near(&mut near, x, c, sigma, keep_p, project)
}

/// [`soft_assign`] through the candidate lists of `near` (carried across iterations: rows whose
/// drift bound still holds touch only their few candidate centres). Exact: the same truncated
/// softmax as a dense pass, entries more than [`P_TRUNCATION_NATS`] below the row maximum being 0.
pub fn soft_assign_near(near: &mut NearCentres, x: ArrayView2<f64>, c: ArrayView2<f64>, sigma: f64, keep_p: bool, project: bool) -> SoftAssignment {
    let (n, d) = x.dim();
    let k = c.nrows();
    let mut rows = near.pass(x, c, P_TRUNCATION_NATS * sigma);
    // Row softmax in place (val: squared distance -> p); per-row (sum p log p, sum p d).
    let per_row: Vec<(f64, f64)> = {
        let ptr = &rows.ptr;
        let min = &rows.min;
        let mut chunks: Vec<&mut [f64]> = Vec::with_capacity(n);
        let mut rest: &mut [f64] = &mut rows.val;
        for i in 0..n {
            let (a, b) = rest.split_at_mut(ptr[i + 1] - ptr[i]);
            chunks.push(a);
            rest = b;
        }
        chunks
            .into_par_iter()
            .enumerate()
            .map_init(Vec::new, |e: &mut Vec<f64>, (i, r)| {
                let m = min[i];
                // exp(-a) once per entry, kept for the second pass (same values as recomputing)
                e.clear();
                let mut s = 0.0;
                for v in r.iter() {
                    let a = (v - m) / sigma;
                    let ev = if a <= P_TRUNCATION_NATS { (-a).exp() } else { 0.0 };
                    if a <= P_TRUNCATION_NATS {
                        s += ev;
                    }
                    e.push(ev);
                }
                let ls = s.ln();
                let (mut pl, mut pd) = (0.0, 0.0);
                for (v, &ev) in r.iter_mut().zip(e.iter()) {
                    let a = (*v - m) / sigma;
                    if a <= P_TRUNCATION_NATS {
                        let p = ev / s;
                        pl += p * (-a - ls);
                        pd += p * *v;
                        *v = p;
                    } else {
                        *v = 0.0;
                    }
                }
                (pl, pd)
            })
            .collect()
    };
    let (mut plogp, mut fit) = (0.0, 0.0);
    for &(pl, pd) in &per_row {
        plogp += pl;
        fit += pd;
    }
    // P^T X and the masses: row j of P^T X is `sum_i p_ij x_i` over the samples in increasing
    // order. Each task owns a range of centres and streams the rows of P and X in sample order
    // (X is read sequentially, a few times in all, instead of one random row of X per entry of
    // P; no column-sorted copy of P), the per-centre sums keeping that order whatever the ranges.
    let xs = x.as_standard_layout();
    let xs = xs.as_slice().expect("standard layout");
    let span = k.div_ceil(2 * rayon::current_num_threads()).max(1);
    let mut ptx = Array2::<f64>::zeros((k, d));
    let masses: Vec<Vec<f64>> = ptx
        .axis_chunks_iter_mut(Axis(0), span)
        .into_par_iter()
        .enumerate()
        .map(|(r, mut block)| {
            let (j0, j1) = (r * span, r * span + block.nrows());
            let mut mass = vec![0.0; j1 - j0];
            let out = block.as_slice_mut().expect("standard layout");
            for i in 0..n {
                let (idx, p) = rows.row(i);
                let a = idx.partition_point(|&j| (j as usize) < j0);
                let b = a + idx[a..].partition_point(|&j| (j as usize) < j1);
                let xi = &xs[i * d..(i + 1) * d];
                for (&j, &pv) in idx[a..b].iter().zip(&p[a..b]) {
                    if pv != 0.0 {
                        let t = j as usize - j0;
                        for (o, &xv) in out[t * d..(t + 1) * d].iter_mut().zip(xi) {
                            *o += pv * xv;
                        }
                        mass[t] += pv;
                    }
                }
            }
            mass
        })
        .collect();
    let mass = Array1::from(masses.concat());
    let projection = project.then(|| {
        let mut pr = Array2::<f64>::zeros((n, d));
        pr.axis_iter_mut(Axis(0)).into_par_iter().enumerate().for_each(|(i, mut out)| {
            let (idx, p) = rows.row(i);
            for (&j, &pv) in idx.iter().zip(p) {
                if pv != 0.0 {
                    out.scaled_add(pv, &c.row(j as usize));
                }
            }
        });
        pr
    });
    let p = keep_p.then(|| {
        let mut pa = Array2::<f64>::zeros((n, k));
        for i in 0..n {
            let (idx, p) = rows.row(i);
            for (&j, &pv) in idx.iter().zip(p) {
                pa[[i, j as usize]] = pv;
            }
        }
        pa
    });
    SoftAssignment { ptx, mass, plogp, fit, p, projection }
}

/// The C-update (eq. 22, samples in rows): `C = (2/gamma L + diag(mass))^-1 ptx` with
/// `L = diag(W 1) - W` for the weighted edges `(k, l, w_kl)`. Exact minimiser of rho over C for
/// fixed P and W (eq. 21).
pub fn update_centres(ptx: ArrayView2<f64>, mass: ArrayView1<f64>, edges: &[(usize, usize, f64)], gamma: f64) -> Result<Array2<f64>> {
    let k = ptx.nrows();
    let mut a = Array2::<f64>::from_diag(&mass);
    let g = 2.0 / gamma;
    for &(i, j, w) in edges {
        a[[i, i]] += g * w;
        a[[j, j]] += g * w;
        a[[i, j]] -= g * w;
        a[[j, i]] -= g * w;
    }
    debug_assert_eq!(a.nrows(), k);
    let ch = Cholesky::factor(a.view()).map_err(numerical("rpg"))?;
    ch.solve(ptx).map_err(numerical("rpg"))
}

/// `sum_{k,l} w_kl ||c_k - c_l||^2 = 2 sum_{(k,l) in E} w_kl ||c_k - c_l||^2` (each undirected
/// edge counted in both orders, as `tr(Phi^T W)` with symmetric W).
pub fn graph_length(c: ArrayView2<f64>, edges: &[(usize, usize, f64)]) -> f64 {
    2.0 * edges.iter().map(|&(i, j, w)| w * exact_sq_dist(c.row(i), c.row(j))).sum::<f64>()
}

/// `sum_k || z_k - sum_{l} w_lk z_l ||_1` for the symmetric weighted edges (the L1 term of eq. 13 /
/// 19 / 23 without lambda).
pub fn l1_residual(z: ArrayView2<f64>, edges: &[(usize, usize, f64)]) -> f64 {
    let mut r = z.to_owned();
    for &(i, j, w) in edges {
        if w != 0.0 {
            r.row_mut(i).scaled_add(-w, &z.row(j));
            r.row_mut(j).scaled_add(-w, &z.row(i));
        }
    }
    r.iter().map(|v| v.abs()).sum()
}

/// The objective rho(W, C, P) evaluated directly (eq. 17 / 24; `dictionary = None` for the tree,
/// which has no L1 term). Dense O(N K D); used to check the iterations.
#[allow(clippy::too_many_arguments)]
pub fn objective(
    x: ArrayView2<f64>,
    c: ArrayView2<f64>,
    p: ArrayView2<f64>,
    edges: &[(usize, usize, f64)],
    dictionary: Option<ArrayView2<f64>>,
    lambda: f64,
    gamma: f64,
    sigma: f64,
) -> f64 {
    let mut data = 0.0;
    for (i, prow) in p.axis_iter(Axis(0)).enumerate() {
        for (k, &pk) in prow.iter().enumerate() {
            if pk > 0.0 {
                data += pk * (exact_sq_dist(x.row(i), c.row(k)) + sigma * pk.ln());
            }
        }
    }
    graph_length(c, edges) + dictionary.map_or(0.0, |z| lambda * l1_residual(z, edges)) + gamma * data
}

/// Solves the L1-graph LP (004 eq. 19 on the candidate edge set of eq. 23):
///
/// `min_{w >= 0} sum_{e=(k,l) in E} 2 phi_e w_e + lambda sum_{k,m} |z_km - sum_{l ~ k} w_kl z_lm|`
///
/// as the standard-form LP over `(w, t)` with `-t <= z_k - sum_l w_kl z_l <= t` (2 K D
/// inequalities, E + K D variables), by clarabel's interior-point method (tolerances 1e-8).
/// `edges` are `(k, l)` with `k < l`, `phi[e] = ||c_k - c_l||^2`. Returns `w_e >= 0` (tiny
/// negative round-off clamped to 0).
pub fn l1_graph_lp(z: ArrayView2<f64>, edges: &[(usize, usize)], phi: &[f64], lambda: f64) -> Result<Vec<f64>> {
    use clarabel::algebra::CscMatrix;
    use clarabel::solver::{DefaultSettingsBuilder, DefaultSolver, IPSolver, SolverStatus, SupportedConeT};
    const M: &str = "rpg";
    let (k, d) = z.dim();
    let ne = edges.len();
    if ne == 0 {
        return Ok(Vec::new());
    }
    let kd = k * d;
    let n = ne + kd;
    let m = 2 * kd + ne;
    let mut colptr = Vec::with_capacity(n + 1);
    let mut rowval = Vec::with_capacity(ne * (4 * d + 1) + 2 * kd);
    let mut nzval = Vec::with_capacity(rowval.capacity());
    colptr.push(0);
    for (e, &(a, b)) in edges.iter().enumerate() {
        debug_assert!(a < b);
        for (row_pt, other) in [(a, b), (b, a)] {
            for f in 0..d {
                let v = z[[other, f]];
                rowval.push(2 * (row_pt * d + f));
                nzval.push(-v);
                rowval.push(2 * (row_pt * d + f) + 1);
                nzval.push(v);
            }
        }
        rowval.push(2 * kd + e);
        nzval.push(-1.0);
        colptr.push(rowval.len());
    }
    for r in 0..kd {
        rowval.push(2 * r);
        nzval.push(-1.0);
        rowval.push(2 * r + 1);
        nzval.push(-1.0);
        colptr.push(rowval.len());
    }
    let a = CscMatrix::new(m, n, colptr, rowval, nzval);
    let mut bvec = vec![0.0; m];
    for kk in 0..k {
        for f in 0..d {
            bvec[2 * (kk * d + f)] = -z[[kk, f]];
            bvec[2 * (kk * d + f) + 1] = z[[kk, f]];
        }
    }
    let mut q = vec![lambda; n];
    for (e, &ph) in phi.iter().enumerate() {
        q[e] = 2.0 * ph;
    }
    let pmat = CscMatrix::<f64>::zeros((n, n));
    let settings = DefaultSettingsBuilder::default()
        .verbose(false)
        .max_iter(400)
        .build()
        .map_err(|e| MethodError::Solver { method: M, reason: format!("clarabel settings: {e:?}") })?;
    let cones = [SupportedConeT::NonnegativeConeT(m)];
    let mut solver =
        DefaultSolver::new(&pmat, &q, &a, &bvec, &cones, settings).map_err(|e| MethodError::Solver { method: M, reason: format!("clarabel setup: {e:?}") })?;
    solver.solve();
    match solver.solution.status {
        SolverStatus::Solved | SolverStatus::AlmostSolved => {}
        st => return Err(MethodError::Solver { method: M, reason: format!("L1-graph LP (eq. 19/23, {ne} edges, {kd} residuals): clarabel status {st:?}") }),
    }
    Ok(solver.solution.x[..ne].iter().map(|&w| w.max(0.0)).collect())
}

/// Candidate edges of the L1 graph: the symmetrised `nn`-NN graph of the dictionary (eq. 23), or
/// all pairs when `nn = 0` (eq. 19).
pub fn l1_candidate_edges(z: ArrayView2<f64>, nn: usize) -> Result<Vec<(usize, usize)>> {
    let k = z.nrows();
    if nn == 0 {
        return Ok((0..k).flat_map(|i| ((i + 1)..k).map(move |j| (i, j))).collect());
    }
    let g = knn(z, nn).map_err(numerics("rpg"))?;
    Ok(symmetrised_edges(&g).into_iter().map(|(i, j, _)| (i, j)).collect())
}

/// Exact pairwise squared distances of the rows of `c` (K x K, feature-by-feature sums, exact 0
/// for duplicates).
fn pairwise_exact(c: ArrayView2<f64>) -> Array2<f64> {
    let k = c.nrows();
    let rows: Vec<Vec<f64>> = (0..k).into_par_iter().map(|i| (0..k).map(|j| if j > i { exact_sq_dist(c.row(i), c.row(j)) } else { 0.0 }).collect()).collect();
    let mut out = Array2::<f64>::zeros((k, k));
    for (i, r) in rows.into_iter().enumerate() {
        for j in (i + 1)..k {
            out[[i, j]] = r[j];
            out[[j, i]] = r[j];
        }
    }
    out
}

impl Rpg {
    fn name_str(&self) -> &'static str {
        match (self.landmark, self.graph) {
            (true, _) => "rpg-landmark",
            (false, GraphKind::Tree) => "rpg-tree",
            (false, GraphKind::L1) => "rpg-l1",
        }
    }

    /// The number of centres K this configuration uses on N samples.
    pub fn resolved_k(&self, n: usize) -> usize {
        match self.ncenter {
            0 if self.landmark => n.min(1000),
            0 => n,
            k => k,
        }
    }

    fn validate(&self, x: &ArrayView2<f64>) -> Result<usize> {
        let m = self.name_str();
        let bad = |reason: String| Err(MethodError::Input { method: m, reason });
        if !(self.sigma > 0.0 && self.sigma.is_finite()) {
            return bad(format!("sigma = {} must be positive and finite", self.sigma));
        }
        if !(self.gamma > 0.0 && self.gamma.is_finite()) {
            return bad(format!("gamma = {} must be positive and finite", self.gamma));
        }
        if !(self.lambda >= 0.0 && self.lambda.is_finite()) {
            return bad(format!("lambda = {} must be >= 0 and finite", self.lambda));
        }
        if !(self.tol >= 0.0) {
            return bad(format!("tol = {} must be >= 0", self.tol));
        }
        if self.max_iter == 0 {
            return bad("max_iter = 0: at least one iteration is needed".into());
        }
        check_input(m, x, 2)?;
        let n = x.nrows();
        let first = x.row(0);
        if x.rows().into_iter().all(|r| r == first) {
            return bad(format!("constant data: all {n} samples are identical"));
        }
        let k = self.resolved_k(n);
        if k < 2 {
            return bad(format!("ncenter = {k}: a principal graph needs at least 2 centres"));
        }
        if k > n {
            return bad(format!("ncenter = {k} exceeds the number of samples N = {n}"));
        }
        if k > RPG_MAX_K {
            return bad(format!("K = {k} centres exceeds the dense limit {RPG_MAX_K} (K x K systems, N x K assignments); use rpg-landmark with ncenter << N"));
        }
        if self.graph == GraphKind::L1 {
            if self.nn == 0 && k > RPG_FULL_L1_MAX_K {
                return bad(format!("nn = 0 (all-pairs L1 graph) with K = {k} > {RPG_FULL_L1_MAX_K} centres gives a too large LP; set nn >= 1"));
            }
            if self.nn >= k {
                return bad(format!("nn = {} neighbours needs more than nn centres, K = {k}", self.nn));
            }
        }
        Ok(k)
    }

    /// Runs Algorithm 1 (K = N) or 2 (K < N) and returns the principal graph.
    pub fn fit_graph(&self, x: ArrayView2<f64>, seed: u64) -> Result<PrincipalGraph> {
        let name = self.name_str();
        let k = self.validate(&x)?;
        let n = x.nrows();
        let mut notes = Vec::new();
        let t0 = std::time::Instant::now();
        let c0 = if k == n {
            notes.push(format!("K = N = {n}: centres initialised at the data points"));
            x.to_owned()
        } else {
            // Landmarks: k-means++ seeding on a pool of 20 K samples (Lloyd then runs on all N).
            let km = kmeans_pooled_seeding(x, k, seed, self.kmeans_iter, 20 * k).map_err(|e| match e {
                structdr_numerics::NumericsError::Input { reason, .. } => {
                    MethodError::Input { method: name, reason: format!("k-means initialisation: {reason}") }
                }
                other => numerics(name)(other),
            })?;
            notes.push(format!("K = {k} centres initialised by k-means (k-means++ seeding on min(N, 20 K) samples, seed {seed}, {} Lloyd iterations, converged {}, SSE {:.6e})", km.iterations, km.converged, km.sse));
            km.centres
        };
        let t_init = t0.elapsed().as_secs_f64();
        let cand = if self.graph == GraphKind::L1 { l1_candidate_edges(c0.view(), self.nn)? } else { Vec::new() };
        let (mut t_p, mut t_w, mut t_c) = (0.0, 0.0, 0.0);
        let sum_x2: f64 = x.iter().map(|v| v * v).sum();
        let mut c = c0.clone();
        let mut history: Vec<f64> = Vec::new();
        let mut converged = false;
        let mut iterations = 0;
        let mut w_edges: Vec<(usize, usize, f64)> = Vec::new();
        let mut near = NearCentres::new(n, DEFAULT_MARGIN);
        for it in 1..=self.max_iter {
            iterations = it;
            // 1. P from C_{l-1}.
            let ts = std::time::Instant::now();
            let sa = soft_assign_near(&mut near, x, c.view(), self.sigma, false, false);
            t_p += ts.elapsed().as_secs_f64();
            let ts = std::time::Instant::now();
            // 2. W from Phi(C_{l-1}).
            w_edges = match self.graph {
                GraphKind::Tree => {
                    // Edge costs by GEMM above 256 centres (O(K^2 D) at BLAS-3 speed; rounding
                    // ~1e-13 relative can only reorder near-ties, any MST of which is optimal).
                    let phi = if k > 256 { sq_dists(c.view()) } else { pairwise_exact(c.view()) };
                    minimum_spanning_tree(phi.view()).into_iter().map(|(i, j, _)| (i, j, 1.0)).collect()
                }
                GraphKind::L1 => {
                    let phi: Vec<f64> = cand.iter().map(|&(i, j)| exact_sq_dist(c.row(i), c.row(j))).collect();
                    let w = l1_graph_lp(c0.view(), &cand, &phi, self.lambda)?;
                    cand.iter().zip(w).map(|(&(i, j), w)| (i, j, w)).collect()
                }
            };
            t_w += ts.elapsed().as_secs_f64();
            let ts = std::time::Instant::now();
            // 3. C = (2/gamma L + Lambda)^-1 P^T X.
            c = match self.graph {
                // Tree: leaf-to-root elimination, O(K D) (no fill in a tree).
                GraphKind::Tree => RootedTree::new(k, &w_edges).solve(2.0 / self.gamma, sa.mass.as_slice().expect("owned"), sa.ptx.clone(), c.view()),
                GraphKind::L1 => update_centres(sa.ptx.view(), sa.mass.view(), &w_edges, self.gamma)?,
            };
            t_c += ts.elapsed().as_secs_f64();
            // rho(W_l, C_l, P_l): the data term at the new C from the statistics of P_l.
            let cross: f64 = (&c * &sa.ptx).sum();
            let cnorm: f64 = c.axis_iter(Axis(0)).zip(sa.mass.iter()).map(|(r, &mk)| mk * r.dot(&r)).sum();
            let fit = (sum_x2 - 2.0 * cross + cnorm).max(0.0);
            let mut rho = graph_length(c.view(), &w_edges) + self.gamma * (fit + self.sigma * sa.plogp);
            if self.graph == GraphKind::L1 {
                rho += self.lambda * l1_residual(c0.view(), &w_edges);
            }
            if !rho.is_finite() {
                return Err(MethodError::Input {
                    method: name,
                    reason: format!("objective became {rho} at iteration {it} (sigma = {} too small for the data scale?)", self.sigma),
                });
            }
            let prev = history.last().copied();
            history.push(rho);
            structdr_numerics::progress::report(history.len(), rho);
            if let Some(prev) = prev {
                if (rho - prev).abs() <= self.tol * prev.abs() {
                    converged = true;
                    break;
                }
            }
        }
        let keep = n * k <= KEEP_P_MAX_ENTRIES;
        let ts = std::time::Instant::now();
        let fin = soft_assign_near(&mut near, x, c.view(), self.sigma, keep, true);
        let st = near.stats();
        notes.push(format!(
            "wall time: initialisation {t_init:.3} s; {iterations} iterations: P-step {t_p:.3} s, W-step {t_w:.3} s, C-step {t_c:.3} s; final P C {:.3} s",
            ts.elapsed().as_secs_f64()
        ));
        notes.push(format!(
            "P-steps: {} passes over {} groups of centres; {:.1} exact distances per sample and pass after the first (K = {k}), {:.2} groups opened",
            st.passes,
            st.groups,
            st.distances as f64 / ((st.passes.max(2) - 1) * n) as f64,
            st.groups_opened as f64 / ((st.passes.max(2) - 1) * n) as f64
        ));
        let wmax = w_edges.iter().map(|e| e.2).fold(0.0f64, f64::max);
        let kept: Vec<(usize, usize, f64)> = w_edges.iter().copied().filter(|e| e.2 > 1e-9 * wmax).collect();
        if self.graph == GraphKind::L1 {
            notes.push(format!(
                "L1 graph: {} candidate edges ({}), {} with w > 1e-9 max w (max w = {wmax:.4e})",
                cand.len(),
                if self.nn == 0 { "all pairs".to_string() } else { format!("symmetrised {}-NN of the initial centres", self.nn) },
                kept.len()
            ));
        }
        Ok(PrincipalGraph {
            centres: c,
            edges: kept,
            p: fin.p,
            projection: fin.projection.expect("requested"),
            initial_centres: c0,
            history,
            iterations,
            converged,
            notes,
        })
    }
}

impl Embedder for Rpg {
    fn name(&self) -> &'static str {
        self.name_str()
    }
    fn info(&self) -> MethodInfo {
        match (self.landmark, self.graph) {
            (true, _) => info_landmark(),
            (false, GraphKind::Tree) => info_tree(),
            (false, GraphKind::L1) => info_l1(),
        }
    }
    fn params(&self) -> ParamMap {
        self.to_params()
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        let (x, seed) = (input.x, input.seed);
        let g = self.fit_graph(x, seed)?;
        let k = g.centres.nrows();
        let mut notes = g.notes;
        notes.push(format!("embedding = P C: soft projection of every sample onto the {k} principal points, in the input space ({} dims)", x.ncols()));
        if let Some(last) = g.history.last() {
            notes.push(format!("final objective rho = {last:.10e} after {} iterations (converged: {})", g.iterations, g.converged));
        }
        let stop = crate::api::StopReason::classify(g.converged, g.iterations, self.max_iter, crate::api::relative_change(&g.history), Some(self.tol), "");
        let graph = crate::api::PrincipalGraph { centres: g.centres, edges: g.edges, projection: g.projection };
        let mut fitted = Fitted::new(Output::PrincipalGraph(graph), Trace::iterative(g.history, g.iterations, stop, ""));
        fitted.notes = notes;
        Ok(fitted)
    }
}

const REF: &str =
    "Mao, Wang, Tsang, Sun, A Novel Regularized Principal Graph Learning Framework on Explicit Graph Representation (004 §3-5, Alg. 1 and 2); SimplePPT";

pub(crate) fn info_tree() -> MethodInfo {
    MethodInfo {
        name: "rpg-tree",
        summary: "Regularized principal tree (SimplePPT): centres C in the input space, soft assignment P (softmax, sigma), minimum spanning tree W on ||c_k - c_l||^2, C = (2/gamma L + Lambda)^-1 P^T X; embedding = P C.",
        reference: REF,
        version: 1,
        output: OutputKind::PrincipalGraph,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: true,
        params: Rpg::schema(RpgEntry::Tree),
        build: |p| declare::build::<Rpg>("rpg-tree", RpgEntry::Tree, p),
    }
}

pub(crate) fn info_l1() -> MethodInfo {
    MethodInfo {
        name: "rpg-l1",
        summary: "Regularized principal L1 graph: as rpg-tree but W from the LP min tr(Phi^T W) + lambda ||Z (I - W)||_1, W >= 0 symmetric, on the nn-NN side information (004 eq. 19 / 23, clarabel); embedding = P C.",
        reference: REF,
        version: 1,
        output: OutputKind::PrincipalGraph,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: true,
        params: Rpg::schema(RpgEntry::L1),
        build: |p| declare::build::<Rpg>("rpg-l1", RpgEntry::L1, p),
    }
}

pub(crate) fn info_landmark() -> MethodInfo {
    MethodInfo {
        name: "rpg-landmark",
        summary: "Landmark regularized principal graph (004 Algorithm 2): K << N k-means landmarks, then the rpg-tree / rpg-l1 iterations over them at O(N K D + K^3) per iteration; embedding = P C.",
        reference: REF,
        version: 1,
        output: OutputKind::PrincipalGraph,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: true,
        params: Rpg::schema(RpgEntry::Landmark),
        build: |p| declare::build::<Rpg>("rpg-landmark", RpgEntry::Landmark, p),
    }
}
