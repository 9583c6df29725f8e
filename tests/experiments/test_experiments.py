import importlib.util
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from sknd.datasets import load_forest_type
from sknd.experiments import (
    BestPairNDClassifier,
    ClassicNDFeatures,
    ExperimentResults,
    accuracy_table,
    add_additive_noise,
    add_multiplicative_noise,
    illumination_check,
    main,
    noise_drop_table,
    noise_robustness,
    paired_ttest,
    paper_splits,
    parameter_table,
    write_report,
)

# Tiny training budget for the real estimators: the tests check plumbing, not accuracy.
FAST = ["--max-epochs", "3", "--patience", "2", "--noise-repeats", "1", "--n-estimators", "5"]


# --- splits ------------------------------------------------------------------------------


@pytest.mark.parametrize("n_splits", [10, 3])
@pytest.mark.parametrize("seed", [0, 1])
def test_paper_splits_proportions_within_one_sample_per_class(n_splits, seed):
    counts = [159, 86, 83, 195, 17, 11] if n_splits == 10 else [40, 7, 23]
    y = np.repeat(np.arange(len(counts)), counts)
    splits = paper_splits(y, n_splits=n_splits, random_state=seed)
    test_share = 1 / n_splits
    shares = {
        "train": 1 - test_share - 2 / 9 * (1 - test_share),
        "val": 2 / 9 * (1 - test_share),
        "test": test_share,
    }
    if n_splits == 10:
        assert np.allclose([shares["train"], shares["val"], shares["test"]], [0.7, 0.2, 0.1])
    assert len(splits) == n_splits
    for train, val, test in splits:
        assert len(np.intersect1d(train, val)) == len(np.intersect1d(train, test)) == 0
        assert len(np.intersect1d(val, test)) == 0
        assert len(train) + len(val) + len(test) == len(y)
        for c, n_c in enumerate(counts):
            for part, name in ((train, "train"), (val, "val"), (test, "test")):
                assert abs(np.count_nonzero(y[part] == c) - shares[name] * n_c) <= 1
    # Every sample is tested exactly once.
    np.testing.assert_array_equal(
        np.sort(np.concatenate([s[2] for s in splits])), np.arange(len(y))
    )


def test_paper_splits_reproducible():
    y = np.repeat([0, 1, 2], [30, 40, 50])
    a, b = paper_splits(y, random_state=3), paper_splits(y, random_state=3)
    for part_a, part_b in zip(a, b):
        for u, v in zip(part_a, part_b):
            np.testing.assert_array_equal(u, v)
    c = paper_splits(y, random_state=4)
    assert not np.array_equal(a[0][2], c[0][2])


# --- statistics --------------------------------------------------------------------------


