# structdr tasks. Fresh machine: `just demo` (main job, embedded synthetic data, no download)
# and `just test` (the test suite). `.ci/run` installs system packages then runs `just test`.

set shell := ["bash", "-euo", "pipefail", "-c"]

# The mirror of benchmark files in this workplace (replaces the canonical hosts when present).
export STRUCTDR_MIRROR := env_var_or_default("STRUCTDR_MIRROR", if path_exists("../shared/datasets") == "true" { "../shared/datasets" } else { "" })
# Debian's OpenBLAS picks AVX2 kernels on Zen 5; the binary sets SKYLAKEX itself when the CPU
# has AVX-512 (docs/blas.md B2). Benchmarks run through cargo, so set it here too.
export OPENBLAS_CORETYPE := env_var_or_default("OPENBLAS_CORETYPE", if `grep -qw avx512f /proc/cpuinfo && echo y || echo n` == "y" { "SKYLAKEX" } else { "" })

bin := env_var_or_default("CARGO_TARGET_DIR", "target") + "/release/structdr"

# List the recipes.
default:
    @just --list

# `--workspace --bins --examples` resolves dependency features as `cargo test --workspace` does
# (examples, like tests, activate the dev-dependencies), so after `just test` or CI the binary is
# already built; `-p structdr` alone resolves fewer features and rebuilt 32 crates. The benchmarks'
# crate (criterion) is left out of both, as `just test` leaves it out.
# Build the release binary (with the test build's features: nothing rebuilds after `just test`).
build:
    cargo build --release --workspace --exclude structdr-bench --bins --examples

# Main job on the embedded default: synthetic manifolds, table + figures in results/demo/ (no download).
demo: build
    {{bin}} run experiments/demo.toml
    @echo "open results/demo/table.md and results/demo/embedding_*.png"

# Release mode for the numeric tests; data-set tests skip without the mirror; formatting and clippy
# with warnings as errors (missing docs included) are part of it, and clippy's `--all-targets`
# type-checks and lints the benches (`just bench` builds and runs them). The tests run under
# cargo-nextest (.config/nextest.toml: a process per test, a hung test killed after 15 minutes and
# named), then the doctests; without cargo-nextest, `cargo test` runs them all. The examples are
# not built here (clippy's `--all-targets` checks that they compile). Each step prints
# the time it starts, so a slow CI log shows where its time went.
# The test suite, then formatting and clippy (warnings are errors).
test:
    @date -u +'test: %T formatting and clippy'
    cargo fmt --all --check
    cargo clippy --workspace --all-targets --release --quiet -- -D warnings
    @date -u +'test: %T the tests (build, then run)'
    if cargo nextest --version > /dev/null 2>&1; then \
        cargo nextest run --release --workspace --exclude structdr-python --exclude structdr-bench --lib --bins --tests && \
        cargo test --release --workspace --exclude structdr-python --exclude structdr-bench --doc; \
    else \
        echo "cargo-nextest not found: cargo test (no per-test time limit)"; \
        cargo test --release --workspace --exclude structdr-python --exclude structdr-bench -- --test-threads 2; \
    fi
    @date -u +'test: %T done'

# The Python package in a fresh virtual environment (pip install ./python[test]), then its pytest
# suite; after `just test` (the CLI comparisons use target/release/structdr).
test-python:
    bash .ci/python-test

# Fetch (download or copy from the mirror) and verify every mirrored benchmark set into data/.
fetch: build
    {{bin}} datasets fetch --all
    {{bin}} datasets verify

# Rows PCA, KPCA, LE, LLE, SPL, MPME, ESL and the density baselines. Resumable: finished cells are
# kept; before computing, the run prints what the missing cells will cost (from the store's records)
# and how to bound a sitting: `just table1 --max-cells 50`, `--method ESL`, `--dataset letter`.
# From scratch (`--force`) about 7 h on 2 cores (docs/tasks.md).
# Table 1 of the SPL paper from its committed records (missing cells cost hours; bound with --max-cells N).
table1 *ARGS: build
    {{bin}} run experiments/table1_loocv.toml {{ARGS}}

