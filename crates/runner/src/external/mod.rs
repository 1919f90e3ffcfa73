//! Methods in any language: a `[[method]]` with a `command` runs that program once per cell.
//!
//! Protocol (one scratch directory per fit, removed afterwards):
//! - structdr writes `input.npy` (the preprocessed data, N x D float64, samples in rows),
//!   `labels.npy` (int64, only with `needs_labels = true`) and `params.json`:
//!   `{"params": {...resolved grid values...}, "seed": u64, "dim": d or null, "n_samples": N,
//!   "n_features": D, "input": ".../input.npy", "labels": path or null, "workdir": "..."}`;
//! - it runs `command... <workdir>` (the scratch directory appended as the last argument, also in
//!   `$STRUCTDR_WORKDIR`) from the directory structdr runs in, with one BLAS / OpenMP thread
//!   (`OMP_NUM_THREADS=1`, ...: structdr runs cells in parallel), a timeout, stdin closed, and
//!   the protocol's Python helper module importable from anywhere: structdr writes its own copy of
//!   `structdr_io.py` ([`HELPER_PY`], keyed by [`crate::spec::external::helper_sha256`]) into `<workdir>/lib` and puts that directory first on
//!   `PYTHONPATH` (a `structdr_io.py` beside the script still wins: Python searches the script's
//!   directory before `PYTHONPATH`);
//! - the command writes `embedding.npy` (N x d) or, with `output = "feature_scores"`,
//!   `weights.npy` (D), and optionally `edges.npy` (E x 3: i, j, weight; a graph on the samples).
//!
//! A non-zero exit, a timeout, a missing or malformed output, or non-finite values make a failed
//! cell with the reason and the end of the command's output; the last lines of stdout and stderr
//! are kept in the record's notes either way, with how the command was contained. Whatever way
//! the command ends, nothing it started outlives it and its scratch directory is removed
//! ([`contain`]: a PID namespace where possible, writes confined to the scratch directory where
//! bubblewrap works). The cell key holds the command, the SHA-256 of every command argument that
//! is a file and of everything under its `depends` (by default the script's directory), so
//! editing the script or a module it imports recomputes its cells ([`crate::spec::external`]
//! makes that key when the spec is read).

pub mod contain;

use crate::keys::CellKey;
use crate::spec::external::{HELPER_FILE, HELPER_PY};
use crate::spec::ExternalKey;
use contain::Containment;
use ndarray::{Array1, Array2};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use structdr_datasets::Dataset;
use structdr_methods::api::{FeatureScores, Fitted, Output, OutputKind, Trace};
use structdr_methods::{Graph, ParamValue};

/// Characters of stdout and of stderr kept in the record (the last ones).
const LOG_TAIL_CHARS: usize = 2000;

/// Directory inside the scratch directory that holds the helper module ([`HELPER_PY`]) and is
/// put first on `PYTHONPATH`.
pub const HELPER_DIR: &str = "lib";

/// `PYTHONPATH` for a run: `lib` first, then the caller's own `PYTHONPATH`, if any.
fn python_path(lib: &Path) -> std::ffi::OsString {
    let mut paths = vec![lib.to_path_buf()];
    if let Some(old) = std::env::var_os("PYTHONPATH") {
        paths.extend(std::env::split_paths(&old));
    }
    std::env::join_paths(paths).unwrap_or_else(|_| lib.as_os_str().to_owned())
}

fn param_json(v: &ParamValue) -> serde_json::Value {
    match v {
        ParamValue::Bool(b) => serde_json::Value::Bool(*b),
        ParamValue::Int(i) => serde_json::Value::from(*i),
        ParamValue::Float(x) if x.is_finite() => serde_json::Value::from(*x),
        ParamValue::Float(x) => serde_json::Value::String(format!("{x}")),
        ParamValue::Str(s) => serde_json::Value::String(s.clone()),
    }
}

/// The last `n` characters of `s` (on a character boundary).
fn tail(s: &str, n: usize) -> &str {
    if s.chars().count() <= n {
        return s;
    }
    let start = s.char_indices().rev().nth(n - 1).map_or(0, |(i, _)| i);
    &s[start..]
}

