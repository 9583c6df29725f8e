"""Tests of the index table and the formula export, on stand-in fitted models.

The stand-in carries exactly the fitted attributes of the estimator contract
(pairs_, coef_a_, coef_c_, index_importances_, epsilon, variant, band names);
tests against the real estimators live in test_interpretation_estimators.py.
"""

import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from formula_eval import GEEParser, eval_gee, eval_numpy
from nd_oracle import nd_reference
from sklearn.exceptions import NotFittedError

from sknd.inspection import (
    band_identifiers,
    export_asi,
    export_formulas,
    get_bands,
    index_table,
)

S2 = ["B2", "B3", "B4", "B5", "B8", "B8A", "B11", "B12"]


def stand_in(
    n_bands=4,
    variant="reflectance",
    bands=None,
    sensor=None,
    seed=0,
    pairs=None,
    feature_names=None,
    epsilon=1e-6,
    **extra,
):
    rng = np.random.default_rng(seed)
    if pairs is None:
        pairs = [(i, j) for i in range(n_bands) for j in range(i + 1, n_bands)]
    pairs = np.asarray(pairs, dtype=int).reshape(-1, 2)
    model = SimpleNamespace(
        n_features_in_=n_bands,
        bands=bands,
        sensor=sensor,
        epsilon=epsilon,
        variant=variant,
        pairs_=pairs,
        coef_a_=rng.normal(0, 1.5, len(pairs)),
        coef_c_=rng.normal(0, 1.5, len(pairs)),
        index_importances_=rng.uniform(0, 1, len(pairs)),
        **extra,
    )
    if feature_names is not None:
        model.feature_names_in_ = np.asarray(feature_names, dtype=object)
    return model


def softplus(x):
    return np.log1p(np.exp(x))


def reference_indices(model, X):
    """The indices of ``model``'s pairs by the tests' one oracle of the formula."""
    return nd_reference(X, model.coef_a_, model.coef_c_, model.pairs_, model.epsilon, model.variant)


def sample(variant, n_bands, seed=1):
    rng = np.random.default_rng(seed)
    if variant == "reflectance":
        return rng.uniform(0, 0.6, (50, n_bands))
    return rng.normal(0, 2, (50, n_bands))


def test_gee_parser_rejects_invalid_syntax():
    bands = {"B4": np.ones(2)}
    for bad in [
        "(b('B4') + 1",
        "b('B4') +",
        "B4 + 1",
        "1e-06 + b('B4')",
        "foo(b('B4'))",
        "b('B4') ^ 2",
    ]:
        with pytest.raises((SyntaxError, KeyError)):
            GEEParser(bad, bands).parse()
    assert GEEParser("-(b(0) ** 2) / 2", bands).parse().tolist() == [-0.5, -0.5]


# --- index_table -------------------------------------------------------------


def test_index_table_columns_and_values():
    model = stand_in(n_bands=len(S2), bands=S2, sensor="sentinel2")
    table = index_table(model)
    assert list(table.columns) == ["band_i", "band_j", "a", "c", "k", "importance", "known_index"]
    assert len(table) == len(model.pairs_)
    np.testing.assert_allclose(table["a"], model.coef_a_)
    np.testing.assert_allclose(table["c"], model.coef_c_)
    np.testing.assert_allclose(table["k"], softplus(model.coef_a_) / softplus(model.coef_c_))
    np.testing.assert_allclose(table["importance"], model.index_importances_)
    row = table[(table.band_i == "B4") & (table.band_j == "B8")].iloc[0]
    assert row.known_index == "-NDVI"
    row = table[(table.band_i == "B8") & (table.band_j == "B12")].iloc[0]
    assert row.known_index == "NBR"
    assert (table[table.band_i == "B2"].known_index == "").sum() >= 1


def test_index_table_names_from_dataframe_columns_and_defaults():
    model = stand_in(n_bands=3, feature_names=["green", "red", "nir"])
    table = index_table(model)
    assert table[["band_i", "band_j", "known_index"]].values.tolist() == [
        ["green", "red", "NGRDI, -NDTI"],
        ["green", "nir", "NDWI, -GNDVI"],
        ["red", "nir", "-NDVI"],
    ]
    model = stand_in(n_bands=3)
    assert index_table(model)["band_i"].tolist() == ["x0", "x0", "x1"]
    assert (index_table(model)["known_index"] == "").all()


