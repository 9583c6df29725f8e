"""Compiled kernels of the ND layer for raster inference (need the optional numba).

:mod:`sknd.raster` evaluates fitted networks with numpy. With numpy, the ND
layer of a ``(n_pixels, n_bands)`` table costs two GEMMs against mostly-zero
``(n_bands, n_pairs)`` weights plus whole-array passes for epsilon and the
division, each reading and writing ``n_pixels x n_pairs`` values. These kernels
compute each pair's index in a single pass over tiles of pixels held in
cache; :mod:`sknd.raster` uses them when numba is installed (the ``fast``
extra) and falls back to numpy otherwise.

The pixel table is read in its own dtype (:data:`INPUT_DTYPES`) and converted
tile by tile, in cache, to the dtype of the weights, in which everything is
computed: exactly what casting the whole table first would give, without
writing it to memory. With one output the dense layer is summed in the same
pass as the division, pair by pair in order, so that the sums are those of
numpy's evaluator written one pair at a time. What bounds a depth-2 model is
then the division itself, vectorized over the pixels of a tile (see
benchmarks/RESULTS.md).

The kernels release the GIL, so chunks run in parallel threads. Compiled code
is cached on disk by numba (``cache=True``): only the first call on a machine
pays the compilation (1-2 s per pair of dtypes).
"""

import math

import numpy as np
from numba import njit

from ._formula import SOFTPLUS_THRESHOLD, VARIANTS

__all__ = [
    "INPUT_DTYPES",
    "VARIANT_CODES",
    "normalized_differences",
    "normalized_differences_dense",
]

#: Integer codes of the layer variants, as the kernel takes them: positions in VARIANTS.
VARIANT_CODES = {variant: code for code, variant in enumerate(VARIANTS)}

#: Dtypes of pixel tables the kernels read as they are (native byte order, C-contiguous).
#: Each converts exactly to float64, and float32 to itself.
INPUT_DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.uint8, np.uint16, np.int16))

# Pixels per tile: the tile's bands, transposed, stay in the L1 cache.
_TILE = 256


# error_model="numpy": a division by zero gives inf/NaN instead of raising, which
# lets LLVM vectorize the loops over pixels.
_jit = njit(nogil=True, cache=True, error_model="numpy", boundscheck=False)
# The loops over a tile's pixels, one per variant, each inlined into a loop over the pairs
# that has no branch: with the variant tested inside the loop over the pairs, the division
# loop ran about 40 % slower although it was vectorized the same.
_inline = njit(inline="always")


@_jit
def normalized_differences(X, first, second, wa, wc, epsilon, variant, out):
    """Write the ND outputs of the pixel table ``X`` into ``out``, transposed.

    Parameters
    ----------
    X : ndarray of shape (n_pixels, n_bands), C-contiguous, a dtype of INPUT_DTYPES
        Pixel table.
    first, second : ndarray of shape (n_pairs,), intp
        Bands ``i`` and ``j`` of every pair.
    wa, wc : ndarray of shape (n_pairs,), float32 or float64
        ``softplus(a)`` and ``softplus(c)`` of every pair: their dtype is the
        one computed in.
    epsilon : float
        The layer's epsilon, in the dtype of ``wa``.
    variant : int
        ``VARIANT_CODES[variant]``.
    out : ndarray of shape (n_pairs, n_pixels), dtype of ``wa``
        Receives ``(wa x_i - wc x_j) / (wa b_i + wc b_j + epsilon)`` with
        ``b = x`` (``"reflectance"``), ``b = sqrt(x**2 + epsilon)``
        (``"signed"``), or ``x = b = softplus(x)`` (``"softplus"``).
    """
    n_pixels, n_bands = X.shape
    numerator_bands = np.empty((n_bands, _TILE), dtype=wa.dtype)
    denominator_bands = np.empty((n_bands, _TILE), dtype=wa.dtype)
    for start in range(0, n_pixels, _TILE):
        size = min(_TILE, n_pixels - start)
        _load_tile(X, start, size, variant, epsilon, numerator_bands, denominator_bands)
        _pairs_tile(
            numerator_bands, denominator_bands, first, second, wa, wc, epsilon, variant,
            start, size, out,
        )  # fmt: skip


@_jit
def normalized_differences_dense(
    X, first, second, wa, wc, epsilon, variant, weight, bias, out
):  # fmt: skip
    """Write ``weight @ ND(X).T + bias`` into ``out``: an ND layer and the dense layer after it.

    The ND outputs of a tile never leave the cache. Every output sums the
    bias and then ``weight[output, pair] * ND`` pair by pair, in order.
    Parameters as :func:`normalized_differences`, and

    weight : ndarray of shape (n_outputs, n_pairs), dtype of ``wa``
    bias : ndarray of shape (n_outputs,), dtype of ``wa``
    out : ndarray of shape (n_outputs, n_pixels), dtype of ``wa``
    """
    n_pixels, n_bands = X.shape
    numerator_bands = np.empty((n_bands, _TILE), dtype=wa.dtype)
    denominator_bands = np.empty((n_bands, _TILE), dtype=wa.dtype)
    n_outputs = weight.shape[0]
    # Several outputs: the ND outputs of the tile first (one output: summed on the fly).
    values = np.empty((first.shape[0] if n_outputs > 1 else 0, _TILE), dtype=wa.dtype)
    for start in range(0, n_pixels, _TILE):
        size = min(_TILE, n_pixels - start)
        _load_tile(X, start, size, variant, epsilon, numerator_bands, denominator_bands)
        if n_outputs == 1:
            row = out[0, start : start + size]
            row[:] = bias[0]
            _pairs_sum_tile(
                numerator_bands, denominator_bands, first, second, wa, wc, epsilon, variant,
                weight[0], size, row,
            )  # fmt: skip
        else:
            _pairs_tile(
                numerator_bands, denominator_bands, first, second, wa, wc, epsilon, variant,
                0, size, values,
            )  # fmt: skip
            _dense_tile(values, weight, bias, start, size, out)


