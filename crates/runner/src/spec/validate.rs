//! Validation: [`load`] / [`parse`] read a spec and run every check before any work, collecting
//! all problems at once with their lines (the grid and the figures are checked by their own rooms,
//! [`super::grid`] and [`super::figures`]); [`check_environment`] checks what the plan needs from
//! the machine it runs on.

use super::figures::figure_plans;
use super::grid::{check_metric, method_plans};
use super::plan::Plan;
use super::schema::{ErrAt, KeyLine, Protocol, Spec, SpecError, MAX_REPEATS};
use std::path::Path;
use toml::Spanned;

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

/// The 1-based line where `key = ...` is written in `text` (the first one).
fn key_line(text: &str, key: &str) -> Option<usize> {
    text.lines().position(|l| l.trim_start().starts_with(key) && l.trim_start()[key.len()..].trim_start().starts_with('=')).map(|i| i + 1)
}

/// Reads, parses and validates a spec file; the plan's warnings go to stderr, each once per
/// process (a command may load its spec more than once).
pub fn load(path: &Path) -> Result<Plan, SpecError> {
    let file = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| SpecError { file: file.clone(), line: None, message: format!("cannot read spec: {e}"), others: vec![] })?;
    let plan = parse(&text, &file, path)?;
    static SHOWN: std::sync::Mutex<std::collections::BTreeSet<String>> = std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut shown = SHOWN.lock().unwrap_or_else(|e| e.into_inner());
    for w in &plan.warnings {
        if shown.insert(w.clone()) {
            eprintln!("warning: {w}");
        }
    }
    Ok(plan)
}

/// Parses and validates spec text (`file` names it in errors).
pub fn parse(text: &str, file: &str, path: &Path) -> Result<Plan, SpecError> {
    let err = |span: Option<std::ops::Range<usize>>, message: String| SpecError {
        file: file.to_string(),
        line: span.map(|s| line_of(text, s.start)),
        message,
        others: vec![],
    };
    let mut spec: Spec = toml::from_str(text).map_err(|e| err(e.span(), e.message().trim().to_string()))?;
    // a file data set without a name is named by its file
    for d in &mut spec.datasets {
        if let (None, Some(p)) = (&d.name, &d.path) {
            let stem = std::path::Path::new(p.get_ref()).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            d.name = Some(Spanned::new(p.span(), stem));
        }
    }
    // Every problem is collected (`check` reports them all at once); the plan is built only when
    // there is none.
    let mut errors: Vec<SpecError> = Vec::new();
    let mut warnings: Vec<String> = Vec::new();
    let key_line = |key: &str| key_line(text, key);

    check_top_level(&spec, &mut errors, &err, &key_line);
    check_datasets(&spec, &mut errors, &err, &key_line);
    let methods = method_plans(&spec, &mut errors, &mut warnings, &err);
    check_reference(&spec, &mut errors, &err, &key_line);
    let figures = figure_plans(&spec, &mut errors, &err);
    if !errors.is_empty() {
        let mut first = errors.remove(0);
        first.others = errors;
        return Err(first);
    }
    Ok(Plan { spec, path: path.to_path_buf(), methods, figures, warnings })
}

