//! Pieces shared by the Table III feature selectors (LS, SPEC, MCFS, NDFS, RUFS, SOGFS), each in
//! one place: the sample graph ([`SparseGraph`], adjacency lists, never an N x N matrix, built by
//! [`sample_graph`] from a [`GraphSpec`]: heat or binary weights, K-NN or full, relative or
//! absolute width, optional self-loops; [`heat_knn_graph`] is its heat-kernel K-NN case), the
//! mean pairwise distance, the ranking with ties by index, the checks of k, the cluster count and
//! constant features, and for the sparse-regression selectors (NDFS, RUFS, SOGFS) the l2,1
//! reweighted ridge solve and the k-means indicator initialisation.
//!
//! Looked for first: `structdr_numerics::neighbours::{knn, symmetrised_edges}` give the exact
//! symmetrised K-NN edges (reused here); the dense Laplacian assemblies of
//! `structdr_numerics::graphs::laplacian` are N x N, so the sparse products are written here;
//! the simplex projection is `structdr_numerics::optim::projections::project_simplex` (FSL's).

use crate::api::declare::param_choice;
use crate::api::{numerical, numerics, Graph, MethodError, Result};
use ndarray::{s, Array1, Array2, ArrayView1, ArrayView2, Axis};
use structdr_linalg::Cholesky;
use structdr_numerics::neighbours::{knn, symmetrised_edges};

/// An undirected weighted graph on N vertices as adjacency lists (`adj[i]` sorted by neighbour,
/// each edge stored in both lists), with the weighted degrees. The one sample-graph type of the
/// feature selectors.
#[derive(Debug, Clone, PartialEq)]
pub struct SparseGraph {
    /// `adj[i] = [(j, w_ij), ...]`, ascending `j`; `j != i` except for the self-loop `(i, s_ii)`
    /// of a graph built with [`GraphSpec::self_loops`] ([`SparseGraph::from_edges`] never adds
    /// one). Self-loops cancel in `L = D - W`, and [`SparseGraph::edges`] leaves them out.
    pub adj: Vec<Vec<(usize, f64)>>,
    /// `deg[i] = sum_j w_ij` (the self-loop included).
    pub deg: Vec<f64>,
}

impl SparseGraph {
    /// From undirected edges `(i, j, w)`, `i != j`, each listed once (duplicates are summed).
    pub fn from_edges(n: usize, edges: &[(usize, usize, f64)]) -> SparseGraph {
        let mut adj: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
        for &(i, j, w) in edges {
            if i != j && w != 0.0 {
                adj[i].push((j, w));
                adj[j].push((i, w));
            }
        }
        for row in adj.iter_mut() {
            row.sort_by_key(|e| e.0);
            row.dedup_by(|b, a| {
                if a.0 == b.0 {
                    a.1 += b.1;
                    true
                } else {
                    false
                }
            });
        }
        let deg = adj.iter().map(|r| r.iter().map(|e| e.1).sum()).collect();
        SparseGraph { adj, deg }
    }

    /// From sorted, duplicate-free edges `(i, j, w)`, `i < j`, `w > 0` (as
    /// [`symmetrised_edges`] gives them), plus a self-loop of weight `self_loop` on every vertex
    /// when it is non-zero. Degrees are added as `s_ii + sum_{j != i} w_ij` over `j` ascending
    /// (the order LS, SPEC and MCFS have always used; without self-loops it is the order of
    /// [`SparseGraph::from_edges`]).
    fn from_sorted_edges(n: usize, edges: &[(usize, usize, f64)], self_loop: f64) -> SparseGraph {
        let mut adj: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
        for &(i, j, w) in edges {
            adj[i].push((j, w));
            adj[j].push((i, w));
        }
        // edges sorted by (i, j) reach adj[v] as (a, v), a < v ascending, then (v, b) ascending
        for (i, row) in adj.iter_mut().enumerate() {
            debug_assert!(row.windows(2).all(|p| p[0].0 < p[1].0));
            if self_loop != 0.0 {
                let at = row.partition_point(|e| e.0 < i);
                row.insert(at, (i, self_loop));
            }
        }
        let deg = adj.iter().enumerate().map(|(i, row)| row.iter().filter(|e| e.0 != i).fold(self_loop, |d, e| d + e.1)).collect();
        SparseGraph { adj, deg }
    }

