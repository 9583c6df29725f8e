"""Raster prediction benchmarks (issue 5, target 4).

Two measurements, each printed as a ratio:

1. Throughput, in one process: ``sknd.raster.predict`` of a fitted depth-2
   ``NDClassifier`` on a 10-band float32 scene held in memory, against a naive
   chunked torch forward of the same trained network (chunks of 65,536 pixels
   through ``clf._module``, the ND layer as written in ``sknd.nn``, then the
   estimator's decoding). Methods are interleaved and repeated; the best run of
   each is compared (the machine is shared, the best run is the least disturbed).
   Target: ratio >= 3 and >= 15 million pixels/s on 2 cores. Rates per CPU-second of
   the process are printed too: steadier than wall clock when other processes share
   the cores.

2. Peak memory of a 100-million-pixel dask-backed scene (10 bands, float32, 4 GB
   if materialized), generated lazily by ``dask.array`` random numbers and
   predicted through ``sknd.raster.predict`` by dask's threaded scheduler. The
   result is reduced to a class histogram (``--store`` also writes the label map
   into a numpy memmap under /tmp), so it never has to sit in RAM. Each run is a
   fresh subprocess whose peak resident memory is read with
   ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` (and ``VmHWM`` from /proc). Target:
   < 2 GB.

Run from a checkout::

    PYTHONPATH=. python benchmarks/bench_raster.py            # both, a few minutes
    PYTHONPATH=. python benchmarks/bench_raster.py --quick    # smaller, for a smoke test

Record results in benchmarks/RESULTS.md with the date and the machine.
"""

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

N_BANDS = 10
NAIVE_CHUNK = 65_536


# ------------------------------------------------------------------- the model
def fit_model(n_classes, seed=0):
    """A depth-2 NDClassifier on synthetic 10-band reflectances (weights are what matter)."""
    import torch

    from sknd import NDClassifier

    rng = np.random.default_rng(seed)
    X = rng.uniform(0.01, 0.6, size=(2000, N_BANDS))
    ratio = (X[:, 7] - X[:, 3]) / (X[:, 7] + X[:, 3])
    thresholds = [0.0] if n_classes == 2 else list(np.linspace(-0.3, 0.3, n_classes - 1))
    y = np.digitize(ratio, thresholds)
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return NDClassifier(depth=2, max_epochs=5, random_state=seed).fit(X, y)
    finally:
        torch.set_num_threads(previous)


def naive_torch_predict(clf, scene, n_threads):
    """Chunked torch forward of the trained network, decoded by the estimator's task."""
    import torch

    table = scene.reshape(-1, scene.shape[-1])
    labels = np.empty(len(table), dtype=clf.classes_.dtype)
    previous = torch.get_num_threads()
    torch.set_num_threads(n_threads)
    try:
        with torch.no_grad():
            for start in range(0, len(table), NAIVE_CHUNK):
                chunk = torch.from_numpy(table[start : start + NAIVE_CHUNK])
                output = clf._module(chunk).numpy()
                labels[start : start + NAIVE_CHUNK] = clf._task.decode(output)
    finally:
        torch.set_num_threads(previous)
    return labels.reshape(scene.shape[:-1])


def without_numba(function, *args, **kwargs):
    """Call ``function`` with sknd's numpy evaluator instead of its compiled kernels."""
    from sknd._inference import _evaluator

    compiled = _evaluator._compiled_kernels
    _evaluator._compiled_kernels = lambda: None
    try:
        return function(*args, **kwargs)
    finally:
        _evaluator._compiled_kernels = compiled


