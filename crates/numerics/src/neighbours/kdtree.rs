//! A k-d tree over the rows of a small-dimensional point set (K x d, d of a latent space):
//! exact nearest-neighbour and fixed-radius queries in O(log K + output) for well-spread points,
//! and the node-level filters that Borůvka's Euclidean minimum spanning tree needs
//! ([`crate::graphs::emst_sq_euclidean`]).
//!
//! Squared distances are summed **feature by feature in feature order**,
//! `((a_0 - b_0)^2 + (a_1 - b_1)^2) + ...`, the formula of [`crate::graphs::mst_sq_euclidean`]
//! and of DDRTree's soft assignment, so a query returns bit for bit the distances a brute-force
//! scan computes, and the choice between the two never changes a result.
//!
//! Construction: recursive median split along the coordinate of largest extent of the node's
//! bounding box (ties of coordinates broken by the point index, so the tree is a function of the
//! points alone), leaves of at most [`LEAF_SIZE`] points. O(K log K) time, O(K d) memory (the
//! points are copied in tree order for locality). The pruning test is the squared distance from
//! the query to the node's bounding box, a lower bound of every point's distance in the node.

pub use crate::dist::sq_dist_in_order;
use ndarray::ArrayView2;

/// Largest number of points in a leaf.
pub const LEAF_SIZE: usize = 16;

const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Node {
    /// Range of the node's points in tree order.
    start: u32,
    end: u32,
    /// Children (`NONE` for a leaf).
    left: u32,
    right: u32,
}

/// A k-d tree over the rows of a K x d matrix (see the module doc).
#[derive(Debug, Clone)]
pub struct KdTree {
    dim: usize,
    /// The points in tree order, row-major.
    pts: Vec<f64>,
    /// Original row index of every point in tree order.
    ids: Vec<u32>,
    nodes: Vec<Node>,
    /// Per node, its bounding box: `lo` (d values) then `hi` (d values).
    bbox: Vec<f64>,
}

impl KdTree {
    /// Builds the tree over the rows of `points` (K x d, K < 2^32 - 1, finite entries).
    pub fn new(points: ArrayView2<f64>) -> KdTree {
        let (k, dim) = points.dim();
        assert!(k < NONE as usize, "KdTree: too many points");
        let buf = points.as_standard_layout();
        let src = buf.as_slice().expect("standard layout");
        let mut ids: Vec<u32> = (0..k as u32).collect();
        let mut tree = KdTree { dim, pts: Vec::new(), ids: Vec::new(), nodes: Vec::with_capacity(2 * k / LEAF_SIZE + 1), bbox: Vec::new() };
        if k > 0 {
            tree.build(src, &mut ids, 0, k);
        }
        let mut pts = Vec::with_capacity(k * dim);
        for &i in &ids {
            pts.extend_from_slice(&src[i as usize * dim..(i as usize + 1) * dim]);
        }
        tree.pts = pts;
        tree.ids = ids;
        tree
    }

    fn build(&mut self, src: &[f64], ids: &mut [u32], start: usize, end: usize) -> u32 {
        let dim = self.dim;
        let me = self.nodes.len() as u32;
        self.nodes.push(Node { start: start as u32, end: end as u32, left: NONE, right: NONE });
        let mut lo = vec![f64::INFINITY; dim];
        let mut hi = vec![f64::NEG_INFINITY; dim];
        for &i in &ids[start..end] {
            let p = &src[i as usize * dim..(i as usize + 1) * dim];
            for f in 0..dim {
                lo[f] = lo[f].min(p[f]);
                hi[f] = hi[f].max(p[f]);
            }
        }
        let split = (0..dim).max_by(|&a, &b| (hi[a] - lo[a]).total_cmp(&(hi[b] - lo[b])).then(b.cmp(&a)));
        self.bbox.extend_from_slice(&lo);
        self.bbox.extend_from_slice(&hi);
        let Some(f) = split else { return me };
        if end - start <= LEAF_SIZE || hi[f] <= lo[f] {
            // small, or every point equal (zero extent in every coordinate)
            return me;
        }
        let mid = (start + end) / 2;
        let coord = |i: u32| src[i as usize * dim + f];
        ids[start..end].select_nth_unstable_by(mid - start, |&a, &b| coord(a).total_cmp(&coord(b)).then(a.cmp(&b)));
        let left = self.build(src, ids, start, mid);
        let right = self.build(src, ids, mid, end);
        self.nodes[me as usize].left = left;
        self.nodes[me as usize].right = right;
        me
    }