    /// Number of vertices.
    pub fn n(&self) -> usize {
        self.adj.len()
    }

    /// `L F = diag(deg) F - A F`, O(nnz c).
    pub fn laplacian_mul(&self, f: ArrayView2<f64>) -> Array2<f64> {
        let mut out = Array2::zeros(f.dim());
        for (i, row) in self.adj.iter().enumerate() {
            let mut o = out.row_mut(i);
            o.scaled_add(self.deg[i], &f.row(i));
            for &(j, w) in row {
                o.scaled_add(-w, &f.row(j));
            }
        }
        out
    }

    /// `A F` (the adjacency part of [`SparseGraph::laplacian_mul`]).
    pub fn adjacency_mul(&self, f: ArrayView2<f64>) -> Array2<f64> {
        let mut out = Array2::zeros(f.dim());
        for (i, row) in self.adj.iter().enumerate() {
            let mut o = out.row_mut(i);
            for &(j, w) in row {
                o.scaled_add(w, &f.row(j));
            }
        }
        out
    }

    /// `Tr(F^T L F) = sum_{i<j} w_ij ||f_i - f_j||^2`, O(nnz c).
    pub fn quadratic_form(&self, f: ArrayView2<f64>) -> f64 {
        let mut s = 0.0;
        for (i, row) in self.adj.iter().enumerate() {
            for &(j, w) in row.iter().filter(|e| e.0 > i) {
                s += w * f.row(i).iter().zip(f.row(j)).map(|(a, b)| (a - b) * (a - b)).sum::<f64>();
            }
        }
        s
    }

    /// `f' L f = sum_{i<j} w_ij (f_i - f_j)^2` for one feature `f` (one value per vertex), the
    /// edges in sorted order, each term as `(w_ij (f_i - f_j)) (f_i - f_j)`: the per-feature form
    /// of LS and SPEC (kept apart from [`SparseGraph::quadratic_form`], whose terms round as
    /// `w_ij ((f_i - f_j)^2)`, so that neither method's scores move by a bit).
    pub fn laplacian_form(&self, f: &[f64]) -> f64 {
        self.adj.iter().enumerate().flat_map(|(i, r)| r.iter().filter(move |e| e.0 > i).map(move |&(j, w)| w * (f[i] - f[j]) * (f[i] - f[j]))).sum()
    }

    /// The edges `(i, j, w)`, `i < j`, sorted.
    pub fn edges(&self) -> Vec<(usize, usize, f64)> {
        self.adj.iter().enumerate().flat_map(|(i, r)| r.iter().filter(move |e| e.0 > i).map(move |&(j, w)| (i, j, w))).collect()
    }

    /// The graph as the contract's edge list (self-loops left out).
    pub fn to_graph(&self) -> Graph {
        Graph { n_vertices: self.n(), edges: self.edges() }
    }

    /// The dense symmetric weight matrix `W` (self-loops on the diagonal; dense methods only).
    pub fn dense_adjacency(&self) -> Array2<f64> {
        let n = self.n();
        let mut w = Array2::zeros((n, n));
        for (i, row) in self.adj.iter().enumerate() {
            for &(j, s) in row {
                w[[i, j]] = s;
            }
        }
        w
    }

    /// The dense Laplacian (tests and small problems only).
    pub fn dense_laplacian(&self) -> Array2<f64> {
        let n = self.n();
        let mut l = Array2::zeros((n, n));
        for (i, row) in self.adj.iter().enumerate() {
            l[[i, i]] = self.deg[i];
            for &(j, w) in row {
                l[[i, j]] -= w;
            }
        }
        l
    }
}

/// The order in which [`mean_pairwise_distance_summed`] adds the `N(N-1)/2` distances. The two
/// orders round differently in the last bits; each method keeps the one it was published with,
/// so that its outputs stay bit-identical.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairSum {
    /// Row `i`'s distances to rows `j > i` summed first, the row sums then added in row order
    /// (NDFS, RUFS: [`mean_pairwise_distance`]).
    RowSums,
    /// One running sum over the pairs `(i, j)`, `i < j`, in row-major order (LS, SPEC, MCFS:
    /// the relative width of [`sample_graph`]).
    Running,
}

