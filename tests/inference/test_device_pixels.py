"""Scenes evaluated on the device (sknd._inference._device_pixels): what a model on a GPU gives for
a scene equals the CPU fast path (labels, probabilities, targets, no-data, errors). The
same code runs on CPU tensors here and on a GPU where there is one ("cuda" cases)."""

import warnings

import numpy as np
import pytest
import torch

from sknd import NDClassifier, NDRegressor, raster
from sknd._inference import _device_pixels
from sknd._inference._device_pixels import DevicePixels
from sknd._training._fused import FusedTrainer

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
DEVICES = ["cpu", pytest.param("cuda", marks=CUDA)]
FAST = {"max_epochs": 5, "random_state": 0}


# What this module's tests draw from conftest's band_data, after the sample and band counts.
DATA = {"low": 0.01, "high": 0.6, "pair": (-1, -2), "cuts": (-0.2, 0.2)}


def _fit(band_data, target, **params):
    X, y = band_data(300, 5, **DATA)
    targets = {
        "binary": (y > 0).astype(int),
        "strings": np.array(["dry", "mixed", "wet"])[y],
        "regression": X[:, 0] + X[:, -1],
        "multi-output": np.column_stack([X[:, 0], X[:, -1] - X[:, 1]]),
    }
    estimator = NDRegressor if target in ("regression", "multi-output") else NDClassifier
    return estimator(**FAST, **params).fit(X, targets[target])


def _on_device(estimator, device):
    """Make raster evaluate ``estimator`` by DevicePixels on ``device``."""

    def evaluator(method):
        if method not in ("predict", "predict_proba"):
            return None
        checks = estimator._pixel_checks()
        return DevicePixels.for_task(
            estimator._module, estimator._task, method, torch.device(device), **checks
        )

    estimator._fast_evaluator = evaluator
    return estimator


def _scene(dtype=np.float32, shape=(23, 19), n_bands=5, seed=1):
    rng = np.random.default_rng(seed)
    image = rng.uniform(0.01, 0.6, size=shape + (n_bands,))
    if np.dtype(dtype).kind in "iu":
        image *= 10_000
    image = image.astype(dtype)
    image[2, 3, 1] = 7  # no-data, as nodata=7
    if image.dtype.kind == "f":
        image[4, 5, 0] = np.nan
    return image


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("target", ["binary", "strings", "regression", "multi-output"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint16, np.int16])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_scene_on_the_device_equals_the_cpu_fast_path(device, target, dtype, n_jobs, band_data):
    estimator = _fit(band_data, target)
    image = _scene(dtype)
    fill = "none" if target == "strings" else -1
    options = {"nodata": 7, "chunk_pixels": 37, "n_jobs": n_jobs}
    expected = raster.predict(estimator, image, fill_value=fill, **options)
    proba = None
    if target in ("binary", "strings"):
        proba = raster.predict_proba(estimator, image, **options)
    _on_device(estimator, device)
    labels = raster.predict(estimator, image, fill_value=fill, **options)
    assert labels.dtype == expected.dtype and labels.shape == expected.shape
    # The CPU fast path computes float32 scenes in float32 (each index within 1e-6 of the
    # float64 cast's, docs/raster.md); the device computes in float64.
    tolerance = {"rtol": 1e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-10}
    if target in ("regression", "multi-output"):
        np.testing.assert_allclose(labels, expected, **tolerance)
    else:
        np.testing.assert_array_equal(labels, expected)
    assert np.all(labels[2, 3] == fill)
    if proba is not None:
        got = raster.predict_proba(estimator, image, **options)
        assert got.dtype == np.float32
        close = tolerance if dtype == np.float32 else {"rtol": 1e-6, "atol": 1e-7}
        np.testing.assert_allclose(got, proba, **close)
        assert np.isnan(got[2, 3]).all()


