"""Messy inputs: every bad input gets a ValueError naming the problem and the fix.

Satellite and field data come with NaN fill values, no-data zeros, DN up to 65535,
negative surface reflectance and shuffled DataFrame columns. Each case below is run
through ``fit`` and through every prediction method of every estimator; a case passes
when the error is a ``ValueError`` whose message matches all the given patterns
(the problem *and* the fix), or when the estimator returns finite outputs.
"""

import re
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch
from sklearn.exceptions import NotFittedError

import sknd._data._validation
from sknd import NDClassifier, NDRegressor, NDTransformer

FAST = dict(max_epochs=3, batch_size=16, random_state=0)
KINDS = ("classifier", "regressor", "transformer")
ESTIMATORS = {"classifier": NDClassifier, "regressor": NDRegressor, "transformer": NDTransformer}
# Every prediction method of every estimator.
METHODS = [
    ("classifier", "predict"),
    ("classifier", "predict_proba"),
    ("regressor", "predict"),
    ("transformer", "transform"),
]


def make_data(kind, n_samples=30, n_bands=4, seed=0):
    """Reflectance-like bands; an NDVI-like target (regressor) or its sign (others)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.02, 0.6, size=(n_samples, n_bands))
    ndvi = (X[:, -1] - X[:, -2]) / (X[:, -1] + X[:, -2])
    y = ndvi if kind == "regressor" else (ndvi > 0).astype(int)
    return X, y


def make(kind, **params):
    return ESTIMATORS[kind](**{**FAST, **params})


_FITTED = {}


def fitted(kind):
    """A fitted estimator per kind, shared by the prediction-time tests (never modified)."""
    if kind not in _FITTED:
        _FITTED[kind] = make(kind).fit(*make_data(kind))
    return _FITTED[kind]


def assert_value_error(call, patterns):
    """``call()`` raises a ValueError whose message matches every regex in ``patterns``."""
    with pytest.raises(ValueError) as info:
        call()
    message = str(info.value)
    missing = [p for p in patterns if not re.search(p, message, flags=re.IGNORECASE)]
    assert not missing, f"message lacks {missing}:\n{message}"


def assert_finite_output(output, n_samples):
    output = np.asarray(output)
    assert output.shape[0] == n_samples
    if output.dtype.kind == "f":
        assert np.all(np.isfinite(output))


# ---------------------------------------------------------------------------------------
# Corrupted band values: each corrupts a clean X the same way at fit and at predict.
def _set(rows, cols, value):
    def corrupt(X):
        X = np.array(X, dtype=np.float64)
        X[rows, cols] = value
        return X

    return corrupt


def _nullable_frame(X):
    frame = pd.DataFrame(X, columns=[f"b{i}" for i in range(X.shape[1])]).astype("Float64")
    frame.iloc[3, 2] = pd.NA
    return frame


def _object_with_none(X):
    X = X.astype(object)
    X[4, 0] = None
    return X


def _strings(X):
    X = X.astype(str)
    X[1, 1] = "cloud"
    return X


def _label_column(X):
    frame = pd.DataFrame(X, columns=[f"b{i}" for i in range(X.shape[1])])
    frame["landcover"] = "forest"
    return frame


def _float16_overflow(X):
    # 16-bit digital numbers do not fit float16 (max 65504): 65535 becomes inf.
    with np.errstate(over="ignore"):
        X = (X * 65535).astype(np.float16)
        X[0, 0] = np.float16(65535.0)
    return X


BAD_VALUES = {
    "nan": (
        _set([2, 5], 1, np.nan),
        [r"Input X contains NaN", r"2 values", r"2 rows", "imput", "no-data"],
    ),
    "pandas_NA": (_nullable_frame, [r"Input X contains NaN", r"1 value", "b2", "imput"]),
    "object_None": (_object_with_none, [r"Input X contains NaN", "imput"]),
    "+inf": (_set(3, 0, np.inf), [r"Input X contains infinity", r"1 value", "replace|drop|mask"]),
    "-inf": (
        _set([0, 1], 2, -np.inf),
        [r"Input X contains infinity", r"2 values", "replace|drop|mask"],
    ),
    "float16_DN_overflow": (_float16_overflow, [r"infinity", "float16", "float32"]),
    "negative_reflectance": (
        _set(4, 1, -0.004),
        [r"Negative values in data passed to", r"1 value", "clip", "variant='signed'"],
    ),
    "negative_fill_value": (
        _set(6, slice(None), -9999.0),
        [r"Negative values", "fill|no-data", "mask"],
    ),
    "huge_1e30": (lambda X: X * 1e30, [r"too large", r"1e\+15", "rescale|divide", "fill|no-data"]),
    "netcdf_fill_value": (_set(1, 2, 9.96921e36), [r"too large", r"1 value", "fill|no-data"]),
    "strings": (_strings, [r"numeric", "cloud"]),
    "label_column": (_label_column, [r"numeric", "landcover", "drop"]),
    "complex": (lambda X: X + 1j, ["complex"]),
    "3d_image": (lambda X: X.reshape(len(X), 2, -1), [r"dim 3", r"reshape"]),
}


@pytest.mark.parametrize("case", BAD_VALUES)
@pytest.mark.parametrize("kind", KINDS)
def test_bad_band_values_at_fit(kind, case):
    corrupt, patterns = BAD_VALUES[case]
    X, y = make_data(kind)
    model = make(kind)
    if case == "negative_reflectance":
        # variant="auto" (the default) takes slightly negative bands as signed data
        # (test_estimators.py); the reflectance variant refuses them with this message.
        model.set_params(variant="reflectance")
    assert_value_error(lambda: model.fit(corrupt(X), y), patterns)


@pytest.mark.parametrize("case", BAD_VALUES)
@pytest.mark.parametrize("kind, method", METHODS)
def test_bad_band_values_at_predict(kind, method, case):
    corrupt, patterns = BAD_VALUES[case]
    X, _ = make_data(kind, seed=1)
    estimator = fitted(kind)
    with warnings.catch_warnings():
        # A DataFrame at predict after a fit on arrays warns about feature names; fine here.
        warnings.simplefilter("ignore", UserWarning)
        assert_value_error(lambda: getattr(estimator, method)(corrupt(X)), patterns)


# ---------------------------------------------------------------------------------------
# Shapes
SHAPES = {
    "empty": (lambda X: X[:0], [r"0 sample\(s\)", "minimum of 1"]),
    "1d": (lambda X: X[:, 0], [r"Expected 2D array", "reshape"]),
}


@pytest.mark.parametrize("case", SHAPES)
@pytest.mark.parametrize("kind", KINDS)
def test_bad_shapes_at_fit(kind, case):
    reshape, patterns = SHAPES[case]
    X, y = make_data(kind)
    Xb = reshape(X)
    assert_value_error(lambda: make(kind).fit(Xb, y[: len(Xb)]), patterns)


@pytest.mark.parametrize("case", SHAPES)
@pytest.mark.parametrize("kind, method", METHODS)
def test_bad_shapes_at_predict(kind, method, case):
    reshape, patterns = SHAPES[case]
    X, _ = make_data(kind, seed=1)
    assert_value_error(lambda: getattr(fitted(kind), method)(reshape(X)), patterns)


@pytest.mark.parametrize("kind", KINDS)
def test_one_band_has_no_pair(kind):
    X, y = make_data(kind)
    assert_value_error(
        lambda: make(kind).fit(X[:, :1], y), [r"1 feature\(s\)", "minimum of 2", "pair", "band"]
    )


@pytest.mark.parametrize("kind, method", METHODS)
def test_wrong_number_of_bands_at_predict(kind, method):
    X, _ = make_data(kind, n_bands=3, seed=1)
    assert_value_error(
        lambda: getattr(fitted(kind), method)(X), [r"X has 3 features", "expecting 4 features"]
    )


@pytest.mark.parametrize("kind, method", METHODS)
def test_one_sample_at_predict(kind, method):
    X, _ = make_data(kind, seed=1)
    assert_finite_output(getattr(fitted(kind), method)(X[:1]), 1)


@pytest.mark.parametrize("kind", KINDS)
def test_one_sample_at_fit(kind):
    X, y = make_data(kind)
    if kind == "regressor":
        # The early-stopping split leaves nothing to train on: say so and how to fix it.
        assert_value_error(
            lambda: make(kind).fit(X[:1], y[:1]), ["n_samples=1", "early_stopping=False|X_val"]
        )
        # Without the split one sample is a (constant) regression problem.
        model = make(kind, early_stopping=False).fit(X[:1], y[:1])
        assert_finite_output(model.predict(X), len(X))
    else:
        # One sample is one class, whatever the split.
        for early_stopping in (True, False):
            model = make(kind, early_stopping=early_stopping)
            assert_value_error(lambda m=model: m.fit(X[:1], y[:1]), ["one class", "2 classes"])


@pytest.mark.parametrize("kind", ["classifier", "transformer"])
def test_single_class(kind):
    X, _ = make_data(kind)
    labels = np.full(len(X), "water")
    assert_value_error(lambda: make(kind).fit(X, labels), ["one class", "2 classes", "water"])


def test_constant_regression_target_gives_finite_constant_predictions():
    X, _ = make_data("regressor")
    prediction = make("regressor").fit(X, np.full(len(X), 0.3)).predict(X)
    np.testing.assert_allclose(prediction, 0.3, atol=1e-6)


# ---------------------------------------------------------------------------------------
# Targets
@pytest.mark.parametrize(
    "case, corrupt, patterns",
    [
        ("nan", lambda y: np.where(np.arange(len(y)) == 3, np.nan, y), [r"Input y contains NaN"]),
        ("inf", lambda y: np.where(np.arange(len(y)) == 3, np.inf, y), [r"Input y contains inf"]),
        ("strings", lambda y: np.array(["high"] * len(y), dtype=object), ["convert|numeric"]),
        ("length", lambda y: y[:-1], [r"inconsistent numbers of samples"]),
    ],
)
def test_bad_regression_targets(case, corrupt, patterns):
    X, y = make_data("regressor")
    assert_value_error(lambda: make("regressor").fit(X, corrupt(y)), patterns)


@pytest.mark.parametrize("magnitude", [1e-300, 1e30, 1e200])
def test_extreme_regression_targets_give_finite_predictions(magnitude):
    X, y = make_data("regressor")
    prediction = make("regressor").fit(X, y * magnitude).predict(X)
    assert np.all(np.isfinite(prediction))
    assert np.abs(prediction).max() < 10 * magnitude


def test_regression_targets_beyond_float64_comfort_are_rejected():
    X, y = make_data("regressor")
    assert_value_error(lambda: make("regressor").fit(X, y * 1e305), ["y", "too large", "rescale"])


def test_classification_labels_with_nan():
    X, y = make_data("classifier")
    labels = y.astype(float)
    labels[0] = np.nan
    assert_value_error(lambda: make("classifier").fit(X, labels), [r"Input y contains NaN"])


def test_transformer_fitted_without_y():
    X, _ = make_data("transformer")
    patterns = ["requires y to be passed", "supervised", r"fit\(X, y\)"]
    assert_value_error(lambda: make("transformer").fit(X), patterns)
    assert_value_error(lambda: make("transformer").fit(X, None), patterns)
    assert_value_error(lambda: make("transformer").fit_transform(X), patterns)


# ---------------------------------------------------------------------------------------
# Validation data
def test_bad_validation_data_is_named():
    X, y = make_data("classifier")
    X_val, y_val = make_data("classifier", n_samples=10, seed=2)
    bad = X_val.copy()
    bad[1, 1] = np.nan
    assert_value_error(
        lambda: make("classifier").fit(X, y, X_val=bad, y_val=y_val), ["X_val", "NaN", "imput"]
    )
    assert_value_error(
        lambda: make("classifier").fit(X, y, X_val=X_val[:, :3], y_val=y_val),
        ["X_val", "3 features", "expecting 4"],
    )
    assert_value_error(
        lambda: make("classifier").fit(X, y, X_val=-X_val, y_val=y_val),
        ["X_val", "Negative values"],
    )
    assert_value_error(lambda: make("classifier").fit(X, y, X_val=X_val), ["both X_val and y_val"])


# ---------------------------------------------------------------------------------------
# DataFrame columns
@pytest.mark.parametrize("kind, method", METHODS)
def test_renamed_or_reordered_columns_at_predict(kind, method):
    X, y = make_data(kind)
    names = ["blue", "green", "red", "nir"]
    model = make(kind).fit(pd.DataFrame(X, columns=names), y)
    predict = getattr(model, method)
    renamed = pd.DataFrame(X, columns=["B2", "B3", "B4", "B8"])
    assert_value_error(lambda: predict(renamed), ["feature names should match", "unseen at fit"])
    shuffled = pd.DataFrame(X, columns=names)[["nir", "red", "green", "blue"]]
    assert_value_error(lambda: predict(shuffled), ["feature names", "same order"])
    # The same columns in the fit order work, and give the array's results.
    np.testing.assert_array_equal(predict(shuffled[names]), predict(pd.DataFrame(X, columns=names)))
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        predict(X)


@pytest.mark.parametrize("kind, method", METHODS)
def test_predict_before_fit(kind, method):
    X, _ = make_data(kind)
    with pytest.raises(NotFittedError):
        getattr(make(kind), method)(X)


# ---------------------------------------------------------------------------------------
# Sparse matrices are densified up to a documented size, then rejected with the fix.
@pytest.mark.parametrize("kind, method", METHODS)
def test_sparse_input_is_densified(kind, method):
    X, y = make_data(kind)
    X[X < 0.2] = 0
    dense = getattr(make(kind).fit(X, y), method)(X)
    for fmt in ("csr", "csc", "coo"):
        sparse_X = getattr(sp, f"{fmt}_matrix")(X)
        model = make(kind).fit(sparse_X, y)
        np.testing.assert_array_equal(getattr(model, method)(sp.csr_array(X)), dense)


def test_sparse_input_over_the_limit_is_rejected(monkeypatch):
    monkeypatch.setattr(sknd._data._validation, "MAX_SPARSE_DENSIFY_SIZE", 50)
    X, y = make_data("classifier")
    assert_value_error(
        lambda: make("classifier").fit(sp.csr_matrix(X), y), ["sparse", "toarray", "50"]
    )
    model = fitted("classifier")
    assert_value_error(lambda: model.predict(sp.csr_matrix(X)), ["sparse", "toarray"])


# ---------------------------------------------------------------------------------------
# Parameters
BAD_PARAMS = [
    (dict(depth=1), ["depth", r"range \[2, inf\)"]),
    (dict(depth=0), ["depth"]),
    (dict(depth=2.5), ["depth", "int"]),
    (dict(epsilon=0.0), ["epsilon", "range"]),
    (dict(epsilon=-1e-6), ["epsilon", "range"]),
    (dict(epsilon=np.nan), ["epsilon"]),
    (dict(epsilon=np.inf), ["epsilon"]),
    # Below float32's reach the stabiliser vanishes and all-zero rows give 0 / 0.
    (dict(epsilon=1e-50), ["epsilon", "range"]),
    (dict(variant="ratio"), ["variant", "reflectance"]),
    (dict(architecture="cnn"), ["architecture", "attnd"]),
    (dict(pairs="some"), ["pairs"]),
    (dict(pairs=[(0, 0)]), ["pairs", "different bands"]),
    (dict(pairs=[(0, 9)]), ["pairs", "outside"]),
    (dict(pairs=[(0, 1), (1, 0)]), ["pairs", "twice"]),
    (dict(pairs=[(0.5, 1)]), ["pairs", "integer"]),
    (dict(pairs=[]), ["pairs", "non-empty"]),
    (dict(pairs=[(0, 1, 2)]), ["pairs"]),
    (dict(hidden_units=0), ["hidden_units"]),
    (dict(lr=0.0), ["lr"]),
    (dict(lr=np.nan), ["lr"]),
    (dict(batch_size=0), ["batch_size"]),
    (dict(max_epochs=0), ["max_epochs"]),
    (dict(validation_fraction=1.0), ["validation_fraction"]),
    (dict(device="gpu"), ["device", "cuda"]),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("params, patterns", BAD_PARAMS, ids=lambda v: str(v)[:40])
def test_invalid_parameters(kind, params, patterns):
    X, y = make_data(kind)
    assert_value_error(lambda: make(kind, **params).fit(X, y), patterns)


def test_invalid_transformer_parameters():
    X, y = make_data("transformer")
    assert_value_error(lambda: make("transformer", architecture="mlp").fit(X, y), ["architecture"])
    assert_value_error(lambda: make("transformer", n_indices=0).fit(X, y), ["n_indices"])
    assert_value_error(lambda: make("transformer", n_indices=7).fit(X, y), ["n_indices=7", "6"])


# ---------------------------------------------------------------------------------------
# Numerical extremes: finite outputs, a finite loss curve, or a clear error.
ARCHITECTURE_VARIANTS = [
    ("nd", "reflectance"),
    ("nd", "signed"),
    ("nd", "softplus"),
    ("attnd", "reflectance"),
    ("mlp", "reflectance"),
]


def _check_finite_fit(model, X, n_outputs=None):
    assert np.all(np.isfinite(model.loss_curve_))
    method = "transform" if isinstance(model, NDTransformer) else "predict"
    output = getattr(model, method)(X)
    assert_finite_output(output, len(X))
    if isinstance(model, NDClassifier):
        assert np.all(np.isfinite(model.predict_proba(X)))
    return output


@pytest.mark.filterwarnings("ignore:1 of 30 training rows have every band equal to 0")
@pytest.mark.parametrize("architecture, variant", ARCHITECTURE_VARIANTS)
@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_16_bit_digital_numbers(kind, architecture, variant):
    X, y = make_data(kind)
    dn = np.round(X / 0.6 * 65535).astype(np.uint16)
    dn[0] = 0
    dn[1] = 65535
    model = make(kind, architecture=architecture, variant=variant).fit(dn, y)
    _check_finite_fit(model, dn)


@pytest.mark.parametrize("scale", [1e-30, 1e-12, 1e12, 1e15])
@pytest.mark.parametrize("architecture, variant", ARCHITECTURE_VARIANTS)
def test_extreme_scales_give_finite_models(architecture, variant, scale):
    X, y = make_data("regressor")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the tiny-scale warning, tested below
        model = make("regressor", architecture=architecture, variant=variant).fit(X * scale, y)
    _check_finite_fit(model, X * scale)


@pytest.mark.parametrize("scale", [1e-30, 1.0, 65535.0, 1e15])
@pytest.mark.parametrize("kind", KINDS)
def test_raw_band_passthrough_at_extreme_scales(kind, scale):
    """The standardized raw bands beside the indices stay finite at every scale."""
    X, y = make_data(kind)
    X[:, 0] = X[0, 0]  # a constant band: standardized with scale 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the tiny-scale warning
        model = make(kind, passthrough=True).fit(X * scale, y)
    _check_finite_fit(model, X * scale)
    bad = X * scale
    bad[2, 3] = np.nan
    method = "transform" if kind == "transformer" else "predict"
    assert_value_error(lambda: getattr(model, method)(bad), ["NaN", "1 value"])


@pytest.mark.parametrize("variant", ["reflectance", "signed"])
def test_tiny_band_values_warn_that_epsilon_dominates(variant):
    X, y = make_data("classifier")
    with pytest.warns(UserWarning, match=r"epsilon.*(rescale|multiply)"):
        make("classifier", variant=variant).fit(X * 1e-30, y)


def test_all_zero_rows_warn_at_fit_and_predict_finite():
    X, y = make_data("classifier")
    X[:4] = 0
    with pytest.warns(UserWarning, match=r"4 of 30 .*rows.* 0.*no-data"):
        model = make("classifier").fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning at predict: images have no-data pixels
        proba = model.predict_proba(np.zeros((3, 4)))
    assert np.all(np.isfinite(proba))


@pytest.mark.parametrize("kind, method", METHODS)
def test_inputs_at_the_magnitude_limit(kind, method):
    X, _ = make_data(kind, seed=1)
    X = X * 1e15
    X[0, 0] = 1e15
    assert_finite_output(getattr(fitted(kind), method)(X), len(X))
    X[0, 0] = 1.01e15
    assert_value_error(lambda: getattr(fitted(kind), method)(X), ["too large"])


def _poison_step_after(monkeypatch, n_steps, exception=None):
    """Make the optimizer's ``n_steps + 1``-th step write NaN into the weights (or raise)."""
    from sknd._training._adam import FlatAdam

    original = FlatAdam.packed_step  # every optimizer step, fused or autograd path
    calls = []

    def step(self, *args, **kwargs):
        calls.append(1)
        result = original(self, *args, **kwargs)
        if len(calls) == n_steps + 1:
            if exception is not None:
                raise exception
            with torch.no_grad():
                for group in self.param_groups:
                    for p in group["params"]:
                        p.fill_(float("nan"))
        return result

    monkeypatch.setattr(FlatAdam, "packed_step", step)
    return calls


