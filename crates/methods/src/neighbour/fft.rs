//! FFT-accelerated interpolation for the repulsive forces of 2-D t-SNE (Linderman, Rachh,
//! Hoskins, Steinerberger & Kluger 2019, "FIt-SNE"; openTSNE's `negative_gradient_method = "fft"`).
//!
//! With `w_ij = (1 + ||y_i - y_j||^2)^-1` the repulsion and `Z` need, for every point `i`, the
//! four sums of the squared Cauchy kernel `K(r) = w^2 = (1 + ||r||^2)^-2` against the charges
//! `q_j = (1, y_j1, y_j2, ||y_j||^2)`:
//!
//! `phi_c(i) = sum_j K(y_i - y_j) q_jc`, and then (the `j = i` terms `K(0) = 1` included)
//!
//! `sum_j w_ij^2 (y_i - y_j) = y_i phi_1(i) - (phi_2(i), phi_3(i))`,
//! `Z = sum_i [ (1 + ||y_i||^2) phi_1(i) - 2 y_i . (phi_2(i), phi_3(i)) + phi_4(i) ] - N`
//!
//! (because `w = K (1 + ||y_i||^2 - 2 y_i . y_j + ||y_j||^2)` and `w_ii = 1`). The coordinates are
//! taken relative to the centre of the bounding square, which keeps the cancellation in `Z` small.
//!
//! The sums are computed by polynomial interpolation on an equispaced grid:
//!
//! 1. the bounding square is cut into `B x B` boxes (`B = max(min_intervals, side / interval_width)`
//!    rounded up to an FFT-friendly size), each with `p x p` interpolation nodes at the box-local
//!    positions `(l + 1/2) / p` (a grid of `G = B p` nodes per axis, spacing `s = side / G`);
//! 2. every point spreads its charges onto the `p x p` nodes of its box with the tensor-product
//!    Lagrange weights `L_a(y_i1) L_b(y_i2)`;
//! 3. the node potentials `sum_m K(node_l - node_m) charge_m` are one 2-D convolution with the kernel
//!    sampled at the node offsets, a circulant embedding of size `2G x 2G` done by real FFTs;
//! 4. every point reads its potentials back with the same Lagrange weights.
//!
//! Cost per iteration `O(N p^2)` for steps 2 and 4 and `O(G^2 log G)` for step 3 (G grows with the
//! embedding's extent, not with N), against Barnes-Hut's `O(N log N)` with a large constant. The
//! interpolation error falls like `(h / 2)^p` with the box width `h`; at openTSNE's defaults
//! (`p = 3`, boxes at most 1 wide, at least 50 of them) the gradient's relative error is about
//! 1e-3 (measured in the tests).
//!
//! Deterministic: the charges are spread point by point in index order; the FFTs run row by row
//! (rows in parallel, each independent) and the potentials are read back per point.

use super::bh::{combine_with_attraction, SparseP};
use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;
use realfft::num_complex::Complex;
use realfft::RealFftPlanner;
use rustfft::FftPlanner;

/// The interpolation grid's parameters (openTSNE's names and defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InterpolationGrid {
    /// Interpolation nodes per box and axis, `p` (openTSNE `n_interpolation_points`, 3).
    pub nodes_per_box: usize,
    /// Fewest boxes per axis (openTSNE `min_num_intervals`, 50).
    pub min_intervals: usize,
    /// Largest box width in embedding units (openTSNE `1 / ints_in_interval`, 1).
    pub interval_width: f64,
}

impl Default for InterpolationGrid {
    fn default() -> Self {
        InterpolationGrid { nodes_per_box: 3, min_intervals: 50, interval_width: 1.0 }
    }
}

/// Whether `m` has no prime factor above 7 (a fast FFT length).
fn smooth(mut m: usize) -> bool {
    for f in [2, 3, 5, 7] {
        while m.is_multiple_of(f) {
            m /= f;
        }
    }
    m == 1
}

/// The squared Cauchy kernel `(1 + r^2)^-2`.
fn kernel(r2: f64) -> f64 {
    let w = 1.0 / (1.0 + r2);
    w * w
}

