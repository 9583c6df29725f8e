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
    from sknd._nd_torch import PairPlan
    from sknd.nn import MATMUL_MAX_INPUTS

    def plan(n_features, variant="reflectance"):
        pairs = torch.as_tensor(all_pairs(n_features))
        return PairPlan(pairs, n_features, variant, 1e-6, torch.float32, torch.device("cpu"))

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


# ---------------------------------------------------------------------- fused training step
from sknd._adam import FlatAdam
from sknd._fused import FusedTrainer
from sknd._training import TensorBatches, TensorDataset
from sknd.networks import build_network


def _task_data(task, n_samples, n_features, seed):
    generator = torch.Generator().manual_seed(seed)
    X = torch.rand(n_samples, n_features, generator=generator) + 0.05
    if task == "binary":
        y = (X[:, 0] > X[:, 1]).float().reshape(-1, 1)
        return X, y, torch.nn.BCEWithLogitsLoss(), 1
    if task == "multiclass":
        y = torch.randint(0, 3, (n_samples,), generator=generator)
        return X, y, torch.nn.CrossEntropyLoss(), 3
    y = torch.randn(n_samples, 2, generator=generator)
    return X, y, torch.nn.MSELoss(), 2


FUSED_CASES = [
    ("nd", "reflectance", "binary", 2, "auto"),
    ("nd", "reflectance", "binary", 2, "matmul"),
    ("nd", "reflectance", "binary", 4, "gather"),
    ("nd", "signed", "multiclass", 3, "gather"),
    ("nd", "signed", "regression", 2, "matmul"),
    ("nd", "softplus", "regression", 3, "gather"),
    ("nd", "softplus", "binary", 2, "matmul"),
    ("attnd", "reflectance", "binary", 3, "auto"),
    ("attnd", "signed", "multiclass", 2, "gather"),
    ("attnd", "softplus", "regression", 2, "matmul"),
    ("mlp", "reflectance", "binary", 2, "auto"),
    ("mlp", "reflectance", "multiclass", 4, "auto"),
    ("mlp", "reflectance", "regression", 3, "auto"),
    ("nd+raw", "reflectance", "binary", 2, "auto"),
    ("nd+raw", "signed", "multiclass", 3, "gather"),
    ("attnd+raw", "softplus", "regression", 2, "matmul"),
    ("mlp+raw", "reflectance", "binary", 3, "auto"),
]


def _set_method(module, method):
    for sub in module.modules():
        if isinstance(sub, NormalizedDifference):
            sub.method = method


@pytest.mark.parametrize("architecture, variant, task, depth, method", FUSED_CASES)
@pytest.mark.parametrize("batch_size", [8, 300])
def test_fused_gradients_and_loss_match_autograd(
    architecture, variant, task, depth, method, batch_size
):
    torch.manual_seed(0)
    X, y, criterion, n_outputs = _task_data(task, 40, 5, seed=1)
    if variant != "reflectance":
        X = X - 0.5
    architecture, _, raw = architecture.partition("+")
    passthrough = (X.mean(0).numpy(), X.std(0).numpy()) if raw else None
    module = build_network(
        architecture,
        5,
        n_outputs,
        depth=depth,
        hidden_units=7,
        variant=variant,
        passthrough=passthrough,
    )
    _set_method(module, method)
    with torch.no_grad():  # leave the all-zero initialisation of a and c
        for name, p in module.named_parameters():
            if name.endswith((".a", ".c")):
                p.normal_(0, 0.5)
    optimizer = FlatAdam(module.parameters(), lr=0.01)
    trainer = FusedTrainer.build(module, criterion, optimizer, batch_size)
    assert trainer is not None
    xb, yb = X[:13], y[:13]  # a batch shorter than batch_size

    optimizer.zero_grad()
    loss = criterion(module(xb), yb)
    loss.backward()
    expected = [p.grad.clone() for p in module.parameters()]

    optimizer.zero_grad()
    prepared, aux, terms = trainer._prepare(TensorDataset(X, y))
    with torch.no_grad():
        trainer.forward_backward(prepared[:13], aux[:13], terms[:13])
    for p, grad in zip(module.parameters(), expected):
        torch.testing.assert_close(p.grad, grad, rtol=1e-4, atol=1e-6)
    total = trainer.loss.epoch_total(terms[:13]) / 13
    torch.testing.assert_close(total, loss.detach(), rtol=1e-5, atol=1e-6)


