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
writing it to memory. With up to four outputs the dense layer is summed in
the same pass as the division, pair by pair in order, so that the sums are
those of numpy's evaluator written one pair at a time: the outputs of a
3-class model cost little more than a binary model's one. What bounds a
depth-2 model is then the division itself, vectorized over the pixels of a
tile (see benchmarks/RESULTS.md). The formula is written once, in
:func:`_index`, which every loop over a tile's pixels inlines.

:func:`argmax_rows` decodes the labels of multiclass outputs (see
:func:`sknd._data._decoding.class_labels`).

The kernels release the GIL, so chunks run in parallel threads. Compiled code
is cached on disk by numba (``cache=True``): only the first call on a machine
pays the compilation (benchmarks/RESULTS.md, "Raster prediction").
"""

import math

import numpy as np
from numba import njit

from ._formula import SOFTPLUS_THRESHOLD, VARIANTS

__all__ = [
    "INPUT_DTYPES",
    "VARIANT_CODES",
    "argmax_rows",
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
# Outputs summed together in one loop over a tile's pixels.
_GROUP = 4


# error_model="numpy": a division by zero gives inf/NaN instead of raising, which
# lets LLVM vectorize the loops over pixels.
_jit = njit(nogil=True, cache=True, error_model="numpy", boundscheck=False)
# The loops over a tile's pixels, one per variant, each inlined into a loop over the pairs
# that has no branch: with the variant tested inside the loop over the pairs, the division
# loop ran slower although it was vectorized the same (benchmarks/RESULTS.md, "The
# compiled kernel on one core").
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
    bias and then ``weight[output, pair] * ND`` pair by pair, in order (the
    sums of numpy's evaluator written one pair at a time, without fused
    multiply-adds), whatever the number of outputs.
    Parameters as :func:`normalized_differences`, and

    weight : ndarray of shape (n_outputs, n_pairs), dtype of ``wa``
    bias : ndarray of shape (n_outputs,), dtype of ``wa``
    out : ndarray of shape (n_outputs, n_pixels), dtype of ``wa``
    """
    n_pixels, n_bands = X.shape
    numerator_bands = np.empty((n_bands, _TILE), dtype=wa.dtype)
    denominator_bands = np.empty((n_bands, _TILE), dtype=wa.dtype)
    n_outputs = weight.shape[0]
    # Several outputs: summed four at a time in the loop of the divisions, into rows of the
    # tile (the last four padded with zero weights, their extra sums dropped). Above four
    # outputs every four repeat the divisions: the evaluator fuses only narrow layers.
    n_sums = -(-n_outputs // _GROUP) * _GROUP if n_outputs > 1 else 0
    weights = np.zeros((n_sums, first.shape[0]), dtype=wa.dtype)
    weights[:n_outputs] = weight
    sums = np.empty((n_sums, _TILE), dtype=wa.dtype)
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
            continue
        for output in range(n_sums):
            sums[output, :size] = bias[output] if output < n_outputs else 0
        for group in range(0, n_sums, _GROUP):
            _pairs_sums_tile(
                numerator_bands, denominator_bands, first, second, wa, wc, epsilon, variant,
                weights[group : group + _GROUP], size, sums[group : group + _GROUP],
            )  # fmt: skip
        for output in range(n_outputs):
            out[output, start : start + size] = sums[output, :size]


@_jit
def argmax_rows(columns, index):
    """Write ``values.argmax(1)`` into ``index``: the first largest column of every row.

    As numpy's: a row holding NaN gets the position of its first NaN. Column
    after column over tiles of rows, in a loop without branches that LLVM
    vectorizes; numpy's ``argmax`` along rows of a few values costs tens of
    nanoseconds per row (:func:`sknd._data._decoding.class_labels` calls this when
    the kernels are loaded).

    Parameters
    ----------
    values : ndarray of shape (n_rows, n_columns), float, any layout, n_columns > 0
    index : ndarray of shape (n_rows,), intp
    """
    n_columns, n_rows = columns.shape
    best = np.empty(_TILE, dtype=columns.dtype)
    # 32-bit positions beside 32-bit values: one vector width, which LLVM vectorizes.
    positions = np.empty(_TILE, dtype=np.int32)
    for start in range(0, n_rows, _TILE):
        size = min(_TILE, n_rows - start)
        best[:size] = columns[0, start : start + size]
        positions[:size] = 0
        for column in range(1, n_columns):
            values = columns[column, start : start + size]
            _argmax_step(values, np.int32(column), size, best, positions)
        for t in range(size):
            index[start + t] = positions[t]


@_inline
def _argmax_step(values, column, size, best, positions):
    for t in range(size):
        value, top = values[t], best[t]
        # Larger, or the first NaN (nothing is larger than a NaN that leads).
        take = (value > top) | ((value != value) & (top == top))
        best[t] = value if take else top
        positions[t] = column if take else positions[t]


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
            # sknd._nd._formula.smooth_abs without hypot: validated bands are within 1e15
            # (sknd._data._validation), so x * x cannot overflow float32.
            x, b = numerator_bands[band], denominator_bands[band]
            for t in range(size):
                b[t] = math.sqrt(x[t] * x[t] + epsilon)


@_jit
def _pairs_tile(x, b, first, second, wa, wc, epsilon, variant, start, size, out):
    """The ND outputs of every pair for the tile's pixels, into ``out`` from ``start``.

    ``x`` and ``b`` are the numerator and denominator bands of the tile (see
    :func:`_load_tile`); other variants than "signed" pass the same bands
    twice, which LLVM reads once.
    """
    if variant == 1:
        for pair in range(first.shape[0]):
            i, j, row = first[pair], second[pair], out[pair, start : start + size]
            _write(x[i], x[j], b[i], b[j], wa[pair], wc[pair], epsilon, size, row)
    else:
        for pair in range(first.shape[0]):
            x_i, x_j, row = x[first[pair]], x[second[pair]], out[pair, start : start + size]
            _write(x_i, x_j, x_i, x_j, wa[pair], wc[pair], epsilon, size, row)


@_jit
def _pairs_sum_tile(x, b, first, second, wa, wc, epsilon, variant, weight, size, row):
    """Add ``weight[pair]`` times the ND output of every pair to ``row``, pair by pair in order."""
    if variant == 1:
        for pair in range(first.shape[0]):
            i, j = first[pair], second[pair]
            _sum(x[i], x[j], b[i], b[j], wa[pair], wc[pair], epsilon, weight[pair], size, row)
    else:
        for pair in range(first.shape[0]):
            x_i, x_j = x[first[pair]], x[second[pair]]
            _sum(x_i, x_j, x_i, x_j, wa[pair], wc[pair], epsilon, weight[pair], size, row)


@_jit
def _pairs_sums_tile(x, b, first, second, wa, wc, epsilon, variant, weights, size, sums):
    """Add ``weights[k, pair]`` times every pair's ND output to ``sums[k]`` (k < 4), in order."""
    if variant == 1:
        for pair in range(first.shape[0]):
            i, j = first[pair], second[pair]
            _sums(x[i], x[j], b[i], b[j], wa[pair], wc[pair], epsilon, weights[:, pair], size, sums)
    else:
        for pair in range(first.shape[0]):
            x_i, x_j = x[first[pair]], x[second[pair]]
            _sums(x_i, x_j, x_i, x_j, wa[pair], wc[pair], epsilon, weights[:, pair], size, sums)


# The formula, once: (a x_i - c x_j) / (a b_i + c b_j + epsilon). With b = x (every variant
# but "signed") the products repeat, and LLVM computes each once: (u - v) / (u + v + epsilon).
@_inline
def _index(x_i, x_j, b_i, b_j, a, c, epsilon):
    return (a * x_i - c * x_j) / (a * b_i + c * b_j + epsilon)


@_inline
def _write(x_i, x_j, b_i, b_j, a, c, epsilon, size, row):
    """The pair's ND outputs into ``row``."""
    for t in range(size):
        row[t] = _index(x_i[t], x_j[t], b_i[t], b_j[t], a, c, epsilon)


@_inline
def _sum(x_i, x_j, b_i, b_j, a, c, epsilon, w, size, row):
    """The pair's ND outputs times ``w``, added to ``row``."""
    for t in range(size):
        row[t] = row[t] + w * _index(x_i[t], x_j[t], b_i[t], b_j[t], a, c, epsilon)


@_inline
def _sums(x_i, x_j, b_i, b_j, a, c, epsilon, w, size, sums):
    """The pair's ND outputs times ``w[k]``, added to ``sums[k]`` (k < 4)."""
    w0, w1, w2, w3 = w[0], w[1], w[2], w[3]
    r0, r1, r2, r3 = sums[0], sums[1], sums[2], sums[3]
    for t in range(size):
        nd = _index(x_i[t], x_j[t], b_i[t], b_j[t], a, c, epsilon)
        r0[t] = r0[t] + w0 * nd
        r1[t] = r1[t] + w1 * nd
        r2[t] = r2[t] + w2 * nd
        r3[t] = r3[t] + w3 * nd
