//! The Matlab Toolbox for Dimensionality Reduction's "MVU" procedures (drtoolbox, van der Maaten),
//! what the papers' "MVU" rows ran. Neither is the MVU semidefinite program of [`super::mvu`]:
//! both fit the k-NN graph's edge lengths by least squares over a small PSD matrix on a fixed
//! basis, with no variance term.
//!
//! **`mvu-drtoolbox`** (drtoolbox 0.8.1b, `compute_mapping(X, 'MVU', d, k)`):
//! 1. LLE (drtoolbox's `lle.m`, k neighbours) to `r = min(D, 4 d + 1)` dimensions: the basis `U`
//!    (N x r). drtoolbox regularises the local Gram matrices by `1e-5 tr(G_i)` only when `k > D`;
//!    here `1e-9 tr(G_i)` otherwise, so that duplicate samples (a singular `G_i`, where Matlab's
//!    backslash warns and returns Inf) still give weights.
//! 2. Fei Sha's `cca.m` in MVU mode (`OPTS.method = 'MVU'`, `relative = 0`, `regularizer = 0`):
//!    the r x r PSD `P` minimising `sum_{(i,j) in E} ((u_i - u_j)^T P (u_i - u_j) - ||x_i - x_j||^2)^2`
//!    over the symmetrised k-NN graph `E` (CSDP there, [`psd_least_squares`] here).
//! 3. The embedding: the first d principal coordinates of `U P^{1/2}` (`Z(1:no_dims, :)'`).
//!
//! **`fastmvu`** (drtoolbox `compute_mapping(X, 'FastMVU', d, k)`, which older releases also ran
//! for 'MVU'; `fastmvu.m`, after Weinberger, Sha, Zhu & Saul, NIPS 2006):
//! 1. Graph: each sample's `k` nearest neighbours, directed (`D(i, j) != 0` iff `j in kNN(i)`).
//!    `fastmvu.m` (0.8.x) then sets `D(D ~= 0) = 1`: **every edge gets target squared length 1**,
//!    the data's distances are discarded (`edge_lengths = "unit"`). `edge_lengths = "data"` keeps
//!    the squared distances divided by their maximum, as drtoolbox 0.2b and Weinberger's code do.
//! 2. Basis: the bottom `r = 2 d` non-trivial eigenvectors `U` (N x r) of the binary graph
//!    Laplacian `L = Deg - A`.
//! 3. SDP (`sdecca2.m`): the r x r PSD `P` minimising
//!    `sum_{(i,j) in E_up} ((u_i - u_j)^T P (u_i - u_j) - t_ij)^2 - eta tr(P)`, `eta = 1e-5`,
//!    `E_up` the pairs `i < j` with `j in kNN(i)` (Matlab's `triu(D)`). Coordinates `Y = U P^{1/2}`
//!    on their principal axes.
//! 4. Fine-tune (`hillclimber2c.m`): minimise the stress `s(Y) = sum_{(i,j) in E} (||y_i - y_j||^2 -
//!    t_ij)^2` over the directed edges `E` (a mutual pair counts twice) in r dimensions, at most
//!    `max_eval` evaluations. drtoolbox's `hillclimber2c` never reads its `'eta'` argument, so
//!    the variance term of Weinberger's objective is off: the fit is pure stress.
//! 5. PCA of `Y` to `d` dimensions, then the stress fit again in d dimensions.
//!
//! Deviations (docs/parity/mvu.md): drtoolbox embeds only the largest connected component of the
//! graph; here a disconnected graph is joined by its shortest edges (`disconnected = "connect"`,
//! noted) so that every sample is embedded. FastMVU's Laplacian is that of the symmetrised graph
//! (drtoolbox hands the directed one to `eigs`), and its stress fits use L-BFGS
//! ([`structdr_numerics::optim::lbfgs`], m = 10, strong Wolfe steps; version 2 ran the Fortran
//! L-BFGS-B without bounds) where drtoolbox uses Rasmussen's conjugate-gradient `minimize`, both
//! bounded by `max_eval` evaluations. The factor stage of [`psd_least_squares`] runs the same
//! L-BFGS (m = 20) where cca.m / sdecca2.m call CSDP (the Fortran L-BFGS-B before `mvu-drtoolbox`
//! version 3 and `fastmvu` version 4).
//!
//! Cost: a dense N x N eigenproblem for the basis (O(N^3), as `le` / `lle`), O(N r^2 + r^3) per
//! projected-gradient step of the least squares, O(|E| r) per stress evaluation.

use crate::api::declare::{self, declare_params, param_choice, Declared};
use crate::api::info::{choice, dim, disconnected_param, int, MethodInfo};
use crate::api::OutputKind;
use crate::api::{check_input, numerical, numerics, Embedder, FitInput, Fitted, Graph, MethodError, Output, ParamMap, Result, Trace};
use ndarray::{Array1, Array2, ArrayView2, Axis};
use structdr_linalg::{canonicalize_signs, eigh, Pca as PcaBasis, SymmetricEigen};
use structdr_numerics::dist::{prefetch_row, sq_dist_lanes, PREFETCH_EDGES_AHEAD};
use structdr_numerics::graphs::{laplacian, neighbourhood_graph, Disconnected};
use structdr_numerics::optim::{lbfgs, BoundedOptions};
use structdr_numerics::spectral::{bottom_nontrivial, lle_coordinates};

/// `sdecca2`'s trace reward (drtoolbox `fastmvu.m`: `eta = 1e-5`, passed as the regulariser).
pub const SDECCA_ETA: f64 = 1e-5;

