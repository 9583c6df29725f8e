"""From labelled points and a GeoTIFF to a training table and a map
==================================================================

The usual start of a land-cover project: a scene as a GeoTIFF and a few hundred
labelled points (a field survey, or points placed by photo-interpretation), with
coordinates in longitude and latitude. This example

1. reads the points and brings them into the scene's coordinate reference system;
2. samples the scene at the points: one row per point, one column per band (the
   **training table**), points outside the scene or on no-data pixels dropped;
3. fits :class:`sknd.NDClassifier` on that table and checks it on held-out points;
4. classifies every pixel with :func:`sknd.raster.class_map` and writes the map as a
   GeoTIFF with a colour table (:func:`sknd.raster.write_class_map`).

Sampling needs no sknd function: rioxarray reads the GeoTIFF as an
:class:`xarray.DataArray`, and xarray's vectorized ``.sel(x=..., y=...,
method="nearest")`` picks the pixel under each point.

The scene is spyndex's real Sentinel-2 10 m scene (blue, green, red, NIR),
written to a GeoTIFF with the loader's *illustrative* georeferencing (UTM zone 33N,
10 m pixels; not the scene's true location). **The labels are stand-ins:** so that
the example runs without downloads, points are drawn at random on the scene and
labelled by a rule on NDVI and brightness, as a photo-interpreter might; with your
own data they come from a file (``geopandas.read_file("points.gpkg")`` or
``pandas.read_csv``). A Sentinel-2 L2A product of processing baseline 04.00 or
later stores ``10000 * reflectance + 1000``: remove the offset before training
(see the Sentinel-2 note in ``docs/raster.md``).

Run with ``python examples/points_to_map.py [OUTPUT_DIR]`` (needs the ``geo`` and
``plot`` extras: rioxarray, rasterio and matplotlib). It writes ``scene.tif``,
``points.csv``, ``training_table.csv``, ``landcover.tif`` (with its ``.aux.xml``
category names) and ``points_to_map.png`` to OUTPUT_DIR; without one, to a
temporary directory removed at the end.
"""

# sphinx_gallery_thumbnail_number = 1

import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import rioxarray
import xarray as xr
from affine import Affine
from pyproj import Transformer
from sklearn.model_selection import train_test_split

from sknd import NDClassifier, raster
from sknd.datasets import load_sentinel2_scene

if len(sys.argv) > 1:
    output_dir = Path(sys.argv[1])
    output_dir.mkdir(parents=True, exist_ok=True)
else:
    temporary = tempfile.TemporaryDirectory()
    output_dir = Path(temporary.name)

# %%
# The inputs: a GeoTIFF and a CSV of labelled points
# ---------------------------------------------------
# This block only makes the two input files; a real project starts at the next one.

info = load_sentinel2_scene()
scene = load_sentinel2_scene(as_dataarray=True)
transform = Affine(*info.example_transform)
scene = scene.assign_coords(
    x=transform.c + transform.a * (np.arange(scene.sizes["x"]) + 0.5),
    y=transform.f + transform.e * (np.arange(scene.sizes["y"]) + 0.5),
)
scene = scene.rio.write_crs(info.example_crs)
scene.attrs["long_name"] = tuple(scene["band"].values)  # written as band descriptions
scene.assign_coords(band=[1, 2, 3, 4]).rio.to_raster(output_dir / "scene.tif")

rng = np.random.default_rng(0)
rows, cols = rng.integers(0, 300, 600), rng.integers(0, 300, 600)
blue, green, red, nir = (scene.values[b, rows, cols] for b in range(4))
ndvi = (nir - red) / (nir + red)
visible = (blue + green + red) / 3
# The stand-in for a photo-interpreter: dense vegetation, sparse vegetation (grass,
# crops early in the season), and bright surfaces without vegetation (built-up, bare).
label = np.select(
    [ndvi > 0.65, ndvi > 0.35], ["dense vegetation", "sparse vegetation"], "built-up or bare"
)
label[(ndvi <= 0.35) & (visible < 0.06)] = "sparse vegetation"  # dark, not built-up
to_lonlat = Transformer.from_crs(info.example_crs, "EPSG:4326", always_xy=True)
lon, lat = to_lonlat.transform(scene.x.values[cols], scene.y.values[rows])
# Some points fall outside the scene, as survey points do.
lon[:5] += 0.2
pd.DataFrame({"lon": lon, "lat": lat, "label": label}).to_csv(
    output_dir / "points.csv", index=False
)

# %%
# 1. Points into the scene's coordinates
# --------------------------------------
# ``masked=True`` turns the file's nodata value into NaN.

image = rioxarray.open_rasterio(output_dir / "scene.tif", masked=True)
print(f"scene {dict(image.sizes)}, CRS {image.rio.crs}, bands {image.attrs['long_name']}")

