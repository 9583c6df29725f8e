"""Apply fitted estimators to raster images: numpy arrays, xarray, dask and pandas.

:func:`predict`, :func:`predict_proba` and :func:`transform` feed every pixel
of an image through any fitted scikit-learn estimator (sknd's or not, or a
model file loaded by :func:`sknd.load_model`) and give the result back on the
image's grid. :func:`class_map` classifies into integer class codes that GIS
tools open as they are; :func:`class_map_from_proba` gives the same codes from
probabilities, :func:`class_labels` turns codes back into labels and
:func:`write_class_map` writes a GeoTIFF with a colour table and category
names. ``python -m sknd.raster MODEL.sknd SCENE.tif OUT.tif`` applies a model
file to a scene window by window (``python -m sknd.raster --help``).

The user guide, ``docs/raster.md``, says which images they take, how bands are
matched by name (across sensors too), what no-data becomes, what a GeoTIFF
keeps, and how memory and speed are kept in hand.
"""

from .._inference._pixels import DEFAULT_CHUNK_PIXELS
from ._dispatch import class_map, predict, predict_proba, transform
from ._geotiff import write_class_map
from ._labels import class_labels, class_map_from_proba

__all__ = [
    "DEFAULT_CHUNK_PIXELS",
    "class_labels",
    "class_map",
    "class_map_from_proba",
    "predict",
    "predict_proba",
    "transform",
    "write_class_map",
]
