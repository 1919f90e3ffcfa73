//! Landmark MVU (Weinberger, Packer & Saul 2005): MVUineq with the kernel factored through m
//! landmarks, `K = Q L Q^T`, solved by [`super::sdp`] with `Q` as the map.
//!
//! 1. Reconstruction: every sample's barycentric weights `W` from its `k_rec` nearest neighbours
//!    (LLE's step, [`structdr_numerics::graphs::barycenter_weights`], regulariser `reg`), and
//!    `Phi = (I - W)^T (I - W)` (sparse).
//! 2. Landmarks: `m` samples drawn uniformly without replacement with the fit's seed (the paper
//!    draws them at random); `m = "auto"` is `min(N, max(2 d + 20, 2 ceil(sqrt N)))`.
//! 3. `Q`: the landmarks' rows are the identity; the others minimise the reconstruction error
//!    `tr(X^T Phi X)` given the landmarks: `Q_u = -Phi_uu^-1 Phi_ul` (sparse Cholesky of
//!    `Phi_uu`, m right-hand sides). Rows of `Q` sum to 1, so `c = Q^T 1` carries the centring.
//! 4. The SDP `max tr(Q L Q^T) s.t. L PSD, 1^T Q L Q^T 1 = 0, ||q_i - q_j||^2_L <= d_ij` on the
//!    symmetrised k-NN graph (inequalities: the factorisation cannot keep every distance exactly),
//!    low-rank in `L = Z Z^T` (m x r), certified by the dual bound of [`super::sdp`].
//! 5. The embedding: kernel PCA of `K = (Q Z)(Q Z)^T` from the r x r Gram of `Q Z`.
//!
//! Cost: one sparse Cholesky of `Phi_uu` and m solves, then O(|E| r + N m r) per L-BFGS step and
//! an m x m eigenproblem per certificate; nothing is N x N.

use super::mvu::{certificate_notes, fit_on_distinct_rows, kernel_pca_of_factor, start_factor, START_RANK};
use super::sdp::{DistanceConstraint, DistanceSdp, SdpOptions};
use crate::api::declare::{self, declare_params, Declared};
use crate::api::info::{auto, dim, disconnected_param, float, float_in, int, MethodInfo};
use crate::api::params::{closed, open};
use crate::api::OutputKind;
use crate::api::{check_input, numerical, numerics, Embedder, FitInput, Fitted, Graph, MethodError, Output, ParamMap, Result, Trace};
use ndarray::{Array2, ArrayView2};
use rand::seq::index::sample;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use std::collections::BTreeMap;
use structdr_linalg::sparse::{Ordering, SymbolicCholesky};
use structdr_linalg::Pca as PcaBasis;
use structdr_numerics::graphs::{barycenter_weights, neighbourhood_graph, Disconnected};
use structdr_numerics::neighbours::knn;

declare_params! {
    /// Landmark MVU with parameters `dim`, `k`, `k_rec`, `landmarks`, `reg`, `disconnected`,
    /// `gap_tol`, `max_rank`.
    #[derive(Debug, Clone)]
    pub struct LandmarkMvu {
        /// Target dimension d.
        pub dim: usize = dim(),
        /// Neighbours per sample of the distance-constraint graph.
        pub k: usize = int("k", 1, 6, "neighbours per sample of the symmetrised k-NN distance-constraint graph"),
        /// Neighbours per sample of the reconstruction weights.
        pub k_rec: usize = int("k_rec", 1, 12, "neighbours per sample of the reconstruction weights that define Q"),
        /// Number of landmarks; `None` is the automatic rule of the module doc.
        pub landmarks: Option<usize> = auto(int("landmarks", 2, 50, "number of landmarks m (auto: min(N, max(2 d + 20, 2 ceil(sqrt N))))")),
        /// Regulariser of the reconstruction weights (times the trace of the local Gram matrix).
        pub reg: f64 = float_in("reg", closed(0.0), open(f64::INFINITY), 1e-3, "regulariser of the reconstruction weights, times the trace of the local Gram matrix"),
        /// What to do with a disconnected k-NN graph.
        pub disconnected: Disconnected = disconnected_param(),
        /// Relative duality gap to certify.
        pub gap_tol: f64 = float("gap_tol", 1e-12, 1e-1, 1e-6, "relative duality gap (U - P) / P the solve must certify"),
        /// Largest factorisation rank.
        pub max_rank: usize = int("max_rank", 1, 60, "largest rank of the factor Z (L = Z Z^T) the rank growth may reach"),
    }
}

