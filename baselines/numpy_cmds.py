"""Classical (Torgerson) MDS with numpy only: Y = V_d sqrt(L_d) of the double-centred squared
distances B = -1/2 J D J. Equals PCA up to column signs; a dependency-free example of the
protocol (the test suite runs it).

Parameters: dim (from the grid or the energy rule).
"""
import numpy as np

from structdr_io import cell, write_embedding

x, params, seed, spec = cell()
d = int(params["dim"])
xc = x - x.mean(axis=0)
sq = (xc * xc).sum(axis=1)
b = -0.5 * (sq[:, None] + sq[None, :] - 2.0 * xc @ xc.T)
n = b.shape[0]
j = np.eye(n) - 1.0 / n
b = j @ b @ j
vals, vecs = np.linalg.eigh(b)
order = np.argsort(vals)[::-1][:d]
y = vecs[:, order] * np.sqrt(np.maximum(vals[order], 0.0))
print(f"cmds: {n} samples -> {d} dimensions, top eigenvalue {vals[order[0]]:.4g}")
write_embedding(spec, y)
