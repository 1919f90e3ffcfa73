//! Grid expansion: a `[[method]]`'s grid checked against the method's parameter schema and
//! expanded into fully resolved parameter sets (the cartesian product, defaults filled, `dim =
//! "energy"` kept symbolic until the data set is known), for registered and external methods; the
//! row's protocols and metric; the limits on cells.
//!
//! Limits are exclusive and cheap: a limit `L` (`*_LIMIT`) admits fewer than `L` cells and refuses
//! `L` or more, and every count is the product of axis lengths, taken before anything is
//! expanded, so a refused spec costs no memory. (A `MAX_*` constant, by contrast, is the largest
//! value accepted: `repeats` at most [`MAX_REPEATS`].)

use super::external::{check_depends_entry, default_depends, depends_sha256, files_sha256, helper_sha256, ExternalKey, DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S};
use super::plan::MethodPlan;
use super::schema::{ErrAt, MethodSpec, Protocol, Spec, SpecError, CLASSES, DIM_ENERGY, MAX_REPEATS};
use structdr_methods::api::OutputKind;
use structdr_methods::{ParamMap, ParamValue};
use toml::Spanned;

/// Limit on one method's grid: it must have fewer cells than this (the product of its axes'
/// lengths, counted before the grid is expanded); a grid of this many or more is refused.
pub const GRID_CELL_LIMIT: usize = 100_000;

/// Limit on a spec: it must have fewer cells than this (data sets x every method's grid cells x
/// the repeats of randomised methods, counted from the axes' lengths before any grid is
/// expanded); a spec of this many or more is refused.
pub const PLAN_CELL_LIMIT: usize = 1_000_000;

/// Whether `n` cells reach `limit` (and are refused): limits are exclusive.
fn reaches(n: u128, limit: usize) -> bool {
    n >= limit as u128
}

/// The cells `spec` would have, counted from its grids' axis lengths (nothing expanded, nothing
/// looked up beyond whether a method is randomised): what [`PLAN_CELL_LIMIT`] is checked against
/// before [`method_plans`] expands anything.
fn count_plan_cells(spec: &Spec) -> u128 {
    spec.methods
        .iter()
        .map(|m| {
            // an axis that is not an array is one value; a `dim` the grid leaves out is one value too
            let n_grid = m.grid.values().fold(1u128, |acc, v| acc.saturating_mul(grid_len(v.get_ref()) as u128));
            let randomised = match &m.command {
                Some(_) => m.randomised.unwrap_or(false),
                None => structdr_methods::lookup(m.name.get_ref()).is_ok_and(|i| i.randomised),
            };
            plan_cells(n_grid, randomised, spec)
        })
        .fold(0u128, |acc, n| acc.saturating_add(n))
}

