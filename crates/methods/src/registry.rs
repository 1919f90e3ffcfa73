//! The method registry: one table from method name to parameter schema, version and constructor,
//! gathered from the families.
//!
//! Spec validation, `structdr embed`, `structdr methods` and `docs/methods.md` all read this table,
//! so a method added to its family's list is available everywhere at once.

use crate::api::{AffineMap, MethodInfo, ParamError, Result, Transform, TransformState};
use std::sync::Arc;

/// Every registered method, in documentation order.
pub fn registry() -> &'static [MethodInfo] {
    static REGISTRY: std::sync::OnceLock<Vec<MethodInfo>> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(|| {
        vec![
            // spectral: identity, pca, kpca, le, lle; structure: spl (mpme, esl below, in the
            // order the docs have always listed them); principal: drtree, ddrtree, rpg-*;
            // selection: fsl.
            crate::spectral::identity::info(),
            crate::spectral::pca::info(),
            crate::spectral::rproj::info(),
            crate::spectral::kpca::info(),
            crate::spectral::le::info(),
            crate::spectral::lle::info(),
            crate::structure::spl::info(),
            crate::principal::ddrtree::info_drtree(),
            crate::principal::ddrtree::info_ddrtree(),
            crate::selection::fsl::info(),
            crate::selection::ls::info(),
            crate::selection::spec::info(),
            crate::selection::mcfs::info(),
            crate::selection::ndfs::info(),
            crate::selection::rufs::info(),
            crate::selection::spfs::info(),
            crate::selection::llcfs::info(),
            crate::selection::fsasl::info(),
            crate::selection::sogfs::info(),
            crate::structure::mpme::info(),
            crate::structure::esl::info(),
            crate::principal::rpg::info_tree(),
            crate::principal::rpg::info_l1(),
            crate::principal::rpg::info_landmark(),
            crate::principal::polyline::info(),
            crate::principal::scms::info(),
            crate::neighbour::tsne::info(),
            crate::structure::meu::info(),
            crate::spectral::smce::info(),
            crate::latent::gplvm::info(),
            crate::unfolding::mvu::info_mvu(),
            crate::unfolding::mvu::info_mvu_ineq(),
            crate::unfolding::mvu::info_mvu2(),
            crate::unfolding::landmark::info(),
            crate::unfolding::drtoolbox::info_mvu(),
            crate::unfolding::drtoolbox::info_fastmvu(),
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
        s.push_str(&format!(
            "\n## `{}` (version {})\n\n{}\n\nReference: {}\n\nOutput: {}; randomised: {}; out-of-sample transform: {}.\n\n| parameter | type | default | meaning |\n|---|---|---|---|\n",
            m.name,
            m.version,
            m.summary,
            m.reference,
            m.output,
            if m.randomised { "yes (the output depends on the seed)" } else { "no" },
            if m.inductive { "yes (`structdr embed --save-model`, `structdr transform`)" } else { "no" }
        ));
        for p in &m.params {
            s.push_str(&format!("| `{}` | {} | `{}` | {} |\n", p.name, p.kind, p.default, p.doc));
        }
    }
    s
}

/// Rebuilds a saved out-of-sample map of `method` (the name its errors carry) from its numbers,
/// after [`TransformState::check`] refused a damaged state: `Identity` as spectral's identity map,
/// `Affine` as the api's [`AffineMap`] `x -> (x - mu)^T W`, `GaussianKernel` as kernel PCA's map.
/// Here rather than in the api, because the states name the families' types.
pub fn rebuild_transform(state: TransformState, method: &'static str) -> Result<Arc<dyn Transform>> {
    state.check(method)?;
    Ok(match state {
        TransformState::Identity { n_features } => Arc::new(crate::spectral::identity::IdentityTransform::new(n_features)),
        TransformState::Affine { mean, weights } => Arc::new(AffineMap::new(method, mean, weights)),
        TransformState::GaussianKernel { mean, train, inv_two_sigma_sq, row_means, total, proj } => {
            Arc::new(crate::spectral::kpca::KpcaTransform::from_parts(mean, train, inv_two_sigma_sq, row_means, total, proj))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{ParamMap, ParamValue};

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
