"""Checks of the estimators' ``callbacks`` parameter: skorch callbacks a user adds to a fit.

:func:`user_callbacks` names them as skorch does, refuses names sknd uses
itself (:data:`sknd._training._net.OWN_CALLBACKS`) and callbacks the training loop
of :class:`sknd._training._net.Net` cannot serve, saying what to change, and gives
an ``EpochScoring`` or ``BatchScoring`` with skorch's default target
extractor :class:`TaskTargets`, the stored targets as ``net_.predict`` returns them.
"""

import copy

import numpy as np
import torch
from skorch.callbacks import BatchScoring, Callback, EpochScoring
from skorch.callbacks import EarlyStopping as SkorchEarlyStopping
from skorch.utils import to_numpy

from ._net import OWN_CALLBACKS

__all__ = []


def _named(callbacks, example):
    """``[(name, callback), ...]``: bare instances named as skorch names them (the class
    name, numbered ``_1``, ``_2`` ... when several share it)."""
    items = []
    for item in callbacks:
        if isinstance(item, Callback):
            items.append((None, item))
        elif (
            isinstance(item, (tuple, list))
            and len(item) == 2
            and isinstance(item[0], str)
            and isinstance(item[1], Callback)
        ):
            items.append(tuple(item))
        else:
            raise ValueError(
                "callbacks must be a list of skorch callbacks, each an instance of "
                f"skorch.callbacks.Callback or a (name, callback) pair, {example}; got {item!r}."
            )
    bare = [type(cb).__name__ for name, cb in items if name is None]
    numbered = {}
    named = []
    for name, callback in items:
        if name is None:
            name = type(callback).__name__
            if bare.count(name) > 1:
                numbered[name] = numbered.get(name, 0) + 1
                name = f"{name}_{numbered[name]}"
        named.append((name, callback))
    return named


def _monitored(callback):
    """The history key ``callback`` watches (skorch's ``monitor``), or None."""
    monitor = getattr(callback, "monitor", None)
    return monitor if isinstance(monitor, str) else None


def _check_callback(name, callback, *, early_stopping, validation, how):
    """Refuse a callback the training loop cannot serve, saying what to change."""
    monitor = _monitored(callback)
    if not validation and monitor is not None and monitor.startswith("valid"):
        raise ValueError(
            f"The callback {name!r} ({type(callback).__name__}) monitors {monitor!r}, a value "
            f"of validation data, but {how} has none. Pass X_val and y_val (or "
            "early_stopping=True) to fit, or monitor a training value (e.g. "
            "monitor='train_loss', or 'train_loss_best' for a Checkpoint)."
        )
    if early_stopping and isinstance(callback, SkorchEarlyStopping) and callback.load_best:
        raise ValueError(
            f"The callback {name!r} (skorch's EarlyStopping with load_best=True) would "
            "restore its best weights, and sknd's early stopping restores its own after "
            "it. Pass early_stopping=False (with X_val, y_val) to let yours decide, or "
            "load_best=False to let it only stop training earlier."
        )


class TaskTargets:
    """The scorers' target extractor: stored targets as ``net_.predict`` returns them.

    The training targets are encoded (class codes, standardized values) and may
    carry sample weights (``(y, w)``); scorer names such as ``"accuracy"`` or
    ``"f1_macro"`` compare ``net_.predict`` (class labels, targets on their scale)
    with these, as for skorch's ``NeuralNetClassifier``.
    """

    def __init__(self, task):
        self.task = task

    def __call__(self, y):
        if isinstance(y, (tuple, list)):
            y = y[0]
        y = y.detach().cpu().numpy() if isinstance(y, torch.Tensor) else np.asarray(y)
        classes = getattr(self.task, "classes", None)
        if classes is None:
            return self.task.decode(y.reshape(len(y), -1))
        return classes[y.reshape(-1).astype(np.intp)]


def user_callbacks(callbacks, *, early_stopping, validation=True, how="this fit", task=None):
    """Fresh copies of an estimator's ``callbacks`` for one fit, checked.

    ``callbacks`` is the estimator's parameter, a list of skorch callbacks as
    skorch takes them (instances, ``(name, callback)`` pairs), never modified
    (each fit trains with copies: the fitted ones are in ``net_.callbacks_``).
    ``early_stopping``: whether sknd's own early stopping runs in this fit;
    ``validation``: whether it has validation data (``how`` names the call in
    messages). A ``ValueError`` says what to change for anything else, for names
    sknd uses, and for callbacks the training loop cannot serve. An
    ``EpochScoring`` or ``BatchScoring`` with skorch's default target extractor gets
    :class:`TaskTargets` of ``task``.
    """
    if callbacks is None:
        return []
    example = "e.g. callbacks=[('lr', LRScheduler('StepLR', step_size=10))]"
    items = _named(callbacks, example)  # a list: the parameter constraints checked it
    names = [name for name, _ in items]
    for name in names:
        if name in OWN_CALLBACKS:
            raise ValueError(
                f"The callback name {name!r} is sknd's own ({', '.join(OWN_CALLBACKS)}): "
                "give your callback another name."
            )
        if names.count(name) > 1:
            raise ValueError(f"The callback name {name!r} is used twice: names must be unique.")
    for name, callback in items:
        _check_callback(
            name, callback, early_stopping=early_stopping, validation=validation, how=how
        )
    items = copy.deepcopy(items)
    for _, callback in items:
        scorer = isinstance(callback, (EpochScoring, BatchScoring))
        if scorer and callback.target_extractor is to_numpy:
            callback.target_extractor = TaskTargets(task)
    return items