points = pd.read_csv(output_dir / "points.csv")
to_scene = Transformer.from_crs("EPSG:4326", image.rio.crs, always_xy=True)
points["x"], points["y"] = to_scene.transform(points["lon"].to_numpy(), points["lat"].to_numpy())

# %%
# 2. The training table: the scene sampled at the points
# ------------------------------------------------------
# Indexing with two DataArrays along a new ``point`` dimension picks one pixel per point
# (not the 600 x 600 grid of all combinations); ``method="nearest"`` takes the pixel whose
# centre is closest, i.e. the pixel the point lies in, and ``tolerance`` (half a pixel)
# is a second guard: no point is ever snapped to the edge of the scene.

left, bottom, right, top = image.rio.bounds()  # the outer edges of the edge pixels
inside = points["x"].between(left, right) & points["y"].between(bottom, top)
print(f"{int((~inside).sum())} of {len(points)} points lie outside the scene: dropped")
points = points[inside].reset_index(drop=True)
sampled = image.sel(
    x=xr.DataArray(points["x"], dims="point"),
    y=xr.DataArray(points["y"], dims="point"),
    method="nearest",
    tolerance=abs(image.rio.resolution()[0]) / 2,
)
table = pd.DataFrame(sampled.transpose("point", "band").values, columns=image.attrs["long_name"])
table["label"] = points["label"]
table = table.dropna()  # points on no-data pixels
table.to_csv(output_dir / "training_table.csv", index=False)
print(f"training table: {table.shape[0]} points x {table.shape[1] - 1} bands")
print(table.head().round(4).to_string(index=False))
print(table["label"].value_counts().to_string())

# %%
# 3. A model from the table, checked on held-out points
# -----------------------------------------------------
# The columns carry the scene's band names, so the model knows its bands by name
# (``sensor="sentinel2"`` maps them to red, nir, ... and names the classic indices).

X, y = table.drop(columns="label"), table["label"]
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
clf = NDClassifier(sensor="sentinel2", random_state=0).fit(X_train, y_train)
print(f"accuracy on {len(X_test)} held-out points: {clf.score(X_test, y_test):.3f}")
leading = clf.indices_.sort_values("importance", ascending=False).head(3)
print(
    leading[["band_i", "band_j", "k", "importance", "known_index"]].round(3).to_string(index=False)
)

# %%
# 4. The map
# ----------
# ``class_map`` matches the scene's bands to the model's by name (here the file's band
# descriptions) and keeps the CRS and transform; ``write_class_map`` writes codes, colour
# table and category names.

codes = raster.class_map(clf, image)
colours = {
    "built-up or bare": "#b0b0b0",
    "dense vegetation": "#1b6e2d",
    "sparse vegetation": "#9acd32",
}
raster.write_class_map(codes, output_dir / "landcover.tif", colors=colours)
labels = raster.class_labels(codes).values
print(
    "map:",
    ", ".join(f"{c} {100 * np.mean(labels == c):.1f}%" for c in clf.classes_),
    f"(CRS kept: {codes.rio.crs == image.rio.crs})",
)

from sknd.plotting import pyplot  # noqa: E402

plt = pyplot()  # matplotlib, or the command that installs it
plt.switch_backend("Agg")
from matplotlib.colors import ListedColormap  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

classes = clf.classes_.tolist()
extent = [left, right, bottom, top]
fig, (ax_rgb, ax_map) = plt.subplots(1, 2, figsize=(11, 5), constrained_layout=True)
rgb = image.sel(band=[3, 2, 1]).transpose("y", "x", "band").values
ax_rgb.imshow(np.clip(rgb / np.nanpercentile(rgb, 98), 0, 1), extent=extent)
for name in classes:
    mine = points["label"] == name
    ax_rgb.scatter(
        points["x"][mine],
        points["y"][mine],
        s=9,
        color=colours[name],
        edgecolor="black",
        linewidth=0.4,
        label=name,
    )
ax_rgb.set_title("Scene (B04, B03, B02) and the labelled points")
ax_map.imshow(
    np.ma.masked_equal(codes.values, codes.attrs["_FillValue"]),
    extent=extent,
    cmap=ListedColormap([colours[c] for c in classes]),
    vmin=0,
    vmax=len(classes) - 1,
)
ax_map.set_title("Class map from the points' model")
ax_map.legend(
    handles=[Patch(color=colours[c], label=c) for c in classes],
    loc="lower right",
    framealpha=0.9,
    fontsize=8,
)
for ax in (ax_rgb, ax_map):
    ax.set_xticks([])
    ax.set_yticks([])
fig.savefig(output_dir / "points_to_map.png", dpi=100)
print("wrote", ", ".join(sorted(p.name for p in output_dir.iterdir())))
