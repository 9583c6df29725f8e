"""Fused training step: a hand-written forward and backward of sknd networks.

At the batch sizes of spectral data (32 samples, a few dozen features) a
training step costs per-operation overhead, not arithmetic: autograd, a Python
``autograd.Function`` and ``torch.optim.Adam`` each add tens of microseconds to
a step whose arithmetic takes a few (benchmarks/RESULTS.md). This module
removes that overhead for the networks sknd builds, without changing what is
computed: :class:`FusedTrainer` runs a training epoch of a network described
by :func:`sknd.networks.describe` (the ND layer, the AttND block or the raw
passthrough first, then ``Linear``/``ReLU`` layers) with a BCE-with-logits,
cross-entropy or MSE loss and :class:`~sknd._training._adam.FlatAdam`: forward and
closed-form backward written with preallocated gradient views and no autograd
graph, the same gradients autograd computes (tests/nd/test_networks.py compares
them for every architecture). Any other network or loss is left to skorch's
autograd step.
"""

import functools

import torch
import torch.nn.functional as F
from torch import nn

from .._nd._formula import FUSED_MATMUL_MIN_BATCH, SOFTPLUS_THRESHOLD
from .._nd._torch import (
    gather_backward,
    gather_forward,
    layer_input,
    matmul_backward,
    matmul_forward,
    matmul_weight,
)
from ..networks import describe
from ._adam import FlatAdam
from ._graph_epochs import GraphEpochs

__all__ = []


# ---------------------------------------------------------------------- blocks
# Each block runs forward on a batch, keeps what its backward needs, and in
# backward writes its parameter gradients into the (flat) gradient views and
# returns the gradient of its input (None for the first block).

# aten's own backward kernels (present in every supported torch, >= 2.2): one pass each.
_threshold_backward = torch.ops.aten.threshold_backward
_softplus_backward = torch.ops.aten.softplus_backward.grad_input


class _LinearBlock:
    """``Linear``, optionally followed by ``ReLU``."""

    def __init__(self, linear, relu, first):
        self.weight = linear.weight
        self.bias = linear.bias
        self.weight_t = linear.weight.t()  # a view: follows in-place updates
        self.relu = relu
        self.first = first

    def prepare(self, X):
        return X

    def forward(self, x):
        self.x = x
        if self.bias is None:
            z = torch.mm(x, self.weight_t)
        else:
            z = torch.addmm(self.bias, x, self.weight_t)
        if self.relu:
            z.relu_()
        self.z = z
        return z

    def backward(self, grad):
        if self.relu:
            grad = _threshold_backward(grad, self.z, 0)
        torch.mm(grad.t(), self.x, out=self.weight.grad)
        if self.bias is not None:
            torch.sum(grad, 0, out=self.bias.grad)
        if self.first:
            return None
        return torch.mm(grad, self.weight)


def _pair_views(a, c):
    """One tensor over ``a`` and ``c`` if ``c`` directly follows ``a`` in memory, else None."""
    if a.dim() != 1 or c.dim() != 1 or a.stride(0) != 1 or c.stride(0) != 1:
        return None
    if a.untyped_storage().data_ptr() != c.untyped_storage().data_ptr():
        return None
    if c.storage_offset() != a.storage_offset() + a.numel():
        return None
    return a.as_strided((a.numel() + c.numel(),), (1,), a.storage_offset())


