"""The image functions' common path: the shared options checked, the image as pixel tables.

:func:`apply_image` checks the options that :func:`sknd.raster.predict`,
:func:`~sknd.raster.predict_proba`, :func:`~sknd.raster.transform` and
:func:`~sknd.raster.class_map` share, asks :mod:`sknd.raster._containers`
for the adapter of the image's container (numpy, pandas, dask, xarray), and
works on what the adapter gives: the image's bands matched to the model's
(:mod:`sknd.raster._matching`), the pixel function and its output layout
(:mod:`sknd._inference._pixels`), then a :class:`~sknd.raster._arrays.PixelJob` that
the adapter runs over its pixel tables and turns into its container's
result. Nothing here tells containers apart.
"""

from .._inference._model_file import SavedModel
from .._inference._pixels import prepare
from ._arrays import PixelJob
from ._categorical import adjust_output
from ._checks import check_options
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
    options = check_options(
        method,
        estimator,
        chunk_pixels=chunk_pixels,
        output_dim=output_dim,
        sensor=sensor,
        n_jobs=n_jobs,
        nodata=nodata,
        fill_value=fill_value,
        bands=bands,
        dtype=dtype,
        codes=codes,
    )
    image = adapt(image).with_bands(band_dim, output_dim)
    return _apply_tables(method, estimator, image, options)


def check_fitted(estimator):
    """scikit-learn's check, imported for other models than a loaded model file only."""
    if not isinstance(estimator, SavedModel):
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(estimator)


def _apply_tables(method, estimator, image, options):
    """``estimator.<method>`` over the pixel tables of ``image`` (an adapter): its result."""
    n_bands = image.n_bands
    columns = band_columns(
        estimator, image.names, n_bands, bands=options["bands"], sensor=options["sensor"]
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
        nodata=options["nodata"],
        n_jobs=options["n_jobs"],
        columns=columns,
        classes=getattr(estimator, "classes_", None),
        codes=options["codes"],
    )
    return image.apply(job)
