"""Training through skorch (sknd._training._net, _batches, _callbacks): the fused step inside fits,
history, callbacks, seeding."""

import warnings

import numpy as np
import pytest
import torch
from skorch.callbacks import EpochTimer

from sknd import NDClassifier, NDRegressor
from sknd._training._batches import TensorBatches, TensorDataset
from sknd._training._fused import FusedTrainer
from sknd.networks import build_network


@pytest.mark.parametrize(
    "estimator",
    [
        NDClassifier(max_epochs=4, batch_size=16, random_state=0),
        NDClassifier(
            architecture="attnd",
            variant="softplus",
            depth=3,
            max_epochs=4,
            batch_size=16,
            random_state=0,
        ),
        NDRegressor(max_epochs=4, batch_size=16, random_state=0, early_stopping=False),
        NDClassifier(passthrough=True, depth=3, max_epochs=4, batch_size=16, random_state=0),
    ],
)
def test_fused_and_autograd_fits_agree(estimator, monkeypatch, band_data):
    X, y = band_data()
    if isinstance(estimator, NDRegressor):
        # With noise: the tuned ridge start fits a noiseless index almost exactly, and losses
        # near 1e-3 would compare float32 rounding rather than the two training steps.
        noise = np.random.default_rng(0).normal(0, 0.05, len(X))
        y = X[:, 1] / (X[:, 2] + X[:, 1]) + noise
    fused = clone_fit(estimator, X, y)
    monkeypatch.setattr(FusedTrainer, "build", classmethod(lambda cls, *args: None))
    plain = clone_fit(estimator, X, y)
    np.testing.assert_allclose(fused.loss_curve_, plain.loss_curve_, rtol=1e-4)
    np.testing.assert_allclose(fused.coef_a_, plain.coef_a_, rtol=1e-3, atol=1e-5)
    out_fused = fused.predict_proba(X) if hasattr(fused, "predict_proba") else fused.predict(X)
    out_plain = plain.predict_proba(X) if hasattr(plain, "predict_proba") else plain.predict(X)
    np.testing.assert_allclose(out_fused, out_plain, rtol=1e-3, atol=1e-5)


def clone_fit(estimator, X, y):
    from sklearn.base import clone

    return clone(estimator).fit(X, y)


def test_fit_uses_the_fused_trainer_and_keeps_epoch_history(band_data):
    X, y = band_data()
    model = NDClassifier(max_epochs=3, batch_size=16, random_state=0).fit(X, y)
    assert list(model.history_.columns) == ["epoch", "train_loss", "valid_loss", "valid_score"]
    assert model.history_.notna().all().all()
    calls = []
    original = FusedTrainer.run_epoch

    def spy(self, iterator):
        calls.append(iterator.batch_size)
        return original(self, iterator)

    try:
        FusedTrainer.run_epoch = spy
        NDClassifier(depth=2, max_epochs=3, batch_size=16, random_state=0).fit(X, y)
    finally:
        FusedTrainer.run_epoch = original
    assert calls == [16, 16, 16]


def test_callbacks_asking_for_training_batches_get_them(monkeypatch, task_data):
    from skorch.callbacks import Callback

    from sknd._training._adam import FlatAdam as Adam
    from sknd._training._net import Net

    class CountBatches(Callback):
        def initialize(self):
            self.training, self.validation = 0, 0
            return self

        def on_batch_end(self, net, training=False, **kwargs):
            if training:
                self.training += 1
            else:
                self.validation += 1

    fused_epochs = []
    original = FusedTrainer.run_epoch
    monkeypatch.setattr(
        FusedTrainer, "run_epoch", lambda self, it: fused_epochs.append(1) or original(self, it)
    )
    X, y, _, _ = task_data("binary", 40, 4, seed=0)
    counter = CountBatches()
    net = Net(
        module=build_network("nd", 4, 1),
        criterion=torch.nn.BCEWithLogitsLoss,
        optimizer=Adam,
        max_epochs=2,
        batch_size=16,
        train_split=None,
        iterator_train=TensorBatches,
        callbacks=[counter],
        verbose=0,
    )
    net.fit(TensorDataset(X, y), None)
    assert counter.training == 2 * 3
    assert fused_epochs == []
    assert list(net.history[:, "train_batch_count"]) == [3, 3]
    assert all(isinstance(v, float) for v in net.history[:, "train_loss"])


