//! The neighbour-embedding family: t-SNE (van der Maaten & Hinton 2008), which matches
//! perplexity-calibrated affinities of the data (the same calibration as ESL's) with heavy-tailed
//! similarities of the embedding. `tsne` holds the method and its exact gradient, `bh` the
//! Barnes-Hut gradient, `fft` the FFT-accelerated interpolation gradient.

pub mod bh;
pub mod fft;
pub mod tsne;
