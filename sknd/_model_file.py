"""sknd model files: a fitted estimator's network as JSON and numpy arrays, loaded without code.

A pickle runs code when it is loaded, and rebuilding a pickled estimator imports
torch, skorch and scikit-learn. A model file holds only what prediction needs:
a zip archive with ``model.json`` (format version, sknd version, estimator,
parameters, bands, classes and the network's layers) and one ``.npy`` array per
weight, read with ``allow_pickle=False``. :func:`load_model` checks every field
and every array's dtype and shape before it builds anything, and returns a
:class:`SavedModel`, whose methods run the numpy / numba evaluator of
:mod:`sknd._evaluator` built from the same float64 weights as the estimator's
own methods on the CPU: its outputs equal theirs bit for bit (and those of
:mod:`sknd.raster` with the estimator). The format is described in
docs/model_files.md.
"""

import functools
import io
import json
import math
import os
import tempfile
import zipfile
import zlib

import numpy as np

from ._decoding import class_labels, class_probabilities, regression_targets
from ._formula import VARIANTS
from ._validation import check_band_values
from ._version import __version__

__all__ = ["SavedModel", "load_model"]

#: The format this sknd writes and reads (docs/model_files.md); bumped on any change that
#: an older reader would misread.
FORMAT_VERSION = 1
_FORMAT = "sknd-model"
_METADATA = "model.json"
_ARRAYS = "arrays/"
# Bounds against hostile files (zip bombs, huge headers): a model of 250 bands with all
# 31,125 pairs and a wide MLP stays far below them.
_MAX_METADATA_BYTES = 64 * 2**20
_MAX_ARRAY_BYTES = 1024 * 2**20
_MAX_MEMBERS = 10_000
_MAX_DEPTH = 8

_ESTIMATORS = {
    "NDClassifier": ("predict", "predict_proba"),
    "NDRegressor": ("predict",),
    "NDTransformer": ("transform", "get_feature_names_out"),
}
_BAND_FIELDS = ("name", "common_name", "wavelength", "sensor", "group")


# ---------------------------------------------------------------------- writing
def save_model(estimator, path):
    """Write the fitted sknd ``estimator`` to ``path`` (see ``BaseND.save_model``)."""
    content = estimator._model_content()
    arrays = {}
    metadata = {
        "format": _FORMAT,
        "format_version": FORMAT_VERSION,
        "sknd_version": __version__,
        "estimator": type(estimator).__name__,
        "params": _plain_params(estimator.get_params(deep=False)),
        "n_features_in": int(estimator.n_features_in_),
        "feature_names_in": _names(getattr(estimator, "feature_names_in_", None)),
        "bands": [
            {field: getattr(band, field) for field in _BAND_FIELDS} for band in estimator.bands_
        ],
        "band_names_given": estimator._fitted_band_names() is not None,
        "epsilon": float(estimator.epsilon_),
        "variant": str(estimator.variant_),
    }
    # Each band's range at fit, for networks that see raw band values (the scenes far
    # outside it warn, as with the estimator); None for the others.
    content["band_range"] = estimator._band_range_to_check()
    if "classes" in content:
        classes = np.asarray(content["classes"])
        metadata["classes_as_objects"] = classes.dtype == object
        if classes.dtype == object:
            if not all(isinstance(label, str) for label in classes):
                raise ValueError(
                    "A model file holds class labels of one numpy type (numbers or strings); "
                    f"these are Python objects of other types ({classes[:3].tolist()} ...). "
                    "Fit on labels converted with np.asarray(y, dtype=str) or to numbers."
                )
            classes = classes.astype(str)
        content["classes"] = classes
    metadata.update(_with_references(content, "", arrays))
    payload = json.dumps(metadata, indent=1, allow_nan=False).encode("utf-8")
    _write_atomically(path, payload, arrays)


def _plain_params(params):
    """The parameters JSON holds as they are; others (e.g. a RandomState) become None."""
    plain = {}
    for name, value in params.items():
        if isinstance(value, np.ndarray):
            value = value.tolist()
        elif isinstance(value, np.generic):
            value = value.item()
        elif isinstance(value, tuple):
            value = list(value)
        if isinstance(value, list) and not all(_is_scalar(item) for item in value):
            value = None
        elif not (isinstance(value, list) or _is_scalar(value)):
            value = None
        if isinstance(value, float) and not math.isfinite(value):
            value = None
        plain[name] = value
    return plain


def _is_scalar(value):
    return value is None or isinstance(value, (bool, int, float, str))


