"""Tests of sknd.raster: numpy, xarray and dask images through fitted estimators."""

import json
import shutil
import subprocess
import sys
import threading
import warnings
from xml.etree import ElementTree

import numpy as np
import pandas as pd
import pytest
from band_images import DATA, band_image, fit_on_bands, pixel_classifier
from raster_files import write_geotiff
from sklearn.decomposition import PCA
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sknd import NDClassifier, NDTransformer, raster
from sknd.bands import BandMatchWarning

# xarray and dask (the raster extra) are optional: without them this module is skipped.
dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
xr = pytest.importorskip("xarray")

BANDS = ["blue", "green", "red", "nir"]


@pytest.fixture(scope="module")
def clf(band_data):
    return pixel_classifier(band_data)


@pytest.fixture(scope="module")
def named_clf(band_data):
    X, y = band_data(300, 4, **DATA)
    return LogisticRegression().fit(pd.DataFrame(X, columns=BANDS), y)


@pytest.fixture(scope="module")
def string_clf(band_data):
    X, y = band_data(300, 4, **DATA)
    return LogisticRegression().fit(X, np.array(["soil", "water", "vegetation"])[y])


@pytest.fixture(scope="module")
def pca(band_data):
    X, _ = band_data(300, 4, **DATA)
    return PCA(n_components=2).fit(X)


class CountingClassifier(LogisticRegression):
    """Records the number of rows of every predict/predict_proba call."""

    def fit(self, X, y):
        self.calls_ = []
        self._lock = threading.Lock()
        return super().fit(X, y)

    def _record(self, X):
        with self._lock:
            self.calls_.append(len(X))

    def predict(self, X):
        self._record(X)
        return super().predict(X)

    def predict_proba(self, X):
        self._record(X)
        return super().predict_proba(X)


# ------------------------------------------------------------------------ numpy
@pytest.mark.parametrize("chunk_pixels", [1, 7, 64, raster.DEFAULT_CHUNK_PIXELS])
@pytest.mark.parametrize("n_jobs", [None, 2])
def test_numpy_matches_estimator_on_flattened_pixels(clf, pca, chunk_pixels, n_jobs):
    image = band_image()
    table = image.reshape(-1, 4)
    kwargs = {"chunk_pixels": chunk_pixels, "n_jobs": n_jobs}

    labels = raster.predict(clf, image, fill_value=-1, **kwargs)
    assert labels.shape == (9, 11)
    assert labels.dtype == clf.classes_.dtype
    np.testing.assert_array_equal(labels.ravel(), clf.predict(table))
    # Without fill_value integer labels are promoted to float64 (room for NaN).
    default = raster.predict(clf, image, **kwargs)
    assert default.dtype == np.float64
    np.testing.assert_array_equal(default, labels)

    proba = raster.predict_proba(clf, image, **kwargs)
    assert proba.shape == (9, 11, 3)
    np.testing.assert_allclose(proba.reshape(-1, 3), clf.predict_proba(table))

    features = raster.transform(pca, image, **kwargs)
    assert features.shape == (9, 11, 2)
    np.testing.assert_allclose(features.reshape(-1, 2), pca.transform(table))


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 5), (2, 1, 3, 2)])
def test_numpy_any_number_of_pixel_axes(clf, shape):
    image = band_image(shape)
    proba = raster.predict_proba(clf, image, chunk_pixels=4)
    assert proba.shape == shape + (3,)
    np.testing.assert_allclose(proba.reshape(-1, 3), clf.predict_proba(image.reshape(-1, 4)))


def test_numpy_single_pixel(clf):
    pixel = band_image(())
    assert pixel.shape == (4,)
    assert raster.predict(clf, pixel).shape == ()
    assert raster.predict(clf, pixel) == clf.predict(pixel[None])[0]


def test_numpy_band_axis_first(clf):
    image = band_image((6, 7))
    band_first = np.ascontiguousarray(np.moveaxis(image, -1, 0))  # rasterio layout
    np.testing.assert_array_equal(
        raster.predict(clf, band_first, band_dim=0), raster.predict(clf, image)
    )
    proba = raster.predict_proba(clf, band_first, band_dim=0, chunk_pixels=5)
    assert proba.shape == (3, 6, 7)
    np.testing.assert_allclose(np.moveaxis(proba, 0, -1), raster.predict_proba(clf, image))


def test_float32_image(clf, pca):
    image = band_image(dtype=np.float32)
    table = image.reshape(-1, 4)
    np.testing.assert_array_equal(raster.predict(clf, image).ravel(), clf.predict(table))
    features = raster.transform(pca, image)
    np.testing.assert_allclose(features.reshape(-1, 2), pca.transform(table), rtol=1e-5)


def test_pipeline(clf, band_data):
    X, y = band_data(300, 4, **DATA)
    pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    image = band_image()
    np.testing.assert_array_equal(
        raster.predict(pipe, image).ravel(), pipe.predict(image.reshape(-1, 4))
    )


def test_multi_output_regressor(band_data):
    X, _ = band_data(300, 4, **DATA)
    reg = LinearRegression().fit(X, np.column_stack([X.sum(1), X[:, 0] - X[:, 1]]))
    image = band_image()
    out = raster.predict(reg, image)
    assert out.shape == (9, 11, 2)
    np.testing.assert_allclose(out.reshape(-1, 2), reg.predict(image.reshape(-1, 4)))


# ---------------------------------------------------------------------- no-data
def _with_nodata(image, value=np.nan):
    image = image.copy()
    image[0, 0, :] = value  # every band missing
    image[2, 3, 1] = value  # one band missing
    return image


def test_nan_pixels_come_out_nan(clf, pca):
    image = _with_nodata(band_image())
    proba = raster.predict_proba(clf, image)
    features = raster.transform(pca, image)
    for out in (proba, features):
        assert np.isnan(out[0, 0]).all() and np.isnan(out[2, 3]).all()
        assert np.isnan(out).any(axis=-1).sum() == 2
    valid = ~np.isnan(image).any(axis=-1)
    np.testing.assert_allclose(proba[valid], clf.predict_proba(image[valid]))

    labels = raster.predict(clf, image)
    # Integer classes cannot hold NaN: promoted to float64 unless a fill value is given.
    assert labels.dtype == np.float64
    assert np.isnan(labels[0, 0]) and np.isnan(labels[2, 3])
    np.testing.assert_array_equal(labels[valid], clf.predict(image[valid]))


