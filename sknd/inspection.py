"""Read fitted normalized-difference models: index tables and formula export.

Everything here works from the fitted attributes every sknd estimator exposes
(``pairs_``, ``coef_a_``, ``coef_c_``, ``index_importances_``, ``epsilon``,
``variant`` and the band names), so it needs neither torch nor the training
data.

A learned index over bands ``b_i`` and ``b_j`` is

.. math::

    N_{ij} = \\frac{w_i b_i - w_j b_j}{w_i b_i + w_j b_j + \\epsilon},
    \\qquad w_i = \\operatorname{softplus}(a_{ij}),\\; w_j = \\operatorname{softplus}(c_{ij})

for ``variant="reflectance"``. Since ``N`` does not change when both weights are
scaled together (up to the tiny ``epsilon``), the one number that says what was
learned is the weighting ``k = w_i / w_j``: ``k = 1`` is the classic symmetric
index, ``k > 1`` upweights ``b_i``. ``variant="signed"`` replaces ``b`` by
``sqrt(b**2 + epsilon)`` in the denominator, ``variant="softplus"`` replaces
``b`` by ``softplus(b) = log(1 + exp(b))`` everywhere.
"""

from __future__ import annotations

import keyword
import re

import numpy as np

from ._data._validation import fitted_indices
from ._export._asi_catalogue import asi_domain, asi_platforms, asi_symbol
from ._export._formula_syntax import format_formula, format_number
from ._nd._formula import VARIANTS, softplus, weight_ratio
from .bands import get_sensor, resolve_bands
from .indices import get_catalogue, known_index, why_no_known_indices

__all__ = ["band_identifiers", "export_asi", "export_formulas", "get_bands", "index_table"]

_FORMATS = ("numpy", "gee", "qgis", "latex", "text", "asi")


def get_bands(estimator):
    """Bands of a fitted estimator's input columns.

    Parameters
    ----------
    estimator : fitted sknd estimator
        Any object with ``n_features_in_`` and, optionally, the bands it
        resolved in ``fit`` (``bands_``), ``bands`` / ``sensor`` parameters or
        ``feature_names_in_``.

    Returns
    -------
    bands : tuple of sknd.bands.Band
        One band per input column; named ``x0, x1, ...`` when the estimator
        was fitted on an array without ``bands=``.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from sknd.inspection import get_bands
    >>> model = SimpleNamespace(n_features_in_=2, bands=["B4", "B8"], sensor="sentinel2")
    >>> [band.common_name for band in get_bands(model)]
    ['red', 'nir']
    """
    # Fitted sknd estimators freeze their bands at fit time, so that changing
    # the bands / sensor parameters afterwards does not relabel a fitted model.
    resolved = getattr(estimator, "bands_", None)
    if resolved is not None:
        return tuple(resolved)
    feature_names = getattr(estimator, "feature_names_in_", None)
    return resolve_bands(
        getattr(estimator, "bands", None),
        n_features=getattr(estimator, "n_features_in_", None),
        feature_names=None if feature_names is None else list(feature_names),
        sensor=getattr(estimator, "sensor", None),
    )


def _output_positions(estimator):
    """Positions in ``pairs_`` of the indices the estimator outputs, in order.

    Predictors expose every index of their ND layer; the transformer only the
    ones ``transform`` returns.
    """
    selected = getattr(estimator, "selected_indices_", None)
    if selected is not None:
        return np.asarray(selected, dtype=np.intp)
    return np.arange(len(np.asarray(estimator.pairs_).reshape(-1, 2)), dtype=np.intp)


