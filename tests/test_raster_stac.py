"""Tests of scenes given as a STAC Item or per-band files (sknd/raster/_stac.py), by the command."""

import json

import numpy as np
import pytest

import sknd
from sknd.raster._cli import main

rasterio = pytest.importorskip("rasterio")
Affine = pytest.importorskip("affine").Affine

BANDS = ["B02", "B04", "B08", "B11"]  # Sentinel-2: B11 at 20 m, the others at 10 m
ORIGIN = (500_000.0, 5_000_000.0)


def _write(path, data, resolution, *, crs="EPSG:32633", description=None):
    profile = {
        "driver": "GTiff",
        "width": data.shape[1],
        "height": data.shape[0],
        "count": 1,
        "dtype": data.dtype.name,
        "crs": crs,
        "transform": Affine(resolution, 0, ORIGIN[0], 0, -resolution, ORIGIN[1]),
        "nodata": -9999.0,
    }
    with rasterio.open(path, "w", **profile) as dst:
        dst.write(data, 1)
    return path


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    """Four band files (three at 10 m, 40 x 30; one at 20 m, 20 x 15) and a model."""
    folder = tmp_path_factory.mktemp("scene")
    rng = np.random.default_rng(0)
    files = {}
    for name in BANDS:
        shape = (20, 15) if name == "B11" else (40, 30)
        data = rng.uniform(0.02, 0.6, size=shape).astype(np.float32)
        files[name] = _write(folder / f"{name}.tif", data, 20.0 if name == "B11" else 10.0)
    X = rng.uniform(0.02, 0.6, size=(300, 4))
    y = np.digitize((X[:, 2] - X[:, 1]) / (X[:, 2] + X[:, 1]), [-0.2, 0.2])
    clf = sknd.NDClassifier(bands=BANDS, sensor="sentinel2", max_epochs=3, random_state=0)
    model = folder / "model.sknd"
    clf.fit(X, y).save_model(model)
    return folder, files, model


def _by_hand(files, path):
    """The bands stacked with rasterio: the 20 m band read onto the 10 m grid (nearest)."""
    with rasterio.open(files["B02"]) as src:
        profile = src.profile
        shape = (src.height, src.width)
    layers = []
    for name in BANDS:
        with rasterio.open(files[name]) as src:
            layers.append(
                src.read(1, out_shape=shape, resampling=rasterio.enums.Resampling.nearest)
            )
    profile.update(count=len(BANDS))
    with rasterio.open(path, "w", **profile) as dst:
        dst.write(np.stack(layers))
        dst.descriptions = tuple(BANDS)
    return path


def _item(folder, files, *, eo_bands=True, name="item.json"):
    pystac = pytest.importorskip("pystac")
    item = pystac.Item(
        id="scene",
        geometry=None,
        bbox=None,
        datetime=__import__("datetime").datetime(2024, 6, 1),
        properties={},
    )
    common = {"B02": "blue", "B04": "red", "B08": "nir", "B11": "swir16"}
    for band, path in files.items():
        extra = {"eo:bands": [{"name": band, "common_name": common[band]}]} if eo_bands else {}
        item.add_asset(
            band, pystac.Asset(href=path.name, media_type="image/tiff", extra_fields=extra)
        )
    path = folder / name
    path.write_text(json.dumps(item.to_dict(include_self_link=False, transform_hrefs=False)))
    return path


def _read(path):
    with rasterio.open(path) as src:
        return src.read(1), src.crs, src.transform


def test_stac_item_with_10m_and_20m_bands_equals_stacking_by_hand(scene, tmp_path):
    folder, files, model = scene
    item = _item(folder, files)
    out = tmp_path / "from_item.tif"
    assert main([str(model), str(item), str(out), "--no-progress"]) == 0
    reference = tmp_path / "reference.tif"
    stacked = _by_hand(files, tmp_path / "stacked.tif")
    assert main([str(model), str(stacked), str(reference), "--no-progress"]) == 0
    codes, crs, transform = _read(out)
    expected, expected_crs, expected_transform = _read(reference)
    np.testing.assert_array_equal(codes, expected)
    assert codes.shape == (40, 30)
    assert crs == expected_crs and transform == expected_transform


def test_band_files_in_any_order_equal_the_item(scene, tmp_path):
    folder, files, model = scene
    out, reference = tmp_path / "bands.tif", tmp_path / "item.tif"
    options = [f"--band={name}={files[name]}" for name in reversed(BANDS)]
    assert main([str(model), str(out), *options, "--no-progress"]) == 0
    assert main([str(model), str(_item(folder, files)), str(reference), "--no-progress"]) == 0
    np.testing.assert_array_equal(_read(out)[0], _read(reference)[0])


@pytest.mark.parametrize(
    "case, message",
    [
        ("no eo:bands", "has no asset with eo:bands"),
        ("missing band", "B08"),
        ("duplicate", "more than once"),
        ("crs", "different CRSs"),
        ("both", "not both"),
    ],
)
def test_bad_scenes_are_refused_and_nothing_written(scene, tmp_path, capsys, case, message):
    folder, files, model = scene
    out = tmp_path / "out.tif"
    bands = [f"--band={name}={files[name]}" for name in BANDS]
    argv = {
        "no eo:bands": [str(_item(folder, files, eo_bands=False, name="bare.json")), str(out)],
        "missing band": [str(out), *bands[:2], bands[3]],
        "duplicate": [str(out), *bands, f"--band=B02={files['B04']}"],
        "crs": [
            str(out),
            *bands[:3],
            "--band=B11="
            + str(
                _write(
                    tmp_path / "utm32.tif", np.ones((20, 15), np.float32), 20.0, crs="EPSG:32632"
                )
            ),
        ],
        "both": [str(files["B02"]), str(out), *bands],
    }[case]
    assert main([str(model), *argv, "--no-progress"]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()
