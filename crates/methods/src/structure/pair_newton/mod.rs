//! A projected Newton solver for the dense regime of the pair dual of MPME and ESL
//! ([`super::pair_active`] has the problem and its notation):
//!
//! `min_w f(w) = -h log det(a I + b L(W)) + sum_{i<j} l_ij w_ij`,  `0 <= w_ij <= u`.
//!
//! Why: when the optimum weights most pairs (ESL at lambda_v <= 0.5: 15-99% of the N(N-1)/2
//! pairs), every evaluation is a dense `dpotrf` + `dpotri` whatever the working set, and
//! L-BFGS needs 400-750 of them: the Hessian
//!
//! `H_{(ij),(kl)} = h b^2 ((e_i - e_j)^T Sigma (e_k - e_l))^2`,  `Sigma = Q^-1`,
//!
//! couples every two pairs that share a sample, and its condition number grows like N.
//!
//! **The model.** `Sigma = Sigma_perp + 1 1^T / (a N)` (`Q 1 = a 1`), and the pair vectors
//! `e_i - e_j` are orthogonal to `1`. Keeping only the diagonal `s_i = (Sigma_perp)_ii` of the
//! rest, `(e_i - e_j)^T Sigma (e_k - e_l)` is `s_i + s_j` for the same pair, `+- s_v` for pairs
//! sharing the sample `v` and 0 otherwise, so
//!
//! `H ~ M = h b^2 (D + E^T S E)`,  `D = diag(2 s_i s_j)` over pairs, `S = diag(s_i^2)`,
//!
//! with `E` the N x P unsigned incidence matrix (pair `(i, j)` -> `e_i + e_j`). This keeps the
//! rank-N part that makes `H` ill-conditioned, and `M^-1` is cheap by the Woodbury identity:
//!
//! `M^-1 g = (v - D^-1 E^T K^-1 E v) / (h b^2)`,  `v = D^-1 g`,  `K = S^-1 + E D^-1 E^T`,
//!
//! an N x N SPD system instead of a P x P one. It is solved in the scaled form
//! `Kt = diag(s) K diag(s)` (a unit diagonal plus `s_i sum_j 1 / (2 s_j)` over row i's free pairs,
//! and 1/2 per free pair off the diagonal), which is well conditioned: Jacobi-preconditioned
//! conjugate gradients reach a relative residual of 1e-12 in 2-17 iterations on Table 1's ESL
//! cells, each a pass over the shorter of the free and the held pairs' lists (at most P / 2
//! entries), where a dense Cholesky cost N^3/3 flops, a third of an evaluation (ESL version 4; a
//! solve that does not converge in 200 iterations falls back to that Cholesky, and the notes count
//! both).
//!
//! **The iteration** (Bertsekas 1982, projected Newton): the free pairs are those not held at a
//! bound by their gradient (`w = 0, g > 0` or `w = u, g < 0`); the direction is `-M_F^-1 g_F` on
//! them and 0 elsewhere; the step `w(alpha) = P[w + alpha d]` along the projection arc is accepted
//! on Armijo's test `f(w(alpha)) <= f(w) + 1e-4 g^T (w(alpha) - w)` (within the rounding `noise`
//! of `f`), from `alpha = 1` with safeguarded quadratic backtracking. A trial point costs one
//! `dpotrf`; only an accepted point is inverted (`dpotri`) for its gradient.
//!
//! It stops when `||proj grad f||_inf <= tol_abs` over all pairs (the quantity the other solvers
//! report), at `max_iter` iterations, or when the line search finds no decrease along the model's
//! own direction (a failed search with limited-memory corrections in use drops them and retries,
//! as the projected L-BFGS does). Measured on
//! Table 1's dense ESL cells (lambda_v <= 0.5, N = 846 to 5000): 28-69 iterations of 1-2
//! factorisations each, where L-BFGS on dense evaluations took 400-750 (docs/parity/esl.md).
//!
//! Every loop runs in a fixed order: the result does not depend on the thread count.

use super::pair_active::PairDual;
use super::pair_dual::{fill_laplacian_upper, for_each_pair_resistance, n_pairs};
use model::Model;
use structdr_linalg::{inverse_from_factor_upper, log_det_factor_upper};
use structdr_numerics::optim::{dot, BoundedResult};

mod model;
pub use model::{MODEL_CG_MAX_ITER, MODEL_CG_TOL};

