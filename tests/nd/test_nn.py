"""The Normalized Difference layer: formula, closed-form gradients, bounds, invariance."""

import itertools

import numpy as np
import pytest
import torch
from nd_oracle import nd_reference
from torch.autograd import gradcheck

from sknd.nn import VARIANTS, NormalizedDifference, all_pairs, normalized_difference, resolve_pairs


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
    expected = nd_reference(*ref, pairs, 1e-6, variant)
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
    assert layer.n_outputs == layer.n_pairs == 10


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


# ------------------------------------------------- both formulations ("gather", "matmul")
METHODS = ["gather", "matmul"]


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
    ref = nd_reference(*ref_leaves, pairs, 1e-6, variant)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)
    grad = torch.randn_like(out)
    out.backward(grad)
    ref.backward(grad)
    for leaf, ref_leaf in zip(leaves, ref_leaves):
        torch.testing.assert_close(leaf.grad, ref_leaf.grad, rtol=1e-4, atol=1e-5)


def test_auto_method_picks_matmul_for_few_bands_and_gather_for_many():
    from sknd._nd._torch import PairPlan
    from sknd.nn import MATMUL_MAX_INPUTS

    def plan(n_features, variant="reflectance"):
        pairs = torch.as_tensor(all_pairs(n_features))
        return PairPlan(pairs, n_features, variant, 1e-6, torch.float32, torch.device("cpu"))

    assert plan(10).choose("auto") == "matmul"
    assert plan(MATMUL_MAX_INPUTS + 1).choose("auto") == "gather"
    # "signed" doubles the layer inputs (b and sqrt(b^2 + eps)).
    assert plan(MATMUL_MAX_INPUTS // 2 + 1, "signed").choose("auto") == "gather"
    assert plan(10).choose("gather") == "gather"
    # Tables with positions (images, series) read the bands of each run of pairs as slices.
    image_table = torch.rand(2, 10, 16)
    assert plan(10).choose("auto", image_table) == "slices"
    assert plan(10).choose("gather", image_table) == "slices"
    assert plan(10).choose("matmul", image_table) == "matmul"
    assert plan(10).choose("auto", torch.rand(2, 10)) == "matmul"


def test_pair_runs_cover_every_pair_once():
    from sknd._nd._torch import PairPlan

    def runs(pairs, n_features=5):
        pairs = torch.as_tensor(pairs)
        plan = PairPlan(pairs, n_features, "reflectance", 1e-6, torch.float32, torch.device("cpu"))
        return plan.runs()

    # combinations order: one run per band, (i, i+1), ..., (i, n-1).
    assert runs(all_pairs(4), 4) == [(0, 3, 0, 1), (3, 5, 1, 2), (5, 6, 2, 3)]
    # Any other order is cut where the band i changes or j does not step by one.
    assert runs([[3, 1], [0, 2], [0, 3], [0, 1], [4, 2]]) == [
        (0, 1, 3, 1),
        (1, 3, 0, 2),
        (3, 4, 0, 1),
        (4, 5, 4, 2),
    ]


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


@pytest.mark.parametrize("method", METHODS)
def test_gradients_stay_finite_next_to_a_pair_of_zero_bands(method):
    # softplus underflows to 0 for the first two bands: that pair's denominator is epsilon
    # alone, and the matmul backward's cross products (1e23 / 1e-15) overflow float32. Only
    # the entries of each weight may be read, never inf * 0 (found by hypothesis).
    x = torch.tensor([[-8.77e25, -3.99e29, 3.50e23]], requires_grad=True)
    a = torch.zeros(3, requires_grad=True)
    c = torch.zeros(3, requires_grad=True)
    pairs = torch.as_tensor(all_pairs(3))
    normalized_difference(x, a, c, pairs, 1e-15, "softplus", method).sum().backward()
    for grad in (x.grad, a.grad, c.grad):
        assert torch.isfinite(grad).all()


# ---------------------------------------------------------------- channel axis, checks, tracing

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
DEVICES = ["cpu", pytest.param("cuda", marks=CUDA)]


def random_layer(n_features, variant, method, seed=0, **kwargs):
    layer = NormalizedDifference(n_features, variant=variant, method=method, **kwargs).double()
    with torch.no_grad():
        gen = torch.Generator().manual_seed(seed)
        layer.a.copy_(torch.randn(layer.n_pairs, generator=gen))
        layer.c.copy_(torch.randn(layer.n_pairs, generator=gen))
    return layer


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("method", ["gather", "matmul"])
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(
    "shape, dim", [((3, 5, 4, 6), 1), ((3, 5, 7), 1), ((3, 4, 6, 5), -1), ((5, 6), 0)]
)
def test_channel_axis_equals_the_layer_pixel_by_pixel(shape, dim, variant, method, device):
    gen = torch.Generator().manual_seed(1)
    x = torch.rand(shape, generator=gen, dtype=torch.float64)
    if variant != "reflectance":
        x = 3 * (x - 0.5)
    x = x.to(device).requires_grad_()
    layer = random_layer(5, variant, method, dim=dim).to(device)
    out = layer(x)
    assert out.shape == shape[: dim % len(shape)] + (10,) + shape[dim % len(shape) + 1 :]
    grad = torch.randn(out.shape, generator=gen, dtype=torch.float64).to(device)
    out.backward(grad)
    grads = [x.grad, layer.a.grad, layer.c.grad]

    rows = x.detach().movedim(dim, -1).reshape(-1, 5).requires_grad_()
    pixel_layer = random_layer(5, variant, method).to(device)
    expected = pixel_layer(rows)
    expected.backward(grad.movedim(dim, -1).reshape(-1, 10))
    torch.testing.assert_close(out.movedim(dim, -1).reshape(-1, 10), expected)
    torch.testing.assert_close(grads[0].movedim(dim, -1).reshape(-1, 5), rows.grad)
    torch.testing.assert_close(grads[1], pixel_layer.a.grad)
    torch.testing.assert_close(grads[2], pixel_layer.c.grad)


@pytest.mark.parametrize("method", ["gather", "matmul"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_gradcheck_on_image_patches(variant, method):
    x, a, c, pairs = random_inputs(variant, n_samples=2 * 3 * 2, n_features=4)
    x = x.reshape(2, 3, 2, 4).permute(0, 3, 1, 2).contiguous()  # (N, C, H, W)
    inputs = tuple(t.clone().requires_grad_() for t in (x, a, c))
    assert gradcheck(
        lambda x, a, c: normalized_difference(x, a, c, pairs, 1e-3, variant, method), inputs
    )


@pytest.mark.parametrize("variant", VARIANTS)
def test_image_patches_with_explicit_pairs_equal_the_layer_pixel_by_pixel(variant):
    # Pairs out of combinations order: runs of length 1 and 2, a band i after a larger one.
    pairs = [(3, 1), (0, 2), (0, 3), (4, 0), (2, 3), (2, 4), (1, 0)]
    gen = torch.Generator().manual_seed(2)
    x = torch.rand(3, 5, 4, 6, generator=gen, dtype=torch.float64)
    if variant != "reflectance":
        x = 3 * (x - 0.5)
    x.requires_grad_()
    layer = random_layer(5, variant, "auto", pairs=pairs)
    out = layer(x)
    grad = torch.randn(out.shape, generator=gen, dtype=torch.float64)
    out.backward(grad)

    rows = x.detach().movedim(1, -1).reshape(-1, 5).requires_grad_()
    pixel_layer = random_layer(5, variant, "gather", pairs=pairs)
    expected = pixel_layer(rows)
    expected.backward(grad.movedim(1, -1).reshape(-1, len(pairs)))
    torch.testing.assert_close(out.movedim(1, -1).reshape(-1, len(pairs)), expected)
    torch.testing.assert_close(x.grad.movedim(1, -1).reshape(-1, 5), rows.grad)
    torch.testing.assert_close(layer.a.grad, pixel_layer.a.grad)
    torch.testing.assert_close(layer.c.grad, pixel_layer.c.grad)


def test_image_gradients_are_the_same_on_a_second_backward_pass():
    # The first backward pass computes G / D**2 over the kept denominator; a second one
    # (retain_graph=True) must recompute it, not read the overwritten values.
    layer = random_layer(5, "reflectance", "auto")
    x = torch.rand(2, 5, 3, 3, dtype=torch.float64)
    out = layer(x)
    first = torch.autograd.grad(out.square().sum(), (layer.a, layer.c), retain_graph=True)
    second = torch.autograd.grad(out.square().sum(), (layer.a, layer.c))
    for one, two in zip(first, second):
        torch.testing.assert_close(one, two)


def test_image_weight_gradients_stay_accurate_for_indices_near_one():
    # b_j = 0 gives N = 1 - eps / D: G / D - G N / D would cancel to the last digits of N.
    x = torch.rand(4, 3, 8, 8, dtype=torch.float64)
    x[:, 1] = 0
    pairs = torch.as_tensor(all_pairs(3))
    grads = []
    for dtype in (torch.float32, torch.float64):
        leaves = [torch.zeros(3, dtype=dtype, requires_grad=True) for _ in "ac"]
        out = normalized_difference(x.to(dtype), *leaves, pairs, 1e-3)
        torch.autograd.backward(out, torch.ones_like(out))
        grads.append(torch.cat([leaf.grad for leaf in leaves]).double())
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-6, atol=0)


def test_image_patches_are_not_copied_beyond_the_output():
    # The matmul form reads (N, C, H, W) as (N, C, H*W): no transposed copy of the input.
    x = torch.rand(2, 4, 8, 8)
    layer = NormalizedDifference(4, method="matmul")
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        layer(x.requires_grad_())
    assert any(t.data_ptr() == x.data_ptr() for t in saved)


@pytest.mark.parametrize(
    "x, error, match",
    [
        (torch.rand(4, 3), ValueError, "expects 4 bands along dim=1"),
        (torch.rand(2, 16, 16, 4), ValueError, "dim=-1 for channels-last"),
        (torch.rand(4), ValueError, "add a batch axis"),
        (torch.ones(2, 4, dtype=torch.int64), TypeError, "floating-point"),
        (torch.tensor([[0.1, float("nan"), 0.2, 0.3]]), ValueError, "NaN"),
        (torch.tensor([[0.1, -0.2, 0.2, 0.3]]), ValueError, "variant='signed'"),
        ([[0.1, 0.2, 0.2, 0.3]], TypeError, "torch.Tensor"),
    ],
)
def test_bad_input_is_a_clear_error(x, error, match):
    with pytest.raises(error, match=match):
        NormalizedDifference(4)(x)


def test_unbatched_images_with_dim_minus_3_and_a_hint_without_it():
    x = torch.rand(2, 4, 5, 6)
    layer = NormalizedDifference(4, dim=-3)
    torch.testing.assert_close(layer(x[0]), layer(x)[0])
    torch.testing.assert_close(layer(x), NormalizedDifference(4)(x))
    with pytest.raises(ValueError, match=r"unbatched \(C, H, W\) image\? .*dim=-3"):
        NormalizedDifference(4)(x[0])


def test_standardized_input_points_to_the_layer_before_normalization():
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(64, 4, 8, 8, generator=gen)
    standardized = (x - x.mean((0, 2, 3), keepdim=True)) / x.std((0, 2, 3), keepdim=True)
    with pytest.raises(ValueError, match=r"looks standardized.*before the\s+normalization"):
        NormalizedDifference(4)(standardized)
    # Other negative input keeps the signed-variant advice.
    with pytest.raises(ValueError, match="variant='signed' or 'softplus'"):
        NormalizedDifference(4)(x - 0.1)


def test_bands_and_pairs_by_name():
    x = torch.rand(3, 4)
    named = NormalizedDifference(bands=["blue", "green", "red", "nir"], pairs=[("nir", "red")])
    assert named.n_features == 4 and named.bands == ("blue", "green", "red", "nir")
    torch.testing.assert_close(named(x), NormalizedDifference(4, pairs=[(3, 2)])(x))
    assert "bands=['blue', 'green', 'red', 'nir']" in repr(named)
    # A sensor's spellings and common names, mixed with positions.
    s2 = NormalizedDifference(
        bands=["B2", "B3", "B4", "B8"], sensor="sentinel2", pairs=[("nir", "B04"), (1, "B08")]
    )
    assert s2.pairs.tolist() == [[3, 2], [1, 3]]
    assert NormalizedDifference(bands=["b", "r", "n"]).n_pairs == 3


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(bands=["blue", "red"], pairs=[("nir", "red")]), ValueError, "Unknown band 'nir'"),
        (dict(bands=["red", "nir"], pairs=[("nir", "nir")]), ValueError, "names band 'nir' twice"),
        (
            dict(bands=["B4", "B8"], sensor="sentinel2", pairs=[("nir", "B08")]),
            ValueError,
            "names band 'B8' twice",
        ),
        (dict(bands=["B4", "B99"], sensor="sentinel2"), ValueError, "Unknown band name"),
        (dict(n_features=3, bands=["red", "nir"]), ValueError, "Got 2 bands for 3"),
        (dict(n_features=3, pairs=[("nir", "red")]), ValueError, "no band names: pass bands"),
        (dict(n_features=3, sensor="sentinel2"), ValueError, "needs bands="),
        (dict(), TypeError, "needs n_features"),
    ],
)
def test_bad_band_names_are_clear_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        NormalizedDifference(**kwargs)


