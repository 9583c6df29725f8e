"""sknd's default training recipe (``recipe="sknd"``): a tuned convex start, then learned indices.

Under the paper's recipe a depth-2 ND network, which starts *at* the classic indices and
can represent "logistic regression on all classic indices", stops on a plateau below that
model (forest type and satimage-36 when this recipe was designed: docs/training.md, whose
opening gives the figures). The steps below, for ND and AttND networks, close
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
2. **Tuned convex start.** The output layer starts from the convex fit on the standardized
   classic indices, its penalty chosen from the data (:func:`prepare`,
   :mod:`sknd._training._convex_start`): ridge regression on the standardized targets by generalized
   cross-validation over an alpha path (as :class:`~sklearn.linear_model.RidgeCV`),
   logistic regression by a warm-started path of ``C`` scored by the validation log-loss.
   A fixed penalty (``C=1`` or ``alpha=1``) fell well short of ``RidgeCV`` on a 250-band
   regression and collapsed with ``pairs="all"`` (docs/training.md, step 2). A
   classifier's convex fits (and its steps 3 and 5) train on the rows and noisy copies
   of them under the paper's noise
   (:class:`~sknd._training._refinement.NoisyCopies`, the estimators' ``train_noise``): robustness
   to noisy bands.
3. **Learned indices.** From that start, the band weights and the output layer are trained
   jointly by full-batch L-BFGS on the start's own objective (the same loss and penalty)
   plus a Gaussian prior pulling each band weight's logarithm toward the classic index,
   along a path of prior strengths (:func:`~sknd._training._refinement.refine`). The validation part
   picks the start or one of the refined models, by score, then loss: the start's optimum
   of the head is where Adam's noisy minibatch steps rarely improved the validation score,
   while a second-order method on the whole objective moves the indices as far as the data
   support.
4. **Epoch 0.** Early stopping scores the selected model before the first Adam update,
   so training can never end below it (``best_epoch_ = 0``: the selected model was best).
5. **Convex refit.** After early stopping, the output layer is refitted by the same
   convex fit (the tuned penalty) on what it reads, the learned (standardized) indices or
   the last hidden layer's outputs, of the training *and* validation rows, with everything
   before it frozen, starting from the trained layer: the network trains on 70/90 of the
   rows, a convex fit uses them all.

On large training sets steps 1, 2, 3 and 5 use an unbiased sample of the rows (see
:func:`~sknd._training._convex_start.convex_rows`): their cost then stops growing with the data
while training's does.

``depth="auto"`` first tries a wide head on the depth-2 start's indices, trained as
scikit-learn trains its MLP (:mod:`sknd._training._wide_head`), and keeps it where validation
confirms it (then trained anew on all rows in place of step 5); otherwise a deeper
network carried from the start, or the start itself.

Standardization alone (without 2) lost accuracy on two data sets (docs/training.md,
"Measured"; benchmarks/results_issue11/README.md). Deeper networks
trained from random weights (as in the paper) lost to the tuned depth-2 model on forest
type; started at it, with the width of :func:`hidden_units` and the refit of step 5, depths
3 and 4 gain on both shipped data sets (benchmarks/bench_depth.py). Separate learning
rates, plateau schedules and capped convex fits did not help (see the report).
"""

import contextlib
import time

import numpy as np
import torch

from .._data._parts import Part
from .._data._tasks import ClassificationTask
from ..networks import MAX_DEFAULT_HIDDEN_UNITS, describe, forward_rows
from . import _convex_start
from ._convex_start import DEFAULT_ALPHA, DEFAULT_C, MIN_SELECTION_ROWS

__all__ = []

#: Values of the estimators' ``recipe`` parameter.
RECIPES = ("sknd", "paper")

#: Hidden units of scikit-learn's default MLPClassifier / MLPRegressor: deeper recipe
#: networks stay within its parameter count (:func:`hidden_units`).
MLP_HIDDEN_UNITS = 100
#: Fewest hidden units of a deeper recipe network besides those carrying the linear start.
MIN_NONLINEAR_UNITS = 8
#: Epochs of Adam's learning-rate warm-up in a deeper network carried from the start
#: (:func:`warmup_steps`; benchmarks/RESULTS.md, "depth 3 from the depth-2 start").
WARMUP_EPOCHS = 5


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


def _carried(module):
    """Whether ``module`` is deeper than the depth-2 network of steps 1-3 (first block,
    Standardize, output layer), and so carried from it (:func:`carry`)."""
    return len(describe(module)) > 3


def linear_part(module):
    """The depth-2 network the recipe's steps 1-3 and 5 work on.

    ``module`` itself at depth 2. For deeper networks, a depth-2 network sharing
    ``module``'s first block and Standardize layer, with a new zero output layer:
    :func:`carry` then starts the deeper network at it.
    """
    if not _carried(module):
        return module
    layers = [layer.module for layer in describe(module)]
    first, standardize, hidden = layers[:3]
    # The caller's generator state comes back: the zeroed layer's draws leave no trace.
    # (Not a "meta" layer: its to_empty imports sympy, most of a process's first fit:
    # benchmarks/RESULTS.md, "The default recipe's cost, noise robustness and depth="auto"".)
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


