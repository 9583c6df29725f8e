"""sknd's default training recipe (sknd._training: _recipe, _convex_start, _refinement) and the
default pair budget."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from numpy.testing import assert_allclose
from sklearn.linear_model import LogisticRegression, Ridge, RidgeCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from skorch.callbacks import PrintLog

from sknd import NDClassifier, NDRegressor, NDTransformer
from sknd._data._tasks import ClassificationTask, RegressionTask
from sknd._estimators._fit import Fit
from sknd._nd._formula import classic_index
from sknd._nd._pairs import AUTO_PARAMETER_SHARE, auto_pair_budget
from sknd._threads import one_thread
from sknd._training import _convex_start, _recipe, _refinement
from sknd._training._convex_start import (
    MIN_CLASS_ROWS,
    MIN_CONVEX_ROWS,
    ROWS_PER_COEFFICIENT,
    convex_rows,
)
from sknd.networks import Standardize, build_network, default_hidden_units, describe
from sknd.nn import all_pairs


def _spectra(n_samples=300, n_bands=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.05, 0.6, size=(n_samples, n_bands))


def _classes(X, n_classes=2, seed=0):
    # Classes from a noisy asymmetric index of bands 1 and 3.
    rng = np.random.default_rng(seed)
    index = (2.0 * X[:, 3] - X[:, 1]) / (2.0 * X[:, 3] + X[:, 1])
    index = index + rng.normal(0, 0.05, len(X))
    return np.digitize(index, np.quantile(index, np.linspace(0, 1, n_classes + 1)[1:-1]))


def _assert_layer_predicts_as(layer, features, reference):
    """The softmax of the logits of ``layer`` (an ``nn.Linear``) on ``features`` is
    ``reference``'s ``predict_proba``."""
    logits = layer(torch.as_tensor(features)).detach().numpy()
    assert_allclose(
        np.exp(logits) / np.exp(logits).sum(1, keepdims=True),
        reference.predict_proba(features),
        atol=2e-3,
    )


def _kinds(model):
    return [layer.kind for layer in describe(model._module)]


def test_default_recipe_standardizes_the_first_block_and_paper_recipe_does_not():
    X = _spectra()
    y = _classes(X)
    # At depth 2: depth="auto" may keep depth 3 (a Standardize layer there too).
    default = NDClassifier(depth=2, max_epochs=5, random_state=0).fit(X, y)
    paper = NDClassifier(max_epochs=5, random_state=0, recipe="paper").fit(X, y)
    assert _kinds(default) == ["nd", "standardize", "linear"]
    assert _kinds(paper) == ["nd", "linear"]
    # Buffers, not parameters: the paper's parameter counts hold under both recipes.
    assert default.n_parameters_ == paper.n_parameters_ == 2 * 10 + 10 + 1
    mlp = NDClassifier(architecture="mlp", max_epochs=2, random_state=0).fit(X, y)
    assert _kinds(mlp) == ["linear", "relu", "linear"]
    deeper = NDClassifier(depth=3, max_epochs=2, random_state=0).fit(X, y)
    assert _kinds(deeper) == ["nd", "standardize", "linear", "relu", "linear"]


@pytest.mark.parametrize("train_noise", [0.1, 0.3, 0.0])
def test_warm_start_is_the_logistic_regression_on_standardized_classic_indices(train_noise):
    # With no epoch to train and no validation split, the model is the warm start refitted
    # on the same rows: the logistic regression on the standardized classic indices of the
    # rows and of their noisy copies at train_noise (each a third of the weight),
    # standardized as the rows; of the rows alone with train_noise=0.
    X = _spectra()
    y = _classes(X, n_classes=3)
    model = NDClassifier(
        max_epochs=1, lr=1e-12, early_stopping=False, train_noise=train_noise, random_state=0
    )
    model.fit(X, y)
    assert _refinement.TRAIN_NOISE_COPIES == 2

    def features(X):
        return classic_index(X, all_pairs(5), epsilon=1e-6 / np.log(2))

    copies = (
        [_refinement.noisy_copy(X, seed, train_noise) for seed in (1, 2)] if train_noise else []
    )
    rows = np.concatenate([X, *copies])
    scaler = StandardScaler().fit(features(X))
    reference = make_pipeline(scaler, LogisticRegression(C=1.0, max_iter=2000))
    reference[-1].fit(
        scaler.transform(features(rows)),
        np.resize(y, len(rows)),
        sample_weight=np.full(len(rows), len(X) / len(rows)),
    )
    features = features(X)
    # Both fits stop at their solvers' tolerances, from different starts: equal to ~1e-3.
    np.testing.assert_allclose(model.predict_proba(X), reference.predict_proba(features), atol=5e-3)


def test_start_model_is_restored_when_training_never_beats_it():
    X = _spectra()
    y = _classes(X)
    # lr so small that no epoch changes the validation accuracy: epoch 0 stays best.
    model = NDClassifier(lr=1e-9, max_epochs=3, patience=2, random_state=0).fit(X, y)
    assert model.best_epoch_ == 0
    np.testing.assert_array_equal(model.coef_a_, 0)
    np.testing.assert_array_equal(model.coef_c_, 0)
    assert model.n_iter_ == 2  # patience 2 after epoch 0


def test_early_stopping_never_ends_below_the_start():
    X = _spectra(n_samples=400, seed=1)
    y = _classes(X, seed=1)
    model = NDClassifier(max_epochs=40, random_state=0).fit(X, y)
    scores = [s for s in model.validation_scores_ if np.isfinite(s)]
    assert model.best_validation_score_ >= max(scores)


