"""The image functions (``predict``, ``predict_proba``, ``transform``, ``class_map``), one path.

Each function documents its options (the pieces they share are written once,
below, and injected by :class:`~sknd._docstrings.Substitution`) and hands the
image to :func:`apply_image`, their one path: it checks the shared options,
asks :mod:`sknd.raster._containers` for the adapter of the image's container
(numpy, pandas, dask, xarray), and works on what the adapter gives: the
image's bands matched to the model's (:mod:`sknd.raster._matching`), the pixel
function and its output layout (:mod:`sknd._inference._pixels`), then a
:class:`~sknd.raster._arrays.PixelJob` that the adapter runs over its pixel
tables and turns into its container's result. Nothing here tells containers
apart. The user guide is ``docs/raster.md``.
"""

import numpy as np

from .._docstrings import Substitution
from .._inference._pixels import DEFAULT_CHUNK_PIXELS, prepare
from .._model_file import SavedModel
from ._arrays import PixelJob
from ._categorical import CodeTable, adjust_output
from ._checks import check_options, check_scalar
from ._containers import adapt
from ._matching import band_columns

_IMAGE_PARAMETERS = """\
    estimator : fitted estimator
        Any fitted scikit-learn compatible estimator that takes a table of
        pixels ``(n_pixels, n_bands)``; fitted sknd estimators take a fast
        path that gives the same values as their methods.
    image : ndarray, dask array, xarray.DataArray, xarray.Dataset or pandas.DataFrame
        The image. numpy and dask arrays have their bands on the last axis
        (or on axis ``band_dim`` when it is an int); a DataArray has them
        along dimension ``band_dim``, in any position; a Dataset has one
        variable per band, named after it. Any number of other
        dimensions (``y, x``, ``time, y, x``, ...) is allowed. A DataFrame
        is a table of pixels with one column per band.
    band_dim : str or int, default="band"
        Name of the band dimension of a DataArray. For numpy and dask arrays
        an int gives the band axis; a string means the last axis.
    bands : sequence of str, "positional" or None, default=None
        Names of the image's bands, in order, overriding the names the image
        carries (band coordinate, ``long_name`` band descriptions, DataFrame
        columns). When the estimator has band names (``feature_names_in_``
        or an sknd estimator's ``bands=``), the bands it uses are picked and
        ordered by name, through the sensor presets when the names are of
        another sensor. ``"positional"`` takes the bands in order without
        matching names (a :class:`~sknd.bands.BandPositionWarning` says when
        the image's names match in another order). An image without names
        given to a model with names raises a ``ValueError``: name its bands,
        or pass ``"positional"``.
    sensor : str or None, default=None
        Sensor preset of the image's band names (see
        :func:`sknd.bands.get_sensor`), e.g. ``"sentinel2"`` for a scene
        whose bands are called ``B02``, ``B08``; guessed from the names when
        None. An unknown preset raises a ``ValueError``.
"""

_NODATA_PARAMETER = """\
    nodata : scalar or None, default=None
        Value marking missing data in the input, in addition to NaN. A pixel
        is no-data when any band the estimator uses is NaN or equals
        ``nodata``. None takes a DataArray's ``_FillValue`` (the file's
        nodata as rioxarray reads it, in the attributes or the encoding; one
        value, or one per band) when it has one.
"""

_CHUNK_PARAMETERS = """\
    chunk_pixels : int, default=DEFAULT_CHUNK_PIXELS
        Maximum number of pixels passed to the estimator at once. Bounds the
        memory of each call; dask blocks larger than this are split too. An
        sknd model on a GPU screens and evaluates chunks there, and takes the
        default as 4,194,304 pixels (2**22), large enough to keep the device
        busy (pass a smaller value if its memory runs out).
    n_jobs : int or None, default=None
        Threads processing the chunks of an in-memory image (``None``: 1,
        ``-1``: all cores). Threads help when the estimator releases the GIL
        (numpy- or torch-heavy code such as sknd's fast path). Ignored for
        dask-backed images, whose parallelism is the dask scheduler's.
"""

