"""sknd's default training recipe (``recipe="sknd"``): a tuned convex start, then learned indices.

Under the paper's recipe a depth-2 ND network, which starts *at* the classic indices and
can represent "logistic regression on all classic indices", stops on a plateau below that
model (forest type, when this recipe was designed: 87.35 against 88.89; see
docs/training.md). The steps below, for ND and AttND networks, close
the gap and then learn the band weights where the data pay for them
(benchmarks/bench_recipe.py, benchmarks/bench_default_recipe.py, docs/training.md). Steps
1-3 work on the depth-2 network; a deeper one shares its first block and Standardize layer
(:func:`linear_part`) and then starts exactly at it (:func:`carry`):

1. **Conditioning.** A :class:`~sknd.networks.Standardize` layer after the first block,
   with the mean and standard deviation of its outputs on the training data at
   initialisation (the classic indices). ND outputs of real reflectance span narrow
   ranges; the output layer and the optimizers then see well-scaled features. The
   statistics are buffers: trainable parameter counts and illumination invariance do not
   change.
2. **Tuned convex start.** The output layer starts from the convex fit on the
   standardized classic indices, its penalty chosen from the data (:func:`prepare`):
   ridge regression on the standardized targets by generalized cross-validation over an
   alpha path (as :class:`~sklearn.linear_model.RidgeCV`), logistic regression by a
   warm-started path of ``C`` scored by the validation log-loss. A fixed penalty (``C=1``
   or ``alpha=1``) lost 9 points of R2 on a 250-band regression and collapsed with
   ``pairs="all"``.
3. **Learned indices.** From that start, the band weights and the output layer are
   trained jointly by full-batch L-BFGS on the start's own objective (the same loss and
   penalty) plus a Gaussian prior pulling each band weight's logarithm toward the classic
   index, along a path of prior strengths (:func:`refine`). The validation part picks the
   start or one of the refined models, by score, then loss: the start's optimum of the
   head is where Adam's noisy minibatch steps rarely improved the validation score, while
   a second-order method on the whole objective moves the indices as far as the data
   support.
4. **Epoch 0.** Early stopping scores the selected model before the first Adam update,
   so training can never end below it (``best_epoch_ = 0``: the selected model was best).
5. **Convex refit.** After early stopping, the output layer is refitted by the same
   convex fit (the tuned penalty) on what it reads, the learned (standardized) indices or
   the last hidden layer's outputs, of the training *and* validation rows, with everything
   before it frozen, starting from the trained layer: the network trains on 70/90 of the
   rows, a convex fit uses them all.

On large training sets steps 1, 2, 3 and 5 use an unbiased sample of the rows (see
:func:`convex_rows`): their cost then stops growing with the data while training's does.

Standardization alone (without 2) lost 2.5-3.4 points on two data sets. Deeper networks
trained from random weights (as in the paper) lost to the tuned depth-2 model on forest
type; started at it, with the width of :func:`hidden_units` and the refit of step 5, depths
3 and 4 gain on both shipped data sets (benchmarks/bench_depth.py). Separate learning
rates, plateau schedules and capped convex fits did not help (see the report).
"""

import contextlib
import copy
import functools
import time
import warnings
from collections import namedtuple

import numpy as np
import torch
import torch.nn.functional as F
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, Ridge
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from ._tasks import ClassificationTask
from .networks import MAX_DEFAULT_HIDDEN_UNITS, describe, first_nd_layer, forward_rows

__all__ = []

#: Values of the estimators' ``recipe`` parameter.
RECIPES = ("sknd", "paper")

