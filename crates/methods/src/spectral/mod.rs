//! The spectral family: closed-form embeddings from an eigendecomposition (identity, PCA, Gaussian
//! KPCA, Laplacian eigenmaps, LLE).

pub mod identity;
pub mod kpca;
pub mod le;
pub mod lle;
pub mod pca;