def test_same_seed_same_model_and_global_rng_untouched(band_data):
    X, y = band_data()
    state = torch.random.get_rng_state()
    first = NDClassifier(max_epochs=5, random_state=3).fit(X, y)
    second = NDClassifier(max_epochs=5, random_state=3).fit(X, y)
    assert torch.equal(torch.random.get_rng_state(), state)
    np.testing.assert_array_equal(first.predict_proba(X), second.predict_proba(X))
    np.testing.assert_array_equal(first.coef_a_, second.coef_a_)


def test_fitted_module_owns_its_parameters(band_data):
    X, y = band_data()
    model = NDClassifier(max_epochs=2, depth=3, random_state=0).fit(X, y)
    storages = [p.untyped_storage().data_ptr() for p in model._module.parameters()]
    assert len(set(storages)) == len(storages)


# ---------------------------------------------------------------------- user callbacks
# skorch callbacks passed as callbacks=[(name, callback), ...] (see user_callbacks).


def _fused_epochs(monkeypatch):
    """A list that gets one entry per epoch trained by the fused step."""
    epochs = []
    original = FusedTrainer.run_epoch

    def spy(self, iterator):
        epochs.append(1)
        return original(self, iterator)

    monkeypatch.setattr(FusedTrainer, "run_epoch", spy)
    return epochs


def test_epoch_level_callbacks_keep_the_fast_path_and_record_in_net_history(monkeypatch, band_data):
    from skorch.callbacks import LRScheduler

    X, y = band_data()
    scheduler = LRScheduler("StepLR", step_size=2, gamma=0.5)
    fused = _fused_epochs(monkeypatch)
    model = NDClassifier(
        max_epochs=5, early_stopping=False, random_state=0, callbacks=[("lr", scheduler)]
    ).fit(X, y)
    assert len(fused) == 5
    assert model.net_.history[:, "event_lr"] == [0.01, 0.01, 0.005, 0.005, 0.0025]
    assert list(model.history_.columns) == [
        "epoch", "train_loss", "valid_loss", "valid_score", "event_lr"
    ]  # fmt: skip
    assert model.history_["event_lr"].tolist() == model.net_.history[:, "event_lr"]
    assert model.net_.optimizer_.param_groups[0]["lr"] == pytest.approx(0.0025)
    # The parameter is stored as given: each fit runs copies.
    assert not hasattr(scheduler, "lr_scheduler_")
    assert model.net_.callbacks_[-1][1] is not scheduler
    # The schedule changes training: the same fit without it ends elsewhere.
    plain = NDClassifier(max_epochs=5, early_stopping=False, random_state=0).fit(X, y)
    assert not np.allclose(model.coef_a_, plain.coef_a_)


def _scheduled_optimizer():
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    return optimizer, torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)


def test_mark_stepped_silences_the_scheduler_warning():
    """Pins the torch internal mark_stepped sets (optimizer._opt_called): a scheduler stepped
    before its optimizer warns, and stops warning once the optimizer is marked as stepped."""
    from sknd._training._net import mark_stepped

    optimizer, scheduler = _scheduled_optimizer()
    with pytest.warns(UserWarning, match=r"lr_scheduler\.step\(\)` before `optimizer\.step"):
        scheduler.step()
    optimizer, scheduler = _scheduled_optimizer()
    mark_stepped(optimizer)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scheduler.step()


