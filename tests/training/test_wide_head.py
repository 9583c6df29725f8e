"""The recipe's wide head (sknd._training._wide_head): the invariant peer inside the ND network, and
how depth="auto" keeps it."""

import itertools
import re

import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose

from sknd import NDClassifier, NDRegressor
from sknd._data._parts import Part
from sknd._data._tasks import ClassificationTask
from sknd._training import _wide_head
from sknd._training._fused import FusedTrainer
from sknd._training._refinement import Evaluation
from sknd.networks import build_network, describe, forward_rows


def _spectra(n_samples, n_bands=4, seed=0):
    return np.random.default_rng(seed).uniform(0.05, 0.6, size=(n_samples, n_bands))


def _ring(X):
    # A class that no threshold on one linear combination of indices separates: the index
    # of bands 0 and 1 far from its median, either way.
    index = (X[:, 0] - X[:, 1]) / (X[:, 0] + X[:, 1])
    return (np.abs(index - np.median(index)) > 0.25).astype(int)


def _linear(X):
    return ((X[:, 0] - X[:, 1]) / (X[:, 0] + X[:, 1]) > 0).astype(int)


def _network(X, y, width):
    """A depth-3 recipe network on all pairs, Standardize fitted on the classic indices."""
    network = build_network(
        "nd", X.shape[1], 1, depth=3, hidden_units=width, pairs="all", standardize=True
    )
    network[1].fit(torch.as_tensor(forward_rows(network[0], X, len(X))))
    return network


def _head(seed=1, width=32, weight=None):
    """A network and its wide head: 450 training rows, 150 validation rows."""
    X = _spectra(600, seed=seed)
    y = _ring(X)
    network = _network(X, y, width=width)
    weight = (None, None) if weight is None else (weight[:450], weight[450:])
    train, valid = Part(X[:450], y[:450], weight[0]), Part(X[450:], y[450:], weight[1])
    return network, _wide_head.WideHead(network, train, valid, ClassificationTask(y), 0.1, 0)


def test_train_returns_the_validation_of_the_network_it_leaves():
    network, head = _head()
    valid, task = head.valid, head.task
    y = valid.target
    first = [p.detach().clone() for p in network[0].parameters()]
    result = head.train(network)
    # What it returns is the trained network's own validation (the folded head), ...
    again = Evaluation(task, valid, 1000)(network)
    assert result.score == again.score
    assert_allclose(result.row_losses, again.row_losses, rtol=1e-12)
    # ... the ring, which a linear model on the indices cannot draw, is learned, ...
    assert result.score > 0.9 > max(y.mean(), 1 - y.mean())
    # ... and the first block (the indices) is held fixed.
    for before, after in zip(first, network[0].parameters()):
        assert torch.equal(before, after)


def test_the_folded_head_reads_the_indices_and_stays_illumination_invariant():
    X = _spectra(600, seed=2)
    y = _ring(X)
    clf = NDClassifier(random_state=0, verbose=1).fit(X, y)
    widths = [layer.width for layer in describe(clf._module) if layer.kind == "linear"]
    assert clf.depth_ == 3 and widths[0] == _wide_head.WIDTH
    # Scaling all bands changes no index: the same classes, and the probabilities to the
    # rounding of the scaled bands' float32 indices (about 1e-7), which 100 units amplify.
    assert np.array_equal(clf.predict(3.7 * X), clf.predict(X))
    assert_allclose(clf.predict_proba(3.7 * X), clf.predict_proba(X), atol=1e-4)
    assert clf.score(X, y) > 0.9
    assert clf.best_epoch_ == 0 and clf.n_iter_ == 0  # no Adam epochs after the head


def test_refit_trains_a_new_head_on_all_rows_for_the_epochs_train_kept(monkeypatch):
    network, head = _head()
    epochs = []  # the rows of each epoch's dataset
    run_epoch = FusedTrainer.run_epoch
    monkeypatch.setattr(
        FusedTrainer,
        "run_epoch",
        lambda self, it: epochs.append(len(it.dataset)) or run_epoch(self, it),
    )
    head.train(network)
    trained = len(epochs)
    assert set(epochs) == {450} and head.epochs == trained - _wide_head.PATIENCE
    kept = [p.detach().clone() for p in network.parameters()]
    epochs.clear()
    head.refit(network)
    assert epochs == [600] * head.epochs
    # A new head (the same first block), and still the ring's (on rows it now trained on).
    changed = [not torch.equal(a, b) for a, b in zip(kept, network.parameters())]
    assert not any(changed[:2]) and all(changed[2:])
    X, y = head.valid.X, head.valid.target
    assert np.mean((forward_rows(network, X, 1000)[:, 0] > 0) == y) > 0.9


