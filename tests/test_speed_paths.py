"""Fast paths of issue 5: both ND formulations, the fused training step, flat Adam.

Every fast path must compute exactly what the plain autograd formulation
computes; these tests compare them (timings live in benchmarks/, not here).
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sknd.nn import NormalizedDifference, all_pairs, normalized_difference

VARIANTS = ["reflectance", "signed", "softplus"]
METHODS = ["gather", "matmul"]


def reference_nd(x, a, c, pairs, epsilon, variant):
    """The ND formula written directly, differentiated by autograd."""
    wa, wc = F.softplus(a), F.softplus(c)
    if variant == "softplus":
        x = F.softplus(x)
    bi, bj = x[:, pairs[:, 0]], x[:, pairs[:, 1]]
    numerator = wa * bi - wc * bj
    if variant == "signed":
        denominator = (
            wa * torch.sqrt(bi * bi + epsilon) + wc * torch.sqrt(bj * bj + epsilon) + epsilon
        )
    else:
        denominator = wa * bi + wc * bj + epsilon
    return numerator / denominator


def _inputs(variant, n_samples=7, n_features=5, seed=0, dtype=torch.float64):
    generator = torch.Generator().manual_seed(seed)
    x = torch.rand(n_samples, n_features, generator=generator, dtype=dtype)
    if variant != "reflectance":
        x = x - 0.5
    n_pairs = n_features * (n_features - 1) // 2
    a = torch.randn(n_pairs, generator=generator, dtype=dtype)
    c = torch.randn(n_pairs, generator=generator, dtype=dtype)
    return x, a, c


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_gradcheck_both_methods(variant, method):
    x, a, c = _inputs(variant)
    pairs = torch.as_tensor(all_pairs(x.shape[1]))
    x.requires_grad_(True)
    a.requires_grad_(True)
    c.requires_grad_(True)

    def fn(x, a, c):
        return normalized_difference(x, a, c, pairs, 1e-3, variant, method)

    assert torch.autograd.gradcheck(fn, (x, a, c))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_gradcheck_parameters_only_and_explicit_pairs(variant, method):
    # The first layer of a network: no input gradient, pairs in any order.
    x, a, c = _inputs(variant, seed=1)
    pairs = torch.tensor([[3, 1], [0, 4], [2, 0]])
    a = a[:3].clone().requires_grad_(True)
    c = c[:3].clone().requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda a, c: normalized_difference(x, a, c, pairs, 1e-3, variant, method), (a, c)
    )


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_methods_match_reference_formula(variant, method):
    x, a, c = _inputs(variant, n_samples=33, n_features=6, seed=2, dtype=torch.float32)
    pairs = torch.as_tensor(all_pairs(6))
    leaves = [t.clone().requires_grad_(True) for t in (x, a, c)]
    ref_leaves = [t.clone().requires_grad_(True) for t in (x, a, c)]
    out = normalized_difference(*leaves, pairs, 1e-6, variant, method)
    ref = reference_nd(*ref_leaves, pairs, 1e-6, variant)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)
    grad = torch.randn_like(out)
    out.backward(grad)
    ref.backward(grad)
    for leaf, ref_leaf in zip(leaves, ref_leaves):
        torch.testing.assert_close(leaf.grad, ref_leaf.grad, rtol=1e-4, atol=1e-5)


def test_auto_method_picks_matmul_for_few_bands_and_gather_for_many():
    from sknd.nn import MATMUL_MAX_INPUTS, _PairPlan

    def plan(n_features, variant="reflectance"):
        pairs = torch.as_tensor(all_pairs(n_features))
        return _PairPlan(pairs, n_features, variant, 1e-6, torch.float32, torch.device("cpu"))

    assert plan(10).choose("auto") == "matmul"
    assert plan(MATMUL_MAX_INPUTS + 1).choose("auto") == "gather"
    # "signed" doubles the layer inputs (b and sqrt(b^2 + eps)).
    assert plan(MATMUL_MAX_INPUTS // 2 + 1, "signed").choose("auto") == "gather"
    assert plan(10).choose("gather") == "gather"


def test_layer_method_is_validated_and_survives_pickling():
    import pickle

    with pytest.raises(ValueError, match="method"):
        NormalizedDifference(4, method="fast")
    layer = NormalizedDifference(4, method="gather")
    x = torch.rand(3, 4)
    expected = layer(x)
    clone = pickle.loads(pickle.dumps(layer))
    assert clone._plans == {}
    torch.testing.assert_close(clone(x), expected)


def test_gather_keeps_only_input_and_parameters_for_backward():
    # Memory held between forward and backward must not grow with n_pairs.
    layer = NormalizedDifference(40, method="gather")
    x = torch.rand(16, 40)
    saved = []

    def pack(t):
        saved.append(t.numel())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = layer(x)
    assert sum(saved) == x.numel() + 2 * layer.n_pairs
    out.sum().backward()
    assert layer.a.grad is not None


@pytest.mark.parametrize("method", METHODS)
def test_zero_bands_give_zero_index(method):
    # b_i = b_j = 0: numerator 0, denominator epsilon.
    layer = NormalizedDifference(3, method=method)
    out = layer(torch.zeros(2, 3))
    assert torch.equal(out, torch.zeros(2, 3))


def test_matmul_and_gather_agree_on_many_pairs():
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.uniform(0.01, 1, size=(50, 30)), dtype=torch.float32)
    gather = NormalizedDifference(30, method="gather")
    matmul = NormalizedDifference(30, method="matmul")
    with torch.no_grad():
        for layer in (gather, matmul):
            layer.a.copy_(torch.linspace(-2, 2, layer.n_pairs))
            layer.c.copy_(torch.linspace(1, -1, layer.n_pairs))
    torch.testing.assert_close(gather(x), matmul(x), rtol=1e-5, atol=1e-6)
