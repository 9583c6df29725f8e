"""``python -m sknd.raster MODEL.sknd SCENE.tif OUT.tif``: see :mod:`sknd.raster._cli`."""

import os
import sys

from ._cli import main


def _exit(code):
    """End the process with ``code`` as soon as the command is done.

    The map is in place (or removed) when :func:`~sknd.raster._cli.main` returns; the
    interpreter's teardown that would follow (noticeable once torch is loaded:
    benchmarks/RESULTS.md, "Figures moved out of the code") only frees memory, and a stop
    signal during it (a job scheduler's, ``timeout``'s) would report a finished command
    as killed. The streams are flushed first.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    _exit(main())
