"""Network builders for the ND, AttND and MLP architectures of the paper.

Depth counts layers from input to output as in the paper: depth 2 is
``input -> first layer -> output``, each extra unit of depth adds one
``Linear + ReLU`` hidden layer.

:func:`describe` is the one place that recognises the layers of these
networks: the fused training step, the numpy/numba evaluator and the
estimators' helpers all read its :class:`Layer` records and keep only their
own code per layer kind. A new layer kind is added to the builder, to
:func:`describe` and to one leaf per backend; tests/nd/test_networks.py checks
every backend against the torch forward pass and says which one lacks it.
"""

import copy
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ._nd._torch import band_table, unband
from .nn import NormalizedDifference, resolve_pairs

__all__ = [
    "ARCHITECTURES",
    "AppendNormalizedDifference",
    "AttentionND",
    "Layer",
    "RawPassthrough",
    "Standardize",
    "build_network",
    "default_hidden_units",
    "describe",
    "first_nd_layer",
    "forward_rows",
    "rows_per_pass",
]

#: Bounds of the default hidden width. The paper's width (one unit per band pair) grows
#: quadratically with the number of bands: 250 bands would give 31,125 x 31,125 hidden
#: layers. With 2 or 3 bands it would give a 1- or 3-unit ReLU layer that easily dies.
#: Set the estimators' ``hidden_units`` explicitly to go outside these bounds.
MIN_DEFAULT_HIDDEN_UNITS = 8
MAX_DEFAULT_HIDDEN_UNITS = 256


def default_hidden_units(n_pairs):
    """The estimators' hidden width for ``hidden_units=None``: ``n_pairs`` clipped to the bounds.

    Parameters
    ----------
    n_pairs : int
        Number of band pairs of the ND layer.

    Returns
    -------
    int

    Examples
    --------
    >>> default_hidden_units(45), default_hidden_units(1), default_hidden_units(31_125)
    (45, 8, 256)
    """
    return int(np.clip(n_pairs, MIN_DEFAULT_HIDDEN_UNITS, MAX_DEFAULT_HIDDEN_UNITS))


#: Architectures understood by :func:`build_network`.
ARCHITECTURES = ("nd", "attnd", "mlp")

# Rows per pass of forward_rows on the CPU: 4,096 rows of a few hundred float64 columns
# stay in the caches, where passes of 65,536 rows took about twice as long
# (benchmarks/RESULTS.md, "Large batches").
_CPU_FORWARD_ROWS = 4096


class AttentionND(nn.Module):
    """ND outputs gated by input-dependent attention, ``N(b) * sigmoid(W b + c)``.

    Parameters
    ----------
    n_features : int
        Number of input bands.
    pairs, epsilon, variant
        As for :class:`~sknd.nn.NormalizedDifference`.
    dim : int, default=1
        Axis of the input holding the bands, as for
        :class:`~sknd.nn.NormalizedDifference`; on ``(N, C, H, W)`` patches the
        gate is a 1 x 1 convolution (the same ``nn.Linear`` weights at every
        pixel).

    Examples
    --------
    >>> AttentionND(4)(torch.rand(2, 4)).shape
    torch.Size([2, 6])
    >>> AttentionND(4)(torch.rand(2, 4, 8, 8)).shape
    torch.Size([2, 6, 8, 8])
    """

    def __init__(self, n_features, pairs="all", epsilon=1e-6, variant="reflectance", dim=1):
        super().__init__()
        self.nd = NormalizedDifference(n_features, pairs, epsilon, variant, dim=dim)
        self.gate = nn.Linear(n_features, self.nd.n_pairs)

    @property
    def n_outputs(self):
        """Number of output channels: the gated indices, ``nd.n_pairs``."""
        return self.nd.n_pairs

    def forward(self, x):
        dim = self.nd.dim
        if x.dim() == 2 and dim % 2 == 1:
            return self.nd(x) * torch.sigmoid(self.gate(x))
        values = self.nd(x)  # checks x first
        table = band_table(x, dim)
        if table.dim() == 2:
            gate = self.gate(table)
        else:  # the Linear at every position: a 1 x 1 convolution, without transposing x
            gate = torch.baddbmm(
                self.gate.bias.unsqueeze(-1), self.gate.weight.expand(table.shape[0], -1, -1), table
            )
        return values * torch.sigmoid(unband(gate, x.shape, dim))


