//! The feature-selection family: FSL (001 Alg. 2).

pub mod fsl;
pub mod common;
pub mod ndfs;
pub mod sogfs;
pub mod rufs;
