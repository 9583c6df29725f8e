"""scikit-learn's estimator checks over every public estimator and input variant."""

import numpy as np
import pytest
import scipy.sparse
import torch
from sklearn.base import clone, is_classifier
from sklearn.datasets import make_blobs
from sklearn.model_selection import train_test_split
from sklearn.utils import shuffle
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


# The same checks with the network on a CUDA GPU (skipped, as an empty parameter set,
# where PyTorch sees none): fits, predictions and pickles of a model that lives on the GPU.
CUDA_ESTIMATORS = (
    [NDClassifier(device="cuda", **FAST), NDRegressor(device="cuda", **FAST),
     NDTransformer(device="cuda", **FAST)]
    if torch.cuda.is_available()
    else []
)  # fmt: skip

# Several checks build data with all-zero rows (e.g. clipped to be non-negative); sknd warns
# that such rows look like no-data pixels (tested in tests/test_validation.py), expected here.
ALL_ZERO_ROWS = pytest.mark.filterwarnings(
    "ignore:.* training rows have every band equal to 0:UserWarning"
)


# scikit-learn's sample-weight equivalence checks compare a fit with integer weights to a
# fit on the data with each sample repeated that many times, at rtol=1e-7. A weighted loss
# equals the repeated data's only over the same batches: full batches and no random
# validation split (scikit-learn runs MLPClassifier's check with solver="lbfgs", a full-batch
# solver). The networks train in float32, whose sums differ in the last bits between the
# two data sets, and Adam turns that rounding in near-zero gradient components into steps of
# about lr (m / sqrt(v) is near +-1 from the first step). Their data and procedure run below
# with a small lr and at a tolerance for that rounding, 1e-3; ignoring the weights moves the
# outputs by tenths (tests/test_weights.py).
FULL_BATCH = dict(batch_size=1024, early_stopping=False, lr=1e-3)
FLOAT32_TOLERANCE = dict(rtol=1e-3, atol=1e-3)
SAMPLE_WEIGHT_REASON = (
    "float32 networks trained by Adam match the repeated data's fit to 1e-3, not to the "
    "check's rtol=1e-7: test_sample_weight_equivalence_at_float32_tolerance runs the check "
    "at that tolerance"
)
CLASS_WEIGHT_REASON = (
    "the check's blobs have negative band values, which variant='reflectance' refuses (this "
    "check alone does not shift them as the positive_only tag asks): "
    "test_class_weights_on_non_negative_blobs runs it on shifted blobs"
)


def _expected_failed_checks(estimator):
    """The checks scikit-learn's procedure cannot pass as written, with the reason;
    each runs adapted in a test of its own below."""
    failures = {
        "check_sample_weight_equivalence_on_dense_data": SAMPLE_WEIGHT_REASON,
        "check_sample_weight_equivalence_on_sparse_data": SAMPLE_WEIGHT_REASON,
    }
    if is_classifier(estimator) and estimator.variant == "reflectance":
        failures["check_class_weight_classifiers"] = CLASS_WEIGHT_REASON
    return failures


def _name(estimator):
    changed = {k: v for k, v in estimator.get_params().items() if k not in FAST}
    return f"{type(estimator).__name__}({changed})"


@ALL_ZERO_ROWS
@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("estimator", ESTIMATORS + CUDA_ESTIMATORS, ids=_name)
def test_sample_weight_equivalence_at_float32_tolerance(estimator, sparse):
    """scikit-learn's check_sample_weight_equivalence_on_{dense,sparse}_data, its data and
    procedure, with full batches and at float32's tolerance (see FULL_BATCH)."""
    rng = np.random.RandomState(42)
    n_samples = 15
    X = rng.rand(n_samples, n_samples * 2)
    y = rng.randint(0, 3, size=n_samples)
    weight = rng.randint(0, 5, size=n_samples)
    X_repeated, y_repeated = X.repeat(repeats=weight, axis=0), y.repeat(repeats=weight)
    X_weighted, y_weighted, weight = shuffle(X, y, weight, random_state=0)
    if sparse:
        X_weighted, X_repeated = (
            scipy.sparse.csr_array(X_weighted),
            scipy.sparse.csr_array(X_repeated),
        )
    settings = {**FULL_BATCH, "random_state": 0}
    repeated = clone(estimator).set_params(**settings).fit(X_repeated, y_repeated)
    weighted = clone(estimator).set_params(**settings)
    weighted.fit(X_weighted, y_weighted, sample_weight=weight)
    for method in ["predict_proba", "decision_function", "predict", "transform"]:
        if hasattr(estimator, method):
            np.testing.assert_allclose(
                getattr(weighted, method)(X), getattr(repeated, method)(X), **FLOAT32_TOLERANCE
            )


@ALL_ZERO_ROWS
@pytest.mark.parametrize(
    "estimator",
    [e for e in ESTIMATORS + CUDA_ESTIMATORS if is_classifier(e) and e.variant == "reflectance"],
    ids=_name,
)
def test_class_weights_on_non_negative_blobs(estimator):
    """scikit-learn's check_class_weight_classifiers on its blobs shifted to non-negative
    band values (as its other checks shift data for the positive_only tag)."""
    for n_centers in [2, 3]:
        X, y = make_blobs(centers=n_centers, random_state=0, cluster_std=20)
        X_train, X_test, y_train, _ = train_test_split(
            X - X.min(), y, test_size=0.5, random_state=0
        )
        class_weight = {0: 1000, **{k: 0.0001 for k in range(1, n_centers)}}
        classifier = clone(estimator).set_params(class_weight=class_weight, random_state=0)
        if "n_iter_no_change" in classifier.get_params():
            classifier.set_params(n_iter_no_change=20)
        classifier.fit(X_train, y_train)
        assert np.mean(classifier.predict(X_test) == 0) > 0.87


@ALL_ZERO_ROWS
@parametrize_with_checks(CUDA_ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible_estimator_on_cuda(estimator, check):
    check(estimator)
