"""Tests of the band vocabulary (sensor presets and name resolution)."""

import numpy as np
import pytest

from sknd._sensors import AMBIGUOUS_SENSORS, SENSOR_ALIASES, VOCABULARY
from sknd.bands import (
    COMMON_NAMES,
    SENSORS,
    Band,
    band_pair_indices,
    get_sensor,
    match_bands,
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
    # Two spellings of one band: named in the error, not left as a pair (i, i).
    with pytest.raises(ValueError, match=r"\('nir', 'B08'\) names band 'B08' twice"):
        band_pair_indices([("B04", "B02"), ("nir", "B08")], bands)


# ------------------------------------------------- presets and vocabularies (issue 13)
@pytest.mark.parametrize(
    "sensor, name, canonical, common",
    [
        ("landsat5", "B4", "B4", "nir"),
        ("Landsat 4", "SR_B7", "B7", "swir2"),
        ("TM", "ST_B6", "B6", "tir"),
        ("landsat7", "B8", "B8", "pan"),
        ("ETM+", "SR_B5", "B5", "swir1"),
        ("hls_s30", "B8A", "B8A", "nir08"),
        ("S30", "B05", "B5", "rededge1"),
        ("hls_l30", "B05", "B5", "nir"),
        ("L30", "B09", "B9", "cirrus"),
        ("planetscope", "B3", "B3", "green1"),
        ("SuperDove", "B5", "B5", "yellow"),
        ("planet", "B8", "B8", "nir"),
        ("aster", "B3N", "B3N", "nir"),
        ("ASTER", "B3", "B3N", "nir"),
        ("aster", "B04", "B4", "swir1"),
        ("aster", "B5", "B5", None),
    ],
)
def test_new_presets(sensor, name, canonical, common):
    preset = get_sensor(sensor)
    assert preset.canonical(name) == canonical
    (band,) = resolve_bands([name], sensor=sensor)
    assert band.common_name == common and band.wavelength > 300


@pytest.mark.parametrize("alias", ["landsat5", "landsat7", "planetscope", "aster", "LT05", "LE07"])
def test_new_preset_aliases(alias):
    assert get_sensor(alias).key in SENSORS


def test_hls_alone_names_its_two_products():
    with pytest.raises(ValueError, match="'hls_l30' or 'hls_s30'"):
        get_sensor("HLS")
    assert get_sensor("HLS S30").key == "hls_s30"
    assert get_sensor("hls-l30").key == "hls_l30"


def test_sensor_alias_table_has_no_clash_and_every_entry_resolves():
    for alias, key in SENSOR_ALIASES.items():
        assert key in SENSORS and get_sensor(alias).key == key
        assert alias not in AMBIGUOUS_SENSORS
    for key in SENSORS:  # every preset is reachable by its own key
        assert get_sensor(key).key == key


@pytest.mark.parametrize("key", sorted(SENSORS))
def test_every_band_and_common_name_of_a_preset_resolves_to_itself(key):
    preset = SENSORS[key]
    names = preset.valid_names()
    assert len(names) == len(set(names))
    assert preset.source, key  # each table cites where it comes from
    for canonical, common, _ in preset.bands:
        assert preset.canonical(canonical) == canonical
        assert preset.canonical(canonical.lower()) == canonical
        if common is not None:
            assert preset.canonical(common) == canonical
            assert preset.canonical(common.upper()) == canonical
    for alias, canonical in preset.aliases:
        assert alias == alias.lower() and canonical in names


@pytest.mark.parametrize("key", sorted(SENSORS))
def test_vocabulary_names_resolve_under_every_preset(key):
    # A spyndex short name or STAC common name means the preset's band with that common
    # name, whenever the preset has one (a preset alias may redirect it, e.g. nir08).
    preset = SENSORS[key]
    aliases = dict(preset.aliases)
    by_common = {common: canonical for canonical, common, _ in preset.bands if common}
    for name, common in VOCABULARY.items():
        assert common in COMMON_NAMES, name
        expected = aliases.get(name, by_common.get(common))
        if expected is not None:
            assert preset.canonical(name) == expected, (key, name)
            assert preset.canonical(name.upper()) == expected, (key, name)


@pytest.mark.parametrize(
    "sensor, name, canonical",
    [
        # spyndex / Awesome Spectral Indices short names
        ("sentinel2", "B", "B2"),
        ("sentinel2", "G", "B3"),
        ("sentinel2", "R", "B4"),
        ("sentinel2", "RE1", "B5"),
        ("sentinel2", "RE3", "B7"),
        ("sentinel2", "N", "B8"),
        ("sentinel2", "N2", "B8A"),
        ("sentinel2", "WV", "B9"),
        ("sentinel2", "S1", "B11"),
        ("sentinel2", "S2", "B12"),
        ("landsat8", "N2", "B5"),
        ("landsat8", "T1", "B10"),
        ("landsat5", "T", "B6"),
        ("planetscope", "G1", "B3"),
        ("planetscope", "Y", "B5"),
        # STAC eo:common_name
        ("sentinel2", "nir08", "B8A"),
        ("sentinel2", "swir16", "B11"),
        ("sentinel2", "swir22", "B12"),
        ("sentinel2", "rededge071", "B5"),
        ("sentinel2", "rededge075", "B6"),
        ("sentinel2", "rededge078", "B7"),
        ("landsat8", "nir08", "B5"),
        ("landsat8", "swir16", "B6"),
        ("landsat8", "swir22", "B7"),
        ("landsat8", "lwir11", "B10"),
        ("landsat8", "lwir12", "B11"),
        ("landsat7", "lwir", "B6"),
        ("modis", "nir08", "B2"),
        ("planetscope", "rededge", "B7"),
        ("planetscope", "green05", "B3"),
    ],
)
def test_spyndex_and_stac_names(sensor, name, canonical):
    assert get_sensor(sensor).canonical(name) == canonical
    (band,) = resolve_bands([name], sensor=sensor)
    assert band.name == name


def test_builtin_tables_agree_with_spyndex():
    spyndex = pytest.importorskip("spyndex")
    checked = 0
    for preset in SENSORS.values():
        for short_name, entry in dict(spyndex.bands).items():
            for platform in preset.spyndex_platforms:
                record = getattr(entry, platform, None)
                if record is None or record.band not in preset.valid_names():
                    continue
                for name in (short_name, entry.common_name):
                    assert preset.canonical(name) == record.band, (preset.key, name)
                checked += 1
    assert checked > 50


# -------------------------------------------------------------------- match_bands
L8 = ["SR_B2", "SR_B3", "SR_B4", "SR_B5"]
S2 = ["B02", "B03", "B04", "B08"]


def test_match_bands_identical_names_first():
    # numpy arrays of names, as feature_names_in_ holds them
    positions, mapping, sensor = match_bands(
        np.array(["nir", "red"], dtype=object), np.array(["red", "green", "nir"])
    )
    assert positions == [2, 0] and sensor is None
    assert mapping == [("nir", "nir", None), ("red", "red", None)]
    with pytest.raises(ValueError, match="more than once"):
        match_bands(["nir"], ["nir", "nir"])
    with pytest.raises(TypeError, match="sequences"):
        match_bands("nir", ["nir"])


def test_match_bands_landsat8_to_sentinel2_and_back():
    positions, mapping, sensor = match_bands(L8[::-1], S2, model_sensor="landsat8")
    assert positions == [3, 2, 1, 0] and sensor == "sentinel2"
    assert mapping[0] == ("SR_B5", "B08", "nir")
    positions, mapping, sensor = match_bands(S2, L8[::-1], model_sensor="sentinel2")
    assert positions == [3, 2, 1, 0] and sensor == "landsat8"
    assert mapping[-1] == ("B08", "SR_B5", "nir")
    # Without the model's sensor: common names match, but SR_B2 is blue on Landsat 8 and
    # green on Landsat 4-7, so it cannot be placed.
    assert match_bands(["nir", "B"], S2)[0] == [3, 0]
    with pytest.raises(ValueError, match="no common name.*fit the model with sensor="):
        match_bands(L8, S2)


def test_match_bands_same_sensor_spellings_are_not_a_transfer():
    bands = resolve_bands(["B4", "B8"], sensor="sentinel2")
    positions, mapping, sensor = match_bands(bands, ["B08", "B03", "B04"])
    assert positions == [2, 0] and sensor == "sentinel2"
    assert mapping == [("B4", "B04", None), ("B8", "B08", None)]


def test_match_bands_missing_counterpart_is_named():
    # Sentinel-2 scene without a SWIR band: Landsat 8 SR_B6 (swir1) has no counterpart.
    with pytest.raises(ValueError, match=r"'SR_B6' \(swir1\) have no counterpart.*B02"):
        match_bands(["SR_B4", "SR_B6"], S2, model_sensor="landsat8")
    with pytest.raises(ValueError, match="no counterpart"):
        match_bands(["SR_B4", "SR_B6"], S2, model_sensor="landsat8", image_sensor="S2")
    # Names of a preset the image's names do not fit.
    with pytest.raises(ValueError, match="Unknown band name"):
        match_bands(["red"], ["B02", "B8A"], image_sensor="landsat8")


def test_match_bands_ambiguous_names_need_the_sensor():
    # "B3", "B4" are red and NIR of Landsat 7 but green and red of Sentinel-2.
    with pytest.raises(ValueError, match="several sensor presets.*sensor="):
        match_bands(["red", "nir"], ["B2", "B3", "B4", "B8"])
    assert match_bands(["red", "nir"], ["B2", "B3", "B4", "B8"], image_sensor="sentinel2")[0] == [
        2,
        3,
    ]
    assert match_bands(["red", "nir"], ["B2", "B3", "B4", "B8"], image_sensor="landsat7")[0] == [
        1,
        2,
    ]


def test_a_band_named_twice_is_said_so_and_only_missing_bands_are_named():
    with pytest.raises(ValueError, match=r"'green' \(green\) have no counterpart") as info:
        match_bands(["blue", "green", "red", "nir"], ["blue", "red", "red", "nir"])
    message = str(info.value)
    assert "['red'] more than once" in message
    assert "'blue' (blue)" not in message and "'nir' (nir)" not in message


def test_band_objects_as_names_keep_what_they_say():
    # A model's bands_ given back as bands= were stored as their repr text (fuzz3 repro_12).
    fitted = resolve_bands(["B2", "B8"], sensor="sentinel2")
    assert resolve_bands(list(fitted)) == fitted
    assert [band.name for band in resolve_bands(list(fitted), sensor="sentinel2")] == ["B2", "B8"]


def test_a_sensor_preset_this_sknd_does_not_know_matches_by_common_name():
    # A model file from a newer sknd named a preset that raised a bare KeyError (repro_09).
    from sknd.bands import Band

    model = [Band("B2", "blue", 490.0, "sentinel3"), Band("B8", "nir", 842.0, "sentinel3")]
    positions, mapping, _ = match_bands(model, ["B08", "B04", "B02"])
    assert positions == [2, 0]


def test_match_bands_sensor_wins_over_names_equal_to_the_models():
    # SR_B4 is red on Landsat 8, near infrared on Landsat 7 (fuzz5 repro_02).
    landsat7 = ["SR_B1", "SR_B2", "SR_B3", "SR_B4", "SR_B5", "SR_B7"]
    model = ["SR_B4", "SR_B5"]
    positions, mapping, sensor = match_bands(
        model, landsat7, model_sensor="landsat8", image_sensor="landsat7"
    )
    assert positions == [2, 3] and sensor == "landsat7"
    assert mapping == [("SR_B4", "SR_B3", "red"), ("SR_B5", "SR_B4", "nir")]
    # Of one sensor, the same names are the same bands.
    same = match_bands(model, landsat7, model_sensor="landsat8", image_sensor="landsat9")
    assert same[0] == [3, 4] and same[1][0] == ("SR_B4", "SR_B4", None)


def test_match_bands_reads_what_the_metadata_say_a_band_is():
    # A Landsat 7 Item's eo:bands: the names alone would pick SR_B4 as a Landsat 8 model's red.
    image = [Band("SR_B3", "red"), Band("SR_B4", "nir08"), Band("SR_B5", "swir16")]
    positions, mapping, _ = match_bands(["SR_B4", "SR_B5"], image, model_sensor="landsat8")
    assert positions == [0, 1] and mapping[0] == ("SR_B4", "SR_B3", "red")
    # STAC's generic "rededge" (Earth Search) says less than the name rededge2: the name says.
    image = [Band("rededge1", "rededge"), Band("rededge2", "rededge")]
    assert match_bands(["B06"], image, model_sensor="sentinel2")[0] == [1]
    # A band the metadata leave unnamed and whose name is no band: matched by its name only.
    with pytest.raises(ValueError, match="no counterpart"):
        match_bands(["B04"], [Band("band_1"), Band("B8", "nir")], model_sensor="sentinel2")


def test_match_bands_near_common_names_stand_in_and_say_so():
    # Sentinel-2's narrow NIR B8A on Landsat 9, whose only NIR band is the 865 nm SR_B5.
    positions, mapping, sensor = match_bands(
        ["B04", "B8A"], ["SR_B2", "SR_B4", "SR_B5"], model_sensor="sentinel2",
        image_sensor="landsat9",
    )  # fmt: skip
    assert positions == [1, 2] and sensor == "landsat8"
    assert mapping[1] == ("B8A", "SR_B5", "nir08 as nir")
    # Where the exact band is there, it wins: B8A is B8A, not B08.
    s2 = ["B04", "B08", "B8A"]
    assert match_bands(["B8A"], s2, model_sensor="sentinel2", image_sensor="s2")[0] == [2]
    assert match_bands(["SR_B5"], s2, model_sensor="landsat8")[1] == [("SR_B5", "B08", "nir")]
