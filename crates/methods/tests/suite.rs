//! The integration tests of this crate as one test binary (`Cargo.toml`: `autotests = false`):
//! each file of this folder is a module here, so the tests link once and compile the generic code
//! they instantiate once, where a binary per file did both. A test is named by its file and
//! function: `cargo test --release -p structdr-methods --test suite -- <file>::` runs one file's tests.

mod conformance;
mod crate_docs;
mod ddrtree;
mod fsl_two_moons;
mod graph;
mod layers;
mod mvu;
mod mvu_drtoolbox;
mod ndfs_skfeature;
mod reference;
mod rpg;
mod schema;
mod selection_baselines;
mod skfeature_parity;
mod stopping;
mod tsne_sklearn;
