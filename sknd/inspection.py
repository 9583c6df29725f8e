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

from ._formula import VARIANTS, softplus, weight_ratio
from ._validation import check_fitted_indices
from .bands import resolve_bands
from .indices import get_catalogue, known_index

__all__ = ["band_identifiers", "export_formulas", "get_bands", "index_table"]

_FORMATS = ("numpy", "gee", "latex", "text")


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
    estimator : fitted sknd estimator
        An ``NDClassifier``, ``NDRegressor`` or ``NDTransformer`` (any object
        with the fitted attributes listed in the module docstring works).
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
          (see :mod:`sknd.indices`).

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

    check_fitted_indices(estimator)
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
                "known_index": known_index(bands[i], bands[j], catalogue),
            }
        )
    columns = ["band_i", "band_j", "a", "c", "k", "importance", "known_index"]
    table = pd.DataFrame(rows, columns=columns)
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


# --- number formatting -------------------------------------------------------


def _number(value, precision, style):
    """Format a float for one output syntax.

    ``precision=None`` keeps every digit needed to round-trip the float, so an
    exported formula reproduces the model exactly; an int keeps that many
    significant digits for display.
    """
    value = float(value)
    if style == "gee":
        # The Earth Engine expression grammar is only documented for plain
        # decimal literals: never emit an exponent.
        return np.format_float_positional(
            value, precision=precision, unique=True, fractional=False, trim="-"
        )
    if precision is None:
        text = repr(value)
    else:
        text = np.format_float_positional(
            value, precision=precision, unique=True, fractional=False, trim="-"
        )
    if style == "latex" and "e" in text:
        mantissa, exponent = text.split("e")
        exponent = int(exponent)
        if float(mantissa) == 1.0:
            return f"10^{{{exponent}}}"
        return f"{mantissa} \\times 10^{{{exponent}}}"
    return text


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
    if fmt == "latex":
        return [
            r"\mathrm{" + "".join(_LATEX_SPECIAL.get(ch, ch) for ch in name) + "}" for name in names
        ]
    # text: plain names, bracketed when they would not read as one token.
    return [name if name.isidentifier() else f"[{name}]" for name in names]


# Per-syntax pieces: how to write softplus(b), sqrt(b**2 + eps) and w*b.
def _softplus_term(symbol, fmt):
    if fmt == "numpy":
        # Stable log(1 + exp(b)); equal to it wherever the latter is finite.
        return f"np.logaddexp(0, {symbol})"
    if fmt == "latex":
        return rf"\log\left(1 + e^{{{symbol}}}\right)"
    return f"log(1 + exp({symbol}))"


def _smooth_abs_term(symbol, eps, fmt):
    if fmt == "numpy":
        return f"np.sqrt({symbol}**2 + {eps})"
    if fmt == "latex":
        return rf"\sqrt{{{symbol}^{{2}} + {eps}}}"
    return f"sqrt({symbol}**2 + {eps})"


def _product(weight, term, fmt):
    if fmt == "latex":
        return rf"{weight}\,{term}"
    return f"{weight}*{term}"


def _formula(w_i, w_j, sym_i, sym_j, eps, variant, fmt):
    if variant == "softplus":
        sym_i, sym_j = _softplus_term(sym_i, fmt), _softplus_term(sym_j, fmt)
    numerator = f"{_product(w_i, sym_i, fmt)} - {_product(w_j, sym_j, fmt)}"
    if variant == "signed":
        den_i, den_j = _smooth_abs_term(sym_i, eps, fmt), _smooth_abs_term(sym_j, eps, fmt)
    else:
        den_i, den_j = sym_i, sym_j
    denominator = f"{_product(w_i, den_i, fmt)} + {_product(w_j, den_j, fmt)} + {eps}"
    if fmt == "latex":
        return rf"\frac{{{numerator}}}{{{denominator}}}"
    return f"({numerator}) / ({denominator})"


def export_formulas(estimator, format="numpy", top=None, precision=None):
    """Write each learned index as a formula over band names.

    Parameters
    ----------
    estimator : fitted sknd estimator
        See :func:`index_table`.
    format : {"numpy", "gee", "latex", "text"}, default="numpy"
        Output syntax:

        - ``"numpy"``: a Python expression over band arrays, band names made
          identifiers by :func:`band_identifiers`; evaluate it with
          ``eval(formula, {"np": numpy}, {identifier: array, ...})``.
        - ``"gee"``: an Earth Engine ``ee.Image.expression`` string that reads
          bands with ``b('name')``, so it works for any band name on an image
          whose bands carry the model's band names
          (``image.expression(formula)``). Numbers are plain decimals.
        - ``"latex"``: a ``\\frac{...}{...}`` math-mode expression.
        - ``"text"``: a readable expression with the band names as they are
          (bracketed when not identifiers).

        ``variant="signed"`` is written with ``sqrt(b**2 + epsilon)`` and
        ``variant="softplus"`` with ``log(1 + exp(b))`` (``np.logaddexp(0, b)``
        in numpy, which is the same function without overflow).
    top : int, optional
        Only the ``top`` most important indices (by ``index_importances_``),
        most important first. By default every index, in the order of the
        estimator's ND outputs (for the transformer, ``transform``'s columns).
    precision : int, optional
        Significant digits of the band weights. By default ``"numpy"`` and
        ``"gee"`` keep every digit, so that the formulas reproduce the model to
        floating-point accuracy, and ``"latex"`` and ``"text"``, meant for
        reading, keep 4. ``epsilon`` is always written in full.

    Returns
    -------
    formulas : list of str
        One formula per index.

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
    """
    if format not in _FORMATS:
        raise ValueError(f"format must be one of {_FORMATS}, got {format!r}.")
    if precision is not None and (not isinstance(precision, (int, np.integer)) or precision < 1):
        raise ValueError(f"precision must be a positive int or None, got {precision!r}.")
    check_fitted_indices(estimator)
    # As fitted (sknd estimators' epsilon_, variant_), else the plain attributes.
    variant = getattr(estimator, "variant_", getattr(estimator, "variant", "reflectance"))
    if variant not in VARIANTS:
        raise ValueError(f"Unknown variant {variant!r}; expected one of {VARIANTS}.")

    bands = get_bands(estimator)
    symbols = _band_symbols([band.name for band in bands], format)
    pairs = np.asarray(estimator.pairs_, dtype=np.intp).reshape(-1, 2)
    positions = _output_positions(estimator)
    if top is not None:
        if not isinstance(top, (int, np.integer)) or top < 1:
            raise ValueError(f"top must be a positive int or None, got {top!r}.")
        importances = np.asarray(estimator.index_importances_, dtype=np.float64)[positions]
        # Stable sort keeps the output order among equally important indices.
        positions = positions[np.argsort(-importances, kind="stable")][:top]

    weights_i = softplus(np.asarray(estimator.coef_a_, dtype=np.float64).ravel())
    weights_j = softplus(np.asarray(estimator.coef_c_, dtype=np.float64).ravel())
    if precision is None and format in ("latex", "text"):
        precision = 4
    eps = _number(getattr(estimator, "epsilon_", getattr(estimator, "epsilon", None)), None, format)
    formulas = []
    for position in positions:
        i, j = pairs[position]
        formulas.append(
            _formula(
                _number(weights_i[position], precision, format),
                _number(weights_j[position], precision, format),
                symbols[i],
                symbols[j],
                eps,
                variant,
                format,
            )
        )
    return formulas
