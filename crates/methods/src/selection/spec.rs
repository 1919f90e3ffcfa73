//! SPEC: spectral feature selection (Zhao & Liu, ICML 2007), its three ranking functions.
//!
//! Graph: the sample graph of [`crate::selection::common::sample_graph`] (heat weights
//! `s_ij = exp(-||x_i - x_j||^2 / (2 sigma^2))`, `sigma = sigma_scale * delta_0`), on the K-NN
//! graph with `k = 5` by default (the ESL protocol: neighbourhood size 5 for every method), or the
//! full RBF graph of Zhao & Liu (and scikit-feature's default `rbf_kernel(X, gamma = 1)`, i.e.
//! `sigma = 1/sqrt(2)`) with `k = 0`.
//!
//! With `D = diag(S 1)`, the normalised Laplacian `L_hat = D^{-1/2} (D - S) D^{-1/2}` with
//! eigenpairs `0 = lambda_1 <= ... <= lambda_N` (`xi_1 = D^{1/2} 1 / ||D^{1/2} 1||`), every
//! feature normalised as the paper does, `f^ = D^{1/2} f / ||D^{1/2} f||`, and
//! `alpha_j = xi_j' f^`:
//!
//! | `style` | Zhao & Liu | score | better | scikit-feature `style` |
//! |---|---|---|---|---|
//! | 0 | `phi_1` | `f^' L_hat f^ = sum_j lambda_j alpha_j^2 = f' L f / f' D f` | smaller | -1 |
//! | 1 | `phi_2` | `f^' L_hat f^ / (1 - (f^' xi_1)^2) = sum_{j>=2} lambda_j alpha_j^2 / sum_{j>=2} alpha_j^2` | smaller | 0 (its default) |
//! | 2 | `phi_3` | `sum_{j=2}^{n_eigen} (2 - lambda_j) alpha_j^2` | larger | `n_eigen` (any k >= 1) |
//!
//! `phi_1` and `phi_2` need no eigendecomposition: `phi_1 = f' L f / f' D f` (numerator summed
//! edge by edge) and `1 - (f^' xi_1)^2 = f~' D f~ / f' D f` with `f~` the D-weighted centred
//! feature, so `phi_2 = f' L f / f~' D f~`, which is exactly the Laplacian Score (a fact Zhao & Liu
//! note; a test checks it). `phi_3` takes the `n_eigen` smallest eigenpairs of `L_hat` (dense,
//! `dsyevr`). The default style is `phi_2` (scikit-feature's default; the FSASL harness's SPEC
//! call is not shipped, so its style is unknown).
//!
//! Output: `weights = 2 - phi` for `phi_1`, `phi_2` (both in `[0, 2]`) and `weights = phi_3`, so
//! larger is always better; the ranking follows the style's direction (scikit-feature's
//! `feature_ranking` in 1.2.1 sorts `phi_1`/`phi_2` descending and `phi_3` ascending, the
//! reverse of the paper; `docs/parity/spec.md`), ties by index. A constant feature (whose
//! `phi_2` is 0/0 and `phi_1` is 0, "perfect") is a [`MethodError::Degenerate`].

use super::common::{check_k, graph_note, rank_by, refuse_constant_features, sample_graph, EdgeWeights, GraphSpec, SampleGraph};
use super::ls::{centred_degree_form, features_in_rows};
use crate::api::declare::{self, declare_params, fixed, Declared};
use crate::api::info::{int, positive, MethodInfo};
use crate::api::{check_input, numerical, Embedder, FeatureScores, FitInput, Fitted, MethodError, Output, ParamMap, Result, Trace};
use crate::api::{OutputKind, ParamKind};
use ndarray::{Array1, ArrayView2};
use rayon::prelude::*;

const NAME: &str = "spec";

declare_params! {
    /// SPEC parameters.
    #[derive(Debug, Clone)]
    pub struct Spec {
        /// 0 = phi_1, 1 = phi_2, 2 = phi_3.
        pub style: usize = crate::api::ParamSchema { kind: ParamKind::Int { min: 0, max: 2 }, ..int("style", 0, 1, "ranking function: 0 = phi_1 = f^' L_hat f^ (scikit-feature style -1), 1 = phi_2 = phi_1 / (1 - (f^' xi_1)^2) (scikit-feature 0, its default), 2 = phi_3 = sum_{j=2}^{n_eigen} (2 - lambda_j) alpha_j^2 (scikit-feature style = n_eigen)") },
        /// phi_3's k: eigenpairs 2..n_eigen.
        pub n_eigen: usize = int("n_eigen", 2, 5, "phi_3 (style 2) sums the eigenpairs 2..n_eigen of L_hat (Zhao & Liu's k, set it to the number of clusters); unused by styles 0 and 1"),
        /// Neighbours per sample; 0 = the full RBF graph.
        pub k: usize = int("k", 0, 5, "neighbours per sample of the K-NN graph (5 in the ESL protocol); 0 = the full RBF graph of Zhao & Liu"),
        /// `sigma = sigma_scale * delta_0`.
        pub sigma_scale: f64 = positive("sigma_scale", 1.0, "RBF width sigma = sigma_scale x delta_0, delta_0 = mean pairwise distance; s_ij = exp(-||x_i - x_j||^2 / (2 sigma^2)) (ESL protocol grid: 2^-3 .. 2^3)"),
        // read by the evaluation, not the fit
        _ = int("n_selected", 0, 0, "evaluation stage: the protocols score X restricted to this many top-ranked features (0 = those with a positive weight); one fit serves every value").evaluation_stage(),
        /// Absolute width overriding `sigma_scale * delta_0` (Rust only: parity tests).
        pub sigma: Option<f64> = fixed(None),
        /// `s_ii = 1` as scikit-feature's `construct_W` (Rust only: parity tests).
        pub self_loops: bool = fixed(false),
    }
}

