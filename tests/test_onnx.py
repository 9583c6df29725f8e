"""ONNX export of fitted estimators: onnxruntime reproduces their methods."""

import json

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from sknd import NDClassifier, NDRegressor, NDTransformer
from sknd.onnx import to_onnx

pytest.importorskip("onnx")
pytest.importorskip("onnxscript")
ort = pytest.importorskip("onnxruntime")

FAST = dict(max_epochs=3, random_state=0)


def bands(n_samples, n_features=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.01, 0.6, (n_samples, n_features)).astype(np.float32)


def run(model, X):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(None, {"X": X})))


def test_classifier_matches_predict_proba_on_100000_pixels():
    X = bands(400)
    clf = NDClassifier(**FAST).fit(X, X[:, 3] > X[:, 1])
    pixels = bands(100_000, seed=1)
    outputs = run(to_onnx(clf), pixels)
    np.testing.assert_allclose(outputs["probabilities"], clf.predict_proba(pixels), atol=1e-5)
    np.testing.assert_array_equal(outputs["label"], clf.predict(pixels))


@pytest.mark.parametrize(
    "params",
    [dict(), dict(architecture="attnd", depth=3, passthrough=True), dict(variant="signed")],
)
def test_multiclass_labels_and_probabilities(params):
    X = bands(300)
    y = np.array(["water", "soil", "forest"])[(X[:, 0] > X[:, 1]).astype(int) + (X[:, 2] > 0.3)]
    clf = NDClassifier(**FAST, **params).fit(X, y)
    outputs = run(to_onnx(clf), X)
    np.testing.assert_allclose(outputs["probabilities"], clf.predict_proba(X), atol=1e-5)
    np.testing.assert_array_equal(outputs["label"], clf.predict(X))


@pytest.mark.parametrize("n_targets", [1, 2])
def test_regressor_matches_predict(n_targets):
    X = bands(300)
    y = 1000 * np.stack([X[:, 0] / X[:, 1], X[:, 2]], 1)[:, :n_targets]
    reg = NDRegressor(**FAST).fit(X, y.ravel() if n_targets == 1 else y)
    prediction = run(to_onnx(reg), X)["prediction"]
    expected = reg.predict(X)
    assert prediction.shape == expected.shape
    # float32 network outputs, scaled back to the target's units in float64.
    np.testing.assert_allclose(prediction, expected, rtol=0, atol=1e-5 * np.abs(expected).max())


def test_transformer_matches_transform_and_records_band_names(tmp_path):
    onnx = pytest.importorskip("onnx")
    X = bands(300)
    transformer = NDTransformer(**FAST, n_indices=4, bands=["B2", "B3", "B4", "B8", "B11"])
    transformer.fit(X, X[:, 3] > X[:, 2])
    path = tmp_path / "indices.onnx"
    model = to_onnx(transformer, path)
    np.testing.assert_allclose(run(model, X)["indices"], transformer.transform(X), atol=1e-5)
    saved = onnx.load(path)
    metadata = {prop.key: prop.value for prop in saved.metadata_props}
    assert json.loads(metadata["band_names"]) == ["B2", "B3", "B4", "B8", "B11"]
    assert metadata["estimator"] == "NDTransformer"
    assert run(saved, X[:1])["indices"].shape == (1, 4)  # any number of rows


@pytest.mark.parametrize("estimator", [NDClassifier(), NDRegressor(), NDTransformer()])
def test_unfitted_estimator_cannot_be_exported(estimator):
    with pytest.raises(NotFittedError):
        to_onnx(estimator)
