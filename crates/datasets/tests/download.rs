//! Download, verification, mirror and trust-on-first-use tests against a loopback HTTP server
//! started inside each test (127.0.0.1 only, a bounded number of requests, stopped on drop).

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use structdr_datasets::download::{fetch_validated, verify_entry, DownloadError, FetchOptions, Fetched, Mirror, DEFAULT_MAX_BYTES};
use structdr_datasets::load::{fetch, fetch_files};
use structdr_datasets::registry::{Entry, Lock, Registry};

// ---------------------------------------------------------------------------------------------
// A tiny HTTP/1.1 server on 127.0.0.1:0.

#[derive(Clone)]
enum Reply {
    /// Status 200 with this body and a correct Content-Length.
    Ok(Vec<u8>),
    /// A status without body.
    Status(u16),
    /// Status 200, Content-Length `announced`, then only `body` and close.
    Truncated { body: Vec<u8>, announced: usize },
    /// Status 200 without Content-Length, then bytes until the client hangs up.
    Endless,
    /// Read the request, say nothing for this long, close.
    Stall(Duration),
}

struct Server {
    base: String,
    hits: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Server {
    /// Serves `routes` (path -> reply; anything else is 404) for at most `max_requests`
    /// connections or 30 s.
    fn start(routes: HashMap<String, Reply>, max_requests: usize) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let hits = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (h2, s2) = (hits.clone(), stop.clone());
        let handle = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut served = 0;
            while served < max_requests && !s2.load(Ordering::Relaxed) && Instant::now() < deadline {
                match listener.accept() {
                    Ok((stream, _)) => {
                        served += 1;
                        handle_conn(stream, &routes, &h2);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(_) => break,
                }
            }
        });
        Server { base: format!("http://{addr}"), hits, stop, handle: Some(handle) }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    fn hits(&self) -> Vec<String> {
        self.hits.lock().map(|h| h.clone()).unwrap_or_default()
    }

    fn count(&self, path: &str) -> usize {
        self.hits().iter().filter(|p| *p == path).count()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn handle_conn(mut s: TcpStream, routes: &HashMap<String, Reply>, hits: &Mutex<Vec<String>>) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut req = Vec::new();
    let mut buf = [0u8; 1024];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 64 * 1024 {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => req.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&req);
    let path = text.split_whitespace().nth(1).unwrap_or("/").to_string();
    if let Ok(mut h) = hits.lock() {
        h.push(path.clone());
    }
    let reason = |c: u16| match c {
        200 => "OK",
        404 => "Not Found",
        500 => "Internal Server Error",
        _ => "Status",
    };
    let reply = routes.get(&path).cloned().unwrap_or(Reply::Status(404));
    let _ = match reply {
        Reply::Ok(body) => {
            s.write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len()).as_bytes()).and_then(|_| s.write_all(&body))
        }
        Reply::Status(c) => s.write_all(format!("HTTP/1.1 {c} {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", reason(c)).as_bytes()),
        Reply::Truncated { body, announced } => {
            s.write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {announced}\r\nConnection: close\r\n\r\n").as_bytes()).and_then(|_| s.write_all(&body))
        }
        Reply::Endless => {
            let chunk = vec![b'7'; 1 << 16];
            let mut r = s.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
            // stop when the client hangs up (or after 1 GB, so a broken client cannot hang the test)
            for _ in 0..(1 << 14) {
                r = s.write_all(&chunk);
                if r.is_err() {
                    break;
                }
            }
            r
        }
        Reply::Stall(d) => {
            std::thread::sleep(d);
            Ok(())
        }
    };
    let _ = s.flush();
    let _ = s.shutdown(std::net::Shutdown::Both);
}

// ---------------------------------------------------------------------------------------------
// Helpers.

fn sha(b: &[u8]) -> String {
    Sha256::digest(b).iter().map(|x| format!("{x:02x}")).collect()
}

