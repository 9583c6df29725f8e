"""Adam on one contiguous buffer per parameter group (the optimizer of sknd's training).

At the batch sizes of spectral data a training step costs per-operation
overhead, not arithmetic: ``torch.optim.Adam`` loops (or runs ``foreach``
calls) over parameter tensors. :class:`FlatAdam` keeps all parameters,
gradients and moments of a group in one buffer each, so that its step is
seven tensor operations whatever the number of parameter tensors; the fused
training step (:mod:`sknd._training._fused`) drives it batch by batch.
"""

import math

import numpy as np
import torch

__all__ = ["FlatAdam"]


def _unwrapped(method):
    """``method`` without ``torch._disable_dynamo``'s wrapper.

    The wrapper imports ``torch._dynamo`` on its first call, the whole warm-up of a
    process's first fit (``Optimizer.__init__`` calls ``add_param_group``;
    benchmarks/RESULTS.md, "Start-up and sample weights").
    FlatAdam is never compiled, so the plain method does the same. tests/training/test_adam.py
    fails if torch wraps these methods in anything else.
    """
    return getattr(method, "__wrapped__", method)


def _step_sizes(group, steps):
    """``-lr w_t sqrt(1 - beta2^t) / (1 - beta1^t)`` of a group at steps ``t`` (see FlatAdam)."""
    beta1, beta2 = group["betas"]
    warmup = group.get("warmup_steps", 0)  # absent from the state of older model files
    factor = np.minimum(1.0, steps / warmup) if warmup else 1.0
    return -group["lr"] * factor * (1 - beta2**steps) ** 0.5 / (1 - beta1**steps)


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
    warmup_steps : int, default=0
        Steps of a linear learning-rate warm-up (0: none). Adam's first steps move
        every parameter by about ``lr`` whatever its gradient's size, since the second
        moment is estimated from a few gradients (Liu et al., "On the Variance of the
        Adaptive Learning Rate and Beyond", ICLR 2020): started at a tuned model, the
        steps of thousands of weights into a unit add up and undo it. The warm-up lets
        the moments settle first.

    Examples
    --------
    >>> layer = torch.nn.Linear(3, 2)
    >>> opt = FlatAdam(layer.parameters(), lr=0.1)
    >>> layer(torch.ones(1, 3)).sum().backward()
    >>> opt.step()
    >>> layer.weight.grad.shape
    torch.Size([2, 3])
    """

    def __init__(
        self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, warmup_steps=0
    ):
        if not lr >= 0 or not eps >= 0 or not weight_decay >= 0 or not warmup_steps >= 0:
            raise ValueError("lr, eps, weight_decay and warmup_steps must be non-negative.")
        if not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError(f"betas must be in [0, 1), got {betas!r}.")
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "warmup_steps": warmup_steps,
        }
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
            for p, data, _ in buffers["views"]:
                p.data = data.clone()
                if p.grad is not None:
                    p.grad = p.grad.clone()
                state = self.state[p]
                state["exp_avg"] = state["exp_avg"].clone()
                state["exp_avg_sq"] = state["exp_avg_sq"].clone()
        self._flat = None

    def add_param_group(self, param_group):
        _unwrapped(torch.optim.Optimizer.add_param_group)(self, param_group)
        self._flat = None

    def load_state_dict(self, state_dict):
        _unwrapped(torch.optim.Optimizer.load_state_dict)(self, state_dict)
        self._flat = None

    # ------------------------------------------------------------------ steps
    def zero_grad(self, set_to_none=True):
        self._check_layout()
        for buffers in self._flat:
            if buffers is not None:
                buffers["grad"].zero_()

    @torch.no_grad()
    def packed_step(self):
        """One Adam step on the packed buffers, their layout taken as checked.

        Package-internal: :mod:`sknd._training._fused` calls it for every batch of an epoch,
        having checked the layout (:meth:`flat_buffers`) once before the epoch;
        :meth:`step` checks it every time.
        """
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
            param.addcdiv_(exp_avg, denom, value=float(_step_sizes(group, step)))

    def step_scalars(self, n_steps):
        """Step sizes and epsilons of the next ``n_steps`` steps, for :meth:`scaled_step`.

        Package-internal (:mod:`sknd._training._graph_epochs`): a float64 array of shape
        ``(n_steps, 2)``, row ``k`` holding ``-lr w_t sqrt(1 - beta2^t) / (1 - beta1^t)``
        and ``eps sqrt(1 - beta2^t)`` for step ``t = step + k + 1`` of the single
        parameter group, computed as :meth:`packed_step` computes them. Nothing
        changes until :meth:`count_steps`.
        """
        (group,) = self.param_groups
        steps = np.arange(group["step"] + 1, group["step"] + n_steps + 1, dtype=np.float64)
        scalars = np.empty((n_steps, 2))
        scalars[:, 0] = _step_sizes(group, steps)
        scalars[:, 1] = group["eps"] * np.sqrt(1 - group["betas"][1] ** steps)
        return scalars

    def count_steps(self, n_steps):
        """Record ``n_steps`` steps taken by :meth:`scaled_step` (package-internal)."""
        for group in self.param_groups:
            group["step"] += n_steps

    def constants(self):
        """What :meth:`scaled_step` reads from the group as constants: ``(betas, weight_decay)``.

        A captured CUDA graph holds them as they were at capture: a change needs a new
        capture (:mod:`sknd._training._graph_epochs`), a change of ``lr`` or ``eps`` does not.
        """
        (group,) = self.param_groups
        return tuple(group["betas"]), group["weight_decay"]

    @torch.no_grad()
    def scaled_step(self, scalars):
        """One Adam step of the single group with ``scalars`` (a row of :meth:`step_scalars`).

        Package-internal: the same update as :meth:`packed_step` with the step size and
        epsilon read from a tensor on the device, so that a CUDA graph can replay the
        step; no host value changes with the step (see :meth:`count_steps`).
        """
        (group,), (buffers,) = self.param_groups, self._flat
        beta1, beta2 = group["betas"]
        param, grad, exp_avg, exp_avg_sq, denom = buffers["arrays"]
        if group["weight_decay"]:
            grad.add_(param, alpha=group["weight_decay"])
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        torch.sqrt(exp_avg_sq, out=denom).add_(scalars[1])
        param.addcmul_(torch.div(exp_avg, denom, out=denom), scalars[0])

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self._check_layout()
        self.packed_step()
        return loss
