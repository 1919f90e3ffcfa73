//! Symmetric eigendecomposition through LAPACK (`dsyevd`, `dsyevr`).

use crate::{ensure_finite, ensure_square, LinalgError, Result};
use ndarray::{Array1, Array2, ArrayView2, Axis};
use std::os::raw::{c_char, c_int};

/// Eigenpairs of a symmetric matrix: `A v_j = lambda_j v_j`, vectors in the columns.
#[derive(Debug, Clone)]
pub struct SymmetricEigen {
    /// Eigenvalues, in the order documented by the function that returned them.
    pub values: Array1<f64>,
    /// Orthonormal eigenvectors, column `j` belongs to `values[j]`; signs canonicalised.
    pub vectors: Array2<f64>,
}

/// Full eigendecomposition `A = V diag(lambda) V^T` of a symmetric matrix by divide and conquer
/// (`dsyevd`), eigenvalues ascending. Only the lower triangle of `a` is read.
pub fn eigh(a: ArrayView2<f64>) -> Result<SymmetricEigen> {
    let n = ensure_square(&a, "eigh")?;
    ensure_finite(&a, "eigh")?;
    // A row-major symmetric matrix is its own column-major copy; the lower triangle in
    // column-major order is the upper triangle in row-major order, so ask for 'U'.
    let mut buf: Vec<f64> = a.iter().copied().collect();
    let mut w = vec![0.0; n];
    let (jobz, uplo) = (b'V' as c_char, b'U' as c_char);
    let nn = n as c_int;
    let mut info: c_int = 0;
    let mut work_q = [0.0f64];
    let mut iwork_q: [c_int; 1] = [0];
    let minus1: c_int = -1;
    // SAFETY: pointers are valid for the sizes LAPACK reads; lwork = -1 is a workspace query.
    unsafe {
        lapack_sys::dsyevd_(&jobz, &uplo, &nn, buf.as_mut_ptr(), &nn, w.as_mut_ptr(), work_q.as_mut_ptr(), &minus1, iwork_q.as_mut_ptr(), &minus1, &mut info);
    }
    if info != 0 {
        return Err(LinalgError::Lapack { routine: "dsyevd (query)", info });
    }
    let lwork = work_q[0] as c_int;
    let liwork = iwork_q[0];
    let mut work = vec![0.0; lwork.max(1) as usize];
    let mut iwork = vec![0 as c_int; liwork.max(1) as usize];
    // SAFETY: buffers sized as the workspace query asked.
    unsafe {
        lapack_sys::dsyevd_(&jobz, &uplo, &nn, buf.as_mut_ptr(), &nn, w.as_mut_ptr(), work.as_mut_ptr(), &lwork, iwork.as_mut_ptr(), &liwork, &mut info);
    }
    if info != 0 {
        return Err(LinalgError::Lapack { routine: "dsyevd", info });
    }
    // Column-major n x n: row j of the row-major view is eigenvector j.
    let rows = Array2::from_shape_vec((n, n), buf).expect("n*n buffer");
    let mut vectors = rows.reversed_axes().as_standard_layout().to_owned();
    canonicalize_signs(&mut vectors);
    Ok(SymmetricEigen { values: Array1::from(w), vectors })
}

/// Which end of the spectrum [`eigh_range`] returns.
#[derive(Clone, Copy)]
enum End {
    Top,
    Bottom,
}

/// The `k` largest eigenpairs of a symmetric matrix, eigenvalues **descending** (`dsyevr`).
pub fn eigh_top(a: ArrayView2<f64>, k: usize) -> Result<SymmetricEigen> {
    eigh_range(a, k, End::Top)
}

/// The `k` smallest eigenpairs of a symmetric matrix, eigenvalues **ascending** (`dsyevr`).
pub fn eigh_bottom(a: ArrayView2<f64>, k: usize) -> Result<SymmetricEigen> {
    eigh_range(a, k, End::Bottom)
}

