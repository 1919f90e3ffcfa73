//! The validated spec: [`Plan`] (the spec as written, its methods' grids expanded and its figures'
//! panels resolved). Everything after [`super::parse`] reads a `Plan`; the cells a run computes
//! come from it ([`crate::cells`]).

use super::external::ExternalKey;
use super::schema::{Protocol, Spec};
use std::path::{Path, PathBuf};
use structdr_methods::ParamMap;

/// A validated figure panel: data set index, method and resolved parameters.
#[derive(Debug, Clone)]
pub struct PanelPlan {
    /// Index of the panel's data set in the spec's `datasets`.
    pub dataset: usize,
    /// Registry name of the method.
    pub method: String,
    /// Resolved parameters (defaults filled); `dim` may be the string "energy".
    pub params: ParamMap,
    /// Panel title (the given one, else `"<method> on <data set>"`).
    pub title: String,
    /// Sensitivity figures: where this fit lies in its panel's sweep (`None` for other kinds).
    pub sweep: Option<SweepPoint>,
}

/// One fit of a sensitivity panel: a `[[figure.panel]]` with `vary` and `values` expands into
/// one [`PanelPlan`] per value, all with the panel's title and `group`.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    /// Index of the `[[figure.panel]]` within its figure: the fits of one sweep share it.
    pub group: usize,
    /// The swept parameter (`vary`).
    pub param: String,
    /// Position of the value in `values` (its place on the x axis).
    pub index: usize,
    /// The value, as the parameter takes it (shown on the x axis and in `figures.md`).
    pub value: structdr_methods::ParamValue,
}

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
    pub external: Option<ExternalKey>,
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
    /// What the checks found allowed but worth saying, one line each with the spec's file and line
    /// (an external method named like a built-in one); [`super::load`] prints them.
    pub warnings: Vec<String>,
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
        self.spec.select_metric()
    }
    /// `[evaluation].protocols` (empty without `[evaluation]`).
    pub fn spec_protocols(&self) -> Vec<Protocol> {
        self.spec.evaluation.as_ref().map(|e| e.protocols.clone()).unwrap_or_default()
    }
    /// `>=` or `>`: how the spec's energy rule compares.
    pub fn rule_symbol(&self) -> &'static str {
        self.spec.dim.symbol()
    }
    /// Whether every row shows the spec's metric.
    pub fn one_metric(&self) -> bool {
        let m = self.select_metric();
        self.methods.iter().all(|p| p.metric == m)
    }
}
