"""Size of the exported models (export_model): openEO processes, Earth Engine code; run times.

For 3-class ND models (depth 2, every band pair, as the defaults keep up to 1,024 pairs)
of 4 to 46 bands: the pure openEO process graph's nodes (callbacks included), its top-level
steps, the longest chain of nodes (top level and inside any callback: the nesting that
openeo-pg-parser-networkx reads up to about 125 deep), its JSON size, the form
``form="auto"`` picks, the size of the ``run_udf`` form, the Earth Engine code's size and
the time ``export_model`` takes for the graph.

``--graph-times`` times the pure graph of depth-3 models of 300 to 3,000 nodes on the
executor, where ``form="auto"`` switches to ``run_udf``. ``--defaults`` measures the
default NDClassifier of the 8 Landsat 8 bands, of satimage's 36 features and of 46
synthetic bands: the sizes of both openEO forms and of the Earth Engine code, and the
seconds openeo-processes-dask's own executor (docs/anywhere.md's ``run_locally``: parsing
and running) takes on a 24 x 24 cube, for the ``run_udf`` form, and for the graph where
it is at most ``--max-graph-nodes`` nodes.
docs/anywhere.md and benchmarks/RESULTS.md quote the tables.

Run::

    PYTHONPATH=. python benchmarks/bench_export_size.py [--bands 4 10 16 36 46]
    PYTHONPATH=. python benchmarks/bench_export_size.py --defaults
    PYTHONPATH=. python benchmarks/bench_export_size.py --graph-times
"""

import argparse
import json
import pathlib
import re
import time
import warnings

import numpy as np

import sknd
from sknd.datasets import load_landsat8_samples, load_satimage

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs" / "anywhere.md"


def _nodes(graph):
    return sum(1 + sum(_nodes(g) for g in _callbacks(node)) for node in graph.values())


def _callbacks(node):
    arguments = node["arguments"].values()
    return [a["process_graph"] for a in arguments if isinstance(a, dict) and "process_graph" in a]


def _depth(graph):
    """The longest chain of ``from_node`` references in ``graph`` or any of its callbacks."""
    memo = {}

    def refs(argument):
        if isinstance(argument, dict):
            if "from_node" in argument:
                return [argument["from_node"]]
            if "process_graph" in argument:
                return []
            return [r for value in argument.values() for r in refs(value)]
        if isinstance(argument, list):
            return [r for value in argument for r in refs(value)]
        return []

    for name in graph:  # graphs are written in order: each node after the nodes it reads
        memo[name] = 1 + max((memo[r] for r in refs(graph[name]["arguments"])), default=0)
    inner = [_depth(g) for node in graph.values() for g in _callbacks(node)]
    return max([max(memo.values()), *inner])


def _run_locally():
    """docs/anywhere.md's ``run_locally``: openeo-processes-dask's executor."""
    blocks = re.findall(r"^```python\n(.*?)^```", DOCS.read_text(encoding="utf-8"), re.M | re.S)
    (source,) = [block for block in blocks if "def run_locally(" in block]
    namespace = {}
    exec(compile(source, str(DOCS), "exec"), namespace)  # noqa: S102
    return namespace["run_locally"]


def _default_model(n_bands):
    if n_bands == 36:
        X, y = load_satimage(return_X_y=True)
    elif n_bands == 8:
        X, y = load_landsat8_samples(return_X_y=True)
    else:  # as tests/export/test_export.py's
        rng = np.random.default_rng(0)
        X = rng.uniform(0.02, 0.6, (600, n_bands))
        y = np.digitize(X[:, 0] - X[:, 1] + X[:, 2] * X[:, 3], [0.0, 0.15])
    return sknd.NDClassifier(random_state=0).fit(X, y), X


def _seconds(run, process, cube):
    """Parsing and running ``process`` (from its JSON text) on ``cube``."""
    text = json.dumps(process)
    start = time.perf_counter()
    run(json.loads(text), cube)
    return time.perf_counter() - start


