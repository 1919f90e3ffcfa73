//! The [`KmeansAlgorithm::Lloyd`](super::KmeansAlgorithm::Lloyd) run with exact pruning of the
//! point-centre distances (Elkan 2003, with bounds made safe for floating point).
//!
//! # What it computes
//!
//! Exactly what the brute-force path of the parent module computes (`kmeans_plusplus`, `lloyd`,
//! `assign`), bit for bit: the same k-means++ picks, the same labels after every assignment, the
//! same centres (sums in sample order), the same centre-shift test, hence the same iteration
//! count, and the same final squared distances. Only the distances that *cannot* change an
//! outcome are skipped; every distance that is compared with another is the exact
//! [`sq_dist4`] value, and candidates are compared as the brute force does: the assignment is the
//! lexicographic minimum of `(sq_dist4(y_i, c_j), j)` over all `j`.
//!
//! # The bounds
//!
//! Write `E(y, c)` for the computed `sq_dist4(y, c)` and `D(y, c) = ||y - c||^2` for the exact
//! real number. Every point `i` keeps its centre `a`, an upper bound `u >= sqrt D(y_i, c_a)` and
//! lower bounds `l_j <= sqrt D(y_i, c_j)` for every centre `j`; every iteration also computes
//! lower bounds `cc_aj <= ||c_a - c_j||` and `near_a = min_{j != a} cc_aj`. When the centres move
//! by `p_j >= ||c_j' - c_j||` the bounds follow the triangle inequality: `u <- u + p_a`,
//! `l_j <- max(0, l_j - p_j)`. A centre `j` is skipped when one of
//!
//! * `l_j >= u (1 + 2g) + T / 2`, or
//! * `cc_aj - u >= u (1 + 2g) + T / 2` (i.e. `sqrt D(y, c_j) >= ||c_a - c_j|| - sqrt D(y, c_a)`
//!   is large enough), and for the whole point when this holds with `near_a`,
//!
//! holds, which *proves* `E(y_i, c_j) > E(y_i, c_a)` strictly (lemma below), so that `j` can be
//! neither the minimum nor a tie. As `a` only ever moves to a lexicographically smaller candidate,
//! every skipped centre is strictly worse than the final one, and the lexicographic minimum over
//! the centres actually computed (in index order, `<` with the lower index on equality) is the
//! brute-force answer. A centre that fails the tests is computed with `sq_dist4` (after
//! computing `E(y_i, c_a)` itself when `u` is only a drifted bound).
//!
//! # Why the margin is safe
//!
//! `sq_dist4` adds `m = dim` non-negative terms `fl(fl(x - z)^2)`, each through at most
//! `m / 4 + 5` additions, so without underflow `|E - D| <= gamma D` with
//! `gamma = gamma_{m/4 + 8} ~ (m / 4 + 8) 2^-53`; an underflowing square adds at most `2^-1075`
//! (subtractions and additions in the subnormal range are exact), so
//! `|E - D| <= gamma D + t` with `t = m 2^-1074 < 2^-1000`. Overflow cannot happen: the data
//! reach this module scaled to `max |y_ij| ~ 2^490` (module `scale`), so `E <= m 2^984`.
//! With `g = (m + 16) 2^-52 >= 8 gamma` and `T = 2^-480`:
//!
//! *Lemma.* If `sqrt D_j >= L`, `sqrt D_a <= U` and `L >= U (1 + 2g) + T / 2`, then
//! `E_j >= L^2 (1 - gamma) - t >= U^2 (1 + 4g)(1 - gamma) + T^2 / 4 (1 - gamma) - t
//! > U^2 (1 + gamma) + t >= E_a`, since `(1 + 4g)(1 - gamma) >= 1 + gamma` and
//! `T^2 / 4 = 2^-962 > 2t / (1 - gamma)`.
//!
//! The bounds themselves are rounded outwards: `u = sqrt(E (1 + g) + 2^-1000) (1 + 2^-48)` and
//! `l = sqrt(max(0, E (1 - g) - 2^-1000)) (1 - 2^-48)` contain `sqrt D` whatever the rounding of
//! their four operations (each at most `2^-53` relative); the drift updates are
//! `(u + p)(1 + 2^-48)` and `max(0, (l - p)(1 - 2^-48))` (applied with `p = 0` too); and the tests are evaluated as
//! `l > u (1 + 4g + 2^-40) + T` and `cc > u (2 + 4g + 2^-40) + T`, whose rounding (two operations)
//! is far inside the extra `2g + 2^-40`. The margin is `~ (m + 16) 2^-50` relative, below `1e-12`
//! for `m = 300`: it costs no measurable pruning, and it is orders of magnitude wider than the
//! floating-point error it covers. A centre that has not moved (same bits) has drift 0, so its
//! exact distance stays known.
//!
//! k-means++ seeding is pruned the same way: a point's `D(x)^2` changes only if the new pick is
//! strictly nearer than its nearest chosen centre, so the pick is skipped for points where the
//! centre-centre test above proves it is not; the running minima, the sums and the draws are the
//! brute-force ones. The skipped distances leave lower bounds, the computed ones both bounds, so
//! the first assignment (the nearest chosen centre, lowest index on ties) comes for free.
//!
//! # Other exact savings
//!
//! * Distances are computed four at a time (`sq_dist4_x4`: four independent copies of the
//!   [`sq_dist4`] arithmetic, interleaved to hide the addition latency; same bits, tested).
//! * The centre update sums each cluster's members in sample order, as the brute force's running
//!   sums do, but column block by column block in registers after a stable counting sort of the
//!   points by centre (`member_sums`): every element's sum is the same chain of additions.
//! * Buffers are reused across iterations; the assignment stays element-wise parallel over
//!   chunks of points, so nothing depends on the thread count.

