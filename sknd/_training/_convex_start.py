"""The default recipe's tuned convex start (step 2 of :mod:`sknd._training._recipe`).

Convex fits of a recipe network's output layer on the principal components of what it
reads (logistic regression, ridge), the paths that choose their penalty (``C`` on the
validation log-loss, ``alpha`` by leave-one-out errors, both by the one-standard-error
rule), and the unbiased row samples they use on large data (:func:`convex_rows`).
"""

import warnings

import numpy as np
import torch
from scipy import optimize, special
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, Ridge

from .._data._tasks import ClassificationTask

__all__ = []

#: The fixed penalty of the convex fits when the data are too small to choose one
#: (fewer than :data:`MIN_SELECTION_ROWS` rows to select on).
DEFAULT_C = 1.0
DEFAULT_ALPHA = 1.0
#: ``C`` path of the logistic start (absolute, as LogisticRegressionCV's), strongest first.
C_PATH = np.logspace(-4, 4, 9)
#: ``alpha`` path of the ridge start per unit of (weighted) training rows: the penalty of a
#: ridge fit counts against the sum of squared errors, which grows with the rows.
ALPHA_PATH_PER_ROW = np.logspace(-6, 1, 15)
# Both paths are chosen by the one-standard-error rule (one_standard_error).
#: The ``C`` path and the prior path stop at the first candidate without a better selection
#: loss than the best so far (the weakest penalties cost the most: on satimage-36, with the
#: noisy copies, the last two fits took most of the path's time, benchmarks/RESULTS.md,
#: "Figures moved out of the code"; the one-standard-error rule never picks a candidate past
#: the best).
PATH_PATIENCE = 1
#: Convex fits drop the principal directions of their features with less than this share
#: of the largest variance (:class:`Components`).
MIN_COMPONENT_VARIANCE = 1e-6
#: Fewer rows than this to select a penalty on (validation rows for ``C``, training rows
#: for ``alpha``, validation rows for the prior): the fixed start, and no refinement.
MIN_SELECTION_ROWS = 10
# lbfgs iterations: the fits must converge (capped at 100 they lost accuracy:
# docs/training.md, "Measured").
_MAX_ITER = 2000
#: L-BFGS iterations of a candidate of the ``C`` path above
#: :data:`PATH_NEWTON_MAX_COEFFICIENTS` (:class:`PathObjective`), and the gradient norm at
#: which a candidate has converged. The strong penalties converge well within the cap;
#: the weaker ones, in the scaled coordinates, come close enough to their optimum within it
#: that their validation losses are their penalties', not their iterations': halving or
#: doubling the cap changed no choice, where scikit-learn's lbfgs capped at 100 iterations
#: ranked the candidates by effort (benchmarks/RESULTS.md, "A C path that compares
#: penalties, not iterations").
PATH_MAX_ITER = 150
PATH_GTOL = 1e-6
#: Convex fits of at most this many coefficients (principal components x classes, one
#: set for two classes) use scikit-learn's "newton-cholesky" solver, above it "lbfgs". A
#: Newton step costs about ``n p^2`` for ``p`` coefficients on ``n`` rows, an lbfgs step
#: ``n p``, and lbfgs takes hundreds to thousands of steps on these ill-conditioned
#: features against Newton's handful, on satimage-36's depth-3 head refit and on its
#: depth-2 start at the chosen ``C`` alike (benchmarks/RESULTS.md, "A cheaper default:
#: depth 3 first, Newton steps for small heads, a float32 ``C`` path" and "Newton steps for
#: the chosen ``C``, a shorter refinement").
NEWTON_MAX_COEFFICIENTS = 1024
#: The ``C`` path's candidates use Newton up to this many coefficients and preconditioned
#: L-BFGS (:class:`PathObjective`) above: a Newton candidate of satimage-36's depth-2
#: start cost several capped L-BFGS ones (benchmarks/RESULTS.md, "Newton steps for the
#: chosen ``C``, a shorter refinement").
PATH_NEWTON_MAX_COEFFICIENTS = 256

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


