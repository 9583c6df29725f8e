"""A model as Earth Engine code: array images for the layers, expressions for the outputs.

The code is a Python module defining ``sknd_model(image)``. It selects the
model's bands of ``image`` by name as 64-bit floats (``toDouble``: integer
images, digital numbers, would overflow in the arithmetic) and makes each
pixel's bands a column (``toArray().toArray(1)``), read as ``band * scale +
offset``. Each layer is then one operation on array images with constant
weight arrays (:class:`_Layers`): a dense layer ``W x + b`` is
``matrixMultiply`` by ``ee.Array(W)``, the ND layer over the band pairs two
``matrixMultiply`` by the matrices of the pairs' band weights, numerator and
denominator, as sknd's numpy evaluator computes it, then an element-wise
``divide``. The weights are written once, as plain lists at the top of the
module (float32 weights in their shortest decimals, read back exactly with
``ee.PixelType.float()``), so that the code grows with the weights, not with
an expression per weight. The last layer's column is flattened into bands
(``arrayProject``, ``arrayFlatten``), and the outputs (class codes,
probabilities, regression values) are computed from them with one
``image.expression(...)`` each, spelling :mod:`._program`'s scalar decoding:
truth values are 0/1 numbers (``if`` multiplies by one, ``and`` multiplies
two, ``not`` subtracts from one). With a no-data value, an output is masked
(``updateMask``, Earth Engine's no-data) where a band holds it or NaN, or holds
the fill code there (``where``) for class codes.
"""

import numpy as np

from .._nd._formula import softplus
from .._version import __version__
from ._program import NODATA, Program, decoded, num, op, valid

__all__ = []

_BINARY = {
    "add": "+",
    "subtract": "-",
    "multiply": "*",
    "divide": "/",
    "gt": ">",
    "gte": ">=",
    "eq": "==",
}
_FUNCTIONS = {"exp": "exp", "ln": "log", "sqrt": "sqrt", "absolute": "abs", "tanh": "tanh"}


def _number(value):
    text = repr(float(value))
    return f"({text})" if text.startswith("-") else text


def _expression(expression, variables, used):
    kind = expression[0]
    if kind == "num":
        return _number(expression[1])
    if kind == "in":
        name = variables[expression[1]]
        used.add(name)
        return name
    operands = [_expression(operand, variables, used) for operand in expression[1:]]
    if kind in _FUNCTIONS:
        return f"{_FUNCTIONS[kind]}({operands[0]})"
    if kind in ("if", "and"):
        return f"({operands[0]} * {operands[1]})"
    if kind == "not":
        return f"(1 - {operands[0]})"
    if kind == "is_nan":
        return f"({operands[0]} != {operands[0]})"
    return f"({operands[0]} {_BINARY[kind]} {operands[1]})"


class _Layers:
    """The array-image code of a network: constant weight arrays and one line per layer."""

    def __init__(self, n_bands):
        self.n_bands = n_bands  # the width of the ND layer's input, the model's bands
        self.constants = []  # module-level lists: W0 = [[...], ...]
        self.lines = []

    def constant(self, values):
        """An ``ee.Image`` of the constant array ``values`` (a matrix or a column)."""
        values = np.asarray(values, dtype=np.float64)
        exact32 = np.array_equal(values.astype(np.float32), values)
        text = _nested(values.astype(np.float32) if exact32 else values)
        name = f"W{len(self.constants)}"
        self.constants.append(f"{name} = {text}")
        pixel_type = "float" if exact32 else "double"
        return f"ee.Image(ee.Array({name}, ee.PixelType.{pixel_type}()))"

    def column(self, values):
        return self.constant(np.asarray(values, dtype=np.float64).reshape(-1, 1))

    def assign(self, code):
        name = f"a{len(self.lines)}"
        self.lines.append(f"    {name} = {code}")
        return name

    def nd(self, layer, x):
        """The ND layer as sknd's evaluator computes it: two products and a quotient."""
        pairs = np.asarray(layer["pairs"])
        wa, wc = softplus(np.asarray(layer["a"])), softplus(np.asarray(layer["c"]))
        rows = np.arange(len(pairs))
        numerator = np.zeros((len(pairs), self.n_bands))
        denominator = np.zeros_like(numerator)
        numerator[rows, pairs[:, 0]], numerator[rows, pairs[:, 1]] = wa, -wc
        denominator[rows, pairs[:, 0]], denominator[rows, pairs[:, 1]] = wa, wc
        epsilon = repr(float(layer["epsilon"]))
        if layer["variant"] == "softplus":  # max(x, 0) + ln(1 + exp(-|x|))
            x = self.assign(f"{x}.max(0).add({x}.abs().multiply(-1).exp().add(1).log())")
        r = x
        if layer["variant"] == "signed":  # the smooth |x| = sqrt(x^2 + epsilon)
            r = self.assign(f"{x}.multiply({x}).add({epsilon}).sqrt()")
        return self.assign(
            f"{self.constant(numerator)}.matrixMultiply({x})"
            f".divide({self.constant(denominator)}.matrixMultiply({r}).add({epsilon}))"
        )

    def layers(self, layers, x, inputs):
        for layer in layers:
            x = getattr(self, f"_{layer['kind']}")(layer, x, inputs)
        return x

    def _nd(self, layer, x, inputs):
        return self.nd(layer, x)

    def _attnd(self, layer, x, inputs):
        gate = f"{self.constant(layer['weight'])}.matrixMultiply({inputs})"
        gate = f"{gate}.add({self.column(layer['bias'])})"
        sigmoid = f"{gate}.multiply(0.5).tanh().multiply(0.5).add(0.5)"
        return self.assign(f"{self.nd(layer['nd'], x)}.multiply({sigmoid})")

    def _passthrough(self, layer, x, inputs):
        inner = self.layers(layer["inner"], x, inputs)
        return self.assign(f"{inner}.arrayCat({self._standardize(layer, x, inputs)}, 0)")

    def _standardize(self, layer, x, inputs):
        mean, scale = self.column(layer["mean"]), self.column(layer["scale"])
        return self.assign(f"{x}.subtract({mean}).divide({scale})")

    def _linear(self, layer, x, inputs):
        weight, bias = self.constant(layer["weight"]), self.column(layer["bias"])
        return self.assign(f"{weight}.matrixMultiply({x}).add({bias})")

    def _relu(self, layer, x, inputs):
        return self.assign(f"{x}.max(0)")


