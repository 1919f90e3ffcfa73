//! The panels of a spec's stand-alone figures (`[[figure]]`): each panel's data set found by its
//! label, its method's parameters resolved (defaults filled; `dim = "energy"` kept symbolic), and
//! the figure options checked against the figure's kind. A sensitivity panel (`vary`, `values`)
//! expands into one panel per value, each value checked as the parameter's own (range, type).
//! Drawing them is [`crate::figures`].

use super::grid::toml_to_param;
use super::plan::{PanelPlan, SweepPoint};
use super::schema::{ColourBy, ErrAt, FigureDef, FigureKind, PanelDef, Protocol, Spec, SpecError, VertexOrder, DIM_ENERGY};
use structdr_methods::api::OutputKind;
use structdr_methods::{ParamMap, ParamValue};

/// The checks of the keys that only some kinds take (`vary` / `values`, `image`, `frames`),
/// against the figure's kind and the spec's evaluation.
fn check_kind_keys(spec: &Spec, f: &FigureDef, errors: &mut Vec<SpecError>, err: ErrAt) {
    let sensitivity = f.kind == FigureKind::Sensitivity;
    let masks = f.kind == FigureKind::Masks;
    for p in &f.panels {
        if !sensitivity && (p.vary.is_some() || !p.values.is_empty()) {
            let span = p.vary.as_ref().map(|v| v.span()).or_else(|| p.values.first().map(|v| v.span()));
            errors.push(err(span, format!("figure '{}': `vary` and `values` apply to sensitivity figures only", f.name)));
        }
    }
    if !masks && (f.image.is_some() || f.frames.is_some()) {
        errors.push(err(None, format!("figure '{}': `image` and `frames` apply to masks figures only", f.name)));
    }
    if sensitivity {
        // the ACC / NMI plot is the k-means protocol's, run under the spec's [evaluation]
        let kmeans = spec.evaluation.as_ref().is_some_and(|e| e.protocols.contains(&Protocol::Kmeans));
        if !kmeans {
            errors.push(err(
                None,
                format!("figure '{}': kind = \"sensitivity\" scores k-means ACC and NMI: the spec needs [evaluation] with protocols = [\"kmeans\"]", f.name),
            ));
        }
    }
    if masks {
        match &f.image {
            None => errors.push(err(None, format!("figure '{}': kind = \"masks\" needs `image = {{ height = .., width = .., channels = .. }}`", f.name))),
            Some(s) if s.height == 0 || s.width == 0 => errors.push(err(None, format!("figure '{}': `image` height and width must be >= 1", f.name))),
            Some(s) if s.channels != 1 && s.channels != 3 => {
                errors.push(err(None, format!("figure '{}': `image.channels` = {} must be 1 (grey) or 3 (RGB)", f.name, s.channels)))
            }
            Some(_) => {}
        }
        if f.frames.as_ref().is_some_and(|v| v.is_empty()) {
            errors.push(err(None, format!("figure '{}': `frames` is empty (leave it out for 4 evenly spaced samples)", f.name)));
        }
    }
}

/// The swept values of sensitivity panel `p` (at least two, distinct, of a type the parameter
/// takes; their ranges are checked when each is resolved), or why not.
fn sweep_values(f: &FigureDef, p: &PanelDef, errors: &mut Vec<SpecError>, err: ErrAt) -> Option<(String, Vec<ParamValue>)> {
    let Some(vary) = &p.vary else {
        errors.push(err(Some(p.method.span()), format!("figure '{}': a sensitivity panel needs `vary` (the parameter swept) and `values`", f.name)));
        return None;
    };
    if p.params.contains_key(vary.get_ref()) {
        errors.push(err(Some(vary.span()), format!("figure '{}': `vary = \"{}\"` is also fixed in `params`", f.name, vary.get_ref())));
        return None;
    }
    let mut values: Vec<ParamValue> = Vec::new();
    for v in &p.values {
        match toml_to_param(v.get_ref()) {
            Some(pv) if values.contains(&pv) => errors.push(err(Some(v.span()), format!("figure '{}': `values` repeats {pv}", f.name))),
            Some(pv) => values.push(pv),
            None => errors.push(err(Some(v.span()), format!("figure '{}': `values`: unsupported value", f.name))),
        }
    }
    if p.values.len() < 2 {
        errors.push(err(Some(vary.span()), format!("figure '{}': `values` of `vary = \"{}\"` needs at least two values", f.name, vary.get_ref())));
        return None;
    }
    Some((vary.get_ref().clone(), values))
}