def test_regression_warm_start_is_ridge_cv_on_standardized_targets():
    X = _spectra(n_bands=4)
    y = 50 + 10 * (X[:, 0] - X[:, 2]) / (X[:, 0] + X[:, 2])
    model = NDRegressor(max_epochs=1, lr=1e-12, early_stopping=False, random_state=0).fit(X, y)
    features = StandardScaler().fit_transform(
        classic_index(X, all_pairs(4), epsilon=1e-6 / np.log(2))
    )
    target = (y - y.mean()) / y.std()
    # The leave-one-out errors of RidgeCV, and the one-standard-error rule on them.
    alphas = _convex_start.ALPHA_PATH_PER_ROW[::-1] * len(X)
    errors = RidgeCV(alphas=alphas, store_cv_results=True).fit(features, target).cv_results_.T
    means = errors.mean(axis=1)
    best = np.argmin(means)
    alpha = alphas[np.flatnonzero(means <= means[best] + errors[best].std() / len(X) ** 0.5)[0]]
    assert model.start_regularization_ == pytest.approx(alpha)
    assert alpha != _convex_start.DEFAULT_ALPHA
    reference = Ridge(alpha=alpha).fit(features, target)
    expected = reference.predict(features) * y.std() + y.mean()
    np.testing.assert_allclose(model.predict(X), expected, rtol=1e-4)
    assert model.learning_gain_ is None  # no validation part to measure it on


def test_leave_one_out_errors_are_those_of_repeated_rows():
    # Integer weights count as copies: leaving one copy out, as on the repeated rows (the
    # closed form is checked against refits without each row).
    rng = np.random.default_rng(9)
    X, y = rng.normal(size=(30, 4)), rng.normal(size=30)
    weight = rng.integers(1, 4, size=30)
    alphas = np.array([10.0, 0.1])
    errors = _convex_start._leave_one_out_errors(X, y, weight.astype(float), alphas)
    repeated = _convex_start._leave_one_out_errors(
        np.repeat(X, weight, 0), np.repeat(y, weight), None, alphas
    )
    np.testing.assert_allclose(repeated[:, np.cumsum(weight) - 1], errors)
    refits = [
        [(y[i] - Ridge(alpha=a).fit(np.delete(X, i, 0), np.delete(y, i)).predict(X[[i]])[0]) ** 2
         for i in range(30)]
        for a in alphas
    ]  # fmt: skip
    np.testing.assert_allclose(_convex_start._leave_one_out_errors(X, y, None, alphas), refits)


def _path_choice(X, y, X_val, y_val):
    """The C the recipe's rule picks: the one-standard-error rule on each validation row's
    log-loss, along the path until a C does not improve the mean; fits on the training
    rows and their two noisy copies."""
    index = classic_index(X, all_pairs(5), epsilon=1e-6 / np.log(2))
    scaler = StandardScaler().fit(index)
    training = np.concatenate([X, _refinement.noisy_copy(X, 1), _refinement.noisy_copy(X, 2)])
    training = scaler.transform(classic_index(training, all_pairs(5), epsilon=1e-6 / np.log(2)))
    weight = np.full(len(training), 1 / 3)
    val = scaler.transform(classic_index(X_val, all_pairs(5), epsilon=1e-6 / np.log(2)))
    losses = []
    for C in _convex_start.C_PATH:
        fit = LogisticRegression(C=C, max_iter=2000)
        fit.fit(training, np.tile(y, 3), sample_weight=weight)
        losses.append(-np.log(fit.predict_proba(val)[np.arange(len(y_val)), y_val]))
        means = np.mean(losses, axis=1)
        if len(means) - 1 - np.argmin(means) >= _convex_start.PATH_PATIENCE:
            break
    best = np.argmin(means)
    # The one-standard-error rule: the strongest penalty within a standard error of the best.
    bound = means[best] + np.std(losses[best]) / np.sqrt(len(y_val))
    return _convex_start.C_PATH[np.flatnonzero(means <= bound)[0]], _convex_start.C_PATH[best]


def test_logistic_start_penalty_is_chosen_by_the_validation_log_loss():
    # Pairs of similar bands: their indices amplify band noise.
    rng = np.random.default_rng(7)
    X = np.repeat(rng.uniform(0.1, 0.5, (400, 3)), 2, axis=1)[:, :5]
    X = X * rng.uniform(0.97, 1.03, (400, 5))
    y = _classes(X, n_classes=3, seed=7)
    X_val, y_val = X[300:], y[300:]
    X, y = X[:300], y[:300]
    model = NDClassifier(max_epochs=1, lr=1e-12, random_state=0)
    model.fit(X, y, X_val=X_val, y_val=y_val)
    chosen, best = _path_choice(X, y, X_val, y_val)
    assert chosen < best  # the one-standard-error rule matters on these data
    assert model.start_regularization_ == chosen


def test_noisy_copy_is_the_papers_noise_of_the_experiments():
    from sknd.experiments import add_multiplicative_noise

    X = _spectra(n_samples=20)
    for seed in (0, 3):
        expected = add_multiplicative_noise(X, _refinement.NOISE_LEVEL, random_state=seed)
        np.testing.assert_array_equal(_refinement.noisy_copy(X, seed), expected)
    assert _refinement.NOISE_LEVEL == 0.1


def test_convex_fits_on_principal_components_equal_fits_on_all_features():
    # Many indices of few bands span few directions: the fit on the kept components maps
    # back to the logistic regression on all the standardized indices.
    rng = np.random.default_rng(11)
    X = np.repeat(rng.uniform(0.1, 0.5, (300, 3)), 3, axis=1) * rng.uniform(0.95, 1.05, (300, 9))
    y = _classes(X[:, :5], n_classes=3, seed=11)
    features = StandardScaler().fit_transform(classic_index(X, all_pairs(9), epsilon=1e-6))
    components = _convex_start.Components(features, None)
    assert components.basis.shape[1] < features.shape[1]
    layer = torch.nn.Linear(features.shape[1], 3).double()
    task = ClassificationTask(y)
    _convex_start.convex_fit((features, y, None), task, layer, 0.1)
    reference = LogisticRegression(C=0.1, max_iter=5000, tol=1e-8).fit(features, y)
    _assert_layer_predicts_as(layer, features, reference)


