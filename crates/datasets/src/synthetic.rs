//! Seeded synthetic data sets and noise augmentation.
//!
//! Every generator draws from `Xoshiro256PlusPlus::seed_from_u64(seed)`, so the same name,
//! parameters and seed give bit-identical data. Gaussian noise is `noise * N(0, I)` added to every
//! coordinate unless a generator says otherwise (`teapot_rotation` renders images and draws
//! nothing at random: its data do not depend on the seed; specs add the paper's noise with the
//! `uniform_noise` preprocessing step, [`add_uniform_noise`]). Each [`Dataset`] gets
//! - `labels`: class-like ids (moon halves, cluster ids, tree branch ids, letter ids, line /
//!   circle component ids); for 1-D manifolds (helix, twinpeaks, spiral, circle, distorted S,
//!   swiss roll) the intrinsic parameter range split into 4 equal-length segments, label
//!   `min(floor(4 (t - t_min) / (t_max - t_min)), 3)`; for `teapot_rotation` the 8 angle bins
//!   of 45 degrees;
//! - `t`: the intrinsic coordinate where one exists;
//! - `checksum`: SHA-256 of `"name|k1=v1,k2=v2,...|seed"` over all parameters (defaults filled
//!   in, keys sorted, values in Rust's `{:?}` f64 form).

use crate::{sha256_hex, Dataset};
use ndarray::{concatenate, Array2, Axis};
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::BTreeMap;
use std::f64::consts::PI;

mod teapot;

/// Errors of the generators and the noise augmentation.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum SyntheticError {
    /// No generator of that name.
    #[error("unknown synthetic generator `{name}` (valid: {valid})")]
    UnknownGenerator {
        /// The generator name that was asked for.
        name: String,
        /// Comma-separated list of the valid generator names.
        valid: String,
    },
    /// The generator has no parameter of that name.
    #[error("generator `{generator}` has no parameter `{param}` (valid: {valid})")]
    UnknownParam {
        /// Name of the generator.
        generator: String,
        /// The unknown parameter name that was given.
        param: String,
        /// Comma-separated list of the generator's valid parameter names.
        valid: String,
    },
    /// A parameter value is out of range.
    #[error("generator `{generator}`: parameter `{param}` = {value}: {reason}")]
    BadParam {
        /// Name of the generator.
        generator: String,
        /// Name of the offending parameter.
        param: String,
        /// The value given for the parameter.
        value: f64,
        /// Why the value was rejected (the allowed range).
        reason: String,
    },
    /// Bad argument of an augmentation function.
    #[error("{what}: {reason}")]
    BadArgument {
        /// Name of the augmentation function that rejected the argument.
        what: &'static str,
        /// Why the argument was rejected.
        reason: String,
    },
}

/// Description of one generator: name, one-line summary, and `(parameter, default, doc)`.
#[derive(Debug, Clone, Copy)]
pub struct GeneratorInfo {
    /// Name passed to [`generate`].
    pub name: &'static str,
    /// One-line description with the source.
    pub summary: &'static str,
    /// `(name, default value, documentation)` of every parameter.
    pub params: &'static [(&'static str, f64, &'static str)],
}

const N_DOC: &str = "number of points (integer >= 1)";
const NOISE_DOC: &str = "standard deviation of the isotropic Gaussian noise";

