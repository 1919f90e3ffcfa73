//! One registry entry: a method's name, version, parameter schema and constructor. The table of
//! all entries is `crate::registry` (it lists the families, which list their entries).

use super::params::{open, Bound, ParamError, ParamKind, ParamMap, ParamSchema, ParamValue, Stage, AUTO};
use super::{Embedder, OutputKind, Result};

/// A registered method.
pub struct MethodInfo {
    /// Name used in specs and on the command line.
    pub name: &'static str,
    /// One line: what the method computes.
    pub summary: &'static str,
    /// Where it comes from (paper / reference implementation).
    pub reference: &'static str,
    /// Version of the method's numerics, part of every record's key: bump it whenever a change can
    /// alter a result (not for pure refactors), so `structdr run` recomputes exactly this method's
    /// cells and the old records stay until `structdr prune` removes them.
    pub version: u32,
    /// What the method returns ([`crate::api::Output`]), so the runner knows how to evaluate it.
    pub output: OutputKind,
    /// Whether `fit` needs labels (supervised methods; none of the papers' methods does).
    pub needs_labels: bool,
    /// Whether `fit` accepts an initial value ([`crate::api::Init`]); the others refuse one.
    pub accepts_init: bool,
    /// Whether the fit carries an out-of-sample [`crate::api::Transform`].
    pub inductive: bool,
    /// Whether the fit may depend on [`crate::api::FitInput::seed`] (random projections, k-means
    /// initialised centres): the runner repeats such cells under a spec's `repeats` seeds. A
    /// method declared `false` gives bit-identical output for every seed (the conformance test
    /// checks it).
    pub randomised: bool,
    /// Every parameter with type, default and meaning (the method's
    /// [`crate::api::declare::Declared::schema`]).
    pub params: Vec<ParamSchema>,
    /// Builds the method from a map resolved by [`MethodInfo::resolve`]
    /// ([`crate::api::declare::build`]: every value checked, the instance [`crate::api::Checked`]).
    pub build: fn(&ParamMap) -> Result<Box<dyn Embedder>>,
}

impl MethodInfo {
    /// Validates `given` against the schema and fills in defaults: the canonical parameter set.
    pub fn resolve(&self, given: &ParamMap) -> std::result::Result<ParamMap, ParamError> {
        let known = || self.params.iter().map(|p| p.name).collect::<Vec<_>>().join(", ");
        for name in given.keys() {
            if !self.params.iter().any(|p| p.name == name) {
                return Err(ParamError::Unknown { method: self.name.into(), name: name.clone(), known: known() });
            }
        }
        let mut out = ParamMap::new();
        for p in &self.params {
            let v = match given.get(p.name) {
                Some(v) => p.check(self.name, v)?,
                None => p.default.clone(),
            };
            out.insert(p.name.to_string(), v);
        }
        Ok(out)
    }

    /// Checks a complete set of fit-stage parameters (an instance's [`crate::api::Embedder::params`])
    /// against the schema: every fit-stage parameter present with an admissible value, no unknown
    /// name. Evaluation-stage parameters may be absent.
    pub fn check(&self, given: &ParamMap) -> std::result::Result<(), ParamError> {
        self.resolve(given)?;
        if let Some(p) = self.params.iter().find(|p| p.stage == Stage::Fit && !given.contains_key(p.name)) {
            return Err(ParamError::Invalid { method: self.name.into(), name: p.name.into(), expected: p.kind.to_string(), got: "no value".into() });
        }
        Ok(())
    }

    /// Resolves and builds in one step. The instance is [`crate::api::Checked`]: its fits do not
    /// check the schema again.
    pub fn instantiate(&self, given: &ParamMap) -> Result<(ParamMap, Box<dyn Embedder>)> {
        let resolved = self.resolve(given)?;
        let m = (self.build)(&resolved)?;
        Ok((resolved, m))
    }

    /// The schema of one parameter.
    pub fn param(&self, name: &str) -> Option<&ParamSchema> {
        self.params.iter().find(|p| p.name == name)
    }
}

/// Shorthand constructors for schemas: an integer `>= min`.
pub fn int(name: &'static str, min: i64, default: i64, doc: &'static str) -> ParamSchema {
    ParamSchema { name, kind: ParamKind::Int { min, max: i64::MAX }, default: ParamValue::Int(default), doc, stage: Stage::Fit }
}
/// A float in `[min, max]`.
pub fn float(name: &'static str, min: f64, max: f64, default: f64, doc: &'static str) -> ParamSchema {
    ParamSchema { name, kind: ParamKind::float_closed(min, max), default: ParamValue::Float(default), doc, stage: Stage::Fit }
}

/// A float between two ends, each open or closed ([`super::params::open`], [`super::params::closed`]).
pub fn float_in(name: &'static str, min: Bound, max: Bound, default: f64, doc: &'static str) -> ParamSchema {
    ParamSchema { name, kind: ParamKind::Float { min, max }, default: ParamValue::Float(default), doc, stage: Stage::Fit }
}

/// A float that is positive and finite, `(0, inf)`.
pub fn positive(name: &'static str, default: f64, doc: &'static str) -> ParamSchema {
    float_in(name, open(0.0), open(f64::INFINITY), default, doc)
}

/// `"auto"` (the default: the method chooses) or a value of `inner`'s kind.
pub fn auto(inner: ParamSchema) -> ParamSchema {
    ParamSchema { kind: ParamKind::Auto(Box::new(inner.kind)), default: ParamValue::Str(AUTO.into()), ..inner }
}
/// One of the listed strings.
pub fn choice(name: &'static str, options: &'static [&'static str], default: &'static str, doc: &'static str) -> ParamSchema {
    ParamSchema { name, kind: ParamKind::Choice(options), default: ParamValue::Str(default.into()), doc, stage: Stage::Fit }
}
/// The target dimension, shared by every embedding method.
pub fn dim() -> ParamSchema {
    ParamSchema {
        name: "dim",
        kind: ParamKind::Dim,
        default: ParamValue::Int(2),
        doc: "target dimension d, or \"energy\": the data set's PCA-energy dimension (the spec's [dim] rule, 95% by default)",
        stage: Stage::Fit,
    }
}

/// The `disconnected` parameter shared by LE and LLE
/// ([`structdr_numerics::graphs::Disconnected`]).
pub fn disconnected_param() -> ParamSchema {
    choice(
        "disconnected",
        &["connect", "error"],
        "connect",
        "if the symmetrised k-NN graph is disconnected: \"connect\" joins the components along a minimum spanning tree of the components, each tree edge being the shortest point pair between two parts (no point is dropped, unlike drtoolbox which embeds only the largest component); \"error\" fails and reports the component sizes",
    )
}
