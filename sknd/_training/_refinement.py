"""The default recipe's learned indices (step 3 of :mod:`sknd._training._recipe`) and the
validation that selects them.

:func:`refine` trains the band weights and the output layer from the tuned convex start
by full-batch L-BFGS along a path of priors on the band weights, and keeps what the
validation rows confirm (:func:`validation`); a classifier's training rows come with
noisy copies under the paper's noise (:class:`NoisyCopies`).
"""

import copy
import functools
from collections import namedtuple

import numpy as np
import torch
import torch.nn.functional as F
from scipy.optimize import minimize
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from .._data._parts import Part
from .._data._tasks import ClassificationTask
from ..networks import describe, first_nd_layer, forward_rows
from ._convex_start import MIN_SELECTION_ROWS, one_standard_error, past_best, sample_rows
from ._noise_models import perturbed, sensor_range

__all__ = []

#: The default level of the training rows' noisy copies (the estimators' ``train_noise``):
#: the paper's noise model, ``b + 0.1 |b| z`` per band value (``z`` standard normal).
NOISE_LEVEL = 0.1
#: ``train_noise="auto"``'s level with ``passthrough=True``: a network that also reads the
#: standardized bands needs less of the copies' robustness, and gains clean accuracy
#: (benchmarks/RESULTS.md).
PASSTHROUGH_NOISE_LEVEL = 0.05
#: Prior strengths of the band weights' logarithms (per training set, like the ridge
#: penalty of the output layer), strongest first: each refined model warm-starts the next.
PRIOR_PATH = np.logspace(2, -2, 3)
#: L-BFGS iterations per refined model, at most: a refinement that pays converges well
#: within them (a regression on ``(2 b1 - b3) / (2 b1 + b3)``, whose k = 2 it recovers); on
#: the shipped data, where validation kept the start in every fold, the weaker priors ran to
#: any cap, and at a higher one forest type's refinement was half its fit
#: (benchmarks/RESULTS.md, "Newton steps for the chosen ``C``, a shorter refinement", and
#: "Figures moved out of the code").
REFINE_MAX_ITER = 30
#: ... and they stop once an iteration lowers the objective by less than this share of it
#: (scipy's ``ftol``): on satimage's centre pixel the first prior then stopped after a
#: few iterations instead of running on, with the same selected model
#: (benchmarks/RESULTS.md, "Figures moved out of the code").
REFINE_FTOL = 1e-7
#: The refinement runs on full batches of at most this many (rows x first-block outputs)
#: values: larger training parts are sampled (:func:`~sknd._training._convex_start.sample_rows`, at
#: least :data:`REFINE_CLASS_ROWS` rows of each class), weighted so that the objective and
#: its penalties stay those of all rows: on all the training rows of satimage-36 (630
#: pairs) the refinement was too slow to keep (benchmarks/RESULTS.md, "Figures moved out
#: of the code").
MAX_REFINE_ELEMENTS = 1 << 18
REFINE_CLASS_ROWS = 50
#: A classifier's convex fits and refinement train on the rows and this many noisy copies
#: of them (:class:`NoisyCopies`): jitter under the paper's noise, whose expected
#: effect is a penalty on the weights along the directions in which band noise moves the
#: indices. Two copies gain much more accuracy under the noise than they cost on clean
#: rows on forest type and satimage's centre pixel, and a little more than one copy. The
#: selections (penalty, prior, depth) score the clean validation rows: scoring them also
#: under the noise, with the copies, cost clean accuracy on the centre pixel for no gain
#: under noise (benchmarks/RESULTS.md, "Noisy copies of the training rows").
TRAIN_NOISE_COPIES = 2