def test_fill_value_keeps_label_dtype(clf, string_clf):
    image = _with_nodata(band_image())
    labels = raster.predict(clf, image, fill_value=-1)
    assert labels.dtype == clf.classes_.dtype
    assert labels[0, 0] == -1 and labels[2, 3] == -1

    names = raster.predict(string_clf, image, fill_value="nodata")
    assert names.dtype.kind == "U"
    assert names[0, 0] == "nodata"
    assert set(np.unique(names)) <= set(string_clf.classes_) | {"nodata"}

    # String labels and the default fill: an object array holding NaN.
    default = raster.predict(string_clf, image)
    assert default.dtype == object and pd.isna(default[0, 0]) and pd.isna(default[2, 3])
    lazy = raster.predict(string_clf, da.from_array(image, chunks=(4, 4, 4))).compute()
    assert lazy.dtype == object
    np.testing.assert_array_equal(pd.isna(lazy), pd.isna(default))
    np.testing.assert_array_equal(lazy[~pd.isna(lazy)], default[~pd.isna(default)])
    assert default[1, 1] in string_clf.classes_

    proba = raster.predict_proba(clf, image, fill_value=0.0)
    assert (proba[0, 0] == 0).all()


def test_fill_value_equal_to_a_class_is_refused(clf, string_clf):
    image = _with_nodata(band_image())
    with pytest.raises(ValueError, match=r"fill_value 2 is one of the classes \[0, 1, 2\]"):
        raster.predict(clf, image, fill_value=2)
    with pytest.raises(ValueError, match="one of the classes"):
        raster.predict(clf, image, fill_value=1.0)  # the same label as a float
    with pytest.raises(ValueError, match="one of the classes"):
        raster.predict(string_clf, image, fill_value="soil")
    # The probabilities and other labels' kinds do not collide.
    raster.predict_proba(clf, image, fill_value=1.0)
    assert raster.predict(string_clf, image, fill_value=0)[0, 0] == 0


def test_nodata_value_on_integer_image(band_data):
    X, y = band_data(300, 4, **DATA)
    X = np.round(X * 10_000)
    clf = LogisticRegression(max_iter=1000).fit(X, y)
    image = np.round(band_image() * 10_000).astype(np.uint16)
    image[4, 5, 2] = 0
    labels = raster.predict(clf, image, nodata=0, fill_value=255)
    assert labels[4, 5] == 255
    valid = (image != 0).all(axis=-1)
    np.testing.assert_array_equal(labels[valid], clf.predict(image[valid]))


def test_all_nodata_chunk_does_not_call_estimator(band_data):
    X, y = band_data(300, 4, **DATA)
    clf = CountingClassifier().fit(X, y)
    image = band_image((4, 8))
    image[:2] = np.nan  # the first chunk of 16 pixels is empty
    clf.calls_.clear()
    proba = raster.predict_proba(clf, image, chunk_pixels=16)
    assert np.isnan(proba[:2]).all() and not np.isnan(proba[2:]).any()
    assert clf.calls_[1:] == [16]  # after the two-pixel probe: only the valid chunk


