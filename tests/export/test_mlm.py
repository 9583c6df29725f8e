"""STAC MLM Items of model files: export_model("mlm") and sknd.load_model of an Item.

The Items are validated with stac-model (the MLM extension's own pydantic models, the
``mlm`` extra installs it; the tests that need it skip without it) and read back by
sknd.load_model and the scene command, which load the Item's ``mlm:model`` asset.
"""

import functools
import hashlib
import http.server
import json
import threading

import numpy as np
import pytest

import sknd

BANDS = ["B04", "B08", "B11"]


def _fit(kind="classifier"):
    rng = np.random.default_rng(0)
    X = rng.uniform(0.02, 0.6, (150, 3))
    params = {"bands": BANDS, "sensor": "sentinel2", "max_epochs": 2, "random_state": 0}
    if kind == "regressor":
        return sknd.NDRegressor(**params).fit(X, X[:, 1] - X[:, 0]), X
    y = np.array(["soil", "water", "veg"])[np.digitize(X[:, 1] - X[:, 0], [-0.1, 0.1])]
    return sknd.NDClassifier(**params).fit(X, y), X


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A classifier, its model file and an Item beside it (href ``model.sknd``)."""
    clf, X = _fit()
    folder = tmp_path_factory.mktemp("mlm")
    clf.save_model(folder / "model.sknd")
    item = clf.export_model("mlm", href="model.sknd")
    (folder / "item.json").write_text(json.dumps(item))
    return clf, X, folder


def _validated(item):
    """The Item's MLM properties as stac-model reads them (pydantic), and as a pystac Item."""
    pytest.importorskip("stac_model")
    import pystac
    from stac_model.schema import MLModelExtension, MLModelProperties

    properties = MLModelProperties.model_validate(item["properties"])
    stac_item = pystac.Item.from_dict(json.loads(json.dumps(item)))
    assert MLModelExtension.has_extension(stac_item)
    return properties, stac_item


def test_classifier_item_validates_and_describes_the_model(tmp_path):
    clf, _ = _fit()
    clf.save_model(tmp_path / "model.sknd")
    # The colours as the class maps take them: '#rrggbb', a name, an RGB tuple.
    colors = {"soil": "#a0522d", "veg": "forestgreen", "water": (30, 144, 255)}
    item = clf.export_model(
        "mlm", href="model.sknd", onnx_href="model.onnx", colors=colors, scale=1e-4, offset=-0.1
    )
    properties, stac_item = _validated(item)
    assert properties.tasks == {"classification"}
    assert properties.framework == "sknd"
    assert properties.total_parameters == _n_weights(clf)
    (model_input,) = item["properties"]["mlm:input"]
    assert model_input["bands"] == BANDS
    assert model_input["input"]["shape"] == [-1, 3]
    assert (
        model_input["value_scaling"]
        == [{"type": "processing", "format": "gdal-calc", "expression": "A * 0.0001 + -0.1"}] * 3
    )
    (output,) = item["properties"]["mlm:output"]
    assert [(c["value"], c["name"], c["color_hint"]) for c in output["classification:classes"]] == [
        (0, "soil", "A0522D"),
        (1, "veg", "228B22"),
        (2, "water", "1E90FF"),
    ]
    model = stac_item.assets["model"]
    assert "mlm:model" in model.roles
    assert model.extra_fields["mlm:artifact_type"] == "sknd.save_model"
    content = (tmp_path / "model.sknd").read_bytes()
    assert model.extra_fields["file:size"] == len(content)
    assert model.extra_fields["file:checksum"] == "1220" + hashlib.sha256(content).hexdigest()
    bands = model.extra_fields["bands"]
    assert [(b["name"], b["eo:common_name"]) for b in bands] == list(
        zip(BANDS, ["red", "nir", "swir1"])
    )
    assert stac_item.assets["onnx"].extra_fields["mlm:artifact_type"] == "onnx"


def _n_weights(clf):
    """The numbers of the estimator's torch network: its parameters and its fixed
    standardization (MLM counts trainable and non-trainable ones), not the band pairs."""
    module = clf.net_.module_
    fixed = [b for name, b in module.named_buffers() if not name.endswith("pairs")]
    return sum(p.numel() for p in module.parameters()) + sum(b.numel() for b in fixed)


def test_regressor_item_validates_and_scales_by_division():
    reg, _ = _fit("regressor")
    item = reg.export_model("mlm", href="https://example.org/models/reg.sknd", scale=1e-4)
    properties, _ = _validated(item)
    assert properties.tasks == {"regression"}
    assert item["id"] == properties.name == "reg"
    assert (
        item["properties"]["mlm:input"][0]["value_scaling"] == [{"type": "scale", "value": 1e4}] * 3
    )
    assert "classification:classes" not in item["properties"]["mlm:output"][0]


