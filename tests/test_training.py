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
