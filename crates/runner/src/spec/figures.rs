//! The panels of a spec's stand-alone figures (`[[figure]]`): each panel's data set found by its
//! label, its method's parameters resolved (defaults filled; `dim = "energy"` kept symbolic), and
//! the figure options checked against the figure's kind. Drawing them is [`crate::figures`].

use super::grid::toml_to_param;
use super::plan::PanelPlan;
use super::schema::{ColourBy, ErrAt, FigureKind, Spec, SpecError, VertexOrder, DIM_ENERGY};
use structdr_methods::{ParamMap, ParamValue};

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
        let mut panels = Vec::new();
        for p in &f.panels {
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
            match info.resolve(&given) {
                Ok(mut params) => {
                    if energy {
                        params.insert("dim".into(), ParamValue::Str(DIM_ENERGY.into()));
                    }
                    let title = p.title.clone().unwrap_or_else(|| format!("{} on {}", p.method.get_ref(), p.dataset.get_ref()));
                    panels.push(PanelPlan { dataset, method: p.method.get_ref().clone(), params, title });
                }
                Err(e) => errors.push(err(Some(p.method.span()), e.to_string())),
            }
        }
        if errors.len() == before {
            figures.push(panels);
        }
    }
    figures
}