/// The charges' potentials `phi_c(i)` (N x 4, see the module doc) for points `(u_i, v_i)` given
/// relative to the centre of their bounding square of side `side`.
fn potentials(u: &[f64], v: &[f64], side: f64, grid: &InterpolationGrid) -> Vec<[f64; 4]> {
    let n = u.len();
    let p = grid.nodes_per_box;
    let mut boxes = ((side / grid.interval_width).ceil() as usize).max(grid.min_intervals).max(1);
    while !smooth(2 * boxes * p) {
        boxes += 1;
    }
    let g = boxes * p; // nodes per axis
    let m = 2 * g; // circulant embedding
    let h = side / boxes as f64;
    let spacing = h / p as f64;
    let lo = -0.5 * side;
    // Lagrange basis on the box-local nodes (l + 1/2) / p: denominators prod_{k != l} (x_l - x_k)
    let local: Vec<f64> = (0..p).map(|l| (l as f64 + 0.5) / p as f64).collect();
    let denom: Vec<f64> = (0..p).map(|l| (0..p).filter(|&k| k != l).map(|k| local[l] - local[k]).product()).collect();
    // a point's first node index on an axis, and its p weights
    let locate = |c: f64, w: &mut [f64]| -> usize {
        let t = (c - lo) / h;
        let b = (t.floor().max(0.0) as usize).min(boxes - 1);
        let t = t - b as f64;
        for l in 0..p {
            w[l] = (0..p).filter(|&k| k != l).map(|k| t - local[k]).product::<f64>() / denom[l];
        }
        b * p
    };
    // 2. spread, in index order
    let mut charges = vec![vec![0.0f64; m * m]; 4];
    let mut wu = vec![0.0; p];
    let mut wv = vec![0.0; p];
    for i in 0..n {
        let (a0, b0) = (locate(u[i], &mut wu), locate(v[i], &mut wv));
        let q = [1.0, u[i], v[i], u[i] * u[i] + v[i] * v[i]];
        for a in 0..p {
            for b in 0..p {
                let at = (a0 + a) * m + b0 + b;
                let wab = wu[a] * wv[b];
                for c in 0..4 {
                    charges[c][at] += wab * q[c];
                }
            }
        }
    }
    // 3. the kernel at node offsets, circularly: offset o for index o < g, o - m above g (index g unused)
    let offset = |i: usize| -> f64 {
        if i < g {
            i as f64
        } else if i > g {
            i as f64 - m as f64
        } else {
            f64::INFINITY
        }
    };
    let mut kern = vec![0.0f64; m * m];
    kern.par_chunks_mut(m).enumerate().for_each(|(i, row)| {
        let di = offset(i) * spacing;
        for (j, k) in row.iter_mut().enumerate() {
            let dj = offset(j) * spacing;
            *k = if di.is_finite() && dj.is_finite() { kernel(di * di + dj * dj) } else { 0.0 };
        }
    });
    let fft = Fft2::new(m);
    let kernel_hat = fft.forward(&kern, m);
    let potentials: Vec<Vec<f64>> = charges
        .iter()
        .map(|q| {
            let mut hat = fft.forward(q, g);
            hat.par_iter_mut().zip(kernel_hat.par_iter()).for_each(|(a, k)| *a *= k);
            fft.inverse(hat, g)
        })
        .collect();
    // 4. read back per point
    (0..n)
        .into_par_iter()
        .map_init(
            || (vec![0.0; p], vec![0.0; p]),
            |(wu, wv), i| {
                let (a0, b0) = (locate(u[i], wu), locate(v[i], wv));
                let mut phi = [0.0; 4];
                for a in 0..p {
                    for b in 0..p {
                        let at = (a0 + a) * m + b0 + b;
                        let wab = wu[a] * wv[b];
                        for c in 0..4 {
                            phi[c] += wab * potentials[c][at];
                        }
                    }
                }
                phi
            },
        )
        .collect()
}

/// Square 2-D real FFTs of side `m` (row-major data), through row real FFTs and column complex
/// FFTs on the transposed half spectrum (`m / 2 + 1` rows of length `m`).
struct Fft2 {
    m: usize,
    r2c: std::sync::Arc<dyn realfft::RealToComplex<f64>>,
    c2r: std::sync::Arc<dyn realfft::ComplexToReal<f64>>,
    col_fwd: std::sync::Arc<dyn rustfft::Fft<f64>>,
    col_inv: std::sync::Arc<dyn rustfft::Fft<f64>>,
}

impl Fft2 {
    fn new(m: usize) -> Fft2 {
        let mut real = RealFftPlanner::<f64>::new();
        let mut complex = FftPlanner::<f64>::new();
        Fft2 { m, r2c: real.plan_fft_forward(m), c2r: real.plan_fft_inverse(m), col_fwd: complex.plan_fft_forward(m), col_inv: complex.plan_fft_inverse(m) }
    }

