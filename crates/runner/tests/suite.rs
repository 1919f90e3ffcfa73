//! The runner's integration tests as one test binary (`Cargo.toml`: `autotests = false`): each
//! file of this folder is a module here, so the suite links once and compiles the generic code it
//! instantiates once, where fifteen binaries each did both. A test is named by its file and
//! function: `cargo test --release -p structdr --test suite -- nightly::` runs one file's tests.

mod common;

mod adding_a_method;
mod bad_inputs;
mod cli;
mod cost;
mod external_containment;
mod fuzz_corpora;
mod layers;
mod nightly;
mod panels;
mod report;
mod runner;
mod slurm_injection;
mod spec_reference;
mod tables;
mod trust;