/// Runs the external method of `key` on `data` with `seed`: the fit, or why it failed (with the
/// end of the command's output).
pub fn fit(key: &CellKey, ext: &ExternalKey, data: &Dataset, seed: u64) -> Result<Fitted, String> {
    contain::sweep_dead_owners();
    let containment = Containment::get();
    let dir = contain::scratch()?;
    let work = dir.path();
    let input = work.join("input.npy");
    ndarray_npy::write_npy(&input, &data.x.as_standard_layout()).map_err(|e| format!("writing {}: {e}", input.display()))?;
    let labels = match (&data.labels, ext.needs_labels) {
        (Some(l), true) => {
            let p = work.join("labels.npy");
            ndarray_npy::write_npy(&p, &Array1::from(l.clone())).map_err(|e| format!("writing {}: {e}", p.display()))?;
            Some(p)
        }
        (None, true) => return Err(format!("{}: needs_labels = true but the data set has no labels", key.method)),
        _ => None,
    };
    let params: serde_json::Map<String, serde_json::Value> = key.params.iter().map(|(k, v)| (k.clone(), param_json(v))).collect();
    let dim = match key.params.get("dim") {
        Some(ParamValue::Int(d)) => Some(*d),
        _ => None,
    };
    let spec = serde_json::json!({
        "params": params, "seed": seed, "dim": dim, "n_samples": data.x.nrows(), "n_features": data.x.ncols(),
        "input": input, "labels": labels, "workdir": work,
    });
    std::fs::write(work.join("params.json"), serde_json::to_string_pretty(&spec).expect("json"))
        .map_err(|e| format!("writing {}: {e}", work.join("params.json").display()))?;

    let lib = work.join(HELPER_DIR);
    std::fs::create_dir_all(&lib)
        .and_then(|()| std::fs::write(lib.join(HELPER_FILE), HELPER_PY))
        .map_err(|e| format!("writing {}: {e}", lib.join(HELPER_FILE).display()))?;

    let (stdout_path, stderr_path) = (work.join("stdout.txt"), work.join("stderr.txt"));
    let file = |p: &PathBuf| std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()));
    let token = contain::run_token();
    let mut cmd = containment.command(&ext.command, work, &token);
    cmd.arg(work)
        .env("STRUCTDR_WORKDIR", work)
        .env("PYTHONPATH", python_path(&lib))
        .env("OMP_NUM_THREADS", "1")
        .env("OPENBLAS_NUM_THREADS", "1")
        .env("MKL_NUM_THREADS", "1")
        .env("NUMBA_NUM_THREADS", "1")
        .stdin(Stdio::null())
        .stdout(file(&stdout_path)?)
        .stderr(file(&stderr_path)?);
    let t0 = Instant::now();
    let mut child = cmd.spawn().map_err(|e| format!("{}: cannot start `{}`: {e}", key.method, ext.command.join(" ")))?;
    // the spec bounds timeout_s (spec::external::MAX_TIMEOUT_S); a key built otherwise is refused, not a panic
    let limit = Duration::try_from_secs_f64(ext.timeout_s).map_err(|e| format!("{}: timeout_s = {}: {e}", key.method, ext.timeout_s))?;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if t0.elapsed() < limit => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => break None,
            Err(e) => {
                containment.end_run(&mut child, &token);
                return Err(format!("waiting for `{}`: {e}", ext.command.join(" ")));
            }
        }
    };
    // nothing the command started outlives it, whether it exited or ran out of time
    containment.end_run(&mut child, &token);
    let read = |p: &Path| {
        let mut s = String::new();
        let _ = std::fs::File::open(p).and_then(|mut f| f.read_to_string(&mut s));
        s
    };
    let (out, err) = (read(&stdout_path), read(&stderr_path));
    let mut notes = vec![
        format!("external command `{}` ran {:.2} s", ext.command.join(" "), t0.elapsed().as_secs_f64()),
        format!("{}; key holds {} file(s) under {}", containment.note, ext.depends_files, depends_list(&ext.depends)),
    ];
    for (what, text) in [("stdout", &out), ("stderr", &err)] {
        if !text.trim().is_empty() {
            notes.push(format!("{what} (last {LOG_TAIL_CHARS} characters): {}", tail(text.trim_end(), LOG_TAIL_CHARS)));
        }
    }
    let why = |msg: String| {
        let e = tail(err.trim_end(), 600);
        if e.is_empty() {
            msg
        } else {
            format!("{msg}; stderr ends: {e}")
        }
    };
    match status {
        None => return Err(why(format!("{}: `{}` did not finish within timeout_s = {} s and was killed", key.method, ext.command.join(" "), ext.timeout_s))),
        Some(s) if !s.success() => return Err(why(format!("{}: `{}` failed ({s})", key.method, ext.command.join(" ")))),
        _ => {}
    }
    // Every output's shape is checked from its header before its body is read: a command that
    // writes a 1.6 GB file of the wrong shape costs a 64 KiB read, not 1.6 GB of memory.
    let (n, d) = data.x.dim();
    let expected = |name: &str, r: usize, c: usize| -> Result<(), String> {
        let ok = match name {
            "embedding.npy" => r == n,
            "weights.npy" => r.checked_mul(c) == Some(d),
            _ => c == 3 && r <= n.saturating_mul(n), // edges.npy: at most every ordered pair
        };
        if ok {
            Ok(())
        } else {
            Err(format!("not the shape of {name} for {n} samples x {d} features"))
        }
    };
    let read_npy = |name: &str| -> Result<Option<Array2<f64>>, String> {
        let p = work.join(name);
        if !p.is_file() {
            return Ok(None);
        }
        let check = |r: usize, c: usize| expected(name, r, c);
        structdr_datasets::parse::npy::read_matrix_checked(&p, &check).map(Some).map_err(|e| format!("{}: output {name}: {e}", key.method))
    };
    let output = match ext.output {
        OutputKind::Embedding => {
            let y = read_npy("embedding.npy")?
                .ok_or_else(|| why(format!("{}: the command exited 0 but wrote no embedding.npy in the work directory", key.method)))?;
            if let Some(d) = dim {
                if y.ncols() != d as usize {
                    return Err(format!("{}: embedding.npy has {} columns, the cell asked for dim = {d}", key.method, y.ncols()));
                }
            }
            Output::Embedding(y)
        }
        OutputKind::FeatureScores => {
            let w =
                read_npy("weights.npy")?.ok_or_else(|| why(format!("{}: the command exited 0 but wrote no weights.npy in the work directory", key.method)))?;
            if w.ncols() != 1 && w.nrows() != 1 {
                return Err(format!("{}: weights.npy is {} x {}, not a vector", key.method, w.nrows(), w.ncols()));
            }
            let weights: Array1<f64> = w.iter().copied().collect();
            let mut ranking: Vec<usize> = (0..weights.len()).collect();
            // most relevant first; ties by index, NaN left to check_shape
            ranking.sort_by(|&a, &b| weights[b].partial_cmp(&weights[a]).unwrap_or(std::cmp::Ordering::Equal).then(a.cmp(&b)));
            Output::FeatureScores(FeatureScores { weights, ranking })
        }
        OutputKind::PrincipalGraph => return Err(format!("{}: external principal graphs are not supported", key.method)),
    };
    let mut fitted = Fitted::new(output, Trace::closed_form());
    fitted.trace.termination = format!("external command exited 0 after {:.2} s", t0.elapsed().as_secs_f64());
    if let Some(e) = read_npy("edges.npy")? {
        let n = data.x.nrows();
        if e.ncols() != 3 {
            return Err(format!("{}: edges.npy has {} columns, expected 3 (i, j, weight)", key.method, e.ncols()));
        }
        let mut edges = Vec::with_capacity(e.nrows());
        for r in e.rows() {
            let (i, j, w) = (r[0], r[1], r[2]);
            let ok = i.fract() == 0.0 && j.fract() == 0.0 && i >= 0.0 && j >= 0.0 && (i as usize) < n && (j as usize) < n && i != j && w.is_finite();
            if !ok {
                return Err(format!("{}: edges.npy row ({i}, {j}, {w}) is not an edge between two of the {n} samples", key.method));
            }
            let (a, b) = if i < j { (i as usize, j as usize) } else { (j as usize, i as usize) };
            edges.push((a, b, w));
        }
        edges.sort_by_key(|x| (x.0, x.1));
        fitted.graph = Some(Graph { n_vertices: n, edges });
    }
    fitted.notes = notes;
    Ok(fitted)
}

/// The dependency roots of a key for a note: `'a', 'b'`, or `nothing` for none.
fn depends_list(depends: &[String]) -> String {
    if depends.is_empty() {
        return "nothing (no command file)".into();
    }
    depends.iter().map(|d| format!("'{d}'")).collect::<Vec<_>>().join(", ")
}