def test_fused_epochs_tell_a_scheduler_the_optimizer_stepped(monkeypatch, band_data):
    from skorch.callbacks import LRScheduler

    X, y = band_data()
    fused = _fused_epochs(monkeypatch)
    schedule = ("lr", LRScheduler("StepLR", step_size=1, gamma=0.5))
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=r".*lr_scheduler\.step\(\)", category=UserWarning)
        NDClassifier(max_epochs=3, early_stopping=False, random_state=0, callbacks=[schedule]).fit(
            X, y
        )
    assert len(fused) == 3  # FlatAdam's fused update never calls optimizer.step


def test_batch_level_callbacks_get_every_batch_on_the_plain_path(monkeypatch, capsys, band_data):
    from skorch.callbacks import LRScheduler, ProgressBar

    X, y = band_data(n_samples=100)
    fused = _fused_epochs(monkeypatch)
    model = NDClassifier(
        max_epochs=2,
        batch_size=16,
        random_state=0,
        callbacks=[
            ("progress", ProgressBar()),
            ("cyclic", LRScheduler("CyclicLR", base_lr=1e-3, max_lr=0.02, step_every="batch")),
        ],
    ).fit(X, y)
    assert fused == []
    batches = model.net_.history[-1, "batches"]
    # 80 training rows in batches of 16, 20 validation rows in one batch.
    assert [b["train_batch_size"] for b in batches if "train_batch_size" in b] == [16] * 5
    assert sum("valid_batch_size" in b for b in batches) == 1
    assert all(isinstance(b["train_loss"], float) for b in batches if "train_loss" in b)
    assert len(model.net_.history[:, "batches", :, "event_lr"][0]) == 5
    assert "it/s" in capsys.readouterr().err


def test_every_callback_sees_the_epoch_early_stopping_stops_on(band_data):
    from skorch.callbacks import EpochScoring, PrintLog

    X, y = band_data()
    lines = []

    def minus_loss(net, X, y):
        return -float(net.history[-1, "valid_loss"])

    model = NDClassifier(
        max_epochs=100,
        patience=2,
        lr=0.05,
        random_state=0,
        callbacks=[
            ("score", EpochScoring(minus_loss, name="minus_loss", use_caching=False)),
            ("log", PrintLog(sink=lines.append)),
        ],
        verbose=1,
    ).fit(X, y)
    assert model.n_iter_ < 100
    assert len(model.net_.history[:, "minus_loss"]) == model.n_iter_
    # One table (the user's PrintLog replaces verbose's), down to the last epoch.
    header, rule, *rows = lines
    assert "minus_loss" in header and set(rule) == {"-", " "}
    assert [row.split()[0] for row in rows] == [str(i + 1) for i in range(model.n_iter_)]


def test_skorch_early_stopping_next_to_sknds(band_data):
    from skorch.callbacks import EarlyStopping

    X, y = band_data()
    stopper = EarlyStopping(monitor="train_loss", patience=1, threshold=1.0)
    model = NDClassifier(
        max_epochs=50, patience=40, random_state=0, callbacks=[("stop", stopper)]
    ).fit(X, y)
    # The skorch stopper ends training (threshold: a 100 % improvement every epoch) and
    # sknd's restores its best epoch, as always.
    assert model.n_iter_ == 2
    assert model.best_epoch_ in (0, 1, 2)

    restoring = [("stop", EarlyStopping(load_best=True))]
    with pytest.raises(ValueError, match="early_stopping=False"):
        NDClassifier(max_epochs=3, callbacks=restoring).fit(X, y)
    alone = NDClassifier(
        max_epochs=50, early_stopping=False, lr=0.05, random_state=0, callbacks=restoring
    ).fit(X[:80], y[:80], X_val=X[80:], y_val=y[80:])
    assert alone.n_iter_ < 50
    assert alone.best_epoch_ is None


