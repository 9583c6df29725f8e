"""Persistence, reproducibility, devices and interrupted fits."""

import contextlib
import io
import os
import pickle
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

import sknd
import sknd._estimators._base
from sknd import NDClassifier, NDRegressor, NDTransformer

FAST = dict(max_epochs=4, batch_size=16, random_state=0)
REPO = Path(__file__).resolve().parents[2]

CASES = [
    ("classifier", NDClassifier(**FAST), ("predict", "predict_proba")),
    ("regressor", NDRegressor(**FAST), ("predict",)),
    ("transformer", NDTransformer(n_indices=3, **FAST), ("transform",)),
    ("attnd", NDClassifier(architecture="attnd", **FAST), ("predict_proba",)),
    ("mlp", NDRegressor(architecture="mlp", **FAST), ("predict",)),
    ("signed-deep", NDClassifier(variant="signed", depth=3, **FAST), ("predict_proba",)),
]


def make_data(regression, n_samples=60, n_bands=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.02, 0.6, size=(n_samples, n_bands))
    ndvi = (X[:, -1] - X[:, -2]) / (X[:, -1] + X[:, -2])
    return X, (ndvi if regression else (ndvi > 0.1).astype(int) + (ndvi > -0.1))


def fit(estimator, **data_kwargs):
    regression = isinstance(estimator, NDRegressor)
    X, y = make_data(regression, **data_kwargs)
    return clone(estimator).fit(X, y), X


def outputs(estimator, X, methods):
    return {method: getattr(estimator, method)(X) for method in methods}


def fitted_state(estimator):
    return {k: v for k, v in vars(estimator).items() if k.endswith("_") or k in ("_module",)}


# ---------------------------------------------------------------------------------------
# Round trips
@pytest.mark.parametrize("name, estimator, methods", CASES, ids=[c[0] for c in CASES])
def test_pickle_and_joblib_round_trips_give_identical_outputs(name, estimator, methods, tmp_path):
    model, X = fit(estimator)
    expected = outputs(model, X, methods)
    restored = {
        "pickle": pickle.loads(pickle.dumps(model)),
        "joblib": (joblib.dump(model, tmp_path / "m.joblib"), joblib.load(tmp_path / "m.joblib"))[
            1
        ],
        "pickle-twice": pickle.loads(pickle.dumps(pickle.loads(pickle.dumps(model)))),
    }
    for how, copy in restored.items():
        got = outputs(copy, X, methods)
        for method in methods:
            np.testing.assert_array_equal(got[method], expected[method], err_msg=f"{how} {method}")
        assert copy.get_params() == model.get_params()
        for key, value in fitted_state(model).items():
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(getattr(copy, key), value)


def test_pickling_does_not_modify_the_estimator():
    model, _ = fit(NDClassifier(**FAST))
    before = dict(vars(model))
    pickle.dumps(model)
    model.__getstate__()
    assert vars(model).keys() == before.keys()
    assert all(vars(model)[k] is v for k, v in before.items())


def test_unfitted_estimator_round_trip_stays_unfitted():
    restored = pickle.loads(pickle.dumps(NDRegressor(depth=3, epsilon=1e-4)))
    assert restored.get_params() == NDRegressor(depth=3, epsilon=1e-4).get_params()
    with pytest.raises(NotFittedError):
        check_is_fitted(restored)


def test_restored_model_refits_like_a_fresh_one():
    model, X = fit(NDClassifier(**FAST))
    restored = pickle.loads(pickle.dumps(model))
    _, y = make_data(False, seed=3)
    X3, _ = make_data(False, seed=3)
    np.testing.assert_array_equal(
        restored.fit(X3, y).predict_proba(X), clone(model).fit(X3, y).predict_proba(X)
    )


# ---------------------------------------------------------------------------------------
# Version stamp
def test_version_is_stored_and_a_mismatch_warns(monkeypatch):
    model, X = fit(NDClassifier(**FAST))
    assert pickle.loads(pickle.dumps(model)).__getstate__()["_sknd_version"] == sknd.__version__
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # same version: silent
        pickle.loads(pickle.dumps(model))
    monkeypatch.setattr(sknd._estimators._base, "__version__", "0.0.1")
    old_blob = pickle.dumps(model)
    monkeypatch.undo()
    with pytest.warns(
        UserWarning, match=rf"sknd version 0\.0\.1 when using version {sknd.__version__}"
    ):
        restored = pickle.loads(old_blob)
    np.testing.assert_array_equal(restored.predict(X), model.predict(X))
    assert "_sknd_version" not in vars(restored)


