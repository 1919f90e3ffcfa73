//! The symmetrised K-NN graph made connected according to a policy (LE, LLE).

use super::components::{component_sizes, connect_components, connected_components};
use crate::neighbours::knn::{knn, symmetrised_edges, Knn};
use crate::{NumericsError, Result};
use ndarray::ArrayView2;

/// What to do when the symmetrised K-NN graph is disconnected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disconnected {
    /// Join the components with [`connect_components`] (the default); `Fitted.notes` says so.
    Connect,
    /// Fail with [`NumericsError::Disconnected`], reporting the component sizes.
    Error,
}

impl Disconnected {
    /// The spec spellings `"connect"` / `"error"`.
    pub fn parse(s: &str) -> Option<Disconnected> {
        match s {
            "connect" => Some(Disconnected::Connect),
            "error" => Some(Disconnected::Error),
            _ => None,
        }
    }
    /// The spec spelling.
    pub fn as_str(&self) -> &'static str {
        match self {
            Disconnected::Connect => "connect",
            Disconnected::Error => "error",
        }
    }
}

/// A symmetrised K-NN graph made connected according to a [`Disconnected`] policy.
#[derive(Debug, Clone)]
pub struct NeighbourGraph {
    /// The K-NN search result (directed neighbourhoods; LLE reconstructs from these).
    pub knn: Knn,
    /// All undirected edges `(i, j, ||x_i - x_j||^2)`, `i < j`, sorted: the symmetrised K-NN edges
    /// plus `joins`.
    pub edges: Vec<(usize, usize, f64)>,
    /// The edges added by [`connect_components`] (empty if the K-NN graph was connected).
    pub joins: Vec<(usize, usize, f64)>,
    /// Component sizes of the K-NN graph before the repair (one entry when connected).
    pub sizes_before: Vec<usize>,
}

impl NeighbourGraph {
    /// A human-readable note on the repair, if one was needed.
    pub fn note(&self) -> Option<String> {
        (!self.joins.is_empty()).then(|| {
            format!(
                "the {}-NN graph had {} connected components (sizes {:?}); joined them with {} shortest edges (disconnected = \"connect\")",
                self.knn.k(),
                self.sizes_before.len(),
                self.sizes_before,
                self.joins.len()
            )
        })
    }
}

/// K-NN search, symmetrisation, component check and repair in one step (LE and LLE use this).
pub fn neighbourhood_graph(x: ArrayView2<f64>, k: usize, policy: Disconnected) -> Result<NeighbourGraph> {
    let knn = knn(x, k)?;
    let mut edges = symmetrised_edges(&knn);
    let n = x.nrows();
    let (labels, count) = connected_components(n, &edges);
    let sizes_before = component_sizes(&labels, count);
    let joins = if count > 1 {
        match policy {
            Disconnected::Error => return Err(NumericsError::Disconnected { k, components: count, sizes: sizes_before }),
            Disconnected::Connect => connect_components(x, &labels, count),
        }
    } else {
        Vec::new()
    };
    if !joins.is_empty() {
        edges.extend_from_slice(&joins);
        edges.sort_unstable_by_key(|e| (e.0, e.1));
        edges.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    }
    Ok(NeighbourGraph { knn, edges, joins, sizes_before })
}