/// `n` bytes that load as the test entry describes (LIBSVM, one sample, one feature, one class):
/// `1 1:<seed + 0.5>`, padded with spaces; distinct seeds give distinct bytes.
fn payload(n: usize, seed: u8) -> Vec<u8> {
    let mut v = format!("1 1:{}", f64::from(seed) + 0.5).into_bytes();
    assert!(n > v.len() + 1);
    v.resize(n - 1, b' ');
    v.push(b'\n');
    v
}

/// Fetches without the load check (for entries whose test bytes are not a real format).
fn fetch_unchecked(e: &Entry, o: &FetchOptions) -> Result<Vec<Fetched>, DownloadError> {
    fetch_validated(e, o, |_| Ok::<(), String>(())).map(|(f, _)| f).map_err(|v| match v {
        structdr_datasets::download::Validated::Download(d) => d,
        structdr_datasets::download::Validated::Load(e) => panic!("{e}"),
    })
}

/// A one-entry registry `t` with a single file.
fn entry(urls: &[String], mirror_path: &str, sha256: Option<&str>) -> Entry {
    let urls = urls.iter().map(|u| format!("\"{u}\"")).collect::<Vec<_>>().join(", ");
    let sha = sha256.map(|h| format!("sha256 = \"{h}\"\n")).unwrap_or_default();
    let text = format!(
        "schema_version = 1\n[[dataset]]\nname = \"t\"\npaper_name = \"T\"\nformat = \"libsvm\"\n\
         urls = [{urls}]\nmirror_path = \"{mirror_path}\"\n{sha}n_samples = 1\nn_features = 1\n\
         n_classes = 1\ncitation = \"c\"\nlicence = \"l\"\n"
    );
    let r = Registry::from_toml_str(&text, "test").expect("test registry");
    r.get("t").expect("entry t").clone()
}

fn opts(cache: &Path) -> FetchOptions {
    FetchOptions {
        cache_dir: cache.to_path_buf(),
        mirror: None,
        retries: 0,
        timeout: Duration::from_secs(5),
        backoff: Duration::from_millis(10),
        canonical: true,
        quiet: true,
        max_bytes: DEFAULT_MAX_BYTES,
    }
}

/// Every regular file under `dir` (recursively), except the lock file.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_none_or(|n| n != "registry.lock") {
                out.push(p);
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Tests.

#[test]
fn good_file_is_verified_cached_and_not_refetched() {
    let body = payload(300_000, 7);
    let srv = Server::start(HashMap::from([("/good.bin".to_string(), Reply::Ok(body.clone()))]), 10);
    let cache = tempfile::tempdir().unwrap();
    let e = entry(&[srv.url("/good.bin")], "sub/good.bin", Some(&sha(&body)));
    let o = opts(cache.path());

    let files = fetch_files(&e, &o).expect("fetch succeeds");
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].path, cache.path().join("sub/good.bin"));
    assert_eq!(files[0].sha256, sha(&body));
    assert_eq!(files[0].content_sha256, sha(&body));
    assert_eq!(files[0].origin, srv.url("/good.bin"));
    assert_eq!(std::fs::read(&files[0].path).unwrap(), body);
    assert_eq!(srv.count("/good.bin"), 1);
    // No temporary files left behind.
    assert_eq!(files_under(cache.path()), vec![cache.path().join("sub/good.bin")]);

    // Second fetch: served from the cache, no request.
    let p = fetch(&e, &o).expect("cached fetch");
    assert_eq!(p, cache.path().join("sub/good.bin"));
    assert_eq!(srv.count("/good.bin"), 1, "second fetch must not hit the network");
    assert_eq!(fetch_files(&e, &o).unwrap()[0].origin, "cache");

    // verify() re-hashes; a damaged cached copy fails verification and is re-fetched.
    assert!(verify_entry(&e, &o).is_ok());
    std::fs::write(cache.path().join("sub/good.bin"), b"damaged").unwrap();
    let err = verify_entry(&e, &o).unwrap_err();
    assert!(matches!(err, DownloadError::CachedMismatch { .. }), "{err}");
    assert!(err.to_string().contains(&sha(&body)), "{err}");
    fetch(&e, &o).expect("re-fetch after damage");
    assert_eq!(srv.count("/good.bin"), 2);
    assert_eq!(std::fs::read(cache.path().join("sub/good.bin")).unwrap(), body);
}

