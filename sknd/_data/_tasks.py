"""Learning tasks: how targets are encoded, trained on, scored and decoded.

The estimators share one fitting routine; what differs between classification
and regression (output units, loss, early-stopping monitor, decoding of the
network output) lives here.
"""

import copy
from numbers import Number

import numpy as np
import pandas as pd
import torch
from sklearn.metrics import r2_score
from sklearn.utils.multiclass import check_classification_targets, type_of_target

from ._decoding import class_labels, class_probabilities, regression_targets

__all__ = []

# Standardized validation targets (training standard deviations from the training mean)
# beyond this make the float32 validation loss overflow, or nearly: early stopping would
# track inf, and the fit would be reported as diverged.
_MAX_STANDARDIZED_TARGET = 1e15


def _kind(value):
    """What numpy cannot order against the others: numbers, strings or bytes (else None)."""
    if isinstance(value, str):
        return "strings"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, (Number, np.number, np.bool_)):
        return "numbers"
    return None


def check_label_kinds(y, name="y"):
    """Refuse targets that mix numbers, strings and bytes, with a ``ValueError`` naming ``name``.

    numpy cannot order such labels (``'<' not supported between 'int' and 'str'``), and a
    list of them silently becomes strings (``[1, "a"]`` -> ``["1", "a"]``). Numeric and
    string arrays pass at no cost; object arrays and lists are looked at element by element
    only when pandas finds them mixed.
    """
    if isinstance(y, np.ndarray) and y.dtype != object:
        return
    try:
        values = np.asarray(y)
        if values.dtype.kind not in "OUS":
            return
        if values.dtype.kind != "O":  # numbers in a list become strings: look at the list
            values = np.asarray(y, dtype=object)
    except (TypeError, ValueError):  # ragged: validation says what is wrong
        return
    values = values.ravel()
    if pd.api.types.infer_dtype(values, skipna=True) not in ("mixed", "mixed-integer"):
        return
    first = {}
    for value in values:
        first.setdefault(_kind(value), value)
        first.pop(None, None)
        if len(first) == 2:
            (kind_a, a), (kind_b, b) = first.items()
            raise ValueError(
                f"{name} mixes {kind_a} and {kind_b} (e.g. {a!r} and {b!r}): class labels "
                "must be all numbers or all strings (regression targets all numbers). "
                f"Convert them to one kind first, e.g. {name} = np.asarray({name}, dtype=str)."
            )


def _label_kind(labels):
    kind = np.asarray(labels).dtype.kind
    return "strings" if kind in "USO" else "numbers"


