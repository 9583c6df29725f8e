"""The fast evaluator of fitted sknd networks (sknd._inference._evaluator.FastNetwork, numpy
and numba kernels) pinned to the estimators' public methods, on pixel tables and images
(moved from tests/raster/test_raster.py)."""

import numpy as np
import pytest
from band_images import DATA, band_image, fit_on_bands, pixel_classifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sknd import NDClassifier, NDRegressor, NDTransformer, raster
from sknd._inference import _evaluator
from sknd._inference._pixels import pixel_function


@pytest.fixture(scope="module")
def clf(band_data):
    return pixel_classifier(band_data)


FAST = {"max_epochs": 3, "random_state": 0}


def _fast(estimator, method):
    """The fast evaluator raster uses for ``estimator.<method>``, or None."""
    func = pixel_function(estimator, method)
    return func if isinstance(func, _evaluator.FastNetwork) else None


def _pixels(n_bands=5, n_pixels=3000, dtype=np.float32):
    return band_image((n_pixels,), n_bands, seed=7, dtype=dtype)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"depth": 3},
        {"architecture": "attnd"},
        {"architecture": "mlp"},
        {"variant": "signed"},
        {"variant": "softplus"},
    ],
    ids=["nd", "depth3", "attnd", "mlp", "signed", "softplus"],
)
@pytest.mark.parametrize("target", ["multiclass", "binary"])
def test_fast_path_equals_classifier_methods(params, target, implementation, band_data):
    clf = fit_on_bands(band_data, NDClassifier(**params, **FAST), target)
    pixels = _pixels()
    for method in ("predict", "predict_proba"):
        fast = _fast(clf, method)
        assert fast is not None
        expected = getattr(clf, method)(pixels)
        got = fast(pixels)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        if method == "predict":
            np.testing.assert_array_equal(got, expected)
        else:
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "params",
    [
        {"passthrough": True},
        {"passthrough": True, "architecture": "attnd", "depth": 3},
        {"passthrough": True, "architecture": "mlp", "variant": "signed"},
    ],
    ids=["nd", "attnd-depth3", "mlp"],
)
def test_fast_path_with_raw_passthrough(params, implementation, band_data):
    clf = fit_on_bands(band_data, NDClassifier(**params, **FAST))
    reg = fit_on_bands(band_data, NDRegressor(**params, **FAST), "multi-output")
    pixels = _pixels()
    for estimator, method in [(clf, "predict_proba"), (clf, "predict"), (reg, "predict")]:
        fast = _fast(estimator, method)
        assert fast is not None
        expected = getattr(estimator, method)(pixels)
        if method == "predict" and estimator is clf:
            np.testing.assert_array_equal(fast(pixels), expected)
        else:
            np.testing.assert_allclose(fast(pixels), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target", ["regression", "multi-output"])
@pytest.mark.parametrize("params", [{}, {"architecture": "attnd", "depth": 3}])
def test_fast_path_equals_regressor_predict(params, target, implementation, band_data):
    reg = fit_on_bands(band_data, NDRegressor(**params, **FAST), target)
    pixels = _pixels()
    fast = _fast(reg, "predict")
    expected = reg.predict(pixels)
    got = fast(pixels)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("params", [{}, {"n_indices": 3, "variant": "signed"}])
def test_fast_path_equals_transformer(params, dtype, implementation, band_data):
    transformer = fit_on_bands(band_data, NDTransformer(**params, **FAST))
    pixels = _pixels(dtype=dtype)
    fast = _fast(transformer, "transform")
    expected = transformer.transform(pixels)
    got = fast(pixels)
    assert got.dtype == expected.dtype == dtype
    # Index values lie in [-1, 1]; near 0 the numerator cancels, hence the absolute tolerance.
    tol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("variant", ["reflectance", "softplus"])
def test_fast_path_gather_form_for_many_bands(monkeypatch, variant, band_data):
    # Without numba, many-band inputs compute the ND layer by gathering columns instead of GEMMs.
    monkeypatch.setattr(_evaluator, "_compiled_kernels", lambda: None)
    monkeypatch.setattr(_evaluator, "NUMPY_GEMM_MAX_BANDS", 3)
    clf = fit_on_bands(band_data, NDClassifier(variant=variant, **FAST))
    fast = _fast(clf, "predict_proba")
    nd = getattr(fast.steps[0], "nd", fast.steps[0])  # fused with the dense layer, or alone
    assert isinstance(nd, _evaluator._NDStep) and not nd.gemm
    pixels = _pixels()
    np.testing.assert_allclose(fast(pixels), clf.predict_proba(pixels), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("params", "target", "steps"),
    [
        ({}, "binary", ["_NDDenseStep"]),
        ({}, "multiclass", ["_NDDenseStep"]),
        ({"depth": 2}, "five classes", ["_NDStep", "_LinearStep"]),
        ({"depth": 3}, "binary", ["_NDStep", "_LinearStep", "_ReLUStep", "_LinearStep"]),
        ({"architecture": "attnd"}, "binary", ["_AttentionStep", "_LinearStep"]),
    ],
)
def test_fast_path_fuses_nd_with_a_narrow_output_layer(params, target, steps, band_data):
    if target == "five classes":
        X, _ = band_data(120, 5, **DATA)
        clf = NDClassifier(**params, **FAST).fit(X, np.arange(len(X)) % 5)
    else:
        clf = fit_on_bands(band_data, NDClassifier(**params, **FAST), target)
    fast = _fast(clf, "predict")
    assert [type(step).__name__ for step in fast.steps] == steps


def _kernel_step(pairs, a, c, variant):
    """The ND step of the evaluator (epsilon 1e-3), whose kernel arguments the tests pass."""
    (step,) = _evaluator.FastNetwork.for_indices(
        pairs,
        a,
        c,
        int(np.max(pairs)) + 1,
        1e-3,
        variant,
        non_negative=False,
        estimator_name="test",
        feature_names=None,
    ).steps
    return step


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("variant", ["reflectance", "signed", "softplus"])
def test_compiled_kernels_equal_the_nd_layer(variant, dtype):
    import torch

    from sknd.nn import NormalizedDifference

    kernels = pytest.importorskip("sknd._nd._kernels", reason="the compiled kernels need numba")
    rng = np.random.default_rng(3)
    n_bands, n_pixels = 6, 600  # 600 pixels: two full tiles of 256 and a partial one
    low = 0.0 if variant == "reflectance" else -3.0
    X = rng.uniform(low, 3.0, size=(n_pixels, n_bands)).astype(dtype)
    X[0] = 0.0  # all-zero pixel: the denominator is epsilon alone
    X[1, 2] = 30.0  # above softplus's linear threshold
    layer = NormalizedDifference(n_bands, epsilon=1e-3, variant=variant).double()
    with torch.no_grad():
        layer.a.normal_(generator=torch.Generator().manual_seed(0))
        layer.c.normal_(generator=torch.Generator().manual_seed(1))
        expected = layer(torch.from_numpy(X.astype(np.float64))).numpy()
    parameters = layer.a.detach().numpy(), layer.c.detach().numpy()
    step = _kernel_step(layer.pairs.numpy(), *parameters, variant)
    arguments = step.kernel_arguments(np.dtype(dtype))
    out = np.empty((len(step.pairs), n_pixels), dtype=dtype)
    kernels.normalized_differences(X, *arguments, out)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out.T, expected, rtol=tol, atol=tol)

    weight = rng.normal(size=(3, len(step.pairs))).astype(dtype)
    bias = rng.normal(size=3).astype(dtype)
    dense = np.empty((3, n_pixels), dtype=dtype)
    kernels.normalized_differences_dense(X, *arguments, weight, bias, dense)
    np.testing.assert_allclose(dense.T, expected @ weight.T + bias, rtol=10 * tol, atol=10 * tol)


