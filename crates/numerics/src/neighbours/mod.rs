//! Neighbour search: exact K-NN of samples among samples ([`knn`]) and the near centres of
//! samples among moving centres ([`NearCentres`], k-means and principal-graph soft assignment);
//! groups of equal samples ([`distinct_rows`]); a k-d tree for small-dimensional point sets
//! ([`KdTree`]: nearest and fixed-radius queries).

mod distinct;
pub mod kdtree;
pub mod knn;
mod near;

pub use distinct::distinct_rows;
pub use kdtree::KdTree;
pub use knn::{knn, symmetrised_edges, Knn};
pub use near::*;
