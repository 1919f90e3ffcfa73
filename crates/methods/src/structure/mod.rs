//! The structure-learning family: SPL (000), MPME (002) and ESL (001), which learn a graph on the
//! samples through a convex dual, and their shared pair dual ([`pair_dual`]).

pub mod esl;
pub mod meu;
pub mod mpme;
pub mod pair_active;
pub mod pair_dual;
pub mod pair_newton;
pub mod spl;
