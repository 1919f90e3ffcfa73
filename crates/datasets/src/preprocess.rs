//! Preprocessing of feature matrices (samples in rows) and declarative pipelines of [`Step`]s.
//!
//! - [`zscore`]: `z_ij = (x_ij - mean_j) / std_j` (sample std, `N - 1`, as MATLAB's `zscore`).
//! - [`minmax01`]: `(x_ij - min_j) / (max_j - min_j)`.
//! - [`pca_energy`] / [`pca_dim`]: PCA scores on the top-d axes (d from the energy rule or given).
//! - [`gaussian_kernel`]: `K_ij = exp(-||x_i - x_j||^2 / D)` (000: `exp(-||y_i - y_j||^2 / D)`).
//!
//! Constant features (max == min) become 0 under z-scoring and min-max scaling and are reported,
//! never NaN. NaN / infinite or empty input is a typed error.

use crate::{sha256_hex, Dataset};
use ndarray::{Array2, Axis};
use serde::{Deserialize, Serialize};
use structdr_linalg::{energy_dim, sq_dists, EnergyRule, LinalgError, Pca};

/// Errors of the preprocessing functions.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum PreprocessError {
    /// No samples or no features.
    #[error("{what}: empty input ({rows} x {cols})")]
    Empty {
        /// Name of the function that rejected the input.
        what: &'static str,
        /// Number of samples (rows) of the input.
        rows: usize,
        /// Number of features (columns) of the input.
        cols: usize,
    },
    /// A NaN or infinite entry (first one found, row-major).
    #[error("{what}: non-finite value {value} at row {row}, column {col}")]
    NotFinite {
        /// Name of the function that rejected the input.
        what: &'static str,
        /// Row (sample index) of the offending entry.
        row: usize,
        /// Column (feature index) of the offending entry.
        col: usize,
        /// The non-finite value found (NaN or +/- infinity).
        value: f64,
    },
    /// A parameter out of range.
    #[error("{what}: {reason}")]
    BadParam {
        /// Name of the function (or step) whose parameter was rejected.
        what: &'static str,
        /// Human-readable explanation of the allowed range.
        reason: String,
    },
    /// The linear algebra failed.
    #[error(transparent)]
    Linalg(#[from] LinalgError),
}

type Result<T> = std::result::Result<T, PreprocessError>;

fn check(x: &Array2<f64>, what: &'static str) -> Result<()> {
    let (rows, cols) = x.dim();
    if rows == 0 || cols == 0 {
        return Err(PreprocessError::Empty { what, rows, cols });
    }
    if let Some(((row, col), &value)) = x.indexed_iter().find(|(_, v)| !v.is_finite()) {
        return Err(PreprocessError::NotFinite { what, row, col, value });
    }
    Ok(())
}

/// Per-feature z-score `z_ij = (x_ij - mean_j) / s_j` with the sample standard deviation
/// `s_j = sqrt(sum_i (x_ij - mean_j)^2 / (N - 1))` (MATLAB `zscore`; `N = 1` counts as constant).
/// Constant features (`max_j == min_j`) are set to 0; their indices are returned.
pub fn zscore(x: &Array2<f64>) -> Result<(Array2<f64>, Vec<usize>)> {
    let n = x.nrows();
    per_feature(x, "zscore", |col, _, _| {
        let mean = col.sum() / n as f64;
        let sd = (col.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1) as f64).sqrt();
        col.mapv_inplace(|v| (v - mean) / sd);
    })
}

/// Applies `scale(column, min, max)` to every non-constant feature of a copy of `x`; constant
/// features (`max == min`) become 0 and their indices are returned.
fn per_feature(x: &Array2<f64>, what: &'static str, scale: impl Fn(&mut ndarray::ArrayViewMut1<f64>, f64, f64)) -> Result<(Array2<f64>, Vec<usize>)> {
    check(x, what)?;
    let mut z = x.clone();
    let mut constant = Vec::new();
    for (j, mut col) in z.axis_iter_mut(Axis(1)).enumerate() {
        let (lo, hi) = col.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
        if lo == hi {
            col.fill(0.0);
            constant.push(j);
        } else {
            scale(&mut col, lo, hi);
        }
    }
    Ok((z, constant))
}

