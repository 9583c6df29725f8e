"""Scenes read band by band: a STAC Item or ``--band`` files stacked on one grid, in values.

Sentinel-2 and Landsat products and STAC catalogues give each band as its
own file (10 m and 20 m bands for Sentinel-2). :func:`open_scene` stacks
them, for the scene command, as a GDAL virtual raster (VRT): one band per
source, named after it (the Item's band names, see :mod:`sknd.raster._stac`,
or the ``NAME`` of ``--band NAME=PATH``), on the finest of their grids, the
coarser bands resampled with a stated method as GDAL reads them. Nothing is
copied: the command reads the VRT strip by strip as it reads any scene. The
files must share a CRS and be north-up.

Each source carries its scale, offset and no-data value (an Item's
``raster:bands``, a file's GDAL band scales and offsets and nodata): the VRT
reads ``value * scale + offset`` (unless ``--no-rescale``), and NaN where a
source is no-data or has no pixel at all (a band that covers less than the
finest grid), so that those pixels are no-data for the model. The stacked
bands are float32 where that holds every source value exactly (8- and
16-bit integers, float32), else float64. A single file whose bands carry
GDAL scales or offsets is read through such a VRT too.
"""

import os
import re
from typing import NamedTuple
from xml.sax.saxutils import escape

import numpy as np

from ._checks import check_image_dtype

__all__ = []

#: GDAL resampling methods of a VRT source (``--resampling``).
RESAMPLING = ("nearest", "bilinear", "cubic", "cubicspline", "lanczos", "average", "mode")

# Source types whose every value float32 holds exactly.
_FLOAT32_EXACT = ("uint8", "int8", "uint16", "int16", "float32")


class Source(NamedTuple):
    """One band of the stack: ``band`` of the file ``path``, named ``name``.

    ``scale`` and ``offset`` turn its stored values into the values the model
    reads (None: the file's GDAL band scale and offset); ``nodata`` is its
    no-data value (None: the file's); ``common_name`` what the metadata (an
    Item's ``eo:bands``) say the band is.
    """

    name: str
    path: str
    band: int = 1
    scale: float = None
    offset: float = None
    nodata: float = None
    explicit_band: bool = True
    common_name: str = None


class _Grid(NamedTuple):
    """What the stack needs of a file: its grid and, per band, dtype, nodata, scale, offset."""

    crs: object
    transform: object
    width: int
    height: int
    dtypes: tuple
    nodatavals: tuple
    scales: tuple
    offsets: tuple


def add_scene_arguments(parser):
    """The command's options for scenes given as an Item or per-band files."""
    parser.add_argument(
        "--band",
        action="append",
        default=None,
        metavar="NAME=PATH[:N]",
        help="a file holding the band NAME (repeat for each band; the scene argument is then "
        "left out): single-band, or :N names its band N; the bands are stacked on the finest "
        "grid",
    )
    parser.add_argument(
        "--resampling",
        choices=RESAMPLING,
        default="nearest",
        help="how coarser bands of a STAC Item or --band files are resampled onto the finest "
        "grid (default: nearest)",
    )
    parser.add_argument(
        "--no-rescale",
        action="store_true",
        help="read the stored values (digital numbers) as they are, without the scale and "
        "offset an Item's raster:bands or the file's bands declare (for a model fitted on "
        "them); by default the model reads value * scale + offset",
    )


def open_scene(scene, sources, *, resampling, rescale, nodata, rasterio):
    """``(dataset, stacked)``: the scene open with rasterio, and whether it is a stack (a VRT).

    ``sources`` (None: the file ``scene``) are stacked. A single file whose
    bands declare a scale or an offset is read through a VRT applying them
    when ``rescale``. A stack reads no-data as NaN, ``nodata`` (``--nodata``)
    replacing the sources' own no-data values. Raises ``ValueError`` with
    what is wrong.
    """
    if sources is None:
        src = _open(scene, rasterio)
        try:
            check_dtypes(src.dtypes)
        except ValueError:
            src.close()
            raise
        if not rescale or _identity(src.scales, src.offsets):
            return src, False
        with src:
            sources = [
                Source(description or "", scene, k, scale, offset)
                for k, (description, scale, offset) in enumerate(
                    zip(src.descriptions, src.scales, src.offsets), start=1
                )
            ]
    vrt = stack_vrt(sources, resampling, rasterio, rescale=rescale, nodata=nodata)
    return _open(vrt, rasterio, what="the stacked bands"), True


