use super::*;

fn gen(name: &str, kv: &[(&str, f64)], seed: u64) -> Dataset {
    let m: BTreeMap<String, f64> = kv.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    generate(name, &m, seed).unwrap()
}

fn bits(d: &Dataset) -> Vec<u64> {
    d.x.iter().map(|v| v.to_bits()).collect()
}

/// Generators whose data do not depend on the seed (only the checksum does).
const SEED_FREE: &[&str] = &["teapot_rotation"];

#[test]
fn every_generator_is_deterministic_and_well_formed() {
    for g in generators() {
        let a = gen(g.name, &[], 42);
        let b = gen(g.name, &[], 42);
        let c = gen(g.name, &[], 43);
        assert_eq!(bits(&a), bits(&b), "{}", g.name);
        assert_eq!(a.labels, b.labels);
        assert_eq!(a.checksum, b.checksum);
        if SEED_FREE.contains(&g.name) {
            assert_eq!(bits(&a), bits(&c), "{} draws nothing at random", g.name);
        } else {
            assert_ne!(bits(&a), bits(&c), "{}", g.name);
        }
        assert_ne!(a.checksum, c.checksum);
        let n = g.params.iter().find(|p| p.0 == "n").unwrap().1 as usize;
        assert_eq!(a.x.nrows(), n, "{}", g.name);
        assert!(a.x.iter().all(|v| v.is_finite()));
        let labels = a.labels.as_ref().unwrap();
        assert_eq!(labels.len(), n);
        if let Some(t) = &a.t {
            assert_eq!(t.len(), n);
        }
        assert_eq!(a.name, g.name);
        // Explicit defaults give the same checksum as omitted ones.
        let explicit: Vec<(&str, f64)> = g.params.iter().map(|p| (p.0, p.1)).collect();
        assert_eq!(gen(g.name, &explicit, 42).checksum, a.checksum);
    }
}

#[test]
fn shapes_and_label_counts() {
    let d = gen("two_moons", &[], 1);
    assert_eq!(d.x.dim(), (200, 2));
    assert_eq!(d.labels.as_ref().unwrap().iter().filter(|&&l| l == 0).count(), 100);
    assert_eq!(d.n_classes(), 2);
    assert_eq!(gen("helix", &[], 1).x.dim(), (1000, 3));
    assert_eq!(gen("twinpeaks", &[], 1).x.dim(), (1000, 3));
    assert_eq!(gen("swiss_roll", &[], 1).x.dim(), (1000, 3));
    for (g, k) in [
        ("helix", 4),
        ("spiral", 4),
        ("zigzag", 4),
        ("circle", 4),
        ("distorted_s", 4),
        ("tree", 6),
        ("three_clusters", 3),
        ("y_and_b", 2),
        ("line_circle", 2),
        ("swiss_roll", 4),
        ("twinpeaks", 4),
        ("teapot_rotation", 8),
    ] {
        assert_eq!(gen(g, &[], 3).n_classes(), k, "{g}");
    }
    let lc = gen("line_circle", &[], 1);
    assert_eq!(lc.labels.as_ref().unwrap().iter().filter(|&&l| l == 0).count(), 200);
    let d = gen("circle", &[("n", 17.0)], 1);
    assert_eq!(d.x.nrows(), 17);
}

