"""Tests of the whole-model exports (sknd._export): openEO graphs, Earth Engine code.

The openEO graphs run locally with openeo-processes-dask (the openEO core processes
on xarray/dask) and openeo-pg-parser-networkx; the Earth Engine code runs against a
numpy stand-in of the few ``ee`` calls it makes, its expressions evaluated with numpy.
Both are compared with the SavedModel of the same estimator.
"""

import functools
import importlib
import inspect
import json
import pathlib
import re
import time

import numpy as np
import pytest
from ee_numpy import run_earthengine

import sknd
from sknd import NDClassifier, NDRegressor, NDTransformer, raster

# What importing and running openeo-processes-dask warns about its own dependencies (pydantic
# and numpy deprecations, its stac_validator import, its optional ML processes): not sknd's.
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning:openeo_processes_dask"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning:planetary_computer"),
    pytest.mark.filterwarnings("ignore:Support for class-based `config`"),
    pytest.mark.filterwarnings("ignore:The 'stac_validator' package has been deprecated"),
]

FAST = {"max_epochs": 3, "random_state": 0}
BANDS = ["blue", "green", "red", "nir"]


# What this module's tests draw from conftest's band_data, after the sample and band counts.
DATA = {"low": 0.02, "high": 0.6, "pair": (3, 2), "cuts": (-0.2, 0.2)}


def _fit(band_data, kind, params):
    X, y = band_data(160, len(BANDS), **DATA)
    if kind == "binary":
        return NDClassifier(bands=BANDS, **params, **FAST).fit(X, np.where(y > 0, "wet", "dry"))
    if kind == "multiclass":
        return NDClassifier(bands=BANDS, **params, **FAST).fit(X, y * 10 - 3)
    if kind == "regression":
        return NDRegressor(bands=BANDS, **params, **FAST).fit(X, X[:, 0] + X[:, 3])
    if kind == "multi-output":
        target = np.column_stack([X[:, 0], X[:, 3] - X[:, 1]])
        return NDRegressor(bands=BANDS, **params, **FAST).fit(X, target)
    return NDTransformer(bands=BANDS, **params, **FAST).fit(X, y)


# Narrow hidden layers keep the graphs of deep networks small (the local executor walks
# every node of the graph for every node it runs): their layers are exported all the same.
NARROW = {"hidden_units": 8}
MODELS = [
    ("binary", {}),
    ("multiclass", {}),
    ("multiclass", {"depth": 3, **NARROW}),
    ("multiclass", {"architecture": "mlp", "depth": 4, **NARROW}),
    ("binary", {"architecture": "attnd"}),
    ("multiclass", {"architecture": "attnd", "depth": 3, "passthrough": True, **NARROW}),
    ("multiclass", {"variant": "signed"}),
    ("binary", {"variant": "softplus", "depth": 3, **NARROW}),
    ("multiclass", {"passthrough": True}),
    ("regression", {}),
    ("multi-output", {"depth": 3, "variant": "softplus", **NARROW}),
    ("transform", {}),
    ("transform", {"variant": "signed"}),
]


def _outputs(model):
    return {"NDClassifier": ["class", "proba"], "NDRegressor": ["predict"]}.get(
        model.estimator, ["indices"]
    )


def _expected(model, output, pixels):
    """SavedModel's values for ``output``: (n_pixels, n_outputs), class codes as class_map's."""
    if output == "class":
        codes = raster.class_map(model, pixels.reshape(1, -1, pixels.shape[1]), bands=BANDS)
        return codes.reshape(-1, 1).astype(float)
    method = {"proba": "predict_proba", "predict": "predict", "indices": "transform"}[output]
    return getattr(model, method)(pixels).reshape(len(pixels), -1)


@pytest.fixture(scope="module", params=MODELS, ids=lambda case: f"{case[0]}-{case[1]}")
def model(request, tmp_path_factory, band_data):
    estimator = _fit(band_data, *request.param)
    path = tmp_path_factory.mktemp("model") / "model.sknd"
    estimator.save_model(path)
    return estimator, sknd.load_model(path)


def _pixels(n, seed=1):
    pixels = np.random.default_rng(seed).uniform(0.01, 0.7, size=(n, len(BANDS)))
    pixels[:3] = [[0.2, 0.2, 0.2, 0.2], [0.01, 0.01, 0.7, 0.7], [0.7, 0.01, 0.01, 0.7]]
    return pixels


