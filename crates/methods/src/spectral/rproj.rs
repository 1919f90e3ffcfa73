//! Gaussian random projection (Johnson & Lindenstrauss 1984; Dasgupta & Gupta 2003): the
//! data-independent baseline of dimensionality reduction,
//!
//! `Y = (X - 1 mu^T) R / sqrt(d)`, `R` a D x d matrix of independent N(0, 1) entries,
//!
//! so that `E ||y_i - y_j||^2 = ||x_i - x_j||^2` (scikit-learn's `GaussianRandomProjection` up to
//! the centring, which changes no distance). `R` is drawn from the fit seed (Xoshiro256++,
//! standard normal by the ziggurat of `rand_distr`), so the method is deterministic for a seed; the
//! fit carries the map as its out-of-sample transform.
//!
//! This module is also the worked example of `docs/adding-a-method.md`; the test
//! `crates/runner/tests/adding_a_method.rs` checks that the page's code is this file's code.

use crate::api::declare::{self, declare_params, Declared};
use crate::api::info::{dim, MethodInfo};
use crate::api::{check_features, check_input, Embedder, FitInput, Fitted, OutputKind, ParamMap, Result, Transform, TransformState};
use ndarray::{Array1, Array2, ArrayView2, Axis};
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};
use std::sync::Arc;

declare_params! {
    /// Gaussian random projection to `dim` dimensions.
    #[derive(Debug, Clone)]
    pub struct RandomProjection {
        /// Target dimension d.
        pub dim: usize = dim(),
    }
}

/// The fitted map `x -> (x - mu)^T R / sqrt(d)`.
#[derive(Debug, Clone)]
pub struct RandomProjectionMap {
    mean: Array1<f64>,
    /// `R / sqrt(d)`, D x d.
    r: Array2<f64>,
}

impl Transform for RandomProjectionMap {
    fn transform(&self, x: ArrayView2<f64>) -> Result<Array2<f64>> {
        check_features("rproj", &x, self.mean.len())?;
        Ok((&x - &self.mean.view().insert_axis(Axis(0))).dot(&self.r))
    }
    fn state(&self) -> TransformState {
        TransformState::Affine { mean: self.mean.clone(), weights: self.r.clone() }
    }
}

impl Embedder for RandomProjection {
    fn name(&self) -> &'static str {
        "rproj"
    }
    fn info(&self) -> MethodInfo {
        info()
    }
    fn params(&self) -> ParamMap {
        self.to_params()
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        let x = input.x;
        check_input("rproj", &x, 2)?;
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(input.seed);
        let scale = 1.0 / (self.dim as f64).sqrt();
        let r = Array2::from_shape_simple_fn((x.ncols(), self.dim), || {
            let z: f64 = StandardNormal.sample(&mut rng);
            scale * z
        });
        let map = RandomProjectionMap { mean: x.mean_axis(Axis(0)).expect("N >= 2"), r };
        let mut fitted = Fitted::closed_form(map.transform(x)?);
        fitted.transform = Some(Arc::new(map));
        Ok(fitted)
    }
}

/// The registry entry.
pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: "rproj",
        summary: "Gaussian random projection: Y = (X - 1 mu^T) R / sqrt(d), R with independent N(0, 1) entries drawn from the seed.",
        reference: "Johnson & Lindenstrauss 1984; Dasgupta & Gupta 2003; scikit-learn GaussianRandomProjection",
        version: 1,
        output: OutputKind::Embedding,
        needs_labels: false,
        accepts_init: false,
        inductive: true,
        randomised: true,
        params: RandomProjection::schema(()),
        build: |p| declare::build::<RandomProjection>("rproj", (), p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    /// Squared distances are preserved in expectation: averaged over 400 draws of R, the ratio
    /// ||y_i - y_j||^2 / ||x_i - x_j||^2 is 1 within its standard error (the ratio of one draw is
    /// chi^2_d / d, variance 2 / d), and the same seed gives the same R.
    #[test]
    fn distances_are_preserved_in_expectation() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(3);
        let x = Array2::from_shape_fn((6, 40), |_| rng.gen::<f64>());
        let d = 4;
        let draws = 400;
        let mut sum = 0.0;
        for seed in 0..draws {
            let y = RandomProjection { dim: d }.fit(x.view(), seed).unwrap().into_embedding().unwrap();
            let dx: f64 = (&x.row(0) - &x.row(5)).mapv(|v| v * v).sum();
            let dy: f64 = (&y.row(0) - &y.row(5)).mapv(|v| v * v).sum();
            sum += dy / dx;
        }
        let mean = sum / draws as f64;
        let se = (2.0 / d as f64 / draws as f64).sqrt();
        assert!((mean - 1.0).abs() < 4.0 * se, "mean ratio {mean}, standard error {se}");
        let a = RandomProjection { dim: d }.fit(x.view(), 9).unwrap().into_embedding().unwrap();
        let b = RandomProjection { dim: d }.fit(x.view(), 9).unwrap().into_embedding().unwrap();
        assert_eq!(a, b);
    }
}
