"""``python -m sknd.raster MODEL.sknd SCENE.tif OUT.tif``: a saved model applied to a scene.

The model is an sknd model file (``estimator.save_model``, read by
:func:`sknd.load_model` without running code, torch or scikit-learn), or any
fitted scikit-learn estimator pickled with joblib when the user passes
``--trust-pickle`` (unpickling runs whatever code the file holds).

The scene is a raster file, a STAC Item or one file per band, values stored
with a scale and an offset read as ``value * scale + offset`` unless
``--no-rescale`` (:mod:`sknd.raster._stack`, :mod:`sknd.raster._stac`).

The scene is read and the map written strip by strip (whole rows of the
file's tiles), so memory stays bounded whatever the scene's size: a reader
thread fetches the next strip and a writer thread writes the previous one
while the model predicts the current one (GDAL releases the GIL while it
reads, decodes and writes). The output GeoTIFF has the scene's CRS and
transform, one band per output (the class map; the class probabilities with
``--proba``; the learned indices with ``--indices``) named after what it holds,
and the fill value as its nodata. A class map holds class codes (positions in
``classes_``) with a colour table, GDAL category names (in the ``.aux.xml``
side-car) and the code table in its tags; ``--cog`` writes a Cloud Optimized
GeoTIFF.

The map is written to a temporary file beside OUT and renamed over it only
when complete (:class:`sknd.raster._geotiff.StagedMap`): a run that fails or is stopped
leaves OUT as it was. On success the command prints one line on stderr saying
what it wrote (``--quiet`` silences it and the progress bar).

Exit codes: 0 on success, 2 on a usage error, an unreadable file, a model
that is not a fitted scikit-learn estimator, bands that do not match the
model's, or an output that is no GeoTIFF name or is one of the inputs (the
message says which); 130 on Ctrl-C, 143 on SIGTERM and 129 on SIGHUP, also
when the signal arrives while a finalizer runs, with no map written.
"""

import contextlib
import os
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._inference._pixels import apply_pixels, prepare
from .._model_file import SavedModel, load_model
from ..bands import Band
from ._categorical import CodeTable, adjust_output
from ._checks import band_nodata, check_n_jobs
from ._colors import command_colors
from ._command import (
    CommandError,
    Stopped,
    as_options,
    command_warnings,
    parser,
    say,
    stopped_by_signals,
)
from ._geotiff import StagedMap, check_compression, finish_class_map
from ._matching import POSITIONAL, band_columns
from ._output import check_output
from ._stac import scene_files, scene_sources
from ._stack import open_scene

__all__ = []

# Pixels per strip when --block-rows is not given: large enough that per-strip
# overhead vanishes, small enough that two strips of a 10-band float scene stay
# in the hundreds of megabytes.
_STRIP_PIXELS = 4_000_000
_GDAL_CACHE_BYTES = 64 * 2**20
# Scenes from this many pixels use numba's compiled kernels (sknd._nd._kernels) for sknd models:
# their start-up in a fresh process (time and memory: benchmarks/RESULTS.md, "The scene
# command") costs more than they save on a smaller scene, which numpy evaluates in tens of
# milliseconds.
_COMPILED_MIN_PIXELS = 2**22
_METHODS = {"class": "predict", "proba": "predict_proba", "indices": "transform"}


