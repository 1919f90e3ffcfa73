//! Least angle regression (Efron, Hastie, Johnstone & Tibshirani 2004), with the lasso
//! modification, stopped at a number of non-zero coefficients: MCFS's L1-regularised regression
//! per eigenvector (Cai, Zhang & He 2010, eq. 5 solved "by LARS with the cardinality constraint");
//! or, in Gram form, stopped where `C` reaches a given penalty ([`lasso_path_gram`]): the exact
//! lasso at that penalty, FSASL's per-sample reconstruction (the homotopy method of Osborne,
//! Presnell & Turlach 2000).
//!
//! `x` (N x M) and `y` (N) are used as given (the caller centres them: an intercept). With the
//! correlations `c = X' (y - X beta)`, `C = max |c|` and the active set `A` (`|c_A| = C`):
//!
//! 1. the equiangular direction: `G_AA w = s_A` (`s_A = sign(c_A)`, Cholesky of the active Gram
//!    matrix, updated by one row per addition and downdated by Givens rotations after a drop), `A_A = (s_A' w)^{-1/2}`,
//!    `w_A = A_A w`, `a = X' X_A w_A`;
//! 2. the step `gamma = min(gamma_add, gamma_drop, C / A_A)`, with
//!    `gamma_add = min+_{j not in A} { (C - c_j)/(A_A - a_j), (C + c_j)/(A_A + a_j) }` (the next
//!    variable whose correlation ties) and, for the lasso, `gamma_drop = min+_{j in A} -beta_j / w_j`
//!    (the first active coefficient to cross zero, which then leaves A);
//! 3. `beta_A += gamma w_A`, `c -= gamma a`.
//!
//! The path stops at the breakpoint where the next variable would join once `|A|` equals the
//! cardinality (so `beta` has that many non-zeros), or at the least-squares fit on A
//! (`gamma = C / A_A`, e.g. when no variable is left); with a penalty stop `lambda`, inside the
//! segment at `gamma = (C - lambda) / A_A` (every active correlation falls by `A_A` per unit
//! step). With the lasso modification every
//! breakpoint solves `min 1/2 ||y - X beta||^2 + lambda ||beta||_1` at `lambda = C`: the KKT
//! conditions `|X_j' (y - X beta)| <= lambda`, with equality and `sign(beta_j)` agreement where
//! `beta_j != 0` (tested). Plain LAR (`lasso = false`, scikit-learn's `Lars`, which
//! scikit-feature's MCFS calls) never drops, so its signs may disagree.
//!
//! A variable whose column is (numerically) in the span of the active columns, e.g. a duplicate
//! feature or a zero column, is excluded for good when it would enter (its Cholesky pivot
//! `<= PIVOT_RTOL G_jj`, [`PIVOT_RTOL`]), as scikit-learn does with a warning. Ties (within
//! [`TIE_RTOL`], relative) go to the lowest index.
//!
//! Cost: with the Gram matrix (`gram`, M x M, worth it when N > M) O(M |A|) per step; without,
//! O(N M) per step (one `X' u`).
//!
//! Considered: `linfa-elasticnet` (coordinate descent at a fixed penalty: no cardinality path,
//! and an extra dependency tree) and `smartcore`'s `Lasso` (the same); the LARS path to a
//! cardinality is what MCFS states, and is short to write exactly.

use ndarray::{Array1, ArrayView1, ArrayView2};

/// Why the path stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LarsEnd {
    /// The active set reached the requested cardinality (the next variable would join here).
    Cardinality,
    /// The least-squares fit on the active set was reached (no variable left to join).
    LeastSquares,
    /// `y` is orthogonal to every column (beta = 0).
    Zero,
    /// The step cap (8 x cardinality + 100; 8 x M + 100 for a penalty stop) was hit (lasso
    /// drops cycling).
    StepLimit,
    /// `C` reached the requested penalty ([`lasso_path_gram`]).
    Lambda,
}

/// The end point of a LARS path.
#[derive(Debug, Clone)]
pub struct LarsFit {
    /// Coefficients (M).
    pub coef: Array1<f64>,
    /// The active set, in order of entry.
    pub active: Vec<usize>,
    /// `C = max |X' (y - X beta)|` at the end point (the lasso's lambda there).
    pub lambda: f64,
    /// Steps taken.
    pub steps: usize,
    /// Variables dropped (lasso modification).
    pub drops: usize,
    /// Variables excluded as collinear with the active set.
    pub excluded: usize,
    /// Why it stopped.
    pub end: LarsEnd,
}

