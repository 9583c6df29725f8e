"""The four environments a benchmark's child processes run in (issue 60).

Users do not set thread variables, and their cores are often busy. A benchmark that
times child processes measures each setting in four environments, side by side in one
run: {``OMP_NUM_THREADS=1`` (what every benchmark here set before issue 60), no thread
variables at all (as users run it)} x {idle, under the load of two busy processes that
:func:`measure_in_environments` starts and kills}. "Idle" means that this benchmark adds
no load: the machine's load average, printed at the start of each cell, says what other
users added.
"""

import contextlib
import os
import platform
import subprocess
import sys

#: The variables that size thread pools (joblib's list: OpenMP, OpenBLAS, MKL, BLIS,
#: Accelerate, numba, numexpr): all removed from the children's environment where none
#: are set.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMBA_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
#: The variables the benchmarks set before issue 60.
SET = {"OMP_NUM_THREADS": "1"}
THREADS = ("OMP_NUM_THREADS=1", "no thread variables")
LOADS = ("idle", "2 busy processes")


def environment(threads):
    """This process's environment with ``SET`` (``THREADS[0]``) or no thread variables."""
    env = {key: value for key, value in os.environ.items() if key not in THREAD_VARIABLES}
    return {**env, **SET} if threads == THREADS[0] else env


@contextlib.contextmanager
def busy_processes(n):
    """Run the block while ``n`` pure-Python busy loops run in processes of their own."""
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for process in busy:
            process.kill()
        for process in busy:
            process.wait()


def versions():
    """Python, torch, scikit-learn and numpy versions, the machine and its cores."""
    import numpy
    import sklearn
    import torch

    return (
        f"python {platform.python_version()}, torch {torch.__version__}, scikit-learn "
        f"{sklearn.__version__}, numpy {numpy.__version__}, {platform.machine()}, "
        f"{os.cpu_count()} cores"
    )


def load_average():
    return "load average {:.2f}, {:.2f}, {:.2f} (1, 5, 15 min)".format(*os.getloadavg())


def measure_in_environments(measure):
    """``{(threads, load): measure(env)}`` over the four environments, idle ones first.

    ``measure(env)`` runs its child processes with ``env``; the two busy processes run
    through both loaded cells. Prints each cell's name and the load average at its start
    (the 1-minute figure lags a load started a moment before).
    """
    results = {}
    for load, n_busy in zip(LOADS, (0, 2)):
        with busy_processes(n_busy):
            for threads in THREADS:
                print(f"\n## {threads}, {load}: {load_average()}", flush=True)
                results[threads, load] = measure(environment(threads))
    print(f"\nat the end: {load_average()}", flush=True)
    return results
