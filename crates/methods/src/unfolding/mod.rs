//! The unfolding family: embeddings from a kernel learned by a semidefinite program that keeps the
//! local distances of a neighbourhood graph while maximising the variance (MVU, MVUineq, MVU2,
//! landmark MVU), with the SDP solver they share, and drtoolbox's FastMVU (the papers' "MVU").

pub mod drtoolbox;
pub mod landmark;
pub mod mvu;
pub mod sdp;
