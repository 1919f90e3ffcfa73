//! Why a recorded fit stopped: the typed [`StopReason`] of new records, and what can honestly be
//! inferred for records written before the reason was recorded (their keys and metrics stay as
//! they are; nothing is recomputed).
//!
//! Inference for an older record uses only what it holds: its `converged` flag, its iteration
//! count, the `max_iter` and `tol` of its key, and the relative KKT residual its notes print
//! (`KKT residual ... (relative 6.033e-3)`, written by MPME, ESL and MEU) or, for the MVU family,
//! the relative duality gap it records against its `gap_tol`, fed to the same
//! [`StopReason::classify`] a fit uses today. A converged record whose notes carry no residual
//! stays "not recorded": the old flag cannot say which rule was met.

use crate::store::{Record, Status};
use structdr_methods::{ParamValue, StopReason};

/// A record's stopping reason and where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordedStop {
    /// Written by the fit ([`Record::stop`]).
    Recorded(StopReason),
    /// Inferred from an older record's flag, iterations, parameters and notes (module doc).
    Inferred(StopReason),
    /// An older record that says too little (or a failed cell).
    NotRecorded,
}

impl RecordedStop {
    /// The reason, recorded or inferred.
    pub fn reason(&self) -> Option<&StopReason> {
        match self {
            RecordedStop::Recorded(s) | RecordedStop::Inferred(s) => Some(s),
            RecordedStop::NotRecorded => None,
        }
    }
    /// Whether the fit stopped before its stopping rule was met ([`StopReason::stopped_short`]).
    pub fn stopped_short(&self) -> bool {
        self.reason().is_some_and(StopReason::stopped_short)
    }
    /// The text of the tables' "stopped" column: the reason, `(inferred)` after an inferred one,
    /// `not recorded` otherwise.
    pub fn text(&self) -> String {
        match self {
            RecordedStop::Recorded(s) => s.to_string(),
            RecordedStop::Inferred(s) => format!("{s} (inferred)"),
            RecordedStop::NotRecorded => "not recorded".into(),
        }
    }
}

/// The number after `relative` (optionally `relative to the start`) in a note: MPME's, ESL's and
/// MEU's `KKT residual ... (relative 6.033e-3)`.
fn relative_residual_in(notes: &[String]) -> Option<f64> {
    let note = notes.iter().find(|n| n.starts_with("KKT residual"))?;
    let rest = &note[note.find("relative")? + "relative".len()..];
    let rest = rest.trim_start().strip_prefix("to the start").unwrap_or(rest).trim_start();
    let token: String = rest.chars().take_while(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+')).collect();
    token.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The absolute KKT residual an older record prints in its notes (`KKT residual ... = 3.619e-1`),
/// for records written before [`Record::kkt_residual`] existed.
fn absolute_residual_in(notes: &[String]) -> Option<f64> {
    let note = notes.iter().find(|n| n.starts_with("KKT residual"))?;
    let rest = &note[note.find("= ")? + 2..];
    let token: String = rest.chars().take_while(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+')).collect();
    token.parse::<f64>().ok().filter(|v| v.is_finite())
}

impl Record {
    /// Why the fit stopped: recorded, inferred (module doc) or not recorded.
    pub fn stop_reason(&self) -> RecordedStop {
        if let Some(s) = &self.stop {
            return RecordedStop::Recorded(s.clone());
        }
        if self.status != Status::Ok {
            return RecordedStop::NotRecorded;
        }
        let param = |name: &str| self.key.params.get(name);
        let max_iter = match param("max_iter") {
            Some(ParamValue::Int(m)) if *m >= 0 => *m as usize,
            _ => usize::MAX,
        };
        // the MVU family's rule is a relative duality gap `<= gap_tol`, recorded as its residual
        let (tol, residual) = match (param("tol"), param("gap_tol")) {
            (_, Some(ParamValue::Float(t))) => (Some(*t), self.kkt_residual),
            (Some(ParamValue::Float(t)), _) => (Some(*t), relative_residual_in(&self.notes)),
            _ => (None, relative_residual_in(&self.notes)),
        };
        match (self.converged, self.iterations, residual) {
            (true, 0, None) => RecordedStop::Inferred(StopReason::NotIterative),
            (true, _, None) => RecordedStop::NotRecorded,
            (converged, iterations, residual) => RecordedStop::Inferred(StopReason::classify(converged, iterations, max_iter, residual, tol, "")),
        }
    }

    /// The final iterate's KKT residual: the recorded field, or for older records the value
    /// their notes print.
    pub fn kkt_residual_any(&self) -> Option<f64> {
        self.kkt_residual.or_else(|| if self.stop.is_none() { absolute_residual_in(&self.notes) } else { None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn residuals_are_read_from_the_notes_of_older_records() {
        let mpme = vec!["KKT residual ||proj grad F||_inf = 3.619e-1 (relative 6.033e-3); F = -(d/2) log det".to_string()];
        assert_eq!(relative_residual_in(&mpme), Some(6.033e-3));
        assert_eq!(absolute_residual_in(&mpme), Some(3.619e-1));
        let meu = vec!["KKT residual ||proj grad||_inf in the scaled variables v_e = w_e phi_e / p = 6.760e-1 (relative to the start 8.454e-7)".to_string()];
        assert_eq!(relative_residual_in(&meu), Some(8.454e-7));
        assert_eq!(relative_residual_in(&["solver: projected".to_string()]), None);
    }
}