class _NDBlock:
    """The ND layer as first block (no input gradient)."""

    def __init__(self, layer, batch_size):
        self.layer = layer
        self.plan = layer.pair_plan(layer.a.dtype, layer.a.device)
        method = self.plan.choose(layer.method)
        if layer.method == "auto" and batch_size < FUSED_MATMUL_MIN_BATCH:
            # At small batches both forms cost their operation count, and gathering has fewer.
            method = "gather"
        self.method = method
        self.ac = _pair_views(layer.a.data, layer.c.data)
        self.grad_ac = _pair_views(layer.a.grad, layer.c.grad)
        if self.ac is None or self.grad_ac is None:
            raise Unsupported("a and c are not adjacent in memory")
        self.h = {}

    def prepare(self, X):
        return layer_input(X, self.layer.variant, self.layer.epsilon)

    def forward(self, u):
        plan = self.plan
        self.u = u
        if self.method == "matmul":
            p = plan.n_pairs
            self.weight = matmul_weight(F.softplus(self.ac[:p]), F.softplus(self.ac[p:]), plan)
            self.out, self.den = matmul_forward(u, self.weight, plan)
        else:
            self.wk = plan.gather_weights(F.softplus(self.ac))
            self.out, self.den, self.gathered = gather_forward(u, self.wk, plan, True)
        return self.out

    def backward(self, grad):
        if self.method == "matmul":
            grad_w2, _ = matmul_backward(
                grad, self.out, self.den, self.u, self.weight, self.plan, False
            )
        else:
            n = len(grad)
            h = self.h.get(n)
            if h is None:
                h = self.h[n] = torch.empty(
                    n, len(self.plan.gather_index), dtype=grad.dtype, device=grad.device
                )
            grad_w2, _ = gather_backward(
                grad, self.out, self.den, self.gathered, self.wk, self.plan, False, h
            )
        # d softplus(a) / da = sigmoid(a), as autograd's softplus backward computes it (one call).
        _softplus_backward(grad_w2, self.ac, 1, SOFTPLUS_THRESHOLD, grad_input=self.grad_ac)


class _AttentionNDBlock:
    """``N(u) * sigmoid(x @ W.T + b)`` as first block (no input gradient)."""

    def __init__(self, block, batch_size):
        self.nd = _NDBlock(block.nd, batch_size)
        self.gate = _LinearBlock(block.gate, relu=False, first=True)
        self.n_features = block.nd.n_features
        self.same_input = block.nd.variant == "reflectance"

    def prepare(self, X):
        if self.same_input:
            return X
        return torch.cat([X, self.nd.prepare(X)], 1)

    def forward(self, xu):
        if self.same_input:
            x = u = xu
        else:
            x, u = xu.split_with_sizes([self.n_features, xu.shape[1] - self.n_features], 1)
        values = self.nd.forward(u)
        self.s = self.gate.forward(x).sigmoid_()
        return values * self.s

    def backward(self, grad):
        d_nd = grad * self.s
        # d sigmoid(z) / dz = s (1 - s); uses the ND outputs before the ND backward overwrites them.
        d_gate = grad.mul_(self.nd.out).mul_(torch.addcmul(self.s, self.s, self.s, value=-1))
        self.gate.backward(d_gate)
        self.nd.backward(d_nd)


class _PassthroughBlock:
    """A first block followed by the standardized raw bands (``RawPassthrough``).

    The standardized bands are constants of the data: computed once per dataset
    in :meth:`prepare` (the same float32 operations as the module's forward).
    """

    def __init__(self, record, batch_size):
        inner = _blocks(record.inner, batch_size)
        if len(inner) != 1:
            raise Unsupported("a passthrough block around several layers")
        self.first = inner[0]
        self.mean = record.module.mean
        self.scale = record.module.scale

    def prepare(self, X):
        inner = self.first.prepare(X)
        self.sizes = [inner.shape[1], X.shape[1]]
        return torch.cat([inner, (X - self.mean) / self.scale], 1)

    def forward(self, x):
        inner, raw = x.split_with_sizes(self.sizes, 1)
        out = self.first.forward(inner)
        self.width = out.shape[1]
        return torch.cat([out, raw], 1)

    def backward(self, grad):
        self.first.backward(grad[:, : self.width])


class _StandardizeBlock:
    """``(x - mean) / scale`` with fixed statistics (``Standardize``)."""

    def __init__(self, record):
        self.mean = record.module.mean
        self.scale = record.module.scale

    def forward(self, x):
        # A new tensor: the block before may keep its output for its backward pass.
        return torch.sub(x, self.mean).div_(self.scale)

    def backward(self, grad):
        return grad.div_(self.scale)