def _synthetic_results(n_folds=10, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for model, base, params in (("nd", 0.95, 136), ("mlp", 0.94, 541), ("attnd", 0.93, 631)):
        for depth in (2, 3):
            for fold in range(n_folds):
                clean = base + rng.normal(0, 0.01)
                for noise in (0.0, 0.05, 0.1):
                    rows.append(
                        {
                            "model": model,
                            "depth": depth,
                            "fold": fold,
                            "noise": noise,
                            "accuracy": clean - noise * rng.uniform(0, 0.5),
                            "n_parameters": params * (depth - 1),
                        }
                    )
    for fold in range(n_folds):
        for noise in (0.0, 0.05, 0.1):
            rows.append(
                {
                    "model": "logreg_bands",
                    "depth": pd.NA,
                    "fold": fold,
                    "noise": noise,
                    "accuracy": 0.9 - noise,
                    "n_parameters": 40,
                }
            )
    results = pd.DataFrame(rows)
    results["depth"] = results["depth"].astype("Int64")
    return results


def test_plain_paired_ttest_matches_scipy():
    results = _synthetic_results()
    tests = paired_ttest(results, "nd", "mlp", correction=None)
    assert tests["depth"].tolist() == [2, 3]
    for depth, p_value, statistic in tests[["depth", "p_value", "statistic"]].itertuples(
        index=False
    ):
        clean = results[(results["noise"] == 0) & (results["depth"] == depth)]
        a = clean[clean["model"] == "nd"].sort_values("fold")["accuracy"]
        b = clean[clean["model"] == "mlp"].sort_values("fold")["accuracy"]
        expected = stats.ttest_rel(a, b)
        assert p_value == pytest.approx(expected.pvalue, rel=1e-12)
        assert statistic == pytest.approx(expected.statistic, rel=1e-12)


def test_paired_ttest_pairs_by_fold_not_by_row_order():
    results = _synthetic_results()
    shuffled = results.sample(frac=1, random_state=0)
    pd.testing.assert_frame_equal(paired_ttest(results), paired_ttest(shuffled))


def test_summary_tables():
    results = _synthetic_results()
    acc = accuracy_table(results)
    nd2 = results[(results.model == "nd") & (results.depth == 2) & (results.noise == 0)]
    row = acc[(acc.model == "nd") & (acc.depth == 2)].iloc[0]
    assert row["mean"] == pytest.approx(nd2.accuracy.mean())
    assert row["std"] == pytest.approx(nd2.accuracy.std(ddof=1))
    params = parameter_table(results)
    row = params[(params.model == "nd") & (params.depth == 2)].iloc[0]
    assert row["efficiency"] == pytest.approx(nd2.accuracy.mean() * 100 / 136 * 100)
    drops = noise_drop_table(results)
    assert drops.loc[drops.model == "logreg_bands", "drop"].iloc[0] == pytest.approx(10.0)


def test_write_report_from_synthetic_results(tmp_path):
    results = _synthetic_results()
    experiment = ExperimentResults(
        results=results,
        histories=pd.DataFrame(),
        coefficients=pd.DataFrame(),
        illumination=pd.DataFrame(),
        settings={"dataset": "synthetic", "n_splits": 10},
    )
    report = write_report(experiment, tmp_path, figures=False).read_text()
    for heading in ("Table 1", "Table 2", "Table 3"):
        assert heading in report
    p_value = paired_ttest(results).set_index("depth")["p_value"][2]
    assert f"{p_value:.3g}" in report
    written = pd.read_csv(tmp_path / "results.csv")
    assert len(written) == len(results)
    assert written.loc[written.model == "logreg_bands", "depth"].isna().all()


def _illumination(agreements):
    """Illumination rows: ``{(model, depth): agreement}`` at k = 0.5 and 1, two folds."""
    return pd.DataFrame(
        [
            {"model": m, "depth": d, "fold": f, "factor": k, "accuracy": 0.9,
             "agreement": 1.0 if k == 1 else a}
            for (m, d), a in agreements.items()
            for f in (0, 1)
            for k in (0.5, 1.0)
        ]
    )  # fmt: skip


@pytest.mark.parametrize("band_wins", [True, False])
def test_report_says_what_invariance_costs(tmp_path, band_wins):
    results = _synthetic_results()  # nd ~0.95 > mlp ~0.94 > attnd > logreg_bands 0.90
    invariant = {("nd", 2): 1.0, ("nd", 3): 1.0, ("attnd", 2): 1.0, ("attnd", 3): 1.0}
    moved = {("mlp", 2): 0.4, ("mlp", 3): 0.5, ("logreg_bands", np.nan): 0.3}
    if band_wins:  # the MLP reads brightness and beats ND by 3 points in every fold
        results.loc[results.model == "mlp", "accuracy"] += 0.03
    experiment = ExperimentResults(
        results=results,
        histories=pd.DataFrame(),
        coefficients=pd.DataFrame(),
        illumination=_illumination({**invariant, **moved}),
        settings={"dataset": "synthetic", "n_splits": 10},
    )
    report = write_report(experiment, tmp_path, figures=False).read_text()
    line = next(s for s in report.splitlines() if s.startswith("**What invariance costs here"))
    acc = accuracy_table(results).set_index(["model", "depth"])["mean"]
    best_nd = max(acc["nd", 2], acc["nd", 3])
    best_mlp = max(acc["mlp", 2], acc["mlp", 3])
    assert f"scores {100 * best_nd:.2f} %" in line
    assert f"MLP at depth {2 if acc['mlp', 2] > acc['mlp', 3] else 3}" in line
    assert f"({100 * (best_mlp - best_nd):+.2f} points)" in line
    assert ("`passthrough=True`" in line) == band_wins
    assert ("Invariance costs nothing" in line) != band_wins


# --- noise and illumination ---------------------------------------------------------------


def test_add_multiplicative_noise_scales_with_magnitude():
    X = np.full((20000, 2), [10.0, -200.0])
    noisy = add_multiplicative_noise(X, 0.05, random_state=0)
    relative = (noisy - X) / np.abs(X)
    np.testing.assert_allclose(relative.std(axis=0), 0.05, rtol=0.05)
    frame = pd.DataFrame(X[:5], columns=["red", "nir"])
    assert list(add_multiplicative_noise(frame, 0.1).columns) == ["red", "nir"]


def test_add_additive_noise_has_a_fixed_size_and_clips_non_negative_bands():
    X = np.full((20000, 2), [1.0, 100.0])
    noisy = add_additive_noise(X, 0.1, scale=[50.0, 50.0], random_state=0)
    # The same absolute noise on the dark and the bright band (multiplicative noise would
    # give the dark one 100 times less), clipped at 0 where it would turn a band negative.
    assert noisy.min() == 0.0 and (noisy[:, 0] == 0.0).mean() > 0.4
    np.testing.assert_allclose((noisy[:, 1] - X[:, 1]).std(), 5.0, rtol=0.05)
    # Signed inputs are not clipped; scale=None uses each column's standard deviation.
    signed = np.random.default_rng(0).normal(0.0, [1.0, 10.0], size=(20000, 2))
    perturbed = add_additive_noise(signed, 0.5, random_state=0)
    np.testing.assert_allclose((perturbed - signed).std(axis=0), [0.5, 5.0], rtol=0.05)
    with pytest.raises(ValueError, match="one non-negative value per band"):
        add_additive_noise(X, 0.1, scale=[1.0])


def test_noise_robustness_additive_uses_the_given_scale():
    X, y = load_forest_type(return_X_y=True)
    clf = make_pipeline(ClassicNDFeatures(), LogisticRegression(max_iter=500)).fit(X, y)
    common = dict(levels=[0.0, 0.1], n_repeats=2, random_state=0, kind="additive")
    small = noise_robustness(clf, X, y, scale=np.full(X.shape[1], 1e-9), **common)
    large = noise_robustness(clf, X, y, scale=X.std(axis=0), **common)
    clean = clf.score(X, y)
    assert np.allclose(small["accuracy"], clean)  # no noise to speak of
    assert large.loc[large.noise == 0.1, "accuracy"].mean() < clean
    default = noise_robustness(clf, X, y, **common)
    pd.testing.assert_frame_equal(default, large)  # scale=None: X's standard deviations


def test_noise_robustness_levels_and_seeding():
    X, y = load_forest_type(return_X_y=True)
    clf = make_pipeline(ClassicNDFeatures(), LogisticRegression(max_iter=500)).fit(X, y)
    scores = noise_robustness(clf, X, y, levels=[0.0, 0.1], n_repeats=3, random_state=0)
    assert scores.shape == (6, 3)
    assert np.allclose(scores.loc[scores.noise == 0, "accuracy"], clf.score(X, y))
    again = noise_robustness(clf, X, y, levels=[0.0, 0.1], n_repeats=3, random_state=0)
    pd.testing.assert_frame_equal(scores, again)


def test_illumination_nd_invariant_mlp_not():
    from sknd import NDClassifier

    X, y = load_forest_type(return_X_y=True, as_frame=True)
    kwargs = {"depth": 2, "max_epochs": 5, "random_state": 0}
    nd = NDClassifier(architecture="nd", **kwargs).fit(X, y)
    mlp = NDClassifier(architecture="mlp", **kwargs).fit(X, y)
    factors = [0.25, 1.0, 4.0]
    nd_check = illumination_check(nd, X, y, factors=factors)
    mlp_check = illumination_check(mlp, X, y, factors=factors)
    # The ND network sees the bands only through ratios: identical predictions.
    assert nd_check["agreement"].min() == 1.0
    # A ReLU network on raw bands is only invariant up to its biases.
    assert mlp_check["agreement"].min() < 0.99


# --- peers --------------------------------------------------------------------------------


def test_classic_nd_features_and_best_pair():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.uniform(1, 10, size=(400, 4)), columns=["a", "b", "c", "d"])
    y = (X["d"] > 1.3 * X["b"]).astype(int).to_numpy()
    features = ClassicNDFeatures().fit(X)
    assert features.get_feature_names_out()[0] == "nd_a_b"
    values = features.transform(X)
    np.testing.assert_allclose(values[:, 0], (X.a - X.b) / (X.a + X.b + 1e-6))
    best = BestPairNDClassifier().fit(X.iloc[:300], y[:300], X_val=X.iloc[300:], y_val=y[300:])
    assert best.pair_names_ == ("b", "d")
    assert best.score(X, y) > 0.95