# ------------------------------------------------------------------ throughput
def throughput(args):
    from sknd import raster
    from sknd._inference import _evaluator

    rng = np.random.default_rng(1)
    height, width = (512, 1024) if args.quick else (1024, 2048)
    scene = rng.uniform(0.01, 0.6, size=(height, width, N_BANDS)).astype(np.float32)
    n_pixels = height * width
    print(
        f"\n== Throughput: {height} x {width} = {n_pixels / 1e6:.1f} Mpx, {N_BANDS} bands, "
        f"float32 in memory ({scene.nbytes / 2**20:.0f} MB)"
    )
    kernels = "numba kernels" if _evaluator._compiled_kernels() else "numba missing: numpy only"
    results = {}
    for n_classes in (2, 3):
        clf = fit_model(n_classes)
        methods = {
            "naive torch forward, 1 thread": lambda c=clf: naive_torch_predict(c, scene, 1),
            "naive torch forward, 2 threads": lambda c=clf: naive_torch_predict(c, scene, 2),
            "clf.predict on the pixel table": lambda c=clf: c.predict(scene.reshape(-1, N_BANDS)),
            "sknd.raster.predict, n_jobs=1": lambda c=clf: raster.predict(c, scene, n_jobs=1),
            "sknd.raster.predict, n_jobs=2": lambda c=clf: raster.predict(c, scene, n_jobs=2),
            "raster.predict without numba, n_jobs=1": lambda c=clf: without_numba(
                raster.predict, c, scene, n_jobs=1
            ),
        }
        start = time.perf_counter()
        raster.predict(clf, scene[:1, :1])
        first_call = time.perf_counter() - start
        reference = naive_torch_predict(clf, scene, 1)
        agree = np.mean(raster.predict(clf, scene, n_jobs=2) == reference)
        times = {name: [] for name in methods}
        cpu = {name: [] for name in methods}
        for _ in range(args.repeats):
            for name, method in methods.items():
                start, start_cpu = time.perf_counter(), time.process_time()
                method()
                times[name].append(time.perf_counter() - start)
                cpu[name].append(time.process_time() - start_cpu)
        print(
            f"\n  depth-2 ND classifier, {n_classes} classes "
            f"({clf.n_parameters_} parameters); labels equal to the naive forward on "
            f"{agree:.4%} of pixels; first call {first_call:.2f} s ({kernels})"
        )
        # Wall-clock rates suffer when other processes take the cores; the rate per
        # CPU-second of this process (all its threads) is steadier on a shared machine.
        print(f"  {'method':<38} {'best Mpx/s':>10} {'median Mpx/s':>13} {'Mpx/CPU-s':>10}")
        rates, cpu_rates = {}, {}
        for name, runs in times.items():
            rates[name] = n_pixels / min(runs) / 1e6
            cpu_rates[name] = n_pixels / min(cpu[name]) / 1e6
            median = n_pixels / float(np.median(runs)) / 1e6
            print(f"  {name:<38} {rates[name]:>10.2f} {median:>13.2f} {cpu_rates[name]:>10.2f}")
        naive_names = ["naive torch forward, 1 thread", "naive torch forward, 2 threads"]
        raster_names = ["sknd.raster.predict, n_jobs=1", "sknd.raster.predict, n_jobs=2"]
        # Each side in its best configuration (on busy cores two threads can lose).
        fast = max(rates[name] for name in raster_names)
        naive = max(rates[name] for name in naive_names)
        fast_cpu = cpu_rates["sknd.raster.predict, n_jobs=1"]
        naive_cpu = max(cpu_rates[name] for name in naive_names)
        print(
            f"  ratio best raster.predict / best naive forward, wall clock: {fast / naive:.2f}x "
            f"(target >= 3x); {fast:.1f} Mpx/s (target >= 15 on 2 cores; n_jobs=2: "
            f"{rates[raster_names[1]]:.1f})"
        )
        print(
            f"  ratio per CPU-second (raster n_jobs=1 / best naive): {fast_cpu / naive_cpu:.2f}x;"
            f" 2 x {fast_cpu:.1f} = {2 * fast_cpu:.1f} Mpx/s on 2 free cores if threads scale"
        )
        fallback = rates["raster.predict without numba, n_jobs=1"]
        print(
            f"  without numba (numpy fallback), n_jobs=1: {fallback / naive:.2f}x the best naive "
            "forward, wall clock"
        )
        results[n_classes] = {"rates": rates, "cpu_rates": cpu_rates, "agree": agree}
    return results


