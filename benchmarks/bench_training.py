"""NDClassifier fit time against scikit-learn's MLPClassifier (issue 5, target 2).

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_training.py [--quick]``
or, for the large-batch section (issue 14), ``... bench_training.py --large [--quick]``.

Work: 2,000 x 10 binary samples, 150 epochs, no early stopping, one thread
(torch and BLAS). Every configuration is fitted ``--repeats`` times,
interleaved with the others, and the median is reported, both as CPU time of
this process (robust to other processes on a shared machine) and as wall time.
Ratios are ND time over the MLPClassifier time of the same batch size:

- ``NDClassifier(depth=2, batch_size=32)`` vs ``MLPClassifier((45,), batch_size=32)``
  (the target: ratio <= 1);
- depth 3 and 4 against the reference and against an MLPClassifier with as many
  hidden layers of 45 units;
- batch 256 for both;
- for context, the same NDClassifier through skorch's autograd ``train_step``
  (the fused step disabled) and a plain PyTorch MLP loop (autograd,
  ``torch.optim.Adam``, slicing batches).

``--large`` (issue 14): ``NDClassifier(depth=2)`` (default recipe and pairs) against
``MLPClassifier((45,))`` on 200,000 x 10 and 2,000,000 x 10 float32 reflectance
(``--quick``: 200,000 only), batch 1024 and 4096, ``LARGE_EPOCHS`` epochs for both
(``early_stopping=False``; the MLP with ``tol=0`` and ``n_iter_no_change`` above the
epochs), one thread. Two kinds of fit, each repeated and interleaved ND / MLP:

- *first*: the first fit of a fresh Python process (which imports this script), timed
  from after the imports and the data, so it includes what a process's first fit pays
  (allocator, lazy torch and scikit-learn set-up) but not the interpreter start and
  the imports, which are reported separately;
- *warm*: fits in this process after a small warm-up fit.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np
import sklearn
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier
from threadpoolctl import threadpool_limits

from sknd import NDClassifier
from sknd._training._fused import FusedTrainer

N_SAMPLES, N_FEATURES, EPOCHS = 2000, 10, 150
LARGE_SIZES, LARGE_BATCHES, LARGE_EPOCHS = (200_000, 2_000_000), (1024, 4096), 10


def make_data(n_samples=N_SAMPLES, dtype=np.float64):
    rng = np.random.default_rng(0)
    X = rng.uniform(0.05, 0.5, size=(n_samples, N_FEATURES)).astype(dtype)
    # A ratio of two bands plus noise: a task normalized differences suit.
    y = (X[:, 3] - X[:, 2]) / (X[:, 3] + X[:, 2]) + rng.normal(0, 0.05, n_samples) > 0
    return X, y.astype(int)


def mlp(hidden, batch_size, epochs=EPOCHS):
    # n_iter_no_change > max_iter: sklearn's training-loss stopping rule never fires.
    return MLPClassifier(
        hidden_layer_sizes=hidden,
        batch_size=batch_size,
        max_iter=epochs,
        early_stopping=False,
        n_iter_no_change=epochs + 1,
        tol=0.0,
        random_state=0,
    )


def nd(depth, batch_size, epochs=EPOCHS):
    return NDClassifier(
        depth=depth, max_epochs=epochs, early_stopping=False, batch_size=batch_size, random_state=0
    )


class AutogradPath:
    """Fit an estimator with the fused training step disabled."""

    def __init__(self, estimator):
        self.estimator = estimator

    def fit(self, X, y):
        original = FusedTrainer.build
        FusedTrainer.build = classmethod(lambda cls, *args: None)
        try:
            self.estimator.fit(X, y)
        finally:
            FusedTrainer.build = original
        self.n_iter_ = self.estimator.n_iter_
        return self


class TorchLoop:
    """A plain PyTorch MLP loop: autograd, torch.optim.Adam, tensor slicing."""

    n_iter_ = EPOCHS

    def __init__(self, batch_size):
        self.batch_size = batch_size

    def fit(self, X, y):
        generator = torch.Generator().manual_seed(0)
        with torch.random.fork_rng():
            torch.manual_seed(0)
            module = torch.nn.Sequential(
                torch.nn.Linear(N_FEATURES, 45), torch.nn.ReLU(), torch.nn.Linear(45, 1)
            )
        optimizer = torch.optim.Adam(module.parameters(), lr=1e-3, weight_decay=1e-4)
        loss_fn = torch.nn.BCEWithLogitsLoss()
        X = torch.tensor(X, dtype=torch.float32)
        y = torch.tensor(y, dtype=torch.float32).reshape(-1, 1)
        for _ in range(EPOCHS):
            order = torch.randperm(len(X), generator=generator)
            Xs, ys = X[order], y[order]
            for start in range(0, len(X), self.batch_size):
                optimizer.zero_grad()
                loss = loss_fn(
                    module(Xs[start : start + self.batch_size]), ys[start : start + self.batch_size]
                )
                loss.backward()
                optimizer.step()
        return self


def configurations(quick):
    configs = {
        "MLPClassifier (45,) b32": lambda: mlp((45,), 32),
        "NDClassifier depth 2 b32": lambda: nd(2, 32),
        "NDClassifier depth 3 b32": lambda: nd(3, 32),
        "NDClassifier depth 4 b32": lambda: nd(4, 32),
        "MLPClassifier (45, 45) b32": lambda: mlp((45, 45), 32),
        "MLPClassifier (45, 45, 45) b32": lambda: mlp((45, 45, 45), 32),
        "MLPClassifier (45,) b256": lambda: mlp((45,), 256),
        "NDClassifier depth 2 b256": lambda: nd(2, 256),
    }
    if not quick:
        configs["NDClassifier depth 2 b32, autograd step"] = lambda: AutogradPath(nd(2, 32))
        configs["plain torch MLP loop b32"] = lambda: TorchLoop(32)
    return configs


def large_model(kind, batch_size):
    """The ND or MLP model of the large-batch section."""
    if kind == "ND":
        return nd(2, batch_size, LARGE_EPOCHS)
    return mlp((45,), batch_size, LARGE_EPOCHS)


def timed_fit(model, X, y):
    """``(CPU s, wall s)`` of ``model.fit(X, y)``, checking the epoch count."""
    start_cpu, start_wall = time.process_time(), time.perf_counter()
    model.fit(X, y)
    seconds = time.process_time() - start_cpu, time.perf_counter() - start_wall
    assert model.n_iter_ == LARGE_EPOCHS, (type(model).__name__, model.n_iter_)
    return seconds


def first_fit(kind, n_samples, batch_size, import_seconds):
    """Child process of ``--large``: print the imports' and the first fit's times as JSON."""
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    X, y = make_data(n_samples, np.float32)
    with threadpool_limits(1):
        cpu, wall = timed_fit(large_model(kind, batch_size), X, y)
    print(json.dumps({"imports": import_seconds, "cpu": cpu, "wall": wall}))


def first_fit_in_new_process(kind, n_samples, batch_size):
    # Imports timed in the child: this module's (sknd, torch, scikit-learn's MLP).
    code = (
        "import sys, time; start = time.perf_counter(); "
        f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
        "import bench_training; "
        f"bench_training.first_fit({kind!r}, {n_samples}, {batch_size}, "
        "time.perf_counter() - start)"
    )
    command = [sys.executable, "-c", code]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    return json.loads(done.stdout.splitlines()[-1])


def large_batches(quick, repeats):
    """The ``--large`` section: warm and first-in-process fits, ND / MLP ratios."""
    sizes = LARGE_SIZES[:1] if quick else LARGE_SIZES
    print(
        f"# bench_training --large: torch {torch.__version__}, scikit-learn "
        f"{sklearn.__version__}, {platform.machine()}, {os.cpu_count()} cores, 1 thread; "
        f"{N_FEATURES} float32 bands, {LARGE_EPOCHS} epochs, early_stopping=False, "
        f"NDClassifier(depth=2) vs MLPClassifier((45,)), median of {repeats}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    rows, imports = [], {"ND": [], "MLP": []}
    with threadpool_limits(1):
        for n_samples in sizes:
            X, y = make_data(n_samples, np.float32)
            for batch_size in LARGE_BATCHES:
                times = {(kind, when): [] for kind in ("ND", "MLP") for when in ("first", "warm")}
                for kind in ("ND", "MLP"):  # warm-up: imports, allocator, lazy set-up
                    large_model(kind, batch_size).fit(X[:5000], y[:5000])
                for _ in range(repeats):
                    for kind in ("ND", "MLP"):
                        child = first_fit_in_new_process(kind, n_samples, batch_size)
                        times[kind, "first"].append((child["cpu"], child["wall"]))
                        imports[kind].append(child["imports"])
                        times[kind, "warm"].append(timed_fit(large_model(kind, batch_size), X, y))
                for when in ("first", "warm"):
                    nd_cpu, nd_wall = (statistics.median(t) for t in zip(*times["ND", when]))
                    mlp_cpu, mlp_wall = (statistics.median(t) for t in zip(*times["MLP", when]))
                    rows.append((n_samples, batch_size, when, nd_cpu, mlp_cpu, nd_wall, mlp_wall))
                    print(
                        f"{n_samples:>9,d} x {N_FEATURES}  batch {batch_size:4d}  {when:5s}  "
                        f"ND {nd_cpu:6.2f} s  MLP {mlp_cpu:6.2f} s  ND/MLP CPU "
                        f"{nd_cpu / mlp_cpu:.2f}  (wall {nd_wall:6.2f} / {mlp_wall:6.2f} = "
                        f"{nd_wall / mlp_wall:.2f})",
                        flush=True,
                    )
    print("\nratios ND / MLP (<= 1: NDClassifier at least as fast; CPU time, wall time)")
    print(f"{'rows':>9s}  {'batch':>5s}  {'fit':5s}  {'CPU':>5s}  {'wall':>5s}")
    for n_samples, batch_size, when, nd_cpu, mlp_cpu, nd_wall, mlp_wall in rows:
        print(
            f"{n_samples:>9,d}  {batch_size:5d}  {when:5s}  {nd_cpu / mlp_cpu:5.2f}  "
            f"{nd_wall / mlp_wall:5.2f}"
        )
    print(
        "imports of the first-fit processes (not in the fits; wall s, median): "
        f"sknd + torch + scikit-learn {statistics.median(imports['ND']):.2f}; "
        f"load average at the end {os.getloadavg()[0]:.1f}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats and configurations")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument(
        "--large", action="store_true", help="the large-batch section (200,000+ rows)"
    )
    args = parser.parse_args()
    if args.large:
        large_batches(args.quick, args.repeats or 3)
        return
    repeats = args.repeats or (3 if args.quick else 7)
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    X, y = make_data()
    configs = configurations(args.quick)
    cpu = {name: [] for name in configs}
    wall = {name: [] for name in configs}
    print(
        f"# bench_training: torch {torch.__version__}, scikit-learn {sklearn.__version__}, "
        f"{platform.machine()}, 1 thread; {N_SAMPLES} x {N_FEATURES}, {EPOCHS} epochs, "
        f"median of {repeats}"
    )
    with threadpool_limits(1):
        for make in configs.values():  # warm-up (imports, allocator)
            make().fit(X[:300], y[:300])
        for _ in range(repeats):
            for name, make in configs.items():
                model = make()
                start_cpu, start_wall = time.process_time(), time.perf_counter()
                model.fit(X, y)
                cpu[name].append(time.process_time() - start_cpu)
                wall[name].append(time.perf_counter() - start_wall)
                assert model.n_iter_ == EPOCHS, (name, model.n_iter_)
    med_cpu = {name: statistics.median(v) for name, v in cpu.items()}
    med_wall = {name: statistics.median(v) for name, v in wall.items()}
    print(f"{'configuration':42s} {'CPU s':>7s} {'wall s':>7s}")
    for name in configs:
        print(f"{name:42s} {med_cpu[name]:7.2f} {med_wall[name]:7.2f}")

    def ratio(a, b):
        return f"{a} / {b}: CPU {med_cpu[a] / med_cpu[b]:.2f}, wall {med_wall[a] / med_wall[b]:.2f}"

    print("\nratios (<= 1: NDClassifier at least as fast)")
    reference = "MLPClassifier (45,) b32"
    print(" ", ratio("NDClassifier depth 2 b32", reference), "  <- target 2")
    print(" ", ratio("NDClassifier depth 3 b32", reference))
    print(" ", ratio("NDClassifier depth 3 b32", "MLPClassifier (45, 45) b32"))
    print(" ", ratio("NDClassifier depth 4 b32", reference))
    print(" ", ratio("NDClassifier depth 4 b32", "MLPClassifier (45, 45, 45) b32"))
    print(" ", ratio("NDClassifier depth 2 b256", "MLPClassifier (45,) b256"))
    if not args.quick:
        print(" ", ratio("NDClassifier depth 2 b32, autograd step", reference))
        print(" ", ratio("plain torch MLP loop b32", reference))


if __name__ == "__main__":
    main()
