//! What an out-of-sample map is made of ([`TransformState`]): every [`Transform`] returns its
//! state, and a state read back from a file rebuilds the map after its shapes are checked. This is
//! how a fitted model is saved (`structdr embed --save-model`) and applied to new data later
//! (`structdr transform`) without refitting.
//!
//! The state names a kind of map, not a method: PCA and the random projection are both affine
//! maps `x -> (x - mu)^T W`, so a saved PCA model is rebuilt as an [`AffineMap`].

use super::{check_features, MethodError, Result, Transform};
use ndarray::{Array1, Array2, ArrayView2, Axis};

/// The numbers that define an out-of-sample map, serialisable (ndarray's serde form: shape and
/// row-major data).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TransformState {
    /// `x -> x` on `n_features` columns.
    Identity {
        /// The number of features of the training data.
        n_features: usize,
    },
    /// `x -> (x - mean)^T weights`: PCA (`weights` = the first d principal axes), Gaussian random
    /// projection (`weights` = `R / sqrt(d)`).
    Affine {
        /// The training mean `mu` (length D).
        mean: Array1<f64>,
        /// `W`, D x d.
        weights: Array2<f64>,
    },
    /// The Nystrom extension of Gaussian kernel PCA (see [`KpcaTransform`]).
    GaussianKernel {
        /// The training mean (length D); the training samples are stored centred by it.
        mean: Array1<f64>,
        /// The centred training samples, N x D.
        train: Array2<f64>,
        /// `1 / (2 sigma^2)`.
        inv_two_sigma_sq: f64,
        /// Row means of the uncentred training kernel (length N).
        row_means: Array1<f64>,
        /// Grand mean of the uncentred training kernel.
        total: f64,
        /// `Y Lambda^-1`, N x d.
        proj: Array2<f64>,
    },
}

impl TransformState {
    /// The kind's name as it is written in the state (`identity`, `affine`, `gaussian_kernel`).
    pub fn kind(&self) -> &'static str {
        match self {
            TransformState::Identity { .. } => "identity",
            TransformState::Affine { .. } => "affine",
            TransformState::GaussianKernel { .. } => "gaussian_kernel",
        }
    }

    /// The number of input features the map expects.
    pub fn n_features(&self) -> usize {
        match self {
            TransformState::Identity { n_features } => *n_features,
            TransformState::Affine { mean, .. } | TransformState::GaussianKernel { mean, .. } => mean.len(),
        }
    }

    /// Checks a state of `method` (the name its errors carry) before its map is rebuilt
    /// (`registry::rebuild_transform`: the registry knows the families whose types the states
    /// name; the api imports none). The shapes must agree and every number be finite, so a
    /// damaged or hand-edited state is refused here rather than panicking (or returning NaN) on
    /// the first transform.
    pub fn check(&self, method: &'static str) -> Result<()> {
        let bad = |reason: String| MethodError::Input { method, reason: format!("saved transform ({}): {reason}", self.kind()) };
        let finite1 = |a: &Array1<f64>, what: &str| if a.iter().all(|v| v.is_finite()) { Ok(()) } else { Err(bad(format!("{what} holds NaN or Inf"))) };
        let finite2 = |a: &Array2<f64>, what: &str| if a.iter().all(|v| v.is_finite()) { Ok(()) } else { Err(bad(format!("{what} holds NaN or Inf"))) };
        match self {
            TransformState::Identity { n_features } => {
                if *n_features == 0 {
                    return Err(bad("0 features".into()));
                }
                Ok(())
            }
            TransformState::Affine { mean, weights } => {
                if mean.is_empty() || weights.nrows() != mean.len() || weights.ncols() == 0 {
                    return Err(bad(format!(
                        "mean has {} entries, weights are {} x {} (expected D x d, D = the mean's length, d > 0)",
                        mean.len(),
                        weights.nrows(),
                        weights.ncols()
                    )));
                }
                finite1(mean, "mean")?;
                finite2(weights, "weights")?;
                Ok(())
            }
            TransformState::GaussianKernel { mean, train, inv_two_sigma_sq, row_means, total, proj } => {
                let (n, d) = train.dim();
                if mean.is_empty() || d != mean.len() || n == 0 || row_means.len() != n || proj.nrows() != n || proj.ncols() == 0 {
                    return Err(bad(format!(
                        "mean {}, train {n} x {d}, row_means {}, proj {} x {} (expected D, N x D, N, N x d)",
                        mean.len(),
                        row_means.len(),
                        proj.nrows(),
                        proj.ncols()
                    )));
                }
                if !(inv_two_sigma_sq.is_finite() && *inv_two_sigma_sq > 0.0 && total.is_finite()) {
                    return Err(bad(format!("inv_two_sigma_sq = {inv_two_sigma_sq} must be finite and > 0, total = {total} finite")));
                }
                finite1(mean, "mean")?;
                finite2(train, "train")?;
                finite1(row_means, "row_means")?;
                finite2(proj, "proj")?;
                Ok(())
            }
        }
    }
}

