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
