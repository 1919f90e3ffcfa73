//! SPFS: similarity preserving feature selection (Zhao, Wang, Liu & Ye, TKDE 2013), the two
//! unsupervised solvers that the FSASL authors' harness runs (`fs_unsup_spfs.m`).
//!
//! With `X` (N x D, samples in rows) and the Gaussian similarity
//! `K_ij = exp(-||x_i - x_j||^2 / t)`, `t = width x sigma_0^2`, `sigma_0` the median of the N^2
//! pairwise Euclidean distances (the harness's `optSigma`, diagonal zeros included), SPFS selects
//! the feature subset S whose linear kernel best preserves K:
//!
//! `min_S ||K - X_S X_S^T||_F^2`.
//!
//! ## `variant = "sfs"`: sequential forward selection
//! With the residual `R_m = K - sum_{s in S_m} x_s x_s^T` after m picks, adding feature f changes
//! the criterion by `||R_m - x_f x_f^T||^2 - ||R_m||^2 = (x_f^T x_f)^2 - 2 x_f^T R_m x_f`; the
//! greedy picks the f with the smallest change (ties: lowest index). Since
//! `x_f^T R_m x_f = x_f^T K x_f - sum_{s in S_m} (x_s^T x_f)^2`, one product `K X` (N^2 D
//! flops) and the Gram matrix `X^T X` (N D^2) give every step in O(D): the whole order of the D
//! features costs `N^2 D + N D^2 + D^2` flops (COIL20: 2.1e9 + 1.5e9), with the N x N kernel
//! held once (the criterion needs the full K). Scores: `D - position` (the order itself).
//! The recorded history is `||R_m||_F^2` after each pick (`||K||^2` plus the summed changes).
//!
//! ## `variant = "nes"`: the l2,1-regularised relaxation
//! `K ~ Y Y^T` with `Y = V_c diag(sqrt(max(lambda_c, eps)))`, the c leading eigenpairs of K; then
//!
//! `min_W 1/2 ||X W - Y||_F^2 + lambda ||W||_{2,1}`
//!
//! by accelerated proximal gradient (FISTA with the row-wise group soft threshold, step
//! `1 / ||X||_2^2`; SLEP's `mcLeastR`, which the harness calls, is the same accelerated scheme)
//! along a path `lambda_p = lambda_max r^p`, `p = 0..n_lambdas-1`,
//! `r = lambda_min^(1/(n_lambdas-1))`, `lambda_max = max_f ||x_f^T Y||` (the smallest lambda with
//! W = 0), each point warm-started from the last and stopped when the KKT violation
//! (`||g_f + lambda w_f / ||w_f|| ||` on nonzero rows, `max(0, ||g_f|| - lambda)` on zero rows,
//! `g = X^T (X W - Y)`) is at most `tol lambda_max`. A feature's score is the path level at which
//! its row first becomes nonzero, `n_lambdas - p`, plus `||w_f||_p / (2 max ||w_g||_p)` among the
//! rows entering at the same level (0 if it never enters). The harness instead bisects lambda per
//! number of features b until about b rows are nonzero and ranks those by norm; the entry order
//! on the path gives one ranking for every b (see docs/parity/spfs.md).
//!
//! ## Defaults and grids
//! width = 1 (harness grid `2^[-3:3]`), variant "sfs" (harness: both); NES: n_clusters c = the
//! class count (harness: `nClass`), 20 path points down to `lambda_min = 1e-3`, at most 500
//! proximal steps per point (SLEP's maxIter in the harness), tol = 1e-4.

use super::common::rank_by_weight;
use crate::api::declare::{self, declare_params, param_choice, Declared};
use crate::api::info::{choice, float, int, positive, MethodInfo};
use crate::api::{
    check_dense_size, check_input, numerical, Embedder, FeatureScores, FitInput, Fitted, MethodError, Output, OutputKind, ParamMap, Result, StopReason, Trace,
};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis, Zip};
use structdr_linalg::eigh_top;

const NAME: &str = "spfs";

param_choice! {
    /// The SPFS solver.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum SpfsVariant {
        /// Sequential forward selection on `||K - X_S X_S^T||^2`.
        Sfs = "sfs",
        /// The l2,1-regularised regression on the kernel's factor.
        Nes = "nes",
    }
}