#[test]
fn geometry() {
    // Circle: radius 1 +- noise.
    let d = gen("circle", &[("n", 2000.0), ("noise", 0.1)], 5);
    let r: Vec<f64> = d.x.rows().into_iter().map(|p| p.dot(&p).sqrt()).collect();
    let mean = r.iter().sum::<f64>() / r.len() as f64;
    assert!((mean - 1.0).abs() < 0.02, "{mean}");
    assert!(r.iter().all(|&v| (v - 1.0).abs() < 0.6));
    let d = gen("circle", &[("noise", 0.0), ("radius", 2.5)], 5);
    assert!(d.x.rows().into_iter().all(|p| (p.dot(&p).sqrt() - 2.5).abs() < 1e-12));
    // Helix without noise satisfies the formula exactly.
    let d = gen("helix", &[("noise", 0.0)], 9);
    let t = d.t.as_ref().unwrap();
    for (i, p) in d.x.rows().into_iter().enumerate() {
        let q = t[i];
        let r = 2.0 + (8.0 * q).cos();
        assert!((p[0] - r * q.cos()).abs() < 1e-12 && (p[1] - r * q.sin()).abs() < 1e-12 && (p[2] - (8.0 * q).sin()).abs() < 1e-12);
        assert!((0.0..2.0 * PI).contains(&q));
    }
    let grid = gen("helix", &[("noise", 0.0), ("random", 0.0), ("n", 4.0)], 0);
    assert!((grid.t.as_ref().unwrap()[3] - 2.0 * PI).abs() < 1e-12);
    // Twin peaks without noise.
    let d = gen("twinpeaks", &[("noise", 0.0)], 2);
    for p in d.x.rows() {
        let (a, b) = ((1.0 - p[0]) / 2.0, (1.0 - p[1]) / 2.0);
        let z = 10.0 * (PI - 2.0 * PI * a).sin() * (3.0 - 6.0 * b).tanh();
        assert!((p[2] - z).abs() < 1e-9);
    }
    // Two moons without noise lie on their half circles.
    let d = gen("two_moons", &[("noise", 0.0)], 2);
    for (p, &l) in d.x.rows().into_iter().zip(d.labels.as_ref().unwrap()) {
        let c = if l == 0 { [0.0, 0.0] } else { [1.0, 0.5] };
        let r = ((p[0] - c[0]).powi(2) + (p[1] - c[1]).powi(2)).sqrt();
        assert!((r - 1.0).abs() < 1e-12);
        assert!(if l == 0 { p[1] >= -1e-12 } else { p[1] <= 0.5 + 1e-12 });
    }
    // Zigzag without noise: on the triangle wave through (0, 0), (1/4, 1/2), (1/2, 0), ...
    let d = gen("zigzag", &[("noise", 0.0)], 5);
    for p in d.x.rows() {
        let a = 4.0 * p[0];
        let k = a.floor();
        let expect = 0.5 * if k as i64 % 2 == 0 { a - k } else { 1.0 - (a - k) };
        assert!((p[1] - expect).abs() < 1e-12 && (0.0..=0.5).contains(&p[1]));
    }
    // Tree without noise: t grows along the branches, trunk points have x = 0.
    let d = gen("tree", &[("noise", 0.0)], 4);
    for ((p, &l), &t) in d.x.rows().into_iter().zip(d.labels.as_ref().unwrap()).zip(d.t.as_ref().unwrap()) {
        if l == 0 {
            assert!(p[0].abs() < 1e-12 && (p[1] - t).abs() < 1e-12);
        } else {
            assert!(t >= 1.0);
        }
    }
    // Trajectory without noise: an isometric copy of the tree in 50 dimensions (trunk points at
    // distance t from the root, every point in a 2-D subspace), labels = the tree's segments.
    let d = gen("trajectory", &[("noise", 0.0), ("n", 500.0)], 4);
    assert_eq!(d.x.dim(), (500, 50));
    assert_eq!(d.n_classes(), 6);
    for ((p, &l), &t) in d.x.rows().into_iter().zip(d.labels.as_ref().unwrap()).zip(d.t.as_ref().unwrap()) {
        if l == 0 {
            assert!((p.dot(&p).sqrt() - t).abs() < 1e-12);
        }
    }
    // all of X^T X's trace in its top two eigenvalues: X has rank 2
    let gram = d.x.t().dot(&d.x);
    let trace: f64 = (0..50).map(|i| gram[[i, i]]).sum();
    let top2: f64 = structdr_linalg::eigh_top(gram.view(), 2).unwrap().values.iter().sum();
    assert!((trace - top2).abs() < 1e-9 * trace, "energy outside the plane: {}", trace - top2);
    // Line + circle: line points on y = 3 (x - 0.5).
    let d = gen("line_circle", &[("noise", 0.0)], 4);
    for (p, &l) in d.x.rows().into_iter().zip(d.labels.as_ref().unwrap()) {
        if l == 0 {
            assert!((p[1] - 3.0 * (p[0] - 0.5)).abs() < 1e-12);
        } else {
            assert!((((p[0] - 2.5).powi(2) + p[1].powi(2)).sqrt() - 1.0).abs() < 1e-12);
        }
    }
}

#[test]
fn errors_list_valid_names() {
    let e = generate("nope", &BTreeMap::new(), 0).unwrap_err().to_string();
    assert!(e.contains("helix") && e.contains("two_moons"), "{e}");
    let mut m = BTreeMap::new();
    m.insert("sigma".to_string(), 1.0);
    let e = generate("circle", &m, 0).unwrap_err().to_string();
    assert!(e.contains("sigma") && e.contains("radius") && e.contains("noise"), "{e}");
    for (k, v) in [("n", 0.0), ("n", 2.5), ("noise", -1.0), ("noise", f64::NAN), ("n", 1e12)] {
        let mut m = BTreeMap::new();
        m.insert(k.to_string(), v);
        assert!(matches!(generate("circle", &m, 0), Err(SyntheticError::BadParam { .. })), "{k}={v}");
    }
}

