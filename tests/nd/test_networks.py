"""Network builders and their description: parameter counts, and every backend against autograd."""

import numpy as np
import pytest
import torch
from agreement import assert_close_across_paths

from sknd._inference import _evaluator
from sknd._inference._evaluator import FastNetwork
from sknd._nd._formula import VARIANTS
from sknd._training._adam import FlatAdam
from sknd._training._fused import FusedTrainer, Unsupported
from sknd._training._net import TensorDataset, weighted_loss
from sknd.networks import (
    ARCHITECTURES,
    AppendNormalizedDifference,
    AttentionND,
    build_network,
    describe,
    forward_rows,
)
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


# ------------------------------------------------------------ backend agreement
# Every backend reads the network through sknd.networks.describe. Parametrised over every
# architecture, variant, task and the raw passthrough: a new architecture or layer kind fails
# here, naming the backend that lacks it, instead of silently losing a fast path.

TASKS = {  # criterion and number of outputs
    "binary": (torch.nn.BCEWithLogitsLoss(), 1),
    "multiclass": (torch.nn.CrossEntropyLoss(), 3),
    "regression": (torch.nn.MSELoss(), 2),
}
N_BANDS = 5


def _network(architecture, variant, task, passthrough, depth, standardize=False):
    generator = torch.Generator().manual_seed(0)
    X = torch.rand(64, N_BANDS, generator=generator) + 0.05
    if variant != "reflectance":
        X = 4 * X - 2  # signed inputs
    criterion, n_outputs = TASKS[task]
    if task == "binary":
        y = (X[:, 0] > X[:, 1]).float().reshape(-1, 1)
    elif task == "multiclass":
        y = torch.randint(0, n_outputs, (len(X),), generator=generator)
    else:
        y = torch.randn(len(X), n_outputs, generator=generator)
    torch.manual_seed(1)
    module = build_network(
        architecture,
        N_BANDS,
        n_outputs,
        depth=depth,
        hidden_units=6,
        variant=variant,
        passthrough=(X.mean(0).numpy(), X.std(0).numpy()) if passthrough else None,
        standardize=standardize,
    )
    with torch.no_grad():  # move the band weights away from their all-equal start
        for name, p in module.named_parameters():
            if name.endswith((".a", ".c")):
                p.normal_(0, 0.5, generator=generator)
        if standardize:
            module[1].fit(module[0](X))
    return module, X, y, criterion


BACKEND_CASES = [
    pytest.param(architecture, variant, task, passthrough, depth, standardize,
                 id=f"{architecture}-{variant}-{task}{'-raw' if passthrough else ''}"
                 f"{'-std' if standardize else ''}-d{depth}")
    for architecture in ARCHITECTURES
    for variant in VARIANTS
    for task in TASKS
    for passthrough in (False, True)
    for standardize in (False, True)
    for depth in (2, 3)
]  # fmt: skip


@pytest.mark.parametrize(
    "architecture, variant, task, passthrough, depth, standardize", BACKEND_CASES
)
def test_every_backend_agrees_with_autograd(
    architecture, variant, task, passthrough, depth, standardize
):
    module, X, y, criterion = _network(architecture, variant, task, passthrough, depth, standardize)
    records = describe(module)
    assert records is not None, "sknd.networks.describe does not know this network"

    # Fused training step: the same loss and gradients as autograd.
    optimizer = FlatAdam(module.parameters(), lr=0.01)
    try:
        trainer = FusedTrainer(module, criterion, optimizer, batch_size=16)
    except Unsupported as exc:
        pytest.fail(f"the fused training step (sknd._training._fused) lacks: {exc}")
    optimizer.zero_grad()
    loss = criterion(module(X[:16]), y[:16])
    loss.backward()
    expected = [p.grad.clone() for p in module.parameters()]
    optimizer.zero_grad()
    prepared, aux, terms = trainer._prepare(TensorDataset(X, y))
    with torch.no_grad():
        trainer.forward_backward(prepared[:16], aux[:16], terms[:16])
    for (name, p), grad in zip(module.named_parameters(), expected):
        torch.testing.assert_close(p.grad, grad, rtol=1e-4, atol=1e-6, msg=f"gradient of {name}")
    torch.testing.assert_close(trainer.loss.epoch_total(terms[:16]) / 16, loss.detach())

    # ... and with sample weights (some zero), the gradients of the weighted loss.
    weight = torch.rand(len(X), 1, generator=torch.Generator().manual_seed(1)) * 3
    weight[::5] = 0
    optimizer.zero_grad()
    loss = weighted_loss(criterion, module(X[:16]), y[:16], weight[:16])
    loss.backward()
    expected = [p.grad.clone() for p in module.parameters()]
    optimizer.zero_grad()
    trainer._data = None
    prepared, aux, terms = trainer._prepare(TensorDataset(X, y, weight))
    with torch.no_grad():
        trainer.forward_backward(prepared[:16], aux[:16], terms[:16], weighted=True)
    for (name, p), grad in zip(module.named_parameters(), expected):
        torch.testing.assert_close(p.grad, grad, rtol=1e-4, atol=1e-6, msg=f"weighted {name}")
    total = (trainer.loss.sample_losses(terms[:16]) * weight[:16, 0]).sum() / 16
    torch.testing.assert_close(total, loss.detach())

    # Numpy and numba evaluators (raster inference): the torch forward pass.
    with torch.no_grad():
        reference = module(X).numpy()
    checks = dict(non_negative=False, estimator_name="test", feature_names=None)
    try:
        fast = FastNetwork.for_network(records, N_BANDS, None, **checks)
    except NotImplementedError as exc:
        pytest.fail(str(exc))
    pixels = X.numpy()
    kernels = [None] + ([_evaluator._compiled_kernels()] if _evaluator._compiled_kernels() else [])
    for compiled in kernels:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_evaluator, "_compiled_kernels", lambda compiled=compiled: compiled)
            got = fast(pixels)
        backend = "numba" if compiled else "numpy"
        np.testing.assert_allclose(got, reference, rtol=1e-4, atol=1e-5, err_msg=backend)


