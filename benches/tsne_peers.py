"""t-SNE speed against scikit-learn's Barnes-Hut, measured in one run on one core (RAYON_NUM_THREADS,
OPENBLAS_NUM_THREADS and OMP_NUM_THREADS = 1): N = 2000 and 8000 points in 50-D (10 Gaussian
clusters), 1000 iterations, perplexity 30, theta = 0.5, PCA initialisation. `just bench-tsne`.

Usage: python3 benches/tsne_peers.py target/release/structdr
"""
import os
import subprocess
import sys
import time

import numpy as np
from sklearn.manifold import TSNE
import sklearn
rng = np.random.default_rng(0)
binary = sys.argv[1]
for n in (2000, 8000):
    centres = rng.normal(scale=3.0, size=(10, 50))
    x = centres[rng.integers(0, 10, n)] + rng.normal(size=(n, 50))
    np.save(f"/tmp/structdr-tsne-bench-x{n}.npy", x)
    env = dict(os.environ, RAYON_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    t0 = time.perf_counter()
    out = subprocess.run([binary, "embed", "--method", "tsne", "--param", "gradient=barnes-hut", "--input", f"/tmp/structdr-tsne-bench-x{n}.npy", "--out", f"/tmp/structdr-tsne-bench-y{n}.npy"], env=env, capture_output=True, text=True)
    ours = time.perf_counter() - t0
    assert out.returncode == 0, out.stderr
    ours_kl = out.stderr.split("final KL(P || Q) = ")[1].split()[0] if "final KL" in out.stderr else "?"
    t0 = time.perf_counter()
    t = TSNE(n_components=2, perplexity=30.0, max_iter=1000, init="pca", learning_rate="auto", method="barnes_hut", angle=0.5, random_state=0)
    ys = t.fit_transform(x)
    theirs = time.perf_counter() - t0
    print(f"N={n}: structdr {ours:.2f} s, scikit-learn {sklearn.__version__} {theirs:.2f} s, ratio {theirs/ours:.2f}x; KL structdr {ours_kl}, scikit-learn {t.kl_divergence_:.4f}", flush=True)
