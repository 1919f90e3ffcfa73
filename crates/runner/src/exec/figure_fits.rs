//! The fit-only cells of a spec's figures ([`fit_only`]): from the committed panels, else the fit
//! cache, else fitted in parallel as a grid cell's fit is (BLAS single-threaded inside, through
//! [`super::fit_cell_outcome`]) and kept in both.

use super::{fit_observed, FitFailure};
use crate::cells::FitCell;
use crate::data::Prepared;
use crate::keys::fit_key;
use crate::progress::Progress;
use crate::store::{FitStore, PanelStore};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;
use structdr_methods::Fitted;

/// The fits of fit-only cells, by cell hash ([`FitCell::hash`]): the fit and the seconds it took,
/// or why it failed (and whether the method called it degenerate).
pub type Fits = HashMap<String, Result<(Fitted, f64), FitFailure>>;

/// Where fit-only cells find their fits ([`fit_only`]).
#[derive(Clone, Copy)]
pub struct FitSources<'a> {
    /// The committed panels, read first and kept up to date with every fit drawn.
    pub panels: &'a PanelStore,
    /// The git-ignored fit cache, read next and written with every new fit.
    pub fits: &'a FitStore,
    /// Refit every cell, reading neither (`--force`, `--force-before`); the new fits replace both.
    pub refit: bool,
}

/// Runs fit-only cells (a figure's panels, the best cells' embeddings): every distinct fit once
/// (cells that differ only in evaluation-stage parameters share it, as grid cells do), from the
/// committed panels when they hold the fit, else from the fit cache, else fitted as a grid cell's
/// fit is; a fit taken from the cache or made now is stored as a panel too (and a new one in the
/// cache), so the panels always hold what the figures draw. Under `refit` every fit is made anew.
pub fn fit_only(data: &[Prepared], cells: &[FitCell], sources: &FitSources, quiet: bool) -> Fits {
    let FitSources { panels, fits, refit } = *sources;
    if cells.is_empty() {
        return Fits::new();
    }
    let t0 = Instant::now();
    let mut by_fit: HashMap<String, Result<(Fitted, f64), FitFailure>> = HashMap::new();
    let mut todo: Vec<(String, &FitCell)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut from_panels = 0;
    for c in cells {
        let fit_hash = fit_key(&c.key).hash();
        if !seen.insert(fit_hash.clone()) {
            continue;
        }
        if refit {
            todo.push((fit_hash, c));
        } else if let Some(hit) = panels.get(&c.key) {
            from_panels += 1;
            by_fit.insert(fit_hash, Ok(hit));
        } else if let Some(message) = panels.get_degenerate(&c.key) {
            // a fit the method called degenerate is committed as such, so a fresh clone does not
            // refit it to learn that again
            from_panels += 1;
            by_fit.insert(fit_hash, Err(FitFailure { message, degenerate: true }));
        } else if let Some((f, seconds)) = fits.get(&c.key) {
            panels.put(&c.key, &f, seconds);
            by_fit.insert(fit_hash, Ok((f, seconds)));
        } else {
            todo.push((fit_hash, c));
        }
    }
    let cached = by_fit.len() - from_panels;
    let progress = Arc::new(Progress::start(todo.len(), quiet));
    // one BLAS thread inside the parallel fits, as in the grid cells (docs/blas.md B4)
    let blas = structdr_linalg::blas::hold_threads(1);
    let fitted: Vec<_> = todo
        .par_iter()
        .map(|(fit_hash, c)| {
            let (fitted, seconds) = fit_observed(&c.key, &data[c.dataset].data, &progress, c.what.clone());
            match &fitted {
                Ok(f) => {
                    fits.put(&c.key, f, seconds);
                    panels.put(&c.key, f, seconds);
                }
                Err(e) if e.degenerate => panels.put_degenerate(&c.key, &e.message, seconds),
                Err(_) => {}
            }
            progress.fit_done(&c.what, seconds, fitted.as_ref().err().map(|e| e.message.as_str()));
            (fit_hash.clone(), fitted.map(|f| (f, seconds)))
        })
        .collect();
    drop(blas);
    progress.finish();
    by_fit.extend(fitted);
    if !quiet {
        eprintln!(
            "  figure fits: {} distinct ({from_panels} from the committed panels, {cached} from the fit cache) in {:.1} s",
            from_panels + cached + todo.len(),
            t0.elapsed().as_secs_f64()
        );
    }
    cells.iter().map(|c| (c.hash.clone(), by_fit[&fit_key(&c.key).hash()].clone())).collect()
}
