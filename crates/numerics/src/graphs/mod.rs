//! Graphs on samples or centres: connected components and their repair, the symmetrised K-NN
//! graph under a [`Disconnected`] policy, minimum spanning trees, rooted-tree solves and the one
//! graph Laplacian assembly.
//!
//! - [`connected_components`], [`component_sizes`].
//! - [`connect_components`]: joins components along a minimum spanning tree of the components,
//!   each tree edge being the shortest point pair between the two parts (Borůvka on the point
//!   graph with free intra-component edges; ties broken by `(distance, i, j)` so it is unique).
//! - [`neighbourhood_graph`]: K-NN, symmetrisation, component check and repair (LE and LLE).
//! - [`mst_prim`], [`mst_sq_euclidean`], [`minimum_spanning_tree`]: minimum spanning tree of a
//!   complete graph (Prim, O(n^2), deterministic ties, zero-length edges kept);
//!   [`emst_sq_euclidean`]: the Euclidean one in a few dimensions by Borůvka on a k-d tree.
//! - [`RootedTree`]: solves `(w L_T + diag(g)) X = B` for a spanning tree T in O(K cols).
//! - [`barycenter_weights`]: LLE's reconstruction of a sample from its neighbours.
//! - [`laplacian`]: `L = D - W` from an edge list (dense, the one assembly every method uses).

mod components;
pub mod laplacian;
mod mst;
mod neighbourhood;
mod reconstruction;
mod tree;

pub use components::{component_sizes, connect_components, connected_components};
pub use mst::{emst_sq_euclidean, minimum_spanning_tree, mst_prim, mst_sq_euclidean};
pub use neighbourhood::{neighbourhood_graph, Disconnected, NeighbourGraph};
pub use reconstruction::barycenter_weights;
pub use tree::RootedTree;

#[cfg(test)]
mod tests {
    use super::components::find;
    use super::*;
    use crate::dist::exact_sq_dist;
    use crate::neighbours::{knn, symmetrised_edges};
    use ndarray::{array, Array2};

    #[test]
    fn components_are_numbered_by_lowest_vertex() {
        let edges = vec![(3, 4, 1.0), (0, 2, 1.0), (1, 5, 1.0)];
        let (labels, count) = connected_components(6, &edges);
        assert_eq!(count, 3);
        assert_eq!(labels, vec![0, 1, 0, 2, 2, 1]);
        assert_eq!(component_sizes(&labels, count), vec![2, 2, 2]);
    }

    #[test]
    fn connect_joins_along_the_shortest_pairs() {
        // Three clusters on a line: {0,1} near 0, {2,3} near 10, {4,5} near 30.
        let x = array![[0.0], [1.0], [10.0], [11.0], [30.0], [31.0]];
        let labels = vec![0, 0, 1, 1, 2, 2];
        let added = connect_components(x.view(), &labels, 3);
        assert_eq!(added, vec![(1, 2, 81.0), (3, 4, 361.0)]);
    }

    #[test]
    fn symmetrised_edges_are_sorted_and_unique() {
        let x = array![[0.0], [1.0], [3.0], [7.0]];
        let g = knn(x.view(), 1).unwrap();
        assert_eq!(g.indices.column(0).to_vec(), vec![1, 0, 1, 2]);
        assert_eq!(symmetrised_edges(&g), vec![(0, 1, 1.0), (1, 2, 4.0), (2, 3, 16.0)]);
    }

    #[test]
    fn minimum_spanning_tree_matches_brute_force() {
        use rand::{Rng, SeedableRng};
        // Every spanning tree of K = 6 points (C(15, 5) = 3003 edge subsets), several point sets,
        // one with duplicates (zero-length edges) and one with ties (a unit square grid).
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(5);
        let mut sets: Vec<Array2<f64>> = (0..4).map(|_| Array2::from_shape_fn((6, 2), |_| rng.gen::<f64>())).collect();
        let mut dup = sets[0].clone();
        dup.row_mut(3).assign(&sets[0].row(1).to_owned());
        sets.push(dup);
        sets.push(ndarray::array![[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 1.0]]);
        for x in &sets {
            let k = x.nrows();
            let d = Array2::from_shape_fn((k, k), |(i, j)| exact_sq_dist(x.row(i), x.row(j)));
            let t = minimum_spanning_tree(d.view());
            assert_eq!(t.len(), k - 1);
            // spans: union-find over the returned edges gives one component
            let mut parent: Vec<usize> = (0..k).collect();
            for &(i, j, w) in &t {
                assert!(i < j);
                assert_eq!(w, d[[i, j]]);
                let (a, b) = (find(&mut parent, i), find(&mut parent, j));
                assert_ne!(a, b, "cycle");
                parent[a] = b;
            }
            let total: f64 = t.iter().map(|e| e.2).sum();
            let pairs: Vec<(usize, usize)> = (0..k).flat_map(|i| ((i + 1)..k).map(move |j| (i, j))).collect();
            let mut best = f64::INFINITY;
            for mask in 0u32..(1 << pairs.len()) {
                if mask.count_ones() as usize != k - 1 {
                    continue;
                }
                let mut par: Vec<usize> = (0..k).collect();
                let mut ok = true;
                let mut w = 0.0;
                for (b, &(i, j)) in pairs.iter().enumerate() {
                    if mask >> b & 1 == 1 {
                        let (a, c) = (find(&mut par, i), find(&mut par, j));
                        if a == c {
                            ok = false;
                            break;
                        }
                        par[a] = c;
                        w += d[[i, j]];
                    }
                }
                if ok && w < best {
                    best = w;
                }
            }
            assert!((total - best).abs() <= 1e-12 * best.max(1.0), "prim {total} vs brute force {best}");
        }
        // Determinism with ties: the unit grid always gives the same tree.
        let g = &sets[5];
        let d = Array2::from_shape_fn((6, 6), |(i, j)| exact_sq_dist(g.row(i), g.row(j)));
        assert_eq!(minimum_spanning_tree(d.view()), vec![(0, 1, 1.0), (0, 3, 1.0), (1, 2, 1.0), (1, 4, 1.0), (2, 5, 1.0)]);
    }

