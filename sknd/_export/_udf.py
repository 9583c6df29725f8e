"""An sknd model as an openEO Python UDF: this module's source is the UDF, shipped as is.

sknd's ``export_model("openeo", form="udf")`` writes this code into the
``run_udf`` process of an openEO process graph, with the model as data in the
``context`` of the ``apply_dimension`` around it (the fields of the sknd model
file's layers, docs/model_files.md, arrays as base64 little-endian bytes).
It needs numpy and xarray only, as every openEO Python UDF runtime has them:
no sknd on the back-end. openEO's UDF runners (the ``openeo`` client's
``run_udf_code``, which back-ends and openeo-processes-dask call) find
:func:`apply_datacube` by its name and annotations.

Each pixel's bands (along the ``dimension`` of the context, or the last axis
where the runner hands over the values without dimension names, as
openeo-processes-dask's ``apply_dimension`` does) are read as ``band * scale +
offset`` in float64; the layers run as the numpy evaluator of sknd runs them
(the ND layer ``(wa x_i - wc x_j) / (wa r_i + wc r_j + epsilon)``, dense layers
as matrix products); the outputs replace the bands. Pixels where a band holds
``nodata`` or NaN get NaN, or the ``fill`` code for class codes.
"""

import base64

import numpy
import xarray


def apply_datacube(cube: xarray.DataArray, context: dict) -> xarray.DataArray:
    """The model's outputs on ``cube``: its band dimension holds the outputs instead."""
    dimension = context["dimension"]
    named = dimension in cube.dims
    axis = cube.dims.index(dimension) if named else cube.ndim - 1
    raw = numpy.moveaxis(numpy.asarray(cube.data), axis, -1)
    shape = raw.shape[:-1]
    raw = raw.reshape(-1, raw.shape[-1])
    scale, offset = _array(context["scale"]), _array(context["offset"])
    if raw.shape[1] != len(scale):
        raise ValueError(
            f"The sknd model reads {len(scale)} bands along {dimension!r}; the cube has "
            f"{raw.shape[1]}. Select the model's bands first (filter_bands)."
        )
    with numpy.errstate(all="ignore"):  # no-data pixels are replaced below
        values = raw.astype(numpy.float64) * scale + offset
        if context["output"] == "indices":
            outputs = _nd(context["indices"], values)
        else:
            outputs = _decode(context, _layers(context["network"], values))
    if context["nodata"] is not None:
        invalid = numpy.isnan(raw).any(axis=1) | (raw == context["nodata"]).any(axis=1)
        outputs[invalid] = numpy.nan if context["fill"] is None else context["fill"]
    outputs = numpy.moveaxis(outputs.reshape(*shape, outputs.shape[1]), -1, axis)
    if not named:
        return xarray.DataArray(outputs, dims=cube.dims)
    coords = {name: coord for name, coord in cube.coords.items() if dimension not in coord.dims}
    return xarray.DataArray(
        outputs, dims=cube.dims, coords={**coords, dimension: context["labels"]}
    )


def _array(value):
    """A number list, or an array as ``{"dtype", "shape", "base64"}``, as a float64/int array."""
    if not isinstance(value, dict):
        return numpy.asarray(value, dtype=numpy.float64)
    data = numpy.frombuffer(base64.b64decode(value["base64"]), dtype=value["dtype"])
    kind = numpy.int64 if data.dtype.kind in "iu" else numpy.float64
    return data.astype(kind).reshape(value["shape"])


def _softplus(x):
    """``log(1 + exp(x))``, ``x`` itself above 20 (torch's threshold, as sknd's softplus)."""
    return numpy.where(x > 20.0, x, numpy.logaddexp(0.0, x))


def _nd(layer, x):
    pairs = _array(layer["pairs"])
    wa, wc = _softplus(_array(layer["a"])), _softplus(_array(layer["c"]))
    epsilon = layer["epsilon"]
    if layer["variant"] == "softplus":
        x = _softplus(x)
    r = numpy.hypot(x, numpy.sqrt(epsilon)) if layer["variant"] == "signed" else x
    i, j = pairs[:, 0], pairs[:, 1]
    return (wa * x[:, i] - wc * x[:, j]) / (wa * r[:, i] + wc * r[:, j] + epsilon)


def _layers(layers, values):
    inputs = values
    for layer in layers:
        kind = layer["kind"]
        if kind == "nd":
            values = _nd(layer, values)
        elif kind == "attnd":
            gate = inputs @ _array(layer["weight"]).T + _array(layer["bias"])
            values = _nd(layer["nd"], values) * (0.5 + 0.5 * numpy.tanh(0.5 * gate))
        elif kind == "passthrough":
            standardized = (values - _array(layer["mean"])) / _array(layer["scale"])
            values = numpy.concatenate([_layers(layer["inner"], values), standardized], axis=1)
        elif kind == "standardize":
            values = (values - _array(layer["mean"])) / _array(layer["scale"])
        elif kind == "linear":
            values = values @ _array(layer["weight"]).T + _array(layer["bias"])
        elif kind == "relu":
            values = numpy.maximum(values, 0.0)
        else:
            raise ValueError(f"This UDF cannot compute an sknd layer of kind {kind!r}.")
    return values


def _decode(context, logits):
    output = context["output"]
    if output == "predict":
        return logits * _array(context["target_scale"]) + _array(context["target_mean"])
    if output == "class":  # the first largest logit; one logit: 1 where it is positive
        codes = (logits[:, 0] > 0) if logits.shape[1] == 1 else logits.argmax(axis=1)
        return codes.astype(numpy.float64)[:, None]
    if logits.shape[1] == 1:
        positive = 0.5 + 0.5 * numpy.tanh(0.5 * logits[:, 0])
        return numpy.column_stack([1.0 - positive, positive])
    exp = numpy.exp(logits - logits.max(axis=1, keepdims=True))
    return exp / exp.sum(axis=1, keepdims=True)
