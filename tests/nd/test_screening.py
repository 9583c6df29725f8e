"""Pair screening (``pairs="auto"`` or an integer) before training."""

import warnings

import numpy as np
import pytest
from sklearn.feature_selection import f_classif, r_regression

from sknd import NDClassifier, NDRegressor
from sknd._nd._pairs import MAX_AUTO_PAIRS
from sknd._nd._screening import pair_scores, screen_pairs
from sknd.nn import all_pairs


def _classic(X, pairs, epsilon=1e-6):
    bi, bj = X[:, pairs[:, 0]], X[:, pairs[:, 1]]
    return (bi - bj) / (bi + bj + epsilon)


def _spectra(n_samples=300, n_bands=12, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.05, 0.6, size=(n_samples, n_bands))


def test_regression_scores_are_squared_correlations():
    X = _spectra()
    y = np.random.default_rng(1).normal(size=len(X)) + 3 * _classic(X, np.array([[2, 5]]))[:, 0]
    pairs = all_pairs(X.shape[1])
    expected = r_regression(_classic(X, pairs), y) ** 2
    np.testing.assert_allclose(pair_scores(X, y, pairs, classification=False), expected, rtol=1e-10)


def test_classification_scores_are_correlation_ratios():
    X = _spectra(n_bands=6)
    codes = np.random.default_rng(2).integers(0, 3, len(X))
    pairs = all_pairs(6)
    f, _ = f_classif(_classic(X, pairs), codes)
    n, k = len(X), 3
    eta2 = f * (k - 1) / (f * (k - 1) + (n - k))
    np.testing.assert_allclose(pair_scores(X, codes, pairs, classification=True), eta2, rtol=1e-8)


def test_several_targets_take_the_best_and_constant_indices_score_zero():
    X = _spectra(n_bands=5)
    X[:, 4] = X[:, 3]  # (b3 - b4) / (b3 + b4 + eps) is the constant 0
    pairs = all_pairs(5)
    y = np.column_stack(
        [_classic(X, np.array([[0, 1]]))[:, 0], _classic(X, np.array([[1, 2]]))[:, 0]]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scores = pair_scores(X, y, pairs, classification=False)
    position = {tuple(p): k for k, p in enumerate(pairs.tolist())}
    assert scores[position[(0, 1)]] == pytest.approx(1.0)
    assert scores[position[(1, 2)]] == pytest.approx(1.0)
    assert scores[position[(3, 4)]] == 0.0
    assert np.all((scores >= 0) & (scores <= 1))


def test_scores_ignore_pair_order_and_data_scale():
    X = _spectra()
    y = _classic(X, np.array([[1, 7]]))[:, 0]
    pairs = all_pairs(X.shape[1])
    scores = pair_scores(X, y, pairs, classification=False)
    np.testing.assert_allclose(pair_scores(X, y, pairs[:, ::-1], classification=False), scores)
    np.testing.assert_allclose(
        pair_scores(1000 * X, y, pairs, classification=False), scores, rtol=1e-3, atol=1e-6
    )


@pytest.mark.parametrize("variant", ["signed", "softplus"])
def test_signed_variants_score_their_own_initial_index(variant):
    X = _spectra() - 0.3
    pairs = all_pairs(X.shape[1])
    informative = [4, 9]
    y = np.random.default_rng(0).normal(size=len(X))
    Xt = np.logaddexp(0, X) if variant == "softplus" else X
    bi, bj = Xt[:, informative[0]], Xt[:, informative[1]]
    if variant == "signed":
        index = (bi - bj) / (np.sqrt(bi**2 + 1e-6) + np.sqrt(bj**2 + 1e-6) + 1e-6)
    else:
        index = (bi - bj) / (bi + bj + 1e-6)
    kept = screen_pairs(X, index + 0.01 * y, pairs, 1, False, variant=variant)
    assert kept.tolist() == [informative]


def test_screen_keeps_the_best_pairs_in_original_order():
    X = _spectra()
    y = _classic(X, np.array([[8, 3]]))[:, 0] + 0.2 * np.random.default_rng(0).normal(size=len(X))
    pairs = all_pairs(X.shape[1])
    scores = pair_scores(X, y, pairs, classification=False)
    kept = screen_pairs(X, y, pairs, 4, classification=False)
    assert [3, 8] in kept.tolist()
    best = np.argsort(-scores)[:4]
    np.testing.assert_array_equal(kept, pairs[np.sort(best)])
    assert screen_pairs(X, y, pairs, 1, classification=False).tolist() == [[3, 8]]


def test_estimator_with_integer_pairs_keeps_the_informative_pair():
    X = _spectra(n_samples=200, n_bands=10)
    y = (_classic(X, np.array([[6, 2]]))[:, 0] > 0).astype(int)
    model = NDClassifier(pairs=5, max_epochs=3, random_state=0).fit(X, y)
    assert model.pairs_.shape == (5, 2)
    assert [2, 6] in model.pairs_.tolist()
    assert model.coef_a_.shape == (5,) and model.index_importances_.shape == (5,)
    assert np.all(np.diff(model.pairs_[:, 0] * 10 + model.pairs_[:, 1]) > 0)
    assert model.predict(X).shape == (200,)


def test_auto_keeps_all_pairs_of_few_bands_and_caps_many():
    X = _spectra(n_samples=60, n_bands=8)
    y = X[:, 0] / (X[:, 0] + X[:, 1])
    few = NDRegressor(pairs="auto", max_epochs=1, random_state=0).fit(X, y)
    np.testing.assert_array_equal(few.pairs_, all_pairs(8))
    X = _spectra(n_samples=60, n_bands=50)  # 1,225 pairs
    # depth 2: depth="auto" may keep depth 3, whose width is not the first block's
    many = NDRegressor(pairs="auto", depth=2, max_epochs=1, random_state=0)
    many.fit(X, X[:, 3] - X[:, 40])
    assert many.pairs_.shape == (MAX_AUTO_PAIRS, 2)
    # the default width follows the kept pairs, capped at 256
    assert many.n_parameters_ == 2 * MAX_AUTO_PAIRS + MAX_AUTO_PAIRS + 1


def test_screening_sees_only_the_training_data():
    X = _spectra(n_samples=200, n_bands=6)
    y = _classic(X, np.array([[0, 1]]))[:, 0]
    X_val = _spectra(n_samples=50, n_bands=6, seed=5)
    y_val = _classic(X_val, np.array([[4, 5]]))[:, 0]
    with_val = NDRegressor(pairs=1, max_epochs=2, random_state=0).fit(
        X, y, X_val=X_val, y_val=y_val
    )
    assert with_val.pairs_.tolist() == [[0, 1]]


def test_screening_is_deterministic():
    X = _spectra(n_samples=80, n_bands=9)
    y = np.zeros(80)
    y[::2] = 1
    first = NDClassifier(pairs=4, max_epochs=1, random_state=0).fit(X, y).pairs_
    second = NDClassifier(pairs=4, max_epochs=1, random_state=0).fit(X, y).pairs_
    np.testing.assert_array_equal(first, second)
