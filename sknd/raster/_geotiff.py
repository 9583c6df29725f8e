"""Class maps as GeoTIFFs that GIS tools show right away: colour table, category names, COG.

A GeoTIFF's colour table (TIFF palette) gives each code a colour; GDAL's
*category names* give it a name, which QGIS shows in the legend and
``gdalinfo`` lists. TIFF has no field for category names, so GDAL keeps them
in the ``.aux.xml`` side-car file (its persistent auxiliary metadata); this
module writes that file next to the map, as GDAL's ``SetCategoryNames``
would. The code table is also kept inside the file, as the tags
``categories`` (JSON), ``flag_values`` and ``flag_meanings``.

A Cloud Optimized GeoTIFF is written by GDAL's COG driver from a finished
GeoTIFF; class maps get nearest-neighbour overviews (an average of codes is
no class).

Every writer here writes to a temporary file next to the target and renames
it at the end: a map cut short, or refused, never passes for a result.
"""

import contextlib
import os
import uuid
import warnings
import xml.etree.ElementTree as ET

import numpy as np

from .._inference._colors import check_colors
from ._categorical import read_categories, table_labels, table_tags

__all__ = []


#: Compressions that change the values they store: class codes would become other classes.
LOSSY_COMPRESSIONS = ("jpeg", "webp")


def check_compression(compress, option="compress="):
    """Refuse a lossy compression (``option`` names the argument in the message)."""
    if compress is not None and str(compress).strip().lower() in LOSSY_COMPRESSIONS:
        raise ValueError(
            f"{option}{compress} is lossy: it changes the stored values (class codes become "
            "other classes or no class at all). Use a lossless compression such as deflate, "
            "lzw or zstd."
        )


def palette_dtype(dtype):
    """Whether GeoTIFF can hold a colour table for a map of ``dtype`` (Byte and UInt16)."""
    return np.dtype(dtype) in (np.dtype(np.uint8), np.dtype(np.uint16))


def finish_class_map(dst, labels, colors):
    """Colour table and code-table tags of an open class map ``dst`` (rasterio, band 1)."""
    if palette_dtype(dst.dtypes[0]):
        colormap = dict(enumerate(check_colors(colors, labels)))
        if dst.nodata is not None and int(dst.nodata) not in colormap:
            colormap[int(dst.nodata)] = (0, 0, 0, 0)  # no-data: transparent
        dst.write_colormap(1, colormap)
    dst.update_tags(**table_tags(labels))


def sidecar(path):
    return f"{os.fspath(path)}.aux.xml"


def write_category_names(path, labels):
    """GDAL category names of band 1 of ``path`` (codes 0 .. n - 1), in its side-car."""
    root = ET.Element("PAMDataset")
    band = ET.SubElement(root, "PAMRasterBand", band="1")
    names = ET.SubElement(band, "CategoryNames")
    for label in labels:
        ET.SubElement(names, "Category").text = str(label)
    ET.ElementTree(root).write(sidecar(path), encoding="UTF-8", xml_declaration=False)


def remove_quietly(*paths):
    for path in paths:
        with contextlib.suppress(OSError):
            os.remove(path)


def temporary_path(path):
    """A new file name next to ``path``, for a file renamed over it when complete.

    The file is not created here: GDAL creates it with the user's usual permissions.
    """
    directory = os.path.dirname(os.path.abspath(os.fspath(path)))
    return os.path.join(directory, f".sknd-{uuid.uuid4().hex}.tif")


def write_cog(source, path, *, categorical, compress):
    """Copy the GeoTIFF ``source`` to ``path`` with GDAL's COG driver."""
    import rasterio.shutil

    options = {"BLOCKSIZE": 256, "RESAMPLING": "NEAREST" if categorical else "AVERAGE"}
    if compress:
        options["COMPRESS"] = compress.upper()
    rasterio.shutil.copy(source, path, driver="COG", **options)


class StagedMap:
    """A map written to a temporary file beside ``output`` and renamed over it when complete.

    Use it as a context manager: whatever happens, no temporary file is left.
    """

    def __init__(self, output, *, cog):
        self.output = output
        self.cog = cog
        self.temporaries = [temporary_path(output)]

    def __enter__(self):
        return self

    @property
    def path(self):
        """The temporary file the map is written to."""
        return self.temporaries[0]

    def __exit__(self, *exc_info):
        for path in self.temporaries:
            remove_quietly(path, sidecar(path))

    def open(self, rasterio, profile):
        """The temporary GeoTIFF, open for writing (GDAL creates it with the umask's mode)."""
        return rasterio.open(self.path, "w", **profile)

    def commit(self, *, labels, compress, before_replace):
        """Finish the map (COG, category names ``labels``) and rename it over the output.

        ``before_replace`` is called just before: it raises to stop the run.
        """
        source = self.path
        if self.cog:
            copy = temporary_path(self.output)
            self.temporaries.append(copy)
            write_cog(source, copy, categorical=labels is not None, compress=compress)
            source = copy
        if labels is not None:
            write_category_names(source, labels)
        before_replace()
        os.replace(source, self.output)
        if os.path.exists(sidecar(source)):
            os.replace(sidecar(source), sidecar(self.output))
        else:  # a side-car left by an earlier map would rename this one's classes
            remove_quietly(sidecar(self.output))


