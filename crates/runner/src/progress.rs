//! Progress of a run: a bar on a terminal; when stderr is a file or pipe (nohup, CI, nightly jobs)
//! one numbered line per finished cell, so a long run shows where it is.

use crate::store::{Record, Status};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Instant;

/// The progress display of one run.
pub struct Progress {
    bar: ProgressBar,
    log_lines: bool,
    total: usize,
    /// Cells finished so far. The count is taken and the line printed under this one lock: with
    /// an atomic counter two cells finishing together could print `[2/2]` before `[1/2]`.
    finished: Mutex<usize>,
    started: Instant,
    quiet: bool,
}

impl Progress {
    /// Starts the display for `total` cells (nothing is shown when `quiet`).
    pub fn start(total: usize, quiet: bool) -> Progress {
        let bar = if quiet { ProgressBar::hidden() } else { ProgressBar::new(total as u64) };
        bar.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} cells  eta {eta}  {msg}").expect("template").progress_chars("=> "),
        );
        // The bar draws only on a terminal; in a log every finished cell gets a line instead.
        let log_lines = !quiet && !std::io::stderr().is_terminal();
        Progress { bar, log_lines, total, finished: Mutex::new(0), started: Instant::now(), quiet }
    }

    /// Reports a finished cell (`what`: "data set / method").
    pub fn cell_done(&self, what: &str, rec: &Record) {
        self.bar.set_message(format!(
            "{what} {}",
            match rec.status {
                Status::Ok => "",
                Status::Failed => "(failed)",
                Status::Degenerate => "(degenerate)",
            }
        ));
        self.bar.inc(1);
        // a fit that stopped without meeting its stopping rule is a warning on its own line
        if rec.status == Status::Ok && !rec.converged && rec.iterations > 0 && !self.quiet {
            let warning = format!("warning: {what} {}: stopped without converging after {} iterations", rec.params_string(), rec.iterations);
            if self.log_lines {
                eprintln!("{warning}");
            } else {
                self.bar.println(warning);
            }
        }
        if self.log_lines {
            let outcome = match rec.status {
                Status::Ok => rec.metrics.iter().map(|(k, v)| format!("{k} {v:.4}")).collect::<Vec<_>>().join(", "),
                Status::Failed => format!("failed: {}", rec.error.as_deref().unwrap_or("")),
                Status::Degenerate => format!("degenerate: {}", rec.error.as_deref().unwrap_or("")),
            };
            let mut done = self.finished.lock().unwrap_or_else(|p| p.into_inner());
            *done += 1;
            eprintln!(
                "[{}/{}] {what} {}: {outcome} (fit {:.1} s, elapsed {:.0} s)",
                *done,
                self.total,
                rec.params_string(),
                rec.fit_seconds,
                self.started.elapsed().as_secs_f64()
            );
        }
    }

    /// Reports a finished fit-only cell (a figure's fit; `failed`: why it failed).
    pub fn fit_done(&self, what: &str, seconds: f64, failed: Option<&str>) {
        self.bar.set_message(what.to_string());
        self.bar.inc(1);
        if self.log_lines {
            let outcome = failed.map_or_else(|| "fitted".to_string(), |e| format!("failed: {e}"));
            let mut done = self.finished.lock().unwrap_or_else(|p| p.into_inner());
            *done += 1;
            eprintln!("[{}/{}] {what}: {outcome} (fit {seconds:.1} s, elapsed {:.0} s)", *done, self.total, self.started.elapsed().as_secs_f64());
        }
    }

    /// Reports a long fit's progress: its latest iteration and objective, and how long it runs.
    pub fn fit_update(&self, what: &str, iteration: usize, objective: f64, seconds: f64) {
        let line = format!("  ... {what}: iteration {iteration}, objective {objective:.6e}, {seconds:.0} s");
        if self.log_lines {
            eprintln!("{line}");
        } else if !self.quiet {
            self.bar.println(line);
        }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