/// Limited-memory corrections kept on top of the model: with 5, ESL-shaped test problems take
/// 12 to 34 iterations where the model alone takes 28 to 100.
pub const NEWTON_MEMORY: usize = 5;

/// Armijo's sufficient-decrease constant.
const ARMIJO: f64 = 1e-4;

/// Smallest step tried before the line search is called failed.
const MIN_STEP: f64 = 1e-12;

/// Floor of `s_i = (Sigma_perp)_ii` relative to its largest value (guards the model's `1 / s`).
const S_FLOOR: f64 = 1e-12;

/// Options of [`solve_newton`].
#[derive(Debug, Clone, Copy)]
pub struct NewtonOptions {
    /// Absolute target of `||proj grad f||_inf` over all pairs.
    pub tol_abs: f64,
    /// Cap on the Newton iterations.
    pub max_iter: usize,
    /// Relative rounding of `f` tolerated by the line search (`log det` of a dense factor).
    pub noise: f64,
    /// Limited-memory corrections kept on top of the model (0: the model alone).
    pub memory: usize,
}

/// Seconds spent in the parts of [`solve_newton`].
#[derive(Debug, Clone, Copy, Default)]
pub struct NewtonProfile {
    /// Assembling `Q` and `dpotrf` at trial points.
    pub factor: f64,
    /// `dpotri` at accepted points and the gradient.
    pub inverse: f64,
    /// The model: `Kt`'s assembly and solves, the direction.
    pub model: f64,
    /// Conjugate-gradient iterations of the model's solves, summed.
    pub model_cg_iterations: usize,
    /// Model solves that fell back to a dense Cholesky of `Kt`.
    pub model_dense_fallbacks: usize,
}

/// `||P[w - g] - w||_inf` for the box `[0, upper]` (optim's projected-gradient norm, without
/// bound vectors of N(N-1)/2 entries).
pub(crate) fn projected_gradient_inf(w: &[f64], g: &[f64], upper: f64) -> f64 {
    w.iter().zip(g).map(|(&x, &gk)| ((x - gk).max(0.0).min(upper) - x).abs()).fold(0.0, f64::max)
}

impl PairDual<'_> {
    /// `f(w)`, leaving `Q`'s factor in `qs` (assembly + `dpotrf`).
    fn factor_value(&self, w: &[f64], qs: &mut [f64]) -> Result<f64, String> {
        fill_laplacian_upper(qs, self.n, w, self.a, self.b);
        let ld = log_det_factor_upper(qs, self.n).map_err(|e| e.to_string())?;
        let linear = dot(self.lin, w);
        Ok(-self.h * ld + linear)
    }

    /// From the factor in `qs`: `Q^-1` in its upper triangle, the gradient into `g` and the
    /// model's `s_i = (Q^-1)_ii - 1 / (a N)` into `s`.
    fn gradient_from_factor(&self, qs: &mut [f64], g: &mut [f64], s: &mut [f64]) -> Result<(), String> {
        let n = self.n;
        inverse_from_factor_upper(qs, n).map_err(|e| e.to_string())?;
        let hb = self.h * self.b;
        for_each_pair_resistance(qs, n, |k, r| g[k] = self.lin[k] - hb * r);
        let mean_part = 1.0 / (self.a * n as f64);
        for (i, si) in s.iter_mut().enumerate() {
            *si = qs[i * n + i] - mean_part;
        }
        let floor = S_FLOOR * s.iter().copied().fold(0.0, f64::max);
        for si in s.iter_mut() {
            *si = si.max(floor);
        }
        Ok(())
    }

    /// The free pairs at `(w, g)` into `free` (one flag per pair): those not held at a bound by
    /// their gradient.
    fn free_pairs_into(&self, w: &[f64], g: &[f64], free: &mut [bool]) {
        let upper = self.upper;
        free.iter_mut().zip(w.iter().zip(g)).for_each(|(fk, (&wk, &gk))| *fk = !((wk <= 0.0 && gk > 0.0) || (wk >= upper && gk < 0.0)));
    }
}

