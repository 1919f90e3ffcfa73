//! MEU's numerics (the module doc of [`super`]): the Gaussian field on the symmetrised K-NN graph
//! with coincident samples merged ([`MeuProblem`]), its two objectives (the exact negative
//! log-likelihood by sparse or dense Cholesky and selected inversion, Besag's pseudo-likelihood)
//! with their gradients, the bound-constrained solve in the scaled variables and its KKT residual,
//! and the embedding from the learned weights ([`embedding`]).

use crate::api::declare::param_choice;
use crate::api::{check_dense_size, numerical, MethodError, Result};
use crate::structure::pair_dual::LBFGSB_FACTR;
use crate::structure::spl::{Backend, DENSE_FLOP_RATIO, DENSE_MIN_N};
use ndarray::{Array2, ArrayView2, Axis};
use rayon::prelude::*;
use structdr_linalg::sparse::{Ordering, SparseError, SymbolicCholesky};
use structdr_linalg::{canonicalize_signs, eigh_bottom, LinalgError};
use structdr_numerics::dist::exact_sq_dist;
use structdr_numerics::neighbours::{distinct_rows, symmetrised_edges, Knn};
use structdr_numerics::optim::{minimize, BoundedOptions, BoundedResult, Solver};

/// The method's name, as its errors report it.
pub(super) const NAME: &str = "meu";

/// L-BFGS memory (correction pairs) of both solvers: the evaluation (a sparse factorisation and
/// selected inversion) dominates the O(m |E|) vector work at every size.
pub const MEU_MEMORY: usize = 10;

param_choice! {
    /// Which objective the weights maximise (module doc).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum MeuObjective {
        /// The exact log-likelihood of the Gaussian random field (the reference code).
        Likelihood = "likelihood",
        /// Besag's pseudo-log-likelihood `sum_i log p(y_i | y_{-i})`.
        Pseudo = "pseudo",
    }
}

param_choice! {
    /// How the eigenvectors of the centred kernel are scaled into coordinates (module doc).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum MeuScaling {
        /// Every column centred with unit sample variance (`meuOptimise`).
        Unit = "unit",
        /// KPCA coordinates `v_k sqrt(mu_k)`, `mu_k = 1/(lambda_k + gamma)`.
        Kpca = "kpca",
    }
}

fn sparse_err(e: SparseError) -> MethodError {
    match e {
        SparseError::NotPositiveDefinite { pivot, n, .. } => {
            MethodError::Numerical { method: NAME, cause: LinalgError::NotPositiveDefinite { minor: pivot + 1, n } }
        }
        SparseError::NotFinite(_) => MethodError::Numerical { method: NAME, cause: LinalgError::NotFinite { what: "meu: L + gamma I" } },
        SparseError::Pattern(reason) => MethodError::Input { method: NAME, reason },
    }
}

/// The MEU problem on a fixed graph: the nodes of the field (coincident samples merged), their
/// centred data, edges, `phi`, bounds, start, and (likelihood) the symbolic factorisation of the
/// pattern of `L + gamma M`.
pub struct MeuProblem {
    /// Centred data of the nodes (one row per group of coincident samples; n_c x p).
    y: Array2<f64>,
    /// `sum_i ||y_i||^2` over all N centred samples (the `gamma` term of the likelihood).
    yy: f64,
    /// The node of every sample (N entries).
    node: Vec<usize>,
    /// Samples per node, `M = diag(mult)`.
    mult: Vec<f64>,
    edges: Vec<(usize, usize)>,
    phi: Vec<f64>,
    upper: Vec<f64>,
    start: Vec<f64>,
    gamma: f64,
    objective: MeuObjective,
    backend: Backend,
    sym: Option<SymbolicCholesky>,
    /// CSR adjacency (pseudo): the incident `(neighbour, edge)` of node c are `adj[ptr[c]..ptr[c + 1]]`.
    adj_ptr: Vec<usize>,
    adj: Vec<(usize, usize)>,
}