param_choice! {
    /// Target squared lengths of the graph's edges.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum EdgeLengths {
        /// Every edge 1 (drtoolbox 0.8: `D(D ~= 0) = 1`).
        Unit = "unit",
        /// `||x_i - x_j||^2 / max_E ||x_i - x_j||^2` (drtoolbox 0.2b, Weinberger's FastMVU).
        Data = "data",
    }
}

impl EdgeLengths {
    fn as_str(self) -> &'static str {
        crate::api::ParamChoice::name(&self)
    }
}

declare_params! {
    /// drtoolbox's FastMVU with parameters `dim`, `k`, `edge_lengths`, `disconnected`, `max_eval`.
    #[derive(Debug, Clone)]
    pub struct FastMvu {
        /// Target dimension d (the SDP basis has 2 d columns).
        pub dim: usize = dim(),
        /// Neighbours per sample.
        pub k: usize = int("k", 1, 12, "neighbours per sample (drtoolbox default 12)"),
        /// Target squared edge lengths.
        pub edge_lengths: EdgeLengths = choice("edge_lengths", EdgeLengths::NAMES, "unit", "target squared edge lengths: unit (drtoolbox 0.8 binarises the distance matrix) or data (squared distances over their maximum, drtoolbox 0.2b)"),
        /// What to do with a disconnected k-NN graph.
        pub disconnected: Disconnected = disconnected_param(),
        /// Evaluation budget of each stress fit (drtoolbox: 10000).
        pub max_eval: usize = int("max_eval", 0, 10000, "objective evaluations of each stress fit (drtoolbox: 10000)"),
    }
}

/// The result of [`psd_least_squares`].
#[derive(Debug, Clone)]
pub struct PsdLeastSquares {
    /// The minimiser `P` (r x r, PSD).
    pub p: Array2<f64>,
    /// `f(P)`.
    pub objective: f64,
    /// `||P - Proj_PSD(P - grad f(P) / L)||_F / max(||P||_F, 1e-300)`: 0 exactly at the optimum.
    pub kkt_residual: f64,
    /// Projected-gradient steps taken (after the factor stage).
    pub iterations: usize,
    /// L-BFGS iterations of the factor stage.
    pub factor_iterations: usize,
}

/// `s_e = (u_i - u_j)^T P (u_i - u_j)` for every pair: O(N r^2 + |E| r).
fn quadratic_forms(u: ArrayView2<f64>, pairs: &[(usize, usize)], p: &Array2<f64>) -> Vec<f64> {
    let z = u.dot(p);
    pairs
        .iter()
        .map(|&(i, j)| {
            let (ui, uj, zi, zj) = (u.row(i), u.row(j), z.row(i), z.row(j));
            (0..ui.len()).map(|c| (ui[c] - uj[c]) * (zi[c] - zj[c])).sum()
        })
        .collect()
}

/// `A^T w = sum_e w_e (u_i - u_j)(u_i - u_j)^T = U^T L_w U` (r x r), with the weighted Laplacian
/// applied edge by edge: O(|E| r + N r^2).
fn adjoint(u: ArrayView2<f64>, pairs: &[(usize, usize)], w: &[f64]) -> Array2<f64> {
    let r = u.ncols();
    let us = u.as_standard_layout();
    let us = us.as_slice().expect("standard layout");
    let mut m = Array2::<f64>::zeros(u.dim());
    let ms = m.as_slice_mut().expect("standard layout");
    for (&(i, j), &we) in pairs.iter().zip(w) {
        let (ui, uj) = (&us[i * r..(i + 1) * r], &us[j * r..(j + 1) * r]);
        let (mi, mj) = two_rows_mut(ms, r, i, j);
        for c in 0..r {
            let d = we * (ui[c] - uj[c]);
            mi[c] += d;
            mj[c] -= d;
        }
    }
    let a = u.t().dot(&m);
    (&a + &a.t()) * 0.5
}

/// Rows `i` and `j` (distinct) of the row-major matrix `a` with `r` columns, both mutable.
/// Inlined: [`edge_stress_lanes`] calls it once per edge, and a call spills the running sum.
#[inline(always)]
fn two_rows_mut(a: &mut [f64], r: usize, i: usize, j: usize) -> (&mut [f64], &mut [f64]) {
    assert_ne!(i, j, "an edge joins two distinct samples");
    let (lo, hi) = (i.min(j), i.max(j));
    let (head, tail) = a.split_at_mut(hi * r);
    let (row_lo, row_hi) = (&mut head[lo * r..(lo + 1) * r], &mut tail[..r]);
    if i < j {
        (row_lo, row_hi)
    } else {
        (row_hi, row_lo)
    }
}

/// Euclidean projection onto the PSD cone: `V max(Lambda, 0) V^T`, with the eigendecomposition
/// `V Lambda V^T` of the symmetric part of `a` it came from.
fn project_psd(method: &'static str, a: &Array2<f64>) -> Result<(Array2<f64>, SymmetricEigen)> {
    let sym = (a + &a.t()) * 0.5;
    let e = eigh(sym.view()).map_err(numerical(method))?;
    let scaled = &e.vectors * &e.values.mapv(|v| v.max(0.0)).insert_axis(Axis(0));
    Ok((scaled.dot(&e.vectors.t()), e))
}