#: The fused block of each kind of first layer (see sknd.networks.describe); "linear"
#: (the MLP's first layer) and the layers after the first are _LinearBlock.
_FIRST_BLOCKS = {
    "nd": lambda record, batch_size: _NDBlock(record.module, batch_size),
    "attnd": lambda record, batch_size: _AttentionNDBlock(record.module, batch_size),
    "passthrough": _PassthroughBlock,
}


def _blocks(records, batch_size):
    """Fused blocks for layer records, or raise :class:`Unsupported`."""
    blocks = []
    position = 0
    while position < len(records):
        record = records[position]
        first = not blocks
        if record.kind == "linear":
            relu = position + 1 < len(records) and records[position + 1].kind == "relu"
            blocks.append(_LinearBlock(record.module, relu=relu, first=first))
            position += relu
        elif record.kind == "standardize" and not first:
            blocks.append(_StandardizeBlock(record))
        elif first and record.kind in _FIRST_BLOCKS:
            blocks.append(_FIRST_BLOCKS[record.kind](record, batch_size))
        else:
            where = "first layer" if first else "layer after the first"
            raise Unsupported(f"{record.kind!r} as {where}")
        position += 1
    return blocks


class Unsupported(Exception):
    """The network or loss has a part the fused step does not implement."""


# ---------------------------------------------------------------------- losses
# ``targets(y)`` precomputes per-sample target columns once per dataset;
# ``grad(z, aux, terms)`` writes per-sample loss terms into ``terms`` (a slice of
# an epoch buffer) and returns dL/dz of the batch-mean loss; ``epoch_total(terms)``
# sums the per-sample losses of the epoch (skorch's batch-size weighted mean
# times the number of samples) and ``sample_losses(terms)`` returns them one by one.
# Sample weights scale the rows of dL/dz and the per-sample losses (FusedTrainer).


class _BinaryCrossEntropy:
    """BCE with logits on one output: with ``s = 1 - 2 t``, the loss is ``softplus(s z)``."""

    n_columns = 1

    def __init__(self, batch_size):
        self.batch_size = batch_size

    def targets(self, y):
        s = 1 - 2 * y.reshape(-1, 1)
        return torch.cat([s, s / self.batch_size], 1)

    def grad(self, z, aux, terms):
        s, s_over_batch = aux.split_with_sizes([1, 1], 1)
        u = torch.mul(z, s, out=terms)
        # d softplus(s z) / dz = s sigmoid(s z); s / batch_size is precomputed.
        grad = torch.sigmoid(u).mul_(s_over_batch)
        if len(z) != self.batch_size:  # the last, shorter batch
            grad.mul_(self.batch_size / len(z))
        return grad

    def epoch_total(self, terms):
        return F.softplus(terms).sum()

    def sample_losses(self, terms):
        return F.softplus(terms[:, 0])


class _CrossEntropy:
    """Softmax cross-entropy; targets as one-hot rows."""

    def __init__(self, n_classes):
        self.n_columns = n_classes

    def targets(self, y):
        return F.one_hot(y.long(), self.n_columns)

    def grad(self, z, onehot, terms):
        log_p = torch.log_softmax(z, 1)
        torch.mul(log_p, onehot, out=terms)
        return log_p.exp_().sub_(onehot).mul_(1 / len(z))

    def epoch_total(self, terms):
        return -terms.sum()

    def sample_losses(self, terms):
        return -terms.sum(1)


class _MeanSquaredError:
    """Mean squared error over samples and outputs."""

    def __init__(self, n_outputs):
        self.n_columns = n_outputs

    def targets(self, y):
        return y.reshape(len(y), -1)

    def grad(self, z, target, terms):
        residual = torch.sub(z, target, out=terms)
        return residual * (2 / residual.numel())

    def epoch_total(self, terms):
        return terms.pow(2).sum() / self.n_columns

    def sample_losses(self, terms):
        return terms.pow(2).mean(1)


