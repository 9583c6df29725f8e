"""The input contract (docs/contract.md), one test per finding of the fuzz campaign.

Bad input gets a ``ValueError`` or ``TypeError`` naming the argument and the fix,
valid input a correct result, and nothing is silently wrong.
"""

import numpy as np
import pytest

from sknd import NDClassifier, NDRegressor, NDTransformer

FAST = dict(max_epochs=3, batch_size=16, random_state=0)


def make_data(n_samples=60, n_bands=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.05, 0.5, (n_samples, n_bands))
    return X, (X[:, 3] > X[:, 2]).astype(int)


@pytest.fixture(scope="module")
def clf():
    X, y = make_data()
    return NDClassifier(**FAST).fit(X, y)


# ------------------------------------------------------------------ memory
@pytest.mark.parametrize("hidden_units", [10**9, 10**18])
def test_oversized_network_is_refused_before_allocating(hidden_units):
    X, y = make_data()
    model = NDClassifier(depth=3, hidden_units=hidden_units)
    with pytest.raises(ValueError, match=r"hidden_units.*GiB.*Lower hidden_units"):
        model.fit(X, y)
    assert not hasattr(model, "n_features_in_")


def test_oversized_batch_is_refused(monkeypatch):
    import sknd._training._memory

    monkeypatch.setattr(sknd._training._memory, "physical_memory", lambda: 1000)
    X, y = make_data()
    with pytest.raises(ValueError, match="GiB"):
        NDClassifier(**FAST).fit(X, y)


def test_the_recipe_tables_of_all_pairs_count_in_the_memory_estimate(monkeypatch):
    import sknd._training._memory

    # 100 bands, all 4,950 pairs, 2,000 rows: the recipe's convex fits hold ~240 MB of
    # float64 tables (rows x pairs), the network and its batches ~10 MB.
    monkeypatch.setattr(sknd._training._memory, "physical_memory", lambda: 64 * 2**20)
    rng = np.random.default_rng(0)
    X = rng.uniform(0.05, 0.5, (2000, 100))
    y = (X[:, 1] > X[:, 0]).astype(int)
    model = NDClassifier(pairs="all", max_epochs=1)
    with pytest.raises(ValueError, match=r"GiB.*4,950 band pairs"):
        model.fit(X, y)
    assert not hasattr(model, "n_features_in_")
    model.set_params(recipe="paper", early_stopping=False).fit(X, y)  # no tables: fits


