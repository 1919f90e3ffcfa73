//! Connected components of an undirected graph and their repair along shortest pairs.

use crate::dist::exact_sq_dist;
use crate::neighbours::knn::{block_rows, centred};
use ndarray::{s, ArrayView2};
use rayon::prelude::*;
use structdr_linalg::sq_dists_between;

/// Union-find root with path halving.
pub(crate) fn find(parent: &mut [usize], mut v: usize) -> usize {
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