def test_checkpoint_then_load_init_state(tmp_path, band_data):
    from skorch.callbacks import Checkpoint, LoadInitState

    X, y = band_data()
    settings = dict(recipe="paper", early_stopping=False, random_state=0)
    # Without the optimizer's state, whose learning rate would replace lr below.
    checkpoint = Checkpoint(dirname=str(tmp_path), monitor=None, f_optimizer=None)
    first = NDClassifier(max_epochs=4, callbacks=[("checkpoint", checkpoint)], **settings)
    first.fit(X, y)
    saved = torch.load(tmp_path / "params.pt", weights_only=True)
    np.testing.assert_allclose(saved["0.a"].numpy(), first.coef_a_, rtol=1e-6)

    # A new fit that starts from the checkpoint (a tiny lr: it barely moves off it).
    resumed = NDClassifier(
        max_epochs=1, lr=1e-9, callbacks=[("load", LoadInitState(checkpoint))], **settings
    ).fit(X, y)
    np.testing.assert_allclose(resumed.coef_a_, first.coef_a_, atol=1e-6)
    # The checkpoint's history comes along: epochs continue from it.
    assert resumed.history_["epoch"].tolist() == [1, 2, 3, 4, 5]


def test_load_init_state_is_what_early_stopping_starts_from(tmp_path, band_data):
    from skorch.callbacks import Checkpoint, LoadInitState

    X, y = band_data(n_samples=400)
    y = np.where(np.random.default_rng(1).random(len(y)) < 0.2, 1 - y, y)  # label noise
    fit = dict(X=X[:300], y=y[:300], X_val=X[300:], y_val=y[300:])
    checkpoint = Checkpoint(dirname=str(tmp_path), monitor=None, f_optimizer=None)
    NDClassifier(max_epochs=30, lr=0.05, random_state=0, callbacks=[("cp", checkpoint)]).fit(**fit)
    # lr=1e-9: no epoch beats the loaded start, which early stopping keeps (epoch 0) with its
    # own score, not that of the network the recipe built before the checkpoint was loaded.
    resumed = NDClassifier(
        max_epochs=2, lr=1e-9, random_state=1, callbacks=[("load", LoadInitState(checkpoint))]
    ).fit(**fit)
    assert resumed.best_epoch_ == 0
    loaded = resumed.to_torch()
    loaded.load_state_dict(torch.load(tmp_path / "params.pt", weights_only=True))
    logits = loaded(torch.as_tensor(X[300:], dtype=torch.float32)).detach().numpy()
    accuracy = np.mean((logits[:, 0] > 0) == y[300:])
    assert resumed.best_validation_score_ == pytest.approx(accuracy)
    fresh = NDClassifier(max_epochs=2, lr=1e-9, random_state=1).fit(**fit)
    assert fresh.best_validation_score_ != pytest.approx(accuracy)


def test_a_callback_that_raises_leaves_the_model_unchanged(band_data):
    from skorch.callbacks import Callback

    class Fails(Callback):
        def __init__(self, epoch):
            self.epoch = epoch

        def on_epoch_end(self, net, **kwargs):
            if net.history[-1, "epoch"] == self.epoch:
                raise RuntimeError("callback failed")

    X, y = band_data()
    model = NDClassifier(max_epochs=3, random_state=0, callbacks=[("fails", Fails(2))])
    with pytest.raises(RuntimeError, match="callback failed"):
        model.fit(X, y)
    assert not hasattr(model, "net_") and not hasattr(model, "n_features_in_")

    model.set_params(callbacks=None).fit(X, y)
    coef, net = model.coef_a_.copy(), model.net_
    # A warm start fails at its second epoch; partial_fit (epochs 4, 5 ...) in its second call.
    model.set_params(callbacks=[("fails", Fails(2))], warm_start=True)
    with pytest.raises(RuntimeError, match="callback failed"):
        model.fit(X, y)
    model.set_params(callbacks=[("fails", Fails(model.n_iter_ + 2))])
    model.partial_fit(X, y)
    coef, net = model.coef_a_.copy(), model.net_
    with pytest.raises(RuntimeError, match="callback failed"):
        model.partial_fit(X, y)
    assert model.net_ is net and model.n_iter_ == 4
    np.testing.assert_array_equal(model.coef_a_, coef)
    np.testing.assert_array_equal(model.module_[0].a.detach().numpy(), coef)


