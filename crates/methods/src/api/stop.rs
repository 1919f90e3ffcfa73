//! Why an iterative method stopped, as a type ([`StopReason`]) rather than a bool and free text.
//!
//! A fit that stopped at its iteration cap and one that met its tolerance used to look alike in
//! every record and table (`converged: false` sat beside metrics that read like any other). The
//! reason is now part of [`crate::api::Trace`] and of every record, and the tables mark a best
//! cell that did not converge.
//!
//! `residual` is always *the quantity the method's stopping rule compares with `tol`*, in the
//! units of that rule (MPME and ESL: the KKT residual relative to its value at `W = 0`; the MVU
//! family: the relative duality gap; DDRTree: the relative change of the objective), so
//! `residual / tol` says how far from its own target a fit stopped.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a fit stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum StopReason {
    /// The stopping rule was met: `residual <= tol` (either may be unknown to the method).
    Converged {
        /// The stopping rule's quantity at the returned point.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        residual: Option<f64>,
        /// The tolerance it was compared with.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tol: Option<f64>,
    },
    /// The iteration cap `max_iter` was reached before the stopping rule was met.
    IterationLimit {
        /// The cap.
        max_iter: usize,
        /// The stopping rule's quantity at the returned point.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        residual: Option<f64>,
        /// The tolerance it was not brought below.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tol: Option<f64>,
    },
    /// The solver could make no more progress (line search failure, a relative-reduction test
    /// met while the residual is still above `tol`, no decrease in a window) before the stopping
    /// rule was met.
    Stalled {
        /// The stopping rule's quantity at the returned point.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        residual: Option<f64>,
        /// The tolerance it was not brought below.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tol: Option<f64>,
        /// The solver's words.
        detail: String,
    },
    /// A wall-clock limit was reached.
    TimeLimit {
        /// The limit, seconds.
        seconds: f64,
        /// The stopping rule's quantity at the returned point.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        residual: Option<f64>,
    },
    /// The fit ended on a degenerate point (e.g. an optimum with no structure) and says why.
    Degenerate {
        /// Why, in words.
        detail: String,
    },
    /// A method without a stopping rule ran its fixed schedule to the end (t-SNE's optimiser, as
    /// the reference implementations run it): nothing was tested, so nothing fell short.
    FixedSchedule {
        /// Iterations of the schedule.
        iterations: usize,
    },
    /// A closed-form method: no iteration, nothing to converge.
    NotIterative,
}

/// A residual is kept only when it is a finite number (JSON has no NaN or infinity).
fn finite(v: Option<f64>) -> Option<f64> {
    v.filter(|x| x.is_finite())
}

impl StopReason {
    /// Classifies a solver's end from its own flag:
    /// - `converged` with `residual <= tol` (or either unknown): [`StopReason::Converged`];
    /// - `converged` by another test (e.g. L-BFGS-B's relative reduction of `f`) while
    ///   `residual > tol`: [`StopReason::Stalled`], since the method's tolerance was not met;
    /// - not converged with `iterations >= max_iter`: [`StopReason::IterationLimit`];
    /// - not converged otherwise: [`StopReason::Stalled`] with the solver's words.
    pub fn classify(converged: bool, iterations: usize, max_iter: usize, residual: Option<f64>, tol: Option<f64>, detail: &str) -> StopReason {
        let residual = finite(residual);
        let above = matches!((residual, tol), (Some(r), Some(t)) if r > t);
        match (converged, above) {
            (true, false) => StopReason::Converged { residual, tol },
            (true, true) => StopReason::Stalled { residual, tol, detail: detail.to_string() },
            (false, _) if iterations >= max_iter => StopReason::IterationLimit { max_iter, residual, tol },
            (false, _) => StopReason::Stalled { residual, tol, detail: detail.to_string() },
        }
    }

    /// Whether the stopping rule was met (closed-form methods and fixed schedules, which have
    /// none, count as converged).
    pub fn is_converged(&self) -> bool {
        matches!(self, StopReason::Converged { .. } | StopReason::FixedSchedule { .. } | StopReason::NotIterative)
    }

    /// Whether the fit stopped before its stopping rule was met: at the iteration or time limit,
    /// or stalled. Tables mark such a best cell.
    pub fn stopped_short(&self) -> bool {
        matches!(self, StopReason::IterationLimit { .. } | StopReason::Stalled { .. } | StopReason::TimeLimit { .. })
    }

    /// The stopping rule's quantity at the returned point, where known.
    pub fn residual(&self) -> Option<f64> {
        match self {
            StopReason::Converged { residual, .. }
            | StopReason::IterationLimit { residual, .. }
            | StopReason::Stalled { residual, .. }
            | StopReason::TimeLimit { residual, .. } => *residual,
            StopReason::Degenerate { .. } | StopReason::FixedSchedule { .. } | StopReason::NotIterative => None,
        }
    }

    /// The tolerance of the stopping rule, where known.
    pub fn tol(&self) -> Option<f64> {
        match self {
            StopReason::Converged { tol, .. } | StopReason::IterationLimit { tol, .. } | StopReason::Stalled { tol, .. } => *tol,
            _ => None,
        }
    }

