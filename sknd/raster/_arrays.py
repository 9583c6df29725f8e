"""In-memory images: numpy arrays (masked ones too) and pandas DataFrames of pixels.

Each container an image may come in has one adapter, which turns the image
into pixel tables ``(n_pixels, n_bands)`` and the method's outputs back into
the container (:mod:`sknd.raster._containers` picks the adapter of an
image). :class:`NumpyImage` is the adapter of a numpy array, and the base of
the others: what it does (no band names, no no-data value of its own, the
result as a bare array) is what every adapter does unless its container says
otherwise. The other containers' adapters are :class:`MaskedImage` and
:class:`DataFrameImage` here, and those of xarray and dask in
:mod:`sknd.raster._xarray`.

An adapter has two sides. For :func:`sknd.raster.class_labels`, any array of
values: its attributes, its values and a function mapped over them (a block at
a time when lazy), and the result in the container. For the image functions
(:func:`sknd.raster.predict` and the others), an image of bands:
:meth:`NumpyImage.with_bands` checks the band axis and the values, and sets
the number of bands, their dtype and names; then :meth:`NumpyImage.apply`
runs a :class:`PixelJob` over its pixel tables
(:func:`sknd._inference._pixels.apply_pixels`), with the image's own no-data value
where the job has none, and builds the result.
"""

from numbers import Integral
from typing import Any, NamedTuple

import numpy as np

from .._inference._pixels import apply_pixels
from ._checks import check_image_dtype

__all__ = []


class PixelJob(NamedTuple):
    """What runs over an image's pixel tables, and what the result is made of.

    ``func`` maps a table ``(n, n_inputs)`` to the method's output, laid out
    as ``spec`` (an :class:`sknd._inference._pixels.OutputSpec`) says; ``columns`` picks
    the model's inputs among the image's bands (None: all, in order);
    ``nodata`` is the ``nodata`` option, one value (None: the image's own no-data
    value, where its container has one). ``classes`` is the estimator's
    ``classes_`` (None for other estimators) and ``codes`` the
    :class:`~sknd.raster._categorical.CodeTable` of a class map.
    """

    method: str
    func: Any
    spec: Any
    chunk_pixels: int
    nodata: Any
    n_jobs: int
    columns: Any
    classes: Any
    codes: Any


class NumpyImage:
    """A numpy array, or anything :func:`numpy.asarray` takes: bands on one axis."""

    #: The container an adapter takes, as ``(module, class)``: looked up in
    #: ``sys.modules``, never imported. None: the adapter of what no other takes.
    container = None

    #: The names the image gives its bands (None: none), set by :meth:`with_bands`
    #: with ``n_bands`` and ``dtype``.
    names = None

    def __init__(self, image):
        self.image = image
        self.axis = self.pixels = self.n_bands = self.dtype = None

    # ---------------------------------------------------------- arrays of values
    @property
    def attrs(self):
        """The attributes the container carries (none)."""
        return {}

    def array(self):
        """The array holding the values (a DataArray's ``data``)."""
        return self.image

    def values(self):
        """The values: a numpy array, or a lazy one for dask."""
        return np.asarray(self.image)

    def map_values(self, func, *args, dtype):
        """``func(values, *args)``, of ``dtype``; a block at a time when lazy."""
        return func(self.values(), *args)

    def like(self, values, attrs):
        """``values`` (of the container's shape) in the container, with ``attrs``."""
        return values

    # ----------------------------------------------------------- images of bands
    def with_bands(self, band_dim, output_dim):
        """The image checked as an image of bands along ``band_dim``: an adapter.

        ``output_dim`` names a new output dimension, where the container has
        named dimensions (a numpy array has none).
        """
        self.pixels = self.band_values()
        self.axis = band_axis(self.pixels.ndim, band_dim)
        self.n_bands, self.dtype = self.pixels.shape[self.axis], self.pixels.dtype
        return self

    def band_values(self):
        """The image as an array of real band values (object arrays converted)."""
        try:
            image = np.asarray(self.image)
        except ValueError as exc:  # ragged nested lists
            raise ValueError(
                "image must be an array of band values with one shape, got a ragged "
                f"sequence ({exc})."
            ) from None
        if image.dtype == object:
            try:
                image = image.astype(np.float64)
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"image must hold numeric band values, but some are not numbers ({exc})."
                ) from None
        check_image_dtype(image.dtype)
        return image

    def apply(self, job):
        """``job`` over the pixels, chunk by chunk: the output array, the band axis replaced."""
        spec = job.spec
        pixels = np.moveaxis(self.pixels, self.axis, -1)  # a view: chunks copied one at a time
        if spec.n_outputs is None:
            out = np.empty(pixels.shape[:-1], dtype=spec.dtype)
            out_view = out
        else:
            shape = list(self.pixels.shape)
            shape[self.axis] = spec.n_outputs
            out = np.empty(shape, dtype=spec.dtype)
            out_view = np.moveaxis(out, self.axis, -1)
        apply_pixels(
            pixels,
            job.func,
            spec,
            out=out_view,
            chunk_pixels=job.chunk_pixels,
            nodata=job.nodata,
            n_jobs=job.n_jobs,
            columns=job.columns,
        )
        return out


class MaskedImage(NumpyImage):
    """A masked array (rasterio's ``read(masked=True)``): masked pixels are no-data."""

    container = ("numpy.ma", "MaskedArray")

    def band_values(self):
        image = self.image
        mask = np.ma.getmaskarray(image)
        dtype = np.result_type(image.dtype, np.float32) if image.dtype.kind in "biuf" else None
        check_image_dtype(np.dtype(dtype) if dtype is not None else image.dtype)
        return np.ma.filled(image.astype(dtype), np.nan) if mask.any() else image.data


class DataFrameImage(NumpyImage):
    """A :class:`pandas.DataFrame` of pixels, one column per band, named by the columns."""

    container = ("pandas", "DataFrame")

    def with_bands(self, band_dim, output_dim):
        super().with_bands(-1, output_dim)  # the columns are the bands
        self.names = [str(column) for column in self.image.columns]
        return self

    def band_values(self):
        return NumpyImage(self.image.to_numpy()).band_values()

    def apply(self, job):
        """A Series on the frame's index, or a DataFrame with a column per output."""
        import pandas as pd

        out = super().apply(job)
        if job.spec.n_outputs is None:
            return pd.Series(out, index=self.image.index, name=job.method)
        return pd.DataFrame(out, index=self.image.index, columns=list(job.spec.output_labels))


def band_axis(ndim, band_dim):
    """The band axis of an array of ``ndim`` axes: ``band_dim`` when an int, else the last."""
    if ndim < 1:
        raise ValueError("image must have at least one (band) axis.")
    if isinstance(band_dim, str):
        return ndim - 1
    if not isinstance(band_dim, Integral) or isinstance(band_dim, bool):
        raise TypeError(f"band_dim must be a str or an int axis, got {band_dim!r}.")
    if not -ndim <= band_dim < ndim:
        raise ValueError(f"band_dim={band_dim} is out of range for an image with {ndim} axes.")
    return int(band_dim) % ndim
