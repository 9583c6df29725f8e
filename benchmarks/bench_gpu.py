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

3. Batch sweep: fit time GPU / CPU on the 200,000 x 10 samples for batch sizes
   from 64 to 65,536 (3 epochs each), to find from which batch the GPU pays off.

Scene throughput also lists the CPU fast path on one core (``n_jobs=1``).

4. Image patches (issue 15): ``NormalizedDifference(10, dim=1)`` forward+backward on
   ``(32, 10, 64, 64)`` against ``nn.Conv2d(10, 45, 1)`` on the GPU (float32, and bfloat16
   inputs, which the layer computes in float32), eager and ``torch.compile``.

Without a GPU it says so and exits with status 1; ``--cpu-dry-run`` runs every
step on the CPU instead, on small data, to check the script itself. Record
results in benchmarks/RESULTS.md with the date, the card and the CPU.
"""

import argparse
import os
import pickle
import sys
import time

import numpy as np
import torch

from sknd import NDClassifier, _evaluator, raster


def data(n_samples, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.05, 0.5, size=(n_samples, 10))
    y = (X[:, 3] - X[:, 2]) / (X[:, 3] + X[:, 2]) + rng.normal(0, 0.05, n_samples) > 0
    return X, y.astype(int)


def fit_seconds(device, X, y, **params):
    start = time.perf_counter()
    model = NDClassifier(
        device=device, depth=2, early_stopping=False, random_state=0, **params
    ).fit(X, y)
    _synchronize()
    return time.perf_counter() - start, model


def _synchronize():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer epochs, smaller scene")
    parser.add_argument(
        "--cpu-dry-run",
        action="store_true",
        help="no GPU: run every step on the CPU, on small data (checks the script only)",
    )
    args = parser.parse_args()
    gpu_device = "cuda"
    if args.cpu_dry_run:
        gpu_device, args.quick = "cpu", True
    elif not torch.cuda.is_available():
        print("No CUDA GPU visible to PyTorch: nothing to measure.")
        sys.exit(1)
    card = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none (dry run)"
    print(
        f"{time.strftime('%Y-%m-%d %H:%M')}; GPU: {card}; "
        f"{os.cpu_count()} CPU cores; torch {torch.__version__}; "
        f"numba kernels: {_evaluator._compiled_kernels() is not None}"
    )
    epochs = 30 if args.quick else 150
    large = 20_000 if args.cpu_dry_run else 200_000
    small_X, small_y = data(2000)
    large_X, large_y = data(large, seed=1)
    fits = [
        ("2,000 x 10, batch 32", small_X, small_y, {"batch_size": 32, "max_epochs": epochs}),
        ("2,000 x 10, batch 256", small_X, small_y, {"batch_size": 256, "max_epochs": epochs}),
        (f"{large:,} x 10, batch 4096, 20 epochs", large_X, large_y,
         {"batch_size": 4096, "max_epochs": 20}),
    ]  # fmt: skip
    print("\n== Fit time, NDClassifier(depth=2), no early stopping")
    print(f"  {'work':<38} {'CPU s':>8} {'GPU s':>8} {'GPU / CPU':>10}")
    fit_seconds(gpu_device, small_X[:200], small_y[:200], max_epochs=2)  # CUDA context, kernels
    for name, X, y, params in fits:
        cpu, _ = fit_seconds("cpu", X, y, **params)
        gpu, model = fit_seconds(gpu_device, X, y, **params)
        print(f"  {name:<38} {cpu:>8.2f} {gpu:>8.2f} {gpu / cpu:>10.2f}")

    print(f"\n== Batch sweep, {large:,} x 10, 3 epochs")
    print(f"  {'batch':>8} {'CPU s':>8} {'GPU s':>8} {'GPU / CPU':>10}")
    for batch_size in (64, 256, 1024, 4096, 16384, 65536):
        params = {"batch_size": batch_size, "max_epochs": 3}
        cpu, _ = fit_seconds("cpu", large_X, large_y, **params)
        gpu, _ = fit_seconds(gpu_device, large_X, large_y, **params)
        print(f"  {batch_size:>8} {cpu:>8.2f} {gpu:>8.2f} {gpu / cpu:>10.2f}")

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
        "raster.predict, GPU model, chunks of 4,194,304 px": lambda: raster.predict(
            model, scene, chunk_pixels=2**22
        ),
        "raster.predict, CPU model (fast path), n_jobs=-1": lambda: raster.predict(
            cpu_model, scene, n_jobs=-1
        ),
        "raster.predict, CPU model (fast path), n_jobs=1": lambda: raster.predict(
            cpu_model, scene, n_jobs=1
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
    names = list(methods)
    gpu_best = max(rates[name] for name in names[:3])
    print(f"  ratio best GPU / CPU fast path, n_jobs=-1: {gpu_best / rates[names[3]]:.2f}x")
    print(f"  ratio best GPU / CPU fast path, one core: {gpu_best / rates[names[4]]:.2f}x")
    image_patches(gpu_device, args.quick)


def image_patches(device, quick):
    """Section 4: the ND layer on (N, C, H, W) patches against a 1 x 1 convolution."""
    from sknd.nn import NormalizedDifference

    side = 16 if quick else 64
    print(f"\n4. (32, 10, {side}, {side}) patches, forward+backward, ms per call")
    torch.manual_seed(0)
    x = torch.rand(32, 10, side, side, device=device).add_(0.05)
    grad = torch.randn(32, 45, side, side, device=device)
    conv = torch.nn.Conv2d(10, 45, 1).to(device)
    layer = NormalizedDifference(10, check_input=False).to(device)
    candidates = {
        "conv1x1": lambda: conv(x).backward(grad),
        "ND eager": lambda: layer(x).backward(grad),
        "ND eager, bfloat16 input": lambda: layer(x.bfloat16()).backward(grad.bfloat16()),
        "ND torch.compile": (lambda f: lambda: f(x).backward(grad))(torch.compile(layer)),
    }
    times = {}
    for name, run in candidates.items():
        for _ in range(3):
            run()  # warm-up (and compilation)
        times[name] = min(_timed(run) for _ in range(10))
    for name, seconds in times.items():
        ratio = seconds / times["conv1x1"]
        print(f"  {name:<28} {seconds * 1e3:8.3f} ms   ratio to conv1x1 {ratio:5.2f}")


def _timed(function):
    start = time.perf_counter()
    function()
    _synchronize()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
