"""A STAC Item's bands as catalogues serve them: which asset holds each band, and its values.

Catalogues give more than one file per band and files that hold no band:
Earth Search keys its Sentinel-2 assets by common name (``blue``, ``nir08``,
``rededge1``) and gives each band twice (a COG and a JPEG 2000 twin,
``blue-jp2``), with a 3-band ``visual`` rendering, thumbnails and metadata;
the Planetary Computer keys them ``B02`` .. ``B12``, ``B8A`` with a
``visual`` asset in the data role; USGS and the Planetary Computer key
Landsat Collection 2 Level-2 bands by common name, named ``SR_B5`` or
``OLI_B5`` in ``eo:bands``. :func:`item_sources` keeps one asset per band:

- only data assets: an asset whose roles (when it has any) are only
  thumbnail, overview, visual or metadata ones, a ``visual`` or ``TCI``
  rendering, or a media type that is no raster (JPEG, PNG, JSON, XML, HTML
  ...) holds no band;
- a band is named by its ``eo:bands`` (STAC 1.0) or ``bands`` (STAC 1.1)
  ``name``, else its common name (STAC 0.9: an index into the Item's
  ``eo:bands``); the names are matched to the model's through the sensor
  presets (``nir08`` is Sentinel-2's B8A, ``rededge1`` its B05, ``SR_B5``
  Landsat's near infrared);
- a band given by several assets is read from a single-band one rather than
  a multi-band one, and from a GeoTIFF / COG rather than a JPEG 2000 twin;
  two equally good assets for one band are an error.

Each band keeps what the Item says of it: its ``common_name`` (what the band
is, whatever its name: Landsat 7's ``SR_B4`` is ``nir``), and of its values
``raster:bands`` (STAC 1.0) ``scale``, ``offset`` and ``nodata``, or STAC
1.1's ``raster:scale``, ``raster:offset`` and ``nodata`` on the band or the
asset (a scale or offset the Item leaves out is the file's). The Item's
``platform`` names its sensor preset (``landsat-9``). Every asset's file is
listed, read or not, so that no output can replace one. Errors are
``ValueError`` in one sentence, naming the asset.
"""

import json
import os
from numbers import Real
from typing import NamedTuple

from ..bands import get_sensor
from ._stack import Source, band_sources, check_unique

__all__ = []

_NOT_DATA_ROLES = frozenset({"thumbnail", "overview", "visual", "metadata", "preview"})
# Renderings (3-band, stretched to 8 bits), whatever their roles say.
_RENDERINGS = ("visual", "tci", "rendered_preview", "preview")
_RASTER_TYPES = (
    "image/tiff",
    "image/vnd.stac.geotiff",
    "image/jp2",
    "application/x-hdf",
    "application/x-netcdf",
    "application/netcdf",
)


class Bands(NamedTuple):
    """A scene given band by band: its sources, the sensor its metadata name (an Item's
    ``platform``, None when none or unknown) and every file it references, by what it is."""

    sources: list
    sensor: str
    files: dict


def scene_sources(scene, band_options):
    """The scene's :class:`Bands` (``--band`` files or an Item's assets), or None for a file.

    Raises ``ValueError`` with what is wrong.
    """
    if band_options:
        if scene is not None:
            raise ValueError(
                f"give the scene as one file ({scene!r}) or as --band NAME=PATH files, not both"
            )
        sources = band_sources(band_options)
        return Bands(sources, None, {f"--band {s.name} file": s.path for s in sources})
    if scene is None:
        raise ValueError("no scene: give a raster file, a STAC Item (.json) or --band NAME=PATH")
    if scene.lower().endswith(".json"):
        return item_sources(scene)
    return None


def scene_files(scene, bands, rasterio):
    """The files the scene references, by what they are (no output may be one of them):
    a raster's own files (a VRT's sources too, as GDAL lists them), an Item and every
    asset of it, the ``--band`` files."""
    if bands is not None:
        return bands.files if scene is None else {"STAC Item": scene, **bands.files}
    files = {"scene": scene}
    try:
        with rasterio.open(scene) as src:
            files.update((f"file {path!r} of the scene", path) for path in src.files[1:])
    except (rasterio.errors.RasterioError, OSError):
        pass  # opening the scene says what is wrong with it
    return files


def _read(path):
    try:
        with open(path, encoding="utf-8") as file:
            item = json.load(file)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read the STAC Item {path!r}: {exc}") from None
    if not isinstance(item, dict) or item.get("type") != "Feature" or "assets" not in item:
        raise ValueError(f"{path!r} is not a STAC Item (a GeoJSON Feature with assets)")
    if not isinstance(item["assets"], dict):
        raise ValueError(
            f"the STAC Item {path!r} lists its assets as a {type(item['assets']).__name__}, "
            "not an object of assets keyed by name"
        )
    properties = item.get("properties")
    if properties is not None and not isinstance(properties, dict):
        raise ValueError(f"the STAC Item {path!r} has properties that are no object")
    return item