# --- end to end: the command line with the real estimators --------------------------------
# One --quick run (every model, 3 folds, 2 depths) shared by the tests below: behind the slow
# marker (`make test-all`, CI).


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """`--quick` on a 120-row slice of forest_type written as a user's CSV."""
    root = tmp_path_factory.mktemp("quick")
    bunch = load_forest_type(as_frame=True)
    keep = np.concatenate([np.flatnonzero(bunch.target == c)[:30] for c in range(4)])
    frame = bunch.data.iloc[keep].copy()
    codes = bunch.target_codes[bunch.target[keep]].astype(str)
    frame.insert(0, "cover", np.char.add(codes, " "))  # a trailing space, as in the source
    frame["site"] = "plot-7"  # non-numeric: must be ignored
    csv = root / "slice.csv"
    frame.to_csv(csv, index=False)
    output = root / "out"
    with warnings.catch_warnings():
        if importlib.util.find_spec("matplotlib") is None:  # an sdist without the plot extra
            warnings.filterwarnings("ignore", "matplotlib is not installed", UserWarning)
        status = main(
            ["--dataset", str(csv), "--target", "cover", "--quick", "--output", str(output),
             "--quiet", *FAST]
        )  # fmt: skip
    assert status == 0
    return output


@pytest.mark.slow
def test_quick_results_schema(quick_run):
    results = pd.read_csv(quick_run / "results.csv")
    for column in ("model", "depth", "fold", "noise", "accuracy", "n_parameters"):
        assert column in results.columns
    assert set(results["model"]) == {
        "nd",
        "mlp",
        "attnd",
        "nd_sknd",
        "nd_sknd_passthrough",
        "sklearn_mlp",
        "logreg_bands",
        "logreg_nd",
        "best_nd_pair",
        "random_forest",
    }
    assert sorted(results["fold"].unique()) == [0, 1, 2]
    assert np.allclose(sorted(results["noise"].unique()), [0, 0.02, 0.04, 0.06, 0.08, 0.1])
    # Both noise models by default, on the same draws: the clean scores agree.
    assert list(results["noise_kind"].unique()) == ["multiplicative", "additive"]
    clean = results[results["noise"] == 0].pivot_table(
        "accuracy", ["model", "depth", "fold"], "noise_kind", dropna=False
    )
    np.testing.assert_array_equal(clean["multiplicative"], clean["additive"])
    networks = ["nd", "mlp", "attnd", "nd_sknd", "nd_sknd_passthrough"]
    with_depth = results["model"].isin([*networks, "sklearn_mlp"])
    assert set(results.loc[with_depth, "depth"]) == {2, 3}
    assert results.loc[~with_depth, "depth"].isna().all()
    # One row per (model, depth, fold, noise kind, noise level).
    keys = results[["model", "depth", "fold", "noise_kind", "noise"]].astype(str)
    assert not keys.duplicated().any()
    assert len(results) == (6 * 2 + 4) * 3 * 6 * 2
    assert results["accuracy"].between(0, 1).all()
    assert (results["n_parameters"] > 0).all()
    assert (results["n_train"] + results["n_val"] + results["n_test"] == 120).all()


