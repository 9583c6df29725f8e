"""Sample and class weights: validation and the weights ``fit`` trains with.

A weight ``k`` counts the sample ``k`` times, as in scikit-learn: the weighted
loss, the validation score, the pair screening, the standardization statistics
and the convex fits of the default recipe all treat it as ``k`` copies. The
training loss uses the weights rescaled to mean 1 over the training rows
(``sum(w_i loss_i) / sum(w_i)`` for a full batch): scaling every weight by
one factor changes nothing but the convex fits' regularisation, as for
scikit-learn's linear models.
"""

import numpy as np
import torch
from sklearn.utils.class_weight import compute_sample_weight
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import _check_sample_weight

__all__ = []

#: Largest sample (or class) weight: beyond it the weighted sums of a fit overflow.
MAX_WEIGHT = 1e15


def fit_weights(sample_weight, X, y, class_weight=None):
    """The per-sample weights of a fit: ``sample_weight`` times the class weights.

    Returns None when every weight is 1 (the unweighted fit, exactly). Negative,
    NaN, infinite, too large (over :data:`MAX_WEIGHT`) or wrongly shaped
    ``sample_weight``, such values in a ``class_weight`` dict and all-zero
    weights raise a ``ValueError`` naming them.
    """
    if class_weight is not None and type_of_target(y) in ("continuous", "continuous-multioutput"):
        raise ValueError(
            f"class_weight={class_weight!r} applies to class labels, but y is continuous "
            "(regression). Use sample_weight to weight samples, or class_weight=None."
        )
    if sample_weight is None and class_weight is None:
        return None
    weight = np.ones(len(X))
    if sample_weight is not None:
        try:
            weight = _check_sample_weight(
                sample_weight, X, dtype=np.float64, ensure_non_negative=True, copy=True
            )
        except ValueError as exc:
            raise ValueError(
                f"Invalid sample_weight: {exc} Pass one finite, non-negative weight per "
                "sample, not all zero."
            ) from exc
        _check_magnitude(weight, "sample_weight")
    if class_weight is not None:
        _check_class_weight(class_weight)
        weight = weight * compute_sample_weight(class_weight, y)
        _check_magnitude(weight, "sample_weight times class_weight")
    if not weight.any():
        raise ValueError(
            "The sample weights (sample_weight times class_weight) are all zero: at least "
            "one sample must have a non-zero weight."
        )
    return None if np.all(weight == 1) else weight


def _check_class_weight(class_weight):
    """Refuse class weights that ``sample_weight`` would refuse: negative, NaN, infinite."""
    if not isinstance(class_weight, dict):
        return  # "balanced": computed from the counts
    bad = {}
    for label, value in class_weight.items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            bad[label] = value
            continue
        if isinstance(value, (str, bytes)) or not (0 <= number <= MAX_WEIGHT):
            bad[label] = value
    if bad:
        raise ValueError(
            f"Invalid class_weight: {bad} (class: weight) are not finite, non-negative "
            f"numbers up to {MAX_WEIGHT:.0e}. Pass one finite, non-negative weight per class, "
            "not all zero, or class_weight='balanced'."
        )


def _check_magnitude(weight, name):
    """Refuse weights whose sums and products with the data would overflow."""
    peak = weight.max(initial=0.0)
    if peak > MAX_WEIGHT:
        raise ValueError(
            f"Invalid sample weights: {name} reaches {peak:.4g}, above {MAX_WEIGHT:.0e}, "
            "where the fit's weighted sums overflow. Divide all the weights by one common "
            "factor (a weight counts the sample that many times: only their ratios matter, "
            "and the strength of the convex fits' regularisation)."
        )


def check_part(weight, part):
    """Refuse a training or validation part whose samples all weigh zero."""
    if weight is not None and not weight.any():
        raise ValueError(
            f"Every sample of the {part} part of the data has sample weight zero. Give more "
            "samples a non-zero weight, pass an explicit X_val and y_val, or use "
            "early_stopping=False."
        )


def weight_tensor(weight, device):
    """Training-loss weights: a float32 column of mean 1 (see the module docstring), or None."""
    if weight is None:
        return None
    return torch.tensor(weight / weight.mean(), dtype=torch.float32, device=device).reshape(-1, 1)