def test_layer_from_a_fitted_estimator():
    from sknd import NDClassifier, NDTransformer

    rng = np.random.default_rng(0)
    X = rng.uniform(0.05, 0.5, size=(300, 4))
    y = (X[:, 3] > 1.5 * X[:, 2]).astype(int)
    nd = NDTransformer(n_indices=2, bands=["B2", "B3", "B4", "B8"], max_epochs=10, random_state=0)
    nd.fit(X, y)
    layer = NormalizedDifference.from_estimator(nd, dim=-1)
    assert layer.bands == ("B2", "B3", "B4", "B8") and layer.dim == -1
    np.testing.assert_array_equal(layer.pairs.numpy(), nd.pairs_)
    np.testing.assert_allclose(layer.a.detach().numpy(), nd.coef_a_, rtol=1e-6)
    # Its outputs are the learned indices: transform's columns among them.
    out = layer(torch.as_tensor(X, dtype=torch.float32)).detach().double().numpy()
    np.testing.assert_allclose(out[:, nd.selected_indices_], nd.transform(X), atol=1e-6)
    # ... on image patches too, as the first layer of a CNN.
    image = torch.as_tensor(X[:16].T.reshape(1, 4, 4, 4), dtype=torch.float32)
    patch = NormalizedDifference.from_estimator(nd)(image)
    np.testing.assert_allclose(patch[0, :, 1, 2].detach(), out[6], atol=1e-6)

    with pytest.raises(ValueError, match="not fitted yet"):
        NormalizedDifference.from_estimator(NDClassifier())
    with pytest.raises(ValueError, match="no ND layer"):
        mlp = NDClassifier(architecture="mlp", max_epochs=1, random_state=0).fit(X, y)
        NormalizedDifference.from_estimator(mlp)