use ndarray::Array2;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use super::{sq_dist4, KmeansOptions};

/// `1 + 2^-48`: outward rounding of an upper bound after at most four roundings.
const HI: f64 = 1.0 + 16.0 * f64::EPSILON;
/// `1 - 2^-48`: outward rounding of a lower bound.
const LO: f64 = 1.0 - 16.0 * f64::EPSILON;
/// `2^-1000`: covers the absolute error of underflowing squares in `sq_dist4`.
const TINY: f64 = f64::from_bits((1023 - 1000) << 52);
/// `2^-480`: the absolute part of the pruning margin (`(T / 2)^2` dwarfs `TINY`).
const T: f64 = f64::from_bits((1023 - 480) << 52);
/// `2^-40`: slack for the rounding of the tests themselves.
const SLACK: f64 = f64::from_bits((1023 - 40) << 52);

/// The margins for one dimension (see the module docs).
#[derive(Debug, Clone, Copy)]
pub(super) struct Margins {
    /// `1 + g`, `1 - g`.
    g_hi: f64,
    g_lo: f64,
    /// `1 + 4g + 2^-40`, `2 + 4g + 2^-40`.
    fp: f64,
    fp_cc: f64,
}

impl Margins {
    pub(super) fn new(dim: usize) -> Self {
        let g = (dim as f64 + 16.0) * f64::EPSILON;
        Self { g_hi: 1.0 + g, g_lo: 1.0 - g, fp: 1.0 + 4.0 * g + SLACK, fp_cc: 2.0 + 4.0 * g + SLACK }
    }

    /// An upper bound on `sqrt D` from the computed `E`.
    #[inline]
    pub(super) fn hi(&self, e: f64) -> f64 {
        (e * self.g_hi + TINY).sqrt() * HI
    }

    /// A lower bound on `sqrt D` from the computed `E`.
    #[inline]
    pub(super) fn lo(&self, e: f64) -> f64 {
        (e * self.g_lo - TINY).max(0.0).sqrt() * LO
    }

