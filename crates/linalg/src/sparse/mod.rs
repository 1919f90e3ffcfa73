//! Sparse symmetric positive definite matrices: fill-reducing ordering, supernodal Cholesky
//! `P A P^T = L L^T`, `log det A`, solves, and selected inversion (the entries of `A^-1` on the
//! pattern of `L`, by the Takahashi recurrences in block form).
//!
//! The matrix is given as its diagonal and a list of off-diagonal *edges* `(i, j)`, `i != j`, each
//! unordered pair once (the pattern of a weighted graph Laplacian plus a diagonal, as in SPL).
//! The pattern is analysed once ([`SymbolicCholesky::analyze`]); the numeric factorisation
//! ([`SymbolicCholesky::factor`]) can then be repeated for any values on that pattern (values may
//! be zero: the pattern, not the values, fixes the structure).
//!
//! - **Ordering** ([`Ordering`]): natural, reverse Cuthill-McKee (BFS from a pseudo-peripheral
//!   vertex, neighbours by increasing degree, reversed), nested dissection by BFS level
//!   structures (a pseudo-peripheral vertex, the middle BFS level as the vertex separator,
//!   recursion on both sides, separators numbered last; parts of at most 64 vertices in RCM
//!   order), or approximate minimum degree (SuiteSparse AMD through the `amd` crate).
//!   [`Ordering::Auto`] computes all three and keeps the one with the fewest factorisation flops
//!   `sum_j |L_{*j}|^2` (ties: AMD, then nested dissection). Every computed ordering is followed
//!   by a postorder of its elimination tree (same fill, contiguous subtrees).
//! - **Symbolic factorisation**: elimination tree (Liu's algorithm with path compression), the
//!   row patterns of `L` by walking the tree from the non-zeros of each row of `A` (Davis, *Direct
//!   Methods for Sparse Linear Systems*, §4.1-4.3), fundamental supernodes (chains `j -> j + 1` of
//!   the tree with nested structures) and relaxed amalgamation with CHOLMOD's default rule
//!   (a chain is merged into its parent when the merged supernode has few columns or few explicit
//!   zeros). A supernode's columns share one row list: its own columns, then `struct` of its last
//!   column; the values are one dense column-major block per supernode.
//! - **Numeric factorisation**: multifrontal (Duff & Reid 1983; Liu 1992). In postorder, the
//!   front of supernode `s` is `A`'s columns of `s` plus the children's update matrices
//!   (extend-add through relative indices precomputed by the analysis); `dpotrf` factors the
//!   diagonal block, `dtrsm` gives the rows below, `dsyrk` the update matrix `-L_21 L_21^T` for
//!   the parent. BLAS-3 throughout (OpenBLAS, its own thread count).
//! - **Selected inversion** (Takahashi, Fagan & Chen 1973; Erisman & Tinney 1975; supernodal form
//!   as in SelInv, Lin et al. 2011): with `Z = A^-1`, for supernode `s` with columns `K`, rows
//!   below `R`, `U = L_RK L_KK^-1`, in reverse order: `Z_RK = -Z_RR U`,
//!   `Z_KK = (L_KK L_KK^T)^-1 - U^T Z_RK` (`dtrsm`, `dsymm`, `dgemm`; a wide supernode such as
//!   the dense tail is processed in column panels of 96, the same recurrence by blocks, so the
//!   work is in `dsymm` rather than one large `dpotri`). `R` lies in the row list of the parent supernode,
//!   whose dense block of `Z` on its rows x rows (its "frontal inverse") is known, so `Z_RR` is a
//!   gather through the same relative indices; the recurrence never leaves the pattern (the rows
//!   of a column of `L` form a clique of the filled graph): the diagonal of `A^-1` and its entries
//!   on every edge of `A` come out exactly, in about twice the factorisation's flops, without the
//!   dense inverse.
//! - **Bottom eigenpairs of a Laplacian** ([`laplacian_bottom`]): block Krylov on the solves of
//!   `L_w + beta I`, on the complement of the constant vector, instead of a dense eigenproblem.
//! - **Dense inverse** ([`SparseCholesky::dense_inverse_into`]): every entry of `A^-1` by the
//!   two triangular solves on blocks of the identity's columns (`4 n nnz(L)` flops), for callers
//!   that need all of it (the pair duals' gradients) while `L` stays sparse.

/// Fill-reducing ordering of the rows and columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ordering {
    /// The identity permutation.
    Natural,
    /// Reverse Cuthill-McKee (bandwidth / profile reduction).
    ReverseCuthillMcKee,
    /// Nested dissection with BFS-level separators.
    NestedDissection,
    /// Approximate minimum degree (SuiteSparse AMD).
    ApproximateMinimumDegree,
    /// The cheapest (in factorisation flops) of AMD, nested dissection and RCM.
    Auto,
    /// A given permutation: `perm[k]` is the original index placed at position `k`.
    Given(Vec<usize>),
}

/// Errors of the sparse factorisation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SparseError {
    /// The pattern is malformed (index out of range, self-loop, bad permutation, length mismatch).
    #[error("sparse Cholesky: invalid pattern: {0}")]
    Pattern(String),
    /// A pivot was not positive: the matrix is not (numerically) positive definite. `pivot` is the
    /// position in the permuted order (the first leading minor of `P A P^T` that fails), `value`
    /// the diagonal entry where `dpotrf` stopped.
    #[error("sparse Cholesky: matrix is not positive definite (pivot {pivot} of {n} is {value:e})")]
    NotPositiveDefinite {
        /// 0-based position of the failing pivot in the permuted order.
        pivot: usize,
        /// Dimension of the matrix.
        n: usize,
        /// The diagonal entry at the failing pivot (not positive, or not finite).
        value: f64,
    },
    /// A value is NaN or infinite.
    #[error("sparse Cholesky: non-finite input: {0}")]
    NotFinite(String),
}

impl SparseError {
    /// The dense kernels' error for this one, for callers that report [`crate::LinalgError`]:
    /// a failed pivot is the leading minor `pivot + 1`, non-finite input and a bad pattern name
    /// `what`.
    pub fn into_linalg(self, what: &'static str) -> crate::LinalgError {
        match self {
            SparseError::NotPositiveDefinite { pivot, n, .. } => crate::LinalgError::NotPositiveDefinite { minor: pivot + 1, n },
            SparseError::NotFinite(_) => crate::LinalgError::NotFinite { what },
            SparseError::Pattern(detail) => crate::LinalgError::Shape { what, detail },
        }
    }
}

/// Adjacency lists (sorted, duplicate-free) of the undirected graph of `edges`.
pub(crate) mod blas3;
mod eigen;
mod numeric;
mod ordering;
mod symbolic;
#[cfg(test)]
mod tests;

pub use eigen::{laplacian_bottom, laplacian_product};
pub use numeric::{SelectedInverse, SparseCholesky, INVERSE_BLOCK};
pub use ordering::{amd_order, nested_dissection_order, rcm_order};
pub use symbolic::SymbolicCholesky;
