"""A fitted network as scalar arithmetic over named bands: what every export dialect writes.

openEO process graphs and Earth Engine expressions compute per pixel with
scalar operations (add, multiply, exp, ...) over the bands of a cube or an
image. :func:`build` turns the layers of a model file (the plain-data network
of :func:`sknd._inference._evaluator.network_layers`, docs/model_files.md) and its
decoding into a :class:`Program`: *stages* of named values, each value an
expression tree of the operations in :data:`OPERATIONS` over constants
(``("num", value)``) and the bands or values of earlier stages
(``("in", name)``). Each dialect (:mod:`._openeo`, :mod:`._earthengine`)
only spells these operations and materializes each stage (a data cube's
bands, an image's bands): the network's math, the ND formula included, is
written here once for all of them.

The first stage reads each band as ``band * scale + offset``: a model fitted
on reflectances runs on digital numbers, and integer data becomes floating
point before any arithmetic (openEO has no cast; the dialects' integer types
would overflow in ``b * b``). A value read by several others (the inputs of a
dense layer, the logits) is a stage's value, never a repeated tree, and sums
and conjunctions of many operands are balanced trees (:func:`balanced`), so
that every tree stays small and shallow: the dialects' parsers, and the
recursive spelling of a tree, handle its depth whatever the model's size. The
operations are chosen so that every dialect has them and none overflows:
``max(x, 0) = (x + |x|) / 2`` (exact), ``softplus(x) = max(x, 0) + ln(1 +
exp(-|x|))``, the logistic function ``0.5 + 0.5 tanh(x / 2)``, the softmax
``p_k = 1 / sum_j exp(l_j - l_k)`` and the class code as the first largest
logit found by comparisons (``argmax`` keeps the first of tied columns).
tests/export/test_export.py checks every dialect against :class:`sknd.SavedModel`.
"""

import numpy as np

from .._nd._formula import softplus
from .._nd._pairs import index_names

__all__ = []

#: Operation -> number of operands. ``gt``, ``gte``, ``eq``, ``is_nan``, ``and`` and ``not``
#: give truth values; ``("if", condition, value)`` is ``value`` where the condition
#: holds, else 0; ``("where", condition, value, other)`` is ``value`` where it holds, else
#: ``other``: a constant, or :data:`NODATA`. ``where`` only wraps a whole output.
OPERATIONS = {
    "add": 2,
    "subtract": 2,
    "multiply": 2,
    "divide": 2,
    "exp": 1,
    "ln": 1,
    "sqrt": 1,
    "absolute": 1,
    "tanh": 1,
    "gt": 2,
    "gte": 2,
    "and": 2,
    "if": 2,
    "eq": 2,
    "is_nan": 1,
    "not": 1,
    "where": 3,
}

#: The no-data value of the dialect (openEO's null, a masked Earth Engine pixel, NaN).
NODATA = ("nodata",)

#: The outputs each estimator's model exports, the default first.
OUTPUTS = {
    "NDClassifier": ("class", "proba"),
    "NDRegressor": ("predict",),
    "NDTransformer": ("indices",),
}


def num(value):
    return ("num", float(value))


def op(name, *operands):
    return (name, *operands)


def relu(x):
    """``max(x, 0)`` as ``(x + |x|) / 2``: exact, with operations every dialect has."""
    return op("multiply", num(0.5), op("add", x, op("absolute", x)))


def sigmoid(x):
    """The logistic function as ``0.5 + 0.5 tanh(x / 2)``, which never overflows."""
    return op("add", num(0.5), op("multiply", num(0.5), op("tanh", op("multiply", num(0.5), x))))


def linear(weights, values, bias):
    """``sum_k weights[k] values[k] + bias``, zero weights left out."""
    terms = [op("multiply", num(weight), value) for weight, value in zip(weights, values) if weight]
    if bias != 0 or not terms:
        terms.append(num(bias))
    return balanced("add", terms)


def balanced(name, operands):
    """``operands`` combined with the associative operation ``name`` as a balanced tree.

    The tree's depth is ``ceil(log2(len(operands)))``: a sum of 1,024 terms nests
    10 deep, where a chain would nest 1,024 deep (too deep for the dialects' parsers
    and for Python's recursion when the tree is spelled).
    """
    operands = list(operands)
    while len(operands) > 1:
        paired = [op(name, a, b) for a, b in zip(operands[::2], operands[1::2])]
        operands = paired + operands[len(paired) * 2 :]
    return operands[0]