impl Spec {
    /// The graph this instance builds.
    pub fn graph_spec(&self) -> GraphSpec {
        GraphSpec { k: self.k, weights: EdgeWeights::Heat, sigma_scale: self.sigma_scale, sigma: self.sigma, self_loops: self.self_loops }
    }

    /// The raw scores of the chosen style (phi_1, phi_2: smaller better; phi_3: larger better),
    /// the graph and, for phi_3, the eigenvalues used.
    pub fn scores(&self, x: ArrayView2<f64>) -> Result<(Array1<f64>, SampleGraph, Vec<f64>)> {
        check_input(NAME, &x, 2)?;
        let n = x.nrows();
        if self.k > 0 {
            check_k(NAME, self.k, n)?;
        }
        if self.style == 2 && self.n_eigen > n {
            return Err(MethodError::Input { method: NAME, reason: format!("n_eigen = {} eigenpairs need N >= n_eigen samples, got N = {n}", self.n_eigen) });
        }
        refuse_constant_features(NAME, x)?;
        crate::api::check_dense_size(NAME, n)?;
        let g = sample_graph(NAME, x, &self.graph_spec())?;
        let ft = features_in_rows(x);
        let d = &g.graph.deg;
        if self.style < 2 {
            let phi: Vec<f64> = (0..ft.nrows())
                .into_par_iter()
                .map(|r| {
                    let f = ft.row(r);
                    let f = f.as_slice().expect("standard layout");
                    let num = g.graph.laplacian_form(f);
                    if self.style == 0 {
                        num / f.iter().zip(d.iter()).map(|(a, b)| b * a * a).sum::<f64>()
                    } else {
                        num / centred_degree_form(f, d)
                    }
                })
                .collect();
            return Ok((Array1::from(phi), g, Vec::new()));
        }
        let (lhat, s) = structdr_numerics::graphs::laplacian::normalized(g.graph.dense_adjacency(), 0.0)
            .map_err(|i| MethodError::Degenerate { method: NAME, reason: format!("sample {i} has degree 0") })?;
        let e = structdr_linalg::eigh_bottom(lhat.view(), self.n_eigen).map_err(numerical(NAME))?;
        // f^ = D^{1/2} f / ||D^{1/2} f||: alpha = xi' D^{1/2} f / ||D^{1/2} f||, for all features at once
        let sqrt_d = s.iter().map(|v| 1.0 / v).collect::<Vec<f64>>();
        let mut fh = x.to_owned();
        for (mut row, &sd) in fh.rows_mut().into_iter().zip(sqrt_d.iter()) {
            row.mapv_inplace(|v| v * sd);
        }
        let norms2 = fh.map_axis(ndarray::Axis(0), |c| c.dot(&c));
        let proj = e.vectors.t().dot(&fh); // n_eigen x D
        let phi3 = Array1::from_shape_fn(x.ncols(), |r| (1..self.n_eigen).map(|j| (2.0 - e.values[j]) * proj[[j, r]] * proj[[j, r]]).sum::<f64>() / norms2[r]);
        Ok((phi3, g, e.values.to_vec()))
    }
}

impl Embedder for Spec {
    fn name(&self) -> &'static str {
        NAME
    }
    fn info(&self) -> MethodInfo {
        info()
    }
    fn params(&self) -> ParamMap {
        self.to_params()
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        let (phi, g, values) = self.scores(input.x)?;
        let (ranking, weights) = if self.style < 2 { (rank_by(phi.view(), true), phi.mapv(|p| 2.0 - p)) } else { (rank_by(phi.view(), false), phi) };
        let mut f = Fitted::new(Output::FeatureScores(FeatureScores { weights, ranking }), Trace::closed_form());
        f.notes.push(graph_note(&g, self.k));
        f.notes.push(format!("style {} (phi_{})", self.style, self.style + 1));
        if !values.is_empty() {
            f.notes.push(format!("eigenvalues lambda_1..lambda_{} of L_hat: {values:?}", values.len()));
        }
        f.graph = Some(g.graph.to_graph());
        Ok(f)
    }
}

pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: NAME,
        summary: "SPEC: f^ = D^{1/2} f / ||D^{1/2} f|| scored on the normalised Laplacian of the RBF graph: phi_1 = f^' L_hat f^, phi_2 = phi_1 / (1 - (f^' xi_1)^2) (smaller better), or phi_3 = sum_{j=2}^{k} (2 - lambda_j) (xi_j' f^)^2 (larger better).",
        reference: "Zhao & Liu, Spectral Feature Selection for Supervised and Unsupervised Learning, ICML 2007",
        version: 1,
        output: OutputKind::FeatureScores,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: false,
        params: Spec::schema(()),
        build: |p| declare::build::<Spec>(NAME, (), p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::ls::LaplacianScore;
    use ndarray::{array, Array2};

    /// A 3-sample full graph by hand: s_01 = a, s_02 = b, s_12 = c (sigma = 1, s = exp(-d/2)),
    /// D = diag(a + b, a + c, b + c); phi_1 = sum s_ij (f_i - f_j)^2 / sum d_i f_i^2; phi_3 with
    /// n_eigen = 3 uses all non-trivial pairs: sum_{j=2,3} (2 - lambda_j) alpha_j^2 =
    /// 2 (1 - alpha_1^2) - phi_1 (since sum_j alpha_j^2 = 1 and sum_j lambda_j alpha_j^2 = phi_1).
    #[test]
    fn spec_matches_a_hand_computation_on_a_full_graph() {
        let x = array![[0.0, 2.0], [1.0, 0.5], [3.0, 1.0]];
        // squared distances: d01 = 1 + 2.25, d02 = 9 + 1, d12 = 4 + 0.25
        let (a, b, c) = ((-3.25f64 / 2.0).exp(), (-10.0f64 / 2.0).exp(), (-4.25f64 / 2.0).exp());
        let d = [a + b, a + c, b + c];
        let vol: f64 = d.iter().sum();
        for style in 0..3 {
            let spec = Spec { style, n_eigen: 3, k: 0, sigma: Some(1.0), ..Spec::default() };
            let (phi, _, _) = spec.scores(x.view()).unwrap();
            for r in 0..2 {
                let f: Vec<f64> = (0..3).map(|i| x[[i, r]]).collect();
                let lf = a * (f[0] - f[1]).powi(2) + b * (f[0] - f[2]).powi(2) + c * (f[1] - f[2]).powi(2);
                let df: f64 = (0..3).map(|i| d[i] * f[i] * f[i]).sum();
                let d1f: f64 = (0..3).map(|i| d[i] * f[i]).sum();
                let phi1 = lf / df;
                let alpha1_sq = d1f * d1f / (df * vol);
                let expect = match style {
                    0 => phi1,
                    1 => phi1 / (1.0 - alpha1_sq),
                    _ => 2.0 * (1.0 - alpha1_sq) - phi1,
                };
                assert!((phi[r] - expect).abs() < 1e-13 * expect.abs(), "style {style} feature {r}: {} vs {expect}", phi[r]);
            }
        }
    }

    #[test]
    fn phi2_is_the_laplacian_score() {
        let x = Array2::from_shape_fn((30, 6), |(i, j)| ((i * 7 + j * 3) % 11) as f64 + (i as f64 * 0.37 + j as f64).sin());
        let (phi2, _, _) = Spec { style: 1, ..Spec::default() }.scores(x.view()).unwrap();
        let (ls, _) = LaplacianScore::default().scores(x.view()).unwrap();
        for r in 0..6 {
            assert!((phi2[r] - ls[r]).abs() < 1e-14, "{} vs {}", phi2[r], ls[r]);
        }
        // phi_3 with every eigenpair equals 2 (1 - alpha_1^2) - phi_1 (as in the hand test)
        let (phi1, g, _) = Spec { style: 0, ..Spec::default() }.scores(x.view()).unwrap();
        let (phi3, _, _) = Spec { style: 2, n_eigen: 30, ..Spec::default() }.scores(x.view()).unwrap();
        for r in 0..6 {
            let f = x.column(r).to_owned();
            let df: f64 = (0..30).map(|i| g.graph.deg[i] * f[i] * f[i]).sum();
            let a1 = 1.0 - centred_degree_form(f.as_slice().unwrap(), &g.graph.deg) / df;
            assert!((phi3[r] - (2.0 * (1.0 - a1) - phi1[r])).abs() < 1e-10, "{r}");
        }
    }

    #[test]
    fn more_eigenpairs_than_samples_is_an_error() {
        let x = array![[0.0, 2.0], [1.0, 0.5], [3.0, 1.0]];
        let e = Spec { style: 2, n_eigen: 4, k: 0, ..Spec::default() }.fit(x.view(), 0).unwrap_err();
        assert!(matches!(e, MethodError::Input { .. }), "{e}");
    }
}