impl MeuProblem {
    /// Sets up the problem on data `x` (N x p, centred here) and its K-NN search `knn` (the graph
    /// is the symmetrised one; coincident samples are merged into one node).
    pub fn new(x: ArrayView2<f64>, knn: &Knn, gamma: f64, objective: MeuObjective) -> Result<MeuProblem> {
        Self::with_backend(x, knn, gamma, objective, Backend::Auto)
    }

    /// [`MeuProblem::new`] with a chosen [`Backend`] (`Auto` is resolved here; it matters for the
    /// likelihood only).
    pub fn with_backend(x: ArrayView2<f64>, knn: &Knn, gamma: f64, objective: MeuObjective, backend: Backend) -> Result<MeuProblem> {
        let p = x.ncols();
        let mean = x.mean_axis(Axis(0)).ok_or_else(|| MethodError::Input { method: NAME, reason: "empty data".into() })?;
        let yc = &x - &mean.view().insert_axis(Axis(0));
        let yy = yc.iter().map(|v| v * v).sum();
        let sample_edges = symmetrised_edges(knn);
        // coincident samples become one node, numbered by their first occurrence
        let (reps, node) = distinct_rows(x);
        let nc = reps.len();
        if nc < 2 {
            return Err(MethodError::Degenerate { method: NAME, reason: "constant data: every K-NN pair coincides".into() });
        }
        let mut mult = vec![0.0f64; nc];
        let mut rep = vec![usize::MAX; nc];
        for (i, &c) in node.iter().enumerate() {
            mult[c] += 1.0;
            if rep[c] == usize::MAX {
                rep[c] = i;
            }
        }
        let y = Array2::from_shape_fn((nc, p), |(c, t)| yc[[rep[c], t]]);
        // the reference's start: kappa = 1 for every directed K-NN pair, summed into W_ij (and,
        // between merged nodes, over the pairs the merge joins)
        let directed = |i: usize, j: usize| knn.indices.row(i).iter().any(|&v| v == j) as usize;
        let mut merged: Vec<(usize, usize, f64, f64)> = sample_edges
            .iter()
            .filter(|e| e.2 > 0.0)
            .map(|&(i, j, phi)| {
                let (a, b) = (node[i], node[j]);
                (a.min(b), a.max(b), phi, (directed(i, j) + directed(j, i)) as f64)
            })
            .collect();
        merged.sort_by_key(|e| (e.0, e.1));
        let mut edges: Vec<(usize, usize)> = Vec::with_capacity(merged.len());
        let mut phi = Vec::with_capacity(merged.len());
        let mut start: Vec<f64> = Vec::with_capacity(merged.len());
        for (a, b, ph, st) in merged {
            if edges.last() == Some(&(a, b)) {
                *start.last_mut().expect("same length") += st;
            } else {
                edges.push((a, b));
                phi.push(ph);
                start.push(st);
            }
        }
        let pf = p as f64;
        let upper: Vec<f64> = match objective {
            MeuObjective::Likelihood => phi.iter().map(|&v| pf / v).collect(),
            MeuObjective::Pseudo => vec![f64::INFINITY; phi.len()],
        };
        for (s, u) in start.iter_mut().zip(&upper) {
            *s = s.min(*u);
        }
        let mut deg = vec![0usize; nc];
        for &(i, j) in &edges {
            deg[i] += 1;
            deg[j] += 1;
        }
        let mut adj_ptr = vec![0usize; nc + 1];
        for i in 0..nc {
            adj_ptr[i + 1] = adj_ptr[i] + deg[i];
        }
        let mut fill = adj_ptr[..nc].to_vec();
        let mut adj = vec![(0usize, 0usize); 2 * edges.len()];
        for (e, &(i, j)) in edges.iter().enumerate() {
            adj[fill[i]] = (j, e);
            fill[i] += 1;
            adj[fill[j]] = (i, e);
            fill[j] += 1;
        }
        let (backend, sym) = match objective {
            MeuObjective::Pseudo => (Backend::Sparse, None),
            MeuObjective::Likelihood => {
                let sym = SymbolicCholesky::analyze(nc, &edges, Ordering::Auto).map_err(sparse_err)?;
                let nf = nc as f64;
                let backend = match backend {
                    Backend::Auto if nc >= DENSE_MIN_N && DENSE_FLOP_RATIO * sym.flops() > nf * nf * nf && nc <= crate::api::DENSE_MAX_N => Backend::Dense,
                    Backend::Auto => Backend::Sparse,
                    b => b,
                };
                (backend, Some(sym))
            }
        };
        Ok(MeuProblem { y, yy, node, mult, edges, phi, upper, start, gamma, objective, backend, sym, adj_ptr, adj })
    }

