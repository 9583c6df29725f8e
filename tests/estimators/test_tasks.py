"""Decoding of network outputs into labels and probabilities (sknd._data._tasks)."""

import numpy as np
import pytest
from scipy.special import expit, softmax

from sknd._data._tasks import ClassificationTask


def _task(n_classes):
    return ClassificationTask(np.array([f"class {k}" for k in range(n_classes)]))


def _layouts(output):
    """The same outputs C-ordered and with contiguous columns (as sknd.raster gives them)."""
    return {"C": np.ascontiguousarray(output), "F": np.asfortranarray(output)}


@pytest.mark.parametrize("n_classes", [3, 4, 5, 7])
def test_decode_equals_argmax_with_ties_and_nan(n_classes):
    rng = np.random.default_rng(n_classes)
    # Few distinct values: many rows hold ties, which argmax breaks by the first column.
    output = rng.integers(-2, 3, size=(500, n_classes)).astype(np.float32)
    output[7, 1] = np.nan  # argmax returns the position of the first NaN
    output[8, :] = np.nan
    output[9, -1] = np.nan
    task = _task(n_classes)
    expected = task.classes[output.argmax(1)]
    for layout, values in _layouts(output).items():
        np.testing.assert_array_equal(task.decode(values), expected, err_msg=layout)
        finite = values[10:]
        np.testing.assert_array_equal(task.decode(finite), expected[10:], err_msg=layout)


def test_decode_binary_threshold_at_zero():
    task = _task(2)
    output = np.array([[-1.0], [0.0], [1e-30], [3.0]], dtype=np.float32)
    np.testing.assert_array_equal(task.decode(output), task.classes[[0, 0, 1, 1]])


@pytest.mark.parametrize("n_classes", [2, 3, 6])
def test_proba_equals_softmax_and_never_overflows(n_classes):
    rng = np.random.default_rng(0)
    n_outputs = 1 if n_classes == 2 else n_classes
    output = (rng.normal(size=(300, n_outputs)) * 30).astype(np.float32)
    output[0] = 3e38  # float32 extremes
    output[1] = -3e38
    output[2, 0] = 3e38
    task = _task(n_classes)
    if n_classes == 2:
        positive = expit(output[:, 0].astype(np.float64))
        expected = np.column_stack([1 - positive, positive])
    else:
        expected = softmax(output.astype(np.float64), axis=1)
    for layout, values in _layouts(output).items():
        proba = task.proba(values)
        assert proba.dtype == np.float64 and proba.shape == (300, n_classes)
        assert np.isfinite(proba).all(), layout
        np.testing.assert_allclose(proba, expected, rtol=1e-12, atol=1e-300, err_msg=layout)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
