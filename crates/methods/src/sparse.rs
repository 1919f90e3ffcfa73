//! Sparse symmetric positive definite matrices: fill-reducing ordering, simplicial Cholesky
//! `P A P^T = L L^T`, `log det A`, solves, and selected inversion (the entries of `A^-1` on the
//! pattern of `L`, by the Takahashi recurrences).
//!
//! The matrix is given as its diagonal and a list of off-diagonal *edges* `(i, j)`, `i != j`, each
//! unordered pair once (the pattern of a weighted graph Laplacian plus a diagonal, as in SPL).
//! The pattern is analysed once ([`SymbolicCholesky::analyze`]); the numeric factorisation
//! ([`SymbolicCholesky::factor`]) can then be repeated for any values on that pattern (values may
//! be zero: the pattern, not the values, fixes the structure).
//!
//! - **Ordering** ([`Ordering`]): natural, reverse Cuthill-McKee (BFS from a pseudo-peripheral
//!   vertex, neighbours by increasing degree, reversed), or nested dissection by BFS level
//!   structures (a pseudo-peripheral vertex, the middle BFS level as the vertex separator,
//!   recursion on both sides, separators numbered last; parts of at most 64 vertices in RCM
//!   order). [`Ordering::Auto`] computes both and keeps the one with fewer factorisation flops
//!   `sum_j |L_{*j}|^2` (ties: nested dissection).
//! - **Symbolic factorisation**: elimination tree (Liu's algorithm with path compression) and the
//!   row patterns of `L` by walking the tree from the non-zeros of each row of `A` (Davis, *Direct
//!   Methods for Sparse Linear Systems*, §4.1-4.3); O(nnz(L)).
//! - **Numeric factorisation**: left-looking column Cholesky with a dense scatter vector,
//!   `L_{jj} = sqrt(a_jj - sum_{k<j} L_jk^2)`, `L_{ij} = (a_ij - sum_{k<j} L_ik L_jk) / L_jj`;
//!   `sum_j |L_{*j}|^2` flops, no supernodes.
//! - **Selected inversion** (Takahashi, Fagan & Chen 1973; Erisman & Tinney 1975): with
//!   `I = struct(L_{*j})` (below the diagonal) and `l = L_{Ij} / L_jj`, for `j = n-1, ..., 0`:
//!   `Z_{Ij} = -Z_{II} l`, `Z_jj = 1 / L_jj^2 - l^T Z_{Ij}`, where `Z = A^-1`. Every entry of
//!   `Z_{II}` lies on the pattern of `L` (the rows of a column of `L` form a clique of the filled
//!   graph), so the recurrence never leaves the pattern: the diagonal of `A^-1` and its entries on
//!   every edge of `A` come out exactly, in about twice the factorisation's flops, without the
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
    /// The cheaper (in factorisation flops) of RCM and nested dissection.
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
    /// A pivot was not positive: the matrix is not (numerically) positive definite.
    #[error("sparse Cholesky: matrix is not positive definite (pivot {pivot} of {n} is {value:e})")]
    NotPositiveDefinite { pivot: usize, n: usize, value: f64 },
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

/// The symbolic Cholesky factor of a sparse symmetric pattern: ordering, the pattern of `L`
/// (strictly lower part, compressed columns, rows ascending) and the row lists used by the
/// left-looking factorisation.
#[derive(Debug, Clone)]
pub struct SymbolicCholesky {
    n: usize,
    /// `perm[k]`: the original index at position `k`.
    perm: Vec<usize>,
    /// `iperm[i]`: the position of original index `i`.
    iperm: Vec<usize>,
    colptr: Vec<usize>,
    rowidx: Vec<usize>,
    /// For row `j`: the columns `k < j` with `L_jk != 0` and the storage position of `L_jk`.
    rowptr: Vec<usize>,
    rowcol: Vec<usize>,
    rowpos: Vec<usize>,
    /// Storage position in `L` of every input edge.
    edge_pos: Vec<usize>,
    ordering: &'static str,
}