#: The fixed penalty of the convex fits when the data are too small to choose one
#: (fewer than :data:`MIN_SELECTION_ROWS` rows to select on).
DEFAULT_C = 1.0
DEFAULT_ALPHA = 1.0
#: ``C`` path of the logistic start (absolute, as LogisticRegressionCV's), strongest first.
C_PATH = np.logspace(-4, 4, 9)
#: ``alpha`` path of the ridge start per unit of (weighted) training rows: the penalty of a
#: ridge fit counts against the sum of squared errors, which grows with the rows.
ALPHA_PATH_PER_ROW = np.logspace(-6, 1, 15)
# Both paths are chosen by the one-standard-error rule (_one_standard_error).
#: The ``C`` path and the prior path stop after this many candidates in a row without a
#: better selection loss than the best so far (the weakest penalties cost the most).
PATH_PATIENCE = 2
#: Convex fits drop the principal directions of their features with less than this share
#: of the largest variance (:class:`_Components`).
MIN_COMPONENT_VARIANCE = 1e-6
#: The paper's noise model, ``b + NOISE_LEVEL |b| z`` per band value (``z`` standard
#: normal): the recipe's selections score every validation row clean and under this noise
#: (:func:`noisy_copy`), so that they prefer models that indices of similar bands do not
#: make fragile (benchmarks/bench_noise_recipe.py).
NOISE_LEVEL = 0.1
#: Prior strengths of the band weights' logarithms (per training set, like the ridge
#: penalty of the output layer), strongest first: each refined model warm-starts the next.
PRIOR_PATH = np.logspace(2, -2, 3)
#: Fewer rows than this to select a penalty on (validation rows for ``C``, training rows
#: for ``alpha``, validation rows for the prior): the fixed start, and no refinement.
MIN_SELECTION_ROWS = 10
#: L-BFGS iterations per refined model.
REFINE_MAX_ITER = 50
#: The refinement runs on full batches of at most this many (rows x first-block outputs)
#: values: larger training parts are sampled (:func:`sample_rows`, at least
#: :data:`REFINE_CLASS_ROWS` rows of each class), weighted so that the objective and its
#: penalties stay those of all rows. An L-BFGS iteration on all 4,000 training rows of
#: satimage-36 (630 pairs) took 0.6 s, 93 s for the refinement.
MAX_REFINE_ELEMENTS = 1 << 18
REFINE_CLASS_ROWS = 50
#: Hidden units of scikit-learn's default MLPClassifier / MLPRegressor: deeper recipe
#: networks stay within its parameter count (:func:`hidden_units`).
MLP_HIDDEN_UNITS = 100
#: Fewest hidden units of a deeper recipe network besides those carrying the linear start.
MIN_NONLINEAR_UNITS = 8
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


