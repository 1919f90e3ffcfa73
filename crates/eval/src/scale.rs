//! Exact power-of-two rescaling of an embedding before distances are taken.
//!
//! Squared Euclidean distances overflow once coordinates reach about `1e154` (`(2 * 1e154)^2 * D`
//! exceeds `f64::MAX`) and underflow to 0 below about `1e-162`, so an embedding multiplied by
//! `1e300` or `1e-300` would score as if every point were equally far (or identical). Every metric
//! of this crate depends on the embedding only through comparisons of distances, which are
//! invariant under a common scale factor, so each one first multiplies the coordinates by `2^s`
//! ([`safe_scale`]) chosen so that the largest magnitude `m` lands at `2^t`,
//! `t = floor((1016 - b) / 2)`, `b` the bit length of `N D`: then every squared distance, and every
//! sum of `N D` of them (k-means SSE, the k-means++ total), stays below `2^1020`, while the
//! distances keep the widest range above the subnormals (the largest coordinate is as large as
//! that bound allows).
//!
//! Multiplying by a power of two is exact in binary floating point (no rounding) as long as the
//! result is neither subnormal nor infinite, and so are the `+ - * / sqrt` that follow (each
//! result is the unscaled one times a power of two). For ordinary data the shift is upwards
//! (`t` is about 490) and never makes a value subnormal, so every distance comparison, and hence
//! every neighbour, tie and cluster assignment, is bit-for-bit what it was without the rescaling;
//! what the functions report in the data's units (k-means SSE, centres) is scaled back by the
//! same power of two.

use ndarray::{Array2, ArrayView2, CowArray, Ix2};

/// `x * 2^k`, exact whenever the result is a normal number: applied in steps of at most `2^±1000`
/// because `2^k` itself is a normal `f64` only for `-1022 <= k <= 1023`.
pub(crate) fn mul_pow2(mut x: f64, mut k: i32) -> f64 {
    while k != 0 {
        let step = k.clamp(-1000, 1000);
        x *= f64::from_bits(((step + 1023) as u64) << 52);
        k -= step;
    }
    x
}

/// The binary exponent `e` of a finite `m > 0`: `2^e <= m < 2^(e+1)` (subnormals included).
pub(crate) fn exponent(m: f64) -> i32 {
    let biased = ((m.to_bits() >> 52) & 0x7ff) as i32;
    if biased == 0 {
        // subnormal: bring it into the normal range first (exactly), then subtract the shift
        exponent(m * f64::from_bits(((64 + 1023) as u64) << 52)) - 64
    } else {
        biased - 1023
    }
}

/// `(y * 2^s, s)` with `s = t - e`, `e` = [`exponent`]`(max_ij |y_ij|)` and
/// `t = floor((1016 - b) / 2)`, `b` the bit length of `N D` (the module docs give the bound this
/// keeps); `(y, 0)`, borrowed, when `y` is all zeros or empty. `y` must be finite.
pub(crate) fn safe_scale(y: ArrayView2<'_, f64>) -> (CowArray<'_, f64, Ix2>, i32) {
    let m = y.iter().fold(0.0f64, |a, &v| a.max(v.abs()));
    if !(m > 0.0 && m.is_finite()) {
        return (CowArray::from(y), 0);
    }
    let cells = (y.nrows() as u64).saturating_mul(y.ncols() as u64);
    let bits = (64 - cells.leading_zeros()) as i32;
    let shift = (1016 - bits) / 2 - exponent(m);
    if shift == 0 {
        return (CowArray::from(y), 0);
    }
    let scaled: Array2<f64> = y.mapv(|v| mul_pow2(v, shift));
    (CowArray::from(scaled), shift)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn exponents_and_exact_powers() {
        for (m, e) in [(1.0, 0), (1.5, 0), (2.0, 1), (0.75, -1), (f64::MAX, 1023), (f64::MIN_POSITIVE, -1022), (f64::from_bits(1), -1074), (1e300, 996)] {
            assert_eq!(exponent(m), e, "{m}");
        }
        assert_eq!(mul_pow2(3.0, 1500), 3.0 * 2f64.powi(750) * 2f64.powi(750));
        assert_eq!(mul_pow2(mul_pow2(1.2345e300, -996), 996), 1.2345e300);
        assert_eq!(mul_pow2(f64::from_bits(1), 1074), 1.0);
    }

    #[test]
    fn the_largest_magnitude_lands_at_the_target() {
        for f in [1e300, 1e154, 1e-300, 3.0, 0.01] {
            let y = array![[1.0 * f, -2.5 * f], [0.5 * f, 0.0]];
            let (s, sh) = safe_scale(y.view());
            let m = s.iter().fold(0.0f64, |a, &v| a.max(v.abs()));
            // N D = 4 has bit length 3: t = floor(1013 / 2) = 506
            assert_eq!(exponent(m), 506, "{f}");
            assert_eq!(y.mapv(|v| mul_pow2(v, sh)), s.to_owned());
            assert_eq!(s.mapv(|v| mul_pow2(v, -sh)), y, "exact both ways");
        }
        let z = Array2::<f64>::zeros((3, 2));
        assert_eq!(safe_scale(z.view()).1, 0);
    }
}
