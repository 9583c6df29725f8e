"""Single-core raster throughput of this checkout against named commits (issues 24, 36 and 53).

``sknd.raster.predict(model, scene, n_jobs=1)`` of depth-2, 10-band ``NDClassifier``
models (45 pairs) with 2, 3, 8 and 20 classes (one output logit for two classes, else one
per class) on a 4.4 Mpx float32 scene (2100 x 2100 x 10, bands last), in Mpx/s and in ns
per pixel. The baseline is ``--baseline COMMIT``, checked out by the script in a temporary
git worktree (removed at the end): a comparison cannot pick a convenient baseline after the
fact; ``--today COMMIT`` (e.g. ``main``) adds a second one the same way. Each checkout first
fits the models with its own code (same data, same seed) in a subprocess, once. Then, in
``--rounds`` rounds, each checkout and model runs in a fresh subprocess with one thread
(OpenMP, BLAS and numba) that loads the model and the scene, warms numba (compiling or
loading its cache) and times ``--repeats`` predicts by the CPU time of the process
(``time.process_time``, which other processes on a shared machine disturb far less than
wall time), keeping the fastest. The same process times the paths that do not use the
compiled kernels: the numpy evaluator on a 512 x 512 scene (``FastNetwork.numpy_only``, what
the scene command uses below 2**22 pixels; checkouts without it print n/a) and
``model.predict`` of one pixel (us per call, best of 200). The checkouts alternate, their
order reversed every round; each round also times the division bound in this checkout: the
ND layer alone (``normalized_differences``, 45 pairs, float32) on 8192 pixels held in cache.
Printed per model: each checkout's median and spread (min-max) over the rounds, in Mpx/s
and ns per pixel, the ns per pixel per output above the median division bound, the ratios of
the medians (wall time too), and the share of pixels whose labels differ between the float32
scene and its float64 cast in each checkout (the cost of computing a float32 scene in
float32). The load average is printed at the start and at the end.

Run from a checkout (needs git and the commits in its history)::

    PYTHONPATH=. python benchmarks/bench_kernel.py --baseline bd5a18d --today main

``--precision`` instead times this checkout's fused kernel alone
(``normalized_differences_dense``: 45 pairs, one output, random weights) on 8192 float32
pixels held in cache, computing in float32 and in float64 (what the evaluator picks for
float32 and float64 tables), in ns per pixel (best of 7), and prints the largest
difference of the two outputs.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

N_BANDS = 10
SIDE = 2100  # 4.41 Mpx
SMALL_SIDE = 512  # the numpy path's scene: 0.26 Mpx, below the scene command's 2**22
CLASSES = (2, 3, 8, 20)

_FIT = f"""
import pickle, sys
import numpy as np
import torch
from sknd import NDClassifier

torch.set_num_threads(1)
rng = np.random.default_rng(0)
X = rng.uniform(0.01, 0.6, size=(2000, {N_BANDS}))
ratio = (X[:, 7] - X[:, 3]) / (X[:, 7] + X[:, 3])
for n_classes, path in zip({CLASSES}, sys.argv[1:]):
    thresholds = [0.0] if n_classes == 2 else list(np.linspace(-0.3, 0.3, n_classes - 1))
    model = NDClassifier(depth=2, max_epochs=5, random_state=0)
    model.fit(X, np.digitize(ratio, thresholds))
    with open(path, "wb") as f:
        pickle.dump(model, f)
"""

_TIME = f"""
import pickle, sys, time
import numpy as np
import sknd.raster

