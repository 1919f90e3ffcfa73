//! Exports L-BFGS-B's reference BLAS level-1 routines from the extension module, as the
//! `structdr` executable does.
//!
//! `lbfgsb-sys` compiles L-BFGS-B 3.0 with its own `blas.f` (`daxpy_`, `dcopy_`, `ddot_`,
//! `dnrm2_`, `dscal_`). An executable exports a definition that a shared library it links
//! references, so in `structdr` the LAPACK inside OpenBLAS binds these five names to the reference
//! routines (the dynamic linker looks in the executable first). A Rust cdylib hides them, and the
//! LAPACK of the same OpenBLAS then runs OpenBLAS's own kernels: eigensolvers round differently in
//! the last bits, and non-convex fits (t-SNE, MPME) end elsewhere. Exporting the five names from
//! the module puts them first in the lookup scope of the OpenBLAS it loads, so a fit from Python
//! equals `structdr embed` bit for bit.
fn main() {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let script = out.join("reference_blas.map");
    std::fs::write(&script, "{\n  global:\n    daxpy_;\n    dcopy_;\n    ddot_;\n    dnrm2_;\n    dscal_;\n};\n").expect("writing the version script");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={}", script.display());
    println!("cargo:rerun-if-changed=build.rs");
}
