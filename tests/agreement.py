"""How the tests state that two computations agree numerically.

The rule (docs/architecture.md, "Numerical agreement"):

- **Exact** (``np.testing.assert_array_equal``) only where the same kernel runs on the same
  input: a model file and the estimator it was saved from through one evaluator, a refit
  with the same seed, a copy, the same call twice. The bit-for-bit promises of the docs
  are tested so.
- **A stated bound** (:func:`assert_close_across_paths`) wherever the two values come
  through different code: other shapes (one row against a block of rows: BLAS picks other
  kernels, and other ones again on Intel than on AMD processors: torch's MKL and numpy's
  OpenBLAS dispatch on the CPU), other chunk sizes, thread counts or batch sizes, float32
  against float64, numba against numpy, torch against the numpy evaluator. The bound is in
  units in the last place of the compared dtype (``ulps``), or an absolute tolerance
  (``atol``) where the values come out of a cancellation, with the reason it is what it is.

A comparison across paths that passes exactly on one machine may fail by one ulp on
another: the bound is what makes the test pass on any CPU the package installs on.
Integer outputs (labels, class codes) compare exactly either way; they come from floats,
so a test that compares labels across paths uses data without near ties.
"""

import numpy as np

__all__ = ["assert_close_across_paths"]


def assert_close_across_paths(actual, expected, *, ulps=None, atol=None, reason, err_msg=""):
    """Assert that two computations through different code agree within a stated bound.

    Each element passes where ``|actual - expected| <= atol + ulps * spacing``, the
    spacing taken at the larger magnitude of the two in the arrays' dtype (float32
    spacing for float32 arrays). Shapes and dtypes must be equal and NaNs in the same
    places.

    Parameters
    ----------
    actual, expected : array-like of float
        The two results, of one floating dtype.
    ulps : int, optional
        The bound in units in the last place: for values that keep their magnitude
        through the computation (sums of terms of one sign, a softmax).
    atol : float, optional
        An absolute bound: for values that come out of a cancellation (a difference of
        nearly equal terms, a value near zero), whose error scales with the terms.
    reason : str
        Why the two paths differ and why the bound is what it is (as the test's reader
        needs it: "one row against a block of 9,000: BLAS kernels of other shapes").
    err_msg : str, default=""
        Added to the failure message.
    """
    if not isinstance(reason, str) or not reason.strip():
        raise TypeError("reason= must say, in words, why the paths differ and why the bound")
    if ulps is None and atol is None:
        raise TypeError("state the bound: ulps=, atol= or both")
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"shapes {actual.shape} != {expected.shape} {err_msg}"
    assert actual.dtype == expected.dtype, f"dtypes {actual.dtype} != {expected.dtype} {err_msg}"
    assert np.issubdtype(actual.dtype, np.floating), (
        f"{actual.dtype} values compare exactly: use np.testing.assert_array_equal"
    )
    nan = np.isnan(actual)
    assert np.array_equal(nan, np.isnan(expected)), f"NaNs in other places {err_msg}"
    magnitude = np.maximum(np.abs(actual), np.abs(expected))
    bound = (atol or 0.0) + (ulps or 0) * np.spacing(magnitude)
    with np.errstate(invalid="ignore"):
        error = np.abs(actual - expected)
        outside = ~nan & (actual != expected) & ~(error <= bound)  # equal infinities agree
    if outside.any():
        where = np.flatnonzero(outside)
        worst = error.ravel()[where]
        raise AssertionError(
            f"{where.size} of {actual.size} values outside the bound (ulps={ulps}, "
            f"atol={atol}; worst {np.max(worst / np.spacing(magnitude.ravel()[where])):.3g} "
            f"ulps, {np.max(worst):.3g} absolute) for {reason!r}; first at flat index {where[0]}: "
            f"{actual.ravel()[where[0]]!r} against {expected.ravel()[where[0]]!r} {err_msg}"
        )