def test_index_table_follows_transform_order():
    model = stand_in(
        n_bands=4, bands=["B2", "B3", "B4", "B8"], sensor="s2", selected_indices_=np.array([5, 2])
    )
    table = index_table(model)
    pairs = model.pairs_[[5, 2]]
    assert table["band_i"].tolist() == [model.bands[i] for i in pairs[:, 0]]
    np.testing.assert_allclose(table["importance"], model.index_importances_[[5, 2]])


def test_index_table_explicit_pairs_and_empty_layer():
    model = stand_in(
        n_bands=3, bands=["B4", "B8", "B11"], sensor="sentinel2", pairs=[(1, 0), (1, 2)]
    )
    assert index_table(model)["known_index"].tolist() == ["NDVI", "NDMI, -NDBI"]
    empty = stand_in(n_bands=3, pairs=np.empty((0, 2)))
    table = index_table(empty)
    assert table.empty and "known_index" in table.columns
    assert export_formulas(empty) == []


def test_not_fitted():
    with pytest.raises(NotFittedError):
        index_table(SimpleNamespace(n_features_in_=2))
    with pytest.raises(NotFittedError):
        export_formulas(SimpleNamespace())


def test_get_bands_prefers_resolved_attribute():
    model = stand_in(n_bands=2)
    model.bands_ = get_bands(
        SimpleNamespace(n_features_in_=2, bands=["B4", "B8"], sensor="sentinel2")
    )
    assert [band.common_name for band in get_bands(model)] == ["red", "nir"]


# --- export_formulas ---------------------------------------------------------


@pytest.mark.parametrize("variant", ["reflectance", "signed", "softplus"])
def test_numpy_formulas_reproduce_the_indices(variant):
    model = stand_in(n_bands=len(S2), bands=S2, sensor="sentinel2", variant=variant)
    X = sample(variant, len(S2))
    formulas = export_formulas(model, format="numpy")
    assert len(formulas) == len(model.pairs_)
    values = np.column_stack([eval_numpy(f, S2, X) for f in formulas])
    np.testing.assert_allclose(values, reference_indices(model, X), rtol=0, atol=1e-10)


_QGIS_TOKEN = re.compile(
    r'\s*(?:(?P<number>\d+\.\d*|\.\d+|\d+)|(?P<ref>"[^"@]+@1")|(?P<op>[-+*/^()])|(?P<func>sqrt|ln))'
)


def eval_qgis(formula, names, X):
    """The QGIS raster-calculator grammar's subset the export uses, checked token by token."""
    python, position = [], 0
    while position < len(formula.rstrip()):
        match = _QGIS_TOKEN.match(formula, position)
        assert match is not None, f"not QGIS raster-calculator syntax at {formula[position:]!r}"
        kind, text = match.lastgroup, match.group(match.lastgroup)
        if kind == "ref":
            python.append(f"band[{names.index(text[1:-3])}]")
        elif kind == "func":
            python.append({"sqrt": "np.sqrt", "ln": "np.log"}[text])
        else:
            python.append("**" if text == "^" else text)
        position = match.end()
    return eval(" ".join(python), {"__builtins__": {}, "np": np, "band": X.T})


@pytest.mark.parametrize("fmt", ["gee", "qgis"])
@pytest.mark.parametrize("variant", ["reflectance", "signed", "softplus"])
def test_gee_and_qgis_formulas_parse_and_reproduce_the_indices(variant, fmt):
    names = ["B8", "Band 4", "red-edge'1", "2nd"]
    model = stand_in(n_bands=4, bands=names, variant=variant, epsilon=2.5e-7)
    X = sample(variant, 4)
    # The parsers accept no exponent literals: epsilon must come out as 0.00000025.
    formulas = export_formulas(model, format=fmt)
    evaluate = eval_gee if fmt == "gee" else eval_qgis
    values = np.column_stack([evaluate(f, names, X) for f in formulas])
    np.testing.assert_allclose(values, reference_indices(model, X), rtol=0, atol=1e-10)


@pytest.mark.parametrize("variant", ["reflectance", "signed", "softplus"])
def test_numpy_formulas_with_awkward_band_names(variant):
    names = ["Band 8", "8", "lambda", "np", "B-4"]
    model = stand_in(n_bands=5, bands=names, variant=variant)
    X = sample(variant, 5)
    values = np.column_stack(
        [eval_numpy(f, names, X) for f in export_formulas(model, format="numpy")]
    )
    np.testing.assert_allclose(values, reference_indices(model, X), rtol=0, atol=1e-10)


