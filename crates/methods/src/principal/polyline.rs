//! The polygonal line algorithm for principal curves (Kégl, Krzyżak, Linder & Zeger, *Learning
//! and design of principal curves*, IEEE TPAMI 22(3), 2000, §4), the principal-curve baseline
//! of 004 §6.2 (Fig. 5's third column).
//!
//! A polygonal line with vertices `v_0, ..., v_k` (k segments `s_j = [v_j, v_{j+1}]`) is grown one
//! vertex at a time. The data are partitioned into the nearest-neighbour regions of the curve:
//! `V_j` (samples whose nearest point of the curve is the vertex `v_j`) and `S_j` (nearest point
//! inside segment `s_j`; ties to the earlier of `V_0, S_0, V_1, S_1, ..., V_k`). With the partition
//! fixed, the penalised distance
//!
//! `G = Delta_n + lambda_p P`, `Delta_n = (1/n) [ sum_j sum_{x in V_j} ||x - v_j||^2 + sum_j sum_{x in S_j} d_line(x, s_j)^2 ]`,
//! `P = (1/(k+1)) sum_i P_v(v_i) = (1/(k+1)) [ 3 sum_{0 < j < k} r^2 (1 + cos gamma_j) + 2 ||v_1 - v_0||^2 + 2 ||v_k - v_{k-1}||^2 ]`
//!
//! (`d_line` the distance to the line through the segment, `gamma_j` the angle at `v_j`, `r` the
//! radius of the data about their mean; `P_v(v_i)` the paper's vertex penalty: the angle terms
//! `pi(v_j) = r^2 (1 + cos gamma_j)` of the interior vertices among `v_{i-1}, v_i, v_{i+1}` plus the
//! squared length of an end segment at `v_i`, so each angle term is counted three times and each
//! end length twice; when k = 1 the single segment is both ends) is decreased vertex by vertex:
//! each vertex minimises the terms of G that involve it by gradient steps with Armijo
//! backtracking, so G never increases over a sweep (coordinate descent on the paper's `G_n(f)` as
//! printed, with its `1/(k+1)`). Projection and vertex sweeps alternate until the relative change
//! of G is below `tol` (the inner loop); `lambda_p = lambda'_p k n^(-1/3) Delta_n^(1/2) / r` is set at
//! the start of each inner loop from the current mean squared distance `Delta_n` (held fixed
//! inside it). The outer loop starts from the shortest segment of the first principal line that
//! holds every projected sample, and adds a vertex at the midpoint of the segment with the most
//! samples in `S_j` (ties: the first; the longest segment when every `S_j` is empty) until
//! `k >= beta n^(1/3) Delta_n^(-1/2) r` or `k = max_segments`.
//!
//! Cost: O(n k D) per projection and per sweep; at most `max_segments` inner loops.
//!
//! Output: a principal graph with the vertices as centres, the chain `(j, j + 1)` as edges and
//! every sample's nearest point of the curve as its projection.

use crate::api::declare::{self, declare_params, Declared};
use crate::api::info::{float_in, int, positive, MethodInfo};
use crate::api::params::{closed, open};
use crate::api::{check_input, Embedder, FitInput, Fitted, MethodError, Output, OutputKind, ParamMap, PrincipalGraph, Result, StopReason, Trace};
use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis};
use structdr_linalg::eigh_top;
use structdr_numerics::dist::exact_sq_dist as sq;

const METHOD: &str = "polyline";

declare_params! {
    /// The polygonal line algorithm (see the module doc).
    #[derive(Debug, Clone)]
    pub struct PolygonalLine {
        /// `lambda'_p >= 0`, the curvature penalty's data-independent factor.
        pub penalty: f64 = float_in("lambda_p", closed(0.0), open(f64::INFINITY), 0.13, "curvature penalty factor lambda'_p >= 0: lambda_p = lambda'_p k n^(-1/3) Delta_n^(1/2) / r (Kegl et al. 2000: 0.13)"),
        /// `beta > 0` of the stopping rule on the number of segments.
        pub beta: f64 = positive("beta", 0.3, "segments are added while k < beta n^(1/3) Delta_n^(-1/2) r (Kegl et al. 2000: 0.3)"),
        /// Largest number of segments.
        pub max_segments: usize = int("max_segments", 1, 100, "largest number of segments k"),
        /// Relative change of G that ends an inner loop.
        pub tol: f64 = float_in("tol", open(0.0), open(f64::INFINITY), 1e-3, "an inner loop (projection + vertex sweep) ends when the relative change of G is below tol (Kegl et al. 2000: 0.001)"),
        /// Largest number of projection / sweep rounds per inner loop.
        pub max_inner: usize = int("max_inner", 1, 200, "largest number of projection / vertex-sweep rounds in one inner loop"),
    }
}

