"""Peak memory of a string-labelled class map of a lazy 25 Mpx scene, computed and written.

A classifier fitted on string labels is applied to a lazy (dask) 5,000 x 5,000 x 4
float32 scene, drawn block by block (never held whole), in two ways, each in a fresh
process so that each peak resident memory is its own:

- ``labels``: ``raster.predict(clf, scene)``, the string labels (NaN for no-data),
  computed (an object array: ``rio.to_raster`` refuses it);
- ``codes``: ``raster.class_map(clf, scene)``, uint8 class codes, written with
  ``raster.write_class_map`` as a GeoTIFF with colour table and category names.

Run::

    PYTHONPATH=. python benchmarks/bench_class_map.py [--size 5000] [--out DIR]

Prints, per way, the wall time and the peak RSS of its process.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

N_BANDS = 4


def run(mode, size, chunk, out):
    import dask.array as da
    import rioxarray  # noqa: F401
    import xarray as xr
    from affine import Affine

    from sknd import NDClassifier, raster

    rng = np.random.default_rng(0)
    X = rng.uniform(0.01, 0.6, size=(2000, N_BANDS)).astype(np.float32)
    ndvi = (X[:, 3] - X[:, 2]) / (X[:, 3] + X[:, 2])
    y = np.array(["bare soil", "water", "vegetation"])[np.digitize(ndvi, [-0.2, 0.2])]
    clf = NDClassifier(max_epochs=5, random_state=0).fit(X, y)
    bands = (
        da.random.default_rng(1)
        .uniform(0.01, 0.6, size=(N_BANDS, size, size), chunks=(N_BANDS, chunk, chunk))
        .astype(np.float32)
    )
    scene = xr.DataArray(bands, dims=("band", "y", "x"), coords={"band": list(range(N_BANDS))})
    scene = scene.rio.write_crs("EPSG:32633").rio.write_transform(Affine(10, 0, 5e5, 0, -10, 0))
    start = time.perf_counter()
    if mode == "labels":
        labels = raster.predict(clf, scene, bands="positional").compute()
        assert labels.dtype == object
    else:
        codes = raster.class_map(clf, scene, bands="positional")
        raster.write_class_map(codes, os.path.join(out, "classes.tif"))
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux
    print(json.dumps({"mode": mode, "seconds": round(seconds, 1), "peak_rss_gib": round(peak, 2)}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=5000, help="scene side in pixels")
    parser.add_argument("--chunk", type=int, default=1000, help="dask chunk side in pixels")
    parser.add_argument("--out", default=None, help="folder of the written map")
    parser.add_argument("--mode", choices=["labels", "codes"], default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    out = args.out or tempfile.mkdtemp()
    if args.mode is not None:
        run(args.mode, args.size, args.chunk, out)
        return
    print(f"{args.size} x {args.size} x {N_BANDS} float32 (dask chunks {args.chunk}^2)")
    for mode in ("labels", "codes"):
        command = [sys.executable, __file__, "--mode", mode, "--size", str(args.size)]
        command += ["--chunk", str(args.chunk), "--out", out]
        subprocess.run(command, check=True)


if __name__ == "__main__":
    main()
