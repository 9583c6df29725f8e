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

Presets: Sentinel-2 (``"sentinel2"``), Landsat 8/9 (``"landsat8"``), Landsat 7
ETM+ (``"landsat7"``), Landsat 4-5 TM (``"landsat5"``), HLS S30 and L30
(``"hls_s30"``, ``"hls_l30"``), PlanetScope SuperDove (``"planetscope"``),
ASTER (``"aster"``), Landsat MSS (``"landsat_mss"``, ``"landsat_mss_1_3"``) and
MODIS (``"modis"``); :func:`get_sensor` lists the spellings accepted for each.
Under every preset a band may also be called by its *Awesome Spectral Indices*
(spyndex) short name (``"R"``, ``"N"``, ``"RE1"``, ``"S1"`` ...) or its STAC
common name (``"nir08"``, ``"swir16"``, ``"rededge071"`` ...).

Centre wavelengths are nominal values in nanometres (Sentinel-2A for
Sentinel-2, USGS band designations for Landsat, the middle of the band pass for
Landsat MSS and MODIS); they are meant for labelling and ordering, not for
radiometry. The sources of every table are listed in :mod:`sknd._sensors` and
in ``docs/raster.md``.

:func:`match_bands` finds a model's bands among an image's bands: by name, by
the same sensor's spellings, or through common names across sensors (a model
fitted on Landsat 8 applied to a Sentinel-2 scene).
"""

from __future__ import annotations

import re

# The band record and names read as bands (_band_names) are what matching stands on;
# this module matches one list of bands among another, across sensors.
from ._band_names import (
    Band,
    get_sensor,
    infer_common_name,
    plain_common_name,
    resolve_bands,
    sensor_bands,
)
from ._nd._pairs import band_pair_indices
from ._sensors import COMMON_NAMES, NEAR_COMMON_NAMES, SENSORS

__all__ = [
    "COMMON_NAMES",
    "SENSORS",
    "Band",
    "BandMatchWarning",
    "BandPositionWarning",
    "band_pair_indices",
    "get_sensor",
    "match_bands",
    "resolve_bands",
    "sensor_bands",
]


class BandMatchWarning(UserWarning):
    """An image's bands were matched to a model's bands through common names.

    Raised as a warning by :mod:`sknd.raster` when a model's bands are found
    in an image of another sensor through common names (a model fitted on
    Landsat 8 bands applied to a Sentinel-2 scene); the message lists the
    mapping. Harmless, and raised on every such call: silencing it does not
    silence :class:`BandPositionWarning`, which is no subclass of it.

    Examples
    --------
    >>> import warnings
    >>> from sknd.bands import BandMatchWarning
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", BandMatchWarning)
    """


class BandPositionWarning(UserWarning):
    """An image's bands were taken by position although their names say otherwise.

    Raised as a warning by :mod:`sknd.raster` when ``bands="positional"``
    (``--bands positional``) takes an image's bands in order while their
    names match the model's bands in another order: the map is then made of
    the wrong bands. (An image without names is refused unless
    ``bands="positional"`` is given.) A class of its own, apart from the
    harmless :class:`BandMatchWarning`, so that silencing one never silences
    the other.

    Examples
    --------
    >>> import warnings
    >>> from sknd.bands import BandPositionWarning
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", BandPositionWarning)
    """


def match_bands(model_bands, image_bands, *, model_sensor=None, image_sensor=None):
    """Find each of a model's bands among an image's bands.

    What a band *is* comes from the image first: ``image_sensor`` reads every
    image band's name under that preset (it wins over a name equal to the
    model's: Landsat 8's ``"SR_B4"`` is red, Landsat 7's near infrared), and
    an image band given as a :class:`Band` with a ``common_name`` (a STAC
    Item's ``eo:bands``) is that band whatever its name. Without either, in
    this order: identical names (read as the model's sensor's); the image's
    names read under the model's sensor, then under every preset whose
    reading gives a match, which must all agree. Bands of one sensor match by
    band number (``"B4"`` and ``"B04"``), bands of different sensors by common
    name (Landsat 8 ``"SR_B5"`` and Sentinel-2 ``"B08"`` are both ``"nir"``),
    a band without a common name on either side only by its name. Where no
    band has the model band's common name, a near one is taken (``"nir"``,
    the broad band, for ``"nir08"``, the narrow one, and the other way), and
    the mapping says so.

    Parameters
    ----------
    model_bands : sequence of str or Band
        The model's band names, in the order of its input columns, or the
        resolved bands (an sknd estimator's ``bands_``).
    image_bands : sequence of str or Band
        The image's band names, in the order of its band axis; a
        :class:`Band` carries what the data's metadata say of the band (its
        ``common_name``, in the STAC or sknd vocabulary).
    model_sensor : str, optional
        Preset of the model's band names (an sknd estimator's ``sensor``).
    image_sensor : str, optional
        Preset of the image's band names; guessed when None.

    Returns
    -------
    positions : list of int
        For each model band, its position in ``image_bands``.
    mapping : list of (str, str, str or None)
        For each model band: its name, the image band's name and the common
        name that matched them (None when the names or band numbers did;
        ``"nir08 as nir"`` for a near match).
    image_sensor : str or None
        Key of the preset the image's names were read under, None when they
        matched as given.

    Raises
    ------
    ValueError
        If a model band has no counterpart in the image (the message names
        it), or the image's names fit several presets that disagree (pass
        ``image_sensor``).

    Examples
    --------
    >>> from sknd.bands import Band, match_bands
    >>> positions, mapping, sensor = match_bands(
    ...     ["SR_B4", "SR_B5"], ["B02", "B03", "B04", "B08"], model_sensor="landsat8"
    ... )
    >>> positions, sensor
    ([2, 3], 'sentinel2')
    >>> mapping
    [('SR_B4', 'B04', 'red'), ('SR_B5', 'B08', 'nir')]

    A Landsat 7 scene names its red band ``SR_B3``; its ``SR_B4`` is near infrared:

    >>> match_bands(["SR_B4", "SR_B5"], ["SR_B3", "SR_B4", "SR_B5"],
    ...             model_sensor="landsat8", image_sensor="landsat7")[0]
    [0, 1]
    >>> match_bands(["B8A"], [Band("SR_B4", "nir"), Band("SR_B5", "swir16")],
    ...             model_sensor="sentinel2")[1]
    [('B8A', 'SR_B4', 'nir08 as nir')]
    """
    if isinstance(model_bands, str) or isinstance(image_bands, str):
        raise TypeError("model_bands and image_bands must be sequences of band names.")
    image_bands = list(image_bands)
    image_names = [band.name if isinstance(band, Band) else str(band) for band in image_bands]
    model_bands = list(model_bands)
    if all(isinstance(band, Band) for band in model_bands):
        model = tuple(model_bands)
    else:
        model = _resolve_model([str(name) for name in model_bands], model_sensor)
    model_names = [band.name for band in model]
    described = any(isinstance(band, Band) for band in image_bands)
    if image_sensor is not None or described:
        key = None if image_sensor is None else get_sensor(image_sensor).key
        image = _described(image_bands, key)
        positions, missing = _pair_up(model, image)
        if missing:
            raise _no_counterpart(model, image_names, image_sensor, (key, missing))
        return positions, _mapping(model, image, positions), key
    if all(name in image_names for name in model_names):
        _check_unique(model_names, image_names)
        return (
            [image_names.index(name) for name in model_names],
            [(name, name, None) for name in model_names],
            None,
        )
    found, best = _readings(model, image_names, image_sensor)
    if not found:
        raise _no_counterpart(model, image_names, image_sensor, best)
    if len({tuple(positions) for _, positions, _ in found}) > 1:
        readings = "; ".join(
            f"{key or 'common names'}: {[image_names[p] for p in positions]}"
            for key, positions, _ in found
        )
        raise ValueError(
            f"The image's band names {image_names} fit several sensor presets that pick "
            f"different bands for the model's {model_names} ({readings}); name the image's "
            "sensor with sensor=."
        )
    key, positions, image = found[0]
    return positions, _mapping(model, image, positions), key


def _described(image_bands, key):
    """The image's bands as its sensor (preset ``key``) and metadata (:class:`Band`
    entries' common names) say they are.

    Plain names under a preset must all be bands of it (the error lists the valid
    names); a described band the preset does not know keeps its metadata's common name.
    """
    preset = None if key is None else SENSORS[key]
    if not any(isinstance(band, Band) for band in image_bands):
        return resolve_bands([str(band) for band in image_bands], sensor=preset.key)
    bands = []
    for entry in image_bands:
        name = entry.name if isinstance(entry, Band) else str(entry)
        given = entry.common_name if isinstance(entry, Band) else None
        canonical = None if preset is None or not given else preset.canonical(given)
        if canonical is None and given and plain_common_name(given):
            bands.append(Band(name, plain_common_name(given)))
            continue
        # No common name, or one of no band (STAC's generic "rededge"): the name says.
        if canonical is None and preset is not None:
            canonical = preset.canonical(name)
        if canonical is not None:
            common, wavelength = next((c, w) for b, c, w in preset.bands if b == canonical)
            bands.append(Band(name, common, wavelength, preset.key))
        else:
            common, group = infer_common_name(name)
            bands.append(Band(name, common, group=group))
    return tuple(bands)


def _readings(model, image_names, image_sensor):
    """The readings of the image's names under which every model band is found.

    Returns ``(found, best)``: ``found`` lists ``(key, positions, image bands)``, only
    the first when it is decisive (under ``image_sensor``, or under the model's own
    sensor); ``best`` is ``(key, missing bands)`` of the reading that missed fewest.
    """
    # A preset this sknd does not know (a model file from a newer sknd): common names match.
    model_key = next((band.sensor for band in model if band.sensor in SENSORS), None)
    if image_sensor is not None:
        keys = [get_sensor(image_sensor).key]
    else:
        keys = ([model_key] if model_key else []) + [k for k in SENSORS if k != model_key] + [None]
    found, best = [], None
    for key in keys:
        if image_sensor is None and not _plausible(key, image_names):
            continue
        try:
            image = resolve_bands(image_names, sensor=key)
        except ValueError:
            if image_sensor is not None:
                raise
            continue
        positions, missing = _pair_up(model, image)
        if missing and (best is None or len(missing) < len(best[1])):
            best = (key, missing)
        if not missing:
            if image_sensor is not None or key == model_key:
                return [(key, positions, image)], best
            found.append((key, positions, image))
    return found, best


def _no_counterpart(model, image_names, image_sensor, best):
    """The error for model bands that no reading of the image's names finds."""
    if best is not None:
        key, missing = best
    else:  # no reading of the image's names at all (e.g. a name given twice)
        key = None
        missing = [band for band in model if band.name not in image_names] or list(model)
    where = f" read as {SENSORS[key].long_name} bands" if key else ""
    described = ", ".join(
        f"{band.name!r} ({band.common_name or 'no common name'})" for band in missing
    )
    hint = "" if image_sensor else "; name the image's sensor (sensor=) if it has a preset"
    repeated = sorted({name for name in image_names if image_names.count(name) > 1})
    if repeated:
        hint = f"; the image names band(s) {repeated} more than once" + hint
    if any(band.common_name is None for band in missing):
        hint += (
            "; bands without a common name only match identical names: fit the model "
            "with sensor= (e.g. sensor='landsat8') or name its bands by common name"
        )
    return ValueError(
        f"The model's band(s) {described} have no counterpart among the image's bands "
        f"{image_names}{where}{hint}."
    )


