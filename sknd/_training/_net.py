"""Training machinery on top of skorch: tensor batches, scoring and early stopping.

skorch provides the loop, the history and the callback protocol (the checks of a user's
own callbacks are in :mod:`sknd._training._user_callbacks`); this module keeps them and
removes per-batch overhead that dominates small networks:

- data loading slices whole tensors (at batch 32 the ``Dataset.__getitem__`` +
  collate path costs more than the step itself);
- a training epoch runs :class:`~sknd._training._fused.FusedTrainer` (hand-written
  forward and closed-form backward, :class:`~sknd._training._adam.FlatAdam`) when the
  network and loss are supported and no callback asks for per-batch events;
  otherwise skorch's own ``train_step`` with autograd;
- losses are summed on the device and read once per epoch (no per-batch
  ``.item()``), and batch-level events are only sent to callbacks that
  implement them.

The history keeps skorch's per-epoch keys (``epoch``, ``dur``,
``train_loss``, ``valid_loss`` and their ``*_best`` flags, batch counts).
Batches whose events are sent get skorch's per-batch records
(``train_loss`` / ``valid_loss`` and ``*_batch_size``), which skorch's
batch-level callbacks read. A user's ``KeyboardInterrupt`` propagates
instead of silently ending ``fit``; skorch's ``EarlyStopping``, which stops
by raising one, ends training as sknd's does.

The events each path sends (the fused epoch, or skorch's ``train_step`` for the whole fit
when a callback acts on training batches) are tabled once, in the user guide's training
page ("Callbacks, the fitted net and its history", "Events").

Once trained, a :class:`Net` is the estimator's ``net_``: it refuses to train
again or load weights (:meth:`Net.initialize`, ``fit``, ``partial_fit``,
``load_params``), since its ``module_`` is the estimator's network.
"""

import copy
import re
import sys

import numpy as np
import torch
from sklearn.metrics import accuracy_score, r2_score
from skorch import NeuralNet
from skorch.callbacks import (
    BatchScoring,
    Callback,
    EpochScoring,
    EpochTimer,
    LRScheduler,
    PassthroughScoring,
    PrintLog,
)
from skorch.callbacks import EarlyStopping as SkorchEarlyStopping
from skorch.dataset import Dataset

from ._adam import FlatAdam
from ._fused import FusedTrainer, Unsupported

__all__ = []


class _StopTraining(Exception):
    """Raised by :class:`EarlyStopping` to end the fit loop."""


class TensorDataset(Dataset):
    """Inputs, targets and optional sample weights held as whole tensors, batched by slicing.

    With weights ``w`` (a float tensor of shape ``(n_samples, 1)``, mean 1), a
    batch's target is the pair ``(y, w)``: :meth:`Net.get_loss` then takes the
    batch mean of ``w_i * loss_i``. A skorch ``Dataset`` (whose ``__init__``
    it replaces), so that skorch's scoring callbacks without caching
    (``EpochScoring(..., use_caching=False)``) read its ``X`` and ``y``.
    """

    def __init__(self, X, y, w=None):  # skorch's Dataset.__init__ is not called
        self.X = X
        self.y = y
        self.w = w

    def __len__(self):
        return len(self.X)

    def __getitem__(self, index):
        if self.w is None:
            return self.X[index], self.y[index]
        return self.X[index], (self.y[index], self.w[index])


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
        X, y, w = self.dataset.X, self.dataset.y, self.dataset.w
        if self.shuffle:
            order = torch.randperm(len(X), generator=self.generator).to(X.device)
            X, y = X[order], y[order]
            w = None if w is None else w[order]
        for start in range(0, len(X), self.batch_size):
            stop = start + self.batch_size
            if y is None:  # inference (net_.predict, forward): no target
                yield X[start:stop], None
            elif w is None:
                yield X[start:stop], y[start:stop]
            else:
                yield X[start:stop], (y[start:stop], w[start:stop])

    def __len__(self):
        return (len(self.dataset) + self.batch_size - 1) // self.batch_size


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
    #: (which lets :class:`Net` run the fused training epoch).
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


#: Validation scores (accuracies, R^2) closer than this count as equal in :class:`EarlyStopping`.
SCORE_TOLERANCE = 1e-4


