//! Laplacian eigenmaps (Belkin & Niyogi 2003).
//!
//! 1. Graph: the symmetrised K-NN graph (`i ~ j` iff `j in kNN(i)` or `i in kNN(j)`), made
//!    connected according to `disconnected` ([`structdr_numerics::graphs::neighbourhood_graph`]).
//! 2. Weights: `w_ij = exp(-||x_i - x_j||^2 / t)` ("heat") or `w_ij = 1` ("binary") on the edges.
//!    With `t = 0` (the default) `t = 2 max_{(i,j) in E} ||x_i - x_j||^2`, which is exactly
//!    drtoolbox's `laplacian_eigen` with `sigma = 1` (it divides the squared graph distances by their
//!    maximum and applies `exp(-d^2 / (2 sigma^2))`); the maximum runs over the edges actually used,
//!    joining edges included. `t = inf` gives binary weights.
//! 3. `D = diag(W 1)`, `L = D - W`; solve `L v = lambda D v` through the symmetric normalised form
//!    `D^{-1/2} L D^{-1/2} u = lambda u` (`eigh_bottom`, d + 1 pairs), `v = D^{-1/2} u`
//!    (so `v^T D v = 1`), drop the trivial `v_1 ∝ 1` and return `Y = [v_2, ..., v_{d+1}]`, column
//!    signs canonicalised (largest |entry| positive).
//!
//! This equals scikit-learn's `spectral_embedding(W, norm_laplacian=True, drop_first=True)` (which
//! also returns `D^{-1/2} u`) up to column signs; drtoolbox's `eigs(L, D)` returns the same vectors
//! up to sign and scale (and only for the largest connected component).
//!
//! Cost: the eigenproblem is solved densely, O(N^3) time (tridiagonalisation) and N^2 doubles of
//! memory (200 MB at N = 5000), although `W` has only O(N k) non-zeros; fine up to N of a few
//! thousand. A sparse shift-invert Lanczos would be O(N k) per iteration (not implemented).

use crate::api::declare::{self, declare_params, param_choice, Declared};
use crate::api::info::disconnected_param;
use crate::api::info::{choice, dim, float, int, MethodInfo};
use crate::api::OutputKind;
use crate::api::{check_input, numerics, Embedder, FitInput, Fitted, Graph, MethodError, ParamMap, Result};
use ndarray::Array2;
use structdr_numerics::graphs::{neighbourhood_graph, Disconnected};
use structdr_numerics::spectral::bottom_nontrivial;

param_choice! {
    /// Edge weights of the Laplacian eigenmap graph.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Weights {
        /// `w_ij = exp(-||x_i - x_j||^2 / t)`.
        Heat = "heat",
        /// `w_ij = 1`.
        Binary = "binary",
    }
}

declare_params! {
    /// Laplacian eigenmaps to `dim` dimensions on the `k`-NN graph.
    #[derive(Debug, Clone)]
    pub struct LaplacianEigenmaps {
        /// Target dimension d (`d + 1 <= N`).
        pub dim: usize = dim(),
        /// Neighbours per sample (before symmetrisation), `1 <= k < N`.
        pub k: usize = int("k", 1, 12, "neighbours per sample before symmetrisation (i ~ j if j in kNN(i) or i in kNN(j)); 12 as in drtoolbox"),
        /// Heat-kernel or binary weights.
        pub weights: Weights = choice("weights", Weights::NAMES, "heat", "edge weights: heat w_ij = exp(-||x_i - x_j||^2 / t), or binary w_ij = 1"),
        /// Heat-kernel width `t` in `exp(-||x_i - x_j||^2 / t)`; `0` = automatic (see the module doc).
        pub t: f64 = float("t", 0.0, f64::INFINITY, 0.0, "heat-kernel width t in w_ij = exp(-||x_i - x_j||^2 / t); 0 = automatic t = 2 max over graph edges of ||x_i - x_j||^2 (drtoolbox's sigma = 1 on max-normalised squared distances); inf = binary"),
        /// What to do with a disconnected K-NN graph.
        pub disconnected: Disconnected = disconnected_param(),
    }
}

