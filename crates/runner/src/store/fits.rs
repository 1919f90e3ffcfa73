//! The fit cache ([`FitStore`], `<out>/fits/`): what a fit returned, one file per fit key, so
//! figures draw cached fits instead of refitting.

use crate::keys::{fit_key, CellKey};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};
use structdr_methods::api::{FeatureScores, Fitted, Output, OutputKind, PrincipalGraph, Trace};

/// Name of the fit cache inside a spec's output directory (git-ignored: fits are reproducible
/// from their key, and some are large).
pub const FITS_DIR: &str = "fits";

/// The fit cache: what a fit returned (output, graph, components, trace, notes and its time),
/// one JSON file per fit key ([`fit_key`]), so figures draw cached fits instead of refitting. It only
/// reads and writes: the fits themselves are made by [`crate::exec`]. Floats are written
/// in shortest round-trip form, so a cached fit is bit-identical to the fresh one.
pub struct FitStore {
    dir: PathBuf,
}

/// A fit as stored: arrays row-major with their shapes. The large arrays are borrowed from the fit
/// when it is written (a 1,000,000 x 50 projection is not copied to be serialised).
#[derive(Serialize, Deserialize)]
struct StoredFit<'a> {
    key: CellKey,
    kind: OutputKind,
    shape: (usize, usize),
    values: Cow<'a, [f64]>,
    ranking: Vec<usize>,
    centres_shape: (usize, usize),
    centres: Cow<'a, [f64]>,
    edges: Vec<(usize, usize, f64)>,
    graph: Option<structdr_methods::Graph>,
    components: Option<Vec<usize>>,
    history: Vec<f64>,
    iterations: usize,
    converged: bool,
    #[serde(default)]
    stop: Option<structdr_methods::StopReason>,
    termination: String,
    #[serde(default)]
    kkt_residual: Option<f64>,
    notes: Vec<String>,
    fit_seconds: f64,
}

fn flat(a: &ndarray::Array2<f64>) -> ((usize, usize), Cow<'_, [f64]>) {
    (a.dim(), a.as_slice().map_or_else(|| Cow::Owned(a.iter().copied().collect()), Cow::Borrowed))
}

fn unflat(shape: (usize, usize), v: Cow<'_, [f64]>) -> Option<ndarray::Array2<f64>> {
    ndarray::Array2::from_shape_vec(shape, v.into_owned()).ok()
}

impl<'a> StoredFit<'a> {
    fn new(key: &CellKey, f: &'a Fitted, fit_seconds: f64) -> StoredFit<'a> {
        let (shape, values, ranking, centres_shape, centres, edges) = match &f.output {
            Output::Embedding(y) => {
                let (shape, values) = flat(y);
                (shape, values, vec![], (0, 0), Cow::Owned(vec![]), vec![])
            }
            Output::FeatureScores(s) => ((1, s.weights.len()), Cow::Owned(s.weights.to_vec()), s.ranking.clone(), (0, 0), Cow::Owned(vec![]), vec![]),
            Output::PrincipalGraph(g) => {
                let (shape, values) = flat(&g.projection);
                let (centres_shape, centres) = flat(&g.centres);
                (shape, values, vec![], centres_shape, centres, g.edges.clone())
            }
        };
        StoredFit {
            key: key.clone(),
            kind: f.kind(),
            shape,
            values,
            ranking,
            centres_shape,
            centres,
            edges,
            graph: f.graph.clone(),
            components: f.components.clone(),
            history: f.trace.history.clone(),
            iterations: f.trace.iterations,
            converged: f.trace.converged(),
            stop: Some(f.trace.stop.clone()),
            termination: f.trace.termination.clone(),
            kkt_residual: f.trace.kkt_residual,
            notes: f.notes.clone(),
            fit_seconds,
        }
    }

    fn into_fitted(self) -> Option<(Fitted, f64)> {
        let output = match self.kind {
            OutputKind::Embedding => Output::Embedding(unflat(self.shape, self.values)?),
            OutputKind::FeatureScores => Output::FeatureScores(FeatureScores { weights: self.values.into_owned().into(), ranking: self.ranking }),
            OutputKind::PrincipalGraph => Output::PrincipalGraph(PrincipalGraph {
                centres: unflat(self.centres_shape, self.centres)?,
                edges: self.edges,
                projection: unflat(self.shape, self.values)?,
            }),
        };
        let rows = match &output {
            Output::Embedding(y) => y.nrows(),
            Output::PrincipalGraph(g) => g.projection.nrows(),
            Output::FeatureScores(_) => 0,
        };
        let d_in = match &output {
            Output::FeatureScores(s) => s.weights.len(),
            _ => 0,
        };
        let mut f = Fitted::new(
            output,
            Trace {
                history: self.history,
                iterations: self.iterations,
                // a fit cached before the reason was kept: its flag, as a converged or a stalled fit
                stop: self.stop.unwrap_or(if self.converged {
                    structdr_methods::StopReason::Converged { residual: None, tol: None }
                } else {
                    structdr_methods::StopReason::Stalled { residual: None, tol: None, detail: "cached before the reason was recorded".into() }
                }),
                termination: self.termination,
                kkt_residual: self.kkt_residual,
            },
        );
        f.graph = self.graph;
        f.components = self.components;
        f.notes = self.notes;
        // a cache file edited or damaged into an inconsistent fit (a ranking that is no
        // permutation, edges past the vertices, components of another length) counts as missing
        f.check_shape(rows, d_in).ok()?;
        if let Some(g) = &f.graph {
            g.edges.iter().all(|&(i, j, w)| i < j && j < g.n_vertices && w.is_finite()).then_some(())?;
        }
        if let (Some(c), OutputKind::Embedding | OutputKind::PrincipalGraph) = (&f.components, f.kind()) {
            (c.len() == rows).then_some(())?;
        }
        (self.fit_seconds.is_finite() && self.fit_seconds >= 0.0).then_some(())?;
        Some((f, self.fit_seconds))
    }
}

impl FitStore {
    /// Opens (creating) the fit cache of a spec's output directory, `<out_dir>/fits`.
    pub fn open_in(out_dir: &Path) -> std::io::Result<FitStore> {
        let dir = out_dir.join(FITS_DIR);
        std::fs::create_dir_all(&dir).map_err(|e| crate::files::path_error("create the fit cache", &dir, e))?;
        crate::files::sweep_stale_temps(&dir);
        Ok(FitStore { dir })
    }