/// Symbolic analysis for a fixed permutation: elimination tree and row patterns.
fn symbolic_for(n: usize, adj: &[Vec<usize>], perm: Vec<usize>, name: &'static str) -> SymbolicCholesky {
    let mut iperm = vec![0usize; n];
    for (k, &i) in perm.iter().enumerate() {
        iperm[i] = k;
    }
    // permuted lower pattern by rows: for row k, the columns c < k
    let rows_of = |k: usize| adj[perm[k]].iter().map(|&u| iperm[u]).filter(move |&c| c < k);
    // elimination tree (Liu, with path compression through `ancestor`)
    let mut parent = vec![usize::MAX; n];
    let mut ancestor = vec![usize::MAX; n];
    for k in 0..n {
        for c in rows_of(k) {
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
    // row patterns of L: reach of row k's entries in the tree, stopping at marked nodes
    let mut mark = vec![usize::MAX; n];
    let mut colcount = vec![0usize; n];
    let mut row_lists: Vec<Vec<usize>> = vec![Vec::new(); n];
    for k in 0..n {
        mark[k] = k;
        let mut list = Vec::new();
        for c in rows_of(k) {
            let mut i = c;
            while mark[i] != k {
                mark[i] = k;
                list.push(i);
                colcount[i] += 1;
                i = parent[i];
                debug_assert!(i != usize::MAX);
            }
        }
        list.sort_unstable();
        row_lists[k] = list;
    }
    let mut colptr = vec![0usize; n + 1];
    for j in 0..n {
        colptr[j + 1] = colptr[j] + colcount[j];
    }
    let nnz = colptr[n];
    let mut rowidx = vec![0usize; nnz];
    let mut fill = colptr.clone();
    let mut rowptr = vec![0usize; n + 1];
    let mut rowcol = Vec::with_capacity(nnz);
    let mut rowpos = Vec::with_capacity(nnz);
    // rows visited in increasing k: each column's rows come out ascending
    for (k, list) in row_lists.iter().enumerate() {
        for &c in list {
            let p = fill[c];
            fill[c] += 1;
            rowidx[p] = k;
            rowcol.push(c);
            rowpos.push(p);
        }
        rowptr[k + 1] = rowcol.len();
    }
    SymbolicCholesky { n, perm, iperm, colptr, rowidx, rowptr, rowcol, rowpos, edge_pos: Vec::new(), ordering: name }
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
        let mut sym = match ordering {
            Ordering::Natural => symbolic_for(n, &adj, (0..n).collect(), "natural"),
            Ordering::ReverseCuthillMcKee => symbolic_for(n, &adj, rcm_order(n, edges), "reverse Cuthill-McKee"),
            Ordering::NestedDissection => symbolic_for(n, &adj, nested_dissection_order(n, edges), "nested dissection (BFS levels)"),
            Ordering::Auto => {
                let nd = symbolic_for(n, &adj, nested_dissection_order(n, edges), "nested dissection (BFS levels)");
                let rcm = symbolic_for(n, &adj, rcm_order(n, edges), "reverse Cuthill-McKee");
                if rcm.flops() < nd.flops() {
                    rcm
                } else {
                    nd
                }
            }
            Ordering::Given(p) => {
                let mut seen = vec![false; n];
                if p.len() != n || p.iter().any(|&i| i >= n || std::mem::replace(&mut seen[i], true)) {
                    return Err(SparseError::Pattern(format!("the given ordering is not a permutation of 0..{n}")));
                }
                symbolic_for(n, &adj, p, "given")
            }
        };
        // position of every edge in L: column min(p_i, p_j), row max(p_i, p_j)
        let mut edge_pos = Vec::with_capacity(edges.len());
        for &(i, j) in edges {
            let (a, b) = (sym.iperm[i], sym.iperm[j]);
            let (r, c) = if a > b { (a, b) } else { (b, a) };
            let col = &sym.rowidx[sym.colptr[c]..sym.colptr[c + 1]];
            let off = col.binary_search(&r).expect("every entry of A lies on the pattern of L");
            edge_pos.push(sym.colptr[c] + off);
        }
        sym.edge_pos = edge_pos;
        Ok(sym)
    }

    /// Order of the matrix.
    pub fn n(&self) -> usize {
        self.n
    }
    /// Strictly-lower non-zeros of `L`.
    pub fn nnz_l(&self) -> usize {
        self.colptr[self.n]
    }
    /// Factorisation flops `sum_j |L_{*j}|^2` (multiply-adds, strictly-lower counts).
    pub fn flops(&self) -> f64 {
        (0..self.n).map(|j| ((self.colptr[j + 1] - self.colptr[j]) as f64).powi(2)).sum()
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
        let mut vals = vec![0.0f64; self.nnz_l()];
        for (&p, &v) in self.edge_pos.iter().zip(edge_vals) {
            vals[p] = v;
        }
        let mut ldiag = vec![0.0f64; n];
        let mut x = vec![0.0f64; n];
        for j in 0..n {
            let (c0, c1) = (self.colptr[j], self.colptr[j + 1]);
            let mut xj = diag[self.perm[j]];
            for p in c0..c1 {
                x[self.rowidx[p]] = vals[p];
            }
            for q in self.rowptr[j]..self.rowptr[j + 1] {
                let k = self.rowcol[q];
                let pos = self.rowpos[q];
                let ljk = vals[pos];
                xj -= ljk * ljk;
                let end = self.colptr[k + 1];
                let rows = &self.rowidx[pos + 1..end];
                let lv = &vals[pos + 1..end];
                for (&r, &v) in rows.iter().zip(lv) {
                    // SAFETY-free indexing: r < n by construction
                    x[r] -= ljk * v;
                }
            }
            if !(xj > 0.0) || !xj.is_finite() {
                return Err(SparseError::NotPositiveDefinite { pivot: j, n, value: xj });
            }
            let d = xj.sqrt();
            ldiag[j] = d;
            let inv = 1.0 / d;
            for p in c0..c1 {
                let r = self.rowidx[p];
                vals[p] = x[r] * inv;
                x[r] = 0.0;
            }
        }
        Ok(SparseCholesky { sym: self, diag: ldiag, vals })
    }
}

/// A numeric sparse Cholesky factor `P A P^T = L L^T`.
#[derive(Debug, Clone)]
pub struct SparseCholesky<'a> {
    sym: &'a SymbolicCholesky,
    /// `L_jj` (permuted order).
    diag: Vec<f64>,
    /// Strictly-lower values of `L` on the symbolic pattern.
    vals: Vec<f64>,
}

