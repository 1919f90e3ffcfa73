//! Laplacian Score (He, Cai & Niyogi, NIPS 2005), and the sample graph the spectral
//! feature-selection baselines share (LS, SPEC, MCFS).
//!
//! ## Graph ([`SampleGraph`], [`GraphSpec`])
//! The K-NN graph of the samples (exact search, self excluded, ties to the lowest index), made
//! symmetric by "or" (`i ~ j` iff `j in kNN(i)` or `i in kNN(j)`), with heat-kernel weights
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
//! number `1 - 0/10000`): it is a [`MethodError::Degenerate`] naming the features (drop them
//! first). Duplicate samples are valid (distance 0, weight 1).

use crate::api::declare::{self, declare_params, fixed, param_choice, Declared};
use crate::api::info::{choice, int, positive, MethodInfo};
use crate::api::OutputKind;
use crate::api::{check_input, numerics, Embedder, FeatureScores, FitInput, Fitted, Graph, MethodError, Output, ParamMap, Result, Trace};
use ndarray::{Array1, Array2, ArrayView2, Axis};
use rayon::prelude::*;
use structdr_numerics::neighbours::knn::{knn, symmetrised_edges};

const NAME: &str = "ls";

param_choice! {
    /// Edge weights of the sample graph.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum EdgeWeights {
        /// `s_ij = exp(-||x_i - x_j||^2 / (2 sigma^2))`.
        Heat = "heat",
        /// `s_ij = 1`.
        Binary = "binary",
    }
}

/// How to build the sample graph (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GraphSpec {
    /// Neighbours per sample before symmetrisation; 0 = the full graph.
    pub k: usize,
    /// Heat or binary weights.
    pub weights: EdgeWeights,
    /// `sigma = sigma_scale * delta_0` (heat weights).
    pub sigma_scale: f64,
    /// An absolute width overriding `sigma_scale * delta_0` (parity tests).
    pub sigma: Option<f64>,
    /// Count every sample as its own neighbour, `s_ii = 1` (scikit-feature's `construct_W`).
    pub self_loops: bool,
}

/// The weighted sample graph: undirected edges `(i, j, s_ij)`, `i < j`, sorted, and the degrees
/// `d_i = sum_j s_ij` (self-loops included).
#[derive(Debug, Clone)]
pub struct SampleGraph {
    /// Number of samples.
    pub n: usize,
    /// Edges `(i, j, s_ij)`, `i < j`, sorted (positive weights only).
    pub edges: Vec<(usize, usize, f64)>,
    /// Self-loop weights `s_ii` (zeros unless `self_loops`).
    pub self_loops: Vec<f64>,
    /// Degrees `d_i = s_ii + sum_{j != i} s_ij`.
    pub degrees: Array1<f64>,
    /// The heat width sigma used (NaN for binary weights).
    pub sigma: f64,
    /// The mean pairwise distance `delta_0` (NaN when not needed).
    pub delta0: f64,
}

impl SampleGraph {
    /// The dense symmetric weight matrix `S` (self-loops on the diagonal).
    pub fn dense(&self) -> Array2<f64> {
        let mut w = Array2::zeros((self.n, self.n));
        for &(i, j, s) in &self.edges {
            w[[i, j]] = s;
            w[[j, i]] = s;
        }
        for (i, &s) in self.self_loops.iter().enumerate() {
            w[[i, i]] = s;
        }
        w
    }

    /// `f' L f = sum_{i<j} s_ij (f_i - f_j)^2` for one feature (samples in order).
    pub fn laplacian_form(&self, f: &[f64]) -> f64 {
        self.edges.iter().map(|&(i, j, s)| s * (f[i] - f[j]) * (f[i] - f[j])).sum()
    }

    /// The graph as the contract's edge list.
    pub fn to_graph(&self) -> Graph {
        Graph { n_vertices: self.n, edges: self.edges.clone() }
    }
}

/// `delta_0`: the mean Euclidean distance over the pairs `i < j` (one GEMM, O(N^2 D)).
pub fn mean_pairwise_distance(x: ArrayView2<f64>) -> f64 {
    let n = x.nrows();
    let mean = x.mean_axis(Axis(0)).expect("n > 0");
    let xc = &x - &mean.view().insert_axis(Axis(0));
    let d2 = structdr_linalg::sq_dists(xc.view());
    let mut s = 0.0;
    for i in 0..n {
        for j in (i + 1)..n {
            s += d2[[i, j]].sqrt();
        }
    }
    s / (n * (n - 1) / 2) as f64
}

