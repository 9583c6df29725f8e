"""Default NDClassifier(depth=2) against the fixed-index baseline and the paper's recipe.

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_default_recipe.py [--dataset NAME]``

The paper's protocol (stratified 10-fold CV, 70/20/10 train/validation/test splits of
``sknd.experiments``) on the shipped data: test accuracy of

- ``NDClassifier(depth=2)`` with the default recipe (``recipe="sknd"``),
- the same with ``recipe="paper"``,
- the sknd MLP (``architecture="mlp"``, paper recipe),
- the fixed-index baseline: StandardScaler + LogisticRegression(C=1) on all classic
  normalized differences, fitted on training + validation rows (what a user fits on the
  same rows),

with the mean paired difference to the baseline and the fit time relative to the paper's
recipe.
"""

import argparse
import time

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sknd import NDClassifier
from sknd.datasets import load_forest_type, load_satimage
from sknd.experiments import ClassicNDFeatures
from sknd.experiments._splits import paper_splits

DATASETS = {
    "forest_type": lambda: load_forest_type(return_X_y=True),
    "satimage_centre": lambda: load_satimage(return_X_y=True, center_pixel=True),
    "satimage_36": lambda: load_satimage(return_X_y=True),
}


def models():
    return {
        "ND d2 (sknd default)": lambda seed: NDClassifier(random_state=seed),
        "ND d2 (paper recipe)": lambda seed: NDClassifier(random_state=seed, recipe="paper"),
        "MLP d2 (paper recipe)": lambda seed: NDClassifier(
            architecture="mlp", random_state=seed, recipe="paper"
        ),
        "LR on std. classic NDs": lambda seed: make_pipeline(
            ClassicNDFeatures(), StandardScaler(), LogisticRegression(C=1.0, max_iter=2000)
        ),
    }


def run(name, n_folds):
    X, y = DATASETS[name]()
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y)
    scores = {model: [] for model in models()}
    times = {model: 0.0 for model in models()}
    for fold, (train, val, test) in enumerate(paper_splits(y, n_splits=10, random_state=0)):
        if fold == n_folds:
            break
        for model, make in models().items():
            start = time.process_time()
            if model.startswith("LR"):
                rows = np.concatenate([train, val])
                estimator = make(fold).fit(X[rows], y[rows])
            else:
                estimator = make(fold).fit(X[train], y[train], X_val=X[val], y_val=y[val])
            times[model] += time.process_time() - start
            scores[model].append(100 * estimator.score(X[test], y[test]))
    base = np.array(scores["LR on std. classic NDs"])
    paper_time = times["ND d2 (paper recipe)"]
    print(f"\n{name}: {len(base)} folds, test accuracy (%)")
    print(f"{'model':26s} {'mean':>6s} {'std':>5s} {'vs LR':>6s} {'folds >= LR':>11s} {'time':>6s}")
    for model, values in scores.items():
        values = np.array(values)
        diff = values - base
        print(
            f"{model:26s} {values.mean():6.2f} {values.std():5.2f} {diff.mean():+6.2f} "
            f"{int((diff >= 0).sum()):>6d}/{len(diff):<4d} {times[model] / paper_time:5.2f}x"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=sorted(DATASETS), action="append")
    parser.add_argument("--folds", type=int, default=10)
    args = parser.parse_args()
    for name in args.dataset or sorted(DATASETS):
        run(name, args.folds)


if __name__ == "__main__":
    main()