/// Where a sample's nearest point of the curve lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    /// The vertex `v_j`.
    Vertex(usize),
    /// The inside of the segment `[v_j, v_{j+1}]`.
    Segment(usize),
}

/// Squared distance from `x` to the line through `p` and `q`, and its gradients with respect to
/// `p` and `q`: with `a = x - p`, `u = q - p`, `s = a.u`, `w = u.u`, `f = a.a - s^2 / w`,
/// `df/dp = -2a + 2s(u + a)/w - 2 s^2 u / w^2`, `df/dq = -2 s a / w + 2 s^2 u / w^2`. A zero-length
/// segment is the point `p` (`f = a.a`, gradient `-2a` on `p`, 0 on `q`).
pub fn line_sq_dist(x: ArrayView1<f64>, p: ArrayView1<f64>, q: ArrayView1<f64>) -> (f64, Array1<f64>, Array1<f64>) {
    let a = &x - &p;
    let u = &q - &p;
    let w = u.dot(&u);
    let aa = a.dot(&a);
    if w == 0.0 {
        return (aa, -2.0 * &a, Array1::zeros(a.len()));
    }
    let s = a.dot(&u);
    let f = (aa - s * s / w).max(0.0);
    let gp = -2.0 * &a + (2.0 * s / w) * (&u + &a) - (2.0 * s * s / (w * w)) * &u;
    let gq = (-2.0 * s / w) * &a + (2.0 * s * s / (w * w)) * &u;
    (f, gp, gq)
}

/// `1 + cos gamma` at `v` between the segments to `prev` and `next`, and its gradients with
/// respect to `prev`, `v`, `next` (0 when a segment has zero length).
pub fn bend(prev: ArrayView1<f64>, v: ArrayView1<f64>, next: ArrayView1<f64>) -> (f64, Array1<f64>, Array1<f64>, Array1<f64>) {
    let a = &prev - &v;
    let b = &next - &v;
    let (na, nb) = (a.dot(&a).sqrt(), b.dot(&b).sqrt());
    let dd = a.len();
    if na == 0.0 || nb == 0.0 {
        return (1.0, Array1::zeros(dd), Array1::zeros(dd), Array1::zeros(dd));
    }
    let c = a.dot(&b) / (na * nb);
    let dca = &b / (na * nb) - (c / (na * na)) * &a;
    let dcb = &a / (na * nb) - (c / (nb * nb)) * &b;
    let dv = -(&dca + &dcb);
    (1.0 + c, dca, dv, dcb)
}

/// The nearest region and point of the polyline `verts` for every sample (module doc).
pub fn project(x: ArrayView2<f64>, verts: ArrayView2<f64>) -> (Vec<Region>, Array2<f64>) {
    let (n, dd) = x.dim();
    let k = verts.nrows() - 1;
    let mut regions = Vec::with_capacity(n);
    let mut points = Array2::zeros((n, dd));
    for (i, xi) in x.rows().into_iter().enumerate() {
        let mut best = (sq(xi, verts.row(0)), Region::Vertex(0));
        let mut best_point = verts.row(0).to_owned();
        for j in 0..k {
            let (p, q) = (verts.row(j), verts.row(j + 1));
            let u = &q - &p;
            let w = u.dot(&u);
            if w > 0.0 {
                let t = (&xi - &p).dot(&u) / w;
                if t > 0.0 && t < 1.0 {
                    let point = &p + &(t * &u);
                    let d = sq(xi, point.view());
                    if d < best.0 {
                        best = (d, Region::Segment(j));
                        best_point = point;
                    }
                }
            }
            let d = sq(xi, q);
            if d < best.0 {
                best = (d, Region::Vertex(j + 1));
                best_point = q.to_owned();
            }
        }
        regions.push(best.1);
        points.row_mut(i).assign(&best_point);
    }
    (regions, points)
}

