"""Small GeoTIFFs for the raster tests (test_raster, test_raster_cli, test_fuzz_raster_cli)."""

import pytest

#: 10 m pixels of a UTM scene (EPSG:32633), upper-left corner at (500,000, 5,000,000).
TRANSFORM = (10.0, 0.0, 500_000.0, 0.0, -10.0, 5_000_000.0)


def write_geotiff(path, data, *, crs="EPSG:32633", nodata=-9999.0, descriptions=None):
    """Write ``data`` of shape ``(bands, rows, columns)`` as a GeoTIFF; return ``path``.

    ``crs=None`` writes no CRS; ``descriptions`` names the bands.
    """
    rasterio = pytest.importorskip("rasterio")
    profile = {
        "driver": "GTiff",
        "width": data.shape[2],
        "height": data.shape[1],
        "count": data.shape[0],
        "dtype": data.dtype.name,
        "transform": rasterio.Affine(*TRANSFORM),
        "nodata": nodata,
    }
    if crs is not None:
        profile["crs"] = crs
    with rasterio.open(path, "w", **profile) as dst:
        dst.write(data)
        if descriptions is not None:
            dst.descriptions = tuple(descriptions)
    return path