    /// Number of points K.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the tree holds no point.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Number of nodes (for node-level labels such as [`KdTree::node_labels`]).
    pub fn n_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Squared distance from `q` to node `n`'s bounding box (0 inside).
    #[inline]
    fn box_dist(&self, n: usize, q: &[f64]) -> f64 {
        let d = self.dim;
        let lo = &self.bbox[2 * d * n..2 * d * n + d];
        let hi = &self.bbox[2 * d * n + d..2 * d * (n + 1)];
        let mut s = 0.0;
        for f in 0..d {
            let t = if q[f] < lo[f] {
                lo[f] - q[f]
            } else if q[f] > hi[f] {
                q[f] - hi[f]
            } else {
                0.0
            };
            s += t * t;
        }
        s
    }

    #[inline]
    fn point(&self, t: usize) -> &[f64] {
        &self.pts[t * self.dim..(t + 1) * self.dim]
    }

    /// The nearest point to `q`: `(row index, squared distance)`, ties to the lowest index.
    /// `None` when the tree is empty.
    pub fn nearest(&self, q: &[f64]) -> Option<(usize, f64)> {
        self.nearest_where(q, |_| true, |_| true)
    }

    /// The nearest point to `q` among those `keep_point(row index)` accepts, skipping whole
    /// nodes `keep_node(node)` rejects: `(row index, squared distance)`, ties to the lowest
    /// index. `keep_node` must reject only nodes none of whose points is kept.
    pub fn nearest_where(&self, q: &[f64], keep_node: impl Fn(usize) -> bool, keep_point: impl Fn(usize) -> bool) -> Option<(usize, f64)> {
        assert_eq!(q.len(), self.dim, "KdTree: query dimension");
        let mut best = (f64::INFINITY, NONE);
        if !self.nodes.is_empty() {
            self.nearest_rec(0, q, &keep_node, &keep_point, &mut best);
        }
        (best.1 != NONE).then_some((best.1 as usize, best.0))
    }

    fn nearest_rec(&self, n: usize, q: &[f64], keep_node: &impl Fn(usize) -> bool, keep_point: &impl Fn(usize) -> bool, best: &mut (f64, u32)) {
        if !keep_node(n) {
            return;
        }
        let node = self.nodes[n];
        if node.left == NONE {
            for t in node.start as usize..node.end as usize {
                let id = self.ids[t];
                if !keep_point(id as usize) {
                    continue;
                }
                let d = sq_dist_in_order(q, self.point(t));
                if d < best.0 || (d == best.0 && id < best.1) {
                    *best = (d, id);
                }
            }
            return;
        }
        let (l, r) = (node.left as usize, node.right as usize);
        let (dl, dr) = (self.box_dist(l, q), self.box_dist(r, q));
        // `<=`: an equally distant point with a lower index may lie in a box at the bound
        let (first, df, second, ds) = if dl <= dr { (l, dl, r, dr) } else { (r, dr, l, dl) };
        if df <= best.0 {
            self.nearest_rec(first, q, keep_node, keep_point, best);
        }
        if ds <= best.0 {
            self.nearest_rec(second, q, keep_node, keep_point, best);
        }
    }

    /// Appends to `out` the row index of every point with `||q - p||^2 <= r2` (in tree order;
    /// sort if an order matters).
    pub fn within(&self, q: &[f64], r2: f64, out: &mut Vec<u32>) {
        assert_eq!(q.len(), self.dim, "KdTree: query dimension");
        if self.nodes.is_empty() {
            return;
        }
        let mut stack = vec![0usize];
        while let Some(n) = stack.pop() {
            if self.box_dist(n, q) > r2 {
                continue;
            }
            let node = self.nodes[n];
            if node.left == NONE {
                for t in node.start as usize..node.end as usize {
                    if sq_dist_in_order(q, self.point(t)) <= r2 {
                        out.push(self.ids[t]);
                    }
                }
            } else {
                stack.push(node.right as usize);
                stack.push(node.left as usize);
            }
        }
    }

