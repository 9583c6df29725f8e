"""From samples to a georeferenced map: Landsat 8 samples, a Sentinel-2 scene
==========================================================================

Fit on Landsat 8 samples, apply the model to a real Sentinel-2 scene, write the map as
a categorical GeoTIFF and a Cloud Optimized GeoTIFF, and export the learned indices.

1. Fit :class:`sknd.NDClassifier` on spyndex's real Landsat 8 surface-reflectance
   samples of three land covers (urban, vegetation, water), using the bands
   ``SR_B2``-``SR_B5`` (blue, green, red, NIR) under ``sensor="landsat8"``.
2. Apply it to spyndex's real Sentinel-2 10 m scene, whose bands are called
   ``B02``, ``B03``, ``B04``, ``B08``: :func:`sknd.raster.class_map` finds each
   Landsat band's Sentinel-2 counterpart through the common band names (and says
   so with a :class:`sknd.bands.BandMatchWarning` listing the mapping) and gives
   the class map as uint8 codes with their labels attached.
3. Write it with :func:`sknd.raster.write_class_map`: a GeoTIFF with a colour table
   and category names that QGIS shows as they are, and the same as a COG.
4. Export the learned indices as Awesome Spectral Indices entries (a JSON file that
   spyndex reads) and as Earth Engine formulas over Sentinel-2 band names.

The scene has no georeferencing in its source. The example attaches the
loader's *illustrative* CRS and transform (UTM zone 33N, 10 m pixels:
``example_crs``, ``example_transform``) so that the GeoTIFF opens in a GIS; it
is not the scene's true location.

Run with ``python examples/landsat8_to_sentinel2.py [OUTPUT_DIR]`` (needs the
``geo`` and ``plot`` extras: rioxarray, rasterio and matplotlib). Writes
``landcover.tif`` (with ``landcover.tif.aux.xml``, its category names),
``landcover_cog.tif``, ``landcover_indices.json`` and ``landcover.png`` to OUTPUT_DIR
(default: the current directory).
"""

import sys
import warnings
from pathlib import Path

import numpy as np
import rasterio
import rioxarray  # noqa: F401  (registers the .rio accessor)
from affine import Affine

from sknd import NDClassifier, raster
from sknd.bands import BandMatchWarning
from sknd.datasets import load_landsat8_samples, load_sentinel2_scene
from sknd.inspection import export_asi

output_dir = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
output_dir.mkdir(parents=True, exist_ok=True)

# 1. Samples -> model, on the four bands both sensors share.
samples = load_landsat8_samples(as_frame=True)
X = samples.data[["SR_B2", "SR_B3", "SR_B4", "SR_B5"]]
y = samples.target_names[samples.target]
clf = NDClassifier(sensor="landsat8", max_epochs=300, random_state=0).fit(X, y)
print(f"fitted on {len(X)} Landsat 8 samples, training accuracy {clf.score(X, y):.3f}")
for band in clf.bands_:
    print(f"  {band.name}: {band.common_name} ({band.wavelength:.0f} nm)")

# 2. The Sentinel-2 scene, with the illustrative georeferencing attached.
info = load_sentinel2_scene()
scene = load_sentinel2_scene(as_dataarray=True)
transform = Affine(*info.example_transform)
height, width = scene.sizes["y"], scene.sizes["x"]
scene = scene.assign_coords(
    x=transform.c + transform.a * (np.arange(width) + 0.5),
    y=transform.f + transform.e * (np.arange(height) + 0.5),
)
scene = scene.rio.write_crs(info.example_crs)
print(f"scene {dict(scene.sizes)}, bands {scene['band'].values.tolist()}, CRS {scene.rio.crs}")
print("  (CRS and transform are illustrative: the source scene has none)")

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", BandMatchWarning)
    codes = raster.class_map(clf, scene)
for warning in caught:
    print(f"band mapping: {warning.message}")
print(
    f"class map: {codes.dtype}, fill {codes.attrs['_FillValue']}, codes {codes.attrs['categories']}"
)

# 3. A GeoTIFF with colour table and category names, and the same as a COG.
classes = clf.classes_.tolist()
colours = {"Urban": "#b0b0b0", "Vegetation": "#2e8b3a", "Water": "#2a6fdb"}
geotiff = raster.write_class_map(codes, output_dir / "landcover.tif", colors=colours)
cog = raster.write_class_map(codes, output_dir / "landcover_cog.tif", colors=colours, cog=True)
with rasterio.open(cog) as src:
    assert src.crs == scene.rio.crs and src.transform == scene.rio.transform()
    layout = src.tags(ns="IMAGE_STRUCTURE")["LAYOUT"]
    print(f"wrote {Path(geotiff).name} and {Path(cog).name} ({layout} layout)")
    print("  colour table:", {code: src.colormap(1)[code][:3] for code in range(len(classes))})

labels = raster.class_labels(codes).values
fractions = {c: float(np.mean(labels == c)) for c in classes}
print("land cover:", ", ".join(f"{c} {100 * f:.1f}%" for c, f in fractions.items()))

# 4. The learned indices as Awesome Spectral Indices entries and Sentinel-2 formulas.
catalogue = export_asi(clf, output_dir / "landcover_indices.json", top=2, reference="example")
for name, entry in catalogue["SpectralIndices"].items():
    print(f"{name}: {entry['long_name']}\n  {entry['formula']}")
for formula in clf.export_formulas(format="gee", top=2, precision=4, sensor="sentinel2"):
    print(f"Earth Engine, Sentinel-2 bands: {formula}")

from sknd.plotting import pyplot  # noqa: E402

plt = pyplot()  # matplotlib, or the command that installs it
plt.switch_backend("Agg")
from matplotlib.colors import ListedColormap  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

fig, (ax_rgb, ax_map) = plt.subplots(1, 2, figsize=(10, 5), constrained_layout=True)
rgb = scene.sel(band=["B04", "B03", "B02"]).transpose("y", "x", "band").values
ax_rgb.imshow(np.clip(rgb / np.percentile(rgb, 98), 0, 1))
ax_rgb.set_title("Sentinel-2 scene (B04, B03, B02)")
shown = np.ma.masked_equal(codes.values, codes.attrs["_FillValue"])
ax_map.imshow(shown, cmap=ListedColormap([colours[c] for c in classes]), vmin=0, vmax=2)
ax_map.set_title("Land cover from a Landsat 8 model")
ax_map.legend(
    handles=[Patch(color=colours[c], label=c) for c in classes],
    loc="lower right",
    framealpha=0.9,
)
for ax in (ax_rgb, ax_map):
    ax.set_axis_off()
png = output_dir / "landcover.png"
fig.savefig(png, dpi=80)  # 800 x 400 pixels, as docs/datasets.md shows it
print(f"wrote {png.name}")
