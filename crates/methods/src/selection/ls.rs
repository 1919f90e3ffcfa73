//! Laplacian Score (He, Cai & Niyogi, NIPS 2005).
//!
//! ## Graph
//! The sample graph shared by the spectral feature-selection baselines (LS, SPEC, MCFS):
//! [`super::common::sample_graph`] (its doc and [`super::common::GraphSpec`]'s). The K-NN graph of
//! the samples (exact search, self excluded, ties to the lowest index), made symmetric by "or"
//! (`i ~ j` iff `j in kNN(i)` or `i in kNN(j)`), with heat-kernel weights
//!
//! `s_ij = exp(-||x_i - x_j||^2 / (2 sigma^2))`, `sigma = sigma_scale * delta_0`,
//!
//! `delta_0` the mean pairwise Euclidean distance over the pairs `i < j` (the ESL paper's
//! protocol: widths in `{2^-3, ..., 2^3} x delta_0`; Cai's `constructW` writes the kernel as
//! `exp(-d^2 / (2 t^2))` with `t` the mean distance, and so does scikit-feature's `construct_W`).
//! He et al. write `exp(-||x_i - x_j||^2 / t)`, i.e. `t = 2 sigma^2`. Binary weights `s_ij = 1`
//! are the other choice. The heat weights are symmetric, so the "or" rule equals
//! scikit-feature's max-symmetrisation. No self-loops (scikit-feature counts every sample among
//! its own k + 1 nearest neighbours, so its `W` has `s_ii = 1`; the Rust-only field
//! `self_loops` reproduces that for the parity tests). `k = 0` means the full graph (every pair
//! weighted; SPEC's RBF graph).
//!
//! ## Score (He et al. eqs. 1-3)
//! With `D = diag(S 1)`, `L = D - S` and feature `f_r` (column r of X):
//!
//! `f~_r = f_r - (f_r' D 1 / 1' D 1) 1`,  `L_r = (f~_r' L f~_r) / (f~_r' D f~_r)`,
//!
//! smaller is better. The numerator is summed edge by edge,
//! `f' L f = sum_{i<j} s_ij (f_i - f_j)^2` (no cancellation; `L 1 = 0` so centring does not
//! change it), the denominator from the D-weighted centred feature.
//!
//! ## Output
//! Feature scores: `weights = 2 - L_r` (larger = more relevant as the contract asks; `L_r` lies in
//! `[0, 2]`, the spectrum of the normalised Laplacian, so the weights are in `[0, 2]`), the
//! ranking by `L_r` ascending, ties by index. `n_selected` is an evaluation-stage parameter: one
//! fit serves every number of selected features.
//!
//! A constant feature has `f~ = 0` and an undefined score (0/0; scikit-feature gives it the plain
//! number `1 - 0/10000`): it is a [`crate::api::MethodError::Degenerate`] naming the features (drop them
//! first). Duplicate samples are valid (distance 0, weight 1).

use super::common::{check_k, graph_note, rank_by, refuse_constant_features, sample_graph, EdgeWeights, GraphSpec, SampleGraph};
use crate::api::declare::{self, declare_params, fixed, Declared};
use crate::api::info::{choice, int, positive, MethodInfo};
use crate::api::OutputKind;
use crate::api::{check_input, Embedder, FeatureScores, FitInput, Fitted, Output, ParamMap, Result, Trace};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use rayon::prelude::*;

const NAME: &str = "ls";

/// The features as contiguous rows (D x N), for per-feature loops.
pub fn features_in_rows(x: ArrayView2<f64>) -> Array2<f64> {
    x.t().as_standard_layout().to_owned()
}

/// `f~' D f~` with `f~ = f - (f' D 1 / 1' D 1) 1` (the D-weighted centred feature), `d` the
/// degrees.
pub fn centred_degree_form(f: &[f64], d: &[f64]) -> f64 {
    let vol: f64 = ArrayView1::from(d).sum();
    let mean = f.iter().zip(d.iter()).map(|(a, b)| a * b).sum::<f64>() / vol;
    f.iter().zip(d.iter()).map(|(a, b)| b * (a - mean) * (a - mean)).sum()
}

/// The Laplacian scores `L_r` (module doc) of every feature on the graph `g`. Features in rows
/// of `ft` (D x N). Deterministic at any thread count (one feature per task).
pub fn laplacian_scores(ft: ArrayView2<f64>, g: &SampleGraph) -> Array1<f64> {
    let scores: Vec<f64> = (0..ft.nrows())
        .into_par_iter()
        .map(|r| {
            let f = ft.row(r);
            let f = f.as_slice().expect("standard layout");
            g.graph.laplacian_form(f) / centred_degree_form(f, &g.graph.deg)
        })
        .collect();
    Array1::from(scores)
}

