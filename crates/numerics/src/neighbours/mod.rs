//! Neighbour search: exact K-NN of samples among samples ([`knn`]) and the near centres of
//! samples among moving centres ([`NearCentres`], k-means and principal-graph soft assignment);
//! groups of equal samples ([`distinct_rows`]).

mod distinct;
pub mod knn;
mod near;

pub use distinct::distinct_rows;
pub use knn::{knn, symmetrised_edges, Knn};
pub use near::*;
