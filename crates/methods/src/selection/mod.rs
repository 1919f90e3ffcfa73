//! The feature-selection family: FSL (001 Alg. 2).

pub mod fsl;
pub mod lars;
pub mod ls;
pub mod mcfs;
pub mod spec;