def test_readable_formula_matches_the_issue_example():
    model = stand_in(n_bands=2, bands=["B4", "B8"], sensor="sentinel2", pairs=[(1, 0)])
    model.coef_a_ = np.array([np.log(np.expm1(1.73))])  # softplus(a) = 1.73
    model.coef_c_ = np.array([np.log(np.expm1(0.58))])
    (formula,) = export_formulas(model, precision=3)
    assert formula == "(1.73*B8 - 0.58*B4) / (1.73*B8 + 0.58*B4 + 1e-06)"
    (text,) = export_formulas(model, format="text", precision=3)
    assert text == formula
    (gee,) = export_formulas(model, format="gee", precision=3)
    assert gee == "(1.73*b('B8') - 0.58*b('B4')) / (1.73*b('B8') + 0.58*b('B4') + 0.000001)"
    (latex,) = export_formulas(model, format="latex", precision=3)
    assert latex == (
        r"\frac{1.73\,\mathrm{B8} - 0.58\,\mathrm{B4}}"
        r"{1.73\,\mathrm{B8} + 0.58\,\mathrm{B4} + 10^{-6}}"
    )


@pytest.mark.parametrize("variant", ["signed", "softplus"])
def test_latex_and_text_variants(variant):
    model = stand_in(n_bands=2, bands=["B_1", "nir"], variant=variant)
    (latex,) = export_formulas(model, format="latex", precision=2)
    (text,) = export_formulas(model, format="text", precision=2)
    assert latex.count("{") == latex.count("}")
    assert r"\mathrm{B\_1}" in latex
    if variant == "signed":
        assert r"\sqrt{\mathrm{nir}^{2} + 10^{-6}}" in latex
        assert "sqrt(nir**2 + 1e-06)" in text
    else:
        assert r"\log\left(1 + e^{\mathrm{nir}}\right)" in latex
        assert "log(1 + exp(nir))" in text
    (odd,) = export_formulas(stand_in(n_bands=2, bands=["Band 1", "x"]), format="text")
    assert "[Band 1]" in odd


def test_top_orders_by_importance():
    model = stand_in(n_bands=5)
    formulas = export_formulas(model)
    top = export_formulas(model, top=3)
    order = np.argsort(-model.index_importances_)[:3]
    assert top == [formulas[i] for i in order]
    assert len(export_formulas(model, top=100)) == len(formulas)


def test_export_validation():
    model = stand_in(n_bands=3)
    with pytest.raises(ValueError, match="format"):
        export_formulas(model, format="js")
    with pytest.raises(ValueError, match="top"):
        export_formulas(model, top=0)
    with pytest.raises(ValueError, match="precision"):
        export_formulas(model, precision=0)
    model.variant = "other"
    with pytest.raises(ValueError, match="variant"):
        export_formulas(model)
    quotes = stand_in(n_bands=2, bands=["a'\"", "b"])
    with pytest.raises(ValueError, match="quote"):
        export_formulas(quotes, format="gee")


def test_band_identifiers_are_unique_identifiers():
    names = ["B 1", "B_1", "B-1", "1", "class", "np", ""]
    idents = band_identifiers(names)
    assert len(set(idents)) == len(names)
    assert all(ident.isidentifier() and ident not in ("class", "np") for ident in idents)
    assert isinstance(index_table(stand_in(n_bands=2)), pd.DataFrame)


# --- other sensors' band names and Awesome Spectral Indices --------------------


def test_formulas_for_another_sensor_use_its_band_names():
    landsat = ["B2", "B3", "B4", "B5"]  # blue, green, red, nir of Landsat 8
    model = stand_in(n_bands=4, bands=landsat, sensor="landsat8")
    X = sample("reflectance", 4)
    sentinel = ["B2", "B3", "B4", "B8"]  # the same common names on Sentinel-2
    for fmt, evaluate in [("numpy", eval_numpy), ("gee", eval_gee)]:
        formulas = export_formulas(model, format=fmt, sensor="sentinel2")
        assert all("B5" not in formula for formula in formulas)
        values = np.column_stack([evaluate(f, sentinel, X) for f in formulas])
        np.testing.assert_allclose(values, reference_indices(model, X), rtol=0, atol=1e-10)
    # A band the target sensor lacks, or without a common name: an error naming it.
    thermal = stand_in(n_bands=2, bands=["B4", "B10"], sensor="landsat8")
    with pytest.raises(ValueError, match=r"Sentinel-2 MSI has no tir1 band \(the model's 'B10'\)"):
        export_formulas(thermal, sensor="sentinel2")
    unnamed = stand_in(n_bands=2)
    with pytest.raises(ValueError, match="has no common name"):
        export_formulas(unnamed, format="gee", sensor="sentinel2")
    with pytest.raises(ValueError, match="Unknown sensor"):
        export_formulas(model, sensor="bogus")


