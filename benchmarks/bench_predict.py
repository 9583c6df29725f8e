"""The estimators' own methods against sknd.raster on the same 1 Mpx table (issue 24).

Run: ``PYTHONPATH=. python benchmarks/bench_predict.py [--repeats N] [--pixels N] [--small]``

On the CPU, ``predict``, ``predict_proba`` and ``transform`` of the sknd estimators run
through the evaluator that :mod:`sknd.raster` uses (``sknd._inference._evaluator``): the target is
at most 1.5x the time of ``raster.predict`` (etc.) on the same pixels, with equal values.
Each pair is interleaved ``--repeats`` times in one process; the best run of each counts
(the machine is shared: the best run is the least disturbed). Models: depth-2 and depth-3
``NDClassifier`` (3 classes) and ``NDRegressor``, ``NDTransformer``, 10 bands, float32 and
float64 pixels.

``--small``: what the thread policy costs a call on a few rows instead. Each method holds
one torch thread and single-threaded BLAS and OpenMP pools while it runs
(``sknd._threads.one_thread``); per model, the time of ``predict`` (the transformer's
``transform``) on 1, 10 and 100 rows against the time to enter and leave that policy alone
(best of ``--repeats`` runs of 200 calls each).
"""

import argparse
import functools
import os
import platform
import time

import numpy as np

import sknd
from sknd import raster
from sknd._threads import one_thread

N_BANDS = 10


def _models():
    rng = np.random.default_rng(0)
    X = rng.uniform(0.01, 0.6, size=(3000, N_BANDS))
    ratio = (X[:, 7] - X[:, 3]) / (X[:, 7] + X[:, 3])
    y = np.digitize(ratio, [-0.2, 0.2])
    fast = {"max_epochs": 10, "random_state": 0}
    return {
        "NDClassifier depth 2": sknd.NDClassifier(**fast).fit(X, y),
        "NDClassifier depth 3": sknd.NDClassifier(depth=3, **fast).fit(X, y),
        "NDRegressor depth 2": sknd.NDRegressor(**fast).fit(X, ratio),
        "NDTransformer": sknd.NDTransformer(**fast).fit(X, y),
    }


def _per_call(call, repeats, number=200):
    """The best of ``repeats`` mean times of ``number`` calls of ``call``, in seconds."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            call()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def _entered():
    with one_thread():
        pass


def small(repeats):
    """``--small``: the policy's cost against ``predict`` on a few rows."""
    rng = np.random.default_rng(1)
    policy = _per_call(_entered, repeats)
    print(f"entering and leaving the thread policy: {policy * 1e6:.0f} us\n")
    print("| model | rows | predict (transform) | policy / predict |")
    print("|---|---|---|---|")
    for name, model in _models().items():
        method = getattr(model, "predict", None) or model.transform
        for rows in (1, 10, 100):
            pixels = rng.uniform(0.01, 0.6, size=(rows, N_BANDS))
            method(pixels)
            seconds = _per_call(functools.partial(method, pixels), repeats)
            print(f"| {name} | {rows} | {seconds * 1e6:.0f} us | {policy / seconds:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pixels", type=int, default=1_000_000)
    parser.add_argument("--small", action="store_true", help="the thread policy's cost per call")
    args = parser.parse_args()
    if args.small:
        small(args.repeats)
        return
    rng = np.random.default_rng(1)
    table = rng.uniform(0.01, 0.6, size=(args.pixels, N_BANDS))
    print(
        f"{platform.node()}, {os.cpu_count()} CPUs, {args.pixels / 1e6:g} Mpx x {N_BANDS} bands, "
        f"best of {args.repeats}\n"
    )
    print("| model | pixels | method | estimator | sknd.raster | ratio | equal |")
    print("|---|---|---|---|---|---|---|")
    for name, model in _models().items():
        methods = [m for m in ("predict", "predict_proba", "transform") if hasattr(model, m)]
        for dtype in (np.float32, np.float64):
            pixels = table.astype(dtype)
            for method in methods:
                own, scene = getattr(model, method), getattr(raster, method)
                if method == "predict_proba":  # as the estimator's (raster's default: float32)
                    scene = functools.partial(scene, dtype=np.float64)
                own(pixels[:10]), scene(model, pixels[:10])  # numba's kernels for this dtype
                times = {"own": [], "raster": []}
                for _ in range(args.repeats):
                    start = time.perf_counter()
                    a = own(pixels)
                    times["own"].append(time.perf_counter() - start)
                    start = time.perf_counter()
                    b = scene(model, pixels)
                    times["raster"].append(time.perf_counter() - start)
                best_own, best_raster = min(times["own"]), min(times["raster"])
                print(
                    f"| {name} | {np.dtype(dtype).name} | {method} | {best_own:.3f} s "
                    f"| {best_raster:.3f} s | {best_own / best_raster:.2f} "
                    f"| {np.array_equal(a, b)} |"
                )


if __name__ == "__main__":
    main()
