"""Default NDClassifier(depth=2) against tuned convex and neural peers (issues 11 and 22).

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_default_recipe.py
[--dataset NAME ...] [--folds N]``; ``PYTHONPATH=. python benchmarks/bench_default_recipe.py
--timing [--repeats R] [--dataset NAME ...] [--baseline CHECKOUT]`` (default datasets
forest_type, satimage_36 and bands_250; the script sets thread variables per environment)
for only the fit time of one default ``NDClassifier`` against scikit-learn's
``MLPClassifier`` with its defaults (after a ``StandardScaler``) on the same rows, side by
side (issue 33's targets): warm (a second fit in one process, medians of ``R`` interleaved
fits) and fresh (the first fit in a new process, imports of sknd and scikit-learn done,
lazy ones inside ``fit`` counted; medians of ``R`` processes each), wall and CPU seconds
(the child process's, all its threads) and the ratios ND / MLP, in the four environments
of ``_environments.py`` (issue 60): {``OMP_NUM_THREADS=1``, no thread variables} x {idle,
two busy processes started by the script}, and ND without thread variables / ND with
``OMP_NUM_THREADS=1`` under the same load. ``bands_250``: ``bench_many_bands.py``'s
250-band spectra, 2,000 rows, three classes by the target's tertiles; the timed fits use
its first 1,500 rows (issue 60's case). ``--baseline``: the ND of another checkout's sknd
(``git worktree add``) timed beside.

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
import subprocess
import sys
import tempfile
import time
import warnings
from functools import partial

import numpy as np
import pandas as pd
from _environments import LOADS, load_average, measure_in_environments, versions
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


def _bands_250():
    """``bench_many_bands.py``'s spectra, 2,000 rows; classes: the target's tertiles."""
    from bench_many_bands import hyperspectral  # imports torch: not at this module's import

    X, target = hyperspectral(n_samples=2000)
    return X, np.digitize(target, np.quantile(target, [1 / 3, 2 / 3]))


DATASETS = {
    "forest_type": lambda: load_forest_type(return_X_y=True),
    "satimage_centre": lambda: load_satimage(return_X_y=True, center_pixel=True),
    "satimage_36": lambda: load_satimage(return_X_y=True),
    "landsat8": lambda: load_landsat8_samples(return_X_y=True),
    "coffee": _coffee,
    "bands_250": _bands_250,
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


#: The fit a timing child runs: argv = rows file, model ("nd" or "mlp"), repeats (1:
#: fresh), the checkout whose sknd it imports.
_TIMED_FIT = """
import sys, warnings
sys.path[:0] = [{here!r}, sys.argv[4]]
from bench_default_recipe import timed_fits
warnings.simplefilter("ignore")
print(*timed_fits(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
#: The 250-band case's training rows (issue 60).
BANDS_250_TRAIN = 1500


def timing_rows(name, y):
    """``(train, val)`` rows of the timed fits.

    Fold 0 of the paper's splits; for ``bands_250`` its first 1,500 rows and no
    validation part (the ND fit splits off its own, as a user's fit does).
    """
    if name == "bands_250":
        return np.arange(BANDS_250_TRAIN), np.arange(0)
    train, val, _ = next(iter(paper_splits(y, n_splits=10, random_state=0)))
    return train, val


def timed_fits(path, model, repeats):
    """Wall and CPU seconds, alternating, of ``repeats`` fits of ``model`` in this process.

    ``path``: an ``.npz`` file of ``X``, ``y`` and the ``train`` and ``val`` rows. ``nd``:
    ``NDClassifier(random_state=0)`` with the validation part if there is one; ``mlp``:
    ``StandardScaler`` + ``MLPClassifier(random_state=0)`` on training + validation rows
    (the same rows; its early stopping is off by default). CPU time is the process's, all
    its threads.
    """
    data = np.load(path)
    X, y, train, val = (data[key] for key in ("X", "y", "train", "val"))
    rows = np.concatenate([train, val])
    validation = {"X_val": X[val], "y_val": y[val]} if len(val) else {}
    seconds = []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        if model == "nd":
            NDClassifier(random_state=0).fit(X[train], y[train], **validation)
        else:
            make_pipeline(StandardScaler(), MLPClassifier(random_state=0)).fit(X[rows], y[rows])
        seconds += [time.perf_counter() - wall, time.process_time() - cpu]
    return seconds


def _timed_cell(path, fits, repeats, env):
    """``{(warm or fresh, fit): (wall, CPU) medians}`` of the ``fits`` in environment ``env``.

    ``fits``: ``{label: (model, checkout)}``. Fresh: interleaved new processes, one fit
    each. Warm: one process per fit, a first fit to load everything, then the timed ones.
    """
    code = _TIMED_FIT.format(here=HERE)

    def child(label, n):
        model, checkout = fits[label]
        out = subprocess.run(
            [sys.executable, "-c", code, path, model, str(n), checkout],
            capture_output=True, text=True, check=True, env=env,
        )  # fmt: skip
        values = [float(v) for v in out.stdout.split()]
        return list(zip(values[::2], values[1::2]))

    fresh = {label: [] for label in fits}
    for _ in range(repeats):
        for label in fits:
            fresh[label] += child(label, 1)
    warm = {label: child(label, repeats + 1)[1:] for label in fits}
    medians = {}
    for kind, samples in (("warm", warm), ("fresh", fresh)):
        for label, times in samples.items():
            medians[kind, label] = tuple(np.median(times, axis=0))
            print(f"  {kind:5s} {label:14s} wall {medians[kind, label][0]:6.2f} s  "
                  f"CPU {medians[kind, label][1]:6.2f} s", flush=True)  # fmt: skip
    return medians


def _print_ratios(title, results, numerator, denominator, environments):
    """Rows ``environments`` of ``results[env][kind, numerator] / ...[kind, denominator]``."""
    print(f"\n{title}")
    print(f"{'':42s} {'warm wall':>9s} {'warm CPU':>9s} {'fresh wall':>10s} {'fresh CPU':>9s}")
    for label, (num_env, den_env) in environments.items():
        ratios = [
            results[num_env][kind, numerator][i] / results[den_env][kind, denominator][i]
            for kind in ("warm", "fresh")
            for i in (0, 1)
        ]
        print(f"{label:42s} {ratios[0]:8.2f}x {ratios[1]:8.2f}x {ratios[2]:9.2f}x "
              f"{ratios[3]:8.2f}x")  # fmt: skip


def timing(name, repeats, baseline=None):
    """Fit times of the default ND and the MLP on ``name`` in the four environments.

    Prints each cell's medians (wall and CPU) and then the ratios ND / MLP in each
    environment, and ND without thread variables / ND with ``OMP_NUM_THREADS=1`` under
    the same load. ``baseline``: a checkout of an older sknd whose ND is timed beside.
    """
    X, y = DATASETS[name]()
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y)
    train, val = timing_rows(name, y)
    fits = {"ND": ("nd", ROOT), "MLP": ("mlp", ROOT)}
    if baseline:
        commit = subprocess.run(
            ["git", "-C", baseline, "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        fits[f"ND {commit}"] = ("nd", baseline)
    print(
        f"\n# {name}: {len(train)} training + {len(val)} validation rows x {X.shape[1]} bands, "
        f"{len(np.unique(y))} classes; fit seconds, medians of {repeats}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rows.npz")
        np.savez(path, X=X, y=y, train=train, val=val)
        results = measure_in_environments(partial(_timed_cell, path, fits, repeats))
    same = {f"{threads}, {load}": ((threads, load),) * 2 for threads, load in results}
    by_load = {load: (("no thread variables", load), ("OMP_NUM_THREADS=1", load)) for load in LOADS}
    for label in [label for label in fits if label != "MLP"]:
        _print_ratios(f"{name}: {label} / MLP, same environment", results, label, "MLP", same)
        title = f"{name}: {label}, no thread variables / OMP_NUM_THREADS=1, same load"
        _print_ratios(title, results, label, label, by_load)
        if label != "ND":
            _print_ratios(f"{name}: {label} / ND, same environment", results, label, "ND", same)


def main(run=run, description=__doc__, datasets=("forest_type", "satimage_centre", "satimage_36")):
    """The command line: ``run(name, n_folds)`` for each ``--dataset`` (default ``datasets``)."""
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--dataset", choices=sorted(DATASETS), action="append")
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--timing", action="store_true", help="fit times against the MLP")
    parser.add_argument("--repeats", type=int, default=3, help="fits per timing")
    parser.add_argument("--baseline", help="timing: a checkout whose ND is timed beside")
    args = parser.parse_args()
    if args.timing:
        print(f"# bench_default_recipe --timing: {versions()}; {load_average()}")
        for name in args.dataset or ("forest_type", "satimage_36", "bands_250"):
            timing(name, args.repeats, args.baseline)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for name in args.dataset or datasets:
            run(name, args.folds)


if __name__ == "__main__":
    main()
