//! Saved models: `structdr embed --save-model FILE` writes a fitted out-of-sample map, and
//! `structdr transform --model FILE` applies it to new data without refitting.
//!
//! A model file is one JSON object: `format` (`"structdr-model"`) and `format_version`, the method's
//! registry `method` name and `method_version`, the resolved `params`, the fit `seed`, the
//! `structdr` build that wrote it, `n_features` and `n_components`, and the `transform`: the map's
//! numbers ([`TransformState`]; matrices as ndarray's serde form, floats written so they read back
//! bit for bit). Loading checks the format, that the method exists and has an out-of-sample map,
//! that its version is this build's (a map from other numerics is refused, as the record store
//! refuses a record of another version), and the shapes.

use super::exit::data_error;
use super::labels::{read_input, write_labels_beside, LabelArgs};
use super::tables::{table_format, write_matrix};
use crate::files::atomic_write;
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use structdr_methods::api::TransformState;
use structdr_methods::{Fitted, MethodInfo, ParamMap};

/// The `format` of a model file.
pub const FORMAT: &str = "structdr-model";
/// The layout version of model files this build reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// A model file's content.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct SavedModel {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`FORMAT_VERSION`] when written.
    pub format_version: u32,
    /// The method's registry name.
    pub method: String,
    /// The method's registry version when the model was fitted.
    pub method_version: u32,
    /// The resolved parameters of the fit.
    pub params: ParamMap,
    /// The fit's seed.
    pub seed: u64,
    /// The `structdr` build that fitted the model (`--version`).
    pub structdr: String,
    /// Input features the map expects.
    pub n_features: usize,
    /// Output dimensions.
    pub n_components: usize,
    /// The out-of-sample map.
    pub transform: TransformState,
}

// clap reads doc comments as help text (a doc here would change `--help`): the commands' help documents these.
#[allow(missing_docs)]
#[derive(Args)]
pub struct TransformArgs {
    /// A model file written by `structdr embed --save-model`.
    #[arg(long)]
    pub model: PathBuf,
    /// New samples in rows, with the training data's features: .npy or a text table (.csv, .tsv, .txt).
    #[arg(long)]
    pub input: PathBuf,
    /// Output coordinates: .npy (float64) or comma-separated text (.csv, .tsv, .txt), by extension.
    #[arg(long)]
    pub out: PathBuf,
    #[command(flatten)]
    pub labels: LabelArgs,
}

/// The registered methods with an out-of-sample map, comma-separated.
fn inductive_names() -> String {
    structdr_methods::registry().iter().filter(|m| m.inductive).map(|m| m.name).collect::<Vec<_>>().join(", ")
}

/// Fails unless the method has an out-of-sample map, naming the methods that have one.
pub fn check_inductive(info: &MethodInfo) -> Result<()> {
    if !info.inductive {
        bail!(
            "method '{}' has no out-of-sample map, so it cannot be saved as a model or transform new data; methods with one: {}",
            info.name,
            inductive_names()
        );
    }
    Ok(())
}

/// Writes the model of a fit of `info` with `params` and `seed` to `path`.
pub fn save(path: &Path, info: &MethodInfo, params: &ParamMap, seed: u64, fitted: &Fitted) -> Result<()> {
    let Some(t) = &fitted.transform else {
        bail!("{}: this fit of '{}' has no out-of-sample map ({}), so no model was saved", path.display(), info.name, fitted.notes.join("; "));
    };
    let transform = t.state();
    let model = SavedModel {
        format: FORMAT.into(),
        format_version: FORMAT_VERSION,
        method: info.name.into(),
        method_version: info.version,
        params: params.clone(),
        seed,
        structdr: concat!(env!("CARGO_PKG_VERSION"), "+", env!("STRUCTDR_GIT_HASH")).into(),
        n_features: transform.n_features(),
        n_components: fitted.embedding().map_or(0, |y| y.ncols()),
        transform,
    };
    let json = serde_json::to_string(&model).context("serialising the model")?;
    atomic_write(path, json.as_bytes())?;
    eprintln!("model: {} ({} v{}, {} features -> {})", path.display(), info.name, info.version, model.n_features, model.n_components);
    Ok(())
}

/// Reads and checks a model file: its registry entry and the rebuilt map. Every refusal is a
/// data error naming the file.
pub fn load(path: &Path) -> Result<(&'static MethodInfo, SavedModel, std::sync::Arc<dyn structdr_methods::api::Transform>)> {
    let text = std::fs::read_to_string(path).map_err(|e| data_error(anyhow!("reading model {}: {e}", path.display())))?;
    let refuse = |why: String| data_error(anyhow!("model {}: {why}", path.display()));
    // The header first, so a file of another kind or layout is named as such (not as a missing field).
    let header: serde_json::Value = serde_json::from_str(&text).map_err(|e| refuse(format!("not JSON: {e}")))?;
    if header.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
        return Err(refuse(format!("not a structdr model (no \"format\": \"{FORMAT}\")")));
    }
    if header.get("format_version").and_then(|v| v.as_u64()) != Some(FORMAT_VERSION as u64) {
        return Err(refuse(format!(
            "format_version {} is not {FORMAT_VERSION}, the one this build reads",
            header.get("format_version").unwrap_or(&serde_json::Value::Null)
        )));
    }
    let model: SavedModel = serde_json::from_value(header).map_err(|e| refuse(format!("malformed: {e}")))?;
    let info = structdr_methods::lookup(&model.method).map_err(|e| refuse(e.to_string()))?;
    check_inductive(info).map_err(|e| refuse(e.to_string()))?;
    if model.method_version != info.version {
        return Err(refuse(format!(
            "fitted by {} version {}, but this build has {} version {} (its numerics changed): refit with `structdr embed --method {} --save-model ...`",
            info.name, model.method_version, info.name, info.version, info.name
        )));
    }
    if model.n_features != model.transform.n_features() {
        return Err(refuse(format!("n_features = {} but the transform takes {}", model.n_features, model.transform.n_features())));
    }
    let map = structdr_methods::rebuild_transform(model.transform.clone(), info.name).map_err(|e| refuse(e.to_string()))?;
    Ok((info, model, map))
}

/// `structdr transform`.
pub fn transform(a: TransformArgs) -> Result<()> {
    table_format(&a.out, "output")?;
    let (info, model, map) = load(&a.model)?;
    let input = read_input(&a.input, &a.labels)?;
    let y = map.transform(input.x.view()).map_err(|e| data_error(anyhow!("{}: {e}", a.input.display())))?;
    eprintln!(
        "{} v{} ({}): {} x {} -> {} ({} columns)",
        info.name,
        model.method_version,
        a.model.display(),
        input.x.nrows(),
        input.x.ncols(),
        a.out.display(),
        y.ncols()
    );
    write_matrix(&a.out, &y)?;
    write_labels_beside(&a.out, &input)
}
