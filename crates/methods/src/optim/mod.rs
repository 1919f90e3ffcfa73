//! Numerical optimisers shared by the methods.
//!
//! - [`lbfgsb`]: bound-constrained limited-memory BFGS (L-BFGS-B 3.0, Byrd, Lu, Nocedal & Zhu 1995;
//!   Morales & Nocedal 2011), used by MPME (002 eq. 13) and ESL (001 eq. 20).

pub mod lbfgsb;
