//! Least angle regression (Efron, Hastie, Johnstone & Tibshirani 2004), with the lasso
//! modification, stopped at a number of non-zero coefficients: MCFS's L1-regularised regression
//! per eigenvector (Cai, Zhang & He 2010, eq. 5 solved "by LARS with the cardinality constraint").
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
//! (`gamma = C / A_A`, e.g. when no variable is left). With the lasso modification every
//! breakpoint solves `min 1/2 ||y - X beta||^2 + lambda ||beta||_1` at `lambda = C`: the KKT
//! conditions `|X_j' (y - X beta)| <= lambda`, with equality and `sign(beta_j)` agreement where
//! `beta_j != 0` (tested). Plain LAR (`lasso = false`, scikit-learn's `Lars`, which
//! scikit-feature's MCFS calls) never drops, so its signs may disagree.
//!
//! A variable whose column is (numerically) in the span of the active columns, e.g. a duplicate
//! feature or a zero column, is excluded for good when it would enter (its Cholesky pivot
//! `< 1e-12 G_jj`), as scikit-learn does with a warning. Ties go to the lowest index.
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
    /// The step cap (8 x cardinality + 100) was hit (lasso drops cycling).
    StepLimit,
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

/// The design: `X` and, optionally, its Gram matrix `X' X`.
struct Design<'a, 'b> {
    x: ArrayView2<'a, f64>,
    gram: Option<ArrayView2<'b, f64>>,
}

impl Design<'_, '_> {
    fn g(&self, i: usize, j: usize) -> f64 {
        match &self.gram {
            Some(g) => g[[i, j]],
            None => self.x.column(i).dot(&self.x.column(j)),
        }
    }
    /// `X' X_A w` (M).
    fn corr_dir(&self, active: &[usize], w: &[f64]) -> Array1<f64> {
        match &self.gram {
            Some(g) => {
                let mut a = Array1::zeros(g.nrows());
                for (&j, &wj) in active.iter().zip(w) {
                    a.scaled_add(wj, &g.row(j));
                }
                a
            }
            None => {
                let mut u = Array1::zeros(self.x.nrows());
                for (&j, &wj) in active.iter().zip(w) {
                    u.scaled_add(wj, &self.x.column(j));
                }
                self.x.t().dot(&u)
            }
        }
    }
}

/// Lower-triangular Cholesky factor of `G_AA`, grown one row at a time.
struct Chol {
    rows: Vec<Vec<f64>>,
}

impl Chol {
    /// Appends variable j; false (and nothing appended) if its pivot is below `1e-12 G_jj`.
    fn push(&mut self, d: &Design, active: &[usize], j: usize) -> bool {
        let gjj = d.g(j, j);
        let mut z = Vec::with_capacity(active.len() + 1);
        for (t, &a) in active.iter().enumerate() {
            let s: f64 = (0..t).map(|q| self.rows[t][q] * z[q]).sum();
            z.push((d.g(a, j) - s) / self.rows[t][t]);
        }
        let piv = gjj - z.iter().map(|v| v * v).sum::<f64>();
        if !(gjj > 0.0 && piv > 1e-12 * gjj) {
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
    let m = x.ncols();
    let d = Design { x, gram };
    let mut c = x.t().dot(&y);
    let mut beta = Array1::<f64>::zeros(m);
    let mut in_active = vec![false; m];
    let mut excluded = vec![false; m];
    let mut active: Vec<usize> = Vec::new();
    let mut signs: Vec<f64> = Vec::new();
    let mut chol = Chol { rows: Vec::new() };
    let (mut steps, mut drops, mut n_excluded) = (0usize, 0usize, 0usize);
    let target = max_nonzero.min(m).max(1);
    let step_cap = 8 * target + 100;
    let cmax = |c: &Array1<f64>, idx: &mut dyn Iterator<Item = usize>| idx.fold(0.0f64, |acc, j| acc.max(c[j].abs()));

    // the first variable(s): the largest |c_j|, ties to the lowest index, collinear ones skipped
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| c[b].abs().total_cmp(&c[a].abs()).then(a.cmp(&b)));
    for &j in &order {
        if c[j] == 0.0 {
            break;
        }
        if chol.push(&d, &active, j) {
            active.push(j);
            in_active[j] = true;
            signs.push(c[j].signum());
            break;
        }
        excluded[j] = true;
        n_excluded += 1;
    }
    if active.is_empty() {
        let lambda = cmax(&c, &mut (0..m));
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
                    if g < g_add {
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
        let gamma = g_add.min(g_drop).min(g_full);
        for (t, &j) in active.iter().enumerate() {
            beta[j] += gamma * w[t];
        }
        c.scaled_add(-gamma, &a);
        just_dropped.clear();
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
        if chol.push(&d, &active, j_add) {
            active.push(j_add);
            in_active[j_add] = true;
            signs.push(c[j_add].signum());
        } else {
            excluded[j_add] = true;
            n_excluded += 1;
        }
    };
    let lambda = cmax(&c, &mut active.iter().copied());
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

    /// Removing a variable from the Cholesky factor equals factoring the reduced Gram matrix.
    #[test]
    fn cholesky_downdate_equals_refactoring() {
        let (x, _) = problem(7, 30, 8);
        let g = x.t().dot(&x);
        let d = Design { x: x.view(), gram: Some(g.view()) };
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
}
