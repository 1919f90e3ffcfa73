"""t-SNE on 70,000 points against openTSNE's FFT mode, measured in one run on one core
(RAYON_NUM_THREADS, OPENBLAS_NUM_THREADS and OMP_NUM_THREADS = 1, openTSNE n_jobs = 1).

Data: Fashion-MNIST train + test (70,000 x 784, pixels / 255), centred and reduced to its top 50
principal components (the same float64 matrix for both). Both run 1000 iterations: 250 with early
exaggeration 12, then 750 (openTSNE n_iter = 750), perplexity 30, PCA initialisation, FFT
interpolation with 3 nodes per box. Everything else is each program's own default: openTSNE's
learning rate N / exaggeration, momentum 0.8 throughout and approximate neighbours (Annoy);
structdr's learning rate max(N / 12, 50), momentum 0.5 then 0.8, exact neighbours. The times
include the neighbour search, the affinities, the PCA start and the optimisation (not loading).
Quality: the final KL(P || Q) each reports and the 1-NN leave-one-out accuracy of the 2-D
embedding against the ten classes.

`just bench-tsne-fft` (needs openTSNE: `pip install openTSNE`; the data come from
STRUCTDR_MIRROR or data/).

Usage: python3 benches/tsne_fft_peers.py target/release/structdr
"""
import gzip
import os
import subprocess
import sys
import time

import numpy as np
import openTSNE
from sklearn.neighbors import NearestNeighbors

binary = sys.argv[1]
root = os.environ.get("STRUCTDR_MIRROR", "data")
folder = os.path.join(root, "fashion-mnist")


def images(name):
    raw = gzip.open(os.path.join(folder, name)).read()
    return np.frombuffer(raw, np.uint8, offset=16).reshape(-1, 784).astype(np.float64) / 255.0


def labels(name):
    raw = gzip.open(os.path.join(folder, name)).read()
    return np.frombuffer(raw, np.uint8, offset=8).astype(np.int64)


x = np.vstack([images("train-images-idx3-ubyte.gz"), images("t10k-images-idx3-ubyte.gz")])
y = np.concatenate([labels("train-labels-idx1-ubyte.gz"), labels("t10k-labels-idx1-ubyte.gz")])
x -= x.mean(axis=0)
u, s, _ = np.linalg.svd(x, full_matrices=False)
x50 = np.ascontiguousarray(u[:, :50] * s[:50])
path = "/tmp/structdr-tsne-fft-x.npy"
np.save(path, x50)


def one_nn_accuracy(emb):
    _, idx = NearestNeighbors(n_neighbors=2).fit(emb).kneighbors(emb)
    return float(np.mean(y[idx[:, 1]] == y))


env = dict(os.environ, RAYON_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
t0 = time.perf_counter()
out = subprocess.run(
    [binary, "embed", "--method", "tsne", "--param", "gradient=fft", "--input", path, "--out", "/tmp/structdr-tsne-fft-y.npy"],
    env=env,
    capture_output=True,
    text=True,
)
ours = time.perf_counter() - t0
assert out.returncode == 0, out.stderr
ours_kl = float(out.stderr.split("final KL(P || Q) = ")[1].split()[0])
ours_acc = one_nn_accuracy(np.load("/tmp/structdr-tsne-fft-y.npy"))
print(f"structdr: {ours:.1f} s, KL {ours_kl:.4f}, 1-NN accuracy {ours_acc:.4f}", flush=True)

t0 = time.perf_counter()
emb = openTSNE.TSNE(
    n_components=2,
    perplexity=30,
    initialization="pca",
    early_exaggeration=12,
    early_exaggeration_iter=250,
    n_iter=750,
    negative_gradient_method="fft",
    n_jobs=1,
    random_state=0,
).fit(x50)
theirs = time.perf_counter() - t0
theirs_acc = one_nn_accuracy(np.asarray(emb))
print(f"openTSNE {openTSNE.__version__}: {theirs:.1f} s, KL {emb.kl_divergence:.4f}, 1-NN accuracy {theirs_acc:.4f}", flush=True)
print(f"N=70000: structdr {ours:.1f} s, openTSNE {theirs:.1f} s, ratio {theirs / ours:.2f}x")
