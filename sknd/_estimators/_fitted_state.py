"""The fitted attributes read from a trained network.

:func:`fitted_attributes` reads the results of the trained skorch net as numpy and pandas
attributes: ``history_``, ``n_iter_``, the best epoch, ``coef_a_``/``coef_c_``,
``pairs_`` and the index and passthrough importances. The estimators set them
(:meth:`~sknd._estimators._base.BaseND._set_fitted_state`).
"""

from numbers import Real

import numpy as np
import pandas as pd
import torch

from ..networks import describe, first_nd_layer, forward_rows, rows_per_pass

__all__ = ["fitted_attributes"]


#: What skorch and sknd's loop record every epoch besides history_'s own columns.
_SKORCH_RECORDS = (
    "batches",
    "dur",
    "train_loss_best",
    "valid_loss_best",
    "train_batch_count",
    "valid_batch_count",
)


def _history(net):
    """``history_``: the epochs of ``net`` as a DataFrame, with the numbers a user's
    callbacks record each epoch (event_lr, scores) after sknd's columns."""
    columns = ["epoch", "train_loss", "valid_loss", "valid_score"]
    columns += [
        key
        for key in dict.fromkeys(key for row in net.history for key in row)
        if key not in _SKORCH_RECORDS
        and key not in columns
        and all(isinstance(row.get(key, 0.0), Real) for row in net.history)
    ]
    return pd.DataFrame({key: [row.get(key, np.nan) for row in net.history] for key in columns})


def fitted_attributes(net, pairs, train, passthrough, device):
    """The trained network's results as the fitted attributes, a dict by name.

    ``net`` is the trained skorch net (its history holds the epochs of earlier
    ``partial_fit`` calls too), ``pairs`` its screened pairs, ``train`` the training
    :class:`~sknd._data._parts.Part` the importances are measured on, ``device`` the
    inference device they are computed on.
    """
    module = net.module_.eval()
    history = _history(net)
    fitted = {
        "history_": history,
        "n_iter_": len(history),
        "loss_curve_": history["train_loss"].tolist(),
        "validation_scores_": history["valid_score"].tolist(),
    }
    stopper = dict(net.callbacks_).get("early_stopping")
    if stopper is not None and stopper.best_epoch_ is not None:
        fitted["best_epoch_"] = stopper.best_epoch_
        fitted["best_validation_score_"] = float(stopper.best_score_)
    else:
        fitted["best_epoch_"] = None
        fitted["best_validation_score_"] = (
            None if history["valid_score"].isna().all() else float(history["valid_score"].max())
        )
    fitted["n_parameters_"] = int(sum(p.numel() for p in module.parameters() if p.requires_grad))
    layer = first_nd_layer(module)
    importances = (
        index_importances(module, train.X, train.weight, device)
        if layer is not None or passthrough
        else np.empty(0)
    )
    if passthrough:
        # The passthrough block appends the raw bands after the first block's outputs.
        n_features = train.X.shape[1]
        fitted["passthrough_importances_"] = importances[-n_features:]
        importances = importances[:-n_features]
    else:
        fitted["passthrough_importances_"] = np.empty(0)
    if layer is None:
        fitted["pairs_"] = np.empty((0, 2), dtype=np.int64)
        fitted["coef_a_"] = np.empty(0)
        fitted["coef_c_"] = np.empty(0)
        fitted["index_importances_"] = np.empty(0)
    else:
        fitted["pairs_"] = pairs
        fitted["coef_a_"] = layer.a.detach().cpu().double().numpy()
        fitted["coef_c_"] = layer.c.detach().cpu().double().numpy()
        fitted["index_importances_"] = importances
    return fitted


def index_importances(module, X, sample_weight, device):
    """Outgoing-weight norm of each first-block output of ``module`` times its spread on
    ``X``, computed on ``device``.

    An index that varies little on the data, or whose value the next layer
    ignores, cannot drive the prediction; the product ranks indices by how
    much they can move the next layer's pre-activations. The spread is that
    of what the next dense layer sees (the standardized outputs under the
    default recipe), weighted by ``sample_weight``.
    """
    records = describe(module)
    dense = next(i for i, layer in enumerate(records) if i > 0 and layer.kind == "linear")
    before = torch.nn.Sequential(*(layer.module for layer in records[:dense]))
    weight = records[dense].module.weight.detach().cpu().double().numpy()
    # The weighted variance, slab by slab (the outputs of millions of rows need not be
    # held at once), of the outputs shifted by the first slab's mean (no cancellation).
    slab = rows_per_pass(module)
    module.to(device)
    shift = total = first = second = 0.0
    for start in range(0, len(X), slab):
        features = forward_rows(before, X[start : start + slab], slab)
        w = np.ones(len(features)) if sample_weight is None else sample_weight[start : start + slab]
        if start == 0:
            shift = np.average(features, axis=0, weights=w if w.any() else None)
        features -= shift
        total += w.sum()
        first = first + w @ features
        second = second + w @ (features * features)
    mean = first / total
    spread = np.sqrt(np.maximum(second / total - mean * mean, 0.0))
    return np.linalg.norm(weight, axis=0) * spread
