//! The numeric factor: `log det`, solves and selected inversion (Takahashi recurrences by
//! supernodes).

use super::blas3 as blas;
use super::symbolic::*;
use super::SymbolicCholesky;

/// Columns of the identity solved together by [`SparseCholesky::dense_inverse_into`]: wide
/// enough that the per-supernode BLAS calls are few and BLAS-3 sized, narrow enough that a
/// block's buffer (`n x 128` doubles, 5 MB at n = 5000) stays small.
pub const INVERSE_BLOCK: usize = 128;

/// A numeric sparse Cholesky factor `P A P^T = L L^T`.
#[derive(Debug, Clone)]
pub struct SparseCholesky<'a> {
    pub(super) sym: &'a SymbolicCholesky,
    /// The supernodal blocks of `L` (lower triangle of each diagonal block, rows below).
    pub(super) vals: Vec<f64>,
}

/// Entries of `A^-1` on the pattern of `L` (diagonal and strictly lower part).
#[derive(Debug, Clone)]
pub struct SelectedInverse<'a> {
    pub(super) sym: &'a SymbolicCholesky,
    /// `A^-1` in the supernodal layout of `L`.
    pub(super) vals: Vec<f64>,
}

impl<'a> SparseCholesky<'a> {
    /// `log det A = 2 sum_j log L_jj`.
    pub fn log_det(&self) -> f64 {
        2.0 * self.sym.diag_pos.iter().map(|&p| self.vals[p].ln()).sum::<f64>()
    }

    /// Copies `b` (n x m, original row order) into a permuted row-major buffer.
    fn permuted(&self, b: ndarray::ArrayView2<f64>) -> Vec<f64> {
        let m = b.ncols();
        let mut buf = vec![0.0f64; self.sym.n * m];
        for (k, &i) in self.sym.perm.iter().enumerate() {
            for (t, v) in b.row(i).iter().enumerate() {
                buf[k * m + t] = *v;
            }
        }
        buf
    }

    /// `L^-1 B` in place on a permuted row-major buffer with `m` columns (that is, on the
    /// column-major `m x n` matrix `B^T`: `B_K^T <- B_K^T L_11^-T`, `B_R^T -= B_K^T L_21^T`).
    fn forward(&self, buf: &mut [f64], m: usize) {
        let s = self.sym;
        let mut tmp = Vec::new();
        for sn in 0..s.n_supernodes() {
            let (k, mm, off) = s.block(sn);
            let r = mm - k;
            let f = s.super_ptr[sn];
            let l = self.vals[off..off + mm * k].as_ptr();
            tmp.clear();
            tmp.resize(m * r, 0.0);
            // SAFETY: buf holds n x m row-major = column-major m x n; columns f..f+k are the rows
            // of supernode sn; `l` is mm x k with leading dimension mm; tmp is m x r.
            unsafe {
                let x = buf.as_mut_ptr().add(f * m);
                blas::trsm_rl(b'T', m, k, l, mm, x, m);
                blas::gemm(b'N', b'T', m, r, k, 1.0, x, m, l.add(k), mm, 0.0, tmp.as_mut_ptr(), m);
            }
            for (a, &row) in s.rows[s.row_ptr[sn] + k..s.row_ptr[sn + 1]].iter().enumerate() {
                for (y, t) in buf[row * m..(row + 1) * m].iter_mut().zip(&tmp[a * m..(a + 1) * m]) {
                    *y -= t;
                }
            }
        }
    }

    /// `L^-T B` in place on a permuted row-major buffer with `m` columns
    /// (`B_K^T <- (B_K^T - B_R^T L_21) L_11^-1`).
    fn backward(&self, buf: &mut [f64], m: usize) {
        let s = self.sym;
        let mut tmp = Vec::new();
        for sn in (0..s.n_supernodes()).rev() {
            let (k, mm, off) = s.block(sn);
            let r = mm - k;
            let f = s.super_ptr[sn];
            let l = self.vals[off..off + mm * k].as_ptr();
            tmp.clear();
            for &row in &s.rows[s.row_ptr[sn] + k..s.row_ptr[sn + 1]] {
                tmp.extend_from_slice(&buf[row * m..(row + 1) * m]);
            }
            // SAFETY: as in `forward`.
            unsafe {
                let x = buf.as_mut_ptr().add(f * m);
                if r > 0 {
                    blas::gemm(b'N', b'N', m, k, r, -1.0, tmp.as_ptr(), m, l.add(k), mm, 1.0, x, m);
                }
                blas::trsm_rl(b'N', m, k, l, mm, x, m);
            }
        }
    }

