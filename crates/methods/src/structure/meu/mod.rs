//! MEU: maximum entropy unfolding (Lawrence, *A Unifying Probabilistic Perspective for Spectral
//! Dimensionality Reduction: Insights and New Models*, JMLR 13, 2012, §3; the reference MATLAB
//! code is the `meu` toolbox, SheffieldML/meu: `meuCreate`, `meuParamInit`, `meuExpandParam`,
//! `meuLogLikelihood`, `meuLogLikeGradients`, `meuOptimise`).
//!
//! **Model.** A Gaussian random field over the N samples, the p features of `Y` (N x p, centred
//! here) being i.i.d. columns:
//!
//! `p(Y) = |L + gamma I|^{p/2} (2 pi)^{-Np/2} exp(-1/2 tr(Y^T (L + gamma I) Y))`,
//!
//! `L = diag(W 1) - W` the Laplacian of a symmetric non-negative `W` supported on the symmetrised
//! K-NN graph `E` (`i ~ j` iff `j in kNN(i)` or `i in kNN(j)`;
//! [`structdr_numerics::neighbours::symmetrised_edges`]). The reference keeps one parameter
//! `kappa` per *directed* pair (i, r-th neighbour of i) and adds both directions into `W_ij`
//! (`spectralUpdateLaplacian`); since `W` enters only through the sums, we keep one weight
//! `w_e >= 0` per undirected edge `e = (i, j)`: the same set of `W`, the same maximiser.
//! `phi_e = ||y_i - y_j||^2`.
//!
//! **Objective** (`objective`), minimised over `w`:
//!
//! - `likelihood` (default; the reference code and the paper's maximum likelihood):
//!   `F(w) = -log p(Y) = -(p/2) log det(L + gamma I) + (1/2) sum_e w_e phi_e + (gamma/2) ||Y||_F^2 + (Np/2) log 2 pi`
//!   (`tr(Y^T L Y) = sum_e w_e phi_e`), with
//!   `dF/dw_e = (1/2) (phi_e - p <d_e>)`, `<d_e> = Z_ii + Z_jj - 2 Z_ij`, `Z = (L + gamma I)^-1`,
//!   the expected squared distance under the model (`meuLogLikeGradients`: `0.5 (d expD2 - D2)`).
//!   `log det` is concave in `w` and the rest linear, so `F` is convex: its minimiser is global
//!   and the projected-gradient norm certifies it. Only the diagonal of `Z` and its entries on
//!   `E` are needed: one supernodal sparse Cholesky of `L + gamma I` on the fixed pattern of `E`
//!   and its selected inversion per evaluation ([`structdr_linalg::sparse`], the kernels of SPL),
//!   never an N x N matrix; when the factor is nearly dense the dense `dpotrf` + `dpotri` is
//!   faster and is used instead (SPL's rule, [`super::spl::Backend`]).
//! - `pseudo`: Besag's pseudo-likelihood of the same field (the approximation the MPME and SPL
//!   papers ascribe to MEU; Lawrence's §4 shows LLE fits MEU this way with the symmetry relaxed).
//!   With precision `Lambda = L + gamma I`, `y_i | y_{-i} ~ N(m_i, I / a_i)` per feature,
//!   `a_i = Lambda_ii = gamma + sum_j w_ij`, `m_i = -sum_{j != i} Lambda_ij y_j / a_i = sum_j w_ij y_j / a_i`:
//!   `F(w) = -sum_i [ (p/2) log a_i - (a_i/2) ||y_i - m_i||^2 ] + (Np/2) log 2 pi`,
//!   `dF/dw_e = -[ p/(2 a_i) + p/(2 a_j) + (1/2)(||y_j - m_i||^2 - phi_e) + (1/2)(||y_i - m_j||^2 - phi_e) ]`
//!   (each edge enters the conditionals of both ends). Each term is concave in `(a_i, sum_j w_ij y_j)`
//!   (a log plus minus a quadratic-over-linear), so `F` is convex too; O(|E| p) per evaluation.
//!
//! **Constraint and solver.** `w >= 0` as box constraints, solved by the projected L-BFGS of
//! [`structdr_numerics::optim`] (or the Fortran L-BFGS-B; `solver`), memory m = 10. A log (exp)
//! parameterisation, the reference's (`optimiDefaultConstraint('positive') = 'exp'`, SCG), has the
//! same maximiser in `W` when it is interior, but makes the problem non-convex in the variables,
//! never reaches `w_e = 0` (edges the data do not support go to `exp(-36)` there) and has no KKT
//! certificate; the box keeps all three. For the likelihood each weight also gets the upper bound
//! `u_e = p / phi_e`, which is never active at the optimum: `<d_e>` is the effective resistance
//! between i and j (with every node also tied to a ground by `gamma`), at most `1 / w_e`, so at
//! `w_e = u_e` the gradient `(1/2)(phi_e - p <d_e>) >= (1/2)(phi_e - p / u_e) = 0` points back
//! inside; the bound only keeps early steps sane. The solver works in the scaled variables
//! `v_e = w_e / s_e`, `s_e = p / phi_e` (box `[0, 1]` for the likelihood): at the optimum every
//! kept edge has `p <d_e> = phi_e`, and the Hessian's diagonal `(p/2) <d_e>^2` becomes `p/2` for
//! all of them (unscaled it spans the squared range of `phi`; the reference's `exp` transform
//! equilibrates in the same way). On a 300-point helix this cuts the iterations from ~460 to ~50.
//!
//! **Coincident samples.** A K-NN pair at distance 0 makes either objective unbounded: `w_e -> inf`
//! (the reference's `exp` transform lets `kappa` grow until the iteration limit). The limit is the
//! field conditioned on the two samples being equal, `y = P z` (`P` the N x n_c indicator of the
//! groups of coincident samples): its precision is `P^T (L + gamma I) P = L_c + gamma M`, with
//! `L_c` the Laplacian of the merged graph (weights of merged parallel edges add, as the
//! reference's directed kappas do) and `M = diag(m_c)` the group sizes; its covariance is the
//! limit `P (L_c + gamma M)^-1 P^T` of `(L + gamma I)^-1`. So groups of coincident samples (the
//! components of the K-NN pairs at distance 0) are merged into one node of multiplicity `m_c`:
//! `gamma I` becomes `gamma M` in both objectives, `(gamma/2) ||Y||_F^2` keeps every sample, and the
//! pseudo-likelihood has one conditional per node. Without coincident samples `M = I` and nothing
//! changes; with them every sample of a group gets the same coordinates.
//!
//! **Start and stop.** The reference's start `kappa = 1` for every directed pair: `w_e` = the
//! number of directions in which `e` is a K-NN pair (1 or 2), clipped to the bounds. Stop when
//! the KKT residual `||proj grad||_inf` in the scaled variables (`max_e |clamp(v_e - s_e dF/dw_e,
//! 0, u_e / s_e) - v_e|`) is `<= tol x` its value at the start, when the relative decrease of `F`
//! falls below `1e3 eps_mach`, or after `max_iter` iterations (the reference runs SCG for 2000).
//! On letter (N = 5000, K = 5-50) the likelihood stops by the second rule after 58-82 iterations,
//! at a relative KKT residual of about 1e-4, where `F` no longer changes in its 13th digit.
//!
//! **Embedding.** The reference (`meuOptimise`) takes the top-d eigenvectors of the centred kernel
//! `H Z H`, `H = I - 1 1^T / N`. Since `L 1 = 0`, `1` is an eigenvector of `Z` (eigenvalue
//! `1/gamma`) and `H Z H = sum_{k >= 2} v_k v_k^T / (lambda_k + gamma)` over the eigenpairs of `L`
//! on `1^perp`: its top-d eigenvectors are the bottom-d eigenvectors of `L` orthogonal to `1` (also
//! when `E` or the learned `W` is disconnected and 0 is a multiple eigenvalue of `L`), with kernel
//! eigenvalues `1/(lambda_k + gamma)`. We compute them without inverting, as the bottom-d
//! eigenpairs of `L + (tau/N) 1 1^T`, `tau = 2 max_i deg_i + 1 > lambda_max(L)` (Gershgorin), which
//! moves the constant vector to the top of the spectrum and leaves the rest unchanged
//! (`dsyevr`, dense). With merged nodes the kernel is `P (L_c + gamma M)^-1 P^T` and the same
//! argument runs on `M^-1/2 L_c M^-1/2` and `M^1/2 1` (sample i of node c gets `u_c / sqrt(m_c)`).
//! `scaling = "unit"` (default) returns the eigenvectors as the reference does: each column
//! centred and scaled to unit sample variance (`sqrt(N - 1) v_k`); `scaling = "kpca"` returns the
//! KPCA coordinates `v_k / sqrt(lambda_k + gamma)` ([`structdr_numerics::spectral::kernel_pca`] on
//! `Z`, up to column signs; a test checks both against the explicit inverse).
//!
//! **Cost.** K-NN O(N^2 p) by GEMM blocks; per evaluation (likelihood) a sparse factorisation
//! and selected inversion (about 3 x the factor's flops, which depend on the fill of the K-NN
//! graph, not on p) or, when nearly dense, N^3 flops; (pseudo) O(|E| p). The embedding is one
//! dense N x N eigenproblem: O(N^3) time and 16 N^2 bytes (0.4 GB at N = 5000), as LE and KPCA.
//!
//! The module holds the method's contract: the parameters ([`Meu`]), the fit (input checks, the
//! solve, the learned graph and the notes) and the registry entry. The field, its two objectives,
//! the solve and the embedding from the learned weights are in `solver.rs`, re-exported here; the
//! unit tests are in `tests.rs`.

