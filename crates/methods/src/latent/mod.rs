//! The latent-variable family: embeddings that are the latent inputs of a generative model of the
//! data, found by maximising its likelihood (GPLVM).

pub mod gplvm;
