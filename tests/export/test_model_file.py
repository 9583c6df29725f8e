"""Tests of sknd model files (sknd/_model_file/): save_model, load_model, SavedModel."""

import io
import json
import os
import pickle
import subprocess
import sys
import zipfile

import numpy as np
import pandas as pd
import pytest

import sknd
from sknd import NDClassifier, NDRegressor, NDTransformer, raster
from sknd._model_file import FORMAT_VERSION, SavedModel

FAST = {"max_epochs": 3, "random_state": 0}
BANDS = ["blue", "green", "red", "nir"]


# What this module's tests draw from conftest's band_data, after the sample and band counts.
DATA = {"low": 0.02, "high": 0.6, "pair": (-1, -2), "cuts": (-0.2, 0.2)}


def _pixels(n=3000, n_bands=4, dtype=np.float64, seed=5):
    return np.random.default_rng(seed).uniform(0.01, 0.6, size=(n, n_bands)).astype(dtype)


def _round_trip(estimator, tmp_path, name="model.sknd"):
    path = tmp_path / name
    estimator.save_model(path)
    return sknd.load_model(path)


def _targets(X, y, kind):
    return {
        "multiclass": y,
        "binary": np.array(["dry", "wet"])[(y > 0).astype(int)],
        "objects": np.array(["soil", "veg", "water"], dtype=object)[y],
        "integers": y * 100 - 7,
        "regression": X[:, 0] + X[:, -1],
        "multi-output": np.column_stack([X[:, 0], X[:, -1] - X[:, 1]]),
        "constant": np.full(len(X), 3.5),
    }[kind]


CLASSIFIERS = [
    ({}, "binary"),
    ({}, "multiclass"),
    ({"depth": 3}, "objects"),
    ({"architecture": "attnd"}, "integers"),
    ({"architecture": "mlp"}, "multiclass"),
    ({"variant": "signed"}, "binary"),
    ({"variant": "softplus", "depth": 3}, "multiclass"),
    ({"passthrough": True, "architecture": "attnd", "depth": 3}, "binary"),
    ({"passthrough": True, "architecture": "mlp"}, "multiclass"),
]


@pytest.mark.parametrize(("params", "target"), CLASSIFIERS)
def test_classifier_file_predicts_as_the_estimator(
    tmp_path, params, target, implementation, band_data
):
    X, y = band_data(160, 4, **DATA)
    clf = NDClassifier(**params, **FAST).fit(X, _targets(X, y, target))
    model = _round_trip(clf, tmp_path)
    pixels = _pixels()
    labels, proba = model.predict(pixels), model.predict_proba(pixels)
    # Bit for bit the values of the estimator's methods and of sknd.raster with it.
    np.testing.assert_array_equal(labels, raster.predict(clf, pixels))
    np.testing.assert_array_equal(proba, raster.predict_proba(clf, pixels, dtype=np.float64))
    expected = clf.predict(pixels)
    assert labels.dtype == expected.dtype
    np.testing.assert_array_equal(labels, expected)
    np.testing.assert_array_equal(proba, clf.predict_proba(pixels))
    np.testing.assert_array_equal(model.classes_, clf.classes_)
    assert model.classes_.dtype == clf.classes_.dtype


@pytest.mark.parametrize("target", ["regression", "multi-output", "constant"])
@pytest.mark.parametrize("params", [{}, {"architecture": "attnd", "depth": 3}])
def test_regressor_file_predicts_as_the_estimator(
    tmp_path, params, target, implementation, band_data
):
    X, y = band_data(160, 4, **DATA)
    reg = NDRegressor(**params, **FAST).fit(X, _targets(X, y, target))
    model = _round_trip(reg, tmp_path)
    pixels = _pixels()
    got = model.predict(pixels)
    np.testing.assert_array_equal(got, raster.predict(reg, pixels))
    expected = reg.predict(pixels)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    assert not hasattr(model, "predict_proba") and not hasattr(model, "transform")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("params", [{}, {"n_indices": 3, "variant": "signed"}])