    /// `l <= ||y - c_j||` and `u >= ||y - c_a||` prove `E(y, c_j) > E(y, c_a)`.
    #[cfg(test)]
    #[inline]
    pub(super) fn beats(&self, l: f64, u: f64) -> bool {
        l > u * self.fp + T
    }

    /// `cc <= ||c_a - c_j||` and `u >= ||y - c_a||` prove `E(y, c_j) > E(y, c_a)`.
    #[inline]
    pub(super) fn beats_cc(&self, cc: f64, u: f64) -> bool {
        cc > u * self.fp_cc + T
    }

    /// The right-hand sides of [`Self::beats`] and [`Self::beats_cc`] for one `u`: `l_j` or
    /// `cc_aj` above them proves `j` farther.
    #[inline]
    pub(super) fn thresholds(&self, u: f64) -> (f64, f64) {
        (u * self.fp + T, u * self.fp_cc + T)
    }
}

/// The state of one point: its centre, the bound `u`, and `E(y, c_a)` when `tight`.
#[derive(Debug, Clone, Copy)]
struct Point {
    a: usize,
    u: f64,
    ea: f64,
    tight: bool,
}

/// Points per parallel task of the assignment (element-wise, so thread-count independent).
const CHUNK: usize = 256;

/// The pruned Lloyd run: `(centres, iterations, labels, squared distances)` of the brute-force
/// `lloyd` followed by `assign` on its centres, bit for bit. `y` is row-major.
pub(super) fn lloyd_pruned(y: &Array2<f64>, k: usize, rng: &mut Xoshiro256PlusPlus, opts: &KmeansOptions) -> (Array2<f64>, usize, Vec<usize>, Vec<f64>) {
    let n = y.nrows();
    let dim = y.ncols();
    let ys = y.as_slice().expect("row-major");
    let m = Margins::new(dim);
    let (mut centres, mut pts, mut lb) = seed(ys, n, dim, k, rng, &m);
    let mut old = vec![0.0f64; k * dim];
    let mut counts = vec![0usize; k];
    let mut drift = vec![0.0f64; k];
    let mut cc = vec![0.0f64; k * k];
    let mut near = vec![0.0f64; k];
    let mut order = vec![0usize; n];
    let mut start = vec![0usize; k + 1];
    let mut iterations = 0;
    loop {
        // the update of the brute force, verbatim: sums in sample order, an empty cluster keeps
        // its centre, the shift summed over the centres in order
        std::mem::swap(&mut old, &mut centres);
        counts.fill(0);
        for p in &pts {
            counts[p.a] += 1;
        }
        member_sums(ys, dim, k, &pts, &counts, &mut order, &mut start, &mut centres);
        let mut shift2 = 0.0;
        for j in 0..k {
            let new = &mut centres[j * dim..(j + 1) * dim];
            let o = &old[j * dim..(j + 1) * dim];
            if counts[j] == 0 {
                new.copy_from_slice(o);
            } else {
                let cnt = counts[j] as f64;
                new.iter_mut().for_each(|v| *v /= cnt);
            }
            let e = sq_dist4(new, o);
            shift2 += e;
            drift[j] = if new.iter().zip(o).all(|(a, b)| a.to_bits() == b.to_bits()) { 0.0 } else { m.hi(e) };
        }
        iterations += 1;
        centre_bounds(&centres, k, dim, &m, &mut cc, &mut near);
        assign_pruned(ys, dim, k, &centres, &drift, &cc, &near, &mut pts, &mut lb, &m);
        if shift2.sqrt() < opts.tolerance || iterations >= opts.max_n_iterations {
            break;
        }
    }
    let labels: Vec<usize> = pts.iter().map(|p| p.a).collect();
    let d2: Vec<f64> =
        pts.iter().enumerate().map(|(i, p)| if p.tight { p.ea } else { sq_dist4(&ys[i * dim..(i + 1) * dim], &centres[p.a * dim..(p.a + 1) * dim]) }).collect();
    (Array2::from_shape_vec((k, dim), centres).expect("k x dim"), iterations, labels, d2)
}

