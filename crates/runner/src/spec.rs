//! Experiment specs: one TOML file per table or figure.
//!
//! A spec names data sets (with preprocessing), methods with parameter grids, the evaluation
//! protocols, the seed, and optionally the papers' reference values. Unknown keys are errors, and
//! every semantic check (unknown method, parameter, data set, wrong type or range) runs before any
//! work and reports the spec's line number.
//!
//! ```toml
//! id = "demo"
//! title = "Embeddings of synthetic manifolds"
//! seed = 7
//!
//! [dim]                      # how `dim = "energy"` resolves, per data set
//! threshold = 0.95
//! rule = "ge"
//!
//! [evaluation]
//! protocols = ["loocv"]      # "loocv" and/or "kmeans"
//!
//! [[dataset]]
//! name = "helix"             # a registry data set or a synthetic generator
//! params = { n = 400 }
//! preprocess = [{ op = "zscore" }]
//!
//! [[method]]
//! name = "le"
//! grid = { k = [5, 10], dim = "energy" }
//!
//! [[figure]]                 # a stand-alone figure: one fit per panel, fixed parameters
//! name = "mpme_w"            # -> <output>/mpme_w.{png,svg}; every panel also in <output>/figures.md
//! title = "learned W"
//! kind = "adjacency"         # embedding | graph | convergence | adjacency | weights | contingency
//! order = "manifold"         # adjacency: sample | manifold | label | component
//! columns = 5                # panels per row (default at most 4)
//! # colour = "components"    # embedding / graph: auto | label | manifold | components | pc1
//! # separate_components = true   # embedding / graph: draw each learned component apart
//!
//! [[figure.panel]]
//! dataset = "helix"
//! method = "mpme"
//! params = { C = 1.0, lambda = 10.0 }
//! title = "C = 1"
//! ```

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use structdr_datasets::preprocess::Step;
use structdr_linalg::EnergyRule;
use structdr_methods::api::OutputKind;
use structdr_methods::{ParamMap, ParamValue};
use toml::Spanned;

/// A spec error, located at a line of the spec file when possible; `others` holds the further
/// errors found in the same pass (`check` reports all of them at once, one per line).
#[derive(Debug, thiserror::Error)]
#[error("{file}{}: {message}{}", line.map(|l| format!(":{l}")).unwrap_or_default(), others.iter().map(|e| format!("\n{e}")).collect::<String>())]
pub struct SpecError {
    /// Path of the spec file, as displayed.
    pub file: String,
    /// 1-based line of the spec where the error was found, when known.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// Further errors of the same spec.
    pub others: Vec<SpecError>,
}

/// How `dim = "energy"` resolves: the smallest d whose top-d PCA eigenvalues reach `threshold` of
/// the total (after the data set's preprocessing).
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DimRule {
    /// Fraction of the total variance the kept eigenvalues must reach, in (0, 1] (default 0.95).
    #[serde(default = "default_threshold")]
    pub threshold: f64,
    /// Whether the kept fraction must reach (`ge`, the default) or exceed (`gt`) the threshold.
    #[serde(default = "default_rule")]
    pub rule: EnergyRule,
}
fn default_threshold() -> f64 {
    0.95
}
fn default_rule() -> EnergyRule {
    EnergyRule::Ge
}
impl Default for DimRule {
    fn default() -> Self {
        DimRule { threshold: default_threshold(), rule: default_rule() }
    }
}

/// Evaluation protocols run on every embedding.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Evaluation {
    /// `loocv` (1-NN leave-one-out accuracy) and/or `kmeans` (ACC / NMI over seeded restarts).
    pub protocols: Vec<Protocol>,
    /// k-means restarts (default 20).
    #[serde(default = "default_restarts")]
    pub restarts: usize,
    /// Neighbourhood size k of the `neighbourhood` protocol (default 10; needs k < N / 2).
    #[serde(default = "default_neighbourhood_k")]
    pub neighbourhood_k: usize,
    /// Metric maximised when selecting the best grid cell per (method, data set); default: the
    /// first protocol's headline metric (`loocv_1nn_accuracy` or `acc_mean`).
    #[serde(default)]
    pub select: Option<String>,
}
fn default_restarts() -> usize {
    20
}
fn default_neighbourhood_k() -> usize {
    10
}
fn default_repeats() -> usize {
    1
}
/// Most seeds per cell a spec may ask for (`repeats`).
pub const MAX_REPEATS: usize = 1000;

/// An evaluation protocol.
#[derive(Debug, Clone, Copy, Deserialize, serde::Serialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// Leave-one-out 1-nearest-neighbour accuracy (`loocv_1nn_accuracy`).
    Loocv,
    /// k-means with k = number of classes over seeded restarts, scored by ACC and NMI (`acc_mean`, `nmi_mean`, ...).
    Kmeans,
    /// Leave-one-out 1-NN accuracy scored within each point's own component of the fit
    /// (`loocv_1nn_accuracy_components`): when a method's learned graph splits and it embeds each
    /// component on its own (ESL), points of different components are infinitely far apart and a
    /// point alone in its component counts as wrong
    /// ([`structdr_eval::loocv_1nn_accuracy_within_groups`]). Equals `loocv` for fits without
    /// components.
    LoocvComponents,
    /// Neighbourhood preservation of the embedding against the (preprocessed) data for
    /// `k = [evaluation].neighbourhood_k`: trustworthiness and continuity (Venna & Kaski 2001) and
    /// k-NN preservation ([`structdr_eval::neighbourhood_preservation`]); needs no labels.
    Neighbourhood,
}

impl Protocol {
    /// The protocol's name in specs and cell keys.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Loocv => "loocv",
            Protocol::Kmeans => "kmeans",
            Protocol::LoocvComponents => "loocv_components",
            Protocol::Neighbourhood => "neighbourhood",
        }
    }
    /// Whether the protocol scores against class labels (all but `neighbourhood`): on a data set
    /// without labels it is not scored, and the record says so.
    pub fn needs_labels(self) -> bool {
        !matches!(self, Protocol::Neighbourhood)
    }
    /// The metrics a record of this protocol holds.
    pub fn metrics(self) -> &'static [&'static str] {
        match self {
            Protocol::Loocv => &["loocv_1nn_accuracy"],
            Protocol::Kmeans => &["acc_mean", "acc_std", "nmi_mean", "nmi_std", "acc_best_sse", "nmi_best_sse"],
            Protocol::LoocvComponents => &["loocv_1nn_accuracy_components"],
            Protocol::Neighbourhood => &["trustworthiness", "continuity", "knn_preservation"],
        }
    }
}

