"""From a STAC Item to a class map and an openEO process graph
============================================================

A model fitted on Sentinel-2 pixels is applied to a scene given as users get it
(one file per band, at 10 m and 20 m, listed by a STAC Item) with the scene
command, then exported as an openEO process graph that computes the same map
where the data lives (and as Earth Engine code).

The pixels are the first 120 x 120 pixels of the real Sentinel-2 scene shipped
with sknd (:func:`sknd.datasets.load_sentinel2_scene`, blue, green, red and
near-infrared at 10 m). To make it look like a Sentinel-2 product with bands at
two resolutions, the near-infrared band is written at 20 m (2 x 2 averages) and
named B8A, the product's 20 m narrow near-infrared band, and the model is
fitted on it under that name. The labels
are **pseudo-labels** (NDVI thresholds), so that the example runs anywhere
without downloads: it shows the workflow, not an accuracy. Nothing is sent to an
openEO back-end here; see the "Run a model anywhere" page for what a user runs.

Run it with ``python examples/stac_item_to_openeo.py`` (needs the ``geo`` and
``plot`` extras).
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import rasterio
from rasterio.transform import Affine

from sknd import NDClassifier
from sknd.datasets import load_sentinel2_scene
from sknd.plotting import pyplot

scene = load_sentinel2_scene()
size = 120
bands = dict(zip(scene.band_names.tolist(), scene.data[:, :size, :size]))
transform = Affine(*scene.example_transform)

# %%
# A model fitted on pixels with Sentinel-2 band names
# ---------------------------------------------------
ndvi = (bands["B08"] - bands["B04"]) / (bands["B08"] + bands["B04"])
labels = np.array(["water or bare", "sparse vegetation", "dense vegetation"])[
    np.digitize(ndvi, [0.2, 0.5])
]
rng = np.random.default_rng(0)
rows = rng.choice(size * size, 2000, replace=False)
X = np.column_stack([bands[name].ravel()[rows] for name in ("B02", "B04", "B08")])
clf = NDClassifier(bands=["B02", "B04", "B8A"], sensor="sentinel2", random_state=0)
clf.fit(X, labels.ravel()[rows])

# %%
# The scene as a STAC Item: one file per band, 10 m and 20 m
# ----------------------------------------------------------
folder = Path(tempfile.mkdtemp())


def write_band(name, data, resolution):
    profile = dict(
        driver="GTiff",
        width=data.shape[1],
        height=data.shape[0],
        count=1,
        dtype="float32",
        crs=scene.example_crs,
        transform=Affine(resolution, 0, transform.c, 0, -resolution, transform.f),
    )
    with rasterio.open(folder / f"{name}.tif", "w", **profile) as dst:
        dst.write(data.astype(np.float32), 1)
    return f"{name}.tif"


nir_20m = bands["B08"].reshape(size // 2, 2, size // 2, 2).mean(axis=(1, 3))
assets = {
    "blue": (write_band("B02", bands["B02"], 10.0), "B02", "blue"),
    "red": (write_band("B04", bands["B04"], 10.0), "B04", "red"),
    "nir08": (write_band("B8A", nir_20m, 20.0), "B8A", "nir08"),
}
item = {
    "type": "Feature",
    "stac_version": "1.0.0",
    "stac_extensions": ["https://stac-extensions.github.io/eo/v1.1.0/schema.json"],
    "id": "example-scene",
    "geometry": None,
    "properties": {"datetime": "2024-06-01T10:30:00Z"},
    "links": [],
    "assets": {
        key: {
            "href": href,
            "type": "image/tiff; application=geotiff",
            "eo:bands": [{"name": name, "common_name": common}],
        }
        for key, (href, name, common) in assets.items()
    },
}
with open(folder / "item.json", "w") as file:
    json.dump(item, file, indent=1)

# %%
# The map, with the scene command
# -------------------------------
# The command stacks the Item's bands, named by their ``eo:bands``, on the finest grid:
# the 20 m band is resampled onto the 10 m grid (nearest; ``--resampling`` to change it).
clf.save_model(folder / "model.sknd")
command = [
    sys.executable,
    "-m",
    "sknd.raster",
    str(folder / "model.sknd"),
    str(folder / "item.json"),
    str(folder / "map.tif"),
    "--no-progress",
]
subprocess.run(command, check=True)
with rasterio.open(folder / "map.tif") as src:
    codes = src.read(1)
    palette = src.colormap(1)  # the colour table the command wrote, as a GIS shows it
    print(f"map: {src.width} x {src.height} pixels of {src.res[0]:g} m, {src.crs}")

# One colour per class, from the file's colour table, and a legend that names them.
from matplotlib.colors import ListedColormap  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

plt = pyplot()  # matplotlib, or the message that says how to install it
colours = [np.array(palette[code][:3]) / 255 for code in range(len(clf.classes_))]
fig, ax = plt.subplots(figsize=(6, 4.5), layout="constrained")
shown = np.ma.masked_greater_equal(codes, len(colours))  # no-data: left blank
ax.imshow(
    shown, cmap=ListedColormap(colours), vmin=-0.5, vmax=len(colours) - 0.5, interpolation="nearest"
)
fig.legend(
    handles=[Patch(color=c, label=name) for c, name in zip(colours, clf.classes_)],
    loc="outside right upper",
)
ax.set_title("class map from the STAC Item")
ax.set_axis_off()

# %%
# The same model as an openEO process graph
# -----------------------------------------
# The graph loads the collection's bands by name (here Sentinel-2 names of an openEO
# collection) and computes every layer with openEO core processes. The collection serves
# digital numbers, 10000 (reflectance + 0.1) since processing baseline 04.00 (check the
# back-end's collection metadata): ``scale`` and ``offset`` turn them back into the
# reflectances the model was fitted on, in floating point.
graph = clf.export_model(
    "openeo",
    collection="SENTINEL2_L2A",
    bands=["B02", "B03", "B04", "B08", "B8A"],
    scale=1e-4,
    offset=-0.1,
)
load = graph["process_graph"]["select"]
print(load["process_id"], load["arguments"]["id"], load["arguments"]["bands"])
print(graph["description"])
print(
    f"{len(json.dumps(graph)) / 1024:.0f} KiB of JSON, parameters "
    f"{[parameter['name'] for parameter in graph['parameters']]}"
)

# %%
# And as Earth Engine code
# ------------------------
# For ``COPERNICUS/S2_SR_HARMONIZED``, whose digital numbers are 10000 x reflectance.
code = clf.export_model("earthengine", bands=["B2", "B3", "B4", "B8", "B8A"], scale=1e-4)
print("\n".join(code.splitlines()[:24]))
