//! The principal-graph family: DRTree / DDRTree (000 Alg. 2, Monocle 2's engine) and the
//! regularised principal graphs of 004 (SimplePPT tree, L1 graph, landmarks); the principal-curve
//! baselines of 004 §6.2: the polygonal line (`polyline`) and subspace-constrained mean shift
//! (`scms`).

pub mod ddrtree;
pub mod polyline;
pub mod rpg;
pub mod scms;
