//! The SDP's data and the geometry every part of the solver shares: the constraint kind, the
//! instance ([`DistanceSdp`]), the lift `Y = Q Z`, the edge violations `g_e`, the product `L_w Q`
//! and the projection onto `c`-perp that keeps the kernel centred.

use ndarray::{Array1, Array2, ArrayView2, Axis};

/// How the distances of the edge set constrain the kernel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DistanceConstraint {
    /// `A_e(K) = d_e` (MVU, Weinberger & Saul 2004).
    Equality,
    /// `A_e(K) <= d_e` (MVUineq; landmark MVU).
    Inequality,
    /// No constraint; `nu sum_e (A_e(K) - d_e)^2` is subtracted from the objective (MVU2).
    Penalty(f64),
}

/// One instance of the SDP of the module doc.
#[derive(Debug, Clone)]
pub struct DistanceSdp<'a> {
    /// The samples: `K` is N x N.
    pub n: usize,
    /// The map `Q` (N x m) of landmark MVU; `None` is `Q = I` (plain MVU, m = N).
    pub q: Option<ArrayView2<'a, f64>>,
    /// The undirected edges `(i, j)`, `i != j`, each once.
    pub edges: &'a [(usize, usize)],
    /// Their squared lengths `d_e >= 0`.
    pub d2: &'a [f64],
    /// Equality, inequality or l2 penalty.
    pub constraint: DistanceConstraint,
}

impl<'a> DistanceSdp<'a> {
    /// m: the rows of `Z` (N without landmarks).
    pub(super) fn m(&self) -> usize {
        self.q.map_or(self.n, |q| q.ncols())
    }

    /// `c = Q^T 1`.
    pub(super) fn centring_vector(&self) -> Array1<f64> {
        match self.q {
            Some(q) => q.sum_axis(Axis(0)),
            None => Array1::ones(self.n),
        }
    }

    /// `Y = Q Z`.
    pub(super) fn lift(&self, z: ArrayView2<f64>) -> Array2<f64> {
        match self.q {
            Some(q) => q.dot(&z),
            None => z.to_owned(),
        }
    }

    /// `g_e = ||y_i - y_j||^2 - d_e` for every edge.
    pub fn violations(&self, y: ArrayView2<f64>) -> Vec<f64> {
        self.edges
            .iter()
            .zip(self.d2)
            .map(|(&(i, j), &d)| {
                let (a, b) = (y.row(i), y.row(j));
                a.iter().zip(b.iter()).map(|(u, v)| (u - v) * (u - v)).sum::<f64>() - d
            })
            .collect()
    }

    /// `L_w Q` (N x m) edge by edge, without forming the N x N Laplacian.
    pub(super) fn laplacian_times(&self, w: &[f64], q: ArrayView2<f64>) -> Array2<f64> {
        structdr_linalg::sparse::laplacian_product(self.edges, w, q)
    }
}

/// `z <- z - c (c^T z) / (c^T c)` column by column.
pub(super) fn project_out(z: &mut Array2<f64>, c: &Array1<f64>) {
    project_out_view(z.view_mut(), c);
}

/// [`project_out`] on a view (the packed gradient buffers of the inner solver).
pub(super) fn project_out_view(mut z: ndarray::ArrayViewMut2<f64>, c: &Array1<f64>) {
    let cc = c.dot(c);
    for mut col in z.columns_mut() {
        let s = c.dot(&col) / cc;
        col.scaled_add(-s, c);
    }
}
