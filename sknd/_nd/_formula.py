"""The ND formula in numpy: the one reference every torch-free part of sknd uses.

For a band pair ``(i, j)`` with raw parameters ``a``, ``c`` and band weights
``wa = softplus(a)``, ``wc = softplus(c)``::

    N_ij = (wa x_i - wc x_j) / (wa r_i + wc r_j + epsilon)

where the layer inputs ``x`` and ``r`` depend on the variant (Remark 2.3 of
the paper):

- ``"reflectance"``: ``x = r = b`` (non-negative bands);
- ``"signed"``: ``x = b`` and ``r = sqrt(b**2 + epsilon)``, a smooth ``|b|``;
- ``"softplus"``: ``x = r = softplus(b)``.

:func:`normalized_difference` is the float64 reference of the layer. Pair
screening and the experiments' fixed-index peers (the classic index), the
numpy raster evaluator, inspection and plotting all take their softplus,
smooth ``|b|`` and formula from here. Torch and numba copies exist
for speed; :mod:`sknd.nn` lists every copy and the test that pins it.

The thresholds at which each backend switches between computing the pairs
by gathering band columns and as matrix products are kept together at the
end of this module, each with the measurement behind it.
"""

import numpy as np

__all__ = []

#: The formulations of the layer, see the module docstring.
VARIANTS = ("reflectance", "signed", "softplus")

#: Above this input, ``torch.nn.functional.softplus`` returns the input itself.
SOFTPLUS_THRESHOLD = 20.0

#: Range of ``epsilon`` (the estimators' parameter and :class:`sknd.nn.NormalizedDifference`).
#: Below about 5e-20 its square underflows float32 and all-zero rows get infinite gradients
#: (below 1e-45 it is 0 and they get 0 / 0); far above any band value it flattens every
#: index to 0.
EPSILON_RANGE = (1e-15, 1e15)


