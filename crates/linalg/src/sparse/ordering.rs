//! Fill-reducing orderings: reverse Cuthill-McKee, nested dissection by BFS level structures,
//! approximate minimum degree (SuiteSparse AMD through the `amd` crate).

use std::collections::VecDeque;

/// Adjacency lists of the undirected graph of `edges` in compressed form: the neighbours of `v`
/// are `adj[v]`, sorted and duplicate-free (a self-loop `(i, i)` lists `i` once).
///
/// Built by two counting passes (bucket by one end, then transpose: sources in increasing order
/// give sorted lists) in O(n + |edges|) without a per-vertex allocation or sort.
pub(super) struct Adjacency {
    ptr: Vec<usize>,
    idx: Vec<usize>,
}

impl Adjacency {
    pub(super) fn new(n: usize, edges: &[(usize, usize)]) -> Adjacency {
        assert!(n < u32::MAX as usize, "Adjacency: too many vertices");
        let mut start = vec![0usize; n + 1];
        for &(i, j) in edges {
            start[i + 1] += 1;
            start[j + 1] += 1;
        }
        for v in 0..n {
            start[v + 1] += start[v];
        }
        // both directions of every edge, bucketed by source, in edge order
        let mut fill = start[..n].to_vec();
        let mut by_source = vec![0u32; start[n]];
        for &(i, j) in edges {
            by_source[fill[i]] = j as u32;
            fill[i] += 1;
            by_source[fill[j]] = i as u32;
            fill[j] += 1;
        }
        // the transpose of a symmetric multigraph has the same lists; sources in increasing
        // order make every list sorted
        fill.copy_from_slice(&start[..n]);
        let mut idx = vec![0usize; start[n]];
        for u in 0..n {
            for &v in &by_source[start[u]..start[u + 1]] {
                idx[fill[v as usize]] = u;
                fill[v as usize] += 1;
            }
        }
        drop(by_source);
        // drop repeats in place (the write position never passes the read position)
        let mut ptr = vec![0usize; n + 1];
        let mut w = 0;
        for v in 0..n {
            let first = w;
            for r in start[v]..start[v + 1] {
                let u = idx[r];
                if w == first || idx[w - 1] != u {
                    idx[w] = u;
                    w += 1;
                }
            }
            ptr[v + 1] = w;
        }
        idx.truncate(w);
        Adjacency { ptr, idx }
    }

    /// Number of vertices.
    pub(super) fn n(&self) -> usize {
        self.ptr.len() - 1
    }

    /// Total length of the lists (twice the distinct edges, plus one per self-loop).
    pub(super) fn nnz(&self) -> usize {
        self.idx.len()
    }
}

impl std::ops::Index<usize> for Adjacency {
    type Output = [usize];
    fn index(&self, v: usize) -> &[usize] {
        &self.idx[self.ptr[v]..self.ptr[v + 1]]
    }
}

/// Vertex marks that are all cleared in O(1) ([`Marks::clear`]): `mark[v] == epoch` means marked
/// since the last clear (a per-pass hash set would cost a hash per visit).
pub(super) struct Marks {
    mark: Vec<u32>,
    epoch: u32,
}

impl Marks {
    pub(super) fn new(n: usize) -> Marks {
        Marks { mark: vec![0; n], epoch: 1 }
    }
    /// Unmarks every vertex.
    pub(super) fn clear(&mut self) {
        if self.epoch == u32::MAX {
            self.mark.fill(0);
            self.epoch = 0;
        }
        self.epoch += 1;
    }
    /// Marks `v`; whether it was unmarked.
    pub(super) fn insert(&mut self, v: usize) -> bool {
        let fresh = self.mark[v] != self.epoch;
        self.mark[v] = self.epoch;
        fresh
    }
    pub(super) fn contains(&self, v: usize) -> bool {
        self.mark[v] == self.epoch
    }
}

/// BFS from `root` over the vertices with `mask[v] == tag`; returns the vertices in BFS order and
/// the level of each (levels stored in `level`). `seen` is scratch (cleared here).
pub(super) fn bfs(adj: &Adjacency, root: usize, mask: &[u32], tag: u32, level: &mut [usize], seen: &mut Marks) -> Vec<usize> {
    let mut order = vec![root];
    level[root] = 0;
    seen.clear();
    seen.insert(root);
    let mut head = 0;
    while head < order.len() {
        let v = order[head];
        head += 1;
        for &u in &adj[v] {
            if mask[u] == tag && seen.insert(u) {
                level[u] = level[v] + 1;
                order.push(u);
            }
        }
    }
    order
}

