//! Pieces shared by the sparse-regression feature selectors (NDFS, RUFS, SOGFS): the heat-kernel
//! K-NN graph as adjacency lists (never an N x N matrix), products with its Laplacian, the
//! l2,1 reweighted ridge solve, the k-means indicator initialisation and the ranking by weight.
//!
//! Looked for first: `structdr_numerics::neighbours::{knn, symmetrised_edges}` give the exact
//! symmetrised K-NN edges (reused here); the dense Laplacian assemblies of
//! `structdr_numerics::graphs::laplacian` are N x N, so the sparse products are written here;
//! the simplex projection is `structdr_numerics::optim::projections::project_simplex` (FSL's).

use crate::api::{numerical, numerics, MethodError, Result};
use ndarray::{s, Array1, Array2, ArrayView1, ArrayView2, Axis};
use structdr_linalg::Cholesky;
use structdr_numerics::neighbours::{knn, symmetrised_edges};

/// An undirected weighted graph on N vertices as adjacency lists (`adj[i]` sorted by neighbour,
/// each edge stored in both lists), with the weighted degrees.
#[derive(Debug, Clone, PartialEq)]
pub struct SparseGraph {
    /// `adj[i] = [(j, w_ij), ...]`, `j != i`, ascending `j`.
    pub adj: Vec<Vec<(usize, f64)>>,
    /// `deg[i] = sum_j w_ij`.
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

    /// The edges `(i, j, w)`, `i < j`, sorted.
    pub fn edges(&self) -> Vec<(usize, usize, f64)> {
        self.adj.iter().enumerate().flat_map(|(i, r)| r.iter().filter(move |e| e.0 > i).map(move |&(j, w)| (i, j, w))).collect()
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

/// Mean pairwise Euclidean distance `delta_0 = 2/(N(N-1)) sum_{i<j} ||x_i - x_j||` (Table III's
/// reference width), in row blocks of the centred data (O(N^2 D) flops, O(block N) memory; the
/// block sums are added in a fixed order, so the value does not depend on the thread count).
pub fn mean_pairwise_distance(x: ArrayView2<f64>) -> f64 {
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
            total += row.iter().skip(i + 1).map(|&v| v.max(0.0).sqrt()).sum::<f64>();
        }
        lo = hi;
    }
    total / (n * (n - 1) / 2) as f64
}

/// The heat-kernel K-NN graph of scikit-feature's `construct_W(weight_mode="heat_kernel")`:
/// i ~ j when j is among the k nearest neighbours of i or i among those of j (exact K-NN, ties to
/// the lowest index), `w_ij = exp(-||x_i - x_j||^2 / (2 sigma^2))`. (scikit-feature also puts
/// `w_ii = 1` on the diagonal; self-loops cancel in `L = D - W`, so they are left out.)
///
/// Errors: `k >= N` (input) and a vertex whose weights all underflow to 0 (degenerate: raise
/// sigma).
pub fn heat_knn_graph(method: &'static str, x: ArrayView2<f64>, k: usize, sigma: f64) -> Result<SparseGraph> {
    let g = knn(x, k).map_err(numerics(method))?;
    let edges: Vec<(usize, usize, f64)> = symmetrised_edges(&g).into_iter().map(|(i, j, d2)| (i, j, (-d2 / (2.0 * sigma * sigma)).exp())).collect();
    let graph = SparseGraph::from_edges(x.nrows(), &edges);
    if let Some(i) = graph.deg.iter().position(|&d| !(d > 0.0)) {
        return Err(MethodError::Degenerate {
            method,
            reason: format!("sample {i} has degree 0 in the heat-kernel graph (sigma = {sigma:e}: the weights underflow; raise the width)"),
        });
    }
    Ok(graph)
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

/// Features ranked by weight descending, ties by index ascending (a permutation of `0..D`).
pub fn rank_by_weight(w: ArrayView1<f64>) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..w.len()).collect();
    idx.sort_by(|&a, &b| w[b].total_cmp(&w[a]).then(a.cmp(&b)));
    idx
}

/// `||F^T F - I||_F^2`.
pub fn orthogonality_gap(f: ArrayView2<f64>) -> f64 {
    let g = f.t().dot(&f);
    g.indexed_iter().map(|((i, j), &v)| if i == j { (v - 1.0).powi(2) } else { v * v }).sum()
}

/// Checks shared by the three methods: at least `c + 1` samples and `c >= 1` clusters, and
/// `k < N` neighbours.
pub fn check_clusters(method: &'static str, n: usize, c: usize, k: usize) -> Result<()> {
    if c == 0 {
        return Err(MethodError::Input { method, reason: "n_clusters = 0 (need at least 1)".into() });
    }
    if c >= n {
        return Err(MethodError::Input { method, reason: format!("n_clusters = {c} is not below the number of samples N = {n}") });
    }
    if k >= n {
        return Err(MethodError::Input { method, reason: format!("too few samples for k = {k} neighbours: N = {n}") });
    }
    Ok(())
}

/// What [`lasso_gram`] returns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LassoStatus {
    /// Coordinate sweeps run (full and active-set).
    pub sweeps: usize,
    /// The KKT violation at the returned point ([`lasso_kkt`]).
    pub kkt: f64,
    /// Whether `kkt <= tol max(|b|)` was reached.
    pub converged: bool,
}

