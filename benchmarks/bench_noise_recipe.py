"""The default against the peers it contains: fit time, clean accuracy and the drop under
the paper's 10 % multiplicative noise (issues 33 and 46).

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_noise_recipe.py
[--dataset NAME ...] [--folds N] [--fold-start N] [--fold-limit N] [--draws N] [--seeds N]
[--csv PATH [--target COLUMN]] [--peer] [--line] [--one-vs-rest] [--model NAME ...]
[--frontier] [--cache PATH.csv] [--reuse-nd] [--report PATH.md]``

Stratified K-fold (5 by default) on the shipped data: forest type (9 bands), satimage's
centre pixel (4 bands) and all 36 satimage features (630 pairs). Per fold and model: the
CPU time of ``fit`` in this process (all models fitted one after another, so that the
ratios to the MLP compare like with like; CPU time, not wall, so that other processes on
the machine weigh less), the test accuracy, and the mean test accuracy under
``b + 0.1 |b| z`` (:func:`sknd.experiments.add_multiplicative_noise`, ``--draws`` draws per
fold, 3 by default; ``--seeds N`` fits each model N times per fold, ``random_state`` the
fold plus 0, 100, 200..., and averages over them). Models: ``NDClassifier()`` (the
default: ``recipe="sknd"``, ``depth="auto"``), the same with ``passthrough=True`` and
with ``train_noise=0`` (no noisy copies of the training rows),
``NDClassifier(depth=2, recipe="paper")``, scikit-learn's
``MLPClassifier()`` on standardized bands and, with ``--peer``, the illumination-invariant
peer: the MLP on the standardized classic indices of all pairs, its ``alpha`` tuned by
3-fold ``GridSearchCV`` (13 MLP fits per fold); ``--model`` fits only the named ones (and
the MLP, which the times are relative to); ``--line`` adds to them other illumination-invariant
models on the standardized classic indices, each trained on the rows alone and on the rows
plus two noisy copies of them (the paper's noise at 0.05 or 0.1): the MLP at a fixed
``alpha``, a random forest, gradient boosting and 15 nearest neighbours, and the default
at ``train_noise=0.05``; with them a reader sees where clean accuracy and the drop under
noise lie for invariant models, and whether the default sits on that line.
``--csv PATH`` runs on the user's own data instead (band columns and a class column,
``--target``, ``class`` by default), e.g. the frontier on held-out tasks: ``--frontier --csv
modis.csv --folds 10 --seeds 3``. ``--one-vs-rest`` replaces each data set by its two-class
tasks, each class against the rest (small two-class tasks are where the default was most
fragile). Printed: means over folds (accuracy and drop in points, time in seconds and
relative to the MLP's), and the default's chosen depths.

``--frontier`` (issue 61) replaces the models by the frontier's: the reference invariant
models (the MLP, ``max_iter=500``, on the standardized classic indices at ``alpha`` 1e-4,
1e-2 and 1, each on the rows alone and on the rows plus two copies under the paper's 10 %
noise, and gradient boosting on the classic indices), the default, the default with
``passthrough=True`` and with ``train_noise=0`` (the user's dial at its other end) and the
MLP on standardized bands. Its drop is the floor; a reference whose drop is at most the
floor is within it. Per data set it prints a table (clean, drop, seconds, time vs the MLP,
within the floor) and a verdict: rule (a), where some reference is within the floor, the
default scores within 0.25 points of the most accurate of them and its own drop is within
the floor; rule (b), where none is, the default scores within 0.25 of the most accurate
reference and its drop is at most that reference's; the default's gap comes with the
standard error of the mean of its fold-by-fold differences to that reference (how far the
folds alone move it, each fold's seeds averaged first), and the same rule is checked for
``train_noise=0``; the references that dominate the default, more accurate by over 0.25
points and no more fragile (none: the default is on the references' frontier); and the
passthrough target, ``passthrough=True`` at least the MLP on bands minus 0.5 points. Run
with ``--folds 10``; ``--fold-limit N`` runs only the first N of the folds,
``--fold-start N`` skips the first N (so that two processes with their own caches can
share the folds; concatenate the caches, and a rerun with ``--reuse-nd``
fits nothing and prints the table). ``--cache PATH.csv`` keeps one row per (data, fold,
seed, model) (with the number of folds, the draws and the commit it was fitted at): a model
whose row is there is not fitted again, except the ``ND ...`` models, which are always
refitted (unless ``--reuse-nd``), so that the default can be rerun after a code change
against the same references (which depend only on scikit-learn and the seeds).
``--report PATH.md`` also writes the tables there. The caches and tables of the runs are in
``benchmarks/results_frontier/``; the figures are discussed in ``benchmarks/RESULTS.md``.
"""