/// One data set of the spec.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    /// Registry name (e.g. `iris`) or synthetic generator (e.g. `helix`); for a `path` data set,
    /// its name (default: the file name without extension). Always set in a validated [`Plan`].
    #[serde(default)]
    pub name: Option<Spanned<String>>,
    /// The researcher's own data file (`.npy`, `.csv` / `.tsv` / `.txt`, `.libsvm` / `.svm`,
    /// `.mat`), relative to the directory structdr runs in; recorded by the checksum of its bytes.
    #[serde(default)]
    pub path: Option<Spanned<String>>,
    /// The file's format when its extension does not say (`npy`, `csv`, `libsvm`, `mat`).
    #[serde(default)]
    pub format: Option<structdr_datasets::file::FileFormat>,
    /// `.mat` files: the variable holding X (default: the only 2-D numeric one).
    #[serde(default)]
    pub variable: Option<String>,
    /// `.mat` files: the variable holding the labels.
    #[serde(default)]
    pub labels_variable: Option<String>,
    /// A file of labels, one per sample (`.npy`, or one column of `.csv` / `.tsv` / `.txt`).
    #[serde(default)]
    pub labels: Option<String>,
    /// The column of the data file holding the labels, 1-based (`-1`: the last); removed from X.
    #[serde(default)]
    pub label_column: Option<i64>,
    /// Column label in tables (default: the name).
    #[serde(default)]
    pub label: Option<String>,
    /// The paper's name of this data set (column of the reference table).
    #[serde(default)]
    pub paper: Option<String>,
    /// Generator parameters (synthetic sets only).
    #[serde(default)]
    pub params: BTreeMap<String, f64>,
    /// Generator seed (synthetic sets; default: the spec seed).
    #[serde(default)]
    pub seed: Option<u64>,
    /// Preprocessing steps, in order.
    #[serde(default)]
    pub preprocess: Vec<Step>,
}

impl DatasetSpec {
    /// The data set's name (registry, generator or the file data set's own).
    pub fn name(&self) -> &str {
        self.name.as_ref().map_or("", |n| n.get_ref().as_str())
    }
    /// Where the name (or the path) stands in the spec text.
    fn span(&self) -> Option<std::ops::Range<usize>> {
        self.name.as_ref().map(|n| n.span()).or_else(|| self.path.as_ref().map(|p| p.span()))
    }
    /// The file source of a `path` data set.
    pub fn file_source(&self) -> Option<structdr_datasets::file::FileSource> {
        let path = self.path.as_ref()?;
        Some(structdr_datasets::file::FileSource {
            path: PathBuf::from(path.get_ref()),
            format: self.format,
            variable: self.variable.clone(),
            labels_variable: self.labels_variable.clone(),
            labels: self.labels.as_ref().map(PathBuf::from),
            label_column: self.label_column,
        })
    }
}

/// One method of the spec with its grid.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MethodSpec {
    /// Registry name of the method.
    pub name: Spanned<String>,
    /// Row label in tables (default: the name).
    #[serde(default)]
    pub label: Option<String>,
    /// Row of the reference table that this method corresponds to.
    #[serde(default)]
    pub paper_row: Option<String>,
    /// Parameter -> value or list of values; the grid is their cartesian product.
    #[serde(default)]
    pub grid: BTreeMap<String, Spanned<toml::Value>>,
    /// Protocols run on this method's cells besides `[evaluation].protocols` (recorded in the
    /// cells' keys), e.g. `["loocv_components"]` for a method whose graph can split.
    #[serde(default)]
    pub protocols: Vec<Protocol>,
    /// The metric this row shows and selects its best cell by (default: `[evaluation].select`).
    /// Two rows with the same method and grid and different `select` share their cells.
    #[serde(default)]
    pub select: Option<Spanned<String>>,
    /// An external method: the program and arguments to run per cell (e.g.
    /// `["python3", "baselines/sklearn_tsne.py"]`; protocol in [`crate::external`]). `name` is then
    /// the method's own name (not a registry method) and `grid` holds its parameters, passed on.
    #[serde(default)]
    pub command: Option<Spanned<Vec<String>>>,
    /// External methods: time limit of one run in seconds (default 600).
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// External methods: what the command writes, `embedding` (default) or `feature_scores`.
    #[serde(default)]
    pub output: Option<OutputKind>,
    /// External methods: whether the fit depends on the seed, so `repeats` apply (default true).
    #[serde(default)]
    pub randomised: Option<bool>,
    /// External methods: whether the command gets the labels (`labels.npy`; default false).
    #[serde(default)]
    pub needs_labels: Option<bool>,
}

/// The papers' values to show beside ours. These are references, never outputs.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    /// Where the numbers come from (shown under the table).
    pub source: String,
    /// Table id in `../shared/papers/tables.toml` (checked by a test when that file is present).
    #[serde(default)]
    pub table: Option<String>,
    /// The paper's column names, in the order of `rows` values.
    pub datasets: Vec<String>,
    /// The paper's reduced dimension per data set (shown beside ours), when it reports one.
    #[serde(default)]
    pub d: Option<Vec<usize>>,
    /// Paper row name -> values (one per entry of `datasets`).
    pub rows: BTreeMap<String, Vec<f64>>,
}

impl Reference {
    /// The paper's value for `row` at column `paper_dataset`.
    pub fn value(&self, row: &str, paper_dataset: &str) -> Option<f64> {
        let j = self.datasets.iter().position(|d| d == paper_dataset)?;
        self.rows.get(row).and_then(|r| r.get(j)).copied()
    }
}

