//! The method contract: what a fit receives ([`FitInput`]), what it returns ([`Fitted`]: an
//! [`Output`] that says what it is, a [`Trace`], the learned graph and components, notes and, where
//! the method has one, an out-of-sample [`Transform`]), and the trait every method implements
//! ([`Embedder`]).
//!
//! | output kind | what | evaluated as |
//! |---|---|---|
//! | [`Output::Embedding`] | N x d coordinates of the samples | the coordinates |
//! | [`Output::FeatureScores`] | one weight per input feature and the features ranked | the input restricted to the top-ranked features (the runner's `n_selected`) |
//! | [`Output::PrincipalGraph`] | K centres joined by edges, every sample's projection on the graph | the projections |

use super::{MethodError, MethodInfo, ParamMap, Result, StopReason, TransformState};
use ndarray::{Array1, Array2, ArrayView2};
use std::sync::Arc;

/// An initial value for methods that accept one ([`crate::api::MethodInfo::accepts_init`]).
#[derive(Debug, Clone, Copy)]
pub enum Init<'a> {
    /// Initial coordinates of the samples (N x d).
    Embedding(ArrayView2<'a, f64>),
    /// Initial centres of a principal graph (K x d in the space the method keeps them in).
    Centres(ArrayView2<'a, f64>),
}

/// What a fit receives: the samples in rows, optional labels (for supervised methods; the
/// unsupervised ones ignore them), an optional initial value and the seed that drives every random
/// choice.
#[derive(Debug, Clone, Copy)]
pub struct FitInput<'a> {
    /// The data, N x D, samples in rows.
    pub x: ArrayView2<'a, f64>,
    /// One label per sample, when the caller has them.
    pub labels: Option<&'a [i64]>,
    /// An initial value, for methods that accept one.
    pub init: Option<Init<'a>>,
    /// The seed: the same seed, input and parameters give bit-identical output at any thread count.
    pub seed: u64,
}

impl<'a> FitInput<'a> {
    /// Data and seed only (no labels, no initial value).
    pub fn new(x: ArrayView2<'a, f64>, seed: u64) -> FitInput<'a> {
        FitInput { x, labels: None, init: None, seed }
    }
    /// The same input with an initial value.
    pub fn with_init(self, init: Init<'a>) -> FitInput<'a> {
        FitInput { init: Some(init), ..self }
    }
    /// The same input with labels.
    pub fn with_labels(self, labels: &'a [i64]) -> FitInput<'a> {
        FitInput { labels: Some(labels), ..self }
    }
}

/// The kind of a method's output, as its registry entry declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputKind {
    /// [`Output::Embedding`].
    Embedding,
    /// [`Output::FeatureScores`].
    FeatureScores,
    /// [`Output::PrincipalGraph`].
    PrincipalGraph,
}

impl std::fmt::Display for OutputKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            OutputKind::Embedding => "embedding",
            OutputKind::FeatureScores => "feature scores",
            OutputKind::PrincipalGraph => "principal graph",
        })
    }
}

/// Feature scores of a selection method: one weight per input feature (higher = more relevant)
/// and the features ranked, most relevant first.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureScores {
    /// One weight per input feature (length D).
    pub weights: Array1<f64>,
    /// Feature indices, most relevant first (a permutation of `0..D`).
    pub ranking: Vec<usize>,
}

impl FeatureScores {
    /// The columns of `x` at the first `m` ranked features, in rank order: what the evaluation
    /// protocols score for `n_selected = m`. Errors if `m` is 0 or exceeds D.
    pub fn select(&self, x: ArrayView2<f64>, m: usize) -> Result<Array2<f64>> {
        if m == 0 || m > self.ranking.len() || x.ncols() != self.ranking.len() {
            return Err(MethodError::Input {
                method: "feature scores",
                reason: format!("n_selected = {m} must be in [1, {}] for {} features", self.ranking.len(), x.ncols()),
            });
        }
        Ok(x.select(ndarray::Axis(1), &self.ranking[..m]))
    }
}

