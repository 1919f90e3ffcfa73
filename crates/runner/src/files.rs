//! Writing output files: atomically (a killed run never leaves half a table, record or figure)
//! and under file-name-safe versions of labels.

use std::io::Write;
use std::path::Path;

/// Writes a file atomically (temp file in the same directory, fsync, rename). The temp file's name
/// is unique to the process and the call, so two threads writing one file at once (two runs of
/// one store in one process) each rename a whole file of their own.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{}.{}.{n}.tmp", path.file_name().and_then(|s| s.to_str()).unwrap_or("out"), std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

/// File-name-safe version of a label.
pub fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '_' }).collect()
}
