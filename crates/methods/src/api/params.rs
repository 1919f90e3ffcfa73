//! Parameter values, schemas and validation shared by every method.
//!
//! A method's parameters arrive as a [`ParamMap`] (from a TOML spec or `--param key=value`);
//! [`crate::MethodInfo::resolve`] checks every key against the method's [`ParamSchema`]s, fills in
//! defaults and rejects unknown names, wrong types and out-of-range values with a typed
//! [`ParamError`], before any work starts.

use std::collections::BTreeMap;
use std::fmt;

/// One parameter value. `inf` / `-inf` / `nan` strings parse as floats.
///
/// Serialised untagged (`true`, `10`, `0.5`, `"kpca"`), except non-finite floats, which JSON
/// cannot hold: they are written `{"float": "inf"}` (or `"-inf"`, `"nan"`) and read back as
/// floats, so a record keyed by `C = inf` round-trips (serde_json would write `null`).
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float (`inf` allowed where the schema says so).
    Float(f64),
    /// A string: a choice, `"auto"`, or `"energy"` for a dimension.
    Str(String),
}

/// The value of an `auto` parameter ([`ParamKind::Auto`]) that asks the method to choose.
pub const AUTO: &str = "auto";

/// The value of a dimension parameter ([`ParamKind::Dim`]) that asks for the data set's
/// PCA-energy dimension (resolved by the caller before the method is built).
pub const DIM_ENERGY: &str = "energy";

/// The value of an integer parameter that asks for the data set's number of classes (e.g. a
/// method's number of clusters, which the papers set to the class count of each set): a spec grid
/// may write `n_clusters = "classes"`, and the runner resolves it per data set, before the cell's
/// key is formed, to the number of distinct labels.
pub const CLASSES: &str = "classes";

impl serde::Serialize for ParamValue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            ParamValue::Bool(b) => s.serialize_bool(*b),
            ParamValue::Int(i) => s.serialize_i64(*i),
            ParamValue::Float(x) if x.is_finite() => s.serialize_f64(*x),
            ParamValue::Float(x) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry(
                    "float",
                    if x.is_nan() {
                        "nan"
                    } else if *x > 0.0 {
                        "inf"
                    } else {
                        "-inf"
                    },
                )?;
                m.end()
            }
            ParamValue::Str(v) => s.serialize_str(v),
        }
    }
}

impl<'de> serde::Deserialize<'de> for ParamValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Bool(bool),
            Int(i64),
            Float(f64),
            Str(String),
            NonFinite { float: String },
        }
        Ok(match Raw::deserialize(d)? {
            Raw::Bool(b) => ParamValue::Bool(b),
            Raw::Int(i) => ParamValue::Int(i),
            Raw::Float(x) => ParamValue::Float(x),
            Raw::Str(v) => ParamValue::Str(v),
            Raw::NonFinite { float } => match float.as_str() {
                "inf" => ParamValue::Float(f64::INFINITY),
                "-inf" => ParamValue::Float(f64::NEG_INFINITY),
                "nan" => ParamValue::Float(f64::NAN),
                other => return Err(serde::de::Error::custom(format!("non-finite float '{other}' (expected inf, -inf or nan)"))),
            },
        })
    }
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Bool(b) => write!(f, "{b}"),
            ParamValue::Int(i) => write!(f, "{i}"),
            ParamValue::Float(x) if x.is_infinite() => write!(f, "{}", if *x > 0.0 { "inf" } else { "-inf" }),
            ParamValue::Float(x) => write!(f, "{x:?}"),
            ParamValue::Str(s) => write!(f, "{s}"),
        }
    }
}