# ------------------------------------------------------------------ openEO
DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "anywhere.md"


def _run_locally():
    """``run_locally`` of docs/anywhere.md: the page's own code runs every graph here."""
    pytest.importorskip("openeo_pg_parser_networkx")
    pytest.importorskip("openeo_processes_dask")
    blocks = re.findall(r"^```python\n(.*?)^```", DOCS.read_text(encoding="utf-8"), re.M | re.S)
    (source,) = [block for block in blocks if "def run_locally(" in block]
    namespace = {}
    exec(compile(source, str(DOCS), "exec"), namespace)  # noqa: S102
    return namespace["run_locally"]


def run_openeo(process, cube):
    """Execute an exported process on ``cube`` (its ``data`` parameter) with the local executor."""
    return _run_locally()(json.loads(json.dumps(process)), cube)


def _called_as_the_parser_calls(function):
    """``function`` given the caller's ``axis`` (and the like) only where it takes them.

    What openeo-processes-dask's ``process`` decorator does, less its ``repr`` of every
    argument (for a log line), which takes most of the time on cubes of many bands.
    """
    special = {"axis", "keepdims", "source_transposed_axis", "context", "dim_labels"}
    dropped = special - set(inspect.signature(function).parameters)

    def call(**arguments):
        return function(**{name: arg for name, arg in arguments.items() if name not in dropped})

    return call


def walk_openeo(process, cube):
    """``process`` on ``cube`` with openeo-processes-dask's implementations, walked here.

    The same process implementations as :func:`run_openeo`, called as
    openeo-pg-parser-networkx calls them (a callback's parameters by name, the
    caller's ``axis`` and ``keepdims`` passed to each of its nodes), without the
    parser's executor, which looks each node's parent up among all the graph's
    edges (quadratic: a 1,024-pair model's 25,000 nodes would take hours).
    """
    pytest.importorskip("openeo_processes_dask")
    implementations = importlib.import_module("openeo_processes_dask.process_implementations")
    functions = {  # "_and" is openEO's "and", as the parser's registry maps it
        name.removeprefix("_"): _called_as_the_parser_calls(function)
        for name, function in inspect.getmembers(implementations, inspect.isfunction)
    }

    def evaluate(graph, parameters, kwargs):
        results = {}

        def value(argument):
            if isinstance(argument, list):
                return [value(item) for item in argument]
            if not isinstance(argument, dict):
                return argument
            if "from_node" in argument:
                return node(argument["from_node"])
            if "from_parameter" in argument:
                return parameters[argument["from_parameter"]]
            if "process_graph" in argument:
                return callback(argument["process_graph"])
            return {key: value(item) for key, item in argument.items()}

        def node(name):
            if name not in results:
                arguments = value(graph[name]["arguments"])
                results[name] = functions[graph[name]["process_id"]](**arguments, **kwargs)
            return results[name]

        return node(next(name for name, spec in graph.items() if spec.get("result")))

    def callback(graph):
        def call(*args, positional_parameters=None, named_parameters=None, **kwargs):
            parameters = dict(named_parameters or {})
            for name, position in (positional_parameters or {}).items():
                parameters[name] = args[position]
            return evaluate(graph, parameters, kwargs)

        return call

    return evaluate(json.loads(json.dumps(process))["process_graph"], {"data": cube}, {})


def _cube(pixels, shape, names=BANDS):
    import xarray as xr

    values = pixels.T.reshape(len(names), *shape)
    return xr.DataArray(
        values,
        dims=("bands", "y", "x"),
        coords={"bands": list(names), "y": np.arange(shape[0]), "x": np.arange(shape[1])},
    )


def _as_table(result, n):
    if "bands" in result.dims:
        result = result.transpose("y", "x", "bands")
    return np.asarray(result.values, dtype=float).reshape(n, -1)


def _reproduces_saved_model(model, form, atol):
    """The ``form`` process of every output of ``model`` equals the model file's values."""
    estimator, saved = model
    pixels = _pixels(12 * 10)
    cube = _cube(pixels, (12, 10))
    for output in _outputs(saved):
        process = saved.export_model("openeo", output=output, form=form)
        assert process == estimator.export_model("openeo", output=output, form=form)
        result = run_openeo(process, cube)
        expected = _expected(saved, output, pixels)
        if output == "class":
            assert result.dims == ("y", "x")
            np.testing.assert_array_equal(_as_table(result, len(pixels)), expected)
        else:
            np.testing.assert_allclose(_as_table(result, len(pixels)), expected, rtol=0, atol=atol)
        if expected.shape[1] > 1:
            assert result.coords["bands"].values.tolist() == _labels(saved, output)
    return process


