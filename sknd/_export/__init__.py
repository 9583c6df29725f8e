"""The whole fitted model where the data lives: openEO processes and Earth Engine code.

:func:`export_model` writes what a model computes per pixel (standardization,
ND layers, hidden and output layers, and the class codes, probabilities,
regression values or learned indices) in another system's language, from
the model file's network (:mod:`._program` turns it into scalar arithmetic
once; :mod:`._openeo` and :mod:`._earthengine` spell it), or, for openEO, as
a UDF that computes it with numpy from the model as data (:mod:`._openeo_udf`,
:mod:`._udf`). The estimators' and :class:`sknd.SavedModel`'s ``export_model``
methods call it. The package also holds one learned index as text in each
``export_formulas`` syntax (:mod:`._formula_syntax`) and the Awesome Spectral Indices
vocabulary (:mod:`._asi_catalogue`), which :mod:`sknd.inspection` uses.

May import: :mod:`sknd._inference`'s colours, :mod:`sknd._nd`, :mod:`sknd.bands`,
:mod:`sknd.indices` and :mod:`sknd._version`; not the estimators, training or model files
(which import it), and nothing that imports torch, scikit-learn or pandas when loaded
(``tests/test_architecture.py`` checks it).
"""

import numbers

import numpy as np

from ..bands import match_bands
from ._earthengine import earthengine_code
from ._mlm import mlm_item
from ._openeo import graph_nodes, process_graph
from ._openeo_udf import udf_context, udf_nodes
from ._program import OUTPUTS, build, output_labels

__all__ = []

FORMATS = ("openeo", "earthengine", "mlm")
FORMS = ("auto", "graph", "udf")

#: ``form="auto"`` writes the pure process graph up to this many nodes, the UDF beyond:
#: openeo-processes-dask's executor takes time quadratic in a graph's nodes (benchmarks/
#: RESULTS.md, "openEO processes at every size").
GRAPH_MAX_NODES = 1500


def export_model(
    model,
    fields,
    *,
    format,
    output,
    bands,
    sensor,
    collection,
    dimension,
    scale=1.0,
    offset=0.0,
    form="auto",
    nodata=None,
    href=None,
    onnx_href=None,
    colors=None,
    content=None,
):
    """The model (a :class:`sknd.SavedModel`, its checked ``fields``) in ``format``.

    ``content`` is the model file's bytes (for an MLM Item's checksum). See
    :meth:`sknd.SavedModel.export_model` for the parameters.
    """
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {format!r}.")
    model_bands = [str(name) for name in model.band_names_]
    scale = _per_band("scale", scale, model_bands)
    offset = _per_band("offset", offset, model_bands)
    if not all(scale):
        raise ValueError(f"scale must not be 0 (the bands would all read 0), got {scale}.")
    mlm = {"href": href, "onnx_href": onnx_href, "colors": colors}
    if format == "mlm":
        return mlm_item(model, fields, content, scale=scale, offset=offset, **mlm)
    for name, value in mlm.items():
        if value is not None:
            raise ValueError(f"{name} describes a model file in an MLM Item: pass format='mlm'.")
    output = _checked_output(model, output)
    _check_openeo_options(format, collection, sensor, dimension, form)
    names = _selected_bands(model, bands, sensor)
    nodata = _nodata(nodata)
    fill = _fill_code(len(fields["classes"])) if output == "class" else None
    labels = output_labels(fields, output, model_bands)
    summary = _summary(model, output, names, nodata, fill)
    if format == "earthengine":
        return earthengine_code(
            fields,
            output,
            labels,
            bands=names,
            scale=scale,
            offset=offset,
            nodata=nodata,
            fill=fill,
            summary=summary,
        )
    where = {"collection": collection, "bands": names, "dimension": dimension, "summary": summary}
    program = None
    if form != "udf":
        program = build(fields, output, model_bands, scale, offset, nodata, fill)
    if program is not None and (form == "graph" or program.size() <= GRAPH_MAX_NODES):
        return process_graph(graph_nodes(program, dimension, names), labels, **where)
    context = udf_context(fields, output, labels, dimension, scale, offset, nodata, fill)
    return process_graph(udf_nodes(context, dimension), labels, **where)


def _summary(model, output, names, nodata, fill):
    """What the export computes, in a line (its docstring, the process's summary)."""
    what = {"class": "class codes (positions in classes_)", "proba": "class probabilities"}
    summary = f"{what.get(output, output)} of an sknd {model.estimator} on the bands {names}"
    if nodata is not None:
        summary += f", no-data where a band is {nodata} or NaN"
        if fill is not None:
            summary += f" (class code {fill})"
    return summary


def _checked_output(model, output):
    """``output``, by default the model's first."""
    outputs = OUTPUTS[model.estimator]
    if output is None:
        return outputs[0]
    if output not in outputs:
        raise ValueError(
            f"output={output!r} is not an output of an {model.estimator} model: choose one of "
            f"{list(outputs)}."
        )
    return output


def _check_openeo_options(format, collection, sensor, dimension, form):
    for name, value in (("collection", collection), ("sensor", sensor)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a string or None, got {value!r}.")
    if not isinstance(dimension, str) or not dimension:
        raise TypeError(f"dimension must be the name of the band dimension, got {dimension!r}.")
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}.")
    if format != "openeo" and form != "auto":
        raise ValueError("form chooses the form of an openEO process: leave it out here.")
    if format != "openeo" and collection is not None:
        raise ValueError(
            "collection names an openEO collection; Earth Engine code takes an ee.Image: "
            "leave collection out with format='earthengine'."
        )


def _nodata(value):
    """``nodata`` as a float (NaN allowed), or None."""
    if value is None:
        return None
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(
            f"nodata must be a number (the bands' no-data value) or None, got {value!r}."
        )
    return float(value)


def _fill_code(n_classes):
    """The code of no-data pixels in class codes: as the scene command's default fill, the
    largest value of the smallest unsigned integer type holding the codes and itself."""
    return next(
        int(np.iinfo(t).max)
        for t in (np.uint8, np.uint16, np.uint32)
        if n_classes <= np.iinfo(t).max
    )


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
