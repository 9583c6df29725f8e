"""The one test oracle of the ND formula: the paper's equations written naively in torch.

Every implementation in sknd (numpy reference, torch layer in both formulations, fused
step, numpy and numba evaluators, exported formulas) is checked against this function or
against a backend already checked against it; autograd on it gives the reference gradients.
Written independently of sknd on purpose.
"""

import torch
import torch.nn.functional as F


def nd_reference(x, a, c, pairs, epsilon, variant):
    """``(wa x_i - wc x_j) / (wa r_i + wc r_j + epsilon)`` for every pair (i, j).

    ``wa = softplus(a)``, ``wc = softplus(c)``; ``x = r = b`` for "reflectance",
    ``x = b, r = sqrt(b**2 + epsilon)`` for "signed", ``x = r = softplus(b)`` for "softplus".
    Accepts torch tensors, or numpy arrays (computed in float64, returned as numpy).
    """
    as_numpy = not isinstance(x, torch.Tensor)
    if as_numpy:
        x, a, c = (torch.as_tensor(v, dtype=torch.float64) for v in (x, a, c))
        pairs = torch.as_tensor(pairs)
    wa, wc = F.softplus(a), F.softplus(c)
    if variant == "softplus":
        x = F.softplus(x)
    bi, bj = x[:, pairs[:, 0]], x[:, pairs[:, 1]]
    numerator = wa * bi - wc * bj
    if variant == "signed":
        denominator = wa * torch.sqrt(bi * bi + epsilon) + wc * torch.sqrt(bj * bj + epsilon)
    else:
        denominator = wa * bi + wc * bj
    out = numerator / (denominator + epsilon)
    return out.numpy() if as_numpy else out
