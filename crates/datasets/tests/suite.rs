//! The integration tests of this crate as one test binary (`Cargo.toml`: `autotests = false`):
//! each file of this folder is a module here, so the tests link once and compile the generic code
//! they instantiate once, where a binary per file did both. A test is named by its file and
//! function: `cargo test --release -p structdr-datasets --test suite -- <file>::` runs one file's tests.

mod download;
mod parser_properties;
mod real_data;