use super::pair_dual::{solver_label, LBFGSB_FACTR};
use crate::api::declare::{self, declare_params, Declared};
use crate::api::info::{choice, dim, float_in, int, positive, MethodInfo};
use crate::api::params::{closed, open};
use crate::api::OutputKind;
use crate::api::{check_dense_size, check_input, numerics, Embedder, FitInput, Fitted, Graph, MethodError, Output, ParamMap, Result, Trace};
use ndarray::ArrayView2;
use structdr_numerics::neighbours::knn;
use structdr_numerics::optim::Solver;

mod solver;

use solver::NAME;
pub use solver::{embedding, MeuObjective, MeuProblem, MeuScaling, MEU_MEMORY};

declare_params! {
    /// MEU with parameters `dim`, `k`, `gamma`, `objective`, `scaling`, `max_iter`, `tol`, `solver`.
    #[derive(Debug, Clone)]
    pub struct Meu {
        /// Target dimension d (`d + 1 <= N`).
        pub dim: usize = dim(),
        /// Neighbours per sample of the K-NN graph (symmetrised), `1 <= k < N`.
        pub k: usize = int("k", 1, 7, "neighbours per sample of the K-NN graph that supports W (symmetrised: i ~ j if j in kNN(i) or i in kNN(j)); 7 is meuOptions' default"),
        /// Precision `gamma > 0` of the broad base density (`L + gamma I`).
        pub gamma: f64 = positive("gamma", 1e-4, "precision gamma > 0 of the broad base density: the field's precision is L + gamma I (meuParamInit: 1e-4; absolute, so its effect depends on the data's scale)"),
        /// Exact likelihood or pseudo-likelihood.
        pub objective: MeuObjective = choice("objective", MeuObjective::NAMES, "likelihood", "likelihood = exact log-likelihood (the reference code; one sparse Cholesky + selected inversion per evaluation); pseudo = Besag's pseudo-likelihood sum_i log p(y_i | y_-i) (O(|E| p) per evaluation)"),
        /// Coordinates from the kernel's eigenvectors.
        pub scaling: MeuScaling = choice("scaling", MeuScaling::NAMES, "unit", "unit = each eigenvector of the centred kernel centred and scaled to unit variance (meuOptimise); kpca = KPCA coordinates v_k / sqrt(lambda_k + gamma)"),
        /// Iteration limit of the solver.
        pub max_iter: usize = int("max_iter", 0, 1000, "iteration limit of the solver (the reference runs 2000 SCG iterations)"),
        /// Stop when the KKT residual (in the scaled variables, module doc) is `<= tol x` its value
        /// at the start.
        pub tol: f64 = float_in("tol", closed(0.0), open(f64::INFINITY), 1e-6, "stop when the KKT residual ||proj grad||_inf (in the solver's scaled variables v_e = w_e phi_e / p) <= tol x its value at the start"),
        /// Bound-constrained solver.
        pub solver: Solver = choice("solver", &["projected", "lbfgsb"], "projected", "bound-constrained solver for w >= 0: projected = two-metric projected L-BFGS; lbfgsb = the Fortran L-BFGS-B 3.0 (both m = 10)"),
    }
}