/// The KKT residual of [`PsdLeastSquares`]: `||P - P+||_F / max(||P||_F, 1e-300)`, `P+` the
/// projected-gradient point of `P`.
fn kkt_residual(p: &Array2<f64>, p_plus: &Array2<f64>) -> f64 {
    let num = (p - p_plus).iter().map(|v| v * v).sum::<f64>().sqrt();
    num / p.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-300)
}

/// `f(P) = sum_e ((u_i - u_j)^T P (u_i - u_j) - t_e)^2 - tr(W P)` and its gradient
/// `2 A^T (s - t) - W`, for a symmetric `W` (the trace reward in the caller's coordinates).
fn ls_value_and_gradient(u: ArrayView2<f64>, pairs: &[(usize, usize)], t: &[f64], reward: &Array2<f64>, p: &Array2<f64>) -> (f64, Array2<f64>) {
    let s = quadratic_forms(u, pairs, p);
    let res: Vec<f64> = s.iter().zip(t).map(|(s, t)| s - t).collect();
    let f = res.iter().map(|r| r * r).sum::<f64>() - (reward * p).sum();
    let g = adjoint(u, pairs, &res) * 2.0 - reward;
    (f, g)
}

/// Minimises `f(P) = sum_e ((u_i - u_j)^T P (u_i - u_j) - t_e)^2 - tr(W P)` over r x r PSD `P`
/// (`sdecca2`'s problem with `W = eta I`; a convex quadratic over the PSD cone). Start: the best
/// multiple of the identity, `c I`. Stage 1: L-BFGS on the factor `P = B B^T` (at most
/// `factor_iter` iterations; `gradient_B = 2 grad f(P) B`). Stage 2: FISTA on `P` with gradient
/// restarts (O'Donoghue & Candes 2015), step `1 / Lip`, `Lip = 1.05 * 2 ||A||^2` from 50 power
/// iterations of `A^T A`, until the KKT residual (see [`PsdLeastSquares`]) is at most `tol` or
/// after `max_iter` steps. The residual certifies the answer whichever stage produced it.
///
/// With `truncate_every = k > 0` stage 1 adapts the factor's width: after `k`, `k`, `2k`, `4k`,
/// ... L-BFGS iterations (rounds that double once the width has settled a little, since each
/// round restarts the L-BFGS memory) it computes the KKT residual of `P = B B^T` (returning `P`
/// when it is at most `tol`) and restarts from the projected-gradient point
/// `P+ = Proj_PSD(P - grad f(P) / Lip)`,
/// factored as `B = V_+ Lambda_+^(1/2)` over its positive eigenvalues only (r x p, `p` = the rank
/// of `P+`). A full-width factor never reaches a rank-deficient optimum: the directions the
/// optimum does not use keep small positive eigenvalues whose gradient, `2 grad f(P) B`, shrinks
/// with them, and they set the residual (isolet's LLE basis, r = 601: residual 3e-7 after 2000
/// iterations on an optimum of rank 38, each iteration two N x r x r products). The projection
/// drops them, which also makes every later evaluation `r / p` times cheaper. `k = 0`: one
/// full-width run (`fastmvu`, whose chaotic stress fits start from this stage's bits).
pub fn psd_least_squares(
    method: &'static str,
    u: ArrayView2<f64>,
    pairs: &[(usize, usize)],
    t: &[f64],
    reward: &Array2<f64>,
    factor_iter: usize,
    max_iter: usize,
    tol: f64,
    truncate_every: usize,
) -> Result<PsdLeastSquares> {
    let r = u.ncols();
    assert_eq!(pairs.len(), t.len(), "psd_least_squares: one target per pair");
    // power iteration for ||A^T A|| on symmetric matrices (deterministic start: I + a ramp)
    let mut v = Array2::<f64>::from_shape_fn((r, r), |(a, b)| if a == b { 1.0 + a as f64 / r as f64 } else { 0.01 });
    let mut norm = 0.0;
    for _ in 0..50 {
        let nv = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        if !(nv > 0.0) {
            break;
        }
        v /= nv;
        let av = quadratic_forms(u, pairs, &v);
        v = adjoint(u, pairs, &av);
        norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    }
    if !(norm > 0.0 && norm.is_finite()) {
        return Err(MethodError::Degenerate { method, reason: "every edge of the basis has zero length: the SDP's least-squares operator is 0".into() });
    }
    let lip = 1.05 * 2.0 * norm;
    // start: c I with c the least-squares scale, clamped at 0
    let eye = Array2::<f64>::eye(r);
    let s1 = quadratic_forms(u, pairs, &eye);
    let c = (s1.iter().zip(t).map(|(s, t)| s * t).sum::<f64>() / s1.iter().map(|s| s * s).sum::<f64>().max(1e-300)).max(0.0);
    let c = if c > 0.0 { c } else { 1e-6 * t.iter().map(|v| v.abs()).sum::<f64>() / s1.iter().sum::<f64>().max(1e-300) };
    // stage 1: L-BFGS on the factor, P = B B^T with B r x p (p = r at the start). The map covers
    // the cone, and a stationary B of full rank has grad f(P) B = 0, i.e. grad f(P) = 0 (Burer &
    // Monteiro 2005): far fewer steps than projected gradients on an ill-conditioned operator
    // with Z = U B: s_e = ||z_i - z_j||^2, gradient_B = U^T M - 2 W B, where M (N x p) holds the
    // stress gradient 4 (s_e - t_e)(z_i - z_j) of [`edge_stress`] (two N x r x p products per
    // evaluation, no r x r x r one)
    let reward_is_zero = reward.iter().all(|&v| v == 0.0);
    let n = u.nrows();
    let run_factor = |b0: &Array2<f64>, iterations: usize| -> Result<(Array2<f64>, usize)> {
        let p = b0.ncols();
        let mut m = Array2::<f64>::zeros((n, p));
        let value_and_factor_gradient = |bv: &[f64], gb: &mut [f64]| -> f64 {
            let b = ArrayView2::from_shape((r, p), bv).expect("r*p");
            let z = u.dot(&b);
            let z = z.as_standard_layout();
            let zs = z.as_slice().expect("standard layout");
            let ms = m.as_slice_mut().expect("standard layout");
            let mut f = edge_stress(zs, p, pairs, t, ms);
            let mut gbm = u.t().dot(&m);
            // MVU mode has no reward (W = 0): skip its r x r x p product, a sixth of an
            // evaluation's flops at r = p = 601 (isolet); subtracting exact zeros would change no
            // bit of f or the gradient
            if !reward_is_zero {
                let wb = reward.dot(&b);
                f -= (&wb * &b).sum();
                gbm = gbm - wb * 2.0;
            }
            gb.iter_mut().zip(gbm.iter()).for_each(|(o, v)| *o = *v);
            f
        };
        let x0: Vec<f64> = b0.iter().copied().collect();
        // unconstrained: the Fortran L-BFGS-B's Cauchy point and subspace bookkeeping over its 2m
        // stored pairs cost as much as an evaluation at n = r^2 (optim::lbfgs module doc)
        let opts = BoundedOptions { m: 20, max_iter: iterations, max_eval: iterations + iterations / 4, pgtol: 0.0, factr: 10.0, noise: 0.0 };
        let res = lbfgs::minimize(value_and_factor_gradient, &x0, &opts).map_err(|e| MethodError::Solver { method, reason: e.to_string() })?;
        Ok((Array2::from_shape_vec((r, p), res.x).expect("r*p"), res.iterations))
    };
    let b0 = &eye * c.sqrt();
    let mut factor_iterations = 0;
    let mut certified: Option<(f64, f64)> = None;
    let mut x = if factor_iter == 0 {
        &eye * c
    } else if truncate_every == 0 {
        let (b, its) = run_factor(&b0, factor_iter)?;
        factor_iterations = its;
        b.dot(&b.t())
    } else {
        let mut b = b0;
        let mut round_length = truncate_every;
        loop {
            let (b_end, its) = run_factor(&b, round_length.min(factor_iter - factor_iterations))?;
            // rounds of k, k, 2k, 4k, ...: the length doubles from the second round on
            if factor_iterations > 0 {
                round_length *= 2;
            }
            factor_iterations += its;
            let p = b_end.dot(&b_end.t());
            let (f, g) = ls_value_and_gradient(u, pairs, t, reward, &p);
            let (proj, e) = project_psd(method, &(&p - &(&g / lip)))?;
            let res = kkt_residual(&p, &proj);
            if res <= tol {
                certified = Some((f, res));
                break p;
            }
            let keep: Vec<usize> = (0..r).filter(|&k| e.values[k] > 0.0).collect();
            // no positive eigenvalue (P+ = 0), the budget spent, or an L-BFGS run that could not
            // move: stage 2 goes on from the projected point
            if keep.is_empty() || its == 0 || factor_iterations >= factor_iter {
                break proj;
            }
            b = Array2::from_shape_fn((r, keep.len()), |(a, k)| e.vectors[[a, keep[k]]] * e.values[keep[k]].sqrt());
        }
    };
    if let Some((f, res)) = certified {
        return Ok(PsdLeastSquares { p: x, objective: f, kkt_residual: res, iterations: 0, factor_iterations });
    }
    // stage 2: FISTA on P from there until the KKT residual meets tol
    let mut y = x.clone();
    let mut theta = 1.0f64;
    let kkt = |p: &Array2<f64>| -> Result<(f64, f64)> {
        let (f, g) = ls_value_and_gradient(u, pairs, t, reward, p);
        let (step, _) = project_psd(method, &(p - &(&g / lip)))?;
        Ok((f, kkt_residual(p, &step)))
    };
    let mut iterations = 0;
    let (mut f, mut res) = kkt(&x)?;
    while iterations < max_iter && res > tol {
        let (_, g) = ls_value_and_gradient(u, pairs, t, reward, &y);
        let (x_new, _) = project_psd(method, &(&y - &(&g / lip)))?;
        iterations += 1;
        // restart when the momentum points uphill: <y - x_new, x_new - x> > 0
        let uphill = ((&y - &x_new) * (&x_new - &x)).sum() > 0.0;
        if uphill {
            theta = 1.0;
            y = x_new.clone();
        } else {
            let theta_new = 0.5 * (1.0 + (1.0 + 4.0 * theta * theta).sqrt());
            y = &x_new + &((&x_new - &x) * ((theta - 1.0) / theta_new));
            theta = theta_new;
        }
        x = x_new;
        if iterations % 10 == 0 || iterations == max_iter {
            (f, res) = kkt(&x)?;
        }
    }
    Ok(PsdLeastSquares { p: x, objective: f, kkt_residual: res, iterations, factor_iterations })
}