/// Per-feature scaling to [0, 1]: `(x_ij - min_j) / (max_j - min_j)`. Constant features become 0;
/// their indices are returned.
pub fn minmax01(x: &Array2<f64>) -> Result<(Array2<f64>, Vec<usize>)> {
    per_feature(x, "minmax01", |col, lo, hi| col.mapv_inplace(|v| ((v - lo) / (hi - lo)).clamp(0.0, 1.0)))
}

/// What a PCA step resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PcaRecord {
    /// Number of principal components kept.
    pub d: usize,
    /// Energy threshold `p` (only for [`pca_energy`]).
    pub threshold: Option<f64>,
    /// Comparison rule (only for [`pca_energy`]).
    pub rule: Option<EnergyRule>,
    /// Number of input features D.
    pub total_features: usize,
    /// Fraction of the total variance kept, `sum_{j<=d} lambda_j / sum_j lambda_j`.
    pub energy: f64,
}

fn kept_energy(p: &Pca, d: usize) -> f64 {
    let total: f64 = p.variances.iter().map(|v| v.max(0.0)).sum();
    if total <= 0.0 {
        return 1.0;
    }
    p.variances.iter().take(d).map(|v| v.max(0.0)).sum::<f64>() / total
}

/// PCA scores `(X - 1 mu^T) V_d` where `d` is the smallest number of axes whose covariance
/// eigenvalues reach the fraction `threshold` of the total, `sum_{j<=d} lambda_j / sum_j lambda_j
/// >= p` ([`EnergyRule::Ge`], drtoolbox) or `> p` ([`EnergyRule::Gt`], scikit-learn), via
/// [`structdr_linalg::energy_dim`]. `threshold` must lie in (0, 1].
pub fn pca_energy(x: &Array2<f64>, threshold: f64, rule: EnergyRule) -> Result<(Array2<f64>, PcaRecord)> {
    check(x, "pca_energy")?;
    if !(threshold > 0.0 && threshold <= 1.0) {
        return Err(PreprocessError::BadParam { what: "pca_energy", reason: format!("threshold {threshold} must lie in (0, 1]") });
    }
    let p = Pca::fit(x.view())?;
    // `Pca::energy_dim` needs contiguous variances (it panics on the reversed view `fit` makes),
    // so go through the free function on a copy.
    let d = energy_dim(&p.variances.to_vec(), threshold, rule);
    let rec = PcaRecord { d, threshold: Some(threshold), rule: Some(rule), total_features: x.ncols(), energy: kept_energy(&p, d) };
    Ok((p.transform(x.view(), d), rec))
}

/// PCA scores `(X - 1 mu^T) V_d` on the top `d` axes; `1 <= d <= D`, and `d` is capped at
/// `min(N, D)` (the number of axes PCA can return; the record holds the `d` used).
pub fn pca_dim(x: &Array2<f64>, d: usize) -> Result<(Array2<f64>, PcaRecord)> {
    check(x, "pca_dim")?;
    if d == 0 || d > x.ncols() {
        return Err(PreprocessError::BadParam { what: "pca_dim", reason: format!("d = {d} must lie in [1, {}]", x.ncols()) });
    }
    let p = Pca::fit(x.view())?;
    let d = d.min(p.components.ncols());
    let rec = PcaRecord { d, threshold: None, rule: None, total_features: x.ncols(), energy: kept_energy(&p, d) };
    Ok((p.transform(x.view(), d), rec))
}

/// Gaussian kernel matrix `K_ij = exp(-||x_i - x_j||^2 / b)` with `b = bandwidth_d`, by default
/// the number of features D (000: `exp(-||y_i - y_j||^2 / D)`); distances from
/// [`structdr_linalg::sq_dists`], so `K` is symmetric with unit diagonal.
pub fn gaussian_kernel(x: &Array2<f64>, bandwidth_d: Option<f64>) -> Result<Array2<f64>> {
    check(x, "gaussian_kernel")?;
    let b = bandwidth_d.unwrap_or(x.ncols() as f64);
    if !(b.is_finite() && b > 0.0) {
        return Err(PreprocessError::BadParam { what: "gaussian_kernel", reason: format!("bandwidth {b} must be finite and > 0") });
    }
    let mut k = sq_dists(x.view());
    k.mapv_inplace(|d2| (-d2 / b).exp());
    Ok(k)
}

fn default_threshold() -> f64 {
    0.95
}

fn one() -> usize {
    1
}

