//! Sparse symmetric positive definite matrices: fill-reducing ordering, supernodal Cholesky
//! `P A P^T = L L^T`, `log det A`, solves, and selected inversion (the entries of `A^-1` on the
//! pattern of `L`, by the Takahashi recurrences in block form).
//!
//! The matrix is given as its diagonal and a list of off-diagonal *edges* `(i, j)`, `i != j`, each
//! unordered pair once (the pattern of a weighted graph Laplacian plus a diagonal, as in SPL).
//! The pattern is analysed once ([`SymbolicCholesky::analyze`]); the numeric factorisation
//! ([`SymbolicCholesky::factor`]) can then be repeated for any values on that pattern (values may
//! be zero: the pattern, not the values, fixes the structure).
//!
//! - **Ordering** ([`Ordering`]): natural, reverse Cuthill-McKee (BFS from a pseudo-peripheral
//!   vertex, neighbours by increasing degree, reversed), nested dissection by BFS level
//!   structures (a pseudo-peripheral vertex, the middle BFS level as the vertex separator,
//!   recursion on both sides, separators numbered last; parts of at most 64 vertices in RCM
//!   order), or approximate minimum degree (SuiteSparse AMD through the `amd` crate).
//!   [`Ordering::Auto`] computes all three and keeps the one with the fewest factorisation flops
//!   `sum_j |L_{*j}|^2` (ties: AMD, then nested dissection). Every computed ordering is followed
//!   by a postorder of its elimination tree (same fill, contiguous subtrees).
//! - **Symbolic factorisation**: elimination tree (Liu's algorithm with path compression), the
//!   row patterns of `L` by walking the tree from the non-zeros of each row of `A` (Davis, *Direct
//!   Methods for Sparse Linear Systems*, §4.1-4.3), fundamental supernodes (chains `j -> j + 1` of
//!   the tree with nested structures) and relaxed amalgamation with CHOLMOD's default rule
//!   (a chain is merged into its parent when the merged supernode has few columns or few explicit
//!   zeros). A supernode's columns share one row list: its own columns, then `struct` of its last
//!   column; the values are one dense column-major block per supernode.
//! - **Numeric factorisation**: multifrontal (Duff & Reid 1983; Liu 1992). In postorder, the
//!   front of supernode `s` is `A`'s columns of `s` plus the children's update matrices
//!   (extend-add through relative indices precomputed by the analysis); `dpotrf` factors the
//!   diagonal block, `dtrsm` gives the rows below, `dsyrk` the update matrix `-L_21 L_21^T` for
//!   the parent. BLAS-3 throughout (OpenBLAS, its own thread count).
//! - **Selected inversion** (Takahashi, Fagan & Chen 1973; Erisman & Tinney 1975; supernodal form
//!   as in SelInv, Lin et al. 2011): with `Z = A^-1`, for supernode `s` with columns `K`, rows
//!   below `R`, `U = L_RK L_KK^-1`, in reverse order: `Z_RK = -Z_RR U`,
//!   `Z_KK = (L_KK L_KK^T)^-1 - U^T Z_RK` (`dtrsm`, `dsymm`, `dgemm`; a wide supernode such as
//!   the dense tail is processed in column panels of 96, the same recurrence by blocks, so the
//!   work is in `dsymm` rather than one large `dpotri`). `R` lies in the row list of the parent supernode,
//!   whose dense block of `Z` on its rows x rows (its "frontal inverse") is known, so `Z_RR` is a
//!   gather through the same relative indices; the recurrence never leaves the pattern (the rows
//!   of a column of `L` form a clique of the filled graph): the diagonal of `A^-1` and its entries
//!   on every edge of `A` come out exactly, in about twice the factorisation's flops, without the
//!   dense inverse.

use std::collections::VecDeque;

/// Fill-reducing ordering of the rows and columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ordering {
    /// The identity permutation.
    Natural,
    /// Reverse Cuthill-McKee (bandwidth / profile reduction).
    ReverseCuthillMcKee,
    /// Nested dissection with BFS-level separators.
    NestedDissection,
    /// Approximate minimum degree (SuiteSparse AMD).
    ApproximateMinimumDegree,
    /// The cheapest (in factorisation flops) of AMD, nested dissection and RCM.
    Auto,
    /// A given permutation: `perm[k]` is the original index placed at position `k`.
    Given(Vec<usize>),
}

/// Errors of the sparse factorisation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SparseError {
    /// The pattern is malformed (index out of range, self-loop, bad permutation, length mismatch).
    #[error("sparse Cholesky: invalid pattern: {0}")]
    Pattern(String),
    /// A pivot was not positive: the matrix is not (numerically) positive definite. `pivot` is the
    /// position in the permuted order (the first leading minor of `P A P^T` that fails), `value`
    /// the diagonal entry where `dpotrf` stopped.
    #[error("sparse Cholesky: matrix is not positive definite (pivot {pivot} of {n} is {value:e})")]
    NotPositiveDefinite { pivot: usize, n: usize, value: f64 },
    /// A value is NaN or infinite.
    #[error("sparse Cholesky: non-finite input: {0}")]
    NotFinite(String),
}

/// Adjacency lists (sorted, duplicate-free) of the undirected graph of `edges`.
fn adjacency(n: usize, edges: &[(usize, usize)]) -> Vec<Vec<usize>> {
    let mut adj = vec![Vec::new(); n];
    for &(i, j) in edges {
        adj[i].push(j);
        adj[j].push(i);
    }
    for a in &mut adj {
        a.sort_unstable();
        a.dedup();
    }
    adj
}

