"""The whole fitted model where the data lives: openEO process graphs and Earth Engine code.

:func:`export_model` writes what a model computes per pixel (standardization,
ND layers, hidden and output layers, and the class codes, probabilities,
regression values or learned indices) in another system's language, from
the model file's network (:mod:`._program` turns it into scalar arithmetic
once; :mod:`._openeo` and :mod:`._earthengine` spell it). The estimators'
and :class:`sknd.SavedModel`'s ``export_model`` methods call it.
"""

import numbers

import numpy as np

from ...bands import match_bands
from ._earthengine import earthengine_code
from ._openeo import process_graph
from ._program import OUTPUTS, build

__all__ = []

FORMATS = ("openeo", "earthengine")


def export_model(
    model, fields, *, format, output, bands, sensor, collection, dimension, scale=1.0, offset=0.0
):
    """The model (a :class:`sknd.SavedModel` and its checked ``fields``) in ``format``.

    See :meth:`sknd.SavedModel.export_model` for the parameters.
    """
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {format!r}.")
    outputs = OUTPUTS[model.estimator]
    if output is None:
        output = outputs[0]
    if output not in outputs:
        raise ValueError(
            f"output={output!r} is not an output of an {model.estimator} model: choose one of "
            f"{list(outputs)}."
        )
    for name, value in (("collection", collection), ("sensor", sensor)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a string or None, got {value!r}.")
    if not isinstance(dimension, str) or not dimension:
        raise TypeError(f"dimension must be the name of the band dimension, got {dimension!r}.")
    names = _selected_bands(model, bands, sensor)
    model_bands = [str(name) for name in model.band_names_]
    scale = _per_band("scale", scale, model_bands)
    offset = _per_band("offset", offset, model_bands)
    if not all(scale):
        raise ValueError(f"scale must not be 0 (the bands would all read 0), got {scale}.")
    program = build(fields, output, model_bands, scale, offset)
    what = {"class": "class codes (positions in classes_)", "proba": "class probabilities"}
    summary = f"{what.get(output, output)} of an sknd {model.estimator} on the bands {names}"
    if format == "openeo":
        return process_graph(
            program, collection=collection, bands=names, dimension=dimension, summary=summary
        )
    if collection is not None:
        raise ValueError(
            "collection names an openEO collection; Earth Engine code takes an ee.Image: "
            "leave collection out with format='earthengine'."
        )
    return earthengine_code(program, bands=names, summary=summary)


def _per_band(name, value, model_bands):
    """``value`` (one number, or one per band of the model) as a list of floats, one per band."""
    values = [value] if np.ndim(value) == 0 else list(np.ravel(value))
    if not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values):
        raise TypeError(f"{name} must be a number or a list of numbers, got {value!r}.")
    if len(values) not in (1, len(model_bands)) or np.ndim(value) > 1:
        raise ValueError(
            f"{name} must be a number or one number per band of the model {model_bands} "
            f"(in that order), got {len(values)} numbers."
        )
    values = [float(v) for v in values]
    if not np.isfinite(values).all():
        raise ValueError(f"{name} must be finite, got {value!r}.")
    return values * len(model_bands) if len(values) == 1 else values


def _selected_bands(model, bands, sensor):
    """The names under which the data has the model's bands, in the model's order."""
    if bands is None:
        if sensor is not None:
            raise ValueError(
                "sensor= names the preset of the band names given as bands=; pass bands= too."
            )
        return [str(name) for name in model.band_names_]
    if isinstance(bands, str) or not all(isinstance(name, str) for name in bands):
        raise TypeError(f"bands must be a list of band names (str), got {bands!r}.")
    bands = list(bands)
    if len(set(bands)) != len(bands):
        duplicates = sorted({name for name in bands if bands.count(name) > 1})
        raise ValueError(f"bands names {duplicates} more than once: each band once.")
    try:
        positions, _, _ = match_bands(
            model.bands_, bands, model_sensor=model.sensor, image_sensor=sensor
        )
    except ValueError as error:
        raise ValueError(
            f"The bands {bands} lack a band of the model {list(model.band_names_)}: {error}"
        ) from None
    return [bands[position] for position in positions]
