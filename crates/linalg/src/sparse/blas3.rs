//! Dense kernels of the supernodal factorisation: BLAS-3 / LAPACK from the OpenBLAS the workspace
//! links (Fortran interface, column-major, every matrix given by a pointer and a leading dimension).

use std::os::raw::{c_char, c_int};

extern "C" {
    fn dgemm_(
        ta: *const c_char,
        tb: *const c_char,
        m: *const c_int,
        n: *const c_int,
        k: *const c_int,
        alpha: *const f64,
        a: *const f64,
        lda: *const c_int,
        b: *const f64,
        ldb: *const c_int,
        beta: *const f64,
        c: *mut f64,
        ldc: *const c_int,
    );
    fn dsyrk_(
        uplo: *const c_char,
        trans: *const c_char,
        n: *const c_int,
        k: *const c_int,
        alpha: *const f64,
        a: *const f64,
        lda: *const c_int,
        beta: *const f64,
        c: *mut f64,
        ldc: *const c_int,
    );
    fn dtrsm_(
        side: *const c_char,
        uplo: *const c_char,
        ta: *const c_char,
        diag: *const c_char,
        m: *const c_int,
        n: *const c_int,
        alpha: *const f64,
        a: *const f64,
        lda: *const c_int,
        b: *mut f64,
        ldb: *const c_int,
    );
    fn dsymm_(
        side: *const c_char,
        uplo: *const c_char,
        m: *const c_int,
        n: *const c_int,
        alpha: *const f64,
        a: *const f64,
        lda: *const c_int,
        b: *const f64,
        ldb: *const c_int,
        beta: *const f64,
        c: *mut f64,
        ldc: *const c_int,
    );
}

fn i(v: usize) -> c_int {
    c_int::try_from(v).expect("dimension fits a BLAS integer")
}
fn ch(c: u8) -> c_char {
    c as c_char
}

/// `C = alpha op(A) op(B) + beta C` (`op(A)` m x k, `op(B)` k x n).
///
/// # Safety
/// The pointers must address column-major matrices of the given shapes and leading
/// dimensions; `c` must not overlap `a` or `b`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm(
    ta: u8,
    tb: u8,
    m: usize,
    n: usize,
    k: usize,
    alpha: f64,
    a: *const f64,
    lda: usize,
    b: *const f64,
    ldb: usize,
    beta: f64,
    c: *mut f64,
    ldc: usize,
) {
    if m == 0 || n == 0 {
        return;
    }
    dgemm_(&ch(ta), &ch(tb), &i(m), &i(n), &i(k), &alpha, a, &i(lda), b, &i(ldb), &beta, c, &i(ldc));
}

/// Lower triangle of `C = alpha A A^T + beta C` (`A` n x k).
///
/// # Safety
/// As [`gemm`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn syrk_ln(n: usize, k: usize, alpha: f64, a: *const f64, lda: usize, beta: f64, c: *mut f64, ldc: usize) {
    syrk_lower(b'N', n, k, alpha, a, lda, beta, c, ldc);
}

/// Lower triangle of `C = alpha op(A) op(A)^T + beta C` (`op(A)` n x k; `trans` `b'N'`: `A A^T`,
/// `b'T'`: `A^T A`).
///
/// # Safety
/// As [`gemm`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn syrk_lower(trans: u8, n: usize, k: usize, alpha: f64, a: *const f64, lda: usize, beta: f64, c: *mut f64, ldc: usize) {
    if n == 0 {
        return;
    }
    dsyrk_(&ch(b'L'), &ch(trans), &i(n), &i(k), &alpha, a, &i(lda), &beta, c, &i(ldc));
}

/// `B = B op(L)^-1` (side right) with `L` lower triangular, non-unit (`B` m x n).
///
/// # Safety
/// As [`gemm`] (`b` must not overlap `l`).
pub unsafe fn trsm_rl(trans: u8, m: usize, n: usize, l: *const f64, ldl: usize, b: *mut f64, ldb: usize) {
    if m == 0 || n == 0 {
        return;
    }
    dtrsm_(&ch(b'R'), &ch(b'L'), &ch(trans), &ch(b'N'), &i(m), &i(n), &1.0, l, &i(ldl), b, &i(ldb));
}

/// `C = alpha A B + beta C` with `A` symmetric m x m, lower triangle read (`B` m x n).
///
/// # Safety
/// As [`gemm`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn symm_ll(m: usize, n: usize, alpha: f64, a: *const f64, lda: usize, b: *const f64, ldb: usize, beta: f64, c: *mut f64, ldc: usize) {
    if m == 0 || n == 0 {
        return;
    }
    dsymm_(&ch(b'L'), &ch(b'L'), &i(m), &i(n), &alpha, a, &i(lda), b, &i(ldb), &beta, c, &i(ldc));
}

/// Cholesky of the lower triangle of the n x n matrix at `a` (`dpotrf`); `Err(j)`: the
/// leading minor of order `j + 1` is not positive definite.
///
/// # Safety
/// `a` must address an n x n column-major matrix with leading dimension `lda`.
pub unsafe fn potrf_l(n: usize, a: *mut f64, lda: usize) -> Result<(), usize> {
    if n == 0 {
        return Ok(());
    }
    let mut info: c_int = 0;
    lapack_sys::dpotrf_(&ch(b'L'), &i(n), a, &i(lda), &mut info);
    match info {
        0 => Ok(()),
        k if k > 0 => Err(k as usize - 1),
        k => panic!("dpotrf: argument {} invalid", -k),
    }
}
