"""Images of uniform bands and the estimators fitted on such bands, shared by the raster
tests (tests/raster/test_raster.py) and the evaluator's (tests/inference/test_evaluator.py)."""

import numpy as np
from sklearn.linear_model import LogisticRegression

#: What those tests draw from conftest's band_data, after the sample and band counts.
DATA = {"low": 0.01, "high": 0.6, "pair": (-1, -2), "cuts": (-0.2, 0.2)}


def band_image(shape=(9, 11), n_bands=4, seed=1, dtype=np.float64):
    """Bands uniform in the range :data:`DATA` draws from, of shape ``shape + (n_bands,)``."""
    rng = np.random.default_rng(seed)
    return rng.uniform(DATA["low"], DATA["high"], size=shape + (n_bands,)).astype(dtype)


def pixel_classifier(band_data):
    """A logistic regression on 300 rows of 4 bands of :data:`DATA`."""
    X, y = band_data(300, 4, **DATA)
    return LogisticRegression().fit(X, y)


def fit_on_bands(band_data, estimator, target="multiclass", n_bands=5):
    """``estimator`` fitted on 120 rows of ``n_bands`` bands of :data:`DATA`, to ``target``:
    their classes, two string labels, a regression or a two-output regression."""
    X, y = band_data(120, n_bands, **DATA)
    targets = {
        "multiclass": y,
        "binary": np.array(["dry", "wet"])[(y > 0).astype(int)],
        "regression": X[:, 0] + X[:, -1],
        "multi-output": np.column_stack([X[:, 0], X[:, -1] - X[:, 1]]),
    }
    return estimator.fit(X, targets[target])
