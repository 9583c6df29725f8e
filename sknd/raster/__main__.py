"""``python -m sknd.raster MODEL.sknd SCENE.tif OUT.tif``: see :mod:`sknd.raster._cli`."""

from ._cli import main

if __name__ == "__main__":
    raise SystemExit(main())