impl Step {
    /// The parameters of an `ink_points` step.
    fn ink_params(&self) -> Option<crate::ink::InkParams> {
        match *self {
            Step::InkPoints { sample, width, height, order, threshold, upsample } => {
                Some(crate::ink::InkParams { sample, width, height, order, threshold, upsample })
            }
            _ => None,
        }
    }
}

/// One preprocessing step of a spec, e.g. in TOML `{ op = "pca_energy", threshold = 0.95 }`.
/// Unknown `op`s and unknown fields (also on `zscore` / `minmax`) are rejected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields, from = "StepRepr")]
pub enum Step {
    /// [`zscore`].
    Zscore,
    /// [`minmax01`].
    Minmax,
    /// [`pca_energy`] with `threshold` (default 0.95) and `rule` (default `ge`).
    PcaEnergy {
        /// Fraction of the total variance to keep, in (0, 1].
        #[serde(default = "default_threshold")]
        threshold: f64,
        /// Whether the kept fraction must reach (`ge`) or exceed (`gt`) the threshold.
        #[serde(default)]
        rule: EnergyRule,
    },
    /// [`pca_dim`].
    PcaDim {
        /// Number of principal components to keep, `1 <= d <= D`.
        d: usize,
    },
    /// [`gaussian_kernel`]; `bandwidth` defaults to the number of features.
    GaussianKernel {
        /// Kernel bandwidth `b` in `exp(-||x_i - x_j||^2 / b)`; `None` means the number of features D.
        #[serde(default)]
        bandwidth: Option<f64>,
    },
    /// [`select_labels`]: keep only the samples whose label is listed (e.g. one COIL20 object).
    SelectLabels {
        /// Labels whose samples are kept.
        labels: Vec<i64>,
    },
    /// [`first_rows`]: keep the first `n` samples (e.g. the 300 tree points of `tree_300.mat`
    /// without the four extra points stored after them).
    FirstRows {
        /// Number of samples kept, `1 <= n <= N`.
        n: usize,
    },
    /// [`crate::ink::ink_points`]: one image of the set (`sample`, a `width x height` grid laid out
    /// `order`) as the 2-D points of its pixels `>= threshold`, after an optional bilinear
    /// `upsample` (character skeletons, 004 §6.6).
    InkPoints {
        /// 0-based row holding the image.
        sample: usize,
        /// Image width.
        width: usize,
        /// Image height.
        height: usize,
        /// `row_major` (default) or `column_major`.
        #[serde(default)]
        order: crate::ink::PixelOrder,
        /// Ink when the pixel value is `>= threshold`.
        threshold: f64,
        /// Integer bilinear refinement factor (default 1: none).
        #[serde(default = "one")]
        upsample: usize,
    },
    /// [`crate::synthetic::append_noise_features`]: append `count` i.i.d. `U[0,1)` features drawn
    /// from `seed` (001 §V: two moons + 1000 noise features).
    NoiseFeatures {
        /// Number of noise features appended as new columns.
        count: usize,
        /// Seed of the random generator drawing the noise.
        seed: u64,
    },
    /// [`crate::synthetic::add_uniform_noise`]: `x_ij <- x_ij + amplitude u_ij`,
    /// `u_ij ~ U[0,1)` i.i.d. from `seed` (002 §4.3.3: noise from `U[0, rho]` on every pixel of
    /// the teapot images).
    UniformNoise {
        /// The noise bound rho (finite, >= 0; 0 leaves the data unchanged).
        amplitude: f64,
        /// Seed of the random generator drawing the noise.
        seed: u64,
    },
}

