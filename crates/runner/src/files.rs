//! Writing output files: atomically (a killed run never leaves half a table, record or figure,
//! and a failed write leaves no temporary file), under file-name-safe versions of labels, with
//! every I/O error naming its path ([`PathContext`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// An I/O error that names what was being done and the path it was done to ("cannot write
/// results/t/table.md: Is a directory"), keeping the error's kind so callers can still match on
/// it. std's errors carry no path: without this, a read-only results directory says only
/// "Permission denied".
pub fn path_error(what: &str, path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("cannot {what} {}: {e}", path.display()))
}

/// [`path_error`] on a result: `std::fs::create_dir_all(d).at_path("create", d)?`.
pub trait PathContext<T> {
    /// The error, if any, named with `what` and `path` ([`path_error`]).
    fn at_path(self, what: &str, path: &Path) -> std::io::Result<T>;
}

impl<T> PathContext<T> for std::io::Result<T> {
    fn at_path(self, what: &str, path: &Path) -> std::io::Result<T> {
        self.map_err(|e| path_error(what, path, e))
    }
}

/// Suffix of the temporary files [`atomic_write`] renames into place.
const TEMP_SUFFIX: &str = ".tmp";

/// Writes a file atomically (temp file in the same directory, fsync, rename). The temp file's name
/// is unique to the process and the call (`.<name>.<pid>.<n>.tmp`), so two threads writing one
/// file at once (two runs of one store in one process) each rename a whole file of their own, and
/// a sweep ([`sweep_stale_temps`]) can tell a dead writer's leftovers by the process id. On any
/// error (a full disk, a read-only directory, a target that is a directory) the temp file is
/// removed and the error names the path.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    atomic_write_with(path, |f| f.write_all(bytes))
}

/// [`atomic_write`] with the content written by `fill` (a stream: a large file need not be held
/// in memory first; a unit test injects a failing writer).
pub fn atomic_write_with(path: &Path, fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>) -> std::io::Result<()> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).at_path("create the directory", dir)?;
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{}.{}.{n}{TEMP_SUFFIX}", path.file_name().and_then(|s| s.to_str()).unwrap_or("out"), std::process::id()));
    let mut f = std::fs::File::create(&tmp).at_path("create", &tmp)?;
    let written = fill(&mut f).and_then(|_| f.sync_all()).at_path("write", path);
    drop(f);
    // A full disk fails the write or the fsync; a directory in the way fails the rename. Either
    // way the temp file must go, or records/ fills with zero-byte leftovers.
    match written.and_then(|_| std::fs::rename(&tmp, path).at_path("write", path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// A temp file left this long by a writer that is not running on this host is a dead writer's
/// (writing a record or a fit takes milliseconds to seconds). The age guards a store shared over
/// a network file system: a writer on another host has a process id this host does not know.
pub const STALE_TEMP_AGE: Duration = Duration::from_secs(600);

/// Removes the temp files of dead writers from `dir` (not recursive): files named as
/// [`atomic_write`] names them whose process id is not running on this host and that are older
/// than [`STALE_TEMP_AGE`]. A killed writer (SIGKILL, a power cut) cannot clean up after itself;
/// a store sweeps when it opens. Returns the files removed.
pub fn sweep_stale_temps(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = temp_writer(&name) else { continue };
        let old = e.metadata().ok().and_then(|m| m.modified().ok()).and_then(|t| t.elapsed().ok()).is_some_and(|a| a >= STALE_TEMP_AGE);
        let alive = Path::new("/proc/self").exists() && Path::new(&format!("/proc/{pid}")).exists();
        if old && !alive && std::fs::remove_file(e.path()).is_ok() {
            removed.push(e.path());
        }
    }
    removed
}

/// The writer's process id of a temp file name of [`atomic_write`] (`.<name>.<pid>.<n>.tmp`).
fn temp_writer(name: &str) -> Option<u32> {
    let stem = name.strip_prefix('.')?.strip_suffix(TEMP_SUFFIX)?;
    let mut parts = stem.rsplitn(3, '.');
    let (n, pid, target) = (parts.next()?, parts.next()?, parts.next()?);
    (!target.is_empty() && n.parse::<u64>().is_ok()).then_some(())?;
    pid.parse().ok()
}

/// File-name-safe version of a label.
pub fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '_' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temps(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).filter(|n| n.ends_with(TEMP_SUFFIX)).collect()
    }

    /// A write that fails (a full disk: writing to /dev/full's error, injected), a rename onto a
    /// directory, and a directory that cannot be created each end in an error naming the path,
    /// and leave no temp file behind.
    #[test]
    fn a_failed_write_names_its_path_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("r.json");
        let full = atomic_write_with(&target, |f| {
            f.write_all(b"{")?;
            // what a write to a full disk gives (ENOSPC), as /dev/full answers every write
            match std::fs::OpenOptions::new().write(true).open("/dev/full") {
                Ok(mut dev_full) => dev_full.write_all(b"x").and_then(|_| dev_full.flush()),
                Err(_) => Err(std::io::Error::from_raw_os_error(28)),
            }
        })
        .unwrap_err();
        assert_eq!(full.raw_os_error(), None, "wrapped with its path");
        assert!(full.to_string().contains(&target.display().to_string()) && full.to_string().contains("No space left"), "{full}");
        assert!(temps(dir.path()).is_empty() && !target.exists());
        // the target is a directory: the rename fails
        std::fs::create_dir(&target).unwrap();
        let e = atomic_write(&target, b"{}").unwrap_err();
        assert!(e.to_string().contains(&target.display().to_string()), "{e}");
        assert!(temps(dir.path()).is_empty(), "{:?}", temps(dir.path()));
        // the directory cannot be made (a file is in the way)
        std::fs::write(dir.path().join("f"), b"").unwrap();
        let e = atomic_write(&dir.path().join("f/x.json"), b"{}").unwrap_err();
        assert!(e.to_string().contains(&dir.path().join("f").display().to_string()), "{e}");
        // a write that works leaves exactly the file
        atomic_write(&dir.path().join("ok.json"), b"{}").unwrap();
        assert_eq!(std::fs::read(dir.path().join("ok.json")).unwrap(), b"{}");
        assert!(temps(dir.path()).is_empty());
    }

    /// The sweep removes old temp files of processes that are gone, and keeps a live writer's, a
    /// young one's, and files that are not temp files.
    #[test]
    fn the_sweep_removes_only_dead_writers_old_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let old = std::time::SystemTime::now() - 2 * STALE_TEMP_AGE;
        let make = |name: &str, aged: bool| {
            let p = dir.path().join(name);
            std::fs::write(&p, b"").unwrap();
            if aged {
                std::fs::File::options().write(true).open(&p).unwrap().set_modified(old).unwrap();
            }
            p
        };
        let dead = make(".abc.json.4294967.0.tmp", true);
        let live = make(&format!(".abc.json.{}.1.tmp", std::process::id()), true);
        let young = make(".abc.json.4294967.2.tmp", false);
        let other = make(".notes.tmp", true);
        let record = make("abc.json", true);
        assert_eq!(temp_writer(".table.md.12.3.tmp"), Some(12));
        assert_eq!(temp_writer(".x.tmp"), None);
        let removed = sweep_stale_temps(dir.path());
        assert_eq!(removed, vec![dead.clone()]);
        assert!(!dead.exists() && live.exists() && young.exists() && other.exists() && record.exists());
    }
}
