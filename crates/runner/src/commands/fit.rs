//! `structdr embed`, `select` and `eval`: one method or metric on the researcher's own files
//! (`.npy` or text tables), outside any spec. `dim = "energy"` resolves by the tables' rule
//! ([`crate::data::energy_dim`] under the default 95%), feature selections by the tables'
//! `n_selected` rule and graphs as the tables' edge lists ([`crate::outputs`]).

use super::exit::data_error;
use super::labels::{read_input, write_labels_beside, Input, LabelArgs};
use super::tables::{read_labels, read_matrix, table_format, write_matrix, write_vector};
use crate::data::energy_dim;
use crate::files::atomic_write;
use crate::outputs::{edge_list_csv, selected_features};
use crate::spec::DimRule;
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use ndarray::{Array1, Array2};
use std::path::{Path, PathBuf};
use structdr_methods::{ParamMap, ParamValue};

// clap reads doc comments as help text (a doc here would change `--help`): the commands' help documents these.
#[allow(missing_docs)]
#[derive(Args)]
pub struct EmbedArgs {
    /// Method name (see `structdr methods`).
    #[arg(long)]
    pub method: String,
    /// Method parameter, repeatable: --param k=10 --param dim=2.
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// Input matrix, samples in rows: .npy (float64/float32/int) or a text table (.csv, .tsv, .txt: delimiter detected, optional header of names).
    #[arg(long)]
    pub input: PathBuf,
    /// Output embedding: .npy (float64) or comma-separated text (.csv, .tsv, .txt), by extension.
    #[arg(long)]
    pub out: PathBuf,
    /// Write the learned graph as an edge list CSV (i,j,weight), when the method has one.
    #[arg(long)]
    pub graph_out: Option<PathBuf>,
    /// Write the 0-based component index of every point (.npy int64, or .csv), when the method has them.
    #[arg(long)]
    pub components_out: Option<PathBuf>,
    /// Write the coordinates of the graph's vertices (.npy or .csv) when they are learned centres
    /// (DDRTree: latent centres; principal graphs: principal points in the input space).
    #[arg(long)]
    pub centres_out: Option<PathBuf>,
    /// Save the fitted out-of-sample map as a model file (JSON), for `structdr transform`; methods
    /// with one: identity, kpca, pca, rproj.
    #[arg(long, value_name = "FILE")]
    pub save_model: Option<PathBuf>,
    /// Seed for randomised methods.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// BLAS threads for the fit. The default, 1, is the thread layout of `structdr run`: the fit
    /// reproduces a table cell's record bit for bit, and nothing spins beside rayon's threads. More
    /// threads speed up the dense algebra of one large fit (ESL, MPME, GPLVM at N in the
    /// thousands) and change the last bits, which a non-convex fit can carry to another optimum.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub blas_threads: u16,
    #[command(flatten)]
    pub labels: LabelArgs,
}

// clap reads doc comments as help text (a doc here would change `--help`): the commands' help documents these.
#[allow(missing_docs)]
#[derive(Args)]
pub struct SelectArgs {
    /// Feature-selection method name (one whose fit returns feature weights, e.g. `fsl`).
    #[arg(long)]
    pub method: String,
    /// Method parameter, repeatable: --param b=1 --param lambda=10.
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// Input matrix, samples in rows: .npy (float64/float32/int) or a text table (.csv, .tsv, .txt: delimiter detected, optional header of names).
    #[arg(long)]
    pub input: PathBuf,
    /// Output feature weights, one per input feature: .npy (float64) or .csv.
    #[arg(long)]
    pub out: PathBuf,
    /// Also write the method's embedding (for fsl: X on the top-ranked features).
    #[arg(long)]
    pub embedding_out: Option<PathBuf>,
    /// Write the learned graph as an edge list CSV (i,j,weight), when the method has one.
    #[arg(long)]
    pub graph_out: Option<PathBuf>,
    /// Seed for randomised methods.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// BLAS threads for the fit. The default, 1, is the thread layout of `structdr run`: the fit
    /// reproduces a table cell's record bit for bit, and nothing spins beside rayon's threads. More
    /// threads speed up the dense algebra of one large fit (ESL, MPME, GPLVM at N in the
    /// thousands) and change the last bits, which a non-convex fit can carry to another optimum.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub blas_threads: u16,
    #[command(flatten)]
    pub labels: LabelArgs,
}

