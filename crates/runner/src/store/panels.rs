//! Committed figure panels ([`PanelStore`], `<out>/panels/`): the fits the figures draw, one
//! gzip-compressed file per fit key, tracked in git so that a fresh clone redraws every figure
//! without refitting.
//!
//! A panel holds exactly what the fit cache ([`crate::store::FitStore`]) holds for the key: the
//! fit as [`crate::store::fit_text`] writes it (streamed: [`write_fit`]) (floats in shortest round-trip form, so the fit read back is bit
//! for bit the fresh one, and so is the figure drawn from it, fit time in `figures.md` included).
//! Only the fits of figure panels and best-embedding figures land here, not the grid's. The file
//! is named by the hash of the fit key, which carries the method's version: a method whose
//! numerics change gets a new key, its old panel is never read and the figure refits.

use crate::keys::{fit_key, CellKey};
use crate::store::fits::{parse_fit, write_fit};
use flate2::{read::GzDecoder, write::GzEncoder, Compression};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use structdr_methods::Fitted;

/// Name of the committed panels inside a spec's output directory.
pub const PANELS_DIR: &str = "panels";

/// File name extension of a panel: gzip-compressed fit JSON.
const EXT: &str = "json.gz";

/// File name extension of a degenerate panel: the fit key, the method's reason and the fit's
/// seconds as plain JSON ([`DegeneratePanel`]).
const DEGENERATE_EXT: &str = "degenerate.json";

/// A fit the method called degenerate (an undetermined embedding, a trivial optimum): kept beside
/// the panels so that a figure drawing it as a gap does not refit it on every fresh clone.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DegeneratePanel {
    /// The fit key it was stored under.
    pub key: CellKey,
    /// The method's reason.
    pub degenerate: String,
    /// Seconds the fit took before the method gave its reason.
    pub fit_seconds: f64,
}

/// A panel larger than this, compressed, is not written: it would weigh on every clone of the
/// repository (Fashion-MNIST's landmark tree carries its 70,000 x 187 projection, 123 MB), so its
/// figure refits on a fresh clone and draws from the git-ignored fit cache after.
pub const MAX_PANEL_BYTES: usize = 4 << 20;

/// A panel file larger than this once decompressed is refused (a damaged or hostile file must not
/// fill memory; the largest real panel is a few MB of JSON).
const MAX_JSON_BYTES: u64 = 256 << 20;

/// The committed panels of a spec: read first by [`crate::exec::fit_only`], written whenever a
/// figure's fit is made or taken from the fit cache. It only reads and writes; the fits are made by
/// [`crate::exec`].
pub struct PanelStore {
    dir: PathBuf,
}

impl PanelStore {
    /// The panels of a spec's output directory, `<out_dir>/panels` (created on the first write).
    pub fn open_in(out_dir: &Path) -> PanelStore {
        PanelStore { dir: out_dir.join(PANELS_DIR) }
    }

    /// The file a panel of `key` is stored in: the hash of its fit key.
    pub fn path(&self, key: &CellKey) -> PathBuf {
        self.dir.join(format!("{}.{EXT}", fit_key(key).hash()))
    }

    /// The panel of `key` and its fit seconds, if present, readable, consistent and stored under
    /// this very fit key (a file renamed or copied under another key's name is not used).
    pub fn get(&self, key: &CellKey) -> Option<(Fitted, f64)> {
        let (stored_key, fitted, seconds) = read_panel(&self.path(key)).ok()?;
        (stored_key == fit_key(key)).then_some((fitted, seconds))
    }

    /// The file a degenerate fit of `key` is stored in.
    fn degenerate_path(&self, key: &CellKey) -> PathBuf {
        self.dir.join(format!("{}.{DEGENERATE_EXT}", fit_key(key).hash()))
    }

    /// The method's reason when the fit of `key` is stored as degenerate (under this very fit key).
    pub fn get_degenerate(&self, key: &CellKey) -> Option<String> {
        let stored = read_degenerate_panel(&self.degenerate_path(key)).ok()?;
        (stored.key == fit_key(key)).then_some(stored.degenerate)
    }

    /// Stores that the fit of `key` is degenerate for `reason` (after `seconds`), leaving a file
    /// with the same key and reason untouched. Best effort, as [`PanelStore::put`].
    pub fn put_degenerate(&self, key: &CellKey, reason: &str, seconds: f64) {
        if self.get_degenerate(key).is_some_and(|r| r == reason) {
            return;
        }
        let stored = DegeneratePanel { key: fit_key(key), degenerate: reason.to_string(), fit_seconds: seconds };
        let text = serde_json::to_string_pretty(&stored).expect("a degenerate panel serialises");
        let _ = std::fs::create_dir_all(&self.dir);
        let _ = crate::files::atomic_write(&self.degenerate_path(key), text.as_bytes());
    }

