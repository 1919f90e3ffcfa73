//! The identity "embedding" `Y = X`: the no-reduction baseline (and a check of the metrics).

use crate::api::info::MethodInfo;
use crate::api::{check_input, Embedder, Fitted, Result};
use ndarray::ArrayView2;

/// `Y = X`.
#[derive(Debug, Clone, Default)]
pub struct Identity;

impl Embedder for Identity {
    fn name(&self) -> &'static str {
        "identity"
    }
    fn fit(&self, x: ArrayView2<f64>, _seed: u64) -> Result<Fitted> {
        check_input("identity", &x, 1)?;
        Ok(Fitted::closed_form(x.to_owned()))
    }
}

pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: "identity",
        summary: "No reduction: the embedding is the input, Y = X.",
        reference: "baseline",
        version: 1,
        params: vec![],
        build: |_| Ok(Box::new(Identity)),
    }
}