/// The stress `sum_e (||y_i - y_j||^2 - t_e)^2` of the N x q coordinates `y` (row-major slice)
/// over the directed pairs, and its gradient `4 (||y_i - y_j||^2 - t_e)(y_i - y_j)` at `i`
/// (minus at `j`) written into `g`.
///
/// Cost: `3 q` flops per edge for the distance (eight partial sums,
/// [`structdr_numerics::dist::sq_dist_lanes`]) and `4 q` for the gradient. On x86-64 CPUs with
/// AVX2 the whole loop is compiled for 256-bit registers (no FMA, so the same bits as the
/// portable path); the rows are slices, so the inner loops carry no index arithmetic.
pub fn edge_stress(y: &[f64], q: usize, pairs: &[(usize, usize)], t: &[f64], g: &mut [f64]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { edge_stress_avx2(y, q, pairs, t, g) };
    }
    edge_stress_lanes(y, q, pairs, t, g)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn edge_stress_avx2(y: &[f64], q: usize, pairs: &[(usize, usize)], t: &[f64], g: &mut [f64]) -> f64 {
    edge_stress_lanes(y, q, pairs, t, g)
}

#[inline(always)]
fn edge_stress_lanes(y: &[f64], q: usize, pairs: &[(usize, usize)], t: &[f64], g: &mut [f64]) -> f64 {
    g.iter_mut().for_each(|v| *v = 0.0);
    let mut f = 0.0;
    for (e, (&(i, j), &te)) in pairs.iter().zip(t).enumerate() {
        if let Some(&(_, jn)) = pairs.get(e + PREFETCH_EDGES_AHEAD) {
            prefetch_row(y, jn * q, q);
            prefetch_row(g, jn * q, q);
        }
        let (yi, yj) = (&y[i * q..(i + 1) * q], &y[j * q..(j + 1) * q]);
        let r = sq_dist_lanes(yi, yj) - te;
        f += r * r;
        let (gi, gj) = two_rows_mut(g, q, i, j);
        let r4 = 4.0 * r;
        for (((gic, gjc), a), b) in gi.iter_mut().zip(gj.iter_mut()).zip(yi).zip(yj) {
            let d = r4 * (a - b);
            *gic += d;
            *gjc -= d;
        }
    }
    f
}

