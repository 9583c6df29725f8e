"""The scene command's surface: its options, how it speaks and how it stops.

:mod:`sknd.raster._cli` runs the command; this module holds what a user meets
around it: the options (:func:`parser`), errors as :class:`CommandError` and
warnings as ``python -m sknd.raster: warning: ...`` lines in the options' words
(:func:`as_options`), never Python's file and line; and the stop signals
(``SIGTERM``, ``SIGHUP``, Ctrl-C) turned into exceptions so that an
unfinished map is removed (:func:`stopped_by_signals`).
"""

import argparse
import contextlib
import re
import signal
import sys
import threading
import warnings

from ._matching import POSITIONAL
from ._stack import add_scene_arguments

__all__ = []


class CommandError(Exception):
    """An error the command reports in one line, with exit code 2."""


def parser():
    """The command's options.

    Returns
    -------
    argparse.ArgumentParser
        The parser of ``python -m sknd.raster``'s arguments.
    """
    parser = argparse.ArgumentParser(
        prog="python -m sknd.raster",
        description="Apply a fitted model to a GeoTIFF (or any raster GDAL reads) and write the "
        "map as a GeoTIFF with the scene's CRS and transform. The model is an sknd model file "
        "(estimator.save_model), or a joblib pickle with --trust-pickle.",
    )
    parser.add_argument(
        "model", help="sknd model file (estimator.save_model), or a pickle with --trust-pickle"
    )
    parser.add_argument(
        "scene",
        nargs="?",
        help="input raster (one band per model input), or a STAC Item (.json) whose data "
        "assets with eo:bands are stacked; left out with --band",
    )
    parser.add_argument("output", help="output GeoTIFF (.tif or .tiff)")
    what = parser.add_mutually_exclusive_group()
    what.add_argument(
        "--proba", action="store_true", help="write class probabilities (one band per class)"
    )
    what.add_argument(
        "--indices", action="store_true", help="write the transform (e.g. learned indices)"
    )
    parser.add_argument(
        "--nodata",
        type=float,
        default=None,
        help="input no-data value, of the values as stored (default: the file's, or the "
        "Item's raster:bands nodata)",
    )
    parser.add_argument(
        "--fill-value",
        type=float,
        default=None,
        help="output value of no-data pixels (default: NaN; for class codes 255 up to 255 "
        "classes, outside the codes)",
    )
    names = parser.add_mutually_exclusive_group()
    names.add_argument(
        "--bands",
        default=None,
        help="comma-separated names of the scene's bands, in order, or 'positional' to take "
        "them in order as the model's bands (a scene without band descriptions needs one)",
    )
    names.add_argument("--positional", action="store_true", help="the same as --bands positional")
    parser.add_argument("--sensor", default=None, help="sensor preset of the scene's band names")
    parser.add_argument("--block-rows", type=int, default=None, help="rows per strip")
    parser.add_argument(
        "--n-jobs", type=int, default=None, help="threads predicting a strip (-1: all cores)"
    )
    add_output_arguments(parser)
    add_scene_arguments(parser)
    parser.add_argument(
        "--trust-pickle",
        action="store_true",
        help="load a model pickled with joblib.dump (loading a pickle runs the code it holds)",
    )
    return parser


def add_output_arguments(parser):
    """How the map is written and what the command says while writing it."""
    parser.add_argument("--compress", default=None, help="GeoTIFF compression (default: input's)")
    parser.add_argument(
        "--cog", action="store_true", help="write a Cloud Optimized GeoTIFF (GDAL's COG driver)"
    )
    parser.add_argument(
        "--colors",
        default=None,
        metavar="CLASS=COLOUR,...|FILE",
        help="class colours of a class map's palette: CLASS=#rrggbb (or a colour name) pairs, "
        "or a colour-table file as QGIS exports it or GDAL reads it ('value R G B [A] "
        "[label]' lines); other classes keep the default colours",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    talk = parser.add_mutually_exclusive_group()
    talk.add_argument(
        "--quiet",
        action="store_true",
        help="print errors only (no warning, no summary, no progress bar)",
    )
    talk.add_argument(
        "--verbose",
        action="store_true",
        help="also say which bands of a STAC Item or --band files are not read (unused)",
    )


class Stopped(BaseException):
    """SIGTERM or SIGHUP (a timeout, a job scheduler, ``docker stop``, a closed terminal)."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


class _Signals:
    """The stop signals received: raised as :class:`Stopped` (Ctrl-C: ``KeyboardInterrupt``).

    A signal that arrives while a finalizer (``__del__``) runs raises there,
    where Python ignores the exception: :meth:`check`, called between strips
    and before the map is renamed into place, raises it again.
    """

    def __init__(self):
        self.received = None

    def handle(self, signum, frame):
        self.received = signum
        self.check()

    def check(self):
        if self.received == signal.SIGINT:
            raise KeyboardInterrupt
        if self.received is not None:
            raise Stopped(self.received)


@contextlib.contextmanager
def stopped_by_signals():
    """Turn SIGTERM and SIGHUP into :class:`Stopped`, so that a cut map is removed.

    Their default action ends the process at once, leaving a partial GeoTIFF
    that opens as a valid map. Only the main thread can set handlers (the
    command called from another thread keeps the defaults).
    """
    signals = _Signals()
    if threading.current_thread() is not threading.main_thread():
        yield signals
        return
    previous = {}
    for name in ("SIGTERM", "SIGHUP", "SIGINT"):
        signum = getattr(signal, name, None)  # no SIGHUP on Windows
        if signum is not None and signal.getsignal(signum) is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, signals.handle)
    hook = sys.unraisablehook

    def quiet(unraisable):  # a stop raised inside a finalizer: check() raises it again
        if not issubclass(unraisable.exc_type, (Stopped, KeyboardInterrupt)):
            hook(unraisable)

    sys.unraisablehook = quiet
    try:
        yield signals
    finally:
        sys.unraisablehook = hook
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def say(line, kind=""):
    """Print one of the command's own lines on standard error.

    Parameters
    ----------
    line : str
        What the command says.
    kind : str, default=""
        A prefix such as ``"warning: "``.
    """
    print(f"python -m sknd.raster: {kind}{line}", file=sys.stderr)


@contextlib.contextmanager
def command_warnings(quiet):
    """Warnings as the command's own ``warning: ...`` lines (none with ``--quiet``), not
    Python's, which name a module and a source line the user never wrote."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore" if quiet else "always")
        warnings.showwarning = lambda message, *_, **__: say(as_options(message), "warning: ")
        yield


def as_options(message):
    """A message said of the Python arguments, with the command's options named instead."""
    message = str(message).replace(f"bands={POSITIONAL!r}", f"--bands {POSITIONAL}")
    message = message.replace("bands=[...]", "--bands B1,B2,...")
    message = re.sub(r"\bbands= ?", "--bands ", message).replace("(a GeoTIFF: ", "(or ")
    return message.replace("sensor=", "--sensor ").replace("--sensor )", "--sensor)")