def test_transformer_file_transforms_as_the_estimator(
    tmp_path, params, dtype, implementation, band_data
):
    X, y = band_data(160, 4, **DATA)
    transformer = NDTransformer(**params, bands=BANDS, **FAST).fit(X, y)
    model = _round_trip(transformer, tmp_path)
    pixels = _pixels(dtype=dtype)
    got = model.transform(pixels)
    np.testing.assert_array_equal(got, raster.transform(transformer, pixels, bands="positional"))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, transformer.transform(pixels))
    names = transformer.get_feature_names_out()
    np.testing.assert_array_equal(model.get_feature_names_out(), names)
    renamed = ["b", "g", "r", "n"]
    np.testing.assert_array_equal(
        model.get_feature_names_out(renamed), transformer.get_feature_names_out(renamed)
    )
    assert not hasattr(model, "predict")


def test_attributes_follow_the_estimator(tmp_path, band_data):
    X, y = band_data(160, 4, **DATA)
    frame = pd.DataFrame(X, columns=["B02", "B03", "B04", "B08"])
    clf = NDClassifier(sensor="sentinel2", random_state=np.random.RandomState(0), max_epochs=2)
    clf.fit(frame, y)
    model = _round_trip(clf, tmp_path)
    assert model.estimator == "NDClassifier" and model.sknd_version == sknd.__version__
    assert model.n_features_in_ == 4 and model.sensor == "sentinel2"
    np.testing.assert_array_equal(model.feature_names_in_, clf.feature_names_in_)
    np.testing.assert_array_equal(model.band_names_, clf.band_names_)
    assert model.bands_ == clf.bands_
    assert (model.epsilon_, model.variant_) == (clf.epsilon_, clf.variant_)
    params = clf.get_params()
    assert model.params["random_state"] is None  # a RandomState: not kept
    assert model.params["max_epochs"] == params["max_epochs"] == 2
    assert repr(model) == "SavedModel(NDClassifier, 4 bands, classes [0, 1, 2])"
    # A DataFrame's columns are checked as the estimator checks them.
    np.testing.assert_array_equal(model.predict(frame), clf.predict(frame))
    with pytest.raises(ValueError, match="not the bands"):
        model.predict(frame[["B03", "B02", "B04", "B08"]])
    # Without a DataFrame at fit there are no feature names.
    plain = _round_trip(NDClassifier(**FAST).fit(X, y), tmp_path, "plain.sknd")
    assert not hasattr(plain, "feature_names_in_")


def test_raster_matches_bands_of_a_model_file_as_of_the_estimator(tmp_path, band_data):
    xr = pytest.importorskip("xarray")
    X, y = band_data(160, 4, **DATA)
    clf = NDClassifier(bands=["B02", "B03", "B04", "B08"], sensor="sentinel2", **FAST).fit(X, y)
    model = _round_trip(clf, tmp_path)
    image = xr.DataArray(
        _pixels(n=60).reshape(6, 10, 4)[..., ::-1].transpose(2, 0, 1),
        dims=("band", "y", "x"),
        coords={"band": ["B08", "B04", "B03", "B02"]},
    )
    got = raster.predict_proba(model, image)
    xr.testing.assert_identical(got, raster.predict_proba(clf, image))
    # Landsat 8 names through the sensor presets, with the same warning.
    landsat = image.assign_coords(band=["B5", "B4", "B3", "B2"])
    with pytest.warns(sknd.bands.BandMatchWarning, match="sentinel2"):
        got = raster.predict(model, landsat, sensor="landsat8")
    with pytest.warns(sknd.bands.BandMatchWarning):
        expected = raster.predict(clf, landsat, sensor="landsat8")
    xr.testing.assert_identical(got, expected)
    # A scene without the model's bands is refused with the estimator's message.
    missing = image.assign_coords(band=["B08", "B04", "B03", "B11"])
    with pytest.raises(ValueError) as from_model:
        raster.predict(model, missing)
    with pytest.raises(ValueError) as from_estimator:
        raster.predict(clf, missing)
    assert str(from_model.value).replace("SavedModel", "NDClassifier") == str(from_estimator.value)


