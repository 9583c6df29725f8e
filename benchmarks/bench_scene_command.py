"""The scene command end to end, from a model file and from a pickle (issue 24).

Run: ``PYTHONPATH=. python benchmarks/bench_scene_command.py [--repeats N] [--size 300]``

Every measurement is a fresh process (``sys.executable``), the programs interleaved,
reporting the median wall time and the median peak resident memory (``ru_maxrss`` of
that child, from ``os.wait4``) over ``--repeats`` runs:

- ``python -c "import rasterio, numpy"``: the floor any GeoTIFF command pays;
- ``python -m sknd.raster MODEL.sknd SCENE.tif OUT.tif``: a model file
  (``estimator.save_model``), the class map of a SIZE x SIZE x 4 float32 scene;
- the same with a joblib pickle of the same estimator and ``--trust-pickle``;
- ``python -m sknd.raster --help``: the command's start-up alone (its imports);
- the command on a STAC Item of the same scene, one uint16 COG-like GeoTIFF per band with
  ``raster:bands`` scale 0.0001 and offset -0.1 (issue 48: stacked as a VRT, rescaled);
- ``python -c "import sknd"``, ``python -c "import torch"`` and
  ``python -c "import sknd; sknd.NDClassifier"`` (the estimators are imported on first use).

The model is a depth-2 ``NDClassifier`` on 4 named bands, 3 classes. One warm-up run of
each program comes first (numba compiles its kernel into its on-disk cache on a machine's
first call). Ratios are against ``import rasterio, numpy`` (issue 24's target for the
command: at most 5x and under 200 MB) and against ``import torch`` (``import sknd``: at
most 1.5x).
"""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

BANDS = ["blue", "green", "red", "nir"]


def _files(folder, size):
    import joblib
    import numpy as np
    import pandas as pd
    import rasterio
    from rasterio.transform import from_origin

    from sknd import NDClassifier

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.uniform(0.01, 0.6, size=(2000, 4)), columns=BANDS)
    ndvi = (X["nir"] - X["red"]) / (X["nir"] + X["red"])
    y = np.array(["soil", "water", "veg"])[np.digitize(ndvi, [-0.2, 0.2])]
    clf = NDClassifier(max_epochs=20, random_state=0).fit(X, y)
    clf.save_model(os.path.join(folder, "clf.sknd"))
    joblib.dump(clf, os.path.join(folder, "clf.joblib"))
    profile = dict(driver="GTiff", width=size, height=size, count=4, dtype="float32")
    profile.update(crs="EPSG:32633", transform=from_origin(500_000, 4_000_000, 10, 10))
    reflectance = rng.uniform(0.01, 0.6, size=(4, size, size)).astype(np.float32)
    with rasterio.open(os.path.join(folder, "scene.tif"), "w", **profile) as dst:
        dst.write(reflectance)
        dst.descriptions = tuple(BANDS)
    _item(folder, reflectance, profile)


def _item(folder, reflectance, profile):
    """The scene as a STAC Item: one uint16 file per band, DN = 10000 (reflectance + 0.1)."""
    import json

    import numpy as np
    import rasterio

    profile = {**profile, "count": 1, "dtype": "uint16", "nodata": 0}
    assets = {}
    for name, layer in zip(BANDS, reflectance):
        with rasterio.open(os.path.join(folder, f"{name}.tif"), "w", **profile) as dst:
            dst.write(np.round((layer + 0.1) / 0.0001).astype(np.uint16), 1)
        assets[name] = {
            "href": f"{name}.tif",
            "type": "image/tiff; application=geotiff; profile=cloud-optimized",
            "roles": ["data", "reflectance"],
            "eo:bands": [{"name": name, "common_name": name}],
            "raster:bands": [{"nodata": 0, "data_type": "uint16", "scale": 0.0001, "offset": -0.1}],
        }
    properties = {"datetime": "2024-06-01T00:00:00Z"}
    item = {"type": "Feature", "stac_version": "1.0.0", "id": "scene", "geometry": None,
            "properties": properties, "links": [], "assets": assets}  # fmt: skip
    with open(os.path.join(folder, "item.json"), "w") as file:
        json.dump(item, file)


def _run(argv):
    """Wall seconds and peak resident MB of one child process."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    stderr = child.stderr.read().decode()
    child.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{argv} failed: {stderr}")
    return wall, usage.ru_maxrss / 1024  # KB on Linux


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--size", type=int, default=300)
    parser.add_argument("--write-files", metavar="FOLDER", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write_files:
        _files(args.write_files, args.size)
        return
    python = sys.executable
    with tempfile.TemporaryDirectory() as folder:
        # Written by a child: the measured processes are forked from this one, and a child's
        # peak memory counts its parent's pages until it runs the program (torch's here).
        _run([python, __file__, "--write-files", folder, "--size", str(args.size)])
        model_file, pickle_file, scene = (
            os.path.join(folder, name) for name in ("clf.sknd", "clf.joblib", "scene.tif")
        )
        out = os.path.join(folder, "out.tif")
        command = [python, "-m", "sknd.raster"]
        programs = {
            "import rasterio, numpy": [python, "-c", "import rasterio, numpy"],
            "command, model file": [*command, model_file, scene, out, "--no-progress"],
            "command, joblib pickle (--trust-pickle)": [
                *command,
                pickle_file,
                scene,
                out,
                "--no-progress",
                "--trust-pickle",
            ],  # fmt: skip
            "command --help (start-up)": [*command, "--help"],
            "command, STAC Item (4 uint16 files, scale/offset)": [
                *command,
                model_file,
                os.path.join(folder, "item.json"),
                out,
                "--no-progress",
            ],
            "import torch": [python, "-c", "import torch"],
            "import sknd": [python, "-c", "import sknd"],
            "import sknd; sknd.NDClassifier": [python, "-c", "import sknd; sknd.NDClassifier"],
        }
        for argv in programs.values():  # warm-up: numba's cache, the OS's file cache
            _run(argv)
        results = {name: [] for name in programs}
        for _ in range(args.repeats):
            for name, argv in programs.items():
                results[name].append(_run(argv))
    medians = {
        name: (statistics.median(w for w, _ in runs), statistics.median(m for _, m in runs))
        for name, runs in results.items()
    }
    floor_wall, floor_memory = medians["import rasterio, numpy"]
    torch_wall = medians["import torch"][0]
    print(
        f"{platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"scene {args.size} x {args.size} x 4 float32, median of {args.repeats} runs\n"
    )
    print("| program | wall | x `import rasterio, numpy` | x `import torch` | peak RSS |")
    print("|---|---|---|---|---|")
    for name, (wall, memory) in medians.items():
        print(
            f"| {name} | {wall:.2f} s | {wall / floor_wall:.1f} | {wall / torch_wall:.2f} "
            f"| {memory:.0f} MB ({memory / floor_memory:.1f}x) |"
        )


if __name__ == "__main__":
    main()