# ---------------------------------------------------------------------------------------
# Reproducibility across processes
SCRIPT = textwrap.dedent(
    """
    import hashlib, sys
    import numpy as np
    from sknd import NDClassifier, NDRegressor, NDTransformer
    rng = np.random.default_rng(0)
    X = rng.uniform(0.02, 0.6, size=(60, 5))
    y = (X[:, 3] > X[:, 2]).astype(int)
    seed = int(sys.argv[1])
    digest = hashlib.sha256()
    for model in (NDClassifier(max_epochs=4, random_state=seed),
                  NDRegressor(architecture="attnd", max_epochs=4, random_state=seed),
                  NDTransformer(depth=3, max_epochs=4, random_state=seed)):
        model.fit(X, X[:, 0] if isinstance(model, NDRegressor) else y)
        out = model.transform(X) if isinstance(model, NDTransformer) else (
            model.predict_proba(X) if hasattr(model, "predict_proba") else model.predict(X))
        digest.update(np.ascontiguousarray(out).tobytes())
    print(digest.hexdigest())
    """
)


def _start_fresh_process(seed, hash_seed):
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": str(hash_seed)}
    env["OMP_NUM_THREADS"] = "1"
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(seed)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _digest(process):
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    return stdout.strip().splitlines()[-1]


# In fresh processes (most of their time imports torch): behind the slow marker.
@pytest.mark.slow
def test_same_random_state_gives_identical_predictions_in_separate_processes():
    # Two fresh interpreters (run side by side: most of their time is importing torch),
    # with different hash seeds.
    processes = [_start_fresh_process(seed=7, hash_seed=h) for h in (1, 2)]
    first, second = (_digest(p) for p in processes)
    assert first == second
    # And in this process, whatever the global torch and numpy random state.
    torch.manual_seed(12345)
    np.random.seed(999)
    buffer = io.StringIO()
    original_argv = sys.argv
    sys.argv = ["-", "7"]
    try:
        with contextlib.redirect_stdout(buffer):
            exec(SCRIPT, {})  # noqa: S102 (our own script, as run in the subprocesses)
    finally:
        sys.argv = original_argv
    assert buffer.getvalue().split()[-1] == first


