"""MVU speed against general-purpose SDP solvers, measured in one run on one core (RAYON_NUM_THREADS,
OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and MKL_NUM_THREADS = 1 for both sides): the three MVU
variants (maximise tr(K) s.t. K PSD, sum(K) = 0 and, on the symmetrised kNN graph,
K_ii + K_jj - 2 K_ij = ||x_i - x_j||^2 (equality, `mvu`), <= (inequality, `mvu-ineq`), or
maximise tr(K) - nu sum (K_ii + K_jj - 2 K_ij - ||x_i - x_j||^2)^2 with nu = 1 (l2, `mvu2`)) on a swiss roll (t = 1.5 pi (1 + 2u), x = (t cos t, 21 v, t sin t), u, v ~ U(0, 1),
numpy default_rng(0) for each N), N = 100, 200, 500, 1000, 2000, k = 6.

Both sides see the same points and the same graph: the points are scaled here so that the mean
squared edge length over the graph is 1 (then saved to /tmp/structdr-mvu-bench-x{N}.npy, which
our binary reads; rescaling leaves them unchanged), and the graph is built here with exact
Euclidean distances, ties broken by index (edge {i, j} if j is among the k nearest of i or i
among the k nearest of j), the rule our binary uses.

  ours:   <binary> embed --method M --param k=6 --param dim=2 --input X.npy --out Y.npy, timed
          wall-clock, killed after --cap-ours seconds (default 900); from its stderr, the line
          with "relative duality gap" and the value after "tr(K) =" when present. Skipped with a
          message when the binary is absent or fails.
  peers:  cvxpy + SCS (cvxpy's default eps = 1e-5, max_iters = 100000) and cvxpy + CLARABEL
          (default settings) at N = 100, and SCS at N = 200, for each variant; each peer solve
          runs in a child process killed after --cap seconds (default 300); failures are
          reported, not raised.
          Printed: wall time (cvxpy compile + solve), status, iterations, tr(K), the max
          constraint residual (max of |distance misfit|, |sum(K)| and max(0, -lambda_min(K))).

Usage: python3 benches/mvu_peers.py [target/release/structdr] [--no-ours] [--no-peers] [--cap S]
       [--cap-ours S] [--variant equality|inequality|l2 (repeatable; default all three)]
       [--sizes 100,200,...]
(needs cvxpy, scs, clarabel: pip install cvxpy scs clarabel)
"""
import os

