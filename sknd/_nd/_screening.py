"""Pair screening: keep the band pairs whose classic index best explains the target.

With hundreds of bands the ND layer has tens of thousands of pairs (250 bands:
31,125), most of them near-duplicates of their neighbours. Screening ranks
every pair by a univariate statistic of its classic normalized difference
``(b_i - b_j) / (b_i + b_j + epsilon)`` (:func:`sknd._nd._formula.classic_index`
in the estimator's ``variant``: the layer at initialisation up to the
scale of ``epsilon``), computed on the training data before training, and
keeps the best ones:

- regression: the squared Pearson correlation with the target (the largest
  over targets for several outputs);
- classification: the correlation ratio ``eta^2``, the share of the index's
  variance explained by the class means (for two classes, the squared
  point-biserial correlation).

Both are the ``R^2`` of the best fit of the target (or of the index on the
classes) using that index alone, so scores are comparable across pairs; they
are invariant to the order of the bands in a pair and to the scale of the data.
"""

import numpy as np

from ._formula import classic_index

__all__ = []

# Rows x pairs evaluated at once (float64): bounds the screening's memory to ~32 MiB.
_CHUNK_ELEMENTS = 1 << 22


def pair_scores(
    X, y, pairs, classification, variant="reflectance", epsilon=1e-6, sample_weight=None
):
    """Univariate ``R^2`` of each pair's classic index (see the module docstring).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Training bands.
    y : ndarray of shape (n_samples,) or (n_samples, n_targets)
        Class codes ``0..k-1`` (classification) or continuous targets.
    pairs : ndarray of shape (n_pairs, 2)
        Band pairs to score.
    classification : bool
        Whether ``y`` holds class codes.
    variant : {"reflectance", "signed", "softplus"}, default="reflectance"
    epsilon : float, default=1e-6
    sample_weight : ndarray of shape (n_samples,), default=None
        Weight of each sample in the sums of squares (weight ``k`` counts as
        ``k`` copies of the sample).

    Returns
    -------
    scores : ndarray of shape (n_pairs,)
        In ``[0, 1]``; 0 for an index that is constant on ``X``.

    Examples
    --------
    >>> X = np.array([[1.0, 2.0, 3.0], [2.0, 1.0, 3.0], [1.0, 3.0, 2.0], [3.0, 1.0, 1.0]])
    >>> y = np.array([0.0, 1.0, 0.0, 1.0])
    >>> pairs = np.array([[0, 1], [0, 2], [1, 2]])
    >>> pair_scores(X, y, pairs, classification=False).round(2)
    array([0.96, 0.55, 0.23])
    """
    X = np.asarray(X, dtype=np.float64)
    n_samples = len(X)
    weight = np.ones(n_samples) if sample_weight is None else np.asarray(sample_weight, float)
    weight = weight / weight.sum()
    if classification:
        codes = np.asarray(y).astype(np.intp).ravel()
        # Rows weighted: onehot.T @ values are weighted class sums, counts weighted counts.
        onehot = np.zeros((n_samples, codes.max() + 1))
        onehot[np.arange(n_samples), codes] = weight
        counts = onehot.sum(axis=0)
        onehot = onehot[:, counts > 0]
        counts = counts[counts > 0]
    else:
        targets = np.asarray(y, dtype=np.float64).reshape(n_samples, -1)
        targets = targets - weight @ targets
        target_ss = weight @ targets**2
        targets = targets * weight[:, None]
    scores = np.zeros(len(pairs))
    chunk = max(1, _CHUNK_ELEMENTS // max(n_samples, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        for start in range(0, len(pairs), chunk):
            block = pairs[start : start + chunk]
            values = classic_index(X, block, epsilon, variant)
            values -= weight @ values
            total_ss = weight @ values**2
            if classification:
                # eta^2 = between-class sum of squares / total sum of squares.
                class_sums = onehot.T @ values
                between_ss = (class_sums**2 / counts[:, None]).sum(axis=0)
                score = between_ss / total_ss
            else:
                # r^2 = cov^2 / (var_x var_y), the best over targets.
                cross = targets.T @ values
                score = (cross**2 / (target_ss[:, None] * total_ss)).max(axis=0)
            # A constant index (or target) explains nothing.
            scores[start : start + chunk] = np.where(np.isfinite(score), np.clip(score, 0, 1), 0)
    return scores


def screen_pairs(
    X, y, pairs, n_keep, classification, variant="reflectance", epsilon=1e-6, sample_weight=None
):
    """The ``n_keep`` best-scoring pairs (see :func:`pair_scores`), in their original order.

    Ties keep the earlier pair, so the result is deterministic.

    Examples
    --------
    >>> X = np.array([[1.0, 2.0, 3.0], [2.0, 1.0, 3.0], [1.0, 3.0, 2.0], [3.0, 1.0, 1.0]])
    >>> y = np.array([0.0, 1.0, 0.0, 1.0])
    >>> screen_pairs(X, y, np.array([[0, 1], [0, 2], [1, 2]]), 2, False).tolist()
    [[0, 1], [0, 2]]
    """
    scores = pair_scores(X, y, pairs, classification, variant, epsilon, sample_weight)
    best = np.sort(np.argsort(-scores, kind="stable")[:n_keep])
    return pairs[best]
