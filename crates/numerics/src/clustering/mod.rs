//! k-means.
//!
//! [`kmeans`] (k-means++ seeding, Lloyd with exact distances and drift bounds, emptied clusters
//! re-seeded) fits landmarks and initial centres for the methods. The evaluation protocol's
//! k-means (MATLAB-compatible restarts on embeddings) lives in `structdr-eval`, whose cached table
//! numbers depend on its exact behaviour; see that module for the policies it keeps.

mod seeded;

pub use seeded::*;