static GENERATORS: &[GeneratorInfo] = &[
    GeneratorInfo {
        name: "helix",
        summary: "3-D helix wound around a torus, y = [(2 + cos 8p) cos p, (2 + cos 8p) sin p, sin 8p] (000 §6.1.2, 002 §4.3.1, drtoolbox)",
        params: &[("n", 1000.0, N_DOC), ("noise", 0.05, NOISE_DOC), ("random", 1.0, "1: p = 2 pi u, u ~ U[0,1) i.i.d.; 0: drtoolbox's grid p_i = 2 pi i / n")],
    },
    GeneratorInfo {
        name: "twinpeaks",
        summary: "3-D twin peaks y = [1 - 2p, 1 - 2q, z_scale sin(pi - 2 pi p) tanh(3 - 6q)], p, q ~ U[0,1) (002 §4.3.1, drtoolbox)",
        params: &[
            ("n", 1000.0, N_DOC),
            ("noise", 0.05, "Gaussian noise std, added before the third coordinate is scaled (drtoolbox)"),
            ("z_scale", 10.0, "factor on the height coordinate (drtoolbox: X(:,3) * 10; 1 = the papers' formula)"),
        ],
    },
    GeneratorInfo {
        name: "two_moons",
        summary: "two interleaved half circles (cos a, sin a) and (1 - cos a, 1/2 - sin a), a ~ U[0, pi]",
        params: &[("n", 200.0, N_DOC), ("noise", 0.1, NOISE_DOC)],
    },
    GeneratorInfo {
        name: "spiral",
        summary: "2-D Archimedean spiral r = 0.2 + 0.8 a / a_max, a ~ U[0, a_max], a_max = 2 pi turns",
        params: &[("n", 200.0, N_DOC), ("noise", 0.02, NOISE_DOC), ("turns", 2.0, "number of turns")],
    },
    GeneratorInfo {
        name: "zigzag",
        summary: "2-D zigzag (stand-in for Kegl et al. 2000's Zigzag sample, SPL paper Fig. 2): u ~ U[0,1), x = u, y = amplitude tri(segments u), tri the unit triangle wave",
        params: &[
            ("n", 200.0, N_DOC),
            ("noise", 0.02, NOISE_DOC),
            ("segments", 4.0, "number of straight segments (integer >= 1)"),
            ("amplitude", 0.5, "height of the zigzag"),
        ],
    },
    GeneratorInfo {
        name: "distorted_s",
        summary:
            "distorted S-shape (stand-in for Kegl et al. 2000's DistortedSShape): a = 3 pi (t - 1/2), y = sign(a)(cos a - 1), x = sin a (1 + distortion y / 2)",
        params: &[("n", 100.0, N_DOC), ("noise", 0.05, NOISE_DOC), ("distortion", 0.3, "widening of the upper loop against the lower")],
    },
    GeneratorInfo {
        name: "circle",
        summary: "circle of given radius, a ~ U[0, 2 pi), (r cos a, r sin a) (Kegl et al. 2000)",
        params: &[("n", 100.0, N_DOC), ("noise", 0.1, NOISE_DOC), ("radius", 1.0, "circle radius")],
    },
    GeneratorInfo {
        name: "tree",
        summary: "2-D tree: trunk (0,0)-(0,1) with two branches that split again (6 segments), points uniform by length",
        params: &[("n", 300.0, N_DOC), ("noise", 0.03, NOISE_DOC)],
    },
    GeneratorInfo {
        name: "trajectory",
        summary: "branching trajectory: the tree generator's 6 segments (4 tips) mapped into dim dimensions by a random orthonormal dim x 2 map drawn from the seed, plus noise N(0, I_dim); t = pseudotime",
        params: &[("n", 10000.0, N_DOC), ("dim", 50.0, "ambient dimension (>= 2)"), ("noise", 0.05, "standard deviation of the Gaussian noise in every one of the dim coordinates")],
    },
    GeneratorInfo {
        name: "three_clusters",
        summary: "three Gaussian clusters at the corners of a unit-2 triangle, weakly connected by thin bridges 0-1 and 1-2",
        params: &[
            ("n", 300.0, N_DOC),
            ("noise", 0.2, "standard deviation of each cluster (bridges use noise / 4)"),
            ("bridge", 0.05, "fraction of points on the bridges (0 = disconnected)"),
        ],
    },
    GeneratorInfo {
        name: "swiss_roll",
        summary: "swiss roll [t cos t, h, t sin t], t = 3 pi / 2 (1 + 2u), h = height v, u, v ~ U[0,1) (drtoolbox)",
        params: &[("n", 1000.0, N_DOC), ("noise", 0.05, NOISE_DOC), ("height", 21.0, "extent of the second coordinate")],
    },
    GeneratorInfo {
        name: "y_and_b",
        summary: "the letters Y and b as 2-D strokes (001 Fig. 3, YB data, 1000 points): Y = stem + two arms, b = stem + round bowl",
        params: &[("n", 1000.0, N_DOC), ("noise", 0.03, NOISE_DOC)],
    },
    GeneratorInfo {
        name: "line_circle",
        summary: "line y = 3 (x - 1/2), x ~ U[0,1) plus a circle shifted by (offset_x, offset_y) from (0.5, 0) (001 Fig. 6)",
        params: &[
            ("n", 300.0, N_DOC),
            ("noise", 0.02, NOISE_DOC),
            ("circle_fraction", 1.0 / 3.0, "fraction of the points on the circle (001: 200 line points)"),
            ("radius", 1.0, "circle radius"),
            ("offset_x", 2.0, "circle centre x minus 0.5"),
            ("offset_y", 0.0, "circle centre y"),
        ],
    },
    GeneratorInfo {
        name: "teapot_rotation",
        summary: "rendered RGB images of a teapot turned about its vertical axis by 2 pi i / n, i = 0..n-1 (stand-in for the Teapot images of Weinberger et al. 2005, 002 §4.3.3: 400 frames of 76 x 101 pixels), values in [0, 1], x[i, (r width + c) 3 + k] row-major with RGB interleaved",
        params: &[
            ("n", 400.0, "number of frames (integer >= 1), evenly spaced over 360 degrees"),
            ("height", 76.0, "image height in pixels (integer in [8, 1024])"),
            ("width", 101.0, "image width in pixels (integer in [8, 1024])"),
            ("elevation", 20.0, "camera elevation above the horizontal plane, degrees in [0, 80]"),
            ("supersample", 2.0, "rays per pixel along each axis (integer in [1, 8]; the pixel is their mean)"),
        ],
    },
];

/// All generators with their parameters and defaults.
pub fn generators() -> &'static [GeneratorInfo] {
    GENERATORS
}

/// Resolved parameters of one call.
struct P<'a> {
    gen: &'static str,
    map: &'a BTreeMap<String, f64>,
}

