"""A numpy stand-in of exactly the ``ee`` calls the exported Earth Engine code makes.

``run_earthengine(code, bands)`` runs the code of ``export_model("earthengine")`` on
pixel values (a dict of band name -> 1-D array) with this module as ``ee``. An image
holds bands (name -> one value per pixel) or one array band: per-pixel arrays of shape
``(n_pixels, *shape)``, or ``(1, *shape)`` for a constant ``ee.Image(ee.Array(...))``,
so that numpy's broadcasting does what Earth Engine does per pixel. Masked pixels are
NaN here. Comparisons in expressions give 0/1 numbers, as Earth Engine's do. What this
checks is the arithmetic of the code, not Earth Engine's parser or its image types.
"""

import sys
import types

import numpy as np


class _Pixels(np.ndarray):
    """Pixel values whose comparisons give 0/1 numbers, as Earth Engine's do."""

    def _compare(self, other, compare):
        return compare(np.asarray(self), np.asarray(other)).astype(float).view(_Pixels)

    def __eq__(self, other):
        return self._compare(other, np.equal)

    def __ne__(self, other):
        return self._compare(other, np.not_equal)

    def __gt__(self, other):
        return self._compare(other, np.greater)

    def __ge__(self, other):
        return self._compare(other, np.greater_equal)


class PixelType:
    """``ee.PixelType``: the two float types the code asks for."""

    @staticmethod
    def float():
        return np.float32

    @staticmethod
    def double():
        return np.float64


class Array:
    """``ee.Array(values, pixel_type)``: the values in that type."""

    def __init__(self, values, pixel_type):
        self.values = np.asarray(values, dtype=pixel_type)


class Image:
    """The ``ee.Image`` calls of the exported code, on numpy arrays."""

    functions = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "abs": np.abs, "tanh": np.tanh}

    def __init__(self, bands):
        if isinstance(bands, Array):  # a constant array image, in float64 as Earth Engine computes
            bands = {"array": bands.values.astype(np.float64)[None]}
        self.bands = bands

    def _value(self):
        (value,) = self.bands.values()
        return value

    def _array(self, value):
        return Image({"array": value})

    def select(self, selector):
        if isinstance(selector, list):
            return Image({name: self.bands[name] for name in selector})
        name = list(self.bands)[selector] if isinstance(selector, int) else selector
        return Image({name: self.bands[name]})

    def toDouble(self):  # noqa: N802 (Earth Engine's name)
        return Image({name: values.astype(float) for name, values in self.bands.items()})

    def toArray(self, axis=0):  # noqa: N802
        if axis == 0:  # the bands of each pixel as a 1-D array
            return self._array(np.stack(list(self.bands.values()), axis=-1))
        assert axis == 1 and self._value().ndim == 2  # a 1-D array as a column
        return self._array(self._value()[..., None])

    def _operand(self, other):
        return other._value() if isinstance(other, Image) else other

    def add(self, other):
        return self._array(self._value() + self._operand(other))

    def subtract(self, other):
        return self._array(self._value() - self._operand(other))

    def multiply(self, other):
        return self._array(self._value() * self._operand(other))

    def divide(self, other):
        return self._array(self._value() / self._operand(other))

    def max(self, other):
        return self._array(np.maximum(self._value(), self._operand(other)))

    def abs(self):
        return self._array(np.abs(self._value()))

    def exp(self):
        return self._array(np.exp(self._value()))

    def log(self):
        return self._array(np.log(self._value()))

    def sqrt(self):
        return self._array(np.sqrt(self._value()))

    def tanh(self):
        return self._array(np.tanh(self._value()))

    def matrixMultiply(self, other):  # noqa: N802
        return self._array(np.matmul(self._value(), other._value()))

    def arrayCat(self, other, axis):  # noqa: N802
        return self._array(np.concatenate([self._value(), other._value()], axis=axis + 1))

    def arrayProject(self, axes):  # noqa: N802 (a column: its values as a 1-D array)
        assert list(axes) == [0] and self._value().shape[-1] == 1
        return self._array(self._value()[..., 0])

    def arrayFlatten(self, labels):  # noqa: N802
        (names,) = labels
        values = self._value()
        assert values.shape[1:] == (len(names),)
        return Image({name: values[:, k] for k, name in enumerate(names)})

    def expression(self, text, variables):
        values = {name: image._value().view(_Pixels) for name, image in variables.items()}
        value = eval(text, {"__builtins__": {}}, {**self.functions, **values})  # noqa: S307
        return Image({"constant": np.asarray(value, dtype=float).view(np.ndarray)})

    @staticmethod
    def cat(images):
        return Image({f"b{k}": image._value() for k, image in enumerate(images)})

    def rename(self, names):
        return Image(dict(zip(names, self.bands.values())))

    def Not(self):  # noqa: N802
        return Image({"constant": (self._value() == 0).astype(float)})

    def updateMask(self, mask):  # noqa: N802 (masked pixels here as NaN)
        return Image({"constant": np.where(mask._value() != 0, self._value(), np.nan)})

    def where(self, test, value):
        return Image({"constant": np.where(test._value() != 0, value, self._value())})


def run_earthengine(code, bands):
    """``(namespace, outputs)`` of the exported ``code`` on ``bands`` (name -> pixel values)."""
    ee = types.ModuleType("ee")
    ee.Image, ee.Array, ee.PixelType = Image, Array, PixelType
    namespace = {}
    saved, sys.modules["ee"] = sys.modules.get("ee"), ee
    try:
        exec(compile(code, "<sknd_model>", "exec"), namespace)  # noqa: S102
    finally:
        if saved is None:
            del sys.modules["ee"]
        else:
            sys.modules["ee"] = saved
    return namespace, namespace["sknd_model"](Image(bands)).bands
