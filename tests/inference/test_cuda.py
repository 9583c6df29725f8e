"""Every CUDA path once, on a GPU (all skipped without one): the default recipe's tuned
start moved to the device, user callbacks on the graph-replayed epochs and on the plain
path, pickles and model files of GPU-fitted models, and their scenes."""

import pickle

import numpy as np
import pytest
import torch
from skorch.callbacks import Callback, LRScheduler

from sknd import NDClassifier, NDRegressor, load_model, raster

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


# What this module's tests draw from conftest's band_data, after the sample and band counts.
DATA = {"low": 0.02, "high": 0.6, "pair": (3, 2), "cuts": (0.1,)}


class _RecordLR(Callback):
    """An epoch-level callback: the fit keeps the fused (graph-replayed) epochs."""

    def on_epoch_end(self, net, **kwargs):
        net.history.record("lr_now", net.optimizer_.param_groups[0]["lr"])


class _BatchCounter(Callback):
    """A callback with a batch event: the fit takes the plain (autograd) path."""

    def on_train_begin(self, net, **kwargs):
        self.batches_ = 0

    def on_batch_end(self, net, training=False, **kwargs):
        self.batches_ += training


@pytest.mark.parametrize("recipe", ["sknd", "paper"])
def test_cuda_default_and_paper_recipes_match_the_cpu(recipe, band_data):
    X, y = band_data(400, 6, **DATA)
    params = dict(recipe=recipe, max_epochs=20, random_state=0, batch_size=64)
    gpu = NDClassifier(device="cuda", **params).fit(X, y)
    cpu = NDClassifier(device="cpu", **params).fit(X, y)
    assert next(gpu._module.parameters()).device.type == "cuda"
    np.testing.assert_allclose(gpu.predict_proba(X), cpu.predict_proba(X), atol=2e-3)
    assert gpu.n_iter_ == cpu.n_iter_


def test_cuda_callbacks_on_both_training_paths(band_data):
    X, y = band_data(400, 6, **DATA)
    schedule = ("lr", LRScheduler("StepLR", step_size=2, gamma=0.5))
    fused = NDClassifier(device="cuda", max_epochs=6, early_stopping=False, random_state=0,
                         callbacks=[schedule, ("record", _RecordLR())]).fit(X, y)  # fmt: skip
    lrs = fused.net_.history[:, "lr_now"]
    assert lrs == pytest.approx([fused.lr * 0.5 ** (epoch // 2) for epoch in range(1, 7)])
    counter = _BatchCounter()
    plain = NDClassifier(device="cuda", max_epochs=3, early_stopping=False, random_state=0,
                         batch_size=100, callbacks=[("count", counter)]).fit(X, y)  # fmt: skip
    assert plain.net_.callbacks_[-1][1].batches_ == 3 * 4
    assert np.isfinite(plain.predict_proba(X)).all()


def test_cuda_models_pickle_save_and_predict_scenes(tmp_path, band_data):
    X, y = band_data(400, 6, **DATA)
    for estimator, target in ((NDClassifier, y), (NDRegressor, X[:, 0] / X[:, 1])):
        gpu = estimator(device="cuda", max_epochs=10, random_state=0).fit(X, target)
        copy = pickle.loads(pickle.dumps(gpu))
        assert next(copy._module.parameters()).device.type == "cpu"
        gpu.save_model(tmp_path / "model.sknd")
        saved = load_model(tmp_path / "model.sknd")
        image = X[:300].reshape(15, 20, -1).astype(np.float32)
        expected = raster.predict(copy.set_params(device="cpu"), image)
        np.testing.assert_allclose(raster.predict(saved, image), expected, rtol=1e-9)
        np.testing.assert_allclose(raster.predict(gpu, image), expected, rtol=1e-6)
        np.testing.assert_allclose(gpu.predict(X), copy.predict(X), rtol=1e-6)
        # A refit of the unpickled copy on the GPU, and a partial_fit of the GPU model.
        copy.set_params(device="cuda").fit(X, target)
        gpu.partial_fit(X, target)
        assert next(gpu._module.parameters()).device.type == "cuda"