/// BFS from `root` over the vertices with `mask[v] == tag`; returns the vertices in BFS order and
/// the level of each (levels stored in `level`).
fn bfs(adj: &[Vec<usize>], root: usize, mask: &[u32], tag: u32, level: &mut [usize]) -> Vec<usize> {
    let mut order = vec![root];
    level[root] = 0;
    let mut seen_tag = std::collections::HashSet::new();
    seen_tag.insert(root);
    let mut head = 0;
    while head < order.len() {
        let v = order[head];
        head += 1;
        for &u in &adj[v] {
            if mask[u] == tag && seen_tag.insert(u) {
                level[u] = level[v] + 1;
                order.push(u);
            }
        }
    }
    order
}

/// A pseudo-peripheral vertex of the component of `start` (George & Liu: repeat BFS from a vertex
/// of the last level with the smallest degree while the eccentricity grows).
fn pseudo_peripheral(adj: &[Vec<usize>], start: usize, mask: &[u32], tag: u32, level: &mut [usize]) -> (usize, Vec<usize>) {
    let mut root = start;
    let mut order = bfs(adj, root, mask, tag, level);
    let mut ecc = level[*order.last().expect("non-empty")];
    loop {
        let last = level[*order.last().expect("non-empty")];
        let cand = order
            .iter()
            .copied()
            .filter(|&v| level[v] == last)
            .min_by_key(|&v| (adj[v].iter().filter(|&&u| mask[u] == tag).count(), v))
            .expect("non-empty level");
        let o2 = bfs(adj, cand, mask, tag, level);
        let e2 = level[*o2.last().expect("non-empty")];
        if e2 > ecc {
            root = cand;
            order = o2;
            ecc = e2;
        } else {
            // restore the levels of the kept root
            order = bfs(adj, root, mask, tag, level);
            return (root, order);
        }
    }
}

/// Reverse Cuthill-McKee order of the vertices `verts` (all carrying `mask == tag`).
fn rcm_subset(adj: &[Vec<usize>], verts: &[usize], mask: &[u32], tag: u32, level: &mut [usize], out: &mut Vec<usize>) {
    let mut placed = std::collections::HashSet::with_capacity(verts.len());
    let deg = |v: usize| adj[v].iter().filter(|&&u| mask[u] == tag).count();
    let mut sorted: Vec<usize> = verts.to_vec();
    sorted.sort_unstable();
    let start_len = out.len();
    for &s in &sorted {
        if placed.contains(&s) {
            continue;
        }
        let (root, _) = pseudo_peripheral(adj, s, mask, tag, level);
        let comp_start = out.len();
        let mut q = VecDeque::new();
        q.push_back(root);
        placed.insert(root);
        while let Some(v) = q.pop_front() {
            out.push(v);
            let mut nb: Vec<usize> = adj[v].iter().copied().filter(|&u| mask[u] == tag && !placed.contains(&u)).collect();
            nb.sort_unstable_by_key(|&u| (deg(u), u));
            for u in nb {
                placed.insert(u);
                q.push_back(u);
            }
        }
        out[comp_start..].reverse();
    }
    debug_assert_eq!(out.len() - start_len, verts.len());
}

/// Reverse Cuthill-McKee permutation of the graph.
pub fn rcm_order(n: usize, edges: &[(usize, usize)]) -> Vec<usize> {
    let adj = adjacency(n, edges);
    let mask = vec![0u32; n];
    let mut level = vec![0usize; n];
    let verts: Vec<usize> = (0..n).collect();
    let mut out = Vec::with_capacity(n);
    rcm_subset(&adj, &verts, &mask, 0, &mut level, &mut out);
    out
}

/// Nested dissection by BFS level structures (see the module doc).
pub fn nested_dissection_order(n: usize, edges: &[(usize, usize)]) -> Vec<usize> {
    const LEAF: usize = 64;
    let adj = adjacency(n, edges);
    let mut mask = vec![0u32; n];
    let mut level = vec![0usize; n];
    let mut next_tag = 1u32;
    let mut out = Vec::with_capacity(n);
    // Explicit stack of tasks: Part(vertices, tag) to dissect, or Emit(vertices) to append.
    enum Task {
        Part(Vec<usize>),
        Emit(Vec<usize>),
    }
    let mut stack = vec![Task::Part((0..n).collect())];
    while let Some(task) = stack.pop() {
        match task {
            Task::Emit(v) => out.extend(v),
            Task::Part(verts) => {
                if verts.is_empty() {
                    continue;
                }
                let tag = next_tag;
                next_tag += 1;
                for &v in &verts {
                    mask[v] = tag;
                }
                if verts.len() <= LEAF {
                    rcm_subset(&adj, &verts, &mask, tag, &mut level, &mut out);
                    continue;
                }
                let start = *verts.iter().min().expect("non-empty");
                let (_, order) = pseudo_peripheral(&adj, start, &mask, tag, &mut level);
                if order.len() < verts.len() {
                    // disconnected: the component of `start` and the rest are independent
                    let inside: std::collections::HashSet<usize> = order.iter().copied().collect();
                    let rest: Vec<usize> = verts.iter().copied().filter(|v| !inside.contains(v)).collect();
                    stack.push(Task::Part(rest));
                    stack.push(Task::Part(order));
                    continue;
                }
                let nlev = level[*order.last().expect("non-empty")] + 1;
                if nlev < 3 {
                    // no useful separator (a near-clique): order it by RCM
                    rcm_subset(&adj, &verts, &mask, tag, &mut level, &mut out);
                    continue;
                }
                // the level at which half of the vertices are reached, kept off both ends
                let mut counts = vec![0usize; nlev];
                for &v in &order {
                    counts[level[v]] += 1;
                }
                let mut acc = 0;
                let mut sep = 1;
                for (l, &c) in counts.iter().enumerate() {
                    acc += c;
                    if 2 * acc >= order.len() {
                        sep = l;
                        break;
                    }
                }
                let sep = sep.clamp(1, nlev - 2);
                let (mut a, mut b, mut s) = (Vec::new(), Vec::new(), Vec::new());
                for &v in &order {
                    match level[v].cmp(&sep) {
                        std::cmp::Ordering::Less => a.push(v),
                        std::cmp::Ordering::Greater => b.push(v),
                        std::cmp::Ordering::Equal => s.push(v),
                    }
                }
                s.sort_unstable();
                // emitted in the order A, B, S (the stack is LIFO)
                stack.push(Task::Emit(s));
                stack.push(Task::Part(b));
                stack.push(Task::Part(a));
            }
        }
    }
    debug_assert_eq!(out.len(), n);
    out
}

