//! Minimum spanning trees of complete graphs (Prim, O(n^2), deterministic ties).

use ndarray::ArrayView2;

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