def improves(score, loss, best_score, best_loss, lower_is_better=False, tolerance=0.0):
    """Whether ``(score, loss)`` beats the best so far (:class:`EarlyStopping`, the wide head):
    a better score beyond ``tolerance``, else a lower loss (an unknown one, None, ties)."""
    if abs(score - best_score) > tolerance:
        return score < best_score if lower_is_better else score > best_score
    return loss is not None and best_loss is not None and loss < best_loss


class EarlyStopping(Callback):
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
            raise _StopTraining

    def on_train_end(self, net, **kwargs):
        if self.best_state_ is not None:
            net.module_.load_state_dict(self.best_state_)
        # The fitted net keeps one copy of the weights and no validation data (which a
        # callable start_score holds).
        self.best_state_ = None
        if callable(self.start_score):
            self.start_score = None


def weighted_loss(criterion, y_pred, y_true, weight):
    """Batch mean of ``weight_i * loss_i`` (``loss_i``: ``criterion``'s mean over outputs)."""
    per_sample = type(criterion)(reduction="none")(y_pred, y_true)
    return (per_sample.reshape(len(y_pred), -1).mean(1) * weight.reshape(-1)).mean()


_BATCH_EVENTS = ("on_batch_begin", "on_batch_end", "on_grad_computed")

#: Callbacks sknd adds itself (a user's callback may not take their names).
OWN_CALLBACKS = ("epoch_timer", "print_log", "finite_training", "valid_score", "early_stopping")


def _stops_training(callback):
    """Whether ``callback`` raised its ``KeyboardInterrupt`` to stop training (skorch's way)."""
    return isinstance(callback, SkorchEarlyStopping) and callback.misses_ >= callback.patience


def _wants_training_batches(callback):
    """Whether ``callback`` implements a batch-level event for training batches.

    skorch's ``LRScheduler`` stepping every epoch, ``EpochScoring`` of
    validation data (or without caching) and ``BatchScoring`` of validation
    batches implement ``on_batch_end`` but act on no training batch;
    ``PassthroughScoring(on_train=True)`` implements no batch event but
    averages the per-batch training losses, which only the plain path records.
    """
    if not getattr(callback, "wants_training_batches", True):
        return False
    if isinstance(callback, LRScheduler):
        return callback.step_every == "batch"
    if isinstance(callback, EpochScoring):
        return bool(callback.on_train and callback.use_caching)
    if isinstance(callback, (BatchScoring, PassthroughScoring)):
        return bool(callback.on_train)
    return any(
        getattr(type(callback), event, None) is not getattr(Callback, event)
        for event in _BATCH_EVENTS
    )