@pytest.mark.parametrize("variant", ["reflectance", "signed"])
def test_asi_formulas_reproduce_the_indices(variant):
    model = stand_in(n_bands=len(S2), bands=S2, sensor="sentinel2", variant=variant)
    X = sample(variant, len(S2))
    symbols = ["B", "G", "R", "RE1", "N", "N2", "S1", "S2"]  # of S2's bands, in order
    formulas = export_formulas(model, format="asi")
    # Arithmetic over the catalogue's symbols, as spyndex evaluates it (no numpy names).
    values = np.column_stack(
        [eval(f, {"__builtins__": {}}, dict(zip(symbols, X.T))) for f in formulas]
    )
    np.testing.assert_allclose(values, reference_indices(model, X), rtol=0, atol=1e-10)


def test_asi_export_refusals_and_fields():
    with pytest.raises(ValueError, match="QGIS raster-calculator reference"):
        export_formulas(stand_in(n_bands=2, bands=["a@b", "c"]), format="qgis")
    with pytest.raises(ValueError, match="no log or exp"):
        export_formulas(stand_in(bands=S2[:4], sensor="sentinel2", variant="softplus"), "asi")
    with pytest.raises(ValueError, match="leave sensor out"):
        export_formulas(stand_in(bands=S2[:4], sensor="sentinel2"), "asi", sensor="landsat8")
    with pytest.raises(ValueError, match="no Awesome Spectral Indices symbol"):
        export_asi(stand_in(n_bands=2))  # x0, x1: no common names
    # An unused band without a symbol is no obstacle.
    model = stand_in(n_bands=3, bands=["B4", "B5", "B8"], sensor="landsat8", pairs=[(1, 0)])
    entry = export_asi(model, prefix="LND", reference="doi:x", date="2026-01-01")
    entry = entry["SpectralIndices"]["LND1"]
    assert entry["bands"] == ["N", "R"] and "Landsat-OLI" in entry["platforms"]  # B8: pan
    assert entry["application_domain"] == "vegetation"  # NDVI's pair
    assert entry["reference"] == "doi:x" and entry["date_of_addition"] == "2026-01-01"
    with pytest.raises(ValueError, match="prefix"):
        export_asi(model, prefix="1x")


def test_a_trained_layer_and_to_torch_are_read_as_estimators():
    import importlib.util

    import torch

    from sknd import NDClassifier
    from sknd.nn import NormalizedDifference
    from sknd.plotting import plot_coefficient_matrix, plot_top_asymmetric_pairs

    # The plots where matplotlib is installed (the minimum-versions run has none).
    plots = importlib.util.find_spec("matplotlib") is not None
    if plots:
        import matplotlib

        matplotlib.use("Agg")
    layer = NormalizedDifference(
        bands=["B3", "B4", "B8"], sensor="sentinel2", pairs=[("B8", "B4"), ("B3", "B8")]
    )
    with torch.no_grad():
        layer.a.copy_(torch.tensor([0.5, -1.0]))
    model = torch.nn.Sequential(layer, torch.nn.Linear(layer.n_outputs, 1))
    for source in (layer, model):
        table = index_table(source)
        assert table[["band_i", "band_j", "known_index"]].values.tolist() == [
            ["B8", "B4", "NDVI"],
            ["B3", "B8", "NDWI, -GNDVI"],
        ]
        np.testing.assert_allclose(table["a"], [0.5, -1.0])
        assert table["importance"].isna().all()  # no data to measure it on
        bands = np.random.default_rng(0).uniform(0.05, 0.5, (20, 3))
        names = ["B3", "B4", "B8"]
        values = np.column_stack([eval_numpy(f, names, bands) for f in export_formulas(source)])
        with torch.no_grad():
            expected = layer(torch.as_tensor(bands, dtype=torch.float32)).numpy()
        np.testing.assert_allclose(values, expected, rtol=1e-5, atol=1e-6)
        if plots:
            plot_coefficient_matrix(source)
            plot_top_asymmetric_pairs(source)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.uniform(0.01, 0.5, (200, 3)), columns=["B3", "B4", "B8"])
    clf = NDClassifier(sensor="sentinel2", max_epochs=3, random_state=0)
    clf.fit(frame, (frame.B8 > frame.B4).astype(int))
    columns = ["band_i", "band_j", "a", "c", "k", "known_index"]
    pd.testing.assert_frame_equal(index_table(clf.to_torch())[columns], clf.indices_[columns])
    assert export_formulas(clf.to_torch()) == clf.export_formulas()
    with pytest.raises(TypeError, match="no sknd.nn.NormalizedDifference layer"):
        index_table(torch.nn.Linear(2, 2))


