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
/// The OpenBLAS thread count is process-global: work that may overlap with other work asking for
/// threads (parallel cells, Python threads) holds them with [`hold_threads`] instead.
pub fn with_threads<T>(n: usize, f: impl FnOnce() -> T) -> T {
    let previous = num_threads();
    set_num_threads(n);
    let out = f();
    set_num_threads(previous);
    out
}

/// The holders of [`hold_threads`] alive now, and the count to restore when the last one ends.
struct Held {
    holders: usize,
    saved: usize,
}

static HELD: std::sync::Mutex<Held> = std::sync::Mutex::new(Held { holders: 0, saved: 1 });

/// Holds `n` BLAS threads while the returned guard lives, for work that may overlap with other
/// holders in the process (the runner's parallel cells, Python threads that fit at once): the
/// first holder remembers the process's count and the last one to end restores it. With
/// [`with_threads`], the first of two overlapping fits to end would restore the count while the
/// other still runs, which then rounds like neither. Every holder sets `n` when it starts, so
/// overlapping holders should ask for the same count (they do: the runner always asks for 1, the
/// Python module for its one configured count).
pub fn hold_threads(n: usize) -> HeldThreads {
    let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    if held.holders == 0 {
        held.saved = num_threads();
    }
    held.holders += 1;
    set_num_threads(n);
    HeldThreads { _private: () }
}

/// The guard of [`hold_threads`]: the last one dropped restores the thread count from before the
/// first.
#[must_use = "the thread count is held only while the guard lives"]
pub struct HeldThreads {
    _private: (),
}

impl Drop for HeldThreads {
    fn drop(&mut self) {
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        held.holders -= 1;
        if held.holders == 0 {
            set_num_threads(held.saved);
        }
    }
}

/// Whether this CPU has AVX-512F (Linux only; false elsewhere).
///
/// Debian's OpenBLAS 0.3.21 does not recognise Zen 5 and falls back to Haswell (AVX2) kernels; with
/// AVX-512 present, `OPENBLAS_CORETYPE=SKYLAKEX` is 1.65x faster on dgemm (docs/blas.md B2). The
/// variable must be set before the library loads, which is why the binary re-executes itself.
pub fn cpu_has_avx512f() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").map(|s| s.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "avx512f"))).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Overlapping holders keep the held count until the last one ends, which restores the count
    /// from before the first; a later holder starts from the restored count again. (The only test
    /// of this crate that changes the process's count.)
    #[test]
    fn the_last_holder_restores_the_count_from_before_the_first() {
        set_num_threads(3);
        let first = hold_threads(1);
        assert_eq!(num_threads(), 1);
        let second = hold_threads(1);
        drop(first);
        assert_eq!(num_threads(), 1, "a holder ended while another runs: the count must stay held");
        drop(second);
        assert_eq!(num_threads(), 3);
        // a holder that ends first in another thread leaves the one here holding
        let here = hold_threads(2);
        std::thread::spawn(|| drop(hold_threads(2))).join().unwrap();
        assert_eq!(num_threads(), 2);
        drop(here);
        assert_eq!(num_threads(), 3);
        set_num_threads(1);
    }
}