def test_wrong_dim_is_a_clear_error():
    with pytest.raises(ValueError, match=r"dim must be in \[-2, 1\]"):
        NormalizedDifference(4, dim=2)(torch.rand(3, 4))
    with pytest.raises(TypeError, match="dim must be an int"):
        NormalizedDifference(4, dim="channels")


def test_input_check_can_be_turned_off_and_nan_is_checked_for_signed_variants():
    negative = torch.tensor([[0.1, -0.2, 0.2, 0.3]])
    assert NormalizedDifference(4, check_input=False)(negative).shape == (1, 6)
    assert NormalizedDifference(4, variant="signed")(negative).abs().max() <= 1
    with pytest.raises(ValueError, match="NaN"):
        NormalizedDifference(4, variant="signed")(negative * float("nan"))


@pytest.mark.parametrize("method", ["gather", "matmul"])
def test_stacked_layers_stay_bounded_with_the_signed_variant(method):
    # Remark 2.3: ND outputs are signed; a second layer needs a signed variant.
    gen = torch.Generator().manual_seed(0)
    first = NormalizedDifference(6, method=method)
    second = NormalizedDifference(15, variant="signed", method=method)
    with torch.no_grad():
        for param in (*first.parameters(), *second.parameters()):
            param.copy_(5 * torch.randn(param.shape, generator=gen))
    x = torch.rand(64, 6, 4, 4, generator=gen)
    out = second(first(x))
    assert out.shape == (64, 105, 4, 4)
    assert out.abs().max() <= 1
    with pytest.raises(ValueError, match="non-negative"):
        NormalizedDifference(15)(first(x))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_inputs_are_computed_in_float32(dtype):
    x = torch.rand(8, 5, 4, 4).add_(0.01)
    layer = NormalizedDifference(5)
    out = layer(x.to(dtype).requires_grad_())
    assert out.dtype == dtype
    expected = layer(x.to(dtype).float())
    torch.testing.assert_close(out.float(), expected, atol=1e-2, rtol=0)
    out.float().sum().backward()
    assert torch.isfinite(layer.a.grad).all()


