//! MCFS: multi-cluster feature selection (Cai, Zhang & He, KDD 2010).
//!
//! 1. Graph: the heat-kernel K-NN sample graph of [`crate::selection::common::sample_graph`] (`k = 5`,
//!    `s_ij = exp(-||x_i - x_j||^2 / (2 sigma^2))`, `sigma = sigma_scale * delta_0`; binary
//!    weights optional), `D = diag(S 1)`, `L = D - S`.
//! 2. Spectral embedding (eq. 4): the generalised eigenvectors `L y = lambda D y` of the
//!    `n_clusters` smallest non-trivial eigenvalues, solved as
//!    `D^{-1/2} L D^{-1/2} u = lambda u`, `y = D^{-1/2} u` (as scikit-feature and Cai's code;
//!    `Y` is N x K).
//! 3. For every `y_k`: `min ||y_k - X a_k||^2 s.t. ||a_k||_1 <= gamma` (eq. 5), solved by the
//!    LARS-lasso path ([`crate::selection::lars`]) until `a_k` has `n_nonzero` non-zeros ("LARS
//!    with the cardinality constraint"), with an intercept (X and y_k centred, as scikit-learn's
//!    `Lars` that scikit-feature calls); `path = "lar"` runs plain LAR (no drops, scikit-feature).
//! 4. Score (eq. 6): `MCFS(j) = max_k |a_{k,j}|`, larger = more relevant (scikit-feature takes the
//!    signed max, a defect: an eigenvector's sign is arbitrary).
//!
//! Cardinality: Cai et al. run LARS to `d` non-zeros for `d` selected features, so each number of
//! selected features has its own scores. Here `n_selected` is an evaluation-stage parameter (one
//! fit serves every value), so the cardinality is a fit parameter `n_nonzero` (default 300, the
//! largest number of features of the Table III protocol; clamped to `min(M, N - 1)`), the same
//! for every `n_selected` (`docs/parity/mcfs.md`). Features that never enter score 0 and follow
//! the others by index.
//!
//! Output: `weights = max_k |a_{k,j}|`, ranking by weight descending, ties by index; `Trace`
//! carries the largest relative KKT residual of the K lasso end points (`path = "lasso"`). A
//! constant feature is a zero column after centring and never enters (score 0), which is its
//! lasso solution, not an artefact. `n_clusters >= N` is an input error.

use super::common::{check_clusters, graph_note, rank_by, sample_graph, EdgeWeights, GraphSpec};
use super::lars::{lars, lasso_kkt_residual, LarsEnd};
use crate::api::declare::{self, declare_params, fixed, param_choice, Declared};
use crate::api::info::{choice, int, positive, MethodInfo};
use crate::api::OutputKind;
use crate::api::{check_input, numerics, Embedder, FeatureScores, FitInput, Fitted, MethodError, Output, ParamMap, Result, Trace};
use ndarray::{Array1, Array2, ArrayView2, Axis};
use rayon::prelude::*;
use structdr_numerics::spectral::bottom_nontrivial;

const NAME: &str = "mcfs";

param_choice! {
    /// The LARS variant.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum LarsPath {
        /// LARS with the lasso modification (drops): the lasso of eq. 5 at every breakpoint.
        Lasso = "lasso",
        /// Plain least angle regression (scikit-learn's `Lars`, used by scikit-feature).
        Lar = "lar",
    }
}

declare_params! {
    /// MCFS parameters.
    #[derive(Debug, Clone)]
    pub struct Mcfs {
        /// K: the number of eigenvectors (clusters).
        pub n_clusters: usize = int("n_clusters", 1, 5, "K eigenvectors of L y = lambda D y, the number of clusters (Cai et al.: the number of classes; set it per data set; 5 = Cai's MCFS_p and scikit-feature default)"),
        /// Neighbours per sample before symmetrisation.
        pub k: usize = int("k", 1, 5, "neighbours per sample of the K-NN graph before symmetrisation (5 as in Cai et al. and the ESL protocol)"),
        /// Heat or binary weights.
        pub weights: EdgeWeights = choice("weights", EdgeWeights::NAMES, "heat", "edge weights: heat s_ij = exp(-||x_i - x_j||^2 / (2 sigma^2)), or binary s_ij = 1"),
        /// `sigma = sigma_scale * delta_0`.
        pub sigma_scale: f64 = positive("sigma_scale", 1.0, "heat width sigma = sigma_scale x delta_0, delta_0 = mean pairwise distance (ESL protocol grid: 2^-3 .. 2^3)"),
        /// LARS cardinality.
        pub n_nonzero: usize = int("n_nonzero", 1, 300, "LARS stops when each a_k has this many non-zeros (Cai et al.: the number of selected features; one value for every n_selected here; clamped to min(M, N - 1))"),
        /// LARS-lasso or plain LAR.
        pub path: LarsPath = choice("path", LarsPath::NAMES, "lasso", "lasso: LARS with the lasso modification, the L1 problem of eq. 5 at every breakpoint; lar: plain LAR (scikit-learn's Lars, as scikit-feature)"),
        // read by the evaluation, not the fit
        _ = int("n_selected", 0, 0, "evaluation stage: the protocols score X restricted to this many top-ranked features (0 = those with a non-zero coefficient); one fit serves every value").evaluation_stage(),
        /// Absolute width overriding `sigma_scale * delta_0` (Rust only: parity tests).
        pub sigma: Option<f64> = fixed(None),
        /// `s_ii = 1` as scikit-feature's `construct_W` (Rust only: parity tests).
        pub self_loops: bool = fixed(false),
    }
}

