//! What the cells a run is about to compute will cost, said before it starts: a bare
//! `structdr run` of a table whose records are missing can mean hours of work, and a user should
//! learn that (and how to bound a sitting) before the first cell, not from the progress bar.
//!
//! The estimate comes from records, never from a model of the methods, in this order:
//! 1. the cell's own stored record, when it is recomputed (`--force`, `--retry-failed`);
//! 2. the record of the same cell under another version of its method (the key without the
//!    version, [`crate::keys::CellKey::seed_hash`], the newest such version): after a version bump every cell
//!    has one, and a version bump rarely changes the cost much;
//! 3. the mean of the store's records of the same method on the same data set (any version).
//!
//! The second step matters where one method's grid spans very different costs. Table 1's MPME
//! cells are an example: the converged row takes 1-80 s a cell, the capped row (500 dense
//! L-BFGS-B iterations) up to 1,800 s. After MPME's version 2, the mean alone announced
//! 31.9 min for the capped row's 54 missing cells, whose version 1 records hold 81 min.
//! A fit shared by several cells ([`crate::keys::fit_key`]) is counted
//! once, its evaluations once per cell, as [`crate::exec::run`] computes them.
//!
//! The same per-cell costs order a run's work: [`crate::exec::run`] starts the fits expected to
//! take longest first ([`longest_first`]), so a long cell never starts last and leaves the other
//! threads idle at the end (list scheduling in decreasing order, Graham 1969: the run ends within
//! 4/3 of the best possible split of the fits over the threads). The wall estimate is the end of
//! that schedule ([`list_schedule_seconds`]), not the core seconds divided by the threads. A
//! fit with no record to go by (an empty store: a run from scratch) starts before those with one,
//! and among such fits the largest data set's go first.

use crate::cells::Cell;
use crate::keys::fit_key;
use crate::store::{Record, Store};
use std::collections::HashMap;

/// A run's cost, estimated from a record store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CostEstimate {
    /// Cells to compute.
    pub cells: usize,
    /// Cells whose cost comes from their own stored record.
    pub from_own_record: usize,
    /// Cells whose cost comes from their own record under another version of their method.
    pub from_other_version: usize,
    /// Cells whose cost is the mean of the store's records of their method and data set.
    pub from_similar: usize,
    /// Cells without an estimate (no record of their method on their data set).
    pub unknown: usize,
    /// Single-core seconds of fits and evaluations of the estimated cells: the sum over distinct
    /// fits of the fit's seconds, plus every cell's evaluation seconds.
    pub core_seconds: f64,
    /// The same seconds per distinct fit (the fit and its cells' evaluations), the units a run
    /// schedules on its threads.
    pub jobs: Vec<f64>,
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
    let lookup = CellCosts::new(store, &todo);
    let mut est = CostEstimate { cells: todo.len(), ..CostEstimate::default() };
    let mut job_of: HashMap<String, usize> = HashMap::new();
    for (k, cell) in todo.iter().enumerate() {
        let (fit, eval) = match lookup.get(k, cell) {
            Some((fit, eval, Source::Own)) => {
                est.from_own_record += 1;
                (fit, eval)
            }
            Some((fit, eval, Source::OtherVersion)) => {
                est.from_other_version += 1;
                (fit, eval)
            }
            Some((fit, eval, Source::Similar)) => {
                est.from_similar += 1;
                (fit, eval)
            }
            None => {
                est.unknown += 1;
                continue;
            }
        };
        let next = est.jobs.len();
        let job = *job_of.entry(fit_key(&cell.key).hash()).or_insert_with(|| next);
        if job == next {
            est.jobs.push(0.0);
            est.core_seconds += fit;
            est.jobs[job] += fit;
        }
        est.core_seconds += eval;
        est.jobs[job] += eval;
    }
    est
}

/// The estimated seconds of each group of cells sharing one fit (the fit once, every member's
/// evaluation), `None` when no member has an estimate.
pub fn group_seconds(store: &Store, groups: &[Vec<&Cell>]) -> Vec<Option<f64>> {
    let all: Vec<&Cell> = groups.iter().flatten().copied().collect();
    let lookup = CellCosts::new(store, &all);
    let mut k = 0;
    groups
        .iter()
        .map(|members| {
            let mut total: Option<f64> = None;
            for (m, cell) in members.iter().enumerate() {
                if let Some((fit, eval, _)) = lookup.get(k, cell) {
                    *total.get_or_insert(0.0) += eval + if m == 0 { fit } else { 0.0 };
                }
                k += 1;
            }
            total
        })
        .collect()
}

