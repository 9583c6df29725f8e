"""Train / validation / test splits: the paper's stratified folds, plain folds for
regression, and group or spatial-block folds that keep correlated samples together."""

import numbers

import numpy as np
from sklearn.model_selection import (
    GroupKFold,
    GroupShuffleSplit,
    KFold,
    StratifiedGroupKFold,
    StratifiedKFold,
)
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params

# With 10 folds the test part is 10 %; a validation share of 2/9 of the remaining 90 % makes
# the whole 70 / 20 / 10, as in the paper.
PAPER_VALIDATION_SHARE = 2 / 9


@validate_params(
    {
        "y": ["array-like"],
        "n_splits": [Interval(numbers.Integral, 2, None, closed="left")],
        "validation_share": [Interval(numbers.Real, 0, 1, closed="neither")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def paper_splits(y, n_splits=10, *, validation_share=PAPER_VALIDATION_SHARE, random_state=None):
    """Stratified K-fold splits with a stratified validation set carved out of each fold.

    Each fold of a shuffled :class:`~sklearn.model_selection.StratifiedKFold` is the test
    set; the other samples are split, again stratified, into a training and a validation
    set, the latter holding ``validation_share`` of them. With the defaults (10 folds,
    ``validation_share=2/9``) the proportions are the paper's 70 / 20 / 10 % within one
    sample per class. With other fold counts the test share is ``1 / n_splits`` and training
    and validation keep their 7 : 2 ratio.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels used for stratification.
    n_splits : int, default=10
        Number of folds.
    validation_share : float, default=2/9
        Fraction of the non-test samples of a fold used for validation (early stopping).
    random_state : int, RandomState instance or None, default=None
        Seeds the fold assignment and the validation splits. Pass an int for
        reproducible splits.

    Returns
    -------
    splits : list of tuple of ndarray
        One ``(train, validation, test)`` triple of sorted integer index arrays per fold;
        every sample is in exactly one test set.

    Examples
    --------
    >>> import numpy as np
    >>> from sknd.experiments import paper_splits
    >>> y = np.repeat([0, 1], 50)
    >>> splits = paper_splits(y, n_splits=10, random_state=0)
    >>> [len(part) for part in splits[0]]
    [70, 20, 10]
    """
    y = np.asarray(y)
    rng = check_random_state(random_state)
    kfold = StratifiedKFold(
        n_splits=n_splits, shuffle=True, random_state=int(rng.randint(np.iinfo(np.int32).max))
    )
    classes = np.unique(y)
    test_share = 1 / n_splits
    val_share = validation_share * (1 - test_share)
    splits = []
    for rest, test in kfold.split(np.zeros((len(y), 1)), y):
        validation = []
        for c in classes:
            n_c = np.count_nonzero(y == c)
            rest_c = rest[y[rest] == c]
            # StratifiedKFold puts floor or ceil of n_c / n_splits samples of each class in
            # the test fold. Rounding the validation target shifted by half that error keeps
            # validation *and* training within one sample of their share for every class
            # (a second stratified split of the rest can be 1.4 samples off).
            test_error = (n_c - rest_c.size) - test_share * n_c
            n_val = int(np.clip(np.round(val_share * n_c - test_error / 2), 0, rest_c.size))
            validation.append(rng.permutation(rest_c)[:n_val])
        validation = np.sort(np.concatenate(validation))
        train = np.setdiff1d(rest, validation, assume_unique=True)
        splits.append((train, validation, np.sort(test)))
    return splits


def _validation_part(rest, y, groups, validation_share, stratified, seed):
    """Split the non-test indices ``rest`` into (train, validation), whole groups at a time."""
    if groups is None:
        # Regression without groups: exactly the paper's share, drawn at random.
        n_val = int(round(validation_share * len(rest)))
        validation = check_random_state(seed).permutation(rest)[:n_val]
        return np.setdiff1d(rest, validation), np.sort(validation)
    X = np.zeros((len(rest), 1))
    if stratified:
        # The first of round(1 / share) stratified group folds: about the validation share
        # of the groups, with the class mix kept as far as whole groups allow.
        n_parts = max(2, int(round(1 / validation_share)))
        # Few groups left (e.g. 4 groups, 4 folds): one group each for validation.
        n_parts = min(n_parts, len(np.unique(groups[rest])))
        splitter = StratifiedGroupKFold(n_splits=n_parts, shuffle=True, random_state=seed)
    else:
        splitter = GroupShuffleSplit(n_splits=1, test_size=validation_share, random_state=seed)
    train, validation = next(splitter.split(X, y[rest], groups[rest]))
    return np.sort(rest[train]), np.sort(rest[validation])


@validate_params(
    {
        "y": ["array-like"],
        "groups": ["array-like", None],
        "n_splits": [Interval(numbers.Integral, 2, None, closed="left")],
        "task": [StrOptions({"classification", "regression"})],
        "validation_share": [Interval(numbers.Real, 0, 1, closed="neither")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def experiment_splits(
    y,
    groups=None,
    *,
    n_splits=10,
    task="classification",
    validation_share=PAPER_VALIDATION_SHARE,
    random_state=None,
):
    """Train / validation / test splits for any task, optionally keeping groups together.

    Without groups, classification uses :func:`paper_splits` and regression a shuffled
    :class:`~sklearn.model_selection.KFold` with a random validation share of the rest.
    With ``groups`` (fields, plots, spatial blocks from :func:`spatial_blocks`) no group
    is ever split: the test folds come from
    :class:`~sklearn.model_selection.StratifiedGroupKFold` (classification) or a shuffled
    :class:`~sklearn.model_selection.GroupKFold` (regression); the validation part of each
    fold is ``validation_share`` of the non-test groups
    (:class:`~sklearn.model_selection.GroupShuffleSplit`) for regression, and for
    classification the first of ``round(1 / validation_share)`` stratified group folds of
    the rest (a quarter of the non-test groups with the paper's share, so that every class
    can reach validation). Correlated samples on both sides of a split make the test score
    (and early stopping) optimistic.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Targets (class labels are used for stratification).
    groups : array-like of shape (n_samples,), default=None
        Group label of each sample.
    n_splits : int, default=10
        Number of folds.
    task : {"classification", "regression"}, default="classification"
        Stratify by class or not.
    validation_share : float, default=2/9
        Fraction of the non-test samples (or groups) used for validation.
    random_state : int, RandomState instance or None, default=None
        Seeds the folds and the validation parts.

    Returns
    -------
    splits : list of tuple of ndarray
        One ``(train, validation, test)`` triple of sorted index arrays per fold.

    Examples
    --------
    >>> import numpy as np
    >>> from sknd.experiments import experiment_splits
    >>> y = np.arange(100.0)
    >>> groups = np.repeat(np.arange(20), 5)
    >>> splits = experiment_splits(y, groups, n_splits=5, task="regression", random_state=0)
    >>> train, validation, test = splits[0]
    >>> bool(np.intersect1d(groups[train], groups[test]).size == 0)
    True
    """
    y = np.asarray(y)
    check_groups(y, groups, n_splits, task)
    rng = check_random_state(random_state)
    if groups is None and task == "classification":
        return paper_splits(y, n_splits, validation_share=validation_share, random_state=rng)
    seed = int(rng.randint(np.iinfo(np.int32).max))
    stratified = task == "classification"
    X = np.zeros((len(y), 1))
    if groups is None:
        outer = KFold(n_splits=n_splits, shuffle=True, random_state=seed).split(X)
    elif stratified:
        outer = StratifiedGroupKFold(n_splits=n_splits, shuffle=True, random_state=seed).split(
            X, y, groups
        )
    else:
        outer = GroupKFold(n_splits=n_splits, shuffle=True, random_state=seed).split(X, y, groups)
    groups = None if groups is None else np.asarray(groups)
    splits = []
    for rest, test in outer:
        train, validation = _validation_part(
            rest, y, groups, validation_share, stratified, int(rng.randint(np.iinfo(np.int32).max))
        )
        splits.append((train, validation, np.sort(test)))
    return splits


def check_groups(y, groups, n_splits, task, *, name="groups", folds_option="n_splits"):
    """Raise a ``ValueError`` saying what to change when ``y`` and ``groups`` cannot be split.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Targets.
    groups : array-like of shape (n_samples,) or None
        Group labels.
    n_splits : int
        Number of folds wanted.
    task : {"classification", "regression"}
        The learning task.
    name : str, default="groups"
        How to call the groups in messages (the command line names the column).
    folds_option : str, default="n_splits"
        How to call the number of folds in messages (``--folds`` on the command line).

    Examples
    --------
    >>> import numpy as np
    >>> from sknd.experiments import check_groups
    >>> check_groups(np.arange(6.0), np.repeat([0, 1, 2], 2), 2, "regression")
    >>> check_groups(np.arange(6.0), np.repeat([0, 1, 2], 2), 5, "regression")
    Traceback (most recent call last):
    ...
    ValueError: groups has 3 distinct groups, fewer than n_splits=5 folds: ...
    """
    y = np.asarray(y)
    if task == "classification":
        _, counts = np.unique(y, return_counts=True)
        if counts.min() < n_splits:
            raise ValueError(
                f"The smallest class has {counts.min()} samples, fewer than "
                f"{folds_option}={n_splits} folds: lower {folds_option}, drop that class, or, "
                "if the target is a continuous quantity, evaluate it as regression."
            )
    if groups is None:
        return
    groups = np.asarray(groups)
    if groups.shape != (len(y),):
        raise ValueError(f"{name} must have one value per sample, got shape {groups.shape}.")
    n_groups = len(np.unique(groups))
    if n_groups < 3:
        what = "a single group" if n_groups == 1 else "only 2 groups"
        raise ValueError(
            f"{name} has {what}: grouped cross-validation needs at least "
            f"{max(n_splits, 3)} groups (whole groups for test, validation and training). "
            "Pick a column that separates fields or plots, or smaller spatial blocks."
        )
    if n_groups < n_splits:
        raise ValueError(
            f"{name} has {n_groups} distinct groups, fewer than {folds_option}={n_splits} "
            f"folds: pass {folds_option}={n_groups} or fewer, or smaller spatial blocks."
        )


def spatial_blocks(coords, size):
    """Group label of each sample: the square block of side ``size`` it falls in.

    Blocks are cells of a regular grid anchored at the smallest coordinates; passing the
    labels as ``groups`` keeps each block on one side of every split, which is spatial
    block cross-validation (Roberts et al. 2017) with scikit-learn's group splitters.

    Parameters
    ----------
    coords : array-like of shape (n_samples, 2)
        Easting/northing (or x/y) in the units of ``size``.
    size : float
        Side of a block (> 0).

    Returns
    -------
    blocks : ndarray of shape (n_samples,)
        Integer block labels, numbered row by row over the occupied grid.

    Examples
    --------
    >>> import numpy as np
    >>> from sknd.experiments import spatial_blocks
    >>> spatial_blocks(np.array([[0.0, 0.0], [0.4, 0.9], [1.2, 0.1], [1.5, 1.5]]), 1.0)
    array([0, 0, 1, 3])
    """
    coords = np.asarray(coords, dtype=np.float64)
    if coords.ndim != 2 or coords.shape[1] != 2:
        raise ValueError(f"coords must have two columns (x, y), got shape {coords.shape}.")
    if not np.isfinite(coords).all():
        raise ValueError("coords contain NaN or infinite values; drop or fill those rows.")
    if not size > 0:
        raise ValueError(f"The block size must be positive, got {size}.")
    cells = np.floor((coords - coords.min(axis=0)) / size).astype(np.int64)
    n_columns = int(cells[:, 0].max()) + 1
    return cells[:, 1] * n_columns + cells[:, 0]