@pytest.mark.parametrize(
    "callbacks, message",
    [
        ("progress", "must be an instance of 'list' or None"),
        ([object()], "Callback or a \\(name, callback\\) pair"),
        ([EpochTimer(), EpochTimer(), ("EpochTimer_1", EpochTimer())], "used twice"),
        ([("x", "not a callback")], "skorch.callbacks.Callback"),
        ([("early_stopping", None)], "skorch.callbacks.Callback"),
        ("own_name", "sknd's own"),
        ("twice", "used twice"),
    ],
)
def test_callbacks_sknd_cannot_run_are_refused(callbacks, message, band_data):
    named = {
        "own_name": [("valid_score", EpochTimer())],
        "twice": [("t", EpochTimer()), ("t", EpochTimer())],
    }
    X, y = band_data()
    if isinstance(callbacks, str) and callbacks in named:
        callbacks = named[callbacks]
    model = NDClassifier(max_epochs=2, callbacks=callbacks)
    with pytest.raises(ValueError, match=message):
        model.fit(X, y)
    with pytest.raises(ValueError, match=message):
        model.partial_fit(X, y, classes=[0, 1])
    assert not hasattr(model, "n_features_in_")


def test_partial_fit_callbacks_continue_from_the_history_as_in_skorch(band_data):
    from skorch import NeuralNetClassifier
    from skorch.callbacks import LRScheduler

    X, y = band_data()
    scheduler = ("lr", LRScheduler("StepLR", step_size=1, gamma=0.5))
    model = NDClassifier(random_state=0, callbacks=[scheduler])
    for _ in range(4):
        model.partial_fit(X, y, classes=[0, 1])
    # skorch's own partial_fit makes the same steps (its scheduler is rebuilt each call).
    net = NeuralNetClassifier(
        torch.nn.Linear(5, 2),
        criterion=torch.nn.CrossEntropyLoss,
        lr=0.01,
        max_epochs=1,
        train_split=None,
        verbose=0,
        callbacks=[scheduler],
    )
    for _ in range(4):
        net.partial_fit(X.astype(np.float32), y)
    assert model.net_.history[:, "event_lr"] == net.history[:, "event_lr"]
    assert model.history_["epoch"].tolist() == [1, 2, 3, 4]
    # set_params(lr=...) still restarts the learning rate.
    model.set_params(lr=0.02).partial_fit(X, y)
    assert model.net_.history[-1, "event_lr"] == pytest.approx(0.01)


def test_fitted_net_keeps_no_data_and_pickles_with_the_module(band_data):
    import copy
    import pickle

    X, y = band_data(n_samples=20_000)
    model = NDClassifier(max_epochs=1, random_state=0).fit(X, y)
    assert model.net_.module_ is model.module_
    assert model.net_.train_split is None
    blob = pickle.dumps(model)
    without_net = copy.copy(model)
    del without_net.net_
    # Neither the training rows (320 kB in float32) nor the validation rows (80 kB).
    assert len(blob) - len(pickle.dumps(without_net)) < 30_000
    restored = pickle.loads(blob)
    assert restored.net_.module_ is restored.module_
    np.testing.assert_array_equal(restored.predict_proba(X[:50]), model.predict_proba(X[:50]))


