//! MVU, MVUineq and MVU2: maximum variance unfolding (Weinberger & Saul 2004, 2006) and its two
//! relaxations, solved exactly (to a certified duality gap) by [`super::sdp`].
//!
//! With the symmetrised k-NN graph `E` of the data and `d_ij = ||x_i - x_j||^2` on its edges:
//!
//! - `mvu`: `max tr(K)  s.t.  K PSD, sum_ij K_ij = 0, K_ii + K_jj - 2 K_ij = d_ij  ((i,j) in E)`;
//! - `mvu-ineq`: the same with `K_ii + K_jj - 2 K_ij <= d_ij` (distances may shrink);
//! - `mvu2`: `max tr(K) - nu sum_E (K_ii + K_jj - 2 K_ij - d_ij)^2  s.t.  K PSD, sum_ij K_ij = 0`
//!   (an l2 penalty on the distance slacks), with `nu` in units where the mean `d_ij` over `E`
//!   is 1 (the data are scaled by one factor before the solve and the embedding scaled back, so
//!   `nu` means the same on every data set).
//!
//! The embedding is kernel PCA on the learned `K = Y Y^T`: the top-d eigenvectors scaled by the
//! square roots of their eigenvalues, computed from the r x r matrix `Y^T Y` (never N x N).
//! The factor starts from the data's top principal components (which satisfy every inequality
//! constraint). Notes report the certificate: `tr(K)`, the dual bound, the relative duality gap,
//! the constraint residual and the factorisation rank.

use super::sdp::{DistanceConstraint, DistanceSdp, SdpOptions, SdpSolution};
use crate::api::declare::{self, declare_params, fixed, Declared};
use crate::api::info::{dim, disconnected_param, float, float_in, int, MethodInfo};
use crate::api::params::open;
use crate::api::OutputKind;
use crate::api::{check_input, numerical, numerics, Embedder, FitInput, Fitted, Graph, MethodError, Output, ParamMap, Result, Trace};
use ndarray::{Array2, ArrayView2, Axis};
use structdr_linalg::{canonicalize_signs, eigh_top, Pca as PcaBasis};
use structdr_numerics::graphs::{neighbourhood_graph, Disconnected};
use structdr_numerics::neighbours::distinct_rows;

/// Largest N of the full SDP: the certificate's eigenproblem is dense N x N (O(N^3), 8 N^2
/// bytes). Larger data sets use `landmark-mvu`.
pub const MVU_MAX_N: usize = 6000;

/// Which member of the family.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MvuVariant {
    /// Distances on the graph kept exactly.
    Equality,
    /// Distances may shrink.
    Inequality,
    /// l2 penalty `nu` on the distance slacks.
    L2,
}

declare_params! {
    // one declaration for the three registry entries (they differ in MVU2's `nu`)
    entry variant: MvuVariant = |m| m.variant;
    /// MVU / MVUineq / MVU2 with parameters `dim`, `k`, (`nu`), `disconnected`, `gap_tol`, `max_rank`.
    #[derive(Debug, Clone)]
    pub struct Mvu {
        /// Which variant.
        pub variant: MvuVariant = fixed(variant),
        /// Target dimension d.
        pub dim: usize = dim(),
        /// Neighbours per sample of the constraint graph.
        pub k: usize = int("k", 1, 12, "neighbours per sample of the symmetrised k-NN constraint graph (drtoolbox default 12)"),
        /// MVU2's slack penalty (unused otherwise).
        pub nu: f64 = match variant {
            MvuVariant::L2 => float_in("nu", open(0.0), open(f64::INFINITY), 1.0, "weight of the squared distance slacks (mean squared edge length = 1)").into(),
            MvuVariant::Equality | MvuVariant::Inequality => fixed(0.0),
        },
        /// What to do with a disconnected k-NN graph (MVU is unbounded on one).
        pub disconnected: Disconnected = disconnected_param(),
        /// Relative duality gap the solve must certify.
        pub gap_tol: f64 = float("gap_tol", 1e-12, 1e-1, 1e-6, "relative duality gap (U - P) / P the solve must certify"),
        /// Largest factorisation rank.
        pub max_rank: usize = int("max_rank", 1, 60, "largest rank of the factor Y (K = Y Y^T) the rank growth may reach"),
    }
}