_RETURN_NOTES = """\
    For a numpy array the result is a numpy array, for a bare dask array a
    lazy dask array, for a DataFrame a Series (or a DataFrame) on its index,
    for a DataArray a DataArray (lazy when the input was) that keeps the
    other dimensions, the non-band coordinates and their attributes (the CRS
    in ``spatial_ref`` with it, so that ``result.rio.crs`` and
    ``result.rio.transform()`` equal the input's); the band coordinate is
    dropped and the attributes describe the output: ``long_name`` (the class
    or index names of a new output dimension, which rioxarray writes as band
    descriptions) and ``classes`` for a classifier's labels. The fill value,
    which ``rio.to_raster`` writes as the GeoTIFF's nodata, is the
    ``_FillValue`` of the encoding when it is NaN (the data is masked, as
    xarray leaves a decoded file's, and what is derived from the result, such
    as ``argmax`` of probabilities, does not inherit it), of the attributes
    when it is a number (``fill_value=-1``). A new output
    dimension takes the position of the band dimension. A dask-backed band
    dimension is rechunked to a single chunk (every pixel needs all its
    bands); chunk the spatial dimensions as you wish.
"""


@Substitution(
    image_parameters=_IMAGE_PARAMETERS,
    nodata_parameter=_NODATA_PARAMETER,
    chunk_parameters=_CHUNK_PARAMETERS,
    return_notes=_RETURN_NOTES,
)
def predict(
    estimator,
    image,
    *,
    band_dim="band",
    bands=None,
    sensor=None,
    output_dim="output",
    nodata=None,
    fill_value=None,
    chunk_pixels=DEFAULT_CHUNK_PIXELS,
    n_jobs=None,
):
    """Predict every pixel of an image with ``estimator.predict``.

    Parameters
    ----------
    {image_parameters}
    output_dim : str, default="output"
        Name of the output dimension, used only by multi-output estimators
        (e.g. a regressor fitted on several targets).
    {nodata_parameter}
    fill_value : scalar or None, default=None
        Prediction written to no-data pixels. ``None`` means NaN: float
        predictions keep their dtype, integer or boolean labels are promoted
        to float64 (as :meth:`xarray.DataArray.where` does) and other labels
        (strings) become an object array holding NaN. Give a value of
        the labels' kind (e.g. ``-1`` for integer classes, ``"nodata"`` for
        string classes) to keep the dtype of ``classes_``; the output dtype is
        the one numpy's type promotion gives for labels and ``fill_value``.
        A value equal to one of ``classes_`` raises a ``ValueError``: no-data
        would read as that class.
    {chunk_parameters}

    Returns
    -------
    prediction : ndarray, dask array or xarray.DataArray
        The image without its band axis, e.g. ``(H, W)`` for ``(H, W,
        bands)``; multi-output estimators add an ``output_dim`` axis in place
        of the band axis. The dtype is that of the estimator's predictions
        (``classes_`` for a classifier), see ``fill_value``.

    Notes
    -----
    {return_notes}

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sknd import raster
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, size=(100, 3))
    >>> clf = LogisticRegression().fit(X, np.where(X[:, 0] > X[:, 1], 1, 2))
    >>> image = rng.uniform(0, 1, size=(4, 5, 3))
    >>> image[0, 0, 2] = np.nan                     # a no-data pixel
    >>> labels = raster.predict(clf, image, fill_value=0)   # 0: no class
    >>> labels.shape, labels.dtype, labels[0, 0]
    ((4, 5), dtype('int64'), np.int64(0))
    >>> raster.predict(clf, image).dtype            # NaN needs floats
    dtype('float64')
    """
    return apply_image(
        "predict",
        estimator,
        image,
        band_dim=band_dim,
        bands=bands,
        sensor=sensor,
        output_dim=output_dim,
        nodata=nodata,
        fill_value=fill_value,
        chunk_pixels=chunk_pixels,
        n_jobs=n_jobs,
    )