    /// Solves `A X = B` (`B` is n x m, original order).
    pub fn solve(&self, b: ndarray::ArrayView2<f64>) -> ndarray::Array2<f64> {
        let m = b.ncols();
        let mut buf = self.permuted(b);
        if m > 0 {
            self.forward(&mut buf, m);
            self.backward(&mut buf, m);
        }
        let mut out = ndarray::Array2::zeros((self.sym.n, m));
        for (k, &i) in self.sym.perm.iter().enumerate() {
            for t in 0..m {
                out[[i, t]] = buf[k * m + t];
            }
        }
        out
    }

    /// Columns `c0..c1` of `A^-1` (n x (c1 - c0), original row order): the solves `A X = E` for
    /// those columns of the identity, about `4 nnz(L)` flops per column (BLAS-3 per supernode).
    pub fn inverse_columns(&self, c0: usize, c1: usize) -> ndarray::Array2<f64> {
        let n = self.sym.n;
        assert!(c0 <= c1 && c1 <= n, "inverse_columns: columns {c0}..{c1} of an order-{n} matrix");
        let m = c1 - c0;
        // the identity's columns in the permuted row-major layout of `forward`
        let mut buf = vec![0.0f64; n * m];
        for t in 0..m {
            buf[self.sym.iperm[c0 + t] * m + t] = 1.0;
        }
        if m > 0 {
            self.forward(&mut buf, m);
            self.backward(&mut buf, m);
        }
        ndarray::Array2::from_shape_fn((n, m), |(i, t)| buf[self.sym.iperm[i] * m + t])
    }

    /// The dense inverse `A^-1` into `out` (n x n, row-major, both triangles): [`Self::inverse_columns`]
    /// for [`INVERSE_BLOCK`] columns at a time, blocks in parallel (rayon); column `c` of `A^-1`
    /// is written as row `c` (`A^-1` is symmetric).
    ///
    /// Cost: `4 n nnz(L)` flops in all, against `n^3` for a dense `dpotrf` + `dpotri`: the cheaper
    /// way to every entry of `A^-1` when `L` is sparse. Each block is solved on its own and
    /// written to its own rows, so the result does not depend on the thread count.
    pub fn dense_inverse_into(&self, out: &mut [f64]) {
        use rayon::prelude::*;
        let n = self.sym.n;
        assert_eq!(out.len(), n * n, "dense_inverse_into: out must hold n x n values");
        if n == 0 {
            return;
        }
        out.par_chunks_mut(INVERSE_BLOCK * n).enumerate().for_each(|(blk, rows)| {
            let c0 = blk * INVERSE_BLOCK;
            let x = self.inverse_columns(c0, c0 + rows.len() / n);
            for (t, row) in rows.chunks_exact_mut(n).enumerate() {
                for (r, &v) in row.iter_mut().zip(x.column(t)) {
                    *r = v;
                }
            }
        });
    }

    /// The half solve `L^-1 P B` (n x m, rows in the **permuted** order), so that
    /// `B^T A^-1 B = (L^-1 P B)^T (L^-1 P B)`.
    pub fn half_solve(&self, b: ndarray::ArrayView2<f64>) -> ndarray::Array2<f64> {
        let m = b.ncols();
        let mut buf = self.permuted(b);
        if m > 0 {
            self.forward(&mut buf, m);
        }
        ndarray::Array2::from_shape_vec((self.sym.n, m), buf).expect("n*m")
    }

