//! Exact "near centres" of every sample across iterations of a centre-moving algorithm, with
//! candidate lists and grouped triangle-inequality drift bounds (the bounds of Yinyang k-means,
//! Ding et al. 2015, applied to a radius query).
//!
//! A pass answers, for the rows `x_i` of X (N x D) and the current centres `c_k` (K x D),
//!
//! ```text
//! near_i = { k : ||x_i - c_k||^2 <= m_i + extra },   m_i = min_k ||x_i - c_k||^2,
//! ```
//!
//! exactly, with the distances summed feature by feature ([`crate::dist::sq_dist_slices`]).
//! `extra = 0` gives the nearest centre (k-means, ties included); `extra = 40 sigma` gives every
//! soft-assignment weight `exp(-(d - m) / sigma)` above `e^-40` (RPG's truncated softmax).
//!
//! The centres are split once into G groups of about [`GROUP_SIZE`] nearby centres (k-means on
//! the first pass's centres). Each row keeps a candidate list `S_i` (centres whose exact distance
//! it computes on every pass) and, for every group g, a lower bound `l_ig` on `||x_i - c_k||`
//! over the members of g outside `S_i`. When the centres move, `l_ig` drops by the group's
//! largest move `max_{k in g} ||c_k(t) - c_k(t-1)||` (triangle inequality). A group with
//! `l_ig^2 > min_{k computed} d_ik + extra` cannot hold a near centre; every other group is
//! *opened*: its members' exact distances are computed, the members within
//! `(1 + margin) sqrt(m_i + extra)` join `S_i` and `l_ig` becomes the smallest distance of the
//! rest. Candidates that drift beyond `(1 + 2 margin) sqrt(m_i + extra)` leave `S_i` and fold
//! back into their group's bound. The first pass computes every distance by one GEMM per row
//! block ([`structdr_linalg::sq_dists_between`]) and seeds the lists and bounds from it (less the
//! GEMM rounding bound).
//!
//! Cost per pass: O(N G) bound updates + O(|S_i| D) per row + O(GROUP_SIZE D) per opened group,
//! against O(N K D) for a dense pass; memory O(N G + sum_i |S_i| + K D). The answer is exact
//! whatever `margin` is: the margin only trades candidate work against opened groups.
//!
//! Deterministic: every row's answer depends only on X, the centre history and the row's own
//! state (rows run in parallel, each on its own state); GEMM blocks are formed in row order with
//! a size that depends on K only.

use crate::dist::sq_dist_slices;
use ndarray::{Array2, ArrayView2, CowArray, Ix2};
use rayon::prelude::*;
use structdr_linalg::sq_dists_between;

/// The rows' near centres of one pass in compressed-row form: row i's entries are
/// `idx[ptr[i]..ptr[i + 1]]` (centre indices, ascending) with `val` (exact squared distances).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NearRows {
    /// Row pointers, length N + 1.
    pub ptr: Vec<usize>,
    /// Centre indices.
    pub idx: Vec<u32>,
    /// `||x_i - c_k||^2`, summed feature by feature.
    pub val: Vec<f64>,
    /// `m_i`, the smallest squared distance of every row.
    pub min: Vec<f64>,
}

impl NearRows {
    /// Number of rows N.
    pub fn nrows(&self) -> usize {
        self.min.len()
    }
    /// Row i's `(indices, squared distances)`.
    pub fn row(&self, i: usize) -> (&[u32], &[f64]) {
        let (a, b) = (self.ptr[i], self.ptr[i + 1]);
        (&self.idx[a..b], &self.val[a..b])
    }
}

/// Work counters of [`NearCentres`] (for notes and benchmarks).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct NearStats {
    /// Passes run.
    pub passes: usize,
    /// Number of centre groups G.
    pub groups: usize,
    /// Groups opened over all passes after the first (each costs its members' distances).
    pub groups_opened: usize,
    /// Rows recomputed against all centres by GEMM after the first pass.
    pub refreshed: usize,
    /// Exact distances computed over all passes (O(D) each), the first pass's GEMM excluded.
    pub distances: usize,
}