impl ParamValue {
    /// Parses a command-line value: bool, integer, float (`inf` allowed), else a string.
    pub fn parse_cli(s: &str) -> ParamValue {
        let t = s.trim();
        if t == "true" || t == "false" {
            return ParamValue::Bool(t == "true");
        }
        if let Ok(i) = t.parse::<i64>() {
            return ParamValue::Int(i);
        }
        match t.to_ascii_lowercase().as_str() {
            "inf" | "+inf" | "infinity" => return ParamValue::Float(f64::INFINITY),
            "-inf" | "-infinity" => return ParamValue::Float(f64::NEG_INFINITY),
            _ => {}
        }
        if let Ok(x) = t.parse::<f64>() {
            return ParamValue::Float(x);
        }
        ParamValue::Str(t.to_string())
    }
}

/// Parameter name -> value, ordered by name so that the canonical form (and its hash) never
/// depends on the order the user wrote them in.
pub type ParamMap = BTreeMap<String, ParamValue>;

/// One end of a float range: its value and whether it belongs to the range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    /// The end point (may be infinite).
    pub value: f64,
    /// Whether the end point itself is admissible (`[` / `]`), else open (`(` / `)`).
    pub closed: bool,
}

/// A closed end `[x` or `x]`.
pub const fn closed(value: f64) -> Bound {
    Bound { value, closed: true }
}

/// An open end `(x` or `x)`.
pub const fn open(value: f64) -> Bound {
    Bound { value, closed: false }
}

/// A float as the docs print it: shortest round-trip form (`1e-300`, not 300 digits), `inf`.
pub fn fmt_float(x: f64) -> String {
    if x.is_infinite() {
        if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        format!("{x:?}")
    }
}

/// What a dimension must be when a method is built: `"energy"` ([`DIM_ENERGY`]) is resolved against
/// a data set first.
pub const DIM_UNRESOLVED: &str =
    "an integer >= 1 (dim = \"energy\" is resolved against a data set by the runner or `structdr embed` before the method is built)";

/// The type and admissible range of a parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamKind {
    /// Integer in `[min, max]`.
    Int {
        /// Smallest admissible value.
        min: i64,
        /// Largest admissible value (`i64::MAX`: unbounded).
        max: i64,
    },
    /// Float between two ends, each open or closed; `inf` is admissible only when the upper end
    /// is a closed `inf]`. NaN never is.
    Float {
        /// Lower end.
        min: Bound,
        /// Upper end.
        max: Bound,
    },
    /// One of the listed strings.
    Choice(&'static [&'static str]),
    /// true / false.
    Bool,
    /// The string `"auto"` (the method chooses, as its doc says) or a value of the inner kind.
    Auto(Box<ParamKind>),
    /// A target dimension: an integer >= 1, or `"energy"` for the data set's PCA-energy dimension
    /// (the runner and `structdr embed` resolve it before building the method).
    Dim,
}

impl ParamKind {
    /// A float in `[min, max]`.
    pub fn float_closed(min: f64, max: f64) -> ParamKind {
        ParamKind::Float { min: closed(min), max: closed(max) }
    }
}

impl fmt::Display for ParamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamKind::Int { min, max } if *max == i64::MAX => write!(f, "integer >= {min}"),
            ParamKind::Int { min, max } => write!(f, "integer in [{min}, {max}]"),
            ParamKind::Float { min, max } => write!(
                f,
                "float in {}{}, {}{}",
                if min.closed { '[' } else { '(' },
                fmt_float(min.value),
                fmt_float(max.value),
                if max.closed { ']' } else { ')' }
            ),
            ParamKind::Choice(c) => write!(f, "one of {}", c.join(" | ")),
            ParamKind::Bool => write!(f, "true | false"),
            ParamKind::Auto(inner) => write!(f, "\"auto\" or {inner}"),
            ParamKind::Dim => write!(f, "integer >= 1 or \"energy\""),
        }
    }
}

/// When a parameter takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stage {
    /// It changes the fit (every parameter but the ones below).
    #[default]
    Fit,
    /// It changes only how the fit is evaluated (e.g. the number of selected features of a
    /// feature-scoring method): the runner fits once per combination of the fit-stage parameters
    /// and evaluates that fit at every value of these.
    Evaluation,
}