def _identity(scales, offsets):
    return all(s == 1 for s in scales) and all(o == 0 for o in offsets)


def _open(path, rasterio, what=None):
    try:
        return rasterio.open(path)
    except (rasterio.errors.RasterioError, OSError) as exc:
        raise ValueError(f"cannot read {what or 'the scene ' + repr(path)}: {exc}") from None


def band_sources(options):
    """Sources from ``--band NAME=PATH`` (or ``NAME=PATH:N``, band N of the file) options."""
    sources = []
    for option in options:
        name, sep, path = option.partition("=")
        if not sep or not name.strip() or not path:
            raise ValueError(f"--band {option!r} is not NAME=PATH (e.g. --band B04=B04.tif)")
        match = re.fullmatch(r"(.+):(\d+)", path)
        band, explicit = 1, False
        if match is not None and not os.path.exists(path):
            path, band, explicit = match.group(1), int(match.group(2)), True
            if band < 1:
                raise ValueError(f"--band {option!r}: bands are numbered from 1")
        sources.append(Source(name.strip(), path, band, explicit_band=explicit))
    check_unique(sources, "--band")
    return sources


def check_unique(sources, where):
    names = [source.name for source in sources]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"{where} names the bands {duplicates} more than once: each band once")


def _grids(sources, rasterio):
    """Each file's grid, dtypes and nodata; its band count checked against the sources."""
    grids = {}
    for source in sources:
        if source.path not in grids:
            with _open(source.path, rasterio, what=repr(source.path)) as src:
                grids[source.path] = _Grid(
                    src.crs,
                    src.transform,
                    src.width,
                    src.height,
                    src.dtypes,
                    src.nodatavals,
                    src.scales,
                    src.offsets,
                )
        count = len(grids[source.path].dtypes)
        if source.band > count:
            raise ValueError(
                f"{source.path!r} has {count} band(s), not a band {source.band} ({source.name})"
            )
        if count > 1 and not source.explicit_band:
            raise ValueError(
                f"--band {source.name}={source.path}: the file has {count} bands; name the "
                f"one that holds {source.name} as --band {source.name}={source.path}:N"
            )
    return grids


def _check_grids(grids):
    crs = {str(grid.crs) for grid in grids.values()}
    if len(crs) > 1:
        raise ValueError(
            f"the band files lie on different CRSs ({sorted(crs)}): reproject them onto one "
            "grid first (e.g. gdalwarp -t_srs ... -tr ...)"
        )
    for path, grid in grids.items():
        transform = grid.transform
        if transform.b != 0 or transform.d != 0 or transform.e >= 0:
            raise ValueError(f"{path!r} is not north-up (its transform is rotated or flipped)")


def check_dtypes(dtypes):
    """Refuse bands that are no real numbers (complex: the imaginary part would be dropped)."""
    for name in dict.fromkeys(dtypes):
        try:
            dtype = np.dtype(name)
        except TypeError:  # GDAL's complex integers ("complex_int16") have no numpy dtype
            dtype = np.dtype(np.complex128) if "complex" in name else np.dtype(object)
        try:
            check_image_dtype(dtype)
        except TypeError as exc:
            message = str(exc).replace("image must hold", "the scene's bands must hold")
            raise ValueError(message.replace(f"dtype {dtype}", f"dtype {name}")) from None


