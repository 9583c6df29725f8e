"""Continuing training: ``warm_start`` and ``partial_fit`` (sknd._estimators._fit)."""

import pickle

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.model_selection import train_test_split

from sknd import NDClassifier, NDRegressor, NDTransformer
from sknd.datasets import load_forest_type

# What this module's tests draw from conftest's band_data, after the sample and band counts.
DATA = {"pair": (3, 1), "scale": 1.5}


def _state(band_data, model):
    """What a fitted model computes and reports, to check that a failed call kept it."""
    X, _ = band_data(50, model.n_features_in_, seed=1, **DATA)
    output = model.predict_proba(X) if hasattr(model, "predict_proba") else model.predict(X)
    return output, model.coef_a_.copy(), model.n_iter_, model.history_.copy()


def _assert_unchanged(band_data, model, state):
    output, coef_a, n_iter, history = state
    now = model.predict_proba if hasattr(model, "predict_proba") else model.predict
    np.testing.assert_array_equal(
        now(band_data(50, model.n_features_in_, seed=1, **DATA)[0]), output
    )
    np.testing.assert_array_equal(model.coef_a_, coef_a)
    assert model.n_iter_ == n_iter
    pd.testing.assert_frame_equal(model.history_, history)


def test_streaming_parts_reaches_the_accuracy_of_a_full_fit():
    X, y = load_forest_type(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, random_state=0, stratify=y
    )
    # The same network: partial_fit builds depth 2 (depth="auto" has no validation part to
    # choose on there), where a full fit's depth="auto" may keep depth 3.
    full = NDClassifier(depth=2, random_state=0).fit(X_train, y_train)
    stream = NDClassifier(random_state=0)
    rng = np.random.default_rng(0)
    classes = np.unique(y)
    for _ in range(40):
        for part in np.array_split(rng.permutation(len(X_train)), 5):
            stream.partial_fit(X_train[part], y_train[part], classes=classes)
    assert stream.n_iter_ == 200
    assert len(stream.history_) == 200
    assert stream.history_["valid_score"].isna().all()  # no validation split
    assert stream.depth_ == full.depth_ == 2
    assert stream.score(X_test, y_test) >= full.score(X_test, y_test) - 0.01


