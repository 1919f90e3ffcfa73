//! DDRTree's soft assignments of latent points to centres (eq. 32): row-stochastic, sparse rows
//! (entries below a threshold dropped) or dense when most entries survive.

use super::*;
use structdr_numerics::graphs::RootedTree;
use structdr_numerics::neighbours::kdtree::{sq_dist_in_order, KdTree};

/// Row-stochastic soft assignments, CSR or dense.
#[derive(Debug, Clone)]
pub(super) enum Assign {
    Sparse { n: usize, k: usize, indptr: Vec<usize>, idx: Vec<u32>, val: Vec<f64> },
    Dense(Array2<f64>),
}

pub(super) const ROW_BLOCK: usize = 256;

/// Smallest K for which the soft assignment searches centres with a k-d tree.
pub(super) const KD_MIN_CENTRES: usize = 2048;
/// Largest latent dimension for the k-d tree (its pruning weakens as d grows).
pub(super) const KD_MAX_DIM: usize = 8;

/// Whether [`Assign::compute`] (and the tree step) use a k-d tree: K >= [`KD_MIN_CENTRES`] and
/// d <= [`KD_MAX_DIM`]. The answer never changes a result, only the cost (O(N K d) against about
/// O(N (log K + entries per row) d)).
pub(super) fn use_kd_tree(k: usize, dim: usize) -> bool {
    k >= KD_MIN_CENTRES && dim <= KD_MAX_DIM && dim > 0
}

impl Assign {
    /// Eq. (32) with the row minimum subtracted; entries with `exp(-t) < threshold` dropped.
    ///
    /// Every kept entry satisfies `d_ik <= m_i + sigma t_max` (`m_i = min_l d_il`,
    /// `t_max = -ln threshold`, or 746 when nothing is dropped, where `exp(-t)` underflows), so
    /// with many centres in a few dimensions ([`use_kd_tree`]) each row looks only at the centres
    /// a [`KdTree`] returns within that radius (slightly enlarged) and applies the same test to
    /// them, in ascending centre order: the result equals the full scan's bit for bit.
    pub(super) fn compute(z: ArrayView2<f64>, c: ArrayView2<f64>, sigma: f64, threshold: f64) -> Assign {
        Assign::compute_with(z, c, sigma, threshold, use_kd_tree(c.nrows(), c.ncols()))
    }

    /// [`Assign::compute`] with the k-d tree search on or off.
    pub(super) fn compute_with(z: ArrayView2<f64>, c: ArrayView2<f64>, sigma: f64, threshold: f64, kd_search: bool) -> Assign {
        let (n, k) = (z.nrows(), c.nrows());
        let t_max = if threshold > 0.0 { -threshold.ln() } else { 746.0 };
        let dim = z.ncols();
        let (zb, cb) = (z.as_standard_layout(), c.as_standard_layout());
        let (zs, cs) = (zb.as_slice().expect("standard"), cb.as_slice().expect("standard"));
        let kd = (kd_search && k > 0).then(|| KdTree::new(c));
        let nblocks = n.div_ceil(ROW_BLOCK);
        let blocks: Vec<(Vec<usize>, Vec<u32>, Vec<f64>)> = (0..nblocks)
            .into_par_iter()
            .map(|b| {
                let (lo, hi) = (b * ROW_BLOCK, ((b + 1) * ROW_BLOCK).min(n));
                let mut counts = Vec::with_capacity(hi - lo);
                let mut idx = Vec::new();
                let mut val = Vec::new();
                let mut d = Vec::with_capacity(k);
                let mut cand: Vec<u32> = Vec::new();
                for i in lo..hi {
                    let zi = &zs[i * dim..(i + 1) * dim];
                    let centre = |kk: usize| &cs[kk * dim..(kk + 1) * dim];
                    cand.clear();
                    d.clear();
                    let dmin = match &kd {
                        Some(tree) => {
                            let (_, dmin) = tree.nearest(zi).expect("K >= 1");
                            let r2 = (dmin + sigma * t_max) * (1.0 + 1e-9);
                            tree.within(zi, r2, &mut cand);
                            cand.sort_unstable();
                            d.extend(cand.iter().map(|&kk| sq_dist_in_order(zi, centre(kk as usize))));
                            dmin
                        }
                        None => {
                            cand.extend(0..k as u32);
                            d.extend((0..k).map(|kk| sq_dist_in_order(zi, centre(kk))));
                            d.iter().fold(f64::INFINITY, |m, &v| m.min(v))
                        }
                    };
                    let start = val.len();
                    let mut sum = 0.0;
                    for (&kk, &dk) in cand.iter().zip(&d) {
                        let t = (dk - dmin) / sigma;
                        if t <= t_max {
                            let e = (-t).exp();
                            if e > 0.0 {
                                idx.push(kk);
                                val.push(e);
                                sum += e;
                            }
                        }
                    }
                    for v in &mut val[start..] {
                        *v /= sum;
                    }
                    counts.push(val.len() - start);
                }
                (counts, idx, val)
            })
            .collect();
        let nnz: usize = blocks.iter().map(|b| b.2.len()).sum();
        if nnz as f64 > 0.1 * n as f64 * k as f64 {
            let mut dense = Array2::zeros((n, k));
            let mut i = 0;
            for (counts, idx, val) in blocks {
                let mut p = 0;
                for cnt in counts {
                    for q in p..p + cnt {
                        dense[[i, idx[q] as usize]] = val[q];
                    }
                    p += cnt;
                    i += 1;
                }
            }
            return Assign::Dense(dense);
        }
        let mut indptr = Vec::with_capacity(n + 1);
        indptr.push(0);
        let mut idx = Vec::with_capacity(nnz);
        let mut val = Vec::with_capacity(nnz);
        for (counts, bi, bv) in blocks {
            for cnt in counts {
                let last = *indptr.last().unwrap();
                indptr.push(last + cnt);
            }
            idx.extend(bi);
            val.extend(bv);
        }
        Assign::Sparse { n, k, indptr, idx, val }
    }

