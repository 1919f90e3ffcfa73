//! Symbolic analysis (elimination tree, row patterns, relaxed supernodes) and the multifrontal
//! numeric factorisation on the analysed pattern.

use super::blas3 as blas;
use super::ordering::*;
use super::{Ordering, SparseCholesky, SparseError};
use rayon::prelude::*;

/// Recycled dense work buffers (fronts, update matrices): taking one of at least `len` entries
/// avoids a fresh (page-faulting, zeroed) allocation per supernode.
#[derive(Default)]
pub(super) struct Pool(Vec<Vec<f64>>);

impl Pool {
    /// A buffer of exactly `len` entries with unspecified contents.
    pub(super) fn take(&mut self, len: usize) -> Vec<f64> {
        let mut b = self.0.pop().unwrap_or_default();
        if b.len() < len {
            b.resize(len, 0.0);
        }
        b.truncate(len);
        b
    }
    /// A buffer of `len` zeros.
    fn take_zeroed(&mut self, len: usize) -> Vec<f64> {
        let mut b = self.take(len);
        b.fill(0.0);
        b
    }
    pub(super) fn give(&mut self, b: Vec<f64>) {
        if b.capacity() > 0 {
            self.0.push(b);
        }
    }
}

/// `(L L^T)^-1` (lower triangle) in place of the lower-triangular `w x w` factor `L` at `a`
/// (leading dimension `lda`): `X = L^-1` by column-oriented forward substitution into `x`, then
/// `Z_ij = sum_{p >= i} X_pi X_pj` (`dpotri` without LAPACK's call and threading overhead, for
/// the panels of at most [`SELINV_PANEL`] columns).
///
/// # Safety
/// `a` must address a `w x w` column-major matrix with leading dimension `lda` and a positive
/// diagonal.
pub(super) unsafe fn inv_llt_lower(w: usize, a: *mut f64, lda: usize, x: &mut Vec<f64>) {
    x.clear();
    x.resize(w * w, 0.0);
    for j in 0..w {
        let col = &mut x[j * w..(j + 1) * w];
        col[j] = 1.0;
        for p in j..w {
            let lp = std::slice::from_raw_parts(a.add(p * lda), w);
            let v = col[p] / lp[p];
            col[p] = v;
            for (c, &l) in col[p + 1..].iter_mut().zip(&lp[p + 1..]) {
                *c -= l * v;
            }
        }
    }
    for j in 0..w {
        let dst = std::slice::from_raw_parts_mut(a.add(j * lda), w);
        let xj = &x[j * w..(j + 1) * w];
        for i in j..w {
            let xi = &x[i * w..(i + 1) * w];
            dst[i] = xi[i..].iter().zip(&xj[i..]).map(|(p, q)| p * q).sum();
        }
    }
}

/// Column panel width of the selected inversion inside a supernode (module doc).
pub(super) const SELINV_PANEL: usize = 96;

/// Relaxed supernode amalgamation (CHOLMOD's defaults): a chain of supernodes is merged with its
/// parent when the result has at most `NRELAX[0]` columns, or at most `NRELAX[i]` columns and a
/// fraction of explicit zeros below `ZRELAX[i]`, or any size and fewer than `ZRELAX[2]` zeros.
pub(super) const NRELAX: [usize; 3] = [4, 16, 48];
pub(super) const ZRELAX: [f64; 3] = [0.8, 0.1, 0.05];