    /// One word for tables: `converged`, `iteration limit`, `stalled`, `time limit`,
    /// `degenerate`, `fixed schedule`, `not iterative`.
    pub fn label(&self) -> &'static str {
        match self {
            StopReason::Converged { .. } => "converged",
            StopReason::IterationLimit { .. } => "iteration limit",
            StopReason::Stalled { .. } => "stalled",
            StopReason::TimeLimit { .. } => "time limit",
            StopReason::Degenerate { .. } => "degenerate",
            StopReason::FixedSchedule { .. } => "fixed schedule",
            StopReason::NotIterative => "not iterative",
        }
    }
}

/// The relative change of the last step of an objective history, `|h_n - h_{n-1}| / |h_{n-1}|`
/// (the absolute change when `h_{n-1} = 0`): the residual of the "relative change below tol"
/// stopping rules (DDRTree, the RPG graphs, FSL). `None` with fewer than two entries.
pub fn relative_change(history: &[f64]) -> Option<f64> {
    match history {
        [.., prev, cur] => {
            let diff = (cur - prev).abs();
            Some(if *prev == 0.0 { diff } else { diff / prev.abs() })
        }
        _ => None,
    }
}

/// `residual 3.6e-1 > tol 1e-5` style text for what is known of a residual and its tolerance.
fn residual_text(residual: Option<f64>, tol: Option<f64>, cmp: &str) -> String {
    match (residual, tol) {
        (Some(r), Some(t)) => format!("residual {r:.2e} {cmp} tol {t:.0e}"),
        (Some(r), None) => format!("residual {r:.2e}"),
        (None, Some(t)) => format!("tol {t:.0e}"),
        (None, None) => String::new(),
    }
}

impl fmt::Display for StopReason {
    /// Short form for tables: `converged (residual 8.1e-6 <= tol 1e-5)`, `iteration limit 500
    /// (residual 6.03e-3 > tol 1e-5)`, `stalled (...)`, `not iterative`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let with = |f: &mut fmt::Formatter<'_>, head: String, r: String| if r.is_empty() { f.write_str(&head) } else { write!(f, "{head} ({r})") };
        match self {
            StopReason::Converged { residual, tol } => with(f, "converged".into(), residual_text(*residual, *tol, "<=")),
            StopReason::IterationLimit { max_iter, residual, tol } => with(f, format!("iteration limit {max_iter}"), residual_text(*residual, *tol, ">")),
            StopReason::Stalled { residual, tol, .. } => with(f, "stalled".into(), residual_text(*residual, *tol, ">")),
            StopReason::TimeLimit { seconds, residual } => with(f, format!("time limit {seconds} s"), residual_text(*residual, None, "")),
            StopReason::Degenerate { detail } => write!(f, "degenerate: {detail}"),
            StopReason::FixedSchedule { iterations } => write!(f, "fixed schedule of {iterations} iterations"),
            StopReason::NotIterative => f.write_str("not iterative"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_separates_cap_stall_and_convergence() {
        assert_eq!(StopReason::classify(true, 12, 500, Some(1e-6), Some(1e-5), ""), StopReason::Converged { residual: Some(1e-6), tol: Some(1e-5) });
        // L-BFGS-B's factr test met while the KKT residual is still above tol
        assert!(matches!(StopReason::classify(true, 12, 500, Some(1e-3), Some(1e-5), "REL_REDUCTION"), StopReason::Stalled { .. }));
        assert_eq!(
            StopReason::classify(false, 500, 500, Some(6e-3), Some(1e-5), ""),
            StopReason::IterationLimit { max_iter: 500, residual: Some(6e-3), tol: Some(1e-5) }
        );
        assert!(matches!(StopReason::classify(false, 40, 500, None, None, "ABNORMAL_TERMINATION_IN_LNSRCH"), StopReason::Stalled { .. }));
        // a non-finite residual is dropped, not written as JSON null
        assert_eq!(StopReason::classify(true, 3, 10, Some(f64::NAN), None, "").residual(), None);
    }

    #[test]
    fn relative_change_of_the_last_step() {
        assert_eq!(relative_change(&[4.0, 2.0, 1.0]), Some(0.5));
        assert_eq!(relative_change(&[0.0, 0.25]), Some(0.25));
        assert_eq!(relative_change(&[1.0]), None);
    }

    #[test]
    fn json_round_trip_and_display() {
        for s in [
            StopReason::Converged { residual: Some(8.1e-6), tol: Some(1e-5) },
            StopReason::IterationLimit { max_iter: 500, residual: Some(6.033e-3), tol: Some(1e-5) },
            StopReason::Stalled { residual: None, tol: Some(1e-5), detail: "ABNORMAL".into() },
            StopReason::TimeLimit { seconds: 60.0, residual: None },
            StopReason::Degenerate { detail: "W = 0".into() },
            StopReason::FixedSchedule { iterations: 1000 },
            StopReason::NotIterative,
        ] {
            let text = serde_json::to_string(&s).unwrap();
            assert_eq!(serde_json::from_str::<StopReason>(&text).unwrap(), s, "{text}");
        }
        assert_eq!(
            StopReason::IterationLimit { max_iter: 500, residual: Some(6.033e-3), tol: Some(1e-5) }.to_string(),
            "iteration limit 500 (residual 6.03e-3 > tol 1e-5)"
        );
        assert_eq!(serde_json::to_string(&StopReason::NotIterative).unwrap(), r#"{"reason":"not_iterative"}"#);
    }
}