/// The weights of an angle term and of an end-segment length in G: `3 lambda_p / (k+1)` and
/// `2 lambda_p / (k+1)` (each angle term is in three vertex penalties, each end length in two).
fn penalty_weights(lambda_p: f64, k: usize) -> (f64, f64) {
    (3.0 * lambda_p / (k + 1) as f64, 2.0 * lambda_p / (k + 1) as f64)
}

/// The penalised distance G of the module doc for a fixed partition.
pub fn objective(x: ArrayView2<f64>, verts: ArrayView2<f64>, regions: &[Region], lambda_p: f64, r: f64) -> f64 {
    let n = x.nrows() as f64;
    let k = verts.nrows() - 1;
    let mut dist = 0.0;
    for (xi, reg) in x.rows().into_iter().zip(regions) {
        dist += match *reg {
            Region::Vertex(j) => sq(xi, verts.row(j)),
            Region::Segment(j) => line_sq_dist(xi, verts.row(j), verts.row(j + 1)).0,
        };
    }
    let (w_bend, w_len) = penalty_weights(lambda_p, k);
    // the single segment of k = 1 is both end segments: one term of weight w_len
    let mut pen = w_len * sq(verts.row(0), verts.row(1));
    if k > 1 {
        pen += w_len * sq(verts.row(k), verts.row(k - 1));
    }
    for j in 1..k {
        pen += w_bend * r * r * bend(verts.row(j - 1), verts.row(j), verts.row(j + 1)).0;
    }
    dist / n + pen
}

/// The terms of G that involve vertex `i` and their gradient with respect to `v_i`. `members[j]`
/// lists the samples of every region (vertex regions first: `members[j]` for `V_j`,
/// `members[k + 1 + j]` for `S_j`).
fn vertex_terms(x: ArrayView2<f64>, verts: ArrayView2<f64>, i: usize, members: &[Vec<usize>], lambda_p: f64, r: f64) -> (f64, Array1<f64>) {
    let n = x.nrows() as f64;
    let k = verts.nrows() - 1;
    let dd = verts.ncols();
    let vi = verts.row(i);
    let (mut f, mut g) = (0.0, Array1::<f64>::zeros(dd));
    for &s in &members[i] {
        let xs = x.row(s);
        f += sq(xs, vi) / n;
        g.scaled_add(2.0 / n, &(&vi - &xs));
    }
    if i > 0 {
        for &s in &members[k + 1 + (i - 1)] {
            let (d, _, gq) = line_sq_dist(x.row(s), verts.row(i - 1), vi);
            f += d / n;
            g.scaled_add(1.0 / n, &gq);
        }
    }
    if i < k {
        for &s in &members[k + 1 + i] {
            let (d, gp, _) = line_sq_dist(x.row(s), vi, verts.row(i + 1));
            f += d / n;
            g.scaled_add(1.0 / n, &gp);
        }
    }
    let (w_bend, w_len) = penalty_weights(lambda_p, k);
    // end-segment lengths
    let ends: &[(usize, usize)] = if k == 1 { &[(0, 1)] } else { &[(0, 1), (k - 1, k)] };
    for &(a, b) in ends {
        if i == a || i == b {
            let other = if i == a { b } else { a };
            f += w_len * sq(vi, verts.row(other));
            g.scaled_add(2.0 * w_len, &(&vi - &verts.row(other)));
        }
    }
    // bends at i - 1, i, i + 1 (interior vertices only)
    for j in i.saturating_sub(1)..=(i + 1).min(k) {
        if j == 0 || j == k {
            continue;
        }
        let (c, gprev, gv, gnext) = bend(verts.row(j - 1), verts.row(j), verts.row(j + 1));
        f += w_bend * r * r * c;
        let gi = if i + 1 == j {
            gprev
        } else if i == j {
            gv
        } else {
            gnext
        };
        g.scaled_add(w_bend * r * r, &gi);
    }
    (f, g)
}

/// Region members: `V_0..V_k` then `S_0..S_{k-1}`.
fn members(regions: &[Region], k: usize) -> Vec<Vec<usize>> {
    let mut m = vec![Vec::new(); 2 * k + 1];
    for (s, reg) in regions.iter().enumerate() {
        match *reg {
            Region::Vertex(j) => m[j].push(s),
            Region::Segment(j) => m[k + 1 + j].push(s),
        }
    }
    m
}