def _random_kernel_step(n_bands, variant):
    """The ND step of all pairs of ``n_bands`` with random raw parameters."""
    rng = np.random.default_rng(5)
    pairs = np.array([(i, j) for i in range(n_bands) for j in range(i + 1, n_bands)])
    return _kernel_step(pairs, rng.normal(size=len(pairs)), rng.normal(size=len(pairs)), variant)


@pytest.mark.parametrize("variant", ["reflectance", "signed", "softplus"])
def test_compiled_kernels_read_every_input_dtype_as_its_cast(variant):
    # The kernels convert the table tile by tile: the values of casting it first, bit for bit.
    kernels = pytest.importorskip("sknd._nd._kernels", reason="the compiled kernels need numba")
    rng = np.random.default_rng(4)
    n_bands, n_pixels = 5, 600  # two full tiles of 256 and a partial one
    step = _random_kernel_step(n_bands, variant)
    n_pairs = len(step.pairs)
    for dtype in kernels.INPUT_DTYPES:
        low = 0 if variant == "reflectance" or dtype.kind == "u" else -200
        X = rng.uniform(low, 250, size=(n_pixels, n_bands))
        X = (X if dtype.kind == "f" else np.round(X)).astype(dtype)
        computes = [np.float64] + ([np.float32] if dtype == np.float32 else [])
        for compute in map(np.dtype, computes):
            arguments = step.kernel_arguments(compute)
            cast = X.astype(compute)
            expected = np.empty((n_pairs, n_pixels), dtype=compute)
            kernels.normalized_differences(cast, *arguments, expected)
            got = np.empty_like(expected)
            kernels.normalized_differences(X, *arguments, got)
            np.testing.assert_array_equal(got, expected, err_msg=f"{dtype} as {compute}")
            for n_outputs in (1, 3):
                weight = rng.normal(size=(n_outputs, n_pairs)).astype(compute)
                bias = rng.normal(size=n_outputs).astype(compute)
                expected = np.empty((n_outputs, n_pixels), dtype=compute)
                kernels.normalized_differences_dense(cast, *arguments, weight, bias, expected)
                got = np.empty_like(expected)
                kernels.normalized_differences_dense(X, *arguments, weight, bias, got)
                np.testing.assert_array_equal(got, expected, err_msg=f"{dtype}, {n_outputs}")