@Substitution(
    image_parameters=_IMAGE_PARAMETERS,
    nodata_parameter=_NODATA_PARAMETER,
    chunk_parameters=_CHUNK_PARAMETERS,
    return_notes=_RETURN_NOTES,
)
def predict_proba(
    estimator,
    image,
    *,
    band_dim="band",
    bands=None,
    sensor=None,
    output_dim="class",
    nodata=None,
    fill_value=None,
    dtype=np.float32,
    chunk_pixels=DEFAULT_CHUNK_PIXELS,
    n_jobs=None,
):
    """Class probabilities of every pixel with ``estimator.predict_proba``.

    Parameters
    ----------
    {image_parameters}
    output_dim : str, default="class"
        Name of the class dimension; its coordinate is ``estimator.classes_``.
    {nodata_parameter}
    fill_value : float or None, default=None
        Probability written to no-data pixels; ``None`` means NaN.
    dtype : float dtype, default=numpy.float32
        Type of the probabilities. float32 holds them to about 7 digits in
        half the memory of float64 (which ``dtype=np.float64`` keeps).
    {chunk_parameters}

    Returns
    -------
    proba : ndarray, dask array or xarray.DataArray
        The image with a class axis of length ``n_classes`` in place of the
        band axis, e.g. ``(H, W, n_classes)`` for ``(H, W, bands)`` and
        ``(class, y, x)`` for a DataArray ``(band, y, x)``.

    Notes
    -----
    {return_notes}

    Examples
    --------
    >>> import numpy as np
    >>> import xarray as xr
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sknd import raster
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, size=(100, 3))
    >>> clf = LogisticRegression().fit(X, np.where(X[:, 0] > X[:, 1], "bright", "dark"))
    >>> image = xr.DataArray(
    ...     rng.uniform(0, 1, size=(3, 4, 5)),
    ...     dims=("band", "y", "x"),
    ...     coords={"y": np.arange(4), "x": np.arange(5)},
    ... )
    >>> proba = raster.predict_proba(clf, image)
    >>> proba.dims, proba["class"].values.tolist(), proba.dtype
    (('class', 'y', 'x'), ['bright', 'dark'], dtype('float32'))
    """
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise TypeError(f"dtype must be a float type for probabilities, got {dtype}.")
    return apply_image(
        "predict_proba",
        estimator,
        image,
        band_dim=band_dim,
        bands=bands,
        sensor=sensor,
        output_dim=output_dim,
        nodata=nodata,
        fill_value=fill_value,
        chunk_pixels=chunk_pixels,
        n_jobs=n_jobs,
        dtype=dtype,
    )


@Substitution(
    image_parameters=_IMAGE_PARAMETERS,
    nodata_parameter=_NODATA_PARAMETER,
    chunk_parameters=_CHUNK_PARAMETERS,
    return_notes=_RETURN_NOTES,
)
def transform(
    estimator,
    image,
    *,
    band_dim="band",
    bands=None,
    sensor=None,
    output_dim="index",
    nodata=None,
    fill_value=None,
    chunk_pixels=DEFAULT_CHUNK_PIXELS,
    n_jobs=None,
):
    """Transform every pixel of an image with ``estimator.transform``.

    Typically used with :class:`sknd.NDTransformer` to turn a scene into maps
    of its learned indices.

    Parameters
    ----------
    {image_parameters}
    output_dim : str, default="index"
        Name of the output dimension; its coordinate is
        ``estimator.get_feature_names_out()`` when the estimator has it.
    {nodata_parameter}
    fill_value : float or None, default=None
        Value written to no-data pixels; ``None`` means NaN.
    {chunk_parameters}

    Returns
    -------
    features : ndarray, dask array or xarray.DataArray
        The image with an axis of ``n_features_out`` in place of the band
        axis.

    Notes
    -----
    {return_notes}

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.decomposition import PCA
    >>> from sknd import raster
    >>> rng = np.random.default_rng(0)
    >>> pca = PCA(n_components=2).fit(rng.uniform(0, 1, size=(50, 4)))
    >>> raster.transform(pca, rng.uniform(0, 1, size=(6, 7, 4))).shape
    (6, 7, 2)
    """
    return apply_image(
        "transform",
        estimator,
        image,
        band_dim=band_dim,
        bands=bands,
        sensor=sensor,
        output_dim=output_dim,
        nodata=nodata,
        fill_value=fill_value,
        chunk_pixels=chunk_pixels,
        n_jobs=n_jobs,
    )


