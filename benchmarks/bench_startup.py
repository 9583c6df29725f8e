"""Start-up costs in fresh processes, and GridSearchCV(n_jobs=2) against n_jobs=1 (issue 14).

Run: ``PYTHONPATH=. python benchmarks/bench_startup.py [--quick] [--repeats N]``
(do not set OMP_NUM_THREADS: joblib sets it in its workers, as for users).

Every measurement runs in a fresh Python process (``sys.executable -c ...``), the
settings interleaved, and reports the median of ``--repeats`` runs:

1. **Imports.** Wall time of the whole process (interpreter start included) for
   ``pass``, ``import torch``, ``import sklearn.base``, both, ``import sknd`` and
   ``import sknd`` plus a first tiny fit (``NDClassifier(max_epochs=2)`` on 200 x 4),
   and the ratio of the last to ``import torch`` (issue 14's target: at most 1.5).
2. **Grid search.** ``GridSearchCV(NDClassifier(max_epochs=E, early_stopping=False),
   4 candidates, cv=3)`` on ``N`` x 10 rows with ``n_jobs=1`` and ``n_jobs=2``: the
   time of ``fit`` after the imports, which for ``n_jobs=2`` includes starting the loky
   worker processes and their imports (what a user pays the first time), and the ratio
   parallel / serial.
   The tiny grid of the issue (300 rows, 5 epochs) and larger ones show where
   ``n_jobs=2`` starts to pay off.
3. **Later searches of a session.** In one process, after a first ``n_jobs=2`` search
   has started the workers (loky keeps them for the next calls, as in a notebook), the
   tiny grid with ``n_jobs=1`` and ``n_jobs=2`` alternately: the ratio without start-up.

With ``PYTHONDONTWRITEBYTECODE`` set (the header says), sknd's own modules are compiled
from source in every process; an installed sknd has its bytecode cached.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

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

SEARCH = """
import json, time
start = time.perf_counter()
import numpy as np
from sklearn.model_selection import GridSearchCV
from sknd import NDClassifier
imported = time.perf_counter()
rng = np.random.default_rng(0)
X = rng.uniform(0.05, 0.5, size=({n_samples}, 10))
y = (X[:, 1] > X[:, 5]).astype(int)
grid = {{"lr": [0.01, 0.03], "depth": [2, 3]}}
model = NDClassifier(max_epochs={epochs}, early_stopping=False, random_state=0)
search = GridSearchCV(model, grid, cv=3, n_jobs={n_jobs})
fit_start = time.perf_counter()
search.fit(X, y)
print(json.dumps({{"imports": imported - start, "fit": time.perf_counter() - fit_start}}))
"""

WARM_WORKERS = """
import json, statistics, time
import numpy as np
from sklearn.model_selection import GridSearchCV
from sknd import NDClassifier
rng = np.random.default_rng(0)
X = rng.uniform(0.05, 0.5, size=(300, 10))
y = (X[:, 1] > X[:, 5]).astype(int)
grid = {{"lr": [0.01, 0.03], "depth": [2, 3]}}
def search(n_jobs):
    model = NDClassifier(max_epochs=5, early_stopping=False, random_state=0)
    start = time.perf_counter()
    GridSearchCV(model, grid, cv=3, n_jobs=n_jobs).fit(X, y)
    return time.perf_counter() - start
first = search(2)
times = {{1: [], 2: []}}
for _ in range({repeats}):
    for n_jobs in times:
        times[n_jobs].append(search(n_jobs))
print(json.dumps({{"first": first, **{{str(n): statistics.median(t) for n, t in times.items()}}}}))
"""

#: (rows, epochs) of the grid searches: the issue's tiny grid first, then larger ones.
GRIDS = ((300, 5), (2000, 50), (5000, 200))


def run(code):
    """``(wall s of the whole process, the JSON it printed or None)``."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(done.stderr)
    lines = done.stdout.strip().splitlines()
    return wall, json.loads(lines[-1]) if lines else None


def imports(repeats):
    samples = {name: [] for name in PROGRAMS}
    for _ in range(repeats):
        for name, code in PROGRAMS.items():
            samples[name].append(run(code)[0])
    medians = {name: statistics.median(v) for name, v in samples.items()}
    print("\n1. fresh processes, wall s (interpreter start included), median")
    for name, value in medians.items():
        spread = f"{min(samples[name]):.2f}-{max(samples[name]):.2f}"
        print(f"  {name:32s} {value:6.2f}   (range {spread})")
    ratio = medians["import sknd + first tiny fit"] / medians["import torch"]
    print(f"  (import sknd + first tiny fit) / import torch: {ratio:.2f}   <- target <= 1.5")


def grid_searches(repeats, grids):
    print("\n2. GridSearchCV(NDClassifier, 4 candidates, cv=3), fresh process each, fit s, median")
    for n_samples, epochs in grids:
        samples = {1: [], 2: []}
        for _ in range(repeats):
            for n_jobs in samples:
                code = SEARCH.format(n_samples=n_samples, epochs=epochs, n_jobs=n_jobs)
                samples[n_jobs].append(run(code)[1]["fit"])
        serial, parallel = (statistics.median(samples[n]) for n in (1, 2))
        print(
            f"  {n_samples:5d} x 10, {epochs:3d} epochs: n_jobs=1 {serial:6.2f}  "
            f"n_jobs=2 {parallel:6.2f}  parallel / serial {parallel / serial:.2f}   "
            f"(n_jobs=2 range {min(samples[2]):.2f}-{max(samples[2]):.2f}; "
            f"load {os.getloadavg()[0]:.1f})",
            flush=True,
        )


def later_searches(repeats):
    result = run(WARM_WORKERS.format(repeats=repeats))[1]
    serial, parallel = result["1"], result["2"]
    print("\n3. tiny grid, later searches in one process (workers already started), fit s, median")
    print(
        f"  first n_jobs=2 search (starts the workers) {result['first']:.2f}; then "
        f"n_jobs=1 {serial:.3f}  n_jobs=2 {parallel:.3f}  parallel / serial "
        f"{parallel / serial:.2f}   (load {os.getloadavg()[0]:.1f})"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, the tiny grid only")
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args()
    repeats = args.repeats or (3 if args.quick else 7)
    import sklearn
    import torch

    print(
        f"# bench_startup: python {platform.python_version()}, torch {torch.__version__}, "
        f"scikit-learn {sklearn.__version__}, {platform.machine()}, {os.cpu_count()} cores, "
        f"median of {repeats}, load average {os.getloadavg()[0]:.1f}, "
        f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE')}"
    )
    imports(repeats)
    grid_searches(repeats, GRIDS[:1] if args.quick else GRIDS)
    later_searches(repeats)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