/// The automatic landmark count `min(N, max(2 d + 20, 2 ceil(sqrt N)))`.
pub fn auto_landmarks(n: usize, dim: usize) -> usize {
    n.min((2 * dim + 20).max(2 * (n as f64).sqrt().ceil() as usize))
}

/// The reconstruction map `Q` (N x m) of the module doc, step 3: rows of `landmarks` are the
/// identity, the rest `-Phi_uu^-1 Phi_ul` with `Phi = (I - W)^T (I - W)`.
pub fn reconstruction_map(x: ArrayView2<f64>, landmarks: &[usize], k_rec: usize, reg: f64) -> Result<Array2<f64>> {
    let n = x.nrows();
    let m = landmarks.len();
    let nb = knn(x, k_rec.min(n - 1)).map_err(numerics("landmark-mvu"))?;
    let rows: Vec<Vec<usize>> = nb.indices.rows().into_iter().map(|r| r.to_vec()).collect();
    let weights: Vec<_> =
        (0..n).into_par_iter().map(|i| barycenter_weights(x, i, &rows[i], reg).map_err(numerics("landmark-mvu"))).collect::<Result<Vec<_>>>()?;
    // Phi = sum_i (e_i - w_i)(e_i - w_i)^T, w_i supported on rows[i]
    let mut diag = vec![0.0; n];
    let mut off: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    for i in 0..n {
        let mut support: Vec<(usize, f64)> = vec![(i, 1.0)];
        support.extend(rows[i].iter().zip(weights[i].iter()).map(|(&j, &w)| (j, -w)));
        for (a, &(p, u)) in support.iter().enumerate() {
            diag[p] += u * u;
            for &(q, v) in &support[a + 1..] {
                let key = if p < q { (p, q) } else { (q, p) };
                *off.entry(key).or_insert(0.0) += u * v;
            }
        }
    }
    let mut position = vec![usize::MAX; n];
    for (c, &l) in landmarks.iter().enumerate() {
        position[l] = c;
    }
    let others: Vec<usize> = (0..n).filter(|&i| position[i] == usize::MAX).collect();
    let mut local = vec![usize::MAX; n];
    for (c, &u) in others.iter().enumerate() {
        local[u] = c;
    }
    let nu = others.len();
    let mut q = Array2::<f64>::zeros((n, m));
    for (c, &l) in landmarks.iter().enumerate() {
        q[[l, c]] = 1.0;
    }
    if nu == 0 {
        return Ok(q);
    }
    let mut edges = Vec::new();
    let mut vals = Vec::new();
    let mut rhs = Array2::<f64>::zeros((nu, m));
    for (&(a, b), &v) in &off {
        match (local[a], local[b], position[a], position[b]) {
            (la, lb, _, _) if la != usize::MAX && lb != usize::MAX => {
                edges.push((la, lb));
                vals.push(v);
            }
            (la, _, _, pb) if la != usize::MAX && pb != usize::MAX => rhs[[la, pb]] -= v,
            (_, lb, pa, _) if lb != usize::MAX && pa != usize::MAX => rhs[[lb, pa]] -= v,
            _ => {}
        }
    }
    let d_u: Vec<f64> = others.iter().map(|&u| diag[u]).collect();
    let sym = SymbolicCholesky::analyze(nu, &edges, Ordering::Auto)
        .map_err(|e| MethodError::Input { method: "landmark-mvu", reason: format!("reconstruction system: {e}") })?;
    let fac = sym.factor(&d_u, &vals).map_err(|e| MethodError::Input {
        method: "landmark-mvu",
        reason: format!("the reconstruction system Phi_uu is singular ({e}): some samples are not linked to any landmark through the {k_rec}-NN graph; raise k_rec or the landmark count"),
    })?;
    let qu = fac.solve(rhs.view());
    for (c, &u) in others.iter().enumerate() {
        q.row_mut(u).assign(&qu.row(c));
    }
    Ok(q)
}

impl Embedder for LandmarkMvu {
    fn name(&self) -> &'static str {
        "landmark-mvu"
    }
    fn info(&self) -> MethodInfo {
        info()
    }
    fn params(&self) -> ParamMap {
        self.to_params()
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        check_input("landmark-mvu", &input.x, 3)?;
        fit_on_distinct_rows("landmark-mvu", input.x, |x| self.fit_distinct(x, input.seed))
    }
}