/// Mean pairwise Euclidean distance `delta_0 = 2/(N(N-1)) sum_{i<j} ||x_i - x_j||` (Table III's
/// reference width), summed as [`PairSum::RowSums`]. See [`mean_pairwise_distance_summed`].
pub fn mean_pairwise_distance(x: ArrayView2<f64>) -> f64 {
    mean_pairwise_distance_summed(x, PairSum::RowSums)
}

/// Mean pairwise Euclidean distance `delta_0 = 2/(N(N-1)) sum_{i<j} ||x_i - x_j||`, in row
/// blocks of the centred data (O(N^2 D) flops, O(block N) memory; the sums are added in the fixed
/// order `order`, so the value does not depend on the thread count). 0 for N < 2.
pub fn mean_pairwise_distance_summed(x: ArrayView2<f64>, order: PairSum) -> f64 {
    let n = x.nrows();
    if n < 2 {
        return 0.0;
    }
    let mean = x.mean_axis(Axis(0)).expect("n > 0");
    let xc = (&x - &mean.view().insert_axis(Axis(0))).as_standard_layout().to_owned();
    let rows = (2_000_000 / n).clamp(1, 256);
    let mut total = 0.0;
    let mut lo = 0;
    while lo < n {
        let hi = (lo + rows).min(n);
        let d2 = structdr_linalg::sq_dists_between(xc.slice(s![lo..hi, ..]), xc.view());
        for (r, row) in d2.outer_iter().enumerate() {
            let i = lo + r;
            let dists = row.into_iter().skip(i + 1).map(|&v| v.max(0.0).sqrt());
            match order {
                PairSum::RowSums => total += dists.sum::<f64>(),
                PairSum::Running => dists.for_each(|v| total += v),
            }
        }
        lo = hi;
    }
    total / (n * (n - 1) / 2) as f64
}

param_choice! {
    /// Edge weights of the sample graph.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum EdgeWeights {
        /// `s_ij = exp(-||x_i - x_j||^2 / (2 sigma^2))`.
        Heat = "heat",
        /// `s_ij = 1`.
        Binary = "binary",
    }
}

/// How [`sample_graph`] builds the sample graph.
///
/// The K-NN graph of the samples (exact search, self excluded, ties to the lowest index), made
/// symmetric by "or" (`i ~ j` iff `j in kNN(i)` or `i in kNN(j)`; for the symmetric heat weights
/// this is scikit-feature's max-symmetrisation), or with `k = 0` the full graph (every pair;
/// SPEC's RBF graph). Heat weights `s_ij = exp(-||x_i - x_j||^2 / (2 sigma^2))` with
/// `sigma = sigma_scale * delta_0` (`delta_0` the mean pairwise distance, summed as
/// [`PairSum::Running`]) or an absolute `sigma`; or binary weights `s_ij = 1`. No self-loops
/// unless `self_loops` (`s_ii = 1`: scikit-feature counts every sample among its own k + 1
/// nearest neighbours; they change the degrees, not `L = D - W`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GraphSpec {
    /// Neighbours per sample before symmetrisation; 0 = the full graph.
    pub k: usize,
    /// Heat or binary weights.
    pub weights: EdgeWeights,
    /// `sigma = sigma_scale * delta_0` (heat weights, when `sigma` is `None`).
    pub sigma_scale: f64,
    /// An absolute width overriding `sigma_scale * delta_0`.
    pub sigma: Option<f64>,
    /// Count every sample as its own neighbour, `s_ii = 1` (scikit-feature's `construct_W`).
    pub self_loops: bool,
}

impl GraphSpec {
    /// The heat-kernel K-NN graph with an absolute width and no self-loops ([`heat_knn_graph`]).
    pub fn heat_knn(k: usize, sigma: f64) -> GraphSpec {
        GraphSpec { k, weights: EdgeWeights::Heat, sigma_scale: 1.0, sigma: Some(sigma), self_loops: false }
    }
}

/// A graph built by [`sample_graph`], with the heat width it was built with.
#[derive(Debug, Clone)]
pub struct SampleGraph {
    /// The graph.
    pub graph: SparseGraph,
    /// The heat width sigma used (NaN for binary weights).
    pub sigma: f64,
    /// The mean pairwise distance `delta_0` (NaN when the width was given or the weights are
    /// binary).
    pub delta0: f64,
}

