"""Predict a (mock) scene with sknd.raster: xarray, dask, no-data and band names
=============================================================================

Trains :class:`sknd.NDClassifier` on the centre pixels of the UCI Landsat data
(4 bands: green, red, nir1, nir2; shipped with sknd), then applies it to a
scene: an :class:`xarray.DataArray` laid out as rasterio/rioxarray read it,
``(band, y, x)``, with its bands in another order than in training, a strip of
no-data, and dask chunks. The scene is a mosaic of the held-out test pixels, so
that predictions can be checked against their labels.

Run with ``python examples/predict_scene.py`` (needs the ``raster`` extra:
xarray and dask; the figure at the end also needs the ``plot`` extra, matplotlib,
and is skipped with a message without it).
"""

import dask
import numpy as np
import xarray as xr

from sknd import NDClassifier, raster
from sknd.datasets import load_satimage
from sknd.plotting import pyplot

train = load_satimage(subset="train", center_pixel=True, as_frame=True)
test = load_satimage(subset="test", center_pixel=True, as_frame=True)
# Land-cover names as labels: the class map holds strings such as "cotton crop".
clf = NDClassifier(random_state=0).fit(train.data, train.target_names[train.target])
print(f"trained on {len(train.data)} pixels, bands {list(clf.feature_names_in_)}")

# A 40 x 50 "scene" made of test pixels, band-first, bands in reverse order.
height, width = 40, 50
truth = test.target_names[test.target][: height * width].reshape(height, width)
bands = list(test.data.columns)[::-1]
scene = xr.DataArray(
    test.data[bands]
    .to_numpy(dtype=np.float32, copy=True)[: height * width]
    .T.reshape(4, height, width),
    dims=("band", "y", "x"),
    coords={
        "band": bands,
        "y": 4_000_000.0 - 30.0 * np.arange(height),  # a 30 m grid, as Landsat
        "x": 500_000.0 + 30.0 * np.arange(width),
    },
    name="reflectance",
)
scene[:, :2, :] = np.nan  # no-data along the swath edge
lazy = scene.chunk({"y": 16, "x": 25})  # e.g. what xr.open_dataset(..., chunks=...) gives

# Lazy: nothing is computed until .compute() (or .to_zarr, .rio.to_raster, ...).
labels = raster.predict(clf, lazy, fill_value="no data")
proba = raster.predict_proba(clf, lazy)
print(f"\nlazy result: {labels.dims} {labels.dtype}, dask: {dask.is_dask_collection(labels)}")
labels, proba = dask.compute(labels, proba)

valid = labels.values != "no data"
accuracy = np.mean(labels.values[valid] == truth[valid])
print(
    f"class map {labels.shape}, {int((~valid).sum())} no-data pixels, "
    f"accuracy on the valid pixels {accuracy:.3f}"
)
print(f"probabilities: dims {proba.dims}, classes {proba['class'].values.tolist()}")
confidence = proba.max("class")
print(f"mean top-class probability {float(confidence.mean()):.3f} (NaN pixels skipped)")

# The same estimator on the same pixels, through its own predict: identical labels.
check = clf.predict(test.data.iloc[: height * width]).reshape(height, width)
assert (labels.values[valid] == check[valid]).all()
print("labels match clf.predict on the flattened pixels")

# The class map beside the test pixels' labels (a mosaic of pixels, not a landscape). The
# figure needs matplotlib (the plot extra); without it the example ends here and says so.
try:
    plt = pyplot()
except ImportError as missing:
    print(f"no figure: {missing}")
    plt = None

if plt is not None:
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    classes = list(clf.classes_)
    palette = plt.get_cmap("tab10").colors[: len(classes)]
    fig, axes = plt.subplots(1, 3, figsize=(12, 4.2), layout="constrained")
    for ax, (title, grid) in zip(axes, [("labels", truth), ("class map", labels.values)]):
        codes = np.full(grid.shape, np.nan)  # NaN: no data, left blank
        for code, name in enumerate(classes):
            codes[grid == name] = code
        ax.imshow(codes, cmap=ListedColormap(palette), vmin=-0.5, vmax=len(classes) - 0.5)
        ax.set_title(title)
    fig.legend(
        handles=[Patch(color=colour, label=name) for colour, name in zip(palette, classes)],
        loc="outside lower center",
        ncol=len(classes),
    )
    image = axes[2].imshow(confidence.values, cmap="viridis", vmin=0, vmax=1)
    axes[2].set_title("top-class probability")
    fig.colorbar(image, ax=axes[2])
    for ax in axes:
        ax.set_axis_off()
    plt.show()
