"""ONNX export of fitted estimators: onnxruntime reproduces their methods."""

import json

import numpy as np
import pytest
from agreement import assert_close_across_paths
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


@pytest.fixture(scope="module")
def exported():
    """A classifier with string labels and named bands, and its ONNX model."""
    X = bands(300, n_features=4)
    y = np.where(X[:, 3] > X[:, 2], "vegetation", "soil")
    clf = NDClassifier(**FAST, bands=["B2", "B4", "B8", "B11"]).fit(X, y)
    return clf, to_onnx(clf)


def test_metadata_records_what_check_input_needs(exported):
    _, model = exported
    metadata = {prop.key: prop.value for prop in model.metadata_props}
    assert json.loads(metadata["band_names"]) == ["B2", "B4", "B8", "B11"]
    assert metadata["n_features"] == "4"
    assert metadata["input_dtype"] == "float32"
    assert metadata["variant"] == "reflectance"


def test_check_input_casts_float64_and_integers_to_float32(exported):
    from sknd import onnx as sknd_onnx

    _, model = exported
    X = bands(10, n_features=4).astype(np.float64)[:, ::-1]  # not C-contiguous
    checked = sknd_onnx.check_input(model, X)
    assert checked.dtype == np.float32 and checked.flags.c_contiguous
    np.testing.assert_array_equal(checked, X.astype(np.float32))
    digital_numbers = np.array([[1200, 900, 3100, 2000]], dtype=np.uint16)
    np.testing.assert_array_equal(sknd_onnx.check_input(model, digital_numbers), digital_numbers)


def test_check_input_refuses_another_number_of_bands(exported):
    from sknd import onnx as sknd_onnx

    _, model = exported
    with pytest.raises(ValueError, match=r"shape \(n_samples, 4\).*got shape \(10, 5\)"):
        sknd_onnx.check_input(model, bands(10, n_features=5))
    with pytest.raises(ValueError, match="shape"):
        sknd_onnx.check_input(model, bands(10, n_features=4)[0])  # one pixel, 1D
    with pytest.raises(ValueError, match="at least one row"):
        sknd_onnx.check_input(model, np.empty((0, 4), np.float32))


def test_check_input_refuses_other_band_names_or_order(exported):
    from sknd import onnx as sknd_onnx

    pd = pytest.importorskip("pandas")
    _, model = exported
    X = bands(10, n_features=4)
    assert sknd_onnx.check_input(model, X, bands=["B2", "B4", "B8", "B11"]).shape == (10, 4)
    with pytest.raises(ValueError, match=r"\['B4', 'B2', 'B8', 'B11'\].*in this order"):
        sknd_onnx.check_input(model, X, bands=["B4", "B2", "B8", "B11"])
    frame = pd.DataFrame(X, columns=["B2", "B4", "B8", "B12"])
    with pytest.raises(ValueError, match="B12"):
        sknd_onnx.check_input(model, frame)


@pytest.mark.parametrize(
    ("value", "message"),
    [(np.nan, "NaN"), (np.inf, "infinity"), (-0.2, "Negative"), (1e35, "too large")],
)
def test_check_input_refuses_values_the_estimator_refuses(exported, value, message):
    from sknd import onnx as sknd_onnx

    clf, model = exported
    X = bands(10, n_features=4).astype(np.float64)
    X[3, 2] = value
    with pytest.raises(ValueError, match=message):
        sknd_onnx.check_input(model, X)
    with pytest.raises(ValueError, match=message):
        clf.predict(X)


def test_check_input_refuses_non_numbers_and_models_without_metadata(exported, tmp_path):
    onnx = pytest.importorskip("onnx")
    from sknd import onnx as sknd_onnx

    _, model = exported
    with pytest.raises(ValueError, match="numbers"):
        sknd_onnx.check_input(model, np.array([["a", "b", "c", "d"]]))
    older = onnx.ModelProto()
    older.CopyFrom(model)
    del older.metadata_props[:]
    onnx.helper.set_model_props(older, {"band_names": "[]", "sknd_version": "0.0.1"})
    path = tmp_path / "older.onnx"
    onnx.save(older, path)
    with pytest.raises(
        ValueError, match=r"lacks the metadata.*0\.0\.1.*export the estimator again"
    ):
        sknd_onnx.check_input(path, bands(10, n_features=4))
    with pytest.raises(TypeError, match="onnx.ModelProto"):
        sknd_onnx.check_input(model.SerializeToString(), bands(10, n_features=4))


def test_run_in_blocks_equals_one_call_and_the_estimator(exported, tmp_path):
    from sknd import onnx as sknd_onnx

    clf, model = exported
    X = bands(1000, n_features=4, seed=2).astype(np.float64)
    whole = run(model, X.astype(np.float32))
    path = tmp_path / "model.onnx"
    to_onnx(clf, path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for source in (model, path, session):
        outputs = sknd_onnx.run(source, X, block_rows=333)  # the last block is one row
        assert list(outputs) == ["label", "probabilities"]
        np.testing.assert_array_equal(outputs["label"], whole["label"])
        assert_close_across_paths(
            outputs["probabilities"],
            whole["probabilities"],
            atol=1e-6,
            reason="onnxruntime's float32 GEMMs on blocks of 333 rows and one row against 1000 "
            "rows: kernels picked by shape and CPU; an ulp of a logit (<= 1e-6) moves the "
            "probabilities by as much",
        )
    np.testing.assert_array_equal(outputs["label"], clf.predict(X))
    np.testing.assert_allclose(outputs["probabilities"], clf.predict_proba(X), atol=1e-5)
    for block_rows in (0, 2.5, True):
        with pytest.raises(ValueError, match="block_rows"):
            sknd_onnx.run(model, X, block_rows=block_rows)


def test_masked_values_and_files_that_are_no_onnx_model_are_refused(exported, tmp_path):
    # Masked pixels went to the model as real band values; an sknd model file or a damaged
    # file ended in protobuf's DecodeError (fuzz3 repro_05, repro_18b).
    from sknd import onnx as sknd_onnx

    clf, model = exported
    X = bands(5, n_features=4)
    pixels = np.ma.masked_array(X.copy(), mask=False)
    pixels[0] = np.ma.masked
    for call in (sknd_onnx.check_input, sknd_onnx.run):
        with pytest.raises(ValueError, match="masked array with 4 masked values in 1 row"):
            call(model, pixels)
    np.testing.assert_array_equal(
        sknd_onnx.check_input(model, np.ma.masked_array(X)), sknd_onnx.check_input(model, X)
    )
    clf.save_model(tmp_path / "model.sknd")
    (tmp_path / "damaged.onnx").write_bytes(b"\x08\x07\xff\xff garbage")
    with pytest.raises(ValueError, match="is an sknd model file .* not an ONNX model"):
        sknd_onnx.check_input(tmp_path / "model.sknd", X)
    with pytest.raises(ValueError, match="is not an ONNX model"):
        sknd_onnx.check_input(tmp_path / "damaged.onnx", X)