impl Step {
    /// Checks the step's own parameters (those that do not depend on the data): `threshold` in
    /// (0, 1], `d >= 1`, a finite positive `bandwidth`, a non-empty label list, `1 <= count <=
    /// 1e6` noise features, a finite noise amplitude >= 0. What depends on the data (`d <= D`, labels present) is checked when
    /// the step is applied.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &'static str, reason: String| Err(PreprocessError::BadParam { what, reason });
        match self {
            Step::Zscore | Step::Minmax => Ok(()),
            Step::PcaEnergy { threshold, .. } if !(*threshold > 0.0 && *threshold <= 1.0) => {
                bad("pca_energy", format!("threshold must be in (0, 1], got {threshold}"))
            }
            Step::PcaDim { d: 0 } => bad("pca_dim", "d must be >= 1".into()),
            Step::GaussianKernel { bandwidth: Some(b) } if !(b.is_finite() && *b > 0.0) => {
                bad("gaussian_kernel", format!("bandwidth must be finite and > 0, got {b}"))
            }
            Step::SelectLabels { labels } if labels.is_empty() => bad("select_labels", "labels is empty".into()),
            Step::FirstRows { n: 0 } => bad("first_rows", "n = 0 keeps no sample".into()),
            Step::InkPoints { .. } => self.ink_params().expect("ink_points").validate().or_else(|reason| bad("ink_points", reason)),
            Step::NoiseFeatures { count, .. } if *count == 0 || *count > 1_000_000 => bad("noise_features", format!("count must be in [1, 1e6], got {count}")),
            Step::UniformNoise { amplitude, .. } if !(amplitude.is_finite() && *amplitude >= 0.0) => {
                bad("uniform_noise", format!("amplitude must be finite and >= 0, got {amplitude}"))
            }
            _ => Ok(()),
        }
    }
}

/// Keeps the samples of `ds` whose label is in `labels`, in their original order (labels, `t`
/// and the checksum follow). Errors when the set is unlabelled or when a listed label is not a
/// label of the set ([`missing_labels`]): a misspelt label would silently select fewer classes.
pub fn select_labels(ds: &Dataset, labels: &[i64]) -> Result<Dataset> {
    let Some(y) = &ds.labels else {
        return Err(PreprocessError::BadParam { what: "select_labels", reason: format!("data set '{}' has no labels", ds.name) });
    };
    missing_labels(&ds.name, y, labels)?;
    let keep: Vec<usize> = (0..y.len()).filter(|&i| labels.contains(&y[i])).collect();
    let mut out = ds.clone();
    out.x = ds.x.select(ndarray::Axis(0), &keep);
    out.labels = Some(keep.iter().map(|&i| y[i]).collect());
    out.t = ds.t.as_ref().map(|t| keep.iter().map(|&i| t[i]).collect());
    Ok(out)
}

/// The first `n` samples of `ds` (rows, labels and `t` alike); `Err` unless `1 <= n <= N`.
pub fn first_rows(ds: &Dataset, n: usize) -> Result<Dataset> {
    let total = ds.x.nrows();
    if n == 0 || n > total {
        return Err(PreprocessError::BadParam { what: "first_rows", reason: format!("n = {n} must be in [1, N] = [1, {total}] for data set '{}'", ds.name) });
    }
    let mut out = ds.clone();
    out.x = ds.x.slice(ndarray::s![..n, ..]).to_owned();
    out.labels = ds.labels.as_ref().map(|y| y[..n].to_vec());
    out.t = ds.t.as_ref().map(|t| t[..n].to_vec());
    Ok(out)
}

