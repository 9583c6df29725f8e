"""Checks of band values that name the problem and the fix.

Satellite and field data are messy: NaN fill values, no-data zeros, digital numbers
up to 65535, negative surface reflectance after atmospheric correction, netCDF fill
values near 1e37. scikit-learn's ``validate_data`` handles shapes, dtypes and feature
names; this module adds what band values need, with messages that say where the bad
values are and what to do about them. The standard phrases ("Input X contains NaN",
"Negative values in data passed to", "Found array with 1 feature(s)") are kept so that
scikit-learn's estimator checks still recognise them.
"""

import sys
import warnings

import numpy as np

__all__ = []

#: Largest band magnitude the estimators accept. The network computes in float32,
#: whose squares (the "signed" variant's ``sqrt(b**2 + epsilon)``, the weight gradients
#: of a linear layer) overflow above about 1.8e19; 1e15 leaves room for the learned
#: weights. Reflectance, radiance and 16- or 32-bit digital numbers are far below;
#: larger values are almost always fill values (netCDF's default is 9.96921e36).
MAX_ABS_BAND_VALUE = 1e15

#: Sparse input is made dense up to this many values (``n_samples * n_features``,
#: 400 MB as float64). Band values are dense data; sparse matrices only reach the
#: estimators from upstream steps such as a ``ColumnTransformer``.
MAX_SPARSE_DENSIFY_SIZE = 50_000_000

_SHOWN = 5  # row and column positions listed in a message


class NonNumericInputError(ValueError, TypeError):
    """``X`` holds entries that are not numbers (strings, objects).

    A ``ValueError`` like every other input error of sknd, and a ``TypeError``
    like the numpy conversion error it replaces (what scikit-learn's checks
    expect for, e.g., a dict in an object array).
    """


def _plural(n, noun):
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _listing(items):
    shown = ", ".join(str(item) for item in items[:_SHOWN])
    return shown + (", ..." if len(items) > _SHOWN else "")


def locate(mask, feature_names=None):
    """Describe where ``mask`` (n_samples, n_features) is True, for an error message.

    Examples
    --------
    >>> locate(np.array([[False, True], [False, True]]), ["red", "nir"])
    "2 values in 2 rows (rows 0, 1; columns 'nir')"
    """
    rows = np.flatnonzero(mask.any(axis=1))
    columns = np.flatnonzero(mask.any(axis=0))
    if feature_names is not None:
        columns = [repr(str(feature_names[j])) for j in columns]
    return (
        f"{_plural(int(mask.sum()), 'value')} in {_plural(len(rows), 'row')} "
        f"(rows {_listing(rows)}; columns {_listing(list(columns))})"
    )


def reject_images(X, name, estimator_name):
    """Turn a 3-D image or cube passed as ``X`` into an error saying how to reshape it."""
    ndim = getattr(X, "ndim", None)
    if ndim is not None and ndim > 2:
        raise ValueError(
            f"Found array with dim {ndim}, while dim <= 2 is required by {estimator_name}. "
            f"{name} of shape {tuple(X.shape)} looks like an image or a data cube: pass one row "
            f"per pixel and one column per band, e.g. {name}.reshape(-1, {name}.shape[-1]) for "
            "an array of shape (rows, cols, bands) (move the band axis last first)."
        )


def _is_dataframe(X):
    # Looked up without importing pandas (a second of start-up): no DataFrame exists without it.
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(X, pd.DataFrame)


def plain_values(X, name, estimator_name):
    """``X`` ready for ``validate_data``: masks, dates and complex numbers refused, strides fixed.

    A masked array (rasterio's ``read(masked=True)``) with masked values would
    have them used as real band values: refused, with the fix. Dates, time
    deltas and complex numbers would be converted to floats silently.
    Negative strides (``X[::-1]``, ``np.flipud``) are copied away: torch
    cannot take them.
    """
    if np.ma.isMaskedArray(X):
        mask = np.ma.getmaskarray(X)
        if mask.any():
            rows = mask.reshape(len(X), -1).any(axis=1) if X.ndim else mask
            raise ValueError(
                f"{name} is a masked array with {_plural(int(mask.sum()), 'masked value')} in "
                f"{_plural(int(rows.sum()), 'row')}, which {estimator_name} would use as real "
                f"band values. Drop those rows first, e.g. {name}.data[~{name}.mask.any(axis=1)], "
                "or use sknd.raster, which treats masked pixels as no-data."
            )
        X = X.data
    dtypes = list(X.dtypes) if _is_dataframe(X) else [getattr(X, "dtype", None)]
    for dtype in dtypes:
        kind = getattr(dtype, "kind", None)
        if kind in ("m", "M", "c"):
            what = {"m": "time deltas", "M": "dates", "c": "complex numbers"}[kind]
            complex_ = "Complex data not supported: " if kind == "c" else ""
            raise NonNumericInputError(
                f"{complex_}{name} must hold real band values, but it holds {what} (dtype "
                f"{dtype}), which "
                f"{estimator_name} would silently read as numbers. Drop those columns or convert "
                "them to band values first."
            )
    if isinstance(X, np.ndarray) and any(stride < 0 for stride in X.strides):
        X = np.ascontiguousarray(X)
    return X


