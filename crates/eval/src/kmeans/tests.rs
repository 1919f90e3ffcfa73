//! The pruned Lloyd path against the brute-force reference, bit for bit.

use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::*;

fn normal(rng: &mut Xoshiro256PlusPlus) -> f64 {
    // Box-Muller (rand_distr is a dev-dependency of the integration tests only)
    let u1: f64 = 1.0 - rng.gen::<f64>();
    let u2: f64 = rng.gen::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// `n` points around `c` Gaussian centres (spread `spread`) in `dim` dimensions.
fn blobs(n: usize, dim: usize, c: usize, spread: f64, seed: u64) -> Array2<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let centres = Array2::from_shape_fn((c, dim), |_| spread * normal(&mut rng));
    Array2::from_shape_fn((n, dim), |(i, d)| centres[[i % c, d]] + normal(&mut rng))
}

/// Integer points of `{0..side}^dim`, drawn with replacement: duplicates and exact distance ties.
fn grid(n: usize, dim: usize, side: u32, seed: u64) -> Array2<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    Array2::from_shape_fn((n, dim), |_| f64::from(rng.gen_range(0..side)))
}

fn uniform(n: usize, dim: usize, seed: u64) -> Array2<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    Array2::from_shape_fn((n, dim), |_| rng.gen::<f64>())
}

fn bits(x: &[f64]) -> Vec<u64> {
    x.iter().map(|v| v.to_bits()).collect()
}

/// One run of both paths on `y` as given (no scaling): every output bit equal.
fn same_fit(y: &Array2<f64>, k: usize, seed: u64, opts: &KmeansOptions, what: &str) -> KmeansFit {
    let y = y.as_standard_layout().into_owned();
    let a = fit_unchecked(&y, k, seed, opts, Path::Pruned).unwrap();
    let b = fit_unchecked(&y, k, seed, opts, Path::BruteForce).unwrap();
    assert_eq!(a.labels, b.labels, "{what}: labels, seed {seed}");
    assert_eq!(bits(a.centroids.as_slice().unwrap()), bits(b.centroids.as_slice().unwrap()), "{what}: centroids, seed {seed}");
    assert_eq!(a.iterations, b.iterations, "{what}: iterations, seed {seed}");
    assert_eq!(a.sse.to_bits(), b.sse.to_bits(), "{what}: sse, seed {seed}");
    assert_eq!(a.sum_dist.to_bits(), b.sum_dist.to_bits(), "{what}: sum_dist, seed {seed}");
    a
}

fn same_protocol(y: &Array2<f64>, labels: &[i64], k: usize, restarts: usize, seed: u64, opts: &KmeansOptions, what: &str) {
    let a = kmeans_protocol_with(y.view(), labels, k, restarts, seed, opts).unwrap();
    let b = kmeans_protocol_brute_force(y.view(), labels, k, restarts, seed, opts).unwrap();
    assert_eq!(a.runs.len(), b.runs.len());
    for (ra, rb) in a.runs.iter().zip(&b.runs) {
        assert_eq!(ra.seed, rb.seed);
        assert_eq!(ra.iterations, rb.iterations, "{what}");
        for (x, z) in [(ra.sse, rb.sse), (ra.sum_dist, rb.sum_dist), (ra.acc, rb.acc), (ra.nmi, rb.nmi)] {
            assert_eq!(x.to_bits(), z.to_bits(), "{what}: run {}", ra.seed);
        }
    }
    assert_eq!(a.best_sse_run, b.best_sse_run);
    for (x, z) in [
        (a.acc_mean, b.acc_mean),
        (a.acc_std, b.acc_std),
        (a.nmi_mean, b.nmi_mean),
        (a.nmi_std, b.nmi_std),
        (a.acc_best_sse, b.acc_best_sse),
        (a.nmi_best_sse, b.nmi_best_sse),
    ] {
        assert_eq!(x.to_bits(), z.to_bits(), "{what}");
    }
}

fn lloyd_opts() -> KmeansOptions {
    KmeansOptions::default()
}

#[test]
fn constants_are_the_documented_powers_of_two() {
    assert_eq!(prune::tests_constants(), (2f64.powi(-1000), 2f64.powi(-480), 2f64.powi(-40), 1.0 + 2f64.powi(-48), 1.0 - 2f64.powi(-48)));
}

#[test]
fn gaussian_blobs_every_dimension() {
    for &dim in &[1usize, 2, 3, 17, 160, 300] {
        for (n, k, c, spread) in [(300usize, 5usize, 5usize, 4.0), (400, 20, 20, 2.0), (200, 7, 3, 0.5)] {
            let y = blobs(n, dim, c, spread, dim as u64 * 31 + k as u64);
            for seed in 0..12u64 {
                same_fit(&y, k, seed, &lloyd_opts(), &format!("blobs n={n} dim={dim} k={k}"));
            }
        }
    }
}

