import numpy as np
import pandas as pd
import pytest

from sknd.datasets import (
    load_forest_type,
    load_landsat8_samples,
    load_satimage,
    load_sentinel2_scene,
)


def test_satimage_all_is_train_then_test():
    full = load_satimage()
    train = load_satimage(subset="train")
    test = load_satimage(subset="test")
    assert full.data.shape == (6435, 36)
    assert train.data.shape == (4435, 36) and test.data.shape == (2000, 36)
    np.testing.assert_array_equal(full.data, np.vstack([train.data, test.data]))
    np.testing.assert_array_equal(full.target, np.concatenate([train.target, test.target]))
    assert full.data.dtype == np.float64 and full.data.min() >= 0 and full.data.max() <= 255


def test_satimage_names_and_classes():
    bunch = load_satimage()
    assert list(bunch.feature_names[:4]) == ["p0_green", "p0_red", "p0_nir1", "p0_nir2"]
    assert bunch.feature_names[-1] == "p8_nir2"
    assert len(set(bunch.feature_names)) == 36
    assert list(bunch.target_codes) == [1, 2, 3, 4, 5, 7]
    assert len(bunch.target_names) == 6 and bunch.target_names[-1] == "very damp grey soil"
    assert np.bincount(bunch.target).tolist() == [1533, 703, 1358, 626, 707, 1508]
    assert "10.24432/C55887" in bunch.DESCR and "CC BY 4.0" in bunch.DESCR
    assert bunch.frame is None


def test_satimage_center_pixel_is_p4():
    full = load_satimage(as_frame=True)
    centre = load_satimage(center_pixel=True, as_frame=True)
    assert list(centre.data.columns) == ["green", "red", "nir1", "nir2"]
    np.testing.assert_array_equal(
        centre.data.to_numpy(), full.data[["p4_green", "p4_red", "p4_nir1", "p4_nir2"]].to_numpy()
    )


def test_forest_type_contents():
    bunch = load_forest_type()
    assert bunch.data.shape == (523, 9)
    assert list(bunch.feature_names) == [
        "green_sep10",
        "red_sep10",
        "nir_sep10",
        "green_mar11",
        "red_mar11",
        "nir_mar11",
        "green_may11",
        "red_may11",
        "nir_may11",
    ]
    # The source letters carry a trailing space; the loader strips it.
    assert bunch.target_codes.tolist() == ["d", "h", "o", "s"]
    assert np.bincount(bunch.target).tolist() == [159, 86, 83, 195]
    assert "10.24432/C5SP4V" in bunch.DESCR and "CC BY 4.0" in bunch.DESCR
    assert load_forest_type(subset="train").data.shape == (198, 9)
    assert load_forest_type(subset="test").data.shape == (325, 9)


@pytest.mark.parametrize("loader", [load_satimage, load_forest_type])
def test_return_x_y_and_frame(loader):
    X, y = loader(return_X_y=True)
    assert isinstance(X, np.ndarray) and isinstance(y, np.ndarray)
    Xf, yf = loader(return_X_y=True, as_frame=True)
    assert isinstance(Xf, pd.DataFrame) and isinstance(yf, pd.Series)
    np.testing.assert_array_equal(Xf.to_numpy(), X)
    bunch = loader(as_frame=True)
    assert list(bunch.frame.columns) == list(bunch.feature_names) + ["class"]
    np.testing.assert_array_equal(bunch.target_names[y], bunch.target_names[bunch.target])


@pytest.mark.parametrize("loader", [load_satimage, load_forest_type])
def test_invalid_subset(loader):
    with pytest.raises(ValueError, match="subset"):
        loader(subset="validation")


def test_landsat8_samples_contents():
    bunch = load_landsat8_samples()
    assert bunch.data.shape == (120, 8) and bunch.data.dtype == np.float64
    assert list(bunch.feature_names) == [f"SR_B{i}" for i in range(1, 8)] + ["ST_B10"]
    assert bunch.target_names.tolist() == ["Urban", "Vegetation", "Water"]
    assert np.bincount(bunch.target).tolist() == [37, 46, 37]
    reflectance = bunch.data[:, :7]
    assert reflectance.min() > 0 and reflectance.max() < 1  # scaled surface reflectance
    assert 250 < bunch.data[:, 7].min() < bunch.data[:, 7].max() < 330  # kelvin
    # Water is dark in the NIR (SR_B5), vegetation bright: a real-data sanity check.
    nir = bunch.data[:, 4]
    assert nir[bunch.target == 2].max() < nir[bunch.target == 1].min()
    assert "MIT" in bunch.DESCR and "10.1038/s41597-023-02096-0" in bunch.DESCR
    X, y = load_landsat8_samples(return_X_y=True, as_frame=True)
    assert list(X.columns) == list(bunch.feature_names) and y.name == "class"


def test_sentinel2_scene_contents():
    scene = load_sentinel2_scene()
    assert scene.data.shape == (4, 300, 300) and scene.data.dtype == np.float32
    assert scene.band_names.tolist() == ["B02", "B03", "B04", "B08"]
    assert 0 < scene.data.min() and scene.data.max() < 1
    # Stored values are reflectance x 10,000 as integers: the division is exact to float32.
    np.testing.assert_allclose(np.round(scene.data * 10_000), scene.data * 10_000, atol=1e-2)
    assert scene.example_crs == "EPSG:32633" and scene.example_transform[0] == 10.0
    assert "illustrative" in scene.DESCR


def test_sentinel2_scene_matches_spyndex():
    spyndex = pytest.importorskip("spyndex")
    pytest.importorskip("xarray")
    source = spyndex.datasets.open("sentinel")  # (band, x, y) in spyndex's labels
    scene = load_sentinel2_scene(as_dataarray=True)
    assert scene.dims == ("band", "y", "x")
    assert scene["band"].values.tolist() == source["band"].values.tolist()
    np.testing.assert_array_equal(
        np.round(scene.values * 10_000).astype(np.int64),
        source.transpose("band", "y", "x").values,
    )
    samples = load_landsat8_samples(as_frame=True)
    spectral = spyndex.datasets.open("spectral")
    np.testing.assert_array_equal(
        samples.data.to_numpy(), spectral[list(samples.feature_names)].to_numpy()
    )


def test_spyndex_files_keep_their_license():
    from importlib import resources

    folder = resources.files("sknd.datasets").joinpath("data", "spyndex")
    assert "MIT License" in folder.joinpath("LICENSE").read_text(encoding="utf-8")
    assert "Montero" in folder.joinpath("SOURCE.txt").read_text(encoding="utf-8")
