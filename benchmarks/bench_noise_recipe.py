"""The default against the peers it contains: fit time, clean accuracy and the drop under
the paper's 10 % multiplicative noise (issues 33 and 46).

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_noise_recipe.py
[--dataset NAME ...] [--folds N] [--draws N] [--peer] [--line] [--one-vs-rest]
[--model NAME ...]``

Stratified K-fold (5 by default) on the shipped data: forest type (9 bands), satimage's
centre pixel (4 bands) and all 36 satimage features (630 pairs). Per fold and model: the
CPU time of ``fit`` in this process (all models fitted one after another, so that the
ratios to the MLP compare like with like; CPU time, not wall, so that other processes on
the machine weigh less), the test accuracy, and the mean test accuracy under
``b + 0.1 |b| z`` (:func:`sknd.experiments.add_multiplicative_noise`, ``--draws`` draws per
fold, 3 by default). Models: ``NDClassifier()`` (the default: ``recipe="sknd"``,
``depth="auto"``), the same with ``passthrough=True`` and with ``train_noise=0`` (no noisy
copies of the training rows), ``NDClassifier(depth=2, recipe="paper")``, scikit-learn's
``MLPClassifier()`` on standardized bands and, with ``--peer``, the illumination-invariant
peer: the MLP on the standardized classic indices of all pairs, its ``alpha`` tuned by
3-fold ``GridSearchCV`` (13 MLP fits per fold); ``--model`` fits only the named ones (and
the MLP, which the times are relative to); ``--line`` adds to them other illumination-invariant
models on the standardized classic indices, each trained on the rows alone and on the rows
plus two noisy copies of them (the paper's noise at 0.05 or 0.1): the MLP at a fixed
``alpha``, a random forest, gradient boosting and 15 nearest neighbours, and the default
at ``train_noise=0.05``; with them a reader sees where clean accuracy and the drop under
noise lie for invariant models, and whether the default sits on that line.
``--one-vs-rest`` replaces each data set by its two-class tasks, each class against the
rest (small two-class tasks are where the default was most fragile). Printed: means
over folds (accuracy and drop in points, time in seconds and relative to the MLP's), and
the default's chosen depths.
"""

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sknd import NDClassifier
from sknd.datasets import load_forest_type, load_satimage
from sknd.experiments import ClassicNDFeatures, add_multiplicative_noise

NOISE = 0.10
DATASETS = {
    "forest_type": lambda: load_forest_type(return_X_y=True),
    "satimage_centre": lambda: load_satimage(return_X_y=True, center_pixel=True),
    "satimage_36": lambda: load_satimage(return_X_y=True),
}
MODELS = {
    "ND default": lambda seed: NDClassifier(random_state=seed),
    "ND default, passthrough=True": lambda seed: NDClassifier(passthrough=True, random_state=seed),
    "ND default, train_noise=0": lambda seed: NDClassifier(train_noise=0, random_state=seed),
    "ND paper recipe (depth 2)": lambda seed: NDClassifier(
        depth=2, recipe="paper", random_state=seed
    ),
    "scikit-learn MLP (std. bands)": lambda seed: make_pipeline(
        StandardScaler(), MLPClassifier(random_state=seed)
    ),
}
PEER = "MLP on std. classic NDs, tuned alpha"
ALPHAS = [1e-4, 1e-2, 1.0, 10.0]


def invariant_peer(seed):
    """The MLP on standardized classic indices, its L2 penalty chosen by 3-fold CV."""
    mlp = MLPClassifier(random_state=seed)
    return invariant(GridSearchCV(mlp, {"alpha": ALPHAS}, cv=3))


class WithNoisyCopies:
    """``estimator`` fitted on the rows and ``copies`` copies of them under the paper's
    noise at ``level``, each row and copy weighing the same: the default's noisy copies
    (``sknd._training._refinement.NoisyCopies``), here drawn by
    :func:`~sknd.experiments.add_multiplicative_noise` with seeds from ``seed`` (the
    default's are 1 and 2) and not clipped at 0 (at 0.1, a value goes negative only where
    ``z < -10``)."""

    def __init__(self, estimator, level, seed, copies=2):
        self.estimator, self.level, self.seed, self.copies = estimator, level, seed, copies

    def fit(self, X, y):
        noisy = [
            add_multiplicative_noise(X, self.level, random_state=self.seed + k)
            for k in range(self.copies)
        ]
        rows = np.vstack([X, *noisy])
        self.fitted_ = clone(self.estimator).fit(rows, np.tile(y, 1 + self.copies))
        return self

    def score(self, X, y):
        return self.fitted_.score(X, y)


