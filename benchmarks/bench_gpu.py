"""Fit time and scene throughput on a CUDA GPU against one CPU core (issues 5, 17, 39).

Run on a machine with a CUDA GPU (about two minutes)::

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_gpu.py

Prints the card, the driver and the CPU, then, GPU and CPU measured in this process:

1. Fit time of ``NDClassifier(depth=2, early_stopping=False)``: 200,000 x 10 binary
   samples for 20 epochs at batch 4,096 and 256, with ``recipe="paper"`` (the training
   epochs alone) and at batch 4,096 with the default recipe (whose convex start runs on
   the CPU for both); 2,000 x 10 at batch 32 for 150 epochs. CPU fits use one thread
   (sknd's policy); whether the GPU epochs ran as CUDA graphs is printed beside them.
2. Scene throughput: ``sknd.raster.predict`` of a 4096 x 4096 x 10 float32 scene by the
   GPU model (screened, checked and evaluated on the device, several chunk sizes and
   host threads) against a CPU copy of the model (the compiled fast path, ``n_jobs=1``
   and all cores), best of 3, and whether the labels agree; then the host copy and the
   pinned host-to-device copy of the scene alone, what bounds the GPU path.
3. ``--profile``: cProfile of one GPU fit (200,000 x 10, batch 4,096) and one GPU scene,
   the calls that take the most time.
4. ``--patches``: ``NormalizedDifference(10, dim=1)`` forward+backward on
   ``(32, 10, 64, 64)`` against ``nn.Conv2d(10, 45, 1)`` on the GPU (issue 15).

Without a GPU it says so and exits with status 1; ``--cpu-dry-run`` runs every step on
the CPU instead, on small data, to check the script itself. Record results in
benchmarks/RESULTS.md with the date, the card and the CPU.
"""

import argparse
import os
import pickle
import platform
import subprocess
import sys
import time

import numpy as np
import torch

from sknd import NDClassifier, raster
from sknd._inference import _evaluator
from sknd._training._graph_epochs import GraphEpochs


def data(n_samples, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.05, 0.5, size=(n_samples, 10))
    y = (X[:, 3] - X[:, 2]) / (X[:, 3] + X[:, 2]) + rng.normal(0, 0.05, n_samples) > 0
    return X, y.astype(int)


class GraphSpy:
    """Whether the last fit's epochs ran as CUDA graphs (and why not, if capture failed)."""

    def __init__(self):
        self.graphed = self.error = None
        run_epoch = GraphEpochs.run_epoch

        def spy(epochs, iterator, weighted):
            result = run_epoch(epochs, iterator, weighted)
            self.graphed, self.error = epochs.graphed, epochs.capture_error
            return result

        GraphEpochs.run_epoch = spy

    def report(self):
        graphed, error = self.graphed, self.error
        self.graphed = self.error = None
        if error:
            return f"eager ({error[:60]})"
        return {True: "graphs", False: "eager", None: "-"}[graphed]


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