/// `sum_k [free_k] a_k b_k` with eight accumulators (lane `k mod 8`), as optim's [`dot`]:
/// vectorisable, in a fixed order (the same bits on every thread count).
fn free_dot(free: &[bool], a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0f64; 8];
    let (cf, ca, cb) = (free.chunks_exact(8), a.chunks_exact(8), b.chunks_exact(8));
    let tail: f64 = cf.remainder().iter().zip(ca.remainder().iter().zip(cb.remainder())).map(|(&f, (x, y))| if f { x * y } else { 0.0 }).sum();
    for (f, (x, y)) in cf.zip(ca.zip(cb)) {
        for k in 0..8 {
            acc[k] += if f[k] { x[k] * y[k] } else { 0.0 };
        }
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// `sum_k g_k (a_k - b_k)`, in the lanes of [`dot`].
fn dot_of_difference(g: &[f64], a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0f64; 8];
    let (cg, ca, cb) = (g.chunks_exact(8), a.chunks_exact(8), b.chunks_exact(8));
    let tail: f64 = cg.remainder().iter().zip(ca.remainder().iter().zip(cb.remainder())).map(|(gk, (x, y))| gk * (x - y)).sum();
    for (gc, (x, y)) in cg.zip(ca.zip(cb)) {
        for k in 0..8 {
            acc[k] += gc[k] * (x[k] - y[k]);
        }
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// The last `m` steps `s = w+ - w` and gradient changes `y = g+ - g` (limited memory).
///
/// The vectors hold one entry per pair (100 MB each at N = 5000): a pair that leaves, or one not
/// kept, lends its storage to the next step, and the two-loop recursion's `q` lives here, so an
/// iteration allocates none of them (fresh ones cost a page fault per 4 KiB).
struct Corrections {
    pairs: std::collections::VecDeque<(Vec<f64>, Vec<f64>)>,
    m: usize,
    spare: Option<(Vec<f64>, Vec<f64>)>,
    q: Vec<f64>,
}

impl Corrections {
    fn new(m: usize) -> Corrections {
        Corrections { pairs: Default::default(), m, spare: None, q: Vec::new() }
    }

    /// Two vectors of `len` entries for the next `(s, y)` (their contents are overwritten).
    fn buffers(&mut self, len: usize) -> (Vec<f64>, Vec<f64>) {
        match self.spare.take() {
            Some((s, y)) if s.len() == len && y.len() == len => (s, y),
            _ => (vec![0.0; len], vec![0.0; len]),
        }
    }

    /// Keeps `(s, y)` when its curvature `s^T y` is clearly positive, dropping the oldest beyond `m`.
    fn push(&mut self, s: Vec<f64>, y: Vec<f64>) {
        let (sy, ss, yy) = (dot(&s, &y), dot(&s, &s), dot(&y, &y));
        if self.m == 0 || !(sy > 1e-10 * (ss * yy).sqrt()) {
            self.spare = Some((s, y));
            return;
        }
        if self.pairs.len() == self.m {
            self.spare = self.pairs.pop_front();
        }
        self.pairs.push_back((s, y));
    }

    /// `d = -H_F g_F` by the two-loop recursion over the free pairs with `H0 = M_F^-1` (the
    /// model), 0 on the pairs held at a bound.
    fn direction(&mut self, model: &Model, free: &[bool], g: &[f64], d: &mut [f64]) -> Result<(), String> {
        let mut q = std::mem::take(&mut self.q);
        q.clear();
        q.extend(g.iter().zip(free).map(|(&gk, &f)| if f { gk } else { 0.0 }));
        let mut alphas = Vec::with_capacity(self.pairs.len());
        for (s, y) in self.pairs.iter().rev() {
            let sy = free_dot(free, s, y);
            if sy <= 0.0 {
                alphas.push(None);
                continue;
            }
            let alpha = free_dot(free, s, &q) / sy;
            for ((qk, &yk), &f) in q.iter_mut().zip(y).zip(free) {
                if f {
                    *qk -= alpha * yk;
                }
            }
            alphas.push(Some((alpha, sy)));
        }
        model.apply(free, &q, d)?;
        self.q = q;
        for ((s, y), entry) in self.pairs.iter().zip(alphas.iter().rev()) {
            let Some((alpha, sy)) = *entry else { continue };
            let beta = free_dot(free, y, d) / sy;
            for ((dk, &sk), &f) in d.iter_mut().zip(s).zip(free) {
                if f {
                    *dk += (alpha - beta) * sk;
                }
            }
        }
        for dk in d.iter_mut() {
            *dk = -*dk;
        }
        Ok(())
    }
}

/// Minimises the pair dual `p` by projected Newton steps on the model of the module doc, from the
/// packed weights `w0` (all N(N-1)/2 pairs, inside the bounds). Returns the outcome in the
/// bounded solvers' form (`x` the weights, `projected_gradient_norm` the KKT residual over all
/// pairs, `evaluations` the factorisations, the start included; `converged` means
/// `projected_gradient_norm <= tol_abs`) and where the time went.
pub fn solve_newton(p: &PairDual, w0: Vec<f64>, opts: &NewtonOptions) -> Result<(BoundedResult, NewtonProfile), String> {
    let n = p.n;
    let np = n_pairs(n);
    assert_eq!(w0.len(), np, "solve_newton: one weight per pair");
    assert_eq!(p.lin.len(), np, "solve_newton: one linear coefficient per pair");
    let mut profile = NewtonProfile::default();
    let mut w = w0;
    let (mut q, mut qt) = (vec![0.0; n * n], vec![0.0; n * n]);
    let (mut g, mut s) = (vec![0.0; np], vec![0.0; n]);
    let mut d = vec![0.0; np];
    let mut trial = vec![0.0; np];
    let (mut g_trial, mut s_trial) = (vec![0.0; np], vec![0.0; n]);
    let t = std::time::Instant::now();
    let mut f = p.factor_value(&w, &mut q)?;
    profile.factor += t.elapsed().as_secs_f64();
    let t = std::time::Instant::now();
    p.gradient_from_factor(&mut q, &mut g, &mut s)?;
    profile.inverse += t.elapsed().as_secs_f64();
    let mut history = vec![f];
    let (mut iterations, mut evaluations) = (0usize, 1usize);
    let mut corrections = Corrections::new(opts.memory);
    let mut free = vec![false; np];
    let (converged, message, kkt) = loop {
        let kkt = projected_gradient_inf(&w, &g, p.upper);
        if kkt <= opts.tol_abs {
            break (true, "CONVERGENCE: KKT residual over all pairs <= tol".to_string(), kkt);
        }
        if iterations >= opts.max_iter {
            break (false, "STOP: TOTAL NO. of ITERATIONS REACHED LIMIT".into(), kkt);
        }
        let t = std::time::Instant::now();
        p.free_pairs_into(&w, &g, &mut free);
        let Some(model) = p.model(&free, &s) else {
            break (false, "ABNORMAL: no free pair and the KKT residual above tol".into(), kkt);
        };
        corrections.direction(&model, &free, &g, &mut d)?;
        if free_dot(&free, &g, &d) >= 0.0 {
            // the corrections spoilt descent: the model's own direction is one
            model.apply(&free, &g, &mut d)?;
            d.iter_mut().for_each(|v| *v = -*v);
        }
        let solves = model.solves.get();
        profile.model_cg_iterations += solves.cg_iterations;
        profile.model_dense_fallbacks += solves.dense_fallbacks;
        profile.model += t.elapsed().as_secs_f64();
        // line search along the projection arc; the accepted point's gradient lands in g_trial
        let mut alpha = 1.0f64;
        let accepted = loop {
            for ((tk, &wk), &dk) in trial.iter_mut().zip(&w).zip(&d) {
                *tk = (wk + alpha * dk).max(0.0).min(p.upper);
            }
            let slope = dot_of_difference(&g, &trial, &w);
            if slope >= 0.0 {
                // the projection cut a long step into one that does not descend; a shorter one
                // is cut less (as alpha -> 0 the slope tends to g^T d < 0 over the moving pairs)
                alpha *= 0.1;
                if alpha < MIN_STEP {
                    break None;
                }
                continue;
            }
            let t = std::time::Instant::now();
            let ft = p.factor_value(&trial, &mut qt)?;
            profile.factor += t.elapsed().as_secs_f64();
            evaluations += 1;
            let armijo = f + ARMIJO * slope;
            if ft <= armijo {
                let t = std::time::Instant::now();
                p.gradient_from_factor(&mut qt, &mut g_trial, &mut s_trial)?;
                profile.inverse += t.elapsed().as_secs_f64();
                break Some(ft);
            }
            if ft <= armijo + opts.noise * f.abs() {
                // f cannot tell within its rounding (near the optimum): let the KKT residual
                // judge, at the price of the trial point's gradient
                let t = std::time::Instant::now();
                p.gradient_from_factor(&mut qt, &mut g_trial, &mut s_trial)?;
                profile.inverse += t.elapsed().as_secs_f64();
                if projected_gradient_inf(&trial, &g_trial, p.upper) < kkt {
                    break Some(ft);
                }
                // qt now holds Q^-1, not the factor: the next trial refactors anyway
            }
            // minimiser of the quadratic through f, the secant slope and f(alpha), safeguarded
            let s0 = slope / alpha;
            let curvature = 2.0 * (ft - f - slope);
            let next = if curvature > 0.0 { -s0 * alpha * alpha / curvature } else { 0.5 * alpha };
            alpha = next.clamp(0.1 * alpha, 0.5 * alpha);
            if alpha < MIN_STEP {
                break None;
            }
        };
        let Some(ft) = accepted else {
            if !corrections.pairs.is_empty() {
                // near the optimum, rounding in the secant pairs can bend the direction away from
                // descent f can see; as the projected L-BFGS does, drop them and retry along the
                // model's own direction before giving up (with one BLAS thread the MPME-shaped
                // test problem stopped here at a KKT residual of 2.8e-9 against 1e-9)
                corrections.pairs.clear();
                continue;
            }
            break (false, "ABNORMAL: the projected Newton line search found no decrease".into(), kkt);
        };
        std::mem::swap(&mut q, &mut qt);
        let (mut step, mut change) = corrections.buffers(np);
        step.iter_mut().zip(trial.iter().zip(&w)).for_each(|(sk, (a, b))| *sk = a - b);
        std::mem::swap(&mut w, &mut trial);
        f = ft;
        std::mem::swap(&mut g, &mut g_trial);
        std::mem::swap(&mut s, &mut s_trial);
        // g_trial holds the previous gradient now
        change.iter_mut().zip(g.iter().zip(&g_trial)).for_each(|(yk, (a, b))| *yk = a - b);
        corrections.push(step, change);
        iterations += 1;
        history.push(f);
        // a dense Newton iteration takes seconds at N in the thousands: the runner's progress line
        structdr_numerics::progress::report(iterations, f);
    };
    let result = BoundedResult { x: w, f, gradient: g, iterations, evaluations, projected_gradient_norm: kkt, converged, message, history };
    Ok((result, profile))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::structure::pair_active::{solve_active, ActiveOptions, DENSE_MIN_N};
    use crate::structure::pair_dual::{for_each_pair, log_det_grad, pair_index, solve_pairs};
    use ndarray::Array2;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;
    use structdr_numerics::optim::Solver;

    /// Squared distances of `n` random points in the unit square.
    fn sq_distances(n: usize, seed: u64) -> Vec<f64> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let pts: Vec<(f64, f64)> = (0..n).map(|_| (rng.gen_range(0.0..1.0), rng.gen_range(0.0..1.0))).collect();
        let mut phi = vec![0.0; n_pairs(n)];
        for_each_pair(n, |i, j, k| phi[k] = (pts[i].0 - pts[j].0).powi(2) + (pts[i].1 - pts[j].1).powi(2));
        phi
    }

    /// ESL-shaped linear terms `level (1 - contrast exp(-20 phi))`: at a small contrast (ESL's
    /// `1 - pbar` with `pbar` at most ~1/u) nearly uniform costs, so that the optimum weights most
    /// pairs (the regime the solver is for); at a large one a sparser optimum whose `Q^-1` is far
    /// from diagonal (the model's weak case).
    fn esl_lin(phi: &[f64], level: f64, contrast: f64) -> Vec<f64> {
        phi.iter().map(|v| level * (1.0 - contrast * (-20.0 * v).exp())).collect()
    }

    /// `f` and `grad f` of packed weights, densely through the full-space kernel (independent
    /// of the solvers; pair_active's tests use it too).
    pub(crate) fn dense_f_g(p: &PairDual, w: &[f64]) -> (f64, Vec<f64>) {
        let mut g = vec![0.0; w.len()];
        let ld = log_det_grad(p.n, w, p.a, p.b, &mut g).unwrap();
        let mut f = -p.h * ld;
        for k in 0..w.len() {
            g[k] = p.lin[k] - p.h * g[k];
            f += p.lin[k] * w[k];
        }
        (f, g)
    }

    /// The Woodbury solve equals `(h b^2 (D + E^T S E))^-1 g` on the free pairs, solved as a
    /// dense P x P system here (independent of the identity the solver uses).
    #[test]
    fn the_model_direction_solves_the_model_system() {
        let n = 9;
        let phi = sq_distances(n, 4);
        let lin = esl_lin(&phi, 3.0, 0.5);
        let p = PairDual { n, a: 1.0, b: 4.0, h: 1.5, lin: &lin, upper: 0.3 };
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        // some pairs at each bound, the rest inside
        let w: Vec<f64> = (0..n_pairs(n)).map(|k| [0.0, 0.3, rng.gen_range(0.01..0.29)][k % 3]).collect();
        let mut q = vec![0.0; n * n];
        let (mut g, mut s) = (vec![0.0; w.len()], vec![0.0; n]);
        p.factor_value(&w, &mut q).unwrap();
        p.gradient_from_factor(&mut q, &mut g, &mut s).unwrap();
        let mut free = vec![false; w.len()];
        p.free_pairs_into(&w, &g, &mut free);
        let model = p.model(&free, &s).unwrap();
        let mut d = vec![0.0; w.len()];
        model.apply(&free, &g, &mut d).unwrap();
        assert_eq!(model.solves.get().dense_fallbacks, 0, "conjugate gradients solved the model");
        let pairs: Vec<(usize, usize)> = {
            let mut v = Vec::new();
            for_each_pair(n, |i, j, _| v.push((i, j)));
            v
        };
        let free: Vec<usize> = (0..w.len()).filter(|&k| free[k]).collect();
        assert!(free.len() > 5 && free.len() < w.len(), "the test wants pairs held at both kinds of bound");
        let m = free.len();
        let mut h = Array2::<f64>::zeros((m, m));
        for (a, &ka) in free.iter().enumerate() {
            for (b, &kb) in free.iter().enumerate() {
                let ((i, j), (k, l)) = (pairs[ka], pairs[kb]);
                let mut v = 0.0;
                for x in [i, j] {
                    if x == k || x == l {
                        v += s[x] * s[x];
                    }
                }
                if ka == kb {
                    v += 2.0 * s[i] * s[j];
                }
                h[[a, b]] = p.h * p.b * p.b * v;
            }
        }
        let rhs = ndarray::Array1::from_iter(free.iter().map(|&k| g[k]));
        let direct = structdr_linalg::Cholesky::factor(h.view()).unwrap().solve_vec(rhs.view()).unwrap();
        for (a, &k) in free.iter().enumerate() {
            assert!((d[k] - direct[a]).abs() <= 1e-10 * direct.iter().fold(0.0f64, |m, v| m.max(v.abs())), "pair {k}: {} against {}", d[k], direct[a]);
        }
        for k in 0..w.len() {
            if !free.contains(&k) {
                assert_eq!(d[k], 0.0, "a pair held at its bound does not move");
            }
        }
    }

    /// `Kt` as the list of free pairs and as the list of held ones is the same matrix: its
    /// products equal the dense `Kt`'s, and conjugate gradients solve it to the dense Cholesky's
    /// solution (1e-11 relative), in a few iterations, for free sets of 10% to 90% of the pairs.
    #[test]
    fn the_model_matrix_by_either_list_matches_the_dense_one() {
        let n = 40;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let s: Vec<f64> = (0..n).map(|_| rng.gen_range(0.2..2.0)).collect();
        let dual = PairDual { n, a: 1.0, b: 4.0, h: 1.0, lin: &[], upper: 1.0 };
        for share in [0.1, 0.3, 0.7, 0.9] {
            let free: Vec<bool> = (0..n_pairs(n)).map(|_| rng.gen_bool(share)).collect();
            let model = dual.model(&free, &s).unwrap();
            assert_eq!(model.kt.pattern_is_free, share < 0.5, "the shorter list is kept");
            let dense = model.kt.dense();
            // the dense Kt, independently: unit diagonal, s_i sum_j 1 / (2 s_j) and 1/2 per free pair
            let mut k = 0;
            for i in 0..n {
                for j in (i + 1)..n {
                    assert_eq!(dense[[i, j]], if free[k] { 0.5 } else { 0.0 });
                    assert_eq!(dense[[j, i]], dense[[i, j]]);
                    k += 1;
                }
            }
            for i in 0..n {
                let expect: f64 = 1.0 + s[i] * (0..n).filter(|&j| j != i && free[pair_index(n, i.min(j), i.max(j))]).map(|j| 0.5 / s[j]).sum::<f64>();
                assert!((dense[[i, i]] - expect).abs() <= 1e-12 * expect);
            }
            let x: Vec<f64> = (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect();
            let mut y = vec![0.0; n];
            model.kt.apply(&x, &mut y);
            let y_dense = dense.dot(&ndarray::Array1::from(x.clone()));
            for i in 0..n {
                assert!((y[i] - y_dense[i]).abs() <= 1e-12 * (1.0 + y_dense[i].abs()), "share {share}, row {i}");
            }
            let (cg, iterations) = model.kt.solve_cg(&x).expect("conjugate gradients converge");
            let chol = model.kt.solve_dense(x.clone()).unwrap();
            let scale = chol.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for i in 0..n {
                assert!((cg[i] - chol[i]).abs() <= 1e-11 * scale, "share {share}: {} against {}", cg[i], chol[i]);
            }
            assert!(iterations <= 40, "share {share}: {iterations} iterations");
        }
    }

    /// ESL-shaped dense problems (with and without a reached upper bound), a sparser ESL-shaped
    /// one and an MPME-shaped one: projected Newton reaches the full-space projected L-BFGS's
    /// objective to 1e-8 (relative), in fewer iterations except on the MPME shape, its KKT residual
    /// recomputed densely is at most the target, and `f` never rises beyond the rounding the
    /// line search allows.
    #[test]
    fn the_newton_optimum_is_the_full_space_optimum() {
        let n = 50;
        let phi = sq_distances(n, 2);
        let dense_lin = esl_lin(&phi, 2.0, 0.05);
        let sparse_lin = esl_lin(&phi, 2.0, 0.5);
        let mpme_lin: Vec<f64> = phi.iter().map(|v| 0.5 * v).collect();
        let unbounded = PairDual { n, a: 1.0, b: 4.0, h: 1.0, lin: &dense_lin, upper: f64::INFINITY };
        // an upper bound between the smallest and the largest weight of the unbounded optimum
        let w0 =
            solve_newton(&unbounded, vec![0.0; n_pairs(n)], &NewtonOptions { tol_abs: 1e-6, max_iter: 500, noise: 1e-11, memory: NEWTON_MEMORY }).unwrap().0.x;
        let (lo, hi) = w0.iter().filter(|&&v| v > 0.0).fold((f64::INFINITY, 0.0f64), |(a, b), &v| (a.min(v), b.max(v)));
        let cases = [
            unbounded,
            PairDual { n, a: 1.0, b: 4.0, h: 1.0, lin: &dense_lin, upper: 0.5 * (lo + hi) },
            PairDual { n, a: 1.0, b: 4.0, h: 1.0, lin: &sparse_lin, upper: f64::INFINITY },
            PairDual { n, a: 0.5, b: 1.0, h: 3.0, lin: &mpme_lin, upper: f64::INFINITY },
        ];
        for (c, p) in cases.iter().enumerate() {
            let tol = 1e-9;
            let (r, _) = solve_newton(p, vec![0.0; n_pairs(n)], &NewtonOptions { tol_abs: tol, max_iter: 5000, noise: 1e-11, memory: NEWTON_MEMORY }).unwrap();
            assert!(
                r.converged,
                "case {c}: {} after {} iterations, KKT {:.3e}, f history tail {:?}",
                r.message,
                r.iterations,
                r.projected_gradient_norm,
                &r.history[r.history.len().saturating_sub(5)..]
            );
            let (f, g) = dense_f_g(p, &r.x);
            let kkt = projected_gradient_inf(&r.x, &g, p.upper);
            assert!(kkt <= tol, "case {c}: dense KKT residual {kkt:.3e}");
            assert!((f - r.f).abs() <= 1e-12 * f.abs(), "case {c}: f {f} against the solver's {}", r.f);
            let full = solve_pairs("test", Solver::Projected, n_pairs(n), p.upper, 50_000, tol, |w, g| {
                let (f, gg) = dense_f_g(p, w);
                g.copy_from_slice(&gg);
                Ok(f)
            })
            .unwrap();
            assert!((full.f - r.f).abs() <= 1e-8 * full.f.abs(), "case {c}: Newton f = {} full-space f = {}", r.f, full.f);
            let weighted = r.x.iter().filter(|&&v| v > 0.0).count();
            if c < 2 {
                assert!(weighted > n_pairs(n) / 2, "case {c}: {weighted} of {} pairs weighted: the test wants a dense optimum", n_pairs(n));
            }
            if c == 1 {
                let at_bound = r.x.iter().filter(|&&v| v == p.upper).count();
                assert!(at_bound > 0 && at_bound < weighted, "case {c}: {at_bound} of {weighted} weights at the upper bound");
            }
            eprintln!("case {c}: {} Newton iterations ({} factorisations), {} of L-BFGS; {weighted} weighted", r.iterations, r.evaluations, full.iterations);
            // the MPME-shaped case (6% of the pairs weighted) is the model's weak case: Newton takes
            // more iterations than L-BFGS there, which is why the active-set solver hands over
            // only dense working sets (pair_active::DENSE_PAIR_FRACTION)
            assert!(c == 3 || r.iterations < full.iterations, "case {c}: {} Newton iterations against {} of L-BFGS", r.iterations, full.iterations);
            for h in r.history.windows(2) {
                assert!(h[1] <= h[0] + 2e-11 * h[0].abs(), "case {c}: f rose {} -> {}", h[0], h[1]);
            }
        }
    }

    /// Above [`DENSE_MIN_N`] samples a dense optimum makes the active-set solver hand over to
    /// projected Newton; the result is converged over all pairs, has the full-space optimum and
    /// is the same bit for bit on 1 and 3 threads.
    #[test]
    fn the_active_set_solver_hands_a_dense_problem_over() {
        let n = DENSE_MIN_N + 20;
        let phi = sq_distances(n, 9);
        let lin = esl_lin(&phi, 2.0, 0.05);
        let p = PairDual { n, a: 1.0, b: 4.0, h: 1.0, lin: &lin, upper: f64::INFINITY };
        let tol = 1e-7;
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| solve_active(&p, &ActiveOptions::new(tol, 20_000)).unwrap())
        };
        let (a, three) = (run(1), run(3));
        assert!(a.converged && a.newton_iterations > 0, "{}", a.message);
        // bit for bit on 1 and 3 threads
        assert_eq!(a.pairs, three.pairs);
        assert_eq!(a.w.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), three.w.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        let w = a.packed(n);
        let (f, g) = dense_f_g(&p, &w);
        assert!(projected_gradient_inf(&w, &g, p.upper) <= tol);
        let (newton, _) = solve_newton(&p, vec![0.0; n_pairs(n)], &NewtonOptions { tol_abs: tol, max_iter: 500, noise: 1e-11, memory: NEWTON_MEMORY }).unwrap();
        assert!((f - newton.f).abs() <= 1e-8 * f.abs(), "handed over: f = {f}; Newton from 0: {}", newton.f);
    }

    /// An optimum of ~10% of the pairs whose working sets pass 10% of the pairs on a sparse
    /// factor: without [`ActiveOptions::hand_over_sparse`] the solver stays on working sets, with
    /// it it hands over; both converge over all pairs (KKT recomputed densely) to the same `f`.
    #[test]
    fn a_sparse_working_set_of_a_tenth_of_the_pairs_hands_over_when_asked() {
        let n = DENSE_MIN_N + 20;
        let phi = sq_distances(n, 9);
        let lin = esl_lin(&phi, 3.0, 0.1);
        let p = PairDual { n, a: 1.0, b: 4.0, h: 1.0, lin: &lin, upper: f64::INFINITY };
        let tol = 1e-7;
        let solve = |hand_over_sparse: bool| solve_active(&p, &ActiveOptions { hand_over_sparse, ..ActiveOptions::new(tol, 20_000) }).unwrap();
        let (stay, hand) = (solve(false), solve(true));
        let tenth = n_pairs(n) / 10;
        assert!(
            stay.newton_iterations == 0 && stay.dense_sets == 0 && stay.max_working_set >= tenth,
            "the test wants a sparse working set of a tenth of the pairs: {} pairs at most, {} dense sets, {} Newton iterations",
            stay.max_working_set,
            stay.dense_sets,
            stay.newton_iterations
        );
        assert!(hand.newton_iterations > 0 && hand.dense_sets == 0, "{}", hand.message);
        let mut f = Vec::new();
        for r in [&stay, &hand] {
            assert!(r.converged, "{}", r.message);
            let w = r.packed(n);
            let (fw, g) = dense_f_g(&p, &w);
            assert!(projected_gradient_inf(&w, &g, p.upper) <= tol, "{}", r.message);
            f.push(fw);
        }
        assert!((f[0] - f[1]).abs() <= 1e-8 * f[0].abs(), "working sets: f = {}; handed over: f = {}", f[0], f[1]);
        eprintln!(
            "working sets: {} iterations; handed over: {} inner + {} Newton iterations",
            stay.iterations,
            hand.iterations - hand.newton_iterations,
            hand.newton_iterations
        );
    }
}
