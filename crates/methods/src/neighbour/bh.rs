//! Barnes-Hut t-SNE in two dimensions (van der Maaten 2014): a sparse P on the k = 3u nearest
//! neighbours, and the repulsive forces summed over a quadtree.
//!
//! With `w_ij = (1 + ||y_i - y_j||^2)^-1` and `Z = sum_{k != l} w_kl`, the gradient splits into
//!
//! `dC/dy_i = 4 [ alpha sum_j p_ij w_ij (y_i - y_j)  -  (1/Z) sum_j w_ij^2 (y_i - y_j) ]`:
//!
//! the attractive sum runs over the non-zeros of the sparse P; the repulsive sum and `Z` over the
//! tree. A cell of side `s` whose centre of mass lies at distance `r` from `y_i` is taken as one
//! point of its mass when `s / r < theta`; `theta = 0` opens every cell and reproduces the exact
//! sums. Cost `O(N log N)` per iteration for the tree and `O(N k)` for the attraction.
//!
//! Deterministic: points are inserted in index order, each point's traversal is sequential, and
//! `Z` and the cost are summed over points in order.

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

/// A symmetric sparse P in compressed rows: `p_ij = (p_{j|i} + p_{i|j}) / 2N` over the union of
/// both neighbour lists.
#[derive(Debug, Clone)]
pub struct SparseP {
    /// Row `i` spans `offsets[i]..offsets[i + 1]` of `cols` and `vals`.
    pub offsets: Vec<usize>,
    /// Column indices, ascending within a row.
    pub cols: Vec<usize>,
    /// Values.
    pub vals: Vec<f64>,
}

impl SparseP {
    /// Symmetrises conditional affinities over neighbour lists (`indices[[i, r]]`, `cond[[i, r]]`).
    pub fn symmetric(indices: &ndarray::Array2<usize>, cond: &Array2<f64>) -> SparseP {
        let (n, k) = indices.dim();
        let mut rows: Vec<Vec<(usize, f64)>> = vec![Vec::with_capacity(2 * k); n];
        for i in 0..n {
            for r in 0..k {
                let (j, c) = (indices[[i, r]], cond[[i, r]]);
                rows[i].push((j, c));
                rows[j].push((i, c));
            }
        }
        let scale = 1.0 / (2.0 * n as f64);
        let mut out = SparseP { offsets: vec![0], cols: Vec::new(), vals: Vec::new() };
        for mut row in rows {
            row.sort_by_key(|e| e.0);
            let mut r = 0;
            while r < row.len() {
                let j = row[r].0;
                let mut v = 0.0;
                while r < row.len() && row[r].0 == j {
                    v += row[r].1;
                    r += 1;
                }
                out.cols.push(j);
                out.vals.push(v * scale);
            }
            out.offsets.push(out.cols.len());
        }
        out
    }

    /// The dense N x N matrix (tests, and the exact gradient on the same P).
    pub fn to_dense(&self) -> Array2<f64> {
        let n = self.offsets.len() - 1;
        let mut p = Array2::zeros((n, n));
        for i in 0..n {
            for e in self.offsets[i]..self.offsets[i + 1] {
                p[[i, self.cols[e]]] = self.vals[e];
            }
        }
        p
    }
}

/// A quadtree node: a square cell, its mass and centre of mass; children are four consecutive
/// nodes from `first_child` (0: a leaf).
#[derive(Debug, Clone, Copy)]
struct Node {
    cx: f64,
    cy: f64,
    half: f64,
    mass: f64,
    sx: f64,
    sy: f64,
    first_child: u32,
    /// The point a leaf holds (`u32::MAX`: none); further points at the same position add mass.
    point: u32,
}
// (`sx`, `sy`: the sums of the positions of the points in the cell.)

/// Nesting limit: points closer than `side / 2^MAX_DEPTH` share a leaf (their mass adds).
const MAX_DEPTH: usize = 48;

/// A quadtree over the rows of `y` (N x 2), as a traversal reads it: per node
/// `[centre of mass x, y, mass, side^2]` and the index of its first child (0: a leaf).
pub struct QuadTree {
    packed: Vec<[f64; 4]>,
    first_child: Vec<u32>,
}

/// The tree while points are inserted (cell centres and sizes, position sums, leaf points).
struct Builder {
    nodes: Vec<Node>,
}

impl QuadTree {
    /// Inserts the points in index order into a square around their bounding box.
    pub fn build(y: ArrayView2<f64>) -> QuadTree {
        let n = y.nrows();
        let (mut x0, mut x1, mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY);
        for i in 0..n {
            x0 = x0.min(y[[i, 0]]);
            x1 = x1.max(y[[i, 0]]);
            y0 = y0.min(y[[i, 1]]);
            y1 = y1.max(y[[i, 1]]);
        }
        let half = 0.5 * (x1 - x0).max(y1 - y0).max(f64::MIN_POSITIVE) * (1.0 + 1e-9);
        let root = Node { cx: 0.5 * (x0 + x1), cy: 0.5 * (y0 + y1), half, mass: 0.0, sx: 0.0, sy: 0.0, first_child: 0, point: u32::MAX };
        let mut b = Builder { nodes: Vec::with_capacity(2 * n + 1) };
        b.nodes.push(root);
        for i in 0..n {
            b.insert(i, y[[i, 0]], y[[i, 1]], y);
        }
        // sums -> centres of mass, once, rather than a division at every visit
        let com = |nd: &Node| if nd.mass > 0.0 { (nd.sx / nd.mass, nd.sy / nd.mass) } else { (nd.sx, nd.sy) };
        QuadTree {
            packed: b.nodes.iter().map(|nd| [com(nd).0, com(nd).1, nd.mass, 4.0 * nd.half * nd.half]).collect(),
            first_child: b.nodes.iter().map(|nd| nd.first_child).collect(),
        }
    }