def index_table(estimator, catalogue=None):
    """Describe each learned index of a fitted estimator.

    Parameters
    ----------
    estimator : fitted sknd estimator or torch.nn.Module
        An ``NDClassifier``, ``NDRegressor`` or ``NDTransformer`` (any object
        with the fitted attributes listed in the module docstring works), or
        a torch module holding a :class:`sknd.nn.NormalizedDifference` (a
        layer trained in the user's own model, an estimator's ``to_torch()``):
        its first one, its bands named by the layer's ``bands`` and
        ``sensor``; ``importance`` is then NaN (no data to measure it on).
    catalogue : sequence of sknd.indices.KnownIndex, optional
        Known indices used for ``known_index``; defaults to the built-in
        catalogue. Pass ``sknd.indices.get_catalogue(include_spyndex=True)``
        to also match the Awesome Spectral Indices entries.

    Returns
    -------
    table : pandas.DataFrame
        One row per learned index, in the order of the estimator's ND outputs
        (for the transformer: the columns of ``transform``), with columns

        - ``band_i``, ``band_j``: band names, the index being
          ``(w_i b_i - w_j b_j) / (w_i b_i + w_j b_j + epsilon)``;
        - ``a``, ``c``: raw learned parameters (0 at initialisation);
        - ``k``: ``softplus(a) / softplus(c)``, the weighting of ``band_i``
          relative to ``band_j`` (1 = classic symmetric index);
        - ``importance``: ``index_importances_``, the L2 norm of the index's
          outgoing weights in the next layer times the standard deviation of
          the index on the training data; a non-negative relevance, comparable
          between indices of one model only;
        - ``known_index``: the classic index the band pair forms, e.g.
          ``"NDVI"``, ``"-NDVI"`` when the pair is reversed, ``""`` if none
          (see :mod:`sknd.indices`); ``""`` for every pair of a model
          whose inputs were not band values as measured (see
          :func:`sknd.indices.why_no_known_indices`), which ``table.attrs["note"]`` then
          says.

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from sknd.inspection import index_table
    >>> model = SimpleNamespace(
    ...     n_features_in_=3, bands=["B3", "B4", "B8"], sensor="sentinel2",
    ...     pairs_=np.array([[2, 1], [0, 2]]), coef_a_=np.array([1.0, 0.0]),
    ...     coef_c_=np.array([-1.0, 0.0]), index_importances_=np.array([0.8, 0.1]),
    ...     epsilon=1e-6, variant="reflectance")
    >>> index_table(model).round(3)
      band_i band_j    a    c      k  importance   known_index
    0     B8     B4  1.0 -1.0  4.192         0.8          NDVI
    1     B3     B8  0.0  0.0  1.000         0.1  NDWI, -GNDVI
    """
    import pandas as pd

    estimator = fitted_indices(estimator)
    bands = get_bands(estimator)
    pairs = np.asarray(estimator.pairs_, dtype=np.intp).reshape(-1, 2)
    positions = _output_positions(estimator)
    a = np.asarray(estimator.coef_a_, dtype=np.float64).ravel()
    c = np.asarray(estimator.coef_c_, dtype=np.float64).ravel()
    importances = getattr(estimator, "index_importances_", None)
    importances = (
        np.full(len(pairs), np.nan)
        if importances is None
        else np.asarray(importances, dtype=np.float64).ravel()
    )
    catalogue = get_catalogue() if catalogue is None else tuple(catalogue)
    note = why_no_known_indices(estimator)

    rows = []
    for position in positions:
        i, j = pairs[position]
        rows.append(
            {
                "band_i": bands[i].name,
                "band_j": bands[j].name,
                "a": a[position],
                "c": c[position],
                "k": float(weight_ratio(a[position], c[position])),
                "importance": importances[position],
                "known_index": "" if note else known_index(bands[i], bands[j], catalogue),
            }
        )
    columns = ["band_i", "band_j", "a", "c", "k", "importance", "known_index"]
    table = pd.DataFrame(rows, columns=columns)
    if note:
        table.attrs["note"] = note
    return table.astype(
        {
            "band_i": object,
            "band_j": object,
            "a": float,
            "c": float,
            "k": float,
            "importance": float,
            "known_index": object,
        }
    )


