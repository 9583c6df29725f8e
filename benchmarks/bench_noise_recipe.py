"""Default recipe against the paper's recipe and scikit-learn's MLP: fit time, clean
accuracy and the drop under the paper's 10 % multiplicative noise (issue 33).

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_noise_recipe.py
[--dataset NAME ...] [--folds N]``

Stratified K-fold (5 by default) on the shipped data: forest type (9 bands), satimage's
centre pixel (4 bands) and all 36 satimage features (630 pairs). Per fold and model: the
wall time of ``fit`` (all models fitted one after another in this process, so that the
ratios to the MLP compare like with like), the test accuracy, and the test accuracy under
``b + 0.1 |b| z`` (:func:`sknd.experiments.add_multiplicative_noise`, a new draw per
fold). Models: ``NDClassifier()`` (the default: ``recipe="sknd"``, ``depth="auto"``), the
same with ``train_noise=0`` (no noisy copies of the training rows),
``NDClassifier(depth=2, recipe="paper")``, scikit-learn's ``MLPClassifier()`` on
standardized bands and, with ``--peer``, the best illumination-invariant neural peer: the
MLP on the standardized classic indices of all pairs, its ``alpha`` tuned by 3-fold
``GridSearchCV`` (13 MLP fits per fold). Printed: means over folds (accuracy and drop in
points, time in seconds and relative to the MLP's), and the default's chosen depths.
"""

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, StratifiedKFold
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
    search = GridSearchCV(mlp, {"alpha": ALPHAS}, cv=3)
    return make_pipeline(ClassicNDFeatures(), StandardScaler(), search)


def run(name, folds):
    """One row per (fold, model) on data set ``name``."""
    X, y = DATASETS[name]()
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y)
    rows = []
    splits = StratifiedKFold(folds, shuffle=True, random_state=0).split(X, y)
    for fold, (train, test) in enumerate(splits):
        noisy = add_multiplicative_noise(X[test], NOISE, random_state=fold)
        for model_name, make in MODELS.items():
            model = make(fold)
            start = time.perf_counter()
            model.fit(X[train], y[train])
            seconds = time.perf_counter() - start
            rows.append(
                {
                    "data": name,
                    "fold": fold,
                    "model": model_name,
                    "seconds": seconds,
                    "clean": 100 * model.score(X[test], y[test]),
                    "noisy": 100 * model.score(noisy, y[test]),
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
    parser.add_argument("--peer", action="store_true", help="also fit the invariant MLP peer")
    args = parser.parse_args()
    if args.peer:
        MODELS[PEER] = invariant_peer
    warnings.simplefilter("ignore", ConvergenceWarning)
    results = pd.concat([run(name, args.folds) for name in args.dataset])
    print(summary(results).to_markdown())
    default = results[results["model"] == "ND default"]
    depths = default.groupby("data")["depth"].value_counts()
    print("default's chosen depths:", depths.to_dict())


if __name__ == "__main__":
    main()