/// One stress fit from `y0` (N x q): L-BFGS, at most `max_eval` evaluations, no tolerance on the
/// gradient (drtoolbox runs its evaluation budget). Returns the coordinates, the stress before
/// and after, the evaluations used and the solver's message.
fn stress_fit(method: &'static str, y0: &Array2<f64>, pairs: &[(usize, usize)], t: &[f64], max_eval: usize) -> Result<(Array2<f64>, f64, f64, usize, String)> {
    let (n, q) = y0.dim();
    let x0: Vec<f64> = y0.iter().copied().collect();
    let mut g0 = vec![0.0; x0.len()];
    let before = edge_stress(&x0, q, pairs, t, &mut g0);
    if max_eval == 0 {
        return Ok((y0.clone(), before, before, 0, "no evaluations (max_eval = 0)".into()));
    }
    // unconstrained: the Fortran L-BFGS-B's Cauchy point and subspace bookkeeping cost more than
    // the stress itself at n = N r (optim::lbfgs module doc)
    let opts = BoundedOptions { m: 10, max_iter: max_eval, max_eval, pgtol: 0.0, factr: 10.0, noise: 0.0 };
    let res = lbfgs::minimize(|x, g| edge_stress(x, q, pairs, t, g), &x0, &opts).map_err(|e| MethodError::Solver { method, reason: e.to_string() })?;
    let y = Array2::from_shape_vec((n, q), res.x).expect("n*q");
    Ok((y, before, res.f, res.evaluations, res.message))
}

/// Iteration limit of each stage of the PSD least squares of [`fit_on_basis`].
const PSD_MAX_ITER: usize = 2000;
/// KKT tolerance of the PSD least squares of [`fit_on_basis`].
const PSD_TOL: f64 = 1e-7;
/// `mvu-drtoolbox`'s factor stage checks, and drops the directions its optimum does not use,
/// every this many L-BFGS iterations ([`psd_least_squares`]; from version 4).
const PSD_TRUNCATE_EVERY: usize = 100;

/// The least-squares stage both procedures share: `P` minimising
/// `sum_e ((u_i - u_j)^T P (u_i - u_j) - t_e)^2 - eta tr(P)` over PSD r x r matrices
/// ([`psd_least_squares`] to a KKT residual of 1e-7, at most 2000 steps a stage), then `Y = U P^{1/2}` rotated
/// onto its principal axes (descending; `cca.m` / `sdecca2.m`'s final `eig(newY * newY')`).
///
/// The solve runs in columns scaled to unit energy on the pairs, `u_c / sqrt(sum_e (u_ic -
/// u_jc)^2)` (an exact change of variables `P = S Q S` that equalises the operator's scales: the
/// bottom eigenvectors of a graph operator differ by orders of magnitude in their edge energy),
/// with the reward `eta tr(P) = tr(eta S^2 Q)`. Returns `Y`, the solve's result (in the scaled
/// coordinates) and the numerical rank of `P`. `truncate_every`: [`psd_least_squares`]'s.
fn fit_on_basis(
    method: &'static str,
    basis: ArrayView2<f64>,
    pairs: &[(usize, usize)],
    t: &[f64],
    eta: f64,
    truncate_every: usize,
) -> Result<(Array2<f64>, PsdLeastSquares, usize)> {
    let r = basis.ncols();
    let mut energy = vec![0.0f64; r];
    for &(i, j) in pairs {
        for (c, e) in energy.iter_mut().enumerate() {
            let d = basis[[i, c]] - basis[[j, c]];
            *e += d * d;
        }
    }
    let e_max = energy.iter().copied().fold(0.0, f64::max);
    if !(e_max > 0.0 && e_max.is_finite()) {
        return Err(MethodError::Degenerate { method, reason: "the basis is constant on every edge: nothing to fit".into() });
    }
    let scale: Array1<f64> = energy.iter().map(|&e| 1.0 / e.max(1e-12 * e_max).sqrt()).collect();
    let u = &basis * &scale.view().insert_axis(Axis(0));
    let reward = Array2::from_diag(&scale.mapv(|s| eta * s * s));
    let ls = psd_least_squares(method, u.view(), pairs, t, &reward, PSD_MAX_ITER, PSD_MAX_ITER, PSD_TOL, truncate_every)?;
    let e = eigh(ls.p.view()).map_err(numerical(method))?;
    let top = e.values[e.values.len() - 1].max(1e-300);
    let rank = e.values.iter().filter(|&&v| v > 1e-9 * top).count();
    let root = &e.vectors * &e.values.mapv(|v| v.max(0.0).sqrt()).insert_axis(Axis(0));
    let y_sdp = u.dot(&root);
    let gram = eigh(y_sdp.t().dot(&y_sdp).view()).map_err(numerical(method))?;
    let mut rot = gram.vectors.clone();
    rot.invert_axis(Axis(1));
    let mut y = y_sdp.dot(&rot);
    canonicalize_signs(&mut y);
    Ok((y, ls, rank))
}

