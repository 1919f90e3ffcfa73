//! Records the git commit in the binary (`structdr --version`, every result record).
//!
//! The stamp is `<short hash>` for a build of a committed tree and `<short hash>-dirty` when the
//! code the binary is built from (`crates/`, `baselines/`, the workspace manifest and lock file)
//! differs from that commit: a binary built before its changes are committed must not pass for
//! its parent commit in the records it writes. Changes elsewhere (records, docs, specs) do not
//! make the code dirty, so a recompute that rewrites tracked records leaves later builds clean.
//! Without git (an unpacked source archive) the stamp is `unknown`.

/// The tracked paths the binary is compiled from, relative to the workspace root.
const CODE_PATHS: [&str; 4] = ["crates", "baselines", "Cargo.toml", "Cargo.lock"];

fn git(args: &[&str]) -> Option<String> {
    // --no-optional-locks: `git status` would otherwise refresh and rewrite .git/index (it does on
    // a fresh clone), an input this script watches below, so the next build would run it again and
    // recompile the crate
    std::process::Command::new("git")
        .arg("--no-optional-locks")
        .args(args)
        .current_dir("../..")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn main() {
    let stamp = match git(&["rev-parse", "--short=10", "HEAD"]) {
        None => "unknown".to_string(),
        Some(hash) => {
            let mut args = vec!["status", "--porcelain", "--untracked-files=no", "--"];
            args.extend(CODE_PATHS);
            match git(&args) {
                Some(changes) if changes.is_empty() => hash,
                // Changed code, or a status that could not be read: never claim a clean tree.
                _ => format!("{hash}-dirty"),
            }
        }
    };
    println!("cargo:rustc-env=STRUCTDR_GIT_HASH={stamp}");
    println!("cargo:rerun-if-changed=../../.git/HEAD");
    println!("cargo:rerun-if-changed=../../.git/refs");
    // Staging or committing rewrites the index; an edit to the code changes the files below
    // (Cargo scans a directory's files for a newer modification time).
    println!("cargo:rerun-if-changed=../../.git/index");
    for path in CODE_PATHS {
        println!("cargo:rerun-if-changed=../../{path}");
    }
}
