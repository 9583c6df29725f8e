"""Default NDClassifier(depth=2) against tuned convex and neural peers (issues 11 and 22).

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_default_recipe.py
[--dataset NAME ...] [--folds N]``; with ``--timing [--repeats R]`` (default datasets
forest_type and satimage_36) only the fit time of one default ``NDClassifier`` against
scikit-learn's ``MLPClassifier`` with its defaults (after a ``StandardScaler``) on the same
rows, side by side (issue 33's targets): warm (a second fit in one process, medians of
``R`` interleaved fits) and fresh (the first fit in a new process, imports of sknd and
scikit-learn done, lazy ones inside ``fit`` counted; medians of ``R`` processes each),
printing the seconds and the ratios ND / MLP.

The paper's protocol (stratified 10-fold CV, 70/20/10 train/validation/test splits of
``sknd.experiments``) on the shipped data and, where chemotools is installed, its real
FTIR coffee spectra (60 samples, every 8th of 1,841 channels, negatives clipped at 0;
MIT License, not shipped by sknd). Test accuracy (%) of

- ``NDClassifier(depth=2)``, the default recipe (tuned convex start, learned indices);
- the same with ``passthrough=True`` (not illumination-invariant) and with
  ``recipe="paper"``;
- the tuned fixed-index peer: StandardScaler + LogisticRegressionCV (log-loss, 5-fold
  over C in 1e-4 ... 1e4) on all classic normalized differences;
- the same with LogisticRegression(C=1), the previous default start;
- an MLP on the standardized classic indices, ``alpha`` by 3-fold grid search (the
  illumination-invariant neural peer);
- a random forest and gradient boosting (HistGradientBoosting) on the bands (not
  invariant);
- gradient boosting on all classic indices, and on the learned indices of
  ``NDTransformer`` (the composable answer where trees on indices beat linear heads);

peers fitted on the training and validation rows (what a user fits on the same rows).
Columns: mean and std over folds, mean paired difference to the tuned peer and the
folds at or above it, the drop under additive noise of 10 % of each band's standard
deviation on the test rows (clipped at 0), the fit time relative to the paper recipe's,
and for the default model the mean ``learning_gain_`` (validation) and the median
largest ``|log k|`` of a fit.
"""

import argparse
import importlib.util
import os
import time
import warnings

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
from sklearn.model_selection import GridSearchCV
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sknd import NDClassifier, NDTransformer
from sknd.datasets import load_forest_type, load_landsat8_samples, load_satimage
from sknd.experiments import ClassicNDFeatures
from sknd.experiments._splits import paper_splits

NOISE = 0.10


def _coffee():
    spec = importlib.util.find_spec("chemotools")
    if spec is None:
        raise SystemExit("coffee needs chemotools: pip install --no-deps chemotools")
    data = os.path.join(spec.submodule_search_locations[0], "datasets", "data")
    X = pd.read_csv(os.path.join(data, "coffee_spectra.csv")).to_numpy()[:, ::8]
    y = pd.read_csv(os.path.join(data, "coffee_labels.csv"))["labels"].to_numpy()
    return X.clip(0, None), y


DATASETS = {
    "forest_type": lambda: load_forest_type(return_X_y=True),
    "satimage_centre": lambda: load_satimage(return_X_y=True, center_pixel=True),
    "satimage_36": lambda: load_satimage(return_X_y=True),
    "landsat8": lambda: load_landsat8_samples(return_X_y=True),
    "coffee": _coffee,
}
TUNED = "LR-CV on std. classic NDs"


def models():
    return {
        "ND d2 (sknd default)": lambda seed: NDClassifier(random_state=seed),
        "ND d2 + passthrough": lambda seed: NDClassifier(random_state=seed, passthrough=True),
        "ND d2 (paper recipe)": lambda seed: NDClassifier(random_state=seed, recipe="paper"),
        TUNED: lambda seed: make_pipeline(
            ClassicNDFeatures(),
            StandardScaler(),
            LogisticRegressionCV(
                Cs=np.logspace(-4, 4, 9),
                scoring="neg_log_loss",
                max_iter=2000,
                use_legacy_attributes=False,
            ),
        ),
        "LR (C=1) on std. classic NDs": lambda seed: make_pipeline(
            ClassicNDFeatures(), StandardScaler(), LogisticRegression(C=1.0, max_iter=2000)
        ),
        "MLP on std. classic NDs": lambda seed: GridSearchCV(
            make_pipeline(
                ClassicNDFeatures(),
                StandardScaler(),
                MLPClassifier((64,), max_iter=500, early_stopping=True, random_state=seed),
            ),
            {"mlpclassifier__alpha": [1e-3, 1e-1, 1.0, 3.0]},
            cv=3,
        ),
        "RF on bands": lambda seed: RandomForestClassifier(200, random_state=seed),
        "HGB on bands": lambda seed: HistGradientBoostingClassifier(random_state=seed),
        "HGB on classic NDs": lambda seed: make_pipeline(
            ClassicNDFeatures(), HistGradientBoostingClassifier(random_state=seed)
        ),
        "NDTransformer + HGB": lambda seed: make_pipeline(
            NDTransformer(random_state=seed), HistGradientBoostingClassifier(random_state=seed)
        ),
    }


def _noisy(X, scale, seed):
    rng = np.random.default_rng(seed)
    return np.clip(X + NOISE * scale * rng.standard_normal(X.shape), 0, None)