/// `Err` naming every label of `wanted` that no sample of the set `name` (labels `y`) has, with
/// the labels it does have (the first 20); the check of [`select_labels`], also run by
/// `structdr check` before anything is computed.
pub fn missing_labels(name: &str, y: &[i64], wanted: &[i64]) -> Result<()> {
    let have: std::collections::BTreeSet<i64> = y.iter().copied().collect();
    let missing: Vec<i64> = wanted.iter().copied().filter(|l| !have.contains(l)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let shown: Vec<String> = have.iter().take(20).map(|l| l.to_string()).collect();
    Err(PreprocessError::BadParam {
        what: "select_labels",
        reason: format!(
            "label{} {} {} not among the labels of '{name}' ({}{})",
            if missing.len() == 1 { "" } else { "s" },
            missing.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(", "),
            if missing.len() == 1 { "is" } else { "are" },
            shown.join(", "),
            if have.len() > 20 { ", ..." } else { "" }
        ),
    })
}

/// Deserialisation form of [`Step`]: serde ignores unknown fields on unit variants of an
/// internally tagged enum, so `zscore` / `minmax` are empty struct variants here.
#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
enum StepRepr {
    Zscore {},
    Minmax {},
    PcaEnergy {
        #[serde(default = "default_threshold")]
        threshold: f64,
        #[serde(default)]
        rule: EnergyRule,
    },
    PcaDim {
        d: usize,
    },
    GaussianKernel {
        #[serde(default)]
        bandwidth: Option<f64>,
    },
    SelectLabels {
        labels: Vec<i64>,
    },
    FirstRows {
        n: usize,
    },
    InkPoints {
        sample: usize,
        width: usize,
        height: usize,
        #[serde(default)]
        order: crate::ink::PixelOrder,
        threshold: f64,
        #[serde(default = "one")]
        upsample: usize,
    },
    NoiseFeatures {
        count: usize,
        seed: u64,
    },
    UniformNoise {
        amplitude: f64,
        seed: u64,
    },
}

impl From<StepRepr> for Step {
    fn from(r: StepRepr) -> Step {
        match r {
            StepRepr::Zscore {} => Step::Zscore,
            StepRepr::Minmax {} => Step::Minmax,
            StepRepr::PcaEnergy { threshold, rule } => Step::PcaEnergy { threshold, rule },
            StepRepr::PcaDim { d } => Step::PcaDim { d },
            StepRepr::GaussianKernel { bandwidth } => Step::GaussianKernel { bandwidth },
            StepRepr::SelectLabels { labels } => Step::SelectLabels { labels },
            StepRepr::FirstRows { n } => Step::FirstRows { n },
            StepRepr::InkPoints { sample, width, height, order, threshold, upsample } => Step::InkPoints { sample, width, height, order, threshold, upsample },
            StepRepr::NoiseFeatures { count, seed } => Step::NoiseFeatures { count, seed },
            StepRepr::UniformNoise { amplitude, seed } => Step::UniformNoise { amplitude, seed },
        }
    }
}

/// What one applied step did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepRecord {
    /// The step as given.
    pub step: Step,
    /// Shape before the step (N, D).
    pub input_shape: (usize, usize),
    /// Shape after the step.
    pub output_shape: (usize, usize),
    /// Constant features set to 0 (z-score, min-max).
    pub constant_features: Vec<usize>,
    /// Resolved PCA dimension and kept energy (PCA steps).
    pub pca: Option<PcaRecord>,
    /// Bandwidth used (kernel step).
    pub bandwidth: Option<f64>,
}

/// Applies `steps` in order to `ds.x`. Labels, `t` and the name are kept; after each step the
/// checksum becomes `sha256(old checksum | JSON of the step)`, so cached results keyed by the
/// checksum distinguish pipelines.
pub fn apply(steps: &[Step], mut ds: Dataset) -> Result<(Dataset, Vec<StepRecord>)> {
    let mut records = Vec::with_capacity(steps.len());
    for step in steps {
        step.validate()?;
        let input_shape = ds.x.dim();
        let mut rec = StepRecord { step: step.clone(), input_shape, output_shape: input_shape, constant_features: vec![], pca: None, bandwidth: None };
        let x = match step {
            Step::Zscore => {
                let (z, c) = zscore(&ds.x)?;
                rec.constant_features = c;
                z
            }
            Step::Minmax => {
                let (z, c) = minmax01(&ds.x)?;
                rec.constant_features = c;
                z
            }
            Step::PcaEnergy { threshold, rule } => {
                let (z, p) = pca_energy(&ds.x, *threshold, *rule)?;
                rec.pca = Some(p);
                z
            }
            Step::PcaDim { d } => {
                let (z, p) = pca_dim(&ds.x, *d)?;
                rec.pca = Some(p);
                z
            }
            Step::GaussianKernel { bandwidth } => {
                rec.bandwidth = Some(bandwidth.unwrap_or(ds.x.ncols() as f64));
                gaussian_kernel(&ds.x, *bandwidth)?
            }
            Step::SelectLabels { labels } => {
                let sub = select_labels(&ds, labels)?;
                ds.labels = sub.labels;
                ds.t = sub.t;
                sub.x
            }
            Step::FirstRows { n } => {
                let sub = first_rows(&ds, *n)?;
                ds.labels = sub.labels;
                ds.t = sub.t;
                sub.x
            }
            Step::InkPoints { .. } => {
                let sub = crate::ink::ink_points(&ds, &step.ink_params().expect("ink_points"))
                    .map_err(|reason| PreprocessError::BadParam { what: "ink_points", reason })?;
                ds.labels = sub.labels;
                ds.t = sub.t;
                sub.x
            }
            Step::NoiseFeatures { count, seed } => {
                let with = crate::synthetic::append_noise_features(ds.clone(), *count, *seed)
                    .map_err(|e| PreprocessError::BadParam { what: "noise_features", reason: e.to_string() })?;
                ds.note = with.note;
                with.x
            }
            Step::UniformNoise { amplitude, seed } => {
                let with = crate::synthetic::add_uniform_noise(ds.clone(), *amplitude, *seed)
                    .map_err(|e| PreprocessError::BadParam { what: "uniform_noise", reason: e.to_string() })?;
                ds.note = with.note;
                with.x
            }
        };
        ds.x = x;
        rec.output_shape = ds.x.dim();
        let json = serde_json::to_string(step).map_err(|e| PreprocessError::BadParam { what: "apply", reason: e.to_string() })?;
        ds.checksum = sha256_hex(format!("{}|{json}", ds.checksum).as_bytes());
        records.push(rec);
    }
    Ok((ds, records))
}

