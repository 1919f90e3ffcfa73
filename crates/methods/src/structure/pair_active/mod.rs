//! An active-set solver for the pair dual of MPME (002 eq. 13) and ESL (001 eq. 20):
//!
//! `min_w f(w) = -h log det(a I + b L(W)) + sum_{i<j} l_ij w_ij`,  `0 <= w_ij <= u`,
//!
//! (MPME: `h = d/2, a = lambda, b = 1, l = phi / 2, u = 4C`; ESL: `h = m/2, a = 1, b = 4,
//! l = 2 lambda (1 - pbar)`, `u = C`), whose gradient is
//! `g_ij = l_ij - h b r_ij`, `r_ij = (e_i - e_j)^T Q^-1 (e_i - e_j)`, `Q = a I + b L(W)`.
//!
//! Why: the optimum of these problems is usually a sparse graph (0.1-0.8% of the pairs in the
//! MPME cells of Table 1, ~2-3 N edges in ESL's sparse cells), yet the full-space solvers of
//! [`super::pair_dual`] pay a dense `dpotrf` + `dpotri` (N^3 flops) at every one of hundreds of
//! evaluations. As in QUIC / BigQUIC for the sparse inverse covariance (Hsieh et al. 2011, 2014),
//! the work is split:
//!
//! 1. **Inner problem on a working set `S`** of pairs (the others held at their bound 0):
//!    projected L-BFGS ([`structdr_numerics::optim`]) on `|S|` variables, each evaluation one
//!    supernodal sparse Cholesky of `Q` on the pattern of `S` (`log det Q`) plus its selected
//!    inversion ([`structdr_linalg::sparse`]), which gives `Q^-1` on the diagonal and on every
//!    pair of `S` exactly: all that `g_S` needs. Cost: `O(flops(L))` instead of `N^3`.
//! 2. **Exact optimality check of the pairs outside `S`**: `Q^-1` column block by column block
//!    from the sparse factor (BLAS-3 triangular solves, `4 nnz(L)` flops per column, blocks in
//!    parallel), every `r_ij` and so every `g_ij` exact. A pair at its bound 0 violates the
//!    KKT conditions when `g_ij < 0`; the residual of the whole problem is
//!    `max(||proj g_S||_inf, max_{ij not in S} min(-g_ij, u)^+)`, the same quantity the
//!    full-space solvers report, so "converged" means the same thing.
//! 3. **Update**: pairs of `S` at 0 with `g > 0` leave; for every sample the
//!    `max(`[`ActiveOptions::per_point`]`, mean degree of S)` most violating pairs (violation above
//!    the target) join, so a working set can double per update when the optimum is dense.
//!    The inner problem restarts from the current weights (warm start; the added pairs at 0).
//!
//! 4. **Dense regime**: a working set that is too dense for the sparse factor to pay
//!    ([`DENSE_FLOP_RATIO`]) is evaluated by dense `dpotrf` + `dpotri`; when it also holds
//!    [`DENSE_PAIR_FRACTION`] of all pairs (ESL at lambda_v <= 0.5 weights 13-99% of them;
//!    with [`ActiveOptions::hand_over_sparse`], whatever its factor), or
//!    when a check finds [`EARLY_PAIR_FRACTION`] of all pairs in or wanting into the working set,
//!    working sets no longer save anything and the solver hands over, from the current weights, to
//!    projected Newton over all pairs ([`super::pair_newton`]), whose model of the Hessian takes
//!    tens of dense evaluations where L-BFGS took hundreds.
//!
//! It stops when the full residual is at most `tol_abs` (converged), when the inner iterations
//! reach `max_iter` (the cap, counted over all inner solves), or when an inner solve makes no
//! progress and no pair joins (stalled).
//!
//! Deterministic: the column blocks are reduced in a fixed order and ties are broken by pair
//! index, so the result does not depend on the thread count.

use super::pair_dual::{n_pairs, pair_index, F_NOISE};
use super::pair_newton::{projected_gradient_inf, solve_newton, NewtonOptions, NewtonProfile, NEWTON_MEMORY};
use rayon::prelude::*;
use structdr_linalg::sparse::{Ordering, SparseError, SymbolicCholesky};
use structdr_numerics::optim::{minimize, projected_gradient_norm, projected_lbfgs, BoundedOptions, Solver};