def test_known_index_names_only_for_bands_as_measured(capsys):
    # Behind a StandardScaler, indices_ named the columns "-NDVI", "NDWI, -GNDVI" without a word.
    import torch
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sknd import NDClassifier
    from sknd.indices import why_no_known_indices
    from sknd.nn import NormalizedDifference

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.uniform(0.01, 0.5, (200, 3)), columns=["B3", "B4", "B8"])
    y = (frame.B8 > frame.B4).astype(int)
    measured = NDClassifier(sensor="sentinel2", max_epochs=3, random_state=0).fit(frame, y)
    assert "-NDVI" in measured.indices_["known_index"].tolist()
    assert "note" not in measured.indices_.attrs and why_no_known_indices(measured) is None
    scaled = make_pipeline(
        StandardScaler(), NDClassifier(sensor="sentinel2", max_epochs=3, random_state=0, verbose=1)
    ).set_output(transform="pandas")
    with pytest.warns(UserWarning, match="looks standardized.*StandardScaler.*'Bands as measured'"):
        scaled.fit(frame, y)
    clf = scaled[-1]
    assert clf.variant_ == "signed" and (clf.indices_["known_index"] == "").all()
    assert clf.indices_.attrs["note"].startswith("No known index names: the bands were signed")
    assert clf.indices_.attrs["note"] in capsys.readouterr().out
    assert (index_table(clf)["known_index"] == "").all()
    entry = export_asi(clf, date="2026-01-01")["SpectralIndices"]["SKND1"]
    assert "band pair of" not in entry["long_name"]
    # A layer in a torch model: named under variant="reflectance" (non-negative inputs only).
    signed = NormalizedDifference(bands=["B3", "B4", "B8"], sensor="sentinel2", variant="signed")
    assert (index_table(signed)["known_index"] == "").all()
    assert "variant='signed' takes signed inputs" in index_table(signed).attrs["note"]
    reflectance = NormalizedDifference(bands=["B3", "B4", "B8"], sensor="sentinel2")
    assert index_table(torch.nn.Sequential(reflectance))["known_index"].tolist()[-1] == "-NDVI"


def test_top_of_a_torch_module_is_refused_for_want_of_importances():
    # export_formulas(my_torch_model, top=3) raised AttributeError 'index_importances_'.
    import torch

    from sknd.nn import NormalizedDifference

    model = torch.nn.Sequential(NormalizedDifference(4), torch.nn.Linear(6, 1))
    with pytest.raises(TypeError, match="top=3 keeps the most important.*Pass the fitted"):
        export_formulas(model, top=3)
    assert len(export_formulas(model)) == 6


def test_numpy_formulas_for_another_sensor_name_its_bands_as_it_does():
    # An unused Sentinel-2 "B2" (blue) made Landsat 7's "B2" (green) "B2_2" (fuzz3 repro_13).
    model = SimpleNamespace(
        n_features_in_=3, bands=["B2", "B3", "B8"], sensor="sentinel2",
        pairs_=np.array([[2, 1]]), coef_a_=np.array([0.3]), coef_c_=np.array([-0.2]),
        index_importances_=np.array([1.0]), epsilon=1e-6, variant="reflectance",
    )  # fmt: skip
    formula = export_formulas(model, format="numpy", sensor="landsat7")[0]
    assert re.findall(r"\bB\w+", formula) == ["B4", "B2", "B4", "B2"]
    values = {"B4": np.array([0.4]), "B2": np.array([0.1])}
    assert np.isfinite(eval(formula, {"np": np}, values)).all()
