#!/usr/bin/env bash
# Every check that needs a CUDA GPU, in one run of about 3-5 minutes (issue 17):
#   1. the CUDA tests (tests/test_estimators.py, test_persistence.py, test_raster.py) and
#      scikit-learn's estimator checks with device="cuda" (tests/test_common.py);
#   2. benchmarks/bench_gpu.py (fit time GPU vs CPU, batch sweep, scene throughput);
#   3. host-to-GPU transfer of a pixel table, and a profile of raster.predict of a GPU model;
#   4. the whole test suite on the GPU machine (pytest-xdist when installed).
# Each step has its own time limit, so that a hung step leaves time for the next ones.
#
# Run from the repository root on a machine with a CUDA build of PyTorch:
#     OUT=/some/dir bash benchmarks/gpu_check.sh        # log in $OUT/log (default ./gpu_check_out)
# GPU_CHECK_STEPS picks steps (default "tests bench transfer suite"), e.g. GPU_CHECK_STEPS=tests
# for the CUDA tests and estimator checks alone (about 1 minute on an H100).
# Missing pure-Python dependencies (skorch, dask, distributed, ...) may be brought as wheels in
# .whl/; they are installed with --no-deps into /tmp/site (PyTorch is never touched).
set -u
OUT=${OUT:-$PWD/gpu_check_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
PY=${PYTHON:-python3}
STEPS=" ${GPU_CHECK_STEPS:-tests bench transfer suite} "
wanted() { [[ $STEPS == *" $1 "* ]]; }

step() {  # step SECONDS NAME COMMAND...: run COMMAND with a time limit, report its status
    local limit=$1 name=$2
    shift 2
    echo
    echo "######## $name (limit ${limit}s) $(date +%T)"
    local start=$SECONDS
    timeout --kill-after=5 "$limit" "$@"
    local rc=$?
    echo "######## $name: exit status $rc after $((SECONDS - start))s"
}

main() {
    if compgen -G ".whl/*.whl" >/dev/null; then
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target /tmp/site .whl/*.whl || return 1
        # Subprocesses started with their own PYTHONPATH (a test does) see them too.
        purelib=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
        echo /tmp/site >"$purelib/sknd_gpu_check.pth" 2>/dev/null || true
        export PYTHONPATH=/tmp/site:$PWD
    else
        export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
    fi
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    "$PY" - <<'PYEOF'
import os, platform
import numpy, scipy, sklearn, skorch, torch
print(f"python {platform.python_version()}; torch {torch.__version__} (CUDA {torch.version.cuda});"
      f" numpy {numpy.__version__}; scipy {scipy.__version__}; scikit-learn {sklearn.__version__};"
      f" skorch {skorch.__version__}; {os.cpu_count()} CPU cores; {platform.processor()}")
for name in ("dask", "distributed", "xarray", "numba", "hypothesis", "xdist"):
    try:
        module = __import__(name)
        print(f"  {name} {getattr(module, '__version__', '?')}")
    except ImportError:
        print(f"  {name}: missing")
print("CUDA available:", torch.cuda.is_available(),
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
PYEOF

    wanted tests && step 100 "CUDA tests and estimator checks on cuda" \
        "$PY" -m pytest -q -p no:cacheprovider -rfE --tb=short --durations=8 \
        --continue-on-collection-errors tests -k "cuda or gpu"

    wanted bench && step 120 "benchmarks/bench_gpu.py" "$PY" benchmarks/bench_gpu.py

    wanted transfer && step 30 "transfer of a pixel table and profile of raster.predict on the GPU" \
        "$PY" - <<'PYEOF'
import cProfile, pstats, time
import numpy as np, torch
from sknd import NDClassifier, raster

def best(function, repeat=5):
    times = []
    for _ in range(repeat):
        start = time.perf_counter(); function(); torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return min(times)

n = 2**22
for dtype in (np.float32, np.float64):
    table = np.random.default_rng(0).uniform(0.05, 0.5, (n, 10)).astype(dtype)
    pinned = torch.empty(table.shape, dtype=torch.from_numpy(table[:1]).dtype).pin_memory()
    ways = {
        "torch.tensor(x, float32, device)": lambda: torch.tensor(table, dtype=torch.float32, device="cuda"),
        "from_numpy(x).to(device).float()": lambda: torch.from_numpy(table).to("cuda").float(),
        "pinned copy, non_blocking": lambda: pinned.copy_(torch.from_numpy(table)).to("cuda", non_blocking=True).float(),
    }
    for name, way in ways.items():
        print(f"  {np.dtype(dtype).name} {n} x 10 {name:<36} {n / best(way) / 1e6:8.1f} Mpx/s")

rng = np.random.default_rng(1)
X = rng.uniform(0.05, 0.5, size=(2000, 10))
y = (X[:, 3] - X[:, 2]) / (X[:, 3] + X[:, 2]) > 0
model = NDClassifier(device="cuda", max_epochs=5, random_state=0).fit(X, y)
scene = rng.uniform(0.05, 0.5, size=(2048, 2048, 10)).astype(np.float32)
raster.predict(model, scene)
profile = cProfile.Profile()
profile.enable()
raster.predict(model, scene)
profile.disable()
pstats.Stats(profile).sort_stats("tottime").print_stats(14)
PYEOF

    if "$PY" -c "import xdist" 2>/dev/null; then workers=(-n 8); else workers=(); fi
    # 75 s on an H100 with 8 workers, plus their shutdown.
    wanted suite && step 110 "whole test suite on the GPU machine" \
        "$PY" -m pytest -q -p no:cacheprovider -rfE --tb=short "${workers[@]}"
}

main 2>&1 | tee "$OUT/log"