#[test]
fn noise_augmentation() {
    let d = gen("two_moons", &[], 1);
    let a = append_noise_features(d.clone(), 1000, 7).unwrap();
    assert_eq!(a.x.dim(), (200, 1002));
    assert_eq!(a.x.column(0), d.x.column(0));
    assert!(a.x.slice(ndarray::s![.., 2..]).iter().all(|&v| (0.0..1.0).contains(&v)));
    assert_ne!(a.checksum, d.checksum);
    let a2 = append_noise_features(d.clone(), 1000, 7).unwrap();
    assert_eq!(bits(&a), bits(&a2));
    assert_eq!(a.checksum, a2.checksum);
    assert_ne!(append_noise_features(d.clone(), 1000, 8).unwrap().checksum, a.checksum);

    let u = add_uniform_noise(d.clone(), 0.2, 3).unwrap();
    let diff = &u.x - &d.x;
    assert!(diff.iter().all(|&v| (0.0..0.2).contains(&v)));
    assert!((diff.mean().unwrap() - 0.1).abs() < 0.01);
    assert_ne!(u.checksum, d.checksum);
    assert_eq!(bits(&add_uniform_noise(d.clone(), 0.2, 3).unwrap()), bits(&u));
    let z = add_uniform_noise(d.clone(), 0.0, 3).unwrap();
    assert_eq!(bits(&z), bits(&d));
    assert!(add_uniform_noise(d.clone(), -0.1, 3).is_err());
    assert!(add_uniform_noise(d, f64::INFINITY, 3).is_err());
}

/// Squared Euclidean distances between all rows, `|x_i|^2 + |x_j|^2 - 2 x_i.x_j`.
fn sq_dists(x: &Array2<f64>) -> Array2<f64> {
    let g = x.dot(&x.t());
    let n = x.nrows();
    Array2::from_shape_fn((n, n), |(i, j)| (g[[i, i]] + g[[j, j]] - 2.0 * g[[i, j]]).max(0.0))
}

#[test]
fn teapot_rotation_images() {
    let d = gen("teapot_rotation", &[], 0);
    let n = 400;
    assert_eq!(d.x.dim(), (n, 76 * 101 * 3));
    assert!(d.x.iter().all(|v| (0.0..=1.0).contains(v)));
    assert_eq!(d.t.as_ref().unwrap()[100], 0.25);
    assert_eq!(d.labels.as_ref().unwrap()[..].iter().filter(|&&l| l == 3).count(), 50);
    // Bit-identical whatever the number of threads (frames render independently).
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap().install(|| gen("teapot_rotation", &[], 0));
    assert_eq!(bits(&one), bits(&d));
    let px = |i: usize, r: usize, c: usize| -> [f64; 3] { [0, 1, 2].map(|k| d.x[[i, (r * 101 + c) * 3 + k]]) };
    for i in [0, 77, 200, 399] {
        for (r, c) in [(0, 0), (0, 100), (75, 0), (75, 100)] {
            assert_eq!(px(i, r, c), teapot::BACKGROUND, "frame {i}, corner ({r}, {c})");
        }
        // The centre of the image is the blue body in every frame.
        let [red, green, blue] = px(i, 38, 50);
        assert!(blue > red + 0.2 && blue > green + 0.1, "frame {i}: centre pixel {red} {green} {blue}");
    }
    // The spout tip (x = 1.5 + 0.08 at angle 0) reaches further out than the handle's loop
    // (x = -1.42): the object spans more columns right of the centre at 0 degrees and more
    // left of it at 180 degrees.
    let is_object = |i: usize, r: usize, c: usize| px(i, r, c) != teapot::BACKGROUND;
    let extent = |i: usize| {
        let cols: Vec<usize> = (0..101).filter(|&c| (0..76).any(|r| is_object(i, r, c))).collect();
        (cols[0], cols[cols.len() - 1])
    };
    let ((l0, r0), (l180, r180)) = (extent(0), extent(200));
    assert!(r0 >= r180 + 3 && l180 + 3 <= l0, "0 deg {l0}..{r0}, 180 deg {l180}..{r180}");

    // Closing the loop: angle 2 pi renders angle 0 (sin 2 pi is -2.4e-16, not 0).
    let mut full_turn = vec![0.0; 76 * 101 * 3];
    teapot::render(2.0 * PI, 20f64.to_radians(), 76, 101, 2, &mut full_turn);
    let max_diff = full_turn.iter().zip(d.x.row(0)).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(max_diff < 1e-9, "{max_diff}");

    // The frames trace one closed loop: the two nearest neighbours of every frame are the
    // frames before and after it (cyclically), frames a quarter and half a turn apart are far
    // (the teapot is not rotationally symmetric), and no frame repeats.
    let d2 = sq_dists(&d.x);
    let dist = |i: usize, j: usize| d2[[i % n, j % n]].sqrt();
    for i in 0..n {
        let mut order: Vec<usize> = (0..n).filter(|&j| j != i).collect();
        order.sort_by(|&a, &b| d2[[i, a]].total_cmp(&d2[[i, b]]));
        let mut two = [order[0], order[1]];
        two.sort_unstable();
        let mut expect = [(i + 1) % n, (i + n - 1) % n];
        expect.sort_unstable();
        assert_eq!(two, expect, "frame {i}: nearest frames {:?}", &order[..4]);
        let step = dist(i, i + 1);
        assert!(step > 0.0, "frame {i} repeats");
        // A teapot with a mirror or 2-fold symmetry would bring a frame a quarter or half a
        // turn away back to within a step. (Half a turn stays nearer than a quarter: the views
        // with the spout towards and away from the camera share the body's silhouette.)
        let (quarter, half) = (dist(i, i + n / 4), dist(i, i + n / 2));
        assert!(quarter > 3.0 * step && half > 1.4 * step, "frame {i}: step {step}, quarter {quarter}, half {half}");
        // Locally the frames move away steadily: 1, 2, 4 and 8 steps on, in both directions.
        for k in [1, 2, 4] {
            assert!(dist(i, i + 2 * k) > dist(i, i + k) && dist(i, i + n - 2 * k) > dist(i, i + n - k), "frame {i}, {k} steps");
        }
    }
    let mean = |k: usize| (0..n).map(|i| dist(i, i + k)).sum::<f64>() / n as f64;
    assert!(mean(n / 4) > 5.0 * mean(1) && mean(n / 2) > 4.0 * mean(1), "step {}, quarter {}, half {}", mean(1), mean(n / 4), mean(n / 2));
}

