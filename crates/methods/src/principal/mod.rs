//! The principal-graph family: DRTree / DDRTree (000 Alg. 2, Monocle 2's engine) and the
//! regularised principal graphs of 004 (SimplePPT tree, L1 graph, landmarks).

pub mod ddrtree;
pub mod rpg;