/// The automatic heat width: `t = 2 max_{(i,j) in E} ||x_i - x_j||^2` (drtoolbox, sigma = 1); 1 if
/// every edge has length 0.
pub fn auto_t(edges: &[(usize, usize, f64)]) -> f64 {
    let m = edges.iter().map(|e| e.2).fold(0.0f64, f64::max);
    if m > 0.0 {
        2.0 * m
    } else {
        1.0
    }
}

/// Laplacian eigenmap of a weighted graph given as edges `(i, j, w_ij)` (`i != j`, each pair once,
/// `w_ij > 0`): the generalised eigenvectors 2..d+1 of `L v = lambda D v`, `v^T D v = 1`, signs
/// canonicalised. Returns `(Y, lambda_2..lambda_{d+1})`.
///
/// Errors: a vertex of zero degree (e.g. heat weights that underflow when `t` is tiny).
pub fn graph_eigenmap(n: usize, edges: &[(usize, usize, f64)], dim: usize) -> Result<(Array2<f64>, Vec<f64>)> {
    if dim + 1 > n {
        return Err(MethodError::Input { method: "le", reason: format!("dim = {dim} needs at least dim + 1 = {} samples, got {n}", dim + 1) });
    }
    let (a, s) = structdr_numerics::graphs::laplacian::normalized_from_edges(n, edges).map_err(|i| MethodError::Input {
        method: "le",
        reason: format!(
            "sample {i} has degree {} in the weighted graph (heat weights underflow: raise t, or use t = 0 for the automatic width)",
            structdr_numerics::graphs::laplacian::degrees(n, edges)[i]
        ),
    })?;
    let (y, values) = bottom_nontrivial(a.view(), dim, Some(&s)).map_err(numerics("le"))?;
    Ok((y, values.into_iter().skip(1).collect()))
}

impl Embedder for LaplacianEigenmaps {
    fn name(&self) -> &'static str {
        "le"
    }
    fn info(&self) -> MethodInfo {
        info()
    }
    fn params(&self) -> ParamMap {
        self.to_params()
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        let x = input.x;
        check_input("le", &x, 2)?;
        let n = x.nrows();
        crate::api::check_dense_size("le", n)?;
        if self.dim + 1 > n {
            return Err(MethodError::Input { method: "le", reason: format!("dim = {} needs at least dim + 1 = {} samples, got {n}", self.dim, self.dim + 1) });
        }
        let g = neighbourhood_graph(x, self.k, self.disconnected).map_err(numerics("le"))?;
        let t = if self.t == 0.0 { auto_t(&g.edges) } else { self.t };
        let weighted: Vec<(usize, usize, f64)> = g
            .edges
            .iter()
            .map(|&(i, j, d2)| {
                let w = match self.weights {
                    Weights::Heat => (-d2 / t).exp(),
                    Weights::Binary => 1.0,
                };
                (i, j, w)
            })
            .collect();
        let (y, values) = graph_eigenmap(n, &weighted, self.dim)?;
        let mut f = Fitted::closed_form(y);
        if let Some(note) = g.note() {
            f.notes.push(note);
        }
        if self.weights == Weights::Heat {
            f.notes.push(format!("heat kernel width t = {t:.6e}{}", if self.t == 0.0 { " (automatic: 2 x the largest squared edge length)" } else { "" }));
        }
        f.notes.push(format!("generalised eigenvalues lambda_2..lambda_{}: {values:?}", self.dim + 1));
        f.graph = Some(Graph { n_vertices: n, edges: weighted });
        Ok(f)
    }
}

pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: "le",
        summary:
            "Laplacian eigenmaps: generalised eigenvectors 2..d+1 of L v = lambda D v on the symmetrised k-NN graph, W_ij = exp(-||x_i - x_j||^2 / t) or 1.",
        reference: "Belkin & Niyogi 2003; drtoolbox laplacian_eigen (k = 12, sigma = 1); scikit-learn spectral_embedding",
        version: 1,
        output: OutputKind::Embedding,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: false,
        params: LaplacianEigenmaps::schema(()),
        build: |p| declare::build::<LaplacianEigenmaps>("le", (), p),
    }
}