def _names(names):
    return None if names is None else [str(name) for name in names]


def _with_references(value, key, arrays):
    """``value`` with every numpy array replaced by ``{"array": name}``, stored in ``arrays``."""
    if isinstance(value, np.ndarray):
        arrays[key] = value
        return {"array": key}
    if isinstance(value, dict):
        return {
            name: _with_references(item, f"{key}.{name}" if key else name, arrays)
            for name, item in value.items()
        }
    if isinstance(value, list):
        return [_with_references(item, f"{key}.{i}", arrays) for i, item in enumerate(value)]
    return value


def _write_atomically(path, payload, arrays):
    """The archive written to a temporary file beside ``path``, then renamed: all or nothing."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".sknd-model-", suffix=".tmp")
    try:
        with (
            os.fdopen(handle, "wb") as file,
            zipfile.ZipFile(file, "w", compression=zipfile.ZIP_DEFLATED) as archive,
        ):
            archive.writestr(_METADATA, payload)
            for name, array in arrays.items():
                buffer = io.BytesIO()
                np.lib.format.write_array(buffer, np.ascontiguousarray(array), allow_pickle=False)
                archive.writestr(f"{_ARRAYS}{name}.npy", buffer.getvalue())
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


# ---------------------------------------------------------------------- reading
def load_model(path):
    """Load a model file written by an sknd estimator's ``save_model``.

    Loading runs no code from the file: it reads JSON and numpy arrays
    (``allow_pickle=False``), checks every field and every array's dtype and
    shape, and imports neither torch nor scikit-learn.

    Parameters
    ----------
    path : str or path-like
        The model file.

    Returns
    -------
    model : SavedModel
        The fitted model, for prediction only.

    Raises
    ------
    ValueError
        If the file is not an sknd model file, is truncated or malformed, or
        was written in a newer format version; the message says which.

    See Also
    --------
    SavedModel : What a loaded model offers.

    Examples
    --------
    >>> import numpy as np, os, tempfile
    >>> import sknd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0.05, 0.6, size=(200, 4))
    >>> clf = sknd.NDClassifier(max_epochs=5, random_state=0).fit(X, X[:, 0] > X[:, 1])
    >>> path = os.path.join(tempfile.mkdtemp(), "model.sknd")
    >>> clf.save_model(path)
    >>> model = sknd.load_model(path)
    >>> model
    SavedModel(NDClassifier, 4 bands, classes [False, True])
    >>> bool((model.predict(X) == clf.predict(X)).all())
    True
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as file:
            content = file.read()
    except OSError as exc:
        raise ValueError(f"cannot read the model file {path!r}: {exc}") from None
    return _load(content, path)


def _from_bytes(content):
    """A :class:`SavedModel` from the bytes of a model file (how one is unpickled)."""
    return _load(content, "<bytes>")


def _load(content, path):
    try:
        archive = zipfile.ZipFile(io.BytesIO(content))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ValueError(
            f"{path!r} is not an sknd model file (not a zip archive: {exc}); model files are "
            "written by an sknd estimator's save_model(). A truncated download looks like this."
        ) from None
    try:
        with archive:
            metadata, arrays = _read_archive(archive)
            return SavedModel(_Reader(metadata, arrays).model(), content)
    except _Malformed as exc:
        raise ValueError(f"{path!r} is not a valid sknd model file: {exc}") from None
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        zlib.error,
        OSError,
        EOFError,
        ValueError,
        NotImplementedError,  # what zipfile raises for some damaged headers
        RuntimeError,
    ) as exc:
        raise ValueError(f"{path!r} is a damaged or truncated sknd model file: {exc}") from None


class _Malformed(Exception):
    """What is wrong with a model file (reported as ``ValueError`` with the file's name)."""


def _read_archive(archive):
    members = archive.infolist()
    if len(members) > _MAX_MEMBERS:
        raise _Malformed(f"it holds {len(members)} files, more than any model has")
    names = [member.filename for member in members]
    if _METADATA not in names:
        raise _Malformed(f"it has no {_METADATA}")
    arrays = {}
    for member in members:
        name = member.filename
        if member.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise _Malformed(f"{name!r} is compressed with method {member.compress_type}")
        if member.flag_bits & 0x1:
            raise _Malformed(f"{name!r} is encrypted")
        if name == _METADATA:
            if member.file_size > _MAX_METADATA_BYTES:
                raise _Malformed(f"{_METADATA} is {member.file_size} bytes, too large")
            try:
                metadata = json.loads(
                    archive.read(member).decode("utf-8"), parse_constant=_no_constant
                )
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
                raise _Malformed(f"{_METADATA} is not valid JSON ({exc})") from None
        elif name.startswith(_ARRAYS) and name.endswith(".npy"):
            arrays[name[len(_ARRAYS) : -len(".npy")]] = (archive, member)
        else:
            raise _Malformed(f"it holds an unexpected file {name!r}")
    if names.count(_METADATA) > 1 or len(arrays) + 1 != len(names):
        raise _Malformed("it holds a file twice")
    return metadata, arrays


