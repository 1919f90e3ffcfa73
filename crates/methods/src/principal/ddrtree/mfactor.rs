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
//! accumulator, the columns visited in the tree's depth-first order for cache locality,
//! O(sum_i nnz(r_i)^2) work, memory O(nnz(M))), analysed, and factored densely only
//! when `DENSE_FLOP_RATIO x flops(L) > K^3` (`flops(L) = sum_j |L_{*j}|^2`).

use super::assign::{Assign, Columns, COLUMN_CHUNK};
use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;
use structdr_linalg::sparse::{Ordering, SparseCholesky, SparseError, SymbolicCholesky};
use structdr_linalg::{LinalgError, SpdFactor};
use structdr_numerics::graphs::RootedTree;

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
    e.into_linalg("DDRTree M (sparse)")
}

impl MAssembly {
    /// Assembles `M = s (w L_T + diag(gam)) - R^T R` for the tree `tree` (edges `(u, v, _)`);
    /// with `lambda = 0` (`w = 0`) a centre with an empty column of `R` gets the identity row
    /// (it never reaches Q; see `docs/parity/ddrtree.md`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        assign: &Assign,
        cols: Option<&Columns>,
        tree: &[(usize, usize, f64)],
        rooted: &RootedTree,
        gam: &[f64],
        s: f64,
        w: f64,
        solver: MSolver,
        slot: &mut Option<SparsePattern>,
    ) -> Result<(MAssembly, MInfo), LinalgError> {
        let k = assign.k();
        let deg = &rooted.deg;
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
        // a dense R (forced sparse solver only) is compressed first
        let converted;
        let (rows, cols) = match (assign, cols) {
            (Assign::Sparse { .. }, Some(c)) => (assign, c),
            _ => {
                let a = assign.to_sparse();
                let c = Columns::new(&a, rooted).expect("a compressed R");
                converted = (a, c);
                (&converted.0, &converted.1)
            }
        };
        let (diag, edges, vals) = sparse_parts(rows, cols, tree, deg, gam, s, w);
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
        let (sym, amd_flops) = match slot.take().filter(|kept| kept.sym.n() == k) {
            Some(kept) => {
                let limit = REORDER_GROWTH * kept.amd_flops;
                match SymbolicCholesky::analyze_reusing(k, &edges, kept.sym.perm(), limit).map_err(sparse_err)? {
                    (sym, true) => (sym, kept.amd_flops),
                    (sym, false) => {
                        let f = sym.flops();
                        (sym, f)
                    }
                }
            }
            None => {
                let sym = SymbolicCholesky::analyze(k, &edges, Ordering::ApproximateMinimumDegree).map_err(sparse_err)?;
                let f = sym.flops();
                (sym, f)
            }
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
/// sparse `R`: column k of `R^T R` is `sum_{i : r_ik != 0} r_ik r_i` (samples in increasing
/// order), accumulated densely and gathered; tree edges are added to the pattern. The columns are
/// computed in the locality order of `cols` (in parallel, by chunks) and placed in index order:
/// every entry is the same sum in the same order whatever the visiting order.
fn sparse_parts(
    assign: &Assign,
    cols: &Columns,
    tree: &[(usize, usize, f64)],
    deg: &[usize],
    gam: &[f64],
    s: f64,
    w: f64,
) -> (Vec<f64>, Vec<(usize, usize)>, Vec<f64>) {
    let k = assign.k();
    let Assign::Sparse { indptr, idx, val, .. } = assign else { unreachable!("sparse_parts takes a sparse R") };
    let mut tree_adj = vec![Vec::new(); k];
    for &(u, v, _) in tree {
        tree_adj[u.min(v)].push(u.max(v));
    }
    let empty_col = |kk: usize| w == 0.0 && gam[kk] == 0.0;
    // per chunk of the order: the diagonal, the count of entries and the (l, value) of every column
    let chunks: Vec<(Vec<f64>, Vec<usize>, Vec<u32>, Vec<f64>)> = cols
        .order
        .par_chunks(COLUMN_CHUNK)
        .map_init(
            || (vec![0.0f64; k], vec![false; k], Vec::<usize>::new()),
            |(acc, seen, touched), chunk| {
                let mut diag = Vec::with_capacity(chunk.len());
                let mut counts = Vec::with_capacity(chunk.len());
                let (mut ls, mut vals) = (Vec::new(), Vec::new());
                for &kk in chunk {
                    let mut dsum = 0.0;
                    for q in cols.ptr[kk]..cols.ptr[kk + 1] {
                        let (i, at) = (cols.row[q] as usize, cols.pos[q]);
                        let rik = val[at];
                        dsum -= rik * rik;
                        // row i's entries after kk's have l > kk
                        for (&l, &ril) in idx[at + 1..indptr[i + 1]].iter().zip(&val[at + 1..indptr[i + 1]]) {
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
                    diag.push(if empty_col(kk) { 1.0 } else { dsum + s * (w * deg[kk] as f64 + gam[kk]) });
                    counts.push(touched.len());
                    for &l in touched.iter() {
                        ls.push(l as u32);
                        vals.push(if empty_col(kk) || empty_col(l) { 0.0 } else { acc[l] });
                        acc[l] = 0.0;
                        seen[l] = false;
                    }
                    touched.clear();
                }
                (diag, counts, ls, vals)
            },
        )
        .collect();
    // place the columns in index order
    let mut diag = vec![0.0; k];
    let mut start = vec![0usize; k + 1];
    for (chunk, (d, counts, _, _)) in cols.order.chunks(COLUMN_CHUNK).zip(&chunks) {
        for (t, &kk) in chunk.iter().enumerate() {
            diag[kk] = d[t];
            start[kk + 1] = counts[t];
        }
    }
    for kk in 0..k {
        start[kk + 1] += start[kk];
    }
    let total = start[k];
    let mut edges = vec![(0usize, 0usize); total];
    let mut vals = vec![0.0; total];
    for (chunk, (_, counts, ls, vs)) in cols.order.chunks(COLUMN_CHUNK).zip(chunks) {
        let mut from = 0;
        for (t, &kk) in chunk.iter().enumerate() {
            let (to, len) = (start[kk], counts[t]);
            for (e, &l) in edges[to..to + len].iter_mut().zip(&ls[from..from + len]) {
                *e = (kk, l as usize);
            }
            vals[to..to + len].copy_from_slice(&vs[from..from + len]);
            from += len;
        }
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
