"""Pixel tables: an estimator's method applied chunk by chunk, no-data pixels skipped.

:mod:`sknd.raster` reshapes images of any layout into tables ``(n_pixels,
n_bands)``; this module picks the function that maps such a table to the
method's output (the fast evaluator of a fitted sknd estimator, else the
public method), learns the output's layout from a probe, and fills the output
chunk by chunk, in threads if asked, with no-data rows set to the fill value.
"""

import contextlib
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import _threads
from ._evaluator import FastNetwork

__all__ = []

#: Pixels handed to the estimator per call (sknd.raster's default). Large enough that
#: per-call overhead is negligible, small enough that a call's intermediates (pixels x
#: indices) stay in the tens of megabytes.
DEFAULT_CHUNK_PIXELS = 65_536


# ---------------------------------------------------------------- output layout
class OutputSpec:
    """What a method returns per pixel: dtype, optional output axis and its labels."""

    def __init__(self, dtype, fill, n_outputs=None, output_labels=None):
        self.dtype = np.dtype(dtype)
        self.fill = fill
        self.n_outputs = n_outputs
        self.output_labels = output_labels

    @property
    def tail(self):
        return () if self.n_outputs is None else (self.n_outputs,)


def prepare(method, estimator, n_bands, dtype, fill_value, *, compiled=True):
    """Pick the pixel function and learn its output layout from a two-pixel probe.

    The probe runs eagerly (also for lazy images): dask needs the output dtype
    and size before any block is computed. ``compiled=False`` evaluates sknd
    models without numba's kernels (see ``FastNetwork.compiled``).
    """
    func = pixel_function(estimator, method)
    if not compiled and isinstance(func, FastNetwork):
        func = func.numpy_only()
    probe_dtype = dtype if dtype.kind in "iuf" else np.float64
    probe = np.asarray(func(np.ones((2, n_bands), dtype=probe_dtype)))
    if probe.ndim not in (1, 2) or probe.shape[0] != 2:
        raise ValueError(
            f"{type(estimator).__name__}.{method} returned an array of shape {probe.shape} for "
            "2 pixels; expected (2,) or (2, n_outputs)."
        )
    n_outputs = probe.shape[1] if probe.ndim == 2 else None
    if method == "predict":
        out_dtype, fill = label_fill(probe.dtype, fill_value)
    else:
        out_dtype = probe.dtype if probe.dtype.kind == "f" else np.dtype(np.float64)
        fill = np.nan if fill_value is None else fill_value
    labels = None
    if n_outputs is not None:
        labels = _output_labels(method, estimator, n_outputs)
    return func, OutputSpec(out_dtype, fill, n_outputs, labels)


def label_fill(dtype, fill_value):
    """Output dtype and fill of ``predict`` (see the ``fill_value`` docs)."""
    if fill_value is None:
        if dtype.kind == "f":
            return dtype, np.nan
        if dtype.kind in "iub":
            return np.dtype(np.float64), np.nan
        # Object arrays holding NaN (not None): xarray turns None into NaN anyway.
        return np.dtype(object), np.nan
    numeric_labels = dtype.kind in "biuf"
    text_fill = isinstance(fill_value, (str, bytes))
    if numeric_labels and text_fill:
        raise TypeError(
            f"fill_value={fill_value!r} is text, but the predictions are numbers ({dtype}): "
            "it would turn every prediction into a string. Pass a number (e.g. -1 or NaN)."
        )
    if not numeric_labels and not text_fill:
        # e.g. NaN for string classes: kept as a float in an object array, not as 'nan'.
        return np.dtype(object), fill_value
    return np.result_type(dtype, np.asarray(fill_value).dtype), fill_value


def _output_labels(method, estimator, n_outputs):
    labels = None
    if method == "predict_proba":
        labels = getattr(estimator, "classes_", None)
    elif method == "transform" and hasattr(estimator, "get_feature_names_out"):
        try:
            labels = estimator.get_feature_names_out()
        except (AttributeError, TypeError, ValueError):
            labels = None
    if labels is None or np.ndim(labels) != 1 or len(labels) != n_outputs:
        return np.arange(n_outputs)
    return np.asarray(labels)