# ------------------------------------------------------------------ set_params after fit
def test_set_params_after_fit_does_not_change_the_fitted_model():
    from sknd import raster

    X, y = make_data()
    model = NDTransformer(**FAST, bands=["B2", "B3", "B4", "B8"]).fit(X, y)
    before = model.transform(X)
    formulas = model.export_formulas()
    model.set_params(epsilon=np.nan, variant="signed", bands=None)
    np.testing.assert_array_equal(model.transform(X), before)
    assert model.export_formulas() == formulas
    with pytest.raises(ValueError, match="Negative values"):
        model.transform(-X)
    # Band matching by the names given at fit still applies: reversed bands are matched.
    image = X[:, ::-1].reshape(6, 10, 4)
    mapped = raster.transform(model, image, bands=["B8", "B4", "B3", "B2"])
    np.testing.assert_allclose(mapped.reshape(60, -1), before, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("new_sensor", ["landsat8", None])
def test_sensor_set_after_fit_changes_nothing_fitted(new_sensor):
    import warnings

    from sknd import inspection, raster
    from sknd.bands import BandMatchWarning

    X, y = make_data()
    model = NDTransformer(**FAST, bands=["B2", "B3", "B4", "B8"], sensor="sentinel2").fit(X, y)
    image = X[:, ::-1].reshape(6, 10, 4)
    landsat = ["SR_B5", "SR_B4", "SR_B3", "SR_B2"]  # the same bands, by common name

    def fitted_behaviour():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            mapped = raster.transform(model, image, bands=landsat)
        messages = [str(w.message) for w in caught if issubclass(w.category, BandMatchWarning)]
        table = inspection.index_table(model)
        return mapped, messages, model.export_formulas(), table, model.indices_

    before = fitted_behaviour()
    assert "from sentinel2 to landsat8" in before[1][0]
    model.set_params(sensor=new_sensor)
    after = fitted_behaviour()
    np.testing.assert_array_equal(after[0], before[0])
    assert after[1:3] == before[1:3]
    for table_after, table_before in zip(after[3:], before[3:]):
        assert table_after.equals(table_before)


# ------------------------------------------------------------------ masked arrays
def test_raster_treats_masked_pixels_as_nodata(clf):
    from sknd import raster

    X, _ = make_data()
    image = X.reshape(6, 10, 4)
    mask = np.zeros(image.shape, dtype=bool)
    mask[0, 0, 1] = True
    labels = raster.predict(clf, np.ma.masked_array(image, mask))
    assert np.isnan(labels[0, 0])
    np.testing.assert_array_equal(labels.ravel()[1:], clf.predict(X)[1:])
    # Integer bands with a mask too.
    counts = np.ma.masked_array((image * 1e4).astype(np.uint16), mask)
    assert np.isnan(raster.predict_proba(clf, counts)[0, 0]).all()


def test_estimators_refuse_masked_values(clf):
    X, _ = make_data()
    with pytest.raises(ValueError, match=r"masked array with 1 masked value.*Drop those rows"):
        clf.predict(np.ma.masked_array(X, np.eye(len(X), 4, dtype=bool) & (np.arange(4) == 0)))
    np.testing.assert_array_equal(clf.predict(np.ma.masked_array(X)), clf.predict(X))


# ------------------------------------------------------------------ kinds of values
@pytest.mark.parametrize("dtype", ["datetime64[ns]", "timedelta64[s]", complex])
def test_dates_and_complex_bands_are_refused(clf, dtype):
    from sknd import raster

    X, _ = make_data()
    values = (X * 1e4).astype(np.int64).astype(dtype)
    with pytest.raises(TypeError, match="real band values"):
        clf.predict(values)
    with pytest.raises(TypeError, match="real band values"):
        raster.predict(clf, values.reshape(6, 10, 4))


def test_raster_refuses_strings(clf):
    from sknd import raster

    with pytest.raises(TypeError, match="strings"):
        raster.predict(clf, np.full((2, 3, 4), "a"))


@pytest.mark.parametrize(
    "kwargs, error, pattern",
    [
        (dict(nodata="0"), TypeError, "nodata must be a number"),
        (dict(nodata=[0, 0]), ValueError, "nodata must be a single value"),
        (dict(fill_value=np.zeros(4)), ValueError, "fill_value must be a single value"),
        (dict(fill_value=1j), TypeError, "complex"),
        (dict(fill_value="x"), TypeError, "fill_value='x' is text"),
    ],
)
def test_raster_nodata_and_fill_value_types(clf, kwargs, error, pattern):
    from sknd import raster

    X, _ = make_data()
    with pytest.raises(error, match=pattern):
        raster.predict(clf, X.reshape(6, 10, 4), **kwargs)


def test_nan_fill_for_string_classes_stays_nan():
    from sknd import raster

    X, y = make_data()
    model = NDClassifier(**FAST).fit(X, np.array(["bare", "green"])[y])
    image = X.reshape(6, 10, 4).copy()
    image[0, 0, 0] = np.nan
    labels = raster.predict(model, image, fill_value=np.nan)
    assert isinstance(labels[0, 0], float) and np.isnan(labels[0, 0])
    assert set(labels.ravel()[1:]) <= {"bare", "green"}


def test_bytes_band_labels_are_names():
    from sknd import raster

    X, y = make_data()
    model = NDClassifier(**FAST, bands=["B2", "B3", "B4", "B8"]).fit(X, y)
    image = X[:, ::-1].reshape(6, 10, 4)
    labels = raster.predict(model, image, bands=[b"B8", b"B4", b"B3", b"B2"])
    np.testing.assert_array_equal(labels.ravel(), model.predict(X))


# ------------------------------------------------------------------ valid input accepted
def test_negative_strides_are_accepted(clf):
    X, y = make_data()
    np.testing.assert_array_equal(clf.predict(X[::-1]), clf.predict(X)[::-1])
    np.testing.assert_allclose(clf.predict_proba(np.flipud(X)), clf.predict_proba(X)[::-1])
    NDClassifier(**FAST, early_stopping=False).fit(X[::-1], y[::-1])
    NDTransformer(**FAST).fit(X, y).transform(X[:, ::-1])


def test_transformer_accepts_a_class_column(clf):
    X, y = make_data()
    model = NDTransformer(**FAST).fit(X, y[:, None])
    np.testing.assert_array_equal(model.transform(X), NDTransformer(**FAST).fit(X, y).transform(X))


# ------------------------------------------------------------------ y_val, threads, interrupts
@pytest.mark.parametrize("columns, val_columns", [(2, 1), (1, 2)])
def test_y_val_outputs_must_match_y(columns, val_columns):
    X, _ = make_data()
    Y = X[:, :2]
    y = Y[:, 0] if columns == 1 else Y
    y_val = Y[:20, 0] if val_columns == 1 else Y[:20]
    with pytest.raises(ValueError, match=r"y_val has \d output\(s\) per sample but y has"):
        NDRegressor(**FAST).fit(X, y, X_val=X[:20], y_val=y_val)


MIXED = [1, "a", 2] * 20


@pytest.mark.parametrize("Estimator", [NDClassifier, NDTransformer, NDRegressor])
@pytest.mark.parametrize("container", [list, lambda y: np.array(y, dtype=object)])
def test_mixed_number_and_string_labels_are_refused(Estimator, container):
    # A list [1, "a"] would silently become the strings ["1", "a"]; an object array
    # would fail in numpy with "'<' not supported between 'str' and 'int'".
    X, _ = make_data()
    with pytest.raises(ValueError, match=r"y mixes numbers and strings \(e.g. 1 and 'a'\)"):
        Estimator(**FAST).fit(X, container(MIXED))


@pytest.mark.parametrize(
    "y_val, pattern",
    [
        (np.array([0, "a"] * 10, dtype=object), "y_val mixes numbers and strings"),
        (np.array([0, 1, 5, 1] * 5), r"y_val contains labels not seen .*\[0, 1\]: \[5\]"),
        (np.array(["0", "1"] * 10), "y_val holds strings, the classes numbers"),
    ],
)
def test_y_val_label_problems_name_y_val(y_val, pattern):
    X, y = make_data()
    with pytest.raises(ValueError, match=pattern):
        NDClassifier(**FAST).fit(X, y, X_val=X[:20], y_val=y_val)


@pytest.mark.parametrize("value", [1e308, 1e200, -1e30])
@pytest.mark.parametrize("columns", [1, 2])
def test_y_val_far_off_the_scale_of_y_is_named(value, columns):
    # Was "Input contains infinity" (y_val not named) or a divergence blamed on lr.
    X, _ = make_data()
    y = X[:, :columns] if columns == 2 else X[:, 0]
    y_val = np.full(np.shape(y[:20]), value)
    with pytest.raises(ValueError, match="y_val has values far outside the range of y") as info:
        NDRegressor(**FAST).fit(X, y, X_val=X[:20], y_val=y_val)
    assert "lr" not in str(info.value)


def test_nan_in_y_val_is_named_y_val():
    X, _ = make_data()
    with pytest.raises(ValueError, match="Input y_val contains NaN"):
        NDRegressor(**FAST).fit(X, X[:, 0], X_val=X[:20], y_val=np.full(20, np.nan))


def test_run_experiments_refuses_mixed_labels():
    from sknd.experiments import run_experiments

    X, _ = make_data()
    with pytest.raises(ValueError, match="y mixes numbers and strings"):
        run_experiments(X, MIXED, n_splits=3, verbose=0)


# ------------------------------------------------------------------ fit's signature
def test_sample_weight_is_fits_third_argument_and_validation_data_a_keyword():
    X, y = make_data()
    weight = np.random.default_rng(0).uniform(0.5, 2, len(y))
    positional = NDClassifier(**FAST).fit(X, y, weight)
    keyword = NDClassifier(**FAST).fit(X, y, sample_weight=weight)
    np.testing.assert_array_equal(positional.coef_a_, keyword.coef_a_)
    # The old call fit(X, y, X_val, y_val), and fit(X, y, X_val): a TypeError saying how.
    model = NDClassifier(**FAST)
    for args in [(X, y, X[:20], y[:20]), (X, y, X[:20])]:
        with pytest.raises(TypeError, match=r"by keyword only.*fit\(X, y, X_val=X_val"):
            model.fit(*args)
        assert not hasattr(model, "n_features_in_")
    model.fit(X, y, X_val=X[:20], y_val=y[:20])


def test_concurrent_fits_of_one_object_are_refused():
    import threading

    X, y = make_data()
    model = NDClassifier(**FAST)
    started, release = threading.Event(), threading.Event()
    errors = []

    def slow_fit():
        original = model._fit

        def blocking(*args, **kwargs):
            started.set()
            release.wait(30)
            return original(*args, **kwargs)

        model._fit = blocking
        try:
            NDClassifier.fit(model, X, y)
        finally:
            del model._fit

    thread = threading.Thread(target=slow_fit)
    thread.start()
    started.wait(30)
    try:
        with pytest.raises(RuntimeError, match="already being fitted in another thread"):
            model.fit(X, y)
    except BaseException as exc:  # pragma: no cover - report, but let the thread finish
        errors.append(exc)
    release.set()
    thread.join(60)
    assert not errors
    assert model.n_features_in_ == 4
    model.fit(X, y)  # free again


def test_interrupt_in_fit_context_exit_restores_the_previous_model(monkeypatch):
    import sklearn.base

    X, y = make_data()
    model = NDClassifier(**FAST).fit(X, y)
    before = model.predict_proba(X)
    original = sklearn.base.config_context

    created = []

    class Interrupting:
        """The outermost config_context (fit's own) raises as it exits, after fit."""

        def __init__(self, *args, **kwargs):
            self.context = original(*args, **kwargs)
            self.outermost = not created
            created.append(self)

        def __enter__(self):
            return self.context.__enter__()

        def __exit__(self, *exc):
            self.context.__exit__(*exc)
            if self.outermost:
                raise KeyboardInterrupt

    monkeypatch.setattr(sklearn.base, "config_context", Interrupting)
    with pytest.raises(KeyboardInterrupt):
        model.fit(X * 2, 1 - y)
    monkeypatch.undo()
    np.testing.assert_array_equal(model.predict_proba(X), before)


# ------------------------------------------------------------------ experiments API and CLI
@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        (dict(estimator_params={"hidden_units": 0}), "hidden_units"),
        (dict(estimator_params={"max_epochs": 0}), "max_epochs"),
        (dict(models=[]), "models is empty"),
        (dict(depths=[]), "depths must be"),
        (dict(noise_levels=[np.nan]), "noise_levels must be"),
        (dict(n_jobs=0), "n_jobs must be"),
    ],
)
def test_run_experiments_refuses_bad_arguments_before_training(kwargs, pattern):
    from sknd.experiments import run_experiments

    X, y = make_data()
    with pytest.raises(ValueError, match=pattern):
        run_experiments(X, y, n_splits=3, verbose=0, **kwargs)


