//! Append-only JSON-lines files (the nightly history, [`crate::nightly`]): read whole, checked
//! before a long job appends to them ([`check_appendable`]), appended one line at a time, and a
//! line that cannot be appended kept in a side file rather than lost ([`append_or_keep`]).

use crate::files::PathContext;
use anyhow::Result;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Every line of a JSON-lines file (missing: none). A line that does not parse is an error naming
/// the file and the line: such a file is append-only and committed, so a broken line is a
/// corruption to look at, not to skip.
pub fn read_lines<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(crate::files::path_error("read", path, e).into()),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| anyhow::anyhow!("{} line {}: {e}", path.display(), i + 1)))
        .collect()
}

/// Appends one value as one line (a single write of the whole line, then fsync).
pub fn append_line<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    use std::io::Write;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).at_path("create", dir)?;
    }
    let mut line = serde_json::to_string(value)?;
    line.push('\n');
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).at_path("open for appending", path)?;
    f.write_all(line.as_bytes()).at_path("append to", path)?;
    f.sync_all().at_path("sync", path)?;
    Ok(())
}

/// Checks, before a long job, that a JSON-lines file can be read and appended to at its end: its
/// directory exists or can be made, the file (when present) is a readable file whose every line
/// parses as a `T`, and it can be opened for appending (nothing is written; a missing file is
/// created empty by the probe only where it would be created by the append anyway, and removed
/// again). Errors name the path.
pub fn check_appendable<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if dir.exists() && !dir.is_dir() {
            anyhow::bail!("{} is not a directory (it must hold {})", dir.display(), path.file_name().unwrap_or_default().to_string_lossy());
        }
        std::fs::create_dir_all(dir).at_path("create", dir)?;
    }
    if path.exists() && !path.is_file() {
        anyhow::bail!("{} is not a regular file", path.display());
    }
    let existed = path.exists();
    let lines = read_lines(path)?;
    std::fs::OpenOptions::new().create(true).append(true).open(path).at_path("open for appending", path)?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(lines)
}

/// [`append_line`], and when that fails, the line written to a side file instead so the work it
/// records is not lost: `<file>.unsaved-<unix time>.json` beside it, else in the system's temp
/// directory. The error names the file, the cause and where the line is.
pub fn append_or_keep<T: Serialize>(path: &Path, value: &T, stamp: u64) -> Result<()> {
    let Err(e) = append_line(path, value) else { return Ok(()) };
    let name = format!("{}.unsaved-{stamp}.json", path.file_name().unwrap_or_default().to_string_lossy());
    let text = serde_json::to_string(value)? + "\n";
    let beside = path.with_file_name(&name);
    let kept: Option<PathBuf> = [beside, std::env::temp_dir().join(&name)].into_iter().find(|p| crate::files::atomic_write(p, text.as_bytes()).is_ok());
    match kept {
        Some(p) => Err(e.context(format!("this run's entry is kept in {} (append it with `cat {} >> {}`)", p.display(), p.display(), path.display()))),
        None => {
            // the last place left: the run's output
            println!("unsaved entry of {}: {}", path.display(), text.trim_end());
            Err(e.context("this run's entry could not be kept in a side file either; it is printed above"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check refuses a corrupt file, a directory in the file's place and a file in the
    /// directory's, naming the path; a line that cannot be appended is kept in a side file.
    #[test]
    fn a_bad_journal_is_refused_before_and_an_unsaved_line_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("h/x.jsonl");
        assert!(check_appendable::<u32>(&p).unwrap().is_empty() && !p.exists(), "a missing file is fine and not left behind");
        append_line(&p, &7u32).unwrap();
        assert_eq!(check_appendable::<u32>(&p).unwrap(), vec![7]);
        std::fs::write(&p, "7\nnot json\n").unwrap();
        let e = format!("{:#}", check_appendable::<u32>(&p).unwrap_err());
        assert!(e.contains(&format!("{} line 2", p.display())), "{e}");
        std::fs::remove_file(&p).unwrap();
        std::fs::create_dir(&p).unwrap();
        assert!(format!("{:#}", check_appendable::<u32>(&p).unwrap_err()).contains("not a regular file"));
        let file_dir = dir.path().join("f");
        std::fs::write(&file_dir, b"").unwrap();
        assert!(format!("{:#}", check_appendable::<u32>(&file_dir.join("x.jsonl")).unwrap_err()).contains("is not a directory"));
        // appending fails (its directory is a file, so no side file beside it either): the line
        // goes to the temp directory, named in the error
        let e = format!("{:#}", append_or_keep(&file_dir.join("x.jsonl"), &42u32, 1234).unwrap_err());
        let kept = std::env::temp_dir().join("x.jsonl.unsaved-1234.json");
        assert!(e.contains(&kept.display().to_string()) && e.contains("cannot create"), "{e}");
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "42\n");
        std::fs::remove_file(&kept).unwrap();
        // beside the history when its directory is writable but the file is not appendable
        let e = format!("{:#}", append_or_keep(&p, &42u32, 99).unwrap_err());
        assert!(e.contains("x.jsonl.unsaved-99.json"), "{e}");
        assert_eq!(std::fs::read_to_string(dir.path().join("h/x.jsonl.unsaved-99.json")).unwrap(), "42\n");
    }
}
