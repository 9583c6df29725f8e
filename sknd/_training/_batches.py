"""Training rows as whole tensors, batched by slicing, and the loss of weighted batches.

At batch 32 a torch ``DataLoader``'s ``Dataset.__getitem__`` + collate path costs more
than the training step itself; :class:`TensorBatches` slices whole tensors instead, on
the device they are on. With sample weights a batch's target is the pair ``(y, w)``, and
its loss is :func:`weighted_loss`, whose gradients the fused step
(:mod:`sknd._training._fused`) computes too.
"""

import torch
from skorch.dataset import Dataset

__all__ = []


class TensorDataset(Dataset):
    """Inputs, targets and optional sample weights held as whole tensors, batched by slicing.

    With weights ``w`` (a float tensor of shape ``(n_samples, 1)``, mean 1), a
    batch's target is the pair ``(y, w)``: :meth:`~sknd._training._net.Net.get_loss` then takes the
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


def weighted_loss(criterion, y_pred, y_true, weight):
    """Batch mean of ``weight_i * loss_i`` (``loss_i``: ``criterion``'s mean over outputs)."""
    per_sample = type(criterion)(reduction="none")(y_pred, y_true)
    return (per_sample.reshape(len(y_pred), -1).mean(1) * weight.reshape(-1)).mean()
