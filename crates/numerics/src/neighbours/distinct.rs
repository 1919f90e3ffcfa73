//! Groups of equal samples: methods whose local geometry is undefined at distance 0 (SMCE's unit
//! directions, MEU's unbounded likelihood) fit on the distinct rows and give copies their
//! representative's output.

use ndarray::ArrayView2;

/// Groups equal rows (`==` on every feature, so `-0.0 == 0.0`): the first occurrence of every
/// distinct row (ascending) and, for every row, the index of its group in that list.
pub fn distinct_rows(x: ArrayView2<f64>) -> (Vec<usize>, Vec<usize>) {
    let n = x.nrows();
    let cmp = |a: usize, b: usize| {
        x.row(a).iter().zip(x.row(b).iter()).map(|(p, q)| p.partial_cmp(q).expect("finite data")).find(|o| o.is_ne()).unwrap_or(std::cmp::Ordering::Equal)
    };
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| cmp(a, b).then(a.cmp(&b)));
    let mut rep_of = vec![0usize; n];
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && cmp(order[start], order[end]).is_eq() {
            end += 1;
        }
        for &r in &order[start..end] {
            rep_of[r] = order[start];
        }
        start = end;
    }
    let reps: Vec<usize> = (0..n).filter(|&i| rep_of[i] == i).collect();
    let mut id = vec![usize::MAX; n];
    for (g, &r) in reps.iter().enumerate() {
        id[r] = g;
    }
    let group = (0..n).map(|i| id[rep_of[i]]).collect();
    (reps, group)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_equal_rows_by_first_occurrence() {
        let x = ndarray::array![[1.0, 2.0], [0.0, 1.0], [1.0, 2.0], [-0.0, 1.0], [3.0, 0.0], [1.0, 2.0]];
        let (reps, group) = distinct_rows(x.view());
        assert_eq!(reps, vec![0, 1, 4]);
        assert_eq!(group, vec![0, 1, 0, 1, 2, 0]);
    }
}
