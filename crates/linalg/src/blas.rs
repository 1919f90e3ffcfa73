//! OpenBLAS thread control.
//!
//! OpenBLAS (pthreads) and rayon keep separate thread pools; calling multi-threaded BLAS inside
//! `par_iter` oversubscribes the cores (docs/blas.md B4). The runner therefore runs every parallel grid
//! cell with one BLAS thread. OpenBLAS also reduces in a thread-count-dependent order for some
//! kernels, so fixing the BLAS thread count is part of bit-identical reproducibility.

use std::os::raw::{c_char, c_int};

extern "C" {
    fn openblas_set_num_threads(n: c_int);
    fn openblas_get_num_threads() -> c_int;
    fn openblas_get_corename() -> *const c_char;
    fn openblas_get_config() -> *const c_char;
}

/// Sets the number of OpenBLAS threads for the whole process.
pub fn set_num_threads(n: usize) {
    // SAFETY: plain setter of the OpenBLAS global; any positive count is valid.
    unsafe { openblas_set_num_threads(n.max(1) as c_int) }
}

/// The number of threads OpenBLAS currently uses.
pub fn num_threads() -> usize {
    // SAFETY: plain getter of the OpenBLAS global.
    unsafe { openblas_get_num_threads().max(1) as usize }
}

/// The kernel family OpenBLAS selected for this CPU (e.g. `Haswell`, `SkylakeX`).
pub fn core_name() -> String {
    // SAFETY: OpenBLAS returns a pointer to a static NUL-terminated string.
    unsafe {
        let p = openblas_get_corename();
        if p.is_null() {
            return "unknown".into();
        }
        std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// OpenBLAS's build configuration, e.g. `OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell
/// MAX_THREADS=64` (version, build options, the build's default core).
pub fn config() -> String {
    // SAFETY: OpenBLAS returns a pointer to a static NUL-terminated string.
    unsafe {
        let p = openblas_get_config();
        if p.is_null() {
            return "unknown".into();
        }
        std::ffi::CStr::from_ptr(p).to_string_lossy().trim().to_string()
    }
}

/// Runs `f` with `n` BLAS threads and restores the previous count afterwards.
///
/// The OpenBLAS thread count is process-global: callers that run this concurrently from several
/// threads should all ask for the same count (the runner always uses 1 inside parallel cells).
pub fn with_threads<T>(n: usize, f: impl FnOnce() -> T) -> T {
    let previous = num_threads();
    set_num_threads(n);
    let out = f();
    set_num_threads(previous);
    out
}

/// Whether this CPU has AVX-512F (Linux only; false elsewhere).
///
/// Debian's OpenBLAS 0.3.21 does not recognise Zen 5 and falls back to Haswell (AVX2) kernels; with
/// AVX-512 present, `OPENBLAS_CORETYPE=SKYLAKEX` is 1.65x faster on dgemm (docs/blas.md B2). The
/// variable must be set before the library loads, which is why the binary re-executes itself.
pub fn cpu_has_avx512f() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").map(|s| s.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "avx512f"))).unwrap_or(false)
}