impl LandmarkMvu {
    /// The fit on samples without duplicates.
    fn fit_distinct(&self, x: ArrayView2<f64>, seed: u64) -> Result<Fitted> {
        const M: &str = "landmark-mvu";
        let (n, d_in) = x.dim();
        let m = self.landmarks.unwrap_or_else(|| auto_landmarks(n, self.dim)).min(n);
        if self.dim >= m {
            return Err(MethodError::Input {
                method: M,
                reason: format!("dim = {} must be below the landmark count m = {m} (K = Q L Q^T has rank <= m)", self.dim),
            });
        }
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut landmarks = sample(&mut rng, n, m).into_vec();
        landmarks.sort_unstable();
        let q = reconstruction_map(x, &landmarks, self.k_rec, self.reg)?;
        let g = neighbourhood_graph(x, self.k, self.disconnected).map_err(numerics(M))?;
        let edges: Vec<(usize, usize)> = g.edges.iter().map(|&(i, j, _)| (i, j)).collect();
        let mean_d = g.edges.iter().map(|e| e.2).sum::<f64>() / edges.len() as f64;
        if !(mean_d > 0.0 && mean_d.is_finite()) {
            return Err(MethodError::Degenerate {
                method: M,
                reason: format!("the mean squared length of the {}-NN edges is {mean_d}: identical samples", self.k),
            });
        }
        let d2: Vec<f64> = g.edges.iter().map(|e| e.2 / mean_d).collect();
        let r0 = START_RANK.min(m - 1).min(self.max_rank);
        let basis = PcaBasis::fit(x).map_err(numerical(M))?;
        let r_pca = d_in.min(r0).min(basis.variances.len());
        let scores = basis.transform(x, r_pca);
        let scores_l = scores.select(ndarray::Axis(0), &landmarks);
        let z0 = start_factor(scores_l.view(), r0, mean_d);
        let sdp = DistanceSdp { n, q: Some(q.view()), edges: &edges, d2: &d2, constraint: DistanceConstraint::Inequality };
        // the landmark SDP's constraints are many and nearly dependent through Q: bound the work
        let opts = SdpOptions { max_rank: self.max_rank.max(r0), gap_tol: self.gap_tol, max_inner: 3000, max_outer: 40, ..SdpOptions::default() };
        let sol = sdp.solve(z0, &opts).map_err(numerical(M))?;
        let (emb, values) = kernel_pca_of_factor(M, (&sol.y * mean_d.sqrt()).view(), self.dim)?;
        let trace = Trace::iterative(sol.history.clone(), sol.outer, sol.stop(opts.max_outer, opts.gap_tol), sol.termination.clone())
            .with_kkt_residual(sol.certificate.rel_gap);
        let mut f = Fitted::new(Output::Embedding(emb), trace);
        if let Some(note) = g.note() {
            f.notes.push(note);
        }
        f.notes.push(format!(
            "{m} landmarks drawn with seed {} (first: {:?}); reconstruction from {} neighbours, reg {}",
            seed,
            &landmarks[..m.min(5)],
            self.k_rec,
            self.reg
        ));
        f.notes.extend(certificate_notes(&sol, mean_d));
        f.notes.push(format!("top eigenvalues of K: {values:?}"));
        f.graph = Some(Graph { n_vertices: n, edges: g.edges.iter().map(|&(i, j, _)| (i, j, 1.0)).collect() });
        Ok(f)
    }
}

pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: "landmark-mvu",
        summary: "Landmark MVU: K = Q L Q^T with m random landmarks and Q from LLE reconstruction weights (k_rec neighbours); max tr(K) s.t. L PSD, sum K = 0, K_ii + K_jj - 2 K_ij <= ||x_i - x_j||^2 on the k-NN graph; KPCA of K.",
        reference: "Weinberger, Packer & Saul, Nonlinear dimensionality reduction by semidefinite programming and kernel matrix factorization, AISTATS 2005",
        version: 6,
        output: OutputKind::Embedding,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: true,
        params: LandmarkMvu::schema(()),
        build: |p| declare::build::<LandmarkMvu>("landmark-mvu", (), p),
    }
}