/// A principal graph: K centres joined by edges, and every sample's projection on the graph.
#[derive(Debug, Clone, PartialEq)]
pub struct PrincipalGraph {
    /// Centres, K x p (p = D for graphs in the input space, d for DDRTree's latent tree).
    pub centres: Array2<f64>,
    /// Edges `(k, l, weight)` between centres, `k < l`, sorted.
    pub edges: Vec<(usize, usize, f64)>,
    /// Every sample's projection in the centres' space, N x p (DDRTree: the latent points Z;
    /// principal graphs: the soft-assignment-weighted centres).
    pub projection: Array2<f64>,
}

/// What a method returns, saying what it is.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// The embedding, samples in rows (N x d).
    Embedding(Array2<f64>),
    /// Feature weights and ranking (feature selection).
    FeatureScores(FeatureScores),
    /// Centres, edges and projections (principal graphs and trees).
    PrincipalGraph(PrincipalGraph),
}

impl Output {
    /// The kind of this output.
    pub fn kind(&self) -> OutputKind {
        match self {
            Output::Embedding(_) => OutputKind::Embedding,
            Output::FeatureScores(_) => OutputKind::FeatureScores,
            Output::PrincipalGraph(_) => OutputKind::PrincipalGraph,
        }
    }
}

/// How an iterative method ran: the objective after each iteration, the number of iterations and
/// why it stopped ([`StopReason`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// Objective value after each iteration (empty for closed-form methods).
    pub history: Vec<f64>,
    /// Iterations run (0 for closed-form methods).
    pub iterations: usize,
    /// Why the method stopped, typed: converged, iteration limit, stalled, ... with the stopping
    /// rule's residual and tolerance.
    pub stop: StopReason,
    /// The solver's own words on why it stopped (e.g. "CONVERGENCE: NORM_OF_PROJECTED_GRADIENT",
    /// "closed form").
    pub termination: String,
    /// KKT residual of the final iterate for methods that solve a constrained optimisation problem
    /// (e.g. `||proj grad f||_inf` of a bound-constrained dual, absolute); `None` where it does not
    /// apply.
    pub kkt_residual: Option<f64>,
}

impl Trace {
    /// The trace of a closed-form method ([`StopReason::NotIterative`]).
    pub fn closed_form() -> Trace {
        Trace { history: Vec::new(), iterations: 0, stop: StopReason::NotIterative, termination: "closed form".into(), kkt_residual: None }
    }
    /// The trace of an iterative method; `termination` defaults to the stop reason in words when
    /// empty.
    pub fn iterative(history: Vec<f64>, iterations: usize, stop: StopReason, termination: impl Into<String>) -> Trace {
        let mut termination = termination.into();
        if termination.is_empty() {
            termination = stop.to_string();
        }
        Trace { history, iterations, stop, termination, kkt_residual: None }
    }

    /// Whether the stopping rule was met ([`StopReason::is_converged`]).
    pub fn converged(&self) -> bool {
        self.stop.is_converged()
    }

    /// The same trace with the final iterate's KKT residual recorded.
    pub fn with_kkt_residual(mut self, residual: f64) -> Trace {
        self.kkt_residual = Some(residual);
        self
    }
}

/// An out-of-sample map fitted with the method: new samples (rows, the training data's D columns)
/// to the method's output space. Transforming the training data reproduces the embedding.
pub trait Transform: Send + Sync + std::fmt::Debug {
    /// Maps `x` (M x D) to M x d.
    fn transform(&self, x: ArrayView2<f64>) -> Result<Array2<f64>>;
    /// The numbers that define the map, to save it: `registry::rebuild_transform` makes an equal map.
    fn state(&self) -> TransformState;
}

