//! Locally linear embedding (Roweis & Saul 2000), the "standard" variant (the computation:
//! [`structdr_numerics::spectral::lle_coordinates`]).
//!
//! 1. Neighbourhoods `N_i`: the k nearest neighbours of `x_i` ([`structdr_numerics::neighbours::knn()`]); when the
//!    symmetrised K-NN graph is disconnected and `disconnected = "connect"`, each joining edge
//!    `(a, b)` adds `b` to `N_a` and `a` to `N_b` (so those samples have k + 1 or more neighbours).
//! 2. Weights: with `Z_i = X[N_i] - 1 x_i^T` (m x D) and the local Gram `G_i = Z_i Z_i^T`,
//!    solve `(G_i + r I) w = 1` by Cholesky with `r = reg * trace(G_i)` (`r = reg` if the trace is
//!    0), then `w <- w / (1^T w)`; `W_{i, N_i} = w`. This is scikit-learn's `barycenter_weights`
//!    convention (regulariser always on, relative to the trace, default `reg = 1e-3`). drtoolbox's
//!    `lle.m` differs: it adds `1e-5 trace(G_i)` only when `k > D` and nothing otherwise.
//! 3. `M = (I - W)^T (I - W)`; the embedding is the eigenvectors 2..d+1 of `M` (ascending, unit
//!    norm, the constant bottom vector dropped), signs canonicalised. scikit-learn
//!    `LocallyLinearEmbedding(method="standard", eigen_solver="dense")` gives the same columns up
//!    to sign. When 0 is not a simple eigenvalue of `M` (duplicates, groups the neighbourhoods do
//!    not couple), "the first eigenvector" is whichever null vector the eigensolver returns, and
//!    scikit-learn keeps that arbitrary choice: here the constant vector is projected out of the
//!    bottom d + 1 eigenspace instead, and the cell is degenerate when the data do not single out
//!    that eigenspace either ([`structdr_numerics::spectral::bottom_without_constant`];
//!    docs/parity/lle.md).
//!
//! Cost: O(N^2 D) for the K-NN search, O(N k^3 + N k^2 D) for the weights, and a dense O(N^3)
//! eigenproblem with N^2 doubles of memory (M has only O(N k^2) non-zeros).

use crate::api::declare::{self, declare_params, Declared};
use crate::api::info::disconnected_param;
use crate::api::info::{dim, float, int, MethodInfo};
use crate::api::OutputKind;
use crate::api::{check_input, numerics, Embedder, FitInput, Fitted, Graph, MethodError, ParamMap, Result};
use structdr_numerics::graphs::Disconnected;
use structdr_numerics::spectral::lle_coordinates;

declare_params! {
    /// Standard LLE to `dim` dimensions with `k` neighbours.
    #[derive(Debug, Clone)]
    pub struct Lle {
        /// Target dimension d (`d + 1 <= N`).
        pub dim: usize = dim(),
        /// Neighbours per sample, `1 <= k < N`.
        pub k: usize = int("k", 2, 12, "neighbours per sample, >= 2 (with one neighbour every weight is 1 and M is the Laplacian of the 1-NN graph, whose null space is one indicator per 1-NN component: no embedding); 12 as in drtoolbox, scikit-learn defaults to 5"),
        /// Regulariser: `reg * trace(G_i)` is added to the diagonal of each local Gram matrix.
        pub reg: f64 = float("reg", 0.0, 1e3, 1e-3, "regulariser: reg * trace(G_i) is added to the diagonal of every local Gram matrix G_i (scikit-learn convention; drtoolbox adds 1e-5 trace only when k > D); with reg = 0 and k > D every G_i is singular and the Cholesky solve fails or is unstable"),
        /// What to do with a disconnected K-NN graph.
        pub disconnected: Disconnected = disconnected_param(),
    }
}

impl Embedder for Lle {
    fn name(&self) -> &'static str {
        "lle"
    }
    fn info(&self) -> MethodInfo {
        info()
    }
    fn params(&self) -> ParamMap {
        self.to_params()
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        let x = input.x;
        check_input("lle", &x, 2)?;
        let n = x.nrows();
        crate::api::check_dense_size("lle", n)?;
        if self.dim + 1 > n {
            return Err(MethodError::Input { method: "lle", reason: format!("dim = {} needs at least dim + 1 = {} samples, got {n}", self.dim, self.dim + 1) });
        }
        let (y, values, g) = lle_coordinates(x, self.k, self.reg, self.dim, self.disconnected).map_err(numerics("lle"))?;
        let mut f = Fitted::closed_form(y);
        if let Some(note) = g.note() {
            f.notes.push(note);
        }
        f.notes.push(format!("eigenvalues of M, lambda_1..lambda_{}: {:?}", values.len(), values));
        f.graph = Some(Graph { n_vertices: n, edges: g.edges.iter().map(|&(i, j, _)| (i, j, 1.0)).collect() });
        Ok(f)
    }
}

pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: "lle",
        summary: "Locally linear embedding: barycentric weights (G_i + reg tr(G_i) I) w = 1 on the k-NN, then eigenvectors 2..d+1 of M = (I - W)^T (I - W).",
        reference: "Roweis & Saul 2000; scikit-learn LocallyLinearEmbedding(method='standard'); drtoolbox lle (k = 12)",
        // 2: the constant vector left out by projection when M's null space is larger, and a
        // degenerate cell when the data do not determine the subspace
        // (numerics::spectral::bottom_without_constant)
        version: 2,
        output: OutputKind::Embedding,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: false,
        params: Lle::schema(()),
        build: |p| declare::build::<Lle>("lle", (), p),
    }
}
