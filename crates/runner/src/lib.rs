//! # structdr runner
//!
//! The only place that knows about specs, caches, threads and output paths. The `structdr` binary
//! (`main.rs`) sets up the process and hands over to [`commands`]; tests and tools call
//! [`run_spec`] and the rooms below directly.
//!
//! ## Rooms, each with one job
//!
//! Listed from the bottom up: a room imports only rooms listed before it (and the crate's lower
//! crates); `tests/layers.rs` fails on any import circle.
//!
//! | room | its job |
//! |---|---|
//! | [`files`] | atomic writes, file-name-safe labels |
//! | [`spec`] | the spec TOML into a validated [`spec::Plan`]: `schema` (types), `validate` (every check), `grid` (grid expansion), `figures` (figure panels), `external` (external methods' keys), `plan` |
//! | [`data`] | data sets loaded and preprocessed ([`data::Prepared`]); the energy-rule dimension ([`data::energy_dim`]) |
//! | [`keys`] | cell keys and their hash, fit keys, seeds, the record schema version |
//! | [`cells`] | the grid cells of a plan, the figures' fit-only cells, which cells this invocation computes (filters, shards) |
//! | [`store`] | records (checksums, claims, adoption of unversioned records, prune, seal), the fit cache (`fits`), the committed figure panels (`panels`), which spec files write into a store (`ledger`): reads and writes, never fits |
//! | [`stopping`] | why a recorded fit stopped: the record's typed reason, or what an older record allows to infer |
//! | [`progress`] | the progress bar or log lines of a run |
//! | [`cost`] | what a run's missing cells will cost, estimated from the store's records before it starts, and the order [`exec`] starts them in (longest expected first) |
//! | [`outputs`] | what a fit's output is scored and drawn as (the `n_selected` rule), a graph as an edge-list CSV |
//! | [`external`] | running an external method's command for one fit |
//! | [`exec`] | the one place fits run: grid cells ([`exec::run`]) and fit-only cells ([`exec::fit_only`]), in parallel with BLAS single-threaded, through the committed panels and the fit cache |
//! | [`report`] | the best cell per (method, data set) and the per-metric oracle; tables (Markdown, CSV, LaTeX), with the optional mean ± std section under both selections |
//! | [`figures`] | figures drawn from fits (`render`: plotters, `plots`: error-bar series and images, `text`: glyphs; `sensitivity`, `masks`: what those kinds compute) and `figures.md` |
//! | [`pipeline`] | one spec end to end ([`run_spec`]) |
//! | [`slurm`], [`fuzz`], [`paired`], [`baseline`], [`nightly`], [`html`], [`history`] | Slurm job arrays (every value it writes checked and quoted); fuzz target bodies; the nightly suite's paired speed comparison (medians, bootstrap intervals); the commits it builds; the nightly suite; the HTML report; the nightly history |
//! | [`commands`] | the command line: one file per group of commands (`verify` recomputes stored cells through [`exec::run`]) |
//!
//! ## One cell, from spec to table
//!
//! 1. [`spec::load`] reads and validates the TOML into a [`spec::Plan`]: every method's grid
//!    expanded into resolved parameter sets (`dim = "energy"` kept symbolic).
//! 2. [`data::check_inputs`] makes every check that needs no fit (the same as `structdr check`:
//!    files, labels, preprocessing against the data's shape), then [`data::prepare`] loads and
//!    preprocesses every data set and resolves its energy dimension.
//! 3. [`cells::cells`] makes every (data set, method, grid point, seed) a [`cells::Cell`] with its
//!    [`keys::CellKey`] (`dim` resolved, method version, protocols, seed); the key's hash names
//!    the record.
//! 4. [`exec::run`] reuses the records in the [`store::Store`], picks the missing cells this
//!    invocation computes ([`cells::Selection`]), claims them, fits every group sharing a
//!    [`keys::fit_key`] once ([`exec::fit_cell`], seed [`keys::cell_seed`]), scores each cell on
//!    its output ([`outputs::scored_coordinates`], [`exec::evaluate`]) and writes one
//!    [`store::Record`] per cell, sealed with the checksum of its content (a stored record whose
//!    checksum fails is refused and recomputed).
//! 5. [`report::select`] picks the best cell per (method, data set); [`report::write_tables`]
//!    writes the tables beside the papers' values.
//! 6. A figure's fits are fit-only cells ([`cells::panel_cells`], [`figures::best_cells`]), run by
//!    [`exec::fit_only`] under the key of the grid cell each would be (from the committed panels,
//!    `results/<id>/panels/`, else the fit cache, else fitted), then
//!    drawn by [`figures`].
//!
//! ## Where things go
//!
//! | to add | put it in |
//! |---|---|
//! | a method | `crates/methods` (its family folder, `registry.rs`); nothing here |
//! | a metric or protocol | `crates/eval`; a `Protocol` variant in `spec/schema.rs`, its case in [`exec::evaluate`]; bump [`keys::SCHEMA`] if a metric's meaning changes |
//! | a data format | `crates/datasets` (`parse/`, `file.rs`); its fuzz body in [`fuzz`] |
//! | a report format | [`report`] (tables) or [`html`] (the HTML report) |
//! | a figure kind | `FigureKind` in `spec/schema.rs`, its checks in `spec/figures.rs`, what it draws in [`figures`] (a new plot type in `figures/render.rs` or `figures/plots.rs`) |
//! | a command | [`commands`] (its arguments and body in one file) |

pub mod baseline;
pub mod cells;
pub mod commands;
pub mod cost;
pub mod data;
pub mod exec;
pub mod external;
pub mod figures;
pub mod files;
pub mod fuzz;
pub mod history;
pub mod html;
pub mod journal;
pub mod keys;
pub mod nightly;
pub mod outputs;
pub mod paired;
pub mod pipeline;
pub mod progress;
pub mod report;
pub mod slurm;
pub mod spec;
pub mod stopping;
pub mod store;

pub use files::{atomic_write, sanitize};
pub use pipeline::{run_spec, RunOutput};