    /// Per node, the common label of its points when they all share one, else `None`
    /// (`label[row index]`; the pruning filter of Borůvka's nearest-other-component query).
    pub fn node_labels(&self, label: &[u32]) -> Vec<Option<u32>> {
        let mut out = vec![None; self.nodes.len()];
        // children have larger indices than their parent (preorder construction)
        for n in (0..self.nodes.len()).rev() {
            let node = self.nodes[n];
            out[n] = if node.left == NONE {
                let first = label[self.ids[node.start as usize] as usize];
                self.ids[node.start as usize..node.end as usize].iter().all(|&i| label[i as usize] == first).then_some(first)
            } else {
                match (out[node.left as usize], out[node.right as usize]) {
                    (Some(a), Some(b)) if a == b => Some(a),
                    _ => None,
                }
            };
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn cloud(n: usize, d: usize, seed: u64, grid: bool) -> Array2<f64> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        // `grid`: coordinates on a coarse lattice, so distances tie and points repeat
        Array2::from_shape_fn((n, d), |_| if grid { rng.gen_range(0..6) as f64 } else { rng.gen_range(-1.0..1.0) })
    }

    fn brute_nearest(p: &Array2<f64>, q: &[f64]) -> (usize, f64) {
        let mut best = (usize::MAX, f64::INFINITY);
        for (i, row) in p.rows().into_iter().enumerate() {
            let d = sq_dist_in_order(q, row.as_slice().unwrap());
            if d < best.1 {
                best = (i, d);
            }
        }
        best
    }

    #[test]
    fn nearest_and_within_equal_brute_force() {
        for (n, d, grid) in [(1, 2, false), (17, 1, false), (500, 2, false), (700, 3, true), (300, 5, false), (64, 2, true)] {
            let p = cloud(n, d, n as u64, grid);
            let tree = KdTree::new(p.view());
            let queries = cloud(50, d, 99, grid);
            for q in queries.rows() {
                let q = q.as_slice().unwrap();
                let (i, dist) = tree.nearest(q).unwrap();
                assert_eq!((i, dist), brute_nearest(&p, q), "n = {n}, d = {d}");
                for r2 in [0.0, dist, 0.05, 0.3, 2.0] {
                    let mut got = Vec::new();
                    tree.within(q, r2, &mut got);
                    got.sort_unstable();
                    let want: Vec<u32> = (0..n).filter(|&j| sq_dist_in_order(q, p.row(j).as_slice().unwrap()) <= r2).map(|j| j as u32).collect();
                    assert_eq!(got, want, "n = {n}, d = {d}, r2 = {r2}");
                }
            }
            // a filtered query: the nearest point with an even index
            for q in queries.rows().into_iter().take(10) {
                let q = q.as_slice().unwrap();
                let got = tree.nearest_where(q, |_| true, |i| i % 2 == 0);
                let want =
                    (0..n).step_by(2).map(|j| (j, sq_dist_in_order(q, p.row(j).as_slice().unwrap()))).min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
                assert_eq!(got, want);
            }
        }
    }

    #[test]
    fn node_labels_mark_pure_nodes() {
        let p = cloud(200, 2, 5, false);
        let tree = KdTree::new(p.view());
        let label: Vec<u32> = (0..200).map(|i| u32::from(p[[i, 0]] > 0.0)).collect();
        let nl = tree.node_labels(&label);
        for (n, l) in nl.iter().enumerate() {
            let node = tree.nodes[n];
            let labels: Vec<u32> = tree.ids[node.start as usize..node.end as usize].iter().map(|&i| label[i as usize]).collect();
            let pure = labels.iter().all(|&x| x == labels[0]);
            assert_eq!(l.is_some(), pure);
            if let Some(v) = l {
                assert_eq!(*v, labels[0]);
            }
        }
    }

    #[test]
    fn empty_tree_answers_nothing() {
        let p = Array2::<f64>::zeros((0, 2));
        let tree = KdTree::new(p.view());
        assert!(tree.nearest(&[0.0, 0.0]).is_none());
        let mut out = Vec::new();
        tree.within(&[0.0, 0.0], 1.0, &mut out);
        assert!(out.is_empty());
    }
}
