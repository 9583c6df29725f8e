"""The input contract (docs/contract.md), one test per finding of the fuzz campaign.

Bad input gets a ``ValueError`` or ``TypeError`` naming the argument and the fix,
valid input a correct result, and nothing is silently wrong.
"""

import numpy as np
import pytest

from sknd import NDClassifier, NDTransformer

FAST = dict(max_epochs=3, batch_size=16, random_state=0)


def make_data(n_samples=60, n_bands=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.05, 0.5, (n_samples, n_bands))
    return X, (X[:, 3] > X[:, 2]).astype(int)


@pytest.fixture(scope="module")
def clf():
    X, y = make_data()
    return NDClassifier(**FAST).fit(X, y)


# ------------------------------------------------------------------ memory
@pytest.mark.parametrize("hidden_units", [10**9, 10**18])
def test_oversized_network_is_refused_before_allocating(hidden_units):
    X, y = make_data()
    model = NDClassifier(depth=3, hidden_units=hidden_units)
    with pytest.raises(ValueError, match=r"hidden_units.*GiB.*Lower hidden_units"):
        model.fit(X, y)
    assert not hasattr(model, "n_features_in_")


def test_oversized_batch_is_refused(monkeypatch):
    import sknd._validation

    monkeypatch.setattr(sknd._validation, "_physical_memory", lambda: 1000)
    X, y = make_data()
    with pytest.raises(ValueError, match="GiB"):
        NDClassifier(**FAST).fit(X, y)


# ------------------------------------------------------------------ set_params after fit
def test_set_params_after_fit_does_not_change_the_fitted_model():
    from sknd import raster

    X, y = make_data()
    model = NDTransformer(**FAST, bands=["B2", "B3", "B4", "B8"]).fit(X, y)
    before = model.transform(X)
    formulas = model.export_formulas()
    model.set_params(epsilon=np.nan, variant="signed", bands=None)
    np.testing.assert_array_equal(model.transform(X), before)
    assert model.export_formulas() == formulas
    with pytest.raises(ValueError, match="Negative values"):
        model.transform(-X)
    # Band matching by the names given at fit still applies: reversed bands are matched.
    image = X[:, ::-1].reshape(6, 10, 4)
    mapped = raster.transform(model, image, bands=["B8", "B4", "B3", "B2"])
    np.testing.assert_allclose(mapped.reshape(60, -1), before, rtol=1e-5, atol=1e-6)