/// The design: `X` and/or its Gram matrix `X' X` (at least one of them).
struct Design<'a, 'b> {
    x: Option<ArrayView2<'a, f64>>,
    gram: Option<ArrayView2<'b, f64>>,
}

impl Design<'_, '_> {
    fn g(&self, i: usize, j: usize) -> f64 {
        match (&self.gram, &self.x) {
            (Some(g), _) => g[[i, j]],
            (None, Some(x)) => x.column(i).dot(&x.column(j)),
            (None, None) => unreachable!("a design has X or its Gram matrix"),
        }
    }
    /// `X' X_A w` (M).
    fn corr_dir(&self, active: &[usize], w: &[f64]) -> Array1<f64> {
        match (&self.gram, &self.x) {
            (Some(g), _) => {
                let mut a = Array1::zeros(g.nrows());
                for (&j, &wj) in active.iter().zip(w) {
                    a.scaled_add(wj, &g.row(j));
                }
                a
            }
            (None, Some(x)) => {
                let mut u = Array1::zeros(x.nrows());
                for (&j, &wj) in active.iter().zip(w) {
                    u.scaled_add(wj, &x.column(j));
                }
                x.t().dot(&u)
            }
            (None, None) => unreachable!("a design has X or its Gram matrix"),
        }
    }
}

/// Relative pivot at or below which a column counts as in the span of the active columns: the
/// pivot `G_jj - ||L_AA^-1 G_Aj||^2` is `G_jj sin^2 theta`, `theta` the angle between column j and
/// the active span. Kept small on purpose: `sqrt(eps)` (tried 2026-11-29) excluded nearly
/// collinear samples from FSASL's per-sample lasso on COIL20 and left it a KKT violation of
/// 3.4e-9 (relative) where this bound solves it to 1e-15. What made a duplicate feature's fate
/// depend on rounding was the tie to enter ([`TIE_RTOL`]), not this bound: with the tie settled,
/// the duplicate's pivot is rounding-level (exactly collinear) and far below it.
pub const PIVOT_RTOL: f64 = 1e-12;

/// Relative difference below which two variables tie to enter the active set (the largest
/// `|c_j|` at the start, the smallest step `gamma_j` after it), the tie going to the lowest index.
/// Two identical features have correlations `X_j' r` that differ in the last bits when BLAS
/// accumulates their columns in different lanes (and with the thread count), so an exact tie
/// test let rounding pick which of them entered (MCFS version 1: a duplicate scored beside its
/// original at one BLAS thread). 1e-10 is above the rounding of a dot product of up to about
/// 4.5e5 terms and below any difference the data can mean.
pub const TIE_RTOL: f64 = 1e-10;

/// Lower-triangular Cholesky factor of `G_AA`, grown one row at a time.
struct Chol {
    rows: Vec<Vec<f64>>,
}

impl Chol {
    /// Appends variable j; false (and nothing appended) if its pivot is at most `PIVOT_RTOL G_jj`.
    fn push(&mut self, d: &Design, active: &[usize], j: usize) -> bool {
        let gjj = d.g(j, j);
        let mut z = Vec::with_capacity(active.len() + 1);
        for (t, &a) in active.iter().enumerate() {
            let s: f64 = (0..t).map(|q| self.rows[t][q] * z[q]).sum();
            z.push((d.g(a, j) - s) / self.rows[t][t]);
        }
        let piv = gjj - z.iter().map(|v| v * v).sum::<f64>();
        if !(gjj > 0.0 && piv > PIVOT_RTOL * gjj) {
            return false;
        }
        z.push(piv.sqrt());
        self.rows.push(z);
        true
    }
    /// Removes variable `t` (row and column t of `G_AA`) in O(|A|^2): drop row t of L, then
    /// Givens rotations on column pairs (i, i + 1), i >= t, restore the triangle
    /// (`L Q Q' L' = L L'`).
    fn remove(&mut self, t: usize) {
        self.rows.remove(t);
        let n = self.rows.len();
        for i in t..n {
            let (a, b) = (self.rows[i][i], self.rows[i][i + 1]);
            let r = a.hypot(b);
            let (c, s) = (a / r, b / r);
            for k in i..n {
                let (x, y) = (self.rows[k][i], self.rows[k][i + 1]);
                self.rows[k][i] = c * x + s * y;
                self.rows[k][i + 1] = -s * x + c * y;
            }
            self.rows[i].truncate(i + 1);
        }
    }
    /// Solves `L L' w = b`.
    fn solve(&self, b: &[f64]) -> Vec<f64> {
        let n = b.len();
        let mut z = vec![0.0; n];
        for i in 0..n {
            let s: f64 = (0..i).map(|q| self.rows[i][q] * z[q]).sum();
            z[i] = (b[i] - s) / self.rows[i][i];
        }
        for i in (0..n).rev() {
            let s: f64 = ((i + 1)..n).map(|q| self.rows[q][i] * z[q]).sum();
            z[i] = (z[i] - s) / self.rows[i][i];
        }
        z
    }
}