declare_params! {
    /// SPFS parameters (Zhao, Wang, Liu & Ye 2013; the FSASL harness's grid).
    #[derive(Debug, Clone)]
    pub struct Spfs {
        /// Solver.
        pub variant: SpfsVariant = choice("variant", SpfsVariant::NAMES, "sfs", "sfs = sequential forward selection on ||K - X_S X_S^T||_F^2 (rank-one updates); nes = l2,1-regularised regression of the kernel factor Y (K ~ Y Y^T) on X along a lambda path, features ranked by entry"),
        /// Kernel width relative to the median distance.
        pub width: f64 = positive("width", 1.0, "Gaussian similarity K_ij = exp(-||x_i - x_j||^2 / t), t = width x sigma_0^2, sigma_0 the median pairwise distance (the harness's optSigma; grid 2^[-3:3])"),
        /// NES: columns of the kernel factor.
        pub n_clusters: usize = int("n_clusters", 1, 3, "nes: columns c of the kernel factor Y (the harness uses the class count)"),
        /// NES: path length.
        pub n_lambdas: usize = int("n_lambdas", 2, 20, "nes: points of the lambda path lambda_max r^p"),
        /// NES: smallest lambda over lambda_max.
        pub lambda_min: f64 = float("lambda_min", 0.0, 1.0, 1e-3, "nes: the path ends at lambda_min x lambda_max"),
        /// NES: proximal steps per path point.
        pub max_iter: usize = int("max_iter", 1, 500, "nes: accelerated proximal-gradient steps per path point (SLEP maxIter in the harness: 500)"),
        /// NES: KKT tolerance.
        pub tol: f64 = float("tol", 0.0, 1.0, 1e-4, "nes: stop a path point when its KKT violation is <= tol x lambda_max"),
        // read by the evaluation, not the fit
        _ = super::common::n_selected(),
    }
}

/// The median of the N^2 pairwise Euclidean distances, zeros on the diagonal included (the
/// harness's `optSigma`; MATLAB's median of an even count averages the two middle values).
pub fn median_distance(x: ArrayView2<f64>) -> f64 {
    let mut d: Vec<f64> = structdr_linalg::sq_dists(x).iter().map(|&v| v.max(0.0).sqrt()).collect();
    let n = d.len();
    if n == 0 {
        return 0.0;
    }
    let mid = n / 2;
    let (_, &mut hi, _) = d.select_nth_unstable_by(mid, f64::total_cmp);
    if n % 2 == 1 {
        hi
    } else {
        let lo = d[..mid].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        0.5 * (lo + hi)
    }
}

/// `K_ij = exp(-||x_i - x_j||^2 / t)` (dense N x N).
pub fn gaussian_kernel(x: ArrayView2<f64>, t: f64) -> Array2<f64> {
    structdr_linalg::sq_dists(x).mapv(|d2| (-d2.max(0.0) / t).exp())
}

/// The SFS order of all D features and `||R_m||_F^2` after each pick (module doc).
pub fn sfs_order(x: ArrayView2<f64>, k: ArrayView2<f64>) -> (Vec<usize>, Vec<f64>) {
    let d = x.ncols();
    let kx = k.dot(&x);
    let quad: Array1<f64> = Zip::from(x.axis_iter(Axis(1))).and(kx.axis_iter(Axis(1))).map_collect(|a, b| a.dot(&b));
    let gram = x.t().dot(&x);
    let mut explained = Array1::<f64>::zeros(d); // sum_{s in S} (x_s^T x_f)^2
    let mut chosen = vec![false; d];
    let mut order = Vec::with_capacity(d);
    let mut resid = k.iter().map(|v| v * v).sum::<f64>();
    let mut history = Vec::with_capacity(d);
    for _ in 0..d {
        let mut best: Option<(usize, f64)> = None;
        for f in 0..d {
            if chosen[f] {
                continue;
            }
            let nf = gram[[f, f]];
            let change = nf * nf - 2.0 * (quad[f] - explained[f]);
            if best.is_none_or(|(_, c)| change < c) {
                best = Some((f, change));
            }
        }
        let (s, change) = best.expect("an unchosen feature remains");
        chosen[s] = true;
        order.push(s);
        resid += change;
        history.push(resid);
        Zip::from(&mut explained).and(gram.row(s)).for_each(|e, &g| *e += g * g);
    }
    (order, history)
}

