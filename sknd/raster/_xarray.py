"""xarray and dask images: their adapters, band names, lazy application, what the result keeps.

The adapters (see :mod:`sknd.raster._arrays`) of a :class:`xarray.DataArray`
(:class:`DataArrayImage`), of a :class:`xarray.Dataset` with one variable per
band (:class:`DatasetImage`, taken as the DataArray of its variables) and of
a bare dask array (:class:`DaskImage`, taken as a DataArray without
coordinates). Their pixel tables are made a block at a time, lazily for
dask, by :func:`xarray.apply_ufunc`.

The result of :mod:`sknd.raster` on a DataArray is a map of the same place: it
keeps the non-band coordinates *with their attributes* (rioxarray keeps the
CRS and the transform in the attributes of the scalar ``spatial_ref``
coordinate, named by the ``grid_mapping`` attribute or encoding), and carries
attributes describing itself instead of the input's (whose band descriptions,
scale factors and nodata describe the bands, not the output).
"""

import numpy as np

from .._inference._pixels import apply_block
from ._arrays import NumpyImage, band_axis
from ._checks import band_nodata, check_image_dtype
from ._matching import band_name

__all__ = []

# Name of the new dimension while xarray builds the result: the user's name may
# equal the band dimension, which apply_ufunc would confuse with the input's.
_TMP_OUTPUT_DIM = "__sknd_output__"

# Input attributes that describe the grid, not the bands: kept on the output.
GRID_ATTRS = ("AREA_OR_POINT", "grid_mapping")


class DataArrayImage(NumpyImage):
    """A :class:`xarray.DataArray`, its bands along a named dimension in any position."""

    container = ("xarray", "DataArray")

    @property
    def attrs(self):
        return self.image.attrs

    def array(self):
        return self.image.data

    def like(self, values, attrs):
        result = self.image.copy(data=values)
        result.attrs = attrs
        result.encoding = {}
        return result

    def with_bands(self, band_dim, output_dim):
        check_image_dtype(self.image.dtype)
        if not isinstance(band_dim, str):
            raise TypeError(f"band_dim must be a dimension name for a DataArray, got {band_dim!r}.")
        _check_dims(self.image, band_dim, output_dim)
        self.band_dim, self.output_dim = band_dim, output_dim
        self.n_bands, self.dtype = self.image.sizes[band_dim], self.image.dtype
        self.names = image_band_names(self.image, band_dim)
        return self

    def apply(self, job):
        """A DataArray on the image's grid (lazy when the image is), its attributes its own."""
        image, spec = self.image, job.spec
        nodata = _image_nodata(image, self.band_dim, job.nodata)  # the file's, when not given
        lazy = image.chunks is not None
        if lazy:
            # apply_ufunc needs each pixel's bands in one block. Rechunk the data only:
            # DataArray.chunk would also turn numpy coordinates (e.g. 2-D lat/lon) into dask.
            axis = image.get_axis_num(self.band_dim)
            image = image.copy(deep=False, data=image.data.rechunk({axis: -1}))
        block_kwargs = {
            "func": job.func,
            "spec": spec,
            "chunk_pixels": job.chunk_pixels,
            "nodata": nodata,
            "n_jobs": 1 if lazy else job.n_jobs,
            "single_threaded_blas": lazy,
            "columns": job.columns,
        }
        result = _apply_blocks(image, self.band_dim, self.output_dim, spec, block_kwargs)
        result.attrs = _output_attrs(job.method, job.classes, image, spec)
        _write_fill(result, spec)
        if job.codes is not None:
            del result.attrs["classes"]  # the code table says it
            result.attrs.update(job.codes.attrs())
        if "grid_mapping" in image.encoding:
            result.encoding["grid_mapping"] = image.encoding["grid_mapping"]
        result.name = job.method
        return result


class DatasetImage(NumpyImage):
    """A :class:`xarray.Dataset` of one variable per band: the DataArray of its variables."""

    container = ("xarray", "Dataset")

    def with_bands(self, band_dim, output_dim):
        if not isinstance(band_dim, str):
            raise TypeError(f"band_dim must be a dimension name for a Dataset, got {band_dim!r}.")
        image = DataArrayImage(dataset_bands(self.image, band_dim))
        return image.with_bands(band_dim, output_dim)


