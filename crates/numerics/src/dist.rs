//! Squared Euclidean distances between two samples, summed feature by feature: the one exact
//! pairwise kernel (exact zero for duplicates, symmetric bit for bit). The GEMM form for whole
//! blocks, `||x||^2 + ||y||^2 - 2 x^T y`, is [`structdr_linalg::sq_dists_between`].

use ndarray::ArrayView1;

/// `||a - b||^2` summed feature by feature (exact zero for duplicates, symmetric bit for bit).
///
/// Contiguous rows go through [`sq_dist_slices`] (eight partial sums, SIMD-friendly); other
/// layouts are summed in feature order.
#[inline]
pub fn exact_sq_dist(a: ArrayView1<f64>, b: ArrayView1<f64>) -> f64 {
    match (a.as_slice(), b.as_slice()) {
        (Some(sa), Some(sb)) => sq_dist_slices(sa, sb),
        _ => a.iter().zip(b.iter()).map(|(u, v)| (u - v) * (u - v)).sum(),
    }
}

/// `sum_f (a_f - b_f)^2` summed in feature order, `((a_0 - b_0)^2 + (a_1 - b_1)^2) + ...`: the
/// distances of the minimum spanning trees ([`crate::graphs::mst_sq_euclidean`]), the k-d tree
/// ([`crate::neighbours::KdTree`]) and DDRTree's soft assignments, which must agree bit for bit.
/// Panics if the lengths differ.
#[inline]
pub fn sq_dist_in_order(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "sq_dist_in_order: lengths differ");
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// `sum_f (a_f - b_f)^2` with eight interleaved partial sums (lane `f mod 8`) added pairwise at
/// the end, so the compiler vectorises it; a fixed order, hence deterministic, symmetric in
/// `(a, b)` bit for bit, and exactly 0 for equal slices. On x86-64 CPUs with AVX2 the same
/// operations run in 256-bit registers (no FMA: the result is bit-identical to the SSE2 path).
/// Panics if the lengths differ.
#[inline]
pub fn sq_dist_slices(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "sq_dist_slices: lengths differ");
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { sq_dist_avx2(a, b) };
    }
    sq_dist_lanes(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sq_dist_avx2(a: &[f64], b: &[f64]) -> f64 {
    sq_dist_lanes(a, b)
}

/// The portable body of [`sq_dist_slices`] (the same bits): for a caller that compiles a whole
/// loop of distances for AVX2 itself (`#[target_feature(enable = "avx2")]`), so that the kernel
/// inlines into it instead of being called once per pair. Panics if the lengths differ.
#[inline(always)]
pub fn sq_dist_lanes(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "sq_dist_lanes: lengths differ");
    let mut acc = [0.0f64; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (u, v) in ca.zip(cb) {
        for l in 0..8 {
            let t = u[l] - v[l];
            acc[l] += t * t;
        }
    }
    let mut tail = 0.0;
    for (u, v) in ra.iter().zip(rb) {
        let t = u - v;
        tail += t * t;
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// How many edges ahead a loop over an edge list (FastMVU's stress) asks the cache
/// for the far end's rows with [`prefetch_row`]: far enough to cover a miss to the last-level
/// cache, near enough that the lines are still there when the edge comes.
pub const PREFETCH_EDGES_AHEAD: usize = 8;

/// Asks the cache to load `a[start..start + len]`: a hint that changes no value (the loops that
/// use it give the same bits with and without it). A row of a row-major N x q factor that a
/// loop over edges will read soon: its far ends `j` jump around the factor, and waiting for
/// them was much of those loops' time (FastMVU's stress fits on letter, K = 50: 0.81x with it).
#[inline(always)]
pub fn prefetch_row(a: &[f64], start: usize, len: usize) {
    assert!(start + len <= a.len(), "prefetch_row: rows past the slice");
    #[cfg(target_arch = "x86_64")]
    if len > 0 {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // one hint per 8 doubles (a 64-byte line), then the last element: a row that starts
        // mid-line ends on one line more
        let mut off = start;
        while off < start + len {
            // SAFETY: off < start + len <= a.len(), so the pointer is inside the slice; a
            // prefetch reads nothing and cannot fault
            unsafe { _mm_prefetch::<_MM_HINT_T0>(a.as_ptr().add(off) as *const i8) };
            off += 8;
        }
        // SAFETY: start + len - 1 < a.len(), as above
        unsafe { _mm_prefetch::<_MM_HINT_T0>(a.as_ptr().add(start + len - 1) as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (a, start, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hint reads and writes nothing: every row of a slice, the last included and rows that
    /// start mid-line, leaves it as it was; a row past the end is a caller's bug and panics.
    #[test]
    fn prefetch_row_changes_nothing_and_refuses_rows_past_the_slice() {
        let a: Vec<f64> = (0..203).map(|v| v as f64 * 0.5).collect();
        let before = a.clone();
        for q in [1, 3, 7, 8, 12, 24] {
            for start in (0..=a.len() - q).step_by(q) {
                prefetch_row(&a, start, q);
            }
        }
        prefetch_row(&a, a.len(), 0);
        assert_eq!(a, before);
        let past = std::panic::catch_unwind(|| prefetch_row(&a, 200, 4));
        assert!(past.is_err(), "a row past the slice must panic");
    }

    /// The dispatched distance (AVX2 where available) equals the portable lane sum bit for bit,
    /// is symmetric, exactly 0 on equal slices, and matches the plain sum to rounding.
    #[test]
    fn sq_dist_slices_is_exact_symmetric_and_dispatch_invariant() {
        for len in [0usize, 1, 7, 8, 9, 31, 188] {
            let a: Vec<f64> = (0..len).map(|i| ((i * 37 % 11) as f64 - 5.0) * 0.37).collect();
            let b: Vec<f64> = (0..len).map(|i| ((i * 53 % 7) as f64 - 3.0) * 1.1).collect();
            let v = sq_dist_slices(&a, &b);
            assert_eq!(v.to_bits(), sq_dist_lanes(&a, &b).to_bits());
            assert_eq!(v.to_bits(), sq_dist_slices(&b, &a).to_bits());
            assert_eq!(sq_dist_slices(&a, &a), 0.0);
            let plain: f64 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum();
            assert!((v - plain).abs() <= 1e-13 * plain.max(1.0));
        }
    }
}