class AppendNormalizedDifference(nn.Module):
    """The input's channels followed by learnable normalized differences of them.

    The learnable counterpart of appending fixed indices (NDVI, NDWI) to image
    channels: the first block of a CNN or U-Net that keeps the raw bands and
    adds ``n_pairs`` learned indices computed per pixel.

    Parameters
    ----------
    n_features : int, default=None
        Number of input bands; by default the length of ``bands``.
    pairs, epsilon, variant, dim, bands, sensor
        As for :class:`~sknd.nn.NormalizedDifference` (``dim``: the channel
        axis, 1 for ``(N, C, H, W)``; ``bands``: band names, so that ``pairs``
        can name them).

    Attributes
    ----------
    nd : sknd.nn.NormalizedDifference
        The layer computing the appended indices.
    n_outputs : int
        Channels of the output, ``n_features + n_pairs``.

    Examples
    --------
    >>> block = AppendNormalizedDifference(4, pairs=[(3, 2), (1, 3)])
    >>> block(torch.rand(2, 4, 16, 16)).shape
    torch.Size([2, 6, 16, 16])
    >>> model = nn.Sequential(block, nn.Conv2d(block.n_outputs, 8, 3, padding=1))
    >>> named = AppendNormalizedDifference(
    ...     bands=["B2", "B3", "B4", "B8"], sensor="sentinel2", pairs=[("nir", "red")]
    ... )
    >>> named.n_outputs
    5
    """

    def __init__(
        self,
        n_features=None,
        pairs="all",
        epsilon=1e-6,
        variant="reflectance",
        dim=1,
        *,
        bands=None,
        sensor=None,
    ):
        super().__init__()
        self.nd = NormalizedDifference(
            n_features, pairs, epsilon, variant, dim=dim, bands=bands, sensor=sensor
        )
        self.n_outputs = self.nd.n_features + self.nd.n_pairs

    def forward(self, x):
        return torch.cat([x, self.nd(x)], self.nd.dim)


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

    def forward(self, x):
        return torch.cat([self.first(x), (x - self.mean) / self.scale], dim=1)


class Standardize(nn.Module):
    """Fixed standardization ``(x - mean) / scale`` of the previous layer's outputs.

    The statistics are buffers, not parameters: the number of trainable
    parameters does not change, they travel with the network (device moves,
    pickles), and :meth:`fit` sets them from data. sknd's default training
    recipe puts this layer after the first block, with the statistics of the
    classic indices on the training data: ND outputs of real reflectance often
    span a narrow range (NDVI of crops 0.6-0.9), which the output layer and
    Adam see as badly scaled features. Standardizing the indices keeps them
    illumination-invariant.

    Parameters
    ----------
    n_features : int
        Width of the input.

    Examples
    --------
    >>> layer = Standardize(2).fit(torch.tensor([[0.5, 1.0], [1.5, 3.0]]))
    >>> layer(torch.tensor([[1.0, 3.0]])).tolist()
    [[0.0, 1.0]]
    """

    def __init__(self, n_features):
        super().__init__()
        self.register_buffer("mean", torch.zeros(1, n_features))
        self.register_buffer("scale", torch.ones(1, n_features))

    @torch.no_grad()
    def fit(self, outputs, sample_weight=None):
        """Set the statistics to the (weighted) mean and standard deviation of ``outputs``.

        Columns that are constant (standard deviation below ``1e-6``, as
        ``1e-6`` is the float32 resolution of values in [-1, 1]) are centred
        but not scaled.

        Parameters
        ----------
        outputs : torch.Tensor of shape (n_samples, n_features)
            Outputs of the previous layer on the training data.
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of each sample (weight ``k`` counts as ``k`` copies).

        Returns
        -------
        self : Standardize
        """
        outputs = outputs.to(torch.float64)
        if sample_weight is None:
            mean = outputs.mean(0, keepdim=True)
            scale = outputs.std(0, correction=0)
        else:
            weight = torch.as_tensor(sample_weight, dtype=torch.float64).reshape(-1, 1)
            weight = weight / weight.sum()
            mean = (outputs * weight).sum(0, keepdim=True)
            scale = ((outputs - mean) ** 2 * weight).sum(0).sqrt()
        scale = torch.where(scale > 1e-6, scale, torch.ones_like(scale))
        self.mean.copy_(mean)
        self.scale.copy_(scale.reshape(1, -1))
        return self

    def forward(self, x):
        return (x - self.mean) / self.scale


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
    standardize=False,
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
    standardize : bool, default=False
        Insert a :class:`Standardize` layer after the first block (with
        identity statistics until :meth:`Standardize.fit` sets them).

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
    if standardize:
        layers.append(Standardize(width))
    for _ in range(depth - 2):
        layers += [nn.Linear(width, hidden_units), nn.ReLU()]
        width = hidden_units
    layers.append(nn.Linear(width, n_outputs))
    return nn.Sequential(*layers)


