"""The recipe's wide head: the invariant peer inside the ND network, trained as it is trained.

scikit-learn's ``MLPClassifier`` on the standardized classic indices of all pairs (100 ReLU
units, Adam at 1e-3, batches of 200, up to 200 epochs) is an illumination-invariant model
that a depth-3 ND network contains: at its start the ND layer *is* those indices and the
Standardize layer standardizes them. With passthrough the first block adds the
standardized bands, and the network contains the MLP on the bands as well. The recipe's
linear start, and a deeper head carried from it (:func:`~sknd._training._recipe.carry`), stay near
the linear model: early stopping ends their training within a few dozen epochs, below
what those peers reach from random weights (benchmarks/RESULTS.md).

:func:`train_head` trains the hidden and output layers of a depth-3 network the way the
peer is trained, on the first block's outputs held fixed (the recipe's tuned, possibly
refined, indices, standardized), from random weights, and keeps the epoch that scores best
on the validation rows. Every second epoch trains on a noisy copy of the training rows
instead of the rows, under the paper's noise at ``train_noise``
(:func:`~sknd._training._refinement.noisy_copy`; :data:`NOISY_COPIES` of them in turn): a head
trained on the clean rows alone is as fragile as the peer (satimage-36, two folds: a drop
of 22.8 points under 10 % multiplicative noise for the peer against 11.5 for the MLP on the
bands), one with the rows and a new copy each epoch dropped 10.3 there. The head reads the principal
components of the first block's outputs (:class:`~sknd._training._convex_start.Components`, as the
convex fits do: 87 of satimage-36's 630 indices), which makes an epoch a fraction of one
on all the indices; the trained layer is folded back onto the indices, so that the network
and its exports stay as they are.
"""

import copy

import numpy as np
import torch

from .._data._tasks import ClassificationTask
from .._data._weights import weight_tensor
from ..networks import describe, forward_rows
from ._adam import FlatAdam
from ._convex_start import Components, one_standard_error
from ._net import improves, weighted_loss
from ._refinement import Evaluation, noisy_copy

__all__ = []

#: Hidden units of the wide head (``hidden_units=None``): scikit-learn's MLP default.
WIDTH = 100
#: The peer's schedule: Adam's learning rate and batch size (scikit-learn's defaults:
#: ``learning_rate_init=1e-3``, ``batch_size=min(200, n_samples)``), its L2 penalty
#: (``alpha=1e-4`` per row of a batch, as torch's weight decay: ``alpha / batch``; the
#: biases too, which scikit-learn leaves unpenalized), and its epochs at most.
LR = 1e-3
BATCH_SIZE = 200
ALPHA = 1e-4
MAX_EPOCHS = 200
#: Epochs without a better validation score (then loss) before the head stops. The peer
#: stops after 10 epochs without a better training loss; 10 validation epochs stopped the
#: head early on satimage-36 (two folds: 81.86 against 82.98 at 20, for 2.40x against
#: 2.95x the MLP's fit time).
PATIENCE = 20
#: Noisy copies of the training rows that odd epochs cycle through (a new copy every epoch
#: of a two-fold probe dropped 10.3 points on satimage-36 against 12.4 for two fixed copies
#: beside the rows in every epoch; computing a copy's indices every epoch took most of the
#: head's time).
NOISY_COPIES = 8
#: Fewest training rows to train a wide head on: below it, the recipe keeps its linear
#: start (``verbose`` says so).
MIN_ROWS = 100


def why_not(task, n_rows):
    """Why no wide head is trained for ``task`` on ``n_rows`` training rows (None: it is)."""
    if not isinstance(task, ClassificationTask):
        return "regression (the wide head is the classifiers' peer)"
    if n_rows < MIN_ROWS:
        return f"fewer than {MIN_ROWS} training rows"
    return None


def beats(head, start, sample_weight):
    """Whether the :class:`~sknd._training._refinement.Validation` ``head`` beats ``start`` by
    more than the standard error of its validation losses: the one-standard-error rule
    (:func:`~sknd._training._convex_start.one_standard_error`) keeps the simpler ``start``
    otherwise."""
    losses = np.stack([start.row_losses, head.row_losses])
    return one_standard_error(losses, sample_weight) == 1