impl P<'_> {
    fn get(&self, k: &str) -> f64 {
        self.map[k]
    }
    fn bad(&self, k: &str, reason: &str) -> SyntheticError {
        SyntheticError::BadParam { generator: self.gen.into(), param: k.into(), value: self.get(k), reason: reason.into() }
    }
    fn count(&self, k: &str, min: usize) -> Result<usize, SyntheticError> {
        let v = self.get(k);
        if !(v.fract() == 0.0 && v >= min as f64 && v <= 1e7) {
            return Err(self.bad(k, &format!("must be an integer in [{min}, 1e7]")));
        }
        Ok(v as usize)
    }
    fn nonneg(&self, k: &str) -> Result<f64, SyntheticError> {
        let v = self.get(k);
        if !(v.is_finite() && v >= 0.0) {
            return Err(self.bad(k, "must be finite and >= 0"));
        }
        Ok(v)
    }
    fn positive(&self, k: &str) -> Result<f64, SyntheticError> {
        let v = self.get(k);
        if !(v.is_finite() && v > 0.0) {
            return Err(self.bad(k, "must be finite and > 0"));
        }
        Ok(v)
    }
    fn finite(&self, k: &str) -> Result<f64, SyntheticError> {
        let v = self.get(k);
        if !v.is_finite() {
            return Err(self.bad(k, "must be finite"));
        }
        Ok(v)
    }
    fn fraction(&self, k: &str) -> Result<f64, SyntheticError> {
        let v = self.get(k);
        if !(0.0..=1.0).contains(&v) {
            return Err(self.bad(k, "must lie in [0, 1]"));
        }
        Ok(v)
    }
}

type Rng64 = Xoshiro256PlusPlus;

fn gauss(rng: &mut Rng64) -> f64 {
    rng.sample::<f64, _>(StandardNormal)
}

/// Label of `t` in `[lo, hi]` split into 4 equal-length segments.
fn quarter(t: f64, lo: f64, hi: f64) -> i64 {
    (((t - lo) / (hi - lo) * 4.0).floor() as i64).clamp(0, 3)
}

/// A stroke of a piecewise curve: a segment `a -> b`, or an arc of radius `r` around `c` from
/// angle `a0` to `a1`; `id` is its label.
#[derive(Clone, Copy)]
enum Stroke {
    Line { a: [f64; 2], b: [f64; 2], id: i64 },
    Arc { c: [f64; 2], r: f64, a0: f64, a1: f64, id: i64 },
}

impl Stroke {
    fn len(&self) -> f64 {
        match *self {
            Stroke::Line { a, b, .. } => ((b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2)).sqrt(),
            Stroke::Arc { r, a0, a1, .. } => r * (a1 - a0).abs(),
        }
    }
    fn at(&self, f: f64) -> [f64; 2] {
        match *self {
            Stroke::Line { a, b, .. } => [a[0] + f * (b[0] - a[0]), a[1] + f * (b[1] - a[1])],
            Stroke::Arc { c, r, a0, a1, .. } => {
                let th = a0 + f * (a1 - a0);
                [c[0] + r * th.cos(), c[1] + r * th.sin()]
            }
        }
    }
    fn id(&self) -> i64 {
        match *self {
            Stroke::Line { id, .. } | Stroke::Arc { id, .. } => id,
        }
    }
}

/// Samples `n` points uniformly by arc length on the strokes, adds `noise * N(0, I)`; returns
/// points, stroke ids, and (stroke index, position within the stroke in [0, 1)).
fn sample_strokes(strokes: &[Stroke], n: usize, noise: f64, rng: &mut Rng64) -> (Array2<f64>, Vec<i64>, Vec<(usize, f64)>) {
    let lens: Vec<f64> = strokes.iter().map(Stroke::len).collect();
    let total: f64 = lens.iter().sum();
    let mut x = Array2::zeros((n, 2));
    let mut ids = Vec::with_capacity(n);
    let mut pos = Vec::with_capacity(n);
    for i in 0..n {
        let mut s = rng.gen::<f64>() * total;
        let mut k = 0;
        while k + 1 < strokes.len() && s >= lens[k] {
            s -= lens[k];
            k += 1;
        }
        let f = (s / lens[k]).clamp(0.0, 1.0);
        let p = strokes[k].at(f);
        x[[i, 0]] = p[0] + noise * gauss(rng);
        x[[i, 1]] = p[1] + noise * gauss(rng);
        ids.push(strokes[k].id());
        pos.push((k, f));
    }
    (x, ids, pos)
}

struct Out {
    x: Array2<f64>,
    labels: Vec<i64>,
    t: Option<Vec<f64>>,
    note: Option<String>,
}

/// helix (000 §6.1.2; 002 §4.3.1; drtoolbox `generate_data('helix')`):
/// `y_i = [(2 + cos 8p_i) cos p_i, (2 + cos 8p_i) sin p_i, sin 8p_i] + noise * N(0, I_3)`.
/// The papers state `p_i ~ U[0, 1]`, which covers 1/(2 pi) of the closed curve and contradicts
/// "helix demonstrates a circle structure"; drtoolbox (which the papers used) takes
/// `p_i = 2 pi i / n`. Here `p_i = 2 pi u_i`, `u_i ~ U[0,1)` (or drtoolbox's grid with `random = 0`).
fn helix(p: &P, rng: &mut Rng64) -> Result<Out, SyntheticError> {
    let n = p.count("n", 1)?;
    let noise = p.nonneg("noise")?;
    let random = p.get("random");
    if random != 0.0 && random != 1.0 {
        return Err(p.bad("random", "must be 0 or 1"));
    }
    let mut x = Array2::zeros((n, 3));
    let mut t = Vec::with_capacity(n);
    for i in 0..n {
        let pi_ = if random == 1.0 { 2.0 * PI * rng.gen::<f64>() } else { 2.0 * PI * (i + 1) as f64 / n as f64 };
        let r = 2.0 + (8.0 * pi_).cos();
        x[[i, 0]] = r * pi_.cos() + noise * gauss(rng);
        x[[i, 1]] = r * pi_.sin() + noise * gauss(rng);
        x[[i, 2]] = (8.0 * pi_).sin() + noise * gauss(rng);
        t.push(pi_);
    }
    let labels = t.iter().map(|&v| quarter(v, 0.0, 2.0 * PI)).collect();
    Ok(Out { x, labels, t: Some(t), note: None })
}