def defaults(max_graph_nodes):
    import xarray as xr

    run = _run_locally()
    print(
        "| bands | pairs | weights | graph: nodes, JSON, executor | run_udf: JSON, executor "
        "| Earth Engine code |"
    )
    print("|---|---|---|---|---|---|")
    for n_bands in (8, 36, 46):
        clf, X = _default_model(n_bands)
        names = [str(name) for name in clf.band_names_]
        pixels = np.random.default_rng(1).uniform(X.min(0), X.max(0), (24 * 24, n_bands))
        cube = xr.DataArray(
            pixels.T.reshape(n_bands, 24, 24), dims=("bands", "y", "x"), coords={"bands": names}
        )
        run(clf.export_model("openeo", form="udf"), cube)  # imports and registry, once
        graph = clf.export_model("openeo", form="graph")
        nodes = _nodes(graph["process_graph"])
        graph_run = f"{_seconds(run, graph, cube):.1f} s" if nodes <= max_graph_nodes else "-"
        udf = clf.export_model("openeo", form="udf")
        code = clf.export_model("earthengine")
        weights = sum(p.numel() for p in clf.net_.module_.parameters())
        print(
            f"| {n_bands} | {len(clf.pairs_)} | {weights:,} | {nodes:,}, "
            f"{len(json.dumps(graph)) / 1e6:.2f} MB, {graph_run} | "
            f"{len(json.dumps(udf)) / 1e6:.2f} MB, {_seconds(run, udf, cube):.2f} s | "
            f"{len(code) / 1e6:.2f} MB |"
        )


def graph_times():
    """Executor seconds of the pure graph against its nodes: where form="auto" switches."""
    import xarray as xr

    run = _run_locally()
    print("| bands | hidden units | graph nodes | graph JSON | graph executor | run_udf executor |")
    print("|---|---|---|---|---|---|")
    for n_bands, units in [(4, 6), (4, 12), (6, 16), (4, 32), (8, 24)]:
        rng = np.random.default_rng(0)
        X = rng.uniform(0.02, 0.6, (200, n_bands))
        y = (X[:, 0] > X[:, 1]).astype(int) + (X[:, 2] > 0.3)
        clf = sknd.NDClassifier(max_epochs=2, depth=3, hidden_units=units, random_state=0)
        clf.fit(X, y)
        names = [str(name) for name in clf.band_names_]
        cube = xr.DataArray(
            rng.uniform(0.01, 0.7, (n_bands, 24, 24)),
            dims=("bands", "y", "x"),
            coords={"bands": names},
        )
        udf = clf.export_model("openeo", form="udf")
        run(udf, cube)  # imports, once
        graph = clf.export_model("openeo", form="graph")
        print(
            f"| {n_bands} | {units} | {_nodes(graph['process_graph']):,} | "
            f"{len(json.dumps(graph)) / 1e6:.2f} MB | {_seconds(run, graph, cube):.1f} s | "
            f"{_seconds(run, udf, cube):.2f} s |"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bands", type=int, nargs="+", default=[4, 10, 16, 36, 46])
    parser.add_argument("--defaults", action="store_true", help="the default models instead")
    parser.add_argument("--max-graph-nodes", type=int, default=5000)
    parser.add_argument(
        "--graph-times", action="store_true", help="executor time against graph nodes instead"
    )
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    if args.defaults:
        defaults(args.max_graph_nodes)
        return
    if args.graph_times:
        graph_times()
        return
    columns = ["bands", "pairs", "graph nodes", "top-level steps", "deepest chain", "JSON"]
    print("| " + " | ".join([*columns, "auto", "run_udf JSON", "EE code", "export"]) + " |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n_bands in args.bands:
        rng = np.random.default_rng(0)
        X = rng.uniform(0.02, 0.6, (150, n_bands))
        y = np.digitize(X[:, 0] - X[:, 1], [-0.1, 0.1])
        clf = sknd.NDClassifier(recipe="paper", max_epochs=1, random_state=0).fit(X, y)
        start = time.perf_counter()
        process = clf.export_model("openeo", output="proba", form="graph")
        seconds = time.perf_counter() - start
        graph = process["process_graph"]
        auto = clf.export_model("openeo", output="proba")
        udf = clf.export_model("openeo", output="proba", form="udf")
        code = clf.export_model("earthengine", output="proba")
        print(
            f"| {n_bands} | {len(clf.pairs_)} | {_nodes(graph):,} | {len(graph)} | "
            f"{_depth(graph)} | {len(json.dumps(process)) / 1e6:.2f} MB | "
            f"{'graph' if auto == process else 'run_udf'} | "
            f"{len(json.dumps(udf)) / 1e6:.3f} MB | "
            f"{len(code) / 1e3:.0f} kB | {seconds:.2f} s |"
        )


if __name__ == "__main__":
    main()