import argparse
import itertools
import os
import subprocess
import sys
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
SEED_STEP = 100  # --seeds: the k-th seed of a fold's models is fold + SEED_STEP * k
BANDS_MLP = "scikit-learn MLP (std. bands)"
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
    BANDS_MLP: lambda seed: make_pipeline(StandardScaler(), MLPClassifier(random_state=seed)),
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


REFERENCE = "reference: "
DIAL = "ND default, train_noise=0"  # the user's dial at its other end: the rows alone
TOLERANCE = 0.25  # points of clean accuracy the default may lose to the best reference
PASSTHROUGH_TOLERANCE = 0.5  # points passthrough=True may lose to the MLP on bands


def frontier_models():
    """``--frontier``'s models: name -> factory of the fold's seed; the references'
    names start with :data:`REFERENCE`."""
    names = ("ND default", "ND default, passthrough=True", DIAL, BANDS_MLP)
    models = {name: MODELS[name] for name in names}
    for alpha in (1e-4, 1e-2, 1.0):
        for level in (0, NOISE):

            def model(seed, alpha=alpha, level=level):
                mlp = MLPClassifier(alpha=alpha, max_iter=500, random_state=seed)
                fitted = invariant(mlp)
                return WithNoisyCopies(fitted, level, 100 + seed) if level else fitted

            models[f"{REFERENCE}MLP, alpha {alpha:g}, copies {level:g}"] = model
    models[f"{REFERENCE}gradient boosting"] = lambda seed: invariant(
        HistGradientBoostingClassifier(random_state=seed)
    )
    return models


def head_commit():
    """The short hash of the checkout's HEAD (``+`` when the package ``sknd/`` has uncommitted
    changes), or ``?``."""
    try:
        git = ["git", "-C", os.path.dirname(os.path.abspath(__file__))]
        commit = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=no", "--", ":(top)sknd"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"
    return commit + ("+" if changed else "")


class Cache:
    """Rows of ``run`` kept in the CSV file ``path`` (none when ``path`` is None), keyed by
    data, number of folds, draws, fold, seed offset and model; rewritten after each new
    row."""

    KEY = ["data", "folds", "draws", "fold", "seed", "model"]

    def __init__(self, path, reuse_nd=False):
        self.path, self.reuse_nd = path, reuse_nd
        exists = path is not None and os.path.exists(path)
        self.rows = pd.read_csv(path, keep_default_na=False) if exists else pd.DataFrame()
        if exists and "seed" not in self.rows:  # a cache of one seed per fold
            self.rows.insert(self.rows.columns.get_loc("fold") + 1, "seed", 0)
        self.rows = self.rows.astype({"commit": str}) if exists else self.rows

    def get(self, key):
        """The cached row of ``key`` (a dict in :data:`KEY`'s order), or None: never for
        the ``ND ...`` models unless ``reuse_nd``."""
        if self.rows.empty or (key["model"].startswith("ND ") and not self.reuse_nd):
            return None
        match = np.logical_and.reduce([self.rows[k] == v for k, v in key.items()])
        return self.rows[match].iloc[-1].to_dict() if match.any() else None

    def put(self, row):
        """Store ``row``, replacing any with its key."""
        if self.path is None:
            return
        if not self.rows.empty:
            same = np.logical_and.reduce([self.rows[k] == row[k] for k in self.KEY])
            self.rows = self.rows[~same]
        self.rows = pd.concat([self.rows, pd.DataFrame([row])], ignore_index=True)
        self.rows.to_csv(self.path, index=False)


def csv_data(path, target):
    """``(X, y)`` of the CSV file ``path``: every column but ``target`` a band (named as the
    user's, in its order), ``target`` the classes. Refuses negative or non-finite bands: the
    indices and the noise model are for non-negative spectra."""
    table = pd.read_csv(path)
    if target not in table:
        raise SystemExit(f"{path}: no class column {target!r} (--target); columns {list(table)}")
    X = table.drop(columns=target).to_numpy(dtype=np.float64)
    if not np.isfinite(X).all() or (X < 0).any():
        raise SystemExit(f"{path}: bands must be finite and non-negative (reflectances, counts)")
    return X, table[target].to_numpy()


def tasks(name, one_vs_rest=False):
    """``(name, X, y)`` of data set ``name``: its classes, or each class against the rest."""
    X, y = DATASETS[name]()
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y)
    if not one_vs_rest:
        return [(name, X, y)]
    return [(f"{name}, {label} vs rest", X, (y == label).astype(int)) for label in np.unique(y)]