def noisy_copy(X, seed, level=NOISE_LEVEL):
    """``X`` under the paper's multiplicative noise at ``level``, draw ``seed``.

    The same draw as :func:`sknd.experiments.add_multiplicative_noise` with
    ``random_state=seed`` (both through :func:`sknd._training._noise_models.perturbed`), clipped at
    0 where every value of ``X`` is non-negative
    (:func:`~sknd._training._noise_models.sensor_range`, as additive noise is): bands a sensor
    measures stay so, and the reflectance variant needs them so (at the default level a value goes
    negative only where ``z < -10``; at ``level=1`` where ``z < -1``).

    Examples
    --------
    >>> noisy_copy(np.array([[1.0, 0.0]]), 0).round(3)
    array([[1.176, 0.   ]])
    >>> noisy_copy(np.array([[1.0, 2.0]]), 16, level=1.0).round(3)  # z = 0.128, -1.528
    array([[1.128, 0.   ]])
    """
    X = np.asarray(X, dtype=np.float64)
    z = np.random.RandomState(seed).standard_normal(X.shape)
    return sensor_range(X, perturbed(X, level, z, "multiplicative"))


class NoisyCopies(namedtuple("NoisyCopies", "level n_copies")):
    """The noisy copies of a fit's training rows: ``n_copies`` draws of the paper's noise at
    ``level`` (:func:`noisy_copy`), which the recipe's convex fits, refinement and refit
    train on beside the rows.

    :meth:`of` gives a fit's: :data:`TRAIN_NOISE_COPIES` for a classifier with a positive
    ``train_noise``, none otherwise (regression: the ridge start's leave-one-out errors
    need rows that are not copies of each other).

    Examples
    --------
    >>> copies = NoisyCopies(0.1, 2)
    >>> from sknd._data._parts import Part
    >>> X, target, weight = copies(Part(np.ones((2, 3)), np.array([0, 1])))
    >>> X.shape, target.tolist(), round(float(weight.sum()), 9), copies.parts
    ((6, 3), [0, 1, 0, 1, 0, 1], 2.0, 3)
    """

    @classmethod
    def of(cls, task, level):
        """The copies of a fit of ``task`` with ``train_noise=level`` (a number)."""
        classifies = isinstance(task, ClassificationTask)
        return cls(level, TRAIN_NOISE_COPIES if classifies and level > 0 else 0)

    @staticmethod
    def level_of(train_noise, passthrough):
        """The level ``train_noise`` sets: itself, or for ``"auto"``
        :data:`NOISE_LEVEL` (:data:`PASSTHROUGH_NOISE_LEVEL` with ``passthrough``)."""
        if isinstance(train_noise, str):  # "auto"
            return PASSTHROUGH_NOISE_LEVEL if passthrough else NOISE_LEVEL
        return train_noise

    @property
    def parts(self):
        """How many times the copies multiply the training rows: the recipe's row budgets
        count them, so that its cost on large data stays put."""
        return self.n_copies + 1

    def __call__(self, data):
        """The :class:`~sknd._data._parts.Part` of the rows of ``data``, then each copy (a
        new draw of :func:`noisy_copy`) with the same targets, every row weighted
        ``1 / parts`` times its weight, so that the total weight, and with it the meaning of
        the convex fits' penalty, stays that of the rows. ``data`` unchanged without
        copies."""
        if not self.n_copies:
            return data
        X, target, sample_weight = data
        copies = [noisy_copy(X, seed, self.level) for seed in range(1, self.parts)]
        weight = np.ones(len(X)) if sample_weight is None else np.asarray(sample_weight, float)
        return Part(
            np.concatenate([np.asarray(X, dtype=np.float64), *copies]),
            np.tile(target, self.parts),
            np.tile(weight / self.parts, self.parts),
        )


def _row_losses(task, output, target):
    """Per-row losses (float64) of raw outputs under the estimators' training criterion,
    averaged over the outputs as in training (:func:`sknd._training._batches.weighted_loss`)."""
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