/// The LARS (or LARS-lasso) path of `y` on the columns of `x` up to `max_nonzero` non-zero
/// coefficients (module doc). `gram`, when given, must be `x' x`.
pub fn lars(x: ArrayView2<f64>, gram: Option<ArrayView2<f64>>, y: ArrayView1<f64>, max_nonzero: usize, lasso: bool) -> LarsFit {
    let c = x.t().dot(&y);
    path(&Design { x: Some(x), gram }, c, None, Stop::Cardinality(max_nonzero), lasso)
}

/// The LARS-lasso path in Gram form, from `lambda_max = max_{j != skip} |b_j|` down to `lambda`:
/// the lasso `min_s 1/2 s' G s - b' s + lambda ||s||_1` (with `G = A' A`, `b = A' y` this is
/// `1/2 ||y - A s||^2 + lambda ||s||_1` up to a constant), `s_skip = 0` held fixed. Every
/// breakpoint solves the lasso at its `C`, and the path stops inside the segment where `C`
/// reaches `lambda` (end [`LarsEnd::Lambda`]), so the end point solves it at `lambda` exactly up
/// to the rounding of the path's updates; [`lasso_on_support`] re-solves it on the final support.
/// Cost O(p |A|) per step (one `G_A` row combination), p = `b.len()`.
pub fn lasso_path_gram(gram: ArrayView2<f64>, b: ArrayView1<f64>, skip: Option<usize>, lambda: f64) -> LarsFit {
    path(&Design { x: None, gram: Some(gram) }, b.to_owned(), skip, Stop::Lambda(lambda), true)
}

/// The lasso of [`lasso_path_gram`] solved on a given support with given signs:
/// `G_AA s_A = b_A - lambda sign_A` (Cholesky), `None` when `G_AA` is (numerically) singular or
/// a solved coefficient disagrees with its sign. Whether the result is the lasso's solution is
/// for the caller to check (its KKT conditions off the support, [`super::common::lasso_kkt`]).
pub fn lasso_on_support(gram: ArrayView2<f64>, b: ArrayView1<f64>, lambda: f64, support: &[usize], signs: &[f64]) -> Option<Array1<f64>> {
    let d = Design { x: None, gram: Some(gram) };
    let mut chol = Chol { rows: Vec::with_capacity(support.len()) };
    for (t, &j) in support.iter().enumerate() {
        if !chol.push(&d, &support[..t], j) {
            return None;
        }
    }
    let rhs: Vec<f64> = support.iter().zip(signs).map(|(&j, &sg)| b[j] - lambda * sg).collect();
    let sol = chol.solve(&rhs);
    let mut s = Array1::zeros(b.len());
    for ((&j, &sg), &v) in support.iter().zip(signs).zip(&sol) {
        if !(v * sg > 0.0) {
            return None;
        }
        s[j] = v;
    }
    Some(s)
}

/// The end point of [`lasso_active_set`].
#[derive(Debug, Clone)]
pub struct ActiveSetFit {
    /// Coefficients (p).
    pub coef: Array1<f64>,
    /// Support solves (one Cholesky factor of `G_AA` each).
    pub solves: usize,
}