/// Candidate lists and grouped drift bounds of every row; see the module doc.
#[derive(Debug, Clone)]
pub struct NearCentres {
    /// Relative candidate margin (see the module doc).
    pub margin: f64,
    cand: Vec<Vec<u32>>,
    /// N x G lower bounds, row-major.
    lower: Vec<f64>,
    group_of: Vec<u32>,
    members: Vec<Vec<u32>>,
    prev: Option<Array2<f64>>,
    stats: NearStats,
}

/// Default relative margin. Tuned on Fashion-MNIST (PCA 188-D, K = 1000, RPG sigma = 0.1, about
/// 3 centres inside the softmax radius): 0.15 / 0.3 / 0.6 with groups of 16 or 8 gave the least
/// work at 0.3 with groups of 8 (34 exact distances per row and pass, 1.1 groups opened).
pub const DEFAULT_MARGIN: f64 = 0.3;

/// A row whose bounds fail in more than 1 / REFRESH_FRACTION of the groups is recomputed
/// against all centres by GEMM instead (early iterations, when the centres still move a lot).
pub const REFRESH_FRACTION: usize = 4;

/// Target number of centres per group (Yinyang k-means uses K / 10 groups).
pub const GROUP_SIZE: usize = 8;

/// Rows per GEMM block of the first pass: about 16 MB of distances, a function of K only.
fn block_rows(k: usize) -> usize {
    (2_000_000 / k.max(1)).clamp(64, 8192)
}

fn row_slice<'a>(x: &'a ArrayView2<'_, f64>, i: usize) -> &'a [f64] {
    let d = x.ncols();
    &x.as_slice().expect("standard layout")[i * d..(i + 1) * d]
}

/// Groups of nearby centres: seeded k-means of the centres into `ceil(K / GROUP_SIZE)` clusters
/// (a single group when K is small; contiguous index blocks if k-means fails, e.g. on duplicate
/// centres). Any grouping keeps the answers exact; nearby centres make the bounds tight.
fn group_centres(c: ArrayView2<f64>) -> Vec<u32> {
    let k = c.nrows();
    let g = k.div_ceil(GROUP_SIZE);
    if g <= 1 {
        return vec![0; k];
    }
    match crate::clustering::kmeans(c, g, 0x6772_6f75_7073, 10) {
        Ok(r) => r.labels.iter().map(|&l| l as u32).collect(),
        Err(_) => (0..k).map(|j| (j / GROUP_SIZE) as u32).collect(),
    }
}

