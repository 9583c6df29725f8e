#!/usr/bin/env bash
# Create (or update) a virtual environment with sknd installed in editable mode and its test
# extras. PyTorch is installed first and explicitly: left to pip's resolver, "torch" on a
# machine without a GPU would pull a multi-GB CUDA build.
#   usage: tools/install.sh [VENV_DIR]      (default .venv)
#   TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu tools/install.sh   # CPU wheels
set -euo pipefail
venv=${1:-.venv}
python=${PYTHON:-python3}
torch_version=${TORCH_VERSION:-2.13.0}

[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check)

if ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
        echo "install.sh: GPU found, installing the default (CUDA) build of torch $torch_version"
    else
        echo "install.sh: no GPU found, installing torch $torch_version for the CPU"
    fi
    "${pip[@]}" install ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} "torch==$torch_version"
fi
"${pip[@]}" install -e ".[test]"
