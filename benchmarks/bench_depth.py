"""Deeper ND networks under sknd's recipe against depth 2 and the paper's recipe (issue 22).

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_depth.py
[--dataset NAME ...] [--folds N]``

The paper's protocol (stratified 10-fold CV, 70/20/10 train/validation/test splits of
``sknd.experiments``) on the data sets of ``bench_default_recipe.py``. Under
``recipe="sknd"`` a network of depth 3 or 4 starts exactly at the tuned depth-2 model (its
hidden layers carry the linear start, the other hidden units feed a zero output; see
``sknd._training._recipe.carry``), with a width that keeps depth 3 within the parameters of
scikit-learn's default MLP; under ``recipe="paper"`` it starts from random weights with one
hidden unit per band pair. Columns: test accuracy (%) mean and std over folds, the mean
paired difference to the default depth-2 model and the folds at or above it, the mean
``learning_gain_`` (validation), the parameter count and the fit time relative to depth 2.
"""

import time

import numpy as np
from bench_default_recipe import DATASETS, main

from sknd import NDClassifier
from sknd.experiments._splits import paper_splits

MODELS = {
    "ND d2 (sknd)": dict(depth=2),
    "ND d3 (sknd)": dict(depth=3),
    "ND d4 (sknd)": dict(depth=4),
    "ND d3 (paper recipe)": dict(depth=3, recipe="paper"),
    "ND d4 (paper recipe)": dict(depth=4, recipe="paper"),
}
BASE = "ND d2 (sknd)"


def run(name, n_folds):
    X, y = DATASETS[name]()
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y)
    scores = {model: [] for model in MODELS}
    gains = {model: [] for model in MODELS}
    times = dict.fromkeys(MODELS, 0.0)
    sizes = {}
    for fold, (train, val, test) in enumerate(paper_splits(y, n_splits=10, random_state=0)):
        if fold == n_folds:
            break
        for model, params in MODELS.items():
            start = time.process_time()
            estimator = NDClassifier(random_state=fold, **params)
            estimator.fit(X[train], y[train], X_val=X[val], y_val=y[val])
            times[model] += time.process_time() - start
            scores[model].append(100 * np.mean(estimator.predict(X[test]) == y[test]))
            gains[model].append(estimator.learning_gain_)
            sizes[model] = sum(p.numel() for p in estimator.module_.parameters())
    base = np.array(scores[BASE])
    print(f"\n{name}: {len(base)} folds, test accuracy (%)")
    print(
        f"{'model':22s} {'mean':>6s} {'std':>5s} {'vs d2':>6s} {'folds >=':>8s} "
        f"{'gain':>7s} {'params':>7s} {'time':>6s}"
    )
    for model, values in scores.items():
        values = np.array(values)
        diff = values - base
        gain = "-" if gains[model][0] is None else f"{np.mean(gains[model]):+.4f}"
        print(
            f"{model:22s} {values.mean():6.2f} {values.std():5.2f} {diff.mean():+6.2f} "
            f"{int((diff >= 0).sum()):>4d}/{len(diff):<3d} {gain:>7s} {sizes[model]:7d} "
            f"{times[model] / times[BASE]:5.2f}x"
        )


if __name__ == "__main__":
    main(run, __doc__, ("forest_type", "satimage_centre"))
