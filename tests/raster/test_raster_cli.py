"""Tests of ``python -m sknd.raster`` (sknd/raster/_cli.py): GeoTIFF in, GeoTIFF out."""

import json
import pathlib
import re
import shutil
import subprocess
import sys
from xml.etree import ElementTree

import joblib
import numpy as np
import pandas as pd
import pytest
import raster_files
from raster_files import write_geotiff
from sklearn.linear_model import LinearRegression, LogisticRegression

from sknd import NDTransformer
from sknd.raster._cli import main as run_command

rasterio = pytest.importorskip("rasterio")
Affine = pytest.importorskip("affine").Affine

BANDS = ["blue", "green", "red", "nir"]
TRANSFORM = Affine(*raster_files.TRANSFORM)


def main(argv):
    """The command, trusting the joblib pickles these tests write (model files: below)."""
    return run_command([*argv, "--trust-pickle"])


def _training(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.01, 0.6, size=(n, 4))
    ndvi = (X[:, 3] - X[:, 2]) / (X[:, 3] + X[:, 2])
    return pd.DataFrame(X, columns=BANDS), np.array(["soil", "water", "veg"])[
        np.digitize(ndvi, [-0.2, 0.2])
    ]


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    X, y = _training()
    path = tmp_path_factory.mktemp("models") / "clf.joblib"
    joblib.dump(LogisticRegression().fit(X, y), path)
    return path


def _scene(path, *, shape=(40, 30), order=BANDS, crs="EPSG:32633", described=True):
    rng = np.random.default_rng(1)
    values = {name: rng.uniform(0.01, 0.6, size=shape).astype(np.float32) for name in BANDS}
    data = np.stack([values[name] for name in order])
    data[:, 0, :5] = -9999.0
    data[2, 3, 3] = np.nan
    write_geotiff(path, data, crs=crs, descriptions=order if described else None)
    table = pd.DataFrame({name: values[name].ravel() for name in BANDS})
    return path, table


def _category_names(path):
    """GDAL category names of band 1, from the side-car GDAL reads them from."""
    root = ElementTree.parse(f"{path}.aux.xml").getroot()
    return [node.text or "" for node in root.iter("Category")]


def _read(path):
    with rasterio.open(path) as src:
        return src.read(), src.profile, src.descriptions, src.tags()


def test_class_map_keeps_crs_transform_and_matches_bands_by_name(tmp_path, model_path):
    scene, table = _scene(tmp_path / "scene.tif", order=BANDS[::-1])
    out = tmp_path / "classes.tif"
    assert main([str(model_path), str(scene), str(out), "--block-rows", "7"]) == 0
    data, profile, descriptions, tags = _read(out)
    assert profile["crs"].to_string() == "EPSG:32633" and profile["transform"] == TRANSFORM
    # Class codes (positions in classes_) in uint8, the fill 255 outside them.
    assert profile["nodata"] == 255 and data.dtype == np.uint8 and descriptions == ("class",)
    model = joblib.load(model_path)
    codes = np.searchsorted(model.classes_, model.predict(table)).reshape(40, 30)
    valid = np.ones((40, 30), dtype=bool)
    valid[0, :5] = valid[3, 3] = False
    np.testing.assert_array_equal(data[0][valid], codes[valid])
    assert (data[0][~valid] == 255).all()  # nodata and NaN pixels: fill, never a class
    assert json.loads(tags["categories"]) == {"0": "soil", "1": "veg", "2": "water"}
    assert tags["flag_meanings"] == "soil veg water" and json.loads(tags["flag_values"]) == [
        0,
        1,
        2,
    ]
    with rasterio.open(out) as src:
        colormap = src.colormap(1)
    assert len({colormap[code] for code in range(3)}) == 3 and colormap[255][3] == 0
    assert _category_names(out) == ["soil", "veg", "water"]


