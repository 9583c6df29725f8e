"""Training through skorch (sknd._training): the fused step inside fits, history, callbacks,
seeding."""

import numpy as np
import pytest
import torch
from test_fused import _task_data

from sknd import NDClassifier, NDRegressor
from sknd._fused import FusedTrainer
from sknd._training import TensorBatches, TensorDataset
from sknd.networks import build_network


def _binary_data(n_samples=120, n_features=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.05, 0.5, size=(n_samples, n_features))
    y = (X[:, 1] > X[:, 2]).astype(int)
    return X, y


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
def test_fused_and_autograd_fits_agree(estimator, monkeypatch):
    X, y = _binary_data()
    if isinstance(estimator, NDRegressor):
        y = X[:, 1] / (X[:, 2] + X[:, 1])
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


def test_fit_uses_the_fused_trainer_and_keeps_epoch_history():
    X, y = _binary_data()
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
        NDClassifier(max_epochs=3, batch_size=16, random_state=0).fit(X, y)
    finally:
        FusedTrainer.run_epoch = original
    assert calls == [16, 16, 16]


def test_callbacks_asking_for_training_batches_get_them():
    from skorch.callbacks import Callback

    from sknd._adam import FlatAdam as Adam
    from sknd._training import Net

    class CountBatches(Callback):
        def initialize(self):
            self.training, self.validation = 0, 0
            return self

        def on_batch_end(self, net, training=False, **kwargs):
            if training:
                self.training += 1
            else:
                self.validation += 1

    X, y, _, _ = _task_data("binary", 40, 4, seed=0)
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
    assert getattr(net, "fused_trainer_", None) is None
    assert list(net.history[:, "train_batch_count"]) == [3, 3]
    assert all(isinstance(v, float) for v in net.history[:, "train_loss"])


def test_same_seed_same_model_and_global_rng_untouched():
    X, y = _binary_data()
    state = torch.random.get_rng_state()
    first = NDClassifier(max_epochs=5, random_state=3).fit(X, y)
    second = NDClassifier(max_epochs=5, random_state=3).fit(X, y)
    assert torch.equal(torch.random.get_rng_state(), state)
    np.testing.assert_array_equal(first.predict_proba(X), second.predict_proba(X))
    np.testing.assert_array_equal(first.coef_a_, second.coef_a_)


def test_fitted_module_owns_its_parameters():
    X, y = _binary_data()
    model = NDClassifier(max_epochs=2, depth=3, random_state=0).fit(X, y)
    storages = [p.untyped_storage().data_ptr() for p in model._module.parameters()]
    assert len(set(storages)) == len(storages)


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
    from sknd._training import SCORE_TOLERANCE, EarlyStopping

    stopper = EarlyStopping("valid_score", lower_is_better=False, patience=3)
    stopper.best_score_, stopper.best_loss_ = 0.9, 0.5
    assert stopper._improves(0.9 - SCORE_TOLERANCE / 2, 0.4)  # a tie, lower loss
    assert not stopper._improves(0.9, 0.6)  # a tie, higher loss
    assert not stopper._improves(0.8, 0.1)  # a worse score, whatever the loss
    assert stopper._improves(0.95, 0.9)
    stopper.best_loss_ = None  # the starting model of the recipe: its loss is unknown
    assert not stopper._improves(0.9, 0.1)