/// One parameter of a method: name, type, default and meaning.
#[derive(Debug, Clone)]
pub struct ParamSchema {
    /// Name in specs and on the command line.
    pub name: &'static str,
    /// Type and admissible range.
    pub kind: ParamKind,
    /// Value when not given.
    pub default: ParamValue,
    /// Meaning, one sentence or two.
    pub doc: &'static str,
    /// When it takes effect.
    pub stage: Stage,
}

impl ParamSchema {
    /// The same parameter, taking effect at the evaluation stage ([`Stage::Evaluation`]).
    pub fn evaluation_stage(self) -> ParamSchema {
        ParamSchema { stage: Stage::Evaluation, ..self }
    }
}

/// A parameter that does not fit its schema.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum ParamError {
    /// No method of that name is registered (the known names follow).
    #[error("unknown method '{0}' (known: {1})")]
    UnknownMethod(String, String),
    /// The method has no parameter of that name.
    #[error("method '{method}' has no parameter '{name}' (it has: {known})")]
    Unknown {
        /// The method.
        method: String,
        /// The unknown name.
        name: String,
        /// The names it has.
        known: String,
    },
    /// The value does not fit the parameter's kind or range.
    #[error("method '{method}': parameter '{name}' must be {expected}, got {got}")]
    Invalid {
        /// The method.
        method: String,
        /// The parameter.
        name: String,
        /// Its kind and range, in words.
        expected: String,
        /// The value given.
        got: String,
    },
}

impl ParamSchema {
    /// Checks `v` against the schema and returns its canonical form (integers are accepted where
    /// floats are expected and become floats; numeric strings are parsed).
    pub fn check(&self, method: &str, v: &ParamValue) -> Result<ParamValue, ParamError> {
        check_kind(&self.kind, v).ok_or_else(|| ParamError::Invalid {
            method: method.into(),
            name: self.name.into(),
            expected: self.kind.to_string(),
            got: format!("{v}"),
        })
    }
}

