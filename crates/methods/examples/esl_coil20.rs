//! Check of the ESL claim on COIL20 (001 Fig. 7: perplexity u = 10, lambda = 0.83 gives 22
//! disconnected components, 20 of them matching the objects). Loads `coil20` through
//! structdr-datasets (set `STRUCTDR_MIRROR=../shared/datasets STRUCTDR_OFFLINE=1`), runs ESL and
//! prints the components against the object labels.
//! Run: `cargo run --release -p structdr-methods --example esl_coil20 [dim] [max_iter]`.

use structdr_datasets::download::FetchOptions;
use structdr_methods::structure::esl::Esl;
use structdr_methods::Embedder;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dim: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(2);
    let max_iter: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(structdr_methods::structure::pair_dual::DEFAULT_MAX_ITER);
    let ds = structdr_datasets::load::load("coil20", &FetchOptions::from_env()).expect("load coil20");
    let labels = ds.labels.clone().expect("labels");
    println!("coil20: {} x {}, {} classes", ds.x.nrows(), ds.x.ncols(), ds.n_classes());
    let t = std::time::Instant::now();
    let e = Esl { dim, lambda_v: 0.83, c: 1.0, perplexity: 10.0, max_iter, tol: 1e-5, solver: structdr_methods::structure::pair_dual::PairSolver::Active };
    let f = e.fit(ds.x.view(), 0).expect("esl");
    println!("fit: {:.1} s, {} iterations, converged {}", t.elapsed().as_secs_f64(), f.trace.iterations, f.trace.converged());
    for n in &f.notes {
        println!("  {n}");
    }
    let comps = f.components.unwrap();
    let count = comps.iter().max().map_or(0, |m| m + 1);
    let mut classes: Vec<i64> = labels.clone();
    classes.sort_unstable();
    classes.dedup();
    let mut matching = 0;
    for &cl in &classes {
        let members: Vec<usize> = (0..labels.len()).filter(|&i| labels[i] == cl).collect();
        let c0 = comps[members[0]];
        let same = members.iter().all(|&i| comps[i] == c0);
        let pure = (0..labels.len()).filter(|&i| comps[i] == c0).all(|i| labels[i] == cl);
        if same && pure {
            matching += 1;
        }
    }
    println!("{count} components; {matching} of {} objects are exactly one component", classes.len());
    for c in 0..count {
        let mut ls: Vec<i64> = (0..labels.len()).filter(|&i| comps[i] == c).map(|i| labels[i]).collect();
        let size = ls.len();
        ls.sort_unstable();
        ls.dedup();
        println!("  component {c}: {size} images, objects {ls:?}");
    }
}
