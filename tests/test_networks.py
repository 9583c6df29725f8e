"""Network builders: the paper's architectures and parameter counts."""

import pytest
import torch

from sknd.networks import AttentionND, build_network
from sknd.nn import NormalizedDifference

# Paper, Table 2: 10 bands, binary target (one output unit).
PAPER_COUNTS = {
    ("nd", 2): 136,
    ("nd", 3): 2206,
    ("nd", 4): 4276,
    ("mlp", 2): 541,
    ("mlp", 3): 2611,
    ("mlp", 4): 4681,
    ("attnd", 2): 631,
    ("attnd", 3): 2701,
    ("attnd", 4): 4771,
}


@pytest.mark.parametrize("architecture, depth", sorted(PAPER_COUNTS))
def test_parameter_counts_match_the_paper(architecture, depth):
    net = build_network(architecture, n_features=10, n_outputs=1, depth=depth)
    assert sum(p.numel() for p in net.parameters()) == PAPER_COUNTS[architecture, depth]


@pytest.mark.parametrize("depth", [2, 3, 5])
def test_depth_counts_linear_layers_after_the_first(depth):
    net = build_network("nd", n_features=4, n_outputs=3, depth=depth, hidden_units=7)
    assert isinstance(net[0], NormalizedDifference)
    linears = [m for m in net if isinstance(m, torch.nn.Linear)]
    assert len(linears) == depth - 1
    assert net(torch.rand(2, 4)).shape == (2, 3)


def test_attnd_gates_the_indices():
    torch.manual_seed(0)
    block = AttentionND(3)
    x = torch.rand(5, 3)
    gate = torch.sigmoid(block.gate(x))
    torch.testing.assert_close(block(x), block.nd(x) * gate)


def test_builder_rejects_unknown_architecture_and_shallow_depth():
    with pytest.raises(ValueError, match="architecture"):
        build_network("cnn", 4, 1)
    with pytest.raises(ValueError, match="depth"):
        build_network("nd", 4, 1, depth=1)