def _nested(values):
    """``values`` (a numpy array) as a Python list literal, each number shortest."""
    if values.ndim == 0:
        return "0" if values == 0 else str(values)
    return "[" + ",".join(_nested(item) for item in values) + "]"


def earthengine_code(fields, output, labels, *, bands, scale, offset, nodata, fill, summary):
    """The Earth Engine Python code (a str) of the model's ``output`` on images with ``bands``.

    ``bands`` are the image's names of the model's bands, in the model's order.
    """
    code = _Layers(len(bands))
    x = code.assign(
        f"raw.toArray().toArray(1).multiply({code.column(scale)}).add({code.column(offset)})"
    )
    if output == "indices":
        x = code.nd(fields["indices"], x)
    else:
        x = code.layers(fields["network"], x, x)
    width = len(labels) if output == "indices" else len(fields["network"][-1]["bias"])
    columns = [f"sknd_column_{k}" for k in range(width)]
    # The scalar tail: the outputs from the flattened column, and where the bands are valid.
    tail = Program([f"sknd_band_{k}" for k in range(len(bands))] + columns)
    values = [("in", name) for name in columns]
    if output != "indices":
        values = decoded(fields, output, values)
    if nodata is not None:
        (where,) = tail.stage([valid([("in", name) for name in tail.bands[: len(bands)]], nodata)])
        other = NODATA if output != "class" else num(fill)
        values = [op("where", where, value, other) for value in values]
    tail.stages.append(list(zip(labels, values)))
    sources = [f"raw.select({k})" for k in range(len(bands))]
    sources += [f"flat.select({name!r})" for name in columns]
    spelled, outputs = _spelled(tail, sources)
    lines = [
        "    raw = image.select(BANDS).toDouble()",
        *code.lines,
        f"    flat = {x}.arrayProject([0]).arrayFlatten([{columns!r}])",
        *spelled,
    ]
    return "\n".join(
        [
            f'"""{summary}.',
            "",
            f'Written by sknd {__version__} (export_model(format="earthengine")). Use:',
            "",
            "    import ee",
            "    ee.Initialize()",
            "    result = sknd_model(ee.Image(...))  # an image with the bands BANDS",
            '"""',
            "",
            "import ee",
            "",
            f"BANDS = {list(bands)!r}",
            f"OUTPUTS = {list(labels)!r}",
            *code.constants,
            "",
            "",
            "def sknd_model(image):",
            '    """The outputs on ``image`` (bands BANDS): an ee.Image of the bands OUTPUTS."""',
            *lines,
            f"    return ee.Image.cat([{outputs}]).rename(OUTPUTS)",
            "",
        ]
    )


def _spelled(program, sources):
    """The lines computing ``program``'s values, its bands read from ``sources``; its outputs."""
    variables = {}
    lines = ["    v = {}"]
    for name, source in zip(program.bands, sources):
        variables[name] = f"v{len(variables)}"
        lines.append(f"    v[{variables[name]!r}] = {source}")
    for stage in program.stages:
        for name, expression in stage:
            mask = ""
            if expression[0] == "where":  # the output, and where it is valid
                _, where, expression, other = expression
                where = f"v[{variables[where[1]]!r}]"
                mask = f".updateMask({where})"
                if other != NODATA:
                    mask = f".where({where}.Not(), {_number(other[1])})"
            used = set()
            text = _expression(expression, variables, used)
            references = ", ".join(f"{ref!r}: v[{ref!r}]" for ref in sorted(used))
            variables[name] = f"v{len(variables)}"
            lines.append(
                f"    v[{variables[name]!r}] = image.expression({text!r}, {{{references}}}){mask}"
            )
    outputs = ", ".join(f"v[{variables[name]!r}]" for name, _ in program.stages[-1])
    return lines, outputs