class Program:
    """The stages of values over the bands, the last one the outputs.

    Attributes
    ----------
    bands : list of str
        The band names, in the model's order: ``("in", bands[k])`` reads band k.
    stages : list of list of (str, tuple)
        Each stage's ``(name, expression)`` pairs, reading the bands and the
        values of earlier stages; the last stage's names are the output labels.
    """

    def __init__(self, bands):
        self.bands = list(bands)
        self.stages = []

    def stage(self, values):
        """Materialize the values that are not already bands or constants; refs to them."""
        index = len(self.stages)
        named = []
        refs = []
        for k, value in enumerate(values):
            if value[0] in ("in", "num"):
                refs.append(value)
                continue
            name = f"sknd_{index}_{k}"
            named.append((name, value))
            refs.append(("in", name))
        if named:
            self.stages.append(named)
        return refs

    def size(self):
        """The number of operations and reads (constants aside) in the stages' expressions."""
        count = 0
        pending = [expression for stage in self.stages for _, expression in stage]
        while pending:
            expression = pending.pop()
            count += expression[0] != "num"
            pending.extend(item for item in expression[1:] if isinstance(item, tuple))
        return count


def build(fields, output, band_names, scale, offset, nodata=None, fill=None):
    """The :class:`Program` of a checked model file's ``fields`` for ``output``.

    Its first stage reads each band ``b`` as ``b * scale + offset`` (one number
    per band): the cast that makes integer data (digital numbers) floating point
    before any arithmetic, and the collection's rescaling to the model's units.
    With a ``nodata`` value, each output is no-data (``fill`` for class codes)
    where a band holds it or NaN, as read, before the rescaling.
    """
    program = Program(band_names)
    values = [
        _rescale(("in", name), band_scale, band_offset)
        for name, band_scale, band_offset in zip(program.bands, scale, offset)
    ]
    if nodata is not None:
        values.append(valid([("in", name) for name in program.bands], nodata))
    values = program.stage(values)
    where = values.pop() if nodata is not None else None
    if output == "indices":
        outputs = _nd(fields["indices"], values)
    else:
        outputs = decoded(
            fields, output, program.stage(_layers(program, fields["network"], values))
        )
    if where is not None:
        other = NODATA if output != "class" else num(fill)
        outputs = [op("where", where, value, other) for value in outputs]
    program.stages.append(list(zip(output_labels(fields, output, band_names), outputs)))
    return program


def output_labels(fields, output, band_names):
    """The names of the outputs: ``class``, ``proba_<class>``, ``prediction``, the indices'."""
    if output == "indices":
        return index_names(band_names, fields["indices"]["pairs"]).tolist()
    if output == "predict":
        target = fields["target"]
        if target["ndim"] == 1:
            return ["prediction"]
        return [f"prediction_{k}" for k in range(len(target["mean"]))]
    if output == "proba":
        return [f"proba_{label}" for label in fields["classes"].tolist()]
    return ["class"]


def decoded(fields, output, logits):
    """The outputs ``output`` of a classifier's or regressor's ``logits`` (their values)."""
    if output == "predict":
        target = fields["target"]
        return [
            op("add", op("multiply", value, num(scale)), num(mean))
            for value, scale, mean in zip(logits, target["scale"], target["mean"])
        ]
    if output == "proba":
        return _probabilities(logits)
    return [_class_code(logits)]


def valid(bands, nodata):
    """Whether no band holds ``nodata`` or NaN: a conjunction, which every dialect spells
    without repeating its operands."""
    present = [op("not", op("is_nan", band)) for band in bands]
    if not np.isnan(nodata):
        present += [op("not", op("eq", band, num(nodata))) for band in bands]
    return balanced("and", present)


def _rescale(band, scale, offset):
    value = op("multiply", band, num(scale))
    return value if offset == 0 else op("add", value, num(offset))


def _layers(program, layers, values):
    inputs = values
    for layer in layers:
        values = _LAYERS[layer["kind"]](program, layer, values, inputs)
    return values