/// The lasso in Gram form, `min_s 1/2 s^T G s - b^T s + rho ||s||_1` (with `G = A^T A`,
/// `b = A^T y` this is `1/2 ||y - A s||^2 + rho ||s||_1` up to a constant), `s_skip = 0` held
/// fixed, by cyclic coordinate descent from the warm start `s`: a full sweep, then sweeps over
/// the nonzero coordinates until they settle, then a full sweep again, until the KKT violation
/// ([`lasso_kkt`]) is at most `tol max_j |b_j|` or `max_sweeps` sweeps have run. `q = G s` is
/// kept up to date (O(p) per nonzero change), so a sweep costs O(p + changes p). The coordinate
/// minimiser is `s_j = soft(b_j - (G s)_j + G_jj s_j, rho) / G_jj` (0 when `G_jj = 0`).
/// Sequential and deterministic. (Written here: no lasso or LARS exists in the workspace; the
/// crates considered, `linfa-elasticnet` and `smartcore`, take a design matrix, not a Gram
/// matrix, and would pull a second linear-algebra stack.)
pub fn lasso_gram(g: ArrayView2<f64>, b: ArrayView1<f64>, rho: f64, skip: Option<usize>, s: &mut Array1<f64>, tol: f64, max_sweeps: usize) -> LassoStatus {
    let p = b.len();
    if let Some(k) = skip {
        s[k] = 0.0;
    }
    let mut q = g.dot(&*s);
    let bmax = b.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    let target = tol * bmax;
    let mut sweeps = 0;
    let update = |j: usize, s: &mut Array1<f64>, q: &mut Array1<f64>| -> f64 {
        let gjj = g[[j, j]];
        let old = s[j];
        let new = if gjj > 0.0 {
            let r = b[j] - q[j] + gjj * old;
            (r.abs() - rho).max(0.0).copysign(r) / gjj
        } else {
            0.0
        };
        let delta = new - old;
        if delta != 0.0 {
            s[j] = new;
            q.scaled_add(delta, &g.row(j));
        }
        delta.abs() * gjj.sqrt()
    };
    loop {
        // full sweep
        for j in 0..p {
            if Some(j) != skip {
                update(j, s, &mut q);
            }
        }
        sweeps += 1;
        let kkt = lasso_kkt(q.view(), b, rho, s.view(), skip);
        if kkt <= target || sweeps >= max_sweeps {
            return LassoStatus { sweeps, kkt, converged: kkt <= target };
        }
        // active set until it settles
        let active: Vec<usize> = (0..p).filter(|&j| s[j] != 0.0).collect();
        for _ in 0..50 {
            if sweeps >= max_sweeps {
                break;
            }
            let mut change = 0.0f64;
            for &j in &active {
                change = change.max(update(j, s, &mut q));
            }
            sweeps += 1;
            if change <= 0.1 * target {
                break;
            }
        }
        // CD converges slowly on an ill-conditioned support: try the exact solution on the
        // support with the current signs, `G_AA s_A = b_A - rho sign(s_A)`, kept if the signs hold
        if !active.is_empty() && active.len() <= g.nrows() {
            let ga = g.select(Axis(0), &active).select(Axis(1), &active);
            let rhs = Array1::from_iter(active.iter().map(|&j| b[j] - rho * s[j].signum()));
            if let Ok(sa) = Cholesky::factor(ga.view()).and_then(|c| c.solve_vec(rhs.view())) {
                if active.iter().zip(sa.iter()).all(|(&j, &v)| v != 0.0 && v.signum() == s[j].signum()) {
                    for (&j, &v) in active.iter().zip(sa.iter()) {
                        let delta = v - s[j];
                        s[j] = v;
                        q.scaled_add(delta, &g.row(j));
                    }
                }
            }
        }
    }
}

/// The lasso's KKT violation at `s` given `q = G s`: `max_j |b_j - q_j - rho sign(s_j)|` on the
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

    #[test]
    fn lasso_gram_meets_its_kkt_conditions_and_matches_a_one_dimensional_closed_form() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(11);
        for (rows, p) in [(4, 12), (20, 8), (6, 30)] {
            let a = Array2::from_shape_fn((rows, p), |_| rng.gen_range(-1.0..1.0));
            let y = Array1::from_shape_fn(rows, |_| rng.gen_range(-1.0..1.0));
            let g = a.t().dot(&a);
            let b = a.t().dot(&y);
            let bmax = b.iter().fold(0.0f64, |m, &v: &f64| m.max(v.abs()));
            for ratio in [0.01, 0.1, 0.5, 1.5] {
                let rho = ratio * bmax;
                let mut s = Array1::zeros(p);
                let st = lasso_gram(g.view(), b.view(), rho, Some(2), &mut s, 1e-12, 100_000);
                assert!(st.converged, "({rows}, {p}, {ratio}): kkt {:e}", st.kkt);
                assert_eq!(s[2], 0.0);
                let q = g.dot(&s);
                assert!(lasso_kkt(q.view(), b.view(), rho, s.view(), Some(2)) <= 1e-11 * bmax);
                if ratio >= 1.0 {
                    assert!(s.iter().all(|&v| v == 0.0));
                }
            }
        }
        // one variable: s = soft(b, rho) / g
        let mut s = Array1::zeros(1);
        lasso_gram(array![[4.0]].view(), array![3.0].view(), 1.0, None, &mut s, 1e-14, 10);
        assert!((s[0] - 0.5).abs() < 1e-15);
    }
}