impl Mvu {
    fn method(&self) -> &'static str {
        match self.variant {
            MvuVariant::Equality => "mvu",
            MvuVariant::Inequality => "mvu-ineq",
            MvuVariant::L2 => "mvu2",
        }
    }
}

/// Top-`dim` kernel principal components of `K = Y Y^T` from the r x r `Y^T Y`: `Y V_d`, whose
/// columns are `sqrt(lambda_k) u_k`. Columns beyond the rank of `Y` are zero.
pub fn kernel_pca_of_factor(method: &'static str, y: ArrayView2<f64>, dim: usize) -> Result<(Array2<f64>, Vec<f64>)> {
    let (n, r) = y.dim();
    let take = dim.min(r);
    let e = eigh_top(y.t().dot(&y).view(), take).map_err(numerical(method))?;
    let mut emb = Array2::<f64>::zeros((n, dim));
    emb.slice_mut(ndarray::s![.., ..take]).assign(&y.dot(&e.vectors));
    canonicalize_signs(&mut emb);
    Ok((emb, e.values.to_vec()))
}

/// The rank of the starting factor. The certificate's rank growth raises it when the optimum
/// needs more (every column costs O(|E| + N) per L-BFGS step), so the start need not cover the
/// output dimension: an embedding coordinate beyond the rank of K is 0, as it is in the exact
/// optimum. Starting at `dim + 8` columns made coil20 (dim 84, optimal K of rank 3 at k = 5) take
/// 3.3x longer for the same iterates.
pub const START_RANK: usize = 12;

/// MVUineq drops the factor's axes whose eigenvalue falls below this fraction of the largest
/// ([`SdpOptions::trim`]). Table 1's optima have 2-14 eigenvalues above 1e-6 of the largest while
/// the factor carries 12-26 columns, and an L-BFGS step costs in proportion to the columns: segment
/// K = 20 went from rank 12-14 to 5-7 with the same 110,000 iterations and the same `tr K` to
/// 3e-10. Equality MVU and MVU2 keep every column (their records are unchanged).
pub const TRIM_BELOW: f64 = 1e-8;

/// The starting factor: `scores / sqrt(mean_d)` in the first columns, then columns of a fixed
/// low-discrepancy sequence at 1e-3 of the scores' scale (deterministic; they give the solver
/// room to leave a low-rank start without a random generator).
pub fn start_factor(scores: ArrayView2<f64>, r0: usize, mean_d: f64) -> Array2<f64> {
    let (n, p) = scores.dim();
    let mut z = Array2::<f64>::zeros((n, r0.max(p)));
    z.slice_mut(ndarray::s![.., ..p]).assign(&(&scores / mean_d.sqrt()));
    let scale = 1e-3 * (scores.iter().map(|v| v * v).sum::<f64>() / (n as f64 * mean_d)).sqrt().max(1e-12);
    for c in p..z.ncols() {
        // Weyl sequence frac(i * alpha_c), alpha_c = sqrt of the (c+2)-th prime-ish odd number
        let alpha = ((2 * c + 3) as f64).sqrt().fract();
        for i in 0..n {
            z[[i, c]] = scale * (((i + 1) as f64 * alpha).fract() - 0.5);
        }
    }
    z
}