def _no_constant(name):
    raise _Malformed(f"{_METADATA} holds {name}, which JSON does not allow")


def _read_array(archive, member, name):
    """One ``.npy`` member, its header checked before any data is read."""
    if member.file_size > _MAX_ARRAY_BYTES:
        raise _Malformed(f"array {name!r} is {member.file_size} bytes, too large for a model")
    with archive.open(member) as file:
        try:
            version = np.lib.format.read_magic(file)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(file)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(file)
            else:
                raise ValueError(f"unsupported .npy version {version}")
        except ValueError as exc:
            raise _Malformed(f"array {name!r} is not a numpy .npy array ({exc})") from None
        if dtype.hasobject or dtype.kind not in "biufUS" or dtype.fields is not None:
            raise _Malformed(f"array {name!r} has dtype {dtype}, not numbers or text")
        if any(length < 0 for length in shape):
            raise _Malformed(f"array {name!r} has a negative length in its shape {shape}")
        expected = math.prod(shape) * dtype.itemsize
        data = file.read(_MAX_ARRAY_BYTES + 1)
    if len(data) != expected:
        raise _Malformed(
            f"array {name!r} holds {len(data)} bytes where its header announces {expected}"
        )
    array = np.frombuffer(data, dtype=dtype)
    array = array.reshape(shape[::-1]).T if fortran else array.reshape(shape)
    return np.array(array, dtype=dtype.newbyteorder("="))