@pytest.mark.parametrize("newton_max", [_convex_start.NEWTON_MAX_COEFFICIENTS, 0])
def test_convex_fits_from_a_trained_layer_reach_the_fit_from_zero(newton_max, monkeypatch):
    # The refit starts from trained weights; both solvers must end where a fit from zero
    # does (scikit-learn 1.6's multinomial newton-cholesky mishandled warm-started
    # intercepts: sknd shifts them, _convex_start._warm_start).
    monkeypatch.setattr(_convex_start, "NEWTON_MAX_COEFFICIENTS", newton_max)
    rng = np.random.default_rng(12)
    X = _spectra(n_samples=300, n_bands=5, seed=12)
    y = _classes(X, n_classes=3, seed=12)
    features = StandardScaler().fit_transform(classic_index(X, all_pairs(5), epsilon=1e-6))
    layer = torch.nn.Linear(features.shape[1], 3).double()
    with torch.no_grad():
        layer.weight.copy_(torch.as_tensor(rng.normal(size=(3, features.shape[1]))))
        layer.bias.copy_(torch.as_tensor([3.0, -1.0, 2.0]))
    _convex_start.convex_fit((features, y, None), ClassificationTask(y), layer, 1.0)
    solver = _convex_start._logistic(layer, 1.0, _convex_start.Components(features, None)).solver
    assert solver == ("lbfgs" if newton_max == 0 else "newton-cholesky")
    reference = LogisticRegression(C=1.0, max_iter=5000, tol=1e-8).fit(features, y)
    _assert_layer_predicts_as(layer, features, reference)


def _probabilities(coef, intercept, features):
    logits = coef @ features.T + intercept[:, None]
    if len(logits) == 1:
        positive = 1 / (1 + np.exp(-logits[0]))
        return np.column_stack([1 - positive, positive])
    exp = np.exp(logits - logits.max(axis=0))
    return (exp / exp.sum(axis=0)).T


@pytest.mark.parametrize("n_classes", [2, 3])
def test_c_path_candidates_are_the_logistic_regressions_of_their_penalty(n_classes):
    # Weighted rows, a strong and a weak penalty, from zero and from the other's fit: the
    # preconditioned L-BFGS ends where scikit-learn's fit to a tight tolerance does.
    X = _spectra(n_samples=300, n_bands=5, seed=13)
    y = _classes(X, n_classes=n_classes, seed=13)
    weight = np.random.default_rng(13).uniform(0.5, 2.0, len(y))
    features = StandardScaler().fit_transform(classic_index(X, all_pairs(5), epsilon=1e-6))
    features = _convex_start.Components(features, weight)(features)
    objective = _convex_start.PathObjective(features, y, n_classes, weight)
    k = 1 if n_classes == 2 else n_classes
    coef, intercept = np.zeros((k, features.shape[1])), np.zeros(k)
    for C in (0.01, 100.0, 0.01):
        coef, intercept = objective.fit(C, coef, intercept, 1000)
        reference = LogisticRegression(C=C, tol=1e-12, max_iter=100_000)
        reference.fit(features, y, sample_weight=weight)
        assert_allclose(
            _probabilities(coef, intercept, features), reference.predict_proba(features), atol=1e-4
        )


