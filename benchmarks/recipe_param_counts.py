"""Parameter counts of the proposed depth-2 pair budget (issue 11): ND vs MLP.

Run: ``PYTHONPATH=. python benchmarks/recipe_param_counts.py``

``--defaults``: instead, the parameter counts of fitted estimators on 10 bands and a
binary target at depths 2-4, under the default recipe and ``recipe="paper"`` (the figures
docs/index.md quotes; tests/docs/test_docs_numbers.py checks the page against the same fits).

Budget: keep at most ``floor((0.3 * mlp - n_out) / (2 + n_out))`` pairs, where ``mlp``
is the parameter count of the depth-2 MLP (hidden width clip(n(n-1)/2, 8, 256)) and a
depth-2 ND network with P pairs has ``P * (2 + n_out) + n_out`` parameters.
"""

import argparse

import numpy as np

from sknd import NDClassifier
from sknd.networks import build_network
from sknd.nn import all_pairs


def count(net):
    return sum(p.numel() for p in net.parameters() if p.requires_grad)


def mlp_params(n, n_out):
    hidden = int(np.clip(n * (n - 1) // 2, 8, 256))
    return hidden * (n + 1) + hidden * n_out + n_out


def budget_pairs(n, n_out, share=0.3):
    return int((share * mlp_params(n, n_out) - n_out) // (2 + n_out))


def main():
    print(
        "| bands | classes | all pairs | kept (budget) | ND all | ND budget | MLP "
        "| ND/MLP all | ND/MLP budget | ND/MLP pairs='auto' |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in (10, 20, 36, 50, 100, 300):
        for k in (2, 5, 10):
            n_out = 1 if k == 2 else k
            n_pairs = n * (n - 1) // 2
            keep = min(n_pairs, budget_pairs(n, n_out))
            mlp = mlp_params(n, n_out)
            nd_all = n_pairs * (2 + n_out) + n_out
            nd_keep = keep * (2 + n_out) + n_out
            nd_auto = min(n_pairs, 1024) * (2 + n_out) + n_out
            if n <= 50:  # the formulas agree with the networks sknd builds
                hidden = int(np.clip(n_pairs, 8, 256))
                assert count(build_network("mlp", n, n_out, hidden_units=hidden)) == mlp
                assert count(build_network("nd", n, n_out, pairs=all_pairs(n)[:keep])) == nd_keep
            print(
                f"| {n} | {k} | {n_pairs} | {keep} | {nd_all} | {nd_keep} | {mlp} "
                f"| {nd_all / mlp:.0%} | {nd_keep / mlp:.0%} | {nd_auto / mlp:.0%} |"
            )


def defaults():
    rng = np.random.default_rng(0)
    X = rng.uniform(0.05, 0.5, size=(200, 10))
    y = (X[:, 1] > X[:, 2]).astype(int)
    print("| recipe | architecture | depth 2 | depth 3 | depth 4 |")
    print("|---|---|---|---|---|")
    for recipe in ("sknd", "paper"):
        for architecture in ("nd", "mlp", "attnd"):
            counts = [
                NDClassifier(architecture=architecture, depth=depth, recipe=recipe, max_epochs=1)
                .fit(X, y)
                .n_parameters_
                for depth in (2, 3, 4)
            ]
            print(f"| {recipe} | {architecture} | " + " | ".join(f"{n:,}" for n in counts) + " |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--defaults", action="store_true", help="counts of fitted estimators")
    if parser.parse_args().defaults:
        defaults()
    else:
        main()