# Table I of the ESL paper (MPME, ESL, shared baselines) from table1's records (missing cells cost hours).
esl-table1 *ARGS: build
    {{bin}} run experiments/esl_table1.toml {{ARGS}}

# MPME as the papers ran it (500 L-BFGS-B iterations) beside Table 1's converged MPME row, on table1's store (the capped row: 2.3 core-hours from scratch).
mpme-capped *ARGS: build
    {{bin}} run experiments/mpme_capped.toml {{ARGS}}

# k-means ACC and NMI (mean ± std) on the features FSL and the nine baselines select:
# results/table3_fsl.{md,csv,tex}; from scratch 28 min on 2 cores (docs/tasks.md).
# Table III of the ESL paper from its committed records (from scratch about 30 min).
table3 *ARGS: build
    {{bin}} run experiments/table3_fsl.toml {{ARGS}}

# FSL under three feature scalings (raw, z-score, min-max) on Table III's sets (committed records).
fsl-scaling *ARGS: build
    {{bin}} run experiments/fsl_scaling.toml {{ARGS}}

# Principal graphs on the synthetic sets and the convergence curve (RPG paper Fig. 3, 5).
figures-rpg: build
    {{bin}} run experiments/rpg_principal_graphs.toml

# DDRTree on one COIL20 object and on all 20, with adjacency matrices (SPL paper Fig. 4 / RPG paper Fig. 6).
figures-ddrtree: build
    {{bin}} run experiments/ddrtree_coil20.toml

# Landmark principal trees of PenDigits and Fashion-MNIST (RPG paper Fig. 10).
figures-landmark: build
    {{bin}} run experiments/landmark_trees.toml

# Table 1's MPME cells on pendigits scaled to [0, 1] (raw: 0.2633).
# MPME's lambda scale on pendigits (committed records; from scratch about 20 min on 2 cores).
mpme-scale: build
    {{bin}} run experiments/mpme_scale.toml

# Every figure of the tree issue.
# Principal trees at single-cell scale: DRTree with K = N = 100,000 and the landmark tree on 1,000,000 points (minutes).
figures-monocle-scale: build
    {{bin}} run experiments/scale/monocle_scale.toml

figures-trees: figures-rpg figures-ddrtree figures-landmark

# MPME over C and lambda: the distorted S (MPME paper Fig. 2, 3) and clustering on usps / Yale (Fig. 4).
figures-mpme: build
    {{bin}} run experiments/mpme_sensitivity.toml
    {{bin}} run experiments/mpme_fig4.toml

# MPME paper Table 2: k-means ACC and NMI (best objective of 20 restarts) of nine methods on four sets (committed records).
mpme-table2: build
    {{bin}} run experiments/mpme_table2.toml
    {{bin}} run experiments/mpme_table2_nmi.toml

# SPL paper Fig. 2 (six synthetic sets x KPCA, MVU, MEU, LE, LLE, GPLVM, t-SNE, SMCE, SPL) and MPME
# paper Fig. 5 (five sets x MPME, KPCA, LE, MVU, MVUineq, MVU2, GPLVM, MEU, t-SNE); 1 s from the
# committed panels (2 cores, fresh clone), 21 min to refit on 2 shared cores.
# The papers' comparison figures (SPL paper Fig. 2, MPME paper Fig. 5).
figures-comparison: build
    {{bin}} run experiments/spl_fig2.toml
    {{bin}} run experiments/mpme_fig5.toml

# Teapot images (ray-traced stand-in) with uniform noise U[0, rho], rho in {0, .1, .2, .4, .5},
# by MPME and the MVU family (MVU, MVUineq, MVU2) in 2-D and 3-D; 29 s from the committed panels
# (2 cores, fresh clone).
# Noisy teapot images by MPME and the MVU family (MPME paper Fig. 8, 9).
figures-teapot: build
    {{bin}} run experiments/mpme_fig8.toml

