"""Out-of-core training: one pass of ``NDClassifier.partial_fit`` over a dask array (issue 14).

Builds a lazy ``n_rows x 10`` float32 reflectance array with dask (never materialized:
blocks are drawn when the training reaches them), labels each row by a known
normalized difference, streams it once through dask-ml's ``Incremental`` wrapper
(``partial_fit`` per block) and predicts a held-out dask array lazily. Prints the time,
the peak resident memory of the process and the held-out accuracy.

Run::

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_out_of_core.py --rows 100_000_000

(4 GB of float32 bands; peak memory target: under 2 GB). Needs ``dask-ml``
(``pip install -e ".[dask]"`` in the checkout).
"""

import argparse
import platform
import resource
import time

import dask
import dask.array as da
import numpy as np
from dask_ml.wrappers import Incremental

from sknd import NDClassifier

N_BANDS = 10
# The label rule: the normalized difference of bands 7 and 3 with band 7 weighted 1.5
# (k = 1.5), above 0.2 -- a learned index can represent it exactly, the classic one not.
NIR, RED, K, THRESHOLD = 7, 3, 1.5, 0.2


def make_data(n_rows, block_rows, seed):
    """Lazy bands in [0.05, 0.5] and their labels (dask arrays, one block per chunk)."""
    rng = da.random.default_rng(seed)
    X = 0.05 + 0.45 * rng.random((n_rows, N_BANDS), chunks=(block_rows, N_BANDS), dtype=np.float32)
    nd = (K * X[:, NIR] - X[:, RED]) / (K * X[:, NIR] + X[:, RED])
    return X, (nd > THRESHOLD).astype(np.int64)


def peak_rss_gb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="training rows")
    parser.add_argument("--block-rows", type=int, default=1_000_000, help="rows per block")
    parser.add_argument("--batch-size", type=int, default=4096)
    args = parser.parse_args()

    X, y = make_data(args.rows, args.block_rows, seed=0)
    X_test, y_test = make_data(200_000, 100_000, seed=1)
    size_gb = X.nbytes / 2**30
    print(
        f"{platform.processor() or platform.machine()}, {args.rows:,} x {N_BANDS} float32 "
        f"({size_gb:.1f} GiB, {X.numblocks[0]} blocks), batch {args.batch_size}; "
        f"peak RSS before training {peak_rss_gb():.2f} GiB"
    )
    model = Incremental(
        NDClassifier(batch_size=args.batch_size, random_state=0), shuffle_blocks=False
    )
    start = time.perf_counter()
    # One thread: blocks are drawn and trained on one at a time.
    with dask.config.set(scheduler="synchronous"):
        model.fit(X, y, classes=[0, 1])
    seconds = time.perf_counter() - start
    predicted = model.predict(X_test)  # lazy: a dask array
    assert isinstance(predicted, da.Array)
    accuracy = float((predicted == y_test).mean().compute())
    print(
        f"one pass: {seconds:.1f} s ({args.rows / seconds / 1e6:.2f} M rows/s); "
        f"peak RSS {peak_rss_gb():.2f} GiB; held-out accuracy {accuracy:.4f}; "
        f"learned k of ({NIR}, {RED}): see below"
    )
    table = model.estimator_.indices_
    row = table[(table.band_i == f"x{RED}") & (table.band_j == f"x{NIR}")]
    print(row[["band_i", "band_j", "k", "importance"]].to_string(index=False))


if __name__ == "__main__":
    main()
