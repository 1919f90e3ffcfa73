//! Tree-structured solve for `A = w L_T + diag(g)` with `T` a spanning tree: leaf-to-root
//! elimination, O(K cols) (DDRTree's and RPG's centre updates).

use ndarray::{Array2, ArrayView2};

/// A spanning tree rooted at 0: BFS order and parents.
pub struct RootedTree {
    order: Vec<usize>,
    parent: Vec<usize>,
    /// Degree of every vertex in the tree.
    pub deg: Vec<usize>,
}

impl RootedTree {
    /// Roots the spanning tree with `edges` on `k` vertices at vertex 0 (BFS order).
    pub fn new(k: usize, edges: &[(usize, usize, f64)]) -> RootedTree {
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

    /// The vertices in depth-first preorder from the root (children in increasing index): a
    /// vertex comes right after its parent or a sibling's subtree, so consecutive vertices are
    /// mostly tree neighbours (a locality order for spatial trees such as minimum spanning trees).
    pub fn preorder(&self) -> Vec<usize> {
        let k = self.parent.len();
        // children of every vertex, by counting (in increasing index)
        let mut start = vec![0usize; k + 1];
        for &p in self.parent.iter().filter(|&&p| p != usize::MAX) {
            start[p + 1] += 1;
        }
        for v in 0..k {
            start[v + 1] += start[v];
        }
        let mut fill = start[..k].to_vec();
        let mut children = vec![0usize; start[k]];
        for (v, &p) in self.parent.iter().enumerate() {
            if p != usize::MAX {
                children[fill[p]] = v;
                fill[p] += 1;
            }
        }
        let mut order = Vec::with_capacity(k);
        let mut stack = if k > 0 { vec![0] } else { Vec::new() };
        while let Some(v) = stack.pop() {
            order.push(v);
            // reversed, so that the smallest child is visited first
            stack.extend(children[start[v]..start[v + 1]].iter().rev());
        }
        order
    }

    /// Solves `(w L + diag(g)) X = rhs` by leaf-to-root elimination (Cholesky in a perfect
    /// elimination order: no fill-in), O(K cols). A zero pivot (possible only when `w = 0` and
    /// `g_k = 0`: `c_k` does not enter the objective) leaves that row at `keep`.
    pub fn solve(&self, w: f64, g: &[f64], mut rhs: Array2<f64>, keep: ArrayView2<f64>) -> Array2<f64> {
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