#[test]
fn uniform_data_long_runs_and_iteration_caps() {
    for &dim in &[2usize, 17] {
        let y = uniform(500, dim, 5 + dim as u64);
        for seed in 0..8u64 {
            let fit = same_fit(&y, 25, seed, &lloyd_opts(), "uniform");
            assert!(fit.iterations > 5);
            for cap in [1usize, 2, 3, 7] {
                let opts = KmeansOptions { max_n_iterations: cap, ..lloyd_opts() };
                let f = same_fit(&y, 25, seed, &opts, "uniform, capped");
                assert!(f.iterations <= cap);
            }
            let loose = KmeansOptions { tolerance: 0.05, ..lloyd_opts() };
            same_fit(&y, 25, seed, &loose, "uniform, loose tolerance");
        }
    }
}

#[test]
fn integer_grids_with_duplicates_and_ties() {
    for &dim in &[1usize, 2, 3, 17] {
        for side in [2u32, 3, 5] {
            let y = grid(240, dim, side, u64::from(side) * 100 + dim as u64);
            for k in [2usize, 5, 20, 60] {
                for seed in 0..6u64 {
                    same_fit(&y, k, seed, &lloyd_opts(), &format!("grid dim={dim} side={side} k={k}"));
                }
            }
        }
    }
}

#[test]
fn all_points_equal_and_few_distinct_rows() {
    let y = Array2::from_elem((50, 4), 3.5);
    for k in [1usize, 2, 10, 50] {
        same_fit(&y, k, 1, &lloyd_opts(), "constant rows");
    }
    // three distinct rows repeated: k-means++ runs out of distinct points
    let y = Array2::from_shape_fn((60, 3), |(i, d)| ((i % 3) * (d + 1)) as f64);
    for k in [3usize, 4, 30, 60] {
        for seed in 0..5 {
            same_fit(&y, k, seed, &lloyd_opts(), "three distinct rows");
        }
    }
}

#[test]
fn k_close_to_n() {
    for &dim in &[1usize, 3, 17] {
        let y = blobs(40, dim, 4, 3.0, 9 + dim as u64);
        for k in [1usize, 38, 39, 40] {
            for seed in 0..5 {
                same_fit(&y, k, seed, &lloyd_opts(), &format!("k={k} of 40, dim={dim}"));
            }
        }
        let g = grid(40, dim, 2, dim as u64);
        for k in [30usize, 40] {
            for seed in 0..5 {
                same_fit(&g, k, seed, &lloyd_opts(), "grid, k near N");
            }
        }
    }
}

#[test]
fn extreme_scales_unscaled() {
    // no safe_scale here: squares that underflow (1e-160, subnormal 1e-310) or are huge (1e150)
    for scale in [1e-160, 1e-170, 1e-310, 1e150] {
        for (y, what) in [(blobs(150, 3, 5, 3.0, 4), "blobs"), (grid(150, 2, 4, 4), "grid")] {
            let y = y.mapv(|v| v * scale);
            let opts = KmeansOptions { tolerance: f64::from_bits(1), ..lloyd_opts() };
            for seed in 0..5 {
                same_fit(&y, 6, seed, &opts, &format!("{what} x {scale:e}"));
            }
        }
    }
}

#[test]
fn protocol_reports_match() {
    let y = blobs(360, 20, 12, 1.5, 77);
    let labels: Vec<i64> = (0..360).map(|i| (i % 12) as i64).collect();
    for seed in [0u64, 1, 7, 12345] {
        same_protocol(&y, &labels, 12, 20, seed, &lloyd_opts(), "blobs protocol");
    }
    let g = grid(300, 5, 3, 1);
    let gl: Vec<i64> = (0..300).map(|i| (i % 7) as i64).collect();
    same_protocol(&g, &gl, 7, 20, 3, &lloyd_opts(), "grid protocol");
    // scaled by the protocol (1e300 and 1e-300 data)
    for s in [1e300, 1e-300] {
        let opts = KmeansOptions { tolerance: 1e-4 * s, ..lloyd_opts() };
        same_protocol(&y.mapv(|v| v * s), &labels, 12, 5, 2, &opts, "scaled protocol");
    }
}

#[test]
fn table3_shape_many_seeds() {
    // the Table III load: N = 1440, k = 20, z-scored-like features of moderate separation
    for &dim in &[20usize, 160] {
        let y = blobs(1440, dim, 20, 0.35, 1000 + dim as u64);
        for seed in 0..10u64 {
            same_fit(&y, 20, restart_seed(seed, 3), &lloyd_opts(), &format!("table3 dim={dim}"));
        }
    }
}

#[test]
fn pruned_path_is_thread_count_independent() {
    let y = blobs(700, 17, 9, 1.0, 3).as_standard_layout().into_owned();
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| fit_unchecked(&y, 9, 11, &lloyd_opts(), Path::Pruned).unwrap())
    };
    let (a, b) = (run(1), run(3));
    assert_eq!(a.labels, b.labels);
    assert_eq!(bits(a.centroids.as_slice().unwrap()), bits(b.centroids.as_slice().unwrap()));
    assert_eq!(a.sse.to_bits(), b.sse.to_bits());
}

