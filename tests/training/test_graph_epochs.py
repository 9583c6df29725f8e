"""Segmented training epochs (sknd._training._graph_epochs): the epochs of the step-by-step fused
trainer, replayed as CUDA graphs on a GPU. On the CPU the segments run eagerly and must
train exactly as the step-by-step epoch; the CUDA cases check the captured graphs."""

import numpy as np
import pytest
import torch

from sknd import NDClassifier
from sknd._training import _graph_epochs
from sknd._training._adam import FlatAdam
from sknd._training._fused import FusedTrainer
from sknd._training._graph_epochs import GraphEpochs
from sknd._training._net import TensorBatches, TensorDataset
from sknd.networks import build_network

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _trainer(task_data, task, batch_size, segmented, dtype=torch.float64, device="cpu"):
    X, y, criterion, n_outputs = task_data(task, 203, 5, seed=2)
    torch.manual_seed(0)
    module = build_network("nd", 5, n_outputs, depth=2, hidden_units=6).to(dtype).to(device)
    optimizer = FlatAdam(module.parameters(), lr=0.02, weight_decay=1e-3)
    optimizer.zero_grad()
    trainer = FusedTrainer.build(module, criterion, optimizer, batch_size)
    trainer.segmented = segmented
    X, y = X.to(dtype).to(device), y.to(device)
    if y.is_floating_point():
        y = y.to(dtype)
    weight = torch.linspace(0.5, 1.5, len(X), dtype=dtype, device=device).reshape(-1, 1)
    return trainer, module, X, y, weight


def _epochs(trainer, dataset, shuffle, n_epochs, between=None):
    generator = torch.Generator().manual_seed(7)
    iterator = TensorBatches(dataset, trainer.batch_size, shuffle, generator)
    losses = []
    for epoch in range(n_epochs):
        total, n_samples, n_batches = trainer.run_epoch(iterator)
        losses.append(total.item())
        if between is not None:
            between(epoch, generator, trainer.optimizer)
    return losses, generator.get_state(), n_batches


@pytest.mark.parametrize("task", ["binary", "multiclass", "regression"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shuffle", [False, True])
def test_segmented_epochs_train_as_the_step_by_step_epoch(
    task, weighted, shuffle, task_data, monkeypatch
):
    # Segments of 3 batches of 16 rows: 203 rows are 4 segments and a shorter fifth, whose
    # last batch is shorter too.
    monkeypatch.setattr(_graph_epochs, "SEGMENT_ROWS", 48)
    results = []
    for segmented in (False, True):
        trainer, module, X, y, weight = _trainer(task_data, task, 16, segmented)
        dataset = TensorDataset(X, y, weight if weighted else None)
        losses, state, n_batches = _epochs(trainer, dataset, shuffle, 3)
        parameters = [p.detach().clone() for p in module.parameters()]
        results.append((losses, state, n_batches, parameters, trainer.optimizer))
    (losses, state, n_batches, parameters, optimizer), theirs = results
    np.testing.assert_allclose(losses, theirs[0], rtol=1e-12)
    assert torch.equal(state, theirs[1])  # the generator drew exactly the same
    assert n_batches == theirs[2] == 13
    assert optimizer.param_groups[0]["step"] == theirs[4].param_groups[0]["step"] == 39
    for p, q in zip(parameters, theirs[3]):
        torch.testing.assert_close(p, q, rtol=1e-10, atol=1e-12)


def test_orders_drawn_ahead_give_way_to_other_draws_and_new_settings(task_data):
    """An order drawn ahead is dropped when something else drew from the generator; the
    learning rate and betas set between epochs apply to the next epoch."""

    def between(epoch, generator, optimizer):
        if epoch == 0:
            torch.randint(10, (5,), generator=generator)  # e.g. a user's callback
        group = optimizer.param_groups[0]
        group["lr"] *= 0.5
        group["betas"] = (0.8, 0.99)

    results = []
    for segmented in (False, True):
        trainer, module, X, y, _ = _trainer(task_data, "binary", 32, segmented)
        losses, state, _ = _epochs(trainer, TensorDataset(X, y), True, 3, between)
        results.append((losses, state, [p.detach().clone() for p in module.parameters()]))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    assert torch.equal(results[0][1], results[1][1])
    for p, q in zip(results[0][2], results[1][2]):
        torch.testing.assert_close(p, q, rtol=1e-10, atol=1e-12)


def test_segments_bound_their_rows():
    class Trainer:
        batch_size = 1000

        class loss:
            n_columns = 1

    prepared = torch.zeros(1_000_001, 3)
    epochs = GraphEpochs(Trainer(), prepared, torch.zeros(1_000_001, 2), capture=True)
    assert not epochs.capture  # no capture off CUDA
    assert epochs.n_batches == 1001
    assert epochs.bounds[0] == (0, 128_000) and epochs.bounds[-1] == (896_000, 1_000_001)
    assert sorted(epochs.segments) == [104_001, 128_000]


@CUDA
@pytest.mark.parametrize("task", ["binary", "multiclass", "regression"])
@pytest.mark.parametrize("batch_size", [16, 256])
@pytest.mark.parametrize("segment_rows", [48, _graph_epochs.SEGMENT_ROWS])
def test_cuda_graphs_replay_the_eager_segments(
    task, batch_size, segment_rows, task_data, monkeypatch
):
    # Several segments (48 rows): the first epoch's later segments are captured already.
    monkeypatch.setattr(_graph_epochs, "SEGMENT_ROWS", segment_rows)
    results = []
    for capture in (False, True):
        trainer, module, X, y, weight = _trainer(
            task_data, task, batch_size, True, torch.float32, "cuda"
        )
        trainer.capture = capture
        losses, state, _ = _epochs(trainer, TensorDataset(X, y, weight), True, 4)
        epochs = trainer._epochs[1]
        assert epochs.capture_error is None
        assert epochs.graphed == capture
        results.append((losses, state, [p.detach().clone() for p in module.parameters()]))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5)
    assert torch.equal(results[0][1], results[1][1])
    for p, q in zip(results[0][2], results[1][2]):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


@CUDA
def test_cuda_fit_trains_with_graphs(band_data, monkeypatch):
    seen = []
    run_epoch = GraphEpochs.run_epoch

    def spy(self, iterator, weighted):
        result = run_epoch(self, iterator, weighted)
        seen.append((self.graphed, self.capture_error))
        return result

    monkeypatch.setattr(GraphEpochs, "run_epoch", spy)
    X, y = band_data(400)
    NDClassifier(device="cuda", max_epochs=4, early_stopping=False, random_state=0).fit(X, y)
    assert seen == [(False, None)] + [(True, None)] * 3
