"""The numpy home of the ND formula (sknd._nd._formula), checked against the test oracle."""

import numpy as np
import pytest
from nd_oracle import nd_reference

from sknd._nd._formula import VARIANTS, classic_index, normalized_difference, softplus


def _inputs(variant, seed=0, n_samples=30, n_features=5):
    rng = np.random.default_rng(seed)
    if variant == "reflectance":
        X = rng.uniform(0, 0.8, (n_samples, n_features))
    else:  # signed band values: outputs of another layer, standardized bands
        X = rng.normal(0, 2, (n_samples, n_features))
    X[0, :2] = 0.0  # a pair of zeros: the epsilon alone in the denominator
    pairs = np.array([(i, j) for i in range(n_features) for j in range(n_features) if i != j])
    a, c = rng.normal(0, 1.5, len(pairs)), rng.normal(0, 1.5, len(pairs))
    return X, pairs, a, c


@pytest.mark.parametrize("epsilon", [1e-6, 0.1])
@pytest.mark.parametrize("variant", VARIANTS)
def test_normalized_difference_is_the_oracle(variant, epsilon):
    X, pairs, a, c = _inputs(variant)
    expected = nd_reference(X, a, c, pairs, epsilon, variant)
    got = normalized_difference(X, pairs, softplus(a), softplus(c), epsilon, variant)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
def test_classic_index_is_the_oracle_with_unit_weights(variant):
    X, pairs, _, _ = _inputs(variant, seed=1)
    unit = np.full(len(pairs), np.log(np.e - 1))  # softplus(unit) == 1
    expected = nd_reference(X, unit, unit, pairs, 1e-6, variant)
    np.testing.assert_allclose(classic_index(X, pairs, 1e-6, variant), expected, rtol=1e-12)