/// The methods of `spec` with their grids expanded, in spec order (a method with problems is left
/// out, its problems in `errors`; what is allowed but worth saying goes to `warnings`). A spec of [`PLAN_CELL_LIMIT`] cells or more is refused before
/// any grid is expanded (no method is returned then).
pub(super) fn method_plans(spec: &Spec, errors: &mut Vec<SpecError>, warnings: &mut Vec<String>, err: ErrAt) -> Vec<MethodPlan> {
    let total_cells = count_plan_cells(spec);
    if reaches(total_cells, PLAN_CELL_LIMIT) {
        // the grids that are over their own limit too, counted the same way
        for m in &spec.methods {
            let n_grid = m.grid.values().fold(1u128, |acc, v| acc.saturating_mul(grid_len(v.get_ref()) as u128));
            if reaches(n_grid, GRID_CELL_LIMIT) {
                errors.push(err(
                    Some(m.name.span()),
                    format!(
                        "method '{}': the grid has {n_grid} cells (the product of its axes' lengths), the limit is fewer than {GRID_CELL_LIMIT} per method",
                        m.name.get_ref()
                    ),
                ));
            }
        }
        errors.push(err(
            None,
            format!("the spec has {total_cells} cells (data sets x grid cells x repeats), the limit is fewer than {PLAN_CELL_LIMIT}; split it"),
        ));
        return Vec::new();
    }
    // Methods: names, parameters and grid values checked against the registry.
    let mut methods = Vec::new();
    let mut labels = std::collections::BTreeSet::new();
    for m in &spec.methods {
        let name = m.name.get_ref();
        if let Some(command) = &m.command {
            match external_plan(m, command, spec, errors, warnings, err) {
                Some(plan) => {
                    if !labels.insert(plan.label.clone()) {
                        errors.push(err(Some(m.name.span()), format!("method label '{}' appears twice; give one a distinct `label`", plan.label)));
                    }
                    methods.push(plan);
                }
                None => continue,
            }
            continue;
        }
        if m.timeout_s.is_some() || m.output.is_some() || m.randomised.is_some() || m.needs_labels.is_some() || m.depends.is_some() {
            errors.push(err(
                Some(m.name.span()),
                format!("method '{name}': timeout_s, output, randomised, needs_labels and depends apply to external methods (with a command)"),
            ));
        }
        let info = match structdr_methods::lookup(name) {
            Ok(i) => i,
            Err(e) => {
                errors.push(err(Some(m.name.span()), e.to_string()));
                continue;
            }
        };
        let mut axes: Vec<(String, Vec<ParamValue>)> = Vec::new();
        let mut grid_ok = true;
        for (key, value) in &m.grid {
            let span = Some(value.span());
            let Some(schema) = info.param(key) else {
                let known: Vec<_> = info.params.iter().map(|p| p.name).collect();
                errors.push(err(span.clone(), format!("method '{name}' has no parameter '{key}' (it has: {})", known.join(", "))));
                grid_ok = false;
                continue;
            };
            let values = grid_values(value.get_ref());
            if values.is_empty() {
                errors.push(err(span, format!("grid for '{name}.{key}' is empty")));
                grid_ok = false;
                continue;
            }
            let mut checked = Vec::new();
            for v in values {
                let Some(pv) = toml_to_param(&v) else {
                    errors.push(err(span.clone(), format!("'{name}.{key}': unsupported value {v}")));
                    grid_ok = false;
                    continue;
                };
                if key == "dim" && pv == ParamValue::Str(DIM_ENERGY.into()) {
                    checked.push(pv);
                    continue;
                }
                if pv == ParamValue::Str(CLASSES.into()) {
                    if matches!(schema.kind, structdr_methods::ParamKind::Int { .. }) {
                        checked.push(pv); // resolved per data set (keys::cell_key)
                    } else {
                        errors.push(err(
                            span.clone(),
                            format!(
                                "'{name}.{key}' = \"{CLASSES}\": only integer parameters may take the data set's number of classes ('{key}' is {})",
                                schema.kind
                            ),
                        ));
                        grid_ok = false;
                    }
                    continue;
                }
                match schema.check(name, &pv) {
                    Ok(ok) => checked.push(ok),
                    Err(e) => {
                        errors.push(err(span.clone(), e.to_string()));
                        grid_ok = false;
                    }
                }
            }
            axes.push((key.clone(), checked));
        }
        // Default `dim` in tables: the energy dimension, unless the grid sets it.
        if info.param("dim").is_some() && !m.grid.contains_key("dim") {
            axes.push(("dim".into(), vec![ParamValue::Str(DIM_ENERGY.into())]));
        }
        // Count before expanding: a grid is a product, and a mistyped range can ask for millions.
        let n_cells = axes.iter().fold(1u128, |acc, (_, v)| acc.saturating_mul(v.len() as u128));
        if reaches(n_cells, GRID_CELL_LIMIT) {
            errors.push(err(
                Some(m.name.span()),
                format!(
                    "method '{name}': the grid has {n_cells} cells (the product of its axes' lengths), the limit is fewer than {GRID_CELL_LIMIT} per method"
                ),
            ));
            continue;
        }
        let label = m.label.clone().unwrap_or_else(|| name.clone());
        if !labels.insert(label.clone()) {
            errors.push(err(Some(m.name.span()), format!("method label '{label}' appears twice; give one a distinct `label`")));
        }
        let (protocols, metric) = row_protocols_and_metric(m, &label, spec, errors, err);
        if !grid_ok {
            continue;
        }
        let cells = expand_grid(&axes);
        // Fill defaults (dim = "energy" is kept symbolic until the data set is known).
        let mut resolved = Vec::new();
        for c in cells {
            // Symbolic values (resolved per data set) stand in as a valid value for the checks.
            let symbolic: Vec<(String, ParamValue)> = c
                .iter()
                .filter(|(k, v)| (k.as_str() == "dim" && **v == ParamValue::Str(DIM_ENERGY.into())) || **v == ParamValue::Str(CLASSES.into()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let mut concrete = c.clone();
            for (k, _) in &symbolic {
                let stand_in = if k == "dim" { ParamValue::Int(2) } else { info.param(k).map_or(ParamValue::Int(1), |p| p.default.clone()) };
                concrete.insert(k.clone(), stand_in);
            }
            match info.resolve(&concrete) {
                Ok(mut r) => {
                    r.extend(symbolic);
                    resolved.push(r);
                }
                Err(e) => {
                    errors.push(err(Some(m.name.span()), e.to_string()));
                    break;
                }
            }
        }
        methods.push(MethodPlan {
            name: name.clone(),
            label,
            paper_row: m.paper_row.clone(),
            cells: resolved,
            version: info.version,
            protocols,
            metric,
            randomised: info.randomised,
            external: None,
        });
    }
    methods
}

/// `protocols` followed by `extra`, each once.
pub(super) fn merge_protocols(protocols: &[Protocol], extra: &[Protocol]) -> Vec<Protocol> {
    let mut out: Vec<Protocol> = Vec::new();
    for &p in protocols.iter().chain(extra) {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// Checks that `metric` is one the protocols produce.
pub(super) fn check_metric(metric: &str, protocols: &[Protocol]) -> Result<(), String> {
    let known: Vec<&str> = protocols.iter().flat_map(|p| p.metrics().iter().copied()).collect();
    if known.contains(&metric) {
        Ok(())
    } else {
        Err(format!(
            "select = '{metric}' is not a metric of the protocols {:?} (they give: {})",
            protocols.iter().map(|p| p.name()).collect::<Vec<_>>(),
            known.join(", ")
        ))
    }
}

/// How many values a grid entry has ([`grid_values`]'s length, without copying them).
fn grid_len(v: &toml::Value) -> usize {
    match v {
        toml::Value::Array(a) => a.len(),
        _ => 1,
    }
}

/// A grid entry's values: the elements of a TOML array, or the one value.
fn grid_values(v: &toml::Value) -> Vec<toml::Value> {
    match v {
        toml::Value::Array(a) => a.clone(),
        v => vec![v.clone()],
    }
}

/// The cartesian product of the grid's axes, in axis order (the last axis varies fastest).
fn expand_grid(axes: &[(String, Vec<ParamValue>)]) -> Vec<ParamMap> {
    let mut cells = vec![ParamMap::new()];
    for (key, values) in axes {
        let mut next = Vec::with_capacity(cells.len() * values.len());
        for c in &cells {
            for v in values {
                let mut c2 = c.clone();
                c2.insert(key.clone(), v.clone());
                next.push(c2);
            }
        }
        cells = next;
    }
    cells
}

/// The cells a method of `n_grid` grid points adds to a plan: one per data set, times the
/// spec's `repeats` for randomised methods.
fn plan_cells(n_grid: u128, randomised: bool, spec: &Spec) -> u128 {
    let repeats = if randomised { spec.repeats.clamp(1, MAX_REPEATS) as u128 } else { 1 };
    n_grid.saturating_mul(spec.datasets.len().max(1) as u128).saturating_mul(repeats)
}

/// A row's protocols (the spec's `[evaluation].protocols`, then its own) and the metric it shows
/// and selects by (its `select`, checked against those protocols, else the spec's).
fn row_protocols_and_metric(m: &MethodSpec, label: &str, spec: &Spec, errors: &mut Vec<SpecError>, err: ErrAt) -> (Vec<Protocol>, String) {
    let spec_protocols = spec.evaluation.as_ref().map(|e| e.protocols.clone()).unwrap_or_default();
    let protocols = merge_protocols(&spec_protocols, &m.protocols);
    let metric = match &m.select {
        Some(sel) => {
            if let Err(e) = check_metric(sel.get_ref(), &protocols) {
                errors.push(err(Some(sel.span()), format!("method '{label}': {e}")));
            }
            sel.get_ref().clone()
        }
        None => spec.select_metric(),
    };
    (protocols, metric)
}

/// The plan of an external method (`command = [...]`), or `None` with its problems in `errors`:
/// the program must exist, arguments that look like scripts must be files, grid values become
/// parameters as written (`dim` defaults to the energy rule's d). A name that is also a registry
/// method's is the spec's external method all the same, with a warning in `warnings`.
fn external_plan(
    m: &MethodSpec,
    command: &Spanned<Vec<String>>,
    spec: &Spec,
    errors: &mut Vec<SpecError>,
    warnings: &mut Vec<String>,
    err: ErrAt,
) -> Option<MethodPlan> {
    let name = m.name.get_ref();
    let span = Some(command.span());
    let n_errors = errors.len();
    // The spec wins: a `[[method]]` with a command is always the spec's own method, so a built-in
    // added later under its name changes nothing that ran (the warning makes the shadowing seen).
    if structdr_methods::lookup(name).is_ok() {
        warnings.push(
            err(
                Some(m.name.span()),
                format!("method '{name}' has a command: the spec's external method runs, not structdr's built-in '{name}' (rename it to silence this)"),
            )
            .to_string(),
        );
    }
    let cmd = command.get_ref();
    if cmd.is_empty() {
        errors.push(err(span.clone(), format!("method '{name}': command is empty")));
    }
    let timeout_s = m.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S);
    if !(timeout_s > 0.0 && timeout_s <= MAX_TIMEOUT_S) {
        errors.push(err(
            Some(m.name.span()),
            format!("method '{name}': timeout_s = {timeout_s} must be a positive number of seconds, at most {MAX_TIMEOUT_S} (30 days)"),
        ));
    }
    let output = m.output.unwrap_or(OutputKind::Embedding);
    if output == OutputKind::PrincipalGraph {
        errors.push(err(Some(m.name.span()), format!("method '{name}': output = \"principal_graph\" is not supported for external methods")));
    }
    let mut axes: Vec<(String, Vec<ParamValue>)> = Vec::new();
    for (key, value) in &m.grid {
        let mut vals = Vec::new();
        for v in &grid_values(value.get_ref()) {
            match toml_to_param(v) {
                Some(p) => vals.push(p),
                None => errors.push(err(Some(value.span()), format!("method '{name}': parameter '{key}' = {v} is not a number, string or boolean"))),
            }
        }
        if vals.is_empty() {
            errors.push(err(Some(value.span()), format!("method '{name}': parameter '{key}' has no values")));
        }
        axes.push((key.clone(), vals));
    }
    if !m.grid.contains_key("dim") {
        axes.push(("dim".into(), vec![ParamValue::Str(DIM_ENERGY.into())]));
    }
    let n_cells = axes.iter().fold(1u128, |acc, (_, v)| acc.saturating_mul(v.len() as u128));
    if reaches(n_cells, GRID_CELL_LIMIT) {
        errors.push(err(Some(m.name.span()), format!("method '{name}': the grid has {n_cells} cells, the limit is fewer than {GRID_CELL_LIMIT} per method")));
    }
    let label = m.label.clone().unwrap_or_else(|| name.clone());
    let (protocols, metric) = row_protocols_and_metric(m, &label, spec, errors, err);
    let files_sha256 = match files_sha256(cmd) {
        Ok(h) => h,
        Err(e) => {
            errors.push(err(span.clone(), format!("method '{name}': {e}")));
            String::new()
        }
    };
    let depends = match &m.depends {
        Some(d) => {
            for (i, entry) in d.get_ref().iter().enumerate() {
                if let Some(why) = check_depends_entry(entry) {
                    errors.push(err(Some(d.span()), format!("method '{name}': depends[{i}] = {entry:?} {why}")));
                }
            }
            if d.get_ref().is_empty() {
                errors.push(err(
                    Some(d.span()),
                    format!("method '{name}': depends is empty; leave it out for the default (the directories of the command's files)"),
                ));
            }
            d.get_ref().clone()
        }
        None => default_depends(cmd),
    };
    if errors.len() > n_errors {
        return None;
    }
    let (depends_sha256, depends_files) = match depends_sha256(&depends) {
        Ok(h) => h,
        Err(e) => {
            let span = m.depends.as_ref().map(|d| d.span()).or(span);
            let rule = if m.depends.is_some() { "depends" } else { "the default dependencies (the directories of the command's files)" };
            errors.push(err(span, format!("method '{name}': {rule}: {e}")));
            return None;
        }
    };
    let cells = expand_grid(&axes);
    let helper_sha256 = helper_sha256(&depends);
    let external = ExternalKey {
        command: cmd.clone(),
        files_sha256,
        output,
        needs_labels: m.needs_labels.unwrap_or(false),
        timeout_s,
        depends,
        depends_sha256,
        depends_files,
        helper_sha256,
    };
    Some(MethodPlan {
        name: name.clone(),
        label,
        paper_row: m.paper_row.clone(),
        cells,
        version: 1,
        protocols,
        metric,
        randomised: m.randomised.unwrap_or(false),
        external: Some(external),
    })
}

/// Converts a TOML scalar into a parameter value.
pub fn toml_to_param(v: &toml::Value) -> Option<ParamValue> {
    match v {
        toml::Value::Boolean(b) => Some(ParamValue::Bool(*b)),
        toml::Value::Integer(i) => Some(ParamValue::Int(*i)),
        toml::Value::Float(x) => Some(ParamValue::Float(*x)),
        toml::Value::String(s) => Some(ParamValue::Str(s.clone())),
        _ => None,
    }
}
