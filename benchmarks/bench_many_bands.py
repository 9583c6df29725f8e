"""NDRegressor on hyperspectral-sized data (issue 5, target 5).

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_many_bands.py [--quick]``

Data: 776 samples x 250 bands (the shape of airborne hyperspectral yield
data; 31,125 band pairs), synthetic smooth spectra with a red edge whose
height drives the target, split 80/20 into training and test data. Prints for
each setting the fit's wall and CPU time, epochs run, layer sizes, parameters,
test R^2 and the growth of the process's peak resident memory:

- default settings (``pairs="all"``, depth 2, early stopping) -- the target:
  under 2 minutes on 2 cores;
- ``pairs="auto"`` (screened to 1,024 pairs) and ``pairs=200``;
- depth 3 (hidden layers capped at 256 units) for a few epochs, the cost per
  epoch of the widest default network;
- prediction on 100,000 pixels of 250 bands.

sknd fits in one torch thread (see bench_threads.py); the second core is
left to the rest of the machine.
"""

import argparse
import os
import platform
import resource
import time

import numpy as np
import torch
from sklearn.metrics import r2_score

from sknd import NDRegressor
from sknd.networks import MAX_DEFAULT_HIDDEN_UNITS


def hyperspectral(n_samples=776, n_bands=250, seed=0):
    rng = np.random.default_rng(seed)
    wavelengths = np.linspace(400, 1000, n_bands)
    red_edge = 1 / (1 + np.exp(-(wavelengths - 710) / 15))
    vigour = rng.uniform(0, 0.45, n_samples)
    brightness = rng.uniform(0.8, 1.2, (n_samples, 1))
    X = brightness * (rng.uniform(0.03, 0.12, (n_samples, 1)) + np.outer(vigour, red_edge))
    X = np.clip(X + rng.normal(0, 0.004, X.shape), 1e-3, None)
    y = 6 * vigour + rng.normal(0, 0.3, n_samples)
    return X, y


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(name, estimator, X_train, y_train, X_test, y_test):
    rss_before = peak_rss_mib()
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    estimator.fit(X_train, y_train)
    wall, cpu = time.perf_counter() - start_wall, time.process_time() - start_cpu
    score = r2_score(y_test, estimator.predict(X_test))
    widths = [
        f"{type(m).__name__}({m.out_features})"
        if isinstance(m, torch.nn.Linear)
        else type(m).__name__
        for m in estimator._module
    ]
    print(
        f"{name:34s} {wall:7.1f} {cpu:7.1f} {estimator.n_iter_:6d} {len(estimator.pairs_):7d} "
        f"{estimator.n_parameters_:10d} {score:7.3f} {peak_rss_mib() - rss_before:8.0f}   "
        + " -> ".join(widths)
    )
    return estimator


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the slower settings")
    args = parser.parse_args()
    torch.set_num_threads(1)
    X, y = hyperspectral()
    n_train = int(0.8 * len(X))
    data = (X[:n_train], y[:n_train], X[n_train:], y[n_train:])
    n_pairs = X.shape[1] * (X.shape[1] - 1) // 2
    print(
        f"# bench_many_bands: torch {torch.__version__}, {platform.machine()}, "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
        f"{n_train} training x {X.shape[1]} bands ({n_pairs} pairs); hidden units capped at "
        f"{MAX_DEFAULT_HIDDEN_UNITS} (uncapped they would be {n_pairs}: a {n_pairs} x {n_pairs} "
        f"layer of {n_pairs**2 * 4 / 2**30:.1f} GiB)"
    )
    print(
        f"{'setting':34s} {'wall s':>7s} {'CPU s':>7s} {'epochs':>6s} {'pairs':>7s} "
        f"{'params':>10s} {'test R2':>7s} {'RSS+MiB':>8s}   network"
    )
    model = run("default (pairs='all', depth 2)", NDRegressor(random_state=0), *data)
    run("pairs='auto'", NDRegressor(pairs="auto", random_state=0), *data)
    if not args.quick:
        run("pairs=200", NDRegressor(pairs=200, random_state=0), *data)
        run(
            "depth 3, 3 epochs (per-epoch cost)",
            NDRegressor(depth=3, max_epochs=3, early_stopping=False, random_state=0),
            *data,
        )
    rng = np.random.default_rng(1)
    image = X[rng.integers(0, len(X), 100_000)]
    start = time.perf_counter()
    model.predict(image)
    seconds = time.perf_counter() - start
    print(f"predict 100,000 pixels x 250 bands with the default model: {seconds:.1f} s")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