/// Per-row work of a pass after the first: update the row's list and bounds, return the near
/// entries (ascending index, exact squared distances), the minimum, groups opened and distances
/// computed.
#[allow(clippy::too_many_arguments)]
fn row_pass(
    xi: &[f64],
    cv: &ArrayView2<f64>,
    cand: &mut Vec<u32>,
    lower: &mut [f64],
    drift: &[f64],
    group_of: &[u32],
    members: &[Vec<u32>],
    extra: f64,
    margin: f64,
    scratch: &mut Scratch,
) -> Option<(f64, usize, usize)> {
    for (l, dg) in lower.iter_mut().zip(drift) {
        *l -= dg;
    }
    let Scratch { comp, failing, opened, near } = scratch;
    comp.clear();
    comp.extend(cand.iter().map(|&j| (j, sq_dist_slices(xi, row_slice(cv, j as usize)))));
    let mut work = comp.len();
    let mut m = comp.iter().map(|e| e.1).fold(f64::INFINITY, f64::min);
    failing.clear();
    failing.extend((0..lower.len()).filter(|&g| !(lower[g] > 0.0 && lower[g] * lower[g] > m + extra)));
    if failing.len() * REFRESH_FRACTION > lower.len() && lower.len() >= REFRESH_FRACTION {
        // Most groups would open: one GEMM row is cheaper (the caller refreshes the row).
        return None;
    }
    opened.clear();
    for &g in failing.iter() {
        let l = lower[g];
        if l > 0.0 && l * l > m + extra {
            continue; // m dropped since the first check
        }
        opened.push(g);
        for &j in &members[g] {
            if cand.binary_search(&j).is_err() {
                let v = sq_dist_slices(xi, row_slice(cv, j as usize));
                work += 1;
                m = m.min(v);
                comp.push((j, v));
            }
        }
    }
    // New candidate list and bounds of the opened groups; far candidates fold back.
    let r_in = (1.0 + margin) * (m + extra).sqrt();
    let r_out = (1.0 + 2.0 * margin) * (m + extra).sqrt();
    for &g in opened.iter() {
        lower[g] = f64::INFINITY;
    }
    let was_cand = cand.len();
    cand.clear();
    for (pos, &(j, v)) in comp.iter().enumerate() {
        let dist = v.sqrt();
        let g = group_of[j as usize] as usize;
        let keep = if pos < was_cand { dist <= r_out } else { dist <= r_in };
        if keep {
            cand.push(j);
        } else {
            // Rounding: sqrt is correctly rounded, so shave a few ulps for a valid lower bound.
            lower[g] = lower[g].min(dist * (1.0 - 1e-12));
        }
    }
    cand.sort_unstable();
    near.clear();
    near.extend(comp.iter().copied().filter(|e| e.1 <= m + extra));
    near.sort_unstable_by_key(|e| e.0);
    Some((m, opened.len(), work))
}

/// Per-worker buffers of [`row_pass`] (reused across rows; `near` holds the row's answer).
#[derive(Default)]
struct Scratch {
    comp: Vec<(u32, f64)>,
    failing: Vec<usize>,
    opened: Vec<usize>,
    near: Vec<(u32, f64)>,
}

/// Rows per task of a pass after the first: the answers of a chunk go into one buffer (a
/// per-row allocation cost more than the row's bookkeeping).
const PASS_CHUNK: usize = 256;

/// The answers of a chunk of rows: entries in row order, the count and minimum of every row, and
/// the rows (absolute indices) left to a refresh, whose count is 0 here.
#[derive(Default)]
struct ChunkAnswers {
    start: usize,
    idx: Vec<u32>,
    val: Vec<f64>,
    count: Vec<usize>,
    min: Vec<f64>,
    refresh: Vec<usize>,
    opened: usize,
    work: usize,
}

impl NearCentres {
    /// State for N rows with the given relative margin (`>= 0`).
    pub fn new(n: usize, margin: f64) -> NearCentres {
        NearCentres {
            margin: margin.max(0.0),
            cand: vec![Vec::new(); n],
            lower: Vec::new(),
            group_of: Vec::new(),
            members: Vec::new(),
            prev: None,
            stats: NearStats::default(),
        }
    }

    /// Work done so far.
    pub fn stats(&self) -> NearStats {
        self.stats
    }

