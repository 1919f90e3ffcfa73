//! Experiment specs: one TOML file per table or figure, read into a validated [`Plan`].
//!
//! A spec names data sets (with preprocessing), methods with parameter grids, the evaluation
//! protocols, the seed, and optionally the papers' reference values. Unknown keys are errors, and
//! every semantic check (unknown method, parameter, data set, wrong type or range) runs before any
//! work and reports the spec's line number. Every key with its type, default and an example:
//! `docs/specs.md` (`tests/spec_reference.rs` checks it against these types).
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
//! # an integer parameter may be "classes": each data set's number of classes,
//! # e.g. grid = { n_clusters = "classes", n_selected = [20, 40] }
//!
//! [table]                    # optional: <stem>_mean ± <stem>_std under two selections
//! mean_std = ["acc", "nmi"]  # (best single configuration, per-metric oracle); CSV gains `selection`
//!
//! [reference]                # the papers' values (references, never outputs)
//! source = "Paper, Table 1"
//! datasets = ["helix"]
//! # table = "id in tables.toml"; table_scale = 0.01 when the paper prints percent
//! rows = { LE = [0.91] }     # the select metric
//! # [reference.metrics.nmi_mean] holds further metrics, row -> values
//!
//! [[figure]]                 # a stand-alone figure: one fit per panel, fixed parameters
//! name = "mpme_w"            # -> <output>/mpme_w.{png,svg}; every panel also in <output>/figures.md
//! title = "learned W"
//! kind = "adjacency"         # embedding | graph | convergence | adjacency | weights | contingency
//!                            # | sensitivity | masks
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
//!
//! [[figure]]                 # parameter sensitivity: needs [evaluation] with "kmeans"
//! name = "sweep"
//! title = "FSL sensitivity"
//! kind = "sensitivity"       # per panel: ACC / NMI with error bars, features scored, zeros of W
//!
//! [[figure.panel]]
//! dataset = "yale"
//! method = "fsl"
//! params = { lambda = 10.0, n_selected = 0 }
//! vary = "b"                 # swept parameter (not in params), one fit per value
//! values = [0.1, 1.0, 10.0, 40.0]
//!
//! [[figure]]                 # images and their selected-feature masks (feature-score methods)
//! name = "masks"
//! title = "selected pixels"
//! kind = "masks"
//! image = { height = 76, width = 101, channels = 3, order = "row" }
//! frames = [0, 100, 200, 300]    # samples drawn (default: 4 evenly spaced)
//! # [[figure.panel]] as above, without vary / values
//! ```
//!
//! The rooms: [`schema`] (the types as written, their defaults and errors), [`validate`] ([`load`],
//! [`parse`]: every check, all problems at once, and [`check_environment`]), [`grid`] (methods'
//! grids expanded into resolved parameter sets, external methods' rows), [`figures`] (the panels of
//! `[[figure]]`s), [`external`] (what identifies an external method: command, files' checksum,
//! options) and [`plan`] (the validated spec, [`Plan`], that the rest of the runner reads).
//! This file only names them.

pub mod external;
pub mod figures;
pub mod grid;
pub mod plan;
pub mod schema;
pub mod validate;

pub use external::ExternalKey;
pub use grid::{toml_to_param, GRID_CELL_LIMIT, PLAN_CELL_LIMIT};
pub use plan::{MethodPlan, PanelPlan, Plan, SweepPoint};
pub use schema::{
    ColourBy, DatasetSpec, DimRule, Evaluation, FigureDef, FigureKind, FigureSpec, ImageShape, MethodSpec, PanelDef, PixelOrder, Protocol, Reference, Spec,
    SpecError, TableSpec, VertexOrder, CLASSES, DIM_ENERGY, MAX_REPEATS,
};
pub use validate::{check_environment, check_id, load, parse, MAX_ID_LEN};
