//! `structdr`: run experiment specs, embed data, evaluate embeddings, manage data sets. The
//! commands are library code ([`structdr::commands`]); this file sets up the process (SIGPIPE,
//! OpenBLAS kernels, the mirror and data directory) and dispatches.

use clap::Parser;
use structdr::commands::{dispatch, exit, Cli, Command};

fn main() {
    // Rust ignores SIGPIPE, so printing into a closed pipe (`structdr history | head`) panics;
    // the default action ends the process quietly, as for any command-line tool.
    // SAFETY: setting a signal's disposition to its default before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    reexec_with_openblas_coretype();
    keep_freed_memory_for_reuse();
    // clap exits 2 on a usage error, the status of failed cells here: usage errors exit 64
    // (EX_USAGE) instead; `--help` and `--version` print to stdout and exit 0.
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            std::process::exit(if e.use_stderr() { exit::USAGE } else { 0 });
        }
    };
    if let Some(m) = &cli.mirror {
        std::env::set_var("STRUCTDR_MIRROR", m);
    }
    if let Some(d) = &cli.data_dir {
        std::env::set_var("STRUCTDR_DATA", d);
    }
    if matches!(cli.command, Command::Run(_) | Command::Embed(_) | Command::Select(_)) {
        warn_if_blas_kernels_lack_avx512();
    }
    if let Err(e) = dispatch(cli.command) {
        eprintln!("error: {e:#}");
        std::process::exit(exit::exit_code(&e));
    }
}

/// Lets glibc's allocator keep freed memory for the next allocation instead of returning it to
/// the kernel. The solvers allocate and free the same large buffers at every evaluation (a sparse
/// factor's values and its selected inverse: 30 MB each for SPL on letter with K = 50), and by
/// default glibc serves such blocks by `mmap` and unmaps them on `free`, so every evaluation
/// page-faults its buffers in again and the kernel zeroes each page: 23% of that cell's profile
/// was the kernel, and it ran in 98 s against 75 s with the settings below (10.2M page faults
/// against 0.35M, bit-identical results; peak memory 672 -> 867 MB). Blocks up to 32 MiB (glibc's
/// largest `mmap` threshold) come from the heap, freed memory stays there (trim threshold 2 GiB),
/// and the heap grows in 256 MiB steps. Only the allocator's bookkeeping changes, never a
/// result. A `GLIBC_TUNABLES` that sets any `glibc.malloc.` tunable is left to rule.
fn keep_freed_memory_for_reuse() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        if std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("glibc.malloc.")) {
            return;
        }
        // SAFETY: mallopt only sets allocator parameters; called before any other thread exists.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
            libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
            libc::mallopt(libc::M_TOP_PAD, 256 << 20);
        }
    }
}

/// An inherited `OPENBLAS_CORETYPE` is respected, but one that selects AVX2 kernels on a CPU with
/// AVX-512 halves dense linear algebra (MPME / ESL cells take 1.65x longer): say so once.
fn warn_if_blas_kernels_lack_avx512() {
    if std::env::var_os("STRUCTDR_NO_REEXEC").is_some() || !structdr_linalg::blas::cpu_has_avx512f() {
        return;
    }
    let core = structdr_linalg::blas::core_name();
    let lower = core.to_ascii_lowercase();
    if !["skylakex", "cooperlake", "sapphirerapids"].iter().any(|k| lower.contains(k)) {
        eprintln!(
            "warning: OpenBLAS runs {core} kernels on a CPU with AVX-512 (OPENBLAS_CORETYPE={}); \
             `OPENBLAS_CORETYPE=SKYLAKEX` is about 1.65x faster on dense linear algebra",
            std::env::var("OPENBLAS_CORETYPE").unwrap_or_default()
        );
    }
}

/// Debian's OpenBLAS 0.3.21 does not recognise Zen 5 and picks AVX2 kernels; on a CPU with
/// AVX-512 `OPENBLAS_CORETYPE=SKYLAKEX` is 1.65x faster (docs/blas.md B2). The variable is read when
/// the library loads, so the binary re-executes itself once with it set. `STRUCTDR_NO_REEXEC=1`
/// or an explicit `OPENBLAS_CORETYPE` disables this.
fn reexec_with_openblas_coretype() {
    use std::os::unix::process::CommandExt;
    if std::env::var_os("OPENBLAS_CORETYPE").is_some() || std::env::var_os("STRUCTDR_NO_REEXEC").is_some() {
        return;
    }
    if !structdr_linalg::blas::cpu_has_avx512f() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else { return };
    let err = std::process::Command::new(exe).args(std::env::args_os().skip(1)).env("OPENBLAS_CORETYPE", "SKYLAKEX").exec();
    eprintln!("warning: could not re-execute with OPENBLAS_CORETYPE=SKYLAKEX ({err}); continuing");
}
