//! The identity "embedding" `Y = X`: the no-reduction baseline (and a check of the metrics).

use crate::api::declare::{self, declare_params, Declared};
use crate::api::info::MethodInfo;
use crate::api::OutputKind;
use crate::api::{check_features, check_input, Embedder, FitInput, Fitted, ParamMap, Result, Transform, TransformState};
use ndarray::{Array2, ArrayView2};
use std::sync::Arc;

declare_params! {
    /// `Y = X`.
    #[derive(Debug, Clone)]
    pub struct Identity {}
}

impl Embedder for Identity {
    fn name(&self) -> &'static str {
        "identity"
    }
    fn info(&self) -> MethodInfo {
        info()
    }
    fn params(&self) -> ParamMap {
        self.to_params()
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        let x = input.x;
        check_input("identity", &x, 1)?;
        let mut f = Fitted::closed_form(x.to_owned());
        f.transform = Some(Arc::new(IdentityTransform::new(x.ncols())));
        Ok(f)
    }
}

/// The out-of-sample map of [`Identity`]: `x -> x` (checks the feature count).
#[derive(Debug, Clone)]
pub struct IdentityTransform {
    n_features: usize,
}

impl IdentityTransform {
    /// The map on `n_features` columns.
    pub fn new(n_features: usize) -> IdentityTransform {
        IdentityTransform { n_features }
    }
}

impl Transform for IdentityTransform {
    fn transform(&self, x: ArrayView2<f64>) -> Result<Array2<f64>> {
        check_features("identity", &x, self.n_features)?;
        Ok(x.to_owned())
    }
    fn state(&self) -> TransformState {
        TransformState::Identity { n_features: self.n_features }
    }
}

pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: "identity",
        summary: "No reduction: the embedding is the input, Y = X.",
        reference: "baseline",
        version: 1,
        output: OutputKind::Embedding,
        needs_labels: false,
        accepts_init: false,
        inductive: true,
        randomised: false,
        params: Identity::schema(()),
        build: |p| declare::build::<Identity>("identity", (), p),
    }
}
