"""Train / validation / test splits of the paper's cross-validation protocol."""

import numbers

import numpy as np
from sklearn.model_selection import StratifiedKFold
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, validate_params

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