@pytest.mark.slow
def test_learning_gain_is_recorded_for_the_default_recipe_only(quick_run):
    results = pd.read_csv(quick_run / "results.csv")
    clean = results[results["noise"] == 0]
    sknd = clean["model"].isin(["nd_sknd", "nd_sknd_passthrough"])
    default = clean.loc[sknd & clean["depth"].notna(), "learning_gain"]
    assert set(clean.loc[sknd, "depth"]) == {2, 3}  # deeper networks too
    assert default.notna().all() and (default >= -1e-6).all()
    # The paper's recipe and the peers have none.
    assert clean.loc[~sknd, "learning_gain"].isna().all()
    assert "learning_gain_ (pp)" in (quick_run / "report.md").read_text()


@pytest.mark.slow
def test_quick_report_and_figures(quick_run):
    pytest.importorskip("matplotlib")
    report = (quick_run / "report.md").read_text()
    for text in (
        "Table 1",
        "Table 2",
        "Table 3",
        "p (ND vs MLP, corrected)",
        "Illumination",
        "slice",
    ):
        assert text in report
    for name in (
        "accuracy_by_depth",
        "parameters",
        "efficiency",
        "noise",
        "noise_additive",
        "illumination",
        "training_depth2",
        "training_depth3",
        "coefficients_nd_sknd_depth2",
        "coefficients_nd_sknd_depth3",
        "coefficients_nd_depth2",
        "coefficients_nd_depth3",
    ):
        assert (quick_run / f"{name}.png").stat().st_size > 0
        assert f"({name}.png)" in report
    # The coefficient figures say whose indices they show.
    assert "Learned indices of ND (sknd default) (sknd's default recipe) at depth 2" in report
    assert "Learned indices of ND (the paper's recipe) at depth 3" in report
    histories = pd.read_csv(quick_run / "histories.csv")
    assert {"epoch", "train_loss", "valid_loss", "valid_score"} <= set(histories.columns)