class Evaluation:
    """:class:`Validation` of networks on one validation part, ``valid`` (a
    :class:`~sknd._data._parts.Part`), ``rows`` rows per forward pass."""

    def __init__(self, task, valid, rows):
        self.task = task
        self.X = valid.X
        self.rows = rows
        self.target = torch.tensor(valid.target)
        if isinstance(task, ClassificationTask):
            self.target = self.target.to(torch.int64)
        self.weight = None if valid.weight is None else torch.tensor(valid.weight).double()

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
    """The :class:`Validation` of ``module`` on ``valid``, a :class:`~sknd._data._parts.Part`."""
    return Evaluation(task, valid, rows)(module)


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

    Full-batch L-BFGS (scipy's L-BFGS-B without bounds, at most :data:`REFINE_MAX_ITER`
    iterations, stopping at :data:`REFINE_FTOL`) on the flat vector of parameters, torch
    computing the value and gradient: unlike ``torch.optim.LBFGS``, it does not import
    ``torch._dynamo``, which dominated a process's first fit (benchmarks/RESULTS.md, "The
    default recipe's cost, noise robustness and depth="auto"" and "Figures moved out of
    the code"). A non-finite value reads as ``inf``, so that the line search steps back from it.
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
        options={"maxiter": REFINE_MAX_ITER, "maxcor": 20, "gtol": 1e-9, "ftol": REFINE_FTOL},
    )
    with torch.no_grad():
        vector_to_parameters(torch.from_numpy(result.x), params)
    for p in params:
        p.grad = None


def refine(module, split, task, rows, penalty, copies):
    """Step 3: learn the indices from the tuned start, and keep what validation confirms.

    Trains copies of ``module`` (the tuned start, in place of which the selected model
    is written) by full-batch L-BFGS in float64 along :data:`PRIOR_PATH`, each prior's
    model warm-starting the next, until the selection loss rises (weaker priors only fit
    the training rows closer). Keeps, among the start and the refined models that score
    at least as well as the start, the strongest prior by the one-standard-error rule on
    the validation rows' losses. ``split`` is the :class:`~sknd._data._parts.Split` of
    the training and validation rows, targets as for
    :func:`~sknd._training._recipe.prepare`; ``copies`` (:class:`NoisyCopies`) come with the
    training rows. Returns the :class:`Validation` of the start and of
    the selected model, which is the start when there was nothing to refine (too few
    validation rows, no ND layer, or a first block too large for full batches).
    """
    train, valid = split
    weight = None if valid.weight is None else np.asarray(valid.weight, dtype=np.float64)
    evaluate = Evaluation(task, valid, rows)
    start = copy.deepcopy(module).double()
    start_score = evaluate(start)
    width = describe(module)[-1].module.in_features
    if first_nd_layer(module) is None or valid.n_rows < MIN_SELECTION_ROWS:
        return start_score, start_score
    budget = MAX_REFINE_ELEMENTS // width // copies.parts  # copies included
    chosen, sample_weight = sample_rows(train.target, task, budget, REFINE_CLASS_ROWS, train.weight)
    if chosen is not None:
        train = Part(train.X[chosen], train.target[chosen], sample_weight)
    X_train, target_train, sample_weight = copies(train)
    # Copies: the caller's arrays may be read-only (memory-mapped by joblib).
    X = torch.tensor(X_train, dtype=torch.float64)
    target = torch.tensor(target_train)
    if isinstance(task, ClassificationTask):
        target = target.to(torch.int64)
    w_train = None if sample_weight is None else torch.tensor(sample_weight).double()
    n_rows = len(X) if w_train is None else w_train.sum().item()
    objective = _objective(task, penalty, X, target, w_train, n_rows)

    candidate = start
    path = [(start_score, None)]  # strongest prior first
    for prior in PRIOR_PATH:
        _minimize(candidate, functools.partial(objective, candidate, prior))
        if not all(torch.isfinite(p).all() for p in candidate.parameters()):
            break  # a diverged step: the path ends at the last finite model
        path.append((evaluate(candidate), copy.deepcopy(candidate.state_dict())))
        # Past the best prior, weaker ones only fit the training rows closer.
        if past_best([np.average(scored.row_losses, weights=weight) for scored, _ in path]):
            break
    # Among the models that score at least as well as the start, the strongest prior whose
    # selection loss is within a standard error of the best: the indices move only as far
    # as the validation rows can tell apart from noise.
    eligible = [entry for entry in path if entry[0].score >= start_score.score]
    losses = np.array([scored.row_losses for scored, _ in eligible])
    selected, state = eligible[one_standard_error(losses, weight)]
    if state is not None:
        module.load_state_dict(state)  # cast to the module's float32
    return start_score, selected
