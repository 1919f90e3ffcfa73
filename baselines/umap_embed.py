"""UMAP (umap-learn), seeded by structdr.

Parameters (grid): dim (2), n_neighbors (15), min_dist (0.1).
Needs: pip install umap-learn  (exits with a clear message when it is missing)
"""
import sys

try:
    import umap
except ImportError:
    sys.exit("umap-learn is not installed: pip install umap-learn")

from structdr_io import cell, seed32, write_embedding

x, params, seed, spec = cell()
reducer = umap.UMAP(
    n_components=int(params.get("dim", 2)),
    n_neighbors=int(params.get("n_neighbors", 15)),
    min_dist=float(params.get("min_dist", 0.1)),
    random_state=seed32(seed),
)
write_embedding(spec, reducer.fit_transform(x))