declare_params! {
    /// Laplacian Score parameters.
    #[derive(Debug, Clone)]
    pub struct LaplacianScore {
        /// Neighbours per sample before symmetrisation, `1 <= k < N`.
        pub k: usize = int("k", 1, 5, "neighbours per sample of the K-NN graph before symmetrisation (i ~ j if j in kNN(i) or i in kNN(j)); 5 as in He et al. and the ESL protocol"),
        /// Heat or binary weights.
        pub weights: EdgeWeights = choice("weights", EdgeWeights::NAMES, "heat", "edge weights: heat s_ij = exp(-||x_i - x_j||^2 / (2 sigma^2)), or binary s_ij = 1"),
        /// `sigma = sigma_scale * delta_0`.
        pub sigma_scale: f64 = positive("sigma_scale", 1.0, "heat width sigma = sigma_scale x delta_0, delta_0 = mean pairwise distance (ESL protocol grid: 2^-3 .. 2^3)"),
        // read by the evaluation, not the fit
        _ = int("n_selected", 0, 0, "evaluation stage: the protocols score X restricted to this many top-ranked features (0 = all, every weight being positive); one fit serves every value").evaluation_stage(),
        /// Absolute heat width overriding `sigma_scale * delta_0` (Rust only: parity tests).
        pub sigma: Option<f64> = fixed(None),
        /// `s_ii = 1` as scikit-feature's `construct_W` (Rust only: parity tests).
        pub self_loops: bool = fixed(false),
    }
}

impl LaplacianScore {
    /// The graph this instance builds.
    pub fn graph_spec(&self) -> GraphSpec {
        GraphSpec { k: self.k, weights: self.weights, sigma_scale: self.sigma_scale, sigma: self.sigma, self_loops: self.self_loops }
    }

    /// The raw scores `L_r` (smaller = better) and the graph.
    pub fn scores(&self, x: ArrayView2<f64>) -> Result<(Array1<f64>, SampleGraph)> {
        check_input(NAME, &x, 2)?;
        check_k(NAME, self.k, x.nrows())?;
        refuse_constant_features(NAME, x)?;
        let g = sample_graph(NAME, x, &self.graph_spec())?;
        let ft = features_in_rows(x);
        Ok((laplacian_scores(ft.view(), &g), g))
    }
}

impl Embedder for LaplacianScore {
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
        let (scores, g) = self.scores(input.x)?;
        let ranking = rank_by(scores.view(), true);
        let weights = scores.mapv(|s| 2.0 - s);
        let mut f = Fitted::new(Output::FeatureScores(FeatureScores { weights, ranking }), Trace::closed_form());
        f.notes.push(graph_note(&g, self.k));
        f.graph = Some(g.graph.to_graph());
        Ok(f)
    }
}

pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: NAME,
        summary: "Laplacian Score: L_r = f~' L f~ / f~' D f~ on the heat-kernel K-NN graph, f~ = f_r - (f_r' D 1 / 1' D 1) 1; smaller is better (weights 2 - L_r, ranking by L_r ascending).",
        reference: "He, Cai & Niyogi, Laplacian Score for Feature Selection, NIPS 2005",
        version: 1,
        output: OutputKind::FeatureScores,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: false,
        params: LaplacianScore::schema(()),
        build: |p| declare::build::<LaplacianScore>(NAME, (), p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::MethodError;
    use ndarray::array;

    /// Four samples in the plane, k = 1: squared distances d01 = 5, d02 = 10, d12 = 13,
    /// d23 = 18.25, d03 = 49.25, d13 = 38.25, so the 1-NN edges are 0-1, 0-2 (2's nearest is 0)
    /// and 2-3; with sigma = 1, s = exp(-d / 2).
    #[test]
    fn laplacian_score_matches_a_hand_computation() {
        let x = array![[0.0, 1.0], [1.0, -1.0], [3.0, 2.0], [7.0, 0.5]];
        let ls = LaplacianScore { k: 1, sigma: Some(1.0), ..LaplacianScore::default() };
        let (scores, g) = ls.scores(x.view()).unwrap();
        let (a, b, c) = ((-2.5f64).exp(), (-5.0f64).exp(), (-9.125f64).exp());
        assert_eq!(g.graph.edges().len(), 3);
        let d = [a + b, a, b + c, c];
        let vol: f64 = d.iter().sum();
        for r in 0..2 {
            let f: Vec<f64> = (0..4).map(|i| x[[i, r]]).collect();
            let m = (0..4).map(|i| d[i] * f[i]).sum::<f64>() / vol;
            let num = a * (f[0] - f[1]).powi(2) + b * (f[0] - f[2]).powi(2) + c * (f[2] - f[3]).powi(2);
            let den: f64 = (0..4).map(|i| d[i] * (f[i] - m).powi(2)).sum();
            assert!((scores[r] - num / den).abs() < 1e-14 * (num / den), "feature {r}: {} vs {}", scores[r], num / den);
        }
        // dense L = D - S against the same quadratic forms
        let s = g.graph.dense_adjacency();
        let f = x.column(0).to_owned();
        let lf = f.dot(&(Array2::from_diag(&Array1::from(g.graph.deg.clone())) - &s).dot(&f));
        assert!((lf - g.graph.laplacian_form(f.as_slice().unwrap())).abs() < 1e-13);
    }

    #[test]
    fn constant_features_are_degenerate() {
        let x = array![[0.0, 1.0, 2.0], [1.0, 1.0, 0.0], [3.0, 1.0, 1.0], [2.0, 1.0, 5.0]];
        let e = LaplacianScore { k: 1, ..LaplacianScore::default() }.fit(x.view(), 0).unwrap_err();
        assert!(matches!(e, MethodError::Degenerate { .. }) && e.to_string().contains("constant"), "{e}");
    }
}
