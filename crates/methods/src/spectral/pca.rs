//! Principal component analysis.
//!
//! With the centred data `Xc = X - 1 mu^T` and the covariance eigenpairs
//! `Xc^T Xc / (N-1) = V Lambda V^T` (descending), the embedding is `Y = Xc V_d`: the scores on the
//! first d principal axes. Axis signs are canonicalised (largest |loading| positive).

use crate::api::declare::{self, declare_params, Declared};
use crate::api::info::{dim, MethodInfo};
use crate::api::OutputKind;
use crate::api::{check_input, numerical, AffineMap, Embedder, FitInput, Fitted, MethodError, ParamMap, Result};
use ndarray::s;
use std::sync::Arc;
use structdr_linalg::Pca as PcaBasis;

declare_params! {
    /// PCA to `dim` dimensions.
    #[derive(Debug, Clone)]
    pub struct Pca {
        /// Target dimension d.
        pub dim: usize = dim(),
    }
}

impl Embedder for Pca {
    fn name(&self) -> &'static str {
        "pca"
    }
    fn info(&self) -> MethodInfo {
        info()
    }
    fn params(&self) -> ParamMap {
        self.to_params()
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        let x = input.x;
        check_input("pca", &x, 2)?;
        let max_dim = x.ncols().min(x.nrows());
        if self.dim > max_dim {
            return Err(MethodError::Input { method: "pca", reason: format!("dim = {} exceeds min(N, D) = {max_dim}", self.dim) });
        }
        let basis = PcaBasis::fit(x).map_err(numerical("pca"))?;
        let mut f = Fitted::closed_form(basis.transform(x, self.dim));
        // The out-of-sample map `x -> (x - mu)^T V_d`: the training mean and the first d axes.
        let axes = basis.components.slice(s![.., ..self.dim]).to_owned();
        f.transform = Some(Arc::new(AffineMap::new("pca", basis.mean, axes)));
        Ok(f)
    }
}

pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: "pca",
        summary: "Principal component analysis: Y = (X - 1 mu^T) V_d with V_d the top-d eigenvectors of the sample covariance.",
        reference: "Pearson 1901; baseline of every table",
        version: 1,
        output: OutputKind::Embedding,
        needs_labels: false,
        accepts_init: false,
        inductive: true,
        randomised: false,
        params: Pca::schema(()),
        build: |p| declare::build::<Pca>("pca", (), p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_abs_diff_eq;
    use ndarray::{array, Array2};

    #[test]
    fn scores_have_the_covariance_eigenvalues_as_variances() {
        let x = array![[2.5, 2.4, 0.1], [0.5, 0.7, 0.3], [2.2, 2.9, 0.2], [1.9, 2.2, 0.5], [3.1, 3.0, 0.4], [2.3, 2.7, 0.1], [2.0, 1.6, 0.2], [1.0, 1.1, 0.6]];
        let y = Pca { dim: 2 }.fit(x.view(), 0).unwrap().into_embedding().unwrap();
        let basis = PcaBasis::fit(x.view()).unwrap();
        for j in 0..2 {
            let c = y.column(j);
            assert_abs_diff_eq!(c.sum(), 0.0, epsilon = 1e-12);
            assert_abs_diff_eq!(c.dot(&c) / 7.0, basis.variances[j], epsilon = 1e-12);
        }
        assert_abs_diff_eq!(y.column(0).dot(&y.column(1)), 0.0, epsilon = 1e-12);
    }

    #[test]
    fn rejects_too_large_dim_and_nan() {
        let x = Array2::<f64>::zeros((5, 2));
        assert!(Pca { dim: 3 }.fit(x.view(), 0).is_err());
        let mut x = Array2::<f64>::ones((5, 2));
        x[[2, 1]] = f64::NAN;
        let e = Pca { dim: 1 }.fit(x.view(), 0).unwrap_err().to_string();
        assert!(e.contains("sample 2, feature 1"), "{e}");
    }
}
