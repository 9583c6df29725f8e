"""Compiled kernels of the ND layer for raster inference (need the optional numba).

:mod:`sknd.raster` evaluates fitted networks with numpy. With numpy, the ND
layer of a ``(n_pixels, n_bands)`` table costs two GEMMs against mostly-zero
``(n_bands, n_pairs)`` weights plus whole-array passes for epsilon and the
division, each reading and writing ``n_pixels x n_pairs`` values. This kernel
computes each pair's index in a single pass over tiles of pixels held in
cache, about 3.5x faster per pixel; :mod:`sknd.raster` uses it when numba is
installed (the ``fast`` extra) and falls back to numpy otherwise.

The kernel releases the GIL, so chunks run in parallel threads. Compiled code
is cached on disk by numba (``cache=True``): only the first call on a machine
pays the compilation (1-2 s per dtype).
"""

import math

import numpy as np
from numba import njit

from ._formula import SOFTPLUS_THRESHOLD, VARIANTS

__all__ = ["VARIANT_CODES", "normalized_differences", "normalized_differences_dense"]

#: Integer codes of the layer variants, as the kernel takes them: positions in VARIANTS.
VARIANT_CODES = {variant: code for code, variant in enumerate(VARIANTS)}

# Pixels per tile: the tile's bands, transposed, stay in the L1 cache.
_TILE = 256


# error_model="numpy": a division by zero gives inf/NaN instead of raising, which
# lets LLVM vectorize the loops over pixels.
_jit = njit(nogil=True, cache=True, error_model="numpy", boundscheck=False)


@_jit
def normalized_differences(X, first, second, wa, wc, epsilon, variant, out):
    """Write the ND outputs of the pixel table ``X`` into ``out``, transposed.

    Parameters
    ----------
    X : ndarray of shape (n_pixels, n_bands), C-contiguous, float32 or float64
        Pixel table.
    first, second : ndarray of shape (n_pairs,), intp
        Bands ``i`` and ``j`` of every pair.
    wa, wc : ndarray of shape (n_pairs,), dtype of ``X``
        ``softplus(a)`` and ``softplus(c)`` of every pair.
    epsilon : float
        The layer's epsilon, in the dtype of ``X``.
    variant : int
        ``VARIANT_CODES[variant]``.
    out : ndarray of shape (n_pairs, n_pixels), dtype of ``X``
        Receives ``(wa x_i - wc x_j) / (wa b_i + wc b_j + epsilon)`` with
        ``b = x`` (``"reflectance"``), ``b = sqrt(x**2 + epsilon)``
        (``"signed"``), or ``x = b = softplus(x)`` (``"softplus"``).
    """
    n_pixels, n_bands = X.shape
    numerator_bands = np.empty((n_bands, _TILE), dtype=X.dtype)
    denominator_bands = np.empty((n_bands, _TILE), dtype=X.dtype)
    for start in range(0, n_pixels, _TILE):
        size = min(_TILE, n_pixels - start)
        _load_tile(X, start, size, variant, epsilon, numerator_bands, denominator_bands)
        for pair in range(first.shape[0]):
            _pair_tile(
                numerator_bands, denominator_bands, first[pair], second[pair], wa[pair],
                wc[pair], epsilon, variant, size, out[pair, start : start + size],
            )  # fmt: skip


@_jit
def normalized_differences_dense(
    X, first, second, wa, wc, epsilon, variant, weight, bias, out
):  # fmt: skip
    """Write ``weight @ ND(X).T + bias`` into ``out``: an ND layer and the dense layer after it.

    The ND outputs of a tile never leave the cache. Parameters as
    :func:`normalized_differences`, and

    weight : ndarray of shape (n_outputs, n_pairs), dtype of ``X``
    bias : ndarray of shape (n_outputs,), dtype of ``X``
    out : ndarray of shape (n_outputs, n_pixels), dtype of ``X``
    """
    n_pixels, n_bands = X.shape
    numerator_bands = np.empty((n_bands, _TILE), dtype=X.dtype)
    denominator_bands = np.empty((n_bands, _TILE), dtype=X.dtype)
    values = np.empty((first.shape[0], _TILE), dtype=X.dtype)
    for start in range(0, n_pixels, _TILE):
        size = min(_TILE, n_pixels - start)
        _load_tile(X, start, size, variant, epsilon, numerator_bands, denominator_bands)
        for pair in range(first.shape[0]):
            _pair_tile(
                numerator_bands, denominator_bands, first[pair], second[pair], wa[pair],
                wc[pair], epsilon, variant, size, values[pair],
            )  # fmt: skip
        _dense_tile(values, weight, bias, start, size, out)


@_jit
def _dense_tile(values, weight, bias, start, size, out):
    """``weight @ values + bias`` for the ``size`` pixels of the tile, into ``out`` at ``start``.

    The sum of every output runs over the pairs in order, four at a time per pass.
    """
    for output in range(weight.shape[0]):
        row = out[output, start : start + size]
        row[:] = bias[output]
        n_pairs = values.shape[0]
        n_fours = n_pairs - n_pairs % 4
        for pair in range(0, n_fours, 4):
            w0, w1 = weight[output, pair], weight[output, pair + 1]
            w2, w3 = weight[output, pair + 2], weight[output, pair + 3]
            v0, v1, v2, v3 = values[pair], values[pair + 1], values[pair + 2], values[pair + 3]
            for t in range(size):
                row[t] = row[t] + w0 * v0[t] + w1 * v1[t] + w2 * v2[t] + w3 * v3[t]
        for pair in range(n_fours, n_pairs):
            w = weight[output, pair]
            value = values[pair]
            for t in range(size):
                row[t] += w * value[t]


@_jit
def _load_tile(X, start, size, variant, epsilon, numerator_bands, denominator_bands):
    """Transpose ``size`` pixels from ``start`` into the band rows of the tile.

    Band by band, each variant's step in a loop of its own: loops without branches,
    which LLVM vectorizes (the pixel by pixel transpose took most of the kernel's time).
    """
    for band in range(X.shape[1]):
        x = numerator_bands[band]
        for t in range(size):
            x[t] = X[start + t, band]
        if variant == 2:
            for t in range(size):
                if x[t] <= SOFTPLUS_THRESHOLD:
                    x[t] = math.log1p(math.exp(x[t]))
        elif variant == 1:
            # sknd._formula.smooth_abs without hypot: validated bands are within 1e15
            # (sknd._validation), so x * x cannot overflow float32.
            b = denominator_bands[band]
            for t in range(size):
                b[t] = math.sqrt(x[t] * x[t] + epsilon)


@njit(inline="always")
def _pair_tile(numerator_bands, denominator_bands, i, j, a, c, epsilon, variant, size, row):
    """The ND output of pair ``(i, j)`` for the pixels of the tile, into ``row``."""
    x_i, x_j = numerator_bands[i], numerator_bands[j]
    if variant == 1:
        b_i, b_j = denominator_bands[i], denominator_bands[j]
        for t in range(size):
            row[t] = (a * x_i[t] - c * x_j[t]) / (a * b_i[t] + c * b_j[t] + epsilon)
    else:
        for t in range(size):
            u = a * x_i[t]
            v = c * x_j[t]
            row[t] = (u - v) / (u + v + epsilon)