/// twinpeaks (002 §4.3.1; drtoolbox `generate_data('twinpeaks')`): with `p_i, q_i ~ U[0,1)`,
/// `y_i = [1 - 2p_i, 1 - 2q_i, sin(pi - 2 pi p_i) tanh(3 - 6 q_i)] + noise * N(0, I_3)`, then the
/// third coordinate is multiplied by `z_scale` (drtoolbox: 10). The paper's printed formula drops
/// the second coordinate `1 - 2q_i` (drtoolbox: `X = [xy; sin(pi xy_1) tanh(3 xy_2)]`,
/// `xy = 1 - 2 rand(2, n)`). `t = p_i`; labels = 4 segments of p.
fn twinpeaks(p: &P, rng: &mut Rng64) -> Result<Out, SyntheticError> {
    let n = p.count("n", 1)?;
    let noise = p.nonneg("noise")?;
    let zs = p.finite("z_scale")?;
    let mut x = Array2::zeros((n, 3));
    let mut t = Vec::with_capacity(n);
    for i in 0..n {
        let a: f64 = rng.gen();
        let b: f64 = rng.gen();
        x[[i, 0]] = 1.0 - 2.0 * a + noise * gauss(rng);
        x[[i, 1]] = 1.0 - 2.0 * b + noise * gauss(rng);
        x[[i, 2]] = zs * ((PI - 2.0 * PI * a).sin() * (3.0 - 6.0 * b).tanh() + noise * gauss(rng));
        t.push(a);
    }
    let labels = t.iter().map(|&v| quarter(v, 0.0, 1.0)).collect();
    Ok(Out { x, labels, t: Some(t), note: None })
}

/// two moons: the first `ceil(n/2)` points `(cos a, sin a)` (label 0), the rest
/// `(1 - cos a, 1/2 - sin a)` (label 1), `a ~ U[0, pi]`, plus `noise * N(0, I_2)`; `t = a / pi`.
fn two_moons(p: &P, rng: &mut Rng64) -> Result<Out, SyntheticError> {
    let n = p.count("n", 2)?;
    let noise = p.nonneg("noise")?;
    let n0 = n.div_ceil(2);
    let mut x = Array2::zeros((n, 2));
    let mut labels = Vec::with_capacity(n);
    let mut t = Vec::with_capacity(n);
    for i in 0..n {
        let a = PI * rng.gen::<f64>();
        let (px, py, l) = if i < n0 { (a.cos(), a.sin(), 0) } else { (1.0 - a.cos(), 0.5 - a.sin(), 1) };
        x[[i, 0]] = px + noise * gauss(rng);
        x[[i, 1]] = py + noise * gauss(rng);
        labels.push(l);
        t.push(a / PI);
    }
    Ok(Out { x, labels, t: Some(t), note: None })
}

/// spiral: `a ~ U[0, a_max]`, `a_max = 2 pi turns`, `r = 0.2 + 0.8 a / a_max`,
/// `x = r (cos a, sin a) + noise * N(0, I_2)`; `t = a / a_max`.
fn spiral(p: &P, rng: &mut Rng64) -> Result<Out, SyntheticError> {
    let n = p.count("n", 1)?;
    let noise = p.nonneg("noise")?;
    let turns = p.positive("turns")?;
    let amax = 2.0 * PI * turns;
    let mut x = Array2::zeros((n, 2));
    let mut t = Vec::with_capacity(n);
    for i in 0..n {
        let u: f64 = rng.gen();
        let a = u * amax;
        let r = 0.2 + 0.8 * u;
        x[[i, 0]] = r * a.cos() + noise * gauss(rng);
        x[[i, 1]] = r * a.sin() + noise * gauss(rng);
        t.push(u);
    }
    let labels = t.iter().map(|&v| quarter(v, 0.0, 1.0)).collect();
    Ok(Out { x, labels, t: Some(t), note: None })
}

/// zigzag (stand-in for the Zigzag sample of Kégl et al. 2000, not available): `u ~ U[0,1)`,
/// `a = segments u`, `x = u`, `y = amplitude tri(a)` with `tri(a) = frac(a)` on even segments and
/// `1 - frac(a)` on odd ones, plus `noise * N(0, I_2)`; `t = u` (all segments have one length, so
/// the points are uniform by arc length).
fn zigzag(p: &P, rng: &mut Rng64) -> Result<Out, SyntheticError> {
    let n = p.count("n", 1)?;
    let noise = p.nonneg("noise")?;
    let segments = p.count("segments", 1)? as f64;
    let amplitude = p.positive("amplitude")?;
    let mut x = Array2::zeros((n, 2));
    let mut t = Vec::with_capacity(n);
    for i in 0..n {
        let u: f64 = rng.gen();
        let a = segments * u;
        let frac = a - a.floor();
        let tri = if (a.floor() as i64) % 2 == 0 { frac } else { 1.0 - frac };
        x[[i, 0]] = u + noise * gauss(rng);
        x[[i, 1]] = amplitude * tri + noise * gauss(rng);
        t.push(u);
    }
    let labels = t.iter().map(|&v| quarter(v, 0.0, 1.0)).collect();
    Ok(Out { x, labels, t: Some(t), note: None })
}

