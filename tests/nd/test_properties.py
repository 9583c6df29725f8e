"""Property tests (hypothesis) for the ND layer and the estimators.

Example counts are bounded so that the file runs in seconds; the strategies reach the
extremes the estimators promise to handle: band values from 1e-30 to 1e15 (and 1e30 for
the layer), all-zero rows, coefficients far from their 0 init, every variant.
"""

import warnings

import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.autograd import gradcheck

from sknd import NDClassifier, NDRegressor, NDTransformer
from sknd.networks import AttentionND
from sknd.nn import VARIANTS, all_pairs, normalized_difference

LAYER = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ESTIMATOR = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

DTYPES = {"float32": torch.float32, "float64": torch.float64}


@st.composite
def layer_inputs(draw, max_exponent=30, variants=VARIANTS):
    """Band values spread over many decades (with exact zeros), coefficients up to |60|."""
    variant = draw(st.sampled_from(variants))
    dtype = DTYPES[draw(st.sampled_from(sorted(DTYPES)))]
    n_samples = draw(st.integers(1, 6))
    n_features = draw(st.integers(2, 5))
    seed = draw(st.integers(0, 2**31 - 1))
    gen = torch.Generator().manual_seed(seed)
    low = draw(st.integers(-30, max_exponent))
    high = draw(st.integers(low, max_exponent))
    exponents = torch.randint(low, high + 1, (n_samples, n_features), generator=gen)
    x = torch.rand(n_samples, n_features, generator=gen, dtype=torch.float64) * 10.0**exponents
    if draw(st.booleans()):
        x[0] = 0.0  # an all-zero (no-data) row
    if variant != "reflectance":
        signs = torch.randint(0, 2, x.shape, generator=gen) * 2 - 1
        x = x * signs
    n_pairs = n_features * (n_features - 1) // 2
    coef_scale = draw(st.sampled_from([0.0, 1.0, 10.0, 60.0]))
    a = (torch.rand(n_pairs, generator=gen, dtype=torch.float64) * 2 - 1) * coef_scale
    c = (torch.rand(n_pairs, generator=gen, dtype=torch.float64) * 2 - 1) * coef_scale
    epsilon = draw(st.sampled_from([1e-15, 1e-6, 1e-2, 1.0]))
    pairs = torch.as_tensor(all_pairs(n_features))
    return x.to(dtype), a.to(dtype), c.to(dtype), pairs, epsilon, variant


def _forward_backward(x, a, c, pairs, epsilon, variant):
    x, a, c = (t.clone().requires_grad_() for t in (x, a, c))
    out = normalized_difference(x, a, c, pairs, epsilon, variant)
    # Upstream gradients as from a loss: mixed signs, one per output.
    weights = torch.linspace(-1, 1, out.numel(), dtype=out.dtype).reshape(out.shape)
    (out * weights).sum().backward()
    return out.detach(), x.grad, a.grad, c.grad


@LAYER
@given(layer_inputs(max_exponent=15))
def test_layer_is_bounded_with_finite_gradients(inputs):
    """Inputs in the range the estimators accept: outputs in [-1, 1], every gradient finite."""
    out, *grads = _forward_backward(*inputs)
    assert torch.isfinite(out).all()
    assert out.abs().max() <= 1
    for grad in grads:
        assert torch.isfinite(grad).all()


@LAYER
@given(layer_inputs(max_exponent=30, variants=("reflectance", "softplus")))
def test_layer_survives_1e30_inputs(inputs):
    out, *grads = _forward_backward(*inputs)
    assert torch.isfinite(out).all() and out.abs().max() <= 1
    for grad in grads:
        assert torch.isfinite(grad).all()


def test_signed_layer_gradients_at_1e30_in_float32():
    x = torch.tensor([[1e30, 2e30]], dtype=torch.float32)
    zero = torch.zeros(1)
    out, *grads = _forward_backward(x, zero, zero, torch.tensor([[0, 1]]), 1e-6, "signed")
    assert torch.isfinite(out).all() and abs(out.item() + 1 / 3) < 1e-3
    for grad in grads:
        assert torch.isfinite(grad).all()


@LAYER
@given(layer_inputs(max_exponent=15), st.floats(1e-3, 1e3))
def test_attention_block_is_bounded(inputs, gate_scale):
    x, _, _, pairs, epsilon, variant = inputs
    block = AttentionND(x.shape[1], pairs=pairs.numpy(), epsilon=epsilon, variant=variant)
    block = block.to(x.dtype)
    with torch.no_grad():
        block.gate.weight.mul_(gate_scale)
    out = block(x)
    assert torch.isfinite(out).all() and out.abs().max() <= 1


def test_signed_indices_of_a_batch_stay_within_one_after_rounding():
    # Hypothesis's example: the two products of the matmul form rounded apart, and the
    # third row's index came out at 1 + 1 ulp in float32 (its own row alone gave 1).
    x = torch.tensor(
        [
            [-7.1137e14, -5.3386e13],
            [4.9867e13, -3.1819e13],
            [3.3060e14, -7.3909e14],
            [-4.3503e14, -1.2879e13],
            [-3.6677e13, -8.2221e13],
        ]
    )
    zero = torch.zeros(1)
    out = normalized_difference(x, zero, zero, torch.tensor([[0, 1]]), 0.01, "signed")
    # The third row's index is 1 up to float32 rounding, which differs between GEMM kernels.
    assert out.abs().max() <= 1 and out[2].item() >= 1 - 1e-6