/// Fits `fit` on the distinct rows of `x` and copies every representative's output row to its
/// duplicates (graph edges are mapped back to the representatives' indices). Equal samples give
/// zero-length edges that no kernel can stretch and the inequality certificate's feasibility
/// scaling `min_e d_e / ||y_i - y_j||^2` would be 0 on them; merging them is exact for MVU (equal
/// points have equal rows in every optimal K).
pub fn fit_on_distinct_rows(method: &'static str, x: ArrayView2<f64>, fit: impl FnOnce(ArrayView2<f64>) -> Result<Fitted>) -> Result<Fitted> {
    let (reps, group) = distinct_rows(x);
    if reps.len() == x.nrows() {
        return fit(x);
    }
    if reps.len() < 3 {
        return Err(MethodError::Degenerate { method, reason: format!("only {} distinct samples", reps.len()) });
    }
    let xu = x.select(Axis(0), &reps);
    let mut f = fit(xu.view())?;
    if let Output::Embedding(e) = &f.output {
        let full = e.select(Axis(0), &group);
        f.output = Output::Embedding(full);
    }
    if let Some(g) = f.graph.as_mut() {
        g.n_vertices = x.nrows();
        for e in g.edges.iter_mut() {
            *e = (reps[e.0], reps[e.1], e.2);
        }
    }
    f.notes.insert(0, format!("{} duplicate samples merged into their first copy before the fit ({} distinct)", x.nrows() - reps.len(), reps.len()));
    Ok(f)
}

/// Fit notes shared by the family: the certificate in words.
pub fn certificate_notes(sol: &SdpSolution, scale: f64) -> Vec<String> {
    let c = &sol.certificate;
    vec![
        format!(
            "tr(K) = {:.9e}, dual bound = {:.9e} (units where the mean squared edge length is 1; multiply by {scale:.6e} for the data's units); relative duality gap = {:.3e}; constraint residual = {:.3e}; mu = {:.9}",
            c.primal, c.dual, c.rel_gap, c.residual, c.mu
        ),
        format!("factorisation rank {}, {} outer and {} L-BFGS iterations; {}", sol.y.ncols(), sol.outer, sol.inner, sol.termination),
    ]
}

impl Embedder for Mvu {
    fn name(&self) -> &'static str {
        self.method()
    }
    fn info(&self) -> MethodInfo {
        match self.variant {
            MvuVariant::Equality => info_mvu(),
            MvuVariant::Inequality => info_mvu_ineq(),
            MvuVariant::L2 => info_mvu2(),
        }
    }
    fn params(&self) -> ParamMap {
        self.to_params()
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        let method = self.method();
        check_input(method, &input.x, 3)?;
        fit_on_distinct_rows(method, input.x, |x| self.fit_distinct(x))
    }
}

impl Mvu {
    /// The fit on samples without duplicates.
    fn fit_distinct(&self, x: ArrayView2<f64>) -> Result<Fitted> {
        let method = self.method();
        let (n, d_in) = x.dim();
        if n > MVU_MAX_N {
            return Err(MethodError::Input {
                method,
                reason: format!("N = {n} exceeds {MVU_MAX_N}: the duality certificate solves a dense N x N eigenproblem; use landmark-mvu for large data"),
            });
        }
        if self.dim >= n {
            return Err(MethodError::Input { method, reason: format!("dim = {} must be below N = {n}", self.dim) });
        }
        let g = neighbourhood_graph(x, self.k, self.disconnected).map_err(numerics(method))?;
        let edges: Vec<(usize, usize)> = g.edges.iter().map(|&(i, j, _)| (i, j)).collect();
        let mean_d = g.edges.iter().map(|e| e.2).sum::<f64>() / edges.len() as f64;
        if !(mean_d > 0.0 && mean_d.is_finite()) {
            return Err(MethodError::Degenerate {
                method,
                reason: format!("the mean squared length of the {}-NN edges is {mean_d}: identical samples", self.k),
            });
        }
        let d2: Vec<f64> = g.edges.iter().map(|e| e.2 / mean_d).collect();
        // start: the top principal components (distances shrink: inequality-feasible), at most
        // START_RANK columns, padded with small deterministic ones
        let r0 = START_RANK.min(n - 1).min(self.max_rank);
        let basis = PcaBasis::fit(x).map_err(numerical(method))?;
        let r_pca = d_in.min(r0).min(basis.variances.len());
        let z0 = start_factor(basis.transform(x, r_pca).view(), r0, mean_d);
        let constraint = match self.variant {
            MvuVariant::Equality => DistanceConstraint::Equality,
            MvuVariant::Inequality => DistanceConstraint::Inequality,
            MvuVariant::L2 => DistanceConstraint::Penalty(self.nu),
        };
        let sdp = DistanceSdp { n, q: None, edges: &edges, d2: &d2, constraint };
        // Equality MVU has no strictly feasible point, its dual optimum is not attained and the
        // subproblems grow ill-conditioned without end: bound each one (docs/parity/mvu.md)
        let max_inner = if self.variant == MvuVariant::Equality { 3000 } else { SdpOptions::default().max_inner };
        let trim = (self.variant == MvuVariant::Inequality).then_some(TRIM_BELOW);
        let opts = SdpOptions { max_rank: self.max_rank.max(r0), gap_tol: self.gap_tol, max_inner, trim, ..SdpOptions::default() };
        let sol = sdp.solve(z0, &opts).map_err(numerical(method))?;
        let (emb, values) = kernel_pca_of_factor(method, (&sol.y * mean_d.sqrt()).view(), self.dim)?;
        let trace = Trace::iterative(sol.history.clone(), sol.outer, sol.stop(opts.max_outer, opts.gap_tol), sol.termination.clone())
            .with_kkt_residual(sol.certificate.rel_gap);
        let mut f = Fitted::new(Output::Embedding(emb), trace);
        if let Some(note) = g.note() {
            f.notes.push(note);
        }
        f.notes.extend(certificate_notes(&sol, mean_d));
        f.notes.push(format!("top eigenvalues of K: {values:?}"));
        f.graph = Some(Graph { n_vertices: n, edges: g.edges.iter().map(|&(i, j, _)| (i, j, 1.0)).collect() });
        Ok(f)
    }
}

