"""Band names, indices_, export_formulas, pairs by name and passthrough on the real estimators."""

import json
import pickle

import numpy as np
import pandas as pd
import pytest
import torch
from formula_eval import eval_gee, eval_numpy

from sknd import NDClassifier, NDRegressor, NDTransformer
from sknd.inspection import band_identifiers, export_asi
from sknd.nn import normalized_difference

FAST = {"max_epochs": 8, "batch_size": 32, "lr": 0.05, "random_state": 0}
S2 = ["B2", "B3", "B4", "B8", "B11"]
COLUMNS = ["band_i", "band_j", "a", "c", "k", "importance", "known_index"]


def reflectance_data(n=120, seed=0, names=S2):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.uniform(0.02, 0.5, (n, len(names))), columns=names)
    y = (
        np.where(X["B8"] > 1.5 * X["B4"], "vegetation", "other")
        if "B8" in names
        else (X.iloc[:, 0] > X.iloc[:, 1]).to_numpy()
    )
    return X, y


def signed_data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(0, 1.5, (n, 4))
    return X, (X[:, 0] - X[:, 2] > 0).astype(int)


@pytest.mark.parametrize("Estimator", [NDClassifier, NDRegressor, NDTransformer])
def test_indices_table_on_every_estimator(Estimator):
    X, y = reflectance_data()
    if Estimator is NDRegressor:
        y = (X["B8"] - X["B4"]) / (X["B8"] + X["B4"])
    model = Estimator(sensor="sentinel2", **FAST).fit(X, y)
    table = model.indices_
    assert list(table.columns) == COLUMNS
    assert len(table) == len(model.pairs_) == 10
    assert model.band_names_.tolist() == S2
    row = table[(table.band_i == "B4") & (table.band_j == "B8")].iloc[0]
    assert row.known_index == "-NDVI"
    np.testing.assert_allclose(table["importance"].sum(), model.index_importances_.sum())
    assert len(model.export_formulas()) == len(table)


def test_transformer_rows_follow_transform_columns():
    X, y = reflectance_data()
    model = NDTransformer(n_indices=4, sensor="sentinel2", **FAST).fit(X, y)
    names = [f"nd_{i}_{j}" for i, j in zip(model.indices_.band_i, model.indices_.band_j)]
    assert names == model.get_feature_names_out().tolist()
    assert len(model.export_formulas()) == 4
    importances = model.indices_["importance"].to_numpy()
    assert np.all(np.diff(importances) <= 0)  # transform puts the most important first


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("variant", ["reflectance", "signed", "softplus"])
def test_numpy_and_gee_formulas_reproduce_transform(variant, dtype):
    if variant == "reflectance":
        X, y = reflectance_data(names=["B2", "B3", "B4", "B8"])
        X = X.to_numpy()
    else:
        X, y = signed_data()
    X = X.astype(dtype)
    names = ["B2", "B3", "red band", "8"]
    model = NDTransformer(variant=variant, bands=names, **FAST).fit(X, y)
    expected = model.transform(X)
    assert expected.dtype == dtype
    X64 = X.astype(np.float64)
    numpy_values = np.column_stack([eval_numpy(f, names, X64) for f in model.export_formulas()])
    np.testing.assert_allclose(numpy_values, expected, rtol=0, atol=1e-5)
    gee_values = np.column_stack(
        [eval_gee(f, names, X64) for f in model.export_formulas(format="gee")]
    )
    np.testing.assert_allclose(gee_values, expected, rtol=0, atol=1e-5)


def test_classifier_formulas_match_its_nd_layer():
    X, y = reflectance_data()
    clf = NDClassifier(**FAST).fit(X, y)
    values = np.column_stack([eval_numpy(f, S2, X.to_numpy()) for f in clf.export_formulas()])
    x = torch.tensor(X.to_numpy())
    expected = normalized_difference(
        x,
        torch.tensor(clf.coef_a_),
        torch.tensor(clf.coef_c_),
        torch.tensor(clf.pairs_),
        clf.epsilon,
        clf.variant_,
    ).numpy()
    np.testing.assert_allclose(values, expected, rtol=0, atol=1e-5)
    top = clf.export_formulas(format="text", top=2)
    assert len(top) == 2 and all("B" in f for f in top)


def test_band_names_from_bands_parameter_and_sensor_errors():
    X, y = reflectance_data()
    model = NDTransformer(bands=["blue", "green", "red", "nir", "swir1"], **FAST)
    model.fit(X.to_numpy(), y)
    assert model.get_feature_names_out()[0].startswith("nd_")
    assert set(model.indices_.band_i) <= {"blue", "green", "red", "nir", "swir1"}
    assert "-NDVI" in set(model.indices_.known_index)  # (red, nir)
    # bands= wins over DataFrame columns.
    model.fit(X, y)
    assert model.band_names_.tolist() == ["blue", "green", "red", "nir", "swir1"]
    with pytest.raises(ValueError, match="Unknown band name.*'B13'"):
        NDClassifier(sensor="sentinel2", **FAST).fit(X.rename(columns={"B11": "B13"}), y)
    with pytest.raises(ValueError, match="Got 2 bands for 5 input features"):
        NDClassifier(bands=["B4", "B8"], **FAST).fit(X, y)
    with pytest.raises(ValueError, match="Unknown sensor"):
        NDClassifier(sensor="sentinel9", **FAST).fit(X, y)