def test_bad_input_is_refused_as_by_the_estimator(tmp_path, band_data):
    X, y = band_data(160, 4, **DATA)
    clf = NDClassifier(**FAST).fit(X, y)
    model = _round_trip(clf, tmp_path)
    bad = X[:5].copy()
    bad[2, 1] = -0.5
    for estimator in (clf, model):
        with pytest.raises(ValueError, match="Negative values"):
            estimator.predict(bad)
        with pytest.raises(ValueError, match="NaN"):
            estimator.predict(np.where(bad < 0, np.nan, bad))
        with pytest.raises(ValueError, match="3 features"):
            estimator.predict(X[:, :3])
        with pytest.raises(ValueError, match="0 sample"):
            estimator.predict(X[:0])
    with pytest.raises(ValueError, match="2D array"):
        model.predict(X[0])
    with pytest.raises(ValueError, match="numbers"):
        model.predict(np.array([["a", "b", "c", "d"]]))
    sparse = pytest.importorskip("scipy.sparse")
    with pytest.raises(TypeError, match="toarray"):
        model.predict(sparse.csr_matrix(X))
    # Integers are band values too, as for the estimator.
    counts = (X[:7] * 1000).astype(np.int32)
    np.testing.assert_array_equal(model.predict(counts), clf.predict(counts))


def test_scenes_far_outside_the_training_range_warn_as_with_the_estimator(tmp_path, band_data):
    X, y = band_data(160, 4, **DATA)
    clf = NDClassifier(passthrough=True, **FAST).fit(X, y)
    model = _round_trip(clf, tmp_path)
    np.testing.assert_array_equal(model._fields["band_range"], clf.band_range_)
    counts = X[:20] * 10_000  # digital numbers for a model fitted on reflectance
    for estimator in (clf, model):
        with pytest.warns(UserWarning, match="far outside"):
            estimator.predict(counts)
        with pytest.warns(UserWarning, match="far outside"):
            raster.predict(estimator, counts.reshape(4, 5, 4))
    # An ND network takes digital numbers as it takes reflectance: nothing kept, no warning.
    plain = _round_trip(NDClassifier(**FAST).fit(X, y), tmp_path, "plain.sknd")
    assert plain._fields["band_range"] is None
    np.testing.assert_array_equal(plain.predict(counts), plain.predict(X[:20]))


def test_pickle_carries_the_file_and_checks_it_again(tmp_path, band_data):
    X, y = band_data(160, 4, **DATA)
    model = _round_trip(NDClassifier(**FAST).fit(X, y), tmp_path)
    copy = pickle.loads(pickle.dumps(model))
    assert isinstance(copy, SavedModel)
    np.testing.assert_array_equal(copy.predict_proba(X), model.predict_proba(X))
    reduced = model.__reduce__()
    assert reduced[1] == ((tmp_path / "model.sknd").read_bytes(),)


