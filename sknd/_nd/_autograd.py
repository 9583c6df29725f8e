"""The autograd function of the Normalized Difference layer and the forward that calls it.

:class:`NormalizedDifferenceFunction` runs the closed-form forward and backward
passes of :mod:`sknd._nd._torch` (gather, matmul or band slices) and falls back
to autograd for double backward; :func:`nd_forward` lays the input out as a
band table, computes half-precision inputs in float32 and calls it. Used by
:func:`sknd.nn.normalized_difference` and :class:`sknd.nn.NormalizedDifference`.
"""

import torch
import torch.nn.functional as F

from ._torch import (
    band_table,
    gather_backward,
    gather_forward,
    input_grad,
    layer_input,
    matmul_backward,
    matmul_forward,
    matmul_weight,
    slice_backward,
    slice_forward,
    unband,
)

__all__ = []


class NormalizedDifferenceFunction(torch.autograd.Function):
    """ND outputs of all pairs with the closed-form backward pass.

    "gather" keeps only the input and the parameters for the backward pass (the
    pair layout is a constant of the layer) and recomputes the per-pair
    intermediates there, so the memory held between forward and backward does
    not grow with the number of pairs. "matmul", used for few bands, also keeps
    the output, the denominator and the ``(2, n_inputs, P)`` weights: at that
    size recomputing them would cost as much as the rest of the backward pass.
    "slices" (images and series) keeps the output and the denominator; the
    denominator is private to the call, so it is held on ``ctx`` rather than
    saved, and the first backward pass overwrites it with ``G / D**2`` (no new
    output-sized buffer); a second pass (``retain_graph=True``) recomputes it.
    """

    @staticmethod
    def forward(ctx, x, a, c, plan, method):
        ctx.plan = plan
        ctx.method = method
        u = layer_input(x, plan.variant, plan.epsilon)
        if method == "slices":
            out, denominator = slice_forward(u, F.softplus(torch.cat([a, c])), plan)
            ctx.save_for_backward(x, a, c, out)
            # Private to this call, overwritten by the first backward pass (see below).
            ctx.denominator = denominator
            return out
        if method == "matmul":
            weight = matmul_weight(F.softplus(a), F.softplus(c), plan)
            out, denominator = matmul_forward(u, weight, plan)
            ctx.save_for_backward(x, a, c, out, denominator, weight)
            return out
        ctx.save_for_backward(x, a, c)
        w2 = F.softplus(torch.cat([a, c]))
        return gather_forward(u, plan.gather_weights(w2), plan, keep_gathered=False)[0]

    @staticmethod
    def backward(ctx, grad_out):
        if torch.is_grad_enabled():  # create_graph=True: a backward that is differentiable
            return _differentiable_backward(ctx, grad_out)
        x, a, c, *kept = ctx.saved_tensors
        plan = ctx.plan
        need_input = ctx.needs_input_grad[0]
        u = layer_input(x, plan.variant, plan.epsilon)
        ac = torch.cat([a, c])
        if ctx.method == "slices":
            (out,) = kept
            w2 = F.softplus(ac)
            denominator, ctx.denominator = ctx.denominator, None
            if denominator is None:  # a second backward pass (retain_graph=True)
                denominator = slice_forward(u, w2, plan)[1]
            grad_w2, grad_u = slice_backward(grad_out, out, denominator, u, w2, plan, need_input)
        elif ctx.method == "matmul":
            out, denominator, weight = kept
            grad_w2, grad_u = matmul_backward(
                grad_out, out, denominator, u, weight, plan, need_input
            )
        else:
            wk = plan.gather_weights(F.softplus(ac))
            out, denominator, gathered = gather_forward(u, wk, plan, keep_gathered=True)
            grad_w2, grad_u = gather_backward(
                grad_out, out, denominator, gathered, wk, plan, need_input
            )
        # d softplus(a) / da = sigmoid(a).
        grad_a, grad_c = grad_w2.mul_(torch.sigmoid(ac)).split(plan.n_pairs)
        grad_x = input_grad(grad_u, x, plan.variant, plan.epsilon) if need_input else None
        return grad_x, grad_a, grad_c, None, None


def _differentiable_backward(ctx, grad_out):
    """The gradients as autograd graphs, for double backward (gradient penalties, Hessians).

    The closed-form backward writes into buffers (``out=``, in place), which
    autograd cannot differentiate. With ``create_graph=True`` the outputs are
    recomputed by the gather formulation, whose operations autograd can
    follow, and differentiated by autograd: the same values, graphs attached.
    """
    x, a, c = ctx.saved_tensors[:3]
    plan = ctx.plan
    inputs = [t for t, needed in zip((x, a, c), ctx.needs_input_grad[:3]) if needed]
    u = layer_input(x, plan.variant, plan.epsilon)
    weights = plan.gather_weights(F.softplus(torch.cat([a, c])))
    out = gather_forward(u, weights, plan, keep_gathered=True)[0]
    grads = iter(torch.autograd.grad(out, inputs, grad_out, create_graph=True))
    return (*(next(grads) if needed else None for needed in ctx.needs_input_grad[:3]), None, None)


#: Input dtypes computed in float32 (and returned in their own dtype): the
#: denominators of nearby bands lose every digit in 8 or 11 bits of mantissa.
_HALF_DTYPES = (torch.float16, torch.bfloat16)


def nd_forward(x, a, c, dim, plan_of, method):
    """The layer's outputs for ``x`` with the bands along ``dim``.

    ``plan_of(dtype, device)`` gives the :class:`~sknd._nd._torch.PairPlan`.
    Half-precision inputs are computed in float32 and autocast is turned off
    inside, as for the other ratio-of-sums operations of torch (softmax, norms).
    """
    device_type = x.device.type
    if torch.is_autocast_enabled(device_type):
        with torch.autocast(device_type, enabled=False):
            return nd_forward(x, a, c, dim, plan_of, method)
    table = x if x.dim() == 2 and dim % 2 == 1 else band_table(x, dim)
    dtype = torch.float32 if x.dtype in _HALF_DTYPES else x.dtype
    if dtype != x.dtype:
        table = table.to(dtype)
    plan = plan_of(dtype, x.device)
    out = NormalizedDifferenceFunction.apply(
        table, a.to(dtype), c.to(dtype), plan, plan.choose(method, table)
    )
    out = out.to(x.dtype)
    return out if table.dim() == x.dim() == 2 else unband(out, x.shape, dim)