@pytest.mark.slow
def test_quick_report_noise_and_invariance(quick_run):
    report = (quick_run / "report.md").read_text()
    # The paper's noise first, additive second; the peers show both drops.
    paper = report.index("% multiplicative noise (the paper's)")
    assert paper < report.index("## Table 3b. accuracy (%) drop (percentage points) from 0 to 10 %")
    assert "| Multiplicative drop (pp) | Additive drop (pp) |" in report
    # One line says what invariance costs on these data.
    line = next(s for s in report.splitlines() if s.startswith("**What invariance costs here"))
    assert re.search(r"predictions no change of illumination moved, .+, scores \d+\.\d\d %", line)


@pytest.mark.slow
def test_quick_coefficients_are_the_estimators_indices(quick_run):
    # coefficients.csv names its columns as indices_ does, with the importance.
    coefficients = pd.read_csv(quick_run / "coefficients.csv", keep_default_na=False)
    assert list(coefficients.columns) == [
        "model", "depth", "fold", "band_i", "band_j", "a", "c", "k", "importance", "known_index",
    ]  # fmt: skip
    assert set(coefficients["model"]) == {"nd", "attnd", "nd_sknd", "nd_sknd_passthrough"}
    assert len(coefficients.query("model == 'nd' and depth == 2 and fold == 0")) == 36
    k = np.logaddexp(0, coefficients["a"]) / np.logaddexp(0, coefficients["c"])
    np.testing.assert_allclose(coefficients["k"], k, rtol=1e-6)
    assert (coefficients["importance"] >= 0).all()


def test_cli_usage_errors(tmp_path, capsys):
    csv = tmp_path / "samples.csv"
    pd.DataFrame({"red": [1.0, 2.0], "nir": [3.0, 4.0], "crop": ["a", "b"]}).to_csv(
        csv, index=False
    )
    with pytest.raises(SystemExit) as exc:
        main(["--dataset", str(csv), "--target", "cover"])
    assert exc.value.code == 2
    assert "no column 'cover'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--dataset", str(tmp_path / "missing.csv")])
    assert "existing CSV file" in capsys.readouterr().err


def test_peers_only_run_gives_empty_histories_and_coefficients_with_columns():
    from sknd.experiments import run_experiments
    from sknd.experiments._protocol import COEFFICIENT_COLUMNS, HISTORY_COLUMNS

    X, y = load_forest_type(return_X_y=True, as_frame=True)
    results = run_experiments(
        X, y, depths=(2,), n_splits=3, models=("logreg_bands",), noise_levels=(0.0,),
        noise_repeats=1, noise_kind="multiplicative", verbose=0,
    )  # fmt: skip
    assert len(results.results) == 3
    assert results.histories.empty and list(results.histories.columns) == HISTORY_COLUMNS
    assert results.coefficients.empty
    assert list(results.coefficients.columns) == COEFFICIENT_COLUMNS


# --- corrected statistics ------------------------------------------------------------------


