"""Loaders for the small multispectral datasets shipped with sknd.

The files are copied unchanged from the UCI Machine Learning Repository (CC BY 4.0) and live
in ``sknd/datasets/data/``; nothing is downloaded at run time.
"""

from importlib import resources

import numpy as np
import pandas as pd
from sklearn.utils import Bunch
from sklearn.utils._param_validation import StrOptions, validate_params

_SATIMAGE_BANDS = ("green", "red", "nir1", "nir2")
# UCI codes 1-5 and 7 (class 6, "mixture", was removed from the database).
_SATIMAGE_CODES = np.array([1, 2, 3, 4, 5, 7])
_SATIMAGE_NAMES = np.array(
    [
        "red soil",
        "cotton crop",
        "grey soil",
        "damp grey soil",
        "soil with vegetation stubble",
        "very damp grey soil",
    ]
)
_SATIMAGE_FILES = {"train": ("sat.trn",), "test": ("sat.tst",), "all": ("sat.trn", "sat.tst")}
# Pixel p4 is the centre of the 3 x 3 neighbourhood, read row by row from the top left.
_SATIMAGE_CENTRE = 4

_FOREST_BANDS = (
    "green_sep10",
    "red_sep10",
    "nir_sep10",
    "green_mar11",
    "red_mar11",
    "nir_mar11",
    "green_may11",
    "red_may11",
    "nir_may11",
)
_FOREST_CODES = np.array(["d", "h", "o", "s"])
_FOREST_NAMES = np.array(["mixed deciduous", "hinoki", "other", "sugi"])
_FOREST_FILES = {
    "train": ("training.csv",),
    "test": ("testing.csv",),
    "all": ("training.csv", "testing.csv"),
}


def data_file(dataset, name):
    return resources.files("sknd.datasets").joinpath("data", dataset, name)


def load_descr(name):
    return resources.files("sknd.datasets").joinpath("descr", name).read_text(encoding="utf-8")


def make_bunch(data, codes, class_codes, class_names, feature_names, descr, return_X_y, as_frame):
    """Assemble the ``sklearn.datasets``-style return value shared by the loaders."""
    target = np.searchsorted(class_codes, codes)
    if not np.array_equal(class_codes[target], codes):  # pragma: no cover - corrupt file
        raise ValueError("Unknown class label in the dataset file.")
    frame = None
    if as_frame:
        data = pd.DataFrame(data, columns=list(feature_names))
        target = pd.Series(target, name="class")
        frame = pd.concat([data, target], axis=1)
    if return_X_y:
        return data, target
    return Bunch(
        data=data,
        target=target,
        frame=frame,
        feature_names=np.asarray(feature_names, dtype=object),
        target_names=class_names.copy(),
        target_codes=class_codes.copy(),
        DESCR=descr,
    )