def band_identifiers(names):
    """Python identifiers standing for band names in ``format="numpy"`` formulas.

    Names that are already identifiers are kept; other characters become
    ``_``, a leading digit gets a ``b_`` prefix, keywords and ``np`` get a
    trailing ``_``, and clashes are numbered.

    Parameters
    ----------
    names : sequence of str
        Band names.

    Returns
    -------
    identifiers : list of str
        One identifier per name, in order.

    Examples
    --------
    >>> from sknd.inspection import band_identifiers
    >>> band_identifiers(["B8", "Band 4", "8", "lambda", "B_4"])
    ['B8', 'Band_4', 'b_8', 'lambda_', 'B_4']
    """
    identifiers, used = [], set()
    for name in names:
        ident = re.sub(r"\W", "_", str(name), flags=re.ASCII)
        if not ident or ident[0].isdigit():
            ident = "b_" + ident
        if keyword.iskeyword(ident) or ident == "np":
            ident += "_"
        candidate, n = ident, 2
        while candidate in used:
            candidate, n = f"{ident}_{n}", n + 1
        used.add(candidate)
        identifiers.append(candidate)
    return identifiers


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "_": r"\_",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "&": r"\&",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def _band_symbols(names, fmt):
    if fmt == "numpy":
        return band_identifiers(names)
    if fmt == "gee":
        symbols = []
        for name in names:
            if "'" not in name:
                symbols.append(f"b('{name}')")
            elif '"' not in name:
                symbols.append(f'b("{name}")')
            else:
                raise ValueError(
                    f"Band name {name!r} contains both quote characters and cannot be "
                    "written in an Earth Engine expression; rename the band."
                )
        return symbols
    if fmt == "qgis":
        quoted = [name for name in names if '"' in name or "@" in name]
        if quoted:
            raise ValueError(
                f"Band name {quoted[0]!r} holds '\"' or '@', which a QGIS raster-calculator "
                'reference ("layer@1") cannot hold; rename the band.'
            )
        return [f'"{name}@1"' for name in names]
    if fmt == "latex":
        return [
            r"\mathrm{" + "".join(_LATEX_SPECIAL.get(ch, ch) for ch in name) + "}" for name in names
        ]
    if fmt == "asi":
        return names  # already the catalogue's symbols (see asi_symbol)
    # text: plain names, bracketed when they would not read as one token.
    return [name if name.isidentifier() else f"[{name}]" for name in names]


def _exported_positions(estimator, top):
    """Positions in ``pairs_`` of the indices to export: all, or the ``top`` most important."""
    positions = _output_positions(estimator)
    if top is None:
        return positions
    if not isinstance(top, (int, np.integer)) or top < 1:
        raise ValueError(f"top must be a positive int or None, got {top!r}.")
    importances = getattr(estimator, "index_importances_", None)
    if importances is None:
        raise TypeError(
            f"top={top} keeps the most important indices, by the index_importances_ that a "
            "fitted estimator measured on its training data; this model has none (a torch "
            "module's layer has no data to measure them on). Pass the fitted estimator, or "
            "top=None for every index of the layer."
        )
    importances = np.asarray(importances, dtype=np.float64)[positions]
    # Stable sort keeps the output order among equally important indices.
    return positions[np.argsort(-importances, kind="stable")][:top]


def _target_name(band, preset):
    """The name of ``band``'s counterpart on the sensor ``preset`` (same common name)."""
    if band.common_name is None:
        raise ValueError(
            f"Band {band.name!r} has no common name, so its {preset.long_name} counterpart is "
            "unknown: fit with bands= and sensor= that name it (see sknd.bands)."
        )
    for canonical, common, _ in preset.bands:
        if common == band.common_name:
            return canonical
    raise ValueError(
        f"{preset.long_name} has no {band.common_name} band (the model's {band.name!r}): "
        f"its formulas cannot be written for sensor={preset.key!r}."
    )


