"""The GIL is released during a fit: while one Python thread fits DDRTree (N = 2,000, D = 50,
K = N, one worker thread: `RAYON_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1`, set before the import),
the main thread counts in pure Python. Held, the GIL would stop the count for the whole fit;
released, the count runs at about its rate alone (on a second core). Prints both rates.
Run from the repository root: `python python/benches/threads.py`."""

import os

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import structdr  # noqa: E402
from overhead import data  # noqa: E402


def count_while(alive) -> float:
    n, t0 = 0, time.perf_counter()
    while alive():
        n += 1
    return n / (time.perf_counter() - t0)


def main() -> None:
    X = data()
    t0 = time.perf_counter()
    deadline = t0 + 1.0
    alone = count_while(lambda: time.perf_counter() < deadline)
    fit = threading.Thread(target=lambda: structdr.Ddrtree(dim=2, ncenter=2000, random_state=0).fit(X))
    t0 = time.perf_counter()
    fit.start()
    during = count_while(fit.is_alive)
    took = time.perf_counter() - t0
    print(f"pure-Python counting: {alone / 1e6:.1f} M/s alone, {during / 1e6:.1f} M/s during a {took:.2f} s fit in another thread ({during / alone:.0%})")


if __name__ == "__main__":
    main()