/// What [`Mcfs::solve`] returns.
#[derive(Debug, Clone)]
pub struct McfsSolution {
    /// The spectral embedding Y (N x K), `y_k = D^{-1/2} u_k`.
    pub y: Array2<f64>,
    /// The eigenvalues lambda_1..lambda_{K+1} (the trivial one first).
    pub eigenvalues: Vec<f64>,
    /// The coefficients, M x K (column k regresses y_k).
    pub coef: Array2<f64>,
    /// Per eigenvector: LARS end, steps, lambda, drops, excluded.
    pub paths: Vec<(LarsEnd, usize, f64, usize, usize)>,
    /// Largest relative KKT residual of the lasso end points (NaN for plain LAR).
    pub kkt: f64,
    /// The cardinality used.
    pub cardinality: usize,
    /// Notes on the graph.
    pub graph_note: String,
}

impl Mcfs {
    /// The graph this instance builds.
    pub fn graph_spec(&self) -> GraphSpec {
        GraphSpec { k: self.k, weights: self.weights, sigma_scale: self.sigma_scale, sigma: self.sigma, self_loops: self.self_loops }
    }

    /// Steps 1-3 of the module doc.
    pub fn solve(&self, x: ArrayView2<f64>) -> Result<McfsSolution> {
        check_input(NAME, &x, 2)?;
        let (n, m) = x.dim();
        check_clusters(NAME, n, self.n_clusters, self.k)?;
        crate::api::check_dense_size(NAME, n)?;
        let g = sample_graph(NAME, x, &self.graph_spec())?;
        let (lhat, s) = structdr_numerics::graphs::laplacian::normalized(g.graph.dense_adjacency(), 0.0)
            .map_err(|i| MethodError::Degenerate { method: NAME, reason: format!("sample {i} has degree 0") })?;
        let (y, eigenvalues) = bottom_nontrivial(lhat.view(), self.n_clusters, Some(&s)).map_err(numerics(NAME))?;
        let xc = &x - &x.mean_axis(Axis(0)).expect("n > 0").insert_axis(Axis(0));
        let yc = &y - &y.mean_axis(Axis(0)).expect("n > 0").insert_axis(Axis(0));
        let gram = (n > m).then(|| xc.t().dot(&xc));
        let cardinality = self.n_nonzero.min(m).min(n - 1);
        let lasso = self.path == LarsPath::Lasso;
        let fits: Vec<_> =
            (0..self.n_clusters).into_par_iter().map(|k| lars(xc.view(), gram.as_ref().map(|g| g.view()), yc.column(k), cardinality, lasso)).collect();
        let mut coef = Array2::zeros((m, self.n_clusters));
        let mut kkt = if lasso { 0.0f64 } else { f64::NAN };
        let mut paths = Vec::new();
        for (k, f) in fits.into_iter().enumerate() {
            coef.column_mut(k).assign(&f.coef);
            if lasso {
                kkt = kkt.max(lasso_kkt_residual(xc.view(), yc.column(k), f.coef.view(), f.lambda));
            }
            paths.push((f.end, f.steps, f.lambda, f.drops, f.excluded));
        }
        Ok(McfsSolution { y, eigenvalues, coef, paths, kkt, cardinality, graph_note: graph_note(&g, self.k) })
    }
}

/// `max_k |a_{k,j}|` for every feature j.
pub fn mcfs_scores(coef: ArrayView2<f64>) -> Array1<f64> {
    coef.map_axis(Axis(1), |r| r.iter().fold(0.0f64, |a, v| a.max(v.abs())))
}

