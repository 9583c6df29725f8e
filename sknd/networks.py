"""Network builders for the ND, AttND and MLP architectures of the paper.

Depth counts layers from input to output as in the paper: depth 2 is
``input -> first layer -> output``, each extra unit of depth adds one
``Linear + ReLU`` hidden layer.
"""

import torch
from torch import nn

from .nn import NormalizedDifference, resolve_pairs

__all__ = ["ARCHITECTURES", "AttentionND", "RawPassthrough", "build_network"]

#: Architectures understood by :func:`build_network`.
ARCHITECTURES = ("nd", "attnd", "mlp")


class AttentionND(nn.Module):
    """ND outputs gated by input-dependent attention, ``N(b) * sigmoid(W b + c)``.

    Parameters
    ----------
    n_features : int
        Number of input bands.
    pairs, epsilon, variant
        As for :class:`~sknd.nn.NormalizedDifference`.

    Examples
    --------
    >>> AttentionND(4)(torch.rand(2, 4)).shape
    torch.Size([2, 6])
    """

    def __init__(self, n_features, pairs="all", epsilon=1e-6, variant="reflectance"):
        super().__init__()
        self.nd = NormalizedDifference(n_features, pairs, epsilon, variant)
        self.gate = nn.Linear(n_features, self.nd.n_pairs)

    def forward(self, x):
        return self.nd(x) * torch.sigmoid(self.gate(x))


class RawPassthrough(nn.Module):
    """The first block's outputs followed by the standardized raw bands.

    Normalized differences discard overall brightness; this block hands it back
    to the dense layers as ``(x - mean) / scale``. The standardization
    constants are buffers of the module, so they travel with the trained
    network (device moves, pickles) and inference applies them unchanged.

    Parameters
    ----------
    first : torch.nn.Module
        The first block (ND layer, AttND block or the MLP's first layer).
    mean, scale : array-like of shape (n_features,)
        Standardization constants, computed from the training data.

    Examples
    --------
    >>> from sknd.nn import NormalizedDifference
    >>> block = RawPassthrough(NormalizedDifference(4), mean=[0.2] * 4, scale=[0.1] * 4)
    >>> block(torch.rand(2, 4)).shape
    torch.Size([2, 10])
    """

    def __init__(self, first, mean, scale):
        super().__init__()
        self.first = first
        self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32).reshape(1, -1))
        self.register_buffer("scale", torch.as_tensor(scale, dtype=torch.float32).reshape(1, -1))

    @property
    def nd(self):
        """The wrapped ND layer, or None for the MLP's first block."""
        if isinstance(self.first, NormalizedDifference):
            return self.first
        return getattr(self.first, "nd", None)

    def forward(self, x):
        return torch.cat([self.first(x), (x - self.mean) / self.scale], dim=1)


def build_network(
    architecture,
    n_features,
    n_outputs,
    depth=2,
    hidden_units=None,
    pairs="all",
    epsilon=1e-6,
    variant="reflectance",
    passthrough=None,
):
    """Build the paper's ND, AttND or MLP network.

    Parameters
    ----------
    architecture : {"nd", "attnd", "mlp"}
        ``"nd"``: ND layer, then ``depth - 2`` hidden ``Linear + ReLU`` layers,
        then a linear output layer. ``"attnd"``: the same with attention-gated
        ND outputs. ``"mlp"``: the baseline, ``Linear + ReLU`` in place of the
        ND layer.
    n_features : int
        Number of input bands.
    n_outputs : int
        Number of output units (1 for binary classification).
    depth : int, default=2
        Number of layers counted from input to output, at least 2.
    hidden_units : int or None, default=None
        Width of the hidden ``Linear + ReLU`` layers (and of the MLP's first
        layer). ``None`` uses the number of band pairs.
    pairs, epsilon, variant
        As for :class:`~sknd.nn.NormalizedDifference`; ``pairs`` also sets the
        default width of the MLP.
    passthrough : tuple of (array-like, array-like), default=None
        ``(mean, scale)`` of the input bands: wrap the first block in
        :class:`RawPassthrough` so that the standardized raw bands reach the
        next layer beside the first block's outputs. ``None``: no passthrough.

    Returns
    -------
    torch.nn.Sequential
        The network; its first element is the ND layer (or the MLP's first
        block).

    Examples
    --------
    >>> net = build_network("nd", n_features=10, n_outputs=1, depth=2)
    >>> sum(p.numel() for p in net.parameters())
    136
    """
    if architecture not in ARCHITECTURES:
        raise ValueError(f"architecture must be one of {ARCHITECTURES}, got {architecture!r}.")
    if depth < 2:
        raise ValueError(f"depth must be at least 2, got {depth!r}.")
    pairs = resolve_pairs(n_features, pairs)
    width = len(pairs)
    hidden_units = width if hidden_units is None else hidden_units
    if architecture == "nd":
        first = NormalizedDifference(n_features, pairs, epsilon, variant)
    elif architecture == "attnd":
        first = AttentionND(n_features, pairs, epsilon, variant)
    else:
        first = nn.Sequential(nn.Linear(n_features, hidden_units), nn.ReLU())
        width = hidden_units
    if passthrough is not None:
        first = RawPassthrough(first, *passthrough)
        width += n_features
    layers = [first]
    for _ in range(depth - 2):
        layers += [nn.Linear(width, hidden_units), nn.ReLU()]
        width = hidden_units
    layers.append(nn.Linear(width, n_outputs))
    return nn.Sequential(*layers)
