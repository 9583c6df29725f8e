"""Learning tasks: how targets are encoded, trained on, scored and decoded.

The estimators share one fitting routine; what differs between classification
and regression (output units, loss, early-stopping monitor, decoding of the
network output) lives here.
"""

import numpy as np
import torch
from scipy.special import expit
from sklearn.metrics import r2_score
from sklearn.utils.multiclass import check_classification_targets, type_of_target

__all__ = []

# Up to this many classes, decoding compares columns instead of calling argmax
# along rows (measured per sample at 2-4 classes: 2-3x faster; from 5 slower).
_COLUMNWISE_MAX_CLASSES = 4


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
        check_classification_targets(y)
        if classes is None:
            self.classes, self.encoded = np.unique(y, return_inverse=True)
        else:  # every class of the data set (partial_fit), y holds some of them
            check_classification_targets(classes)
            self.classes = np.unique(classes)
            self.encoded = self.encode(np.asarray(y))
        if len(self.classes) < 2:
            raise ValueError(
                "The target has only one class: a classifier needs samples of at least "
                f"2 classes in the data, but the data contains only one class: {self.classes[0]!r}."
            )

    @property
    def binary(self):
        return len(self.classes) == 2

    @property
    def n_outputs(self):
        return 1 if self.binary else len(self.classes)

    @property
    def criterion(self):
        return torch.nn.BCEWithLogitsLoss if self.binary else torch.nn.CrossEntropyLoss

    def encode(self, y):
        """Map labels to class positions; unseen labels raise ``ValueError``."""
        positions = np.searchsorted(self.classes, y)
        positions = np.clip(positions, 0, len(self.classes) - 1)
        unseen = self.classes[positions] != y
        if np.any(unseen):
            raise ValueError(
                f"y contains labels not seen in the training data: {np.unique(y[unseen])!r}."
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
        """Class probabilities (float64) from raw outputs, without overflow for any logit.

        Computed class by class on a ``(n_classes, n_samples)`` array: a softmax
        along rows of a few values each runs several times slower. The result is
        its transpose, an ``(n_samples, n_classes)`` Fortran-ordered array.
        """
        if self.binary:
            proba = np.empty((2, len(output)))
            positive = expit(output[:, 0].astype(np.float64), out=proba[1])
            np.subtract(1.0, positive, out=proba[0])
            return proba.T
        logits = output.T.astype(np.float64, order="C")
        logits -= logits.max(axis=0)
        proba = np.exp(logits, out=logits)
        proba /= proba.sum(axis=0)
        return proba.T

    def decode(self, output):
        """Predicted labels from raw outputs."""
        if self.binary:
            return self.classes[(output[:, 0] > 0).astype(np.intp)]
        if output.shape[1] > _COLUMNWISE_MAX_CLASSES:
            return self.classes[output.argmax(1)]
        # Column by column: argmax over rows of a few values runs 2-3x slower.
        # Strictly greater: ties keep the first column, as argmax does.
        index = np.greater(output[:, 1], output[:, 0]).astype(np.intp)
        best = np.maximum(output[:, 0], output[:, 1])
        for k in range(2, output.shape[1]):
            column = output[:, k]
            np.copyto(index, k, where=column > best)
            np.maximum(best, column, out=best)
        if np.isnan(best).any():  # NaN propagated: argmax returns the first NaN's position
            return self.classes[output.argmax(1)]
        return self.classes[index]


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

    @property
    def n_outputs(self):
        return len(self.mean)

    def encode(self, y):
        return np.asarray(y, dtype=np.float64).reshape(len(y), -1)

    def target_tensor(self, y):
        return torch.as_tensor((y - self.mean) / self.scale, dtype=torch.float32)

    def score(self, target, output, sample_weight=None):
        """R^2 (uniform average over targets, weighted by ``sample_weight``) of raw outputs."""
        if sample_weight is not None:
            sample_weight = sample_weight.cpu().double().numpy().reshape(-1)
        return r2_score(target.cpu().numpy(), output.cpu().numpy(), sample_weight=sample_weight)

    def decode(self, output):
        """Predictions on the original target scale."""
        prediction = output.astype(np.float64) * self.decode_scale + self.mean
        return prediction.ravel() if self.ndim == 1 else prediction


def infer_task(y, sample_weight=None, classes=None):
    """Choose classification or regression from the target's type (for the transformer).

    ``classes`` (all classes of the data set, given to ``partial_fit``) means classification.
    """
    if classes is None and type_of_target(y) in ("continuous", "continuous-multioutput"):
        return RegressionTask(y, sample_weight)
    return ClassificationTask(y, classes)
