//! The commits the nightly suite ([`crate::nightly`]) runs: their identity (hash, date, subject,
//! whether the checkout has changes), whether two of them share their code, and a commit's
//! binary, built in its own git worktree. The backfill (`--commits`) runs each built commit; the
//! paired speed comparison runs the last accepted run's commit beside this binary.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `git` in `dir`, trimmed stdout, or an error with its stderr.
pub fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git").current_dir(dir).args(args).output().context("cannot run git")?;
    if !out.status.success() {
        bail!("git {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Commit hash (with `+dirty` for a checkout with changes to tracked files outside `results/`),
/// date and subject.
pub fn commit_info(dir: &Path, rev: &str, check_dirty: bool) -> Result<(String, String, String)> {
    let line = git(dir, &["log", "-1", "--format=%H%x09%cI%x09%s", rev])?;
    let mut parts = line.splitn(3, '\t');
    let (hash, date, subject) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string());
    // changes under results/ (the history itself, regenerated tables) are not changes of the code
    let dirty = check_dirty && !git(dir, &["status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results"])?.is_empty();
    Ok((if dirty { format!("{hash}+dirty") } else { hash }, date, subject))
}

/// Whether `base` has the same tracked files outside `results/` as `other` (a commit), or, with
/// `other` None, as the checkout in `dir` (its uncommitted changes included): then the two
/// binaries are the same code and a paired comparison would time a program against itself.
pub fn same_code(dir: &Path, base: &str, other: Option<&str>) -> Result<bool> {
    let mut args = vec!["diff", "--quiet", base];
    args.extend(other);
    args.extend(["--", ".", ":(exclude)results"]);
    let status = Command::new("git").current_dir(dir).args(&args).status().context("cannot run git")?;
    match status.code() {
        Some(0) => Ok(true),
        Some(1) => Ok(false),
        _ => bail!("git diff {base}: {status}"),
    }
}

/// A commit's `structdr` binary, copied out of the shared build cache (the next build there
/// overwrites the cache's copy); deleted with this value.
pub struct Built {
    /// The commit (full hash).
    pub commit: String,
    /// The binary.
    pub binary: PathBuf,
    _dir: tempfile::TempDir,
}

/// Builds `rev` (of the repository in `dir`) in a fresh git worktree, into the build cache
/// `dir/target/backfill` shared by every such build (dependencies built once), and copies its
/// binary out; a binary kept from an earlier build of the commit is taken without building. The
/// worktree is removed afterwards, built or not.
pub fn build_commit(dir: &Path, rev: &str) -> Result<Built> {
    let commit = git(dir, &["rev-parse", "--verify", &format!("{rev}^{{commit}}")])?;
    // a commit's binary is kept under target/backfill/bin/<commit>: the baseline of a nightly
    // run is the same commit night after night, and its build costs minutes on a small machine
    let kept = dir.join("target").join("backfill").join("bin").join(&commit).join("structdr");
    let keep = tempfile::Builder::new().prefix("structdr-bin-").tempdir()?;
    let binary = keep.path().join("structdr");
    if kept.is_file() && std::fs::copy(&kept, &binary).is_ok() {
        return Ok(Built { commit, binary, _dir: keep });
    }
    // One target directory for every worktree. Each worktree is checked out fresh, so its files
    // are newer than any artifact there and cargo rebuilds the workspace crates (its freshness
    // check is by mtime, and a path crate's artifacts do not depend on where the checkout lies).
    let target = dir.join("target").join("backfill");
    let wt = tempfile::Builder::new().prefix("structdr-backfill-").tempdir()?;
    let tree = wt.path().join("tree");
    git(dir, &["worktree", "add", "--detach", tree.to_str().context("worktree path is not UTF-8")?, &commit])?;
    let built = Command::new("cargo")
        .current_dir(&tree)
        .args(["build", "--release", "--quiet", "-p", "structdr", "--bin", "structdr"])
        .env("CARGO_TARGET_DIR", &target)
        .status();
    let _ = git(dir, &["worktree", "remove", "--force", tree.to_str().unwrap_or_default()]);
    match built {
        Ok(s) if s.success() => {}
        Ok(s) => bail!("commit {commit}: cargo build failed ({s})"),
        Err(e) => bail!("commit {commit}: cannot run cargo: {e}"),
    }
    std::fs::copy(target.join("release").join("structdr"), &binary).with_context(|| format!("commit {commit}: cannot copy its binary"))?;
    // keeping it is an optimisation: a failure only means the next run builds again
    if let Some(parent) = kept.parent() {
        let _ = std::fs::create_dir_all(parent).and_then(|_| std::fs::copy(&binary, &kept));
    }
    Ok(Built { commit, binary, _dir: keep })
}
