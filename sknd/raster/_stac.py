"""Scenes as users get them: a STAC Item, or one file per band, stacked on one grid.

Sentinel-2 and Landsat products and STAC catalogues give each band as its
own file (10 m and 20 m bands for Sentinel-2). :func:`open_scene` stacks
them, for the scene command, as a GDAL virtual raster (VRT): one band per
file band, named after it (the Item's ``eo:bands`` names, or the ``NAME`` of
``--band NAME=PATH``), on the finest of their grids, the coarser bands
resampled with a stated method as GDAL reads them. Nothing is copied: the
command reads the VRT strip by strip as it reads any scene. The files must
share a CRS and be north-up.
"""

import json
import os
from xml.sax.saxutils import escape

import numpy as np

__all__ = []

#: GDAL resampling methods of a VRT source (``--resampling``).
RESAMPLING = ("nearest", "bilinear", "cubic", "cubicspline", "lanczos", "average", "mode")

_GDAL_TYPES = {
    "uint8": "Byte",
    "int8": "Int8",
    "uint16": "UInt16",
    "int16": "Int16",
    "uint32": "UInt32",
    "int32": "Int32",
    "float32": "Float32",
    "float64": "Float64",
}


def add_scene_arguments(parser):
    """The command's options for scenes given as an Item or per-band files."""
    parser.add_argument(
        "--band",
        action="append",
        default=None,
        metavar="NAME=PATH",
        help="a single-band file holding the band NAME (repeat for each band; the scene "
        "argument is then left out): the bands are stacked on the finest grid",
    )
    parser.add_argument(
        "--resampling",
        choices=RESAMPLING,
        default="nearest",
        help="how coarser bands of a STAC Item or --band files are resampled onto the finest "
        "grid (default: nearest)",
    )


def open_scene(scene, band_options, resampling, rasterio):
    """The scene as an open rasterio dataset: a raster file, a STAC Item or ``--band`` files.

    Raises ``ValueError`` with what is wrong (and nothing opened).
    """
    if band_options:
        if scene is not None:
            raise ValueError(
                f"give the scene as one file ({scene!r}) or as --band NAME=PATH files, not both"
            )
        sources = _band_files(band_options)
    elif scene is None:
        raise ValueError("no scene: give a raster file, a STAC Item (.json) or --band NAME=PATH")
    elif scene.lower().endswith(".json"):
        sources = item_bands(scene)
    else:
        return _open(scene, rasterio)
    return _open(stack_vrt(sources, resampling, rasterio), rasterio, what="the stacked bands")


def _open(path, rasterio, what=None):
    try:
        return rasterio.open(path)
    except (rasterio.errors.RasterioError, OSError) as exc:
        raise ValueError(f"cannot read {what or 'the scene ' + repr(path)}: {exc}") from None


def _band_files(options):
    """``[(name, path, 1)]`` from ``--band NAME=PATH`` options."""
    sources = []
    for option in options:
        name, sep, path = option.partition("=")
        if not sep or not name.strip() or not path:
            raise ValueError(f"--band {option!r} is not NAME=PATH (e.g. --band B04=B04.tif)")
        sources.append((name.strip(), path, 1))
    _check_unique(sources, "--band")
    return sources


def _check_unique(sources, where):
    names = [name for name, _, _ in sources]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"{where} names the bands {duplicates} more than once: each band once")