def non_numeric_error(X, name, error):
    """A clear error if ``X`` cannot be converted to floats, else None.

    Called when ``validate_data`` failed with ``error``: if the conversion of
    ``X`` itself is what fails, say which columns are at fault.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. ComplexWarning: not our concern here
            np.asarray(X, dtype=np.float64)
    except (ValueError, TypeError):
        pass
    else:
        return None
    if _is_dataframe(X):
        import pandas as pd

        columns = [
            str(column)
            for column, dtype in X.dtypes.items()
            if not (pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype))
        ]
        where = f"column(s) {columns} are not numeric"
    elif isinstance(X, (list, tuple)) and len({np.size(row) for row in X}) > 1:
        lengths = sorted({int(np.size(row)) for row in X})
        return ValueError(
            f"{name} is a ragged sequence: its rows have {_listing(lengths)} values. Pass one "
            "row per sample with the same bands (columns) in every row."
        )
    else:
        where = "some entries are not numbers"
    return NonNumericInputError(
        f"{name} must hold numeric band values, but {where} ({error}). Drop the columns that "
        "are not bands (labels, identifiers, dates, ...) or convert them to numbers first."
    )


def densify(X, name, estimator_name):
    """Return sparse ``X`` as a dense array, up to :data:`MAX_SPARSE_DENSIFY_SIZE` values."""
    size = X.shape[0] * X.shape[1]
    if size > MAX_SPARSE_DENSIFY_SIZE:
        raise ValueError(
            f"Sparse {name} of shape {X.shape} has {size:,} values when dense, more than the "
            f"{MAX_SPARSE_DENSIFY_SIZE:,} that {estimator_name} densifies automatically "
            "(normalized differences need every band value). Convert it with "
            f"{name}.toarray() if memory allows, or pass it in chunks of rows."
        )
    return X.toarray()


def check_min_bands(X, estimator_name):
    """A normalized difference needs a pair of bands."""
    if X.shape[1] < 2:
        raise ValueError(
            f"Found array with {X.shape[1]} feature(s) (shape={X.shape}) while a minimum of 2 "
            f"is required by {estimator_name}. A normalized difference needs a pair of bands: "
            "pass at least two band columns."
        )


def check_band_values(
    X, *, name, estimator_name, feature_names, non_negative, source_dtype, band_range=None
):
    """Reject NaN, infinite, overflowing and (for reflectance) negative band values.

    One ``min`` and one ``max`` (which propagate NaN) decide whether all is
    well, without temporaries; masks are built only to describe a failure.
    With ``band_range`` (the fitted ``band_range_``), values far beyond it
    warn (see :func:`warn_far_outside`).
    """
    if X.size == 0:
        return
    low, high = X.min(), X.max()
    if np.isnan(low) or np.isnan(high):
        raise ValueError(
            f"Input {name} contains NaN: {locate(np.isnan(X), feature_names)}. "
            f"{estimator_name} cannot use missing values: impute them (e.g. "
            "sklearn.impute.SimpleImputer in a pipeline) or drop those rows. NaN often marks "
            "no-data pixels (clouds, gaps, fill values), which are best masked out."
        )
    if np.isinf(low) or np.isinf(high):
        float16 = ""
        if source_dtype == np.float16:
            float16 = (
                " float16 holds values up to 65504 only, so 16-bit digital numbers overflow "
                "it: convert the data to float32 instead."
            )
        raise ValueError(
            f"Input {name} contains infinity or a value too large for {X.dtype!r}: "
            f"{locate(np.isinf(X), feature_names)}.{float16} Infinite values usually come "
            "from saturated pixels, divisions by zero or overflowing conversions: replace "
            "them (e.g. with NaN, then impute) or drop those rows."
        )
    peak = max(-float(low), float(high))
    if peak > MAX_ABS_BAND_VALUE:
        raise ValueError(
            f"Input {name} contains values too large for {estimator_name}: "
            f"{locate(np.abs(X) > MAX_ABS_BAND_VALUE, feature_names)}, up to {peak:.4g} in "
            f"magnitude, beyond the {MAX_ABS_BAND_VALUE:.0e} the network can compute with in "
            "float32. Values this large are usually fill values marking no-data (e.g. "
            "9.96921e+36 in netCDF files): mask those rows. Otherwise rescale all bands by one "
            "common factor (e.g. divide by 1e4), which leaves normalized differences unchanged "
            "up to epsilon."
        )
    if non_negative and low < 0:
        raise ValueError(
            f"Negative values in data passed to {estimator_name}: "
            f"{locate(X < 0, feature_names)} of {name}, down to {low:.4g}. "
            "variant='reflectance' expects non-negative band values (reflectance, radiance "
            "or digital numbers). Small negative surface reflectances (atmospheric "
            "over-correction) can be clipped with np.clip(X, 0, None); large negative values "
            "such as -9999 are usually no-data fill values: mask those rows. For signed inputs "
            "such as standardized features, use variant='signed' or variant='softplus'."
        )
    if band_range is not None:
        warn_far_outside(X, band_range, peak, name, estimator_name, feature_names)


#: Band values beyond this many times the largest magnitude the band had at fit warn:
#: orders of magnitude (other units), not the few percent by which new data may exceed it.
RANGE_FACTOR = 10.0


def warn_far_outside(X, band_range, peak, name, estimator_name, feature_names):
    """Warn when bands of ``X`` reach far beyond their range at fit (``band_range_``).

    ``peak`` is the largest magnitude in ``X``: only when it exceeds the
    smallest limit are the bands' own extremes computed.
    """
    scale = np.abs(np.asarray(band_range, dtype=np.float64)).max(axis=1)
    # A band that was 0 at fit has no magnitude to compare with.
    limit = np.where(scale > 0, scale, np.inf) * RANGE_FACTOR
    if X.shape[1] != len(limit) or not peak > limit.min():
        return
    reach = np.maximum(-X.min(axis=0).astype(np.float64), X.max(axis=0).astype(np.float64))
    far = np.flatnonzero(reach > limit)
    if not len(far):
        return
    names = ([str(n) for n in feature_names] if feature_names is not None else None) or [
        f"column {k}" for k in range(X.shape[1])
    ]
    described = ", ".join(
        f"{names[k]!r} up to {reach[k]:.4g} ({reach[k] / scale[k]:.2g} times its largest "
        f"magnitude at fit, {scale[k]:.4g})"
        for k in far[:5]
    )
    more = f" and {len(far) - 5} more" if len(far) > 5 else ""
    warnings.warn(
        f"Band values in {name} lie far outside those {estimator_name} was fitted on: "
        f"{described}{more}. The model uses raw band values (passthrough=True or "
        "architecture='mlp'), so its predictions there are extrapolations: pass the bands in "
        "the units of the training data (e.g. reflectance 0-1, not digital numbers 0-10000).",
        UserWarning,
        stacklevel=5,
    )


#: Where the docs say why the ND layer wants the bands as measured (the warning names it).
BANDS_AS_MEASURED_DOC = "the input contract, docs/contract.md, 'Bands as measured'"


def centred_bands(X):
    """``"mean"`` or ``"median"`` when every band of ``X`` is centred on 0 to rounding and
    some values are negative, as scikit-learn's ``StandardScaler`` (``RobustScaler``)
    leaves data; else None.

    Band values as measured are never so: a mean of 0 over reflectances, digital numbers
    or radiances needs negative values balancing the positive ones in every band.
    """
    if len(X) < 2 or X.min() >= 0:
        return None
    # Rounding of a scaler's float32 output, relative to each band's magnitude.
    tolerance = 1e-5 * np.max(np.abs(X), axis=0)
    if np.all(np.abs(X.mean(axis=0, dtype=np.float64)) <= tolerance):
        return "mean"
    if np.all(np.abs(np.median(X, axis=0)) <= tolerance):
        return "median"
    return None


def _warn_centred(X, estimator_name, variant):
    """Warn that ``X`` looks standardized, as a scaler before the estimator leaves it."""
    centre = centred_bands(X)
    if centre is None:
        return
    warnings.warn(
        f"Every band of X has {centre} 0 and negative values: it looks standardized, as a "
        f"scaler (StandardScaler, RobustScaler) before {estimator_name} in a pipeline leaves "
        "it. The normalized-difference layer wants the bands as measured (reflectance, "
        "digital numbers): normalized differences of standardized bands are no spectral "
        f"indices (they depend on the scaler's means), variant_ is {variant!r} and indices_ "
        f"names no known index. Give {estimator_name} the bands without a scaler before it "
        f"(see {BANDS_AS_MEASURED_DOC}).",
        UserWarning,
        stacklevel=5,
    )


def warn_about_training_values(X, *, epsilon, variant, nd_layer, estimator_name):
    """Warn about training data that would silently give a useless or misnamed model."""
    zero_rows = int(np.count_nonzero(~np.any(X, axis=1)))
    if zero_rows:
        warnings.warn(
            f"{zero_rows} of {len(X)} training rows have every band equal to 0, a common "
            "no-data value. If they are no-data pixels, drop them before fit (e.g. "
            "X[np.any(X != 0, axis=1)]): the model would learn them as real spectra.",
            UserWarning,
            stacklevel=4,
        )
    if not nd_layer:
        return
    _warn_centred(X, estimator_name, variant)
    if variant == "softplus":
        return
    # The denominator adds epsilon to the bands ("signed": sqrt(epsilon) to each band's
    # magnitude); bands far below that give indices near 0 whatever the weights.
    floor = epsilon if variant == "reflectance" else np.sqrt(epsilon)
    peak = float(np.max(np.abs(X), initial=0.0))
    if peak < 10 * floor:
        warnings.warn(
            f"All band values are at most {peak:.3g}, not much above the {floor:.3g} that "
            f"epsilon={epsilon:g} adds to the denominator of the normalized differences: the "
            "indices are dominated by epsilon and stay close to 0. Rescale X (multiply all "
            "bands by one common factor) or use a smaller epsilon.",
            UserWarning,
            stacklevel=4,
        )


def _has_fitted_attributes(estimator):
    """Whether ``estimator`` looks fitted to scikit-learn (attributes ending with ``_``)."""
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    try:
        check_is_fitted(estimator)
    except (NotFittedError, TypeError):
        return False
    return True


def check_fitted_indices(estimator):
    """Raise ``NotFittedError`` unless ``estimator`` has learned indices to read.

    Used by :mod:`sknd.inspection` and :mod:`sknd.plotting`, which work from
    the fitted attributes ``pairs_``, ``coef_a_`` and ``coef_c_`` alone.
    """
    missing = [name for name in ("pairs_", "coef_a_", "coef_c_") if not hasattr(estimator, name)]
    if missing and _has_fitted_attributes(estimator):
        raise TypeError(
            f"This {type(estimator).__name__} is fitted but has no learned normalized "
            f"differences (missing {', '.join(missing)}): sknd.inspection and sknd.plotting "
            "read the indices of sknd estimators (NDClassifier, NDRegressor, NDTransformer)."
        )
    if missing:
        from sklearn.exceptions import NotFittedError

        raise NotFittedError(
            f"This {type(estimator).__name__} instance is not fitted yet (missing "
            f"{', '.join(missing)}). Call 'fit' before inspecting its indices."
        )


def _nd_layer_of(model):
    """The first ``sknd.nn.NormalizedDifference`` in ``model`` if it is a torch module, else
    None (torch is looked up, not imported: without it no such module exists)."""
    torch_nn = sys.modules.get("torch.nn")
    if torch_nn is None or not isinstance(model, torch_nn.Module):
        return None
    from ..nn import NormalizedDifference

    layer = next((m for m in model.modules() if isinstance(m, NormalizedDifference)), None)
    if layer is None:
        raise TypeError(
            f"This {type(model).__name__} module has no sknd.nn.NormalizedDifference layer: "
            "sknd.inspection and sknd.plotting read the indices of such layers and of sknd "
            "estimators."
        )
    return layer


def fitted_indices(model):
    """``model`` as :mod:`sknd.inspection` and :mod:`sknd.plotting` read it.

    A fitted estimator as it is (``NotFittedError`` unless it has learned
    indices, see :func:`check_fitted_indices`); a torch module (a
    ``NormalizedDifference`` the user trained, an estimator's ``to_torch()``)
    as the fitted attributes of its first ``NormalizedDifference``: ``pairs_``,
    ``coef_a_``, ``coef_c_``, ``epsilon_``, ``variant_``, ``n_features_in_``
    and the layer's ``bands`` and ``sensor``.
    """
    layer = _nd_layer_of(model)
    if layer is None:
        check_fitted_indices(model)
        return model
    from types import SimpleNamespace

    return SimpleNamespace(
        pairs_=layer.pairs.detach().cpu().numpy().astype(np.int64),
        coef_a_=layer.a.detach().cpu().double().numpy(),
        coef_c_=layer.c.detach().cpu().double().numpy(),
        epsilon_=float(layer.epsilon),
        variant_=layer.variant,
        n_features_in_=int(layer.n_features),
        bands=None if layer.bands is None else [str(name) for name in layer.bands],
        sensor=getattr(layer, "sensor", None),
    )
