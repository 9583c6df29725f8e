"""Sample and class weights (sknd._data._weights and their use in fit)."""

import types

import numpy as np
import pytest
import sklearn
from sklearn.ensemble import AdaBoostClassifier
from sklearn.model_selection import cross_validate
from sklearn.utils import shuffle
from sklearn.utils.class_weight import compute_class_weight, compute_sample_weight

from sknd import NDClassifier, NDRegressor, NDTransformer
from sknd._data._parts import Part
from sknd._data._weights import fit_weights, merge_duplicates
from sknd._estimators._fit_data import _keep_in_training
from sknd._nd._screening import pair_scores

FAST = dict(max_epochs=20, random_state=0)
FULL_BATCH = dict(max_epochs=30, batch_size=1024, early_stopping=False, random_state=0)


def _bands(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.05, 0.5, size=(n, 5))
    y = (X[:, 3] > X[:, 2]).astype(int)
    return X, y


def _weighted_and_repeated(seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(0.05, 0.5, size=(40, 6))
    y = rng.randint(0, 3, size=40)
    weight = rng.randint(0, 4, size=40)
    X_repeated, y_repeated = X.repeat(weight, axis=0), y.repeat(weight)
    X_weighted, y_weighted, weight = shuffle(X, y, weight, random_state=0)
    return X, (X_weighted, y_weighted, weight), (X_repeated, y_repeated)


@pytest.mark.parametrize("Estimator", [NDClassifier, NDRegressor])
def test_integer_weights_train_as_repeated_samples(Estimator):
    X, (X_w, y_w, weight), (X_r, y_r) = _weighted_and_repeated()
    method = "predict_proba" if Estimator is NDClassifier else "predict"
    if Estimator is NDRegressor:
        y_w, y_r = y_w.astype(float), y_r.astype(float)
    weighted = getattr(Estimator(**FULL_BATCH).fit(X_w, y_w, sample_weight=weight), method)(X)
    repeated = getattr(Estimator(**FULL_BATCH).fit(X_r, y_r), method)(X)
    ignored = getattr(Estimator(**FULL_BATCH).fit(X_w, y_w), method)(X)
    # Equal exactly: duplicates merge into weighted rows (sknd._data._weights.merge_duplicates) ...
    np.testing.assert_array_equal(weighted, repeated)
    # ... while ignoring the weights gives another model.
    assert np.abs(ignored - repeated).max() > 1e-3


def test_unit_weights_are_the_unweighted_fit():
    X, y = _bands()
    expected = NDClassifier(**FAST).fit(X, y).predict_proba(X)
    got = NDClassifier(**FAST).fit(X, y, sample_weight=np.ones(len(X))).predict_proba(X)
    np.testing.assert_array_equal(got, expected)


def test_minibatch_weighted_fit_follows_the_weights():
    # Class 1 weighs nothing: a weighted fit never predicts it with confidence.
    X, y = _bands(300)
    weight = np.where(y == 1, 1e-3, 1.0)
    clf = NDClassifier(**FAST).fit(X, y, sample_weight=weight)
    assert (
        clf.predict_proba(X)[:, 1].mean()
        < NDClassifier(**FAST).fit(X, y).predict_proba(X)[:, 1].mean()
    )
    assert np.isfinite(clf.loss_curve_).all() and np.isfinite(clf.validation_scores_).all()


@pytest.mark.parametrize("Estimator", [NDClassifier, NDTransformer])
def test_balanced_class_weight_is_sample_weight(Estimator):
    X, y = _bands()
    y = np.where(np.arange(len(y)) < 90, 0, 1)  # imbalanced
    by_class = Estimator(class_weight="balanced", **FAST).fit(X, y)
    by_sample = Estimator(**FAST).fit(X, y, sample_weight=compute_sample_weight("balanced", y))
    np.testing.assert_array_equal(by_class.coef_a_, by_sample.coef_a_)
    weights = {0: 1.0, 1: 3.0}
    by_dict = Estimator(class_weight=weights, **FAST).fit(X, y, sample_weight=np.full(len(y), 2))
    by_product = Estimator(**FAST).fit(X, y, sample_weight=2 * np.where(y == 1, 3.0, 1.0))
    np.testing.assert_array_equal(by_dict.coef_a_, by_product.coef_a_)


@pytest.mark.parametrize("Estimator", [NDClassifier, NDTransformer])
def test_balanced_class_weight_counts_weighted_rows(Estimator):
    X, (X_weighted, y_weighted, weight), (X_repeated, y_repeated) = _weighted_and_repeated(1)
    # The class weights of the repeated rows (scikit-learn 1.7+ computes the same from
    # sample_weight; the declared floor, 1.6, has no sample_weight there).
    expected = compute_class_weight("balanced", classes=np.unique(y_repeated), y=y_repeated)
    np.testing.assert_allclose(
        fit_weights(weight, X_weighted, y_weighted, "balanced"),
        weight * expected[y_weighted],
    )
    weighted = Estimator(class_weight="balanced", **FULL_BATCH).fit(
        X_weighted, y_weighted, sample_weight=weight
    )
    repeated = Estimator(class_weight="balanced", **FULL_BATCH).fit(X_repeated, y_repeated)
    output = "predict_proba" if Estimator is NDClassifier else "transform"
    np.testing.assert_allclose(
        getattr(weighted, output)(X), getattr(repeated, output)(X), rtol=1e-5, atol=1e-6
    )


def test_class_weight_needs_class_labels():
    X, _ = _bands()
    with pytest.raises(ValueError, match="class_weight.*continuous"):
        NDTransformer(class_weight="balanced", **FAST).fit(X, X[:, 0] * 1.5)


@pytest.mark.parametrize(
    "weight, match",
    [
        (-np.ones(120), "sample_weight"),
        (np.r_[np.nan, np.ones(119)], "sample_weight contains NaN"),
        (np.r_[np.inf, np.ones(119)], "sample_weight contains infinity"),
        (np.ones(7), "sample_weight.shape"),
        (np.ones((120, 2)), "sample_weight"),
        (np.zeros(120), "zero"),
    ],
)
def test_bad_sample_weight_is_refused_and_leaves_the_model(weight, match):
    X, y = _bands()
    clf = NDClassifier(**FAST).fit(X, y)
    before = clf.coef_a_.copy()
    with pytest.raises(ValueError, match=match):
        clf.fit(X, y, sample_weight=weight)
    np.testing.assert_array_equal(clf.coef_a_, before)


def test_zero_weights_are_absent_rows():
    X, y = _bands()
    weight = np.where(np.arange(len(X)) % 3 == 0, 0.0, 1.0)
    kept = weight > 0
    for Estimator in [NDClassifier, NDRegressor]:
        target = y if Estimator is NDClassifier else X[:, 3] - X[:, 2]
        weighted = Estimator(**FAST).fit(X, target, sample_weight=weight)
        absent = Estimator(**FAST).fit(X[kept], target[kept])
        np.testing.assert_array_equal(weighted.predict(X), absent.predict(X))
    # One row of weight: a classifier sees one class, and says so.
    weight = np.zeros(len(X))
    weight[0] = 1.0
    with pytest.raises(ValueError, match="only one class"):
        NDClassifier(**FAST).fit(X, y, sample_weight=weight)


def test_duplicate_rows_merge_into_weighted_rows_in_any_order():
    """A fit is a function of the weighted rows: duplicates are one row of their count,
    the order of the rows does not matter, and a duplicated pixel never lands on both
    sides of the validation split."""
    X, y = _bands(60)
    repeats = np.arange(60) % 3 + 1
    X_r, y_r = X.repeat(repeats, axis=0), y.repeat(repeats)
    order = np.random.default_rng(1).permutation(len(X_r))
    repeated = NDClassifier(**FAST).fit(X_r[order], y_r[order])
    weighted = NDClassifier(**FAST).fit(X[::-1], y[::-1], sample_weight=repeats[::-1])
    np.testing.assert_array_equal(repeated.predict_proba(X), weighted.predict_proba(X))
    assert repeated.n_iter_ == weighted.n_iter_


def test_duplicates_with_conflicting_labels_stay_one_row_per_label():
    X = np.array([[0.1, 0.2], [0.1, 0.2], [0.1, 0.2], [0.3, 0.1]])
    merged_X, merged_y, weight, _ = merge_duplicates(X, np.array([0, 1, 0, 1]), None)
    assert sorted(zip(merged_y.tolist(), weight.tolist())) == [(0, 2.0), (1, 1.0), (1, 1.0)]
    assert len(merged_X) == 3
    assert merge_duplicates(X[2:], np.array([0, 1]), None)[2] is None  # no duplicates


def test_merged_rows_keep_every_class_in_training():
    """3 pixels x 50 copies, one class each, merge into 3 rows: the validation split
    holds none of them out (each is a whole class), and the fit predicts its pixels
    (fuzz4 repro_10; a plain split held out a class)."""
    pixels = np.random.default_rng(1).uniform(0.05, 0.6, (3, 4))
    params = dict(recipe="paper", depth=2, max_epochs=100, random_state=0)
    clf = NDClassifier(**params).fit(np.repeat(pixels, 50, axis=0), np.repeat([0, 1, 2], 50))
    np.testing.assert_array_equal(clf.predict(pixels), [0, 1, 2])
    weighted = NDClassifier(**params).fit(pixels, [0, 1, 2], sample_weight=[50, 50, 50])
    np.testing.assert_array_equal(weighted.predict_proba(pixels), clf.predict_proba(pixels))


@pytest.mark.parametrize("seed", range(5))
def test_split_moves_back_only_what_training_needs(seed):
    codes = np.array([0, 0, 0, 0, 1, 1, 2, 3])
    valid = np.random.default_rng(seed).permutation(8)[:3]
    train = np.setdiff1d(np.arange(8), valid)
    new_train, new_valid = _keep_in_training(codes, train, valid, True, None)
    assert set(codes[new_train]) == {0, 1, 2, 3}
    assert sorted(np.concatenate([new_train, new_valid])) == list(range(8))
    # Only rows of classes training lacked moved: the others stay held out.
    assert set(new_valid) == {row for row in valid if (codes[train] == codes[row]).any()}
    # A weighted regression trains on each column's smallest and largest target.
    targets = np.column_stack([np.arange(8.0), np.arange(8.0)[::-1] ** 2])
    new_train, new_valid = _keep_in_training(targets, train, valid, False, np.ones(8))
    assert {0, 7} <= set(new_train)
    assert set(new_valid) == set(valid) - {0, 7}
    # Unweighted, unmerged regressions keep the plain split.
    assert _keep_in_training(targets, train, valid, False, None) == (train, valid)


def test_split_of_rows_all_needed_in_training_validates_on_them():
    X = np.random.default_rng(2).uniform(0.05, 0.6, (3, 4))
    codes, weight = np.array([0, 1, 2]), np.array([50.0, 50.0, 50.0])
    task = types.SimpleNamespace(stratified=True)
    train, valid = NDClassifier()._validation_split(Part(X, codes, weight), task, None, None, 0)
    assert sorted(train.target) == [0, 1, 2]
    np.testing.assert_array_equal(valid.X, train.X)
    np.testing.assert_array_equal(valid.weight, train.weight)


def test_split_of_copies_of_a_few_pixels_trains_and_validates_on_all():
    # Four pixels, three classes: the one pixel held out could not score the classes, and
    # an epoch predicting it right may predict every training pixel wrong.
    X = np.random.default_rng(0).uniform(0.05, 0.6, (4, 5))
    codes, weight = np.array([0, 1, 2, 0]), np.full(4, 30.0)
    task = types.SimpleNamespace(stratified=True)
    classifier = NDClassifier(validation_fraction=0.2)
    train, valid = classifier._validation_split(Part(X, codes, weight), task, None, None, 0)
    assert sorted(train.target) == [0, 0, 1, 2]
    np.testing.assert_array_equal(valid.X, train.X)


def test_fit_on_copies_of_a_few_pixels_predicts_them():
    rng = np.random.default_rng(0)
    pixels, labels = rng.uniform(0.05, 0.6, (4, 5)), np.array([0, 1, 2, 0])
    X, y = np.repeat(pixels, 30, 0), np.repeat(labels, 30)
    clf = NDClassifier(depth=2, max_epochs=150, random_state=0, recipe="paper").fit(X, y)
    np.testing.assert_array_equal(clf.predict(pixels), labels)


def test_fit_weights_multiplies_and_keeps_the_input():
    X, y = _bands(6)
    y = np.array([0, 0, 0, 0, 1, 1])
    weight = np.arange(1.0, 7.0)
    got = fit_weights(weight, X, y, class_weight="balanced")
    # Class 0 weighs 10, class 1 weighs 11: balanced weights 21 / (2 * 10) and 21 / (2 * 11).
    np.testing.assert_allclose(got, weight * np.where(y == 0, 21 / 20, 21 / 22))
    np.testing.assert_array_equal(weight, np.arange(1.0, 7.0))
    assert fit_weights(None, X, y) is None
    assert fit_weights([1, 1, 1, 1, 1, 1], X, y) is None


def test_weighted_pair_scores_are_the_repeated_data_scores():
    rng = np.random.default_rng(0)
    X = rng.uniform(0.1, 1.0, size=(30, 4))
    pairs = np.array([[0, 1], [0, 2], [1, 3], [2, 3]])
    weight = rng.integers(0, 4, size=30)
    for y, classification in [(rng.integers(0, 3, 30), True), (rng.normal(size=(30, 2)), False)]:
        weighted = pair_scores(X, y, pairs, classification, sample_weight=weight)
        repeated = pair_scores(X.repeat(weight, 0), y.repeat(weight, 0), pairs, classification)
        np.testing.assert_allclose(weighted, repeated, rtol=1e-10)


def test_sample_weight_is_routed_by_metadata_routing():
    X, y = _bands()
    weight = np.where(y == 1, 2.0, 1.0)
    with sklearn.config_context(enable_metadata_routing=True):
        clf = NDClassifier(**FAST).set_fit_request(sample_weight=True)
        clf.set_score_request(sample_weight=False)
        result = cross_validate(clf, X, y, cv=2, params={"sample_weight": weight})
    assert len(result["test_score"]) == 2


def test_adaboost_accepts_sknd():
    X, y = _bands()
    boost = AdaBoostClassifier(NDClassifier(max_epochs=5, random_state=0), n_estimators=2)
    assert boost.fit(X, y).score(X, y) > 0.5


@pytest.mark.parametrize("bad", [-1.0, np.nan, np.inf, 1e300, "2"])
def test_class_weight_is_validated_like_sample_weight(bad):
    # A negative class weight was accepted (training maximized that class's loss) and NaN or
    # inf ended as "Training diverged ... lower the learning rate".
    X, y = _bands()
    y3 = np.digitize(X[:, 3] - X[:, 2], [-0.1, 0.1])
    for labels in (y, y3):
        with pytest.raises(ValueError, match=r"Invalid class_weight: \{0: .*\} \(class: weight\)"):
            NDClassifier(class_weight={0: bad, 1: 1.0, 2: 1.0}, **FAST).fit(X, labels)
    with pytest.raises(ValueError, match="Invalid class_weight"):
        NDClassifier(class_weight={0: bad, 1: 1.0}, **FAST).partial_fit(X, y, classes=[0, 1])


def test_huge_sample_weights_are_refused_by_name():
    # One weight of 1e300 overflowed the convex fits: "Input y contains infinity" (y is fine).
    X, y = _bands()
    weight = np.r_[1e300, np.ones(len(y) - 1)]
    with pytest.raises(ValueError, match=r"sample_weight reaches 1e\+300.*common factor"):
        NDRegressor(**FAST).fit(X, X[:, 3] / X[:, 2], sample_weight=weight)
    with pytest.raises(ValueError, match="sample_weight times class_weight reaches 1e\\+24"):
        fit_weights(np.full(len(y), 1e12), X, y, class_weight={0: 1e12, 1: 1.0})
