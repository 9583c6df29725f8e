"""Route an image to the path of its kind: numpy, pandas, dask or xarray.

:func:`apply_image` checks the options that :func:`sknd.raster.predict`,
:func:`~sknd.raster.predict_proba`, :func:`~sknd.raster.transform` and
:func:`~sknd.raster.class_map` share, then hands a numpy array (or a pandas
DataFrame) to the chunked pixel loop of :mod:`sknd._inference._pixels`, and a DataArray,
a Dataset or a bare dask array to :mod:`sknd.raster._xarray`. dask, pandas and
xarray are looked up, never imported, to tell the kinds apart.
"""

import sys
from numbers import Integral

import numpy as np

from .._inference._model_file import SavedModel
from .._inference._pixels import apply_pixels, prepare
from ._categorical import adjust_output
from ._checks import (
    check_fill_not_a_class,
    check_image_dtype,
    check_n_jobs,
    check_scalar,
    image_values,
)
from ._matching import band_columns
from ._xarray import apply_dataarray, dataset_bands, is_dataarray, is_dataset


def apply_image(
    method,
    estimator,
    image,
    *,
    band_dim,
    bands,
    sensor,
    output_dim,
    nodata,
    fill_value,
    chunk_pixels,
    n_jobs,
    dtype=None,
    codes=None,
):
    """Check the shared options and call ``estimator.<method>`` over ``image``'s pixels."""
    check_fitted(estimator)
    if not hasattr(estimator, method):
        raise AttributeError(f"{type(estimator).__name__} has no method {method!r}.")
    if not isinstance(chunk_pixels, Integral) or isinstance(chunk_pixels, bool) or chunk_pixels < 1:
        raise ValueError(f"chunk_pixels must be a positive integer, got {chunk_pixels!r}.")
    if not isinstance(output_dim, str):
        raise TypeError(f"output_dim must be a string, got {output_dim!r}.")
    if sensor is not None and not isinstance(sensor, str):
        raise TypeError(f"sensor must be a preset name (str) or None, got {sensor!r}.")
    n_jobs = check_n_jobs(n_jobs)
    options = {
        "nodata": check_scalar(nodata, "nodata", numeric=True),
        "fill_value": check_scalar(fill_value, "fill_value", numeric=method != "predict"),
        "chunk_pixels": int(chunk_pixels),
        "bands": bands,
        "sensor": sensor,
        "dtype": dtype,  # of the output, when not the estimator's
        "codes": codes,  # a CodeTable: labels written as class codes
    }
    if method == "predict" and codes is None:  # class codes keep their fill apart themselves
        check_fill_not_a_class(options["fill_value"], estimator)
    if is_dataset(image):
        if not isinstance(band_dim, str):
            raise TypeError(f"band_dim must be a dimension name for a Dataset, got {band_dim!r}.")
        image = dataset_bands(image, band_dim)
    if is_dataarray(image) or _is_dask_array(image):
        check_image_dtype(image.dtype)
    if is_dataarray(image):
        if not isinstance(band_dim, str):
            raise TypeError(f"band_dim must be a dimension name for a DataArray, got {band_dim!r}.")
        return apply_dataarray(method, estimator, image, band_dim, output_dim, n_jobs, options)
    if _is_dataframe(image):
        return _apply_dataframe(method, estimator, image, n_jobs, options)
    if _is_dask_array(image):
        return _apply_dask_array(method, estimator, image, band_dim, options)
    return _apply_ndarray(method, estimator, image_values(image), band_dim, n_jobs, options)[0]


def check_fitted(estimator):
    """scikit-learn's check, imported for other models than a loaded model file only."""
    if not isinstance(estimator, SavedModel):
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(estimator)


def _is_dataframe(image):
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(image, pd.DataFrame)


def _is_dask_array(image):
    # Look dask up without importing it: numpy users need neither dask nor xarray.
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(image, da.Array)


def _band_axis(ndim, band_dim):
    if ndim < 1:
        raise ValueError("image must have at least one (band) axis.")
    if isinstance(band_dim, str):
        return ndim - 1
    if not isinstance(band_dim, Integral) or isinstance(band_dim, bool):
        raise TypeError(f"band_dim must be a str or an int axis, got {band_dim!r}.")
    if not -ndim <= band_dim < ndim:
        raise ValueError(f"band_dim={band_dim} is out of range for an image with {ndim} axes.")
    return int(band_dim) % ndim


def _apply_ndarray(method, estimator, image, band_dim, n_jobs, options, names=None):
    axis = _band_axis(image.ndim, band_dim)
    n_bands = image.shape[axis]
    columns = band_columns(
        estimator, names, n_bands, bands=options["bands"], sensor=options["sensor"]
    )
    n_inputs = n_bands if columns is None else len(columns)
    func, spec = adjust_output(
        *prepare(method, estimator, n_inputs, image.dtype, options["fill_value"]), options
    )
    pixels = np.moveaxis(image, axis, -1)  # a view: chunks are copied one at a time
    if spec.n_outputs is None:
        out = np.empty(pixels.shape[:-1], dtype=spec.dtype)
        out_view = out
    else:
        shape = list(image.shape)
        shape[axis] = spec.n_outputs
        out = np.empty(shape, dtype=spec.dtype)
        out_view = np.moveaxis(out, axis, -1)
    apply_pixels(
        pixels,
        func,
        spec,
        out=out_view,
        chunk_pixels=options["chunk_pixels"],
        nodata=options["nodata"],
        n_jobs=n_jobs,
        columns=columns,
    )
    return out, spec


def _apply_dataframe(method, estimator, frame, n_jobs, options):
    import pandas as pd

    values = image_values(frame.to_numpy())
    names = [str(column) for column in frame.columns]
    out, spec = _apply_ndarray(method, estimator, values, -1, n_jobs, options, names=names)
    if spec.n_outputs is None:
        return pd.Series(out, index=frame.index, name=method)
    return pd.DataFrame(out, index=frame.index, columns=list(spec.output_labels))


def _apply_dask_array(method, estimator, image, band_dim, options):
    import xarray as xr

    axis = _band_axis(image.ndim, band_dim)
    dims = [f"dim_{i}" for i in range(image.ndim)]
    dims[axis] = "band"
    result = apply_dataarray(
        method, estimator, xr.DataArray(image, dims=dims), "band", "output", 1, options
    )
    return result.data
