"""The recipe's wide head: the invariant peer inside the ND network, trained as it is trained.

scikit-learn's ``MLPClassifier`` on the standardized classic indices of all pairs (100 ReLU
units, Adam at 1e-3, batches of 200, up to 200 epochs) is an illumination-invariant model
that a depth-3 ND network contains: at its start the ND layer *is* those indices and the
Standardize layer standardizes them. With passthrough the first block adds the
standardized bands, and the network contains the MLP on the bands as well. The recipe's
linear start, and a deeper head carried from it (:func:`~sknd._training._recipe.carry`), stay near
the linear model: early stopping ends their training within a few dozen epochs, below
what those peers reach from random weights (benchmarks/RESULTS.md).

:class:`WideHead` trains the hidden and output layers of a depth-3 network the way the
peer is trained, on the first block's outputs held fixed (the recipe's tuned, possibly
refined, indices, standardized), from random weights, and keeps the epoch that scores best
on the validation rows. Every second epoch trains on a noisy copy of the training rows
instead of the rows, under the paper's noise at ``train_noise``
(:func:`~sknd._training._refinement.noisy_copy`; :data:`NOISY_COPIES` of them in turn): a head
trained on the clean rows alone is as fragile as the peer, which loses about twice what the
MLP on the bands loses under the paper's noise (benchmarks/RESULTS.md, "Figures moved out
of the code"). Where the recipe keeps the head, :meth:`WideHead.refit` trains a new one on
the training and validation rows for the epochs validation kept, as the peer trains on all
the rows it is given (benchmarks/RESULTS.md, "The kept wide head trained anew on all
rows"). The head reads the principal components of the first block's outputs
(:class:`~sknd._training._convex_start.Components`, as the convex fits do: hundreds of indices
of a few dozen bands span few more directions than the bands), computed once for both
trainings, and the trained layer is folded back onto the indices, so that the network and
its exports stay as they are. Its epochs run through
:class:`~sknd._training._fused.FusedTrainer`'s hand-written backward, as the network's own do.

Penalty paths, two noisy rows for each clean one in every epoch, training without a
validation stop and the classic indices under the head, as the invariant references are
trained, were each measured against this schedule and not taken: none moved the frontier
beyond the folds' noise, and a path over the penalty doubled the head's cost
(benchmarks/RESULTS.md, "The invariant frontier at the noise floor").
"""

import itertools

