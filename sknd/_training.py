"""Training machinery on top of skorch: tensor batches, scoring and early stopping.

skorch provides the loop, the history and the callback protocol; this module
replaces its per-sample data loading by tensor slicing (at batch 32 the
``Dataset.__getitem__`` + collate path dominates the step time) and lets a
user's ``KeyboardInterrupt`` propagate instead of silently ending ``fit``.
"""

import copy

import torch
from skorch import NeuralNet
from skorch.callbacks import Callback

__all__ = []


class _StopTraining(Exception):
    """Raised by :class:`EarlyStopping` to end the fit loop."""


class TensorDataset(torch.utils.data.Dataset):
    """Inputs and targets held as whole tensors, batched by slicing."""

    def __init__(self, X, y):
        self.X = X
        self.y = y

    def __len__(self):
        return len(self.X)

    def __getitem__(self, index):
        return self.X[index], self.y[index]


class TensorBatches:
    """Iterate over a :class:`TensorDataset` in (optionally shuffled) slices.

    Parameters
    ----------
    dataset : TensorDataset
    batch_size : int
    shuffle : bool, default=False
        Draw a new permutation every epoch from ``generator``.
    generator : torch.Generator or None, default=None
        CPU generator for the permutations, seeded by the estimator so that
        shuffling never touches the global torch RNG.
    """

    def __init__(self, dataset, batch_size, shuffle=False, generator=None):
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.generator = generator

    def __iter__(self):
        X, y = self.dataset.X, self.dataset.y
        if self.shuffle:
            order = torch.randperm(len(X), generator=self.generator).to(X.device)
            X, y = X[order], y[order]
        for start in range(0, len(X), self.batch_size):
            stop = start + self.batch_size
            yield X[start:stop], y[start:stop]

    def __len__(self):
        return -(-len(self.dataset) // self.batch_size)


class ValidationScore(Callback):
    """Record ``valid_score`` (e.g. accuracy or R^2) of each epoch.

    Parameters
    ----------
    score : callable
        ``score(y_true, y_pred) -> float`` on tensors: the targets as stored
        in the dataset and the raw network outputs.
    """

    def __init__(self, score):
        self.score = score

    def on_epoch_begin(self, net, **kwargs):
        self.targets_, self.outputs_ = [], []

    def on_batch_end(self, net, batch, training, y_pred=None, **kwargs):
        if not training:
            self.targets_.append(batch[1])
            self.outputs_.append(y_pred)

    def on_epoch_end(self, net, **kwargs):
        if self.outputs_:
            value = self.score(torch.cat(self.targets_), torch.cat(self.outputs_))
            net.history.record("valid_score", float(value))


class EarlyStopping(Callback):
    """Stop after ``patience`` epochs without improvement and restore the best weights.

    Parameters
    ----------
    monitor : str
        History key to watch, e.g. ``"valid_score"`` or ``"valid_loss"``.
    lower_is_better : bool
    patience : int
    """

    def __init__(self, monitor, lower_is_better, patience):
        self.monitor = monitor
        self.lower_is_better = lower_is_better
        self.patience = patience

    def on_train_begin(self, net, **kwargs):
        self.best_score_ = None
        self.best_epoch_ = None
        self.best_state_ = None
        self.wait_ = 0

    def on_epoch_end(self, net, **kwargs):
        score = net.history[-1, self.monitor]
        if self.best_score_ is None or (
            score < self.best_score_ if self.lower_is_better else score > self.best_score_
        ):
            self.best_score_ = score
            self.best_epoch_ = len(net.history)
            self.best_state_ = copy.deepcopy(net.module_.state_dict())
            self.wait_ = 0
            return
        self.wait_ += 1
        if self.wait_ >= self.patience:
            raise _StopTraining

    def on_train_end(self, net, **kwargs):
        if self.best_state_ is not None:
            net.module_.load_state_dict(self.best_state_)


class Net(NeuralNet):
    """skorch ``NeuralNet`` whose fit ends on :class:`EarlyStopping` only.

    skorch treats ``KeyboardInterrupt`` as "stop training and keep the model";
    sknd lets a user's interrupt propagate so that an interrupted ``fit`` never
    leaves an estimator that looks fitted.
    """

    def partial_fit(self, X, y=None, classes=None, **fit_params):
        if not self.initialized_:
            self.initialize()
        fit_params.pop("_routing_method", None)
        self.notify("on_train_begin", X=X, y=y)
        try:
            self.fit_loop(X, y, **fit_params)
        except _StopTraining:
            pass
        self.notify("on_train_end", X=X, y=y)
        return self


class FiniteTraining(Callback):
    """Stop ``fit`` with a ``ValueError`` naming the epoch once training stops being finite.

    A NaN or infinite loss, or a non-finite weight, poisons every later step and
    would be restored or returned as the fitted model, which then predicts NaN.
    Checked once per epoch, after skorch has recorded the epoch's losses: weights
    written non-finite by the last step of the last epoch are caught as well.
    """

    def on_epoch_end(self, net, **kwargs):
        epoch = len(net.history)
        row = net.history[-1]
        for key in ("train_loss", "valid_loss"):
            value = row.get(key)
            # False for NaN and for +-inf.
            if value is not None and not abs(value) < float("inf"):
                self._fail(net, epoch, f"the {key.replace('_', ' ')} is {value}")
        for name, parameter in net.module_.named_parameters():
            if not torch.isfinite(parameter).all():
                self._fail(net, epoch, f"the weights {name!r} are no longer finite")

    @staticmethod
    def _fail(net, epoch, what):
        raise ValueError(
            f"Training diverged at epoch {epoch}: {what}. A model that predicts NaN is not "
            f"returned. Lower the learning rate (lr={net.lr:g}), raise weight_decay, or rescale "
            "X (all bands by one common factor) and, for regression, y."
        )
