//! The spectral family: closed-form embeddings (identity, PCA, Gaussian random projection,
//! Gaussian KPCA, Laplacian eigenmaps, LLE).

pub mod identity;
pub mod kpca;
pub mod le;
pub mod lle;
pub mod pca;
pub mod rproj;
pub mod smce;
