"""Fused training step: flat Adam and a hand-written forward/backward of sknd networks.

At the batch sizes of spectral data (32 samples, a few dozen features) a
training step costs per-operation overhead, not arithmetic: autograd, a Python
``autograd.Function`` and ``torch.optim.Adam`` each add tens of microseconds to
a step whose arithmetic takes a few (benchmarks/RESULTS.md). This module
removes that overhead for the networks sknd builds, without changing what is
computed:

- :class:`FlatAdam` keeps all parameters, gradients and moments of a parameter
  group in one contiguous buffer each (the module's parameters become views of
  it), so that one Adam step is seven tensor operations whatever the number of
  parameter tensors.
- :class:`FusedTrainer` runs a training epoch of an ``nn.Sequential`` made of
  the ND layer (or the AttND block), ``Linear``/``ReLU`` layers and a
  BCE-with-logits, cross-entropy or MSE loss: forward and closed-form backward
  written with preallocated gradient views and no autograd graph, the same
  gradients autograd computes (tests/test_speed_paths.py compares them). Any
  other network or loss is left to skorch's autograd step.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from .nn import (
    NormalizedDifference,
    _gather_backward,
    _gather_forward,
    _layer_input,
    _matmul_backward,
    _matmul_forward,
    _matmul_weight,
)

__all__ = []


class FlatAdam(torch.optim.Optimizer):
    """Adam with L2 weight decay on one contiguous buffer per parameter group.

    The update is that of ``torch.optim.Adam(weight_decay=...)`` (L2 penalty
    added to the gradient, not AdamW), written as

        g <- g + weight_decay * p
        m <- lerp(m, g, 1 - beta1);   v <- beta2 v + (1 - beta2) g^2
        p <- p - lr sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + eps sqrt(1 - beta2^t))

    which equals Adam's ``p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)``
    up to rounding. Parameters, gradients and both moments of a group live in one
    buffer each and the module's parameters are views of it, so that the step is
    seven operations on one tensor instead of a loop (or ``foreach`` calls) over
    parameter tensors. Gradients stay views of the buffer: ``zero_grad`` zeroes
    them in place (``set_to_none`` is ignored), and after a step they hold the
    decayed gradient ``g + weight_decay * p``.

    Parameters
    ----------
    params : iterable of torch.nn.Parameter or dict
        Parameters (of one device and dtype per group) or parameter groups.
    lr : float, default=1e-3
    betas : tuple of float, default=(0.9, 0.999)
    eps : float, default=1e-8
    weight_decay : float, default=0

    Examples
    --------
    >>> layer = torch.nn.Linear(3, 2)
    >>> opt = FlatAdam(layer.parameters(), lr=0.1)
    >>> layer(torch.ones(1, 3)).sum().backward()
    >>> opt.step()
    >>> layer.weight.grad.shape
    torch.Size([2, 3])
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        if not lr >= 0 or not eps >= 0 or not weight_decay >= 0:
            raise ValueError("lr, eps and weight_decay must be non-negative.")
        if not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError(f"betas must be in [0, 1), got {betas!r}.")
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay}
        super().__init__(params, defaults)
        self._flat = None

    # ------------------------------------------------------------------ layout
    def _pack(self):
        """Move every group's parameters, gradients and moments into flat buffers."""
        flat = []
        for group in self.param_groups:
            params = [p for p in group["params"]]
            group.setdefault("step", 0)
            if not params:
                flat.append(None)
                continue
            devices = {(p.device, p.dtype) for p in params}
            if len(devices) > 1:
                raise ValueError("FlatAdam needs one device and dtype per parameter group.")
            values = torch.cat([p.detach().reshape(-1) for p in params])
            grads = torch.cat(
                [
                    (p.grad if p.grad is not None else torch.zeros_like(p)).detach().reshape(-1)
                    for p in params
                ]
            )
            moments = []
            for key in ("exp_avg", "exp_avg_sq"):
                moments.append(
                    torch.cat(
                        [
                            self.state[p].get(key, torch.zeros_like(p)).detach().reshape(-1)
                            for p in params
                        ]
                    )
                )
            exp_avg, exp_avg_sq = moments
            offset = 0
            for p in params:
                size = p.numel()
                span = slice(offset, offset + size)
                p.data = values[span].view_as(p)
                p.grad = grads[span].view_as(p)
                self.state[p]["exp_avg"] = exp_avg[span].view_as(p)
                self.state[p]["exp_avg_sq"] = exp_avg_sq[span].view_as(p)
                offset += size
            views = [(p, p.data, p.grad) for p in params]
            flat.append(
                {
                    "param": values,
                    "grad": grads,
                    "exp_avg": exp_avg,
                    "exp_avg_sq": exp_avg_sq,
                    "denom": torch.empty_like(values),
                    "views": views,
                }
            )
            flat[-1]["arrays"] = tuple(
                flat[-1][key] for key in ("param", "grad", "exp_avg", "exp_avg_sq", "denom")
            )
        self._flat = flat

    def _check_layout(self):
        """Re-pack if a parameter or gradient stopped being a view of the buffers."""
        if self._flat is None:
            self._pack()
            return
        for buffers in self._flat:
            if buffers is None:
                continue
            for p, data, grad in buffers["views"]:
                if p.grad is not grad:
                    if p.grad is None:
                        grad.zero_()
                    else:  # autograd or the user replaced the gradient tensor
                        grad.copy_(p.grad)
                    p.grad = grad
                if p.data_ptr() != data.data_ptr():  # p.data was reassigned (e.g. moved)
                    self._pack()
                    return

    def flat_buffers(self):
        """The flat ``param``/``grad`` buffers of each group (packing them if needed)."""
        self._check_layout()
        return self._flat

    def release(self):
        """Give every parameter and gradient its own storage again.

        The module then no longer shares one buffer (pickles and copies of it
        stay small); the next :meth:`step` packs the buffers again.
        """
        if self._flat is None:
            return
        for buffers in self._flat:
            if buffers is None:
                continue
            for p, data, grad in buffers["views"]:
                p.data = data.clone()
                if p.grad is not None:
                    p.grad = p.grad.clone()
                state = self.state[p]
                state["exp_avg"] = state["exp_avg"].clone()
                state["exp_avg_sq"] = state["exp_avg_sq"].clone()
        self._flat = None

    def add_param_group(self, param_group):
        super().add_param_group(param_group)
        self._flat = None

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self._flat = None

    # ------------------------------------------------------------------ steps
    def zero_grad(self, set_to_none=True):
        self._check_layout()
        for buffers in self._flat:
            if buffers is not None:
                buffers["grad"].zero_()

    @torch.no_grad()
    def _update(self):
        for group, buffers in zip(self.param_groups, self._flat):
            if buffers is None:
                continue
            group["step"] = step = group["step"] + 1
            beta1, beta2 = group["betas"]
            root_bias_correction2 = math.sqrt(1 - beta2**step)
            param, grad, exp_avg, exp_avg_sq, denom = buffers["arrays"]
            if group["weight_decay"]:
                grad.add_(param, alpha=group["weight_decay"])
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            torch.sqrt(exp_avg_sq, out=denom).add_(group["eps"] * root_bias_correction2)
            param.addcdiv_(
                exp_avg, denom, value=-group["lr"] * root_bias_correction2 / (1 - beta1**step)
            )

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self._check_layout()
        self._update()
        return loss


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
        self.plan = layer._plan(layer.a.dtype, layer.a.device)
        method = self.plan.choose(layer.method)
        if layer.method == "auto" and batch_size < _MATMUL_MIN_BATCH:
            # At small batches both forms cost their operation count, and gathering has fewer.
            method = "gather"
        self.method = method
        self.ac = _pair_views(layer.a.data, layer.c.data)
        self.grad_ac = _pair_views(layer.a.grad, layer.c.grad)
        if self.ac is None or self.grad_ac is None:
            raise _Unsupported("a and c are not adjacent in memory")
        self.h = {}

    def prepare(self, X):
        return _layer_input(X, self.layer.variant, self.layer.epsilon)

    def forward(self, u):
        plan = self.plan
        self.u = u
        if self.method == "matmul":
            p = plan.n_pairs
            self.weight = _matmul_weight(F.softplus(self.ac[:p]), F.softplus(self.ac[p:]), plan)
            self.out, self.den = _matmul_forward(u, self.weight, plan)
        else:
            self.wk = plan.gather_weights(F.softplus(self.ac))
            self.out, self.den, self.gathered = _gather_forward(u, self.wk, plan, True)
        return self.out

    def backward(self, grad):
        if self.method == "matmul":
            grad_w2, _ = _matmul_backward(
                grad, self.out, self.den, self.u, self.weight, self.plan, False
            )
        else:
            n = len(grad)
            h = self.h.get(n)
            if h is None:
                h = self.h[n] = torch.empty(
                    n, len(self.plan.gather_index), dtype=grad.dtype, device=grad.device
                )
            grad_w2, _ = _gather_backward(
                grad, self.out, self.den, self.gathered, self.wk, self.plan, False, h
            )
        # d softplus(a) / da = sigmoid(a), as autograd's softplus backward computes it (one call).
        _softplus_backward(grad_w2, self.ac, 1, 20, grad_input=self.grad_ac)


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

    def __init__(self, block, batch_size):
        self.first = _first_block(block.first, batch_size)
        if self.first is None:
            raise _Unsupported(f"first block {type(block.first).__name__}")
        self.mean = block.mean
        self.scale = block.scale

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


