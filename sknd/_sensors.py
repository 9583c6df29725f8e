"""Sensor presets: band tables, their spellings and the band vocabularies people use.

:mod:`sknd.bands` is the public face of these tables. Each preset lists its
bands as ``(canonical name, common name, centre wavelength in nm)``; a band
without a counterpart in the shared vocabulary has common name ``None`` (e.g.
the ASTER short-wave bands 5, 7, 8 and 9, which have no equivalent elsewhere).

Sources of the centre wavelengths (nominal values, for labelling and matching,
not for radiometry):

- Sentinel-2 and HLS S30: ESA Sentinel-2 MSI spectral response functions,
  Sentinel-2A (COPE-GSEG-EOPG-TN-15-0007, v3.1).
- Landsat 8/9 and HLS L30: USGS, "What are the band designations for the
  Landsat satellites?"; Landsat 4-5 TM and Landsat 7 ETM+: the same USGS page
  (middle of the band pass). HLS: Masek et al. (2021), HLS Product User Guide
  v2.0, NASA LP DAAC (band numbering of L30 and S30).
- PlanetScope SuperDove (PSB.SD, 8 bands): Planet Labs, PlanetScope Product
  Specifications (2023), band table of the 8-band analytic product.
- ASTER: Abrams, Hook & Ramachandran (2002), ASTER User Handbook v2, JPL, table 1.
- MODIS and Landsat MSS: see :mod:`sknd.bands`.

Two vocabularies are accepted as band names under every preset:

- the *Awesome Spectral Indices* (spyndex) short names ``A, B, G, G1, Y, R,
  RE1, RE2, RE3, N, N2, WV, S1, S2, T, T1, T2`` (Montero et al. 2023,
  Scientific Data 10, 197; table ``bands.json`` of spyndex);
- the STAC electro-optical extension common names (``coastal``, ``nir08``,
  ``swir16``, ``rededge071``, ``lwir11`` ..., STAC ``eo`` extension v1.1).

Both map to sknd's common names below; where a vocabulary calls a preset's
band differently (STAC and spyndex call the single 865 nm NIR band of Landsat 8,
MODIS and PlanetScope ``nir08``/``N2``, sknd calls it ``nir`` so that one NDVI
entry serves every sensor) the preset carries the extra spelling in its own
``aliases``. When spyndex is installed its band table is consulted for any
name these tables do not know (:func:`spyndex_band`).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass

__all__ = []

# Common name -> human-readable description. The vocabulary is shared by all
# sensors so that the known-index catalogue can be written once.
COMMON_NAMES = {
    "coastal": "coastal aerosol (~443 nm)",
    "blue": "blue (~490 nm)",
    "green1": "green I (~531 nm, PlanetScope SuperDove band 3)",
    "green": "green (~560 nm)",
    "yellow": "yellow (~610 nm)",
    "red": "red (~660 nm)",
    "rededge1": "red edge 1 (~705 nm)",
    "rededge2": "red edge 2 (~740 nm)",
    "rededge3": "red edge 3 (~783 nm)",
    "nir07": "near infrared 700-800 nm (Landsat MSS band 3)",
    "nir": "near infrared, broad band (~840 nm)",
    "nir08": "narrow near infrared (~865 nm)",
    "nir09": "water vapour (~945 nm)",
    "nir12": "near infrared ~1240 nm (MODIS band 5)",
    "cirrus": "cirrus (~1375 nm)",
    "swir1": "short-wave infrared 1 (~1.6 um)",
    "swir2": "short-wave infrared 2 (~2.2 um)",
    "pan": "panchromatic",
    "tir": "thermal infrared, one broad band (~11.4 um, Landsat 4-7)",
    "tir1": "thermal infrared 1 (~10.9 um)",
    "tir2": "thermal infrared 2 (~12 um)",
}

# Common names close enough to stand in for each other across sensors, with a warning that
# names both: the broad near-infrared band (Sentinel-2 B8, ~833 nm) and the narrow one
# (Sentinel-2 B8A, Landsat 8/9 band 5, ~865 nm), which sit inside one another's band pass.
NEAR_COMMON_NAMES = {"nir": ("nir08",), "nir08": ("nir",)}

# Awesome Spectral Indices short names and STAC common names -> sknd common
# names (lower-case keys; see the module docstring for the sources).
VOCABULARY = {
    # spyndex / Awesome Spectral Indices
    "a": "coastal",
    "b": "blue",
    "g1": "green1",
    "g": "green",
    "y": "yellow",
    "r": "red",
    "re1": "rededge1",
    "re2": "rededge2",
    "re3": "rededge3",
    "n": "nir",
    "n2": "nir08",
    "wv": "nir09",
    "s1": "swir1",
    "s2": "swir2",
    "t": "tir",
    "t1": "tir1",
    "t2": "tir2",
    # STAC eo:common_name
    "green05": "green1",
    "rededge071": "rededge1",
    "rededge075": "rededge2",
    "rededge078": "rededge3",
    "swir16": "swir1",
    "swir22": "swir2",
    "lwir": "tir",
    "lwir11": "tir1",
    "lwir12": "tir2",
    # other spellings seen in the wild (separators are dropped before lookup)
    "coastalaerosol": "coastal",
    "aerosol": "coastal",
    "coastalblue": "coastal",
    "greeni": "green1",
    "narrownir": "nir08",
    "nirnarrow": "nir08",
    "nir8a": "nir08",
    "watervapour": "nir09",
    "watervapor": "nir09",
    "tirs1": "tir1",
    "tirs2": "tir2",
}


@dataclass(frozen=True)
class Sensor:
    key: str
    long_name: str
    # (canonical band name, common name or None, centre wavelength in nm)
    bands: tuple
    # Alternative spellings of the band numbers, matched case-insensitively
    # before the number, e.g. "SR_B" for Landsat Collection 2 surface
    # reflectance or "sur_refl_b" for MODIS MOD09.
    prefixes: tuple = ("B",)
    note: str = ""
    # Lower-case sensor-specific names -> canonical band name; they win over
    # the shared vocabulary.
    aliases: tuple = ()
    # spyndex platform keys of this preset (its band table is read for names
    # these tables do not know).
    spyndex_platforms: tuple = ()
    source: str = ""
    # Whether the sensor's own products write band numbers zero-padded (B02,
    # sur_refl_b01). Only used to guess an unnamed image's sensor: "B02" is
    # accepted under every preset, but read as a Landsat name it is a guess.
    padded: bool = False

    def canonical(self, name):
        """Return the canonical band name for ``name``, or None."""
        text = str(name).strip()
        lower = text.lower()
        aliases = dict(self.aliases)
        if lower in aliases:
            return aliases[lower]
        for canonical, common, _ in self.bands:
            if text.upper() == canonical.upper() or (common is not None and lower == common):
                return canonical
        prefixes = "|".join(re.escape(p) for p in self.prefixes)
        match = re.fullmatch(rf"(?:{prefixes})0*(\d+)([AN]?)", text, flags=re.IGNORECASE)
        if match is not None:
            candidate = f"B{int(match.group(1))}{match.group(2).upper()}"
            for canonical, _, _ in self.bands:
                if canonical == candidate:
                    return canonical
        common = VOCABULARY.get(re.sub(r"[\s_\-.]", "", lower))
        if common is not None:
            for canonical, band_common, _ in self.bands:
                if band_common == common:
                    return canonical
        return spyndex_band(self, text)

    def valid_names(self):
        return [canonical for canonical, _, _ in self.bands]


# Landsat Collection 2 spells surface reflectance SR_B4 and surface temperature ST_B10; STAC
# catalogues (the Planetary Computer's and Earth Search's landsat-c2-l2) name the bands in
# eo:bands after the instrument: OLI_B4, TIRS_B10 (Landsat 8/9), ETM_B3, TM_B3.
_LANDSAT_PREFIXES = ("B", "SR_B", "ST_B")
_S2_BANDS = (
    ("B1", "coastal", 442.7),
    ("B2", "blue", 492.4),
    ("B3", "green", 559.8),
    ("B4", "red", 664.6),
    ("B5", "rededge1", 704.1),
    ("B6", "rededge2", 740.5),
    ("B7", "rededge3", 782.8),
    ("B8", "nir", 832.8),
    ("B8A", "nir08", 864.7),
    ("B9", "nir09", 945.1),
    ("B10", "cirrus", 1373.5),
    ("B11", "swir1", 1613.7),
    ("B12", "swir2", 2202.4),
)
_L8_BANDS = (
    ("B1", "coastal", 443.0),
    ("B2", "blue", 482.0),
    ("B3", "green", 562.0),
    ("B4", "red", 655.0),
    ("B5", "nir", 865.0),
    ("B6", "swir1", 1609.0),
    ("B7", "swir2", 2201.0),
    ("B8", "pan", 590.0),
    ("B9", "cirrus", 1373.0),
    ("B10", "tir1", 10895.0),
    ("B11", "tir2", 12005.0),
)
_S2_SOURCE = "ESA, Sentinel-2 MSI spectral responses, Sentinel-2A (COPE-GSEG-EOPG-TN-15-0007)"
_USGS_SOURCE = "USGS, What are the band designations for the Landsat satellites?"
_HLS_SOURCE = "Masek et al. (2021), HLS Product User Guide v2.0, NASA LP DAAC"


def _nir08_as_nir(band):
    """STAC and spyndex call the only (865 nm) NIR band of some sensors nir08 / N2."""
    return (("nir08", band), ("n2", band))


SENSORS = {
    "sentinel2": Sensor(
        key="sentinel2",
        long_name="Sentinel-2 MSI",
        bands=_S2_BANDS,
        note="zero-padded names such as B02 and B8A/B08A are accepted",
        spyndex_platforms=("sentinel2a", "sentinel2b"),
        padded=True,
        source=_S2_SOURCE,
    ),
    "landsat8": Sensor(
        key="landsat8",
        long_name="Landsat 8/9 OLI/TIRS",
        bands=_L8_BANDS,
        prefixes=(*_LANDSAT_PREFIXES, "OLI_B", "TIRS_B"),
        note="Collection 2 names such as SR_B4, and OLI_B4 or TIRS_B10, are accepted",
        aliases=_nir08_as_nir("B5"),
        spyndex_platforms=("landsat8", "landsat9"),
        source=_USGS_SOURCE,
    ),
    "landsat7": Sensor(
        key="landsat7",
        long_name="Landsat 7 ETM+",
        bands=(
            ("B1", "blue", 485.0),
            ("B2", "green", 560.0),
            ("B3", "red", 660.0),
            ("B4", "nir", 835.0),
            ("B5", "swir1", 1650.0),
            ("B6", "tir", 11450.0),
            ("B7", "swir2", 2220.0),
            ("B8", "pan", 710.0),
        ),
        prefixes=(*_LANDSAT_PREFIXES, "ETM_B"),
        note="Collection 2 names such as SR_B3 and ST_B6, and ETM_B3, are accepted",
        aliases=(("b6_vcid_1", "B6"), ("b6_vcid_2", "B6")),
        spyndex_platforms=("landsat7",),
        source=_USGS_SOURCE,
    ),
    "landsat5": Sensor(
        key="landsat5",
        long_name="Landsat 4-5 TM",
        bands=(
            ("B1", "blue", 485.0),
            ("B2", "green", 560.0),
            ("B3", "red", 660.0),
            ("B4", "nir", 830.0),
            ("B5", "swir1", 1650.0),
            ("B6", "tir", 11450.0),
            ("B7", "swir2", 2215.0),
        ),
        prefixes=(*_LANDSAT_PREFIXES, "TM_B"),
        note="Collection 2 names such as SR_B3 and ST_B6, and TM_B3, are accepted",
        spyndex_platforms=("landsat4", "landsat5"),
        source=_USGS_SOURCE,
    ),
    "hls_s30": Sensor(
        key="hls_s30",
        long_name="HLS S30 (Harmonized Landsat Sentinel-2, Sentinel-2 part)",
        bands=_S2_BANDS,
        note="zero-padded names such as B02 and B8A are accepted",
        spyndex_platforms=("sentinel2a", "sentinel2b"),
        padded=True,
        source=f"{_HLS_SOURCE}; {_S2_SOURCE}",
    ),
    "hls_l30": Sensor(
        key="hls_l30",
        long_name="HLS L30 (Harmonized Landsat Sentinel-2, Landsat part)",
        bands=tuple(band for band in _L8_BANDS if band[0] != "B8"),
        note="zero-padded names such as B05 are accepted; L30 has no panchromatic band",
        aliases=_nir08_as_nir("B5"),
        spyndex_platforms=("landsat8", "landsat9"),
        padded=True,
        source=f"{_HLS_SOURCE}; {_USGS_SOURCE}",
    ),
    "planetscope": Sensor(
        key="planetscope",
        long_name="PlanetScope SuperDove, 8 bands",
        bands=(
            ("B1", "coastal", 443.0),
            ("B2", "blue", 490.0),
            ("B3", "green1", 531.0),
            ("B4", "green", 565.0),
            ("B5", "yellow", 610.0),
            ("B6", "red", 665.0),
            ("B7", "rededge1", 705.0),
            ("B8", "nir", 865.0),
        ),
        note="the 8-band analytic product (PSB.SD); band 3 is green I, band 4 green",
        aliases=_nir08_as_nir("B8") + (("rededge", "B7"),),
        spyndex_platforms=("planetscope",),
        source="Planet Labs, PlanetScope Product Specifications (2023)",
    ),
    "aster": Sensor(
        key="aster",
        long_name="Terra ASTER (VNIR, SWIR, TIR)",
        bands=(
            ("B1", "green", 556.0),
            ("B2", "red", 661.0),
            ("B3N", "nir", 807.0),
            ("B4", "swir1", 1656.0),
            ("B5", None, 2167.0),
            ("B6", "swir2", 2209.0),
            ("B7", None, 2262.0),
            ("B8", None, 2336.0),
            ("B9", None, 2400.0),
            ("B10", None, 8291.0),
            ("B11", None, 8634.0),
            ("B12", None, 9075.0),
            ("B13", None, 10657.0),
            ("B14", None, 11318.0),
        ),
        prefixes=("B", "ImageData"),
        note="B3 means the nadir band B3N; SWIR bands 5, 7-9 and the TIR bands have no common name",
        aliases=(("b3", "B3N"), ("b03", "B3N"), ("b03n", "B3N")),
        source="Abrams, Hook & Ramachandran (2002), ASTER User Handbook v2, JPL",
    ),
    "landsat_mss": Sensor(
        key="landsat_mss",
        long_name="Landsat 4-5 MSS (band numbers 1-4)",
        bands=(
            ("B1", "green", 550.0),
            ("B2", "red", 650.0),
            ("B3", "nir07", 750.0),
            ("B4", "nir", 950.0),
        ),
        note="nir1 and nir2 mean B3 and B4; Landsat 1-3 number the same bands 4-7: "
        "use sensor='landsat_mss_1_3'",
        aliases=(("nir1", "B3"), ("nir2", "B4")),
        source=_USGS_SOURCE,
    ),
    "landsat_mss_1_3": Sensor(
        key="landsat_mss_1_3",
        long_name="Landsat 1-3 MSS (band numbers 4-7)",
        bands=(
            ("B4", "green", 550.0),
            ("B5", "red", 650.0),
            ("B6", "nir07", 750.0),
            ("B7", "nir", 950.0),
        ),
        note="nir1 and nir2 mean B6 and B7; Landsat 4-5 number the same bands 1-4: "
        "use sensor='landsat_mss'",
        aliases=(("nir1", "B6"), ("nir2", "B7")),
        source=_USGS_SOURCE,
    ),
    "modis": Sensor(
        key="modis",
        long_name="MODIS land surface reflectance (bands 1-7)",
        bands=(
            ("B1", "red", 645.0),
            ("B2", "nir", 858.5),
            ("B3", "blue", 469.0),
            ("B4", "green", 555.0),
            ("B5", "nir12", 1240.0),
            ("B6", "swir1", 1640.0),
            ("B7", "swir2", 2130.0),
        ),
        prefixes=("B", "sur_refl_b", "Nadir_Reflectance_Band", "band"),
        note="MOD09 names such as sur_refl_b01 are accepted",
        aliases=_nir08_as_nir("B2"),
        spyndex_platforms=("modis",),
        padded=True,
        source="NASA, MODIS specifications (band pass centres)",
    ),
}

# Spellings users type for the presets, after lower-casing and dropping
# everything that is not a letter or a digit.
SENSOR_ALIASES = {
    "sentinel2": "sentinel2",
    "sentinel2a": "sentinel2",
    "sentinel2b": "sentinel2",
    "sentinel2c": "sentinel2",
    "s2": "sentinel2",
    "msi": "sentinel2",
    "landsat8": "landsat8",
    "landsat9": "landsat8",
    "landsat89": "landsat8",
    "oli": "landsat8",
    "olitirs": "landsat8",
    "l8": "landsat8",
    "l9": "landsat8",
    "lc08": "landsat8",
    "lc09": "landsat8",
    "landsat7": "landsat7",
    "landsat7etm": "landsat7",
    "etm": "landsat7",
    "l7": "landsat7",
    "le07": "landsat7",
    "landsat5": "landsat5",
    "landsat4": "landsat5",
    "landsat45": "landsat5",
    "landsattm": "landsat5",
    "landsat5tm": "landsat5",
    "landsat45tm": "landsat5",
    "tm": "landsat5",
    "l5": "landsat5",
    "l4": "landsat5",
    "lt05": "landsat5",
    "lt04": "landsat5",
    "hlss30": "hls_s30",
    "s30": "hls_s30",
    "hlsl30": "hls_l30",
    "l30": "hls_l30",
    "planetscope": "planetscope",
    "planet": "planetscope",
    "superdove": "planetscope",
    "planetscopesuperdove": "planetscope",
    "psbsd": "planetscope",
    "ps": "planetscope",
    "aster": "aster",
    "terraaster": "aster",
    "landsatmss": "landsat_mss",
    "mss": "landsat_mss",
    "landsat45mss": "landsat_mss",
    "landsatmss13": "landsat_mss_1_3",
    "landsat13mss": "landsat_mss_1_3",
    "modis": "modis",
    "terra": "modis",
    "aqua": "modis",
}

# Names that mean several presets: the error names them.
AMBIGUOUS_SENSORS = {
    "hls": ("hls_l30", "hls_s30"),
    "harmonizedlandsatsentinel2": ("hls_l30", "hls_s30"),
}


def spyndex_band(preset, name):
    """The canonical band spyndex's band table gives ``name`` on ``preset``, or None.

    Returns None when spyndex is not installed or does not know the name.
    """
    if not preset.spyndex_platforms:
        return None
    table = _spyndex_table()
    if table is None:
        return None
    lower = str(name).strip().lower()
    for short_name, entry in table.items():
        if lower not in (short_name.lower(), str(entry.get("common_name", "")).lower()):
            continue
        for platform in preset.spyndex_platforms:
            record = entry.get("platforms", {}).get(platform)
            if record is not None:
                band = str(record.get("band", ""))
                if band in preset.valid_names():
                    return band
    return None


_SPYNDEX_TABLE = []


def _spyndex_table():
    """spyndex's band table as plain dicts (read once), or None without spyndex."""
    if not _SPYNDEX_TABLE:
        try:
            spyndex = importlib.import_module("spyndex")
            table = {str(key): _plain(value) for key, value in dict(spyndex.bands).items()}
        except (ImportError, AttributeError, TypeError):
            table = None
        _SPYNDEX_TABLE.append(table)
    return _SPYNDEX_TABLE[0]


def _plain(value):
    """One entry of ``spyndex.bands`` as plain dicts: common name, band per platform.

    spyndex keeps each platform's record as an attribute named after the platform.
    """
    platforms = {
        str(key): {"band": getattr(record, "band", None)}
        for key, record in vars(value).items()
        if hasattr(record, "band")
    }
    return {"common_name": getattr(value, "common_name", ""), "platforms": platforms}
