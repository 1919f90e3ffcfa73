//! Sparse manifold clustering and embedding, SMCE (Elhamifar & Vidal 2011), the embedding.
//!
//! For every sample `x_i` with its K nearest neighbours `N_i` ([`structdr_numerics::neighbours::knn()`]):
//!
//! 1. Local geometry: the unit directions `X_i = [(x_j - x_i) / ||x_j - x_i||]_{j in N_i}` (D x K)
//!    and the proximities `q_ij = ||x_j - x_i|| / sum_{t in N_i} ||x_t - x_i||`.
//! 2. The sparse program (`Q_i = diag(q_i)`):
//!    `c_i = argmin_c lambda ||Q_i c||_1 + 1/2 ||X_i c||_2^2  s.t.  1^T c = 1`,
//!    convex in K variables; only the K x K Gram `G_i = X_i^T X_i` enters ([`solve_local`]).
//! 3. Weights `w_ij = (|c_ij| / ||x_j - x_i||) / sum_{t in N_i} (|c_it| / ||x_t - x_i||)` (each row
//!    sums to 1), then the reference code's pruning (`processC(W, 0.95)`): per row, the largest
//!    weights are kept until their sum first reaches `prune` times the row's sum, the rest set to 0
//!    (kept weights are not renormalised; `prune = 1` keeps every non-zero weight).
//! 4. Similarity `W_sym = max(W, W^T)` entrywise (the reference code's `max(abs(W), abs(W)')`).
//! 5. Embedding as in the reference code's `SpectralEmbedding`: with `D = diag(W_sym 1)`, the
//!    eigenvectors `u_2, ..., u_{d+1}` of the normalised Laplacian `I - D^{-1/2} W_sym D^{-1/2}`
//!    (ascending eigenvalues, the trivial `u_1 ∝ D^{1/2} 1` dropped), returned as
//!    `Y = sqrt(N_distinct) D^{-1/2} [u_2 .. u_{d+1}]` (the reference's `smce_embedding` scale
//!    `sqrt(N_g)`), column signs canonicalised (largest |entry| positive). This is LE's
//!    `graph_eigenmap` on the SMCE graph, times `sqrt(N_distinct)`.
//!
//! The per-sample solver (`solver = "exact"`, the default) is an exact active-set method
//! ([`active_set`]: the feature-sign search of Lee et al. 2007, adapted to the affine constraint
//! and to a singular `G`), which ends at a KKT point of the program (residual ~1e-15,
//! [`kkt_residual`]). Should it fail (its step limit, or a result that misses the KKT test
//! `residual <= 1e-9 max(1, lambda max q, ||G c||_inf)`), the sample falls back to the reference's
//! ADMM with an exact polish of its stable sign pattern. `solver = "admm"` runs the reference
//! code's ADMM alone ([`admm`]: splitting `z = c`, penalty `mu = 10`, start `c = 0`, stopped when
//! `mean |z - c| <= tol`, `|1^T z - 1| <= tol` and `mean |z - z_prev| <= 10 tol`, or at
//! `max_iter`): what the reference computes, which at small lambda stops well above the minimum.
//!
//! Duplicate samples (zero distances, for which directions and `w_ij` are undefined) are merged
//! before the fit: SMCE runs on the distinct rows (each group represented by its first
//! occurrence) and every copy receives its representative's coordinates. `k >= N_distinct` is
//! clamped to `N_distinct - 1` as the reference code clamps `KMax`. A disconnected SMCE graph is
//! joined (`disconnected = "connect"`) along the shortest point pairs between components
//! ([`structdr_numerics::graphs::connect_components`]), each joining edge given the smallest
//! weight of the SMCE graph, or refused (`"error"`).
//!
//! Cost: the K-NN search O(N^2 D); per sample O(K^2 D) for the Gram, and per active-set step an
//! O(m^3) eigendecomposition of the m x m reduced matrix (m active neighbours) plus O(K m) for the
//! optimality check (ADMM: O(K^3) once, O(K^2) per
//! iteration); then a dense O(N^3) eigenproblem with N^2 doubles of memory, as LE (the graph has
//! at most N K edges). At N = 5000, K = 50 on one core the eigensolver is almost all of it.
//!
//! The module holds the method's contract: the parameters ([`Smce`]), the fit (duplicate merging,
//! the graph's components, the spectral embedding and the trace) and the registry entry. The
//! numerics of steps 1-4 (the local problems, their solvers, weights and pruning) are in
//! `solver.rs`, re-exported here; the unit tests are in `tests.rs`.

use crate::api::declare::{self, declare_params, Declared};
use crate::api::info::{choice, dim, float_in, int, positive, MethodInfo};
use crate::api::params::{closed, open};
use crate::api::OutputKind;
use crate::api::{check_input, numerics, Embedder, FitInput, Fitted, Graph, MethodError, Output, ParamMap, Result, Trace};
use ndarray::{Array2, Axis};
use structdr_numerics::graphs::{component_sizes, connect_components, connected_components, laplacian, Disconnected};
use structdr_numerics::neighbours::distinct_rows;
use structdr_numerics::spectral::bottom_nontrivial;