def _first_block(layer, batch_size):
    """The fused block for a network's first module, or None."""
    from .networks import AttentionND, RawPassthrough

    kind = type(layer)
    if kind is NormalizedDifference:
        return _NDBlock(layer, batch_size)
    if kind is AttentionND:
        return _AttentionNDBlock(layer, batch_size)
    if kind is RawPassthrough:
        return _PassthroughBlock(layer, batch_size)
    if kind is nn.Sequential and [type(m) for m in layer] == [nn.Linear, nn.ReLU]:
        return _LinearBlock(layer[0], relu=True, first=True)
    return None


class _Unsupported(Exception):
    """The network or loss has a part the fused step does not implement."""


# ---------------------------------------------------------------------- losses
# ``targets(y)`` precomputes per-sample target columns once per dataset;
# ``grad(z, aux, terms)`` writes per-sample loss terms into ``terms`` (a slice of
# an epoch buffer) and returns dL/dz of the batch-mean loss; ``epoch_total(terms)``
# sums the per-sample losses of the epoch (skorch's batch-size weighted mean
# times the number of samples).


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


#: Below this batch size the ND layer's "auto" method gathers in the fused step: with 10
#: bands, whole fits ran 23% (batch 32) and 15% (batch 256) faster gathering than with the
#: two GEMMs, whose weight construction costs as many operations as the gather itself.
_MATMUL_MIN_BATCH = 1024


