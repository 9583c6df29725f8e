#!/usr/bin/env bash
# Create (or update) a virtual environment with sknd installed in editable mode and its
# extras. PyTorch is installed first and explicitly: left to pip's resolver, "torch" on a
# Linux machine without a GPU would come from PyPI as the multi-GB CUDA build.
#   usage: tools/install.sh [VENV_DIR]      (default .venv)
# Environment:
#   TORCH_VERSION=2.13.0      the torch release to install
#   TORCH_INDEX_URL=URL       take torch from this index, no questions asked
#                             (e.g. https://download.pytorch.org/whl/cu126 for a CUDA build)
#   TORCH_CPU_INDEX_URL=URL   where to get a CPU build when the configured index's default is
#                             a CUDA build (default https://download.pytorch.org/whl/cpu)
#   EXTRAS=test               sknd's extras, e.g. EXTRAS=test,docs; EXTRAS= (empty): none,
#                             sknd and its dependencies only (what `make demo` needs)
#   TORCH_ONLY=1              install torch and stop (tools/min_versions.sh installs the rest)
#
# Without a GPU and without TORCH_INDEX_URL, the script asks pip (a dry run) which wheel the
# configured index would install. If that is already a CPU build (a "+cpu" version and no
# nvidia-* dependencies: macOS, Windows, mirrors that serve CPU wheels), it installs it;
# otherwise it installs "torch==VERSION+cpu" from TORCH_CPU_INDEX_URL. It prints which.
set -euo pipefail
venv=${1:-.venv}
python=${PYTHON:-python3}
torch_version=${TORCH_VERSION:-2.13.0}
cpu_index=${TORCH_CPU_INDEX_URL:-https://download.pytorch.org/whl/cpu}
extras=${EXTRAS-test}

pip=("$venv/bin/python" -m pip --disable-pip-version-check)
# pip compiles no bytecode (every file up front: 9,300 files, 0.24 GB in the demo environment,
# a large part of `make demo`'s install); the last step below writes it for the modules a
# first fit imports.
install=("${pip[@]}" install --no-compile)
say() { echo "install.sh: $*"; }
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
    # The pip a venv starts with may predate the metadata sknd's wheel has (Metadata 2.4: the
    # pip of Python 3.11, 23.2, shows no license or home page in `pip show sknd`; 26.x does).
    "${pip[@]}" install --quiet --upgrade pip || say "could not upgrade pip (offline?): kept $("${pip[@]}" --version)"
fi

# Prints "cpu" or "cuda": the build pip would install for torch==$torch_version by default.
default_torch_build() {
    local report
    report=$(mktemp)
    if ! "${install[@]}" --dry-run --quiet --ignore-installed --report "$report" \
            "torch==$torch_version" >/dev/null 2>&1; then
        rm -f "$report"; echo unknown; return
    fi
    "$venv/bin/python" - "$report" <<'PY'
import json, sys
installs = json.load(open(sys.argv[1]))["install"]
names = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in installs}
torch = names.get("torch", "")
cuda = "+cu" in torch or any(n.startswith("nvidia-") for n in names)
print("cuda" if cuda else "cpu")
PY
    rm -f "$report"
}

# torch's version and build come from its distribution's metadata: importing torch before
# numpy is installed warns "Failed to initialize NumPy" (a fresh install, `make demo`).
torch_version_installed() {
    "$venv/bin/python" -c 'from importlib.metadata import version; print(version("torch"))' 2>/dev/null
}

if installed=$(torch_version_installed); then
    say "torch $installed already installed, kept"
elif [ -n "${TORCH_INDEX_URL:-}" ]; then
    say "installing torch $torch_version from TORCH_INDEX_URL=$TORCH_INDEX_URL"
    "${install[@]}" --index-url "$TORCH_INDEX_URL" "torch==$torch_version"
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    say "GPU found: installing the index's default build of torch $torch_version (CUDA on Linux)"
    "${install[@]}" "torch==$torch_version"
else
    build=$(default_torch_build)
    if [ "$build" = cpu ]; then
        say "no GPU found; the package index serves a CPU build of torch $torch_version by default: installing it"
        "${install[@]}" "torch==$torch_version"
    else
        if [ "$build" = cuda ]; then
            why="the package index's default torch $torch_version is a CUDA build"
        else
            why="a dry run could not tell which torch $torch_version build the package index serves"
        fi
        say "no GPU found; $why: installing torch==$torch_version+cpu from $cpu_index"
        if ! "${install[@]}" --index-url "$cpu_index" \
                "torch==$torch_version+cpu"; then
            say "could not install the CPU build from $cpu_index (offline?); set TORCH_INDEX_URL to an index that has it, or TORCH_INDEX_URL=https://pypi.org/simple to accept the default (CUDA) build"
            exit 1
        fi
    fi
fi
# A CUDA build ships libtorch_cuda (torch/lib/libtorch_cuda.so, torch_cuda.dll).
"$venv/bin/python" - <<'PY'
from importlib.metadata import distribution

torch = distribution("torch")
cuda = any(file.stem.startswith(("libtorch_cuda", "torch_cuda")) for file in torch.files)
print(f"install.sh: torch {torch.version}, CUDA build: {cuda}")
PY
[ "${TORCH_ONLY:-0}" = 1 ] && exit 0
# setuptools announces every editable install with an information-only warning ("Editable
# installation. Please be careful with folders in your working directory with the same name
# as your package"), which pip shows as a BuildBackendWarning: nothing to act on, left out.
editable=(env PYTHONWARNINGS="ignore:Editable installation" "${install[@]}" -e)
if [ -n "$extras" ]; then
    "${editable[@]}" ".[$extras]"
else
    "${editable[@]}" .
fi

# Bytecode for the modules a first fit imports (about 2,900 of torch, scikit-learn, scipy,
# skorch and sknd), written now. Python writes bytecode at first import only where it may:
# under PYTHONDONTWRITEBYTECODE=1, which many containers set, every fresh process compiled
# them again, and `import sknd` plus a first fit took 15.6 s of CPU instead of 5.5-6.5 s
# (docs/install.md). sys.dont_write_bytecode = False writes it whatever the environment says.
say "writing the bytecode of what a first fit imports"
"$venv/bin/python" - <<'PY'
import sys

sys.dont_write_bytecode = False
import numpy as np

from sknd import NDClassifier

X = np.random.default_rng(0).uniform(0.05, 0.5, size=(200, 4))
NDClassifier(max_epochs=2, random_state=0).fit(X, (X[:, 0] > X[:, 1]).astype(int))
PY