# `make test` runs this for one model (tests/conftest.py, FAST_OPENEO_GRAPHS); the others
# carry the slow marker.
def test_openeo_graph_reproduces_saved_model(model):
    _reproduces_saved_model(model, "graph", atol=1e-6)


def test_openeo_udf_reproduces_saved_model(model):
    """The run_udf form: the model as data in apply_dimension, within 1e-9 of the file's."""
    process = _reproduces_saved_model(model, "udf", atol=1e-9)
    processes = [node["process_id"] for node in process["process_graph"].values()]
    assert processes[:2] == ["filter_bands", "apply_dimension"]


def _labels(saved, output):
    if output == "proba":
        return [f"proba_{label}" for label in saved.classes_.tolist()]
    if output == "indices":
        return saved.get_feature_names_out().tolist()
    return ["prediction_0", "prediction_1"]


@pytest.mark.slow
def test_openeo_graph_512_cube_equal_codes_and_probabilities(band_data):
    """The target: a 512 x 512 cube, equal class codes, probabilities within 1e-6."""
    estimator = _fit(band_data, "multiclass", {"depth": 3, **NARROW})
    pixels = _pixels(512 * 512, seed=3)
    cube = _cube(pixels, (512, 512))
    codes = run_openeo(estimator.export_model("openeo"), cube)
    expected = raster.class_map(estimator, cube, band_dim="bands")
    np.testing.assert_array_equal(codes.values, expected.values)
    proba = run_openeo(estimator.export_model("openeo", output="proba"), cube)
    np.testing.assert_allclose(
        _as_table(proba, len(pixels)), estimator.predict_proba(pixels), rtol=0, atol=1e-6
    )


def test_openeo_selects_bands_by_name_from_another_sensor(band_data):
    X, y = band_data(160, len(BANDS), **DATA)
    clf = NDClassifier(bands=["SR_B2", "SR_B3", "SR_B4", "SR_B5"], sensor="landsat8", **FAST)
    clf.fit(X, y)
    names = ["B08", "B02", "B11", "B04", "B03"]
    process = clf.export_model("openeo", bands=names, collection="SENTINEL2_L2A")
    load = process["process_graph"]["select"]
    assert load["process_id"] == "load_collection"
    assert load["arguments"]["id"] == "SENTINEL2_L2A"
    assert load["arguments"]["bands"] == ["B02", "B03", "B04", "B08"]
    assert [p["name"] for p in process["parameters"]] == ["spatial_extent", "temporal_extent"]
    # The same graph without the collection runs on a cube with the Sentinel-2 names.
    process = clf.export_model("openeo", bands=names)
    pixels = _pixels(30)
    cube = _cube(
        np.column_stack([pixels[:, 3], pixels[:, 0], pixels[:, 2], pixels[:, 2], pixels[:, 1]]),
        (5, 6),
        names,
    )
    result = run_openeo(process, cube)
    expected = raster.class_map(clf, pixels.reshape(5, 6, 4), bands=clf.bands)
    np.testing.assert_array_equal(_as_table(result, 30)[:, 0], expected.ravel())


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"bands": ["B02", "B03", "B04"]}, "lack a band of the model"),
        ({"bands": ["blue", "blue", "red", "nir", "green"]}, "more than once"),
        ({"format": "onnx"}, "format must be one of"),
        ({"output": "predict"}, "not an output of an NDClassifier"),
        ({"format": "earthengine", "collection": "X"}, "leave collection out"),
        ({"sensor": "sentinel2"}, "pass bands= too"),
    ],
)
def test_export_refuses_bad_requests(kwargs, message, band_data):
    X, y = band_data(160, len(BANDS), **DATA)
    clf = NDClassifier(bands=BANDS, **FAST).fit(X, y)
    with pytest.raises(ValueError, match=message):
        clf.export_model(**kwargs)