class Components:
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

    ``parts`` > 1: ``features`` are a fit's rows followed by ``parts - 1`` noisy copies of
    them (:class:`~sknd._training._refinement.NoisyCopies`); the subspace is the rows' own, which
    the directions only the noise spans would add to (140 against 89 on satimage-36, and
    lbfgs fits twice as long).
    """

    def __init__(self, features, sample_weight, parts=1):
        n_rows = len(features) // parts
        features = features[:n_rows]
        sample_weight = None if sample_weight is None else sample_weight[:n_rows]
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


def _logistic(output, C, components, newton_max=None):
    """A logistic regression with ``C`` on ``components`` coordinates, starting from
    ``output``'s weights: newton-cholesky for at most ``newton_max`` coefficients
    (:data:`NEWTON_MAX_COEFFICIENTS` by default), else lbfgs.
    """
    newton_max = NEWTON_MAX_COEFFICIENTS if newton_max is None else newton_max
    n_coefficients = components.basis.shape[1] * len(output.weight)
    solver = "newton-cholesky" if n_coefficients <= newton_max else "lbfgs"
    model = LogisticRegression(C=C, max_iter=_MAX_ITER, solver=solver, warm_start=True)
    coef = output.weight.detach().cpu().double().numpy()
    intercept = output.bias.detach().cpu().double().numpy() + coef @ components.mean
    _warm_start(model, coef @ components.basis, intercept)
    return model


def _warm_start(model, coef, intercept):
    """Start ``model`` (``warm_start=True``) at ``coef``, ``intercept``.

    A multinomial model's intercepts are shifted to make the last class's zero, which
    changes no probability: scikit-learn 1.6 and 1.7's newton-cholesky set that intercept
    to zero without shifting the others (a refit from trained weights stopped after 2
    iterations at a model 0.29 away in probability; scikit-learn pull request 31866).
    """
    if len(intercept) > 1:
        intercept = intercept - intercept[-1]
    model.coef_, model.intercept_ = coef, intercept


def _fit_logistic(model, features, target, n_classes, sample_weight):
    """Fit ``model`` in place; False when the rows do not hold every class."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        try:
            model.fit(features, target, sample_weight=sample_weight)
        except ValueError:  # a single class among the rows
            return False
    return len(model.classes_) == n_classes


def _set_layer(output, coef, intercept, components):
    """Copy a linear model's ``coef`` and ``intercept`` on ``components`` coordinates into
    ``output`` (an ``nn.Linear``) if finite."""
    coef = np.asarray(coef, dtype=np.float64).reshape(len(output.weight), -1)
    weight, bias = components.weights(coef, np.asarray(intercept, dtype=np.float64))
    weight, bias = weight.reshape(output.weight.shape), bias.reshape(output.bias.shape)
    if not (np.isfinite(weight).all() and np.isfinite(bias).all()):
        return
    with torch.no_grad():
        output.weight.copy_(torch.as_tensor(weight))
        output.bias.copy_(torch.as_tensor(bias))


def convex_fit(data, task, output, penalty, parts=1):
    """Fit ``output`` (an ``nn.Linear``) as the convex model of ``data``, in place.

    ``data`` is the :class:`~sknd._data._parts.Part` (or any ``(features, target,
    sample_weight)``) of the rows the fit learns: the features ``output`` reads, their
    target and sample weights (or None). ``penalty`` is the logistic regression's ``C`` or
    the ridge's ``alpha``; ``parts`` as for :class:`Components`. Starts from the layer's
    current weights. Leaves the layer unchanged when the fit is not possible (a class
    missing from the rows) or not finite.
    """
    features, target, sample_weight = data
    components = Components(features, sample_weight, parts)
    features = components(features)
    if isinstance(task, ClassificationTask):
        model = _logistic(output, penalty, components)
        if not _fit_logistic(model, features, target, len(task.classes), sample_weight):
            return
    else:
        model = Ridge(alpha=penalty).fit(features, target, sample_weight=sample_weight)
    _set_layer(output, model.coef_, model.intercept_, components)


