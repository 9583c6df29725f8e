"""The data a fit, warm start or ``partial_fit`` call trains on.

The validation part split off for early stopping (:func:`split_validation`: stratified, by
``groups``, never holding out what training needs), and the parameters the network is made
of (:data:`NETWORK_PARAMS`), which a continuing call must not change
(:func:`check_network_params`). The estimators validate ``X`` and ``y`` and call these
(:class:`~sknd._estimators._base.BaseND`: ``_new_data``, ``_continued_data``,
``_validation_split``).
"""

from numbers import Number

import numpy as np
from sklearn.model_selection import GroupShuffleSplit, train_test_split

__all__ = ["NETWORK_PARAMS", "check_network_params", "matching_outputs", "split_validation"]


def _group_split(rows, groups, validation_fraction, seed):
    """``(train, valid)`` :class:`~sknd._data._parts.Part` of ``rows``, about
    ``validation_fraction`` of the groups held out for early stopping."""
    groups = np.asarray(groups)
    if groups.ndim != 1 or len(groups) != rows.n_rows:
        raise ValueError(
            f"groups must be one label per sample: got shape {groups.shape} for {rows.n_rows} "
            "samples."
        )
    if len(np.unique(groups)) < 2:
        raise ValueError(
            "early_stopping=True with groups holds out whole groups for validation, but all "
            "samples are in one group. Pass at least two groups, an explicit X_val and "
            "y_val, or early_stopping=False."
        )
    splitter = GroupShuffleSplit(n_splits=1, test_size=validation_fraction, random_state=seed)
    train, valid = next(splitter.split(rows.X, rows.target, groups))
    return rows.take(train), rows.take(valid)


def _keep_in_training(codes, train, valid, classes, weight):
    """``(train, valid)`` with the validation rows training cannot do without moved back.

    A class (``classes``: ``codes`` are class codes) with no training row is never
    learned, and a weighted or merged regression (``weight`` not None) extrapolates
    to the targets outside its training range: rows of such a class, and the rows
    with each target column's smallest and largest value, train. This matters where
    exact duplicates were merged (:func:`~sknd._data._weights.merge_duplicates`): 150 rows
    of 3 pixels, one class each, are 3 rows to split, and a plain split holds out a
    whole class. The split depends on the merged rows only, so that a weight ``k``
    still fits as ``k`` repeats of the row.
    """
    if classes:
        needed = ~np.isin(codes[valid], codes[train])
    elif weight is not None:
        targets = codes.reshape(len(codes), -1)
        extremes = np.concatenate([targets.argmin(axis=0), targets.argmax(axis=0)])
        needed = np.isin(valid, extremes)
    else:
        return train, valid
    return np.concatenate([train, valid[needed]]), valid[~needed]


def _same_param(before, now):
    """Whether a parameter value is unchanged (array-likes compared by value)."""
    if before is now:
        return True
    # Equal values of another type (np.float64(1e-6), np.int64(5), np.True_: param grids,
    # numpy round trips) are the same value; a bool is no number here (True is not 1).
    flags = (bool, np.bool_)
    if isinstance(before, flags) or isinstance(now, flags):
        return isinstance(before, flags) and isinstance(now, flags) and bool(before) == bool(now)
    if isinstance(before, Number) and isinstance(now, Number):
        return bool(before == now)
    if isinstance(before, str) or isinstance(now, str) or np.ndim(before) == np.ndim(now) == 0:
        return type(before) is type(now) and before == now
    try:
        return np.array_equal(np.asarray(before, dtype=object), np.asarray(now, dtype=object))
    except ValueError:  # ragged
        return False


def matching_outputs(codes_val, codes):
    """``codes_val`` shaped as ``codes``, or a ValueError if their outputs differ."""
    outputs, outputs_val = (1 if np.ndim(c) == 1 else np.shape(c)[1] for c in (codes, codes_val))
    if outputs != outputs_val:
        raise ValueError(
            f"y_val has {outputs_val} output(s) per sample but y has {outputs}: early stopping "
            "would track the wrong target. Pass y_val with the columns of y."
        )
    return np.reshape(codes_val, (len(codes_val),) + np.shape(codes)[1:])


def split_validation(rows, task, validation_fraction, seed, groups=None):
    """Return the ``(train, valid)`` :class:`~sknd._data._parts.Part` of ``rows``.

    With ``groups``, the split holds out whole groups (fields, spatial blocks): correlated
    samples on both sides would make early stopping optimistic. Otherwise it never holds
    out what training needs (:func:`_keep_in_training`): the rows, merged duplicates
    included, are split as ``validation_fraction`` says, then a class's only rows come
    back to training.
    """
    if groups is not None:
        return _group_split(rows, groups, validation_fraction, seed)
    n_samples = rows.n_rows
    n_valid = int(np.ceil(validation_fraction * n_samples))
    if n_samples - n_valid < 1:
        raise ValueError(
            f"early_stopping=True holds out validation_fraction={validation_fraction} "
            f"of the data, which leaves no training sample with n_samples={n_samples}. "
            "Pass more samples, an explicit X_val and y_val, or early_stopping=False."
        )
    stratify = None
    if task.stratified:
        # Stratify whenever every class can appear on both sides; tiny data falls back
        # to a plain random split rather than failing.
        counts = np.bincount(rows.target)
        if counts.min() >= 2 and min(n_valid, n_samples - n_valid) >= len(counts):
            stratify = rows.target
    train, valid = train_test_split(
        np.arange(n_samples), test_size=n_valid, random_state=seed, stratify=stratify
    )
    train, valid = _keep_in_training(rows.target, train, valid, task.stratified, rows.weight)
    if len(valid) < (len(np.unique(rows.target)) if task.stratified else 1):
        # Every distinct row is needed in training (a handful of pixels, each a class
        # of its own), or fewer are left than there are classes to score (copies of a
        # few pixels, where an epoch that gets its one validation pixel right may get
        # its training pixels wrong): early stopping watches the training rows.
        train = valid = np.concatenate([train, valid])
    return rows.take(train), rows.take(valid)


#: Parameters the fitted network is made of. A warm start or ``partial_fit`` continues
#: that network, so they must not change between calls (the others may: lr, epochs ...).
NETWORK_PARAMS = (
    "architecture",
    "depth",
    "hidden_units",
    "epsilon",
    "variant",
    "pairs",
    "bands",
    "sensor",
    "passthrough",
    "recipe",
)


def check_network_params(fitted, now, how):
    """Refuse to continue training (``how``: the call) when a parameter of the network
    changed since fit: ``fitted`` and ``now`` map :data:`NETWORK_PARAMS` to their values."""
    for name in NETWORK_PARAMS:
        before = fitted[name]
        if not _same_param(before, now[name]):
            raise ValueError(
                f"{how} continues the fitted network, but {name} changed from {before!r} "
                f"to {now[name]!r} since it was fitted. Set {name} back, or train a new "
                "network with fit (and warm_start=False)."
            )