@pytest.mark.parametrize("device", DEVICES)
def test_scene_on_the_device_picks_bands_by_name(device, band_data):
    X, y = band_data(300, 4, **DATA)
    names = ["blue", "green", "red", "nir"]
    estimator = NDClassifier(bands=names, **FAST).fit(X, y)
    image = _scene()[..., [4, 3, 2, 1, 0]]  # the bands reversed, after an extra one
    image[0, 0, 0] = 7  # nodata in the extra band, which the model does not use
    options = {"bands": ["swir", "nir", "red", "green", "blue"], "nodata": 7}
    expected = raster.predict(estimator, image, chunk_pixels=50, **options)
    _on_device(estimator, device)
    labels = raster.predict(estimator, image, chunk_pixels=50, **options)
    np.testing.assert_array_equal(labels, expected)
    assert not np.isnan(expected[0, 0])
    assert np.isnan(expected[2, 3])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("value", [-0.5, np.inf, 1e35])
def test_bad_pixels_raise_the_cpu_paths_error(device, value, band_data):
    estimator = _fit(band_data, "binary")
    image = _scene()
    image[7, 8, 2] = value
    with pytest.raises(ValueError) as cpu:
        raster.predict(estimator, image, nodata=7)
    _on_device(estimator, device)
    with pytest.raises(ValueError) as ours:
        raster.predict(estimator, image, nodata=7)
    assert str(ours.value) == str(cpu.value)


@pytest.mark.parametrize("device", DEVICES)
def test_pixels_far_outside_the_fitted_range_warn_as_on_the_cpu(device, band_data):
    estimator = _fit(band_data, "binary", passthrough=True)
    image = _scene() * 100
    with pytest.warns(UserWarning, match="far outside") as cpu:
        expected = raster.predict(estimator, image, nodata=700)
    _on_device(estimator, device)
    with pytest.warns(UserWarning, match="far outside") as ours:
        labels = raster.predict(estimator, image, nodata=700)
    assert str(ours[0].message) == str(cpu[0].message)
    np.testing.assert_array_equal(labels, expected)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        raster.predict(estimator, _scene(), nodata=7)  # within range: no warning


def _out_of_memory(*args, **kwargs):
    raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")


def test_a_scene_out_of_device_memory_names_the_chunk_size(monkeypatch, band_data):
    estimator = _on_device(_fit(band_data, "binary"), "cpu")
    monkeypatch.setattr(_device_pixels._Pipeline, "_compute", _out_of_memory)
    with pytest.raises(MemoryError, match=r"lower chunk_pixels \(now 37\)"):
        raster.predict(estimator, _scene(), chunk_pixels=37)
    monkeypatch.setattr(DevicePixels, "_compute", _out_of_memory)
    with pytest.raises(MemoryError, match=r"evaluating 2 pixels: lower chunk_pixels"):
        raster.predict(estimator, _scene(), chunk_pixels=37)  # its first call: the probe


def test_training_out_of_device_memory_names_the_batch_size_and_keeps_the_model(
    monkeypatch,
    band_data,
):
    estimator = _fit(band_data, "binary", batch_size=64)
    X, _ = band_data(300, 5, **DATA)
    before = estimator.predict_proba(X)
    run_epoch = FusedTrainer.run_epoch

    def epochs_of_64(trainer, batches):  # depth="auto"'s wide head trains on the CPU, by 200
        if trainer.batch_size == 64:
            _out_of_memory()
        return run_epoch(trainer, batches)

    monkeypatch.setattr(FusedTrainer, "run_epoch", epochs_of_64)
    with pytest.raises(MemoryError, match=r"lower batch_size \(now 64\)") as error:
        estimator.fit(X, (X[:, 0] > X[:, 1]).astype(int))
    assert isinstance(error.value.__cause__, torch.cuda.OutOfMemoryError)
    np.testing.assert_array_equal(estimator.predict_proba(X), before)
    with pytest.raises(MemoryError, match="batch_size"):
        estimator.partial_fit(X, (X[:, 0] > X[:, 1]).astype(int))
    np.testing.assert_array_equal(estimator.predict_proba(X), before)


@CUDA
def test_a_model_on_the_gpu_evaluates_scenes_on_the_gpu(band_data):
    estimator = NDClassifier(device="cuda", **FAST).fit(*band_data(300, 5, **DATA))
    image = _scene()
    evaluator = estimator._fast_evaluator("predict")
    assert isinstance(evaluator, DevicePixels) and evaluator.device.type == "cuda"
    labels = raster.predict(estimator, image, nodata=7)
    cpu = NDClassifier(**FAST).fit(*band_data(300, 5, **DATA))
    np.testing.assert_array_equal(labels, raster.predict(cpu, image, nodata=7))