# ------------------------------------------------------------------ Earth Engine
def test_earthengine_code_reproduces_saved_model(model):
    estimator, saved = model
    pixels = _pixels(400)
    for output in _outputs(saved):
        code = saved.export_model("earthengine", output=output)
        assert code == estimator.export_model("earthengine", output=output)
        namespace, result = run_earthengine(code, dict(zip(BANDS, pixels.T)))
        assert list(result) == namespace["OUTPUTS"]
        values = np.column_stack(list(result.values()))
        expected = _expected(saved, output, pixels)
        if output == "class":
            np.testing.assert_array_equal(values, expected)
        else:
            np.testing.assert_allclose(values, expected, rtol=0, atol=1e-6)


def test_earthengine_code_reads_the_images_band_names(band_data):
    X, y = band_data(160, len(BANDS), **DATA)
    clf = NDClassifier(bands=["B2", "B3", "B4", "B8"], sensor="sentinel2", **FAST).fit(X, y)
    code = clf.export_model("earthengine", bands=["B8", "B4", "B3", "B2", "B11"])
    assert "BANDS = ['B2', 'B3', 'B4', 'B8']" in code
    assert "raw = image.select(BANDS)" in code
    pixels = _pixels(20)
    image = dict(zip(["B8", "B4", "B3", "B2", "B11"], [*pixels[:, ::-1].T, pixels[:, 0]]))
    _, codes = run_earthengine(code, image)
    np.testing.assert_array_equal(codes["class"], clf.predict(pixels))


# ------------------------------------------------------------------ sizes, cubes as served
def _n_nodes(graph):
    """The nodes of a process graph, its callbacks' included."""
    count = 0
    for node in graph.values():
        count += 1
        for argument in node["arguments"].values():
            if isinstance(argument, dict) and "process_graph" in argument:
                count += _n_nodes(argument["process_graph"])
    return count


def _parsed_completely(process):
    """Whether openeo-pg-parser-networkx reads every node (a graph nested too deep, as
    chains of about 125 nodes are, leaves the deeper ones unread and fails at run time)."""
    from openeo_pg_parser_networkx import OpenEOProcessGraph

    parsed = OpenEOProcessGraph(pg_data={"process_graph": process["process_graph"]})
    return parsed.G.number_of_nodes() == _n_nodes(process["process_graph"])


def _wide_model(n_bands):
    """A 3-class model of every pair of ``n_bands`` bands (16: 120 pairs, 46: 1,035)."""
    names = [f"b{k}" for k in range(n_bands)]
    rng = np.random.default_rng(0)
    X = rng.uniform(0.02, 0.6, (150, n_bands))
    y = np.digitize(X[:, 0] - X[:, 1], [-0.1, 0.1])
    params = {"recipe": "paper", "max_epochs": 1, "early_stopping": False, "random_state": 0}
    return NDClassifier(bands=names, **params).fit(X, y), names


@pytest.mark.parametrize(
    "n_bands",
    [16, pytest.param(36, marks=pytest.mark.slow), pytest.param(46, marks=pytest.mark.slow)],
)
def test_wide_models_export_and_run(n_bands):
    """Stages of 120 to 1,035 values (fuzz4 repro_01, repro_02): exported in about a second,
    parsed whole, and equal to the estimator on openeo-processes-dask and in Earth Engine code."""
    pytest.importorskip("openeo_pg_parser_networkx")
    clf, names = _wide_model(n_bands)
    pixels = np.random.default_rng(1).uniform(0.01, 0.7, (20, n_bands))
    cube = _cube(pixels, (4, 5), names)
    codes = raster.class_map(clf, pixels.reshape(4, 5, n_bands), bands=names)
    for output in ("class", "proba"):
        process = clf.export_model("openeo", output=output, form="graph")
        if output == "proba":  # the larger graph (25,000 nodes for 46 bands): parsing takes s
            assert _parsed_completely(process)
        result = _as_table(walk_openeo(process, cube), len(pixels))
        namespace, values = run_earthengine(
            clf.export_model("earthengine", output=output), dict(zip(names, pixels.T))
        )
        values = np.column_stack(list(values.values()))
        if output == "class":
            np.testing.assert_array_equal(result[:, 0], codes.ravel())
            np.testing.assert_array_equal(values[:, 0], codes.ravel())
        else:
            expected = clf.predict_proba(pixels)
            np.testing.assert_allclose(result, expected, rtol=0, atol=1e-6)
            np.testing.assert_allclose(values, expected, rtol=0, atol=1e-6)