/// The symbolic Cholesky factor of a sparse symmetric pattern: ordering, supernode partition and
/// the row structure of every supernode (module doc).
#[derive(Debug, Clone)]
pub struct SymbolicCholesky {
    pub(super) n: usize,
    /// `perm[k]`: the original index at position `k`.
    pub(super) perm: Vec<usize>,
    /// `iperm[i]`: the position of original index `i`.
    pub(super) iperm: Vec<usize>,
    /// Supernode `s` holds the columns `super_ptr[s]..super_ptr[s + 1]`.
    pub(super) super_ptr: Vec<usize>,
    /// The supernode of every column.
    pub(super) col_super: Vec<usize>,
    /// Rows of supernode `s`: `rows[row_ptr[s]..row_ptr[s + 1]]`, its own columns first, then
    /// the rows below them; ascending.
    pub(super) row_ptr: Vec<usize>,
    pub(super) rows: Vec<usize>,
    /// For every row below a supernode (same positions as `rows`; the own-column slots unused):
    /// its local index in the row list of the parent supernode.
    pub(super) rel: Vec<usize>,
    /// The dense block of supernode `s` (`m x k`, column-major, leading dimension `m`) starts at
    /// `val_ptr[s]` of the value array; `val_ptr[n_super]` is the length.
    pub(super) val_ptr: Vec<usize>,
    /// Parent supernode (`usize::MAX` at a root) and the children, `children[child_ptr[s]..child_ptr[s + 1]]`.
    pub(super) sparent: Vec<usize>,
    pub(super) child_ptr: Vec<usize>,
    pub(super) children: Vec<usize>,
    /// Storage position of `L_jj` (permuted `j`) and of every input edge.
    pub(super) diag_pos: Vec<usize>,
    pub(super) edge_pos: Vec<usize>,
    /// Strictly-lower non-zeros and flops of the exact (unrelaxed) factor.
    pub(super) nnz_exact: usize,
    pub(super) flops_exact: f64,
    pub(super) ordering: &'static str,
}

/// Elimination tree of the matrix permuted by `perm` (Liu's algorithm with path compression).
pub(super) fn etree(n: usize, adj: &Adjacency, perm: &[usize], iperm: &[usize]) -> Vec<usize> {
    let mut parent = vec![usize::MAX; n];
    let mut ancestor = vec![usize::MAX; n];
    for k in 0..n {
        for c in adj[perm[k]].iter().map(|&u| iperm[u]).filter(|&c| c < k) {
            let mut i = c;
            while i != usize::MAX && i < k {
                let next = ancestor[i];
                ancestor[i] = k;
                if next == usize::MAX {
                    parent[i] = k;
                    break;
                }
                i = next;
            }
        }
    }
    parent
}

/// A postorder of the forest `parent` (children in increasing order): `post[k]` is the node
/// visited `k`-th.
pub(super) fn postorder(parent: &[usize]) -> Vec<usize> {
    let n = parent.len();
    let mut head = vec![usize::MAX; n];
    let mut next = vec![usize::MAX; n];
    for j in (0..n).rev() {
        if parent[j] != usize::MAX {
            next[j] = head[parent[j]];
            head[parent[j]] = j;
        }
    }
    let mut post = Vec::with_capacity(n);
    let mut stack = Vec::new();
    for root in (0..n).filter(|&j| parent[j] == usize::MAX) {
        stack.push(root);
        while let Some(&top) = stack.last() {
            let child = head[top];
            if child == usize::MAX {
                stack.pop();
                post.push(top);
            } else {
                head[top] = next[child];
                stack.push(child);
            }
        }
    }
    debug_assert_eq!(post.len(), n);
    post
}

/// The first half of the symbolic analysis for a fixed permutation: elimination tree, the exact
/// row patterns of `L` and the (relaxed) supernode partition. Its [`Skeleton::flops`] equal
/// [`SymbolicCholesky::flops`] of the finished analysis, so a permutation can be judged before
/// the row structures and entry positions are built.
pub(super) struct Skeleton {
    perm: Vec<usize>,
    iperm: Vec<usize>,
    /// Strictly-lower row pattern of row `k` of `L`: `row_idx[row_ptr[k]..row_ptr[k + 1]]`.
    row_ptr: Vec<usize>,
    row_idx: Vec<u32>,
    /// Strictly-lower entries of every column of `L`.
    colcount: Vec<usize>,
    super_ptr: Vec<usize>,
}