    /// Number of nodes of the field (samples, coincident ones merged).
    pub fn n_nodes(&self) -> usize {
        self.y.nrows()
    }
    /// The node of every sample.
    pub fn node(&self) -> &[usize] {
        &self.node
    }
    /// Samples per node (the diagonal of `M`).
    pub fn multiplicity(&self) -> &[f64] {
        &self.mult
    }
    /// Number of features p.
    pub fn p(&self) -> usize {
        self.y.ncols()
    }
    /// The edges `(a, b)` between nodes, `a < b`, aligned with the weights.
    pub fn edges(&self) -> &[(usize, usize)] {
        &self.edges
    }
    /// `phi_e = ||y_i - y_j||^2` per edge.
    pub fn phi(&self) -> &[f64] {
        &self.phi
    }
    /// Upper bounds of the weights (module doc).
    pub fn upper(&self) -> &[f64] {
        &self.upper
    }
    /// The reference's start (module doc).
    pub fn start(&self) -> &[f64] {
        &self.start
    }
    /// The backend of the likelihood evaluations (never `Auto`).
    pub fn backend(&self) -> Backend {
        self.backend
    }
    /// The symbolic factorisation (likelihood only).
    pub fn symbolic(&self) -> Option<&SymbolicCholesky> {
        self.sym.as_ref()
    }

    /// `(n_c p/2) log 2 pi`.
    fn log_2pi_term(&self) -> f64 {
        0.5 * (self.n_nodes() * self.p()) as f64 * (2.0 * std::f64::consts::PI).ln()
    }

    /// Diagonal `gamma m_c + deg_c` and off-diagonal `-w_e` of `L + gamma M`.
    fn precision_values(&self, w: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let mut diag: Vec<f64> = self.mult.iter().map(|m| self.gamma * m).collect();
        for (&(i, j), &v) in self.edges.iter().zip(w) {
            diag[i] += v;
            diag[j] += v;
        }
        (diag, w.iter().map(|v| -v).collect())
    }

    /// `F(w)` (module doc; minimised) and its gradient in `g`.
    pub fn value_and_gradient(&self, w: &[f64], g: &mut [f64]) -> Result<f64> {
        assert_eq!(w.len(), self.edges.len(), "meu: one weight per edge");
        assert_eq!(g.len(), self.edges.len(), "meu: one gradient entry per edge");
        if w.iter().any(|v| !v.is_finite()) {
            return Err(MethodError::Numerical { method: NAME, cause: LinalgError::NotFinite { what: "meu: edge weights" } });
        }
        match self.objective {
            MeuObjective::Likelihood => self.likelihood(w, g),
            MeuObjective::Pseudo => Ok(self.pseudo(w, g)),
        }
    }

