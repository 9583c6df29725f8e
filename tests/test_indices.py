"""Tests of the known-index catalogue and the optional spyndex adapter."""

import sys
import types

import pytest

from sknd.bands import COMMON_NAMES, resolve_bands
from sknd.indices import (
    CATALOGUE,
    get_catalogue,
    known_index,
    known_indices,
    match_pair,
    spyndex_catalogue,
)

REQUIRED = [
    "NDVI",
    "GNDVI",
    "NDRE1",
    "NDRE2",
    "NDRE3",
    "NDWI",
    "MNDWI",
    "NDMI",
    "NBR",
    "NBR2",
    "NDBI",
    "NDSI",
    "NDTI",
]


def test_catalogue_has_the_classic_indices_with_references():
    names = [entry.name for entry in CATALOGUE]
    assert set(REQUIRED) <= set(names)
    assert len(names) == len(set(names))
    for entry in CATALOGUE:
        assert entry.reference and entry.long_name
        for i, j in entry.pairs:
            assert i in COMMON_NAMES and j in COMMON_NAMES and i != j


@pytest.mark.parametrize(
    "sensor, nir, red",
    [
        ("sentinel2", "B8", "B4"),
        ("sentinel2", "B8A", "B4"),
        ("landsat8", "B5", "B4"),
        ("landsat_mss", "B4", "B2"),
        ("modis", "B2", "B1"),
    ],
)
def test_ndvi_on_every_sensor(sensor, nir, red):
    b_nir, b_red = resolve_bands([nir, red], sensor=sensor)
    assert known_index(b_nir, b_red) == "NDVI"
    # Reversed pair: the same index with the sign flipped.
    assert known_index(b_red, b_nir) == "-NDVI"


@pytest.mark.parametrize(
    "pair, expected",
    [
        (("B8", "B3"), "GNDVI, -NDWI"),
        (("B8", "B5"), "NDRE1"),
        (("B8A", "B6"), "NDRE2"),
        (("B8", "B7"), "NDRE3"),
        (("B3", "B8"), "NDWI, -GNDVI"),  # McFeeters' NDWI is -GNDVI
        (("B3", "B11"), "MNDWI, NDSI"),  # same formula, two names
        (("B8", "B11"), "NDMI, -NDBI"),
        (("B11", "B8"), "NDBI, -NDMI"),
        (("B8", "B12"), "NBR"),
        (("B11", "B12"), "NBR2, NDTillI"),
        (("B4", "B3"), "NDTI, -NGRDI"),
        (("B5", "B4"), "NDCI"),
        (("B1", "B2"), ""),
    ],
)
def test_sentinel2_pairs(pair, expected):
    band_i, band_j = resolve_bands(list(pair), sensor="sentinel2")
    assert known_index(band_i, band_j) == expected


def test_match_pair_direct_first_and_validation():
    assert match_pair("nir", "red") == ["NDVI"]
    assert match_pair("swir1", "nir") == ["NDBI", "-NDMI"]
    assert match_pair(None, "red") == []
    with pytest.raises(ValueError, match="Unknown common band name"):
        match_pair("infrared", "red")


def test_groups_and_unknown_bands_do_not_match():
    nir1, red1, red2, x = resolve_bands(["nir_t1", "red_t1", "red_t2", "x"])
    assert known_index(nir1, red1) == "NDVI"
    assert known_index(nir1, red2) == ""  # different dates
    assert known_index(nir1, x) == ""


def test_known_indices_table():
    table = known_indices()
    assert list(table.columns) == [
        "name",
        "long_name",
        "band_i",
        "band_j",
        "domain",
        "reference",
        "source",
    ]
    assert set(REQUIRED) <= set(table["name"])
    assert (table["source"] == "sknd").all()


def _fake_spyndex():
    """A stand-in for the spyndex package with the attributes the adapter reads."""

    def index(short, long, formula, domain="vegetation"):
        return types.SimpleNamespace(
            short_name=short,
            long_name=long,
            formula=formula,
            reference="https://x.org",
            application_domain=domain,
            bands=(),
        )

    module = types.ModuleType("spyndex")
    module.indices = {
        "NDVI": index("NDVI", "Normalized Difference Vegetation Index", "(N-R)/(N+R)"),
        "BNDVI": index("BNDVI", "Blue NDVI", "(N - B)/(N + B)"),
        "NDREI": index("NDREI", "Red edge", "((N-RE1)/(RE1+N))"),
        "SAVI": index("SAVI", "Soil adjusted", "(1.0+L)*(N-R)/(N+R+L)"),
        "kNDVI": index("kNDVI", "kernel", "tanh(((N-R)/(N+R))**2.0)"),
        "NDYI": index("NDYI", "yellow", "(G-B)/(G+B)"),
        "VHVV": index("VHVV", "radar", "(VH-VV)/(VH+VV)", "radar"),
        "BAD": index("BAD", "not an ND", "(N-R)/(R-N)"),
    }
    return module


def test_spyndex_adapter_with_fake_module(monkeypatch):
    monkeypatch.setitem(sys.modules, "spyndex", _fake_spyndex())
    entries = {entry.name: entry for entry in spyndex_catalogue()}
    # Only two-band normalized differences over known bands are kept.
    assert set(entries) == {"NDVI", "BNDVI", "NDREI", "NDYI"}
    assert entries["NDREI"].pairs == (("nir", "rededge1"),)
    assert entries["BNDVI"].source == "spyndex"

    merged = get_catalogue(include_spyndex=True)
    names = [entry.name for entry in merged]
    assert names.count("NDVI") == 1  # already built in, not repeated
    assert "BNDVI" in names and names.index("BNDVI") > names.index("NDCI")
    b2, b8 = resolve_bands(["B2", "B8"], sensor="sentinel2")
    assert known_index(b8, b2) == ""
    assert known_index(b8, b2, merged) == "BNDVI"
    table = known_indices(include_spyndex="auto")
    assert "BNDVI" in set(table["name"])


def test_spyndex_missing(monkeypatch):
    # None in sys.modules makes the import fail as if the package were absent.
    monkeypatch.setitem(sys.modules, "spyndex", None)
    with pytest.raises(ImportError, match="pip install spyndex"):
        spyndex_catalogue()
    with pytest.raises(ImportError):
        get_catalogue(include_spyndex=True)
    assert get_catalogue(include_spyndex="auto") == CATALOGUE
    with pytest.raises(ValueError):
        get_catalogue(include_spyndex="yes")
