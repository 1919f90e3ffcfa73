//! `structdr store check` and `structdr store seal`: what the records of a spec's store say about
//! their own integrity ([`crate::store::Integrity`]), and checksums stamped once on records written
//! before records carried one ([`crate::store::Store::seal`]).

use crate::spec;
use crate::store::{Integrity, SpecLedger, Store, RECORDS_DIR};
use anyhow::Result;
use clap::Subcommand;
use std::path::{Path, PathBuf};

// clap reads doc comments as help text (a doc here would change `--help`): the commands' help documents these.
#[allow(missing_docs)]
#[derive(Subcommand)]
pub enum StoreCommand {
    /// Count the records of each spec's store by integrity: checksum verified, no checksum
    /// (unverified), checksum mismatch (refused, listed); exit 3 when one is refused.
    Check {
        /// The specs whose stores are read.
        #[arg(required = true)]
        specs: Vec<PathBuf>,
        /// Results root (default `results`).
        #[arg(long, default_value = "results")]
        results: PathBuf,
    },
    /// Stamp every record without a checksum with its content's checksum, once (records written
    /// before records carried one). Only the `checksum` field is added; a record whose checksum
    /// does not match, or whose file is not exactly what this version writes, is left alone.
    Seal {
        /// The specs whose stores are sealed.
        #[arg(required = true)]
        specs: Vec<PathBuf>,
        /// Results root (default `results`).
        #[arg(long, default_value = "results")]
        results: PathBuf,
        /// Only count what would be sealed.
        #[arg(long)]
        dry_run: bool,
    },
}

/// The record store of a spec under `results`, or `None` (with its would-be path) when the spec
/// has not written one yet.
fn store_of(spec_path: &Path, results: &Path) -> Result<std::result::Result<Store, PathBuf>> {
    let plan = spec::load(spec_path)?;
    SpecLedger::check_plan(&plan, results, false)?;
    let dir = plan.output_dir(results).join(RECORDS_DIR);
    if !dir.is_dir() {
        return Ok(Err(dir));
    }
    Ok(Ok(Store::open(&dir)?))
}

/// The store of `spec_path`, or a line saying it has none yet (nothing to check or seal there).
fn existing_store(spec_path: &Path, results: &Path) -> Result<Option<Store>> {
    Ok(match store_of(spec_path, results)? {
        Ok(store) => Some(store),
        Err(dir) => {
            println!("{}: no records yet ({} has not been run here)", dir.display(), spec_path.display());
            None
        }
    })
}

/// `structdr store ...`.
pub fn store(cmd: StoreCommand) -> Result<()> {
    match cmd {
        StoreCommand::Check { specs, results } => {
            let mut refused_any = false;
            for spec_path in &specs {
                let Some(store) = existing_store(spec_path, &results)? else { continue };
                let (mut verified, mut unverified, mut unreadable, mut refused) = (0, 0, 0, Vec::new());
                for (path, rec) in store.records()? {
                    match rec.map(|r| r.integrity()) {
                        None => unreadable += 1,
                        Some(Integrity::Verified) => verified += 1,
                        Some(Integrity::Unverified) => unverified += 1,
                        Some(i) => refused.push(format!("{}: {}", path.display(), i.refusal().unwrap_or_default())),
                    }
                }
                println!(
                    "{}: {} records: {verified} verified, {unverified} without a checksum (unverified), {} refused, {unreadable} unreadable",
                    store.dir().display(),
                    verified + unverified + refused.len() + unreadable,
                    refused.len()
                );
                for r in &refused {
                    println!("  refused: {r}");
                }
                refused_any |= !refused.is_empty();
            }
            if refused_any {
                std::process::exit(super::exit::DIFFERS);
            }
            Ok(())
        }
        StoreCommand::Seal { specs, results, dry_run } => {
            for spec_path in &specs {
                let Some(store) = existing_store(spec_path, &results)? else { continue };
                let c = store.seal(dry_run)?;
                println!(
                    "{}: {} {}, {} already sealed, {} refused (checksum mismatch, left alone), {} unreadable, {} not in this version's form (left alone)",
                    store.dir().display(),
                    c.sealed,
                    if dry_run { "would be sealed (dry run)" } else { "sealed" },
                    c.already,
                    c.refused.len(),
                    c.unreadable.len(),
                    c.not_canonical.len()
                );
                for p in c.refused.iter().chain(&c.unreadable).chain(&c.not_canonical) {
                    println!("  left alone: {}", p.display());
                }
            }
            Ok(())
        }
    }
}
