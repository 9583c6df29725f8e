"""Start-up costs in fresh processes, and GridSearchCV(n_jobs=2) against n_jobs=1 (issues 14, 60).

Run: ``PYTHONPATH=. python benchmarks/bench_startup.py [--part imports|grid|later ...]
[--repeats N]`` (no thread variables needed: the script sets them per environment).

Every part runs in the four environments of ``_environments.py``, side by side in one
run: {``OMP_NUM_THREADS=1``, no thread variables} x {idle, two busy processes started by
the script}, with the load average at the start of each. Every measurement runs in a fresh
Python process (``sys.executable -c ...``), the settings interleaved, and reports the
median of ``--repeats`` runs:

1. **Imports** (``imports``). Wall time of the whole process (interpreter start included)
   for ``pass``, ``import torch``, ``import sklearn.base``, both, ``import sknd`` and
   ``import sknd`` plus a first tiny fit (``NDClassifier(max_epochs=2)`` on 200 x 4),
   and the ratio of the last to ``import torch`` (issue 14's target: at most 1.5).
2. **Grid search** (``grid``). Issue 60's target: ``GridSearchCV(NDClassifier(
   random_state=0), {"depth": [2, 3], "epsilon": [1e-6, 1e-2]})`` (4 candidates, the
   default 5 folds) on the shipped forest-type data with ``n_jobs=1`` and ``n_jobs=2``:
   the time of ``fit`` after the imports, which for ``n_jobs=2`` includes starting the
   loky worker processes and their imports (what a user pays the first time), and the
   ratio parallel / serial (target: at most 1 on 2 cores). joblib starts the workers
   with a thread variable of cores // ``n_jobs`` (1 here) where none is set.
3. **Later searches of a session** (``later``). In one process, after a first
   ``n_jobs=2`` search has started the workers (loky keeps them for the next calls, as in
   a notebook), the same search with ``n_jobs=1`` and ``n_jobs=2`` alternately: the ratio
   without start-up.

With ``PYTHONDONTWRITEBYTECODE`` set (the header says), sknd's own modules are compiled
from source in every process; an installed sknd has its bytecode cached.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from functools import partial

from _environments import load_average, measure_in_environments, versions

PROGRAMS = {
    "python -c pass": "pass",
    "import torch": "import torch",
    "import sklearn.base": "import sklearn.base",
    "import torch, sklearn.base": "import torch, sklearn.base",
    "import sknd": "import sknd",
    "import sknd + first tiny fit": (
        "import numpy as np; import sknd; "
        "X = np.random.default_rng(0).uniform(0.05, 0.5, (200, 4)); "
        "y = (X[:, 0] > X[:, 1]).astype(int); "
        "sknd.NDClassifier(max_epochs=2, random_state=0).fit(X, y)"
    ),
}

#: Issue 60's grid search: ``search(n_jobs)`` returns its wall seconds.
SEARCH = """
import json, statistics, time
from sklearn.model_selection import GridSearchCV
from sknd import NDClassifier
from sknd.datasets import load_forest_type
X, y = load_forest_type(return_X_y=True)
def search(n_jobs):
    start = time.perf_counter()
    grid = {{"depth": [2, 3], "epsilon": [1e-6, 1e-2]}}
    GridSearchCV(NDClassifier(random_state=0), grid, n_jobs=n_jobs).fit(X, y)
    return time.perf_counter() - start
"""
FRESH_SEARCH = SEARCH + "print(json.dumps({{'fit': search({n_jobs})}}))"
LATER_SEARCHES = (
    SEARCH
    + """
first = search(2)
times = {{1: [], 2: []}}
for _ in range({repeats}):
    for n_jobs in times:
        times[n_jobs].append(search(n_jobs))
print(json.dumps({{"first": first, **{{str(n): statistics.median(t) for n, t in times.items()}}}}))
"""
)


def run(code, env):
    """``(wall s of the whole process, the JSON it printed or None)``."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(done.stderr)
    lines = done.stdout.strip().splitlines()
    return wall, json.loads(lines[-1]) if lines else None


def imports(repeats, env):
    samples = {name: [] for name in PROGRAMS}
    for _ in range(repeats):
        for name, code in PROGRAMS.items():
            samples[name].append(run(code, env)[0])
    medians = {name: statistics.median(v) for name, v in samples.items()}
    print("1. fresh processes, wall s (interpreter start included), median")
    for name, value in medians.items():
        spread = f"{min(samples[name]):.2f}-{max(samples[name]):.2f}"
        print(f"  {name:32s} {value:6.2f}   (range {spread})", flush=True)
    return medians["import sknd + first tiny fit"] / medians["import torch"]


def grid_searches(repeats, env):
    samples = {1: [], 2: []}
    for _ in range(repeats):
        for n_jobs in samples:
            samples[n_jobs].append(run(FRESH_SEARCH.format(n_jobs=n_jobs), env)[1]["fit"])
    serial, parallel = (statistics.median(samples[n]) for n in (1, 2))
    print(
        "2. GridSearchCV(NDClassifier, depth x epsilon, 5 folds) on forest type, fresh process "
        f"each, fit s, median: n_jobs=1 {serial:6.2f} (range {min(samples[1]):.2f}-"
        f"{max(samples[1]):.2f})  n_jobs=2 {parallel:6.2f} (range {min(samples[2]):.2f}-"
        f"{max(samples[2]):.2f})",
        flush=True,
    )
    return parallel / serial


def later_searches(repeats, env):
    result = run(LATER_SEARCHES.format(repeats=repeats), env)[1]
    serial, parallel = result["1"], result["2"]
    print(
        "3. the same search, later in one process (workers already started), fit s, median: "
        f"first n_jobs=2 search (starts the workers) {result['first']:.2f}; then "
        f"n_jobs=1 {serial:.2f}  n_jobs=2 {parallel:.2f}",
        flush=True,
    )
    return parallel / serial


#: The parts: the function measuring one environment, and what its ratio is.
PARTS = {
    "imports": (imports, "(import sknd + first tiny fit) / import torch (target <= 1.5)"),
    "grid": (grid_searches, "grid search, fresh: n_jobs=2 / n_jobs=1 (target <= 1)"),
    "later": (later_searches, "grid search, workers started: n_jobs=2 / n_jobs=1"),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=PARTS, action="append", help="default: all")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(
        f"# bench_startup: {versions()}, median of {args.repeats}, {load_average()}, "
        f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE')}"
    )
    ratios = {}
    for part in args.part or PARTS:
        measure, _ = PARTS[part]
        ratios[part] = measure_in_environments(partial(measure, args.repeats))
    for part, results in ratios.items():
        print(f"\n{PARTS[part][1]}")
        for (threads, load), ratio in results.items():
            print(f"  {threads + ', ' + load:42s} {ratio:5.2f}")


if __name__ == "__main__":
    main()