class _Reader:
    """Checks the metadata of a model file field by field and reads the arrays it names."""

    def __init__(self, metadata, arrays):
        self.metadata = metadata
        self.arrays = arrays
        self.used = set()

    def model(self):
        meta = self.metadata
        if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
            raise _Malformed(f'{_METADATA} does not say "format": "{_FORMAT}"')
        version = meta.get("format_version")
        if version != FORMAT_VERSION:
            raise _Malformed(
                f"it is in format version {version!r}, and this sknd ({__version__}) reads "
                f"version {FORMAT_VERSION}: load it with the sknd version that wrote it "
                f"({meta.get('sknd_version')!r}) or a newer one"
            )
        estimator = self.choice(meta, "estimator", tuple(_ESTIMATORS))
        n_features = self.integer(meta, "n_features_in", low=1)
        fields = {
            "estimator": estimator,
            "sknd_version": self.text(meta, "sknd_version"),
            "params": self.params(meta),
            "n_features_in": n_features,
            "feature_names_in": self.names(meta, "feature_names_in", n_features, optional=True),
            "bands": self.bands(meta, n_features),
            "band_names_given": self.boolean(meta, "band_names_given"),
            "epsilon": self.number(meta, "epsilon", positive=True),
            "variant": self.choice(meta, "variant", VARIANTS),
            "band_range": None,
        }
        if self.field(meta, "band_range") is not None:
            band_range = self.array(meta, "band_range", _METADATA, "f", (n_features, 2))
            if not (band_range[:, 0] <= band_range[:, 1]).all():
                raise _Malformed(f"{_METADATA}.band_range has a minimum above its maximum")
            fields["band_range"] = band_range
        keys = set(_COMMON_KEYS)
        if estimator == "NDTransformer":
            keys.add("indices")
            fields["indices"] = self.nd_layer(meta, "indices", n_features)
        else:
            keys.add("network")
            layers = meta.get("network")
            if not isinstance(layers, list) or not layers:
                raise _Malformed('"network" is not a list of layers')
            layers, width = self.layers(layers, n_features, "network", 0)
            fields["network"] = layers
            if estimator == "NDClassifier":
                keys.update({"classes", "classes_as_objects"})
                fields["classes"] = self.classes(meta, width)
            else:
                keys.add("target")
                fields["target"] = self.target(meta, width)
        self.exact_keys(meta, keys, _METADATA)
        unused = set(self.arrays) - self.used
        if unused:
            raise _Malformed(f"it holds arrays no field uses: {sorted(unused)[:5]}")
        return fields

    # -- fields
    def exact_keys(self, mapping, keys, where):
        missing = sorted(set(keys) - set(mapping))
        extra = sorted(set(mapping) - set(keys))
        if missing:
            raise _Malformed(f"{where} lacks {missing}")
        if extra:
            raise _Malformed(f"{where} has unknown fields {extra}")

    def field(self, mapping, key):
        if key not in mapping:
            raise _Malformed(f"field {key!r} is missing")
        return mapping[key]

    def choice(self, mapping, key, options):
        value = self.field(mapping, key)
        if not isinstance(value, str) or value not in options:
            raise _Malformed(f"{key!r} is {value!r}, not one of {list(options)}")
        return value

    def text(self, mapping, key):
        value = self.field(mapping, key)
        if not isinstance(value, str):
            raise _Malformed(f"{key!r} is {value!r}, not a string")
        return value

    def boolean(self, mapping, key):
        value = self.field(mapping, key)
        if not isinstance(value, bool):
            raise _Malformed(f"{key!r} is {value!r}, not true or false")
        return value

    def integer(self, mapping, key, low):
        value = self.field(mapping, key)
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise _Malformed(f"{key!r} is {value!r}, not an integer of at least {low}")
        return value

    def number(self, mapping, key, positive=False):
        value = self.field(mapping, key)
        if (
            not isinstance(value, (int, float))
            or isinstance(value, bool)
            or not math.isfinite(value)
            or (positive and value <= 0)
        ):
            kind = "a positive number" if positive else "a finite number"
            raise _Malformed(f"{key!r} is {value!r}, not {kind}")
        return float(value)

    def names(self, mapping, key, count, optional=False):
        value = self.field(mapping, key)
        if value is None and optional:
            return None
        if (
            not isinstance(value, list)
            or len(value) != count
            or not all(isinstance(name, str) for name in value)
        ):
            raise _Malformed(f"{key!r} is not a list of {count} names")
        return value

    def params(self, meta):
        value = self.field(meta, "params")
        if not isinstance(value, dict) or not all(
            _is_scalar(item) or (isinstance(item, list) and all(_is_scalar(x) for x in item))
            for item in value.values()
        ):
            raise _Malformed('"params" is not a mapping of names to plain values')
        return value

    def bands(self, meta, n_features):
        value = self.field(meta, "bands")
        if not isinstance(value, list) or len(value) != n_features:
            raise _Malformed(f'"bands" is not a list of {n_features} bands')
        for band in value:
            if not isinstance(band, dict):
                raise _Malformed(f'"bands" holds {band!r}, not a band')
            self.exact_keys(band, _BAND_FIELDS, 'a band of "bands"')
            wavelength = band["wavelength"]
            if not isinstance(band["name"], str) or not all(
                band[key] is None or isinstance(band[key], str)
                for key in ("common_name", "sensor", "group")
            ):
                raise _Malformed(f'"bands" holds {band!r}, whose names are not strings')
            if wavelength is not None and (
                not isinstance(wavelength, (int, float))
                or isinstance(wavelength, bool)
                or not math.isfinite(wavelength)
            ):
                raise _Malformed(f'"bands" holds {band!r}, whose wavelength is not a number')
        return value

    def array(self, mapping, key, where, kinds, shape):
        """The array of ``mapping[key]``; ``shape`` items of None take any length."""
        reference = self.field(mapping, key)
        if not (
            isinstance(reference, dict)
            and set(reference) == {"array"}
            and isinstance(reference["array"], str)
        ):
            raise _Malformed(f"{where}.{key} is {reference!r}, not a reference to an array")
        name = reference["array"]
        if name not in self.arrays:
            raise _Malformed(f"{where}.{key} names array {name!r}, which the file lacks")
        if name in self.used:
            raise _Malformed(f"array {name!r} is used twice")
        self.used.add(name)
        array = _read_array(*self.arrays[name], name)
        if (
            array.dtype.kind not in kinds
            or len(array.shape) != len(shape)
            or any(want is not None and got != want for got, want in zip(array.shape, shape))
        ):
            shown = tuple("any" if want is None else want for want in shape)
            raise _Malformed(
                f"{where}.{key} is an array of {array.dtype} with shape {array.shape}, expected "
                f"kind {kinds!r} and shape {shown}"
            )
        if array.dtype.kind == "f":
            if array.dtype != np.float64:
                raise _Malformed(f"{where}.{key} is {array.dtype}, not float64")
            if not np.isfinite(array).all():
                raise _Malformed(f"{where}.{key} holds NaN or infinite values")
        return array

    def weights(self, mapping, where, n_in):
        weight = self.array(mapping, "weight", where, "f", (None, n_in))
        bias = self.array(mapping, "bias", where, "f", (len(weight),))
        if len(weight) < 1:
            raise _Malformed(f"{where}.weight has no rows")
        return {"weight": weight, "bias": bias}

    def statistics(self, mapping, where, n):
        mean = self.array(mapping, "mean", where, "f", (n,))
        scale = self.array(mapping, "scale", where, "f", (n,))
        if not (scale != 0).all():
            raise _Malformed(f"{where}.scale holds zeros")
        return {"mean": mean, "scale": scale}

    def nd_layer(self, mapping, key, n_features):
        layer = self.field(mapping, key)
        where = key
        if not isinstance(layer, dict):
            raise _Malformed(f"{where} is not an ND layer")
        self.exact_keys(layer, ("kind", "pairs", "a", "c", "epsilon", "variant"), where)
        if layer["kind"] != "nd":
            raise _Malformed(f"{where}.kind is {layer['kind']!r}, not 'nd'")
        pairs = self.array(layer, "pairs", where, "iu", (None, 2)).astype(np.int64)
        if len(pairs) < 1 or pairs.min() < 0 or pairs.max() >= n_features:
            raise _Malformed(f"{where}.pairs has no pairs or bands outside 0..{n_features - 1}")
        return {
            "kind": "nd",
            "pairs": pairs,
            "a": self.array(layer, "a", where, "f", (len(pairs),)),
            "c": self.array(layer, "c", where, "f", (len(pairs),)),
            "epsilon": self.number(layer, "epsilon", positive=True),
            "variant": self.choice(layer, "variant", VARIANTS),
        }

    def layers(self, layers, width, where, depth):
        """Checked layers and the width of their output, starting from ``width`` inputs."""
        if depth > _MAX_DEPTH:
            raise _Malformed(f"{where} nests layers too deeply")
        n_features = self.metadata["n_features_in"]
        checked = []
        for position, layer in enumerate(layers):
            at = f"{where}[{position}]"
            kind = layer.get("kind") if isinstance(layer, dict) else None
            if kind == "nd":
                if width != n_features:
                    raise _Malformed(f"{at} is an ND layer after other layers")
                layer = self.nd_layer({"layer": layer}, "layer", n_features)
                width = len(layer["pairs"])
            elif kind == "attnd":
                if width != n_features:
                    raise _Malformed(f"{at} is an AttND layer after other layers")
                self.exact_keys(layer, ("kind", "nd", "weight", "bias"), at)
                nd = self.nd_layer(layer, "nd", n_features)
                width = len(nd["pairs"])
                gate = self.weights(layer, at, n_features)
                if len(gate["weight"]) != width:
                    raise _Malformed(f"{at}.weight has {len(gate['weight'])} rows, not {width}")
                layer = {"kind": "attnd", "nd": nd, **gate}
            elif kind == "passthrough":
                if width != n_features:
                    raise _Malformed(f"{at} is a passthrough block after other layers")
                self.exact_keys(layer, ("kind", "inner", "mean", "scale"), at)
                if not isinstance(layer["inner"], list) or not layer["inner"]:
                    raise _Malformed(f"{at}.inner is not a list of layers")
                inner, inner_width = self.layers(layer["inner"], width, f"{at}.inner", depth + 1)
                statistics = self.statistics(layer, at, n_features)
                layer = {"kind": "passthrough", "inner": inner, **statistics}
                width = inner_width + n_features
            elif kind == "standardize":
                self.exact_keys(layer, ("kind", "mean", "scale"), at)
                layer = {"kind": "standardize", **self.statistics(layer, at, width)}
            elif kind == "linear":
                self.exact_keys(layer, ("kind", "weight", "bias"), at)
                layer = {"kind": "linear", **self.weights(layer, at, width)}
                width = len(layer["weight"])
            elif kind == "relu":
                self.exact_keys(layer, ("kind",), at)
                layer = {"kind": "relu"}
            else:
                raise _Malformed(f"{at} is not a layer of a known kind ({kind!r})")
            checked.append(layer)
        return checked, width

    def classes(self, meta, width):
        classes = self.array(meta, "classes", "classes", "biufUS", (None,))
        n_outputs = 1 if len(classes) == 2 else len(classes)
        if len(classes) < 2 or n_outputs != width:
            raise _Malformed(
                f"the network has {width} outputs, which do not fit {len(classes)} classes"
            )
        if len(np.unique(classes)) != len(classes) or not (classes[:-1] < classes[1:]).all():
            raise _Malformed("classes are not sorted and unique")
        if self.boolean(meta, "classes_as_objects"):
            if classes.dtype.kind != "U":
                raise _Malformed("classes_as_objects is true for classes that are not text")
            classes = classes.astype(object)
        return classes

    def target(self, meta, width):
        target = self.field(meta, "target")
        if not isinstance(target, dict):
            raise _Malformed('"target" is not a mapping')
        self.exact_keys(target, ("mean", "scale", "ndim"), '"target"')
        ndim = target["ndim"]
        if ndim not in (1, 2) or isinstance(ndim, bool) or (ndim == 1 and width != 1):
            raise _Malformed(f"target.ndim is {ndim!r}, which does not fit {width} outputs")
        return {
            "mean": self.array(target, "mean", "target", "f", (width,)),
            "scale": self.array(target, "scale", "target", "f", (width,)),
            "ndim": ndim,
        }