/// Approximate minimum degree permutation of the graph (SuiteSparse AMD, Amestoy, Davis & Duff
/// 1996/2004, through the `amd` crate with its default controls: dense rows (degree above
/// `10 sqrt(n)`) ordered last, aggressive absorption on).
pub fn amd_order(n: usize, edges: &[(usize, usize)]) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let adj = adjacency(n, edges);
    let mut ap = Vec::with_capacity(n + 1);
    let mut ai = Vec::with_capacity(2 * edges.len());
    ap.push(0usize);
    for a in &adj {
        ai.extend_from_slice(a);
        ap.push(ai.len());
    }
    let (p, _, _) = amd::order(n, &ap, &ai, &amd::Control::default()).expect("AMD: the adjacency lists are sorted, duplicate-free and in range");
    p
}

// ---------------------------------------------------------------------------------------------
// Dense kernels: BLAS-3 / LAPACK from the OpenBLAS the workspace links (Fortran interface,
// column-major, every matrix given by a pointer and a leading dimension).

mod blas {
    use std::os::raw::{c_char, c_int};

    extern "C" {
        fn dgemm_(ta: *const c_char, tb: *const c_char, m: *const c_int, n: *const c_int, k: *const c_int, alpha: *const f64, a: *const f64, lda: *const c_int, b: *const f64, ldb: *const c_int, beta: *const f64, c: *mut f64, ldc: *const c_int);
        fn dsyrk_(uplo: *const c_char, trans: *const c_char, n: *const c_int, k: *const c_int, alpha: *const f64, a: *const f64, lda: *const c_int, beta: *const f64, c: *mut f64, ldc: *const c_int);
        fn dtrsm_(side: *const c_char, uplo: *const c_char, ta: *const c_char, diag: *const c_char, m: *const c_int, n: *const c_int, alpha: *const f64, a: *const f64, lda: *const c_int, b: *mut f64, ldb: *const c_int);
        fn dsymm_(side: *const c_char, uplo: *const c_char, m: *const c_int, n: *const c_int, alpha: *const f64, a: *const f64, lda: *const c_int, b: *const f64, ldb: *const c_int, beta: *const f64, c: *mut f64, ldc: *const c_int);
    }

    fn i(v: usize) -> c_int {
        c_int::try_from(v).expect("dimension fits a BLAS integer")
    }
    fn ch(c: u8) -> c_char {
        c as c_char
    }

    /// `C = alpha op(A) op(B) + beta C` (`op(A)` m x k, `op(B)` k x n).
    ///
    /// # Safety
    /// The pointers must address column-major matrices of the given shapes and leading
    /// dimensions; `c` must not overlap `a` or `b`.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gemm(ta: u8, tb: u8, m: usize, n: usize, k: usize, alpha: f64, a: *const f64, lda: usize, b: *const f64, ldb: usize, beta: f64, c: *mut f64, ldc: usize) {
        if m == 0 || n == 0 {
            return;
        }
        dgemm_(&ch(ta), &ch(tb), &i(m), &i(n), &i(k), &alpha, a, &i(lda), b, &i(ldb), &beta, c, &i(ldc));
    }

    /// Lower triangle of `C = alpha A A^T + beta C` (`A` n x k).
    ///
    /// # Safety
    /// As [`gemm`].
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn syrk_ln(n: usize, k: usize, alpha: f64, a: *const f64, lda: usize, beta: f64, c: *mut f64, ldc: usize) {
        if n == 0 {
            return;
        }
        dsyrk_(&ch(b'L'), &ch(b'N'), &i(n), &i(k), &alpha, a, &i(lda), &beta, c, &i(ldc));
    }

    /// `B = B op(L)^-1` (side right) with `L` lower triangular, non-unit (`B` m x n).
    ///
    /// # Safety
    /// As [`gemm`] (`b` must not overlap `l`).
    pub unsafe fn trsm_rl(trans: u8, m: usize, n: usize, l: *const f64, ldl: usize, b: *mut f64, ldb: usize) {
        if m == 0 || n == 0 {
            return;
        }
        dtrsm_(&ch(b'R'), &ch(b'L'), &ch(trans), &ch(b'N'), &i(m), &i(n), &1.0, l, &i(ldl), b, &i(ldb));
    }

    /// `C = alpha A B + beta C` with `A` symmetric m x m, lower triangle read (`B` m x n).
    ///
    /// # Safety
    /// As [`gemm`].
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn symm_ll(m: usize, n: usize, alpha: f64, a: *const f64, lda: usize, b: *const f64, ldb: usize, beta: f64, c: *mut f64, ldc: usize) {
        if m == 0 || n == 0 {
            return;
        }
        dsymm_(&ch(b'L'), &ch(b'L'), &i(m), &i(n), &alpha, a, &i(lda), b, &i(ldb), &beta, c, &i(ldc));
    }

    /// Cholesky of the lower triangle of the n x n matrix at `a` (`dpotrf`); `Err(j)`: the
    /// leading minor of order `j + 1` is not positive definite.
    ///
    /// # Safety
    /// `a` must address an n x n column-major matrix with leading dimension `lda`.
    pub unsafe fn potrf_l(n: usize, a: *mut f64, lda: usize) -> Result<(), usize> {
        if n == 0 {
            return Ok(());
        }
        let mut info: c_int = 0;
        lapack_sys::dpotrf_(&ch(b'L'), &i(n), a, &i(lda), &mut info);
        match info {
            0 => Ok(()),
            k if k > 0 => Err(k as usize - 1),
            k => panic!("dpotrf: argument {} invalid", -k),
        }
    }
}

