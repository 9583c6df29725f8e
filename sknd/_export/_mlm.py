"""A model file described as a STAC Item of the Machine Learning Model extension (MLM).

:func:`mlm_item` writes what a catalogue, or a tool that runs catalogued models,
needs to know about an sknd model file: its task, its framework and
hyperparameters, the bands it reads in its order (as STAC 1.1 band objects
with their common names and centre wavelengths, on the model asset) and the
value scaling they need (``export_model``'s ``scale`` and ``offset``), its
outputs (a classifier's class codes, as :func:`sknd.raster.class_map` numbers
them, with the class names and colours), and the model file itself as the
asset of role ``mlm:model``, with its size and SHA-256 checksum (the file
extension). :func:`sknd.load_model` reads such an Item back
(:mod:`sknd._model_file._item`).
"""

import datetime
import hashlib
import re

import numpy as np

from .._inference._colors import check_colors

__all__ = []

MLM_SCHEMA = "https://stac-extensions.github.io/mlm/v1.6.0/schema.json"
FILE_SCHEMA = "https://stac-extensions.github.io/file/v2.1.0/schema.json"
EO_SCHEMA = "https://stac-extensions.github.io/eo/v2.0.0/schema.json"
#: A model file's ``mlm:artifact_type`` (what ``load_model`` reads from an Item).
ARTIFACT_TYPE = "sknd.save_model"
MEDIA_TYPE = "application/octet-stream; framework=sknd"
_TASKS = {"NDClassifier": "classification", "NDRegressor": "regression"}


def mlm_item(model, fields, content, *, href, onnx_href, colors, scale, offset):
    """The STAC Item (a dict) of the model file at ``href`` whose bytes are ``content``.

    See :meth:`sknd.SavedModel.export_model` for the parameters.
    """
    if model.estimator not in _TASKS:
        raise ValueError(
            f"An MLM Item describes a classifier or a regressor; an {model.estimator} "
            "computes indices, a task MLM has no name for: export the formulas "
            "(export_formulas) or an openEO process instead."
        )
    for name, value in (("href", href), ("onnx_href", onnx_href)):
        if value is not None and (not isinstance(value, str) or not value):
            raise TypeError(f"{name} must be the URL or path of the file (a str), got {value!r}.")
    if href is None:
        raise TypeError(
            "format='mlm' needs href=, where the model file lies for the Item's readers."
        )
    task = _TASKS[model.estimator]
    stem = re.sub(r"[^\w.-]+", "-", href.rstrip("/").rsplit("/", 1)[-1]).removesuffix(".sknd")
    properties = {
        "datetime": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "description": f"An sknd {model.estimator} of {model.n_features_in_} bands.",
        "mlm:name": stem or "sknd-model",
        "mlm:architecture": _architecture(fields),
        "mlm:tasks": [task],
        "mlm:framework": "sknd",
        "mlm:framework_version": model.sknd_version,
        "mlm:accelerator": None,
        "mlm:accelerator_constrained": False,
        "mlm:pretrained": True,
        "mlm:input": [_input(model, scale, offset)],
        "mlm:output": [_output(model, fields, task, colors)],
        "mlm:hyperparameters": dict(fields["params"]),
        "mlm:total_parameters": _total_parameters(fields),
    }
    assets = _assets(model, content, href, onnx_href)
    return {
        "type": "Feature",
        "stac_version": "1.1.0",
        "stac_extensions": [MLM_SCHEMA, FILE_SCHEMA, EO_SCHEMA],
        "id": properties["mlm:name"],
        "geometry": None,
        "properties": properties,
        "links": [],
        "assets": assets,
    }


def _assets(model, content, href, onnx_href):
    """The model file as the asset of role ``mlm:model``, and the ONNX file's."""
    assets = {
        "model": {
            "href": href,
            "type": MEDIA_TYPE,
            "title": f"sknd model file ({model.estimator})",
            "roles": ["mlm:model", "mlm:weights", "model", "data"],
            "mlm:artifact_type": ARTIFACT_TYPE,
            "file:size": len(content),
            "file:checksum": "1220" + hashlib.sha256(content).hexdigest(),
            "bands": [_band(band) for band in model.bands_],
        }
    }
    if onnx_href is not None:
        assets["onnx"] = {
            "href": onnx_href,
            "type": "application/octet-stream; framework=onnx",
            "title": "The same model in ONNX (sknd.onnx.to_onnx)",
            "roles": ["mlm:model", "model"],
            "mlm:artifact_type": "onnx",
        }
    return assets


