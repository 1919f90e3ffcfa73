//! The method contract, parameters, input checks and the registry entry type: what every method
//! family imports, and the only thing the families share.
//!
//! - [`contract`]: [`Embedder`], [`FitInput`], [`Fitted`] with its [`Output`] kinds and [`Trace`],
//!   [`Transform`]; [`MethodError`].
//! - [`params`]: parameter values, schemas and their validation.
//! - [`stop`]: [`StopReason`], why an iterative fit stopped.
//! - [`info`]: [`MethodInfo`], one registry entry (name, schema, version, constructor).
//! - [`state`]: [`TransformState`], an out-of-sample map's numbers (saved models), and [`AffineMap`].
//! - [`declare`]: `declare_params!`, one declaration per parameter (struct field, schema entry,
//!   `build` and `params()` from one line), and [`Checked`] instances.
//! - [`check_input`], [`check_dense_size`], [`numerical`], [`numerics`]: the checks and error
//!   mappings every method uses.

pub mod contract;
pub mod declare;
pub mod info;
pub mod params;
pub mod state;
pub mod stop;

pub use contract::{Embedder, FeatureScores, FitInput, Fitted, Graph, Init, Output, OutputKind, PrincipalGraph, Trace, Transform};
pub use declare::{Checked, Declared, ParamChoice};
pub use info::MethodInfo;
pub use params::{ParamError, ParamKind, ParamMap, ParamSchema, ParamValue, Stage, AUTO, CLASSES, DIM_ENERGY, DIM_UNRESOLVED};
pub use state::{AffineMap, TransformState};
pub use stop::{relative_change, StopReason};

use ndarray::ArrayView2;
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
            reason: format!(
                "N = {n} samples exceeds the dense-eigensolver limit {DENSE_MAX_N} (it needs 16 N^2 bytes = {:.1} GB); subsample the data",
                16.0 * (n as f64).powi(2) / 1e9
            ),
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
        NumericsError::Linalg(cause) => MethodError::Numerical { method, cause },
        NumericsError::Degenerate { reason, .. } => MethodError::Degenerate { method, reason },
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
    Input {
        /// The method.
        method: &'static str,
        /// Why, in words.
        reason: String,
    },
    /// The neighbourhood graph is disconnected and the method was told not to repair it.
    #[error("{method}: the {k}-NN graph has {components} connected components (sizes {sizes:?}); set disconnected = \"connect\" to join them with their shortest edges, or raise k")]
    Disconnected {
        /// The method.
        method: &'static str,
        /// Neighbours per sample.
        k: usize,
        /// Number of components.
        components: usize,
        /// Their sizes.
        sizes: Vec<usize>,
    },
    /// A numerical kernel failed (singular system, non-convergence, LAPACK error).
    #[error("{method}: numerical failure: {cause}")]
    Numerical {
        /// The method.
        method: &'static str,
        /// The kernel's error (part of the message, so not also returned by `source()`: printing
        /// the error's chain would repeat it).
        cause: structdr_linalg::LinalgError,
    },
    /// The data or the fit carry no structure to embed: identical samples, a scale at which
    /// squared distances overflow or underflow, an optimum with an undefined embedding. The
    /// runner records such cells with status `degenerate` (not a number that looks real).
    #[error("{method}: degenerate: {reason}")]
    Degenerate {
        /// The method.
        method: &'static str,
        /// Why, in words.
        reason: String,
    },
    /// An optimisation solver (LP / QP) stopped without a usable solution.
    #[error("{method}: solver failure: {reason}")]
    Solver {
        /// The method.
        method: &'static str,
        /// What the solver said.
        reason: String,
    },
}

/// Result alias for methods.
pub type Result<T> = std::result::Result<T, MethodError>;

/// Shared input checks: non-empty, finite, at least `min_samples` rows.
pub fn check_input(method: &'static str, x: &ArrayView2<f64>, min_samples: usize) -> Result<()> {
    let (n, d) = x.dim();
    if n == 0 || d == 0 {
        return Err(MethodError::Input { method, reason: format!("empty data ({n} x {d})") });
    }
    if let Some((pos, v)) = x.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        let (i, j) = (pos / d, pos % d);
        return Err(MethodError::Input { method, reason: format!("non-finite value {v} at sample {i}, feature {j}") });
    }
    if n < min_samples {
        return Err(MethodError::Input { method, reason: format!("{n} samples, at least {min_samples} needed") });
    }
    Ok(())
}

/// Largest spread `max_ij |x_ij - x_0j|` at which squared distances (summed over up to 1e6
/// features and 1e6 samples) stay finite: `(1e150)^2 = 1e300`.
pub const MAX_SPREAD: f64 = 1e150;

/// Smallest non-zero spread at which squared distances do not underflow: `(1e-150)^2 = 1e-300`,
/// near the smallest normal double.
pub const MIN_SPREAD: f64 = 1e-150;

/// The data checks every fit passes first ([`crate::api::Embedder::fit_with`]): with at least two
/// finite samples, the data must not be one point repeated and their spread
/// `s = max_ij |x_ij - x_0j|` must lie in `[MIN_SPREAD, MAX_SPREAD]`; otherwise the fit is
/// [`MethodError::Degenerate`] (squared distances would overflow to inf or underflow to 0, and
/// every method would return a plausible-looking but meaningless answer). Non-finite or empty
/// data are left to the method's own [`check_input`].
pub fn check_degenerate(method: &'static str, x: &ArrayView2<f64>) -> Result<()> {
    let (n, d) = x.dim();
    if n < 2 || d == 0 || x.iter().any(|v| !v.is_finite()) {
        return Ok(());
    }
    // measured from the first sample (not the mean, whose rounding would hide a repeated point):
    // within a factor 2 of the spread from the mean, and exactly 0 iff every sample is the same
    let first = x.row(0);
    let spread = x.rows().into_iter().fold(0.0f64, |s, r| r.iter().zip(first.iter()).fold(s, |s, (a, f)| s.max((a - f).abs())));
    if spread == 0.0 {
        return Err(MethodError::Degenerate { method, reason: format!("constant data: all {n} samples are the same point") });
    }
    if !(spread <= MAX_SPREAD) {
        return Err(MethodError::Degenerate {
            method,
            reason: format!("extreme scale: the samples spread {spread:.3e} (> {MAX_SPREAD:e}), so squared distances overflow; rescale the data"),
        });
    }
    if spread < MIN_SPREAD {
        return Err(MethodError::Degenerate {
            method,
            reason: format!("extreme scale: the samples spread only {spread:.3e} (< {MIN_SPREAD:e}), so squared distances underflow; rescale the data"),
        });
    }
    Ok(())
}

/// Checks that new samples for an out-of-sample transform are finite and have the training
/// data's `n_features` columns.
pub fn check_features(method: &'static str, x: &ArrayView2<f64>, n_features: usize) -> Result<()> {
    if x.ncols() != n_features {
        return Err(MethodError::Input { method, reason: format!("{} features, the fit had {n_features}", x.ncols()) });
    }
    if let Some((pos, v)) = x.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(MethodError::Input {
            method,
            reason: format!("non-finite value {v} at sample {}, feature {}", pos / n_features.max(1), pos % n_features.max(1)),
        });
    }
    Ok(())
}

/// Maps a linear-algebra error into a [`MethodError`] of `method`.
pub fn numerical(method: &'static str) -> impl Fn(structdr_linalg::LinalgError) -> MethodError {
    move |cause| MethodError::Numerical { method, cause }
}
