# structdr tasks. Fresh machine: `just demo` (main job, embedded synthetic data, no download)
# and `just test` (the test suite). `.ci/run` installs system packages then runs `just test`.

set shell := ["bash", "-euo", "pipefail", "-c"]

# The mirror of benchmark files in this workplace (replaces the canonical hosts when present).
export STRUCTDR_MIRROR := env_var_or_default("STRUCTDR_MIRROR", if path_exists("../shared/datasets") == "true" { "../shared/datasets" } else { "" })
# Debian's OpenBLAS picks AVX2 kernels on Zen 5; the binary sets SKYLAKEX itself when the CPU
# has AVX-512 (STACK.md P2). Benchmarks run through cargo, so set it here too.
export OPENBLAS_CORETYPE := env_var_or_default("OPENBLAS_CORETYPE", if `grep -qw avx512f /proc/cpuinfo && echo y || echo n` == "y" { "SKYLAKEX" } else { "" })

bin := "target/release/structdr"

default:
    @just --list

# Build the release binary.
build:
    cargo build --release -p structdr

# Main job on the embedded default: synthetic manifolds, table + figures in results/demo/ (no download).
demo: build
    {{bin}} run experiments/demo.toml
    @echo "open results/demo/table.md and results/demo/embedding_*.png"

# The test suite (numeric tests in release mode; data-set tests skip without the mirror).
test:
    cargo test --release --workspace -- --test-threads 2
    cargo bench --workspace --no-run --quiet

# Fetch (download or copy from the mirror) and verify every mirrored benchmark set into data/.
fetch: build
    {{bin}} datasets fetch --all
    {{bin}} datasets verify

# Table 1 of the SPL paper for the methods that exist: results/table1_loocv.{md,csv,tex}.
table1: build
    {{bin}} run experiments/table1_loocv.toml

# Principal graphs on the synthetic sets and the convergence curve (004 Fig. 3, 5).
figures-rpg: build
    {{bin}} run experiments/rpg_principal_graphs.toml

# DDRTree on one COIL20 object and on all 20, with adjacency matrices (000 Fig. 4 / 004 Fig. 6).
figures-ddrtree: build
    {{bin}} run experiments/ddrtree_coil20.toml

# Landmark principal trees of PenDigits and Fashion-MNIST (004 Fig. 10).
figures-landmark: build
    {{bin}} run experiments/landmark_trees.toml

# Every figure of the tree issue.
figures-trees: figures-rpg figures-ddrtree figures-landmark

# Criterion benchmarks (eigendecomposition, 1-NN LOOCV, k-means).
bench:
    cargo bench -p structdr-linalg -p structdr-eval -p structdr-methods -- --quick

# Regenerate docs/methods.md from the method registry.
docs: build
    {{bin}} methods --markdown > docs/methods.md

# Remove generated results (keeps the data cache).
clean-results:
    rm -rf results/demo results/*/cache