/// Which figures to draw.
#[derive(Debug, Clone, Deserialize, serde::Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct FigureSpec {
    /// Draw the 2-D embedding of the best cell of every (method, data set), one panel per method,
    /// one file per data set.
    #[serde(default)]
    pub best_embeddings: bool,
}

/// The raw spec as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Identifier of the spec; the default output directory is `results/<id>`.
    pub id: String,
    /// Heading of the generated tables and of `figures.md`.
    pub title: String,
    /// Free text written under the title of the Markdown table (default empty).
    #[serde(default)]
    pub description: String,
    /// Base seed (default 0): seed of the synthetic generators unless a data set gives one, and
    /// part of every cell key, from which each cell's seed derives.
    #[serde(default)]
    pub seed: u64,
    /// A project-local data-set registry (same schema as `crates/datasets/registry.toml`: name,
    /// URLs, SHA-256, format, shape), relative to the directory structdr runs in: its sets are
    /// named in `[[dataset]]` like built-in ones, without rebuilding. Its names may not shadow
    /// built-in ones.
    #[serde(default)]
    pub registry: Option<String>,
    /// Seeds per grid cell of a randomised method (`MethodInfo::randomised`; default 1): the cell
    /// runs under `repeats` seeds derived from its key, tables show the mean and the standard
    /// deviation over them, and the best cell is selected on the mean. Other methods run once.
    #[serde(default = "default_repeats")]
    pub repeats: usize,
    /// Output directory inside the results directory (default `<id>`: `results/<id>`; another
    /// spec's id shares its record store). Relative, without `..`.
    #[serde(default)]
    pub output: Option<String>,
    /// Path stem of the table files inside the results directory (e.g. `table1_loocv` for
    /// `results/table1_loocv.{md,csv,tex}`; default `<output>/table`). Relative, without `..`.
    #[serde(default)]
    pub table_path: Option<String>,
    /// How `dim = "energy"` resolves (`[dim]`; default threshold 0.95, rule `ge`).
    #[serde(default)]
    pub dim: DimRule,
    /// Required when the spec has methods (grid cells to score).
    #[serde(default)]
    pub evaluation: Option<Evaluation>,
    /// The data sets (`[[dataset]]`), in table column order.
    #[serde(rename = "dataset")]
    pub datasets: Vec<DatasetSpec>,
    /// The methods with their grids (`[[method]]`), in table row order.
    #[serde(rename = "method", default)]
    pub methods: Vec<MethodSpec>,
    /// The papers' values shown beside ours (`[reference]`).
    #[serde(default)]
    pub reference: Option<Reference>,
    /// Which automatic figures to draw (`[figures]`).
    #[serde(default)]
    pub figures: FigureSpec,
    /// Stand-alone figures: each panel fits one method with fixed parameters on one data set.
    #[serde(rename = "figure", default)]
    pub figure_defs: Vec<FigureDef>,
}

/// What a stand-alone figure draws.
#[derive(Debug, Clone, Copy, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum FigureKind {
    /// The embedding's first two coordinates, coloured by label.
    Embedding,
    /// The data (or embedding) with the learned graph drawn over its vertices (learned centres
    /// when the method returns them); more than two dimensions are shown on their top-2 PCA plane.
    Graph,
    /// The objective history against the iteration.
    Convergence,
    /// The learned graph's adjacency matrix (vertices in the figure's `order`), with the number
    /// of non-zeros and their fraction of N^2 in each panel title.
    Adjacency,
    /// The method's feature weights (e.g. FSL's theta) against the feature index.
    Weights,
    /// Heat map of the learned connected components (rows) against the data set's labels
    /// (columns): the fraction of each component's samples carrying each label.
    Contingency,
}

/// How the points of embedding and graph figures are coloured.
#[derive(Debug, Clone, Copy, Deserialize, serde::Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum ColourBy {
    /// The data set's labels, else its manifold coordinate, else one colour (when every panel
    /// shows the same data set).
    #[default]
    Auto,
    /// The data set's labels.
    Label,
    /// The position along the manifold of a synthetic set, each set's range mapped to [0, 1] (a
    /// continuous scale shared by all panels); a set without one shows its labels.
    Manifold,
    /// The connected component the method assigned to each sample (`Fitted.components`).
    Components,
    /// The first principal coordinate of the (preprocessed) input data (continuous scale).
    Pc1,
}

/// Vertex order of adjacency panels.
#[derive(Debug, Clone, Copy, Deserialize, serde::Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum VertexOrder {
    /// As the samples (or learned centres) come.
    #[default]
    Sample,
    /// By the position along the manifold of a synthetic set.
    Manifold,
    /// By label (stable: sample order within a label).
    Label,
    /// By learned connected component, then by the first embedding coordinate within it.
    Component,
}

/// One panel of a stand-alone figure.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PanelDef {
    /// Label of one of the spec's data sets.
    pub dataset: Spanned<String>,
    /// Registry name of the method.
    pub method: Spanned<String>,
    /// Fixed parameter values (defaults fill the rest; `dim = "energy"` allowed).
    #[serde(default)]
    pub params: BTreeMap<String, Spanned<toml::Value>>,
    /// Panel title (default: method and data set).
    #[serde(default)]
    pub title: Option<String>,
}

/// A stand-alone figure (`[[figure]]`), written to `<output>/<name>.{png,svg}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FigureDef {
    /// File stem of the figure (sanitised), `<output>/<name>.{png,svg}`.
    pub name: String,
    /// Title drawn over all panels and heading of the figure's section in `figures.md`.
    pub title: String,
    /// What every panel of the figure draws.
    pub kind: FigureKind,
    /// Point colours of embedding and graph figures.
    #[serde(default)]
    pub colour: ColourBy,
    /// Vertex order of adjacency figures.
    #[serde(default)]
    pub order: VertexOrder,
    /// Panels per row (default: at most 4).
    #[serde(default)]
    pub columns: Option<usize>,
    /// Embedding and graph figures: draw every learned connected component apart, on a grid in
    /// the panel (ESL embeds each component in its own centred coordinates, which would overlap).
    #[serde(default)]
    pub separate_components: bool,
    /// The panels (`[[figure.panel]]`), in drawing order (row by row).
    #[serde(rename = "panel")]
    pub panels: Vec<PanelDef>,
}