for _v in ("RAYON_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import json
import subprocess
import sys
import time

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

SIZES = (100, 200, 500, 1000, 2000)
K_NN = 6
NU = 1.0
VARIANTS = {"equality": "mvu", "inequality": "mvu-ineq", "l2": "mvu2"}
PEERS = {100: ("scs", "clarabel"), 200: ("scs",)}


def swiss_roll(n, seed=0):
    rng = np.random.default_rng(seed)
    u = rng.uniform(size=n)
    v = rng.uniform(size=n)
    t = 1.5 * np.pi * (1.0 + 2.0 * u)
    return np.column_stack([t * np.cos(t), 21.0 * v, t * np.sin(t)])


def knn_edges(x, k):
    """Symmetrised kNN graph as an (m, 2) array of i < j, sorted; exact distances, ties by index."""
    edges = set()
    for i in range(len(x)):
        d2 = ((x - x[i]) ** 2).sum(1)
        order = np.argsort(d2, kind="stable")
        for j in order[order != i][:k]:
            edges.add((min(i, int(j)), max(i, int(j))))
    return np.array(sorted(edges))


def scaled_problem(n, k):
    x = swiss_roll(n)
    e = knn_edges(x, k)
    x = x / np.sqrt(((x[e[:, 0]] - x[e[:, 1]]) ** 2).sum(1).mean())
    e2 = knn_edges(x, k)
    assert np.array_equal(e, e2), "scaling changed the kNN graph (a tie)"
    return x, e, ((x[e[:, 0]] - x[e[:, 1]]) ** 2).sum(1)


def peer_solve(solver, variant, n, k):
    """Child process: solve one MVU variant with cvxpy + solver, print one JSON line."""
    import cvxpy as cp
    import scipy.sparse as sp

    x, e, d2 = scaled_problem(n, k)
    m = len(e)
    rows = np.repeat(np.arange(m), 4)
    cols = np.column_stack([e[:, 0] * n + e[:, 0], e[:, 1] * n + e[:, 1], e[:, 0] * n + e[:, 1], e[:, 1] * n + e[:, 0]]).ravel()
    vals = np.tile([1.0, 1.0, -1.0, -1.0], m)
    a = sp.csr_matrix((vals, (rows, cols)), shape=(m, n * n))
    kmat = cp.Variable((n, n), PSD=True)
    lengths = a @ cp.vec(kmat, order="F")
    if variant == "equality":
        prob = cp.Problem(cp.Maximize(cp.trace(kmat)), [cp.sum(kmat) == 0, lengths == d2])
    elif variant == "inequality":
        prob = cp.Problem(cp.Maximize(cp.trace(kmat)), [cp.sum(kmat) == 0, lengths <= d2])
    else:
        prob = cp.Problem(cp.Maximize(cp.trace(kmat) - NU * cp.sum_squares(lengths - d2)), [cp.sum(kmat) == 0])
    if solver == "scs":
        opts = dict(solver=cp.SCS, max_iters=100000)
        version = __import__("scs").__version__
    else:
        opts = dict(solver=cp.CLARABEL)
        version = __import__("clarabel").__version__
    t0 = time.perf_counter()
    try:
        prob.solve(**opts)
    except Exception as err:  # noqa: BLE001 - any failure is a result to report
        print(json.dumps({"error": f"{type(err).__name__}: {err}", "seconds": time.perf_counter() - t0, "version": version}))
        return
    seconds = time.perf_counter() - t0
    out = {"seconds": seconds, "status": prob.status, "iterations": prob.solver_stats.num_iters, "version": version, "cvxpy": cp.__version__}
    if kmat.value is not None:
        kv = 0.5 * (kmat.value + kmat.value.T)
        misfit = a @ kv.reshape(-1, order="F") - d2
        dist = {"equality": np.abs(misfit).max(), "inequality": max(misfit.max(), 0.0), "l2": 0.0}[variant]
        lmin = np.linalg.eigvalsh(kv)[0]
        objective = float(np.trace(kv) - (NU * (misfit**2).sum() if variant == "l2" else 0.0))
        out.update(trace=float(np.trace(kv)), objective=objective, distance_residual=float(dist), sum_residual=float(abs(kv.sum())), min_eigenvalue=float(lmin), max_residual=float(max(dist, abs(kv.sum()), -lmin)))
    print(json.dumps(out))


def run_ours(binary, variant, n, xpath, cap):
    method = VARIANTS[variant]
    if binary is None:
        print(f"N={n} {variant}: structdr skipped (no binary given)", flush=True)
        return
    if not os.access(binary, os.X_OK):
        print(f"N={n} {variant}: structdr skipped ({binary} is not an executable file; build it with `just build`)", flush=True)
        return
    ypath = f"/tmp/structdr-mvu-bench-y{n}.npy"
    args = [binary, "embed", "--method", method, "--param", f"k={K_NN}", "--param", "dim=2", "--input", xpath, "--out", ypath]
    if variant == "l2":
        args += ["--param", f"nu={NU}"]
    t0 = time.perf_counter()
    try:
        out = subprocess.run(args, env=dict(os.environ), capture_output=True, text=True, timeout=cap)
    except subprocess.TimeoutExpired:
        print(f"N={n} {variant}: structdr {method} did not finish within the {cap:.0f} s cap (killed)", flush=True)
        return
    ours = time.perf_counter() - t0
    if out.returncode != 0:
        last = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "no stderr"
        print(f"N={n} {variant}: structdr skipped (exit {out.returncode} after {ours:.2f} s: {last})", flush=True)
        return
    gap = next((line.strip() for line in out.stderr.splitlines() if "relative duality gap" in line), "relative duality gap ?")
    status = next((line.split(";", 1)[1].strip() for line in out.stderr.splitlines() if line.startswith("note: factorisation rank")), "?")
    trace = out.stderr.split("tr(K) = ")[1].split()[0].rstrip(",;") if "tr(K) = " in out.stderr else "?"
    print(f"N={n} {variant}: structdr {method} {ours:.2f} s, tr(K) = {trace}; {status}; {gap}", flush=True)


def run_peer(solver, variant, n, cap):
    t0 = time.perf_counter()
    try:
        out = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--peer", solver, variant, str(n)], env=dict(os.environ), capture_output=True, text=True, timeout=cap
        )
    except subprocess.TimeoutExpired:
        print(f"N={n} {variant}: cvxpy+{solver.upper()} did not finish within the {cap:.0f} s cap (killed)", flush=True)
        return
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        tail = (out.stderr.strip().splitlines() or ["no stderr"])[-1]
        print(f"N={n} {variant}: cvxpy+{solver.upper()} failed (exit {out.returncode} after {time.perf_counter() - t0:.1f} s: {tail})", flush=True)
        return
    r = json.loads(lines[-1])
    name = f"cvxpy {r.get('cvxpy', '?')} + {solver.upper()} {r['version']}"
    if "error" in r:
        print(f"N={n} {variant}: {name} error after {r['seconds']:.1f} s: {r['error']}", flush=True)
    elif "trace" not in r:
        print(f"N={n} {variant}: {name} {r['seconds']:.2f} s, status {r['status']}, {r['iterations']} iterations, no solution", flush=True)
    else:
        print(f"N={n} {variant}: {name} {r['seconds']:.2f} s, status {r['status']}, {r['iterations']} iterations, tr(K) = {r['trace']:.8g}, objective {r['objective']:.8g}, max residual {r['max_residual']:.2e} (distance {r['distance_residual']:.2e}, sum {r['sum_residual']:.2e}, lambda_min {r['min_eigenvalue']:.2e})", flush=True)