def warmup_steps(module, task, n_rows, batch_size):
    """Steps of Adam's linear learning-rate warm-up when ``module`` trains from the start.

    :data:`WARMUP_EPOCHS` epochs of ``n_rows`` rows in batches of ``batch_size`` for a
    regressor's network deeper than 2; none at depth 2 and none for classifiers. A hidden
    unit of a carried network reads every index of the first block (hundreds with many
    bands), and Adam's first steps move each weight by about the learning rate whatever
    its gradient (:class:`~sknd._training._adam.FlatAdam`): in step with each other they
    sent a 200-band regressor's squared error on the standardized target to 27 in the
    first epoch, far from the start that :func:`carry` made exact. A classifier's early
    stopping keeps the start against such an epoch, and there the warm-up only cost
    accuracy (forest type, 10 folds: one test row fewer in 5 folds, none more; satimage
    unchanged: benchmarks/RESULTS.md, "depth 3 from the depth-2 start").
    """
    if isinstance(task, ClassificationTask) or not _carried(module):
        return 0
    return WARMUP_EPOCHS * -(-n_rows // batch_size)


def _sample(data, task, output, parts=1):
    """The :class:`~sknd._data._parts.Part` ``data`` restricted to
    :func:`~sknd._training._convex_start.convex_rows` of it (``parts`` as there)."""
    rows, weight = _convex_start.convex_rows(
        data.target, task, output.weight.numel() + output.bias.numel(), data.weight, parts
    )
    if rows is None:
        return data
    return Part(data.X[rows], data.target[rows], weight)


def _features(module, X, rows):
    """What the output layer of ``module`` reads from ``X`` (float64), the convex fits'
    features: the standardized first-block outputs at depth 2, the last hidden layer's
    outputs deeper (build_network's networks are flat: ``[first, ..., output]``)."""
    return forward_rows(module[:-1], X, rows)


def prepare(module, split, task, rows, copies, clock=None):
    """Steps 1 and 2: standardize the first block's outputs, fit the tuned convex start.

    ``split`` is the :class:`~sknd._data._parts.Split` of the training and validation
    rows (``valid`` None where the fit holds none out), their target what the convex fit
    learns: class codes, or the standardized regression targets. Sample weights weight the
    statistics and the fit (weight ``k`` counts as ``k`` copies of the sample, as in
    scikit-learn's linear models). Both use
    :func:`~sknd._training._convex_start.convex_rows` of the training rows; the fit also
    trains on their ``copies`` (:class:`~sknd._training._refinement.NoisyCopies`).

    Returns ``(penalty, tuned)``: the logistic regression's ``C`` or the ridge's
    ``alpha``, and whether it was chosen from the data (False: too few rows to select
    on, :data:`~sknd._training._convex_start.DEFAULT_C` /
    :data:`~sknd._training._convex_start.DEFAULT_ALPHA`). ``clock``, a :class:`Stopwatch`,
    times the stages "standardize" and "C path" or "alpha path".
    """
    train, valid = split
    clock = Stopwatch() if clock is None else clock
    first, standardize, output = _parts(module)
    with clock.stage("standardize"):
        train = _sample(train, task, output, copies.parts)
        indices = torch.as_tensor(forward_rows(first, train.X, rows))
        standardize.fit(indices, train.weight)
        # The standardized indices from the same first-block pass, in float64 as forward_rows'.
        features = forward_rows(standardize, indices.numpy(), rows)
        noisy = copies(train)
        if noisy.n_rows > train.n_rows:  # the copies' standardized indices
            features = np.concatenate([features, _features(module, noisy.X[train.n_rows :], rows)])
    name = "C path" if isinstance(task, ClassificationTask) else "alpha path"
    with clock.stage(name):
        return _tune(module, noisy.with_features(features), task, rows, valid, copies)


def _tune(module, fitted, task, rows, valid, copies):
    """:func:`prepare`'s step 2 on ``fitted``, the :class:`~sknd._data._parts.Part` of the
    training rows (and copies) whose ``X`` holds their standardized features:
    ``(penalty, tuned)``."""
    output = module[-1]
    features, target, weight = fitted
    if not isinstance(task, ClassificationTask):
        if len(features) >= MIN_SELECTION_ROWS:
            return _convex_start.tuned_ridge(output, features, target, task, weight), True
        _convex_start.convex_fit(fitted, task, output, DEFAULT_ALPHA)
        return DEFAULT_ALPHA, False
    if valid is not None and valid.n_rows >= MIN_SELECTION_ROWS:
        # The validation rows' features, as the training rows', from a sample on large data.
        valid = _sample(valid, task, output)
        C = _convex_start.tuned_logistic(
            output,
            fitted,
            len(task.classes),
            valid.with_features(_features(module, valid.X, rows)),
            copies.parts,
        )
        if C is not None:
            return C, True
    _convex_start.convex_fit(fitted, task, output, DEFAULT_C, copies.parts)
    return DEFAULT_C, False


def refit(module, data, task, rows, penalty, copies):
    """Step 5: refit the output layer on what it reads from the rows of ``data`` (a
    :class:`~sknd._data._parts.Part`: all rows, or
    :func:`~sknd._training._convex_start.convex_rows` of them): the learned standardized
    indices at depth 2, the last hidden layer's outputs in deeper networks; with their
    ``copies`` (:class:`~sknd._training._refinement.NoisyCopies`).

    A logistic regression keeps the start's ``C``, a ridge at depth 2 the start's
    ``alpha``, which weighs the standardized indices it reads; a deeper network's ridge
    chooses its ``alpha`` anew by the leave-one-out errors on these features and rows, as
    the start chose it: the hidden units carry the linear start in two units of another
    scale, and the start's ``alpha`` shrank them to a fraction of the fit (a 200-band
    regression at depth 3 lost more than half its test R2 to the refit).
    """
    output = module[-1]
    X, target, weight = copies(_sample(data, task, output, copies.parts))
    features = _features(module, X, rows)
    anew = not isinstance(task, ClassificationTask) and _carried(module)
    if not anew or len(features) < MIN_SELECTION_ROWS:
        _convex_start.convex_fit((features, target, weight), task, output, penalty, copies.parts)
    else:
        _convex_start.tuned_ridge(output, features, target, task, weight)
