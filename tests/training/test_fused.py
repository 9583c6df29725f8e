"""The fused training step (sknd._training._fused): the gradients autograd computes, the shuffles of
TensorBatches, and what it declines. Every architecture x variant x task is also checked in
tests/nd/test_networks.py."""

import pytest
import torch

from sknd._training._adam import FlatAdam
from sknd._training._fused import FusedTrainer
from sknd._training._net import TensorBatches, TensorDataset
from sknd.networks import build_network
from sknd.nn import NormalizedDifference

FUSED_CASES = [
    ("nd", "reflectance", "binary", 2, "auto"),
    ("nd", "reflectance", "binary", 2, "matmul"),
    ("nd", "reflectance", "binary", 4, "gather"),
    ("nd", "signed", "multiclass", 3, "gather"),
    ("nd", "signed", "regression", 2, "matmul"),
    ("nd", "softplus", "regression", 3, "gather"),
    ("nd", "softplus", "binary", 2, "matmul"),
    ("attnd", "reflectance", "binary", 3, "auto"),
    ("attnd", "signed", "multiclass", 2, "gather"),
    ("attnd", "softplus", "regression", 2, "matmul"),
    ("mlp", "reflectance", "binary", 2, "auto"),
    ("mlp", "reflectance", "multiclass", 4, "auto"),
    ("mlp", "reflectance", "regression", 3, "auto"),
    ("nd+raw", "reflectance", "binary", 2, "auto"),
    ("nd+raw", "signed", "multiclass", 3, "gather"),
    ("attnd+raw", "softplus", "regression", 2, "matmul"),
    ("mlp+raw", "reflectance", "binary", 3, "auto"),
]


def _set_method(module, method):
    for sub in module.modules():
        if isinstance(sub, NormalizedDifference):
            sub.method = method


@pytest.mark.parametrize("architecture, variant, task, depth, method", FUSED_CASES)
@pytest.mark.parametrize("batch_size", [8, 300])
def test_fused_gradients_and_loss_match_autograd(
    architecture,
    variant,
    task,
    depth,
    method,
    batch_size,
    task_data,
):
    torch.manual_seed(0)
    X, y, criterion, n_outputs = task_data(task, 40, 5, seed=1)
    if variant != "reflectance":
        X = X - 0.5
    architecture, _, raw = architecture.partition("+")
    passthrough = (X.mean(0).numpy(), X.std(0).numpy()) if raw else None
    module = build_network(
        architecture,
        5,
        n_outputs,
        depth=depth,
        hidden_units=7,
        variant=variant,
        passthrough=passthrough,
    )
    _set_method(module, method)
    with torch.no_grad():  # leave the all-zero initialisation of a and c
        for name, p in module.named_parameters():
            if name.endswith((".a", ".c")):
                p.normal_(0, 0.5)
    optimizer = FlatAdam(module.parameters(), lr=0.01)
    trainer = FusedTrainer.build(module, criterion, optimizer, batch_size)
    assert trainer is not None
    xb, yb = X[:13], y[:13]  # a batch shorter than batch_size

    optimizer.zero_grad()
    loss = criterion(module(xb), yb)
    loss.backward()
    expected = [p.grad.clone() for p in module.parameters()]

    optimizer.zero_grad()
    prepared, aux, terms = trainer._prepare(TensorDataset(X, y))
    with torch.no_grad():
        trainer.forward_backward(prepared[:13], aux[:13], terms[:13])
    for p, grad in zip(module.parameters(), expected):
        torch.testing.assert_close(p.grad, grad, rtol=1e-4, atol=1e-6)
    total = trainer.loss.epoch_total(terms[:13]) / 13
    torch.testing.assert_close(total, loss.detach(), rtol=1e-5, atol=1e-6)


def test_fused_trainer_declines_what_it_does_not_implement():
    module = build_network("nd", 4, 1)
    optimizer = FlatAdam(module.parameters())
    assert FusedTrainer.build(module, torch.nn.L1Loss(), optimizer, 32) is None
    assert (
        FusedTrainer.build(module, torch.nn.BCEWithLogitsLoss(reduction="sum"), optimizer, 32)
        is None
    )
    weighted = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor([2.0]))
    assert FusedTrainer.build(module, weighted, optimizer, 32) is None
    plain = build_network("nd", 4, 1)
    assert (
        FusedTrainer.build(
            plain, torch.nn.BCEWithLogitsLoss(), torch.optim.Adam(plain.parameters()), 32
        )
        is None
    )
    dropout = torch.nn.Sequential(build_network("nd", 4, 1), torch.nn.Dropout())
    assert (
        FusedTrainer.build(
            dropout, torch.nn.BCEWithLogitsLoss(), FlatAdam(dropout.parameters()), 32
        )
        is None
    )


def test_fused_epoch_draws_the_shuffles_of_tensor_batches(task_data):
    X, y, criterion, _ = task_data("binary", 50, 4, seed=3)
    dataset = TensorDataset(X, y)
    module = build_network("nd", 4, 1)
    optimizer = FlatAdam(module.parameters(), lr=0.0)
    trainer = FusedTrainer.build(module, criterion, optimizer, 16)
    seen = []
    original = trainer.forward_backward

    def spy(x, aux, terms):
        seen.append(x.clone())
        original(x, aux, terms)

    trainer.forward_backward = spy
    # Two epochs: the second shuffles the data again (not the first epoch's order, whose
    # buffer it reuses).
    ours = TensorBatches(dataset, 16, True, torch.Generator().manual_seed(5))
    theirs = TensorBatches(dataset, 16, True, torch.Generator().manual_seed(5))
    trainer.run_epoch(ours)
    trainer.run_epoch(ours)
    batches = [xb for _ in range(2) for xb, _ in theirs]
    assert [len(b) for b in seen] == [16, 16, 16, 2] * 2
    for mine, expected in zip(seen, batches, strict=True):
        assert torch.equal(mine, expected)