/// `v` in canonical form if it belongs to `kind`.
fn check_kind(kind: &ParamKind, v: &ParamValue) -> Option<ParamValue> {
    let in_float = |x: f64, min: &Bound, max: &Bound| {
        let above = if min.closed { x >= min.value } else { x > min.value };
        let below = if max.closed { x <= max.value } else { x < max.value };
        !x.is_nan() && above && below
    };
    match (kind, v) {
        (ParamKind::Int { min, max }, ParamValue::Int(i)) => (i >= min && i <= max).then(|| v.clone()),
        (ParamKind::Float { min, max }, ParamValue::Int(i)) => in_float(*i as f64, min, max).then_some(ParamValue::Float(*i as f64)),
        (ParamKind::Float { min, max }, ParamValue::Float(x)) => in_float(*x, min, max).then(|| v.clone()),
        (ParamKind::Float { .. }, ParamValue::Str(s)) => match ParamValue::parse_cli(s) {
            p @ (ParamValue::Float(_) | ParamValue::Int(_)) => check_kind(kind, &p),
            _ => None,
        },
        (ParamKind::Choice(options), ParamValue::Str(s)) => options.contains(&s.as_str()).then(|| v.clone()),
        (ParamKind::Bool, ParamValue::Bool(_)) => Some(v.clone()),
        (ParamKind::Auto(_), ParamValue::Str(s)) if s == AUTO => Some(v.clone()),
        (ParamKind::Auto(inner), _) => check_kind(inner, v),
        (ParamKind::Dim, ParamValue::Str(s)) if s == DIM_ENERGY => Some(v.clone()),
        (ParamKind::Dim, ParamValue::Int(i)) => (*i >= 1).then(|| v.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_values_parse_to_the_right_type() {
        assert_eq!(ParamValue::parse_cli("10"), ParamValue::Int(10));
        assert_eq!(ParamValue::parse_cli("0.5"), ParamValue::Float(0.5));
        assert_eq!(ParamValue::parse_cli("inf"), ParamValue::Float(f64::INFINITY));
        assert_eq!(ParamValue::parse_cli("true"), ParamValue::Bool(true));
        assert_eq!(ParamValue::parse_cli("heat"), ParamValue::Str("heat".into()));
    }

    #[test]
    fn schema_checks_type_and_range() {
        let s = ParamSchema { name: "k", kind: ParamKind::Int { min: 1, max: i64::MAX }, default: ParamValue::Int(10), doc: "", stage: Stage::Fit };
        assert!(s.check("le", &ParamValue::Int(5)).is_ok());
        assert!(s.check("le", &ParamValue::Int(0)).is_err());
        assert!(s.check("le", &ParamValue::Float(5.0)).is_err());
        let c = ParamSchema { name: "C", kind: ParamKind::float_closed(0.0, f64::INFINITY), default: ParamValue::Float(1.0), doc: "", stage: Stage::Fit };
        assert_eq!(c.check("spl", &ParamValue::Int(3)).unwrap(), ParamValue::Float(3.0));
        assert_eq!(c.check("spl", &ParamValue::Str("inf".into())).unwrap(), ParamValue::Float(f64::INFINITY));
        assert!(c.check("spl", &ParamValue::Float(-1.0)).is_err());
        assert!(c.check("spl", &ParamValue::Float(f64::NAN)).is_err());
        // open ends exclude the end point; inf only with a closed inf]
        let p = ParamSchema {
            name: "sigma",
            kind: ParamKind::Float { min: open(0.0), max: open(f64::INFINITY) },
            default: ParamValue::Float(1.0),
            doc: "",
            stage: Stage::Fit,
        };
        assert!(p.check("ddrtree", &ParamValue::Float(0.0)).is_err());
        assert!(p.check("ddrtree", &ParamValue::Float(1e-300)).is_ok());
        assert!(p.check("ddrtree", &ParamValue::Float(f64::INFINITY)).is_err());
        assert_eq!(p.kind.to_string(), "float in (0.0, inf)");
        assert_eq!(ParamKind::float_closed(1e-300, 1.0).to_string(), "float in [1e-300, 1.0]");
        // auto and dim
        let a =
            ParamSchema { name: "lambda", kind: ParamKind::Auto(Box::new(p.kind.clone())), default: ParamValue::Str(AUTO.into()), doc: "", stage: Stage::Fit };
        assert!(a.check("ddrtree", &ParamValue::Str("auto".into())).is_ok());
        assert_eq!(a.check("ddrtree", &ParamValue::Int(2)).unwrap(), ParamValue::Float(2.0));
        assert!(a.check("ddrtree", &ParamValue::Str("automatic".into())).is_err());
        assert!(a.check("ddrtree", &ParamValue::Float(-1.0)).is_err());
        let d = ParamSchema { name: "dim", kind: ParamKind::Dim, default: ParamValue::Int(2), doc: "", stage: Stage::Fit };
        assert!(d.check("pca", &ParamValue::Str("energy".into())).is_ok());
        assert!(d.check("pca", &ParamValue::Int(0)).is_err());
    }

    /// Non-finite floats survive a JSON round trip (serde_json alone writes them as null);
    /// finite values keep their plain untagged form.
    #[test]
    fn non_finite_floats_round_trip_through_json() {
        for v in [
            ParamValue::Float(f64::INFINITY),
            ParamValue::Float(f64::NEG_INFINITY),
            ParamValue::Float(0.25),
            ParamValue::Int(3),
            ParamValue::Bool(true),
            ParamValue::Str("kpca".into()),
        ] {
            let text = serde_json::to_string(&v).unwrap();
            assert_eq!(serde_json::from_str::<ParamValue>(&text).unwrap(), v, "{text}");
        }
        assert_eq!(serde_json::to_string(&ParamValue::Float(f64::INFINITY)).unwrap(), r#"{"float":"inf"}"#);
        assert_eq!(serde_json::to_string(&ParamValue::Float(0.5)).unwrap(), "0.5");
        let nan: ParamValue = serde_json::from_str(r#"{"float":"nan"}"#).unwrap();
        assert!(matches!(nan, ParamValue::Float(x) if x.is_nan()));
    }
}
