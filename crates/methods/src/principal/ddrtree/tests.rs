//! DDRTree unit tests: helpers, the soft assignment's k-d tree search against the full scan,
//! and the sparse factorisation of M against the dense one (iterates equal to 1e-10).
use super::*;
use structdr_linalg::SpdFactor;

#[test]
fn monocle_rule_values() {
    assert_eq!(monocle_ncenter(8000), 132);
    assert_eq!(monocle_ncenter(100), 100);
    assert_eq!(monocle_ncenter(1000), 120);
}

#[test]
fn r_seq_rows_matches_r() {
    // R: floor(seq(1, 10, length.out = 4)) = 1 4 7 10
    assert_eq!(r_seq_rows(10, 4), vec![0, 3, 6, 9]);
    // seq(1, 7, length.out = 3) = 1 4 7 ; seq(1, 8, length.out = 3) = 1 4.5 8 -> 1 4 8
    assert_eq!(r_seq_rows(8, 3), vec![0, 3, 7]);
}

#[test]
fn spd_factor_solves() {
    let m = ndarray::array![[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]];
    let b = ndarray::array![[1.0, 0.0], [2.0, 1.0], [3.0, -1.0]];
    let f = SpdFactor::new(m.clone(), "M").unwrap();
    let x = f.solve(b.view());
    let res = m.dot(&x) - b;
    assert!(res.iter().all(|v| v.abs() < 1e-13));
}

#[test]
fn subspace_matches_dense() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    let a = Array2::from_shape_fn((60, 12), |(_, j)| rng.gen_range(-1.0..1.0) * (12 - j) as f64);
    let g = a.t().dot(&a);
    let dense = top_eigvecs_dense(g.view(), 3).unwrap();
    let sub = top_eigvecs_subspace(12, 3, |v| g.dot(&v), None);
    assert!((&dense - &sub).iter().all(|v| v.abs() < 1e-7), "{dense}\n{sub}");
}

#[test]
fn assignments_are_softmax_rows() {
    let z = ndarray::array![[0.0, 0.0], [1.0, 0.0], [0.5, 0.1]];
    let c = ndarray::array![[0.0, 0.0], [1.0, 0.0]];
    let a = Assign::compute(z.view(), c.view(), 0.5, 0.0).to_dense();
    for i in 0..3 {
        let d: Vec<f64> = (0..2).map(|k| sq(z.row(i), c.row(k))).collect();
        let e: Vec<f64> = d.iter().map(|v| (-v / 0.5).exp()).collect();
        let s: f64 = e.iter().sum();
        for k in 0..2 {
            assert!((a[[i, k]] - e[k] / s).abs() < 1e-15);
        }
    }
}

fn rel_diff(a: &Array2<f64>, b: &Array2<f64>) -> f64 {
    let num = (a - b).iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let den = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    num / den.max(f64::MIN_POSITIVE)
}

/// A noisy 3-branch tree (as the benchmark's), n x dd.
fn branches(n: usize, dd: usize, seed: u64) -> Array2<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let dirs = Array2::from_shape_fn((3, dd), |_| rng.gen_range(-1.0..1.0));
    Array2::from_shape_fn((n, dd), |(i, j)| dirs[[i % 3, j]] * ((i * 7919) % n) as f64 / n as f64 * 3.0)
        + Array2::from_shape_fn((n, dd), |_| 0.05 * rng.gen_range(-1.0..1.0))
}

#[test]
fn kd_tree_assignments_equal_the_full_scan_bit_for_bit() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(8);
    for (n, k, d, sigma, thr) in [(900, 2100, 2, 1e-3, 1e-12), (700, 2500, 3, 0.05, 1e-12), (500, 2048, 2, 1e-2, 0.0), (300, 3000, 1, 1e-4, 1e-6)] {
        let z = Array2::from_shape_fn((n, d), |_| rng.gen_range(-1.0..1.0));
        // centres near the points, some duplicated (ties in the row minimum)
        let mut c = Array2::from_shape_fn((k, d), |_| rng.gen_range(-1.0..1.0));
        for r in 0..20 {
            let row = c.row(r).to_owned();
            c.row_mut(k - 1 - r).assign(&row);
        }
        let full = Assign::compute_with(z.view(), c.view(), sigma, thr, false).to_dense();
        let kd = Assign::compute_with(z.view(), c.view(), sigma, thr, true).to_dense();
        assert!(full.iter().zip(kd.iter()).all(|(a, b)| a.to_bits() == b.to_bits()), "n = {n}, K = {k}, d = {d}, sigma = {sigma}");
        assert!(use_kd_tree(k, d));
    }
}