/// Builds the sample graph of `spec` (see [`GraphSpec`]). Cost: the exact K-NN search, or the
/// N x N distances for the full graph; the mean pairwise distance when the width is relative.
///
/// Errors: `k >= N` (input); a heat width that is not positive and finite, and a vertex whose
/// weights all underflow to 0 (degenerate: raise the width).
pub fn sample_graph(method: &'static str, x: ArrayView2<f64>, spec: &GraphSpec) -> Result<SampleGraph> {
    let n = x.nrows();
    let heat = spec.weights == EdgeWeights::Heat;
    let delta0 = if heat && spec.sigma.is_none() { mean_pairwise_distance_summed(x, PairSum::Running) } else { f64::NAN };
    let sigma = if heat { spec.sigma.unwrap_or(spec.sigma_scale * delta0) } else { f64::NAN };
    if heat && !(sigma > 0.0 && sigma.is_finite()) {
        return Err(MethodError::Degenerate {
            method,
            reason: format!("heat-kernel width sigma = {sigma:e} (delta_0 = {delta0:e}) is not positive and finite"),
        });
    }
    let weight = |d2: f64| if heat { (-d2 / (2.0 * sigma * sigma)).exp() } else { 1.0 };
    let mut edges: Vec<(usize, usize, f64)> = if spec.k == 0 {
        let mean = x.mean_axis(Axis(0)).expect("n > 0");
        let xc = &x - &mean.view().insert_axis(Axis(0));
        let d2 = structdr_linalg::sq_dists(xc.view());
        (0..n).flat_map(|i| ((i + 1)..n).map(move |j| (i, j))).map(|(i, j)| (i, j, weight(d2[[i, j]]))).collect()
    } else {
        let nb = knn(x, spec.k).map_err(numerics(method))?;
        symmetrised_edges(&nb).into_iter().map(|(i, j, d2)| (i, j, weight(d2))).collect()
    };
    edges.retain(|e| e.2 > 0.0);
    let graph = SparseGraph::from_sorted_edges(n, &edges, if spec.self_loops { 1.0 } else { 0.0 });
    if let Some(i) = graph.deg.iter().position(|&d| !(d > 0.0 && d.is_finite())) {
        return Err(MethodError::Degenerate {
            method,
            reason: format!(
                "sample {i} has degree {} in the heat-kernel graph (sigma = {sigma:e}: the weights to its neighbours underflow; raise the width)",
                graph.deg[i]
            ),
        });
    }
    Ok(SampleGraph { graph, sigma, delta0 })
}

/// The heat-kernel K-NN graph of scikit-feature's `construct_W(weight_mode="heat_kernel")` with
/// an absolute width and without its self-loops: [`sample_graph`] with [`GraphSpec::heat_knn`]
/// (`k >= 1`: `k = 0` is an input error here, not the full graph).
///
/// Errors: `k = 0` or `k >= N` (input), sigma not positive and finite, and a vertex whose weights
/// all underflow to 0 (degenerate: raise sigma).
pub fn heat_knn_graph(method: &'static str, x: ArrayView2<f64>, k: usize, sigma: f64) -> Result<SparseGraph> {
    if k == 0 {
        return Err(MethodError::Input { method, reason: "k = 0 neighbours requested (k must be >= 1)".into() });
    }
    sample_graph(method, x, &GraphSpec::heat_knn(k, sigma)).map(|g| g.graph)
}

/// A one-line description of a [`sample_graph`] graph for `Fitted.notes`.
pub fn graph_note(g: &SampleGraph, k: usize) -> String {
    let kind = if k == 0 { "full graph".to_string() } else { format!("{k}-NN graph") };
    let n_edges = g.graph.edges().len();
    if g.sigma.is_nan() {
        format!("{kind}, binary weights, {n_edges} edges")
    } else if g.delta0.is_nan() {
        format!("{kind}, heat weights, sigma = {:.6e} (given), {n_edges} edges", g.sigma)
    } else {
        format!("{kind}, heat weights, sigma = {:.6e} = {:.4} x delta_0 (delta_0 = {:.6e}), {n_edges} edges", g.sigma, g.sigma / g.delta0, g.delta0)
    }
}

/// Row norms `||w_i||_2` (the l2,1 norm is their sum; the feature scores of NDFS, RUFS, SOGFS).
pub fn row_norms(w: ArrayView2<f64>) -> Array1<f64> {
    w.map_axis(Axis(1), |r| r.dot(&r).sqrt())
}