@_jit
def _load_tile(X, start, size, variant, epsilon, numerator_bands, denominator_bands):
    """Transpose ``size`` pixels from ``start`` into the band rows of the tile, converted.

    Pixel by pixel (contiguous reads), then each variant's step band by band in
    a loop of its own, without branches, which LLVM vectorizes.
    """
    n_bands = X.shape[1]
    for t in range(size):
        for band in range(n_bands):
            numerator_bands[band, t] = X[start + t, band]
    if variant == 2:
        for band in range(n_bands):
            x = numerator_bands[band]
            for t in range(size):
                if x[t] <= SOFTPLUS_THRESHOLD:
                    x[t] = math.log1p(math.exp(x[t]))
    elif variant == 1:
        for band in range(n_bands):
            # sknd._formula.smooth_abs without hypot: validated bands are within 1e15
            # (sknd._validation), so x * x cannot overflow float32.
            x, b = numerator_bands[band], denominator_bands[band]
            for t in range(size):
                b[t] = math.sqrt(x[t] * x[t] + epsilon)


@_jit
def _pairs_tile(x, b, first, second, wa, wc, epsilon, variant, start, size, out):
    """The ND outputs of every pair for the tile's pixels, into ``out`` from ``start``.

    ``x`` and ``b`` are the numerator and denominator bands of the tile (see :func:`_load_tile`).
    """
    if variant == 1:
        for pair in range(first.shape[0]):
            i, j, row = first[pair], second[pair], out[pair, start : start + size]
            _signed(x[i], x[j], b[i], b[j], wa[pair], wc[pair], epsilon, size, row)
    else:
        for pair in range(first.shape[0]):
            i, j, row = first[pair], second[pair], out[pair, start : start + size]
            _plain(x[i], x[j], wa[pair], wc[pair], epsilon, size, row)


@_jit
def _pairs_sum_tile(x, b, first, second, wa, wc, epsilon, variant, weight, size, row):
    """Add ``weight[pair]`` times the ND output of every pair to ``row``, pair by pair in order."""
    if variant == 1:
        for pair in range(first.shape[0]):
            i, j = first[pair], second[pair]
            _signed_sum(
                x[i], x[j], b[i], b[j], wa[pair], wc[pair], epsilon, weight[pair], size, row
            )
    else:
        for pair in range(first.shape[0]):
            i, j = first[pair], second[pair]
            _plain_sum(x[i], x[j], wa[pair], wc[pair], epsilon, weight[pair], size, row)


@_jit
def _dense_tile(values, weight, bias, start, size, out):
    """``weight @ values + bias`` for the tile's pixels, into ``out`` from ``start``."""
    for output in range(weight.shape[0]):
        row = out[output, start : start + size]
        row[:] = bias[output]
        for pair in range(values.shape[0]):
            w, value = weight[output, pair], values[pair]
            for t in range(size):
                row[t] = row[t] + w * value[t]


@_inline
def _plain(x_i, x_j, a, c, epsilon, size, row):
    """``(a x_i - c x_j) / (a x_i + c x_j + epsilon)`` ("reflectance", "softplus")."""
    for t in range(size):
        u = a * x_i[t]
        v = c * x_j[t]
        row[t] = (u - v) / (u + v + epsilon)


@_inline
def _signed(x_i, x_j, b_i, b_j, a, c, epsilon, size, row):
    """``(a x_i - c x_j) / (a b_i + c b_j + epsilon)`` ("signed")."""
    for t in range(size):
        row[t] = (a * x_i[t] - c * x_j[t]) / (a * b_i[t] + c * b_j[t] + epsilon)


@_inline
def _plain_sum(x_i, x_j, a, c, epsilon, w, size, row):
    """:func:`_plain` times ``w``, added to ``row``."""
    for t in range(size):
        u = a * x_i[t]
        v = c * x_j[t]
        row[t] = row[t] + w * ((u - v) / (u + v + epsilon))


@_inline
def _signed_sum(x_i, x_j, b_i, b_j, a, c, epsilon, w, size, row):
    """:func:`_signed` times ``w``, added to ``row``."""
    for t in range(size):
        row[t] = row[t] + w * ((a * x_i[t] - c * x_j[t]) / (a * b_i[t] + c * b_j[t] + epsilon))
