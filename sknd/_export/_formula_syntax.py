"""How a learned normalized difference is written in each formula syntax.

The text pieces of :func:`sknd.inspection.export_formulas`: numbers
(:func:`format_number`) and the whole index over band symbols
(:func:`format_formula`) for ``format="numpy"``, ``"gee"``, ``"qgis"``,
``"latex"``, ``"text"`` and ``"asi"``, every variant of :mod:`sknd._nd._formula`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["format_formula", "format_number"]


def format_number(value, precision, style):
    """Format a float for one output syntax.

    ``precision=None`` keeps every digit needed to round-trip the float, so an
    exported formula reproduces the model exactly; an int keeps that many
    significant digits for display.
    """
    value = float(value)
    if style in ("gee", "qgis"):
        # The Earth Engine and QGIS raster-calculator grammars are only documented
        # for plain decimal literals: never emit an exponent.
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


# Per-syntax pieces: how to write softplus(b), sqrt(b**2 + eps) and w*b.
def _softplus_term(symbol, fmt):
    if fmt == "numpy":
        # Stable log(1 + exp(b)); equal to it wherever the latter is finite.
        return f"np.logaddexp(0, {symbol})"
    if fmt == "latex":
        return rf"\log\left(1 + e^{{{symbol}}}\right)"
    if fmt == "qgis":  # the raster calculator has ln() and ^, but no exp()
        return f"ln(1 + {np.e!r}^{symbol})"
    return f"log(1 + exp({symbol}))"


def _smooth_abs_term(symbol, eps, fmt):
    if fmt == "numpy":
        return f"np.sqrt({symbol}**2 + {eps})"
    if fmt == "asi":  # the catalogue's formulas are arithmetic only: no sqrt()
        return f"({symbol}**2 + {eps})**0.5"
    if fmt == "qgis":
        return f"sqrt({symbol}^2 + {eps})"
    if fmt == "latex":
        return rf"\sqrt{{{symbol}^{{2}} + {eps}}}"
    return f"sqrt({symbol}**2 + {eps})"


def _product(weight, term, fmt):
    if fmt == "latex":
        return rf"{weight}\,{term}"
    return f"{weight}*{term}"


def format_formula(w_i, w_j, sym_i, sym_j, eps, variant, fmt):
    """One index ``(w_i b_i - w_j b_j) / (w_i b_i + w_j b_j + eps)`` in the syntax ``fmt``."""
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