    pub(super) fn n(&self) -> usize {
        match self {
            Assign::Sparse { n, .. } => *n,
            Assign::Dense(d) => d.nrows(),
        }
    }
    pub(super) fn k(&self) -> usize {
        match self {
            Assign::Sparse { k, .. } => *k,
            Assign::Dense(d) => d.ncols(),
        }
    }
    pub(super) fn nnz(&self) -> usize {
        match self {
            Assign::Sparse { val, .. } => val.len(),
            Assign::Dense(d) => d.iter().filter(|v| **v != 0.0).count(),
        }
    }

    /// Calls `f(i, k, r_ik)` for every stored entry, rows in order.
    pub(super) fn for_each(&self, mut f: impl FnMut(usize, usize, f64)) {
        match self {
            Assign::Sparse { n, indptr, idx, val, .. } => {
                for i in 0..*n {
                    for p in indptr[i]..indptr[i + 1] {
                        f(i, idx[p] as usize, val[p]);
                    }
                }
            }
            Assign::Dense(d) => {
                for ((i, k), &v) in d.indexed_iter() {
                    if v != 0.0 {
                        f(i, k, v);
                    }
                }
            }
        }
    }

    /// `Gamma = 1^T R` (column sums).
    pub(super) fn col_sums(&self) -> Vec<f64> {
        let mut g = vec![0.0; self.k()];
        match self {
            Assign::Dense(d) => {
                for (k, col) in d.columns().into_iter().enumerate() {
                    g[k] = col.sum();
                }
            }
            _ => self.for_each(|_, k, v| g[k] += v),
        }
        g
    }

    /// `R^T X` (K x cols). Sparse: row k is `sum_i r_ik x_i` over the samples in increasing
    /// order, by columns of R (`cols`, from [`Columns::new`], in its locality order, in parallel).
    pub(super) fn rt_mul(&self, x: ArrayView2<f64>, cols: Option<&Columns>) -> Array2<f64> {
        let val = match self {
            Assign::Dense(d) => return d.t().dot(&x),
            Assign::Sparse { val, .. } => val,
        };
        let cols = cols.expect("a sparse R comes with its columns");
        let w = x.ncols();
        let xs = x.as_standard_layout();
        let xs = xs.as_slice().expect("standard layout");
        let chunks: Vec<Vec<f64>> = cols
            .order
            .par_chunks(COLUMN_CHUNK)
            .map(|chunk| {
                let mut out = vec![0.0; chunk.len() * w];
                for (t, &kk) in chunk.iter().enumerate() {
                    let acc = &mut out[t * w..(t + 1) * w];
                    for q in cols.ptr[kk]..cols.ptr[kk + 1] {
                        let (i, v) = (cols.row[q] as usize, val[cols.pos[q]]);
                        for (a, &xv) in acc.iter_mut().zip(&xs[i * w..(i + 1) * w]) {
                            *a += v * xv;
                        }
                    }
                }
                out
            })
            .collect();
        let mut out = Array2::zeros((self.k(), w));
        for (chunk, vals) in cols.order.chunks(COLUMN_CHUNK).zip(&chunks) {
            for (t, &kk) in chunk.iter().enumerate() {
                out.row_mut(kk).assign(&ndarray::aview1(&vals[t * w..(t + 1) * w]));
            }
        }
        out
    }

    /// The same assignments stored in compressed rows (a dense R compressed; a copy otherwise).
    pub(super) fn to_sparse(&self) -> Assign {
        match self {
            Assign::Sparse { .. } => self.clone(),
            Assign::Dense(d) => {
                let (n, k) = d.dim();
                let (mut indptr, mut idx, mut val) = (vec![0usize], Vec::new(), Vec::new());
                for row in d.rows() {
                    for (kk, &v) in row.iter().enumerate() {
                        if v != 0.0 {
                            idx.push(kk as u32);
                            val.push(v);
                        }
                    }
                    indptr.push(idx.len());
                }
                Assign::Sparse { n, k, indptr, idx, val }
            }
        }
    }