/// A fit with M factored densely and one with M factored sparsely: the same iterates to 1e-10
/// (relative, max norm), the same trees, and the same objective history.
fn sparse_equals_dense(m: DdrTree, x: &Array2<f64>) {
    let dense = DdrTree { m_solver: MSolver::Dense, ..m.clone() }.fit_full(x.view(), 0).unwrap();
    let sparse = DdrTree { m_solver: MSolver::Sparse, ..m.clone() }.fit_full(x.view(), 0).unwrap();
    assert!(dense.notes.iter().any(|n| n.contains("sparse Cholesky in 0 and densely in")), "{:?}", dense.notes);
    assert!(sparse.notes.iter().any(|n| n.contains("densely in 0 update")), "{:?}", sparse.notes);
    assert_eq!(dense.iterations, sparse.iterations);
    for (a, b) in [(&dense.z, &sparse.z), (&dense.centres, &sparse.centres), (&dense.w, &sparse.w)] {
        let e = rel_diff(a, b);
        assert!(e <= 1e-10, "iterates differ by {e:e}");
    }
    assert_eq!(dense.tree.iter().map(|e| (e.0, e.1)).collect::<Vec<_>>(), sparse.tree.iter().map(|e| (e.0, e.1)).collect::<Vec<_>>());
    for (f, g) in dense.history.iter().zip(&sparse.history) {
        assert!((f - g).abs() <= 1e-10 * f.abs(), "{f} vs {g}");
    }
}

#[test]
fn sparse_m_iterates_equal_the_dense_path() {
    // K = N above SPARSE_MIN_K with sparse R (the default sigma), 6 iterations
    let x = branches(640, 12, 2);
    sparse_equals_dense(DdrTree { tol: 0.0, max_iter: 6, ..DdrTree::drtree(2) }, &x);
    // a wider sigma (R dense enough to be stored dense), d = 3
    sparse_equals_dense(DdrTree { tol: 0.0, max_iter: 4, sigma: 0.5, ..DdrTree::drtree(3) }, &x);
    // K < N centres (k-means start) and lambda = 0, where empty columns of R get identity rows
    let x = branches(900, 8, 4);
    sparse_equals_dense(DdrTree { tol: 0.0, max_iter: 4, ..DdrTree::ddrtree(2, Centres::Count(600)) }, &x);
    sparse_equals_dense(DdrTree { tol: 0.0, max_iter: 3, lambda: Some(0.0), ..DdrTree::ddrtree(2, Centres::Count(600)) }, &x);
}

#[test]
fn auto_chooses_the_sparse_factor_for_sparse_assignments() {
    let x = branches(800, 10, 3);
    let f = DdrTree { tol: 0.0, max_iter: 2, ..DdrTree::drtree(2) }.fit_full(x.view(), 0).unwrap();
    assert!(f.notes.iter().any(|n| n.contains("by sparse Cholesky in 2 and densely in 0")), "{:?}", f.notes);
}

#[test]
fn column_products_equal_the_row_scatter_bit_for_bit() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
    let (n, k) = (700, 900);
    let z = Array2::from_shape_fn((n, 2), |_| rng.gen_range(-1.0..1.0));
    let c = Array2::from_shape_fn((k, 2), |_| rng.gen_range(-1.0..1.0));
    let assign = Assign::compute(z.view(), c.view(), 3e-3, 1e-12);
    assert!(matches!(assign, Assign::Sparse { .. }));
    let tree = spanning_tree(c.view());
    let cols = Columns::new(&assign, &RootedTree::new(k, &tree)).expect("sparse R");
    // the locality order visits every centre once
    let mut seen = cols.order.clone();
    seen.sort_unstable();
    assert_eq!(seen, (0..k).collect::<Vec<_>>());
    let x = Array2::from_shape_fn((n, 7), |_| rng.gen_range(-1.0..1.0));
    let by_cols = assign.rt_mul(x.view(), Some(&cols));
    // the reference: the rows of R scattered in sample order, the same sums in the same order
    let mut by_rows = Array2::<f64>::zeros((k, 7));
    assign.for_each(|i, kk, v| by_rows.row_mut(kk).scaled_add(v, &x.row(i)));
    assert!(by_cols.iter().zip(by_rows.iter()).all(|(a, b)| a.to_bits() == b.to_bits()));
    // and the dense R's GEMM agrees to rounding
    let dense = assign.to_dense().t().dot(&x);
    assert!(rel_diff(&dense, &by_cols) < 1e-13);
}