def test_autocast_leaves_the_layer_in_float32():
    x = torch.rand(8, 5)
    layer = NormalizedDifference(5)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = layer(x)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, layer(x))


@pytest.mark.parametrize("method", ["gather", "matmul"])
def test_compiled_layer_has_no_graph_breaks_and_keeps_the_gradients(method):
    torch._dynamo.reset()
    layer = random_layer(5, "reflectance", method).float()
    x = torch.rand(2, 5, 4, 4)
    explanation = torch._dynamo.explain(layer)(x)
    assert explanation.graph_break_count == 0
    compiled = torch.compile(layer, backend="aot_eager")
    compiled(x).square().sum().backward()
    grads = [p.grad.clone() for p in layer.parameters()]
    layer.zero_grad()
    layer(x).square().sum().backward()
    for mine, eager in zip(grads, layer.parameters()):
        torch.testing.assert_close(mine, eager.grad)


def test_exported_layer_equals_the_eager_layer():
    layer = random_layer(4, "signed", "auto").float()
    x = torch.randn(3, 4, 5, 5)
    batch = torch.export.Dim("batch")
    program = torch.export.export(layer, (x,), dynamic_shapes=({0: batch},))
    other = torch.randn(7, 4, 5, 5)
    torch.testing.assert_close(program.module()(other), layer(other))


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("method", ["gather", "matmul"])
@pytest.mark.parametrize("shape", [(5, 4), (2, 4, 3, 3)])
def test_double_backward(variant, method, shape):
    # create_graph=True (a gradient penalty) failed inside torch: "functions with out=...
    # arguments don't support automatic differentiation".
    layer = NormalizedDifference(4, variant=variant, method=method).double()
    with torch.no_grad():
        layer.a.normal_(generator=torch.Generator().manual_seed(0))
        layer.c.normal_(generator=torch.Generator().manual_seed(1))
    x = torch.rand(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    if variant != "reflectance":
        x = x - 0.5
    x.requires_grad_()

    def layer_of(x, a, c):
        return torch.func.functional_call(layer, {"a": a, "c": c}, (x,))

    assert torch.autograd.gradgradcheck(layer_of, (x, layer.a, layer.c))
    # The gradients of the first pass are those of the closed form.
    (gx,) = torch.autograd.grad(layer(x).square().sum(), x, create_graph=True)
    (closed,) = torch.autograd.grad(layer(x).square().sum(), x)
    torch.testing.assert_close(gx, closed)
    gx.square().sum().backward()
    assert torch.isfinite(layer.a.grad).all()


@pytest.mark.parametrize("method", ["gather", "matmul"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_infinite_and_huge_inputs_give_the_limits(method, dtype):
    # +inf passed the input check and turned every index of its pixel NaN, and float32 sums
    # of finite values near the maximum overflowed into inf / inf.
    layer = NormalizedDifference(3, method=method).to(dtype)
    x = torch.tensor([[float("inf"), 0.2, 0.3], [0.4, float("inf"), float("inf")]], dtype=dtype)
    out = layer(x)
    assert out.dtype == dtype and torch.isfinite(out).all()
    expected = torch.tensor([[1.0, 1.0, -0.2], [-1.0, -1.0, 0.0]])
    torch.testing.assert_close(out.float(), expected, atol=2e-3, rtol=0)
    if dtype != torch.float16:
        with torch.no_grad():
            layer.a.fill_(3.0)  # band weights of about 3: float32 sums of 3e38 overflow
        big = torch.tensor([[3e38, 2e38, 1.0]], dtype=dtype)
        out = layer(big)
        reference = normalized_difference(big.double(), layer.a.double(), layer.c.double(),
                                          layer.pairs)  # fmt: skip
        torch.testing.assert_close(out.double(), reference, atol=1e-6, rtol=0)
    signed = NormalizedDifference(3, variant="signed", method=method).to(dtype)
    low = signed(torch.tensor([[-float("inf"), 0.2, 0.3]], dtype=dtype))
    torch.testing.assert_close(low.float()[0, :2], torch.tensor([-1.0, -1.0]), atol=2e-3, rtol=0)
    # Gradients stay finite (zero for the infinite band, which the clamp holds).
    x = torch.tensor([[float("inf"), 0.2, 0.3]], dtype=torch.float32, requires_grad=True)
    NormalizedDifference(3, method=method)(x).sum().backward()
    assert torch.isfinite(x.grad).all() and x.grad[0, 0] == 0


def test_layer_of_fewer_than_two_bands_and_epsilon_out_of_range_are_refused():
    with pytest.raises(ValueError, match="n_features must be at least 2"):
        NormalizedDifference(1)  # was a layer with 0 outputs
    with pytest.raises(TypeError, match="n_features must be an int"):
        NormalizedDifference(2.0)
    for epsilon in (1e-50, float("inf"), float("nan"), -1e-6, 1e16, "1e-6", True):
        with pytest.raises(ValueError, match=r"epsilon must be a number in \[1e-15, 1e\+15\]"):
            NormalizedDifference(3, epsilon=epsilon)
    NormalizedDifference(3, epsilon=1e-15)
    NormalizedDifference(3, epsilon=np.float32(1e15))


def test_pair_plan_follows_in_place_changes_of_pairs():
    # The plans are cached by the pairs' storage and torch's in-place version counter
    # (Tensor._version, no public API): pairs changed in place must not reuse a stale plan.
    x = torch.rand(3, 4, dtype=torch.float64)
    layer = NormalizedDifference(4, pairs=[(0, 1)]).double()
    before = layer(x)
    with torch.no_grad():
        layer.pairs.copy_(torch.tensor([[2, 3]]))
    after = layer(x)
    expected = NormalizedDifference(4, pairs=[(2, 3)]).double()
    expected.load_state_dict(layer.state_dict())
    torch.testing.assert_close(after, expected(x))
    assert not torch.allclose(before, after)