/// Recycled dense work buffers (fronts, update matrices): taking one of at least `len` entries
/// avoids a fresh (page-faulting, zeroed) allocation per supernode.
#[derive(Default)]
struct Pool(Vec<Vec<f64>>);

impl Pool {
    /// A buffer of exactly `len` entries with unspecified contents.
    fn take(&mut self, len: usize) -> Vec<f64> {
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
    fn give(&mut self, b: Vec<f64>) {
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
unsafe fn inv_llt_lower(w: usize, a: *mut f64, lda: usize, x: &mut Vec<f64>) {
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
const SELINV_PANEL: usize = 96;

/// Relaxed supernode amalgamation (CHOLMOD's defaults): a chain of supernodes is merged with its
/// parent when the result has at most `NRELAX[0]` columns, or at most `NRELAX[i]` columns and a
/// fraction of explicit zeros below `ZRELAX[i]`, or any size and fewer than `ZRELAX[2]` zeros.
const NRELAX: [usize; 3] = [4, 16, 48];
const ZRELAX: [f64; 3] = [0.8, 0.1, 0.05];

/// The symbolic Cholesky factor of a sparse symmetric pattern: ordering, supernode partition and
/// the row structure of every supernode (module doc).
#[derive(Debug, Clone)]
pub struct SymbolicCholesky {
    n: usize,
    /// `perm[k]`: the original index at position `k`.
    perm: Vec<usize>,
    /// `iperm[i]`: the position of original index `i`.
    iperm: Vec<usize>,
    /// Supernode `s` holds the columns `super_ptr[s]..super_ptr[s + 1]`.
    super_ptr: Vec<usize>,
    /// The supernode of every column.
    col_super: Vec<usize>,
    /// Rows of supernode `s`: `rows[row_ptr[s]..row_ptr[s + 1]]`, its own columns first, then
    /// the rows below them; ascending.
    row_ptr: Vec<usize>,
    rows: Vec<usize>,
    /// For every row below a supernode (same positions as `rows`; the own-column slots unused):
    /// its local index in the row list of the parent supernode.
    rel: Vec<usize>,
    /// The dense block of supernode `s` (`m x k`, column-major, leading dimension `m`) starts at
    /// `val_ptr[s]` of the value array; `val_ptr[n_super]` is the length.
    val_ptr: Vec<usize>,
    /// Parent supernode (`usize::MAX` at a root) and the children, `children[child_ptr[s]..child_ptr[s + 1]]`.
    sparent: Vec<usize>,
    child_ptr: Vec<usize>,
    children: Vec<usize>,
    /// Storage position of `L_jj` (permuted `j`) and of every input edge.
    diag_pos: Vec<usize>,
    edge_pos: Vec<usize>,
    /// Strictly-lower non-zeros and flops of the exact (unrelaxed) factor.
    nnz_exact: usize,
    flops_exact: f64,
    ordering: &'static str,
}

/// Elimination tree of the matrix permuted by `perm` (Liu's algorithm with path compression).
fn etree(n: usize, adj: &[Vec<usize>], perm: &[usize], iperm: &[usize]) -> Vec<usize> {
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
fn postorder(parent: &[usize]) -> Vec<usize> {
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

/// Symbolic analysis for a fixed permutation: elimination tree, the exact pattern of `L`,
/// (relaxed) supernodes, their row structures and the positions of the entries of `A`.
fn symbolic_for(n: usize, adj: &[Vec<usize>], edges: &[(usize, usize)], perm: Vec<usize>, name: &'static str) -> SymbolicCholesky {
    let mut iperm = vec![0usize; n];
    for (k, &i) in perm.iter().enumerate() {
        iperm[i] = k;
    }
    let parent = etree(n, adj, &perm, &iperm);
    // row patterns of L: reach of row k's entries in the tree, stopping at marked nodes
    // (Davis §4.2); `colcount[j]` = strictly-lower entries of column j
    let mut mark = vec![usize::MAX; n];
    let mut colcount = vec![0usize; n];
    let mut row_lists: Vec<Vec<usize>> = vec![Vec::new(); n];
    for k in 0..n {
        mark[k] = k;
        for c in adj[perm[k]].iter().map(|&u| iperm[u]).filter(|&c| c < k) {
            let mut i = c;
            while mark[i] != k {
                mark[i] = k;
                row_lists[k].push(i);
                colcount[i] += 1;
                i = parent[i];
            }
        }
    }
    let nnz_exact: usize = colcount.iter().sum();
    let flops_exact: f64 = colcount.iter().map(|&c| (c as f64) * (c as f64)).sum();
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
    let ns = super_ptr.len() - 1;
    let mut col_super = vec![0usize; n];
    for s in 0..ns {
        for c in &mut col_super[super_ptr[s]..super_ptr[s + 1]] {
            *c = s;
        }
    }
    // struct(last column of s) = the rows below s (the columns of a supernode form a chain of
    // the elimination tree, so every column's structure lies in the own columns after it and
    // the structure of the last column). Collect the column structures of the last columns.
    let mut last_rows: Vec<Vec<usize>> = vec![Vec::new(); ns];
    for (k, list) in row_lists.iter().enumerate() {
        for &c in list {
            let s = col_super[c];
            if c + 1 == super_ptr[s + 1] {
                last_rows[s].push(k); // rows visited in increasing k: ascending
            }
        }
    }
    drop(row_lists);
    let mut row_ptr = vec![0usize; ns + 1];
    let mut rows = Vec::new();
    let mut val_ptr = vec![0usize; ns + 1];
    let mut sparent = vec![usize::MAX; ns];
    for s in 0..ns {
        rows.extend(super_ptr[s]..super_ptr[s + 1]);
        rows.extend_from_slice(&last_rows[s]);
        row_ptr[s + 1] = rows.len();
        let (k, m) = (super_ptr[s + 1] - super_ptr[s], row_ptr[s + 1] - row_ptr[s]);
        val_ptr[s + 1] = val_ptr[s] + m * k;
        if let Some(&r0) = last_rows[s].first() {
            sparent[s] = col_super[r0];
        }
    }
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
    sym.diag_pos = (0..n).map(|j| sym.position(j, j).expect("diagonal")).collect();
    sym.edge_pos = edges
        .iter()
        .map(|&(i, j)| {
            let (a, b) = (sym.iperm[i], sym.iperm[j]);
            sym.position(a.max(b), a.min(b)).expect("every entry of A lies on the pattern of L")
        })
        .collect();
    sym
}

impl SymbolicCholesky {
    /// Analyses the pattern of an `n x n` symmetric matrix with off-diagonal entries on `edges`
    /// (`(i, j)`, `i != j`, each unordered pair at most once; the diagonal is always present).
    pub fn analyze(n: usize, edges: &[(usize, usize)], ordering: Ordering) -> Result<SymbolicCholesky, SparseError> {
        for (e, &(i, j)) in edges.iter().enumerate() {
            if i >= n || j >= n {
                return Err(SparseError::Pattern(format!("edge {e} = ({i}, {j}) out of range for n = {n}")));
            }
            if i == j {
                return Err(SparseError::Pattern(format!("edge {e} = ({i}, {j}) is a self-loop (the diagonal is implicit)")));
            }
        }
        let adj = adjacency(n, edges);
        let nadj: usize = adj.iter().map(Vec::len).sum();
        if nadj != 2 * edges.len() {
            return Err(SparseError::Pattern("duplicate edges: every unordered pair must appear once".into()));
        }
        // a fill-reducing permutation followed by a postorder of its elimination tree (same fill
        // and flops; contiguous subtrees, larger supernodes)
        let postordered = |perm: Vec<usize>, name: &'static str| {
            let mut iperm = vec![0usize; n];
            for (k, &i) in perm.iter().enumerate() {
                iperm[i] = k;
            }
            let post = postorder(&etree(n, &adj, &perm, &iperm));
            symbolic_for(n, &adj, edges, post.iter().map(|&k| perm[k]).collect(), name)
        };
        const AMD: &str = "approximate minimum degree";
        const RCM: &str = "reverse Cuthill-McKee";
        const ND: &str = "nested dissection (BFS levels)";
        Ok(match ordering {
            Ordering::Natural => symbolic_for(n, &adj, edges, (0..n).collect(), "natural"),
            Ordering::ReverseCuthillMcKee => postordered(rcm_order(n, edges), RCM),
            Ordering::NestedDissection => postordered(nested_dissection_order(n, edges), ND),
            Ordering::ApproximateMinimumDegree => postordered(amd_order(n, edges), AMD),
            Ordering::Auto => {
                // ties: AMD, then nested dissection
                let mut best = postordered(amd_order(n, edges), AMD);
                for cand in [postordered(nested_dissection_order(n, edges), ND), postordered(rcm_order(n, edges), RCM)] {
                    if cand.flops_exact < best.flops_exact {
                        best = cand;
                    }
                }
                best
            }
            Ordering::Given(p) => {
                let mut seen = vec![false; n];
                if p.len() != n || p.iter().any(|&i| i >= n || std::mem::replace(&mut seen[i], true)) {
                    return Err(SparseError::Pattern(format!("the given ordering is not a permutation of 0..{n}")));
                }
                symbolic_for(n, &adj, edges, p, "given")
            }
        })
    }

    /// Storage position of `L_rc` (permuted indices, `r >= c`) if it lies on the pattern.
    fn position(&self, r: usize, c: usize) -> Option<usize> {
        let s = self.col_super[c];
        let lc = c - self.super_ptr[s];
        let rows = &self.rows[self.row_ptr[s]..self.row_ptr[s + 1]];
        let m = rows.len();
        rows[lc..].binary_search(&r).ok().map(|off| self.val_ptr[s] + lc * m + lc + off)
    }

    /// Columns, rows (own columns included) and the value offset of supernode `s`.
    fn block(&self, s: usize) -> (usize, usize, usize) {
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
            return Err(SparseError::NotFinite(if j < n { format!("diagonal entry {j} is {}", diag[j]) } else { format!("edge value {} is {}", j - n, edge_vals[j - n]) }));
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

/// A numeric sparse Cholesky factor `P A P^T = L L^T`.
#[derive(Debug, Clone)]
pub struct SparseCholesky<'a> {
    sym: &'a SymbolicCholesky,
    /// The supernodal blocks of `L` (lower triangle of each diagonal block, rows below).
    vals: Vec<f64>,
}

/// Entries of `A^-1` on the pattern of `L` (diagonal and strictly lower part).
#[derive(Debug, Clone)]
pub struct SelectedInverse<'a> {
    sym: &'a SymbolicCholesky,
    /// `A^-1` in the supernodal layout of `L`.
    vals: Vec<f64>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;
    use structdr_linalg::Cholesky;

    /// Random sparse SPD matrix: random edges with weights of either sign, diagonally dominant.
    fn random_spd(n: usize, m_edges: usize, seed: u64) -> (Vec<f64>, Vec<(usize, usize)>, Vec<f64>) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut set = std::collections::BTreeSet::new();
        while set.len() < m_edges {
            let (i, j) = (rng.gen_range(0..n), rng.gen_range(0..n));
            if i != j {
                set.insert((i.min(j), i.max(j)));
            }
        }
        let edges: Vec<(usize, usize)> = set.into_iter().collect();
        let vals: Vec<f64> = edges.iter().map(|_| rng.gen_range(-1.0..1.0)).collect();
        let mut diag: Vec<f64> = (0..n).map(|_| rng.gen_range(0.1..1.0)).collect();
        for (&(i, j), &v) in edges.iter().zip(&vals) {
            diag[i] += v.abs();
            diag[j] += v.abs();
        }
        (diag, edges, vals)
    }

    fn dense(diag: &[f64], edges: &[(usize, usize)], vals: &[f64]) -> Array2<f64> {
        let n = diag.len();
        let mut a = Array2::zeros((n, n));
        for i in 0..n {
            a[[i, i]] = diag[i];
        }
        for (&(i, j), &v) in edges.iter().zip(vals) {
            a[[i, j]] = v;
            a[[j, i]] = v;
        }
        a
    }

    #[test]
    fn factor_logdet_solve_and_selected_inverse_match_dense() {
        for (seed, (n, m)) in [(60usize, 150usize), (120, 300), (200, 900), (40, 700)].into_iter().enumerate() {
            let (diag, edges, vals) = random_spd(n, m, seed as u64 + 1);
            let a = dense(&diag, &edges, &vals);
            let ch = Cholesky::factor(a.view()).unwrap();
            let inv = ch.inverse().unwrap();
            let inv = {
                // dpotri fills one triangle: symmetrise from the lower one
                let mut s = inv.clone();
                for i in 0..n {
                    for j in 0..i {
                        s[[j, i]] = inv[[i, j]];
                    }
                }
                s
            };
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(99);
            let b = Array2::from_shape_fn((n, 3), |_| rng.gen_range(-1.0..1.0));
            let xd = ch.solve(b.view()).unwrap();
            for ord in [Ordering::Natural, Ordering::ReverseCuthillMcKee, Ordering::NestedDissection, Ordering::ApproximateMinimumDegree, Ordering::Auto] {
                let sym = SymbolicCholesky::analyze(n, &edges, ord.clone()).unwrap();
                let f = sym.factor(&diag, &vals).unwrap();
                assert!((f.log_det() - ch.log_det()).abs() < 1e-10 * ch.log_det().abs().max(1.0), "{ord:?} logdet");
                let xs = f.solve(b.view());
                let err = (&xs - &xd).mapv(f64::abs).fold(0.0f64, |a, &b| a.max(b));
                assert!(err < 1e-10, "{ord:?} solve err {err}");
                // half solve: (L^-1 P B)^T (L^-1 P B) = B^T A^-1 B
                let h = f.half_solve(b.view());
                let g = h.t().dot(&h);
                let gd = b.t().dot(&xd);
                assert!((&g - &gd).mapv(f64::abs).fold(0.0f64, |a, &b| a.max(b)) < 1e-10);
                let si = f.selected_inverse();
                let d = si.diagonal();
                for i in 0..n {
                    assert!((d[i] - inv[[i, i]]).abs() < 1e-10, "{ord:?} diag {i}: {} vs {}", d[i], inv[[i, i]]);
                }
                for (&(i, j), z) in edges.iter().zip(si.edge_values()) {
                    assert!((z - inv[[i, j]]).abs() < 1e-10, "{ord:?} edge ({i},{j}): {z} vs {}", inv[[i, j]]);
                }
                // every entry on the factor's pattern (fill included)
                let mut checked = 0;
                for i in 0..n {
                    for j in 0..i {
                        if let Some(z) = si.get(i, j) {
                            assert!((z - inv[[i, j]]).abs() < 1e-10);
                            checked += 1;
                        }
                    }
                }
                assert_eq!(checked, sym.nnz_l());
            }
        }
    }

    #[test]
    fn orderings_are_permutations_and_reduce_fill_on_a_grid() {
        // 30 x 30 grid Laplacian + I
        let w = 30;
        let n = w * w;
        let mut edges = Vec::new();
        for r in 0..w {
            for c in 0..w {
                let v = r * w + c;
                if c + 1 < w {
                    edges.push((v, v + 1));
                }
                if r + 1 < w {
                    edges.push((v, v + w));
                }
            }
        }
        // a scrambled numbering so that "natural" is bad
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        let mut relabel: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            relabel.swap(i, rng.gen_range(0..=i));
        }
        let edges: Vec<(usize, usize)> = edges.iter().map(|&(a, b)| (relabel[a], relabel[b])).collect();
        let nat = SymbolicCholesky::analyze(n, &edges, Ordering::Natural).unwrap();
        let rcm = SymbolicCholesky::analyze(n, &edges, Ordering::ReverseCuthillMcKee).unwrap();
        let nd = SymbolicCholesky::analyze(n, &edges, Ordering::NestedDissection).unwrap();
        for s in [&nat, &rcm, &nd] {
            let mut p = s.perm().to_vec();
            p.sort_unstable();
            assert_eq!(p, (0..n).collect::<Vec<_>>());
        }
        assert!(rcm.nnz_l() < nat.nnz_l() / 2, "rcm {} natural {}", rcm.nnz_l(), nat.nnz_l());
        eprintln!("grid 30x30: nnz(L) natural {} rcm {} nd {}; flops natural {:.3e} rcm {:.3e} nd {:.3e}", nat.nnz_l(), rcm.nnz_l(), nd.nnz_l(), nat.flops(), rcm.flops(), nd.flops());
        assert!(nd.flops() < rcm.flops(), "nd {} rcm {}", nd.flops(), rcm.flops());
    }

    /// Symmetrised K-NN graph of `n` uniform points in `[0, 1]^dim` (intrinsic dimension `dim`:
    /// large fronts, the dense BLAS-3 path) with SPD values on it: either an SPL-like
    /// `Q = L_S + c I` (`s >= 0`, some zero) or mixed-sign weights made diagonally dominant.
    fn knn_spd(n: usize, dim: usize, k: usize, seed: u64, laplacian: bool) -> (Vec<f64>, Vec<(usize, usize)>, Vec<f64>) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let x = Array2::from_shape_fn((n, dim), |_| rng.gen_range(0.0..1.0));
        let edges: Vec<(usize, usize)> = crate::graph::symmetrised_edges(&crate::graph::knn(x.view(), k).unwrap()).iter().map(|&(i, j, _)| (i, j)).collect();
        let mut diag: Vec<f64> = vec![0.0; n];
        let vals: Vec<f64> = edges
            .iter()
            .map(|&(i, j)| {
                let w: f64 = if laplacian { if rng.gen_bool(0.2) { 0.0 } else { -rng.gen_range(0.0..3.0) } } else { rng.gen_range(-1.0..1.0) };
                diag[i] += w.abs();
                diag[j] += w.abs();
                w
            })
            .collect();
        for d in &mut diag {
            *d += if laplacian { 0.25 } else { rng.gen_range(0.05..0.5) };
        }
        (diag, edges, vals)
    }

    /// Dense LAPACK reference: log det, `A^-1` (both triangles) and `A^-1 B`.
    fn dense_reference(diag: &[f64], edges: &[(usize, usize)], vals: &[f64], b: &Array2<f64>) -> (f64, Array2<f64>, Array2<f64>) {
        let n = diag.len();
        let ch = Cholesky::factor(dense(diag, edges, vals).view()).unwrap();
        let inv = ch.inverse().unwrap();
        let mut sym = inv.clone();
        for i in 0..n {
            for j in 0..i {
                sym[[j, i]] = inv[[i, j]];
            }
        }
        (ch.log_det(), sym, ch.solve(b.view()).unwrap())
    }

    fn max_abs(a: &Array2<f64>) -> f64 {
        a.iter().fold(0.0f64, |m, v| m.max(v.abs()))
    }

    #[test]
    fn supernodal_factor_solve_and_selected_inverse_match_lapack_on_knn_patterns() {
        for (case, &(n, dim, laplacian)) in [(300usize, 8usize, true), (500, 12, false), (800, 16, true)].iter().enumerate() {
            let (diag, edges, vals) = knn_spd(n, dim, 10, 100 + case as u64, laplacian);
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
            let b = Array2::from_shape_fn((n, 5), |_| rng.gen_range(-1.0..1.0));
            let (ld, inv, xd) = dense_reference(&diag, &edges, &vals, &b);
            let (sinv, sx) = (max_abs(&inv), max_abs(&xd));
            for ord in [Ordering::ApproximateMinimumDegree, Ordering::Auto, Ordering::Natural, Ordering::NestedDissection] {
                let sym = SymbolicCholesky::analyze(n, &edges, ord.clone()).unwrap();
                let (kmax, mmax) = sym.largest_supernode();
                eprintln!(
                    "kNN n = {n}, {dim}-D, {ord:?} ({}): {} supernodes, largest {kmax} columns / {mmax} rows, nnz(L) {} stored / {} exact, {:.3e} flops",
                    sym.ordering_name(),
                    sym.n_supernodes(),
                    sym.nnz_l(),
                    sym.nnz_l_exact(),
                    sym.flops()
                );
                // the case must exercise real supernodes: a dense tail and relaxed zeros
                assert!(kmax >= 40 && sym.n_supernodes() < n / 2, "{ord:?}: {} supernodes, largest {kmax}", sym.n_supernodes());
                assert!(sym.nnz_l() >= sym.nnz_l_exact() && sym.flops() >= sym.flops_exact());
                let f = sym.factor(&diag, &vals).unwrap();
                assert!((f.log_det() - ld).abs() < 1e-10 * ld.abs().max(1.0), "{ord:?} log det {} vs {ld}", f.log_det());
                let err = max_abs(&(&f.solve(b.view()) - &xd));
                assert!(err < 1e-10 * sx, "{ord:?} solve error {err:e}");
                let h = f.half_solve(b.view());
                let err = max_abs(&(&h.t().dot(&h) - &b.t().dot(&xd)));
                assert!(err < 1e-10 * max_abs(&b.t().dot(&xd)), "{ord:?} half solve error {err:e}");
                let si = f.selected_inverse();
                for (i, d) in si.diagonal().into_iter().enumerate() {
                    assert!((d - inv[[i, i]]).abs() < 1e-10 * sinv, "{ord:?} diag {i}: {d} vs {}", inv[[i, i]]);
                }
                for (&(i, j), z) in edges.iter().zip(si.edge_values()) {
                    assert!((z - inv[[i, j]]).abs() < 1e-10 * sinv, "{ord:?} edge ({i},{j}): {z} vs {}", inv[[i, j]]);
                }
                let mut checked = 0;
                for i in 0..n {
                    for j in 0..i {
                        if let Some(z) = si.get(i, j) {
                            assert!((z - inv[[i, j]]).abs() < 1e-10 * sinv, "{ord:?} fill ({i},{j}): {z} vs {}", inv[[i, j]]);
                            checked += 1;
                        }
                    }
                }
                assert_eq!(checked, sym.nnz_l());
                // a second factorisation with other values on the same analysis
                let diag2: Vec<f64> = diag.iter().map(|d| 2.0 * d + 0.1).collect();
                let (ld2, inv2, _) = dense_reference(&diag2, &edges, &vals, &b);
                let f2 = sym.factor(&diag2, &vals).unwrap();
                assert!((f2.log_det() - ld2).abs() < 1e-10 * ld2.abs().max(1.0));
                let d2 = f2.selected_inverse().diagonal();
                assert!(d2.iter().enumerate().all(|(i, &d)| (d - inv2[[i, i]]).abs() < 1e-10 * max_abs(&inv2)));
            }
        }
    }

    #[test]
    fn amd_is_a_permutation_and_beats_rcm_on_a_grid_and_a_knn_graph() {
        let w = 30;
        let mut grid = Vec::new();
        for r in 0..w {
            for c in 0..w {
                let v = r * w + c;
                if c + 1 < w {
                    grid.push((v, v + 1));
                }
                if r + 1 < w {
                    grid.push((v, v + w));
                }
            }
        }
        let (_, knn, _) = knn_spd(600, 10, 10, 3, true);
        for (name, n, edges) in [("grid 30x30", w * w, grid), ("kNN 600 x 10-D", 600, knn)] {
            let p = amd_order(n, &edges);
            let mut sorted = p.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "{name}: AMD is not a permutation");
            let amd = SymbolicCholesky::analyze(n, &edges, Ordering::ApproximateMinimumDegree).unwrap();
            let rcm = SymbolicCholesky::analyze(n, &edges, Ordering::ReverseCuthillMcKee).unwrap();
            let nd = SymbolicCholesky::analyze(n, &edges, Ordering::NestedDissection).unwrap();
            let auto = SymbolicCholesky::analyze(n, &edges, Ordering::Auto).unwrap();
            // the postorder keeps AMD's fill exactly
            let given = SymbolicCholesky::analyze(n, &edges, Ordering::Given(p)).unwrap();
            assert_eq!(given.nnz_l_exact(), amd.nnz_l_exact());
            eprintln!(
                "{name}: nnz(L) exact AMD {} RCM {} ND {}; flops AMD {:.3e} RCM {:.3e} ND {:.3e}; Auto = {}",
                amd.nnz_l_exact(),
                rcm.nnz_l_exact(),
                nd.nnz_l_exact(),
                amd.flops_exact(),
                rcm.flops_exact(),
                nd.flops_exact(),
                auto.ordering_name()
            );
            assert!(amd.nnz_l_exact() < rcm.nnz_l_exact(), "{name}: AMD {} RCM {}", amd.nnz_l_exact(), rcm.nnz_l_exact());
            assert!(amd.flops_exact() < rcm.flops_exact());
            assert!(auto.flops_exact() <= amd.flops_exact().min(rcm.flops_exact()).min(nd.flops_exact()));
        }
    }

    #[test]
    fn indefinite_pivot_is_located_inside_supernodes() {
        let n = 400;
        let (diag, edges, vals) = knn_spd(n, 12, 10, 9, true);
        let sym = SymbolicCholesky::analyze(n, &edges, Ordering::ApproximateMinimumDegree).unwrap();
        let mut pos = vec![0; n];
        for (k, &i) in sym.perm().iter().enumerate() {
            pos[i] = k;
        }
        // a hugely negative diagonal entry: the leading minors stay positive up to its position
        for k in [0, 1, n / 3, n - 7, n - 1] {
            let v = sym.perm()[k];
            let mut d = diag.clone();
            d[v] = -1e6;
            match sym.factor(&d, &vals) {
                Err(SparseError::NotPositiveDefinite { pivot, n: nn, .. }) => assert_eq!((pivot, nn), (pos[v], n), "vertex {v}"),
                other => panic!("expected an indefinite pivot at {k}, got {:?}", other.map(|f| f.log_det())),
            }
        }
        let mut d = diag.clone();
        d[5] = f64::NAN;
        assert!(matches!(sym.factor(&d, &vals), Err(SparseError::NotFinite(_))));
        let mut v2 = vals.clone();
        v2[3] = f64::INFINITY;
        assert!(matches!(sym.factor(&diag, &v2), Err(SparseError::NotFinite(_))));
    }

    #[test]
    fn bad_patterns_and_indefinite_matrices_are_errors() {
        assert!(SymbolicCholesky::analyze(3, &[(0, 3)], Ordering::Natural).is_err());
        assert!(SymbolicCholesky::analyze(3, &[(1, 1)], Ordering::Natural).is_err());
        assert!(SymbolicCholesky::analyze(3, &[(0, 1), (1, 0)], Ordering::Natural).is_err());
        assert!(SymbolicCholesky::analyze(3, &[(0, 1)], Ordering::Given(vec![0, 0, 1])).is_err());
        let s = SymbolicCholesky::analyze(2, &[(0, 1)], Ordering::Natural).unwrap();
        assert!(matches!(s.factor(&[1.0, 1.0], &[2.0]), Err(SparseError::NotPositiveDefinite { pivot: 1, .. })));
        assert!(s.factor(&[1.0], &[0.5]).is_err());
    }
}
