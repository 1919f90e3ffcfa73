//! The structure-learning family: SPL (000), MPME (002) and ESL (001), which learn a graph on the
//! samples through a convex dual, and their shared pair dual ([`pair_dual`]).

pub mod esl;
pub mod meu;
pub mod mpme;
pub mod pair_active;
pub mod pair_dual;
pub mod pair_newton;
pub mod spl;

use crate::api::{MethodError, Result};

/// Whether KPCA on the centred kernel `H (L + a I)^-1 H` of a learned graph determines a
/// `dim`-dimensional embedding; returns the number `c` of connected components of the graph on
/// `n` vertices with the `edges` of positive weight (`(i, j, w)`, `w <= 0` ignored).
///
/// Each component `A` gives `L 1_A = 0`, so `(L + a I)^-1` has the eigenvalue `1/a` on the
/// indicators of the `c` components, and the centred kernel has its top eigenvalue `1/a` with
/// multiplicity exactly `c - 1` (on `1^perp`; every other eigenvalue is `1/(mu + a) < 1/a`, `mu > 0`
/// a non-zero eigenvalue of `L`). With `c - 1 <= dim` the whole tied eigenspace is kept, and the
/// coordinates are fixed up to a rotation inside it, which distances (1-NN, k-means) do not see.
/// With `c - 1 > dim`, KPCA keeps `dim` directions of a `(c - 1)`-dimensional tied eigenspace and
/// the eigensolver's rounding picks which: the embedding is not a function of the data, and this
/// returns [`MethodError::Degenerate`]. `shift` names `a` and gives its value (`("lambda", 10.0)`);
/// `hint` says what to change.
///
/// Callers: MEU's embedding (`a = gamma`) since MEU version 2 and MPME's KPCA embedding
/// (`a = lambda`) since MPME version 2 (docs/parity/mpme.md, "Embeddings the learned graph does
/// not determine"); SPL's `gamma = 0` embedding through [`kernel_top_is_untied`].
pub fn embedding_is_determined(method: &'static str, n: usize, edges: &[(usize, usize, f64)], dim: usize, shift: (&str, f64), hint: &str) -> Result<usize> {
    let (name, a) = shift;
    kernel_top_is_untied(
        method,
        n,
        edges,
        dim,
        TiedKernel { graph: "W", kernel: &format!("(L + {name} I)^-1"), top: &format!("1/{name} = {:.3e}", 1.0 / a) },
        hint,
    )
}

/// How [`kernel_top_is_untied`] names the learned graph, the kernel and its top eigenvalue in its
/// error (`"S"`, `"(4L + I)^-1"`, `"1"`).
pub struct TiedKernel<'a> {
    /// The learned graph's symbol.
    pub graph: &'a str,
    /// The kernel, a positive multiple of `(L + a I)^-1`.
    pub kernel: &'a str,
    /// Its top eigenvalue (that multiple over `a`), as the error prints it.
    pub top: &'a str,
}

/// [`embedding_is_determined`] for any kernel `t (L + a I)^-1` (`t, a > 0`: the same eigenvectors,
/// the top eigenvalue `t / a` tied `c - 1` times), e.g. SPL's `(4L + I)^-1 = (L + I/4)^-1 / 4`,
/// whose top eigenvalue is 1.
pub fn kernel_top_is_untied(method: &'static str, n: usize, edges: &[(usize, usize, f64)], dim: usize, names: TiedKernel<'_>, hint: &str) -> Result<usize> {
    let positive: Vec<(usize, usize, f64)> = edges.iter().copied().filter(|e| e.2 > 0.0).collect();
    let (labels, count) = structdr_numerics::graphs::connected_components(n, &positive);
    // the multiplicity of the top eigenvalue (n = 0 has no components and nothing to tie)
    let tied = count.saturating_sub(1);
    if tied <= dim {
        return Ok(count);
    }
    let mut sizes = structdr_numerics::graphs::component_sizes(&labels, count);
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    let shown: Vec<String> = sizes.iter().take(6).map(|s| s.to_string()).collect();
    let more = if count > 6 { ", ..." } else { "" };
    let TiedKernel { graph, kernel, top } = names;
    Err(MethodError::Degenerate {
        method,
        reason: format!(
            "{graph} splits the samples into {count} connected components (largest [{}{more}]), so the centred kernel {kernel} has its top eigenvalue {top} {tied} times, more than dim = {dim}: \
             the embedding would be {dim} directions of a tied {tied}-dimensional eigenspace, picked by rounding ({hint})",
            shown.join(", "),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_beyond_dim_plus_one_are_degenerate_and_zero_weights_do_not_connect() {
        // {0,1,2} {3,4} {5} {6}: four components; the zero-weight edge 2-5 does not join them
        let edges = [(0, 1, 1.0), (1, 2, 0.5), (3, 4, 2.0), (2, 5, 0.0)];
        assert_eq!(embedding_is_determined("t", 7, &edges, 3, ("lambda", 2.0), "h").unwrap(), 4);
        let err = embedding_is_determined("t", 7, &edges, 2, ("lambda", 2.0), "use a larger dim").unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, MethodError::Degenerate { .. }), "{msg}");
        assert!(msg.contains("4 connected components (largest [3, 2, 1, 1])") && msg.contains("3 times, more than dim = 2"), "{msg}");
        assert!(msg.contains("1/lambda = 5.000e-1") && msg.contains("(use a larger dim)"), "{msg}");
        // a connected graph is always determined
        assert_eq!(embedding_is_determined("t", 3, &[(0, 1, 1.0), (1, 2, 1.0)], 1, ("gamma", 1.0), "h").unwrap(), 1);
    }
}