/// The validated panels of every `[[figure]]` of `spec`, in order (a figure with problems is left
/// out, its problems in `errors`).
pub(super) fn figure_plans(spec: &Spec, errors: &mut Vec<SpecError>, err: ErrAt) -> Vec<Vec<PanelPlan>> {
    // Stand-alone figures.
    let labels_of: Vec<String> = spec.datasets.iter().map(|d| d.label.clone().unwrap_or_else(|| d.name().to_string())).collect();
    let mut figures = Vec::new();
    for f in &spec.figure_defs {
        let before = errors.len();
        if f.panels.is_empty() {
            errors.push(err(None, format!("figure '{}' has no [[figure.panel]]", f.name)));
        }
        let scatter = matches!(f.kind, FigureKind::Embedding | FigureKind::Graph);
        if !scatter && (f.colour != ColourBy::Auto || f.separate_components) {
            errors.push(err(None, format!("figure '{}': `colour` and `separate_components` apply to embedding and graph figures only", f.name)));
        }
        if f.columns == Some(0) {
            errors.push(err(None, format!("figure '{}': `columns` must be >= 1", f.name)));
        }
        if f.kind != FigureKind::Adjacency && f.order != VertexOrder::Sample {
            errors.push(err(None, format!("figure '{}': `order` applies to adjacency figures only", f.name)));
        }
        check_kind_keys(spec, f, errors, err);
        let mut panels = Vec::new();
        for (group, p) in f.panels.iter().enumerate() {
            let Some(dataset) = labels_of.iter().position(|l| l == p.dataset.get_ref()) else {
                errors.push(err(
                    Some(p.dataset.span()),
                    format!("figure '{}': no data set labelled '{}' (have: {})", f.name, p.dataset.get_ref(), labels_of.join(", ")),
                ));
                continue;
            };
            let info = match structdr_methods::lookup(p.method.get_ref()) {
                Ok(i) => i,
                Err(e) => {
                    errors.push(err(Some(p.method.span()), e.to_string()));
                    continue;
                }
            };
            let mut given = ParamMap::new();
            let mut energy = false;
            for (key, value) in &p.params {
                let Some(pv) = toml_to_param(value.get_ref()) else {
                    errors.push(err(Some(value.span()), format!("'{key}': unsupported value")));
                    continue;
                };
                if key == "dim" && pv == ParamValue::Str(DIM_ENERGY.into()) {
                    energy = true;
                    given.insert(key.clone(), ParamValue::Int(2));
                } else {
                    given.insert(key.clone(), pv);
                }
            }
            if f.kind == FigureKind::Masks && info.output != OutputKind::FeatureScores {
                errors.push(err(
                    Some(p.method.span()),
                    format!("figure '{}': kind = \"masks\" draws selected features: '{}' returns no feature scores", f.name, p.method.get_ref()),
                ));
                continue;
            }
            let title = p.title.clone().unwrap_or_else(|| format!("{} on {}", p.method.get_ref(), p.dataset.get_ref()));
            // one fit per panel, or per swept value
            let points: Vec<Option<SweepPoint>> = if f.kind == FigureKind::Sensitivity {
                let Some((param, values)) = sweep_values(f, p, errors, err) else { continue };
                values.into_iter().enumerate().map(|(index, value)| Some(SweepPoint { group, param: param.clone(), index, value })).collect()
            } else {
                vec![None]
            };
            for sweep in points {
                let mut given = given.clone();
                if let Some(s) = &sweep {
                    given.insert(s.param.clone(), s.value.clone());
                }
                match info.resolve(&given) {
                    Ok(mut params) => {
                        if energy {
                            params.insert("dim".into(), ParamValue::Str(DIM_ENERGY.into()));
                        }
                        panels.push(PanelPlan { dataset, method: p.method.get_ref().clone(), params, title: title.clone(), sweep });
                    }
                    Err(e) => {
                        let at = sweep.as_ref().map(|s| format!(" (`{}` = {})", s.param, s.value)).unwrap_or_default();
                        let span = sweep.as_ref().and_then(|s| p.values.get(s.index)).map(|v| v.span()).unwrap_or_else(|| p.method.span());
                        errors.push(err(Some(span), format!("figure '{}'{at}: {e}", f.name)));
                    }
                }
            }
        }
        if errors.len() == before {
            figures.push(panels);
        }
    }
    figures
}
