//! Structured projection learning, SPL (Wang, *Probabilistic Dimensionality Reduction via
//! Structure Learning*, §3.3, Algorithm 1).
//!
//! Data `Y` (N x D, samples in rows, centred here), target dimension d, neighbourhood graph `E`
//! (the symmetrised K-NN graph, [`structdr_numerics::neighbours::symmetrised_edges`]), `phi_ij = ||y_i - y_j||^2`.
//! The dual variable is a symmetric non-negative `S` supported on `E`, one value `s_e` per edge.
//! With `L = diag(S 1) - S` and
//!
//! `Q = L + (gamma + 1)/4 I` (sparse, symmetric positive definite for every `S >= 0`),
//!
//! the dual objective (eq. 17 divided out: `(gamma+1) I + 4L = 4Q`, constants dropped) is
//!
//! `f(S) = d/2 log det Q - sum_{i,j} s_ij phi_ij - 1/(4C) ||S||_F^2 - max_{W^T W = I} gamma^2/8 Tr(W^T Y^T Q^-1 Y W)`
//!
//! where the sums run over the full symmetric `S` (each edge twice): `sum_{i,j} s_ij phi_ij = 2
//! sum_e s_e phi_e`, `||S||_F^2 = 2 sum_e s_e^2`. The maximising `W` holds the top-d eigenvectors
//! of `Y^T Q^-1 Y` (eq. 18-19), so the last term is `gamma^2/8` times the sum of its d largest
//! eigenvalues. `f` is concave in `S` (log det is concave, the last term is a maximum of matrix
//! fractional functions, which are convex), and its (super)gradient per edge `e = (i, j)` is
//! eq. (20):
//!
//! `df/ds_e = d/2 Tr(Q^-1 A_e) + gamma^2/8 ||z_i - z_j||^2 - s_e / C - 2 phi_e`,
//! `Tr(Q^-1 A_e) = (Q^-1)_ii + (Q^-1)_jj - 2 (Q^-1)_ij`, `Z = Q^-1 Y W`
//!
//! (eq. 20's `1/2 Tr(Q^-1 (d I + gamma^2/4 P) A_e)` with `P = Y W W^T Y^T Q^-1` written out).
//! Algorithm 1 ascends it by projected subgradient steps `s <- max(0, s + (1/t) df/ds)` from
//! `S = 0`. The embedding is the MAP estimate `X = (gamma/4) Q^-1 Y W` (eq. 22); for `gamma = 0`
//! that is zero and the embedding is kernel PCA on `Sigma = (4L + I)^-1 = Q^-1 / 4` (eq. 23).
//!
//! Cost per iteration: one supernodal sparse Cholesky of `Q` on the fixed pattern of the graph
//! ([`structdr_linalg::sparse`], ordering (AMD on K-NN graphs) and supernodes chosen once), `log det Q`, the half solve `L^-1 P Y` (N x D),
//! the D x D eigenproblem (or, when D > N, the N x N Gram form `B B^T` with `B = L^-1 P Y`:
//! the same non-zero eigenvalues, `W = B^T U diag(mu)^-1/2`), the solve `Q^-1 Y W` and the
//! selected inversion of `Q` for exactly the diagonal and edge entries of `Q^-1` that eq. (20)
//! needs. No dense N x N matrix is formed, except the kernel of the final `gamma = 0` KPCA and
//! the Gram matrix of the D > N case.
//!
//! Solvers (`solver`):
//! - `projected` (default) / `lbfgsb`: the dual solved to its optimum as the bound-constrained
//!   problem `min_{s >= 0} -f(s)` (bounds `[0, inf)`) by the two-metric projected L-BFGS or the
//!   Fortran L-BFGS-B of [`structdr_numerics::optim`], the solvers of MPME and ESL, from `S = 0`.
//!   Stop when the KKT residual `||proj grad||_inf` (`proj g_e = max(0, s_e + g_e) - s_e`) falls
//!   below `tol` times its value at `S = 0` (converged), or after `max_iter` iterations. The
//!   projected solver has no relative-objective test (version 4): near the optimum the Armijo
//!   decrease is below the rounding of `log det Q`, and the approximate Wolfe test
//!   ([`crate::structure::pair_dual::F_NOISE`]) carries it on to the KKT target; version 3 stopped
//!   when `f` changed by under `1e3 eps_mach`, short of `tol` (satimage's best cell at a relative
//!   residual of 5e-5 against 1e-7). L-BFGS-B keeps that test (`factr = 1e3`), reported as a
//!   stall when it ends a run above `tol`. Since version 5 the projected solver is
//!   diagonally preconditioned: its limited-memory matrix starts from `gamma D^-1` with
//!   `D = diag(c_e)`, the curvature of `-f` along each edge with `W` held fixed,
//!   `c_e = d/2 r_e^2 + gamma^2/4 r_e ||z_i - z_j||^2 + 1/C`, `r_e = tr(Q^-1 A_ij)` (the same
//!   entries of `Q^-1` the gradient reads, so it costs nothing). The `r_e` of a K-NN graph spread
//!   over orders of magnitude once `S` is large (C = 1e3), which the scalar scaling cannot follow:
//!   version 4 left 24 of Table 1's 240 cells at `max_iter = 3000` (coil20, usps; relative
//!   residuals up to 3.5e-4), and needed 300-1100 iterations on the others; version 5 meets
//!   `tol` everywhere in tens to about a hundred and fifty.
//! - `subgradient`: Algorithm 1 literally, projected steps `s <- max(0, s + (1/t) df/ds)` from
//!   `S = 0`, stopped when `|f_t - f_{t-1}| <= tol max(1, |f_t|)` or after `max_iter` steps. Kept
//!   for parity: the first step overshoots (the gradient at 0 is `4d - 2 phi`, so every short
//!   edge jumps to `~4d`) and the harmonic steps return too slowly; on vehicle (K = 5, C = 1e3,
//!   gamma = 1e-3) it is far from the optimum after thousands of steps (docs/parity/spl.md).
//!
//! With `gamma = 0` the embedding is KPCA on `(4L + I)^-1`, whose top eigenvalue 1 is tied `c - 1`
//! times when `S` has `c` connected components; since version 6 more than `dim + 1` components are
//! `degenerate` ([`super::kernel_top_is_untied`]), as for MPME and MEU: the embedding would be
//! `dim` directions of the tied eigenspace picked by the eigensolver's rounding.
//!
//! The trace records `f` (maximised) at `S = 0` and after every iteration, and the final KKT
//! residual `||proj grad||_inf`.
//!
//! The module holds the method's contract: the parameters ([`Spl`], [`SplSolver`]), the fit
//! (input checks, the solve, the embedding and the notes) and the registry entry. The dual
//! problem, its sparse and dense backends, the two solves and the embedding at `S` are in
//! `solver.rs`, re-exported here; the unit tests are in `tests.rs`.