@dataclass(frozen=True)
class Layer:
    """One layer of an sknd network, as :func:`describe` reports it.

    Parameters
    ----------
    kind : {"nd", "attnd", "passthrough", "linear", "relu"}
        ``"nd"``: a :class:`~sknd.nn.NormalizedDifference`; ``"attnd"``: an
        :class:`AttentionND` block; ``"passthrough"``: a
        :class:`RawPassthrough` block; ``"standardize"``: a
        :class:`Standardize` layer; ``"linear"``: an ``nn.Linear``;
        ``"relu"``: an ``nn.ReLU``.
    module : torch.nn.Module
        The layer itself (its parameters are the network's, not copies).
    inner : tuple of Layer, default=()
        For ``"passthrough"``, the records of the wrapped first block.
    """

    kind: str
    module: nn.Module
    inner: tuple = ()

    @property
    def nd(self):
        """The ND layer of an ``"nd"``, ``"attnd"`` or ``"passthrough"`` record, else None."""
        if self.kind == "nd":
            return self.module
        if self.kind == "attnd":
            return self.module.nd
        if self.kind == "passthrough":
            return self.inner[0].nd
        return None

    @property
    def width(self):
        """Number of outputs per sample (0 for ``"relu"`` and ``"standardize"``, which keep
        their input's)."""
        if self.kind in ("nd", "attnd"):
            return self.nd.n_pairs
        if self.kind == "passthrough":
            return max(layer.width for layer in self.inner) + len(self.module.mean.reshape(-1))
        if self.kind == "linear":
            return self.module.out_features
        return 0


def _records(module):
    """Records of ``module`` (nested ``nn.Sequential`` flattened), or None if unknown."""
    kind = type(module)
    if kind is nn.Sequential:
        records = []
        for child in module:
            inner = _records(child)
            if inner is None:
                return None
            records += inner
        return records
    if kind is NormalizedDifference:
        return [Layer("nd", module)]
    if kind is AttentionND:
        return [Layer("attnd", module)]
    if kind is RawPassthrough:
        inner = _records(module.first)
        if not inner:
            return None
        return [Layer("passthrough", module, tuple(inner))]
    if kind is nn.Linear:
        return [Layer("linear", module)]
    if kind is nn.ReLU:
        return [Layer("relu", module)]
    if kind is Standardize:
        return [Layer("standardize", module)]
    return None


def describe(module):
    """The layers of an sknd network, or None for a network with an unknown layer.

    Parameters
    ----------
    module : torch.nn.Module
        A network as :func:`build_network` returns it: an ``nn.Sequential``
        whose first element is the ND layer, the AttND block, a
        :class:`RawPassthrough` block or the MLP's ``Linear + ReLU`` block,
        optionally followed by a :class:`Standardize` layer, then ``Linear``
        and ``ReLU`` layers.

    Returns
    -------
    tuple of Layer or None
        One record per layer, nested sequences flattened; None if ``module``
        is not an ``nn.Sequential`` or holds a layer of any other type
        (subclasses included), so that no backend guesses at its meaning.

    Examples
    --------
    >>> [layer.kind for layer in describe(build_network("nd", 4, 1, depth=3))]
    ['nd', 'linear', 'relu', 'linear']
    >>> describe(nn.Sequential(nn.Tanh())) is None
    True
    """
    if type(module) is not nn.Sequential:
        return None
    records = _records(module)
    return None if not records else tuple(records)