/// k-means++ as the brute-force `kmeans_plusplus` (same draws, same running minima), returning
/// the centres and the points' first assignment with its bounds.
fn seed(ys: &[f64], n: usize, dim: usize, k: usize, rng: &mut Xoshiro256PlusPlus, m: &Margins) -> (Vec<f64>, Vec<Point>, Vec<f64>) {
    let row = |i: usize| &ys[i * dim..(i + 1) * dim];
    let mut centres = vec![0.0f64; k * dim];
    let first = rng.gen_range(0..n);
    centres[..dim].copy_from_slice(row(first));
    let mut lb = vec![0.0f64; n * k];
    // dmin[i] = E(y_i, c_{pts[i].a}), the brute force's running minimum
    let mut dmin: Vec<f64> = (0..n).map(|i| sq_dist4(row(i), row(first))).collect();
    let mut pts: Vec<Point> = dmin
        .iter()
        .enumerate()
        .map(|(i, &e)| {
            lb[i * k] = m.lo(e);
            Point { a: 0, u: m.hi(e), ea: e, tight: true }
        })
        .collect();
    let mut picks = Vec::with_capacity(k);
    picks.push(first);
    let mut cc = vec![0.0f64; k];
    let mut todo = Vec::with_capacity(n);
    for c in 1..k {
        let pick = super::kmeanspp_draw(&dmin, rng);
        centres[c * dim..(c + 1) * dim].copy_from_slice(row(pick));
        for (j, &q) in picks.iter().enumerate() {
            cc[j] = m.lo(sq_dist4(row(q), row(pick)));
        }
        picks.push(pick);
        todo.clear();
        for (i, p) in pts.iter().enumerate() {
            let cca = cc[p.a];
            if m.beats_cc(cca, p.u) {
                // E(y_i, c_c) > dmin_i: the brute force's `e < d` is false
                lb[i * k + c] = ((cca - p.u) * LO).max(0.0);
            } else {
                todo.push(i);
            }
        }
        for group in todo.chunks(4) {
            let mut e = [0.0f64; 4];
            if group.len() == 4 {
                e = sq_dist4_x4([row(group[0]), row(group[1]), row(group[2]), row(group[3])], [row(pick); 4]);
            } else {
                for (ev, &i) in e.iter_mut().zip(group) {
                    *ev = sq_dist4(row(i), row(pick));
                }
            }
            for (&e, &i) in e.iter().zip(group) {
                lb[i * k + c] = m.lo(e);
                if e < dmin[i] {
                    dmin[i] = e;
                    pts[i] = Point { a: c, u: m.hi(e), ea: e, tight: true };
                }
            }
        }
    }
    (centres, pts, lb)
}

/// Lower bounds `cc[a * k + j] <= ||c_a - c_j||` and `near[a] = min_{j != a} cc[a * k + j]`
/// (`+inf` for `k = 1`).
fn centre_bounds(cs: &[f64], k: usize, dim: usize, m: &Margins, cc: &mut [f64], near: &mut [f64]) {
    near.fill(f64::INFINITY);
    for a in 0..k {
        cc[a * k + a] = 0.0;
        for j in a + 1..k {
            let v = m.lo(sq_dist4(&cs[a * dim..(a + 1) * dim], &cs[j * dim..(j + 1) * dim]));
            cc[a * k + j] = v;
            cc[j * k + a] = v;
            near[a] = near[a].min(v);
            near[j] = near[j].min(v);
        }
    }
}