/// A validated figure panel: data set index, method and resolved parameters.
#[derive(Debug, Clone)]
pub struct PanelPlan {
    /// Index of the panel's data set in the spec's `datasets`.
    pub dataset: usize,
    /// Registry name of the method.
    pub method: String,
    /// Resolved parameters (defaults filled); `dim` may be the string "energy".
    pub params: ParamMap,
    /// Panel title (the given one, else "<method> on <data set>").
    pub title: String,
}

/// A grid value of `dim`: a number or the data set's energy dimension.
pub const DIM_ENERGY: &str = "energy";

/// A method with its grid expanded into fully resolved parameter sets.
#[derive(Debug, Clone)]
pub struct MethodPlan {
    /// Registry name of the method.
    pub name: String,
    /// Row label in tables (the spec's `label`, else the name).
    pub label: String,
    /// Row of the reference table that this method corresponds to, if any.
    pub paper_row: Option<String>,
    /// Resolved parameter sets (defaults filled). `dim` may be the string "energy".
    pub cells: Vec<ParamMap>,
    /// Version of the method's numerics (from the registry); part of every cell's key.
    pub version: u32,
    /// Protocols run on the method's cells: `[evaluation].protocols`, then the method's own.
    pub protocols: Vec<Protocol>,
    /// The metric the row shows and selects by.
    pub metric: String,
    /// Whether the method's fit depends on the seed (its cells run `repeats` times).
    pub randomised: bool,
    /// The command, files' checksum and options of an external method (part of its cells' keys).
    pub external: Option<crate::external::ExternalKey>,
}

/// A validated spec.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The spec as written.
    pub spec: Spec,
    /// Path of the spec file.
    pub path: PathBuf,
    /// The spec's methods with their grids expanded, in spec order.
    pub methods: Vec<MethodPlan>,
    /// Validated panels of each `[[figure]]`, in order.
    pub figures: Vec<Vec<PanelPlan>>,
}

impl Plan {
    /// Directory for figures and the record cache of this spec.
    pub fn output_dir(&self, results_root: &Path) -> PathBuf {
        match &self.spec.output {
            Some(o) => results_root.join(o),
            None => results_root.join(&self.spec.id),
        }
    }
    /// Path stem of the table files.
    pub fn table_stem(&self, results_root: &Path) -> PathBuf {
        match &self.spec.table_path {
            Some(p) => results_root.join(p),
            None => self.output_dir(results_root).join("table"),
        }
    }
    /// Names that select data set `i` in `run --dataset`: its registry / generator name and its
    /// table label.
    pub fn dataset_names(&self, i: usize) -> Vec<&str> {
        let d = &self.spec.datasets[i];
        std::iter::once(d.name()).chain(d.label.as_deref()).collect()
    }
    /// Names that select method `i` in `run --method`: its registry name and its table label.
    pub fn method_names(&self, i: usize) -> Vec<&str> {
        vec![self.methods[i].name.as_str(), self.methods[i].label.as_str()]
    }
    /// The spec's metric (`[evaluation].select`, else the first protocol's headline metric),
    /// maximised when selecting the best cell of every row without its own `select`.
    pub fn select_metric(&self) -> String {
        spec_metric(&self.spec)
    }
    /// `[evaluation].protocols` (empty without `[evaluation]`).
    pub fn spec_protocols(&self) -> Vec<Protocol> {
        self.spec.evaluation.as_ref().map(|e| e.protocols.clone()).unwrap_or_default()
    }
    /// Whether every row shows the spec's metric.
    pub fn one_metric(&self) -> bool {
        let m = self.select_metric();
        self.methods.iter().all(|p| p.metric == m)
    }
}

fn spec_metric(spec: &Spec) -> String {
    let Some(ev) = &spec.evaluation else { return "loocv_1nn_accuracy".into() };
    // the first protocol's headline metric (k-means: its mean ACC)
    ev.select
        .clone()
        .unwrap_or_else(|| ev.protocols.first().map_or("loocv_1nn_accuracy", |p| if *p == Protocol::Kmeans { "acc_mean" } else { p.metrics()[0] }).into())
}

