"""Checks of :func:`~sknd.experiments.run_experiments`' arguments before any model trains.

A run trains many models for minutes or hours: a value that the first fit (or
the last step) would reject must be refused before the first one, with a
``ValueError`` naming the argument as the caller wrote it (``run_experiments``'
names, or the command line's ``--options``).
"""

import numbers

import numpy as np
from joblib import effective_n_jobs

from .._data._validation import check_band_values
from .._training._memory import physical_memory as _physical_memory
from ._specs import ALL_PAIR_TABLES, specs_for

__all__ = []

# Peak memory of an ND or AttND fit with pairs="all", in (n_samples, n_pairs) float64
# tables: the first block's outputs on the training rows (the peak RSS of a 300-sample,
# 600-band fit above that of a 6-band fit, in such tables, stays below it:
# benchmarks/RESULTS.md, "Figures moved out of the code").
NETWORK_ALL_PAIR_TABLES = 3


def _option(name, options):
    return (options or {}).get(name, name)


def check_run_arguments(
    X,
    y,
    *,
    task,
    depths,
    models,
    noise_levels,
    estimator_params,
    n_jobs,
    n_splits=2,
    options=None,
):
    """Raise a ``ValueError`` for what the run would reject later, or silently misuse.

    ``options`` maps argument names to the names the caller knows (e.g.
    ``{"depths": "--depths"}``); ``estimator_params`` keys are checked with the
    estimators' own parameter validation, ``max_epochs`` as ``--max-epochs``. Band
    values are checked on the whole data set as the networks would check each fold's
    training and validation parts, so that a message names the data the caller passed.
    """
    _check_protocol(depths, models, noise_levels, n_jobs, options)
    _check_estimator_params(task, estimator_params, options)
    try:
        values = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"The bands must be numbers ({exc}).") from None
    bad = ~np.isfinite(values)
    if bad.any():
        rows = np.flatnonzero(bad.any(axis=1))
        raise ValueError(
            f"The bands hold {int(bad.sum())} missing or infinite values (rows "
            f"{', '.join(str(r) for r in rows[:5])}{', ...' if len(rows) > 5 else ''}): drop "
            "or impute those samples first."
        )
    if task == "classification" and len(np.unique(np.asarray(y))) < 2:
        raise ValueError(
            "The target has a single class: classification needs at least two classes."
        )
    specs = specs_for(task, models)
    if any(spec.network for spec in specs):
        variant = dict(estimator_params or {}).get("variant")
        check_band_values(
            values,
            name=_option("X", options),
            estimator_name="NDRegressor" if task == "regression" else "NDClassifier",
            feature_names=getattr(X, "columns", None),
            # Without an explicit variant, negative bands switch the networks to "signed".
            non_negative=variant == "reflectance",
            source_dtype=None,
        )
    _check_pair_tables(values.shape, specs, estimator_params, n_jobs, n_splits, options)


def _check_protocol(depths, models, noise_levels, n_jobs, options):
    """The arguments that describe the run rather than the data."""
    depths = list(depths)
    if not depths or not all(
        isinstance(d, numbers.Integral) and not isinstance(d, bool) and d >= 2 for d in depths
    ):
        raise ValueError(
            f"{_option('depths', options)} must be one or more integers >= 2 (layers from "
            f"input to output), got {depths}."
        )
    if models is not None and len(models) == 0:
        raise ValueError(
            f"{_option('models', options)} is empty: name at least one model, or leave it "
            "out to run them all."
        )
    levels = np.asarray(list(noise_levels), dtype=np.float64)
    if levels.size == 0 or not np.isfinite(levels).all() or (levels < 0).any():
        raise ValueError(
            f"{_option('noise_levels', options)} must be one or more finite, non-negative "
            f"noise levels, got {list(noise_levels)}."
        )
    if n_jobs is not None and (
        not isinstance(n_jobs, numbers.Integral) or isinstance(n_jobs, bool) or n_jobs == 0
    ):
        raise ValueError(
            f"{_option('n_jobs', options)} must be a non-zero integer (-1: all cores), "
            f"got {n_jobs!r}."
        )


def _check_pair_tables(shape, specs, estimator_params, n_jobs, n_splits, options):
    """Refuse models whose tables of every band pair would not fit in memory.

    The peers of :data:`ALL_PAIR_TABLES`, and the ND and AttND networks with
    ``pairs="all"`` (their first block's outputs on all training rows at the end of fit).
    """
    n_samples, n_bands = shape
    n_pairs = n_bands * (n_bands - 1) // 2
    tables_of = {
        spec.name: ALL_PAIR_TABLES[spec.name] for spec in specs if spec.name in ALL_PAIR_TABLES
    }
    all_pairs = dict(estimator_params or {}).get("pairs") == "all"
    if all_pairs:
        for spec in specs:
            if spec.network and spec.params.get("architecture") != "mlp":
                tables_of[spec.name] = NETWORK_ALL_PAIR_TABLES
    if not tables_of:
        return
    # Each of the parallel workers may fit one such model at a time.
    workers = min(effective_n_jobs(n_jobs or 1), len(tables_of) * n_splits)
    tables = max(tables_of.values()) * workers
    estimate = tables * n_samples * n_pairs * 8
    limit = _physical_memory()
    if estimate > limit:
        heavy = list(tables_of)
        pairs = f", {_option('pairs', options)} auto for the networks" if all_pairs else ""
        raise ValueError(
            f"{', '.join(heavy)} would need about {estimate / 2**30:,.3g} GiB: {tables} tables "
            f"of values of all {n_pairs:,} band pairs for {n_samples:,} samples ({workers} "
            f"parallel worker(s)), more than the {limit / 2**30:,.3g} GiB of memory of this "
            f"machine. Leave {' and '.join(heavy)} out of {_option('models', options)}"
            f"{pairs}, or use fewer bands or samples."
        )


def _check_estimator_params(task, estimator_params, options):
    """Each network parameter as the estimators would validate it at their first fit."""
    from .._estimators._classifier import NDClassifier
    from .._estimators._regressor import NDRegressor

    estimator = NDRegressor() if task == "regression" else NDClassifier()
    for key, value in dict(estimator_params or {}).items():
        name = _option(key, options)
        try:
            estimator.set_params(**{key: value})
            estimator._check_params()
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{name}: {exc}") from None
        finally:
            estimator = NDRegressor() if task == "regression" else NDClassifier()


def check_validation_classes(y, splits):
    """Refuse folds whose validation part holds a class that their training part lacks.

    Group folds can put every sample of a class in one fold's validation groups; the
    models that stop early on the validation part cannot score a class they never saw.
    """
    for fold, (train, validation, _) in enumerate(splits):
        missing = np.setdiff1d(y[validation], y[train])
        if missing.size:
            raise ValueError(
                f"Fold {fold}'s validation part holds class(es) {missing.tolist()} that its "
                "training part lacks (the groups put all their samples there), so the models "
                "that stop early on it could not score them. Spread those classes over more "
                "groups, drop them, or use fewer folds."
            )