/// Builds the sample graph of the module doc. Errors: `k >= N`, a zero degree (heat weights that
/// underflow: sigma too small).
pub fn sample_graph(method: &'static str, x: ArrayView2<f64>, spec: &GraphSpec) -> Result<SampleGraph> {
    let n = x.nrows();
    let heat = spec.weights == EdgeWeights::Heat;
    let delta0 = if heat && spec.sigma.is_none() { mean_pairwise_distance(x) } else { f64::NAN };
    let sigma = if heat { spec.sigma.unwrap_or(spec.sigma_scale * delta0) } else { f64::NAN };
    if heat && !(sigma > 0.0 && sigma.is_finite()) {
        return Err(MethodError::Degenerate {
            method,
            reason: format!("heat-kernel width sigma = {sigma:e} (delta_0 = {delta0:e}) is not positive and finite"),
        });
    }
    let weight = |d2: f64| if heat { (-d2 / (2.0 * sigma * sigma)).exp() } else { 1.0 };
    let mut edges: Vec<(usize, usize, f64)> = if spec.k == 0 {
        let mean = x.mean_axis(Axis(0)).expect("n > 0");
        let xc = &x - &mean.view().insert_axis(Axis(0));
        let d2 = structdr_linalg::sq_dists(xc.view());
        (0..n).flat_map(|i| ((i + 1)..n).map(move |j| (i, j))).map(|(i, j)| (i, j, weight(d2[[i, j]]))).collect()
    } else {
        let nb = knn(x, spec.k).map_err(numerics(method))?;
        symmetrised_edges(&nb).into_iter().map(|(i, j, d2)| (i, j, weight(d2))).collect()
    };
    edges.retain(|e| e.2 > 0.0);
    let self_loops = vec![if spec.self_loops { 1.0 } else { 0.0 }; n];
    let mut degrees = Array1::from(self_loops.clone());
    for &(i, j, s) in &edges {
        degrees[i] += s;
        degrees[j] += s;
    }
    if let Some(i) = degrees.iter().position(|&d| !(d > 0.0 && d.is_finite())) {
        return Err(MethodError::Degenerate {
            method,
            reason: format!(
                "sample {i} has degree {} in the heat-kernel graph (sigma = {sigma:e} is too small for its neighbours: raise sigma_scale)",
                degrees[i]
            ),
        });
    }
    Ok(SampleGraph { n, edges, self_loops, degrees, sigma, delta0 })
}

/// The features that take one value only (their spectral scores are 0/0).
pub fn constant_features(x: ArrayView2<f64>) -> Vec<usize> {
    (0..x.ncols()).filter(|&r| x.column(r).iter().all(|&v| v == x[[0, r]])).collect()
}

/// Refuses data with constant features ([`MethodError::Degenerate`], naming up to 10).
pub fn refuse_constant_features(method: &'static str, x: ArrayView2<f64>) -> Result<()> {
    let c = constant_features(x);
    if c.is_empty() {
        return Ok(());
    }
    let shown: Vec<String> = c.iter().take(10).map(|r| r.to_string()).collect();
    Err(MethodError::Degenerate {
        method,
        reason: format!("{} constant feature(s) (e.g. {}): their score is 0/0; remove constant features first", c.len(), shown.join(", ")),
    })
}

/// The features as contiguous rows (D x N), for per-feature loops.
pub fn features_in_rows(x: ArrayView2<f64>) -> Array2<f64> {
    x.t().as_standard_layout().to_owned()
}

/// `f~' D f~` with `f~ = f - (f' D 1 / 1' D 1) 1` (the D-weighted centred feature).
pub fn centred_degree_form(f: &[f64], d: &Array1<f64>) -> f64 {
    let vol: f64 = d.sum();
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
            g.laplacian_form(f) / centred_degree_form(f, &g.degrees)
        })
        .collect();
    Array1::from(scores)
}

/// Features ordered by `score` ascending (`ascending = true`) or descending, ties by index.
pub fn rank_by(score: &Array1<f64>, ascending: bool) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..score.len()).collect();
    idx.sort_by(|&a, &b| {
        let o = score[a].total_cmp(&score[b]);
        (if ascending { o } else { o.reverse() }).then(a.cmp(&b))
    });
    idx
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

/// `1 <= k < N` for a K-NN graph.
pub fn check_k(method: &'static str, k: usize, n: usize) -> Result<()> {
    if k >= n {
        return Err(MethodError::Input { method, reason: format!("k = {k} neighbours needs N > k samples, got N = {n}") });
    }
    Ok(())
}

/// A graph note for `Fitted.notes`.
pub fn graph_note(g: &SampleGraph, k: usize) -> String {
    let kind = if k == 0 { "full graph".to_string() } else { format!("{k}-NN graph") };
    if g.sigma.is_nan() {
        format!("{kind}, binary weights, {} edges", g.edges.len())
    } else if g.delta0.is_nan() {
        format!("{kind}, heat weights, sigma = {:.6e} (given), {} edges", g.sigma, g.edges.len())
    } else {
        format!("{kind}, heat weights, sigma = {:.6e} = {:.4} x delta_0 (delta_0 = {:.6e}), {} edges", g.sigma, g.sigma / g.delta0, g.delta0, g.edges.len())
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
        let ranking = rank_by(&scores, true);
        let weights = scores.mapv(|s| 2.0 - s);
        let mut f = Fitted::new(Output::FeatureScores(FeatureScores { weights, ranking }), Trace::closed_form());
        f.notes.push(graph_note(&g, self.k));
        f.graph = Some(g.to_graph());
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
        assert_eq!(g.edges.len(), 3);
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
        let s = g.dense();
        let f = x.column(0).to_owned();
        let lf = f.dot(&(Array2::from_diag(&g.degrees) - &s).dot(&f));
        assert!((lf - g.laplacian_form(f.as_slice().unwrap())).abs() < 1e-13);
    }

    #[test]
    fn ranking_ascending_with_ties_by_index() {
        let s = array![0.3, 0.1, 0.3, 0.1, 0.0];
        assert_eq!(rank_by(&s, true), vec![4, 1, 3, 0, 2]);
        assert_eq!(rank_by(&s, false), vec![0, 2, 1, 3, 4]);
    }

    #[test]
    fn constant_features_are_degenerate() {
        let x = array![[0.0, 1.0, 2.0], [1.0, 1.0, 0.0], [3.0, 1.0, 1.0], [2.0, 1.0, 5.0]];
        let e = LaplacianScore { k: 1, ..LaplacianScore::default() }.fit(x.view(), 0).unwrap_err();
        assert!(matches!(e, MethodError::Degenerate { .. }) && e.to_string().contains("constant"), "{e}");
    }
}
