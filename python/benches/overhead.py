"""Python-side overhead of a fit: `structdr.Ddrtree(...).fit(X)` timed in Python (validation, the
copy into Rust, the fit, the attributes) against the fit time `structdr embed` reports for the same
data and parameters, alternating, one process per CLI run. Run from the repository root after
`just test` and `pip install ./python`: `python python/benches/overhead.py [runs]`."""

import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import structdr

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "target" / "release" / "structdr"


def data(n=2000, d=50, seed=1):
    # a noisy three-branch tree in d dimensions (as the DDRTree benchmark's)
    rng = np.random.default_rng(seed)
    dirs = rng.uniform(-1, 1, size=(3, d))
    t = (np.arange(n) * 7919 % n) / n * 3.0
    return dirs[np.arange(n) % 3] * t[:, None] + 0.05 * rng.uniform(-1, 1, size=(n, d))


def main(runs: int) -> None:
    X = data()
    params = {"dim": 2, "ncenter": 2000}
    with tempfile.TemporaryDirectory() as tmp:
        np.save(f"{tmp}/x.npy", X)
        cli, py = [], []
        for _ in range(runs):
            out = subprocess.run(
                [str(BIN), "embed", "--method", "ddrtree", "--input", f"{tmp}/x.npy", "--out", f"{tmp}/y.npy", "--seed", "0"]
                + [a for k, v in params.items() for a in ("--param", f"{k}={v}")],
                capture_output=True, text=True, check=True,
            ).stderr
            cli.append(float(re.search(r"fitted in ([0-9.]+) s", out).group(1)))
            t0 = time.perf_counter()
            est = structdr.Ddrtree(**params, random_state=0).fit(X)
            py.append(time.perf_counter() - t0)
        same = np.array_equal(np.load(f"{tmp}/y.npy"), est.embedding_)
    mc, mp = statistics.median(cli), statistics.median(py)
    print(f"DDRTree, N = 2000, D = 50, K = N, {runs} runs each: CLI fit {mc:.4f} s (median; {min(cli):.4f}-{max(cli):.4f}), "
          f"Python fit() {mp:.4f} s ({min(py):.4f}-{max(py):.4f}); Python / CLI = {mp / mc:.4f}; same embedding: {same}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