    /// One pass: every row's centres within `m_i + extra` (squared distance) of its nearest, at
    /// the centres `c` (K x D). `extra >= 0`. A change of K starts afresh.
    pub fn pass(&mut self, x: ArrayView2<f64>, c: ArrayView2<f64>, extra: f64) -> NearRows {
        let (n, d) = x.dim();
        let k = c.nrows();
        assert_eq!(n, self.cand.len(), "NearCentres: row count changed");
        assert_eq!(d, c.ncols(), "NearCentres: feature counts differ");
        let extra = extra.max(0.0);
        let xs: CowArray<f64, Ix2> = x.as_standard_layout();
        let cs: CowArray<f64, Ix2> = c.as_standard_layout();
        let (xv, cv) = (xs.view(), cs.view());
        let first = !matches!(&self.prev, Some(p) if p.nrows() == k);
        let out = if first {
            self.group(&cv);
            let all: Vec<usize> = (0..n).collect();
            let fresh = self.refresh_rows(&xv, &cv, extra, &all);
            let mut ptr = Vec::with_capacity(n + 1);
            ptr.push(0usize);
            let (mut idx, mut val, mut min) = (Vec::new(), Vec::new(), Vec::with_capacity(n));
            for (near, m) in fresh {
                for (j, v) in near {
                    idx.push(j);
                    val.push(v);
                }
                min.push(m);
                ptr.push(idx.len());
            }
            NearRows { ptr, idx, val, min }
        } else {
            let prev = self.prev.as_ref().expect("not first");
            let g = self.members.len();
            let mut drift = vec![0.0f64; g];
            for j in 0..k {
                let moved = sq_dist_slices(prev.row(j).as_slice().expect("owned"), row_slice(&cv, j)).sqrt() * (1.0 + 1e-12);
                let gj = self.group_of[j] as usize;
                drift[gj] = drift[gj].max(moved);
            }
            let (group_of, members, margin) = (&self.group_of, &self.members, self.margin);
            let chunks: Vec<ChunkAnswers> = self
                .cand
                .par_chunks_mut(PASS_CHUNK)
                .zip(self.lower.par_chunks_mut(g * PASS_CHUNK))
                .enumerate()
                .map_init(Scratch::default, |scratch, (ci, (cands, lowers))| {
                    let mut out = ChunkAnswers { start: ci * PASS_CHUNK, ..ChunkAnswers::default() };
                    for (t, (cand, lower)) in cands.iter_mut().zip(lowers.chunks_mut(g)).enumerate() {
                        let i = ci * PASS_CHUNK + t;
                        match row_pass(row_slice(&xv, i), &cv, cand, lower, &drift, group_of, members, extra, margin, scratch) {
                            Some((m, opened, work)) => {
                                out.idx.extend(scratch.near.iter().map(|e| e.0));
                                out.val.extend(scratch.near.iter().map(|e| e.1));
                                out.count.push(scratch.near.len());
                                out.min.push(m);
                                out.opened += opened;
                                out.work += work;
                            }
                            None => {
                                out.refresh.push(i);
                                out.count.push(0);
                                out.min.push(f64::NAN);
                            }
                        }
                    }
                    out
                })
                .collect();
            let todo: Vec<usize> = chunks.iter().flat_map(|c| c.refresh.iter().copied()).collect();
            let mut fresh = self.refresh_rows(&xv, &cv, extra, &todo).into_iter();
            self.stats.refreshed += todo.len();
            // rows in order: a chunk's own answers, the refreshed rows' in their places
            let mut ptr = Vec::with_capacity(n + 1);
            ptr.push(0usize);
            let total: usize = chunks.iter().map(|c| c.idx.len()).sum();
            let (mut idx, mut val, mut min) = (Vec::with_capacity(total), Vec::with_capacity(total), Vec::with_capacity(n));
            for c in chunks {
                self.stats.groups_opened += c.opened;
                self.stats.distances += c.work;
                let mut from = 0;
                let mut refresh = c.refresh.iter().peekable();
                for (t, (&cnt, &m)) in c.count.iter().zip(&c.min).enumerate() {
                    if refresh.next_if_eq(&&(c.start + t)).is_some() {
                        let (near, m) = fresh.next().expect("one per refreshed row");
                        for (j, v) in near {
                            idx.push(j);
                            val.push(v);
                        }
                        min.push(m);
                    } else {
                        idx.extend_from_slice(&c.idx[from..from + cnt]);
                        val.extend_from_slice(&c.val[from..from + cnt]);
                        from += cnt;
                        min.push(m);
                    }
                    ptr.push(idx.len());
                }
            }
            NearRows { ptr, idx, val, min }
        };
        self.prev = Some(cs.to_owned());
        self.stats.passes += 1;
        out
    }