/// The lasso of [`lasso_path_gram`] by the active-set descent of Osborne, Presnell & Turlach
/// (2000, section 3) from the start point `start` (`(j, s_j)` pairs, e.g. the solution of a
/// nearby problem): with the support `A` and its signs `theta`, `h_A = G_AA^-1 (b_A - lambda
/// theta)`; if a sign of `h` disagrees, move from `s` towards `h` to the first zero crossing and
/// drop that variable (the objective falls along the segment); otherwise `s = h`, and the
/// variable off A with the largest `|b_j - (G s)_j| > lambda + tol` joins with that sign. Ends
/// when no correlation off A exceeds `lambda + tol`: then `s` solves the lasso (the conditions on
/// A hold by construction). `None` when `G_AA` is (numerically) singular, a joining variable
/// moves against its sign (degenerate ties) or `max_solves` is reached: the caller then runs the
/// path from `lambda_max` ([`lasso_path_gram`]). Cost O(|A|^3 + p |A|) per solve.
pub fn lasso_active_set(
    gram: ArrayView2<f64>,
    b: ArrayView1<f64>,
    skip: Option<usize>,
    lambda: f64,
    start: &[(usize, f64)],
    tol: f64,
    max_solves: usize,
) -> Option<ActiveSetFit> {
    let p = b.len();
    let d = Design { x: None, gram: Some(gram) };
    let mut sup: Vec<usize> = Vec::new();
    let mut val: Vec<f64> = Vec::new();
    let mut theta: Vec<f64> = Vec::new();
    for &(j, v) in start {
        if v != 0.0 && Some(j) != skip && !sup.contains(&j) {
            sup.push(j);
            val.push(v);
            theta.push(v.signum());
        }
    }
    let mut solves = 0;
    loop {
        if !sup.is_empty() {
            if solves >= max_solves {
                return None;
            }
            solves += 1;
            let mut chol = Chol { rows: Vec::with_capacity(sup.len()) };
            for t in 0..sup.len() {
                if !chol.push(&d, &sup[..t], sup[t]) {
                    return None;
                }
            }
            let rhs: Vec<f64> = sup.iter().zip(&theta).map(|(&j, &th)| b[j] - lambda * th).collect();
            let h = chol.solve(&rhs);
            // the first zero crossing on the segment from s to h
            let (mut t_min, mut k_min) = (1.0f64, usize::MAX);
            for k in 0..sup.len() {
                if !(h[k] * theta[k] > 0.0) {
                    if val[k] == 0.0 {
                        return None;
                    }
                    let t = val[k] / (val[k] - h[k]);
                    if t < t_min {
                        t_min = t;
                        k_min = k;
                    }
                }
            }
            if k_min != usize::MAX {
                for k in 0..sup.len() {
                    val[k] += t_min * (h[k] - val[k]);
                }
                sup.remove(k_min);
                val.remove(k_min);
                theta.remove(k_min);
                continue;
            }
            val = h;
        }
        // the correlations off the support
        let mut r = b.to_owned();
        for (&j, &v) in sup.iter().zip(&val) {
            r.scaled_add(-v, &gram.row(j));
        }
        let (mut worst, mut j_add) = (lambda + tol, usize::MAX);
        for j in 0..p {
            if Some(j) != skip && r[j].abs() > worst && !sup.contains(&j) {
                worst = r[j].abs();
                j_add = j;
            }
        }
        if j_add == usize::MAX {
            let mut coef = Array1::zeros(p);
            for (&j, &v) in sup.iter().zip(&val) {
                coef[j] = v;
            }
            return Some(ActiveSetFit { coef, solves });
        }
        sup.push(j_add);
        val.push(0.0);
        theta.push(r[j_add].signum());
    }
}

/// Where a path stops.
#[derive(Clone, Copy)]
enum Stop {
    /// At this many non-zero coefficients (MCFS).
    Cardinality(usize),
    /// Where `C` reaches this penalty (FSASL's per-sample lasso).
    Lambda(f64),
}