@Substitution(
    image_parameters=_IMAGE_PARAMETERS,
    nodata_parameter=_NODATA_PARAMETER,
    chunk_parameters=_CHUNK_PARAMETERS,
)
def class_map(
    estimator,
    image,
    *,
    band_dim="band",
    bands=None,
    sensor=None,
    nodata=None,
    fill_value=None,
    chunk_pixels=DEFAULT_CHUNK_PIXELS,
    n_jobs=None,
):
    """Classify every pixel into an integer class map that GIS tools open as it is.

    Each pixel holds the *code* of its predicted class: the position of the
    label in ``estimator.classes_`` (``0 .. n_classes - 1``), for string and
    integer labels alike, and the same number as ``argmax`` of the class
    probabilities. The codes are in the smallest unsigned type holding them
    and the fill value (``uint8`` up to 255 classes), so that a lazy map of
    string labels never holds Python objects. :func:`class_labels` turns the
    codes back into labels; :func:`write_class_map` writes the map as a
    GeoTIFF (or COG) with a colour table and category names.

    Parameters
    ----------
    {image_parameters}
    {nodata_parameter}
    fill_value : int or None, default=None
        Code of no-data pixels, outside the class codes. None takes the
        largest value of the type: 255 (``uint8``) up to 255 classes, 65535
        (``uint16``) up to 65535. A value such as -1 gives a signed type.
    {chunk_parameters}

    Returns
    -------
    codes : ndarray, dask array or xarray.DataArray
        The image without its band axis. A DataArray keeps the image's
        coordinates (CRS and transform included) and carries the code table:
        ``flag_values`` and ``flag_meanings`` (CF conventions: the codes and
        their labels as blank-free words), ``categories`` (JSON text
        ``{{"code": label}}``, exact labels and their types) and
        ``_FillValue`` (the fill value, a GeoTIFF's nodata), so that
        ``codes.rio.to_raster(path)`` writes it as it is.

    Raises
    ------
    ValueError
        If ``fill_value`` is a class code, or a label cannot be written as a
        category name (control characters, more than 254 characters).

    Examples
    --------
    >>> import numpy as np
    >>> import xarray as xr
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sknd import raster
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, size=(100, 3))
    >>> clf = LogisticRegression().fit(X, np.where(X[:, 0] > X[:, 1], "bright", "dark"))
    >>> image = xr.DataArray(rng.uniform(0, 1, size=(3, 4, 5)), dims=("band", "y", "x"))
    >>> image[:, 0, 0] = np.nan                      # a no-data pixel
    >>> codes = raster.class_map(clf, image)
    >>> codes.dtype, int(codes[0, 0]), codes.attrs["flag_meanings"]
    (dtype('uint8'), 255, 'bright dark')
    >>> raster.class_labels(codes, fill_label="none").values[0, :3].tolist()
    ['none', 'bright', 'dark']
    """
    check_fitted(estimator)
    if getattr(estimator, "classes_", None) is None:
        raise TypeError(
            f"class_map needs a classifier (an estimator with classes_), got "
            f"{type(estimator).__name__}; use predict for other estimators."
        )
    table = CodeTable(estimator.classes_, check_scalar(fill_value, "fill_value", numeric=True))
    return apply_image(
        "predict",
        estimator,
        image,
        band_dim=band_dim,
        bands=bands,
        sensor=sensor,
        output_dim="output",
        nodata=nodata,
        fill_value=None,
        chunk_pixels=chunk_pixels,
        n_jobs=n_jobs,
        codes=table,
    )


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
