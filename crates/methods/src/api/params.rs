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
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

impl serde::Serialize for ParamValue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            ParamValue::Bool(b) => s.serialize_bool(*b),
            ParamValue::Int(i) => s.serialize_i64(*i),
            ParamValue::Float(x) if x.is_finite() => s.serialize_f64(*x),
            ParamValue::Float(x) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("float", if x.is_nan() { "nan" } else if *x > 0.0 { "inf" } else { "-inf" })?;
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

/// The type and admissible range of a parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamKind {
    /// Integer in `[min, max]`.
    Int { min: i64, max: i64 },
    /// Float in `[min, max]` (bounds inclusive); `inf` admissible only if `max` is infinite.
    Float { min: f64, max: f64 },
    /// One of the listed strings.
    Choice(&'static [&'static str]),
    /// true / false.
    Bool,
}

impl fmt::Display for ParamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamKind::Int { min, max } if *max == i64::MAX => write!(f, "integer >= {min}"),
            ParamKind::Int { min, max } => write!(f, "integer in [{min}, {max}]"),
            ParamKind::Float { min, max } if max.is_infinite() => write!(f, "float >= {min} (inf allowed)"),
            ParamKind::Float { min, max } => write!(f, "float in [{min}, {max}]"),
            ParamKind::Choice(c) => write!(f, "one of {}", c.join(" | ")),
            ParamKind::Bool => write!(f, "true | false"),
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
    #[error("unknown method '{0}' (known: {1})")]
    UnknownMethod(String, String),
    #[error("method '{method}' has no parameter '{name}' (it has: {known})")]
    Unknown { method: String, name: String, known: String },
    #[error("method '{method}': parameter '{name}' must be {expected}, got {got}")]
    Invalid { method: String, name: String, expected: String, got: String },
}

impl ParamSchema {
    /// Checks `v` against the schema; integers are accepted where floats are expected.
    pub fn check(&self, method: &str, v: &ParamValue) -> Result<ParamValue, ParamError> {
        let bad = || ParamError::Invalid { method: method.into(), name: self.name.into(), expected: self.kind.to_string(), got: format!("{v}") };
        match (&self.kind, v) {
            (ParamKind::Int { min, max }, ParamValue::Int(i)) if i >= min && i <= max => Ok(v.clone()),
            (ParamKind::Float { min, max }, ParamValue::Int(i)) => {
                let x = *i as f64;
                if x >= *min && x <= *max { Ok(ParamValue::Float(x)) } else { Err(bad()) }
            }
            (ParamKind::Float { min, max }, ParamValue::Float(x)) if !x.is_nan() && x >= min && x <= max => Ok(v.clone()),
            (ParamKind::Float { .. }, ParamValue::Str(s)) => match ParamValue::parse_cli(s) {
                ParamValue::Float(_) | ParamValue::Int(_) => self.check(method, &ParamValue::parse_cli(s)),
                _ => Err(bad()),
            },
            (ParamKind::Choice(options), ParamValue::Str(s)) if options.contains(&s.as_str()) => Ok(v.clone()),
            (ParamKind::Bool, ParamValue::Bool(_)) => Ok(v.clone()),
            _ => Err(bad()),
        }
    }
}

/// Typed access to a resolved [`ParamMap`] (all keys present and checked).
pub trait ParamMapExt {
    fn int(&self, name: &str) -> i64;
    fn usize(&self, name: &str) -> usize;
    fn float(&self, name: &str) -> f64;
    fn str(&self, name: &str) -> &str;
    fn bool(&self, name: &str) -> bool;
}

impl ParamMapExt for ParamMap {
    fn int(&self, name: &str) -> i64 {
        match self.get(name) {
            Some(ParamValue::Int(i)) => *i,
            other => panic!("resolved parameter '{name}' is not an integer: {other:?}"),
        }
    }
    fn usize(&self, name: &str) -> usize {
        self.int(name).max(0) as usize
    }
    fn float(&self, name: &str) -> f64 {
        match self.get(name) {
            Some(ParamValue::Float(x)) => *x,
            Some(ParamValue::Int(i)) => *i as f64,
            other => panic!("resolved parameter '{name}' is not a float: {other:?}"),
        }
    }
    fn str(&self, name: &str) -> &str {
        match self.get(name) {
            Some(ParamValue::Str(s)) => s,
            other => panic!("resolved parameter '{name}' is not a string: {other:?}"),
        }
    }
    fn bool(&self, name: &str) -> bool {
        match self.get(name) {
            Some(ParamValue::Bool(b)) => *b,
            other => panic!("resolved parameter '{name}' is not a bool: {other:?}"),
        }
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
        let c = ParamSchema { name: "C", kind: ParamKind::Float { min: 0.0, max: f64::INFINITY }, default: ParamValue::Float(1.0), doc: "", stage: Stage::Fit };
        assert_eq!(c.check("spl", &ParamValue::Int(3)).unwrap(), ParamValue::Float(3.0));
        assert_eq!(c.check("spl", &ParamValue::Str("inf".into())).unwrap(), ParamValue::Float(f64::INFINITY));
        assert!(c.check("spl", &ParamValue::Float(-1.0)).is_err());
        assert!(c.check("spl", &ParamValue::Float(f64::NAN)).is_err());
    }

    /// Non-finite floats survive a JSON round trip (serde_json alone writes them as null);
    /// finite values keep their plain untagged form.
    #[test]
    fn non_finite_floats_round_trip_through_json() {
        for v in [ParamValue::Float(f64::INFINITY), ParamValue::Float(f64::NEG_INFINITY), ParamValue::Float(0.25), ParamValue::Int(3), ParamValue::Bool(true), ParamValue::Str("kpca".into())] {
            let text = serde_json::to_string(&v).unwrap();
            assert_eq!(serde_json::from_str::<ParamValue>(&text).unwrap(), v, "{text}");
        }
        assert_eq!(serde_json::to_string(&ParamValue::Float(f64::INFINITY)).unwrap(), r#"{"float":"inf"}"#);
        assert_eq!(serde_json::to_string(&ParamValue::Float(0.5)).unwrap(), "0.5");
        let nan: ParamValue = serde_json::from_str(r#"{"float":"nan"}"#).unwrap();
        assert!(matches!(nan, ParamValue::Float(x) if x.is_nan()));
    }
}
