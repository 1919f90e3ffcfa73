//! # structdr-numerics: what several methods and the metrics share, each once
//!
//! The layer between `structdr-linalg` (the only crate that talks to BLAS / LAPACK) and the method
//! families and metrics above it. Nothing here knows about methods, parameters, specs or files.
//!
//! | concept | home |
//! |---|---|
//! | squared distance of two samples (exact, feature by feature) | [`dist`] |
//! | exact K-NN (GEMM-screened), near-centre search with drift bounds | [`neighbours`] |
//! | components, repair, K-NN graph policy, MST, rooted-tree solves, the Laplacian | [`graphs`] |
//! | k-means (seeding, assignment, update) | [`clustering`] |
//! | perplexity-calibrated affinities | [`affinities`] |
//! | kernel PCA on a kernel, bottom non-trivial eigenvectors | [`spectral`] |
//! | bound-constrained L-BFGS (Fortran L-BFGS-B and projected), simplex projections | [`optim`] |
//! | the median of a small sample | [`stats`] |
//!
//! Every routine is deterministic: parallel work is split into blocks whose size depends on the
//! problem only, and reductions run in a fixed order, so results are bit-identical at any thread
//! count.
#![warn(missing_docs)]

pub mod affinities;
pub mod clustering;
pub mod dist;
pub mod graphs;
pub mod neighbours;
pub mod optim;
pub mod progress;
pub mod spectral;
pub mod stats;

use ndarray::ArrayView2;

/// Errors of the shared numerical routines. Bad input is reported, never panicked on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NumericsError {
    /// The input cannot be used: empty, NaN/Inf, too few points for the request, duplicates.
    #[error("{what}: invalid input: {reason}")]
    Input {
        /// The routine that refused the input (`knn`, `kmeans`, ...).
        what: &'static str,
        /// Why, in words.
        reason: String,
    },
    /// The symmetrised K-NN graph is disconnected and the policy says not to repair it.
    #[error("the {k}-NN graph has {components} connected components (sizes {sizes:?})")]
    Disconnected {
        /// Neighbours per sample.
        k: usize,
        /// Number of connected components.
        components: usize,
        /// Their sizes, in the order of their lowest vertex.
        sizes: Vec<usize>,
    },
    /// The data do not determine the answer: e.g. an eigenspace the result is built from is tied
    /// with the next eigenvalue at rounding level, so any choice would be the eigensolver's.
    #[error("{what}: the data do not determine the result: {reason}")]
    Degenerate {
        /// The routine that found it.
        what: &'static str,
        /// Why, in words.
        reason: String,
    },
    /// A dense kernel failed.
    #[error(transparent)]
    Linalg(#[from] structdr_linalg::LinalgError),
}

impl NumericsError {
    /// An [`NumericsError::Input`] of routine `what`.
    pub fn input(what: &'static str, reason: impl Into<String>) -> NumericsError {
        NumericsError::Input { what, reason: reason.into() }
    }
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, NumericsError>;

/// The shared input check on samples in rows: non-empty, finite, at least `min_samples` rows.
/// Errors name the first offending entry.
pub fn check_samples(what: &'static str, x: &ArrayView2<f64>, min_samples: usize) -> Result<()> {
    let (n, d) = x.dim();
    if n == 0 || d == 0 {
        return Err(NumericsError::input(what, format!("empty data ({n} x {d})")));
    }
    if let Some((pos, v)) = x.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        let (i, j) = (pos / d, pos % d);
        return Err(NumericsError::input(what, format!("non-finite value {v} at sample {i}, feature {j}")));
    }
    if n < min_samples {
        return Err(NumericsError::input(what, format!("{n} samples, at least {min_samples} needed")));
    }
    Ok(())
}