def _loss_for(criterion, n_outputs, batch_size):
    kind = type(criterion)
    if getattr(criterion, "reduction", None) != "mean":
        raise _Unsupported("loss reduction")
    if kind is nn.BCEWithLogitsLoss and n_outputs == 1:
        if criterion.weight is not None or criterion.pos_weight is not None:
            raise _Unsupported("weighted BCE")
        return _BinaryCrossEntropy(batch_size)
    if kind is nn.CrossEntropyLoss:
        if criterion.weight is not None or criterion.label_smoothing:
            raise _Unsupported("weighted or smoothed cross-entropy")
        return _CrossEntropy(n_outputs)
    if kind is nn.MSELoss:
        return _MeanSquaredError(n_outputs)
    raise _Unsupported(f"loss {kind.__name__}")


def _blocks_for(module, batch_size):
    """Translate an ``nn.Sequential`` into fused blocks, or raise :class:`_Unsupported`."""
    if type(module) is not nn.Sequential:
        raise _Unsupported("module is not nn.Sequential")
    layers = list(module)
    blocks = []
    n_outputs = None
    position = 0
    while position < len(layers):
        layer = layers[position]
        first = not blocks
        block = _first_block(layer, batch_size) if first else None
        if block is not None:
            blocks.append(block)
        elif type(layer) is nn.Linear:
            relu = position + 1 < len(layers) and type(layers[position + 1]) is nn.ReLU
            blocks.append(_LinearBlock(layer, relu=relu, first=first))
            n_outputs = layer.out_features
            position += relu
        else:
            raise _Unsupported(f"layer {type(layer).__name__}")
        position += 1
    if not isinstance(blocks[-1], _LinearBlock) or blocks[-1].relu:
        raise _Unsupported("the network must end with a linear layer")
    return blocks, n_outputs


