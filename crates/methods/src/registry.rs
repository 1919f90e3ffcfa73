//! The method registry: one table from method name to parameter schema and constructor.
//!
//! Spec validation, `structdr embed`, `structdr methods` and `docs/methods.md` all read this table,
//! so a method added here is available everywhere at once.

use crate::params::{ParamError, ParamKind, ParamMap, ParamSchema, ParamValue};
use crate::{Embedder, Result};

/// A registered method.
pub struct MethodInfo {
    /// Name used in specs and on the command line.
    pub name: &'static str,
    /// One line: what the method computes.
    pub summary: &'static str,
    /// Where it comes from (paper / reference implementation).
    pub reference: &'static str,
    /// Every parameter with type, default and meaning.
    pub params: Vec<ParamSchema>,
    /// Builds the method from a map resolved by [`MethodInfo::resolve`].
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

    /// Resolves and builds in one step.
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

/// Shorthand constructors for schemas.
pub(crate) fn int(name: &'static str, min: i64, default: i64, doc: &'static str) -> ParamSchema {
    ParamSchema { name, kind: ParamKind::Int { min, max: i64::MAX }, default: ParamValue::Int(default), doc }
}
pub(crate) fn float(name: &'static str, min: f64, max: f64, default: f64, doc: &'static str) -> ParamSchema {
    ParamSchema { name, kind: ParamKind::Float { min, max }, default: ParamValue::Float(default), doc }
}
pub(crate) fn choice(name: &'static str, options: &'static [&'static str], default: &'static str, doc: &'static str) -> ParamSchema {
    ParamSchema { name, kind: ParamKind::Choice(options), default: ParamValue::Str(default.into()), doc }
}
/// The target dimension, shared by every embedding method.
pub(crate) fn dim() -> ParamSchema {
    int("dim", 1, 2, "target dimension d (specs may write dim = \"energy\" to use the data set's 95% PCA-energy dimension)")
}

/// Every registered method, in documentation order.
pub fn registry() -> &'static [MethodInfo] {
    static REGISTRY: std::sync::OnceLock<Vec<MethodInfo>> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(|| {
        vec![
            crate::identity::info(),
            crate::pca::info(),
            crate::kpca::info(),
            crate::laplacian::info(),
            crate::lle::info(),
            crate::spl::info(),
            crate::ddrtree::info_drtree(),
            crate::ddrtree::info_ddrtree(),
            crate::fsl::info(),
            crate::mpme::info(),
            crate::esl::info(),
            crate::rpg::info_tree(),
            crate::rpg::info_l1(),
            crate::rpg::info_landmark(),
        ]
    })
}

/// The method called `name`, or an error listing the known names.
pub fn lookup(name: &str) -> std::result::Result<&'static MethodInfo, ParamError> {
    registry()
        .iter()
        .find(|m| m.name == name)
        .ok_or_else(|| ParamError::UnknownMethod(name.into(), registry().iter().map(|m| m.name).collect::<Vec<_>>().join(", ")))
}

/// The registry as Markdown (the body of `docs/methods.md`).
pub fn markdown() -> String {
    let mut s = String::from("# Methods\n\nGenerated from the method registry by `structdr methods --markdown`; do not edit by hand.\n");
    for m in registry() {
        s.push_str(&format!("\n## `{}`\n\n{}\n\nReference: {}\n\n| parameter | type | default | meaning |\n|---|---|---|---|\n", m.name, m.summary, m.reference));
        for p in &m.params {
            s.push_str(&format!("| `{}` | {} | `{}` | {} |\n", p.name, p.kind, p.default, p.doc));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_defaults_validate() {
        let mut names: Vec<_> = registry().iter().map(|m| m.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), registry().len());
        for m in registry() {
            for p in &m.params {
                p.check(m.name, &p.default).unwrap_or_else(|e| panic!("default of {}.{} invalid: {e}", m.name, p.name));
            }
            let resolved = m.resolve(&ParamMap::new()).unwrap();
            assert!((m.build)(&resolved).is_ok(), "{} builds from defaults", m.name);
        }
    }

    #[test]
    fn unknown_method_and_parameter_are_named() {
        let e = lookup("nope").err().unwrap().to_string();
        assert!(e.contains("nope") && e.contains("pca"));
        let mut p = ParamMap::new();
        p.insert("kk".into(), ParamValue::Int(3));
        let e = lookup("pca").unwrap().resolve(&p).unwrap_err().to_string();
        assert!(e.contains("kk") && e.contains("dim"), "{e}");
    }
}