/// distorted S (stand-in for the DistortedSShape set of Kégl et al. 2000, whose sample is not
/// available): `t ~ U[0,1)`, `a = 3 pi (t - 1/2)`, `y = sign(a) (cos a - 1)`,
/// `x = sin a (1 + distortion y / 2)`, plus `noise * N(0, I_2)`.
fn distorted_s(p: &P, rng: &mut Rng64) -> Result<Out, SyntheticError> {
    let n = p.count("n", 1)?;
    let noise = p.nonneg("noise")?;
    let dist = p.finite("distortion")?;
    let mut x = Array2::zeros((n, 2));
    let mut t = Vec::with_capacity(n);
    for i in 0..n {
        let u: f64 = rng.gen();
        let a = 3.0 * PI * (u - 0.5);
        let y = a.signum() * (a.cos() - 1.0);
        x[[i, 0]] = a.sin() * (1.0 + dist * y / 2.0) + noise * gauss(rng);
        x[[i, 1]] = y + noise * gauss(rng);
        t.push(u);
    }
    let labels = t.iter().map(|&v| quarter(v, 0.0, 1.0)).collect();
    Ok(Out { x, labels, t: Some(t), note: Some("stand-in: distorted S-shape re-generated, not Kegl's sample".into()) })
}

/// circle: `a ~ U[0, 2 pi)`, `x = radius (cos a, sin a) + noise * N(0, I_2)`; `t = a / (2 pi)`.
fn circle(p: &P, rng: &mut Rng64) -> Result<Out, SyntheticError> {
    let n = p.count("n", 1)?;
    let noise = p.nonneg("noise")?;
    let r = p.positive("radius")?;
    let mut x = Array2::zeros((n, 2));
    let mut t = Vec::with_capacity(n);
    for i in 0..n {
        let u: f64 = rng.gen();
        let a = 2.0 * PI * u;
        x[[i, 0]] = r * a.cos() + noise * gauss(rng);
        x[[i, 1]] = r * a.sin() + noise * gauss(rng);
        t.push(u);
    }
    let labels = t.iter().map(|&v| quarter(v, 0.0, 1.0)).collect();
    Ok(Out { x, labels, t: Some(t), note: None })
}

/// tree: segments (branch id) 0: (0,0)-(0,1) trunk; 1: (0,1)-(-0.8,1.8); 2: (0,1)-(0.8,1.8);
/// 3: (-0.8,1.8)-(-1.3,2.6); 4: (-0.8,1.8)-(-0.4,2.7); 5: (0.8,1.8)-(1.4,2.4); points uniform by
/// length plus `noise * N(0, I_2)`; `t` = geodesic distance from the root (0,0) along the tree.
fn tree(p: &P, rng: &mut Rng64) -> Result<Out, SyntheticError> {
    let n = p.count("n", 1)?;
    let noise = p.nonneg("noise")?;
    let (segs, start) = tree_strokes();
    let (x, labels, pos) = sample_strokes(&segs, n, noise, rng);
    let t = pos.iter().map(|&(k, f)| start[k] + f * segs[k].len()).collect();
    Ok(Out { x, labels, t: Some(t), note: None })
}

/// The tree's six segments and the geodesic distance from the root to each segment's start.
fn tree_strokes() -> ([Stroke; 6], [f64; 6]) {
    let segs = [
        Stroke::Line { a: [0.0, 0.0], b: [0.0, 1.0], id: 0 },
        Stroke::Line { a: [0.0, 1.0], b: [-0.8, 1.8], id: 1 },
        Stroke::Line { a: [0.0, 1.0], b: [0.8, 1.8], id: 2 },
        Stroke::Line { a: [-0.8, 1.8], b: [-1.3, 2.6], id: 3 },
        Stroke::Line { a: [-0.8, 1.8], b: [-0.4, 2.7], id: 4 },
        Stroke::Line { a: [0.8, 1.8], b: [1.4, 2.4], id: 5 },
    ];
    let parent = [None, Some(0), Some(0), Some(1), Some(1), Some(2)];
    let mut start = [0.0f64; 6];
    for k in 1..6 {
        let pk: usize = parent[k].unwrap_or(0);
        start[k] = start[pk] + segs[pk].len();
    }
    (segs, start)
}