def main(argv):
    if argv[:1] == ["--peer"]:
        peer_solve(argv[1], argv[2], int(argv[3]), K_NN)
        return
    binary, ours, peers, cap, cap_ours, variants, sizes = None, True, True, 300.0, 900.0, [], SIZES
    i = 0
    while i < len(argv):
        if argv[i] == "--no-ours":
            ours = False
        elif argv[i] == "--no-peers":
            peers = False
        elif argv[i] == "--cap":
            i += 1
            cap = float(argv[i])
        elif argv[i] == "--cap-ours":
            i += 1
            cap_ours = float(argv[i])
        elif argv[i] == "--variant":
            i += 1
            if argv[i] not in VARIANTS:
                sys.exit(f"--variant must be one of {', '.join(VARIANTS)}, not {argv[i]!r}")
            variants.append(argv[i])
        elif argv[i] == "--sizes":
            i += 1
            sizes = tuple(int(v) for v in argv[i].split(","))
        else:
            binary = argv[i]
        i += 1
    variants = variants or list(VARIANTS)
    for n in sizes:
        x, e, d2 = scaled_problem(n, K_NN)
        xpath = f"/tmp/structdr-mvu-bench-x{n}.npy"
        np.save(xpath, x)
        adj = coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(n, n))
        parts = connected_components(adj, directed=False)[0]
        print(f"N={n}: k={K_NN}, {len(e)} edges, mean d2 = {d2.mean():.6f}, {parts} connected component(s){'' if parts == 1 else ' (MVU unbounded)'}", flush=True)
        for variant in variants:
            if ours:
                run_ours(binary, variant, n, xpath, cap_ours)
            if peers:
                for solver in PEERS.get(n, ()):
                    run_peer(solver, variant, n, cap)


if __name__ == "__main__":
    main(sys.argv[1:])