/// The path of the module doc from the correlations `c = X' y`, variable `skip` never entering.
fn path(d: &Design, mut c: Array1<f64>, skip: Option<usize>, stop: Stop, lasso: bool) -> LarsFit {
    let m = c.len();
    let mut beta = Array1::<f64>::zeros(m);
    let mut in_active = vec![false; m];
    let mut excluded = vec![false; m];
    if let Some(k) = skip {
        excluded[k] = true;
    }
    let mut active: Vec<usize> = Vec::new();
    let mut signs: Vec<f64> = Vec::new();
    let mut chol = Chol { rows: Vec::new() };
    let (mut steps, mut drops, mut n_excluded) = (0usize, 0usize, 0usize);
    let (target, lambda_stop) = match stop {
        Stop::Cardinality(k) => (k.min(m).max(1), None),
        Stop::Lambda(l) => (m, Some(l)),
    };
    let step_cap = 8 * target + 100;
    let cmax = |c: &Array1<f64>, idx: &mut dyn Iterator<Item = usize>| idx.fold(0.0f64, |acc, j| acc.max(c[j].abs()));
    let free = |j: usize| Some(j) != skip;

    if let Some(l) = lambda_stop {
        if cmax(&c, &mut (0..m).filter(|&j| free(j))) <= l {
            return LarsFit { coef: beta, active, lambda: l, steps, drops, excluded: n_excluded, end: LarsEnd::Lambda };
        }
    }
    // the first variable(s): the largest |c_j|, ties (within TIE_RTOL) to the lowest index,
    // collinear ones skipped
    let mut order: Vec<usize> = (0..m).filter(|&j| free(j)).collect();
    order.sort_by(|&a, &b| c[b].abs().total_cmp(&c[a].abs()).then(a.cmp(&b)));
    let c0 = order.first().map_or(0.0, |&j| c[j].abs());
    let near = order.iter().take_while(|&&j| c[j].abs() >= c0 * (1.0 - TIE_RTOL)).count();
    order[..near].sort_unstable();
    for &j in &order {
        if c[j] == 0.0 {
            break;
        }
        if chol.push(d, &active, j) {
            active.push(j);
            in_active[j] = true;
            signs.push(c[j].signum());
            break;
        }
        excluded[j] = true;
        n_excluded += 1;
    }
    if active.is_empty() {
        let lambda = cmax(&c, &mut (0..m).filter(|&j| free(j)));
        return LarsFit { coef: beta, active, lambda, steps, drops, excluded: n_excluded, end: LarsEnd::Zero };
    }
    // a variable that just left A (and any exact duplicate of it) ties at |c_j| = C: in the next
    // step its tie on that side (gamma = 0) is not an event; its other side still is
    let mut just_dropped: Vec<usize> = Vec::new();
    let end = loop {
        if steps >= step_cap {
            break LarsEnd::StepLimit;
        }
        steps += 1;
        let big_c = cmax(&c, &mut active.iter().copied());
        let w0 = chol.solve(&signs);
        let aa = 1.0 / signs.iter().zip(&w0).map(|(s, w)| s * w).sum::<f64>().sqrt();
        let w: Vec<f64> = w0.iter().map(|v| v * aa).collect();
        let a = d.corr_dir(&active, &w);
        let tol = 16.0 * f64::EPSILON * aa;
        let (mut g_add, mut j_add) = (f64::INFINITY, usize::MAX);
        for j in 0..m {
            if in_active[j] || excluded[j] {
                continue;
            }
            let tied = just_dropped.contains(&j);
            for (num, den) in [(big_c - c[j], aa - a[j]), (big_c + c[j], aa + a[j])] {
                if den > tol && !(tied && num <= 1e-9 * big_c) {
                    let g = num.max(0.0) / den;
                    // j runs upwards: a later variable must come first by more than the
                    // rounding (TIE_RTOL) to take the place of an earlier one (any finite g
                    // beats the initial infinity)
                    if g < g_add * (1.0 - TIE_RTOL) {
                        g_add = g;
                        j_add = j;
                    }
                }
            }
        }
        let (mut g_drop, mut t_drop) = (f64::INFINITY, usize::MAX);
        if lasso {
            for (t, &j) in active.iter().enumerate() {
                if beta[j] != 0.0 && w[t] != 0.0 {
                    let g = -beta[j] / w[t];
                    if g > 0.0 && g < g_drop {
                        g_drop = g;
                        t_drop = t;
                    }
                }
            }
        }
        let g_full = big_c / aa;
        // the step at which C (which falls by aa per unit step) reaches the stopping penalty
        let g_lambda = lambda_stop.map_or(f64::INFINITY, |l| ((big_c - l) / aa).max(0.0));
        let gamma = g_add.min(g_drop).min(g_full).min(g_lambda);
        for (t, &j) in active.iter().enumerate() {
            beta[j] += gamma * w[t];
        }
        c.scaled_add(-gamma, &a);
        just_dropped.clear();
        if g_lambda <= gamma {
            break LarsEnd::Lambda;
        }
        if g_drop <= gamma && g_drop < g_add {
            let j = active.remove(t_drop);
            signs.remove(t_drop);
            beta[j] = 0.0;
            in_active[j] = false;
            drops += 1;
            let c_now = cmax(&c, &mut active.iter().copied());
            just_dropped = (0..m).filter(|&q| !in_active[q] && !excluded[q] && c[q].abs() >= c_now * (1.0 - 1e-12)).collect();
            just_dropped.push(j);
            chol.remove(t_drop);
            continue;
        }
        if g_full <= g_add {
            break LarsEnd::LeastSquares;
        }
        if active.len() >= target {
            break LarsEnd::Cardinality;
        }
        if chol.push(d, &active, j_add) {
            active.push(j_add);
            in_active[j_add] = true;
            signs.push(c[j_add].signum());
        } else {
            excluded[j_add] = true;
            n_excluded += 1;
        }
    };
    let lambda = match (end, lambda_stop) {
        (LarsEnd::Lambda, Some(l)) => l,
        _ => cmax(&c, &mut active.iter().copied()),
    };
    LarsFit { coef: beta, active, lambda, steps, drops, excluded: n_excluded, end }
}

