"""Scenes as STAC Items or per-band files (sknd/raster/_stac.py, _stack.py), by the command."""

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


# ----------------------------------------------------------- Items as catalogues serve them
# The layouts keep the catalogues' real asset keys, roles, media types and extensions; the
# files are small and local (relative hrefs). JPEG 2000 twins point at files that do not
# exist: reading one fails the test.
COG = "image/tiff; application=geotiff; profile=cloud-optimized"
S2_L2A = {"nodata": 0, "data_type": "uint16", "scale": 0.0001, "offset": -0.1}
# Earth Search v1 sentinel-2-l2a: key (= eo:bands name), Sentinel-2 band, resolution, common.
EARTH_SEARCH = [
    ("coastal", "B01", 60, "coastal"),
    ("blue", "B02", 10, "blue"),
    ("green", "B03", 10, "green"),
    ("red", "B04", 10, "red"),
    ("rededge1", "B05", 20, "rededge"),
    ("rededge2", "B06", 20, "rededge"),
    ("rededge3", "B07", 20, "rededge"),
    ("nir", "B08", 10, "nir"),
    ("nir08", "B8A", 20, "nir08"),
    ("nir09", "B09", 60, "nir09"),
    ("swir16", "B11", 20, "swir16"),
    ("swir22", "B12", 20, "swir22"),
]
# USGS Landsat Collection 2 Level-2 (landsat-c2l2-sr / -st): key, eo:bands name, common name.
USGS_LANDSAT = [
    ("coastal", "SR_B1", "coastal"),
    ("blue", "SR_B2", "blue"),
    ("green", "SR_B3", "green"),
    ("red", "SR_B4", "red"),
    ("nir08", "SR_B5", "nir08"),
    ("swir16", "SR_B6", "swir16"),
    ("swir22", "SR_B7", "swir22"),
]
L2_SR = {"data_type": "uint16", "nodata": 0, "scale": 2.75e-05, "offset": -0.2}
GRID = (36, 24)  # rows, columns of the finest (10 m) grid: multiples of 6 (60 m bands)


def _band_file(path, data, resolution, *, nodata=None):
    profile = {
        "driver": "GTiff",
        "width": data.shape[-1],
        "height": data.shape[-2],
        "count": 1 if data.ndim == 2 else data.shape[0],
        "dtype": data.dtype.name,
        "crs": "EPSG:32633",
        "transform": Affine(resolution, 0, ORIGIN[0], 0, -resolution, ORIGIN[1]),
        "nodata": nodata,
    }
    with rasterio.open(path, "w", **profile) as dst:
        dst.write(data if data.ndim == 3 else data[None])
    return path


def _dns(rng, shape, scale, offset, *, low=0.0, high=0.5):
    """Digital numbers of reflectances in [low, high], some 0 (no-data)."""
    dn = np.round((rng.uniform(low, high, shape) - offset) / scale).astype(np.uint16)
    dn[rng.random(shape) < 0.05] = 0
    return dn


