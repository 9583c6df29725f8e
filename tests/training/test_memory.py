"""Tests of what a fit needs in memory (sknd/_training/_memory.py); the estimators'
refusals of fits too large for the machine are in tests/estimators/test_contract.py."""

import pytest

from sknd._training._memory import NetworkShape, network_size
from sknd.networks import build_network


@pytest.mark.parametrize("architecture", ["nd", "attnd", "mlp"])
@pytest.mark.parametrize("depth", [2, 3, 4])
@pytest.mark.parametrize("passthrough", [False, True])
def test_network_size_counts_the_parameters_build_network_builds(architecture, depth, passthrough):
    n_features, n_outputs, hidden = 5, 3, 7
    scaling = ([0.0] * n_features, [1.0] * n_features) if passthrough else None
    net = build_network(
        architecture, n_features, n_outputs, depth, hidden, passthrough=scaling, standardize=True
    )
    params, _, first_width = network_size(
        NetworkShape(architecture, n_features, 10, n_outputs, depth, hidden, passthrough)
    )
    assert params == sum(p.numel() for p in net.parameters())
    width = 10 if architecture != "mlp" else hidden
    assert first_width == width + (n_features if passthrough else 0)