    /// Groups of the centres and empty lists and bounds (first pass or a change of K).
    fn group(&mut self, cv: &ArrayView2<f64>) {
        let n = self.cand.len();
        self.group_of = group_centres(*cv);
        let g = self.group_of.iter().map(|&v| v as usize + 1).max().unwrap_or(1);
        self.members = vec![Vec::new(); g];
        for (j, &gj) in self.group_of.iter().enumerate() {
            self.members[gj as usize].push(j as u32);
        }
        self.lower = vec![f64::INFINITY; n * g];
        self.stats.groups = g;
    }

    /// The given rows (ascending) against all centres by GEMM blocks; their candidate lists and
    /// bounds are rebuilt from the full distance rows. Returns their answers in the same order.
    fn refresh_rows(&mut self, xv: &ArrayView2<f64>, cv: &ArrayView2<f64>, extra: f64, todo: &[usize]) -> Vec<(Vec<(u32, f64)>, f64)> {
        let d = xv.ncols();
        let k = cv.nrows();
        let g = self.members.len();
        let c_norm_max = cv.rows().into_iter().map(|r| r.dot(&r)).fold(0.0, f64::max);
        let margin = self.margin;
        let (group_of, members) = (&self.group_of, &self.members);
        let mut results = Vec::with_capacity(todo.len());
        for chunk in todo.chunks(block_rows(k)) {
            let xb = xv.select(ndarray::Axis(0), chunk);
            let dm = sq_dists_between(xb.view(), *cv);
            let block: Vec<(Vec<u32>, Vec<f64>, Vec<(u32, f64)>, f64)> = dm
                .axis_iter(ndarray::Axis(0))
                .into_par_iter()
                .zip(chunk.par_iter())
                .map(|(row, &i)| {
                    let xi = row_slice(xv, i);
                    let xn = xi.iter().map(|v| v * v).sum::<f64>();
                    // Bound on |GEMM distance - exact distance| (d u (|x|^2 + |c|^2) with room).
                    let eps = 1e-12 * (xn + c_norm_max) * (1.0 + d as f64 / 64.0);
                    let m_gemm = row.iter().copied().fold(f64::INFINITY, f64::min);
                    let radius = (1.0 + margin) * (m_gemm.max(0.0) + extra).sqrt();
                    let cut = radius * radius + eps;
                    let mut list = Vec::new();
                    let mut lower = vec![f64::INFINITY; g];
                    for (j, &v) in row.iter().enumerate() {
                        if v <= cut {
                            list.push(j as u32);
                        } else {
                            let gj = group_of[j] as usize;
                            lower[gj] = lower[gj].min((v - eps).max(0.0).sqrt());
                        }
                    }
                    let mut comp: Vec<(u32, f64)> = list.iter().map(|&j| (j, sq_dist_slices(xi, row_slice(cv, j as usize)))).collect();
                    let mut m = comp.iter().map(|e| e.1).fold(f64::INFINITY, f64::min);
                    // Rounding can defeat a zero margin: open any group whose bound fails.
                    for gg in 0..g {
                        let l = lower[gg];
                        if !(l > 0.0 && l * l > m + extra) {
                            for &j in &members[gg] {
                                if list.binary_search(&j).is_err() {
                                    let v = sq_dist_slices(xi, row_slice(cv, j as usize));
                                    m = m.min(v);
                                    comp.push((j, v));
                                }
                            }
                            lower[gg] = f64::INFINITY;
                        }
                    }
                    if comp.len() > list.len() {
                        list = comp.iter().map(|e| e.0).collect();
                        list.sort_unstable();
                    }
                    let mut near: Vec<(u32, f64)> = comp.into_iter().filter(|e| e.1 <= m + extra).collect();
                    near.sort_unstable_by_key(|e| e.0);
                    (list, lower, near, m)
                })
                .collect();
            for (&i, (list, lower, near, m)) in chunk.iter().zip(block) {
                self.cand[i] = list;
                self.lower[i * g..(i + 1) * g].copy_from_slice(&lower);
                results.push((near, m));
            }
        }
        results
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn brute(x: &Array2<f64>, c: &Array2<f64>, extra: f64) -> Vec<Vec<u32>> {
        x.rows()
            .into_iter()
            .map(|r| {
                let dist: Vec<f64> = c.rows().into_iter().map(|cr| sq_dist_slices(r.as_slice().unwrap(), cr.as_slice().unwrap())).collect();
                let m = dist.iter().copied().fold(f64::INFINITY, f64::min);
                (0..c.nrows() as u32).filter(|&j| dist[j as usize] <= m + extra).collect()
            })
            .collect()
    }

    /// Over passes with centres that drift slowly, jump, or stand still, every answer equals the
    /// brute-force radius query (same index sets, same exact distances), for k-means-style
    /// (extra = 0) and softmax-style radii, with margins from 0 to large.
    #[test]
    fn passes_equal_brute_force_under_drift_and_jumps() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let (n, d) = (400, 7);
        let x = Array2::from_shape_fn((n, d), |_| rng.gen_range(-1.0..1.0));
        for (&extra, &k) in [0.0, 0.05, 0.5].iter().zip(&[40, 100, 7]) {
            for &margin in &[0.0, 0.1, 0.5, 3.0] {
                let mut c = Array2::from_shape_fn((k, d), |_| rng.gen_range(-1.0..1.0));
                let mut near = NearCentres::new(n, margin);
                for pass in 0..12 {
                    let got = near.pass(x.view(), c.view(), extra);
                    let want = brute(&x, &c, extra);
                    for i in 0..n {
                        let (idx, val) = got.row(i);
                        assert_eq!(idx, &want[i][..], "extra {extra} margin {margin} pass {pass} row {i}");
                        for (&j, &v) in idx.iter().zip(val) {
                            assert_eq!(v, sq_dist_slices(x.row(i).as_slice().unwrap(), c.row(j as usize).as_slice().unwrap()));
                        }
                    }
                    // Move the centres: small drift, one big jump every 4th pass, still every 5th.
                    if pass % 5 != 4 {
                        let step = if pass % 4 == 3 { 0.8 } else { 0.01 };
                        c.mapv_inplace(|v| v + rng.gen_range(-step..step));
                    }
                }
                let st = near.stats();
                assert_eq!(st.passes, 12);
                assert_eq!(st.groups, k.div_ceil(GROUP_SIZE));
            }
        }
    }