/// A pseudo-peripheral vertex of the component of `start` (George & Liu: repeat BFS from a vertex
/// of the last level with the smallest degree while the eccentricity grows).
pub(super) fn pseudo_peripheral(adj: &Adjacency, start: usize, mask: &[u32], tag: u32, level: &mut [usize], seen: &mut Marks) -> (usize, Vec<usize>) {
    let mut root = start;
    let mut order = bfs(adj, root, mask, tag, level, seen);
    let mut ecc = level[*order.last().expect("non-empty")];
    loop {
        let last = level[*order.last().expect("non-empty")];
        let cand = order
            .iter()
            .copied()
            .filter(|&v| level[v] == last)
            .min_by_key(|&v| (adj[v].iter().filter(|&&u| mask[u] == tag).count(), v))
            .expect("non-empty level");
        let o2 = bfs(adj, cand, mask, tag, level, seen);
        let e2 = level[*o2.last().expect("non-empty")];
        if e2 > ecc {
            root = cand;
            order = o2;
            ecc = e2;
        } else {
            // restore the levels of the kept root
            order = bfs(adj, root, mask, tag, level, seen);
            return (root, order);
        }
    }
}

/// Reverse Cuthill-McKee order of the vertices `verts` (all carrying `mask == tag`).
/// `seen` and `placed` are scratch (`placed` is cleared here).
pub(super) fn rcm_subset(
    adj: &Adjacency,
    verts: &[usize],
    mask: &[u32],
    tag: u32,
    level: &mut [usize],
    out: &mut Vec<usize>,
    seen: &mut Marks,
    placed: &mut Marks,
) {
    placed.clear();
    let deg = |v: usize| adj[v].iter().filter(|&&u| mask[u] == tag).count();
    let mut sorted: Vec<usize> = verts.to_vec();
    sorted.sort_unstable();
    let start_len = out.len();
    for &s in &sorted {
        if placed.contains(s) {
            continue;
        }
        let (root, _) = pseudo_peripheral(adj, s, mask, tag, level, seen);
        let comp_start = out.len();
        let mut q = VecDeque::new();
        q.push_back(root);
        placed.insert(root);
        while let Some(v) = q.pop_front() {
            out.push(v);
            let mut nb: Vec<usize> = adj[v].iter().copied().filter(|&u| mask[u] == tag && !placed.contains(u)).collect();
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
    rcm_with(&Adjacency::new(n, edges))
}

pub(super) fn rcm_with(adj: &Adjacency) -> Vec<usize> {
    let n = adj.n();
    let mask = vec![0u32; n];
    let mut level = vec![0usize; n];
    let verts: Vec<usize> = (0..n).collect();
    let mut out = Vec::with_capacity(n);
    rcm_subset(adj, &verts, &mask, 0, &mut level, &mut out, &mut Marks::new(n), &mut Marks::new(n));
    out
}

/// Nested dissection by BFS level structures (see the module doc).
pub fn nested_dissection_order(n: usize, edges: &[(usize, usize)]) -> Vec<usize> {
    nested_dissection_with(&Adjacency::new(n, edges))
}

pub(super) fn nested_dissection_with(adj: &Adjacency) -> Vec<usize> {
    const LEAF: usize = 64;
    let n = adj.n();
    let mut mask = vec![0u32; n];
    let mut level = vec![0usize; n];
    let (mut seen, mut placed) = (Marks::new(n), Marks::new(n));
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
                    rcm_subset(adj, &verts, &mask, tag, &mut level, &mut out, &mut seen, &mut placed);
                    continue;
                }
                let start = *verts.iter().min().expect("non-empty");
                let (_, order) = pseudo_peripheral(adj, start, &mask, tag, &mut level, &mut seen);
                if order.len() < verts.len() {
                    // disconnected: the component of `start` and the rest are independent
                    placed.clear();
                    for &v in &order {
                        placed.insert(v);
                    }
                    let rest: Vec<usize> = verts.iter().copied().filter(|&v| !placed.contains(v)).collect();
                    stack.push(Task::Part(rest));
                    stack.push(Task::Part(order));
                    continue;
                }
                let nlev = level[*order.last().expect("non-empty")] + 1;
                if nlev < 3 {
                    // no useful separator (a near-clique): order it by RCM
                    rcm_subset(adj, &verts, &mask, tag, &mut level, &mut out, &mut seen, &mut placed);
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
    amd_with(&Adjacency::new(n, edges))
}

pub(super) fn amd_with(adj: &Adjacency) -> Vec<usize> {
    let n = adj.n();
    if n == 0 {
        return Vec::new();
    }
    let (p, _, _) = amd::order(n, &adj.ptr, &adj.idx, &amd::Control::default()).expect("AMD: the adjacency lists are sorted, duplicate-free and in range");
    p
}