impl Skeleton {
    pub(super) fn new(n: usize, adj: &Adjacency, perm: Vec<usize>) -> Skeleton {
        assert!(n < u32::MAX as usize, "SymbolicCholesky: too many columns");
        let mut iperm = vec![0usize; n];
        for (k, &i) in perm.iter().enumerate() {
            iperm[i] = k;
        }
        let parent = etree(n, adj, &perm, &iperm);
        // row patterns of L: reach of row k's entries in the tree, stopping at marked nodes
        // (Davis §4.2); `colcount[j]` = strictly-lower entries of column j. Rows are visited in
        // order, so their patterns go into one flat list.
        let mut mark = vec![usize::MAX; n];
        let mut colcount = vec![0usize; n];
        let mut row_ptr = Vec::with_capacity(n + 1);
        row_ptr.push(0);
        let mut row_idx: Vec<u32> = Vec::with_capacity(2 * adj.nnz());
        for k in 0..n {
            mark[k] = k;
            for c in adj[perm[k]].iter().map(|&u| iperm[u]).filter(|&c| c < k) {
                let mut i = c;
                while mark[i] != k {
                    mark[i] = k;
                    row_idx.push(i as u32);
                    colcount[i] += 1;
                    i = parent[i];
                }
            }
            row_ptr.push(row_idx.len());
        }
        // fundamental supernodes: j and j + 1 together when parent(j) = j + 1 and
        // struct(j) = {j + 1} u struct(j + 1)
        let mut fund = vec![0usize];
        for j in 1..n {
            if !(parent[j - 1] == j && colcount[j - 1] == colcount[j] + 1) {
                fund.push(j);
            }
        }
        fund.push(n);
        // relaxed amalgamation: merge the running chain into the next supernode when that is its
        // parent (the last column's parent is the next supernode's first column)
        let mut super_ptr = vec![0usize];
        let mut cur_start = 0usize;
        for w in 1..fund.len() - 1 {
            let (next_start, next_end) = (fund[w], fund[w + 1]);
            let merge = parent[next_start - 1] == next_start && {
                let k = next_end - cur_start;
                let r = colcount[next_end - 1];
                let stored = k * (k + 1) / 2 + k * r;
                let exact: usize = (cur_start..next_end).map(|j| colcount[j] + 1).sum();
                let z = (stored - exact) as f64 / stored as f64;
                k <= NRELAX[0] || (k <= NRELAX[1] && z < ZRELAX[0]) || (k <= NRELAX[2] && z < ZRELAX[1]) || z < ZRELAX[2]
            };
            if !merge {
                super_ptr.push(next_start);
                cur_start = next_start;
            }
        }
        if n > 0 {
            super_ptr.push(n);
        }
        Skeleton { perm, iperm, row_ptr, row_idx, colcount, super_ptr }
    }

    /// [`SymbolicCholesky::flops`]: supernode `s` with `k` columns has `m = k + colcount(last)`
    /// rows (the structure of its last column lies below it), `sum_{c < k} (m - c - 1)^2`.
    pub(super) fn flops(&self) -> f64 {
        self.super_ptr
            .windows(2)
            .map(|w| {
                let k = w[1] - w[0];
                let m = k + self.colcount[w[1] - 1];
                (0..k).map(|c| ((m - c - 1) as f64).powi(2)).sum::<f64>()
            })
            .sum()
    }