    /// `log det(L + gamma M)` and the per-edge `<d_e> = Z_ii + Z_jj - 2 Z_ij`.
    fn log_det_and_resistances(&self, w: &[f64]) -> Result<(f64, Vec<f64>)> {
        let n = self.n_nodes();
        let (diag, off) = self.precision_values(w);
        if self.backend == Backend::Dense {
            // the row-major upper triangle of L + gamma I is LAPACK's column-major lower one
            let mut q = vec![0.0f64; n * n];
            for i in 0..n {
                q[i * n + i] = diag[i];
            }
            for (&(i, j), &v) in self.edges.iter().zip(&off) {
                q[i * n + j] = v;
            }
            let log_det = structdr_linalg::log_det_inverse_upper(&mut q, n).map_err(numerical(NAME))?;
            let r = self.edges.iter().map(|&(i, j)| q[i * n + i] + q[j * n + j] - 2.0 * q[i * n + j]).collect();
            return Ok((log_det, r));
        }
        let sym = self.sym.as_ref().expect("likelihood problems carry the symbolic factor");
        let f = sym.factor(&diag, &off).map_err(sparse_err)?;
        let log_det = f.log_det();
        let si = f.selected_inverse();
        let zd = si.diagonal();
        let ze = si.edge_values();
        Ok((log_det, self.edges.iter().zip(&ze).map(|(&(i, j), &zij)| zd[i] + zd[j] - 2.0 * zij).collect()))
    }

    fn likelihood(&self, w: &[f64], g: &mut [f64]) -> Result<f64> {
        let pf = self.p() as f64;
        let (log_det, r) = self.log_det_and_resistances(w)?;
        let mut lin = 0.0;
        for (((gk, &wk), &phik), &rk) in g.iter_mut().zip(w).zip(&self.phi).zip(&r) {
            *gk = 0.5 * (phik - pf * rk);
            lin += wk * phik;
        }
        Ok(-0.5 * pf * log_det + 0.5 * lin + 0.5 * self.gamma * self.yy + self.log_2pi_term())
    }

    /// Besag's negative pseudo-log-likelihood `-sum_c [p/2 log a_c - a_c/2 ||y_c - m_c||^2]` (+ the
    /// `2 pi` term) and its gradient, with `a_c = gamma mult_c + sum_j w_cj` and the conditional
    /// means `m_c = sum_j w_cj y_j / a_c`:
    ///
    /// `-df/dw_ij = [p / (2 a_i) + (||y_j - m_i||^2 - phi_ij) / 2] + [the same with i, j swapped]`.
    ///
    /// Node by node: `m_c` is built from the neighbours' rows and, while they are in cache, each
    /// incident edge's half of the derivative is taken from them (at p in the hundreds the rows do
    /// not fit the cache together, and a second pass over the edges read each from memory again).
    /// Distances in eight partial sums ([`exact_sq_dist`]).
    fn pseudo(&self, w: &[f64], g: &mut [f64]) -> f64 {
        let (n, p) = self.y.dim();
        let pf = p as f64;
        let ys = self.y.as_slice().expect("standard layout");
        let row = |c: usize| ndarray::ArrayView1::from(&ys[c * p..(c + 1) * p]);
        // one slot per (node, incident edge): that edge's half of the derivative at this node
        let mut half = vec![0.0f64; self.adj.len()];
        let mut slots: Vec<&mut [f64]> = Vec::with_capacity(n);
        let mut rest = half.as_mut_slice();
        for c in 0..n {
            let (mine, tail) = rest.split_at_mut(self.adj_ptr[c + 1] - self.adj_ptr[c]);
            slots.push(mine);
            rest = tail;
        }
        let terms: Vec<f64> = slots
            .into_par_iter()
            .enumerate()
            .map(|(c, slot)| {
                let incident = &self.adj[self.adj_ptr[c]..self.adj_ptr[c + 1]];
                let mut m = vec![0.0f64; p];
                let mut a = self.gamma * self.mult[c];
                for &(j, e) in incident {
                    let v = w[e];
                    a += v;
                    for (t, &yj) in m.iter_mut().zip(&ys[j * p..(j + 1) * p]) {
                        *t += v * yj;
                    }
                }
                for t in m.iter_mut() {
                    *t /= a;
                }
                let m = ndarray::ArrayView1::from(&m);
                for (h, &(j, e)) in slot.iter_mut().zip(incident) {
                    *h = 0.5 * pf / a + 0.5 * (exact_sq_dist(row(j), m) - self.phi[e]);
                }
                0.5 * pf * a.ln() - 0.5 * a * exact_sq_dist(row(c), m)
            })
            .collect();
        // edge (i, j), i < j: -(its half at i + its half at j); nodes in ascending order visit
        // the lower end first, so g[e] holds the first half when the second comes
        for c in 0..n {
            let range = self.adj_ptr[c]..self.adj_ptr[c + 1];
            for (&(j, e), &h) in self.adj[range.clone()].iter().zip(&half[range]) {
                g[e] = if c < j { h } else { -(g[e] + h) };
            }
        }
        -terms.iter().sum::<f64>() + self.log_2pi_term()
    }

