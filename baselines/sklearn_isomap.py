"""scikit-learn's Isomap (sklearn.manifold.Isomap).

Parameters (grid): dim, n_neighbors (5).
Needs: pip install scikit-learn
"""
from sklearn.manifold import Isomap

from structdr_io import cell, write_embedding

x, params, seed, spec = cell()
iso = Isomap(n_components=int(params["dim"]), n_neighbors=int(params.get("n_neighbors", 5)))
y = iso.fit_transform(x)
print(f"Isomap: reconstruction error {iso.reconstruction_error():.4g}")
write_embedding(spec, y)