# -------------------------------------------------------------- pixel functions
class _NamedColumns:
    """Call an estimator method with a DataFrame carrying its ``feature_names_in_``.

    Estimators fitted on a DataFrame warn on every call with a bare array;
    naming the columns also lets pipelines select columns by name.
    """

    def __init__(self, method, names):
        self.method = method
        self.names = names

    def __call__(self, X):
        import pandas as pd

        return self.method(pd.DataFrame(X, columns=self.names, copy=False))


#: The classes whose objects hand out a fast evaluator (``_fast_evaluator``), by module.
_SKND_MODELS = (
    ("sknd._model_file._saved_model", "SavedModel"),
    ("sknd._estimators._base", "BaseND"),
)


def pixel_function(estimator, method):
    """A picklable callable mapping a pixel table (n, n_bands) to the method's output."""
    # Fitted sknd estimators and loaded model files hand out a fast evaluator of their
    # network (sknd._inference._evaluator). Their modules are looked up, not imported: no
    # object of their classes exists before they are, and both stand above this package
    # (sknd._estimators._base imports torch and scikit-learn).
    sknd_types = tuple(
        getattr(sys.modules[module], name) for module, name in _SKND_MODELS if module in sys.modules
    )
    fast = estimator._fast_evaluator(method) if isinstance(estimator, sknd_types) else None
    if fast is not None:
        return fast
    bound = getattr(estimator, method)
    names = getattr(estimator, "feature_names_in_", None)
    if names is None:
        return bound
    return _NamedColumns(bound, list(names))


# ------------------------------------------------------------------- processing
def apply_block(
    block, *, func, spec, chunk_pixels, nodata, n_jobs, single_threaded_blas, columns=None
):
    """Apply ``func`` to an array ``(..., n_bands)``; the dask and xarray entry point."""
    out = np.empty(block.shape[:-1] + spec.tail, dtype=spec.dtype)
    if out.size == 0:  # dask's meta inference probes with empty arrays
        return out
    context = _threads.single_threaded_blas if single_threaded_blas else contextlib.nullcontext
    with context():
        apply_pixels(
            block,
            func,
            spec,
            out=out,
            chunk_pixels=chunk_pixels,
            nodata=nodata,
            n_jobs=n_jobs,
            columns=columns,
        )
    return out


def apply_pixels(pixels, func, spec, *, out, chunk_pixels, nodata, n_jobs=1, columns=None):
    """Fill ``out`` (pixels.shape[:-1] + spec.tail) chunk by chunk.

    ``columns`` (a list of band positions, or None for all bands in order)
    picks and orders the bands ``func`` takes; only those decide no-data.
    ``nodata`` is one value, or an array of one per band (NaN: none).
    """
    if out.size == 0 or pixels.size == 0:  # an empty scene: nothing to call the estimator on
        return out
    n_bands = pixels.shape[-1]
    tail = spec.tail
    # A model on a GPU takes whole contiguous scenes (sknd._inference._device_pixels), when it can.
    fill_table = getattr(func, "fill_table", None)
    if fill_table is not None and pixels.flags.c_contiguous and out.flags.c_contiguous:
        table, out_table = pixels.reshape(-1, n_bands), out.reshape((-1,) + tail)
        options = {"chunk_pixels": chunk_pixels, "nodata": nodata, "columns": columns}
        if fill_table(table, out_table, spec, n_jobs=n_jobs, **options):
            return out
    if np.ndim(nodata) == 1 and columns is not None:
        nodata = np.asarray(nodata)[columns]

    def run(index):
        block = pixels[index]
        block_shape = block.shape[:-1]
        # reshape copies only when the chunk is not contiguous, e.g. a band-first image.
        table = block.reshape(-1, n_bands)
        if columns is not None:
            table = table[:, columns]
        values = _predict_pixels(func, table, spec, nodata)
        out[index] = values.reshape(block_shape + tail)

    indices = list(_chunk_indices(pixels.shape[:-1], chunk_pixels))
    single_threaded = n_jobs > 1 or getattr(func, "single_threaded_blas", False)
    with _threads.single_threaded_blas() if single_threaded else contextlib.nullcontext():
        if n_jobs == 1 or len(indices) == 1:
            for index in indices:
                run(index)
        else:
            with ThreadPoolExecutor(min(n_jobs, len(indices))) as pool:
                # list() re-raises the first exception of a chunk in the caller.
                list(pool.map(run, indices))
    return out