class ClassificationTask:
    """Binary (one logit, BCE) or multiclass (softmax, cross-entropy) classification."""

    monitor = "valid_score"
    lower_is_better = False
    stratified = True

    def __init__(self, y, classes=None):
        if np.ndim(y) != 1:
            raise ValueError(
                "Multi-output classification targets are not supported: pass y of shape "
                "(n_samples,) (one label per sample), or fit one estimator per output."
            )
        check_label_kinds(y)
        check_classification_targets(y)
        if classes is None:
            self.classes, self.encoded = np.unique(y, return_inverse=True)
        else:  # every class of the data set (partial_fit), y holds some of them
            check_label_kinds(classes, "classes")
            if np.ndim(classes) != 1 or len(np.unique(classes)) < 2:
                raise ValueError(
                    f"classes={classes!r} must list every class of the data set, at least 2 "
                    "(e.g. classes=np.unique(y_all) over all the parts partial_fit will see)."
                )
            check_classification_targets(classes)
            self.classes = np.unique(classes)
            self.encoded = self.encode(np.asarray(y))
        if len(self.classes) < 2:
            raise ValueError(
                "The target has only one class: a classifier needs samples of at least "
                f"2 classes in the data, but the data contains only one class: {self.classes[0]!r}."
            )

    def continued(self, y):
        """The task for more training on ``y`` (warm start, ``partial_fit``): the same."""
        return self

    @property
    def binary(self):
        return len(self.classes) == 2

    @property
    def n_outputs(self):
        return 1 if self.binary else len(self.classes)

    @property
    def criterion(self):
        return torch.nn.BCEWithLogitsLoss if self.binary else torch.nn.CrossEntropyLoss

    def encode(self, y, name="y"):
        """Map labels to class positions; mixed or unseen labels raise ``ValueError``."""
        check_label_kinds(y, name)
        y = np.asarray(y)
        try:
            positions = np.searchsorted(self.classes, y)
        except TypeError:  # e.g. str labels against an object array of numbers
            positions = np.zeros(len(y), dtype=np.intp)
        positions = np.clip(positions, 0, len(self.classes) - 1)
        unseen = np.asarray(self.classes[positions] != y, dtype=bool).reshape(-1)
        if np.any(unseen):
            shown = list(dict.fromkeys(y[unseen].tolist()))
            kinds = _label_kind(y), _label_kind(self.classes)
            hint = (
                f" {name} holds {kinds[0]}, the classes {kinds[1]}: convert {name} to their kind."
                if kinds[0] != kinds[1]
                else f" Drop those samples from {name}, or fit on data that has them."
            )
            classes = self.classes.tolist()
            raise ValueError(
                f"{name} contains labels not seen among the model's classes "
                f"{classes[:10]}{' ...' if len(classes) > 10 else ''}: {shown[:5]}"
                f"{' ...' if len(shown) > 5 else ''}.{hint}"
            )
        return positions

    def target_tensor(self, codes):
        if self.binary:
            return torch.as_tensor(codes, dtype=torch.float32).reshape(-1, 1)
        return torch.as_tensor(codes, dtype=torch.int64)

    def score(self, target, output, sample_weight=None):
        """Accuracy (weighted by ``sample_weight``) of raw outputs against target tensors."""
        if self.binary:
            predicted = (output > 0).to(target.dtype)
        else:
            predicted = output.argmax(1)
        correct = (predicted == target).double().reshape(-1)
        if sample_weight is None:
            return correct.mean().item()
        weight = sample_weight.double().reshape(-1)
        return ((correct * weight).sum() / weight.sum()).item()

    def proba(self, output):
        """Class probabilities (float64) from raw outputs (see :mod:`sknd._data._decoding`)."""
        return class_probabilities(output)

    def decode(self, output):
        """Predicted labels from raw outputs."""
        return class_labels(output, self.classes)