/// The kernel factor `Y = V_c diag(sqrt(max(lambda, eps)))` of the c leading eigenpairs of K.
pub fn kernel_factor(k: ArrayView2<f64>, c: usize) -> Result<Array2<f64>> {
    let e = eigh_top(k, c).map_err(numerical(NAME))?;
    let scale = e.values.mapv(|v| v.max(f64::EPSILON).sqrt());
    Ok(e.vectors * scale.view().insert_axis(Axis(0)))
}

/// The group-lasso KKT violation of `min 1/2||XW - Y||^2 + lambda ||W||_{2,1}` at W, given the
/// gradient `g = X^T (X W - Y)` (module doc).
pub fn group_lasso_kkt(g: ArrayView2<f64>, w: ArrayView2<f64>, lambda: f64) -> f64 {
    let mut worst = 0.0f64;
    for (gr, wr) in g.outer_iter().zip(w.outer_iter()) {
        let nw = wr.dot(&wr).sqrt();
        let v =
            if nw > 0.0 { gr.iter().zip(wr).map(|(a, b)| (a + lambda * b / nw).powi(2)).sum::<f64>().sqrt() } else { (gr.dot(&gr).sqrt() - lambda).max(0.0) };
        worst = worst.max(v);
    }
    worst
}

/// `min_W 1/2||XW - Y||^2 + lambda ||W||_{2,1}` through the gradient map `grad(W) = X^T X W - X^T Y`.
struct GroupLasso<'a> {
    x: ArrayView2<'a, f64>,
    /// `X^T X` when D <= N (else products go through X).
    gram: Option<Array2<f64>>,
    xty: Array2<f64>,
    /// Lipschitz constant `||X||_2^2`.
    lip: f64,
}

impl GroupLasso<'_> {
    fn grad(&self, w: ArrayView2<f64>) -> Array2<f64> {
        match &self.gram {
            Some(g) => g.dot(&w) - &self.xty,
            None => self.x.t().dot(&self.x.dot(&w)) - &self.xty,
        }
    }

    /// FISTA from `w0`; returns W, steps and the final KKT violation.
    fn solve(&self, w0: Array2<f64>, lambda: f64, max_iter: usize, target: f64) -> (Array2<f64>, usize, f64) {
        let step = 1.0 / self.lip;
        let mut w = w0;
        let mut z = w.clone();
        let mut t = 1.0f64;
        let mut kkt = group_lasso_kkt(self.grad(w.view()).view(), w.view(), lambda);
        let mut steps = 0;
        while kkt > target && steps < max_iter {
            let g = self.grad(z.view());
            let mut wn = &z - &(g * step);
            for mut row in wn.outer_iter_mut() {
                let nr = row.dot(&row).sqrt();
                let shrink = if nr > lambda * step { 1.0 - lambda * step / nr } else { 0.0 };
                row *= shrink;
            }
            let tn = 0.5 * (1.0 + (1.0 + 4.0 * t * t).sqrt());
            z = &wn + &((&wn - &w) * ((t - 1.0) / tn));
            w = wn;
            t = tn;
            steps += 1;
            if steps % 10 == 0 || steps == max_iter {
                kkt = group_lasso_kkt(self.grad(w.view()).view(), w.view(), lambda);
            }
        }
        (w, steps, kkt)
    }
}

/// What [`nes_path`] returns.
#[derive(Debug, Clone)]
pub struct NesPath {
    /// Feature scores (module doc).
    pub scores: Array1<f64>,
    /// `lambda_max`.
    pub lambda_max: f64,
    /// W at the last path point.
    pub w_last: Array2<f64>,
    /// The last path point's lambda.
    pub lambda_last: f64,
    /// Nonzero rows at each path point.
    pub nonzero: Vec<usize>,
    /// KKT violation / lambda_max at each path point.
    pub kkt: Vec<f64>,
    /// Proximal steps in all.
    pub steps: usize,
    /// Whether every path point met the tolerance.
    pub converged: bool,
}

