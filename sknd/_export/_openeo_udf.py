"""A model as an openEO process on ``run_udf``: numpy code, and the model as data.

The pure process graph of :mod:`._openeo` spells every weight as a node: its
size, and the time an executor takes to parse it, grow with the weights. Here
the process is three nodes after the band selection, whatever the model:
``apply_dimension`` over the band dimension whose callback is ``run_udf``
with the code of :mod:`._udf` (numpy and xarray only: no sknd on the
back-end) and, as the ``context`` of ``apply_dimension`` (which hands it to
the UDF), the model file's layers with their arrays as base64 bytes; then
``rename_labels`` names the outputs, or ``reduce_dimension`` keeps the one
output. ``apply_dimension`` with a ``run_udf`` callback is how openEO
back-ends run Python UDFs over the bands, and openeo-processes-dask runs it.
"""

import base64
import inspect

import numpy as np

__all__ = []


def _encoded(value):
    """``value`` with its arrays as ``{"dtype", "shape", "base64"}`` (float32 where exact)."""
    if isinstance(value, dict):
        return {key: _encoded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_encoded(item) for item in value]
    if not isinstance(value, np.ndarray):
        return value
    if value.dtype.kind in "iu":
        array = value.astype("<i4" if np.abs(value).max(initial=0) < 2**31 else "<i8")
    elif np.array_equal(value.astype(np.float32), value):  # the weights: float32 values
        array = value.astype("<f4")
    else:
        array = value.astype("<f8")
    return {
        "dtype": array.dtype.str,
        "shape": list(array.shape),
        "base64": base64.b64encode(array.tobytes()).decode("ascii"),
    }


def udf_context(fields, output, labels, dimension, scale, offset, nodata, fill):
    """The model as the UDF reads it (a JSON-ready dict, see :mod:`._udf`)."""
    context = {
        "dimension": dimension,
        "output": output,
        "labels": list(labels),
        "scale": list(scale),
        "offset": list(offset),
        "nodata": nodata,
        "fill": fill if output == "class" else None,
    }
    if output == "indices":
        context["indices"] = _encoded(fields["indices"])
    else:
        context["network"] = _encoded(fields["network"])
    if output == "predict":
        context["target_mean"] = _encoded(np.asarray(fields["target"]["mean"]))
        context["target_scale"] = _encoded(np.asarray(fields["target"]["scale"]))
    return context


def udf_nodes(context, dimension):
    """The nodes after the node ``"select"`` that compute the outputs with the UDF."""
    # Imported here: the UDF imports xarray (and so pandas), which loading a model file
    # (sknd._model_file reads this package's MLM artifact type) must not.
    from . import _udf

    run = {
        "process_id": "run_udf",
        "arguments": {
            "data": {"from_parameter": "data"},
            "udf": inspect.getsource(_udf),
            "runtime": "Python",
            "context": {"from_parameter": "context"},
        },
        "result": True,
    }
    nodes = {
        "model": {
            "process_id": "apply_dimension",
            "arguments": {
                "data": {"from_node": "select"},
                "dimension": dimension,
                "process": {"process_graph": {"udf": run}},
                "context": context,
            },
        }
    }
    labels = context["labels"]
    if len(labels) == 1:
        first = {
            "process_id": "array_element",
            "arguments": {"data": {"from_parameter": "data"}, "index": 0},
            "result": True,
        }
        nodes["output"] = {
            "process_id": "reduce_dimension",
            "arguments": {
                "data": {"from_node": "model"},
                "dimension": dimension,
                "reducer": {"process_graph": {"first": first}},
            },
            "result": True,
        }
    else:
        nodes["output"] = {
            "process_id": "rename_labels",
            "arguments": {"data": {"from_node": "model"}, "dimension": dimension, "target": labels},
            "result": True,
        }
    return nodes
