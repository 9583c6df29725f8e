"""A :class:`~._program.Program` as an openEO process graph (the openEO API's own processes).

The graph selects the model's bands by name (``load_collection(bands=...)``
or ``filter_bands``), then computes the values of each stage in callbacks
over the band dimension, which read bands and earlier values with
``array_element(index=...)`` and spell each operation as one core process
(``add``, ``multiply``, ``exp``, ``if``, ...). A stage's values are appended
to each pixel's bands (``apply_dimension`` with ``array_append``, in runs of
about the square root of the stage's width, see :func:`_chunks`) for the
stages after it; the last stage's values are the outputs, labelled along the
band dimension (one output: the cube without that dimension). Any back-end
that implements these core processes runs the graph.
"""

import math

from ._program import NODATA, OPERATIONS

__all__ = []

_ARGUMENTS = {1: ("x",), 2: ("x", "y")}
# Operations whose openEO processes name their operands otherwise.
_NAMES = {"exp": ("p",), "if": ("value", "accept"), "where": ("value", "accept", "reject")}
# Operations spelled by another openEO process.
_PROCESSES = {"where": "if"}


class _Callback:
    """The process graph of a per-pixel callback (a tree: no node is read twice).

    Bands and earlier values are read by position (``array_element(index=...)``):
    ``apply_dimension`` numbers the labels of a dimension whose length it changes.
    """

    def __init__(self, layout):
        self.nodes = {}
        self.position = {name: k for k, name in enumerate(layout)}

    def node(self, process_id, arguments):
        node_id = f"{process_id}{len(self.nodes)}"
        self.nodes[node_id] = {"process_id": process_id, "arguments": arguments}
        return {"from_node": node_id}

    def value(self, expression):
        kind = expression[0]
        if kind == "num":
            return expression[1]
        if kind == "in":
            index = self.position[expression[1]]
            return self.node("array_element", {"data": {"from_parameter": "data"}, "index": index})
        # openEO's null, the no-data value: if's default reject.
        operands = [self.value(operand) for operand in expression[1:] if operand != NODATA]
        names = _NAMES[kind] if kind in _NAMES else _ARGUMENTS[OPERATIONS[kind]]
        arguments = dict(zip(names, operands))
        if kind == "if":
            arguments["reject"] = 0
        return self.node(_PROCESSES.get(kind, kind), arguments)

    def graph(self, result):
        self.nodes[result["from_node"]]["result"] = True
        return {"process_graph": self.nodes}

    def reducer(self, expression):
        """The callback computing ``expression`` (a constant as ``add(x=c, y=0)``)."""
        value = self.value(expression)
        if not isinstance(value, dict):
            value = self.node("add", {"x": value, "y": 0})
        return self.graph(value)

    def appender(self, values):
        """The callback appending ``values`` to the pixel's array (``array_append``)."""
        array = {"from_parameter": "data"}
        for _, expression in values:
            array = self.node("array_append", {"data": array, "value": self.value(expression)})
        return self.graph(array)


def _chunks(values):
    """``values`` in runs of at most ``ceil(sqrt(len(values)))``, at least 16.

    openeo-pg-parser-networkx nests a graph as deep as its longest chain of
    nodes (about 125 is its limit): a run of ``array_append`` steps is such a
    chain inside its callback, and the runs of one stage a chain of
    ``apply_dimension`` steps. Runs of about ``sqrt(n)`` values keep both near
    ``sqrt(n)`` deep: 32 runs of 32 values for 1,024 ND indices.
    """
    size = max(16, math.isqrt(len(values) - 1) + 1)
    return [values[start : start + size] for start in range(0, len(values), size)]


def graph_nodes(program, dimension, bands):
    """The model's nodes after the node ``"select"``, the result node marked.

    Each stage but the last appends its values to every pixel's bands
    (``apply_dimension``, a few runs of values at a time, in a chain), so that
    later stages read them by position; the last stage reduces the band
    dimension to the one output, or appends the outputs and keeps only them,
    named (``rename_labels``, ``filter_bands``).
    """
    nodes = {}
    layout = list(program.bands)
    cube = {"from_node": "select"}
    *stages, outputs = program.stages
    if len(outputs) > 1:
        stages.append(outputs)
    for index, values in enumerate(stages):
        for run, chunk in enumerate(_chunks(values)):
            node_id = f"stage{index}_{run}"
            nodes[node_id] = {
                "process_id": "apply_dimension",
                "arguments": {
                    "data": cube,
                    "dimension": dimension,
                    "process": _Callback(layout).appender(chunk),
                },
            }
            cube = {"from_node": node_id}
            layout += [name for name, _ in chunk]
    if len(outputs) == 1:
        nodes["output"] = {
            "process_id": "reduce_dimension",
            "arguments": {
                "data": cube,
                "dimension": dimension,
                "reducer": _Callback(layout).reducer(outputs[0][1]),
            },
            "result": True,
        }
        return nodes
    nodes["named"] = {
        "process_id": "rename_labels",
        "arguments": {
            "data": cube,
            "dimension": dimension,
            "target": list(bands) + layout[len(bands) :],
        },
    }
    nodes["output"] = {
        "process_id": "filter_bands",
        "arguments": {"data": {"from_node": "named"}, "bands": [label for label, _ in outputs]},
        "result": True,
    }
    return nodes


def process_graph(body, labels, *, collection, bands, dimension, summary):
    """The openEO process (a dict ready for ``json.dumps``) of the outputs ``labels``.

    Its node ``"select"`` reads the model's bands under the names ``bands``
    (in the model's order); the nodes ``body`` compute the outputs from it.
    """
    nodes = {}
    parameters = []
    if collection is None:
        parameters.append(
            {
                "name": "data",
                "description": f"A raster data cube with the bands {list(bands)} along "
                f"{dimension!r} (other bands are ignored).",
                "schema": {"type": "object", "subtype": "datacube"},
            }
        )
        nodes["select"] = {
            "process_id": "filter_bands",
            "arguments": {"data": {"from_parameter": "data"}, "bands": list(bands)},
        }
    else:
        for name, what in (("spatial_extent", "area"), ("temporal_extent", "time interval")):
            parameters.append(
                {
                    "name": name,
                    "description": f"The {what} to load, or null for all.",
                    "schema": [{"type": "object"}, {"type": "array"}, {"type": "null"}],
                    "default": None,
                    "optional": True,
                }
            )
        nodes["select"] = {
            "process_id": "load_collection",
            "arguments": {
                "id": collection,
                "spatial_extent": {"from_parameter": "spatial_extent"},
                "temporal_extent": {"from_parameter": "temporal_extent"},
                "bands": list(bands),
            },
        }
    nodes.update(body)
    return {
        "id": "sknd_model",
        "summary": summary,
        "description": f"{summary}. Outputs: {labels}"
        + (f" along {dimension!r}." if len(labels) > 1 else " (the band dimension reduced)."),
        "parameters": parameters,
        "returns": {
            "description": "A data cube of the model's outputs.",
            "schema": {"type": "object", "subtype": "datacube"},
        },
        "process_graph": nodes,
    }