impl Embedder for Mcfs {
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
        let sol = self.solve(input.x)?;
        let weights = mcfs_scores(sol.coef.view());
        let ranking = rank_by(weights.view(), false);
        let nnz = weights.iter().filter(|&&w| w > 0.0).count();
        let mut trace = Trace::closed_form();
        trace.termination = format!("LARS{} to {} non-zeros per eigenvector", if self.path == LarsPath::Lasso { "-lasso" } else { "" }, sol.cardinality);
        if sol.kkt.is_finite() {
            trace = trace.with_kkt_residual(sol.kkt);
        }
        let mut f = Fitted::new(Output::FeatureScores(FeatureScores { weights, ranking }), trace);
        f.notes.push(sol.graph_note.clone());
        f.notes.push(format!("eigenvalues lambda_1..lambda_{}: {:?}", sol.eigenvalues.len(), sol.eigenvalues));
        if sol.cardinality < self.n_nonzero {
            f.notes.push(format!("n_nonzero = {} clamped to min(M, N - 1) = {}", self.n_nonzero, sol.cardinality));
        }
        let ends: Vec<String> = sol.paths.iter().map(|(e, s, l, d, x)| format!("{e:?}/{s} steps/lambda {l:.3e}/{d} drops/{x} excluded")).collect();
        f.notes.push(format!("{nnz} features with a non-zero coefficient; LARS paths: {}", ends.join("; ")));
        Ok(f)
    }
}

pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: NAME,
        summary: "MCFS: the K smallest non-trivial generalised eigenvectors of L y = lambda D y on the heat-kernel K-NN graph, an L1 regression of each on X by LARS(-lasso) to n_nonzero non-zeros, score max_k |a_kj|.",
        reference: "Cai, Zhang & He, Unsupervised Feature Selection for Multi-Cluster Data, KDD 2010",
        // 2: LARS's ties to enter within 1e-10 relative go to the lowest index (lars::TIE_RTOL):
        // which of two identical features entered was OpenBLAS's rounding (its thread count)
        version: 2,
        output: OutputKind::FeatureScores,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: false,
        params: Mcfs::schema(()),
        build: |p| declare::build::<Mcfs>(NAME, (), p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blobs() -> Array2<f64> {
        // three separated groups: feature 0 marks group 1, feature 1 group 2; features 2..5 nuisance
        Array2::from_shape_fn((45, 6), |(i, j)| {
            let g = i / 15;
            let t = (i as f64 * 0.731).sin();
            match j {
                0 => 3.0 * f64::from(g == 1) + 0.1 * t,
                1 => 3.0 * f64::from(g == 2) + 0.1 * (i as f64 * 1.3).cos(),
                _ => (i as f64 * (0.2 + j as f64 * 0.37)).sin(),
            }
        })
    }

    #[test]
    fn lasso_end_points_satisfy_kkt_and_cluster_features_score_highest() {
        let x = blobs();
        let m = Mcfs { n_clusters: 2, n_nonzero: 3, ..Mcfs::default() };
        let sol = m.solve(x.view()).unwrap();
        assert!(sol.kkt < 1e-9, "KKT residual {}", sol.kkt);
        let w = mcfs_scores(sol.coef.view());
        let rank = rank_by(w.view(), false);
        assert!(rank[..2].contains(&0) && rank[..2].contains(&1), "ranking {rank:?}, scores {w:?}");
        for k in 0..2 {
            assert!(sol.coef.column(k).iter().filter(|&&v| v != 0.0).count() <= 3);
        }
    }

    #[test]
    fn more_clusters_than_samples_is_an_input_error() {
        let x = blobs();
        let e = Mcfs { n_clusters: 45, ..Mcfs::default() }.fit(x.view(), 0).unwrap_err();
        assert!(matches!(e, MethodError::Input { .. }) && e.to_string().contains("n_clusters"), "{e}");
    }

    #[test]
    fn constant_and_duplicate_features_are_handled() {
        let mut x = blobs();
        for i in 0..45 {
            x[[i, 4]] = 1.0;
            x[[i, 5]] = x[[i, 0]];
        }
        let f = Mcfs { n_clusters: 2, ..Mcfs::default() }.fit(x.view(), 0).unwrap();
        let s = f.feature_scores().unwrap();
        assert_eq!(s.weights[4], 0.0);
        assert!(s.weights[0] == 0.0 || s.weights[5] == 0.0, "{:?}", s.weights);
        f.check_shape(45, 6).unwrap();
    }
}