def first_nd_layer(module):
    """The ND layer of a network's first block, or None (the MLP, or an unknown network).

    Parameters
    ----------
    module : torch.nn.Module
        A network, see :func:`describe`.

    Returns
    -------
    sknd.nn.NormalizedDifference or None

    Examples
    --------
    >>> first_nd_layer(build_network("attnd", 3, 1)).n_pairs
    3
    >>> first_nd_layer(build_network("mlp", 3, 1)) is None
    True
    """
    records = describe(module)
    return None if records is None else records[0].nd


def forward_rows(module, X, rows):
    """``module`` applied to the rows of the numpy table ``X`` in float64, ``rows`` at a time.

    A float64 copy of ``module`` runs on the module's device without gradients: a row's
    outputs then do not depend on the other rows of the table (float32 matrix products
    differ in the last bit with a row's position in the batch, which a trained output layer
    can amplify), and float64 inputs keep their precision.

    Parameters
    ----------
    module : torch.nn.Module
        Any network or part of one.
    X : ndarray of shape (n_samples, n_features)
        Inputs.
    rows : int
        Rows per forward pass (bounds the intermediates).

    Returns
    -------
    ndarray of shape (n_samples, n_outputs), float64

    Examples
    --------
    >>> net = build_network("nd", n_features=3, n_outputs=1)
    >>> forward_rows(net, np.ones((5, 3)), rows=2).shape
    (5, 1)
    """
    parameter = next(iter(module.parameters()), None)
    device = parameter.device if parameter is not None else torch.device("cpu")
    module = copy.deepcopy(module).double()
    if device.type == "cpu":
        # Intermediates that stay in the CPU caches: about twice as fast as 65,536 rows.
        rows = min(rows, _CPU_FORWARD_ROWS)
    output = None  # allocated from the first chunk's width: no list of chunks to join
    with torch.no_grad():
        for start in range(0, max(len(X), 1), rows):
            chunk = torch.tensor(X[start : start + rows], dtype=torch.float64, device=device)
            values = module(chunk).cpu().numpy()
            if output is None:
                output = np.empty((len(X),) + values.shape[1:])
            output[start : start + len(values)] = values
    return output


# Rows per forward pass (rows_per_pass): bounds the (rows x pairs) intermediates.
_MAX_ROWS_PER_PASS = 65_536
# ... and so does this many float32 elements per (rows x width) intermediate (64 MiB): with
# 250 bands (31,125 pairs, 124,500 gathered columns for "signed") that is 134 rows a pass.
_MAX_PASS_ELEMENTS = 1 << 24


def rows_per_pass(module):
    """Rows per forward pass of ``module`` that keep its intermediates small.

    The widest intermediate of the network (up to four gathered columns per band
    pair in an ND layer, else a layer's width) times the rows stays within
    2**24 values (64 MiB in float32), and at most 65,536 rows pass at once: the
    ``rows`` to give :func:`forward_rows` for tables of any length.

    Parameters
    ----------
    module : torch.nn.Module
        A network of :func:`build_network` (or a part of one).

    Returns
    -------
    int

    Examples
    --------
    >>> rows_per_pass(build_network("nd", n_features=10, n_outputs=1))
    65536
    >>> rows_per_pass(build_network("nd", n_features=300, n_outputs=1, pairs="all"))
    93
    """
    records = list(describe(module))
    width = 1
    while records:
        layer = records.pop()
        if layer.kind == "passthrough":
            records += layer.inner
        elif layer.nd is not None:
            # Up to 4 gathered columns per pair ("signed": [b_i, b_j, r_i, r_j]).
            width = max(width, 4 * layer.nd.n_pairs)
        else:
            width = max(width, layer.width)
    return int(min(_MAX_ROWS_PER_PASS, max(1, _MAX_PASS_ELEMENTS // width)))