def invariant(estimator):
    """``estimator`` on the standardized classic indices of all pairs."""
    return make_pipeline(ClassicNDFeatures(), StandardScaler(), estimator)


def line_models():
    """``--line``'s invariant models: name -> factory of the fold's seed."""
    learners = {
        "MLP, alpha 0.01": lambda seed: MLPClassifier(alpha=1e-2, random_state=seed),
        "MLP, alpha 1": lambda seed: MLPClassifier(alpha=1.0, random_state=seed),
        "random forest": lambda seed: RandomForestClassifier(
            300, min_samples_leaf=5, random_state=seed
        ),
        "gradient boosting": lambda seed: HistGradientBoostingClassifier(random_state=seed),
        "15 neighbours": lambda seed: KNeighborsClassifier(15),
    }
    models = {
        "ND default, train_noise=0.05": lambda seed: NDClassifier(
            train_noise=0.05, random_state=seed
        )
    }
    for learner, make in learners.items():
        for level in (0, 0.05, 0.1):

            def model(seed, make=make, level=level):
                fitted = invariant(make(seed))
                return WithNoisyCopies(fitted, level, 100 + seed) if level else fitted

            models[f"invariant {learner}, copies {level}"] = model
    return models


def tasks(name, one_vs_rest=False):
    """``(name, X, y)`` of data set ``name``: its classes, or each class against the rest."""
    X, y = DATASETS[name]()
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y)
    if not one_vs_rest:
        return [(name, X, y)]
    return [(f"{name}, {label} vs rest", X, (y == label).astype(int)) for label in np.unique(y)]


def run(name, X, y, folds, draws=3):
    """One row per (fold, model) on the task ``name`` of rows ``X`` and classes ``y``."""
    rows = []
    splits = StratifiedKFold(folds, shuffle=True, random_state=0).split(X, y)
    for fold, (train, test) in enumerate(splits):
        noisy = [
            add_multiplicative_noise(X[test], NOISE, random_state=draws * fold + draw)
            for draw in range(draws)
        ]
        for model_name, make in MODELS.items():
            model = make(fold)
            start = time.process_time()
            model.fit(X[train], y[train])
            seconds = time.process_time() - start
            rows.append(
                {
                    "data": name,
                    "fold": fold,
                    "model": model_name,
                    "seconds": seconds,
                    "clean": 100 * model.score(X[test], y[test]),
                    "noisy": 100 * np.mean([model.score(X_noisy, y[test]) for X_noisy in noisy]),
                    "depth": getattr(model, "depth_", None),
                }
            )
            print(f"{name} fold {fold} {model_name}: {rows[-1]}", flush=True)
    return pd.DataFrame(rows)


def summary(results):
    """Means over folds, the drop and the fit time relative to the MLP's."""
    results = results.assign(drop=results["clean"] - results["noisy"])
    mlp = results[results["model"].str.startswith("scikit-learn")]
    mlp_seconds = mlp.set_index(["data", "fold"])["seconds"]
    ratio = (
        results["seconds"].to_numpy()
        / mlp_seconds.loc[list(zip(results["data"], results["fold"]))].to_numpy()
    )
    table = results.assign(time_vs_mlp=ratio).groupby(["data", "model"], sort=False)
    return table[["clean", "noisy", "drop", "seconds", "time_vs_mlp"]].mean().round(2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", nargs="*", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--draws", type=int, default=3, help="noise draws per fold")
    parser.add_argument("--peer", action="store_true", help="also fit the invariant MLP peer")
    parser.add_argument("--line", action="store_true", help="also fit other invariant models")
    parser.add_argument(
        "--one-vs-rest", action="store_true", help="two-class tasks: each class against the rest"
    )
    parser.add_argument("--model", nargs="*", choices=[*MODELS, PEER], help="only these models")
    args = parser.parse_args()
    if args.peer:
        MODELS[PEER] = invariant_peer
    for name in list(MODELS):
        if args.model and name not in args.model and not name.startswith("scikit-learn"):
            del MODELS[name]
    if args.line:
        MODELS.update(line_models())
    warnings.simplefilter("ignore", ConvergenceWarning)
    results = pd.concat(
        [
            run(*task, args.folds, args.draws)
            for name in args.dataset
            for task in tasks(name, args.one_vs_rest)
        ]
    )
    print(summary(results).to_markdown())
    default = results[results["model"] == "ND default"]
    depths = default.groupby("data")["depth"].value_counts()
    print("default's chosen depths:", depths.to_dict())


if __name__ == "__main__":
    main()
