#!/usr/bin/env bash
# Every check that needs a CUDA GPU, in one run of about 5-6 minutes (issues 17, 39):
#   bench  benchmarks/bench_gpu.py: fits (200,000 x 10 at batch 4,096 and 256, GPU vs one CPU
#          core, CUDA graphs or not), a 4096 x 4096 x 10 float32 scene (GPU vs one CPU core,
#          equal labels), the host and pinned transfer rates, profiles of a fit and a scene;
#   tests  every CUDA test (`-k "cuda or gpu"`: tests/inference/test_cuda.py, the "cuda"
#          cases of training/test_graph_epochs.py, inference/test_device_pixels.py,
#          estimators/test_estimators.py, nd/test_nn.py, estimators/test_persistence.py,
#          estimators/test_incremental.py, ...) and scikit-learn's estimator checks
#          with device="cuda" (tests/test_common.py), with pytest-xdist when installed;
#   suite  the whole test suite on the GPU machine.
# Each step has its own time limit, so that a hung step leaves time for the next ones.
#
# Run from the repository root on a machine with a CUDA build of PyTorch:
#     OUT=/some/dir bash benchmarks/gpu_check.sh        # log in $OUT/log (default ./gpu_check_out)
# GPU_CHECK_STEPS picks steps (default "bench tests"), e.g. GPU_CHECK_STEPS="tests suite".
# Missing pure-Python dependencies (skorch, tqdm, ...) may be brought as wheels in .whl/;
# they are installed with --no-deps into /tmp/site (PyTorch is never touched).
set -u
OUT=${OUT:-$PWD/gpu_check_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
PY=${PYTHON:-python3}
STEPS=" ${GPU_CHECK_STEPS:-bench tests} "
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

    if "$PY" -c "import xdist" 2>/dev/null; then workers=(-n 8); else workers=(); fi

    wanted bench && step 170 "benchmarks/bench_gpu.py" "$PY" benchmarks/bench_gpu.py --profile

    wanted tests && step 170 "CUDA tests and estimator checks on cuda" \
        "$PY" -m pytest -q -p no:cacheprovider -rfEs --tb=short --durations=8 "${workers[@]}" \
        --continue-on-collection-errors tests -k "cuda or gpu"

    # 75 s on an H100 with 8 workers, plus their shutdown.
    wanted suite && step 110 "whole test suite on the GPU machine" \
        "$PY" -m pytest -q -p no:cacheprovider -rfE --tb=short "${workers[@]}"
}

main 2>&1 | tee "$OUT/log"