def _plausible(key, names):
    """Whether names could come from the sensor's own products (only for guessing)."""
    if key is None or SENSORS[key].padded:
        return True
    return not any(re.fullmatch(r"[A-Za-z_]*0\d+[A-Za-z]?", name) for name in names)


def _check_unique(wanted, names):
    duplicated = sorted({name for name in wanted if names.count(name) > 1})
    if duplicated:
        raise ValueError(
            f"Band(s) {duplicated} appear more than once among the image's bands {names}; "
            "cannot tell which one the model should use."
        )


def _resolve_model(names, sensor):
    """The model's bands with common names: under ``sensor``, as written, or under the
    presets that all agree on every name's common name."""
    if sensor is not None:
        return resolve_bands(names, sensor=sensor)
    free = resolve_bands(names)
    if all(band.common_name is not None for band in free):
        return free
    readings = {}
    for key in SENSORS:
        try:
            bands = resolve_bands(names, sensor=key)
        except ValueError:
            continue
        readings.setdefault(tuple(band.common_name for band in bands), bands)
    if len(readings) == 1:
        return next(iter(readings.values()))
    return free


def _pair_up(model, image):
    """Positions of the model's bands among the image's bands, and the bands not found.

    A model band with a common name matches the image band of that common name
    (and group), else one of a near common name (:data:`NEAR_COMMON_NAMES`); one
    without matches the same sensor's band of its number, else only its own name.
    """
    positions, missing = [], []
    for band in model:
        if band.common_name is not None:
            matches = _by_common_name(band, image, band.common_name)
            if not matches:
                near = NEAR_COMMON_NAMES.get(band.common_name, ())
                matches = [i for name in near for i in _by_common_name(band, image, name)]
        elif band.sensor in SENSORS:
            canonical = SENSORS[band.sensor].canonical
            matches = [
                i
                for i, other in enumerate(image)
                if other.sensor == band.sensor and canonical(other.name) == canonical(band.name)
            ]
        else:
            matches = [i for i, other in enumerate(image) if other.name == band.name]
        if len(matches) == 1:
            positions.append(matches[0])
        else:
            missing.append(band)
    return positions, missing


def _by_common_name(band, image, common):
    return [
        i
        for i, other in enumerate(image)
        if other.common_name == common and other.group == band.group
    ]


def _mapping(model, image, positions):
    mapping = []
    for band, position in zip(model, positions):
        other = image[position]
        same = band.name == other.name or (band.sensor is not None and band.sensor == other.sensor)
        common = band.common_name
        if common != other.common_name:  # a near match
            common = f"{common} as {other.common_name}"
        mapping.append((band.name, other.name, None if same else common))
    return mapping