const REFERENCE: &str = "Weinberger & Saul, Unsupervised learning of image manifolds by semidefinite programming, IJCV 70, 2006 (MVU: also CVPR 2004); solver: Burer & Monteiro, Math. Program. 95, 2003";

/// The registry entry of one variant (they differ in name, summary and MVU2's `nu`).
fn info_variant(variant: MvuVariant) -> MethodInfo {
    let (name, summary) = match variant {
        MvuVariant::Equality => (
            "mvu",
            "Maximum variance unfolding: max tr(K) s.t. K PSD, sum K = 0, K_ii + K_jj - 2 K_ij = ||x_i - x_j||^2 on the k-NN graph; KPCA of K. Low-rank augmented Lagrangian with a duality-gap certificate (not attainable for equalities: best effort, docs/parity/mvu.md).",
        ),
        MvuVariant::Inequality => (
            "mvu-ineq",
            "MVUineq: maximum variance unfolding with K_ii + K_jj - 2 K_ij <= ||x_i - x_j||^2 on the k-NN graph (distances may shrink); KPCA of K; certified relative duality gap.",
        ),
        MvuVariant::L2 => (
            "mvu2",
            "MVU2: max tr(K) - nu sum_E (K_ii + K_jj - 2 K_ij - ||x_i - x_j||^2)^2 s.t. K PSD, sum K = 0 (l2 penalty on the distance slacks; nu in units where the mean squared edge length is 1); KPCA of K.",
        ),
    };
    MethodInfo {
        name,
        summary,
        reference: REFERENCE,
        // mvu-ineq 8: vanishing columns dropped (SdpOptions::trim; its version 7, a cap on the
        // subproblems, was measured and withdrawn: docs/parity/mvu.md)
        version: if variant == MvuVariant::Inequality { 8 } else { 6 },
        output: OutputKind::Embedding,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: false,
        params: Mvu::schema(variant),
        build: match variant {
            MvuVariant::Equality => |p| declare::build::<Mvu>("mvu", MvuVariant::Equality, p),
            MvuVariant::Inequality => |p| declare::build::<Mvu>("mvu-ineq", MvuVariant::Inequality, p),
            MvuVariant::L2 => |p| declare::build::<Mvu>("mvu2", MvuVariant::L2, p),
        },
    }
}

pub(crate) fn info_mvu() -> MethodInfo {
    info_variant(MvuVariant::Equality)
}

pub(crate) fn info_mvu_ineq() -> MethodInfo {
    info_variant(MvuVariant::Inequality)
}

pub(crate) fn info_mvu2() -> MethodInfo {
    info_variant(MvuVariant::L2)
}
