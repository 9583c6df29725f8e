"""Behaviour of NDClassifier, NDRegressor and NDTransformer beyond scikit-learn's checks."""

import pickle

import joblib
import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone
from sklearn.datasets import make_blobs
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from sknd import NDClassifier, NDRegressor, NDTransformer, raster

FAST = dict(max_epochs=15, random_state=0)


def spectra(n_samples=240, n_bands=5, seed=0):
    """Reflectance-like bands and a label driven by a band ratio (a vegetation-like index)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.02, 0.6, size=(n_samples, n_bands))
    ratio = X[:, 3] / X[:, 2]
    y = np.where(ratio > 1.4, "vegetation", np.where(ratio < 0.7, "water", "soil"))
    return X, y


def binary_spectra(**kwargs):
    X, y = spectra(**kwargs)
    return X, (y == "vegetation").astype(int)


def test_multiclass_labels_of_any_type_and_probabilities():
    X, y = spectra()
    clf = NDClassifier(**FAST).fit(X, y)
    assert list(clf.classes_) == ["soil", "vegetation", "water"]
    proba = clf.predict_proba(X)
    assert proba.shape == (len(X), 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[proba.argmax(axis=1)])
    assert clf.n_outputs_ == 3
    assert clf.score(X, y) > 0.8


def test_binary_uses_one_logit():
    X, y = binary_spectra()
    clf = NDClassifier(**FAST).fit(X, y * 2 - 1)
    assert clf.n_outputs_ == 1
    assert list(clf.classes_) == [-1, 1]
    assert clf.predict_proba(X).shape == (len(X), 2)
    # 10 pairs in, one logit out.
    assert clf.n_parameters_ == 2 * 10 + 10 + 1


def test_paper_parameter_counts_on_fitted_estimators():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(60, 10))
    y = rng.integers(0, 2, 60)
    expected = {"nd": 136, "mlp": 541, "attnd": 631}
    for architecture, count in expected.items():
        # The paper's counts are those of depth 2; depth="auto" may keep depth 3.
        clf = NDClassifier(architecture=architecture, depth=2, max_epochs=1).fit(X, y)
        assert clf.n_parameters_ == count


def test_fitted_attributes_are_numpy_and_pandas():
    X, y = binary_spectra()
    # The paper's recipe trains from the start; the default may keep the starting model
    # when nothing validates better (tests/training/test_recipe.py).
    clf = NDClassifier(**FAST, recipe="paper").fit(X, y)
    assert clf.pairs_.shape == (10, 2) and clf.pairs_.dtype == np.int64
    for name in ("coef_a_", "coef_c_", "index_importances_"):
        value = getattr(clf, name)
        assert isinstance(value, np.ndarray) and value.shape == (10,)
    assert np.any(clf.coef_a_ != 0), "coefficients should move away from their 0 init"
    assert list(clf.history_.columns) == ["epoch", "train_loss", "valid_loss", "valid_score"]
    assert clf.n_iter_ == len(clf.history_) == len(clf.loss_curve_)
    public = {k: v for k, v in vars(clf).items() if k.endswith("_") and not k.startswith("_")}
    assert not any(isinstance(v, (torch.Tensor, torch.nn.Module)) for v in public.values())


def test_mlp_has_no_indices():
    X, y = binary_spectra()
    clf = NDClassifier(architecture="mlp", **FAST).fit(X, y)
    assert clf.pairs_.shape == (0, 2) and clf.coef_a_.shape == (0,)


def test_early_stopping_restores_the_best_epoch():
    X, y = spectra(n_samples=300)
    X_val, y_val = spectra(n_samples=100, seed=1)
    # The paper's recipe: the default one refits the output layer on the training and
    # validation rows after the restore (tests/training/test_recipe.py), which moves the
    # score on X_val.
    clf = NDClassifier(max_epochs=60, patience=5, lr=0.05, random_state=0, recipe="paper")
    clf.fit(X, y, X_val=X_val, y_val=y_val)
    assert clf.best_epoch_ is not None
    assert clf.n_iter_ <= 60
    # The restored weights are those of the best epoch: their validation accuracy is the best.
    assert clf.score(X_val, y_val) == pytest.approx(clf.best_validation_score_)
    assert clf.best_validation_score_ == max(clf.validation_scores_)


def test_early_stopping_off_trains_all_epochs_without_validation():
    X, y = binary_spectra()
    clf = NDClassifier(max_epochs=7, early_stopping=False, random_state=0).fit(X, y)
    assert clf.n_iter_ == 7
    assert clf.history_["valid_score"].isna().all()
    assert clf.best_epoch_ is None and clf.best_validation_score_ is None


@pytest.mark.parametrize("Estimator", [NDClassifier, NDRegressor, NDTransformer])
def test_fit_signature_is_scikit_learns(Estimator):
    import inspect

    parameters = inspect.signature(Estimator.fit).parameters
    assert list(parameters) == ["self", "X", "y", "sample_weight", "X_val", "y_val", "groups"]
    keyword_only = [p for p in parameters.values() if p.kind is p.KEYWORD_ONLY]
    assert [p.name for p in keyword_only] == ["X_val", "y_val", "groups"]
    partial = inspect.signature(Estimator.partial_fit).parameters
    assert list(partial)[:3] == ["self", "X", "y"] and list(partial)[-1] == "sample_weight"


def test_module_and_to_torch():
    from sklearn.exceptions import NotFittedError

    X, y = spectra()
    clf = NDClassifier(**FAST)
    assert not hasattr(clf, "module_")
    with pytest.raises(NotFittedError):
        clf.to_torch()
    clf.fit(X, y)
    assert clf.module_ is clf.net_.module_
    network = clf.to_torch()
    assert network is not clf.module_ and network.training
    assert all(p.requires_grad and p.device.type == "cpu" for p in network.parameters())
    logits = network(torch.as_tensor(X, dtype=torch.float32)).detach().double()
    np.testing.assert_allclose(torch.softmax(logits, 1).numpy(), clf.predict_proba(X), atol=1e-5)
    # A copy: fine-tuning it leaves the estimator as it was.
    before = clf.predict_proba(X)
    with torch.no_grad():
        for parameter in network.parameters():
            parameter.add_(1.0)
    np.testing.assert_array_equal(clf.predict_proba(X), before)

    reg = NDRegressor(**FAST).fit(X, X[:, 0] / X[:, 1])
    output = reg.to_torch()(torch.as_tensor(X, dtype=torch.float32)).detach().double().numpy()
    # The standardized target: predict rescales it.
    np.testing.assert_allclose(np.corrcoef(output[:, 0], reg.predict(X))[0, 1], 1.0)


def test_validation_requires_both_parts():
    X, y = binary_spectra()
    with pytest.raises(ValueError, match="both X_val and y_val"):
        NDClassifier(**FAST).fit(X, y, X_val=X)


def test_regressor_single_and_multi_output():
    rng = np.random.default_rng(0)
    X = rng.uniform(0.05, 0.5, size=(200, 3))
    ndvi = (X[:, 2] - X[:, 1]) / (X[:, 2] + X[:, 1])
    reg = NDRegressor(max_epochs=40, random_state=0).fit(X, 1000 + 50 * ndvi)
    assert reg.predict(X).shape == (200,)
    assert reg.score(X, 1000 + 50 * ndvi) > 0.9  # targets far from 0: standardized inside
    Y = np.column_stack([ndvi, -3 * ndvi])
    reg = NDRegressor(max_epochs=40, random_state=0).fit(X, Y)
    assert reg.n_outputs_ == 2
    assert reg.predict(X).shape == (200, 2)
    assert reg.predict(X[:1]).shape == (1, 2)


def test_transformer_keeps_most_important_indices_with_names():
    X, y = spectra()
    frame = pd.DataFrame(X, columns=["blue", "green", "red", "nir", "swir"])
    tr = NDTransformer(n_indices=3, **FAST).fit(frame, y)
    Z = tr.transform(frame)
    assert Z.shape == (len(X), 3)
    assert np.all(np.abs(Z) <= 1)
    importances = tr.index_importances_[tr.selected_indices_]
    assert np.all(np.diff(importances) <= 0)
    names = tr.get_feature_names_out()
    assert len(names) == 3 and all(n.startswith("nd_") for n in names)
    assert "nd_red_nir" in set(tr.get_feature_names_out()) | {
        f"nd_{frame.columns[i]}_{frame.columns[j]}" for i, j in tr.pairs_
    }
    tr.set_output(transform="pandas")
    out = tr.transform(frame)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == list(names)


def test_transformer_values_are_the_learned_formula_in_the_input_dtype():
    X, y = binary_spectra()
    tr = NDTransformer(**FAST).fit(X, y)
    for dtype in (np.float32, np.float64):
        Z = tr.transform(X.astype(dtype))
        assert Z.dtype == dtype
    wa, wc = np.logaddexp(0, tr.coef_a_), np.logaddexp(0, tr.coef_c_)
    order = tr.selected_indices_
    bi, bj = X[:, tr.pairs_[order, 0]], X[:, tr.pairs_[order, 1]]
    expected = (wa[order] * bi - wc[order] * bj) / (wa[order] * bi + wc[order] * bj + 1e-6)
    np.testing.assert_allclose(tr.transform(X), expected, rtol=1e-12)


def test_transformer_regression_target_and_too_many_indices():
    rng = np.random.default_rng(0)
    X = rng.uniform(0.05, 0.5, size=(100, 3))
    tr = NDTransformer(**FAST).fit(X, X[:, 0] / X[:, 1])
    assert tr.n_outputs_ == 1
    with pytest.raises(ValueError, match="n_indices=4 exceeds the 3 band pairs"):
        NDTransformer(n_indices=4, **FAST).fit(X, X[:, 0] / X[:, 1])


def test_transformer_feeds_logistic_regression():
    X, y = spectra()
    model = make_pipeline(NDTransformer(n_indices=4, **FAST), LogisticRegression(max_iter=500))
    assert model.fit(X, y).score(X, y) > 0.8


def test_pipeline_and_cross_val_score():
    X, y = binary_spectra()
    scores = cross_val_score(make_pipeline(NDClassifier(**FAST)), X, y, cv=3)
    assert scores.shape == (3,) and scores.mean() > 0.7


# n_jobs=2 starts joblib's worker processes (each imports torch): behind the slow marker.
@pytest.mark.parametrize("n_jobs", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_grid_search_over_depth_and_epsilon(n_jobs):
    X, y = binary_spectra(n_samples=150)
    search = GridSearchCV(
        NDClassifier(max_epochs=5, random_state=0),
        {"depth": [2, 3], "epsilon": [1e-6, 1e-3]},
        cv=2,
        n_jobs=n_jobs,
    ).fit(X, y)
    assert len(search.cv_results_["params"]) == 4
    assert search.best_estimator_.depth in (2, 3)


def test_dataframe_feature_names_are_checked_at_predict():
    X, y = binary_spectra()
    frame = pd.DataFrame(X, columns=["b1", "b2", "b3", "b4", "b5"])
    clf = NDClassifier(**FAST).fit(frame, y)
    np.testing.assert_array_equal(clf.feature_names_in_, frame.columns)
    with pytest.raises(ValueError, match="same order"):
        clf.predict(frame[frame.columns[::-1]])


def test_negative_values_point_to_the_signed_variants():
    X, y = binary_spectra()
    X[0, 0] = -0.01
    with pytest.raises(ValueError, match="variant='signed'"):
        NDClassifier(variant="reflectance", **FAST).fit(X, y)
    for variant in ("signed", "softplus"):
        NDClassifier(variant=variant, **FAST).fit(X, y)
    assert NDClassifier(variant="reflectance").__sklearn_tags__().input_tags.positive_only
    assert not NDClassifier(variant="signed").__sklearn_tags__().input_tags.positive_only
    assert not NDClassifier().__sklearn_tags__().input_tags.positive_only  # "auto"
    clf = NDClassifier(**FAST).fit(np.abs(X), y)
    assert clf.variant_ == "reflectance"
    with pytest.raises(ValueError, match="Negative values"):
        clf.predict(X)


def test_auto_variant_is_signed_for_signed_data_and_refuses_fill_values(capsys):
    X, y = binary_spectra()
    signed = X - X.mean(axis=0)
    # Centred bands, as a scaler leaves them: said (tests/estimators/test_validation.py), and
    # not named.
    with pytest.warns(UserWarning, match="looks standardized.*variant_ is 'signed'"):
        clf = NDClassifier(**FAST, verbose=1).fit(signed, y)
    assert clf.variant_ == "signed" and clf.get_params()["variant"] == "auto"
    out = capsys.readouterr().out
    assert "variant_='signed'" in out and "indices_: No known index names" in out
    with pytest.warns(UserWarning, match="looks standardized"):
        same = NDClassifier(**FAST, variant="signed").fit(signed, y)
    np.testing.assert_array_equal(clf.predict(signed), same.predict(signed))
    fitted = NDClassifier(**FAST).fit(X, y)
    before = fitted.predict_proba(X)
    for fill in ([-9999.0], [-32768.0], [-5.0] * X.shape[1]):
        bad = X.copy()
        bad[3, : len(fill)] = fill
        with pytest.raises(ValueError, match="Negative values.*look like no-data fill values"):
            fitted.fit(bad, y)
        np.testing.assert_array_equal(fitted.predict_proba(X), before)  # unchanged


def test_non_finite_input_is_rejected():
    X, y = binary_spectra()
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        NDClassifier(**FAST).fit(X, y)


def test_same_random_state_gives_bit_identical_predictions():
    X, y = spectra()
    first = NDClassifier(**FAST).fit(X, y).predict_proba(X)
    second = NDClassifier(**FAST).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(first, second)
    other = NDClassifier(max_epochs=15, random_state=1).fit(X, y).predict_proba(X)
    assert not np.array_equal(first, other)


def test_fit_leaves_global_torch_state_alone():
    X, y = binary_spectra()
    torch.manual_seed(123)
    rng_state = torch.random.get_rng_state()
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        NDClassifier(**FAST).fit(X, y).predict(X)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(torch.random.get_rng_state(), rng_state)


def test_fit_trains_with_one_torch_thread(monkeypatch):
    from sknd._training._adam import FlatAdam

    seen = []
    original = FlatAdam.packed_step  # every optimizer step, fused or autograd path

    def spy(self, *args, **kwargs):
        seen.append(torch.get_num_threads())
        return original(self, *args, **kwargs)

    monkeypatch.setattr(FlatAdam, "packed_step", spy)
    X, y = binary_spectra(n_samples=40)
    NDClassifier(max_epochs=1, random_state=0).fit(X, y)
    assert seen and set(seen) == {1}


@pytest.mark.parametrize("dump, load", [(pickle.dumps, pickle.loads), (None, None)])
def test_pickle_joblib_and_clone(tmp_path, dump, load):
    X, y = spectra()
    clf = NDClassifier(**FAST).fit(X, y)
    if dump is None:
        joblib.dump(clf, tmp_path / "model.joblib")
        restored = joblib.load(tmp_path / "model.joblib")
    else:
        restored = load(dump(clf))
    np.testing.assert_array_equal(restored.predict_proba(X), clf.predict_proba(X))
    fresh = clone(clf)
    assert fresh.get_params() == clf.get_params()
    assert not hasattr(fresh, "pairs_")


def test_cuda_request_without_gpu_is_a_clear_error():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: covered by test_cuda_fit_and_cpu_predictions")
    X, y = binary_spectra()
    with pytest.raises(ValueError, match="no CUDA GPU"):
        NDClassifier(device="cuda", **FAST).fit(X, y)
    assert NDClassifier(device="auto", **FAST).fit(X, y).n_iter_ > 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_fit_and_cpu_predictions():
    X, y = spectra()
    gpu = NDClassifier(device="cuda", **FAST).fit(X, y)
    cpu_copy = pickle.loads(pickle.dumps(gpu))
    assert all(p.device.type == "cpu" for p in cpu_copy._module.parameters())
    np.testing.assert_allclose(gpu.predict_proba(X), cpu_copy.predict_proba(X), atol=1e-5)
    # Scenes: the GPU model predicts through its own methods, the CPU copy on sknd's fast path.
    image = X[:60].reshape(6, 10, -1)
    np.testing.assert_allclose(
        raster.predict_proba(gpu, image), raster.predict_proba(cpu_copy, image), atol=1e-5
    )


CUDA_CASES = {
    "classifier": (NDClassifier(**FAST), "predict_proba"),
    "auto-device": (NDClassifier(device="auto", **FAST), "predict_proba"),
    "no-early-stopping": (NDClassifier(early_stopping=False, **FAST), "predict_proba"),
    "regressor": (NDRegressor(**FAST), "predict"),
    "transformer": (NDTransformer(n_indices=3, **FAST), "transform"),
    "attnd": (NDClassifier(architecture="attnd", **FAST), "predict_proba"),
    "mlp": (NDClassifier(architecture="mlp", **FAST), "predict_proba"),
    "signed-deep-passthrough": (
        NDClassifier(variant="signed", depth=3, passthrough=True, **FAST),
        "predict_proba",
    ),
}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("case", list(CUDA_CASES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cuda_fits_are_reproducible_and_match_cpu_fits(case, dtype):
    estimator, method = CUDA_CASES[case]
    X, labels = spectra()
    X = X.astype(dtype)
    y = X[:, 3] / X[:, 2] if case == "regressor" else labels
    device = "auto" if case == "auto-device" else "cuda"
    cuda_rng = torch.cuda.get_rng_state()
    gpu = clone(estimator).set_params(device=device).fit(X, y)
    assert all(p.device.type == "cuda" for p in gpu._module.parameters())
    assert torch.equal(torch.cuda.get_rng_state(), cuda_rng)  # the caller's CUDA RNG is left alone
    again = clone(estimator).set_params(device=device).fit(X, y)
    cpu = clone(estimator).set_params(device="cpu").fit(X, y)
    result = getattr(gpu, method)(X)
    # random_state makes a GPU fit reproducible, bit for bit.
    np.testing.assert_array_equal(result, getattr(again, method)(X))
    expected = getattr(cpu, method)(X)
    assert result.dtype == expected.dtype and result.shape == expected.shape
    # Same initial weights and shuffles (drawn on the CPU): the GPU fit follows the CPU fit up
    # to float32 rounding.
    np.testing.assert_allclose(gpu.loss_curve_[0], cpu.loss_curve_[0], rtol=1e-4)
    # Rounding differences grow over the epochs; a deep passthrough network amplifies them
    # most (3.5e-3 at most on an H200, benchmarks/gpu_check.sh).
    close = 5e-3 if case == "signed-deep-passthrough" else 1e-3
    np.testing.assert_allclose(result, expected, atol=close, rtol=close)


def test_poor_score_tag_is_true():
    """The ND model's poor_score tag tells the truth on scikit-learn's reference problem.

    check_classifiers_train asks for 0.83 accuracy on 3 blobs in 2 features shifted to be
    non-negative. A normalized difference of 2 bands is a monotone function of b0 / b1 for
    any learned weights: the information left is the ratio, and a few thresholds on it score
    0.80. The MLP baseline, which sees the raw bands, passes.
    """
    X, y = make_blobs(n_samples=300, random_state=0)
    X = StandardScaler().fit_transform(X)
    X -= X.min()
    ratio = (X[:, 0] / (X[:, 0] + X[:, 1])).reshape(-1, 1)
    eight_intervals = DecisionTreeClassifier(max_depth=3, random_state=0).fit(ratio, y)
    assert eight_intervals.score(ratio, y) < 0.83
    assert NDClassifier(random_state=0).fit(X, y).score(X, y) < 0.83
    assert NDClassifier().__sklearn_tags__().classifier_tags.poor_score
    assert NDClassifier(architecture="mlp", random_state=0).fit(X, y).score(X, y) > 0.83
    assert not NDClassifier(architecture="mlp").__sklearn_tags__().classifier_tags.poor_score
    assert NDClassifier(passthrough=True, random_state=0).fit(X, y).score(X, y) > 0.83
    assert not NDClassifier(passthrough=True).__sklearn_tags__().classifier_tags.poor_score


def test_fits_in_threads_match_serial_fits():
    """Fits running in threads of one process are as reproducible as serial ones."""
    from concurrent.futures import ThreadPoolExecutor

    X, y = binary_spectra(n_samples=80)
    threads = torch.get_num_threads()

    def fit(seed):
        return NDClassifier(max_epochs=3, random_state=seed).fit(X, y).predict_proba(X)

    serial = [fit(seed) for seed in range(6)]
    with ThreadPoolExecutor(3) as pool:
        threaded = list(pool.map(fit, range(6)))
    for expected, got in zip(serial, threaded):
        np.testing.assert_array_equal(got, expected)
    assert torch.get_num_threads() == threads


# --- groups: a group-aware internal validation split, routed by metadata routing ----------


def test_fit_groups_hold_out_whole_groups_for_early_stopping():
    from sknd._data._tasks import ClassificationTask

    rng = np.random.default_rng(0)
    X = np.column_stack([np.arange(200.0) + 1, rng.uniform(1, 2, 200)])
    y = np.tile([0, 1], 100)
    groups = np.repeat(np.arange(20), 10)
    estimator = NDClassifier(validation_fraction=0.25)
    task = ClassificationTask(y)
    from sknd._data._parts import Part

    train, valid = estimator._validation_split(Part(X, task.encoded), task, None, None, 0, groups)
    X_train, X_valid = train.X, valid.X
    train_groups = set(groups[X_train[:, 0].astype(int) - 1])
    valid_groups = set(groups[X_valid[:, 0].astype(int) - 1])
    assert train_groups.isdisjoint(valid_groups)
    assert len(valid_groups) == 5  # a quarter of the groups, whole
    assert len(X_train) + len(X_valid) == 200


@pytest.mark.parametrize(
    ("groups", "message"),
    [(np.zeros(60), "one group"), (np.arange(59), "one label per sample")],
)
def test_fit_groups_bad_input(groups, message):
    rng = np.random.default_rng(0)
    X, y = rng.uniform(1, 2, (60, 3)), np.tile([0, 1], 30)
    with pytest.raises(ValueError, match=message):
        NDClassifier(max_epochs=2).fit(X, y, groups=groups)


def test_groups_routed_through_cross_validation_and_grid_search():
    import sklearn
    from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_score

    rng = np.random.default_rng(0)
    X = rng.uniform(1, 10, (120, 3))
    y = (X[:, 0] > X[:, 1]).astype(int)
    groups = np.repeat(np.arange(12), 10)
    seen = []

    class Spy(NDClassifier):
        def fit(self, X, y, X_val=None, y_val=None, groups=None):
            seen.append(None if groups is None else len(np.unique(groups)))
            return super().fit(X, y, X_val=X_val, y_val=y_val, groups=groups)

    with sklearn.config_context(enable_metadata_routing=True):
        estimator = Spy(max_epochs=2).set_fit_request(groups=True)
        scores = cross_val_score(estimator, X, y, cv=GroupKFold(3), params={"groups": groups})
        search = GridSearchCV(estimator, {"depth": [2]}, cv=GroupKFold(3))
        search.fit(X, y, groups=groups)
    assert len(scores) == 3
    # Each training part of a 3-fold split over 12 groups holds 8 groups.
    assert seen[:3] == [8, 8, 8]
    assert seen[-1] == 12  # the refit on all data


def test_classifier_decision_function_is_the_logits():
    X, y = spectra()
    clf = NDClassifier(**FAST).fit(X, y)
    scores = clf.decision_function(X)
    assert scores.shape == (len(X), 3)
    np.testing.assert_array_equal(clf.classes_[scores.argmax(1)], clf.predict(X))
    softmax = np.exp(scores - scores.max(1, keepdims=True))
    np.testing.assert_allclose(softmax / softmax.sum(1, keepdims=True), clf.predict_proba(X))
    X, y = binary_spectra()
    binary = NDClassifier(**FAST).fit(X, y)
    scores = binary.decision_function(X)
    assert scores.shape == (len(X),)
    np.testing.assert_allclose(1 / (1 + np.exp(-scores)), binary.predict_proba(X)[:, 1])


@pytest.mark.parametrize("Estimator", [NDClassifier, NDRegressor])
def test_transform_gives_the_learned_indices_export_formulas_writes(Estimator):
    X, y = spectra()
    frame = pd.DataFrame(X, columns=["B2", "B4", "B8", "B11", "B12"][: X.shape[1]])
    target = y if Estimator is NDClassifier else X[:, 1] / X[:, 0]
    model = Estimator(**FAST).fit(frame, target)
    values = model.transform(frame)
    assert values.shape == (len(X), len(model.indices_))
    namespace = {"np": np, **{name: frame[name].to_numpy() for name in frame.columns}}
    formulas = model.export_formulas(format="numpy")
    np.testing.assert_allclose(np.column_stack([eval(f, namespace) for f in formulas]), values)
    assert model.transform(frame.astype(np.float32)).dtype == np.float32
    pairs = model.indices_[["band_i", "band_j"]].values
    assert model.get_feature_names_out().tolist() == [f"nd_{i}_{j}" for i, j in pairs]
    np.testing.assert_array_equal(Estimator(**FAST).fit_transform(frame, target), values)
    mlp = Estimator(architecture="mlp")
    assert not any(hasattr(mlp, name) for name in ["transform", "fit_transform"])
    assert mlp.__sklearn_tags__().transformer_tags is None


@pytest.mark.parametrize("Estimator", [NDClassifier, NDRegressor])
def test_set_output_on_the_predictors_as_on_scikit_learn_transformers(Estimator):
    # make_pipeline(StandardScaler(), NDClassifier()).set_output(transform="pandas") raised
    # "set_output is not available", where LogisticRegression works.
    from sklearn.preprocessing import FunctionTransformer

    make_pipeline(StandardScaler(), Estimator()).set_output(transform="pandas")
    X, y = spectra()
    frame = pd.DataFrame(X, columns=["B2", "B4", "B8", "B11", "B12"][: X.shape[1]])
    target = y if Estimator is NDClassifier else X[:, 1] / X[:, 0]
    pipe = make_pipeline(FunctionTransformer(), Estimator(**FAST)).set_output(transform="pandas")
    model = pipe.fit(frame, target)[-1]
    out = model.transform(frame)
    assert isinstance(out, pd.DataFrame) and out.index.equals(frame.index)
    assert out.columns.tolist() == model.get_feature_names_out().tolist()
    default = model.set_output(transform="default").transform(frame)
    np.testing.assert_array_equal(out.to_numpy(), default)
    refit = clone(model).set_output(transform="pandas").fit_transform(frame, target)
    assert isinstance(refit, pd.DataFrame)
    # The MLP baseline has no indices: no transform, so no set_output (pipelines skip it).
    mlp = Estimator(architecture="mlp")
    assert not hasattr(mlp, "set_output")
    make_pipeline(StandardScaler(), mlp).set_output(transform="pandas")


def test_a_one_row_validation_part_scores_nan_without_a_warning():
    import warnings

    X = np.random.default_rng(0).uniform(0.1, 1.0, (4, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scikit-learn's UndefinedMetricWarning included
        reg = NDRegressor(max_epochs=2, random_state=0).fit(X, X[:, 0])
    assert np.isnan(reg.validation_scores_).all()