/// Entries of `A^-1` on the pattern of `L` (diagonal and strictly lower part).
#[derive(Debug, Clone)]
pub struct SelectedInverse<'a> {
    sym: &'a SymbolicCholesky,
    /// `(A^-1)_jj`, permuted order.
    diag: Vec<f64>,
    /// `(A^-1)_ij` at the storage positions of `L`.
    vals: Vec<f64>,
}

impl<'a> SparseCholesky<'a> {
    /// `log det A = 2 sum_j log L_jj`.
    pub fn log_det(&self) -> f64 {
        2.0 * self.diag.iter().map(|d| d.ln()).sum::<f64>()
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

    /// `L^-1 B` in place on a permuted row-major buffer with `m` columns.
    fn forward(&self, buf: &mut [f64], m: usize) {
        let s = self.sym;
        let mut xj = vec![0.0f64; m];
        for j in 0..s.n {
            let inv = 1.0 / self.diag[j];
            for t in 0..m {
                buf[j * m + t] *= inv;
            }
            xj.copy_from_slice(&buf[j * m..(j + 1) * m]);
            for p in s.colptr[j]..s.colptr[j + 1] {
                let r = s.rowidx[p];
                let l = self.vals[p];
                let row = &mut buf[r * m..(r + 1) * m];
                for (y, &x) in row.iter_mut().zip(&xj) {
                    *y -= l * x;
                }
            }
        }
    }

    /// `L^-T B` in place on a permuted row-major buffer with `m` columns.
    fn backward(&self, buf: &mut [f64], m: usize) {
        let s = self.sym;
        let mut acc = vec![0.0f64; m];
        for j in (0..s.n).rev() {
            acc.copy_from_slice(&buf[j * m..(j + 1) * m]);
            for p in s.colptr[j]..s.colptr[j + 1] {
                let r = s.rowidx[p];
                let l = self.vals[p];
                let row = &buf[r * m..(r + 1) * m];
                for (a, &x) in acc.iter_mut().zip(row) {
                    *a -= l * x;
                }
            }
            let inv = 1.0 / self.diag[j];
            for (t, a) in acc.iter().enumerate() {
                buf[j * m + t] = a * inv;
            }
        }
    }

    /// Solves `A X = B` (`B` is n x m, original order).
    pub fn solve(&self, b: ndarray::ArrayView2<f64>) -> ndarray::Array2<f64> {
        let m = b.ncols();
        let mut buf = self.permuted(b);
        self.forward(&mut buf, m);
        self.backward(&mut buf, m);
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
        self.forward(&mut buf, m);
        ndarray::Array2::from_shape_vec((self.sym.n, m), buf).expect("n*m")
    }

    /// Selected inversion: `A^-1` on the diagonal and on the pattern of `L` (module doc).
    pub fn selected_inverse(&self) -> SelectedInverse<'a> {
        let s = self.sym;
        let n = s.n;
        let mut zd = vec![0.0f64; n];
        let mut zv = vec![0.0f64; self.vals.len()];
        let mut map = vec![usize::MAX; n];
        let mut l = Vec::new();
        let mut y = Vec::new();
        for j in (0..n).rev() {
            let (c0, c1) = (s.colptr[j], s.colptr[j + 1]);
            let m = c1 - c0;
            let ljj = self.diag[j];
            l.clear();
            l.extend(self.vals[c0..c1].iter().map(|v| v / ljj));
            y.clear();
            y.resize(m, 0.0);
            for (t, p) in (c0..c1).enumerate() {
                map[s.rowidx[p]] = t;
            }
            // y = Z_II l, Z_II symmetric: diagonal plus each stored pair (a > b) once
            for tb in 0..m {
                let b = s.rowidx[c0 + tb];
                let lb = l[tb];
                let mut yb = zd[b] * lb;
                let mut remaining = m - tb - 1;
                if remaining > 0 {
                    for p in s.colptr[b]..s.colptr[b + 1] {
                        let ta = map[s.rowidx[p]];
                        if ta != usize::MAX {
                            let z = zv[p];
                            y[ta] += z * lb;
                            yb += z * l[ta];
                            remaining -= 1;
                            if remaining == 0 {
                                break;
                            }
                        }
                    }
                }
                y[tb] += yb;
            }
            let mut dot = 0.0;
            for t in 0..m {
                zv[c0 + t] = -y[t];
                dot += l[t] * y[t];
                map[s.rowidx[c0 + t]] = usize::MAX;
            }
            zd[j] = 1.0 / (ljj * ljj) + dot;
        }
        SelectedInverse { sym: s, diag: zd, vals: zv }
    }
}