def item_bands(path):
    """``[(name, href, band number)]`` of the assets of a STAC Item with ``eo:bands``.

    STAC 1.0 lists an asset's bands in ``eo:bands``, STAC 1.1 in ``bands``;
    each band is named by its ``name``, else its common name. Relative hrefs
    are read from the Item's folder.
    """
    try:
        with open(path, encoding="utf-8") as file:
            item = json.load(file)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read the STAC Item {path!r}: {exc}") from None
    if not isinstance(item, dict) or item.get("type") != "Feature" or "assets" not in item:
        raise ValueError(f"{path!r} is not a STAC Item (a GeoJSON Feature with assets)")
    folder = os.path.dirname(os.path.abspath(path))
    sources = []
    for key, asset in item["assets"].items():
        entries = asset.get("eo:bands") or asset.get("bands")
        if not entries or "href" not in asset:
            continue
        href = asset["href"]
        if href.startswith("file://"):
            href = href[len("file://") :]
        if "://" not in href and not os.path.isabs(href):
            href = os.path.join(folder, href)
        for number, entry in enumerate(entries, start=1):
            name = entry.get("name") or entry.get("common_name") or entry.get("eo:common_name")
            sources.append((str(name or key), href, number))
    if not sources:
        raise ValueError(
            f"the STAC Item {path!r} has no asset with eo:bands (or bands): the band names "
            "are unknown. Give the bands as --band NAME=PATH instead."
        )
    _check_unique(sources, "the STAC Item")
    return sources


def stack_vrt(sources, resampling, rasterio):
    """The VRT (XML text) of ``sources`` on the finest of their grids."""
    grids = {}
    for _, path, _ in sources:
        if path not in grids:
            with _open(path, rasterio, what=repr(path)) as src:
                grids[path] = (
                    src.crs,
                    src.transform,
                    src.width,
                    src.height,
                    src.dtypes,
                    src.nodatavals,
                )
    crs = {str(grid[0]) for grid in grids.values()}
    if len(crs) > 1:
        raise ValueError(
            f"the band files lie on different CRSs ({sorted(crs)}): reproject them onto one "
            "grid first (e.g. gdalwarp -t_srs ... -tr ...)"
        )
    for path, (_, transform, *_) in grids.items():
        if transform.b != 0 or transform.d != 0 or transform.e >= 0:
            raise ValueError(f"{path!r} is not north-up (its transform is rotated or flipped)")
    finest = min(grids, key=lambda path: abs(grids[path][1].a * grids[path][1].e))
    crs, transform, width, height, _, _ = grids[finest]
    dtypes = [grids[path][4][number - 1] for _, path, number in sources]
    dtype = np.result_type(*dtypes).name
    bands = []
    for k, (name, path, number) in enumerate(sources, start=1):
        src_crs, src_transform, src_width, src_height, _, nodata = grids[path]
        x = (src_transform.c - transform.c) / transform.a
        y = (src_transform.f - transform.f) / transform.e
        x_size = src_width * src_transform.a / transform.a
        y_size = src_height * src_transform.e / transform.e
        fill = nodata[number - 1]
        filename = os.path.abspath(path) if "://" not in path else path
        bands.append(
            f'  <VRTRasterBand dataType="{_GDAL_TYPES[dtype]}" band="{k}">\n'
            f"    <Description>{escape(name)}</Description>\n"
            + (f"    <NoDataValue>{fill!r}</NoDataValue>\n" if fill is not None else "")
            + f'    <ComplexSource resampling="{resampling}">\n'
            f'      <SourceFilename relativeToVRT="0">{escape(filename)}</SourceFilename>\n'
            f"      <SourceBand>{number}</SourceBand>\n"
            f'      <SrcRect xOff="0" yOff="0" xSize="{src_width}" ySize="{src_height}"/>\n'
            f'      <DstRect xOff="{x!r}" yOff="{y!r}" xSize="{x_size!r}" ySize="{y_size!r}"/>\n'
            + (f"      <NODATA>{fill!r}</NODATA>\n" if fill is not None else "")
            + "    </ComplexSource>\n  </VRTRasterBand>\n"
        )
    geotransform = ", ".join(repr(v) for v in transform.to_gdal())
    return (
        f'<VRTDataset rasterXSize="{width}" rasterYSize="{height}">\n'
        f"  <SRS>{escape(crs.to_wkt()) if crs else ''}</SRS>\n"
        f"  <GeoTransform>{geotransform}</GeoTransform>\n" + "".join(bands) + "</VRTDataset>\n"
    )