/// A working set is factored densely when `DENSE_FLOP_RATIO x flops(L) > N^3` (a dense
/// evaluation is `N^3` flops at the GEMM rate; the supernodal factor and its selected inversion,
/// about 3 `flops(L)`, run several times slower per flop on small fronts). Same rule as SPL's
/// sparse/dense backend choice. Below [`DENSE_MIN_N`] the sparse factor is always kept.
pub const DENSE_FLOP_RATIO: f64 = 10.0;

/// Problems this small always stay on the sparse factor (both are fast).
pub const DENSE_MIN_N: usize = 400;

/// A working set factored densely that holds at least this fraction of all pairs hands the
/// problem over to projected Newton over all pairs ([`super::pair_newton`]). Its Hessian model
/// is good when the optimum weights many pairs with near-uniform costs (ESL at small lambda_v:
/// 13-99% of the pairs; 16 iterations where projected L-BFGS takes 37 on the test problems, 28-69
/// on Table 1's dense ESL cells where L-BFGS took 400-750) and poor on a sparse optimum whose `Q^-1` is far
/// from diagonal (an MPME-shaped test problem with 6% of the pairs weighted: 1154 iterations
/// against 704), which stays with L-BFGS on dense evaluations.
pub const DENSE_PAIR_FRACTION: f64 = 0.1;

/// A check that finds this fraction of all pairs in the working set or violating outside it
/// hands over at once (before the working sets grow into dense factors). The count after the
/// first, loose inner solve overstates the optimum's size, hence the high bar; measured at the
/// first check (u = 30): ESL vehicle lambda_v = 0.1 100% (optimum 94% of the pairs), segment 0.5
/// 89% (13%); below the bar vehicle 0.5 70% (14%) and the 2-D Y-and-b set at 0.6 57% (2.5%,
/// where projected Newton took 7 s against 0.9 s on working sets), at 0.8 1.6%. A heuristic:
/// Y-and-b at 0.6 with u = 40, 50 (3-4% weighted) is above the bar and hands over, 2.0-2.2 s
/// against 0.6-0.7 s on working sets (the same optimum either way).
pub const EARLY_PAIR_FRACTION: f64 = 0.8;

/// Restarts of a stalled inner solve on an unchanged working set before the run is called stalled.
const MAX_RESTARTS: usize = 3;

/// Cap on the working-set updates (a guard against cycling; typical runs take 3 to 10).
const MAX_UPDATES: usize = 100;

/// The pair dual `f(w) = -h log det(a I + b L(W)) + sum_k lin_k w_k`, `0 <= w_k <= upper`
/// (module doc), `lin` one entry per pair in the storage order of [`super::pair_dual::for_each_pair`].
#[derive(Debug, Clone, Copy)]
pub struct PairDual<'a> {
    /// Number of samples N.
    pub n: usize,
    /// `a > 0` of `Q = a I + b L`.
    pub a: f64,
    /// `b > 0` of `Q = a I + b L`.
    pub b: f64,
    /// `h > 0`, the weight of `-log det Q`.
    pub h: f64,
    /// Linear coefficients, one per pair.
    pub lin: &'a [f64],
    /// Upper bound of every weight (`inf` allowed).
    pub upper: f64,
}