def _s2_shape(resolution):
    return (GRID[0] * 10 // resolution, GRID[1] * 10 // resolution)


def _item_file(path, assets, properties=None):
    item = {
        "type": "Feature",
        "stac_version": "1.0.0",
        "stac_extensions": [
            "https://stac-extensions.github.io/eo/v1.1.0/schema.json",
            "https://stac-extensions.github.io/raster/v1.1.0/schema.json",
        ],
        "id": path.stem,
        "geometry": None,
        "properties": {"datetime": "2024-06-01T10:20:00Z", **(properties or {})},
        "links": [],
        "assets": assets,
    }
    path.write_text(json.dumps(item))
    return path


def _stacked_by_hand(path, layers, names, resolution=10.0):
    """Values on the finest grid as a GeoTIFF described by ``names``: the reference scene."""
    _band_file(path, np.stack(layers), resolution)
    with rasterio.open(path, "r+") as dst:
        dst.descriptions = tuple(names)
    return path


def _upsampled(dn, factor):
    return np.repeat(np.repeat(dn, factor, axis=0), factor, axis=1)


def _reflectance(dn, scale, offset):
    """What the Item describes: ``dn * scale + offset`` as float32, NaN where no-data (0)."""
    return np.where(dn == 0, np.nan, dn * scale + offset).astype(np.float32)


def _fitted(folder, bands, sensor, low, high, name="model.sknd"):
    rng = np.random.default_rng(1)
    X = rng.uniform(low, high, size=(400, len(bands)))
    y = np.digitize((X[:, 1] - X[:, 0]) / (X[:, 1] + X[:, 0]), [-0.2, 0.2])
    path = folder / name
    sknd.NDClassifier(bands=bands, sensor=sensor, max_epochs=3, random_state=0).fit(
        X, y
    ).save_model(path)
    return path


def _earth_search_item(folder):
    """An Earth Search v1 Sentinel-2 L2A Item: COGs and JP2 twins, visual, SCL, AOT, metadata."""
    rng = np.random.default_rng(0)
    assets, dns = {}, {}
    for key, band, resolution, common in EARTH_SEARCH:
        dns[key] = _dns(rng, _s2_shape(resolution), S2_L2A["scale"], S2_L2A["offset"])
        _band_file(folder / f"{band}.tif", dns[key], resolution)
        eo_bands = [{"name": key, "common_name": common, "description": f"band {band}"}]
        raster_bands = [{**S2_L2A, "spatial_resolution": resolution}]
        for suffix, href, media in (("", f"{band}.tif", COG), ("-jp2", f"{band}.jp2", "image/jp2")):
            assets[key + suffix] = {
                "href": href,
                "type": media,
                "title": f"{common} - {resolution}m",
                "eo:bands": eo_bands,
                "gsd": resolution,
                "raster:bands": raster_bands,
                "roles": ["data", "reflectance"],
            }
    tci = np.zeros((3, *GRID), np.uint8)
    _band_file(folder / "TCI.tif", tci, 10)
    rgb = [{"name": name, "common_name": name} for name in ("red", "green", "blue")]
    for suffix, href, media in (("", "TCI.tif", COG), ("-jp2", "TCI.jp2", "image/jp2")):
        assets["visual" + suffix] = {"href": href, "type": media, "eo:bands": rgb,
                                     "roles": ["visual"]}  # fmt: skip
    _band_file(folder / "SCL.tif", np.full((18, 12), 4, np.uint8), 20)
    assets["scl"] = {"href": "SCL.tif", "type": COG, "roles": ["data"],
                     "raster:bands": [{"nodata": 0, "data_type": "uint8"}]}  # fmt: skip
    assets["aot"] = {"href": "AOT.tif", "type": COG, "roles": ["data", "reflectance"],
                     "raster:bands": [{"nodata": 0, "scale": 0.001, "offset": 0}]}  # fmt: skip
    assets["thumbnail"] = {"href": "L2A_PVI.jpg", "type": "image/jpeg", "roles": ["thumbnail"]}
    assets["granule_metadata"] = {"href": "metadata.xml", "type": "application/xml",
                                  "roles": ["metadata"]}  # fmt: skip
    assets["tileinfo_metadata"] = {"href": "tileInfo.json", "type": "application/json",
                                   "roles": ["metadata"]}  # fmt: skip
    properties = {"s2:processing_baseline": "05.10", "earthsearch:boa_offset_applied": True}
    return _item_file(folder / "earth_search.json", assets, properties), dns


def test_earth_search_item_maps_the_reflectances_it_describes(tmp_path):
    """12 bands at 10, 20 and 60 m with JP2 twins, visual, SCL: the map of the reflectances."""
    item, dns = _earth_search_item(tmp_path)
    bands = ["B05", "B8A", "B01", "B02", "B04", "B07", "B09", "B11"]
    model = _fitted(tmp_path, bands, "sentinel2", 0.0, 0.5)
    out = tmp_path / "map.tif"
    # Matched under the Sentinel-2 preset: B8A is nir08, B05 rededge1, B01 coastal ...
    assert main([str(model), str(item), str(out), "--quiet"]) == 0
    names = [key for key, *_ in EARTH_SEARCH]
    resolution = {key: res for key, _, res, _ in EARTH_SEARCH}
    layers = [
        _reflectance(_upsampled(dns[key], resolution[key] // 10), S2_L2A["scale"], S2_L2A["offset"])
        for key in names
    ]
    reference = _stacked_by_hand(tmp_path / "by_hand.tif", layers, names)
    expected_out = tmp_path / "expected.tif"
    assert main([str(model), str(reference), str(expected_out), "--quiet"]) == 0
    codes, expected = _read(out)[0], _read(expected_out)[0]
    np.testing.assert_array_equal(codes, expected)
    used = [
        names.index(key)
        for key in ("rededge1", "nir08", "coastal", "blue", "red", "rededge3", "nir09", "swir16")
    ]
    invalid = np.isnan(np.stack(layers)[used]).any(axis=0)
    assert invalid.any() and (codes[invalid] == 255).all() and (codes[~invalid] != 255).all()
    # Read as digital numbers, the map differs: the offset changes every normalized difference.
    dn_map = tmp_path / "dn.tif"
    assert main([str(model), str(item), str(dn_map), "--quiet", "--no-rescale"]) == 0
    assert (_read(dn_map)[0] != codes).any()


def _landsat_item(folder, catalogue, platform="LANDSAT_8"):
    """A Landsat 8/9 Collection 2 Level-2 Item as USGS or the Planetary Computer serve it."""
    rng = np.random.default_rng(2)
    assets, dns = {}, {}
    media = "image/vnd.stac.geotiff; cloud-optimized=true" if catalogue == "usgs" else COG
    for key, name, common in USGS_LANDSAT:
        dns[key] = _dns(rng, (20, 16), L2_SR["scale"], L2_SR["offset"], low=-0.01, high=0.6)
        href = f"LC08_L2SP_190025_20240601_20240607_02_T1_{name}.TIF"
        _band_file(folder / href, dns[key], 30)
        if catalogue == "planetary_computer":
            name = name.replace("SR_B", "OLI_B")
        assets[key] = {
            "href": href,
            "type": media,
            "title": f"{common} band",
            "eo:bands": [{"name": name, "common_name": common, "gsd": 30}],
            "raster:bands": [{**L2_SR, "spatial_resolution": 30, "unit": "reflectance"}],
            "roles": ["data"] if catalogue == "usgs" else ["data", "reflectance"],
        }
    st = np.full((20, 16), 40000, np.uint16)
    _band_file(folder / "ST_B10.TIF", st, 30)
    assets["lwir11"] = {
        "href": "ST_B10.TIF",
        "type": media,
        "eo:bands": [{"name": "ST_B10" if catalogue == "usgs" else "TIRS_B10",
                      "common_name": "lwir11"}],
        "raster:bands": [{"data_type": "uint16", "nodata": 0, "scale": 0.00341802,
                          "offset": 149.0, "unit": "kelvin"}],
        "roles": ["data", "temperature"],
    }  # fmt: skip
    assets["qa_pixel"] = {"href": "QA_PIXEL.TIF", "type": media,
                          "roles": ["cloud", "cloud-shadow", "snow-ice", "water-mask"],
                          "raster:bands": [{"data_type": "uint16", "nodata": 1}]}  # fmt: skip
    assets["thumbnail"] = {"href": "thumb_small.jpeg", "type": "image/jpeg",
                           "roles": ["thumbnail"]}  # fmt: skip
    assets["reduced_resolution_browse"] = {"href": "thumb_large.jpeg", "type": "image/jpeg",
                                           "roles": ["overview"]}  # fmt: skip
    assets["MTL.json"] = {"href": "MTL.json", "type": "application/json", "roles": ["metadata"]}
    assets["MTL.xml"] = {"href": "MTL.xml", "type": "application/xml", "roles": ["metadata"]}
    return _item_file(folder / f"{catalogue}.json", assets, {"platform": platform}), dns


@pytest.mark.parametrize("catalogue", ["usgs", "planetary_computer"])
def test_landsat_c2_l2_item_maps_the_reflectances_it_describes(tmp_path, catalogue):
    """SR = 0.0000275 DN - 0.2 (nodata 0), bands named SR_B5 (USGS) or OLI_B5 (the PC)."""
    item, dns = _landsat_item(tmp_path, catalogue)
    model = _fitted(tmp_path, ["B4", "B5", "B2", "B6"], "landsat8", -0.01, 0.6)
    out = tmp_path / "map.tif"
    assert main([str(model), str(item), str(out), "--quiet"]) == 0
    names = [name for _, name, _ in USGS_LANDSAT]
    layers = [_reflectance(dns[key], L2_SR["scale"], L2_SR["offset"]) for key, *_ in USGS_LANDSAT]
    reference = _stacked_by_hand(tmp_path / "by_hand.tif", layers, names, resolution=30.0)
    expected = tmp_path / "expected.tif"
    assert main([str(model), str(reference), str(expected), "--quiet"]) == 0
    codes = _read(out)[0]
    np.testing.assert_array_equal(codes, _read(expected)[0])
    invalid = np.isnan(np.stack(layers)[[1, 3, 4, 5]]).any(axis=0)
    assert invalid.any() and (codes[invalid] == 255).all() and (codes[~invalid] != 255).all()


def test_planetary_computer_sentinel2_item_without_raster_bands_reads_stored_values(tmp_path):
    """Assets B01 .. B12 named B02 in eo:bands, a 3-band visual in the data role, SCL, AOT."""
    rng = np.random.default_rng(3)
    assets, layers = {}, {}
    for _, band, resolution, common in EARTH_SEARCH:
        dn = _dns(rng, _s2_shape(resolution), 0.0001, -0.1)
        href = f"T33UUP_20240601T102021_{band}_{resolution}m.tif"
        _band_file(tmp_path / href, dn, resolution, nodata=0)
        stored = np.where(dn == 0, np.nan, dn).astype(np.float32)  # no scale: values as stored
        layers[band] = _upsampled(stored, resolution // 10)
        assets[band] = {
            "href": href,
            "type": COG,
            "title": f"Band {band[1:]} - {common} - {resolution}m",
            "roles": ["data"],
            "gsd": float(resolution),
            "eo:bands": [{"name": band, "common_name": common}],
        }
    _band_file(tmp_path / "TCI_10m.tif", np.zeros((3, *GRID), np.uint8), 10)
    rgb = [{"name": name} for name in ("B04", "B03", "B02")]
    assets["visual"] = {"href": "TCI_10m.tif", "type": COG, "title": "True color image",
                        "roles": ["data"], "eo:bands": rgb}  # fmt: skip
    assets["SCL"] = {"href": "SCL_20m.tif", "type": COG, "roles": ["data"]}
    assets["preview"] = {"href": "preview.png", "type": "image/png", "roles": ["overview"]}
    assets["safe-manifest"] = {"href": "manifest.safe", "type": "application/xml",
                               "roles": ["metadata"]}  # fmt: skip
    assets["tilejson"] = {"href": "https://example.org/tilejson.json",
                          "type": "application/json", "roles": ["tiles"]}  # fmt: skip
    item = _item_file(tmp_path / "pc.json", assets, {"s2:processing_baseline": "05.10"})
    model = _fitted(tmp_path, ["B04", "B08", "B02", "B11"], "sentinel2", 0.0, 0.5)
    out = tmp_path / "map.tif"
    assert main([str(model), str(item), str(out), "--quiet"]) == 0
    names = [band for _, band, _, _ in EARTH_SEARCH]
    reference = _stacked_by_hand(tmp_path / "by_hand.tif", [layers[b] for b in names], names)
    expected = tmp_path / "expected.tif"
    assert main([str(model), str(reference), str(expected), "--quiet"]) == 0
    np.testing.assert_array_equal(_read(out)[0], _read(expected)[0])


# ------------------------------------------------------------ what the command must refuse
def _simple_assets(files):
    return {
        name: {"href": path.name, "type": COG, "roles": ["data"], "eo:bands": [{"name": name}]}
        for name, path in files.items()
    }


@pytest.mark.parametrize("link", [False, True])
def test_an_output_naming_an_input_band_file_is_refused_and_the_file_kept(scene, tmp_path, link):
    """An Item's asset file or a --band file, also through a symbolic link (fuzz4 repro_05)."""
    folder, files, model = scene
    item = _item_file(tmp_path / "item.json", _simple_assets(files))
    for path in files.values():
        (tmp_path / path.name).symlink_to(path)
    target = tmp_path / "B04.tif"
    out = tmp_path / "alias.tif" if link else target
    if link:
        out.symlink_to(target)
    before = files["B04"].read_bytes()
    assert main([str(model), str(item), str(out), "--quiet"]) == 2
    bands = [f"--band={name}={tmp_path / path.name}" for name, path in files.items()]
    assert main([str(model), str(out), *bands, "--quiet"]) == 2
    assert files["B04"].read_bytes() == before


@pytest.mark.parametrize(
    "assets, message",
    [
        ([{"href": "B02.tif"}], "lists its assets as a list"),
        ({"B02": "B02.tif"}, "asset 'B02' is no object"),
        ({"B02": {"href": None, "eo:bands": [{"name": "B02"}]}}, "asset 'B02' has no href"),
        ({"B02": {"href": "B02.tif", "eo:bands": ["B02"]}}, "lists the band 'B02'"),
        ({"B02": {"href": "B02.tif", "eo:bands": {"name": "B02"}}}, "no list"),
        ({"B02": {"href": "B02.tif", "eo:bands": [3]}}, "band 3 of the Item's eo:bands"),
        (
            {"B02": {"href": "B02.tif", "eo:bands": [{"name": "B02"}],
                     "raster:bands": [{"scale": "0.0001"}]}},
            "declares the scale '0.0001': no number",
        ),
        (
            {"a": {"href": "B02.tif", "eo:bands": [{"name": "B02"}]},
             "b": {"href": "B04.tif", "eo:bands": [{"name": "B02"}]}},
            "in several assets of the same kind ['a', 'b']",
        ),
    ],
)  # fmt: skip
def test_malformed_items_exit_2_in_one_line(scene, tmp_path, capsys, assets, message):
    folder, files, model = scene
    item = tmp_path / "item.json"
    item.write_text(json.dumps({"type": "Feature", "stac_version": "1.0.0", "id": "s",
                                "properties": {}, "assets": assets}))  # fmt: skip
    assert main([str(model), str(item), str(tmp_path / "out.tif"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_stac_0_9_item_with_band_indices_equals_the_1_0_item(scene, tmp_path):
    """STAC 0.9 lists the bands in the Item's properties, assets give indices into them."""
    folder, files, model = scene
    shared = [{"name": name} for name in BANDS]
    assets = {name: {"href": str(files[name]), "eo:bands": [k]} for k, name in enumerate(BANDS)}
    item = tmp_path / "item.json"
    item.write_text(json.dumps({"type": "Feature", "stac_version": "0.9.0", "id": "s",
                                "properties": {"eo:bands": shared}, "assets": assets}))  # fmt: skip
    out, reference = tmp_path / "old.tif", tmp_path / "new.tif"
    assert main([str(model), str(item), str(out), "--quiet"]) == 0
    assert main([str(model), str(_item(folder, files)), str(reference), "--quiet"]) == 0
    np.testing.assert_array_equal(_read(out)[0], _read(reference)[0])


@pytest.mark.parametrize("dtypes", [("int64",) * 4, ("uint32", "int32", "uint32", "int32")])
def test_band_files_of_any_integer_type_are_stacked_as_float64(tmp_path, dtypes):
    """int64, or uint32 beside int32, crashed with KeyError 'int64' (fuzz4 repro_06)."""
    rng = np.random.default_rng(4)
    layers = [rng.integers(100, 5000, (12, 10)) for _ in BANDS]
    files = [
        _band_file(tmp_path / f"{name}.tif", layer.astype(dtype), 10)
        for name, layer, dtype in zip(BANDS, layers, dtypes)
    ]
    model = _fitted(tmp_path, BANDS, "sentinel2", 100, 5000)
    out = tmp_path / "map.tif"
    bands = [f"--band={name}={path}" for name, path in zip(BANDS, files)]
    assert main([str(model), str(out), *bands, "--quiet"]) == 0
    reference = _stacked_by_hand(tmp_path / "stack.tif", [a.astype(np.float64) for a in layers],
                                 BANDS)  # fmt: skip
    expected = tmp_path / "expected.tif"
    assert main([str(model), str(reference), str(expected), "--quiet"]) == 0
    np.testing.assert_array_equal(_read(out)[0], _read(expected)[0])


def test_complex_band_files_are_refused(scene, tmp_path, capsys):
    folder, files, model = scene
    odd = _band_file(tmp_path / "c.tif", np.ones((40, 30), np.complex64), 10)
    bands = [f"--band={name}={files[name]}" for name in BANDS[1:]]
    assert main([str(model), str(tmp_path / "o.tif"), f"--band=B02={odd}", *bands]) == 2
    assert "bands must hold real band values" in capsys.readouterr().err


def test_multi_band_files_need_a_band_number(scene, tmp_path, capsys):
    """--band B02=stack.tif silently read band 1 of a 4-band file (fuzz4 repro_09)."""
    folder, files, model = scene
    stack = _by_hand(files, tmp_path / "stack.tif")  # B02, B04, B08, B11 on the 10 m grid
    out = tmp_path / "map.tif"
    assert main([str(model), str(out), f"--band=B02={stack}", "--quiet",
                 *[f"--band={n}={files[n]}" for n in BANDS[1:]]]) == 2  # fmt: skip
    assert "the file has 4 bands; name the one that holds B02" in capsys.readouterr().err
    assert not out.exists()
    bands = [f"--band={name}={stack}:{k}" for k, name in enumerate(BANDS, start=1)]
    assert main([str(model), str(out), *reversed(bands), "--quiet"]) == 0
    reference = tmp_path / "reference.tif"
    assert main([str(model), str(stack), str(reference), "--quiet"]) == 0
    np.testing.assert_array_equal(_read(out)[0], _read(reference)[0])
    assert main([str(model), str(out), f"--band=B02={stack}:5", *bands[1:]]) == 2
    assert "has 4 band(s), not a band 5" in capsys.readouterr().err


def test_pixels_a_band_does_not_cover_are_no_data(scene, tmp_path):
    """A 20 m band covering the top quarter, without a nodata tag (fuzz4 repro_08)."""
    folder, files, model = scene
    small = _band_file(tmp_path / "B11.tif", np.full((5, 15), 0.3, np.float32), 20)
    out = tmp_path / "map.tif"
    bands = [f"--band={name}={files[name]}" for name in BANDS[:3]] + [f"--band=B11={small}"]
    assert main([str(model), str(out), *bands, "--quiet"]) == 0
    codes = _read(out)[0]
    assert (codes[10:] == 255).all() and (codes[:10] != 255).all()


def test_a_file_whose_bands_carry_gdal_scales_and_offsets(scene, tmp_path):
    """GDAL band scales and offsets of a single file are applied, as an Item's raster:bands."""
    folder, files, model = scene
    stack = _by_hand(files, tmp_path / "reflectance.tif")
    with rasterio.open(stack) as src:
        reflectance, profile = src.read(), src.profile
    dn = np.round((reflectance + 0.1) / 0.0001).astype(np.uint16)
    profile.update(dtype="uint16", nodata=0)
    scaled = tmp_path / "dn.tif"
    with rasterio.open(scaled, "w", **profile) as dst:
        dst.write(dn)
        dst.descriptions = tuple(BANDS)
        dst.scales = (0.0001,) * 4
        dst.offsets = (-0.1,) * 4
    exact = tmp_path / "exact.tif"
    _stacked_by_hand(exact, list(_reflectance(dn, 0.0001, -0.1)), BANDS)
    out, expected, raw = tmp_path / "map.tif", tmp_path / "expected.tif", tmp_path / "raw.tif"
    assert main([str(model), str(scaled), str(out), "--quiet"]) == 0
    assert main([str(model), str(exact), str(expected), "--quiet"]) == 0
    np.testing.assert_array_equal(_read(out)[0], _read(expected)[0])
    assert main([str(model), str(scaled), str(raw), "--quiet", "--no-rescale"]) == 0
    assert (_read(raw)[0] != _read(out)[0]).any()


def test_band_files_carry_their_gdal_scales_and_offsets(scene, tmp_path):
    """--band files and NAME=stack.tif:N are rescaled as the same file given as the scene."""
    folder, files, model = scene
    stack = _by_hand(files, tmp_path / "reflectance.tif")
    with rasterio.open(stack) as src:
        dn = np.round((src.read() + 0.1) / 0.0001).astype(np.uint16)
    paths = {}
    for k, name in enumerate(BANDS):
        paths[name] = _band_file(tmp_path / f"dn_{name}.tif", dn[k], 10, nodata=0)
        with rasterio.open(paths[name], "r+") as dst:
            dst.scales, dst.offsets = (0.0001,), (-0.1,)
    exact = _stacked_by_hand(tmp_path / "exact.tif", list(_reflectance(dn, 0.0001, -0.1)), BANDS)
    expected, out = tmp_path / "expected.tif", tmp_path / "map.tif"
    assert main([str(model), str(exact), str(expected), "--quiet"]) == 0
    bands = [f"--band={name}={path}" for name, path in paths.items()]
    assert main([str(model), str(out), *bands, "--quiet"]) == 0
    np.testing.assert_array_equal(_read(out)[0], _read(expected)[0])


def test_no_data_is_masked_before_resampling(tmp_path):
    """An Item's nodata (the files have no tag) never enters bilinear or cubic resampling
    (fuzz5 repro_05): no pixel reads a value blended with the fill."""
    assets = {}
    for key, band, resolution, value in [("red", "B04", 10, 1500), ("nir", "B08", 10, 2000),
                                         ("swir16", "B11", 20, 3000)]:  # fmt: skip
        size = 16 * 10 // resolution
        dn = np.full((size, size), value, np.uint16)
        if band == "B11":
            dn[:3, :3] = 0  # a no-data block, wider than any kernel's reach at its centre
            dn[5, 5] = 0
        _band_file(tmp_path / f"{band}.tif", dn, resolution)
        assets[key] = {"href": f"{band}.tif", "type": COG, "roles": ["data"],
                       "eo:bands": [{"name": band, "common_name": key}],
                       "raster:bands": [S2_L2A]}  # fmt: skip
    item = _item_file(tmp_path / "item.json", assets, {"platform": "sentinel-2a"})
    model = _fitted(tmp_path, ["B08", "B11", "B04"], "sentinel2", 0.02, 0.4)
    with rasterio.open(tmp_path / "B04.tif") as src:
        profile = src.profile
    profile.update(count=3, dtype="float32", nodata=None)
    uniform = tmp_path / "uniform.tif"
    with rasterio.open(uniform, "w", **profile) as dst:
        dst.write(np.stack([np.full((16, 16), v, np.float32) for v in (0.1, 0.2, 0.05)]))
        dst.descriptions = ("B08", "B11", "B04")
    assert main([str(model), str(uniform), str(tmp_path / "valid.tif"), "--quiet"]) == 0
    valid = _read(tmp_path / "valid.tif")[0][0, 0]
    for resampling in ("bilinear", "cubic"):
        out = tmp_path / f"{resampling}.tif"
        assert main([str(model), str(item), str(out), "--resampling", resampling, "--quiet"]) == 0
        codes = _read(out)[0]
        assert set(np.unique(codes)) <= {valid, 255}
        assert (codes[:4, :4] == 255).all()  # inside the block: no valid pixel near
        assert (codes[8:, 8:] == valid).all()


def _landsat9(folder):
    """The Planetary Computer's Landsat 9 C2 L2 Item (coastal SR_B1 included) and its
    reflectances by hand, named as Sentinel-2's bands B04, B08 and B8A for the models."""
    item, dns = _landsat_item(folder, "planetary_computer", platform="landsat-9")
    layers = {key: _reflectance(dns[key], L2_SR["scale"], L2_SR["offset"]) for key in dns}
    reference = _stacked_by_hand(
        folder / "by_hand.tif", [layers["red"], layers["nir08"]], ["B04", "B08"], 30.0
    )
    return item, reference


@pytest.mark.parametrize("nir", ["B08", "B8A"])
def test_landsat9_item_maps_sentinel2_models_without_sensor(tmp_path, capsys, nir):
    """Bands by the Item's common names and platform: Sentinel-2 B04 is Landsat's SR_B4 (red),
    B08 (nir) and B8A (nir08, a near match for Landsat's 865 nm band) its SR_B5."""
    item, reference = _landsat9(tmp_path)
    model = _fitted(tmp_path, ["B04", nir], "sentinel2", -0.01, 0.6)
    out, expected = tmp_path / "map.tif", tmp_path / "expected.tif"
    assert main([str(model), str(item), str(out), "--no-progress"]) == 0
    lines = capsys.readouterr().err.splitlines()
    # The command's own lines only: no Python file, line or source line of a warning.
    assert all(line.startswith("python -m sknd.raster: ") for line in lines), lines
    warned = [line for line in lines if "warning" in line]
    assert len(warned) == 1 and "sentinel2 to landsat9" in warned[0] and ".py" not in warned[0]
    assert "B04 -> OLI_B4 (red)" in warned[0]
    assert f"{nir} -> OLI_B5 ({'nir' if nir == 'B08' else 'nir08 as nir'})" in warned[0]
    reference_model = _fitted(tmp_path, ["B04", "B08"], "sentinel2", -0.01, 0.6, "same.sknd")
    if nir == "B08":
        model = reference_model
    assert main([str(reference_model), str(reference), str(expected), "--quiet"]) == 0
    assert main([str(model), str(item), str(out), "--quiet"]) == 0
    np.testing.assert_array_equal(_read(out)[0], _read(expected)[0])


@pytest.mark.parametrize("how", ["as listed", "through ..", "through a link"])
def test_an_output_naming_any_file_of_an_item_is_refused(tmp_path, capsys, how):
    """QA_PIXEL is no band the model reads: still never replaced."""
    item, _ = _landsat9(tmp_path)
    qa = _band_file(tmp_path / "QA_PIXEL.TIF", np.full((20, 16), 21824, np.uint16), 30)
    before = qa.read_bytes()
    model = _fitted(tmp_path, ["B04", "B08"], "sentinel2", -0.01, 0.6)
    (tmp_path / "sub").mkdir()
    out = {"as listed": qa, "through ..": tmp_path / "sub" / ".." / "QA_PIXEL.TIF",
           "through a link": tmp_path / "sub" / "map.tif"}[how]  # fmt: skip
    if how == "through a link":
        out.symlink_to(qa)
    assert main([str(model), str(item), str(out), "--quiet"]) == 2
    assert "qa_pixel" in capsys.readouterr().err
    assert qa.read_bytes() == before


def test_unused_assets_are_not_opened(tmp_path, capsys):
    """A missing asset the model does not read is ignored; --verbose says so (repro_06)."""
    item, reference = _landsat9(tmp_path)
    (tmp_path / "LC08_L2SP_190025_20240601_20240607_02_T1_SR_B6.TIF").unlink()
    model = _fitted(tmp_path, ["B04", "B08"], "sentinel2", -0.01, 0.6)
    out = tmp_path / "map.tif"
    assert main([str(model), str(item), str(out), "--verbose", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "not read: band OLI_B6" in err and "does not exist" in err
    assert "not read: band OLI_B7" in err and "OLI_B7 (" in err


def test_landsat7_item_bands_are_what_its_common_names_say(tmp_path, capsys):
    """SR_B4 of a Landsat 7 Item is near infrared: a Landsat 8 model's SR_B4 (red) reads the
    Item's SR_B3 (fuzz5 repro_01); its own --sensor cannot turn the Item's red into another."""
    rng = np.random.default_rng(5)
    assets, dns = {}, {}
    for name, common in [("SR_B1", "blue"), ("SR_B2", "green"), ("SR_B3", "red"),
                         ("SR_B4", "nir08"), ("SR_B5", "swir16"), ("SR_B7", "swir22")]:  # fmt: skip
        dns[name] = _dns(rng, (20, 16), L2_SR["scale"], L2_SR["offset"], low=0.02, high=0.5)
        _band_file(tmp_path / f"{name}.TIF", dns[name], 30)
        assets[common] = {"href": f"{name}.TIF", "type": COG, "roles": ["data"],
                          "eo:bands": [{"name": name, "common_name": common}],
                          "raster:bands": [L2_SR]}  # fmt: skip
    item = _item_file(tmp_path / "item.json", assets, {"platform": "landsat-7"})
    model = _fitted(tmp_path, ["SR_B4", "SR_B5"], "landsat8", 0.02, 0.5)
    layers = [
        _reflectance(dns[name], L2_SR["scale"], L2_SR["offset"]) for name in ("SR_B3", "SR_B4")
    ]
    reference = _stacked_by_hand(tmp_path / "by_hand.tif", layers, ["SR_B4", "SR_B5"], 30.0)
    out, expected = tmp_path / "map.tif", tmp_path / "expected.tif"
    assert main([str(model), str(reference), str(expected), "--quiet"]) == 0
    for sensor in ([], ["--sensor", "landsat8"]):
        assert main([str(model), str(item), str(out), "--no-progress", *sensor]) == 0
        np.testing.assert_array_equal(_read(out)[0], _read(expected)[0])
    assert "SR_B4 -> SR_B3 (red)" in capsys.readouterr().err
