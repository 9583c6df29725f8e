"""The model file format (version 1), in one place: what the writer writes and the reader checks.

``docs/model_files.md`` describes these fields for users; ``tests/export/test_model_file.py``
checks that it names every one of them. A model file is a zip archive (stored or
deflate-compressed members, no encryption) holding ``model.json`` (UTF-8 JSON, no
``NaN`` or ``Infinity``) and one ``arrays/NAME.npy`` per array the metadata names as
``{"array": "NAME"}``, each used once.
"""

import numpy as np

__all__ = []

#: The format this sknd writes and reads; bumped on any change an older reader would misread.
FORMAT_VERSION = 1
FORMAT = "sknd-model"
METADATA = "model.json"
ARRAYS = "arrays/"

# Bounds against hostile files (zip bombs, huge headers): a model of 250 bands with all
# 31,125 pairs and a wide MLP stays far below them. Sizes are those the archive's
# directory announces, checked before anything is decompressed; reads never go beyond.
MAX_METADATA_BYTES = 64 * 2**20
MAX_ARRAY_BYTES = 1024 * 2**20
MAX_TOTAL_BYTES = 1024 * 2**20
#: A model file's own size: its members' data plus the zip's bookkeeping.
MAX_FILE_BYTES = MAX_TOTAL_BYTES + MAX_METADATA_BYTES
MAX_MEMBERS = 10_000
MAX_DEPTH = 8

#: The methods a loaded model of each estimator offers.
ESTIMATOR_METHODS = {
    "NDClassifier": ("predict", "predict_proba"),
    "NDRegressor": ("predict",),
    "NDTransformer": ("transform", "get_feature_names_out"),
}

#: Fields of ``model.json`` in every file.
COMMON_FIELDS = (
    "format",
    "format_version",
    "sknd_version",
    "estimator",
    "params",
    "n_features_in",
    "feature_names_in",
    "bands",
    "band_names_given",
    "epsilon",
    "variant",
    "band_range",
)
#: Fields of ``model.json`` each estimator's file adds.
ESTIMATOR_FIELDS = {
    "NDClassifier": ("network", "classes", "classes_as_objects"),
    "NDRegressor": ("network", "target"),
    "NDTransformer": ("indices",),
}
#: Fields of each band (as :class:`sknd.bands.Band`).
BAND_FIELDS = ("name", "common_name", "wavelength", "sensor", "group")
#: Fields of a regressor's ``target``.
TARGET_FIELDS = ("mean", "scale", "ndim")
#: Fields of each kind of layer.
LAYER_FIELDS = {
    "nd": ("pairs", "a", "c", "epsilon", "variant"),
    "attnd": ("nd", "weight", "bias"),
    "passthrough": ("inner", "mean", "scale"),
    "standardize": ("mean", "scale"),
    "linear": ("weight", "bias"),
    "relu": (),
}

#: dtype kinds an array may have: numbers and text, never objects (pickles).
ARRAY_KINDS = "biufUS"
#: Weights are the estimator's float32 parameters stored exactly as float64: a value no
#: float32 holds (beyond its range, or between two of its values) comes from no writer.
WEIGHT_DTYPE = np.dtype(np.float64)
PARAMETER_DTYPE = np.dtype(np.float32)


class Malformed(Exception):
    """What is wrong with a model file (reported as ``ValueError`` with the file's name)."""


def is_parameter(array):
    """Whether every value of the float64 ``array`` is a finite float32 value, exactly."""
    with np.errstate(over="ignore", invalid="ignore"):
        narrowed = array.astype(PARAMETER_DTYPE)
    return bool(np.isfinite(narrowed).all() and (narrowed == array).all())


def as_number(value):
    """``value`` as a finite float, or None when JSON holds no such number there."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)  # a huge JSON integer overflows
    except OverflowError:
        return None
    return number if np.isfinite(number) else None