def _log_losses(logits, onehot):
    """Per-row log-losses of ``logits`` (classes x rows; one row: the binary model's) and
    their gradients with respect to the logits. Classes in rows: the reductions over a
    few classes run along rows of thousands, faster than along rows of a few
    (benchmarks/RESULTS.md, "Figures moved out of the code")."""
    if len(logits) == 1:
        return np.logaddexp(0.0, logits[0]) - onehot[0] * logits[0], special.expit(logits) - onehot
    top = logits.max(axis=0)
    exp = np.exp(logits - top)
    total = exp.sum(axis=0)
    losses = np.log(total) + top - np.einsum("kn,kn->n", logits, onehot)
    return losses, exp / total - onehot


def _onehot(target, n_classes):
    """Indicators of ``target``'s classes (classes x rows); the second class's alone for
    two classes."""
    classes = np.arange(n_classes) if n_classes > 2 else np.array([1])
    return (classes[:, None] == np.asarray(target)[None, :]).astype(np.float64)


class PathObjective:
    """The logistic regression of a ``C`` path candidate, minimized by preconditioned L-BFGS.

    Scikit-learn's objective, ``sum_i w_i loss_i + |coef|^2 / (2 C)``, divided by the total
    weight, on principal components (:class:`Components`: centred, uncorrelated). Their
    variances span six orders of magnitude, and lbfgs on them took hundreds to thousands
    of iterations at weak penalties. In the coordinates ``u = coef / d`` with
    ``d_j = (h var_j + 1 / (C W))^(-1/2)`` (``h`` the loss's curvature at uniform
    probabilities, ``W`` the total weight) the objective's Hessian has about unit diagonal
    at every ``C``: the strong penalties converge in tens of iterations, and the weak ones
    come within the validation loss's resolution of their optimum in a hundred or so.
    """

    def __init__(self, features, target, n_classes, sample_weight):
        self.features = features
        self.columns = np.ascontiguousarray(features.T)  # for the forward products
        self.onehot = _onehot(target, n_classes)
        weight = np.ones(len(features)) if sample_weight is None else sample_weight
        self.total = float(np.sum(weight))
        self.weight = np.asarray(weight, dtype=np.float64) / self.total
        self.variance = self.weight @ features**2
        k = len(self.onehot)
        self.curvature = 0.25 if k == 1 else (k - 1) / k**2

    def fit(self, C, coef, intercept, max_iter):
        """``(coef, intercept)`` at ``C``, from ``coef``, ``intercept``: converged, or after
        ``max_iter`` iterations."""
        k, p = len(self.onehot), self.features.shape[1]
        penalty = 1.0 / (C * self.total)  # of |coef|^2 / 2, per unit of weight
        scale = 1.0 / np.sqrt(self.curvature * self.variance + penalty)
        intercept_scale = 1.0 / np.sqrt(self.curvature)

        def value_and_gradient(u):
            coef = u[: k * p].reshape(k, p) * scale
            logits = coef @ self.columns + (u[k * p :] * intercept_scale)[:, None]
            losses, residuals = _log_losses(logits, self.onehot)
            residuals *= self.weight
            value = self.weight @ losses + penalty * np.sum(coef**2) / 2
            gradient = (residuals @ self.features + penalty * coef) * scale
            gradient = [gradient.ravel(), residuals.sum(axis=1) * intercept_scale]
            return value, np.concatenate(gradient)

        start = np.concatenate([(coef / scale).ravel(), intercept / intercept_scale])
        result = optimize.minimize(
            value_and_gradient,
            start,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": max_iter, "gtol": PATH_GTOL, "ftol": 0.0},
        )
        return result.x[: k * p].reshape(k, p) * scale, result.x[k * p :] * intercept_scale


def one_standard_error(losses, weight):
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