/// Moves every point's bounds by the centre drifts, then reassigns it (see the module docs).
fn assign_pruned(ys: &[f64], dim: usize, k: usize, cs: &[f64], drift: &[f64], cc: &[f64], near: &[f64], pts: &mut [Point], lb: &mut [f64], m: &Margins) {
    pts.par_chunks_mut(CHUNK).zip(lb.par_chunks_mut(CHUNK * k)).enumerate().for_each(|(b, (ps, ls))| {
        let row = |o: usize| &ys[(b * CHUNK + o) * dim..(b * CHUNK + o + 1) * dim];
        let c = |j: usize| &cs[j * dim..(j + 1) * dim];
        // 1. move the bounds; list the points whose loose bound fails for some centre
        let mut todo = Vec::with_capacity(ps.len());
        let mut tight = Vec::with_capacity(ps.len());
        for (o, (p, l)) in ps.iter_mut().zip(ls.chunks_exact_mut(k)).enumerate() {
            if move_bounds(drift, cc, near, p, l, m) {
                if p.tight {
                    tight.push(o);
                } else {
                    todo.push(o);
                }
            }
        }
        // 2. the exact distance of the others to their centre, four at a time
        for group in todo.chunks(4) {
            let mut e = [0.0f64; 4];
            if group.len() == 4 {
                let y4 = [row(group[0]), row(group[1]), row(group[2]), row(group[3])];
                e = sq_dist4_x4(y4, [c(ps[group[0]].a), c(ps[group[1]].a), c(ps[group[2]].a), c(ps[group[3]].a)]);
            } else {
                for (ev, &o) in e.iter_mut().zip(group) {
                    *ev = sq_dist4(row(o), c(ps[o].a));
                }
            }
            for (&e, &o) in e.iter().zip(group) {
                let p = &mut ps[o];
                *p = Point { a: p.a, u: m.hi(e), ea: e, tight: true };
                ls[o * k + p.a] = m.lo(e);
                tight.push(o);
            }
        }
        // 3. the remaining candidates of those points, in index order
        for &o in &tight {
            scan(row(o), dim, cs, cc, &mut ps[o], &mut ls[o * k..(o + 1) * k], m);
        }
    });
}

/// Moves one point's bounds by the drifts; `true` when its centre is not yet proven nearest by
/// the (possibly loose) bounds, i.e. when some centre must be examined with the exact `E(y, c_a)`.
#[inline]
fn move_bounds(drift: &[f64], cc: &[f64], near: &[f64], p: &mut Point, l: &mut [f64], m: &Margins) -> bool {
    let k = l.len();
    let da = drift[p.a];
    if da != 0.0 {
        p.u = (p.u + da) * HI;
        p.tight = false;
    }
    let a = p.a;
    let near_proof = m.beats_cc(near[a], p.u); // every other centre is proven farther
    let th = m.thresholds(p.u);
    let cca = &cc[a * k..(a + 1) * k];
    // one branch-free pass: a centre that did not move (drift 0) only shrinks its bound by
    // 1 - 2^-48; count the centres that neither bound rules out (`a` itself always counts once)
    let mut open = 0usize;
    for ((lj, &dj), &ccj) in l.iter_mut().zip(drift).zip(cca) {
        let v = ((*lj - dj) * LO).max(0.0);
        *lj = v;
        open += usize::from((v <= th.0) & (ccj <= th.1));
    }
    // `cc[a][a] = 0`: the centre itself is counted exactly when `l[a] <= th.0`
    let own = usize::from(l[a] <= th.0);
    !near_proof && open > own
}

