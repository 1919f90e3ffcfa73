"""The structdr external-method protocol, for Python baselines (see baselines/README.md).

structdr runs `python3 <script> <workdir>`; <workdir>/params.json names the input and holds the
cell's parameters and seed. A script reads them with `cell()` and writes its answer with
`write_embedding()` (or `write_weights()` for feature selection, `write_edges()` for a graph).
"""
import json
import os
import sys

import numpy as np


def cell():
    """(X, params, seed, spec): the data (N x D float64), the cell's parameters, the seed, and the
    whole params.json (n_samples, dim, labels path, ...)."""
    workdir = sys.argv[-1] if len(sys.argv) > 1 else os.environ["STRUCTDR_WORKDIR"]
    with open(os.path.join(workdir, "params.json")) as f:
        spec = json.load(f)
    x = np.load(spec["input"])
    return x, spec["params"], int(spec["seed"]), spec


def _save(spec, name, a):
    np.save(os.path.join(spec["workdir"], name), np.ascontiguousarray(a, dtype=np.float64))


def write_embedding(spec, y):
    """Writes the N x d embedding."""
    y = np.asarray(y, dtype=np.float64)
    if y.ndim == 1:
        y = y[:, None]
    _save(spec, "embedding.npy", y)


def write_weights(spec, w):
    """Writes one weight per feature (higher = more relevant)."""
    _save(spec, "weights.npy", np.asarray(w, dtype=np.float64).ravel())


def write_edges(spec, edges):
    """Writes a graph on the samples: rows (i, j, weight), 0-based."""
    _save(spec, "edges.npy", np.asarray(edges, dtype=np.float64).reshape(-1, 3))


def seed32(seed):
    """The structdr seed folded into numpy's / scikit-learn's 32-bit range."""
    return int(seed) % (2**32)
