"""sknd._nd._kernels against numpy, bit for bit where the sums are numpy's."""

import numpy as np
import pytest

kernels = pytest.importorskip("sknd._nd._kernels", reason="the compiled kernels need numba")


def _arguments(n_bands, variant, dtype, rng):
    """Kernel arguments after the pixel table: every pair of ``n_bands``, random weights."""
    pairs = np.array([(i, j) for i in range(n_bands) for j in range(i + 1, n_bands)])
    wa, wc = rng.uniform(0.2, 2.0, size=(2, len(pairs))).astype(dtype)
    code = kernels.VARIANT_CODES[variant]
    return pairs[:, 0].copy(), pairs[:, 1].copy(), wa, wc, dtype(1e-3), code


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("variant", ["reflectance", "signed", "softplus"])
def test_dense_kernel_sums_every_output_pair_by_pair(variant, dtype):
    # Any number of outputs (summed four at a time, the last four padded): each output is the
    # bias, then each pair's term in order, no fused multiply-add: what the tile loops of the
    # ND layer alone give, summed by numpy. Estimators, scenes and model files rely on it.
    rng = np.random.default_rng(7)
    n_bands, n_pixels = 6, 600  # two full tiles of 256 pixels and a partial one
    low = 0.0 if variant == "reflectance" else -3.0
    X = rng.uniform(low, 3.0, size=(n_pixels, n_bands)).astype(dtype)
    X[0] = 0.0  # the denominator is epsilon alone
    arguments = _arguments(n_bands, variant, dtype, rng)
    values = np.empty((len(arguments[0]), n_pixels), dtype=dtype)
    kernels.normalized_differences(X, *arguments, values)
    for n_outputs in (1, 2, 3, 4, 5, 8, 9, 20):
        weight = rng.normal(size=(n_outputs, len(values))).astype(dtype)
        bias = rng.normal(size=n_outputs).astype(dtype)
        expected = np.repeat(bias[:, None], n_pixels, axis=1)
        for pair, value in enumerate(values):
            expected += weight[:, pair : pair + 1] * value
        got = np.full((n_outputs, n_pixels), np.nan, dtype=dtype)
        kernels.normalized_differences_dense(X, *arguments, weight, bias, got)
        np.testing.assert_array_equal(got, expected, err_msg=f"{n_outputs} outputs")


def test_dense_kernel_outputs_do_not_depend_on_their_neighbours():
    # An output's sums are its own: the same with the other outputs of its group of four
    # (or the padding) changed, and on a pixel alone as in a whole table.
    rng = np.random.default_rng(8)
    X = rng.uniform(0.0, 1.0, size=(300, 5))
    arguments = _arguments(5, "reflectance", np.float64, rng)
    weight = rng.normal(size=(3, len(arguments[0])))
    bias = rng.normal(size=3)
    whole = np.empty((3, len(X)))
    kernels.normalized_differences_dense(X, *arguments, weight, bias, whole)
    alone = np.empty((1, len(X)))
    kernels.normalized_differences_dense(X, *arguments, weight[1:2], bias[1:2], alone)
    np.testing.assert_array_equal(alone[0], whole[1])
    pixel = np.empty((3, 1))
    kernels.normalized_differences_dense(X[257:258], *arguments, weight, bias, pixel)
    np.testing.assert_array_equal(pixel[:, 0], whole[:, 257])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_argmax_rows_gives_numpys_positions(dtype):
    # Ties keep the first column, a row with NaN gets its first NaN, infinities compare.
    rng = np.random.default_rng(9)
    for n_columns in (2, 3, 5, 20):
        values = rng.normal(size=(700, n_columns)).astype(dtype)
        values[::7, 1] = values[::7, 0]
        values[3, -1] = values[5] = values[9, 0] = np.nan
        values[11, 1], values[12] = np.inf, -np.inf
        values[13, 0], values[13, -1] = np.nan, np.inf
        index = np.full(len(values), -1, dtype=np.intp)
        kernels.argmax_rows(np.ascontiguousarray(values.T), index)
        np.testing.assert_array_equal(index, values.argmax(1), err_msg=f"{n_columns}")


def test_class_labels_are_numpys_with_the_kernels_loaded(monkeypatch):
    # sknd._data._decoding uses the compiled argmax once the kernels are imported: the same labels.
    import sys

    from sknd._data._decoding import class_labels

    rng = np.random.default_rng(10)
    classes = np.array(["water", "crop", "forest", "urban", "bare", "snow", "cloud", "shadow"])
    for n_classes in (2, 3, 8):
        output = rng.normal(size=(500, n_classes)).astype(np.float32)
        output[7, 1] = np.nan
        expected = classes[output.argmax(1)]
        for layout in (output, np.asfortranarray(output)):
            np.testing.assert_array_equal(class_labels(layout, classes[:n_classes]), expected)
            with monkeypatch.context() as patch:
                patch.delitem(sys.modules, "sknd._nd._kernels")
                numpy_only = class_labels(layout, classes[:n_classes])
            np.testing.assert_array_equal(numpy_only, expected)