use super::pair_dual::{solver_label, solver_memory, F_NOISE, LBFGSB_FACTR};
use crate::api::declare::{self, declare_params, Declared, ParamChoice};
use crate::api::info::{choice, dim, float_in, int, MethodInfo};
use crate::api::params::{closed, open};
use crate::api::OutputKind;
use crate::api::{check_input, numerics, Embedder, FitInput, Fitted, Graph, MethodError, Output, ParamMap, Result, Trace};
use ndarray::{ArrayView2, Axis};
use structdr_numerics::neighbours::{knn, symmetrised_edges};
use structdr_numerics::optim::Solver;

mod solver;

use solver::NAME;
pub use solver::{Backend, SplEval, SplProblem, DENSE_FLOP_RATIO, DENSE_MIN_N};

declare_params! {
    /// SPL with the parameters of Algorithm 1.
    #[derive(Debug, Clone)]
    pub struct Spl {
        /// Target dimension d.
        pub dim: usize = dim(),
        /// Neighbours per sample of the K-NN graph (symmetrised), `1 <= k < N`.
        pub k: usize = int("k", 1, 10, "neighbours per sample of the K-NN graph that supports S (symmetrised: i ~ j if j in kNN(i) or i in kNN(j))"),
        /// Distance-violation penalty `C > 0` (`inf`: no violation allowed; the `1/(4C) ||S||^2` term vanishes).
        pub c: f64 = float_in("C", open(0.0), closed(f64::INFINITY), 1e3, "distance-violation penalty C > 0: the dual carries -||S||_F^2/(4C) (xi_ij = s_ij/(2C)); inf = no violation allowed"),
        /// Noise precision `gamma >= 0`; `0` embeds by KPCA on `(4L + I)^-1`.
        pub gamma: f64 = float_in("gamma", closed(0.0), open(f64::INFINITY), 1e-3, "noise precision gamma >= 0 of y = W x + eps; 0 = embed by KPCA on (4L + I)^-1"),
        /// Iteration limit of the solver.
        pub max_iter: usize = int("max_iter", 0, 3000, "iteration limit of the solver (iterations of projected / lbfgsb, steps of subgradient)"),
        /// Tolerance of the solver's stopping rule (module doc: relative KKT residual for the
        /// bounded solvers, relative objective change for `subgradient`).
        pub tol: f64 = float_in("tol", closed(0.0), open(f64::INFINITY), 1e-7, "projected / lbfgsb: stop when the KKT residual ||proj grad||_inf <= tol x its value at S = 0; subgradient: stop when |f_t - f_{t-1}| <= tol max(1, |f_t|)"),
        /// How the dual is maximised.
        pub solver: SplSolver = choice("solver", SPL_SOLVER_NAMES, "projected", "dual solver: projected = two-metric projected L-BFGS on s >= 0 (m = 5, converges); lbfgsb = Fortran L-BFGS-B 3.0 (m = 10); subgradient = Algorithm 1's steps 1/t from S = 0 (the paper's; does not reach the optimum on real data)"),
    }
}

