"""GeoTIFF to GeoTIFF with ``python -m sknd.raster`` (issue 13 target).

1. Writes a tiled 10-band GeoTIFF (default 10,000 x 10,000, uint16 reflectance x
   10,000, UTM CRS, 10 m pixels, Sentinel-2 band names as band descriptions, a
   no-data strip), unless it already exists under ``--workdir``.
2. Fits a depth-2 ``NDClassifier`` (3 classes, ``sensor="sentinel2"``) and saves it
   with joblib.
3. Times the command's code, ``sknd.raster._cli.main([MODEL, SCENE, OUT])``, in a
   fresh subprocess after its imports (loading the model, reading, predicting and
   writing are timed; starting python and importing torch are not: a fixed cost of
   about 4 s on the reference machine, not a throughput), then runs
   ``python -m sknd.raster MODEL SCENE OUT`` as a new process and reads its peak
   resident memory (``ru_maxrss`` of the child) and wall time.
4. In another fresh subprocess, reads the whole scene into memory with rasterio
   (not timed) and times ``sknd.raster.predict`` on that array (band-first, as
   rasterio gives it: ``band_dim=0``), the best of ``--repeats`` runs.
5. Checks that the output's CRS and transform equal the input's and that its
   labels equal the in-memory prediction.

Targets: peak memory of the command < 2 GB; its throughput within 20 % of the
in-memory ``raster.predict`` (ratio >= 0.8); CRS and transform equal.

Run from a checkout (needs the ``geo`` extra)::

    PYTHONPATH=. python benchmarks/bench_geotiff.py                 # ~2 GB file in /tmp
    PYTHONPATH=. python benchmarks/bench_geotiff.py --size 2000     # a quick smoke test

Record results in benchmarks/RESULTS.md with the date, the machine and its load.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BANDS = ["B02", "B03", "B04", "B05", "B06", "B07", "B08", "B8A", "B11", "B12"]


def write_scene(path, size):
    """A tiled uint16 GeoTIFF with smooth land-cover-like patterns, written strip by strip."""
    import rasterio
    from affine import Affine

    profile = {
        "driver": "GTiff",
        "width": size,
        "height": size,
        "count": len(BANDS),
        "dtype": "uint16",
        "crs": "EPSG:32633",
        "transform": Affine(10.0, 0.0, 500_000.0, 0.0, -10.0, 5_100_000.0),
        "nodata": 0,
        "tiled": True,
        "blockxsize": 512,
        "blockysize": 512,
        "interleave": "pixel",
    }
    rng = np.random.default_rng(0)
    # Per-band reflectance of three covers (soil, water, vegetation), x 10,000.
    covers = np.array(
        [
            [1200, 1500, 1900, 2100, 2300, 2400, 2500, 2550, 3000, 2600],
            [500, 600, 400, 350, 300, 280, 250, 240, 150, 100],
            [400, 700, 350, 1200, 2800, 3300, 3600, 3700, 1900, 900],
        ],
        dtype=np.float32,
    )
    rows = 512
    x = np.linspace(0, 12 * np.pi, size, dtype=np.float32)
    with rasterio.open(path, "w", **profile) as dst:
        dst.descriptions = tuple(BANDS)
        for top in range(0, size, rows):
            height = min(rows, size - top)
            y = np.linspace(top, top + height, height, endpoint=False, dtype=np.float32)
            field = np.sin(x[None, :] + 0.002 * y[:, None] ** 1.1) + np.cos(0.003 * y)[:, None]
            cover = np.digitize(field, [-0.5, 0.6])  # 0, 1, 2
            noise = rng.normal(1.0, 0.05, size=(len(BANDS), height, size)).astype(np.float32)
            data = covers[cover].transpose(2, 0, 1) * noise
            data = np.clip(data, 1, 10_000).astype(np.uint16)
            if top == 0:
                data[:, :16, :] = 0  # a no-data strip along the top edge
            dst.write(data, window=rasterio.windows.Window(0, top, size, height))


def fit_model(path):
    import joblib
    import pandas as pd

    from sknd import NDClassifier

    rng = np.random.default_rng(1)
    covers = rng.integers(0, 3, size=3000)
    base = np.array(
        [
            [1200, 1500, 1900, 2100, 2300, 2400, 2500, 2550, 3000, 2600],
            [500, 600, 400, 350, 300, 280, 250, 240, 150, 100],
            [400, 700, 350, 1200, 2800, 3300, 3600, 3700, 1900, 900],
        ]
    )
    X = base[covers] * rng.normal(1.0, 0.1, size=(3000, len(BANDS)))
    clf = NDClassifier(sensor="sentinel2", max_epochs=20, random_state=0)
    clf.fit(pd.DataFrame(X, columns=BANDS), covers)
    joblib.dump(clf, path)


def run_command(model, scene, out, extra):
    """Wall time and peak resident memory of ``python -m sknd.raster`` as a new process."""
    start = time.perf_counter()
    command = [sys.executable, "-m", "sknd.raster", str(model), str(scene), str(out), *extra]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # wait4 gives this child's own rusage (RUSAGE_CHILDREN would be the maximum over
    # every child so far, the in-memory run's included).
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"command failed: {process.stderr.read().decode()}")
    process.stderr.close()
    return wall, usage.ru_maxrss * 1024


_IN_MEMORY = """
import json, sys, time, warnings
import joblib, numpy as np, rasterio
from sknd import raster
model, scene, repeats, n_jobs, labels_path = sys.argv[1:6]
clf = joblib.load(model)
with rasterio.open(scene) as src:
    data = src.read()
    nodata = src.nodata
    names = list(src.descriptions)