@LAYER
@given(
    st.integers(0, 2**31 - 1),
    st.sampled_from(["reflectance", "signed"]),
    st.floats(1e-8, 1e8),
)
def test_layer_is_scale_invariant(seed, variant, k):
    """N(k b) = N(b) when epsilon is negligible; exactly so with epsilon scaled along."""
    gen = torch.Generator().manual_seed(seed)
    x = 0.01 + torch.rand(5, 4, generator=gen, dtype=torch.float64)
    if variant == "signed":
        x = x * (torch.randint(0, 2, x.shape, generator=gen) * 2 - 1)
    pairs = torch.as_tensor(all_pairs(4))
    a = torch.randn(6, generator=gen, dtype=torch.float64) * 3
    c = torch.randn(6, generator=gen, dtype=torch.float64) * 3
    tiny = 1e-30
    base = normalized_difference(x, a, c, pairs, tiny, variant)
    scaled = normalized_difference(k * x, a, c, pairs, tiny * min(k, k * k), variant)
    torch.testing.assert_close(scaled, base, rtol=1e-9, atol=1e-12)
    if variant == "reflectance":
        # With epsilon scaled by k the identity is exact (up to rounding) for any epsilon.
        torch.testing.assert_close(
            normalized_difference(k * x, a, c, pairs, 0.1 * k, variant),
            normalized_difference(x, a, c, pairs, 0.1, variant),
        )


@settings(max_examples=15, deadline=None)
@given(layer_inputs(max_exponent=2))
def test_closed_form_backward_passes_gradcheck(inputs):
    x, a, c, pairs, _, variant = inputs
    if variant == "reflectance":
        x = x + 0.1  # stay away from the kink of sqrt / the zero denominator
    # torch.nn.functional.softplus switches to the identity above 20 (a 2e-9 step that
    # finite differences would see): stay below it.
    x, a, c = (t.double().clamp(-15, 15).requires_grad_() for t in (x, a, c))
    assert gradcheck(
        lambda x, a, c: normalized_difference(x, a, c, pairs, 1e-2, variant),
        (x, a, c),
        atol=1e-6,
        rtol=1e-4,
    )


# ---------------------------------------------------------------------------------------
# Estimators: a ValueError with a message, or finite outputs of the right shape and dtype.
@st.composite
def estimator_problems(draw):
    kind = draw(st.sampled_from(["classifier", "regressor", "transformer"]))
    architectures = ["nd", "attnd"] + (["mlp"] if kind != "transformer" else [])
    params = dict(
        architecture=draw(st.sampled_from(architectures)),
        variant=draw(st.sampled_from(VARIANTS)),
        depth=draw(st.integers(2, 3)),
        epsilon=draw(st.sampled_from([1e-15, 1e-6, 1e-3, 1.0, 1e6])),
        early_stopping=draw(st.booleans()),
        lr=draw(st.sampled_from([1e-3, 0.05, 10.0])),
        batch_size=draw(st.sampled_from([1, 8, 64])),
        max_epochs=2,
        random_state=draw(st.integers(0, 1000)),
    )
    n_samples = draw(st.integers(1, 30))
    n_features = draw(st.integers(1, 5))
    exponent = draw(st.integers(-32, 32))
    offset = draw(st.sampled_from([0.0, -0.5]))  # -0.5: signed data
    zero_rows = draw(st.integers(0, 3))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    X = ((rng.uniform(size=(n_samples, n_features)) + offset) * 10.0**exponent).astype(dtype)
    X[:zero_rows] = 0
    if kind == "regressor" or (kind == "transformer" and draw(st.booleans())):
        y = rng.normal(size=n_samples) * 10.0 ** draw(st.integers(-10, 10))
    else:
        y = rng.integers(0, draw(st.integers(1, 4)), size=n_samples)
    return kind, params, X, y


ESTIMATORS = {"classifier": NDClassifier, "regressor": NDRegressor, "transformer": NDTransformer}


@ESTIMATOR
@given(estimator_problems())
def test_fit_raises_a_clear_error_or_predicts_finite_values(problem):
    kind, params, X, y = problem
    model = ESTIMATORS[kind](**params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny-scale and no-data warnings are fine here
        try:
            model.fit(X, y)
        except ValueError as exc:
            assert len(str(exc)) > 30, f"unhelpful message: {exc!r}"
            return
    n = len(X)
    assert np.all(np.isfinite(model.loss_curve_))
    if kind == "classifier":
        labels = model.predict(X)
        assert labels.shape == (n,) and set(labels) <= set(model.classes_)
        proba = model.predict_proba(X)
        assert proba.shape == (n, len(model.classes_)) and proba.dtype == np.float64
        assert np.all(np.isfinite(proba)) and np.allclose(proba.sum(axis=1), 1)
    elif kind == "regressor":
        prediction = model.predict(X)
        assert prediction.shape == (n,) and prediction.dtype == np.float64
        assert np.all(np.isfinite(prediction))
    else:
        Z = model.transform(X)
        assert Z.shape == (n, len(model.selected_indices_)) and Z.dtype == X.dtype
        assert np.all(np.isfinite(Z)) and np.abs(Z).max(initial=0) <= 1
