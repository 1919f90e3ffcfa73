//! The `structdr` command line: its commands and their bodies, as library code (the binary,
//! `main.rs`, only sets up the process and calls [`dispatch`]). One file per group of commands:
//! [`run`] (run, check, prune), [`verify`] (recompute stored cells and compare), [`store`]
//! (records' checksums: check, seal), [`fit`] (embed, select, eval on files) with [`labels`]
//! (label columns and files), [`model`] (saved models, transform), [`methods`] (the registry),
//! [`datasets`]; [`tables`] reads and writes their files, [`exit`] holds the exit statuses. The report, nightly, Slurm and history
//! commands are a few lines each, here.

pub mod datasets;
pub mod exit;
pub mod fit;
pub mod labels;
pub mod methods;
pub mod model;
pub mod run;
pub mod store;
pub mod tables;
pub mod verify;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use datasets::DatasetsCommand;
use fit::{EmbedArgs, EvalCommand, SelectArgs};
use methods::MethodsArgs;
use model::TransformArgs;
use run::RunArgs;
use std::path::PathBuf;
use store::StoreCommand;
use verify::VerifyArgs;

// clap reads doc comments as help text (a doc here would change `--help`): the commands' help documents these.
#[allow(missing_docs)]
#[derive(Parser)]
#[command(
    name = "structdr",
    version = concat!(env!("CARGO_PKG_VERSION"), "+", env!("STRUCTDR_GIT_HASH")),
    about = "Structure-learning dimensionality reduction: reproduce the papers' tables and figures, run methods, evaluate embeddings",
    after_help = exit::HELP
)]
pub struct Cli {
    /// Mirror replacing the canonical download hosts: a directory or a base URL (also STRUCTDR_MIRROR).
    #[arg(long, global = true)]
    pub mirror: Option<String>,
    /// Download cache directory (default `data/`, also STRUCTDR_DATA).
    #[arg(long, global = true)]
    pub data_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

// clap reads doc comments as help text (a doc here would change `--help`): the commands' help documents these.
#[allow(missing_docs)]
#[derive(Subcommand)]
pub enum Command {
    /// Run an experiment spec: every grid cell not yet in the cache, then tables and figures.
    Run(RunArgs),
    /// Validate a spec without running anything.
    Check { spec: PathBuf },
    /// Recompute stored cells of a spec (a seeded sample spread over the methods, or all) into a
    /// scratch store and compare each with its record, bit for bit; exit 3 when one differs.
    Verify(VerifyArgs),
    /// The records' checksums: count them by integrity, or stamp records written before records
    /// carried one.
    #[command(subcommand)]
    Store(StoreCommand),
    /// Run one method on your data (samples in rows) and write the embedding.
    Embed(EmbedArgs),
    /// Run a feature-selection method (e.g. fsl) and write its feature weights, one per feature.
    Select(SelectArgs),
    /// Evaluate an embedding.
    #[command(subcommand)]
    Eval(EvalCommand),
    /// List, fetch, verify and export data sets.
    #[command(subcommand)]
    Datasets(DatasetsCommand),
    /// Remove the records of a spec's store made by another version of their method (or by a
    /// method that is no longer registered). Records of the current versions are kept.
    Prune {
        /// The spec whose store (`<results>/<id>/records`) is pruned.
        spec: PathBuf,
        /// Results root (default `results`).
        #[arg(long, default_value = "results")]
        results: PathBuf,
        /// Only count what would be removed.
        #[arg(long)]
        dry_run: bool,
    },
    /// Write the static HTML report (tables beside the papers' values, scorecards, figures,
    /// provenance) from what runs wrote: no computation.
    Report {
        /// The specs to include (default: every `experiments/*.toml`, in name order).
        specs: Vec<PathBuf>,
        /// Results root (default `results`).
        #[arg(long, default_value = "results")]
        results: PathBuf,
        /// Output directory (default `<results>/report`).
        #[arg(long)]
        out: Option<PathBuf>,
        /// The project's docs directory (parity notes are linked from the gaps).
        #[arg(long, default_value = "docs")]
        docs: PathBuf,
    },
    /// Run the nightly suite: quality cells and speed cases, always recomputed into scratch
    /// stores, appended to this machine's history; exit 3 on a regression (docs/nightly.md).
    Nightly {
        /// The suite file (e.g. experiments/nightly/suite.toml).
        suite: PathBuf,
        /// History directory: one JSON-lines file per machine fingerprint.
        #[arg(long, default_value = "results/history")]
        history: PathBuf,
        /// Accept this run as the baseline for later runs even when it has regressions (an
        /// intended change).
        #[arg(long)]
        accept: bool,
        /// Exit with status 2 when a cell failed or a spec did not run (after appending).
        #[arg(long)]
        fail_on_error: bool,
        /// Backfill: run the suite on every commit of A..B (oldest first), each built in its own
        /// git worktree (build cache: target/backfill), with this checkout's suite and data.
        #[arg(long, value_name = "A..B")]
        commits: Option<String>,
        /// No progress lines.
        #[arg(long, short)]
        quiet: bool,
        /// Pair the speed cases with this binary instead of building the last accepted run's
        /// commit (tests and debugging).
        #[arg(long, hide = true)]
        baseline_binary: Option<PathBuf>,
    },
    /// Write (and with --submit, submit) a Slurm job array for a spec: task i runs
    /// `structdr run SPEC --shard i/N`, and a dependent job writes the tables and figures
    /// (docs/cluster.md).
    Slurm {
        /// The spec file (TOML).
        spec: PathBuf,
        /// Array tasks (shards of the cells).
        #[arg(long)]
        tasks: usize,
        /// Partition to submit to.
        #[arg(long)]
        partition: Option<String>,
        /// Time limit of each array task (e.g. 2:00:00).
        #[arg(long)]
        time: Option<String>,
        /// CPUs per task; each task runs that many cells at once.
        #[arg(long, default_value_t = 1)]
        cpus_per_task: usize,
        /// Results root (default `results`), shared by every task (a shared file system).
        #[arg(long, default_value = "results")]
        results: PathBuf,
        /// Submit the scripts with sbatch (the tables job after the array).
        #[arg(long)]
        submit: bool,
    },
    /// Summarise the nightly history, draw its trend figures and write its HTML page.
    History {
        /// History directory (one JSON-lines file per machine).
        #[arg(long, default_value = "results/history")]
        history: PathBuf,
        /// The suite file (its alarm settings and commit link template); optional.
        #[arg(long, default_value = "experiments/nightly/suite.toml")]
        suite: PathBuf,
        /// Do not write figures and the page, only print the summary.
        #[arg(long)]
        summary_only: bool,
    },
    /// List the registered methods (version, output, randomised, out-of-sample transform), or show
    /// one with all its parameters.
    Methods(MethodsArgs),
    /// Apply a model saved by `embed --save-model` (an out-of-sample map: identity, pca, kpca,
    /// rproj) to new samples.
    Transform(TransformArgs),
}

/// Runs one command.
pub fn dispatch(cmd: Command) -> Result<()> {
    match cmd {
        Command::Run(a) => run::run(a),
        Command::Report { specs, results, out, docs } => {
            let specs = if specs.is_empty() {
                let mut v: Vec<PathBuf> = std::fs::read_dir("experiments")
                    .context("reading experiments/ (name the specs, or run from the project root)")?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|e| e == "toml"))
                    .collect();
                v.sort();
                v
            } else {
                specs
            };
            let out = out.unwrap_or_else(|| results.join("report"));
            let page = crate::html::write_report(&specs, &results, &docs, &out)?;
            println!("report: {} ({} specs)", page.display(), specs.len());
            Ok(())
        }
        Command::Nightly { suite, history, accept, fail_on_error, commits, quiet, baseline_binary } => {
            let opts = crate::nightly::NightlyOptions { history_dir: history, accept, fail_on_error, commits, quiet, baseline_binary };
            match crate::nightly::nightly(&suite, &opts)? {
                crate::nightly::Outcome::Clean => Ok(()),
                crate::nightly::Outcome::Failures => std::process::exit(exit::FAILED_CELLS),
                crate::nightly::Outcome::Regression => std::process::exit(exit::DIFFERS),
            }
        }
        Command::Slurm { spec, tasks, partition, time, cpus_per_task, results, submit } => {
            let opts = crate::slurm::SlurmOptions { tasks, partition, time, cpus_per_task, results, submit };
            let scripts = crate::slurm::write_scripts(&spec, &opts)?;
            println!("slurm: {} and {} (logs: {})", scripts.array.display(), scripts.tables.display(), scripts.logs.display());
            if submit {
                let (array, tables) = crate::slurm::submit(&scripts)?;
                println!("submitted: array job {array} ({tasks} tasks), tables job {tables} (after the array)");
            } else {
                println!("submit with: structdr slurm {} --tasks {tasks} --submit   (or sbatch the array, then the tables job with --dependency=afterany:<array id>)", spec.display());
            }
            Ok(())
        }
        Command::History { history, suite, summary_only } => {
            let suite = if suite.is_file() { Some(crate::nightly::Suite::load(&suite)?) } else { None };
            print!("{}", crate::history::summary(&history)?);
            if !summary_only {
                let page = crate::history::write_page(&history, suite.as_ref())?;
                println!("history: {}", page.display());
            }
            Ok(())
        }
        Command::Check { spec } => run::check(&spec),
        Command::Verify(a) => verify::verify(a),
        Command::Store(c) => store::store(c),
        Command::Prune { spec, results, dry_run } => run::prune(&spec, &results, dry_run),
        Command::Embed(a) => fit::embed(a),
        Command::Select(a) => fit::select(a),
        Command::Eval(e) => fit::eval(e),
        Command::Datasets(d) => datasets::datasets(d),
        Command::Methods(a) => methods::methods(a),
        Command::Transform(a) => model::transform(a),
    }
}