    /// The second half: row structures of the supernodes, relative indices into the parents and
    /// the storage positions of the diagonal and of every edge (in parallel: each is a lookup).
    pub(super) fn finish(self, edges: &[(usize, usize)], name: &'static str) -> SymbolicCholesky {
        let Skeleton { perm, iperm, row_ptr: lrow_ptr, row_idx, colcount, super_ptr } = self;
        let n = perm.len();
        let nnz_exact: usize = colcount.iter().sum();
        let flops_exact: f64 = colcount.iter().map(|&c| (c as f64) * (c as f64)).sum();
        drop(colcount);
        let ns = super_ptr.len() - 1;
        let mut col_super = vec![0usize; n];
        for s in 0..ns {
            for c in &mut col_super[super_ptr[s]..super_ptr[s + 1]] {
                *c = s;
            }
        }
        // struct(last column of s) = the rows below s (the columns of a supernode form a chain of
        // the elimination tree, so every column's structure lies in the own columns after it and
        // the structure of the last column). Collect the column structures of the last columns,
        // counted first, then filled in increasing row order (ascending lists).
        let is_last = |c: usize| c + 1 == super_ptr[col_super[c] + 1];
        let mut last_ptr = vec![0usize; ns + 1];
        for &c in &row_idx {
            let c = c as usize;
            if is_last(c) {
                last_ptr[col_super[c] + 1] += 1;
            }
        }
        for s in 0..ns {
            last_ptr[s + 1] += last_ptr[s];
        }
        let mut fill = last_ptr[..ns].to_vec();
        let mut last_rows = vec![0usize; last_ptr[ns]];
        for k in 0..n {
            for &c in &row_idx[lrow_ptr[k]..lrow_ptr[k + 1]] {
                let c = c as usize;
                if is_last(c) {
                    let s = col_super[c];
                    last_rows[fill[s]] = k;
                    fill[s] += 1;
                }
            }
        }
        drop((row_idx, lrow_ptr, fill));
        let mut row_ptr = vec![0usize; ns + 1];
        let mut rows = Vec::with_capacity(n + last_rows.len());
        let mut val_ptr = vec![0usize; ns + 1];
        let mut sparent = vec![usize::MAX; ns];
        for s in 0..ns {
            rows.extend(super_ptr[s]..super_ptr[s + 1]);
            let below = &last_rows[last_ptr[s]..last_ptr[s + 1]];
            rows.extend_from_slice(below);
            row_ptr[s + 1] = rows.len();
            let (k, m) = (super_ptr[s + 1] - super_ptr[s], row_ptr[s + 1] - row_ptr[s]);
            val_ptr[s + 1] = val_ptr[s] + m * k;
            if let Some(&r0) = below.first() {
                sparent[s] = col_super[r0];
            }
        }
        drop((last_rows, last_ptr));
        // children lists and relative indices into the parent's rows
        let mut child_ptr = vec![0usize; ns + 1];
        for &p in &sparent {
            if p != usize::MAX {
                child_ptr[p + 1] += 1;
            }
        }
        for s in 0..ns {
            child_ptr[s + 1] += child_ptr[s];
        }
        let mut fill = child_ptr.clone();
        let mut children = vec![0usize; child_ptr[ns]];
        for (s, &p) in sparent.iter().enumerate() {
            if p != usize::MAX {
                children[fill[p]] = s;
                fill[p] += 1;
            }
        }
        let mut rel = vec![usize::MAX; rows.len()];
        let mut local = vec![usize::MAX; n];
        for p in 0..ns {
            for (t, &r) in rows[row_ptr[p]..row_ptr[p + 1]].iter().enumerate() {
                local[r] = t;
            }
            for &c in &children[child_ptr[p]..child_ptr[p + 1]] {
                let k = super_ptr[c + 1] - super_ptr[c];
                for q in row_ptr[c] + k..row_ptr[c + 1] {
                    let t = local[rows[q]];
                    debug_assert!(t != usize::MAX, "the rows below a supernode lie in its parent's rows");
                    rel[q] = t;
                }
            }
        }
        let mut sym = SymbolicCholesky {
            n,
            perm,
            iperm,
            super_ptr,
            col_super,
            row_ptr,
            rows,
            rel,
            val_ptr,
            sparent,
            child_ptr,
            children,
            diag_pos: Vec::new(),
            edge_pos: Vec::new(),
            nnz_exact,
            flops_exact,
            ordering: name,
        };
        sym.diag_pos = (0..n).into_par_iter().map(|j| sym.position(j, j).expect("diagonal")).collect();
        sym.edge_pos = edges
            .par_iter()
            .map(|&(i, j)| {
                let (a, b) = (sym.iperm[i], sym.iperm[j]);
                sym.position(a.max(b), a.min(b)).expect("every entry of A lies on the pattern of L")
            })
            .collect();
        sym
    }
}