    #[test]
    fn euclidean_mst_equals_prim() {
        use rand::{Rng, SeedableRng};
        let canon = |t: Vec<(usize, usize, f64)>| {
            let mut v: Vec<(usize, usize, u64)> = t.into_iter().map(|(i, j, w)| (i.min(j), i.max(j), w.to_bits())).collect();
            v.sort_unstable();
            v
        };
        let spanning = |k: usize, t: &[(usize, usize, f64)]| {
            let mut parent: Vec<usize> = (0..k).collect();
            t.len() == k - 1
                && t.iter().all(|&(i, j, _)| {
                    let (a, b) = (find(&mut parent, i), find(&mut parent, j));
                    parent[a] = b;
                    a != b
                })
        };
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(11);
        for (k, d) in [(2, 2), (3, 1), (50, 2), (1000, 2), (600, 3), (300, 6)] {
            // distinct weights (random reals): the minimum spanning tree is unique, same edges
            let x = Array2::from_shape_fn((k, d), |_| rng.gen_range(-1.0..1.0));
            let e = emst_sq_euclidean(x.view());
            assert!(spanning(k, &e));
            assert_eq!(canon(e), canon(mst_sq_euclidean(x.view())), "K = {k}, d = {d}");
        }
        for (k, d) in [(400, 2), (300, 3)] {
            // ties and duplicates (a coarse lattice): a minimum spanning tree, the same total weight
            let x = Array2::from_shape_fn((k, d), |_| rng.gen_range(0..5) as f64);
            let e = emst_sq_euclidean(x.view());
            assert!(spanning(k, &e));
            let total = |t: &[(usize, usize, f64)]| t.iter().map(|e| e.2).sum::<f64>();
            assert_eq!(total(&e), total(&mst_sq_euclidean(x.view())));
            // deterministic whatever the thread count
            let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap().install(|| emst_sq_euclidean(x.view()));
            let three = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap().install(|| emst_sq_euclidean(x.view()));
            assert_eq!(canon(one), canon(e.clone()));
            assert_eq!(canon(three), canon(e));
        }
    }

    #[test]
    fn tree_solve_matches_dense() {
        let k = 7;
        let edges = vec![(0, 1, 0.0), (1, 2, 0.0), (1, 3, 0.0), (0, 4, 0.0), (4, 5, 0.0), (4, 6, 0.0)];
        let g = [0.5, 0.0, 1.5, 2.0, 0.0, 0.3, 1.0];
        let w = 0.7;
        let t = RootedTree::new(k, &edges);
        let rhs = Array2::from_shape_fn((k, 2), |(i, j)| (i as f64 + 1.0) * if j == 0 { 1.0 } else { -0.5 });
        let x = t.solve(w, &g, rhs.clone(), Array2::zeros((k, 2)).view());
        let mut a = Array2::<f64>::zeros((k, k));
        for &(u, v, _) in &edges {
            a[[u, v]] -= w;
            a[[v, u]] -= w;
            a[[u, u]] += w;
            a[[v, v]] += w;
        }
        for i in 0..k {
            a[[i, i]] += g[i];
        }
        let res = a.dot(&x) - rhs;
        assert!(res.iter().all(|v| v.abs() < 1e-12), "{res}");
    }

    #[test]
    fn preorder_visits_subtrees_contiguously() {
        // 0 - {1 - {2, 3}, 4 - {5, 6}}, edges listed in another order
        let edges = vec![(4, 6, 0.0), (1, 3, 0.0), (0, 4, 0.0), (2, 1, 0.0), (0, 1, 0.0), (5, 4, 0.0)];
        assert_eq!(RootedTree::new(7, &edges).preorder(), vec![0, 1, 2, 3, 4, 5, 6]);
        // a path rooted at 0 from its middle
        let path = vec![(0, 1, 0.0), (0, 2, 0.0), (1, 3, 0.0), (2, 4, 0.0)];
        assert_eq!(RootedTree::new(5, &path).preorder(), vec![0, 1, 3, 2, 4]);
    }
}
