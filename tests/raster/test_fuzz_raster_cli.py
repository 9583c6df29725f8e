"""Fuzzing of ``python -m sknd.raster`` (sknd/raster/_cli.py) with hypothesis, derandomized.

Random option values (no-data and fill values, band names or positions,
sensors, strip rows, threads, compression, outputs) with small GeoTIFFs (complex
ones too), files that are not rasters and saved objects that are not models.
The contract (docs/contract.md): exit code 0 and a readable map whose no-data
value is no class, or exit code 2 with one ``error:`` line on stderr, never a
traceback. The command runs in-process (its ``main``), once as a process.
"""

import json
import subprocess
import sys
import warnings

import joblib
import numpy as np
import pandas as pd
import pytest

hypothesis = pytest.importorskip("hypothesis")
rasterio = pytest.importorskip("rasterio")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from raster_files import write_geotiff  # noqa: E402
from sklearn.linear_model import LinearRegression, LogisticRegression  # noqa: E402

from sknd import NDClassifier, NDTransformer  # noqa: E402
from sknd.raster._cli import main  # noqa: E402

# Fuzzing: behind the slow marker (`make test-all` and CI run it).
pytestmark = pytest.mark.slow
BANDS = ["blue", "green", "red", "nir"]
PREFIX = "python -m sknd.raster: error: "


def _training(n=120):
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.uniform(0.01, 0.6, size=(n, 4)), columns=BANDS)
    return X, np.where(X["nir"] > X["red"], "veg", "soil")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("raster_cli_fuzz")
    X, y = _training()
    fast = dict(max_epochs=2, random_state=0)
    models = {
        "logreg": LogisticRegression().fit(X, y),
        "nd_classifier": NDClassifier(**fast).fit(X, y),
        "nd_transformer": NDTransformer(n_indices=2, **fast).fit(X, y),
        "int_classes": LogisticRegression().fit(X, (y == "veg").astype(int) * 300),
        # Labels -1 / +1: the default fill -1 was one of them.
        "sign_classes": LogisticRegression().fit(X, np.where(y == "veg", 1, -1)),
        "regressor": LinearRegression().fit(X, X["nir"] - X["red"]),
        "unfitted": LogisticRegression(),
        "not_a_model": {"weights": [1, 2]},
    }
    paths = {}
    for name, model in models.items():
        paths[name] = folder / f"{name}.joblib"
        joblib.dump(model, paths[name])
    # Model files (estimator.save_model): read without --trust-pickle.
    models["nd_classifier"].save_model(folder / "nd_classifier.sknd")
    paths["nd_file"] = folder / "nd_classifier.sknd"
    content = paths["nd_file"].read_bytes()
    paths["truncated_file"] = folder / "truncated.sknd"
    paths["truncated_file"].write_bytes(content[: len(content) // 2])
    paths["garbage"] = folder / "garbage.joblib"
    paths["garbage"].write_text("not a pickle")
    paths["missing"] = folder / "missing.joblib"

    rng = np.random.default_rng(1)
    base = rng.uniform(0.01, 0.6, size=(4, 6, 5)).astype(np.float32)
    base[:, 0, :2] = -9999.0
    scenes = {
        "named": base,
        "unnamed": base,
        "reversed": base[::-1],
        "int16": (base * 10_000).astype(np.int16),
        "negative": np.where(base == -9999.0, base, base - 0.3).astype(np.float32),
        "huge": np.where(base > 0.5, 1e30, base).astype(np.float32),
        "nan": np.where(base > 0.5, np.nan, base).astype(np.float32),
        "three_bands": base[:3],
        "complex": (base + 1j * base).astype(np.complex64),
    }
    for name, data in scenes.items():
        paths[name] = folder / f"{name}.tif"
        names = {"unnamed": None, "reversed": BANDS[::-1], "three_bands": BANDS[:3]}
        nodata = None if name == "complex" else -9999.0
        write_geotiff(paths[name], data, nodata=nodata, descriptions=names.get(name, BANDS))
    paths["npy"] = folder / "scene.npy"
    np.save(paths["npy"], base)
    paths["dir"] = folder
    return paths


# Models and scenes that can succeed are drawn three times as often, so that most runs
# exercise the options; the others are refused whatever the options say.
VALID_MODELS = [
    "logreg",
    "nd_classifier",
    "nd_transformer",
    "int_classes",
    "sign_classes",
    "regressor",
    "nd_file",
]
MODELS = st.sampled_from(
    VALID_MODELS * 3 + ["unfitted", "not_a_model", "garbage", "missing", "truncated_file"]
)
VALID_SCENES = ["named", "reversed", "int16", "nan"]
SCENES = st.sampled_from(
    VALID_SCENES * 3 + ["unnamed", "negative", "huge", "three_bands", "complex", "npy", "missing"]
)
NUMBERS = ["0", "-1", "2", "0.5", "nan", "inf", "-inf", "1e300", "-1e40", "65536", "-32769",
           "-9999", "abc", ""]  # fmt: skip
OPTIONS = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["--nodata", "--fill-value"]), st.sampled_from(NUMBERS)),
        st.tuples(
            st.just("--bands"),
            st.sampled_from(
                [
                    "blue,green,red,nir",
                    "nir,red,green,blue",
                    "a,b,c,d",
                    "blue,green",
                    "",
                    ",,,",
                    "B2,B3,B4,B8",
                    "blue,blue,red,nir",
                    "positional",
                ]
            ),
        ),  # fmt: skip
        st.tuples(st.just("--sensor"), st.sampled_from(["sentinel2", "landsat8", "bogus", ""])),
        st.tuples(
            st.just("--block-rows"), st.sampled_from(["0", "-3", "1", "4", "1000000000", "x"])
        ),
        st.tuples(st.just("--n-jobs"), st.sampled_from(["0", "-1", "1", "3", "x"])),
        st.tuples(st.just("--compress"), st.sampled_from(["lzw", "deflate", "bogus", "", "jpeg"])),
        st.sampled_from([("--proba",), ("--indices",), ("--positional",), ("--cog",)]),
    ),
    max_size=4,
)
OUTPUTS = st.sampled_from(["out.tif"] * 8 + ["dir", "no_such_folder/out.tif"])