@pytest.mark.parametrize("kind", KINDS)
def test_divergence_stops_fit_with_the_epoch(kind, monkeypatch):
    X, y = make_data(kind)
    # 30 samples in batches of 10: steps 1-3 are epoch 1, the 5th step is in epoch 2.
    _poison_step_after(monkeypatch, 4)
    model = make(kind, batch_size=10, max_epochs=5, early_stopping=False)
    assert_value_error(lambda: model.fit(X, y), ["diverged", "epoch 2", "lr"])
    with pytest.raises(NotFittedError):
        model.predict(X) if kind != "transformer" else model.transform(X)


@pytest.mark.parametrize("kind", KINDS)
def test_divergence_on_the_last_step_is_caught(kind, monkeypatch):
    X, y = make_data(kind)
    _poison_step_after(monkeypatch, 5)  # the last of 6 steps: the loss never sees it
    model = make(kind, batch_size=10, max_epochs=2, early_stopping=False)
    assert_value_error(lambda: model.fit(X, y), ["diverged", "epoch 2"])


def test_divergence_with_validation_set_is_caught(monkeypatch):
    X, y = make_data("regressor")
    _poison_step_after(monkeypatch, 0)
    model = make("regressor", batch_size=10, max_epochs=5)
    assert_value_error(lambda: model.fit(X, y), ["diverged", "epoch 1"])


