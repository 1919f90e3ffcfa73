//! # structdr-linalg: the one linear-algebra home of structdr
//!
//! Every dense kernel the methods, the data preprocessing and the metrics share lives here once:
//!
//! - [`eigh`]: symmetric eigendecomposition by LAPACK divide and conquer (`dsyevd`), and
//!   [`eigh_top`] / [`eigh_bottom`]: the k extremal eigenpairs by MRRR (`dsyevr`, range `I`),
//!   which costs O(n^2 k) after the O(n^3) tridiagonalisation instead of computing all vectors.
//!   (ndarray-linalg's `Eigh` calls the QR-based `dsyev`, 7x slower at n = 2000; see docs/blas.md B3.)
//! - [`Cholesky`]: `A = L L^T` with solves, `log det A = 2 sum_i log L_ii`, and the inverse.
//! - [`sq_dists`] / [`sq_dists_between`]: pairwise squared Euclidean distances through one GEMM,
//!   `||x_i - y_j||^2 = ||x_i||^2 + ||y_j||^2 - 2 x_i^T y_j`, clamped at 0.
//! - [`diag_lowrank_bottom`]: the k smallest eigenpairs of `diag(d) + B B^T` (B tall) by block
//!   Krylov on the Woodbury inverse, O(D r) per product instead of a dense D x D eigenproblem;
//!   [`sparse::laplacian_bottom`]: those of a weighted graph Laplacian on the complement of the
//!   constant vector, by the same iteration on a sparse Cholesky (the iteration: `krylov`).
//! - [`Pca`]: principal axes of the centred data and the energy rule [`energy_dim`].
//! - [`SpdFactor`], [`log_det_inverse_upper`]: in-place Cholesky, solves and inverse on row-major
//!   buffers whose one triangle the caller assembled.
//! - [`sparse`]: sparse SPD matrices: fill-reducing orderings, symbolic analysis, supernodal
//!   numeric factorisation, `log det`, solves and selected inversion (split as faer splits them).
//! - [`blas`]: OpenBLAS thread control, so BLAS runs single-threaded inside rayon-parallel work.
//!
//! Conventions: samples are rows; eigenvectors are columns; eigenvector signs are canonicalised
//! ([`canonicalize_signs`]) so that results are reproducible bit for bit.

// Keep the OpenBLAS link directive (docs/blas.md B1: the `system` feature links Debian's libopenblas).
extern crate openblas_src;

pub mod blas;
mod chol;
mod dist;
mod eig;
mod gram;
mod krylov;
mod lowrank;
mod pca;
pub mod sparse;
mod spd;

pub use chol::Cholesky;
pub use dist::{row_sq_norms, sq_dists, sq_dists_between};
pub use eig::{canonicalize_signs, eigh, eigh_bottom, eigh_top, reconstruct, SymmetricEigen};
pub use gram::{gram_of_columns, gram_of_rows};
pub use krylov::{BottomEigenpairs, KrylovOptions};
pub use lowrank::{diag_lowrank_bottom, LowRankEigOptions, LowRankEigen};
pub use pca::{energy_dim, EnergyRule, Pca};
pub use spd::{inverse_from_factor_upper, log_det_factor_upper, log_det_inverse_upper, SpdFactor};

/// Errors of the dense kernels.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum LinalgError {
    /// The input holds NaN or infinite entries.
    #[error("{what}: input contains NaN or infinite values")]
    NotFinite {
        /// Name of the kernel that rejected the input.
        what: &'static str,
    },
    /// Shapes do not fit (e.g. a non-square matrix where a square one is required).
    #[error("{what}: shape mismatch ({detail})")]
    Shape {
        /// Name of the kernel that rejected the input.
        what: &'static str,
        /// The offending shapes, e.g. `3 x 4 is not square`.
        detail: String,
    },
    /// Cholesky failed: the matrix is not (numerically) positive definite.
    #[error("Cholesky: matrix is not positive definite (leading minor {minor} of {n} is not positive)")]
    NotPositiveDefinite {
        /// Order (1-based, LAPACK's `info`) of the first leading minor that is not positive; 0 if unknown.
        minor: usize,
        /// Dimension of the matrix.
        n: usize,
    },
    /// A LAPACK routine returned a non-zero `info`.
    #[error("LAPACK {routine} failed with info = {info}")]
    Lapack {
        /// Name of the LAPACK routine that failed, e.g. `dsyevd`.
        routine: &'static str,
        /// The routine's `info` return code (-1 when the wrapper reported no code).
        info: i32,
    },
    /// Empty input where at least one row/column is needed.
    #[error("{what}: empty input")]
    Empty {
        /// Name of the kernel that rejected the input.
        what: &'static str,
    },
}

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, LinalgError>;

/// Fails with [`LinalgError::NotFinite`] if any entry of `a` is NaN or infinite.
pub fn ensure_finite<S, D>(a: &ndarray::ArrayBase<S, D>, what: &'static str) -> Result<()>
where
    S: ndarray::Data<Elem = f64>,
    D: ndarray::Dimension,
{
    if a.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(LinalgError::NotFinite { what })
    }
}

/// Fails with [`LinalgError::Shape`] unless `a` is square.
pub(crate) fn ensure_square(a: &ndarray::ArrayView2<f64>, what: &'static str) -> Result<usize> {
    let (r, c) = a.dim();
    if r != c {
        return Err(LinalgError::Shape { what, detail: format!("{r} x {c} is not square") });
    }
    if r == 0 {
        return Err(LinalgError::Empty { what });
    }
    Ok(r)
}
