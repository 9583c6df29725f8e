"""The ND variant a fit uses: ``variant="auto"`` chosen from the training bands.

A modelling decision, apart from the input checks of :mod:`._validation`: non-negative
bands are reflectance, negative ones signed data, unless they look like no-data fill
values, which a model of reflectance must not learn.
"""

import numpy as np

from ._validation import locate

__all__ = []


#: Negative band values that mark no-data in satellite products (GDAL/ENVI -9999,
#: int16 -32768 ...): under ``variant="auto"`` they are refused, not taken as signed data.
FILL_VALUES = (-9999.0, -999.0, -10000.0, -32767.0, -32768.0)


def choose_variant(variant, X, *, estimator_name, feature_names, verbose=0):
    """``variant`` as a fit uses it: ``"auto"`` chooses from the training bands ``X``.

    ``"reflectance"`` when every value is non-negative, ``"signed"`` for signed
    data (standardized features, differences). Negative values that look like
    no-data fill values (one of :data:`FILL_VALUES`, below -1e30, or a row with
    one negative value in every band) raise the reflectance variant's
    ``ValueError`` instead: a model of reflectance must not learn fill values.
    """
    if variant != "auto":
        return variant
    if X.size == 0 or X.min() >= 0:
        return "reflectance"
    fill = np.isin(X, FILL_VALUES) | (X < -1e30)
    fill |= ((X == X[:, :1]).all(axis=1) & (X[:, 0] < 0))[:, None]
    if fill.any():
        raise ValueError(
            f"Negative values in data passed to {estimator_name}: "
            f"{locate(fill, feature_names)} of X, down to {X.min():.4g}, look like no-data "
            "fill values (such as -9999 or -32768, or one negative value in every band of a "
            "row): mask those rows before fit. variant='auto' takes negative values as "
            "signed data (standardized features) only without such values: set "
            "variant='signed' to use them as they are, or variant='reflectance' for "
            "non-negative reflectance (small negative reflectances can be clipped with "
            "np.clip(X, 0, None))."
        )
    if verbose:
        print(
            f"variant='auto': X has negative values (down to {X.min():.4g}): using "
            "variant_='signed'"
        )
    return "signed"