impl Embedder for FastMvu {
    fn name(&self) -> &'static str {
        "fastmvu"
    }
    fn info(&self) -> MethodInfo {
        info_fastmvu()
    }
    fn params(&self) -> ParamMap {
        self.to_params()
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        let method = "fastmvu";
        let x = input.x;
        check_input(method, &x, 3)?;
        let n = x.nrows();
        crate::api::check_dense_size(method, n)?;
        let r = 2 * self.dim;
        if r + 1 >= n {
            return Err(MethodError::Input { method, reason: format!("the SDP basis needs 2 dim + 1 = {} < N = {n} Laplacian eigenvectors", r + 1) });
        }
        if self.k >= n {
            return Err(MethodError::Input { method, reason: format!("k = {} must be below N = {n}", self.k) });
        }
        let g = neighbourhood_graph(x, self.k, self.disconnected).map_err(numerics(method))?;
        // directed edges (hillclimber2c's find(D)) and Matlab's triu(D) for the SDP, plus the joins
        let mut directed: Vec<(usize, usize, f64)> = Vec::with_capacity(n * self.k + g.joins.len());
        for ((i, c), &j) in g.knn.indices.indexed_iter() {
            directed.push((i, j, g.knn.sq_dists[[i, c]]));
        }
        directed.extend(g.joins.iter().copied());
        let max_d = directed.iter().map(|e| e.2).fold(0.0, f64::max);
        let target = |d: f64| match self.edge_lengths {
            EdgeLengths::Unit => 1.0,
            EdgeLengths::Data => d / max_d,
        };
        if self.edge_lengths == EdgeLengths::Data && !(max_d > 0.0 && max_d.is_finite()) {
            return Err(MethodError::Degenerate { method, reason: format!("the longest squared {}-NN edge is {max_d}", self.k) });
        }
        let pairs: Vec<(usize, usize)> = directed.iter().map(|e| (e.0, e.1)).collect();
        let t: Vec<f64> = directed.iter().map(|e| target(e.2)).collect();
        let upper: Vec<usize> = (0..directed.len()).filter(|&e| directed[e].0 < directed[e].1).collect();
        let pairs_up: Vec<(usize, usize)> = upper.iter().map(|&e| pairs[e]).collect();
        let t_up: Vec<f64> = upper.iter().map(|&e| t[e]).collect();

        // 2. basis: bottom non-trivial eigenvectors of the binary Laplacian
        let unit: Vec<(usize, usize, f64)> = g.edges.iter().map(|&(i, j, _)| (i, j, 1.0)).collect();
        let lap = laplacian::from_edges(n, &unit);
        let (basis, lambdas) = bottom_nontrivial(lap.view(), r, None).map_err(numerics(method))?;
        drop(lap);
        // 3. the SDP (sdecca2), trace reward eta tr(P)
        // the full-width factor stage (truncate_every = 0): the stress fits that follow are
        // chaotic, so this stage's bits are part of the method (fastmvu version 4)
        let (y, ls, rank) = fit_on_basis(method, basis.view(), &pairs_up, &t_up, SDECCA_ETA, 0)?;
        // 4. stress fit in r dimensions
        let (y, s0, s1, ev1, msg1) = stress_fit(method, &y, &pairs, &t, self.max_eval)?;
        // 5. PCA to d, stress fit in d dimensions
        let pca = PcaBasis::fit(y.view()).map_err(numerical(method))?;
        let y_d = pca.transform(y.view(), self.dim);
        let (mut emb, s2, s3, ev2, msg2) = stress_fit(method, &y_d, &pairs, &t, self.max_eval)?;
        if emb.iter().any(|v| !v.is_finite()) {
            return Err(MethodError::Degenerate { method, reason: "the stress fit diverged (non-finite coordinates)".into() });
        }
        canonicalize_signs(&mut emb);
        let mut gfin = vec![0.0; emb.len()];
        let flat: Vec<f64> = emb.iter().copied().collect();
        edge_stress(&flat, self.dim, &pairs, &t, &mut gfin);
        let grad_norm = gfin.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let stop = crate::api::StopReason::classify(msg2.starts_with("CONVERGENCE"), ev2, self.max_eval, None, None, &msg2);
        let trace = Trace::iterative(vec![s2, s3], ev2, stop, format!("stress fit in {} dimensions: {msg2}", self.dim)).with_kkt_residual(grad_norm);
        let mut f = Fitted::new(Output::Embedding(emb), trace);
        if let Some(note) = g.note() {
            f.notes.push(note);
        }
        f.notes.push(format!(
            "edge lengths: {} ({} directed edges, {} in the SDP's upper triangle); basis: Laplacian eigenvalues {:.3e}..{:.3e}",
            self.edge_lengths.as_str(),
            pairs.len(),
            pairs_up.len(),
            lambdas[1],
            lambdas[r]
        ));
        f.notes.push(format!(
            "SDP (sdecca2, {r} x {r} PSD least squares): objective {:.6e}, KKT residual {:.2e} after {} L-BFGS iterations on the factor and {} projected-gradient steps, rank {rank}",
            ls.objective, ls.kkt_residual, ls.factor_iterations, ls.iterations
        ));
        f.notes.push(format!("stress in {r} dimensions: {s0:.6e} -> {s1:.6e} ({ev1} evaluations; {msg1})"));
        f.notes.push(format!("stress in {} dimensions: {s2:.6e} -> {s3:.6e} ({ev2} evaluations; {msg2}); max |gradient| {grad_norm:.2e}", self.dim));
        f.graph = Some(Graph { n_vertices: n, edges: g.edges.iter().map(|&(i, j, _)| (i, j, 1.0)).collect() });
        Ok(f)
    }
}