    /// The diagonal scaling of the solver's variables: `w_e = s_e v_e`, `s_e = p / phi_e`, so
    /// that the likelihood's box is `0 <= v <= 1` and the Hessian's diagonal at its optimum is
    /// about `p/2` for every edge kept (module doc).
    pub fn scale(&self) -> Vec<f64> {
        let pf = self.p() as f64;
        self.phi.iter().map(|&v| pf / v).collect()
    }

    /// `min F(w)` over `0 <= w <= upper` by `solver` from the reference's start (module doc), in
    /// the scaled variables `v = w / s` ([`Self::scale`]). Returns the solver's result with `x`
    /// and `gradient` mapped back to `w` and `dF/dw` (the history, the KKT residual
    /// `projected_gradient_norm` and the stopping rule are those of the scaled problem), and
    /// that KKT residual at the start (the scale of `tol`).
    pub fn solve(&self, solver: Solver, max_iter: usize, tol: f64) -> Result<(BoundedResult, f64)> {
        let nv = self.edges.len();
        let s = self.scale();
        let lower = vec![0.0; nv];
        let upper: Vec<f64> = self.upper.iter().zip(&s).map(|(u, s)| u / s).collect();
        let v0: Vec<f64> = self.start.iter().zip(&s).zip(&upper).map(|((w, s), u)| (w / s).min(*u)).collect();
        let mut w = vec![0.0; nv];
        let mut g0 = vec![0.0; nv];
        for ((wk, vk), sk) in w.iter_mut().zip(&v0).zip(&s) {
            *wk = vk * sk;
        }
        self.value_and_gradient(&w, &mut g0)?;
        let pg0 = self.kkt_residual(&w, &g0);
        let opts = BoundedOptions { m: MEU_MEMORY, max_iter, max_eval: 20 * max_iter.max(1) + 20, pgtol: tol * pg0, factr: LBFGSB_FACTR, noise: 0.0 };
        let mut failure: Option<MethodError> = None;
        let r = minimize(
            solver,
            |v, g| {
                for ((wk, vk), sk) in w.iter_mut().zip(v).zip(&s) {
                    *wk = vk * sk;
                }
                match self.value_and_gradient(&w, g) {
                    Ok(f) => {
                        for (gk, sk) in g.iter_mut().zip(&s) {
                            *gk *= sk;
                        }
                        f
                    }
                    Err(e) => {
                        failure.get_or_insert(e);
                        f64::NAN
                    }
                }
            },
            &v0,
            &lower,
            &upper,
            &opts,
        );
        if let Some(e) = failure {
            return Err(e);
        }
        let mut r = r.map_err(|e| MethodError::Input { method: NAME, reason: e.to_string() })?;
        for (((x, g), sk), uk) in r.x.iter_mut().zip(r.gradient.iter_mut()).zip(&s).zip(&self.upper) {
            *x = (*x * sk).min(*uk);
            *g /= sk;
        }
        Ok((r, pg0))
    }