def test_fused_trainer_declines_what_it_does_not_implement():
    module = build_network("nd", 4, 1)
    optimizer = FlatAdam(module.parameters())
    assert FusedTrainer.build(module, torch.nn.L1Loss(), optimizer, 32) is None
    assert (
        FusedTrainer.build(module, torch.nn.BCEWithLogitsLoss(reduction="sum"), optimizer, 32)
        is None
    )
    weighted = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor([2.0]))
    assert FusedTrainer.build(module, weighted, optimizer, 32) is None
    plain = build_network("nd", 4, 1)
    assert (
        FusedTrainer.build(
            plain, torch.nn.BCEWithLogitsLoss(), torch.optim.Adam(plain.parameters()), 32
        )
        is None
    )
    dropout = torch.nn.Sequential(build_network("nd", 4, 1), torch.nn.Dropout())
    assert (
        FusedTrainer.build(
            dropout, torch.nn.BCEWithLogitsLoss(), FlatAdam(dropout.parameters()), 32
        )
        is None
    )


def test_fused_epoch_draws_the_shuffles_of_tensor_batches():
    X, y, criterion, _ = _task_data("binary", 50, 4, seed=3)
    dataset = TensorDataset(X, y)
    module = build_network("nd", 4, 1)
    optimizer = FlatAdam(module.parameters(), lr=0.0)
    trainer = FusedTrainer.build(module, criterion, optimizer, 16)
    seen = []
    original = trainer.forward_backward

    def spy(x, aux, terms):
        seen.append(x.clone())
        original(x, aux, terms)

    trainer.forward_backward = spy
    trainer.run_epoch(TensorBatches(dataset, 16, True, torch.Generator().manual_seed(5)))
    batches = [xb for xb, _ in TensorBatches(dataset, 16, True, torch.Generator().manual_seed(5))]
    assert [len(b) for b in seen] == [16, 16, 16, 2]
    for ours, theirs in zip(seen, batches):
        assert torch.equal(ours, theirs)