def _nd(layer, values):
    """The ND layer (:mod:`sknd._nd._formula`): ``(wa x_i - wc x_j) / (wa r_i + wc r_j + eps)``."""
    variant, epsilon = layer["variant"], layer["epsilon"]
    wa, wc = softplus(np.asarray(layer["a"])), softplus(np.asarray(layer["c"]))
    x = values
    if variant == "softplus":
        x = [_softplus(value) for value in values]
    r = x
    if variant == "signed":  # the smooth |b| = sqrt(b^2 + eps)
        r = [op("sqrt", op("add", op("multiply", value, value), num(epsilon))) for value in x]
    outputs = []
    for (i, j), weight_i, weight_j in zip(np.asarray(layer["pairs"]).tolist(), wa, wc):
        numerator = op(
            "subtract", op("multiply", num(weight_i), x[i]), op("multiply", num(weight_j), x[j])
        )
        denominator = op(
            "add",
            op("add", op("multiply", num(weight_i), r[i]), op("multiply", num(weight_j), r[j])),
            num(epsilon),
        )
        outputs.append(op("divide", numerator, denominator))
    return outputs


def _softplus(x):
    """``max(x, 0) + ln(1 + exp(-|x|))``: never overflows."""
    tail = op("ln", op("add", num(1.0), op("exp", op("multiply", num(-1.0), op("absolute", x)))))
    return op("add", relu(x), tail)


def _attention(program, layer, values, inputs):
    nd = _nd(layer["nd"], values)
    return [
        op("multiply", index, sigmoid(linear(weights, inputs, bias)))
        for index, weights, bias in zip(nd, layer["weight"], layer["bias"])
    ]


def _passthrough(program, layer, values, inputs):
    return _layers(program, layer["inner"], values) + _standardize(program, layer, values, inputs)


def _standardize(program, layer, values, inputs):
    return [
        op("divide", op("subtract", value, num(mean)), num(scale))
        for value, mean, scale in zip(values, layer["mean"], layer["scale"])
    ]


def _linear(program, layer, values, inputs):
    values = program.stage(values)  # each input is read by every output
    return [linear(weights, values, bias) for weights, bias in zip(layer["weight"], layer["bias"])]


#: The scalar arithmetic of each layer kind of a model file.
_LAYERS = {
    "nd": lambda program, layer, values, inputs: _nd(layer, values),
    "attnd": _attention,
    "passthrough": _passthrough,
    "standardize": _standardize,
    "linear": _linear,
    # Each value is read twice: (x + |x|) / 2 of a staged value, not of a repeated tree.
    "relu": lambda program, layer, values, inputs: [relu(value) for value in program.stage(values)],
}


def _probabilities(logits):
    """Class probabilities as :func:`sknd._data._decoding.class_probabilities` computes them.

    One logit: its logistic function and one minus it. Several:
    ``p_k = 1 / sum_j exp(l_j - l_k)``, the softmax without a largest logit to
    subtract (a term overflows to infinity only where ``p_k`` is 0 anyway).
    """
    if len(logits) == 1:
        positive = sigmoid(logits[0])
        return [op("subtract", num(1.0), positive), positive]
    return [
        op(
            "divide",
            num(1.0),
            balanced(
                "add",
                [
                    num(1.0) if j == k else op("exp", op("subtract", other, logit))
                    for j, other in enumerate(logits)
                ],
            ),
        )
        for k, logit in enumerate(logits)
    ]


def _class_code(logits):
    """The class code (position in ``classes_``) :func:`sknd._data._decoding.class_labels` picks.

    One logit: 1 where it is positive. Several: ``sum_k k [l_k is the first
    largest]``, with ``l_k > l_j`` before it and ``l_k >= l_j`` after it.
    """
    if len(logits) == 1:
        return op("if", op("gt", logits[0], num(0.0)), num(1.0))
    terms = []
    for k, logit in enumerate(logits[1:], start=1):
        conditions = [
            op("gt" if j < k else "gte", logit, other) for j, other in enumerate(logits) if j != k
        ]
        terms.append(op("if", balanced("and", conditions), num(k)))
    return balanced("add", terms)