/// `protocols` followed by `extra`, each once.
fn merge_protocols(protocols: &[Protocol], extra: &[Protocol]) -> Vec<Protocol> {
    let mut out: Vec<Protocol> = Vec::new();
    for &p in protocols.iter().chain(extra) {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// Checks that `metric` is one the protocols produce.
fn check_metric(metric: &str, protocols: &[Protocol]) -> Result<(), String> {
    let known: Vec<&str> = protocols.iter().flat_map(|p| p.metrics().iter().copied()).collect();
    if known.contains(&metric) {
        Ok(())
    } else {
        Err(format!(
            "select = '{metric}' is not a metric of the protocols {:?} (they give: {})",
            protocols.iter().map(|p| p.name()).collect::<Vec<_>>(),
            known.join(", ")
        ))
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

/// Reads, parses and validates a spec file.
pub fn load(path: &Path) -> Result<Plan, SpecError> {
    let file = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| SpecError { file: file.clone(), line: None, message: format!("cannot read spec: {e}"), others: vec![] })?;
    parse(&text, &file, path)
}

/// Parses and validates spec text (`file` names it in errors).
pub fn parse(text: &str, file: &str, path: &Path) -> Result<Plan, SpecError> {
    let err = |span: Option<std::ops::Range<usize>>, message: String| SpecError {
        file: file.to_string(),
        line: span.map(|s| line_of(text, s.start)),
        message,
        others: vec![],
    };
    let mut spec: Spec = toml::from_str(text).map_err(|e| err(e.span(), e.message().trim().to_string()))?;
    // a file data set without a name is named by its file
    for d in &mut spec.datasets {
        if let (None, Some(p)) = (&d.name, &d.path) {
            let stem = std::path::Path::new(p.get_ref()).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            d.name = Some(Spanned::new(p.span(), stem));
        }
    }
    // Every problem is collected (`check` reports them all at once); the plan is built only when
    // there is none.
    let mut errors: Vec<SpecError> = Vec::new();
    let key_line =
        |key: &str| text.lines().position(|l| l.trim_start().starts_with(key) && l.trim_start()[key.len()..].trim_start().starts_with('=')).map(|i| i + 1);

    if spec.repeats == 0 || spec.repeats > MAX_REPEATS {
        errors.push(SpecError { line: key_line("repeats"), ..err(None, format!("repeats = {} must be between 1 and {MAX_REPEATS}", spec.repeats)) });
    }
    if spec.datasets.is_empty() {
        errors.push(err(None, "the spec names no [[dataset]]".into()));
    }
    if spec.methods.is_empty() && spec.figure_defs.is_empty() {
        errors.push(err(None, "the spec names no [[method]] and no [[figure]]".into()));
    }
    if !spec.methods.is_empty() {
        match &spec.evaluation {
            None => errors.push(err(None, "a spec with [[method]] grids needs an [evaluation] table".into())),
            Some(ev) if ev.protocols.is_empty() => errors.push(err(None, "evaluation.protocols is empty".into())),
            Some(ev) => {
                if let Err(m) = check_metric(&spec_metric(&spec), &ev.protocols) {
                    errors.push(SpecError { line: key_line("select"), ..err(None, format!("[evaluation] {m}")) });
                }
            }
        }
    }
    if let Some(ev) = &spec.evaluation {
        if ev.neighbourhood_k == 0 {
            errors.push(SpecError { line: key_line("neighbourhood_k"), ..err(None, "evaluation.neighbourhood_k must be >= 1".into()) });
        }
        if ev.protocols.contains(&Protocol::Kmeans) && ev.restarts == 0 {
            errors.push(SpecError { line: key_line("restarts"), ..err(None, "evaluation.restarts must be >= 1 for the kmeans protocol".into()) });
        }
    }
    if !(spec.dim.threshold > 0.0 && spec.dim.threshold <= 1.0) {
        errors.push(SpecError { line: key_line("threshold"), ..err(None, format!("dim.threshold must be in (0, 1], got {}", spec.dim.threshold)) });
    }
    for (what, value) in [("id", Some(spec.id.as_str())), ("output", spec.output.as_deref()), ("table_path", spec.table_path.as_deref())] {
        if let Some(v) = value {
            if let Err(m) = check_relative_path(what, v) {
                errors.push(SpecError { line: key_line(what), ..err(None, m) });
            }
        }
    }
    // Data sets: registry names (built-in or the spec's own registry), synthetic generators or files.
    let registry = structdr_datasets::registry::Registry::builtin();
    let local = match &spec.registry {
        Some(p) => match structdr_datasets::registry::Registry::from_path(std::path::Path::new(p)) {
            Ok(r) => {
                for n in r.names() {
                    if registry.get(n).is_ok() {
                        errors.push(SpecError {
                            line: key_line("registry"),
                            ..err(None, format!("registry '{p}': '{n}' is a built-in data set; give yours another name"))
                        });
                    }
                }
                Some(r)
            }
            Err(e) => {
                errors.push(SpecError { line: key_line("registry"), ..err(None, e.to_string()) });
                None
            }
        },
        None => None,
    };
    let mut seen = std::collections::BTreeSet::new();
    for d in &spec.datasets {
        let name = &d.name().to_string();
        let span = d.span();
        if d.name.is_none() {
            errors.push(err(None, "a [[dataset]] needs a name (registry set or generator) or a path (a file of your own)".into()));
            continue;
        }
        let is_synthetic = structdr_datasets::synthetic::generators().iter().find(|g| g.name == name.as_str()).filter(|_| d.path.is_none());
        let file_keys = d.format.is_some() || d.variable.is_some() || d.labels_variable.is_some() || d.labels.is_some() || d.label_column.is_some();
        if let Some(src) = d.file_source() {
            if !d.params.is_empty() || d.seed.is_some() {
                errors.push(err(span.clone(), format!("data set '{name}' is read from a file and takes no params or seed")));
            }
            let format = match src.format {
                Some(f) => Some(f),
                None => structdr_datasets::file::FileFormat::from_path(&src.path).map_err(|e| errors.push(err(span.clone(), e.to_string()))).ok(),
            };
            if format == Some(structdr_datasets::file::FileFormat::Libsvm) && (d.labels.is_some() || d.label_column.is_some()) {
                errors.push(err(span.clone(), format!("data set '{name}': a LIBSVM file carries its labels; drop labels / label_column")));
            }
            if [d.labels.is_some(), d.label_column.is_some(), d.labels_variable.is_some()].iter().filter(|&&b| b).count() > 1 {
                errors.push(err(span.clone(), format!("data set '{name}': give the labels once (labels, label_column or labels_variable)")));
            }
            if d.label_column == Some(0) {
                errors.push(err(span.clone(), format!("data set '{name}': label_column is 1-based (-1 is the last column)")));
            }
            if format != Some(structdr_datasets::file::FileFormat::Mat) && (d.variable.is_some() || d.labels_variable.is_some()) {
                errors.push(err(span.clone(), format!("data set '{name}': variable and labels_variable apply to .mat files only")));
            }
        } else if file_keys {
            errors.push(err(span.clone(), format!("data set '{name}': format, variable, labels and label_column need a path")));
        }
        match is_synthetic {
            Some(g) => {
                let mut known_params = true;
                for p in d.params.keys() {
                    if !g.params.iter().any(|(n, _, _)| n == p) {
                        let known: Vec<_> = g.params.iter().map(|(n, _, _)| *n).collect();
                        errors.push(err(span.clone(), format!("generator '{name}' has no parameter '{p}' (it has: {})", known.join(", "))));
                        known_params = false;
                    }
                }
                if known_params {
                    if let Err(e) = structdr_datasets::synthetic::validate(name, &d.params) {
                        errors.push(err(span.clone(), e.to_string()));
                    }
                }
            }
            None if d.path.is_some() => {}
            None => {
                if registry.get(name).is_err() && local.as_ref().is_none_or(|l| l.get(name).is_err()) {
                    let gens: Vec<_> = structdr_datasets::synthetic::generators().iter().map(|g| g.name).collect();
                    let mut regs: Vec<_> = registry.names();
                    regs.extend(local.as_ref().map(|l| l.names()).unwrap_or_default());
                    errors.push(err(
                        span.clone(),
                        format!("unknown data set '{name}': not in the registry ({}) nor a synthetic generator ({})", regs.join(", "), gens.join(", ")),
                    ));
                }
                if !d.params.is_empty() {
                    errors.push(err(span.clone(), format!("data set '{name}' comes from the registry and takes no params")));
                }
            }
        }
        for step in &d.preprocess {
            if let Err(e) = step.validate() {
                errors.push(err(span.clone(), format!("data set '{name}': {e}")));
            }
        }
        let label = d.label.clone().unwrap_or_else(|| name.clone());
        if !seen.insert(label.clone()) {
            errors.push(err(span, format!("data set label '{label}' appears twice; give one a distinct `label`")));
        }
    }
    // Methods: names, parameters and grid values checked against the registry.
    let mut methods = Vec::new();
    let mut labels = std::collections::BTreeSet::new();
    let mut total_cells: u128 = 0;
    for m in &spec.methods {
        let name = m.name.get_ref();
        if let Some(command) = &m.command {
            match external_plan(m, command, &spec, &mut errors, &err) {
                Some(plan) => {
                    total_cells = total_cells.saturating_add(plan_cells(plan.cells.len() as u128, plan.randomised, &spec));
                    if !labels.insert(plan.label.clone()) {
                        errors.push(err(Some(m.name.span()), format!("method label '{}' appears twice; give one a distinct `label`", plan.label)));
                    }
                    methods.push(plan);
                }
                None => continue,
            }
            continue;
        }
        if m.timeout_s.is_some() || m.output.is_some() || m.randomised.is_some() || m.needs_labels.is_some() {
            errors.push(err(
                Some(m.name.span()),
                format!("method '{name}': timeout_s, output, randomised and needs_labels apply to external methods (with a command)"),
            ));
        }
        let info = match structdr_methods::lookup(name) {
            Ok(i) => i,
            Err(e) => {
                errors.push(err(Some(m.name.span()), e.to_string()));
                continue;
            }
        };
        let mut axes: Vec<(String, Vec<ParamValue>)> = Vec::new();
        let mut grid_ok = true;
        for (key, value) in &m.grid {
            let span = Some(value.span());
            let Some(schema) = info.param(key) else {
                let known: Vec<_> = info.params.iter().map(|p| p.name).collect();
                errors.push(err(span.clone(), format!("method '{name}' has no parameter '{key}' (it has: {})", known.join(", "))));
                grid_ok = false;
                continue;
            };
            let values = grid_values(value.get_ref());
            if values.is_empty() {
                errors.push(err(span, format!("grid for '{name}.{key}' is empty")));
                grid_ok = false;
                continue;
            }
            let mut checked = Vec::new();
            for v in values {
                let Some(pv) = toml_to_param(&v) else {
                    errors.push(err(span.clone(), format!("'{name}.{key}': unsupported value {v}")));
                    grid_ok = false;
                    continue;
                };
                if key == "dim" && pv == ParamValue::Str(DIM_ENERGY.into()) {
                    checked.push(pv);
                    continue;
                }
                match schema.check(name, &pv) {
                    Ok(ok) => checked.push(ok),
                    Err(e) => {
                        errors.push(err(span.clone(), e.to_string()));
                        grid_ok = false;
                    }
                }
            }
            axes.push((key.clone(), checked));
        }
        // Default `dim` in tables: the energy dimension, unless the grid sets it.
        if info.param("dim").is_some() && !m.grid.contains_key("dim") {
            axes.push(("dim".into(), vec![ParamValue::Str(DIM_ENERGY.into())]));
        }
        // Count before expanding: a grid is a product, and a mistyped range can ask for millions.
        let n_cells = axes.iter().fold(1u128, |acc, (_, v)| acc.saturating_mul(v.len() as u128));
        total_cells = total_cells.saturating_add(plan_cells(n_cells, info.randomised, &spec));
        if n_cells > MAX_GRID_CELLS as u128 {
            errors.push(err(
                Some(m.name.span()),
                format!("method '{name}': the grid has {n_cells} cells (the product of its axes' lengths), more than the limit of {MAX_GRID_CELLS} per method"),
            ));
            continue;
        }
        let label = m.label.clone().unwrap_or_else(|| name.clone());
        if !labels.insert(label.clone()) {
            errors.push(err(Some(m.name.span()), format!("method label '{label}' appears twice; give one a distinct `label`")));
        }
        let (protocols, metric) = row_protocols_and_metric(m, &label, &spec, &mut errors, &err);
        if !grid_ok {
            continue;
        }
        let cells = expand_grid(&axes);
        // Fill defaults (dim = "energy" is kept symbolic until the data set is known).
        let mut resolved = Vec::new();
        for c in cells {
            let mut concrete = c.clone();
            if concrete.get("dim") == Some(&ParamValue::Str(DIM_ENERGY.into())) {
                concrete.insert("dim".into(), ParamValue::Int(2));
            }
            match info.resolve(&concrete) {
                Ok(mut r) => {
                    if c.get("dim") == Some(&ParamValue::Str(DIM_ENERGY.into())) {
                        r.insert("dim".into(), ParamValue::Str(DIM_ENERGY.into()));
                    }
                    resolved.push(r);
                }
                Err(e) => {
                    errors.push(err(Some(m.name.span()), e.to_string()));
                    break;
                }
            }
        }
        methods.push(MethodPlan {
            name: name.clone(),
            label,
            paper_row: m.paper_row.clone(),
            cells: resolved,
            version: info.version,
            protocols,
            metric,
            randomised: info.randomised,
            external: None,
        });
    }
    if total_cells > MAX_PLAN_CELLS as u128 {
        errors.push(err(None, format!("the spec has {total_cells} cells (data sets x grid cells), more than the limit of {MAX_PLAN_CELLS}; split it")));
    }
    if let Some(r) = &spec.reference {
        for (row, vals) in &r.rows {
            if vals.len() != r.datasets.len() {
                errors.push(SpecError {
                    line: key_line(row),
                    ..err(None, format!("reference row '{row}' has {} values for {} data sets", vals.len(), r.datasets.len()))
                });
            }
        }
        if r.d.as_ref().is_some_and(|d| d.len() != r.datasets.len()) {
            errors.push(err(None, "reference.d must have one entry per reference data set".into()));
        }
    }
    // Stand-alone figures.
    let labels_of: Vec<String> = spec.datasets.iter().map(|d| d.label.clone().unwrap_or_else(|| d.name().to_string())).collect();
    let mut figures = Vec::new();
    for f in &spec.figure_defs {
        let before = errors.len();
        if f.panels.is_empty() {
            errors.push(err(None, format!("figure '{}' has no [[figure.panel]]", f.name)));
        }
        let scatter = matches!(f.kind, FigureKind::Embedding | FigureKind::Graph);
        if !scatter && (f.colour != ColourBy::Auto || f.separate_components) {
            errors.push(err(None, format!("figure '{}': `colour` and `separate_components` apply to embedding and graph figures only", f.name)));
        }
        if f.columns == Some(0) {
            errors.push(err(None, format!("figure '{}': `columns` must be >= 1", f.name)));
        }
        if f.kind != FigureKind::Adjacency && f.order != VertexOrder::Sample {
            errors.push(err(None, format!("figure '{}': `order` applies to adjacency figures only", f.name)));
        }
        let mut panels = Vec::new();
        for p in &f.panels {
            let Some(dataset) = labels_of.iter().position(|l| l == p.dataset.get_ref()) else {
                errors.push(err(
                    Some(p.dataset.span()),
                    format!("figure '{}': no data set labelled '{}' (have: {})", f.name, p.dataset.get_ref(), labels_of.join(", ")),
                ));
                continue;
            };
            let info = match structdr_methods::lookup(p.method.get_ref()) {
                Ok(i) => i,
                Err(e) => {
                    errors.push(err(Some(p.method.span()), e.to_string()));
                    continue;
                }
            };
            let mut given = ParamMap::new();
            let mut energy = false;
            for (key, value) in &p.params {
                let Some(pv) = toml_to_param(value.get_ref()) else {
                    errors.push(err(Some(value.span()), format!("'{key}': unsupported value")));
                    continue;
                };
                if key == "dim" && pv == ParamValue::Str(DIM_ENERGY.into()) {
                    energy = true;
                    given.insert(key.clone(), ParamValue::Int(2));
                } else {
                    given.insert(key.clone(), pv);
                }
            }
            match info.resolve(&given) {
                Ok(mut params) => {
                    if energy {
                        params.insert("dim".into(), ParamValue::Str(DIM_ENERGY.into()));
                    }
                    let title = p.title.clone().unwrap_or_else(|| format!("{} on {}", p.method.get_ref(), p.dataset.get_ref()));
                    panels.push(PanelPlan { dataset, method: p.method.get_ref().clone(), params, title });
                }
                Err(e) => errors.push(err(Some(p.method.span()), e.to_string())),
            }
        }
        if errors.len() == before {
            figures.push(panels);
        }
    }
    if !errors.is_empty() {
        let mut first = errors.remove(0);
        first.others = errors;
        return Err(first);
    }
    Ok(Plan { spec, path: path.to_path_buf(), methods, figures })
}

/// Most cells one method's grid may have (the product of its axes' lengths), counted before the
/// grid is expanded.
pub const MAX_GRID_CELLS: usize = 100_000;

/// Most cells a spec may have (data sets x every method's grid cells).
pub const MAX_PLAN_CELLS: usize = 1_000_000;

/// What a plan needs from the machine it runs on, all problems at once (`check` and `run` call
/// this after [`parse`], which checks the spec alone): every data file and labels file exists,
/// every external program is a file or on `PATH`, and every argument that looks like a script
/// (`.py`, `.R`, `.jl`, `.sh`, `.m`) is a file. Relative paths start at the current directory.
pub fn check_environment(plan: &Plan) -> Result<(), SpecError> {
    let file = plan.path.display().to_string();
    let mut errors: Vec<String> = Vec::new();
    for d in &plan.spec.datasets {
        let Some(src) = d.file_source() else { continue };
        for (what, p) in [("path", Some(&src.path)), ("labels", src.labels.as_ref())] {
            if let Some(p) = p.filter(|p| !p.is_file()) {
                errors.push(format!(
                    "data set '{}': {what} = '{}' is not a readable file (relative paths start at the directory structdr runs in)",
                    d.name(),
                    p.display()
                ));
            }
        }
    }
    for m in &plan.methods {
        let Some(ext) = &m.external else { continue };
        if let Some(program) = ext.command.first().filter(|p| !crate::external::program_exists(p)) {
            errors.push(format!("method '{}': program '{program}' is neither a file nor on PATH", m.label));
        }
        for a in ext.command.iter().skip(1) {
            let looks_like_file = [".py", ".r", ".R", ".jl", ".sh", ".m"].iter().any(|x| a.ends_with(x));
            if looks_like_file && !std::path::Path::new(a).is_file() {
                errors.push(format!("method '{}': command file '{a}' not found (relative paths start at the directory structdr runs in)", m.label));
            }
        }
    }
    let mut it = errors.into_iter().map(|message| SpecError { file: file.clone(), line: None, message, others: vec![] });
    match it.next() {
        None => Ok(()),
        Some(mut first) => {
            first.others = it.collect();
            Err(first)
        }
    }
}

/// A grid entry's values: the elements of a TOML array, or the one value.
fn grid_values(v: &toml::Value) -> Vec<toml::Value> {
    match v {
        toml::Value::Array(a) => a.clone(),
        v => vec![v.clone()],
    }
}

/// The cartesian product of the grid's axes, in axis order (the last axis varies fastest).
fn expand_grid(axes: &[(String, Vec<ParamValue>)]) -> Vec<ParamMap> {
    let mut cells = vec![ParamMap::new()];
    for (key, values) in axes {
        let mut next = Vec::with_capacity(cells.len() * values.len());
        for c in &cells {
            for v in values {
                let mut c2 = c.clone();
                c2.insert(key.clone(), v.clone());
                next.push(c2);
            }
        }
        cells = next;
    }
    cells
}

/// The cells a method of `n_grid` grid points adds to a plan: one per data set, times the
/// spec's `repeats` for randomised methods.
fn plan_cells(n_grid: u128, randomised: bool, spec: &Spec) -> u128 {
    let repeats = if randomised { spec.repeats.clamp(1, MAX_REPEATS) as u128 } else { 1 };
    n_grid.saturating_mul(spec.datasets.len().max(1) as u128).saturating_mul(repeats)
}

/// A row's protocols (the spec's `[evaluation].protocols`, then its own) and the metric it shows
/// and selects by (its `select`, checked against those protocols, else the spec's).
fn row_protocols_and_metric(
    m: &MethodSpec,
    label: &str,
    spec: &Spec,
    errors: &mut Vec<SpecError>,
    err: &dyn Fn(Option<std::ops::Range<usize>>, String) -> SpecError,
) -> (Vec<Protocol>, String) {
    let spec_protocols = spec.evaluation.as_ref().map(|e| e.protocols.clone()).unwrap_or_default();
    let protocols = merge_protocols(&spec_protocols, &m.protocols);
    let metric = match &m.select {
        Some(sel) => {
            if let Err(e) = check_metric(sel.get_ref(), &protocols) {
                errors.push(err(Some(sel.span()), format!("method '{label}': {e}")));
            }
            sel.get_ref().clone()
        }
        None => spec_metric(spec),
    };
    (protocols, metric)
}

/// The plan of an external method (`command = [...]`), or `None` with its problems in `errors`:
/// the program must exist, arguments that look like scripts must be files, the name must not be
/// a registry method's, grid values become parameters as written (`dim` defaults to the energy
/// rule's d).
fn external_plan(
    m: &MethodSpec,
    command: &Spanned<Vec<String>>,
    spec: &Spec,
    errors: &mut Vec<SpecError>,
    err: &dyn Fn(Option<std::ops::Range<usize>>, String) -> SpecError,
) -> Option<MethodPlan> {
    let name = m.name.get_ref();
    let span = Some(command.span());
    let n_errors = errors.len();
    if structdr_methods::lookup(name).is_ok() {
        errors.push(err(Some(m.name.span()), format!("method '{name}' is a registered method; name the external one differently")));
    }
    let cmd = command.get_ref();
    if cmd.is_empty() {
        errors.push(err(span.clone(), format!("method '{name}': command is empty")));
    }
    let timeout_s = m.timeout_s.unwrap_or(crate::external::DEFAULT_TIMEOUT_S);
    if !(timeout_s > 0.0 && timeout_s.is_finite()) {
        errors.push(err(Some(m.name.span()), format!("method '{name}': timeout_s = {timeout_s} must be a positive number of seconds")));
    }
    let output = m.output.unwrap_or(OutputKind::Embedding);
    if output == OutputKind::PrincipalGraph {
        errors.push(err(Some(m.name.span()), format!("method '{name}': output = \"principal_graph\" is not supported for external methods")));
    }
    let mut axes: Vec<(String, Vec<ParamValue>)> = Vec::new();
    for (key, value) in &m.grid {
        let mut vals = Vec::new();
        for v in &grid_values(value.get_ref()) {
            match toml_to_param(v) {
                Some(p) => vals.push(p),
                None => errors.push(err(Some(value.span()), format!("method '{name}': parameter '{key}' = {v} is not a number, string or boolean"))),
            }
        }
        if vals.is_empty() {
            errors.push(err(Some(value.span()), format!("method '{name}': parameter '{key}' has no values")));
        }
        axes.push((key.clone(), vals));
    }
    if !m.grid.contains_key("dim") {
        axes.push(("dim".into(), vec![ParamValue::Str(DIM_ENERGY.into())]));
    }
    let n_cells = axes.iter().fold(1u128, |acc, (_, v)| acc.saturating_mul(v.len() as u128));
    if n_cells > MAX_GRID_CELLS as u128 {
        errors.push(err(Some(m.name.span()), format!("method '{name}': the grid has {n_cells} cells, more than the limit of {MAX_GRID_CELLS} per method")));
    }
    let label = m.label.clone().unwrap_or_else(|| name.clone());
    let (protocols, metric) = row_protocols_and_metric(m, &label, spec, errors, err);
    let files_sha256 = match crate::external::files_sha256(cmd) {
        Ok(h) => h,
        Err(e) => {
            errors.push(err(span, format!("method '{name}': {e}")));
            String::new()
        }
    };
    if errors.len() > n_errors {
        return None;
    }
    let cells = expand_grid(&axes);
    let external = crate::external::ExternalKey { command: cmd.clone(), files_sha256, output, needs_labels: m.needs_labels.unwrap_or(false), timeout_s };
    Some(MethodPlan {
        name: name.clone(),
        label,
        paper_row: m.paper_row.clone(),
        cells,
        version: 1,
        protocols,
        metric,
        randomised: m.randomised.unwrap_or(true),
        external: Some(external),
    })
}

/// A spec-derived path (`id`, `output`, `table_path`) must be relative, non-empty and stay inside
/// the results directory (no `..`, no root or drive prefix).
fn check_relative_path(what: &str, v: &str) -> Result<(), String> {
    let p = Path::new(v);
    if v.trim().is_empty() {
        return Err(format!("{what} is empty"));
    }
    if p.is_absolute() || p.components().any(|c| !matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir)) {
        return Err(format!("{what} = '{v}' must be a relative path without '..' (spec outputs stay inside the results directory)"));
    }
    if what == "id" && p.components().count() != 1 {
        return Err(format!("id = '{v}' must be one path component (it names the directory results/<id>)"));
    }
    Ok(())
}

/// Converts a TOML scalar into a parameter value.
pub fn toml_to_param(v: &toml::Value) -> Option<ParamValue> {
    match v {
        toml::Value::Boolean(b) => Some(ParamValue::Bool(*b)),
        toml::Value::Integer(i) => Some(ParamValue::Int(*i)),
        toml::Value::Float(x) => Some(ParamValue::Float(*x)),
        toml::Value::String(s) => Some(ParamValue::Str(s.clone())),
        _ => None,
    }
}