def _chunk_indices(shape, chunk_pixels):
    """Index tuples cutting an array of ``shape`` into pieces of at most ``chunk_pixels``.

    Pieces are slices along one axis times whole trailing axes, so each piece
    of a C-ordered array is contiguous, and views of other layouts are copied
    one piece at a time.

    >>> list(_chunk_indices((2, 3, 4), 8))
    [(0, slice(0, 2, None)), (0, slice(2, 3, None)), (1, slice(0, 2, None)), (1, slice(2, 3, None))]
    >>> list(_chunk_indices((2, 3), 100))
    [()]
    """
    inner = 1
    for axis in range(len(shape) - 1, -1, -1):
        if inner * shape[axis] > chunk_pixels:
            break
        inner *= shape[axis]
    else:
        yield ()
        return
    step = max(1, chunk_pixels // inner)
    for outer in np.ndindex(*shape[:axis]):
        for start in range(0, shape[axis], step):
            yield outer + (slice(start, min(start + step, shape[axis])),)


def _predict_pixels(func, X, spec, nodata):
    """``func`` on the valid rows of the pixel table ``X``; no-data rows get ``spec.fill``."""
    n_pixels = len(X)
    invalid = _invalid_pixels(X, nodata)
    if invalid is None or not invalid.any():
        return _call(func, X, spec)
    result = np.full((n_pixels,) + spec.tail, spec.fill, dtype=spec.dtype)
    valid = ~invalid
    if valid.any():
        result[valid] = _call(func, X[valid], spec)
    return result


def _call(func, X, spec):
    values = np.asarray(func(X))
    expected = (len(X),) + spec.tail
    if values.shape != expected:
        raise ValueError(
            f"The estimator returned shape {values.shape} for {len(X)} pixels, expected {expected}."
        )
    return values  # cast to spec.dtype where it is written (one pass less than astype)


def _invalid_pixels(X, nodata):
    """Rows holding NaN or ``nodata`` in any band: a boolean mask, or None when there are none.

    Rows with an infinite value are not no-data: they reach the estimator, which rejects them.
    """
    invalid = None
    # The maximum is NaN iff a value is NaN: it clears the table in one pass, cheaper than a
    # float32 sum (benchmarks/RESULTS.md, "The raster kernel against bd5a18d"); otherwise
    # row sums (a matrix-vector product), NaN or infinite
    # where a value is, find the suspect rows, and the exact test runs on those only.
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf is NaN: what is looked for
        if X.dtype.kind != "f" or X.size == 0 or not np.isnan(X.max()):
            suspect = []
        else:
            suspect = np.flatnonzero(~np.isfinite(X @ np.ones(X.shape[1], dtype=X.dtype)))
    if len(suspect):
        invalid = np.zeros(len(X), dtype=bool)
        invalid[suspect] = np.isnan(X[suspect]).any(axis=1)
    if nodata is None:
        return invalid
    values = np.broadcast_to(np.asarray(nodata), (X.shape[1],)).tolist()
    # Column by column: .any(axis=1) over a handful of bands is several times slower.
    for band, value in enumerate(values):
        if isinstance(value, float) and np.isnan(value):
            continue  # NaN is no-data anyway
        equal = X[:, band] == value
        if invalid is None:
            invalid = equal
        else:
            invalid |= equal
    return invalid
