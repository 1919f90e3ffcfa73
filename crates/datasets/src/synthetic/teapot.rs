//! A tiny deterministic ray caster for the `teapot_rotation` generator: a teapot made of analytic
//! primitives, seen by an orthographic camera, turned about its vertical axis.
//!
//! Object space: `y` up, the spout on the `+x` side, the handle on the `-x` side, the teapot
//! mirror-symmetric in `z`. Primitives (all closed-form ray intersections, no marching):
//! - body: ellipsoid `(x/1)^2 + (y/0.72)^2 + (z/1)^2 = 1`, cut flat at `y = -0.55`; glazed from
//!   sky blue on the spout side to indigo on the handle side (see `body_colour`), with a cream band
//!   `|y - 0.3| < 0.05` and a gold oval emblem on the `+z` side;
//! - lid: ellipsoid centred at `(0, 0.6, 0)` with radii `(0.5, 0.2, 0.5)`, dark blue;
//! - knob: sphere of radius 0.11 at `(0, 0.86, 0)`, gold;
//! - spout: open cone frustum from `(0.7, -0.15, 0)` (radius 0.2, inside the body) to
//!   `(1.5, 0.5, 0)` (radius 0.08), sky blue; a ray through the opening sees the dark inner wall;
//! - handle: 12 capsules of radius 0.08 along the arc `(-0.92 + 0.42 cos p, 0.05 + 0.42 sin p, 0)`,
//!   `p` from 60 to 300 degrees, dark blue.
//!
//! Camera: orthographic, looking at `(0, 0.1, 0)` from elevation `e` above the horizontal plane
//! (direction `d = (0, -sin e, -cos e)`), view 3.6 x 2.71 object units at the default 101 x 76
//! pixels (square pixels of `s = max(3.6 / W, 2.71 / H)` units). A frame at angle `a` turns the
//! teapot by `a` counter-clockwise seen from above; the renderer turns the camera and the light by
//! `-a` instead. Shading: `c = m (0.3 + 0.7 max(0, n.l)) + 0.35 max(0, n.h)^40` per channel,
//! clipped to [0, 1], `l` the unit light direction `(-0.45, 0.75, 0.5)` of the camera frame,
//! `h = (l - d) / |l - d|`; the spout's inner wall gets `0.3 m`; background `(0.95, 0.95, 0.95)`.
//! Each pixel averages `ss x ss` sub-pixel rays on a regular grid.

use std::f64::consts::PI;

type V3 = [f64; 3];