def _run(argv, capsys):
    """Exit code and stderr of the command run in-process."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code
        except Exception as exc:  # a traceback: the finding this fuzz is for
            pytest.fail(f"{argv} raised {exc!r}")
    return code, capsys.readouterr().err


def _check_map(path, n_rows=6, n_columns=5):
    with rasterio.open(path) as src:
        data = src.read()
        nodata = src.nodata
        codes = src.tags().get("flag_values")
    assert data.shape[1:] == (n_rows, n_columns)
    if data.dtype.kind == "f":
        valid = ~np.isnan(data) if nodata is None or np.isnan(nodata) else data != nodata
        assert np.isfinite(data[valid]).all()
    if codes is not None:
        # A class map's no-data value is no class code.
        values = json.loads(codes)
        assert nodata not in values, (nodata, codes)
        assert np.isin(data[data != nodata], values).all()


@settings(
    derandomize=True,
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(model=MODELS, scene=SCENES, options=OPTIONS, output=OUTPUTS)
def test_raster_cli_exits_0_or_2_with_one_line(files, capsys, model, scene, options, output):
    out = files["dir"] / output if output != "dir" else files["dir"]
    argv = [str(files[model]), str(files.get(scene, files["dir"] / "missing.tif")), str(out)]
    # "--option=value": argparse would take a value such as "-1e40" for an option.
    argv += ["=".join(option) for option in options] + ["--no-progress"]
    if files[model].suffix == ".joblib":  # pickles written by this test
        argv.append("--trust-pickle")
    if out.exists() and out.is_file():
        out.unlink()
    code, err = _run(argv, capsys)
    assert code in (0, 2), (argv, err)
    assert "Traceback" not in err, (argv, err)
    if code == 2:
        errors = [line for line in err.splitlines() if "error:" in line]
        assert len(errors) == 1 and err.rstrip().endswith(errors[0]), (argv, err)
        assert errors[0].startswith(PREFIX) and len(errors[0]) > len(PREFIX), (argv, err)
    else:
        assert scene != "complex", "complex bands would lose their imaginary part"
        _check_map(out)


def test_usage_error_as_a_process(files):
    argv = [str(files["logreg"]), str(files["named"]), str(files["dir"] / "p.tif")]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sknd.raster",
            *argv,
            "--block-rows",
            "0",
            "--no-progress",
            "--trust-pickle",
        ],  # fmt: skip
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [PREFIX + "--block-rows must be positive, got 0."]
