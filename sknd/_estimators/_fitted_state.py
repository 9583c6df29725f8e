"""The fitted attributes read from a trained network.

:class:`FittedStateMixin` keeps the trained skorch net (``net_``) and exposes its
results as numpy and pandas attributes: ``history_``, ``n_iter_``, the best epoch,
``coef_a_``/``coef_c_``, ``pairs_`` and the index and passthrough importances.
"""

from numbers import Real

import numpy as np
import pandas as pd
import torch

from ..networks import describe, rows_per_pass

__all__ = ["FittedStateMixin"]


#: What skorch and sknd's loop record every epoch besides history_'s own columns.
_SKORCH_RECORDS = (
    "batches",
    "dur",
    "train_loss_best",
    "valid_loss_best",
    "train_batch_count",
    "valid_batch_count",
)


class FittedStateMixin:
    """The fitted-state bookkeeping of :class:`~sknd._estimators._fitting.FittingMixin`.

    Uses ``_nd_layer``, ``_run_module`` and ``_set_indices`` of
    :class:`~sknd._estimators._base.BaseND`.
    """

    def _finish_fit(self):
        """Attributes derived from the trained network (subclasses add theirs)."""
        self._set_indices()

    def _set_fitted_state(self, net, task, pairs, X_train, w_train=None):
        """Expose the trained network's results as numpy/pandas attributes.

        ``net`` is kept as ``net_``; its history holds the epochs of earlier
        ``partial_fit`` calls too.
        """
        module = net.module_.eval()
        columns = ["epoch", "train_loss", "valid_loss", "valid_score"]
        # Then the numbers a user's callbacks record each epoch (event_lr, scores).
        columns += [
            key
            for key in dict.fromkeys(key for row in net.history for key in row)
            if key not in _SKORCH_RECORDS
            and key not in columns
            and all(isinstance(row.get(key, 0.0), Real) for row in net.history)
        ]
        history = pd.DataFrame(
            {key: [row.get(key, np.nan) for row in net.history] for key in columns}
        )
        self.net_ = net
        self._module = module
        self._task = task
        self.n_outputs_ = task.n_outputs
        self.history_ = history
        self.n_iter_ = len(history)
        self.loss_curve_ = history["train_loss"].tolist()
        self.validation_scores_ = history["valid_score"].tolist()
        stopper = dict(net.callbacks_).get("early_stopping")
        if stopper is not None and stopper.best_epoch_ is not None:
            self.best_epoch_ = stopper.best_epoch_
            self.best_validation_score_ = float(stopper.best_score_)
        else:
            self.best_epoch_ = None
            self.best_validation_score_ = (
                None if history["valid_score"].isna().all() else float(history["valid_score"].max())
            )
        self.n_parameters_ = int(sum(p.numel() for p in module.parameters() if p.requires_grad))

        layer = self._nd_layer()
        importances = (
            self._index_importances(X_train, w_train)
            if layer is not None or self.passthrough
            else np.empty(0)
        )
        if self.passthrough:
            # The passthrough block appends the raw bands after the first block's outputs.
            n_features = X_train.shape[1]
            self.passthrough_importances_ = importances[-n_features:]
            importances = importances[:-n_features]
        else:
            self.passthrough_importances_ = np.empty(0)
        if layer is None:
            self.pairs_ = np.empty((0, 2), dtype=np.int64)
            self.coef_a_ = np.empty(0)
            self.coef_c_ = np.empty(0)
            self.index_importances_ = np.empty(0)
        else:
            self.pairs_ = pairs
            self.coef_a_ = layer.a.detach().cpu().double().numpy()
            self.coef_c_ = layer.c.detach().cpu().double().numpy()
            self.index_importances_ = importances

    def _index_importances(self, X, sample_weight=None):
        """Outgoing-weight norm of each first-block output times its spread on ``X``.

        An index that varies little on the data, or whose value the next layer
        ignores, cannot drive the prediction; the product ranks indices by how
        much they can move the next layer's pre-activations. The spread is that
        of what the next dense layer sees (the standardized outputs under the
        default recipe), weighted by ``sample_weight``.
        """
        records = describe(self._module)
        dense = next(i for i, layer in enumerate(records) if i > 0 and layer.kind == "linear")
        before = torch.nn.Sequential(*(layer.module for layer in records[:dense]))
        weight = records[dense].module.weight.detach().cpu().double().numpy()
        # The weighted variance, slab by slab (the outputs of millions of rows need not be
        # held at once), of the outputs shifted by the first slab's mean (no cancellation).
        slab = rows_per_pass(self._module)
        shift = total = first = second = 0.0
        for start in range(0, len(X), slab):
            features = self._run_module(X[start : start + slab], before)
            w = (
                np.ones(len(features))
                if sample_weight is None
                else sample_weight[start : start + slab]
            )
            if start == 0:
                shift = np.average(features, axis=0, weights=w if w.any() else None)
            features -= shift
            total += w.sum()
            first = first + w @ features
            second = second + w @ (features * features)
        mean = first / total
        spread = np.sqrt(np.maximum(second / total - mean * mean, 0.0))
        return np.linalg.norm(weight, axis=0) * spread