declare_params! {
    /// drtoolbox 0.8.1b's 'MVU' with parameters `dim`, `k`, `disconnected`.
    #[derive(Debug, Clone)]
    pub struct MvuDrtoolbox {
        /// Target dimension d (the LLE basis has min(D, 4 d + 1) columns).
        pub dim: usize = dim(),
        /// Neighbours per sample (LLE's and the fitted edges').
        pub k: usize = int("k", 1, 12, "neighbours per sample of LLE and of the fitted edges (drtoolbox default 12)"),
        /// What to do with a disconnected k-NN graph.
        pub disconnected: Disconnected = disconnected_param(),
    }
}

impl Embedder for MvuDrtoolbox {
    fn name(&self) -> &'static str {
        "mvu-drtoolbox"
    }
    fn info(&self) -> MethodInfo {
        info_mvu()
    }
    fn params(&self) -> ParamMap {
        self.to_params()
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        let method = "mvu-drtoolbox";
        let x = input.x;
        check_input(method, &x, 3)?;
        let (n, d_in) = x.dim();
        crate::api::check_dense_size(method, n)?;
        let r = d_in.min(4 * self.dim + 1);
        if r < self.dim {
            return Err(MethodError::Input { method, reason: format!("dim = {} exceeds the D = {d_in} features", self.dim) });
        }
        if r + 1 >= n {
            return Err(MethodError::Input { method, reason: format!("the LLE basis needs min(D, 4 dim + 1) + 1 = {} < N = {n} eigenvectors", r + 1) });
        }
        if self.k >= n {
            return Err(MethodError::Input { method, reason: format!("k = {} must be below N = {n}", self.k) });
        }
        // 1. the LLE basis (drtoolbox lle.m: 1e-5 tr(G_i) only when k > D)
        let reg = if self.k > d_in { 1e-5 } else { 1e-9 };
        let (basis, _, g) = lle_coordinates(x, self.k, reg, r, self.disconnected).map_err(numerics(method))?;
        // 2. cca.m, MVU mode: squared data distances on the symmetrised k-NN edges (LLE's graph),
        //    no trace term
        let pairs: Vec<(usize, usize)> = g.edges.iter().map(|e| (e.0, e.1)).collect();
        let t: Vec<f64> = g.edges.iter().map(|e| e.2).collect();
        let (y, ls, rank) = fit_on_basis(method, basis.view(), &pairs, &t, 0.0, PSD_TRUNCATE_EVERY)?;
        // 3. the first d principal coordinates
        let mut emb = y.slice(ndarray::s![.., ..self.dim]).to_owned();
        canonicalize_signs(&mut emb);
        let trace = Trace::iterative(
            Vec::new(),
            ls.iterations,
            crate::api::StopReason::classify(ls.kkt_residual <= PSD_TOL, ls.iterations, PSD_MAX_ITER, Some(ls.kkt_residual), Some(PSD_TOL), ""),
            format!("PSD least squares: KKT residual {:.2e}", ls.kkt_residual),
        )
        .with_kkt_residual(ls.kkt_residual);
        let mut f = Fitted::new(Output::Embedding(emb), trace);
        if let Some(note) = g.note() {
            f.notes.push(note);
        }
        f.notes.push(format!("LLE basis: {r} dimensions (min(D, 4 dim + 1)), k = {}, reg = {reg:e} x tr(G_i)", self.k));
        f.notes.push(format!(
            "cca (MVU mode, {r} x {r} PSD least squares on {} edges): objective {:.6e} (sum of squared edge errors, data units), KKT residual {:.2e} after {} L-BFGS iterations on the factor and {} projected-gradient steps, rank {rank}",
            pairs.len(),
            ls.objective,
            ls.kkt_residual,
            ls.factor_iterations,
            ls.iterations
        ));
        f.graph = Some(Graph { n_vertices: n, edges: g.edges.iter().map(|&(i, j, _)| (i, j, 1.0)).collect() });
        Ok(f)
    }
}