/// The NES path of the module doc.
pub fn nes_path(x: ArrayView2<f64>, y: ArrayView2<f64>, n_lambdas: usize, lambda_min: f64, max_iter: usize, tol: f64) -> Result<NesPath> {
    let (n, d) = x.dim();
    let c = y.ncols();
    let gram = (d <= n).then(|| x.t().dot(&x));
    let lip = match &gram {
        Some(g) => eigh_top(g.view(), 1),
        None => eigh_top(x.dot(&x.t()).view(), 1),
    }
    .map_err(numerical(NAME))?
    .values[0];
    let xty = x.t().dot(&y);
    let lambda_max = xty.outer_iter().map(|r| r.dot(&r).sqrt()).fold(0.0, f64::max);
    if !(lambda_max > 0.0 && lip > 0.0) {
        return Err(MethodError::Degenerate { method: NAME, reason: "X^T Y = 0: no feature correlates with the kernel factor (constant data?)".into() });
    }
    let prob = GroupLasso { x, gram, xty, lip };
    let ratio = lambda_min.powf(1.0 / (n_lambdas - 1) as f64);
    let mut w = Array2::<f64>::zeros((d, c));
    let mut entry: Vec<Option<(usize, f64)>> = vec![None; d];
    let (mut nonzero, mut kkts, mut steps, mut converged) = (Vec::new(), Vec::new(), 0, true);
    let mut lambda = lambda_max;
    for p in 0..n_lambdas {
        lambda = lambda_max * ratio.powi(p as i32);
        let (wn, st, kkt) = prob.solve(w, lambda, max_iter, tol * lambda_max);
        w = wn;
        steps += st;
        converged &= kkt <= tol * lambda_max;
        kkts.push(kkt / lambda_max);
        let norms = w.map_axis(Axis(1), |r| r.dot(&r).sqrt());
        nonzero.push(norms.iter().filter(|&&v| v > 0.0).count());
        let fresh: Vec<usize> = (0..d).filter(|&f| entry[f].is_none() && norms[f] > 0.0).collect();
        let top = fresh.iter().map(|&f| norms[f]).fold(0.0, f64::max);
        for f in fresh {
            entry[f] = Some((p, norms[f] / (2.0 * top)));
        }
    }
    let scores = Array1::from_iter(entry.iter().map(|e| e.map_or(0.0, |(p, u)| (n_lambdas - p) as f64 + u)));
    Ok(NesPath { scores, lambda_max, w_last: w, lambda_last: lambda, nonzero, kkt: kkts, steps, converged })
}

impl Spfs {
    fn validate(&self, n: usize) -> Result<()> {
        if self.variant == SpfsVariant::Nes && self.n_clusters >= n {
            return Err(MethodError::Input { method: NAME, reason: format!("n_clusters = {} is not below the number of samples N = {n}", self.n_clusters) });
        }
        if !(self.lambda_min > 0.0 && self.lambda_min < 1.0) {
            return Err(MethodError::Input { method: NAME, reason: format!("lambda_min = {} must lie in (0, 1)", self.lambda_min) });
        }
        Ok(())
    }

    /// The similarity K of the module doc and `sigma_0`.
    pub fn kernel(&self, x: ArrayView2<f64>) -> Result<(Array2<f64>, f64)> {
        let sigma0 = median_distance(x);
        let t = self.width * sigma0 * sigma0;
        if !(t > 0.0 && t.is_finite()) {
            return Err(MethodError::Degenerate {
                method: NAME,
                reason: format!("kernel width t = {t:e} (median pairwise distance {sigma0:e}): constant or mostly duplicate samples"),
            });
        }
        Ok((gaussian_kernel(x, t), sigma0))
    }
}

fn col_norms_zero(x: ArrayView2<f64>) -> bool {
    x.axis_iter(Axis(1)).all(|c: ArrayView1<f64>| c.iter().all(|&v| v == 0.0))
}

