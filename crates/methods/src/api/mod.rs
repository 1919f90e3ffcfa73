//! The method contract, parameters, input checks and the registry entry type: what every method
//! family imports, and the only thing the families share.
//!
//! - [`Embedder`], [`Fitted`], [`Graph`], [`MethodError`]: the contract.
//! - [`params`]: parameter values, schemas and typed access.
//! - [`info`]: [`MethodInfo`], one registry entry (name, schema, version, constructor).
//! - [`check_input`], [`check_dense_size`], [`numerical`], [`numerics`]: the checks and error
//!   mappings every method uses.

pub mod info;
pub mod params;

pub use info::MethodInfo;
pub use params::{ParamError, ParamKind, ParamMap, ParamMapExt, ParamSchema, ParamValue};

use ndarray::{Array1, Array2, ArrayView2};
use structdr_numerics::NumericsError;

/// Largest N for which the dense N x N methods (KPCA, LE, LLE, SPL's dense path, FSL) build their
/// matrix (the matrix plus the eigensolver's copy take 2 x 8 N^2 bytes: 6.4 GB at this limit);
/// larger inputs are rejected with a clear error instead of running out of memory.
pub const DENSE_MAX_N: usize = 20_000;

/// Fails for N above [`DENSE_MAX_N`].
pub fn check_dense_size(method: &'static str, n: usize) -> Result<()> {
    if n > DENSE_MAX_N {
        return Err(MethodError::Input {
            method,
            reason: format!("N = {n} samples exceeds the dense-eigensolver limit {DENSE_MAX_N} (it needs 16 N^2 bytes = {:.1} GB); subsample the data", 16.0 * (n as f64).powi(2) / 1e9),
        });
    }
    Ok(())
}

/// Maps an error of the shared numerics into a [`MethodError`] of `method`: invalid input stays
/// invalid input, a disconnected graph stays one, kernel failures are numerical failures.
pub fn numerics(method: &'static str) -> impl Fn(NumericsError) -> MethodError {
    move |e| match e {
        NumericsError::Input { reason, .. } => MethodError::Input { method, reason },
        NumericsError::Disconnected { k, components, sizes } => MethodError::Disconnected { method, k, components, sizes },
        NumericsError::Linalg(source) => MethodError::Numerical { method, source },
    }
}

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
pub fn numerical(method: &'static str) -> impl Fn(structdr_linalg::LinalgError) -> MethodError {
    move |source| MethodError::Numerical { method, source }
}