def _loss_for(criterion, n_outputs, batch_size):
    kind = type(criterion)
    if getattr(criterion, "reduction", None) != "mean":
        raise Unsupported("loss reduction")
    if kind is nn.BCEWithLogitsLoss and n_outputs == 1:
        if criterion.weight is not None or criterion.pos_weight is not None:
            raise Unsupported("weighted BCE")
        return _BinaryCrossEntropy(batch_size)
    if kind is nn.CrossEntropyLoss:
        if criterion.weight is not None or criterion.label_smoothing:
            raise Unsupported("weighted or smoothed cross-entropy")
        return _CrossEntropy(n_outputs)
    if kind is nn.MSELoss:
        return _MeanSquaredError(n_outputs)
    raise Unsupported(f"loss {kind.__name__}")


def _blocks_for(module, batch_size):
    """Fused blocks of a whole network and its number of outputs, or raise :class:`Unsupported`."""
    records = describe(module)
    if records is None:
        raise Unsupported("a network sknd.networks.describe does not know")
    blocks = _blocks(records, batch_size)
    last = blocks[-1]
    if not isinstance(last, _LinearBlock) or last.relu:
        raise Unsupported("the network must end with a linear layer")
    return blocks, last.weight.shape[0]


class FusedTrainer:
    """Training epochs of an sknd network with a hand-written forward and backward.

    Built by :meth:`build` for a module, criterion and :class:`FlatAdam`
    optimizer; :meth:`run_epoch` replaces skorch's per-batch loop for one
    epoch over a :class:`~sknd._training._batches.TensorBatches` iterator, drawing the
    same shuffles from its generator.
    """

    def __init__(self, module, criterion, optimizer, batch_size):
        if not isinstance(optimizer, FlatAdam):
            raise Unsupported("optimizer is not FlatAdam")
        buffers = optimizer.flat_buffers()
        params = list(module.parameters())
        group_params = [p for group in optimizer.param_groups for p in group["params"]]
        if {id(p) for p in params} != {id(p) for p in group_params} or len(buffers) != 1:
            raise Unsupported("optimizer does not hold exactly the module's parameters")
        if any(p.grad is None or p.dtype != params[0].dtype for p in params):
            raise Unsupported("parameters of several dtypes")
        self.blocks, n_outputs = _blocks_for(module, batch_size)
        self.loss = _loss_for(criterion, n_outputs, batch_size)
        self.module = module
        self.criterion = criterion
        self.optimizer = optimizer
        self.buffers = buffers  # the layout the blocks' views were taken from
        self.batch_size = batch_size
        self.dtype = params[0].dtype
        self.device = params[0].device
        self._data = None
        #: Whether epochs run as segments (:mod:`sknd._training._graph_epochs`), and whether those
        #: are captured as CUDA graphs: on a GPU, where launching each kernel costs more than it
        #: computes. The step-by-step epoch is cheaper on the CPU.
        self.segmented = self.capture = self.device.type == "cuda"

    @classmethod
    def build(cls, module, criterion, optimizer, batch_size):
        """A trainer, or None when some part of the setup is not supported."""
        try:
            return cls(module, criterion, optimizer, batch_size)
        except Unsupported:
            return None

    def is_current(self, module, criterion, optimizer, batch_size):
        """Whether this trainer still describes the net's parts and memory layout."""
        if module is not self.module or criterion is not self.criterion:
            return False
        if optimizer is not self.optimizer or batch_size != self.batch_size:
            return False
        # Packing may have moved the parameters: the blocks hold views of them.
        return self.optimizer.flat_buffers() is self.buffers

    def _prepare(self, dataset):
        """Per-dataset inputs of the first block, target columns and loss buffer, cached.

        With sample weights (``dataset.w``) the last target column holds them.
        """
        if self._data is not None and self._data[0] is dataset:
            return self._data[1:]
        X = dataset.X
        if X.dtype != self.dtype or X.device != self.device:
            raise Unsupported("data and parameters differ in dtype or device")
        prepared = self.blocks[0].prepare(X)
        aux = self.loss.targets(dataset.y).to(self.dtype)
        if dataset.w is not None:
            aux = torch.cat([aux, dataset.w.to(self.dtype).reshape(-1, 1)], 1)
        terms = torch.empty(len(X), self.loss.n_columns, dtype=self.dtype, device=self.device)
        self._data = (dataset, prepared, aux, terms)
        return prepared, aux, terms

    def _shuffled(self, prepared, aux, order):
        """``prepared[order], aux[order]``, written into buffers kept from epoch to epoch.

        Fresh copies of a large data set every epoch each cost their page faults (memory
        blocks this large go back to the system when freed; benchmarks/RESULTS.md, "Large
        batches", and "Figures moved out of the code").
        """
        buffers = getattr(self, "_shuffle_buffers", None)
        if buffers is None or buffers[0].shape != prepared.shape or buffers[1].shape != aux.shape:
            buffers = (torch.empty_like(prepared), torch.empty_like(aux))
            self._shuffle_buffers = buffers
        torch.index_select(prepared, 0, order, out=buffers[0])
        torch.index_select(aux, 0, order, out=buffers[1])
        return buffers

    def forward_backward(self, x, aux, terms, weighted=False):
        """Gradients of the batch-mean loss into the parameters' ``.grad`` views.

        ``weighted``: the last column of ``aux`` holds sample weights, and the
        loss is the batch mean of ``w_i * loss_i`` (as :meth:`Net.get_loss`).
        """
        for block in self.blocks:
            x = block.forward(x)
        if weighted:
            grad = self.loss.grad(x, aux[:, :-1], terms).mul_(aux[:, -1:])
        else:
            grad = self.loss.grad(x, aux, terms)
        for block in reversed(self.blocks):
            grad = block.backward(grad)

    def epoch_loss(self, terms, aux, weighted):
        """Sum of the per-sample losses held in ``terms`` (weighted by ``aux``'s last column)."""
        if weighted:
            return (self.loss.sample_losses(terms) * aux[:, -1]).sum()
        return self.loss.epoch_total(terms)

    def _graph_epochs(self, dataset, prepared, aux):
        """The :class:`~sknd._training._graph_epochs.GraphEpochs` of ``dataset``, cached."""
        cached = getattr(self, "_epochs", None)
        if cached is None or cached[0] is not dataset:
            cached = (dataset, GraphEpochs(self, prepared, aux, capture=self.capture))
            self._epochs = cached
        return cached[1]

    @torch.no_grad()
    def run_epoch(self, iterator):
        """Train one epoch; return ``(sum of per-sample losses (tensor), n_samples, n_batches)``.

        With :attr:`segmented` (on a GPU) the epoch runs as
        :class:`~sknd._training._graph_epochs.GraphEpochs`, else step by step.
        """
        prepared, aux, terms = self._prepare(iterator.dataset)
        weighted = iterator.dataset.w is not None
        if self.segmented:
            epochs = self._graph_epochs(iterator.dataset, prepared, aux)
            return epochs.run_epoch(iterator, weighted)
        n_samples = len(prepared)
        if iterator.shuffle:
            order = torch.randperm(n_samples, generator=iterator.generator).to(self.device)
            prepared, aux = self._shuffled(prepared, aux, order)
        batch_size = self.batch_size
        forward_backward = self.forward_backward
        update = self.optimizer.packed_step
        if weighted:
            forward_backward = functools.partial(forward_backward, weighted=True)
        # Views of all batches at once: one split per epoch instead of three slices per step.
        batches = zip(prepared.split(batch_size), aux.split(batch_size), terms.split(batch_size))
        n_batches = 0
        for x, target, loss_terms in batches:
            forward_backward(x, target, loss_terms)
            update()
            n_batches += 1
        # terms are in the shuffled order of aux, whose last column holds any weights.
        return self.epoch_loss(terms, aux, weighted), n_samples, n_batches