/// Registry entry of `mvu-drtoolbox`.
pub(crate) fn info_mvu() -> MethodInfo {
    MethodInfo {
        name: "mvu-drtoolbox",
        summary: "drtoolbox 0.8.1b's 'MVU' (a candidate for the papers' MVU row): LLE to r = min(D, 4d + 1) dimensions, then the r x r PSD P minimising sum_E ((u_i - u_j)^T P (u_i - u_j) - ||x_i - x_j||^2)^2 on the k-NN edges (cca.m, MVU mode, no variance term); the first d principal coordinates of U P^(1/2). Not the MVU SDP: see mvu / mvu-ineq.",
        reference: "van der Maaten, Matlab Toolbox for Dimensionality Reduction 0.8.1b (compute_mapping.m case 'MVU', lle.m, cca.m by F. Sha)",
        // 2: the LLE basis leaves out the constant vector by projection, and a basis the data do
        // not determine is a degenerate cell (numerics::spectral::bottom_without_constant)
        // 3: the PSD least squares' factor stage runs the unconstrained L-BFGS of
        // numerics::optim::lbfgs (m = 20) over edge_stress's loop instead of the Fortran L-BFGS-B
        // without bounds: other iterates, same optimum; isolet k = 30 in 209 s against 312 s
        // (one thread, docs/parity/mvu.md)
        // 4: the factor stage adapts its width every 100, 200, 400, ... iterations (drops the
        // directions the rank-deficient optimum does not use; psd_least_squares): isolet k = 10
        // in 40 s against 158 s, the same rank and 1-NN score (docs/parity/mvu.md)
        version: 4,
        output: OutputKind::Embedding,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: false,
        params: MvuDrtoolbox::schema(()),
        build: |p| declare::build::<MvuDrtoolbox>("mvu-drtoolbox", (), p),
    }
}

/// Registry entry of `fastmvu`.
pub(crate) fn info_fastmvu() -> MethodInfo {
    MethodInfo {
        name: "fastmvu",
        summary: "drtoolbox's FastMVU (what 0.1b's compute_mapping runs for 'MVU'; the closest candidate for the papers' MVU row): unit target lengths on the k-NN edges, an r = 2d PSD least-squares fit over the bottom Laplacian eigenvectors (sdecca2), then stress fits in 2d and d dimensions without a variance term. Not the MVU SDP: see mvu / mvu-ineq.",
        reference: "van der Maaten, Matlab Toolbox for Dimensionality Reduction 0.8 (fastmvu.m, sdecca2.m, hillclimber2c.m); Weinberger, Sha, Zhu & Saul, NIPS 2006",
        // 3: the stress fits run the unconstrained L-BFGS of numerics::optim::lbfgs (strong Wolfe
        // steps) instead of the Fortran L-BFGS-B without bounds, and the stress sums each squared
        // edge length in eight lanes: other iterates; isolet k = 50 in 85 s against 141 s (one
        // thread, docs/parity/mvu.md)
        // 4: the sdecca2 stage's factor fit runs the same L-BFGS (as mvu-drtoolbox version 3)
        version: 4,
        output: OutputKind::Embedding,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: false,
        params: FastMvu::schema(()),
        build: |p| declare::build::<FastMvu>("fastmvu", (), p),
    }
}

#[cfg(test)]
mod tests {
    use super::{edge_stress, edge_stress_lanes, two_rows_mut};

    #[test]
    fn edge_stress_gives_the_same_bits_with_and_without_avx2_and_matches_a_plain_sum() {
        // q = 19: two full lanes of eight and a tail of three
        let (n, q) = (7, 19);
        let y: Vec<f64> = (0..n * q).map(|k| ((k * 37 % 101) as f64 - 50.0) / 17.0).collect();
        let pairs = [(0, 1), (3, 1), (2, 6), (6, 2), (4, 5), (5, 0)];
        let t = [1.0, 0.5, 2.0, 2.0, 0.0, 3.0];
        let (mut g1, mut g2) = (vec![0.0f64; n * q], vec![0.0f64; n * q]);
        let f1 = edge_stress(&y, q, &pairs, &t, &mut g1);
        let f2 = edge_stress_lanes(&y, q, &pairs, &t, &mut g2);
        assert_eq!(f1.to_bits(), f2.to_bits());
        assert!(g1.iter().zip(&g2).all(|(a, b)| a.to_bits() == b.to_bits()));
        let plain: f64 = pairs
            .iter()
            .zip(&t)
            .map(|(&(i, j), te)| {
                let s: f64 = (0..q).map(|c| (y[i * q + c] - y[j * q + c]).powi(2)).sum();
                (s - te) * (s - te)
            })
            .sum();
        assert!((f1 - plain).abs() <= 1e-12 * plain, "{f1} vs {plain}");
    }

    #[test]
    fn two_rows_mut_returns_row_i_then_row_j_in_either_order() {
        let mut a: Vec<f64> = (0..12).map(f64::from).collect();
        let (ri, rj) = two_rows_mut(&mut a, 3, 3, 1);
        assert_eq!((ri.to_vec(), rj.to_vec()), (vec![9.0, 10.0, 11.0], vec![3.0, 4.0, 5.0]));
        ri[0] = -1.0;
        rj[2] = -2.0;
        let (ri, rj) = two_rows_mut(&mut a, 3, 0, 3);
        assert_eq!((ri.to_vec(), rj.to_vec()), (vec![0.0, 1.0, 2.0], vec![-1.0, 10.0, 11.0]));
        assert_eq!(a[5], -2.0);
    }
}