    /// Stores the fit of `key` (made in `seconds`) unless the panel already holds exactly this
    /// fit (so redrawing leaves committed files untouched) or it would exceed [`MAX_PANEL_BYTES`]
    /// compressed. Best effort, as the fit cache: a fit that cannot be written is skipped and the
    /// figure refits on a fresh clone.
    pub fn put(&self, key: &CellKey, fitted: &Fitted, seconds: f64) {
        let path = self.path(key);
        // Streamed through the compressor into a buffer that refuses to pass the limit, so a fit
        // too large to commit (a 1,000,000 x 50 projection) stops being written as soon as that
        // is known, instead of being serialised and compressed whole. Fixed header (no name, no
        // time), so the same fit always gives the same bytes.
        let mut gz = GzEncoder::new(Capped { bytes: Vec::new(), cap: MAX_PANEL_BYTES }, Compression::best());
        let streamed = {
            let mut w = std::io::BufWriter::with_capacity(1 << 16, &mut gz);
            write_fit(&mut w, key, fitted, seconds).and_then(|_| w.flush())
        };
        let Ok(bytes) = streamed.and_then(|_| gz.finish()).map(|c| c.bytes) else {
            // too large to commit (or not writable): an older panel of the key would be stale
            let _ = std::fs::remove_file(&path);
            return;
        };
        // leave a file holding exactly this fit untouched (its bytes may come from another
        // compressor version)
        let mut text = String::new();
        if GzDecoder::new(&bytes[..]).read_to_string(&mut text).is_ok() && read_json(&path).is_ok_and(|old| old == text) {
            return;
        }
        let _ = crate::files::atomic_write(&path, &bytes);
    }
}

/// A byte buffer that fails a write taking it past `cap` bytes.
struct Capped {
    bytes: Vec<u8>,
    cap: usize,
}

impl Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len() + buf.len() > self.cap {
            return Err(std::io::Error::other(format!("a panel over {} MB compressed is not stored", self.cap >> 20)));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl PanelStore {
    /// Removes every panel whose method version differs from `current(key)` (or whose method
    /// `current` does not know), as [`crate::store::Store::prune`] does for records: a method
    /// whose numerics changed draws from new panels, and the old ones would only weigh on the
    /// repository. Unreadable files are left alone and counted as kept. Returns `(kept, removed)`;
    /// with `dry_run` only counts.
    pub fn prune(&self, current: impl Fn(&CellKey) -> Option<u32>, dry_run: bool) -> std::io::Result<(usize, usize)> {
        let (mut kept, mut removed) = (0, 0);
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return Ok((0, 0)) };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().ends_with(EXT) || p.to_string_lossy().ends_with(DEGENERATE_EXT))
            .collect();
        paths.sort();
        for path in paths {
            let stored_key = if path.to_string_lossy().ends_with(DEGENERATE_EXT) {
                read_degenerate_panel(&path).map(|d| d.key).map_err(|_| ())
            } else {
                read_panel(&path).map(|(key, _, _)| key).map_err(|_| ())
            };
            match stored_key {
                Ok(key) if current(&key) != Some(key.method_version) => {
                    removed += 1;
                    if !dry_run {
                        std::fs::remove_file(&path)?;
                    }
                }
                _ => kept += 1,
            }
        }
        Ok((kept, removed))
    }
}

/// The decompressed JSON of a panel file.
fn read_json(path: &Path) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut text = String::new();
    let read =
        GzDecoder::new(file).take(MAX_JSON_BYTES + 1).read_to_string(&mut text).map_err(|e| format!("{}: not gzip-compressed text: {e}", path.display()))?;
    if read as u64 > MAX_JSON_BYTES {
        return Err(format!("{}: over {} MB once decompressed", path.display(), MAX_JSON_BYTES >> 20));
    }
    Ok(text)
}

/// A degenerate panel file's content ([`DegeneratePanel`]); an error saying why when the file is
/// unreadable or not one.
pub fn read_degenerate_panel(path: &Path) -> Result<DegeneratePanel, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let stored: DegeneratePanel = serde_json::from_str(&text).map_err(|e| format!("{}: not a degenerate panel: {e}", path.display()))?;
    (stored.fit_seconds.is_finite() && stored.fit_seconds >= 0.0 && !stored.degenerate.is_empty())
        .then_some(stored)
        .ok_or_else(|| format!("{}: a degenerate panel without its reason or with a negative time", path.display()))
}

