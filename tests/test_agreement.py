"""The tests' helper for numerical agreement across code paths (tests/agreement.py)."""

import numpy as np
import pytest
from agreement import assert_close_across_paths


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bound_in_ulps_of_the_dtype(dtype):
    expected = np.array([0.36598608087290385, -3.0, 1e-30], dtype=dtype)
    two_off = np.nextafter(np.nextafter(expected, dtype(np.inf)), dtype(np.inf))
    assert_close_across_paths(two_off, expected, ulps=2, reason="two ulps allowed")
    with pytest.raises(AssertionError, match=r"3 of 3 values outside .* worst 2 ulps"):
        assert_close_across_paths(two_off, expected, ulps=1, reason="one ulp allowed")


def test_absolute_bound_for_values_near_zero():
    # A cancellation's error scales with its terms, not with its tiny result.
    expected = np.array([1e-17, 0.5])
    actual = expected + np.array([5e-17, 0.0])
    with pytest.raises(AssertionError, match="1 of 2 values"):
        assert_close_across_paths(actual, expected, ulps=4, reason="ulps alone")
    assert_close_across_paths(actual, expected, ulps=4, atol=1e-16, reason="terms of order 1")


def test_nans_infinities_shapes_and_dtypes():
    values = np.array([np.nan, np.inf, -np.inf, 1.0])
    assert_close_across_paths(values, values.copy(), ulps=0, reason="the same values")
    with pytest.raises(AssertionError, match="NaNs in other places"):
        assert_close_across_paths(values, np.nan_to_num(values), ulps=1, reason="NaN against 0")
    with pytest.raises(AssertionError, match="outside"):
        assert_close_across_paths(values[1:], np.array([1e308, -np.inf, 1.0]), ulps=1, reason="r")
    with pytest.raises(AssertionError, match="dtypes"):
        assert_close_across_paths(values.astype(np.float32), values, ulps=1, reason="r")
    with pytest.raises(AssertionError, match="shapes"):
        assert_close_across_paths(values[:2], values, ulps=1, reason="r")
    with pytest.raises(AssertionError, match="compare exactly"):
        assert_close_across_paths(np.arange(3), np.arange(3), ulps=1, reason="labels")


def test_the_bound_and_its_reason_are_stated():
    with pytest.raises(TypeError, match="state the bound"):
        assert_close_across_paths(np.ones(2), np.ones(2), reason="no bound")
    with pytest.raises(TypeError, match="reason"):
        assert_close_across_paths(np.ones(2), np.ones(2), ulps=1, reason=" ")