#[cfg(test)]
mod select_tests {
    use super::*;

    /// Four one-feature samples with labels 1, 2, 1, 3 and t = 0.1 .. 0.4.
    fn four_samples() -> Dataset {
        Dataset {
            name: "t".into(),
            x: ndarray::array![[0.0], [1.0], [2.0], [3.0]],
            labels: Some(vec![1, 2, 1, 3]),
            t: Some(vec![0.1, 0.2, 0.3, 0.4]),
            checksum: "c".into(),
            note: None,
        }
    }

    #[test]
    fn first_rows_keeps_the_leading_samples() {
        let ds = four_samples();
        let (out, rec) = apply(&[Step::FirstRows { n: 3 }], ds.clone()).unwrap();
        assert_eq!(out.x, ndarray::array![[0.0], [1.0], [2.0]]);
        assert_eq!(out.labels, Some(vec![1, 2, 1]));
        assert_eq!(out.t, Some(vec![0.1, 0.2, 0.3]));
        assert_eq!(rec[0].output_shape, (3, 1));
        assert!(apply(&[Step::FirstRows { n: 5 }], ds.clone()).is_err());
        assert!(apply(&[Step::FirstRows { n: 0 }], ds).is_err());
    }

    #[test]
    fn select_labels_keeps_order_and_labels() {
        let ds = four_samples();
        let (out, _) = apply(&[Step::SelectLabels { labels: vec![1, 3] }], ds.clone()).unwrap();
        assert_eq!(out.x.column(0).to_vec(), vec![0.0, 2.0, 3.0]);
        assert_eq!(out.labels, Some(vec![1, 1, 3]));
        assert_eq!(out.t, Some(vec![0.1, 0.3, 0.4]));
        assert_ne!(out.checksum, "c");
        assert!(apply(&[Step::SelectLabels { labels: vec![9] }], ds).is_err());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array1};
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn ds(x: Array2<f64>) -> Dataset {
        Dataset { name: "t".into(), x, labels: None, t: None, checksum: "c0".into(), note: None }
    }

    #[test]
    fn zscore_mean_zero_std_one_and_constant_column() {
        let x = array![[1.0, 5.0, 0.1], [2.0, 5.0, 0.1], [4.0, 5.0, 0.1], [9.0, 5.0, 0.1]];
        let (z, c) = zscore(&x).unwrap();
        assert_eq!(c, vec![1, 2]);
        let col = z.column(0);
        let m = col.sum() / 4.0;
        let s = (col.iter().map(|v| (v - m).powi(2)).sum::<f64>() / 3.0).sqrt();
        assert!(m.abs() < 1e-14 && (s - 1.0).abs() < 1e-14);
        assert!(z.column(1).iter().chain(z.column(2).iter()).all(|&v| v == 0.0));
        let (z, c) = zscore(&array![[3.0, 4.0]]).unwrap();
        assert_eq!((z, c), (array![[0.0, 0.0]], vec![0, 1]));
    }

    #[test]
    fn minmax_range() {
        let (z, c) = minmax01(&array![[1.0, 2.0], [3.0, 2.0], [2.0, 2.0]]).unwrap();
        assert_eq!(z, array![[0.0, 0.0], [1.0, 0.0], [0.5, 0.0]]);
        assert_eq!(c, vec![1]);
    }

