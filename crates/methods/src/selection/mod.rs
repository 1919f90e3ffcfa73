//! The feature-selection family: FSL (001 Alg. 2).

pub mod common;
pub mod fsasl;
pub mod fsl;
pub mod llcfs;
pub mod ndfs;
pub mod rufs;
pub mod sogfs;
pub mod spfs;