def test_partial_fit_keeps_the_optimizer_state_between_calls(band_data):
    # One full batch per epoch: two partial_fit calls are two Adam steps, as are two
    # epochs of fit. A fresh optimizer in the second call would restart Adam's bias
    # correction and take a different step.
    X, y = band_data(200, 5, **DATA)
    params = dict(batch_size=200, random_state=0, recipe="paper")
    fitted = NDClassifier(max_epochs=2, early_stopping=False, **params).fit(X, y)
    stream = NDClassifier(**params).partial_fit(X, y, classes=[0, 1]).partial_fit(X, y)
    np.testing.assert_allclose(stream.coef_a_, fitted.coef_a_, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(stream.predict_proba(X), fitted.predict_proba(X), atol=1e-6)


def test_partial_fit_continues_after_pickling(band_data):
    X, y = band_data(200, 5, **DATA)
    first = NDClassifier(batch_size=64, random_state=0).partial_fit(X, y, classes=[0, 1])
    copy = pickle.loads(pickle.dumps(first))
    first.partial_fit(X, y)
    copy.partial_fit(X, y)
    np.testing.assert_array_equal(copy.coef_a_, first.coef_a_)


def test_partial_fit_needs_classes_first_and_the_same_classes_later(band_data):
    X, y = band_data(600, 5, **DATA)
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        NDClassifier().partial_fit(X, y)
    # A first part with one class of three: the network still has three outputs.
    clf = NDClassifier(random_state=0).partial_fit(X[y == 0], y[y == 0], classes=[0, 1, 2])
    assert clf.classes_.tolist() == [0, 1, 2]
    assert clf.predict_proba(X).shape == (len(X), 3)
    state = _state(band_data, clf)
    with pytest.raises(ValueError, match="differs from the classes of the fitted model"):
        clf.partial_fit(X, y, classes=[0, 1])
    with pytest.raises(ValueError, match="labels not seen"):
        clf.partial_fit(X, np.where(y == 1, 5, y))
    _assert_unchanged(band_data, clf, state)
    clf.partial_fit(X, y, classes=[2, 1, 0])  # the same classes, in any order


def test_partial_fit_refuses_other_bands_and_keeps_the_model(band_data):
    X, y = band_data(600, 5, **DATA)
    clf = NDClassifier(random_state=0).partial_fit(X, y, classes=[0, 1])
    state = _state(band_data, clf)
    with pytest.raises(ValueError, match="X has 4 features"):
        clf.partial_fit(X[:, :4], y)
    with pytest.raises(ValueError, match="NaN"):
        clf.partial_fit(np.where(X > 0.45, np.nan, X), y)
    _assert_unchanged(band_data, clf, state)
    frame = pd.DataFrame(X, columns=list("abcde"))
    named = NDClassifier(random_state=0).partial_fit(frame, y, classes=[0, 1])
    with pytest.raises(ValueError, match="feature names should match"):
        named.partial_fit(frame.rename(columns={"a": "z"}), y)


def test_a_diverging_partial_fit_leaves_the_previous_model(band_data):
    X, y = band_data(600, 5, **DATA)
    clf = NDClassifier(random_state=0, recipe="paper").partial_fit(X, y, classes=[0, 1])
    state = _state(band_data, clf)
    clf.set_params(lr=1e30)
    with pytest.raises(ValueError, match="epoch"):
        clf.partial_fit(X, y)
    _assert_unchanged(band_data, clf, state)


def test_partial_fit_refuses_balanced_class_weight_and_takes_a_dict(band_data):
    X, y = band_data(600, 5, **DATA)
    with pytest.raises(ValueError, match="compute_class_weight"):
        NDClassifier(class_weight="balanced").partial_fit(X, y, classes=[0, 1])
    clf = NDClassifier(class_weight={0: 1.0, 1: 3.0}, random_state=0)
    clf.partial_fit(X, y, classes=[0, 1])
    assert clf.n_iter_ == 1


def test_regressor_partial_fit_keeps_the_first_target_scaling_and_columns(band_data):
    X, _ = band_data(600, 5, **DATA)
    target = np.column_stack([X[:, 3] - X[:, 1], X[:, 2]])
    reg = NDRegressor(random_state=0)
    for part in np.array_split(np.arange(len(X)), 3):
        reg.partial_fit(X[part], target[part])
    assert reg.predict(X).shape == (len(X), 2)
    state = _state(band_data, reg)
    with pytest.raises(ValueError, match="target column"):
        reg.partial_fit(X, target[:, :1])
    _assert_unchanged(band_data, reg, state)


def test_a_constant_first_target_does_not_freeze_the_regressor(band_data):
    # A first block of bare soil (biomass 0) froze the target scale at 0: every later
    # partial_fit or warm start trained without effect, the model predicted 0 forever.
    X, _ = band_data(800, 4, **DATA)
    y = 10 * (X[:, 3] - X[:, 2]) / (X[:, 3] + X[:, 2])
    reg = NDRegressor(random_state=0)
    reg.partial_fit(X[:100], np.zeros(100))
    np.testing.assert_allclose(reg.predict(X), 0.0, atol=1e-6)  # still exactly constant
    state = _state(band_data, reg)
    with pytest.raises(ValueError, match="NaN"):
        reg.partial_fit(np.where(X > 0.45, np.nan, X), y)
    _assert_unchanged(band_data, reg, state)  # the failed call kept the frozen scale too
    for _ in range(4):
        for part in np.array_split(np.arange(100, 800), 4):
            reg.partial_fit(X[part], y[part])
    assert reg.score(X, y) > 0.8
    # Two targets, the second constant at first: it learns too, the first keeps its scale.
    two = NDRegressor(random_state=0).partial_fit(X[:100], np.column_stack([y[:100], 0 * y[:100]]))
    scale = two._task.scale[0]
    for part in np.array_split(np.arange(100, 800), 4):
        two.partial_fit(X[part], np.column_stack([y[part], -y[part]]))
    assert two._task.scale[0] == scale and np.ptp(two.predict(X)[:, 1]) > 1
    ws = NDRegressor(random_state=0, warm_start=True, max_epochs=5)
    ws.fit(X[:100], np.full(100, 2.0)).fit(X, y)
    assert ws.predict(X).std() > 1


def test_transformer_partial_fit_updates_the_selected_indices(band_data):
    X, y = band_data(600, 5, **DATA)
    nd = NDTransformer(n_indices=3, random_state=0).partial_fit(X, y)
    assert nd.transform(X).shape == (len(X), 3)
    nd.partial_fit(X, y)
    assert nd.n_iter_ == 2
    assert len(nd.selected_indices_) == 3


def test_warm_start_continues_the_fitted_network(band_data):
    X, y = band_data(600, 5, **DATA)
    params = dict(recipe="paper", early_stopping=False, max_epochs=3, random_state=0)
    clf = NDClassifier(warm_start=True, **params).fit(X, y)
    before = clf.predict_proba(X)
    # A vanishing learning rate: continuing leaves the model as it is, a new fit does not.
    clf.set_params(lr=1e-12, max_epochs=1)
    np.testing.assert_allclose(clf.fit(X, y).predict_proba(X), before, atol=1e-7)
    cold = NDClassifier(**params).fit(X, y).set_params(lr=1e-12, max_epochs=1)
    assert np.abs(cold.fit(X, y).predict_proba(X) - before).max() > 1e-3


def test_warm_start_with_the_default_recipe_improves_on_few_epochs(band_data):
    X, y = band_data(800, 5, **DATA)
    clf = NDClassifier(warm_start=True, max_epochs=1, random_state=0).fit(X, y)
    pairs = clf.pairs_.copy()
    clf.set_params(max_epochs=30).fit(X, y)
    np.testing.assert_array_equal(clf.pairs_, pairs)
    assert clf.n_iter_ <= 30
    assert clf.score(X, y) > 0.9


@pytest.mark.parametrize(
    "change",
    [{"depth": 3}, {"epsilon": 1e-3}, {"pairs": [(0, 1)]}, {"architecture": "mlp"}],
)
def test_warm_start_refuses_a_changed_network_and_keeps_the_model(change, band_data):
    X, y = band_data(600, 5, **DATA)
    clf = NDClassifier(warm_start=True, max_epochs=2, random_state=0).fit(X, y)
    state = _state(band_data, clf)
    name = next(iter(change))
    with pytest.raises(ValueError, match=f"{name} changed"):
        clf.set_params(**change).fit(X, y)
    clf.set_params(**{name: NDClassifier().get_params()[name]})
    _assert_unchanged(band_data, clf, state)
    # partial_fit continues the same network, and refuses the same way.
    with pytest.raises(ValueError, match=f"{name} changed"):
        clf.set_params(**change).partial_fit(X, y)


@pytest.mark.parametrize(
    "name, value, other, changed",
    [
        ("epsilon", 1e-6, np.float64(1e-6), np.float64(2e-6)),
        ("hidden_units", 5, np.int64(5), np.int64(6)),
        ("passthrough", True, np.True_, np.False_),
    ],
)
def test_warm_start_takes_an_equal_value_of_another_type(name, value, other, changed, band_data):
    # Param grids and get_params/set_params round trips through numpy give np.float64(1e-6)
    # for 1e-6: the same network, which warm_start and partial_fit used to refuse.
    X, y = band_data(600, 5, **DATA)
    clf = NDClassifier(warm_start=True, max_epochs=2, random_state=0, **{name: value}).fit(X, y)
    clf.set_params(**{name: other}).fit(X, y)
    clf.partial_fit(X, y)
    with pytest.raises(ValueError, match=f"{name} changed"):
        clf.set_params(**{name: changed}).fit(X, y)


def test_partial_fit_refuses_fewer_than_two_classes_by_name(band_data):
    X, y = band_data(600, 5, **DATA)
    for estimator in (NDClassifier(), NDTransformer()):
        for classes in ([], [1], np.array([])):
            with pytest.raises(ValueError, match=r"classes=.* at least 2"):
                estimator.partial_fit(X, y, classes=classes)  # was an IndexError


def test_fit_without_warm_start_starts_afresh_after_partial_fit(band_data):
    X, y = band_data(600, 5, **DATA)
    clf = NDClassifier(random_state=0, max_epochs=3)
    clf.partial_fit(X, y, classes=[0, 1, 2])
    clf.fit(X, y)
    assert clf.classes_.tolist() == [0, 1]
    assert clf.n_iter_ <= 3


def test_dask_ml_incremental_streams_blocks_and_predicts_lazily(band_data):
    da = pytest.importorskip("dask.array")
    wrappers = pytest.importorskip("dask_ml.wrappers")
    X, y = band_data(20000, 5, seed=2, **DATA)
    X_dask, y_dask = da.from_array(X, chunks=(4_000, 5)), da.from_array(y, chunks=4_000)
    model = wrappers.Incremental(NDClassifier(batch_size=256, random_state=0))
    model.fit(X_dask, y_dask, classes=[0, 1])
    assert model.estimator_.n_iter_ == 5  # one partial_fit call per block
    predicted = model.predict(X_dask)
    assert isinstance(predicted, da.Array)  # lazy
    assert (predicted.compute() == y).mean() > 0.95


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_partial_fit_on_cuda_matches_the_cpu_and_pickles_to_cpu(band_data):
    X, y = band_data(200, 5, **DATA)
    params = dict(batch_size=200, random_state=0, recipe="paper")
    cpu = NDClassifier(**params).partial_fit(X, y, classes=[0, 1]).partial_fit(X, y)
    gpu = NDClassifier(device="cuda", **params).partial_fit(X, y, classes=[0, 1])
    gpu = pickle.loads(pickle.dumps(gpu)).partial_fit(X, y)
    assert all(p.device.type == "cuda" for p in gpu._module.parameters())
    np.testing.assert_allclose(gpu.predict_proba(X), cpu.predict_proba(X), atol=1e-5)
