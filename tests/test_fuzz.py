"""Fuzzing of the contract (docs/contract.md) with hypothesis, derandomized.

Random containers, dtypes, shapes, magnitudes, NaN/inf/negative values and
parameter values go through predict / predict_proba / transform, sknd.raster,
the estimators' fit (labels of every kind in y and y_val) and the experiments
command line (its options and small CSV files). Each case must end in a
``ValueError``/``TypeError`` or in a result that is finite, in range and equal
across containers; the command line answers with exit code 0 or 2 and never a
traceback. Seconds, not minutes: the models are fitted once per module.
"""

import numpy as np
import pandas as pd
import pytest

# Fuzzing: behind the slow marker (`make test-all` and CI run it).
pytestmark = pytest.mark.slow
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sknd import NDClassifier, NDTransformer, raster  # noqa: E402

FUZZ = settings(
    derandomize=True,
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
EXPECTED = (ValueError, TypeError)


# What this module's tests draw from conftest's band_data, after the sample and band counts.
DATA = {"pair": (3, 2)}


@pytest.fixture(scope="module")
def models(band_data):
    X, y = band_data(60, 4, **DATA)
    fast = dict(max_epochs=3, batch_size=16, random_state=0)
    return NDClassifier(**fast).fit(X, y), NDTransformer(**fast).fit(X, y)


VALUES = st.one_of(
    st.floats(0.0, 1.0),
    st.sampled_from([0.0, -0.1, -9999.0, 65535.0, 1e16, 9.96921e36, np.nan, np.inf, -np.inf]),
)
DTYPES = st.sampled_from(["float64", "float32", "int64", "uint16", "bool", "complex128", "M8[s]"])


@st.composite
def tables(draw, n_bands=None):
    n_rows = draw(st.integers(0, 6))
    n_cols = n_bands if n_bands is not None else draw(st.integers(1, 6))
    values = draw(st.lists(VALUES, min_size=n_rows * n_cols, max_size=n_rows * n_cols))
    X = np.asarray(values, dtype=np.float64).reshape(n_rows, n_cols)
    dtype = draw(DTYPES)
    with np.errstate(all="ignore"):
        if dtype in ("int64", "uint16", "M8[s]"):
            X = np.nan_to_num(X, posinf=0, neginf=0).clip(0, 65535).astype(dtype)
        else:
            X = X.astype(dtype)
    return X


def _finite_or_refused(call, *args, **kwargs):
    """The result of ``call(...)``, or None when it was refused with a clear error type."""
    try:
        result = call(*args, **kwargs)
    except EXPECTED as exc:
        assert str(exc), "an error must say what is wrong"
        return None
    return result


@FUZZ
@given(X=tables(), container=st.sampled_from(["array", "list", "frame", "masked", "reversed"]))
def test_prediction_methods(models, X, container):
    clf, transformer = models
    inputs = {
        "array": X,
        "list": X.tolist(),
        "frame": pd.DataFrame(X),
        "masked": np.ma.masked_array(X),
        "reversed": np.ascontiguousarray(X[::-1])[::-1],  # negative strides
    }[container]
    for method, check in (
        (clf.predict, lambda r: set(np.unique(r)) <= {0, 1}),
        (clf.predict_proba, lambda r: np.all((r >= 0) & (r <= 1))),
        (transformer.transform, lambda r: np.all(np.abs(r) <= 1 + 1e-6)),
    ):
        result = _finite_or_refused(method, inputs)
        # A list holds Python floats: a float32 table as a list is its float64 cast, which
        # is computed in float64 (the table itself in float32).
        same = X.astype(np.float64) if container == "list" and X.dtype == np.float32 else X
        reference = _finite_or_refused(method, same)
        assert (result is None) == (reference is None), "containers must agree"
        if result is not None:
            assert len(result) == len(X)
            assert np.all(np.isfinite(np.asarray(result, dtype=np.float64)))
            assert check(result)
            np.testing.assert_array_equal(result, reference)


@FUZZ
@given(
    X=tables(n_bands=4),
    nodata=st.sampled_from([None, 0, 0.0, -9999, np.nan, "0", [0, 0]]),
    fill_value=st.sampled_from([None, -1, np.nan, 0.5, "x", 1j, 0, 1.0]),
    n_jobs=st.sampled_from([1, 2]),
)
def test_raster(models, X, nodata, fill_value, n_jobs):
    clf, _ = models
    image = X.reshape(1, len(X), 4) if len(X) else X.reshape(0, 1, 4)
    result = _finite_or_refused(
        raster.predict, clf, image, nodata=nodata, fill_value=fill_value, n_jobs=n_jobs
    )
    if result is None:
        return
    assert fill_value not in (0, 1), "a fill value equal to a class makes no-data a class"
    assert result.shape == image.shape[:-1]
    with np.errstate(all="ignore"):
        values = X.astype(np.float64) if X.dtype.kind in "biuf" else None
    assert values is not None, "only real band values can be predicted"
    invalid = np.isnan(values).any(axis=1)
    if nodata is not None and not (isinstance(nodata, float) and np.isnan(nodata)):
        invalid |= (values == nodata).any(axis=1)
    flat = result.reshape(-1)
    expected_fill = np.nan if fill_value is None else fill_value
    for pixel in np.flatnonzero(invalid):
        if isinstance(expected_fill, float) and np.isnan(expected_fill):
            assert np.isnan(flat[pixel])
        else:
            assert flat[pixel] == expected_fill
    if (~invalid).any():
        np.testing.assert_array_equal(flat[~invalid], clf.predict(values[~invalid]))


@settings(derandomize=True, max_examples=15, deadline=None)
@given(
    params=st.fixed_dictionaries(
        {},
        optional={
            "lr": st.sampled_from([1e-3, 0.0, -1.0, 1e39, np.nan, 50.0]),
            "epsilon": st.sampled_from([1e-6, 0.0, 1e-30, np.nan, 1e16]),
            "hidden_units": st.sampled_from([None, 0, 1, 4, 10**12]),
            "batch_size": st.sampled_from([1, 16, 0, True, 2.5]),
            "depth": st.sampled_from([1, 2, 3]),
            "architecture": st.sampled_from(["nd", "mlp", "attnd", "bogus"]),
        },
    )
)
def test_fit_parameters(params, band_data):
    X, y = band_data(30, 4, **DATA)
    model = NDClassifier(max_epochs=2, random_state=0, **params)
    fitted = _finite_or_refused(model.fit, X, y)
    if fitted is None:
        assert not hasattr(model, "n_features_in_"), "a failed fit leaves no model behind"
        return
    proba = fitted.predict_proba(X)
    assert np.all(np.isfinite(proba)) and np.all((proba >= 0) & (proba <= 1))


BAND_NAMES = ["blue", "green", "red", "nir"]


@pytest.fixture(scope="module")
def named_model(band_data):
    X, y = band_data(60, 4, **DATA)
    frame = pd.DataFrame(X, columns=BAND_NAMES)
    return NDClassifier(max_epochs=3, passthrough=True, random_state=0).fit(frame, y)


@FUZZ
@given(
    order=st.permutations(range(4)),
    keep=st.integers(4, 4) | st.integers(2, 3),
    naming=st.sampled_from(["coordinate", "long_name", "sel", "isel", "none", "bands"]),
    positional=st.booleans(),
)
def test_raster_band_order(named_model, order, keep, naming, positional):
    # An image's bands in any order, named by a band coordinate, by file descriptions after
    # .sel/.isel (rioxarray keeps long_name stale), by bands=, or not at all: the map is that
    # of the right bands, or the call is refused; never a map of other bands.
    import warnings

    xr = pytest.importorskip("xarray")
    from sknd.bands import BandPositionWarning

    rng = np.random.default_rng(1)
    pixels = rng.uniform(0.05, 0.5, (12, 4))
    truth = named_model.predict_proba(pd.DataFrame(pixels, columns=BAND_NAMES))
    order = list(order)[:keep]
    data = pixels.T.reshape(4, 3, 4)
    if naming in ("sel", "isel"):  # a whole file, then a reordered subset of its bands
        scene = xr.DataArray(data, dims=("band", "y", "x"), coords={"band": [1, 2, 3, 4]})
        scene.attrs["long_name"] = tuple(BAND_NAMES)
        numbers = [k + 1 for k in order]
        scene = scene.sel(band=numbers) if naming == "sel" else scene.isel(band=order)
    else:
        scene = xr.DataArray(data[order], dims=("band", "y", "x"))
        if naming == "coordinate":
            scene = scene.assign_coords(band=[BAND_NAMES[k] for k in order])
        elif naming == "long_name":
            scene.attrs["long_name"] = tuple(BAND_NAMES[k] for k in order)
    bands = [BAND_NAMES[k] for k in order] if naming == "bands" else None
    bands = "positional" if positional else bands
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        proba = _finite_or_refused(raster.predict_proba, named_model, scene, bands=bands)
    if proba is None:
        return
    assert keep == 4, "a model of 4 bands predicted from fewer"
    values = np.moveaxis(proba.values, 0, -1).reshape(-1, 2)
    if not positional:
        np.testing.assert_allclose(values, truth, atol=1e-6)
    elif order != [0, 1, 2, 3] and naming not in ("none", "bands"):
        # Positions that the image's own names contradict: said, in a class of its own.
        assert any(issubclass(w.category, BandPositionWarning) for w in caught)


@FUZZ
@given(
    class_weight=st.dictionaries(
        st.sampled_from([0, 1, 2]),
        st.sampled_from([1.0, 0.0, -1.0, np.nan, np.inf, 1e300, 1000.0, 1e-4, "2"]),
        max_size=3,
    )
    | st.none(),
    classes=st.sampled_from([None, [], [0], [0, 1], [0, 1, 2]]),
    first_constant=st.booleans(),
)
def test_partial_fit_and_weights(class_weight, classes, first_constant, band_data):
    # partial_fit's classes, class weights like sample weights, and a regressor whose first
    # block has a constant target: a clear ValueError, or a model that keeps learning.
    from sknd import NDRegressor

    X, y = band_data(90, 4, **DATA)
    clf = NDClassifier(max_epochs=2, random_state=0, class_weight=class_weight)
    fitted = _finite_or_refused(clf.partial_fit, X[:30], y[:30], classes=classes)
    if fitted is not None:
        assert classes is not None and len(classes) >= 2
        proba = fitted.partial_fit(X[30:], y[30:]).predict_proba(X)
        assert np.isfinite(proba).all()
        values = [] if class_weight is None else list(class_weight.values())
        assert all(isinstance(v, float) and 0 <= v <= 1e15 for v in values), class_weight
    target = 10 * (X[:, 3] - X[:, 2])
    reg = NDRegressor(random_state=0)
    reg.partial_fit(X[:30], np.zeros(30) if first_constant else target[:30])
    for _ in range(3):
        reg.partial_fit(X[30:], target[30:])
    assert np.ptp(reg.predict(X)) > 0, "the first block's constant froze the model"


@FUZZ
@given(
    values=st.lists(
        st.sampled_from([0.0, 0.2, 1.0, 3e38, 1e30, -2.0, np.inf, -np.inf, np.nan]),
        min_size=6,
        max_size=6,
    ),
    variant=st.sampled_from(["reflectance", "signed", "softplus"]),
    method=st.sampled_from(["gather", "matmul"]),
    dtype=st.sampled_from(["float32", "float64"]),
    epsilon=st.sampled_from([1e-6, 1e-15, 1e-50, np.inf, 1e15]),
)
def test_torch_layer(values, variant, method, dtype, epsilon):
    # The raw torch layer: NaN and negative reflectance refused; infinite and huge inputs give
    # bounded outputs, and one band's inf leaves the pixel's other indices as they were.
    torch = pytest.importorskip("torch")
    from sknd.nn import NormalizedDifference

    try:
        layer = NormalizedDifference(3, variant=variant, method=method, epsilon=epsilon)
    except ValueError as exc:
        assert "epsilon" in str(exc) and not 1e-15 <= epsilon <= 1e15
        return
    x = torch.tensor(values, dtype=getattr(torch, dtype)).reshape(2, 3)
    out = _finite_or_refused(layer.to(x.dtype), x)
    if out is None:
        return
    assert torch.isfinite(out).all() and (out.abs() <= 1).all(), (values, out)
    for row in range(2):
        tame = x[row : row + 1].clone()
        wild = tame.abs() > 1e29  # infinite or huge
        tame[wild] = 0.5
        expected = layer(tame)
        for p, (i, j) in enumerate(layer.pairs.tolist()):
            if not (wild[0, i] or wild[0, j]):
                torch.testing.assert_close(out[row, p], expected[0, p], atol=1e-6, rtol=0)


def _label_kind(value):
    return str if isinstance(value, str) else bytes if isinstance(value, bytes) else int


LABELS = st.sampled_from([0, 1, 2, 1.5, True, "a", "b", b"c", np.int64(3), np.str_("d")])


@settings(derandomize=True, max_examples=20, deadline=None)
@given(
    labels=st.lists(LABELS, min_size=2, max_size=4),
    container=st.sampled_from(["list", "object", "series"]),
    as_y_val=st.booleans(),
)
def test_label_kinds(labels, container, as_y_val, band_data):
    # Labels of one kind train, or are refused for another reason; mixed numbers and
    # strings are refused by name, never with numpy's "'<' not supported" nor converted.
    X, _ = band_data(30, 4, **DATA)
    values = [labels[i % len(labels)] for i in range(30)]
    y = {
        "list": values,
        "object": np.array(values, dtype=object),
        "series": pd.Series(values, dtype=object),
    }[container]
    kinds = {_label_kind(v) for v in values}
    model = NDClassifier(max_epochs=2, random_state=0)
    name = "y_val" if as_y_val else "y"
    try:
        if as_y_val:
            model.fit(X, (np.arange(30) % 2), X_val=X, y_val=y)
        else:
            model.fit(X, y)
    except EXPECTED as exc:
        message = str(exc)
        assert "'<' not supported" not in message, message
        if len(kinds) > 1:
            assert message.startswith(f"{name} mixes "), message
        return
    assert len(kinds) == 1, f"mixed labels {values!r} were accepted"
    if not as_y_val:  # the labels come back as they were given, not as text
        assert {_label_kind(c) for c in model.classes_.tolist()} == kinds, model.classes_


def _run_experiments_cli(argv, capsys):
    """``(exit code, stderr)`` of ``python -m sknd.experiments`` run in-process; the code is
    0 or 2 and stderr holds no traceback (the CLI's contract)."""
    from sknd.experiments._cli import main

    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code in (0, 2), err
    assert "Traceback" not in err
    return code, err


@pytest.fixture(scope="module")
def csv_path(tmp_path_factory, band_data):
    X, y = band_data(60, 4, **DATA)
    frame = pd.DataFrame(X, columns=["B2", "B3", "B4", "B8"]).assign(label=y)
    path = tmp_path_factory.mktemp("fuzz") / "data.csv"
    frame.to_csv(path, index=False)
    return path


@settings(
    derandomize=True,
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    option=st.sampled_from(
        ["--folds", "--depths", "--max-epochs", "--n-jobs", "--models", "--noise-levels",
         "--hidden-units", "--patience", "--pairs", "--noise-repeats", "--n-estimators",
         "--bands", "--max-samples", "--sensor"]
    ),
    value=st.sampled_from(["0", "1", "-1", "", "nan", "inf", "1e400", "bogus", "2,x", "1.5",
                           "B2,B2", "B2,B3"]),
)  # fmt: skip
def test_cli_usage_errors(csv_path, capsys, option, value):
    argv = ["--dataset", str(csv_path), "--quick", "--quiet", "--no-figures", "--folds", "2"]
    argv += ["--models", "logreg_bands", "--noise-levels", "0", "--noise-repeats", "1"]
    _run_experiments_cli(argv + ["--output", str(csv_path.parent / "out"), option, value], capsys)


CELLS = st.one_of(
    st.floats(0.01, 1.0).map(lambda v: f"{v:.3f}"),
    st.sampled_from(["", "nan", "inf", "-1", "x", "1e400", "0"]),
)


@st.composite
def csv_texts(draw):
    """Small CSVs: a few band columns, a label column of numbers or text, odd cells."""
    n_rows = draw(st.integers(0, 14))
    n_bands = draw(st.integers(0, 4))
    header = [f"B{k}" for k in range(n_bands)] + [draw(st.sampled_from(["label", "class", "x"]))]
    if draw(st.booleans()) and n_bands:
        header[0] = header[-1]  # a duplicated column name
    labels = draw(st.sampled_from([["0", "1"], ["a", "b"], ["0", "a"], ["1"], ["0", "1", "2"]]))
    rows = []
    for i in range(n_rows):
        if draw(st.integers(0, 9)) == 0:  # an odd cell
            cells = [draw(CELLS) for _ in range(n_bands)]
        else:
            cells = [f"{0.1 + 0.05 * ((i * 7 + k * 3) % 9):.2f}" for k in range(n_bands)]
        rows.append(cells + [labels[i % len(labels)]])
    if draw(st.integers(0, 9)) == 0 and rows:
        rows[-1] = rows[-1][:-1]  # a short line
    return "\n".join(",".join(line) for line in [header, *rows]) + "\n"


@settings(
    derandomize=True,
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(text=csv_texts())
def test_cli_csv_shapes(tmp_path_factory, capsys, text):
    folder = tmp_path_factory.mktemp("csv")
    (folder / "data.csv").write_text(text)
    argv = ["--dataset", str(folder / "data.csv"), "--quiet", "--no-figures", "--folds", "2"]
    argv += ["--models", "logreg_bands", "--noise-levels", "0", "--noise-repeats", "1"]
    code, err = _run_experiments_cli(
        argv + ["--depths", "2", "--output", str(folder / "out")], capsys
    )
    if code == 2:
        assert err.strip().splitlines()[-1].startswith("python -m sknd.experiments: error: ")
    else:
        assert (folder / "out" / "results.csv").exists()


# ------------------------------------------------- third campaign: new surfaces
@pytest.fixture(scope="module")
def saved_model(models, tmp_path_factory):
    import sknd

    path = tmp_path_factory.mktemp("saved") / "model.sknd"
    models[0].save_model(path)
    return sknd.load_model(path)


@FUZZ
@given(X=tables(n_bands=4), masked=st.lists(st.booleans(), min_size=0, max_size=24))
def test_masked_input_is_refused_alike(models, saved_model, X, masked):
    # A loaded model took masked arrays and predicted the values under the mask (fuzz3 repro_04).
    mask = np.zeros(X.shape, dtype=bool)
    mask.flat[: min(len(masked), mask.size)] = masked[: mask.size]
    pixels = np.ma.masked_array(X, mask=mask)
    for method in ("predict", "predict_proba"):
        expected = _finite_or_refused(getattr(models[0], method), pixels)
        result = _finite_or_refused(getattr(saved_model, method), pixels)
        assert (result is None) == (expected is None), (method, mask)
        if mask.any():
            assert result is None
        if result is not None:
            np.testing.assert_array_equal(result, expected)


LABEL_KINDS = st.sampled_from(
    ["float16", "float32", "float64", "int8", "uint64", "bool", "str", "object", "nul", "bytes"]
)


@settings(derandomize=True, max_examples=12, deadline=None)
@given(kind=LABEL_KINDS, offset=st.sampled_from([0, 1, -3, 1000]))
def test_model_files_keep_labels_or_refuse_at_save(tmp_path_factory, kind, offset, band_data):
    # float32 labels saved a file load_model refused; labels differing by a trailing NUL
    # saved, then never loaded (fuzz3 repro_01, repro_16).
    import sknd

    X, y = band_data(60, 4, **DATA)
    codes = y + (offset if kind not in ("bool", "uint64") else 0) * (kind != "nul")
    labels = {
        "str": lambda: np.char.add("c", codes.astype(str)),
        "object": lambda: np.array(["c0", "c1"], dtype=object)[y],
        "nul": lambda: np.array(["a", "a\x00"], dtype=object)[y],
        "bytes": lambda: np.array([b"x", b"y"])[y],
    }.get(kind, lambda: codes.astype(kind))()
    clf = NDClassifier(max_epochs=1, random_state=0).fit(X, labels)
    path = tmp_path_factory.mktemp("labels") / "model.sknd"
    try:
        clf.save_model(path)
    except ValueError as exc:
        assert kind == "nul" and "NUL" in str(exc)
        assert not path.exists()
        return
    model = sknd.load_model(path)
    assert model.classes_.dtype == clf.classes_.dtype
    np.testing.assert_array_equal(model.classes_, clf.classes_)
    np.testing.assert_array_equal(model.predict(X), clf.predict(X))


@FUZZ
@given(
    labels=st.lists(
        st.one_of(st.integers(-5, 5), st.text("ab\n", max_size=3), st.booleans()),
        min_size=1,
        max_size=4,
    ),
    fill_label=st.one_of(st.none(), st.integers(-5, 5), st.text("ab", max_size=2)),
    codes=st.lists(st.sampled_from([0, 1, 2, 3, 255, 2**63, 2**64 - 1]), min_size=1, max_size=6),
)
def test_class_labels(labels, fill_label, codes):
    # Mixed labels became text, a fill label equal to a class was taken, and uint64 codes
    # above 2**63 were reported as negative numbers (fuzz3 repro_17, repro_18d).
    def same(a, b):
        return isinstance(a, str) == isinstance(b, str) and a == b

    try:
        result = raster.class_labels(
            np.asarray(codes, dtype=np.uint64), labels, fill_value=255, fill_label=fill_label
        )
    except EXPECTED as exc:
        message = str(exc)
        assert message and "Code -" not in message, message
        return
    assert len({isinstance(label, str) for label in labels}) == 1
    assert fill_label is None or not any(same(label, fill_label) for label in labels)
    for code, value in zip(codes, result.tolist()):
        assert code < len(labels) or code == 255
        if code == 255:
            assert value == fill_label or (fill_label is None and value != value)
        else:
            assert value == labels[code]
