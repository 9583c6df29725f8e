"""Tests of sknd.raster's adapters: one per container, and the one place that picks it."""

import ast
import pathlib
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator
from sklearn.linear_model import LinearRegression
from sklearn.preprocessing import FunctionTransformer

from sknd import raster
from sknd.bands import BandPositionWarning
from sknd.raster import _containers

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
xr = pytest.importorskip("xarray")

RASTER = pathlib.Path(raster.__file__).parent

# Names that make a container test: the modules of containers looked up, their types,
# numpy's masked arrays, and the old helpers (is_dataarray, _is_dask_array, ...).
_CONTAINER_MODULES = {"xarray", "xr", "pandas", "pd", "dask", "da", "ma"}
_CONTAINER_HELPERS = {
    "isMaskedArray",
    "is_dataarray",
    "is_dataset",
    "_is_dataframe",
    "_is_dask_array",
}
_CONTAINER_TYPES = {"DataArray", "Dataset", "DataFrame", "Series", "Array", "MaskedArray"}


def _container_tests(tree):
    """Line numbers of ``tree``'s container tests."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "modules":
            found.append(node.lineno)  # sys.modules: a container looked up
        elif isinstance(node, ast.Call):
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            args = node.args
            if name in _CONTAINER_HELPERS:
                found.append(node.lineno)
            elif name == "isinstance" and len(args) == 2 and _names_a_container(args[1]):
                found.append(node.lineno)
            elif name == "hasattr" and len(args) == 2 and _constant(args[1]) == "map_blocks":
                found.append(node.lineno)  # duck-typing dask
    return found


def _names_a_container(node):
    kinds = node.elts if isinstance(node, ast.Tuple) else [node]
    for kind in kinds:
        if isinstance(kind, ast.Attribute) and kind.attr in _CONTAINER_TYPES:
            owner = kind.value
            owner = getattr(owner, "attr", getattr(owner, "id", ""))
            if owner in _CONTAINER_MODULES:
                return True
    return False


def _constant(node):
    return node.value if isinstance(node, ast.Constant) else None


def test_containers_are_told_apart_in_one_module():
    """Which container an image is, is asked in _containers only (was: five modules)."""
    modules = {
        path.name: _container_tests(ast.parse(path.read_text()))
        for path in sorted(RASTER.glob("*.py"))
    }
    testing = {name: lines for name, lines in modules.items() if lines}
    assert set(testing) == {"_containers.py"}, testing


def test_the_container_test_finds_the_old_ones():
    """The scan above sees the tests the modules made before the adapters."""
    old = """
import sys
def is_dataarray(image):
    xr = sys.modules.get("xarray")
    return xr is not None and isinstance(image, xr.DataArray)
def f(image, data):
    if np.ma.isMaskedArray(image) or isinstance(image, (int, pd.DataFrame)):
        return hasattr(data, "map_blocks")
    return is_dataarray(image)
"""
    assert sorted(_container_tests(ast.parse(old))) == [4, 5, 7, 7, 8, 9]


@pytest.mark.parametrize("adapter", _containers.ADAPTERS, ids=lambda a: a.__name__)
def test_each_adapter_names_its_container_and_is_picked_for_it(adapter):
    module_name, class_name = adapter.container
    kind = getattr(sys.modules[module_name], class_name)
    examples = {
        xr.DataArray: xr.DataArray(np.zeros((2, 3)), dims=("band", "x")),
        xr.Dataset: xr.Dataset({"red": ("x", np.zeros(3))}),
        pd.DataFrame: pd.DataFrame({"red": [0.0]}),
        da.Array: da.zeros((3, 2)),
        np.ma.MaskedArray: np.ma.masked_array(np.zeros((3, 2))),
    }
    assert _containers.container_of(examples[kind]) is adapter
    assert isinstance(_containers.adapt(examples[kind]), adapter)


@pytest.mark.parametrize("image", [np.zeros((2, 3)), [[0.0, 1.0]], 3.0, "text"])
def test_what_no_adapter_takes_is_read_as_a_numpy_array(image):
    assert _containers.container_of(image) is _containers.NumpyImage


class FirstBand(BaseEstimator):
    """Predicts each pixel's first band."""

    def fit(self, X, y=None):
        self.n_features_in_ = np.shape(X)[1]
        return self

    def predict(self, X):
        return np.asarray(X)[:, 0]


def _identity():
    """A fitted transformer that gives each pixel's bands back as they are."""
    return FunctionTransformer(validate=True).fit(np.zeros((2, 3)))


def _grid():
    return np.arange(4 * 5 * 3, dtype=np.float64).reshape(4, 5, 3) / 60


def test_numpy_and_masked_arrays_round_trip():
    image = _grid()
    np.testing.assert_array_equal(raster.transform(_identity(), image), image)
    band_first = np.moveaxis(image, -1, 0)
    out = raster.transform(_identity(), band_first, band_dim=0)
    np.testing.assert_array_equal(out, band_first)
    masked = np.ma.masked_array(image, mask=np.zeros(image.shape, dtype=bool))
    masked.mask[1, 2, 0] = True  # one band masked: the pixel is no-data
    out = raster.transform(_identity(), masked)
    expected = image.copy()
    expected[1, 2] = np.nan
    np.testing.assert_array_equal(out, expected)


