//! structdr's criterion benchmarks live in `benches/` of this crate (`just bench`, or
//! `cargo bench -p structdr-bench --bench spl -- --quick` for one). The library is empty: a
//! package needs a target, and the benchmarks use the other crates' public APIs only.