def run(name, X, y, folds, draws=3, fold_limit=None, cache=None, fold_start=0, seeds=1):
    """One row per (fold, seed, model) on the task ``name`` of rows ``X`` and classes ``y``:
    the folds from ``fold_start`` to before ``fold_limit`` (the last when None) of the
    ``folds`` folds, each model fitted with ``random_state`` fold + :data:`SEED_STEP` * k for
    k < ``seeds`` (the seed column holds the offset); rows found in the :class:`Cache`
    ``cache`` are taken from it."""
    rows, cache, commit = [], cache or Cache(None), head_commit()
    splits = StratifiedKFold(folds, shuffle=True, random_state=0).split(X, y)
    for fold, (train, test) in enumerate(splits):
        if fold_limit is not None and fold >= fold_limit:
            break
        if fold < fold_start:
            continue
        noisy = [
            add_multiplicative_noise(X[test], NOISE, random_state=draws * fold + draw)
            for draw in range(draws)
        ]
        for offset, (model_name, make) in itertools.product(
            range(0, SEED_STEP * seeds, SEED_STEP), MODELS.items()
        ):
            key = {"data": name, "folds": folds, "draws": draws, "fold": fold}
            key |= {"seed": offset, "model": model_name}
            row = cache.get(key)
            if row is not None:
                rows.append(row)
                print(f"{name} fold {fold} seed {offset} {model_name}: cached", flush=True)
                continue
            model = make(fold + offset)
            start = time.process_time()
            model.fit(X[train], y[train])
            seconds = time.process_time() - start
            depth = getattr(model, "depth_", None)
            rows.append(
                {
                    **key,
                    "seconds": seconds,
                    "clean": 100 * model.score(X[test], y[test]),
                    "noisy": 100 * np.mean([model.score(X_noisy, y[test]) for X_noisy in noisy]),
                    "depth": "" if depth is None else str(depth),
                    "commit": commit,
                }
            )
            cache.put(rows[-1])
            print(f"{name} fold {fold} seed {offset} {model_name}: {rows[-1]}", flush=True)
    return pd.DataFrame(rows)


def summary(results):
    """Means over folds, the drop and the fit time relative to the MLP's."""
    results = results.assign(drop=results["clean"] - results["noisy"])
    mlp = results[results["model"] == BANDS_MLP]
    mlp_seconds = mlp.set_index(["data", "fold", "seed"])["seconds"]
    keys = list(zip(results["data"], results["fold"], results["seed"]))
    ratio = results["seconds"].to_numpy() / mlp_seconds.loc[keys].to_numpy()
    table = results.assign(time_vs_mlp=ratio).groupby(["data", "model"], sort=False)
    return table[["clean", "noisy", "drop", "seconds", "time_vs_mlp"]].mean().round(2)


def paired_error(results, model, other):
    """The standard error of the mean over folds of ``model``'s clean accuracy minus
    ``other``'s, fold by fold (one task's ``run`` rows; each fold's mean over its seeds):
    how far the folds alone move a gap."""
    clean = results.pivot_table(index="fold", columns="model", values="clean")
    differences = (clean[model] - clean[other]).dropna()
    return differences.std(ddof=1) / np.sqrt(len(differences))


