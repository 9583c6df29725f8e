"""Loaders for the spyndex sample data: Landsat 8 samples and a Sentinel-2 scene.

The files are spyndex's own (MIT License, kept beside them in
``sknd/datasets/data/spyndex/``), rewritten in compact formats with their values
unchanged; nothing is downloaded at run time and spyndex is not needed.
"""

import numpy as np
import pandas as pd
from sklearn.utils import Bunch
from sklearn.utils._param_validation import validate_params

from ._loaders import data_file, load_descr, make_bunch

_LANDSAT8_BANDS = ("SR_B1", "SR_B2", "SR_B3", "SR_B4", "SR_B5", "SR_B6", "SR_B7", "ST_B10")
_LANDSAT8_CLASSES = np.array(["Urban", "Vegetation", "Water"])
_SENTINEL2_BANDS = ("B02", "B03", "B04", "B08")
# Illustrative georeferencing for the scene, which has none: UTM zone 33N, 10 m pixels.
_EXAMPLE_CRS = "EPSG:32633"
_EXAMPLE_TRANSFORM = (10.0, 0.0, 500_000.0, 0.0, -10.0, 5_000_000.0)


@validate_params(
    {"return_X_y": ["boolean"], "as_frame": ["boolean"]},
    prefer_skip_nested_validation=True,
)
def load_landsat8_samples(*, return_X_y=False, as_frame=False):
    """Load spyndex's Landsat 8 land-cover samples (multi-class classification).

    120 Landsat 8 Collection 2 Level-2 pixels of three land covers, with the
    surface reflectance of the seven OLI bands and the surface temperature.

    =================   ====================================================
    Classes                                       3 (Urban, Vegetation, Water)
    Samples total                                                          120
    Dimensionality                                                           8
    Features             reflectance SR_B1-SR_B7 in [0, 1], ST_B10 in kelvin
    =================   ====================================================

    Read more in the dataset description (``DESCR``), which also holds the
    citation and the MIT License attribution.

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.
    as_frame : bool, default=False
        If True, ``data`` is a pandas DataFrame with the band names as
        columns, ``target`` a Series named ``"class"``, and ``frame`` holds
        both.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the attributes:

        data : ndarray of shape (120, 8), float64, or DataFrame
            Band values.
        target : ndarray of shape (120,), int64, or Series
            Class index in ``0 .. 2``; ``target_names[target]`` gives the class.
        frame : DataFrame or None
            Data and target together when ``as_frame=True``.
        feature_names : ndarray of str
            ``"SR_B1"`` ... ``"SR_B7"``, ``"ST_B10"`` (Landsat 8 Collection 2
            names, understood by ``sensor="landsat8"``).
        target_names : ndarray of str
            ``"Urban"``, ``"Vegetation"``, ``"Water"``.
        target_codes : ndarray of str
            The class labels of the source file, equal to ``target_names``.
        DESCR : str
            Description of the dataset, citation and license.

    (data, target) : tuple if ``return_X_y`` is True

    Examples
    --------
    >>> from sknd.datasets import load_landsat8_samples
    >>> bunch = load_landsat8_samples()
    >>> bunch.data.shape, bunch.target_names.tolist()
    ((120, 8), ['Urban', 'Vegetation', 'Water'])
    >>> X, y = load_landsat8_samples(return_X_y=True, as_frame=True)
    >>> list(X.columns[:4])
    ['SR_B1', 'SR_B2', 'SR_B3', 'SR_B4']
    """
    with data_file("spyndex", "landsat8_samples.csv").open("r", encoding="ascii") as f:
        raw = pd.read_csv(f)
    data = raw[list(_LANDSAT8_BANDS)].to_numpy(dtype=np.float64)
    return make_bunch(
        data,
        raw["class"].to_numpy(dtype=str),
        _LANDSAT8_CLASSES,
        _LANDSAT8_CLASSES,
        list(_LANDSAT8_BANDS),
        load_descr("spyndex.rst"),
        return_X_y,
        as_frame,
    )


@validate_params({"as_dataarray": ["boolean"]}, prefer_skip_nested_validation=True)
def load_sentinel2_scene(*, as_dataarray=False):
    """Load spyndex's Sentinel-2 scene: 300 x 300 pixels, 4 bands at 10 m.

    A real Sentinel-2 scene with the blue, green, red and near-infrared bands
    (``B02``, ``B03``, ``B04``, ``B08``) as surface reflectance. The source
    has no coordinates, CRS or date; ``example_crs`` and
    ``example_transform`` are an *illustrative* georeferencing (UTM zone 33N,
    10 m pixels) for writing a GeoTIFF that opens in a GIS, not the scene's
    true location.

    Parameters
    ----------
    as_dataarray : bool, default=False
        If True, return an :class:`xarray.DataArray` ``(band, y, x)`` with the
        band names as its ``band`` coordinate (needs xarray) instead of a
        Bunch. It has no ``x``/``y`` coordinates and no CRS.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch` or xarray.DataArray
        A Bunch with the attributes:

        data : ndarray of shape (4, 300, 300), float32
            Reflectance ``(band, y, x)``: the stored values divided by 10,000.
        band_names : ndarray of str
            ``"B02"``, ``"B03"``, ``"B04"``, ``"B08"`` (understood by
            ``sensor="sentinel2"``).
        example_crs : str
            ``"EPSG:32633"``, illustrative only.
        example_transform : tuple of float
            Affine coefficients ``(a, b, c, d, e, f)`` of 10 m pixels,
            illustrative only (rasterio's ``Affine(*example_transform)``).
        DESCR : str
            Description of the dataset, citation and license.

    Examples
    --------
    >>> from sknd.datasets import load_sentinel2_scene
    >>> scene = load_sentinel2_scene()
    >>> scene.data.shape, scene.band_names.tolist()
    ((4, 300, 300), ['B02', 'B03', 'B04', 'B08'])
    >>> float(scene.data.max()) < 1
    True
    """
    with data_file("spyndex", "sentinel2_10m.npz").open("rb") as f:
        archive = np.load(f)
        stored = archive["reflectance"]
        names = archive["bands"].astype(str)
    reflectance = (stored / np.float32(10_000)).astype(np.float32)
    descr = load_descr("spyndex.rst")
    if as_dataarray:
        import xarray as xr

        return xr.DataArray(
            reflectance,
            dims=("band", "y", "x"),
            coords={"band": list(names)},
            attrs={"long_name": "surface reflectance", "source": "spyndex S2_10m (MIT)"},
            name="reflectance",
        )
    return Bunch(
        data=reflectance,
        band_names=np.asarray(names, dtype=object),
        example_crs=_EXAMPLE_CRS,
        example_transform=_EXAMPLE_TRANSFORM,
        DESCR=descr,
    )