/// One vertex-optimisation sweep with the partition fixed: each vertex in turn takes gradient
/// steps with Armijo backtracking on the terms of G that involve it (at most 20 accepted steps).
/// Never increases G.
pub fn sweep(x: ArrayView2<f64>, verts: &mut Array2<f64>, regions: &[Region], lambda_p: f64, r: f64) {
    let k = verts.nrows() - 1;
    let m = members(regions, k);
    for i in 0..=k {
        let mut step = 1.0;
        for _ in 0..20 {
            let (f0, g) = vertex_terms(x, verts.view(), i, &m, lambda_p, r);
            let gg = g.dot(&g);
            if gg == 0.0 || !gg.is_finite() {
                break;
            }
            let v0 = verts.row(i).to_owned();
            let mut accepted = false;
            for _ in 0..60 {
                verts.row_mut(i).assign(&(&v0 - &(step * &g)));
                let (f1, _) = vertex_terms(x, verts.view(), i, &m, lambda_p, r);
                if f1 <= f0 - 1e-4 * step * gg {
                    accepted = true;
                    break;
                }
                step *= 0.5;
            }
            if !accepted {
                verts.row_mut(i).assign(&v0);
                break;
            }
            step *= 2.0;
        }
    }
}

/// `Delta_n`: the mean squared distance of the samples to their projections.
fn mean_sq_dist(x: ArrayView2<f64>, points: &Array2<f64>) -> f64 {
    points.rows().into_iter().zip(x.rows()).map(|(p, xi)| sq(p, xi)).sum::<f64>() / x.nrows() as f64
}

/// Everything a polygonal-line fit produces.
#[derive(Debug, Clone)]
pub struct PolylineFit {
    /// The vertices, (k + 1) x D.
    pub vertices: Array2<f64>,
    /// Every sample's nearest point of the curve.
    pub projection: Array2<f64>,
    /// G after every inner round (lambda_p changes between inner loops).
    pub history: Vec<f64>,
    /// Whether the segment-count rule ended the growth (rather than `max_segments`).
    pub rule_met: bool,
    /// Inner loops that ended at `max_inner`.
    pub inner_at_limit: usize,
    /// The largest final relative change of G over the inner loops (below `tol` unless one
    /// ended at `max_inner`).
    pub worst_change: f64,
}

impl PolygonalLine {
    /// The fit (module doc).
    pub fn fit_full(&self, x: ArrayView2<f64>) -> Result<PolylineFit> {
        let (n, dd) = x.dim();
        let mean = x.mean_axis(Axis(0)).expect("n >= 2");
        let xc = &x - &mean.view().insert_axis(Axis(0));
        let r = xc.rows().into_iter().map(|row| row.dot(&row)).fold(0.0f64, f64::max).sqrt();
        if r == 0.0 {
            return Err(MethodError::Input { method: METHOD, reason: "constant data: every sample is identical, there is no curve to fit".into() });
        }
        let cov = xc.t().dot(&xc);
        let u = eigh_top(cov.view(), 1).map_err(crate::api::numerical(METHOD))?.vectors.column(0).to_owned();
        let t = xc.dot(&u);
        let (tmin, tmax) = t.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
        let mut verts = Array2::zeros((2, dd));
        verts.row_mut(0).assign(&(&mean + &(tmin * &u)));
        verts.row_mut(1).assign(&(&mean + &(tmax * &u)));
        let nf = n as f64;
        let mut history = Vec::new();
        let mut inner_at_limit = 0;
        let mut worst_change = 0.0f64;
        let mut rule_met = false;
        loop {
            let k = verts.nrows() - 1;
            let (mut regions, points) = project(x, verts.view());
            let delta = mean_sq_dist(x, &points);
            let lambda_p = self.penalty * k as f64 * nf.powf(-1.0 / 3.0) * delta.sqrt() / r;
            let mut g_prev = objective(x, verts.view(), &regions, lambda_p, r);
            let mut rounds = 0;
            let mut points;
            loop {
                sweep(x, &mut verts, &regions, lambda_p, r);
                (regions, points) = project(x, verts.view());
                let g = objective(x, verts.view(), &regions, lambda_p, r);
                history.push(g);
                rounds += 1;
                let change = (g_prev - g).abs() / g_prev.abs().max(f64::MIN_POSITIVE);
                g_prev = g;
                if change < self.tol || rounds == self.max_inner {
                    inner_at_limit += usize::from(change >= self.tol);
                    worst_change = worst_change.max(change);
                    break;
                }
            }
            // the last round's projection is the current curve's
            let delta = mean_sq_dist(x, &points);
            if delta == 0.0 || k as f64 >= self.beta * nf.powf(1.0 / 3.0) * delta.powf(-0.5) * r {
                rule_met = true;
                break;
            }
            if k >= self.max_segments {
                break;
            }
            // split the segment with the most samples inside it (the longest when all are empty)
            let m = members(&regions, k);
            let counts: Vec<usize> = (0..k).map(|j| m[k + 1 + j].len()).collect();
            let most = *counts.iter().max().expect("k >= 1");
            let j = if most > 0 {
                counts.iter().position(|&c| c == most).expect("present")
            } else {
                (0..k).max_by(|&a, &b| sq(verts.row(a), verts.row(a + 1)).total_cmp(&sq(verts.row(b), verts.row(b + 1))).then(b.cmp(&a))).expect("k >= 1")
            };
            let mid = (&verts.row(j) + &verts.row(j + 1)) * 0.5;
            let mut grown = Array2::zeros((k + 2, dd));
            grown.slice_mut(ndarray::s![..=j, ..]).assign(&verts.slice(ndarray::s![..=j, ..]));
            grown.row_mut(j + 1).assign(&mid);
            grown.slice_mut(ndarray::s![j + 2.., ..]).assign(&verts.slice(ndarray::s![j + 1.., ..]));
            verts = grown;
        }
        let projection = project(x, verts.view()).1;
        Ok(PolylineFit { vertices: verts, projection, history, rule_met, inner_at_limit, worst_change })
    }
}