    /// The spectrum (transposed: `(m / 2 + 1) x m`) of `data`, whose rows from `rows` on are zero.
    fn forward(&self, data: &[f64], rows: usize) -> Vec<Complex<f64>> {
        let (m, half) = (self.m, self.m / 2 + 1);
        let spectra: Vec<Vec<Complex<f64>>> = data[..rows * m]
            .par_chunks(m)
            .map_init(
                || (self.r2c.make_input_vec(), self.r2c.make_scratch_vec()),
                |(input, scratch), row| {
                    input.copy_from_slice(row);
                    let mut out = self.r2c.make_output_vec();
                    self.r2c.process_with_scratch(input, &mut out, scratch).expect("lengths from the plan");
                    out
                },
            )
            .collect();
        let mut t = vec![Complex::new(0.0, 0.0); half * m];
        t.par_chunks_mut(m).enumerate().for_each_init(
            || vec![Complex::new(0.0, 0.0); self.col_fwd.get_inplace_scratch_len()],
            |scratch, (c, col)| {
                for (r, s) in spectra.iter().enumerate() {
                    col[r] = s[c];
                }
                self.col_fwd.process_with_scratch(col, scratch);
            },
        );
        t
    }

    /// The first `rows` rows of the real inverse of a transposed spectrum, scaled by `1 / m^2`.
    fn inverse(&self, mut t: Vec<Complex<f64>>, rows: usize) -> Vec<f64> {
        let (m, half) = (self.m, self.m / 2 + 1);
        t.par_chunks_mut(m).for_each_init(
            || vec![Complex::new(0.0, 0.0); self.col_inv.get_inplace_scratch_len()],
            |scratch, col| self.col_inv.process_with_scratch(col, scratch),
        );
        let scale = 1.0 / (m as f64 * m as f64);
        let mut out = vec![0.0; rows * m];
        out.par_chunks_mut(m).enumerate().for_each_init(
            || (self.c2r.make_input_vec(), self.c2r.make_scratch_vec()),
            |(spec, scratch), (r, row)| {
                for c in 0..half {
                    spec[c] = t[c * m + r];
                }
                // a real signal's spectrum: the imaginary parts at 0 and m / 2 are rounding only
                spec[0].im = 0.0;
                if m.is_multiple_of(2) {
                    spec[half - 1].im = 0.0;
                }
                self.c2r.process_with_scratch(spec, row, scratch).expect("lengths from the plan");
                for v in row.iter_mut() {
                    *v *= scale;
                }
            },
        );
        out
    }
}

