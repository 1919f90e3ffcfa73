//! What the cells a run is about to compute will cost, said before it starts: a bare
//! `structdr run` of a table whose records are missing can mean hours of work, and a user should
//! learn that (and how to bound a sitting) before the first cell, not from the progress bar.
//!
//! The estimate comes from records, never from a model of the methods: a cell's own stored
//! record when it is recomputed (`--force`, `--retry-failed`), otherwise the mean of the store's
//! records of the same method on the same data set (any method version: a version bump rarely
//! changes the cost much). A fit shared by several cells ([`crate::keys::fit_key`]) is counted
//! once, its evaluations once per cell, as [`crate::exec::run`] computes them.

use crate::cells::Cell;
use crate::keys::fit_key;
use crate::store::{Record, Store};
use std::collections::{HashMap, HashSet};

/// A run's cost, estimated from a record store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CostEstimate {
    /// Cells to compute.
    pub cells: usize,
    /// Cells whose cost comes from their own stored record.
    pub from_own_record: usize,
    /// Cells whose cost is the mean of the store's records of their method and data set.
    pub from_similar: usize,
    /// Cells without an estimate (no record of their method on their data set).
    pub unknown: usize,
    /// Single-core seconds of fits and evaluations of the estimated cells: the sum over distinct
    /// fits of the fit's seconds, plus every cell's evaluation seconds.
    pub core_seconds: f64,
}

/// Mean fit and evaluation seconds of one (method, data set) over a store's records.
#[derive(Debug, Clone, Copy, Default)]
struct MeanCost {
    fit: f64,
    eval: f64,
    n: usize,
}

/// Estimates what computing `todo` will cost from the records in `store` (module doc). The
/// store's records are read in full only when some cell has no record of its own.
pub fn estimate<'a>(store: &Store, todo: impl IntoIterator<Item = &'a Cell>) -> CostEstimate {
    let todo: Vec<&Cell> = todo.into_iter().collect();
    let own: Vec<Option<Record>> = todo.iter().map(|c| store.get(&c.hash)).collect();
    let means = if own.iter().any(Option::is_none) { mean_costs(store) } else { HashMap::new() };
    let mut est = CostEstimate { cells: todo.len(), ..CostEstimate::default() };
    let mut fits_counted: HashSet<String> = HashSet::new();
    for (cell, own) in todo.iter().zip(&own) {
        let (fit, eval) = match own {
            Some(r) => {
                est.from_own_record += 1;
                (r.fit_seconds, r.eval_seconds)
            }
            None => match means.get(&(cell.key.method.clone(), cell.key.dataset.clone())) {
                Some(m) => {
                    est.from_similar += 1;
                    (m.fit, m.eval)
                }
                None => {
                    est.unknown += 1;
                    continue;
                }
            },
        };
        if fits_counted.insert(fit_key(&cell.key).hash()) {
            est.core_seconds += fit;
        }
        est.core_seconds += eval;
    }
    est
}

fn mean_costs(store: &Store) -> HashMap<(String, String), MeanCost> {
    let mut sums: HashMap<(String, String), MeanCost> = HashMap::new();
    for rec in store.records().unwrap_or_default().into_iter().filter_map(|(_, r)| r) {
        let m = sums.entry((rec.key.method.clone(), rec.key.dataset.clone())).or_default();
        m.fit += rec.fit_seconds;
        m.eval += rec.eval_seconds;
        m.n += 1;
    }
    for m in sums.values_mut() {
        m.fit /= m.n as f64;
        m.eval /= m.n as f64;
    }
    sums
}

/// Above this many estimated wall seconds, or this many cells without an estimate, the note
/// says how to bound a sitting.
const LONG_RUN_SECONDS: f64 = 600.0;
const MANY_UNKNOWN_CELLS: usize = 100;

/// Seconds as "45 s", "12.5 min" or "3.2 h".
pub fn human_seconds(s: f64) -> String {
    if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 5400.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

impl CostEstimate {
    /// Estimated wall seconds on `threads` parallel cells (the cells of a run are independent;
    /// a run of fewer cells than threads does not fill them, so this is a lower bound there).
    pub fn wall_seconds(&self, threads: usize) -> f64 {
        self.core_seconds / threads.max(1) as f64
    }

    /// The lines a run prints before computing (empty when there is nothing to say: no cells,
    /// or a short run of cells without any estimate). `threads`: the run's parallel cells.
    pub fn note(&self, threads: usize) -> Vec<String> {
        let mut lines = Vec::new();
        if self.cells == 0 {
            return lines;
        }
        let estimated = self.cells - self.unknown;
        if estimated > 0 {
            let sources = [(self.from_own_record, "from their own records"), (self.from_similar, "from records of the same method and data set")];
            let from: Vec<String> = sources.iter().filter(|(n, _)| *n > 0).map(|(n, how)| format!("{n} {how}")).collect();
            lines.push(format!(
                "cost estimate: {} of single-core fits and evaluations for {estimated} cell{}, about {} on {threads} thread{} ({}{})",
                human_seconds(self.core_seconds),
                if estimated == 1 { "" } else { "s" },
                human_seconds(self.wall_seconds(threads)),
                if threads == 1 { "" } else { "s" },
                from.join(", "),
                if self.unknown > 0 { format!("; {} more cells have no record to estimate from", self.unknown) } else { String::new() },
            ));
        }
        let long = self.wall_seconds(threads) >= LONG_RUN_SECONDS || self.unknown >= MANY_UNKNOWN_CELLS;
        if long {
            if estimated == 0 {
                lines.push(format!("cost estimate: none ({} cells, no record of their methods on their data sets in this store)", self.cells));
            }
            lines.push(
                "warning: this can take long: `--max-cells N`, `--method NAME` or `--dataset NAME` bound a sitting; \
                 an interrupted run keeps every finished cell and the next run resumes"
                    .to_string(),
            );
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_counts_sources_and_warns_only_for_long_runs() {
        let short = CostEstimate { cells: 3, from_own_record: 1, from_similar: 2, unknown: 0, core_seconds: 120.0 };
        let lines = short.note(2);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("2.0 min of single-core") && lines[0].contains("about 60 s on 2 threads"), "{}", lines[0]);
        assert!(lines[0].contains("1 from their own records, 2 from records of the same method"), "{}", lines[0]);
        let long = CostEstimate { cells: 10, from_own_record: 10, core_seconds: 7.0 * 3600.0, ..CostEstimate::default() };
        let lines = long.note(2);
        assert!(lines[0].contains("about 3.5 h on 2 threads"), "{}", lines[0]);
        assert!(lines[1].starts_with("warning:") && lines[1].contains("--max-cells N"), "{lines:?}");
        let unknown = CostEstimate { cells: 500, unknown: 500, ..CostEstimate::default() };
        let lines = unknown.note(2);
        assert!(lines[0].contains("none (500 cells") && lines[1].starts_with("warning:"), "{lines:?}");
        assert!(CostEstimate { cells: 5, unknown: 5, ..CostEstimate::default() }.note(2).is_empty());
        assert!(CostEstimate::default().note(2).is_empty());
    }

    #[test]
    fn human_seconds_picks_the_unit() {
        assert_eq!(human_seconds(45.0), "45 s");
        assert_eq!(human_seconds(750.0), "12.5 min");
        assert_eq!(human_seconds(7.0 * 3600.0), "7.0 h");
    }
}
