//! The cells of a run: every grid cell of a plan with its content key ([`cells`]), the fit-only
//! cells its figures draw ([`FitCell`], [`panel_cells`]), and which grid cells this invocation
//! computes (the `--dataset` / `--method` filters, `--shard i/n`, `--max-cells`: [`Selection`]).
//! The keys themselves are [`crate::keys`]; running the cells is [`crate::exec`].

use crate::data::Prepared;
use crate::keys::{cell_key, fit_key, method_version, CellKey};
use crate::spec::Plan;

/// A grid cell ready to run or already stored.
#[derive(Clone)]
pub struct Cell {
    /// Index of the data set in the plan's prepared data sets.
    pub dataset: usize,
    /// Index of the method in [`Plan::methods`].
    pub method: usize,
    /// Index of the parameter set in the method's expanded grid ([`crate::spec::MethodPlan::cells`]).
    pub grid_index: usize,
    /// Content key of the cell (`dim = "energy"` resolved to the data set's energy dimension).
    pub key: CellKey,
    /// Hex SHA-256 of `key`: the record's name in the store.
    pub hash: String,
    /// Which of the spec's `repeats` (0-based; always 0 for methods that are not randomised).
    pub repeat: usize,
}

/// Expands every (data set, method, grid point) into a cell with its content key (one per seed of
/// a randomised method's `repeats`).
pub fn cells(plan: &Plan, data: &[Prepared]) -> Vec<Cell> {
    cells_iter(plan, data).collect()
}

/// [`cells`] one at a time, in the same order: a caller that keeps something smaller per cell (or
/// builds its own list) never holds the whole expansion twice.
pub fn cells_iter<'a>(plan: &'a Plan, data: &'a [Prepared]) -> impl Iterator<Item = Cell> + 'a {
    data.iter().enumerate().flat_map(move |(di, p)| {
        plan.methods.iter().enumerate().flat_map(move |(mi, m)| {
            let repeats = if m.randomised { plan.spec.repeats.max(1) } else { 1 };
            m.cells.iter().enumerate().flat_map(move |(gi, params)| {
                let key = CellKey { external: m.external.clone(), ..cell_key(plan, p, &m.name, m.version, &m.protocols, params) };
                (0..repeats).map(move |r| {
                    let key = CellKey { repeat: (r > 0).then_some(r as u32), ..key.clone() };
                    let hash = key.hash();
                    Cell { dataset: di, method: mi, grid_index: gi, key, hash, repeat: r }
                })
            })
        })
    })
}

/// A fit-only cell: a fit a figure draws (a `[[figure]]` panel's, or a best cell's embedding).
/// Planned like a grid cell, under the key of the grid cell it would be (so it shares the fit
/// cache with that cell), and run by the same execution ([`crate::exec::fit_only`]), but never
/// scored or recorded.
#[derive(Clone)]
pub struct FitCell {
    /// Index of the data set in the plan's prepared data sets.
    pub dataset: usize,
    /// Content key of the grid cell the fit would be.
    pub key: CellKey,
    /// Hex SHA-256 of `key`: what the fit is looked up by.
    pub hash: String,
    /// What the fit is, in progress lines ("data set / panel").
    pub what: String,
}

impl FitCell {
    /// The fit-only cell of `key` on data set `dataset`.
    pub fn new(dataset: usize, key: CellKey, what: String) -> FitCell {
        let hash = key.hash();
        FitCell { dataset, key, hash, what }
    }
}

/// The fit-only cells of the spec's `[[figure]]` panels: `[f][p]` is panel `p` of figure `f`,
/// keyed as a grid cell of the panel's method and parameters under the spec's protocols.
pub fn panel_cells(plan: &Plan, data: &[Prepared]) -> anyhow::Result<Vec<Vec<FitCell>>> {
    let protocols = plan.spec_protocols();
    plan.figures
        .iter()
        .map(|panels| {
            panels
                .iter()
                .map(|p| {
                    let key = cell_key(plan, &data[p.dataset], &p.method, method_version(&p.method)?, &protocols, &p.params);
                    Ok(FitCell::new(p.dataset, key, format!("{} / {}", data[p.dataset].label, p.title)))
                })
                .collect()
        })
        .collect()
}