/// The l2,1 reweighting `d_i = 1 / (2 max(||w_i||, floor))` (Nie et al. 2010; scikit-feature and
/// the FSASL code floor at 1e-16 / eps).
pub fn l21_weights(w: ArrayView2<f64>, floor: f64) -> Array1<f64> {
    row_norms(w).mapv(|v| 0.5 / v.max(floor))
}

/// `W = argmin_W sum_i r_i ||x_i^T W - b_i||^2 + sum_f q_f ||w_f||^2 = (X^T R X + Q)^-1 X^T R B`
/// (R = diag(r) > 0 on the samples, Q = diag(q) > 0 on the features): the reweighted ridge solve of
/// every l2,1 step. Through a D x D Cholesky factor when N > D, else through the push-through
/// identity `(X^T R X + Q)^-1 X^T R^1/2 = Q^-1 X^T R^1/2 (R^1/2 X Q^-1 X^T R^1/2 + I)^-1` and an
/// N x N factor, so the cost is O(N D min(N, D) + min(N, D)^3).
///
/// `r = None` means R = I; then `gram`, if given, must be `X^T X` and saves its O(N D^2) product
/// on the N > D path (NDFS, whose X never changes).
pub fn weighted_ridge(
    method: &'static str,
    x: ArrayView2<f64>,
    r: Option<ArrayView1<f64>>,
    q: ArrayView1<f64>,
    b: ArrayView2<f64>,
    gram: Option<&Array2<f64>>,
) -> Result<Array2<f64>> {
    let (n, d) = x.dim();
    let (xr, br) = match r {
        Some(r) => {
            let rs = r.mapv(f64::sqrt);
            (&x * &rs.view().insert_axis(Axis(1)), &b * &rs.view().insert_axis(Axis(1)))
            // R^1/2 X, R^1/2 B
        }
        None => (x.to_owned(), b.to_owned()),
    };
    if n > d {
        let mut a = match (r, gram) {
            (None, Some(g)) => g.clone(),
            _ => xr.t().dot(&xr),
        };
        for f in 0..d {
            a[[f, f]] += q[f];
        }
        let rhs = xr.t().dot(&br);
        Cholesky::factor(a.view()).and_then(|c| c.solve(rhs.view())).map_err(numerical(method))
    } else {
        let qi = q.mapv(|v| 1.0 / v);
        let xq = &xr * &qi.view().insert_axis(Axis(0)); // R^1/2 X Q^-1
        let mut k = xq.dot(&xr.t());
        for i in 0..n {
            k[[i, i]] += 1.0;
        }
        let z = Cholesky::factor(k.view()).and_then(|c| c.solve(br.view())).map_err(numerical(method))?;
        Ok(xq.t().dot(&z))
    }
}

/// The pseudo-label initialisation of NDFS (scikit-feature's `kmeans_initialization`, also used
/// for RUFS's G): k-means labels, the indicator Y scaled to `Y (Y^T Y)^-1/2` (orthonormal
/// columns), plus 0.02 everywhere (so multiplicative updates can move every entry). k-means is
/// the crate's seeded k-means++/Lloyd (`structdr_numerics::clustering::kmeans`), best SSE of
/// `n_init` seeds derived from `seed`.
pub fn kmeans_indicator(method: &'static str, x: ArrayView2<f64>, c: usize, seed: u64, n_init: usize) -> Result<Array2<f64>> {
    let mut best: Option<structdr_numerics::clustering::KMeansResult> = None;
    for r in 0..n_init.max(1) {
        let s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(r as u64);
        let km = structdr_numerics::clustering::kmeans(x, c, s, 300).map_err(numerics(method))?;
        if best.as_ref().is_none_or(|b| km.sse < b.sse) {
            best = Some(km);
        }
    }
    Ok(indicator_init(&best.expect("n_init >= 1").labels, c))
}

/// `Y (Y^T Y)^-1/2 + 0.02` for labels in `0..c` (empty clusters give a 0.02 column).
pub fn indicator_init(labels: &[usize], c: usize) -> Array2<f64> {
    let mut counts = vec![0usize; c];
    for &l in labels {
        counts[l] += 1;
    }
    Array2::from_shape_fn((labels.len(), c), |(i, j)| if labels[i] == j { 1.0 / (counts[j] as f64).sqrt() } else { 0.0 } + 0.02)
}

