//! K-nearest-neighbour graphs, connected components and the repair of disconnected graphs.
//!
//! - [`knn`]: exact K-NN search. Squared distances `||x_i - x_j||^2 = ||x_i||^2 + ||x_j||^2 -
//!   2 x_i^T x_j` come from one GEMM per block of rows ([`structdr_linalg::sq_dists_between`] on
//!   the column-centred data, which limits cancellation), never an N x N matrix; every candidate
//!   within the GEMM rounding-error bound of the k-th smallest is then re-scored with the exact
//!   `sum_f (x_if - x_jf)^2`, so duplicate points are at distance exactly 0 and ties are decided
//!   exactly. Self is excluded, ties go to the lowest index.
//! - [`symmetrised_edges`]: the "or" graph, `i ~ j` iff `j in kNN(i)` or `i in kNN(j)` (drtoolbox
//!   `find_nn`, scikit-learn `0.5 (A + A^T)` support).
//! - [`connected_components`], [`component_sizes`].
//! - [`connect_components`]: joins components along a minimum spanning tree of the components,
//!   each tree edge being the shortest point pair between the two parts (Borůvka on the point
//!   graph with free intra-component edges; ties broken by `(distance, i, j)` so it is unique).
//! - [`neighbourhood_graph`]: all of the above with the [`Disconnected`] policy, shared by LE and LLE.
//! - [`mst_prim`], [`mst_sq_euclidean`]: minimum spanning tree of a complete graph (Prim, O(n^2),
//!   deterministic ties, zero-length edges kept), used by DDRTree.
//! - `RootedTree`: solves `(w L_T + diag(g)) X = B` for a spanning tree T in O(K cols) by
//!   leaf-to-root elimination (DDRTree's and RPG's centre updates).
//!
//! Every function is deterministic: work is split into row blocks whose size depends on N only, and
//! rayon's ordered collects put the results back in block order.

use crate::params::ParamSchema;
use crate::registry::choice;
use crate::{check_input, MethodError, Result};
use ndarray::{s, Array2, ArrayView1, ArrayView2, Axis};
use rayon::prelude::*;
use structdr_linalg::sq_dists_between;

/// The exact K nearest neighbours of every sample (self excluded).
#[derive(Debug, Clone, PartialEq)]
pub struct Knn {
    /// `indices[[i, r]]`: the (r+1)-th nearest neighbour of sample i (N x k); ties to the lowest index.
    pub indices: Array2<usize>,
    /// `sq_dists[[i, r]] = ||x_i - x_{indices[[i, r]]}||^2`, exact (summed feature by feature), ascending per row.
    pub sq_dists: Array2<f64>,
}

impl Knn {
    /// Number of neighbours k.
    pub fn k(&self) -> usize {
        self.indices.ncols()
    }
}

/// Rows per GEMM block: about 32 MB of distances per block, at most 256 rows (a function of N only,
/// so results never depend on the number of threads).
fn block_rows(n: usize) -> usize {
    (4_000_000 / n.max(1)).clamp(1, 256)
}

/// `||a - b||^2` summed feature by feature (exact zero for duplicates, symmetric bit for bit).
///
/// Contiguous rows go through [`sq_dist_slices`] (eight partial sums, SIMD-friendly); other
/// layouts are summed in feature order.
#[inline]
pub fn exact_sq_dist(a: ArrayView1<f64>, b: ArrayView1<f64>) -> f64 {
    match (a.as_slice(), b.as_slice()) {
        (Some(sa), Some(sb)) => sq_dist_slices(sa, sb),
        _ => a.iter().zip(b.iter()).map(|(u, v)| (u - v) * (u - v)).sum(),
    }
}