def test_pairs_by_name():
    X, y = reflectance_data()
    clf = NDClassifier(pairs=[("B8", "B4"), ("nir", "swir1")], sensor="sentinel2", **FAST)
    clf.fit(X, y)
    assert clf.pairs_.tolist() == [[3, 2], [3, 4]]
    assert clf.indices_.known_index.tolist() == ["NDVI", "NDMI, -NDBI"]
    assert clf.export_formulas(format="text", precision=2)[0].startswith("(")
    # By index, as before.
    assert NDClassifier(pairs=[(3, 2)], **FAST).fit(X, y).pairs_.tolist() == [[3, 2]]
    with pytest.raises(ValueError, match="Unknown band 'B12'"):
        NDClassifier(pairs=[("B12", "B4")], **FAST).fit(X, y)


def test_passthrough_standardizes_inside_the_network():
    X, y = reflectance_data()
    plain = NDClassifier(early_stopping=False, **FAST).fit(X, y)
    model = NDClassifier(passthrough=True, early_stopping=False, **FAST).fit(X, y)
    block = model._module[0]
    np.testing.assert_allclose(block.mean.numpy().ravel(), X.mean(), rtol=1e-5)
    np.testing.assert_allclose(block.scale.numpy().ravel(), X.std(ddof=0), rtol=1e-5)
    # One extra input per band to the output layer (one logit).
    assert model.n_parameters_ == plain.n_parameters_ + X.shape[1]
    assert model.passthrough_importances_.shape == (X.shape[1],)
    assert plain.passthrough_importances_.shape == (0,)
    assert len(model.indices_) == len(model.pairs_) == len(model.index_importances_)
    # The standardization is part of the fitted model: it survives pickling.
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict_proba(X), model.predict_proba(X))


def test_passthrough_gives_up_illumination_invariance():
    X, y = reflectance_data(n=200)
    darker = X * 0.5  # the same scene under half the illumination
    plain = NDClassifier(**FAST).fit(X, y)
    np.testing.assert_allclose(plain.predict_proba(darker), plain.predict_proba(X), atol=1e-4)
    model = NDClassifier(passthrough=True, **FAST).fit(X, y)
    assert np.abs(model.predict_proba(darker) - model.predict_proba(X)).max() > 1e-3
    # The learned indices themselves stay invariant.
    transformer = NDTransformer(passthrough=True, **FAST).fit(X, y)
    np.testing.assert_allclose(transformer.transform(darker), transformer.transform(X), atol=1e-4)


def test_passthrough_works_for_every_architecture():
    X, y = reflectance_data()
    for architecture in ["attnd", "mlp"]:
        model = NDClassifier(architecture=architecture, passthrough=True, depth=3, **FAST)
        assert model.fit(X, y).predict(X).shape == (len(X),)
        assert model.passthrough_importances_.shape == (X.shape[1],)


def test_plots_on_a_fitted_estimator():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sknd.plotting import (
        plot_coefficient_matrix,
        plot_top_asymmetric_pairs,
        plot_training_curves,
    )

    X, y = reflectance_data()
    clf = NDClassifier(sensor="sentinel2", **FAST).fit(X, y)
    fig, axes = plt.subplots(1, 3)
    plot_coefficient_matrix(clf, ax=axes[0])
    plot_top_asymmetric_pairs(clf, k=5, ax=axes[1])
    plot_training_curves(clf, ax=axes[2])
    fig.canvas.draw()
    plt.close(fig)


def test_band_identifiers_match_numpy_formulas():
    X, y = reflectance_data()
    names = ["band 2", "band 3", "band 4", "band 8", "band 11"]
    clf = NDClassifier(bands=names, **FAST).fit(X.to_numpy(), y)
    env = dict(zip(band_identifiers(clf.band_names_), X.to_numpy().T))
    assert all(np.all(np.abs(eval(f, {"np": np}, env)) <= 1) for f in clf.export_formulas())


@pytest.mark.parametrize("variant", ["reflectance", "signed"])
def test_asi_entries_evaluated_by_spyndex_reproduce_transform(variant, tmp_path, monkeypatch):
    spyndex = pytest.importorskip("spyndex")
    X, y = reflectance_data()
    if variant == "signed":
        X = X - 0.2  # signed values: sqrt(b**2 + eps) in the denominators
    model = NDTransformer(variant=variant, sensor="sentinel2", n_indices=3, **FAST).fit(X, y)
    catalogue = export_asi(model, tmp_path / "indices.json", date="2026-01-02")
    assert json.loads((tmp_path / "indices.json").read_text()) == catalogue
    model_entries = catalogue["SpectralIndices"]
    assert list(model_entries) == ["SKND1", "SKND2", "SKND3"]
    symbols = {"B2": "B", "B3": "G", "B4": "R", "B8": "N", "B11": "S1"}
    params = {symbols[name]: X[name].to_numpy() for name in S2}
    expected = model.transform(X)
    # spyndex evaluates the entries as catalogue entries (its own checks of the bands included).
    builtin = spyndex.spyndex._get_indices
    monkeypatch.setattr(
        spyndex.spyndex, "_get_indices", lambda online=False: {**builtin(online), **model_entries}
    )
    for column, entry in enumerate(model_entries.values()):
        assert set(entry) == {
            "short_name", "long_name", "formula", "bands", "application_domain",
            "reference", "contributor", "date_of_addition", "platforms",
        }  # fmt: skip
        assert set(entry["bands"]) <= set(params) and "Sentinel-2" in entry["platforms"]
        values = spyndex.computeIndex(entry["short_name"], params=params)
        np.testing.assert_allclose(values, expected[:, column], rtol=0, atol=1e-5)
