"""sknd's default training recipe (``recipe="sknd"``): conditioned indices and a convex head.

Under the paper's recipe a depth-2 ND network, which starts *at* the classic indices and
can represent "logistic regression on all classic indices", stops on a plateau below that
model (forest type: 87.2 against 88.9). The steps below, for depth-2 ND and AttND
networks, close the gap; each was measured on the shipped data and synthetic tasks
(benchmarks/bench_recipe.py, benchmarks/results_issue11/README.md, docs/training.md):

1. **Conditioning.** A :class:`~sknd.networks.Standardize` layer after the first block,
   with the mean and standard deviation of its outputs on the training data at
   initialisation (the classic indices). ND outputs of real reflectance span narrow
   ranges; Adam and the output layer then see well-scaled features. The statistics are
   buffers: trainable parameter counts and illumination invariance do not change.
2. **Convex warm start.** The output layer starts from the convex fit on the
   standardized classic indices: logistic regression (``C=1``) for classes, ridge
   regression (``alpha=1``) on the standardized targets for regression.
3. **Epoch 0.** Early stopping scores the starting model before the first update, so
   training can never end below it (``best_epoch_ = 0``: the start was best).
4. **Convex refit.** After early stopping, the output layer is refitted by the same convex
   fit on the learned (standardized) indices of the training *and* validation rows, with
   the band weights frozen, starting from the trained layer: the network trains on
   70/90 of the rows, a convex fit uses them all.

On large training sets steps 1, 2 and 4 use an unbiased sample of the rows (see
:func:`convex_rows`): their cost then stops growing with the data while training's does.

Standardization alone (without 2) lost 2.5-3.4 points on two data sets, and at depths 3
and 4 (where 2 and 4 do not apply) a point on forest type: deeper networks train as in the
paper. Separate learning rates, plateau schedules and capped convex fits did not help (see
the report).
"""

import warnings

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, Ridge

from ._tasks import ClassificationTask
from .networks import describe, forward_rows

__all__ = []

#: Values of the estimators' ``recipe`` parameter.
RECIPES = ("sknd", "paper")

# Regularisation of the convex fits, as measured: C=10 lost a point on one task.
_C = 1.0
_ALPHA = 1.0
# lbfgs iterations: the fits must converge (capped at 100 they lost 0.8-1.1 points).
_MAX_ITER = 2000

#: Rows of the convex fits and of the conditioning statistics: all of them up to this many
#: per coefficient of the output layer, and at least :data:`MIN_CONVEX_ROWS`; from there a
#: sample (:func:`convex_rows`). A maximum-likelihood fit of ``p`` coefficients on ``m``
#: rows loses about ``p / (2 m)`` of log-likelihood per row to its estimation error:
#: 0.005 nats at 100 rows per coefficient, far below what 10 epochs of training change.
ROWS_PER_COEFFICIENT = 100
#: ... (the shipped data sets, at most 4,435 training rows, always use all rows) ...
MIN_CONVEX_ROWS = 20_000
#: ... and at least this many rows of each class (all of a smaller class).
MIN_CLASS_ROWS = 1000


def _parts(module):
    """``(first block, Standardize layer, output layer)`` of a depth-2 recipe network."""
    first, standardize, output = (layer.module for layer in describe(module))
    return first, standardize, output


def _convex_fit(features, target, task, output, sample_weight=None):
    """Fit ``output`` (an ``nn.Linear``) as a convex model of ``features``, in place.

    Starts from the layer's current weights. Leaves the layer unchanged when the fit is
    not possible (a class missing from the rows) or not finite.
    """
    weight = output.weight.detach().cpu().double().numpy()
    bias = output.bias.detach().cpu().double().numpy()
    if isinstance(task, ClassificationTask):
        model = LogisticRegression(C=_C, max_iter=_MAX_ITER, warm_start=True)
        model.coef_, model.intercept_ = weight, bias
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            try:
                model.fit(features, target, sample_weight=sample_weight)
            except ValueError:  # a single class among the rows
                return
        if len(model.classes_) != len(task.classes):
            return
    else:
        model = Ridge(alpha=_ALPHA).fit(features, target, sample_weight=sample_weight)
    new_weight = np.asarray(model.coef_, dtype=np.float64).reshape(weight.shape)
    new_bias = np.asarray(model.intercept_, dtype=np.float64).reshape(bias.shape)
    if not (np.isfinite(new_weight).all() and np.isfinite(new_bias).all()):
        return
    with torch.no_grad():
        output.weight.copy_(torch.as_tensor(new_weight))
        output.bias.copy_(torch.as_tensor(new_bias))