/// The order in which to start jobs of the given estimated seconds: those without an estimate
/// first (they may be long, and nothing says otherwise), largest `samples` first among them (the
/// only size known before a fit, and every method here costs at least linearly in it), then by
/// decreasing estimate; ties keep their given order. Simulated on Table 1's records (2 threads),
/// the prior orders an empty store's run about as well as the records would: MPME's cells end
/// after 1.46 h (ordered by the records 1.46 h, in the spec's data set order 1.58 h), MVUineq's
/// after 2.63 h (2.63 h, 2.68 h).
pub fn longest_first(seconds: &[Option<f64>], samples: &[usize]) -> Vec<usize> {
    assert_eq!(seconds.len(), samples.len(), "one size per job");
    let mut order: Vec<usize> = (0..seconds.len()).collect();
    order.sort_by(|&a, &b| match (seconds[a], seconds[b]) {
        (None, None) => samples[b].cmp(&samples[a]),
        (None, Some(_)) => std::cmp::Ordering::Less,
        (Some(_), None) => std::cmp::Ordering::Greater,
        (Some(x), Some(y)) => y.total_cmp(&x),
    });
    order
}

/// When `threads` workers finish `jobs` (seconds each) taken in the given order, each worker
/// taking the next job as soon as it is free: the length of that schedule.
pub fn list_schedule_seconds(jobs: &[f64], threads: usize) -> f64 {
    let mut free_at = vec![0.0f64; threads.max(1)];
    for &job in jobs {
        let earliest = free_at.iter_mut().min_by(|a, b| a.total_cmp(b)).expect("at least one worker");
        *earliest += job;
    }
    free_at.into_iter().fold(0.0, f64::max)
}

/// Where a cell's estimate came from.
enum Source {
    Own,
    OtherVersion,
    Similar,
}

/// A record's cost as an estimate for the same cell under another method version.
#[derive(Debug, Clone, Copy)]
struct VersionedCost {
    version: u32,
    fit: f64,
    eval: f64,
}

/// Each cell's (fit, evaluation) seconds: its own record's, the same cell's under another
/// version, or the mean of its method's on its data set (module doc).
struct CellCosts {
    own: Vec<Option<Record>>,
    /// By [`crate::keys::CellKey::seed_hash`] (the key without the version): the newest version's record.
    other_versions: HashMap<String, VersionedCost>,
    means: HashMap<(String, String), MeanCost>,
}

impl CellCosts {
    fn new(store: &Store, cells: &[&Cell]) -> CellCosts {
        let own: Vec<Option<Record>> = cells.iter().map(|c| store.get(&c.hash)).collect();
        let (other_versions, means) = if own.iter().any(Option::is_none) { store_costs(store) } else { Default::default() };
        CellCosts { own, other_versions, means }
    }

    /// The `k`-th cell of those given to [`CellCosts::new`].
    fn get(&self, k: usize, cell: &Cell) -> Option<(f64, f64, Source)> {
        if let Some(r) = &self.own[k] {
            return Some((r.fit_seconds, r.eval_seconds, Source::Own));
        }
        if let Some(v) = self.other_versions.get(&cell.key.seed_hash()) {
            return Some((v.fit, v.eval, Source::OtherVersion));
        }
        self.means.get(&(cell.key.method.clone(), cell.key.dataset.clone())).map(|m| (m.fit, m.eval, Source::Similar))
    }
}