def test_corrected_ttest_is_nadeau_bengio():
    results = _synthetic_results()
    results["n_train"], results["n_val"], results["n_test"] = 70, 20, 10
    tests = paired_ttest(results, "nd", "mlp").set_index("depth")
    plain = paired_ttest(results, "nd", "mlp", correction=None).set_index("depth")
    clean = results[(results["noise"] == 0) & (results["depth"] == 2)]
    d = (
        clean[clean["model"] == "nd"].sort_values("fold")["accuracy"].to_numpy()
        - clean[clean["model"] == "mlp"].sort_values("fold")["accuracy"].to_numpy()
    )
    k = len(d)
    se = np.sqrt((1 / k + 10 / 90) * d.var(ddof=1))
    assert tests.loc[2, "statistic"] == pytest.approx(d.mean() / se)
    assert tests.loc[2, "p_value"] == pytest.approx(2 * stats.t.sf(abs(d.mean() / se), k - 1))
    half = stats.t.ppf(0.975, k - 1) * se
    assert tests.loc[2, "ci_low"] == pytest.approx(d.mean() - half)
    assert tests.loc[2, "ci_high"] == pytest.approx(d.mean() + half)
    # The correction can only make the test more conservative.
    assert (tests["p_value"] >= plain["p_value"]).all()
    with pytest.raises(ValueError, match="correction"):
        paired_ttest(results, correction="bonferroni")


def test_paired_ttest_compares_each_depth_with_a_peer_without_depth():
    results = _synthetic_results()
    tests = paired_ttest(results, "nd", "logreg_bands")
    assert tests["depth"].tolist() == [2, 3]
    assert np.allclose(tests["mean_b"], 0.9)
    assert (tests["difference"] > 0).all()


# --- splits for groups, regression and spatial blocks --------------------------------------


@pytest.mark.parametrize("n_groups", [30, 5])
@pytest.mark.parametrize("task", ["classification", "regression"])
def test_experiment_splits_never_split_a_group(task, n_groups):
    from sknd.experiments import experiment_splits

    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(n_groups), 240 // n_groups)
    y = rng.integers(0, 3, len(groups)) if task == "classification" else rng.normal(size=240)
    splits = experiment_splits(y, groups, n_splits=5, task=task, random_state=0)
    assert len(splits) == 5
    tested = np.concatenate([s[2] for s in splits])
    np.testing.assert_array_equal(np.sort(tested), np.arange(len(y)))
    for train, validation, test in splits:
        parts = [set(groups[part]) for part in (train, validation, test)]
        assert parts[0].isdisjoint(parts[1]) and parts[0].isdisjoint(parts[2])
        assert parts[1].isdisjoint(parts[2])
        assert len(train) + len(validation) + len(test) == len(y)
        assert len(validation) > 0


def test_experiment_splits_regression_without_groups_keeps_the_paper_shares():
    from sknd.experiments import experiment_splits

    splits = experiment_splits(np.arange(100.0), n_splits=10, task="regression", random_state=0)
    for train, validation, test in splits:
        assert (len(train), len(validation), len(test)) == (70, 20, 10)


def test_spatial_blocks_and_check_groups_messages():
    from sknd.experiments import check_groups, spatial_blocks

    coords = np.array([[0.0, 0.0], [9.9, 9.9], [10.0, 0.0], [25.0, 31.0]])
    assert spatial_blocks(coords, 10).tolist() == [0, 0, 1, 11]
    with pytest.raises(ValueError, match="NaN"):
        spatial_blocks(np.array([[0.0, np.nan]]), 1)
    with pytest.raises(ValueError, match="positive"):
        spatial_blocks(coords, 0)
    y = np.arange(8.0)
    with pytest.raises(ValueError, match="single group"):
        check_groups(y, np.zeros(8), 2, "regression")
    with pytest.raises(ValueError, match="only 2 groups"):
        check_groups(y, np.repeat([0, 1], 4), 2, "regression")
    with pytest.raises(ValueError, match="4 distinct groups, fewer than n_splits=5"):
        check_groups(y, np.repeat([0, 1, 2, 3], 2), 5, "regression")
    with pytest.raises(ValueError, match="evaluate it as regression"):
        check_groups(np.repeat([0, 1], 4), None, 5, "classification")