@pytest.mark.parametrize("params", [{}, {"depth": 3}])
def test_networks_compute_in_the_float_dtype_of_the_table(params, implementation, band_data):
    # Float32 tables in float32 (the kernel's divisions twice as fast), others in float64.
    clf = fit_on_bands(band_data, NDClassifier(**params, **FAST))
    network = clf._network_evaluator()  # raw outputs, before decoding
    pixels = _pixels()
    assert network(pixels).dtype == np.float32
    assert network(pixels.astype(np.float64)).dtype == np.float64
    assert network(np.round(pixels * 1000).astype(np.uint16)).dtype == np.float64


@pytest.mark.parametrize("variant", ["reflectance", "signed", "softplus"])
def test_float32_tables_within_the_documented_bound(variant, implementation):
    # docs/raster.md: a float32 table is computed in float32, each index within 1e-6 of
    # its value for the float64 cast (about 17 units of float32 rounding; measured up to 6),
    # epsilon-dominated pixels and digital numbers included. Float64 tables stay float64.
    rng = np.random.default_rng(8)
    n_bands, n_pixels = 6, 20_000
    pairs = np.array([(i, j) for i in range(n_bands) for j in range(i + 1, n_bands)])
    low = 0.0 if variant == "reflectance" else -30.0
    for epsilon in (1e-6, 1e-3, 0.1):
        a, c = rng.normal(scale=2, size=(2, len(pairs)))
        fast = _evaluator.FastNetwork.for_indices(
            pairs, a, c, n_bands, epsilon, variant,
            non_negative=False, estimator_name="test", feature_names=None,
        )  # fmt: skip
        X = rng.uniform(low, 30.0, size=(n_pixels, n_bands)).astype(np.float32)
        X[:500] *= rng.uniform(0, 1e-5, size=(500, 1)).astype(np.float32)
        X[500:1000] = np.round(X[500:1000] * 1e3)
        got, cast = fast(X), fast(X.astype(np.float64))
        assert got.dtype == np.float32 and cast.dtype == np.float64
        np.testing.assert_allclose(got, cast, rtol=0, atol=1e-6)