def test_the_cpu_copy_of_a_gpu_model_keeps_the_net_and_its_module_together(band_data):
    from sknd._estimators._base import _on_cpu

    X, y = band_data()
    model = NDClassifier(max_epochs=2, random_state=0).fit(X, y)
    state = _on_cpu(dict(vars(model)))  # what pickling does for a model on a GPU
    assert state["net_"].module_ is state["_module"] is not model.module_
    restored = NDClassifier.__new__(NDClassifier)
    restored.__setstate__(state)
    np.testing.assert_array_equal(restored.predict_proba(X), model.predict_proba(X))
    restored.partial_fit(X, y)
    assert restored.n_iter_ == 3


@pytest.mark.parametrize("n_centers", [2, 3])
@pytest.mark.parametrize("random_state", [0, 2])
def test_early_stopping_with_extreme_class_weights_keeps_training(n_centers, random_state):
    # scikit-learn's check_class_weight_classifiers at the default epochs (the common checks run
    # it with 30): weights 1000 : 0.0001 leave one or two validation samples of weight, which
    # the first epoch classifies right; ties on the weighted accuracy used to keep that epoch
    # (74 % of class 0 on the test half), the weighted validation loss now ranks them.
    from sklearn.datasets import make_blobs
    from sklearn.model_selection import train_test_split

    X, y = make_blobs(centers=n_centers, random_state=0, cluster_std=20)
    X_train, X_test, y_train, _ = train_test_split(X - X.min(), y, test_size=0.5, random_state=0)
    class_weight = {0: 1000, **{k: 0.0001 for k in range(1, n_centers)}}
    clf = NDClassifier(architecture="mlp", class_weight=class_weight, random_state=random_state)
    clf.fit(X_train, y_train)
    assert np.mean(clf.predict(X_test) == 0) > 0.87
    assert clf.best_epoch_ > 1


def test_early_stopping_breaks_score_ties_by_the_validation_loss():
    from sknd._training._callbacks import SCORE_TOLERANCE, BestEpochStopping

    stopper = BestEpochStopping("valid_score", lower_is_better=False, patience=3)
    stopper.best_score_, stopper.best_loss_ = 0.9, 0.5
    assert stopper._improves(0.9 - SCORE_TOLERANCE / 2, 0.4)  # a tie, lower loss
    assert not stopper._improves(0.9, 0.6)  # a tie, higher loss
    assert not stopper._improves(0.8, 0.1)  # a worse score, whatever the loss
    assert stopper._improves(0.95, 0.9)
    stopper.best_loss_ = None  # the starting model of the recipe: its loss is unknown
    assert not stopper._improves(0.9, 0.1)


def test_the_fitted_net_infers_on_new_data_as_the_estimator(band_data):
    X, y = band_data()
    labels = np.where(y == 1, "veg", "soil")
    clf = NDClassifier(max_epochs=3, random_state=0).fit(X, labels)
    reg = NDRegressor(max_epochs=3, random_state=0).fit(X, X[:, 1] * 40.0 + 3.0)
    new = band_data(seed=1)[0]
    np.testing.assert_allclose(clf.net_.predict_proba(new), clf.predict_proba(new), atol=1e-6)
    np.testing.assert_array_equal(clf.net_.predict(new), clf.predict(new))
    np.testing.assert_allclose(reg.net_.predict(new), reg.predict(new), rtol=1e-5)
    logits = clf.net_.forward(new)
    assert isinstance(logits, torch.Tensor) and logits.shape == (len(new), 1)
    inferred = clf.net_.infer(torch.as_tensor(new, dtype=torch.float32))
    np.testing.assert_allclose(inferred.detach().numpy(), logits.numpy(), rtol=1e-6)