@pytest.mark.parametrize("what", ["class", "proba"])
def test_cog_output_with_colour_table_or_band_descriptions(tmp_path, model_path, what):
    scene, _ = _scene(tmp_path / "scene.tif", shape=(300, 280))
    out = tmp_path / "map.tif"
    (tmp_path / "map.tif.aux.xml").write_text(
        "<PAMDataset><PAMRasterBand band='1'><CategoryNames><Category>stale</Category>"
        "</CategoryNames></PAMRasterBand></PAMDataset>"
    )  # left by an earlier map: must not rename this one's classes
    extra = ["--proba"] if what == "proba" else []
    assert main([str(model_path), str(scene), str(out), "--cog", "--no-progress", *extra]) == 0
    with rasterio.open(out) as src:
        assert src.tags(ns="IMAGE_STRUCTURE")["LAYOUT"] == "COG"
        assert src.overviews(1)  # 300 x 280 pixels, 256-pixel tiles: one overview level
        if what == "class":
            assert src.dtypes[0] == "uint8" and src.colormap(1)[2][3] == 255
            assert src.descriptions == ("class",)
        else:
            assert src.descriptions == ("soil", "veg", "water")
            assert src.dtypes[0] == "float32"
    if what == "class":
        assert _category_names(out) == ["soil", "veg", "water"]
        if shutil.which("gdalinfo"):  # GDAL itself reads them
            info = subprocess.run(["gdalinfo", str(out)], capture_output=True, text=True).stdout
            assert "Categories:" in info and "2: water" in info and "Color Table" in info
    else:
        assert not (tmp_path / "map.tif.aux.xml").exists()
    # No temporary file left next to the map.
    assert sorted(path.name for path in tmp_path.iterdir()) == ["map.tif"] + (
        ["map.tif.aux.xml"] if what == "class" else []
    ) + ["scene.tif"]


def test_proba_and_indices(tmp_path, model_path):
    scene, table = _scene(tmp_path / "scene.tif")
    out = tmp_path / "proba.tif"
    assert main([str(model_path), str(scene), str(out), "--proba", "--no-progress"]) == 0
    data, profile, descriptions, _ = _read(out)
    assert descriptions == ("soil", "veg", "water") and np.isnan(profile["nodata"])
    model = joblib.load(model_path)
    np.testing.assert_allclose(
        data[:, 1, :].T, model.predict_proba(table).reshape(40, 30, 3)[1], rtol=1e-5
    )
    assert np.isnan(data[:, 0, :5]).all()
    X, y = _training()
    transformer = NDTransformer(n_indices=2, max_epochs=3, random_state=0).fit(X, y)
    joblib.dump(transformer, tmp_path / "nd.joblib")
    out = tmp_path / "indices.tif"
    assert main([str(tmp_path / "nd.joblib"), str(scene), str(out), "--indices"]) == 0
    data, _, descriptions, _ = _read(out)
    assert descriptions == tuple(transformer.get_feature_names_out())
    np.testing.assert_allclose(
        data[:, 5, :].T, transformer.transform(table).reshape(40, 30, 2)[5], rtol=1e-4, atol=1e-6
    )


def test_regression_and_fill_value(tmp_path):
    X, _ = _training()
    path = tmp_path / "reg.joblib"
    joblib.dump(LinearRegression().fit(X, X["nir"] - X["red"]), path)
    scene, _ = _scene(tmp_path / "scene.tif", crs=None)
    out = tmp_path / "reg.tif"
    assert main([str(path), str(scene), str(out), "--fill-value", "-5"]) == 0
    data, profile, _, _ = _read(out)
    assert profile["crs"] is None and profile["dtype"] == "float32"
    assert (data[0, 0, :5] == -5).all() and profile["nodata"] == -5