    /// The KKT residual `||proj grad||_inf` at `w` (gradient `g = dF/dw`) in the solver's scaled
    /// variables: `max_e |clamp(v_e - s_e g_e, 0, u_e / s_e) - v_e|`, `v = w / s`. Zero exactly
    /// at a KKT point of `min F` over the box.
    pub fn kkt_residual(&self, w: &[f64], g: &[f64]) -> f64 {
        let s = self.scale();
        w.iter()
            .zip(g)
            .zip(s.iter().zip(&self.upper))
            .map(|((&wk, &gk), (&sk, &uk))| {
                let v = wk / sk;
                ((v - sk * gk).max(0.0).min(uk / sk) - v).abs()
            })
            .fold(0.0, f64::max)
    }
}

/// The embedding from the learned weights `w` of `prob` (module doc): the bottom-d eigenpairs of
/// `M^-1/2 L M^-1/2` on the complement of `M^1/2 1` (`L` on `1^perp` when no samples coincide),
/// from `M^-1/2 L M^-1/2 + tau u u^T`, `u = M^1/2 1 / sqrt(N)`, mapped back to the samples
/// (`v_i = u_c / sqrt(m_c)` for sample i of node c, unit norm over the N samples) and scaled by
/// `scaling`. Returns `(X, lambda_2..lambda_{d+1})` (N x d; the centred kernel's eigenvalues are
/// `1/(lambda_k + gamma)`).
pub fn embedding(prob: &MeuProblem, w: &[f64], dim: usize, scaling: MeuScaling) -> Result<(Array2<f64>, Vec<f64>)> {
    let nc = prob.n_nodes();
    let n = prob.node.len();
    check_dense_size(NAME, nc)?;
    if dim + 1 > nc {
        return Err(MethodError::Input { method: NAME, reason: format!("dim = {dim} must be below the number of distinct samples ({nc})") });
    }
    let mut deg = vec![0.0f64; nc];
    for (&(i, j), &v) in prob.edges.iter().zip(w) {
        deg[i] += v;
        deg[j] += v;
    }
    // Gershgorin: every eigenvalue of M^-1/2 L M^-1/2 is at most max_c 2 deg_c / sqrt(m_c) < tau
    let tau = 2.0 * deg.iter().copied().fold(0.0, f64::max) + 1.0;
    let sq: Vec<f64> = prob.mult.iter().map(|m| m.sqrt()).collect();
    let nf = n as f64;
    let mut a = Array2::<f64>::from_shape_fn((nc, nc), |(i, j)| tau * sq[i] * sq[j] / nf);
    for (&(i, j), &v) in prob.edges.iter().zip(w) {
        let t = v / (sq[i] * sq[j]);
        a[[i, j]] -= t;
        a[[j, i]] -= t;
    }
    for i in 0..nc {
        a[[i, i]] += deg[i] / prob.mult[i];
    }
    let e = eigh_bottom(a.view(), dim).map_err(numerical(NAME))?;
    drop(a);
    let lambda: Vec<f64> = e.values.iter().map(|&v| v.max(0.0)).collect();
    let mut x = Array2::from_shape_fn((n, dim), |(i, k)| {
        let c = prob.node[i];
        e.vectors[[c, k]] / sq[c]
    });
    match scaling {
        MeuScaling::Unit => {
            // meuOptimise: X = U(:, ind); X = X - mean(X); X = X * diag(sqrt(1 ./ var(X)))
            for mut col in x.columns_mut() {
                let mean = col.sum() / nf;
                col.mapv_inplace(|v| v - mean);
                let var = col.dot(&col) / (nf - 1.0);
                let s = 1.0 / var.sqrt();
                col.mapv_inplace(|v| v * s);
            }
        }
        MeuScaling::Kpca => {
            for (mut col, &l) in x.columns_mut().into_iter().zip(&lambda) {
                let s = 1.0 / (l + prob.gamma).sqrt();
                col.mapv_inplace(|v| v * s);
            }
        }
    }
    canonicalize_signs(&mut x);
    Ok((x, lambda))
}
