//! Kernel PCA with a Gaussian kernel (Schölkopf, Smola & Müller 1998).
//!
//! With `m` the median pairwise distance of the samples (over pairs `i < j`; for an even count the
//! mean of the two middle values, as `numpy.median`) and `b` the `bandwidth` parameter,
//!
//! `K_ij = exp(-||x_i - x_j||^2 / (2 (b m)^2))`, `Kc = H K H` with `H = I - 1 1^T / N`,
//! `Kc = V Lambda V^T` (descending), and the embedding `Y = V_d diag(sqrt(lambda_d))`: the
//! projections of the training points on the first d kernel principal axes (scikit-learn's
//! `KernelPCA(kernel="rbf", gamma = 1 / (2 (b m)^2)).fit_transform`). Eigenvector signs are
//! canonicalised (largest |entry| positive).
//!
//! `m` is exact (selection over the N(N-1)/2 pair distances) for N <= 3000; above that it is the
//! median over [`MEDIAN_PAIRS`] pairs `(i, j)`, `i != j`, drawn uniformly with a fixed-seed
//! Xoshiro256++ ([`MEDIAN_SEED`]), so the method stays a deterministic function of the data.
//!
//! Cost: O(N^2 D) for the distances, O(N^3) for the eigenproblem (`dsyevr` tridiagonalisation)
//! and N^2 doubles of memory (200 MB at N = 5000).

use crate::api::declare::{self, declare_params, Declared};
use crate::api::info::{dim, float, MethodInfo};
use crate::api::OutputKind;
use crate::api::{check_features, check_input, numerics, Embedder, FitInput, Fitted, MethodError, ParamMap, Result, Transform, TransformState};
use ndarray::{ArrayView2, Axis};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::sync::Arc;
use structdr_linalg::sq_dists;
use structdr_numerics::spectral::kernel_pca;

/// Above this many samples the median distance is estimated from [`MEDIAN_PAIRS`] sampled pairs.
pub const MEDIAN_EXACT_MAX_N: usize = 3000;
/// Number of sampled pairs for the median when N > [`MEDIAN_EXACT_MAX_N`].
pub const MEDIAN_PAIRS: usize = 1 << 20;
/// Seed of the pair sample (fixed: the median does not depend on the fit seed).
pub const MEDIAN_SEED: u64 = 0x6b70_6361_6d65_6469;

declare_params! {
    /// Gaussian kernel PCA to `dim` dimensions, kernel width `bandwidth x` the median pairwise distance.
    #[derive(Debug, Clone)]
    pub struct KernelPca {
        /// Target dimension d (`d < N`).
        pub dim: usize = dim(),
        /// `b > 0`: the kernel width is `sigma = b m` with `m` the median pairwise distance.
        pub bandwidth: f64 = float("bandwidth", 1e-6, 1e6, 1.0, "kernel width as a multiple b of the median pairwise distance m: k(x, y) = exp(-||x - y||^2 / (2 (b m)^2)) (m exact for N <= 3000, else from 2^20 fixed-seed sampled pairs)"),
    }
}

/// Median of the distances `sqrt(sq[i, j])` over pairs `i < j` (exact for N <= 3000, otherwise
/// over a fixed-seed sample of pairs; see the module doc). `sq` is the N x N squared-distance matrix.
pub fn median_pairwise_distance(sq: ArrayView2<f64>) -> f64 {
    let n = sq.nrows();
    let mut vals: Vec<f64> = if n <= MEDIAN_EXACT_MAX_N {
        let mut v = Vec::with_capacity(n * (n.saturating_sub(1)) / 2);
        for i in 0..n {
            for j in (i + 1)..n {
                v.push(sq[[i, j]]);
            }
        }
        v
    } else {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(MEDIAN_SEED);
        let mut v = Vec::with_capacity(MEDIAN_PAIRS);
        while v.len() < MEDIAN_PAIRS {
            let (i, j) = (rng.gen_range(0..n), rng.gen_range(0..n));
            if i != j {
                v.push(sq[[i, j]]);
            }
        }
        v
    };
    if vals.is_empty() {
        return 0.0;
    }
    let len = vals.len();
    let mid = len / 2;
    let (_, &mut upper, _) = vals.select_nth_unstable_by(mid, f64::total_cmp);
    if len % 2 == 1 {
        upper.sqrt()
    } else {
        // lower middle = largest of the values before `mid`
        let lower = vals[..mid].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        0.5 * (lower.sqrt() + upper.sqrt())
    }
}