/// One part of a run split over several processes or machines: this invocation computes the
/// cells whose key hash falls in part `index` of `count` (0-based), so `count` invocations with
/// `index = 0..count` cover every cell exactly once, whatever order they run in (a cell's part
/// depends only on its content key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This part, `0 <= index < count`.
    pub index: usize,
    /// Number of parts, `>= 1`.
    pub count: usize,
}

impl Shard {
    /// Parses `i/n` (1-based on the command line, as Slurm's array indices are often written:
    /// `1/4` .. `4/4`).
    pub fn parse(s: &str) -> Result<Shard, String> {
        let (i, n) = s.split_once('/').ok_or_else(|| format!("--shard '{s}': expected i/n, e.g. 1/4"))?;
        let (i, n): (usize, usize) = (
            i.trim().parse().map_err(|_| format!("--shard '{s}': '{i}' is not a number"))?,
            n.trim().parse().map_err(|_| format!("--shard '{s}': '{n}' is not a number"))?,
        );
        if n == 0 || i == 0 || i > n {
            return Err(format!("--shard '{s}': need 1 <= i <= n"));
        }
        Ok(Shard { index: i - 1, count: n })
    }
    /// Whether the cell with content hash `hash` belongs to this part.
    pub fn contains(&self, hash: &str) -> bool {
        let h = u64::from_str_radix(&hash[..16.min(hash.len())], 16).unwrap_or(0);
        (h % self.count as u64) as usize == self.index
    }
}

/// What one invocation computes of the missing cells.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Compute only cells of these data sets (table label or registry name; empty = all).
    pub only_datasets: Vec<String>,
    /// Compute only cells of these methods (table label or method name; empty = all).
    pub only_methods: Vec<String>,
    /// Compute only this part of the cells.
    pub shard: Option<Shard>,
    /// Stop after this many cells.
    pub max_cells: Option<usize>,
    /// Compute only the cells with these hashes (`structdr verify`'s sample; `None` = all).
    pub only_cells: Option<std::collections::BTreeSet<String>>,
}

impl Selection {
    /// The indices of `missing` (cells without a usable record) this invocation computes, and those
    /// it leaves for later (filters, shards, `--max-cells`), both in `missing`'s order.
    pub fn apply<'a>(&self, plan: &Plan, cell: impl Fn(usize) -> &'a Cell, missing: Vec<usize>) -> (Vec<usize>, Vec<usize>) {
        let wanted = |only: &[String], names: Vec<&str>| only.is_empty() || only.iter().any(|o| names.contains(&o.as_str()));
        let (mut todo, mut later): (Vec<usize>, Vec<usize>) = missing.into_iter().partition(|&i| {
            let c = cell(i);
            wanted(&self.only_datasets, plan.dataset_names(c.dataset))
                    && wanted(&self.only_methods, plan.method_names(c.method))
                    // by the fit's key: cells sharing one fit (FSL's n_selected) land in one
                    // part, so no part refits what another computes
                    && self.shard.is_none_or(|s| s.contains(&fit_key(&c.key).hash()))
                    && self.only_cells.as_ref().is_none_or(|only| only.contains(&c.hash))
        });
        if let Some(max) = self.max_cells.filter(|&m| m < todo.len()) {
            later.extend(todo.split_off(max));
            later.sort_unstable();
        }
        (todo, later)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parts of a sharded run are disjoint and cover every cell.
    #[test]
    fn shards_partition_the_cells() {
        assert_eq!(Shard::parse("2/4").unwrap(), Shard { index: 1, count: 4 });
        assert!(Shard::parse("0/4").is_err() && Shard::parse("5/4").is_err() && Shard::parse("x").is_err() && Shard::parse("1/0").is_err());
        let hashes: Vec<String> = (0..200u64).map(|i| structdr_datasets::sha256_hex(&i.to_le_bytes())).collect();
        for h in &hashes {
            let owners = (0..3).filter(|&i| Shard { index: i, count: 3 }.contains(h)).count();
            assert_eq!(owners, 1);
        }
        let sizes: Vec<usize> = (0..3).map(|i| hashes.iter().filter(|h| Shard { index: i, count: 3 }.contains(h)).count()).collect();
        assert!(sizes.iter().all(|&s| s > 40), "{sizes:?}");
    }
}