impl Embedder for Spfs {
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
        check_input(NAME, &x, 2)?;
        check_dense_size(NAME, x.nrows())?;
        self.validate(x.nrows())?;
        if col_norms_zero(x) {
            return Err(MethodError::Degenerate { method: NAME, reason: "every feature is identically 0".into() });
        }
        let (k, sigma0) = self.kernel(x)?;
        let d = x.ncols();
        let mut notes = vec![format!("sigma_0 = {sigma0:.6e} (median pairwise distance); t = {:.6e}", self.width * sigma0 * sigma0)];
        let (scores, trace) = match self.variant {
            SpfsVariant::Sfs => {
                let (order, history) = sfs_order(x, k.view());
                let mut scores = Array1::zeros(d);
                for (pos, &f) in order.iter().enumerate() {
                    scores[f] = (d - pos) as f64;
                }
                notes.push(format!(
                    "||K||_F^2 = {:.6e}; ||K - X_S X_S^T||_F^2 after 1 / all picks: {:.6e} / {:.6e}",
                    k.iter().map(|v| v * v).sum::<f64>(),
                    history[0],
                    history[d - 1]
                ));
                (scores, Trace::iterative(history, d, StopReason::FixedSchedule { iterations: d }, "greedy order of all D features"))
            }
            SpfsVariant::Nes => {
                let y = kernel_factor(k.view(), self.n_clusters)?;
                let path = nes_path(x, y.view(), self.n_lambdas, self.lambda_min, self.max_iter, self.tol)?;
                let worst = path.kkt.iter().copied().fold(0.0, f64::max);
                let stop = StopReason::classify(path.converged, if path.converged { 0 } else { self.max_iter }, self.max_iter, Some(worst), Some(self.tol), "");
                notes.push(format!(
                    "lambda_max = {:.6e}; nonzero rows along the path {:?}; {} proximal steps; worst KKT / lambda_max {worst:.3e}",
                    path.lambda_max, path.nonzero, path.steps
                ));
                (path.scores, Trace::iterative(path.kkt.clone(), path.steps, stop, "").with_kkt_residual(worst))
            }
        };
        let ranking = rank_by_weight(scores.view());
        let mut fitted = Fitted::new(Output::FeatureScores(FeatureScores { weights: scores, ranking }), trace);
        fitted.notes = notes;
        Ok(fitted)
    }
}

pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: NAME,
        summary: "SPFS feature selection: min over feature subsets S of ||K - X_S X_S^T||_F^2, K the Gaussian similarity; sfs = sequential forward selection with rank-one updates (scores = order), nes = l2,1-regularised regression of K's factor Y (K ~ Y Y^T) on X along a lambda path (scores = entry order).",
        reference: "Zhao, Wang, Liu & Ye, On Similarity Preserving Feature Selection, IEEE TKDE 25(3) 2013; the FSASL harness (fs_unsup_spfs_sfs.m, fs_unsup_spfs_nes.m)",
        version: 1,
        output: OutputKind::FeatureScores,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: false,
        params: Spfs::schema(()),
        build: |p| declare::build::<Spfs>(NAME, (), p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::s;
    use rand::{Rng, SeedableRng};

    fn data(n: usize, d: usize, seed: u64) -> Array2<f64> {
        let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        let x = Array2::from_shape_fn((n, d), |(i, j)| {
            if j < 3 {
                (if i % 3 == j { 2.0 } else { 0.0 }) + 0.3 * r.gen_range(-1.0..1.0)
            } else {
                0.5 * r.gen_range(-1.0..1.0)
            }
        });
        // z-scored, as the protocols feed it (SFS's criterion (x_f^T x_f)^2 - 2 x_f^T R x_f
        // otherwise favours small-norm features)
        let mean = x.mean_axis(Axis(0)).unwrap();
        let sd = x.std_axis(Axis(0), 0.0);
        (&x - &mean) / &sd
    }

    /// `||K - X_S X_S^T||_F^2` computed directly.
    fn direct(x: &Array2<f64>, k: &Array2<f64>, sel: &[usize]) -> f64 {
        let xs = x.select(Axis(1), sel);
        (k - &xs.dot(&xs.t())).iter().map(|v| v * v).sum()
    }

    #[test]
    fn sfs_rank_one_updates_match_the_direct_criterion_and_each_pick_is_the_greedy_minimiser() {
        let x = data(25, 9, 1);
        let m = Spfs::default();
        let (k, _) = m.kernel(x.view()).unwrap();
        let (order, history) = sfs_order(x.view(), k.view());
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, (0..9).collect::<Vec<_>>());
        for step in 0..9 {
            let sel = &order[..=step];
            let dir = direct(&x, &k, sel);
            assert!((history[step] - dir).abs() < 1e-9 * dir.max(1.0), "step {step}: {} vs {dir}", history[step]);
            // brute force: no other unchosen feature gives a smaller criterion
            for f in (0..9).filter(|f| !order[..step].contains(f)) {
                let mut alt = order[..step].to_vec();
                alt.push(f);
                assert!(direct(&x, &k, &alt) >= dir - 1e-9 * dir.max(1.0), "step {step}: feature {f} beats {}", order[step]);
            }
        }
    }

    #[test]
    fn sfs_breaks_ties_by_index() {
        // two identical columns: the lower index is picked first, and they stay adjacent-or-ordered
        let mut x = data(20, 5, 2);
        let c = x.column(1).to_owned();
        x.column_mut(3).assign(&c);
        let f = Spfs::default().fit(x.view(), 0).unwrap();
        let r = &f.feature_scores().unwrap().ranking;
        let p1 = r.iter().position(|&v| v == 1).unwrap();
        let p3 = r.iter().position(|&v| v == 3).unwrap();
        assert!(p1 < p3);
    }

    #[test]
    fn nes_solutions_meet_the_group_lasso_kkt_conditions() {
        let x = data(40, 12, 3);
        let m = Spfs { variant: SpfsVariant::Nes, ..Spfs::default() };
        let (k, _) = m.kernel(x.view()).unwrap();
        let y = kernel_factor(k.view(), 3).unwrap();
        // K ~ Y Y^T on its leading part: Y^T Y are the eigenvalues, descending
        let yty = y.t().dot(&y);
        assert!(yty[[0, 0]] >= yty[[1, 1]] && yty[[0, 1]].abs() < 1e-9);
        for (xm, label) in [(x.clone(), "N > D"), (x.slice(s![..10, ..]).to_owned(), "N < D")] {
            let yy = y.slice(s![..xm.nrows(), ..]).to_owned();
            let path = nes_path(xm.view(), yy.view(), 8, 1e-2, 20_000, 1e-10).unwrap();
            assert!(path.converged, "{label}: {:?}", path.kkt);
            let g = xm.t().dot(&(&xm.dot(&path.w_last) - &yy));
            let v = group_lasso_kkt(g.view(), path.w_last.view(), path.lambda_last);
            assert!(v <= 1e-9 * path.lambda_max, "{label}: KKT {v:e}");
            // at lambda_max the solution is 0; the number of nonzero rows grows along the path
            assert_eq!(path.nonzero[0], 0);
            assert!(path.nonzero.last().unwrap() > &0);
        }
    }

    #[test]
    fn informative_features_first_and_fit_contract() {
        let x = data(45, 10, 4);
        for variant in [SpfsVariant::Sfs, SpfsVariant::Nes] {
            let m = Spfs { variant, ..Spfs::default() };
            let f = m.fit(x.view(), 0).unwrap();
            let s = f.feature_scores().unwrap();
            let mut r = s.ranking.clone();
            r.sort();
            assert_eq!(r, (0..10).collect::<Vec<_>>());
            assert_eq!(s.ranking, rank_by_weight(s.weights.view()));
            if variant == SpfsVariant::Nes {
                let mut top = s.ranking[..3].to_vec();
                top.sort();
                assert_eq!(top, vec![0, 1, 2], "{variant:?}: {}", s.weights);
            } else {
                // the greedy discounts features correlated with those already chosen (the
                // one-hot informative features are): only the first pick is certain
                assert!(s.ranking[0] < 3, "{:?}", s.ranking);
            }
            let pool = |t: usize| rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap();
            let one = pool(1).install(|| m.fit(x.view(), 0).unwrap());
            let two = pool(2).install(|| m.fit(x.view(), 0).unwrap());
            assert_eq!(one.output, two.output);
        }
    }

    #[test]
    fn bad_input() {
        let x = data(20, 5, 5);
        let mut bad = x.clone();
        bad[[1, 1]] = f64::NAN;
        assert!(matches!(Spfs::default().fit(bad.view(), 0), Err(MethodError::Input { .. })));
        let nes = Spfs { variant: SpfsVariant::Nes, n_clusters: 20, ..Spfs::default() };
        assert!(matches!(nes.fit(x.view(), 0), Err(MethodError::Input { .. })));
        let constant = Array2::from_elem((20, 5), 3.0);
        assert!(matches!(Spfs::default().fit(constant.view(), 0), Err(MethodError::Degenerate { .. })));
        // a constant feature among others is ranked, not an error
        let mut xc = x.clone();
        xc.column_mut(4).fill(0.0);
        let f = Spfs { variant: SpfsVariant::Nes, ..Spfs::default() }.fit(xc.view(), 0).unwrap();
        assert_eq!(*f.feature_scores().unwrap().ranking.last().unwrap(), 4);
    }
}