def test_save_writes_all_or_nothing(tmp_path, monkeypatch, band_data):
    from sklearn.exceptions import NotFittedError

    X, y = band_data(160, 4, **DATA)
    clf = NDClassifier(**FAST).fit(X, y)
    path = tmp_path / "model.sknd"
    with pytest.raises(NotFittedError):
        NDClassifier().save_model(path)
    clf.save_model(path)
    before = path.read_bytes()

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np.lib.format, "write_array", fail)
    with pytest.raises(OSError, match="disk full"):
        NDRegressor(**FAST).fit(X, X[:, 0]).save_model(path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.sknd"]  # no temporary file left
    with pytest.raises(FileNotFoundError):
        clf.save_model(tmp_path / "no_such_folder" / "model.sknd")


# A fresh process (import checks): behind the slow marker.
@pytest.mark.slow
def test_loading_imports_neither_torch_nor_scikit_learn(tmp_path, band_data):
    X, y = band_data(160, 4, **DATA)
    NDClassifier(bands=BANDS, **FAST).fit(X, y).save_model(tmp_path / "model.sknd")
    code = f"""
import sys
import numpy as np
import sknd
from sknd import raster
model = sknd.load_model({str(tmp_path / "model.sknd")!r})
pixels = np.full((5, 6, 4), 0.3)
raster.predict(model, pixels, bands=["blue", "green", "red", "nir"])
raster.predict_proba(model, pixels, bands="positional")
model.predict(pixels[0])
heavy = ("torch", "skorch", "sklearn", "pandas")
print(sorted(name for name in sys.modules if name.split(".")[0] in heavy))
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# ------------------------------------------------------------------ hostile files
@pytest.fixture(scope="module")
def saved(tmp_path_factory, band_data):
    """The bytes of a depth-3 AttND classifier's file, its metadata and its arrays."""
    X, y = band_data(160, 4, **DATA)
    clf = NDClassifier(architecture="attnd", depth=3, passthrough=True, **FAST).fit(X, y)
    path = tmp_path_factory.mktemp("model") / "model.sknd"
    clf.save_model(path)
    content = path.read_bytes()
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        metadata = json.loads(archive.read("model.json"))
        members = {name: archive.read(name) for name in archive.namelist()}
    return content, metadata, members


def _zip(metadata, members, **replace):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in {**members, **replace}.items():
            if name == "model.json" and "model.json" not in replace:
                data = json.dumps(metadata).encode()
            if data is not None:
                archive.writestr(name, data)
    return buffer.getvalue()


def _load_bytes(tmp_path, content):
    path = tmp_path / "candidate.sknd"
    path.write_bytes(content)
    return sknd.load_model(path)


def _npy(array, allow_pickle=False):
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=allow_pickle)
    return buffer.getvalue()


def _huge_npy():
    """A .npy header announcing 10**11 float64 values, followed by 6 of them."""
    buffer = io.BytesIO()
    header = {"descr": "<f8", "fortran_order": False, "shape": (10**11,)}
    np.lib.format.write_array_header_1_0(buffer, header)
    return buffer.getvalue() + np.zeros(6).tobytes()