@functools.cache
def _default_model(n_bands):
    """The default NDClassifier of satimage's 36 features (630 pairs, a kept 100-unit head),
    of the 8 Landsat 8 bands, or of 46 synthetic bands (1,024 of their 1,035 pairs)."""
    from sknd.datasets import load_landsat8_samples, load_satimage

    if n_bands == 36:
        X, y = load_satimage(return_X_y=True)
    elif n_bands == 8:
        X, y = load_landsat8_samples(return_X_y=True)
    else:
        rng = np.random.default_rng(0)
        X = rng.uniform(0.02, 0.6, (600, n_bands))
        y = np.digitize(X[:, 0] - X[:, 1] + X[:, 2] * X[:, 3], [0.0, 0.15])
    return NDClassifier(random_state=0).fit(X, y), X


@pytest.mark.slow
@pytest.mark.parametrize("n_bands", [8, 36, 46])
def test_default_models_run_on_the_openeo_executor(n_bands):
    """The target of issue 62: the default model's openEO process (the run_udf form) is at
    most 2 MB and runs on openeo-processes-dask's own executor, parsing included, on a
    24 x 24 cube within 60 s, its class codes equal to sknd.raster.class_map's."""
    clf, X = _default_model(n_bands)
    names = [str(name) for name in clf.band_names_]
    rng = np.random.default_rng(1)
    pixels = rng.uniform(X.min(axis=0), X.max(axis=0), (24 * 24, n_bands))
    cube = _cube(pixels, (24, 24), names)
    start = time.perf_counter()
    text = json.dumps(clf.export_model("openeo"))
    codes = _run_locally()(json.loads(text), cube)
    seconds = time.perf_counter() - start
    assert len(text) <= 2e6
    assert seconds <= 60
    np.testing.assert_array_equal(
        codes.values, raster.class_map(clf, cube, band_dim="bands").values
    )


@pytest.mark.slow
@pytest.mark.parametrize("n_bands", [8, 36, 46])
def test_default_models_earthengine_code_is_array_images(n_bands):
    """Issue 62.2: the default model's Earth Engine code computes its layers on array images
    (satimage-36's at most 1 MB), equal to the estimator through the numpy stand-in."""
    clf, X = _default_model(n_bands)
    names = [str(name) for name in clf.band_names_]
    pixels = np.random.default_rng(2).uniform(X.min(axis=0), X.max(axis=0), (300, n_bands))
    bands = dict(zip(names, pixels.T))
    code = clf.export_model("earthengine")
    assert len(code) <= 1e6
    assert "matrixMultiply" in code
    _, codes = run_earthengine(code, bands)
    expected = raster.class_map(clf, pixels.reshape(1, -1, n_bands), bands=names).ravel()
    np.testing.assert_array_equal(codes["class"], expected)
    _, proba = run_earthengine(clf.export_model("earthengine", output="proba"), bands)
    proba = np.column_stack(list(proba.values()))
    np.testing.assert_allclose(proba, clf.predict_proba(pixels), rtol=0, atol=1e-6)


@pytest.mark.parametrize("form", ["graph", "udf"])
@pytest.mark.parametrize("variant", ["reflectance", "signed", "softplus"])
def test_integer_cubes_compute_in_floating_point(variant, form):
    """Digital numbers (uint16, int16, as back-ends serve Sentinel-2 L2A): b * b and
    b + |b| would overflow in the cube's type (fuzz4 repro_03); the graph casts first."""
    rng = np.random.default_rng(0)
    X = rng.uniform(200, 6000, (200, len(BANDS)))
    y = np.digitize((X[:, 3] - X[:, 2]) / (X[:, 3] + X[:, 2]), [-0.2, 0.2])
    clf = NDClassifier(bands=BANDS, variant=variant, **FAST).fit(X, y)
    process = clf.export_model("openeo", output="proba", form=form)
    code = clf.export_model("earthengine", output="proba")
    for dtype in (np.uint16, np.int16):
        pixels = rng.uniform(100, 10000, (20, len(BANDS))).astype(dtype)
        expected = clf.predict_proba(pixels)
        result = _as_table(run_openeo(process, _cube(pixels, (4, 5))), len(pixels))
        np.testing.assert_allclose(result, expected, rtol=0, atol=1e-5)
        _, values = run_earthengine(code, dict(zip(BANDS, pixels.T)))
        np.testing.assert_allclose(np.column_stack(list(values.values())), expected, atol=1e-5)


