"""Checks of :func:`~sknd.experiments.run_experiments`' arguments before any model trains.

A run trains many models for minutes or hours: a value that the first fit (or
the last step) would reject must be refused before the first one, with a
``ValueError`` naming the argument as the caller wrote it (``run_experiments``'
names, or the command line's ``--options``).
"""

import numbers

import numpy as np

__all__ = []


def _option(name, options):
    return (options or {}).get(name, name)


def check_run_arguments(
    X, y, *, task, depths, models, noise_levels, estimator_params, n_jobs, options=None
):
    """Raise a ``ValueError`` for what the run would reject later, or silently misuse.

    ``options`` maps argument names to the names the caller knows (e.g.
    ``{"depths": "--depths"}``); ``estimator_params`` keys are checked with the
    estimators' own parameter validation, ``max_epochs`` as ``--max-epochs``.
    """
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


def _check_estimator_params(task, estimator_params, options):
    """Each network parameter as the estimators would validate it at their first fit."""
    from .. import NDClassifier, NDRegressor

    estimator = NDRegressor() if task == "regression" else NDClassifier()
    for key, value in dict(estimator_params or {}).items():
        name = _option(key, options)
        try:
            estimator.set_params(**{key: value})
            estimator._validate_params()
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{name}: {exc}") from None
        finally:
            estimator = NDRegressor() if task == "regression" else NDClassifier()