/// trajectory (a branching trajectory at single-cell scale): the tree's six segments (a trunk,
/// two branches, three tips' worth of sub-branches: four end points), points uniform by length,
/// mapped into `dim` dimensions by `Q` (dim x 2, orthonormal columns: Gram-Schmidt of a standard
/// normal matrix drawn first from the seed), plus `noise * N(0, I_dim)`; labels = segment,
/// `t` = geodesic distance from the root (pseudotime). Rows are drawn one after the other, so
/// the first n rows of a larger draw with the same seed are the same points.
fn trajectory(p: &P, rng: &mut Rng64) -> Result<Out, SyntheticError> {
    let n = p.count("n", 1)?;
    let dim = p.count("dim", 2)?;
    let noise = p.nonneg("noise")?;
    let (segs, start) = tree_strokes();
    // Q: two orthonormal columns
    let mut q = Array2::<f64>::zeros((dim, 2));
    for v in q.iter_mut() {
        *v = gauss(rng);
    }
    let c0 = q.column(0).to_owned();
    let n0 = c0.dot(&c0).sqrt();
    q.column_mut(0).mapv_inplace(|v| v / n0);
    let proj = q.column(0).dot(&q.column(1));
    let c0 = q.column(0).to_owned();
    q.column_mut(1).scaled_add(-proj, &c0);
    let n1 = q.column(1).dot(&q.column(1)).sqrt();
    q.column_mut(1).mapv_inplace(|v| v / n1);
    let lens: Vec<f64> = segs.iter().map(Stroke::len).collect();
    let total: f64 = lens.iter().sum();
    let mut x = Array2::zeros((n, dim));
    let mut labels = Vec::with_capacity(n);
    let mut t = Vec::with_capacity(n);
    for i in 0..n {
        let mut s = rng.gen::<f64>() * total;
        let mut k = 0;
        while k + 1 < segs.len() && s >= lens[k] {
            s -= lens[k];
            k += 1;
        }
        let f = (s / lens[k]).clamp(0.0, 1.0);
        let pt = segs[k].at(f);
        let mut row = x.row_mut(i);
        for c in 0..dim {
            row[c] = q[[c, 0]] * pt[0] + q[[c, 1]] * pt[1] + noise * gauss(rng);
        }
        labels.push(segs[k].id());
        t.push(start[k] + f * lens[k]);
    }
    Ok(Out { x, labels, t: Some(t), note: None })
}

/// three clusters: centres c_0 = (0,0), c_1 = (2,0), c_2 = (1, sqrt 3); a fraction `bridge` of the
/// points lies on the segments c_0-c_1 and c_1-c_2 (`noise / 4` jitter, label = nearer end), the
/// rest is `c_k + noise * N(0, I_2)` with k uniform in {0,1,2}.
fn three_clusters(p: &P, rng: &mut Rng64) -> Result<Out, SyntheticError> {
    let n = p.count("n", 1)?;
    let noise = p.nonneg("noise")?;
    let bridge = p.fraction("bridge")?;
    let c = [[0.0, 0.0], [2.0, 0.0], [1.0, 3f64.sqrt()]];
    let mut x = Array2::zeros((n, 2));
    let mut labels = Vec::with_capacity(n);
    for i in 0..n {
        if rng.gen::<f64>() < bridge {
            let (a, b, la, lb) = if rng.gen::<bool>() { (c[0], c[1], 0, 1) } else { (c[1], c[2], 1, 2) };
            let f: f64 = rng.gen();
            x[[i, 0]] = a[0] + f * (b[0] - a[0]) + 0.25 * noise * gauss(rng);
            x[[i, 1]] = a[1] + f * (b[1] - a[1]) + 0.25 * noise * gauss(rng);
            labels.push(if f < 0.5 { la } else { lb });
        } else {
            let k = rng.gen_range(0..3usize);
            x[[i, 0]] = c[k][0] + noise * gauss(rng);
            x[[i, 1]] = c[k][1] + noise * gauss(rng);
            labels.push(k as i64);
        }
    }
    Ok(Out { x, labels, t: None, note: None })
}

/// swiss roll (drtoolbox / scikit-learn): `t = 3 pi / 2 (1 + 2u)`, `h = height v`, `u, v ~ U[0,1)`,
/// `x = [t cos t, h, t sin t] + noise * N(0, I_3)`; labels = 4 segments of t in [3pi/2, 9pi/2].
fn swiss_roll(p: &P, rng: &mut Rng64) -> Result<Out, SyntheticError> {
    let n = p.count("n", 1)?;
    let noise = p.nonneg("noise")?;
    let h = p.nonneg("height")?;
    let mut x = Array2::zeros((n, 3));
    let mut t = Vec::with_capacity(n);
    for i in 0..n {
        let tt = 1.5 * PI * (1.0 + 2.0 * rng.gen::<f64>());
        let hh = h * rng.gen::<f64>();
        x[[i, 0]] = tt * tt.cos() + noise * gauss(rng);
        x[[i, 1]] = hh + noise * gauss(rng);
        x[[i, 2]] = tt * tt.sin() + noise * gauss(rng);
        t.push(tt);
    }
    let labels = t.iter().map(|&v| quarter(v, 1.5 * PI, 4.5 * PI)).collect();
    Ok(Out { x, labels, t: Some(t), note: None })
}

/// Y and b (001 Fig. 3, "YB data"; drawn anew since the original points are not published):
/// Y (label 0) = stem (0,0)-(0,1) and arms (0,1)-(-0.5,2), (0,1)-(0.5,2); b (label 1) = stem
/// (1.2,0)-(1.2,2) and a full bowl of radius 0.5 around (1.7,0.5) touching the stem; points
/// uniform by length plus `noise * N(0, I_2)`.
fn y_and_b(p: &P, rng: &mut Rng64) -> Result<Out, SyntheticError> {
    let n = p.count("n", 1)?;
    let noise = p.nonneg("noise")?;
    let strokes = [
        Stroke::Line { a: [0.0, 0.0], b: [0.0, 1.0], id: 0 },
        Stroke::Line { a: [0.0, 1.0], b: [-0.5, 2.0], id: 0 },
        Stroke::Line { a: [0.0, 1.0], b: [0.5, 2.0], id: 0 },
        Stroke::Line { a: [1.2, 0.0], b: [1.2, 2.0], id: 1 },
        Stroke::Arc { c: [1.7, 0.5], r: 0.5, a0: PI, a1: 3.0 * PI, id: 1 },
    ];
    let (x, labels, _) = sample_strokes(&strokes, n, noise, rng);
    Ok(Out { x, labels, t: None, note: Some("stand-in: YB letters re-drawn".into()) })
}

