//! `structdr`: run experiment specs, embed data, evaluate embeddings, manage data sets.

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use ndarray::{Array1, Array2};
use std::path::{Path, PathBuf};
use structdr::{exec, spec};
use structdr_methods::{ParamMap, ParamValue};

#[derive(Parser)]
#[command(name = "structdr", version = concat!(env!("CARGO_PKG_VERSION"), "+", env!("STRUCTDR_GIT_HASH")), about = "Structure-learning dimensionality reduction: reproduce the papers' tables and figures, run methods, evaluate embeddings")]
struct Cli {
    /// Mirror replacing the canonical download hosts: a directory or a base URL (also STRUCTDR_MIRROR).
    #[arg(long, global = true)]
    mirror: Option<String>,
    /// Download cache directory (default `data/`, also STRUCTDR_DATA).
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run an experiment spec: every grid cell not yet in the cache, then tables and figures.
    Run(RunArgs),
    /// Validate a spec without running anything.
    Check { spec: PathBuf },
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
    /// List the registered methods and their parameters (from the method registry).
    Methods {
        /// Print Markdown (the source of docs/methods.md).
        #[arg(long)]
        markdown: bool,
    },
}

#[derive(Args)]
struct RunArgs {
    /// The spec file (TOML).
    spec: PathBuf,
    /// Results root (default `results`).
    #[arg(long, default_value = "results")]
    results: PathBuf,
    /// Recompute every cell, ignoring the cache.
    #[arg(long)]
    force: bool,
    /// Recompute cells whose cached record failed.
    #[arg(long)]
    retry_failed: bool,
    /// Compute at most this many missing cells, then write tables from what exists.
    #[arg(long)]
    max_cells: Option<usize>,
    /// Compute only this data set's missing cells (table label or registry name; repeatable).
    /// Tables still show every stored cell.
    #[arg(long = "dataset", value_name = "NAME")]
    only_datasets: Vec<String>,
    /// Compute only this method's missing cells (table label or method name; repeatable).
    #[arg(long = "method", value_name = "NAME")]
    only_methods: Vec<String>,
    /// Compute only part i of n of the missing cells (1-based, e.g. `--shard 3/8` in a Slurm
    /// array job): the parts split the cells by content key, so n invocations on one store cover
    /// every cell exactly once. Tables show every stored cell.
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Worker threads for grid cells (default: all cores; BLAS runs single-threaded inside).
    #[arg(long, short = 'j')]
    jobs: Option<usize>,
    /// No progress output.
    #[arg(long, short)]
    quiet: bool,
    /// Exit with status 2 when any cell of the spec failed (computed now or stored), after
    /// writing the tables: for scheduled jobs that must notice a failure. Without it, a run exits
    /// non-zero only when no cell of the spec succeeded.
    #[arg(long)]
    fail_on_error: bool,
}