impl Embedder for PolygonalLine {
    fn name(&self) -> &'static str {
        METHOD
    }
    fn info(&self) -> MethodInfo {
        info()
    }
    fn params(&self) -> ParamMap {
        self.to_params()
    }
    fn fit_checked(&self, input: &FitInput) -> Result<Fitted> {
        let x = input.x;
        check_input(METHOD, &x, 2)?;
        let f = self.fit_full(x)?;
        let k = f.vertices.nrows() - 1;
        let converged = f.rule_met && f.inner_at_limit == 0;
        // residual: the largest final relative change of G over the inner loops
        let residual = Some(f.worst_change);
        let stop = if converged {
            StopReason::Converged { residual, tol: Some(self.tol) }
        } else if !f.rule_met {
            StopReason::IterationLimit { max_iter: self.max_segments, residual, tol: Some(self.tol) }
        } else {
            StopReason::Stalled { residual, tol: Some(self.tol), detail: format!("{} inner loop(s) ended at max_inner = {}", f.inner_at_limit, self.max_inner) }
        };
        let edges: Vec<(usize, usize, f64)> = (0..k).map(|j| (j, j + 1, 1.0)).collect();
        let graph = PrincipalGraph { centres: f.vertices, edges, projection: f.projection };
        let mut fitted = Fitted::new(Output::PrincipalGraph(graph), Trace::iterative(f.history, k, stop, ""));
        fitted.notes.push(format!(
            "polygonal line: {k} segments ({}), {} inner loop(s) at max_inner",
            if f.rule_met { "the segment-count rule k >= beta n^(1/3) Delta_n^(-1/2) r ended the growth" } else { "stopped at max_segments" },
            f.inner_at_limit
        ));
        Ok(fitted)
    }
}

/// The registry entry.
pub(crate) fn info() -> MethodInfo {
    MethodInfo {
        name: METHOD,
        summary: "Polygonal line principal curve: vertices added one at a time at the busiest segment's midpoint, each inner loop alternating projection and vertex-by-vertex descent of mean squared distance + lambda_p (curvature + end lengths).",
        reference: "Kegl, Krzyzak, Linder & Zeger, Learning and design of principal curves, IEEE TPAMI 22(3) 2000, §4; 004 §6.2",
        version: 1,
        output: OutputKind::PrincipalGraph,
        needs_labels: false,
        accepts_init: false,
        inductive: false,
        randomised: false,
        params: PolygonalLine::schema(()),
        build: |p| declare::build::<PolygonalLine>(METHOD, (), p),
    }
}

#[cfg(test)]
mod tests;