@pytest.fixture(scope="module")
def csv_files(tmp_path_factory):
    import pandas as pd

    folder = tmp_path_factory.mktemp("cli")
    X, y = make_data()
    frame = pd.DataFrame(X, columns=["B2", "B3", "B4", "B8"])
    frame["label"] = np.where(y == 1, "green", "bare")
    frame.to_csv(folder / "data.csv", index=False)
    frame.assign(B2=np.where(np.arange(len(X)) == 0, np.inf, X[:, 0])).to_csv(
        folder / "inf.csv", index=False
    )
    frame.assign(label="bare").to_csv(folder / "one.csv", index=False)
    (folder / "file").write_text("")
    return folder


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--folds", "1"], "--folds must be at least 2"),
        (["--depths", "1"], "--depths must be"),
        (["--depths", ""], "--depths must be"),
        (["--max-epochs", "0"], "--max-epochs"),
        (["--hidden-units", "0"], "--hidden-units"),
        (["--patience", "0"], "--patience"),
        (["--n-jobs", "0"], "--n-jobs must be"),
        (["--models", ""], "--models is empty"),
        (["--noise-levels", "nan"], "--noise-levels must be"),
        (["--n-estimators", "0"], "--n-estimators must be"),
        (["--dataset", "inf.csv"], "missing or infinite"),
        (["--dataset", "one.csv"], "single class"),
        (["--output", "file"], "is a file"),
    ],
)
def test_cli_usage_errors_exit_2_without_traceback(csv_files, capsys, extra, message):
    from sknd.experiments._cli import main

    extra = [str(csv_files / a) if a in ("inf.csv", "one.csv", "file") else a for a in extra]
    argv = ["--dataset", str(csv_files / "data.csv"), "--quick", "--quiet", "--no-figures"]
    argv += ["--output", str(csv_files / "out"), *extra]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