/// Options of [`solve_active`].
#[derive(Debug, Clone, Copy)]
pub struct ActiveOptions {
    /// Absolute target of the full KKT residual `||proj grad f||_inf`.
    pub tol_abs: f64,
    /// Cap on the inner (projected L-BFGS) iterations, summed over the working-set updates.
    pub max_iter: usize,
    /// Pairs that may join the working set per sample and update (the most violating).
    pub per_point: usize,
    /// Limited-memory size of the inner solver.
    pub memory: usize,
    /// Hand over when a working set holds [`DENSE_PAIR_FRACTION`] of all pairs whatever its
    /// factor (step 4 of the module doc), not only when the factor is also too dense for the
    /// sparse path. For problems whose optimum weights many pairs at near-uniform costs (ESL),
    /// where the Hessian model of [`super::pair_newton`] is good: a working set of 14-23% of the
    /// pairs on a sparse factor took Table 1's ESL cells at lambda_v = 0.5 through 400-760
    /// L-BFGS iterations (letter u = 20: 1170 s), where the handed-over cells took 60-90 (ESL
    /// version 3, docs/parity/esl.md). Off by default: on a sparse optimum far from the model
    /// (MPME's shape) L-BFGS stays faster.
    pub hand_over_sparse: bool,
    /// Precondition the inner solver with the curvature of `f` along each pair of the working
    /// set, `h b^2 r_ij^2` (the exact second derivative `d^2 f / dw_ij^2`, since
    /// `d r_ij / d w_ij = -b r_ij^2`): the limited-memory matrix starts from `gamma D^-1`
    /// ([`structdr_numerics::optim::projected_lbfgs::minimize_preconditioned`]). On MPME's
    /// sparse optima `r_ij` spans orders of magnitude (inside well-connected groups it shrinks
    /// like `1 / w`) and the scalar start of L-BFGS fits one scale: Table 1's MPME cells took
    /// 106-10,546 inner iterations without it, 39-147 with it (docs/parity/mpme.md, version 4). Off by default:
    /// on ESL's cells it did not help (pendigits lambda_v = 0.5: 256 iterations against 237).
    pub precondition: bool,
}

impl ActiveOptions {
    /// The defaults for a target `tol_abs` and a cap `max_iter`.
    pub fn new(tol_abs: f64, max_iter: usize) -> ActiveOptions {
        ActiveOptions { tol_abs, max_iter, per_point: 10, memory: 10, hand_over_sparse: false, precondition: false }
    }

    /// With the choices a method makes for its problem's shape.
    pub fn shaped(self, shape: ActiveShape) -> ActiveOptions {
        ActiveOptions { hand_over_sparse: shape.hand_over_sparse, precondition: shape.precondition, ..self }
    }
}

/// The options of [`ActiveOptions`] that follow the shape of a method's optimum, fixed by the
/// method (MPME: sparse, preconditioned; ESL: many near-uniform pairs, handed over).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ActiveShape {
    /// [`ActiveOptions::hand_over_sparse`].
    pub hand_over_sparse: bool,
    /// [`ActiveOptions::precondition`].
    pub precondition: bool,
}

/// Seconds spent in the parts of [`solve_active`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ActiveProfile {
    /// Symbolic analyses (ordering, supernodes) of the working sets.
    pub analyse: f64,
    /// Inner solves: sparse factorisations, selected inversions and the solver's own work.
    pub inner: f64,
    /// Full-gradient checks (factorisation plus the block solves for `Q^-1`).
    pub check: f64,
    /// The projected Newton solve after a hand-over ([`super::pair_newton`]), if any.
    pub newton: NewtonProfile,
}

/// The outcome of [`solve_active`]: the weights on the final working set.
#[derive(Debug, Clone)]
pub struct ActiveResult {
    /// The working set: pairs `(i, j)`, `i < j`, ascending in storage order.
    pub pairs: Vec<(usize, usize)>,
    /// Their weights (every other pair is 0).
    pub w: Vec<f64>,
    /// `f(w)`.
    pub f: f64,
    /// The full KKT residual `||proj grad f||_inf` over all N(N-1)/2 pairs, from the last check.
    pub kkt: f64,
    /// Its part over the working set and over the other pairs.
    pub kkt_inside: f64,
    /// See [`Self::kkt_inside`].
    pub kkt_outside: f64,
    /// Whether `kkt <= tol_abs`.
    pub converged: bool,
    /// Inner iterations and evaluations, summed.
    pub iterations: usize,
    /// See [`Self::iterations`].
    pub evaluations: usize,
    /// Working-set updates (full checks).
    pub checks: usize,
    /// Largest working set and largest sparse `nnz(L)` met.
    pub max_working_set: usize,
    /// See [`Self::max_working_set`].
    pub max_nnz_l: usize,
    /// Why it stopped.
    pub message: String,
    /// Working sets whose factor was too dense for the sparse path ([`DENSE_FLOP_RATIO`]) and
    /// were evaluated by dense `dpotrf` + `dpotri` instead (the hand-over's set included).
    pub dense_sets: usize,
    /// Iterations and factorisations of the projected Newton solve the solver handed over to
    /// ([`DENSE_PAIR_FRACTION`]; included in [`Self::iterations`] and [`Self::evaluations`]).
    pub newton_iterations: usize,
    /// See [`Self::newton_iterations`].
    pub newton_evaluations: usize,
    /// `f` at the start and after every inner iteration (non-increasing: the working set only
    /// changes where the weights are 0, which leaves `f` unchanged).
    pub history: Vec<f64>,
    /// Where the time went.
    pub profile: ActiveProfile,
}