/// How SPL maximises its dual (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplSolver {
    /// Algorithm 1's projected subgradient steps with step size `1/t` (does not converge on
    /// real data; kept for parity).
    Subgradient,
    /// `min_{s >= 0} -f(s)` by a bound-constrained quasi-Newton solver (converges to the optimum).
    Bounded(Solver),
}

/// Values of SPL's `solver` parameter.
pub const SPL_SOLVER_NAMES: &[&str] = &["projected", "lbfgsb", "subgradient"];

impl SplSolver {
    /// The parameter value naming this solver.
    pub fn name(self) -> &'static str {
        match self {
            SplSolver::Subgradient => "subgradient",
            SplSolver::Bounded(s) => s.name(),
        }
    }
    /// Parses [`SplSolver::name`].
    pub fn from_name(s: &str) -> Option<SplSolver> {
        if s == "subgradient" {
            Some(SplSolver::Subgradient)
        } else {
            Solver::from_name(s).map(SplSolver::Bounded)
        }
    }
}

impl ParamChoice for SplSolver {
    fn from_name(name: &str) -> Option<SplSolver> {
        SplSolver::from_name(name)
    }
    fn name(&self) -> &'static str {
        SplSolver::name(*self)
    }
}

impl Spl {
    fn validate(&self, x: &ArrayView2<f64>) -> Result<()> {
        check_input(NAME, x, 2)?;
        let (n, dd) = x.dim();
        let bad = |reason: String| Err(MethodError::Input { method: NAME, reason });
        if self.k == 0 || self.k >= n {
            return bad(format!("too few points for k neighbours: N = {n} samples, k = {} (need 1 <= k < N)", self.k));
        }
        if self.dim == 0 || self.dim >= n {
            return bad(format!("dim = {} must be in [1, N - 1] = [1, {}]", self.dim, n - 1));
        }
        if self.gamma > 0.0 && self.dim > dd {
            return bad(format!("dim = {} exceeds the data dimension D = {dd} (W is D x d with orthonormal columns)", self.dim));
        }
        let mean = x.mean_axis(Axis(0)).expect("n > 0");
        if x.rows().into_iter().all(|r| r == mean) {
            return bad("constant data: every sample is the same point".into());
        }
        Ok(())
    }
}