# ------------------------------------------------------------------ messages and edge cases
@pytest.mark.parametrize(
    "params, pattern",
    [
        (dict(lr=1e39), "'lr' parameter"),
        (dict(weight_decay=1e39), "'weight_decay' parameter"),
        (dict(batch_size=True), "batch_size must be a positive integer"),
    ],
)
def test_parameters_beyond_float32_or_of_the_wrong_type(params, pattern):
    X, y = make_data()
    with pytest.raises(ValueError, match=pattern):
        NDClassifier(**{**FAST, **params}).fit(X, y)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_empty_scenes(clf, n_jobs):
    from sklearn.linear_model import LogisticRegression

    from sknd import raster

    X, y = make_data()
    other = LogisticRegression().fit(X, y)
    for model in (clf, other):
        assert raster.predict(model, np.zeros((0, 5, 4)), n_jobs=n_jobs).shape == (0, 5)


def test_inspection_of_a_fitted_model_without_indices():
    from sklearn.linear_model import LogisticRegression

    from sknd import inspection

    X, y = make_data()
    with pytest.raises(TypeError, match="fitted but has no learned normalized differences"):
        inspection.index_table(LogisticRegression().fit(X, y))


def test_ragged_rows_are_named_as_such(clf):
    with pytest.raises(ValueError, match="ragged sequence: its rows have 2, 4 values"):
        clf.predict([[0.1, 0.2, 0.3, 0.4], [0.1, 0.2]])