def test_infinite_values_reach_the_estimator(clf):
    image = band_image()
    image[1, 1, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        raster.predict(clf, image)


# ------------------------------------------------------------------------ xarray
def _dataarray(dims=("band", "y", "x"), shape=(9, 11), bands=BANDS, seed=1):
    values = np.moveaxis(band_image(shape, len(bands), seed), -1, dims.index("band"))
    coords = {
        "band": bands,
        "y": np.linspace(50.0, 49.0, shape[0]),
        "x": np.linspace(4.0, 5.0, shape[1]),
        "spatial_ref": 0,
        "wavelength": ("band", np.arange(len(bands)) * 100.0),
        "lat": (("y", "x"), np.zeros(shape)),
    }
    return xr.DataArray(values, dims=dims, coords=coords, attrs={"units": "reflectance"})


@pytest.mark.parametrize("dims", [("band", "y", "x"), ("y", "x", "band"), ("y", "band", "x")])
def test_dataarray_band_dim_in_any_position(clf, dims):
    image = _dataarray(dims)
    table = image.transpose("y", "x", "band").values.reshape(-1, 4)

    labels = raster.predict(clf, image)
    assert labels.dims == ("y", "x")
    np.testing.assert_array_equal(labels.values.ravel(), clf.predict(table))

    proba = raster.predict_proba(clf, image)
    # The class dimension takes the place of the band dimension.
    assert proba.dims == tuple("class" if d == "band" else d for d in dims)
    assert proba["class"].values.tolist() == clf.classes_.tolist()
    np.testing.assert_allclose(
        proba.transpose("y", "x", "class").values.reshape(-1, 3), clf.predict_proba(table)
    )
    for out in (labels, proba):
        xr.testing.assert_identical(out["y"], image["y"])
        xr.testing.assert_identical(out["x"], image["x"])
        xr.testing.assert_identical(out["lat"], image["lat"])
        assert "spatial_ref" in out.coords
        assert "band" not in out.coords and "wavelength" not in out.coords
        assert out.attrs["long_name"] == ("class" if out is labels else ("0", "1", "2"))


def test_dataarray_custom_dim_names(clf, pca):
    image = _dataarray().rename({"band": "wl"})
    with pytest.raises(ValueError, match="no dimension 'band'"):
        raster.predict(clf, image)
    features = raster.transform(pca, image, band_dim="wl", output_dim="component")
    assert features.dims == ("component", "y", "x")
    assert features["component"].values.tolist() == pca.get_feature_names_out().tolist()
    same_name = raster.transform(pca, image, band_dim="wl", output_dim="wl")
    assert same_name.dims == ("wl", "y", "x")
    with pytest.raises(ValueError, match="already a dimension"):
        raster.transform(pca, image, band_dim="wl", output_dim="x")


def test_dataarray_bands_reordered_by_name(named_clf):
    image = _dataarray()
    shuffled = xr.concat(
        [image.sel(band=["nir", "red"]), image.sel(band=["blue", "green"])], dim="band"
    )
    extra = xr.concat([shuffled, shuffled.sel(band=["red"]).assign_coords(band=["swir"])], "band")
    table = pd.DataFrame(image.transpose("y", "x", "band").values.reshape(-1, 4), columns=BANDS)
    expected = named_clf.predict_proba(table)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. sklearn's "X does not have valid feature names"
        for candidate in (image, shuffled, extra):
            proba = raster.predict_proba(named_clf, candidate)
            np.testing.assert_allclose(
                proba.transpose("y", "x", "class").values.reshape(-1, 3), expected
            )
        # numpy input of an estimator fitted on named columns: bands in fitted order,
        # accepted by position on request.
        raster.predict(named_clf, image.transpose("y", "x", "band").values, bands="positional")


def test_dataarray_missing_band_is_named(named_clf):
    image = _dataarray(bands=["blue", "green", "red", "swir"])
    with pytest.raises(ValueError, match=r"'nir' \(nir\) have no counterpart"):
        raster.predict(named_clf, image)
    duplicated = _dataarray(bands=["blue", "green", "red", "nir", "nir"])
    with pytest.raises(ValueError, match="more than once"):
        raster.predict(named_clf, duplicated)


def test_band_count_mismatch(clf):
    with pytest.raises(ValueError, match="5 bands"):
        raster.predict(clf, band_image(n_bands=5))
    with pytest.raises(ValueError, match="5 bands"):
        raster.predict(clf, _dataarray(bands=list("abcde")))


def test_invalid_arguments(clf):
    image = band_image()
    with pytest.raises(ValueError, match="chunk_pixels"):
        raster.predict(clf, image, chunk_pixels=0)
    with pytest.raises(ValueError, match="n_jobs"):
        raster.predict(clf, image, n_jobs=0)
    with pytest.raises(ValueError, match="out of range"):
        raster.predict(clf, image, band_dim=3)
    with pytest.raises(AttributeError, match="transform"):
        raster.transform(clf, image)
    with pytest.raises(Exception, match="not fitted"):
        raster.predict(LogisticRegression(), image)


# -------------------------------------------------------------------------- dask
class _BlockCounter:
    """A lazily generated image that counts the blocks dask materializes."""

    def __init__(self):
        self.blocks = 0
        self._lock = threading.Lock()

    def image(self, dims=("band", "y", "x"), chunks=None):
        eager = _dataarray(dims)
        chunks = chunks or {"band": 2, "y": 4, "x": 5}

        def materialize(block):
            if block.size:  # dask calls it on empty arrays to infer the output type
                with self._lock:
                    self.blocks += 1
            return block

        data = da.from_array(eager.values, chunks=tuple(chunks[d] for d in dims))
        return eager.copy(data=data.map_blocks(materialize, dtype=data.dtype)), eager


@pytest.mark.parametrize("method", ["predict", "predict_proba"])
@pytest.mark.parametrize("dims", [("band", "y", "x"), ("y", "x", "band")])
def test_dask_is_lazy_and_equals_numpy_path(clf, method, dims):
    counter = _BlockCounter()
    lazy_image, eager_image = counter.image(dims)
    func = getattr(raster, method)

    result = func(clf, lazy_image, chunk_pixels=3)
    assert dask.is_dask_collection(result)
    assert counter.blocks == 0  # nothing computed yet
    # The band dimension was rechunked to one block, the spatial chunks are kept.
    assert result.chunksizes["y"] == (4, 4, 1) and result.chunksizes["x"] == (5, 5, 1)

    computed = result.compute()
    assert counter.blocks > 0
    expected = func(clf, eager_image)
    # Same dims, coords, name and dtype; values up to BLAS rounding of other chunkings.
    xr.testing.assert_allclose(computed, expected)
    assert computed.dtype == expected.dtype and computed.name == expected.name


def test_dask_nodata_and_transform(pca):
    eager = _dataarray()
    eager[:, 0, 0] = np.nan
    lazy = eager.chunk({"y": 4, "x": 4})
    result = raster.transform(pca, lazy)
    assert dask.is_dask_collection(result)
    computed = result.compute()
    assert np.isnan(computed[:, 0, 0]).all()
    xr.testing.assert_allclose(computed, raster.transform(pca, eager))


def test_estimator_called_only_at_compute(band_data):
    X, y = band_data(300, 4, **DATA)
    clf = CountingClassifier().fit(X, y)
    clf.calls_.clear()
    lazy = _dataarray().chunk({"y": 5})
    result = raster.predict(clf, lazy)
    assert clf.calls_ == [2]  # the two-pixel probe that fixes the output dtype
    result.compute(scheduler="synchronous")
    assert sorted(clf.calls_[1:]) == [44, 55]


def test_bare_dask_array(clf):
    image = band_image()
    lazy = da.from_array(image, chunks=(4, 5, 2))
    labels = raster.predict(clf, lazy)
    assert isinstance(labels, da.Array)
    assert labels.chunks == ((4, 4, 1), (5, 5, 1))
    np.testing.assert_array_equal(labels.compute(), raster.predict(clf, image))
    proba = raster.predict_proba(clf, da.moveaxis(lazy, -1, 0), band_dim=0)
    assert isinstance(proba, da.Array) and proba.shape == (3, 9, 11)
    np.testing.assert_allclose(
        proba.compute(), np.moveaxis(raster.predict_proba(clf, image), -1, 0)
    )


# ------------------------------------------------------------- sknd estimators
# Images through fitted sknd networks; their fast evaluator
# (sknd._inference._evaluator.FastNetwork) is pinned in tests/inference/test_evaluator.py.

FAST = {"max_epochs": 3, "random_state": 0}


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_sknd_image_matches_flattened_pixels(n_jobs, implementation, band_data):
    clf = fit_on_bands(band_data, NDClassifier(**FAST))
    transformer = fit_on_bands(band_data, NDTransformer(n_indices=4, **FAST))
    image = _with_nodata(band_image((20, 30), n_bands=5, dtype=np.float32))
    valid = ~np.isnan(image).any(axis=-1)
    kwargs = {"chunk_pixels": 128, "n_jobs": n_jobs}

    labels = raster.predict(clf, image, fill_value=-1, **kwargs)
    assert labels.dtype == clf.classes_.dtype
    np.testing.assert_array_equal(labels[valid], clf.predict(image[valid]))
    assert (labels[~valid] == -1).all()

    proba = raster.predict_proba(clf, image, **kwargs)
    np.testing.assert_allclose(proba[valid], clf.predict_proba(image[valid]), atol=1e-6)

    indices = raster.transform(transformer, image, **kwargs)
    assert indices.dtype == np.float32 and indices.shape == (20, 30, 4)
    np.testing.assert_allclose(indices[valid], transformer.transform(image[valid]), atol=1e-6)
    assert np.isnan(indices[~valid]).all()


def test_sknd_bands_parameter_names_the_bands(band_data):
    # Fitted on an array with bands=[...]: no feature_names_in_, but named bands.
    X, y = band_data(120, 4, **DATA)
    clf = NDClassifier(bands=BANDS, **FAST).fit(X, y)
    assert not hasattr(clf, "feature_names_in_")
    image = _dataarray()
    expected = raster.predict_proba(clf, image)
    shuffled = image.sel(band=["nir", "blue", "red", "green"])
    xr.testing.assert_allclose(raster.predict_proba(clf, shuffled), expected)
    with pytest.raises(ValueError, match=r"'nir' \(nir\) have no counterpart"):
        raster.predict(clf, _dataarray(bands=["blue", "green", "red", "swir"]))
    # Without bands=, the automatic names x0, x1, ... do not constrain the image.
    unnamed = NDClassifier(**FAST).fit(X, y)
    raster.predict(unnamed, _dataarray(bands=["blue", "green", "red", "swir"]))


def test_sknd_dataarray_by_band_name_lazy(band_data):
    X, y = band_data(120, 4, **DATA)
    clf = NDClassifier(**FAST).fit(pd.DataFrame(X, columns=BANDS), y)
    transformer = NDTransformer(n_indices=2, **FAST).fit(pd.DataFrame(X, columns=BANDS), y)
    image = _dataarray(bands=["nir", "swir", "red", "green", "blue"]).astype(np.float32)
    lazy = image.chunk({"y": 5, "x": 6})
    table = image.sel(band=BANDS).transpose("y", "x", "band").values.reshape(-1, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        proba = raster.predict_proba(clf, lazy)
        indices = raster.transform(transformer, lazy)
        assert dask.is_dask_collection(proba) and dask.is_dask_collection(indices)
        proba, indices = dask.compute(proba, indices)
        np.testing.assert_allclose(
            proba.transpose("y", "x", "class").values.reshape(-1, 3),
            clf.predict_proba(pd.DataFrame(table, columns=BANDS)),
            atol=1e-6,
        )
    assert indices["index"].values.tolist() == transformer.get_feature_names_out().tolist()
    np.testing.assert_allclose(
        indices.transpose("y", "x", "index").values.reshape(-1, 2),
        transformer.transform(pd.DataFrame(table, columns=BANDS)),
        atol=1e-6,
    )


# ----------------------------------------------- band matching and georeferencing (issue 13)
def _named_table_clf(band_data, names, seed=0):
    X, y = band_data(300, len(names), seed=seed, **DATA)
    return LogisticRegression().fit(pd.DataFrame(X, columns=names), y)


def test_unnamed_bands_are_refused_unless_positional(named_clf):
    # Taken by position, a scene stored in another band order gave a wrong map with only a
    # warning (57 % agreement in a user's workflow): positions must be asked for.
    image = band_image()
    expected = named_clf.predict(pd.DataFrame(image.reshape(-1, 4), columns=BANDS))
    with pytest.raises(ValueError, match=r"no names.*'blue'.*bands=\[\.\.\.\].*'positional'"):
        raster.predict(named_clf, image)
    # rioxarray's band numbers 1..n are not names either.
    numbered = _dataarray().assign_coords(band=[1, 2, 3, 4])
    with pytest.raises(ValueError, match="no names"):
        raster.predict(named_clf, numbered)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        labels = raster.predict(named_clf, image, bands="positional")
        raster.predict(named_clf, numbered, bands="positional")
    np.testing.assert_array_equal(labels.ravel(), expected)
    # Unnamed and a different count: an error that says how to name them.
    with pytest.raises(ValueError, match="5 bands without names.*bands="):
        raster.predict(named_clf, band_image(n_bands=5))


def test_bands_argument_names_the_image_bands(named_clf):
    image = band_image()
    reference = raster.predict_proba(named_clf, image, bands="positional")
    reversed_image = image[..., ::-1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        proba = raster.predict_proba(named_clf, reversed_image, bands=BANDS[::-1])
    np.testing.assert_allclose(proba, reference)
    # A reversed image without names is refused, not taken by position (another map).
    with pytest.raises(ValueError, match="no names"):
        raster.predict_proba(named_clf, reversed_image)
    with pytest.raises(ValueError, match="3 band names in bands= for an image of 4 bands"):
        raster.predict(named_clf, image, bands=BANDS[:3])
    with pytest.raises(ValueError, match="'nir' \\(nir\\) have no counterpart"):
        raster.predict(named_clf, image, bands=["blue", "green", "red", "swir16"])
    with pytest.raises(ValueError, match="'positional'"):
        raster.predict(named_clf, image, bands="nir")
    with pytest.raises(TypeError, match="sensor"):
        raster.predict(named_clf, image, sensor=2)


def test_long_name_band_descriptions_are_band_names(named_clf):
    image = _dataarray()
    expected = raster.predict_proba(named_clf, image)
    described = image.sel(band=BANDS[::-1]).assign_coords(band=[1, 2, 3, 4])
    described.attrs["long_name"] = tuple(BANDS[::-1])  # as rioxarray reads descriptions
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        proba = raster.predict_proba(named_clf, described)
    np.testing.assert_allclose(proba.values, expected.values)


@pytest.mark.parametrize("select", ["sel", "isel"])
def test_band_descriptions_follow_sel_and_isel(named_clf, select, band_data):
    # rioxarray keeps the file's descriptions (long_name) in the file's order when .sel/.isel
    # reorder the bands: names were read from the stale attribute, a wrong map without a word.
    image = _dataarray().assign_coords(band=[1, 2, 3, 4])
    image.attrs["long_name"] = tuple(BANDS)
    expected = raster.predict_proba(named_clf, image, bands="positional")
    order = [3, 1, 4, 2]  # red, blue, nir, green
    if select == "sel":
        reordered = image.sel(band=order)
    else:
        reordered = image.isel(band=[k - 1 for k in order])
    assert reordered.attrs["long_name"] == tuple(BANDS)  # stale, as rioxarray leaves it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        proba = raster.predict_proba(named_clf, reordered)
    xr.testing.assert_allclose(proba, expected)
    # A subset keeps its bands' names: a model of fewer bands finds them.
    two = _named_table_clf(band_data, ["red", "nir"])
    subset = image.sel(band=[4, 3])
    np.testing.assert_allclose(
        raster.predict_proba(two, subset).values,
        raster.predict_proba(two, image.sel(band=[3, 4]), bands="positional").values,
    )
    # Band numbers the descriptions cannot name: no names, refused.
    with pytest.raises(ValueError, match="no names"):
        raster.predict(named_clf, image.assign_coords(band=[0, 1, 2, 3]))


def test_positions_contradicted_by_names_warn_in_a_class_of_their_own(named_clf):
    from sknd.bands import BandPositionWarning

    image = _dataarray(bands=BANDS[::-1])
    with pytest.warns(BandPositionWarning, match=r"positional.*positions \[3, 2, 1, 0\]"):
        raster.predict(named_clf, image, bands="positional")
    # Silencing the harmless common-name warning does not silence this one.
    assert not issubclass(BandPositionWarning, BandMatchWarning)
    assert not issubclass(BandMatchWarning, BandPositionWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        raster.predict(named_clf, _dataarray(), bands="positional")  # names agree
        # names that match nothing: positions are all there is
        raster.predict(named_clf, _dataarray(bands=["a", "b", "c", "d"]), bands="positional")


def test_dataframe_image_matched_by_column_names(named_clf, band_data):
    X, _ = band_data(20, 4, seed=3, **DATA)
    frame = pd.DataFrame(X, columns=BANDS, index=np.arange(100, 120))
    expected = named_clf.predict_proba(frame)
    shuffled = frame[["nir", "red", "blue", "green"]].assign(swir=0.3)
    proba = raster.predict_proba(named_clf, shuffled)
    assert isinstance(proba, pd.DataFrame) and proba.index.equals(frame.index)
    assert proba.columns.tolist() == named_clf.classes_.tolist()
    np.testing.assert_allclose(proba.to_numpy(), expected)
    labels = raster.predict(named_clf, shuffled)
    assert isinstance(labels, pd.Series) and labels.name == "predict"
    np.testing.assert_array_equal(labels.to_numpy(), named_clf.predict(frame))


@pytest.mark.parametrize("direction", ["landsat8->sentinel2", "sentinel2->landsat8"])
def test_cross_sensor_transfer(direction, band_data):
    # One model per direction; the scene carries the other sensor's names in another order.
    l8, s2 = ["SR_B2", "SR_B3", "SR_B4", "SR_B5"], ["B02", "B03", "B04", "B08"]
    source, target = (l8, s2) if direction.startswith("landsat8") else (s2, l8)
    sensor = direction.split("->")[0]
    X, y = band_data(120, 4, **DATA)
    clf = NDClassifier(sensor=sensor, **FAST).fit(pd.DataFrame(X, columns=source), y)
    image = _dataarray(bands=target)
    expected = raster.predict(clf, image.assign_coords(band=source))
    scene = image.sel(band=target[::-1])
    with pytest.warns(BandMatchWarning, match=r"common name from .* -> .*\(nir\)"):
        labels = raster.predict(clf, scene)
    xr.testing.assert_equal(labels, expected)
    # The scene's sensor may be named; a band without a counterpart is named in the error.
    with pytest.warns(BandMatchWarning):
        raster.predict(clf, scene, sensor=direction.split("->")[1])
    with pytest.raises(ValueError, match="no counterpart"):
        raster.predict(clf, image.sel(band=target[:3]).assign_coords(band=target[:3]))


def test_sensor_needs_a_named_model(clf):
    with pytest.raises(ValueError, match="sensor='sentinel2' needs a model fitted with band"):
        raster.predict(clf, band_image(), sensor="sentinel2")


def test_output_attrs_say_what_the_layer_holds(named_clf, pca, band_data):
    image = _dataarray()
    labels = raster.predict(named_clf, image, fill_value=-1)
    assert labels.attrs["long_name"] == "class"
    assert labels.attrs["classes"] == ["0", "1", "2"]
    assert labels.attrs["_FillValue"] == -1
    proba = raster.predict_proba(named_clf, image)
    assert proba.attrs["long_name"] == ("0", "1", "2")
    pca_image = raster.transform(pca, image, bands="positional")
    assert pca_image.attrs["long_name"] == ("pca0", "pca1")
    # A NaN fill marks masked data: in the encoding, as xarray keeps a decoded file's, so
    # that what is derived from the output does not inherit it; a number stays an attribute.
    values = raster.predict(
        LinearRegression().fit(*band_data(300, 4, **DATA)), image, bands="positional"
    )
    for out in (proba, pca_image, values, raster.predict(named_clf, image)):
        assert "_FillValue" not in out.attrs and np.isnan(out.encoding["_FillValue"])
    classes = proba.argmax("class")
    assert "_FillValue" not in classes.attrs and "_FillValue" not in classes.encoding
    zero = raster.predict_proba(named_clf, image, fill_value=0.0)
    assert zero.attrs["_FillValue"] == 0.0 and "_FillValue" not in zero.encoding


def test_fillvalue_attribute_is_nodata(named_clf):
    image = _dataarray().astype(np.float32)
    image[:, 0, 0] = -9999.0
    image.attrs["_FillValue"] = np.float32(-9999.0)
    for candidate in (image, image.chunk({"x": 4})):
        labels = raster.predict(named_clf, candidate, fill_value=-1).values
        assert labels[0, 0] == -1 and (labels[1:] >= 0).all()
        proba = raster.predict_proba(named_clf, candidate).values
        assert np.isnan(proba[:, 0, 0]).all() and np.isfinite(proba[:, 1:]).all()


def test_fillvalue_per_band_and_in_the_encoding_is_nodata(named_clf):
    # Both were ignored: no-data pixels were predicted as classes.
    image = _dataarray().astype(np.float32).assign_coords(band=[1, 2, 3, 4])
    image.attrs["long_name"] = tuple(BANDS)
    image[0, 0, 0] = -9999.0  # band 1's nodata
    image[2, 1, 1] = 0.0  # band 3's nodata
    image[1, 2, 2] = 0.0  # a valid 0 in band 2, whose nodata is -1
    per_band = image.copy()
    per_band.attrs["_FillValue"] = np.array([-9999.0, -1.0, 0.0, np.nan])
    labels = raster.predict(named_clf, per_band, fill_value=-1).values
    assert labels[0, 0] == -1 and labels[1, 1] == -1 and labels[2, 2] >= 0
    assert (labels >= 0).sum() == labels.size - 2
    # The per-band values follow .sel like the band descriptions: band 3 first.
    reordered = raster.predict(named_clf, per_band.sel(band=[3, 1, 2, 4]), fill_value=-1)
    np.testing.assert_array_equal(reordered.values, labels)
    named = per_band.assign_coords(band=BANDS)
    named.attrs["_FillValue"] = np.array([-9999.0, -1.0, 0.0])
    with pytest.raises(ValueError, match="_FillValue holds 3 values for its 4 bands"):
        raster.predict(named_clf, named)
    encoded = image.copy()
    encoded.encoding["_FillValue"] = np.float32(-9999.0)  # as xarray keeps it once decoded
    labels = raster.predict(named_clf, encoded, fill_value=-1).values
    assert labels[0, 0] == -1 and (labels >= 0).sum() == labels.size - 1


# rioxarray releases for Python 3.11 multiply affine 3 transforms with `*`, which warns.
AFFINE_MATMUL = pytest.mark.filterwarnings("ignore:Use `@` matmul:PendingDeprecationWarning")


def _scene_data(n_bands=4, shape=(9, 11)):
    data = np.moveaxis(band_image(shape, n_bands), -1, 0).astype(np.float32)
    data[:, 0, :3] = -9999.0  # a strip of nodata
    data[1, 2, 2] = np.nan  # and a NaN in one band
    return data


@AFFINE_MATMUL
@pytest.mark.parametrize("chunks", [None, {"x": 4, "y": 5}])
def test_geotiff_round_trip_keeps_crs_transform_and_nodata(tmp_path, named_clf, pca, chunks):
    rioxarray = pytest.importorskip("rioxarray")
    path = write_geotiff(
        tmp_path / "scene.tif", _scene_data()[::-1], descriptions=BANDS[::-1]
    )  # bands stored in reverse order, named by their descriptions
    scene = rioxarray.open_rasterio(path, chunks=chunks)
    assert scene.rio.crs is not None
    outputs = {
        "predict": raster.predict(named_clf, scene, fill_value=-1),
        "predict_proba": raster.predict_proba(named_clf, scene),
        "transform": raster.transform(pca, scene, bands="positional"),
    }
    for method, out in outputs.items():
        assert (chunks is not None) == (out.chunks is not None)
        assert out.rio.crs == scene.rio.crs, method
        assert out.rio.transform() == scene.rio.transform(), method
        xr.testing.assert_identical(out["x"], scene["x"])
        written = tmp_path / f"{method}.tif"
        out.rio.to_raster(written)
        reread = rioxarray.open_rasterio(written)
        assert reread.rio.crs == scene.rio.crs and reread.rio.transform() == scene.rio.transform()
        values = reread.values
        # Nodata and NaN pixels hold the fill value, never a class.
        if method == "predict":
            assert reread.rio.nodata == -1
            assert (values[0, 0, :3] == -1).all() and values[0, 2, 2] == -1
            assert (values[0, 1:, 3:] >= 0).all()
        else:
            assert np.isnan(reread.rio.nodata)
            assert np.isnan(values[:, 0, :3]).all() and np.isfinite(values[:, 1:, 3:]).all()
    # Matched by the descriptions: the same map as the bands in training order.
    ordered = scene.isel(band=[3, 2, 1, 0]).assign_coords(band=BANDS)
    ordered.attrs.pop("long_name")
    np.testing.assert_array_equal(
        outputs["predict"].values, raster.predict(named_clf, ordered, fill_value=-1).values
    )
    # The descriptions of the written probabilities are the class names.
    rasterio = pytest.importorskip("rasterio")
    with rasterio.open(tmp_path / "predict_proba.tif") as src:
        assert src.descriptions == ("0", "1", "2")


@AFFINE_MATMUL
@pytest.mark.parametrize("chunks", [None, {"x": 4, "y": 5}])
def test_maps_derived_from_probabilities_write_as_integers(tmp_path, named_clf, chunks):
    # A user's raster.predict_proba(model, image).argmax("class").rio.to_raster(path) failed:
    # the argmax kept the probabilities' NaN _FillValue, which no integer raster holds.
    rioxarray = pytest.importorskip("rioxarray")
    rasterio = pytest.importorskip("rasterio")
    data = _scene_data()[:, 1:]  # no no-data pixel: argmax raises on all-NaN probabilities
    data[1, 1, 2] = 0.3
    scene = rioxarray.open_rasterio(
        write_geotiff(tmp_path / "scene.tif", data, descriptions=BANDS), chunks=chunks
    )
    proba = raster.predict_proba(named_clf, scene)
    proba.rio.to_raster(tmp_path / "proba.tif")
    with rasterio.open(tmp_path / "proba.tif") as src:
        assert np.isnan(src.nodata) and src.dtypes == ("float32",) * 3
    classes = proba.argmax("class")
    # Recent xarray keeps the attributes through argmax: the class names, written as the
    # probabilities' band descriptions, name no band of the class map and rioxarray refuses
    # them there.
    classes.attrs.pop("long_name", None)
    classes.rio.to_raster(tmp_path / "classes.tif")
    with rasterio.open(tmp_path / "classes.tif") as src:
        assert src.nodata is None and src.crs == scene.rio.crs
        written = src.read(1)
    expected = raster.class_map(named_clf, scene).values
    np.testing.assert_array_equal(written, expected)
    # Arithmetic does not inherit the fill either: percentages as bytes.
    (proba * 100).round().astype("uint8").rio.to_raster(tmp_path / "percent.tif")
    with rasterio.open(tmp_path / "percent.tif") as src:
        assert src.nodata is None and src.descriptions == ("0", "1", "2")
        np.testing.assert_array_equal(src.read(), np.round(proba.values * 100).astype("uint8"))


@AFFINE_MATMUL
def test_geotiff_without_crs_gives_a_map_without_crs(tmp_path, named_clf):
    rioxarray = pytest.importorskip("rioxarray")
    path = write_geotiff(tmp_path / "nocrs.tif", _scene_data(), crs=None, descriptions=BANDS)
    scene = rioxarray.open_rasterio(path)
    assert scene.rio.crs is None
    labels = raster.predict(named_clf, scene, fill_value=-1)
    assert labels.rio.crs is None
    labels.rio.to_raster(tmp_path / "out.tif")
    assert rioxarray.open_rasterio(tmp_path / "out.tif").rio.crs is None


# ------------------------------------------------------------ categorical class maps
@pytest.mark.parametrize("labels", ["strings", "integers"])
@pytest.mark.parametrize("chunks", [None, {"x": 4, "y": 5}])
def test_class_map_codes_are_positions_in_classes(labels, chunks, band_data):
    X, y = band_data(300, 4, **DATA)
    names = (
        np.array(["soil", "water", "vegetation"]) if labels == "strings" else np.array([7, 300, 2])
    )
    model = LogisticRegression().fit(X, names[y])
    clean = band_image()
    predicted = model.predict(clean.reshape(-1, 4))
    image = clean.copy()
    image[0, 0, 1] = np.nan
    scene = xr.DataArray(np.moveaxis(image, -1, 0), dims=("band", "y", "x"))
    if chunks is not None:
        scene = scene.chunk(chunks)
    codes = raster.class_map(model, scene)
    assert codes.dtype == np.uint8 and (chunks is not None) == (codes.chunks is not None)
    if chunks is not None:
        # Lazily, without object arrays: every block of the graph is uint8.
        assert codes.data.blocks[0, 0].compute().dtype == np.uint8
    values = codes.values
    expected = np.searchsorted(model.classes_, predicted)
    assert values[0, 0] == 255 == codes.attrs["_FillValue"]
    np.testing.assert_array_equal(values.ravel()[1:], expected[1:])
    np.testing.assert_array_equal(codes.attrs["flag_values"], [0, 1, 2])
    table = json.loads(codes.attrs["categories"])
    assert table == {str(code): label for code, label in enumerate(model.classes_.tolist())}
    assert codes.attrs["flag_meanings"] == " ".join(str(label) for label in model.classes_)
    # Back to labels, with their type; no-data as asked (a label no class has: fuzz3 repro_17).
    back = raster.class_labels(codes, fill_label="nodata" if labels == "strings" else -1)
    assert back.dtype.kind == ("U" if labels == "strings" else "i")
    np.testing.assert_array_equal(back.values.ravel()[1:], predicted[1:])
    # argmax of the probabilities gives the same codes.
    proba = raster.predict_proba(model, scene)
    assert proba.dtype == np.float32
    from_proba = raster.class_map_from_proba(proba)
    assert from_proba.attrs["categories"] == codes.attrs["categories"]
    np.testing.assert_array_equal(from_proba.values, values)
    # No-data written as a number, not NaN, is still no-data (never class 0).
    zero_filled = raster.class_map_from_proba(raster.predict_proba(model, scene, fill_value=0.0))
    np.testing.assert_array_equal(zero_filled.values, values)
    assert raster.predict_proba(model, image, dtype=np.float64).dtype == np.float64


def test_class_map_numpy_and_fill_values(string_clf):
    image = band_image()
    image[2, 3, 0] = np.nan
    codes = raster.class_map(string_clf, image, fill_value=-1)
    assert codes.dtype == np.int16 and codes[2, 3] == -1
    # 255 classes: codes 0..254, the fill 255 still fits uint8; one more needs uint16.
    for n_classes, dtype in [(255, np.uint8), (256, np.uint16)]:
        many = DummyClassifier().fit(np.zeros((n_classes, 1)), np.arange(n_classes))
        codes = raster.class_map(many, np.ones((2, 2, 1)))
        assert codes.dtype == dtype and (codes == 0).all()
    # A fill value that is a class code would pass no-data pixels for that class.
    with pytest.raises(ValueError, match="fill_value=1 is the code of the class 'vegetation'"):
        raster.class_map(string_clf, image, fill_value=1)
    with pytest.raises(TypeError, match="cannot be a class code"):
        raster.class_map(string_clf, image, fill_value=0.5)
    with pytest.raises(TypeError, match="needs a classifier"):
        raster.class_map(PCA(n_components=1).fit(band_image().reshape(-1, 4)), image)
    with pytest.raises(ValueError, match=r"Code 3 is neither a class code \(\[0, 1\]\) nor"):
        raster.class_labels(np.array([0, 3]), ["a", "b"], fill_value=255)


@pytest.mark.parametrize(
    "label, message",
    [("line\nbreak", "control characters"), ("x" * 300, "limited to 254"), ("nul\x00", "control")],
)
def test_class_map_refuses_labels_that_cannot_be_category_names(label, message, band_data):
    X, y = band_data(300, 4, **DATA)
    classes = np.array(["fine", "also fine", label], dtype=object)
    model = LogisticRegression().fit(X, classes[y])
    with pytest.raises(ValueError, match=message):
        raster.class_map(model, xr.DataArray(np.ones((4, 2, 2)), dims=("band", "y", "x")))


@AFFINE_MATMUL
@pytest.mark.parametrize("cog", [False, True])
def test_write_class_map_opens_with_colour_table_and_category_names(tmp_path, cog, band_data):
    rioxarray = pytest.importorskip("rioxarray")
    rasterio = pytest.importorskip("rasterio")
    X, y = band_data(300, 4, **DATA)
    model = LogisticRegression().fit(
        pd.DataFrame(X, columns=BANDS), np.array(["bare soil", "water", "forest"])[y]
    )
    path = write_geotiff(tmp_path / "scene.tif", _scene_data(), descriptions=BANDS)
    scene = rioxarray.open_rasterio(path, chunks={"x": 4})
    codes = raster.class_map(model, scene)
    codes.rio.to_raster(tmp_path / "plain.tif")  # rioxarray writes it as it is
    out = raster.write_class_map(
        codes,
        tmp_path / "map.tif",
        cog=cog,
        colors={"bare soil": (1, 2, 3), "water": "#0000ff", "forest": (0, 128, 0, 200)},
    )
    with rasterio.open(out) as src:
        assert src.dtypes == ("uint8",) and src.nodata == 255
        assert src.crs == scene.rio.crs and src.transform == scene.rio.transform()
        colormap = src.colormap(1)
        assert [colormap[code] for code in (0, 1, 2)] == [
            (1, 2, 3, 255),
            (0, 128, 0, 255),
            (0, 0, 255, 255),
        ]  # GeoTIFF: no alpha
        assert colormap[255] == (0, 0, 0, 0)
        assert json.loads(src.tags()["categories"]) == {
            "0": "bare soil",
            "1": "forest",
            "2": "water",
        }
        assert (src.tags(ns="IMAGE_STRUCTURE").get("LAYOUT") == "COG") == cog
        np.testing.assert_array_equal(src.read(1), codes.values)
    names = [node.text for node in ElementTree.parse(f"{out}.aux.xml").getroot().iter("Category")]
    assert names == ["bare soil", "forest", "water"]
    if shutil.which("gdalinfo"):  # GDAL itself lists them
        info = subprocess.run(["gdalinfo", str(out)], capture_output=True, text=True).stdout
        assert "Categories:" in info and "1: forest" in info and "Color Table" in info
    # Read back with rioxarray, the codes become labels again.
    back = raster.class_labels(
        rioxarray.open_rasterio(out).squeeze("band", drop=True), fill_label=""
    )
    np.testing.assert_array_equal(
        back.values[codes.values != 255], raster.class_labels(codes).values[codes.values != 255]
    )
    # Refused before anything is written.
    with pytest.raises(ValueError, match="no colour for the classes"):
        raster.write_class_map(codes, tmp_path / "bad.tif", colors={"water": (0, 0, 255)})
    with pytest.raises(ValueError, match="multiply them by 255"):  # matplotlib's floats
        raster.write_class_map(codes, tmp_path / "bad.tif", colors=[(0.1, 0.2, 0.3)] * 3)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(("bad", ".sknd"))) == []


# ------------------------------------------------------------------------ xarray Datasets
@pytest.mark.parametrize("lazy", [False, True])
def test_dataset_with_one_variable_per_band_is_matched_by_name(lazy, band_data):
    """What odc-stac and stackstac give: bands as variables, in any order, nodata per band."""
    X, y = band_data(300, 4, **DATA)
    clf = NDClassifier(bands=BANDS, **FAST).fit(X, y)
    image = _dataarray()
    image[:, 0, 0] = -9999.0
    variables = {}
    for name in reversed(BANDS):  # another order than the model's
        variable = image.sel(band=name, drop=True)
        variable.attrs = {"_FillValue": -9999.0}
        variables[name] = variable.chunk({"y": 4}) if lazy else variable
    dataset = xr.Dataset(variables, attrs={"title": "a scene"})
    codes = raster.class_map(clf, dataset)
    assert codes.dims == ("y", "x")
    assert "spatial_ref" in codes.coords
    assert codes.chunks is not None if lazy else codes.chunks is None
    expected = raster.class_map(clf, image, nodata=-9999.0)
    np.testing.assert_array_equal(codes.values, expected.values)
    assert int(codes.values[0, 0]) == codes.attrs["_FillValue"]


@pytest.mark.parametrize("as_dataset", [False, True])
def test_a_decoded_variable_keeps_its_packed_fill_apart_from_its_values(as_dataset, band_data):
    # xarray decodes packed * scale_factor + add_offset and keeps the packed _FillValue in the
    # encoding (its pixels already NaN): compared with the decoded values it masked a valid
    # reflectance of 0.0, the decoded value of DN 1000 with offset -0.1 (fuzz4 repro_11).
    X, y = band_data(300, 4, **DATA)
    clf = NDClassifier(bands=BANDS, **FAST).fit(X, y)
    image = _dataarray()
    image[0, 0, 0] = 0.0  # a valid pixel equal to the packed fill
    image[1, 1, 1] = np.nan  # the packed fill, decoded
    encoding = {"dtype": "uint16", "scale_factor": 0.0001, "add_offset": -0.1, "_FillValue": 0}
    if as_dataset:
        scene = xr.Dataset({name: image.sel(band=name, drop=True) for name in BANDS})
        for name in BANDS:
            scene[name].encoding.update(encoding)
    else:
        scene = image.copy()
        scene.encoding.update(encoding)
    codes = raster.class_map(clf, scene).values
    expected = raster.class_map(clf, image).values
    np.testing.assert_array_equal(codes, expected)
    assert codes[0, 0] != 255 and codes[1, 1] == 255
    # Without scale_factor or add_offset the encoding's fill is a value of the data.
    scene = image.copy()
    scene.encoding["_FillValue"] = 0.0
    assert raster.class_map(clf, scene).values[0, 0] == 255


def test_dataset_on_several_grids_is_refused(band_data):
    dataset = xr.Dataset(
        {"red": (("y", "x"), np.ones((4, 4))), "nir": (("y2", "x2"), np.ones((2, 2)))}
    )
    X, y = band_data(300, 2, **DATA)
    clf = NDClassifier(bands=["red", "nir"], **FAST).fit(X, y)
    with pytest.raises(ValueError, match="different grids"):
        raster.predict(clf, dataset)


def test_class_maps_refuse_lossy_compression_text_fill_and_mixed_labels(tmp_path):
    # write_class_map(compress="jpeg") changed 77 % of the codes; a text _FillValue gave
    # numpy's isnan error; mixed class coordinates turned numbers into text (fuzz3 repro_03,
    # repro_18c, repro_17).
    pytest.importorskip("rioxarray")
    proba = xr.DataArray(
        np.random.default_rng(0).dirichlet(np.ones(3), (6, 5)),
        dims=("y", "x", "class"),
        coords={"class": ["a", "b", "c"], "y": 100.0 - 10 * np.arange(6), "x": 10.0 * np.arange(5)},
    )
    codes = raster.class_map_from_proba(proba).rio.write_crs("EPSG:32633")
    for compress in ("jpeg", "WEBP"):
        with pytest.raises(ValueError, match=f"compress={compress} is lossy"):
            raster.write_class_map(codes, tmp_path / "map.tif", compress=compress)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="_FillValue attribute is 'none', not a number"):
        raster.class_map_from_proba(proba.assign_attrs(_FillValue="none"))
    mixed = proba.assign_coords({"class": np.array([1, "b", "c"], dtype=object)})
    with pytest.raises(ValueError, match="mix numbers and strings"):
        raster.class_map_from_proba(mixed)
    with pytest.raises(ValueError, match="fill_label='a' is the label of code 0"):
        raster.class_labels(codes, fill_label="a")


def test_write_class_map_takes_colour_names(tmp_path):
    pytest.importorskip("matplotlib")
    rasterio = pytest.importorskip("rasterio")
    proba = xr.DataArray(
        np.random.default_rng(0).dirichlet(np.ones(2), (4, 5)),
        dims=("y", "x", "class"),
        coords={"class": ["water", "land"], "y": -10.0 * np.arange(4), "x": 10.0 * np.arange(5)},
    )
    codes = raster.class_map_from_proba(proba).rio.write_crs("EPSG:32633")
    out = raster.write_class_map(codes, tmp_path / "map.tif", colors=["navy", "tab:green"])
    with rasterio.open(out) as src:
        assert src.colormap(1)[0] == (0, 0, 128, 255)
        assert src.colormap(1)[1] == (44, 160, 44, 255)
    with pytest.raises(ValueError, match="colour name .* got 'no such colour'"):
        raster.write_class_map(codes, tmp_path / "other.tif", colors=["navy", "no such colour"])


def test_band_objects_name_the_image_bands():
    # raster.predict(model, image, bands=list(model.bands_)) said the model's bands had no
    # counterpart among "Band(name='B2', ...)" (fuzz3 repro_12).
    from sknd.bands import resolve_bands
    from sknd.raster._matching import check_bands

    bands = resolve_bands(["B2", "B8"], sensor="sentinel2")
    assert check_bands(list(bands), 2) == ["B2", "B8"]


def test_write_class_map_in_a_process_that_never_imported_rioxarray(tmp_path):
    # The map is written through rioxarray's .rio accessor, which exists only once rioxarray is
    # imported: write_class_map raised AttributeError ("no attribute 'rio'") unless the user
    # had imported it. Only a fresh process shows it (the suite imports rioxarray).
    pytest.importorskip("rioxarray")
    code = (
        "import sys\n"
        "import numpy as np\n"
        "import xarray as xr\n"
        "from sknd import raster\n"
        "proba = xr.DataArray(np.full((3, 4, 2), 0.5), dims=('y', 'x', 'class'),\n"
        "    coords={'class': ['water', 'land'], 'y': [30.0, 20, 10], 'x': [0.0, 10, 20, 30]})\n"
        "codes = raster.class_map_from_proba(proba)\n"
        "assert 'rioxarray' not in sys.modules\n"
        "raster.write_class_map(codes, sys.argv[1])\n"
    )
    out = tmp_path / "map.tif"
    proc = subprocess.run(
        [sys.executable, "-c", code, str(out)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    rasterio = pytest.importorskip("rasterio")
    with rasterio.open(out) as src:
        assert src.tags()["flag_meanings"] == "water land"
        assert src.read(1).shape == (3, 4)
