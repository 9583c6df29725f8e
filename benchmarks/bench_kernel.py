"""Single-core throughput of the compiled ND kernel, two checkouts side by side (issue 24, item 5).

``sknd.raster.predict(model, X, n_jobs=1)`` of a depth-2, 10-band ``NDClassifier``
(45 pairs, one output logit) on a 4 Mpx float32 table, in Mpx/s. Each checkout is
imported in a fresh subprocess (``PYTHONPATH`` set to it) that loads the same
pickled model, warms numba and times ``--repeats`` predicts, keeping the fastest;
the checkouts alternate, and the medians of the runs of each are compared. The
clock is the CPU time of the process (``time.process_time``), which other
processes on a shared machine disturb far less than wall time (printed too).
The labels of both must be equal. Each run also times the fused kernel alone
(``normalized_differences_dense``) on 8192 pixels in float64, held in cache.

Run from a checkout, with today's commit beside it::

    git worktree add /tmp/kbase HEAD      # before the change
    PYTHONPATH=. python benchmarks/bench_kernel.py /tmp/kbase .
"""

import argparse
import os
import pickle
import statistics
import subprocess
import sys
import tempfile

import numpy as np

N_BANDS = 10
N_PIXELS = 4_000_000

_CHILD = """
import pickle, sys, time
import numpy as np
import sknd._kernels
import sknd.raster
with open(sys.argv[1], "rb") as f:
    model = pickle.load(f)
X = np.load(sys.argv[2])
sknd.raster.predict(model, X[:10_000], n_jobs=1)  # compile or load numba's cache
cpu, wall = [], []
for _ in range(int(sys.argv[4])):
    start, start_wall = time.process_time(), time.perf_counter()
    labels = sknd.raster.predict(model, X, n_jobs=1)
    cpu.append(time.process_time() - start)
    wall.append(time.perf_counter() - start_wall)
np.save(sys.argv[3], labels)
# The kernel alone on a float64 table held in cache (what both checkouts' kernels take).
from sknd._pixels import pixel_function
step = pixel_function(model, "predict").steps[0]
dtype = np.dtype(np.float64)
block = np.ascontiguousarray(X[:8192], dtype=dtype)
out = np.empty((1, len(block)))
arguments = (*step.nd.kernel_arguments(dtype), *step.dense._cast(dtype), out)
kernel = sknd._kernels.normalized_differences_dense
times = []
for _ in range(5):
    start = time.process_time()
    for _ in range(50):
        kernel(block, *arguments)
    times.append((time.process_time() - start) / (50 * len(block)) * 1e9)
print(len(X) / min(cpu) / 1e6, len(X) / min(wall) / 1e6, min(times))
"""


def fit_model(seed=0):
    """A depth-2 NDClassifier on synthetic 10-band reflectances (all 45 pairs)."""
    import torch

    from sknd import NDClassifier

    torch.set_num_threads(1)
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.01, 0.6, size=(2000, N_BANDS))
    y = (X[:, 7] - X[:, 3]) / (X[:, 7] + X[:, 3]) > 0
    return NDClassifier(depth=2, max_epochs=5, random_state=seed).fit(X, y.astype(int))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", help="checkout of today's code")
    parser.add_argument("after", help="checkout of the changed code")
    parser.add_argument("--runs", type=int, default=5, help="subprocesses per checkout")
    parser.add_argument("--repeats", type=int, default=3, help="predicts timed per run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model_path, table_path = os.path.join(tmp, "model.pkl"), os.path.join(tmp, "X.npy")
        with open(model_path, "wb") as f:
            pickle.dump(fit_model(), f)
        rng = np.random.default_rng(1)
        np.save(table_path, rng.uniform(0.01, 0.6, (N_PIXELS, N_BANDS)).astype(np.float32))
        rates = {"before": [], "after": []}
        wall = {"before": [], "after": []}
        kernel = {"before": [], "after": []}
        labels = {}
        for _ in range(args.runs):
            for name in rates:
                checkout = os.path.abspath(getattr(args, name))
                out = os.path.join(tmp, f"{name}.npy")
                env = dict(os.environ, PYTHONPATH=checkout, OMP_NUM_THREADS="1")
                command = [sys.executable, "-c", _CHILD, model_path, table_path, out]
                result = subprocess.run(
                    command + [str(args.repeats)],
                    env=env, capture_output=True, text=True, check=True, cwd=checkout,
                )  # fmt: skip
                cpu_rate, wall_rate, kernel_ns = map(float, result.stdout.split()[-3:])
                rates[name].append(cpu_rate)
                wall[name].append(wall_rate)
                kernel[name].append(kernel_ns)
                labels[name] = np.load(out)
        for name, values in rates.items():
            runs = ", ".join(f"{value:.1f}" for value in values)
            print(
                f"{name:6s} {statistics.median(values):6.1f} Mpx/s (CPU time)  runs {runs}; "
                f"kernel alone {statistics.median(kernel[name]):.1f} ns per pixel"
            )
        ratio = statistics.median(rates["after"]) / statistics.median(rates["before"])
        wall_ratio = statistics.median(wall["after"]) / statistics.median(wall["before"])
        print(
            f"ratio  {ratio:.2f}x (wall time: {wall_ratio:.2f}x)  "
            f"labels equal: {np.array_equal(*labels.values())}"
        )


if __name__ == "__main__":
    main()
