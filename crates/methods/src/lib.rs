//! # structdr-methods: dimensionality reduction and structure learning behind one contract
//!
//! Every method is a parameter struct implementing [`Embedder`]: `fit(X, seed)` on samples in
//! rows returns a [`Fitted`] with the embedding and, where the method has them, the learned graph,
//! component labels, feature weights and the objective history. The struct is declared with
//! [`api::declare`]'s `declare_params!`, one line per parameter (field, schema entry, build and
//! `params()` in one).
//!
//! Methods live in families, one folder each ([`spectral`], [`structure`], [`principal`],
//! [`selection`], [`neighbour`], [`latent`], [`unfolding`]); families import [`api`] and the lower crates (`structdr-linalg`,
//! `structdr-numerics`), never each other. Methods are found by name through the [`registry()`]:
//! one table maps each name to its parameter schema, version and constructor; spec validation, `structdr embed` and the generated docs all read it.
//! Adding a method is one module, one registry entry (see `docs/adding-a-method.md`).
//!
//! | name | module | formula |
//! |---|---|---|
//! | `identity` | [`spectral::identity`] | `Y = X` |
//! | `pca` | [`spectral::pca`] | top-d eigenvectors of the centred covariance |
//! | `rproj` | [`spectral::rproj`] | `Y = (X - 1 mu^T) R / sqrt(d)`, `R` with N(0, 1) entries from the seed |
//! | `kpca` | [`spectral::kpca`] | top-d eigenvectors of the centred Gaussian kernel |
//! | `le` | [`spectral::le`] | bottom non-trivial generalised eigenvectors of `L v = lambda D v` |
//! | `lle` | [`spectral::lle`] | bottom non-trivial eigenvectors of `(I - W)^T (I - W)` |
//! | `smce` | [`spectral::smce`] | per-sample sparse programs `min lambda ||Q c||_1 + 1/2 ||X_i c||^2`, `1^T c = 1`, then the normalised Laplacian's bottom eigenvectors |
//! | `meu` | [`structure::meu`] | maximum entropy unfolding: Gaussian field `(L + gamma I)` on K-NN edges, exact or pseudo-likelihood, then KPCA of `(L + gamma I)^-1` |
//! | `spl` | [`structure::spl`] | dual over S on a K-NN graph, `Q = diag(S1) - S + (gamma+1)/4 I`, `X = (gamma/4) Q^-1 Y W` (000 Alg. 1) |
//! | `drtree`, `ddrtree` | [`principal::ddrtree`] | `min ||Y - Z W^T||^2 + lambda sum_tree ||c_k - c_l||^2 + gamma [sum r_ik ||z_i - c_k||^2 + sigma sum r log r]` (Alg. 2) |
//! | `mpme` | [`structure::mpme`] | `max_W (d/2) log det(L + lambda I) - (1/4) <W, Phi>`, `0 <= w <= 4C`, then KPCA on `(L + lambda I)^-1` (002 eqs. 10-17) |
//! | `esl` | [`structure::esl`] | `min_W -(m/2) log det(I + 4L) + lambda sum w_ij (1 - pbar_ij)`, `0 <= w <= C`, per-component KPCA (001 Alg. 1) |
//! | `fsl` | [`selection::fsl`] | feature weights theta of 001 problem (34); embedding = X on the top-ranked features |
//! | `ls`, `spec`, `mcfs` | [`selection::ls`], [`selection::spec`], [`selection::mcfs`] | Laplacian Score; SPEC phi_1..phi_3 on the normalised Laplacian; max_k abs(LARS coefficient) on the spectral embedding |
//! | `ndfs`, `rufs`, `sogfs` | [`selection::ndfs`], [`selection::rufs`], [`selection::sogfs`] | feature scores = row norms of the l2,1-sparse W: NDFS (nonnegative spectral labels), RUFS (robust NMF + robust regression), SOGFS (learned k-neighbour graph with rank constraint) |
//! | `spfs`, `llcfs`, `fsasl` | [`selection::spfs`], [`selection::llcfs`], [`selection::fsasl`] | feature scores: SPFS (similarity preservation; greedy order or l2,1 path entry), LLCFS (local-learning clustering with simplex feature weights tau), FSASL (lasso reconstruction + adaptive neighbours, l2,1-sparse W) |
//! | `rpg-tree`, `rpg-l1`, `rpg-landmark` | [`principal::rpg`] | principal graph: `P` softmax, `W` MST / LP (19, 23), `C = (2/gamma L + Lambda)^-1 P^T X` |
//! | `polyline` | [`principal::polyline`] | principal curve: vertex-wise descent of `Delta_n + lambda_p (1/(k+1)) sum_i P_v(v_i)` (Kégl et al. 2000) |
//! | `scms` | [`principal::scms`] | ridge points: `x <- x + V_perp V_perp^T (mu(x) - x)` on a Gaussian KDE (Ozertem & Erdogmus 2011) |
//! | `tsne` | [`neighbour::tsne`] | `min KL(P || Q)`, Student-t `Q`; exact, Barnes-Hut or FFT-interpolated gradients |
//! | `gplvm` | [`latent::gplvm`] | `min_X,theta -log N(Y | 0, K_theta(X))` by L-BFGS from scaled PCA |
//! | `mvu`, `mvu-ineq`, `mvu2` | [`unfolding::mvu`] | `max tr(K)`, `K` PSD centred, k-NN distances kept (=), allowed to shrink (<=) or penalised (`nu`) |
//! | `landmark-mvu` | [`unfolding::landmark`] | MVU with `K = Q L Q^T` through m landmarks and LLE reconstruction weights |
//! | `mvu-drtoolbox`, `fastmvu` | [`unfolding::drtoolbox`] | drtoolbox's procedures: PSD least squares of k-NN edge lengths on an LLE basis; unit lengths on a Laplacian basis, then stress fits |
//!
//! The table is kept true by a test (`crates/methods/tests/crate_docs.rs`): every registered
//! method appears in it.

#![warn(missing_docs)]

pub mod api;
pub mod latent;
pub mod neighbour;
pub mod principal;
pub mod registry;
pub mod selection;
pub mod spectral;
pub mod structure;
#[cfg(test)]
mod testing;
pub mod unfolding;

pub use api::{
    check_input, Embedder, Fitted, Graph, MethodError, MethodInfo, ParamError, ParamKind, ParamMap, ParamSchema, ParamValue, Result, StopReason, Trace,
};
pub use registry::{lookup, rebuild_transform, registry};
