//! The K x K matrix of Prop. 5, `M = s (w L_T + Gamma) - R^T R` (`s = (1+gamma)/gamma`,
//! `w = lambda/gamma`, `L_T` the tree Laplacian, `Gamma = diag(1^T R)`), assembled and factored
//! densely or sparsely.
//!
//! With K = N centres and a small `sigma` each row of `R` holds a few entries, so `R^T R` couples
//! only centres that share a sample and `M` is a tree Laplacian plus a sparse correction: its
//! sparse Cholesky (the supernodal one of `structdr_linalg::sparse`, fill-reducing ordering)
//! costs far less than the dense `K^3/3`, and the dense K x K matrix (`8 K^2` bytes: 80 GB at
//! K = 100,000) is never formed. The choice is by cost, as in SPL ([`MSolver::Auto`]): below
//! [`SPARSE_MIN_K`] centres, or with `R` stored dense, M is assembled densely as before; otherwise
//! its pattern and values are assembled sparsely (column by column of `R^T R` with a dense
//! accumulator, O(sum_i nnz(r_i)^2) work, memory O(nnz(M))), analysed, and factored densely only
//! when `DENSE_FLOP_RATIO x flops(L) > K^3` (`flops(L) = sum_j |L_{*j}|^2`).

use super::assign::Assign;
use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;
use structdr_linalg::sparse::{Ordering, SparseCholesky, SparseError, SymbolicCholesky};
use structdr_linalg::{LinalgError, SpdFactor};

/// Below this K the dense assembly and factorisation are kept (the sparse analysis does not pay).
pub const SPARSE_MIN_K: usize = 500;
/// The sparse factor is replaced by the dense one when `DENSE_FLOP_RATIO x flops(L) > K^3`
/// (dense `dpotrf` runs near the GEMM rate, the supernodal factor below it; SPL's rule).
pub const DENSE_FLOP_RATIO: f64 = 10.0;

/// How `M` is factored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MSolver {
    /// By cost (module doc).
    Auto,
    /// Always the dense assembly (`R^T R` by GEMM or by scattering rows) and `dpotrf`: the
    /// reference the sparse path is tested against.
    Dense,
    /// Always the sparse Cholesky (with `R` stored dense too: its pattern is then full).
    Sparse,
}

/// `M`, assembled: a dense matrix, or the diagonal and the off-diagonal values in the order of
/// the edges its [`SparsePattern`] analysed.
pub(super) enum MAssembly {
    Dense(Array2<f64>),
    Sparse { diag: Vec<f64>, vals: Vec<f64> },
}

/// The analysed off-diagonal pattern of a sparse assembly (the factor borrows its analysis), kept
/// across iterations for its ordering: M's pattern drifts slowly, so the next analysis reuses
/// this AMD permutation and recomputes AMD only when the factor's flops grow by more than
/// [`REORDER_GROWTH`] over those of the last fresh ordering (the ordering changes only the cost).
pub(super) struct SparsePattern {
    sym: SymbolicCholesky,
    /// `flops(L)` when the permutation was computed by AMD.
    amd_flops: f64,
}

/// See [`SparsePattern`].
pub const REORDER_GROWTH: f64 = 1.25;

/// A factor of `M`.
pub(super) enum MFactor<'a> {
    Dense(SpdFactor),
    Sparse(SparseCholesky<'a>),
}

/// What one factorisation was (for the fit's notes).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct MInfo {
    pub sparse: bool,
    /// Off-diagonal non-zeros of M (each pair once; K (K - 1) / 2 for a dense assembly).
    pub nnz_m: usize,
    /// Entries of the sparse factor L (0 when dense).
    pub nnz_l: usize,
}

fn sparse_err(e: SparseError) -> LinalgError {
    match e {
        SparseError::NotPositiveDefinite { pivot, n, .. } => LinalgError::NotPositiveDefinite { minor: pivot + 1, n },
        SparseError::NotFinite(_) => LinalgError::NotFinite { what: "DDRTree M (sparse)" },
        SparseError::Pattern(detail) => LinalgError::Shape { what: "DDRTree M (sparse)", detail },
    }
}