/// Symbolic analysis for a fixed permutation: elimination tree, the exact pattern of `L`,
/// (relaxed) supernodes, their row structures and the positions of the entries of `A`.
pub(super) fn symbolic_for(adj: &Adjacency, edges: &[(usize, usize)], perm: Vec<usize>, name: &'static str) -> SymbolicCholesky {
    Skeleton::new(adj.n(), adj, perm).finish(edges, name)
}

/// Checks the edges of an `n x n` pattern and builds their adjacency (duplicates rejected).
fn checked_adjacency(n: usize, edges: &[(usize, usize)]) -> Result<Adjacency, SparseError> {
    for (e, &(i, j)) in edges.iter().enumerate() {
        if i >= n || j >= n {
            return Err(SparseError::Pattern(format!("edge {e} = ({i}, {j}) out of range for n = {n}")));
        }
        if i == j {
            return Err(SparseError::Pattern(format!("edge {e} = ({i}, {j}) is a self-loop (the diagonal is implicit)")));
        }
    }
    let adj = Adjacency::new(n, edges);
    if adj.nnz() != 2 * edges.len() {
        return Err(SparseError::Pattern("duplicate edges: every unordered pair must appear once".into()));
    }
    Ok(adj)
}

/// A fill-reducing permutation followed by a postorder of its elimination tree (same fill and
/// flops; contiguous subtrees, larger supernodes), analysed.
fn postordered(adj: &Adjacency, edges: &[(usize, usize)], perm: Vec<usize>, name: &'static str) -> SymbolicCholesky {
    let n = adj.n();
    let mut iperm = vec![0usize; n];
    for (k, &i) in perm.iter().enumerate() {
        iperm[i] = k;
    }
    let post = postorder(&etree(n, adj, &perm, &iperm));
    symbolic_for(adj, edges, post.iter().map(|&k| perm[k]).collect(), name)
}

fn check_permutation(n: usize, p: &[usize]) -> Result<(), SparseError> {
    let mut seen = vec![false; n];
    if p.len() != n || p.iter().any(|&i| i >= n || std::mem::replace(&mut seen[i], true)) {
        return Err(SparseError::Pattern(format!("the given ordering is not a permutation of 0..{n}")));
    }
    Ok(())
}

const AMD: &str = "approximate minimum degree";
const RCM: &str = "reverse Cuthill-McKee";
const ND: &str = "nested dissection (BFS levels)";

impl SymbolicCholesky {
    /// Analyses the pattern of an `n x n` symmetric matrix with off-diagonal entries on `edges`
    /// (`(i, j)`, `i != j`, each unordered pair at most once; the diagonal is always present).
    pub fn analyze(n: usize, edges: &[(usize, usize)], ordering: Ordering) -> Result<SymbolicCholesky, SparseError> {
        let adj = checked_adjacency(n, edges)?;
        Ok(match ordering {
            Ordering::Natural => symbolic_for(&adj, edges, (0..n).collect(), "natural"),
            Ordering::ReverseCuthillMcKee => postordered(&adj, edges, rcm_with(&adj), RCM),
            Ordering::NestedDissection => postordered(&adj, edges, nested_dissection_with(&adj), ND),
            Ordering::ApproximateMinimumDegree => postordered(&adj, edges, amd_with(&adj), AMD),
            Ordering::Auto => {
                // ties: AMD, then nested dissection
                let mut best = postordered(&adj, edges, amd_with(&adj), AMD);
                for cand in [postordered(&adj, edges, nested_dissection_with(&adj), ND), postordered(&adj, edges, rcm_with(&adj), RCM)] {
                    if cand.flops_exact < best.flops_exact {
                        best = cand;
                    }
                }
                best
            }
            Ordering::Given(p) => {
                check_permutation(n, &p)?;
                symbolic_for(&adj, edges, p, "given")
            }
        })
    }