/// The spec's top-level keys: repeats, something to compute, `[evaluation]`, `[dim]`, and paths
/// that stay inside the results directory.
fn check_top_level(spec: &Spec, errors: &mut Vec<SpecError>, err: ErrAt, key_line: KeyLine) {
    if spec.repeats == 0 || spec.repeats > MAX_REPEATS {
        errors.push(SpecError { line: key_line("repeats"), ..err(None, format!("repeats = {} must be between 1 and {MAX_REPEATS}", spec.repeats)) });
    }
    if spec.datasets.is_empty() {
        errors.push(err(None, "the spec names no [[dataset]]".into()));
    }
    if spec.methods.is_empty() && spec.figure_defs.is_empty() {
        errors.push(err(None, "the spec names no [[method]] and no [[figure]]".into()));
    }
    if !spec.methods.is_empty() {
        match &spec.evaluation {
            None => errors.push(err(None, "a spec with [[method]] grids needs an [evaluation] table".into())),
            Some(ev) if ev.protocols.is_empty() => errors.push(err(None, "evaluation.protocols is empty".into())),
            Some(ev) => {
                if let Err(m) = check_metric(&spec.select_metric(), &ev.protocols) {
                    errors.push(SpecError { line: key_line("select"), ..err(None, format!("[evaluation] {m}")) });
                }
            }
        }
    }
    if let Some(ev) = &spec.evaluation {
        if ev.neighbourhood_k == 0 {
            errors.push(SpecError { line: key_line("neighbourhood_k"), ..err(None, "evaluation.neighbourhood_k must be >= 1".into()) });
        }
        if ev.protocols.contains(&Protocol::Kmeans) && ev.restarts == 0 {
            errors.push(SpecError { line: key_line("restarts"), ..err(None, "evaluation.restarts must be >= 1 for the kmeans protocol".into()) });
        }
    }
    if !(spec.dim.threshold > 0.0 && spec.dim.threshold <= 1.0) {
        errors.push(SpecError { line: key_line("threshold"), ..err(None, format!("dim.threshold must be in (0, 1], got {}", spec.dim.threshold)) });
    }
    if let Err(m) = check_id(&spec.id) {
        errors.push(SpecError { line: key_line("id"), ..err(None, m) });
    }
    for (what, value) in [("output", spec.output.as_deref()), ("table_path", spec.table_path.as_deref())] {
        if let Some(v) = value {
            if let Err(m) = check_relative_path(what, v) {
                errors.push(SpecError { line: key_line(what), ..err(None, m) });
            }
        }
    }
}

/// Data sets: registry names (built-in or the spec's own registry), synthetic generators with their
/// parameters, or files with their options; preprocessing steps; distinct labels.
fn check_datasets(spec: &Spec, errors: &mut Vec<SpecError>, err: ErrAt, key_line: KeyLine) {
    let registry = structdr_datasets::registry::Registry::builtin();
    let local = match &spec.registry {
        Some(p) => match structdr_datasets::registry::Registry::from_path(std::path::Path::new(p)) {
            Ok(r) => {
                for n in r.names() {
                    if registry.get(n).is_ok() {
                        errors.push(SpecError {
                            line: key_line("registry"),
                            ..err(None, format!("registry '{p}': '{n}' is a built-in data set; give yours another name"))
                        });
                    }
                }
                Some(r)
            }
            Err(e) => {
                errors.push(SpecError { line: key_line("registry"), ..err(None, e.to_string()) });
                None
            }
        },
        None => None,
    };
    let mut seen = std::collections::BTreeSet::new();
    for d in &spec.datasets {
        let name = &d.name().to_string();
        let span = d.span();
        if d.name.is_none() {
            errors.push(err(None, "a [[dataset]] needs a name (registry set or generator) or a path (a file of your own)".into()));
            continue;
        }
        let is_synthetic = structdr_datasets::synthetic::generators().iter().find(|g| g.name == name.as_str()).filter(|_| d.path.is_none());
        let file_keys = d.format.is_some() || d.variable.is_some() || d.labels_variable.is_some() || d.labels.is_some() || d.label_column.is_some();
        if let Some(src) = d.file_source() {
            if !d.params.is_empty() || d.seed.is_some() {
                errors.push(err(span.clone(), format!("data set '{name}' is read from a file and takes no params or seed")));
            }
            let format = match src.format {
                Some(f) => Some(f),
                None => structdr_datasets::file::FileFormat::from_path(&src.path).map_err(|e| errors.push(err(span.clone(), e.to_string()))).ok(),
            };
            if format == Some(structdr_datasets::file::FileFormat::Libsvm) && (d.labels.is_some() || d.label_column.is_some()) {
                errors.push(err(span.clone(), format!("data set '{name}': a LIBSVM file carries its labels; drop labels / label_column")));
            }
            if [d.labels.is_some(), d.label_column.is_some(), d.labels_variable.is_some()].iter().filter(|&&b| b).count() > 1 {
                errors.push(err(span.clone(), format!("data set '{name}': give the labels once (labels, label_column or labels_variable)")));
            }
            if d.label_column == Some(0) {
                errors.push(err(span.clone(), format!("data set '{name}': label_column is 1-based (-1 is the last column)")));
            }
            if format != Some(structdr_datasets::file::FileFormat::Mat) && (d.variable.is_some() || d.labels_variable.is_some()) {
                errors.push(err(span.clone(), format!("data set '{name}': variable and labels_variable apply to .mat files only")));
            }
        } else if file_keys {
            errors.push(err(span.clone(), format!("data set '{name}': format, variable, labels and label_column need a path")));
        }
        match is_synthetic {
            Some(g) => {
                let mut known_params = true;
                for p in d.params.keys() {
                    if !g.params.iter().any(|(n, _, _)| n == p) {
                        let known: Vec<_> = g.params.iter().map(|(n, _, _)| *n).collect();
                        errors.push(err(span.clone(), format!("generator '{name}' has no parameter '{p}' (it has: {})", known.join(", "))));
                        known_params = false;
                    }
                }
                if known_params {
                    if let Err(e) = structdr_datasets::synthetic::validate(name, &d.params) {
                        errors.push(err(span.clone(), e.to_string()));
                    }
                }
            }
            None if d.path.is_some() => {}
            None => {
                if registry.get(name).is_err() && local.as_ref().is_none_or(|l| l.get(name).is_err()) {
                    let gens: Vec<_> = structdr_datasets::synthetic::generators().iter().map(|g| g.name).collect();
                    let mut regs: Vec<_> = registry.names();
                    regs.extend(local.as_ref().map(|l| l.names()).unwrap_or_default());
                    errors.push(err(
                        span.clone(),
                        format!("unknown data set '{name}': not in the registry ({}) nor a synthetic generator ({})", regs.join(", "), gens.join(", ")),
                    ));
                }
                if !d.params.is_empty() {
                    errors.push(err(span.clone(), format!("data set '{name}' comes from the registry and takes no params")));
                }
            }
        }
        for step in &d.preprocess {
            if let Err(e) = step.validate() {
                errors.push(err(span.clone(), format!("data set '{name}': {e}")));
            }
        }
        let label = d.label.clone().unwrap_or_else(|| name.clone());
        if !seen.insert(label.clone()) {
            errors.push(err(span, format!("data set label '{label}' appears twice; give one a distinct `label`")));
        }
    }
}

