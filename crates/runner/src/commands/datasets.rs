//! `structdr datasets`: list, fetch, verify and export data sets (registry sets and synthetic
//! generators).

use crate::files::atomic_write;
use anyhow::{bail, Context, Result};
use clap::Subcommand;
use std::path::PathBuf;

// clap reads doc comments as help text (a doc here would change `--help`): the commands' help documents these.
#[allow(missing_docs)]
#[derive(Subcommand)]
pub enum DatasetsCommand {
    /// Every registered data set and whether it is cached.
    List,
    /// Download (or copy from the mirror) and verify the named sets.
    Fetch {
        names: Vec<String>,
        /// Fetch every mirrored set.
        #[arg(long)]
        all: bool,
    },
    /// Re-hash every cached file against the registry.
    Verify,
    /// Write X.npy (float64), y.npy (int64) and, for generated sets, t.npy (the manifold
    /// coordinate): a registry set after its loading, or a synthetic generator's output.
    Export {
        /// Registry name (`structdr datasets list`) or synthetic generator (helix, two_moons, ...).
        name: String,
        #[arg(long)]
        out: PathBuf,
        /// Generator parameter `key=value` (repeatable), e.g. `--param n=500 --param noise=0.05`.
        #[arg(long = "param")]
        params: Vec<String>,
        /// Generator seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Also write `data.csv`: a header `x1,...,xD[,label]`, one sample per line (a file to
        /// name with `path = ...` and `label_column = -1` in a spec).
        #[arg(long)]
        csv: bool,
    },
}

/// `structdr datasets`.
pub fn datasets(d: DatasetsCommand) -> Result<()> {
    use structdr_datasets::{download, load, registry::Registry};
    let opts = download::FetchOptions::from_env();
    let registry = Registry::builtin();
    match d {
        DatasetsCommand::List => {
            println!("mirror: {}   cache: {}", opts.mirror.as_ref().map(|m| m.describe()).unwrap_or_else(|| "none".into()), opts.cache_dir.display());
            println!("{:<22} {:<18} {:>7} {:>7} {:>4}  {:<8} {:<6} note", "name", "paper name", "N", "D", "c", "mirrored", "cached");
            for e in registry.iter() {
                let cached = e.files.iter().all(|f| opts.cache_dir.join(&f.mirror_path).exists());
                println!(
                    "{:<22} {:<18} {:>7} {:>7} {:>4}  {:<8} {:<6} {}",
                    e.name,
                    e.paper_name,
                    e.n_samples,
                    e.n_features,
                    e.n_classes,
                    if e.mirrored { "yes" } else { "no" },
                    if cached { "yes" } else { "no" },
                    e.table_note().unwrap_or_default()
                );
            }
        }
        DatasetsCommand::Fetch { names, all } => {
            let names: Vec<String> = if all { registry.iter().filter(|e| e.mirrored).map(|e| e.name.clone()).collect() } else { names };
            if names.is_empty() {
                bail!("name the data sets to fetch, or pass --all (see `structdr datasets list`)");
            }
            let mut failed = 0;
            for n in &names {
                let entry = registry.get(n)?;
                match load::fetch_files(entry, &opts) {
                    Ok(files) => {
                        for f in files {
                            println!("{:<22} ok  {}  {}  ({})", n, &f.sha256[..16], f.path.display(), f.origin);
                        }
                    }
                    Err(e) => {
                        failed += 1;
                        eprintln!("{n}: {e}");
                    }
                }
            }
            if failed > 0 {
                bail!("{failed} of {} data sets could not be fetched", names.len());
            }
        }
        DatasetsCommand::Verify => {
            let (mut ok, mut bad, mut absent) = (0, 0, 0);
            for e in registry.iter() {
                if !e.files.iter().any(|f| opts.cache_dir.join(&f.mirror_path).exists()) {
                    absent += 1;
                    continue;
                }
                match download::verify_entry(e, &opts) {
                    Ok(files) => {
                        ok += 1;
                        for f in files {
                            println!("{:<22} verified  {}", e.name, f.path.display());
                        }
                    }
                    Err(err) => {
                        bad += 1;
                        eprintln!("{:<22} FAILED  {err}", e.name);
                    }
                }
            }
            println!("{ok} verified, {bad} failed, {absent} not in the cache ({})", opts.cache_dir.display());
            if bad > 0 {
                return Err(super::exit::data_error(anyhow::anyhow!("{bad} cached data sets failed verification")));
            }
        }
        DatasetsCommand::Export { name, out, params, seed, csv } => {
            let is_generator = structdr_datasets::synthetic::generators().iter().any(|g| g.name == name);
            let ds = if is_generator {
                let mut p = std::collections::BTreeMap::new();
                for kv in &params {
                    let Some((k, v)) = kv.split_once('=') else { bail!("--param {kv}: expected key=value") };
                    let v: f64 = v.trim().parse().with_context(|| format!("--param {kv}: the value is not a number"))?;
                    p.insert(k.trim().to_string(), v);
                }
                structdr_datasets::synthetic::generate(&name, &p, seed).with_context(|| format!("generator '{name}'"))?
            } else {
                if !params.is_empty() {
                    bail!("--param applies to synthetic generators; '{name}' is a registry set");
                }
                load::load(&name, &opts)?
            };
            load::export(&ds, &out)?;
            if csv {
                let mut text = (1..=ds.x.ncols()).map(|j| format!("x{j}")).collect::<Vec<_>>().join(",");
                text.push_str(if ds.labels.is_some() { ",label\n" } else { "\n" });
                for (i, row) in ds.x.rows().into_iter().enumerate() {
                    let mut line = row.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join(",");
                    if let Some(l) = &ds.labels {
                        line.push_str(&format!(",{}", l[i]));
                    }
                    text.push_str(&line);
                    text.push('\n');
                }
                atomic_write(&out.join("data.csv"), text.as_bytes())?;
                println!("{name}: {}/data.csv", out.display());
            }
            println!(
                "{}: {} x {} -> {}/X.npy{}",
                name,
                ds.x.nrows(),
                ds.x.ncols(),
                out.display(),
                if ds.labels.is_some() { format!(", {}/y.npy", out.display()) } else { String::new() }
                    + &if ds.t.is_some() { format!(", {}/t.npy", out.display()) } else { String::new() }
            );
        }
    }
    Ok(())
}
