//! Landmark regularized principal tree (004 Algorithm 2, §6.7) on the large-scale sets:
//! K = 1000 k-means landmarks, sigma = 0.1, lambda = 0.1 (unused by the tree), gamma = 1,
//! after PCA to 95% energy (`>=` rule).
//!
//! ```text
//! cargo run --release -p structdr-methods --example rpg_landmark -- [fashion-mnist|pendigits|all] [K] [kmeans_iter]
//! ```
//!
//! Data come through `structdr_datasets::load` (mirror `shared/datasets`, or `STRUCTDR_MIRROR`):
//! Fashion-MNIST (70,000 x 784, pixels divided by 255 before PCA; stand-in for the paper's MNIST),
//! PenDigits = `pendigits` + `pendigits.t` (10,992 x 16, raw LIBSVM values). Prints the timing of
//! every phase, the objective history, and the label purity of the landmarks (majority vote of
//! the samples whose largest p_ik is the landmark), which the paper's Fig. 10 reads off W.

use ndarray::{concatenate, Array2, Axis};
use std::time::Instant;
use structdr_datasets::download::FetchOptions;
use structdr_datasets::load::load;
use structdr_datasets::preprocess::pca_energy;
use structdr_linalg::EnergyRule;
use structdr_methods::principal::rpg::{GraphKind, Rpg};

fn run(name: &str, k: usize, kmeans_iter: usize) {
    let opts = FetchOptions::from_env();
    let t = Instant::now();
    let (x, labels) = match name {
        "pendigits" => {
            let a = load("pendigits", &opts).expect("load pendigits");
            let b = load("pendigits.t", &opts).expect("load pendigits.t");
            let x = concatenate(Axis(0), &[a.x.view(), b.x.view()]).unwrap();
            let mut l = a.labels.unwrap();
            l.extend(b.labels.unwrap());
            (x, l)
        }
        "fashion-mnist" => {
            let a = load("fashion-mnist", &opts).expect("load fashion-mnist");
            (a.x / 255.0, a.labels.unwrap())
        }
        other => panic!("unknown data set {other}"),
    };
    let t_load = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let (z, rec) = pca_energy(&x, 0.95, EnergyRule::Ge).expect("pca");
    let t_pca = t.elapsed().as_secs_f64();
    println!("{name}: N = {}, D = {} -> d = {} (PCA 95%, energy {:.4}); load {t_load:.2} s, PCA {t_pca:.2} s", x.nrows(), x.ncols(), rec.d, rec.energy);
    let m = Rpg { graph: GraphKind::Tree, landmark: true, ncenter: k, sigma: 0.1, lambda: 0.1, gamma: 1.0, max_iter: 100, tol: 1e-5, nn: 5, kmeans_iter };
    let t = Instant::now();
    let g = m.fit_graph(z.view(), 0).expect("fit");
    let t_fit = t.elapsed().as_secs_f64();
    for n in &g.notes {
        println!("  {n}");
    }
    println!("  fit {t_fit:.2} s (k-means + {} iterations, converged {}); end to end {:.2} s", g.iterations, g.converged, t_load + t_pca + t_fit);
    println!("  history: {:?}", g.history);
    // Landmark purity: majority label among the samples whose largest soft assignment is k.
    let near = structdr_linalg::sq_dists_between(z.view(), g.centres.view());
    let nclass = labels.iter().copied().max().unwrap_or(0) as usize + 1;
    let mut counts = Array2::<usize>::zeros((g.centres.nrows(), nclass));
    for (i, row) in near.axis_iter(Axis(0)).enumerate() {
        let kk = row.iter().enumerate().fold((0, f64::INFINITY), |b, (j, &v)| if v < b.1 { (j, v) } else { b }).0;
        counts[[kk, labels[i] as usize]] += 1;
    }
    let majority: usize = counts.axis_iter(Axis(0)).map(|r| r.iter().copied().max().unwrap_or(0)).sum();
    let same = g
        .edges
        .iter()
        .filter(|&&(a, b, _)| {
            let la = counts.row(a).iter().enumerate().max_by_key(|e| *e.1).map(|e| e.0);
            let lb = counts.row(b).iter().enumerate().max_by_key(|e| *e.1).map(|e| e.0);
            la == lb
        })
        .count();
    println!(
        "  landmark purity {:.4}; tree edges joining landmarks of the same majority label: {same} / {}",
        majority as f64 / labels.len() as f64,
        g.edges.len()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let which = args.get(1).map(String::as_str).unwrap_or("all");
    let k: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let kmeans_iter: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(20);
    if which == "all" {
        run("pendigits", k, kmeans_iter);
        run("fashion-mnist", k, kmeans_iter);
    } else {
        run(which, k, kmeans_iter);
    }
}