    fn path(&self, key: &CellKey) -> PathBuf {
        self.dir.join(format!("{}.json", fit_key(key).hash()))
    }

    /// Whether the fit of `key` is cached.
    pub fn contains(&self, key: &CellKey) -> bool {
        self.path(key).is_file()
    }

    /// The cached fit of `key` and the seconds it took, if present, readable and consistent.
    pub fn get(&self, key: &CellKey) -> Option<(Fitted, f64)> {
        let text = std::fs::read_to_string(self.path(key)).ok()?;
        let (stored_key, fitted, seconds) = parse_fit(&text)?;
        (stored_key == fit_key(key)).then_some((fitted, seconds))
    }

    /// Stores the fit of `key` (made in `seconds`). Best effort: the cache only saves refits, so a
    /// fit that cannot be stored (non-finite history values, an unwritable directory) is skipped.
    pub fn put(&self, key: &CellKey, fitted: &Fitted, seconds: f64) {
        // streamed to the file: a large fit is never held as one string
        let _ = crate::files::atomic_write_with(&self.path(key), |f| {
            let mut w = std::io::BufWriter::new(f);
            write_fit(&mut w, key, fitted, seconds)?;
            w.flush()
        });
    }
}

/// The JSON text a fit is stored as, under the fit key of `key` ([`parse_fit`] reads it back);
/// `None` when the fit cannot be written (non-finite history values). The fit cache and the
/// committed panels ([`crate::store::PanelStore`]) share it, so both read back the same fit.
pub fn fit_text(key: &CellKey, fitted: &Fitted, seconds: f64) -> Option<String> {
    serde_json::to_string(&StoredFit::new(&fit_key(key), fitted, seconds)).ok()
}

/// [`fit_text`] streamed into `w` (the same bytes); an error when the fit cannot be written
/// (non-finite history values) or `w` fails.
pub fn write_fit(w: impl std::io::Write, key: &CellKey, fitted: &Fitted, seconds: f64) -> std::io::Result<()> {
    serde_json::to_writer(w, &StoredFit::new(&fit_key(key), fitted, seconds)).map_err(std::io::Error::other)
}

/// A fit-cache file's content: the fit key it was stored under, the fit and its seconds; `None`
/// when the text is not a stored fit or describes an inconsistent one ([`Fitted::check_shape`],
/// graph edges `i < j < n_vertices`, one component per sample).
pub fn parse_fit(text: &str) -> Option<(CellKey, Fitted, f64)> {
    let stored: StoredFit = serde_json::from_str(text).ok()?;
    let key = stored.key.clone();
    let (fitted, seconds) = stored.into_fitted()?;
    Some((key, fitted, seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::tests::key;

    #[test]
    fn inconsistent_fit_files_count_as_missing() {
        let scores = |ranking: Vec<usize>| {
            let f = Fitted::new(Output::FeatureScores(FeatureScores { weights: ndarray::array![0.5, 0.25, 0.0], ranking }), Trace::closed_form());
            serde_json::to_string(&StoredFit::new(&key(), &f, 0.5)).unwrap()
        };
        let (k, f, secs) = parse_fit(&scores(vec![0, 1, 2])).expect("a consistent fit parses");
        assert_eq!((k, f.feature_scores().unwrap().ranking.clone(), secs), (key(), vec![0, 1, 2], 0.5));
        // a ranking that is no permutation, or past the weights (select() would index out of bounds)
        assert!(parse_fit(&scores(vec![0, 0, 2])).is_none());
        assert!(parse_fit(&scores(vec![0, 1, 7])).is_none());
        let mut f = Fitted::closed_form(ndarray::Array2::zeros((3, 2)));
        f.graph = Some(structdr_methods::Graph { n_vertices: 3, edges: vec![(0, 2, 1.0)] });
        f.components = Some(vec![0, 0, 0]);
        let good = serde_json::to_string(&StoredFit::new(&key(), &f, 0.1)).unwrap();
        assert!(parse_fit(&good).is_some());
        // edges past the vertices, reversed edges, components of another length, negative seconds
        for (from, to) in [("[0,2,1.0]", "[0,9,1.0]"), ("[0,2,1.0]", "[2,0,1.0]"), ("[0,0,0]", "[0,0]"), ("\"fit_seconds\":0.1", "\"fit_seconds\":-1.0")] {
            let bad = good.replace(from, to);
            assert_ne!(bad, good, "{from}");
            assert!(parse_fit(&bad).is_none(), "{to} accepted");
        }
    }
}
