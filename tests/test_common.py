"""scikit-learn's estimator checks over every public estimator and input variant."""

import pytest
import torch
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
    NDClassifier(recipe="paper", **FAST),
    NDRegressor(recipe="paper", **FAST),
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
# that such rows look like no-data pixels (tested in tests/estimators/test_validation.py),
# expected here.
ALL_ZERO_ROWS = pytest.mark.filterwarnings(
    "ignore:.* training rows have every band equal to 0:UserWarning"
)
# Several checks standardize their data (StandardScaler().fit_transform(X)); sknd warns that
# such bands are no band values as measured (tested in
# tests/estimators/test_validation.py), expected here.
STANDARDIZED = pytest.mark.filterwarnings("ignore:Every band of X has .* 0 and negative values")


@ALL_ZERO_ROWS
@STANDARDIZED
@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


@ALL_ZERO_ROWS
@STANDARDIZED
@parametrize_with_checks(CUDA_ESTIMATORS)
def test_sklearn_compatible_estimator_on_cuda(estimator, check):
    check(estimator)
