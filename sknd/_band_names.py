"""What a band's name says: the :class:`Band` record, a sensor preset by its spelling and
names read as bands.

:func:`resolve_bands` reads a model's or an image's band names under a preset
(:func:`get_sensor`) or, without one, as common names where a name is one;
:func:`sensor_bands` lists a preset's bands. Finding one list of bands among
another, across sensors, is :func:`sknd.bands.match_bands`'s, which stands on
these; :mod:`sknd.bands` is the public face of both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._sensors import AMBIGUOUS_SENSORS, COMMON_NAMES, SENSOR_ALIASES, SENSORS, VOCABULARY

__all__ = []


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


def get_sensor(sensor):
    """Return the preset for ``sensor``.

    Parameters
    ----------
    sensor : str
        Preset key or a common spelling of it (case, spaces and punctuation
        are ignored): ``"sentinel2"`` (``"S2"``, ``"MSI"``), ``"landsat8"``
        (``"Landsat 9"``, ``"OLI"``, ``"LC08"``), ``"landsat7"`` (``"ETM+"``,
        ``"LE07"``), ``"landsat5"`` (``"Landsat 4"``, ``"TM"``, ``"LT05"``),
        ``"hls_s30"`` (``"S30"``), ``"hls_l30"`` (``"L30"``),
        ``"planetscope"`` (``"SuperDove"``, ``"Planet"``), ``"aster"``,
        ``"landsat_mss"``, ``"landsat_mss_1_3"``, ``"modis"``. ``"HLS"``
        alone is refused with a message naming its two products, whose band
        numbers differ.

    Returns
    -------
    preset : object
        Internal preset record with the attributes ``key``, ``long_name`` and
        ``bands``.

    Raises
    ------
    ValueError
        If the sensor is unknown or ambiguous.

    Examples
    --------
    >>> from sknd.bands import get_sensor
    >>> get_sensor("Sentinel-2").key, get_sensor("Landsat 5 TM").key
    ('sentinel2', 'landsat5')
    """
    if not isinstance(sensor, str):
        raise TypeError(f"sensor must be a string, got {type(sensor).__name__}.")
    key = re.sub(r"[^0-9a-z]", "", sensor.lower())
    if key in SENSOR_ALIASES:
        return SENSORS[SENSOR_ALIASES[key]]
    if key in AMBIGUOUS_SENSORS:
        options = " or ".join(repr(name) for name in AMBIGUOUS_SENSORS[key])
        raise ValueError(
            f"{sensor!r} names several products with different band numbers; use {options}."
        )
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
        One row per band with the columns ``band``, ``common_name``
        (None for a band without a counterpart in :data:`COMMON_NAMES`),
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
            (name, common, wavelength, COMMON_NAMES.get(common, ""))
            for name, common, wavelength in preset.bands
        ],
        columns=["band", "common_name", "wavelength", "description"],
    )


def plain_common_name(text):
    """The common name ``text`` spells (``"NIR"``, ``"red_edge_1"``, ``"S1"``), or None."""
    key = re.sub(r"[\s_\-.]", "", text.lower())
    if key in COMMON_NAMES:
        return key
    return VOCABULARY.get(key)


def infer_common_name(name):
    """Guess ``(common_name, group)`` for a band name outside any preset.

    A name that is a common name (``"NIR"``, ``"red_edge_1"``), or a common name
    followed by a separator and a tag (``"nir_2010"``, ``"red-t1"``), is
    recognised; the tag becomes the band's group so that ``nir_t1`` and
    ``red_t2`` are not mistaken for NDVI.
    """
    text = str(name).strip().lower()
    common = plain_common_name(text)
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
    bands : sequence of str or Band, optional
        Band names, one per input column; :class:`Band` objects (a fitted
        model's ``bands_``) are kept as they are when ``sensor`` is None,
        and read by their ``name`` under a ``sensor``.
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
    names = list(names)
    given = {band.name: band for band in names if isinstance(band, Band)}
    # Bands of a fitted model (its bands_) keep what they say; other names are text.
    names = [name.name if isinstance(name, Band) else str(name) for name in names]
    if n_features is not None and len(names) != int(n_features):
        source = "bands" if bands is not None else "feature names"
        raise ValueError(f"Got {len(names)} {source} for {int(n_features)} input features.")
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise ValueError(f"Band names must be unique; duplicated: {duplicated}.")

    if sensor is None:
        resolved = []
        for name in names:
            common, group = infer_common_name(name)
            resolved.append(given.get(name) or Band(name=name, common_name=common, group=group))
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
