//! The typed error of every fallible evaluation function.

/// Errors of the evaluation metrics and protocols.
///
/// Every public function validates its input and returns one of these instead of panicking on
/// empty input, mismatched lengths, non-finite values or invalid parameters.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum EvalError {
    /// Two inputs that must describe the same samples have different lengths.
    #[error("{what}: length mismatch ({left} vs {right})")]
    LengthMismatch {
        /// The function that failed.
        what: &'static str,
        /// Length of the first input (e.g. rows of the embedding, or predicted labels).
        left: usize,
        /// Length of the second input (e.g. the label vector).
        right: usize,
    },
    /// Fewer samples than the metric needs (1-NN LOOCV needs two, the others one).
    #[error("{what}: needs at least {min} samples, got {n}")]
    TooFewSamples {
        /// The function that failed.
        what: &'static str,
        /// Samples given.
        n: usize,
        /// Samples needed.
        min: usize,
    },
    /// The input holds NaN or infinite entries.
    #[error("{what}: input contains NaN or infinite values")]
    NotFinite {
        /// The function that failed.
        what: &'static str,
    },
    /// A parameter is out of range (k = 0, k > N, restarts = 0, tolerance <= 0, ...).
    #[error("{what}: invalid parameter: {detail}")]
    InvalidParameter {
        /// The function that failed.
        what: &'static str,
        /// What is wrong.
        detail: String,
    },
}

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, EvalError>;

pub(crate) fn ensure_same_len(what: &'static str, left: usize, right: usize) -> Result<()> {
    if left != right {
        return Err(EvalError::LengthMismatch { what, left, right });
    }
    Ok(())
}

pub(crate) fn ensure_min_samples(what: &'static str, n: usize, min: usize) -> Result<()> {
    if n < min {
        return Err(EvalError::TooFewSamples { what, n, min });
    }
    Ok(())
}

pub(crate) fn ensure_finite(what: &'static str, y: ndarray::ArrayView2<f64>) -> Result<()> {
    if y.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(EvalError::NotFinite { what })
    }
}