# SPL on the distorted S over gamma and C: embeddings and learned S with nz (SPL paper Fig. 1).
figures-spl: build
    {{bin}} run experiments/spl_sensitivity.toml

# 1 s from the committed panels (2 cores, fresh clone).
# ESL on Y-and-b over lambda x perplexity (ESL paper Fig. 4), on Line + Circle (Fig. 6) and on COIL20 (Fig. 7).
figures-esl: build
    {{bin}} run experiments/esl_yandb.toml
    {{bin}} run experiments/esl_coil20.toml
    {{bin}} run experiments/esl_fig6.toml

# Fig. 8 (parameter sensitivity on Yale: ACC / NMI, selected features, sparsity of W over b and
# lambda), Fig. 9 (two moons + 1000 noise features: theta, selected features, W) and Fig. 10 (teapot
# stand-in: embedding, W, masked images); 4 s from the committed panels (2 cores, fresh clone).
# FSL figures of the ESL paper (Fig. 8, 9, 10).
figures-fsl: build
    {{bin}} run experiments/fsl_fig8.toml
    {{bin}} run experiments/fsl_two_moons.toml
    {{bin}} run experiments/fsl_fig10.toml

# SPL and ESL on USPS digit 1 (SPL paper Fig. 3, ESL paper Fig. 5).
figures-usps1: build
    {{bin}} run experiments/usps1.toml

# Every figure of the papers' claims (issue 4); summary in results/claims_issue4.md.
figures-density: figures-mpme figures-spl figures-esl figures-fsl figures-usps1 figures-comparison

# A swiss roll written as a CSV, then PCA / LE / rproj (Rust) beside classical MDS (numpy) and
# t-SNE (scikit-learn) with 5 seeds: results/external_demo/table.md.
# Own data and external methods (Python, R) beside Rust ones.
external-demo: build
    {{bin}} datasets export swiss_roll --param n=400 --seed 5 --out data/own/swiss_roll --csv
    {{bin}} run experiments/external_demo.toml

# `just reproduce`: tables of the committed record stores are rebuilt from their records
# (--max-cells 0: nothing computed); figure specs redraw from their committed panels
# (results/<id>/panels/); the demo computes (its store is not committed). `--recompute` passes
# --force-before (the sitting's start) to every spec: every cell and every figure's fit
# recomputed, a cell shared by several specs once (docs/tasks.md).