times = []
for _ in range(int(repeats)):
    start = time.perf_counter()
    labels = raster.predict(clf, data, band_dim=0, bands=names, nodata=nodata,
                            fill_value=-1, n_jobs=int(n_jobs))
    times.append(time.perf_counter() - start)
np.save(labels_path, labels[::97, ::89])
print(json.dumps({"times": times, "pixels": int(data.shape[1] * data.shape[2])}))
"""


# The command's own code (sknd.raster._cli.main: load the model, open, read, predict and
# write strip by strip), timed after python, torch and sknd are imported: its throughput
# without the fixed cost of starting a process.
_COMMAND = """
import json, sys, time
import sknd, rasterio
from sknd.raster._cli import main
repeats, args = int(sys.argv[1]), sys.argv[2:]
times = []
for _ in range(repeats):
    start = time.perf_counter()
    assert main(args) == 0
    times.append(time.perf_counter() - start)
print(json.dumps({"times": times}))
"""


def run_script(script, *args):
    command = [sys.executable, "-c", script, *(str(arg) for arg in args)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"run failed: {done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10_000, help="scene width and height")
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "sknd_geotiff"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-jobs", type=int, default=1)
    args = parser.parse_args()

    import rasterio

    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    scene = workdir / f"scene_{args.size}.tif"
    model = workdir / "model.joblib"
    if not scene.exists():
        start = time.perf_counter()
        write_scene(scene, args.size)
        elapsed = time.perf_counter() - start
        print(f"wrote {scene} ({scene.stat().st_size / 1e9:.2f} GB) in {elapsed:.0f} s")
    fit_model(model)
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, load {os.getloadavg()}")

    memory = run_script(_IN_MEMORY, model, scene, args.repeats, args.n_jobs, workdir / "labels.npy")
    pixels = memory["pixels"]
    best_memory = min(memory["times"])
    print(
        f"in memory, raster.predict (n_jobs={args.n_jobs}): best {best_memory:.2f} s, "
        f"{pixels / best_memory / 1e6:.1f} Mpx/s (runs {[round(t, 2) for t in memory['times']]})"
    )
    out = workdir / "classes.tif"
    extra = ["--no-progress", "--fill-value", "-1", "--n-jobs", str(args.n_jobs)]
    warm = run_script(_COMMAND, args.repeats, model, scene, out, *extra)["times"]
    best_command = min(warm)
    print(
        f"sknd.raster._cli.main (after imports; load model, read, predict, write): best "
        f"{best_command:.2f} s, {pixels / best_command / 1e6:.1f} Mpx/s "
        f"(runs {[round(t, 2) for t in warm]})"
    )
    runs = [run_command(model, scene, out, extra) for _ in range(args.repeats)]
    best_wall = min(wall for wall, _ in runs)
    peak = max(peak for _, peak in runs)
    print(
        f"python -m sknd.raster as a new process: best {best_wall:.2f} s wall (incl. process "
        f"start and imports), {pixels / best_wall / 1e6:.1f} Mpx/s, peak RSS "
        f"{peak / 1e9:.2f} GB (runs {[round(w, 2) for w, _ in runs]})"
    )
    with rasterio.open(scene) as src, rasterio.open(out) as dst:
        same_crs = src.crs == dst.crs
        same_transform = src.transform == dst.transform
        labels = dst.read(1)[::97, ::89]
    same_labels = np.array_equal(labels, np.load(workdir / "labels.npy"))
    ratio = best_memory / best_command
    verdict = "met" if ratio >= 0.8 else "NOT met"
    print(f"throughput command / in memory: {ratio:.2f} (target >= 0.8: {verdict})")
    print(f"  with process start: {best_memory / best_wall:.2f}")
    print(f"peak memory: {peak / 1e9:.2f} GB (target < 2 GB: {'met' if peak < 2e9 else 'NOT met'})")
    print(f"CRS equal: {same_crs}, transform equal: {same_transform}, labels equal: {same_labels}")


if __name__ == "__main__":
    main()