/// A panel file's content: the fit key it was stored under, the fit and its seconds; an error
/// saying why when the file is unreadable, not gzip, not a stored fit, or an inconsistent one
/// ([`parse_fit`]).
pub fn read_panel(path: &Path) -> Result<(CellKey, Fitted, f64), String> {
    let text = read_json(path)?;
    parse_fit(&text).ok_or_else(|| format!("{}: not a consistent stored fit", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::tests::key;

    fn fit() -> Fitted {
        let mut f = Fitted::closed_form(ndarray::array![[0.1, -2.5], [1.0 / 3.0, 7.0], [1e-300, 4.0]]);
        f.graph = Some(structdr_methods::Graph { n_vertices: 3, edges: vec![(0, 2, 0.75)] });
        f
    }

    #[test]
    fn a_panel_reads_back_bit_for_bit_and_rewrites_nothing_when_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let panels = PanelStore::open_in(dir.path());
        assert!(panels.get(&key()).is_none());
        panels.put(&key(), &fit(), 0.125);
        let (f, secs) = panels.get(&key()).expect("the panel just written");
        assert_eq!((f.embedding().unwrap(), secs), (fit().embedding().unwrap(), 0.125));
        assert_eq!(f.graph.unwrap().edges, vec![(0, 2, 0.75)]);
        // the same fit again leaves the file as it is; another fit time replaces it
        let path = panels.path(&key());
        let before = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        panels.put(&key(), &fit(), 0.125);
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), before);
        panels.put(&key(), &fit(), 0.5);
        assert_eq!(panels.get(&key()).unwrap().1, 0.5);
    }

    #[test]
    fn a_stale_or_misfiled_panel_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let panels = PanelStore::open_in(dir.path());
        panels.put(&key(), &fit(), 0.125);
        // the method's numerics changed: a new version, a new key, the old panel unused
        let mut newer = key();
        newer.method_version += 1;
        assert!(panels.get(&newer).is_none());
        // the old panel copied under the new key's name: its stored key gives it away
        std::fs::copy(panels.path(&key()), panels.path(&newer)).unwrap();
        assert!(panels.get(&newer).is_none());
        assert!(panels.get(&key()).is_some());
        // damaged files are refused with a reason
        std::fs::write(panels.path(&newer), b"{ plain JSON, not gzip }").unwrap();
        assert!(read_panel(&panels.path(&newer)).unwrap_err().contains("not gzip"));
        assert!(panels.get(&newer).is_none());
    }

    #[test]
    fn a_degenerate_fit_is_kept_with_its_reason_under_its_own_key_and_pruned_by_version() {
        let dir = tempfile::tempdir().unwrap();
        let panels = PanelStore::open_in(dir.path());
        assert!(panels.get_degenerate(&key()).is_none());
        panels.put_degenerate(&key(), "m: degenerate: W = 0 is optimal", 2.5);
        assert_eq!(panels.get_degenerate(&key()).as_deref(), Some("m: degenerate: W = 0 is optimal"));
        assert!(panels.get(&key()).is_none(), "no fit to draw");
        // another version's key does not read it, not even copied under that key's name
        let mut newer = key();
        newer.method_version += 1;
        assert!(panels.get_degenerate(&newer).is_none());
        std::fs::copy(panels.degenerate_path(&key()), panels.degenerate_path(&newer)).unwrap();
        assert!(panels.get_degenerate(&newer).is_none());
        std::fs::remove_file(panels.degenerate_path(&newer)).unwrap();
        // prune counts it as the panels are counted: kept at its version, removed at another
        let current = |k: &CellKey| (k.method == key().method).then_some(key().method_version);
        assert_eq!(panels.prune(current, true).unwrap(), (1, 0));
        let later = |k: &CellKey| (k.method == key().method).then_some(key().method_version + 1);
        assert_eq!(panels.prune(later, false).unwrap(), (0, 1));
        assert!(!panels.degenerate_path(&key()).exists());
    }

    #[test]
    fn prune_removes_the_panels_of_other_method_versions() {
        let dir = tempfile::tempdir().unwrap();
        let panels = PanelStore::open_in(dir.path());
        let mut older = key();
        older.method_version += 5;
        panels.put(&key(), &fit(), 0.125);
        panels.put(&older, &fit(), 0.125);
        let current = |k: &CellKey| (k.method == key().method).then_some(key().method_version);
        assert_eq!(panels.prune(current, true).unwrap(), (1, 1));
        assert!(panels.path(&older).exists(), "a dry run removes nothing");
        assert_eq!(panels.prune(current, false).unwrap(), (1, 1));
        assert!(!panels.path(&older).exists() && panels.get(&key()).is_some());
        assert_eq!(panels.prune(current, false).unwrap(), (1, 0));
    }

    #[test]
    fn a_panel_too_large_to_commit_is_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let panels = PanelStore::open_in(dir.path());
        panels.put(&key(), &fit(), 0.125);
        // 600,000 incompressible-looking floats: over 4 MB compressed
        let big = Fitted::closed_form(ndarray::Array2::from_shape_fn((300_000, 2), |(i, j)| ((2 * i + j) as f64).sqrt()));
        panels.put(&key(), &big, 1.0);
        assert!(!panels.path(&key()).exists(), "the large fit is not committed, nor the older panel kept");
        assert!(panels.get(&key()).is_none());
    }
}