def convex_budget(n_coefficients):
    """Most rows the convex fits of an output layer with ``n_coefficients`` use."""
    return max(MIN_CONVEX_ROWS, ROWS_PER_COEFFICIENT * n_coefficients)


def convex_rows(target, task, n_coefficients, sample_weight=None):
    """``(rows, weight)`` for the convex fits: all rows, or an unbiased sample of them.

    Up to ``max(MIN_CONVEX_ROWS, ROWS_PER_COEFFICIENT * n_coefficients)`` rows, all of
    them (``rows`` is None, ``weight`` is ``sample_weight``). Beyond, a seeded random
    sample of that size, drawn per class for classification (at least
    :data:`MIN_CLASS_ROWS` of each class, so that rare classes stay in the fits), each row
    weighted by its class's rows over its sampled rows (times its sample weight): the
    weighted statistics and the convex objective on the sample are unbiased estimates of
    those on all rows, with the same regularisation.
    """
    n_samples = len(target)
    budget = convex_budget(n_coefficients)
    if n_samples <= budget:
        return None, sample_weight
    if isinstance(task, ClassificationTask):
        groups = [np.flatnonzero(target == code) for code in np.unique(target)]
    else:
        groups = [np.arange(n_samples)]
    rng = np.random.default_rng(0)
    chosen, inverse = [], []
    for group in groups:
        size = min(len(group), max(MIN_CLASS_ROWS, -(-budget * len(group) // n_samples)))
        chosen.append(rng.choice(group, size, replace=False))
        inverse.append(np.full(size, len(group) / size))
    chosen, inverse = np.concatenate(chosen), np.concatenate(inverse)
    order = np.argsort(chosen)  # rows in their order in the data: sequential reads
    rows, weight = chosen[order], inverse[order]
    if sample_weight is not None:
        weight = weight * np.asarray(sample_weight)[rows]
    return rows, weight


def _sample(X, target, task, output, sample_weight):
    """``(X, target, sample_weight)`` restricted to :func:`convex_rows` of the data."""
    rows, weight = convex_rows(
        target, task, output.weight.numel() + output.bias.numel(), sample_weight
    )
    if rows is None:
        return X, target, sample_weight
    return X[rows], target[rows], weight


def prepare(module, X_train, target_train, task, rows, sample_weight=None):
    """Steps 1 and 2: standardize the first block's outputs, warm-start the output layer.

    ``target_train`` is what the convex fit learns: class codes, or the standardized
    regression targets. ``sample_weight`` weights the statistics and the fit (weight
    ``k`` counts as ``k`` copies of the sample, as in scikit-learn's linear models).
    Both use :func:`convex_rows` of the training rows.
    """
    first, standardize, output = _parts(module)
    X_train, target_train, sample_weight = _sample(
        X_train, target_train, task, output, sample_weight
    )
    indices = torch.as_tensor(forward_rows(first, X_train, rows))
    standardize.fit(indices, sample_weight)
    # The standardized indices from the same first-block pass, in float64 as forward_rows'.
    features = forward_rows(standardize, indices.numpy(), rows)
    _convex_fit(features, target_train, task, output, sample_weight)


def refit(module, X, target, task, rows, sample_weight=None):
    """Step 4: refit the output layer on the learned indices of ``X`` (all rows, or
    :func:`convex_rows` of them)."""
    first, standardize, output = _parts(module)
    X, target, sample_weight = _sample(X, target, task, output, sample_weight)
    features = forward_rows(torch.nn.Sequential(first, standardize), X, rows)
    _convex_fit(features, target, task, output, sample_weight)


def start_score(module, X_valid, target_valid, task, rows, sample_weight=None):
    """Step 3: the (weighted) validation score of the starting model."""
    output = torch.as_tensor(forward_rows(module, X_valid, rows))
    if sample_weight is not None:
        sample_weight = torch.as_tensor(sample_weight)
    return float(task.score(target_valid, output, sample_weight))