def test_epochs_alternate_the_rows_and_their_noisy_copies():
    _, head = _head()
    epochs = head.data.epochs(450)
    datasets = [next(epochs) for _ in range(2 * _wide_head.NOISY_COPIES + 2)]
    clean = datasets[0]
    assert all(dataset is clean for dataset in datasets[::2])
    copies = datasets[1::2]
    assert len({id(dataset) for dataset in copies}) == _wide_head.NOISY_COPIES
    assert copies[-1] is copies[0]
    assert all(len(dataset) == 450 and dataset.w is None for dataset in datasets)
    assert not torch.equal(copies[0].X, clean.X)
    assert torch.equal(copies[0].y, clean.y)


def test_weighted_rows_weigh_their_epochs_with_mean_one_weights():
    weight = np.random.default_rng(0).integers(1, 4, size=600).astype(float)
    _, head = _head(weight=weight)
    for n_rows in (450, 600):  # training, then training and validation rows
        clean, noisy = itertools.islice(head.data.epochs(n_rows), 2)
        expected = weight[:n_rows] / weight[:n_rows].mean()
        assert_allclose(clean.w.numpy().ravel(), expected, rtol=1e-6)
        assert noisy.w is clean.w


@pytest.mark.parametrize("passthrough", [False, True])
def test_a_kept_head_is_refitted_on_all_rows_and_not_by_step_5(monkeypatch, passthrough):
    from sknd._training import _recipe

    calls = []
    refit, head_refit = _recipe.refit, _wide_head.WideHead.refit
    monkeypatch.setattr(_recipe, "refit", lambda *args: calls.append("step 5") or refit(*args))
    monkeypatch.setattr(
        _wide_head.WideHead,
        "refit",
        lambda *args: calls.append("head") or head_refit(*args),
    )
    X = _spectra(600, seed=2)
    clf = NDClassifier(passthrough=passthrough, random_state=0).fit(X, _ring(X))
    widths = [layer.width for layer in describe(clf._module) if layer.kind == "linear"]
    assert widths[0] == _wide_head.WIDTH  # the head was kept
    assert calls == ["head"]
    # The depth-2 start without a kept head is refitted by step 5, as always.
    calls.clear()
    NDClassifier(random_state=0).fit(X, _linear(X))
    assert calls == ["step 5"]


def test_auto_depth_keeps_the_wide_head_only_beyond_a_standard_error(capsys):
    X = _spectra(600, seed=3)
    NDClassifier(random_state=0, verbose=1).fit(X, _ring(X))
    out = capsys.readouterr().out.replace("\n", " ")
    # The log gives what the rule compares: the mean validation losses and a standard error.
    head, start, error = map(
        float,
        re.search(
            r"wide head of 100 units: validation loss ([\d.]+) against ([\d.]+) at the "
            r"depth-2 start, standard error ([\d.]+): kept, lower by more than a standard error",
            out,
        ).groups(),
    )
    assert head + error < start
    # A linear class boundary on one index: the depth-2 start is as good, and kept.
    clf = NDClassifier(random_state=0, verbose=1).fit(X, _linear(X))
    out = capsys.readouterr().out
    assert "not kept: not lower by more than a standard error" in out
    widths = [layer.width for layer in describe(clf._module) if layer.kind == "linear"]
    assert _wide_head.WIDTH not in widths


@pytest.mark.parametrize(
    "make, reason",
    [
        (
            lambda X: NDClassifier(max_epochs=3, verbose=1, random_state=0).fit(
                X[:100], _ring(X)[:100]
            ),
            "fewer than 100 training rows",
        ),
        (
            lambda X: NDRegressor(max_epochs=3, verbose=1, random_state=0).fit(
                X, X[:, 0] / X[:, 1]
            ),
            "regression",
        ),
    ],
)
def test_no_wide_head_where_it_cannot_train_and_verbose_says_why(make, reason, capsys):
    model = make(_spectra(300, seed=4))
    assert f"no wide head: {reason}" in capsys.readouterr().out
    assert np.isfinite(model.predict(_spectra(5, seed=5))).all()


def test_the_hidden_units_parameter_sets_the_wide_heads_width():
    X = _spectra(600, seed=3)
    clf = NDClassifier(hidden_units=24, random_state=0).fit(X, _ring(X))
    widths = [layer.width for layer in describe(clf._module) if layer.kind == "linear"]
    assert clf.depth_ == 3 and widths[0] == 24