# --- the model table -----------------------------------------------------------------------


def test_a_new_network_row_is_one_spec(tmp_path, monkeypatch):
    from sknd.experiments import network_spec, run_experiments

    X, y = load_forest_type(return_X_y=True, as_frame=True)
    X = X.iloc[:, :4]  # 4 of the 27 bands: the rows and labels are what is tested, not skill
    wide = network_spec("nd_wide", "ND, 16 units", "nd", hidden_units=16)
    own = network_spec("nd_own", "ND (own recipe)", "nd", paper_recipe=False, batch_size=64)
    experiment = run_experiments(
        X, y, depths=[2, 3], n_splits=2, models=["nd", wide, own, "logreg_nd"],
        estimator_params={"max_epochs": 2}, noise_levels=[0.0], noise_repeats=1, verbose=0,
    )  # fmt: skip
    results = experiment.results
    assert list(dict.fromkeys(results["model"])) == ["nd", "nd_wide", "nd_own", "logreg_nd"]
    fitted = experiment.estimators[("nd_wide", 3, 0)]
    assert fitted.hidden_units == 16 and fitted.lr == 0.01  # the paper's recipe underneath
    assert fitted.max_epochs == 2  # the user's overrides apply to every row
    assert experiment.estimators[("nd_own", 2, 0)].batch_size == 64
    assert set(experiment.histories["model"]) == {"nd", "nd_wide", "nd_own"}
    assert set(experiment.coefficients["model"]) == {"nd", "nd_wide", "nd_own"}
    from sknd.experiments import _figures

    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    legends = []
    drawn = _figures.plot_accuracy_by_depth

    def spy(results, ax=None):
        fig = drawn(results, ax)
        legends.extend(t.get_text() for t in fig.axes[0].get_legend().get_texts())
        return fig

    monkeypatch.setattr(_figures, "plot_accuracy_by_depth", spy)
    _figures.save_figures(experiment, tmp_path, dpi=30)  # the legends, not the pixels
    # The run's labels reach the figures, and only while they are drawn.
    assert "ND (own recipe)" in legends
    assert _figures._label("nd_own") == "nd_own"
    report = write_report(experiment, tmp_path, figures=False).read_text()
    assert "- ND, 16 units: the paper's settings with hidden_units=16." in report
    assert "- ND (own recipe): the estimator's defaults with batch_size=64, max_epochs=2." in report
    assert "| ND (own recipe) | 2 |" in report  # compared with the fixed-index baseline


def test_run_experiments_refuses_a_continuous_target_for_classification():
    from sknd.experiments import run_experiments

    X, y = load_forest_type(return_X_y=True)
    with pytest.raises(ValueError, match="task='regression'"):
        run_experiments(X, y + 0.5, n_splits=3, models=["logreg_nd"], verbose=0)


def test_progress_shows_time_left():
    import io

    from sknd.experiments._progress import Progress

    stream = io.StringIO()
    progress = Progress(3, stream=stream)
    for k in range(3):
        progress.update(f"task {k}")
    progress.close()
    lines = stream.getvalue().splitlines()
    # Not a terminal: one line per finished task, each with the time left.
    assert len(lines) == 3
    assert lines[-1].startswith("3/3 fits") and "left, task 2" in lines[-1]


def test_best_pair_regressor_closed_form_matches_linear_regression():
    from sklearn.linear_model import LinearRegression

    from sknd.experiments import BestPairNDRegressor

    rng = np.random.default_rng(0)
    X = rng.uniform(1, 10, size=(200, 6))
    X[:, 5] = 3.0  # constant band: its pairs with each other band still vary
    y = 2 * (X[:, 4] - X[:, 1]) / (X[:, 4] + X[:, 1]) + 0.1 * rng.standard_normal(200)
    fast = BestPairNDRegressor().fit(X[:150], y[:150], X_val=X[150:], y_val=y[150:])
    loop = BestPairNDRegressor(estimator=LinearRegression()).fit(
        X[:150], y[:150], X_val=X[150:], y_val=y[150:]
    )
    np.testing.assert_allclose(fast.selection_scores_, loop.selection_scores_, atol=1e-10)
    assert fast.pair_ == loop.pair_ == (1, 4)
    np.testing.assert_allclose(fast.predict(X), loop.predict(X))
