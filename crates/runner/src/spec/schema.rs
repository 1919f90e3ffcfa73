//! The spec's types as written in TOML (`deny_unknown_fields` everywhere, so an unknown key is an
//! error with its line), their defaults, and [`SpecError`]. Nothing here checks meaning; that is
//! [`super::validate`].

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use structdr_datasets::preprocess::Step;
use structdr_linalg::EnergyRule;
use structdr_methods::api::OutputKind;
use toml::Spanned;

/// A grid value of `dim`: a number or the data set's energy dimension.
pub use structdr_methods::api::DIM_ENERGY;

/// A grid value of an integer parameter: the data set's number of classes.
pub use structdr_methods::api::CLASSES;

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

/// How the checks of a spec say where a problem is: the span of the offending value in the spec
/// text (or none) and the message.
pub(super) type ErrAt<'a> = &'a dyn Fn(Option<std::ops::Range<usize>>, String) -> SpecError;

/// The 1-based line of the spec where `key = ...` is written, when the checks have no span.
pub(super) type KeyLine<'a> = &'a dyn Fn(&str) -> Option<usize>;

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

impl DimRule {
    /// `>=` or `>`: how the rule compares.
    pub fn symbol(&self) -> &'static str {
        match self.rule {
            EnergyRule::Ge => ">=",
            EnergyRule::Gt => ">",
        }
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
    /// its name (default: the file name without extension). Always set in a validated
    /// [`super::Plan`].
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
    pub(super) fn span(&self) -> Option<std::ops::Range<usize>> {
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
    /// the method's own name and `grid` holds its parameters, passed on. The spec wins: a name
    /// that is also a registry method's still means this command (with a warning).
    #[serde(default)]
    pub command: Option<Spanned<Vec<String>>>,
    /// External methods: time limit of one run in seconds (default 600).
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// External methods: what the command writes, `embedding` (default) or `feature_scores`.
    #[serde(default)]
    pub output: Option<OutputKind>,
    /// External methods: whether the fit depends on the seed, so `repeats` apply (default false:
    /// a cell runs once unless the method declares `randomised = true`).
    #[serde(default)]
    pub randomised: Option<bool>,
    /// External methods: whether the command gets the labels (`labels.npy`; default false).
    #[serde(default)]
    pub needs_labels: Option<bool>,
    /// External methods: the files and directories the command runs besides the files it names
    /// (helper modules, data it reads), hashed into the cells' keys; default: the directories of
    /// the command's files ([`crate::spec::external`] has the rule).
    #[serde(default)]
    pub depends: Option<Spanned<Vec<String>>>,
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
    /// The spec's values are the table's times this factor (e.g. 0.01: the paper prints percent,
    /// our records hold fractions); default 1.
    #[serde(default)]
    pub table_scale: Option<f64>,
    /// The paper's column names, in the order of `rows` values.
    pub datasets: Vec<String>,
    /// The paper's reduced dimension per data set (shown beside ours), when it reports one.
    #[serde(default)]
    pub d: Option<Vec<usize>>,
    /// Paper row name -> values (one per entry of `datasets`), in the spec's select metric.
    pub rows: BTreeMap<String, Vec<f64>>,
    /// The paper's values of further metrics (`[reference.metrics.nmi_mean]`, ...): metric ->
    /// row -> values, in the units of our records (e.g. fractions, not percent). Shown by the
    /// `[table] mean_std` section beside ours.
    #[serde(default)]
    pub metrics: BTreeMap<String, BTreeMap<String, Vec<f64>>>,
}

impl Reference {
    /// The paper's value for `row` at column `paper_dataset`.
    pub fn value(&self, row: &str, paper_dataset: &str) -> Option<f64> {
        let j = self.datasets.iter().position(|d| d == paper_dataset)?;
        self.rows.get(row).and_then(|r| r.get(j)).copied()
    }
    /// The paper's value of `metric` for `row` at column `paper_dataset`: from `rows` when
    /// `metric` is the spec's select metric `select`, else from `metrics`.
    pub fn metric_value(&self, metric: &str, select: &str, row: &str, paper_dataset: &str) -> Option<f64> {
        if metric == select {
            return self.value(row, paper_dataset);
        }
        let j = self.datasets.iter().position(|d| d == paper_dataset)?;
        self.metrics.get(metric)?.get(row).and_then(|r| r.get(j)).copied()
    }
}

/// Extra table sections (`[table]`).
#[derive(Debug, Clone, Deserialize, serde::Serialize, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    /// Metric stems shown as `<stem>_mean ± <stem>_std` (k-means: `acc`, `nmi`), each under two
    /// selections side by side: the best single configuration (the row's selected cell, all
    /// stems read from it) and the per-metric oracle (for each stem the cell maximising
    /// `<stem>_mean`; with a feature-count grid, that is the best parameter point per feature
    /// count and per metric, then the best count). Markdown in percent, CSV rows per metric.
    #[serde(default)]
    pub mean_std: Vec<String>,
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
    /// Extra table sections (`[table]`).
    #[serde(default)]
    pub table: TableSpec,
    /// Which automatic figures to draw (`[figures]`).
    #[serde(default)]
    pub figures: FigureSpec,
    /// Stand-alone figures: each panel fits one method with fixed parameters on one data set.
    #[serde(rename = "figure", default)]
    pub figure_defs: Vec<FigureDef>,
}