    #[test]
    fn bad_input_is_typed() {
        let e = zscore(&array![[1.0, f64::NAN]]).unwrap_err();
        assert!(matches!(e, PreprocessError::NotFinite { row: 0, col: 1, .. }));
        assert!(matches!(minmax01(&Array2::zeros((0, 3))), Err(PreprocessError::Empty { .. })));
        assert!(matches!(gaussian_kernel(&array![[f64::INFINITY]], None), Err(PreprocessError::NotFinite { .. })));
        assert!(matches!(pca_energy(&array![[1.0], [2.0]], 1.5, EnergyRule::Ge), Err(PreprocessError::BadParam { .. })));
        assert!(matches!(pca_dim(&array![[1.0], [2.0]], 2), Err(PreprocessError::BadParam { .. })));
        assert!(matches!(gaussian_kernel(&array![[1.0]], Some(0.0)), Err(PreprocessError::BadParam { .. })));
    }

    /// Data with covariance eigenvalues exactly proportional to 50, 30, 15, 5: orthogonal
    /// +-1 sign patterns (columns of a Hadamard matrix) scaled per axis, then rotated.
    fn known_spectrum() -> Array2<f64> {
        let h = array![
            [1., 1., 1., 1., 1., 1., 1., 1.],
            [1., -1., 1., -1., 1., -1., 1., -1.],
            [1., 1., -1., -1., 1., 1., -1., -1.],
            [1., -1., -1., 1., 1., -1., -1., 1.],
            [1., 1., 1., 1., -1., -1., -1., -1.],
            [1., -1., 1., -1., -1., 1., -1., 1.],
            [1., 1., -1., -1., -1., -1., 1., 1.],
            [1., -1., -1., 1., -1., 1., 1., -1.]
        ];
        // Columns 1..4 are zero-mean and mutually orthogonal with squared norm 8.
        let scales = [50f64.sqrt(), 30f64.sqrt(), 15f64.sqrt(), 5f64.sqrt()];
        let mut s = Array2::zeros((8, 4));
        for (j, sc) in scales.iter().enumerate() {
            s.column_mut(j).assign(&(&h.column(j + 1) * *sc));
        }
        // Rotate by an orthogonal 4 x 4 matrix (normalised Hadamard) and shift.
        let r = array![[1., 1., 1., 1.], [1., -1., 1., -1.], [1., 1., -1., -1.], [1., -1., -1., 1.]] * 0.5;
        s.dot(&r) + 3.0
    }

    #[test]
    fn energy_rule_resolves_expected_d() {
        let x = known_spectrum();
        // Cumulative fractions 0.50, 0.80, 0.95, 1.00 (thresholds kept off the exact boundaries,
        // where round-off in the eigenvalues decides).
        for (p, rule, d) in [
            (0.49, EnergyRule::Ge, 1),
            (0.51, EnergyRule::Ge, 2),
            (0.51, EnergyRule::Gt, 2),
            (0.79, EnergyRule::Ge, 2),
            (0.81, EnergyRule::Ge, 3),
            (0.9, EnergyRule::Gt, 3),
            (0.96, EnergyRule::Ge, 4),
            (1.0, EnergyRule::Ge, 4),
        ] {
            let (z, rec) = pca_energy(&x, p, rule).unwrap();
            assert_eq!(rec.d, d, "p = {p} {rule:?}");
            assert_eq!(z.dim(), (8, d));
            assert_eq!(rec.total_features, 4);
        }
        let (z, rec) = pca_dim(&x, 2).unwrap();
        assert_eq!(z.ncols(), 2);
        assert!((rec.energy - 0.8).abs() < 1e-12);
        let var0 = z.column(0).mapv(|v| v * v).sum() / 7.0;
        assert!((var0 - 50.0 * 8.0 / 7.0).abs() < 1e-9, "{var0}");
    }

