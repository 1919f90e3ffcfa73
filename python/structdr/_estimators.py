"""scikit-learn estimators generated from the Rust registry (``structdr methods``).

One class per registered method, built when the package is imported from the schema that
``structdr._core.registry_json()`` returns: the same names, defaults, admissible values and
docs as the command line, so a method added in Rust appears here with no Python edit.

Conventions (``docs/python.md``):

* parameters keep their registry names, except a Python keyword, which takes a trailing
  underscore (``lambda`` -> ``lambda_``), and the evaluation-stage ``n_selected`` of the
  feature-scoring methods, which is scikit-learn's ``n_features_to_select``;
* ``fit`` copies X (float64, C order) into memory Rust owns and releases the GIL while fitting;
* fitted attributes end in ``_``; ``transform`` exists only where the method has an out-of-sample
  map (``inductive``), otherwise ``fit_transform`` returns the embedding of the fitted samples.
"""

from __future__ import annotations

import inspect
import json
import keyword
from typing import Any, Dict, List, Optional

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _core

#: The registry as the Rust side declares it (a list of method schemas).
REGISTRY: List[Dict[str, Any]] = json.loads(_core.registry_json())

_EVAL_RENAME = {"n_selected": "n_features_to_select"}


def python_name(name: str) -> str:
    """The Python keyword argument of a registry parameter."""
    if name in _EVAL_RENAME:
        return _EVAL_RENAME[name]
    return name + "_" if keyword.iskeyword(name) else name


def _default(value: Any) -> Any:
    if isinstance(value, dict) and "float" in value:
        return float(value["float"])
    return value


def class_name(method: str) -> str:
    """``rpg-landmark`` -> ``RpgLandmark``, ``ddrtree`` -> ``Ddrtree``."""
    parts = method.replace("_", "-").split("-")
    return "".join(p[:1].upper() + p[1:] for p in parts if p)


def _validate(est, X, reset: bool):
    # float64, C order, 2-D, at least one feature (scikit-learn's messages for a 1-D or 3-D input,
    # for no feature and, after the fit, for another number of features); no sample and NaN / inf
    # are left to the Rust checks, so that the message is the command line's
    # (`pca: invalid input: empty data (0 x 3)`)
    return validate_data(est, X, reset=reset, dtype=np.float64, order="C", ensure_all_finite=False, ensure_min_samples=0)


def _rust_float(v: float) -> str:
    # Rust's Display of a non-finite f64, as in the command line's messages
    return "NaN" if np.isnan(v) else ("inf" if v > 0 else "-inf")