def _head(n_inputs, width, n_outputs, seed):
    """A fresh ``Linear -> ReLU -> Linear`` head (torch's initialisation, ``seed``'s draws;
    the caller's generator state comes back)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return torch.nn.Sequential(
            torch.nn.Linear(n_inputs, width),
            torch.nn.ReLU(),
            torch.nn.Linear(width, n_outputs),
        )


def _fold(module, head, components):
    """Copy ``head`` (on ``components`` coordinates) into ``module``'s hidden and output
    layers, so that ``module`` computes it from the first block's outputs."""
    hidden, output = (layer.module for layer in describe(module) if layer.kind == "linear")
    with torch.no_grad():
        weight = head[0].weight.double().numpy() @ components.basis.T
        bias = head[0].bias.double().numpy() - weight @ components.mean
        hidden.weight.copy_(torch.as_tensor(weight))
        hidden.bias.copy_(torch.as_tensor(bias))
        output.weight.copy_(head[2].weight)
        output.bias.copy_(head[2].bias)


class _EpochFeatures:
    """The training rows' coordinates, targets and weights of each epoch: the rows
    themselves on even epochs, one of :data:`NOISY_COPIES` noisy copies of them on odd ones
    (the rows alone at ``level`` 0)."""

    def __init__(self, first, X, features, components, level, seed, rows):
        def coordinates(features):  # float32 principal coordinates of first-block outputs
            return torch.as_tensor(components(features)).float()

        self.clean = coordinates(features)
        self.noisy = []
        if level > 0:
            self.noisy = [
                coordinates(forward_rows(first, noisy_copy(X, seed + k, level), rows))
                for k in range(NOISY_COPIES)
            ]

    def __call__(self, epoch):
        """The features of epoch ``epoch``."""
        if not self.noisy or epoch % 2 == 0:
            return self.clean
        return self.noisy[(epoch // 2) % len(self.noisy)]


def _loss_target(task, target):
    """The training criterion's target tensor of class codes."""
    return target.float().reshape(-1, 1) if task.binary else target.long()


def train_head(module, train, task, rows, valid, level, seed):
    """Train the hidden and output layers of the depth-3 ``module`` as the invariant peer
    is trained, on its first block's outputs held fixed; return the
    :class:`~sknd._training._refinement.Validation` of the trained ``module``.

    ``module`` is a depth-3 classification network (first block, Standardize, Linear,
    ReLU, Linear) whose first block and Standardize layer are the recipe's start; its
    hidden and output layers are replaced by the best epoch's. ``train`` and ``valid`` are
    the :class:`~sknd._data._parts.Part` of the training and validation rows, their
    targets class codes; ``level``
    the noise level of each epoch's noisy copy (``train_noise``; 0 for none); ``seed``
    seeds the head's initial weights, the batches' order and the copies.
    """
    first = module[:2]
    X, target, sample_weight = train
    features = forward_rows(first, X, rows)
    components = Components(features, sample_weight)
    hidden = next(layer.module for layer in describe(module) if layer.kind == "linear")
    head = _head(components.basis.shape[1], hidden.out_features, task.n_outputs, seed)
    epochs = _EpochFeatures(first, X, features, components, level, seed, rows)
    targets = _loss_target(task, torch.as_tensor(target))
    # Of mean 1, as training's (sknd._data._weights): the steps' size does not scale with them.
    weights = weight_tensor(np.ones(len(X)) if sample_weight is None else sample_weight, "cpu")
    evaluate = Evaluation(
        task, valid.with_features(components(forward_rows(first, valid.X, rows))), rows
    )
    optimizer = FlatAdam(head.parameters(), lr=LR, weight_decay=ALPHA / BATCH_SIZE)
    criterion = task.criterion()
    generator = torch.Generator().manual_seed(seed)
    best, best_state, waited = None, None, 0
    for epoch in range(MAX_EPOCHS):
        features = epochs(epoch)
        order = torch.randperm(len(features), generator=generator)
        for start in range(0, len(order), BATCH_SIZE):
            batch = order[start : start + BATCH_SIZE]
            optimizer.zero_grad()
            output = head(features[batch])
            loss = weighted_loss(criterion, output, targets[batch], weights[batch])
            loss.backward()
            optimizer.step()
        scored = evaluate(head)
        if best is None or improves(scored.score, scored.loss, best.score, best.loss):
            best, best_state, waited = scored, copy.deepcopy(head.state_dict()), 0
        else:
            waited += 1
            if waited >= PATIENCE:
                break
    head.load_state_dict(best_state)
    _fold(module, head, components)
    return Evaluation(task, valid, rows)(module)