def tuned_logistic(output, data, n_classes, valid, parts=1):
    """``C`` of the path (each candidate warm-started at the last) chosen on the validation
    log-loss; fits ``output``.

    ``data`` and ``valid`` are the :class:`~sknd._data._parts.Part` (or any ``(features,
    target, sample_weight)``) of the training and the validation rows. The path,
    strongest penalty first, stops once their mean log-loss has not improved on its best for
    :data:`PATH_PATIENCE` candidates: weaker penalties cost the most iterations and only fit
    the training rows closer. Candidates of up to :data:`PATH_NEWTON_MAX_COEFFICIENTS`
    coefficients are Newton fits; above, :class:`PathObjective`'s, each to convergence or
    :data:`PATH_MAX_ITER` iterations, after which the chosen ``C`` is refitted by
    :func:`_logistic`'s solver from there. ``parts`` as for :class:`Components`.
    """
    features, target, sample_weight = data
    if np.unique(target).size < n_classes:
        return None
    components = Components(features, sample_weight, parts)
    features = components(features)
    valid_features, valid_target, valid_weight = valid
    valid_features = components(valid_features)
    valid_onehot = _onehot(valid_target, n_classes)
    model = _logistic(output, C_PATH[0], components, PATH_NEWTON_MAX_COEFFICIENTS)
    objective = None
    if model.solver == "lbfgs":
        objective = PathObjective(features, target, n_classes, sample_weight)
    coef, intercept = model.coef_, model.intercept_
    fits, losses = [], []
    for C in C_PATH:
        if objective is None:
            model.set_params(C=C)
            if not _fit_logistic(model, features, target, n_classes, sample_weight):
                return None
            coef, intercept = model.coef_.copy(), model.intercept_.copy()
        else:
            coef, intercept = objective.fit(C, coef, intercept, PATH_MAX_ITER)
        logits = coef @ valid_features.T + intercept[:, None]
        losses.append(_log_losses(logits, valid_onehot)[0])
        fits.append((C, coef, intercept))
        if past_best(np.average(losses, axis=1, weights=valid_weight)):
            break
    losses = np.asarray(losses)
    finite = np.isfinite(losses).all(axis=1)
    if not finite.any():
        return None
    losses[~finite] = np.inf
    C, coef, intercept = fits[one_standard_error(losses, valid_weight)]
    if objective is not None:  # on to scikit-learn's convergence
        model = _logistic(output, C, components)
        _warm_start(model, coef, intercept)
        if not _fit_logistic(model, features, target, n_classes, sample_weight):
            return None
        coef, intercept = model.coef_, model.intercept_
    _set_layer(output, coef, intercept, components)
    return float(C)


def past_best(means, patience=PATH_PATIENCE):
    """Whether the last ``patience`` of a path's mean losses all came after its best."""
    means = np.where(np.isfinite(means), means, np.inf)
    return len(means) - 1 - int(np.argmin(means)) >= patience


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


def tuned_ridge(output, features, target, task, sample_weight):
    """``alpha`` chosen on the leave-one-out errors (generalized cross-validation) by the
    one-standard-error rule; fits ``output``."""
    total = len(features) if sample_weight is None else float(np.sum(sample_weight))
    alphas = ALPHA_PATH_PER_ROW[::-1] * total  # strongest first
    errors = _leave_one_out_errors(features, target, sample_weight, alphas)
    alpha = alphas[one_standard_error(errors, sample_weight)]
    convex_fit((features, target, sample_weight), task, output, alpha)
    return float(alpha)


def convex_budget(n_coefficients):
    """Most rows the convex fits of an output layer with ``n_coefficients`` use."""
    return max(MIN_CONVEX_ROWS, ROWS_PER_COEFFICIENT * n_coefficients)


def convex_rows(target, task, n_coefficients, sample_weight=None, parts=1):
    """``(rows, weight)`` for the convex fits: all rows, or an unbiased sample of them.

    Up to ``max(MIN_CONVEX_ROWS, ROWS_PER_COEFFICIENT * n_coefficients)`` rows, all of
    them (``rows`` is None, ``weight`` is ``sample_weight``). Beyond, a seeded random
    sample of that size, drawn per class for classification (at least
    :data:`MIN_CLASS_ROWS` of each class, so that rare classes stay in the fits), each row
    weighted by its class's rows over its sampled rows (times its sample weight): the
    weighted statistics and the convex objective on the sample are unbiased estimates of
    those on all rows, with the same regularisation. ``parts`` divides the budget: the
    rows of a fit on the sample and ``parts - 1`` noisy copies of it
    (:class:`~sknd._training._refinement.NoisyCopies`) stay within it.
    """
    return sample_rows(
        target, task, convex_budget(n_coefficients) // parts, MIN_CLASS_ROWS, sample_weight
    )


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