def _band_names(bands, used, format, sensor):
    """Names the formulas use: the model's, the target sensor's, or the ASI symbols."""
    if format == "asi":
        if sensor is not None:
            raise ValueError(
                "format='asi' writes the catalogue's sensor-independent band symbols "
                "(N, R, ...): leave sensor out."
            )
        rename = asi_symbol
    elif sensor is not None:
        preset = get_sensor(sensor)
        rename = lambda band: _target_name(band, preset)  # noqa: E731
    else:
        return [band.name for band in bands]
    # Unused bands appear in no formula; under their own names they could take a renamed
    # band's name (Sentinel-2 "B2" against Landsat 7 "B2"), which identifiers then number.
    return [
        rename(band) if index in used else f"_unused{index}" for index, band in enumerate(bands)
    ]


def export_formulas(estimator, format="numpy", top=None, precision=None, sensor=None):
    """Write each learned index as a formula over band names.

    Parameters
    ----------
    estimator : fitted sknd estimator
        See :func:`index_table`.
    format : {"numpy", "gee", "qgis", "latex", "text", "asi"}, default="numpy"
        Output syntax:

        - ``"numpy"``: a Python expression over band arrays, band names made
          identifiers by :func:`band_identifiers`; evaluate it with
          ``eval(formula, {"np": numpy}, {identifier: array, ...})``.
        - ``"gee"``: an Earth Engine ``ee.Image.expression`` string that reads
          bands with ``b('name')``, so it works for any band name on an image
          whose bands carry the model's band names
          (``image.expression(formula)``). Numbers are plain decimals.
        - ``"qgis"``: a QGIS raster-calculator expression (also the
          ``qgis:rastercalculator`` processing algorithm) over one single-band
          layer per band, named after the band: ``"B8@1"`` is band 1 of the
          layer ``B8``. Numbers are plain decimals; ``softplus`` is written
          with ``ln`` and ``^``.
        - ``"latex"``: a ``\\frac{...}{...}`` math-mode expression.
        - ``"text"``: a readable expression with the band names as they are
          (bracketed when not identifiers).
        - ``"asi"``: an Awesome Spectral Indices formula over the catalogue's
          band symbols (``N``, ``R``, ``S1``, ...), which spyndex evaluates
          (``spyndex.computeIndex``, ``SpectralIndex.compute``); see
          :func:`export_asi` for whole catalogue entries. Needs bands with
          common names; ``variant="softplus"`` cannot be written (the
          catalogue's formulas have no ``log`` or ``exp``).

        ``variant="signed"`` is written with ``sqrt(b**2 + epsilon)`` and
        ``variant="softplus"`` with ``log(1 + exp(b))`` (``np.logaddexp(0, b)``
        in numpy, which is the same function without overflow).
    top : int, optional
        Only the ``top`` most important indices (by ``index_importances_``),
        most important first. By default every index, in the order of the
        estimator's ND outputs (for the transformer, ``transform``'s columns).
    precision : int, optional
        Significant digits of the band weights. By default ``"numpy"``,
        ``"gee"``, ``"qgis"`` and ``"asi"`` keep every digit, so that the
        formulas reproduce the model to floating-point accuracy, and
        ``"latex"`` and ``"text"``, meant for reading, keep 4. ``epsilon``
        is always written in full.
    sensor : str or None, default=None
        Write the bands as those of another sensor preset (see
        :func:`sknd.bands.get_sensor`), matched by common name: a model
        fitted on Landsat 8 names (``B5``, ``B4``) exports Sentinel-2
        formulas (``B8``, ``B4``) with ``sensor="sentinel2"``, e.g. for an
        Earth Engine collection. None keeps the model's band names.

    Returns
    -------
    formulas : list of str
        One formula per index.

    Raises
    ------
    ValueError
        If a band has no counterpart on ``sensor`` (or no ASI symbol).
    TypeError
        If ``top`` is given for a model without ``index_importances_`` (a
        torch module: its layer has no data to measure importances on).

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from sknd.inspection import export_formulas
    >>> model = SimpleNamespace(
    ...     n_features_in_=2, bands=["B4", "B8"], sensor="sentinel2",
    ...     pairs_=np.array([[1, 0]]), coef_a_=np.array([1.5]), coef_c_=np.array([0.0]),
    ...     index_importances_=np.array([1.0]), epsilon=1e-6, variant="reflectance")
    >>> export_formulas(model, precision=3)
    ['(1.7*B8 - 0.693*B4) / (1.7*B8 + 0.693*B4 + 1e-06)']
    >>> export_formulas(model, format="gee", precision=3)
    ["(1.7*b('B8') - 0.693*b('B4')) / (1.7*b('B8') + 0.693*b('B4') + 0.000001)"]
    >>> export_formulas(model, format="gee", precision=3, sensor="landsat8")
    ["(1.7*b('B5') - 0.693*b('B4')) / (1.7*b('B5') + 0.693*b('B4') + 0.000001)"]
    >>> export_formulas(model, format="asi", precision=3)
    ['(1.7*N - 0.693*R) / (1.7*N + 0.693*R + 1e-06)']
    >>> export_formulas(model, format="qgis", precision=3)
    ['(1.7*"B8@1" - 0.693*"B4@1") / (1.7*"B8@1" + 0.693*"B4@1" + 0.000001)']
    """
    if format not in _FORMATS:
        raise ValueError(f"format must be one of {_FORMATS}, got {format!r}.")
    if precision is not None and (not isinstance(precision, (int, np.integer)) or precision < 1):
        raise ValueError(f"precision must be a positive int or None, got {precision!r}.")
    estimator = fitted_indices(estimator)
    # As fitted (sknd estimators' epsilon_, variant_), else the plain attributes.
    variant = getattr(estimator, "variant_", getattr(estimator, "variant", "reflectance"))
    if variant not in VARIANTS:
        raise ValueError(f"Unknown variant {variant!r}; expected one of {VARIANTS}.")
    if format == "asi" and variant == "softplus":
        raise ValueError(
            "variant='softplus' indices cannot be written as Awesome Spectral Indices "
            "formulas, which are arithmetic only (no log or exp); use format='numpy'."
        )
    pairs = np.asarray(estimator.pairs_, dtype=np.intp).reshape(-1, 2)
    positions = _exported_positions(estimator, top)
    bands = get_bands(estimator)
    used = {int(band) for band in pairs[positions].ravel()}
    symbols = _band_symbols(_band_names(bands, used, format, sensor), format)

    weights_i = softplus(np.asarray(estimator.coef_a_, dtype=np.float64).ravel())
    weights_j = softplus(np.asarray(estimator.coef_c_, dtype=np.float64).ravel())
    if precision is None and format in ("latex", "text"):
        precision = 4
    eps = format_number(
        getattr(estimator, "epsilon_", getattr(estimator, "epsilon", None)), None, format
    )
    formulas = []
    for position in positions:
        i, j = pairs[position]
        formulas.append(
            format_formula(
                format_number(weights_i[position], precision, format),
                format_number(weights_j[position], precision, format),
                symbols[i],
                symbols[j],
                eps,
                variant,
                format,
            )
        )
    return formulas