/// `sum_f (a_f - b_f)^2` with eight interleaved partial sums (lane `f mod 8`) added pairwise at
/// the end, so the compiler vectorises it; a fixed order, hence deterministic, symmetric in
/// `(a, b)` bit for bit, and exactly 0 for equal slices. On x86-64 CPUs with AVX2 the same
/// operations run in 256-bit registers (no FMA: the result is bit-identical to the SSE2 path).
/// Panics if the lengths differ.
#[inline]
pub fn sq_dist_slices(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "sq_dist_slices: lengths differ");
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { sq_dist_avx2(a, b) };
    }
    sq_dist_lanes(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sq_dist_avx2(a: &[f64], b: &[f64]) -> f64 {
    sq_dist_lanes(a, b)
}

#[inline(always)]
fn sq_dist_lanes(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0f64; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (u, v) in ca.zip(cb) {
        for l in 0..8 {
            let t = u[l] - v[l];
            acc[l] += t * t;
        }
    }
    let mut tail = 0.0;
    for (u, v) in ra.iter().zip(rb) {
        let t = u - v;
        tail += t * t;
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

#[inline]
fn by_dist_then_index(a: &(f64, usize), b: &(f64, usize)) -> std::cmp::Ordering {
    a.0.total_cmp(&b.0).then(a.1.cmp(&b.1))
}

fn centred(x: ArrayView2<f64>) -> Array2<f64> {
    let mean = x.mean_axis(Axis(0)).expect("non-empty");
    let xc = &x - &mean.view().insert_axis(Axis(0));
    xc.as_standard_layout().to_owned()
}

/// Exact K-NN search: for every sample i, the k samples `j != i` with the smallest
/// `||x_i - x_j||^2`, ascending, ties to the lowest index.
///
/// Cost O(N^2 D) flops in GEMM blocks plus O(N^2) selection, memory O(N k + block x N).
/// Errors: empty or non-finite input, `k = 0`, and `k >= N` ("too few points for k neighbours").
pub fn knn(x: ArrayView2<f64>, k: usize) -> Result<Knn> {
    knn_for("knn", x, k)
}

/// [`knn`] with errors attributed to `method`.
pub(crate) fn knn_for(method: &'static str, x: ArrayView2<f64>, k: usize) -> Result<Knn> {
    check_input(method, &x, 1)?;
    let n = x.nrows();
    if k == 0 {
        return Err(MethodError::Input { method, reason: "k = 0 neighbours requested (k must be >= 1)".into() });
    }
    if k >= n {
        return Err(MethodError::Input { method, reason: format!("too few points for k neighbours: N = {n} samples, k = {k} (need N > k)") });
    }
    let xc = centred(x);
    let norms = structdr_linalg::row_sq_norms(xc.view());
    let max_norm = norms.iter().copied().fold(0.0f64, f64::max);
    // Bound on the rounding error of a GEMM distance ||a||^2 + ||b||^2 - 2 a^T b (each term is a
    // D-term sum): every sample whose GEMM distance is within twice this of the k-th smallest is
    // re-scored exactly, so exact ties and near-ties are always decided by (exact distance, index).
    let slack = |ni: f64| 4.0 * (x.ncols() as f64 + 4.0) * f64::EPSILON * (ni + max_norm);
    let rows = block_rows(n);
    let nblocks = n.div_ceil(rows);
    let blocks: Vec<(Vec<usize>, Vec<f64>)> = (0..nblocks)
        .into_par_iter()
        .map(|b| {
            let lo = b * rows;
            let hi = (lo + rows).min(n);
            let d = sq_dists_between(xc.slice(s![lo..hi, ..]), xc.view());
            let mut idx = Vec::with_capacity((hi - lo) * k);
            let mut dist = Vec::with_capacity((hi - lo) * k);
            let mut buf: Vec<(f64, usize)> = Vec::with_capacity(n);
            let mut cand: Vec<(f64, usize)> = Vec::with_capacity(2 * k);
            for (r, drow) in d.rows().into_iter().enumerate() {
                let i = lo + r;
                buf.clear();
                buf.extend(drow.iter().enumerate().filter(|&(j, _)| j != i).map(|(j, &v)| (v, j)));
                let (_, kth, _) = buf.select_nth_unstable_by(k - 1, by_dist_then_index);
                let tau = kth.0 + slack(norms[i]);
                cand.clear();
                cand.extend(buf.iter().filter(|e| e.0 <= tau).map(|&(_, j)| (exact_sq_dist(x.row(i), x.row(j)), j)));
                cand.sort_unstable_by(by_dist_then_index);
                for &(v, j) in &cand[..k] {
                    idx.push(j);
                    dist.push(v);
                }
            }
            (idx, dist)
        })
        .collect();
    let mut indices = Vec::with_capacity(n * k);
    let mut sq = Vec::with_capacity(n * k);
    for (i, d) in blocks {
        indices.extend(i);
        sq.extend(d);
    }
    Ok(Knn {
        indices: Array2::from_shape_vec((n, k), indices).expect("n*k"),
        sq_dists: Array2::from_shape_vec((n, k), sq).expect("n*k"),
    })
}

/// The symmetrised ("or") K-NN graph as sorted, duplicate-free edges `(i, j, ||x_i - x_j||^2)`
/// with `i < j`: `i ~ j` iff `j in kNN(i)` or `i in kNN(j)`.
pub fn symmetrised_edges(knn: &Knn) -> Vec<(usize, usize, f64)> {
    let mut edges: Vec<(usize, usize, f64)> = Vec::with_capacity(knn.indices.len());
    for ((i, r), &j) in knn.indices.indexed_iter() {
        edges.push((i.min(j), i.max(j), knn.sq_dists[[i, r]]));
    }
    edges.sort_unstable_by_key(|e| (e.0, e.1));
    edges.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    edges
}

/// Union-find root with path halving.
fn find(parent: &mut [usize], mut v: usize) -> usize {
    while parent[v] != v {
        parent[v] = parent[parent[v]];
        v = parent[v];
    }
    v
}

/// Connected components of the undirected graph on `n` vertices with `edges` (`(i, j, _)`,
/// any order). Returns the component id of every vertex, components numbered 0, 1, ... in the order
/// of their lowest vertex, and the number of components.
pub fn connected_components(n: usize, edges: &[(usize, usize, f64)]) -> (Vec<usize>, usize) {
    let mut parent: Vec<usize> = (0..n).collect();
    for &(i, j, _) in edges {
        let (a, b) = (find(&mut parent, i), find(&mut parent, j));
        if a != b {
            parent[a.max(b)] = a.min(b);
        }
    }
    let mut id = vec![usize::MAX; n];
    let mut count = 0;
    let labels = (0..n)
        .map(|v| {
            let r = find(&mut parent, v);
            if id[r] == usize::MAX {
                id[r] = count;
                count += 1;
            }
            id[r]
        })
        .collect();
    (labels, count)
}

/// Number of vertices in each component (`labels` from [`connected_components`]).
pub fn component_sizes(labels: &[usize], count: usize) -> Vec<usize> {
    let mut sizes = vec![0; count];
    for &c in labels {
        sizes[c] += 1;
    }
    sizes
}

/// Edges that join all components of a graph into one: a minimum spanning tree of the components,
/// where the weight between two components is the smallest `||x_i - x_j||^2` over `i` in one and `j`
/// in the other, and each tree edge is realised by that shortest pair `(i, j, ||x_i - x_j||^2)`,
/// `i < j`. `count - 1` edges, sorted; empty when `count <= 1`.
///
/// Borůvka: every round, each current part picks its shortest outgoing pair (total order
/// `(distance, i, j)`, so the tree is unique and deterministic) in one blocked GEMM pass, O(N^2 D);
/// at most `ceil(log2(count))` rounds. Distances used for selection come from the centred GEMM;
/// the returned weights are exact.
pub fn connect_components(x: ArrayView2<f64>, labels: &[usize], count: usize) -> Vec<(usize, usize, f64)> {
    let n = x.nrows();
    assert_eq!(labels.len(), n, "connect_components: one label per sample");
    if count <= 1 {
        return Vec::new();
    }
    let xc = centred(x);
    let rows = block_rows(n);
    let nblocks = n.div_ceil(rows);
    // parent over component ids
    let mut parent: Vec<usize> = (0..count).collect();
    let mut added: Vec<(usize, usize, f64)> = Vec::with_capacity(count - 1);
    type Best = Option<(f64, usize, usize)>;
    let better = |a: &Best, b: &Best| -> bool {
        match (a, b) {
            (Some(x), Some(y)) => x.0.total_cmp(&y.0).then((x.1, x.2).cmp(&(y.1, y.2))).is_lt(),
            (Some(_), None) => true,
            _ => false,
        }
    };
    loop {
        let part: Vec<usize> = labels.iter().map(|&c| find(&mut parent, c)).collect();
        let mut parts: Vec<usize> = part.clone();
        parts.sort_unstable();
        parts.dedup();
        if parts.len() <= 1 {
            break;
        }
        let per_block: Vec<Vec<Best>> = (0..nblocks)
            .into_par_iter()
            .map(|b| {
                let lo = b * rows;
                let hi = (lo + rows).min(n);
                let d = sq_dists_between(xc.slice(s![lo..hi, ..]), xc.view());
                let mut best: Vec<Best> = vec![None; count];
                for (r, drow) in d.rows().into_iter().enumerate() {
                    let i = lo + r;
                    let pi = part[i];
                    for (j, &v) in drow.iter().enumerate() {
                        if part[j] != pi {
                            let cand = Some((v, i.min(j), i.max(j)));
                            if better(&cand, &best[pi]) {
                                best[pi] = cand;
                            }
                        }
                    }
                }
                best
            })
            .collect();
        let mut best: Vec<Best> = vec![None; count];
        for blk in per_block {
            for (p, c) in blk.into_iter().enumerate() {
                if better(&c, &best[p]) {
                    best[p] = c;
                }
            }
        }
        let mut round: Vec<(usize, usize)> = best.iter().flatten().map(|&(_, i, j)| (i, j)).collect();
        round.sort_unstable();
        round.dedup();
        for (i, j) in round {
            let (a, b) = (find(&mut parent, labels[i]), find(&mut parent, labels[j]));
            if a != b {
                parent[a.max(b)] = a.min(b);
                added.push((i, j, exact_sq_dist(x.row(i), x.row(j))));
            }
        }
    }
    added.sort_unstable_by_key(|e| (e.0, e.1));
    added
}

/// What to do when the symmetrised K-NN graph is disconnected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disconnected {
    /// Join the components with [`connect_components`] (the default); `Fitted.notes` says so.
    Connect,
    /// Fail with [`MethodError::Disconnected`], reporting the component sizes.
    Error,
}

impl Disconnected {
    /// The spec spellings `"connect"` / `"error"`.
    pub fn parse(s: &str) -> Option<Disconnected> {
        match s {
            "connect" => Some(Disconnected::Connect),
            "error" => Some(Disconnected::Error),
            _ => None,
        }
    }
    /// The spec spelling.
    pub fn as_str(&self) -> &'static str {
        match self {
            Disconnected::Connect => "connect",
            Disconnected::Error => "error",
        }
    }
}

/// The `disconnected` parameter shared by LE and LLE.
pub(crate) fn disconnected_param() -> ParamSchema {
    choice(
        "disconnected",
        &["connect", "error"],
        "connect",
        "if the symmetrised k-NN graph is disconnected: \"connect\" joins the components along a minimum spanning tree of the components, each tree edge being the shortest point pair between two parts (no point is dropped, unlike drtoolbox which embeds only the largest component); \"error\" fails and reports the component sizes",
    )
}

/// A symmetrised K-NN graph made connected according to a [`Disconnected`] policy.
#[derive(Debug, Clone)]
pub struct NeighbourGraph {
    /// The K-NN search result (directed neighbourhoods; LLE reconstructs from these).
    pub knn: Knn,
    /// All undirected edges `(i, j, ||x_i - x_j||^2)`, `i < j`, sorted: the symmetrised K-NN edges
    /// plus `joins`.
    pub edges: Vec<(usize, usize, f64)>,
    /// The edges added by [`connect_components`] (empty if the K-NN graph was connected).
    pub joins: Vec<(usize, usize, f64)>,
    /// Component sizes of the K-NN graph before the repair (one entry when connected).
    pub sizes_before: Vec<usize>,
}

impl NeighbourGraph {
    /// A human-readable note on the repair, if one was needed.
    pub fn note(&self) -> Option<String> {
        (!self.joins.is_empty()).then(|| {
            format!(
                "the {}-NN graph had {} connected components (sizes {:?}); joined them with {} shortest edges (disconnected = \"connect\")",
                self.knn.k(),
                self.sizes_before.len(),
                self.sizes_before,
                self.joins.len()
            )
        })
    }
}

/// K-NN search, symmetrisation, component check and repair in one step (LE and LLE use this).
pub fn neighbourhood_graph(method: &'static str, x: ArrayView2<f64>, k: usize, policy: Disconnected) -> Result<NeighbourGraph> {
    let knn = knn_for(method, x, k)?;
    let mut edges = symmetrised_edges(&knn);
    let n = x.nrows();
    let (labels, count) = connected_components(n, &edges);
    let sizes_before = component_sizes(&labels, count);
    let joins = if count > 1 {
        match policy {
            Disconnected::Error => return Err(MethodError::Disconnected { method, k, components: count, sizes: sizes_before }),
            Disconnected::Connect => connect_components(x, &labels, count),
        }
    } else {
        Vec::new()
    };
    if !joins.is_empty() {
        edges.extend_from_slice(&joins);
        edges.sort_unstable_by_key(|e| (e.0, e.1));
        edges.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    }
    Ok(NeighbourGraph { knn, edges, joins, sizes_before })
}

/// Minimum spanning tree of the complete graph on `n` vertices with edge weights `weight(u, v)`
/// (Prim's algorithm with an array of keys: O(n^2) weight evaluations and time, O(n) memory, no
/// n x n matrix).
///
/// Deterministic tie-breaking: the tree grows from vertex 0; among the vertices outside the tree
/// the one with the smallest key joins next (ties: the lowest index), attached to the tree vertex
/// that first offered that key (a key is replaced only by a strictly smaller weight). Zero-length
/// edges (duplicate points) are ordinary edges and are kept, so the result always has `n - 1`
/// edges and connects every vertex. Returns the edges `(parent, child, weight)` in the order they
/// joined the tree. Weights must not be NaN.
pub fn mst_prim(n: usize, weight: impl Fn(usize, usize) -> f64) -> Vec<(usize, usize, f64)> {
    if n < 2 {
        return Vec::new();
    }
    let mut in_tree = vec![false; n];
    let mut key = vec![f64::INFINITY; n];
    let mut parent = vec![0usize; n];
    in_tree[0] = true;
    for v in 1..n {
        key[v] = weight(0, v);
    }
    let mut edges = Vec::with_capacity(n - 1);
    for _ in 1..n {
        let mut best = usize::MAX;
        let mut best_key = f64::INFINITY;
        for v in 0..n {
            if !in_tree[v] && (best == usize::MAX || key[v] < best_key || (best_key.is_nan() && !key[v].is_nan())) {
                best = v;
                best_key = key[v];
            }
        }
        in_tree[best] = true;
        edges.push((parent[best], best, best_key));
        for u in 0..n {
            if !in_tree[u] {
                let w = weight(best, u);
                if w < key[u] {
                    key[u] = w;
                    parent[u] = best;
                }
            }
        }
    }
    edges
}

/// Minimum spanning tree of the complete graph on the rows of `points` (K x d) with edge weights
/// the squared Euclidean distances `||p_k - p_l||^2` (summed feature by feature, so duplicates are
/// at exactly 0): [`mst_prim`], O(K^2 d) time and O(K) memory. Squared and plain distances give
/// the same tree (the map is monotone); DDRTree's tree step (Wang et al., eq. 28) uses squared ones.
pub fn mst_sq_euclidean(points: ArrayView2<f64>) -> Vec<(usize, usize, f64)> {
    let d = points.ncols();
    let buf = points.as_standard_layout();
    let p = buf.as_slice().expect("standard layout");
    mst_prim(points.nrows(), |u, v| {
        let (a, b) = (&p[u * d..(u + 1) * d], &p[v * d..(v + 1) * d]);
        a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
    })
}


/// Minimum spanning tree of the complete graph with edge costs `sq_dists[[i, j]]` (K x K,
/// symmetric; only the upper triangle `i < j` is read): the tree `T` minimising
/// `sum_{(i,j) in T} sq_dists[[i, j]]` (004 eq. 12 / 20) by [`mst_prim`] (O(K^2), deterministic
/// ties, zero-length edges kept). Returns the K - 1 edges `(i, j, cost)` with `i < j`, sorted.
/// Panics if `sq_dists` is not square.
pub fn minimum_spanning_tree(sq_dists: ArrayView2<f64>) -> Vec<(usize, usize, f64)> {
    let k = sq_dists.nrows();
    assert_eq!(k, sq_dists.ncols(), "minimum_spanning_tree: cost matrix must be square");
    let cost = |i: usize, j: usize| if i < j { sq_dists[[i, j]] } else { sq_dists[[j, i]] };
    let mut edges: Vec<(usize, usize, f64)> = mst_prim(k, cost).into_iter().map(|(p, c, w)| (p.min(c), p.max(c), w)).collect();
    edges.sort_unstable_by_key(|e| (e.0, e.1));
    edges
}

// ---------------------------------------------------------------------------------------------
// Tree-structured solve for A = w L + diag(g)

/// A spanning tree rooted at 0: BFS order and parents.
pub(crate) struct RootedTree {
    order: Vec<usize>,
    parent: Vec<usize>,
    pub(crate) deg: Vec<usize>,
}

impl RootedTree {
    pub(crate) fn new(k: usize, edges: &[(usize, usize, f64)]) -> RootedTree {
        let mut adj = vec![Vec::new(); k];
        let mut deg = vec![0; k];
        for &(u, v, _) in edges {
            adj[u].push(v);
            adj[v].push(u);
            deg[u] += 1;
            deg[v] += 1;
        }
        let mut parent = vec![usize::MAX; k];
        let mut order = Vec::with_capacity(k);
        let mut seen = vec![false; k];
        seen[0] = true;
        order.push(0);
        let mut head = 0;
        while head < order.len() {
            let u = order[head];
            head += 1;
            for &v in &adj[u] {
                if !seen[v] {
                    seen[v] = true;
                    parent[v] = u;
                    order.push(v);
                }
            }
        }
        debug_assert_eq!(order.len(), k, "spanning tree");
        RootedTree { order, parent, deg }
    }

    /// Solves `(w L + diag(g)) X = rhs` by leaf-to-root elimination (Cholesky in a perfect
    /// elimination order: no fill-in), O(K cols). A zero pivot (possible only when `w = 0` and
    /// `g_k = 0`: `c_k` does not enter the objective) leaves that row at `keep`.
    pub(crate) fn solve(&self, w: f64, g: &[f64], mut rhs: Array2<f64>, keep: ArrayView2<f64>) -> Array2<f64> {
        let k = g.len();
        let mut piv: Vec<f64> = (0..k).map(|v| w * self.deg[v] as f64 + g[v]).collect();
        for &v in self.order.iter().skip(1).rev() {
            let p = self.parent[v];
            if piv[v] > 0.0 {
                let f = w / piv[v];
                piv[p] -= w * f;
                let rv = rhs.row(v).to_owned();
                rhs.row_mut(p).scaled_add(f, &rv);
            }
        }
        let mut x = Array2::zeros(rhs.raw_dim());
        for &v in &self.order {
            if piv[v] > 0.0 {
                let mut row = rhs.row(v).to_owned();
                if v != 0 {
                    row.scaled_add(w, &x.row(self.parent[v]));
                }
                x.row_mut(v).assign(&(row / piv[v]));
            } else {
                x.row_mut(v).assign(&keep.row(v));
            }
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn components_are_numbered_by_lowest_vertex() {
        let edges = vec![(3, 4, 1.0), (0, 2, 1.0), (1, 5, 1.0)];
        let (labels, count) = connected_components(6, &edges);
        assert_eq!(count, 3);
        assert_eq!(labels, vec![0, 1, 0, 2, 2, 1]);
        assert_eq!(component_sizes(&labels, count), vec![2, 2, 2]);
    }

    #[test]
    fn connect_joins_along_the_shortest_pairs() {
        // Three clusters on a line: {0,1} near 0, {2,3} near 10, {4,5} near 30.
        let x = array![[0.0], [1.0], [10.0], [11.0], [30.0], [31.0]];
        let labels = vec![0, 0, 1, 1, 2, 2];
        let added = connect_components(x.view(), &labels, 3);
        assert_eq!(added, vec![(1, 2, 81.0), (3, 4, 361.0)]);
    }

    #[test]
    fn symmetrised_edges_are_sorted_and_unique() {
        let x = array![[0.0], [1.0], [3.0], [7.0]];
        let g = knn(x.view(), 1).unwrap();
        assert_eq!(g.indices.column(0).to_vec(), vec![1, 0, 1, 2]);
        assert_eq!(symmetrised_edges(&g), vec![(0, 1, 1.0), (1, 2, 4.0), (2, 3, 16.0)]);
    }

    #[test]
    fn minimum_spanning_tree_matches_brute_force() {
        use rand::{Rng, SeedableRng};
        // Every spanning tree of K = 6 points (C(15, 5) = 3003 edge subsets), several point sets,
        // one with duplicates (zero-length edges) and one with ties (a unit square grid).
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
        let mut sets: Vec<Array2<f64>> = (0..4).map(|_| Array2::from_shape_fn((6, 2), |_| rng.gen::<f64>())).collect();
        let mut dup = sets[0].clone();
        dup.row_mut(3).assign(&sets[0].row(1).to_owned());
        sets.push(dup);
        sets.push(ndarray::array![[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 1.0]]);
        for x in &sets {
            let k = x.nrows();
            let d = Array2::from_shape_fn((k, k), |(i, j)| exact_sq_dist(x.row(i), x.row(j)));
            let t = minimum_spanning_tree(d.view());
            assert_eq!(t.len(), k - 1);
            // spans: union-find over the returned edges gives one component
            let mut parent: Vec<usize> = (0..k).collect();
            for &(i, j, w) in &t {
                assert!(i < j);
                assert_eq!(w, d[[i, j]]);
                let (a, b) = (find(&mut parent, i), find(&mut parent, j));
                assert_ne!(a, b, "cycle");
                parent[a] = b;
            }
            let total: f64 = t.iter().map(|e| e.2).sum();
            let pairs: Vec<(usize, usize)> = (0..k).flat_map(|i| ((i + 1)..k).map(move |j| (i, j))).collect();
            let mut best = f64::INFINITY;
            for mask in 0u32..(1 << pairs.len()) {
                if mask.count_ones() as usize != k - 1 {
                    continue;
                }
                let mut par: Vec<usize> = (0..k).collect();
                let mut ok = true;
                let mut w = 0.0;
                for (b, &(i, j)) in pairs.iter().enumerate() {
                    if mask >> b & 1 == 1 {
                        let (a, c) = (find(&mut par, i), find(&mut par, j));
                        if a == c {
                            ok = false;
                            break;
                        }
                        par[a] = c;
                        w += d[[i, j]];
                    }
                }
                if ok && w < best {
                    best = w;
                }
            }
            assert!((total - best).abs() <= 1e-12 * best.max(1.0), "prim {total} vs brute force {best}");
        }
        // Determinism with ties: the unit grid always gives the same tree.
        let g = &sets[5];
        let d = Array2::from_shape_fn((6, 6), |(i, j)| exact_sq_dist(g.row(i), g.row(j)));
        assert_eq!(minimum_spanning_tree(d.view()), vec![(0, 1, 1.0), (0, 3, 1.0), (1, 2, 1.0), (1, 4, 1.0), (2, 5, 1.0)]);
    }

    #[test]
    fn tree_solve_matches_dense() {
        let k = 7;
        let edges = vec![(0, 1, 0.0), (1, 2, 0.0), (1, 3, 0.0), (0, 4, 0.0), (4, 5, 0.0), (4, 6, 0.0)];
        let g = [0.5, 0.0, 1.5, 2.0, 0.0, 0.3, 1.0];
        let w = 0.7;
        let t = RootedTree::new(k, &edges);
        let rhs = Array2::from_shape_fn((k, 2), |(i, j)| (i as f64 + 1.0) * if j == 0 { 1.0 } else { -0.5 });
        let x = t.solve(w, &g, rhs.clone(), Array2::zeros((k, 2)).view());
        let mut a = Array2::<f64>::zeros((k, k));
        for &(u, v, _) in &edges {
            a[[u, v]] -= w;
            a[[v, u]] -= w;
            a[[u, u]] += w;
            a[[v, v]] += w;
        }
        for i in 0..k {
            a[[i, i]] += g[i];
        }
        let res = a.dot(&x) - rhs;
        assert!(res.iter().all(|v| v.abs() < 1e-12), "{res}");
    }

    /// The dispatched distance (AVX2 where available) equals the portable lane sum bit for bit,
    /// is symmetric, exactly 0 on equal slices, and matches the plain sum to rounding.
    #[test]
    fn sq_dist_slices_is_exact_symmetric_and_dispatch_invariant() {
        for len in [0usize, 1, 7, 8, 9, 31, 188] {
            let a: Vec<f64> = (0..len).map(|i| ((i * 37 % 11) as f64 - 5.0) * 0.37).collect();
            let b: Vec<f64> = (0..len).map(|i| ((i * 53 % 7) as f64 - 3.0) * 1.1).collect();
            let v = sq_dist_slices(&a, &b);
            assert_eq!(v.to_bits(), sq_dist_lanes(&a, &b).to_bits());
            assert_eq!(v.to_bits(), sq_dist_slices(&b, &a).to_bits());
            assert_eq!(sq_dist_slices(&a, &a), 0.0);
            let plain: f64 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum();
            assert!((v - plain).abs() <= 1e-13 * plain.max(1.0));
        }
    }
}
