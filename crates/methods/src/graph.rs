//! K-NN graphs, connected components (being written)
