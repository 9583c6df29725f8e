"""The Normalized Difference layer as a PyTorch module.

For a band pair ``(i, j)`` with learnable parameters ``a`` and ``c`` and band
weights ``wa = softplus(a)``, ``wc = softplus(c)``, the layer computes

.. math::

    N_{ij} = \\frac{w_a b_i - w_c b_j}{w_a b_i + w_c b_j + \\epsilon}

(``variant="reflectance"``, for non-negative inputs). Two variants accept
signed inputs (Remark 2.3 of the paper): ``"signed"`` replaces ``b`` in the
denominator by the smooth absolute value ``sqrt(b**2 + eps)``; ``"softplus"``
applies ``softplus`` to the inputs first. With ``a = c = 0`` the layer is the
classic normalized difference (up to the common factor ``log 2``, which
cancels).

This module is the torch-facing part of sknd; the estimators in
:mod:`sknd` wrap it and never expose torch objects.
"""

import itertools

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "NormalizedDifference",
    "VARIANTS",
    "all_pairs",
    "normalized_difference",
    "resolve_pairs",
]

#: The supported formulations, see the module docstring.
VARIANTS = ("reflectance", "signed", "softplus")


def all_pairs(n_features):
    """Return every band pair ``(i, j)`` with ``i < j``.

    Parameters
    ----------
    n_features : int
        Number of input bands.

    Returns
    -------
    pairs : ndarray of shape (n_features * (n_features - 1) // 2, 2)
        Integer pairs in :func:`itertools.combinations` order.

    Examples
    --------
    >>> all_pairs(3).tolist()
    [[0, 1], [0, 2], [1, 2]]
    """
    pairs = np.array(list(itertools.combinations(range(n_features), 2)), dtype=np.int64)
    return pairs.reshape(-1, 2)


def resolve_pairs(n_features, pairs="all"):
    """Validate band pairs and return them as an integer array.

    Parameters
    ----------
    n_features : int
        Number of input bands.
    pairs : "all" or array-like of shape (n_pairs, 2)
        ``"all"`` for :func:`all_pairs`, or explicit ``(i, j)`` band indices
        with ``i != j``, each unordered pair at most once.

    Returns
    -------
    pairs : ndarray of shape (n_pairs, 2)

    Raises
    ------
    ValueError
        If a pair is malformed, repeats a band, is out of range or duplicated.

    Examples
    --------
    >>> resolve_pairs(4, [(3, 1), (0, 2)]).tolist()
    [[3, 1], [0, 2]]
    """
    if isinstance(pairs, str):
        if pairs != "all":
            raise ValueError(f"pairs must be 'all' or a list of (i, j) band pairs, got {pairs!r}.")
        return all_pairs(n_features)
    try:
        array = np.asarray(pairs)
    except ValueError as exc:  # ragged nesting
        raise ValueError(f"pairs must be a list of (i, j) band pairs, got {pairs!r}.") from exc
    if array.ndim != 2 or array.shape[1] != 2 or len(array) == 0:
        raise ValueError(f"pairs must be a non-empty list of (i, j) band pairs, got {pairs!r}.")
    if not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"pairs must hold integer band indices, got {pairs!r}.")
    array = array.astype(np.int64)
    if array.min() < 0 or array.max() >= n_features:
        raise ValueError(
            f"pairs refer to band indices outside [0, {n_features - 1}] for {n_features} bands."
        )
    if np.any(array[:, 0] == array[:, 1]):
        raise ValueError("pairs must combine two different bands; found a pair (i, i).")
    if len(np.unique(np.sort(array, axis=1), axis=0)) < len(array):
        raise ValueError("pairs must not list the same band pair twice.")
    return array


def _gather_pair(x, idx_i, idx_j):
    return x.index_select(1, idx_i), x.index_select(1, idx_j)


