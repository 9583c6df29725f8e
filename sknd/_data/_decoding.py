"""Decoding of raw network outputs: class probabilities, labels and regression targets.

Numpy only (scipy for the logistic function), so that a model loaded from a
file (:mod:`sknd._model_file`) decodes without torch or scikit-learn, with the
very code the estimators' tasks (:mod:`sknd._data._tasks`) use.
"""

import sys

import numpy as np

__all__ = []

# Without the compiled argmax (sknd._nd._kernels.argmax_rows): up to this many classes, decoding
# compares columns instead of calling argmax along rows: faster per sample at 2-4 classes,
# slower from 5 (benchmarks/RESULTS.md, "Raster prediction" and "Figures moved out of the
# code").
_COLUMNWISE_MAX_CLASSES = 4


def class_probabilities(output):
    """Class probabilities (float64) from raw outputs, without overflow for any logit.

    One output column is the logit of a binary classifier's second class;
    several are a multiclass classifier's logits (softmax). Computed class by
    class on a ``(n_classes, n_samples)`` array: a softmax along rows of a few
    values each runs several times slower. The result is its transpose, an
    ``(n_samples, n_classes)`` Fortran-ordered array.
    """
    if output.shape[1] == 1:
        from scipy.special import expit

        proba = np.empty((2, len(output)))
        positive = expit(output[:, 0].astype(np.float64), out=proba[1])
        np.subtract(1.0, positive, out=proba[0])
        return proba.T
    logits = output.T.astype(np.float64, order="C")
    logits -= logits.max(axis=0)
    proba = np.exp(logits, out=logits)
    proba /= proba.sum(axis=0)
    return proba.T


def class_labels(output, classes):
    """Predicted labels (items of ``classes``) from raw outputs (one logit or several)."""
    if output.shape[1] == 1:
        return classes[(output[:, 0] > 0).astype(np.intp)]
    # The compiled argmax where the evaluator has loaded numba's kernels (never imported
    # here: a model file evaluated with numpy alone spares numba's start-up); same positions.
    kernels = sys.modules.get("sknd._nd._kernels")
    if kernels is not None and output.dtype.kind == "f":
        index = np.empty(len(output), dtype=np.intp)
        kernels.argmax_rows(np.ascontiguousarray(output.T), index)
        return classes[index]
    if output.shape[1] > _COLUMNWISE_MAX_CLASSES:
        return classes[output.argmax(1)]
    # Column by column: argmax over rows of a few values runs slower (see above).
    # Strictly greater: ties keep the first column, as argmax does.
    index = np.greater(output[:, 1], output[:, 0]).astype(np.intp)
    best = np.maximum(output[:, 0], output[:, 1])
    for k in range(2, output.shape[1]):
        column = output[:, k]
        np.copyto(index, k, where=column > best)
        np.maximum(best, column, out=best)
    if np.isnan(best).any():  # NaN propagated: argmax returns the first NaN's position
        return classes[output.argmax(1)]
    return classes[index]


def regression_targets(output, mean, scale, ndim):
    """Predictions on the original target scale: ``output * scale + mean``.

    ``ndim`` is that of the training target: 1 gives a flat array.
    """
    prediction = output.astype(np.float64) * scale + mean
    return prediction.ravel() if ndim == 1 else prediction
