//! # structdr-datasets: the data side of structdr
//!
//! - [`registry`]: the data-set registry file (`registry.toml`): name, canonical URL(s), SHA-256,
//!   format, where the labels are, citation, licence, stand-in notes; plus the trust-on-first-use
//!   lock file for sets whose checksum is unknown.
//! - [`regular`]: reading a local file, regular files only (the registry and [`mod@file`] read
//!   through it).
//! - [`download`]: HTTPS download with timeout, retries, progress bar, atomic writes into the
//!   cache (`data/`), SHA-256 verification; a mirror directory or base URL (`STRUCTDR_MIRROR`)
//!   replaces the canonical host.
//! - [`mod@file`]: a researcher's own file (NPY, CSV/TSV, LIBSVM, MAT) with labels -> [`Dataset`].
//! - [`load`]: registry entry -> [`Dataset`] (X float64 samples in rows, integer labels), and
//!   [`load::fetch_files`]: a download that must load before it is cached.
//! - [`parse`]: LIBSVM (also `.bz2`), MATLAB v5 `.mat`, IDX (gzip), NPY, CSV. Malformed input is an
//!   error naming the file and the line or byte offset, never a panic.
//! - [`synthetic`]: seeded generators (helix, twinpeaks, two moons, spiral, distorted S, circle,
//!   tree, three clusters, swiss roll, Y-and-b letters, line + circle, rendered teapot rotation) and
//!   noise augmentation.
//! - [`preprocess`]: z-scoring, \[0, 1\] scaling, PCA to a given energy, Gaussian kernel matrix,
//!   label selection, noise features and uniform noise.

pub mod download;
pub mod file;
pub mod ink;
pub mod load;
pub mod parse;
pub mod preprocess;
pub mod registry;
pub mod regular;
pub mod synthetic;

use ndarray::Array2;

/// A data set ready for a method: samples in rows.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// Registry or generator name (e.g. `iris`, `helix`).
    pub name: String,
    /// Features, N x D, float64, samples in rows.
    pub x: Array2<f64>,
    /// Class label of every sample (as in the source file), when the set has labels.
    pub labels: Option<Vec<i64>>,
    /// Intrinsic coordinate of every sample (position along the manifold) for synthetic sets;
    /// used to colour figures.
    pub t: Option<Vec<f64>>,
    /// Hex SHA-256 identifying the content: of the verified source file(s) for real sets, of the
    /// generator name, parameters and seed for synthetic ones. Part of every cache key.
    pub checksum: String,
    /// Stand-in or provenance remark shown in tables (e.g. "stand-in: 1560 of 3119 samples").
    pub note: Option<String>,
}

impl Dataset {
    /// Number of distinct labels (0 when unlabelled).
    pub fn n_classes(&self) -> usize {
        self.labels.as_ref().map_or(0, |l| {
            let mut v = l.clone();
            v.sort_unstable();
            v.dedup();
            v.len()
        })
    }
}

/// Hex encoding of a digest (sha2 0.11 digests do not implement `LowerHex`).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of `bytes` as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex(&Sha256::digest(bytes))
}