def run(name, n_folds):
    X, y = DATASETS[name]()
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y)
    scores = {model: [] for model in models()}
    drops = {model: [] for model in models()}
    times = dict.fromkeys(models(), 0.0)
    gains, log_k = [], []
    for fold, (train, val, test) in enumerate(paper_splits(y, n_splits=10, random_state=0)):
        if fold == n_folds:
            break
        noisy = _noisy(X[test], X[train].std(axis=0), fold)
        for model, make in models().items():
            start = time.process_time()
            if isinstance(make(fold), NDClassifier):
                estimator = make(fold).fit(X[train], y[train], X_val=X[val], y_val=y[val])
            else:
                rows = np.concatenate([train, val])
                estimator = make(fold).fit(X[rows], y[rows])
            times[model] += time.process_time() - start
            scores[model].append(100 * np.mean(estimator.predict(X[test]) == y[test]))
            drops[model].append(
                scores[model][-1] - 100 * np.mean(estimator.predict(noisy) == y[test])
            )
            if model == "ND d2 (sknd default)":
                gains.append(estimator.learning_gain_)
                k = np.log(np.logaddexp(0, estimator.coef_a_) / np.logaddexp(0, estimator.coef_c_))
                log_k.append(np.abs(k).max())
    base = np.array(scores[TUNED])
    paper_time = times["ND d2 (paper recipe)"]
    print(f"\n{name}: {len(base)} folds, test accuracy (%)")
    print(
        f"{'model':30s} {'mean':>6s} {'std':>5s} {'vs tuned':>8s} {'folds >=':>8s} "
        f"{'noise drop':>10s} {'time':>6s}"
    )
    for model, values in scores.items():
        values = np.array(values)
        diff = values - base
        print(
            f"{model:30s} {values.mean():6.2f} {values.std():5.2f} {diff.mean():+8.2f} "
            f"{int((diff >= 0).sum()):>4d}/{len(diff):<3d} {np.mean(drops[model]):10.2f} "
            f"{times[model] / paper_time:5.2f}x"
        )
    print(
        f"default: learning_gain_ mean {np.mean(gains):+.4f} (> 0 in {np.sum(np.array(gains) > 0)}"
        f"/{len(gains)} folds), median largest |log k| {np.median(log_k):.3f}"
    )


#: The fit a timing child runs: argv = dataset, model ("nd" or "mlp"), repeats (1: fresh).
_TIMED_FIT = """
import sys, time, warnings
sys.path[:0] = [{here!r}, {root!r}]
from bench_default_recipe import timed_fits
warnings.simplefilter("ignore")
print(*timed_fits(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""


def timed_fits(name, model, repeats):
    """Wall seconds of ``repeats`` fits of ``model`` on fold 0 of ``name`` in this process.

    ``nd``: ``NDClassifier(random_state=0)`` with the fold's validation part; ``mlp``:
    ``StandardScaler`` + ``MLPClassifier(random_state=0)`` on training + validation rows
    (the same rows; its early stopping is off by default).
    """
    X, y = DATASETS[name]()
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y)
    train, val, _ = next(iter(paper_splits(y, n_splits=10, random_state=0)))
    rows = np.concatenate([train, val])
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        if model == "nd":
            NDClassifier(random_state=0).fit(X[train], y[train], X_val=X[val], y_val=y[val])
        else:
            make_pipeline(StandardScaler(), MLPClassifier(random_state=0)).fit(X[rows], y[rows])
        seconds.append(time.perf_counter() - start)
    return seconds


def timing(name, repeats):
    """Print the warm and fresh-process fit times of the default ND and the MLP on ``name``."""
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    code = _TIMED_FIT.format(here=here, root=os.path.dirname(here))

    def child(model, n):
        out = subprocess.run(
            [sys.executable, "-c", code, name, model, str(n)],
            capture_output=True, text=True, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"},
        )  # fmt: skip
        return [float(v) for v in out.stdout.split()]

    # Fresh: interleaved new processes, one fit each. Warm: one process per model, a first
    # fit to load everything, then the timed ones.
    fresh = {m: [] for m in ("nd", "mlp")}
    for _ in range(repeats):
        for model in fresh:
            fresh[model] += child(model, 1)
    warm = {model: child(model, repeats + 1)[1:] for model in fresh}
    print(f"\n{name}: fit time, wall seconds (median of {repeats})")
    print(f"{'':8s} {'ND default':>10s} {'MLP':>8s} {'ratio':>6s}")
    for label, times in (("warm", warm), ("fresh", fresh)):
        nd, mlp = np.median(times["nd"]), np.median(times["mlp"])
        print(f"{label:8s} {nd:10.2f} {mlp:8.2f} {nd / mlp:5.1f}x")


def main(run=run, description=__doc__, datasets=("forest_type", "satimage_centre", "satimage_36")):
    """The command line: ``run(name, n_folds)`` for each ``--dataset`` (default ``datasets``)."""
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--dataset", choices=sorted(DATASETS), action="append")
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--timing", action="store_true", help="fit times against the MLP")
    parser.add_argument("--repeats", type=int, default=3, help="fits per timing")
    args = parser.parse_args()
    if args.timing:
        for name in args.dataset or ("forest_type", "satimage_36"):
            timing(name, args.repeats)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for name in args.dataset or datasets:
            run(name, args.folds)


if __name__ == "__main__":
    main()