class Net(NeuralNet):
    """skorch ``NeuralNet`` with a lean per-batch path, ending on :class:`EarlyStopping` only.

    - Training epochs use :class:`~sknd._training._fused.FusedTrainer` when it supports
      the module, criterion and optimizer and no callback implements
      batch-level events for training batches; otherwise skorch's
      ``train_step`` (autograd, ``on_grad_computed``) runs per batch.
    - Batch events are sent only to callbacks that implement them (always for
      validation batches); losses are accumulated on the device and recorded
      once per epoch as ``train_loss``/``valid_loss`` with ``*_best`` flags.
    - skorch treats ``KeyboardInterrupt`` as "stop training and keep the
      model"; sknd lets a user's interrupt propagate so that an interrupted
      ``fit`` never leaves an estimator that looks fitted.
    - After training, the module's parameters get their own storage back
      (:meth:`FlatAdam.release`), so that the trained module is a plain one.
    """

    @property
    def _default_callbacks(self):
        # train_loss / valid_loss are recorded by run_single_epoch (skorch's
        # PassthroughScoring would need per-batch records). PrintLog formats a table row
        # every epoch even when it prints nothing (0.6 ms, 4% of a small fit): only with verbose.
        callbacks = [("epoch_timer", EpochTimer())]
        # A user's PrintLog replaces verbose's (one table, as the user set it up).
        own_log = any(
            isinstance(item[1] if isinstance(item, tuple) else item, PrintLog)
            for item in self.callbacks or []
        )
        if self.verbose and not own_log:
            callbacks.append(("print_log", PlainPrintLog()))
        return callbacks

    def notify(self, method_name, **cb_kwargs):
        """skorch's ``notify``; a stop at ``on_epoch_end`` waits until every callback saw it.

        A callback that stops training (sknd's :class:`EarlyStopping`, skorch's
        ``EarlyStopping`` by its ``KeyboardInterrupt``) ends the loop once the
        callbacks after it have handled the epoch too (``Checkpoint``, scores,
        the printed log). Any other exception propagates at once.
        """
        if method_name != "on_epoch_end":
            return super().notify(method_name, **cb_kwargs)
        self.on_epoch_end(self, **cb_kwargs)
        stop = False
        for _, callback in self.callbacks_:
            try:
                callback.on_epoch_end(self, **cb_kwargs)
            except _StopTraining:
                stop = True
            except KeyboardInterrupt:
                if not _stops_training(callback):
                    raise
                stop = True
        if stop:
            raise _StopTraining

    def initialize_callbacks(self):
        super().initialize_callbacks()
        self.training_batch_listeners_ = [
            cb for _, cb in self.callbacks_ if _wants_training_batches(cb)
        ]
        # A user's callbacks may read skorch's per-batch records (Checkpoint reads the
        # last one): the fused epoch then writes one per batch, with its size.
        self.batch_records_ = any(name not in OWN_CALLBACKS for name, _ in self.callbacks_)
        return self

    def get_dataset(self, X, y=None):
        """A :class:`TensorDataset` of float32 rows (``y`` may be None), as training uses.

        So that the fitted net (``net_``) infers on new data: ``predict``,
        ``predict_proba``, ``forward`` take arrays of band rows.
        """
        if isinstance(X, TensorDataset):
            return X
        if not isinstance(X, torch.Tensor):
            X = torch.as_tensor(np.asarray(X, dtype=np.float32))
        X = X.to(dtype=torch.float32)
        return TensorDataset(X, None if y is None else torch.as_tensor(np.asarray(y)))

    def _outputs(self, X):
        """The raw outputs of ``X`` as a numpy array, detached: during training, a scoring
        callback's cached predictions of training batches (``EpochScoring(on_train=True)``,
        ``BatchScoring``) come from the training step and carry its graph."""
        return self.forward(X, training=False, device="cpu").detach().numpy()

    def predict_proba(self, X):
        """Class probabilities as the estimator's ``predict_proba`` gives them.

        For a regression network (no probabilities), the raw outputs.
        """
        output = self._outputs(X)
        task = getattr(self, "task_", None)
        return task.proba(output) if hasattr(task, "proba") else output

    def predict(self, X):
        """Predictions as the estimator's ``predict`` gives them: class labels, or
        targets on their original scale."""
        output = self._outputs(X)
        task = getattr(self, "task_", None)
        return output if task is None else task.decode(output)

    def score(self, X, y, sample_weight=None):
        """The estimator's ``score`` of ``y`` as it takes them (labels, targets on their
        scale): accuracy of :meth:`predict` for a classifier's network, R^2 otherwise."""
        metric = accuracy_score if hasattr(getattr(self, "task_", None), "proba") else r2_score
        return float(metric(y, self.predict(X), sample_weight=sample_weight))

    def get_loss(self, y_pred, y_true, X=None, training=False):
        """skorch's loss; for weighted targets ``(y, w)`` the batch mean of ``w_i * loss_i``.

        The weights have mean 1 over the data set: a full batch then minimises
        ``sum(w_i loss_i) / sum(w_i)``, the loss of the data with each sample
        repeated ``w_i`` times, and mini-batches follow it without bias. The
        fused step (:mod:`sknd._training._fused`) computes the same gradients.
        """
        if not isinstance(y_true, (tuple, list)):
            return super().get_loss(y_pred, y_true, X=X, training=training)
        return weighted_loss(self.criterion_, y_pred, *y_true)

    def on_train_begin(self, net, X=None, y=None, **kwargs):
        self.best_losses_ = {}
        self.fused_failed_ = False

    def _fused_trainer(self, iterator):
        """The fused trainer for this epoch, or None to use skorch's train_step."""
        if self.training_batch_listeners_ or not isinstance(iterator, TensorBatches):
            return None
        if self.fused_failed_:
            return None
        cached = getattr(self, "fused_trainer_", None)
        if cached is not None and cached.is_current(
            self.module_, self.criterion_, self.optimizer_, iterator.batch_size
        ):
            return cached
        trainer = FusedTrainer.build(
            self.module_, self.criterion_, self.optimizer_, iterator.batch_size
        )
        self.fused_trainer_ = trainer
        return trainer

    def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
        if iterator is None:
            return
        if training and not fit_params:
            trainer = self._fused_trainer(iterator)
            if trainer is not None:
                self._set_training(True)
                try:
                    total, n_samples, n_batches = trainer.run_epoch(iterator)
                except Unsupported:  # e.g. data of another dtype than the module
                    self.fused_trainer_ = None
                    self.fused_failed_ = True
                else:
                    # What torch's LR schedulers check for (they warn otherwise): the
                    # optimizer stepped, through FlatAdam's fused update.
                    self.optimizer_._opt_called = True
                    if self.batch_records_:
                        for start in range(0, n_samples, iterator.batch_size):
                            self.history.new_batch()
                            size = min(iterator.batch_size, n_samples - start)
                            self.history.record_batch(prefix + "_batch_size", size)
                    self._record_epoch_loss(prefix, total, n_samples, n_batches)
                    return
        notify = not training or bool(self.training_batch_listeners_)
        total = None
        n_samples = n_batches = 0
        for batch in iterator:
            if notify:
                self.notify("on_batch_begin", batch=batch, training=training)
            step = step_fn(batch, **fit_params)
            size = len(batch[0])
            weighted = step["loss"].detach() * size
            total = weighted if total is None else total.add_(weighted)
            n_samples += size
            n_batches += 1
            if notify:
                # skorch's per-batch records, which its batch-level callbacks read.
                self.history.record_batch(prefix + "_loss", step["loss"].item())
                self.history.record_batch(prefix + "_batch_size", size)
                self.notify("on_batch_end", batch=batch, training=training, **step)
        self._record_epoch_loss(prefix, total, n_samples, n_batches)

    def _record_epoch_loss(self, prefix, total, n_samples, n_batches):
        """Record the epoch's mean loss (one device sync) and whether it is the best so far."""
        if n_batches:
            key = prefix + "_loss"
            loss = total.item() / n_samples
            best = self.best_losses_.get(key)
            self.history.record(key, loss)
            self.history.record(key + "_best", best is None or loss < best)
            if best is None or loss < best:
                self.best_losses_[key] = loss
        self.history.record(prefix + "_batch_count", n_batches)

    def _refuse_once_trained(self, call):
        """Refuse ``call`` on a net that has trained: it is then an estimator's ``net_``.

        Its ``module_`` is the estimator's, which ``predict`` runs: training or
        loading weights into it would change the model behind the attributes
        read from it at fit (``coef_a_``, ``indices_``, ``history_``).
        """
        if getattr(self, "trained_", False):
            raise RuntimeError(
                f"net_.{call} refused: this skorch net is a fitted sknd estimator's net_, "
                "whose module_ is the network the estimator's predict runs, so it would change "
                "the model behind the estimator's fitted attributes (coef_a_, indices_, "
                "history_). Nothing was changed. Train the estimator instead "
                "(estimator.partial_fit(X, y), or fit with warm_start=True), or fine-tune a "
                "standalone copy of the network, estimator.to_torch()."
            )

    def initialize(self):
        self._refuse_once_trained("initialize()")
        return super().initialize()

    def fit(self, X, y=None, **fit_params):
        self._refuse_once_trained("fit()")
        return super().fit(X, y, **fit_params)

    def load_params(self, *args, **kwargs):
        self._refuse_once_trained("load_params()")
        return super().load_params(*args, **kwargs)

    def partial_fit(self, X, y=None, classes=None, **fit_params):
        self._refuse_once_trained("partial_fit()")
        if not self.initialized_:
            self.initialize()
        fit_params.pop("_routing_method", None)
        self.notify("on_train_begin", X=X, y=y)
        try:
            self.fit_loop(X, y, **fit_params)
        except _StopTraining:
            pass
        self.notify("on_train_end", X=X, y=y)
        if isinstance(self.optimizer_, FlatAdam):
            self.optimizer_.release()
        # The fitted estimator keeps this net (net_): without the training data, and
        # refusing to train again (see _refuse_once_trained).
        self.fused_trainer_ = None
        self.train_split = None
        self.trained_ = True
        return self

    # Plain pickling: net_.module_ stays the module the estimator holds. (skorch pickles
    # modules apart, for GPU nets; the estimators copy a GPU model to the CPU as a whole.)
    def __getstate__(self):
        return self.__dict__.copy()

    def __setstate__(self, state):
        self.__dict__.update(state)


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
