"""Parameter counts of the proposed depth-2 pair budget (issue 11): ND vs MLP.

Run: ``PYTHONPATH=. python benchmarks/recipe_param_counts.py``

Budget: keep at most ``floor((0.3 * mlp - n_out) / (2 + n_out))`` pairs, where ``mlp``
is the parameter count of the depth-2 MLP (hidden width clip(n(n-1)/2, 8, 256)) and a
depth-2 ND network with P pairs has ``P * (2 + n_out) + n_out`` parameters.
"""

import numpy as np

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


if __name__ == "__main__":
    main()