    /// Analyses the pattern with the permutation `perm` (as [`Ordering::Given`]) when its factor
    /// costs at most `max_flops` ([`Self::flops`]), and otherwise with a fresh AMD ordering
    /// ([`Ordering::ApproximateMinimumDegree`]); the boolean says whether `perm` was kept. The
    /// cost is judged after the elimination tree and column counts alone, so a rejected
    /// permutation costs no row structures or entry positions (a pattern that drifts between
    /// solves: reuse the last ordering while it stays cheap).
    pub fn analyze_reusing(n: usize, edges: &[(usize, usize)], perm: &[usize], max_flops: f64) -> Result<(SymbolicCholesky, bool), SparseError> {
        let adj = checked_adjacency(n, edges)?;
        check_permutation(n, perm)?;
        let skeleton = Skeleton::new(n, &adj, perm.to_vec());
        if skeleton.flops() <= max_flops {
            return Ok((skeleton.finish(edges, "given"), true));
        }
        drop(skeleton);
        Ok((postordered(&adj, edges, amd_with(&adj), AMD), false))
    }

    /// Storage position of `L_rc` (permuted indices, `r >= c`) if it lies on the pattern.
    pub(super) fn position(&self, r: usize, c: usize) -> Option<usize> {
        let s = self.col_super[c];
        let lc = c - self.super_ptr[s];
        let rows = &self.rows[self.row_ptr[s]..self.row_ptr[s + 1]];
        let m = rows.len();
        rows[lc..].binary_search(&r).ok().map(|off| self.val_ptr[s] + lc * m + lc + off)
    }

    /// Columns, rows (own columns included) and the value offset of supernode `s`.
    pub(super) fn block(&self, s: usize) -> (usize, usize, usize) {
        (self.super_ptr[s + 1] - self.super_ptr[s], self.row_ptr[s + 1] - self.row_ptr[s], self.val_ptr[s])
    }

