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
        weight = weight * _class_weights(class_weight, y, weight)
        _check_magnitude(weight, "sample_weight times class_weight")
    if not weight.any():
        raise ValueError(
            "The sample weights (sample_weight times class_weight) are all zero: at least "
            "one sample must have a non-zero weight."
        )
    return None if np.all(weight == 1) else weight


def _class_weights(class_weight, y, weight):
    """Each sample's class weight; ``"balanced"`` from the classes' weighted counts.

    A sample of weight ``k`` counts ``k`` times in its class's count, so that
    integer weights give the class weights of the rows repeated: the total weight
    over the number of classes times the class's weight, as scikit-learn's
    ``compute_class_weight(..., sample_weight=...)`` (1.7 and later) computes it.
    """
    y = np.asarray(y)
    if class_weight != "balanced" or y.ndim != 1:
        return compute_sample_weight(class_weight, y)
    classes, codes = np.unique(y, return_inverse=True)
    counts = np.bincount(codes.reshape(-1), weights=weight, minlength=len(classes))
    present = counts > 0
    # A class whose rows all weigh 0 trains nothing: its weight stays unused.
    per_class = np.zeros(len(classes))
    per_class[present] = counts.sum() / (present.sum() * counts[present])
    return per_class[codes.reshape(-1)]


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


def weight_tensor(weight, device):
    """Training-loss weights: a float32 column of mean 1 (see the module docstring), or None."""
    if weight is None:
        return None
    return torch.tensor(weight / weight.mean(), dtype=torch.float32, device=device).reshape(-1, 1)


def merge_duplicates(X, y, weight, groups=None):
    """Merge exact duplicate rows into one weighted row.

    Rows with the same bands, target (and group, when ``groups`` is given) become
    one row weighing the sum of their weights; rows of weight zero are dropped.
    Where rows were merged or weigh other than 1, they come back in an order
    set by their values alone, so that a weight ``k`` gives, bit for bit, the
    model of the row repeated ``k`` times in any order (scikit-learn's
    sample-weight equivalence); otherwise in the order given (a weight of 0 is
    then exactly an absent row). It also keeps copies of one pixel from landing
    on both sides of the validation split. Duplicates with different targets
    stay separate rows, one per target.

    Returns ``(X, y, weight, groups)``: ``weight`` is None when every merged
    weight is 1 (no duplicates, no weights), ``groups`` None when it was.
    """
    n_samples = len(X)
    y = np.asarray(y)
    axis = 0 if y.ndim == 2 else None
    codes = [np.unique(y, axis=axis, return_inverse=True)[1].reshape(-1)]
    if groups is not None:
        groups = np.asarray(groups)
        if groups.ndim != 1 or len(groups) != n_samples:
            raise ValueError(
                f"groups must be one label per sample: got shape {groups.shape} for "
                f"{n_samples} samples."
            )
        codes.append(np.unique(groups, return_inverse=True)[1].reshape(-1))
    words = _row_words(X, codes)
    first, inverse = _unique_rows(words)
    counts = np.bincount(inverse, weights=weight, minlength=len(first))
    kept = counts > 0
    first, counts = first[kept], counts[kept]
    if len(inverse) == len(kept) and np.all(counts == 1):
        # Nothing to merge and no weight but 0 and 1: the rows as given, less weight 0.
        first = np.sort(first)
    merged_groups = None if groups is None else groups[first]
    merged_weight = None if np.all(counts == 1) else counts
    return X[first], y[first], merged_weight, merged_groups


def _row_words(X, codes):
    """Each row's bits (bands, then the integer ``codes``) as a row of uint64 words."""
    X = np.ascontiguousarray(X)
    bits = X.view(np.uint64) if X.dtype.itemsize == 8 else X.view(np.uint32).astype(np.uint64)
    columns = [code.astype(np.int64).view(np.uint64)[:, None] for code in codes]
    return np.hstack([bits, *columns])


def _unique_rows(words):
    """``(first, inverse)`` of the distinct rows of ``words``, in an order that depends on
    their values alone.

    Sorted by a 64-bit hash of each row (one integer sort: sorting the rows' bytes takes
    2-3 times longer on 1e6 rows of 10 bands, benchmarks/bench_merge_duplicates.py); on
    a hash collision between different rows, sorted by the bytes themselves.
    """
    hashes = np.full(len(words), 0xCBF29CE484222325, dtype=np.uint64)
    for column in words.T:  # FNV-1a over 64-bit words, with a shift to mix the high bits
        hashes ^= column
        hashes *= np.uint64(0x100000001B3)
        hashes ^= hashes >> np.uint64(29)
    # Ties are equal rows (checked below): which of them comes first changes no value.
    order = np.argsort(hashes)
    ordered, hashes = words[order], hashes[order]
    same_hash = hashes[1:] == hashes[:-1]
    same_row = (ordered[1:] == ordered[:-1]).all(axis=1)
    if (same_hash & ~same_row).any():  # a collision (about n^2 / 2^65)
        rows = np.ascontiguousarray(words).view(np.dtype((np.void, 8 * words.shape[1])))
        _, first, inverse = np.unique(rows.ravel(), return_index=True, return_inverse=True)
        return first, inverse.reshape(-1)
    starts = np.concatenate([[True], ~same_hash])
    inverse = np.empty(len(words), dtype=np.intp)
    inverse[order] = np.cumsum(starts) - 1
    return order[starts], inverse
