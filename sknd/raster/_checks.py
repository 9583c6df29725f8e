"""Checks of what the raster functions take: image values, ``nodata`` and ``fill_value``.

Band values must be real numbers (booleans, integers, floats), whatever
their container (whose adapter reads them, see :mod:`sknd.raster._arrays`).
``nodata`` and ``fill_value`` are single values of a kind
that can meet the image and the output: anything else would silently match
nothing or rewrite every output value. A class map's ``fill_value`` is no
class label: its no-data pixels would read as that class, and that class as
no-data.
"""

import os
from numbers import Complex, Integral, Real

import numpy as np

__all__ = []


def check_options(method, estimator, *, chunk_pixels, output_dim, sensor, n_jobs, **options):
    """The options the image functions share, checked: a dict of them.

    ``options`` holds ``nodata``, ``fill_value`` (checked here), ``bands``
    (checked against the image's bands, by :func:`sknd.raster._matching.check_bands`),
    ``dtype`` (of the output, when not the estimator's) and ``codes`` (a
    :class:`~sknd.raster._categorical.CodeTable`: labels written as class codes).
    """
    if not isinstance(chunk_pixels, Integral) or isinstance(chunk_pixels, bool) or chunk_pixels < 1:
        raise ValueError(f"chunk_pixels must be a positive integer, got {chunk_pixels!r}.")
    if not isinstance(output_dim, str):
        raise TypeError(f"output_dim must be a string, got {output_dim!r}.")
    if sensor is not None and not isinstance(sensor, str):
        raise TypeError(f"sensor must be a preset name (str) or None, got {sensor!r}.")
    n_jobs = check_n_jobs(n_jobs)
    options["nodata"] = check_scalar(options["nodata"], "nodata", numeric=True)
    options["fill_value"] = check_scalar(
        options["fill_value"], "fill_value", numeric=method != "predict"
    )
    if method == "predict" and options["codes"] is None:  # codes keep their fill apart
        check_fill_not_a_class(options["fill_value"], estimator)
    return {**options, "chunk_pixels": int(chunk_pixels), "sensor": sensor, "n_jobs": n_jobs}


def check_image_dtype(dtype):
    """Raise a ``TypeError`` unless ``dtype`` holds real band values."""
    if dtype.kind in "biuf":
        return
    what = {
        "c": "complex numbers (take np.abs, .real or .imag first)",
        "m": "time deltas",
        "M": "dates",
        "U": "strings",
        "S": "bytes",
        "O": "Python objects",
    }.get(dtype.kind, f"values of dtype {dtype}")
    raise TypeError(
        f"image must hold real band values (booleans, integers or floats), but it holds "
        f"{what}: dtype {dtype}. Convert the bands to numbers first."
    )


def check_scalar(value, name, *, numeric):
    """A single value (not an array); a real number when ``numeric``."""
    if value is None:
        return None
    if np.ndim(value) != 0:
        raise ValueError(
            f"{name} must be a single value, got an array of shape {np.shape(value)}. "
            "Pass one value, the same for every band and output."
        )
    if isinstance(value, np.ndarray):
        value = value.item()
    if isinstance(value, Complex) and not isinstance(value, Real):
        raise TypeError(f"{name} must be a real number, got the complex number {value!r}.")
    if numeric and (not isinstance(value, Real) or isinstance(value, (str, bytes))):
        raise TypeError(
            f"{name} must be a number, got {value!r} of type {type(value).__name__}."
            + (" Pass the number itself, not a string." if isinstance(value, str) else "")
        )
    return value


def check_fill_not_a_class(fill_value, estimator, option="fill_value"):
    """Refuse a fill value equal to one of ``estimator.classes_`` (a class map's fill)."""
    classes = getattr(estimator, "classes_", None)
    if fill_value is None or classes is None or np.ndim(classes) != 1:
        return
    labels = np.asarray(classes).tolist()
    if any(_same_label(label, fill_value) for label in labels):
        raise ValueError(
            f"{option} {fill_value!r} is one of the classes {labels[:10]}"
            f"{' ...' if len(labels) > 10 else ''}: no-data pixels would read as that class and "
            f"that class as no-data. Pass a {option} that is no class label."
        )


def _same_label(label, value):
    if isinstance(label, (str, bytes)) != isinstance(value, (str, bytes)):
        return False
    return bool(label == value)


def band_nodata(values):
    """No-data values of the bands (None or NaN: none): one value, one per band, or None.

    A single value when the bands agree; else a float array with NaN for bands
    without one (NaN is no-data anyway).
    """
    values = [np.nan if value is None else value for value in values]
    values = [value.item() if isinstance(value, np.generic) else value for value in values]
    if len(set(map(repr, values))) == 1:
        value = values[0]
        return None if isinstance(value, float) and np.isnan(value) else value
    return np.asarray(values, dtype=np.float64)


def check_n_jobs(n_jobs):
    """``n_jobs`` as a number of workers: None is 1, -1 all cores, -2 all but one."""
    if n_jobs is None:
        return 1
    if not isinstance(n_jobs, Integral) or isinstance(n_jobs, bool) or n_jobs == 0:
        raise ValueError(f"n_jobs must be a non-zero integer or None, got {n_jobs!r}.")
    if n_jobs < 0:
        return max(1, (os.cpu_count() or 1) + 1 + int(n_jobs))
    return int(n_jobs)