impl MAssembly {
    /// Assembles `M = s (w L_T + diag(gam)) - R^T R` for the tree `tree` (edges `(u, v, _)`);
    /// with `lambda = 0` (`w = 0`) a centre with an empty column of `R` gets the identity row
    /// (it never reaches Q; see `docs/parity/ddrtree.md`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        assign: &Assign,
        tree: &[(usize, usize, f64)],
        deg: &[usize],
        gam: &[f64],
        s: f64,
        w: f64,
        solver: MSolver,
        slot: &mut Option<SparsePattern>,
    ) -> Result<(MAssembly, MInfo), LinalgError> {
        let k = assign.k();
        let empty_col = |kk: usize| w == 0.0 && gam[kk] == 0.0;
        let sparse_rows = matches!(assign, Assign::Sparse { .. });
        let dense_old = match solver {
            MSolver::Auto => k < SPARSE_MIN_K || !sparse_rows,
            MSolver::Dense => true,
            MSolver::Sparse => false,
        };
        if dense_old {
            let mut m = Array2::<f64>::zeros((k, k));
            assign.sub_rtr(&mut m);
            for kk in 0..k {
                m[[kk, kk]] += s * (w * deg[kk] as f64 + gam[kk]);
            }
            for &(u, v, _) in tree {
                m[[u, v]] -= s * w;
                m[[v, u]] -= s * w;
            }
            for kk in 0..k {
                if empty_col(kk) {
                    m.row_mut(kk).fill(0.0);
                    m.column_mut(kk).fill(0.0);
                    m[[kk, kk]] = 1.0;
                }
            }
            return Ok((MAssembly::Dense(m), MInfo { sparse: false, nnz_m: k * (k - 1) / 2, nnz_l: 0 }));
        }
        let (diag, edges, vals) = sparse_parts(assign, tree, deg, gam, s, w);
        let info = MInfo { sparse: true, nnz_m: edges.len(), nnz_l: 0 };
        let to_dense = |diag: &[f64], edges: &[(usize, usize)], vals: &[f64]| {
            let mut m = Array2::<f64>::zeros((k, k));
            for (kk, &v) in diag.iter().enumerate() {
                m[[kk, kk]] = v;
            }
            for (&(a, b), &v) in edges.iter().zip(vals) {
                m[[a, b]] = v;
                m[[b, a]] = v;
            }
            m
        };
        // AMD alone: the other orderings' BFS passes cost more than they save on these patterns
        let fresh = |edges: &[(usize, usize)]| -> Result<(SymbolicCholesky, f64), LinalgError> {
            let sym = SymbolicCholesky::analyze(k, edges, Ordering::ApproximateMinimumDegree).map_err(sparse_err)?;
            let f = sym.flops();
            Ok((sym, f))
        };
        let (sym, amd_flops) = match slot.take().filter(|kept| kept.sym.n() == k) {
            Some(kept) => {
                let sym = SymbolicCholesky::analyze(k, &edges, Ordering::Given(kept.sym.perm().to_vec())).map_err(sparse_err)?;
                if sym.flops() > REORDER_GROWTH * kept.amd_flops {
                    fresh(&edges)?
                } else {
                    (sym, kept.amd_flops)
                }
            }
            None => fresh(&edges)?,
        };
        if solver == MSolver::Auto && DENSE_FLOP_RATIO * sym.flops() > (k as f64).powi(3) {
            *slot = None;
            return Ok((MAssembly::Dense(to_dense(&diag, &edges, &vals)), MInfo { sparse: false, ..info }));
        }
        let nnz_l = sym.nnz_l();
        *slot = Some(SparsePattern { sym, amd_flops });
        Ok((MAssembly::Sparse { diag, vals }, MInfo { nnz_l, ..info }))
    }

    /// The Cholesky factor (`slot`: the analysis [`MAssembly::new`] left there, for the sparse case).
    pub(super) fn factor<'a>(&self, slot: &'a Option<SparsePattern>) -> Result<MFactor<'a>, LinalgError> {
        match self {
            MAssembly::Dense(m) => Ok(MFactor::Dense(SpdFactor::new(m.clone(), "DDRTree M")?)),
            MAssembly::Sparse { diag, vals } => {
                let kept = slot.as_ref().expect("a sparse assembly leaves its pattern");
                Ok(MFactor::Sparse(kept.sym.factor(diag, vals).map_err(sparse_err)?))
            }
        }
    }
}