/// Features ordered by `score` ascending (`ascending = true`) or descending, ties by index
/// ascending (a permutation of `0..D`).
pub fn rank_by(score: ArrayView1<f64>, ascending: bool) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..score.len()).collect();
    idx.sort_by(|&a, &b| {
        let o = score[a].total_cmp(&score[b]);
        (if ascending { o } else { o.reverse() }).then(a.cmp(&b))
    });
    idx
}

/// Features ranked by weight descending, ties by index ascending: `rank_by(w, false)`.
pub fn rank_by_weight(w: ArrayView1<f64>) -> Vec<usize> {
    rank_by(w, false)
}

/// `||F^T F - I||_F^2`.
pub fn orthogonality_gap(f: ArrayView2<f64>) -> f64 {
    let g = f.t().dot(&f);
    g.indexed_iter().map(|((i, j), &v)| if i == j { (v - 1.0).powi(2) } else { v * v }).sum()
}

/// `k < N` for a K-NN graph of N samples.
pub fn check_k(method: &'static str, k: usize, n: usize) -> Result<()> {
    if k >= n {
        return Err(MethodError::Input { method, reason: format!("k = {k} neighbours needs N > k samples, got N = {n}") });
    }
    Ok(())
}

/// `c >= 1` clusters (or eigenvectors) below the number of samples, `c < N`, and `k < N`
/// neighbours ([`check_k`]).
pub fn check_clusters(method: &'static str, n: usize, c: usize, k: usize) -> Result<()> {
    if c == 0 {
        return Err(MethodError::Input { method, reason: "n_clusters = 0 (need at least 1)".into() });
    }
    if c >= n {
        return Err(MethodError::Input { method, reason: format!("n_clusters = {c} is not below the number of samples N = {n}") });
    }
    check_k(method, k, n)
}

/// The features that take one value only (their spectral scores are 0/0).
pub fn constant_features(x: ArrayView2<f64>) -> Vec<usize> {
    (0..x.ncols()).filter(|&r| x.column(r).iter().all(|&v| v == x[[0, r]])).collect()
}

/// Refuses data with constant features ([`MethodError::Degenerate`], naming up to 10).
pub fn refuse_constant_features(method: &'static str, x: ArrayView2<f64>) -> Result<()> {
    let c = constant_features(x);
    if c.is_empty() {
        return Ok(());
    }
    let shown: Vec<String> = c.iter().take(10).map(|r| r.to_string()).collect();
    Err(MethodError::Degenerate {
        method,
        reason: format!("{} constant feature(s) (e.g. {}): their score is 0/0; remove constant features first", c.len(), shown.join(", ")),
    })
}

/// The lasso's KKT violation at `s` given `q = G s` (of `min_s 1/2 s^T G s - b^T s + rho ||s||_1`): `max_j |b_j - q_j - rho sign(s_j)|` on the
/// nonzero coordinates and `max(0, |b_j - q_j| - rho)` on the zero ones (`skip` left out).
pub fn lasso_kkt(q: ArrayView1<f64>, b: ArrayView1<f64>, rho: f64, s: ArrayView1<f64>, skip: Option<usize>) -> f64 {
    (0..b.len())
        .filter(|&j| Some(j) != skip)
        .map(|j| {
            let r = b[j] - q[j];
            if s[j] != 0.0 {
                (r - rho * s[j].signum()).abs()
            } else {
                (r.abs() - rho).max(0.0)
            }
        })
        .fold(0.0, f64::max)
}

/// Sums `f(chunk)` over `0..n` in fixed chunks of `chunk` indices, the chunks run on the rayon
/// pool and their results added in chunk order: the value does not depend on the thread count.
pub fn chunked_sum<F>(n: usize, chunk: usize, init: Array1<f64>, f: F) -> Array1<f64>
where
    F: Fn(std::ops::Range<usize>) -> Array1<f64> + Sync,
{
    use rayon::prelude::*;
    let parts: Vec<Array1<f64>> = (0..n.div_ceil(chunk)).into_par_iter().map(|c| f(c * chunk..((c + 1) * chunk).min(n))).collect();
    parts.into_iter().fold(init, |a, p| a + p)
}