@pytest.mark.parametrize("architecture", ["nd", "mlp"])
def test_huge_learning_rate_never_returns_a_nan_model(architecture):
    X, y = make_data("regressor")
    model = make("regressor", architecture=architecture, lr=1e8, max_epochs=20)
    try:
        model.fit(X * 1e4, y * 1e10)
    except ValueError as exc:
        assert "epoch" in str(exc)
    else:
        _check_finite_fit(model, X * 1e4)


# ---------------------------------------------------------------------------------------
# Precision
@pytest.mark.parametrize("kind, method", METHODS)
def test_float32_and_float64_inputs(kind, method):
    X, y = make_data(kind)
    X32 = X.astype(np.float32)
    X64 = X32.astype(np.float64)
    model = make(kind).fit(X32, y)
    out32 = getattr(model, method)(X32)
    out64 = getattr(model, method)(X64)
    if method == "transform":
        assert out32.dtype == np.float32 and out64.dtype == np.float64
        np.testing.assert_allclose(out32, out64, rtol=1e-5, atol=1e-6)
    else:
        # A float32 table is computed in float32, within the documented bound of its
        # float64 cast (docs/raster.md); the same table always gives the same values.
        np.testing.assert_allclose(out32, out64, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(out32, getattr(model, method)(X32.copy()))
    refit = getattr(make(kind).fit(X64, y), method)(X64)
    np.testing.assert_array_equal(refit, out64)


@pytest.mark.parametrize("kind, method", METHODS)
def test_half_precision_is_upcast(kind, method):
    X, y = make_data(kind)
    X16 = X.astype(np.float16)
    model = make(kind).fit(X16, y)
    out16 = getattr(model, method)(X16)
    out32 = getattr(model, method)(X16.astype(np.float32))
    assert_finite_output(out16, len(X))
    np.testing.assert_allclose(out16, out32, rtol=1e-5, atol=1e-6)
    if method == "transform":
        assert out16.dtype == np.float64  # float16 is upcast, like the rest of scikit-learn


@pytest.mark.parametrize("dtype", [np.int64, np.uint8, bool])
def test_integer_and_boolean_bands(dtype):
    X, y = make_data("classifier")
    Xi = (X * 200).astype(dtype)
    assert_finite_output(make("classifier").fit(Xi, y).predict_proba(Xi), len(X))


# ---------------------------------------------------------------------------------------
# Scenes in other units than the training data
@pytest.mark.parametrize("params", [{"passthrough": True}, {"architecture": "mlp"}])
def test_values_far_outside_the_training_range_warn_for_raw_band_networks(params):
    # A passthrough model trained on reflectance 0-1 labelled a scene of digital numbers as
    # one class without a word.
    import pandas as pd

    from sknd import raster

    X, y = make_data("classifier", n_samples=60)
    frame = pd.DataFrame(X, columns=["blue", "green", "red", "nir"])
    clf = make("classifier", **params).fit(frame, y)
    np.testing.assert_allclose(clf.band_range_, np.column_stack([X.min(0), X.max(0)]))
    digital = frame * 10_000
    digital["blue"] = frame["blue"]  # one band in the training units: not named
    with pytest.warns(
        UserWarning, match=r"far outside .* 'green' up to .* \(1e\+04 times"
    ) as caught:
        clf.predict(digital)
    message = str(caught[0].message)
    assert "'blue'" not in message and "'nir'" in message
    with pytest.warns(UserWarning, match=r"far outside .*'red'"):
        raster.predict(clf, digital.to_numpy().reshape(6, 10, 4), bands=list(frame.columns))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.predict(frame * 5)  # within an order of magnitude (bright clouds, snow): quiet
        # Pure ND networks take digital numbers as they take reflectance: no warning.
        make("classifier").fit(X, y).predict(X * 10_000)


def test_partial_fit_extends_the_training_range():
    X, y = make_data("classifier", n_samples=60)
    clf = make("classifier", passthrough=True)
    clf.partial_fit(X, y, classes=[0, 1])
    clf.partial_fit(X * 100, y)
    np.testing.assert_allclose(clf.band_range_[:, 1], 100 * X.max(0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.predict(X * 100)
    clf.fit(X, y)  # a new fit: the range of its data only
    np.testing.assert_allclose(clf.band_range_[:, 1], X.max(0))


def test_standardized_bands_warn_that_the_layer_wants_them_as_measured():
    # A scaler before an ND estimator in a pipeline: the estimator sees only X, centred band
    # by band, which band values as measured never are.
    from sklearn.preprocessing import RobustScaler, StandardScaler

    rng = np.random.default_rng(0)
    X = rng.uniform(0.05, 0.5, (120, 4))
    y = (X[:, 3] > X[:, 2]).astype(int)
    for scaler, centre in [(StandardScaler(), "mean"), (RobustScaler(), "median")]:
        for dtype in (np.float64, np.float32):
            scaled = scaler.fit_transform(X.astype(dtype))
            for Estimator in (NDClassifier, NDTransformer):
                model = Estimator(max_epochs=2, random_state=0)
                with pytest.warns(UserWarning, match=f"has {centre} 0.*looks standardized"):
                    model.fit(scaled, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # Signed but not centred (differences of bands), and the MLP, which wants scaled input.
        NDClassifier(max_epochs=2, random_state=0).fit(X - 0.2, y)
        NDClassifier(architecture="mlp", max_epochs=2).fit(StandardScaler().fit_transform(X), y)