    /// `(sum_j w_ij, sum_j w_ij^2 (y_i - y_j))` over `j != i` for the point at `(px, py)`, with
    /// cells of side/distance below `theta` taken whole.
    fn repulsion(&self, px: f64, py: f64, theta2: f64, stack: &mut Vec<usize>) -> (f64, f64, f64) {
        let (mut z, mut fx, mut fy) = (0.0, 0.0, 0.0);
        stack.clear();
        stack.push(0);
        while let Some(k) = stack.pop() {
            let [mx, my, mass, side2] = self.packed[k];
            let (dx, dy) = (px - mx, py - my);
            let d2 = dx * dx + dy * dy;
            let first = self.first_child[k] as usize;
            if first == 0 || side2 < theta2 * d2 {
                // a leaf at distance 0 holds the point itself (and any duplicates of it)
                let mass = if first == 0 && d2 == 0.0 { mass - 1.0 } else { mass };
                let w = 1.0 / (1.0 + d2);
                let mw = mass * w;
                z += mw;
                fx += mw * w * dx;
                fy += mw * w * dy;
            } else {
                // children in reverse, so they are visited in quadrant order; empty ones skipped
                for c in (first..first + 4).rev() {
                    if self.packed[c][2] > 0.0 {
                        stack.push(c);
                    }
                }
            }
        }
        (z, fx, fy)
    }
}

impl Builder {
    fn child_of(&self, node: usize, px: f64, py: f64) -> usize {
        let nd = &self.nodes[node];
        nd.first_child as usize + usize::from(px >= nd.cx) + 2 * usize::from(py >= nd.cy)
    }

    fn subdivide(&mut self, node: usize) {
        let nd = self.nodes[node];
        let h = 0.5 * nd.half;
        let first = self.nodes.len() as u32;
        for q in 0..4 {
            let cx = nd.cx + if q & 1 == 1 { h } else { -h };
            let cy = nd.cy + if q & 2 == 2 { h } else { -h };
            self.nodes.push(Node { cx, cy, half: h, mass: 0.0, sx: 0.0, sy: 0.0, first_child: 0, point: u32::MAX });
        }
        self.nodes[node].first_child = first;
    }

    fn insert(&mut self, i: usize, px: f64, py: f64, y: ArrayView2<f64>) {
        let mut node = 0;
        for depth in 0.. {
            let nd = self.nodes[node];
            if nd.first_child == 0 {
                if nd.point == u32::MAX && nd.mass == 0.0 {
                    let m = &mut self.nodes[node];
                    (m.point, m.mass, m.sx, m.sy) = (i as u32, 1.0, px, py);
                    return;
                }
                let p = nd.point as usize;
                if (y[[p, 0]] == px && y[[p, 1]] == py) || depth >= MAX_DEPTH {
                    let m = &mut self.nodes[node];
                    m.mass += 1.0;
                    m.sx += px;
                    m.sy += py;
                    return;
                }
                // move the leaf's points (one position, mass m) down into a child
                self.subdivide(node);
                let c = self.child_of(node, y[[p, 0]], y[[p, 1]]);
                let (mass, sx, sy) = (nd.mass, nd.sx, nd.sy);
                let m = &mut self.nodes[c];
                (m.point, m.mass, m.sx, m.sy) = (p as u32, mass, sx, sy);
                self.nodes[node].point = u32::MAX;
            }
            let m = &mut self.nodes[node];
            m.mass += 1.0;
            m.sx += px;
            m.sy += py;
            node = self.child_of(node, px, py);
        }
    }
}

/// The Barnes-Hut gradient (into `grad`, N x 2) with exaggeration `alpha` on P, and with `with_kl`
/// the KL(P || Q) of the unexaggerated P with the tree's `Z` (NaN without).
pub fn kl_and_gradient_bh(p: &SparseP, y: ArrayView2<f64>, alpha: f64, theta: f64, grad: &mut Array2<f64>, with_kl: bool) -> f64 {
    let n = y.nrows();
    let tree = QuadTree::build(y);
    let theta2 = theta * theta;
    let rep: Vec<(f64, f64, f64)> = (0..n).into_par_iter().map_init(Vec::new, |stack, i| tree.repulsion(y[[i, 0]], y[[i, 1]], theta2, stack)).collect();
    let z: f64 = rep.iter().map(|r| r.0).sum();
    let yc = y.as_standard_layout();
    let ys = yc.as_slice().expect("standard layout");
    combine_with_attraction(p, ys, z, alpha, grad, with_kl, |i| (rep[i].1, rep[i].2))
}

