//! The feature-selection family: FSL (001 Alg. 2) and Table III's baselines LS, SPEC, MCFS, NDFS,
//! RUFS, SPFS, LLCFS, FSASL and SOGFS; `common` holds what they share (the sample graph, mean
//! pairwise distance, ranking, l2,1 reweighting, checks), `lars` the LARS-lasso path of MCFS.

pub mod common;
pub mod fsasl;
pub mod fsl;
pub mod lars;
pub mod llcfs;
pub mod ls;
pub mod mcfs;
pub mod ndfs;
pub mod rufs;
pub mod sogfs;
pub mod spec;
pub mod spfs;
