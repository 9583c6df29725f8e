"""onnxruntime throughput of an exported NDClassifier against sknd.raster (issue 15).

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_onnx.py``

Fits ``NDClassifier(depth=2)`` on 2,000 x 10 samples, exports it with
:func:`sknd.onnx.to_onnx` and times ``predict_proba`` of a 10-band 1024 x 1024
float32 scene: onnxruntime on CPU (one intra-op thread, and all cores), as one
``session.run`` on the whole scene and through :func:`sknd.onnx.run` (input
checked, blocks of 16384 rows; issue 24), against ``sknd.raster.predict_proba``
(sknd's CPU fast path, one job and ``n_jobs=-1``). Prints the agreement, the
pixels per second of each and its time over ``sknd.raster`` with one job;
wall clock, median of 3.
"""

import os
import statistics
import time

import numpy as np
import onnxruntime as ort

from sknd import NDClassifier, raster
from sknd.onnx import run, to_onnx


def median_seconds(function, repeats=3):
    function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    rng = np.random.default_rng(0)
    X = rng.uniform(0.05, 0.5, (2000, 10))
    y = (X[:, 3] - X[:, 2]) / (X[:, 3] + X[:, 2]) > 0
    clf = NDClassifier(depth=2, max_epochs=20, random_state=0).fit(X, y)
    scene = rng.uniform(0.05, 0.5, (1024, 1024, 10)).astype(np.float32)
    table = scene.reshape(-1, 10)
    model = to_onnx(clf).SerializeToString()
    results = {}
    for threads in (1, os.cpu_count()):
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        results[f"onnxruntime, {threads} thread(s)"] = median_seconds(
            lambda session=session: session.run(["probabilities"], {"X": table})
        )
        results[f"sknd.onnx.run, {threads} thread(s)"] = median_seconds(
            lambda session=session: run(session, table)
        )
    for n_jobs in (1, -1):
        results[f"sknd.raster n_jobs={n_jobs}"] = median_seconds(
            lambda n_jobs=n_jobs: raster.predict_proba(clf, scene, n_jobs=n_jobs)
        )
    onnx_proba = session.run(["probabilities"], {"X": table})[0]
    blocks_proba = run(session, table)["probabilities"]
    sknd_proba = raster.predict_proba(clf, scene).reshape(-1, 2)
    print(
        f"# bench_onnx: {os.cpu_count()} cores; max |onnx - raster| "
        f"{np.abs(onnx_proba - sknd_proba).max():.2e}; blocks equal one call: "
        f"{np.array_equal(blocks_proba, onnx_proba)}"
    )
    reference = results["sknd.raster n_jobs=1"]
    for name, seconds in results.items():
        print(
            f"{name:32s} {seconds * 1e3:8.1f} ms  {table.shape[0] / seconds / 1e6:6.1f} Mpx/s"
            f"  {seconds / reference:5.2f}x"
        )


if __name__ == "__main__":
    main()
