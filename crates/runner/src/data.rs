//! Data preparation: load (registry, mirror or generator), preprocess, and the energy-rule
//! dimension of every data set of a plan.

use crate::spec::{DimRule, Plan};
use ndarray::ArrayView2;
use std::time::Instant;
use structdr_datasets::Dataset;

/// A data set after preprocessing, with its energy dimension.
pub struct Prepared {
    /// Table label of the data set.
    pub label: String,
    /// The paper's name of this data set (column of the reference table), if given.
    pub paper: Option<String>,
    /// The data after the spec's preprocessing steps.
    pub data: Dataset,
    /// d from the spec's energy rule on the preprocessed data.
    pub energy_dim: usize,
    /// What preprocessing did (shown in reports).
    pub steps: Vec<String>,
}

/// Loads and preprocesses every data set of the plan.
pub fn prepare(plan: &Plan, quiet: bool) -> anyhow::Result<Vec<Prepared>> {
    let fetch = structdr_datasets::download::FetchOptions::from_env();
    let local = match &plan.spec.registry {
        Some(p) => Some(structdr_datasets::registry::Registry::from_path(std::path::Path::new(p)).map_err(|e| anyhow::anyhow!("{e}"))?),
        None => None,
    };
    let mut out = Vec::new();
    for d in &plan.spec.datasets {
        let name = d.name();
        let t0 = Instant::now();
        let raw = if let Some(src) = d.file_source() {
            structdr_datasets::file::load_file(name, &src).map_err(|e| anyhow::anyhow!("data set '{name}': {e}"))?
        } else if structdr_datasets::synthetic::generators().iter().any(|g| g.name == name) {
            structdr_datasets::synthetic::generate(name, &d.params, d.seed.unwrap_or(plan.spec.seed)).map_err(|e| anyhow::anyhow!("data set '{name}': {e}"))?
        } else if let Some(entry) = local.as_ref().and_then(|l| l.get(name).ok()) {
            structdr_datasets::load::load_entry(entry, &fetch)
                .map_err(|e| anyhow::anyhow!("data set '{name}' (registry '{}'): {e}", plan.spec.registry.as_deref().unwrap_or("")))?
        } else {
            structdr_datasets::load::load(name, &fetch).map_err(|e| anyhow::anyhow!("data set '{name}': {e}"))?
        };
        let (data, records) = structdr_datasets::preprocess::apply(&d.preprocess, raw).map_err(|e| anyhow::anyhow!("data set '{name}': preprocessing: {e}"))?;
        let dim = energy_dim(data.x.view(), &plan.spec.dim).map_err(|e| anyhow::anyhow!("data set '{name}': PCA for the energy rule: {e}"))?;
        let steps = records.iter().map(|r| serde_json::to_string(r).unwrap_or_default()).collect();
        if !quiet {
            eprintln!(
                "  data {:<14} {:>6} x {:<5} classes {:>3}  d(energy {}{}) = {:<3} [{:.1} s]",
                d.label.as_deref().unwrap_or(name),
                data.x.nrows(),
                data.x.ncols(),
                data.n_classes(),
                plan.rule_symbol(),
                plan.spec.dim.threshold,
                dim,
                t0.elapsed().as_secs_f64()
            );
        }
        out.push(Prepared { label: d.label.clone().unwrap_or_else(|| name.to_string()), paper: d.paper.clone(), data, energy_dim: dim, steps });
    }
    Ok(out)
}

/// `d` of the energy rule on `x`: the smallest d whose top-d PCA eigenvalues reach (`ge`) or
/// exceed (`gt`) the rule's threshold of the total. The one home of the rule: every data set's
/// `dim = "energy"` in a spec, and `structdr embed` / `select` with `--param dim=energy` (under
/// [`DimRule::default`], 95%).
pub fn energy_dim(x: ArrayView2<f64>, rule: &DimRule) -> Result<usize, structdr_linalg::LinalgError> {
    Ok(structdr_linalg::Pca::fit(x)?.energy_dim(rule.threshold, rule.rule))
}