def _import_rioxarray():
    """rioxarray, which registers the ``.rio`` accessor that writes a DataArray's GeoTIFF."""
    try:
        import rioxarray  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            "write_class_map needs rioxarray: pip install rioxarray (or, in the sknd "
            "checkout, pip install -e '.[geo]')"
        ) from exc


def _class_map_labels(class_map, colors, compress):
    """The labels of a class map :func:`write_class_map` can write as asked, else an error."""
    from ._containers import container_of
    from ._xarray import DataArrayImage

    if container_of(class_map) is not DataArrayImage:
        raise TypeError(f"class_map must be an xarray.DataArray, got {type(class_map).__name__}.")
    table = read_categories(class_map.attrs)
    if table is None:
        raise ValueError(
            "The map carries no code table (a 'categories' attribute): make it with "
            "sknd.raster.class_map or class_map_from_proba."
        )
    labels = table_labels(table)
    check_compression(compress)
    if class_map.ndim != 2:
        raise ValueError(f"A class map GeoTIFF has one band: got dimensions {class_map.dims}.")
    if class_map.dtype.kind not in "iu":
        raise TypeError(f"A class map holds integer codes, got dtype {class_map.dtype}.")
    check_colors(colors, labels)  # before anything is written
    if colors is not None and not palette_dtype(class_map.dtype):
        raise ValueError(
            f"A GeoTIFF holds a colour table for uint8 and uint16 maps only, not "
            f"{class_map.dtype}: leave colors out, or use a non-negative fill value."
        )
    return labels


def write_class_map(class_map, path, *, colors=None, cog=False, compress="deflate"):
    """Write a class map as a GeoTIFF with a colour table and category names.

    Parameters
    ----------
    class_map : xarray.DataArray
        Two-dimensional class codes with their code table, as
        :func:`class_map` or :func:`class_map_from_proba` return them (lazy
        or not), georeferenced with rioxarray (``rio.crs``,
        ``rio.transform()``).
    path : str or path-like
        Output file; its category names go to ``path + ".aux.xml"``.
    colors : sequence, dict or None, default=None
        Colour of each class: ``(R, G, B)`` tuples of integers 0..255,
        ``"#rrggbb"`` text or colour names (CSS / matplotlib, e.g.
        ``"forestgreen"``; they need matplotlib), one per code, or a dict ``{label: colour}``.
        None gives distinct colours. GeoTIFF palettes hold no alpha (an
        ``(R, G, B, A)`` colour loses its ``A``); GDAL shows no-data pixels
        transparent.
    cog : bool, default=False
        Write a Cloud Optimized GeoTIFF (GDAL's COG driver, nearest-neighbour
        overviews).
    compress : str or None, default="deflate"
        GeoTIFF compression; lossy ones (``"jpeg"``, ``"webp"``) are refused:
        they change class codes.

    Returns
    -------
    path : str
        The file written.

    Notes
    -----
    rioxarray computes a lazy map whole before writing it: one byte per
    pixel for uint8 codes (a 25 Mpx map: 25 MB). A map far larger than
    memory is better written by ``python -m sknd.raster``, strip by strip.

    Raises
    ------
    ValueError
        If the map carries no code table, ``colors`` do not fit, or
        ``compress`` is lossy.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> import rasterio
    >>> import rioxarray  # noqa: F401
    >>> import xarray as xr
    >>> from affine import Affine
    >>> from sknd import raster
    >>> proba = xr.DataArray(np.random.default_rng(0).dirichlet([1, 1], (4, 5)),
    ...     dims=("y", "x", "class"), coords={"class": ["water", "land"]})
    >>> codes = raster.class_map_from_proba(proba).rio.write_crs("EPSG:32633")
    >>> codes = codes.rio.write_transform(Affine(10.0, 0.0, 500000.0, 0.0, -10.0, 0.0))
    >>> path = raster.write_class_map(codes, os.path.join(tempfile.mkdtemp(), "map.tif"))
    >>> with rasterio.open(path) as src:
    ...     src.colormap(1)[0], src.tags()["flag_meanings"], src.transform.c
    ((31, 119, 180, 255), 'water land', 500000.0)
    """
    labels = _class_map_labels(class_map, colors, compress)
    import rasterio

    _import_rioxarray()
    path = os.fspath(path)
    data = class_map.copy(deep=False)
    data.attrs = {key: value for key, value in class_map.attrs.items() if key != "flag_values"}
    with StagedMap(path, cog=cog) as staged:
        options = {"tiled": True, "compress": compress} if compress else {"tiled": True}
        with warnings.catch_warnings():
            # rioxarray's own use of affine's deprecated "*", nothing the caller can mend.
            warnings.filterwarnings("ignore", "Use `@` matmul", PendingDeprecationWarning)
            data.rio.to_raster(staged.path, **options)
        with rasterio.open(staged.path, "r+") as dst:
            finish_class_map(dst, labels, colors)
        staged.commit(labels=labels, compress=compress, before_replace=lambda: None)
    if not palette_dtype(class_map.dtype):
        warnings.warn(
            f"{path}: no colour table, which GeoTIFF holds for uint8 and uint16 maps only "
            f"(this one is {class_map.dtype}); category names are written.",
            UserWarning,
            stacklevel=2,
        )
    return path
