"""Band vocabulary: sensor presets, common band names and centre wavelengths.

A learned normalized difference is only readable when its two bands have names a
remote-sensing user recognises. This module maps the band names of a few common
sensors to *common names* (``"red"``, ``"nir"``, ``"swir1"`` ...) and centre
wavelengths, so that :mod:`sknd.indices` can tell that the pair ``("B8", "B4")``
of Sentinel-2 and the pair ``("B5", "B4")`` of Landsat 8 are both NDVI.

Common names follow the spirit of the STAC electro-optical extension, with the
red-edge bands numbered (``rededge1``-``rededge3``) and the two short-wave
infrared windows called ``swir1`` (about 1.6 um) and ``swir2`` (about 2.2 um).
Near-infrared bands other than the broad NIR band carry their centre in tenths
of a micrometre: ``nir07`` (Landsat MSS band 3), ``nir08`` (the narrow NIR band
B8A of Sentinel-2), ``nir09`` (water vapour) and ``nir12`` (MODIS band 5).

Centre wavelengths are nominal values in nanometres (Sentinel-2A for
Sentinel-2, USGS band designations for Landsat, the middle of the band pass for
Landsat MSS and MODIS); they are meant for labelling and ordering, not for
radiometry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "COMMON_NAMES",
    "SENSORS",
    "Band",
    "band_pair_indices",
    "get_sensor",
    "resolve_bands",
    "sensor_bands",
]


# Common name -> human-readable description. The vocabulary is shared by all
# sensors so that the known-index catalogue can be written once.
COMMON_NAMES = {
    "coastal": "coastal aerosol (~443 nm)",
    "blue": "blue (~490 nm)",
    "green": "green (~560 nm)",
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
    "tir1": "thermal infrared 1 (~10.9 um)",
    "tir2": "thermal infrared 2 (~12 um)",
}


@dataclass(frozen=True)
class Band:
    """One spectral band as the model sees it.

    Parameters
    ----------
    name : str
        The name the data uses for the band (a DataFrame column or an entry of
        ``bands=``), kept exactly as given.
    common_name : str or None
        Sensor-independent name from :data:`COMMON_NAMES`, or None when unknown.
    wavelength : float or None
        Nominal centre wavelength in nanometres, or None when unknown.
    sensor : str or None
        Key of the sensor preset the band was resolved against.
    group : str or None
        Tag that sets apart bands sharing a common name, e.g. the acquisition
        date in ``"nir_t2"``. Two bands form a known index only when their
        groups are equal.

    Examples
    --------
    >>> from sknd.bands import resolve_bands
    >>> resolve_bands(["B04", "B8"], sensor="sentinel2")[0]
    Band(name='B04', common_name='red', wavelength=664.6, sensor='sentinel2', group=None)
    """

    name: str
    common_name: str | None = None
    wavelength: float | None = None
    sensor: str | None = None
    group: str | None = None


@dataclass(frozen=True)
class _Sensor:
    key: str
    long_name: str
    # (canonical band name, common name, centre wavelength in nm)
    bands: tuple
    # Alternative spellings of the band numbers, matched case-insensitively
    # before the number, e.g. "SR_B" for Landsat Collection 2 surface
    # reflectance or "sur_refl_b" for MODIS MOD09.
    prefixes: tuple = ("B",)
    note: str = ""
    # Lower-case sensor-specific names -> canonical band name.
    aliases: tuple = ()

    def canonical(self, name):
        """Return the canonical band name for ``name``, or None."""
        text = str(name).strip()
        aliases = dict(self.aliases)
        if text.lower() in aliases:
            return aliases[text.lower()]
        for canonical, common, _ in self.bands:
            if text.upper() == canonical.upper() or text.lower() == common:
                return canonical
        prefixes = "|".join(re.escape(p) for p in self.prefixes)
        match = re.fullmatch(rf"(?:{prefixes})0*(\d+)(A?)", text, flags=re.IGNORECASE)
        if match is None:
            return None
        candidate = f"B{int(match.group(1))}{match.group(2).upper()}"
        for canonical, _, _ in self.bands:
            if canonical == candidate:
                return canonical
        return None

    def valid_names(self):
        return [canonical for canonical, _, _ in self.bands]


SENSORS = {
    "sentinel2": _Sensor(
        key="sentinel2",
        long_name="Sentinel-2 MSI",
        bands=(
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
        ),
        prefixes=("B",),
        note="zero-padded names such as B02 and B8A/B08A are accepted",
    ),
    "landsat8": _Sensor(
        key="landsat8",
        long_name="Landsat 8/9 OLI/TIRS",
        bands=(
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
        ),
        prefixes=("B", "SR_B", "ST_B"),
        note="Collection 2 names such as SR_B4 are accepted",
    ),
    "landsat_mss": _Sensor(
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
    ),
    "landsat_mss_1_3": _Sensor(
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
    ),
    "modis": _Sensor(
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
    ),
}

# Spellings users type for the presets, after lower-casing and dropping
# everything that is not a letter or a digit.
_SENSOR_ALIASES = {
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
    "l8": "landsat8",
    "l9": "landsat8",
    "landsatmss": "landsat_mss",
    "mss": "landsat_mss",
    "landsat45mss": "landsat_mss",
    "landsatmss13": "landsat_mss_1_3",
    "landsat13mss": "landsat_mss_1_3",
    "modis": "modis",
    "terra": "modis",
    "aqua": "modis",
}


def get_sensor(sensor):
    """Return the preset for ``sensor``.

    Parameters
    ----------
    sensor : str
        Preset key or a common spelling of it, e.g. ``"sentinel2"``,
        ``"Sentinel-2"``, ``"S2"``, ``"landsat8"``, ``"Landsat 9"``,
        ``"landsat_mss"``, ``"landsat_mss_1_3"``, ``"modis"``.

    Returns
    -------
    preset : object
        Internal preset record with the attributes ``key``, ``long_name`` and
        ``bands``.

    Raises
    ------
    ValueError
        If the sensor is unknown.

    Examples
    --------
    >>> from sknd.bands import get_sensor
    >>> get_sensor("Sentinel-2").key
    'sentinel2'
    """
    if not isinstance(sensor, str):
        raise TypeError(f"sensor must be a string, got {type(sensor).__name__}.")
    key = re.sub(r"[^0-9a-z]", "", sensor.lower())
    if key in _SENSOR_ALIASES:
        return SENSORS[_SENSOR_ALIASES[key]]
    raise ValueError(f"Unknown sensor {sensor!r}. Valid presets are: {', '.join(sorted(SENSORS))}.")


def sensor_bands(sensor):
    """Describe the bands of a sensor preset as a DataFrame.

    Parameters
    ----------
    sensor : str
        Preset name, see :func:`get_sensor`.

    Returns
    -------
    table : pandas.DataFrame
        One row per band with the columns ``band``, ``common_name``,
        ``wavelength`` (nm) and ``description``.

    Examples
    --------
    >>> from sknd.bands import sensor_bands
    >>> sensor_bands("landsat8").head(3)
      band common_name  wavelength                description
    0   B1     coastal       443.0  coastal aerosol (~443 nm)
    1   B2        blue       482.0             blue (~490 nm)
    2   B3       green       562.0            green (~560 nm)
    """
    import pandas as pd

    preset = get_sensor(sensor)
    return pd.DataFrame(
        [
            (name, common, wavelength, COMMON_NAMES[common])
            for name, common, wavelength in preset.bands
        ],
        columns=["band", "common_name", "wavelength", "description"],
    )


# Spellings of common names seen in the wild (after dropping separators).
_COMMON_ALIASES = {
    "coastalaerosol": "coastal",
    "aerosol": "coastal",
    "narrownir": "nir08",
    "nirnarrow": "nir08",
    "nir8a": "nir08",
    "watervapour": "nir09",
    "watervapor": "nir09",
    "swir16": "swir1",
    "swir22": "swir2",
    "tirs1": "tir1",
    "tirs2": "tir2",
}


def _plain_common_name(text):
    key = re.sub(r"[\s_\-.]", "", text.lower())
    if key in COMMON_NAMES:
        return key
    return _COMMON_ALIASES.get(key)


def _infer_common_name(name):
    """Guess ``(common_name, group)`` for a band name outside any preset.

    A name that is a common name (``"NIR"``, ``"red_edge_1"``), or a common name
    followed by a separator and a tag (``"nir_2010"``, ``"red-t1"``), is
    recognised; the tag becomes the band's group so that ``nir_t1`` and
    ``red_t2`` are not mistaken for NDVI.
    """
    text = str(name).strip().lower()
    common = _plain_common_name(text)
    if common is not None:
        return common, None
    # Longest common name first, so that "nir08_x" is nir08 and not nir.
    for common in sorted(COMMON_NAMES, key=len, reverse=True):
        match = re.fullmatch(rf"{common}[\s_\-.@:/]+(.+)", text)
        if match and not match.group(1).startswith("edge"):
            return common, match.group(1)
    return None, None


def resolve_bands(bands=None, *, n_features=None, feature_names=None, sensor=None):
    """Resolve the band names of a model's input columns.

    Names come, in this order of precedence, from ``bands``, from
    ``feature_names`` (the columns of a DataFrame seen in ``fit``), or are
    generated as ``x0, x1, ...`` like scikit-learn does. Under a ``sensor``
    preset every name must be a band of that sensor (case-insensitive,
    zero-padding and the preset's usual prefixes allowed, common names such as
    ``"red"`` too); without a preset, names are free and common names are
    recognised when a name is one (``"nir"``) or starts with one followed by a
    separator (``"nir_t1"``).

    Parameters
    ----------
    bands : sequence of str, optional
        Band names, one per input column.
    n_features : int, optional
        Number of input columns, checked against the names.
    feature_names : sequence of str, optional
        Input column names, e.g. ``feature_names_in_``; used when ``bands`` is
        None.
    sensor : str, optional
        Sensor preset, see :func:`get_sensor`.

    Returns
    -------
    bands : tuple of Band
        One :class:`Band` per input column, named as given.

    Raises
    ------
    ValueError
        If a name is not a band of the sensor (the message lists the valid
        names), names are duplicated, or their number differs from
        ``n_features``.

    Examples
    --------
    >>> from sknd.bands import resolve_bands
    >>> [b.common_name for b in resolve_bands(["B2", "B8A", "B11"], sensor="sentinel2")]
    ['blue', 'nir08', 'swir1']
    >>> [b.name for b in resolve_bands(n_features=2)]
    ['x0', 'x1']
    >>> resolve_bands(["green", "nir_t1"])[1]
    Band(name='nir_t1', common_name='nir', wavelength=None, sensor=None, group='t1')
    """
    names = bands if bands is not None else feature_names
    if names is None:
        if n_features is None:
            raise ValueError("Pass band names or n_features.")
        names = [f"x{i}" for i in range(int(n_features))]
    if isinstance(names, str):
        raise TypeError("bands must be a sequence of band names, not a single string.")
    names = [str(name) for name in names]
    if n_features is not None and len(names) != int(n_features):
        source = "bands" if bands is not None else "feature names"
        raise ValueError(f"Got {len(names)} {source} for {int(n_features)} input features.")
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise ValueError(f"Band names must be unique; duplicated: {duplicated}.")

    if sensor is None:
        resolved = []
        for name in names:
            common, group = _infer_common_name(name)
            resolved.append(Band(name=name, common_name=common, group=group))
        return tuple(resolved)

    preset = get_sensor(sensor)
    by_canonical = {canonical: (common, wl) for canonical, common, wl in preset.bands}
    resolved, unknown, seen = [], [], {}
    for name in names:
        canonical = preset.canonical(name)
        if canonical is None:
            unknown.append(name)
            continue
        if canonical in seen:
            raise ValueError(
                f"Band names {seen[canonical]!r} and {name!r} both mean "
                f"{preset.long_name} band {canonical}."
            )
        seen[canonical] = name
        common, wavelength = by_canonical[canonical]
        resolved.append(Band(name, common, wavelength, preset.key))
    if unknown:
        hint = "common names such as 'red' or 'nir' are accepted too"
        if preset.note:
            hint = f"{preset.note}; {hint}"
        raise ValueError(
            f"Unknown band name(s) {unknown} for sensor {preset.key!r} "
            f"({preset.long_name}). Valid names: {', '.join(preset.valid_names())} ({hint})."
        )
    return tuple(resolved)


def _band_index(name, bands):
    """Position of the band called ``name``: exact name, then the sensor's
    spelling rules (``"B08"`` for ``"B8"``), then a unique common name."""
    names = [band.name for band in bands]
    if name in names:
        return names.index(name)
    sensors = {band.sensor for band in bands if band.sensor is not None}
    if sensors:
        preset = SENSORS[next(iter(sensors))]
        canonical = preset.canonical(name)
        if canonical is not None:
            for position, band in enumerate(bands):
                if preset.canonical(band.name) == canonical:
                    return position
    matches = [
        position
        for position, band in enumerate(bands)
        if band.common_name is not None
        and band.common_name == str(name).lower()
        and band.group is None
    ]
    if len(matches) == 1:
        return matches[0]
    raise ValueError(f"Unknown band {name!r} in pairs; the bands are {names}.")


def band_pair_indices(pairs, bands):
    """Translate band pairs given by name into column indices.

    Parameters
    ----------
    pairs : "all" or sequence of (str or int, str or int)
        Band pairs; names are looked up among ``bands`` (exact name first,
        then the sensor's spellings, then a common name such as ``"nir"``
        that only one band has). Integers are kept as column indices.
    bands : sequence of Band
        The resolved bands, see :func:`resolve_bands`.

    Returns
    -------
    pairs : "all" or list of (int, int)
        ``"all"`` and non-sequences are returned unchanged for the caller's
        validation.

    Raises
    ------
    ValueError
        If a name matches no band.

    Examples
    --------
    >>> from sknd.bands import band_pair_indices, resolve_bands
    >>> bands = resolve_bands(["B02", "B04", "B08", "B11"], sensor="sentinel2")
    >>> band_pair_indices([("B8", "B4"), ("nir", "swir1"), (0, "B04")], bands)
    [(2, 1), (2, 3), (0, 1)]
    """
    if isinstance(pairs, str):
        return pairs
    try:
        items = [tuple(pair) for pair in pairs]
    except TypeError:
        return pairs
    if not any(isinstance(value, str) for pair in items for value in pair):
        return pairs
    return [
        tuple(value if not isinstance(value, str) else _band_index(value, bands) for value in pair)
        for pair in items
    ]