/// Diagonal, off-diagonal pattern (each pair `a < b` once, sorted) and values of `M` from a
/// sparse `R`: column k of `R^T R` is `sum_{i : r_ik != 0} r_ik r_i` (rows of `R` in order),
/// accumulated densely and gathered; tree edges are added to the pattern.
fn sparse_parts(assign: &Assign, tree: &[(usize, usize, f64)], deg: &[usize], gam: &[f64], s: f64, w: f64) -> (Vec<f64>, Vec<(usize, usize)>, Vec<f64>) {
    let k = assign.k();
    // CSC of R: for every centre, its (sample, r_ik) in sample order
    let mut col_ptr = vec![0usize; k + 1];
    assign.for_each(|_, kk, _| col_ptr[kk + 1] += 1);
    for kk in 0..k {
        col_ptr[kk + 1] += col_ptr[kk];
    }
    let mut fill = col_ptr.clone();
    let mut col_row = vec![0u32; col_ptr[k]];
    let mut col_val = vec![0.0; col_ptr[k]];
    assign.for_each(|i, kk, v| {
        col_row[fill[kk]] = i as u32;
        col_val[fill[kk]] = v;
        fill[kk] += 1;
    });
    let mut tree_adj = vec![Vec::new(); k];
    for &(u, v, _) in tree {
        tree_adj[u.min(v)].push(u.max(v));
    }
    let empty_col = |kk: usize| w == 0.0 && gam[kk] == 0.0;
    // R's rows in compressed form (a dense R is compressed first: forced sparse solver only)
    let owned;
    let (indptr, idx, val): (&[usize], &[u32], &[f64]) = match assign {
        Assign::Sparse { indptr, idx, val, .. } => (indptr, idx, val),
        Assign::Dense(_) => {
            let (mut ip, mut ix, mut vl) = (vec![0usize], Vec::new(), Vec::new());
            let mut row = 0;
            assign.for_each(|i, kk, v| {
                while row < i {
                    ip.push(ix.len());
                    row += 1;
                }
                ix.push(kk as u32);
                vl.push(v);
            });
            while ip.len() <= assign.n() {
                ip.push(ix.len());
            }
            owned = (ip, ix, vl);
            (&owned.0[..], &owned.1[..], &owned.2[..])
        }
    };
    const COLS: usize = 64;
    let blocks: Vec<(Vec<f64>, Vec<(usize, usize)>, Vec<f64>)> = (0..k.div_ceil(COLS))
        .into_par_iter()
        .map_init(
            || (vec![0.0f64; k], vec![false; k], Vec::<usize>::new()),
            |(acc, seen, touched), blk| {
                let (lo, hi) = (blk * COLS, ((blk + 1) * COLS).min(k));
                let mut diag = Vec::with_capacity(hi - lo);
                let (mut edges, mut vals) = (Vec::new(), Vec::new());
                for kk in lo..hi {
                    let mut dsum = 0.0;
                    for p in col_ptr[kk]..col_ptr[kk + 1] {
                        let (i, rik) = (col_row[p] as usize, col_val[p]);
                        let (row_idx, row_val) = (&idx[indptr[i]..indptr[i + 1]], &val[indptr[i]..indptr[i + 1]]);
                        // row i holds kk (it is in column kk's list); entries after it have l > kk
                        let at = row_idx.partition_point(|&c| (c as usize) < kk);
                        dsum -= rik * row_val[at];
                        for (&l, &ril) in row_idx[at + 1..].iter().zip(&row_val[at + 1..]) {
                            let l = l as usize;
                            if !seen[l] {
                                seen[l] = true;
                                touched.push(l);
                            }
                            acc[l] -= rik * ril;
                        }
                    }
                    for &l in &tree_adj[kk] {
                        if !seen[l] {
                            seen[l] = true;
                            touched.push(l);
                        }
                        acc[l] -= s * w;
                    }
                    touched.sort_unstable();
                    if empty_col(kk) {
                        diag.push(1.0);
                    } else {
                        diag.push(dsum + s * (w * deg[kk] as f64 + gam[kk]));
                    }
                    for &l in touched.iter() {
                        edges.push((kk, l));
                        vals.push(if empty_col(kk) || empty_col(l) { 0.0 } else { acc[l] });
                        acc[l] = 0.0;
                        seen[l] = false;
                    }
                    touched.clear();
                }
                (diag, edges, vals)
            },
        )
        .collect();
    let mut diag = Vec::with_capacity(k);
    let (mut edges, mut vals) = (Vec::new(), Vec::new());
    for (d, e, v) in blocks {
        diag.extend(d);
        edges.extend(e);
        vals.extend(v);
    }
    (diag, edges, vals)
}

impl MFactor<'_> {
    /// `M^-1 B` (B is K x cols).
    pub(super) fn solve(&self, b: ArrayView2<f64>) -> Array2<f64> {
        match self {
            MFactor::Dense(f) => f.solve(b),
            MFactor::Sparse(f) => f.solve(b),
        }
    }

    /// `B^T M^-1 B` (cols x cols): the sparse path's product is symmetric by construction, the
    /// dense path's `(M^-1 B)^T B` symmetric up to rounding (the caller symmetrises).
    pub(super) fn quad(&self, b: ArrayView2<f64>) -> Array2<f64> {
        match self {
            MFactor::Dense(f) => {
                let mut xt = b.t().as_standard_layout().to_owned(); // cols x K
                f.solve_t(&mut xt); // (M^-1 B)^T
                xt.dot(&b)
            }
            MFactor::Sparse(f) => {
                // (L^-1 P B)^T (L^-1 P B): symmetric by construction
                let h = f.half_solve(b);
                h.t().dot(&h)
            }
        }
    }
}