/// `[reference]`: one value per reference data set in every row, and in `d`; `[table] mean_std`
/// stems whose `<stem>_mean` and `<stem>_std` are metrics of the spec's protocols.
fn check_reference(spec: &Spec, errors: &mut Vec<SpecError>, err: ErrAt, key_line: KeyLine) {
    let protocols: Vec<Protocol> = spec.evaluation.as_ref().map(|e| e.protocols.clone()).unwrap_or_default();
    let known: Vec<&str> = protocols.iter().flat_map(|p| p.metrics().iter().copied()).collect();
    for stem in &spec.table.mean_std {
        for m in [format!("{stem}_mean"), format!("{stem}_std")] {
            if !known.contains(&m.as_str()) {
                errors.push(SpecError {
                    line: key_line("mean_std"),
                    ..err(None, format!("[table] mean_std = \"{stem}\": '{m}' is not a metric of the spec's protocols (they record: {})", known.join(", ")))
                });
            }
        }
    }
    if let Some(r) = &spec.reference {
        for (row, vals) in &r.rows {
            if vals.len() != r.datasets.len() {
                errors.push(SpecError {
                    line: key_line(row),
                    ..err(None, format!("reference row '{row}' has {} values for {} data sets", vals.len(), r.datasets.len()))
                });
            }
        }
        for (metric, rows) in &r.metrics {
            for (row, vals) in rows {
                if vals.len() != r.datasets.len() {
                    errors.push(SpecError {
                        line: key_line(row),
                        ..err(None, format!("reference.metrics.{metric} row '{row}' has {} values for {} data sets", vals.len(), r.datasets.len()))
                    });
                }
            }
        }
        if r.d.as_ref().is_some_and(|d| d.len() != r.datasets.len()) {
            errors.push(err(None, "reference.d must have one entry per reference data set".into()));
        }
    }
}

