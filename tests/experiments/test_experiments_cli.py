"""The experiment command line on users' CSVs: regression, groups, spatial blocks, messages.

The end-to-end runs use tiny training budgets: they check plumbing and messages; the
leakage test checks a real effect (random folds are optimistic on spatially clustered data).
"""

import importlib.util
import warnings

import numpy as np
import pandas as pd
import pytest

from sknd.experiments import main, run_experiments, spatial_blocks

FAST = ["--max-epochs", "3", "--patience", "2", "--noise-repeats", "1", "--n-estimators", "5"]


def _yield_frame(n=96, n_bands=6, seed=0):
    """A small hyperspectral-yield-like table: bands, a fold column, an id, two targets."""
    rng = np.random.default_rng(seed)
    bands = rng.uniform(0.05, 0.6, size=(n, n_bands))
    frame = pd.DataFrame(bands, columns=[f"R{400 + 10 * k}" for k in range(n_bands)])
    index = (bands[:, 4] - bands[:, 1]) / (bands[:, 4] + bands[:, 1])
    frame.insert(0, "plot_id", np.arange(n))
    frame["FOLDCOL"] = np.repeat(np.arange(6), n // 6)
    frame["E1"] = 3 * index + 0.05 * rng.standard_normal(n)
    frame["E2"] = frame["E1"] * 2
    return frame


def _spatial_frame(n=400, seed=0):
    """Bands and target are smooth fields over space: nearby samples look alike."""
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 100, size=(n, 2))
    directions = rng.normal(size=(2, 8)) / 15
    phases = rng.uniform(0, 2 * np.pi, 8)
    frame = pd.DataFrame(1.5 + np.sin(xy @ directions + phases), columns=list("abcdefgh"))
    frame["x"], frame["y"] = xy[:, 0], xy[:, 1]
    frame["target"] = np.sin(xy[:, 0] / 12) * np.cos(xy[:, 1] / 12)
    frame["target"] += 0.1 * rng.standard_normal(n)
    return frame


# One end-to-end run (every regression model, 6 folds) shared by the three tests below:
# behind the slow marker (`make test-all`, CI).
@pytest.fixture(scope="module")
def regression_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("regression")
    csv = root / "yield.csv"
    _yield_frame().to_csv(csv, index=False)
    output = root / "out"
    # No --folds: the 6 groups of FOLDCOL make 6 folds instead of the default 10.
    args = ["--dataset", str(csv), "--target", "E1", "--task", "regression", "--groups",
            "FOLDCOL", "--exclude", "E2", "--depths", "2", "--output", str(output),
            *FAST]  # fmt: skip
    with warnings.catch_warnings():
        if importlib.util.find_spec("matplotlib") is None:  # an sdist without the plot extra
            warnings.filterwarnings("ignore", "matplotlib is not installed", UserWarning)
        assert main(args) == 0
    return output


@pytest.mark.slow
def test_regression_run_results(regression_run):
    results = pd.read_csv(regression_run / "results.csv")
    assert {"r2", "rmse"} <= set(results.columns)
    assert "accuracy" not in results.columns
    assert pd.api.types.is_float_dtype(results["r2"])
    assert set(results["model"]) == {
        "nd", "mlp", "attnd", "nd_sknd", "nd_sknd_passthrough", "sklearn_mlp", "ridge_bands",
        "ridge_nd",
        "best_nd_pair", "pls", "random_forest",
    }  # fmt: skip
    # The linear ridge on the bands finds the planted index well.
    clean = results[results["noise"] == 0]
    assert clean.loc[clean["model"] == "ridge_nd", "r2"].mean() > 0.8
    assert (results["rmse"] >= 0).all()
    # Numeric columns stay numeric (n_epochs of solvers reported as arrays before).
    for column in ("n_epochs", "n_parameters", "fit_time"):
        assert pd.api.types.is_numeric_dtype(results[column]), column


@pytest.mark.slow
def test_regression_run_groups_never_split(regression_run):
    settings = pd.read_json(regression_run / "settings.json", typ="series")
    assert settings["task"] == "regression"
    assert settings["grouped"] and settings["n_groups"] == 6
    assert settings["n_splits"] == 6
    # plot_id, the fold column and the other target are not bands.
    assert settings["bands"] == [f"R{400 + 10 * k}" for k in range(6)]


