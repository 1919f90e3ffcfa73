//! Data preparation: every check of a plan's inputs that needs no fit ([`check_inputs`], what
//! `check` runs and `run` runs first), then load (registry, mirror or generator), preprocess, and
//! the energy-rule dimension of every data set of a plan.

use crate::spec::{self, DimRule, Plan, SpecError};
use ndarray::ArrayView2;
use std::time::Instant;
use structdr_datasets::preprocess::Step;
use structdr_datasets::Dataset;

/// What [`check_inputs`] read: the raw data set of every spec entry it had to load (own files,
/// and generated sets whose preprocessing depends on their content), which [`prepare`] then uses
/// instead of reading or generating them again.
#[derive(Default)]
pub struct Checked {
    raw: Vec<Option<Dataset>>,
}

/// The shape of a data set as far as it is known without loading it: rows, features and the
/// labels (`None`: not known before loading, a registry set; `Some(None)`: unlabelled).
struct Shape {
    n: usize,
    d: Option<usize>,
    labels: Option<Option<Vec<i64>>>,
}

/// The shape of a data set read in full (an own file or a generated set), keeping the data in
/// `raw` for [`prepare`].
fn read_whole(read: Result<Dataset, String>, raw: &mut Option<Dataset>) -> Result<Shape, String> {
    let ds = read?;
    let shape = Shape { n: ds.x.nrows(), d: Some(ds.x.ncols()), labels: Some(ds.labels.clone()) };
    *raw = Some(ds);
    Ok(shape)
}

/// Every check of a plan's inputs that needs no fit, all problems at once, so that `check`
/// refuses what `run` would and the two cannot drift (`run` calls this before anything else):
/// [`spec::check_environment`] (files and programs exist); every own data file and labels file
/// is read ([`structdr_datasets::file::load_file`]: empty files, labels of another length or not
/// integers, a label column out of range); registry sets by their declared shape; and the
/// preprocessing walked over the shape: `pca_dim` `d` at most the features, `select_labels` only
/// labels the set has (known for own files and generators), a set with labels where every
/// protocol needs them. Generated sets are generated (cheap, and reused by [`prepare`]).
pub fn check_inputs(plan: &Plan) -> Result<Checked, SpecError> {
    let file = plan.path.display().to_string();
    let mut errors: Vec<SpecError> = Vec::new();
    if let Err(mut e) = spec::check_environment(plan) {
        let others = std::mem::take(&mut e.others);
        errors.push(e);
        errors.extend(others);
    }
    let fail = |message: String| SpecError { file: file.clone(), line: None, message, others: vec![] };
    let builtin = structdr_datasets::registry::Registry::builtin();
    let local = plan.spec.registry.as_ref().and_then(|p| structdr_datasets::registry::Registry::from_path(std::path::Path::new(p)).ok());
    let mut checked = Checked::default();
    let mut labelled: Vec<(String, bool)> = Vec::new();
    for d in &plan.spec.datasets {
        let name = d.name();
        let label = d.label.clone().unwrap_or_else(|| name.to_string());
        // named as the tables name it, with the file or generator when the label differs
        let what = if label == name { format!("data set '{label}'") } else { format!("data set '{label}' ({name})") };
        let mut raw = None;
        let shape = if let Some(src) = d.file_source() {
            if !src.path.is_file() || src.labels.as_ref().is_some_and(|l| !l.is_file()) {
                None // named by check_environment
            } else {
                read_whole(structdr_datasets::file::load_file(name, &src).map_err(|e| e.to_string()), &mut raw)
                    .map_err(|e| errors.push(fail(format!("{what}: {e}"))))
                    .ok()
            }
        } else if structdr_datasets::synthetic::generators().iter().any(|g| g.name == name) {
            // generated in full (kept for `prepare`): its labels and shape are what the checks need
            read_whole(structdr_datasets::synthetic::generate(name, &d.params, d.seed.unwrap_or(plan.spec.seed)).map_err(|e| e.to_string()), &mut raw)
                .map_err(|e| errors.push(fail(format!("{what}: {e}"))))
                .ok()
        } else {
            let entry = local.as_ref().and_then(|l| l.get(name).ok()).or_else(|| builtin.get(name).ok());
            entry.map(|e| Shape { n: e.n_samples, d: Some(e.n_features), labels: (e.n_classes == 0).then_some(None) })
        };
        if let Some(shape) = shape {
            match walk_steps(name, &d.preprocess, shape) {
                Ok(has_labels) => labelled.extend(has_labels.map(|h| (label, h))),
                Err(m) => errors.push(fail(format!("{what}: preprocessing: {m}"))),
            }
        }
        checked.raw.push(raw);
    }
    if let Err(m) = check_labelled(plan, &labelled) {
        errors.push(fail(m));
    }
    let mut it = errors.into_iter();
    match it.next() {
        None => Ok(checked),
        Some(mut first) => {
            first.others.extend(it);
            Err(first)
        }
    }
}