/// The candidates of a point with exact `E(y, c_a)`: every centre that the bounds do not rule out
/// against this `E(y, c_a)` is computed (four at a time), and the lowest `(E, index)` among them
/// and `a` wins, as in the brute force (every centre ruled out is strictly farther than `a`).
#[inline]
fn scan(yi: &[f64], dim: usize, cs: &[f64], cc: &[f64], p: &mut Point, l: &mut [f64], m: &Margins) {
    let k = l.len();
    let c = |j: usize| &cs[j * dim..(j + 1) * dim];
    let th = m.thresholds(p.u);
    let mut cand = [0usize; 4];
    let mut nc = 0;
    let flush = |cand: &[usize], p: &mut Point, l: &mut [f64]| {
        let mut e = [0.0f64; 4];
        if cand.len() == 4 {
            e = sq_dist4_x4([yi; 4], [c(cand[0]), c(cand[1]), c(cand[2]), c(cand[3])]);
        } else {
            for (ev, &j) in e.iter_mut().zip(cand) {
                *ev = sq_dist4(yi, c(j));
            }
        }
        for (&e, &j) in e.iter().zip(cand) {
            l[j] = m.lo(e);
            if e < p.ea || (e == p.ea && j < p.a) {
                *p = Point { a: j, u: m.hi(e), ea: e, tight: true };
            }
        }
    };
    let a0 = p.a;
    for j in 0..k {
        if j == a0 || l[j] > th.0 || cc[a0 * k + j] > th.1 {
            continue;
        }
        cand[nc] = j;
        nc += 1;
        if nc == 4 {
            flush(&cand, p, l);
            nc = 0;
        }
    }
    if nc > 0 {
        flush(&cand[..nc], p, l);
    }
}

/// The sum of every cluster's members, `sums[j] = ((0 + y_i1) + y_i2) + ...` over its members in
/// sample order: element by element the brute force's running sums, in the same order (a stable
/// counting sort of the points by centre, then column blocks summed in registers). The division
/// by the count, and the old centre kept for an empty cluster, are the caller's.
fn member_sums(ys: &[f64], dim: usize, k: usize, pts: &[Point], counts: &[usize], order: &mut [usize], start: &mut [usize], sums: &mut [f64]) {
    start[0] = 0;
    for j in 0..k {
        start[j + 1] = start[j] + counts[j];
    }
    let mut next = start[..k].to_vec();
    for (i, p) in pts.iter().enumerate() {
        order[next[p.a]] = i;
        next[p.a] += 1;
    }
    const B: usize = 16;
    for j in 0..k {
        let members = &order[start[j]..start[j + 1]];
        let dst = &mut sums[j * dim..(j + 1) * dim];
        let mut c0 = 0;
        while c0 + B <= dim {
            let mut acc = [0.0f64; B];
            for &i in members {
                let y = &ys[i * dim + c0..i * dim + c0 + B];
                for t in 0..B {
                    acc[t] += y[t];
                }
            }
            dst[c0..c0 + B].copy_from_slice(&acc);
            c0 += B;
        }
        for (t, d) in dst[c0..].iter_mut().enumerate() {
            let mut acc = 0.0f64;
            for &i in members {
                acc += ys[i * dim + c0 + t];
            }
            *d = acc;
        }
    }
}

/// Four [`sq_dist4`]s at once, interleaved to hide the addition latency; every one with the
/// arithmetic of [`sq_dist4`] (same partial sums, same order), hence the same bits.
#[inline]
fn sq_dist4_x4(a: [&[f64]; 4], b: [&[f64]; 4]) -> [f64; 4] {
    let n = a[0].len();
    let body = n / 4 * 4;
    let mut s = [[0.0f64; 4]; 4];
    let mut q = 0;
    while q < body {
        for r in 0..4 {
            let (x, z) = (&a[r][q..q + 4], &b[r][q..q + 4]);
            for l in 0..4 {
                let d = x[l] - z[l];
                s[r][l] += d * d;
            }
        }
        q += 4;
    }
    let mut out = [0.0f64; 4];
    for r in 0..4 {
        let mut t = (s[r][0] + s[r][1]) + (s[r][2] + s[r][3]);
        for (x, z) in a[r][body..].iter().zip(&b[r][body..]) {
            let d = x - z;
            t += d * d;
        }
        out[r] = t;
    }
    out
}

#[cfg(test)]
pub(super) fn sq_dist4_x4_for_tests(a: [&[f64]; 4], b: [&[f64]; 4]) -> [f64; 4] {
    sq_dist4_x4(a, b)
}

/// The constants, for the test that they are the documented powers of two.
#[cfg(test)]
pub(super) fn tests_constants() -> (f64, f64, f64, f64, f64) {
    (TINY, T, SLACK, HI, LO)
}