_COMMON_KEYS = (
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


# ---------------------------------------------------------------------- the model
class _Method:
    """A method of :class:`SavedModel` that only models of some estimators have.

    Like scikit-learn's ``available_if``: ``hasattr(model, "predict_proba")``
    is False for a regressor's model, so that :mod:`sknd.raster` and other
    callers see what the model offers.
    """

    def __init__(self, function):
        self.function = function
        functools.update_wrapper(self, function)

    def __get__(self, model, owner=None):
        if model is None:
            return self.function
        if self.function.__name__ not in _ESTIMATORS[model.estimator]:
            raise AttributeError(
                f"This model of an {model.estimator} has no {self.function.__name__!r} method."
            )
        return functools.partial(self.function, model)


class SavedModel:
    """A fitted sknd estimator loaded from a model file: prediction only.

    Returned by :func:`sknd.load_model`. It offers the methods of the
    estimator it was saved from (``predict`` and ``predict_proba`` of an
    :class:`~sknd.NDClassifier`, ``predict`` of an :class:`~sknd.NDRegressor`,
    ``transform`` of an :class:`~sknd.NDTransformer`), which give, bit for
    bit, the values of the estimator's methods on the CPU, and works
    with :mod:`sknd.raster` and ``python -m sknd.raster``. It holds no
    training state (no optimizer, history or torch network): it cannot be
    refitted or passed to ``partial_fit``. Pickling it pickles the model
    file's bytes, checked again when unpickled.

    Parameters
    ----------
    fields : dict
        The checked contents of a model file, as :func:`sknd.load_model`
        reads them; build models with :func:`sknd.load_model`, not directly.
    content : bytes
        The model file itself (what a pickle of the model holds).

    Attributes
    ----------
    estimator : str
        Class name of the estimator that was saved, e.g. ``"NDClassifier"``.
    params : dict
        Its parameters (``get_params()``); values JSON cannot hold (e.g. a
        ``RandomState``) are None.
    sknd_version : str
        Version of sknd that wrote the file.
    n_features_in_ : int
        Number of bands the model takes.
    feature_names_in_ : ndarray of str objects
        Column names seen at fit; only defined when the estimator had them.
    band_names_ : ndarray of str objects
        Names of the bands, as the estimator's ``band_names_``.
    bands_ : tuple of sknd.bands.Band
        The bands as resolved at fit (names, common names, sensor).
    sensor : str or None
        The estimator's ``sensor`` parameter.
    epsilon_, variant_ : float, str
        The ND layer's settings as fitted.
    classes_ : ndarray
        Class labels; only for a classifier's model.

    Examples
    --------
    >>> import numpy as np, os, tempfile
    >>> import sknd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0.05, 0.6, size=(200, 3))
    >>> reg = sknd.NDRegressor(max_epochs=5, random_state=0, bands=["red", "nir", "swir16"])
    >>> reg = reg.fit(X, X[:, 1] - X[:, 0])
    >>> path = os.path.join(tempfile.mkdtemp(), "model.sknd")
    >>> reg.save_model(path)
    >>> model = sknd.load_model(path)
    >>> model.band_names_.tolist(), hasattr(model, "predict_proba")
    (['red', 'nir', 'swir16'], False)
    >>> bool((model.predict(X) == reg.predict(X)).all())
    True
    """

    def __init__(self, fields, content):
        from .bands import Band

        self._content = content
        self._fields = fields
        self.estimator = fields["estimator"]
        self.params = fields["params"]
        self.sknd_version = fields["sknd_version"]
        self.n_features_in_ = fields["n_features_in"]
        if fields["feature_names_in"] is not None:
            self.feature_names_in_ = np.asarray(fields["feature_names_in"], dtype=object)
        self.bands_ = tuple(Band(**band) for band in fields["bands"])
        self.band_names_ = np.asarray([band.name for band in self.bands_], dtype=object)
        self._band_names_given = fields["band_names_given"]
        sensor = self.params.get("sensor")
        self.sensor = sensor if isinstance(sensor, str) else None
        self.epsilon_ = fields["epsilon"]
        self.variant_ = fields["variant"]
        if "classes" in fields:
            self.classes_ = fields["classes"]
        self._evaluators = {}

    def __reduce__(self):
        return _from_bytes, (self._content,)

    def __repr__(self):
        what = f"{self.n_features_in_} bands"
        if hasattr(self, "classes_"):
            shown = self.classes_[:5].tolist()
            what += f", classes {shown}" if len(self.classes_) <= 5 else f", classes {shown} ..."
        return f"SavedModel({self.estimator}, {what})"

    def _fitted_band_names(self):
        """As the estimator's (internal hook of :mod:`sknd.raster`)."""
        return self.band_names_ if self._band_names_given else None

    def _fast_evaluator(self, method):
        """The evaluator of ``method`` (internal hook of :mod:`sknd._pixels`), built once."""
        evaluator = self._evaluators.get(method)
        if evaluator is None:
            from ._evaluator import FastNetwork

            fields = self._fields
            checks = dict(
                non_negative=self.variant_ == "reflectance",
                estimator_name=self.estimator,
                feature_names=getattr(self, "feature_names_in_", None),
                band_range=fields["band_range"],
            )
            n_features = self.n_features_in_
            if method == "transform":
                nd = fields["indices"]
                evaluator = FastNetwork.for_indices(
                    nd["pairs"],
                    nd["a"],
                    nd["c"],
                    n_features,
                    nd["epsilon"],
                    nd["variant"],
                    **checks,
                )
            else:
                if method == "predict_proba":
                    finish = class_probabilities
                elif "classes" in fields:
                    finish = functools.partial(class_labels, classes=fields["classes"])
                else:
                    target = fields["target"]
                    finish = functools.partial(
                        regression_targets,
                        mean=target["mean"],
                        scale=target["scale"],
                        ndim=target["ndim"],
                    )
                evaluator = FastNetwork.for_layers(fields["network"], n_features, finish, **checks)
            self._evaluators[method] = evaluator
        return evaluator

    def _evaluate(self, method, X):
        X = self._check_X(X)
        return self._fast_evaluator(method)(X, checked=True)

    def _check_X(self, X):
        """``X`` as an array of band values, refused as the estimator refuses it."""
        if hasattr(X, "toarray"):
            raise TypeError(
                f"This {self.estimator} model takes dense band values; convert the sparse "
                "matrix with X.toarray()."
            )
        columns = getattr(X, "columns", None)
        names = getattr(self, "feature_names_in_", None)
        if columns is not None and names is not None:
            if [str(column) for column in columns] != list(names):
                raise ValueError(
                    f"The columns of X {[str(c) for c in columns]} are not the bands the "
                    f"{self.estimator} was fitted on, in order: {list(names)}."
                )
        source_dtype = getattr(X, "dtype", None)
        X = np.asarray(X)
        if X.dtype.kind not in "biuf":
            raise ValueError(f"X must hold band values (numbers), got an array of {X.dtype}.")
        if X.ndim != 2:
            raise ValueError(
                f"Expected a 2D array of shape (n_samples, {self.n_features_in_}), got shape "
                f"{X.shape}. Reshape a single sample with X.reshape(1, -1); apply the model "
                "to an image with sknd.raster."
            )
        if len(X) == 0:
            raise ValueError(f"Found array with 0 sample(s) (shape={X.shape}).")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {self.estimator} is expecting "
                f"{self.n_features_in_} features as input."
            )
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        check_band_values(
            X,
            name="X",
            estimator_name=self.estimator,
            feature_names=names,
            non_negative=self.variant_ == "reflectance",
            source_dtype=source_dtype,
            band_range=self._fields["band_range"],
        )
        return X

    @_Method
    def predict(self, X):
        """Predict class labels or regression targets, as the estimator's ``predict``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Band values.

        Returns
        -------
        y : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            Predicted labels (items of ``classes_``) or values.
        """
        return self._evaluate("predict", X)

    @_Method
    def predict_proba(self, X):
        """Class probabilities, as the classifier's ``predict_proba``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Band values.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probabilities of the classes of ``classes_``, in that order.
        """
        return self._evaluate("predict_proba", X)

    @_Method
    def transform(self, X):
        """The learned indices, as the transformer's ``transform``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Band values.

        Returns
        -------
        indices : ndarray of shape (n_samples, n_indices)
            Learned normalized differences, in the dtype of ``X`` (float32 or
            float64).
        """
        return self._evaluate("transform", X)

    @_Method
    def get_feature_names_out(self, input_features=None):
        """Names of the learned indices, ``nd_<band i>_<band j>``.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Band names; defaults to ``band_names_``.

        Returns
        -------
        feature_names_out : ndarray of str objects
            One name per column of :meth:`transform`.
        """
        names = self.band_names_
        if input_features is not None:
            names = [str(name) for name in input_features]
            if len(names) != self.n_features_in_:
                raise ValueError(
                    f"input_features has {len(names)} names, but the model takes "
                    f"{self.n_features_in_} bands."
                )
        return np.asarray(
            [f"nd_{names[i]}_{names[j]}" for i, j in self._fields["indices"]["pairs"]],
            dtype=object,
        )

    def export_model(
        self,
        format="openeo",
        *,
        output=None,
        bands=None,
        sensor=None,
        collection=None,
        dimension="bands",
    ):
        """The whole model as an openEO process graph or as Earth Engine code.

        Both compute per pixel what the model computes (every layer, and the
        class codes, probabilities, regression values or learned indices)
        with the other system's own operations, over the bands selected by
        name, so that maps are made where the data lives. See the
        documentation's "Run a model anywhere" page.

        Parameters
        ----------
        format : {"openeo", "earthengine"}, default="openeo"
            ``"openeo"``: an openEO process (a dict, ``json.dumps`` writes
            it) with the openEO API's core processes. ``"earthengine"``:
            Python code (a str) defining ``sknd_model(image)``, which returns
            an ``ee.Image`` computed with ``ee.Image.expression``.
        output : {"class", "proba", "predict", "indices"}, default=None
            What to compute: a classifier's ``"class"`` codes (the positions
            in ``classes_``, as :func:`sknd.raster.class_map` numbers them;
            the default) or ``"proba"`` (one band per class); a regressor's
            ``"predict"``; a transformer's ``"indices"``.
        bands : list of str, default=None
            The band names of the data (a collection's or an image's), in any
            order and with other bands too: the model's bands are found among
            them by name as :func:`sknd.bands.match_bands` finds them (other
            sensors' names by common name). By default the model's names.
        sensor : str, default=None
            The sensor preset of ``bands``; guessed when None.
        collection : str, default=None
            openEO only: the collection to load (e.g. ``"SENTINEL2_L2A"``);
            the process then has ``spatial_extent`` and ``temporal_extent``
            parameters. Without it, the process takes a data cube as its
            ``data`` parameter.
        dimension : str, default="bands"
            openEO only: the name of the cube's band dimension.

        Returns
        -------
        exported : dict or str
            The openEO process, or the Earth Engine code.

        Raises
        ------
        ValueError
            If ``bands`` lack a band of the model (the message names it), or
            ``format`` or ``output`` is not one of the choices.

        Examples
        --------
        >>> import numpy as np, os, tempfile
        >>> import sknd
        >>> X = np.random.default_rng(0).uniform(0.05, 0.6, size=(200, 2))
        >>> clf = sknd.NDClassifier(max_epochs=2, random_state=0, bands=["B4", "B8"],
        ...                         sensor="sentinel2").fit(X, X[:, 1] > X[:, 0])
        >>> path = os.path.join(tempfile.mkdtemp(), "model.sknd")
        >>> clf.save_model(path)
        >>> graph = sknd.load_model(path).export_model("openeo", collection="SENTINEL2_L2A",
        ...                                            bands=["B02", "B04", "B08"])
        >>> graph["process_graph"]["select"]["arguments"]["bands"]
        ['B04', 'B08']
        """
        from ._export import export_model

        return export_model(
            self,
            self._fields,
            format=format,
            output=output,
            bands=bands,
            sensor=sensor,
            collection=collection,
            dimension=dimension,
        )
