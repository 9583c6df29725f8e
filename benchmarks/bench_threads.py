"""Torch threads, scikit-learn's n_jobs and sknd fits on a small shared machine (issue 5, target 3).

Run: ``PYTHONPATH=. python benchmarks/bench_threads.py [--quick]``
(do not set OMP_NUM_THREADS: the point is torch's default thread count).

1. A tiny fit (2,000 x 10, depth 2, batch 32) with torch's global thread count
   set to 1 and to 2 before ``fit`` (sknd runs every fit in one thread, so the
   two should take the same time), and, as a counterfactual, with sknd's
   one-thread policy switched off so that the fit really runs on 2 threads.
2. The same counterfactual for a 250-band fit (31,125 pairs, a few epochs),
   the largest layers sknd users train.
3. ``GridSearchCV(NDClassifier, n_jobs=1 / 2)``: 4 candidates x 3 folds, and the
   torch thread count a loky worker process starts with.

Timings interleave the settings and report medians of wall time (what a user
waits for) and process CPU time (the parent's only: for n_jobs=2 the workers'
CPU time is not included).
"""

import argparse
import contextlib
import os
import platform
import statistics
import time

import joblib
import numpy as np
import torch
from sklearn.model_selection import GridSearchCV

import sknd._threads as threads
from sknd import NDClassifier, NDRegressor

#: What sknd._threads.one_thread enters (looked up in the module at each call): torch's
#: threads, then the BLAS and OpenMP pools.
POLICY = ("torch_threads", "_single_threaded_blas", "_single_threaded_openmp")


@contextlib.contextmanager
def fit_threads_follow_torch():
    """Counterfactual: sknd's one-thread policy off, so that fits use torch's current
    thread count (and the BLAS / OpenMP pools theirs) instead of one thread."""
    original = {name: getattr(threads, name) for name in POLICY}
    for name in POLICY:
        setattr(threads, name, lambda *args: contextlib.nullcontext())
    try:
        yield
    finally:
        for name, value in original.items():
            setattr(threads, name, value)


def timed(fn):
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start_wall, time.process_time() - start_cpu


def interleave(settings, repeats):
    samples = {name: [] for name in settings}
    for _ in range(repeats):
        for name, fn in settings.items():
            samples[name].append(timed(fn))
    return {
        name: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
        for name, v in samples.items()
    }


def with_threads(n_threads, fn, counterfactual=False):
    def run():
        previous = torch.get_num_threads()
        torch.set_num_threads(n_threads)
        try:
            if counterfactual:
                with fit_threads_follow_torch():
                    fn()
            else:
                fn()
        finally:
            torch.set_num_threads(previous)

    return run


def report(title, results, reference):
    print(f"\n## {title}")
    print(f"{'setting':52s} {'wall s':>7s} {'CPU s':>7s} {'wall / ref':>10s}")
    for name, (wall, cpu) in results.items():
        print(f"{name:52s} {wall:7.2f} {cpu:7.2f} {wall / results[reference][0]:10.2f}")


def tiny_fit(repeats, epochs):
    rng = np.random.default_rng(0)
    X = rng.uniform(0.05, 0.5, size=(2000, 10))
    y = (X[:, 3] > X[:, 2]).astype(int)

    def fit():
        NDClassifier(max_epochs=epochs, early_stopping=False, random_state=0).fit(X, y)

    settings = {
        "torch threads 1": with_threads(1, fit),
        "torch threads 2 (sknd fits in 1 thread)": with_threads(2, fit),
        "torch threads 2, policy off (fit on 2 threads)": with_threads(2, fit, True),
    }
    results = interleave(settings, repeats)
    report(f"1. tiny fit, 2,000 x 10, {epochs} epochs, batch 32", results, "torch threads 1")


def hyperspectral(n_samples=776, n_bands=250, seed=0):
    rng = np.random.default_rng(seed)
    wavelengths = np.linspace(400, 1000, n_bands)
    red_edge = 1 / (1 + np.exp(-(wavelengths - 710) / 15))
    vigour = rng.uniform(0, 0.45, n_samples)
    X = rng.uniform(0.03, 0.12, (n_samples, 1)) + np.outer(vigour, red_edge)
    X = np.clip(X + rng.normal(0, 0.004, X.shape), 1e-3, None)
    y = 6 * vigour + rng.normal(0, 0.3, n_samples)
    return X, y


def many_band_fit(repeats, epochs):
    X, y = hyperspectral()

    def fit():
        NDRegressor(max_epochs=epochs, early_stopping=False, random_state=0).fit(X, y)

    settings = {
        "1 thread": with_threads(1, fit, True),
        "2 threads (policy off)": with_threads(2, fit, True),
    }
    results = interleave(settings, repeats)
    report(f"2. 776 x 250 bands (31,125 pairs), {epochs} epochs, batch 32", results, "1 thread")


def _worker_threads():
    return torch.get_num_threads(), os.environ.get("OMP_NUM_THREADS")


def grid_search(repeats, epochs):
    rng = np.random.default_rng(1)
    X = rng.uniform(0.05, 0.5, size=(600, 8))
    y = (X[:, 1] > X[:, 5]).astype(int)
    grid = {"lr": [0.01, 0.03], "depth": [2, 3]}

    def search(n_jobs):
        def run():
            GridSearchCV(
                NDClassifier(max_epochs=epochs, random_state=0), grid, cv=3, n_jobs=n_jobs
            ).fit(X, y)

        return run

    settings = {"GridSearchCV n_jobs=1": search(1), "GridSearchCV n_jobs=2": search(2)}
    search(2)()  # start the loky workers once, outside the timings
    results = interleave(settings, repeats)
    report(
        f"3. GridSearchCV, 4 candidates x 3 folds, {epochs} epochs",
        results,
        "GridSearchCV n_jobs=1",
    )
    with joblib.parallel_config(n_jobs=2):
        seen = joblib.Parallel()(joblib.delayed(_worker_threads)() for _ in range(2))
    threads, cores = torch.get_num_threads(), os.cpu_count()
    print(f"torch threads in this process: {threads} (os.cpu_count() = {cores})")
    print(f"torch threads, OMP_NUM_THREADS in loky workers with n_jobs=2: {seen}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats and epochs")
    args = parser.parse_args()
    repeats = 3 if args.quick else 5
    print(
        f"# bench_threads: torch {torch.__version__}, {platform.machine()}, "
        f"{os.cpu_count()} cores, default torch threads {torch.get_num_threads()}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    tiny_fit(repeats, 50 if args.quick else 150)
    many_band_fit(repeats, 2 if args.quick else 5)
    grid_search(repeats, 20 if args.quick else 50)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