    /// Order of the matrix.
    pub fn n(&self) -> usize {
        self.n
    }
    /// Strictly-lower entries of `L` as stored: the exact pattern plus the explicit zeros of the
    /// relaxed supernodes (selected inversion returns `A^-1` on all of them).
    pub fn nnz_l(&self) -> usize {
        (0..self.n_supernodes())
            .map(|s| {
                let (k, m, _) = self.block(s);
                k * (k - 1) / 2 + k * (m - k)
            })
            .sum()
    }
    /// Strictly-lower non-zeros of the exact factor (no relaxed zeros).
    pub fn nnz_l_exact(&self) -> usize {
        self.nnz_exact
    }
    /// Factorisation flops `sum_j |L_{*j}|^2` on the stored (supernodal) pattern: multiply-adds
    /// counted as two, strictly-lower counts; selected inversion costs about twice this.
    pub fn flops(&self) -> f64 {
        (0..self.n_supernodes())
            .map(|s| {
                let (k, m, _) = self.block(s);
                (0..k).map(|c| ((m - c - 1) as f64).powi(2)).sum::<f64>()
            })
            .sum()
    }
    /// [`Self::flops`] of the exact pattern (what the ordering minimises).
    pub fn flops_exact(&self) -> f64 {
        self.flops_exact
    }
    /// Number of (relaxed) supernodes.
    pub fn n_supernodes(&self) -> usize {
        self.super_ptr.len() - 1
    }
    /// Columns of the largest supernode and rows (own columns included) of the largest front.
    pub fn largest_supernode(&self) -> (usize, usize) {
        (0..self.n_supernodes()).map(|s| self.block(s)).fold((0, 0), |(a, b), (k, m, _)| (a.max(k), b.max(m)))
    }
    /// Name of the ordering in use.
    pub fn ordering_name(&self) -> &'static str {
        self.ordering
    }
    /// The permutation: `perm()[k]` is the original index at position `k`.
    pub fn perm(&self) -> &[usize] {
        &self.perm
    }

    /// Numeric factorisation of the matrix with diagonal `diag` (original order, length n) and
    /// off-diagonal values `edge_vals` (aligned with the edges given to [`Self::analyze`]).
    ///
    /// Multifrontal, supernode by supernode in (post)order: the front of `s` is `A`'s columns of
    /// `s` plus the update matrices of its children (extend-add through the precomputed relative
    /// indices); `dpotrf` on the diagonal block, `dtrsm` for the rows below, and
    /// `dsyrk` for the update matrix `-L_21 L_21^T` handed to the parent.
    pub fn factor(&self, diag: &[f64], edge_vals: &[f64]) -> Result<SparseCholesky<'_>, SparseError> {
        let n = self.n;
        if diag.len() != n || edge_vals.len() != self.edge_pos.len() {
            return Err(SparseError::Pattern(format!(
                "values do not fit the pattern: {} diagonal entries for n = {n}, {} edge values for {} edges",
                diag.len(),
                edge_vals.len(),
                self.edge_pos.len()
            )));
        }
        if let Some(j) = diag.iter().chain(edge_vals).position(|v| !v.is_finite()) {
            return Err(SparseError::NotFinite(if j < n {
                format!("diagonal entry {j} is {}", diag[j])
            } else {
                format!("edge value {} is {}", j - n, edge_vals[j - n])
            }));
        }
        let ns = self.n_supernodes();
        let mut vals = vec![0.0f64; self.val_ptr[ns]];
        for (j, &p) in self.diag_pos.iter().enumerate() {
            vals[p] = diag[self.perm[j]];
        }
        for (&p, &v) in self.edge_pos.iter().zip(edge_vals) {
            vals[p] = v;
        }
        let mut updates: Vec<Vec<f64>> = vec![Vec::new(); ns];
        let mut pool = Pool::default();
        for s in 0..ns {
            let (k, m, off) = self.block(s);
            let r = m - k;
            let block = &mut vals[off..off + m * k];
            let mut u = if r > 0 { pool.take_zeroed(r * r) } else { Vec::new() };
            for &c in &self.children[self.child_ptr[s]..self.child_ptr[s + 1]] {
                let uc = std::mem::take(&mut updates[c]);
                let kc = self.super_ptr[c + 1] - self.super_ptr[c];
                let relc = &self.rel[self.row_ptr[c] + kc..self.row_ptr[c + 1]];
                let rc = relc.len();
                for (b, &cb) in relc.iter().enumerate() {
                    let col = &uc[b * rc..(b + 1) * rc];
                    if cb < k {
                        let dst = &mut block[cb * m..(cb + 1) * m];
                        for (a, &ra) in relc.iter().enumerate().skip(b) {
                            dst[ra] += col[a];
                        }
                    } else {
                        let dst = &mut u[(cb - k) * r..(cb - k + 1) * r];
                        for (a, &ra) in relc.iter().enumerate().skip(b) {
                            dst[ra - k] += col[a];
                        }
                    }
                }
                pool.give(uc);
            }
            let p = block.as_mut_ptr();
            // SAFETY: `block` is m x k column-major (leading dimension m); L11 is its top k x k,
            // L21 the r x k part from row k, disjoint entries; `u` is r x r.
            unsafe {
                if let Err(t) = blas::potrf_l(k, p, m) {
                    let j = self.super_ptr[s] + t;
                    return Err(SparseError::NotPositiveDefinite { pivot: j, n, value: block[t * m + t] });
                }
                blas::trsm_rl(b'T', r, k, p, m, p.add(k), m);
                blas::syrk_ln(r, k, -1.0, p.add(k), m, 1.0, u.as_mut_ptr(), r.max(1));
            }
            for t in 0..k {
                let d = block[t * m + t];
                if !(d > 0.0 && d.is_finite()) {
                    return Err(SparseError::NotPositiveDefinite { pivot: self.super_ptr[s] + t, n, value: d });
                }
            }
            updates[s] = u;
        }
        Ok(SparseCholesky { sym: self, vals })
    }
}
