"""Which adapter takes an image: the one place where containers are told apart.

Each container an image or a class map may come in (numpy and masked
arrays, pandas DataFrames, bare dask arrays, xarray DataArrays and Datasets)
has one adapter (:mod:`sknd.raster._arrays`, :mod:`sknd.raster._xarray`):
it turns the container into pixel tables and the results back. Each adapter
names its container as ``(module, class)``; :func:`container_of` looks the
module up in ``sys.modules`` and never imports it (numpy users need neither
pandas nor dask nor xarray: an object of a module not imported is none of
its types). A new container is one adapter, listed in :data:`ADAPTERS`.
"""

import sys

from ._arrays import DataFrameImage, MaskedImage, NumpyImage
from ._xarray import DaskImage, DataArrayImage, DatasetImage

__all__ = []

#: The adapters of containers other than numpy arrays; :class:`NumpyImage` takes
#: whatever none of them takes (numpy arrays, nested lists, other array types).
ADAPTERS = (DataArrayImage, DatasetImage, DataFrameImage, DaskImage, MaskedImage)


def container_of(image):
    """The adapter class of ``image``'s container."""
    for adapter in ADAPTERS:
        module_name, class_name = adapter.container
        module = sys.modules.get(module_name)  # looked up, never imported
        if module is not None and isinstance(image, getattr(module, class_name)):
            return adapter
    return NumpyImage


def adapt(image):
    """``image`` (an image or an array of values) in its container's adapter."""
    return container_of(image)(image)
