"""structdr from Python: every registered method as a scikit-learn estimator, the papers'
metrics, the spec harness and the verified data sets. See ``docs/python.md``.

>>> import structdr
>>> est = structdr.Ddrtree(dim=2)          # one class per `structdr methods` entry
>>> Y = est.fit_transform(X)                # doctest: +SKIP
"""

from __future__ import annotations

import json as _json
import os as _os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as _np


def _select_openblas_kernels() -> None:
    # As the command line does (docs/blas.md B2): on a CPU with AVX-512, OpenBLAS's SKYLAKEX
    # kernels (Debian's OpenBLAS picks AVX2 ones on Zen 5: 1.65x slower dense algebra, and other
    # rounding, so fits would not equal `structdr embed` bit for bit). OpenBLAS reads the variable
    # when it loads, which importing the extension does; an explicit value, or STRUCTDR_NO_REEXEC,
    # is respected.
    if "OPENBLAS_CORETYPE" in _os.environ or "STRUCTDR_NO_REEXEC" in _os.environ:
        return
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        return
    if "avx512f" in flags.split():
        _os.environ["OPENBLAS_CORETYPE"] = "SKYLAKEX"


_select_openblas_kernels()

from . import _core  # noqa: E402  (after the kernel selection)
from ._estimators import ESTIMATORS, REGISTRY, build_estimator, class_name, estimator, int_labels, python_name  # noqa: E402

__version__ = _core.version()


def set_blas_threads(n: int) -> None:
    """Sets the OpenBLAS threads of structdr's fits from the next fit on (1 to 1024; default 1).

    One thread is the layout of ``structdr run`` and of ``structdr embed`` / ``select`` without
    ``--blas-threads``: a seed gives the command line's fit bit for bit, whatever
    ``OPENBLAS_NUM_THREADS`` says, and no BLAS thread spins beside the fit's own threads. More
    threads speed up the dense algebra of one large fit (ESL, MPME, GPLVM at N in the thousands) on
    an idle machine and change the last bits, which a non-convex fit can carry to another optimum;
    ``embed --blas-threads n`` is the same fit. The count is held only while a fit runs (Python
    threads that fit at once share it); between fits the library keeps the process's own setting,
    which NumPy also uses where it links the same OpenBLAS.
    """
    if isinstance(n, bool) or not isinstance(n, (int, _np.integer)) or not 1 <= n <= 1024:
        raise ValueError(f"set_blas_threads: n must be an integer from 1 to 1024 (as embed's --blas-threads), got {n!r}")
    _core.set_blas_threads(int(n))


def blas_threads() -> int:
    """The OpenBLAS threads of structdr's fits (1 unless :func:`set_blas_threads` changed it)."""
    return _core.blas_threads()


for _name, _cls in ESTIMATORS.items():
    globals()[_cls.__name__] = _cls

__all__ = [c.__name__ for c in ESTIMATORS.values()] + [
    "ESTIMATORS",
    "REGISTRY",
    "estimator",
    "class_name",
    "python_name",
    "loocv_1nn_accuracy",
    "kmeans_acc_nmi",
    "trustworthiness",
    "continuity",
    "load_dataset",
    "run",
    "set_blas_threads",
    "blas_threads",
]


def _matrix(a) -> _np.ndarray:
    a = _np.asarray(a, dtype=_np.float64)
    if a.ndim != 2:
        raise ValueError(f"expected a 2-D array (samples in rows), got {a.ndim} dimension(s)")
    return _np.ascontiguousarray(a)


def loocv_1nn_accuracy(Y, labels) -> float:
    """Exact 1-NN leave-one-out accuracy of the embedding ``Y`` (the tables' Table 1 metric)."""
    return _core.loocv_1nn_accuracy(_matrix(Y), int_labels(labels))


def kmeans_acc_nmi(Y, labels, k: Optional[int] = None, restarts: int = 20, seed: int = 0) -> Dict[str, float]:
    """The papers' k-means protocol: ``restarts`` seeded runs with ``k`` clusters (default: the
    number of classes); ACC and NMI of the run of best objective, and means / standard deviations
    over the runs."""
    y = int_labels(labels)
    if k is None:
        k = int(_np.unique(y).size)
    return _json.loads(_core.kmeans_acc_nmi(_matrix(Y), y, int(k), int(restarts), int(seed)))


def trustworthiness(X, Y, k: int = 12) -> float:
    """Trustworthiness of the embedding ``Y`` of ``X`` with ``k`` neighbours (Venna & Kaski)."""
    return _core.neighbourhood(_matrix(X), _matrix(Y), int(k))[0]


def continuity(X, Y, k: int = 12) -> float:
    """Continuity of the embedding ``Y`` of ``X`` with ``k`` neighbours (Venna & Kaski)."""
    return _core.neighbourhood(_matrix(X), _matrix(Y), int(k))[1]


def load_dataset(name: str, mirror: Optional[str] = None, data_dir: Optional[str] = None) -> Tuple[_np.ndarray, Optional[_np.ndarray]]:
    """A registry data set ``(X, y)`` through the same verified download, cache (``data/``,
    ``STRUCTDR_DATA``) and mirror (``STRUCTDR_MIRROR``) as the command line."""
    return _core.load_dataset(name, mirror, data_dir)


def run(
    spec: str,
    results: str = "results",
    force: bool = False,
    quiet: bool = True,
    datasets: Sequence[str] = (),
    methods: Sequence[str] = (),
    force_before: Optional[int] = None,
):
    """Run a TOML spec as ``structdr run`` does (same store, cache, records and figures) and
    return its records: a pandas DataFrame when pandas is installed, else a list of dicts.
    ``force_before`` (seconds since the Unix epoch) is ``--force-before``: records written before
    it are recomputed, newer ones used (specs sharing a store, forced in one sitting)."""
    fb = None if force_before is None else int(force_before)
    records: List[Dict[str, Any]] = _json.loads(_core.run(str(spec), str(results), bool(force), bool(quiet), list(datasets), list(methods), fb))
    try:
        import pandas as pd
    except ImportError:
        return records
    return pd.json_normalize(records)
