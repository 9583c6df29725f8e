"""NDClassifier fit time against scikit-learn's MLPClassifier (issue 5, target 2).

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_training.py [--quick]``

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
"""

import argparse
import platform
import statistics
import time
import warnings

import numpy as np
import sklearn
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier
from threadpoolctl import threadpool_limits

from sknd import NDClassifier
from sknd._fused import FusedTrainer

N_SAMPLES, N_FEATURES, EPOCHS = 2000, 10, 150


def make_data():
    rng = np.random.default_rng(0)
    X = rng.uniform(0.05, 0.5, size=(N_SAMPLES, N_FEATURES))
    # A ratio of two bands plus noise: a task normalized differences suit.
    y = (X[:, 3] - X[:, 2]) / (X[:, 3] + X[:, 2]) + rng.normal(0, 0.05, N_SAMPLES) > 0
    return X, y.astype(int)


def mlp(hidden, batch_size):
    # n_iter_no_change > max_iter: sklearn's training-loss stopping rule never fires.
    return MLPClassifier(
        hidden_layer_sizes=hidden,
        batch_size=batch_size,
        max_iter=EPOCHS,
        early_stopping=False,
        n_iter_no_change=EPOCHS + 1,
        random_state=0,
    )


def nd(depth, batch_size):
    return NDClassifier(
        depth=depth, max_epochs=EPOCHS, early_stopping=False, batch_size=batch_size, random_state=0
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats and configurations")
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args()
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