def test_forward_rows_values_do_not_depend_on_the_chunks():
    net = build_network("attnd", n_features=4, n_outputs=3, depth=3)
    X = np.random.default_rng(0).uniform(0.05, 0.6, size=(9000, 4)).astype(np.float32)
    # More rows than a CPU pass takes, the last pass partial.
    whole = forward_rows(net, X, rows=65_536)
    assert whole.shape == (9000, 3) and whole.dtype == np.float64
    pieces = [forward_rows(net, X[a:b], rows=b - a) for a, b in [(0, 1), (1, 5000), (5000, 9000)]]
    # Within rounding: torch's BLAS (MKL) takes other kernels for one row than for a block,
    # and other ones on Intel than on AMD processors (1 ulp seen on a Xeon); the float64
    # pass keeps that at the last bits instead of float32's, which the output layer amplifies.
    bound = dict(ulps=8, atol=1e-15, reason="float64 passes of other sizes: other BLAS kernels")
    assert_close_across_paths(np.concatenate(pieces), whole, **bound)
    assert_close_across_paths(forward_rows(net, X, rows=7)[-9:], whole[-9:], **bound)
    assert forward_rows(net, X[:0], rows=5).shape == (0, 3)


def test_describe_refuses_unknown_layers():
    class Custom(torch.nn.Linear):
        pass

    assert describe(torch.nn.Sequential(NormalizedDifference(3), Custom(3, 1))) is None
    assert describe(torch.nn.Linear(3, 1)) is None
    assert describe(torch.nn.Sequential()) is None
    records = describe(build_network("mlp", 3, 2, passthrough=([0.0] * 3, [1.0] * 3)))
    assert [layer.kind for layer in records] == ["passthrough", "linear"]
    assert [layer.kind for layer in records[0].inner] == ["linear", "relu"]
    assert records[0].nd is None and records[0].width == 3 + 3


def test_attention_gate_on_image_patches_is_a_1x1_convolution():
    block = AttentionND(4)
    x = torch.rand(2, 4, 3, 5)
    expected = block(x.permute(0, 2, 3, 1).reshape(-1, 4))
    out = block(x)
    assert out.shape == (2, 6, 3, 5)
    torch.testing.assert_close(out.permute(0, 2, 3, 1).reshape(-1, 6), expected)


def test_append_normalized_difference_keeps_the_bands_and_learns_the_indices():
    block = AppendNormalizedDifference(3, pairs=[(2, 0)])
    x = torch.rand(2, 3, 4, 4, requires_grad=True)
    out = block(x)
    assert out.shape == (2, 4, 4, 4) and block.n_outputs == 4
    torch.testing.assert_close(out[:, :3], x)
    torch.testing.assert_close(
        out[:, 3], (x[:, 2] - x[:, 0]) / (x[:, 2] + x[:, 0] + 1e-6 / np.log(2))
    )
    out[:, 3].sum().backward()
    assert block.nd.a.grad.abs().item() > 0
    last = AppendNormalizedDifference(3, dim=-1)(torch.rand(2, 4, 4, 3))
    assert last.shape == (2, 4, 4, 6)
