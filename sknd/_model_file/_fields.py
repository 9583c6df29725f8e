"""The metadata of a model file checked field by field, and the arrays it names read.

:class:`Reader` follows :mod:`._format`: every field's type and range, every
array's dtype and shape against the layers' widths, weights that a writer can
produce (float32 values stored as float64), scales that are not zero, and
classes that fit the output layer. What it returns is what
:class:`~._saved_model.SavedModel` is built from.
"""

import numpy as np

from .._nd._formula import VARIANTS
from .._version import __version__
from ._archive import read_array
from ._format import (
    BAND_FIELDS,
    COMMON_FIELDS,
    ESTIMATOR_FIELDS,
    FORMAT,
    FORMAT_VERSION,
    LAYER_FIELDS,
    MAX_DEPTH,
    METADATA,
    TARGET_FIELDS,
    WEIGHT_DTYPE,
    Malformed,
    as_number,
    is_parameter,
)

__all__ = []


def is_plain(value):
    """Whether JSON holds ``value`` as it is (a parameter's value in ``params``)."""
    return value is None or isinstance(value, (bool, int, float, str))


class Reader:
    """Checks the metadata of a model file field by field and reads the arrays it names."""

    def __init__(self, metadata, arrays):
        self.metadata = metadata
        self.arrays = arrays
        self.used = set()

    def model(self):
        """The checked fields, as :class:`~._saved_model.SavedModel` takes them."""
        meta = self.metadata
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise Malformed(f'{METADATA} does not say "format": "{FORMAT}"')
        version = meta.get("format_version")
        if version != FORMAT_VERSION:
            raise Malformed(
                f"it is in format version {version!r}, and this sknd ({__version__}) reads "
                f"version {FORMAT_VERSION}: load it with the sknd version that wrote it "
                f"({meta.get('sknd_version')!r}) or a newer one"
            )
        estimator = self.choice(meta, "estimator", tuple(ESTIMATOR_FIELDS))
        self.exact_keys(meta, COMMON_FIELDS + ESTIMATOR_FIELDS[estimator], METADATA)
        fields = self.common(meta, estimator)
        n_features = fields["n_features_in"]
        if estimator == "NDTransformer":
            fields["indices"] = self.nd_layer(meta, "indices", n_features)
        else:
            layers = meta["network"]
            if not isinstance(layers, list) or not layers:
                raise Malformed('"network" is not a list of layers')
            fields["network"], width = self.layers(layers, n_features, "network", 0)
            if estimator == "NDClassifier":
                fields["classes"] = self.classes(meta, width)
            else:
                fields["target"] = self.target(meta, width)
        unused = set(self.arrays) - self.used
        if unused:
            raise Malformed(f"it holds arrays no field uses: {sorted(unused)[:5]}")
        return fields

    def common(self, meta, estimator):
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
            band_range = self.array(meta, "band_range", METADATA, "f", (n_features, 2))
            if not (band_range[:, 0] <= band_range[:, 1]).all():
                raise Malformed(f"{METADATA}.band_range has a minimum above its maximum")
            fields["band_range"] = band_range
        return fields

    # -- fields
    def exact_keys(self, mapping, keys, where):
        missing = sorted(set(keys) - set(mapping))
        extra = sorted(set(mapping) - set(keys))
        if missing:
            raise Malformed(f"{where} lacks {missing}")
        if extra:
            raise Malformed(f"{where} has unknown fields {extra}")

    def field(self, mapping, key):
        if key not in mapping:
            raise Malformed(f"field {key!r} is missing")
        return mapping[key]

    def choice(self, mapping, key, options):
        value = self.field(mapping, key)
        if not isinstance(value, str) or value not in options:
            raise Malformed(f"{key!r} is {value!r}, not one of {list(options)}")
        return value

    def text(self, mapping, key):
        value = self.field(mapping, key)
        if not isinstance(value, str):
            raise Malformed(f"{key!r} is {value!r}, not a string")
        return value

    def boolean(self, mapping, key):
        value = self.field(mapping, key)
        if not isinstance(value, bool):
            raise Malformed(f"{key!r} is {value!r}, not true or false")
        return value

    def integer(self, mapping, key, low):
        value = self.field(mapping, key)
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise Malformed(f"{key!r} is {value!r}, not an integer of at least {low}")
        return value

    def number(self, mapping, key, positive=False):
        value = self.field(mapping, key)
        number = as_number(value)
        if number is None or (positive and number <= 0):
            kind = "a positive number" if positive else "a finite number"
            raise Malformed(f"{key!r} is {_shown(value)}, not {kind}")
        return number

    def names(self, mapping, key, count, optional=False):
        value = self.field(mapping, key)
        if value is None and optional:
            return None
        if (
            not isinstance(value, list)
            or len(value) != count
            or not all(isinstance(name, str) for name in value)
        ):
            raise Malformed(f"{key!r} is not a list of {count} names")
        return value

    def params(self, meta):
        value = self.field(meta, "params")
        if not isinstance(value, dict) or not all(
            is_plain(item) or (isinstance(item, list) and all(is_plain(x) for x in item))
            for item in value.values()
        ):
            raise Malformed('"params" is not a mapping of names to plain values')
        return value

    def bands(self, meta, n_features):
        value = self.field(meta, "bands")
        if not isinstance(value, list) or len(value) != n_features:
            raise Malformed(f'"bands" is not a list of {n_features} bands')
        checked = []
        for band in value:
            if not isinstance(band, dict):
                raise Malformed(f'"bands" holds {_shown(band)}, not a band')
            self.exact_keys(band, BAND_FIELDS, 'a band of "bands"')
            if not isinstance(band["name"], str) or not all(
                band[key] is None or isinstance(band[key], str)
                for key in ("common_name", "sensor", "group")
            ):
                raise Malformed(f'"bands" holds {_shown(band)}, whose names are not strings')
            wavelength = band["wavelength"]
            if wavelength is not None:
                wavelength = as_number(wavelength)
                if wavelength is None or wavelength <= 0:
                    raise Malformed(
                        f'"bands" holds {_shown(band)}, whose wavelength is not a positive number'
                    )
            checked.append({**band, "wavelength": wavelength})
        return checked

    # -- arrays
    def array(self, mapping, key, where, kinds, shape, weights=False):
        """The array of ``mapping[key]``; ``shape`` items of None take any length.

        Floats are finite; ``weights`` are float64 copies of float32 values.
        """
        reference = self.field(mapping, key)
        if not (
            isinstance(reference, dict)
            and set(reference) == {"array"}
            and isinstance(reference["array"], str)
        ):
            raise Malformed(f"{where}.{key} is {_shown(reference)}, not a reference to an array")
        name = reference["array"]
        if name not in self.arrays:
            raise Malformed(f"{where}.{key} names array {name!r}, which the file lacks")
        if name in self.used:
            raise Malformed(f"array {name!r} is used twice")
        self.used.add(name)
        array = read_array(*self.arrays[name], name)
        if (
            array.dtype.kind not in kinds
            or len(array.shape) != len(shape)
            or any(want is not None and got != want for got, want in zip(array.shape, shape))
        ):
            shown = tuple("any" if want is None else want for want in shape)
            raise Malformed(
                f"{where}.{key} is an array of {array.dtype} with shape {array.shape}, expected "
                f"kind {kinds!r} and shape {shown}"
            )
        if array.dtype.kind == "f":
            if kinds == "f" and array.dtype != WEIGHT_DTYPE:
                raise Malformed(f"{where}.{key} is {array.dtype}, not float64")
            if not np.isfinite(array).all():
                raise Malformed(f"{where}.{key} holds NaN or infinite values")
            if weights and not is_parameter(array):
                raise Malformed(
                    f"{where}.{key} holds values no sknd writes (weights are float32 values, "
                    "stored exactly as float64; these are beyond float32's range or between "
                    "its values)"
                )
        return array

    def weights(self, mapping, where, n_in):
        weight = self.array(mapping, "weight", where, "f", (None, n_in), weights=True)
        bias = self.array(mapping, "bias", where, "f", (len(weight),), weights=True)
        if len(weight) < 1:
            raise Malformed(f"{where}.weight has no rows")
        return {"weight": weight, "bias": bias}

    def statistics(self, mapping, where, n):
        mean = self.array(mapping, "mean", where, "f", (n,), weights=True)
        scale = self.array(mapping, "scale", where, "f", (n,), weights=True)
        if not (scale != 0).all():
            raise Malformed(f"{where}.scale holds zeros")
        return {"mean": mean, "scale": scale}

    def nd_layer(self, mapping, key, n_features):
        layer = self.field(mapping, key)
        where = key
        if not isinstance(layer, dict):
            raise Malformed(f"{where} is not an ND layer")
        self.exact_keys(layer, ("kind",) + LAYER_FIELDS["nd"], where)
        if layer["kind"] != "nd":
            raise Malformed(f"{where}.kind is {_shown(layer['kind'])}, not 'nd'")
        pairs = self.array(layer, "pairs", where, "iu", (None, 2)).astype(np.int64)
        if len(pairs) < 1 or pairs.min() < 0 or pairs.max() >= n_features:
            raise Malformed(f"{where}.pairs has no pairs or bands outside 0..{n_features - 1}")
        return {
            "kind": "nd",
            "pairs": pairs,
            "a": self.array(layer, "a", where, "f", (len(pairs),), weights=True),
            "c": self.array(layer, "c", where, "f", (len(pairs),), weights=True),
            "epsilon": self.number(layer, "epsilon", positive=True),
            "variant": self.choice(layer, "variant", VARIANTS),
        }

    def layers(self, layers, width, where, depth):
        """Checked layers and the width of their output, starting from ``width`` inputs."""
        if depth > MAX_DEPTH:
            raise Malformed(f"{where} nests layers too deeply")
        checked = []
        for position, layer in enumerate(layers):
            at = f"{where}[{position}]"
            kind = layer.get("kind") if isinstance(layer, dict) else None
            if not isinstance(kind, str) or kind not in LAYER_FIELDS:
                raise Malformed(f"{at} is not a layer of a known kind ({_shown(kind)})")
            if kind != "nd":
                self.exact_keys(layer, ("kind",) + LAYER_FIELDS[kind], at)
            layer, width = self.layer(kind, layer, width, at, depth)
            checked.append(layer)
        return checked, width

    def layer(self, kind, layer, width, at, depth):
        """One checked layer of ``kind`` on ``width`` inputs, and its output width."""
        n_features = self.metadata["n_features_in"]
        if kind in ("nd", "attnd", "passthrough") and width != n_features:
            raise Malformed(f"{at} is a {kind} layer after other layers")
        if kind == "nd":
            layer = self.nd_layer({"layer": layer}, "layer", n_features)
            return layer, len(layer["pairs"])
        if kind == "attnd":
            nd = self.nd_layer(layer, "nd", n_features)
            gate = self.weights(layer, at, n_features)
            if len(gate["weight"]) != len(nd["pairs"]):
                raise Malformed(
                    f"{at}.weight has {len(gate['weight'])} rows, not {len(nd['pairs'])}"
                )
            return {"kind": "attnd", "nd": nd, **gate}, len(nd["pairs"])
        if kind == "passthrough":
            if not isinstance(layer["inner"], list) or not layer["inner"]:
                raise Malformed(f"{at}.inner is not a list of layers")
            inner, inner_width = self.layers(layer["inner"], width, f"{at}.inner", depth + 1)
            statistics = self.statistics(layer, at, n_features)
            return {"kind": "passthrough", "inner": inner, **statistics}, inner_width + n_features
        if kind == "standardize":
            return {"kind": "standardize", **self.statistics(layer, at, width)}, width
        if kind == "linear":
            weights = self.weights(layer, at, width)
            return {"kind": "linear", **weights}, len(weights["weight"])
        return {"kind": "relu"}, width

    def classes(self, meta, width):
        # Labels keep their own dtype (float32 labels stay float32): any float, finite.
        classes = self.array(meta, "classes", "classes", "biufUS", (None,))
        n_outputs = 1 if len(classes) == 2 else len(classes)
        if len(classes) < 2 or n_outputs != width:
            raise Malformed(
                f"the network has {width} outputs, which do not fit {len(classes)} classes"
            )
        if len(np.unique(classes)) != len(classes) or not (classes[:-1] < classes[1:]).all():
            raise Malformed("classes are not sorted and unique")
        if self.boolean(meta, "classes_as_objects"):
            if classes.dtype.kind != "U":
                raise Malformed("classes_as_objects is true for classes that are not text")
            classes = classes.astype(object)
        return classes

    def target(self, meta, width):
        target = self.field(meta, "target")
        if not isinstance(target, dict):
            raise Malformed('"target" is not a mapping')
        self.exact_keys(target, TARGET_FIELDS, '"target"')
        ndim = target["ndim"]
        if ndim not in (1, 2) or isinstance(ndim, bool) or (ndim == 1 and width != 1):
            raise Malformed(f"target.ndim is {_shown(ndim)}, which does not fit {width} outputs")
        return {
            "mean": self.array(target, "mean", "target", "f", (width,)),
            "scale": self.array(target, "scale", "target", "f", (width,)),
            "ndim": ndim,
        }


def _shown(value):
    """``repr(value)``, cut short (a hostile file's values can be long)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
