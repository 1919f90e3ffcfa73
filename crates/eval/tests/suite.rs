//! The integration tests of this crate as one test binary (`Cargo.toml`: `autotests = false`):
//! each file of this folder is a module here, so the tests link once and compile the generic code
//! they instantiate once, where a binary per file did both. A test is named by its file and
//! function: `cargo test --release -p structdr-eval --test suite -- <file>::` runs one file's tests.

mod kmeans;
mod loocv;
mod metrics;
mod neighbourhood;
mod scales;