def _architecture(fields):
    """``"nd"``, ``"mlp"`` or ``"attnd"`` network, and its layers' kinds and widths."""
    kinds = []
    for layer in fields["network"]:
        if layer["kind"] == "linear":
            kinds.append(f"dense {len(layer['bias'])}")
        elif layer["kind"] in ("nd", "attnd"):
            nd = layer.get("nd", layer)
            kinds.append(f"{layer['kind']} of {len(nd['pairs'])} band pairs")
        elif layer["kind"] == "passthrough":
            kinds.append(f"({_architecture({'network': layer['inner']})}) and the bands")
        else:
            kinds.append(layer["kind"])
    return ", ".join(kinds)


def _total_parameters(fields):
    """The numbers of the layers' weights (band pairs, which are positions, aside)."""

    def count(value):
        if isinstance(value, dict):
            return sum(count(item) for key, item in value.items() if key != "pairs")
        if isinstance(value, list):
            return sum(count(item) for item in value)
        return value.size if isinstance(value, np.ndarray) else 0

    return int(count(fields["network"]))


def _band(band):
    """A STAC 1.1 band object: the name, and the common name and wavelength where known."""
    described = {"name": band.name}
    if band.common_name is not None:
        described["eo:common_name"] = band.common_name
    if band.wavelength is not None:
        described["eo:center_wavelength"] = round(band.wavelength / 1000, 6)  # micrometres
    return described


def _input(model, scale, offset):
    scaling = None
    if any(value != 1.0 for value in scale) or any(offset):
        scaling = [
            {"type": "scale", "value": 1.0 / s}
            if o == 0
            else {"type": "processing", "format": "gdal-calc", "expression": f"A * {s!r} + {o!r}"}
            for s, o in zip(scale, offset)
        ]
    return {
        "name": "pixels",
        "description": "A table of pixels, one value per band in this order (the bands of "
        "the model asset); integer data is read as float64.",
        "bands": [str(name) for name in model.band_names_],
        "input": {
            "shape": [-1, int(model.n_features_in_)],
            "dim_order": ["batch", "bands"],
            "data_type": "float64",
        },
        "value_scaling": scaling,
        "resize_type": None,
        "pre_processing_function": None,
    }


def _output(model, fields, task, colors):
    if task == "regression":
        n_targets = len(fields["target"]["mean"])
        shape, order = (
            ([-1], ["batch"])
            if fields["target"]["ndim"] == 1
            else ([-1, n_targets], ["batch", "target"])
        )
        return {
            "name": "prediction",
            "tasks": [task],
            "result": {"shape": shape, "dim_order": order, "data_type": "float64"},
            "post_processing_function": None,
        }
    labels = [str(label) for label in fields["classes"].tolist()]
    hints = _color_hints(colors, labels)
    classes = []
    for code, label in enumerate(labels):
        described = {"value": code, "name": label, "description": f"class {label!r} of classes_"}
        if hints is not None:
            described["color_hint"] = hints[code]
        classes.append(described)
    return {
        "name": "class",
        "description": "The class code of each pixel, its position in classes_ (as "
        "sknd.raster.class_map and the scene command number them).",
        "tasks": [task],
        "result": {
            "shape": [-1],
            "dim_order": ["batch"],
            "data_type": "uint8" if len(labels) <= 255 else "uint16",
        },
        "classification:classes": classes,
        "post_processing_function": None,
    }


def _color_hints(colors, labels):
    """``RRGGBB`` per class from ``colors`` (:func:`~sknd._inference._colors.check_colors`'s)."""
    if colors is None:
        return None
    if isinstance(colors, dict):  # the Item's class names are the labels as text
        colors = {str(label): color for label, color in colors.items()}
    return [f"{r:02X}{g:02X}{b:02X}" for r, g, b, _ in check_colors(colors, labels)]