/// What a fitted method returns.
#[derive(Debug, Clone)]
pub struct Fitted {
    /// The output, which says what it is.
    pub output: Output,
    /// The graph on the samples the method learned or used, when it has one (SPL, MPME, ESL, LE,
    /// LLE, FSL). Principal graphs keep their graph on centres in [`Output::PrincipalGraph`].
    pub graph: Option<Graph>,
    /// Connected-component index of every sample, when the method splits the data.
    pub components: Option<Vec<usize>>,
    /// Objective history, iterations and why the method stopped.
    pub trace: Trace,
    /// Human-readable remarks (e.g. "joined 3 components with 2 edges").
    pub notes: Vec<String>,
    /// The out-of-sample transform, for inductive methods (see the registry's `inductive`).
    pub transform: Option<Arc<dyn Transform>>,
}

/// A weighted undirected graph on the samples (or on learned centres), as an edge list `i < j`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Graph {
    /// Number of vertices.
    pub n_vertices: usize,
    /// Edges `(i, j, weight)` with `i < j`, sorted.
    pub edges: Vec<(usize, usize, f64)>,
}

impl Fitted {
    /// An output with an empty trace, graph, components, notes and transform.
    pub fn new(output: Output, trace: Trace) -> Fitted {
        Fitted { output, graph: None, components: None, trace, notes: Vec::new(), transform: None }
    }
    /// A closed-form embedding.
    pub fn closed_form(embedding: Array2<f64>) -> Fitted {
        Fitted::new(Output::Embedding(embedding), Trace::closed_form())
    }
    /// The kind of the output.
    pub fn kind(&self) -> OutputKind {
        self.output.kind()
    }
    /// The coordinates the evaluation scores: an embedding, or a principal graph's projections;
    /// `None` for feature scores (the runner selects features first).
    pub fn embedding(&self) -> Option<&Array2<f64>> {
        match &self.output {
            Output::Embedding(y) => Some(y),
            Output::PrincipalGraph(g) => Some(&g.projection),
            Output::FeatureScores(_) => None,
        }
    }
    /// [`Fitted::embedding`], consuming the fit.
    pub fn into_embedding(self) -> Option<Array2<f64>> {
        match self.output {
            Output::Embedding(y) => Some(y),
            Output::PrincipalGraph(g) => Some(g.projection),
            Output::FeatureScores(_) => None,
        }
    }
    /// A principal graph's centres.
    pub fn centres(&self) -> Option<&Array2<f64>> {
        match &self.output {
            Output::PrincipalGraph(g) => Some(&g.centres),
            _ => None,
        }
    }
    /// Feature scores, for selection methods.
    pub fn feature_scores(&self) -> Option<&FeatureScores> {
        match &self.output {
            Output::FeatureScores(s) => Some(s),
            _ => None,
        }
    }
    /// The graph to draw: a principal graph's edges on its centres, else the graph on the samples.
    pub fn drawn_graph(&self) -> Option<Graph> {
        match &self.output {
            Output::PrincipalGraph(g) => Some(Graph { n_vertices: g.centres.nrows(), edges: g.edges.clone() }),
            _ => self.graph.clone(),
        }
    }
    /// Checks that the output has the shape its kind promises for `n` samples of `d_in` features
    /// and holds only finite numbers: embeddings and projections N rows, feature scores D weights
    /// and a permutation of `0..D`, principal-graph edges between existing centres.
    pub fn check_shape(&self, n: usize, d_in: usize) -> std::result::Result<(), String> {
        let finite = |a: &Array2<f64>, what: &str| if a.iter().all(|v| v.is_finite()) { Ok(()) } else { Err(format!("{what} contains NaN or Inf")) };
        match &self.output {
            Output::Embedding(y) => {
                if y.nrows() != n {
                    return Err(format!("embedding has {} rows for {n} samples", y.nrows()));
                }
                finite(y, "embedding")
            }
            Output::FeatureScores(s) => {
                if s.weights.len() != d_in || s.ranking.len() != d_in {
                    return Err(format!("feature scores have {} weights and {} ranks for {d_in} features", s.weights.len(), s.ranking.len()));
                }
                let mut seen = vec![false; d_in];
                for &r in &s.ranking {
                    if r >= d_in || std::mem::replace(&mut seen[r], true) {
                        return Err("the feature ranking is not a permutation".into());
                    }
                }
                if s.weights.iter().all(|v| v.is_finite()) {
                    Ok(())
                } else {
                    Err("feature weights contain NaN or Inf".into())
                }
            }
            Output::PrincipalGraph(g) => {
                if g.projection.nrows() != n {
                    return Err(format!("projection has {} rows for {n} samples", g.projection.nrows()));
                }
                if g.projection.ncols() != g.centres.ncols() {
                    return Err(format!("projection ({} columns) and centres ({} columns) live in different spaces", g.projection.ncols(), g.centres.ncols()));
                }
                if let Some(e) = g.edges.iter().find(|e| e.0 >= e.1 || e.1 >= g.centres.nrows()) {
                    return Err(format!("edge {e:?} is not between two of the {} centres (k < l)", g.centres.nrows()));
                }
                finite(&g.centres, "centres")?;
                finite(&g.projection, "projection")
            }
        }
    }
}