@validate_params(
    {
        "subset": [StrOptions({"all", "train", "test"})],
        "center_pixel": ["boolean"],
        "return_X_y": ["boolean"],
        "as_frame": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def load_satimage(*, subset="all", center_pixel=False, return_X_y=False, as_frame=False):
    """Load the UCI Statlog (Landsat Satellite) dataset (multi-class classification).

    Each sample is a 3 x 3 pixel neighbourhood of a Landsat Multi-Spectral Scanner scene with
    4 bands per pixel; the class is the land cover of the centre pixel.

    =================   ====================================
    Classes                                                6
    Samples total                     6435 (4435 + 2000 test)
    Dimensionality       36 (3 x 3 pixels x 4 bands), or 4
    Features            integer digital numbers in [0, 255]
    =================   ====================================

    Read more in the dataset description (``DESCR``), which also holds the citation and the
    CC BY 4.0 attribution.

    Parameters
    ----------
    subset : {"all", "train", "test"}, default="all"
        Which part of the original UCI split to load. ``"all"`` concatenates the training
        rows (first) and the test rows.
    center_pixel : bool, default=False
        If True, return only the 4 bands of the centre pixel, named ``"green"``, ``"red"``,
        ``"nir1"`` and ``"nir2"``. Otherwise return all 36 features, named ``"p0_green"``
        ... ``"p8_nir2"``, pixels read row by row from the top left (``p4`` is the centre).
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.
    as_frame : bool, default=False
        If True, ``data`` is a pandas DataFrame with the feature names as columns,
        ``target`` a Series named ``"class"``, and ``frame`` holds both.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the attributes:

        data : ndarray of shape (n_samples, 36) or (n_samples, 4), float64, or DataFrame
            The band values.
        target : ndarray of shape (n_samples,), int64, or Series
            Class index in ``0 .. 5``; ``target_names[target]`` gives the class names.
        frame : DataFrame or None
            Data and target together when ``as_frame=True``.
        feature_names : ndarray of str
            Band names, as described above.
        target_names : ndarray of str
            Class names (``"red soil"``, ``"cotton crop"``, ...).
        target_codes : ndarray of int
            The UCI class codes ``[1, 2, 3, 4, 5, 7]`` aligned with ``target_names``.
        DESCR : str
            Description of the dataset, citation and license.

    (data, target) : tuple if ``return_X_y`` is True

    Examples
    --------
    >>> from sknd.datasets import load_satimage
    >>> bunch = load_satimage()
    >>> bunch.data.shape
    (6435, 36)
    >>> list(bunch.feature_names[16:20])
    ['p4_green', 'p4_red', 'p4_nir1', 'p4_nir2']
    >>> X, y = load_satimage(subset="test", center_pixel=True, return_X_y=True, as_frame=True)
    >>> X.shape, list(X.columns)
    ((2000, 4), ['green', 'red', 'nir1', 'nir2'])
    """
    parts = []
    for name in _SATIMAGE_FILES[subset]:
        with data_file("satimage", name).open("r", encoding="ascii") as f:
            parts.append(np.loadtxt(f, dtype=np.float64))
    raw = np.concatenate(parts, axis=0)
    data, codes = raw[:, :-1], raw[:, -1].astype(np.int64)
    if center_pixel:
        start = _SATIMAGE_CENTRE * len(_SATIMAGE_BANDS)
        data = data[:, start : start + len(_SATIMAGE_BANDS)]
        feature_names = list(_SATIMAGE_BANDS)
    else:
        feature_names = [f"p{p}_{b}" for p in range(9) for b in _SATIMAGE_BANDS]
    return make_bunch(
        np.ascontiguousarray(data),
        codes,
        _SATIMAGE_CODES,
        _SATIMAGE_NAMES,
        feature_names,
        load_descr("satimage.rst"),
        return_X_y,
        as_frame,
    )


@validate_params(
    {
        "subset": [StrOptions({"all", "train", "test"})],
        "return_X_y": ["boolean"],
        "as_frame": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def load_forest_type(*, subset="all", return_X_y=False, as_frame=False):
    """Load the UCI forest type mapping dataset (multi-class classification).

    Nine ASTER bands (green, red, near infrared on three dates) of a forested area in Japan,
    labelled with four forest/land-cover types.

    =================   ====================================
    Classes                                                4
    Samples total                        523 (198 + 325 test)
    Dimensionality                                         9
    Features            integer digital numbers in [0, 255]
    =================   ====================================

    Read more in the dataset description (``DESCR``), which also holds the citation and the
    CC BY 4.0 attribution.

    Parameters
    ----------
    subset : {"all", "train", "test"}, default="all"
        Which part of the original split to load. ``"all"`` concatenates the training rows
        (first) and the test rows.
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.
    as_frame : bool, default=False
        If True, ``data`` is a pandas DataFrame with the band names as columns, ``target`` a
        Series named ``"class"``, and ``frame`` holds both.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the attributes:

        data : ndarray of shape (n_samples, 9), float64, or DataFrame
            The band values; source columns ``b1`` ... ``b9``.
        target : ndarray of shape (n_samples,), int64, or Series
            Class index in ``0 .. 3``; ``target_names[target]`` gives the class names.
        frame : DataFrame or None
            Data and target together when ``as_frame=True``.
        feature_names : ndarray of str
            ``"green_sep10"``, ``"red_sep10"``, ``"nir_sep10"``, ``"green_mar11"``, ...,
            ``"nir_may11"`` (band and acquisition date).
        target_names : ndarray of str
            ``"mixed deciduous"``, ``"hinoki"``, ``"other"``, ``"sugi"``.
        target_codes : ndarray of str
            The source class letters ``"d"``, ``"h"``, ``"o"``, ``"s"`` aligned with
            ``target_names`` (trailing space removed).
        DESCR : str
            Description of the dataset, citation and license.

    (data, target) : tuple if ``return_X_y`` is True

    Examples
    --------
    >>> from sknd.datasets import load_forest_type
    >>> bunch = load_forest_type()
    >>> bunch.data.shape
    (523, 9)
    >>> bunch.target_codes.tolist(), bunch.target_names.tolist()
    (['d', 'h', 'o', 's'], ['mixed deciduous', 'hinoki', 'other', 'sugi'])
    >>> X, y = load_forest_type(subset="train", return_X_y=True, as_frame=True)
    >>> X.shape
    (198, 9)
    """
    parts = []
    for name in _FOREST_FILES[subset]:
        with data_file("forest_type", name).open("r", encoding="ascii") as f:
            parts.append(pd.read_csv(f))
    raw = pd.concat(parts, ignore_index=True)
    data = raw[[f"b{i}" for i in range(1, 10)]].to_numpy(dtype=np.float64)
    codes = raw["class"].astype(str).str.strip().to_numpy(dtype=str)
    return make_bunch(
        data,
        codes,
        _FOREST_CODES,
        _FOREST_NAMES,
        list(_FOREST_BANDS),
        load_descr("forest_type.rst"),
        return_X_y,
        as_frame,
    )
