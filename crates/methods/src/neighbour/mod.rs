//! The neighbour-embedding family: t-SNE (van der Maaten & Hinton 2008), which matches
//! perplexity-calibrated affinities of the data (the same calibration as ESL's) with heavy-tailed
//! similarities of the embedding.

pub mod bh;
pub mod tsne;
