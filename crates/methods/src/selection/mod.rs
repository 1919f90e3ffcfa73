//! The feature-selection family: FSL (001 Alg. 2) and the Table III baselines LS, SPEC, MCFS, NDFS, RUFS, SOGFS.

pub mod common;
pub mod fsl;
pub mod lars;
pub mod ls;
pub mod mcfs;
pub mod ndfs;
pub mod rufs;
pub mod sogfs;
pub mod spec;
