#!/usr/bin/env bash
# The minimum-versions environment: tests the floors that pyproject.toml declares.
#   usage: tools/min_versions.sh [VENV_DIR]   (default build/venv-min under the repository root;
#                                             removed and created afresh)
# Needs Python >= 3.11 (PYTHON, as for tools/install.sh): it reads pyproject.toml with tomllib.
# Installs, into a new virtual environment:
#   1. torch as tools/install.sh installs it (TORCH_VERSION, default 2.13.0, a CPU build
#      without a GPU). torch is the one dependency not held at its floor: the older torch
#      wheels on PyPI are multi-GB CUDA builds.
#   2. every other dependency of [project] dependencies at its declared minimum, read from
#      pyproject.toml (so the floors and this test cannot drift): "numpy>=1.25" installs
#      numpy==1.25.*, the floor's newest patch release;
#   3. sknd itself without dependencies, and pytest;
# then checks that the set is consistent (pip check) and runs the core tests: no optional
# extras installed, so the tests that need them skip. .ci/run runs it after the main steps.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-build/venv-min}
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
TORCH_ONLY=1 bash tools/install.sh "$venv"
python=("$venv/bin/python")
pip=("${python[@]}" -m pip --disable-pip-version-check)

pins_text=$("${python[@]}" - <<'PY'
import re
import tomllib

with open("pyproject.toml", "rb") as f:
    dependencies = tomllib.load(f)["project"]["dependencies"]
for dependency in dependencies:
    match = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*>=\s*([0-9.]+)", dependency)
    if match is None:
        raise SystemExit(f"min_versions.sh: cannot read a floor from {dependency!r}: "
                         "write the dependency as NAME>=VERSION (or teach this script its form)")
    name, floor = match.groups()
    if name != "torch":
        print(f"{name}=={floor}.*")
PY
)
mapfile -t pins <<<"$pins_text"
echo "min_versions.sh: installing the declared floors: ${pins[*]}"
# pytest < 10: scikit-learn 1.6's parametrize_with_checks hands pytest a generator, which
# pytest 9 deprecates (tests/test_common.py).
"${pip[@]}" install --quiet --no-compile "${pins[@]}" "pytest<10"
"${pip[@]}" install --quiet --no-compile --no-deps -e .
"${pip[@]}" check
"${python[@]}" - torch "${pins[@]}" <<'PY'
import sys
from importlib.metadata import version

names = [arg.split("==")[0] for arg in sys.argv[1:]]
print("min_versions.sh: testing", ", ".join(f"{n} {version(n)}" for n in names))
PY
# The core: the layer and networks, the estimators and scikit-learn's checks, training and
# the default recipe, the fused numpy evaluator, the entry points' contract, persistence and
# model files, inspection, bands, indices and pair screening. Left out: tests/experiments/ (their
# fixtures need numpy >= 2's string addition, the CLI's figures matplotlib) and the files
# that skip whole without an extra (raster, onnx, plotting, ...).
"${python[@]}" -m pytest -q -p no:cacheprovider \
    tests/nd/test_nn.py tests/nd/test_networks.py tests/nd/test_screening.py \
    tests/nd/test_formula.py tests/nd/test_pairs.py tests/test_common.py \
    tests/estimators/test_estimators.py tests/estimators/test_contract.py \
    tests/estimators/test_validation.py tests/estimators/test_tasks.py \
    tests/estimators/test_weights.py tests/estimators/test_persistence.py \
    tests/estimators/test_interpretation_estimators.py tests/estimators/test_incremental.py \
    tests/training/test_recipe.py tests/training/test_training.py \
    tests/training/test_fused.py tests/training/test_adam.py \
    tests/export/test_model_file.py tests/test_inspection.py \
    tests/test_threads.py tests/test_bands.py tests/test_indices.py tests/test_datasets.py