def test_unnamed_scene_is_refused_unless_positional(tmp_path, model_path, capsys):
    scene, _ = _scene(tmp_path / "scene.tif", described=False)
    out = tmp_path / "out.tif"
    assert main([str(model_path), str(scene), str(out)]) == 2
    err = capsys.readouterr().err
    assert "no names" in err and "--bands positional" in err and "bands=" not in err
    assert not out.exists()
    assert main([str(model_path), str(scene), str(out), "--positional"]) == 0
    assert main([str(model_path), str(scene), str(out), "--bands", "positional"]) == 0
    # Positions that the scene's own band descriptions contradict: a warning line of the
    # command's own, in its options' words, without Python's file and line.
    described, _ = _scene(tmp_path / "described.tif", order=BANDS[::-1])
    capsys.readouterr()
    assert main([str(model_path), str(described), str(out), "--bands", "positional"]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "warning:" in line]
    assert len(warned) == 1 and "positions" in warned[0] and "--bands positional" in warned[0]
    assert warned[0].startswith("python -m sknd.raster: warning: ") and ".py" not in warned[0]
    # --quiet: errors only.
    assert main([str(model_path), str(described), str(out), "--positional", "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    names = ",".join(BANDS)
    assert main([str(model_path), str(scene), str(out), "--bands", names]) == 0


def test_an_output_naming_a_file_a_vrt_scene_reads_is_refused(tmp_path, model_path, capsys):
    """A VRT's band files are the scene's files too (fuzz5 repro_04)."""
    rng = np.random.default_rng(3)
    files = [
        write_geotiff(tmp_path / f"{name}.tif", rng.uniform(0.01, 0.6, (1, 40, 30)))
        for name in BANDS
    ]
    bands = "".join(
        f'<VRTRasterBand dataType="Float32" band="{k}"><Description>{name}</Description>'
        f'<SimpleSource><SourceFilename relativeToVRT="1">{name}.tif</SourceFilename>'
        "<SourceBand>1</SourceBand></SimpleSource></VRTRasterBand>"
        for k, name in enumerate(BANDS, start=1)
    )
    vrt = tmp_path / "stack.vrt"
    vrt.write_text(
        f'<VRTDataset rasterXSize="30" rasterYSize="40"><SRS>EPSG:32633</SRS>'
        f"<GeoTransform>{', '.join(map(str, TRANSFORM.to_gdal()))}</GeoTransform>{bands}"
        "</VRTDataset>"
    )
    before = files[2].read_bytes()
    assert main([str(model_path), str(vrt), str(files[2]), "--quiet"]) == 2
    assert "red.tif" in capsys.readouterr().err and files[2].read_bytes() == before
    assert main([str(model_path), str(vrt), str(tmp_path / "map.tif"), "--quiet"]) == 0


@pytest.mark.parametrize(
    "given",
    [
        "water=#1f78b4,veg=#33a02c",
        "# QGIS Generated Color Map Export File\nINTERPOLATION:EXACT\n"
        "1,31,120,180,255,water\n2,51,160,44,255,veg\n",
        "water 31 120 180\nveg 51 160 44 255\n",  # GDAL's text, values as the classes
        "1 31 120 180 255 water\n2: 51 160 44 veg\n",  # GDAL's, with labels
    ],
)
def test_colors_give_the_palette_of_a_cog(tmp_path, model_path, given):
    """--colors as CLASS=COLOUR pairs or a colour table QGIS or GDAL writes (issue 64)."""
    scene, _ = _scene(tmp_path / "scene.tif")
    option = given
    if "\n" in given:
        option = tmp_path / "colors.txt"
        option.write_text(given)
    out = tmp_path / "map.tif"
    assert main([str(model_path), str(scene), str(out), "--cog", "--colors", str(option)]) == 0
    with rasterio.open(out) as src:
        colormap = src.colormap(1)
    # Codes 0, 1, 2 are soil, veg and water; soil keeps a default colour.
    assert colormap[2][:3] == (31, 120, 180) and colormap[1][:3] == (51, 160, 44)
    assert colormap[0][:3] not in ((31, 120, 180), (51, 160, 44))


@pytest.mark.parametrize(
    "given, message",
    [
        ("lake=#0000ff", "no classes of the model: its classes are ['soil', 'veg', 'water']"),
        ("water:#0000ff", "give CLASS=COLOUR pairs"),
        ("water=bluish", "'#rrggbb' or a colour name"),
        # Colour-table files: a line without three channels, a class the model lacks.
        ("veg 51 160 44\nwater 31 120\n", "line 2: 'water 31 120' is not 'value R G B"),
        (
            "# QGIS\n3,0,0,255,255,lake\n",
            "line 2: neither its label 'lake' nor its value '3' is a class of the model: its "
            "classes are ['soil', 'veg', 'water']",
        ),
        (
            "water 31 120 180\nlake 0 0 255\n",
            "line 2: its value 'lake' is no class of the model (the line has no label)",
        ),
    ],
)
def test_bad_colors_exit_2_before_anything_is_written(tmp_path, model_path, capsys, given, message):
    scene, _ = _scene(tmp_path / "scene.tif")
    out = tmp_path / "map.tif"
    if "\n" in given:
        (tmp_path / "colors.txt").write_text(given)
        given = str(tmp_path / "colors.txt")
    assert main([str(model_path), str(scene), str(out), "--colors", given, "--quiet"]) == 2
    assert message in capsys.readouterr().err and not out.exists()


# The options each case of test_bad_input_exits_2_with_a_message adds.
_BAD_OPTIONS = {
    "missing band": ["--bands", "blue,green,red,swir16"],
    "no transform": ["--indices"],
    "bad fill": ["--fill-value", "0.5"],
    "huge class fill": ["--fill-value", "1e300"],  # was numpy's object dtype, refused by rasterio
    "huge float fill": ["--proba", "--fill-value", "1e40"],  # was written as inf
    "band count": ["--bands", "blue,green"],
    "fill is a class code": ["--fill-value", "1"],
    "cog into a folder": ["--cog"],
    "unknown sensor": ["--sensor", "bogus"],
    "gdal refuses the compression": ["--proba", "--compress", "ccittfax4"],
    "lossy compression": ["--compress", "jpeg"],
    "lossy compression of probabilities": ["--proba", "--compress", "JPEG"],
    "png output": [],
    "output is the scene": [],
    "output is the model": [],
}


def _bad_files(case, tmp_path, scene, model):
    """The scene and model paths of a case of test_bad_input_exits_2_with_a_message."""
    if case == "unreadable scene":
        scene = tmp_path / "scene.txt"
        scene.write_text("not a raster")
    elif case == "not an estimator":
        model = str(tmp_path / "dict.joblib")
        joblib.dump({"a": 1}, model)
    elif case == "not a model file":
        model = str(scene)
    elif case == "unwritable label":
        X, y = _training()
        model = str(tmp_path / "odd.joblib")
        joblib.dump(LogisticRegression().fit(X, np.char.add(y, "\n")), model)
    elif case == "cog into a folder":
        (tmp_path / "out.tif").mkdir()
    elif case == "complex scene":
        rng = np.random.default_rng(0)
        values = rng.uniform(0.01, 0.5, (4, 6, 5)) + 1j * rng.uniform(0, 1, (4, 6, 5))
        write_geotiff(scene, values.astype(np.complex64), nodata=None, descriptions=BANDS)
    return scene, model


@pytest.mark.parametrize(
    "case, message",
    [
        ("missing band", "'nir' \\(nir\\) have no counterpart"),
        ("unreadable scene", "cannot read the scene"),
        ("not an estimator", "holds a dict, not a scikit-learn estimator"),
        ("not a model file", "cannot load the model"),
        ("no transform", "has no method transform"),
        ("bad fill", "not an integer"),
        ("huge class fill", "--fill-value 1e+300 is too large for a class map"),
        ("huge float fill", "--fill-value 1e+40 is beyond the float32 range"),
        ("band count", "Got 2 band names in --bands for an image of 4 bands"),
        ("fill is a class code", "--fill-value 1 is the code of the class 'veg'"),
        ("unwritable label", "control characters"),
        ("cog into a folder", "cannot write"),
        # An unknown preset was accepted when the names matched as given.
        ("unknown sensor", "Unknown sensor 'bogus'"),
        # Complex bands lost their imaginary part without a word.
        ("complex scene", "the scene's bands must hold real band values"),
        # GDAL's refusal to compress float32 as CCITT fax ended in a traceback.
        ("gdal refuses the compression", "Bits/sample must be 1 for Group 3/4 encoding"),
        # A uint8 class map compressed as JPEG changed most class codes without a word.
        ("lossy compression", "--compress jpeg is lossy"),
        ("lossy compression of probabilities", "--compress JPEG is lossy"),
        # A .png name got a GeoTIFF.
        ("png output", "asks for a .png file, and the command writes GeoTIFFs"),
        # The input was replaced by the map (fuzz3 repro_08).
        ("output is the scene", "is the scene file: the map would replace it"),
        ("output is the model", "is the model file: the map would replace it"),
    ],
)
def test_bad_input_exits_2_with_a_message(tmp_path, model_path, capsys, case, message):
    scene, _ = _scene(tmp_path / "scene.tif")
    scene, model = _bad_files(case, tmp_path, scene, str(model_path))
    extra = _BAD_OPTIONS.get(case, [])
    out = {"png output": tmp_path / "out.png", "output is the scene": scene}.get(case)
    out = tmp_path / "out.tif" if out is None else out
    out = model if case == "output is the model" else out
    inputs = {path: pathlib.Path(path).read_bytes() for path in (scene, model)}
    assert main([model, str(scene), str(out), "--no-progress", *extra]) == 2
    err = capsys.readouterr().err
    assert message.replace("\\", "") in err.replace("\\", "")
    assert len(err.strip().splitlines()) == 1
    assert {path: pathlib.Path(path).read_bytes() for path in inputs} == inputs
    assert not list(tmp_path.glob(".sknd-*"))  # refused before writing, or the map removed
    if case in ("cog into a folder", "output is the scene", "output is the model"):
        return
    assert not pathlib.Path(out).exists()


def test_values_the_model_refuses_exit_2_and_leave_no_map(tmp_path, capsys):
    # sknd's own checks (here: negative bands for variant="reflectance") used to end in a
    # traceback, leaving a half-written map behind.
    from sknd import NDClassifier

    X, y = _training()
    path = tmp_path / "nd.joblib"
    joblib.dump(NDClassifier(max_epochs=2, random_state=0).fit(X, y), path)
    scene, _ = _scene(tmp_path / "scene.tif")
    negative = tmp_path / "negative.tif"
    with rasterio.open(scene) as src, rasterio.open(negative, "w", **src.profile) as dst:
        data = src.read()
        data[1, 10, 10] = -0.5
        dst.write(data)
        dst.descriptions = src.descriptions
    out = tmp_path / "out.tif"
    assert main([str(path), str(negative), str(out), "--block-rows", "8", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m sknd.raster: error: scene rows 8-15: Negative values")
    assert len(err.strip().splitlines()) == 1 and not out.exists()
    assert main([str(path), str(scene), str(out), "--n-jobs", "-1", "--no-progress"]) == 0


def test_class_fill_is_no_class_label(tmp_path, capsys):
    # Labels -1 / +1 met the default fill -1: every pixel of class -1 read back as no-data.
    X, _ = _training()
    y = np.where(X["nir"] > X["red"], 1, -1)
    path = tmp_path / "signs.joblib"
    joblib.dump(LogisticRegression().fit(X, y), path)
    scene, table = _scene(tmp_path / "scene.tif")
    out = tmp_path / "out.tif"
    assert main([str(path), str(scene), str(out), "--no-progress"]) == 0
    data, profile, _, _ = _read(out)
    model = joblib.load(path)
    codes = np.searchsorted(model.classes_, model.predict(table)).reshape(40, 30)
    assert profile["nodata"] not in (0, 1)  # the codes of -1 and +1
    valid = np.ones((40, 30), dtype=bool)
    valid[0, :5] = valid[3, 3] = False
    np.testing.assert_array_equal(data[0][valid], codes[valid])
    assert (data[0][~valid] == profile["nodata"]).all()
    assert main([str(path), str(scene), str(out), "--fill-value", "1", "--no-progress"]) == 2
    assert "--fill-value 1 is the code of the class" in capsys.readouterr().err


@pytest.mark.parametrize("stop", ["SIGTERM", "SIGHUP", "KeyboardInterrupt"])
def test_a_stopped_command_removes_its_map_and_says_so(
    tmp_path, model_path, capsys, monkeypatch, stop
):
    # SIGTERM (a timeout, a job scheduler, docker stop) and SIGHUP ended the process at once,
    # leaving a partial GeoTIFF that opened as a valid map; Ctrl-C printed a traceback.
    import os
    import signal
    import time

    from sknd.raster import _cli

    if stop != "KeyboardInterrupt" and signal.getsignal(getattr(signal, stop)) is signal.SIG_IGN:
        pytest.skip(f"{stop} is ignored in this process (nohup): the command keeps it ignored")
    scene, _ = _scene(tmp_path / "scene.tif")
    out = tmp_path / "out.tif"
    process = _cli._process

    def stopped_midway(src, dst, *args, **kwargs):
        process(src, dst, *args, **kwargs)  # the map is written, not yet closed
        if stop == "KeyboardInterrupt":
            raise KeyboardInterrupt
        os.kill(os.getpid(), getattr(signal, stop))
        time.sleep(5)  # the handler interrupts this

    monkeypatch.setattr(_cli, "_process", stopped_midway)
    before = signal.getsignal(signal.SIGTERM)
    code = main([str(model_path), str(scene), str(out), "--no-progress"])
    number = signal.SIGINT if stop == "KeyboardInterrupt" else getattr(signal, stop)
    assert code == 128 + number and not out.exists()
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "no map written" in err
    assert signal.getsignal(signal.SIGTERM) is before  # the handlers are put back


# Fresh processes (the command as users run it): behind the slow marker; the tests above
# call main() in this process.
@pytest.mark.slow
def test_module_runs_as_a_command(tmp_path, model_path):
    scene, _ = _scene(tmp_path / "scene.tif")
    out = tmp_path / "out.tif"
    command = [sys.executable, "-m", "sknd.raster", str(model_path), str(scene), str(out)]
    command.append("--trust-pickle")
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert _read(out)[1]["crs"].to_string() == "EPSG:32633"
    done = subprocess.run(
        [*command[:4], str(tmp_path / "missing.tif"), str(out), "--trust-pickle"],
        **{"capture_output": True, "text": True, "timeout": 120},
    )
    assert done.returncode == 2 and "cannot read the scene" in done.stderr


# ------------------------------------------------------------------ model files
@pytest.fixture(scope="module")
def nd_models(tmp_path_factory):
    """An NDClassifier saved both as a model file and as a joblib pickle."""
    from sknd import NDClassifier

    X, y = _training()
    clf = NDClassifier(max_epochs=2, random_state=0).fit(X, y)
    folder = tmp_path_factory.mktemp("nd_models")
    clf.save_model(folder / "clf.sknd")
    joblib.dump(clf, folder / "clf.joblib")
    return folder / "clf.sknd", folder / "clf.joblib"


@pytest.mark.parametrize("option", [[], ["--proba"]])
def test_model_file_writes_the_map_of_the_pickled_estimator(tmp_path, nd_models, option):
    scene, _ = _scene(tmp_path / "scene.tif", order=BANDS[::-1])
    model_file, pickled = nd_models
    assert run_command([str(model_file), str(scene), str(tmp_path / "a.tif"), *option]) == 0
    assert main([str(pickled), str(scene), str(tmp_path / "b.tif"), *option]) == 0
    from_file, from_pickle = _read(tmp_path / "a.tif"), _read(tmp_path / "b.tif")
    np.testing.assert_array_equal(from_file[0], from_pickle[0])
    assert repr(from_file[1:]) == repr(from_pickle[1:])  # repr: a NaN nodata equals itself
    assert from_file[3]["sknd_model"] == "NDClassifier"  # the estimator's name, not SavedModel


def test_pickles_need_trust_and_damaged_model_files_exit_2(tmp_path, nd_models, capsys):
    scene, _ = _scene(tmp_path / "scene.tif")
    model_file, pickled = nd_models
    out = tmp_path / "out.tif"
    assert run_command([str(pickled), str(scene), str(out)]) == 2
    err = capsys.readouterr().err
    assert "not an sknd model file" in err and "--trust-pickle" in err and not out.exists()
    damaged = tmp_path / "damaged.sknd"
    damaged.write_bytes(model_file.read_bytes()[:-30])
    assert run_command([str(damaged), str(scene), str(out)]) == 2
    assert "is not an sknd model file" in capsys.readouterr().err and not out.exists()
    assert run_command([str(model_file), str(scene), str(out), "--indices"]) == 2
    err = capsys.readouterr().err
    assert "the NDClassifier in" in err and "has no method transform" in err


def test_model_file_command_imports_neither_torch_nor_scikit_learn(tmp_path, nd_models):
    scene, _ = _scene(tmp_path / "scene.tif")
    code = (
        "import sys; from sknd.raster._cli import main; "
        f"code = main([{str(nd_models[0])!r}, {str(scene)!r}, {str(tmp_path / 'out.tif')!r}, "
        "'--no-progress']); "
        "heavy = ('torch', 'skorch', 'sklearn', 'pandas'); "
        "print(code, sorted(m for m in sys.modules if m.split('.')[0] in heavy))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0 []"


def test_small_scenes_skip_numba_and_large_ones_use_it(tmp_path, nd_models, monkeypatch):
    # Below _COMPILED_MIN_PIXELS the command spares itself numba's start-up; the maps agree
    # to float32 rounding (the labels exactly here).
    from sknd._inference import _evaluator
    from sknd.raster import _cli

    pytest.importorskip("numba", reason="the compiled kernels need numba")
    scene, _ = _scene(tmp_path / "scene.tif")
    calls = []
    kernels = _evaluator._compiled_kernels()
    monkeypatch.setattr(_evaluator, "_compiled_kernels", lambda: calls.append(1) or kernels)
    for name, threshold in [("numpy.tif", 10**9), ("numba.tif", 1)]:
        monkeypatch.setattr(_cli, "_COMPILED_MIN_PIXELS", threshold)
        calls.clear()
        assert run_command([str(nd_models[0]), str(scene), str(tmp_path / name), "--proba"]) == 0
        assert bool(calls) == (name == "numba.tif")
    numpy_map, numba_map = _read(tmp_path / "numpy.tif")[0], _read(tmp_path / "numba.tif")[0]
    np.testing.assert_allclose(numpy_map, numba_map, rtol=1e-5, atol=1e-6)


def test_indices_of_a_pickled_classifier(tmp_path):
    from sknd import NDClassifier

    X, y = _training()
    clf = NDClassifier(max_epochs=3, random_state=0).fit(X, y)
    joblib.dump(clf, tmp_path / "clf.joblib")
    scene, table = _scene(tmp_path / "scene.tif")
    out = tmp_path / "indices.tif"
    assert main([str(tmp_path / "clf.joblib"), str(scene), str(out), "--indices"]) == 0
    data, _, _, _ = _read(out)
    expected = clf.transform(table).reshape(40, 30, -1)[5]
    np.testing.assert_allclose(data[:, 5, :].T, expected, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("cog", [[], ["--cog"]])
def test_a_failed_run_keeps_the_map_an_earlier_run_left(tmp_path, nd_models, capsys, cog):
    # A failed --cog run deleted the complete map and its side-car (fuzz3 repro_02).
    scene, _ = _scene(tmp_path / "scene.tif")
    out = tmp_path / "map.tif"
    model = str(nd_models[0])
    assert run_command([model, str(scene), str(out), "--no-progress", *cog]) == 0
    before = out.read_bytes(), (tmp_path / "map.tif.aux.xml").read_bytes()
    with rasterio.open(scene) as src:
        data, profile = src.read(), src.profile
    data[:, -1, :] = -0.5  # refused by the model, in the last strip
    with rasterio.open(tmp_path / "bad.tif", "w", **profile) as dst:
        dst.write(data)
        dst.descriptions = tuple(BANDS)
    argv = [model, str(tmp_path / "bad.tif"), str(out), "--no-progress", "--block-rows", "5"]
    assert run_command(argv + cog) == 2
    assert "scene rows 35-39" in capsys.readouterr().err
    assert (out.read_bytes(), (tmp_path / "map.tif.aux.xml").read_bytes()) == before
    assert not list(tmp_path.glob(".sknd-*"))


def test_a_signal_inside_a_finalizer_stops_the_run(tmp_path, nd_models):
    # The handler's exception was swallowed by the finalizer: the run went on, wrote the map
    # and exited 0, with an 'Exception ignored' traceback (fuzz3 repro_10).
    scene, _ = _scene(tmp_path / "scene.tif")
    out = tmp_path / "out.tif"
    code = f"""
import os, signal, sys
from sknd.raster import _cli
process = _cli._process
class Finalized:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(100000):  # the handler runs here, inside __del__
            pass
def stopped(*args, **kwargs):
    obj = Finalized()
    del obj
    return process(*args, **kwargs)
_cli._process = stopped
sys.exit(_cli.main([{str(nd_models[0])!r}, {str(scene)!r}, {str(out)!r}, "--no-progress"]))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 143, done.stderr
    assert done.stderr.strip() == "python -m sknd.raster: stopped by SIGTERM; no map written."
    assert not out.exists() and not list(tmp_path.glob(".sknd-*"))


def test_success_is_reported_in_one_line_unless_quiet(tmp_path, nd_models, capsys):
    scene, _ = _scene(tmp_path / "scene.tif")
    out = tmp_path / "out.tif"
    assert run_command([str(nd_models[0]), str(scene), str(out), "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert re.fullmatch(
        rf"python -m sknd.raster: wrote {re.escape(str(out))} \(30 x 40 pixels, class map of 3 "
        r"classes, uint8\) in \d+\.\d s\.\n",
        captured.err,
    )
    assert run_command([str(nd_models[0]), str(scene), str(out), "--proba", "--cog"]) == 0
    assert "3 class probability bands, float32, COG)" in capsys.readouterr().err
    assert run_command([str(nd_models[0]), str(scene), str(out), "--quiet"]) == 0
    assert capsys.readouterr() == ("", "")
