"""Fit time and scene throughput on a CUDA GPU against the CPU (issue 5, target 7).

Run on a machine with a CUDA GPU (a few minutes)::

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_gpu.py [--quick]

Prints the card's name and, as ratios GPU time / CPU time in one process:

1. Fit time of ``NDClassifier(depth=2, max_epochs=150, early_stopping=False)``
   on 2,000 x 10 binary samples (batch 32 and 256: small networks, where the
   GPU's per-step latency dominates) and on 200,000 x 10 samples with batch
   4,096 for 20 epochs (where the GPU has work to do). CPU fits use one thread,
   sknd's policy.
2. Scene throughput: ``sknd.raster.predict`` of a 10-band float32 scene by the
   GPU model (its own methods, on the GPU) against the CPU model (sknd's CPU
   fast path, with numba when installed, using every core through ``n_jobs=-1``).

Without a GPU it says so and exits with status 1. Record results in
benchmarks/RESULTS.md with the date, the card and the CPU.
"""

import argparse
import os
import pickle
import sys
import time

import numpy as np
import torch

from sknd import NDClassifier, raster


def data(n_samples, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.05, 0.5, size=(n_samples, 10))
    y = (X[:, 3] - X[:, 2]) / (X[:, 3] + X[:, 2]) + rng.normal(0, 0.05, n_samples) > 0
    return X, y.astype(int)


def fit_seconds(device, X, y, **params):
    start = time.perf_counter()
    model = NDClassifier(device=device, early_stopping=False, random_state=0, **params).fit(X, y)
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start, model


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer epochs, smaller scene")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("No CUDA GPU visible to PyTorch: nothing to measure.")
        sys.exit(1)
    print(
        f"{time.strftime('%Y-%m-%d %H:%M')}; GPU: {torch.cuda.get_device_name(0)}; "
        f"{os.cpu_count()} CPU cores; torch {torch.__version__}; "
        f"numba kernels: {raster._compiled_kernels() is not None}"
    )
    epochs = 30 if args.quick else 150
    small_X, small_y = data(2000)
    large_X, large_y = data(200_000, seed=1)
    fits = [
        ("2,000 x 10, batch 32", small_X, small_y, {"batch_size": 32, "max_epochs": epochs}),
        ("2,000 x 10, batch 256", small_X, small_y, {"batch_size": 256, "max_epochs": epochs}),
        ("200,000 x 10, batch 4096, 20 epochs", large_X, large_y,
         {"batch_size": 4096, "max_epochs": 20}),
    ]  # fmt: skip
    print("\n== Fit time, NDClassifier(depth=2), no early stopping")
    print(f"  {'work':<38} {'CPU s':>8} {'GPU s':>8} {'GPU / CPU':>10}")
    fit_seconds("cuda", small_X[:200], small_y[:200], max_epochs=2)  # CUDA context, kernels
    for name, X, y, params in fits:
        cpu, _ = fit_seconds("cpu", X, y, **params)
        gpu, model = fit_seconds("cuda", X, y, **params)
        print(f"  {name:<38} {cpu:>8.2f} {gpu:>8.2f} {gpu / cpu:>10.2f}")

    side = 1024 if args.quick else 4096
    scene = np.random.default_rng(2).uniform(0.05, 0.5, size=(side, side, 10)).astype(np.float32)
    cpu_model = pickle.loads(pickle.dumps(model))  # unpickles onto the CPU
    cpu_model.set_params(device="cpu")
    print(f"\n== Scene {side} x {side} = {side * side / 1e6:.1f} Mpx, 10 bands float32")
    print(f"  {'method':<52} {'best Mpx/s':>10}")
    methods = {
        "raster.predict, GPU model (its own predict)": lambda: raster.predict(model, scene),
        "raster.predict, GPU model, chunks of 1,048,576 px": lambda: raster.predict(
            model, scene, chunk_pixels=2**20
        ),
        "raster.predict, CPU model (fast path), n_jobs=-1": lambda: raster.predict(
            cpu_model, scene, n_jobs=-1
        ),
    }
    labels = {name: method() for name, method in methods.items()}  # warm-up
    reference = labels[next(iter(labels))]
    rates = {}
    for name, method in methods.items():
        best = min(_timed(method) for _ in range(3))
        rates[name] = side * side / best / 1e6
        agree = np.mean(labels[name] == reference)
        print(f"  {name:<52} {rates[name]:>10.1f}   (labels agree on {agree:.4%})")
    gpu_best = max(rates[name] for name in list(methods)[:2])
    cpu_rate = rates[list(methods)[2]]
    print(f"  ratio best GPU / CPU fast path: {gpu_best / cpu_rate:.2f}x")


def _timed(function):
    start = time.perf_counter()
    function()
    torch.cuda.synchronize()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