/// The out-of-sample map of [`KernelPca`] (Nystrom extension, Schölkopf et al. 1998 eq. 5):
/// `k(x) = exp(-||x - x_i||^2 / (2 sigma^2))` against the training samples, centred with the
/// training kernel's row means `r` and grand mean `t`, `kc(x)_i = k(x)_i - mean(k(x)) - r_i + t`,
/// projected as `y(x) = kc(x)^T Y Lambda^-1` (with `Y = V Lambda^{1/2}` this is
/// `kc(x)^T V Lambda^{-1/2}`; on a training sample it returns that sample's embedding).
#[derive(Debug, Clone)]
pub struct KpcaTransform {
    mean: ndarray::Array1<f64>,
    train: ndarray::Array2<f64>,
    inv_two_sigma_sq: f64,
    row_means: ndarray::Array1<f64>,
    total: f64,
    proj: ndarray::Array2<f64>,
}

impl Transform for KpcaTransform {
    fn transform(&self, x: ArrayView2<f64>) -> Result<ndarray::Array2<f64>> {
        check_features("kpca", &x, self.mean.len())?;
        let xc = &x - &self.mean.view().insert_axis(Axis(0));
        let mut k = structdr_linalg::sq_dists_between(xc.view(), self.train.view());
        k.mapv_inplace(|d2| (-d2 * self.inv_two_sigma_sq).exp());
        for mut row in k.rows_mut() {
            let m = row.mean().unwrap_or(0.0);
            for (v, r) in row.iter_mut().zip(self.row_means.iter()) {
                *v = *v - m - r + self.total;
            }
        }
        Ok(k.dot(&self.proj))
    }
    fn state(&self) -> TransformState {
        TransformState::GaussianKernel {
            mean: self.mean.clone(),
            train: self.train.clone(),
            inv_two_sigma_sq: self.inv_two_sigma_sq,
            row_means: self.row_means.clone(),
            total: self.total,
            proj: self.proj.clone(),
        }
    }
}

impl KpcaTransform {
    /// The map from its parts (the fields of [`TransformState::GaussianKernel`], whose shapes
    /// [`TransformState::check`] checks before `registry::rebuild_transform` calls this).
    pub(crate) fn from_parts(
        mean: ndarray::Array1<f64>,
        train: ndarray::Array2<f64>,
        inv_two_sigma_sq: f64,
        row_means: ndarray::Array1<f64>,
        total: f64,
        proj: ndarray::Array2<f64>,
    ) -> KpcaTransform {
        KpcaTransform { mean, train, inv_two_sigma_sq, row_means, total, proj }
    }
}

impl Embedder for KernelPca {
    fn name(&self) -> &'static str {
        "kpca"
    }
    fn info(&self) -> MethodInfo {
        info()
    }
    fn params(&self) -> ParamMap {
        self.to_params()
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        let x = input.x;
        check_input("kpca", &x, 2)?;
        let n = x.nrows();
        crate::api::check_dense_size("kpca", n)?;
        if self.dim >= n {
            return Err(MethodError::Input { method: "kpca", reason: format!("dim = {} must be < N = {n}", self.dim) });
        }
        let mean = x.mean_axis(Axis(0)).expect("n > 0");
        let xc = &x - &mean.view().insert_axis(Axis(0));
        let mut k = sq_dists(xc.view());
        let m = median_pairwise_distance(k.view());
        if m <= 0.0 {
            return Err(MethodError::Input {
                method: "kpca",
                reason: "the median pairwise distance is 0 (at least half of the pairs are duplicates): the kernel width is undefined".into(),
            });
        }
        let sigma = self.bandwidth * m;
        let inv = 1.0 / (2.0 * sigma * sigma);
        k.mapv_inplace(|d2| (-d2 * inv).exp());
        // Row means and grand mean of the uncentred kernel: the Nystrom extension centres a new
        // sample's kernel row with them.
        let row_means = k.mean_axis(Axis(1)).expect("n > 0");
        let total = row_means.mean().expect("n > 0");
        let (y, values) = kernel_pca(k, self.dim).map_err(numerics("kpca"))?;
        let mut f = Fitted::closed_form(y.clone());
        if values.iter().all(|&l| l > 0.0) {
            let scale = values.mapv(|l| 1.0 / l);
            let proj = &y * &scale.view().insert_axis(Axis(0));
            f.transform = Some(Arc::new(KpcaTransform::from_parts(mean, xc.to_owned(), inv, row_means, total, proj)));
        } else {
            f.notes.push("no out-of-sample transform: a kept eigenvalue of the centred kernel is not positive".into());
        }
        f.notes.push(format!(
            "median pairwise distance m = {m:.6e}{}; sigma = bandwidth * m = {sigma:.6e}; top eigenvalues of the centred kernel: {:?}",
            if n > MEDIAN_EXACT_MAX_N { format!(" (estimated from {MEDIAN_PAIRS} sampled pairs)") } else { String::new() },
            values.to_vec()
        ));
        Ok(f)
    }
}

pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: "kpca",
        summary:
            "Gaussian kernel PCA: K_ij = exp(-||x_i - x_j||^2 / (2 (b m)^2)) with m the median pairwise distance, Kc = H K H, Y = V_d diag(sqrt(lambda_d)).",
        reference: "Schölkopf, Smola & Müller 1998; drtoolbox KernelPCA ('gauss'); scikit-learn KernelPCA(kernel='rbf')",
        version: 1,
        output: OutputKind::Embedding,
        needs_labels: false,
        accepts_init: false,
        inductive: true,
        randomised: false,
        params: KernelPca::schema(()),
        build: |p| declare::build::<KernelPca>("kpca", (), p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spectral::pca::Pca;
    use ndarray::array;
    use ndarray::Array2;
    use rand::Rng;
    use structdr_numerics::spectral::kernel_pca;

    #[test]
    fn linear_kernel_gives_pca_scores() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let x = Array2::from_shape_fn((40, 5), |(_, j)| rng.gen_range(-1.0..1.0) * (j + 1) as f64);
        let (y, _) = kernel_pca(x.dot(&x.t()), 3).unwrap();
        let p = Pca { dim: 3 }.fit(x.view(), 0).unwrap().into_embedding().unwrap();
        for c in 0..3 {
            let s = y.column(c).dot(&p.column(c)).signum();
            let diff = (&y.column(c) * s - p.column(c)).mapv(f64::abs).fold(0.0f64, |a, &b| a.max(b));
            assert!(diff < 1e-8, "column {c}: max diff {diff}");
        }
    }

    #[test]
    fn median_matches_the_definition() {
        // distances 1, 2, 3 (points 0, 1, 3 on a line): median 2
        let x = array![[0.0], [1.0], [3.0]];
        assert_eq!(median_pairwise_distance(sq_dists(x.view()).view()), 2.0);
        // four points 0, 1, 2, 4: distances 1,2,4,1,3,2 -> sorted 1,1,2,2,3,4 -> median 2
        let x = array![[0.0], [1.0], [2.0], [4.0]];
        assert_eq!(median_pairwise_distance(sq_dists(x.view()).view()), 2.0);
        // 0, 1, 3, 7: 1,3,7,2,6,4 -> 1,2,3,4,6,7 -> (3+4)/2
        let x = array![[0.0], [1.0], [3.0], [7.0]];
        assert_eq!(median_pairwise_distance(sq_dists(x.view()).view()), 3.5);
    }

    #[test]
    fn errors_on_duplicates_and_large_dim() {
        // one point repeated: refused before the kernel as degenerate data
        let x = Array2::<f64>::ones((6, 2));
        assert!(KernelPca { dim: 2, bandwidth: 1.0 }.fit(x.view(), 0).unwrap_err().to_string().contains("degenerate: constant data"));
        // most pairs duplicates: the median distance is 0 and the bandwidth undefined
        let mut x = Array2::<f64>::ones((6, 2));
        x[[5, 0]] = 3.0;
        assert!(KernelPca { dim: 2, bandwidth: 1.0 }.fit(x.view(), 0).unwrap_err().to_string().contains("median"));
        let x = array![[0.0], [1.0], [3.0]];
        assert!(KernelPca { dim: 3, bandwidth: 1.0 }.fit(x.view(), 0).is_err());
    }
}