impl Meu {
    fn validate(&self, x: &ArrayView2<f64>) -> Result<()> {
        check_input(NAME, x, 3)?;
        let n = x.nrows();
        if self.k == 0 || self.k >= n {
            return Err(MethodError::Input {
                method: NAME,
                reason: format!("too few points for k neighbours: N = {n} samples, k = {} (need 1 <= k < N)", self.k),
            });
        }
        if self.dim == 0 || self.dim + 1 > n {
            return Err(MethodError::Input { method: NAME, reason: format!("dim = {} must be in [1, N - 1] = [1, {}]", self.dim, n - 1) });
        }
        check_dense_size(NAME, n)
    }
}

impl Embedder for Meu {
    fn name(&self) -> &'static str {
        NAME
    }
    fn info(&self) -> MethodInfo {
        info()
    }
    fn params(&self) -> ParamMap {
        self.to_params()
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        let x = input.x;
        self.validate(&x)?;
        let n = x.nrows();
        let nn = knn(x, self.k).map_err(numerics(NAME))?;
        let prob = MeuProblem::new(x, &nn, self.gamma, self.objective)?;
        let (r, pg0) = prob.solve(self.solver, self.max_iter, self.tol)?;
        let w = &r.x;
        if w.iter().all(|&v| v == 0.0) {
            // (likelihood) every edge has phi_e >= 2p/gamma: W = 0, Z = I/gamma, and the centred
            // kernel H/gamma has one (N-1)-fold eigenvalue, so there is no embedding
            return Err(MethodError::Input {
                method: NAME,
                reason: format!(
                    "W = 0 is optimal at this data scale (no K-NN pair has phi_ij < 2p/gamma = {:.3e} for the likelihood), so the kernel (L + gamma I)^-1 = I/gamma has no structure; rescale the data or lower gamma",
                    2.0 * prob.p() as f64 / self.gamma
                ),
            });
        }
        let nc = prob.n_nodes();
        let active_nodes: Vec<(usize, usize, f64)> = prob.edges().iter().zip(w).filter(|(_, &v)| v > 0.0).map(|(&(a, b), &v)| (a, b, v)).collect();
        // more than dim + 1 components tie the kernel's top eigenvalue 1/gamma beyond dim: no
        // embedding the data determine (a degenerate error)
        let components = super::embedding_is_determined(NAME, nc, &active_nodes, self.dim, ("gamma", self.gamma), "use a larger k or dim")?;
        let (embedding, lambda) = embedding(&prob, w, self.dim, self.scaling)?;
        // the drawn graph: edges between the nodes' lowest samples
        let mut rep = vec![usize::MAX; nc];
        for (i, &c) in prob.node().iter().enumerate() {
            if rep[c] == usize::MAX {
                rep[c] = i;
            }
        }
        let mut active: Vec<(usize, usize, f64)> = active_nodes.iter().map(|&(a, b, v)| (rep[a].min(rep[b]), rep[a].max(rep[b]), v)).collect();
        active.sort_by_key(|e| (e.0, e.1));
        let kkt = r.projected_gradient_norm;
        let mut f = Fitted::new(
            Output::Embedding(embedding),
            Trace::iterative(r.history.clone(), r.iterations, super::pair_dual::pair_stop(&r, self.max_iter, pg0, self.tol), r.message.clone())
                .with_kkt_residual(kkt),
        );
        f.notes.push(format!(
            "objective: {} (minimised F = {:.10e}; history holds F at the start and after every iteration); solver: {} (m = {MEU_MEMORY}, pgtol = tol x {pg0:.3e}, factr = {LBFGSB_FACTR:e}): {} iterations, {} evaluations, {}",
            match self.objective {
                MeuObjective::Likelihood => "exact negative log-likelihood -log p(Y)",
                MeuObjective::Pseudo => "negative pseudo-log-likelihood -sum_i log p(y_i | y_-i)",
            },
            r.f,
            solver_label(self.solver),
            r.iterations,
            r.evaluations,
            r.message
        ));
        f.notes.push(format!(
            "KKT residual ||proj grad||_inf in the scaled variables v_e = w_e phi_e / p = {kkt:.3e} (relative to the start {:.3e})",
            if pg0 > 0.0 { kkt / pg0 } else { 0.0 }
        ));
        let sym_note = match prob.symbolic() {
            Some(s) => format!(
                "; backend {:?}; sparse Cholesky of L + gamma I: {} ordering, nnz(L) = {}, {} supernodes, {:.3e} flops per factorisation",
                prob.backend(),
                s.ordering_name(),
                s.nnz_l() + nc,
                s.n_supernodes(),
                s.flops()
            ),
            None => String::new(),
        };
        f.notes.push(format!(
            "graph: {} edges (symmetrised {}-NN), {} with w > 0 at the end, learned graph has {components} connected component(s){sym_note}",
            prob.edges().len(),
            self.k,
            active.len()
        ));
        if nc < n {
            f.notes.push(format!(
                "{} samples coincide with a K-NN neighbour: merged into {} nodes of the field ({} nodes for {n} samples; the likelihood's limit w -> inf on a pair at distance 0), and embedded at one point per node",
                prob.multiplicity().iter().filter(|&&m| m > 1.0).map(|m| *m as usize).sum::<usize>(),
                prob.multiplicity().iter().filter(|&&m| m > 1.0).count(),
                nc
            ));
        }
        if components > 1 {
            f.notes.push(format!(
                "the learned graph has {components} components, so 0 is an eigenvalue of L of multiplicity {} <= d on 1^perp: the embedding spans the component indicators (up to a rotation within that eigenspace, which distances do not see)",
                components - 1
            ));
        }
        f.notes.push(format!(
            "embedding: bottom eigenvalues lambda_2..lambda_(d+1) of L on 1^perp {:?}; centred kernel eigenvalues 1/(lambda + gamma) {:?}; scaling {}",
            lambda,
            lambda.iter().map(|l| 1.0 / (l + self.gamma)).collect::<Vec<_>>(),
            if self.scaling == MeuScaling::Kpca { "kpca" } else { "unit (columns centred, unit variance)" }
        ));
        f.graph = Some(Graph { n_vertices: n, edges: active });
        Ok(f)
    }
}

pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: NAME,
        summary: "Maximum entropy unfolding: a Gaussian random field p(Y) ∝ |L + gamma I|^(p/2) exp(-tr(Y^T (L + gamma I) Y)/2) on the symmetrised K-NN graph, edge weights w >= 0 by maximum likelihood (sparse Cholesky + selected inversion; or Besag's pseudo-likelihood) with projected L-BFGS; embedding: top-d eigenvectors of the centred (L + gamma I)^-1, computed as the bottom eigenvectors of L on 1^perp. Coincident samples are merged into one node (the likelihood's limit).",
        reference: "Lawrence, A Unifying Probabilistic Perspective for Spectral Dimensionality Reduction, JMLR 13 (2012), §3; MATLAB meu toolbox (SheffieldML/meu: meuCreate, meuOptimise)",
        version: 3,
        output: OutputKind::Embedding,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: false,
        params: Meu::schema(()),
        build: |p| declare::build::<Meu>(NAME, (), p),
    }
}

#[cfg(test)]
mod tests;