def check_variant(variant):
    """Raise a ``ValueError`` unless ``variant`` is one of :data:`VARIANTS`."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}.")


def softplus(x, out=None):
    """``log(1 + exp(x))`` with torch's semantics: ``x`` itself above the threshold.

    Never overflows; keeps the float dtype of ``x``. ``out`` must not alias ``x``.

    >>> softplus(np.array([0.0, 30.0])).round(4).tolist()
    [0.6931, 30.0]
    """
    x = np.asarray(x)
    if x.dtype.kind != "f":
        x = x.astype(np.float64)
    result = np.logaddexp(x.dtype.type(0), x, out=out)
    if result.ndim == 0:
        return x[()] if x > SOFTPLUS_THRESHOLD else result
    np.copyto(result, x, where=x > SOFTPLUS_THRESHOLD)
    return result


def log_softplus(x):
    """``log(softplus(x))`` in float64 without underflow (``softplus`` is 0 below -745).

    Below -40, ``softplus(x) = exp(x) (1 - exp(x) / 2 + ...)`` has the log ``x`` to
    double precision. Band-weight ratios ``k = softplus(a) / softplus(c)`` are read as
    ``exp(log_softplus(a) - log_softplus(c))``.

    >>> log_softplus(np.array([-1000.0, 0.0])).round(4).tolist()
    [-1000.0, -0.3665]
    """
    x = np.asarray(x, dtype=np.float64)
    return np.where(x < -40.0, x, np.log(softplus(np.maximum(x, -40.0))))


def weight_ratio(a, c):
    """``k = softplus(a) / softplus(c)`` from raw parameters: inf (no warning) on overflow.

    >>> float(weight_ratio(0.0, 0.0))
    1.0
    """
    with np.errstate(over="ignore"):
        return np.exp(log_softplus(a) - log_softplus(c))


def smooth_abs(x, epsilon, out=None):
    """``sqrt(x**2 + epsilon)``, computed as ``hypot`` so that ``x**2`` cannot overflow.

    >>> smooth_abs(np.array([-3.0, 1e200]), 16.0).tolist()
    [5.0, 1e+200]
    """
    x = np.asarray(x)
    return np.hypot(x, x.dtype.type(np.sqrt(epsilon)), out=out)


def layer_inputs(X, variant, epsilon):
    """The columns pairs are formed from: ``(x, r)`` of the module docstring."""
    check_variant(variant)
    if variant == "softplus":
        X = softplus(X)
    if variant == "signed":
        return X, smooth_abs(X, epsilon)
    return X, X


def normalized_difference(X, pairs, wa=1.0, wc=1.0, epsilon=1e-6, variant="reflectance"):
    """The ND layer's outputs in float64: the reference of every other implementation.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Bands.
    pairs : array-like of shape (n_pairs, 2)
        Band indices ``(i, j)``.
    wa, wc : array-like of shape (n_pairs,) or float, default=1.0
        Band weights of ``b_i`` and ``b_j``: ``softplus(a)`` and ``softplus(c)``
        of the layer's raw parameters. The default unit weights give the
        classic index, which the layer at initialisation (``a = c = 0``,
        weights ``log 2``) equals up to ``epsilon / log 2`` in place of
        ``epsilon``.
    epsilon : float, default=1e-6
    variant : {"reflectance", "signed", "softplus"}, default="reflectance"

    Returns
    -------
    ndarray of shape (n_samples, n_pairs)

    Examples
    --------
    >>> X = np.array([[0.5, 0.1]])
    >>> normalized_difference(X, [[0, 1]], epsilon=0.0).round(4).tolist()
    [[0.6667]]
    >>> normalized_difference(X, [[0, 1]], 2.0, 1.0, epsilon=0.0).round(4).tolist()
    [[0.8182]]
    """
    X = np.asarray(X, dtype=np.float64)
    pairs = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
    wa = np.asarray(wa, dtype=np.float64)
    wc = np.asarray(wc, dtype=np.float64)
    x, r = layer_inputs(X, variant, epsilon)
    i, j = pairs[:, 0], pairs[:, 1]
    numerator = wa * x[:, i] - wc * x[:, j]
    return numerator / (wa * r[:, i] + wc * r[:, j] + epsilon)


def classic_index(X, pairs, epsilon=1e-6, variant="reflectance"):
    """The classic (unit-weight) index ``(b_i - b_j) / (b_i + b_j + epsilon)`` of every pair.

    >>> classic_index(np.array([[3.0, 1.0]]), [[0, 1]], epsilon=0.0).tolist()
    [[0.5]]
    """
    return normalized_difference(X, pairs, epsilon=epsilon, variant=variant)


# ------------------------------------------------------------------ formulations
# Each backend computes the same formula either by gathering the two band columns of
# every pair (O(n_pairs) work per sample) or as products with sparse-in-dense
# (n_inputs, n_pairs) weight matrices (O(n_inputs n_pairs) work, but one fast GEMM).
# Which wins depends on the backend, so each has its own threshold, measured there:

#: torch layer (sknd.nn, ``method="auto"``): matrix products up to this many layer inputs
#: (bands, or twice the bands for ``variant="signed"``), gathering above: in
#: benchmarks/bench_layer.py (forward+backward, 1 thread) matmul beat gathering at large
#: batches and matched it at small ones up to this many inputs, and fell behind beyond
#: (benchmarks/RESULTS.md, "Target 1: the ND layer alone", its crossover).
TORCH_MATMUL_MAX_INPUTS = 32

#: Fused training step (sknd._training._fused): below this batch size the ND layer gathers even
#: where the layer's "auto" would multiply: at small batches the weight construction of the
#: two GEMMs costs as many operations as the gather itself, and whole fits on 10 bands ran
#: faster gathering (benchmarks/RESULTS.md, "Target 1: the ND layer alone").
FUSED_MATMUL_MIN_BATCH = 1024

#: Numpy evaluator (sknd._inference._evaluator, raster inference without numba): GEMMs up to this
#: many bands, gathering above. Per pixel with all pairs, the GEMM form was still the faster
#: at this many bands, numpy's column gathers being slow (benchmarks/RESULTS.md, "Figures
#: moved out of the code"); beyond, its weights grow as n_bands^3.
NUMPY_GEMM_MAX_BANDS = 128