def best_cpu(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.process_time()
        function()
        times.append(time.process_time() - start)
    return min(times)

with open(sys.argv[1], "rb") as f:
    model = pickle.load(f)
scene = np.load(sys.argv[2])
sknd.raster.predict(model, scene[:5], n_jobs=1)  # compile or load numba's cache
cpu, wall = [], []
for _ in range(int(sys.argv[3])):
    start, start_wall = time.process_time(), time.perf_counter()
    labels = sknd.raster.predict(model, scene, n_jobs=1)
    cpu.append(time.process_time() - start)
    wall.append(time.perf_counter() - start_wall)
differ = -1.0
if sys.argv[4] == "1":
    differ = np.mean(sknd.raster.predict(model, scene.astype(np.float64), n_jobs=1) != labels)
megapixels = scene.shape[0] * scene.shape[1] / 1e6
small = scene[:{SMALL_SIDE}, :{SMALL_SIDE}].reshape(-1, {N_BANDS})
numpy_rate = float("nan")
evaluator = model._fast_evaluator("predict")
if hasattr(evaluator, "numpy_only"):
    evaluator = evaluator.numpy_only()
    evaluator(small[:5])
    numpy_rate = len(small) / 1e6 / best_cpu(lambda: evaluator(small), 5)
pixel = small[:1].astype(np.float64)
model.predict(pixel)
one = best_cpu(lambda: [model.predict(pixel) for _ in range(20)], 10) / 20
print(megapixels / min(cpu), megapixels / min(wall), differ, numpy_rate, one * 1e6)
"""

_BOUND = f"""
import time
import numpy as np
from sknd._nd import _kernels

rng = np.random.default_rng(0)
X = rng.uniform(0.01, 0.6, (8192, {N_BANDS})).astype(np.float32)
pairs = np.array([(i, j) for i in range({N_BANDS}) for j in range(i + 1, {N_BANDS})])
wa, wc = rng.uniform(0.5, 1.5, (2, len(pairs))).astype(np.float32)
out = np.empty((len(pairs), len(X)), dtype=np.float32)
arguments = (X, pairs[:, 0].copy(), pairs[:, 1].copy(), wa, wc, np.float32(1e-6), 0, out)
_kernels.normalized_differences(*arguments)
best = float("inf")
for _ in range(7):
    start = time.process_time()
    for _ in range(50):
        _kernels.normalized_differences(*arguments)
    best = min(best, (time.process_time() - start) / (50 * len(X)) * 1e9)
print(best)
"""

_THREADS = {
    name: "1"
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
}


def _run(checkout, code, *arguments):
    """Run ``code`` in a fresh one-thread interpreter importing ``checkout``'s sknd."""
    env = dict(os.environ, PYTHONPATH=str(checkout), **_THREADS)
    command = [sys.executable, "-c", code, *map(str, arguments)]
    result = subprocess.run(command, env=env, capture_output=True, text=True, cwd=checkout)
    if result.returncode:
        raise RuntimeError(f"{checkout}: {result.stderr[-2000:]}")
    return result.stdout


def _measure(checkouts, tmp, args):
    """``{(checkout, n_classes): [run, ...]}`` over the rounds, and the division bounds.

    A run is ``(cpu_rate, wall_rate, differ, numpy_rate, one_pixel_us)``.
    """
    scene_path = tmp / "scene.npy"
    rng = np.random.default_rng(1)
    np.save(scene_path, rng.uniform(0.01, 0.6, (SIDE, SIDE, N_BANDS)).astype(np.float32))
    models = {}
    for name, checkout in checkouts.items():
        paths = [tmp / f"{name}-{n_classes}.pkl" for n_classes in CLASSES]
        _run(checkout, _FIT, *paths)
        models.update({(name, n): path for n, path in zip(CLASSES, paths)})
    runs = {key: [] for key in models}
    bounds = []
    for round_ in range(args.rounds):
        order = list(checkouts) if round_ % 2 == 0 else list(checkouts)[::-1]
        bounds.append(float(_run(checkouts["current"], _BOUND).split()[-1]))
        for n_classes in CLASSES:
            for name in order:
                path = models[name, n_classes]
                compare = int(round_ == 0)
                output = _run(checkouts[name], _TIME, path, scene_path, args.repeats, compare)
                runs[name, n_classes].append(tuple(map(float, output.split()[-5:])))
    return runs, bounds


def _spread(values, digits=1):
    """``median (min-max)`` of ``values``."""
    median = statistics.median(values)
    return f"{median:.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def _report(runs, labels, bound):
    """Print each model's figures by checkout; ``labels`` maps checkouts to their commits."""
    print(f"division bound (ND layer alone, 45 pairs, in cache): {bound:.2f} ns per pixel")
    for n_classes in CLASSES:
        n_outputs = 1 if n_classes == 2 else n_classes
        print(f"\n{n_classes} classes ({n_outputs} outputs): CPU time, median (min-max) of rounds")
        medians, wall = {}, {}
        for name, label in labels.items():
            model_runs = runs[name, n_classes]
            rates = [run[0] for run in model_runs]
            medians[name] = statistics.median(rates)
            wall[name] = statistics.median(run[1] for run in model_runs)
            ns = 1e3 / medians[name]
            print(
                f"  {label:22s} {_spread(rates)} Mpx/s, {ns:.1f} ns/px, "
                f"{(ns - bound) / n_outputs:.1f} ns/px per output above the bound; numpy path "
                f"{_spread([run[3] for run in model_runs])} Mpx/s; one pixel "
                f"{_spread([run[4] for run in model_runs], 0)} us; float64 cast's labels differ "
                f"on {100 * model_runs[0][2]:.4f} % of pixels"
            )
        for name, label in labels.items():
            if name != "current":
                ratio = medians["current"] / medians[name]
                print(
                    f"  this checkout / {label}: {ratio:.2f}x "
                    f"(wall time {wall['current'] / wall[name]:.2f}x)"
                )


def precision():
    """The fused kernel alone in float32 and in float64, on the same float32 pixels."""
    import time

    from sknd._nd import _kernels

    rng = np.random.default_rng(0)
    X = rng.uniform(0.01, 0.6, (8192, N_BANDS)).astype(np.float32)
    pairs = np.array([(i, j) for i in range(N_BANDS) for j in range(i + 1, N_BANDS)])
    first, second = np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1])
    wa, wc = rng.uniform(0.5, 1.5, (2, len(pairs)))
    weight, bias = rng.normal(size=(1, len(pairs))), rng.normal(size=1)
    outputs = {}
    for dtype in (np.float32, np.float64):
        a, c, w, b = (np.asarray(value, dtype=dtype) for value in (wa, wc, weight, bias))
        out = np.empty((1, len(X)), dtype=dtype)
        variant = _kernels.VARIANT_CODES["reflectance"]
        arguments = (X, first, second, a, c, dtype(1e-6), variant, w, b, out)
        _kernels.normalized_differences_dense(*arguments)  # compile or load the cache
        best = float("inf")
        for _ in range(7):
            start = time.process_time()
            for _ in range(100):
                _kernels.normalized_differences_dense(*arguments)
            best = min(best, (time.process_time() - start) / (100 * len(X)) * 1e9)
        outputs[dtype] = out.astype(np.float64)
        print(f"fused kernel in {np.dtype(dtype).name}: {best:.2f} ns per pixel")
    difference = np.abs(outputs[np.float32] - outputs[np.float64]).max()
    print(f"largest |float32 - float64| output: {difference:.2e}")


