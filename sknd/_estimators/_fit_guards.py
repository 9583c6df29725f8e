"""All-or-nothing fitting calls, and ``fit``'s keyword-only validation data.

:func:`restore_on_failure` makes a fitting method leave the estimator as it was when it
raises, and refuses a second fit of one object while one runs;
:func:`validation_data_by_keyword` refuses the old ``fit(X, y, X_val, y_val)`` form.
Both decorate the estimators' ``fit`` and ``partial_fit``.
"""

import functools
import threading

import numpy as np

__all__ = ["restore_on_failure", "validation_data_by_keyword"]


# ids of the estimator objects being fitted now (see restore_on_failure).
_objects_in_fit = set()
_fitting_lock = threading.Lock()


def restore_on_failure(fit):
    """Make a fitting method all or nothing: if it raises, the estimator is left as it was.

    scikit-learn sets fitted attributes at the end of ``fit``, but
    ``validate_data`` already sets ``n_features_in_`` at the start: an
    interrupted first fit (KeyboardInterrupt, divergence, invalid data) would
    leave an estimator that ``check_is_fitted`` accepts, and an interrupted
    refit one whose ``n_features_in_`` disagrees with its network. Restoring the
    attributes leaves an unfitted estimator unfitted and keeps the previous
    model of a fitted one, intact and consistent. (A warm start or ``partial_fit``
    trains a copy of the fitted network, so that its weights are restored too.)

    It also refuses a second ``fit`` of the same object while one runs (in
    another thread): both would write the same attributes and leave a mix of
    two models. Fits of separate objects (``clone``) run in parallel. Applied
    outside ``_fit_context``, so that an interrupt landing in its exit still
    restores the previous model.
    """

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        with _fitting_lock:
            if id(self) in _objects_in_fit:
                raise RuntimeError(
                    f"This {type(self).__name__} object is already being fitted in another "
                    "thread; one object cannot fit twice at once. Fit a copy in each thread "
                    "(sklearn.base.clone(estimator))."
                )
            _objects_in_fit.add(id(self))
        before = dict(vars(self))
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            vars(self).clear()
            vars(self).update(before)
            raise
        finally:
            with _fitting_lock:
                _objects_in_fit.discard(id(self))

    return wrapper


def validation_data_by_keyword(fit):
    """Refuse ``fit(X, y, X_val, y_val)``: ``fit``'s third argument is ``sample_weight``.

    As in scikit-learn (``HistGradientBoostingClassifier.fit(X, y, sample_weight=None, *,
    X_val=None, y_val=None)``); sknd's ``fit`` took ``X_val`` third before 0.1.0. A call
    in that form would train with the validation bands as sample weights: a ``TypeError``
    says how to call it instead.
    """

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        # X, y, sample_weight: a 2-D "sample_weight" is a table of bands.
        if len(args) > 3 or (len(args) == 3 and np.ndim(args[2]) == 2):
            raise TypeError(
                f"{type(self).__name__}.fit takes validation data by keyword only, as "
                "scikit-learn's estimators do: fit(X, y, sample_weight=None, *, X_val=None, "
                "y_val=None, groups=None). Its third positional argument is sample_weight; "
                "call fit(X, y, X_val=X_val, y_val=y_val)."
            )
        return fit(self, *args, **kwargs)

    return wrapper
