"""Size of the exported models (export_model): openEO graph nodes and nesting, Earth Engine code.

For 3-class ND models (depth 2, every band pair, as the defaults keep up to 1,024 pairs)
of 4 to 46 bands: the openEO process graph's nodes (callbacks included), its top-level
steps, the longest chain of nodes (top level and inside any callback: the nesting that
openeo-pg-parser-networkx reads up to about 125 deep), the JSON size, the Earth Engine
code's size and the time ``export_model`` takes. docs/anywhere.md quotes the table.

Run::

    PYTHONPATH=. python benchmarks/bench_export_size.py [--bands 4 10 16 36 46]
"""

import argparse
import json
import time
import warnings

import numpy as np

import sknd


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bands", type=int, nargs="+", default=[4, 10, 16, 36, 46])
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    columns = ["bands", "pairs", "graph nodes", "top-level steps", "deepest chain", "JSON"]
    print("| " + " | ".join([*columns, "EE code", "export"]) + " |")
    print("|---|---|---|---|---|---|---|---|")
    for n_bands in args.bands:
        rng = np.random.default_rng(0)
        X = rng.uniform(0.02, 0.6, (150, n_bands))
        y = np.digitize(X[:, 0] - X[:, 1], [-0.1, 0.1])
        clf = sknd.NDClassifier(recipe="paper", max_epochs=1, random_state=0).fit(X, y)
        start = time.perf_counter()
        process = clf.export_model("openeo", output="proba")
        seconds = time.perf_counter() - start
        graph = process["process_graph"]
        code = clf.export_model("earthengine", output="proba")
        print(
            f"| {n_bands} | {len(clf.pairs_)} | {_nodes(graph):,} | {len(graph)} | "
            f"{_depth(graph)} | {len(json.dumps(process)) / 1e6:.2f} MB | "
            f"{len(code) / 1e3:.0f} kB | {seconds:.2f} s |"
        )


if __name__ == "__main__":
    main()