/// What a plan needs from the machine it runs on, all problems at once (`check` and `run` call
/// this after [`parse`], which checks the spec alone): every data file and labels file exists,
/// every external program is a file or on `PATH`, and every argument that looks like a script
/// (`.py`, `.R`, `.jl`, `.sh`, `.m`) is a file. Relative paths start at the current directory.
pub fn check_environment(plan: &Plan) -> Result<(), SpecError> {
    let file = plan.path.display().to_string();
    let mut errors: Vec<String> = Vec::new();
    for d in &plan.spec.datasets {
        let Some(src) = d.file_source() else { continue };
        for (what, p) in [("path", Some(&src.path)), ("labels", src.labels.as_ref())] {
            if let Some(p) = p.filter(|p| !p.is_file()) {
                errors.push(format!(
                    "data set '{}': {what} = '{}' is not a readable file (relative paths start at the directory structdr runs in)",
                    d.name(),
                    p.display()
                ));
            }
        }
    }
    for m in &plan.methods {
        let Some(ext) = &m.external else { continue };
        if let Some(program) = ext.command.first().filter(|p| !super::external::program_exists(p)) {
            errors.push(format!("method '{}': program '{program}' is neither a file nor on PATH", m.label));
        }
        for a in ext.command.iter().skip(1) {
            let looks_like_file = [".py", ".r", ".R", ".jl", ".sh", ".m"].iter().any(|x| a.ends_with(x));
            if looks_like_file && !std::path::Path::new(a).is_file() {
                errors.push(format!("method '{}': command file '{a}' not found (relative paths start at the directory structdr runs in)", m.label));
            }
        }
    }
    let mut it = errors.into_iter().map(|message| SpecError { file: file.clone(), line: None, message, others: vec![] });
    match it.next() {
        None => Ok(()),
        Some(mut first) => {
            first.others = it.collect();
            Err(first)
        }
    }
}

/// Longest spec id accepted (it names a directory and a Slurm job).
pub const MAX_ID_LEN: usize = 100;

/// A spec's `id` names the directory `results/<id>` and the Slurm jobs that run it, and is written
/// into their scripts ([`crate::slurm`]), so it is restricted to a safe
/// character set: ASCII letters, digits, `.`, `_` and `-`, not starting with `.` or `-` (no hidden
/// directory, nothing read as an option), at most [`MAX_ID_LEN`] characters. Nothing in it needs
/// quoting in a path, a shell or a job name.
pub fn check_id(id: &str) -> Result<(), String> {
    if id.trim().is_empty() {
        return Err("id is empty".into());
    }
    if id.contains('/') || id.contains('\\') {
        return Err(format!("id = {id:?} must be one name, a relative path without '..' or '/' (it names the directory results/<id>)"));
    }
    if let Some(c) = id.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))) {
        return Err(format!("id = {id:?} holds {c:?}: an id is ASCII letters, digits, '.', '_' and '-' (it names results/<id> and the Slurm jobs)"));
    }
    if id.starts_with('.') || id.starts_with('-') {
        return Err(format!("id = {id:?} must not start with '.' or '-'"));
    }
    if id.len() > MAX_ID_LEN {
        return Err(format!("id is {} characters long; at most {MAX_ID_LEN}", id.len()));
    }
    Ok(())
}

/// A spec-derived path (`output`, `table_path`) must be relative, non-empty, one line of printable
/// text and stay inside the results directory (no `..`, no root or drive prefix).
fn check_relative_path(what: &str, v: &str) -> Result<(), String> {
    let p = Path::new(v);
    if v.trim().is_empty() {
        return Err(format!("{what} is empty"));
    }
    if let Some(c) = v.chars().find(|c| c.is_control()) {
        return Err(format!("{what} = {v:?} holds the control character {c:?}"));
    }
    if p.is_absolute() || p.components().any(|c| !matches!(c, std::path::Component::Normal(_) | std::path::Component::CurDir)) {
        return Err(format!("{what} = '{v}' must be a relative path without '..' (spec outputs stay inside the results directory)"));
    }
    Ok(())
}