    #[test]
    fn kernel_unit_diagonal_and_symmetric() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let x = Array2::from_shape_fn((30, 5), |_| rng.gen_range(-1.0..1.0));
        let k = gaussian_kernel(&x, None).unwrap();
        assert_eq!(k.dim(), (30, 30));
        for i in 0..30 {
            assert_eq!(k[[i, i]], 1.0);
            for j in 0..30 {
                assert_eq!(k[[i, j]], k[[j, i]]);
                assert!(k[[i, j]] > 0.0 && k[[i, j]] <= 1.0);
            }
        }
        let d01: f64 = (&x.row(0) - &x.row(1)).mapv(|v| v * v).sum();
        assert!((k[[0, 1]] - (-d01 / 5.0).exp()).abs() < 1e-12);
        let k2 = gaussian_kernel(&x, Some(2.0)).unwrap();
        assert!((k2[[0, 1]] - (-d01 / 2.0).exp()).abs() < 1e-12);
    }

    #[test]
    fn steps_deserialize_and_apply() {
        #[derive(Deserialize)]
        struct Spec {
            steps: Vec<Step>,
        }
        let spec: Spec = toml::from_str(
            r#"steps = [{ op = "zscore" }, { op = "pca_energy" }, { op = "pca_energy", threshold = 0.8, rule = "gt" },
                        { op = "pca_dim", d = 2 }, { op = "minmax" }, { op = "gaussian_kernel", bandwidth = 0.5 }, { op = "gaussian_kernel" }]"#,
        )
        .unwrap();
        assert_eq!(spec.steps[1], Step::PcaEnergy { threshold: 0.95, rule: EnergyRule::Ge });
        assert_eq!(spec.steps[2], Step::PcaEnergy { threshold: 0.8, rule: EnergyRule::Gt });
        assert_eq!(spec.steps[6], Step::GaussianKernel { bandwidth: None });
        for bad in [
            r#"steps = [{ op = "pca_dim", d = 2, k = 1 }]"#,
            r#"steps = [{ op = "whiten" }]"#,
            r#"steps = [{ op = "pca_dim" }]"#,
            r#"steps = [{ op = "zscore", x = 1 }]"#,
        ] {
            assert!(toml::from_str::<Spec>(bad).is_err(), "{bad}");
        }

        let mut x = known_spectrum();
        x.push_column(Array1::from_elem(8, 7.0).view()).unwrap();
        let steps = [Step::Zscore, Step::PcaDim { d: 2 }, Step::GaussianKernel { bandwidth: None }];
        let (out, recs) = apply(&steps, ds(x.clone())).unwrap();
        assert_eq!(recs[0].constant_features, vec![4]);
        assert_eq!(recs[1].pca.as_ref().unwrap().d, 2);
        assert_eq!(recs[2].bandwidth, Some(2.0));
        assert_eq!(out.x.dim(), (8, 8));
        assert_ne!(out.checksum, "c0");
        let (again, _) = apply(&steps, ds(x.clone())).unwrap();
        assert_eq!(again.checksum, out.checksum);
        let (other, _) = apply(&steps[..2], ds(x.clone())).unwrap();
        assert_ne!(other.checksum, out.checksum);
        let json = serde_json::to_string(&recs).unwrap();
        assert!(json.contains("\"op\":\"zscore\""), "{json}");
        x[[0, 0]] = f64::NAN;
        assert!(apply(&steps, ds(x)).is_err());
    }

    #[test]
    fn uniform_noise_step() {
        #[derive(Deserialize)]
        struct Spec {
            steps: Vec<Step>,
        }
        let spec: Spec = toml::from_str(r#"steps = [{ op = "uniform_noise", amplitude = 0.4, seed = 3 }]"#).unwrap();
        assert_eq!(spec.steps, vec![Step::UniformNoise { amplitude: 0.4, seed: 3 }]);
        assert!(toml::from_str::<Spec>(r#"steps = [{ op = "uniform_noise", amplitude = 0.4 }]"#).is_err());
        let x = known_spectrum();
        let (out, recs) = apply(&spec.steps, ds(x.clone())).unwrap();
        assert_eq!(recs[0].output_shape, x.dim());
        // The same noise as add_uniform_noise draws: every entry moves up by less than 0.4.
        let direct = crate::synthetic::add_uniform_noise(ds(x.clone()), 0.4, 3).unwrap();
        assert_eq!(out.x, direct.x);
        assert!((&out.x - &x).iter().all(|&v| (0.0..0.4).contains(&v)));
        assert!(out.note.as_deref().unwrap_or("").contains("U[0, 0.4)"));
        assert_ne!(out.checksum, "c0");
        let (zero, _) = apply(&[Step::UniformNoise { amplitude: 0.0, seed: 3 }], ds(x.clone())).unwrap();
        assert_eq!(zero.x, x);
        for a in [-0.1, f64::NAN, f64::INFINITY] {
            assert!(Step::UniformNoise { amplitude: a, seed: 1 }.validate().is_err(), "{a}");
            assert!(apply(&[Step::UniformNoise { amplitude: a, seed: 1 }], ds(x.clone())).is_err(), "{a}");
        }
    }
}