import numpy as np
import torch
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from .._data._tasks import ClassificationTask
from .._data._weights import weight_tensor
from ..networks import describe, forward_rows, rows_per_pass
from ._adam import FlatAdam
from ._batches import TensorBatches, TensorDataset
from ._callbacks import improves
from ._convex_start import Components, one_standard_error
from ._fused import FusedTrainer
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
#: head too early on satimage-36, for less than they saved (benchmarks/RESULTS.md, "The
#: default against the peers it contains: the wide head").
PATIENCE = 20
#: Noisy copies of the training rows that odd epochs cycle through: a new copy every epoch
#: was more robust than two fixed copies beside the rows in every epoch, but computing a
#: copy's indices every epoch took most of the head's time (benchmarks/RESULTS.md, "The
#: default against the peers it contains: the wide head").
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
    otherwise. Returns ``(kept, words)``, ``words`` what ``verbose`` prints: the two mean
    validation losses the rule compares and the standard error it compares them by."""
    losses = np.stack([start.row_losses, head.row_losses])
    kept = one_standard_error(losses, sample_weight) == 1
    # The rule's standard error is the better model's (the mean of the lower losses).
    better = losses[int(head.loss < start.loss)]
    n = len(better) if sample_weight is None else np.sum(sample_weight)
    error = np.sqrt(np.cov(better, aweights=sample_weight, bias=True) / n)
    words = (
        f"validation loss {head.loss:.4f} against {start.loss:.4f} at the depth-2 start, "
        f"standard error {error:.4f}: "
        + (
            "kept, lower by more than a standard error"
            if kept
            else "not kept: not lower by more than a standard error"
        )
    )
    return kept, words


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


class _Rows:
    """The first block's outputs of the training rows followed by the validation rows (the
    :class:`~sknd._data._parts.Part` ``data``, the first ``n_train`` of them training
    rows) in the principal coordinates of the training rows'
    (:class:`~sknd._training._convex_start.Components`), computed once for training and
    refit: the rows themselves and, at ``level`` > 0, :data:`NOISY_COPIES` noisy copies of
    them, with their training targets (class codes) and weights."""

    def __init__(self, first, data, n_train, task, level, seed):
        X, target, weight = data
        rows = rows_per_pass(first)
        features = forward_rows(first, X, rows)
        train_weight = None if weight is None else weight[:n_train]
        self.components = Components(features[:n_train], train_weight)
        self.valid = self.components(features[n_train:])  # float64, as Evaluation scores

        def coordinates(features):  # float32, as the head trains
            return torch.as_tensor(self.components(features)).float()

        self.clean = coordinates(features)
        self.noisy = [
            coordinates(forward_rows(first, noisy_copy(X, seed + k, level), rows))
            for k in range(NOISY_COPIES if level > 0 else 0)
        ]
        self.target = task.target_tensor(target)
        self.weight = weight

    def epochs(self, n_rows):
        """The :class:`~sknd._training._batches.TensorDataset` of the first ``n_rows`` rows for
        each epoch in turn: the rows themselves on even epochs, one of the noisy copies on
        odd ones (the rows alone at ``level`` 0)."""
        weight = None if self.weight is None else weight_tensor(self.weight[:n_rows], "cpu")
        clean, *noisy = (
            TensorDataset(features[:n_rows], self.target[:n_rows], weight)
            for features in [self.clean, *self.noisy]
        )
        for epoch in itertools.count():
            yield noisy[(epoch // 2) % len(noisy)] if noisy and epoch % 2 else clean


class WideHead:
    """The hidden and output layers of a depth-3 classification network, trained as the
    invariant peer is trained, on the first block's outputs held fixed.

    ``module`` is a depth-3 network (first block, Standardize, Linear, ReLU, Linear) whose
    first block and Standardize layer are the recipe's start. ``train`` and ``valid`` are
    the :class:`~sknd._data._parts.Part` of the training and validation rows, their
    targets class codes; ``level`` the noise level of the noisy copies (``train_noise``; 0
    for none); ``seed`` seeds the head's initial weights, the batches' order and the copies.
    """

    def __init__(self, module, train, valid, task, level, seed):
        self.task, self.rows, self.seed = task, rows_per_pass(module), seed
        self.valid = valid
        self.n_train = train.n_rows
        hidden = next(layer.module for layer in describe(module) if layer.kind == "linear")
        self.width = hidden.out_features
        self.data = _Rows(module[:2], train.joined(valid), train.n_rows, task, level, seed)
        #: Epochs :meth:`train` trained up to the one it kept (None before it ran).
        self.epochs = None

    def _fit(self, module, n_rows, max_epochs, evaluate=None):
        """Train a fresh head on the first ``n_rows`` rows for up to ``max_epochs`` epochs
        (with ``evaluate``: keep the best epoch, stop after :data:`PATIENCE` without a
        better one), fold it into ``module``; return the epochs up to the kept one."""
        data = self.data
        head = _head(data.clean.shape[1], self.width, self.task.n_outputs, self.seed)
        optimizer = FlatAdam(head.parameters(), lr=LR, weight_decay=ALPHA / BATCH_SIZE)
        trainer = FusedTrainer(head, self.task.criterion(), optimizer, BATCH_SIZE)
        generator = torch.Generator().manual_seed(self.seed)
        best, best_state, best_epoch = None, None, max_epochs - 1
        epochs = data.epochs(n_rows)
        for epoch in range(max_epochs):
            trainer.run_epoch(TensorBatches(next(epochs), BATCH_SIZE, True, generator))
            if evaluate is None:
                continue
            scored = evaluate(head)
            if best is None or improves(scored.score, scored.loss, best.score, best.loss):
                best, best_epoch = scored, epoch
                best_state = parameters_to_vector(head.parameters())  # a copy
            elif epoch - best_epoch >= PATIENCE:
                break
        if best_state is not None:
            vector_to_parameters(best_state, head.parameters())
        _fold(module, head, data.components)
        return best_epoch + 1

    def train(self, module):
        """Train from random weights on the training rows; keep the epoch that scores best
        on the validation rows (by score, then loss) in ``module``'s hidden and output
        layers, and return ``module``'s :class:`~sknd._training._refinement.Validation`."""
        evaluate = Evaluation(self.task, self.valid.with_features(self.data.valid), self.rows)
        self.epochs = self._fit(module, self.n_train, MAX_EPOCHS, evaluate)
        return Evaluation(self.task, self.valid, self.rows)(module)

    def refit(self, module):
        """Train anew as :meth:`train` did, on the training and validation rows for the
        epochs :meth:`train` kept, into ``module``'s hidden and output layers."""
        self._fit(module, len(self.data.clean), self.epochs)
