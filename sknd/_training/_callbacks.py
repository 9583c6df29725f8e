"""sknd's own skorch callbacks: the validation score, stopping on it, divergence, the log.

:class:`ValidationScore` records each epoch's ``valid_score`` (accuracy or R^2);
:class:`BestEpochStopping` is sknd's early stopping: it ends training after ``patience``
epochs without a better epoch and gives the network the best epoch's weights back
(skorch's own ``EarlyStopping`` is a callback a user may add, checked by
:mod:`sknd._training._user_callbacks`). :class:`FiniteTraining` ends a diverging fit with
an error, and :class:`PlainPrintLog` is ``verbose``'s epoch table. Early stopping ends
training by raising :class:`StopTraining`; :class:`~sknd._training._net.Net` lets the
later callbacks see the epoch before it ends the loop.
"""

import copy
import re
import sys

import torch
from skorch.callbacks import Callback, PrintLog

__all__ = []


class StopTraining(Exception):
    """Raised by :class:`BestEpochStopping` to end the fit loop."""


class ValidationScore(Callback):
    """Record ``valid_score`` (e.g. accuracy or R^2) of each epoch.

    Parameters
    ----------
    score : callable
        ``score(y_true, y_pred, sample_weight) -> float`` on tensors: the
        targets as stored in the dataset, the raw network outputs and the
        sample weights (None when the validation data are not weighted).
    """

    #: Only validation batches matter: training batches need not be reported
    #: (which lets :class:`~sknd._training._net.Net` run the fused training epoch).
    wants_training_batches = False

    def __init__(self, score):
        self.score = score

    def on_epoch_begin(self, net, **kwargs):
        self.targets_, self.outputs_ = [], []

    def on_batch_end(self, net, batch, training, y_pred=None, **kwargs):
        if not training:
            self.targets_.append(batch[1])
            self.outputs_.append(y_pred)

    def on_train_end(self, net, **kwargs):
        self.targets_, self.outputs_ = [], []  # the fitted net keeps no data

    def on_epoch_end(self, net, **kwargs):
        if self.outputs_:
            weights = None
            targets = self.targets_
            if isinstance(targets[0], (tuple, list)):
                targets, weights = zip(*targets)
                weights = torch.cat(weights)
            value = self.score(torch.cat(targets), torch.cat(self.outputs_), weights)
            net.history.record("valid_score", float(value))


#: Validation scores (accuracies, R^2) closer than this count as equal in
#: :class:`BestEpochStopping`.
SCORE_TOLERANCE = 1e-4


def improves(score, loss, best_score, best_loss, lower_is_better=False, tolerance=0.0):
    """Whether ``(score, loss)`` beats the best so far (:class:`BestEpochStopping`, the wide head):
    a better score beyond ``tolerance``, else a lower loss (an unknown one, None, ties)."""
    if abs(score - best_score) > tolerance:
        return score < best_score if lower_is_better else score > best_score
    return loss is not None and best_loss is not None and loss < best_loss


class BestEpochStopping(Callback):
    """Stop after ``patience`` epochs without improvement and restore the best weights.

    Parameters
    ----------
    monitor : str
        History key to watch, e.g. ``"valid_score"`` or ``"valid_loss"``.
    lower_is_better : bool
    patience : int
    start_score : float, callable or None, default=None
        Score of the starting model ("epoch 0"): training then has to beat it,
        and the starting weights are restored if it never does
        (``best_epoch_ = 0``). A callable
        ``start_score(module)`` scores the module training starts from, after
        the callbacks before this one (e.g. skorch's ``LoadInitState``) have
        set its weights.

    A score other than the loss (the weighted accuracy) counts as tied with
    the best when within :data:`SCORE_TOLERANCE` of it (scikit-learn's
    ``MLPClassifier`` ignores changes below its ``tol=1e-4`` too), and ties are
    broken by the (weighted) validation loss, lower is better; other ties keep
    the earlier epoch. An accuracy saturates: with few validation samples of
    weight (class weights 1000 : 0.0001 leave one or two), the first epoch
    that classifies them right would otherwise be kept, however far from
    trained, while the loss keeps measuring how well they are separated.
    """

    def __init__(self, monitor, lower_is_better, patience, start_score=None):
        self.monitor = monitor
        self.lower_is_better = lower_is_better
        self.patience = patience
        self.start_score = start_score

    def on_train_begin(self, net, **kwargs):
        self.best_score_ = None
        self.best_loss_ = None
        self.best_epoch_ = None
        self.best_state_ = None
        self.wait_ = 0
        if self.start_score is not None:
            score = self.start_score
            self.best_score_ = score(net.module_) if callable(score) else score
            self.best_epoch_ = 0
            self.best_state_ = copy.deepcopy(net.module_.state_dict())

    def _improves(self, score, loss):
        if self.best_score_ is None:
            return True
        # A tie: the lower loss wins (the starting model's loss is unknown: it keeps its tie).
        tolerance = 0.0 if loss is None else SCORE_TOLERANCE
        best = self.best_score_, self.best_loss_
        return improves(score, loss, *best, self.lower_is_better, tolerance)

    def on_epoch_end(self, net, **kwargs):
        row = net.history[-1]
        score = row[self.monitor]
        loss = row.get("valid_loss") if self.monitor != "valid_loss" else None
        if self._improves(score, loss):
            self.best_score_ = score
            self.best_loss_ = loss
            self.best_epoch_ = len(net.history)
            self.best_state_ = copy.deepcopy(net.module_.state_dict())
            self.wait_ = 0
            return
        self.wait_ += 1
        if self.wait_ >= self.patience:
            raise StopTraining

    def on_train_end(self, net, **kwargs):
        if self.best_state_ is not None:
            net.module_.load_state_dict(self.best_state_)
        # The fitted net keeps one copy of the weights and no validation data (which a
        # callable start_score holds).
        self.best_state_ = None
        if callable(self.start_score):
            self.start_score = None


#: skorch's colour codes (``skorch.utils.Ansi``), e.g. ``"\x1b[36m"`` and ``"\x1b[0m"``.
_ANSI_CODE = re.compile("\x1b\\[[0-9;]*m")


class PlainPrintLog(PrintLog):
    """skorch's ``PrintLog`` (``verbose``'s epoch table), in colour only on a terminal.

    Written to a log file, a notebook's captured output or a pipe, skorch's
    colour codes for the best values would be escape sequences in the text.
    """

    def format_row(self, row, key, color):
        text = super().format_row(row, key, color)
        isatty = getattr(sys.stdout, "isatty", None)
        if isinstance(text, str) and not (isatty is not None and isatty()):
            text = _ANSI_CODE.sub("", text)
        return text


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
