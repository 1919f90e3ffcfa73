//! Minimum spanning trees of complete graphs: Prim (O(n^2), any weights, deterministic ties) and,
//! for points in a few dimensions, the Euclidean minimum spanning tree by Borůvka rounds on a
//! k-d tree ([`emst_sq_euclidean`], O(n log^2 n) for well-spread points, no n^2 work).

use super::components::find;
use crate::neighbours::kdtree::{sq_dist_in_order, KdTree};
use ndarray::ArrayView2;
use rayon::prelude::*;

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
    mst_prim(points.nrows(), |u, v| sq_dist_in_order(&p[u * d..(u + 1) * d], &p[v * d..(v + 1) * d]))
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

/// Euclidean minimum spanning tree of the rows of `points` (K x d) with edge weights the squared
/// distances summed in feature order (the weights of [`mst_sq_euclidean`], bit for bit), without
/// the O(K^2 d) scan: Borůvka rounds on a [`KdTree`]. Each round, every point finds its nearest
/// point in another current component (a k-d tree query that skips whole nodes inside its own
/// component), every component keeps its lightest outgoing edge, and all those edges join the
/// forest; at most `ceil(log2 K)` rounds.
///
/// Edges are compared by the strict total order `(weight, min(i, j), max(i, j))`, under which the
/// minimum spanning tree is unique: with distinct weights it is *the* minimum spanning tree, the
/// one [`mst_sq_euclidean`] returns; with ties (duplicate points, lattices) both return a minimum
/// spanning tree (equal total weight) but possibly different edges (Prim breaks ties by growth
/// order). Returns the K - 1 edges `(i, j, weight)` with `i < j`, sorted. Deterministic and
/// independent of the thread count (per-point queries in parallel, reductions in index order).
/// Panics on non-finite coordinates.
pub fn emst_sq_euclidean(points: ArrayView2<f64>) -> Vec<(usize, usize, f64)> {
    let k = points.nrows();
    if k < 2 {
        return Vec::new();
    }
    assert!(points.iter().all(|v| v.is_finite()), "emst_sq_euclidean: non-finite coordinates");
    let tree = KdTree::new(points);
    let buf = points.as_standard_layout();
    let p = buf.as_slice().expect("standard layout");
    let d = points.ncols();
    let mut parent: Vec<usize> = (0..k).collect();
    let key = |w: f64, i: usize, j: usize| (w, i.min(j), i.max(j));
    let less = |a: &(f64, usize, usize), b: &(f64, usize, usize)| a.0.total_cmp(&b.0).then((a.1, a.2).cmp(&(b.1, b.2))).is_lt();
    let mut edges: Vec<(usize, usize, f64)> = Vec::with_capacity(k - 1);
    while edges.len() < k - 1 {
        let comp: Vec<u32> = (0..k).map(|i| find(&mut parent, i) as u32).collect();
        let node_comp = tree.node_labels(&comp);
        // for a fixed i, (w, min(i, j), max(i, j)) orders candidates j as (w, j) does
        let nearest: Vec<Option<(usize, f64)>> = (0..k)
            .into_par_iter()
            .map(|i| {
                let ci = comp[i];
                tree.nearest_where(&p[i * d..(i + 1) * d], |n| node_comp[n] != Some(ci), |j| comp[j] != ci)
            })
            .collect();
        let mut best: Vec<Option<(f64, usize, usize)>> = vec![None; k];
        for (i, nb) in nearest.into_iter().enumerate() {
            let (j, w) = nb.expect("another component exists while the forest is not spanning");
            let cand = key(w, i, j);
            let slot = &mut best[comp[i] as usize];
            if slot.as_ref().is_none_or(|b| less(&cand, b)) {
                *slot = Some(cand);
            }
        }
        let mut round: Vec<(f64, usize, usize)> = best.into_iter().flatten().collect();
        round.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then((a.1, a.2).cmp(&(b.1, b.2))));
        round.dedup_by(|a, b| a.1 == b.1 && a.2 == b.2);
        for (w, i, j) in round {
            let (a, b) = (find(&mut parent, i), find(&mut parent, j));
            // under a strict total order the selected edges form a forest; the check is a guard
            if a != b {
                parent[a.max(b)] = a.min(b);
                debug_assert_eq!(w, sq_dist_in_order(&p[i * d..(i + 1) * d], &p[j * d..(j + 1) * d]));
                edges.push((i, j, w));
            }
        }
    }
    edges.sort_unstable_by_key(|e| (e.0, e.1));
    edges
}