mod solver;

use solver::M;
pub use solver::{
    active_set, admm, kkt_residual, local_problem, objective, prune_row, solve_local, sparse_weights, symmetric_edges, weights_from_coefficients, Exit,
    LocalSolution, LocalSolver, SparseWeights, ADMM_MU,
};

declare_params! {
    /// SMCE embedding to `dim` dimensions.
    #[derive(Debug, Clone)]
    pub struct Smce {
        /// Target dimension d (`d + 1 <= N_distinct`).
        pub dim: usize = dim(),
        /// Neighbours per sample from which the sparse program chooses (`>= 1`; clamped to
        /// `N_distinct - 1`).
        pub k: usize = int("k", 1, 49, "neighbours per sample the sparse program chooses from (x_i itself not counted; clamped to N_distinct - 1); 49 = the reference code's KMax = 50, which counts x_i"),
        /// Sparsity weight lambda > 0 of `lambda ||Q c||_1`.
        pub lambda: f64 = positive("lambda", 10.0, "sparsity weight lambda in lambda ||Q c||_1 + 1/2 ||X c||^2 (reference default 10; the SPL paper tunes 0.01, 0.1, 1, 10)"),
        /// Fraction in (0, 1] of each row's weight mass kept by the pruning step (reference 0.95).
        pub prune: f64 = float_in("prune", open(0.0), closed(1.0), 0.95, "per row, keep the largest weights until they reach this fraction of the row's sum (the reference smce.m's processC(W, 0.95)); 1 keeps every non-zero weight"),
        /// What to do with a disconnected SMCE graph.
        pub disconnected: Disconnected = choice("disconnected", &["connect", "error"], "connect", "if the SMCE graph is disconnected: \"connect\" joins the components along the shortest point pairs between them (a minimum spanning tree of the components), each with the smallest SMCE weight; \"error\" fails and reports the component sizes"),
        /// Per-sample solver.
        pub solver: LocalSolver = choice("solver", LocalSolver::NAMES, "exact", "per-sample solver: \"exact\" = active-set method to a KKT point (ADMM with pattern polish as fallback); \"admm\" = the reference code's ADMM and stopping rule alone (mu = 10), which stops early at small lambda"),
        /// ADMM iteration limit per sample.
        pub max_iter: usize = int("max_iter", 1, 10_000, "ADMM iteration limit per sample (reference 10000), for solver = \"admm\" and the exact solver's fallback"),
        /// ADMM tolerance (reference thresholds `tol`, `tol`, `10 tol`).
        pub tol: f64 = positive("tol", 1e-6, "ADMM stopping tolerance: mean |z - c| <= tol, |1^T z - 1| <= tol, mean |z - z_prev| <= 10 tol (reference 1e-6, 1e-6, 1e-5); for solver = \"admm\" and the exact solver's fallback"),
    }
}