@pytest.mark.slow
def test_regression_report(regression_run):
    report = (regression_run / "report.md").read_text()
    for text in (
        "Test R²",
        "Test RMSE",
        "RidgeCV, standardized bands",
        "RidgeCV, standardized classic NDs",
        "PLS regression",
        "Was learning worth it?",
        "GroupKFold",
        "Nadeau & Bengio",
        "Not used as bands: ['plot_id']",
        "'E2', 'FOLDCOL'",
        "6 folds, one per group of --groups column 'FOLDCOL'",
    ):
        assert text in report, text
    if importlib.util.find_spec("matplotlib") is not None:
        for name in ("accuracy_by_depth", "noise", "illumination", "training_depth2"):
            assert (regression_run / f"{name}.png").stat().st_size > 0


def test_notes_printed_once_on_stderr(tmp_path, capsys):
    frame = _yield_frame()
    frame.loc[:20, "R410"] = -0.01  # negative values switch the variant
    csv = tmp_path / "neg.csv"
    frame.to_csv(csv, index=False)
    args = ["--dataset", str(csv), "--target", "E1", "--task", "regression", "--exclude",
            "E2,FOLDCOL", "--models", "nd,ridge_bands", "--quick", "--depths", "2",
            "--output", str(tmp_path / "out"), "--no-figures", "--max-samples", "60",
            *FAST]  # fmt: skip
    assert main(args) == 0
    err = capsys.readouterr().err
    for text in ("variant='signed'", "Subsampled 60 of 96", "6 bands: R400", "plot_id"):
        assert err.count(text) == 1, text
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Automatic choices of this run" in report
    assert "variant='signed'" in report


def test_spatial_blocks_show_the_leakage_of_random_folds(tmp_path):
    frame = _spatial_frame()
    csv = tmp_path / "field.csv"
    frame.to_csv(csv, index=False)
    common = ["--dataset", str(csv), "--task", "regression", "--models", "random_forest",
              "--folds", "4", "--n-estimators", "20", "--noise-levels", "0", "--quiet",
              "--no-figures", "--coords", "x,y"]  # fmt: skip
    assert main([*common, "--output", str(tmp_path / "random")]) == 0
    assert main([*common, "--spatial-blocks", "25", "--output", str(tmp_path / "blocks")]) == 0
    random_r2 = pd.read_csv(tmp_path / "random" / "results.csv")["r2"].mean()
    blocks_r2 = pd.read_csv(tmp_path / "blocks" / "results.csv")["r2"].mean()
    # Random folds put a sample's neighbours in training: the score is optimistic.
    assert random_r2 > 0.6
    assert random_r2 - blocks_r2 > 0.4
    settings = pd.read_json(tmp_path / "blocks" / "settings.json", typ="series")
    assert "x" not in settings["bands"] and "y" not in settings["bands"]
    assert settings["n_groups"] == len(np.unique(spatial_blocks(frame[["x", "y"]], 25)))