#[test]
fn corrupt_file_is_an_error_and_leaves_nothing() {
    let good = payload(5000, 1);
    let bad = payload(5000, 2);
    let srv = Server::start(HashMap::from([("/c.bin".to_string(), Reply::Ok(bad.clone()))]), 10);
    let cache = tempfile::tempdir().unwrap();
    let e = entry(&[srv.url("/c.bin")], "c.bin", Some(&sha(&good)));
    let err = fetch(&e, &opts(cache.path())).unwrap_err();
    match &err {
        DownloadError::ChecksumMismatch { expected, actual, origin, .. } => {
            assert!(expected.contains(&sha(&good)));
            assert_eq!(actual, &sha(&bad));
            assert_eq!(origin, &srv.url("/c.bin"));
        }
        other => panic!("expected ChecksumMismatch, got {other}"),
    }
    let msg = err.to_string();
    assert!(msg.contains(&sha(&good)) && msg.contains(&sha(&bad)), "{msg}");
    assert!(files_under(cache.path()).is_empty(), "corrupt bytes must be deleted: {:?}", files_under(cache.path()));
    assert_eq!(srv.count("/c.bin"), 1, "checksum mismatches are not retried on the same URL");
}

#[test]
fn http_404_is_an_error_without_retry() {
    let srv = Server::start(HashMap::new(), 10);
    let cache = tempfile::tempdir().unwrap();
    let e = entry(&[srv.url("/missing.bin")], "m.bin", Some(&sha(b"x")));
    let mut o = opts(cache.path());
    o.retries = 3;
    let err = fetch(&e, &o).unwrap_err();
    assert!(matches!(err, DownloadError::Http { status: 404, .. }), "{err}");
    assert!(err.to_string().contains("/missing.bin") && err.to_string().contains("404"), "{err}");
    assert_eq!(srv.count("/missing.bin"), 1);
    assert!(files_under(cache.path()).is_empty());
}

#[test]
fn http_500_is_retried_then_an_error() {
    let srv = Server::start(HashMap::from([("/e.bin".to_string(), Reply::Status(500))]), 10);
    let cache = tempfile::tempdir().unwrap();
    let e = entry(&[srv.url("/e.bin")], "e.bin", Some(&sha(b"x")));
    let mut o = opts(cache.path());
    o.retries = 2;
    let t0 = Instant::now();
    let err = fetch(&e, &o).unwrap_err();
    assert!(matches!(err, DownloadError::Http { status: 500, .. }), "{err}");
    assert_eq!(srv.count("/e.bin"), 3, "1 attempt + 2 retries");
    // Backoff 10 ms then 20 ms.
    assert!(t0.elapsed() >= Duration::from_millis(30));
    assert!(files_under(cache.path()).is_empty());
}

#[test]
fn truncated_body_is_an_error() {
    let body = payload(100, 3);
    let srv = Server::start(HashMap::from([("/t.bin".to_string(), Reply::Truncated { body: body.clone(), announced: 1000 })]), 10);
    let cache = tempfile::tempdir().unwrap();
    // Even with the right hash for the 100 bytes, a short body is never accepted.
    let e = entry(&[srv.url("/t.bin")], "t.bin", Some(&sha(&body)));
    let mut o = opts(cache.path());
    o.retries = 1;
    let err = fetch(&e, &o).unwrap_err();
    match &err {
        DownloadError::Truncated { expected, got, url } => {
            assert_eq!(*expected, 1000);
            assert!(*got <= 100);
            assert_eq!(url, &srv.url("/t.bin"));
        }
        other => panic!("expected Truncated, got {other}"),
    }
    assert_eq!(srv.count("/t.bin"), 2, "truncation is retried");
    assert!(files_under(cache.path()).is_empty());
}