class RegressionTask:
    """Least-squares regression on standardized targets (one output unit per target)."""

    monitor = "valid_loss"
    lower_is_better = True
    stratified = False
    criterion = torch.nn.MSELoss

    #: Largest target magnitude: standardizing and decoding stay within float64.
    max_abs_target = 1e300

    def __init__(self, y, sample_weight=None):
        y = np.asarray(y, dtype=np.float64)
        self.ndim = y.ndim
        y = y.reshape(len(y), -1)
        peak = np.max(np.abs(y), axis=0)
        if np.any(peak > self.max_abs_target):
            raise ValueError(
                f"The regression target y has values too large to standardize in float64 (up "
                f"to {peak.max():.4g}, above {self.max_abs_target:g}): rescale y, e.g. by a "
                "power of ten, and scale the predictions back."
            )
        # Targets are standardized so that the learning rate means the same on every scale;
        # predictions are mapped back, the user never sees the standardized values. The
        # statistics are computed on y / 2**k, 2**k near max |y|: scaling by a power of two
        # is exact, so the results are those of y itself, but squares neither overflow
        # (|y| ~ 1e200) nor underflow (|y| ~ 1e-300) into a wrong standard deviation.
        unit = np.ldexp(1.0, np.frexp(np.where(peak > 0, peak, 1.0))[1])
        z = y / unit
        # Weighted statistics: weight k means the sample counts k times (as repeated).
        mean = np.average(z, axis=0, weights=sample_weight)
        self.mean = mean * unit
        scale = np.sqrt(np.average((z - mean) ** 2, axis=0, weights=sample_weight)) * unit
        self.scale = np.where(scale > 0, scale, 1.0)
        # A constant target is predicted as that constant, whatever the network outputs.
        self.decode_scale = np.where(scale > 0, scale, 0.0)
        self.encoded = y

    def continued(self, y):
        """The task for more training on ``y`` (warm start, ``partial_fit``).

        A target constant so far (a first ``partial_fit`` block of bare soil,
        biomass 0) is decoded as that constant whatever the network outputs
        (scale 0): training on could never change a prediction. Such columns
        take the scale and mean of ``y`` once ``y`` varies, in a new task (the
        fitted one stays as it was, should this call fail).
        """
        frozen = self.decode_scale == 0
        if not frozen.any():
            return self
        fresh = RegressionTask(y)
        if fresh.n_outputs != self.n_outputs:
            return self  # the caller says that the columns differ
        varies = frozen & (fresh.decode_scale > 0)
        if not varies.any():
            return self
        task = copy.copy(self)
        task.mean = np.where(varies, fresh.mean, self.mean)
        task.scale = np.where(varies, fresh.scale, self.scale)
        task.decode_scale = np.where(varies, fresh.decode_scale, self.decode_scale)
        return task

    @property
    def n_outputs(self):
        return len(self.mean)

    def encode(self, y, name="y"):
        """Targets as float64 columns; ``ValueError`` for ones far off the scale of ``y``."""
        y = np.asarray(y, dtype=np.float64).reshape(len(y), -1)
        if y.shape[1] != len(self.mean):
            return y  # the caller says that the columns differ
        if not np.isfinite(y).all():
            row = int(np.flatnonzero(~np.isfinite(y).all(axis=1))[0])
            raise ValueError(
                f"{name} contains NaN or infinite values (first in row {row}): drop those samples."
            )
        with np.errstate(over="ignore"):
            distance = np.abs((y - self.mean) / self.scale)
        if not (distance <= _MAX_STANDARDIZED_TARGET).all():
            worst = np.unravel_index(np.argmax(distance), y.shape)
            far = f"{distance[worst]:.3g}" if np.isfinite(distance[worst]) else "over 1e308"
            fitted = "y" if name != "y" else "the y of the first fit"
            raise ValueError(
                f"{name} has values far outside the range of {fitted}: {y[worst]:.4g} (row "
                f"{worst[0]}) lies {far} of its standard deviations from its mean, more than "
                f"the {_MAX_STANDARDIZED_TARGET:.0e} the float32 loss can handle. Pass {name} "
                f"in the units of {fitted}, or drop those samples."
            )
        return y

    def target_tensor(self, y):
        return torch.as_tensor((y - self.mean) / self.scale, dtype=torch.float32)

    def score(self, target, output, sample_weight=None):
        """R^2 (uniform average over targets, weighted by ``sample_weight``) of raw outputs.

        NaN for a single sample, where R^2 is undefined (scikit-learn warns and
        returns NaN): a tiny validation part, e.g. of a few distinct rows.
        """
        if len(target) < 2:
            return float("nan")
        if sample_weight is not None:
            sample_weight = sample_weight.cpu().double().numpy().reshape(-1)
        return r2_score(target.cpu().numpy(), output.cpu().numpy(), sample_weight=sample_weight)

    def decode(self, output):
        """Predictions on the original target scale."""
        return regression_targets(output, self.mean, self.decode_scale, self.ndim)


def infer_task(y, sample_weight=None, classes=None):
    """Choose classification or regression from the target's type (for the transformer).

    ``classes`` (all classes of the data set, given to ``partial_fit``) means classification.
    """
    if classes is None and type_of_target(y) in ("continuous", "continuous-multioutput"):
        return RegressionTask(y, sample_weight)
    return ClassificationTask(y, classes)