@pytest.mark.parametrize(
    ("extra", "frame_change", "message"),
    [
        (["--target", "E1"], None, "pass --task regression"),
        (["--task", "regression", "--target", "E1", "--groups", "field"], None,
         "--groups names no column 'field'"),
        (["--task", "regression", "--target", "E1", "--spatial-blocks", "10", "--coords",
          "x,northing"], "coords", "--coords names no column 'northing'"),
        (["--task", "regression", "--target", "E1", "--spatial-blocks", "10"], None,
         "needs the coordinate columns: --coords"),
        (["--task", "regression", "--target", "E1", "--groups", "site"], "one_group",
         "single group"),
        (["--task", "regression", "--target", "E1", "--groups", "FOLDCOL", "--folds", "10"],
         None, "6 distinct groups, fewer than --folds=10"),
        (["--task", "regression", "--target", "E1", "--spatial-blocks", "10", "--coords",
          "x,y"], "nan_coords", "--coords column 'x' has 1 missing"),
        (["--task", "regression", "--target", "E1"], "nan_target",
         "Target column 'E1' has 1 missing values"),
        (["--target", "E1"], "inf_target", "Target column 'E1' has 1 infinite values"),
        (["--task", "regression", "--target", "E1", "--groups", "FOLDCOL"], "nan_groups",
         "--groups column 'FOLDCOL' has 1 missing"),
        (["--task", "regression", "--target", "E1", "--models", "logreg_nd"], None,
         "Unknown models ['logreg_nd'] for regression"),
        (["--task", "regression", "--target", "E1", "--groups", "FOLDCOL",
          "--spatial-blocks", "3", "--coords", "x,y"], "coords", "not both"),
        (["--task", "regression", "--target", "E1", "--exclude", "E2,FOLDCOL", "--sensor",
          "sentinel2"], None, "--sensor sentinel2: Unknown band name(s) ['R400'"),
        # Messages that blamed another cause: "not numeric", a two-line fit failure,
        # scikit-learn's "train_size = 1", a traceback once every model had trained.
        (["--task", "regression", "--target", "E1", "--spatial-blocks", "10", "--coords",
          "x,x"], "coords", "--coords names the column 'x' twice"),
        (["--target", "E1", "--task", "regression", "--bands", "R400,R410,R400"], None,
         "--bands names ['R400'] more than once"),
        (["--target", "E1", "--task", "regression", "--max-samples", "1"], None,
         "--max-samples must be at least 2 rows, got 1"),
        (["--target", "FOLDCOL", "--max-samples", "4"], None,
         "--max-samples 4 keeps fewer rows than the 6 classes"),
        (["--target", "E1", "--task", "regression", "--output", "{tmp}/data.csv/out"], None,
         "cannot be created: {tmp}/data.csv is a file, not a folder"),
    ],
)  # fmt: skip
def test_usage_errors_exit_2_with_a_message(tmp_path, capsys, extra, frame_change, message):
    frame = _yield_frame()
    if frame_change in ("coords", "nan_coords"):
        frame["x"], frame["y"] = np.arange(len(frame)) % 12, np.arange(len(frame)) // 12
    if frame_change == "nan_coords":
        frame.loc[5, "x"] = np.nan
    if frame_change == "one_group":
        frame["site"] = "A"
    if frame_change == "nan_target":
        frame.loc[2, "E1"] = np.nan
    if frame_change == "inf_target":  # was scikit-learn's "Input contains infinity"
        frame.loc[2, "E1"] = np.inf
    if frame_change == "nan_groups":
        frame["FOLDCOL"] = frame["FOLDCOL"].astype(float)
        frame.loc[2, "FOLDCOL"] = np.nan
    csv = tmp_path / "data.csv"
    frame.to_csv(csv, index=False)
    extra = [option.replace("{tmp}", str(tmp_path)) for option in extra]
    with pytest.raises(SystemExit) as exc:
        main(["--dataset", str(csv), "--quiet", "--output", str(tmp_path / "o"), *extra])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message.replace("{tmp}", str(tmp_path)) in err
    assert "Traceback" not in err


def test_python_api_names_the_report_after_the_data(tmp_path):
    from sknd.datasets import load_forest_type
    from sknd.experiments import write_report

    bunch = load_forest_type(as_frame=True)
    X = bunch.data.iloc[:, :4]
    X.attrs["name"] = "forest subset"
    experiment = run_experiments(
        X, bunch.target, models=["logreg_nd"], n_splits=3, noise_levels=[0.0],
        noise_repeats=1, verbose=0, target_names=bunch.target_names,
    )  # fmt: skip
    report = write_report(experiment, tmp_path, figures=False).read_text()
    assert report.startswith("# Normalized-difference networks on forest subset")
    assert f"{bunch.target_names[0]}: " in report


def test_sensor_names_known_indices_in_coefficients(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.uniform(0.02, 0.5, size=(90, 4)), columns=["B2", "B3", "B4", "B8"])
    frame["class"] = np.repeat([0, 1, 2], 30)
    csv = tmp_path / "s2.csv"
    frame.to_csv(csv, index=False)
    args = ["--dataset", str(csv), "--sensor", "sentinel2", "--models", "nd", "--quick",
            "--depths", "2", "--quiet", "--no-figures", "--output", str(tmp_path / "out"),
            *FAST]  # fmt: skip
    assert main(args) == 0
    coefficients = pd.read_csv(tmp_path / "out" / "coefficients.csv", keep_default_na=False)
    row = coefficients.query("band_i == 'B4' and band_j == 'B8'").iloc[0]
    assert row["known_index"] == "-NDVI"


