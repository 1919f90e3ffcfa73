"""The Python package against scikit-learn's conventions, the command line and references.

Run from the repository root after `pip install ./python` (`.ci/run` does): `python -m pytest python/tests`.
Tests that compare with the command line need the `structdr` binary (`target/release/structdr`,
built by `just test`, or `STRUCTDR_BIN`); they skip without it.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import structdr

ROOT = Path(__file__).resolve().parents[2]


def _bin():
    env = os.environ.get("STRUCTDR_BIN")
    if env and Path(env).is_file():
        return env
    for p in (ROOT / "target" / "release" / "structdr", ROOT / "target" / "debug" / "structdr"):
        if p.is_file():
            return str(p)
    return shutil.which("structdr")


BIN = _bin()
needs_cli = pytest.mark.skipif(BIN is None, reason="the structdr binary is not built (target/release/structdr)")


def blobs(n=120, d=6, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=4.0, size=(3, d))
    y = np.arange(n) % 3
    return centres[y] + rng.normal(size=(n, d)), y


# --- scikit-learn's estimator checks -------------------------------------------------------------

# Every method whose fit takes at most seconds on the checks' small data sets (a few need a
# parameter that fits 10-30 samples: a neighbourhood or perplexity below N, a target dimension
# below D). Left out for their run time, covered by the Rust suite and the fit and bit-identity
# tests below: the exact MVU SDPs, MEU, SMCE, GPLVM, MPME (about a minute) and LLCFS (24 s).
CHECKED = [
    ("identity", {}), ("pca", {}), ("rproj", {}), ("kpca", {}), ("le", {"k": 5}), ("lle", {"k": 5}),
    ("spl", {"k": 5}), ("drtree", {}), ("ddrtree", {}), ("fsl", {}), ("ls", {}), ("spec", {}),
    ("mcfs", {}), ("ndfs", {}), ("rufs", {}), ("spfs", {}), ("fsasl", {}), ("sogfs", {"dim": 2}),
    ("esl", {"perplexity": 5}), ("rpg-tree", {}), ("rpg-l1", {}), ("rpg-landmark", {}),
    ("polyline", {}), ("scms", {}), ("tsne", {"perplexity": 5}),
]

# Checks a method cannot meet by its nature, with the reason (parametrize_with_checks'
# `expected_failed_checks`: such a check must fail, so a change that makes it pass is noticed).
_ONE_FEATURE = (
    "a target dimension of 2 (or SCMS's ridge of dimension 1 in 1 dimension) on one input feature: "
    "the method refuses with its own message (e.g. `dim = 2 exceeds the number of features D = 1`), "
    "not one of scikit-learn's phrasings ('1 feature(s)', 'n_features = 1')"
)
EXPECTED_FAILED = {name: {"check_fit2d_1feature": _ONE_FEATURE} for name in ("pca", "spl", "drtree", "ddrtree", "sogfs", "scms")}


def expected_failed_checks(est):
    return EXPECTED_FAILED.get(est._schema["name"], {})


@parametrize_with_checks([structdr.estimator(n, **p) for n, p in CHECKED], expected_failed_checks=expected_failed_checks)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_stubs_are_generated_from_the_registry():
    from structdr._stubs import render

    assert (ROOT / "python" / "structdr" / "__init__.pyi").read_text() == render(), "regenerate: python -m structdr._stubs > python/structdr/__init__.pyi"


# --- generated from the registry ---------------------------------------------------------------


@needs_cli
def test_every_registered_method_is_an_estimator_with_the_cli_schema():
    out = subprocess.run([BIN, "methods", "--markdown"], capture_output=True, text=True, check=True).stdout
    for m in structdr.REGISTRY:
        assert f"`{m['name']}`" in out
        cls = structdr.ESTIMATORS[m["name"]]
        params = cls().get_params()
        for p in m["params"]:
            assert structdr.python_name(p["name"]) in params
            assert p["doc"] in cls.__doc__


def test_registry_matches_the_pinned_rust_schema():
    # crates/methods/tests/fixtures/schema.txt pins every method's name, version and parameters
    pinned = (ROOT / "crates" / "methods" / "tests" / "fixtures" / "schema.txt").read_text()
    heads = [line for line in pinned.splitlines() if line.startswith("== ")]
    assert heads == [f"== {m['name']} (version {m['version']})" for m in structdr.REGISTRY]
    params, current = {}, None
    for line in pinned.splitlines():
        if line.startswith("== "):
            current = line[3:].split(" (version")[0]
            params[current] = []
        elif line.startswith("- "):
            params[current].append(line[2:])
    for m in structdr.REGISTRY:
        assert params[m["name"]] == [p["name"] for p in m["params"]], m["name"]


def test_keyword_parameters_take_a_trailing_underscore():
    est = structdr.Fsl(lambda_=3.0)
    assert est.get_params()["lambda_"] == 3.0
    with pytest.raises(TypeError, match="unknown parameter"):
        structdr.Fsl(lam=3.0)


# --- fitting ---------------------------------------------------------------------------------------


def test_pipeline_and_grid_search():
    X, y = blobs()
    pipe = Pipeline([("scale", StandardScaler()), ("embed", structdr.Kpca(dim=2)), ("knn", KNeighborsClassifier(1))])
    grid = GridSearchCV(pipe, {"embed__dim": [1, 2, 3]}, cv=3).fit(X, y)
    assert grid.best_params_["embed__dim"] in (1, 2, 3)
    assert grid.best_score_ > 0.9


def test_clone_and_set_params():
    est = structdr.Ddrtree(dim=2, sigma=0.01)
    twin = clone(est).set_params(sigma=0.02)
    assert est.sigma == 0.01 and twin.sigma == 0.02 and twin.dim == 2


@pytest.mark.parametrize("name", ["pca", "kpca", "ddrtree", "fsl"])
def test_pickle_round_trip(name):
    X, y = blobs()
    est = structdr.estimator(name).fit(X, y)
    back = pickle.loads(pickle.dumps(est))
    if hasattr(est, "transform") and name in ("pca", "kpca"):
        # the Rust out-of-sample map travels as model JSON and is rebuilt bit for bit
        assert np.array_equal(back.transform(X[:7]), est.transform(X[:7]))
    for attr in ("embedding_", "scores_", "centres_"):
        if hasattr(est, attr):
            assert np.array_equal(getattr(back, attr), getattr(est, attr))


@pytest.mark.parametrize("name", ["pca", "le", "ddrtree"])
def test_float32_integer_and_fortran_inputs_give_the_float64_fit(name):
    X, _ = blobs()
    Xi = np.round(X * 10).astype(np.int64)
    ref = structdr.estimator(name).fit_transform(Xi.astype(np.float64))
    for variant in (Xi, np.asfortranarray(Xi), Xi.astype(np.float32)):
        assert np.array_equal(structdr.estimator(name).fit_transform(variant), ref)


@needs_cli
@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "empty"])
def test_bad_input_raises_the_cli_message(tmp_path, bad):
    X = np.random.default_rng(1).normal(size=(20, 3))
    if bad == "empty":
        X = X[:0]
    else:
        X[2, 1] = float(bad)
    np.save(tmp_path / "x.npy", X)
    cli = subprocess.run([BIN, "embed", "--method", "pca", "--input", str(tmp_path / "x.npy"), "--out", str(tmp_path / "o.npy")], capture_output=True, text=True)
    assert cli.returncode != 0
    message = cli.stderr.strip().splitlines()[-1].removeprefix("error: ")
    with pytest.raises(ValueError) as e:
        structdr.Pca().fit(X)
    assert str(e.value) == message


def test_wrong_shapes_raise_value_error():
    # scikit-learn's messages: the command line reads a 1-D file as one column instead
    with pytest.raises(ValueError, match="0 feature"):
        structdr.Pca().fit(np.zeros((5, 0)))
    with pytest.raises(ValueError, match="Expected 2D array"):
        structdr.Pca().fit(np.zeros(5))
    est = structdr.Pca(dim=2).fit(blobs()[0])
    with pytest.raises(ValueError, match="X has 2 features"):
        est.transform(np.zeros((4, 2)))


@needs_cli
@pytest.mark.parametrize(
    "name, params",
    [
        ("pca", {"dim": 3}), ("ddrtree", {"dim": 2}), ("le", {"dim": 2, "k": 8}), ("lle", {"dim": 2, "k": 8}),
        ("rpg-landmark", {"ncenter": 20}), ("tsne", {"dim": 2, "max_iter": 300}), ("mpme", {"dim": 2, "lambda": 0.1, "max_iter": 30}), ("fsl", {}),
    ],
)
def test_a_seed_gives_the_cli_fit_bit_for_bit(tmp_path, name, params):
    # eigensolvers (PCA, LE, LLE, DDRTree) and non-convex fits (t-SNE, MPME) included: they equal
    # the binary's only because the module exports L-BFGS-B's reference BLAS routines as the
    # binary does (docs/blas.md B6)
    X, y = blobs(90, 5, seed=3)
    np.save(tmp_path / "x.npy", X)
    seed = 7
    args = [BIN, "select" if name == "fsl" else "embed", "--method", name, "--input", str(tmp_path / "x.npy"), "--out", str(tmp_path / "o.npy"), "--seed", str(seed)]
    for k, v in params.items():
        args += ["--param", f"{k}={v}"]
    subprocess.run(args, capture_output=True, text=True, check=True)
    cli = np.load(tmp_path / "o.npy")
    cls = structdr.ESTIMATORS[name]
    kw = {structdr.python_name(k): v for k, v in params.items()}
    if "random_state" in cls().get_params():
        kw["random_state"] = seed
    est = cls(**kw).fit(X)
    ours = est.scores_ if name == "fsl" else est.embedding_
    assert ours.shape == cli.shape
    assert np.array_equal(ours, cli)


def test_fits_use_one_blas_thread_unless_asked(tmp_path):
    # A fit holds one BLAS thread, whatever OPENBLAS_NUM_THREADS says, as `structdr embed` does
    # (docs/blas.md B4), and leaves the library's own count as it was. A dense ESL fit of 500
    # points, whose Cholesky rounds differently on two threads, run in a fresh interpreter with the
    # variable at 2, equals the CLI's default fit bit for bit; set_blas_threads(2) equals
    # `embed --blas-threads 2` bit for bit.
    rng = np.random.default_rng(12345)
    X = rng.uniform(-0.5, 0.5, size=(500, 8))
    X[:250] += 1.0
    np.save(tmp_path / "x.npy", X)
    params = {"dim": 3, "lambda": 0.1, "perplexity": 20}

    def cli(out, extra=()):
        args = [BIN, "embed", "--method", "esl", "--no-labels", "--input", str(tmp_path / "x.npy"), "--out", str(tmp_path / out), *extra]
        for k, v in params.items():
            args += ["--param", f"{k}={v}"]
        subprocess.run(args, capture_output=True, text=True, check=True, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
        return np.load(tmp_path / out)

    script = (
        "import sys, numpy as np, structdr\n"
        "from structdr import _core\n"
        "assert structdr.blas_threads() == 1, structdr.blas_threads()\n"
        "assert _core.library_blas_threads() == 2, _core.library_blas_threads()\n"
        "X = np.load(sys.argv[1])\n"
        "for threads, out in ((1, sys.argv[2]), (2, sys.argv[3])):\n"
        "    structdr.set_blas_threads(threads)\n"
        "    assert structdr.blas_threads() == threads\n"
        "    np.save(out, structdr.Esl(dim=3, lambda_=0.1, perplexity=20).fit(X).embedding_)\n"
        "    assert _core.library_blas_threads() == 2, 'a fit must leave the library count as it was'\n"
    )
    py = [str(tmp_path / "py1.npy"), str(tmp_path / "py2.npy")]
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "x.npy"), *py], check=True, env={**os.environ, "OPENBLAS_NUM_THREADS": "2"})
    assert np.array_equal(np.load(py[0]), cli("one.npy"))
    assert np.array_equal(np.load(py[1]), cli("two.npy", ["--blas-threads", "2"]))
    for bad in (0, -1, 1025, 1.5, True, "2"):
        with pytest.raises(ValueError, match="set_blas_threads"):
            structdr.set_blas_threads(bad)
    assert structdr.blas_threads() == 1


def test_principal_graph_attributes_and_transform():
    X, _ = blobs(150, 3)
    est = structdr.RpgLandmark(ncenter=15, random_state=0).fit(X)
    assert est.centres_.shape == (15, 3)
    assert est.edges_.shape == (14, 3)  # a spanning tree over the landmarks
    assert est.projection_.shape == X.shape
    # the soft assignment of the fit: the fitted points map to their embedding bit for bit
    assert np.array_equal(est.transform(X), est.embedding_)
    # the polygonal line: the nearest point of the curve
    curve = structdr.Polyline().fit(X)
    t = curve.transform(X[:20])
    d_vertices = ((X[:20, None, :] - curve.centres_[None]) ** 2).sum(axis=2).min(axis=1)
    assert np.all(((X[:20] - t) ** 2).sum(axis=1) <= d_vertices + 1e-12)
    # DRTree / DDRTree learn their centres in a latent space: no map for new points
    assert not hasattr(structdr.Ddrtree(), "transform")


def test_selector_interface():
    X, y = blobs(100, 8)
    sel = structdr.Ls(n_features_to_select=3).fit(X)
    assert sel.get_support().sum() == 3
    assert sel.transform(X).shape == (100, 3)
    assert sorted(sel.ranking_[:3]) == sorted(np.flatnonzero(sel.get_support()))


def test_fits_in_threads_equal_sequential_fits():
    # the GIL is released during fits: two threads fit at once and give the sequential results
    X, _ = blobs(300, 10)
    seq = [structdr.Ddrtree(dim=2).fit_transform(X), structdr.Kpca(dim=3).fit_transform(X)]
    out = [None, None]

    def work(i, est):
        out[i] = est.fit_transform(X)

    threads = [threading.Thread(target=work, args=(0, structdr.Ddrtree(dim=2))), threading.Thread(target=work, args=(1, structdr.Kpca(dim=3)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert np.array_equal(out[0], seq[0]) and np.array_equal(out[1], seq[1])


# --- metrics against references -------------------------------------------------------------------


def test_1nn_loocv_matches_scikit_learn_on_distinct_distances():
    from sklearn.model_selection import LeaveOneOut, cross_val_score

    X, y = blobs(90, 4, seed=5)
    ref = cross_val_score(KNeighborsClassifier(1), X, y, cv=LeaveOneOut()).mean()
    assert structdr.loocv_1nn_accuracy(X, y) == pytest.approx(ref, abs=1e-12)


def test_trustworthiness_matches_scikit_learn():
    from sklearn.manifold import trustworthiness

    X, _ = blobs(80, 6, seed=2)
    Y = structdr.Pca(dim=2).fit_transform(X)
    assert structdr.trustworthiness(X, Y, k=5) == pytest.approx(trustworthiness(X, Y, n_neighbors=5), abs=1e-12)
    assert 0.0 <= structdr.continuity(X, Y, k=5) <= 1.0


def test_kmeans_protocol_keys_and_perfect_clusters():
    X, y = blobs(90, 4)
    r = structdr.kmeans_acc_nmi(X, y, restarts=5)
    assert r["acc_best_sse"] == 1.0 and r["nmi_best_sse"] == pytest.approx(1.0)
    assert {"acc_mean", "acc_std", "nmi_mean", "nmi_std"} <= set(r)


# --- harness and data -----------------------------------------------------------------------------


def test_run_a_spec_returns_its_records(tmp_path):
    pd = pytest.importorskip("pandas")
    spec = tmp_path / "tiny.toml"
    spec.write_text(
        'id = "py_tiny"\ntitle = "tiny"\nseed = 1\n\n[[dataset]]\nname = "two_moons"\nparams = { n = 60 }\n\n'
        '[[method]]\nname = "pca"\ngrid = { dim = [1, 2] }\n\n[evaluation]\nprotocols = ["loocv"]\n'
    )
    df = structdr.run(str(spec), results=str(tmp_path / "results"))
    assert isinstance(df, pd.DataFrame) and len(df) == 2
    assert (tmp_path / "results" / "py_tiny" / "records").is_dir()


def test_run_force_before_recomputes_only_older_records(tmp_path):
    spec = tmp_path / "tiny.toml"
    spec.write_text(
        'id = "py_fb"\ntitle = "tiny"\nseed = 1\n\n[[dataset]]\nname = "two_moons"\nparams = { n = 60 }\n\n'
        '[[method]]\nname = "pca"\ngrid = { dim = [1, 2] }\n\n[evaluation]\nprotocols = ["loocv"]\n'
    )
    results = str(tmp_path / "results")

    def finished(**kw):
        out = structdr.run(str(spec), results=results, **kw)
        rows = out.to_dict("records") if hasattr(out, "to_dict") else out
        return sorted(r["finished_at"] for r in rows)

    first = finished()
    # the sitting begins on the next second: both records are older
    start = int(time.time())
    while int(time.time()) == start:
        time.sleep(0.02)
    t = int(time.time())
    forced = finished(force_before=t)
    assert len(forced) == 2 and all(f >= t for f in forced) and all(f < t for f in first)
    assert finished(force_before=t) == forced  # the same sitting: nothing recomputed
    with pytest.raises(ValueError, match="exclude each other"):
        structdr.run(str(spec), results=results, force=True, force_before=t)


def test_load_dataset_from_the_mirror():
    mirror = os.environ.get("STRUCTDR_MIRROR") or str(ROOT.parent / "shared" / "datasets")
    if not Path(mirror).is_dir():
        pytest.skip("no data set mirror")
    X, y = structdr.load_dataset("iris", mirror=mirror, data_dir=str(ROOT / "data"))
    assert X.shape == (150, 4) and y is not None and len(np.unique(y)) == 3
