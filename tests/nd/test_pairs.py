"""Pair resolution (sknd._nd._pairs): by index, by name, "all", "auto" and counts."""

import numpy as np
import pytest

from sknd._nd._pairs import MAX_AUTO_PAIRS, all_pairs, estimator_pairs, n_pairs_to_keep
from sknd._nd._screening import screen_pairs
from sknd.bands import resolve_bands
from sknd.networks import default_hidden_units


def test_n_pairs_to_keep():
    assert n_pairs_to_keep("all", 10**5) is None
    assert n_pairs_to_keep("auto", MAX_AUTO_PAIRS) is None
    assert n_pairs_to_keep("auto", MAX_AUTO_PAIRS + 1) == MAX_AUTO_PAIRS
    assert n_pairs_to_keep(7, 45) == 7
    assert n_pairs_to_keep(45, 45) is None
    assert n_pairs_to_keep(np.int64(3), 45) == 3


# What this module's tests draw from conftest's band_data, after the sample and band counts.
DATA = {"pair": (4, 1)}


def _pairs(pairs, X, y, bands=None):
    return estimator_pairs(
        pairs,
        bands,
        X,
        y,
        n_outputs=1,
        mlp_width=default_hidden_units(X.shape[1] * (X.shape[1] - 1) // 2),
        classification=True,
        variant="reflectance",
        epsilon=1e-6,
    )


def test_estimator_pairs_by_index_name_all_and_count(band_data):
    X, y = band_data(80, 6, **DATA)
    bands = resolve_bands(["B2", "B3", "B4", "B8", "B11", "B12"], sensor="sentinel2")
    np.testing.assert_array_equal(_pairs("all", X, y), all_pairs(6))
    np.testing.assert_array_equal(_pairs("auto", X, y), all_pairs(6))  # few bands: all
    np.testing.assert_array_equal(_pairs([(3, 2), (0, 5)], X, y), [[3, 2], [0, 5]])
    np.testing.assert_array_equal(
        _pairs([("nir", "B4"), (0, "B12")], X, y, bands), [[3, 2], [0, 5]]
    )
    kept = _pairs(3, X, y)
    expected = screen_pairs(X, y, all_pairs(6), 3, True, variant="reflectance", epsilon=1e-6)
    np.testing.assert_array_equal(kept, expected)
    assert [1, 4] in kept.tolist()  # the pair that makes y


@pytest.mark.parametrize(
    "pairs, match",
    [([(0, 0)], "two different bands"), ([(0, 9)], "outside"), ([("B8", "B4")], "Unknown band")],
)
def test_estimator_pairs_refuses_bad_pairs(pairs, match, band_data):
    X, y = band_data(80, 6, **DATA)
    bands = resolve_bands(["a", "b", "c", "d", "e", "f"])
    with pytest.raises(ValueError, match=match):
        _pairs(pairs, X, y, bands)