impl ActiveResult {
    /// The weights as the packed vector of all N(N-1)/2 pairs.
    pub fn packed(&self, n: usize) -> Vec<f64> {
        let mut w = vec![0.0; n_pairs(n)];
        for (&(i, j), &v) in self.pairs.iter().zip(&self.w) {
            w[pair_index(n, i, j)] = v;
        }
        w
    }
}

fn sparse_message(e: SparseError) -> String {
    e.to_string()
}

impl PairDual<'_> {
    /// The gradient at `w = 0` (`Q = a I`, `r_ij = 2 / a`): `l_ij - 2 h b / a`.
    fn initial_gradient(&self, k: usize) -> f64 {
        self.lin[k] - 2.0 * self.h * self.b / self.a
    }

    /// `Q`'s diagonal and edge values for weights `w` on `pairs`.
    fn q_values(&self, pairs: &[(usize, usize)], w: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let mut diag = vec![self.a; self.n];
        let mut off = Vec::with_capacity(pairs.len());
        for (&(i, j), &v) in pairs.iter().zip(w) {
            diag[i] += self.b * v;
            diag[j] += self.b * v;
            off.push(-self.b * v);
        }
        (diag, off)
    }

    /// `f` and `g_S` on the working set: one sparse factorisation and selected inversion, or
    /// one dense `dpotrf` + `dpotri` (module doc). With `curvature` (as long as `g`), also
    /// `d^2 f / dw_ij^2 = h b^2 r_ij^2` per pair ([`ActiveOptions::precondition`]).
    fn evaluate(&self, ws: &WorkingSet, w: &[f64], g: &mut [f64], mut curvature: Option<&mut [f64]>) -> Result<f64, String> {
        let hb = self.h * self.b;
        let hbb = hb * self.b;
        let linear: f64 = ws.lin.iter().zip(w).map(|(l, v)| l * v).sum();
        let mut write = |e: usize, r: f64| {
            g[e] = ws.lin[e] - hb * r;
            if let Some(c) = curvature.as_deref_mut() {
                c[e] = hbb * r * r;
            }
        };
        match &ws.factor {
            Factor::Sparse(sym) => {
                let (diag, off) = self.q_values(&ws.pairs, w);
                let fac = sym.factor(&diag, &off).map_err(sparse_message)?;
                let si = fac.selected_inverse();
                let zd = si.diagonal();
                let ze = si.edge_values();
                for (e, &(i, j)) in ws.pairs.iter().enumerate() {
                    write(e, zd[i] + zd[j] - 2.0 * ze[e]);
                }
                Ok(-self.h * fac.log_det() + linear)
            }
            Factor::Dense => {
                let (ld, z) = self.dense_inverse(&ws.pairs, w)?;
                let n = self.n;
                for (e, &(i, j)) in ws.pairs.iter().enumerate() {
                    write(e, z[i * n + i] + z[j * n + j] - 2.0 * z[i * n + j]);
                }
                Ok(-self.h * ld + linear)
            }
        }
    }

    /// `log det Q` and `Q^-1` (row-major N x N; only the upper triangle is set) for weights `w`
    /// on `pairs`, by `dpotrf` + `dpotri` in place.
    fn dense_inverse(&self, pairs: &[(usize, usize)], w: &[f64]) -> Result<(f64, Vec<f64>), String> {
        let n = self.n;
        let (diag, off) = self.q_values(pairs, w);
        let mut q = vec![0.0; n * n];
        for (i, &d) in diag.iter().enumerate() {
            q[i * n + i] = d;
        }
        for (&(i, j), &v) in pairs.iter().zip(&off) {
            q[i * n + j] = v;
        }
        let ld = structdr_linalg::log_det_inverse_upper(&mut q, n).map_err(|e| e.to_string())?;
        Ok((ld, q))
    }

    /// The full check at `w` on the working set (module doc, step 2): the largest violation
    /// outside it, per sample the `allowance` most violating outside pairs above `floor`, and how
    /// many outside pairs violate by more than `floor` in all.
    fn check_outside(&self, ws: &WorkingSet, in_set: &[usize], w: &[f64], allowance: usize, floor: f64) -> Result<(f64, Vec<Violation>, usize), String> {
        const BLOCK: usize = 64;
        let n = self.n;
        let blocks: Vec<usize> = (0..n.div_ceil(BLOCK)).collect();
        let scan = |c0: usize, c1: usize, zd: &[f64], col: &dyn Fn(usize, usize) -> f64| {
            let mut worst = 0.0f64;
            let mut found = Vec::new();
            let mut column: Vec<Violation> = Vec::new();
            // every violating pair is met in both of its columns
            let mut met_twice = 0usize;
            for c in c0..c1 {
                column.clear();
                self.scan_column(c, zd, in_set, |i| col(i, c), floor, &mut worst, &mut column);
                met_twice += column.len();
                if column.len() > allowance {
                    column.select_nth_unstable_by(allowance, |a, b| b.amount.total_cmp(&a.amount).then(a.k.cmp(&b.k)));
                    column.truncate(allowance);
                }
                found.extend_from_slice(&column);
            }
            (worst, found, met_twice)
        };
        let per_block: Vec<(f64, Vec<Violation>, usize)> = match &ws.factor {
            Factor::Sparse(sym) => {
                let (diag, off) = self.q_values(&ws.pairs, w);
                let fac = sym.factor(&diag, &off).map_err(sparse_message)?;
                let zd = fac.selected_inverse().diagonal();
                blocks
                    .par_iter()
                    .map(|&blk| {
                        let (c0, c1) = (blk * BLOCK, ((blk + 1) * BLOCK).min(n));
                        // columns c0..c1 of Q^-1 (row i holds (Q^-1)_{i, c0..c1})
                        let x = fac.inverse_columns(c0, c1);
                        scan(c0, c1, &zd, &|i, c| x[[i, c - c0]])
                    })
                    .collect()
            }
            Factor::Dense => {
                let (_, mut z) = self.dense_inverse(&ws.pairs, w)?;
                for i in 0..n {
                    for j in 0..i {
                        z[i * n + j] = z[j * n + i];
                    }
                }
                let zd: Vec<f64> = (0..n).map(|i| z[i * n + i]).collect();
                // Q^-1 is symmetric: column c is row c, contiguous
                blocks.par_iter().map(|&blk| scan(blk * BLOCK, ((blk + 1) * BLOCK).min(n), &zd, &|i, c| z[c * n + i])).collect()
            }
        };
        let mut worst = 0.0f64;
        let mut all = Vec::new();
        let mut met_twice = 0usize;
        for (wb, f, m) in per_block {
            worst = worst.max(wb);
            all.extend(f);
            met_twice += m;
        }
        all.sort_by_key(|v| v.k);
        all.dedup_by_key(|v| v.k);
        Ok((worst, all, met_twice / 2))
    }

    /// The pairs `(c, i)`, `i != c`, outside the working set whose gradient
    /// `l - h b ((Q^-1)_ii + (Q^-1)_cc - 2 (Q^-1)_ic)` is negative (`col(i) = (Q^-1)_ic`): the
    /// largest violation `min(-g, u)` into `worst`, those above `floor` into `out`.
    #[allow(clippy::too_many_arguments)]
    fn scan_column(&self, c: usize, zd: &[f64], in_set: &[usize], col: impl Fn(usize) -> f64, floor: f64, worst: &mut f64, out: &mut Vec<Violation>) {
        let n = self.n;
        let hb = self.h * self.b;
        for i in 0..n {
            if i == c {
                continue;
            }
            let k = if i < c { pair_index(n, i, c) } else { pair_index(n, c, i) };
            let g = self.lin[k] - hb * (zd[i] + zd[c] - 2.0 * col(i));
            if g >= 0.0 || in_set.binary_search(&k).is_ok() {
                continue;
            }
            let amount = (-g).min(self.upper);
            *worst = worst.max(amount);
            if amount > floor {
                out.push(Violation { k, amount });
            }
        }
    }
}