/// A C-order little-endian `<f8` (or `<i8`, cast) `.npy` matrix or vector.
fn read_npy(path: &std::path::Path) -> Option<(Vec<usize>, Vec<f64>)> {
    let b = std::fs::read(path).ok()?;
    if b.len() < 10 || &b[..6] != b"\x93NUMPY" {
        return None;
    }
    let (hl, start) =
        if b[6] == 1 { (usize::from(u16::from_le_bytes([b[8], b[9]])), 10) } else { (u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize, 12) };
    let header = std::str::from_utf8(&b[start..start + hl]).ok()?;
    if header.contains("'fortran_order': True") {
        return None;
    }
    let shape_txt = header.split("'shape': (").nth(1)?.split(')').next()?;
    let shape: Vec<usize> = shape_txt.split(',').filter_map(|s| s.trim().parse().ok()).collect();
    let data = &b[start + hl..];
    let vals = if header.contains("'<f8'") {
        data.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect()
    } else if header.contains("'<i8'") {
        data.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap()) as f64).collect()
    } else {
        return None;
    };
    Some((shape, vals))
}

/// COIL20 feature subsets (z-scored columns, as Table III's feature selection sees them), when a
/// directory of them is given in `STRUCTDR_KMEANS_COIL` (`X*.npy` or `sub_*.npy` plus `y.npy`);
/// skipped otherwise. Every restart of the protocol is compared bit for bit, and both paths are
/// timed (run with `--nocapture` to see the times).
#[test]
fn coil20_subsets_if_available() {
    let Ok(dir) = std::env::var("STRUCTDR_KMEANS_COIL") else {
        eprintln!("STRUCTDR_KMEANS_COIL not set: skipped");
        return;
    };
    let dir = std::path::Path::new(&dir);
    let Some((_, yl)) = read_npy(&dir.join("y.npy")) else {
        eprintln!("no y.npy in {}: skipped", dir.display());
        return;
    };
    let labels: Vec<i64> = yl.iter().map(|&v| v as i64).collect();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("sub_"))
        .collect();
    files.sort();
    let k = crate::labels::n_classes(&labels);
    let (mut t_new, mut t_ref) = (0.0, 0.0);
    for f in &files {
        let (shape, v) = read_npy(f).unwrap();
        let y = Array2::from_shape_vec((shape[0], shape[1]), v).unwrap();
        for seed in [0u64, 1, 2] {
            same_protocol(&y, &labels, k, 20, seed, &lloyd_opts(), &f.display().to_string());
            let t0 = std::time::Instant::now();
            kmeans_protocol_with(y.view(), &labels, k, 20, seed, &lloyd_opts()).unwrap();
            let t1 = std::time::Instant::now();
            kmeans_protocol_brute_force(y.view(), &labels, k, 20, seed, &lloyd_opts()).unwrap();
            let t2 = std::time::Instant::now();
            let (a, b) = ((t1 - t0).as_secs_f64(), (t2 - t1).as_secs_f64());
            eprintln!("{} seed {seed}: pruned {a:.3} s, brute force {b:.3} s, ratio {:.2}", f.display(), b / a);
            t_new += a;
            t_ref += b;
        }
    }
    eprintln!("total: pruned {t_new:.2} s, brute force {t_ref:.2} s, ratio {:.2}", t_ref / t_new.max(1e-12));
}

#[test]
fn thresholds_are_the_tests() {
    let m = prune::Margins::new(160);
    for u in [0.0, 1e-300, 0.5, 3.0, 1e200] {
        let (a, b) = m.thresholds(u);
        assert!(!m.beats(a, u) && m.beats(a.next_up(), u));
        assert!(!m.beats_cc(b, u) && m.beats_cc(b.next_up(), u));
        // the proven margin: a bound above the threshold is at least u (1 + 2g) away
        assert!(a >= u * (1.0 + 2.0 * (176.0 * f64::EPSILON)));
    }
}

#[test]
fn interleaved_kernel_is_sq_dist4() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(17);
    for len in 0..40usize {
        let v: Vec<Vec<f64>> = (0..8).map(|_| (0..len).map(|_| normal(&mut rng) * 10f64.powi(rng.gen_range(-5..5))).collect()).collect();
        let a = [&v[0][..], &v[1][..], &v[2][..], &v[3][..]];
        let b = [&v[4][..], &v[5][..], &v[6][..], &v[7][..]];
        let e = prune::sq_dist4_x4_for_tests(a, b);
        for r in 0..4 {
            assert_eq!(e[r].to_bits(), sq_dist4(a[r], b[r]).to_bits(), "len {len}");
        }
    }
}