@pytest.mark.parametrize("form", ["graph", "udf"])
def test_scale_and_offset_run_a_reflectance_model_on_digital_numbers(form, band_data):
    """Sentinel-2 L2A: DN = 10000 (reflectance + 0.1); per band (Landsat's 2.75e-5, -0.2 on
    two bands here) or one number for all."""
    X, y = band_data(160, len(BANDS), **DATA)
    clf = NDClassifier(bands=BANDS, **FAST).fit(X, y)
    dn = np.random.default_rng(2).integers(8000, 20000, (30, len(BANDS))).astype(np.uint16)
    for scale, offset in [(1e-4, -0.1), ([1e-4, 1e-4, 2.75e-5, 2.75e-5], [-0.1, -0.1, -0.2, -0.2])]:
        reflectance = dn * np.asarray(scale) + np.asarray(offset)
        expected = clf.predict_proba(reflectance)
        process = clf.export_model("openeo", output="proba", scale=scale, offset=offset, form=form)
        result = _as_table(run_openeo(process, _cube(dn, (5, 6))), len(dn))
        np.testing.assert_allclose(result, expected, rtol=0, atol=1e-6)
        code = clf.export_model("earthengine", output="proba", scale=scale, offset=offset)
        _, values = run_earthengine(code, dict(zip(BANDS, dn.T)))
        np.testing.assert_allclose(np.column_stack(list(values.values())), expected, atol=1e-6)


@pytest.mark.parametrize("form", ["graph", "udf"])
def test_openeo_nodata_pixels_get_no_class(form, band_data):
    """nodata=0 (issue 64): pixels of zeros get no class (the fill code 255, NaN
    probabilities), pixels with a NaN band too; the others the estimator's values, on
    openeo-processes-dask, on float and integer cubes."""
    X, y = band_data(160, len(BANDS), **DATA)
    clf = NDClassifier(bands=BANDS, **FAST).fit(X, y)
    pixels = _pixels(30) * 10000
    pixels[:4] = 0
    valid = np.ones(len(pixels), bool)
    valid[:4] = False
    for dtype in (np.uint16, np.float32):
        cube = _cube(pixels.astype(dtype), (5, 6))
        codes = run_openeo(clf.export_model("openeo", nodata=0, scale=1e-4, form=form), cube)
        expected = clf.predict(pixels[valid] * 1e-4)
        np.testing.assert_array_equal(_as_table(codes, 30)[valid, 0], expected)
        np.testing.assert_array_equal(_as_table(codes, 30)[~valid, 0], 255)
    pixels[5, 2] = np.nan
    valid[5] = False
    process = clf.export_model("openeo", output="proba", nodata=0, scale=1e-4, form=form)
    proba = _as_table(run_openeo(process, _cube(pixels, (5, 6))), 30)
    np.testing.assert_allclose(proba[valid], clf.predict_proba(pixels[valid] * 1e-4), atol=1e-6)
    assert np.isnan(proba[~valid]).all()


def test_earthengine_nodata_pixels_are_masked_or_filled(band_data):
    """Earth Engine: outputs masked where a band holds nodata or NaN, class codes filled."""
    X, y = band_data(160, len(BANDS), **DATA)
    clf = NDTransformer(bands=BANDS, **FAST).fit(X, y)
    pixels = _pixels(20)
    pixels[0], pixels[1, 3] = -1, np.nan
    _, result = run_earthengine(
        clf.export_model("earthengine", nodata=-1), dict(zip(BANDS, pixels.T))
    )
    values = np.column_stack(list(result.values()))
    assert np.isnan(values[:2]).all()
    np.testing.assert_allclose(values[2:], clf.transform(pixels[2:]), atol=1e-6)
    clf = NDClassifier(bands=BANDS, **FAST).fit(X, y)
    _, codes = run_earthengine(
        clf.export_model("earthengine", nodata=-1), dict(zip(BANDS, pixels.T))
    )
    np.testing.assert_array_equal(codes["class"], [255, 255, *clf.predict(pixels[2:])])


