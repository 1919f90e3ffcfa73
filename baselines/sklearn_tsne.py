"""scikit-learn's t-SNE (sklearn.manifold.TSNE), seeded by structdr.

Parameters (grid): dim (default 2), perplexity (30), learning_rate ("auto"), max_iter (1000),
init ("pca").
Needs: pip install scikit-learn
"""
from sklearn.manifold import TSNE

from structdr_io import cell, seed32, write_embedding

x, params, seed, spec = cell()
tsne = TSNE(
    n_components=int(params.get("dim", 2)),
    perplexity=float(params.get("perplexity", 30.0)),
    learning_rate=params.get("learning_rate", "auto"),
    max_iter=int(params.get("max_iter", 1000)),
    init=params.get("init", "pca"),
    random_state=seed32(seed),
)
y = tsne.fit_transform(x)
print(f"t-SNE: KL divergence {tsne.kl_divergence_:.4f} after {tsne.n_iter_} iterations")
write_embedding(spec, y)