#[test]
fn teapot_rotation_parameters() {
    let d = gen("teapot_rotation", &[("n", 9.0), ("height", 20.0), ("width", 30.0), ("elevation", 35.0), ("supersample", 1.0)], 0);
    assert_eq!(d.x.dim(), (9, 20 * 30 * 3));
    assert_eq!(d.labels.as_ref().unwrap(), &vec![0, 0, 1, 2, 3, 4, 5, 6, 7]);
    assert!(d.x.iter().all(|v| (0.0..=1.0).contains(v)));
    for (k, v) in [("height", 7.0), ("width", 2000.0), ("elevation", 90.0), ("elevation", -1.0), ("supersample", 0.0), ("supersample", 9.0), ("n", 0.0)] {
        let m: BTreeMap<String, f64> = [(k.to_string(), v)].into();
        assert!(matches!(generate("teapot_rotation", &m, 0), Err(SyntheticError::BadParam { .. })), "{k}={v}");
    }
}

/// Writes frames 0, 25, ..., 375 of the default teapot as a 4 x 4 montage to
/// `/tmp/teapot_frames.png` (3x enlarged) for a look; run with `--ignored`.
#[test]
#[ignore = "writes /tmp/teapot_frames.png for a visual check"]
fn teapot_rotation_montage() {
    let t0 = std::time::Instant::now();
    let d = gen("teapot_rotation", &[], 0);
    eprintln!("400 frames rendered in {:.3} s", t0.elapsed().as_secs_f64());
    let (h, w, z, cols) = (76, 101, 3, 4);
    let frames: Vec<usize> = (0..16).map(|k| k * 25).collect();
    let rows = frames.len().div_ceil(cols);
    let (mw, mh) = (cols * w * z, rows * h * z);
    let mut img = vec![255u8; mw * mh * 3];
    for (f, &i) in frames.iter().enumerate() {
        let (oy, ox) = ((f / cols) * h * z, (f % cols) * w * z);
        for y in 0..h * z {
            for x in 0..w * z {
                for k in 0..3 {
                    let v = d.x[[i, ((y / z) * w + x / z) * 3 + k]];
                    img[((oy + y) * mw + ox + x) * 3 + k] = (v * 255.0).round() as u8;
                }
            }
        }
    }
    let file = std::fs::File::create("/tmp/teapot_frames.png").unwrap();
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), mw as u32, mh as u32);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.write_header().unwrap().write_image_data(&img).unwrap();
}
