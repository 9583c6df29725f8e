"""Tests of the band vocabulary (sensor presets and name resolution)."""

import pytest

from sknd.bands import (
    COMMON_NAMES,
    SENSORS,
    band_pair_indices,
    get_sensor,
    resolve_bands,
    sensor_bands,
)


@pytest.mark.parametrize(
    "sensor, name, common",
    [
        ("sentinel2", "B4", "red"),
        ("sentinel2", "B04", "red"),
        ("sentinel2", "b8a", "nir08"),
        ("sentinel2", "B8", "nir"),
        ("sentinel2", "B5", "rededge1"),
        ("sentinel2", "B7", "rededge3"),
        ("sentinel2", "B11", "swir1"),
        ("sentinel2", "B12", "swir2"),
        ("landsat8", "B5", "nir"),
        ("landsat8", "SR_B4", "red"),
        ("landsat8", "B6", "swir1"),
        ("Landsat 9", "B7", "swir2"),
        ("landsat_mss", "B4", "nir"),
        ("landsat_mss", "B2", "red"),
        ("landsat_mss_1_3", "B7", "nir"),
        ("landsat_mss", "nir1", "nir07"),  # names of sknd.datasets.load_satimage
        ("landsat_mss", "NIR2", "nir"),
        ("landsat_mss_1_3", "nir2", "nir"),
        ("modis", "sur_refl_b01", "red"),
        ("modis", "B2", "nir"),
        ("modis", "B6", "swir1"),
    ],
)
def test_preset_band_common_names(sensor, name, common):
    (band,) = resolve_bands([name], sensor=sensor)
    assert band.name == name  # the user's spelling is kept
    assert band.common_name == common
    assert band.wavelength > 0


def test_sentinel2_preset_is_complete_and_ordered():
    table = sensor_bands("sentinel2")
    assert table["band"].tolist() == [
        "B1",
        "B2",
        "B3",
        "B4",
        "B5",
        "B6",
        "B7",
        "B8",
        "B8A",
        "B9",
        "B10",
        "B11",
        "B12",
    ]
    assert table["wavelength"].is_monotonic_increasing
    assert set(table["common_name"]) <= set(COMMON_NAMES)


def test_all_presets_use_the_common_vocabulary():
    for key, preset in SENSORS.items():
        assert get_sensor(key) is preset
        commons = [common for _, common, _ in preset.bands if common is not None]
        assert len(commons) == len(set(commons)), key  # a common name means one band
        for _, common, wavelength in preset.bands:
            assert common is None or common in COMMON_NAMES
            assert wavelength > 300


def test_unknown_band_under_preset_lists_valid_names():
    with pytest.raises(ValueError, match="Unknown band name.*'B13'.*B1, B2, B3.*B8A.*B12"):
        resolve_bands(["B4", "B13"], sensor="sentinel2")
    # Landsat 8 has no B8A and no B12.
    with pytest.raises(ValueError, match="landsat8"):
        resolve_bands(["B8A"], sensor="landsat8")


def test_common_names_accepted_under_preset():
    red, nir = resolve_bands(["red", "nir"], sensor="landsat8")
    assert (red.common_name, nir.common_name) == ("red", "nir")
    assert nir.wavelength == 865.0


def test_two_spellings_of_one_band_are_rejected():
    with pytest.raises(ValueError, match="both mean"):
        resolve_bands(["B4", "B04"], sensor="sentinel2")


def test_unknown_sensor():
    with pytest.raises(ValueError, match="Unknown sensor.*sentinel2"):
        resolve_bands(["B4"], sensor="sentinel3")
    with pytest.raises(TypeError):
        get_sensor(2)


@pytest.mark.parametrize("alias", ["Sentinel-2", "S2", "sentinel_2", "SENTINEL2A"])
def test_sensor_aliases(alias):
    assert get_sensor(alias).key == "sentinel2"


def test_names_precedence_and_defaults():
    # bands= wins over DataFrame columns: it may rename generic columns.
    bands = resolve_bands(["B4", "B8"], feature_names=["a", "b"], n_features=2)
    assert [band.name for band in bands] == ["B4", "B8"]
    bands = resolve_bands(feature_names=["a", "b"], n_features=2)
    assert [band.name for band in bands] == ["a", "b"]
    bands = resolve_bands(n_features=3)
    assert [band.name for band in bands] == ["x0", "x1", "x2"]
    assert all(band.common_name is None for band in bands)


def test_length_and_duplicate_checks():
    with pytest.raises(ValueError, match="Got 2 bands for 3 input features"):
        resolve_bands(["B4", "B8"], n_features=3)
    with pytest.raises(ValueError, match="unique"):
        resolve_bands(["B4", "B4"])
    with pytest.raises(TypeError):
        resolve_bands("B4")
    with pytest.raises(ValueError):
        resolve_bands()


def test_free_names_infer_common_names_and_groups():
    bands = resolve_bands(["Green", "red_t1", "NIR-t1", "nir_t2", "red_edge_1", "redness"])
    assert [(b.common_name, b.group) for b in bands] == [
        ("green", None),
        ("red", "t1"),
        ("nir", "t1"),
        ("nir", "t2"),
        ("rededge1", None),
        (None, None),
    ]


def test_band_pair_indices():
    bands = resolve_bands(["B02", "B04", "B08", "B8A", "B11"], sensor="sentinel2")
    assert band_pair_indices([("B8", "B4"), ("B8A", "swir1")], bands) == [(2, 1), (3, 4)]
    assert band_pair_indices([("B08", 1)], bands) == [(2, 1)]
    # Integer pairs and "all" are left for the estimator's own validation.
    assert band_pair_indices("all", bands) == "all"
    assert band_pair_indices([(0, 1)], bands) == [(0, 1)]
    with pytest.raises(ValueError, match="Unknown band 'B12'.*B02"):
        band_pair_indices([("B12", "B4")], bands)
    # Free names: exact names and unique common names.
    free = resolve_bands(["green_sep10", "red_sep10", "nir", "red"])
    assert band_pair_indices([("nir", "red"), ("red_sep10", "green_sep10")], free) == [
        (2, 3),
        (1, 0),
    ]
    with pytest.raises(ValueError, match="Unknown band 'green'"):
        band_pair_indices([("green", "nir")], free)  # only grouped green bands