class _NormalizedDifferenceFunction(torch.autograd.Function):
    """ND outputs for all pairs with the closed-form backward pass.

    Only the input, the parameters and the pair indices are kept for the
    backward pass: the per-pair intermediates (``B x P``) are recomputed there,
    so the memory held between forward and backward does not grow with the
    number of pairs.
    """

    @staticmethod
    def forward(ctx, x, a, c, idx_i, idx_j, epsilon, variant):
        ctx.save_for_backward(x, a, c, idx_i, idx_j)
        ctx.epsilon = epsilon
        ctx.variant = variant
        wa, wc = F.softplus(a), F.softplus(c)
        if variant == "softplus":
            x = F.softplus(x)
        bi, bj = _gather_pair(x, idx_i, idx_j)
        numerator = wa * bi - wc * bj
        if variant == "signed":
            denominator = (
                wa * torch.sqrt(bi * bi + epsilon) + wc * torch.sqrt(bj * bj + epsilon) + epsilon
            )
        else:
            denominator = wa * bi + wc * bj + epsilon
        return numerator / denominator

    @staticmethod
    def backward(ctx, grad_out):
        x, a, c, idx_i, idx_j = ctx.saved_tensors
        eps = ctx.epsilon
        wa, wc = F.softplus(a), F.softplus(c)
        xb = F.softplus(x) if ctx.variant == "softplus" else x
        bi, bj = _gather_pair(xb, idx_i, idx_j)
        if ctx.variant == "signed":
            # N = A / D with A = wa bi - wc bj, D = wa ri + wc rj + eps, r = sqrt(b^2 + eps):
            # dN/dwa = (bi D - A ri) / D^2,      dN/dwc = -(bj D + A rj) / D^2,
            # dN/dbi = wa (D - A bi / ri) / D^2, dN/dbj = -wc (D + A bj / rj) / D^2.
            ri = torch.sqrt(bi * bi + eps)
            rj = torch.sqrt(bj * bj + eps)
            denominator = wa * ri + wc * rj + eps
            n = (wa * bi - wc * bj) / denominator
            g = grad_out / denominator
            d_wa = g * (bi - n * ri)
            d_wc = -g * (bj + n * rj)
            d_bi = g * wa * (1 - n * bi / ri)
            d_bj = -g * wc * (1 + n * bj / rj)
        else:
            # Proposition 2.1 with B = wa bi + wc bj + eps:
            # dN/da = s(a) bi (2 wc bj + eps) / B^2,  dN/dc = -s(c) bj (2 wa bi + eps) / B^2,
            # dN/dbi = wa (2 wc bj + eps) / B^2,      dN/dbj = -wc (2 wa bi + eps) / B^2.
            inv_b2 = (wa * bi + wc * bj + eps).pow(-2)
            t_i = grad_out * (2 * wc * bj + eps) * inv_b2
            t_j = grad_out * (2 * wa * bi + eps) * inv_b2
            d_wa = t_i * bi
            d_wc = -t_j * bj
            d_bi = t_i * wa
            d_bj = -t_j * wc

        grad_x = grad_a = grad_c = None
        if ctx.needs_input_grad[0]:
            grad_x = torch.zeros_like(x)
            grad_x.index_add_(1, idx_i, d_bi)
            grad_x.index_add_(1, idx_j, d_bj)
            if ctx.variant == "softplus":
                grad_x = grad_x * torch.sigmoid(x)
        if ctx.needs_input_grad[1]:
            grad_a = torch.sigmoid(a) * d_wa.sum(0)
        if ctx.needs_input_grad[2]:
            grad_c = torch.sigmoid(c) * d_wc.sum(0)
        return grad_x, grad_a, grad_c, None, None, None, None


def normalized_difference(x, a, c, pairs, epsilon=1e-6, variant="reflectance"):
    """Learnable normalized differences of band pairs (functional form).

    Parameters
    ----------
    x : torch.Tensor of shape (n_samples, n_features)
        Input bands.
    a, c : torch.Tensor of shape (n_pairs,)
        Raw parameters; the band weights are ``softplus(a)`` and ``softplus(c)``.
    pairs : torch.Tensor of shape (n_pairs, 2)
        Integer band indices ``(i, j)`` of each pair.
    epsilon : float, default=1e-6
        Stabilising constant of the denominator (and of the smooth absolute
        value in the ``"signed"`` variant).
    variant : {"reflectance", "signed", "softplus"}, default="reflectance"
        Formulation, see the module docstring.

    Returns
    -------
    torch.Tensor of shape (n_samples, n_pairs)
        Values in ``[-1, 1]``.

    Examples
    --------
    >>> x = torch.tensor([[0.5, 0.1]])
    >>> pairs = torch.tensor([[0, 1]])
    >>> zero = torch.zeros(1)
    >>> round(normalized_difference(x, zero, zero, pairs, epsilon=0.0).item(), 4)
    0.6667
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}.")
    return _NormalizedDifferenceFunction.apply(
        x, a, c, pairs[:, 0], pairs[:, 1], float(epsilon), variant
    )


class NormalizedDifference(nn.Module):
    """Normalized Difference layer with learnable band weights.

    Parameters
    ----------
    n_features : int
        Number of input bands.
    pairs : "all" or array-like of shape (n_pairs, 2), default="all"
        Band pairs to compute. ``"all"`` uses every pair ``i < j`` in
        :func:`itertools.combinations` order.
    epsilon : float, default=1e-6
        Stabilising constant, must be positive.
    variant : {"reflectance", "signed", "softplus"}, default="reflectance"
        ``"reflectance"`` expects non-negative inputs (bands of a spectrum);
        ``"signed"`` and ``"softplus"`` accept any real input.

    Attributes
    ----------
    a, c : torch.nn.Parameter of shape (n_pairs,)
        Raw parameters, initialised at 0 so that the untrained layer is the
        classic normalized difference.
    pairs : torch.Tensor of shape (n_pairs, 2)
        The band pairs (a buffer, saved with the state dict).

    Examples
    --------
    >>> layer = NormalizedDifference(4)
    >>> layer(torch.rand(8, 4)).shape
    torch.Size([8, 6])
    """

    def __init__(self, n_features, pairs="all", epsilon=1e-6, variant="reflectance"):
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}.")
        if not epsilon > 0:
            raise ValueError(f"epsilon must be positive, got {epsilon!r}.")
        pairs = torch.as_tensor(resolve_pairs(n_features, pairs))
        self.n_features = n_features
        self.epsilon = float(epsilon)
        self.variant = variant
        self.register_buffer("pairs", pairs)
        self.a = nn.Parameter(torch.zeros(len(pairs)))
        self.c = nn.Parameter(torch.zeros(len(pairs)))

    @property
    def n_pairs(self):
        """Number of band pairs, i.e. of outputs."""
        return self.pairs.shape[0]

    def forward(self, x):
        return normalized_difference(x, self.a, self.c, self.pairs, self.epsilon, self.variant)

    def extra_repr(self):
        return (
            f"n_features={self.n_features}, n_pairs={self.n_pairs}, "
            f"epsilon={self.epsilon:g}, variant={self.variant!r}"
        )