# ---------------------------------------------------------------------- FlatAdam
def test_flat_adam_matches_torch_adam():
    torch.manual_seed(0)
    ours = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    theirs = copy_module(ours)
    opt_ours = FlatAdam(ours.parameters(), lr=0.05, weight_decay=1e-3)
    opt_theirs = torch.optim.Adam(theirs.parameters(), lr=0.05, weight_decay=1e-3)
    for step in range(20):
        x = torch.randn(8, 4, generator=torch.Generator().manual_seed(step))
        for module, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            opt.zero_grad()
            module(x).pow(2).mean().backward()
            opt.step()
    for p, q in zip(ours.parameters(), theirs.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def copy_module(module):
    import copy

    return copy.deepcopy(module)


def test_flat_adam_shares_one_buffer_until_released():
    import pickle

    module = torch.nn.Sequential(torch.nn.Linear(50, 40), torch.nn.Linear(40, 1))
    optimizer = FlatAdam(module.parameters(), lr=0.1)
    module(torch.ones(2, 50)).sum().backward()
    optimizer.step()
    storages = {p.untyped_storage().data_ptr() for p in module.parameters()}
    assert len(storages) == 1
    grads = [p.grad for p in module.parameters()]
    optimizer.zero_grad()
    assert all(p.grad is g for p, g in zip(module.parameters(), grads))
    assert all(float(g.abs().sum()) == 0 for g in grads)
    # autograd accumulates into the views; a replaced gradient is copied back into them
    module(torch.ones(2, 50)).sum().backward()
    module[1].bias.grad = torch.full((1,), 3.0)
    before = module[1].bias.detach().clone()
    optimizer.step()
    assert module[1].bias.grad is grads[3] and float(grads[3]) == 3.0
    assert module[1].bias.item() != before.item()

    optimizer.release()
    storages = {p.untyped_storage().data_ptr() for p in module.parameters()}
    assert len(storages) == len(grads)
    size = len(pickle.dumps(module[1]))
    assert size < 4 * 40 * 50  # not the whole shared buffer
    state = optimizer.state_dict()
    optimizer.load_state_dict(state)
    optimizer.step()  # packs again from the loaded state
    assert len({p.untyped_storage().data_ptr() for p in module.parameters()}) == 1


# ---------------------------------------------------------------------- estimators
from sknd import NDClassifier, NDRegressor


def _binary_data(n_samples=120, n_features=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.05, 0.5, size=(n_samples, n_features))
    y = (X[:, 1] > X[:, 2]).astype(int)
    return X, y


@pytest.mark.parametrize(
    "estimator",
    [
        NDClassifier(max_epochs=4, batch_size=16, random_state=0),
        NDClassifier(
            architecture="attnd",
            variant="softplus",
            depth=3,
            max_epochs=4,
            batch_size=16,
            random_state=0,
        ),
        NDRegressor(max_epochs=4, batch_size=16, random_state=0, early_stopping=False),
        NDClassifier(passthrough=True, depth=3, max_epochs=4, batch_size=16, random_state=0),
    ],
)
def test_fused_and_autograd_fits_agree(estimator, monkeypatch):
    X, y = _binary_data()
    if isinstance(estimator, NDRegressor):
        y = X[:, 1] / (X[:, 2] + X[:, 1])
    fused = clone_fit(estimator, X, y)
    monkeypatch.setattr(FusedTrainer, "build", classmethod(lambda cls, *args: None))
    plain = clone_fit(estimator, X, y)
    np.testing.assert_allclose(fused.loss_curve_, plain.loss_curve_, rtol=1e-4)
    np.testing.assert_allclose(fused.coef_a_, plain.coef_a_, rtol=1e-3, atol=1e-5)
    out_fused = fused.predict_proba(X) if hasattr(fused, "predict_proba") else fused.predict(X)
    out_plain = plain.predict_proba(X) if hasattr(plain, "predict_proba") else plain.predict(X)
    np.testing.assert_allclose(out_fused, out_plain, rtol=1e-3, atol=1e-5)


def clone_fit(estimator, X, y):
    from sklearn.base import clone

    return clone(estimator).fit(X, y)


def test_fit_uses_the_fused_trainer_and_keeps_epoch_history():
    X, y = _binary_data()
    model = NDClassifier(max_epochs=3, batch_size=16, random_state=0).fit(X, y)
    assert list(model.history_.columns) == ["epoch", "train_loss", "valid_loss", "valid_score"]
    assert model.history_.notna().all().all()
    calls = []
    original = FusedTrainer.run_epoch

    def spy(self, iterator):
        calls.append(iterator.batch_size)
        return original(self, iterator)

    try:
        FusedTrainer.run_epoch = spy
        NDClassifier(max_epochs=3, batch_size=16, random_state=0).fit(X, y)
    finally:
        FusedTrainer.run_epoch = original
    assert calls == [16, 16, 16]


def test_callbacks_asking_for_training_batches_get_them():
    from skorch.callbacks import Callback

    from sknd._adam import FlatAdam as Adam
    from sknd._training import Net

    class CountBatches(Callback):
        def initialize(self):
            self.training, self.validation = 0, 0
            return self

        def on_batch_end(self, net, training=False, **kwargs):
            if training:
                self.training += 1
            else:
                self.validation += 1

    X, y, _, _ = _task_data("binary", 40, 4, seed=0)
    counter = CountBatches()
    net = Net(
        module=build_network("nd", 4, 1),
        criterion=torch.nn.BCEWithLogitsLoss,
        optimizer=Adam,
        max_epochs=2,
        batch_size=16,
        train_split=None,
        iterator_train=TensorBatches,
        callbacks=[counter],
        verbose=0,
    )
    net.fit(TensorDataset(X, y), None)
    assert counter.training == 2 * 3
    assert getattr(net, "fused_trainer_", None) is None
    assert list(net.history[:, "train_batch_count"]) == [3, 3]
    assert all(isinstance(v, float) for v in net.history[:, "train_loss"])


def test_same_seed_same_model_and_global_rng_untouched():
    X, y = _binary_data()
    state = torch.random.get_rng_state()
    first = NDClassifier(max_epochs=5, random_state=3).fit(X, y)
    second = NDClassifier(max_epochs=5, random_state=3).fit(X, y)
    assert torch.equal(torch.random.get_rng_state(), state)
    np.testing.assert_array_equal(first.predict_proba(X), second.predict_proba(X))
    np.testing.assert_array_equal(first.coef_a_, second.coef_a_)


def test_fitted_module_owns_its_parameters():
    X, y = _binary_data()
    model = NDClassifier(max_epochs=2, depth=3, random_state=0).fit(X, y)
    storages = [p.untyped_storage().data_ptr() for p in model._module.parameters()]
    assert len(set(storages)) == len(storages)


# ---------------------------------------------------------------------- thread policy
def test_fits_and_predictions_run_in_one_thread_and_restore_the_setting():
    from sknd import _threads

    X, y = _binary_data()
    seen = []
    original = FusedTrainer.run_epoch

    def spy(self, iterator):
        seen.append(torch.get_num_threads())
        return original(self, iterator)

    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        FusedTrainer.run_epoch = spy
        model = NDClassifier(max_epochs=2, random_state=0).fit(X, y)
        assert torch.get_num_threads() == 2
        model.predict(np.tile(X, (600, 1)))  # 72,000 rows
        assert torch.get_num_threads() == 2
    finally:
        FusedTrainer.run_epoch = original
        torch.set_num_threads(previous)
    assert seen == [1, 1]
    assert _threads._threads_users == 0


def test_torch_threads_is_safe_across_threads():
    import threading

    from sknd._threads import torch_threads

    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    inside = threading.Barrier(2)
    leave_first = threading.Event()
    counts = []

    def first():
        with torch_threads(1):
            inside.wait()
            counts.append(torch.get_num_threads())
        leave_first.set()

    def second():
        with torch_threads(1):
            inside.wait()
            leave_first.wait()
            counts.append(torch.get_num_threads())  # still 1 after the first one left

    try:
        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert counts == [1, 1]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(previous)