/// The KKT residual of the lasso at `beta` with penalty `lambda`, relative to the path's start
/// `C_0 = max_j |X_j' y|`:
/// `max( max_j (|c_j| - lambda)_+, max_{beta_j != 0} |c_j - lambda sign(beta_j)| ) / C_0` with
/// `c = X' (y - X beta)` recomputed from scratch (relative to `C_0`, not `lambda`, so that an end
/// point at `lambda` near 0, the least-squares fit, is measured on the problem's scale).
pub fn lasso_kkt_residual(x: ArrayView2<f64>, y: ArrayView1<f64>, beta: ArrayView1<f64>, lambda: f64) -> f64 {
    let r = &y - &x.dot(&beta);
    let c = x.t().dot(&r);
    let mut worst = 0.0f64;
    for j in 0..c.len() {
        worst = worst.max(c[j].abs() - lambda);
        if beta[j] != 0.0 {
            worst = worst.max((c[j] - lambda * beta[j].signum()).abs());
        }
    }
    let c0 = x.t().dot(&y).iter().fold(0.0f64, |a, v| a.max(v.abs()));
    if c0 == 0.0 {
        return worst.max(0.0);
    }
    worst / c0
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array2, Axis};
    use rand::{Rng, SeedableRng};

    fn problem(seed: u64, n: usize, m: usize) -> (Array2<f64>, Array1<f64>) {
        let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut x = Array2::from_shape_fn((n, m), |_| r.gen_range(-1.0..1.0));
        // correlated columns make the lasso drop variables
        for i in 0..n {
            x[[i, 1]] = 0.9 * x[[i, 0]] + 0.1 * x[[i, 1]];
            x[[i, 3]] = -0.8 * x[[i, 2]] + 0.2 * x[[i, 3]];
        }
        let mean = x.mean_axis(Axis(0)).unwrap();
        x -= &mean.insert_axis(Axis(0));
        let mut y = Array1::from_shape_fn(n, |i| 2.0 * x[[i, 0]] - 1.5 * x[[i, 1]] + x[[i, 3]] + 0.3 * r.gen_range(-1.0..1.0));
        let my = y.mean().unwrap();
        y -= my;
        (x, y)
    }

    /// Every end point of the LARS-lasso path satisfies the lasso's KKT conditions at lambda = C,
    /// with and without the Gram matrix (the same path).
    #[test]
    fn lasso_end_points_satisfy_kkt() {
        let mut drops = 0;
        for seed in 0..20 {
            let (n, m) = if seed % 2 == 0 { (40, 12) } else { (15, 30) };
            let (x, y) = problem(seed, n, m);
            let g = x.t().dot(&x);
            for card in 1..=m.min(n - 1) {
                let f = lars(x.view(), Some(g.view()), y.view(), card, true);
                let f2 = lars(x.view(), None, y.view(), card, true);
                assert_eq!(f.active, f2.active, "seed {seed} card {card}");
                drops += f.drops;
                let res = lasso_kkt_residual(x.view(), y.view(), f.coef.view(), f.lambda);
                assert!(res < 1e-9, "seed {seed} card {card}: KKT residual {res:e} ({:?})", f.end);
                let nnz = f.coef.iter().filter(|&&b| b != 0.0).count();
                if f.end == LarsEnd::Cardinality {
                    assert_eq!(nnz, card, "seed {seed}");
                }
                // sign agreement on the active set (where lambda is not at rounding level: the
                // least-squares end has c = 0 up to rounding)
                let c = x.t().dot(&(&y - &x.dot(&f.coef)));
                let c0 = x.t().dot(&y).iter().fold(0.0f64, |a, v| a.max(v.abs()));
                if f.lambda > 1e-8 * c0 {
                    for &j in &f.active {
                        assert!(f.coef[j] == 0.0 || f.coef[j].signum() == c[j].signum(), "seed {seed} card {card} variable {j}");
                    }
                }
            }
        }
        assert!(drops > 0, "the test problems never exercise a drop");
    }

    /// The penalty-stopped path in Gram form ends at the lasso's solution at that penalty (the
    /// skipped variable held at 0), on tall and wide designs, and the active-set descent from
    /// 0 or from another penalty's solution reaches the same point.
    #[test]
    fn penalty_stop_and_active_set_solve_the_lasso() {
        let mut finished = 0;
        for seed in 0..10 {
            let (n, m) = if seed % 2 == 0 { (40, 12) } else { (6, 30) };
            let (x, y) = problem(seed, n, m);
            let g = x.t().dot(&x);
            let b = x.t().dot(&y);
            let k = seed as usize % m;
            let skip = Some(k);
            let bmax = (0..m).filter(|&j| Some(j) != skip).fold(0.0f64, |a, j| a.max(b[j].abs()));
            let mut previous: Vec<(usize, f64)> = Vec::new();
            for ratio in [0.9, 0.5, 0.1, 0.01, 0.001] {
                let lambda = ratio * bmax;
                let f = lasso_path_gram(g.view(), b.view(), skip, lambda);
                assert_eq!(f.end, LarsEnd::Lambda, "seed {seed} ratio {ratio}");
                assert_eq!(f.coef[k], 0.0);
                let xs = x.select(ndarray::Axis(1), &(0..m).filter(|&j| Some(j) != skip).collect::<Vec<_>>());
                let cs = f.coef.iter().enumerate().filter(|&(j, _)| Some(j) != skip).map(|(_, &v)| v).collect::<Array1<f64>>();
                let res = lasso_kkt_residual(xs.view(), y.view(), cs.view(), lambda);
                assert!(res < 1e-9, "seed {seed} ratio {ratio}: {res:e}");
                for start in [Vec::new(), previous.clone()] {
                    // on the wide design a support may outgrow the rank (G_AA singular): the
                    // descent then gives up (the caller's path takes over); on the tall one it
                    // always finishes
                    match lasso_active_set(g.view(), b.view(), skip, lambda, &start, 1e-12 * bmax, 200) {
                        Some(a) => {
                            let d = (&a.coef - &f.coef).iter().fold(0.0f64, |u, v| u.max(v.abs()));
                            assert!(d <= 1e-9 * f.coef.iter().fold(1.0f64, |u, v| u.max(v.abs())), "seed {seed} ratio {ratio}: {d:e}");
                            finished += 1;
                        }
                        None => assert!(n < m, "seed {seed} ratio {ratio}: the descent gave up on a tall design"),
                    }
                }
                previous = f.coef.iter().enumerate().filter(|(_, &v)| v != 0.0).map(|(j, &v)| (j, v)).collect();
                // the path's end re-solved on its support with its signs is the same point
                let sup: Vec<usize> = previous.iter().map(|e| e.0).collect();
                let sg: Vec<f64> = previous.iter().map(|e| e.1.signum()).collect();
                let p = lasso_on_support(g.view(), b.view(), lambda, &sup, &sg).expect("support solve");
                assert!((&p - &f.coef).iter().all(|v| v.abs() < 1e-9), "seed {seed} ratio {ratio}");
            }
        }
        assert!(finished >= 50, "{finished} of 100 descents finished");
    }

    /// Removing a variable from the Cholesky factor equals factoring the reduced Gram matrix.
    #[test]
    fn cholesky_downdate_equals_refactoring() {
        let (x, _) = problem(7, 30, 8);
        let g = x.t().dot(&x);
        let d = Design { x: Some(x.view()), gram: Some(g.view()) };
        let vars = [3usize, 0, 6, 1, 5, 2];
        for t in 0..vars.len() {
            let mut full = Chol { rows: Vec::new() };
            for (q, &v) in vars.iter().enumerate() {
                assert!(full.push(&d, &vars[..q], v));
            }
            full.remove(t);
            let kept: Vec<usize> = vars.iter().enumerate().filter(|&(q, _)| q != t).map(|(_, &v)| v).collect();
            let mut fresh = Chol { rows: Vec::new() };
            for (q, &v) in kept.iter().enumerate() {
                assert!(fresh.push(&d, &kept[..q], v));
            }
            for (a, b) in full.rows.iter().zip(&fresh.rows) {
                assert_eq!(a.len(), b.len());
                for (u, v) in a.iter().zip(b) {
                    assert!((u - v).abs() < 1e-12, "t = {t}: {a:?} vs {b:?}");
                }
            }
        }
    }

    /// Plain LAR keeps equal correlations on the active set and below them elsewhere.
    #[test]
    fn lar_keeps_equal_correlations() {
        let (x, y) = problem(99, 50, 10);
        let c0 = x.t().dot(&y).iter().fold(0.0f64, |a, v| a.max(v.abs()));
        for card in 1..=10 {
            let f = lars(x.view(), None, y.view(), card, false);
            let c = x.t().dot(&(&y - &x.dot(&f.coef)));
            for j in 0..10 {
                assert!(c[j].abs() <= f.lambda + 1e-10 * c0);
            }
            for &j in &f.active {
                assert!((c[j].abs() - f.lambda).abs() < 1e-10 * c0);
            }
            assert_eq!(f.active.len(), card);
        }
    }

    /// A duplicated column and a zero column never enter; y orthogonal to X gives beta = 0.
    #[test]
    fn collinear_and_zero_columns() {
        let (mut x, y) = problem(5, 30, 6);
        for i in 0..30 {
            x[[i, 5]] = x[[i, 0]];
            x[[i, 4]] = 0.0;
        }
        let f = lars(x.view(), None, y.view(), 6, true);
        assert!(!(f.active.contains(&0) && f.active.contains(&5)));
        assert!(!f.active.contains(&4) && f.coef[4] == 0.0);
        assert!(f.coef.iter().all(|v| v.is_finite()));
        let z = lars(x.view(), None, Array1::zeros(30).view(), 3, true);
        assert_eq!(z.end, LarsEnd::Zero);
        assert!(z.coef.iter().all(|&v| v == 0.0));
    }

    /// Two identical columns whose correlations differ in the last bits (as when BLAS forms
    /// `X' y` in different lanes): the lower index enters, whichever correlation rounded higher,
    /// and the copy never does (it stays tied with the original), on both orders of the rounding.
    #[test]
    fn a_duplicate_column_loses_the_tie_to_enter_whatever_its_rounding() {
        let (mut x, y) = problem(5, 30, 6);
        for i in 0..30 {
            x[[i, 5]] = x[[i, 2]];
        }
        let g = x.t().dot(&x);
        let b0 = x.t().dot(&y);
        // make the duplicated pair the strongest, then give the copy the larger rounding, then
        // the smaller one
        let top = b0.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        for bump in [1e-13, -1e-13] {
            let mut b = b0.clone();
            b[2] = 2.0 * top;
            b[5] = 2.0 * top * (1.0 + bump);
            let f = lasso_path_gram(g.view(), b.view(), None, 0.5 * top);
            assert_eq!(f.active[0], 2, "bump {bump:e}: {f:?}");
            assert!(!f.active.contains(&5) && f.coef[5] == 0.0, "bump {bump:e}: {f:?}");
        }
    }
}