def test_load_model_reads_the_items_model_asset(saved):
    clf, X, folder = saved
    model = sknd.load_model(folder / "item.json")
    np.testing.assert_array_equal(model.predict(X), clf.predict(X))
    assert model._content == (folder / "model.sknd").read_bytes()


def test_scene_command_takes_the_item(saved, tmp_path):
    """The map from the Item equals the map from the model file."""
    rasterio = pytest.importorskip("rasterio")
    from raster_files import write_geotiff

    from sknd.raster._cli import main

    clf, _, folder = saved
    data = np.random.default_rng(3).uniform(0.02, 0.6, (3, 12, 10)).astype(np.float32)
    scene = write_geotiff(tmp_path / "scene.tif", data, descriptions=BANDS)
    maps = []
    for model in ("model.sknd", "item.json"):
        out = tmp_path / f"map_{model}.tif"
        assert main([str(folder / model), str(scene), str(out), "--no-progress"]) == 0
        with rasterio.open(out) as src:
            maps.append(src.read())
    np.testing.assert_array_equal(maps[0], maps[1])


def _item_with(folder, **model_asset):
    item = json.loads((folder / "item.json").read_text())
    item["assets"]["model"].update(model_asset)
    return item


@pytest.mark.parametrize(
    "case, message",
    [
        ("no model asset", "has no asset of role 'mlm:model'"),
        ("onnx asset", "mlm:artifact_type 'onnx', not an sknd model file"),
        ("missing file", "cannot read the asset 'model'"),
        ("not a model file", "is not an sknd model file"),
        ("replaced file", "does not match the Item's file:checksum"),
        ("remote", "a remote address: load_model reads over the network only when asked"),
        ("not json", "neither an sknd model file nor a STAC Item"),
    ],
)
def test_bad_items_are_refused_naming_the_asset(saved, tmp_path, case, message):
    _, _, folder = saved
    item = json.loads((folder / "item.json").read_text())
    model = item["assets"]["model"]
    if case == "no model asset":
        model["roles"] = ["data"]
    elif case == "onnx asset":
        model["mlm:artifact_type"] = "onnx"
    elif case == "missing file":
        model["href"] = "elsewhere/model.sknd"
    elif case in ("not a model file", "replaced file"):
        text = b"{}" if case == "not a model file" else (folder / "model.sknd").read_bytes()[::-1]
        (tmp_path / "model.sknd").write_bytes(text)
        model["href"] = str(tmp_path / "model.sknd")
        if case == "not a model file":
            del model["file:size"], model["file:checksum"]
        else:
            model["file:size"] = len(text)
    elif case == "remote":
        model["href"] = "https://example.org/model.sknd"
    path = tmp_path / "item.json"
    path.write_text("{not json" if case == "not json" else json.dumps(item))
    with pytest.raises(ValueError, match=message) as error:
        sknd.load_model(path)
    if case not in ("no model asset", "not json"):
        assert "'model'" in str(error.value)


def test_remote_asset_read_when_allowed(saved, tmp_path):
    """allow_network=True reads the asset over HTTP (a server on this machine here)."""
    clf, X, folder = saved
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/model.sknd"
        path = tmp_path / "item.json"
        path.write_text(json.dumps(clf.export_model("mlm", href=url)))
        with pytest.raises(ValueError, match="remote address"):
            sknd.load_model(path)
        model = sknd.load_model(path, allow_network=True)
    finally:
        server.shutdown()
        server.server_close()
    np.testing.assert_array_equal(model.predict(X), clf.predict(X))


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({}, TypeError, "needs href="),
        ({"href": "m.sknd", "colors": ["#00ff00"]}, ValueError, "1 colours for 3 classes"),
        ({"href": "m.sknd", "colors": ["#12345"] * 3}, ValueError, "is '#rrggbb' or a colour"),
        ({"href": 3}, TypeError, "href must be the URL or path"),
    ],
)
def test_export_mlm_refuses_bad_requests(kwargs, error, message):
    clf, _ = _fit()
    with pytest.raises(error, match=message):
        clf.export_model("mlm", **kwargs)


def test_transformer_has_no_mlm_item():
    rng = np.random.default_rng(0)
    X = rng.uniform(0.02, 0.6, (100, 3))
    nd = sknd.NDTransformer(max_epochs=1, random_state=0).fit(X, X[:, 0] > X[:, 1])
    with pytest.raises(ValueError, match="MLM has no name for"):
        nd.export_model("mlm", href="nd.sknd")
    with pytest.raises(ValueError, match="pass format='mlm'"):
        nd.export_model("openeo", href="nd.sknd")
