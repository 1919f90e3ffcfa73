//! # structdr-eval: the evaluation metrics of the structure-learning DR papers
//!
//! Samples are rows of an embedding `Y` (N x D); `labels` are the true classes (any [`Label`]
//! type: `i64`, `usize`, ...; values need not be `0..c`).
//!
//! | metric | function | formula |
//! |---|---|---|
//! | 1-NN leave-one-out accuracy | [`loocv_1nn_accuracy`] | `(1/N) sum_i [y_i = y_{nn(i)}]`, `nn(i) = argmin_{j != i} ||Y_i - Y_j||^2`, ties to the lowest `j` |
//! | clustering accuracy | [`hungarian_acc`] | `(1/N) max_sigma sum_i [t_i = sigma(p_i)]`, `sigma` one-to-one clusters -> classes (Hungarian on the contingency table) |
//! | normalised mutual information | [`nmi`] | `I(P;T) / norm(H(P), H(T))`, `norm` one of max (default), arithmetic, geometric, min ([`NmiNorm`]) |
//! | trustworthiness, continuity (Venna & Kaski 2001), k-NN preservation | [`neighbourhood_preservation`] | `T(k) = 1 - 2/(N k (2N - 3k - 1)) sum_i sum_{j in N^Y_k(i) \ N^X_k(i)} (r^X(i,j) - k)`, `C(k)` with X and Y swapped, `P(k) = sum_i |N^X_k(i) & N^Y_k(i)| / (N k)` |
//! | k-means protocol | [`kmeans_protocol`] | R seeded k-means++ restarts; per run SSE `sum_i ||Y_i - c_{l_i}||^2`, ACC, NMI; mean ± sample std (n-1) and the lowest-SSE run |
//!
//! with the contingency table `n_rc` ([`contingency`]), `a_r = sum_c n_rc`, `b_c = sum_r n_rc`:
//! `H(P) = -sum_r (a_r/N) ln(a_r/N)`, `H(T) = -sum_c (b_c/N) ln(b_c/N)`,
//! `I(P;T) = sum_rc (n_rc/N) ln(N n_rc / (a_r b_c))`.
//!
//! Conventions (REFERENCES.md §3): NMI uses `max(H1, H2)` unless told otherwise (Cai/Nie MATLAB
//! code) and natural logs (the base cancels in the ratio); degenerate NMI cases follow
//! scikit-learn (both single-cluster: 1, one single-cluster: 0). Unmatched clusters count as
//! wrong in ACC. Standard deviations are sample (n - 1) standard deviations, as MATLAB's `std`.
//! Everything is deterministic and independent of the rayon / BLAS thread counts.
//!
//! Scale: every metric rescales the coordinates by an exact power of two before taking distances
//! (the largest magnitude near `2^490`, as far from overflow as `N D` allows), so an embedding multiplied by `1e300` or `1e-300` scores as the
//! unscaled one instead of overflowing or underflowing; for ordinary data the rescaling changes no
//! bit of any result (the module `scale`).
//!
//! Every fallible function returns [`EvalError`] instead of panicking on empty input, mismatched
//! lengths, NaN/Inf or invalid parameters.

#![warn(missing_docs)]

mod error;
mod hungarian;
mod kmeans;
mod knn;
mod labels;
mod neighbourhood;
mod nmi;
mod scale;

pub use error::{EvalError, Result};
pub use hungarian::{hungarian_acc, linear_sum_assignment, max_matching_count, MAX_ABS_COST};
pub use kmeans::{
    kmeans_fit, kmeans_protocol, kmeans_protocol_brute_force, kmeans_protocol_with, mean_std, restart_seed, KmeansAlgorithm, KmeansFit, KmeansOptions,
    KmeansReport, KmeansRun,
};
pub use knn::{loocv_1nn_accuracy, loocv_1nn_accuracy_within_groups, nearest_neighbours_loo};
pub use labels::{contingency, n_classes, unique_labels, Label};
pub use neighbourhood::{neighbourhood_preservation, trustworthiness, NeighbourhoodScores};
pub use nmi::{information, nmi, nmi_from_stats, InformationStats, NmiNorm};