fn add(a: V3, b: V3) -> V3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}
fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn mul(a: V3, s: f64) -> V3 {
    [a[0] * s, a[1] * s, a[2] * s]
}
fn dot(a: V3, b: V3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn unit(a: V3) -> V3 {
    mul(a, 1.0 / dot(a, a).sqrt())
}
/// Rotation about `y` by `a`: `(x, y, z) -> (x cos a + z sin a, y, -x sin a + z cos a)`, which turns
/// `+x` towards `-z` (counter-clockwise seen from above, `+y` towards the viewer).
fn rot_y(v: V3, a: f64) -> V3 {
    let (s, c) = a.sin_cos();
    [v[0] * c + v[2] * s, v[1], -v[0] * s + v[2] * c]
}

/// Background colour of every pixel no ray of which hits the teapot.
pub(super) const BACKGROUND: V3 = [0.95, 0.95, 0.95];
/// Glaze of the body on the spout side (`+x`) and on the handle side (`-x`).
const SKY: V3 = [0.28, 0.55, 0.9];
const INDIGO: V3 = [0.22, 0.2, 0.66];
const DARK: V3 = [0.13, 0.24, 0.5];
const GOLD: V3 = [0.86, 0.68, 0.25];
const CREAM: V3 = [0.93, 0.9, 0.78];
/// Rays start this far before the look-at plane (the teapot lies within 2 units of the origin).
const FAR: f64 = 10.0;
/// Smallest ray parameter counted as a hit (rays start outside everything).
const T_MIN: f64 = 1e-9;
const BODY_R: V3 = [1.0, 0.72, 1.0];
const BODY_CUT: f64 = -0.55;
const SPOUT_A: V3 = [0.7, -0.15, 0.0];
const SPOUT_B: V3 = [1.5, 0.5, 0.0];
const SPOUT_RA: f64 = 0.2;
const SPOUT_RB: f64 = 0.08;
const HANDLE_C: V3 = [-0.92, 0.05, 0.0];
const HANDLE_R: f64 = 0.42;
const HANDLE_THICK: f64 = 0.08;
const HANDLE_SEGMENTS: usize = 12;
/// Bounding sphere of the whole teapot: rays that miss it are background without further tests.
const BOUND_C: V3 = [0.05, 0.1, 0.0];
const BOUND_R: f64 = 1.75;

/// What a ray hit: its parameter, the unit normal facing the ray and the surface colour.
#[derive(Clone, Copy)]
struct Hit {
    t: f64,
    n: V3,
    colour: V3,
    /// The ray sees the spout's inner wall (only ambient light reaches it).
    inner: bool,
}

/// Smaller root of `a t^2 + 2 b t + c = 0` first, or `None` without real roots.
fn roots(a: f64, b: f64, c: f64) -> Option<(f64, f64)> {
    let disc = b * b - a * c;
    if disc < 0.0 || a.abs() < 1e-14 {
        return None;
    }
    let s = disc.sqrt();
    let (t1, t2) = ((-b - s) / a, (-b + s) / a);
    Some(if t1 <= t2 { (t1, t2) } else { (t2, t1) })
}

/// Front intersection of the ray `o + t d` with the ellipsoid `|(p - c) / r| = 1` at `y >= y_min`:
/// after the substitution `q = (p - c) / r` it is the unit sphere, `|o' + t d'|^2 = 1`; the normal
/// is `(p - c) / r^2`, normalised.
fn ellipsoid(o: V3, d: V3, c: V3, r: V3, y_min: f64) -> Option<(f64, V3)> {
    let oq = [(o[0] - c[0]) / r[0], (o[1] - c[1]) / r[1], (o[2] - c[2]) / r[2]];
    let dq = [d[0] / r[0], d[1] / r[1], d[2] / r[2]];
    // The far root would show the inside through the cut; from above (e >= 0) a ray entering
    // below the cut also leaves below it, so only the near root can be seen.
    let (t1, _) = roots(dot(dq, dq), dot(oq, dq), dot(oq, oq) - 1.0)?;
    let p = add(o, mul(d, t1));
    if t1 < T_MIN || p[1] < y_min {
        return None;
    }
    let q = sub(p, c);
    Some((t1, unit([q[0] / (r[0] * r[0]), q[1] / (r[1] * r[1]), q[2] / (r[2] * r[2])])))
}

/// First intersection with the open cone frustum of axis `a -> b` and radii `ra`, `rb`: with the
/// unit axis `u`, length `L`, slope `k = (rb - ra) / L` and `h = (p - a).u`, the surface is
/// `|p - a|^2 - h^2 = (ra + k h)^2`, `0 <= h <= L`; along the ray `p - a = w + t d` this is
/// `A t^2 + 2 B t + C = 0` with `m = 1 + k^2`, `A = d.d - m (d.u)^2`,
/// `B = w.d - m (w.u)(d.u) - ra k (d.u)`, `C = w.w - m (w.u)^2 - 2 ra k (w.u) - ra^2`.
/// The outward normal is `e_r - k u` (normalised), `e_r` the radial unit vector; a hit whose
/// outward normal points along the ray is on the inner wall.
fn cone(o: V3, d: V3, a: V3, b: V3, ra: f64, rb: f64) -> Option<(f64, V3, bool)> {
    let axis = sub(b, a);
    let len = dot(axis, axis).sqrt();
    let u = mul(axis, 1.0 / len);
    let k = (rb - ra) / len;
    let m = 1.0 + k * k;
    let w = sub(o, a);
    let (hw, hd) = (dot(w, u), dot(d, u));
    let qa = dot(d, d) - m * hd * hd;
    let qb = dot(w, d) - m * hw * hd - ra * k * hd;
    let qc = dot(w, w) - m * hw * hw - 2.0 * ra * k * hw - ra * ra;
    let (t1, t2) = roots(qa, qb, qc)?;
    for t in [t1, t2] {
        let h = hw + t * hd;
        if t < T_MIN || !(0.0..=len).contains(&h) {
            continue;
        }
        let p = add(w, mul(d, t));
        let radial = sub(p, mul(u, h));
        let n = unit(sub(unit(radial), mul(u, k)));
        let inner = dot(n, d) > 0.0;
        return Some((t, if inner { mul(n, -1.0) } else { n }, inner));
    }
    None
}

/// Front intersection with the capsule of axis `pa -> pb` and radius `r` (unit `d`): the cylinder
/// `|(p - pa) x (pb - pa)|^2 = r^2 |pb - pa|^2` between the end planes, else the end spheres
/// (Quilez's capsule intersection). The normal is `(p - closest axis point) / r`.
fn capsule(o: V3, d: V3, pa: V3, pb: V3, r: f64) -> Option<(f64, V3)> {
    let ba = sub(pb, pa);
    let oa = sub(o, pa);
    let baba = dot(ba, ba);
    let bard = dot(ba, d);
    let baoa = dot(ba, oa);
    let a = baba - bard * bard;
    let b = baba * dot(d, oa) - baoa * bard;
    let c = baba * dot(oa, oa) - baoa * baoa - r * r * baba;
    let h = b * b - a * c;
    if h < 0.0 {
        return None;
    }
    let mut t = f64::NAN;
    let mut end = None;
    if a > 1e-14 {
        t = (-b - h.sqrt()) / a;
        let y = baoa + t * bard;
        if y <= 0.0 {
            end = Some(pa);
        } else if y >= baba {
            end = Some(pb);
        }
    } else {
        // Ray along the axis: only the end spheres can be hit first.
        end = Some(if bard > 0.0 { pa } else { pb });
    }
    if let Some(e) = end {
        let oc = sub(o, e);
        let bb = dot(d, oc);
        let hh = bb * bb - (dot(oc, oc) - r * r);
        if hh < 0.0 {
            return None;
        }
        t = -bb - hh.sqrt();
    }
    if !(t >= T_MIN) {
        return None;
    }
    let p = add(o, mul(d, t));
    let s = (dot(sub(p, pa), ba) / baba).clamp(0.0, 1.0);
    Some((t, unit(sub(p, add(pa, mul(ba, s))))))
}

/// Does the ray pass within `r` of `c` (unit `d`)?
fn near(o: V3, d: V3, c: V3, r: f64) -> bool {
    let oc = sub(c, o);
    let along = dot(oc, d);
    dot(oc, oc) - along * along <= r * r
}

/// Colour of the body at the surface point `p`: the band, the emblem, else the glaze, graded with
/// the azimuth `phi` from the spout, `m = INDIGO + (SKY - INDIGO) (1 + cos phi) / 2`. The grading
/// tells the views with the spout and the handle towards the camera apart (their silhouettes
/// nearly agree), and the emblem the views `a` and `-a` (mirror images in depth).
fn body_colour(p: V3) -> V3 {
    if (p[1] - 0.3).abs() < 0.05 {
        return CREAM;
    }
    // Emblem: an oval around the +z pole, in (azimuth from +z, height).
    let az = p[0].atan2(p[2]);
    if (az / 0.32).powi(2) + ((p[1] + 0.05) / 0.2).powi(2) < 1.0 {
        return GOLD;
    }
    let r = (p[0] * p[0] + p[2] * p[2]).sqrt();
    let s = if r > 1e-12 { 0.5 * (1.0 + p[0] / r) } else { 0.5 };
    add(INDIGO, mul(sub(SKY, INDIGO), s))
}

/// Nearest hit of the ray `o + t d` (object space, unit `d`) with the teapot.
fn trace(o: V3, d: V3, handle: &[(V3, V3)]) -> Option<Hit> {
    if !near(o, d, BOUND_C, BOUND_R) {
        return None;
    }
    let mut best: Option<Hit> = None;
    let mut keep = |t: f64, n: V3, colour: V3, inner: bool| {
        if best.is_none_or(|b| t < b.t) {
            best = Some(Hit { t, n, colour, inner });
        }
    };
    if let Some((t, n)) = ellipsoid(o, d, [0.0; 3], BODY_R, BODY_CUT) {
        keep(t, n, body_colour(add(o, mul(d, t))), false);
    }
    if let Some((t, n)) = ellipsoid(o, d, [0.0, 0.6, 0.0], [0.5, 0.2, 0.5], f64::NEG_INFINITY) {
        keep(t, n, DARK, false);
    }
    if let Some((t, n)) = ellipsoid(o, d, [0.0, 0.86, 0.0], [0.11; 3], f64::NEG_INFINITY) {
        keep(t, n, GOLD, false);
    }
    if let Some((t, n, inner)) = cone(o, d, SPOUT_A, SPOUT_B, SPOUT_RA, SPOUT_RB) {
        keep(t, n, SKY, inner);
    }
    if near(o, d, HANDLE_C, HANDLE_R + HANDLE_THICK + 1e-6) {
        for &(pa, pb) in handle {
            if let Some((t, n)) = capsule(o, d, pa, pb, HANDLE_THICK) {
                keep(t, n, DARK, false);
            }
        }
    }
    best
}

/// The handle's capsule axes: consecutive points of the arc `HANDLE_C + HANDLE_R (cos p, sin p, 0)`,
/// `p` from 60 to 300 degrees.
fn handle_segments() -> Vec<(V3, V3)> {
    let at = |i: usize| {
        let p = (60.0 + 240.0 * i as f64 / HANDLE_SEGMENTS as f64) * PI / 180.0;
        add(HANDLE_C, [HANDLE_R * p.cos(), HANDLE_R * p.sin(), 0.0])
    };
    (0..HANDLE_SEGMENTS).map(|i| (at(i), at(i + 1))).collect()
}

/// Renders one frame: the teapot turned by `angle` (radians) about `y`, seen from `elevation`
/// (radians), `height x width` pixels with `ss x ss` rays each, into `out` (length
/// `3 height width`) as `out[(r width + c) 3 + k]`, row `r` from the top, column `c` from the left,
/// channel `k` in R, G, B order.
pub(super) fn render(angle: f64, elevation: f64, height: usize, width: usize, ss: usize, out: &mut [f64]) {
    debug_assert_eq!(out.len(), 3 * height * width);
    let handle = handle_segments();
    let (se, ce) = elevation.sin_cos();
    // Camera frame in world space, then turned by -angle into object space.
    let dir = rot_y([0.0, -se, -ce], -angle);
    let right = rot_y([1.0, 0.0, 0.0], -angle);
    let up = rot_y([0.0, ce, -se], -angle);
    let light = rot_y(unit([-0.45, 0.75, 0.5]), -angle);
    let half = unit(sub(light, dir));
    let target = [0.0, 0.1, 0.0];
    let px = (3.6 / width as f64).max((3.6 * 76.0 / 101.0) / height as f64);
    let w_ss = 1.0 / (ss * ss) as f64;
    for r in 0..height {
        for c in 0..width {
            let mut acc = [0.0; 3];
            let mut hits = 0;
            for sy in 0..ss {
                for sx in 0..ss {
                    let u = (c as f64 + (sx as f64 + 0.5) / ss as f64 - width as f64 / 2.0) * px;
                    let v = (height as f64 / 2.0 - r as f64 - (sy as f64 + 0.5) / ss as f64) * px;
                    let o = add(add(target, add(mul(right, u), mul(up, v))), mul(dir, -FAR));
                    let hit = trace(o, dir, &handle);
                    hits += usize::from(hit.is_some());
                    let col = match hit {
                        None => BACKGROUND,
                        Some(h) if h.inner => mul(h.colour, 0.3),
                        Some(h) => {
                            let diffuse = 0.3 + 0.7 * dot(h.n, light).max(0.0);
                            let spec = 0.35 * dot(h.n, half).max(0.0).powi(40);
                            [0, 1, 2].map(|k| (h.colour[k] * diffuse + spec).clamp(0.0, 1.0))
                        }
                    };
                    acc = add(acc, col);
                }
            }
            let base = (r * width + c) * 3;
            for k in 0..3 {
                // A pixel that is all background gets BACKGROUND exactly, not a rounded average.
                out[base + k] = if hits == 0 { BACKGROUND[k] } else { acc[k] * w_ss };
            }
        }
    }
}