def item_sources(path):
    """The :class:`Bands` of a STAC Item: a source (:class:`~sknd.raster._stack.Source`)
    per band, with its ``common_name``; the sensor its ``platform`` names; every asset.

    Relative hrefs are read from the Item's folder.
    """
    item = _read(path)
    folder = os.path.dirname(os.path.abspath(path))
    properties = item.get("properties") or {}
    shared = properties.get("eo:bands")  # STAC 0.9
    candidates, files = {}, {}
    for key, asset in item["assets"].items():
        if not isinstance(asset, dict):
            raise ValueError(f"the STAC Item's asset {key!r} is no object (an href and fields)")
        href = asset.get("href")
        if isinstance(href, str) and href:
            files[f"STAC Item's asset {key!r}"] = _href(key, asset, folder)
        if not _is_data(key, asset):
            continue
        entries = asset.get("eo:bands") or asset.get("bands")
        if not entries:
            continue
        if not isinstance(entries, list):
            raise ValueError(f"the STAC Item's asset {key!r} has eo:bands that are no list")
        href = _href(key, asset, folder)
        for number, entry in enumerate(entries, start=1):
            entry = _entry(key, entry, shared)
            name = _band_name(entry) or (key if len(entries) == 1 else f"{key}_{number}")
            scale, offset, nodata = _values(key, asset, entry, number)
            common = _common_name(entry)
            source = Source(name, href, number, scale, offset, nodata, common_name=common)
            candidates.setdefault(name, []).append((_rank(asset, len(entries)), key, source))
    if not candidates:
        raise ValueError(
            f"the STAC Item {path!r} has no asset with eo:bands (or bands) among its data "
            "assets: the band names are unknown. Give the bands as --band NAME=PATH instead."
        )
    sources = [_best(name, found) for name, found in candidates.items()]
    check_unique(sources, "the STAC Item")
    return Bands(sources, _platform(properties), files)


def _platform(properties):
    """The Item's ``platform`` where it names a sensor preset (``landsat-9``), else None."""
    platform = properties.get("platform")
    if not isinstance(platform, str):
        return None
    try:
        get_sensor(platform)
    except ValueError:
        return None
    return platform


def _common_name(entry):
    for field in ("common_name", "eo:common_name"):
        value = entry.get(field)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _is_data(key, asset):
    roles = asset.get("roles")
    roles = {str(role).lower() for role in roles} if isinstance(roles, list) else set()
    if roles & _NOT_DATA_ROLES and ("data" not in roles or "visual" in roles):
        return False
    if key.lower().partition("-")[0] in _RENDERINGS:
        return False
    media = asset.get("type")
    if isinstance(media, str) and media and not media.lower().startswith(_RASTER_TYPES):
        return False
    return True


def _href(key, asset, folder):
    href = asset.get("href")
    if not isinstance(href, str) or not href:
        raise ValueError(f"the STAC Item's asset {key!r} has no href (the file's path or URL)")
    if href.startswith("file://"):
        href = href[len("file://") :]
    if "://" not in href and not os.path.isabs(href):
        href = os.path.join(folder, href)
    return href


def _entry(key, entry, shared):
    """A band's entry; STAC 0.9 gives an index into the Item's ``eo:bands``."""
    if isinstance(entry, int) and not isinstance(entry, bool):
        if not isinstance(shared, list) or not 0 <= entry < len(shared):
            raise ValueError(
                f"the STAC Item's asset {key!r} names band {entry} of the Item's eo:bands, "
                f"which has {len(shared) if isinstance(shared, list) else 'no'} bands"
            )
        entry = shared[entry]
    if not isinstance(entry, dict):
        raise ValueError(
            f"the STAC Item's asset {key!r} lists the band {entry!r}: a band is an object "
            "with a name (or, in STAC 0.9, an index into the Item's eo:bands)"
        )
    return entry


def _band_name(entry):
    for field in ("name", "common_name", "eo:common_name"):
        value = entry.get(field)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _values(key, asset, entry, number):
    """``(scale, offset, nodata)`` of band ``number`` of an asset, as the Item declares them."""
    raster = asset.get("raster:bands")
    fields = {}
    if isinstance(raster, list) and len(raster) >= number and isinstance(raster[number - 1], dict):
        fields = raster[number - 1]
    scale = _first(fields.get("scale"), entry.get("raster:scale"), asset.get("raster:scale"))
    offset = _first(fields.get("offset"), entry.get("raster:offset"), asset.get("raster:offset"))
    nodata = _first(fields.get("nodata"), entry.get("nodata"), asset.get("nodata"))
    scale = None if scale is None else _number(key, "scale", scale)
    offset = None if offset is None else _number(key, "offset", offset)
    if scale == 0:
        raise ValueError(f"the STAC Item's asset {key!r} declares a scale of 0")
    return scale, offset, None if nodata is None else _number(key, "nodata", nodata)


def _first(*values):
    return next((value for value in values if value is not None), None)


def _number(key, what, value):
    if isinstance(value, str) and value.lower() in ("nan", "inf", "-inf"):
        return float(value)  # STAC 1.1 spells non-finite nodata as strings
    if not isinstance(value, Real) or isinstance(value, bool):
        raise ValueError(f"the STAC Item's asset {key!r} declares the {what} {value!r}: no number")
    return float(value)


def _rank(asset, n_bands):
    """Lower is better: single-band over multi-band, GeoTIFF / COG over others over JPEG 2000."""
    media = str(asset.get("type") or "").lower()
    href = str(asset.get("href")).lower()
    if "tiff" in media or (not media and href.endswith((".tif", ".tiff"))):
        kind = 0
    elif "jp2" in media or href.endswith(".jp2"):
        kind = 2
    else:
        kind = 1
    return (n_bands > 1, kind)


def _best(name, found):
    best = min(rank for rank, _, _ in found)
    kept = [(key, source) for rank, key, source in found if rank == best]
    if len(kept) > 1:
        keys = [key for key, _ in kept]
        raise ValueError(
            f"the STAC Item gives the band {name!r} in several assets of the same kind {keys}: "
            "each band once (or give the bands as --band NAME=PATH)"
        )
    return kept[0][1]
