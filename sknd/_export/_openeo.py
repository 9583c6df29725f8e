"""A :class:`~._program.Program` as an openEO process graph (the openEO API's own processes).

The graph selects the model's bands by name (``load_collection(bands=...)``
or ``filter_bands``), then computes each value of a stage with
``reduce_dimension`` over the band dimension, whose callback reads bands and
earlier values with ``array_element(label=...)`` and spells each operation as
one core process (``add``, ``multiply``, ``exp``, ``if``, ...). A stage's
values become bands again (``add_dimension``, ``merge_cubes``) for the stages
after it; the last stage's values are the outputs, labelled along the band
dimension (one output: the cube without that dimension). Any back-end that
implements these core processes runs the graph.
"""

from ._program import OPERATIONS

__all__ = []

_ARGUMENTS = {1: ("x",), 2: ("x", "y")}
# Operations whose openEO processes name their operands otherwise.
_NAMES = {"exp": ("p",), "if": ("value", "accept")}


class _Callback:
    """The process graph of one value's per-pixel callback (a tree: no node is read twice)."""

    def __init__(self):
        self.nodes = {}

    def node(self, process_id, arguments):
        node_id = f"{process_id}{len(self.nodes)}"
        self.nodes[node_id] = {"process_id": process_id, "arguments": arguments}
        return {"from_node": node_id}

    def value(self, expression):
        kind = expression[0]
        if kind == "num":
            return expression[1]
        if kind == "in":
            return self.node(
                "array_element", {"data": {"from_parameter": "data"}, "label": expression[1]}
            )
        operands = [self.value(operand) for operand in expression[1:]]
        names = _NAMES.get(kind, _ARGUMENTS[OPERATIONS[kind]])
        arguments = dict(zip(names, operands))
        if kind == "if":
            arguments["reject"] = 0
        return self.node(kind, arguments)

    def graph(self, expression):
        """The callback computing ``expression`` (a constant as ``add(x=c, y=0)``)."""
        value = self.value(expression)
        if not isinstance(value, dict):
            value = self.node("add", {"x": value, "y": 0})
        self.nodes[value["from_node"]]["result"] = True
        return {"process_graph": self.nodes}


class _Graph:
    def __init__(self, dimension):
        self.dimension = dimension
        self.nodes = {}

    def add(self, node_id, process_id, **arguments):
        self.nodes[node_id] = {"process_id": process_id, "arguments": arguments}
        return {"from_node": node_id}

    def stage(self, cube, index, values, keep_dimension):
        """The cube of a stage's values, labelled along the band dimension."""
        parts = []
        for k, (label, expression) in enumerate(values):
            part = self.add(
                f"s{index}v{k}",
                "reduce_dimension",
                data=cube,
                dimension=self.dimension,
                reducer=_Callback().graph(expression),
            )
            if keep_dimension:
                part = self.add(
                    f"s{index}v{k}band",
                    "add_dimension",
                    data=part,
                    name=self.dimension,
                    label=label,
                    type="bands",
                )
            parts.append(part)
        level = 0
        while len(parts) > 1:  # merged pairwise: every value is copied log2(n) times
            merged = [
                self.add(f"s{index}m{level}_{k}", "merge_cubes", cube1=first, cube2=second)
                for k, (first, second) in enumerate(zip(parts[::2], parts[1::2]))
            ]
            parts = merged + parts[len(merged) * 2 :]
            level += 1
        return parts[0]


def process_graph(program, *, collection, bands, dimension, summary):
    """The openEO process (a dict ready for ``json.dumps``) computing ``program``.

    ``program.bands`` are read under the names ``bands`` (in the same order).
    """
    graph = _Graph(dimension)
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
        cube = graph.add(
            "select", "filter_bands", data={"from_parameter": "data"}, bands=list(bands)
        )
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
        cube = graph.add(
            "select",
            "load_collection",
            id=collection,
            spatial_extent={"from_parameter": "spatial_extent"},
            temporal_extent={"from_parameter": "temporal_extent"},
            bands=list(bands),
        )
    renamed = dict(zip(program.bands, bands))
    stages = [
        [(label, _rename(expression, renamed)) for label, expression in stage]
        for stage in program.stages
    ]
    for index, values in enumerate(stages[:-1]):
        values_cube = graph.stage(cube, index, values, keep_dimension=True)
        cube = graph.add(f"s{index}", "merge_cubes", cube1=cube, cube2=values_cube)
    outputs = stages[-1]
    result = graph.stage(cube, len(stages) - 1, outputs, keep_dimension=len(outputs) > 1)
    graph.nodes[result["from_node"]]["result"] = True
    labels = [label for label, _ in outputs]
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
        "process_graph": graph.nodes,
    }


def _rename(expression, renamed):
    """``expression`` reading the model's bands under the cube's names."""
    if expression[0] == "in":
        return ("in", renamed.get(expression[1], expression[1]))
    if expression[0] == "num":
        return expression
    return (expression[0], *(_rename(operand, renamed) for operand in expression[1:]))