def test_thousands_of_bands_are_refused_with_the_memory_estimate(tmp_path, capsys, monkeypatch):
    # A 2,000-band CSV through --quick: the classic-index peers would hold millions of
    # pair columns per sample. The estimate is checked before anything trains; this
    # machine's memory is made small so that a few rows suffice to cross it.
    import sknd.experiments._checks

    monkeypatch.setattr(sknd.experiments._checks, "_physical_memory", lambda: 2**30)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.uniform(0.05, 0.5, (30, 2000)), columns=[f"b{k}" for k in range(2000)])
    frame["class"] = np.arange(30) % 2
    csv = tmp_path / "hyperspectral.csv"
    frame.to_csv(csv, index=False)
    with pytest.raises(SystemExit) as exc:
        main(["--dataset", str(csv), "--quick", "--quiet", "--output", str(tmp_path / "o")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "logreg_nd, best_nd_pair would need about 1.79 GiB" in err
    assert "all 1,999,000 band pairs" in err and "out of --models" in err
    assert "Traceback" not in err


def test_a_class_only_in_validation_groups_is_a_usage_error(tmp_path, capsys):
    # Group folds can leave a class out of a fold's training part; the networks would
    # then blame y_val, which the user never passed.
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.uniform(0.05, 0.5, (60, 4)), columns=list("abcd"))
    frame["field"] = np.repeat(np.arange(6), 10)
    frame["class"] = np.where(frame["field"] == 0, 2, np.arange(60) % 2)
    csv = tmp_path / "fields.csv"
    frame.to_csv(csv, index=False)
    with pytest.raises(SystemExit) as exc:
        main(["--dataset", str(csv), "--groups", "field", "--folds", "3", "--models", "nd",
              "--depths", "2", *FAST, "--quiet", "--no-figures", "--output",
              str(tmp_path / "o")])  # fmt: skip
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "validation part holds class(es) [2] that its training part lacks" in err
    assert "y_val" not in err and "Traceback" not in err


def test_docs_list_the_options_of_the_table():
    """docs/experiments.md's option list is the one the OPTIONS table renders."""
    from pathlib import Path

    from sknd.experiments._cli import options_markdown

    page = Path(__file__).resolve().parents[2] / "docs" / "experiments.md"
    text = page.read_text(encoding="utf-8")
    begin = text.index("-->\n", text.index("<!-- options: generated by options_markdown()")) + 4
    listed = text[begin : text.index("<!-- end of options -->")]
    assert listed.strip() == options_markdown().strip(), (
        "docs/experiments.md's option list differs from sknd/experiments/_cli.py's OPTIONS: "
        "paste the output of `python -c 'from sknd.experiments._cli import options_markdown; "
        "print(options_markdown())'` between the markers."
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], {"folds": 10, "depths": [2, 3, 4], "max_epochs": None, "max_samples": None}),
        (["--quick"], {"folds": 3, "depths": [2, 3], "max_epochs": 30, "max_samples": 1000}),
        (["--quick", "--folds", "5", "--max-epochs", "7"], {"folds": 5, "max_epochs": 7}),
        (["--folds", "4"], {"folds": 4, "noise_repeats": 5, "n_estimators": 100, "seed": 0}),
    ],
)
def test_options_resolve_to_the_full_or_the_quick_values(argv, expected):
    from sknd.experiments._cli import OPTIONS, _resolve, build_parser

    args = _resolve(build_parser().parse_args(["--dataset", "forest_type", *argv]))
    assert {name: getattr(args, name) for name in expected} == expected
    assert {option.dest for option in OPTIONS} == set(vars(args))


def test_additive_noise_is_run_recorded_and_reported(tmp_path):
    # 200 of forest_type's 523 rows (the tuned logistic regression's time is in the rows).
    common = ["--dataset", "forest_type", "--max-samples", "200", "--models", "logreg_nd",
              "--folds", "3", "--noise-levels", "0,20", "--quiet", "--no-figures",
              *FAST]  # fmt: skip
    runs = {}
    for kind in ("multiplicative", "additive"):
        assert main([*common, "--noise-kind", kind, "--output", str(tmp_path / kind)]) == 0
        settings = pd.read_json(tmp_path / kind / "settings.json", typ="series")
        assert settings["noise_kind"] == kind
        runs[kind] = pd.read_csv(tmp_path / kind / "results.csv")
    report = (tmp_path / "additive" / "report.md").read_text()
    assert "- Noise: b + eta s z (s: each band's standard deviation" in report
    clean = [run.loc[run.noise == 0, "accuracy"].to_numpy() for run in runs.values()]
    np.testing.assert_array_equal(*clean)  # same fits, same clean scores
    noisy = [run.loc[run.noise > 0, "accuracy"].to_numpy() for run in runs.values()]
    assert not np.array_equal(*noisy)  # another noise model