def test_the_fitted_net_refuses_to_train_and_scores_as_the_estimator(band_data, tmp_path):
    # net_.module_ is the estimator's network: net_.fit used to retrain it behind coef_a_ and
    # indices_ (predict_proba moved by up to 0.96) before raising KeyError 'valid_score'.
    X, y = band_data()
    labels = np.where(y == 1, "veg", "soil")
    clf = NDClassifier(max_epochs=3, random_state=0).fit(X, labels)
    clf.net_.save_params(f_params=str(tmp_path / "weights.pt"))
    before, epochs = clf.predict_proba(X), len(clf.net_.history)
    calls = {
        "fit()": lambda: clf.net_.fit(X, y),
        "partial_fit()": lambda: clf.net_.partial_fit(X, y),
        "initialize()": lambda: clf.net_.initialize(),
        "load_params()": lambda: clf.net_.load_params(f_params=str(tmp_path / "weights.pt")),
    }
    for call, run in calls.items():
        with pytest.raises(RuntimeError, match=rf"net_\.{call[:-2]}\(\) refused.*to_torch"):
            run()
    np.testing.assert_array_equal(clf.predict_proba(X), before)
    assert len(clf.net_.history) == epochs and clf.net_.module_ is clf.module_
    # The estimator itself still continues training (a new net each call).
    assert clf.partial_fit(X, labels).n_iter_ == epochs + 1
    new = band_data(seed=1)[0]
    new_labels = np.where(new[:, 1] > new[:, 2], "veg", "soil")
    weight = np.arange(len(new)) % 3 + 1.0
    assert clf.net_.score(new, new_labels) == clf.score(new, new_labels)
    assert clf.net_.score(new, new_labels, weight) == clf.score(new, new_labels, weight)
    reg = NDRegressor(max_epochs=3, random_state=0).fit(X, X[:, 1] * 40.0 + 3.0)
    assert reg.net_.score(new, new[:, 1] * 40.0 + 3.0) == pytest.approx(
        reg.score(new, new[:, 1] * 40.0 + 3.0), abs=1e-5
    )


@pytest.mark.parametrize(
    "scorer, options, fast",
    [
        # Scores of training batches: cached predictions of the training step (plain path).
        ("EpochScoring", dict(scoring="accuracy", on_train=True), False),
        ("BatchScoring", dict(scoring="accuracy", on_train=True), False),
        ("PassthroughScoring", dict(name="train_loss", on_train=True), False),
        # Scores computed at the epoch's end, or of validation batches: the fast path.
        ("EpochScoring", dict(scoring="accuracy", on_train=True, use_caching=False), True),
        ("EpochScoring", dict(scoring="accuracy", use_caching=False), True),
        ("BatchScoring", dict(scoring="accuracy"), True),
        ("PassthroughScoring", dict(name="valid_loss"), True),
    ],
)
def test_skorch_scorers_run_on_training_and_validation_data(
    scorer, options, fast, monkeypatch, band_data
):
    # Scorers of training data raised "Can't call numpy() on Tensor that requires grad"; those
    # without caching, and BatchScoring, compared labels with class codes.
    from skorch import callbacks

    callback = getattr(callbacks, scorer)(**options)
    key = options.get("scoring", options.get("name"))
    X, y = band_data()
    labels = np.where(y == 1, "veg", "soil")
    fused = _fused_epochs(monkeypatch)
    clf = NDClassifier(max_epochs=3, random_state=0, callbacks=[callback]).fit(X, labels)
    assert len(fused) == (3 if fast else 0)
    values = np.asarray(clf.net_.history[:, key], dtype=float)
    assert np.isfinite(values).all()
    if key == "accuracy":
        assert (values > 0.6).all()  # labels compared as labels, the task is easy
    if not options.get("on_train") and key == "accuracy":
        # The validation part is one batch: the same accuracy as sknd's valid_score.
        np.testing.assert_allclose(values, clf.history_["valid_score"])
    if key in ("train_loss", "valid_loss"):
        # The batches' mean loss, as sknd records it per epoch.
        np.testing.assert_allclose(values, clf.history_[key], rtol=1e-5)