def test_run_experiments_estimates_the_memory_of_all_pair_peers(monkeypatch):
    import sknd.experiments._checks
    from sknd.experiments._checks import check_run_arguments

    monkeypatch.setattr(sknd.experiments._checks, "_physical_memory", lambda: 24 * 2**30)
    # 1,000 samples x 2,000 bands (--quick's sample cap): ~64 GB of classic indices.
    X = np.random.default_rng(0).uniform(0.05, 0.5, (1000, 2000))
    y = np.arange(1000) % 2
    common = dict(task="classification", depths=[2], noise_levels=[0.0], estimator_params={})
    with pytest.raises(ValueError, match=r"would need about 5\d\.\d GiB.*out of models"):
        check_run_arguments(X, y, models=None, n_jobs=1, **common)
    check_run_arguments(X, y, models=["nd", "mlp", "logreg_bands"], n_jobs=1, **common)
    # The ND layer with every pair: its outputs on all training rows at the end of fit.
    common["estimator_params"] = {"pairs": "all"}
    with pytest.raises(ValueError, match=r"^nd would need .* out of models, pairs auto for"):
        check_run_arguments(X, y, models=["nd", "mlp"], n_jobs=1, **common)


@pytest.mark.parametrize(
    "bad, params, pattern",
    [
        (-0.1, {"variant": "reflectance"}, r"Negative values .*rows 7; .* of X,"),
        (1e16, {}, r"Input X contains values too large .*rows 7;"),
    ],
)
def test_run_experiments_checks_bands_on_the_data_the_user_passed(bad, params, pattern):
    # Found in a fold's validation part, these were blamed on X_val, with row positions
    # within that part.
    from sknd.experiments import run_experiments

    X, y = make_data()
    X[7, 0] = bad
    with pytest.raises(ValueError, match=pattern) as info:
        run_experiments(
            X, y, n_splits=3, depths=[2], models=["nd"], verbose=0,
            estimator_params={"max_epochs": 2, **params},
        )  # fmt: skip
    assert "X_val" not in str(info.value)


def test_run_experiments_names_the_fold_when_a_fit_fails(monkeypatch):
    from sknd.experiments import run_experiments

    def refuse(self, X, y, X_val=None, y_val=None, **kwargs):
        raise ValueError("X_val and y_val are wrong")

    monkeypatch.setattr(NDClassifier, "fit", refuse)
    X, y = make_data()
    with pytest.raises(ValueError) as info:
        run_experiments(X, y, n_splits=3, depths=[2], models=["nd"], verbose=0)
    assert str(info.value) == (
        "Fitting nd at depth 2 on fold 0 failed: the validation part of X and the validation "
        "part of y are wrong"
    )