# ---------------------------------------------------------------------------------------
# Interrupted fits: all or nothing
def _interrupt_at_step(monkeypatch, n_steps):
    from sknd._training._adam import FlatAdam

    original = FlatAdam.packed_step  # every optimizer step, fused or autograd path
    calls = []

    def step(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == n_steps:
            raise KeyboardInterrupt
        return original(self, *args, **kwargs)

    monkeypatch.setattr(FlatAdam, "packed_step", step)
    return calls


@pytest.mark.parametrize("name, estimator, methods", CASES[:3], ids=[c[0] for c in CASES[:3]])
def test_interrupted_first_fit_leaves_an_unfitted_estimator(name, estimator, methods, monkeypatch):
    model = clone(estimator)
    X, y = make_data(isinstance(model, NDRegressor))
    _interrupt_at_step(monkeypatch, 5)
    with pytest.raises(KeyboardInterrupt):
        model.fit(pd.DataFrame(X, columns=list("abcd")), y)
    monkeypatch.undo()
    assert vars(model) == vars(clone(estimator))
    with pytest.raises(NotFittedError):
        check_is_fitted(model)
    with pytest.raises(NotFittedError):
        getattr(model, methods[0])(X)
    # And the estimator still trains normally afterwards.
    getattr(model.fit(X, y), methods[0])(X)


@pytest.mark.parametrize("name, estimator, methods", CASES[:3], ids=[c[0] for c in CASES[:3]])
def test_interrupted_refit_keeps_the_previous_model(name, estimator, methods, monkeypatch):
    """A refit interrupted midway leaves the estimator exactly as the previous fit left it."""
    model, X = fit(estimator)
    before = dict(vars(model))
    expected = outputs(model, X, methods)
    # The new fit would change everything: other bands, names, labels.
    X5, y5 = make_data(isinstance(model, NDRegressor), n_bands=5, seed=4)
    frame = pd.DataFrame(X5, columns=list("abcde"))
    _interrupt_at_step(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        model.fit(frame, y5)
    monkeypatch.undo()
    assert vars(model).keys() == before.keys()
    assert all(vars(model)[k] is v for k, v in before.items())
    assert model.n_features_in_ == 4 and not hasattr(model, "feature_names_in_")
    for method, value in outputs(model, X, methods).items():
        np.testing.assert_array_equal(value, expected[method])


def test_refit_that_fails_validation_keeps_the_previous_model():
    model, X = fit(NDClassifier(**FAST))
    before = dict(vars(model))
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        model.fit(np.column_stack([bad, bad[:, 0]]), np.arange(len(X)) % 2)
    assert vars(model) == before


def test_transformer_refit_with_too_many_indices_keeps_the_previous_model():
    model, X = fit(NDTransformer(n_indices=3, **FAST))
    before = dict(vars(model))
    expected = model.transform(X)
    _, y = make_data(False)
    with pytest.raises(ValueError, match="n_indices=3 exceeds"):
        model.fit(X[:, :2], y)
    assert vars(model) == before
    np.testing.assert_array_equal(model.transform(X), expected)


# ---------------------------------------------------------------------------------------
# Devices
@pytest.fixture
def cpu_only(monkeypatch):
    """Pretend that this machine has no GPU (as on the machine a pickle is loaded on)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.fixture
def parameters_report_cuda(monkeypatch):
    """Make every parameter report a CUDA device, as on a model trained on a GPU.

    The data stay on the CPU (this machine may have no GPU); only what the
    pickling code can see, ``parameter.device``, is simulated.
    """

    def patch():
        monkeypatch.setattr(
            torch.nn.Parameter,
            "device",
            property(lambda self: torch.device("cuda", 0)),
            raising=False,
        )

    return patch


def test_gpu_model_pickle_holds_a_cpu_copy_and_leaves_the_live_model_alone(
    parameters_report_cuda, monkeypatch
):
    model, X = fit(NDClassifier(**FAST))
    expected = model.predict_proba(X)
    model.set_params(device="cuda")  # as if trained with device="cuda"
    live_module = model._module
    live_parameters = [(p, p.data_ptr()) for p in live_module.parameters()]
    parameters_report_cuda()
    state = model.__getstate__()
    blob = pickle.dumps(model)
    monkeypatch.undo()
    # The pickle holds a copy on the CPU (with the fitted net, which holds that same copy);
    # the live (GPU) model is not touched.
    assert state["_module"] is not live_module and state["net_"].module_ is state["_module"]
    assert model._module is live_module and model.net_.module_ is live_module
    assert [(p, p.data_ptr()) for p in live_module.parameters()] == live_parameters
    copied = {p.data_ptr() for p in state["_module"].parameters()}
    assert copied.isdisjoint(ptr for _, ptr in live_parameters)
    assert all(p.device.type == "cpu" for p in state["_module"].parameters())
    # On a CPU-only machine the copy loads and predicts, although device="cuda".
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    restored = pickle.loads(blob)
    assert restored.device == "cuda"
    np.testing.assert_array_equal(restored.predict_proba(X), expected)


@pytest.mark.parametrize("device", ["cuda", "auto"])
def test_gpu_model_predicts_on_a_cpu_only_machine(device, cpu_only):
    model, X = fit(NDRegressor(**FAST))
    expected = model.predict(X)
    model.set_params(device=device)
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict(X), expected)
    assert all(p.device.type == "cpu" for p in restored._module.parameters())
    if device == "cuda":
        # Refitting needs the GPU that was asked for: say so, keep the loaded model.
        with pytest.raises(ValueError, match="no CUDA GPU"):
            restored.fit(X, X[:, 0])
        np.testing.assert_array_equal(restored.predict(X), expected)


CUDA_LOADER = textwrap.dedent(
    """
    import pickle, sys
    import numpy as np, torch
    assert not torch.cuda.is_available()
    model = pickle.load(open(sys.argv[1], "rb"))
    np.save(sys.argv[2], model.predict_proba(np.load(sys.argv[3])))
    """
)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_trained_model_loads_in_a_process_without_gpu(tmp_path):
    model, X = fit(NDClassifier(device="cuda", **FAST))
    assert next(model._module.parameters()).device.type == "cuda"
    expected = model.predict_proba(X)
    with open(tmp_path / "model.pkl", "wb") as f:
        pickle.dump(model, f)
    assert next(model._module.parameters()).device.type == "cuda"  # pickling left it there
    np.save(tmp_path / "X.npy", X)
    # The repository first, then whatever the caller's PYTHONPATH holds (e.g. dependencies
    # installed outside site-packages).
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "CUDA_VISIBLE_DEVICES": ""}
    subprocess.run(
        [sys.executable, "-c", CUDA_LOADER, str(tmp_path / "model.pkl"),
         str(tmp_path / "proba.npy"), str(tmp_path / "X.npy")],
        env=env, check=True, timeout=300,
    )  # fmt: skip
    np.testing.assert_allclose(np.load(tmp_path / "proba.npy"), expected, atol=1e-5)