#[test]
fn mirror_directory_is_tried_first() {
    let body = payload(2000, 9);
    let srv = Server::start(HashMap::from([("/canon.bin".to_string(), Reply::Ok(body.clone()))]), 10);
    let mirror = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(mirror.path().join("libsvm")).unwrap();
    std::fs::write(mirror.path().join("libsvm/m.bin"), &body).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let e = entry(&[srv.url("/canon.bin")], "libsvm/m.bin", Some(&sha(&body)));
    let mut o = opts(cache.path());
    o.mirror = Some(Mirror::Dir(mirror.path().to_path_buf()));
    let f = fetch_files(&e, &o).expect("fetch from mirror dir");
    assert_eq!(f[0].origin, mirror.path().join("libsvm/m.bin").display().to_string());
    assert_eq!(std::fs::read(&f[0].path).unwrap(), body);
    assert!(srv.hits().is_empty(), "the mirror must be tried before the canonical URL");
}

#[test]
fn corrupt_or_missing_mirror_falls_back_to_canonical() {
    let body = payload(2000, 4);
    let srv = Server::start(HashMap::from([("/canon.bin".to_string(), Reply::Ok(body.clone()))]), 10);
    let mirror = tempfile::tempdir().unwrap();
    std::fs::write(mirror.path().join("m.bin"), b"not the data").unwrap();
    let e = entry(&[srv.url("/canon.bin")], "m.bin", Some(&sha(&body)));

    let cache = tempfile::tempdir().unwrap();
    let mut o = opts(cache.path());
    o.mirror = Some(Mirror::Dir(mirror.path().to_path_buf()));
    let f = fetch_files(&e, &o).expect("falls back to the canonical URL");
    assert_eq!(f[0].origin, srv.url("/canon.bin"));
    assert_eq!(srv.count("/canon.bin"), 1);

    // Missing from the mirror, canonical disabled: a clear error naming the mirror path.
    let cache2 = tempfile::tempdir().unwrap();
    let mut o2 = opts(cache2.path());
    o2.mirror = Some(Mirror::Dir(mirror.path().join("nowhere")));
    o2.canonical = false;
    let err = fetch(&e, &o2).unwrap_err();
    assert!(matches!(err, DownloadError::MirrorMissing { .. }), "{err}");
    // Both sources failing: every error is listed.
    let srv2 = Server::start(HashMap::new(), 10);
    let e2 = entry(&[srv2.url("/gone.bin")], "m.bin", Some(&sha(&body)));
    let mut o3 = opts(cache2.path());
    o3.mirror = Some(Mirror::Dir(mirror.path().to_path_buf()));
    let err = fetch(&e2, &o3).unwrap_err();
    match &err {
        DownloadError::AllFailed { errors, .. } => {
            assert_eq!(errors.len(), 2);
            assert!(matches!(errors[0], DownloadError::ChecksumMismatch { .. }));
            assert!(matches!(errors[1], DownloadError::Http { status: 404, .. }));
        }
        other => panic!("expected AllFailed, got {other}"),
    }
    assert!(files_under(cache2.path()).is_empty());
}

#[test]
fn mirror_base_url_appends_mirror_path() {
    let body = payload(1234, 5);
    let srv = Server::start(HashMap::from([("/data/libsvm/x.scale".to_string(), Reply::Ok(body.clone()))]), 10);
    let cache = tempfile::tempdir().unwrap();
    let e = entry(&[], "libsvm/x.scale", Some(&sha(&body)));
    let mut o = opts(cache.path());
    o.mirror = Some(Mirror::parse(&format!("{}/data/", srv.base)));
    let p = fetch(&e, &o).expect("fetch from mirror URL");
    assert_eq!(std::fs::read(p).unwrap(), body);
    assert_eq!(srv.hits(), vec!["/data/libsvm/x.scale".to_string()]);

    // No mirror and no canonical URL: NoSource.
    let cache2 = tempfile::tempdir().unwrap();
    let err = fetch(&e, &opts(cache2.path())).unwrap_err();
    assert!(matches!(err, DownloadError::NoSource { .. }), "{err}");
}