class Stopwatch:
    """Wall time of the recipe's stages, in the order they ran (``verbose`` prints them).

    Examples
    --------
    >>> clock = Stopwatch()
    >>> with clock.stage("C path"):
    ...     pass
    >>> list(clock.seconds)
    ['C path']
    """

    def __init__(self):
        self.seconds = {}

    @contextlib.contextmanager
    def stage(self, name):
        """Add the time spent in the ``with`` block to stage ``name``."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start

    def __str__(self):
        return ", ".join(f"{name} {seconds:.2f} s" for name, seconds in self.seconds.items())


def _parts(module):
    """``(first block, Standardize layer, output layer)`` of a depth-2 recipe network."""
    first, standardize, output = (layer.module for layer in describe(module))
    return first, standardize, output


def hidden_units(depth2, n_features):
    """Default hidden width of a recipe network deeper than 2 (``hidden_units=None``).

    ``depth2`` is the depth-2 recipe network on the same bands and pairs (only its
    shapes are read: build it on the ``"meta"`` device). A depth-3 network of width
    ``h`` adds ``h (w + 1) + h K`` parameters to it (``w`` outputs of the first block,
    ``K`` of the network); the width is the largest that keeps depth 3 within the
    parameters of scikit-learn's default MLP on the same bands (one hidden layer of
    :data:`MLP_HIDDEN_UNITS`), and at least :data:`MIN_NONLINEAR_UNITS` more than the
    ``2 K`` units that carry the linear start (:func:`carry`), and at most the bound of
    :func:`~sknd.networks.default_hidden_units`. The paper's width, one
    unit per band pair, gave 14,881 parameters on 16 bands against the MLP's 1,801.
    """
    _, _, output = _parts(depth2)
    n_outputs = output.out_features
    budget = MLP_HIDDEN_UNITS * (n_features + 1) + (MLP_HIDDEN_UNITS + 1) * n_outputs
    spare = budget - sum(p.numel() for p in depth2.parameters()) + output.weight.numel()
    width = spare // (output.in_features + 1 + n_outputs)
    return int(np.clip(width, 2 * n_outputs + MIN_NONLINEAR_UNITS, MAX_DEFAULT_HIDDEN_UNITS))


def linear_part(module):
    """The depth-2 network the recipe's steps 1-3 and 5 work on.

    ``module`` itself at depth 2. For deeper networks, a depth-2 network sharing
    ``module``'s first block and Standardize layer, with a new zero output layer:
    :func:`carry` then starts the deeper network at it.
    """
    layers = [layer.module for layer in describe(module)]
    if len(layers) == 3:
        return module
    first, standardize, hidden = layers[:3]
    # The caller's generator state comes back: the zeroed layer's draws leave no trace.
    # (Not a "meta" layer: its to_empty imports sympy, 30 s without cached bytecode.)
    with torch.random.fork_rng(devices=[]):
        head = torch.nn.Linear(hidden.in_features, layers[-1].out_features)
    head = head.to(device=hidden.weight.device, dtype=hidden.weight.dtype)
    torch.nn.init.zeros_(head.weight)
    torch.nn.init.zeros_(head.bias)
    return torch.nn.Sequential(first, standardize, head)


@torch.no_grad()
def carry(module, linear):
    """Start the deeper ``module`` exactly at ``linear``, its :func:`linear_part`.

    A residual head in ``module``'s own layers: with ``s = W z + b`` the linear part's
    output on the standardized first-block outputs ``z``, the first ``2 K`` hidden units
    become ``ReLU(s)`` and ``ReLU(-s)``, every further hidden layer passes them on, and
    the output layer reads ``ReLU(s) - ReLU(-s) = s`` from them and nothing (zero weights)
    from the other, randomly initialised, hidden units. Training can then only add the
    nonlinear part that early stopping's validation confirms. No-op at depth 2.
    """
    if linear is module:
        return
    head = _parts(linear)[2]
    linears = [layer.module for layer in describe(module) if layer.kind == "linear"]
    k = head.out_features
    eye = torch.eye(k)
    first, output = linears[0], linears[-1]
    first.weight[:k], first.bias[:k] = head.weight, head.bias
    first.weight[k : 2 * k], first.bias[k : 2 * k] = -head.weight, -head.bias
    for layer in linears[1:-1]:
        layer.weight[: 2 * k] = 0.0
        layer.bias[: 2 * k] = 0.0
        layer.weight[:k, :k], layer.weight[:k, k : 2 * k] = eye, -eye
        layer.weight[k : 2 * k, :k], layer.weight[k : 2 * k, k : 2 * k] = -eye, eye
    output.weight.zero_()
    output.bias.zero_()
    output.weight[:, :k], output.weight[:, k : 2 * k] = eye, -eye


class _Components:
    """The principal subspace of a convex fit's features: ``z = (f - mean) @ basis``.

    The L2-penalized fits (logistic regression, ridge with an unpenalized intercept) have
    their optimal weights in the span of the centred training rows, so that a fit on the
    coordinates ``z`` and mapped back (:meth:`weights`) is the fit on the features. The
    directions whose (weighted) variance is below :data:`MIN_COMPONENT_VARIANCE` of the
    largest are dropped: hundreds of indices of a few dozen bands span few more
    directions than the bands (630 indices of satimage's 36 bands: 87 above 1e-6), and an
    iteration of lbfgs then costs a fraction of one on all the features. Those directions
    carry no weight the penalty lets through (same test accuracy at C <= 0.01 on
    satimage-36, in a probe of all 630 features against the components) and only amplify
    band noise.
    """

    def __init__(self, features, sample_weight):
        weight = np.ones(len(features)) if sample_weight is None else sample_weight
        self.mean = np.average(features, axis=0, weights=weight)
        centred = features - self.mean
        values, vectors = np.linalg.eigh((centred * weight[:, None]).T @ centred)
        keep = values > MIN_COMPONENT_VARIANCE * max(values[-1], 0.0)
        keep[-1] = True  # constant features: one zero column, whose weight stays 0
        self.basis = vectors[:, keep]

    def __call__(self, features):
        return (features - self.mean) @ self.basis

    def weights(self, coef, intercept):
        """``(coef, intercept)`` on the features of a fit's on the coordinates."""
        coef = coef @ self.basis.T
        return coef, intercept - coef @ self.mean


def _logistic(output, C, components):
    """A warm-started logistic regression with ``C`` on ``components`` coordinates,
    starting from ``output``'s weights."""
    model = LogisticRegression(C=C, max_iter=_MAX_ITER, warm_start=True)
    coef = output.weight.detach().cpu().double().numpy()
    intercept = output.bias.detach().cpu().double().numpy()
    model.coef_ = coef @ components.basis
    model.intercept_ = intercept + coef @ components.mean
    return model


def _fit_logistic(model, features, target, n_classes, sample_weight):
    """Fit ``model`` in place; False when the rows do not hold every class."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        try:
            model.fit(features, target, sample_weight=sample_weight)
        except ValueError:  # a single class among the rows
            return False
    return len(model.classes_) == n_classes


def _set_layer(output, model, components):
    """Copy a linear model's coefficients on ``components`` coordinates into ``output``
    (an ``nn.Linear``) if finite."""
    coef = np.asarray(model.coef_, dtype=np.float64).reshape(len(output.weight), -1)
    weight, bias = components.weights(coef, np.asarray(model.intercept_, dtype=np.float64))
    weight, bias = weight.reshape(output.weight.shape), bias.reshape(output.bias.shape)
    if not (np.isfinite(weight).all() and np.isfinite(bias).all()):
        return
    with torch.no_grad():
        output.weight.copy_(torch.as_tensor(weight))
        output.bias.copy_(torch.as_tensor(bias))


def _convex_fit(features, target, task, output, penalty, sample_weight=None):
    """Fit ``output`` (an ``nn.Linear``) as the convex model of ``features``, in place.

    ``penalty`` is the logistic regression's ``C`` or the ridge's ``alpha``. Starts from
    the layer's current weights. Leaves the layer unchanged when the fit is not possible
    (a class missing from the rows) or not finite.
    """
    components = _Components(features, sample_weight)
    features = components(features)
    if isinstance(task, ClassificationTask):
        model = _logistic(output, penalty, components)
        if not _fit_logistic(model, features, target, len(task.classes), sample_weight):
            return
    else:
        model = Ridge(alpha=penalty).fit(features, target, sample_weight=sample_weight)
    _set_layer(output, model, components)


def _row_log_losses(model, features, target):
    proba = np.clip(model.predict_proba(features), 1e-15, 1.0)
    return -np.log(proba[np.arange(len(target)), target])


def _one_standard_error(losses, weight):
    """Index of the first (most regularized) candidate within one standard error of the best.

    ``losses`` holds one row of per-row validation losses per candidate, strongest
    penalty first. The "one-standard-error rule" (Hastie, Tibshirani and Friedman, The
    Elements of Statistical Learning, 7.10) keeps the simplest model the validation data
    cannot tell from the best: smaller weights, which move less under noise in the bands.
    """
    means = np.average(losses, axis=1, weights=weight)
    best = int(np.nanargmin(means))
    # Weights count as copies of rows (as everywhere in sknd): n is their sum.
    n = len(losses[best]) if weight is None else np.sum(weight)
    spread = np.sqrt(np.average((losses[best] - means[best]) ** 2, weights=weight))
    return int(np.flatnonzero(means <= means[best] + spread / np.sqrt(n))[0])


def _tuned_logistic(output, features, target, n_classes, sample_weight, valid):
    """``C`` of the warm-started path chosen on the validation log-loss; fits ``output``.

    ``valid`` is ``(features, noisy features, target, sample_weight)`` of the validation
    rows: each row's loss is the mean of its clean and noisy copy's (:func:`noisy_copy`).
    The path, strongest penalty first, stops once that loss has risen :data:`PATH_PATIENCE`
    times in a row past its best: weaker penalties cost the most iterations and only fit the
    training rows closer.
    """
    components = _Components(features, sample_weight)
    features = components(features)
    valid_features, noisy_features, valid_target, valid_weight = valid
    valid_features, noisy_features = components(valid_features), components(noisy_features)
    model = _logistic(output, C_PATH[0], components)
    fits, losses = [], []
    for C in C_PATH:
        model.set_params(C=C)
        if not _fit_logistic(model, features, target, n_classes, sample_weight):
            return None
        clean = _row_log_losses(model, valid_features, valid_target)
        losses.append((clean + _row_log_losses(model, noisy_features, valid_target)) / 2)
        fits.append((C, model.coef_.copy(), model.intercept_.copy()))
        if _past_best(np.average(losses, axis=1, weights=valid_weight)):
            break
    losses = np.asarray(losses)
    finite = np.isfinite(losses).all(axis=1)
    if not finite.any():
        return None
    losses[~finite] = np.inf
    C, model.coef_, model.intercept_ = fits[_one_standard_error(losses, valid_weight)]
    _set_layer(output, model, components)
    return float(C)


def _past_best(means, patience=PATH_PATIENCE):
    """Whether the last ``patience`` of a path's mean losses all came after its best."""
    means = np.where(np.isfinite(means), means, np.inf)
    return len(means) - 1 - int(np.argmin(means)) >= patience


def noisy_copy(X):
    """``X`` under the paper's multiplicative noise at :data:`NOISE_LEVEL`, seeded.

    The same draw as :func:`sknd.experiments.add_multiplicative_noise` with
    ``random_state=0`` (written here so that training does not import the experiments).

    Examples
    --------
    >>> noisy_copy(np.array([[1.0, 0.0]])).round(3)
    array([[1.176, 0.   ]])
    """
    X = np.asarray(X, dtype=np.float64)
    z = np.random.RandomState(0).standard_normal(X.shape)
    return X + NOISE_LEVEL * np.abs(X) * z


def _leave_one_out_errors(features, target, sample_weight, alphas):
    """Squared leave-one-out errors of ridge fits (unpenalized intercept), one row per alpha.

    Closed form from the thin SVD of the weighted, centred features: the residual of
    row ``i`` refitted without it is ``e_i / (1 - h_i)``, ``h_i`` its leverage. A weight
    ``w`` counts as ``w`` copies of a row and leaving one out leaves out one copy, whose
    leverage is the row's over ``w``: the errors are those of the repeated rows (scikit-
    learn's ``RidgeCV`` leaves out the whole weighted row). Errors are summed over the
    targets.
    """
    n = len(features)
    weight = np.ones(n) if sample_weight is None else np.asarray(sample_weight, np.float64)
    used = weight > 0
    features, target, weight = features[used], target[used], weight[used]
    target = target.reshape(len(target), -1)
    root = np.sqrt(weight)[:, None]
    mean_f = np.average(features, axis=0, weights=weight)
    mean_t = np.average(target, axis=0, weights=weight)
    U, s, _ = np.linalg.svd(root * (features - mean_f), full_matrices=False)
    projected = U.T @ (root * (target - mean_t))
    errors = np.empty((len(alphas), n))
    errors[:, ~used] = 0.0
    for row, alpha in enumerate(alphas):
        shrink = s**2 / (s**2 + alpha)
        fitted = (U @ (shrink[:, None] * projected)) / root
        leverage = 1.0 / weight.sum() + (U**2 @ shrink) / weight
        loo = (target - mean_t - fitted) / (1.0 - leverage)[:, None]
        errors[row, used] = (loo**2).sum(axis=1)
    return errors


def _tuned_ridge(output, features, target, task, sample_weight):
    """``alpha`` chosen on the leave-one-out errors (generalized cross-validation) by the
    one-standard-error rule; fits ``output``."""
    total = len(features) if sample_weight is None else float(np.sum(sample_weight))
    alphas = ALPHA_PATH_PER_ROW[::-1] * total  # strongest first
    errors = _leave_one_out_errors(features, target, sample_weight, alphas)
    alpha = alphas[_one_standard_error(errors, sample_weight)]
    _convex_fit(features, target, task, output, alpha, sample_weight)
    return float(alpha)


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
    return sample_rows(target, task, convex_budget(n_coefficients), MIN_CLASS_ROWS, sample_weight)


def sample_rows(target, task, budget, class_rows, sample_weight=None):
    """:func:`convex_rows` with a given ``budget`` of rows and ``class_rows`` per class."""
    n_samples = len(target)
    if n_samples <= budget:
        return None, sample_weight
    if isinstance(task, ClassificationTask):
        groups = [np.flatnonzero(target == code) for code in np.unique(target)]
    else:
        groups = [np.arange(n_samples)]
    rng = np.random.default_rng(0)
    chosen, inverse = [], []
    for group in groups:
        size = min(len(group), max(class_rows, -(-budget * len(group) // n_samples)))
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


def _features(module, X, rows):
    """What the output layer of ``module`` reads from ``X`` (float64), the convex fits'
    features: the standardized first-block outputs at depth 2, the last hidden layer's
    outputs deeper (build_network's networks are flat: ``[first, ..., output]``)."""
    return forward_rows(module[:-1], X, rows)


def prepare(module, X_train, target_train, task, rows, sample_weight=None, valid=None, clock=None):
    """Steps 1 and 2: standardize the first block's outputs, fit the tuned convex start.

    ``target_train`` is what the convex fit learns: class codes, or the standardized
    regression targets. ``sample_weight`` weights the statistics and the fit (weight
    ``k`` counts as ``k`` copies of the sample, as in scikit-learn's linear models).
    Both use :func:`convex_rows` of the training rows. ``valid`` is ``(X, target,
    sample_weight)`` of the validation part, or None.

    Returns ``(penalty, tuned)``: the logistic regression's ``C`` or the ridge's
    ``alpha``, and whether it was chosen from the data (False: too few rows to select
    on, :data:`DEFAULT_C` / :data:`DEFAULT_ALPHA`). ``clock``, a :class:`Stopwatch`,
    times the stages "standardize" and "C path" or "alpha path".
    """
    clock = Stopwatch() if clock is None else clock
    first, standardize, output = _parts(module)
    with clock.stage("standardize"):
        X_train, target_train, sample_weight = _sample(
            X_train, target_train, task, output, sample_weight
        )
        indices = torch.as_tensor(forward_rows(first, X_train, rows))
        standardize.fit(indices, sample_weight)
        # The standardized indices from the same first-block pass, in float64 as forward_rows'.
        features = forward_rows(standardize, indices.numpy(), rows)
    name = "C path" if isinstance(task, ClassificationTask) else "alpha path"
    with clock.stage(name):
        return _tune(module, features, target_train, task, rows, sample_weight, valid)


def _tune(module, features, target_train, task, rows, sample_weight, valid):
    """:func:`prepare`'s step 2 on the standardized ``features``: ``(penalty, tuned)``."""
    output = module[-1]
    if not isinstance(task, ClassificationTask):
        if len(features) >= MIN_SELECTION_ROWS:
            return _tuned_ridge(output, features, target_train, task, sample_weight), True
        _convex_fit(features, target_train, task, output, DEFAULT_ALPHA, sample_weight)
        return DEFAULT_ALPHA, False
    if valid is not None and len(valid[0]) >= MIN_SELECTION_ROWS:
        # The validation rows' features, as the training rows', from a sample on large data.
        X_valid, target_valid, w_valid = _sample(valid[0], valid[1], task, output, valid[2])
        valid_features = _features(module, X_valid, rows)
        noisy_features = _features(module, noisy_copy(X_valid), rows)
        C = _tuned_logistic(
            output,
            features,
            target_train,
            len(task.classes),
            sample_weight,
            (valid_features, noisy_features, target_valid, w_valid),
        )
        if C is not None:
            return C, True
    _convex_fit(features, target_train, task, output, DEFAULT_C, sample_weight)
    return DEFAULT_C, False


def refit(module, X, target, task, rows, penalty, sample_weight=None):
    """Step 5: refit the output layer on what it reads from ``X`` (all rows, or
    :func:`convex_rows` of them) with the start's ``penalty``: the learned standardized
    indices at depth 2, the last hidden layer's outputs in deeper networks."""
    output = module[-1]
    X, target, sample_weight = _sample(X, target, task, output, sample_weight)
    _convex_fit(_features(module, X, rows), target, task, output, penalty, sample_weight)


def _row_losses(task, output, target):
    """Per-row losses (float64) of raw outputs under the estimators' training criterion,
    averaged over the outputs as in training (:func:`sknd._training.weighted_loss`)."""
    if isinstance(task, ClassificationTask) and task.binary:
        target = target.to(output.dtype).reshape(-1, 1)
    losses = task.criterion(reduction="none")(output, target)
    return losses.reshape(len(output), -1).mean(1)


def _mean(values, weight):
    return values.mean() if weight is None else (values * weight).sum() / weight.sum()


class Validation(namedtuple("Validation", "score loss row_losses")):
    """A model's validation score (accuracy, R2), loss (the training criterion) and the
    loss of each validation row."""

    def monitored(self, task):
        """The value early stopping monitors for ``task``."""
        return self.score if task.monitor == "valid_score" else self.loss


class _Evaluation:
    """:class:`Validation` of networks on one validation part."""

    def __init__(self, task, X, target, sample_weight, rows):
        self.task = task
        self.X = X
        self.rows = rows
        self.target = torch.tensor(target)
        if isinstance(task, ClassificationTask):
            self.target = self.target.to(torch.int64)
        self.weight = None if sample_weight is None else torch.tensor(sample_weight).double()

    def __call__(self, module):
        output = torch.as_tensor(forward_rows(module, self.X, self.rows))
        if not torch.isfinite(output).all():
            return Validation(-np.inf, np.inf, np.full(len(self.X), np.inf))
        target = self.target
        if isinstance(self.task, ClassificationTask) and self.task.binary:
            target = target.double().reshape(-1, 1)
        score = self.task.score(target, output, self.weight)
        losses = _row_losses(self.task, output, self.target)
        return Validation(score, _mean(losses, self.weight).item(), losses.numpy())


def validation(module, task, valid, rows):
    """The :class:`Validation` of ``module`` on ``valid``, ``(X, target, sample_weight)``."""
    return _Evaluation(task, *valid, rows)(module)


def robust_monitored(module, task, valid, rows):
    """The mean of early stopping's monitored value on ``valid`` and on its
    :func:`noisy_copy`: what the recipe's choices between trained models compare."""
    X, target, weight = valid
    clean = validation(module, task, valid, rows).monitored(task)
    return (
        clean + validation(module, task, (noisy_copy(X), target, weight), rows).monitored(task)
    ) / 2


def _objective(task, penalty, X, target, weight, n_rows):
    """The start's convex objective per row, plus a prior on the band weights' logarithms.

    ``f(module, prior)``: the (weighted) mean loss, the convex fit's L2 penalty on every
    weight matrix (``||W||^2 / (2 C n)`` for the logistic regression, ``alpha ||W||^2 /
    (n m)`` for the ridge on ``m`` targets, whose loss here is a mean over them), and
    ``prior * sum((log sp(a) - log sp(0))^2 + (log sp(c) - log sp(0))^2) / n``: a
    Gaussian prior on the band weights centred on the classic index (``a = c = 0``).
    """
    if isinstance(task, ClassificationTask):
        l2 = 1.0 / (2.0 * penalty)
    else:
        l2 = penalty / task.n_outputs
    log_sp0 = float(np.log(np.log(2.0)))

    def objective(module, prior):
        loss = _mean(_row_losses(task, module(X), target), weight)
        nd = first_nd_layer(module)
        log_weights = torch.log(F.softplus(torch.cat([nd.a, nd.c]))) - log_sp0
        matrices = [p for name, p in module.named_parameters() if name.endswith("weight")]
        penalty_sum = l2 * sum((m**2).sum() for m in matrices)
        return loss + (penalty_sum + prior * (log_weights**2).sum()) / n_rows

    return objective


def _minimize(module, objective):
    """Minimize ``objective()`` over ``module``'s (float64) parameters, in place.

    Full-batch L-BFGS (scipy's L-BFGS-B without bounds, :data:`REFINE_MAX_ITER`
    iterations) on the flat vector of parameters, torch computing the value and gradient:
    unlike ``torch.optim.LBFGS``, it does not import ``torch._dynamo`` (1.3 s with cached
    bytecode, 16-19 s without, on a process's first fit). A non-finite value reads as
    ``inf``, so that the line search steps back from it.
    """
    params = [p for p in module.parameters() if p.requires_grad]

    def value_and_grad(x):
        with torch.no_grad():
            vector_to_parameters(torch.from_numpy(x), params)
        for p in params:
            p.grad = None
        value = objective()
        if not torch.isfinite(value):
            return np.inf, np.zeros_like(x)
        value.backward()
        grad = torch.cat([p.grad.reshape(-1) for p in params])
        return value.item(), grad.numpy().astype(np.float64)

    x0 = parameters_to_vector(params).detach().double().numpy()
    result = minimize(
        value_and_grad,
        x0,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": REFINE_MAX_ITER, "maxcor": 20, "gtol": 1e-9, "ftol": 1e-10},
    )
    with torch.no_grad():
        vector_to_parameters(torch.from_numpy(result.x), params)
    for p in params:
        p.grad = None


def refine(module, X_train, target_train, task, rows, penalty, sample_weight, valid):
    """Step 3: learn the indices from the tuned start, and keep what validation confirms.

    Trains copies of ``module`` (the tuned start, in place of which the selected model
    is written) by full-batch L-BFGS in float64 along :data:`PRIOR_PATH`, each prior's
    model warm-starting the next, until the selection loss rises (weaker priors only fit
    the training rows closer). Keeps, among the start and the refined models that score
    at least as well as the start, the strongest prior by the one-standard-error rule on
    the selection loss: each validation row's mean loss clean and under the paper's noise
    (:func:`noisy_copy`). ``valid`` is ``(X, target, sample_weight)``, targets as
    for :func:`prepare`. Returns the :class:`Validation` of the start and of the
    selected model, which is the start when there was nothing to refine (too few
    validation rows, no ND layer, or a first block too large for full batches).
    """
    X_valid, target_valid, w_valid = valid
    weight = None if w_valid is None else np.asarray(w_valid, dtype=np.float64)
    evaluate = _Evaluation(task, X_valid, target_valid, w_valid, rows)
    evaluate_noisy = _Evaluation(task, noisy_copy(X_valid), target_valid, w_valid, rows)

    def selection(model):  # the clean Validation, and each row's clean and noisy mean loss
        clean = evaluate(model)
        return clean, (clean.row_losses + evaluate_noisy(model).row_losses) / 2

    start = copy.deepcopy(module).double()
    start_score, start_losses = selection(start)
    width = _parts(module)[2].in_features
    if first_nd_layer(module) is None or len(X_valid) < MIN_SELECTION_ROWS:
        return start_score, start_score
    chosen, sample_weight = sample_rows(
        target_train, task, MAX_REFINE_ELEMENTS // width, REFINE_CLASS_ROWS, sample_weight
    )
    if chosen is not None:
        X_train, target_train = X_train[chosen], target_train[chosen]
    # Copies: the caller's arrays may be read-only (memory-mapped by joblib).
    X = torch.tensor(X_train, dtype=torch.float64)
    target = torch.tensor(target_train)
    if isinstance(task, ClassificationTask):
        target = target.to(torch.int64)
    w_train = None if sample_weight is None else torch.tensor(sample_weight).double()
    n_rows = len(X) if w_train is None else w_train.sum().item()
    objective = _objective(task, penalty, X, target, w_train, n_rows)

    candidate = start
    path = [(start_score, start_losses, None)]  # strongest prior first
    for prior in PRIOR_PATH:
        _minimize(candidate, functools.partial(objective, candidate, prior))
        if not all(torch.isfinite(p).all() for p in candidate.parameters()):
            break  # a diverged step: the path ends at the last finite model
        path.append((*selection(candidate), copy.deepcopy(candidate.state_dict())))
        # Past the best prior, weaker ones only fit the training rows closer.
        if _past_best([np.average(entry[1], weights=weight) for entry in path], 1):
            break
    # Among the models that score at least as well as the start, the strongest prior whose
    # selection loss is within a standard error of the best: the indices move only as far
    # as the validation rows can tell apart from noise.
    eligible = [entry for entry in path if entry[0].score >= start_score.score]
    losses = np.array([entry[1] for entry in eligible])
    selected, _, state = eligible[_one_standard_error(losses, weight)]
    if state is not None:
        module.load_state_dict(state)  # cast to the module's float32
    return start_score, selected