@pytest.mark.slow
def test_the_c_path_chooses_the_same_c_at_half_and_twice_its_iterations(monkeypatch):
    # satimage-36's first fold (630 indices, 88 components, 6 classes, the rows and their
    # two noisy copies): with candidates capped short of convergence, a weaker penalty
    # ranked better for having run further (C = 1 at 50 iterations, 10 at 100 and 200).
    from sklearn.model_selection import StratifiedKFold

    from sknd.datasets import load_satimage

    class Captured(Exception):
        pass

    def capture(*args):
        raise Captured(args)

    X, y = load_satimage(return_X_y=True)
    train, _ = next(StratifiedKFold(10, shuffle=True, random_state=0).split(X, y))
    with monkeypatch.context() as patch:
        patch.setattr(_convex_start, "tuned_logistic", capture)
        with pytest.raises(Captured) as captured:
            NDClassifier(random_state=0).fit(X[train], y[train])
    output, *inputs = captured.value.args[0]
    assert output.in_features * output.out_features > _convex_start.PATH_NEWTON_MAX_COEFFICIENTS
    chosen = []
    for cap in (_convex_start.PATH_MAX_ITER // 2, _convex_start.PATH_MAX_ITER * 2):
        monkeypatch.setattr(_convex_start, "PATH_MAX_ITER", cap)
        layer = torch.nn.Linear(output.in_features, output.out_features).double()
        layer.load_state_dict(output.state_dict())
        with one_thread():  # as in a fit
            chosen.append(_convex_start.tuned_logistic(layer, *inputs))
    assert chosen[0] == chosen[1]


@pytest.mark.parametrize("estimator", [NDClassifier, NDRegressor])
def test_constant_indices_give_a_finite_fit(estimator):
    # Equal bands: every classic index is exactly 0, no principal direction.
    X = np.outer(_spectra(n_samples=60, n_bands=1, seed=18)[:, 0], [1.0, 1.0, 1.0])
    y = np.arange(60) % 2
    model = estimator(max_epochs=2, random_state=0).fit(X, y)
    assert np.isfinite(model.predict(X).astype(float)).all()


def test_refinement_samples_wide_training_parts(monkeypatch):
    # A small element budget stands in for many rows x pairs: 10 x 5 bands -> 10 pairs.
    monkeypatch.setattr(_refinement, "MAX_REFINE_ELEMENTS", 10 * 60)
    seen = []
    objective = _refinement._objective

    def spy(task, penalty, X, *args):
        seen.append(len(X))
        return objective(task, penalty, X, *args)

    monkeypatch.setattr(_refinement, "_objective", spy)
    X = _spectra(n_samples=500, seed=12)
    y = _classes(X, seed=12)
    model = NDClassifier(max_epochs=2, random_state=0).fit(X, y)
    # Of 450 training rows, with their two noisy copies counted in the budget.
    assert seen == [3 * max(60 // 3, 2 * _refinement.REFINE_CLASS_ROWS)]
    assert np.isfinite(model.predict_proba(X)).all()


# A fresh process (import checks): behind the slow marker.
@pytest.mark.slow
def test_a_default_fit_that_refines_does_not_import_torch_dynamo():
    # torch.optim.LBFGS imports torch._dynamo on its first step: 1.3 s with cached bytecode,
    # 16-19 s without (PYTHONDONTWRITEBYTECODE). The refinement's L-BFGS is scipy's.
    code = (
        "import sys, numpy as np, sknd, sknd._training._refinement as r\n"
        "calls = []; m = r._minimize\n"
        "r._minimize = lambda *a: calls.append(1) or m(*a)\n"
        "X = np.random.default_rng(0).uniform(0.1, 1, (200, 4)); y = X[:, 0] > X[:, 1]\n"
        "sknd.NDClassifier(max_epochs=2).fit(X, y).predict(X)\n"
        "assert calls, 'the refinement did not run'\n"
        "assert 'torch._dynamo' not in sys.modules, 'torch._dynamo was imported'\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=root)


def test_verbose_prints_the_time_of_each_stage(capsys):
    X = _spectra(n_samples=200, seed=13)
    y = _classes(X, seed=13)
    NDClassifier(max_epochs=2, verbose=1, random_state=0).fit(X, y)
    line = next(x for x in capsys.readouterr().out.splitlines() if "stage times" in x)
    for stage in ("standardize", "C path", "refinement", "epochs", "refit"):
        assert f"{stage} " in line


def test_refined_indices_recover_a_weighted_index_where_its_value_matters():
    # A regression on the value of (2 b1 - b3) / (2 b1 + b3): k = 2 is identifiable (the
    # classic index is a different function of the bands), and learning it pays.
    rng = np.random.default_rng(4)
    X = _spectra(n_samples=600, n_bands=4, seed=4)
    y = (2 * X[:, 1] - X[:, 3]) / (2 * X[:, 1] + X[:, 3]) + rng.normal(0, 0.01, len(X))
    model = NDRegressor(pairs=[(1, 3)], depth=2, random_state=0).fit(X[:500], y[:500])
    k = np.log1p(np.exp(model.coef_a_)) / np.log1p(np.exp(model.coef_c_))
    assert k[0] == pytest.approx(2.0, rel=0.05)
    assert model.learning_gain_ > 0.005
    fixed = NDRegressor(pairs=[(1, 3)], recipe="paper", lr=1e-12, max_epochs=1, random_state=0)
    start = fixed.fit(X[:500], y[:500])
    assert model.score(X[500:], y[500:]) > 0.99 > start.score(X[500:], y[500:])


def test_refinement_leaves_the_classic_index_where_it_is_right():
    rng = np.random.default_rng(5)
    X = _spectra(n_samples=600, n_bands=4, seed=5)
    y = (X[:, 1] - X[:, 3]) / (X[:, 1] + X[:, 3]) + rng.normal(0, 0.01, len(X))
    model = NDRegressor(pairs=[(1, 3)], lr=1e-12, random_state=0).fit(X, y)
    k = np.log1p(np.exp(model.coef_a_)) / np.log1p(np.exp(model.coef_c_))
    assert k[0] == pytest.approx(1.0, abs=0.02)


def test_learning_gain_is_measured_on_validation_and_never_negative():
    X = _spectra(n_samples=400, seed=6)
    y = _classes(X, n_classes=3, seed=6)
    for architecture in ("nd", "attnd"):
        for depth in (2, 3):
            model = NDClassifier(
                architecture=architecture, depth=depth, max_epochs=10, random_state=0
            )
            model.fit(X, y)
            assert model.learning_gain_ >= -1e-6
            assert model.start_regularization_ > 0
    mlp = NDClassifier(architecture="mlp", max_epochs=2, random_state=0).fit(X, y)
    assert mlp.learning_gain_ is None and mlp.start_regularization_ is None


@pytest.mark.parametrize("depth", [3, 4])
@pytest.mark.parametrize("n_outputs", [1, 3])
def test_deeper_networks_start_exactly_at_their_linear_part(depth, n_outputs):
    torch.manual_seed(0)
    net = build_network("nd", 5, n_outputs, depth=depth, hidden_units=12, standardize=True)
    linear = _recipe.linear_part(net)
    # the linear part shares the first block and the standardization, not the hidden layers
    assert linear[0] is net[0] and linear[1] is net[1] and len(linear) == 3
    torch.nn.init.normal_(linear[2].weight)
    torch.nn.init.normal_(linear[2].bias)
    X = torch.rand(200, 5)
    assert not torch.allclose(net(X), linear(X), atol=1e-3)
    _recipe.carry(net, linear)
    torch.testing.assert_close(net(X), linear(X), atol=1e-5, rtol=1e-5)
    # the other hidden units are left random: training can use them
    hidden = net[2].weight[2 * n_outputs :]
    assert hidden.abs().sum() > 0 and net[-1].weight[:, 2 * n_outputs :].abs().sum() == 0
    depth2 = build_network("nd", 5, n_outputs, standardize=True)
    assert _recipe.linear_part(depth2) is depth2
    _recipe.carry(depth2, depth2)  # a no-op at depth 2


def test_deeper_default_width_stays_within_the_mlps_parameters():
    X = _spectra(n_samples=300, n_bands=16, seed=3)
    y = _classes(X, n_classes=2, seed=3)
    model = NDClassifier(depth=3, max_epochs=1, random_state=0).fit(X, y)
    parameters = sum(p.numel() for p in model.module_.parameters())
    mlp_parameters = 100 * (16 + 1) + 101 * 1  # scikit-learn's default MLP: 1,801
    assert parameters <= mlp_parameters
    assert model.module_[2].out_features >= 2 + _recipe.MIN_NONLINEAR_UNITS
    # the paper's recipe keeps the paper's width, one unit per band pair
    paper = NDClassifier(depth=3, recipe="paper", max_epochs=1, random_state=0).fit(X, y)
    assert paper.module_[1].out_features == default_hidden_units(120)
    with pytest.raises(ValueError, match="hidden_units=1 is too narrow"):
        NDClassifier(depth=3, hidden_units=1).fit(X, y)
    NDClassifier(depth=3, hidden_units=1, recipe="paper", max_epochs=1).fit(X, y)


def test_deeper_networks_start_at_the_tuned_depth_2_model():
    # Without training (max_epochs=0 is not allowed: lr=1e-12 freezes the weights), a
    # depth-3 fit predicts as the depth-2 fit: same tuned start, same refined indices.
    X = _spectra(n_samples=400, seed=8)
    y = _classes(X, n_classes=3, seed=8)
    params = dict(lr=1e-12, max_epochs=1, random_state=0)
    shallow = NDClassifier(**params).fit(X, y)
    deep = NDClassifier(depth=3, **params).fit(X, y)
    np.testing.assert_allclose(deep.coef_a_, shallow.coef_a_, atol=1e-6)
    agree = np.mean(deep.predict(X) == shallow.predict(X))
    # Only the refits differ (depth 3 on its hidden units of the rows and their noisy
    # copies): 98 % agreement without the copies, 96.75 % with them.
    assert agree > 0.96


def test_a_deeper_regressor_refits_as_its_depth_2_start():
    # Frozen weights (lr=1e-12): the depth-3 regressor predicts as the depth-2 one. Its
    # refit reads the two hidden units that carry the linear start, on another scale than
    # the standardized indices whose ridge penalty the start chose: with that penalty it
    # shrank the fit (test R2 0.11 against 0.62 here); it chooses its own.
    rng = np.random.default_rng(3)
    X = _spectra(n_samples=500, n_bands=40, seed=3)
    y = (X[:, 37] - X[:, 1]) / (X[:, 37] + X[:, 1]) + rng.normal(0, 0.3, len(X))
    params = dict(lr=1e-12, max_epochs=1, random_state=0)
    shallow = NDRegressor(**params).fit(X[:400], y[:400])
    deep = NDRegressor(depth=3, **params).fit(X[:400], y[:400])
    assert deep.score(X[400:], y[400:]) >= shallow.score(X[400:], y[400:]) - 0.01


def test_a_carried_regressor_warms_adam_up_and_depth_2_and_classifiers_do_not():
    X = _spectra(n_samples=320, n_bands=6, seed=4)
    y = _classes(X, seed=4)
    steps = {}
    for name, estimator, target in (
        ("regressor", NDRegressor, X[:, 0] - X[:, 3]),
        ("classifier", NDClassifier, y),
    ):
        for depth in (2, 3):
            model = estimator(depth=depth, max_epochs=1, batch_size=32, random_state=0)
            model.fit(X, target)
            steps[name, depth] = model.net_.optimizer_.param_groups[0]["warmup_steps"]
    # WARMUP_EPOCHS epochs of the training part's batches (at most 320 rows, 10 batches).
    assert steps["regressor", 3] % _recipe.WARMUP_EPOCHS == 0
    assert 0 < steps["regressor", 3] <= _recipe.WARMUP_EPOCHS * 10
    assert steps["regressor", 2] == steps["classifier", 2] == steps["classifier", 3] == 0


def test_all_pairs_on_many_bands_do_not_collapse():
    # 40 correlated bands, 780 pairs for 200 rows: a fixed penalty (alpha = 1) overfits.
    rng = np.random.default_rng(7)
    base = rng.uniform(0.1, 0.5, size=(250, 4))
    X = np.repeat(base, 10, axis=1) * rng.uniform(0.9, 1.1, size=(250, 40))
    y = (X[:, 5] - X[:, 25]) / (X[:, 5] + X[:, 25]) + rng.normal(0, 0.02, 250)
    every = NDRegressor(pairs="all", max_epochs=5, random_state=0).fit(X[:200], y[:200])
    screened = NDRegressor(max_epochs=5, random_state=0).fit(X[:200], y[:200])
    assert every.start_regularization_ > _convex_start.DEFAULT_ALPHA
    assert every.score(X[200:], y[200:]) >= screened.score(X[200:], y[200:]) - 0.05
    assert every.score(X[200:], y[200:]) > 0.5


def test_tiny_data_falls_back_to_the_fixed_start_and_says_so(capsys):
    X = _spectra(n_samples=12, n_bands=3)
    y = np.array([0, 1, 2] * 4)
    model = NDClassifier(max_epochs=2, verbose=1, random_state=0).fit(X, y)
    assert model.start_regularization_ == _convex_start.DEFAULT_C
    assert "C=1 (fixed: too few rows to choose it on)" in capsys.readouterr().out


def test_a_diverging_refinement_keeps_the_start(monkeypatch):
    monkeypatch.setattr(_refinement, "PRIOR_PATH", np.array([np.nan]))
    X = _spectra(n_samples=300, seed=8)
    y = _classes(X, seed=8)
    model = NDClassifier(lr=1e-12, max_epochs=2, random_state=0).fit(X, y)
    np.testing.assert_array_equal(model.coef_a_, 0)
    np.testing.assert_array_equal(model.coef_c_, 0)
    assert np.isfinite(model.predict_proba(X)).all()
    assert model.learning_gain_ == 0.0


# The AttND gate reads the raw bands: an AttND classifier is not illumination-invariant, the
# indices its transformer outputs (before the gate) are.
@pytest.mark.parametrize(
    "estimator, architecture",
    [(NDClassifier, "nd"), (NDTransformer, "nd"), (NDTransformer, "attnd")],
)
def test_default_recipe_keeps_illumination_invariance(estimator, architecture):
    X = _spectra()
    y = _classes(X)
    model = estimator(architecture=architecture, max_epochs=5, random_state=0).fit(X, y)
    method = model.predict_proba if estimator is NDClassifier else model.transform
    np.testing.assert_allclose(method(X * 7.5), method(X), rtol=1e-5, atol=1e-6)


def test_standardize_layer_fits_and_guards_constant_columns():
    layer = Standardize(3).fit(torch.tensor([[0.1, 2.0, 5.0], [0.3, 4.0, 5.0]]))
    torch.testing.assert_close(layer.mean, torch.tensor([[0.2, 3.0, 5.0]]))
    torch.testing.assert_close(layer.scale, torch.tensor([[0.1, 1.0, 1.0]]))  # constant: 1
    assert sum(p.numel() for p in layer.parameters()) == 0
    net = build_network("nd", 4, 1, standardize=True)
    assert [type(m).__name__ for m in net] == ["NormalizedDifference", "Standardize", "Linear"]


def test_recipe_fits_are_reproducible_and_finite_on_tiny_data():
    X = _spectra(n_samples=12, n_bands=3)
    y = np.array([0, 1, 2] * 4)
    first = NDClassifier(max_epochs=3, random_state=0).fit(X, y)
    second = NDClassifier(max_epochs=3, random_state=0).fit(X, y)
    np.testing.assert_array_equal(first.predict_proba(X), second.predict_proba(X))
    assert np.isfinite(first.predict_proba(X)).all()


# --------------------------------------------------------------- rows of the convex fits
def test_convex_rows_keep_every_row_up_to_the_budget():
    weight = np.linspace(0.5, 2.0, MIN_CONVEX_ROWS)
    codes = np.arange(MIN_CONVEX_ROWS) % 3
    task = ClassificationTask(codes)
    assert convex_rows(codes, task, 10) == (None, None)
    rows, same = convex_rows(codes, task, 10, weight)
    assert rows is None and same is weight
    # The budget grows with the coefficients: 300 of them keep 30,000 rows whole.
    codes = np.arange(ROWS_PER_COEFFICIENT * 300) % 3
    assert len(codes) > MIN_CONVEX_ROWS
    assert convex_rows(codes, ClassificationTask(codes), 300)[0] is None
    assert convex_rows(codes, ClassificationTask(codes), 299)[0] is not None


def test_convex_rows_sample_large_data_without_bias_and_keep_rare_classes():
    rng = np.random.default_rng(0)
    codes = rng.choice(3, size=100_000, p=[0.7, 0.298, 0.002])  # class 2: ~200 rows
    task = ClassificationTask(codes)
    rows, weight = convex_rows(codes, task, 46)
    assert np.all(np.diff(rows) > 0) and rows[-1] < len(codes)  # distinct, in data order
    assert len(rows) <= MIN_CONVEX_ROWS + MIN_CLASS_ROWS
    for code in range(3):
        in_class = codes[rows] == code
        # Each class's weights add up to its rows: unbiased class totals.
        np.testing.assert_allclose(weight[in_class].sum(), np.sum(codes == code))
        assert in_class.sum() >= min(MIN_CLASS_ROWS, np.sum(codes == code))
    assert np.all(weight[codes[rows] == 2] == 1.0)  # a rare class is kept whole
    # Sample weights multiply the sampling weights; the draw is reproducible.
    sample_weight = rng.uniform(0.5, 2.0, len(codes))
    rows_w, weight_w = convex_rows(codes, task, 46, sample_weight)
    np.testing.assert_array_equal(rows_w, rows)
    np.testing.assert_allclose(weight_w, weight * sample_weight[rows])
    # Regression: one uniform sample, each row standing for n / m rows.
    targets = rng.normal(size=(100_000, 2))
    rows, weight = convex_rows(targets, RegressionTask(targets), 3)
    assert len(rows) == MIN_CONVEX_ROWS
    np.testing.assert_allclose(weight, 100_000 / MIN_CONVEX_ROWS)


def _small_budget_rows(monkeypatch, module, function, argument, *, rows, class_rows, per):
    """Shrink the convex fits' row budget; return the row counts of the table that calls
    of ``module.<function>`` get as their positional ``argument`` (an array, or a
    ``(features, target, weight)`` tuple: its features)."""
    monkeypatch.setattr(_convex_start, "MIN_CONVEX_ROWS", rows)
    monkeypatch.setattr(_convex_start, "MIN_CLASS_ROWS", class_rows)
    monkeypatch.setattr(_convex_start, "ROWS_PER_COEFFICIENT", per)
    seen = []
    original = getattr(module, function)

    def spy(*args):
        table = args[argument]
        seen.append(len(table[0] if isinstance(table, tuple) else table))
        return original(*args)

    monkeypatch.setattr(module, function, spy)
    return seen


def test_convex_fits_of_large_data_use_the_sample_and_stay_close_to_all_rows(monkeypatch):
    # A small budget stands in for a large data set: 3,000 rows, 1,000 in the convex fits.
    seen = _small_budget_rows(
        monkeypatch, _convex_start, "convex_fit", 0, rows=1000, class_rows=50, per=10
    )
    X = _spectra(n_samples=3000, seed=2)
    y = _classes(X, n_classes=3, seed=2)
    model = NDClassifier(max_epochs=1, lr=1e-12, early_stopping=False, random_state=0)
    model.fit(X, y)
    # Warm start and refit: a sample of 1000 // 3 rows (each class's share rounded up) and
    # its two noisy copies.
    assert len(seen) == 2 and all(999 <= n <= 1008 and n % 3 == 0 for n in seen)
    # Against the same model with its convex fits on all rows (as in the test above).
    features = classic_index(X, all_pairs(5), epsilon=1e-6 / np.log(2))
    reference = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))
    proba = reference.fit(features, y).predict_proba(features)
    assert np.abs(model.predict_proba(X) - proba).mean() < 0.02
    assert np.mean(model.predict(X) == reference.predict(features)) > 0.97


def test_the_c_path_scores_a_sample_of_large_validation_parts(monkeypatch):
    # A small budget stands in for a large data set: 300 validation rows, ~100 scored.
    seen = _small_budget_rows(monkeypatch, _recipe, "_features", 1, rows=100, class_rows=20, per=1)
    X = _spectra(n_samples=3000, seed=2)
    y = _classes(X, n_classes=3, seed=2)
    # depth=2: the refit's sample is then that of the start's coefficients (depth="auto"'s
    # wide head has more, and so a larger sample).
    model = NDClassifier(depth=2, max_epochs=1, lr=1e-12, random_state=0).fit(X, y)
    # The training sample's two noisy copies (C path), the validation features, then the
    # refit's training sample with its copies: validation rows ~100.
    copies, valid, refit = seen
    assert valid <= 130 and copies == 2 * refit // 3
    assert model.start_regularization_ in _convex_start.C_PATH


# --------------------------------------------------------------- default pair budget
@pytest.mark.parametrize("n_bands", [10, 20, 30, 49, 50, 75, 100, 150, 200, 300])
@pytest.mark.parametrize("n_classes", [2, 3, 5, 10])
def test_auto_pairs_keep_depth_2_nd_within_30_percent_of_the_mlp(n_bands, n_classes):
    n_outputs = 1 if n_classes == 2 else n_classes
    hidden = default_hidden_units(n_bands * (n_bands - 1) // 2)
    n_pairs = auto_pair_budget(n_bands, n_outputs, hidden)
    nd = 2 * n_pairs + n_pairs * n_outputs + n_outputs
    mlp = hidden * (n_bands + 1) + hidden * n_outputs + n_outputs
    if n_classes == 2 or n_bands >= 50:
        assert nd <= AUTO_PARAMETER_SHARE * mlp
    if n_bands < 50:  # below 50 bands every pair is kept
        assert n_pairs == n_bands * (n_bands - 1) // 2


def test_auto_pairs_on_fitted_models_match_the_budget():
    rng = np.random.default_rng(0)
    X = rng.uniform(0.05, 0.6, size=(120, 60))
    y = np.arange(120) % 5
    model = NDClassifier(depth=2, max_epochs=1, random_state=0).fit(X, y)
    mlp = NDClassifier(architecture="mlp", depth=2, max_epochs=1, random_state=0).fit(X, y)
    budget = auto_pair_budget(60, 5, default_hidden_units(60 * 59 // 2))
    assert len(model.pairs_) == budget < 60 * 59 // 2
    assert model.n_parameters_ <= AUTO_PARAMETER_SHARE * mlp.n_parameters_
    every = NDClassifier(pairs="all", max_epochs=1, random_state=0).fit(X[:, :12], y)
    assert len(every.pairs_) == 66


# ------------------------------------------------------------------ depth="auto"
@pytest.mark.parametrize("n_samples, seed, depth", [(400, 14, 3), (300, 16, 2)])
def test_auto_depth_keeps_depth_3_only_when_validation_confirms_it(
    n_samples, seed, depth, monkeypatch
):
    # The depth-3 run starts at the tuned depth-2 model, scored as its epoch 0; depth 3 is
    # kept when a later epoch beat it and it scores better on the validation rows, otherwise
    # the depth-2 model is trained: "auto" is then the depth=3 or the depth=2 fit.
    X = _spectra(n_samples=n_samples, seed=seed)
    y = _classes(X, n_classes=3, seed=seed)
    runs, scored = [], []
    train, validation = Fit.train, _refinement.validation

    def spy_train(self, *args):
        runs.append(train(self, *args))
        return runs[-1]

    def spy_validation(module, *args):
        scored.append((module, validation(module, *args).monitored(args[0])))
        return validation(module, *args)

    monkeypatch.setattr(Fit, "train", spy_train)
    monkeypatch.setattr(_refinement, "validation", spy_validation)
    model = NDClassifier(max_epochs=15, random_state=0).fit(X, y)
    assert model.depth == "auto" and model.depth_ == depth
    deep = dict(runs[0].callbacks_)["early_stopping"]
    start = scored[0][1]  # the tuned depth-2 start: depth 3's epoch 0
    depth3 = [s for m, s in scored if m is runs[0].module_][-1]
    assert (deep.best_epoch_ > 0 and depth3 > start) == (depth == 3)
    assert len(runs) == (1 if depth == 3 else 2)  # depth 2 trained only where 3 did not pay
    assert model.net_ is runs[-1]
    monkeypatch.undo()
    fixed = NDClassifier(depth=depth, max_epochs=15, random_state=0).fit(X, y)
    assert model.n_parameters_ == fixed.n_parameters_
    assert_allclose(model.predict_proba(X), fixed.predict_proba(X), atol=1e-6)


@pytest.mark.parametrize(
    "params, reason",
    [
        ({"early_stopping": False}, "no validation part"),
        ({"recipe": "paper"}, "has no tuned depth-2 model"),
        ({"architecture": "mlp"}, "has no tuned depth-2 model"),
        ({"callbacks": [("print", PrintLog())]}, "callbacks follow one training run"),
    ],
)
def test_auto_depth_falls_back_to_depth_2_and_says_so(params, reason, capsys):
    X = _spectra(n_samples=200, seed=15)
    y = _classes(X, seed=15)
    model = NDClassifier(max_epochs=2, verbose=1, random_state=0, **params).fit(X, y)
    assert model.depth_ == 2
    out = capsys.readouterr().out
    assert "depth='auto': depth 2, the plain rule" in out and reason in out
    # The paper's parameter counts: recipe="paper" with depth="auto" is its depth-2 model.
    two = NDClassifier(depth=2, max_epochs=2, random_state=0, **params).fit(X, y)
    assert model.n_parameters_ == two.n_parameters_


def test_auto_depth_with_too_few_validation_rows_is_depth_2():
    X = _spectra(n_samples=40, seed=16)
    y = _classes(X, seed=16)
    model = NDRegressor(max_epochs=2, random_state=0).fit(X, X[:, 0] / X[:, 1])
    assert model.depth_ == 2  # 8 validation rows
    partial = NDClassifier(random_state=0).partial_fit(X, y, classes=[0, 1])
    assert partial.depth_ == 2
    explicit = NDClassifier(depth=3, max_epochs=2, random_state=0).fit(X, y)
    assert explicit.depth_ == 3


def test_grid_search_over_depth_still_works():
    from sklearn.model_selection import GridSearchCV

    X = _spectra(n_samples=150, seed=17)
    y = _classes(X, seed=17)
    grid = GridSearchCV(NDClassifier(max_epochs=2, random_state=0), {"depth": [2, 3, "auto"]}, cv=2)
    grid.fit(X, y)
    assert grid.best_estimator_.depth_ in (2, 3)
    assert len(grid.cv_results_["params"]) == 3


# A fresh process (import checks): behind the slow marker.
@pytest.mark.slow
def test_a_first_default_fit_imports_neither_dynamo_nor_sympy():
    # depth="auto" builds a depth-2 head beside the depth-3 network: torch's "meta" device
    # would import sympy (30 s without cached bytecode), torch.optim.LBFGS torch._dynamo.
    code = (
        "import sys, numpy as np, sknd\n"
        "X = np.random.default_rng(0).uniform(0.1, 1, (200, 4)); y = X[:, 0] > X[:, 1]\n"
        "model = sknd.NDClassifier(max_epochs=3).fit(X, y)\n"
        "assert model.depth == 'auto'\n"
        "for name in ('torch._dynamo', 'sympy'):\n"
        "    assert name not in sys.modules, name + ' was imported'\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=root)


@pytest.mark.parametrize("estimator", [NDClassifier, NDTransformer])
def test_train_noise_sets_the_copies_of_class_label_fits(estimator, monkeypatch):
    # The level reaches the recipe of both estimators that take class labels; regression
    # targets (NDRegressor, NDTransformer on a continuous y) train on the rows alone.
    X = _spectra(n_samples=120, seed=18)
    y = _classes(X, seed=18)
    made = []
    of = _refinement.NoisyCopies.of

    def spy(task, level):
        made.append(of(task, level))
        return made[-1]

    monkeypatch.setattr(_refinement.NoisyCopies, "of", staticmethod(spy))
    estimator(train_noise=0.25, max_epochs=1, random_state=0).fit(X, y)
    assert made and set(made) == {_refinement.NoisyCopies(0.25, 2)}
    made.clear()
    estimator(train_noise=0, max_epochs=1, random_state=0).fit(X, y)
    assert set(made) == {_refinement.NoisyCopies(0, 0)}
    # "auto" (the default): the paper's 10 %, half of it with passthrough.
    for passthrough, level in [(False, 0.1), (True, 0.05)]:
        made.clear()
        estimator(passthrough=passthrough, max_epochs=1, random_state=0).fit(X, y)
        assert set(made) == {_refinement.NoisyCopies(level, 2)}
    made.clear()
    regressor = NDTransformer if estimator is NDTransformer else NDRegressor
    regressor(max_epochs=1, random_state=0).fit(X, X[:, 0] / X[:, 1])
    assert set(made) == {_refinement.NoisyCopies(0.1 if regressor is NDTransformer else 0.0, 0)}
    assert "train_noise" not in NDRegressor().get_params()
    with pytest.raises(ValueError, match="train_noise"):
        estimator(train_noise=-0.1).fit(X, y)


@pytest.mark.parametrize("train_noise", [1.0, 1e300])
def test_noisy_copies_of_non_negative_bands_stay_non_negative(train_noise):
    # b + eta |b| z goes negative where z < -1 / eta: the copies are clipped at 0, as a
    # sensor's bands, so that the reflectance variant (which refuses negative bands) fits.
    X = _spectra(n_samples=150, seed=19)
    y = _classes(X, seed=19)
    model = NDClassifier(train_noise=train_noise, max_epochs=2, random_state=0).fit(X, y)
    assert model.variant_ == "reflectance"
    assert np.isfinite(model.predict_proba(X)).all()
    copy = _refinement.noisy_copy(X, 1, train_noise)
    assert copy.min() == 0.0 and (copy == 0).any()
