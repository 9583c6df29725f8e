"""One task of an experiment's plan, in a joblib worker: fit one model on one fold, score it
on the test part clean, under noise and under an illumination change, and
return its records (score rows, training curve, coefficients, illumination rows)."""

import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._threads import one_thread
from ._noise import illumination_check, noise_robustness
from ._peers import count_parameters
from ._records import coefficient_table

__all__ = ["run_task"]

#: Columns of a network's ``history_`` kept in ``histories.csv``.
_HISTORY = ["epoch", "train_loss", "valid_loss", "valid_score"]


def run_task(task, X, y, split, config):
    """Fit and evaluate one (model, depth, fold) of the plan.

    ``task`` is a dict ``model, depth, fold, seed``; ``split`` the fold's (train,
    validation, test) row indices; ``config`` what every task shares (``Plan.config``).
    Returns a dict: ``key`` (model, depth, fold), ``rows`` (one per noise level),
    ``history``, ``coefficients`` (None for models that are not sknd networks),
    ``illumination``, ``estimator`` (None unless kept), ``fit_time``, ``score`` (the clean
    main score) and ``n_pairs`` (band pairs of the ND layers).
    """
    with one_thread(), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        estimator, fit_time = _fit(task, X, y, split, config)
        X_test, y_test = X.iloc[split[2]], y[split[2]]
        curves = {
            kind: _noise_curve(estimator, X, y, split, task, config, kind)
            for kind in config["noise_kinds"]
        }
        illumination = illumination_check(
            estimator, X_test, y_test, factors=config["illumination_factors"]
        )
    key = {"model": task["model"], "depth": task["depth"], "fold": task["fold"]}
    metrics = config["metrics"]
    info = _info(estimator, fit_time, task, split, config)
    keep = config["keep_estimators"] == "all" or (
        config["keep_estimators"] == "first_fold" and task["fold"] == 0
    )
    first = next(iter(curves.values()))
    return {
        "key": key,
        "rows": [
            {**info, "noise_kind": kind, "noise": level, **row}
            for kind, curve in curves.items()
            for level, row in curve.iterrows()
        ],
        **_network_records(estimator, config["specs"][task["model"]], key),
        "illumination": illumination.assign(**key),
        "estimator": estimator if keep else None,
        "fit_time": fit_time,
        "score": first[metrics[0]].iloc[0] if len(first) else np.nan,
    }


def _noise_curve(estimator, X, y, split, task, config, kind):
    """Mean test scores per noise level of one noise model; the same draws for every model
    of the fold (its seed), each model of noise with its own."""
    scale = None  # additive noise: the training rows' band deviations
    if kind == "additive":
        scale = X.iloc[split[0]].to_numpy(dtype=float).std(axis=0)
    noise = noise_robustness(
        estimator,
        X.iloc[split[2]],
        y[split[2]],
        levels=config["noise_levels"],
        n_repeats=config["noise_repeats"],
        random_state=task["seed"],
        kind=kind,
        scale=scale,
    )
    return noise.groupby("noise", sort=True)[config["metrics"]].mean()


def _fit(task, X, y, split, config):
    """Fit one model of one fold; return the estimator and its fit time."""
    spec = config["specs"][task["model"]]
    train, val, _ = split
    context = {
        **config["context"],
        "depth": task["depth"],
        "seed": task["seed"],
        "validation_fraction": len(val) / (len(train) + len(val)),
    }
    estimator = spec.build(spec, context)
    start = time.perf_counter()
    try:
        if spec.uses_validation:
            estimator.fit(X.iloc[train], y[train], X_val=X.iloc[val], y_val=y[val])
        else:
            # Models without a use for a validation set learn from all non-test data;
            # scikit-learn's MLP holds out the same share internally for early stopping.
            rest = np.concatenate([train, val])
            estimator.fit(X.iloc[rest], y[rest])
    except ValueError as exc:
        raise _fold_error(exc, spec, task) from exc
    return estimator, time.perf_counter() - start


def _fold_error(exc, spec, task):
    """``exc`` said of the fold's parts: the caller passed X and y, not X_val and y_val."""
    depth = "" if task["depth"] is None else f" at depth {task['depth']}"
    message = str(exc).replace("X_val", "the validation part of X")
    message = message.replace("y_val", "the validation part of y")
    return ValueError(f"Fitting {spec.name}{depth} on fold {task['fold']} failed: {message}")


def _info(estimator, fit_time, task, split, config):
    """The columns of ``results.csv`` that every noise level of the task shares."""
    final = _final_step(estimator)
    best_epoch = getattr(final, "best_epoch_", None)
    if best_epoch is None and getattr(final, "validation_scores_", None):
        best_epoch = int(np.argmax(final.validation_scores_)) + 1
    pair = getattr(final, "pair_names_", None)
    return {
        "dataset": config["dataset"],
        "model": task["model"],
        "depth": task["depth"],
        "fold": task["fold"],
        "n_parameters": count_parameters(estimator),
        "fit_time": fit_time,
        "n_epochs": _n_iter(final),
        "best_epoch": np.nan if best_epoch is None else best_epoch,
        "learning_gain": _learning_gain(final),
        "seed": task["seed"],
        "n_train": len(split[0]),
        "n_val": len(split[1]),
        "n_test": len(split[2]),
        "selected_pair": "" if pair is None else "/".join(pair),
    }


def _network_records(estimator, spec, key):
    """Training curve, coefficients and number of band pairs of an sknd network."""
    if not spec.network:
        return {"history": None, "coefficients": None, "n_pairs": None}
    final = _final_step(estimator)
    history = final.history_[_HISTORY].copy()
    for name in ("fold", "depth", "model"):
        history.insert(0, name, key[name])
    n_pairs = len(final.pairs_)
    coefficients = None
    if n_pairs and len(getattr(final, "coef_a_", ())):
        coefficients = coefficient_table(final, key)
    return {"history": history, "coefficients": coefficients, "n_pairs": n_pairs}


def _final_step(estimator):
    return estimator[-1] if hasattr(estimator, "steps") else estimator


def _n_iter(estimator):
    """Epochs or solver iterations as one number (LogisticRegression reports an array)."""
    n_iter = getattr(estimator, "n_iter_", None)
    return np.nan if n_iter is None else int(np.max(n_iter))


def _learning_gain(final):
    """The fitted network's ``learning_gain_`` (NaN where it has none or it is None)."""
    gain = getattr(final, "learning_gain_", None)
    return np.nan if gain is None else float(gain)