class DaskImage(NumpyImage):
    """A bare dask array, bands on one axis: lazy, a block at a time, a dask array back."""

    container = ("dask.array", "Array")

    def values(self):
        return self.image

    def map_values(self, func, *args, dtype):
        return self.image.map_blocks(func, *args, dtype=dtype)

    def with_bands(self, band_dim, output_dim):
        check_image_dtype(self.image.dtype)
        self.pixels = self.image
        self.axis = band_axis(self.image.ndim, band_dim)
        self.n_bands, self.dtype = self.image.shape[self.axis], self.image.dtype
        return self

    def apply(self, job):
        import xarray as xr

        dims = [f"dim_{i}" for i in range(self.image.ndim)]
        dims[self.axis] = "band"
        image = DataArrayImage(xr.DataArray(self.image, dims=dims)).with_bands("band", "output")
        return image.apply(job).data  # lazy: one thread a block, whatever job.n_jobs


def dataset_bands(dataset, band_dim):
    """A Dataset with one variable per band (odc-stac, stackstac) as one DataArray.

    The bands lie along ``band_dim``, named after the variables (and so
    matched by name); the coordinates (``spatial_ref`` with the CRS) are kept,
    and each variable's no-data value (``_FillValue`` or ``nodata``) becomes
    the image's, one per band.
    """
    names = list(dataset.data_vars)
    if not names:
        raise ValueError("The Dataset has no data variables: pass one variable per band.")
    dims = {name: dataset[name].dims for name in names}
    if len(set(dims.values())) > 1:
        raise ValueError(
            f"The Dataset's variables lie on different grids (their dimensions: {dims}): "
            "resample them onto one grid first (e.g. odc-stac's load with one resolution)."
        )
    if band_dim in dims[names[0]]:
        raise ValueError(
            f"The Dataset's variables already have a dimension {band_dim!r}: pass one "
            "variable per band, or another band_dim for the bands of the variables."
        )
    variables = [dataset[name] for name in names]
    image = (
        dataset.to_dataarray(dim=band_dim)
        if hasattr(dataset, "to_dataarray")
        else dataset.to_array(dim=band_dim)  # xarray < 2023.12
    )
    fills = [_variable_nodata(variable) for variable in variables]
    if any(fill is not None for fill in fills):
        image.attrs["_FillValue"] = [np.nan if fill is None else fill for fill in fills]
    grid_mapping = variables[0].encoding.get("grid_mapping", variables[0].attrs.get("grid_mapping"))
    if grid_mapping is not None:
        image.encoding["grid_mapping"] = grid_mapping
    return image


def _variable_nodata(variable):
    for key in ("_FillValue", "nodata"):
        value = variable.attrs.get(key, _encoded_fill(variable.encoding, key))
        if value is not None and np.ndim(value) == 0:
            return value
    return None


def _encoded_fill(encoding, key="_FillValue"):
    """The no-data value kept in an xarray encoding, unless it is of the packed values.

    xarray decodes a variable with ``scale_factor`` or ``add_offset`` into
    ``packed * scale_factor + add_offset``, its packed fill already NaN: the
    fill is no value of the decoded data (a decoded pixel may equal it, e.g.
    a reflectance of 0.0 with fill 0).
    """
    if "scale_factor" in encoding or "add_offset" in encoding:
        return None
    return encoding.get(key)


def image_band_names(image, band_dim):
    """The band names a DataArray carries, or None.

    A band coordinate of strings wins; else the ``long_name`` attribute
    (rioxarray reads a GeoTIFF's band descriptions there), read by
    :func:`per_band`. Integer band numbers (rioxarray's 1..n) are not names.
    """
    if band_dim in image.coords:
        labels = image.coords[band_dim].values.tolist()
        if all(isinstance(label, (str, bytes)) for label in labels):
            return [band_name(label) for label in labels]
    long_name = image.attrs.get("long_name")
    if not isinstance(long_name, (tuple, list)):
        return None
    names = per_band(image, band_dim, [band_name(name).strip() for name in long_name])
    return names if names is not None and all(names) else None


def per_band(image, band_dim, values):
    """A per-band attribute (one value per band of the file) for the image's bands, or None.

    ``.sel`` and ``.isel`` reorder or subset the bands and their coordinate,
    not the attributes: integer band numbers (rioxarray's 1..n) say which of
    the file's values each band has. Values that cannot be assigned to the
    bands (another count, band numbers outside 1..n) give None.
    """
    values = list(values)
    if band_dim in image.coords:
        labels = image.coords[band_dim].values.tolist()
        if all(_is_integer(k) for k in labels):
            if not all(1 <= k <= len(values) for k in labels):
                return None
            values = [values[int(k) - 1] for k in labels]
    return values if len(values) == image.sizes[band_dim] else None


