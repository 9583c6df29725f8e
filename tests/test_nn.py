"""The Normalized Difference layer: formula, closed-form gradients, bounds, invariance."""

import itertools

import numpy as np
import pytest
import torch
from torch.autograd import gradcheck

from sknd.nn import VARIANTS, NormalizedDifference, all_pairs, normalized_difference, resolve_pairs


def reference(x, a, c, pairs, eps, variant):
    """The paper's equations written naively, differentiated by autograd."""
    if variant == "softplus":
        x = torch.nn.functional.softplus(x)
    wa, wc = torch.nn.functional.softplus(a), torch.nn.functional.softplus(c)
    bi, bj = x[:, pairs[:, 0]], x[:, pairs[:, 1]]
    if variant == "signed":
        den = wa * torch.sqrt(bi**2 + eps) + wc * torch.sqrt(bj**2 + eps) + eps
    else:
        den = wa * bi + wc * bj + eps
    return (wa * bi - wc * bj) / den


def random_inputs(variant, n_samples=7, n_features=5, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(n_samples, n_features, generator=gen, dtype=torch.float64)
    if variant != "reflectance":
        x = 3 * (x - 0.5)
    pairs = torch.as_tensor(all_pairs(n_features))
    a = torch.randn(len(pairs), generator=gen, dtype=torch.float64)
    c = torch.randn(len(pairs), generator=gen, dtype=torch.float64)
    return x, a, c, pairs


@pytest.mark.parametrize("variant", VARIANTS)
def test_gradcheck_closed_form_backward(variant):
    x, a, c, pairs = random_inputs(variant)
    inputs = tuple(t.clone().requires_grad_() for t in (x, a, c))
    assert gradcheck(lambda x, a, c: normalized_difference(x, a, c, pairs, 1e-3, variant), inputs)


@pytest.mark.parametrize("variant", VARIANTS)
def test_forward_and_backward_match_the_paper_equations(variant):
    x, a, c, pairs = random_inputs(variant, seed=1)
    ours = [t.clone().requires_grad_() for t in (x, a, c)]
    ref = [t.clone().requires_grad_() for t in (x, a, c)]
    out = normalized_difference(*ours, pairs, 1e-6, variant)
    expected = reference(*ref, pairs, 1e-6, variant)
    torch.testing.assert_close(out, expected)
    weights = torch.randn(out.shape, dtype=torch.float64)
    (out * weights).sum().backward()
    (expected * weights).sum().backward()
    for mine, theirs in zip(ours, ref):
        torch.testing.assert_close(mine.grad, theirs.grad)


def test_proposition_2_1_at_a_point():
    # b = (0.6, 0.2), a = c = 0: sp = log 2, B = log2 * 0.8 + eps.
    eps = 1e-6
    x = torch.tensor([[0.6, 0.2]], dtype=torch.float64, requires_grad=True)
    a = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    c = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    normalized_difference(x, a, c, torch.tensor([[0, 1]]), eps).sum().backward()
    sp, s = np.log(2), 0.5
    B = sp * 0.8 + eps
    assert a.grad.item() == pytest.approx(s * 0.6 * (2 * sp * 0.2 + eps) / B**2)
    assert c.grad.item() == pytest.approx(-s * 0.2 * (2 * sp * 0.6 + eps) / B**2)
    assert x.grad[0, 0].item() == pytest.approx(sp * (2 * sp * 0.2 + eps) / B**2)
    assert x.grad[0, 1].item() == pytest.approx(-sp * (2 * sp * 0.6 + eps) / B**2)


def test_untrained_layer_is_the_classic_normalized_difference():
    x = torch.rand(20, 4) + 0.01
    out = NormalizedDifference(4, epsilon=1e-12)(x)
    for k, (i, j) in enumerate(itertools.combinations(range(4), 2)):
        classic = (x[:, i] - x[:, j]) / (x[:, i] + x[:, j])
        torch.testing.assert_close(out[:, k], classic)


@pytest.mark.parametrize("variant", VARIANTS)
def test_outputs_within_bounds_even_with_large_coefficients(variant):
    x, a, c, pairs = random_inputs(variant, n_samples=200, seed=2)
    x = x * 10.0 ** torch.randint(-3, 4, x.shape)
    out = normalized_difference(x, 20 * a, 20 * c, pairs, 1e-6, variant)
    assert torch.isfinite(out).all()
    assert out.abs().max() <= 1


@pytest.mark.parametrize("k", [1e-2, 0.3, 7.0, 1e2])
def test_scale_invariance(k):
    eps = 1e-6
    x, a, c, pairs = random_inputs("reflectance", n_samples=50, seed=3)
    out = normalized_difference(x, a, c, pairs, eps)
    scaled = normalized_difference(k * x, a, c, pairs, eps)
    # N(x) = A / (S + eps) and N(kx) = kA / (kS + eps) differ by at most eps |k - 1| / (k S).
    wa, wc = torch.nn.functional.softplus(a), torch.nn.functional.softplus(c)
    S = wa * x[:, pairs[:, 0]] + wc * x[:, pairs[:, 1]]
    bound = eps * abs(k - 1) / (k * S)
    assert torch.all((scaled - out).abs() <= bound + 1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
def test_all_zero_rows_are_finite(variant):
    layer = NormalizedDifference(6, variant=variant)
    x = torch.zeros(3, 6, requires_grad=True)
    out = layer(x)
    out.sum().backward()
    assert torch.isfinite(out).all()
    assert torch.isfinite(x.grad).all() and torch.isfinite(layer.a.grad).all()


def test_layer_is_vectorised_and_ordered_like_combinations():
    layer = NormalizedDifference(5)
    assert layer.pairs.tolist() == [list(p) for p in itertools.combinations(range(5), 2)]
    assert layer(torch.rand(3, 5)).shape == (3, 10)
    assert [n for n, _ in layer.named_parameters()] == ["a", "c"]
    assert "n_pairs=10" in repr(layer)


def test_explicit_pairs_select_outputs():
    x = torch.rand(4, 5) + 0.1
    full = NormalizedDifference(5)(x)
    chosen = NormalizedDifference(5, pairs=[(1, 3), (0, 4)])(x)
    torch.testing.assert_close(chosen, full[:, [5, 3]])
    # A reversed pair is the same index with the sign flipped.
    reversed_ = NormalizedDifference(5, pairs=[(3, 1)])(x)
    torch.testing.assert_close(reversed_[:, 0], -full[:, 5])


@pytest.mark.parametrize(
    "pairs, match",
    [
        ("some", "'all'"),
        ([(0, 5)], "outside"),
        ([(1, 1)], "different bands"),
        ([(0, 1), (1, 0)], "twice"),
        ([(0.5, 1)], "integer"),
        ([0, 1, 2], "band pairs"),
        ([], "non-empty"),
    ],
)
def test_resolve_pairs_rejects_bad_pairs(pairs, match):
    with pytest.raises(ValueError, match=match):
        resolve_pairs(5, pairs)


def test_layer_rejects_bad_settings():
    with pytest.raises(ValueError, match="variant"):
        NormalizedDifference(3, variant="ratio")
    with pytest.raises(ValueError, match="epsilon"):
        NormalizedDifference(3, epsilon=0)