def test_auto_form_keeps_small_graphs_and_runs_large_models_in_a_udf(band_data):
    """form="auto": the pure process graph up to GRAPH_MAX_NODES, run_udf beyond."""
    from sknd._export import GRAPH_MAX_NODES

    X, y = band_data(160, len(BANDS), **DATA)
    small = NDClassifier(bands=BANDS, depth=2, **FAST).fit(X, y)
    large = NDClassifier(bands=BANDS, depth=3, hidden_units=100, **FAST).fit(X, y)
    for clf, udf in [(small, False), (large, True)]:
        graph = clf.export_model("openeo", form="graph")
        assert (_n_nodes(graph["process_graph"]) > GRAPH_MAX_NODES) == udf
        assert clf.export_model("openeo") == (
            clf.export_model("openeo", form="udf") if udf else graph
        )


def test_openeo_udf_runs_without_sknd(band_data):
    """The UDF imports numpy and xarray only: it runs where sknd is not installed."""
    import builtins

    from openeo.udf.run_code import run_udf_code
    from openeo.udf.udf_data import UdfData
    from openeo.udf.xarraydatacube import XarrayDataCube

    X, y = band_data(160, len(BANDS), **DATA)
    clf = NDRegressor(bands=BANDS, **FAST).fit(X, X[:, 0])
    process = clf.export_model("openeo", form="udf")
    model = process["process_graph"]["model"]["arguments"]
    code = model["process"]["process_graph"]["udf"]["arguments"]["udf"]
    real_import = builtins.__import__

    def refuse_sknd(name, *args, **kwargs):
        if name.split(".")[0] == "sknd":
            raise ImportError("sknd is not installed on this back-end")
        return real_import(name, *args, **kwargs)

    pixels = _pixels(20)
    data = UdfData(
        datacube_list=[XarrayDataCube(_cube(pixels, (4, 5)))], user_context=model["context"]
    )
    builtins.__import__ = refuse_sknd
    try:
        result = run_udf_code(code, data).get_datacube_list()[0].get_array()
    finally:
        builtins.__import__ = real_import
    np.testing.assert_allclose(_as_table(result, 20)[:, 0], clf.predict(pixels), atol=1e-9)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"form": "onnx"}, ValueError, "form must be one of"),
        (
            {"form": "udf", "format": "earthengine"},
            ValueError,
            "form chooses the form of an openEO",
        ),
        ({"nodata": "0"}, TypeError, "nodata must be a number"),
        ({"nodata": True}, TypeError, "nodata must be a number"),
    ],
)
def test_export_refuses_bad_form_and_nodata(kwargs, error, message, band_data):
    X, y = band_data(160, len(BANDS), **DATA)
    clf = NDClassifier(bands=BANDS, **FAST).fit(X, y)
    with pytest.raises(error, match=message):
        clf.export_model(**kwargs)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"scale": 0}, ValueError, "must not be 0"),
        ({"scale": [1e-4, 1e-4]}, ValueError, "one number per band of the model"),
        ({"offset": "-0.1"}, TypeError, "offset must be a number"),
        ({"offset": float("nan")}, ValueError, "offset must be finite"),
    ],
)
def test_export_refuses_bad_scale_and_offset(kwargs, error, message, band_data):
    X, y = band_data(160, len(BANDS), **DATA)
    clf = NDClassifier(bands=BANDS, **FAST).fit(X, y)
    with pytest.raises(error, match=message):
        clf.export_model(**kwargs)


def test_openeo_errors_name_the_missing_band_and_dimension(band_data):
    """A cube without a band of the model, or with its bands along another dimension: the
    executor's error names them (pass bands= or dimension= to export_model)."""
    X, y = band_data(160, len(BANDS), **DATA)
    clf = NDClassifier(bands=BANDS, **FAST).fit(X, y)
    pixels = _pixels(20)
    with pytest.raises(Exception, match=r"\['blue', 'green', 'red', 'nir'\] are not all avail"):
        run_openeo(clf.export_model("openeo"), _cube(pixels[:, :3], (4, 5), BANDS[:3]))
    with pytest.raises(Exception, match=r"dimension \(bands\) not found .*'band'"):
        run_openeo(clf.export_model("openeo"), _cube(pixels, (4, 5)).rename(bands="band"))
    codes = run_openeo(
        clf.export_model("openeo", dimension="band"), _cube(pixels, (4, 5)).rename(bands="band")
    )
    np.testing.assert_array_equal(_as_table(codes, 20)[:, 0], clf.predict(pixels))