/// How `Q` is factored on a working set.
enum Factor {
    /// Supernodal sparse Cholesky on the working set's pattern, with selected inversion.
    Sparse(Box<SymbolicCholesky>),
    /// Dense `dpotrf` + `dpotri` (the working set's factor is too dense to pay).
    Dense,
}

/// A working set: its pairs, their linear coefficients and the factorisation in use.
struct WorkingSet {
    pairs: Vec<(usize, usize)>,
    lin: Vec<f64>,
    factor: Factor,
}

/// One pair outside the working set that violates the optimality conditions.
#[derive(Debug, Clone, Copy)]
struct Violation {
    k: usize,
    amount: f64,
}

/// The initial working set: for every sample the `per_point` pairs with the most negative
/// gradient at `w = 0` (i.e. the smallest `l_ij`); none when `w = 0` is already optimal.
fn initial_set(p: &PairDual, per_point: usize) -> Vec<usize> {
    let n = p.n;
    let mut chosen: Vec<usize> = (0..n)
        .into_par_iter()
        .map(|i| {
            let mut cand: Vec<(f64, usize)> = (0..n)
                .filter(|&j| j != i)
                .map(|j| {
                    let k = if i < j { pair_index(n, i, j) } else { pair_index(n, j, i) };
                    (p.initial_gradient(k), k)
                })
                .filter(|&(g, _)| g < 0.0)
                .collect();
            if cand.len() > per_point {
                cand.select_nth_unstable_by(per_point, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                cand.truncate(per_point);
            }
            cand.into_iter().map(|(_, k)| k).collect::<Vec<_>>()
        })
        .flatten()
        .collect();
    chosen.sort_unstable();
    chosen.dedup();
    chosen
}

/// The pair `(i, j)` of storage index `k` (inverse of [`pair_index`]).
fn pair_of(n: usize, k: usize) -> (usize, usize) {
    // row i starts at s(i) = i n - i (i + 1) / 2; find the largest i with s(i) <= k
    let (mut lo, mut hi) = (0usize, n - 1);
    while lo + 1 < hi {
        let mid = (lo + hi) / 2;
        if mid * n - mid * (mid + 1) / 2 <= k {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let i = lo;
    let j = k - (i * n - i * (i + 1) / 2) + i + 1;
    (i, j)
}

/// The counters of [`solve_active`] carried into a hand-over.
struct Progress {
    iterations: usize,
    evaluations: usize,
    checks: usize,
    max_ws: usize,
    max_nnz: usize,
    dense_sets: usize,
    history: Vec<f64>,
    profile: ActiveProfile,
}

/// Step 4 of the module doc: projected Newton over all pairs from the weights `w` on the working
/// set `set`, with what is left of the iteration budget.
fn hand_over(p: &PairDual, opts: &ActiveOptions, set: &[usize], w: &[f64], mut done: Progress) -> Result<ActiveResult, String> {
    let n = p.n;
    let mut packed = vec![0.0; p.lin.len()];
    for (&k, &v) in set.iter().zip(w) {
        packed[k] = v;
    }
    let t = std::time::Instant::now();
    let newton_opts = NewtonOptions { tol_abs: opts.tol_abs, max_iter: opts.max_iter.saturating_sub(done.iterations), noise: F_NOISE, memory: NEWTON_MEMORY };
    let (r, newton_profile) = solve_newton(p, packed, &newton_opts)?;
    done.profile.inner += t.elapsed().as_secs_f64();
    done.profile.newton = newton_profile;
    done.history.extend_from_slice(&r.history[1..]);
    let (mut pairs, mut weights) = (Vec::new(), Vec::new());
    let (mut kkt_inside, mut kkt_outside) = (0.0f64, 0.0f64);
    let mut k = 0;
    for i in 0..n {
        for j in (i + 1)..n {
            let (v, g) = (r.x[k], r.gradient[k]);
            let pg = ((v - g).max(0.0).min(p.upper) - v).abs();
            if v > 0.0 {
                pairs.push((i, j));
                weights.push(v);
                kkt_inside = kkt_inside.max(pg);
            } else {
                kkt_outside = kkt_outside.max(pg);
            }
            k += 1;
        }
    }
    debug_assert_eq!(kkt_inside.max(kkt_outside), projected_gradient_inf(&r.x, &r.gradient, p.upper));
    Ok(ActiveResult {
        max_working_set: done.max_ws.max(set.len()).max(pairs.len()),
        pairs,
        w: weights,
        f: r.f,
        kkt: r.projected_gradient_norm,
        kkt_inside,
        kkt_outside,
        converged: r.converged,
        iterations: done.iterations + r.iterations,
        evaluations: done.evaluations + r.evaluations,
        checks: done.checks,
        max_nnz_l: done.max_nnz,
        message: format!("{} (projected Newton over all pairs)", r.message),
        dense_sets: done.dense_sets,
        newton_iterations: r.iterations,
        newton_evaluations: r.evaluations,
        history: done.history,
        profile: done.profile,
    })
}

/// Minimises the pair dual `p` by working sets (module doc) from `w = 0`.
pub fn solve_active(p: &PairDual, opts: &ActiveOptions) -> Result<ActiveResult, String> {
    let n = p.n;
    assert_eq!(p.lin.len(), n_pairs(n), "solve_active: one linear coefficient per pair");
    let mut profile = ActiveProfile::default();
    let mut set: Vec<usize> = initial_set(p, opts.per_point);
    let mut w: Vec<f64> = vec![0.0; set.len()];
    // f(0) = -h log det(a I) = -h N ln a
    let f_zero = -p.h * n as f64 * p.a.ln();
    let mut history = vec![f_zero];
    let (mut iterations, mut evaluations, mut checks) = (0usize, 0usize, 0usize);
    let (mut max_ws, mut max_nnz) = (0usize, 0usize);
    let mut f_now = f_zero;
    // the first working set is a guess: solve it only to 1% of the residual at w = 0
    let kkt_zero = (0..p.lin.len()).map(|k| (-p.initial_gradient(k)).max(0.0).min(p.upper)).fold(0.0, f64::max);
    let mut inner_tol = opts.tol_abs.max(0.01 * kkt_zero);
    let mut updates_left = MAX_UPDATES;
    let mut dense_sets = 0usize;
    // consecutive inner solves that stopped short of their target with nothing joining
    let mut restarts = 0usize;
    let mut inner_message = String::new();
    loop {
        updates_left -= 1;
        let pairs: Vec<(usize, usize)> = set.iter().map(|&k| pair_of(n, k)).collect();
        let lin: Vec<f64> = set.iter().map(|&k| p.lin[k]).collect();
        let t = std::time::Instant::now();
        let sym = SymbolicCholesky::analyze(n, &pairs, Ordering::Auto).map_err(sparse_message)?;
        profile.analyse += t.elapsed().as_secs_f64();
        max_ws = max_ws.max(set.len());
        let dense_factor = n >= DENSE_MIN_N && DENSE_FLOP_RATIO * sym.flops() > (n as f64).powi(3);
        dense_sets += usize::from(dense_factor);
        let dense_share = n >= DENSE_MIN_N && set.len() as f64 >= DENSE_PAIR_FRACTION * p.lin.len() as f64;
        if dense_share && (dense_factor || opts.hand_over_sparse) {
            return hand_over(p, opts, &set, &w, Progress { iterations, evaluations, checks, max_ws, max_nnz, dense_sets, history, profile });
        }
        let factor = if dense_factor {
            Factor::Dense
        } else {
            max_nnz = max_nnz.max(sym.nnz_l());
            Factor::Sparse(Box::new(sym))
        };
        let ws = WorkingSet { pairs, lin, factor };
        // inner solve
        let t = std::time::Instant::now();
        let (mut kkt_inside, mut g_set) = (0.0, vec![0.0; set.len()]);
        if !set.is_empty() && iterations < opts.max_iter {
            let mut failure = None;
            let bo = BoundedOptions {
                m: opts.memory,
                max_iter: opts.max_iter - iterations,
                max_eval: 20 * (opts.max_iter - iterations) + 20,
                pgtol: inner_tol,
                factr: 0.0,
                noise: F_NOISE,
            };
            let (lower, upper) = (vec![0.0; set.len()], vec![p.upper; set.len()]);
            // an error inside f (a factor that fails) stops the solve and is returned below
            let mut eval = |x: &[f64], g: &mut [f64], h: Option<&mut [f64]>| match p.evaluate(&ws, x, g, h) {
                Ok(v) => v,
                Err(e) => {
                    failure.get_or_insert(e);
                    f64::NAN
                }
            };
            let r = if opts.precondition {
                projected_lbfgs::minimize_preconditioned(|x, g, h| eval(x, g, Some(h)), &w, &lower, &upper, &bo)
            } else {
                minimize(Solver::Projected, |x, g| eval(x, g, None), &w, &lower, &upper, &bo)
            }
            .map_err(|e| e.to_string())?;
            if let Some(e) = failure {
                return Err(e.to_string());
            }
            iterations += r.iterations;
            evaluations += r.evaluations;
            history.extend_from_slice(&r.history[1..]);
            w = r.x;
            f_now = r.f;
            kkt_inside = r.projected_gradient_norm;
            g_set = r.gradient;
            inner_message = r.message;
        } else if !set.is_empty() {
            f_now = p.evaluate(&ws, &w, &mut g_set, None)?;
            evaluations += 1;
            kkt_inside = projected_gradient_norm(&w, &g_set, &vec![0.0; set.len()], &vec![p.upper; set.len()]);
        }
        profile.inner += t.elapsed().as_secs_f64();
        // full check
        let t = std::time::Instant::now();
        // up to max(per_point, mean degree of the working set) join per sample: the working set
        // can double per update when the optimum is dense (ESL at small lambda)
        let allowance = opts.per_point.max((2 * set.len()).div_ceil(n.max(1)));
        let (kkt_outside, joining, violating) = p.check_outside(&ws, &set, &w, allowance, opts.tol_abs)?;
        profile.check += t.elapsed().as_secs_f64();
        checks += 1;
        let kkt = kkt_inside.max(kkt_outside);
        let done = |converged: bool, message: String, set: Vec<usize>, w: Vec<f64>, history: Vec<f64>| ActiveResult {
            pairs: set.iter().map(|&k| pair_of(n, k)).collect(),
            w,
            f: f_now,
            kkt,
            kkt_inside,
            kkt_outside,
            converged,
            iterations,
            evaluations,
            checks,
            max_working_set: max_ws,
            max_nnz_l: max_nnz,
            message,
            dense_sets,
            newton_iterations: 0,
            newton_evaluations: 0,
            history,
            profile,
        };
        if kkt <= opts.tol_abs {
            return Ok(done(true, "CONVERGENCE: KKT residual over all pairs <= tol".into(), set, w, history));
        }
        if iterations >= opts.max_iter {
            return Ok(done(false, "STOP: TOTAL NO. of ITERATIONS REACHED LIMIT".into(), set, w, history));
        }
        if updates_left == 0 {
            return Ok(done(false, format!("ABNORMAL: {MAX_UPDATES} working-set updates without convergence"), set, w, history));
        }
        if n >= DENSE_MIN_N && (set.len() + violating) as f64 >= EARLY_PAIR_FRACTION * p.lin.len() as f64 {
            // nearly every pair wants a weight: the working sets would grow into dense factors;
            // hand over now instead of solving them on the way
            return hand_over(p, opts, &set, &w, Progress { iterations, evaluations, checks, max_ws, max_nnz, dense_sets, history, profile });
        }
        if joining.is_empty() && kkt_inside > inner_tol {
            // the inner solver stopped short (a line search that found no decrease): restart it
            // with a fresh limited memory from where it is, a few times before giving up
            restarts += 1;
            if restarts > MAX_RESTARTS {
                return Ok(done(
                    false,
                    format!("ABNORMAL: the inner solver stopped short {restarts} times in a row ({inner_message}) and no pair joins the working set"),
                    set,
                    w,
                    history,
                ));
            }
        } else {
            restarts = 0;
        }
        // update the working set: drop zeros with g > 0, add the violators
        let mut next: Vec<(usize, f64)> = set.iter().zip(&w).zip(&g_set).filter(|((_, &v), &g)| !(v == 0.0 && g > 0.0)).map(|((&k, &v), _)| (k, v)).collect();
        next.extend(joining.iter().map(|v| (v.k, 0.0)));
        next.sort_by_key(|e| e.0);
        next.dedup_by_key(|e| e.0);
        set = next.iter().map(|e| e.0).collect();
        w = next.iter().map(|e| e.1).collect();
        // an inner problem whose working set is about to grow need only be solved about as
        // accurately as the outside pairs are known to be optimal
        inner_tol = if joining.is_empty() { opts.tol_abs } else { opts.tol_abs.max(0.1 * kkt_outside) };
    }
}

#[cfg(test)]
mod tests;