def main(argv=None):
    """Run the command; return its exit code.

    2 on a usage error (one line on stderr); 130 on Ctrl-C and 128 + the
    signal's number on SIGTERM or SIGHUP, with one line and the unfinished
    map removed.
    """
    args = parser().parse_args(argv)
    start = time.perf_counter()
    try:
        with stopped_by_signals() as signals, command_warnings(args.quiet):
            summary = _run(args, signals)
    except CommandError as exc:
        print(f"python -m sknd.raster: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("python -m sknd.raster: interrupted; no map written.", file=sys.stderr)
        return 128 + signal.SIGINT
    except Stopped as exc:
        name = signal.Signals(exc.signum).name
        print(f"python -m sknd.raster: stopped by {name}; no map written.", file=sys.stderr)
        return 128 + exc.signum
    if not args.quiet:
        elapsed = time.perf_counter() - start
        print(f"python -m sknd.raster: wrote {summary} in {elapsed:.1f} s.", file=sys.stderr)
    return 0


def _run(args, signals):
    try:
        import rasterio
    except ImportError as exc:
        raise CommandError(
            "the command needs rasterio: pip install rasterio "
            "(or, in the sknd checkout, pip install -e '.[geo]')"
        ) from exc
    # Every block is read and written once, strip by strip: GDAL's block cache (5 % of the
    # RAM by default) would only hold finished blocks. A user's GDAL_CACHEMAX wins.
    options = {} if "GDAL_CACHEMAX" in os.environ else {"GDAL_CACHEMAX": _GDAL_CACHE_BYTES}
    with rasterio.Env(**options):
        return _run_in_env(args, rasterio, signals)


def _run_in_env(args, rasterio, signals):
    """Write the map; return what was written, in words."""
    what = "proba" if args.proba else "indices" if args.indices else "class"
    method = _METHODS[what]
    try:
        bands = scene_sources(args.scene, args.band)
        files = scene_files(args.scene, bands, rasterio)
        check_output(args.output, {"model": args.model, **files})
        check_compression(args.compress, "--compress ")
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    model = _load_model(args.model, method, args.trust_pickle)
    sources = None if bands is None else _needed_sources(bands, model, args)
    try:
        src, stacked = open_scene(
            args.scene,
            sources,
            resampling=args.resampling,
            rescale=not args.no_rescale,
            nodata=args.nodata,
            rasterio=rasterio,
        )
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    with src:
        # A scene given band by band stacks the model's bands, in its order.
        columns = _scene_columns(src, model, args) if sources is None else None
        n_inputs = src.count if columns is None else len(columns)
        # A stacked scene (a VRT) reads its sources' no-data, --nodata included, as NaN.
        nodata = _scene_nodata(src, None if stacked else args.nodata, columns)
        compiled = src.width * src.height >= _COMPILED_MIN_PIXELS
        func, spec, table = _pixel_function(
            model, method, n_inputs, src.dtypes, args.fill_value, compiled
        )
        colors = _class_colors(args.colors, table)
        profile = _output_profile(src, spec, args.compress)
        with StagedMap(args.output, cog=args.cog) as staged:
            try:
                dst = staged.open(rasterio, profile)
            except (rasterio.errors.RasterioError, OSError) as exc:
                raise CommandError(f"cannot write {args.output!r}: {exc}") from None
            with dst:
                _describe(dst, model, method, spec, table, colors)
                _process(
                    src,
                    dst,
                    func,
                    spec,
                    args,
                    nodata=nodata,
                    columns=columns,
                    rescaled=stacked and not args.no_rescale,
                    signals=signals,
                )
            _commit(staged, args, table, profile, rasterio, signals)
    return _summary(args, profile, table)


def _needed_sources(bands, model, args):
    """The sources of the model's bands, in its order: matched by what the Item says of
    them (common names, its platform) before any file is opened, so that an asset the
    model does not read is never opened (``--verbose`` lists them)."""
    described = [
        Band(source.name, source.common_name) if source.common_name else source.name
        for source in bands.sources
    ]
    sensor = args.sensor or bands.sensor
    columns = _columns(model, described, len(described), args, sensor)
    order = range(len(bands.sources)) if columns is None else columns
    needed = [bands.sources[k] for k in order]
    if args.verbose:
        for source in bands.sources:
            if source not in needed:
                missing = "://" not in source.path and not os.path.exists(source.path)
                state = ", a file that does not exist" if missing else ""
                say(f"not read: band {source.name} ({source.path}{state}), unused by the model")
    return needed


def _scene_columns(src, model, args):
    """The scene's bands the model reads, in its order (None: all, as they are)."""
    descriptions = list(src.descriptions)
    names = descriptions if all(descriptions) else None
    return _columns(model, names, src.count, args, args.sensor)


def _columns(model, names, n_bands, args, sensor):
    """:func:`~sknd.raster._matching.band_columns` with the options' names in its errors."""
    bands = _split(args.bands)
    if args.positional or bands == [POSITIONAL]:
        bands = POSITIONAL
    try:
        return band_columns(model, names, n_bands, bands=bands, sensor=sensor)
    except (ValueError, TypeError) as exc:
        raise CommandError(as_options(exc)) from None


def _commit(staged, args, table, profile, rasterio, signals):
    """The finished map renamed over the output (a COG first with ``--cog``)."""
    try:
        staged.commit(
            labels=None if table is None else table.labels,
            compress=profile.get("compress"),
            before_replace=signals.check,
        )
    except (rasterio.errors.RasterioError, OSError) as exc:
        how = " as a COG" if args.cog else ""
        raise CommandError(f"cannot write {args.output!r}{how}: {exc}") from None


def _summary(args, profile, table):
    """What was written, e.g. ``out.tif (300 x 200 pixels, class map of 3 classes, uint8)``."""
    count = profile["count"]
    if table is not None:
        what = f"class map of {len(table.labels)} classes"
    elif args.proba:
        what = f"{count} class probability band{'s' * (count != 1)}"
    elif args.indices:
        what = f"{count} index band{'s' * (count != 1)}"
    else:
        what = f"{count} prediction band{'s' * (count != 1)}"
    cog = ", COG" if args.cog else ""
    size = f"{profile['width']} x {profile['height']} pixels"
    return f"{args.output} ({size}, {what}, {profile['dtype']}{cog})"


def _scene_nodata(src, nodata, columns):
    """The no-data value of the bands read: ``--nodata``, else the file's."""
    if nodata is None:
        # The file's no-data values are per band: only the bands read (columns) count.
        return band_nodata(
            list(src.nodatavals) if columns is None else [src.nodatavals[c] for c in columns]
        )
    return None if np.isnan(nodata) else nodata  # NaN is no-data anyway


def _split(text):
    return None if text is None else [name.strip() for name in text.split(",")]


def _load_model(path, method, trust_pickle):
    """A model file (:func:`sknd.load_model`), or a pickle when the user trusts it."""
    try:
        with open(path, "rb") as file:
            magic = file.read(4)
    except OSError as exc:
        raise CommandError(f"cannot read the model {path!r}: {exc}") from None
    # A zip archive, as model files are, or a STAC MLM Item describing one: no code runs.
    if magic == b"PK\x03\x04" or magic.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"{":
        try:
            model = load_model(path)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if not hasattr(model, method):
            hint = ""
            if method == "transform":  # --indices
                hint = (
                    " A model file keeps the network of a classifier or regressor, not its "
                    "indices apart: pass the pickled estimator (--trust-pickle), whose "
                    "transform gives them, or save an NDTransformer."
                )
            raise CommandError(f"the {model.estimator} in {path!r} has no method {method}.{hint}")
        return model
    if not trust_pickle:
        raise CommandError(
            f"{path!r} is not an sknd model file; loading it as a pickle (joblib) would run "
            "any code it holds. Pass --trust-pickle if you trust its source, or save the model "
            "with estimator.save_model(path)."
        )
    return _load_pickle(path, method)


def _load_pickle(path, method):
    import joblib
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    try:
        model = joblib.load(path)
    except Exception as exc:  # unpickling raises anything
        raise CommandError(f"cannot load the model {path!r}: {exc}") from None
    if not (hasattr(model, "fit") and hasattr(model, "get_params")):
        raise CommandError(
            f"{path!r} holds a {type(model).__name__}, not a scikit-learn estimator."
        )
    try:
        check_is_fitted(model)
    except NotFittedError:
        raise CommandError(f"the model in {path!r} is not fitted.") from None
    if not hasattr(model, method):
        raise CommandError(f"{type(model).__name__} has no method {method}.")
    return model


def _pixel_function(model, method, n_inputs, dtypes, fill_value, compiled):
    """The pixel function, its output layout as written, and the code table of a class map.

    ``compiled=False`` evaluates an sknd model with numpy only (a small scene).

    Float outputs are written as float32 with NaN (or ``fill_value``) for
    no-data; a classifier's labels as their codes (positions in
    ``classes_``, see :mod:`sknd.raster._categorical`) with a fill outside
    them (255 in uint8 up to 255 classes); other integer predictions as the
    smallest integer type holding them and the fill (-1 by default).
    """
    dtype = np.dtype(dtypes[0])
    if method != "predict":
        fill = None if fill_value is None else _float32_fill(fill_value)
        func, spec = prepare(method, model, n_inputs, dtype, fill, compiled=compiled)
        spec.dtype = np.dtype(np.float32)
        return func, spec, None
    if fill_value is not None and not float(fill_value).is_integer():
        raise CommandError(f"--fill-value {fill_value} is not an integer, as class codes are.")
    if fill_value is not None and abs(fill_value) >= 2**63:
        raise CommandError(
            f"--fill-value {fill_value:g} is too large for a class map (a GeoTIFF of integers): "
            "pass a value such as 255 or -1."
        )
    classes = getattr(model, "classes_", None)
    if classes is not None and np.ndim(classes) == 1:
        try:
            table = CodeTable(classes, fill_value)
        except (TypeError, ValueError) as exc:
            raise CommandError(str(exc).replace("fill_value=", "--fill-value ")) from None
        prepared = prepare(method, model, n_inputs, dtype, None, compiled=compiled)
        func, spec = adjust_output(*prepared, {"codes": table})
        return func, spec, table
    # A fill of -1 keeps integer labels integer; the probe tells the labels' kind.
    func, spec = prepare(method, model, n_inputs, dtype, -1, compiled=compiled)
    if spec.dtype.kind == "f":
        spec.dtype = np.dtype(np.float32)
        spec.fill = np.nan if fill_value is None else _float32_fill(fill_value)
        return func, spec, None
    if spec.dtype.kind not in "iub":
        raise CommandError(
            f"{type(model).__name__}.predict gives labels a GeoTIFF cannot hold and the "
            "model has no classes_ to number them."
        )
    fill = -1 if fill_value is None else int(fill_value)
    spec.dtype = np.result_type(np.min_scalar_type(fill), spec.dtype, np.int16)
    spec.fill = fill
    return func, spec, None


def _float32_fill(fill):
    """``fill`` as written in a float32 map; a finite value must stay finite."""
    if np.isfinite(fill) and abs(fill) > float(np.finfo(np.float32).max):
        raise CommandError(
            f"--fill-value {fill:g} is beyond the float32 range of the map (about 3.4e38): "
            "pass a smaller value, or leave it out for NaN."
        )
    return fill


def _output_profile(src, spec, compress):
    profile = {
        "driver": "GTiff",
        "width": src.width,
        "height": src.height,
        "count": 1 if spec.n_outputs is None else spec.n_outputs,
        "dtype": spec.dtype.name,
        "crs": src.crs,
        "transform": src.transform,
        "nodata": spec.fill,
    }
    if src.width >= 256 and src.height >= 256:
        profile.update(tiled=True, blockxsize=256, blockysize=256)
    compress = compress if compress is not None else src.profile.get("compress")
    if compress:
        profile["compress"] = compress
    if src.crs is None:
        del profile["crs"]
    return profile


def _class_colors(option, table):
    """The palette ``--colors`` gives (None: the default colours)."""
    if option is None:
        return None
    if table is None:
        raise CommandError("--colors colours the classes of a class map: leave it out here.")
    try:
        return command_colors(option, table.labels)
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def _describe(dst, model, method, spec, table, colors):
    """Band descriptions, colour table and tags saying what the output holds."""
    if spec.n_outputs is not None:
        dst.descriptions = tuple(str(label) for label in spec.output_labels)
    else:
        dst.set_band_description(1, "class" if hasattr(model, "classes_") else method)
    if table is not None:
        finish_class_map(dst, table.labels, colors)
    name = model.estimator if isinstance(model, SavedModel) else type(model).__name__
    dst.update_tags(sknd_model=name, sknd_method=method)


def _strips(src, rows):
    from rasterio.windows import Window

    for top in range(0, src.height, rows):
        yield Window(0, top, src.width, min(rows, src.height - top))


def _process(src, dst, func, spec, args, *, nodata, columns, rescaled, signals):
    """Predict the scene strip by strip; ``rescaled``: the values read are not those stored."""
    block_rows = src.block_shapes[0][0] if src.block_shapes else 1
    rows = args.block_rows
    if rows is None:
        rows = max(block_rows, (_STRIP_PIXELS // max(src.width, 1)) // block_rows * block_rows)
    if rows < 1:
        raise CommandError(f"--block-rows must be positive, got {rows}.")
    try:
        n_jobs = check_n_jobs(args.n_jobs)  # as sknd.raster's n_jobs: -1 means all cores
    except ValueError:
        raise CommandError(
            f"--n-jobs must be a non-zero integer (-1: all cores), got {args.n_jobs}."
        ) from None
    windows = list(_strips(src, rows))
    progress = _progress(src.height, disable=args.no_progress or args.quiet)
    with progress as bar, ThreadPoolExecutor(1) as reader, ThreadPoolExecutor(1) as writer:
        # Only the bands the model uses are read, in the model's order.
        indexes = None if columns is None else [column + 1 for column in columns]
        pending_read = reader.submit(src.read, indexes, window=windows[0])
        pending_write = None
        for index, window in enumerate(windows):
            signals.check()  # a stop a finalizer swallowed
            data = pending_read.result()  # (bands, rows, width)
            if index + 1 < len(windows):
                pending_read = reader.submit(src.read, indexes, window=windows[index + 1])
            out = np.empty(spec.tail + data.shape[1:], dtype=spec.dtype)
            try:
                apply_pixels(
                    np.moveaxis(data, 0, -1),
                    func,
                    spec,
                    out=np.moveaxis(out, 0, -1) if spec.n_outputs is not None else out,
                    chunk_pixels=65_536,
                    nodata=nodata,
                    n_jobs=n_jobs,
                )
            except (ValueError, TypeError) as exc:  # the model refuses these band values
                message = " ".join(str(exc).split())
                if rescaled:  # --nodata takes values as stored: say which
                    message = message.replace(
                        "pass it as nodata=...",
                        "pass its stored value (before the file's or Item's scale and offset: "
                        "(value - offset) / scale) as --nodata",
                    )
                message = message.replace("nodata=...", "--nodata")
                raise CommandError(
                    f"scene rows {window.row_off}-{window.row_off + window.height - 1}: {message}"
                ) from None
            if pending_write is not None:
                _written(pending_write, args, spec)
            if spec.n_outputs is None:
                pending_write = writer.submit(dst.write, out, 1, window=window)
            else:
                pending_write = writer.submit(dst.write, out, window=window)
            bar.update(window.height)
        if pending_write is not None:
            _written(pending_write, args, spec)


def _written(pending, args, spec):
    """Wait for a strip's write; GDAL's refusal (e.g. a compression) as a CommandError."""
    import rasterio

    try:
        pending.result()
    except (rasterio.errors.RasterioError, OSError) as exc:
        reason = exc.__cause__ or exc  # GDAL's own message ("BitsPerSample 32 not allowed")
        hint = ""
        if args.compress:
            hint = (
                f" (--compress {args.compress} on {spec.dtype.name} values: pick a compression "
                "GDAL applies to them, e.g. deflate, lzw or zstd)"
            )
        raise CommandError(f"cannot write {args.output!r}: {reason}{hint}") from None


def _progress(total, disable):
    try:
        from tqdm import tqdm
    except ImportError:
        disable = True
    if disable:
        return contextlib.nullcontext(_NoBar())
    return tqdm(total=total, unit="row", desc="sknd.raster", file=sys.stderr)


class _NoBar:
    def update(self, n):
        pass
