"""The training loop: skorch's ``NeuralNet`` without the per-batch overhead of small networks.

skorch provides the loop, the history and the callback protocol; sknd's own callbacks are
in :mod:`sknd._training._callbacks`, the checks of a user's in
:mod:`sknd._training._user_callbacks`, and the tensor batches the loop iterates over in
:mod:`sknd._training._batches`. :class:`Net` keeps skorch's loop and removes per-batch
overhead that dominates small networks:

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
by raising one, ends training as sknd's :class:`~sknd._training._callbacks.BestEpochStopping`
does.

The events each path sends (the fused epoch, or skorch's ``train_step`` for the whole fit
when a callback acts on training batches) are tabled once, in the user guide's training
page ("Callbacks, the fitted net and its history", "Events").

Once trained, a :class:`Net` is the estimator's ``net_``: it refuses to train
again or load weights (:meth:`Net.initialize`, ``fit``, ``partial_fit``,
``load_params``), since its ``module_`` is the estimator's network.
"""

import numpy as np
import torch
from sklearn.metrics import accuracy_score, r2_score
from skorch import NeuralNet
from skorch.callbacks import (
    BatchScoring,
    Callback,
    EarlyStopping,
    EpochScoring,
    EpochTimer,
    LRScheduler,
    PassthroughScoring,
    PrintLog,
)

from ._adam import FlatAdam
from ._batches import TensorBatches, TensorDataset, weighted_loss
from ._callbacks import PlainPrintLog, StopTraining
from ._fused import FusedTrainer, Unsupported

__all__ = []


def mark_stepped(optimizer):
    """Tell torch's learning-rate schedulers that ``optimizer`` has stepped.

    A scheduler wraps ``optimizer.step`` so that each call sets the flag
    ``optimizer._opt_called``, and its first ``step()`` warns "Detected call of
    `lr_scheduler.step()` before `optimizer.step()`" while the flag is unset. The fused
    epoch updates the weights through :class:`~sknd._training._adam.FlatAdam`'s packed
    updates (``packed_step``, ``scaled_step`` in CUDA graphs), never ``optimizer.step``, so
    a user's ``LRScheduler`` callback would warn for an optimizer that did step. torch has
    no public name for the flag:
    ``tests/training/test_training.py::test_mark_stepped_silences_the_scheduler_warning`` fails when
    torch stops reading it.
    """
    optimizer._opt_called = True


_BATCH_EVENTS = ("on_batch_begin", "on_batch_end", "on_grad_computed")

#: Callbacks sknd adds itself (a user's callback may not take their names).
OWN_CALLBACKS = ("epoch_timer", "print_log", "finite_training", "valid_score", "early_stopping")


def _stops_training(callback):
    """Whether ``callback`` raised its ``KeyboardInterrupt`` to stop training (skorch's way)."""
    return isinstance(callback, EarlyStopping) and callback.misses_ >= callback.patience


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
    """skorch ``NeuralNet`` with a lean per-batch path, ended by early stopping, not interrupts.

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
        # every epoch even when it prints nothing, a share of a small fit that shows
        # (benchmarks/RESULTS.md, "Figures moved out of the code"): only with verbose.
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

        A callback that stops training (sknd's
        :class:`~sknd._training._callbacks.BestEpochStopping`, skorch's
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
            except StopTraining:
                stop = True
            except KeyboardInterrupt:
                if not _stops_training(callback):
                    raise
                stop = True
        if stop:
            raise StopTraining

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
                    mark_stepped(self.optimizer_)
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
        except StopTraining:
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
