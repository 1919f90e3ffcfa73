//! Tests of the sparse Cholesky against dense LAPACK.

use super::*;
use crate::Cholesky;
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

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
    eprintln!(
        "grid 30x30: nnz(L) natural {} rcm {} nd {}; flops natural {:.3e} rcm {:.3e} nd {:.3e}",
        nat.nnz_l(),
        rcm.nnz_l(),
        nd.nnz_l(),
        nat.flops(),
        rcm.flops(),
        nd.flops()
    );
    assert!(nd.flops() < rcm.flops(), "nd {} rcm {}", nd.flops(), rcm.flops());
}

/// The symmetrised K-NN pattern `(i, j)`, `i < j`, by brute force (`i ~ j` iff either is among
/// the other's k nearest; ties to the lower index). Test-only: the library's K-NN search lives
/// in `structdr-numerics`, above this crate.
fn knn_pattern(x: ndarray::ArrayView2<f64>, k: usize) -> Vec<(usize, usize)> {
    let n = x.nrows();
    let mut set = std::collections::BTreeSet::new();
    for i in 0..n {
        let mut d: Vec<(f64, usize)> = (0..n).filter(|&j| j != i).map(|j| ((&x.row(i) - &x.row(j)).mapv(|v| v * v).sum(), j)).collect();
        d.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for &(_, j) in &d[..k] {
            set.insert((i.min(j), i.max(j)));
        }
    }
    set.into_iter().collect()
}

/// Symmetrised K-NN graph of `n` uniform points in `[0, 1]^dim` (intrinsic dimension `dim`:
/// large fronts, the dense BLAS-3 path) with SPD values on it: either an SPL-like
/// `Q = L_S + c I` (`s >= 0`, some zero) or mixed-sign weights made diagonally dominant.
fn knn_spd(n: usize, dim: usize, k: usize, seed: u64, laplacian: bool) -> (Vec<f64>, Vec<(usize, usize)>, Vec<f64>) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let x = Array2::from_shape_fn((n, dim), |_| rng.gen_range(0.0..1.0));
    let edges = knn_pattern(x.view(), k);
    let mut diag: Vec<f64> = vec![0.0; n];
    let vals: Vec<f64> = edges
        .iter()
        .map(|&(i, j)| {
            let w: f64 = if laplacian {
                if rng.gen_bool(0.2) {
                    0.0
                } else {
                    -rng.gen_range(0.0..3.0)
                }
            } else {
                rng.gen_range(-1.0..1.0)
            };
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
            // every entry of A^-1 from block solves (n > INVERSE_BLOCK: several blocks, the last
            // one partial), symmetric and the same on 1 and 3 threads, bit for bit
            let inverse_on = |threads: usize| {
                rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| {
                    let mut z = vec![f64::NAN; n * n];
                    f.dense_inverse_into(&mut z);
                    Array2::from_shape_vec((n, n), z).unwrap()
                })
            };
            let full = inverse_on(3);
            let err = max_abs(&(&full - &inv));
            assert!(err < 1e-10 * sinv, "{ord:?} dense inverse error {err:e}");
            assert_eq!(inverse_on(1), full, "{ord:?}: the thread count changed the inverse");
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

#[test]
fn compressed_adjacency_equals_sorted_deduplicated_lists() {
    let (_, mut edges, _) = random_spd(300, 1500, 11);
    // repeats in both orientations and a self-loop: listed once
    edges.push((edges[0].1, edges[0].0));
    edges.push((edges[5].0, edges[5].1));
    edges.push((7, 7));
    let adj = ordering::Adjacency::new(300, &edges);
    let mut naive = vec![Vec::new(); 300];
    for &(i, j) in &edges {
        naive[i].push(j);
        naive[j].push(i);
    }
    for (v, list) in naive.iter_mut().enumerate() {
        list.sort_unstable();
        list.dedup();
        assert_eq!(&adj[v], &list[..], "vertex {v}");
    }
    assert_eq!(adj.nnz(), naive.iter().map(Vec::len).sum::<usize>());
}

#[test]
fn reusing_an_ordering_equals_the_given_analysis_and_falls_back_to_amd() {
    let (diag, edges, vals) = random_spd(400, 1600, 12);
    let amd = SymbolicCholesky::analyze(400, &edges, Ordering::ApproximateMinimumDegree).unwrap();
    // a cheap enough permutation is kept: the same analysis as `Given` (flops judged before it)
    let (kept, reused) = SymbolicCholesky::analyze_reusing(400, &edges, amd.perm(), amd.flops()).unwrap();
    let given = SymbolicCholesky::analyze(400, &edges, Ordering::Given(amd.perm().to_vec())).unwrap();
    assert!(reused);
    assert_eq!((kept.perm(), kept.nnz_l(), kept.flops(), kept.n_supernodes()), (given.perm(), given.nnz_l(), given.flops(), given.n_supernodes()));
    let (fa, fb) = (kept.factor(&diag, &vals).unwrap(), given.factor(&diag, &vals).unwrap());
    assert_eq!(fa.log_det().to_bits(), fb.log_det().to_bits());
    // the natural order costs far more than AMD on a random pattern: rejected, AMD analysed
    let natural: Vec<usize> = (0..400).collect();
    let nat = SymbolicCholesky::analyze(400, &edges, Ordering::Natural).unwrap();
    assert!(nat.flops() > 1.25 * amd.flops());
    let (fresh, reused) = SymbolicCholesky::analyze_reusing(400, &edges, &natural, 1.25 * amd.flops()).unwrap();
    assert!(!reused);
    assert_eq!((fresh.perm(), fresh.flops()), (amd.perm(), amd.flops()));
    // the same checks as `analyze`
    assert!(SymbolicCholesky::analyze_reusing(3, &[(0, 1), (1, 0)], &[0, 1, 2], 1e9).is_err());
    assert!(SymbolicCholesky::analyze_reusing(3, &[(0, 1)], &[0, 0, 1], 1e9).is_err());
}