#[test]
fn trust_on_first_use_pins_and_enforces() {
    let v1 = payload(4000, 11);
    let v2 = payload(4000, 12);
    let srv1 = Server::start(HashMap::from([("/f.bin".to_string(), Reply::Ok(v1.clone()))]), 10);
    let cache = tempfile::tempdir().unwrap();
    let e = entry(&[srv1.url("/f.bin")], "tofu/f.bin", None);
    assert!(e.files[0].is_tofu());
    let o = opts(cache.path());

    // First use: accepted and pinned.
    let f = fetch_files(&e, &o).expect("first use is trusted");
    assert_eq!(f[0].sha256, sha(&v1));
    let lock = Lock::read(&o.lock_path()).unwrap();
    let pin = lock.get("t").expect("pinned under the entry name");
    assert_eq!(pin.sha256, sha(&v1));
    assert_eq!(pin.file, "tofu/f.bin");
    assert_eq!(pin.first_fetched.len(), 10);
    assert!(verify_entry(&e, &o).is_ok());

    // Cached copy matches the pin: no request.
    fetch(&e, &o).unwrap();
    assert_eq!(srv1.count("/f.bin"), 1);

    // The upstream file changes: the new bytes are refused and deleted.
    std::fs::remove_file(cache.path().join("tofu/f.bin")).unwrap();
    let srv2 = Server::start(HashMap::from([("/f.bin".to_string(), Reply::Ok(v2.clone()))]), 10);
    let e2 = entry(&[srv2.url("/f.bin")], "tofu/f.bin", None);
    let err = fetch(&e2, &o).unwrap_err();
    match &err {
        DownloadError::PinMismatch { pinned, actual, .. } => {
            assert_eq!(pinned, &sha(&v1));
            assert_eq!(actual, &sha(&v2));
        }
        other => panic!("expected PinMismatch, got {other}"),
    }
    assert!(files_under(cache.path()).is_empty());
    // The pin is unchanged.
    assert_eq!(Lock::read(&o.lock_path()).unwrap().get("t").unwrap().sha256, sha(&v1));

    // A tampered cached copy of a pinned file fails verify().
    std::fs::create_dir_all(cache.path().join("tofu")).unwrap();
    std::fs::write(cache.path().join("tofu/f.bin"), &v2).unwrap();
    assert!(matches!(verify_entry(&e, &o), Err(DownloadError::CachedMismatch { .. })));
}

#[test]
fn raw_sha256_accepts_recompressed_gzip() {
    use flate2::{write::GzEncoder, Compression};
    let raw = payload(50_000, 21);
    let gz = |level: u32| {
        let mut enc = GzEncoder::new(Vec::new(), Compression::new(level));
        enc.write_all(&raw).unwrap();
        enc.finish().unwrap()
    };
    let (canon, recompressed) = (gz(9), gz(1));
    assert_ne!(canon, recompressed);
    let srv = Server::start(HashMap::from([("/r.gz".to_string(), Reply::Ok(recompressed.clone()))]), 10);
    let text = format!(
        "schema_version = 1\n[[dataset]]\nname = \"fm\"\npaper_name = \"FM\"\nformat = \"idx-gzip\"\n\
         files = [{{ role = \"images\", urls = [\"{u}\"], mirror_path = \"fm/r.gz\", sha256 = \"{s}\", raw_sha256 = \"{r}\" }},\n\
         {{ role = \"labels\", urls = [\"{u}\"], mirror_path = \"fm/l.gz\", sha256 = \"{s}\", raw_sha256 = \"{r}\" }}]\n\
         n_samples = 1\nn_features = 1\nn_classes = 1\ncitation = \"c\"\nlicence = \"l\"\n",
        u = srv.url("/r.gz"),
        s = sha(&canon),
        r = sha(&raw)
    );
    let reg = Registry::from_toml_str(&text, "test").unwrap();
    let e = reg.get("fm").unwrap();
    let cache = tempfile::tempdir().unwrap();
    let files = fetch_unchecked(e, &opts(cache.path())).expect("raw hash accepted");
    assert_eq!(files.len(), 2);
    assert_eq!(files[0].sha256, sha(&recompressed));
    assert_eq!(files[0].content_sha256, sha(&raw));
    assert_eq!(files[0].path, cache.path().join("fm/r.gz"));
    // the files are cached: no further request
    assert_eq!(fetch_unchecked(e, &opts(cache.path())).unwrap().len(), 2);
    assert_eq!(srv.count("/r.gz"), 2);
    // these bytes are not IDX: the checked fetch refuses them (they came from the cache,
    // carry registered checksums, so they are reported, not deleted)
    let err = fetch_files(e, &opts(cache.path())).unwrap_err();
    assert!(matches!(err, DownloadError::Invalid { .. }), "{err}");
}