def _unclosed_header_npy():
    """A .npy whose header dict is cut short: numpy's fallback parse raises tokenize's
    TokenError, not a ValueError."""
    header = b"{'descr': '<f8', 'fortran_order': False, 'shape': (6,), u"
    header += b" " * (-(len(header) + 11) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + bytes(48)


class _Payload:
    """Unpickling it would create a file: proof that code ran."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_hostile_and_malformed_files_are_refused(tmp_path, saved):
    content, metadata, members = saved
    marker = tmp_path / "code_ran"
    pickled = np.empty(1, dtype=object)
    pickled[0] = _Payload(str(marker))
    network = metadata["network"]
    first_array = network[0]["inner"][0]["nd"]["a"]["array"]
    cases = {
        "not a zip": (b"\x80\x04K\x01.", "not a zip archive"),
        "empty": (b"", "not a zip archive"),
        "truncated": (content[: len(content) - 40], "not a zip archive"),
        "no metadata": (_zip(metadata, members, **{"model.json": None}), "no model.json"),
        "bad json": (_zip(metadata, members, **{"model.json": b"{"}), "not valid JSON"),
        "json NaN": (
            _zip(metadata, members, **{"model.json": b'{"format": NaN}'}),
            "which JSON does not allow",
        ),
        "not a dict": (_zip(metadata, members, **{"model.json": b"[1]"}), '"format"'),
        "newer version": (
            _zip({**metadata, "format_version": FORMAT_VERSION + 1}, members),
            f"format version {FORMAT_VERSION + 1}",
        ),
        "wrong format": (_zip({**metadata, "format": "onnx"}, members), '"format"'),
        "unknown estimator": (_zip({**metadata, "estimator": "os.system"}, members), "estimator"),
        "unknown field": (_zip({**metadata, "extra": 1}, members), "unknown fields"),
        "missing field": (
            _zip({k: v for k, v in metadata.items() if k != "bands"}, members),
            "bands",
        ),
        "bad variant": (_zip({**metadata, "variant": "raw"}, members), "variant"),
        "zero epsilon": (_zip({**metadata, "epsilon": 0}, members), "epsilon"),
        "too few bands": (_zip({**metadata, "n_features_in": 3}, members), "3"),
        "unknown layer": (
            _zip({**metadata, "network": [{"kind": "conv"}] + network[1:]}, members),
            "known kind",
        ),
        "pickled array": (
            _zip(metadata, members, **{f"arrays/{first_array}.npy": _npy(pickled, True)}),
            "dtype object",
        ),
        "float32 weights": (
            _zip(
                metadata,
                members,
                **{f"arrays/{first_array}.npy": _npy(np.zeros(4, dtype=np.float32))},
            ),
            "float32",
        ),
        "wrong shape": (
            _zip(metadata, members, **{f"arrays/{first_array}.npy": _npy(np.zeros(5))}),
            "shape (5,)",
        ),
        "NaN weight": (
            _zip(metadata, members, **{f"arrays/{first_array}.npy": _npy(np.full(6, np.nan))}),
            "NaN",
        ),
        "huge header": (
            _zip(metadata, members, **{f"arrays/{first_array}.npy": _huge_npy()}),
            "header announces 800000000000",
        ),
        "unparsable header": (
            _zip(metadata, members, **{f"arrays/{first_array}.npy": _unclosed_header_npy()}),
            "not a numpy .npy array",
        ),
        "missing array": (
            _zip(metadata, members, **{f"arrays/{first_array}.npy": None}),
            "which the file lacks",
        ),
        "extra file": (_zip(metadata, members, **{"run.py": b"print(1)"}), "unexpected file"),
        "extra array": (
            _zip(metadata, members, **{"arrays/spare.npy": _npy(np.zeros(2))}),
            "no field",
        ),
    }
    for case, (candidate, message) in cases.items():
        with pytest.raises(ValueError, match="sknd model file") as error:
            _load_bytes(tmp_path, candidate)
        assert message in str(error.value), (case, str(error.value))
    assert not marker.exists()
    with pytest.raises(ValueError, match="cannot read"):
        sknd.load_model(tmp_path / "missing.sknd")


def test_every_truncation_and_byte_flip_is_refused_or_harmless(tmp_path, saved):
    content = saved[0]
    X = _pixels(n=50)
    reference = _load_bytes(tmp_path, content).predict_proba(X)
    for end in range(0, len(content), max(1, len(content) // 300)):
        with pytest.raises(ValueError, match="sknd model file"):
            _load_bytes(tmp_path, content[:end])
    rng = np.random.default_rng(0)
    for position in rng.choice(len(content), size=300, replace=False):
        damaged = bytearray(content)
        damaged[position] ^= 1 << int(rng.integers(8))
        try:
            model = _load_bytes(tmp_path, bytes(damaged))
        except ValueError as exc:
            assert "sknd model file" in str(exc)
        else:  # a bit of the zip's bookkeeping (e.g. a timestamp): the model is intact
            np.testing.assert_array_equal(model.predict_proba(X), reference)


def test_random_edits_of_the_metadata_are_refused_or_valid(tmp_path, saved):
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import strategies as st

    _, metadata, members = saved
    values = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 40),
        st.floats(allow_nan=False),
        st.text(max_size=5),
        st.lists(st.integers(0, 5), max_size=3),
        st.fixed_dictionaries({"array": st.sampled_from(sorted(members))}),
    )

    def paths(value, prefix=()):
        yield prefix
        if isinstance(value, dict):
            for key, item in value.items():
                yield from paths(item, prefix + (key,))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                yield from paths(item, prefix + (i,))

    all_paths = [path for path in paths(metadata) if path]

    @hypothesis.settings(derandomize=True, max_examples=150, deadline=None)
    @hypothesis.given(path=st.sampled_from(all_paths), value=values)
    def check(path, value):
        edited = json.loads(json.dumps(metadata))
        target = edited
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        try:
            model = _load_bytes(tmp_path, _zip(edited, members))
        except ValueError as exc:
            assert "sknd model file" in str(exc)
        else:
            model.predict_proba(_pixels(n=10))

    check()


# ------------------------------------------------------ third fuzz campaign (fuzz3)
def _replaced(members, suffix, array):
    key = next(name for name in members if name.endswith(suffix))
    return {key: _npy(array)}


def test_a_member_larger_than_its_header_is_refused_before_it_is_read(tmp_path, saved):
    # A 257 KB file inflated 256 MB of zeros before its header was compared (repro_06).
    import tracemalloc

    _, metadata, members = saved
    key = next(name for name in members if name.endswith(".a.npy"))
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (6,)}
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            if name != key:
                archive.writestr(name, data)
        with archive.open(key, "w", force_zip64=True) as file:
            file.write(header.getvalue())
            for _ in range(64):
                file.write(bytes(2**20))
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="where its header announces 48"):
            _load_bytes(tmp_path, buffer.getvalue())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20  # the 64 MB member is never decompressed


@pytest.mark.parametrize(
    ("suffix", "value"), [(".weight.npy", 1e308), (".scale.npy", 1e-320), (".a.npy", 0.1)]
)
def test_weights_no_writer_produces_are_refused(tmp_path, saved, suffix, value):
    # Finite weights beyond float32 and a denormal scale loaded and gave NaN probabilities
    # (repro_07); 0.1 is no float32 value either.
    _, metadata, members = saved
    key = next(name for name in members if name.endswith(suffix))
    array = np.full_like(np.load(io.BytesIO(members[key])), value)
    with pytest.raises(ValueError, match="holds values no sknd writes"):
        _load_bytes(tmp_path, _zip(metadata, members, **{key: _npy(array)}))


def test_non_finite_outputs_are_refused_as_by_the_estimator(tmp_path, saved):
    _, metadata, members = saved
    model = _load_bytes(tmp_path, _zip(metadata, members))
    # Weights the reader refuses, set behind its back: the last line of defence holds.
    layers = model._fields["network"]
    layers[-1]["weight"][::2] = 1e308
    layers[-1]["weight"][1::2] = -1e308
    with np.errstate(all="ignore"), pytest.raises(ValueError, match="non-finite network"):
        model.predict_proba(_pixels(n=3))


@pytest.mark.parametrize("field", ["epsilon", "wavelength"])
def test_huge_json_integers_are_a_value_error(tmp_path, saved, field):
    # 10**400 raised a bare OverflowError (repro_14).
    _, metadata, members = saved
    edited = json.loads(json.dumps(metadata))
    if field == "epsilon":
        edited["epsilon"] = 10**400
    else:
        edited["bands"][0]["wavelength"] = 10**400
    with pytest.raises(ValueError, match="not a positive number"):
        _load_bytes(tmp_path, _zip(edited, members))


def test_an_unknown_sensor_preset_matches_by_common_name(tmp_path, band_data):
    # A preset of a newer sknd raised a bare KeyError in sknd.raster (repro_09).
    X, y = band_data(160, 4, **DATA)
    clf = NDClassifier(bands=["B2", "B3", "B4", "B8"], sensor="sentinel2", **FAST).fit(X, y)
    clf.save_model(tmp_path / "model.sknd")
    with zipfile.ZipFile(tmp_path / "model.sknd") as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    metadata = json.loads(members["model.json"])
    for band in metadata["bands"]:
        band["sensor"] = "sentinel3"
    model = _load_bytes(tmp_path, _zip(metadata, members))
    image = _pixels(n=12).reshape(3, 4, 4)
    with pytest.warns(UserWarning, match="common name"):
        labels = raster.predict(model, image, bands=["B02", "B03", "B04", "B08"])
    np.testing.assert_array_equal(labels.reshape(-1), clf.predict(image.reshape(-1, 4)))


def test_files_get_the_umask_mode_and_bytes_paths_work(tmp_path, band_data):
    # mkstemp's 0600 whatever the umask (repro_15); a bytes path raised tempfile's TypeError
    # (repro_18a).
    X, y = band_data(160, 4, **DATA)
    clf = NDClassifier(**FAST).fit(X, y)
    previous = os.umask(0o027)
    try:
        clf.save_model(tmp_path / "new.sknd")
        (tmp_path / "shared.sknd").write_bytes(b"")
        os.chmod(tmp_path / "shared.sknd", 0o644)
        clf.save_model(os.fsencode(tmp_path / "shared.sknd"))
    finally:
        os.umask(previous)
    assert (tmp_path / "new.sknd").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "shared.sknd").stat().st_mode & 0o777 == 0o644
    np.testing.assert_array_equal(
        sknd.load_model(tmp_path / "shared.sknd").predict(X), clf.predict(X)
    )
    assert sorted(os.listdir(tmp_path)) == ["new.sknd", "shared.sknd"]


def test_the_documentation_describes_every_field_of_the_format():
    import pathlib

    from sknd._model_file import _format

    page = (pathlib.Path(__file__).parents[2] / "docs" / "model_files.md").read_text()
    fields = set(_format.COMMON_FIELDS + _format.BAND_FIELDS + _format.TARGET_FIELDS)
    for names in (*_format.ESTIMATOR_FIELDS.values(), *_format.LAYER_FIELDS.values()):
        fields.update(names)
    fields.update(_format.LAYER_FIELDS)
    missing = sorted(name for name in fields if f"`{name}`" not in page)
    assert missing == []
    assert f"(version {_format.FORMAT_VERSION})" in page


def test_a_file_written_before_the_package_moves_loads_and_predicts_as_it_did():
    # Written by commit bb4425f (sknd 0.1.0.dev0, before the private modules moved into stage
    # packages): NDClassifier(max_epochs=5, random_state=0) on forest type, then save_model.
    # The outputs below are that commit's, on this machine; here the same evaluator reads the
    # same file, but another CPU may round the float64 sums differently (a few ulps).
    from sknd.datasets import load_forest_type

    X, _ = load_forest_type(return_X_y=True)
    model = sknd.load_model(
        os.path.join(os.path.dirname(__file__), os.pardir, "data", "model_bb4425f.sknd")
    )
    rows = np.asarray(X)[:5]
    np.testing.assert_array_equal(model.predict(rows), model.classes_[[0, 1, 3, 3, 0]])
    expected = [
        [
            8.7902666179900923e-01,
            8.1494045519367583e-04,
            1.0404439916186289e-01,
            1.6113998583934166e-02,
        ],
        [
            2.9582728262245051e-03,
            7.7280677751621663e-01,
            8.7501898676319565e-04,
            2.2335993067079557e-01,
        ],
        [
            8.0678115238405294e-03,
            2.9566967168502146e-02,
            1.4036224522384815e-03,
            9.6096159885541899e-01,
        ],
        [
            7.5406860870118582e-03,
            1.6101015860650347e-01,
            1.5521366743334901e-03,
            8.2989701863215126e-01,
        ],
        [
            9.3370206171767633e-01,
            6.7150641865758613e-04,
            5.6163834812390581e-02,
            9.4625970512755148e-03,
        ],
    ]
    np.testing.assert_allclose(model.predict_proba(rows), expected, rtol=1e-9, atol=1e-15)