class FusedTrainer:
    """Training epochs of an sknd network with a hand-written forward and backward.

    Built by :meth:`build` for a module, criterion and :class:`FlatAdam`
    optimizer; :meth:`run_epoch` replaces skorch's per-batch loop for one
    epoch over a :class:`~sknd._training.TensorBatches` iterator, drawing the
    same shuffles from its generator.
    """

    def __init__(self, module, criterion, optimizer, batch_size):
        if not isinstance(optimizer, FlatAdam):
            raise _Unsupported("optimizer is not FlatAdam")
        buffers = optimizer.flat_buffers()
        params = list(module.parameters())
        group_params = [p for group in optimizer.param_groups for p in group["params"]]
        if {id(p) for p in params} != {id(p) for p in group_params} or len(buffers) != 1:
            raise _Unsupported("optimizer does not hold exactly the module's parameters")
        if any(p.grad is None or p.dtype != params[0].dtype for p in params):
            raise _Unsupported("parameters of several dtypes")
        self.blocks, n_outputs = _blocks_for(module, batch_size)
        self.loss = _loss_for(criterion, n_outputs, batch_size)
        self.module = module
        self.criterion = criterion
        self.optimizer = optimizer
        self.batch_size = batch_size
        self.dtype = params[0].dtype
        self.device = params[0].device
        self._data = None

    @classmethod
    def build(cls, module, criterion, optimizer, batch_size):
        """A trainer, or None when some part of the setup is not supported."""
        try:
            return cls(module, criterion, optimizer, batch_size)
        except _Unsupported:
            return None

    def is_current(self, module, criterion, optimizer, batch_size):
        """Whether this trainer still describes the net's parts and memory layout."""
        if module is not self.module or criterion is not self.criterion:
            return False
        if optimizer is not self.optimizer or batch_size != self.batch_size:
            return False
        # Packing may have moved the parameters: the blocks hold views of them.
        before = self.optimizer._flat
        self.optimizer.flat_buffers()
        return self.optimizer._flat is before

    def _prepare(self, dataset):
        """Per-dataset inputs of the first block, target columns and loss buffer, cached."""
        if self._data is not None and self._data[0] is dataset:
            return self._data[1:]
        X = dataset.X
        if X.dtype != self.dtype or X.device != self.device:
            raise _Unsupported("data and parameters differ in dtype or device")
        prepared = self.blocks[0].prepare(X)
        aux = self.loss.targets(dataset.y).to(self.dtype)
        terms = torch.empty(len(X), self.loss.n_columns, dtype=self.dtype, device=self.device)
        self._data = (dataset, prepared, aux, terms)
        return prepared, aux, terms

    def forward_backward(self, x, aux, terms):
        """Gradients of the batch-mean loss into the parameters' ``.grad`` views."""
        for block in self.blocks:
            x = block.forward(x)
        grad = self.loss.grad(x, aux, terms)
        for block in reversed(self.blocks):
            grad = block.backward(grad)

    @torch.no_grad()
    def run_epoch(self, iterator):
        """Train one epoch; return ``(sum of per-sample losses (tensor), n_samples, n_batches)``."""
        prepared, aux, terms = self._prepare(iterator.dataset)
        n_samples = len(prepared)
        if iterator.shuffle:
            order = torch.randperm(n_samples, generator=iterator.generator).to(self.device)
            prepared, aux = prepared[order], aux[order]
        batch_size = self.batch_size
        forward_backward = self.forward_backward
        update = self.optimizer._update
        # Views of all batches at once: one split per epoch instead of three slices per step.
        batches = zip(prepared.split(batch_size), aux.split(batch_size), terms.split(batch_size))
        n_batches = 0
        for x, target, loss_terms in batches:
            forward_backward(x, target, loss_terms)
            update()
            n_batches += 1
        return self.loss.epoch_total(terms), n_samples, n_batches