# Every table and figure from committed records and panels, then results/report/index.html (`--recompute`: from scratch).
reproduce *ARGS: build
    #!/usr/bin/env bash
    set -euo pipefail
    recompute=0; [[ " {{ARGS}} " == *" --recompute "* ]] && recompute=1
    t0=$(date +%s)
    # recomputing, every spec replaces the records older than this sitting and uses those written
    # since: the specs that share a store (esl_table1 and mpme_capped with table1_loocv,
    # mpme_table2_nmi with mpme_table2, fsl_scaling with table3_fsl) compute each shared cell once
    from_records="table1_loocv esl_table1 mpme_capped table3_fsl fsl_scaling mpme_scale mpme_table2 mpme_table2_nmi"
    {{bin}} datasets export swiss_roll --param n=400 --seed 5 --out data/own/swiss_roll --csv > /dev/null
    for spec in experiments/*.toml; do
        id=$(basename "$spec" .toml)
        flags=""
        if [ "$recompute" = 1 ]; then flags="--force-before $t0"; elif [[ " $from_records " == *" $id "* ]]; then flags="--max-cells 0"; fi
        s0=$(date +%s)
        {{bin}} run "$spec" $flags --quiet || { echo "reproduce: $spec failed"; exit 1; }
        echo "reproduce: $id $(( $(date +%s) - s0 )) s${flags:+ ($flags)}"
    done
    {{bin}} report
    echo "reproduce: all done in $(( $(date +%s) - t0 )) s"

# The nightly suite (docs/nightly.md): quality cells, speed timed in pairs against the last accepted run's commit; exit 3 on a regression (`--accept`: take it as the baseline).
nightly *ARGS: build
    status=0; {{bin}} nightly experiments/nightly/suite.toml {{ARGS}} || status=$?; {{bin}} history > /dev/null; exit $status

# The paired speed comparison under a competing CPU load (two spinning threads): no alarm expected.
nightly-load-test:
    cargo test --release -p structdr --test suite -- --ignored --nocapture nightly::paired_speed_is_quiet_under_a_competing_load

# Installs slurm-wlm and munge if missing; a spec as a job array of 4 tasks through
# `structdr slurm --submit`, compared bit for bit with a local run.
# A one-node Slurm cluster on this machine running a spec as a job array.
slurm-test: build
    bash .ci/slurm-test

# The nightly history: summary, trend figures and results/history/index.html.
history: build
    {{bin}} history

# Criterion benchmarks (crates/bench: eigendecomposition, 1-NN LOOCV, k-means, SPL, MPME/ESL, FSL, DDRTree, RPG).
bench:
    cargo bench -p structdr-bench -- --quick

# t-SNE against scikit-learn's Barnes-Hut on one core, both in one run (N = 2000 and 8000, 50-D).
bench-tsne: build
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python3 benches/tsne_peers.py target/release/structdr

# t-SNE's FFT gradient against openTSNE's FFT mode on one core, both in one run (Fashion-MNIST, 70,000 points, PCA to 50).
bench-tsne-fft: build
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python3 benches/tsne_fft_peers.py target/release/structdr

# MVU against cvxpy + SCS / Clarabel on one core (swiss roll, k = 6; needs `pip install cvxpy scs clarabel`).
bench-mvu: build
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python3 benches/mvu_peers.py target/release/structdr

# libFuzzer (nightly toolchain + `cargo install cargo-fuzz`): each target runs SECS seconds on its
# committed corpus fuzz/corpus/<target>/, which grows; a crash, a hang over 10 s or an allocation
# over 2 GiB stops it with the input in fuzz/artifacts/<target>/ (logs: fuzz/logs/).
# `just fuzz 600 npy csv` fuzzes only those targets.
# Fuzz every parser SECS seconds each (default 600).
fuzz SECS="600" *TARGETS:
    #!/usr/bin/env bash
    set -uo pipefail
    targets="{{TARGETS}}"
    [ -n "$targets" ] || targets="$(cargo +nightly fuzz list --fuzz-dir fuzz)"
    mkdir -p fuzz/logs
    for t in $targets; do
        echo "== fuzz $t for {{SECS}} s"
        cargo +nightly fuzz run --fuzz-dir fuzz "$t" "fuzz/corpus/$t" -- -max_total_time={{SECS}} -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -print_final_stats=1 > "fuzz/logs/$t.log" 2>&1
        rc=$?
        grep -E "^Done|stat::number_of_executed_units|stat::peak_rss_mb|ERROR: libFuzzer|SUMMARY" "fuzz/logs/$t.log" || true
        [ "$rc" -eq 0 ] || { echo "fuzz $t failed (exit $rc): see fuzz/logs/$t.log and fuzz/artifacts/$t/"; exit 1; }
    done

# Shrink the fuzz corpora to the inputs that add coverage (before committing them).
fuzz-cmin *TARGETS:
    #!/usr/bin/env bash
    set -euo pipefail
    targets="{{TARGETS}}"
    [ -n "$targets" ] || targets="$(cargo +nightly fuzz list --fuzz-dir fuzz)"
    for t in $targets; do cargo +nightly fuzz cmin --fuzz-dir fuzz "$t" "fuzz/corpus/$t"; done

# Remove records of other method versions from a spec's store (`just prune experiments/table1_loocv.toml --dry-run`).
prune SPEC *ARGS: build
    {{bin}} prune {{SPEC}} {{ARGS}}

# Regenerate docs/methods.md from the method registry.
docs: build
    {{bin}} methods --markdown > docs/methods.md

# Remove the demo's results (keeps the data cache and the committed record stores of the tables).
clean-results:
    rm -rf results/demo results/*/cache