    /// With many centres that barely move, the bounds leave almost every group closed: far fewer
    /// distances than the dense N K per pass, and the answers still equal brute force.
    #[test]
    fn slow_drift_computes_few_distances() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        let (n, d, k) = (2000, 3, 200);
        let x = Array2::from_shape_fn((n, d), |_| rng.gen_range(0.0..10.0));
        let mut c = Array2::from_shape_fn((k, d), |(j, f)| x[[j * 7, f]]);
        let mut near = NearCentres::new(n, DEFAULT_MARGIN);
        for _ in 0..6 {
            let got = near.pass(x.view(), c.view(), 0.3);
            let want = brute(&x, &c, 0.3);
            assert!((0..n).all(|i| got.row(i).0 == &want[i][..]));
            c.mapv_inplace(|v| v + rng.gen_range(-0.005..0.005));
        }
        let st = near.stats();
        let per_row = st.distances as f64 / (5 * n) as f64;
        assert!(per_row < k as f64 / 5.0, "{per_row} distances per row and pass: {st:?}");
    }

    /// Ties: duplicate centres are all reported (k-means then takes the lowest index).
    #[test]
    fn exact_ties_are_all_reported() {
        let x = ndarray::array![[0.0, 0.0], [1.0, 1.0]];
        let c = ndarray::array![[0.5, 0.5], [0.5, 0.5], [3.0, 3.0]];
        let mut near = NearCentres::new(2, DEFAULT_MARGIN);
        let r = near.pass(x.view(), c.view(), 0.0);
        assert_eq!(r.row(0).0, &[0, 1]);
        assert_eq!(r.row(1).0, &[0, 1]);
        assert_eq!(r.min, vec![0.5, 0.5]);
    }
}
