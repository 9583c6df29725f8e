"""Network builders for the ND, AttND and MLP architectures of the paper.

Depth counts layers from input to output as in the paper: depth 2 is
``input -> first layer -> output``, each extra unit of depth adds one
``Linear + ReLU`` hidden layer.
"""

import torch
from torch import nn

from .nn import NormalizedDifference, resolve_pairs

__all__ = ["ARCHITECTURES", "AttentionND", "build_network"]

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


def build_network(
    architecture,
    n_features,
    n_outputs,
    depth=2,
    hidden_units=None,
    pairs="all",
    epsilon=1e-6,
    variant="reflectance",
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
    layers = [first]
    for _ in range(depth - 2):
        layers += [nn.Linear(width, hidden_units), nn.ReLU()]
        width = hidden_units
    layers.append(nn.Linear(width, n_outputs))
    return nn.Sequential(*layers)
