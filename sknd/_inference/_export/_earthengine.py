"""A :class:`~._program.Program` as Earth Engine code: ``ee.Image.expression`` per value.

The code is a Python module defining ``sknd_model(image)``: it selects the
model's bands of ``image`` by name as 64-bit floats (``toDouble``: integer
images, digital numbers, would overflow in the arithmetic), computes each value of each stage with
one ``image.expression(...)`` over the bands and earlier values (variables
``v0``, ``v1``, ...), and returns the outputs as one ``ee.Image`` with a band
per output. Truth values are 0/1 numbers (``if`` multiplies by one, ``and``
multiplies two, ``or`` is ``a + b - a * b``). An output that is no-data where
a condition fails (``where``) is masked there (``updateMask``), the masked
pixels of Earth Engine, or holds the fill code there (``where``).
"""

from ..._version import __version__
from ._program import NODATA

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
    if kind == "or":
        return f"({operands[0]} + {operands[1]} - {operands[0]} * {operands[1]})"
    if kind == "not":
        return f"(1 - {operands[0]})"
    if kind == "is_nan":
        return f"({operands[0]} != {operands[0]})"
    return f"({operands[0]} {_BINARY[kind]} {operands[1]})"


def earthengine_code(program, *, bands, summary):
    """The Earth Engine Python code (a str) computing ``program`` on images with ``bands``."""
    variables = {}
    lines = []
    for name, band in zip(program.bands, bands):
        variables[name] = f"v{len(variables)}"
        lines.append(f"    v[{variables[name]!r}] = image.select({band!r}).toDouble()")
    for stage in program.stages:
        for name, expression in stage:
            mask = ""
            if expression[0] == "where":  # the output, and where it is valid
                _, valid, expression, other = expression
                valid = f"v[{variables[valid[1]]!r}]"
                mask = f".updateMask({valid})"
                if other != NODATA:
                    mask = f".where({valid}.Not(), {_number(other[1])})"
            used = set()
            text = _expression(expression, variables, used)
            references = ", ".join(f"{ref!r}: v[{ref!r}]" for ref in sorted(used))
            variables[name] = f"v{len(variables)}"
            lines.append(
                f"    v[{variables[name]!r}] = image.expression({text!r}, {{{references}}}){mask}"
            )
    outputs = [name for name, _ in program.stages[-1]]
    images = ", ".join(f"v[{variables[name]!r}]" for name in outputs)
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
            f"OUTPUTS = {outputs!r}",
            "",
            "",
            "def sknd_model(image):",
            '    """The outputs on ``image`` (bands BANDS): an ee.Image of the bands OUTPUTS."""',
            "    v = {}",
            *lines,
            f"    return ee.Image.cat([{images}]).rename(OUTPUTS)",
            "",
        ]
    )
