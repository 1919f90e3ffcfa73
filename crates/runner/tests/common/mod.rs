//! Shared by the tests that load a page in headless Chromium (the report, the history page).

use std::path::Path;
use std::process::Command;

/// The first Chromium-like browser on the PATH.
pub fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"].into_iter().find(|b| Command::new(b).arg("--version").output().is_ok_and(|o| o.status.success()))
}

/// Loads `page` in headless Chromium and returns the DOM after the load event and the console
/// lines of its log; `None` (and a note) where no browser is installed, which CI forbids.
pub fn load(page: &Path, profile: &Path) -> Option<(String, Vec<String>)> {
    let Some(browser) = chromium() else {
        assert!(std::env::var_os("CI").is_none(), "CI must provide chromium (.ci/run installs it)");
        eprintln!("skipping the browser check: no chromium");
        return None;
    };
    let run = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", "--dump-dom"])
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&run.stdout).into_owned();
    let console = String::from_utf8_lossy(&run.stderr).lines().filter(|l| l.contains(":CONSOLE")).map(String::from).collect();
    Some((dom, console))
}