#[derive(Args)]
struct EmbedArgs {
    /// Method name (see `structdr methods`).
    #[arg(long)]
    method: String,
    /// Method parameter, repeatable: --param k=10 --param dim=2.
    #[arg(long = "param", value_name = "KEY=VALUE")]
    params: Vec<String>,
    /// Input matrix, samples in rows: .npy (float64/float32/int) or a text table (.csv, .tsv, .txt: delimiter detected, optional header of names).
    #[arg(long)]
    input: PathBuf,
    /// Output embedding: .npy (float64) or comma-separated text (.csv, .tsv, .txt), by extension.
    #[arg(long)]
    out: PathBuf,
    /// Write the learned graph as an edge list CSV (i,j,weight), when the method has one.
    #[arg(long)]
    graph_out: Option<PathBuf>,
    /// Write the 0-based component index of every point (.npy int64, or .csv), when the method has them.
    #[arg(long)]
    components_out: Option<PathBuf>,
    /// Write the coordinates of the graph's vertices (.npy or .csv) when they are learned centres
    /// (DDRTree: latent centres; principal graphs: principal points in the input space).
    #[arg(long)]
    centres_out: Option<PathBuf>,
    /// Seed for randomised methods.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

#[derive(Args)]
struct SelectArgs {
    /// Feature-selection method name (one whose fit returns feature weights, e.g. `fsl`).
    #[arg(long)]
    method: String,
    /// Method parameter, repeatable: --param b=1 --param lambda=10.
    #[arg(long = "param", value_name = "KEY=VALUE")]
    params: Vec<String>,
    /// Input matrix, samples in rows: .npy (float64/float32/int) or a text table (.csv, .tsv, .txt: delimiter detected, optional header of names).
    #[arg(long)]
    input: PathBuf,
    /// Output feature weights, one per input feature: .npy (float64) or .csv.
    #[arg(long)]
    out: PathBuf,
    /// Also write the method's embedding (for fsl: X on the top-ranked features).
    #[arg(long)]
    embedding_out: Option<PathBuf>,
    /// Write the learned graph as an edge list CSV (i,j,weight), when the method has one.
    #[arg(long)]
    graph_out: Option<PathBuf>,
    /// Seed for randomised methods.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

#[derive(Subcommand)]
enum EvalCommand {
    /// 1-NN leave-one-out accuracy; prints {"loocv_1nn_accuracy": ...}.
    Loocv {
        #[arg(long)]
        input: PathBuf,
        #[arg(long)]
        labels: PathBuf,
    },
    /// k-means restarts scored by ACC and NMI (max normalisation); prints one JSON object.
    Kmeans {
        #[arg(long)]
        input: PathBuf,
        #[arg(long)]
        labels: PathBuf,
        /// Number of clusters (default: number of classes).
        #[arg(long)]
        k: Option<usize>,
        #[arg(long, default_value_t = 20)]
        restarts: usize,
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Trustworthiness, continuity (Venna & Kaski 2001) and k-NN preservation of an embedding
    /// against the data it was made from; needs no labels. Prints one JSON object.
    Neighbourhood {
        /// The embedding (N x d; .npy, .csv, .tsv, .txt).
        #[arg(long)]
        input: PathBuf,
        /// The data the embedding was made from (N x D, same rows in the same order).
        #[arg(long)]
        data: PathBuf,
        /// Neighbourhood size k (1 <= k < N / 2).
        #[arg(long, default_value_t = 10)]
        k: usize,
    },
}

#[derive(Subcommand)]
enum DatasetsCommand {
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

fn main() {
    // Rust ignores SIGPIPE, so printing into a closed pipe (`structdr history | head`) panics;
    // the default action ends the process quietly, as for any command-line tool.
    // SAFETY: setting a signal's disposition to its default before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    reexec_with_openblas_coretype();
    let cli = Cli::parse();
    if let Some(m) = &cli.mirror {
        std::env::set_var("STRUCTDR_MIRROR", m);
    }
    if let Some(d) = &cli.data_dir {
        std::env::set_var("STRUCTDR_DATA", d);
    }
    if matches!(cli.command, Command::Run(_) | Command::Embed(_) | Command::Select(_)) {
        warn_if_blas_kernels_lack_avx512();
    }
    if let Err(e) = dispatch(cli.command) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

/// An inherited `OPENBLAS_CORETYPE` is respected, but one that selects AVX2 kernels on a CPU with
/// AVX-512 halves dense linear algebra (MPME / ESL cells take 1.65x longer): say so once.
fn warn_if_blas_kernels_lack_avx512() {
    if std::env::var_os("STRUCTDR_NO_REEXEC").is_some() || !structdr_linalg::blas::cpu_has_avx512f() {
        return;
    }
    let core = structdr_linalg::blas::core_name();
    let lower = core.to_ascii_lowercase();
    if !["skylakex", "cooperlake", "sapphirerapids"].iter().any(|k| lower.contains(k)) {
        eprintln!(
            "warning: OpenBLAS runs {core} kernels on a CPU with AVX-512 (OPENBLAS_CORETYPE={}); \
             `OPENBLAS_CORETYPE=SKYLAKEX` is about 1.65x faster on dense linear algebra",
            std::env::var("OPENBLAS_CORETYPE").unwrap_or_default()
        );
    }
}

/// Debian's OpenBLAS 0.3.21 does not recognise Zen 5 and picks AVX2 kernels; on a CPU with
/// AVX-512 `OPENBLAS_CORETYPE=SKYLAKEX` is 1.65x faster (STACK.md P2). The variable is read when
/// the library loads, so the binary re-executes itself once with it set. `STRUCTDR_NO_REEXEC=1`
/// or an explicit `OPENBLAS_CORETYPE` disables this.
fn reexec_with_openblas_coretype() {
    use std::os::unix::process::CommandExt;
    if std::env::var_os("OPENBLAS_CORETYPE").is_some() || std::env::var_os("STRUCTDR_NO_REEXEC").is_some() {
        return;
    }
    if !structdr_linalg::blas::cpu_has_avx512f() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else { return };
    let err = std::process::Command::new(exe).args(std::env::args_os().skip(1)).env("OPENBLAS_CORETYPE", "SKYLAKEX").exec();
    eprintln!("warning: could not re-execute with OPENBLAS_CORETYPE=SKYLAKEX ({err}); continuing");
}

fn dispatch(cmd: Command) -> Result<()> {
    match cmd {
        Command::Run(a) => run(a),
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
            let page = structdr::html::write_report(&specs, &results, &docs, &out)?;
            println!("report: {} ({} specs)", page.display(), specs.len());
            Ok(())
        }
        Command::Nightly { suite, history, accept, fail_on_error, commits, quiet } => {
            let opts = structdr::nightly::NightlyOptions { history_dir: history, accept, fail_on_error, commits, quiet };
            match structdr::nightly::nightly(&suite, &opts)? {
                structdr::nightly::Outcome::Clean => Ok(()),
                structdr::nightly::Outcome::Failures => std::process::exit(2),
                structdr::nightly::Outcome::Regression => std::process::exit(3),
            }
        }
        Command::Slurm { spec, tasks, partition, time, cpus_per_task, results, submit } => {
            let opts = structdr::slurm::SlurmOptions { tasks, partition, time, cpus_per_task, results, submit };
            let scripts = structdr::slurm::write_scripts(&spec, &opts)?;
            println!("slurm: {} and {} (logs: {})", scripts.array.display(), scripts.tables.display(), scripts.logs.display());
            if submit {
                let (array, tables) = structdr::slurm::submit(&scripts)?;
                println!("submitted: array job {array} ({tasks} tasks), tables job {tables} (after the array)");
            } else {
                println!("submit with: structdr slurm {} --tasks {tasks} --submit   (or sbatch the array, then the tables job with --dependency=afterany:<array id>)", spec.display());
            }
            Ok(())
        }
        Command::History { history, suite, summary_only } => {
            let suite = if suite.is_file() { Some(structdr::nightly::Suite::load(&suite)?) } else { None };
            print!("{}", structdr::history::summary(&history)?);
            if !summary_only {
                let page = structdr::history::write_page(&history, suite.as_ref())?;
                println!("history: {}", page.display());
            }
            Ok(())
        }
        Command::Check { spec } => {
            let plan = spec::load(&spec)?;
            spec::check_environment(&plan)?;
            let cells: usize = plan.methods.iter().map(|m| m.cells.len()).sum::<usize>() * plan.spec.datasets.len();
            println!("{}: ok ({} data sets, {} methods, {} cells)", spec.display(), plan.spec.datasets.len(), plan.methods.len(), cells);
            Ok(())
        }
        Command::Prune { spec, results, dry_run } => {
            let plan = spec::load(&spec)?;
            let dir = plan.output_dir(&results);
            let store = structdr::store::Store::open_in(&dir).with_context(|| format!("cannot open the record store in {}", dir.display()))?;
            let counts = store
                .prune(
                    |m| {
                        structdr_methods::lookup(m)
                            .ok()
                            .map(|i| i.version)
                            .or_else(|| plan.methods.iter().find(|x| x.name == m && x.external.is_some()).map(|x| x.version))
                    },
                    dry_run,
                )
                .with_context(|| format!("pruning {}", store.dir().display()))?;
            let (mut kept, mut removed) = (0, 0);
            for (method, (k, r)) in &counts {
                let current = structdr_methods::lookup(method).map(|i| format!("version {}", i.version)).unwrap_or_else(|_| "not registered".into());
                println!("{method} ({current}): {k} kept, {r} {}", if dry_run { "to remove" } else { "removed" });
                kept += k;
                removed += r;
            }
            println!("{}: {kept} records kept, {removed} {}", store.dir().display(), if dry_run { "would be removed (dry run)" } else { "removed" });
            Ok(())
        }
        Command::Embed(a) => embed(a),
        Command::Select(a) => select(a),
        Command::Eval(e) => eval(e),
        Command::Datasets(d) => datasets(d),
        Command::Methods { markdown } => {
            if markdown {
                print!("{}", structdr_methods::registry::markdown());
            } else {
                for m in structdr_methods::registry() {
                    println!("{:<10} {}", m.name, m.summary);
                    for p in &m.params {
                        println!("    {:<14} {:<34} default {:<10} {}", p.name, p.kind.to_string(), p.default.to_string(), p.doc);
                    }
                }
            }
            Ok(())
        }
    }
}

fn run(a: RunArgs) -> Result<()> {
    // The pool first: loading a spec can already run parallel code (the teapot generator
    // ray-traces its frames with rayon), which would fix the global pool at every core.
    if let Some(j) = a.jobs {
        rayon::ThreadPoolBuilder::new().num_threads(j.max(1)).build_global().context("configuring worker threads")?;
    }
    let plan = spec::load(&a.spec)?;
    // A misspelt filter would silently compute nothing: every name must be in the spec.
    let data_names: Vec<&str> = (0..plan.spec.datasets.len()).flat_map(|i| plan.dataset_names(i)).collect();
    let method_names: Vec<&str> = (0..plan.methods.len()).flat_map(|i| plan.method_names(i)).collect();
    for (flag, given, known) in [("--dataset", &a.only_datasets, &data_names), ("--method", &a.only_methods, &method_names)] {
        if let Some(bad) = given.iter().find(|g| !known.contains(&g.as_str())) {
            bail!("{flag} {bad}: not in {} (known: {})", a.spec.display(), known.join(", "));
        }
    }
    let shard = a.shard.as_deref().map(structdr::plan::Shard::parse).transpose().map_err(|e| anyhow::anyhow!(e))?;
    let opts = exec::RunOptions {
        results_root: a.results,
        force: a.force,
        retry_failed: a.retry_failed,
        max_cells: a.max_cells,
        only_datasets: a.only_datasets,
        only_methods: a.only_methods,
        shard,
        quiet: a.quiet,
    };
    let t0 = std::time::Instant::now();
    let out = structdr::run_spec(&plan, &opts)?;
    let s = &out.summary;
    println!(
        "cells: {} total, {} computed, {} cached, {} failed{}{}",
        s.total,
        s.computed,
        s.cached,
        s.failed,
        if s.degenerate > 0 { format!(", {} degenerate", s.degenerate) } else { String::new() },
        if s.skipped > 0 { format!(", {} not run (--max-cells, --dataset, --method, --shard)", s.skipped) } else { String::new() }
    );
    if s.busy > 0 {
        println!("cells being computed by another run on this store: {} (not counted above; run again later)", s.busy);
    }
    if let Some(t) = &out.tables {
        println!("tables: {} {} {}", t.md.display(), t.csv.display(), t.tex.display());
    }
    for f in &out.figures {
        println!("figure: {}", f.display());
    }
    for (mi, m) in plan.methods.iter().enumerate() {
        if let Some((v, n)) = structdr::report::mean_abs_diff(&plan, &out.prepared, &out.best, mi) {
            println!("mean |ours - paper| {:<8} {v:.4} over {n} data sets", m.label);
        }
    }
    // Every failed cell with its reason: nothing fails silently.
    let failed = structdr::report::cells_with_status(&plan, &out.prepared, &out.results, structdr::store::Status::Failed);
    let degenerate = structdr::report::cells_with_status(&plan, &out.prepared, &out.results, structdr::store::Status::Degenerate);
    for (what, list) in [("failed", &failed), ("degenerate", &degenerate)] {
        if !list.is_empty() {
            println!("{what} cells ({}):", list.len());
            for f in list {
                println!("  {f}");
            }
        }
    }
    println!("elapsed: {:.1} s", t0.elapsed().as_secs_f64());
    let ok = out.results.iter().filter(|(_, r)| r.as_ref().is_some_and(|r| r.status == structdr::store::Status::Ok)).count();
    if !out.results.is_empty() && ok == 0 && s.skipped == 0 {
        eprintln!("error: no cell of {} succeeded ({} failed)", a.spec.display(), failed.len());
        std::process::exit(2);
    }
    if a.fail_on_error && !failed.is_empty() {
        eprintln!("error: {} failed cell(s) in {} (--fail-on-error)", failed.len(), a.spec.display());
        std::process::exit(2);
    }
    Ok(())
}

fn parse_params(raw: &[String]) -> Result<ParamMap> {
    let mut map = ParamMap::new();
    for p in raw {
        let Some((k, v)) = p.split_once('=') else { bail!("--param expects KEY=VALUE, got '{p}'") };
        map.insert(k.trim().to_string(), ParamValue::parse_cli(v));
    }
    Ok(map)
}

/// The table formats the CLI reads and writes, by extension.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum TableFormat {
    Npy,
    Text,
}

fn table_format(path: &Path, what: &str) -> Result<TableFormat> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    match ext.as_str() {
        "npy" => Ok(TableFormat::Npy),
        "csv" | "tsv" | "txt" => Ok(TableFormat::Text),
        _ => bail!("{}: unsupported {what} format '.{ext}' (use .npy, .csv, .tsv or .txt)", path.display()),
    }
}

fn read_matrix(path: &Path) -> Result<Array2<f64>> {
    table_format(path, "input")?;
    Ok(structdr_datasets::file::read_matrix(path)?)
}

/// Writes a matrix in the format its extension names (`.npy`, or comma-separated text for
/// `.csv` / `.tsv` / `.txt`).
fn write_matrix(path: &Path, x: &Array2<f64>) -> Result<()> {
    match table_format(path, "output")? {
        TableFormat::Npy => ndarray_npy::write_npy(path, x).with_context(|| format!("writing {}", path.display())),
        TableFormat::Text => Ok(structdr::atomic_write(path, structdr_datasets::parse::csv::write(&x.view()).as_bytes())?),
    }
}

/// Writes a vector as a one-column table ([`write_matrix`]'s formats).
fn write_vector<T: ndarray_npy::WritableElement + std::fmt::Debug>(path: &Path, v: &Array1<T>) -> Result<()> {
    match table_format(path, "output")? {
        TableFormat::Npy => ndarray_npy::write_npy(path, v).with_context(|| format!("writing {}", path.display())),
        TableFormat::Text => Ok(structdr::atomic_write(path, v.iter().map(|x| format!("{x:?}\n")).collect::<String>().as_bytes())?),
    }
}

fn embed(a: EmbedArgs) -> Result<()> {
    let info = structdr_methods::lookup(&a.method)?;
    if info.output == structdr_methods::api::OutputKind::FeatureScores {
        bail!("method '{}' returns feature scores, not an embedding; use `structdr select`", a.method);
    }
    // Output formats are checked before the fit, so a long fit never ends in a refusal.
    for p in [Some(&a.out), a.centres_out.as_ref(), a.components_out.as_ref()].into_iter().flatten() {
        table_format(p, "output")?;
    }
    let (_, _, fitted) = fit_input_file(info, &a.method, &a.params, &a.input, &a.out, a.seed)?;
    let Some(embedding) = fitted.embedding() else { bail!("method '{}' returns {}, not an embedding; use `structdr select`", a.method, fitted.kind()) };
    write_matrix(&a.out, embedding)?;
    if let Some(g) = &a.graph_out {
        let Some(graph) = fitted.drawn_graph() else { bail!("method '{}' learns no graph; drop --graph-out", a.method) };
        let mut s = String::from("i,j,weight\n");
        for (i, j, w) in &graph.edges {
            s.push_str(&format!("{i},{j},{w:?}\n"));
        }
        structdr::atomic_write(g, s.as_bytes())?;
    }
    if let Some(c) = &a.centres_out {
        let Some(centres) = fitted.centres() else { bail!("method '{}' learns no centres; drop --centres-out", a.method) };
        write_matrix(c, centres)?;
    }
    if let Some(c) = &a.components_out {
        let Some(comp) = &fitted.components else { bail!("method '{}' returns no components; drop --components-out", a.method) };
        let arr: Array1<i64> = comp.iter().map(|&c| c as i64).collect();
        write_vector(c, &arr)?;
    }
    Ok(())
}

/// `structdr embed` / `select`: reads the input, resolves `dim = "energy"` on it (95% PCA energy,
/// the tables' rule), builds the method from `params`, fits, and reports the fit on stderr.
fn fit_input_file(
    info: &structdr_methods::MethodInfo,
    name: &str,
    params: &[String],
    input: &Path,
    out: &Path,
    seed: u64,
) -> Result<(Array2<f64>, ParamMap, structdr_methods::Fitted)> {
    let mut given = parse_params(params)?;
    let x = read_matrix(input)?;
    // dim = "energy": the smallest d whose top-d PCA eigenvalues hold 95% of the variance of the
    // input (the tables' rule), resolved here as the runner does per data set.
    if given.get("dim") == Some(&ParamValue::Str(structdr_methods::api::DIM_ENERGY.into())) {
        let pca = structdr_linalg::Pca::fit(x.view()).context("dim = energy: PCA of the input")?;
        let d = pca.energy_dim(0.95, structdr_linalg::EnergyRule::Ge);
        eprintln!("dim = energy: d = {d} (95% PCA energy of the input)");
        given.insert("dim".into(), ParamValue::Int(d as i64));
    }
    let (resolved, method) = info.instantiate(&given)?;
    eprintln!(
        "{}: {} x {} -> {} with {}",
        name,
        x.nrows(),
        x.ncols(),
        out.display(),
        resolved.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
    );
    let t0 = std::time::Instant::now();
    let fitted = method.fit(x.view(), seed)?;
    eprintln!("fitted in {:.3} s ({} iterations, {})", t0.elapsed().as_secs_f64(), fitted.trace.iterations, fitted.trace.termination);
    for n in &fitted.notes {
        eprintln!("note: {n}");
    }
    Ok((x, resolved, fitted))
}

fn write_graph(path: &Path, graph: &structdr_methods::Graph) -> Result<()> {
    let mut s = String::from("i,j,weight\n");
    for (i, j, w) in &graph.edges {
        s.push_str(&format!("{i},{j},{w:?}\n"));
    }
    structdr::atomic_write(path, s.as_bytes())?;
    Ok(())
}

fn select(a: SelectArgs) -> Result<()> {
    let info = structdr_methods::lookup(&a.method)?;
    if info.output != structdr_methods::api::OutputKind::FeatureScores {
        bail!("method '{}' returns {}, not feature weights; use `structdr embed`", a.method, info.output);
    }
    for p in [Some(&a.out), a.embedding_out.as_ref()].into_iter().flatten() {
        table_format(p, "output")?;
    }
    let (x, resolved, fitted) = fit_input_file(info, &a.method, &a.params, &a.input, &a.out, a.seed)?;
    let Some(scores) = fitted.feature_scores() else { bail!("method '{}' returns {}, not feature weights; use `structdr embed`", a.method, fitted.kind()) };
    let weights = &scores.weights;
    if weights.len() != x.ncols() {
        bail!("method '{}' returned {} feature weights for {} features", a.method, weights.len(), x.ncols());
    }
    write_vector(&a.out, weights)?;
    if let Some(e) = &a.embedding_out {
        // X on the top n_selected ranked features (the evaluation-stage parameter; 0 = the support)
        let m = match resolved.get("n_selected") {
            Some(ParamValue::Int(m)) if *m > 0 => *m as usize,
            _ => weights.iter().filter(|&&w| w > 0.0).count(),
        };
        let selected = scores.select(x.view(), m)?;
        write_matrix(e, &selected)?;
    }
    if let Some(g) = &a.graph_out {
        let Some(graph) = &fitted.graph else { bail!("method '{}' learns no graph; drop --graph-out", a.method) };
        write_graph(g, graph)?;
    }
    Ok(())
}

/// Labels from `.npy` (integers) or a one-column text table (`.csv` / `.tsv` / `.txt`, an optional
/// header, integer values).
fn read_labels(path: &Path) -> Result<Vec<i64>> {
    table_format(path, "labels")?;
    Ok(structdr_datasets::file::read_labels(path)?)
}

fn eval(e: EvalCommand) -> Result<()> {
    match e {
        EvalCommand::Loocv { input, labels } => {
            let y = read_matrix(&input)?;
            let l = read_labels(&labels)?;
            let acc = structdr_eval::loocv_1nn_accuracy(y.view(), &l)?;
            println!("{}", serde_json::json!({ "loocv_1nn_accuracy": acc }));
        }
        EvalCommand::Kmeans { input, labels, k, restarts, seed } => {
            let y = read_matrix(&input)?;
            let l = read_labels(&labels)?;
            let k = k.unwrap_or_else(|| structdr_eval::n_classes(&l));
            let r = structdr_eval::kmeans_protocol(y.view(), &l, k, restarts, seed)?;
            println!(
                "{}",
                serde_json::json!({
                    "acc_mean": r.acc_mean, "acc_std": r.acc_std, "nmi_mean": r.nmi_mean, "nmi_std": r.nmi_std,
                    "acc_best_sse": r.acc_best_sse, "nmi_best_sse": r.nmi_best_sse, "k": k, "restarts": restarts, "seed": seed
                })
            );
        }
        EvalCommand::Neighbourhood { input, data, k } => {
            let y = read_matrix(&input)?;
            let x = read_matrix(&data)?;
            let s = structdr_eval::neighbourhood_preservation(x.view(), y.view(), k)?;
            println!(
                "{}",
                serde_json::json!({ "trustworthiness": s.trustworthiness, "continuity": s.continuity, "knn_preservation": s.knn_preservation, "k": k })
            );
        }
    }
    Ok(())
}

fn datasets(d: DatasetsCommand) -> Result<()> {
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
                bail!("{bad} cached data sets failed verification");
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
                structdr::atomic_write(&out.join("data.csv"), text.as_bytes())?;
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