def _commit(root, name):
    command = ["git", "-C", str(root), "rev-parse", "--short", name]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--precision", action="store_true", help="the kernel alone, by dtype")
    parser.add_argument("--baseline", help="commit to compare with (required without --precision)")
    parser.add_argument("--today", help="a second commit to compare with, e.g. main")
    parser.add_argument("--rounds", type=int, default=5, help="subprocesses per checkout")
    parser.add_argument("--repeats", type=int, default=3, help="predicts timed per subprocess")
    args = parser.parse_args()
    if args.precision:
        return precision()
    if args.baseline is None:
        parser.error("--baseline COMMIT is required")
    root = Path(__file__).resolve().parents[1]
    commits = {"baseline": _commit(root, args.baseline)}
    if args.today:
        commits["today"] = _commit(root, args.today)
    print(f"load average at the start: {os.getloadavg()}", flush=True)
    git = ["git", "-C", str(root), "worktree"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        checkouts = {name: tmp / f"{name}-{commit}" for name, commit in commits.items()}
        try:
            for name, worktree in checkouts.items():
                subprocess.run(git + ["add", "--detach", str(worktree), commits[name]], check=True)
            runs, bounds = _measure({**checkouts, "current": root}, tmp, args)
        finally:
            for worktree in checkouts.values():
                subprocess.run(git + ["remove", "--force", str(worktree)], check=False)
    print(f"load average at the end: {os.getloadavg()}")
    print(f"sknd.raster.predict(..., n_jobs=1), {SIDE} x {SIDE} x {N_BANDS} float32, one thread")
    labels = {name: f"{commit} ({name})" for name, commit in commits.items()}
    labels["current"] = "this checkout"
    _report(runs, labels, statistics.median(bounds))


if __name__ == "__main__":
    main()