# ---------------------------------------------------------------------- memory
def memory_child(args):
    """Run in a fresh process: predict the lazy 100-Mpx scene, print peak RSS as JSON."""
    import dask
    import dask.array as da
    import xarray as xr

    from sknd import raster

    clf = fit_model(n_classes=3)
    side = args.side
    chunk = 1024
    rng = da.random.default_rng(0)
    # float32 draws directly: half the generation cost of float64 + astype.
    data = rng.random(size=(N_BANDS, side, side), dtype=np.float32, chunks=(N_BANDS, chunk, chunk))
    data = np.float32(0.01) + np.float32(0.59) * data
    # A no-data strip along the top of the scene, as at a swath edge.
    rows = da.arange(side, chunks=chunk)[None, :, None]
    data = da.where(rows < side // 50, np.float32(np.nan), data)
    scene = xr.DataArray(
        data,
        dims=("band", "y", "x"),
        coords={"y": np.arange(side) * -10.0, "x": np.arange(side) * 10.0},
    )
    labels = raster.predict(clf, scene, fill_value=-1)
    assert dask.is_dask_collection(labels)

    start = time.perf_counter()
    counts = dask.compute(*[(labels == value).sum() for value in [-1, *clf.classes_]])
    elapsed = time.perf_counter() - start
    stored = None
    if args.store:
        path = os.path.join(tempfile.gettempdir(), f"sknd_bench_labels_{os.getpid()}.int8")
        target = np.memmap(path, dtype=np.int8, mode="w+", shape=(side, side))
        try:
            start = time.perf_counter()
            da.store(labels.data.astype(np.int8), target, lock=False)
            stored = time.perf_counter() - start
            target.flush()
        finally:
            del target
            os.remove(path)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kB on Linux
    print(
        json.dumps(
            {
                "pixels": side * side,
                "counts": {str(k): int(v) for k, v in zip([-1, *clf.classes_], counts)},
                "seconds_histogram": elapsed,
                "seconds_store": stored,
                "peak_rss_mb": peak / 1024,
                "vm_hwm_mb": _vm_hwm_mb(),
                "chunks": [chunk, chunk],
                "scheduler_threads": dask.config.get("num_workers", None) or os.cpu_count(),
            }
        )
    )


def memory(args):
    side = 3000 if args.quick else 10_000
    print(
        f"\n== Peak memory: lazy dask scene {side} x {side} = {side * side / 1e6:.0f} Mpx, "
        f"{N_BANDS} bands float32 ({side * side * N_BANDS * 4 / 2**30:.1f} GB if materialized)"
    )
    command = [sys.executable, __file__, "--child-memory", "--side", str(side)]
    if args.store:
        command.append("--store")
    # A fresh process: its peak is the measurement (see main() for why it runs first).
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        print(completed.stderr)
        raise SystemExit("memory child failed")
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    baseline = _import_baseline_mb()
    budget_mb = 2048
    print(f"  labels histogram: {result['counts']}")
    print(
        f"  time: {result['seconds_histogram']:.1f} s for the histogram pass "
        f"({result['pixels'] / result['seconds_histogram'] / 1e6:.1f} Mpx/s incl. random "
        "number generation)"
        + (
            f", {result['seconds_store']:.1f} s for the memmap store pass"
            if result["seconds_store"]
            else ""
        )
    )
    print(
        f"  peak RSS {result['peak_rss_mb']:.0f} MB = {result['peak_rss_mb'] / budget_mb:.2f} "
        f"of the 2 GB budget (ru_maxrss; VmHWM {result['vm_hwm_mb']:.0f} MB; python + torch "
        f"+ xarray + dask + sknd imported: {baseline:.0f} MB)"
    )
    return result


def _vm_hwm_mb():
    """Peak resident memory of this process's own address space (Linux), in MB."""
    try:
        with open("/proc/self/status") as f:
            line = next(line for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return None
    return int(line.split()[1]) / 1024


def _import_baseline_mb():
    code = (
        "import resource, sknd.raster, xarray, dask.array, torch;"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def machine():
    model = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        pass
    from importlib.metadata import version  # no torch import: keeps this process small

    return (
        f"{time.strftime('%Y-%m-%d %H:%M')}, {model}, {os.cpu_count()} cores, "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"python {platform.python_version()}, numpy {np.__version__}, torch {version('torch')}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--only", choices=["throughput", "memory"])
    parser.add_argument(
        "--store", action="store_true", help="also write the label map into a numpy memmap in /tmp"
    )
    parser.add_argument("--child-memory", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--side", type=int, default=10_000, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_memory:
        memory_child(args)
        return
    print(machine())
    # Memory first: a child's ru_maxrss starts from its parent's resident size at fork
    # (Linux carries it over exec), so the parent must still be small here.
    if args.only in (None, "memory"):
        memory(args)
    if args.only in (None, "throughput"):
        throughput(args)
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