impl Embedder for Smce {
    fn name(&self) -> &'static str {
        M
    }
    fn info(&self) -> MethodInfo {
        info()
    }
    fn params(&self) -> ParamMap {
        self.to_params()
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        let x = input.x;
        check_input(M, &x, 2)?;
        let n = x.nrows();
        crate::api::check_dense_size(M, n)?;
        let (reps, group) = distinct_rows(x);
        let u = reps.len();
        if u < 2 {
            return Err(MethodError::Degenerate { method: M, reason: format!("constant data: all {n} samples are the same point") });
        }
        if self.dim + 1 > u {
            return Err(MethodError::Input {
                method: M,
                reason: format!("dim = {} needs at least dim + 1 = {} distinct samples, got {u}", self.dim, self.dim + 1),
            });
        }
        let mut notes = Vec::new();
        let xu = if u < n {
            notes.push(format!("{} duplicate samples merged: SMCE ran on the {u} distinct rows, copies share their first occurrence's coordinates", n - u));
            x.select(Axis(0), &reps)
        } else {
            x.to_owned()
        };
        let k = self.k.min(u - 1);
        if k < self.k {
            notes.push(format!("k = {} clamped to N_distinct - 1 = {k}", self.k));
        }
        let sw = sparse_weights(xu.view(), k, self.lambda, self.prune, self.solver, self.max_iter, self.tol)?;
        let mut edges = symmetric_edges(&sw);
        let (labels, count) = connected_components(u, &edges);
        if count > 1 {
            let sizes = component_sizes(&labels, count);
            match self.disconnected {
                Disconnected::Error => return Err(MethodError::Disconnected { method: M, k, components: count, sizes }),
                Disconnected::Connect => {
                    let wmin = edges.iter().map(|e| e.2).fold(f64::INFINITY, f64::min);
                    let joins = connect_components(xu.view(), &labels, count);
                    notes.push(format!(
                        "the SMCE graph had {count} connected components (sizes {sizes:?}); joined them with {} shortest edges of weight {wmin:.3e} (the smallest SMCE weight; disconnected = \"connect\")",
                        joins.len()
                    ));
                    edges.extend(joins.into_iter().map(|(i, j, _)| (i, j, wmin)));
                    edges.sort_by_key(|e| (e.0, e.1));
                    edges.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
                }
            }
        }
        let (a, s) = laplacian::normalized_from_edges(u, &edges)
            .map_err(|i| MethodError::Degenerate { method: M, reason: format!("sample {} has zero degree in the SMCE graph", reps[i]) })?;
        let (y, values) = bottom_nontrivial(a.view(), self.dim, Some(&s)).map_err(numerics(M))?;
        let scale = (u as f64).sqrt();
        let emb = Array2::from_shape_fn((n, self.dim), |(i, c)| scale * y[[group[i], c]]);

        let sols = &sw.solutions;
        let count_exit = |e: Exit| sols.iter().filter(|s| s.exit == e).count();
        let (exact, polished, admm, limit) =
            (count_exit(Exit::Exact), count_exit(Exit::Polished), count_exit(Exit::AdmmTolerance), count_exit(Exit::IterationLimit));
        let steps: Vec<usize> = sols.iter().filter(|s| s.exit == Exit::Exact).map(|s| s.iterations).collect();
        let max_it = sols.iter().map(|s| s.iterations).max().unwrap_or(0);
        let mean_steps = steps.iter().sum::<usize>() as f64 / steps.len().max(1) as f64;
        let admm_its = sols.iter().filter(|s| s.exit != Exit::Exact).map(|s| s.iterations).max().unwrap_or(0);
        let kkt = sols.iter().map(|s| s.kkt).fold(0.0f64, f64::max);
        let total_obj = sols.iter().map(|s| s.objective).sum::<f64>();
        let support = sols.iter().map(|s| s.c.iter().filter(|v| **v != 0.0).count()).sum::<usize>() as f64 / u as f64;
        let kept = sw.weights.iter().map(|w| w.iter().filter(|v| **v > 0.0).count()).sum::<usize>() as f64 / u as f64;
        let termination = match self.solver {
            LocalSolver::Exact => format!(
                "{u} sparse programs: {exact} solved exactly by the active-set method (mean {mean_steps:.1} steps, max {}), {} by the ADMM fallback ({polished} polished to a KKT point, {admm} stopped by its tolerance, {limit} at max_iter; at most {admm_its} iterations); max KKT residual {kkt:.2e}",
                steps.iter().max().unwrap_or(&0),
                u - exact
            ),
            LocalSolver::Admm => format!(
                "{u} sparse programs by the reference ADMM: {admm} stopped by its tolerance, {limit} at max_iter; iterations mean {:.1}, max {max_it}; max KKT residual {kkt:.2e}",
                sols.iter().map(|s| s.iterations).sum::<usize>() as f64 / u as f64
            ),
        };
        notes.push(format!(
            "mean non-zero coefficients per sample {support:.2} of k = {k}; mean weights kept after pruning {kept:.2}; {} graph edges",
            edges.len()
        ));
        notes.push(format!("normalised-Laplacian eigenvalues lambda_1..lambda_{}: {values:?}", self.dim + 1));
        let trace = Trace::iterative(
            vec![total_obj],
            max_it,
            // the per-sample programs' KKT residual is reported; their own tolerances decide
            if limit == 0 {
                crate::api::StopReason::Converged { residual: Some(kkt), tol: None }
            } else {
                crate::api::StopReason::IterationLimit { max_iter: self.max_iter, residual: Some(kkt), tol: None }
            },
            termination,
        )
        .with_kkt_residual(kkt);
        let mut f = Fitted::new(Output::Embedding(emb), trace);
        f.notes = notes;
        f.graph = Some(Graph { n_vertices: n, edges: edges.iter().map(|&(i, j, w)| (reps[i], reps[j], w)).collect() });
        Ok(f)
    }
}

/// The registry entry.
pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: M,
        summary: "Sparse manifold clustering and embedding: per sample, c = argmin lambda ||Q c||_1 + 1/2 ||X c||^2 s.t. 1^T c = 1 over its k nearest neighbours' unit directions X (Q = normalised distances), w_ij ∝ |c_j| / ||x_j - x_i||, pruned to `prune` of each row's mass, W = max(W, W^T); embedding = sqrt(N) D^-1/2 times eigenvectors 2..d+1 of the normalised Laplacian.",
        reference: "Elhamifar & Vidal 2011 (NIPS); Elhamifar's SMCE MATLAB code (smce.m, smce_optimization.m, admm_vec_func.m: lambda = 10, KMax = 50, processC 0.95)",
        version: 1,
        output: OutputKind::Embedding,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: false,
        params: Smce::schema(()),
        build: |p| declare::build::<Smce>(M, (), p),
    }
}

#[cfg(test)]
mod tests;
