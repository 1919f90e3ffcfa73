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
