"""scikit-learn's estimator checks over every public estimator and input variant."""

import functools

import pytest
import torch
from sklearn.base import clone
from sklearn.datasets import make_blobs
from sklearn.utils import estimator_checks
from sklearn.utils.estimator_checks import parametrize_with_checks

from sknd import NDClassifier, NDRegressor, NDTransformer

# Small, fast settings kept in one place; the checks' datasets are tiny.
FAST = dict(max_epochs=30, batch_size=16, lr=0.02, random_state=0)

ESTIMATORS = [
    NDClassifier(**FAST),
    NDRegressor(**FAST),
    NDTransformer(**FAST),
    NDClassifier(variant="signed", **FAST),
    NDClassifier(variant="softplus", **FAST),
    NDClassifier(architecture="attnd", **FAST),
    NDClassifier(architecture="mlp", **FAST),
    NDClassifier(depth=3, **FAST),
    NDClassifier(passthrough=True, **FAST),
]


# Several checks build data with all-zero rows (e.g. clipped to be non-negative); sknd warns
# that such rows look like no-data pixels (tested in tests/test_validation.py), expected here.
ALL_ZERO_ROWS = pytest.mark.filterwarnings(
    "ignore:.* training rows have every band equal to 0:UserWarning"
)


# scikit-learn's sample-weight equivalence checks compare a fit with integer weights to a
# fit on the data with each sample repeated that many times. A weighted loss equals the
# repeated data's only over the same batches: full batches and no random validation split
# (scikit-learn runs MLPClassifier's check with solver="lbfgs", a full-batch solver). The
# networks train in float32, whose sums differ in the last bits between the two data sets,
# and Adam turns that rounding in near-zero gradient components into steps of about lr
# (m / sqrt(v) is near +-1 from the first step). The check runs unchanged with a small lr
# and at a tolerance for that rounding, 1e-3 instead of rtol=1e-7; ignoring the weights
# moves the outputs by tenths (tests/test_weights.py).
FULL_BATCH = dict(batch_size=1024, early_stopping=False, lr=1e-3)
FLOAT32_TOLERANCE = dict(rtol=1e-3, atol=1e-3)


def _non_negative_blobs(*args, **kwargs):
    X, y = make_blobs(*args, **kwargs)
    return X - X.min(), y  # as the checks' _enforce_estimator_tags_X does for positive_only


def _run_check(estimator, check, monkeypatch):
    name = getattr(check, "func", check).__name__
    if name == "check_class_weight_classifiers" and estimator.variant == "reflectance":
        # This check alone builds its blobs without the positive_only tag's shift; reflectance
        # refuses negative bands.
        monkeypatch.setattr(estimator_checks, "make_blobs", _non_negative_blobs)
    if name.startswith("check_sample_weight_equivalence"):
        estimator = clone(estimator).set_params(**FULL_BATCH)  # the instance is shared
        monkeypatch.setattr(
            estimator_checks,
            "assert_allclose_dense_sparse",
            functools.partial(estimator_checks.assert_allclose_dense_sparse, **FLOAT32_TOLERANCE),
        )
    check(estimator)


@ALL_ZERO_ROWS
@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible_estimator(estimator, check, monkeypatch):
    _run_check(estimator, check, monkeypatch)


# The same checks with the network on a CUDA GPU (skipped, as an empty parameter set,
# where PyTorch sees none): fits, predictions and pickles of a model that lives on the GPU.
CUDA_ESTIMATORS = (
    [NDClassifier(device="cuda", **FAST), NDRegressor(device="cuda", **FAST),
     NDTransformer(device="cuda", **FAST)]
    if torch.cuda.is_available()
    else []
)  # fmt: skip


@ALL_ZERO_ROWS
@parametrize_with_checks(CUDA_ESTIMATORS)
def test_sklearn_compatible_estimator_on_cuda(estimator, check, monkeypatch):
    _run_check(estimator, check, monkeypatch)