@pytest.mark.parametrize("variant", ["reflectance", "signed"])
def test_compiled_dense_kernel_sums_the_pairs_in_order(variant):
    # Estimators, scenes and model files agree bit for bit while the output layer is summed
    # as numpy does it pair by pair: the bias, then each pair's term in order, no fused
    # multiply-add. A kernel that reorders the sums (or contracts them) breaks this.
    kernels = pytest.importorskip("sknd._nd._kernels", reason="the compiled kernels need numba")
    rng = np.random.default_rng(6)
    n_bands, n_pixels = 6, 600
    X = rng.uniform(0.0 if variant == "reflectance" else -3.0, 3.0, size=(n_pixels, n_bands))
    step = _random_kernel_step(n_bands, variant)
    arguments = step.kernel_arguments(np.dtype(np.float64))
    values = np.empty((len(step.pairs), n_pixels))
    kernels.normalized_differences(X, *arguments, values)
    for n_outputs in (1, 2, 4):
        weight = rng.normal(size=(n_outputs, len(step.pairs)))
        bias = rng.normal(size=n_outputs)
        expected = np.repeat(bias[:, None], n_pixels, axis=1)
        for pair, value in enumerate(values):
            expected += weight[:, pair : pair + 1] * value
        got = np.empty((n_outputs, n_pixels))
        kernels.normalized_differences_dense(X, *arguments, weight, bias, got)
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", [np.uint16, np.int16, np.float32])
def test_fast_path_reads_an_image_as_its_float64_cast(dtype, implementation, band_data):
    # The compiled kernels read such tables as they are, without a float64 copy: the same
    # values bit for bit, and the same refusals. A float32 image is computed in float32
    # (docs/raster.md: within the bound of test_float32_tables_within_the_documented_bound).
    reg = fit_on_bands(band_data, NDRegressor(**FAST), "regression")
    image = np.round(band_image(n_bands=5) * 1000).astype(dtype)
    cast = raster.predict(reg, image.astype(np.float64))
    expected = raster.predict(reg, image)
    if dtype == np.float32:
        np.testing.assert_allclose(expected, cast, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(expected, cast)
    table = image.reshape(-1, 5)
    np.testing.assert_array_equal(reg.predict(table), expected.ravel())
    if dtype != np.float32:  # integer bands: indices in float64 (float32 keeps float32)
        transformer = fit_on_bands(band_data, NDTransformer(**FAST))
        indices = raster.transform(transformer, image.astype(np.float64))
        np.testing.assert_array_equal(raster.transform(transformer, image), indices)
    if dtype != np.uint16:
        image[2, 3, 1] = -7
        with pytest.raises(ValueError, match="Negative values.*down to -7"):
            raster.predict(reg, image)


def test_fast_path_blocks_and_pickling(monkeypatch, implementation, band_data):
    import pickle

    clf = fit_on_bands(band_data, NDClassifier(**FAST))
    fast = _fast(clf, "predict_proba")
    pixels = _pixels(n_pixels=1000)
    expected = clf.predict_proba(pixels)
    # Several blocks through the reused buffers, the last one short.
    fast.block_rows = fast.compiled_block_rows = 300
    np.testing.assert_allclose(fast(pixels), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fast(pixels[:10]), expected[:10], rtol=1e-5, atol=1e-6)
    clone = pickle.loads(pickle.dumps(fast))
    np.testing.assert_array_equal(clone(pixels), fast(pixels))


def test_fast_path_rejects_what_the_estimator_rejects(implementation, band_data):
    clf = fit_on_bands(band_data, NDClassifier(**FAST))
    image = band_image(n_bands=5)
    image[3, 3, 1] = -0.1
    with pytest.raises(ValueError, match="Negative values.*nodata"):
        raster.predict(clf, image)
    # ... unless the negative value is declared as no-data.
    image[3, 3, 1] = -9999.0
    labels = raster.predict(clf, image, nodata=-9999.0)
    assert np.isnan(labels[3, 3]) and np.isfinite(np.delete(labels.ravel(), 3 * 11 + 3)).all()
    image[3, 3, 1] = np.inf
    with pytest.raises(ValueError, match="infinity.*nodata="):
        raster.predict(clf, image)
    # The estimator's bound on band values (float32 network) holds on the fast path too.
    image[3, 3, 1] = 9.96921e36  # netCDF's default fill value
    with pytest.raises(ValueError, match="too large.*nodata="):
        raster.predict(clf, image)
    with pytest.raises(ValueError, match="too large"):
        clf.predict(image.reshape(-1, 5))
    labels = raster.predict(clf, image, nodata=9.96921e36)
    assert np.isnan(labels[3, 3]) and np.isfinite(np.delete(labels.ravel(), 3 * 11 + 3)).all()


def test_fast_path_not_used_for_a_model_on_a_gpu(monkeypatch, band_data):
    import torch

    clf = fit_on_bands(band_data, NDClassifier(**FAST))
    assert _fast(clf, "predict") is not None
    # device="cuda" (or "auto" with a GPU visible): the estimator's own methods run on the GPU.
    monkeypatch.setattr(NDClassifier, "_inference_device", lambda self: torch.device("cuda"))
    assert _fast(clf, "predict") is None


# A pipeline on purpose: its scaler's output makes the estimator warn that the bands look
# standardized (tested in tests/estimators/test_validation.py).
@pytest.mark.filterwarnings("ignore:Every band of X has mean 0 and negative values")
def test_fast_path_not_used_for_other_estimators(clf, band_data):
    assert _fast(clf, "predict") is None
    pipe = make_pipeline(StandardScaler(), NDClassifier(variant="signed", **FAST))
    pipe.fit(*band_data(60, 5, **DATA))
    assert _fast(pipe, "predict") is None
    image = band_image(n_bands=5)
    np.testing.assert_array_equal(
        raster.predict(pipe, image, fill_value=-1).ravel(), pipe.predict(image.reshape(-1, 5))
    )
