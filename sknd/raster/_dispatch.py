"""The image functions' common path: the shared options checked, the image as pixel tables.

:func:`apply_image` checks the options that :func:`sknd.raster.predict`,
:func:`~sknd.raster.predict_proba`, :func:`~sknd.raster.transform` and
:func:`~sknd.raster.class_map` share, asks :mod:`sknd.raster._containers`
for the adapter of the image's container (numpy, pandas, dask, xarray), and
works on what the adapter gives: the image's bands matched to the model's
(:mod:`sknd.raster._matching`), the pixel function and its output layout
(:mod:`sknd._pixels`), then a :class:`~sknd.raster._arrays.PixelJob` that
the adapter runs over its pixel tables and turns into its container's
result. Nothing here tells containers apart.
"""

from numbers import Integral

from .._model_file import SavedModel
from .._pixels import prepare
from ._arrays import PixelJob
from ._categorical import adjust_output
from ._checks import check_fill_not_a_class, check_n_jobs, check_scalar
from ._containers import adapt
from ._matching import band_columns


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
    image = adapt(image).with_bands(band_dim, output_dim)
    return _apply_tables(method, estimator, image, n_jobs, options)


def check_fitted(estimator):
    """scikit-learn's check, imported for other models than a loaded model file only."""
    if not isinstance(estimator, SavedModel):
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(estimator)


def _apply_tables(method, estimator, image, n_jobs, options):
    """``estimator.<method>`` over the pixel tables of ``image`` (an adapter): its result."""
    n_bands = image.n_bands
    columns = band_columns(
        estimator, image.band_names(), n_bands, bands=options["bands"], sensor=options["sensor"]
    )
    n_inputs = n_bands if columns is None else len(columns)
    func, spec = adjust_output(
        *prepare(method, estimator, n_inputs, image.dtype, options["fill_value"]), options
    )
    job = PixelJob(
        method=method,
        func=func,
        spec=spec,
        chunk_pixels=options["chunk_pixels"],
        nodata=image.nodata(options["nodata"]),
        n_jobs=n_jobs,
        columns=columns,
        classes=getattr(estimator, "classes_", None),
        codes=options["codes"],
    )
    return image.apply(job)