/// line + circle (001 Fig. 6): `round(n (1 - circle_fraction))` line points `x ~ U[0,1)`,
/// `y = 3 (x - 0.5)` (label 0, t = x), the rest on the circle of `radius` around
/// `(0.5 + offset_x, offset_y)` (label 1, t = angle / 2 pi), plus `noise * N(0, I_2)`.
/// The five configurations of Fig. 6 come from varying the offsets (e.g. 2/0 apart, 0/0 crossing).
fn line_circle(p: &P, rng: &mut Rng64) -> Result<Out, SyntheticError> {
    let n = p.count("n", 1)?;
    let noise = p.nonneg("noise")?;
    let frac = p.fraction("circle_fraction")?;
    let r = p.positive("radius")?;
    let ox = p.finite("offset_x")?;
    let oy = p.finite("offset_y")?;
    let n_line = ((n as f64) * (1.0 - frac)).round() as usize;
    let mut x = Array2::zeros((n, 2));
    let mut labels = Vec::with_capacity(n);
    let mut t = Vec::with_capacity(n);
    for i in 0..n {
        let u: f64 = rng.gen();
        let (px, py, l) = if i < n_line {
            (u, 3.0 * (u - 0.5), 0)
        } else {
            let a = 2.0 * PI * u;
            (0.5 + ox + r * a.cos(), oy + r * a.sin(), 1)
        };
        x[[i, 0]] = px + noise * gauss(rng);
        x[[i, 1]] = py + noise * gauss(rng);
        labels.push(l);
        t.push(u);
    }
    Ok(Out { x, labels, t: Some(t), note: None })
}

/// teapot rotation (stand-in for the Teapot images of Weinberger et al. 2005, used in 002
/// §4.3.3 and Fig. 8-9; the files are not available): frame `i` is the teapot of the `teapot`
/// module's ray caster turned by `a_i = 2 pi i / n` about its vertical axis, seen from
/// `elevation` degrees, `height x width` RGB pixels in [0, 1] (the paper divides the pixels by
/// 255) laid out `x[i, (r width + c) 3 + k]`: rows from the top, columns from the left, channels
/// R, G, B interleaved (the layout the image-zip loader gives the real images). Nothing is random.
/// `t = i / n` (the angle as a fraction of a turn); labels `floor(8 i / n)`, the 45-degree bins.
/// Frames render in parallel; each is a pure function of its angle, so the output does not depend
/// on the number of threads.
fn teapot_rotation(p: &P) -> Result<Out, SyntheticError> {
    use rayon::prelude::*;
    let n = p.count("n", 1)?;
    let height = p.count("height", 8)?;
    let width = p.count("width", 8)?;
    if height > 1024 || width > 1024 {
        return Err(p.bad(if height > 1024 { "height" } else { "width" }, "must be an integer in [8, 1024]"));
    }
    let elevation = p.finite("elevation")?;
    if !(0.0..=80.0).contains(&elevation) {
        return Err(p.bad("elevation", "must lie in [0, 80] degrees"));
    }
    let ss = p.count("supersample", 1)?;
    if ss > 8 {
        return Err(p.bad("supersample", "must be an integer in [1, 8]"));
    }
    let features = 3 * height * width;
    if n.checked_mul(features).is_none_or(|c| c > 1 << 31) {
        return Err(p.bad("n", &format!("{n} frames of {features} features are too many (at most 2^31 values)")));
    }
    let mut x = Array2::zeros((n, features));
    let angle = |i: usize| 2.0 * PI * i as f64 / n as f64;
    x.axis_iter_mut(Axis(0)).into_par_iter().enumerate().for_each(|(i, mut row)| {
        let out = row.as_slice_mut().expect("rows of a standard-layout array are contiguous");
        teapot::render(angle(i), elevation.to_radians(), height, width, ss, out);
    });
    let t: Vec<f64> = (0..n).map(|i| i as f64 / n as f64).collect();
    let labels = (0..n).map(|i| (8 * i / n) as i64).collect();
    Ok(Out { x, labels, t: Some(t), note: Some("stand-in: teapot images rendered by a ray caster, not Weinberger's photographs".into()) })
}

fn checksum_of(name: &str, params: &BTreeMap<String, f64>, seed: u64) -> String {
    let p: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    sha256_hex(format!("{name}|{}|{seed}", p.join(",")).as_bytes())
}