#[test]
fn options_from_env() {
    // Only this test touches these variables.
    std::env::set_var("STRUCTDR_DATA", "/tmp/structdr-cache-test");
    std::env::set_var("STRUCTDR_MIRROR", "https://example.invalid/mirror");
    std::env::set_var("STRUCTDR_OFFLINE", "1");
    let o = FetchOptions::from_env();
    std::env::remove_var("STRUCTDR_DATA");
    std::env::remove_var("STRUCTDR_MIRROR");
    std::env::remove_var("STRUCTDR_OFFLINE");
    assert_eq!(o.cache_dir, PathBuf::from("/tmp/structdr-cache-test"));
    assert_eq!(o.mirror, Some(Mirror::Url("https://example.invalid/mirror".into())));
    assert!(!o.canonical);
    assert_eq!(o.lock_path(), PathBuf::from("/tmp/structdr-cache-test/registry.lock"));
    let d = FetchOptions::default();
    assert_eq!(d.cache_dir, PathBuf::from("data"));
    assert_eq!(d.retries, 3);
}

/// A registry entry `t` with one LIBSVM file of `bytes` bytes (no checksum: trust on first use
/// when `sha` is None).
fn sized_entry(urls: &[String], mirror_path: &str, sha256: Option<&str>, bytes: u64) -> Entry {
    let urls = urls.iter().map(|u| format!("\"{u}\"")).collect::<Vec<_>>().join(", ");
    let sha = sha256.map(|h| format!("sha256 = \"{h}\"\n")).unwrap_or_default();
    let text = format!(
        "schema_version = 1\n[[dataset]]\nname = \"t\"\npaper_name = \"T\"\nformat = \"libsvm\"\n\
         urls = [{urls}]\nmirror_path = \"{mirror_path}\"\n{sha}bytes = {bytes}\nn_samples = 1\nn_features = 1\n\
         n_classes = 1\ncitation = \"c\"\nlicence = \"l\"\n"
    );
    Registry::from_toml_str(&text, "test").expect("test registry").get("t").expect("entry t").clone()
}

/// A server that streams forever is cut at the cap (from the registry's size), and nothing of it
/// stays on disk; a Content-Length over the cap is refused before the body.
#[test]
fn endless_body_is_stopped_at_the_size_cap() {
    let srv = Server::start(HashMap::from([("/inf".to_string(), Reply::Endless)]), 5);
    let cache = tempfile::tempdir().unwrap();
    let e = sized_entry(&[srv.url("/inf")], "inf.txt", None, 1000);
    let err = fetch(&e, &opts(cache.path())).unwrap_err();
    assert!(matches!(err, DownloadError::TooLarge { cap, .. } if cap == 1000 + (1 << 20)), "{err}");
    assert!(files_under(cache.path()).is_empty(), "{:?}", files_under(cache.path()));
    // without a registered size the stated limit applies
    let e = entry(&[srv.url("/inf")], "inf2.txt", None);
    let o = FetchOptions { max_bytes: 200_000, ..opts(cache.path()) };
    let err = fetch(&e, &o).unwrap_err();
    assert!(matches!(err, DownloadError::TooLarge { cap: 200_000, .. }), "{err}");
    assert!(files_under(cache.path()).is_empty());
    let big = payload(5000, 1);
    let srv2 = Server::start(HashMap::from([("/big".to_string(), Reply::Ok(big))]), 5);
    let o = FetchOptions { max_bytes: 4000, ..opts(cache.path()) };
    let err = fetch(&entry(&[srv2.url("/big")], "big.txt", None), &o).unwrap_err();
    assert!(err.to_string().contains("Content-Length 5000"), "{err}");
}