    /// Selected inversion: `A^-1` on the diagonal and on the pattern of `L` (module doc).
    ///
    /// Supernodes in reverse order; for supernode `s` with rows below `R`: gather `Z_RR` from the
    /// parent's dense "frontal inverse" through the relative indices, then per column panel of
    /// `s` (last to first, at most `SELINV_PANEL` columns) `U = L_21 L_11^-1` (`dtrsm`),
    /// `Z_21 = -Z_22 U` (`dsymm`), `Z_11 = (L_11 L_11^T)^-1 - U^T Z_21` (a small in-place
    /// triangular inverse, `dgemm`), where "2" is everything after the panel; the frontal inverse
    /// of `s` (rows `K u R`) is kept until its children are done.
    pub fn selected_inverse(&self) -> SelectedInverse<'a> {
        let s = self.sym;
        let ns = s.n_supernodes();
        let mut zv = vec![0.0f64; self.vals.len()];
        let mut fronts: Vec<Vec<f64>> = vec![Vec::new(); ns];
        let mut pool = Pool::default();
        let mut pending: Vec<usize> = (0..ns).map(|p| s.child_ptr[p + 1] - s.child_ptr[p]).collect();
        let mut u = Vec::new();
        let mut xinv = Vec::new();
        for sn in (0..ns).rev() {
            let (k, m, off) = s.block(sn);
            let r = m - k;
            let l = &self.vals[off..off + m * k];
            // the frontal inverse F (m x m, lower): [Z_11; Z_R1 | Z_RR]. Every entry read below is
            // written first (the strict upper triangle is never read), so no zeroing.
            let mut fr = pool.take(m * m);
            if r > 0 {
                let p = s.sparent[sn];
                let zp = &fronts[p];
                let mp = s.row_ptr[p + 1] - s.row_ptr[p];
                let rel = &s.rel[s.row_ptr[sn] + k..s.row_ptr[sn + 1]];
                for (b, &cb) in rel.iter().enumerate() {
                    let src = &zp[cb * mp..(cb + 1) * mp];
                    let dst = &mut fr[(k + b) * m + k..(k + b + 1) * m];
                    for (a, &ra) in rel.iter().enumerate().skip(b) {
                        dst[a] = src[ra];
                    }
                }
                pending[p] -= 1;
                if pending[p] == 0 {
                    pool.give(std::mem::take(&mut fronts[p]));
                }
            }
            // panels of at most SELINV_PANEL columns, last to first (the dense Takahashi recurrence
            // by blocks): the rows after a panel are its "rows below", and their block of Z is
            // already in F. One panel per supernode of up to SELINV_PANEL columns; the large
            // ones (the dense tail) run in dgemm-rich dsymm calls instead of one large dpotri.
            let fp = fr.as_mut_ptr();
            let mut e = k;
            while e > 0 {
                let b = e - e.min(SELINV_PANEL);
                let (w, rr) = (e - b, m - e);
                for c in b..e {
                    fr[c * m + c..c * m + e].copy_from_slice(&l[c * m + c..c * m + e]);
                }
                u.clear();
                u.resize(rr * w, 0.0);
                for c in b..e {
                    u[(c - b) * rr..(c - b + 1) * rr].copy_from_slice(&l[c * m + e..(c + 1) * m]);
                }
                // SAFETY: fr is m x m (leading dimension m): the panel's diagonal block at (b, b)
                // (w x w), its rows below at (e, b) ((m - e) x w) and the known block at (e, e),
                // disjoint; l is m x k with leading dimension m; u is (m - e) x w.
                unsafe {
                    let d = fp.add(b * m + b);
                    inv_llt_lower(w, d, m, &mut xinv);
                    if rr > 0 {
                        blas::trsm_rl(b'N', rr, w, l.as_ptr().add(b * m + b), m, u.as_mut_ptr(), rr);
                        blas::symm_ll(rr, w, -1.0, fp.add(e * m + e), m, u.as_ptr(), rr, 0.0, fp.add(b * m + e), m);
                        blas::gemm(b'T', b'N', w, w, rr, -1.0, u.as_ptr(), rr, fp.add(b * m + e), m, 1.0, d, m);
                    }
                }
                e = b;
            }
            let zb = &mut zv[off..off + m * k];
            for c in 0..k {
                zb[c * m + c..(c + 1) * m].copy_from_slice(&fr[c * m + c..(c + 1) * m]);
            }
            if pending[sn] > 0 {
                fronts[sn] = fr;
            } else {
                pool.give(fr);
            }
        }
        SelectedInverse { sym: s, vals: zv }
    }
}

impl SelectedInverse<'_> {
    /// `(A^-1)_ii` for every `i`, original order.
    pub fn diagonal(&self) -> Vec<f64> {
        let mut out = vec![0.0; self.sym.n];
        for (k, &i) in self.sym.perm.iter().enumerate() {
            out[i] = self.vals[self.sym.diag_pos[k]];
        }
        out
    }

    /// `(A^-1)_ij` on every edge given to [`SymbolicCholesky::analyze`], in that order.
    pub fn edge_values(&self) -> Vec<f64> {
        self.sym.edge_pos.iter().map(|&p| self.vals[p]).collect()
    }

    /// `(A^-1)_ij` if `(i, j)` lies on the diagonal or the (stored) pattern of `L`, else `None`.
    pub fn get(&self, i: usize, j: usize) -> Option<f64> {
        let s = self.sym;
        let (a, b) = (s.iperm[i], s.iperm[j]);
        s.position(a.max(b), a.min(b)).map(|p| self.vals[p])
    }
}
