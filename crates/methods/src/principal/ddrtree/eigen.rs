//! The top-d eigenvectors of DDRTree's W-step matrix: subspace iteration with a warm start for
//! large D, dense LAPACK below [`super::DENSE_EIGEN_MAX_D`].

use super::*;

/// Top-`d` eigenvectors (n x d, descending eigenvalues, signs canonicalised) of the symmetric PSD
/// operator `apply` on R^n by block subspace iteration with Rayleigh-Ritz: block size
/// `b = min(n, d + 10)`, start from `warm` (padded with fixed-seed random columns), stop when every
/// wanted Ritz pair has residual `||A v - theta v|| <= 1e-10 theta_1`, at most 3000 sweeps.
pub fn top_eigvecs_subspace(n: usize, d: usize, apply: impl Fn(ArrayView2<f64>) -> Array2<f64>, warm: Option<ArrayView2<f64>>) -> Array2<f64> {
    let b = n.min(d + 10);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x7375_6273_7061_6365);
    let mut v = Array2::from_shape_fn((n, b), |_| rng.gen_range(-1.0..1.0));
    if let Some(w) = warm {
        let c = w.ncols().min(b);
        v.slice_mut(s![.., ..c]).assign(&w.slice(s![.., ..c]));
    }
    orthonormalise(&mut v);
    let mut best = v.slice(s![.., ..d]).to_owned();
    for _ in 0..3000 {
        let u = apply(v.view());
        let mut h = v.t().dot(&u);
        let ht = h.t().to_owned();
        h = (&h + &ht) * 0.5;
        let e = eigh(h.view()).expect("finite Rayleigh quotient");
        // descending order
        let mut s_desc = e.vectors.clone();
        s_desc.invert_axis(Axis(1));
        let theta: Vec<f64> = e.values.iter().rev().copied().collect();
        let ritz = v.dot(&s_desc);
        let us = u.dot(&s_desc);
        let scale = theta[0].abs().max(f64::MIN_POSITIVE);
        let mut ok = true;
        for j in 0..d {
            let r = &us.column(j) - &(&ritz.column(j) * theta[j]);
            if r.dot(&r).sqrt() > 1e-10 * scale {
                ok = false;
                break;
            }
        }
        best = ritz.slice(s![.., ..d]).to_owned();
        if ok {
            break;
        }
        v = us;
        orthonormalise(&mut v);
    }
    canonicalize_signs(&mut best);
    best
}

/// Modified Gram-Schmidt, twice; columns that vanish are replaced by unit vectors.
pub(super) fn orthonormalise(v: &mut Array2<f64>) {
    let (n, b) = v.dim();
    for _pass in 0..2 {
        for j in 0..b {
            for i in 0..j {
                let p = v.column(i).dot(&v.column(j));
                let ci = v.column(i).to_owned();
                v.column_mut(j).scaled_add(-p, &ci);
            }
            let nrm = v.column(j).dot(&v.column(j)).sqrt();
            if nrm > 1e-300 {
                v.column_mut(j).mapv_inplace(|x| x / nrm);
            } else {
                v.column_mut(j).fill(0.0);
                v[[j % n, j]] = 1.0;
            }
        }
    }
}

pub(super) fn top_eigvecs_dense(g: ArrayView2<f64>, d: usize) -> Result<Array2<f64>> {
    let e = eigh_top(g, d).map_err(numerical(METHOD))?;
    Ok(e.vectors)
}
