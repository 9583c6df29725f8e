"""Between class codes and labels: codes from probabilities, labels from codes.

:func:`class_map_from_proba` gives the class map of a probability map (its
``argmax`` with the no-data pixels kept apart and the code table attached),
and :func:`class_labels` turns the codes of any class map back into labels,
lazily on dask.
"""

import numpy as np

from ._categorical import CodeTable, check_categories, decode, read_categories
from ._containers import adapt, container_of
from ._xarray import GRID_ATTRS, DataArrayImage

__all__ = []


def class_map_from_proba(proba, *, class_dim="class", fill_value=None):
    """The class map of a probability map: its ``argmax`` as class codes.

    The code of a pixel is the position of its most probable class along
    ``class_dim`` (the same codes as :func:`class_map` for a probability map
    of :func:`predict_proba`); no-data pixels (a NaN probability, or all
    equal to the map's ``_FillValue`` when it is a number) get
    ``fill_value``. Unlike ``proba.argmax(class_dim)``, which raises on
    no-data pixels (all their probabilities are NaN), the result carries
    the code table and a fill value of its own type, so that
    ``rio.to_raster`` writes it as it is.

    Parameters
    ----------
    proba : xarray.DataArray
        Class probabilities with a class dimension whose coordinate holds the
        labels (what :func:`predict_proba` returns); may be dask-backed.
    class_dim : str, default="class"
        Name of the class dimension.
    fill_value : int or None, default=None
        Code of no-data pixels, see :func:`class_map`.

    Returns
    -------
    codes : xarray.DataArray
        The map without the class dimension, with the attributes of
        :func:`class_map`'s result.

    Examples
    --------
    >>> import numpy as np
    >>> import xarray as xr
    >>> from sknd import raster
    >>> proba = xr.DataArray(
    ...     [[[0.9, np.nan]], [[0.1, np.nan]]], dims=("class", "y", "x"),
    ...     coords={"class": ["water", "land"]})
    >>> codes = raster.class_map_from_proba(proba)
    >>> codes.values.tolist(), codes.attrs["flag_meanings"]
    ([[0, 255]], 'water land')
    """
    if container_of(proba) is not DataArrayImage:
        raise TypeError(
            f"proba must be an xarray.DataArray with a {class_dim!r} dimension, got "
            f"{type(proba).__name__}; for arrays use numpy's argmax."
        )
    if class_dim not in proba.dims:
        raise ValueError(
            f"proba has no dimension {class_dim!r} (its dimensions are {proba.dims}); "
            "pass the name of its class dimension as class_dim."
        )
    if proba.dtype.kind != "f":
        raise TypeError(f"proba must hold float probabilities, got dtype {proba.dtype}.")
    if class_dim in proba.coords:
        classes = proba.coords[class_dim].values
    else:
        classes = np.arange(proba.sizes[class_dim])
    table = CodeTable(classes, fill_value)
    valid = proba.notnull().all(class_dim)
    nodata = proba.attrs.get("_FillValue")
    if nodata is not None and (
        isinstance(nodata, (str, bytes)) or np.asarray(nodata).dtype.kind not in "biuf"
    ):
        raise ValueError(
            f"proba's _FillValue attribute is {nodata!r}, not a number: set it to the "
            "probabilities' fill value (e.g. proba.attrs['_FillValue'] = np.nan) or delete it."
        )
    if nodata is not None and np.ndim(nodata) == 0 and not np.isnan(nodata):
        # predict_proba(fill_value=0.0): no class of a real pixel has all probabilities 0.
        valid = valid & (proba != nodata).any(class_dim)
    codes = proba.fillna(-np.inf).argmax(class_dim)
    # where() promotes to float; a block at a time, back to the codes' type.
    result = codes.where(valid, table.fill).astype(table.dtype)
    if class_dim in result.coords:
        result = result.drop_vars(class_dim)
    grid = {key: proba.attrs[key] for key in GRID_ATTRS if key in proba.attrs}
    result.attrs = {**grid, **table.attrs()}
    if "grid_mapping" in proba.encoding:
        result.encoding = {"grid_mapping": proba.encoding["grid_mapping"]}
    result.name = "class_map"
    return result


def class_labels(codes, categories=None, *, fill_value=None, fill_label=None):
    """Turn a class map's codes back into class labels.

    Parameters
    ----------
    codes : ndarray, dask array or xarray.DataArray
        Integer class codes, e.g. the result of :func:`class_map` or a class
        map read back from a GeoTIFF with rioxarray.
    categories : dict, sequence or None, default=None
        The labels: a dict ``{code: label}`` or a sequence whose position is
        the code (e.g. ``estimator.classes_``). None reads a DataArray's
        ``categories`` attribute (kept as a GeoTIFF tag).
    fill_value : int or None, default=None
        Code of no-data pixels; None takes a DataArray's ``_FillValue``.
    fill_label : scalar or None, default=None
        Label of no-data pixels. None means NaN, as in :func:`predict`:
        integer labels become float64 and string labels an object array.

    Returns
    -------
    labels : ndarray, dask array or xarray.DataArray
        The labels, in the same container (lazy when the codes are), the
        dtype that of the labels and ``fill_label`` together.

    Raises
    ------
    ValueError
        If a code is neither a class code nor the fill value.

    Examples
    --------
    >>> import numpy as np
    >>> from sknd import raster
    >>> raster.class_labels(np.array([[0, 1], [255, 1]]), ["water", "land"],
    ...                     fill_value=255, fill_label="").tolist()
    [['water', 'land'], ['', 'land']]
    """
    codes_image = adapt(codes)
    attrs = codes_image.attrs
    if categories is None:
        table = read_categories(attrs)
        if table is None:
            raise ValueError(
                "Pass categories (the labels, e.g. estimator.classes_): the codes carry no "
                "'categories' attribute."
            )
    else:
        table = check_categories(categories)
    if not table:
        raise ValueError("categories is empty: a class map needs at least one class.")
    if fill_value is None:
        fill_value = attrs.get("_FillValue")
        if fill_value is not None and np.isnan(fill_value):
            fill_value = None
    if fill_value is not None:
        fill_value = int(fill_value)
    dtype = decode(np.zeros(0, dtype=np.int64), table, fill_value, fill_label).dtype
    data = adapt(codes_image.array())  # numpy, or dask: decoded a block at a time
    if data.values().dtype.kind not in "iu":
        raise TypeError(f"codes must be integers, got dtype {data.values().dtype}.")
    labels = data.map_values(decode, table, fill_value, fill_label, dtype=dtype)
    return codes_image.like(labels, {"long_name": "class"})