impl Spec {
    /// The spec's metric: `[evaluation].select`, else the first protocol's headline metric
    /// (k-means: its mean ACC).
    pub fn select_metric(&self) -> String {
        let Some(ev) = &self.evaluation else { return "loocv_1nn_accuracy".into() };
        ev.select
            .clone()
            .unwrap_or_else(|| ev.protocols.first().map_or("loocv_1nn_accuracy", |p| if *p == Protocol::Kmeans { "acc_mean" } else { p.metrics()[0] }).into())
    }
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
    /// Parameter sensitivity (ESL paper Fig. 8): every panel sweeps one parameter (its `vary`)
    /// over its `values`, the panel's other parameters fixed (one fit per value), and is drawn as
    /// a row of three plots against the swept value (equally spaced, labelled by value): k-means
    /// ACC and NMI under the spec's `[evaluation]` (mean over the restarts, error bars one
    /// standard deviation), the number of columns scored (for feature scores: the selected
    /// features, `n_selected` or the support of the weights when it is 0), and the sparsity of the
    /// learned W (percentage of the N^2 entries of the symmetrised W that are zero).
    Sensitivity,
    /// Images with the selected-feature mask (ESL paper Fig. 10c): for a feature-score method on
    /// image data (`image` gives the shape), the samples in `frames` as they are (first row) and
    /// masked (second row): the pixels none of whose channels is selected drawn black.
    Masks,
}

/// How the features of an image sample are laid out: `x[i, f]` is pixel `(r, c)`, channel `k` at
/// `f = (r width + c) channels + k` (`row`: row-major, channels interleaved, as
/// `teapot_rotation` writes) or `f = k height width + c height + r` (`column`: column-major
/// planes, as MATLAB's `.mat` images of scikit-feature are stored).
#[derive(Debug, Clone, Copy, Deserialize, serde::Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum PixelOrder {
    /// Row-major pixels, channels interleaved.
    #[default]
    Row,
    /// Column-major pixels, one plane per channel.
    Column,
}

/// The shape of every sample of an image data set (`masks` figures).
#[derive(Debug, Clone, Copy, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ImageShape {
    /// Image height in pixels (>= 1).
    pub height: usize,
    /// Image width in pixels (>= 1).
    pub width: usize,
    /// Channels per pixel: 1 (grey) or 3 (RGB); default 1.
    #[serde(default = "one")]
    pub channels: usize,
    /// Feature layout (default `row`).
    #[serde(default)]
    pub order: PixelOrder,
}
fn one() -> usize {
    1
}

impl ImageShape {
    /// The feature index of pixel `(r, c)`, channel `k`.
    pub fn feature(&self, r: usize, c: usize, k: usize) -> usize {
        match self.order {
            PixelOrder::Row => (r * self.width + c) * self.channels + k,
            PixelOrder::Column => k * self.height * self.width + c * self.height + r,
        }
    }
    /// Features per sample: `height width channels`.
    pub fn features(&self) -> usize {
        self.height * self.width * self.channels
    }
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
    /// Sensitivity figures: the parameter the panel sweeps (not also in `params`).
    #[serde(default)]
    pub vary: Option<Spanned<String>>,
    /// Sensitivity figures: the values of `vary`, in drawing order (at least two, distinct).
    #[serde(default)]
    pub values: Vec<Spanned<toml::Value>>,
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
    /// Masks figures: the shape of every sample as an image (required for them, refused by
    /// other kinds).
    #[serde(default)]
    pub image: Option<ImageShape>,
    /// Masks figures: the samples drawn, 0-based row indices (default: 4 evenly spaced).
    #[serde(default)]
    pub frames: Option<Vec<usize>>,
    /// The panels (`[[figure.panel]]`), in drawing order (row by row).
    #[serde(rename = "panel")]
    pub panels: Vec<PanelDef>,
}
