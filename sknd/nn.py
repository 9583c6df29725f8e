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

Where the formula is written
----------------------------
Once per dialect, each copy pinned by a test against the numpy reference or
against autograd:

- numpy, float64 reference: :func:`sknd._nd._formula.normalized_difference`
  (with the variants, ``softplus`` and the smooth ``|b|``); used by pair
  screening, the experiments' fixed-index peers and inspection.
- torch forward and closed-form backward: :mod:`sknd._nd._torch`, in a
  gather and a matmul formulation (and one reading band slices, for images
  and series), called by the layer's autograd function
  (:mod:`sknd._nd._autograd`) and by the fused training step
  (:mod:`sknd._training._fused`, which adds the backward of softplus, the dense layers
  and the losses). Pinned by tests/nd/test_nn.py (gradcheck, reference formula)
  and tests/nd/test_networks.py (fused gradients equal autograd's).
- numpy inference (GEMM or gather) and numba kernels (:mod:`sknd._inference._evaluator`,
  :mod:`sknd._nd._kernels`, whose compiled loops all inline one ``_index``):
  raster prediction of fitted models, several times faster per pixel than torch
  (benchmarks/RESULTS.md, "Raster prediction").
  Pinned by tests/nd/test_networks.py (torch forward equals both, for every
  architecture, variant and task) and tests/inference/test_kernels.py.
- ONNX models (:func:`sknd.onnx.to_onnx`): no copy of the formula, the
  exporter traces the :mod:`sknd._nd._torch` forward (whose smooth ``|b|``
  avoids ``hypot``, which ONNX lacks, while exporting). Pinned by
  tests/export/test_onnx.py (onnxruntime equals the estimators' methods).
- formula strings (numpy, Earth Engine, LaTeX, text) written by
  :func:`sknd.inspection.export_formulas`, pinned by tests/test_inspection.py
  (the exported numpy formula reproduces ``transform``).
- whole-model exports (``export_model``), pinned by tests/export/test_export.py (each
  export equals :class:`sknd.SavedModel`): openEO process graphs, the formula
  as scalar arithmetic in :mod:`sknd._export._program`; Earth Engine
  code, the layer as two products of pair weight matrices and a quotient on
  array images (:mod:`sknd._export._earthengine`, run through
  tests/ee_numpy.py); openEO ``run_udf`` processes, a numpy copy in the UDF's
  source (:mod:`sknd._export._udf`, which runs on back-ends without
  sknd).
"""

import numbers

import torch
from torch import nn

from ._nd._autograd import nd_forward
from ._nd._formula import EPSILON_RANGE, TORCH_MATMUL_MAX_INPUTS, VARIANTS, check_variant
from ._nd._pairs import all_pairs, band_pair_indices, named_pairs, resolve_pairs
from ._nd._torch import PairPlan, is_compiling
from .bands import resolve_bands

__all__ = [
    "MATMUL_MAX_INPUTS",
    "METHODS",
    "VARIANTS",
    "NormalizedDifference",
    "all_pairs",
    "normalized_difference",
    "resolve_pairs",
]


#: Methods of :func:`normalized_difference`, see there.
METHODS = ("auto", "gather", "matmul")

#: ``method="auto"`` computes the layer as matrix products up to this many layer inputs
#: (bands, or twice the bands for ``variant="signed"``) and by gathering band columns
#: above (the measurement is given where the constant is defined, in :mod:`sknd._nd._formula`).
MATMUL_MAX_INPUTS = TORCH_MATMUL_MAX_INPUTS


def _check_method(method):
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}.")


#: Inputs beyond this magnitude are computed in float64 (see ``check_input``): with band
#: weights up to 1e8, float32 sums stay finite below it.
_HUGE_INPUT = 1e30

#: Infinite inputs (and float64 ones beyond it) are computed as this value: their limit.
_INFINITE_AS = 1e300


def normalized_difference(
    x, a, c, pairs, epsilon=1e-6, variant="reflectance", method="auto", dim=1
):
    """Learnable normalized differences of band pairs (functional form).

    Parameters
    ----------
    x : torch.Tensor of shape (n_samples, n_features) or (n_samples, n_features, ...)
        Input bands, along axis ``dim``.
    a, c : torch.Tensor of shape (n_pairs,)
        Raw parameters; the band weights are ``softplus(a)`` and ``softplus(c)``.
    pairs : torch.Tensor of shape (n_pairs, 2)
        Integer band indices ``(i, j)`` of each pair.
    epsilon : float, default=1e-6
        Stabilising constant of the denominator (and of the smooth absolute
        value in the ``"signed"`` variant).
    variant : {"reflectance", "signed", "softplus"}, default="reflectance"
        Formulation, see the module docstring.
    method : {"auto", "gather", "matmul"}, default="auto"
        How the outputs are computed; all give the same values up to rounding
        and exact closed-form gradients. ``"gather"`` takes the two band
        columns of every pair (memory traffic ``O(n_pairs)`` per sample);
        ``"matmul"`` computes all numerators and denominators as one matrix
        product with a sparse-in-dense ``(n_features, 2 n_pairs)`` weight
        matrix (``O(n_features n_pairs)`` flops per sample, but one fast
        GEMM). ``"auto"`` uses ``"matmul"`` up to :data:`MATMUL_MAX_INPUTS`
        layer inputs. On images and series (positions after the bands),
        ``"auto"`` and ``"gather"`` read the bands of each run of pairs
        ``(i, j), (i, j + 1), ...`` as slices of the input, with no gathered
        copy, and keep the denominator for the backward pass (in eager mode;
        ``torch.compile`` and ``torch.export`` trace the two forms above).
    dim : int, default=1
        Axis of ``x`` holding the bands: 1 for ``(N, C)`` tables, ``(N, C, H,
        W)`` images and ``(N, C, T)`` series; -1 for channels-last layouts.

    Returns
    -------
    torch.Tensor
        ``x``'s shape with ``n_pairs`` in place of ``n_features`` along
        ``dim``; values in ``[-1, 1]``.

    Examples
    --------
    >>> x = torch.tensor([[0.5, 0.1]])
    >>> pairs = torch.tensor([[0, 1]])
    >>> zero = torch.zeros(1)
    >>> round(normalized_difference(x, zero, zero, pairs, epsilon=0.0).item(), 4)
    0.6667
    """
    check_variant(variant)
    _check_method(method)
    n_features = x.shape[dim]

    def plan_of(dtype, device):
        return PairPlan(pairs, n_features, variant, float(epsilon), dtype, device)

    return nd_forward(x, a, c, dim, plan_of, method)


def _band_layout(n_features, pairs, bands, sensor, name):
    """``(n_features, pairs, band names or None)`` of a layer; names resolved by sknd.bands."""
    if bands is None:
        if sensor is not None:
            raise ValueError(
                f"{name}(sensor={sensor!r}) needs bands=[...]: the names of the input's "
                "channels, in their order."
            )
        if n_features is None:
            raise TypeError(f"{name} needs n_features (the number of bands) or bands=[...].")
        try:
            named = not isinstance(pairs, str) and named_pairs(pairs)
        except TypeError:  # not pairs: resolve_pairs says so
            named = False
        if named:
            raise ValueError(
                f"{name} got pairs by name, {pairs!r}, but no band names: pass "
                "bands=[...], the names of the input's channels in their order, e.g. "
                "bands=['blue', 'green', 'red', 'nir']."
            )
        return n_features, pairs, None
    resolved = resolve_bands(bands, n_features=n_features, sensor=sensor)
    return len(resolved), band_pair_indices(pairs, resolved), tuple(b.name for b in resolved)


def _version_of(tensor):
    """The tensor's in-place version counter: it grows with every in-place change.

    torch's own counter (``Tensor._version``, what autograd checks saved tensors with)
    has no public name; tests/nd/test_nn.py::test_pair_plan_follows_in_place_changes_of_pairs
    fails loudly if it stops counting.
    """
    return tensor._version


class NormalizedDifference(nn.Module):
    """Normalized Difference layer with learnable band weights.

    Parameters
    ----------
    n_features : int, default=None
        Number of input bands; by default the length of ``bands``.
    pairs : "all" or array-like of shape (n_pairs, 2), default="all"
        Band pairs to compute: ``(i, j)`` band positions or, with ``bands``,
        band names, e.g. ``[("nir", "red")]``. ``"all"`` uses every pair
        ``i < j`` in :func:`itertools.combinations` order.
    epsilon : float, default=1e-6
        Stabilising constant, in ``[1e-15, 1e15]`` (as the estimators'
        ``epsilon``).
    variant : {"reflectance", "signed", "softplus"}, default="reflectance"
        ``"reflectance"`` expects non-negative inputs (bands of a spectrum);
        ``"signed"`` and ``"softplus"`` accept any real input.
    method : {"auto", "gather", "matmul"}, default="auto"
        How the outputs are computed, see :func:`normalized_difference`.
    dim : int, default=1
        Axis of the input holding the bands. The default reads ``(N, C)``
        tables, ``(N, C, H, W)`` image patches and ``(N, C, T)`` series (the
        layout of ``nn.Conv2d``), computing every pair at every pixel with the
        output's ``n_pairs`` channels in place of the bands; ``-3`` reads
        unbatched ``(C, H, W)`` images and ``(N, C, H, W)`` batches alike;
        ``-1`` reads channels-last layouts such as ``(N, H, W, C)``. The
        result equals the layer applied pixel by pixel.
    check_input : bool, default=True
        Check each input in eager mode with one reduction (its minimum and
        maximum): NaN raises a ``ValueError``, and so does a negative value
        for ``variant="reflectance"``, whose outputs are only bounded for
        non-negative inputs (stacked on another ND layer, use ``"signed"``).
        Inputs holding values beyond ``1e30`` in magnitude (where float32
        sums overflow into ``inf / inf``) are computed in float64, with
        infinite values (and any beyond ``1e300``) taken as ``+-1e300``: the
        outputs are then the limits (``N = 1`` for an infinite ``b_i`` and a
        finite ``b_j``) and the pixel's other indices are unaffected. The
        check reads the values back to the host (a synchronisation on a
        GPU); ``False`` skips it, and with it this handling. Skipped under
        ``torch.compile`` and ``torch.export``, which trace no data-dependent
        branches.
    bands : sequence of str, default=None
        Names of the input's bands, in order, so that ``pairs`` can name
        them: the estimators' vocabulary of :mod:`sknd.bands` (exact names,
        common names such as ``"red"`` or ``"nir"``, and a ``sensor``'s
        spellings). An unknown name or a pair naming one band twice raises a
        ``ValueError``.
    sensor : str, default=None
        Sensor preset of ``bands`` (see :func:`sknd.bands.get_sensor`), e.g.
        ``"sentinel2"``: ``bands=["B2", "B3", "B4", "B8"]`` then also answer
        to ``"blue"`` ... ``"nir"``.

    Attributes
    ----------
    a, c : torch.nn.Parameter of shape (n_pairs,)
        Raw parameters, initialised at 0 so that the untrained layer is the
        classic normalized difference.
    pairs : torch.Tensor of shape (n_pairs, 2)
        The band pairs (a buffer, saved with the state dict).
    bands : tuple of str or None
        The band names given, or None.
    sensor : str or None
        The sensor preset given, which names the bands' common names in
        :func:`sknd.inspection.index_table` and :mod:`sknd.plotting` (they read
        a trained layer as they read a fitted estimator).
    n_pairs, n_outputs : int
        Number of band pairs, which is the number of output channels.

    See Also
    --------
    NormalizedDifference.from_estimator : The layer an sknd estimator learned.

    Examples
    --------
    >>> layer = NormalizedDifference(4)
    >>> layer(torch.rand(8, 4)).shape
    torch.Size([8, 6])

    Image patches ``(N, C, H, W)``, every pair at every pixel:

    >>> layer(torch.rand(2, 4, 16, 16)).shape
    torch.Size([2, 6, 16, 16])

    Stacked on another ND layer, whose outputs are signed:

    >>> deep = nn.Sequential(layer, NormalizedDifference(6, variant="signed"))
    >>> deep(torch.rand(8, 4)).shape
    torch.Size([8, 15])

    Bands and pairs by name, and one unbatched ``(C, H, W)`` image:

    >>> ndvi = NormalizedDifference(
    ...     bands=["blue", "green", "red", "nir"], pairs=[("nir", "red")], dim=-3
    ... )
    >>> ndvi.pairs.tolist()
    [[3, 2]]
    >>> ndvi(torch.rand(4, 16, 16)).shape
    torch.Size([1, 16, 16])
    """

    def __init__(
        self,
        n_features=None,
        pairs="all",
        epsilon=1e-6,
        variant="reflectance",
        method="auto",
        dim=1,
        check_input=True,
        *,
        bands=None,
        sensor=None,
    ):
        super().__init__()
        n_features, pairs, bands = _band_layout(
            n_features, pairs, bands, sensor, type(self).__name__
        )
        check_variant(variant)
        if isinstance(n_features, bool) or not isinstance(n_features, numbers.Integral):
            raise TypeError(f"n_features must be an int (the number of bands), got {n_features!r}.")
        if n_features < 2:
            raise ValueError(
                f"n_features must be at least 2: a normalized difference combines two bands, "
                f"got {n_features} (a layer without outputs)."
            )
        low, high = EPSILON_RANGE
        if (
            isinstance(epsilon, bool)
            or not isinstance(epsilon, numbers.Real)
            or not (low <= epsilon <= high)
        ):
            raise ValueError(
                f"epsilon must be a number in [{low:g}, {high:g}], got {epsilon!r}: below, its "
                "square underflows float32 (all-zero pixels get infinite gradients); above, "
                "it flattens every index to 0."
            )
        _check_method(method)
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise TypeError(f"dim must be an int (the axis of the bands), got {dim!r}.")
        pairs = torch.as_tensor(resolve_pairs(n_features, pairs))
        self.n_features = n_features
        self.epsilon = float(epsilon)
        self.variant = variant
        self.method = method
        self.dim = dim
        self.check_input = bool(check_input)
        self.bands = bands
        self.sensor = sensor
        self.register_buffer("pairs", pairs)
        self.a = nn.Parameter(torch.zeros(len(pairs)))
        self.c = nn.Parameter(torch.zeros(len(pairs)))
        self._plans = {}

    @classmethod
    def from_estimator(cls, estimator, *, dim=1, method="auto", check_input=True):
        """The ND layer a fitted sknd estimator learned: its pairs, weights and bands.

        A torch model (a CNN on image patches, say) then starts from the
        indices the estimator found on a pixel table instead of from the
        classic ones. Only the layer is taken: not the dense layers, the
        default recipe's standardization of its outputs, nor an AttND gate.

        Parameters
        ----------
        estimator : NDClassifier, NDRegressor or NDTransformer
            Fitted, with an ND layer (not ``architecture="mlp"``).
        dim, method, check_input
            As for the constructor.

        Returns
        -------
        layer : NormalizedDifference
            A new layer with the estimator's ``pairs_``, ``coef_a_`` and
            ``coef_c_`` (its outputs in the order of ``indices_``),
            ``epsilon_``, ``variant_`` and band names.

        Raises
        ------
        ValueError
            If the estimator is not fitted or has no ND layer.

        Examples
        --------
        >>> import numpy as np
        >>> from sknd import NDClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(0.05, 0.5, size=(200, 4))
        >>> y = (X[:, 3] > X[:, 2]).astype(int)
        >>> clf = NDClassifier(max_epochs=5, random_state=0).fit(X, y)
        >>> layer = NormalizedDifference.from_estimator(clf)
        >>> layer(torch.rand(2, 4, 8, 8)).shape
        torch.Size([2, 6, 8, 8])
        """
        name = type(estimator).__name__
        if not hasattr(estimator, "pairs_"):
            raise ValueError(
                f"This {name} instance is not fitted yet: call fit before "
                "NormalizedDifference.from_estimator."
            )
        if len(estimator.pairs_) == 0:
            raise ValueError(
                f"This {name} has no ND layer (architecture={estimator.architecture!r}): "
                "fit it with architecture='nd' or 'attnd'."
            )
        layer = cls(
            pairs=estimator.pairs_,
            epsilon=estimator.epsilon_,
            variant=estimator.variant_,
            method=method,
            dim=dim,
            check_input=check_input,
            bands=[str(band) for band in estimator.band_names_],
        )
        with torch.no_grad():
            layer.a.copy_(torch.as_tensor(estimator.coef_a_))
            layer.c.copy_(torch.as_tensor(estimator.coef_c_))
        return layer

    @property
    def n_pairs(self):
        """Number of band pairs, i.e. of outputs."""
        return self.pairs.shape[0]

    @property
    def n_outputs(self):
        """Number of output channels, ``n_pairs`` (as every sknd layer names its width)."""
        return self.n_pairs

    def pair_plan(self, dtype, device):
        """The pair layout (index tensors) for this dtype and device, cached.

        Rebuilt when ``pairs`` changes; the fused training step uses the same
        layout as the layer's forward pass.

        Parameters
        ----------
        dtype : torch.dtype
            Dtype of the inputs.
        device : torch.device
            Device of the inputs.

        Returns
        -------
        sknd._nd._torch.PairPlan
        """
        key = (dtype, device, self.pairs.data_ptr(), _version_of(self.pairs))
        plan = self._plans.get(key)
        if plan is None:
            plan = PairPlan(self.pairs, self.n_features, self.variant, self.epsilon, dtype, device)
            self._plans = {key: plan}
        return plan

    def _plan_of(self, dtype, device):
        if is_compiling():
            # Traced once into the graph: no cache keyed on storage addresses.
            return PairPlan(self.pairs, self.n_features, self.variant, self.epsilon, dtype, device)
        return self.pair_plan(dtype, device)

    def forward(self, x):
        if self._check(x):
            # Beyond float32's sums: in float64, infinities as a large finite value (limits).
            wide = x.to(torch.float64).clamp(-_INFINITE_AS, _INFINITE_AS)
            out = nd_forward(wide, self.a, self.c, self.dim, self._plan_of, self.method)
            return out.to(x.dtype)
        return nd_forward(x, self.a, self.c, self.dim, self._plan_of, self.method)

    def _check(self, x):
        """Clear errors for inputs the layer cannot compute (see ``check_input``).

        Returns whether ``x`` holds values beyond :data:`_HUGE_INPUT` (or infinite).
        """
        name = type(self).__name__
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} expects a torch.Tensor, got {type(x).__name__}.")
        if not x.is_floating_point():
            raise TypeError(
                f"{name} expects floating-point band values, got a tensor of {x.dtype}: "
                "convert it first, e.g. x.float() (scaled to reflectance if it holds "
                "digital numbers)."
            )
        if x.dim() < 2:
            raise ValueError(
                f"{name} expects a batch, (N, C) or (N, C, ...) with the bands along "
                f"dim={self.dim}, got a tensor of shape {tuple(x.shape)}: add a batch "
                "axis, e.g. x.unsqueeze(0)."
            )
        if not -x.dim() <= self.dim < x.dim():
            raise ValueError(
                f"{name}(dim={self.dim}) cannot read the bands of a {x.dim()}-D input of "
                f"shape {tuple(x.shape)}: dim must be in [{-x.dim()}, {x.dim() - 1}]."
            )
        self._check_bands_axis(x)
        if not self.check_input or is_compiling() or x.numel() == 0:
            return False
        return self._check_values(x)

    def _check_bands_axis(self, x):
        """A clear error when ``x`` does not hold the layer's bands along ``dim``."""
        name = type(self).__name__
        if x.shape[self.dim] != self.n_features:
            if x.dim() == 3 and x.shape[0] == self.n_features and self.dim == 1:
                raise ValueError(
                    f"{name} expects {self.n_features} bands along dim=1, got shape "
                    f"{tuple(x.shape)}: an unbatched (C, H, W) image? Build the layer with "
                    "dim=-3, which reads (C, H, W) and (N, C, H, W) alike, or add a batch "
                    "axis, x.unsqueeze(0)."
                )
            raise ValueError(
                f"{name} expects {self.n_features} bands along dim={self.dim}, got shape "
                f"{tuple(x.shape)} ({x.shape[self.dim]} there). Pass the bands it was "
                "built for, or set dim to the axis that holds them (dim=1 for (N, C, H, W), "
                "dim=-1 for channels-last)."
            )

    def _check_values(self, x):
        """A clear error for NaN, and for negative values under ``variant="reflectance"``;
        whether ``x`` holds values beyond :data:`_HUGE_INPUT`."""
        name = type(self).__name__
        low, high = (float(value) for value in torch.aminmax(x.detach()))
        if low != low:
            raise ValueError(
                f"{name} got NaN in its input: fill or mask missing band values first."
            )
        if low < 0 and self.variant == "reflectance":
            mean, std = float(x.detach().mean()), float(x.detach().std())
            if abs(mean) < 0.5 and 0.5 < std < 2:
                raise ValueError(
                    f"{name}(variant='reflectance') needs non-negative band values, got a "
                    f"minimum of {low:.4g}, and the input looks standardized (mean "
                    f"{mean:.2g}, standard deviation {std:.2g}). Put the layer before the "
                    "normalization, on the band values themselves (e.g. "
                    "nn.Sequential(NormalizedDifference(...), nn.BatchNorm2d(n_pairs))): a "
                    "normalized difference of standardized bands is no longer an index of "
                    "the spectrum (it depends on the normalization's means, and is unbounded "
                    "near zero sums). variant='signed' computes it anyway."
                )
            raise ValueError(
                f"{name}(variant='reflectance') needs non-negative band values, got a "
                f"minimum of {low:.4g}; its outputs are only bounded in [-1, 1] for "
                "non-negative inputs. For signed inputs, such as the outputs of another ND "
                "layer, use variant='signed' or 'softplus' (check_input=False skips this "
                "check)."
            )
        return max(-low, high) > _HUGE_INPUT

    def __getstate__(self):
        # The plans are caches of index tensors: rebuilt on first use, never pickled.
        state = super().__getstate__()
        state["_plans"] = {}
        return state

    def extra_repr(self):
        bands = "" if self.bands is None else f", bands={list(self.bands)}"
        return (
            f"n_features={self.n_features}, n_pairs={self.n_pairs}, "
            f"epsilon={self.epsilon:g}, variant={self.variant!r}, dim={self.dim}{bands}"
        )