def test_dataframe_round_trips_on_its_index():
    frame = pd.DataFrame(_grid().reshape(-1, 3), columns=["a", "b", "c"], index=range(10, 30))
    out = raster.transform(_identity(), frame)
    assert isinstance(out, pd.DataFrame)
    pd.testing.assert_index_equal(out.index, frame.index)
    np.testing.assert_array_equal(out.to_numpy(), frame.to_numpy())
    series = raster.predict(FirstBand().fit(frame.to_numpy()), frame)
    assert isinstance(series, pd.Series) and series.name == "predict"
    np.testing.assert_array_equal(series.to_numpy(), frame["a"].to_numpy())


def test_dask_array_round_trips_lazily():
    image = da.from_array(_grid(), chunks=(2, 5, 1))
    out = raster.transform(_identity(), image)
    assert isinstance(out, da.Array)
    np.testing.assert_array_equal(out.compute(), _grid())


@pytest.mark.parametrize("lazy", [False, True])
def test_dataarray_round_trips_with_its_grid(lazy):
    image = xr.DataArray(
        np.moveaxis(_grid(), -1, 0),
        dims=("band", "y", "x"),
        coords={"y": np.arange(4) * -10.0, "x": np.arange(5) * 10.0, "spatial_ref": 0},
        attrs={"AREA_OR_POINT": "Area", "scale_factor": 2.0},
    )
    image.coords["spatial_ref"].attrs["crs_wkt"] = "a CRS"
    if lazy:
        image = image.chunk({"y": 2})
    out = raster.transform(_identity(), image)
    assert out.dims == ("index", "y", "x") and (out.chunks is not None) == lazy
    np.testing.assert_array_equal(out.values, image.values)
    xr.testing.assert_identical(out.coords["x"], image.coords["x"])
    assert out.coords["spatial_ref"].attrs == {"crs_wkt": "a CRS"}
    assert out.attrs == {"AREA_OR_POINT": "Area", "long_name": ("0", "1", "2")}
    assert np.isnan(out.encoding["_FillValue"]) and out.name == "transform"


def test_dataset_round_trips_as_the_dataarray_of_its_variables():
    grid = _grid()
    dataset = xr.Dataset(
        {name: (("y", "x"), grid[..., k]) for k, name in enumerate(["a", "b", "c"])},
        coords={"y": np.arange(4), "x": np.arange(5)},
    )
    dataset["b"].attrs["nodata"] = grid[0, 0, 1]  # the b band's no-data: pixel (0, 0)
    out = raster.transform(_identity(), dataset)
    assert out.dims == ("index", "y", "x")
    expected = np.moveaxis(grid, -1, 0).copy()
    expected[:, 0, 0] = np.nan
    np.testing.assert_array_equal(out.values, expected)


def test_class_labels_keep_the_container_of_the_codes():
    codes = np.array([[0, 1], [255, 1]], dtype=np.uint8)
    labels = ["water", "land"]
    expected = np.array([["water", "land"], ["none", "land"]], dtype=object)
    for container in (codes, da.from_array(codes, chunks=1), xr.DataArray(codes)):
        out = raster.class_labels(container, labels, fill_value=255, fill_label="none")
        assert type(out) is type(container)
        np.testing.assert_array_equal(np.asarray(out), expected)


def test_numpy_images_import_no_container_module():
    code = (
        "import sys, numpy as np\n"
        "from sklearn.preprocessing import FunctionTransformer\n"
        "from sknd import raster\n"
        "t = FunctionTransformer(validate=True).fit(np.zeros((2, 3)))\n"
        "before = set(sys.modules)\n"
        "raster.transform(t, np.ones((2, 2, 3)))\n"
        "new = set(sys.modules) - before\n"
        "print(sorted(m for m in ('xarray', 'dask', 'pandas') if m in new))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("container", ["DataFrame", "DataArray", "Dataset"])
def test_band_warnings_point_at_the_caller_whatever_the_container(container):
    """Every container takes the same path to the band matching: the same stack depth."""
    grid = _grid()
    table = pd.DataFrame(grid.reshape(-1, 3), columns=["a", "b", "c"])
    model = LinearRegression().fit(table, np.arange(len(table)))
    names = ["c", "b", "a"]  # the model's bands, in another order
    images = {
        "DataFrame": pd.DataFrame(grid.reshape(-1, 3), columns=names),
        "DataArray": xr.DataArray(grid, dims=("y", "x", "band"), coords={"band": names}),
        "Dataset": xr.Dataset({n: (("y", "x"), grid[..., k]) for k, n in enumerate(names)}),
    }
    with pytest.warns(BandPositionWarning) as record:
        raster.predict(model, images[container], bands="positional")
    assert [w.filename for w in record] == [__file__]