fn eigh_range(a: ArrayView2<f64>, k: usize, end: End) -> Result<SymmetricEigen> {
    let n = ensure_square(&a, "eigh_range")?;
    ensure_finite(&a, "eigh_range")?;
    if k == 0 || k > n {
        return Err(LinalgError::Shape { what: "eigh_range", detail: format!("asked for {k} eigenpairs of a {n} x {n} matrix") });
    }
    let mut buf: Vec<f64> = a.iter().copied().collect();
    let (il, iu): (c_int, c_int) = match end {
        End::Top => ((n - k + 1) as c_int, n as c_int),
        End::Bottom => (1, k as c_int),
    };
    let (jobz, range, uplo) = (b'V' as c_char, b'I' as c_char, b'U' as c_char);
    let nn = n as c_int;
    let (vl, vu, abstol) = (0.0f64, 0.0f64, 0.0f64);
    let mut m: c_int = 0;
    let mut w = vec![0.0; n];
    let mut z = vec![0.0; n * k];
    let mut isuppz = vec![0 as c_int; 2 * k];
    let mut info: c_int = 0;
    let mut work_q = [0.0f64];
    let mut iwork_q: [c_int; 1] = [0];
    let minus1: c_int = -1;
    // SAFETY: workspace query; Z has n x k entries with ldz = n.
    unsafe {
        lapack_sys::dsyevr_(
            &jobz,
            &range,
            &uplo,
            &nn,
            buf.as_mut_ptr(),
            &nn,
            &vl,
            &vu,
            &il,
            &iu,
            &abstol,
            &mut m,
            w.as_mut_ptr(),
            z.as_mut_ptr(),
            &nn,
            isuppz.as_mut_ptr(),
            work_q.as_mut_ptr(),
            &minus1,
            iwork_q.as_mut_ptr(),
            &minus1,
            &mut info,
        );
    }
    if info != 0 {
        return Err(LinalgError::Lapack { routine: "dsyevr (query)", info });
    }
    let lwork = work_q[0] as c_int;
    let liwork = iwork_q[0];
    let mut work = vec![0.0; lwork.max(1) as usize];
    let mut iwork = vec![0 as c_int; liwork.max(1) as usize];
    // SAFETY: buffers sized as the workspace query asked.
    unsafe {
        lapack_sys::dsyevr_(
            &jobz,
            &range,
            &uplo,
            &nn,
            buf.as_mut_ptr(),
            &nn,
            &vl,
            &vu,
            &il,
            &iu,
            &abstol,
            &mut m,
            w.as_mut_ptr(),
            z.as_mut_ptr(),
            &nn,
            isuppz.as_mut_ptr(),
            work.as_mut_ptr(),
            &lwork,
            iwork.as_mut_ptr(),
            &liwork,
            &mut info,
        );
    }
    if info != 0 {
        return Err(LinalgError::Lapack { routine: "dsyevr", info });
    }
    if m as usize != k {
        // MRRR can return fewer pairs than asked on tightly clustered spectra (info = 0, m < k);
        // divide and conquer is robust there, at the cost of computing every pair.
        return eigh_range_via_full(a, k, end);
    }
    // Z is column-major n x k: as a row-major k x n array, row j is eigenvector j (ascending).
    let rows = Array2::from_shape_vec((k, n), z).expect("k*n buffer");
    let mut vectors = rows.reversed_axes().as_standard_layout().to_owned();
    let mut values = Array1::from(w[..k].to_vec());
    if let End::Top = end {
        values.invert_axis(Axis(0));
        vectors.invert_axis(Axis(1));
        vectors = vectors.as_standard_layout().to_owned();
    }
    canonicalize_signs(&mut vectors);
    Ok(SymmetricEigen { values, vectors })
}

/// The `k` extremal pairs taken from the full `dsyevd` decomposition (fallback of `eigh_range`).
fn eigh_range_via_full(a: ArrayView2<f64>, k: usize, end: End) -> Result<SymmetricEigen> {
    let full = eigh(a)?;
    let n = full.values.len();
    let idx: Vec<usize> = match end {
        End::Top => (0..k).map(|j| n - 1 - j).collect(),
        End::Bottom => (0..k).collect(),
    };
    let values = idx.iter().map(|&j| full.values[j]).collect();
    let vectors = full.vectors.select(Axis(1), &idx);
    Ok(SymmetricEigen { values, vectors })
}

/// Fixes the sign of every column so that its entry of largest magnitude is positive (ties: the
/// lowest row index). Eigenvectors are defined up to sign; this makes outputs reproducible.
pub fn canonicalize_signs(vectors: &mut Array2<f64>) {
    for mut col in vectors.columns_mut() {
        let mut best = 0usize;
        let mut best_abs = -1.0f64;
        for (i, v) in col.iter().enumerate() {
            if v.abs() > best_abs {
                best_abs = v.abs();
                best = i;
            }
        }
        if col[best] < 0.0 {
            col.mapv_inplace(|v| -v);
        }
    }
}

