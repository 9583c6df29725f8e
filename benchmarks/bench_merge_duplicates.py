"""Cost of merging duplicate training rows (sknd._data._weights.merge_duplicates) on 1e6 rows.

Every fit merges exact duplicate rows (same bands, target and group) into weighted rows in
a canonical order. This times the distinct-row search it uses (a 64-bit row hash, one
integer sort) against sorting the rows' bytes (``np.unique`` of a void view), next to a
plain sort of 1e6 floats as the machine's yardstick, in one process, twice.

Run::

    PYTHONPATH=. python benchmarks/bench_merge_duplicates.py [--rows 1000000] [--bands 10]
"""

import argparse
import time

import numpy as np

from sknd._data import _weights


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--bands", type=int, default=10)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (args.rows, args.bands))
    y = rng.integers(0, 5, args.rows)
    words = _weights._row_words(X, [np.unique(y, return_inverse=True)[1]])
    for _ in range(2):
        start = time.perf_counter()
        _weights._unique_rows(words)
        hashed = time.perf_counter() - start
        start = time.perf_counter()
        rows = np.ascontiguousarray(words).view(np.dtype((np.void, 8 * words.shape[1])))
        np.unique(rows.ravel(), return_index=True, return_inverse=True)
        by_bytes = time.perf_counter() - start
        start = time.perf_counter()
        np.sort(rng.uniform(size=args.rows))
        floats = time.perf_counter() - start
        print(
            f"hash {hashed:.2f}s  byte sort {by_bytes:.2f}s  "
            f"(sort of {args.rows} floats {floats:.2f}s)"
        )


if __name__ == "__main__":
    main()