/// The preprocessing steps over a data set's [`Shape`], with the rules their functions apply to
/// the data ([`structdr_datasets::preprocess`]): `pca_dim` needs `1 <= d <= D`, `select_labels`
/// labels the set has, `first_rows` at most N, `gaussian_kernel` makes `D = N`, `noise_features` adds columns,
/// `ink_points` needs a sample in range and `W H = D` and makes `D = 2` (N: at most one point per grid node),
/// `pca_energy` leaves `D` unknown. Returns whether the result has labels, when known.
fn walk_steps(name: &str, steps: &[Step], mut shape: Shape) -> Result<Option<bool>, String> {
    for (i, step) in steps.iter().enumerate() {
        let at = |m: String| format!("step {} ({}): {m}", i + 1, serde_json::to_string(step).unwrap_or_default());
        match step {
            Step::PcaDim { d } => {
                if let Some(cols) = shape.d.filter(|&c| *d > c) {
                    return Err(at(format!("pca_dim d = {d} is larger than the {cols} features")));
                }
                shape.d = Some(*d);
            }
            Step::PcaEnergy { .. } => shape.d = None,
            Step::GaussianKernel { .. } => shape.d = Some(shape.n),
            Step::NoiseFeatures { count, .. } => shape.d = shape.d.map(|c| c + count),
            Step::SelectLabels { labels } => match &shape.labels {
                Some(None) => return Err(at(format!("data set '{name}' has no labels to select from"))),
                Some(Some(y)) => {
                    structdr_datasets::preprocess::missing_labels(name, y, labels).map_err(|e| at(e.to_string()))?;
                    let kept: Vec<i64> = y.iter().copied().filter(|l| labels.contains(l)).collect();
                    shape.n = kept.len();
                    shape.labels = Some(Some(kept));
                }
                None => {}
            },
            Step::FirstRows { n } => {
                if *n > shape.n {
                    return Err(at(format!("first_rows n = {n} is larger than the {} samples", shape.n)));
                }
                shape.n = *n;
                if let Some(Some(y)) = &mut shape.labels {
                    y.truncate(*n);
                }
            }
            Step::InkPoints { sample, width, height, upsample, .. } => {
                if *sample >= shape.n {
                    return Err(at(format!("ink_points sample {sample} is out of range: the set has {} samples", shape.n)));
                }
                if let Some(cols) = shape.d.filter(|&c| c != width * height) {
                    return Err(at(format!("ink_points: a {width} x {height} image needs {} features, the set has {cols}", width * height)));
                }
                // the number of ink points is known only from the image: at most one per grid node
                shape.n = ((width.max(&1) - 1) * upsample + 1) * ((height.max(&1) - 1) * upsample + 1);
                shape.d = Some(2);
                shape.labels = None;
            }
            Step::Zscore | Step::Minmax | Step::UniformNoise { .. } => {}
        }
    }
    Ok(shape.labels.map(|l| l.is_some()))
}

/// A data set without labels can only be scored by label-free protocols (`neighbourhood`): when
/// none of the spec's rows has one, nothing could be scored on it, which is an error rather than a
/// table of dashes. `sets`: each data set's label and whether it has labels (where known).
pub fn check_labelled(plan: &Plan, sets: &[(String, bool)]) -> Result<(), String> {
    let label_free = plan.methods.iter().any(|m| m.protocols.iter().any(|p| !p.needs_labels()));
    let scored = plan.spec.evaluation.as_ref().is_some_and(|e| !e.protocols.is_empty()) || plan.methods.iter().any(|m| !m.protocols.is_empty());
    let unlabelled: Vec<&str> = sets.iter().filter(|(_, has)| !has).map(|(l, _)| l.as_str()).collect();
    if scored && !label_free && !plan.methods.is_empty() && !unlabelled.is_empty() {
        return Err(format!(
            "data set{} {} ha{} no labels, and every protocol of the spec needs them; give the labels ([[dataset]] labels = \"y.csv\" or label_column = N) or score without them: [evaluation] protocols = [\"neighbourhood\"] (trustworthiness, continuity, k-NN preservation)",
            if unlabelled.len() == 1 { "" } else { "s" },
            unlabelled.join(", "),
            if unlabelled.len() == 1 { "s" } else { "ve" }
        ));
    }
    // `"classes"` resolves to each data set's number of classes: an unlabelled set has none, and
    // the method's own range check would refuse the 0 without naming the spec's value
    let by_classes: Vec<String> = plan
        .methods
        .iter()
        .flat_map(|m| {
            let keys: std::collections::BTreeSet<&str> = m
                .cells
                .iter()
                .flat_map(|c| c.iter().filter(|(_, v)| **v == structdr_methods::ParamValue::Str(spec::CLASSES.into())).map(|(k, _)| k.as_str()))
                .collect();
            keys.into_iter().map(|k| format!("{}.{k}", m.label)).collect::<Vec<_>>()
        })
        .collect();
    if !by_classes.is_empty() && !unlabelled.is_empty() {
        return Err(format!(
            "{} = \"classes\" takes each data set's number of classes, and data set{} {} ha{} no labels; give the labels ([[dataset]] labels = \"y.csv\" or label_column = N) or a number",
            by_classes.join(", "),
            if unlabelled.len() == 1 { "" } else { "s" },
            unlabelled.join(", "),
            if unlabelled.len() == 1 { "s" } else { "ve" }
        ));
    }
    Ok(())
}

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

/// Loads and preprocesses every data set of the plan; a set [`check_inputs`] already read is
/// taken from `checked`.
pub fn prepare(plan: &Plan, mut checked: Checked, quiet: bool) -> anyhow::Result<Vec<Prepared>> {
    let fetch = structdr_datasets::download::FetchOptions::from_env();
    let local = match &plan.spec.registry {
        Some(p) => Some(structdr_datasets::registry::Registry::from_path(std::path::Path::new(p)).map_err(|e| anyhow::anyhow!("{e}"))?),
        None => None,
    };
    let mut out = Vec::new();
    for (i, d) in plan.spec.datasets.iter().enumerate() {
        let name = d.name();
        let t0 = Instant::now();
        let raw = if let Some(ds) = checked.raw.get_mut(i).and_then(Option::take) {
            ds
        } else if let Some(src) = d.file_source() {
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