    /// `R X` (N x cols) for X with K rows.
    pub(super) fn mul(&self, x: ArrayView2<f64>) -> Array2<f64> {
        match self {
            Assign::Dense(d) => d.dot(&x),
            Assign::Sparse { n, indptr, idx, val, .. } => {
                let mut out = Array2::zeros((*n, x.ncols()));
                out.axis_iter_mut(Axis(0)).into_par_iter().enumerate().for_each(|(i, mut row)| {
                    for p in indptr[i]..indptr[i + 1] {
                        row.scaled_add(val[p], &x.row(idx[p] as usize));
                    }
                });
                out
            }
        }
    }

    /// `m -= R^T R`, scattering sparse rows when cheaper than a GEMM.
    pub(super) fn sub_rtr(&self, m: &mut Array2<f64>) {
        match self {
            Assign::Dense(d) => {
                let rtr = d.t().dot(d);
                *m -= &rtr;
            }
            Assign::Sparse { n, k, indptr, idx, val } => {
                let cost: f64 = (0..*n).map(|i| ((indptr[i + 1] - indptr[i]) as f64).powi(2)).sum();
                if cost * 50.0 > 2.0 * (*n as f64) * (*k as f64).powi(2) {
                    let rtr = {
                        let d = self.to_dense();
                        d.t().dot(&d)
                    };
                    *m -= &rtr;
                    return;
                }
                for i in 0..*n {
                    let (a, b) = (indptr[i], indptr[i + 1]);
                    for p in a..b {
                        let (kp, vp) = (idx[p] as usize, val[p]);
                        for q in a..b {
                            m[[kp, idx[q] as usize]] -= vp * val[q];
                        }
                    }
                }
            }
        }
    }

    pub(super) fn to_dense(&self) -> Array2<f64> {
        match self {
            Assign::Dense(d) => d.clone(),
            _ => {
                let mut d = Array2::zeros((self.n(), self.k()));
                self.for_each(|i, k, v| d[[i, k]] = v);
                d
            }
        }
    }

    /// `(sum r_ik ||z_i - c_k||^2, sum r_ik ln r_ik)` over the stored entries.
    pub(super) fn terms(&self, z: ArrayView2<f64>, c: ArrayView2<f64>) -> (f64, f64) {
        let (mut rd, mut rlr) = (0.0, 0.0);
        self.for_each(|i, k, v| {
            rd += v * sq(z.row(i), c.row(k));
            rlr += v * v.ln();
        });
        (rd, rlr)
    }

    /// Argmax per row (ties: lowest index).
    pub(super) fn labels(&self) -> Vec<usize> {
        let n = self.n();
        let mut best = vec![(f64::NEG_INFINITY, usize::MAX); n];
        self.for_each(|i, k, v| {
            if v > best[i].0 {
                best[i] = (v, k);
            }
        });
        best.into_iter().map(|b| b.1).collect()
    }
}

/// Centres per parallel task of the column-wise products ([`Assign::rt_mul`], the assembly of
/// `R^T R`).
pub(super) const COLUMN_CHUNK: usize = 64;

/// The stored entries of a sparse R grouped by centre (compressed columns): centre k's samples
/// `row[ptr[k]..ptr[k + 1]]` in increasing order and the positions `pos[..]` of those entries
/// in R's row-compressed arrays; and `order`, a visiting order of the centres with locality.
///
/// `order` is a depth-first preorder of the spanning tree ([`RootedTree::preorder`]): centres
/// visited one after another are near each other and share most of their
/// samples, so the rows of R that a run of columns touches stay in cache. Visiting the centres
/// in index order (indices carry no spatial order) fetched each row of R from memory once per
/// entry; at N = K = 100,000 with 146 entries per row that made the assembly of `R^T R` cost
/// more than the factorisation.
pub(super) struct Columns {
    pub ptr: Vec<usize>,
    pub row: Vec<u32>,
    pub pos: Vec<usize>,
    pub order: Vec<usize>,
}

impl Columns {
    /// The columns of a sparse `assign` and the order of the spanning tree `tree` of its K
    /// centres. `None` for a dense R.
    pub(super) fn new(assign: &Assign, tree: &RootedTree) -> Option<Columns> {
        let Assign::Sparse { n, k, indptr, idx, .. } = assign else { return None };
        let (n, k) = (*n, *k);
        let mut ptr = vec![0usize; k + 1];
        for &c in idx {
            ptr[c as usize + 1] += 1;
        }
        for kk in 0..k {
            ptr[kk + 1] += ptr[kk];
        }
        let mut fill = ptr[..k].to_vec();
        let mut row = vec![0u32; idx.len()];
        let mut pos = vec![0usize; idx.len()];
        for i in 0..n {
            for p in indptr[i]..indptr[i + 1] {
                let c = idx[p] as usize;
                row[fill[c]] = i as u32;
                pos[fill[c]] = p;
                fill[c] += 1;
            }
        }
        Some(Columns { ptr, row, pos, order: tree.preorder() })
    }
}

#[inline]
pub(super) fn sq(a: ArrayView1<f64>, b: ArrayView1<f64>) -> f64 {
    a.iter().zip(b.iter()).map(|(u, v)| (u - v) * (u - v)).sum()
}