/// The affine map `x -> (x - mu)^T W` of a method: PCA's out-of-sample map, and the form any saved
/// affine map is rebuilt in.
#[derive(Debug, Clone)]
pub struct AffineMap {
    method: &'static str,
    mean: Array1<f64>,
    weights: Array2<f64>,
}

impl AffineMap {
    /// The map of `method` with mean `mean` (length D) and weights `weights` (D x d).
    pub fn new(method: &'static str, mean: Array1<f64>, weights: Array2<f64>) -> AffineMap {
        debug_assert_eq!(mean.len(), weights.nrows());
        AffineMap { method, mean, weights }
    }
}

impl Transform for AffineMap {
    fn transform(&self, x: ArrayView2<f64>) -> Result<Array2<f64>> {
        check_features(self.method, &x, self.mean.len())?;
        Ok((&x - &self.mean.view().insert_axis(Axis(0))).dot(&self.weights))
    }
    fn state(&self) -> TransformState {
        TransformState::Affine { mean: self.mean.clone(), weights: self.weights.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::FitInput;
    use crate::registry;
    use ndarray::Array2;

    /// Every inductive method's map survives a round trip through its state (JSON included): the
    /// rebuilt map gives the same numbers on new data.
    #[test]
    fn states_rebuild_the_same_map() {
        let x = Array2::from_shape_fn((30, 4), |(i, j)| ((i * 7 + j * 5) % 13) as f64 * 0.3 + (i as f64 * 0.1).sin() * j as f64);
        let new = Array2::from_shape_fn((6, 4), |(i, j)| (i as f64 - j as f64) * 0.7);
        for m in registry().iter().filter(|m| m.inductive) {
            let (_, e) = m.instantiate(&Default::default()).unwrap();
            let f = e.fit_with(&FitInput::new(x.view(), 4)).unwrap();
            let t = f.transform.expect("inductive");
            let json = serde_json::to_string(&t.state()).unwrap();
            let back: TransformState = serde_json::from_str(&json).unwrap();
            assert_eq!(back, t.state(), "{}", m.name);
            let rebuilt = registry::rebuild_transform(back, m.name).unwrap();
            let (a, b) = (t.transform(new.view()).unwrap(), rebuilt.transform(new.view()).unwrap());
            let err = (&a - &b).iter().fold(0.0f64, |acc, v| acc.max(v.abs()));
            assert!(err <= 1e-12 * a.iter().fold(1.0f64, |acc, v| acc.max(v.abs())), "{}: {err:e}", m.name);
        }
    }

    /// A state whose shapes disagree, or that holds NaN, is refused with the reason.
    #[test]
    fn inconsistent_states_are_refused() {
        let bad = TransformState::Affine { mean: Array1::zeros(3), weights: Array2::zeros((2, 2)) };
        let e = bad.check("pca").unwrap_err().to_string();
        assert!(e.contains("mean has 3 entries, weights are 2 x 2"), "{e}");
        let nan = TransformState::Affine { mean: Array1::from(vec![f64::NAN, 0.0]), weights: Array2::zeros((2, 1)) };
        assert!(nan.check("pca").unwrap_err().to_string().contains("NaN"));
        let k = TransformState::GaussianKernel {
            mean: Array1::zeros(2),
            train: Array2::zeros((4, 2)),
            inv_two_sigma_sq: -1.0,
            row_means: Array1::zeros(4),
            total: 0.0,
            proj: Array2::zeros((4, 1)),
        };
        assert!(k.check("kpca").unwrap_err().to_string().contains("inv_two_sigma_sq"));
    }
}