/// The FFT-interpolation gradient (into `grad`, N x 2) with exaggeration `alpha` on P, and with
/// `with_kl` the KL(P || Q) of the unexaggerated P with the interpolated `Z` (NaN without):
/// `dC/dy_i = 4 [ alpha sum_j p_ij w_ij (y_i - y_j) - (1/Z) sum_j w_ij^2 (y_i - y_j) ]`.
pub fn kl_and_gradient_fft(p: &SparseP, y: ArrayView2<f64>, alpha: f64, grid: &InterpolationGrid, grad: &mut Array2<f64>, with_kl: bool) -> f64 {
    let n = y.nrows();
    let yc = y.as_standard_layout();
    let ys = yc.as_slice().expect("standard layout");
    let (mut x0, mut x1, mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY);
    for i in 0..n {
        x0 = x0.min(ys[2 * i]);
        x1 = x1.max(ys[2 * i]);
        y0 = y0.min(ys[2 * i + 1]);
        y1 = y1.max(ys[2 * i + 1]);
    }
    let (cx, cy) = (0.5 * (x0 + x1), 0.5 * (y0 + y1));
    // a hair wider than the points, so the largest lands inside the last box
    let side = (x1 - x0).max(y1 - y0).max(1e-12) * (1.0 + 1e-9);
    let u: Vec<f64> = (0..n).map(|i| ys[2 * i] - cx).collect();
    let v: Vec<f64> = (0..n).map(|i| ys[2 * i + 1] - cy).collect();
    let phi = potentials(&u, &v, side, grid);
    let z: f64 =
        (0..n).map(|i| (1.0 + u[i] * u[i] + v[i] * v[i]) * phi[i][0] - 2.0 * (u[i] * phi[i][1] + v[i] * phi[i][2]) + phi[i][3]).sum::<f64>() - n as f64;
    combine_with_attraction(p, ys, z, alpha, grad, with_kl, |i| (u[i] * phi[i][0] - phi[i][1], v[i] * phi[i][0] - phi[i][2]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::neighbour::tsne::kl_and_gradient;
    use rand::{Rng, SeedableRng};

    fn sparse_p(n: usize, spread: f64, seed: u64) -> (SparseP, Array2<f64>) {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        let x = Array2::from_shape_fn((n, 4), |(i, _)| (i % 4) as f64 * 2.0 + rng.gen::<f64>());
        let knn = structdr_numerics::neighbours::knn(x.view(), 15).unwrap();
        let (cond, _, _) = structdr_numerics::affinities::perplexity_affinities_knn(&knn, 5.0);
        // clusters in the embedding too, as t-SNE makes them
        let y = Array2::from_shape_fn((n, 2), |(i, c)| ((i % 4) as f64 - 1.5) * spread * (c as f64 * 2.0 - 1.0) + rng.gen::<f64>() * spread * 0.3);
        (SparseP::symmetric(&knn.indices, &cond), y)
    }

    fn relative_error(a: &Array2<f64>, b: &Array2<f64>) -> f64 {
        (a - b).mapv(|v| v * v).sum().sqrt() / b.mapv(|v| v * v).sum().sqrt()
    }

    /// Against the exact gradient and KL on the same P: at openTSNE's defaults the gradient's
    /// relative error is below 5e-3 and the KL's below 3e-3 (measured: 1.1e-3 and 1.3e-3 at spread 20), on a compact embedding (the start)
    /// and a spread one (after exaggeration); more nodes per box drive the error down by orders
    /// of magnitude, as polynomial interpolation of a smooth kernel should.
    #[test]
    fn fft_gradient_matches_the_exact_one() {
        let n = 400;
        for spread in [1e-3, 3.0, 20.0] {
            let (p, y) = sparse_p(n, spread, 1);
            let dense = p.to_dense();
            let mut g_exact = Array2::zeros((n, 2));
            let kl_exact = kl_and_gradient(dense.view(), y.view(), 12.0, &mut g_exact, true);
            let mut errors = Vec::new();
            for nodes in [3, 5, 8] {
                let grid = InterpolationGrid { nodes_per_box: nodes, ..Default::default() };
                let mut g = Array2::zeros((n, 2));
                let kl = kl_and_gradient_fft(&p, y.view(), 12.0, &grid, &mut g, true);
                let err = relative_error(&g, &g_exact);
                let kl_err = (kl - kl_exact).abs() / kl_exact.abs();
                eprintln!("spread {spread}, p = {nodes}: gradient relative error {err:.2e}, KL {kl:.10} vs {kl_exact:.10} ({kl_err:.1e})");
                if nodes == 3 {
                    assert!(err < 5e-3 && kl_err < 3e-3, "spread {spread}: gradient {err:e}, KL {kl_err:e}");
                }
                errors.push(err);
            }
            // (a compact embedding sits inside one box: every p is exact to rounding there)
            assert!(errors[2] < 1e-5 && (errors[0] < 1e-12 || errors[2] < errors[0] / 100.0), "spread {spread}: errors {errors:?} do not fall with p");
        }
    }

    /// The grid sums equal the direct sums of the squared Cauchy kernel for every charge, at a
    /// fine grid, including duplicate points and a point on the square's edge.
    #[test]
    fn potentials_match_direct_sums() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(3);
        let mut u: Vec<f64> = (0..200).map(|_| rng.gen::<f64>() * 6.0 - 3.0).collect();
        let mut v: Vec<f64> = (0..200).map(|_| rng.gen::<f64>() * 6.0 - 3.0).collect();
        (u[5], v[5]) = (u[4], v[4]);
        (u[0], v[0]) = (-3.0, 3.0);
        let side = 6.0 * (1.0 + 1e-9);
        let grid = InterpolationGrid { nodes_per_box: 10, min_intervals: 20, interval_width: 1.0 };
        let phi = potentials(&u, &v, side, &grid);
        let mut worst: f64 = 0.0;
        for i in 0..200 {
            let mut direct = [0.0; 4];
            for j in 0..200 {
                let k = kernel((u[i] - u[j]).powi(2) + (v[i] - v[j]).powi(2));
                let q = [1.0, u[j], v[j], u[j] * u[j] + v[j] * v[j]];
                for c in 0..4 {
                    direct[c] += k * q[c];
                }
            }
            for c in 0..4 {
                worst = worst.max((phi[i][c] - direct[c]).abs() / direct[0].max(1.0) / 18.0);
            }
        }
        assert!(worst < 1e-8, "worst scaled error {worst:e}");
    }

    #[test]
    fn fft_lengths_are_smooth() {
        assert!(smooth(300) && smooth(2 * 3 * 64) && smooth(2 * 3 * 49));
        assert!(!smooth(2 * 3 * 53) && !smooth(22));
    }
}