def _is_integer(label):
    return isinstance(label, (int, np.integer)) and not isinstance(label, (bool, np.bool_))


def _image_nodata(image, band_dim, nodata):
    """``nodata``, or the image's ``_FillValue`` (its file's nodata) when None.

    ``_FillValue`` is read from the attributes, else from the encoding (where
    xarray keeps it once it has decoded the file), one value or one per band.
    """
    if nodata is not None:
        return nodata
    value = image.attrs.get("_FillValue", _encoded_fill(image.encoding))
    if value is None:
        return None
    if np.ndim(value) == 1:
        values = per_band(image, band_dim, np.asarray(value).tolist())
        if values is None:
            raise ValueError(
                f"The image's _FillValue holds {np.size(value)} values for its "
                f"{image.sizes[band_dim]} bands: pass nodata= (one value for every band), or "
                "set _FillValue to one value per band."
            )
        return band_nodata(values)
    if np.ndim(value) != 0:
        return None
    return band_nodata([value])


def _check_dims(image, band_dim, output_dim):
    if band_dim not in image.dims:
        raise ValueError(
            f"The image has no dimension {band_dim!r} (its dimensions are {image.dims}); "
            "pass the name of its band dimension as band_dim."
        )
    if output_dim != band_dim and output_dim in image.dims:
        raise ValueError(
            f"output_dim={output_dim!r} is already a dimension of the image {image.dims}; "
            "choose another name."
        )


def _apply_blocks(image, band_dim, output_dim, spec, block_kwargs):
    """:func:`apply_block` over the image's pixels, the outputs along ``output_dim``."""
    import xarray as xr

    output_core_dims = [[]] if spec.n_outputs is None else [[_TMP_OUTPUT_DIM]]
    gufunc_kwargs = {}
    if spec.n_outputs is not None:
        gufunc_kwargs["output_sizes"] = {_TMP_OUTPUT_DIM: spec.n_outputs}
    result = xr.apply_ufunc(
        apply_block,
        image,
        kwargs=block_kwargs,
        input_core_dims=[[band_dim]],
        output_core_dims=output_core_dims,
        dask="parallelized",
        output_dtypes=[spec.dtype],
        dask_gufunc_kwargs=gufunc_kwargs,
        # True keeps the attributes of the coordinates (the CRS in spatial_ref's);
        # the result's own attributes are replaced below.
        keep_attrs=True,
    )
    if spec.n_outputs is None:
        order = [dim for dim in image.dims if dim != band_dim]
    else:
        order = [_TMP_OUTPUT_DIM if dim == band_dim else dim for dim in image.dims]
    result = result.transpose(*order)
    if spec.n_outputs is not None:
        result = result.rename({_TMP_OUTPUT_DIM: output_dim})
        result = result.assign_coords({output_dim: spec.output_labels})
    return result


def _output_attrs(method, classes, image, spec):
    """What the output holds: its name(s) and the classes (``classes_``, or None)."""
    attrs = {key: image.attrs[key] for key in GRID_ATTRS if key in image.attrs}
    if spec.n_outputs is not None:
        # One name per output band: rioxarray writes them as band descriptions.
        attrs["long_name"] = tuple(str(label) for label in spec.output_labels)
    elif method == "predict" and classes is not None:
        attrs["long_name"] = "class"
    else:
        attrs["long_name"] = method
    if method == "predict" and classes is not None and np.ndim(classes) == 1:
        attrs["classes"] = [str(label) for label in classes]
    return attrs


def _write_fill(result, spec):
    """The output's no-data value, where xarray and rioxarray look for it.

    A NaN fill marks masked data, as xarray leaves a file's variable once it
    has decoded it: it goes to the encoding, as rioxarray's
    ``write_nodata(..., encoded=True)`` puts it. ``rio.to_raster`` writes it
    as the file's nodata, and what xarray derives from the output (``argmax``
    of the probabilities, arithmetic, ``astype``) does not inherit a NaN fill
    that its integers could not hold. A number is held by the no-data pixels
    themselves (``fill_value=-1``, the codes of a class map): it goes to the
    attributes, as rioxarray's ``write_nodata`` puts it, so that
    ``rio.nodata`` is the value the pixels hold.
    """
    if spec.dtype.kind not in "fiub" or np.ndim(spec.fill) != 0:
        return
    fill = np.asarray(spec.fill, dtype=spec.dtype).item()
    if np.isnan(fill):
        result.encoding["_FillValue"] = fill
    else:
        result.attrs["_FillValue"] = fill
