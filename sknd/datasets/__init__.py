"""Small real multispectral datasets, shipped with the package.

The loaders follow :mod:`sklearn.datasets`: they return a :class:`~sklearn.utils.Bunch` (or
``(X, y)`` with ``return_X_y=True``; DataFrames with ``as_frame=True``) whose
``feature_names`` are named after the spectral bands, so that learned indices get readable
names. :func:`load_sentinel2_scene` returns an image rather than a table of samples.
"""

from ._loaders import load_forest_type, load_satimage
from ._spyndex import load_landsat8_samples, load_sentinel2_scene

__all__ = ["load_forest_type", "load_landsat8_samples", "load_satimage", "load_sentinel2_scene"]