impl Embedder for Spl {
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
        let knn = knn(x, self.k).map_err(numerics(NAME))?;
        let edges = symmetrised_edges(&knn);
        if self.c.is_infinite() && matches!(self.solver, SplSolver::Bounded(_)) {
            // d/2 log det Q grows like log s_e on an edge with phi_e = 0 and nothing bounds it
            if let Some(&(i, j, _)) = edges.iter().find(|e| e.2 == 0.0) {
                return Err(MethodError::Input {
                    method: NAME,
                    reason: format!("samples {i} and {j} coincide (phi = 0): with C = inf the dual is unbounded; use a finite C or remove duplicates"),
                });
            }
        }
        let prob = SplProblem::new(x, &edges, self.dim, self.gamma, self.c)?;
        let (s, eval, history, iterations, stop, message) = match self.solver {
            SplSolver::Subgradient => {
                let (s, eval, history, iterations, stop) = prob.solve_subgradient(self.max_iter, self.tol)?;
                (s, eval, history, iterations, stop, String::new())
            }
            SplSolver::Bounded(solver) => prob.solve_bounded(solver, self.max_iter, self.tol)?,
        };
        let kkt = SplProblem::kkt_residual(&s, &eval.grad);
        let all_zero = s.iter().all(|&v| v == 0.0);
        if all_zero && self.gamma == 0.0 {
            // Q = I/4: the kernel (4L + I)^-1 = I has one N-fold eigenvalue, so KPCA has no answer
            return Err(MethodError::Degenerate {
                method: NAME,
                reason: format!(
                    "S = 0 is where the solver stopped (every edge's gradient 4d/(gamma+1) - 2 phi_ij <= 0 at S = 0 when the squared K-NN distances exceed {:.3}), so the gamma = 0 embedding, KPCA on (4L + I)^-1 = I, is undefined (all eigenvalues tie); rescale the data (squared K-NN distances of order d) or use gamma > 0 (scaled PCA at S = 0)",
                    2.0 * self.dim as f64 / (self.gamma + 1.0)
                ),
            });
        }
        let active: Vec<(usize, usize, f64)> = prob.edges().iter().zip(&s).filter(|(_, &v)| v > 0.0).map(|(&(i, j), &v)| (i, j, v)).collect();
        if self.gamma == 0.0 {
            // more than dim + 1 components of S tie the kernel's top eigenvalue beyond dim: KPCA
            // would keep dim directions of the tied eigenspace picked by rounding (since version 6;
            // letter, K = 5: 1-NN 0.795 on one machine's kernels, 0.761 on another's, f equal to 13 digits)
            let names = super::TiedKernel { graph: "S", kernel: "(4L + I)^-1", top: "1" };
            super::kernel_top_is_untied(NAME, n, &active, self.dim, names, "use a larger k, C or dim, or gamma > 0")?;
        }
        let embedding = prob.embedding(&s, &eval)?;
        let mut f = Fitted::new(Output::Embedding(embedding), Trace::iterative(history, iterations, stop, message).with_kkt_residual(kkt));
        f.notes.push(match self.solver {
            SplSolver::Subgradient => format!("solver: Algorithm 1 projected subgradient steps 1/t from S = 0: {iterations} steps"),
            SplSolver::Bounded(b) => format!(
                "solver: {} on -f over s >= 0 (m = {}, pgtol = tol x KKT residual at S = 0, {}): {iterations} iterations",
                solver_label(b),
                solver_memory(b),
                match b {
                    Solver::Lbfgsb => format!("factr = {LBFGSB_FACTR:e}"),
                    Solver::Projected => format!("no relative-reduction test; approximate Wolfe steps where f is within {F_NOISE:e} relative"),
                }
            ),
        });
        f.notes.push(format!(
            "graph: {} edges (symmetrised {}-NN), {} with s > 0 at the end; backend {:?}; sparse Cholesky of Q: {} ordering, nnz(L) = {} ({} supernodes, {:.3e} flops per factorisation)",
            prob.n_edges(),
            self.k,
            active.len(),
            prob.backend(),
            prob.symbolic().ordering_name(),
            prob.symbolic().nnz_l() + n,
            prob.symbolic().n_supernodes(),
            prob.symbolic().flops()
        ));
        f.notes.push(format!(
            "final dual objective f = {:.10e} (maximised; history holds f at S_0 = 0 and after every iteration), KKT residual ||proj grad||_inf = {:.3e}, log det Q = {:.6e}",
            eval.objective,
            kkt,
            eval.log_det
        ));
        if all_zero {
            f.notes.push(
                "S = 0 at the end: no edge pays for itself at this data scale; the embedding is PCA scaled by gamma/(gamma+1) (eq. 22 with Q = (gamma+1)/4 I)"
                    .into(),
            );
        }
        if !eval.top_eigenvalues.is_empty() {
            f.notes.push(format!("top-{} eigenvalues of Y^T Q^-1 Y: {:?}", self.dim, eval.top_eigenvalues));
        } else {
            f.notes.push("gamma = 0: embedding by KPCA on (4L + I)^-1 (dense N x N kernel)".into());
        }
        f.graph = Some(Graph { n_vertices: n, edges: active });
        Ok(f)
    }
}

pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: NAME,
        summary: "Structured projection learning: the dual f(S) = d/2 log det Q - <S, Phi> - ||S||^2/(4C) - gamma^2/8 sum top-d eig(Y^T Q^-1 Y), Q = L_S + (gamma+1)/4 I on the K-NN graph, maximised over S >= 0 (projected L-BFGS by default, or Algorithm 1's subgradient steps); X = (gamma/4) Q^-1 Y W, or KPCA on (4L + I)^-1 when gamma = 0.",
        reference: "Wang, Probabilistic Dimensionality Reduction via Structure Learning (TPAMI 2019), §3.3, Algorithm 1, eqs. (17)-(23)",
        version: 6,
        output: OutputKind::Embedding,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: false,
        params: Spl::schema(()),
        build: |p| declare::build::<Spl>(NAME, (), p),
    }
}

#[cfg(test)]
mod tests;