def test_scorer_names_and_bare_callbacks_as_in_skorch(band_data):
    from skorch.callbacks import EpochScoring, LRScheduler

    X, y = band_data()
    labels = np.where(y == 1, "veg", "soil")
    weight = np.arange(len(X)) % 3 + 1.0
    clf = NDClassifier(
        max_epochs=3,
        random_state=0,
        callbacks=[EpochScoring("accuracy"), EpochScoring("f1_macro", name="f1"), LRScheduler()],
    ).fit(X, labels, sample_weight=weight)
    names = [name for name, _ in clf.net_.callbacks_]
    assert {"EpochScoring_1", "EpochScoring_2", "LRScheduler"} <= set(names)
    assert (clf.history_["accuracy"] > 0.5).all() and (clf.history_["f1"] > 0.5).all()
    # Unweighted, the accuracy scorer computes sknd's valid_score.
    plain = NDClassifier(max_epochs=3, random_state=0, callbacks=[EpochScoring("accuracy")])
    history = plain.fit(X, labels).history_
    np.testing.assert_allclose(history["accuracy"], history["valid_score"])
    reg = NDRegressor(max_epochs=3, random_state=0, callbacks=[EpochScoring("r2")])
    history = reg.fit(X, X[:, 1] * 40.0).history_
    assert np.isfinite(history["r2"]).all()


def test_callbacks_needing_validation_data_are_refused_without_it(band_data, tmp_path):
    from skorch.callbacks import Checkpoint, EarlyStopping

    X, y = band_data()
    for callback in [EarlyStopping(patience=2), Checkpoint(dirname=str(tmp_path))]:
        model = NDClassifier(max_epochs=3, early_stopping=False, callbacks=[("cb", callback)])
        with pytest.raises(ValueError, match="'cb'.*monitors 'valid_loss.*this fit has none"):
            model.fit(X, y)
        with pytest.raises(ValueError, match="partial_fit has none"):
            model.partial_fit(X, y, classes=[0, 1])
        assert not hasattr(model, "n_features_in_")
        model.fit(X, y, X_val=X[:20], y_val=y[:20])  # with validation data: served
    NDClassifier(max_epochs=2, early_stopping=False, callbacks=[EarlyStopping("train_loss")]).fit(
        X, y
    )


@pytest.mark.parametrize("device", ["cpu:0", torch.device("cpu")])
def test_any_device_torch_accepts(device, band_data):
    X, y = band_data()
    expected = NDClassifier(max_epochs=2, random_state=0).fit(X, y).predict_proba(X)
    model = NDClassifier(max_epochs=2, random_state=0, device=device).fit(X, y)
    np.testing.assert_array_equal(model.predict_proba(X), expected)


def test_an_unknown_or_missing_device_is_a_clear_error(band_data):
    X, y = band_data()
    model = NDClassifier(max_epochs=2, random_state=0).fit(X, y)
    before = model.predict_proba(X)
    for device, message in [
        ("gpu", "not a device PyTorch knows"),
        ("cuda:7", "no CUDA GPU 7"),
        ("meta", "meta device holds tensor shapes without values"),
    ]:
        with pytest.raises(ValueError, match=message):
            model.set_params(device=device).fit(X[::-1], y[::-1])
        np.testing.assert_array_equal(model.predict_proba(X), before)


def test_verbose_is_plain_text_off_a_terminal_with_the_recipe_before_the_epochs(capsys, band_data):
    X, y = band_data()
    NDClassifier(max_epochs=4, random_state=0, verbose=1).fit(X, y)
    out = capsys.readouterr().out
    assert "\x1b" not in out  # no colour codes in a captured (or redirected) stream
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:1] == ["epoch"])
    recipe = [i for i, line in enumerate(lines) if line.startswith("recipe:")]
    assert recipe[0] < header and "convex start" in lines[recipe[0]]
    assert any("learning_gain_" in lines[i] for i in recipe if i > header)
    assert "stage times" in lines[recipe[-1]] and recipe[-1] > header