/// Generates the synthetic set `name` with `params` (missing ones take their defaults, see
/// [`generators`]) from `Xoshiro256PlusPlus::seed_from_u64(seed)`.
///
/// Errors: unknown generator or parameter (listing the valid ones), out-of-range values.
pub fn generate(name: &str, params: &BTreeMap<String, f64>, seed: u64) -> Result<Dataset, SyntheticError> {
    let info = GENERATORS
        .iter()
        .find(|g| g.name == name)
        .ok_or_else(|| SyntheticError::UnknownGenerator { name: name.into(), valid: GENERATORS.iter().map(|g| g.name).collect::<Vec<_>>().join(", ") })?;
    let mut full: BTreeMap<String, f64> = info.params.iter().map(|(k, v, _)| (k.to_string(), *v)).collect();
    for (k, v) in params {
        match full.get_mut(k) {
            Some(slot) => *slot = *v,
            None => {
                return Err(SyntheticError::UnknownParam {
                    generator: name.into(),
                    param: k.clone(),
                    valid: info.params.iter().map(|p| p.0).collect::<Vec<_>>().join(", "),
                })
            }
        }
    }
    let p = P { gen: info.name, map: &full };
    let mut rng = Rng64::seed_from_u64(seed);
    let out = match info.name {
        "helix" => helix(&p, &mut rng),
        "twinpeaks" => twinpeaks(&p, &mut rng),
        "two_moons" => two_moons(&p, &mut rng),
        "spiral" => spiral(&p, &mut rng),
        "zigzag" => zigzag(&p, &mut rng),
        "distorted_s" => distorted_s(&p, &mut rng),
        "circle" => circle(&p, &mut rng),
        "tree" => tree(&p, &mut rng),
        "trajectory" => trajectory(&p, &mut rng),
        "three_clusters" => three_clusters(&p, &mut rng),
        "swiss_roll" => swiss_roll(&p, &mut rng),
        "y_and_b" => y_and_b(&p, &mut rng),
        "line_circle" => line_circle(&p, &mut rng),
        "teapot_rotation" => teapot_rotation(&p),
        other => unreachable!("generator table and dispatch disagree on {other}"),
    }?;
    Ok(Dataset { name: name.to_string(), x: out.x, labels: Some(out.labels), t: out.t, checksum: checksum_of(name, &full, seed), note: out.note })
}

fn push_note(ds: &mut Dataset, s: String) {
    ds.note = Some(match ds.note.take() {
        Some(n) => format!("{n}; {s}"),
        None => s,
    });
}

/// Checks a generator's parameters without generating the full set (what `structdr check` calls):
/// the generator runs with `n` capped at 2000 (a valid `n` is an integer in its range; larger
/// valid values only take longer), so every other parameter meets exactly the checks of
/// [`generate`].
pub fn validate(name: &str, params: &BTreeMap<String, f64>) -> Result<(), SyntheticError> {
    let mut small = params.clone();
    if let Some(n) = small.get_mut("n") {
        if n.fract() == 0.0 && *n >= 1.0 && *n <= 1e7 {
            *n = n.min(2000.0);
        }
    }
    generate(name, &small, 0).map(|_| ())
}

/// Adds uniform noise `x_ij <- x_ij + amplitude * u_ij`, `u_ij ~ U[0,1)` i.i.d. to every feature
/// (002 §4.3.3, teapot: noise from `U[0, rho]` on each dimension). The checksum becomes
/// `sha256(old checksum | uniform_noise | amplitude | seed)`. Errors on a negative or non-finite
/// amplitude.
pub fn add_uniform_noise(mut ds: Dataset, amplitude: f64, seed: u64) -> Result<Dataset, SyntheticError> {
    if !(amplitude.is_finite() && amplitude >= 0.0) {
        return Err(SyntheticError::BadArgument { what: "add_uniform_noise", reason: format!("amplitude {amplitude} must be finite and >= 0") });
    }
    let mut rng = Rng64::seed_from_u64(seed);
    // Row-major fill order, independent of the array's memory layout.
    for mut row in ds.x.rows_mut() {
        for v in row.iter_mut() {
            *v += amplitude * rng.gen::<f64>();
        }
    }
    ds.checksum = sha256_hex(format!("{}|uniform_noise|{amplitude:?}|{seed}", ds.checksum).as_bytes());
    push_note(&mut ds, format!("uniform noise U[0, {amplitude}) added to every feature (seed {seed})"));
    Ok(ds)
}

/// Appends `count` features drawn i.i.d. from `U[0,1)`: `X <- [X, U]`, `U` N x count (001 §V,
/// two moons + 1000 noise features). The checksum becomes
/// `sha256(old checksum | noise_features | count | seed)`.
pub fn append_noise_features(mut ds: Dataset, count: usize, seed: u64) -> Result<Dataset, SyntheticError> {
    let n = ds.x.nrows();
    if n.checked_mul(count).is_none_or(|c| c > 1 << 32) {
        return Err(SyntheticError::BadArgument { what: "append_noise_features", reason: format!("{n} x {count} noise matrix is too large") });
    }
    let mut rng = Rng64::seed_from_u64(seed);
    let u = Array2::from_shape_simple_fn((n, count), || rng.gen::<f64>());
    ds.x = concatenate(Axis(1), &[ds.x.view(), u.view()]).map_err(|e| SyntheticError::BadArgument { what: "append_noise_features", reason: e.to_string() })?;
    ds.checksum = sha256_hex(format!("{}|noise_features|{count}|{seed}", ds.checksum).as_bytes());
    push_note(&mut ds, format!("{count} U[0,1) noise features appended (seed {seed})"));
    Ok(ds)
}

#[cfg(test)]
mod tests;