// clap reads doc comments as help text (a doc here would change `--help`): the commands' help documents these.
#[allow(missing_docs)]
#[derive(Subcommand)]
pub enum EvalCommand {
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
        /// Stop a restart once its centres move less than this (absolute, in the embedding's
        /// units; the runner's default 1e-4). It must be smaller than the embedding's extent.
        #[arg(long, default_value_t = 1e-4)]
        tolerance: f64,
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

fn parse_params(raw: &[String]) -> Result<ParamMap> {
    let mut map = ParamMap::new();
    for p in raw {
        let Some((k, v)) = p.split_once('=') else { bail!("--param expects KEY=VALUE, got '{p}'") };
        map.insert(k.trim().to_string(), ParamValue::parse_cli(v));
    }
    Ok(map)
}

/// `structdr embed`.
pub fn embed(a: EmbedArgs) -> Result<()> {
    let info = structdr_methods::lookup(&a.method)?;
    if info.output == structdr_methods::api::OutputKind::FeatureScores {
        bail!("method '{}' returns feature scores, not an embedding; use `structdr select`", a.method);
    }
    // Output formats are checked before the fit, so a long fit never ends in a refusal.
    for p in [Some(&a.out), a.centres_out.as_ref(), a.components_out.as_ref()].into_iter().flatten() {
        table_format(p, "output")?;
    }
    if a.save_model.is_some() {
        super::model::check_inductive(info)?;
    }
    let input = read_input(&a.input, &a.labels)?;
    let (resolved, fitted) = fit_input(info, &a.method, &a.params, &input, &a.out, a.seed, a.blas_threads.into())?;
    let Some(embedding) = fitted.embedding() else { bail!("method '{}' returns {}, not an embedding; use `structdr select`", a.method, fitted.kind()) };
    write_matrix(&a.out, embedding)?;
    write_labels_beside(&a.out, &input)?;
    if let Some(m) = &a.save_model {
        super::model::save(m, info, &resolved, a.seed, &fitted)?;
    }
    if let Some(g) = &a.graph_out {
        let Some(graph) = fitted.drawn_graph() else { bail!("method '{}' learns no graph; drop --graph-out", a.method) };
        atomic_write(g, edge_list_csv(&graph).as_bytes())?;
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

/// `structdr embed` / `select`: resolves `dim = "energy"` on the input (95% PCA energy, the
/// tables' rule), builds the method from `params`, fits (with the labels, when there are any), and
/// reports the fit on stderr. The fit runs with `blas_threads` BLAS threads (the runner's 1 by
/// default; the previous count is restored afterwards).
fn fit_input(
    info: &structdr_methods::MethodInfo,
    name: &str,
    params: &[String],
    input: &Input,
    out: &Path,
    seed: u64,
    blas_threads: usize,
) -> Result<(ParamMap, structdr_methods::Fitted)> {
    let mut given = parse_params(params)?;
    let x = &input.x;
    // dim = "energy": the smallest d whose top-d PCA eigenvalues hold 95% of the variance of the
    // input (the tables' rule), resolved here as the runner does per data set.
    if given.get("dim") == Some(&ParamValue::Str(structdr_methods::api::DIM_ENERGY.into())) {
        let d = energy_dim(x.view(), &DimRule::default()).context("dim = energy: PCA of the input")?;
        eprintln!("dim = energy: d = {d} (95% PCA energy of the input)");
        given.insert("dim".into(), ParamValue::Int(d as i64));
    }
    let (resolved, method) = info.instantiate(&given)?;
    eprintln!(
        "{}: {} x {} -> {} with {}{}",
        name,
        x.nrows(),
        x.ncols(),
        out.display(),
        resolved.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" "),
        if blas_threads == 1 { String::new() } else { format!(" ({blas_threads} BLAS threads)") }
    );
    let t0 = std::time::Instant::now();
    let mut fit_input = structdr_methods::api::FitInput::new(x.view(), seed);
    if let Some(l) = &input.labels {
        fit_input = fit_input.with_labels(l);
    }
    let fitted = structdr_linalg::blas::with_threads(blas_threads, || method.fit_with(&fit_input))?;
    eprintln!("fitted in {:.3} s ({} iterations, {})", t0.elapsed().as_secs_f64(), fitted.trace.iterations, fitted.trace.termination);
    for n in &fitted.notes {
        eprintln!("note: {n}");
    }
    Ok((resolved, fitted))
}

/// `structdr select`.
pub fn select(a: SelectArgs) -> Result<()> {
    let info = structdr_methods::lookup(&a.method)?;
    if info.output != structdr_methods::api::OutputKind::FeatureScores {
        bail!("method '{}' returns {}, not feature weights; use `structdr embed`", a.method, info.output);
    }
    for p in [Some(&a.out), a.embedding_out.as_ref()].into_iter().flatten() {
        table_format(p, "output")?;
    }
    let input = read_input(&a.input, &a.labels)?;
    let (resolved, fitted) = fit_input(info, &a.method, &a.params, &input, &a.out, a.seed, a.blas_threads.into())?;
    let x = &input.x;
    let Some(scores) = fitted.feature_scores() else { bail!("method '{}' returns {}, not feature weights; use `structdr embed`", a.method, fitted.kind()) };
    let weights = &scores.weights;
    if weights.len() != x.ncols() {
        bail!("method '{}' returned {} feature weights for {} features", a.method, weights.len(), x.ncols());
    }
    write_vector(&a.out, weights)?;
    write_labels_beside(&a.out, &input)?;
    if let Some(e) = &a.embedding_out {
        // X on the top n_selected ranked features (the evaluation-stage parameter; 0 = the support)
        let selected = selected_features(scores, &resolved, x.view())?;
        write_matrix(e, &selected)?;
    }
    if let Some(g) = &a.graph_out {
        let Some(graph) = &fitted.graph else { bail!("method '{}' learns no graph; drop --graph-out", a.method) };
        atomic_write(g, edge_list_csv(graph).as_bytes())?;
    }
    Ok(())
}

/// The embedding for `eval`, its row count checked against the `n` labels (or data rows) before
/// its body is read: from the header of an `.npy` file, so a 1.6 GB file of the wrong length is
/// refused after reading 64 KiB.
fn read_embedding(path: &Path, n: usize, of: &str) -> Result<Array2<f64>> {
    table_format(path, "input")?;
    let check = |r: usize, _c: usize| if r == n { Ok(()) } else { Err(format!("length mismatch: {r} rows, but {of} has {n} (one row per sample)")) };
    structdr_datasets::file::read_matrix_checked(path, &check).map_err(data_error)
}

/// k-means' tolerance is an absolute centre shift: on an embedding whose extent (the largest
/// range of a coordinate, `max_j (max_i y_ij - min_i y_ij)`) is not above it, every restart would
/// stop after its first update whatever the data (an embedding x 1e-300 against the default 1e-4),
/// so that is refused rather than scored.
fn check_tolerance(y: &Array2<f64>, tolerance: f64, input: &Path) -> Result<()> {
    if !(tolerance > 0.0 && tolerance.is_finite()) {
        bail!("--tolerance {tolerance} must be a finite number > 0");
    }
    let extent = y
        .columns()
        .into_iter()
        .map(|c| c.iter().fold(f64::NEG_INFINITY, |a, &v| a.max(v)) - c.iter().fold(f64::INFINITY, |a, &v| a.min(v)))
        .fold(0.0f64, f64::max);
    if extent.is_finite() && extent > 0.0 && tolerance >= extent {
        bail!(
            "{}: the embedding's extent is {extent:e}, not above the k-means tolerance {tolerance:e}: every restart would stop after one update; pass a smaller --tolerance (e.g. {:e})",
            input.display(),
            extent * 1e-4
        );
    }
    Ok(())
}

/// `structdr eval`. The labels (or the data) are read first and the embedding's length checked
/// against them before its body is read.
pub fn eval(e: EvalCommand) -> Result<()> {
    match e {
        EvalCommand::Loocv { input, labels } => {
            let l = read_labels(&labels)?;
            let y = read_embedding(&input, l.len(), &labels.display().to_string())?;
            let acc = structdr_eval::loocv_1nn_accuracy(y.view(), &l)?;
            println!("{}", serde_json::json!({ "loocv_1nn_accuracy": acc }));
        }
        EvalCommand::Kmeans { input, labels, k, restarts, seed, tolerance } => {
            let l = read_labels(&labels)?;
            let y = read_embedding(&input, l.len(), &labels.display().to_string())?;
            let k = k.unwrap_or_else(|| structdr_eval::n_classes(&l));
            check_tolerance(&y, tolerance, &input)?;
            let opts = structdr_eval::KmeansOptions { tolerance, ..Default::default() };
            let r = structdr_eval::kmeans_protocol_with(y.view(), &l, k, restarts, seed, &opts)?;
            println!(
                "{}",
                serde_json::json!({
                    "acc_mean": r.acc_mean, "acc_std": r.acc_std, "nmi_mean": r.nmi_mean, "nmi_std": r.nmi_std,
                    "acc_best_sse": r.acc_best_sse, "nmi_best_sse": r.nmi_best_sse, "k": k, "restarts": restarts, "seed": seed
                })
            );
        }
        EvalCommand::Neighbourhood { input, data, k } => {
            let x = read_matrix(&data)?;
            let y = read_embedding(&input, x.nrows(), &data.display().to_string())?;
            let s = structdr_eval::neighbourhood_preservation(x.view(), y.view(), k)?;
            println!(
                "{}",
                serde_json::json!({ "trustworthiness": s.trustworthiness, "continuity": s.continuity, "knn_preservation": s.knn_preservation, "k": k })
            );
        }
    }
    Ok(())
}