/// The method contract.
///
/// Implement [`Embedder::info`], [`Embedder::params`] (the struct's
/// [`crate::api::declare::Declared::to_params`]) and [`Embedder::fit_checked`]; callers use
/// [`Embedder::fit_with`] (or [`Embedder::fit`] for data and seed only), which checks the
/// instance's parameters against its registry entry's schema first, unless it is
/// [`crate::api::Checked`] (what the registry builds: checked once, when made), and refuses an
/// initial value the entry does not accept. So the schema is the one declaration of every
/// parameter's type and range, however the instance was made (from a spec, the CLI, or a struct
/// literal in Rust); `fit_checked` only adds checks that depend on the data (e.g. `dim < N`). The
/// seed drives every random choice: the same seed, input and parameters give bit-identical output
/// whatever the number of threads. Bad input is a typed error, never a panic.
pub trait Embedder: Send + Sync {
    /// The registry name of the method.
    fn name(&self) -> &'static str;
    /// The registry entry this instance belongs to (name, version, schema, output kind, ...).
    fn info(&self) -> MethodInfo;
    /// This instance's parameters as its schema names them: the inverse of the entry's `build`
    /// (evaluation-stage parameters, which the fit does not hold, are left out).
    fn params(&self) -> ParamMap;
    /// Fits on the input; the parameters have passed the schema.
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted>;
    /// Checks this instance's parameters against `info`'s schema (`info` is [`Embedder::info`]).
    /// Methods do not override this: [`crate::api::Checked`], whose parameters were checked when
    /// it was made, is the one instance that skips it.
    fn check_params(&self, info: &MethodInfo) -> Result<()> {
        info.check(&self.params())?;
        Ok(())
    }
    /// Checks the parameters against the schema (unless the instance is [`crate::api::Checked`]),
    /// then fits on the input. Also refuses an initial value when the entry says
    /// `accepts_init = false`, so methods never check that themselves.
    fn fit_with(&self, input: &FitInput) -> Result<Fitted> {
        let info = self.info();
        self.check_params(&info)?;
        if input.init.is_some() && !info.accepts_init {
            return Err(MethodError::Input { method: info.name, reason: "this method takes no initial value".into() });
        }
        crate::api::check_degenerate(info.name, &input.x)?;
        self.fit_checked(input)
    }
    /// Fits on `x` (N x D, samples in rows) with `seed`, no labels and no initial value.
    fn fit(&self, x: ArrayView2<f64>, seed: u64) -> Result<Fitted> {
        self.fit_with(&FitInput::new(x, seed))
    }
}
