//! Label vectors and their contingency table.

use ndarray::Array2;

use crate::error::{ensure_min_samples, ensure_same_len, Result};

/// Anything usable as a label: cluster indices (`usize`), class labels (`i64`), ...
///
/// Labels are compared only for equality and order; their values carry no meaning (they need not
/// be `0..c`, may be negative and may have gaps).
pub trait Label: Copy + Ord + Send + Sync + std::fmt::Debug {}
impl<T: Copy + Ord + Send + Sync + std::fmt::Debug> Label for T {}

/// The sorted distinct values of `labels`.
pub fn unique_labels<L: Label>(labels: &[L]) -> Vec<L> {
    let mut u = labels.to_vec();
    u.sort_unstable();
    u.dedup();
    u
}

/// The number of distinct labels `c = |{labels_i}|`: the default `k` of the k-means protocol.
///
/// `n_classes(&[])` is 0.
pub fn n_classes<L: Label>(labels: &[L]) -> usize {
    unique_labels(labels).len()
}

/// The contingency table of two labelings of the same `N` samples.
///
/// Returns `(C, rows, cols)` where `rows` are the sorted distinct values of `pred`, `cols` the
/// sorted distinct values of `truth`, and
///
/// `C[r, c] = |{ i : pred_i = rows[r] and truth_i = cols[c] }|`,
///
/// so `sum_{r,c} C[r, c] = N`; row sums are the cluster sizes and column sums the class sizes.
/// Only labels that occur are included (no empty rows or columns).
///
/// Errors: [`crate::EvalError::LengthMismatch`] if the lengths differ,
/// [`crate::EvalError::TooFewSamples`] if they are empty.
pub fn contingency<P: Label, T: Label>(pred: &[P], truth: &[T]) -> Result<(Array2<usize>, Vec<P>, Vec<T>)> {
    ensure_same_len("contingency", pred.len(), truth.len())?;
    ensure_min_samples("contingency", pred.len(), 1)?;
    let rows = unique_labels(pred);
    let cols = unique_labels(truth);
    let mut c = Array2::<usize>::zeros((rows.len(), cols.len()));
    for (p, t) in pred.iter().zip(truth) {
        // Both searches succeed: the values were taken from these very slices.
        let r = rows.binary_search(p).unwrap_or(0);
        let k = cols.binary_search(t).unwrap_or(0);
        c[[r, k]] += 1;
    }
    Ok((c, rows, cols))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn contingency_of_small_example() {
        // pred [0,0,1,1,2,2] vs truth [0,0,0,1,1,1]
        let (c, r, k) = contingency(&[0usize, 0, 1, 1, 2, 2], &[0i64, 0, 0, 1, 1, 1]).unwrap();
        assert_eq!(c, array![[2, 0], [1, 1], [0, 2]]);
        assert_eq!(r, vec![0, 1, 2]);
        assert_eq!(k, vec![0, 1]);
    }

    #[test]
    fn arbitrary_label_values() {
        let (c, r, k) = contingency(&[7i64, -3, 7, 100], &[5i64, 5, -1, -1]).unwrap();
        assert_eq!(r, vec![-3, 7, 100]);
        assert_eq!(k, vec![-1, 5]);
        assert_eq!(c, array![[0, 1], [1, 1], [1, 0]]);
        assert_eq!(n_classes(&[3i64, 3, -1, 9]), 3);
        assert_eq!(n_classes::<i64>(&[]), 0);
    }

    #[test]
    fn contingency_errors() {
        assert!(contingency::<usize, i64>(&[], &[]).is_err());
        assert!(contingency(&[0usize, 1], &[0i64]).is_err());
    }
}
