//! The plan of a run: every grid cell with its content key and seed, and which cells this
//! invocation computes (the `--dataset` / `--method` filters, `--shard i/n`, `--max-cells`).

use crate::data::Prepared;
use crate::spec::{Plan, Protocol, DIM_ENERGY};
use crate::store::{CellKey, SCHEMA};
use structdr_methods::api::Stage;
use structdr_methods::{ParamMap, ParamValue};

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

/// Expands every (data set, method, grid point) into a cell with its content key.
pub fn cells(plan: &Plan, data: &[Prepared]) -> Vec<Cell> {
    let mut out = Vec::new();
    for (di, p) in data.iter().enumerate() {
        for (mi, m) in plan.methods.iter().enumerate() {
            let repeats = if m.randomised { plan.spec.repeats.max(1) } else { 1 };
            for (gi, params) in m.cells.iter().enumerate() {
                let key = CellKey { external: m.external.clone(), ..cell_key(plan, p, &m.name, m.version, &m.protocols, params) };
                for r in 0..repeats {
                    let key = CellKey { repeat: (r > 0).then_some(r as u32), ..key.clone() };
                    let hash = key.hash();
                    out.push(Cell { dataset: di, method: mi, grid_index: gi, key, hash, repeat: r });
                }
            }
        }
    }
    out
}

/// The content key of `method` at `version` with `params` (dim possibly "energy") on a prepared
/// data set, evaluated by `protocols` (a method's [`crate::spec::MethodPlan::protocols`]; a
/// figure panel's fit uses the spec's).
pub fn cell_key(plan: &Plan, p: &Prepared, method: &str, version: u32, protocols: &[Protocol], params: &ParamMap) -> CellKey {
    let mut params = params.clone();
    let dim_source = if params.get("dim") == Some(&ParamValue::Str(DIM_ENERGY.into())) {
        params.insert("dim".into(), ParamValue::Int(p.energy_dim as i64));
        format!("energy{}{}", rule_symbol(plan), plan.spec.dim.threshold)
    } else {
        "fixed".into()
    };
    let restarts = plan.spec.evaluation.as_ref().map_or(0, |ev| ev.restarts);
    let neighbourhood_k = plan.spec.evaluation.as_ref().filter(|_| protocols.contains(&Protocol::Neighbourhood)).map(|ev| ev.neighbourhood_k);
    let protocols = protocols.iter().map(|p| p.name().to_string()).collect();
    CellKey {
        dataset: p.data.name.clone(),
        data_checksum: p.data.checksum.clone(),
        method: method.to_string(),
        params,
        dim_source,
        protocols,
        kmeans_restarts: restarts,
        neighbourhood_k,
        repeat: None,
        external: None,
        seed: plan.spec.seed,
        schema: SCHEMA,
        method_version: version,
    }
}

/// The seed a cell's method and k-means use: derived from the cell key (without the method
/// version, [`CellKey::seed_hash`]), so adding a cell never changes another cell's result and a
/// version bump changes no seed.
pub fn cell_seed(key: &CellKey) -> u64 {
    let h = key.seed_hash();
    u64::from_str_radix(&h[..16], 16).expect("hex")
}

/// Names of `method`'s evaluation-stage parameters (empty for an unknown method).
pub fn evaluation_stage_params(method: &str) -> Vec<&'static str> {
    structdr_methods::lookup(method).map(|m| m.params.iter().filter(|p| p.stage == Stage::Evaluation).map(|p| p.name).collect()).unwrap_or_default()
}

/// The key under which a cell's fit is shared: the cell key without the method's
/// evaluation-stage parameters (cells that differ only in those evaluate one fit).
pub fn fit_key(key: &CellKey) -> CellKey {
    let mut k = key.clone();
    for p in evaluation_stage_params(&key.method) {
        k.params.remove(p);
    }
    k
}

/// `>=` or `>`: how the spec's energy rule compares.
pub(crate) fn rule_symbol(plan: &Plan) -> &'static str {
    match plan.spec.dim.rule {
        structdr_linalg::EnergyRule::Ge => ">=",
        structdr_linalg::EnergyRule::Gt => ">",
    }
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
}

impl Selection {
    /// The indices of `missing` (cells without a usable record) this invocation computes, and how
    /// many it leaves for later.
    pub fn apply<'a>(&self, plan: &Plan, cell: impl Fn(usize) -> &'a Cell, missing: Vec<usize>) -> (Vec<usize>, usize) {
        let before = missing.len();
        let wanted = |only: &[String], names: Vec<&str>| only.is_empty() || only.iter().any(|o| names.contains(&o.as_str()));
        let mut todo: Vec<usize> = missing
            .into_iter()
            .filter(|&i| {
                let c = cell(i);
                wanted(&self.only_datasets, plan.dataset_names(c.dataset))
                    && wanted(&self.only_methods, plan.method_names(c.method))
                    // by the fit's key: cells sharing one fit (FSL's n_selected) land in one
                    // part, so no part refits what another computes
                    && self.shard.is_none_or(|s| s.contains(&fit_key(&c.key).hash()))
            })
            .collect();
        if let Some(max) = self.max_cells {
            todo.truncate(max);
        }
        let left = before - todo.len();
        (todo, left)
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
