"""The data a fit, warm start or ``partial_fit`` call trains on.

:class:`FitDataMixin` holds the data half of :class:`~sknd._estimators._fitting.FittingMixin`:
validating ``X`` and ``y`` (against the fitted model when training continues), freezing
the parameters the network is made of, and splitting off the validation part for early
stopping (stratified, or by ``groups``).
"""

from numbers import Number

import numpy as np
from sklearn.model_selection import GroupShuffleSplit, train_test_split

from .._data._parts import Part
from .._data._weights import fit_weights, merge_duplicates
from ..bands import resolve_bands

__all__ = ["FitDataMixin"]


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


def _matching_outputs(codes_val, codes):
    """``codes_val`` shaped as ``codes``, or a ValueError if their outputs differ."""
    outputs, outputs_val = (1 if np.ndim(c) == 1 else np.shape(c)[1] for c in (codes, codes_val))
    if outputs != outputs_val:
        raise ValueError(
            f"y_val has {outputs_val} output(s) per sample but y has {outputs}: early stopping "
            "would track the wrong target. Pass y_val with the columns of y."
        )
    return np.reshape(codes_val, (len(codes_val),) + np.shape(codes)[1:])


class FitDataMixin:
    """The data of a fit for ``FittingMixin`` (:mod:`sknd._estimators._fitting`): checked, split.

    Uses ``_validate_X_y``, ``_record_band_range`` and ``_make_task`` of
    :class:`~sknd._estimators._base.BaseND` and its subclasses.
    """

    def _validation_split(self, rows, task, X_val, y_val, seed, groups=None):
        """Return the ``(train, valid)`` :class:`~sknd._data._parts.Part` of ``rows``.

        ``valid`` is None without a validation part; an explicit ``X_val`` is not
        weighted.

        With ``groups``, the internal split holds out whole groups (fields, spatial
        blocks): correlated samples on both sides would make early stopping optimistic.
        Otherwise it never holds out what training needs (:func:`_keep_in_training`):
        the rows, merged duplicates included, are split as ``validation_fraction``
        says, then a class's only rows come back to training.
        """
        if (X_val is None) != (y_val is None):
            raise ValueError("Pass both X_val and y_val, or neither.")
        if X_val is not None:
            try:
                X_val, y_val = self._validate_X_y(X_val, y_val, reset=False, name="X_val")
            except ValueError as exc:
                if "X_val" in str(exc) or "y_val" in str(exc):
                    raise
                # scikit-learn calls any target "y": here it is y_val.
                message = str(exc).replace("Input y ", "Input y_val ")
                raise ValueError(f"Invalid validation data X_val, y_val: {message}") from exc
            codes_val = task.encode(y_val, "y_val")
            return rows, Part(X_val, _matching_outputs(codes_val, rows.target))
        if not self.early_stopping:
            return rows, None
        if groups is not None:
            return _group_split(rows, groups, self.validation_fraction, seed)
        n_samples = rows.n_rows
        n_valid = int(np.ceil(self.validation_fraction * n_samples))
        if n_samples - n_valid < 1:
            raise ValueError(
                f"early_stopping=True holds out validation_fraction={self.validation_fraction} "
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

    # ---------------------------------------------------------- network parameters
    #: Parameters the fitted network is made of. A warm start or ``partial_fit`` continues
    #: that network, so they must not change between calls (the others may: lr, epochs ...).
    _NETWORK_PARAMS = (
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

    def _check_network_params(self, how):
        """Refuse to continue training when a parameter of the network changed since fit."""
        for name in self._NETWORK_PARAMS:
            before, now = self._network_params_[name], getattr(self, name)
            if not _same_param(before, now):
                raise ValueError(
                    f"{how} continues the fitted network, but {name} changed from {before!r} "
                    f"to {now!r} since it was fitted. Set {name} back, or train a new network "
                    "with fit (and warm_start=False)."
                )

    def _start_fit(self, X, y, sample_weight, *, continuing, how, classes=None, groups=None):
        """Validate the data of a fit, warm start or ``partial_fit`` call.

        Returns ``(data, task, groups)``, ``data`` the :class:`~sknd._data._parts.Part` of the data
        with the target encoded, exact duplicate rows merged into weighted ones
        (:func:`~sknd._data._weights.merge_duplicates`). A new fit freezes what the network is made
        of (``epsilon_``, ``variant_``, ``bands_``, the network parameters) and makes a task from
        ``y`` (and ``classes``); a continuing call checks ``X`` and ``y`` against them and keeps the
        fitted task.
        """
        if isinstance(self.batch_size, (bool, np.bool_)):  # an Integral to scikit-learn
            raise ValueError(f"batch_size must be a positive integer, got {self.batch_size!r}.")
        if continuing:
            self._check_network_params(how)
            X, y = self._validate_X_y(X, y, reset=False)
            self._record_band_range(X, continuing=True)
            weight = fit_weights(sample_weight, X, y, getattr(self, "class_weight", None))
            X, y, weight, groups = merge_duplicates(X, y, weight, groups)
            task = self._task.continued(y)
            codes = task.encode(y)
            if np.ndim(codes) == 2 and codes.shape[1] != task.n_outputs:
                raise ValueError(
                    f"y has {codes.shape[1]} target column(s), but the fitted "
                    f"{type(self).__name__} predicts {task.n_outputs}: pass y with the "
                    "columns of the first fit."
                )
            return Part(X, codes, weight), task, groups
        # Frozen at fit: set_params without a refit must not change what the network
        # computes or which inputs it accepts (X_val is checked against these too).
        self.epsilon_, self.variant_ = float(self.epsilon), self.variant
        self._network_params_ = {name: getattr(self, name) for name in self._NETWORK_PARAMS}
        self._band_names_given = self.bands is not None
        X, y = self._validate_X_y(X, y, reset=True)
        self._record_band_range(X, continuing=False)
        # Band names (DataFrame columns or bands=) are frozen at fit time; they
        # label indices_, export_formulas and get_feature_names_out.
        self.bands_ = resolve_bands(
            self.bands,
            n_features=X.shape[1],
            feature_names=getattr(self, "feature_names_in_", None),
            sensor=self.sensor,
        )
        self.band_names_ = np.asarray([band.name for band in self.bands_], dtype=object)
        weight = fit_weights(sample_weight, X, y, getattr(self, "class_weight", None))
        X, y, weight, groups = merge_duplicates(X, y, weight, groups)
        task = self._make_task(y, weight, classes)
        return Part(X, task.encoded, weight), task, groups