/// The 2-D gradient from a repulsion: `dC/dy_i = 4 [ alpha sum_j p_ij w_ij (y_i - y_j) - r_i / Z ]`
/// into `grad`, where `r_i = sum_j w_ij^2 (y_i - y_j)` comes from `repulsion(i)` (Barnes-Hut or
/// FFT) and the attraction runs over the non-zeros of the sparse P; with `with_kl` the
/// KL(P || Q) = `sum_ij p_ij ln(p_ij Z / w_ij)` of the unexaggerated P (NaN without). `ys` holds
/// the embedding row by row (N x 2).
pub(crate) fn combine_with_attraction(
    p: &SparseP,
    ys: &[f64],
    z: f64,
    alpha: f64,
    grad: &mut Array2<f64>,
    with_kl: bool,
    repulsion: impl Fn(usize) -> (f64, f64),
) -> f64 {
    let n = ys.len() / 2;
    let rows: Vec<(f64, f64, f64)> = (0..n)
        .into_par_iter()
        .map(|i| {
            let (yi0, yi1) = (ys[2 * i], ys[2 * i + 1]);
            let (mut ax, mut ay, mut kl) = (0.0, 0.0, 0.0);
            for e in p.offsets[i]..p.offsets[i + 1] {
                let j = p.cols[e];
                let (dx, dy) = (yi0 - ys[2 * j], yi1 - ys[2 * j + 1]);
                let w = 1.0 / (1.0 + dx * dx + dy * dy);
                let pij = p.vals[e];
                ax += pij * w * dx;
                ay += pij * w * dy;
                if with_kl && pij > 0.0 {
                    kl += pij * (pij * z / w).ln();
                }
            }
            (ax, ay, kl)
        })
        .collect();
    let mut kl = 0.0;
    for i in 0..n {
        let (ax, ay, k) = rows[i];
        kl += k;
        let (rx, ry) = repulsion(i);
        grad[[i, 0]] = 4.0 * (alpha * ax - rx / z);
        grad[[i, 1]] = 4.0 * (alpha * ay - ry / z);
    }
    if with_kl {
        kl
    } else {
        f64::NAN
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::neighbour::tsne::kl_and_gradient;
    use rand::{Rng, SeedableRng};

    fn sparse_p(n: usize, seed: u64) -> (SparseP, Array2<f64>) {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        let x = Array2::from_shape_fn((n, 4), |(i, _)| (i % 4) as f64 * 2.0 + rng.gen::<f64>());
        let knn = structdr_numerics::neighbours::knn(x.view(), 15).unwrap();
        let (cond, _, _) = structdr_numerics::affinities::perplexity_affinities_knn(&knn, 5.0);
        let y = Array2::from_shape_fn((n, 2), |_| rng.gen::<f64>() * 4.0 - 2.0);
        (SparseP::symmetric(&knn.indices, &cond), y)
    }

    /// theta = 0 opens every cell: the Barnes-Hut gradient and KL equal the exact ones on the
    /// same P to rounding; theta = 0.5 stays within a few percent of the exact gradient's norm.
    #[test]
    fn barnes_hut_matches_the_exact_gradient() {
        let n = 300;
        let (p, y) = sparse_p(n, 1);
        let dense = p.to_dense();
        assert!((dense.sum() - 1.0).abs() < 1e-12);
        assert!((0..n).all(|i| (0..n).all(|j| dense[[i, j]] == dense[[j, i]])));
        let mut g_exact = Array2::zeros((n, 2));
        let kl_exact = kl_and_gradient(dense.view(), y.view(), 12.0, &mut g_exact, true);
        let norm = g_exact.mapv(|v| v * v).sum().sqrt();
        for (theta, tol) in [(0.0, 1e-10), (0.5, 5e-2)] {
            let mut g = Array2::zeros((n, 2));
            let kl = kl_and_gradient_bh(&p, y.view(), 12.0, theta, &mut g, true);
            let err = (&g - &g_exact).mapv(|v| v * v).sum().sqrt() / norm;
            eprintln!("theta {theta}: relative gradient error {err:.3e}, KL {kl:.12} vs exact {kl_exact:.12}");
            assert!(err < tol, "theta {theta}: relative error {err:e}");
            if theta == 0.0 {
                assert!((kl - kl_exact).abs() < 1e-10 * kl_exact.abs().max(1.0));
            }
        }
    }

    /// Duplicate points share a leaf; each excludes only itself.
    #[test]
    fn duplicates_are_counted_once_each() {
        let y = ndarray::array![[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 0.0]];
        let t = QuadTree::build(y.view());
        let (z, fx, _) = t.repulsion(0.0, 0.0, 0.0, &mut Vec::new());
        // two other points at distance 0 (w = 1) and one at distance 1 (w = 1/2)
        assert!((z - 2.5).abs() < 1e-15, "{z}");
        assert!((fx - (-0.25)).abs() < 1e-15, "{fx}");
    }
}
