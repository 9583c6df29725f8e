"""Which of an image's bands feed which of a model's inputs.

Shared by the functions of :mod:`sknd.raster` and the ``python -m sknd.raster``
command: the image's band names (from ``bands=``, an xarray band coordinate,
the file's band descriptions or DataFrame columns) are matched to the model's
(``feature_names_in_``, or an sknd estimator's ``bands=``) with
:func:`sknd.bands.match_bands`. Bands are only taken by position when the
model has no names or when the caller says so with ``bands="positional"``; an
image without names for a model with names is refused (its bands may be in
any order). Two warnings of their own classes: matching through common names
(:class:`~sknd.bands.BandMatchWarning`, harmless) and positions that the
image's own names contradict (:class:`~sknd.bands.BandPositionWarning`).
"""

import re
import warnings

import numpy as np

from .._sensors import SENSOR_ALIASES
from ..bands import Band, BandMatchWarning, BandPositionWarning, get_sensor, match_bands

__all__ = []

POSITIONAL = "positional"


def model_band_names(estimator):
    """The band names an estimator was fitted on, or None when it has none."""
    names = getattr(estimator, "feature_names_in_", None)
    hook = getattr(estimator, "_fitted_band_names", None)
    if names is None and hook is not None:
        # sknd estimators fitted on arrays with explicit bands=[...] names.
        names = hook()
    return None if names is None else [str(name) for name in names]


def band_name(label):
    """A band label as a name: bytes (netCDF's character arrays) decoded, a :class:`Band` (a
    model's ``bands_``) by its name, others as ``str``."""
    if isinstance(label, Band):
        return label.name
    if isinstance(label, (bytes, np.bytes_)):
        return bytes(label).decode("utf-8", errors="replace").strip()
    return str(label)


def check_bands(bands, n_bands):
    """Validate the ``bands=`` argument: None, ``"positional"`` or one name per band."""
    if bands is None or (isinstance(bands, str) and bands == POSITIONAL):
        return bands
    if isinstance(bands, str):
        raise ValueError(f"bands must be a sequence of band names or 'positional', got {bands!r}.")
    try:
        names = [band_name(name) for name in bands]
    except TypeError:
        raise TypeError(
            f"bands must be a sequence of band names or 'positional', got {bands!r}."
        ) from None
    if len(names) != n_bands:
        raise ValueError(f"Got {len(names)} band names in bands= for an image of {n_bands} bands.")
    return names


def band_columns(estimator, image_names, n_bands, *, bands, sensor):
    """Positions of the model's inputs among the image's bands, or None for all, in order.

    ``image_names`` are the names the image carries (None when it has none),
    :class:`~sknd.bands.Band` entries where its metadata say what a band is (a
    STAC Item's common names); ``bands`` (checked by :func:`check_bands`)
    overrides them.
    """
    bands = check_bands(bands, n_bands)
    if sensor is not None:
        get_sensor(sensor)  # an unknown preset is an error, also where names match as given
    if isinstance(bands, list):
        image_names = bands
    model = model_band_names(estimator)
    expected = getattr(estimator, "n_features_in_", None)
    if bands == POSITIONAL or model is None:
        if sensor is not None and model is None:
            raise ValueError(
                f"sensor={sensor!r} needs a model fitted with band names (DataFrame columns "
                "or bands=); this one has none, so bands can only be taken by position."
            )
        _check_count(estimator, expected, n_bands)
        if model is not None and image_names is not None:
            _warn_if_names_disagree(estimator, model, image_names, sensor)
        return None
    if image_names is None:
        name = type(estimator).__name__
        if n_bands != len(model):
            raise ValueError(
                f"The image has {n_bands} bands without names, but {name} was fitted on "
                f"{len(model)} bands {model}; name the image's bands with bands=[...] so that "
                "they can be matched."
            )
        # Taken by position, bands stored in another order give a wrong map without a word.
        raise ValueError(
            f"The image's {n_bands} bands have no names, and {name} was fitted on the bands "
            f"{model}: name the image's bands, in the image's order, with bands=[...] (a "
            "GeoTIFF: set its band descriptions) so that they are matched by name, or pass "
            "bands='positional' to take them in the model's order."
        )
    positions, mapping, image_sensor = match_bands(
        _model_bands(estimator, model),
        image_names,
        model_sensor=_model_sensor(estimator),
        image_sensor=sensor,
    )
    transferred = [(m, i, common) for m, i, common in mapping if common is not None]
    if transferred:
        pairs = ", ".join(f"{m} -> {i} ({common})" for m, i, common in transferred)
        # The model's side as fitted: its sensor parameter, set after fit, changes nothing.
        source = _model_sensor(estimator) or "the model's bands"
        target = _label(sensor) or image_sensor or "the image's bands"
        warnings.warn(
            f"Bands matched by common name from {source} to {target}: {pairs}.",
            BandMatchWarning,
            stacklevel=5,  # band_columns < _apply_tables < apply_image < predict < the caller
        )
    if positions == list(range(n_bands)):
        return None
    return positions


def _label(sensor):
    """A sensor as its spelling names it (``"landsat-9"``: ``landsat9``, which the preset
    ``landsat8`` serves), None for none."""
    if not isinstance(sensor, str):
        return None
    spelled = re.sub(r"[^0-9a-z]", "", sensor.lower())
    return spelled if spelled in SENSOR_ALIASES else get_sensor(sensor).key


def _warn_if_names_disagree(estimator, model, image_names, sensor):
    """Warn when ``bands="positional"`` takes bands whose names say they are in another order."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BandMatchWarning)
            positions = match_bands(
                _model_bands(estimator, model),
                image_names,
                model_sensor=_model_sensor(estimator),
                image_sensor=sensor,
            )[0]
    except ValueError:  # names that do not match: positions are all there is
        return
    if positions != list(range(len(model))):
        warnings.warn(
            f"bands='positional' takes the image's bands {image_names} in order as the "
            f"model's bands {model}, but their names match the model's bands at positions "
            f"{positions}. Leave bands out to match them by name.",
            BandPositionWarning,
            stacklevel=6,  # here < band_columns < _apply_tables < apply_image < predict < caller
        )


def _check_count(estimator, expected, n_bands):
    if expected is not None and n_bands != expected:
        raise ValueError(
            f"The image has {n_bands} bands, but {type(estimator).__name__} was fitted on "
            f"{expected} features."
        )


def _model_sensor(estimator):
    """The preset of the model's bands as fitted (``bands_``), not the ``sensor`` parameter."""
    resolved = getattr(estimator, "bands_", None)
    if resolved is not None:
        return next((band.sensor for band in resolved if getattr(band, "sensor", None)), None)
    sensor = getattr(estimator, "sensor", None)
    return sensor if isinstance(sensor, str) else None


def _model_bands(estimator, names):
    """An sknd estimator's resolved bands (with their common names), else the names."""
    resolved = getattr(estimator, "bands_", None)
    if resolved is not None and all(isinstance(band, Band) for band in resolved):
        if [band.name for band in resolved] == names:
            return tuple(resolved)
    return names