def int_labels(y, n: Optional[int] = None) -> np.ndarray:
    """Labels as the int64 vector the Rust side takes (any other label type numbered in sorted
    order); with ``n``, checked to be one per sample."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"labels must be one-dimensional, got {y.ndim} dimension(s)")
    if n is not None and y.shape[0] != n:
        raise ValueError(f"length mismatch: {y.shape[0]} labels for {n} samples")
    if y.dtype.kind not in "iub":
        _, y = np.unique(y, return_inverse=True)
    return np.ascontiguousarray(y, dtype=np.int64)


class _StructdrBase(BaseEstimator):
    """Common fit machinery; subclasses are generated per method."""

    _schema: Dict[str, Any] = {}

    def _rust_params(self) -> Dict[str, Any]:
        out = {}
        for p in self._schema["params"]:
            if p["stage"] != "fit":
                continue
            out[p["name"]] = getattr(self, python_name(p["name"]))
        return out

    def _fit(self, X, y=None):
        X = _validate(self, X, reset=True)
        labels = int_labels(y, X.shape[0]) if y is not None else None
        seed = getattr(self, "random_state", None)
        seed = 0 if seed is None else int(seed)
        fit = _core.fit(self._schema["name"], self._rust_params(), X, labels, seed)
        self._set_fitted(fit)
        return fit

    def _set_fitted(self, fit) -> None:
        self.n_iter_ = fit.n_iter
        self.stop_reason_ = fit.stop_reason
        self.converged_ = fit.converged
        self.objective_history_ = np.asarray(fit.history, dtype=np.float64)
        self.kkt_residual_ = fit.kkt_residual
        self.notes_ = list(fit.notes)
        self.params_ = json.loads(fit.params_json)
        graph = fit.graph
        if graph is not None:
            self.graph_ = graph
        comps = fit.components
        if comps is not None:
            self.components_ = comps
        if fit.kind == "feature_scores":
            self.scores_ = fit.scores
            self.ranking_ = fit.ranking
            return
        self.embedding_ = fit.embedding
        self._model_json = fit.model_json()
        if fit.kind == "principal_graph":
            self.projection_ = fit.embedding
            self.centres_ = fit.centres
            edges = fit.centre_edges
            self.edges_ = edges if edges is not None else np.zeros((0, 3))

    def fit(self, X, y=None):
        """Fit on X (samples in rows); ``y`` is passed to the method only when given (the
        methods that need labels refuse without)."""
        self._fit(X, y)
        return self

    def __sklearn_is_fitted__(self) -> bool:
        # parameters such as `lambda_` end in an underscore too: fitted means a fit ran
        return hasattr(self, "n_iter_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.non_deterministic = False
        return tags


class _EmbeddingBase(TransformerMixin, _StructdrBase):
    """An embedding method: ``fit``, ``fit_transform``; ``transform`` where the method has one."""

    def fit_transform(self, X, y=None, **fit_params):
        """The embedding of the fitted samples."""
        return self.fit(X, y).embedding_

    def _transform(self, X):
        check_is_fitted(self, "embedding_")
        X = _validate(self, X, reset=False)
        if self._model_json is None:
            raise ValueError(f"{self._schema['name']}: this fit has no out-of-sample map")
        return _core.transform(self._model_json, X)


class _GraphBase(_EmbeddingBase):
    """A principal graph: ``centres_``, ``edges_`` (between centres) and ``projection_``; with a
    latent dimension (DRTree, DDRTree) no map for new samples."""


class _InputSpaceGraphBase(_GraphBase):
    """A principal graph whose centres live in the input space (the RPG family, SCMS, the
    polygonal line): ``transform`` maps new points to the graph."""

    def transform(self, X):
        """New points mapped onto the graph as the registry says (``graph_map``): the RPG family's
        soft assignment at the fit's sigma (``P C``; the fitted points map to ``embedding_`` bit for
        bit), else the nearest point of the graph over its edges (segments between centres) and
        vertices (the polygonal line's own projection; for SCMS, whose ``embedding_`` holds the
        ridge points, the nearest point of the graph joining them)."""
        check_is_fitted(self, "centres_")
        X = _validate(self, X, reset=False)
        bad = np.argwhere(~np.isfinite(X))
        if bad.size:
            i, j = bad[0]
            raise ValueError(f"{self._schema['name']}: invalid input: non-finite value {_rust_float(X[i, j])} at sample {i}, feature {j}")
        if self._schema["graph_map"] == "soft_assignment":
            return _core.soft_project(X, np.ascontiguousarray(self.centres_), float(self.params_["sigma"]))
        return project_onto_graph(X, self.centres_, self.edges_)


def project_onto_graph(X: np.ndarray, centres: np.ndarray, edges: np.ndarray, chunk: int = 256) -> np.ndarray:
    """The nearest point of the graph (vertices ``centres``, segments ``edges[:, :2]``) to every
    row of X: for a segment (a, b), ``a + t (b - a)`` with ``t = clip((x - a).(b - a) / |b - a|^2, 0, 1)``;
    ties go to the first vertex, then the first edge, in order."""
    c = np.asarray(centres, dtype=np.float64)
    e = np.asarray(edges)[:, :2].astype(np.int64) if len(edges) else np.zeros((0, 2), dtype=np.int64)
    a, b = c[e[:, 0]], c[e[:, 1]]
    ab = b - a
    ab2 = (ab * ab).sum(axis=1)
    out = np.empty_like(X)
    for s in range(0, X.shape[0], chunk):
        x = X[s : s + chunk]
        dv = ((x[:, None, :] - c[None, :, :]) ** 2).sum(axis=2)
        best = c[np.argmin(dv, axis=1)]
        bestd = dv.min(axis=1)
        if len(e):
            t = np.einsum("nkd,kd->nk", x[:, None, :] - a[None, :, :], ab) / np.where(ab2 > 0, ab2, 1.0)
            t = np.clip(t, 0.0, 1.0)
            p = a[None, :, :] + t[:, :, None] * ab[None, :, :]
            de = ((x[:, None, :] - p) ** 2).sum(axis=2)
            k = np.argmin(de, axis=1)
            closer = de[np.arange(len(x)), k] < bestd
            best[closer] = p[np.arange(len(x)), k][closer]
        out[s : s + chunk] = best
    return out


class _SelectorBase(SelectorMixin, _StructdrBase):
    """A feature-scoring method: ``scores_``, ``ranking_``, ``get_support``, ``transform``."""

    def _get_support_mask(self):
        check_is_fitted(self, "scores_")
        n = self.n_features_to_select
        mask = np.zeros(self.scores_.shape[0], dtype=bool)
        if n is None or n == 0:
            mask[self.scores_ != 0] = True
        else:
            mask[self.ranking_[: int(n)]] = True
        return mask


def _signature(params: List[Dict[str, Any]], extra: List[inspect.Parameter]) -> inspect.Signature:
    args = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for p in params:
        args.append(inspect.Parameter(python_name(p["name"]), inspect.Parameter.KEYWORD_ONLY, default=_default(p["default"])))
    args.extend(extra)
    return inspect.Signature(args)


def _make_init(names: List[str], signature: inspect.Signature):
    defaults = {n: signature.parameters[n].default for n in names}

    def __init__(self, **kwargs):
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown parameter(s) {', '.join(unknown)}; known: {', '.join(names)}")
        for n in names:
            setattr(self, n, kwargs.get(n, defaults[n]))

    __init__.__signature__ = signature  # read by inspect, hence by get_params / clone
    return __init__


def _doc(schema: Dict[str, Any]) -> str:
    lines = [schema["summary"], "", f"Reference: {schema['reference']}", "", "Parameters", "----------"]
    for p in schema["params"]:
        lines.append(f"{python_name(p['name'])} : {p['kind']}, default={_default(p['default'])!r}")
        lines.append(f"    {p['doc']}")
    if schema["randomised"]:
        lines.append("random_state : int or None, default=None")
        lines.append("    Seed of the fit (None: 0, as `structdr embed`).")
    return "\n".join(lines)


def build_estimator(schema: Dict[str, Any]) -> type:
    """The estimator class of one registry entry."""
    base = {"embedding": _EmbeddingBase, "feature_scores": _SelectorBase, "principal_graph": _GraphBase}[schema["output"]]
    if base is _GraphBase and schema["graph_map"] is not None:
        # the centres live in the input space: new points map onto the graph
        base = _InputSpaceGraphBase
    extra = []
    names = [python_name(p["name"]) for p in schema["params"]]
    if schema["randomised"]:
        extra.append(inspect.Parameter("random_state", inspect.Parameter.KEYWORD_ONLY, default=None))
        names.append("random_state")
    sig = _signature(schema["params"], extra)
    ns: Dict[str, Any] = {"_schema": schema, "__init__": _make_init(names, sig), "__doc__": _doc(schema), "__module__": "structdr"}
    if base is _EmbeddingBase and schema["inductive"]:
        ns["transform"] = lambda self, X: self._transform(X)
        ns["transform"].__doc__ = "Apply the fitted out-of-sample map to new samples."
    return type(class_name(schema["name"]), (base,), ns)


ESTIMATORS: Dict[str, type] = {m["name"]: build_estimator(m) for m in REGISTRY}


def estimator(method: str, **params) -> BaseEstimator:
    """An estimator by registry name: ``estimator("ddrtree", dim=2)``."""
    try:
        cls = ESTIMATORS[method]
    except KeyError:
        raise ValueError(f"unknown method '{method}'; known: {', '.join(ESTIMATORS)}") from None
    return cls(**params)
