//! The HTTP transport of a download: one agent with timeouts, one attempt streamed into a
//! temporary file under a size cap while hashing, and the retry policy around it.

use super::error::{io_err, DownloadError};
use super::options::FetchOptions;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{self, IsTerminal, Read, Write};
use std::path::Path;
use std::time::Duration;

pub(super) fn progress_bar(len: Option<u64>, label: &str, quiet: bool) -> indicatif::ProgressBar {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    let pb = ProgressBar::with_draw_target(len, ProgressDrawTarget::hidden());
    if !quiet && io::stderr().is_terminal() {
        let style = if len.is_some() {
            ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}")
        } else {
            ProgressStyle::with_template("{msg} {spinner} {bytes} {bytes_per_sec}")
        };
        if let Ok(s) = style {
            pb.set_style(s.progress_chars("=> "));
        }
        pb.set_message(label.to_string());
        pb.set_draw_target(ProgressDrawTarget::stderr());
    }
    pb
}

pub(super) fn make_agent(opts: &FetchOptions) -> ureq::Agent {
    let t = Some(opts.timeout);
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(t)
        .timeout_recv_response(t)
        .timeout_per_read(t)
        .timeout_send_request(t)
        // Data files must arrive byte-exact: no transparent decompression.
        .accept_encoding("identity")
        .user_agent(concat!("structdr-datasets/", env!("CARGO_PKG_VERSION")))
        .build();
    ureq::Agent::new_with_config(config)
}

/// One GET of `url` into `tmp` (created / truncated). Returns the SHA-256 of the bytes.
pub(super) fn http_once(agent: &ureq::Agent, url: &str, tmp: &Path, label: &str, opts: &FetchOptions, cap: u64) -> Result<String, DownloadError> {
    let net = |reason: String| DownloadError::Network { url: url.to_string(), reason };
    let resp = match agent.get(url).call() {
        Ok(r) => r,
        Err(ureq::Error::StatusCode(s)) => return Err(DownloadError::Http { url: url.to_string(), status: s }),
        Err(ureq::Error::Timeout(t)) => {
            return Err(DownloadError::Stalled { url: url.to_string(), reason: format!("timeout ({t}) after {:.0} s", opts.timeout.as_secs_f64()) })
        }
        Err(e) => return Err(net(e.to_string())),
    };
    let status = resp.status().as_u16();
    if !(200..300).contains(&status) {
        return Err(DownloadError::Http { url: url.to_string(), status });
    }
    let content_length: Option<u64> = resp.headers().get("content-length").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok());
    if let Some(len) = content_length.filter(|&l| l > cap) {
        return Err(DownloadError::TooLarge { origin: url.to_string(), cap, why: format!("Content-Length {len}") });
    }
    let mut reader = resp.into_body().into_reader();
    let mut out = io::BufWriter::new(File::create(tmp).map_err(io_err(tmp))?);
    let pb = progress_bar(content_length, label, opts.quiet);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut got: u64 = 0;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                pb.finish_and_clear();
                let text = e.to_string();
                if e.kind() == io::ErrorKind::TimedOut || text.contains("timeout") || text.contains("timed out") {
                    return Err(DownloadError::Stalled {
                        url: url.to_string(),
                        reason: format!("no data for {:.0} s after {got} bytes", opts.timeout.as_secs_f64()),
                    });
                }
                return Err(match content_length {
                    Some(expected) if got < expected => DownloadError::Truncated { url: url.to_string(), expected, got },
                    _ => net(format!("reading the body after {got} bytes: {text}")),
                });
            }
        };
        got += n as u64;
        if got > cap {
            pb.finish_and_clear();
            return Err(DownloadError::TooLarge { origin: url.to_string(), cap, why: "streamed past the cap".into() });
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(io_err(tmp))?;
        pb.set_position(got);
    }
    pb.finish_and_clear();
    if let Some(expected) = content_length {
        if got != expected {
            return Err(DownloadError::Truncated { url: url.to_string(), expected, got });
        }
    }
    let f = out.into_inner().map_err(|e| DownloadError::Io { path: tmp.to_path_buf(), cause: e.into_error() })?;
    f.sync_all().map_err(io_err(tmp))?;
    Ok(crate::hex(&hasher.finalize()))
}

/// GET with retries and exponential backoff on transient errors.
pub(super) fn http_get(agent: &ureq::Agent, url: &str, tmp: &Path, label: &str, opts: &FetchOptions, cap: u64) -> Result<String, DownloadError> {
    let mut attempt: u32 = 0;
    let mut stalls = 0;
    loop {
        match http_once(agent, url, tmp, label, opts, cap) {
            Ok(h) => return Ok(h),
            Err(e @ DownloadError::Stalled { .. }) if stalls >= 1 => return Err(e),
            Err(e) if e.retryable() && attempt < opts.retries => {
                if matches!(e, DownloadError::Stalled { .. }) {
                    stalls += 1;
                }
                let factor = 1u32.checked_shl(attempt).unwrap_or(u32::MAX);
                let delay = opts.backoff.saturating_mul(factor).min(Duration::from_secs(30));
                if !opts.quiet {
                    eprintln!("warning: {e}; retry {}/{} in {:.1} s", attempt + 1, opts.retries, delay.as_secs_f64());
                }
                std::thread::sleep(delay);
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}