/// The evaluation-stage parameter `n_selected` of the methods whose every feature gets a score:
/// the protocols score `X` restricted to this many top-ranked features, so one fit serves every
/// value of the grid.
pub fn n_selected() -> crate::api::ParamSchema {
    crate::api::info::int("n_selected", 0, 0, "evaluation stage: the protocols score X restricted to this many top-ranked features; one fit serves every value")
        .evaluation_stage()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;
    use rand::{Rng, SeedableRng};

    #[test]
    fn sparse_laplacian_products_match_the_dense_laplacian() {
        let edges = vec![(0, 1, 0.5), (1, 2, 2.0), (0, 3, 1.5), (2, 3, 0.25)];
        let g = SparseGraph::from_edges(4, &edges);
        let l = g.dense_laplacian();
        let f = array![[1.0, -2.0], [0.5, 0.0], [3.0, 1.0], [-1.0, 2.0]];
        let lf = g.laplacian_mul(f.view());
        assert!((&lf - &l.dot(&f)).iter().all(|v| v.abs() < 1e-14));
        let tr = f.t().dot(&l).dot(&f).diag().sum();
        assert!((g.quadratic_form(f.view()) - tr).abs() < 1e-12);
        assert_eq!(g.edges(), vec![(0, 1, 0.5), (0, 3, 1.5), (1, 2, 2.0), (2, 3, 0.25)]);
    }

    #[test]
    fn weighted_ridge_is_stationary_on_both_paths() {
        // gradient of sum_i r_i ||x_i^T W - b_i||^2 + sum_f q_f ||w_f||^2 is
        // 2 (X^T R (X W - B) + Q W) = 0 at the returned W, for N > D and N <= D.
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(3);
        for (n, d) in [(30, 6), (6, 30), (8, 8)] {
            let x = Array2::from_shape_fn((n, d), |_| rng.gen_range(-1.0..1.0));
            let b = Array2::from_shape_fn((n, 3), |_| rng.gen_range(-1.0..1.0));
            let r = Array1::from_shape_fn(n, |_| rng.gen_range(0.1..2.0));
            let q = Array1::from_shape_fn(d, |_| rng.gen_range(0.01..3.0));
            let w = weighted_ridge("test", x.view(), Some(r.view()), q.view(), b.view(), None).unwrap();
            let resid = &x.dot(&w) - &b;
            let grad = x.t().dot(&(&resid * &r.view().insert_axis(Axis(1)))) + &w * &q.view().insert_axis(Axis(1));
            let err = grad.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            assert!(err < 1e-11, "({n}, {d}): gradient {err:e}");
        }
    }

    #[test]
    fn ranking_breaks_ties_by_index_and_is_a_permutation() {
        let w = array![0.5, 1.0, 0.5, 0.0, 1.0];
        assert_eq!(rank_by_weight(w.view()), vec![1, 4, 0, 2, 3]);
        let s = array![0.3, 0.1, 0.3, 0.1, 0.0];
        assert_eq!(rank_by(s.view(), true), vec![4, 1, 3, 0, 2]);
        assert_eq!(rank_by(s.view(), false), vec![0, 2, 1, 3, 4]);
    }

    #[test]
    fn heat_graph_weights_and_mean_distance() {
        let x = array![[0.0], [1.0], [3.0], [7.0]];
        let g = heat_knn_graph("test", x.view(), 1, 1.0).unwrap();
        assert_eq!(g.edges(), vec![(0, 1, (-0.5f64).exp()), (1, 2, (-2.0f64).exp()), (2, 3, (-8.0f64).exp())]);
        // distances 1, 3, 7, 2, 6, 4: mean 23 / 6
        assert!((mean_pairwise_distance(x.view()) - 23.0 / 6.0).abs() < 1e-12);
        assert!(matches!(heat_knn_graph("test", (&x * 1e3).view(), 1, 1e-3), Err(MethodError::Degenerate { .. })));
    }

    #[test]
    fn indicator_init_has_orthonormal_columns_before_the_offset() {
        let f = indicator_init(&[0, 1, 0, 2, 1, 0], 3) - 0.02;
        let g = f.t().dot(&f);
        assert!((g - Array2::<f64>::eye(3)).iter().all(|v| v.abs() < 1e-15));
    }
}
