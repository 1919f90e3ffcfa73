//! # structdr-methods: dimensionality reduction and structure learning behind one contract
//!
//! Every method is a parameter struct implementing [`Embedder`]: `fit(X, seed)` on samples in
//! rows returns a [`Fitted`] with the embedding and, where the method has them, the learned graph,
//! component labels, feature weights and the objective history.
//!
//! Methods are found by name through the [`registry`]: one table maps each name to its parameter
//! schema and constructor; spec validation, `structdr embed` and the generated docs all read it.
//! Adding a method is one module, one registry entry (see `docs/adding-a-method.md`).
//!
//! | name | module | formula |
//! |---|---|---|
//! | `identity` | [`identity`] | `Y = X` |
//! | `pca` | [`pca`] | top-d eigenvectors of the centred covariance |
//! | `kpca` | [`kpca`] | top-d eigenvectors of the centred Gaussian kernel |
//! | `le` | [`laplacian`] | bottom non-trivial generalised eigenvectors of `L v = lambda D v` |
//! | `lle` | [`lle`] | bottom non-trivial eigenvectors of `(I - W)^T (I - W)` |
//! | `spl` | [`spl`] | dual over S on a K-NN graph, `Q = diag(S1) - S + (gamma+1)/4 I`, `X = (gamma/4) Q^-1 Y W` (000 Alg. 1) |
//! | `drtree`, `ddrtree` | [`ddrtree`] | `min ||Y - Z W^T||^2 + lambda sum_tree ||c_k - c_l||^2 + gamma [sum r_ik ||z_i - c_k||^2 + sigma sum r log r]` (Alg. 2) |
//! | `mpme` | [`mpme`] | `max_W (d/2) log det(L + lambda I) - (1/4) <W, Phi>`, `0 <= w <= 4C`, then KPCA on `(L + lambda I)^-1` (002 eqs. 10-17) |
//! | `esl` | [`esl`] | `min_W -(m/2) log det(I + 4L) + lambda sum w_ij (1 - pbar_ij)`, `0 <= w <= C`, per-component KPCA (001 Alg. 1) |
//! | `fsl` | [`fsl`] | feature weights theta of 001 problem (34); embedding = X on the top-ranked features |
//! | `rpg-tree`, `rpg-l1`, `rpg-landmark` | [`rpg`] | principal graph: `P` softmax, `W` MST / LP (19, 23), `C = (2/gamma L + Lambda)^-1 P^T X` |

pub mod ddrtree;
pub mod esl;
pub mod fsl;
pub mod graph;
pub mod identity;
pub mod kmeans;
pub mod kpca;
pub mod laplacian;
pub mod lle;
pub mod logdet;
pub mod mpme;
pub mod nearest;
pub mod optim;
pub mod params;
pub mod pca;
pub mod registry;
pub mod rpg;
pub mod sparse;
pub mod spl;
#[cfg(test)]
mod testing;

use ndarray::{Array1, Array2, ArrayView2};

pub use params::{ParamError, ParamKind, ParamMap, ParamSchema, ParamValue};
pub use registry::{lookup, registry, MethodInfo};

/// Errors a method can return. Bad input is reported, never panicked on.
#[derive(Debug, thiserror::Error)]
pub enum MethodError {
    /// Invalid or inconsistent parameters (validated before any work).
    #[error(transparent)]
    Param(#[from] ParamError),
    /// The data cannot be used: empty, NaN/Inf, constant, too few points, ...
    #[error("{method}: invalid input: {reason}")]
    Input { method: &'static str, reason: String },
    /// The neighbourhood graph is disconnected and the method was told not to repair it.
    #[error("{method}: the {k}-NN graph has {components} connected components (sizes {sizes:?}); set disconnected = \"connect\" to join them with their shortest edges, or raise k")]
    Disconnected { method: &'static str, k: usize, components: usize, sizes: Vec<usize> },
    /// A numerical kernel failed (singular system, non-convergence, LAPACK error).
    #[error("{method}: numerical failure: {source}")]
    Numerical {
        method: &'static str,
        #[source]
        source: structdr_linalg::LinalgError,
    },
    /// An optimisation solver (LP / QP) stopped without a usable solution.
    #[error("{method}: solver failure: {reason}")]
    Solver { method: &'static str, reason: String },
}

/// Result alias for methods.
pub type Result<T> = std::result::Result<T, MethodError>;

/// A weighted undirected graph on the samples (or on learned centres), as an edge list `i < j`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Graph {
    /// Number of vertices.
    pub n_vertices: usize,
    /// Edges `(i, j, weight)` with `i < j`, sorted.
    pub edges: Vec<(usize, usize, f64)>,
}

/// What a fitted method returns.
#[derive(Debug, Clone, Default)]
pub struct Fitted {
    /// The embedding, samples in rows (N x d).
    pub embedding: Array2<f64>,
    /// The graph the method learned or used, when it has one. Its vertices are the samples, or
    /// the rows of `centres` when that is set.
    pub graph: Option<Graph>,
    /// Coordinates of the graph's vertices when they are learned centres rather than the samples
    /// (DDRTree: K x d in the latent space; principal graphs: K x D in the input space).
    pub centres: Option<Array2<f64>>,
    /// Connected-component index of every sample, when the method splits the data.
    pub components: Option<Vec<usize>>,
    /// One weight per input feature (feature selection methods).
    pub feature_weights: Option<Array1<f64>>,
    /// Objective value after each iteration (iterative methods).
    pub history: Vec<f64>,
    /// Iterations run (0 for closed-form methods).
    pub iterations: usize,
    /// Whether the stopping rule was met (true for closed-form methods).
    pub converged: bool,
    /// Human-readable remarks (e.g. "joined 3 components with 2 edges").
    pub notes: Vec<String>,
}

impl Fitted {
    /// A closed-form result: just the embedding.
    pub fn closed_form(embedding: Array2<f64>) -> Fitted {
        Fitted { embedding, converged: true, ..Default::default() }
    }
}

/// The method contract: fit on samples in rows and return an embedding.
///
/// `seed` drives every random choice; the same seed, input and parameters give bit-identical
/// output whatever the number of threads.
pub trait Embedder: Send + Sync {
    /// The registry name of the method.
    fn name(&self) -> &'static str;
    /// Fits on `x` (N x D, samples in rows).
    fn fit(&self, x: ArrayView2<f64>, seed: u64) -> Result<Fitted>;
}

/// Shared input checks: non-empty, finite, at least `min_samples` rows.
pub fn check_input(method: &'static str, x: &ArrayView2<f64>, min_samples: usize) -> Result<()> {
    let (n, d) = x.dim();
    if n == 0 || d == 0 {
        return Err(MethodError::Input { method, reason: format!("empty data ({n} x {d})") });
    }
    if let Some(pos) = x.iter().position(|v| !v.is_finite()) {
        let (i, j) = (pos / d, pos % d);
        return Err(MethodError::Input { method, reason: format!("non-finite value at sample {i}, feature {j}") });
    }
    if n < min_samples {
        return Err(MethodError::Input { method, reason: format!("{n} samples, at least {min_samples} needed") });
    }
    Ok(())
}

/// Maps a linear-algebra error into a [`MethodError`] of `method`.
pub(crate) fn numerical(method: &'static str) -> impl Fn(structdr_linalg::LinalgError) -> MethodError {
    move |source| MethodError::Numerical { method, source }
}
