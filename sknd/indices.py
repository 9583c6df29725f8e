"""Catalogue of classic two-band normalized-difference indices.

Each entry is written over the sensor-independent common band names of
:mod:`sknd.bands`, so one entry serves every sensor: NDVI is ``(nir - red) /
(nir + red)`` whether the bands are called ``B8``/``B4`` (Sentinel-2),
``B5``/``B4`` (Landsat 8/9) or ``B2``/``B1`` (MODIS).

Sign convention
---------------
A normalized difference changes sign when its bands are swapped:
``(b_j - b_i) / (b_j + b_i) = -(b_i - b_j) / (b_i + b_j)``. A pair therefore
matches an index in either order; in the reversed order the match is reported
with a leading minus sign, e.g. ``"-NDVI"`` for the pair ``(red, nir)``. For a
learned index with weighting ``k`` (see :func:`sknd.inspection.index_table`)
the same identity holds with ``k`` replaced by ``1/k``.

Some classic indices share a band pair: MNDWI and NDSI are both
``(green - swir1) / (green + swir1)``, NDBI is ``-NDMI``, and NBR2 equals the
tillage index NDTillI. A pair lists every match, the ones with a ``+`` sign
first, separated by ``", "`` (e.g. ``"NDMI, -NDBI"``).

``NDTI`` follows the Awesome Spectral Indices naming and means the
*turbidity* index ``(red - green) / (red + green)``; the *tillage* index of the
same acronym is listed as ``NDTillI``.

The optional :func:`spyndex_catalogue` adds every two-band normalized
difference of the Awesome Spectral Indices catalogue when the ``spyndex``
package is installed; it is never required.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass

from .bands import COMMON_NAMES

__all__ = [
    "CATALOGUE",
    "KnownIndex",
    "get_catalogue",
    "known_index",
    "known_indices",
    "match_pair",
    "spyndex_catalogue",
    "why_no_known_indices",
]


@dataclass(frozen=True)
class KnownIndex:
    """A classic two-band normalized difference.

    Parameters
    ----------
    name : str
        Short name, e.g. ``"NDVI"``.
    long_name : str
        Full name.
    pairs : tuple of (str, str)
        Band pairs ``(i, j)`` in common names for which the index is
        ``(b_i - b_j) / (b_i + b_j)``. Several pairs list accepted band
        choices, e.g. the broad or the narrow NIR band of Sentinel-2.
    reference : str
        Where the index was introduced.
    domain : str
        Application domain (vegetation, water, burn, urban, snow, soil).
    source : str
        ``"sknd"`` for the built-in table, ``"spyndex"`` for entries read from
        the Awesome Spectral Indices catalogue.

    Examples
    --------
    >>> from sknd.indices import CATALOGUE
    >>> CATALOGUE[0].name, CATALOGUE[0].pairs[0]
    ('NDVI', ('nir', 'red'))
    """

    name: str
    long_name: str
    pairs: tuple
    reference: str
    domain: str = ""
    source: str = "sknd"


# Broad and narrow NIR are both used for the NIR-based indices (Sentinel-2 B8
# and B8A); Landsat 8/9 and MODIS only have one NIR band, called "nir".
def _with_nir(other):
    return (("nir", other), ("nir08", other))


CATALOGUE = (
    KnownIndex(
        "NDVI",
        "Normalized Difference Vegetation Index",
        _with_nir("red"),
        "Rouse, Haas, Schell & Deering (1974), Monitoring vegetation systems in the Great "
        "Plains with ERTS, Third ERTS Symposium, NASA SP-351, 309-317.",
        "vegetation",
    ),
    KnownIndex(
        "GNDVI",
        "Green Normalized Difference Vegetation Index",
        _with_nir("green"),
        "Gitelson, Kaufman & Merzlyak (1996), Use of a green channel in remote sensing of "
        "global vegetation from EOS-MODIS, Remote Sensing of Environment 58(3), 289-298.",
        "vegetation",
    ),
    KnownIndex(
        "NDRE1",
        "Normalized Difference Red Edge index, red edge 1",
        _with_nir("rededge1"),
        "Gitelson & Merzlyak (1994), Journal of Plant Physiology 143(3), 286-292; Barnes et "
        "al. (2000), Proc. 5th Int. Conf. on Precision Agriculture.",
        "vegetation",
    ),
    KnownIndex(
        "NDRE2",
        "Normalized Difference Red Edge index, red edge 2",
        _with_nir("rededge2"),
        "Red-edge NDVI of Gitelson & Merzlyak (1994) with Sentinel-2 red edge 2 (B6).",
        "vegetation",
    ),
    KnownIndex(
        "NDRE3",
        "Normalized Difference Red Edge index, red edge 3",
        _with_nir("rededge3"),
        "Red-edge NDVI of Gitelson & Merzlyak (1994) with Sentinel-2 red edge 3 (B7).",
        "vegetation",
    ),
    KnownIndex(
        "NDWI",
        "Normalized Difference Water Index (McFeeters)",
        (("green", "nir"), ("green", "nir08")),
        "McFeeters (1996), The use of the Normalized Difference Water Index (NDWI) in the "
        "delineation of open water features, Int. J. Remote Sensing 17(7), 1425-1432.",
        "water",
    ),
    KnownIndex(
        "MNDWI",
        "Modified Normalized Difference Water Index",
        (("green", "swir1"),),
        "Xu (2006), Modification of normalised difference water index (NDWI) to enhance open "
        "water features in remotely sensed imagery, Int. J. Remote Sensing 27(14), 3025-3033.",
        "water",
    ),
    KnownIndex(
        "NDMI",
        "Normalized Difference Moisture Index",
        _with_nir("swir1"),
        "Wilson & Sader (2002), Detection of forest harvest type using multiple dates of "
        "Landsat TM imagery, Remote Sensing of Environment 80(3), 385-396; Gao (1996), "
        "Remote Sensing of Environment 58(3), 257-266.",
        "vegetation",
    ),
    KnownIndex(
        "NBR",
        "Normalized Burn Ratio",
        _with_nir("swir2"),
        "Lopez Garcia & Caselles (1991), Geocarto International 6(1), 31-37; Key & Benson "
        "(2006), Landscape assessment, USDA Forest Service RMRS-GTR-164-CD.",
        "burn",
    ),
    KnownIndex(
        "NBR2",
        "Normalized Burn Ratio 2",
        (("swir1", "swir2"),),
        "U.S. Geological Survey, Landsat surface reflectance-derived spectral indices "
        "product guide (NBR2).",
        "burn",
    ),
    KnownIndex(
        "NDBI",
        "Normalized Difference Built-up Index",
        (("swir1", "nir"), ("swir1", "nir08")),
        "Zha, Gao & Ni (2003), Use of normalized difference built-up index in automatically "
        "mapping urban areas from TM imagery, Int. J. Remote Sensing 24(3), 583-594.",
        "urban",
    ),
    KnownIndex(
        "NDSI",
        "Normalized Difference Snow Index",
        (("green", "swir1"),),
        "Hall, Riggs & Salomonson (1995), Development of methods for mapping global snow "
        "cover using moderate resolution imaging spectroradiometer data, Remote Sensing of "
        "Environment 54(2), 127-140.",
        "snow",
    ),
    KnownIndex(
        "NDTI",
        "Normalized Difference Turbidity Index",
        (("red", "green"),),
        "Lacaux, Tourre, Vignolles, Ndione & Lafaye (2007), Classification of ponds from "
        "high-spatial resolution remote sensing, Remote Sensing of Environment 106(1), 66-74.",
        "water",
    ),
    KnownIndex(
        "NDTillI",
        "Normalized Difference Tillage Index (also abbreviated NDTI)",
        (("swir1", "swir2"),),
        "Van Deventer, Ward, Gowda & Lyon (1997), Using Thematic Mapper data to identify "
        "contrasting soil plains and tillage practices, Photogrammetric Engineering & Remote "
        "Sensing 63(1), 87-93.",
        "soil",
    ),
    KnownIndex(
        "NGRDI",
        "Normalized Green Red Difference Index",
        (("green", "red"),),
        "Tucker (1979), Red and photographic infrared linear combinations for monitoring "
        "vegetation, Remote Sensing of Environment 8(2), 127-150.",
        "vegetation",
    ),
    KnownIndex(
        "NDCI",
        "Normalized Difference Chlorophyll Index",
        (("rededge1", "red"),),
        "Mishra & Mishra (2012), Normalized difference chlorophyll index, Remote Sensing of "
        "Environment 117, 394-406.",
        "water",
    ),
)


# Awesome Spectral Indices band symbols -> sknd common names. Symbols without
# a counterpart here (constants, radar, ...) make an entry unusable.
SPYNDEX_BANDS = {
    "A": "coastal",
    "B": "blue",
    "G1": "green1",
    "G": "green",
    "Y": "yellow",
    "R": "red",
    "RE1": "rededge1",
    "RE2": "rededge2",
    "RE3": "rededge3",
    "N": "nir",
    "N2": "nir08",
    "WV": "nir09",
    "S1": "swir1",
    "S2": "swir2",
    "T": "tir",
    "T1": "tir1",
    "T2": "tir2",
}

# "(X-Y)/(X+Y)" or "(X-Y)/(Y+X)", optionally in one more pair of parentheses,
# after spaces are removed.
_ND_FORMULA = re.compile(r"\(?\((\w+)-(\w+)\)/\((\w+)\+(\w+)\)\)?")


def spyndex_catalogue():
    """Two-band normalized differences of the Awesome Spectral Indices catalogue.

    Reads ``spyndex.indices`` (an optional dependency) and keeps the indices
    whose formula is exactly ``(X - Y)/(X + Y)`` over two bands that have a
    common name in :mod:`sknd.bands`.

    Returns
    -------
    catalogue : tuple of KnownIndex
        Entries with ``source="spyndex"``.

    Raises
    ------
    ImportError
        If ``spyndex`` is not installed.

    Examples
    --------
    >>> from sknd.indices import spyndex_catalogue
    >>> try:
    ...     entries = spyndex_catalogue()
    ... except ImportError:
    ...     entries = ()
    """
    try:
        spyndex = importlib.import_module("spyndex")
    except ImportError as exc:
        raise ImportError(
            "spyndex_catalogue needs the optional 'spyndex' package "
            "(pip install spyndex); the built-in catalogue works without it."
        ) from exc
    entries = []
    for key, index in dict(spyndex.indices).items():
        formula = re.sub(r"\s+", "", str(getattr(index, "formula", "")))
        match = _ND_FORMULA.fullmatch(formula)
        if match is None:
            continue
        plus, minus, first, second = match.groups()
        if {first, second} != {plus, minus} or plus == minus:
            continue
        if plus not in SPYNDEX_BANDS or minus not in SPYNDEX_BANDS:
            continue
        entries.append(
            KnownIndex(
                name=str(getattr(index, "short_name", key)),
                long_name=str(getattr(index, "long_name", "")),
                pairs=((SPYNDEX_BANDS[plus], SPYNDEX_BANDS[minus]),),
                reference=str(getattr(index, "reference", "")),
                domain=str(getattr(index, "application_domain", "")),
                source="spyndex",
            )
        )
    return tuple(entries)


def get_catalogue(include_spyndex=False):
    """Return the catalogue of known indices.

    Parameters
    ----------
    include_spyndex : bool or "auto", default=False
        Add :func:`spyndex_catalogue` entries. ``True`` requires ``spyndex``;
        ``"auto"`` adds them only when it is importable. Entries whose name and
        pair already appear in the built-in table are not repeated.

    Returns
    -------
    catalogue : tuple of KnownIndex
        Built-in entries first.

    Examples
    --------
    >>> from sknd.indices import get_catalogue
    >>> len(get_catalogue()) >= 11
    True
    """
    if include_spyndex not in (True, False, "auto"):
        raise ValueError(f"include_spyndex must be True, False or 'auto', got {include_spyndex!r}.")
    catalogue = list(CATALOGUE)
    if include_spyndex is False:
        return tuple(catalogue)
    try:
        extra = spyndex_catalogue()
    except ImportError:
        if include_spyndex == "auto":
            return tuple(catalogue)
        raise
    known = {(entry.name, pair) for entry in catalogue for pair in entry.pairs}
    for entry in extra:
        if all((entry.name, pair) in known for pair in entry.pairs):
            continue
        catalogue.append(entry)
    return tuple(catalogue)


def known_indices(include_spyndex=False):
    """The catalogue as a DataFrame, one row per accepted band pair.

    Parameters
    ----------
    include_spyndex : bool or "auto", default=False
        See :func:`get_catalogue`.

    Returns
    -------
    table : pandas.DataFrame
        Columns ``name``, ``long_name``, ``band_i``, ``band_j`` (common names;
        the index is ``(b_i - b_j) / (b_i + b_j)``), ``domain``,
        ``reference`` and ``source``.

    Examples
    --------
    >>> from sknd.indices import known_indices
    >>> table = known_indices()
    >>> table.loc[table["name"] == "NDVI", ["band_i", "band_j"]].values.tolist()
    [['nir', 'red'], ['nir08', 'red']]
    """
    import pandas as pd

    rows = [
        (entry.name, entry.long_name, i, j, entry.domain, entry.reference, entry.source)
        for entry in get_catalogue(include_spyndex)
        for i, j in entry.pairs
    ]
    return pd.DataFrame(
        rows, columns=["name", "long_name", "band_i", "band_j", "domain", "reference", "source"]
    )


def match_pair(common_i, common_j, catalogue=None):
    """Known indices formed by two bands given by common name.

    Parameters
    ----------
    common_i, common_j : str
        Common names (see :data:`sknd.bands.COMMON_NAMES`) of the bands in the
        order of the normalized difference ``(b_i - b_j) / (b_i + b_j)``.
    catalogue : sequence of KnownIndex, optional
        Defaults to the built-in :data:`CATALOGUE`.

    Returns
    -------
    names : list of str
        Index names, prefixed with ``"-"`` when the pair is the index's pair
        reversed. Matches in the index's own order come first.

    Examples
    --------
    >>> from sknd.indices import match_pair
    >>> match_pair("nir", "red")
    ['NDVI']
    >>> match_pair("red", "nir")
    ['-NDVI']
    >>> match_pair("nir", "swir1")
    ['NDMI', '-NDBI']
    >>> match_pair("blue", "coastal")
    []
    """
    if common_i is None or common_j is None:
        return []
    for name in (common_i, common_j):
        if name not in COMMON_NAMES:
            raise ValueError(
                f"Unknown common band name {name!r}; valid: {', '.join(COMMON_NAMES)}."
            )
    catalogue = CATALOGUE if catalogue is None else catalogue
    direct, reversed_ = [], []
    for entry in catalogue:
        if (common_i, common_j) in entry.pairs and entry.name not in direct:
            direct.append(entry.name)
        elif (common_j, common_i) in entry.pairs and "-" + entry.name not in reversed_:
            reversed_.append("-" + entry.name)
    return direct + reversed_


def known_index(band_i, band_j, catalogue=None):
    """Name the classic index two bands form, as a string for tables.

    Parameters
    ----------
    band_i, band_j : sknd.bands.Band
        Bands in the order of the normalized difference.
    catalogue : sequence of KnownIndex, optional
        Defaults to the built-in :data:`CATALOGUE`.

    Returns
    -------
    name : str
        The matches of :func:`match_pair` joined by ``", "``, or ``""`` when
        the pair forms no known index, a band has no common name, or the
        bands belong to different groups (e.g. different dates).

    Examples
    --------
    >>> from sknd.bands import resolve_bands
    >>> from sknd.indices import known_index
    >>> b4, b8, b11 = resolve_bands(["B4", "B8", "B11"], sensor="sentinel2")
    >>> known_index(b8, b4), known_index(b4, b8), known_index(b11, b8)
    ('NDVI', '-NDVI', 'NDBI, -NDMI')
    """
    if band_i.common_name is None or band_j.common_name is None:
        return ""
    if band_i.group != band_j.group:
        return ""
    return ", ".join(match_pair(band_i.common_name, band_j.common_name, catalogue))


def why_no_known_indices(estimator):
    """Why the known-index names do not apply to a model's indices, or None when they do.

    The known indices (NDVI, NDWI ...) are defined on band values as measured,
    non-negative: a fitted estimator's indices get their names when the bands
    it was fitted on were non-negative (``band_range_``), not when they were
    signed (standardized by a scaler, differences). A model without
    ``band_range_`` (a torch module's layer) gets them under
    ``variant="reflectance"``, which refuses negative inputs, not under a
    signed variant (standardized bands, another layer's outputs).

    Parameters
    ----------
    estimator : fitted sknd estimator or torch.nn.Module
        See :func:`sknd.inspection.index_table`.

    Returns
    -------
    note : str or None
        The reason, as :func:`sknd.inspection.index_table` keeps it in
        ``table.attrs["note"]``.

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from sknd.indices import why_no_known_indices
    >>> model = SimpleNamespace(
    ...     pairs_=np.array([[1, 0]]), coef_a_=np.zeros(1), coef_c_=np.zeros(1),
    ...     band_range_=np.array([[0.0, 0.6], [0.01, 0.5]]))
    >>> why_no_known_indices(model)
    >>> model.band_range_ = np.array([[-1.7, 2.1], [-1.2, 1.9]])
    >>> print(why_no_known_indices(model))
    No known index names: the bands were signed at fit (down to -1.7), as a scaler leaves
    them, and known indices are defined on band values as measured (non-negative).
    """
    from ._data._validation import fitted_indices

    estimator = fitted_indices(estimator)
    band_range = getattr(estimator, "band_range_", None)
    if band_range is not None:
        low = min((float(low) for low, _ in band_range), default=0.0)
        if low >= 0:
            return None
        where = f"the bands were signed at fit (down to {low:.4g}), as a scaler leaves them"
    else:
        variant = getattr(estimator, "variant_", getattr(estimator, "variant", "reflectance"))
        if variant == "reflectance":
            return None
        where = (
            f"variant={variant!r} takes signed inputs (standardized bands, another layer's outputs)"
        )
    return (
        f"No known index names: {where}, and known indices are defined on band values as "
        "measured (non-negative)."
    )