/// A server that accepts and never answers costs at most two timeouts (a stall is retried once),
/// whatever `retries` says.
#[test]
fn stalled_server_is_given_up_after_two_timeouts() {
    let srv = Server::start(HashMap::from([("/slow".to_string(), Reply::Stall(Duration::from_secs(4)))]), 10);
    let cache = tempfile::tempdir().unwrap();
    let o = FetchOptions { retries: 5, timeout: Duration::from_millis(700), ..opts(cache.path()) };
    let t0 = Instant::now();
    let err = fetch(&entry(&[srv.url("/slow")], "slow.txt", None), &o).unwrap_err();
    assert!(matches!(err, DownloadError::Stalled { .. }), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(4), "took {:?}", t0.elapsed());
    assert!(srv.count("/slow") <= 2);
}

/// Partial downloads of dead processes are removed by the next fetch; a cached file that fails
/// its checksum is deleted (the message says so, and it is true) even when no source works.
#[test]
fn stale_parts_and_corrupt_cache_files_are_removed() {
    let body = payload(300, 4);
    let srv = Server::start(HashMap::from([("/p.txt".to_string(), Reply::Ok(body.clone()))]), 5);
    let cache = tempfile::tempdir().unwrap();
    std::fs::write(cache.path().join(".p.txt.part-999999999-0"), b"left by a killed run").unwrap();
    let e = entry(&[srv.url("/p.txt")], "p.txt", Some(&sha(&body)));
    fetch(&e, &opts(cache.path())).unwrap();
    assert_eq!(files_under(cache.path()), vec![cache.path().join("p.txt")]);
    // corrupt the cached copy; the only source is gone
    std::fs::write(cache.path().join("p.txt"), b"garbage").unwrap();
    let dead = entry(&[srv.url("/nothing")], "p.txt", Some(&sha(&body)));
    assert!(fetch(&dead, &opts(cache.path())).is_err());
    assert!(!cache.path().join("p.txt").exists(), "the corrupt cached file is deleted");
}

/// Trust on first use pins only bytes that load: garbage from the first source is neither cached
/// nor pinned, so the next (good) source is used and pinned; garbage pinned by an older version
/// is dropped and fetched again.
#[test]
fn tofu_pins_only_bytes_that_load() {
    let garbage: Vec<u8> = (0..400u32).map(|i| (i * 7 % 251) as u8).collect();
    let good = payload(200, 9);
    let srv = Server::start(HashMap::from([("/bad".to_string(), Reply::Ok(garbage.clone())), ("/good".to_string(), Reply::Ok(good.clone()))]), 10);
    let cache = tempfile::tempdir().unwrap();
    let o = opts(cache.path());
    let only_bad = entry(&[srv.url("/bad")], "f.txt", None);
    let err = fetch(&only_bad, &o).unwrap_err();
    assert!(matches!(err, DownloadError::Invalid { .. }), "{err}");
    assert!(files_under(cache.path()).is_empty());
    assert!(Lock::read(&o.lock_path()).unwrap().get("t").is_none(), "nothing pinned");
    let both = entry(&[srv.url("/bad"), srv.url("/good")], "f.txt", None);
    fetch(&both, &o).unwrap();
    assert_eq!(Lock::read(&o.lock_path()).unwrap().get("t").unwrap().sha256, sha(&good));
    // garbage pinned before this check existed: replaced by the good source
    std::fs::write(cache.path().join("f.txt"), &garbage).unwrap();
    let mut lock = Lock::read(&o.lock_path()).unwrap();
    lock.pins.get_mut("t").unwrap().sha256 = sha(&garbage);
    lock.write(&o.lock_path()).unwrap();
    let good_only = entry(&[srv.url("/good")], "f.txt", None);
    fetch(&good_only, &o).unwrap();
    assert_eq!(std::fs::read(cache.path().join("f.txt")).unwrap(), good);
    assert_eq!(Lock::read(&o.lock_path()).unwrap().get("t").unwrap().sha256, sha(&good));
}