def frontier(results):
    """Per task of ``results`` (``run``'s rows, frontier models): the markdown table and the
    verdict of the frontier's rules, as text."""
    table = summary(results)
    blocks = []
    for name, means in table.groupby(level="data", sort=False):
        means = means.droplevel("data")
        floor = means.loc[BANDS_MLP, "drop"]
        references = means[means.index.str.startswith(REFERENCE)]
        within = references[references["drop"] <= floor]
        shown = means[["clean", "drop", "seconds", "time_vs_mlp"]].assign(
            within_floor=np.where(means["drop"] <= floor, "yes", "no")
        )
        default, passthrough = means.loc["ND default"], means.loc["ND default, passthrough=True"]
        if len(within):
            rule, best = "a", within["clean"].idxmax()
            bound = floor
        else:
            rule, best = "b", references["clean"].idxmax()
            bound = references.loc[best, "drop"]
        gap = default["clean"] - references.loc[best, "clean"]
        rows = results[results["data"] == name]
        error = paired_error(rows, "ND default", best)

        def meets(model, target=references.loc[best, "clean"], bound=bound):  # the rule
            return model["clean"] - target >= -TOLERANCE and model["drop"] <= bound

        dominating = references[
            (references["drop"] <= default["drop"])
            & (references["clean"] > default["clean"] + TOLERANCE)
        ]
        dial = means.loc[DIAL]
        gap_passthrough = passthrough["clean"] - means.loc[BANDS_MLP, "clean"]
        folds, seeds = rows["fold"].nunique(), rows["seed"].nunique()
        lines = [
            f"### {name} ({folds} folds" + (f", {seeds} seeds each)" if seeds > 1 else ")"),
            "",
            shown.to_markdown(floatfmt=".2f"),
            "",
            f"- floor (the MLP on bands' drop): {floor:.2f}",
            f"- references within the floor: {len(within)} of {len(references)}",
            f"- rule ({rule}): best reference"
            + (" within the floor" if rule == "a" else " (none within the floor)")
            + f": {best} (clean {references.loc[best, 'clean']:.2f},"
            f" drop {references.loc[best, 'drop']:.2f})",
            f"- default: clean {default['clean']:.2f}, gap {gap:+.2f} (standard error over"
            f" the folds' paired differences {error:.2f}; tolerance -{TOLERANCE}), drop"
            f" {default['drop']:.2f}"
            + (
                f" ({'within' if default['drop'] <= floor else 'above'} the floor)"
                if rule == "a"
                else f" ({'at most' if default['drop'] <= bound else 'above'} the reference's)"
            ),
            f"- rule ({rule}): {'met' if meets(default) else 'NOT met'}",
            f"- references more accurate than the default by over {TOLERANCE} and no more"
            f" fragile: {', '.join(dominating.index) or 'none'}",
            f"- the dial, train_noise=0: clean {dial['clean']:.2f}, drop {dial['drop']:.2f};"
            f" rule ({rule}) {'met' if meets(dial) else 'not met'} at that end",
            f"- passthrough - MLP on bands: {gap_passthrough:+.2f} (target"
            f" >= -{PASSTHROUGH_TOLERANCE}): "
            + ("met" if gap_passthrough >= -PASSTHROUGH_TOLERANCE else "NOT met"),
            "",
        ]
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", nargs="*", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument(
        "--csv", help="run on this CSV file instead: band columns and a class column (--target)"
    )
    parser.add_argument("--target", default="class", help="--csv's class column")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--fold-limit", type=int, help="run only the first N of the folds")
    parser.add_argument("--fold-start", type=int, default=0, help="skip the first N folds")
    parser.add_argument("--draws", type=int, default=3, help="noise draws per fold")
    parser.add_argument("--seeds", type=int, default=1, help="fits of each model per fold")
    parser.add_argument("--peer", action="store_true", help="also fit the invariant MLP peer")
    parser.add_argument("--line", action="store_true", help="also fit other invariant models")
    parser.add_argument(
        "--one-vs-rest", action="store_true", help="two-class tasks: each class against the rest"
    )
    parser.add_argument("--model", nargs="*", choices=[*MODELS, PEER], help="only these models")
    parser.add_argument(
        "--frontier", action="store_true", help="the frontier's models, table and verdict"
    )
    parser.add_argument("--cache", help="CSV file of (data, fold, model) rows to reuse and extend")
    parser.add_argument(
        "--reuse-nd", action="store_true", help="take the ND models' rows from the cache too"
    )
    parser.add_argument("--report", help="also write the frontier's tables to this file")
    args = parser.parse_args()
    if args.frontier:
        models = frontier_models()
        MODELS.clear()
        MODELS.update(models)
    if args.peer:
        MODELS[PEER] = invariant_peer
    for name in list(MODELS):
        if args.model and name not in args.model and not name.startswith("scikit-learn"):
            del MODELS[name]
    if args.line:
        MODELS.update(line_models())
    warnings.simplefilter("ignore", ConvergenceWarning)
    if args.csv:
        name = os.path.splitext(os.path.basename(args.csv))[0]
        DATASETS[name] = lambda: csv_data(args.csv, args.target)
        args.dataset = [name]
    cache = Cache(args.cache, args.reuse_nd)
    results = pd.concat(
        [
            run(*task, args.folds, args.draws, args.fold_limit, cache, args.fold_start, args.seeds)
            for name in args.dataset
            for task in tasks(name, args.one_vs_rest)
        ]
    )
    if args.frontier:
        commits = ", ".join(sorted(set(results["commit"])))
        report = f"Frontier, `{' '.join(sys.argv[1:])}`, fitted at {commits}\n\n"
        report += frontier(results)
        print(report)
        if args.report:
            with open(args.report, "w") as file:
                file.write(report)
        return
    print(summary(results).to_markdown())
    default = results[results["model"] == "ND default"]
    depths = default.groupby("data")["depth"].value_counts()
    print("default's chosen depths:", depths.to_dict())


if __name__ == "__main__":
    main()