def machine(gpu_device):
    if gpu_device == "cpu":
        return "GPU: none (dry run)"
    driver = subprocess.run(
        ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return f"GPU: {torch.cuda.get_device_name(0)} (driver {driver}, CUDA {torch.version.cuda})"


def fits(gpu_device, dry_run):
    large = 20_000 if dry_run else 200_000
    large_X, large_y = data(large, seed=1)
    small_X, small_y = data(2000)
    epochs = 3 if dry_run else 20
    cases = [
        (f"{large:,} x 10, batch 4096, {epochs} epochs", "paper", large_X, large_y, 4096, epochs),
        (f"{large:,} x 10, batch 256, {epochs} epochs", "paper", large_X, large_y, 256, epochs),
        (f"{large:,} x 10, batch 4096, {epochs} epochs", "sknd", large_X, large_y, 4096, epochs),
        ("2,000 x 10, batch 32, 150 epochs", "paper", small_X, small_y, 32, 30 if dry_run else 150),
    ]  # fmt: skip
    spy = GraphSpy()
    print("\n== 1. Fit time, NDClassifier(depth=2), no early stopping; one CPU core vs the GPU")
    print(f"  {'work':<36} {'recipe':<6} {'CPU s':>7} {'GPU s':>7} {'GPU speed-up':>12}  epochs")
    fit_seconds(gpu_device, small_X[:300], small_y[:300], max_epochs=3)  # CUDA context, kernels
    models = {}
    for name, recipe, X, y, batch_size, max_epochs in cases:
        params = {"recipe": recipe, "batch_size": batch_size, "max_epochs": max_epochs}
        cpu, _ = fit_seconds("cpu", X, y, **params)
        spy.report()
        gpu, models[batch_size, recipe] = fit_seconds(gpu_device, X, y, **params)
        print(
            f"  {name:<36} {recipe:<6} {cpu:>7.2f} {gpu:>7.2f} {cpu / gpu:>11.2f}x  {spy.report()}"
        )
    return models[4096, "paper"]


def _timed(function):
    start = time.perf_counter()
    result = function()
    _synchronize()
    return time.perf_counter() - start, result


def scenes(model, dry_run):
    side = 1024 if dry_run else 4096
    rng = np.random.default_rng(2)
    scene = np.empty((side, side, 10), dtype=np.float32)
    for row in range(0, side, 256):  # in slices: no float64 copy of the whole scene
        scene[row : row + 256] = rng.uniform(0.05, 0.5, size=scene[row : row + 256].shape)
    cpu_model = pickle.loads(pickle.dumps(model)).set_params(device="cpu")
    n_px = side * side
    print(f"\n== 2. Scene {side} x {side} = {n_px / 1e6:.1f} Mpx, 10 bands float32, best of 3")
    methods = {
        "GPU model, default chunks (2**22 px on a GPU)": lambda: raster.predict(model, scene),
        "GPU model, chunks of 2**20 px": lambda: raster.predict(model, scene, chunk_pixels=2**20),
        "GPU model, chunks of 2**23 px": lambda: raster.predict(model, scene, chunk_pixels=2**23),
        "GPU model, default chunks, n_jobs=4": lambda: raster.predict(model, scene, n_jobs=4),
        "CPU model (compiled fast path), n_jobs=1": lambda: raster.predict(cpu_model, scene),
        "CPU model (compiled fast path), n_jobs=-1": lambda: raster.predict(
            cpu_model, scene, n_jobs=-1
        ),
    }
    reference = raster.predict(cpu_model, scene)
    rates = {}
    print(f"  {'method':<46} {'best Mpx/s':>10}  labels equal to the CPU path's")
    for name, method in methods.items():
        _, labels = _timed(method)  # warm-up
        best = min(_timed(method)[0] for _ in range(3))
        rates[name] = n_px / best / 1e6
        agree = np.mean((labels == reference) | (np.isnan(labels) & np.isnan(reference)))
        print(f"  {name:<46} {rates[name]:>10.1f}  {agree:.6%}")
    names = list(methods)
    gpu_best = max(rates[name] for name in names[:3])
    print(f"  GPU default chunks / CPU one core: {rates[names[0]] / rates[names[4]]:.2f}x")
    print(f"  best GPU (n_jobs=1) / CPU one core: {gpu_best / rates[names[4]]:.2f}x")
    print(f"  GPU n_jobs=4 / CPU one core: {rates[names[3]] / rates[names[4]]:.2f}x")
    print(f"  best GPU (n_jobs=1) / CPU all cores: {gpu_best / rates[names[5]]:.2f}x")
    transfers(scene)
    return scene


def profiles(gpu_device, model, scene):
    """Section 3: where a GPU fit and a GPU scene spend their time."""
    import cProfile
    import pstats

    X, y = data(len(scene) if gpu_device == "cpu" else 200_000, seed=1)
    for name, work, order in (
        ("fit, 200,000 x 10, batch 4096, 20 epochs, paper recipe", lambda: fit_seconds(
            gpu_device, X, y, recipe="paper", batch_size=4096, max_epochs=20), "cumulative"),
        ("raster.predict of the scene, default chunks", lambda: _timed(
            lambda: raster.predict(model, scene)), "tottime"),
    ):  # fmt: skip
        profile = cProfile.Profile()
        profile.enable()
        work()
        profile.disable()
        print(f"\n== 3. Profile: {name}, by {order} time")
        pstats.Stats(profile).sort_stats(order).print_stats(18)


def transfers(scene):
    """What bounds the device path: the host copy into pinned memory and the transfer."""
    n_px = scene.shape[0] * scene.shape[1]
    cuda = torch.cuda.is_available()
    pinned = torch.empty(scene.shape, dtype=torch.float32, pin_memory=cuda)
    host = pinned.numpy()
    copy = min(_timed(lambda: np.copyto(host, scene))[0] for _ in range(3))
    print(f"  host copy into pinned memory, one thread: {n_px / copy / 1e6:8.1f} Mpx/s")
    if cuda:
        device = torch.empty_like(pinned, device="cuda")
        move = min(_timed(lambda: device.copy_(pinned, non_blocking=True))[0] for _ in range(3))
        print(f"  pinned host-to-GPU copy:                  {n_px / move / 1e6:8.1f} Mpx/s")


def image_patches(device, quick):
    """Section 4: the ND layer on (N, C, H, W) patches against a 1 x 1 convolution."""
    from sknd.nn import NormalizedDifference

    side = 16 if quick else 64
    print(f"\n== 4. (32, 10, {side}, {side}) patches, forward+backward, ms per call")
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
        times[name] = min(_timed(run)[0] for _ in range(10))
    for name, seconds in times.items():
        ratio = seconds / times["conv1x1"]
        print(f"  {name:<28} {seconds * 1e3:8.3f} ms   ratio to conv1x1 {ratio:5.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cpu-dry-run",
        action="store_true",
        help="no GPU: run every step on the CPU, on small data (checks the script only)",
    )
    parser.add_argument("--profile", action="store_true", help="also section 3 (profiles)")
    parser.add_argument("--patches", action="store_true", help="also section 4 (issue 15)")
    args = parser.parse_args()
    gpu_device = "cpu" if args.cpu_dry_run else "cuda"
    if not args.cpu_dry_run and not torch.cuda.is_available():
        print("No CUDA GPU visible to PyTorch: nothing to measure.")
        sys.exit(1)
    print(
        f"{time.strftime('%Y-%m-%d %H:%M')}; {machine(gpu_device)}; {os.cpu_count()} CPU "
        f"cores ({platform.processor() or platform.machine()}); torch {torch.__version__}; "
        f"numba kernels: {_evaluator._compiled_kernels() is not None}"
    )
    model = fits(gpu_device, args.cpu_dry_run)
    scene = scenes(model, args.cpu_dry_run)
    if args.profile:
        profiles(gpu_device, model, scene)
    if args.patches:
        image_patches(gpu_device, args.cpu_dry_run)


if __name__ == "__main__":
    main()