/// One pass over the store: each cell's newest record by its unversioned key, and the mean cost
/// per (method, data set).
fn store_costs(store: &Store) -> (HashMap<String, VersionedCost>, HashMap<(String, String), MeanCost>) {
    let mut sums: HashMap<(String, String), MeanCost> = HashMap::new();
    let mut versions: HashMap<String, VersionedCost> = HashMap::new();
    for rec in store.records().unwrap_or_default().into_iter().filter_map(|(_, r)| r) {
        let cost = VersionedCost { version: rec.key.method_version, fit: rec.fit_seconds, eval: rec.eval_seconds };
        let unversioned = rec.key.seed_hash();
        if versions.get(&unversioned).is_none_or(|kept| kept.version < cost.version) {
            versions.insert(unversioned, cost);
        }
        let m = sums.entry((rec.key.method.clone(), rec.key.dataset.clone())).or_default();
        m.fit += rec.fit_seconds;
        m.eval += rec.eval_seconds;
        m.n += 1;
    }
    for m in sums.values_mut() {
        m.fit /= m.n as f64;
        m.eval /= m.n as f64;
    }
    (versions, sums)
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
    /// Estimated wall seconds on `threads` parallel cells: the end of the longest-first schedule
    /// of [`CostEstimate::jobs`] (module doc), and never less than the core seconds shared evenly.
    pub fn wall_seconds(&self, threads: usize) -> f64 {
        let mut jobs = self.jobs.clone();
        jobs.sort_by(|a, b| b.total_cmp(a));
        (self.core_seconds / threads.max(1) as f64).max(list_schedule_seconds(&jobs, threads))
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
            let sources = [
                (self.from_own_record, "from their own records"),
                (self.from_other_version, "from the same cells' records under another method version"),
                (self.from_similar, "from records of the same method and data set"),
            ];
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
        let short = CostEstimate { cells: 3, from_own_record: 1, from_other_version: 0, from_similar: 2, unknown: 0, core_seconds: 120.0, jobs: vec![] };
        let lines = short.note(2);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("2.0 min of single-core") && lines[0].contains("about 60 s on 2 threads"), "{}", lines[0]);
        assert!(lines[0].contains("1 from their own records, 2 from records of the same method"), "{}", lines[0]);
        let bumped = CostEstimate { cells: 4, from_own_record: 1, from_other_version: 3, core_seconds: 60.0, ..CostEstimate::default() };
        let lines = bumped.note(2);
        assert!(lines[0].contains("1 from their own records, 3 from the same cells' records under another method version"), "{}", lines[0]);
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
    fn longest_first_puts_unknown_then_decreasing_estimates_and_keeps_ties_in_order() {
        assert_eq!(longest_first(&[Some(1.0), None, Some(5.0), Some(5.0), Some(2.0), None], &[9, 1, 9, 9, 9, 1]), vec![1, 5, 2, 3, 4, 0]);
        assert_eq!(longest_first(&[], &[]), Vec::<usize>::new());
        // without estimates the larger data set goes first (ties in order); sizes never reorder
        // estimated jobs
        assert_eq!(longest_first(&[None, None, None, Some(1.0), Some(2.0)], &[10, 50, 10, 90, 5]), vec![1, 0, 2, 4, 3]);
    }

    #[test]
    fn a_long_job_started_last_lengthens_the_schedule_and_longest_first_does_not() {
        // four 1 s jobs then a 4 s job on two workers: the 4 s job starts at 2 s and ends at 6 s;
        // started first, it runs beside the four short ones and the schedule ends at 4 s
        assert_eq!(list_schedule_seconds(&[1.0, 1.0, 1.0, 1.0, 4.0], 2), 6.0);
        assert_eq!(list_schedule_seconds(&[4.0, 1.0, 1.0, 1.0, 1.0], 2), 4.0);
        // a worker takes the next job when it is free: 5 | 4, then 3 on the second (7), 3 on the
        // first (8), 3 on the second (10)
        assert_eq!(list_schedule_seconds(&[5.0, 4.0, 3.0, 3.0, 3.0], 2), 10.0);
        assert_eq!(list_schedule_seconds(&[2.0, 3.0], 1), 5.0);
        assert_eq!(list_schedule_seconds(&[], 2), 0.0);
        // the wall estimate is that schedule's end in longest-first order, at least core / threads
        let est = CostEstimate { cells: 5, from_own_record: 5, core_seconds: 8.0, jobs: vec![1.0, 1.0, 1.0, 1.0, 4.0], ..CostEstimate::default() };
        assert_eq!(est.wall_seconds(2), 4.0);
        let est = CostEstimate { cells: 3, from_own_record: 3, core_seconds: 8.0, jobs: vec![1.0, 6.0, 1.0], ..CostEstimate::default() };
        assert_eq!(est.wall_seconds(2), 6.0);
        assert_eq!(est.wall_seconds(1), 8.0);
    }

    #[test]
    fn human_seconds_picks_the_unit() {
        assert_eq!(human_seconds(45.0), "45 s");
        assert_eq!(human_seconds(750.0), "12.5 min");
        assert_eq!(human_seconds(7.0 * 3600.0), "7.0 h");
    }
}