def stack_dtype(dtypes):
    """The stack's dtype: float32 where it holds every source value exactly, else float64."""
    check_dtypes(dtypes)
    return "Float32" if all(dtype in _FLOAT32_EXACT for dtype in dtypes) else "Float64"


def stack_vrt(sources, resampling, rasterio, *, rescale=True, nodata=None):
    """The VRT (XML text) of ``sources`` on the finest of their grids.

    Each band reads ``value * scale + offset`` (``value`` as stored when not
    ``rescale``; the source's scale and offset, else the file's), NaN where its
    source is no-data (``nodata``, else the source's, else the file's) or has
    no pixel. Resampled other than by ``nearest``, a source's no-data pixels
    are masked before: GDAL reads the file with that no-data value
    (``vrt://...?a_nodata=``), interpolates valid pixels only, and a pixel
    whose kernel holds no valid one is no-data.
    """
    grids = _grids(sources, rasterio)
    _check_grids(grids)
    finest = min(grids, key=lambda path: abs(grids[path].transform.a * grids[path].transform.e))
    transform, width, height = grids[finest].transform, grids[finest].width, grids[finest].height
    data_type = stack_dtype([grids[s.path].dtypes[s.band - 1] for s in sources])
    bands = []
    for k, source in enumerate(sources, start=1):
        grid = grids[source.path]
        fill = nodata
        if fill is None:
            fill = source.nodata if source.nodata is not None else grid.nodatavals[source.band - 1]
        src_transform = grid.transform
        x = (src_transform.c - transform.c) / transform.a
        y = (src_transform.f - transform.f) / transform.e
        x_size = grid.width * src_transform.a / transform.a
        y_size = grid.height * src_transform.e / transform.e
        scale = grid.scales[source.band - 1] if source.scale is None else source.scale
        offset = grid.offsets[source.band - 1] if source.offset is None else source.offset
        scaling = ""
        if rescale and (scale != 1 or offset != 0):
            scaling = (
                f"      <ScaleOffset>{float(offset)!r}</ScaleOffset>\n"
                f"      <ScaleRatio>{float(scale)!r}</ScaleRatio>\n"
            )
        filename = _source_filename(source.path, fill, resampling)
        bands.append(
            f'  <VRTRasterBand dataType="{data_type}" band="{k}">\n'
            f"    <Description>{escape(source.name)}</Description>\n"
            "    <NoDataValue>nan</NoDataValue>\n"
            f'    <ComplexSource resampling="{resampling}">\n'
            f'      <SourceFilename relativeToVRT="0">{escape(filename)}</SourceFilename>\n'
            f"      <SourceBand>{source.band}</SourceBand>\n"
            f'      <SrcRect xOff="0" yOff="0" xSize="{grid.width}" ySize="{grid.height}"/>\n'
            f'      <DstRect xOff="{x!r}" yOff="{y!r}" xSize="{x_size!r}" ySize="{y_size!r}"/>\n'
            + (f"      <NODATA>{float(fill)!r}</NODATA>\n" if fill is not None else "")
            + scaling
            + "    </ComplexSource>\n  </VRTRasterBand>\n"
        )
    geotransform = ", ".join(repr(v) for v in transform.to_gdal())
    crs = grids[finest].crs
    return (
        f'<VRTDataset rasterXSize="{width}" rasterYSize="{height}">\n'
        f"  <SRS>{escape(crs.to_wkt()) if crs else ''}</SRS>\n"
        f"  <GeoTransform>{geotransform}</GeoTransform>\n" + "".join(bands) + "</VRTDataset>\n"
    )


def _source_filename(path, fill, resampling):
    """The file a VRT source reads: a local file with a no-data value that is resampled
    other than by nearest through ``vrt://`` with that value, so that GDAL masks it."""
    if "://" in path:
        return path
    path = os.path.abspath(path)
    if resampling == "nearest" or fill is None:
        return path
    return f"vrt://{path}?a_nodata={float(fill)!r}"