impl SelectedInverse<'_> {
    /// `(A^-1)_ii` for every `i`, original order.
    pub fn diagonal(&self) -> Vec<f64> {
        let mut out = vec![0.0; self.sym.n];
        for (k, &i) in self.sym.perm.iter().enumerate() {
            out[i] = self.diag[k];
        }
        out
    }

    /// `(A^-1)_ij` on every edge given to [`SymbolicCholesky::analyze`], in that order.
    pub fn edge_values(&self) -> Vec<f64> {
        self.sym.edge_pos.iter().map(|&p| self.vals[p]).collect()
    }

    /// `(A^-1)_ij` if `(i, j)` lies on the diagonal or the pattern of `L`, else `None`.
    pub fn get(&self, i: usize, j: usize) -> Option<f64> {
        let s = self.sym;
        let (a, b) = (s.iperm[i], s.iperm[j]);
        if a == b {
            return Some(self.diag[a]);
        }
        let (r, c) = if a > b { (a, b) } else { (b, a) };
        let col = &s.rowidx[s.colptr[c]..s.colptr[c + 1]];
        col.binary_search(&r).ok().map(|off| self.vals[s.colptr[c] + off])
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
            for ord in [Ordering::Natural, Ordering::ReverseCuthillMcKee, Ordering::NestedDissection, Ordering::Auto] {
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