/// Reconstructs `V diag(values) V^T` (test helper, and handy for checks in callers).
pub fn reconstruct(e: &SymmetricEigen) -> Array2<f64> {
    let scaled = &e.vectors * &e.values.view().insert_axis(Axis(0));
    scaled.dot(&e.vectors.t())
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_abs_diff_eq;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn random_symmetric(n: usize, seed: u64) -> Array2<f64> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let b = Array2::from_shape_fn((n, n), |_| rng.gen_range(-1.0..1.0));
        &b + &b.t()
    }

    #[test]
    fn full_eigh_reconstructs_input_and_is_orthonormal() {
        let a = random_symmetric(60, 1);
        let e = eigh(a.view()).unwrap();
        assert_abs_diff_eq!(reconstruct(&e), a, epsilon = 1e-11);
        let vtv = e.vectors.t().dot(&e.vectors);
        assert_abs_diff_eq!(vtv, Array2::eye(60), epsilon = 1e-12);
        assert!(e.values.windows(2).into_iter().all(|w| w[0] <= w[1]), "ascending");
    }

    #[test]
    fn closed_form_2x2() {
        // [[2,1],[1,2]] has eigenvalues 1 and 3 with vectors (1,-1)/sqrt2 and (1,1)/sqrt2.
        let a = ndarray::array![[2.0, 1.0], [1.0, 2.0]];
        let e = eigh(a.view()).unwrap();
        assert_abs_diff_eq!(e.values[0], 1.0, epsilon = 1e-14);
        assert_abs_diff_eq!(e.values[1], 3.0, epsilon = 1e-14);
        let r = std::f64::consts::FRAC_1_SQRT_2;
        assert_abs_diff_eq!(e.vectors.column(1).to_owned(), ndarray::array![r, r], epsilon = 1e-14);
    }

    #[test]
    fn top_and_bottom_match_full_decomposition() {
        let a = random_symmetric(40, 2);
        let full = eigh(a.view()).unwrap();
        let top = eigh_top(a.view(), 5).unwrap();
        let bottom = eigh_bottom(a.view(), 4).unwrap();
        for j in 0..5 {
            assert_abs_diff_eq!(top.values[j], full.values[39 - j], epsilon = 1e-11);
            assert_abs_diff_eq!(top.vectors.column(j).to_owned(), full.vectors.column(39 - j).to_owned(), epsilon = 1e-9);
        }
        for j in 0..4 {
            assert_abs_diff_eq!(bottom.values[j], full.values[j], epsilon = 1e-11);
            assert_abs_diff_eq!(bottom.vectors.column(j).to_owned(), full.vectors.column(j).to_owned(), epsilon = 1e-9);
        }
        // A v = lambda v for the partial results.
        let av = a.dot(&top.vectors);
        let lv = &top.vectors * &top.values.view().insert_axis(Axis(0));
        assert_abs_diff_eq!(av, lv, epsilon = 1e-10);
    }

    #[test]
    fn fallback_through_the_full_decomposition_agrees_with_dsyevr() {
        let a = random_symmetric(30, 5);
        for (end, k) in [(End::Top, 4), (End::Bottom, 3)] {
            let mrrr = eigh_range(a.view(), k, end).unwrap();
            let full = eigh_range_via_full(a.view(), k, end).unwrap();
            assert_abs_diff_eq!(mrrr.values, full.values, epsilon = 1e-11);
            assert_abs_diff_eq!(mrrr.vectors, full.vectors, epsilon = 1e-9);
        }
        // A spectrum with a 25-fold eigenvalue (the case MRRR can stumble on) still gives k pairs.
        let mut d = Array2::<f64>::eye(30);
        d[[0, 0]] = 5.0;
        let top = eigh_top(d.view(), 3).unwrap();
        assert_abs_diff_eq!(top.values[0], 5.0, epsilon = 1e-12);
        assert_eq!(top.vectors.ncols(), 3);
    }

    #[test]
    fn bad_input_is_an_error() {
        let mut a = random_symmetric(5, 3);
        a[[1, 2]] = f64::NAN;
        assert!(matches!(eigh(a.view()), Err(LinalgError::NotFinite { .. })));
        let rect = Array2::<f64>::zeros((3, 4));
        assert!(matches!(eigh(rect.view()), Err(LinalgError::Shape { .. })));
        let sq = random_symmetric(5, 4);
        assert!(eigh_top(sq.view(), 6).is_err());
        assert!(eigh_top(sq.view(), 0).is_err());
    }
}