def export_asi(
    estimator,
    path=None,
    *,
    top=None,
    prefix="SKND",
    domain=None,
    reference="",
    contributor="sknd",
    date=None,
):
    """Write the learned indices as Awesome Spectral Indices catalogue entries.

    Each index becomes an entry with the fields of the catalogue's
    ``spectral-indices-dict.json`` (which spyndex loads): ``short_name``,
    ``long_name``, ``formula`` (over the catalogue's band symbols, see
    :func:`export_formulas` with ``format="asi"``), ``bands``,
    ``application_domain``, ``reference``, ``contributor``,
    ``date_of_addition`` and ``platforms``. Evaluating a formula as spyndex
    evaluates the catalogue's (``eval(formula, {}, {"N": nir, "R": red})``
    in ``spyndex.computeIndex``) gives the index as ``transform`` computes it.

    Parameters
    ----------
    estimator : fitted sknd estimator
        See :func:`index_table`. Its bands need common names (fit with
        ``bands=`` / ``sensor=``).
    path : str, path-like or None, default=None
        Also write the catalogue as JSON to this file.
    top : int, optional
        Only the ``top`` most important indices, as in :func:`export_formulas`.
    prefix : str, default="SKND"
        Short names are the prefix and the index's number: ``SKND1``,
        ``SKND2``, ... (identifiers, as spyndex needs).
    domain : str or None, default=None
        ``application_domain`` of every entry. None takes the domain of the
        classic index the band pair forms (e.g. ``"vegetation"`` for the NIR
        and red pair of NDVI), else ``""``: fill it in before submitting an
        entry to the catalogue.
    reference : str, default=""
        Where the index is described (a DOI or URL).
    contributor : str, default="sknd"
        Who contributes the entry (the catalogue uses GitHub profile URLs).
    date : str or None, default=None
        ``date_of_addition`` (``YYYY-MM-DD``); None is today.

    Returns
    -------
    catalogue : dict
        ``{"SpectralIndices": {short_name: entry, ...}}``, the catalogue's
        layout.

    Raises
    ------
    ValueError
        If a band has no Awesome Spectral Indices symbol or the model's
        variant is ``"softplus"``.

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from sknd.inspection import export_asi
    >>> model = SimpleNamespace(
    ...     n_features_in_=2, bands=["B4", "B8"], sensor="sentinel2",
    ...     pairs_=np.array([[1, 0]]), coef_a_=np.array([1.5]), coef_c_=np.array([0.0]),
    ...     index_importances_=np.array([1.0]), epsilon=1e-6, variant="reflectance")
    >>> entry = export_asi(model, date="2026-01-01")["SpectralIndices"]["SKND1"]
    >>> entry["bands"], entry["application_domain"], entry["platforms"][:2]
    (['N', 'R'], 'vegetation', ['Sentinel-2', 'Landsat-OLI'])
    >>> round(eval(entry["formula"], {}, {"N": 0.4, "R": 0.1}), 4)  # as spyndex does
    0.8151
    """
    import datetime
    import json

    if not isinstance(prefix, str) or not prefix.isidentifier():
        raise ValueError(f"prefix must start an identifier (e.g. 'SKND'), got {prefix!r}.")
    formulas = export_formulas(estimator, format="asi", top=top)
    estimator = fitted_indices(estimator)
    positions = _exported_positions(estimator, top)
    note = why_no_known_indices(estimator)
    bands = get_bands(estimator)
    pairs = np.asarray(estimator.pairs_, dtype=np.intp).reshape(-1, 2)
    catalogue = get_catalogue()
    date = datetime.date.today().isoformat() if date is None else str(date)
    entries = {}
    for number, (position, formula) in enumerate(zip(positions, formulas), start=1):
        band_i, band_j = (bands[index] for index in pairs[position])
        known = "" if note else known_index(band_i, band_j, catalogue)
        k = float(weight_ratio(estimator.coef_a_[position], estimator.coef_c_[position]))
        long_name = (
            f"Learned normalized difference of {band_i.common_name} and "
            f"{band_j.common_name}, weighting k = {k:.4g}"
            + (f" (band pair of {known})" if known else "")
        )
        short_name = f"{prefix}{number}"
        entries[short_name] = {
            "application_domain": asi_domain(known, catalogue) if domain is None else str(domain),
            "bands": [asi_symbol(band_i), asi_symbol(band_j)],
            "contributor": contributor,
            "date_of_addition": date,
            "formula": formula,
            "long_name": long_name,
            "platforms": asi_platforms(band_i, band_j),
            "reference": reference,
            "short_name": short_name,
        }
    result = {"SpectralIndices": entries}
    if path is not None:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)
            handle.write("\n")
    return result
